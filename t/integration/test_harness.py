# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Checks of the test machinery itself (no httpd): the sample PDFs are
well formed, the reference minter round-trips, the Content-Disposition
parser reads RFC 6266, a token in an error log is caught, a server's
reserved port is its own, and the cookie jar keeps cookies as RFC 6265
has a browser keep them."""

import re
import socket
import time

import pytest

import client
import disposition
import httpd
import pdftoken_ref as ref
from cookiejar import CookieJar
from samplepdf import make_pdf


def test_sample_pdf_xref_offsets_point_at_their_objects():
    data = make_pdf("check", pages=3)
    assert data.startswith(b"%PDF-1.4\n") and data.endswith(b"%%EOF\n")
    startxref = int(re.search(rb"startxref\n(\d+)\n", data).group(1))
    assert data[startxref:startxref + 5] == b"xref\n"
    m = re.match(rb"xref\n0 (\d+)\n", data[startxref:])
    count = int(m.group(1))
    entries = data[startxref + m.end():].split(b"\n")[:count]
    assert entries[0] == b"0000000000 65535 f "
    for number, entry in enumerate(entries[1:], start=1):
        offset = int(entry[:10])
        assert data[offset:].startswith(b"%d 0 obj\n" % number)
    assert data.count(b"/Type /Page ") == 3


def test_sample_pdfs_differ_by_label():
    assert make_pdf("a") != make_pdf("b")


def test_reference_token_round_trip():
    secret = b"s" * 32
    t = ref.mint(secret, "/a.pdf", expiry=1234567890, nonce=bytes(range(16)))
    assert len(t) == 60 and ref.TOKEN_RE.match(t)
    version, expiry, nonce, tag = ref.parse(t)
    assert (version, expiry, nonce) == (2, 1234567890, bytes(range(16)))
    assert len(tag) == 20
    assert ref.verifies(secret, t, "/a.pdf")
    assert not ref.verifies(secret, t, "/b.pdf")
    assert not ref.verifies(secret, ref.forge(t), "/a.pdf")
    # The cookie suffix is the start of the nonce (token.h).
    assert t[12:20] == ref.b64url(bytes(range(16)))[:8]


def test_reference_secret_trims_trailing_whitespace_only():
    assert ref.secret_from_file_bytes(b" k \t\r\n") == b" k"


@pytest.mark.parametrize("value,dtype,params", [
    ("attachment; filename=doc.pdf", "attachment", {"filename": "doc.pdf"}),
    ('attachment; filename="a b.pdf"', "attachment",
     {"filename": "a b.pdf"}),
    ('Attachment;filename="q\\"t.pdf"', "attachment",
     {"filename": 'q"t.pdf'}),
    ("attachment; filename=\"r_sum_.pdf\"; "
     "filename*=UTF-8''r%C3%A9sum%C3%A9.pdf", "attachment",
     {"filename": "r_sum_.pdf", "filename*": "r\u00e9sum\u00e9.pdf"}),
])
def test_content_disposition_parser(value, dtype, params):
    assert disposition.parse_content_disposition(value) == (dtype, params)


@pytest.mark.parametrize("value", [
    'attachment; filename="open', "attachment; filename",
    "attachment; filename*=UTF-8''a b", "attachment filename=x",
])
def test_content_disposition_parser_refuses_broken_values(value):
    with pytest.raises(AssertionError):
        disposition.parse_content_disposition(value)


def test_log_check_catches_a_token_and_a_crash(workdir):
    s = httpd.Httpd(workdir / "logcheck")
    token = ref.mint(b"k" * 32, "/x.pdf", lifetime=5)
    s.error_log.write_text(
        "[%s] [pdftoken:debug] leaked %s\n"
        "[x] [core:notice] AH00052: child pid 1 exit signal Segmentation "
        "fault (11)\n" % (time.ctime(), token))
    problems = s.log_problems()
    assert any("appears in the error log" in p for p in problems)
    assert any("AH00052" in p for p in problems)


def test_response_parser_keeps_duplicate_headers():
    raw = (b"HTTP/1.1 302 Found\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
           b"Location: http://h/x#\r\nContent-Length: 2\r\n\r\nok")
    r = client.Response(b"GET / HTTP/1.1\r\n\r\n", raw, "GET")
    assert r.status == 302 and r.body == b"ok"
    assert r.get_all("set-cookie") == ["a=1", "b=2"]
    with pytest.raises(AssertionError):
        r.get("Set-Cookie")


def test_a_reserved_port_is_refused_to_other_binds():
    # What keeps two pytest-xdist workers (or a back end) from picking the
    # port of a server that is not listening yet.
    port, hold = httpd.reserve_port()
    try:
        with socket.socket() as other:
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
    finally:
        hold.close()


def test_cookie_jar_keeps_rfc_6265_storage_and_order():
    jar = CookieJar()
    http, https = "http://127.0.0.1:1", "https://127.0.0.1:2"
    jar.store("site=1; Path=/", http + "/login")
    jar.store("a=1; Path=/d/x.pdf; Max-Age=10", http + "/d/x.pdf")
    jar.store("b=1; Path=/d/x.pdf", http + "/d/x.pdf")
    jar.store("c=1", http + "/d/y.pdf")                 # default path /d
    # Longer paths first, then the older first; Path scopes.
    assert jar.header(http + "/d/x.pdf") == "a=1; b=1; c=1; site=1"
    assert jar.header(http + "/d/y.pdf") == "c=1; site=1"
    assert jar.header(http + "/dx") == "site=1"
    # Same name, domain and path: replaced, the creation time kept.
    jar.store("a=2; Path=/d/x.pdf", http + "/d/x.pdf")
    assert jar.header(http + "/d/x.pdf") == "a=2; b=1; c=1; site=1"
    # Max-Age=0 deletes that key only.
    jar.store("b=; Path=/d/x.pdf; Max-Age=0", http + "/d/x.pdf")
    jar.store("a=; Path=/other; Max-Age=0", http + "/d/x.pdf")
    assert jar.header(http + "/d/x.pdf") == "a=2; c=1; site=1"
    # Secure and the prefixes.
    jar.store("s=1; Path=/; Secure", http + "/")         # not from HTTP
    jar.store("__Host-h=1; Path=/d; Secure", https + "/d/x")
    jar.store("__Host-h=2; Path=/", https + "/")
    jar.store("__Secure-s=1; Path=/", https + "/")
    assert jar.named("s") == jar.named("__Host-h") == [] \
        == jar.named("__Secure-s")
    jar.store("__Host-h=3; Path=/; Secure", https + "/")
    assert jar.header(https + "/") == "site=1; __Host-h=3"
    assert jar.header(http + "/") == "site=1"
