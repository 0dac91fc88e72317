# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the mod_pdftoken integration tests.

    PDFTOKEN_MODULE   the module to load (default <repo>/.libs/mod_pdftoken.so)
    PDFTOKEN_MPM      event (default) or prefork
    PDFTOKEN_KEEP_TMP keep the server directories under /tmp for a post-mortem
    PDFTOKEN_HTTPD_PRELOAD  LD_PRELOAD for apache2 (a sanitizer runtime, for a
                      module built with ASan/UBSan: make test-asan); every
                      ASan/UBSan report then fails the server's tests
    PDFTOKEN_SANITIZER_LOG_DIR  also keep a copy of every report there

Each test module builds its servers with the module-scoped `pool` (one
server per module where possible, to keep the run fast); tests that need a
server of their own use the function-scoped `fresh_pool`.  When a pool
closes, every server is stopped and its error log must show no crashed
child and none of the tokens the tests saw or minted.
"""

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402


def pytest_report_header(config):
    header = "mod_pdftoken integration: MPM=%s module=%s" % (harness.MPM,
                                                             harness.MODULE)
    if harness.HTTPD_PRELOAD:
        header += " preload=%s" % harness.HTTPD_PRELOAD
    return header


@pytest.fixture(scope="session")
def workdir():
    d = harness.make_workdir()
    yield d
    harness.remove_workdir(d)


def _pool(workdir, name):
    pool = harness.ServerPool(workdir / name)
    yield pool
    problems = pool.close()
    assert not problems, "server logs show problems:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def pool(workdir, request):
    yield from _pool(workdir, request.module.__name__)


@pytest.fixture
def fresh_pool(workdir, request):
    yield from _pool(workdir, re.sub(r"[^A-Za-z0-9_.-]", "_",
                                     request.node.name)[:60])
