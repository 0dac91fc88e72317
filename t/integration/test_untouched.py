# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Untouched means untouched (SPEC section 2, section 6; issue 19 item 1).

A response of a protected scope that is not PDF-like must leave the module
byte for byte as httpd sends it without the module: the same status line,
the same headers (names, values, how many of each, in the same order) and
the same body, with mod_cache storing and serving it as before.

One server holds two scopes that are twins: /prot/ (PdfTokenProtect On)
and /open/ (no PdfTokenProtect), written from the same configuration
template and the same files (same bytes, same modification times, so the
same ETag and Last-Modified), plus /prot-api/ and /open-api/ proxied to the
same HTTP back end.  Each case sends the same request(s) to both and
compares the answers.  The two prefixes have the same length, so a path
that httpd writes into a body (an autoindex title, a redirect page) does
not change a Content-Length.

What is normalised before comparing, and why (nothing else is):

- `Date`: the time the answer was made; the two requests are a few
  milliseconds apart and may straddle a second.
- `Expires`, when it is an HTTP date: compared as its offset from the same
  answer's Date (mod_expires' "access plus N" counts from the request's
  own time), so `Expires` equal to `Date` (offset 0) still differs from an
  answer without `Expires`, or from one an hour ahead.
- `Age` (on a mod_cache hit): the seconds since the stored answer was made,
  counted on the wall clock; compared as present or absent only.
- Cases marked `paths`: the scope prefix `/prot` is read as `/open` in
  `Location`, `Content-Location` and the body, because httpd itself writes
  the request's path there (mod_dir's trailing-slash redirect, mod_autoindex's
  "Index of /prot/list").
- A multipart/byteranges boundary, which httpd derives from the request
  time and the child's pid.

ETag needs no normalisation: httpd 2.4's default FileETag is "MTime Size"
(no inode), and the twins' files have the same size and modification time.

The protected scope's PDFs are judged, not untouched, so they stay out of
the comparisons; test_protection_is_on checks that a PDF there does get the
302, so that the comparisons are known to run with protection on.
"""

import difflib
import email.utils
import os
import pwd
import re
import secrets
import socket
import struct
import time
import zlib

import pytest

import backends
import client
import httpd
from checks import assert_redirect

SCOPES = ("prot", "open")  # same length: see the module docstring
MTIME = 1700000000         # every file and directory of both twins

SCOPE_TEMPLATE = r"""
<Directory "@DOCROOT@/{scope}">
    {protect}
    Options +ExecCGI +Includes +Indexes
    AddHandler cgi-script .cgi
    AddHandler send-as-is .asis
    AddType text/html .shtml
    AddOutputFilter INCLUDES .shtml
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
</Directory>
<Directory "@DOCROOT@/{scope}/e">
    ErrorDocument 404 /{scope}/e/notfound.html
</Directory>
<Directory "@DOCROOT@/{scope}/z">
    AddOutputFilterByType DEFLATE text/html text/plain text/css
    AddOutputFilterByType DEFLATE application/javascript application/json
    AddOutputFilterByType DEFLATE image/svg+xml
</Directory>
<Directory "@DOCROOT@/{scope}/x">
    ExpiresActive On
    ExpiresByType text/css "access plus 1 hour"
    ExpiresByType image/png "access plus 1 day"
    ExpiresDefault "access plus 10 minutes"
</Directory>
<Directory "@DOCROOT@/{scope}/h">
    Header set X-Set "one"
    Header append X-App "a"
    Header append X-App "b"
    Header add X-Multi "1"
    Header add X-Multi "2"
    Header always set X-Always "yes"
    Header set Cache-Control "public, max-age=60"
</Directory>
ProxyPass "/{scope}-api/" "http://127.0.0.1:@BACKEND@/"
<Location "/{scope}-api/">
    {protect}
