# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Dynamic PDFs get the token step (SPEC section 2, issue 12).

A response that turns out PDF-like only once its handler has run (PHP
behind PHP-FPM, a proxied application server, a CGI script, a mod_asis
file, a static file without a known type) from a GET or HEAD in a protected
scope, with a 2xx status, goes through the decision table of section 4 in
the output filter: a first view is answered with R1's 302 (the handler's
output thrown away), the follow-up with its cookie is served inline,
without it as a forced download, and a Range request with the token is
served (R5).  The back end never sees the token in its query, and
everything that is not PDF-like passes untouched.

Real back ends run on loopback for the module's lifetime: php-fpm8.2 on a
unix socket behind mod_proxy_fcgi, an HTTP/1.1 server behind
mod_proxy_http (backends.py), CGI scripts, .asis files.  Each back end
records the query it received, and every request of these tests carries a
marker parameter of its own, so that each test checks what reached the back
end for its own requests.

Error statuses, POST, NPH scripts, mod_deflate, a slow back end and
PdfTokenDynamic are in test_dynamic_edge.py.
"""

import secrets

import pytest

import backends
import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_download_name, assert_inline,
                    assert_redirect, assert_untouched, cache_directives)
from samplepdf import make_pdf

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
    AddHandler send-as-is .asis
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
</Directory>
<Directory "@DOCROOT@/open">
    Options +ExecCGI
    AddHandler cgi-script .cgi
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
</Directory>
ProxyPass "/api/" "http://127.0.0.1:@BACKEND@/"
ProxyPass "/open-api/" "http://127.0.0.1:@BACKEND@/"
<Location "/api/">
    PdfTokenProtect On
</Location>
"""

# Every PHP script first writes "METHOD QUERY_STRING" to the log.
PHP_RECORD = r"""<?php
file_put_contents(%(seen)r, $_SERVER['REQUEST_METHOD'] . ' '
    . $_SERVER['QUERY_STRING'] . "\n", FILE_APPEND | LOCK_EX);
"""

PHP_SCRIPTS = {
    # The invoice of the issue: a PDF named by header() alone.
    "invoice.php": r"""
header('Content-Type: application/pdf');
readfile(%(data)r);
""",
    # No Content-Type at all (PHP's default text/html switched off).
    "notype.php": r"""
ini_set('default_mimetype', '');
header_remove('Content-Type');
readfile(%(data)r);
""",
    # octet-stream, but inline with a .pdf filename: Firefox's pdf.js
    # renders it (SPEC section 2).
    "octet.php": r"""
header('Content-Type: application/octet-stream');
header('Content-Disposition: inline; filename="report.pdf"');
readfile(%(data)r);
""",
    # A filename of the script's own choosing, never to reach a download.
    "named.php": r"""
header('Content-Type: application/pdf');
header('Content-Disposition: inline; filename="Invoice.exe"');
readfile(%(data)r);
""",
    # No type, and "%P" flushed to httpd on its own before the rest: the
    # sniff must not judge on the first bytes that happen to arrive.
    "split.php": r"""
ini_set('default_mimetype', '');
header_remove('Content-Type');
$d = file_get_contents(%(data)r);
echo substr($d, 0, 2);
flush();
usleep(100000);
echo substr($d, 2);
""",
    "etag.php": r"""
header('Content-Type: application/pdf');
header('ETag: "v1"');
if (($_SERVER['HTTP_IF_NONE_MATCH'] ?? '') === '"v1"') {
    http_response_code(304);
    exit;
}
readfile(%(data)r);
""",
    "page.php": r"""
header('Content-Type: text/html; charset=utf-8');
echo "<p>hello from php</p>\n";
""",
}

