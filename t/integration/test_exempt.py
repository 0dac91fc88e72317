# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The crawler's path and the administrator's log (SPEC sections 4 and 5):

- `PdfTokenExempt <ap_expr>`: a request the expression matches is served as
  if the scope were unprotected (inline, no redirect, no cookie), marked
  private so a shared cache never hands it to anyone else; `none` takes an
  outer exemption away; a bad expression fails configtest naming the
  directive.
- Every tokenized answer (R2, R3, R5), static or made by a handler, carries
  `Link: <the URL without the token>; rel="canonical"`.
- Every error-log line about a request names the document path and never
  the query; each server's start says which secret signs its tokens.
"""

import re

import pytest

from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_untouched)

GOOGLEBOT = ("Mozilla/5.0 (compatible; Googlebot/2.1; "
             "+http://www.google.com/bot.html)")
BROWSER = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Chrome/156.0 Safari/537.36")

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    PdfTokenExempt "%{HTTP_USER_AGENT} =~ /Googlebot/"
</Directory>
<Directory "@DOCROOT@/prot/inner">
    PdfTokenExempt none
</Directory>
<Directory "@DOCROOT@/net">
    PdfTokenProtect On
    PdfTokenExempt "-R '127.0.0.0/8'"
</Directory>
<Directory "@DOCROOT@/plain">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/cgi">
    PdfTokenProtect On
    PdfTokenExempt "%{HTTP_USER_AGENT} =~ /Googlebot/"
    Options +ExecCGI
    SetHandler cgi-script
</Directory>
"""

CGI = b"""#!/bin/sh
printf 'Content-Type: application/pdf\\r\\n\\r\\n'
cat "$(dirname "$0")/../plain/doc.pdf"
"""


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("exempt", modules=("cgid",))
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "exempt doc"),
               "inner": s.write_pdf("prot/inner/doc.pdf", "inner doc"),
               "net": s.write_pdf("net/doc.pdf", "net doc"),
               "plain": s.write_pdf("plain/doc.pdf", "plain doc")}
    s.write("cgi/report", CGI, mode=0o755)
    s.configure(CONFIG)
    s.start()
    return s


def ua(agent):
    return [("User-Agent", agent)]


# ------------------------------------------------------------ PdfTokenExempt

def test_exempt_user_agent_gets_the_pdf_inline_without_redirect(srv):
    r = srv.get("/prot/doc.pdf", headers=ua(GOOGLEBOT))
    assert r.status == 200, r
    assert r.get("Content-Type") == "application/pdf"
    assert r.body == srv.files["doc"]
    assert "attachment" not in (r.get("Content-Disposition") or "")
    assert r.get_all("Set-Cookie") == []
    assert r.get("Location") is None


def test_exempt_answer_is_private_for_shared_caches(srv):
    r = srv.get("/prot/doc.pdf", headers=ua(GOOGLEBOT))
    assert "private" in (r.get("Cache-Control") or "")
    # ap_expr names the header it read, so a cache keys on it.
    assert "User-Agent" in (r.get("Vary") or "")


def test_exempt_is_logged_as_exempt(srv):
    r = srv.get("/prot/doc.pdf",
                headers=ua(GOOGLEBOT) + [("X-Test-Id", "exempt-log")])
    assert r.status == 200
    assert srv.access_log_entry("exempt-log") == ("200", "exempt")


def test_browser_user_agent_is_still_protected(srv):
    r = srv.get("/prot/doc.pdf", headers=ua(BROWSER))
    assert_redirect(srv, r, "/prot/doc.pdf")


def test_exempt_user_agent_with_an_attackers_token_is_still_served_plain(srv):
    # The token is ignored, as in an unprotected scope.
    r = srv.get("/prot/doc.pdf?pdftoken=" + "A" * 43,
                headers=ua(GOOGLEBOT))
    assert r.status == 200 and r.body == srv.files["doc"]


def test_none_in_an_inner_scope_takes_the_exemption_away(srv):
    r = srv.get("/prot/inner/doc.pdf", headers=ua(GOOGLEBOT))
    assert_redirect(srv, r, "/prot/inner/doc.pdf")


def test_client_address_range_exempts_loopback(srv):
    r = srv.get("/net/doc.pdf")
    assert_untouched(r, srv.files["net"])


def test_exempt_dynamic_pdf_is_served_as_the_handler_made_it(srv):
    r = srv.get("/cgi/report?id=3", headers=ua(GOOGLEBOT))
    assert r.status == 200, r
    assert r.get("Content-Type") == "application/pdf"
    assert r.body == srv.files["plain"]


def test_not_exempt_dynamic_pdf_is_redirected(srv):
    r = srv.get("/cgi/report?id=3", headers=ua(BROWSER))
    assert_redirect(srv, r, "/cgi/report", query="id=3")


@pytest.mark.parametrize("expr, why", [
    ('"%{HTTP_USER_AGENT} =~ /Googlebot"', "PdfTokenExempt"),
    ('"-R \'not-a-network\'"', "PdfTokenExempt"),
    ('"%{NO_SUCH_FUNCTION:x} == 1"', "PdfTokenExempt"),
])
def test_bad_expression_fails_configtest_naming_the_directive(fresh_pool,
                                                              expr, why):
    s = fresh_pool.make("badexpr")
    s.configure('<Directory "@DOCROOT@/prot">\n    PdfTokenProtect On\n'
                '    PdfTokenExempt %s\n</Directory>\n' % expr)
    rc, out = s.configtest()
    assert rc != 0, out
    assert why in out, out


