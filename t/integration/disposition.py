# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Content-Disposition as a browser reads it (RFC 6266, RFC 8187): what
the tests use to tell the name a forced download is saved under."""

import re
import urllib.parse

# RFC 8187 value-chars: attr-char or a percent escape.
EXT_VALUE_CHARS = r"(?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-Fa-f]{2})*"


def parse_content_disposition(value):
    """(disposition-type, {param-lowercase: value}) per RFC 6266.

    Quoted strings are unescaped; `filename*` is decoded from its RFC 8187
    ext-value into a str.  Fails on syntax a browser would not accept.
    """
    pos = 0
    n = len(value)

    def skip_ws():
        nonlocal pos
        while pos < n and value[pos] in " \t":
            pos += 1

    def token():
        nonlocal pos
        start = pos
        while pos < n and value[pos] not in ' \t;=",':
            pos += 1
        return value[start:pos]

    skip_ws()
    dtype = token().lower()
    assert dtype, "no disposition type in %r" % value
    params = {}
    while True:
        skip_ws()
        if pos >= n:
            break
        assert value[pos] == ";", "expected ';' at %d in %r" % (pos, value)
        pos += 1
        skip_ws()
        name = token().lower()
        assert name, "empty parameter name in %r" % value
        skip_ws()
        assert pos < n and value[pos] == "=", \
            "parameter %s without value in %r" % (name, value)
        pos += 1
        skip_ws()
        if pos < n and value[pos] == '"':
            pos += 1
            out = []
            while True:
                assert pos < n, "unterminated quoted string in %r" % value
                c = value[pos]
                if c == "\\":
                    out.append(value[pos + 1])
                    pos += 2
                elif c == '"':
                    pos += 1
                    break
                else:
                    out.append(c)
                    pos += 1
            v = "".join(out)
        else:
            v = token()
        assert name not in params, "parameter %s twice in %r" % (name, value)
        if name.endswith("*"):
            charset, _, rest = v.partition("'")
            _lang, _, encoded = rest.partition("'")
            assert charset.lower() == "utf-8", "charset %r" % charset
            assert re.fullmatch(EXT_VALUE_CHARS, encoded), \
                "bad ext-value %r" % v
            v = urllib.parse.unquote(encoded, encoding="utf-8",
                                     errors="strict")
        params[name] = v
    return dtype, params


def download_name(value):
    """The file name a browser would save under: filename* wins."""
    _, params = parse_content_disposition(value)
    return params.get("filename*", params.get("filename"))
