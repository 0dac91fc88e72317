# Licensed under the Apache License, Version 2.0; see LICENSE.
"""HTTPS through mod_ssl, with a certificate made at test time:
`Secure` on the cookie, an `https://` Location."""

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline, assert_redirect

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("https", tls=True)
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "tls")}
    s.configure(CONFIG)
    s.start()
    return s


def test_https_redirect_location_is_https(srv):
    r = srv.get("/prot/doc.pdf?a=1")
    token = r.location_token()
    assert r.get("Location") == "https://127.0.0.1:%d/prot/doc.pdf?a=1&" \
        "pdftoken=%s#" % (srv.port, token)


def test_https_cookie_is_secure(srv):
    r = srv.get("/prot/doc.pdf")
    assert_redirect(srv, r, "/prot/doc.pdf", secure=True, secret=srv.secret)
    [(name, value, attrs)] = r.set_cookies()
    assert ("secure", None) in attrs


def test_https_follow_up_is_inline(srv):
    r = srv.get("/prot/doc.pdf")
    token, cookie = assert_redirect(srv, r, "/prot/doc.pdf", secure=True)
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["doc"])


def test_https_fallback_without_cookie_is_attachment(srv):
    r = srv.get("/prot/doc.pdf")
    token, _ = assert_redirect(srv, r, "/prot/doc.pdf", secure=True)
    assert_attachment(srv.get("/prot/doc.pdf?pdftoken=" + token),
                      srv.files["doc"], filename="doc.pdf")


def test_https_cookie_has_host_prefix_and_root_path(srv):
    # SPEC section 4: __Host- makes browsers refuse the cookie from a
    # sibling subdomain (Domain=) or from plain HTTP.
    r = srv.get("/prot/doc.pdf")
    [(name, value, attrs)] = r.set_cookies()
    assert name.startswith("__Host-pdftoken_"), name
    assert ("path", "/") in attrs and ("secure", None) in attrs, attrs
    assert not any(k == "domain" for k, _ in attrs), attrs


def test_https_cookie_without_the_prefix_is_refused(srv):
    # Anyone who can plant "pdftoken_X=T" (a sibling host, an attacker on
    # plain HTTP) must not get the inline answer over HTTPS.
    r = srv.get("/prot/doc.pdf")
    token, _ = assert_redirect(srv, r, "/prot/doc.pdf", secure=True)
    plain = ref.cookie_pair(token)
    assert_attachment(srv.get(r.location_target(), cookies=[plain]),
                      srv.files["doc"], filename="doc.pdf")
    assert_inline(srv.get(r.location_target(),
                          cookies=[plain, ref.cookie_pair(token,
                                                          secure=True)]),
                  srv.files["doc"])


def test_https_pile_up_is_cut_for_the_host(srv):
    # Over HTTPS the cookies are the host's (Path=/): 10 of them and one
    # new one leaves 8; the expiries are __Host- cookies too, or browsers
    # would ignore them.
    jar = ["__Host-pdftoken_%08d=old" % i for i in range(10)]
    jar += ["pdftoken_99999999=plain"]
    r = srv.get("/prot/doc.pdf", cookies=jar)
    assert r.status == 302, r
    gone = [(n, a) for n, v, a in r.set_cookies() if ("max-age", "0") in a]
    assert [n for n, _ in gone] == ["__Host-pdftoken_%08d" % i
                                    for i in range(3)], r
    for _, attrs in gone:
        assert ("path", "/") in attrs and ("secure", None) in attrs, attrs