CGI_REPORT = r"""#!/usr/bin/python3
import os, sys
sys.stdin.buffer.read()
with open(%(seen)r, "a") as f:
    f.write("%%s %%s\n" %% (os.environ.get("REQUEST_METHOD", ""),
                          os.environ.get("QUERY_STRING", "")))
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""


class Case:
    """One way of producing a PDF after the handler.

    path     URL path (no .pdf suffix: the fixup cannot judge it)
    query    the application's own parameters
    ctype    Content-Type of the inline answer (None: not checked)
    seen     how to read what the back end got: "php", "cgi", "http" or
             None (a file: nothing to ask)
    head     the type is in the headers, so a HEAD can be judged too
    """

    def __init__(self, name, path, query, data, ctype="application/pdf",
                 seen=None, head=True):
        self.name, self.path, self.query = name, path, query
        self.data, self.ctype, self.seen, self.head = data, ctype, seen, head


def mark():
    """A marker of fixed length, so that none is a prefix of another."""
    return "m" + secrets.token_hex(6)


@pytest.fixture(scope="module")
def env(pool):
    """The server, php-fpm and the HTTP back end, started and stopped here."""
    s = pool.make("dynamic", modules=[httpd.cgi_module(), "proxy",
                                      "proxy_http", "proxy_fcgi", "asis"])
    php = backends.PhpFpm(s.root / "fpm")
    back = backends.HttpBackend()
    s.seen_dir = s.root / "seen"
    s._mkdirs(s.seen_dir)
    s.seen_dir.chmod(0o777)  # the scripts run as www-data
    files = s.files = {}
    for key in ("php", "cgi", "http", "asis", "static", "open"):
        files[key] = make_pdf("dynamic " + key, pages=2)
        s.write("data/%s.pdf" % key, files[key], base=s.root)

    def data(key):
        return str(s.root / "data" / ("%s.pdf" % key))

    rec = PHP_RECORD % {"seen": str(s.seen_dir / "php.log")}
    for name, body in PHP_SCRIPTS.items():
        s.write("prot/" + name, rec + body % {"data": data("php")})
    s.write("open/invoice.php",
            rec + PHP_SCRIPTS["invoice.php"] % {"data": data("open")})
    s.write("prot/report.cgi", CGI_REPORT % {
        "seen": str(s.seen_dir / "cgi.log"), "data": data("cgi")},
        mode=0o755)
    s.write("prot/typed.asis", b"Status: 200 OK\nContent-Type: "
            b"application/pdf\n\n" + files["asis"])
    s.write("prot/untyped.asis", b"Status: 200 OK\n\n" + files["asis"])
    # WebKitGTK shows a PDF part of a multipart/x-mixed-replace answer in
    # its viewer, after an HTML part too (t/browser/render-matrix.tsv).
    files["mxr"] = (b"--part\r\nContent-Type: text/html\r\n\r\n<p>hi</p>"
                    b"\r\n--part\r\nContent-Type: application/pdf\r\n\r\n"
                    + files["asis"] + b"\r\n--part--\r\n")
    s.write("prot/mixed.asis", b"Status: 200 OK\nContent-Type: "
            b"multipart/x-mixed-replace; boundary=part\n\n" + files["mxr"])
    s.write("prot/scan", files["static"])
    # CGI local redirects: a Location with a local path and no Status
    # makes httpd serve that path in place of the script's answer.
    s.write("prot/local.pdf", files["static"])
    for d in ("prot", "open"):
        s.write(d + "/local.cgi",
                "#!/bin/sh\nprintf 'Location: /prot/local.pdf\\r\\n\\r\\n'\n",
                mode=0o755)
    s.write("prot/notes", b"plain notes, no extension\n")
    backends.add_report_routes(back, files["http"])

    back.start()
    try:
        php.start()
        s.configure(CONFIG.replace("@PHP@", php.handler)
                    .replace("@BACKEND@", str(back.port)))
        s.start()
        s.php, s.back = php, back
        yield s
    finally:
        php.stop()
        back.stop()


P = "application/pdf"


def cases():
    """The back ends, each with a URL the fixup cannot judge."""
    return [
        Case("php", "/prot/invoice.php", "id=3", "php", seen="php"),
        Case("php-notype", "/prot/notype.php", "id=4", "php", ctype=None,
             seen="php", head=False),
        Case("php-octet-inline", "/prot/octet.php", "id=5", "php",
             ctype="application/octet-stream", seen="php"),
        Case("php-split-notype", "/prot/split.php", "id=6", "php",
             ctype=None, seen="php", head=False),
        Case("proxy-length", "/api/reports/7", "", "http", seen="http"),
        Case("proxy-chunked", "/api/reports/chunked", "x=1", "http",
             seen="http"),
        Case("proxy-notype", "/api/reports/notype", "", "http", ctype=None,
             seen="http", head=False),
        Case("proxy-split-notype", "/api/reports/split", "", "http",
             ctype=None, seen="http", head=False),
        Case("proxy-text-pdf", "/api/reports/typed", "ct=text/pdf", "http",
             ctype="text/pdf", seen="http"),
        Case("proxy-x-pdf", "/api/reports/typed", "ct=application/x-pdf",
             "http", ctype="application/x-pdf", seen="http"),
        Case("proxy-upper-params", "/api/reports/typed",
             "ct=Application/PDF;%20charset=x", "http", ctype=P,
             seen="http"),
        Case("proxy-list-last-pdf", "/api/reports/typed",
             "ct=text/html,%20application/pdf", "http", ctype=None,
             seen="http"),
        Case("proxy-unknown-type", "/api/reports/typed",
             "ct=unknown/unknown", "http", ctype=None, seen="http",
             head=False),
        Case("proxy-malformed-type", "/api/reports/typed", "ct=pdf",
             "http", ctype=None, seen="http", head=False),
        Case("proxy-octet-inline", "/api/reports/typed",
             "ct=application/octet-stream&cd=inline;%20filename=r.pdf",
             "http", ctype="application/octet-stream", seen="http"),
        Case("proxy-mixed-replace", "/api/reports/typed",
             "ct=multipart/x-mixed-replace;%20boundary=b", "http",
             ctype="multipart/x-mixed-replace", seen="http"),
        Case("cgi", "/prot/report.cgi", "a=1&b=%20c&a=2", "cgi", seen="cgi"),
        Case("asis-typed", "/prot/typed.asis", "", "asis"),
        Case("asis-untyped", "/prot/untyped.asis", "", "asis", ctype=None,
             head=False),
        Case("asis-mixed-replace", "/prot/mixed.asis", "", "mxr",
             ctype="multipart/x-mixed-replace"),
        Case("static-noext", "/prot/scan", "", "static", ctype=None,
             head=False),
    ]


CASES = cases()
HEAD_CASES = [c for c in CASES if c.head]
SEEN_CASES = [c for c in CASES if c.seen]


def ids(cs):
    return [c.name for c in cs]


# ---------------------------------------------------------------- helpers

def target(case, m):
    """The case's URL with its query and the marker: (URL, query)."""
    query = "&".join(p for p in (case.query, "mark=" + m) if p)
    return case.path + "?" + query, query