# ----------------------------------------------------- rel="canonical" Link

def canonical(r):
    links = [v for v in r.get_all("Link") if 'rel="canonical"' in v]
    assert len(links) == 1, r
    m = re.fullmatch(r'<([^>]*)>; rel="canonical"', links[0])
    assert m, links[0]
    return m.group(1)


def first(srv, target):
    r, token, cookie = srv.first_visit(target)
    assert r.get_all("Link") == [], "a redirect is no tokenized answer"
    return r, token, cookie


# The static PDF (judged before the handler) and the CGI one (judged by
# the output filter), each with a query the canonical URL must keep.
STATIC_AND_DYNAMIC = pytest.mark.parametrize(
    "target, body", [("/plain/doc.pdf?b=2&a=1", "plain"),
                     ("/cgi/report?id=3", "plain")], ids=["static", "dynamic"])


@STATIC_AND_DYNAMIC
def test_r2_inline_carries_the_canonical_url(srv, target, body):
    r, token, cookie = first(srv, target)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files[body])
    assert canonical(r2) == srv.url(target)


@STATIC_AND_DYNAMIC
def test_r3_download_carries_the_canonical_url(srv, target, body):
    r, token, cookie = first(srv, target)
    r3 = srv.get(r.location_target())
    assert_attachment(r3, srv.files[body])
    assert canonical(r3) == srv.url(target)


def test_r5_range_carries_the_canonical_url(srv):
    r, token, cookie = first(srv, "/plain/doc.pdf?x=1")
    r5 = srv.get(r.location_target(), headers=[("Range", "bytes=0-9")])
    assert r5.status == 206, r5
    assert canonical(r5) == srv.url("/plain/doc.pdf?x=1")


def test_canonical_url_is_escaped(srv):
    # A path and query with bytes that may not stand in a header or inside
    # <...> come back percent-encoded; the token never does.
    target = "/plain/doc.pdf?q=%3Cb%3E&z=%22"
    r, token, cookie = first(srv, target)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    url = canonical(r2)
    assert url == srv.url(target)
    assert token not in url and "pdftoken" not in url


def test_untouched_answers_carry_no_canonical_link(srv):
    r = srv.get("/prot/doc.pdf", headers=ua(GOOGLEBOT))
    assert r.get_all("Link") == []


# --------------------------------------------------------------- error log

def test_every_request_log_line_names_the_document_path(srv):
    offset = srv.error_log_size()
    r, token, cookie = first(srv, "/plain/doc.pdf?secretquery=1")
    srv.get(r.location_target())                          # 00006
    srv.get(r.location_target(), cookies=[cookie])        # 00004
    srv.get(r.location_target(), headers=[("Range", "bytes=0-1")])  # 00005
    srv.get("/plain/doc.pdf?pdftoken=" + "A" * 43)        # 00008
    srv.get("/plain/doc.pdf?pdftoken=a&pdftoken=b")       # 00003
    text = srv.error_log_since(offset)
    lines = [l for l in text.splitlines() if "PDFTOKEN000" in l]
    tags = {re.search(r"PDFTOKEN(\d+)", l).group(1) for l in lines}
    assert {"00002", "00003", "00004", "00005", "00006",
            "00008"} <= tags, text
    for line in lines:
        assert "PDFTOKEN" in line
        assert re.search(r"PDFTOKEN\d+: /plain/doc\.pdf: ", line), line
        assert "secretquery" not in line and token not in line, line


def test_control_characters_in_the_path_are_escaped_in_the_log(srv):
    # A script with path info: judged, so logged, whatever the path says.
    offset = srv.error_log_size()
    r = srv.get("/cgi/report/a%0aPDFTOKEN00004:%20forged")
    assert r.status == 302, r
    text = srv.error_log_since(offset)
    assert "PDFTOKEN00002: /cgi/report/a\\nPDFTOKEN00004: forged: no token" \
        in text, text
    assert not re.search(r"^PDFTOKEN00004", text, re.M), text


# ------------------------------------------------------------ start-up notice

def test_start_up_names_the_secret_file(srv):
    assert re.search(r"PDFTOKEN00016: .*tokens are signed with the secret "
                     r"in " + re.escape(str(srv.secret_path)), srv.error_text())


def test_start_up_names_the_previous_secret_when_rotating(fresh_pool,
                                                          workdir):
    s = fresh_pool.make("rotate", secret_directive=False)
    old = workdir / "exempt-old-secret"
    old.write_bytes(b"o" * 40 + b"\n")
    new = workdir / "exempt-new-secret"
    new.write_bytes(b"n" * 40 + b"\n")
    s.configure('PdfTokenSecretFile "%s" "%s"\n' % (new, old))
    s.start()
    text = s.error_text()
    assert re.search(r"PDFTOKEN00016: .*secret in %s; previous secret "
                     r"accepted for verification: %s"
                     % (re.escape(str(new)), re.escape(str(old))), text), text
    assert "o" * 40 not in text and "n" * 40 not in text


def test_start_up_says_when_the_secret_is_random(fresh_pool):
    s = fresh_pool.make("random", secret_directive=False)
    s.configure("")
    s.start()
    assert re.search(r"PDFTOKEN00016: .*random secret made at start-up.*"
                     r"PdfTokenSecretFile", s.error_text())


def test_start_up_notice_shows_under_the_default_log_level(fresh_pool):
    # LogLevel warn, as a stock server has: notices still reach the log.
    s = fresh_pool.make("warn")
    s.configure("LogLevel warn\n")
    s.start()
    assert "PDFTOKEN00016" in s.error_text()