</Location>
CacheEnable disk /{scope}/cached
CacheEnable disk /{scope}-api/cached
"""

# mod_cache: the default CacheQuickHandler On in the main server, and a
# name-based virtual host with CacheQuickHandler Off (its requests carry
# Host: noquick.test); the first virtual host is the default one.  PHP's
# flush() reaches the client (flushpackets=on) for the staged PHP case.
CONFIG = r"""
<Proxy "@PHPWORKER@">
    ProxySet flushpackets=on
</Proxy>
CacheRoot "@ROOT@/cache"
CacheHeader On
CacheDirLevels 1
CacheDirLength 2
<VirtualHost 127.0.0.1:@PORT@>
    ServerName 127.0.0.1
</VirtualHost>
<VirtualHost 127.0.0.1:@PORT@>
    ServerName noquick.test
    CacheQuickHandler Off
</VirtualHost>
""" + "".join(SCOPE_TEMPLATE.format(
    scope=s, protect="PdfTokenProtect On" if s == "prot"
    else "# the twin: no PdfTokenProtect") for s in SCOPES)

HTML = ("<!DOCTYPE html>\n<html><head><title>twin</title>"
        "<link rel=stylesheet href=style.css></head>\n<body>\n"
        + "<p>An ordinary page, the same in both scopes.</p>\n" * 60
        + "</body></html>\n")
CSS = "body { margin: 0 auto; max-width: 40em; }\n" * 40
JS = "function hello(n) { return 'hello ' + n; }\n" * 40
TXT = "".join("line %03d of some plain notes\n" % i for i in range(100))
JSON = '{"items": [%s]}\n' % ", ".join('{"n": %d}' % i for i in range(80))
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
       '<rect width="10" height="10" fill="teal"/></svg>\n')

SSI = """<html><body>
<!--#set var="greeting" value="hello from SSI" -->
<p><!--#echo var="greeting" --></p>
<!--#include virtual="inc.html" -->
<!--#include virtual="hello.cgi" -->
<p>inc.html is <!--#fsize file="inc.html" --></p>
</body></html>
"""

# Every CGI script is "staged": with a request header X-Go: NAME it writes
# its head and first part, then waits (at most 10 s) until the client has
# received the answer's head, which the test signals by creating
# GODIR/NAME, and only then writes the rest and ends.  Without that, httpd
# itself answers the same script sometimes with a Content-Length and
# sometimes chunked, whatever Content-Length the script sent: its
# CONTENT_LENGTH filter computes one when the script has already ended by
# the time it reads the pipe (measured on the twin alone: hello.cgi 25
# chunked and 5 with Content-Length in 30 requests).  Staged, a script is
# answered chunked every time, and an answer held back until the script
# ends shows as such.  (A header, not the query: mod_cache's key must stay
# the same.)  Without X-Go (HEAD, mod_deflate and mod_cache read a script's
# output to its end anyway; an SSI include) it does not wait.
CGI_TEMPLATE = r"""#!/usr/bin/python3
import os, re, sys, time
out = sys.stdout.buffer
out.write(%(head)r + b"\r\n")
out.write(%(first)r)
out.flush()
go = re.sub(r"[^0-9a-f]", "", os.environ.get("HTTP_X_GO", ""))[:32]
if go:
    path = os.path.join(%(godir)r, go)
    deadline = time.time() + 10
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.01)
    if not os.path.exists(path):
        out.write(b"never released\n")
for i in range(%(lines)d):
    out.write(b"streamed line %%04d %%s\n" %% (i, b"." * 80))
    if i %% 50 == 0:
        out.flush()
