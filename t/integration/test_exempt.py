# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The crawler's path (SPEC section 5): `PdfTokenExempt <ap_expr>`: a
request the expression matches is served as if the scope were unprotected
(inline, no redirect, no cookie), marked private so a shared cache never
hands it to anyone else, and no-store so the reader's own browser never
shows it again once the reader no longer matches; `none` takes an outer exemption away; a bad
expression fails configtest naming the directive.

The canonical Link of tokenized answers is in test_canonical.py, the
error-log lines in test_logging.py, the start-up notice in
test_secrets.py.
"""

import pytest

from checks import assert_redirect, assert_untouched, cache_directives

GOOGLEBOT = ("Mozilla/5.0 (compatible; Googlebot/2.1; "
             "+http://www.google.com/bot.html)")
BROWSER = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Chrome/156.0 Safari/537.36")

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    PdfTokenExempt "%{HTTP_USER_AGENT} =~ /Googlebot/"
    RewriteEngine On
    RewriteRule ^old\.pdf$ doc.pdf
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
<Directory "@DOCROOT@/opencgi">
    Options +ExecCGI
    SetHandler cgi-script
</Directory>
"""

PAGE = "<!DOCTYPE html>\n<title>page</title>\n<p>an ordinary page</p>\n"
HTML_CGI = ("#!/bin/sh\nprintf 'Content-Type: text/html\\r\\n\\r\\n'\n"
            "printf '%s'\n" % PAGE.replace("\n", "\\n"))

@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("exempt", modules=("cgid", "rewrite"))
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "exempt doc"),
               "inner": s.write_pdf("prot/inner/doc.pdf", "inner doc"),
               "net": s.write_pdf("net/doc.pdf", "net doc"),
               "plain": s.write_pdf("plain/doc.pdf", "plain doc")}
    s.write_pdf_cgi("cgi/report", "plain/doc.pdf")
    for d in ("prot", "open"):
        s.write("%s/page.html" % d, PAGE)
    for d in ("cgi", "opencgi"):
        s.write("%s/page" % d, HTML_CGI, mode=0o755)
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


def test_exempt_answer_is_private_and_never_stored(srv):
    # private: no shared cache hands it to a reader the expression would
    # not match; no-store: the reader's own browser would show its copy,
    # fragment and all, once the reader no longer matches (browser c9).
    r = srv.get("/prot/doc.pdf", headers=ua(GOOGLEBOT))
    assert r.get_all("Cache-Control") == ["private, no-store"], r
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


def headers_but_date(r):
    """The headers but Date and the framing: httpd answers the same CGI
    sometimes with a Content-Length and sometimes chunked, module or not
    (measured; test_untouched.py stages its scripts for that reason)."""
    framing = ("date", "content-length", "transfer-encoding")
    return [(n, v) for n, v in r.headers if n.lower() not in framing]


@pytest.mark.parametrize("prot, twin", [
    ("/prot/page.html", "/open/page.html"),
    ("/cgi/page?id=1", "/opencgi/page?id=1"),
], ids=["static", "cgi"])
def test_exempt_request_for_a_page_is_untouched(srv, prot, twin):
    # The expression is asked about PDFs only: an ordinary page gets
    # neither Cache-Control: private nor the Vary that ap_expr adds, and
    # is logged as not judged.
    tid = "exempt-page-" + prot.split("/")[1]
    r = srv.get(prot, headers=ua(GOOGLEBOT) + [("X-Test-Id", tid)])
    t = srv.get(twin, headers=ua(GOOGLEBOT))
    assert r.status == t.status == 200, (r, t)
    assert r.body == t.body == PAGE.encode()
    if "cgi" in prot:
        assert headers_but_date(r) == headers_but_date(t), (r, t)
    assert r.get("Cache-Control") is None and r.get("Vary") is None, r
    assert srv.access_log_entry(tid) == ("200", "-")


def test_exempt_dynamic_pdf_is_never_stored_and_varies(srv):
    r = srv.get("/cgi/report?id=3",
                headers=ua(GOOGLEBOT) + [("X-Test-Id", "exempt-dyn")])
    assert r.status == 200 and r.body == srv.files["plain"], r
    assert {"private", "no-store"} <= set(cache_directives(r)), r
    assert "User-Agent" in (r.get("Vary") or ""), r
    assert srv.access_log_entry("exempt-dyn") == ("200", "exempt")


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


def test_exempt_pdf_after_an_internal_redirect_is_marked_once(srv):
    # A per-directory RewriteRule redirects internally; both requests ask
    # the expression, and what the exemption adds is added once.
    r = srv.get("/prot/old.pdf",
                headers=ua(GOOGLEBOT) + [("X-Test-Id", "exempt-rewrite")])
    assert r.status == 200 and r.body == srv.files["doc"], r
    assert r.get_all("Cache-Control") == ["private, no-store"], r
    assert srv.access_log_entry("exempt-rewrite") == ("200", "exempt")
