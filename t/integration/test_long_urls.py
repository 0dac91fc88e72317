# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A token redirect whose follow-up would not fit LimitRequestLine is not
sent (SPEC R1, issue 19 item 7).

R1 appends `&pdftoken=<60 characters>` to the URL.  When the browser's
follow-up request line, `GET <Location's path and query> HTTP/1.1`, would be
longer than the server's LimitRequestLine, httpd would answer it with 414
and the reader would lose the document: the module answers with R3 at once
instead (PdfTokenFallback attachment: the document as a forced download;
deny: 403), with %{PDFTOKEN}e `fallback` or `deny` and a line at level info
in the error log.  A URL one byte shorter gets the 302, and its follow-up is
served, not refused with 414.

LimitRequestLine is 1000 here (httpd itself accepts one byte more, which
the module need not use), for static PDFs, a CGI script and a proxied back
end, the last two judged after the handler.
"""

import secrets

import pytest

import backends
import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_download_name, assert_inline,
                    assert_redirect)
from samplepdf import make_pdf

LIMIT = 1000

CONFIG = r"""
LimitRequestLine 1000
<Directory "@DOCROOT@/long">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
ProxyPass "/api/" "http://127.0.0.1:@BACKEND@/"
<Location "/api/">
    PdfTokenProtect On
</Location>
ProxyPass "/denyapi/" "http://127.0.0.1:@BACKEND@/"
<Location "/denyapi/">
    PdfTokenProtect On
    PdfTokenFallback deny