"""

FIRST_PART = b"".join(b"first part, line %04d %s\n" % (i, b"." * 70)
                      for i in range(40))

CGI_SCRIPTS = {
    # name: (head, first part, streamed lines after it)
    "hello": (b"Content-Type: text/html; charset=utf-8\r\n",
              b"<p>hello from CGI</p>\n", 0),
    # Headers a script chose: none may be added to, merged or removed.
    "headers": (b"Content-Type: application/json\r\n"
                b"Cache-Control: public, max-age=300\r\n"
                b"Vary: Cookie\r\n"
                b"Set-Cookie: a=1; Path=/\r\n"
                b"Set-Cookie: b=2; Path=/\r\n"
                b"X-Script: yes\r\n"
                b"Content-Length: 12\r\n", b'{"ok": true}', 0),
    # No Content-Type at all, a body that is not a PDF.
    "notype": (b"X-Script: notype\r\n",
               b"just some bytes, no type, not a PDF\n", 0),
    "fresh": (b"Content-Type: text/html\r\nCache-Control: max-age=600\r\n",
              b"<p>cacheable CGI</p>\n", 0),
    # Streamed, about 40 KB.
    "stream": (b"Content-Type: text/plain\r\n", FIRST_PART, 400),
    "notype-stream": (b"X-Script: no type\r\n", FIRST_PART, 400),
}


def cgi_script(name, godir):
    head, first, lines = CGI_SCRIPTS[name]
    return CGI_TEMPLATE % {"head": head, "first": first, "lines": lines,
                           "godir": str(godir)}


PHP_PAGE = r"""<?php
header('Cache-Control: max-age=60');
header('X-App: php');
echo "<p>hello from php</p>\n";
flush();
echo str_repeat("php line, the same in both scopes\n", 300);
"""

# Staged like the CGI scripts (X-Go: NAME).
PHP_STREAM = r"""<?php
header('Content-Type: text/plain; charset=utf-8');
for ($i = 0; $i < 40; $i++) {
    printf("first part, line %04d %s\n", $i, str_repeat('.', 70));
}
flush();
$go = substr(preg_replace('/[^0-9a-f]/', '', $_SERVER['HTTP_X_GO'] ?? ''),
             0, 32);
if ($go !== '') {
    $path = '@GODIR@/' . $go;
    $deadline = microtime(true) + 10;
    while (!file_exists($path) && microtime(true) < $deadline) {
        usleep(10000);
        clearstatcache();
    }
    if (!file_exists($path)) {
        echo "never released\n";
    }
}
for ($i = 0; $i < 400; $i++) {
    printf("streamed line %04d %s\n", $i, str_repeat('.', 80));
}
"""

PHP_JSON = r"""<?php
header('Content-Type: application/json');
echo json_encode(['php' => true, 'n' => range(1, 20)]), "\n";
"""


def png():
    """A real 4x4 PNG."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    raw = b"".join(b"\x00" + b"\x10\x80\xf0" * 4 for _ in range(4))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def scope_files(godir):
    """Relative path -> (bytes or str, mode) of one twin; the streaming
    scripts wait for their release in `godir`."""
    f = {
        "page.html": HTML, "style.css": CSS, "app.js": JS,
        "pic.png": png(), "notes.txt": TXT, "data.json": JSON,
        "logo.svg": SVG, "README": "no extension, no type, not a PDF\n",
        "list/a.txt": "a\n", "list/b.html": "<p>b</p>\n",
        "list/sub/c.css": CSS, "idx/index.html": HTML,
        "e/notfound.html": "<p>an error page of our own</p>\n",
        "page.asis": "Status: 200 OK\nContent-Type: text/html\n"
                     "X-Asis: yes\n\n<p>sent as is</p>\n",
        "page.shtml": SSI, "inc.html": "<p>included</p>\n",
        "page.php": PHP_PAGE, "data.php": PHP_JSON,
        "z/page.html": HTML, "z/style.css": CSS, "z/pic.png": png(),
        "z/page.php": PHP_PAGE,
        "x/style.css": CSS, "x/pic.png": png(), "x/page.html": HTML,
        "h/page.html": HTML,
        "cached/page.html": HTML,
        "cached/quick.html": HTML, "cached/noquick.html": HTML,
        "cached/quick.css": CSS, "cached/noquick.css": CSS,
        "cached/page.php": PHP_PAGE,
    }
    out = {k: (v, 0o644) for k, v in f.items()}
    for rel in ("hello.cgi", "headers.cgi", "notype.cgi", "stream.cgi",
                "notype-stream.cgi", "x/hello.cgi", "h/hello.cgi",
                "z/stream.cgi", "cached/fresh.cgi"):
        name = rel.rpartition("/")[2][:-len(".cgi")]
        out[rel] = (cgi_script(name, godir), 0o755)
    out["stream.php"] = (PHP_STREAM.replace("@GODIR@", str(godir)), 0o644)
    return out


