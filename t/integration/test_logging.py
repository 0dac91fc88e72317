# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 4, logging: PDFTOKEN in the environment (for %{PDFTOKEN}e)
on every protected request, and the reason in the error log at info/debug,
with our own tags, naming the document path (escaped) and never the query
or a token (the pool checks every log for tokens at stop)."""

import itertools
import re
import time

import pytest

import pdftoken_ref as ref
from checks import assert_redirect

DOC = "/prot/doc.pdf"
CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    <Files "report">
        Options +ExecCGI
        SetHandler cgi-script
    </Files>
</Directory>
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
</Directory>
"""

_ids = itertools.count()


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("logging", modules=("cgid",))
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "log"),
               "deny": s.write_pdf("deny/doc.pdf", "deny"),
               "open": s.write_pdf("open/doc.pdf", "open")}
    s.write("prot/page.html", "<p>x</p>\n")
    s.write_pdf_cgi("prot/report", "prot/doc.pdf")
    s.configure(CONFIG)
    s.start()
    return s


def logged(srv, target, cookies=None, headers=(), method="GET"):
    """Send a request tagged with X-Test-Id; return (response, PDFTOKEN)."""
    test_id = "t%d-%d" % (int(time.time() * 1000), next(_ids))
    r = srv.request(method, target, cookies=cookies,
                    headers=[("X-Test-Id", test_id)] + list(headers))
    status, env = srv.access_log_entry(test_id)
    assert int(status) == r.status
    return r, env


def token_and_cookie(srv, path=DOC):
    return assert_redirect(srv, srv.get(path), path)


# ---------------------------------------------------------- PDFTOKEN env

def test_env_redirect_when_no_token(srv):
    r, env = logged(srv, DOC)
    assert r.status == 302 and env == "redirect"


def test_env_redirect_when_token_invalid(srv):
    r, env = logged(srv, DOC + "?pdftoken=" + "A" * 60)
    assert r.status == 302 and env == "redirect"


def test_env_pass_when_token_and_cookie(srv):
    token, cookie = token_and_cookie(srv)
    r, env = logged(srv, DOC + "?pdftoken=" + token, cookies=[cookie])
    assert r.status == 200 and env == "pass"


def test_env_range_when_token_range_and_no_cookie(srv):
    token, _ = token_and_cookie(srv)
    r, env = logged(srv, DOC + "?pdftoken=" + token,
                    headers=[("Range", "bytes=0-9")])
    assert r.status == 206 and env == "range"


def test_env_fallback_when_token_without_cookie(srv):
    token, _ = token_and_cookie(srv)
    r, env = logged(srv, DOC + "?pdftoken=" + token)
    assert r.status == 200 and env == "fallback"


def test_env_deny_when_fallback_deny(srv):
    token, _ = token_and_cookie(srv, "/deny/doc.pdf")
    r, env = logged(srv, "/deny/doc.pdf?pdftoken=" + token)
    assert r.status == 403 and env == "deny"


@pytest.mark.parametrize("target", ["/open/doc.pdf", "/prot/page.html",
                                    "/open/doc.pdf?pdftoken=x"])
def test_env_unset_for_unprotected_requests(srv, target):
    r, env = logged(srv, target)
    assert r.status == 200 and env == "-"


# ----------------------------------------------------- error-log reasons

REASONS = {
    "missing": r"missing|no token|without (a )?token",
    "expired": r"expired",
    "invalid": r"invalid|malformed|bad tag|forged|other path|version",
    "no_cookie": r"cookie",
    "mismatch": r"cookie",
}


def _reason_request(srv, case):
    if case == "missing":
        return srv.get(DOC)
    if case == "expired":
        t = ref.mint(srv.secret, DOC, expiry=int(time.time()) - 7200)
        return srv.get(DOC + "?pdftoken=" + t)
    if case == "invalid":
        return srv.get(DOC + "?pdftoken=" +
                       ref.forge(ref.mint(srv.secret, DOC, lifetime=60)))
    t = ref.mint(srv.secret, DOC, lifetime=60)
    if case == "no_cookie":
        return srv.get(DOC + "?pdftoken=" + t)
    return srv.get(DOC + "?pdftoken=" + t,
                   cookies=[ref.cookie_name(t) + "=" + "B" * 60])


@pytest.mark.parametrize("case", list(REASONS))
def test_error_log_says_why_at_info_or_debug(srv, case):
    offset = srv.error_log_size()
    _reason_request(srv, case)
    lines = [l for l in srv.error_log_since(offset).splitlines()
             if "[pdftoken:" in l]
    assert lines, "no pdftoken line for case %s" % case
    assert any(re.search(r"PDFTOKEN\d+:", l) and
               re.search(REASONS[case], l, re.I) for l in lines), lines
    for line in lines:
        level = re.search(r"\[pdftoken:(\w+)\]", line).group(1)
        assert level in ("info", "debug"), \
            "client input logged at %s: %s" % (level, line)


def test_error_log_hostile_requests_stay_below_notice(srv):
    offset = srv.error_log_size()
    for q in ("pdftoken=" + "A" * 5000, "pdftoken=%00", "pdftoken=&pdftoken=",
              "pdftoken=" + "!" * 60):
        srv.get(DOC + "?" + q, cookies=["pdftoken_x=" + "y" * 100])
    for line in srv.error_log_since(offset).splitlines():
        if "[pdftoken:" in line:
            level = re.search(r"\[pdftoken:(\w+)\]", line).group(1)
            assert level in ("info", "debug"), line
            assert "A" * 60 not in line and "!" * 60 not in line, line


# ------------------------------------------- the document path, escaped

def test_every_request_log_line_names_the_document_path(srv):
    offset = srv.error_log_size()
    r, token, cookie = srv.first_visit(DOC + "?secretquery=1")
    srv.get(r.location_target())                          # 00006
    srv.get(r.location_target(), cookies=[cookie])        # 00004
    srv.get(r.location_target(), headers=[("Range", "bytes=0-1")])  # 00005
    srv.get(DOC + "?pdftoken=" + "A" * 43)                # 00008
    srv.get(DOC + "?pdftoken=a&pdftoken=b")               # 00003
    text = srv.error_log_since(offset)
    lines = [l for l in text.splitlines() if "PDFTOKEN000" in l]
    tags = {re.search(r"PDFTOKEN(\d+)", l).group(1) for l in lines}
    assert {"00002", "00003", "00004", "00005", "00006",
            "00008"} <= tags, text
    for line in lines:
        assert "PDFTOKEN" in line
        assert re.search(r"PDFTOKEN\d+: /prot/doc\.pdf: ", line), line
        assert "secretquery" not in line and token not in line, line


def test_control_characters_in_the_path_are_escaped_in_the_log(srv):
    # A script with path info: judged, so logged, whatever the path says.
    offset = srv.error_log_size()
    r = srv.get("/prot/report/a%0aPDFTOKEN00004:%20forged")
    assert r.status == 302, r
    text = srv.error_log_since(offset)
    assert "PDFTOKEN00002: /prot/report/a\\nPDFTOKEN00004: forged: no token" \
        in text, text
    assert not re.search(r"^PDFTOKEN00004", text, re.M), text