def send(srv, method, url, cookies=None, headers=()):
    """One request, tagged for the access log: (response, PDFTOKEN)."""
    tid = "dyn-" + mark()
    r = srv.request(method, url, cookies=cookies,
                    headers=[("X-Test-Id", tid)] + list(headers))
    status, env = srv.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    return r, env


def first_view(srv, case, m, method="GET"):
    url, query = target(case, m)
    r, env = send(srv, method, url)
    token, cookie = assert_redirect(srv, r, case.path, query=query,
                                    secret=srv.secret)
    assert env == "redirect", env
    return r, token, cookie


def seen_queries(srv, case, m):
    """The queries the back end received on requests carrying marker m."""
    if case.seen == "http":
        lines = srv.back.lines_with("mark=" + m)
        out = []
        for line in lines:
            method, uri, _ = line.split(" ")
            out.append("%s %s" % (method, uri.partition("?")[2]))
        return out
    log = srv.seen_dir / ("%s.log" % case.seen)
    try:
        text = log.read_text("latin-1")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if "mark=" + m in line]


def assert_back_end_saw(srv, case, m, query, methods=("GET",)):
    """The back end got exactly the application's query, never a token."""
    if not case.seen:
        return
    got = seen_queries(srv, case, m)
    assert got, "the back end got no request with mark=%s" % m
    for line in got:
        assert "pdftoken" not in line, \
            "the token reached the back end: %r" % line
        method, _, q = line.partition(" ")
        assert method in methods and q == query, \
            "back end got %r, want %s %r" % (line, "/".join(methods), query)


