# Licensed under the Apache License, Version 2.0; see LICENSE.
"""mod_cache in front of the module: nothing tokenized is ever served from
the cache.

A bare server with mod_cache_disk: CacheIgnoreQueryString On makes every
tokenized URL share the cache key of the bare URL, and CacheQuickHandler
(the default) answers from the cache before any fixup runs; mod_expires
makes every response cacheable unless something forbids it (Cache-Control:
private / no-store): an inline view is never served to a request without
a token, nor a download, a range or a 302 replayed.

The five sites of neighbours.py (disk and socache, CacheQuickHandler On
and Off, CacheIgnoreQueryString On and Off, ModSecurity, mod_deflate and a
site policy of `Cache-Control: public` around them): mod_cache never
answers a request with a tokenized inline PDF, never with the PDF a first
view was redirected away from, never with a 302.
"""

import os
import pwd
import secrets
import time

import pytest

import pdftoken_ref as ref
from checks import (assert_attachment, assert_inline, assert_redirect,
                    cache_directives)
from neighbours import (VARIANTS, assert_no_pdf, assert_site_redirect,
                        first_view, make_site, ran, send)

DOC = "/prot/doc.pdf"
CONFIG = r"""
CacheRoot "@ROOT@/cache"
CacheEnable disk /
CacheIgnoreQueryString On
CacheHeader On
CacheDirLevels 1
CacheDirLength 2
ExpiresActive On
ExpiresDefault "access plus 1 hour"
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("cache", modules=["cache", "cache_disk", "expires"])
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "cached?"),
               "open": s.write_pdf("open/doc.pdf", "open")}
    cache = s.root / "cache"
    cache.mkdir()
    if os.geteuid() == 0:
        www = pwd.getpwnam("www-data")
        os.chown(cache, www.pw_uid, www.pw_gid)
    s.configure(CONFIG)
    s.start()
    return s


def test_cache_setup_caches_an_unprotected_pdf(srv):
    # Sanity: without the module's headers this configuration does cache.
    first = srv.get("/open/doc.pdf?x=1")
    assert first.status == 200
    second = srv.get("/open/doc.pdf")
    assert second.status == 200 and second.body == srv.files["open"]
    assert "HIT" in (second.get("X-Cache") or ""), second


def test_cache_does_not_serve_inline_view_to_request_without_token(srv):
    r = srv.view(DOC)
    assert_inline(r, srv.files["doc"])
    for _ in range(3):
        assert_redirect(srv, srv.get(DOC), DOC, secret=srv.secret)


def test_cache_does_not_serve_inline_view_to_token_without_cookie(srv):
    assert_inline(srv.view(DOC), srv.files["doc"])
    token, _ = assert_redirect(srv, srv.get(DOC), DOC)
    assert_attachment(srv.get(DOC + "?pdftoken=" + token), srv.files["doc"],
                      filename="doc.pdf")


def test_cache_does_not_serve_attachment_to_request_without_token(srv):
    token, _ = assert_redirect(srv, srv.get(DOC), DOC)
    assert_attachment(srv.get(DOC + "?pdftoken=" + token), srv.files["doc"])
    assert_redirect(srv, srv.get(DOC), DOC, secret=srv.secret)


def test_cache_does_not_replay_a_redirect(srv):
    t1, _ = assert_redirect(srv, srv.get(DOC), DOC)
    t2, _ = assert_redirect(srv, srv.get(DOC), DOC)
    assert t1 != t2


def test_cache_does_not_serve_range_continuation_to_plain_request(srv):
    token = ref.mint_waf_inert(srv.secret, DOC, lifetime=30)
    r = srv.get(DOC + "?pdftoken=" + token, headers=[("Range", "bytes=0-9")])
    assert r.status == 206
    assert_redirect(srv, srv.get(DOC), DOC, secret=srv.secret)


def test_cache_no_inline_hit_after_many_views(srv):
    for _ in range(3):
        assert_inline(srv.view(DOC), srv.files["doc"])
    r = srv.get(DOC)
    assert r.status == 302, r
    assert "HIT" not in (r.get("X-Cache") or "")


# --------------------------------------------- among the module's neighbours

@pytest.fixture(scope="module", params=VARIANTS,
                ids=[v.name for v in VARIANTS])
def site(pool, request):
    return make_site(pool, request.param)


def test_cache_is_live_in_this_server(site):
    """The unprotected twins of the PDFs are stored and served from the
    cache, so the tests below can see a stored answer when there is one."""
    for target in ("/open/doc.pdf", "/open/report.cgi?x=1"):
        send(site, target)
        r, decision = send(site, target)
        assert r.status == 200 and decision == "-", r
        assert "HIT" in (r.get("X-Cache") or ""), r


def _views_of_every_kind(site, path, query=""):
    """Every answer the module gives for path: R1, R2, R3, R5, HEAD."""
    r, token, cookie = first_view(site, path, query=query)
    send(site, r.location_target(), cookies=[cookie])
    send(site, r.location_target(), cookies=[cookie], method="HEAD")
    send(site, r.location_target())
    send(site, r.location_target(), headers=[("Range", "bytes=0-99"),
                                             ("Accept-Encoding", "identity")])
    return r.location_target()


@pytest.mark.parametrize("path,key", [("/prot/doc.pdf", "doc"),
                                      ("/prot/report.cgi", "cgi"),
                                      ("/prot/scan", "scan")])
def test_cache_never_serves_a_token_step_answer(site, path, key):
    """After views of every kind (twice, so that anything stored would be
    served): a request without a token gets a fresh 302, never a stored
    PDF or a stored 302; the tokenized URL without its cookie gets the
    download, never a stored inline answer."""
    data = site.files[key]
    for _ in range(2):
        tokenized = _views_of_every_kind(site, path)
    seen = set()
    for _ in range(2):
        r, decision = send(site, path)
        assert "HIT" not in (r.get("X-Cache") or ""), r
        assert_no_pdf(r)
        token, _ = assert_site_redirect(site, r, path, "")
        assert token not in seen, "a stored 302 came back"
        seen.add(token)
    for _ in range(2):
        r, decision = send(site, tokenized)
        assert "HIT" not in (r.get("X-Cache") or ""), r
        assert decision == "fallback", (decision, r)
        assert_attachment(r, data)


def test_cache_never_keeps_what_a_first_view_was_redirected_from(site):
    """A first view runs the CGI; its PDF is thrown away for the 302 and
    must not be stored either (the next reader would get it inline)."""
    path = "/prot/report.cgi"
    q = "first=" + secrets.token_hex(4)
    for _ in range(3):
        r, decision = send(site, path + "?" + q)
        assert decision == "redirect", (decision, r)
        assert "HIT" not in (r.get("X-Cache") or ""), r
        assert_site_redirect(site, r, path, q)
    assert len([x for x in ran(site, "prot-report.cgi.log") if q in x]) == 3


# ------------------------------------ stored before protection was turned on

# What mod_cache stored while the scope was not protected yet is still
# there after PdfTokenProtect On and a restart, and mod_cache serves it by
# taking out every filter ahead of its own: in its quick handler, before
# any fixup, or as the handler, after the fixup's verdict.  Judged like a
# handler's answer.
LATE = r"""
CacheRoot "@ROOT@/cache"
CacheEnable disk /
CacheQuickHandler @QUICK@
CacheIgnoreQueryString @IGNORE@
@PLACED@
CacheHeader On
CacheDirLevels 1
CacheDirLength 2
ExpiresActive On
ExpiresDefault "access plus 1 hour"
<Directory "@DOCROOT@/late">
    PdfTokenProtect @PROTECT@
