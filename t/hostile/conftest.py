# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the hostile requests (t/hostile): the corpus
(test_hostile_corpus.py, corpus.txt) and the cases it cannot say
(test_hostile_cases.py), against one kind of server (hostile_site.py).

The servers come from the integration harness (t/integration/httpd.py),
with the same environment: PDFTOKEN_MODULE, PDFTOKEN_MPM, PDFTOKEN_KEEP_TMP
and, for sanitizer runs, PDFTOKEN_HTTPD_PRELOAD and
PDFTOKEN_SANITIZER_LOG_DIR.  When the pool closes, every server is stopped
and its logs must show no crashed child, no sanitizer report and none of
the tokens the tests saw or minted.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import fixtures  # noqa: E402
import hostile_site  # noqa: E402
from fixtures import pool, workdir  # noqa: E402,F401


def pytest_report_header(config):
    return fixtures.report_header("hostile requests")


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("hostile")
    hostile_site.prepare(s)
    s.start()
    hostile_site.set_values(s)
    return s