def add_backend_routes(back):
    """The proxied back end's non-PDF answers."""
    page = HTML.encode()

    @back.route("/page")
    def page_route(h, q, head_only):
        if h.headers.get("If-None-Match") == '"b1"':
            h.send_response(304)
            h.send_header("ETag", '"b1"')
            h.end_headers()
            return
        h.send_body(200, [("Content-Type", "text/html; charset=utf-8"),
                          ("ETag", '"b1"'),
                          ("Last-Modified",
                           email.utils.formatdate(MTIME, usegmt=True)),
                          ("Cache-Control", "public, max-age=30"),
                          ("X-Backend", "page")], page, head_only)

    @back.route("/data")
    def data_route(h, q, head_only):
        h.send_body(200, [("Content-Type", "application/json")],
                    JSON.encode(), head_only, chunked=True)

    @back.route("/notype")
    def notype_route(h, q, head_only):
        h.send_body(200, [("X-Backend", "notype")],
                    b"no type here, and not a PDF either\n", head_only)

    for name in ("/cached/quick", "/cached/noquick"):
        @back.route(name)
        def cached_route(h, q, head_only):
            h.send_body(200, [("Content-Type", "text/plain"),
                              ("Cache-Control", "max-age=600")],
                        b"cacheable back-end answer\n", head_only)


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("untouched", modules=[
        httpd.cgi_module(), "proxy", "proxy_http", "proxy_fcgi",
        "autoindex", "include", "asis", "filter", "deflate", "expires",
        "cache", "cache_disk"])
    php = backends.PhpFpm(s.root / "fpm")
    back = backends.HttpBackend()
    add_backend_routes(back)
    for scope in SCOPES:
        for rel, (data, mode) in scope_files(s.root / "go").items():
            s.write("%s/%s" % (scope, rel), data, mode=mode)
        s.write_pdf("%s/doc.pdf" % scope, "judged, not untouched")
    # Same modification time everywhere: same ETag and Last-Modified, the
    # same dates in a listing.
    for scope in SCOPES:
        top = s.docroot / scope
        for d, dirs, files in os.walk(top):
            for name in files + dirs:
                os.utime(os.path.join(d, name), (MTIME, MTIME))
        os.utime(top, (MTIME, MTIME))
    s._mkdirs(s.root / "go")
    cache = s.root / "cache"
    cache.mkdir()
    if os.geteuid() == 0:
        www = pwd.getpwnam("www-data")
        os.chown(cache, www.pw_uid, www.pw_gid)
    back.start()
    try:
        php.start()
        s.configure(CONFIG.replace("@PHP@", php.handler)
                    .replace("@PHPWORKER@", php.handler[len("proxy:"):])
                    .replace("@BACKEND@", str(back.port)))
        s.start()
        yield s
    finally:
        php.stop()
        back.stop()


# ------------------------------------------------------------ the cases

class Case:
    """The same request(s) to both twins.

    path      below the scope: "page.html" is /prot/page.html and
              /open/page.html; "api/page" is /prot-api/page and
              /open-api/page
    method    GET or HEAD
    methods   the methods of successive requests to the same URL (mod_cache:
              ("GET", "GET")); default (method,)
    headers   request headers
    validator "etag" or "lm": a conditional request whose If-None-Match or
              If-Modified-Since comes from a GET of the twin first
    paths     httpd writes the request's path into the answer
    host      Host header (None: the default)
    staged    the script waits for the client (CGI_TEMPLATE); default:
              every GET of a CGI script but those under mod_deflate (the
              cases under mod_cache say staged=False: what mod_cache
              stores it reads to its end before passing it on; and httpd
              sends the head of a HEAD answer only once the script has
              ended, so a HEAD is never staged and goes to the streaming
              script, which httpd answers without a Content-Length every
              time: 100 in 100 under each MPM)
    want      checks on the twin's last answer (the setup does what the
              case is about): {header: substring} and "status"
    """

    def __init__(self, name, path, method="GET", headers=(), methods=None,
                 validator=None, paths=False, host=None, want=None,
                 staged=None):
        self.name, self.path, self.method = name, path, method
        self.methods = tuple(methods or (method,))
        if staged is None:
            staged = (method == "GET" and not path.startswith("z/")
                      and path.split("?")[0].endswith(".cgi"))
        self.staged = staged
        self.headers = list(headers)
        self.validator, self.paths, self.host = validator, paths, host
        self.want = dict(want or {})
        self.want.setdefault("status", 200)

    def url(self, scope):
        if self.path.startswith("api/"):
            return "/%s-api/%s" % (scope, self.path[4:])
        return "/%s/%s" % (scope, self.path)


