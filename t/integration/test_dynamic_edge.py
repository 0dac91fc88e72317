# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Dynamic PDFs that must never be inline, and the chains around them.

SPEC section 2: PDF-like responses with an error status (an ErrorDocument
that is a PDF, a script or back end answering 500 with a PDF) and answers
to methods other than GET and HEAD are forced downloads, whatever token
they carry; an NPH script in a protected scope is refused (403) with an
error-log line, since its output bypasses every filter.  mod_deflate in
the chain changes neither the redirect nor the inline answer; a slow
proxied back end is still read to its end when the module redirects; and
PdfTokenDynamic attachment turns the token step for these responses back
into a forced download.

The first-view flows per back end are in test_dynamic.py.
"""

import gzip
import re
import secrets
import socket

import pytest

import backends
import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_download_name,
                    assert_forced_download, assert_inline, assert_redirect,
                    assert_untouched)
from samplepdf import make_pdf

PHP_HANDLER = r"""
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
"""

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
    ErrorDocument 404 /err/notfound.pdf
    @PHPH@
</Directory>
<Directory "@DOCROOT@/err">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/prot2">
    PdfTokenProtect On
    ErrorDocument 404 /pub/notfound.pdf
</Directory>
<Directory "@DOCROOT@/open">
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
<Directory "@DOCROOT@/gz">
    PdfTokenProtect On
    SetOutputFilter DEFLATE
    @PHPH@
</Directory>
ProxyPass "/api/" "http://127.0.0.1:@BACKEND@/"
ProxyPass "/gzapi/" "http://127.0.0.1:@BACKEND@/"
<Location "/api/">
    PdfTokenProtect On
</Location>
<Location "/gzapi/">
    PdfTokenProtect On
    AddOutputFilterByType DEFLATE application/pdf
</Location>
"""

MODES_CONFIG = r"""
<Directory "@DOCROOT@/att">
    PdfTokenProtect On
    PdfTokenDynamic attachment
    @PHPH@
</Directory>
<Directory "@DOCROOT@/att/sub">
    PdfTokenTimeout 20
</Directory>
<Directory "@DOCROOT@/att/back">
    PdfTokenDynamic redirect
</Directory>
ProxyPass "/attapi/" "http://127.0.0.1:@BACKEND@/"
<Location "/attapi/">
    PdfTokenProtect On
    PdfTokenDynamic attachment
</Location>
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
    @PHPH@
</Directory>
"""

PHP_PDF = r"""<?php
file_put_contents(%(seen)r, $_SERVER['REQUEST_METHOD'] . ' '
    . $_SERVER['QUERY_STRING'] . "\n", FILE_APPEND | LOCK_EX);
%(status)s
%(type)s
readfile(%(data)r);
"""

CGI_PDF = r"""#!/usr/bin/python3
import sys
sys.stdin.buffer.read()
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
out.write(b"%(status)sContent-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

# An NPH script writes the whole response itself, status line included;
# it notes that it ran, so a test can tell it was refused before running.
NPH = r"""#!/usr/bin/python3
import sys
with open(%(ran)r, "a") as f:
    f.write("ran\n")
data = %(body)s
out = sys.stdout.buffer
out.write(b"HTTP/1.1 200 OK\r\nContent-Type: %(ctype)s\r\n")
out.write(b"Content-Length: %%d\r\nConnection: close\r\n\r\n" %% len(data))
out.write(data)
"""


def php_script(seen, data, ctype="application/pdf", status=None):
    return PHP_PDF % {
        "seen": seen, "data": data,
        "status": "http_response_code(%d);" % status if status else "",
        "type": ("header('Content-Type: %s');" % ctype if ctype else
                 "ini_set('default_mimetype', '');\n"
                 "header_remove('Content-Type');"),
    }


@pytest.fixture(scope="module")
def backs(workdir):
    """php-fpm and the HTTP back end, shared by this module's servers."""
    root = workdir / "test_dynamic_edge-backends"
    php = backends.PhpFpm(root / "fpm")
    back = backends.HttpBackend()
    back.pdf = make_pdf("edge http", pages=2)
    backends.add_report_routes(back, back.pdf)
    back.start()
    try:
        php.start()
        yield php, back
    finally:
        php.stop()
        back.stop()


