# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A handler's 1xx final answer in a protected scope is refused (issue 19).

httpd sends the body of a final answer whose status is below 200 (a CGI
script printing `Status: 100`, PHP's `http_response_code(100)`, an .asis
file with `Status: 103`), and browsers parse that body as the real
response, a PDF included.  SPEC section 2 ("Never a 1xx final answer"): in
a protected scope such an answer is refused with 502, the handler's body is
never sent, and the error log has one line at level error naming the URL
path and the status (PDFTOKEN00020); %{PDFTOKEN}e is `deny`.  Whatever the
body is: the refusal does not depend on the answer being PDF-like.

Outside a protected scope the same answers are what httpd sends without
the module, byte for byte: a twin server that does not load the module is
the reference.  An interim `100 Continue` (Expect: 100-continue) is not a
final answer and goes on as before.

NPH scripts, the other refusal, are in test_dynamic_edge.py.
"""

import re
import secrets
import socket

import pytest

import backends
import client
import httpd
from samplepdf import make_pdf

SCOPE = r"""
    Options +ExecCGI
    AddHandler cgi-script .cgi
    AddHandler send-as-is .asis
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
"""

CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
@SCOPE@
</Directory>
<Directory "@DOCROOT@/open">
@SCOPE@
</Directory>
"""

# The twin: the same directories, no module and no PdfToken directive.
BARE_CONFIG = r"""
<Directory "@DOCROOT@/open">
@SCOPE@
</Directory>
"""

# A CGI script that answers with a 1xx status and a body of its own.
CGI_1XX = r"""#!/usr/bin/python3
import sys
sys.stdin.buffer.read()
out = sys.stdout.buffer
out.write(b"Status: %(status)s\r\n%(type)s\r\n")
out.write(%(body)s)
"""

PHP_1XX = r"""<?php
http_response_code(%(code)d);
%(type)s
%(body)s
"""

# The answers, by file name: (kind, 1xx status, Content-Type or None, body
# source: "pdf" or "html").
ANSWERS = {
    "s100.cgi": ("cgi", 100, "application/pdf", "pdf"),
    "s102.cgi": ("cgi", 102, "text/html", "html"),
    "s100.php": ("php", 100, "application/pdf", "pdf"),
    "s103.php": ("php", 103, None, "pdf"),
    "s103.asis": ("asis", 103, "application/pdf", "pdf"),
    "s100.asis": ("asis", 100, None, "html"),
}

HTML = b"<p>handler body 5f0c1d</p>\n"

# An error-log line at level error or worse.
SEVERE = re.compile(r"\] \[[a-z_0-9]+:(error|crit|alert|emerg)\] ")


def write_answers(s, directory, pdf, pdf_path):
    for name, (kind, status, ctype, body) in ANSWERS.items():
        data = pdf if body == "pdf" else HTML
        if kind == "cgi":
            text = CGI_1XX % {
                "status": status,
                "type": "Content-Type: %s\\r\\n" % ctype if ctype else "",
                "body": ("open(%r, 'rb').read()" % pdf_path
                         if body == "pdf" else repr(HTML))}
            s.write("%s/%s" % (directory, name), text, mode=0o755)
        elif kind == "php":
            text = PHP_1XX % {
                "code": status,
                "type": ("header('Content-Type: %s');" % ctype if ctype else
                         "ini_set('default_mimetype', '');\n"
                         "header_remove('Content-Type');"),
                "body": ("readfile(%r);" % pdf_path if body == "pdf"
                         else "echo %r;" % HTML.decode())}
            s.write("%s/%s" % (directory, name), text)
        else:
            head = b"Status: %d Interim\n" % status
            if ctype:
                head += b"Content-Type: %s\n" % ctype.encode()
            s.write("%s/%s" % (directory, name), head + b"\n" + data)
    s.write(directory + "/echo.cgi", ECHO, mode=0o755)


# Reads the request body and says how long it was: for Expect.
ECHO = r"""#!/usr/bin/python3
import sys
n = len(sys.stdin.buffer.read())
sys.stdout.write("Content-Type: text/plain\r\n\r\nread %d bytes\n" % n)
"""


def bare_base_config(s):
    """The harness's base configuration without the module: no
    LoadModule for it, no PdfToken directive, no per-module log level."""
    out = []
    for line in s.base_config().splitlines():
        if line.startswith("LoadModule pdftoken_module") \
                or line.startswith("PdfToken"):
            continue
        if line.startswith("LogLevel"):
            line = "LogLevel notice"
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def env(pool, workdir):
    mods = [httpd.cgi_module(), "proxy", "proxy_fcgi", "asis"]
    s = pool.make("refusals", modules=mods)
    bare = pool.make("refusals-bare", modules=mods)
    php = backends.PhpFpm(workdir / "test_dynamic_refusals-fpm")
    pdf = make_pdf("refused 1xx", pages=2)
    for srv in (s, bare):
        srv.pdf = pdf
        srv.write("data/doc.pdf", pdf, base=srv.root)
        pdf_path = str(srv.root / "data" / "doc.pdf")
        for d in ("prot", "open"):
            write_answers(srv, d, pdf, pdf_path)
        srv.write("prot/page.html", HTML)
    php.start()
    try:
        scope = SCOPE.replace("@PHP@", php.handler)
        s.configure(CONFIG.replace("@SCOPE@", scope))
        s.start()
        bare.configure(bare_base_config(bare)
                       + BARE_CONFIG.replace("@SCOPE@", scope), base=False)
        # What configure(base=True) would have recorded, so that start()
        # waits for mod_cgid's socket as it does for the other servers.
        bare.base_used, bare.body = True, ""
        bare.start()
        yield {"srv": s, "bare": bare}
    finally:
        php.stop()


