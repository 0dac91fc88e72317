# Licensed under the Apache License, Version 2.0; see LICENSE.
"""rel="canonical" (SPEC section 4): every tokenized answer (R2, R3, R5),
static or made by a handler, carries `Link: <the URL without the token>;
rel="canonical"`, escaped, so that search engines index the clean URL; a
redirect and an answer the module leaves untouched carry none."""

import re

import pytest

from checks import assert_attachment, assert_inline

GOOGLEBOT = ("Mozilla/5.0 (compatible; Googlebot/2.1; "
             "+http://www.google.com/bot.html)")

CONFIG = r"""
<Directory "@DOCROOT@/plain">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/cgi">
    PdfTokenProtect On
    Options +ExecCGI
    SetHandler cgi-script
</Directory>
<Directory "@DOCROOT@/crawl">
    PdfTokenProtect On
    PdfTokenExempt "%{HTTP_USER_AGENT} =~ /Googlebot/"
</Directory>
"""

@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("canonical", modules=("cgid",))
    s.files = {"plain": s.write_pdf("plain/doc.pdf", "plain doc"),
               "crawl": s.write_pdf("crawl/doc.pdf", "crawled doc")}
    s.write_pdf_cgi("cgi/report", "plain/doc.pdf")
    s.configure(CONFIG)
    s.start()
    return s


def canonical(r):
    links = [v for v in r.get_all("Link") if 'rel="canonical"' in v]
    assert len(links) == 1, r
    m = re.fullmatch(r'<([^>]*)>; rel="canonical"', links[0])
    assert m, links[0]
    return m.group(1)


def first(srv, target):
    r, token, cookie = srv.first_visit(target)
    assert r.get_all("Link") == [], "a redirect is no tokenized answer"
    return r, token, cookie


# The static PDF (judged before the handler) and the CGI one (judged by
# the output filter), each with a query the canonical URL must keep.
STATIC_AND_DYNAMIC = pytest.mark.parametrize(
    "target, body", [("/plain/doc.pdf?b=2&a=1", "plain"),
                     ("/cgi/report?id=3", "plain")], ids=["static", "dynamic"])


@STATIC_AND_DYNAMIC
def test_r2_inline_carries_the_canonical_url(srv, target, body):
    r, token, cookie = first(srv, target)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files[body])
    assert canonical(r2) == srv.url(target)


@STATIC_AND_DYNAMIC
def test_r3_download_carries_the_canonical_url(srv, target, body):
    r, token, cookie = first(srv, target)
    r3 = srv.get(r.location_target())
    assert_attachment(r3, srv.files[body])
    assert canonical(r3) == srv.url(target)


def test_r5_range_carries_the_canonical_url(srv):
    r, token, cookie = first(srv, "/plain/doc.pdf?x=1")
    r5 = srv.get(r.location_target(), headers=[("Range", "bytes=0-9")])
    assert r5.status == 206, r5
    assert canonical(r5) == srv.url("/plain/doc.pdf?x=1")


def test_canonical_url_is_escaped(srv):
    # A path and query with bytes that may not stand in a header or inside
    # <...> come back percent-encoded; the token never does.
    target = "/plain/doc.pdf?q=%3Cb%3E&z=%22"
    r, token, cookie = first(srv, target)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    url = canonical(r2)
    assert url == srv.url(target)
    assert token not in url and "pdftoken" not in url


def test_untouched_answers_carry_no_canonical_link(srv):
    r = srv.get("/crawl/doc.pdf", headers=[("User-Agent", GOOGLEBOT)])
    assert r.status == 200 and r.body == srv.files["crawl"], r
    assert r.get_all("Link") == []