# ------------------------------------------------------------ first view

@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_first_view_is_redirected(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m)
    assert b"%PDF" not in r.body
    assert_back_end_saw(env, case, m, target(case, m)[1])


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_follow_up_with_cookie_is_inline(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m)
    r2, decision = send(env, "GET", r.location_target(), cookies=[cookie])
    assert_inline(r2, env.files[case.data], content_type=case.ctype)
    assert "no-store" in cache_directives(r2), r2
    assert decision == "pass", decision
    assert_back_end_saw(env, case, m, target(case, m)[1])


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_follow_up_without_cookie_is_a_download(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m)
    r2, decision = send(env, "GET", r.location_target())
    assert_attachment(r2, env.files[case.data])
    assert_download_name(r2, case.path)
    assert decision == "fallback", decision
    assert_back_end_saw(env, case, m, target(case, m)[1])


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_range_with_token_and_no_cookie_is_served(env, case):
    """R5: a PDF viewer's byte-range continuation after the cookie is gone.
    Back ends that answer the range themselves give a 206; httpd ranges
    a file or one whole brigade itself; a streamed 200 may stay a 200."""
    m = mark()
    r, token, cookie = first_view(env, case, m)
    r2, decision = send(env, "GET", r.location_target(),
                        headers=[("Range", "bytes=0-99")])
    data = env.files[case.data]
    assert r2.get("Location") is None and r2.get_all("Set-Cookie") == [], r2
    cd = r2.get("Content-Disposition") or ""
    assert not cd.lower().startswith("attachment"), r2
    assert r2.get("X-Content-Type-Options") is None, r2
    if case.name in ("proxy-length", "static-noext"):
        assert r2.status == 206, r2
    assert r2.status in (200, 206), r2
    if r2.status == 206:
        assert r2.get("Content-Range") == "bytes 0-99/%d" % len(data), r2
        assert r2.body == data[:100]
    else:
        assert r2.body == data
    assert decision == "range", decision
    assert_back_end_saw(env, case, m, target(case, m)[1])


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forged_token_with_its_cookie_is_redirected_again(env, case):
    """R4: a token the server never minted, with a cookie to match."""
    m = mark()
    url, query = target(case, m)
    forged = ref.forge(ref.mint(env.secret, case.path, lifetime=30))
    r, decision = send(env, "GET", url + "&pdftoken=" + forged,
                       cookies=[ref.cookie_pair(forged)])
    token, _ = assert_redirect(env, r, case.path, query=query,
                               secret=env.secret)
    assert token != forged and decision == "redirect"
    assert_back_end_saw(env, case, m, query)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_token_for_another_path_is_redirected_again(env, case):
    m = mark()
    url, query = target(case, m)
    other = ref.mint(env.secret, "/prot/other.php", lifetime=30)
    r, decision = send(env, "GET", url + "&pdftoken=" + other,
                       cookies=[ref.cookie_pair(other)])
    assert_redirect(env, r, case.path, query=query, secret=env.secret)
    assert decision == "redirect"


def test_any_2xx_status_takes_the_token_step(env):
    """203 is rendered like 200: the decision table applies to every 2xx."""
    case = Case("203", "/api/reports/typed", "ct=application/pdf&st=203",
                "http", seen="http")
    m = mark()
    r, token, cookie = first_view(env, case, m)
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert r2.status == 203 and r2.body == env.files["http"], r2
    assert r2.get("Content-Disposition") is None, r2
    assert_back_end_saw(env, case, m, target(case, m)[1])


