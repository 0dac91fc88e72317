# Licensed under the Apache License, Version 2.0; see LICENSE.
"""mod_cache in front of the module: nothing tokenized is ever served from
the cache.

A bare server with mod_cache_disk: CacheIgnoreQueryString On makes every
tokenized URL share the cache key of the bare URL, and CacheQuickHandler
(the default) answers from the cache before any fixup runs; mod_expires
makes every response cacheable unless something forbids it (Cache-Control:
private / no-store): an inline view is never served to a request without
a token, nor a download, a range or a 302 replayed.

The four sites of neighbours.py (disk and socache, CacheQuickHandler On
and Off, CacheIgnoreQueryString On and Off, ModSecurity, mod_deflate and a
site policy of `Cache-Control: public` around them): mod_cache never
answers a request with a tokenized inline PDF, never with the PDF a first
view was redirected away from, never with a 302.
"""

import os
import pwd
import secrets

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline, assert_redirect
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
    token = ref.mint(srv.secret, DOC, lifetime=30)
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
