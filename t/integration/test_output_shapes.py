# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Never dropped: every response shape is judged or sent (SPEC section 2,
issue 19 item 2).

httpd-tests' t/apache/passbrigade.t lost every response with the module
on: its handler sets no Content-Type, sends transient buckets and passes
them to r->output_filters->next, past the first filter.  Our own test
handler, shapes/mod_pdftoken_shapes.c (built here with apxs), sends a file
in the shape its query string names: one brigade or many; transient, heap,
pool or file buckets; pieces down to one byte; FLUSH buckets between
pieces or before the first byte; EOS with the last piece or alone; to
r->output_filters or past the first filter; with a Content-Type or none.

Each shape is requested in a protected directory and in an unprotected
twin that the same handler serves:

- not PDF-like: the protected answer is the twin's, status, every header
  but Date (in order) and body.  The framing is a header too: a body the
  module held while its first bytes could still become "%PDF-" must leave
  chunked when the twin's is chunked, not with a Content-Length;
- PDF-like (application/pdf; octet-stream with an inline disposition; no
  type and a body that begins with %PDF-, after whitespace): the first
  request gets R1's 302 (Location ending in '#', the cookie), and the
  follow-up with the cookie gets the twin's body inline.

A response that never comes fails with "hung", one that closes the
connection without a byte with "dropped", one followed by more bytes than
its Content-Length (what a handler passed past the first filter after the
302 replaced its answer) with "malformed answer".
"""

import socket
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from checks import assert_inline, assert_redirect
from samplepdf import make_pdf

SOURCE = Path(__file__).resolve().parent / "shapes" / "mod_pdftoken_shapes.c"
TIMEOUT = 5  # seconds for one answer; the server answers these in ms

CONFIG = """
LoadModule pdftoken_shapes_module "@SHAPES@"
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    SetHandler pdftoken-shapes
</Directory>
<Directory "@DOCROOT@/open">
    SetHandler pdftoken-shapes
