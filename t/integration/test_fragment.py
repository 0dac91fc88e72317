# Licensed under the Apache License, Version 2.0; see LICENSE.
"""PdfTokenFragment: strip (default) and safe.

In safe mode a navigation that R1/R4 would redirect gets a 200 page that
keeps validated PDF open parameters; every other request keeps the 302.
What the page's script keeps and drops is tested in real browsers
(t/browser); here the HTTP side: who gets the page, its headers, its CSP
hash, its cookie, and that the default is unchanged.
"""

import base64
import hashlib
import re
import time
import urllib.parse

import pytest

import pdftoken_ref as ref
from checks import assert_inline, assert_redirect
from client import query_values

CONFIG = r"""
<Directory "@DOCROOT@/safe">
    PdfTokenProtect On
    PdfTokenFragment safe
</Directory>
<Directory "@DOCROOT@/safe/strip">
    PdfTokenFragment strip
</Directory>
<Directory "@DOCROOT@/default">
    PdfTokenProtect On
</Directory>
"""

NAV = [("Sec-Fetch-Dest", "document"), ("Sec-Fetch-Mode", "navigate"),
       ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")]


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("fragment")
    s.files = {d: s.write_pdf(d + "/doc.pdf", d)
               for d in ("safe", "safe/strip", "default")}
    s.configure(CONFIG)
    s.start()
    return s


def page_parts(r):
    """The tokenized URL and the script of a fragment page."""
    body = r.body.decode("utf-8")
    link = re.search(r'<a id="pdftoken-continue" href="([^"]*)"', body)
    refresh = re.search(r'<noscript><meta http-equiv="refresh" '
                        r'content="0; url=([^"]*)"></noscript>', body)
    script = re.search(r"<script>(.*)</script>", body, re.S)
    assert link and refresh and script, body
    assert body.count("<script") == 1, "one script only: %s" % body
    url = link.group(1).replace("&amp;", "&")
    assert refresh.group(1).replace("&amp;", "&") == url
    return url, script.group(1)


def assert_page(srv, r, path, query=""):
    """A fragment page: 200, the R1 cookie, no-store, CSP by hash."""
    assert r.status == 200, r
    assert r.get("Location") is None, r
    assert r.get("Content-Type") == "text/html; charset=utf-8", r
    assert r.get("X-Content-Type-Options") == "nosniff", r
    assert "no-store" in r.get("Cache-Control"), r
    url, script = page_parts(r)
    token = query_values(url.split("?", 1)[1].split("#")[0], "pdftoken")
    assert len(token) == 1, url
    token = token[0]
    # Relative, so that a reverse proxy in front needs no rewriting.
    assert url == "%s?%s%s#" % (path, query + "&" if query else "",
                                "pdftoken=" + token)
    version, expiry, _, _ = ref.parse(token)
    assert version == ref.VERSION and expiry > time.time()
    assert ref.verifies(srv.secret, token, path)
    cookies = [c for c in r.set_cookies() if c[1] == token]
    assert len(cookies) == 1, r
    name, _, attrs = cookies[0]
    assert name == "pdftoken_" + token[12:20]
    assert ("path", path) in attrs and ("httponly", None) in attrs, attrs
    assert ("samesite", "Lax") in attrs and ("max-age", "10") in attrs
    # The one inline script is allowed by its hash and nothing else runs.
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest())
    csp = r.get("Content-Security-Policy")
    assert csp is not None, r
    directives = dict((d.strip().split(" ", 1) + [""])[:2]
                      for d in csp.split(";"))
    assert directives["default-src"] == "'none'", csp
    assert directives["script-src"] == "'sha256-%s'" % digest.decode(), csp
    assert directives["frame-ancestors"] == "'self'", csp
    assert directives["base-uri"] == "'none'", csp
    return token, "%s=%s" % (name, token)


def test_safe_navigation_gets_the_fragment_page(srv):
    r = srv.get("/safe/doc.pdf", headers=NAV)
    assert_page(srv, r, "/safe/doc.pdf")


def test_safe_page_keeps_other_query_parameters(srv):
    r = srv.get("/safe/doc.pdf?a=1&b=2&pdftoken=stale", headers=NAV)
    assert_page(srv, r, "/safe/doc.pdf", query="a=1&b=2")


def test_safe_page_escapes_the_url_for_html(srv):
    r = srv.get('/safe/doc.pdf?q=%3Cb%3E&x="y"&z=\'w\'', headers=NAV)
    body = r.body.decode()
    # Nothing from the query can open a tag or close the double-quoted
    # attributes the URL stands in; a "'" inside them is harmless.
    assert "<b>" not in body and '"y"' not in body
    assert_page(srv, r, "/safe/doc.pdf", query="q=%3Cb%3E&x=%22y%22&z='w'")


def test_safe_page_token_and_cookie_then_view_inline(srv):
    r = srv.get("/safe/doc.pdf", headers=NAV)
    token, cookie = assert_page(srv, r, "/safe/doc.pdf")
    v = srv.get("/safe/doc.pdf?pdftoken=" + token, cookies=[cookie],
                headers=NAV)
    assert_inline(v, srv.files["safe"])