def test_range_request_without_token_is_redirected(env):
    """A Range header alone opens nothing: without a token, R1 (the back
    end's own 206 is thrown away like a 200)."""
    case = Case("range", "/api/reports/7", "", "http", seen="http")
    m = mark()
    url, query = target(case, m)
    r, decision = send(env, "GET", url, headers=[("Range", "bytes=0-99")])
    assert_redirect(env, r, case.path, query=query)
    assert decision == "redirect"


# ------------------------------------------------------------------ HEAD

@pytest.mark.parametrize("case", HEAD_CASES, ids=ids(HEAD_CASES))
def test_first_head_is_redirected_without_body(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m, method="HEAD")
    assert r.rest == b"", "a HEAD answer carries bytes: %r" % r.rest[:100]
    assert_back_end_saw(env, case, m, target(case, m)[1],
                        methods=("HEAD", "GET"))


@pytest.mark.parametrize("case", HEAD_CASES, ids=ids(HEAD_CASES))
def test_head_follow_up_with_cookie_is_inline(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m, method="HEAD")
    r2, decision = send(env, "HEAD", r.location_target(), cookies=[cookie])
    assert_inline(r2, b"", content_type=case.ctype)
    assert r2.rest == b""
    assert decision == "pass"


# ------------------------------------------- the back end and the token

@pytest.mark.parametrize("case", SEEN_CASES, ids=ids(SEEN_CASES))
def test_token_between_parameters_is_cut_out_for_the_back_end(env, case):
    m = mark()
    r, token, cookie = first_view(env, case, m)
    base, query = target(case, m)
    # The token in the middle: the back end gets the others in order.
    url = "%s?pdftoken=%s&%s&z=9" % (case.path, token, query)
    r2, decision = send(env, "GET", url, cookies=[cookie])
    assert_inline(r2, env.files[case.data], content_type=case.ctype)
    got = seen_queries(env, case, m)
    assert got[-1] == "GET %s&z=9" % query, got
    for line in got:
        assert "pdftoken" not in line, line


def test_php_script_sees_query_without_token_on_an_html_page(env):
    """The token leaves r->args for every GET in a protected scope, even
    when the answer turns out not to be a PDF."""
    m = mark()
    token = ref.mint(env.secret, "/prot/page.php", lifetime=30)
    r = env.get("/prot/page.php?a=1&pdftoken=%s&mark=%s" % (token, m))
    assert_untouched(r)
    got = seen_queries(env, Case("", "", "", "", seen="php"), m)
    assert got == ["GET a=1&mark=%s" % m], got


def test_proxied_back_end_never_got_a_token(env):
    """A whole visit here, then every request line the HTTP back end
    received in this module (the tests above included): none carried the
    token parameter."""
    case = CASES[3]
    r, token, cookie = first_view(env, case, mark())
    for cookies, headers in (([cookie], []), ([], []),
                             ([], [("Range", "bytes=0-9")])):
        assert env.get(r.location_target(), cookies=cookies,
                       headers=headers).status in (200, 206)
    seen = env.back.all_requests()
    assert seen, "the HTTP back end got no request at all"
    leaked = [line for line in seen if "pdftoken" in line]
    assert not leaked, leaked


# --------------------------------------------------- conditional requests

@pytest.mark.parametrize("path", ["/api/reports/etag", "/prot/etag.php"])
def test_if_none_match_follow_up_gets_the_back_ends_304(env, path):
    m = mark()
    case = Case("etag", path, "", "http",
                seen="http" if path.startswith("/api") else "php")
    r, token, cookie = first_view(env, case, m)
    r2, _ = send(env, "GET", r.location_target(), cookies=[cookie],
                 headers=[("If-None-Match", '"v1"')])
    assert r2.status == 304, r2
    assert r2.rest == b"" and r2.get("Location") is None, r2
    assert r2.get_all("Set-Cookie") == [], r2
    assert r2.get("Content-Disposition") is None, r2
    assert_back_end_saw(env, case, m, target(case, m)[1])


# ----------------------------------------------------- two tabs at once

