# Licensed under the Apache License, Version 2.0; see LICENSE.
r"""What the module adds, it adds once per request (issue 19 item 5).

An internal redirect runs the fixup (and the output filter) a second time
for one browser request: a per-directory `RewriteRule ^old\.pdf$ a.pdf`, an
ErrorDocument that answers with a PDF, a rewrite to a CGI script.  The
headers the module sets go into r->err_headers_out, which the redirected
request inherits, so a module that adds them again sends them twice
(measured on main: the canonical Link twice, `Cache-Control: private,
private`).  The answer must carry, whatever the path to it:

    R1   one Set-Cookie, one `Cache-Control: no-store`, one Location;
    R2   one canonical Link, `Cache-Control: private, no-store` once,
         one Referrer-Policy;
    R3   one canonical Link, `Cache-Control: private` once, one
         Content-Disposition, Content-Type and X-Content-Type-Options;
    R5   one canonical Link, one Cache-Control;
    an error document: one of each attachment header, no cookie.

Plain mapping (which URL is a PDF after a rewrite) is in test_mapping.py;
error statuses in test_dynamic_edge.py.
"""

import pytest

import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_forced_download,
                    assert_inline, assert_redirect)

CONFIG = r"""
<Directory "@DOCROOT@/rw">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
    RewriteEngine On
    RewriteRule "^old\.pdf$" "a.pdf"
    RewriteRule "^older\.pdf$" "old.pdf"
    RewriteRule "^oldgen$" "gen.cgi"
    ErrorDocument 404 /errors/404.pdf
</Directory>
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
    RewriteEngine On
    RewriteRule "^old\.pdf$" "a.pdf"
    ErrorDocument 403 /errors/403.pdf
</Directory>
<Directory "@DOCROOT@/errors">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/cgierr">
    PdfTokenProtect On
    ErrorDocument 404 /errors/gen.cgi
</Directory>
<Directory "@DOCROOT@/errors">
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
"""

