# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Assertions for the answers of SPEC section 4, shared by the test modules.

Each function checks one kind of answer completely (status, headers, body)
and returns what the next step of a test needs, so that a test reads as the
behaviour it pins.
"""

import re
import time
import urllib.parse

import pdftoken_ref
from client import parse_set_cookie
from disposition import parse_content_disposition

# Characters RFC 3986 allows in a URI (reserved, unreserved, '%').
URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")


def cache_directives(r):
    values = r.get_all("Cache-Control")
    return {d.strip().split("=")[0].lower()
            for v in values for d in v.split(",") if d.strip()}


def assert_redirect(server, r, path, query="", name="pdftoken", timeout=10,
                    token_path=None, secret=None, secure=None,
                    location_path=None):
    """R1/R4: a 302 to the same URL with a fresh token, and its cookie.

    path      -- the URL path as the client sent it (escaped form); the
                 Location and the cookie Path must carry it
    query     -- the other query parameters, in order, as they must appear
                 before the token in Location ("" for none)
    token_path-- the decoded path the token is bound to (default: path
                 percent-decoded)
    secret    -- when given, the token's tag must verify under it
    Returns (token, cookie pair for a follow-up request).
    """
    assert r.status == 302, r
    location = r.get("Location")
    assert location is not None, r
    assert location.endswith("#") and location.count("#") == 1, \
        "Location must end in an empty fragment: %r" % location
    assert URI_CHARS.match(location), "raw bytes in Location %r" % location
    token = r.location_token(name)
    assert pdftoken_ref.TOKEN_RE.match(token), "token %r" % token
    location_path = location_path or path
    expected = server.url("%s?%s%s=%s#" % (location_path,
                                           query + "&" if query else "",
                                           name, token))
    assert location == expected, (location, expected)

    version, expiry, _, _ = pdftoken_ref.parse(token)
    assert version == pdftoken_ref.VERSION
    now = time.time()
    assert now + timeout - 5 <= expiry <= now + timeout + 2, \
        "expiry %d is not now + %d" % (expiry - now, timeout)
    if token_path is None:
        token_path = urllib.parse.unquote_to_bytes(path)
    if secret is not None:
        assert pdftoken_ref.verifies(secret, token, token_path), \
            "token's tag does not verify for %r" % token_path

    cookie = assert_token_cookie(r, token, location_path, name=name,
                                 timeout=timeout,
                                 secure=server.tls if secure is None
                                 else secure)
    assert "no-store" in cache_directives(r), r
    assert b"%PDF" not in r.body, "a redirect must not carry the document"
    # No "Found" page: browsers never show it, and it cost as much as the
    # token (README, "Performance").
    assert r.body == b"", "the 302 has a body: %r" % r.body[:200]
    assert r.get("Content-Length") in (None, "0"), r
    return token, cookie


def assert_token_cookie(r, token, path, name="pdftoken", timeout=10,
                        secure=False):
    """The one Set-Cookie of R1/R4, attribute by attribute."""
    values = r.get_all("Set-Cookie")
    assert len(values) == 1, "expected one Set-Cookie: %r" % values
    cname, cval, attrs = parse_set_cookie(values[0])
    # Over HTTPS: __Host-, so Path=/ (SPEC section 4).
    assert cname == pdftoken_ref.cookie_name(token, name, secure), values[0]
    assert cval == token, values[0]
    got = sorted((k, v.lower() if k == "samesite" and v else v)
                 for k, v in attrs)
    want = [("path", "/" if secure else path), ("max-age", str(timeout)),
            ("httponly", None), ("samesite", "lax")]
    if secure:
        want.append(("secure", None))
    assert got == sorted(want), "Set-Cookie %r" % values[0]
    return "%s=%s" % (cname, cval)


def assert_inline(r, body, content_type="application/pdf",
                  referrer_policy="same-origin"):
    """R2: served normally, with Cache-Control private and Referrer-Policy."""
    assert r.status == 200, r
    assert r.body == body, "body differs (%d bytes, want %d)" % (
        len(r.body), len(body))
    if content_type is not None:
        ct = r.get("Content-Type") or ""
        assert ct.split(";")[0].strip().lower() == content_type, r
    cd = r.get("Content-Disposition")
    assert cd is None or not cd.lower().startswith("attachment"), r
    assert r.get("Location") is None, r
    assert "private" in cache_directives(r), r
    assert r.get_all("Referrer-Policy") == [referrer_policy], r


def assert_unframeable(r):
    """A forced download carries CSP frame-ancestors 'none': Firefox
    ignores "attachment" in an <object> or <embed> and shows
    application/octet-stream named x.pdf in pdf.js there, with the
    embedding page's fragment (measured, t/integration/test_embedded.py)."""
    policies = [v.strip() for v in r.get_all("Content-Security-Policy")]
    assert "frame-ancestors 'none'" in policies, r


