# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The hostile requests corpus.txt cannot say: values cut from a token the
test mints (a prefix, a shifted copy, its escapes), and cases that follow
the module's own answer with its own cookie.

A token that is not a valid one for this path is R4 (302 with a fresh
token); a valid token is R2 or R3 depending only on whether a cookie with
exactly its value is present.  Never a 500, and the server stays up and
serves a reader after every case.  The server is the corpus's
(hostile_site.py, `srv` in conftest.py).
"""

import re

import pytest

import pdftoken_ref as ref
from checks import (URI_CHARS, assert_attachment, assert_inline,
                    assert_redirect)
from hostile_site import DOC


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


def test_hostile_six_hundred_other_params_are_all_kept(srv):
    # About 5 KB: below httpd's LimitRequestLine of 8190 bytes.
    query = "&".join("p%d=%d" % (i, i) for i in range(600))
    r = srv.get(DOC + "?" + query)
    token, cookie = assert_redirect(srv, r, DOC, query=query,
                                    secret=srv.secret)
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["doc"])


# ----------------------------------------------------------- hostile cookies

def test_hostile_60_pdftoken_cookies_without_match_is_attachment(srv):
    t = valid(srv)
    jar = [ref.cookie_pair(valid(srv)) for _ in range(60)]
    assert_attachment(srv.get(DOC + "?pdftoken=" + t, cookies=jar),
                      srv.files["doc"])


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


def test_hostile_200_ranges_with_token_are_a_multipart_206(srv):
    # SPEC 4 R5: served normally.  200 single bytes, none adjacent: as
    # many as httpd's MaxRanges (200) admits, so httpd answers them all.
    t = valid(srv)
    data = srv.files["doc"]
    ranges = ",".join("%d-%d" % (i, i) for i in range(0, 400, 2))
    r = srv.get(DOC + "?pdftoken=" + t,
                headers=[("Range", "bytes=" + ranges)])
    assert r.status == 206, r
    assert r.get("Content-Type").startswith("multipart/byteranges; "), r
    assert r.get("Content-Disposition") is None, r
    parts = re.split(rb"(?i)\r\ncontent-range: bytes ", r.body)[1:]
    assert len(parts) == 200, len(parts)
    for i, part in zip(range(0, 400, 2), parts):
        assert part.startswith(b"%d-%d/%d\r\n\r\n%s\r\n"
                               % (i, i, len(data), data[i:i + 1])), part[:80]


# ------------------------------------------------------ odd request paths

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