</Location>
"""

CGI = r"""#!/usr/bin/python3
import sys
data = open(%r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

# (URL path, key of the document) for each kind of PDF, by fallback.
DOCS = {
    "attachment": {"static": "/long/a.pdf", "cgi": "/long/report.cgi",
                   "proxy": "/api/reports/7"},
    "deny": {"static": "/deny/a.pdf", "cgi": "/deny/report.cgi",
             "proxy": "/denyapi/reports/7"},
}

# "&pdftoken=" and the token the module appends.
TOKEN_PARAM = len("&pdftoken=") + ref.TOKEN_LEN


@pytest.fixture(scope="module")
def env(pool):
    s = pool.make("long-urls", modules=[httpd.cgi_module(), "proxy",
                                         "proxy_http"])
    back = backends.HttpBackend()
    s.files = {"static": make_pdf("long static", pages=2),
               "cgi": make_pdf("long cgi", pages=2),
               "proxy": make_pdf("long proxy", pages=2)}
    backends.add_report_routes(back, s.files["proxy"])
    s.write("data/cgi.pdf", s.files["cgi"], base=s.root)
    for d in ("long", "deny"):
        s.write(d + "/a.pdf", s.files["static"])
        s.write(d + "/report.cgi", CGI % str(s.root / "data" / "cgi.pdf"),
                mode=0o755)
    back.start()
    try:
        s.configure(CONFIG.replace("@BACKEND@", str(back.port)))
        s.start()
        yield s
    finally:
        back.stop()


def padded(path, line_length, tokenized=True):
    """(URL, its query) for `path` whose follow-up request line
    `GET <URL>&pdftoken=<token> HTTP/1.1` is `line_length` bytes long
    (with tokenized=False: the request line of the URL itself)."""
    fixed = len("GET ") + len(path) + len("?x=") + len(" HTTP/1.1")
    if tokenized:
        fixed += TOKEN_PARAM
    fill = line_length - fixed
    assert fill > 0
    # Not all one letter: the module must keep the query byte for byte.
    pad = ("0123456789abcdef" * (fill // 16 + 1))[:fill]
    query = "x=" + pad
    return path + "?" + query, query


def logged(s, target, cookies=None, headers=()):
    """One request tagged for the access log: (response, PDFTOKEN, the
    error log written while it was served)."""
    offset = s.error_log_size()
    tid = "long-" + secrets.token_hex(6)
    r = s.get(target, cookies=cookies,
              headers=[("X-Test-Id", tid)] + list(headers))
    # The access log line comes after every error-log line of the request.
    status, decision = s.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    return r, decision, s.error_log_since(offset)


def info_lines(log, path):
    return [line for line in log.splitlines()
            if "[pdftoken:info]" in line and path in line]


def request_line(target):
    return len("GET %s HTTP/1.1" % target)


KINDS = ["static", "cgi", "proxy"]


# ------------------------------------------------------ one byte too long

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("over", [1, TOKEN_PARAM], ids=["by-1", "by-70"])
def test_too_long_for_a_follow_up_is_a_download_at_once(env, kind, over):
    """Tokenized, the request line would be LIMIT + `over` bytes: R3's
    forced download at once, no redirect, no cookie."""
    path = DOCS["attachment"][kind]
    url, query = padded(path, LIMIT + over)
    assert request_line(url) <= LIMIT + 1, "httpd itself would refuse it"
    r, decision, log = logged(env, url)
    assert_attachment(r, env.files[kind])
    assert_download_name(r, path)
    assert r.get_all("Set-Cookie") == [], r
    assert decision == "fallback", decision
    assert info_lines(log, path), \
        "no pdftoken info line naming %s in:\n%s" % (path, log)


@pytest.mark.parametrize("kind", KINDS)
def test_too_long_with_fallback_deny_is_a_403(env, kind):
    path = DOCS["deny"][kind]
    url, query = padded(path, LIMIT + 1)
    r, decision, log = logged(env, url)
    assert r.status == 403, r
    assert b"%PDF" not in r.raw, "the document was sent: %r" % r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == [], r
    assert decision == "deny", decision
    assert info_lines(log, path), \
        "no pdftoken info line naming %s in:\n%s" % (path, log)


@pytest.mark.parametrize("kind", ["static", "cgi"])
def test_too_long_head_is_a_download_at_once(env, kind):
    path = DOCS["attachment"][kind]
    url, query = padded(path, LIMIT + 1)
    r = env.head(url)
    assert_attachment(r, b"")
    assert r.get_all("Set-Cookie") == [], r


@pytest.mark.parametrize("kind", KINDS)
def test_a_stale_token_in_a_url_one_byte_too_long_is_a_download(env, kind):
    """R4: the URL carries an expired token, which the fresh one would
    replace; the resulting line would be one byte over: R3 at once."""
    path = DOCS["attachment"][kind]
    url, query = padded(path, LIMIT + 1)
    stale = ref.mint(env.secret, path, lifetime=-100)
    target = "%s&pdftoken=%s" % (url, stale)
    assert request_line(target) == LIMIT + 1
    r, decision, log = logged(env, target)
    assert_attachment(r, env.files[kind])
    assert r.get_all("Set-Cookie") == [], r
    assert decision == "fallback", decision


# ------------------------------------------------------- just short enough

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("line", [LIMIT, LIMIT - 1, LIMIT - 50])
def test_short_enough_gets_the_redirect_and_its_follow_up_is_served(
        env, kind, line):
    path = DOCS["attachment"][kind]
    url, query = padded(path, line)
    r, decision, log = logged(env, url)
    token, cookie = assert_redirect(env, r, path, query=query,
                                    secret=env.secret)
    assert decision == "redirect", decision
    target = r.location_target()
    assert request_line(target) == line, (request_line(target), line)
    r2, decision, log = logged(env, target, cookies=[cookie])
    assert r2.status != 414, r2
    assert_inline(r2, env.files[kind])
    assert decision == "pass", decision


@pytest.mark.parametrize("kind", ["static", "cgi"])
def test_short_enough_with_fallback_deny_gets_the_redirect(env, kind):
    path = DOCS["deny"][kind]
    url, query = padded(path, LIMIT)
    r, decision, log = logged(env, url)
    token, cookie = assert_redirect(env, r, path, query=query)
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, env.files[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_a_stale_token_in_a_url_at_the_limit_heals(env, kind):
    """R4 at the limit: the URL already carries an expired token; the
    fresh one replaces it, so the follow-up is exactly as long as the URL
    the browser sent, and fits."""
    path = DOCS["attachment"][kind]
    url, query = padded(path, LIMIT)
    stale = ref.mint(env.secret, path, lifetime=-100)
    r, decision, log = logged(env, "%s&pdftoken=%s" % (url, stale))
    token, cookie = assert_redirect(env, r, path, query=query,
                                    secret=env.secret)
    assert token != stale
    assert request_line(r.location_target()) == LIMIT
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, env.files[kind])