def configure(s, config, php, back):
    s.configure(config.replace("@PHPH@", PHP_HANDLER)
                .replace("@PHP@", php.handler)
                .replace("@BACKEND@", str(back.port)))


def setup_files(s):
    s.seen_dir = s.root / "seen"
    s._mkdirs(s.seen_dir)
    s.seen_dir.chmod(0o777)  # the scripts run as www-data
    s.files = {"php": make_pdf("edge php", pages=2)}
    s.write("data/php.pdf", s.files["php"], base=s.root)
    return str(s.seen_dir / "php.log"), str(s.root / "data" / "php.pdf")


@pytest.fixture(scope="module")
def srv(pool, backs):
    php, back = backs
    s = pool.make("edge", modules=[httpd.cgi_module(), "proxy",
                                   "proxy_http", "proxy_fcgi", "deflate",
                                   "filter"])
    seen, data = setup_files(s)
    f = s.files
    s.back = back
    f["http"] = back.pdf
    f["notfound"] = s.write_pdf("err/notfound.pdf", "not found")
    f["pubnotfound"] = s.write_pdf("pub/notfound.pdf", "pub not found")
    # <Directory prot2> applies only if the directory exists.
    s.write("prot2/page.html", "<p>a page</p>\n")
    f["static"] = s.write_pdf("gz/scan", "scan")
    for d in ("prot", "gz"):
        s.write(d + "/invoice.php", php_script(seen, data))
        s.write(d + "/notype.php", php_script(seen, data, ctype=None))
    s.write("prot/err500.php", php_script(seen, data, status=500))
    s.write("prot/report.cgi", CGI_PDF % {"data": data, "status": ""},
            mode=0o755)
    s.write("prot/err500.cgi", CGI_PDF % {
        "data": data, "status": "Status: 500 Internal Server Error\\r\\n"},
        mode=0o755)
    pdf_body = "open(%r, 'rb').read()" % data
    for d in ("prot", "open"):
        s.write(d + "/nph-doc.cgi", NPH % {
            "ran": str(s.seen_dir / ("nph-%s.log" % d)), "body": pdf_body,
            "ctype": "application/pdf"}, mode=0o755)
    s.write("prot/nph-page.cgi", NPH % {
        "ran": str(s.seen_dir / "nph-page.log"), "body": "b'<p>hi</p>'",
        "ctype": "text/html"}, mode=0o755)
    configure(s, CONFIG, php, back)
    s.start()
    return s


@pytest.fixture(scope="module")
def modes(pool, backs):
    """A server whose configuration needs PdfTokenDynamic."""
    php, back = backs
    s = pool.make("modes", modules=["proxy", "proxy_http", "proxy_fcgi"])
    seen, data = setup_files(s)
    s.back = back
    s.files["http"] = back.pdf
    for d in ("att", "att/sub", "att/back", "deny"):
        s.write(d + "/invoice.php", php_script(seen, data))
    s.files["static"] = s.write_pdf("att/doc.pdf", "static under att")
    configure(s, MODES_CONFIG, php, back)
    s.start()
    return s


def php_seen(s):
    try:
        return (s.seen_dir / "php.log").read_text("latin-1").splitlines()
    except FileNotFoundError:
        return []


def logged(s, method, url, cookies=None, headers=(), body=b""):
    """One request tagged for the access log: (response, PDFTOKEN)."""
    tid = "edge-" + secrets.token_hex(6)
    r = s.request(method, url, cookies=cookies, body=body,
                  headers=[("X-Test-Id", tid)] + list(headers))
    status, env = s.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    return r, env


