# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The output filter's 302 is the fixup's 302 (issue 19 item 6).

A first view of a PDF made by a handler (CGI, PHP-FPM, a proxied back end)
is answered with R1's 302 after the handler ran; its answer is thrown away,
and with it every header of its own.  The 302 must carry the header names
of the fixup's 302 for a static PDF, in the same number (one Set-Cookie:
the module's), with the same values where they do not depend on the URL,
and an empty body: nothing of the handler's answer (its Content-Type,
Content-Disposition, Cache-Control, Expires, Set-Cookie, ETag,
Last-Modified, Content-Language, Link, X-Powered-By, a header of its own
making) leaks into it.  For a declared type and a sniffed one, a 200 and
another 2xx, GET and HEAD.

test_first_view.py checks the header names for one handler header; this
file covers the headers a real application sends.
"""

import pytest

import backends
import httpd
from checks import assert_redirect
from samplepdf import make_pdf

CONFIG = backends.DYNAMIC_SCOPES

# What a handler sends beside its PDF (the type aside).
OWN = [
    ("X-Custom", "from the handler"),
    ("Content-Disposition", 'inline; filename="report.pdf"'),
    ("Cache-Control", "public, max-age=600"),
    ("Expires", "Thu, 01 Jan 2037 00:00:00 GMT"),
    ("Set-Cookie", "app_session=abc123; Path=/"),
    ("ETag", '"handler-etag"'),
    ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
    ("Content-Language", "de"),
    ("Link", "</style.css>; rel=preload; as=style"),
]

# ?t=0 leaves the type out (the module sniffs %PDF-), ?st= sets the status.
CGI = r"""#!/usr/bin/python3
import os, sys
q = dict(p.split("=", 1)
         for p in os.environ.get("QUERY_STRING", "").split("&") if "=" in p)
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
if q.get("st"):
    out.write(b"Status: %%s\r\n" %% q["st"].encode())
if q.get("t") != "0":
    out.write(b"Content-Type: application/pdf\r\n")
for name, value in %(own)r:
    out.write(("%%s: %%s\r\n" %% (name, value)).encode())
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

PHP = r"""<?php
if (!empty($_GET['st'])) {
    http_response_code((int)$_GET['st']);
}
if (($_GET['t'] ?? '') === '0') {
    ini_set('default_mimetype', '');
    header_remove('Content-Type');
} else {
    header('Content-Type: application/pdf');
}
foreach (%(own)s as $h) {
    header($h[0] . ': ' . $h[1], false);
}
readfile(%(data)r);
"""

PATHS = {"cgi": "/prot/report.cgi", "php": "/prot/report.php",
         "proxy": "/api/own"}
OWN_NAMES = {n.lower() for n, _ in OWN} | {"x-powered-by"}


def php_array(pairs):
    return "[" + ", ".join("[%r, %r]" % p for p in pairs) + "]"


@pytest.fixture(scope="module")
def env(pool):
    s = pool.make("dynamic-302", modules=[httpd.cgi_module(), "proxy",
                                           "proxy_http", "proxy_fcgi"])
    php = backends.PhpFpm(s.root / "fpm")
    back = backends.HttpBackend()
    s.pdf = make_pdf("dynamic 302", pages=2)
    s.write("data/doc.pdf", s.pdf, base=s.root)
    data = str(s.root / "data" / "doc.pdf")
    s.write_pdf("prot/static.pdf", "static")
    s.write("prot/report.cgi", CGI % {"data": data, "own": OWN}, mode=0o755)
    s.write("prot/report.php", PHP % {"data": data, "own": php_array(OWN)})

    @back.route("/own")
    def own(h, q, head_only):
        headers = [] if q.get("t") == ["0"] else [
            ("Content-Type", "application/pdf")]
        status = int(q["st"][0]) if "st" in q else 200
        h.send_body(status, headers + OWN, s.pdf, head_only)

    back.start()
    try:
        php.start()
        s.configure(CONFIG.replace("@PHP@", php.handler)
                    .replace("@BACKEND@", str(back.port)))
        s.start()
        yield s
    finally:
        php.stop()
        back.stop()


def names(r):
    """Header names, lower case, with their repeats, Date aside."""
    return sorted(n.lower() for n, _ in r.headers if n.lower() != "date")


def assert_like_the_fixups(env, r, static):
    assert names(r) == names(static), (
        "filter 302: %s\nfixup 302:  %s\n%r" % (names(r), names(static), r))
    for name in set(names(static)) - {"location", "set-cookie"}:
        assert r.get_all(name) == static.get_all(name), (name, r, static)
    leaked = OWN_NAMES & set(names(r)) - set(names(static))
    assert not leaked, "the handler's own headers: %s" % sorted(leaked)
    for value in r.get_all("Set-Cookie"):
        assert "app_session" not in value, r
    assert "pdf" not in (r.get("Content-Type") or "").lower(), r
    assert r.rest == b"", "the 302 has a body: %r" % r.rest[:200]


def cases():
    out = []
    for kind in PATHS:
        for query, label in (("q=1", "typed"), ("q=1&t=0", "sniffed"),
                             ("q=1&st=203", "typed-203")):
            out.append(pytest.param(kind, query, id="%s-%s" % (kind,
                                                               label)))
    return out


@pytest.mark.parametrize("kind,query", cases())
def test_filter_302_is_the_fixups_302(env, kind, query):
    static = env.get("/prot/static.pdf?" + query)
    assert_redirect(env, static, "/prot/static.pdf", query=query)
    path = PATHS[kind]
    r = env.get(path + "?" + query)
    assert_redirect(env, r, path, query=query, secret=env.secret)
    assert_like_the_fixups(env, r, static)


@pytest.mark.parametrize("kind", list(PATHS))
def test_filter_302_to_head_is_the_fixups_302(env, kind):
    static = env.head("/prot/static.pdf?q=1")
    assert static.status == 302, static
    path = PATHS[kind]
    r = env.head(path + "?q=1")
    assert_redirect(env, r, path, query="q=1")
    assert_like_the_fixups(env, r, static)