def assert_attachment(r, body, filename=None):
    """R3 (and the output fallback): a forced download, never inline."""
    assert r.status == 200, r
    assert r.get("Location") is None, r
    cd = r.get("Content-Disposition")
    assert cd is not None, r
    dtype, params = parse_content_disposition(cd)
    assert dtype == "attachment", cd
    if filename is not None:
        assert params.get("filename*", params.get("filename")) == filename, cd
        assert "filename" in params, "no ASCII filename= in %r" % cd
    assert r.get("Content-Type") == "application/octet-stream", r
    assert (r.get("X-Content-Type-Options") or "").lower() == "nosniff", r
    assert_unframeable(r)
    if body is not None:
        assert r.body == body, "body differs (%d bytes, want %d)" % (
            len(r.body), len(body))
    return params


def assert_forced_download(r, body, status=200):
    """Never inline, whatever the status (SPEC section 2): the status the
    handler chose stays, and the attachment headers of R3 go with it."""
    assert r.status == status, r
    assert r.get("Location") is None, r
    assert r.get_all("Set-Cookie") == [], r
    cd = r.get("Content-Disposition")
    assert cd is not None, r
    dtype, params = parse_content_disposition(cd)
    assert dtype == "attachment", cd
    assert r.get("Content-Type") == "application/octet-stream", r
    assert (r.get("X-Content-Type-Options") or "").lower() == "nosniff", r
    assert_unframeable(r)
    if body is not None:
        assert r.body == body, "body differs (%d bytes, want %d)" % (
            len(r.body), len(body))
    return params


def download_name_choices(url_path):
    """The names a forced download of url_path may carry: the last segment
    of the document's own URL, with .pdf appended or in place of its own
    suffix (`invoice.php` -> invoice.pdf or invoice.php.pdf; `7` -> 7.pdf)."""
    last = urllib.parse.unquote(url_path.split("?")[0].rsplit("/", 1)[1])
    if last.lower().endswith(".pdf"):
        return {last}
    names = {last + ".pdf"}
    if "." in last.strip("."):
        names.add(last.rsplit(".", 1)[0] + ".pdf")
    return names


def assert_download_name(r, url_path, also=()):
    """SPEC section 2: a forced download's filename ends in .pdf and comes
    from the served document's own name, never from what the script or
    back end put in its own Content-Disposition."""
    cd = r.get("Content-Disposition")
    assert cd is not None, r
    _, params = parse_content_disposition(cd)
    assert "filename" in params, "no ASCII filename= in %r" % cd
    names = {params["filename"]}
    if "filename*" in params:
        names.add(params["filename*"])
    allowed = download_name_choices(url_path) | set(also)
    for name in names:
        assert name.lower().endswith(".pdf"), \
            "download name %r does not end in .pdf: %r" % (name, cd)
        assert name in allowed, \
            "download name %r not taken from the URL %s (want one of %s)" \
            % (name, url_path, sorted(allowed))


def assert_untouched(r, body=None, status=200):
    """Not protected: no redirect, no cookie, no forced download."""
    assert r.status == status, r
    assert r.get("Location") is None, r
    assert r.get_all("Set-Cookie") == [], r
    cd = r.get("Content-Disposition")
    assert cd is None or not cd.lower().startswith("attachment"), r
    assert r.get("X-Content-Type-Options") is None, r
    if body is not None:
        assert r.body == body