def logged(s, method, target, headers=()):
    """One request tagged for the access log: (response, PDFTOKEN, the
    error-log text written while it was served)."""
    offset = s.error_log_size()
    tid = "ref-" + secrets.token_hex(6)
    r = s.request(method, target, headers=[("X-Test-Id", tid)]
                  + list(headers))
    # The access log line is written after every error-log line of the
    # request: once it is there, so are they.
    status, decision = s.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    return r, decision, s.error_log_since(offset)


# Not compared: Date, and the framing.  Whether httpd sends a CGI script's
# short answer with Content-Length or chunked depends on whether the end of
# the script's output came in the same read as its body (measured without
# the module: 60 requests to one script, about one in six with
# Content-Length, the rest chunked, under both MPMs).
NOT_COMPARED = ("date", "content-length", "transfer-encoding")


def comparable(r):
    """(status line, headers but Date and framing, body with chunking
    undone).  Server is compared too: the module adds no product token to
    it, under ServerTokens Full (httpd's default, the harness's) or any
    other."""
    status_line = r.raw_head.split(b"\r\n")[0]
    headers = [(n, v) for n, v in r.headers
               if n.lower() not in NOT_COMPARED]
    rest = r.rest
    if "chunked" in (r.get("Transfer-Encoding") or "").lower():
        rest = client.dechunk(rest)
    return status_line, headers, rest


# ------------------------------------------------- protected: refused

@pytest.mark.parametrize("name", sorted(ANSWERS))
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_1xx_final_answer_in_protected_scope_is_a_502(env, name, method):
    s = env["srv"]
    kind, status, _, _ = ANSWERS[name]
    path = "/prot/" + name
    r, decision, log = logged(s, method, path + "?id=7")
    assert r.status == 502, r
    # Nothing of the handler's answer: not its status line, not its body.
    assert b"%PDF" not in r.raw, "the handler's PDF was sent: %r" % r
    assert HTML not in r.raw, "the handler's body was sent: %r" % r
    assert not re.search(rb"^HTTP/1\.[01] 1\d\d", r.raw), r
    assert (r.get("Content-Type") or "").split(";")[0] != \
        "application/pdf", r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == [], r
    assert decision == "deny", decision
    lines = [line for line in log.splitlines() if "PDFTOKEN00020" in line]
    assert len(lines) == 1, \
        "want one PDFTOKEN00020 line, got:\n" + (log or "(empty log)")
    line = lines[0]
    assert "[pdftoken:error]" in line, line
    # That line alone: nothing else at error level, from any module.
    errors = [e for e in log.splitlines() if SEVERE.search(e)]
    assert errors == [line], "\n".join(errors)
    after = line.split("PDFTOKEN00020", 1)[1]
    assert path in after, "the line does not name %s: %s" % (path, line)
    assert re.search(r"(?<![\d.])%d(?!\d)" % status,
                     after.replace(path, "")), \
        "the line does not name the status %d: %s" % (status, line)


def test_1xx_refusal_is_the_same_on_every_request(env):
    """Not a first-request effect: the script is refused each time."""
    s = env["srv"]
    for _ in range(3):
        r, decision, _ = logged(s, "GET", "/prot/s100.cgi")
        assert r.status == 502 and b"%PDF" not in r.raw, r
        assert decision == "deny"


# ------------------------------------- unprotected: httpd's own answer

@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_1xx_final_answer_in_unprotected_scope_is_what_httpd_sends(env,
                                                                   name):
    """The control: with the module loaded, an unprotected scope gives the
    1xx answer exactly as a server without the module does (headers in
    order, Date and framing aside; the body once chunking is undone)."""
    path = "/open/" + name
    got = env["srv"].get(path + "?id=7")
    want = env["bare"].get(path + "?id=7")
    kind, status, _, body = ANSWERS[name]
    # The reference really is the 1xx answer with the handler's body.
    assert want.status == status, want
    assert (b"%PDF" if body == "pdf" else HTML) in want.rest, want
    assert comparable(got) == comparable(want), (got, want)


def test_server_header_names_no_module(env):
    """Loading the module adds no product token to Server: under
    ServerTokens Full (httpd's default, the harness's) a page of a
    protected scope names what a server without the module names."""
    got = env["srv"].get("/prot/page.html")
    want = env["bare"].get("/prot/page.html")
    assert got.status == want.status == 200, (got, want)
    assert got.body == want.body == HTML
    assert want.get("Server"), want
    assert got.get("Server") == want.get("Server"), (got, want)
    assert "pdftoken" not in got.get("Server").lower(), got


# ---------------------------------------------- interim 100 Continue

def expect_continue(s, path, body):
    """POST with Expect: 100-continue, the body sent only once the interim
    answer came; returns (interim head, final raw answer)."""
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=20)
    try:
        sock.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      "Content-Type: application/x-www-form-urlencoded\r\n"
                      "Content-Length: %d\r\nExpect: 100-continue\r\n"
                      "Connection: close\r\n\r\n"
                      % (path, s.port, len(body))).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "closed before any answer: %r" % data
            data += chunk
        interim, _, rest = data.partition(b"\r\n\r\n")
        sock.sendall(body)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return interim, rest
    finally:
        sock.close()


def test_interim_100_continue_in_protected_scope_goes_on(env):
    s = env["srv"]
    interim, rest = expect_continue(s, "/prot/echo.cgi", b"a=1&b=2")
    assert re.match(rb"HTTP/1\.1 100 ", interim), interim
    final = client.Response(b"POST /prot/echo.cgi", rest, "POST")
    assert final.status == 200, final
    assert final.body == b"read 7 bytes\n", final
