# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the mod_pdftoken integration tests.

    PDFTOKEN_MODULE   the module to load (default <repo>/.libs/mod_pdftoken.so)
    PDFTOKEN_MPM      event (default) or prefork
    PDFTOKEN_KEEP_TMP keep the server directories under /tmp for a post-mortem
    PDFTOKEN_HTTPD_PRELOAD  LD_PRELOAD for apache2 (a sanitizer runtime, for a
                      module built with ASan/UBSan: make test-asan); every
                      ASan/UBSan report then fails the server's tests
    PDFTOKEN_SANITIZER_LOG_DIR  also keep a copy of every report there

The fixtures themselves (workdir, pool, fresh_pool) live in fixtures.py,
shared with t/hostile.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixtures  # noqa: E402
from fixtures import fresh_pool, pool, workdir  # noqa: E402,F401


def pytest_report_header(config):
    return fixtures.report_header("integration")