GZ = [("Accept-Encoding", "gzip")]
HIT = {"X-Cache": "HIT"}


def cases():
    c = []
    # Static files of several types.
    for path in ("page.html", "style.css", "app.js", "pic.png", "notes.txt",
                 "data.json", "logo.svg", "README"):
        c.append(Case("static-" + path, path))
    c += [
        Case("404", "missing.html", want={"status": 404}),
        Case("dir-redirect", "list", paths=True, want={"status": 301}),
        Case("autoindex", "list/", paths=True,
             want={"Content-Type": "text/html"}),
        Case("autoindex-sub", "list/sub/", paths=True),
        Case("directory-index", "idx/"),
        Case("error-document", "e/missing.html",
             want={"status": 404, "Content-Type": "text/html"}),
        Case("asis", "page.asis", want={"X-Asis": "yes"}),
        Case("ssi", "page.shtml"),
        Case("cgi", "hello.cgi"),
        Case("cgi-own-headers", "headers.cgi", want={"Set-Cookie": "a=1"}),
        Case("cgi-stream", "stream.cgi",
             want={"Transfer-Encoding": "chunked"}),
        Case("cgi-stream-no-type", "notype-stream.cgi",
             want={"Transfer-Encoding": "chunked"}),
        Case("cgi-no-type", "notype.cgi"),
        Case("php", "page.php", want={"X-App": "php"}),
        Case("php-json", "data.php?x=1&y=2"),
        Case("php-stream", "stream.php", staged=True,
             want={"Transfer-Encoding": "chunked"}),
        Case("proxy", "api/page", want={"X-Backend": "page"}),
        Case("proxy-chunked", "api/data"),
        Case("proxy-no-type", "api/notype"),
        Case("proxy-404", "api/nothing", want={"status": 404}),
        # mod_deflate: compressed with Accept-Encoding, Vary either way.
        Case("deflate-html-gzip", "z/page.html", headers=GZ,
             want={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}),
        Case("deflate-css-gzip", "z/style.css", headers=GZ,
             want={"Content-Encoding": "gzip"}),
        Case("deflate-html-identity", "z/page.html",
             want={"Vary": "Accept-Encoding"}),
        Case("deflate-png-not-compressed", "z/pic.png", headers=GZ),
        Case("deflate-php-gzip", "z/page.php", headers=GZ,
             want={"Content-Encoding": "gzip"}),
        Case("deflate-cgi-stream-gzip", "z/stream.cgi", headers=GZ,
             want={"Content-Encoding": "gzip"}),
        Case("deflate-head-gzip", "z/page.html", method="HEAD",
             headers=GZ),
        # mod_expires: the same Expires and Cache-Control.
        Case("expires-css", "x/style.css",
             want={"Cache-Control": "max-age=3600"}),
        Case("expires-png", "x/pic.png",
             want={"Cache-Control": "max-age=86400"}),
        Case("expires-default-html", "x/page.html",
             want={"Cache-Control": "max-age=600"}),
        Case("expires-cgi", "x/hello.cgi",
             want={"Cache-Control": "max-age=600"}),
        Case("expires-304", "x/style.css", validator="etag",
             want={"status": 304}),
        # mod_headers.
        Case("headers-static", "h/page.html",
             want={"X-App": "a, b", "X-Always": "yes"}),
        Case("headers-cgi", "h/hello.cgi", want={"X-Set": "one"}),
        Case("headers-404-always", "h/missing.html",
             want={"status": 404, "X-Always": "yes"}),
        Case("headers-304", "h/page.html", validator="lm",
             want={"status": 304}),
        # Conditional requests.
        Case("304-if-none-match", "page.html", validator="etag",
             want={"status": 304}),
        Case("304-if-modified-since", "page.html", validator="lm",
             want={"status": 304}),
        Case("304-png", "pic.png", validator="etag", want={"status": 304}),
        Case("304-proxy", "api/page", validator="etag",
             want={"status": 304}),
        Case("200-etag-mismatch", "page.html",
             headers=[("If-None-Match", '"nope"')]),
        # HEAD.
        Case("head-html", "page.html", method="HEAD"),
        Case("head-png", "pic.png", method="HEAD"),
        Case("head-autoindex", "list/", method="HEAD", paths=True),
        Case("head-cgi", "stream.cgi", method="HEAD"),
        Case("head-cgi-no-type", "notype-stream.cgi", method="HEAD"),
        Case("head-php", "page.php", method="HEAD"),
        Case("head-proxy", "api/page", method="HEAD"),
        # Range on a non-PDF.
        Case("range", "notes.txt", headers=[("Range", "bytes=0-9")],
             want={"status": 206, "Content-Range": "bytes 0-9/"}),
        Case("range-suffix", "pic.png", headers=[("Range", "bytes=-20")],
             want={"status": 206}),
        Case("range-multi", "notes.txt",
             headers=[("Range", "bytes=0-9,100-109")],
             want={"status": 206, "Content-Type": "multipart/byteranges"}),
        Case("range-unsatisfiable", "notes.txt",
             headers=[("Range", "bytes=99999-")], want={"status": 416}),
    ]
    # mod_cache: the second request of the same URL is a HIT, in each
    # scope's own cache URLs, with the quick handler and without it.
    for host, quick in ((None, "quick"), ("noquick.test", "noquick")):
        # (A static file's URL has no query: mod_cache stores an answer
        # to a query only with an explicit expiry.)
        for path in ("cached/%s.html" % quick, "cached/%s.css" % quick,
                     "cached/fresh.cgi?" + quick, "cached/page.php?" + quick,
                     "api/cached/" + quick):
            # (Not staged: mod_cache reads what it stores to its end.)
            c.append(Case("cache-%s-%s" % (quick, path.split("?")[0]), path,
                          methods=("GET", "GET"), host=host, want=HIT,
                          staged=False))
    c.append(Case("cache-quick-head-after-get", "cached/page.html",
                  methods=("GET", "HEAD"), want=HIT))
    return c