</Directory>
"""

PDF = make_pdf("shapes", pages=1, padding=300)

# The files the handler sends (no extension: mod_mime types none of them,
# and no URL ends in .pdf, so only the output filter can judge them).
BODIES = {
    "pdf": PDF,
    "ws-pdf": b" \t\r\n" + PDF,   # the module's sniff skips whitespace
    "text": b"plain text, no PDF in here\n" * 20,
    "pct-pdf": b"%PDF",           # 4 bytes: could have become a PDF
    "blank": b" \n",              # whitespace alone, then the end
    "a": b"a",
    "empty": b"",                 # EOS alone
}

# The Content-Type (and Content-Disposition) the handler sets.
TYPES = {
    "none": {},
    "html": {"ct": "text/html"},
    "pdf": {"ct": "application/pdf"},
    "octet-named": {"ct": "application/octet-stream",
                    "cd": 'inline; filename="report.pdf"'},
    "octet-inline": {"ct": "application/octet-stream", "cd": "inline"},
}

# How the handler passes the body (parameters of mod_pdftoken_shapes.c).
SHAPES = {
    "heap": "b=h",
    "transient-eos-own": "b=t&eos=own",
    "pool-1byte": "b=p&n=1",
    "file": "b=f",
    "file-pieces-flush": "b=f&n=7&bb=many&fl=1&eos=own",
    "transient-1byte-brigades-flush": "b=t&n=1&bb=many&fl=1",
    "flush-first": "pre=1&b=h&n=2&bb=many",
    # t/apache/passbrigade.t's shape: no type, transient, many brigades,
    # past the first filter.
    "passbrigade": "b=t&n=3&bb=many&to=next",
    "next-1byte-flush-eos-own": "b=h&n=1&bb=many&fl=1&eos=own&to=next",
    "next-file-eos-own": "b=f&eos=own&to=next",
}


def pdf_like(ctype, body):
    if ctype in ("pdf", "octet-named", "octet-inline"):
        return True
    return ctype == "none" and BODIES[body].lstrip(b" \t\r\n") \
        .startswith(b"%PDF-")


def cases():
    out = []
    for shape in SHAPES:
        for body in BODIES:
            out.append((shape, "none", body))
        for ctype in ("html", "pdf", "octet-named"):
            for body in ("pdf", "text"):
                out.append((shape, ctype, body))
        out.append((shape, "pdf", "empty"))
        out.append((shape, "octet-inline", "pdf"))
    return out


CASES = cases()


def case_id(case):
    return "%s/%s/%s" % case


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def shapes_module(workdir):
    """mod_pdftoken_shapes.so, built with apxs in a directory of its own."""
    build = workdir / "shapes-build"
    build.mkdir(exist_ok=True)
    build.chmod(0o755)
    src = build / SOURCE.name
    src.write_bytes(SOURCE.read_bytes())
    try:
        p = subprocess.run(["apxs", "-c", "-Wc,-Wall", "-Wc,-Wextra",
                            src.name], cwd=str(build), capture_output=True,
                           timeout=120)
    except FileNotFoundError:
        raise AssertionError("apxs not found: install apache2-dev")
    so = build / ".libs" / "mod_pdftoken_shapes.so"
    if p.returncode != 0 or not so.exists():
        raise AssertionError("apxs -c %s failed (%d):\n%s" % (
            src, p.returncode, (p.stdout + p.stderr).decode("latin-1")))
    return so


@pytest.fixture(scope="module")
def server(pool, shapes_module):
    s = pool.make("shapes")
    for name, data in BODIES.items():
        s.write("prot/" + name, data)
        s.write("open/" + name, data)
    s.configure(CONFIG.replace("@SHAPES@", str(shapes_module)))
    s.start()
    return s


# ----------------------------------------------------------------- helpers

def fetch(server, target, what, cookies=None):
    """GET target; a hang or a dropped answer fails with what it was."""
    try:
        r = server.get(target, cookies=cookies, timeout=TIMEOUT)
    except socket.timeout:
        problem = "hung: no complete answer in %ds" % TIMEOUT
    except ConnectionError as e:
        problem = "dropped: %s" % e
    except AssertionError as e:
        # Bytes beyond the Content-Length, say: what a replaced answer's
        # handler still sent reached the client behind it.
        problem = "malformed answer: %s" % e
    else:
        problem = None
        if r.raw == b"":
            problem = "dropped: the connection closed without a byte"
        elif r.http09:
            problem = "not an HTTP answer: %r" % r.raw[:200]
    if problem:
        pytest.fail("%s, to %s (%s)" % (problem, target, what),
                    pytrace=False)
    return r


def comparable(r):
    """Status line, headers in order (Date aside) and the decoded body."""
    return (r.status, r.reason,
            [(n.lower(), v) for n, v in r.headers if n.lower() != "date"],
            r.body)


def query(shape, ctype):
    q = SHAPES[shape]
    for k, v in TYPES[ctype].items():
        q += "&%s=%s" % (k, urllib.parse.quote(v, safe="/"))
    return q


# ------------------------------------------------------------------- tests

def test_handler_shapes_build_and_serve(server):
    """The twin: the test handler alone sends every body in every shape."""
    for shape in SHAPES:
        for body, data in BODIES.items():
            r = fetch(server, "/open/%s?%s" % (body, SHAPES[shape]),
                      "unprotected twin")
            assert r.status == 200 and r.body == data, (shape, body, r)
            assert r.get("Content-Type") is None, r


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_shape_judged_or_sent(server, case):
    shape, ctype, body = case
    q = query(shape, ctype)
    what = "shape %s, type %s, body %s" % case
    twin = fetch(server, "/open/%s?%s" % (body, q), "unprotected twin, "
                 + what)
    assert twin.status == 200 and twin.body == BODIES[body], \
        "the handler itself failed: %r" % twin

    path = "/prot/" + body
    r = fetch(server, "%s?%s" % (path, q), "protected, " + what)
    if not pdf_like(ctype, body):
        assert comparable(r) == comparable(twin), (
            "not PDF-like, yet not as without the module (%s):\nprotected "
            "%r\ntwin %r" % (what, r, twin))
        return

    # PDF-like: the token step, then the twin's body inline.
    assert r.status == 302, "PDF-like, yet no 302 (%s): %r" % (what, r)
    _, cookie = assert_redirect(server, r, path, query=q)
    r2 = fetch(server, r.location_target(), "follow-up with the cookie, "
               + what, cookies=[cookie])
    assert_inline(r2, twin.body, content_type=TYPES[ctype].get("ct"))
