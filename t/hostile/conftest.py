# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the hostile-request corpus (t/hostile).

The servers come from the integration harness (t/integration/harness.py),
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

import harness  # noqa: E402


def pytest_report_header(config):
    header = "mod_pdftoken hostile corpus: MPM=%s module=%s" % (
        harness.MPM, harness.MODULE)
    if harness.HTTPD_PRELOAD:
        header += " preload=%s" % harness.HTTPD_PRELOAD
    return header


@pytest.fixture(scope="session")
def workdir():
    d = harness.make_workdir()
    yield d
    harness.remove_workdir(d)


@pytest.fixture(scope="module")
def pool(workdir, request):
    pool = harness.ServerPool(workdir / request.module.__name__)
    yield pool
    problems = pool.close()
    assert not problems, "server logs show problems:\n" + "\n".join(problems)
