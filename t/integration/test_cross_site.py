# Licensed under the Apache License, Version 2.0; see LICENSE.
"""PdfTokenCrossSite (SPEC sections 4 and 5, issue 22): with On, over
HTTPS, the module's cookie is `SameSite=None; Partitioned`, so that a
partner site's frame sends it back; expiries carry the same attributes
(a partitioned cookie is replaced only by a partitioned one).  Off, and
On over plain HTTP, change nothing, byte for byte.  Engines that ignore
the __Host- prefix (WebKitGTK's libsoup jar, which was measured to ignore
Partitioned as well) keep SameSite=Lax, and another site's frame gets
their readers the fallback at once, without a token or a cookie, On or
Off (PDFTOKEN00022).  What browsers do with it is
measured in t/browser (the x cases)."""

import re

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline
from test_bind import WEBKITGTK, bound

CONFIG = r"""
<Directory "@DOCROOT@/on">
    PdfTokenProtect On
    PdfTokenCrossSite On
</Directory>
<Directory "@DOCROOT@/on/off">
    PdfTokenCrossSite Off
</Directory>
<Directory "@DOCROOT@/on/inherit">
    PdfTokenTimeout 30
</Directory>
<Directory "@DOCROOT@/off">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/offset">
    PdfTokenProtect On
    PdfTokenCrossSite Off
</Directory>
<Directory "@DOCROOT@/safe">
    PdfTokenProtect On
    PdfTokenCrossSite On
    PdfTokenFragment safe
</Directory>
<Directory "@DOCROOT@/safeoff">
    PdfTokenProtect On
    PdfTokenFragment safe
</Directory>
<Directory "@DOCROOT@/ht">
    AllowOverride FileInfo
</Directory>
<Directory "@DOCROOT@/on/dyn">
    AddHandler send-as-is .asis
</Directory>
<Directory "@DOCROOT@/on/deny">
    PdfTokenFallback deny
</Directory>
"""

DIRS = ("on", "on/off", "on/inherit", "off", "offset", "safe", "safeoff",
        "ht", "on/deny")

# What follows the cookie's value, exactly as SPEC section 4 writes it.
CROSS = "; Path=/; Max-Age=%d; Secure; HttpOnly; SameSite=None; Partitioned"
LAX_HTTPS = "; Path=/; Max-Age=%d; HttpOnly; SameSite=Lax; Secure"
LAX_HTTP = "; Path=%s; Max-Age=%d; HttpOnly; SameSite=Lax"

NAV = [("Sec-Fetch-Dest", "iframe"), ("Sec-Fetch-Mode", "navigate"),
       ("Sec-Fetch-Site", "cross-site"), ("Accept", "text/html")]


def make(pool, name, tls):
    s = pool.make(name, tls=tls, modules=["asis"])
    s.doc = s.write_pdf("on/doc.pdf", "cross " + name)
    for d in DIRS[1:]:
        s.write("%s/doc.pdf" % d, s.doc)
    s.write("ht/.htaccess", "PdfTokenProtect On\nPdfTokenCrossSite On\n")
    s.write("on/dyn/made.asis", b"Status: 200 OK\nContent-Type: "
            b"application/pdf\n\n" + s.doc)
    s.configure(CONFIG)
    s.start()
    return s


@pytest.fixture(scope="module")
def tls(pool):
    return make(pool, "cross-tls", tls=True)


@pytest.fixture(scope="module")
def plain(pool):
    return make(pool, "cross-plain", tls=False)


def set_cookie(r):
    """The one Set-Cookie of a first view: (name, token, the rest)."""
    assert r.status == 302, r
    token = r.location_token()
    [raw] = r.get_all("Set-Cookie")
    m = re.fullmatch(r"([^=;]+)=([^;]*)(;.*)", raw)
    assert m, raw
    assert m.group(2) == token, raw
    return m.group(1), token, m.group(3)


@pytest.mark.parametrize("d", ["on", "on/inherit", "ht"])
def test_on_over_https_is_partitioned_and_cross_site(tls, d):
    name, token, rest = set_cookie(tls.get("/%s/doc.pdf" % d))
    assert name == ref.cookie_name(token, secure=True), name
    timeout = 30 if d == "on/inherit" else 10
    assert rest == CROSS % timeout, rest
    assert ref.verifies(tls.secret, token, "/%s/doc.pdf" % d)


