# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 6: no byte from the request reaches Location or Set-Cookie
unescaped, and file names reach Content-Disposition per RFC 6266.

Percent-encoded and non-ASCII file names, names with ';', '"', '%' and even
CR LF, encoded and raw control characters in the query.
"""

import urllib.parse

import pytest

import pdftoken_ref as ref
from checks import (URI_CHARS, assert_attachment, assert_inline,
                    assert_redirect)
from disposition import download_name, parse_content_disposition

DOC = "/prot/doc.pdf"
CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""

# (id, file name on disk, URL path component as a browser sends it)
NAMES = [
    ("space", "my file.pdf", "my%20file.pdf"),
    ("non-ascii", "r\u00e9sum\u00e9.pdf", "r%C3%A9sum%C3%A9.pdf"),
    ("semicolon", "semi;colon.pdf", "semi;colon.pdf"),
    ("quote", 'quo"te.pdf', "quo%22te.pdf"),
    ("percent", "per%cent.pdf", "per%25cent.pdf"),
    ("plus-comma", "a+b,c.pdf", "a+b,c.pdf"),
    ("crlf", "a\r\nX-Evil: 1.pdf", "a%0D%0AX-Evil:%201.pdf"),
    ("cjk", "\u6587\u66f8.pdf", "%E6%96%87%E6%9B%B8.pdf"),
]


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("escaping")
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "doc")}
    for key, name, _ in NAMES:
        s.files[key] = s.write_pdf("prot/" + name, key)
    s.configure(CONFIG)
    s.start()
    return s


def assert_no_injection(r):
    """No header was made from request bytes: no X-Evil, no extra cookie."""
    names = [n.lower() for n, _ in r.headers]
    assert "x-evil" not in names, r
    for name, _, attrs in r.set_cookies():
        assert "evil" not in name.lower(), r
        assert not any("evil" in k for k, _ in attrs), r
    assert len(r.get_all("Set-Cookie")) <= 1, r
    for n, v in r.headers:
        assert all(32 <= ord(c) < 127 for c in v), \
            "non-ASCII or control byte in %s: %r" % (n, v)


def escaped_redirect(srv, r, url_path, query=""):
    """assert_redirect, letting the module pick its own (valid) escaping.

    The Location path may escape differently from the request (for example
    %c3 for %C3), but it must decode to the same path, and the cookie Path
    must be that same Location path byte for byte: the browser requests the
    Location and path-matches the cookie against it.
    """
    assert r.status == 302, r
    loc = r.get("Location")
    assert URI_CHARS.match(loc), "raw bytes in Location %r" % loc
    loc_path = urllib.parse.urlsplit(loc).path
    assert urllib.parse.unquote_to_bytes(loc_path) == \
        urllib.parse.unquote_to_bytes(url_path), (loc_path, url_path)
    return assert_redirect(srv, r, url_path, query=query, secret=srv.secret,
                           location_path=loc_path)


# ------------------------------------------------------------ file names

@pytest.mark.parametrize("key,name,url", NAMES, ids=[n[0] for n in NAMES])
def test_file_name_location_and_cookie_path_are_escaped(srv, key, name, url):
    r = srv.get("/prot/" + url + "?a=1")
    assert_no_injection(r)
    escaped_redirect(srv, r, "/prot/" + url, query="a=1")


@pytest.mark.parametrize("key,name,url", NAMES, ids=[n[0] for n in NAMES])
def test_file_name_token_bound_to_decoded_path(srv, key, name, url):
    token = srv.get("/prot/" + url).location_token()
    assert ref.verifies(srv.secret, token, ("/prot/" + name).encode())


@pytest.mark.parametrize("key,name,url", NAMES, ids=[n[0] for n in NAMES])
def test_file_name_follow_up_is_inline(srv, key, name, url):
    r = srv.get("/prot/" + url)
    token, cookie = escaped_redirect(srv, r, "/prot/" + url)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files[key])


@pytest.mark.parametrize("key,name,url", NAMES, ids=[n[0] for n in NAMES])
def test_file_name_attachment_names_the_file(srv, key, name, url):
    token = ref.mint(srv.secret, "/prot/" + name, lifetime=30)
    r = srv.get("/prot/%s?pdftoken=%s" % (url, token))
    assert_no_injection(r)
    params = assert_attachment(r, srv.files[key])
    if "\r" in name:
        # No CR LF may reach a header; any harmless rendering will do.
        assert "filename" in params or "filename*" in params
        return
    assert download_name(r.get("Content-Disposition")) == name
    assert all(32 <= ord(c) < 127 for c in params["filename"]), params


def test_non_ascii_attachment_has_filename_star_and_ascii_fallback(srv):
    token = ref.mint(srv.secret, "/prot/r\u00e9sum\u00e9.pdf", lifetime=30)
    r = srv.get("/prot/r%C3%A9sum%C3%A9.pdf?pdftoken=" + token)
    cd = r.get("Content-Disposition")
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9.pdf" in cd.replace(
        "utf-8''", "UTF-8''"), cd
    _, params = parse_content_disposition(cd)
    assert params["filename*"] == "r\u00e9sum\u00e9.pdf"
    assert params["filename"] and params["filename"].isascii()


def test_percent_escape_in_path_is_decoded_exactly_once(srv):
    # /prot/a%2541.pdf names the file "a%41.pdf"; decoding twice would
    # redirect to (and bind the token to) the other document "aA.pdf".
    srv.write_pdf("prot/a%41.pdf", "literal percent")
    srv.write_pdf("prot/aA.pdf", "another document")
    r = srv.get("/prot/a%2541.pdf")
    token, cookie = escaped_redirect(srv, r, "/prot/a%2541.pdf")
    assert ref.verifies(srv.secret, token, b"/prot/a%41.pdf")
    assert not ref.verifies(srv.secret, token, b"/prot/aA.pdf")


def test_cookie_path_with_semicolon_does_not_split_the_cookie(srv):
    r = srv.get("/prot/semi;colon.pdf")
    [(name, value, attrs)] = r.set_cookies()
    keys = [k for k, _ in attrs]
    assert sorted(keys) == ["httponly", "max-age", "path", "samesite"], attrs
    path = dict(attrs)["path"]
    assert ";" not in path
    assert urllib.parse.unquote(path) == "/prot/semi;colon.pdf"


# ------------------------------------------------------- hostile queries

def test_encoded_crlf_in_query_stays_encoded_in_location(srv):
    query = "x=%0d%0aSet-Cookie:%20evil=1&y=%0D%0AX-Evil:%201"
    r = srv.get(DOC + "?" + query)
    assert_no_injection(r)
    assert_redirect(srv, r, DOC, query=query, secret=srv.secret)


def test_encoded_crlf_in_token_value_is_just_a_bad_token(srv):
    r = srv.get(DOC + "?pdftoken=%0d%0aX-Evil:%201&z=1")
    assert_no_injection(r)
    assert_redirect(srv, r, DOC, query="z=1", secret=srv.secret)


def test_encoded_crlf_in_parameter_name(srv):
    query = "a%0d%0aX-Evil:%201=v"
    r = srv.get(DOC + "?" + query)
    assert_no_injection(r)
    assert_redirect(srv, r, DOC, query=query, secret=srv.secret)


RAW_ACCEPTED = [
    ("quotes-and-angles", b'q="<script>"'),
    ("braces-pipe-caret", b"q={a|b}^c"),
    ("backslash-backtick", b"q=\\`x`"),
    ("non-ascii", b"q=\xc3\xa9\xff"),
]


@pytest.mark.parametrize("query", [q for _, q in RAW_ACCEPTED],
                         ids=[i for i, _ in RAW_ACCEPTED])
def test_raw_unsafe_query_bytes_reach_location_only_percent_encoded(srv,
                                                                    query):
    r = srv.get(DOC.encode() + b"?" + query + b"&k=1")
    assert_no_injection(r)
    assert r.status == 302, r
    loc = r.get("Location")
    assert URI_CHARS.match(loc), "unescaped request bytes in %r" % loc
    loc_query = urllib.parse.urlsplit(loc).query
    kept = "&".join(p for p in loc_query.split("&")
                    if not p.startswith("pdftoken="))
    assert urllib.parse.unquote_to_bytes(kept) == \
        urllib.parse.unquote_to_bytes(query + b"&k=1")


RAW_CONTROL = [
    ("cr", b"x=a\rX-Evil: 1"),
    ("lf", b"x=a\nX-Evil: 1"),
    ("crlf", b"x=a\r\nX-Evil: 1"),
    ("tab", b"x=a\tb"),
    ("nul", b"x=a\x00b"),
    ("del", b"x=a\x7fb"),
    ("esc", b"x=a\x1bb"),
]


@pytest.mark.parametrize("query", [q for _, q in RAW_CONTROL],
                         ids=[i for i, _ in RAW_CONTROL])
def test_raw_control_bytes_in_query_never_reach_a_header(srv, query):
    r = srv.get(DOC.encode() + b"?" + query)
    assert_no_injection(r)
    if query == b"x=a\r\nX-Evil: 1":
        # The raw CR LF ended the request line: an HTTP/0.9 answer has no
        # headers at all, so nothing could be injected into one.
        assert r.http09, r
        assert b"X-Evil" not in r.body.split(b"<")[0]
    else:
        # Any other raw control byte in the request line: httpd refuses
        # the request (400) before the module sees it.
        assert r.status == 400, r
    assert srv.alive()
    assert srv.get(DOC).status == 302
