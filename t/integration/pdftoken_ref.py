# Licensed under the Apache License, Version 2.0; see LICENSE.
"""An independent Python implementation of the token format of token.h.

Written from the format comment in token.h (version 2), not from token.c:
tokens minted here and accepted by the module, and tokens minted by the
module and verified here, pin the format from outside.

    masked = expiry XOR the nonce's first 8 bytes (8, big-endian)
    raw   = version (1) || masked (8) || nonce (16) || tag (20)
    tag   = HMAC-SHA256(secret, version || masked || nonce
                                || len(path) (8, big-endian) || path)[:20]
    token = base64url(raw), no padding: 60 characters

The secret is the secret file's bytes minus trailing CR, LF, space and tab;
the path is the decoded URL path of the request the browser made.
"""

import base64
import hashlib
import hmac
import os
import re
import time

VERSION = 0x02
NONCE_LEN = 16
TAG_LEN = 20
RAW_LEN = 1 + 8 + NONCE_LEN + TAG_LEN
TOKEN_LEN = 60
SUFFIX_OFFSET = 12
SUFFIX_LEN = 8

TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{60}$")

# Every token the tests minted or saw in a response.  The harness greps each
# server's error log for all of them when the server stops: the contract
# says tokens never appear in the error log above `trace`.
SEEN_TOKENS = set()


def remember(token):
    if isinstance(token, bytes):
        token = token.decode("latin-1")
    if TOKEN_RE.match(token):
        SEEN_TOKENS.add(token)
    return token


def secret_from_file_bytes(data):
    """The key material a secret file yields (trailing whitespace off)."""
    return data.rstrip(b"\r\n \t")


def read_secret(path):
    with open(path, "rb") as f:
        return secret_from_file_bytes(f.read())


def _b(path):
    return path.encode("utf-8") if isinstance(path, str) else path


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def masked(expiry, nonce, version=VERSION):
    """The expiry field's 8 bytes: expiry XOR the nonce's first 8 (version
    1, the format before, carried it in clear; minted here to show the
    module refuses it)."""
    if version == 1:
        return expiry.to_bytes(8, "big")
    return (expiry ^ int.from_bytes(nonce[:8], "big")).to_bytes(8, "big")


def tag_for(secret, version, expiry, nonce, path):
    path = _b(path)
    msg = (bytes([version]) + masked(expiry, nonce, version) + nonce
           + len(path).to_bytes(8, "big") + path)
    return hmac.new(secret, msg, hashlib.sha256).digest()[:TAG_LEN]


def mint(secret, path, expiry=None, lifetime=10, nonce=None,
         version=VERSION):
    """A token for `path` (str is UTF-8 encoded) under `secret` (bytes).

    expiry defaults to now + lifetime; the nonce to 16 random bytes.
    """
    if expiry is None:
        expiry = int(time.time()) + lifetime
    if nonce is None:
        nonce = os.urandom(NONCE_LEN)
    raw = (bytes([version]) + masked(expiry, nonce, version) + nonce
           + tag_for(secret, version, expiry, nonce, path))
    assert len(raw) == RAW_LEN
    return remember(b64url(raw))


def mint_waf_inert(secret, path, **kw):
    """As mint, drawn again until the token holds no '-', as the module's
    own mint does (token.h, pdftoken_waf_inert): for a server behind the
    OWASP CRS, which blocks some tokens with a '-' as SQL."""
    while True:
        token = mint(secret, path, **kw)
        if "-" not in token:
            return token


def forge(token):
    """The same token with one bit of its tag flipped (still well formed)."""
    raw = bytearray(b64url_decode(token))
    raw[-1] ^= 0x01
    return remember(b64url(bytes(raw)))


def parse(token):
    """(version, expiry, nonce, tag) of a well-formed token."""
    if not TOKEN_RE.match(token):
        raise ValueError("not a 60-character base64url token: %r" % token)
    raw = b64url_decode(token)
    if len(raw) != RAW_LEN:
        raise ValueError("decodes to %d bytes" % len(raw))
    nonce = raw[9:25]
    expiry = int.from_bytes(raw[1:9], "big") ^ int.from_bytes(nonce[:8],
                                                              "big")
    return (raw[0], expiry, nonce, raw[25:])


def verifies(secret, token, path):
    """True when token's tag is good for path under secret (any expiry)."""
    version, expiry, nonce, tag = parse(token)
    return hmac.compare_digest(tag, tag_for(secret, version, expiry, nonce,
                                            path))


def expiry_of(token):
    return parse(token)[1]


def cookie_name(token, name="pdftoken", secure=False):
    """The cookie name the module uses for this token (over HTTPS with the
    __Host- prefix)."""
    return "%s%s_%s" % ("__Host-" if secure else "", name,
                        token[SUFFIX_OFFSET:SUFFIX_OFFSET + SUFFIX_LEN])


def cookie_pair(token, name="pdftoken", secure=False):
    """`name_XXXXXXXX=token`, as a browser sends it in a Cookie header."""
    return "%s=%s" % (cookie_name(token, name, secure), token)