@pytest.mark.parametrize("d", ["off", "offset", "on/off"])
def test_off_over_https_keeps_lax(tls, d):
    name, token, rest = set_cookie(tls.get("/%s/doc.pdf" % d))
    assert name == ref.cookie_name(token, secure=True), name
    assert rest == LAX_HTTPS % 10, rest


@pytest.mark.parametrize("d", ["on", "off", "on/off", "ht"])
def test_on_over_http_changes_nothing(plain, d):
    path = "/%s/doc.pdf" % d
    name, token, rest = set_cookie(plain.get(path))
    assert name == ref.cookie_name(token), name
    assert rest == LAX_HTTP % (path, 10), rest


def test_on_follow_up_with_the_cookie_is_inline(tls):
    r = tls.get("/on/doc.pdf")
    name, token, _ = set_cookie(r)
    assert r.get("Location").endswith("pdftoken=%s#" % token), r
    assert_inline(tls.get(r.location_target(),
                          cookies=["%s=%s" % (name, token)]), tls.doc)


def test_on_follow_up_without_the_cookie_is_the_fallback(tls):
    # A partner frame whose browser keeps no third-party cookie, or a
    # tokenized URL framed by a site that is not the reader's.
    r = tls.get("/on/doc.pdf")
    _, token, _ = set_cookie(r)
    assert_attachment(tls.get(r.location_target()), tls.doc,
                      filename="doc.pdf")


def test_on_a_cookie_without_the_host_prefix_is_refused(tls):
    r = tls.get("/on/doc.pdf")
    _, token, _ = set_cookie(r)
    assert_attachment(tls.get(r.location_target(),
                              cookies=[ref.cookie_pair(token)]),
                      tls.doc, filename="doc.pdf")


def test_on_an_expired_token_gets_a_partitioned_cookie(tls):
    # R4 mints like R1.
    path = "/on/doc.pdf"
    old = ref.mint(tls.secret, path, expiry=1)
    r = tls.get(path + "?pdftoken=" + old,
                cookies=[ref.cookie_pair(old, secure=True)])
    _, token, rest = set_cookie(r)
    assert token != old and rest == CROSS % 10, rest


def test_on_the_output_filters_redirect_is_partitioned_too(tls):
    # A PDF that a handler makes is judged after it (SPEC section 2): its
    # 302 mints through the same code as the fixup's.
    r = tls.get("/on/dyn/made.asis")
    _, token, rest = set_cookie(r)
    assert rest == CROSS % 10, rest
    assert_inline(tls.get(r.location_target(), cookies=[
        ref.cookie_pair(token, secure=True)]), tls.doc)


def test_on_webkitgtk_keeps_lax(tls):
    # libsoup's jar ignores Partitioned when it takes third-party cookies:
    # a partner frame's cookie would be sent at top level.  Its tokens are
    # also bound to the address (PdfTokenBindAddress auto).
    r = tls.get("/on/doc.pdf", headers=[("User-Agent", WEBKITGTK)])
    name, token, rest = set_cookie(r)
    assert rest == LAX_HTTPS % 10, rest
    assert not ref.verifies(tls.secret, token, "/on/doc.pdf")
    assert ref.verifies(tls.secret, token, bound("/on/doc.pdf",
                                                 "127.0.0.1"))


@pytest.mark.parametrize("d, attributes", [
    ("on", "Secure; HttpOnly; SameSite=None; Partitioned"),
    ("off", "HttpOnly; SameSite=Lax; Secure"),
], ids=["on-partitioned", "off-unchanged"])
def test_expiries_of_surplus_cookies_carry_the_cookies_attributes(
        tls, d, attributes):
    # A partitioned cookie is replaced only by a partitioned one.
    path = "/%s/doc.pdf" % d
    old = [ref.mint(tls.secret, path) for _ in range(9)]
    r = tls.get(path, cookies=[ref.cookie_pair(t, secure=True) for t in old])
    assert r.status == 302, r
    expired = [v for v in r.get_all("Set-Cookie") if "Max-Age=0" in v]
    assert len(expired) == 2, r
    for v in expired:
        assert v.endswith("=; Path=/; Max-Age=0; " + attributes), v


def frame_ancestors(r):
    assert r.status == 200, r
    csp = r.get("Content-Security-Policy")
    assert csp and "script-src 'sha256-" in csp, r
    return [d.strip() for d in csp.split(";")
            if d.strip().startswith("frame-ancestors")]