def test_two_first_views_get_two_cookies_and_both_end_inline(env):
    case = CASES[0]
    m = mark()
    r1, t1, c1 = first_view(env, case, m)
    r2, t2, c2 = first_view(env, case, m)
    assert t1 != t2 and c1.split("=")[0] != c2.split("=")[0]
    both = [c1, c2]
    assert_inline(env.get(r1.location_target(), cookies=both),
                  env.files["php"])
    assert_inline(env.get(r2.location_target(), cookies=both),
                  env.files["php"])


# ---------------------------------------------- not PDF-like: untouched

def test_html_from_php_is_untouched(env):
    r = env.get("/prot/page.php?x=1")
    assert_untouched(r, body=b"<p>hello from php</p>\n")
    assert r.get("Content-Type").startswith("text/html"), r


def test_json_from_the_proxy_is_untouched(env):
    r = env.get("/api/reports/json?x=1")
    assert_untouched(r, body=b'{"report": 7}\n')
    assert r.get("Content-Type") == "application/json", r


def test_text_file_without_extension_is_untouched(env):
    r = env.get("/prot/notes")
    assert_untouched(r, body=b"plain notes, no extension\n")


def test_pdf_first_in_a_type_list_takes_the_token_step_too(env):
    """Fetch lets the last type of `application/pdf, text/html` count (an
    HTML page), but the module reads any listed PDF type as PDF-like on
    purpose, in case an engine takes the first (README, "What counts as a
    PDF"; token.h, pdftoken_type_listed): a token step, then inline."""
    case = Case("list-first-pdf", "/api/reports/typed",
                "ct=application/pdf,%20text/html", "http", seen="http")
    m = mark()
    r, token, cookie = first_view(env, case, m)
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, env.files["http"], content_type=None)


def test_empty_type_then_pdf_type_from_the_proxy_takes_the_token_step(env):
    """A back end's empty Content-Type, then application/pdf: httpd keeps
    the empty one as r->content_type and sends both headers, which a
    browser reads as application/pdf, and the viewers find %PDF- after a
    few other bytes (render matrix c408).  Judged by the type httpd sends,
    not as an answer without a type whose body does not begin with %PDF-."""
    r = env.get("/api/reports/twotypes")
    token, cookie = assert_redirect(env, r, "/api/reports/twotypes",
                                    secret=env.secret)
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, env.back.junk_pdf, content_type=None)
    assert "application/pdf" in r2.get_all("Content-Type"), r2


@pytest.mark.parametrize("path", ["/prot/local.cgi", "/open/local.cgi"])
def test_cgi_local_redirect_to_a_protected_pdf_takes_the_token_step(env,
                                                                     path):
    """A CGI script's local redirect (Location: /prot/local.pdf, no
    Status) is an internal redirect: the PDF it ends on is judged, from a
    protected script or an unprotected one alike, and the token belongs to
    the URL the browser asked for."""
    r = env.get(path)
    token, cookie = assert_redirect(env, r, path, secret=env.secret)
    r2 = env.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, env.files["static"])


def test_php_pdf_in_unprotected_scope_is_untouched(env):
    r = env.get("/open/invoice.php?id=3")
    assert_untouched(r, body=env.files["open"])
    assert r.get("Content-Type") == "application/pdf", r


def test_proxied_pdf_in_unprotected_scope_is_untouched(env):
    r = env.get("/open-api/reports/7")
    assert_untouched(r, body=env.files["http"])
    assert r.get("Content-Type") == "application/pdf", r


def test_missing_file_without_extension_is_a_plain_404(env):
    """SPEC section 4: a static file that does not exist gets httpd's 404,
    not a token."""
    r = env.get("/prot/no-such-file")
    assert r.status == 404, r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == [], r


# ------------------------------------------------------- download names

def test_download_name_never_comes_from_the_script(env):
    m = mark()
    case = Case("named", "/prot/named.php", "", "php", seen="php")
    r, token, cookie = first_view(env, case, m)
    r2, decision = send(env, "GET", r.location_target())
    assert_attachment(r2, env.files["php"])
    assert_download_name(r2, "/prot/named.php")
    assert "exe" not in r2.get("Content-Disposition").lower(), r2