CGI = r"""#!/usr/bin/python3
import sys
data = open(%r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

# Headers the module sets, none of which may appear twice in one answer.
ADDED = ("Link", "Cache-Control", "Referrer-Policy", "Location",
         "Content-Disposition", "Content-Type", "X-Content-Type-Options",
         "Expires", "Vary")


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("once", modules=["rewrite", httpd.cgi_module()])
    f = s.files = {}
    f["a"] = s.write_pdf("rw/a.pdf", "rewritten to")
    f["deny"] = s.write_pdf("deny/a.pdf", "deny")
    f["404"] = s.write_pdf("errors/404.pdf", "not found")
    f["403"] = s.write_pdf("errors/403.pdf", "forbidden")
    f["gen"] = s.write_pdf("data/gen.pdf", "generated", base=s.root)
    cgi = CGI % str(s.root / "data" / "gen.pdf")
    s.write("rw/gen.cgi", cgi, mode=0o755)
    s.write("errors/gen.cgi", cgi, mode=0o755)
    s.write("cgierr/page.html", "<p>x</p>\n")
    s.configure(CONFIG)
    s.start()
    return s


def assert_once(r):
    """No header the module sets appears twice, and no Cache-Control
    directive is repeated; one Set-Cookie per cookie name."""
    for name in ADDED:
        values = r.get_all(name)
        assert len(values) <= 1, "%s %d times: %r\n%r" % (
            name, len(values), values, r)
    for value in r.get_all("Cache-Control"):
        directives = [d.strip().lower() for d in value.split(",")]
        assert len(directives) == len(set(directives)), \
            "Cache-Control repeats a directive: %r" % value
    names = [c[0] for c in r.set_cookies()]
    assert len(names) == len(set(names)), "a cookie twice: %r" % names


def canonical(srv, clean):
    return ['<%s>; rel="canonical"' % srv.url(clean)]


# Each way to a.pdf through an internal redirect: (URL path, key).
REWRITES = [("/rw/old.pdf", "a"), ("/rw/older.pdf", "a"),
            ("/rw/oldgen", "gen")]
REWRITE_IDS = ["rewrite", "rewrite-twice", "rewrite-to-cgi"]


@pytest.mark.parametrize("path,key", REWRITES, ids=REWRITE_IDS)
def test_r1_after_an_internal_redirect_sets_one_cookie(srv, path, key):
    r = srv.get(path + "?q=1")
    assert_redirect(srv, r, path, query="q=1", secret=srv.secret)
    assert_once(r)
    assert r.get_all("Cache-Control") == ["no-store"], r


@pytest.mark.parametrize("path,key", REWRITES, ids=REWRITE_IDS)
def test_r2_after_an_internal_redirect_adds_each_header_once(srv, path,
                                                             key):
    r1, token, cookie = srv.first_visit(path + "?q=1")
    r = srv.get(r1.location_target(), cookies=[cookie])
    assert_inline(r, srv.files[key])
    assert_once(r)
    assert r.get_all("Link") == canonical(srv, path + "?q=1"), r
    assert r.get_all("Cache-Control") == ["private, no-store"], r
    assert r.get_all("Referrer-Policy") == ["same-origin"], r
    assert r.get_all("Set-Cookie") == [], r


@pytest.mark.parametrize("path,key", REWRITES[:2], ids=REWRITE_IDS[:2])
def test_r2_head_after_an_internal_redirect_adds_each_header_once(
        srv, path, key):
    r1, token, cookie = srv.first_visit(path)
    r = srv.head(r1.location_target(), cookies=[cookie])
    assert_inline(r, b"")
    assert_once(r)
    assert r.get_all("Link") == canonical(srv, path), r
    assert r.get_all("Cache-Control") == ["private, no-store"], r


@pytest.mark.parametrize("path,key", REWRITES, ids=REWRITE_IDS)
def test_r3_after_an_internal_redirect_adds_each_header_once(srv, path,
                                                             key):
    r1, token, cookie = srv.first_visit(path + "?q=1")
    r = srv.get(r1.location_target())
    assert_attachment(r, srv.files[key])
    assert_once(r)
    assert r.get_all("Link") == canonical(srv, path + "?q=1"), r
    assert r.get_all("Cache-Control") == ["private"], r
    assert r.get_all("X-Content-Type-Options") == ["nosniff"], r
    assert r.get_all("Set-Cookie") == [], r


@pytest.mark.parametrize("path,key", REWRITES[:2], ids=REWRITE_IDS[:2])
def test_r5_after_an_internal_redirect_adds_each_header_once(srv, path,
                                                             key):
    r1, token, cookie = srv.first_visit(path)
    r = srv.get(r1.location_target(), headers=[("Range", "bytes=0-99")])
    assert r.status == 206, r
    assert r.body == srv.files[key][:100]
    assert_once(r)
    assert r.get_all("Link") == canonical(srv, path), r


def test_r3_deny_with_a_pdf_error_document_adds_each_header_once(srv):
    """R3 with PdfTokenFallback deny after a rewrite: the 403's error
    document is a PDF in a protected scope, a forced download."""
    path = "/deny/old.pdf"
    r1, token, cookie = srv.first_visit(path)
    r = srv.get(r1.location_target())
    assert_forced_download(r, srv.files["403"], status=403)
    assert_once(r)
    assert len(r.get_all("Content-Disposition")) == 1, r


@pytest.mark.parametrize("query", ["", "?pdftoken=valid"],
                         ids=["no-token", "token-and-cookie"])
@pytest.mark.parametrize("path", ["/rw/missing.pdf", "/rw/missing"])
def test_pdf_error_document_adds_each_header_once(srv, path, query):
    cookies = None
    if query:
        token = ref.mint(srv.secret, path, lifetime=30)
        query, cookies = "?pdftoken=" + token, [ref.cookie_pair(token)]
    r = srv.get(path + query, cookies=cookies)
    assert_forced_download(r, srv.files["404"], status=404)
    assert_once(r)
    assert r.get_all("X-Content-Type-Options") == ["nosniff"], r


def test_cgi_error_document_making_a_pdf_adds_each_header_once(srv):
    r = srv.get("/cgierr/missing")
    assert_forced_download(r, srv.files["gen"], status=404)
    assert_once(r)