def minted(s, path):
    token = ref.mint(s.secret, path, lifetime=30)
    return token, ref.cookie_pair(token)


# --------------------------------------------------- error statuses

def test_error_document_pdf_for_404_is_a_forced_download(srv):
    r, env = logged(srv, "GET", "/prot/nope")
    assert_forced_download(r, srv.files["notfound"], status=404)
    assert_download_name(r, "/prot/nope", also=["notfound.pdf"])
    assert env == "fallback", env


def test_error_document_pdf_with_a_valid_token_and_cookie_is_a_download(
        srv):
    token, cookie = minted(srv, "/prot/nope")
    r = srv.get("/prot/nope?pdftoken=" + token, cookies=[cookie])
    assert_forced_download(r, srv.files["notfound"], status=404)


def test_error_document_pdf_head_is_a_forced_download(srv):
    r = srv.head("/prot/nope")
    assert_forced_download(r, b"", status=404)


def test_error_document_pdf_from_unprotected_directory_is_a_download(srv):
    """The answer to /prot2/nope belongs to a protected scope, even though
    the PDF that ErrorDocument serves lives in an unprotected one (SPEC
    section 6: whatever its status, type or handler)."""
    r = srv.get("/prot2/nope")
    assert_forced_download(r, srv.files["pubnotfound"], status=404)


@pytest.mark.parametrize("path", ["/prot/err500.cgi", "/prot/err500.php",
                                  "/api/reports/err500"])
def test_500_with_a_pdf_is_a_forced_download(srv, path):
    data = srv.files["http" if path.startswith("/api") else "php"]
    r, env = logged(srv, "GET", path + "?x=1")
    assert_forced_download(r, data, status=500)
    assert_download_name(r, path)
    assert env == "fallback", env


@pytest.mark.parametrize("path", ["/prot/err500.php", "/api/reports/err500"])
def test_500_with_a_pdf_and_a_valid_token_and_cookie_is_a_download(srv,
                                                                   path):
    data = srv.files["http" if path.startswith("/api") else "php"]
    token, cookie = minted(srv, path)
    r = srv.get(path + "?pdftoken=" + token, cookies=[cookie])
    assert_forced_download(r, data, status=500)


def test_3xx_without_location_with_a_pdf_is_never_inline(srv):
    """Browsers render the body of a 3xx that has no Location like any
    other answer.  The filter's token step is for 2xx answers only (SPEC
    section 2), so this one is a forced download, its status kept."""
    path = "/api/reports/typed"
    r = srv.get(path + "?ct=application/pdf&st=300")
    assert_forced_download(r, srv.files["http"], status=300)


# --------------------------------------------------------------- POST

@pytest.mark.parametrize("method,path", [
    ("POST", "/prot/invoice.php"), ("POST", "/prot/notype.php"),
    ("POST", "/api/reports/7"), ("POST", "/prot/report.cgi"),
    ("PUT", "/prot/invoice.php"), ("DELETE", "/prot/invoice.php")])
def test_other_methods_answered_with_a_pdf_are_forced_downloads(srv, method,
                                                                path):
    data = srv.files["http" if path.startswith("/api") else "php"]
    r, env = logged(srv, method, path + "?id=3", body=b"a=1&b=2")
    assert_forced_download(r, data, status=200)
    assert_download_name(r, path)
    assert env == "fallback", env


def test_post_with_a_valid_token_and_cookie_is_still_a_download(srv):
    token, cookie = minted(srv, "/prot/invoice.php")
    r = srv.request("POST", "/prot/invoice.php?pdftoken=" + token,
                    cookies=[cookie], body=b"a=1")
    assert_forced_download(r, srv.files["php"], status=200)


# ---------------------------------------------------------------- NPH

