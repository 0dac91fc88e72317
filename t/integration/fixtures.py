# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The server fixtures shared by t/integration and t/hostile.

Each test module builds its servers with the module-scoped `pool` (one
server per module where possible, to keep the run fast); tests that need a
server of their own use the function-scoped `fresh_pool`.  When a pool
closes, every server is told to stop and its logs must show no crashed
child, no sanitizer report and none of the tokens the tests saw or minted;
at the end of the session (of each pytest-xdist worker) every server has
stopped and what it logged while stopping is checked the same way.
"""

import re

import pytest

import httpd


def report_header(suite):
    header = "mod_pdftoken %s: MPM=%s module=%s" % (suite, httpd.MPM,
                                                    httpd.MODULE)
    if httpd.HTTPD_PRELOAD:
        header += " preload=%s" % httpd.HTTPD_PRELOAD
    return header


@pytest.fixture(scope="session")
def workdir():
    d = httpd.make_workdir()
    yield d
    # The pools only began their servers' stops: wait for them here, once
    # for the whole run, and check what they logged while stopping.
    problems = httpd.finish_stops()
    httpd.remove_workdir(d)
    assert not problems, "server logs show problems:\n" + "\n".join(problems)


def _pool(workdir, name):
    pool = httpd.ServerPool(workdir / name)
    yield pool
    problems = pool.close(wait=False)
    assert not problems, "server logs show problems:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def pool(workdir, request):
    yield from _pool(workdir, request.module.__name__)


@pytest.fixture
def fresh_pool(workdir, request):
    yield from _pool(workdir, re.sub(r"[^A-Za-z0-9_.-]", "_",
                                     request.node.name)[:60])