CASES = cases()


# ------------------------------------------------------------ comparing

def _http_date(value):
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def normalise(r, scope, case):
    """(status line, [(name, value)], body) with only what may differ
    between the twins rewritten (see the module docstring)."""
    date = _http_date(r.get_all("Date")[0]) if r.get_all("Date") else None
    body = r.body
    headers = []
    boundary = None
    for name, value in r.headers:
        lname = name.lower()
        if lname == "content-type":
            m = re.search(r"boundary=([^;\s]+)", value)
            if m and value.lower().startswith("multipart/byteranges"):
                boundary = m.group(1)
    for name, value in r.headers:
        lname = name.lower()
        if lname == "date":
            value = "<Date>"
        elif lname == "expires":
            when = _http_date(value)
            if when is not None and date is not None:
                value = "<Date%+ds>" % round(when - date)
        elif lname == "age":
            value = "<age>"
        if boundary:
            value = value.replace(boundary, "<boundary>")
        if case.paths and scope == "prot" and lname in (
                "location", "content-location"):
            value = value.replace("/prot", "/open")
        headers.append((name, value))
    if boundary:
        body = body.replace(boundary.encode(), b"<boundary>")
    if case.paths and scope == "prot":
        body = body.replace(b"/prot", b"/open")
    return "%d %s" % (r.status, r.reason), headers, body