def nph_ran(srv, name):
    return (srv.seen_dir / ("nph-%s.log" % name)).exists()


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_nph_script_in_protected_scope_is_refused(srv, method):
    offset = srv.error_log_size()
    r, env = logged(srv, method, "/prot/nph-doc.cgi?x=1",
                    body=b"a=1" if method == "POST" else b"")
    assert r.status == 403, r
    assert b"%PDF" not in r.rest, r
    assert r.get_all("Set-Cookie") == [] and r.get("Location") is None, r
    assert not nph_ran(srv, "prot"), "the NPH script ran"
    log = srv.error_log_since(offset)
    lines = [line for line in log.splitlines()
             if re.search(r"PDFTOKEN\d{5}", line)
             and re.search(r"\bnph\b|non-parsed", line, re.I)]
    assert lines, "no PDFTOKEN line about an NPH script in:\n" + log


def test_nph_script_refused_whatever_it_would_send(srv):
    r = srv.get("/prot/nph-page.cgi")
    assert r.status == 403, r
    assert not nph_ran(srv, "page"), "the NPH script ran"


def test_nph_script_in_unprotected_scope_is_untouched(srv):
    r = srv.get("/open/nph-doc.cgi")
    assert_untouched(r, body=srv.files["php"])
    assert r.get("Content-Type") == "application/pdf", r
    assert nph_ran(srv, "open")


# ------------------------------------------------------------ mod_deflate

GZ = [("Accept-Encoding", "gzip")]


def gunzipped(r):
    """The response body as the browser sees it after Content-Encoding."""
    if (r.get("Content-Encoding") or "").lower() == "gzip":
        assert r.body, r
        r.body = gzip.decompress(r.body)
        r.headers = [(n, v) for n, v in r.headers
                     if n.lower() != "content-encoding"]
        return True
    return False


@pytest.mark.parametrize("path,key", [
    ("/gz/invoice.php", "php"),       # SetOutputFilter DEFLATE
    ("/gz/notype.php", "php"),        # ... with no type: sniffed
    ("/gz/scan", "static"),           # ... a static file without type
    ("/gzapi/reports/7", "http"),     # AddOutputFilterByType, proxied
    ("/gzapi/reports/chunked", "http"),
])
def test_deflate_redirect_is_empty_and_inline_decompresses_to_the_pdf(
        srv, path, key):
    r = srv.get(path + "?id=3", headers=GZ)
    token, cookie = assert_redirect(srv, r, path, query="id=3",
                                    secret=srv.secret)
    r2 = srv.get(r.location_target(), cookies=[cookie], headers=GZ)
    assert gunzipped(r2), "mod_deflate did not compress %r" % r2
    assert_inline(r2, srv.files[key], content_type=None)


@pytest.mark.parametrize("path,key", [("/gz/invoice.php", "php"),
                                      ("/gzapi/reports/7", "http")])
def test_deflate_fallback_is_a_download_of_the_pdf(srv, path, key):
    r = srv.get(path, headers=GZ)
    token, cookie = assert_redirect(srv, r, path)
    r2 = srv.get(r.location_target(), headers=GZ)
    gunzipped(r2)
    assert_attachment(r2, srv.files[key])


@pytest.mark.parametrize("query", ["ct=application/pdf", ""])
def test_pdf_gzipped_by_the_back_end_takes_the_token_step(srv, query):
    """Content-Encoding from the back end itself: the browser decodes it
    and renders the PDF, typed or sniffed."""
    path = "/api/reports/gzipped"
    r = srv.get(path + ("?" + query if query else ""), headers=GZ)
    token, cookie = assert_redirect(srv, r, path, query=query)
    r2 = srv.get(r.location_target(), cookies=[cookie], headers=GZ)
    assert gunzipped(r2), r2
    assert_inline(r2, srv.files["http"], content_type=None)


# ------------------------------------------------ a slow proxied back end

