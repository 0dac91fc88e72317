#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Independent reference minter for mod_pdftoken's tokens, format version 1.

Written from the format described in token.h, not from token.c, so that the
unit tests pin the format from outside: if token.c and this file ever
disagree, one of them has drifted from the documented format.

    mint_ref.py KEYHEX PATHHEX EXPIRY NONCEHEX

prints the token and a newline.  Every argument but EXPIRY is hex so that
any bytes (NUL, non-ASCII, invalid UTF-8) pass through argv and the shell
unchanged; an empty PATHHEX is the empty path.  Standard library only.
"""

import base64
import hashlib
import hmac
import struct
import sys

VERSION = 0x02
NONCE_LEN = 16
TAG_LEN = 20       # HMAC-SHA256 truncated to 160 bits
RAW_LEN = 1 + 8 + NONCE_LEN + TAG_LEN
TOKEN_LEN = 60


def mint(key, path, expiry, nonce):
    """Return the token (str) for raw bytes key, path, nonce and an int
    expiry in seconds since the epoch."""
    if len(key) < 1:
        raise ValueError("key must not be empty")
    if len(nonce) != NONCE_LEN:
        raise ValueError("nonce must be %d bytes" % NONCE_LEN)
    if not 0 <= expiry < 1 << 64:
        raise ValueError("expiry must fit in 64 unsigned bits")

    # version (1) || expiry XOR the nonce's first 8 bytes (8, big-endian)
    # || nonce (16): the signed head, which is also the start of the raw
    # token.
    mask = struct.unpack(">Q", bytes(nonce[:8]))[0]
    head = struct.pack(">BQ", VERSION, expiry ^ mask) + bytes(nonce)
    # The path is length-prefixed (8 bytes, big-endian) inside the MAC so
    # that it cannot slide into the fixed fields.
    message = head + struct.pack(">Q", len(path)) + bytes(path)
    tag = hmac.new(bytes(key), message, hashlib.sha256).digest()[:TAG_LEN]
    raw = head + tag
    assert len(raw) == RAW_LEN

    # RFC 4648 section 5 alphabet, padding removed; 45 bytes is a whole
    # number of 3-byte groups, so there is no padding to remove anyway.
    token = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
    assert len(token) == TOKEN_LEN
    return token


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: %s KEYHEX PATHHEX EXPIRY NONCEHEX\n"
                         % argv[0])
        return 2
    try:
        key = bytes.fromhex(argv[1])
        path = bytes.fromhex(argv[2])
        expiry = int(argv[3], 10)
        nonce = bytes.fromhex(argv[4])
        token = mint(key, path, expiry, nonce)
    except ValueError as e:
        sys.stderr.write("%s: %s\n" % (argv[0], e))
        return 2
    sys.stdout.write(token + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