def describe(prot, open_):
    """The difference between two normalised answers, for a failure."""
    out = []
    if prot[0] != open_[0]:
        out.append("status: protected %r, twin %r" % (prot[0], open_[0]))
    a = ["%s: %s" % h for h in prot[1]]
    b = ["%s: %s" % h for h in open_[1]]
    if a != b:
        if sorted(a) == sorted(b):
            out.append("same headers in a different order")
        out.append("headers (- protected, + twin):\n" + "\n".join(
            line for line in difflib.ndiff(a, b)
            if line[:1] in "-+?"))
    if prot[2] != open_[2]:
        out.append("body: protected %d bytes, twin %d bytes%s" % (
            len(prot[2]), len(open_[2]),
            "" if len(prot[2]) != len(open_[2]) else " (same length)"))
    return "\n".join(out)


def check_want(case, r):
    """The twin does what the case is about (else the setup is wrong)."""
    assert r.status == case.want["status"], \
        "twin: status %d, want %d: %r" % (r.status, case.want["status"], r)
    for name, part in case.want.items():
        if name == "status":
            continue
        values = r.get_all(name)
        assert any(part in v for v in values), \
            "twin: no %s containing %r: %r" % (name, part, r)


def send(srv, case, method, scope, extra=()):
    """One request of the case to one twin.  A staged script is released
    (X-Go) once the answer's head has arrived; it must arrive before the
    script ends (the script gives up waiting after 10 s)."""
    headers = case.headers + list(extra)
    if not case.staged:
        return srv.request(method, case.url(scope), headers=headers,
                           host=case.host)
    go = secrets.token_hex(8)
    headers.append(("X-Go", go))
    head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (
        method, case.url(scope),
        case.host or "127.0.0.1:%d" % srv.port)
    head += "".join("%s: %s\r\n" % h for h in headers)
    head = (head + "Connection: close\r\n\r\n").encode("latin-1")
    data = b""
    waited = None
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(head)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if waited is None and b"\r\n\r\n" in data:
                (srv.root / "go" / go).touch()
                waited = time.monotonic() - start
    r = client.Response(head, data, method)
    # Released only once the head was in: a head held back until the
    # script ended comes after the script gave up ("never released").
    assert waited is not None and b"never released" not in r.body, \
        "%s %s: the head came only after the script ended (held back " \
        "%.1f s): %r" % (method, case.url(scope), waited or -1, r)
    return r


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_untouched_like_the_twin(srv, case):
    extra = []
    if case.validator:
        base = srv.request("GET", case.url("open"), host=case.host)
        assert base.status == 200, base
        if case.validator == "etag":
            etag = base.get("ETag")
            assert etag, "twin has no ETag: %r" % base
            extra = [("If-None-Match", etag)]
        else:
            lm = base.get("Last-Modified")
            assert lm, "twin has no Last-Modified: %r" % base
            extra = [("If-Modified-Since", lm)]
    problems = []
    for i, method in enumerate(case.methods):
        prot = send(srv, case, method, "prot", extra)
        twin = send(srv, case, method, "open", extra)
        if i == len(case.methods) - 1:
            check_want(case, twin)
        a = normalise(prot, "prot", case)
        b = normalise(twin, "open", case)
        if a != b:
            problems.append("request %d of %d (%s %s):\n%s\n\nprotected:"
                            "\n%r\n\ntwin:\n%r" % (
                                i + 1, len(case.methods), method,
                                case.url("prot"), describe(a, b), prot,
                                twin))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def test_protection_is_on(srv):
    """The protected scope does judge its PDFs: a first view is R1's 302,
    while the twin serves the same file as it is."""
    r = srv.get("/prot/doc.pdf")
    assert_redirect(srv, r, "/prot/doc.pdf", secret=srv.secret)
    twin = srv.get("/open/doc.pdf")
    assert twin.status == 200 and twin.body.startswith(b"%PDF-"), twin
    assert twin.get("Location") is None and not twin.get_all("Set-Cookie")
