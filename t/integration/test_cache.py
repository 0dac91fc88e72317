# Licensed under the Apache License, Version 2.0; see LICENSE.
"""mod_cache + mod_cache_disk in front: an inline view must never be served
from the cache to a request without a token.

CacheIgnoreQueryString On makes every tokenized URL share the cache key of
the bare URL, and CacheQuickHandler (the default) answers from the cache
before any fixup runs; mod_expires makes every response cacheable unless
something forbids it (Cache-Control: private / no-store)."""

import os
import pwd

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline, assert_redirect

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