def test_on_the_fragment_page_may_be_framed_by_other_sites(tls):
    # A partner's frame is a navigation: it gets the page, which must not
    # refuse to be framed, and the page's own cookie is partitioned.
    r = tls.get("/safe/doc.pdf", headers=NAV)
    assert frame_ancestors(r) == [], r
    [raw] = r.get_all("Set-Cookie")
    assert raw.endswith(CROSS % 10), raw


def test_off_the_fragment_page_is_framed_by_this_site_only(tls):
    r = tls.get("/safeoff/doc.pdf", headers=NAV)
    assert frame_ancestors(r) == ["frame-ancestors 'self'"], r


def test_on_over_http_the_fragment_page_is_unchanged(plain):
    r = plain.get("/safe/doc.pdf", headers=NAV)
    assert frame_ancestors(r) == ["frame-ancestors 'self'"], r


# --- WebKitGTK in another site's frame (PDFTOKEN00022) ----------------------
#
# libsoup accepting all cookies stored the Lax cookie of the redirect a
# partner's iframe received and sent it at top level (t/browser x6): such a
# frame gets R3 at once, so no cookie is ever set there.  The frame itself
# got the download before as well (a cross-site frame sends no Lax cookie).


def webkit_frame(dest, site="cross-site", test_id=None):
    h = [("User-Agent", WEBKITGTK), ("Sec-Fetch-Site", site),
         ("Sec-Fetch-Dest", dest), ("Sec-Fetch-Mode", "navigate")]
    return h + ([("X-Test-Id", test_id)] if test_id else [])


@pytest.mark.parametrize("server", ["tls", "plain"])
@pytest.mark.parametrize("d", ["on", "off", "safe"])
@pytest.mark.parametrize("dest", ["iframe", "embed", "object", "frame"])
def test_webkitgtk_in_another_sites_frame_gets_the_fallback_at_once(
        request, server, d, dest):
    srv = request.getfixturevalue(server)
    tid = "wk-%s-%s-%s" % (server, d, dest)
    at = srv.error_log_size()
    r = srv.get("/%s/doc.pdf" % d, headers=webkit_frame(dest, test_id=tid))
    assert_attachment(r, srv.doc, filename="doc.pdf")
    assert r.get_all("Set-Cookie") == [], r
    assert srv.access_log_entry(tid) == ("200", "fallback")
    assert ("PDFTOKEN00022: /%s/doc.pdf: another site's frame in an engine "
            "that keeps no cookie for it: download" % d) \
        in srv.error_log_since(at)


def test_webkitgtk_in_another_sites_frame_with_an_old_token(tls):
    # R4 as R1: an expired or foreign token does not mint either.
    r = tls.get("/on/doc.pdf?pdftoken=" + ref.mint(tls.secret, "/other.pdf"),
                headers=webkit_frame("iframe"))
    assert_attachment(r, tls.doc, filename="doc.pdf")
    assert r.get_all("Set-Cookie") == [], r


def test_webkitgtk_in_another_sites_frame_under_deny(tls):
    r = tls.get("/on/deny/doc.pdf", headers=webkit_frame("iframe"))
    assert r.status == 403 and r.get_all("Set-Cookie") == [], r


def test_webkitgtk_in_another_sites_frame_of_a_handlers_pdf(tls):
    r = tls.get("/on/dyn/made.asis", headers=webkit_frame("iframe"))
    assert_attachment(r, tls.doc)
    assert r.get_all("Set-Cookie") == [], r


@pytest.mark.parametrize("headers", [
    webkit_frame("iframe", site="same-site"),
    webkit_frame("iframe", site="same-origin"),
    webkit_frame("document"),
    webkit_frame("empty"),
    [("User-Agent", WEBKITGTK)],
    [h for h in webkit_frame("iframe") if h[0] != "User-Agent"],
    [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
                    "(KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")]
    + webkit_frame("iframe")[1:],
], ids=["same-site", "same-origin", "top-level", "fetch", "no-metadata",
        "no-user-agent", "chromium"])
def test_every_other_frame_or_engine_gets_the_redirect(tls, headers):
    name, token, rest = set_cookie(tls.get("/off/doc.pdf", headers=headers))
    assert rest == LAX_HTTPS % 10, rest
