# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Hostile tokens, queries and Cookie headers get defined answers.

A token that is not a valid one for this path is R4 (302 with a fresh
token); a valid token is R2 or R3 depending only on whether a cookie with
exactly its value is present.  Never a 500, and the server stays up.
"""

import pytest

import pdftoken_ref as ref
from checks import (URI_CHARS, assert_attachment, assert_inline,
                    assert_redirect)

DOC = "/prot/doc.pdf"
CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("hostile")
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "hostile")}
    s.configure(CONFIG)
    s.start()
    return s


@pytest.fixture(autouse=True)
def server_stays_up(srv):
    yield
    assert srv.alive(), srv.logs_text()
    assert_inline(srv.view(DOC), srv.files["doc"])


def valid(srv):
    return ref.mint(srv.secret, DOC, lifetime=60)


# ------------------------------------------------------------ hostile tokens

def _hostile_tokens(srv):
    t = valid(srv)
    return {
        "8000-chars": "A" * 8000,
        "8000-chars-valid-prefix": t + "A" * 7940,
        "64-chars": t + "AAAA",
        "65-chars": t + "AAAAA",
        "59-chars": t[:59],
        "nul-encoded-inside": t[:30] + "%00" + t[33:],
        "nul-encoded-after": t + "%00",
        "standard-base64-chars": t[:30] + "+/" + t[32:],
        "percent-escaped-char": "%" + "%02X" % ord(t[0]) + t[1:],
        "spaces": "%20" * 60,
        "plus-signs": "+" * 60,
        "all-equals": "=" * 60,
        "utf8-encoded": "%C3%A9" * 20,
        "html": "%3Cscript%3Ealert(1)%3C/script%3E",
    }


HOSTILE_IDS = ["8000-chars", "8000-chars-valid-prefix", "64-chars",
               "65-chars", "59-chars", "nul-encoded-inside",
               "nul-encoded-after", "standard-base64-chars",
               "percent-escaped-char", "spaces", "plus-signs", "all-equals",
               "utf8-encoded", "html"]


@pytest.mark.parametrize("case", HOSTILE_IDS)
def test_hostile_token_redirects_with_fresh_token(srv, case):
    bad = _hostile_tokens(srv)[case]
    r = srv.get(DOC + "?a=1&pdftoken=" + bad)
    new, _ = assert_redirect(srv, r, DOC, query="a=1", secret=srv.secret)
    assert len(new) == 60


@pytest.mark.parametrize("case", HOSTILE_IDS)
def test_hostile_token_with_cookie_of_same_value_redirects(srv, case):
    bad = _hostile_tokens(srv)[case]
    cookie = "pdftoken_%s=%s" % (bad[12:20], bad)
    if len(cookie) > 7000:
        cookie = cookie[:7000]
    r = srv.get(DOC + "?pdftoken=" + bad, cookies=[cookie])
    assert_redirect(srv, r, DOC, secret=srv.secret)


def test_hostile_hundred_token_params_redirect_once(srv):
    t = valid(srv)
    query = "&".join(["pdftoken=" + t] * 100)
    r = srv.get(DOC + "?x=1&" + query, cookies=[ref.cookie_pair(t)])
    assert_redirect(srv, r, DOC, query="x=1", secret=srv.secret)


def test_hostile_six_hundred_other_params_are_all_kept(srv):
    # About 5 KB: below httpd's LimitRequestLine of 8190 bytes.
    query = "&".join("p%d=%d" % (i, i) for i in range(600))
    r = srv.get(DOC + "?" + query)
    token, cookie = assert_redirect(srv, r, DOC, query=query,
                                    secret=srv.secret)
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["doc"])


def test_hostile_very_long_pdf_path_gets_a_defined_answer(srv):
    path = "/prot/" + "a" * 7000 + ".pdf"
    r = srv.get(path)
    assert r.status in (302, 403, 404, 414), r
    if r.status == 302:
        assert_redirect(srv, r, path, secret=srv.secret)


# ----------------------------------------------------------- hostile cookies

def test_hostile_300_cookie_pairs_with_match_at_the_end_is_inline(srv):
    t = valid(srv)
    jar = ["c%03d=v%03d" % (i, i) for i in range(300)] + [ref.cookie_pair(t)]
    assert_inline(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                  srv.files["doc"])


def test_hostile_300_cookie_pairs_with_match_first_is_inline(srv):
    t = valid(srv)
    jar = [ref.cookie_pair(t)] + ["c%03d=v%03d" % (i, i) for i in range(300)]
    assert_inline(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                  srv.files["doc"])


def test_hostile_300_pdftoken_cookies_without_match_is_attachment(srv):
    t = valid(srv)
    jar = [ref.cookie_pair(valid(srv)) for _ in range(60)]
    assert_attachment(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                      srv.files["doc"])


def test_hostile_duplicate_cookie_wrong_then_right_is_inline(srv):
    t = valid(srv)
    name = ref.cookie_name(t)
    jar = [name + "=wrong", name + "=" + t]
    assert_inline(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                  srv.files["doc"])


def test_hostile_duplicate_cookie_right_then_wrong_is_inline(srv):
    t = valid(srv)
    name = ref.cookie_name(t)
    jar = [name + "=" + t, name + "=" + valid(srv)]
    assert_inline(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                  srv.files["doc"])


def test_hostile_match_in_second_cookie_header_is_not_inline(srv):
    # httpd joins the two lines with ", ", and ',' separates no cookies
    # (SPEC section 4, as browsers send them: RFC 6265 section 5.4): the
    # pair is "b=2, pdftoken_...", so no match.  Browsers never send two
    # Cookie lines; mod_http2 joins its cookie fields with "; ".
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", "a=1; b=2"),
                         ("Cookie", ref.cookie_pair(t))])
    assert_attachment(r, srv.files["doc"])


def test_hostile_comma_planted_cookie_is_not_inline(srv):
    # A site that writes untrusted input into a cookie of its own
    # (utm_source=<param>) must not hand an attacker the matching cookie.
    t = valid(srv)
    for header in ("utm_source=a," + ref.cookie_pair(t),
                   "utm_source=a, " + ref.cookie_pair(t) + "; x=1"):
        r = srv.get(DOC + "?pdftoken=" + t, headers=[("Cookie", header)])
        assert_attachment(r, srv.files["doc"])


def test_hostile_junk_around_a_matching_cookie_is_inline(srv):
    t = valid(srv)
    header = ";;; ; =; ==x; lonely; empty=; \"q\"=\"v\"; " \
        + ref.cookie_pair(t) + ";;"
    r = srv.get(DOC + "?pdftoken=" + t, headers=[("Cookie", header)])
    assert_inline(r, srv.files["doc"])


def test_hostile_quoted_cookie_value_gets_200(srv):
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", '%s="%s"' % (ref.cookie_name(t), t))])
    # RFC 6265 lets a value sit in double quotes: inline or the fallback,
    # both are defined answers; never a redirect loop or an error.
    assert r.status == 200 and r.body == srv.files["doc"], r


@pytest.mark.parametrize("mangle", [
    lambda t: t[:59], lambda t: t + "x", lambda t: t[1:],
    lambda t: '"' + t, lambda t: t.lower(), lambda t: "x" * 60,
], ids=["prefix", "longer", "shifted", "open-quote", "lowercase", "other"])
def test_hostile_cookie_value_not_byte_for_byte_equal_is_attachment(
        srv, mangle):
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", ref.cookie_name(t) + "=" + mangle(t))])
    assert_attachment(r, srv.files["doc"])


def test_hostile_giant_cookie_header_without_match_is_attachment(srv):
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", "big=" + "x" * 8000)])
    assert r.status in (200, 400), r
    if r.status == 200:
        assert_attachment(r, srv.files["doc"])


def test_hostile_cookie_with_control_bytes_gets_defined_answer(srv):
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", b"a=\x01\x02\x7f; "
                          + ref.cookie_pair(t).encode())])
    assert r.status in (200, 400), r


def test_hostile_cookie_with_high_bytes_and_match_is_inline(srv):
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Cookie", b"a=\xff\xfe\xc3; "
                          + ref.cookie_pair(t).encode())])
    assert_inline(r, srv.files["doc"])


def test_hostile_many_ranges_with_token_get_defined_answer(srv):
    t = valid(srv)
    ranges = ",".join("%d-%d" % (i, i) for i in range(0, 400, 2))
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Range", "bytes=" + ranges)])
    assert r.status in (200, 206, 416), r


@pytest.mark.parametrize("value", ["garbage", "bytes=zz", "bytes=10-9",
                                   "bytes=", "items=0-1", "bytes =0-1",
                                   "bytes=0-1;2-3"])
def test_hostile_invalid_range_with_token_is_judged_as_no_range(srv, value):
    # SPEC R5: only a valid "Range: bytes=" makes a range continuation;
    # anything else is R3 (the fallback), never the whole file inline.
    t = valid(srv)
    r = srv.get(DOC + "?pdftoken=" + t, headers=[("Range", value)])
    assert_attachment(r, srv.files["doc"])
    assert r.get("Content-Range") is None, r


def test_hostile_garbage_range_with_forged_token_redirects(srv):
    t = ref.forge(valid(srv))
    r = srv.get(DOC + "?pdftoken=" + t, headers=[("Range", "bytes=zz")])
    assert_redirect(srv, r, DOC, secret=srv.secret)


# ------------------------------------------------------ odd request lines

def test_http10_request_without_host_redirects_to_server_name(srv):
    r = srv.raw(b"GET /prot/doc.pdf?a=1 HTTP/1.0\r\n\r\n")
    assert_redirect(srv, r, DOC, query="a=1", secret=srv.secret)


def test_absolute_form_request_target_redirects_like_origin_form(srv):
    r = srv.raw(b"GET http://127.0.0.1:%d/prot/doc.pdf?a=1 HTTP/1.1\r\n"
                b"Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
                % (srv.port, srv.port))
    assert_redirect(srv, r, DOC, query="a=1", secret=srv.secret)


@pytest.mark.parametrize("path", ["/prot/./doc.pdf", "/prot//doc.pdf",
                                  "/x/../prot/doc.pdf", "/prot/%2e/doc.pdf"])
def test_unnormalized_path_redirect_is_self_consistent(srv, path):
    # Browsers normalize dot segments themselves; whatever the module makes
    # of such a path, following its own Location with its own cookie must
    # end inline, not in another redirect.
    r = srv.get(path)
    assert r.status == 302, r
    loc = r.get("Location")
    assert loc.endswith("#") and URI_CHARS.match(loc), loc
    [(name, value, attrs)] = r.set_cookies()
    r2 = srv.get(r.location_target(), cookies=["%s=%s" % (name, value)])
    assert_inline(r2, srv.files["doc"])