def head_arrival(port, target, limit):
    """Send a GET; return the raw head once it and the Content-Length body
    are in; fails if they are not in within `limit` seconds."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=limit)
    try:
        sock.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     b"Connection: close\r\n\r\n" % (target.encode(), port))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
        want = int(m.group(1)) if m else 0
        while len(rest) < min(want, 1 << 16):
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head
    except socket.timeout:
        raise AssertionError("no complete answer to %s within %d s"
                             % (target, limit))
    finally:
        sock.close()


def test_slow_back_end_is_read_to_its_end_after_the_redirect(srv):
    """The back end sends the start of a 6.5 MiB PDF and holds the rest
    until the test has its 302: the 302 is flushed to the reader while
    the back end is still sending, and httpd then reads it to its end
    (dropping it) instead of cutting it off, so the back end's answer ends
    the same way whatever its size."""
    back = srv.back
    back.slow_done.clear()
    back.slow_aborted.clear()
    back.slow_release.clear()
    try:
        head = head_arrival(srv.port, "/api/reports/slow?x=1", limit=20)
    finally:
        back.slow_release.set()
    assert head.startswith(b"HTTP/1.1 302 "), head
    assert back.slow_done.wait(30), "the back end never finished"
    assert not srv.back.slow_aborted.is_set(), \
        "httpd stopped reading the back end"


# ------------------------------------------------------ PdfTokenDynamic

def test_dynamic_directive_rejects_a_bad_value(pool):
    s = pool.make("badvalue")
    s.configure('<Directory "@DOCROOT@">\n    PdfTokenDynamic sometimes\n'
                '</Directory>\n')
    rc, out = s.configtest()
    assert rc != 0, out
    # The message names the directive and the bad value, not merely an
    # unknown command.
    assert "PdfTokenDynamic" in out and "sometimes" in out, out
    assert "Invalid command" not in out, out


@pytest.mark.parametrize("path", ["/att/invoice.php", "/att/sub/invoice.php",
                                  "/attapi/reports/7"])
def test_dynamic_attachment_makes_a_first_view_a_download(modes, path):
    data = modes.files["http" if "api" in path else "php"]
    r, env = logged(modes, "GET", path + "?id=3")
    assert_attachment(r, data)
    assert_download_name(r, path)
    assert r.get_all("Set-Cookie") == [], r
    assert env == "fallback", env


def test_dynamic_attachment_with_a_valid_token_and_cookie_is_a_download(
        modes):
    token, cookie = minted(modes, "/att/invoice.php")
    r = modes.get("/att/invoice.php?id=3&pdftoken=%s&k=v" % token,
                  cookies=[cookie])
    assert_attachment(r, modes.files["php"])
    # The token is still taken out of the query before the handler.
    assert php_seen(modes)[-1] == "GET id=3&k=v", php_seen(modes)


def test_dynamic_redirect_in_an_inner_scope_overrides_attachment(modes):
    r = modes.get("/att/back/invoice.php?id=3")
    token, cookie = assert_redirect(modes, r, "/att/back/invoice.php",
                                    query="id=3", secret=modes.secret)
    assert_inline(modes.get(r.location_target(), cookies=[cookie]),
                  modes.files["php"])


def test_dynamic_attachment_leaves_static_pdfs_to_the_fixup(modes):
    r = modes.get("/att/doc.pdf")
    token, cookie = assert_redirect(modes, r, "/att/doc.pdf")
    assert_inline(modes.get(r.location_target(), cookies=[cookie]),
                  modes.files["static"])


def test_dynamic_fallback_deny_answers_403_without_cookie(modes):
    r = modes.get("/deny/invoice.php?id=3")
    token, cookie = assert_redirect(modes, r, "/deny/invoice.php",
                                    query="id=3")
    r2, env = logged(modes, "GET", r.location_target())
    assert r2.status == 403, r2
    assert b"%PDF" not in r2.body
    assert env == "deny", env
    assert_inline(modes.get(r.location_target(), cookies=[cookie]),
                  modes.files["php"])