def test_safe_iframe_navigation_gets_the_page(srv):
    r = srv.get("/safe/doc.pdf", headers=[("Sec-Fetch-Dest", "iframe"),
                                          ("Accept", "text/html")])
    assert_page(srv, r, "/safe/doc.pdf")


def test_safe_without_sec_fetch_accept_html_gets_the_page(srv):
    r = srv.get("/safe/doc.pdf", headers=[("Accept", "text/html")])
    assert_page(srv, r, "/safe/doc.pdf")


def test_safe_expired_token_navigation_heals_through_the_page(srv):
    stale = ref.mint(srv.secret, "/safe/doc.pdf", int(time.time()) - 5)
    r = srv.get("/safe/doc.pdf?pdftoken=" + stale, headers=NAV)
    token, _ = assert_page(srv, r, "/safe/doc.pdf")
    assert token != stale and stale not in r.body.decode()


@pytest.mark.parametrize("headers", [
    [("Sec-Fetch-Dest", "embed"), ("Accept", "text/html,*/*")],
    [("Sec-Fetch-Dest", "object"), ("Accept", "text/html")],
    [("Sec-Fetch-Dest", "empty"), ("Accept", "text/html")],
    [("Accept", "application/pdf")],
    [],
], ids=["embed", "object", "fetch", "accept-pdf", "no-headers"])
def test_safe_non_navigation_keeps_the_302(srv, headers):
    r = srv.get("/safe/doc.pdf", headers=headers)
    assert_redirect(srv, r, "/safe/doc.pdf", secret=srv.secret)
    assert r.get("Content-Security-Policy") is None


def test_safe_head_keeps_the_302(srv):
    r = srv.head("/safe/doc.pdf", headers=NAV)
    assert_redirect(srv, r, "/safe/doc.pdf", secret=srv.secret)


def test_safe_range_without_token_keeps_the_302(srv):
    r = srv.get("/safe/doc.pdf", headers=NAV + [("Range", "bytes=0-9")])
    assert_redirect(srv, r, "/safe/doc.pdf", secret=srv.secret)


def test_safe_inner_scope_strip_overrides(srv):
    r = srv.get("/safe/strip/doc.pdf", headers=NAV)
    assert_redirect(srv, r, "/safe/strip/doc.pdf", secret=srv.secret)


def test_default_is_strip_even_for_navigations(srv):
    r = srv.get("/default/doc.pdf", headers=NAV)
    assert_redirect(srv, r, "/default/doc.pdf", secret=srv.secret)


def test_safe_page_is_logged_as_redirect(srv):
    r = srv.get("/safe/doc.pdf", headers=NAV + [("X-Test-Id", "fragpage")])
    assert r.status == 200
    status, decision = srv.access_log_entry("fragpage")
    assert (status, decision) == ("200", "redirect")


def test_sethandler_without_the_fixup_serves_nothing_of_ours(pool):
    s = pool.make("fragment-sethandler")
    s.write("h/x.txt", b"plain text\n")
    s.configure('<Directory "@DOCROOT@/h">\n'
                '    SetHandler pdftoken-fragment-page\n</Directory>\n')
    s.start()
    r = s.get("/h/x.txt")
    assert r.status == 200 and r.body == b"plain text\n", r
    assert r.get("Content-Security-Policy") is None


NETWORK_PATH_CONFIG = r"""
MergeSlashes Off
AllowEncodedSlashes On
<Directory "@DOCROOT@">
    PdfTokenProtect On
    PdfTokenFragment safe
</Directory>
"""


@pytest.mark.parametrize("target", ["/%2Fevil.example/x.pdf",
                                    "//evil.example/x.pdf"])
def test_path_that_looks_like_another_host_stays_on_this_one(fresh_pool,
                                                            target):
    # SPEC section 6: with MergeSlashes Off the decoded path can begin with
    # "//"; a relative link "//evil.example/x.pdf?..." would be a
    # network-path reference that Chromium follows to evil.example.  The
    # page's link (and refresh) resolve on this server, to the same path,
    # and the Location is absolute.
    s = fresh_pool.make("netpath")
    s.write_pdf("evil.example/x.pdf", "netpath")
    s.configure(NETWORK_PATH_CONFIG)
    s.start()
    origin = s.url("")
    r = s.get(target, headers=NAV)
    assert r.status == 200, r
    url, _ = page_parts(r)
    assert not url.startswith("//"), url
    resolved = urllib.parse.urljoin(origin + target, url)
    assert resolved.startswith(origin + "/"), (url, resolved)
    # The browser's next request names the path the token is bound to.
    token = url.split("pdftoken=")[1].rstrip("#")
    path = urllib.parse.unquote(urllib.parse.urlsplit(resolved).path)
    assert path.endswith("evil.example/x.pdf"), resolved
    assert ref.verifies(s.secret, token, path), (path, url)
    r = s.get(target)
    assert r.status == 302, r
    assert r.get("Location").startswith(origin + "/"), r
