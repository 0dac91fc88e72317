# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 4, row by row: R1 to R5, two tabs, HEAD, POST, non-PDFs."""

import time

import pytest

import pdftoken_ref as ref
from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_untouched, cache_directives)

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
</Directory>
<Directory "@DOCROOT@/refpol">
    PdfTokenProtect On
    Header set Referrer-Policy no-referrer
</Directory>
"""

DOC = "/prot/doc.pdf"


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("decision")
    s.files = {
        "doc": s.write_pdf("prot/doc.pdf", "doc", pages=4),
        "other": s.write_pdf("prot/other.pdf", "other"),
        "open": s.write_pdf("open/doc.pdf", "open"),
        "deny": s.write_pdf("deny/doc.pdf", "deny"),
        "refpol": s.write_pdf("refpol/doc.pdf", "refpol"),
    }
    s.write("prot/page.html", "<html><body>hello</body></html>\n")
    s.write("prot/notes.txt", "plain text\n")
    s.write("prot/img.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    s.configure(CONFIG)
    s.start()
    return s


def fresh(srv, path=DOC):
    """A token minted by the server for path, and its cookie."""
    r = srv.get(path)
    return assert_redirect(srv, r, path, secret=srv.secret)


# ------------------------------------------------------------------ R1

def test_r1_no_token_redirects_302_to_absolute_location_ending_in_hash(srv):
    r = srv.get(DOC)
    assert r.status == 302
    token = r.location_token()
    assert r.get("Location") == srv.url(DOC + "?pdftoken=" + token + "#")


def test_r1_token_is_bound_to_the_path_under_the_secret(srv):
    r = srv.get(DOC)
    token = r.location_token()
    assert ref.verifies(srv.secret, token, DOC)
    assert not ref.verifies(srv.secret, token, "/prot/other.pdf")
    version, expiry, _, _ = ref.parse(token)
    assert version == ref.VERSION
    assert abs(expiry - (time.time() + 10)) <= 3


def test_r1_sets_cookie_with_path_max_age_httponly_samesite_lax(srv):
    r = srv.get(DOC)
    token = r.location_token()
    [cookie] = r.get_all("Set-Cookie")
    name, value, attrs = r.set_cookies()[0]
    assert name == "pdftoken_" + token[12:20]
    assert value == token
    attrs = [(k, v.lower() if k == "samesite" else v) for k, v in attrs]
    assert sorted(attrs) == sorted([("path", DOC), ("max-age", "10"),
                                    ("httponly", None),
                                    ("samesite", "lax")]), cookie
    assert "secure" not in cookie.lower()


def test_r1_redirect_has_cache_control_no_store(srv):
    r = srv.get(DOC)
    assert r.status == 302
    assert "no-store" in cache_directives(r)


def test_r1_redirect_does_not_carry_the_document(srv):
    r = srv.get(DOC)
    assert r.status == 302
    assert b"%PDF" not in r.body


def test_r1_full_check_of_the_redirect(srv):
    assert_redirect(srv, srv.get(DOC), DOC, secret=srv.secret)


def test_r1_redirect_keeps_other_params_in_order(srv):
    r = srv.get(DOC + "?zeta=1&alpha=2&mid=3")
    assert_redirect(srv, r, DOC, query="zeta=1&alpha=2&mid=3",
                    secret=srv.secret)


def test_r1_redirect_keeps_empty_values_flags_and_escapes_byte_for_byte(srv):
    query = "x=&flag&y=%20z&x=2&sp=a+b&pct=%25%26"
    r = srv.get(DOC + "?" + query)
    assert_redirect(srv, r, DOC, query=query, secret=srv.secret)


def test_r1_redirect_removes_old_token_between_other_params(srv):
    r = srv.get(DOC + "?a=1&pdftoken=stale&b=2")
    assert_redirect(srv, r, DOC, query="a=1&b=2", secret=srv.secret)


def test_r1_similar_param_names_are_not_the_token(srv):
    query = "xpdftoken=1&pdftokenx=2&PDFTOKEN=3"
    r = srv.get(DOC + "?" + query)
    assert_redirect(srv, r, DOC, query=query, secret=srv.secret)


def test_r1_each_redirect_mints_a_fresh_token_and_cookie_name(srv):
    t1, c1 = fresh(srv)
    t2, c2 = fresh(srv)
    assert t1 != t2
    assert c1.split("=")[0] != c2.split("=")[0]


# ------------------------------------------------------------------ R2

def test_r2_token_and_matching_cookie_serve_pdf_inline(srv):
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    assert_inline(r, srv.files["doc"])


def test_r2_adds_cache_control_private(srv):
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    assert r.status == 200
    assert "private" in cache_directives(r)


def test_r2_is_not_kept_in_the_browser_cache(srv):
    # A cached inline copy would be shown again, without asking the server,
    # to a later link that reuses this tokenized URL with an attacker's
    # fragment (the browser suite's case c7a).
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    assert r.status == 200
    assert "no-store" in cache_directives(r)


@pytest.mark.parametrize("validator", ["ETag", "Last-Modified"])
def test_a_304_to_a_tokenized_request_keeps_the_verdicts_headers(srv,
                                                                 validator):
    # The module sets them on the answering request once the headers are
    # final; httpd's 304 for a static file must still carry them, with the
    # cookie (R2) and without it (R3).
    token, cookie = fresh(srv)
    target = DOC + "?pdftoken=" + token
    r = srv.get(target, cookies=[cookie])
    assert r.status == 200 and r.get(validator), r
    cond = ("If-None-Match" if validator == "ETag" else "If-Modified-Since",
            r.get(validator))
    link = ['<%s>; rel="canonical"' % srv.url(DOC)]
    r2 = srv.get(target, cookies=[cookie], headers=[cond])
    assert r2.status == 304, r2
    assert r2.get_all("Cache-Control") == ["private, no-store"], r2
    assert r2.get_all("Link") == link, r2
    r3 = srv.get(target, headers=[cond])
    assert r3.status == 304, r3
    assert r3.get_all("Cache-Control") == ["private"], r3
    assert r3.get_all("Link") == link, r3
    assert (r3.get("Content-Disposition") or "").startswith("attachment"), r3


def test_r2_adds_referrer_policy_same_origin(srv):
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    assert r.status == 200
    assert r.get_all("Referrer-Policy") == ["same-origin"]


def test_r2_keeps_a_referrer_policy_the_response_already_sets(srv):
    path = "/refpol/doc.pdf"
    token, cookie = fresh(srv, path)
    r = srv.get(path + "?pdftoken=" + token, cookies=[cookie])
    assert_inline(r, srv.files["refpol"], referrer_policy="no-referrer")


def test_r2_follow_up_keeps_other_params(srv):
    r = srv.get(DOC + "?page=2&zoom=50")
    token, cookie = assert_redirect(srv, r, DOC, query="page=2&zoom=50")
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files["doc"])


def test_r2_matching_cookie_among_other_cookies(srv):
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token,
                cookies=["session=abc", "pdftoken_zzzzzzzz=nope", cookie,
                         "theme=dark"])
    assert_inline(r, srv.files["doc"])


def test_r2_accepts_token_minted_outside_per_token_h_format(srv):
    token = ref.mint(srv.secret, DOC, lifetime=30)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert_inline(r, srv.files["doc"])


def test_r2_token_binds_the_decoded_path(srv):
    # /prot/%64oc.pdf is /prot/doc.pdf once decoded: one document, one path.
    token = ref.mint(srv.secret, DOC, lifetime=30)
    r = srv.get("/prot/%64oc.pdf?pdftoken=" + token,
                cookies=[ref.cookie_pair(token)])
    assert_inline(r, srv.files["doc"])


def test_r2_a_cookie_can_be_reused_within_its_lifetime(srv):
    token, cookie = fresh(srv)
    for _ in range(3):
        r = srv.get(DOC + "?pdftoken=" + token, cookies=[cookie])
        assert_inline(r, srv.files["doc"])


# ------------------------------------------------------------------ R3

def test_r3_valid_token_without_cookie_is_an_attachment(srv):
    token, _ = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token)
    assert_attachment(r, srv.files["doc"], filename="doc.pdf")


def test_r3_attachment_is_octet_stream_with_nosniff(srv):
    token, _ = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + token)
    assert r.status == 200
    assert r.get("Content-Type") == "application/octet-stream"
    assert r.get("X-Content-Type-Options") == "nosniff"
    assert r.get("Location") is None


def test_r3_cookie_with_other_value_is_not_a_match(srv):
    token, cookie = fresh(srv)
    other = ref.mint(srv.secret, DOC, lifetime=30)
    r = srv.get(DOC + "?pdftoken=" + token,
                cookies=[ref.cookie_name(token) + "=" + other])
    assert_attachment(r, srv.files["doc"], filename="doc.pdf")


def test_r3_cookie_of_the_other_tab_is_not_a_match(srv):
    t1, c1 = fresh(srv)
    t2, c2 = fresh(srv)
    r = srv.get(DOC + "?pdftoken=" + t1, cookies=[c2])
    assert_attachment(r, srv.files["doc"], filename="doc.pdf")


def test_r3_cookie_value_differing_in_case_is_not_a_match(srv):
    token, cookie = fresh(srv)
    name, value = cookie.split("=", 1)
    r = srv.get(DOC + "?pdftoken=" + token,
                cookies=[name + "=" + value.swapcase()])
    assert_attachment(r, srv.files["doc"], filename="doc.pdf")


def test_r3_never_redirects_a_client_without_cookies(srv):
    token, _ = fresh(srv)
    for _ in range(3):
        r = srv.get(DOC + "?pdftoken=" + token)
        assert r.status == 200 and r.get("Location") is None


def test_r3_fallback_deny_answers_403(srv):
    path = "/deny/doc.pdf"
    token, _ = fresh(srv, path)
    r = srv.get(path + "?pdftoken=" + token)
    assert r.status == 403, r
    assert r.get("Location") is None
    assert srv.files["deny"] not in r.body and b"%PDF" not in r.body


def test_r1_fallback_deny_scope_still_redirects(srv):
    assert_redirect(srv, srv.get("/deny/doc.pdf"), "/deny/doc.pdf",
                    secret=srv.secret)


def test_r2_fallback_deny_scope_serves_inline_with_cookie(srv):
    path = "/deny/doc.pdf"
    token, cookie = fresh(srv, path)
    r = srv.get(path + "?pdftoken=" + token, cookies=[cookie])
    assert_inline(r, srv.files["deny"])


# ------------------------------------------------------------------ R4

def _r4_cases(secret):
    now = int(time.time())
    good = ref.mint(secret, DOC, lifetime=30)
    return {
        "expired": ref.mint(secret, DOC, expiry=now - 30),
        "expired_long_ago": ref.mint(secret, DOC, expiry=now - 86400),
        "bad_tag": ref.forge(good),
        "other_path": ref.mint(secret, "/prot/other.pdf", lifetime=30),
        "other_secret": ref.mint(b"x" * 32, DOC, lifetime=30),
        "unknown_version": ref.mint(secret, DOC, lifetime=30, version=3),
        "version_1": ref.mint(secret, DOC, lifetime=30, version=1),
        "malformed_short": "abc",
        "malformed_alphabet": "!" * 60,
        "malformed_padding": good[:58] + "==",
        "malformed_61_chars": good + "A",
        "empty": "",
    }


@pytest.mark.parametrize("case", [
    "expired", "expired_long_ago", "bad_tag", "other_path", "other_secret",
    "unknown_version", "version_1", "malformed_short", "malformed_alphabet",
    "malformed_padding", "malformed_61_chars", "empty"])
def test_r4_bad_token_redirects_with_fresh_token_and_old_removed(srv, case):
    old = _r4_cases(srv.secret)[case]
    # Even the cookie a browser would hold for the old token does not help.
    cookies = [ref.cookie_pair(old)] if len(old) == 60 else None
    r = srv.get(DOC + "?a=1&pdftoken=" + old + "&b=2", cookies=cookies)
    token, _ = assert_redirect(srv, r, DOC, query="a=1&b=2",
                               secret=srv.secret)
    assert token != old


def test_r4_token_param_without_value_redirects(srv):
    r = srv.get(DOC + "?a=1&pdftoken&b=2")
    assert_redirect(srv, r, DOC, query="a=1&b=2", secret=srv.secret)


def test_r4_duplicate_token_redirects_with_both_removed(srv):
    token, cookie = fresh(srv)
    r = srv.get(DOC + "?a=1&pdftoken=%s&b=2&pdftoken=%s" % (token, token),
                cookies=[cookie])
    new, _ = assert_redirect(srv, r, DOC, query="a=1&b=2", secret=srv.secret)
    assert new != token


def test_r4_expired_token_with_its_cookie_redirects(srv):
    token = ref.mint(srv.secret, DOC, expiry=int(time.time()) - 5)
    r = srv.get(DOC + "?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert_redirect(srv, r, DOC, secret=srv.secret)


def test_r4_redirect_heals_into_an_inline_view(srv):
    old = ref.mint(srv.secret, DOC, expiry=int(time.time()) - 60)
    r = srv.get(DOC + "?pdftoken=" + old)
    token, cookie = assert_redirect(srv, r, DOC, secret=srv.secret)
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["doc"])


# ------------------------------------------------------------------ R5

def _range(srv, token, first, last, cookies=None):
    return srv.get(DOC + "?pdftoken=" + token,
                   headers=[("Range", "bytes=%d-%d" % (first, last))],
                   cookies=cookies)


def _assert_partial(r, data, first, last):
    assert r.status == 206, r
    assert r.get("Content-Range") == "bytes %d-%d/%d" % (first, last,
                                                         len(data)), r
    assert r.body == data[first:last + 1]
    assert r.get("Location") is None


def test_r5_range_with_fresh_token_and_no_cookie_is_206(srv):
    token, _ = fresh(srv)
    _assert_partial(_range(srv, token, 100, 1123), srv.files["doc"],
                    100, 1123)


def test_r5_range_with_token_and_cookie_is_206(srv):
    token, cookie = fresh(srv)
    _assert_partial(_range(srv, token, 0, 99, cookies=[cookie]),
                    srv.files["doc"], 0, 99)


def test_r5_range_at_the_end_of_the_file(srv):
    data = srv.files["doc"]
    token, _ = fresh(srv)
    _assert_partial(_range(srv, token, len(data) - 50, len(data) - 1),
                    data, len(data) - 50, len(data) - 1)


def test_r5_range_with_token_expired_ten_minutes_ago_is_206(srv):
    token = ref.mint(srv.secret, DOC, expiry=int(time.time()) - 600)
    _assert_partial(_range(srv, token, 2000, 2999), srv.files["doc"],
                    2000, 2999)


def test_r5_range_with_token_expired_over_an_hour_ago_redirects(srv):
    token = ref.mint(srv.secret, DOC, expiry=int(time.time()) - 3900)
    r = _range(srv, token, 0, 99)
    new, _ = assert_redirect(srv, r, DOC, secret=srv.secret)
    assert new != token


def test_r5_range_with_forged_token_redirects(srv):
    token = ref.forge(ref.mint(srv.secret, DOC, lifetime=30))
    assert_redirect(srv, _range(srv, token, 0, 99), DOC, secret=srv.secret)


def test_r5_range_with_token_for_other_path_redirects(srv):
    token = ref.mint(srv.secret, "/prot/other.pdf", lifetime=30)
    assert_redirect(srv, _range(srv, token, 0, 99), DOC, secret=srv.secret)


def test_r5_range_without_token_redirects(srv):
    r = srv.get(DOC, headers=[("Range", "bytes=0-99")])
    assert_redirect(srv, r, DOC, secret=srv.secret)


# ------------------------------------------------------------ two tabs

def test_two_first_requests_get_distinct_cookie_names(srv):
    r1, r2 = srv.get(DOC), srv.get(DOC)
    n1 = r1.set_cookies()[0][0]
    n2 = r2.set_cookies()[0][0]
    assert n1 != n2
    assert n1.startswith("pdftoken_") and n2.startswith("pdftoken_")


def test_two_first_requests_for_same_pdf_both_end_inline(srv):
    # Two tabs: both redirects arrive before either follow-up, so the
    # browser sends both cookies with each follow-up.
    r1, r2 = srv.get(DOC), srv.get(DOC)
    t1, c1 = assert_redirect(srv, r1, DOC, secret=srv.secret)
    t2, c2 = assert_redirect(srv, r2, DOC, secret=srv.secret)
    jar = [c2, c1]
    assert_inline(srv.get(r1.location_target(), cookies=jar),
                  srv.files["doc"])
    assert_inline(srv.get(r2.location_target(), cookies=jar),
                  srv.files["doc"])


# ---------------------------------------------------------------- HEAD

def test_head_without_token_redirects_without_body(srv):
    r = srv.head(DOC)
    assert_redirect(srv, r, DOC, secret=srv.secret)
    assert r.rest == b""


def test_head_with_token_and_cookie_is_inline_without_body(srv):
    token, cookie = fresh(srv)
    r = srv.head(DOC + "?pdftoken=" + token, cookies=[cookie])
    assert_inline(r, b"")
    assert r.rest == b""


def test_head_with_token_without_cookie_has_attachment_headers(srv):
    token, _ = fresh(srv)
    r = srv.head(DOC + "?pdftoken=" + token)
    assert_attachment(r, b"", filename="doc.pdf")
    assert r.rest == b""


# ---------------------------------------------------------------- POST
#
# SS2: only GET and HEAD are judged, so a POST is never redirected (that
# would turn it into a GET and lose its body) and gets no cookie.  SS2's last
# paragraph and SS6 still forbid serving a PDF of a protected scope inline
# without a token: an HTML form can POST to doc.pdf#FDF=javascript:... just
# as a link can GET it.  httpd's default handler serves a static file to a
# POST, and the module makes that answer R3's forced download ("never
# inline": any method other than GET and HEAD), token or not.

def _assert_post_answer(r, data):
    assert r.get("Location") is None, r
    assert r.get_all("Set-Cookie") == [], r
    assert_attachment(r, data)


def test_post_to_protected_pdf_is_not_redirected_and_never_inline(srv):
    r = srv.request("POST", DOC, body=b"x=1")
    _assert_post_answer(r, srv.files["doc"])


def test_post_with_token_param_is_not_redirected_and_never_inline(srv):
    r = srv.request("POST", DOC + "?pdftoken=x", body=b"")
    _assert_post_answer(r, srv.files["doc"])


def test_post_to_unprotected_pdf_is_untouched(srv):
    r = srv.request("POST", "/open/doc.pdf", body=b"x=1")
    assert_untouched(r, body=srv.files["open"])


# ------------------------------------------- not protected: passes through

@pytest.mark.parametrize("path", ["/prot/page.html", "/prot/notes.txt",
                                  "/prot/img.png"])
def test_non_pdf_in_protected_directory_is_untouched(srv, path):
    data = (srv.docroot / path.lstrip("/")).read_bytes()
    r = srv.get(path)
    assert_untouched(r, body=data)
    assert "no-store" not in cache_directives(r)
    assert r.get("Referrer-Policy") is None


def test_non_pdf_in_protected_directory_keeps_token_param(srv):
    r = srv.get("/prot/page.html?pdftoken=whatever")
    assert_untouched(r)


def test_unprotected_directory_serves_pdf_inline_without_cookie(srv):
    r = srv.get("/open/doc.pdf")
    assert_untouched(r, body=srv.files["open"])
    assert r.get("Content-Type") == "application/pdf"
    assert "private" not in cache_directives(r)


def test_unprotected_directory_ignores_token_param(srv):
    r = srv.get("/open/doc.pdf?pdftoken=junk&a=1")
    assert_untouched(r, body=srv.files["open"])


@pytest.mark.parametrize("path", ["/prot/missing.pdf", "/prot/nodir/x.PDF",
                                  "/prot/missing.pdf?a=1&pdftoken=junk"])
def test_missing_static_pdf_gets_httpds_404_and_no_token(srv, path):
    # SPEC section 4: every made-up path would otherwise mint one more
    # cookie for a hostile page to pile up.
    r = srv.get(path)
    assert r.status == 404, r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == [], r
    assert b"%PDF" not in r.body


def family(n, start=0):
    """n well-formed module cookie pairs, oldest first."""
    return ["pdftoken_%08d=old%d" % (start + i, i) for i in range(n)]


def expired_names(r):
    return [name for name, value, attrs in r.set_cookies()
            if ("max-age", "0") in attrs]


def test_cookie_pile_up_is_cut_on_the_redirect(srv):
    # SPEC section 4: at most 8 of the module's cookies for one document;
    # the surplus a request shows is expired in the same response.  With
    # 12 in the request and one new cookie, the 5 oldest go.
    jar = family(12) + ["session=keep"]
    r = srv.get(DOC, cookies=jar)
    assert r.status == 302, r
    assert expired_names(r) == ["pdftoken_%08d" % i for i in range(5)], r
    for name, value, attrs in r.set_cookies():
        if ("max-age", "0") in attrs:
            assert value == "" and ("path", DOC) in attrs, r
    fresh = [c for c in r.set_cookies() if ("max-age", "0") not in c[2]]
    assert len(fresh) == 1 and fresh[0][1] == r.location_token(), r
    assert "session" not in [c[0] for c in r.set_cookies()], r


def test_cookie_pile_up_is_cut_on_the_inline_answer(srv):
    r = srv.get(DOC)
    token, cookie = assert_redirect(srv, r, DOC)
    r2 = srv.get(r.location_target(), cookies=family(9) + [cookie])
    assert_inline(r2, srv.files["doc"])
    # 10 in the request, 8 kept: the two oldest go, never the one in use.
    assert expired_names(r2) == ["pdftoken_00000000", "pdftoken_00000001"]


def test_eight_cookies_are_left_alone(srv):
    r = srv.get(DOC, cookies=family(7))
    assert r.status == 302 and expired_names(r) == [], r
    assert len(r.set_cookies()) == 1, r