</Directory>
"""
LATE_DOC = "/late/doc.pdf"
LATE_PAGE = b"<p>stored before protection</p>\n"


# (CacheQuickHandler, CacheIgnoreQueryString, the CACHE filter placed by
# hand), by name.
LATE_VARIANTS = {
    "quick-query-keyed": ("On", "Off", False),
    "quick-query-ignored": ("On", "On", False),
    "handler-query-keyed": ("Off", "Off", False),
    "handler-query-ignored": ("Off", "On", False),
    "handler-placed-query-ignored": ("Off", "On", True),
}


@pytest.fixture(scope="module", params=sorted(LATE_VARIANTS))
def late(pool, request):
    """A server whose cache stored /late's PDF, page and untyped PDF
    while unprotected, then restarted (gracefully) with the scope
    protected."""
    quick, ignore, placed = LATE_VARIANTS[request.param]
    s = pool.make("cache-late-" + request.param,
                  modules=["cache", "cache_disk", "expires"])
    s.files = {"doc": s.write_pdf("late/doc.pdf", "stored early"),
               "scan": s.write_pdf("late/scan", "untyped, stored early"),
               "space": s.write_pdf("late/my doc.pdf", "escaped, early"),
               "open": s.write_pdf("open/doc.pdf", "never protected")}
    s.write("late/page.html", LATE_PAGE)
    # A month old: fresh for a day by mod_cache's own heuristic, even
    # where the hand-placed CACHE filter stores before mod_expires adds.
    month_ago = time.time() - 30 * 86400
    for f in s.docroot.rglob("*"):
        os.utime(f, (month_ago, month_ago))
    cache = s.root / "cache"
    cache.mkdir()
    if os.geteuid() == 0:
        www = pwd.getpwnam("www-data")
        os.chown(cache, www.pw_uid, www.pw_gid)
    config = (LATE.replace("@QUICK@", quick).replace("@IGNORE@", ignore)
              .replace("@PLACED@", "SetOutputFilter CACHE" if placed else ""))
    s.configure(config.replace("@PROTECT@", "Off"))
    s.start()
    s.stored = {}
    for target in (LATE_DOC, "/late/scan", "/late/my%20doc.pdf",
                   "/late/page.html", "/open/doc.pdf"):
        s.get(target)
        r = s.get(target)
        assert r.status == 200 and "HIT" in (r.get("X-Cache") or ""), r
        s.stored[target] = r
    s.configure(config.replace("@PROTECT@", "On"))
    s.restart(graceful=True)
    return s


@pytest.mark.parametrize("target,key", [(LATE_DOC, "doc"),
                                        ("/late/scan", "scan"),
                                        ("/late/my%20doc.pdf", "space")])
def test_cache_stored_before_protection_gets_the_token_step(late, target,
                                                             key):
    """The stored PDF (typed, and untyped with %PDF-) is not served as it
    was: a 302 with a fresh token, then inline with its cookie, the
    download without it; never a loop."""
    data = late.files[key]
    for method in ("GET", "HEAD"):
        r = late.request(method, target)
        assert r.status == 302, r
        assert b"%PDF" not in r.raw, r
    token, cookie = assert_redirect(late, late.get(target), target,
                                    secret=late.secret)
    tokenized = "%s?pdftoken=%s" % (target, token)
    link = ['<%s>; rel="canonical"' % late.url(target)]
    r = late.get(tokenized, cookies=[cookie])
    assert_inline(r, data, content_type=None)
    assert {"private", "no-store"} <= cache_directives(r), r
    assert r.get_all("Link") == link, r
    r = late.get(tokenized)
    assert_attachment(r, data)
    assert r.get_all("Link") == link, r
    r = late.get(tokenized, headers=[("Range", "bytes=0-9")])
    assert r.status == 206 and r.body == data[:10], r


@pytest.mark.parametrize("target", ["/late/page.html", "/open/doc.pdf"])
def test_cache_stored_answer_not_protected_is_served_as_stored(late,
                                                              target):
    """A stored page of the protected scope, and a stored PDF of a scope
    that is not protected, are still hits, as they were before."""
    r = late.get(target)
    before = late.stored[target]
    assert r.status == 200 and r.body == before.body, r
    assert "HIT" in (r.get("X-Cache") or ""), r
    # (Not Expires: with the CACHE filter placed by hand mod_expires adds
    # it to every hit, "access plus 1 hour".)
    for name in ("Content-Type", "ETag", "Last-Modified", "Cache-Control",
                 "Content-Length"):
        assert r.get(name) == before.get(name), name
    assert r.get("Link") is None and r.get("Set-Cookie") is None, r
