# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Browser end-to-end tests of mod_pdftoken: Debian's Chromium, Firefox ESR
and WebKitGTK.

This driver owns the server side; t/browser/cases.mjs owns the browser side
and is run once per browser: puppeteer-core for Chromium (CDP) and Firefox
(WebDriver BiDi); for WebKit, t/browser/webkit.mjs drives WebKitGTK's
MiniBrowser through WebKitWebDriver (W3C WebDriver classic, with
selenium-webdriver) behind the same page interface, under an Xvfb this
driver starts inside the network namespace and stops.  Each WebKit session
sends everything through a loopback proxy of its own (host names to
127.0.0.1, anything else to the sink, and the request holding of c6a/c6b
that WebDriver classic lacks); WebKit trusts the HTTPS site's certificate
for the run's host names (webkitgtk:browserOptions certificates).

Where WebKit cannot do what a case measures, the case measures that it
cannot, keeps every other check, and the table shows LIMIT (tag) instead
of ok, with the reason printed under the table: its pdf.js ignores #page=N
(c3, f2, f3: the unprotected control proves it), with JavaScript off its
viewer does not run (f5), and it spoke HTTP/1.1 through the host-name
proxy's tunnel (h1, h2).

    httpd     Debian's /usr/sbin/apache2 with the module, started through
              t/integration/harness.py on 127.0.0.1:<free port>; a second
              access log (logs/browser.log) records, per request, the
              PDFTOKEN decision, the Cookie header, Sec-Fetch-Site/-Dest,
              the Content-Disposition of the answer, the local port and
              the protocol (%H).  The same docroot is also served by a TLS
              virtual host on a port of its own with `Protocols h2
              http/1.1` (mod_ssl, mod_http2), as https://pdf.site.test:<port>
              (t/browser/https_site.py).
    test CA   a throw-away CA made per run with openssl, which signs the
              certificate of pdf.site.test and evil.site.test; the browsers
              trust it, and only it, through an NSS database (certutil):
              Chromium's under a HOME of the run's own, Firefox's in each
              profile.  No certificate check is turned off.
    names     pdf.site.test (the site), evil.site.test (a sibling host
              under the same registrable domain, site.test) resolve to
              127.0.0.1 inside the browsers only: Chromium's
              --host-resolver-rules, Firefox's network.dns.localDomains;
              the proxy sink is bypassed for them and nothing else.
    planter   https://evil.site.test:<port> and http://pdf.site.test:<port>
              (a network attacker answering the site's name over plain
              HTTP: cookies are not port-scoped), each a small server that
              fetches a real token from the site for the case's document
              and plants cookies carrying it.
    attacker  a tiny http.server on 127.0.0.1:<another free port>, addressed
              as http://localhost:<port>: another site for cookies.
    sink      an HTTP proxy on loopback that refuses everything: both
              browsers are pointed at it and loopback bypasses it, so a
              request for any other address lands here and is recorded.

As root, the whole run (httpd, attacker, sink, browsers) happens in a
network namespace of its own whose only interface is loopback (`unshare
--net`), so nothing can leave 127.0.0.1 whatever a browser tries; the
requests the browsers' own background services still attempt are caught by
the sink and listed in the `net` row.  Without root, the sink alone guards,
and any request it catches fails the run.

Every case runs in every browser; its documents live under /<browser>/<case>/
so that the access log tells the cases apart.  Cases c1-c8 run in the
default scope (PdfTokenFragment strip); d1-d3 are PDFs made by a handler
at a URL without .pdf (SPEC section 2, judged by the output filter), each
opened by a cross-site link with the attacker's fragment: d1 a PHP script
behind php-fpm8.2 (mod_proxy_fcgi, a unix socket; started inside the
network namespace like httpd), d2 an application behind ProxyPass
(mod_proxy_http to backends.HttpBackend on loopback), d3 a CGI script
(mod_cgid under event); each must end inline after one 302, and the
back end must have seen its own query without the token (checked here,
after the browser's run, from what each back end recorded); f1-f5 in scopes with
`PdfTokenFragment safe`: f1 opens a small HTML probe (PdfTokenTypes
text/html) once per row of t/browser/fragments.json, the sanitiser's rules
as a table, and compares the fragment the probe ends with to the row's
expected value; f2-f5 open real PDFs through the fragment page (kept
#page=3 shown by the viewer, hostile fragments dropped, JavaScript off);
f6 is the same visit as f2 in the default scope.

h1-h6 and p0-p3 are issue 13 and the HTTPS part of issue 14.  h1 and h2 are
c1 and d1 over HTTPS: a cross-site link to a static PDF and to a PHP
invoice with #FDF=javascript:alert(1) ends inline after one 302, over
HTTP/2.0 (the log's %H), with the cookie __Host-pdftoken_<8> (Secure,
HttpOnly, SameSite=Lax, Path=/, about 10 s) read from the browser's jar.
h3: a page on evil.site.test plants, by Set-Cookie and by document.cookie,
__Host-pdftoken_<8>=T and pdftoken_<8>=T with Domain=site.test, T a token
the module minted for the document a moment before (the planter's own
request, from 127.0.0.2, with the victim's User-Agent), then goes to the
tokenized URL with the attacker's fragment; h4 does the same from
http://pdf.site.test (no Domain=, and the __Host- one without Secure).
Neither may end inline: the log must say fallback (attachment), and the
table says what each engine did with each planted cookie.  The browser
must have refused the __Host- cookie (jar, page, Cookie header), except
as a LIMIT in an engine where the default PdfTokenBindAddress auto binds
tokens to the client address (WebKitGTK, whose jar takes both).  h5 and
h6 are h3 and h4 where PdfTokenBindAddress Off keeps SPEC's bare token,
the planter on the victim's own address: there a jar that takes the
cookie fails the case; KNOWN_HOLES records WebKitGTK's, and its two cells
show HOLE as long as they fail exactly so.  p0-p3
are the pile-up: an attacker page whose one click forces first requests
for the site's PDFs, one every 20 ms.  p0 measures, 24 PDFs per method in a
fresh browser, which way of forcing them makes the browser store the
module's cookies (popup windows navigated by window.open(url, name) or by
their location, the attacker's own window driven from a popup, cross-site
iframes, images), and p1-p3 use the method that stored the most among
those whose requests carried the cookies back (a cross-site image or
iframe does not send SameSite=Lax cookies).  Each of
p1-p3 starts a fresh browser, lets the site set its own session cookie,
then forces 300 first requests: p1 for one PDF over HTTP, p2 for 300
PDFs over HTTP, p3 for 300 PDFs over HTTPS.  After it the jar (read
through the automation API) may hold at most 8 module cookies for one
document (HTTP) or for the host (HTTPS), no Cookie header the log saw may
reach 8190 bytes, and the next cross-site link to a PDF must open inline;
p1 and p3 also keep the session cookie and send it with every request.
p2 measures the HTTP residual (cookies are per document there, so only
Max-Age and the browser's per-host cap bound them): whether the session
cookie survived is reported, not required.

m1 and m2 are the render matrix (t/browser/matrix.py): some 400 responses
(status, Content-Type, Content-Disposition, nosniff, body, .pdf URL), each
a mod_asis file so that httpd sends exactly its headers (checked before the
browsers start).  m1 navigates to each from a scope without the module and
records pdf / download / page / error; the outcome of every cell must equal
the checked-in recording, t/browser/render-matrix.tsv (a browser update
that renders a new cell fails here).  m2 navigates to the cells that some
engine renders as a PDF in the recording (every cell when recording: any
other passes the module untouched or as a forced download) in a
protected scope with #FDF=javascript:alert(1) appended: a cell may end in
the PDF viewer only on the tokenized URL with an empty fragment after a 302
and a pass with the matching cookie (the token step), and every cell that
any engine renders as a PDF (recording or this run) must end either
through the token step or as a download (for an error status: the forced
download, which both engines refuse with an error).  The run prints a table
(case x browser -> outcome), the browser versions and a closing
`N passed, N failed` line, and exits non-zero on any failure.  Chromium
and Firefox run one after the other while WebKit runs beside them (a run
mostly waits on page loads, timers and WebKit's one-command-at-a-time
WebDriver).  Nothing is
skipped: a missing browser or puppeteer-core is a failure (`make browser`
installs them).

    PDFTOKEN_KEEP_TMP=1        keep the work directory (logs, profiles)
    PDFTOKEN_BROWSER_SHOTS=DIR save every screenshot taken into DIR
    PDFTOKEN_WEBKIT_DEBUG=1    log WebKit's WebDriver commands and proxy
    --browser NAME             run one browser only (for debugging)
    --serial                   run the engines one after the other, not
                               side by side
    --case ID                  run only this case, repeatable (debugging)
    --record-matrix            run m1 and m2 only, in every browser, and
                               write t/browser/render-matrix.tsv from m1
    --matrix-tabs N            tabs the matrix uses at once (default 4)
    --matrix-cell ID           run only this matrix cell, repeatable
                               (debugging); with --record-matrix, record
                               only these cells of matrix.py (new ones
                               included) and keep every other row as
                               recorded, with the same browser versions
"""

import argparse
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

import backends  # noqa: E402
import harness  # noqa: E402
import https_site  # noqa: E402
import matrix  # noqa: E402
import pdftoken_ref  # noqa: E402

BROWSERS = {
    "chromium": "/usr/bin/chromium",
    "firefox": "/usr/lib/firefox-esr/firefox-esr",
    # WebKitGTK's MiniBrowser, through its W3C WebDriver server (webkit.mjs)
    "webkit": "/usr/bin/WebKitWebDriver",
}
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
NODE_TIMEOUT = 900  # seconds for one browser's whole run
MATRIX_TABS = 4
MATRIX_CASE_TIMEOUT = 240  # seconds for one scope of the matrix ...
MATRIX_TIMEOUT_CELLS = 281  # ... of this many cells (more: in proportion)
# WebKit answers one WebDriver command at a time per MiniBrowser and loads
# its pdf.js for every PDF: its matrix takes about twice as long.
WEBKIT_SLOWER = 2

# Case id -> title, in the order of the summary table.
CASES = [
    ("c1", "link on attacker page to doc.pdf#x=javascript:..."),
    ("c2a", "location.href= from attacker script"),
    ("c2b", "typed URL (direct navigation)"),
    ("c3", "doc.pdf#page=2 (cost: opens on page 1)"),
    ("c4", "probe.html#x=javascript:alert(1) reports hash"),
    ("c5", "cookies blocked: download, no loop"),
    ("c6a", "two tabs open the same PDF at once"),
    ("c6b", "same PDF twice in same-site iframes"),
    ("c7a", "own stale tokenized URL (bookmark) heals"),
    ("c7b", "stale tokenized link from elsewhere heals"),
    ("c8", "cross-site iframe from attacker page"),
    ("d1", "PHP-FPM invoice.php?id=3 (no .pdf): 302, inline"),
    ("d2", "proxied app /api/reports/7: 302, inline"),
    ("d3", "CGI /cgi/report (no extension): 302, inline"),
    ("f1", "PdfTokenFragment safe: fragments.json table via probe"),
    ("f2", "safe: doc.pdf#page=3 typed, opens on page 3"),
    ("f3", "safe: link to doc.pdf#page=3&x=javascript:..."),
    ("f4", "safe: link to doc.pdf#FDF=javascript:..."),
    ("f5", "safe, JavaScript off: inline, empty fragment"),
    ("f6", "default (strip) scope: doc.pdf#page=3 -> 302, p.1"),
    ("h1", "HTTPS+h2: link to doc.pdf#FDF=...: 302, inline, __Host-"),
    ("h2", "HTTPS+h2: PHP invoice.php?id=3: 302, inline"),
    ("h3", "sibling host plants Domain= cookies: not inline"),
    ("h4", "plain-HTTP same name plants cookies: not inline"),
    ("h5", "h3 where PdfTokenBindAddress Off: not inline"),
    ("h6", "h4 where PdfTokenBindAddress Off: not inline"),
    ("p0", "pile-up: what stores the module's cookies (24 each)"),
    ("p1", "pile-up HTTP, 300 x one PDF: <= 8, session kept"),
    ("p2", "pile-up HTTP, 300 PDFs (residual: browser's cap)"),
    ("p3", "pile-up HTTPS, 300 PDFs: <= 8 for the host"),
    ("m1", "render matrix recorded = checked in"),
    ("m2", "protected matrix: nothing renders without the token step"),
    ("net", "no request left loopback"),
]

# Holes an engine opens that the case's configuration leaves open
# (PdfTokenBindAddress Off), measured and recorded here and in README's
# Limitations.  Such a cell shows HOLE, not ok, and
# does not fail the run while it fails exactly as recorded (every failure
# matches the pattern, and no script ran); when the engine changes (the
# case passes, or fails another way) the run fails, so that this record
# and README are brought up to date.
PLANTED_HOST_COOKIE = re.compile(
    r"^(access log: expected \[fallback\], got \[\"pass\"\]"
    r"|fallback disposition undefined"
    r"|the PDF is shown inline at "
    r"|the browser stored the planted __Host-pdftoken_"
    r"|the browser sent the planted __Host-pdftoken_"
    r"|the planter's page sees its __Host-pdftoken_)")
KNOWN_HOLES = {
    ("h5", "webkit"): (
        "jar takes sibling __Host-", PLANTED_HOST_COOKIE,
        "WebKitGTK's cookie jar (libsoup) ignores the __Host- prefix: a "
        "Domain=site.test cookie set by the sibling host evil.site.test "
        "under the module's __Host- name is stored and sent to "
        "pdf.site.test, so the planted token opens inline with the "
        "attacker's fragment (its pdf.js ignores the fragment, no script "
        "ran).  Only where PdfTokenBindAddress Off keeps SPEC's bare token: "
        "the default auto refuses it (h3).  README, Limitations."),
    ("h6", "webkit"): (
        "jar takes HTTP __Host-", PLANTED_HOST_COOKIE,
        "WebKitGTK's cookie jar (libsoup) ignores the __Host- prefix: a "
        "cookie set over plain HTTP under the module's __Host- name is "
        "stored and sent over HTTPS, so the planted token opens inline "
        "with the attacker's fragment (its pdf.js ignores the fragment, no "
        "script ran).  Only where PdfTokenBindAddress Off keeps SPEC's bare "
        "token: the default auto refuses it (h4).  README, Limitations."),
}


def judge_holes(table):
    """Mark the recorded holes that reproduced exactly; fail the ones
    that did not."""
    for key, (tag, pattern, _) in KNOWN_HOLES.items():
        r = table.get(key)
        if r is None:
            continue
        fails = r.get("failures") or []
        if r["ok"]:
            r["ok"] = False
            r["failures"] = fails + [
                "recorded hole did not reproduce (the engine changed): "
                "update KNOWN_HOLES in run.py and README's Limitations"]
        elif all(pattern.match(f) for f in fails):
            r["hole"] = tag


ATTACK = "#x=javascript:alert(document.domain)"
PROBE_ATTACK = "#x=javascript:alert(1)"
FRAGMENTS = HERE / "fragments.json"

LOG_FORMAT = (
    'LogFormat "%{usec}t %>s %{PDFTOKEN}e \\"%r\\" \\"%{Cookie}i\\" '
    '%{Sec-Fetch-Site}i %{Sec-Fetch-Dest}i \\"%{Content-Disposition}o\\" '
    '%{local}p %H" '
    'browser\n'
    'CustomLog "@ROOT@/logs/browser.log" browser\n')

# The probe: a protected HTML page that shows and reports the fragment it
# sees and, like the 2007 PDF plug-in, runs whatever follows "javascript:"
# in it.  report.txt sits beside it so that the report is logged.
PROBE_HTML = """<!doctype html>
<meta charset="utf-8"><title>fragment probe</title>
<p>location.hash = <output id="hash"></output></p>
<script>
var h = location.hash;
document.getElementById("hash").textContent = JSON.stringify(h);
fetch("report.txt?hash=" + encodeURIComponent(h)).catch(function () {});
var m = /javascript:(.*)$/.exec(decodeURIComponent(h));
if (m) { setTimeout(function () { eval(m[1]); }, 0); }
</script>
"""

# The f1 probe: a protected HTML page in a PdfTokenFragment safe scope that
# keeps what the fragment page handed it for the test to read.  It never
# runs or shows the fragment.
FRAGMENT_PROBE_HTML = """<!doctype html>
<meta charset="utf-8"><title>fragment table probe</title>
<p>kept fragment probe</p>
<script>
window.pdftokenProbe = { href: location.href, hash: location.hash };
</script>
"""


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------ attacker

class AttackerSite:
    """http://localhost:PORT/: pages with links, scripts and iframes."""

    def __init__(self):
        self.pages = {}
        self.port = harness.free_port()
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path.split("?")[0])
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def url(self, path):
        return "http://localhost:%d%s" % (self.port, path)

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def page(title, body):
    return ("<!doctype html>\n<meta charset=\"utf-8\"><title>%s</title>\n"
            "<h1>%s</h1>\n%s\n" % (title, title, body))


# ---------------------------------------------------------------- sink

class ProxySink:
    """An HTTP proxy on loopback that records every request and refuses it.

    The browsers use it as their proxy for everything but loopback, so a
    request to any other address shows up here instead of leaving the
    machine.
    """

    def __init__(self):
        self.port = harness.free_port()
        self.requests = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                conn.settimeout(2)
                try:
                    head = conn.recv(4096).split(b"\r\n", 1)[0]
                except OSError:
                    head = b"(nothing received)"
                with self.lock:
                    self.requests.append(head.decode("latin-1")[:200])
                try:
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\n"
                                 b"Content-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
                except OSError:
                    pass

    def take(self):
        with self.lock:
            out, self.requests = self.requests, []
        return out

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=5)
        self.sock.close()


def leak_target(request_line):
    """The host a proxied request line was for."""
    parts = request_line.split()
    if len(parts) < 2:
        return request_line
    target = parts[1]
    if "://" in target:
        target = target.split("://", 1)[1]
    return target.split("/", 1)[0]


# --------------------------------------------------------------- setup

def expand(value):
    """A fragments.json value: a string, or a list of strings and
    [string, count] pairs (that string repeated count times)."""
    if isinstance(value, str):
        return value
    out = []
    for part in value:
        if isinstance(part, str):
            out.append(part)
        elif (isinstance(part, list) and len(part) == 2
              and isinstance(part[0], str) and isinstance(part[1], int)
              and part[1] > 0):
            out.append(part[0] * part[1])
        else:
            raise SystemExit("%s: bad part %r" % (FRAGMENTS, part))
    return "".join(out)


def load_fragments():
    """The sanitiser's table, expanded: [{fragment, expected, why}]."""
    table = json.loads(FRAGMENTS.read_text("utf-8"))["fragments"]
    out = []
    for row in table:
        f = {"fragment": expand(row["fragment"]),
             "expected": expand(row["expected"]), "why": row["why"]}
        if not f["fragment"].startswith("#") \
                or not f["expected"].startswith("#") or not f["why"]:
            raise SystemExit("%s: bad row %r" % (FRAGMENTS, row))
        out.append(f)
    if len(out) < 30 or len(set(f["fragment"] for f in out)) != len(out):
        raise SystemExit("%s: needs 30 or more distinct fragments"
                         % FRAGMENTS)
    return out


# d1-d3: the dynamic PDFs' query, and the scripts that record what reached
# them (one line per request: the query string).
DYNAMIC_QUERY = {"d1": "id=3", "d2": "", "d3": ""}

PHP_INVOICE = r"""<?php
file_put_contents(%(seen)r, $_SERVER['QUERY_STRING'] . "\n",
                  FILE_APPEND | LOCK_EX);
header('Content-Type: application/pdf');
readfile(%(data)r);
"""

CGI_REPORT = r"""#!/usr/bin/python3
import os, sys
with open(%(seen)r, "a") as f:
    f.write(os.environ.get("QUERY_STRING", "") + "\n")
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""


def dynamic_config(b, php_handler, backend_port):
    """d1-d3 of browser b: PHP, a proxied application, CGI."""
    return "\n".join([
        '<Directory "@DOCROOT@/%s/d1/php">' % b,
        '    <FilesMatch "\\.php$">',
        '        SetHandler "%s"' % php_handler,
        "    </FilesMatch>",
        "</Directory>",
        # the application answers /<browser>/reports/7: its request
        # lines tell the browsers apart
        'ProxyPass "/%s/d2/api/" "http://127.0.0.1:%d/%s/"'
        % (b, backend_port, b),
        '<Location "/%s/d2/api/">' % b,
        "    PdfTokenProtect On",
        "</Location>",
        '<Directory "@DOCROOT@/%s/d3/cgi">' % b,
        "    Options +ExecCGI",
        "    SetHandler cgi-script",
        "</Directory>",
    ])


def httpd_config(browsers, cells, php_handler, backend_port):
    lines = [LOG_FORMAT,
             '<Directory "@DOCROOT@">',
             "    PdfTokenProtect On",
             "</Directory>"]
    for b in browsers:
        lines += [
            # controls: the same documents without the module
            '<Directory "@DOCROOT@/%s/c3-control">' % b,
            "    PdfTokenProtect Off",
            "</Directory>",
            '<Directory "@DOCROOT@/%s/c4">' % b,
            "    PdfTokenTypes application/pdf text/html",
            "</Directory>",
            '<Directory "@DOCROOT@/%s/c4-control">' % b,
            "    PdfTokenProtect Off",
            "</Directory>",
            # stale tokens: they expire after 2 s here
            '<Directory "@DOCROOT@/%s/c7a">' % b,
            "    PdfTokenTimeout 2",
            "</Directory>",
        ]
        # PdfTokenFragment safe (f1 protects its HTML probe too); f6
        # stays in the default (strip) scope
        for case in ("f1", "f2", "f3", "f4", "f5"):
            lines += ['<Directory "@DOCROOT@/%s/%s">' % (b, case),
                      "    PdfTokenFragment safe"]
            if case == "f1":
                lines.append("    PdfTokenTypes application/pdf text/html")
            lines.append("</Directory>")
        lines.append(dynamic_config(b, php_handler, backend_port))
        lines.append(matrix.httpd_config(b, cells))
    return "\n".join(lines) + "\n"


def build_site(httpd, attacker, b, seen_dir, backend):
    """Write browser b's documents and attacker pages; return its cases."""
    srv = httpd.url("")

    def pdf(case, pages=3):
        label = "%s %s" % (b, case)
        rel = "%s/%s/doc.pdf" % (b, case)
        httpd.write_pdf(rel, label=label, pages=pages)
        # Published documents are rarely new: a Last-Modified 30 days ago
        # gives browsers a heuristic freshness of days (RFC 9111 4.2.2).
        old = time.time() - 30 * 86400
        os.utime(httpd.docroot / rel, (old, old))
        return {"path": "/" + rel, "url": srv + "/" + rel, "label": label,
                "file": str(httpd.docroot / rel)}

    cases = {}
    c = cases["c1"] = pdf("c1")
    c["attackUrl"] = c["url"] + ATTACK
    attacker.pages["/%s/c1.html" % b] = page(
        "attacker c1", '<a id="go" href="%s">read the report</a>'
        % c["attackUrl"])
    c["attacker"] = attacker.url("/%s/c1.html" % b)

    c = cases["c2a"] = pdf("c2a")
    c["attackUrl"] = c["url"] + ATTACK
    attacker.pages["/%s/c2a.html" % b] = page(
        "attacker c2a", "<script>setTimeout(function () { location.href = "
        "%s; }, 300);</script>" % json.dumps(c["attackUrl"]))
    c["attacker"] = attacker.url("/%s/c2a.html" % b)

    c = cases["c2b"] = pdf("c2b")
    c["attackUrl"] = c["url"] + ATTACK

    c = cases["c3"] = pdf("c3")
    c["control"] = pdf("c3-control")
    c["pageUrl"] = c["url"] + "#page=2"
    c["control"]["pageUrl"] = c["control"]["url"] + "#page=2"

    c = cases["c4"] = {}
    for name in ("c4", "c4-control"):
        rel = "%s/%s/probe.html" % (b, name)
        httpd.write(rel, PROBE_HTML)
        httpd.write("%s/%s/report.txt" % (b, name), "reported\n")
        attacker.pages["/%s/%s.html" % (b, name)] = page(
            "attacker " + name, '<a id="go" href="%s">probe</a>'
            % (srv + "/" + rel + PROBE_ATTACK))
        c[name] = {"path": "/" + rel, "url": srv + "/" + rel,
                   "attackUrl": srv + "/" + rel + PROBE_ATTACK,
                   "report": "/%s/%s/report.txt" % (b, name),
                   "attacker": attacker.url("/%s/%s.html" % (b, name))}
    c["expectedControlHash"] = PROBE_ATTACK

    c = cases["c5"] = pdf("c5")
    c["attackUrl"] = c["url"] + ATTACK
    attacker.pages["/%s/c5.html" % b] = page(
        "attacker c5", '<a id="go" href="%s">read the report</a>'
        % c["attackUrl"])
    c["attacker"] = attacker.url("/%s/c5.html" % b)

    cases["c6a"] = pdf("c6a")
    c = cases["c6b"] = pdf("c6b")
    httpd.write("%s/c6b/embed.html" % b, page(
        "two copies",
        '<iframe id="one" src="doc.pdf" width="620" height="300"></iframe>\n'
        '<iframe id="two" src="doc.pdf" width="620" height="300"></iframe>'))
    c["embed"] = srv + "/%s/c6b/embed.html" % b

    c = cases["c7a"] = pdf("c7a")
    c["timeout"] = 2

    # A tokenized link minted a minute ago, long expired (PdfTokenTimeout
    # 10): shared by someone else, harvested by the attacker.
    c = cases["c7b"] = pdf("c7b")
    stale = pdftoken_ref.mint(httpd.secret, c["path"],
                              expiry=int(time.time()) - 60)
    c["staleToken"] = stale
    c["attackUrl"] = "%s?pdftoken=%s%s" % (c["url"], stale, ATTACK)
    attacker.pages["/%s/c7b.html" % b] = page(
        "attacker c7b", '<a id="go" href="%s">read the report</a>'
        % c["attackUrl"])
    c["attacker"] = attacker.url("/%s/c7b.html" % b)

    c = cases["c8"] = pdf("c8")
    c["attackUrl"] = c["url"] + ATTACK
    attacker.pages["/%s/c8.html" % b] = page(
        "attacker c8", '<iframe id="victim" src="%s" width="700" '
        'height="400"></iframe>' % c["attackUrl"])
    c["attacker"] = attacker.url("/%s/c8.html" % b)

    # Dynamic PDFs (d1-d3): the data lives outside the docroot, the URL
    # has no .pdf, only the handler's answer says PDF.
    for case, rel in (("d1", "php/invoice.php"), ("d2", "api/reports/7"),
                      ("d3", "cgi/report")):
        label = "%s %s" % (b, case)
        data = "data/%s-%s.pdf" % (b, case)
        httpd.write_pdf(data, label=label, base=httpd.root)
        path = "/%s/%s/%s" % (b, case, rel)
        query = DYNAMIC_QUERY[case]
        url = srv + path + ("?" + query if query else "")
        sub = {"seen": str(seen_dir / ("%s-%s.log" % (b, case))),
               "data": str(httpd.root / data)}
        if case == "d1":
            httpd.write(path[1:], PHP_INVOICE % sub)
        elif case == "d2":
            body = (httpd.root / data).read_bytes()
            backend.route("/%s/reports/7" % b)(
                lambda h, q, head_only, body=body: h.send_body(
                    200, [("Content-Type", "application/pdf")], body,
                    head_only))
        elif case == "d3":
            httpd.write(path[1:], CGI_REPORT % sub, mode=0o755)
        c = cases[case] = {"path": path, "url": url, "label": label,
                           "attackUrl": url + ATTACK, "query": query}
        attacker.pages["/%s/%s.html" % (b, case)] = page(
            "attacker " + case, '<a id="go" href="%s">read the report</a>'
            % html.escape(c["attackUrl"]))
        c["attacker"] = attacker.url("/%s/%s.html" % (b, case))

    # PdfTokenFragment safe
    rel = "%s/f1/probe.html" % b
    httpd.write(rel, FRAGMENT_PROBE_HTML)
    cases["f1"] = {"path": "/" + rel, "url": srv + "/" + rel,
                   "fragments": load_fragments()}
    # 5 pages, so that page 3 can scroll to the top of the viewer
    c = cases["f2"] = pdf("f2", pages=5)
    c["pageUrl"] = c["url"] + "#page=3"
    for case, frag in (("f3", "#page=3&x=javascript:alert(document.domain)"),
                       ("f4", "#FDF=javascript:alert(document.domain)")):
        c = cases[case] = pdf(case, pages=5)
        c["attackUrl"] = c["url"] + frag
        attacker.pages["/%s/%s.html" % (b, case)] = page(
            "attacker " + case, '<a id="go" href="%s">read the report</a>'
            % html.escape(c["attackUrl"]))
        c["attacker"] = attacker.url("/%s/%s.html" % (b, case))
    c = cases["f5"] = pdf("f5", pages=5)
    c["attackUrl"] = c["url"] + "#page=3&x=javascript:alert(document.domain)"
    c = cases["f6"] = pdf("f6", pages=5)
    c["pageUrl"] = c["url"] + "#page=3"
    return cases


# ----------------------------------------------------------- processes

def alive_browser(pid, exe):
    try:
        cmd = Path("/proc/%d/cmdline" % pid).read_bytes()
    except OSError:
        return False
    real = os.path.realpath(exe)
    return (exe.encode() in cmd or real.encode() in cmd
            or b"/usr/lib/chromium/chromium" in cmd
            or b"WebKitWebDriver" in cmd or MINIBROWSER.encode() in cmd)


def reap_browsers(pidfile, exe):
    """Kill what is left of the browsers cases.mjs launched (by PID)."""
    try:
        pids = [int(x) for x in pidfile.read_text().split()]
    except (OSError, ValueError):
        return []
    left = []
    for pid in pids:
        if alive_browser(pid, exe):
            left.append(pid)
            try:
                # puppeteer starts the browser detached: its own group
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    return left


class Xvfb:
    """An X server of the run's own for WebKit (MiniBrowser has no
    headless mode): started inside the network namespace, on the first
    free display (-displayfd), without TCP."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.proc = None
        self.display = None

    def start(self):
        r, w = os.pipe()
        log_file = open(self.workdir / "xvfb.log", "wb")
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24",
             "-nolisten", "tcp", "-noreset"],
            pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=log_file, start_new_session=True)
        os.close(w)
        log_file.close()
        data = b""
        with os.fdopen(r, "rb") as f:
            while not data.endswith(b"\n"):
                chunk = f.read(1)
                if not chunk:
                    break
                data += chunk
        if not data.strip().isdigit():
            self.stop()
            raise SystemExit("Xvfb did not start: %s" % (
                self.workdir / "xvfb.log").read_text("latin-1")[-500:])
        self.display = ":" + data.strip().decode()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def run_node(b, config_path, workdir, display=None):
    """Run cases.mjs for browser b; return (results list, problems)."""
    node = os.environ.get("NODE", "node")
    env = dict(os.environ)
    home = workdir / ("home-" + b)
    tmp = workdir / ("tmp-" + b)
    for d in (home, tmp):
        d.mkdir(parents=True, exist_ok=True)
    # Browsers write caches and settings under HOME and TMPDIR: keep them
    # in the work directory, which is removed at the end.
    env.update(HOME=str(home), TMPDIR=str(tmp),
               XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"),
               MOZ_CRASHREPORTER_DISABLE="1")
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                "DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(var, None)
    if display:
        env["DISPLAY"] = display
    problems = []
    proc = subprocess.Popen([node, str(HERE / "cases.mjs"), str(config_path)],
                            stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, cwd=str(HERE))
    try:
        rc = proc.wait(timeout=NODE_TIMEOUT * (WEBKIT_SLOWER if b == "webkit"
                                               else 1))
        if rc != 0:
            problems.append("cases.mjs for %s exited with status %d"
                            % (b, rc))
    except subprocess.TimeoutExpired:
        problems.append("cases.mjs for %s did not finish in %d s"
                        % (b, NODE_TIMEOUT * (WEBKIT_SLOWER if b == "webkit"
                                              else 1)))
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        left = reap_browsers(workdir / ("%s.pids" % b), BROWSERS[b])
        if left:
            problems.append("%s: browser processes %s were still running "
                            "and were killed" % (b, left))
    try:
        data = json.loads((workdir / ("results-%s.json" % b)).read_text())
    except (OSError, ValueError):
        data = {"results": [], "version": "unknown"}
    return data, problems


# --------------------------------------------------------------- report

def cell(result):
    if result is None:
        return "FAIL: no result"
    if result.get("hole"):
        return "HOLE (%s): %s" % (result["hole"], result.get("outcome") or "-")
    if result["ok"] and result.get("limits"):
        return "LIMIT (%s): %s" % (", ".join(result.get("limitTags") or []),
                                   result.get("outcome") or "-")
    word = "ok" if result["ok"] else "FAIL"
    return "%s: %s" % (word, result.get("outcome") or "-")


def print_table(browsers, cases, table, versions):
    rows = [["case", ""] + list(browsers)]
    for cid, title in cases:
        rows.append([cid, title] + [cell(table.get((cid, b)))
                                    for b in browsers])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    sep = "+".join("-" * (w + 2) for w in widths)
    log("")
    log("mod_pdftoken in real browsers (case x browser -> outcome)")
    log(sep)
    for i, r in enumerate(rows):
        log("|".join(" %s " % r[j].ljust(widths[j]) for j in range(len(r))))
        if i == 0:
            log(sep)
    log(sep)
    for b in browsers:
        log("%s: %s" % (b, versions.get(b, "unknown")))
    # What an engine could not do, as measured in this run: a LIMIT cell
    # passed every other check of its case.
    limits = [(cid, b, why) for cid, _ in cases for b in browsers
              for why in (table.get((cid, b)) or {}).get("limits") or []]
    if limits:
        log("LIMIT (the engine cannot do this; the case's other checks "
            "passed):")
        for cid, b, why in limits:
            log("  %s/%s: %s" % (cid, b, why))
    holes = [(cid, b) for cid, _ in cases for b in browsers
             if (table.get((cid, b)) or {}).get("hole")]
    if holes:
        log("HOLE (the engine lets this attack through in this case's "
            "configuration; it reproduced exactly as recorded):")
        for cid, b in holes:
            log("  %s/%s: %s" % (cid, b, KNOWN_HOLES[(cid, b)][2]))
            for f in table[(cid, b)].get("failures") or []:
                log("      measured: %s" % f)


# --------------------------------------------------------- render matrix

def _observed(table, case, b):
    """{cell id: observation} of case m1 or m2 in browser b."""
    r = table.get((case, b))
    return {c["id"]: c for c in (r or {}).get("cells") or [] if c}


def _show(obs):
    """An observation for a message: outcome, URL, access log."""
    out = obs.get("outcome") or "no outcome"
    if obs.get("href"):
        out += " at %s" % obs["href"].split("://", 1)[-1].split("/", 1)[-1]
    if obs.get("seq") is not None:
        out += ", log [%s]" % ", ".join(obs["seq"])
    if obs.get("notes"):
        out += " (%s)" % "; ".join(obs["notes"])
    return out


def judge_matrix(browsers, cells, recording, table, partial=False):
    """Verdicts of m1 and m2, added to their results in `table`.

    m1: each cell's outcome equals the recording (in a recording run: each
    cell has one).  m2: a PDF only through the token step, and every cell
    that renders as a PDF anywhere unprotected goes through it or
    downloads.
    """
    drift = []
    if recording is not None:
        now = {c["id"]: matrix.key(c) for c in matrix.cells()}
        was = {c["id"]: matrix.key(c) for c in recording}
        ids = set(was) if partial else set(now) | set(was)
        drift = sorted(i for i in ids if now.get(i) != was.get(i))
    pdf_anywhere = set()
    for c in recording or []:
        if "pdf" in c["outcomes"].values():
            pdf_anywhere.add(c["id"])
    for b in browsers:
        pdf_anywhere |= {i for i, o in _observed(table, "m1", b).items()
                         if o.get("outcome") == "pdf"}
    for b in browsers:
        r = table.get(("m1", b))
        if r is not None:
            if drift:
                r["failures"].append(
                    "t/browser/matrix.py defines other cells than %s "
                    "(%s): record again with --record-matrix"
                    % (matrix.TSV.name, ", ".join(drift[:10])
                       + (", ..." if len(drift) > 10 else "")))
            seen = _observed(table, "m1", b)
            for c in recording or []:
                o = seen.get(c["id"], {})
                want, now = c["outcomes"].get(b), o.get("outcome")
                if want is None:
                    r["failures"].append(
                        "%s: no %s column in %s: record it with "
                        "--record-matrix" % (c["id"], b, matrix.TSV.name))
                elif now != want:
                    r["failures"].append(
                        "%s (%s): recorded %s, now %s"
                        % (c["id"], matrix.describe(c), want, _show(o)))
            for c in cells:
                for n in seen.get(c["id"], {}).get("notes", []):
                    if n.startswith("ALSO"):
                        r["failures"].append("%s: ambiguous: %s"
                                             % (c["id"], n))
            differ = len([f for f in r["failures"] if "recorded" in f])
            r["outcome"] = ("%d of %d differ from the recording; "
                            % (differ, len(cells)) if differ else
                            "= recording; " if recording else "recorded; ") \
                + r["outcome"]
            r["ok"] = not r["failures"]
        r = table.get(("m2", b))
        if r is None:
            continue
        seen = _observed(table, "m2", b)
        token_pdf = token_page = refused_dl = 0
        for c in cells:
            o = seen.get(c["id"])
            if not o or not o.get("outcome"):
                continue  # already a failure of cases.mjs
            what = "%s (%s)" % (c["id"], matrix.describe(c))
            step = o.get("tokenStep")
            if o["outcome"] == "pdf":
                if not step:
                    frag = o.get("fragment")
                    r["failures"].append(
                        "%s: PDF viewer without the token step%s: %s"
                        % (what, " and with the attacker's fragment"
                           if frag and "FDF" in frag else "", _show(o)))
                else:
                    token_pdf += 1
            elif o["outcome"] == "page" and step:
                token_page += 1
            # Neither engine downloads a response with an error status:
            # Chromium shows its error page, Firefox drops the navigation
            # (both "error").  After the module's forced download (logged
            # as a fallback, 4xx/5xx) that is what a download looks like.
            refused = o["outcome"] == "error" and any(
                x.endswith(":fallback") and x[0] in "45"
                for x in o.get("seq") or [])
            if refused:
                refused_dl += 1
            if c["id"] in pdf_anywhere and o["outcome"] != "download" \
                    and not step and not refused:
                unprot = ", ".join(
                    "%s %s" % (e, _observed(table, "m1", e).get(
                        c["id"], {}).get("outcome")
                        or (c.get("outcomes") or {}).get(e, "?"))
                    for e in matrix.ENGINES)
                r["failures"].append(
                    "%s: a PDF unprotected (%s), protected neither the "
                    "token step nor a download: %s" % (what, unprot,
                                                       _show(o)))
            for n in o.get("notes", []):
                if n.startswith("ALSO"):
                    r["failures"].append("%s: ambiguous: %s" % (what, n))
        r["outcome"] = ("%d cells that render as a PDF somewhere; token "
                        "step: %d pdf, %d page; %d forced downloads "
                        "refused; %s" % (len(seen), token_pdf, token_page,
                                         refused_dl, r["outcome"]))
        r["ok"] = not r["failures"]


def print_matrix_summary(browsers, cells, table):
    """Counts per engine, and which plain responses render as a PDF."""
    if not any(table.get(("m1", b)) for b in browsers):
        return
    log("")
    log("render matrix (%d cells)" % len(cells))
    for b in browsers:
        for case in ("m1", "m2"):
            seen = _observed(table, case, b)
            if not seen:
                continue
            counts = {}
            for o in seen.values():
                k = o.get("outcome") or "none"
                counts[k] = counts.get(k, 0) + 1
            log("  %s %s: %s" % (b, case, ", ".join(
                "%s %d" % (k, counts[k]) for k in
                ("pdf", "download", "page", "error", "none") if k in counts)))
        seen = _observed(table, "m1", b)
        plain = [c for c in cells if c["status"] == 200
                 and c["disposition"] is None and not c["url_pdf"]
                 and c["body"] == "pdf" and not c["nosniff"]]
        types = [c["content_type"] for c in plain
                 if seen.get(c["id"], {}).get("outcome") == "pdf"]
        log("  %s renders as a PDF (200, body %%PDF-, no disposition): %s"
            % (b, ", ".join("(absent)" if t is None else "(empty)"
                            if t == "" else repr(t) for t in types)))


BLANK_NOTE = "%s: pdf, but the viewer showed no document in 8 s:"


def record_matrix(browsers, cells, table, versions, partial=False):
    """Write render-matrix.tsv from m1; returns problems (then no file).

    An engine not run this time (--browser) keeps its column, version and
    notes from the current recording, which must define the same cells.
    `partial` (--matrix-cell): `cells` are the ones measured; every other
    cell of matrix.py keeps its recorded row, which must define the same
    cell, and the engines run must be the recorded versions."""
    problems = ["%s/m1 failed" % b for b in browsers
                if not (table.get(("m1", b)) or {}).get("ok")]
    kept = [e for e in matrix.ENGINES if e not in browsers]
    measured = {c["id"] for c in cells}
    old = {}
    old_notes = []
    old_blank = {}
    if kept or partial:
        try:
            comments, recorded = matrix.read()
        except (OSError, ValueError) as e:
            recorded, comments = [], []
            problems.append("cannot keep %s from %s: %s"
                            % (", ".join(kept) or "the other cells",
                               matrix.TSV.name, e))
        old = {c["id"]: c for c in recorded}
        if partial:
            defined = matrix.cells()
            ids = {c["id"] for c in defined}
            bad = [c["id"] for c in defined if c["id"] not in measured
                   and (c["id"] not in old
                        or matrix.key(old[c["id"]]) != matrix.key(c))]
            bad += sorted(i for i in old if i not in ids)
            if bad:
                problems.append("%s and matrix.py differ in cells not "
                                "measured (%s): record them too"
                                % (matrix.TSV.name, ", ".join(bad[:10])))
            cells = defined
        elif [matrix.key(c) for c in recorded] != \
                [matrix.key(c) for c in cells]:
            problems.append("%s defines other cells: record every engine"
                            % matrix.TSV.name)
        for line in comments:
            for e in matrix.ENGINES:
                m = re.search(r"\b%s (.*?)(;|$)" % e, line)
                if line.startswith("# Browsers:") and m:
                    if e in kept:
                        versions[e] = m.group(1)
                    elif partial and versions.get(e) != m.group(1):
                        problems.append(
                            "%s is %s, recorded as %s: record every cell"
                            % (e, versions.get(e), m.group(1)))
                if line.startswith("# " + BLANK_NOTE % e):
                    if e in kept:
                        old_notes.append(line[2:])
                    elif partial:
                        old_blank[e] = [
                            i for i in line[2 + len(BLANK_NOTE % e):].split()
                            if i not in measured]
                elif line.startswith("# %s: " % e) and e in kept:
                    old_notes.append(line[2:])
    rows = []
    for c in cells:
        row = dict(c, outcomes={})
        for b in matrix.ENGINES:
            if b in kept or c["id"] not in measured:
                o = old.get(c["id"], {}).get("outcomes", {}).get(b)
            else:
                o = _observed(table, "m1", b).get(c["id"], {}).get("outcome")
            if o not in matrix.OUTCOMES:
                problems.append("%s/%s: no outcome to record" % (c["id"], b))
            row["outcomes"][b] = o
        rows.append(row)
    if problems:
        log("render matrix NOT written")
        return problems
    # Cells where the viewer took the response but showed no document in
    # 8 s (an HTML body aside): not an outcome, worth knowing.
    notes = list(old_notes)
    for b in browsers:
        blank = old_blank.get(b, []) + [
            c["id"] for c in cells if c["id"] in measured
            and c["body"] != "html" and "viewer showed no document" in
            _observed(table, "m1", b).get(c["id"], {}).get("notes", [])]
        if blank:
            notes.append(BLANK_NOTE % b + " " + " ".join(sorted(blank)))
    matrix.write(rows, versions, notes)
    log("render matrix written: %s" % matrix.TSV)
    return []


def backend_queries(case, b, seen_dir, backend):
    """The queries d1-d3's back end received from browser b, in order."""
    if case == "d2":
        out = []
        for line in backend.all_requests():
            parts = line.split()
            target = parts[1] if len(parts) > 1 else ""
            if target.split("?")[0] == "/%s/reports/7" % b:
                out.append(target.partition("?")[2])
        return out
    try:
        text = (seen_dir / ("%s-%s.log" % (b, case))).read_text("latin-1")
    except OSError:
        return []
    return text.splitlines()


def judge_backends(b, config, table, seen_dir, backend):
    """d1-d3: the back end saw its query, never the token.

    The handler runs for the first view (its answer replaced by the 302)
    and again for the tokenized follow-up: two requests, both with the
    application's own query exactly.
    """
    for case in ("d1", "d2", "d3"):
        r = table.get((case, b))
        if r is None:
            continue
        want = config[b][case]["query"]
        got = backend_queries(case, b, seen_dir, backend)
        if len(got) < 2 or any(q != want for q in got):
            r["failures"].append(
                "back end saw the queries %s, expected %r twice or more "
                "(the 302 and the pass), never a token" % (got, want))
        r["outcome"] += "; back end saw %s" % (
            ", ".join(repr(q) for q in got) or "nothing")
        r["ok"] = not r["failures"]


NETNS_ENV = "PDFTOKEN_BROWSER_NETNS"


def enter_private_network():
    """Re-execute inside a network namespace that has only loopback.

    Needs root and util-linux's unshare; returns (normally only inside the
    namespace) whether the run is isolated.
    """
    if os.environ.get(NETNS_ENV) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        links = subprocess.run(["ip", "-o", "link", "show"], check=True,
                               capture_output=True, text=True).stdout
        names = [line.split(":")[1].strip().split("@")[0]
                 for line in links.splitlines() if ":" in line]
        if names != ["lo"]:
            raise SystemExit("network namespace has interfaces %s" % names)
        return True
    if os.geteuid() != 0 or not shutil.which("unshare") \
            or not shutil.which("ip"):
        return False
    if subprocess.run(["unshare", "--net", "true"],
                      capture_output=True).returncode != 0:
        return False
    os.environ[NETNS_ENV] = "1"
    sys.stdout.flush()
    os.execvp("unshare", ["unshare", "--net", "--", sys.executable,
                          os.path.abspath(__file__)] + sys.argv[1:])
    return False  # not reached


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--browser", choices=sorted(BROWSERS), action="append")
    ap.add_argument("--case", choices=[c for c, _ in CASES if c != "net"],
                    action="append", help="run only this case (debugging)")
    ap.add_argument("--record-matrix", action="store_true",
                    help="run m1 and m2 in both browsers and write %s"
                    % matrix.TSV.name)
    ap.add_argument("--matrix-tabs", type=int, default=MATRIX_TABS)
    ap.add_argument("--serial", action="store_true",
                    help="run the engines one after the other, not side "
                    "by side")
    ap.add_argument("--matrix-cell", action="append",
                    help="run only this matrix cell (debugging)")
    args = ap.parse_args()
    if args.record_matrix:
        if args.case:
            ap.error("--record-matrix runs m1 and m2 (in every browser, or "
                     "in --browser, keeping the others' columns)")
        args.case = ["m1", "m2"]
        if args.matrix_cell:
            unknown = sorted(set(args.matrix_cell)
                             - {c["id"] for c in matrix.cells()})
            if unknown:
                ap.error("--matrix-cell: matrix.py defines no %s"
                         % ", ".join(unknown))
    browsers = args.browser or list(BROWSERS)
    cases = [c for c in CASES if not args.case or c[0] in args.case
             or c[0] == "net"]

    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    isolated = enter_private_network()
    started = time.time()
    failures = []
    # The cells: the recording's, so that the run measures what it
    # compares with; a recording run measures the current definition.
    cells = matrix.cells()
    recording = None
    if not args.record_matrix:
        try:
            _, recording = matrix.read()
        except (OSError, ValueError) as e:
            raise SystemExit("%s (record it with --record-matrix)" % e)
        cells = recording
    if args.matrix_cell:
        cells = [c for c in cells if c["id"] in args.matrix_cell]
        if recording is not None:
            recording = [c for c in recording
                         if c["id"] in args.matrix_cell]
    table = {}
    versions = {}
    workdir = harness.make_workdir()
    httpd = attacker = sink = php = backend = planter = xvfb = None
    try:
        need = [HERE / "node_modules" / "puppeteer-core"]
        need += [Path(BROWSERS[b]) for b in browsers]
        if "webkit" in browsers:
            need += [HERE / "node_modules" / "selenium-webdriver",
                     Path(MINIBROWSER), Path(shutil.which("Xvfb") or "Xvfb")]
        missing = [p for p in need if not p.exists()]
        if missing:
            raise SystemExit(
                "missing: %s (run `make browser`, which installs Debian's "
                "chromium, firefox-esr, webkit2gtk-driver and xvfb and runs "
                "`npm ci --prefix t/browser`)" % ", ".join(map(str, missing)))
        if "webkit" in browsers:
            xvfb = Xvfb(workdir)
            xvfb.start()
        httpd = harness.Httpd(workdir / "httpd", modules=(
            "asis", harness.cgi_module(), "proxy", "proxy_http",
            "proxy_fcgi", "socache_shmcb", "ssl", "http2"))
        # HTTPS with h2 beside the HTTP site: a CA of this run, a TLS
        # virtual host on a port of its own, and issue 13's planter
        ca = https_site.TestCA(workdir / "ca")
        https_port = harness.free_port()
        planter = https_site.PlantSite(ca)
        planter.site_port = https_port
        attacker = AttackerSite()
        sink = ProxySink()
        # d1-d3's back ends; php-fpm starts here, so inside the network
        # namespace (it only listens on a unix socket)
        seen_dir = workdir / "seen"
        seen_dir.mkdir()
        seen_dir.chmod(0o777)  # PHP and CGI scripts run as www-data
        php = backends.PhpFpm(workdir / "fpm")
        backend = backends.HttpBackend()
        httpd.configure(httpd_config(browsers, cells, php.handler,
                                     backend.port)
                        + https_site.vhost_config(https_port, ca)
                        + "".join(https_site.httpd_config(b, php.handler)
                                  for b in browsers))
        config = {}
        matrix_sites = {}
        for b in browsers:
            config[b] = build_site(httpd, attacker, b, seen_dir, backend)
            config[b].update(https_site.build(httpd, attacker, planter, b,
                                              https_port, seen_dir, page))
            matrix_sites[b] = matrix.write_site(httpd, b, cells)
            if recording is not None:
                # m2 goes to the cells some engine renders as a PDF: any
                # other cell passes the module untouched or as a forced
                # download, which no engine renders, and m1 fails the run
                # the day an engine renders a new cell (half the matrix's
                # time, in every engine).
                shown = {c["id"] for c in recording
                         if "pdf" in c["outcomes"].values()}
                matrix_sites[b]["m2"] = [x for x in matrix_sites[b]["m2"]
                                         if x["id"] in shown]
        backend.start()
        php.start()
        httpd.start()
        if any(c in ("m1", "m2") for c, _ in cases):
            for b in browsers:
                for p in matrix.check_served(httpd, b, cells, httpd.get):
                    failures.append("matrix cell served wrong: " + p)
        attacker.start()
        planter.start()
        sink.start()
        log("httpd (protected site): %s    attacker: %s    proxy sink: "
            "127.0.0.1:%d" % (httpd.url("/"), attacker.url("/"), sink.port))
        paths = {}
        for b in browsers:
            cfg = {
                "browser": b,
                "executable": BROWSERS[b],
                "workdir": str(workdir / ("run-" + b)),
                "pidfile": str(workdir / ("%s.pids" % b)),
                "results": str(workdir / ("results-%s.json" % b)),
                "log": str(httpd.root / "logs" / "browser.log"),
                "sinkPort": sink.port,
                "server": httpd.url(""),
                "https": https_site.config(https_port, ca),
                "shots": os.environ.get("PDFTOKEN_BROWSER_SHOTS") or None,
                "cases": config[b],
                "only": args.case or None,
                # parse: a recording also notes whether the viewer showed
                # the document (seconds per cell, so not in every run)
                "matrix": dict(matrix_sites[b], workers=args.matrix_tabs,
                               caseTimeout=int(
                                   MATRIX_CASE_TIMEOUT * 1000
                                   * max(1.0, len(cells)
                                         / MATRIX_TIMEOUT_CELLS)
                                   * (WEBKIT_SLOWER if b == "webkit"
                                      else 1)),
                               parse=args.record_matrix),
            }
            Path(cfg["workdir"]).mkdir(parents=True)
            if b == "chromium":
                # Chromium on Linux trusts what the NSS database under
                # $HOME says (run_node's HOME); Firefox gets the same
                # database in each profile (cases.mjs)
                ca.install_nssdb(workdir / ("home-" + b) / ".pki" / "nssdb")
            path = workdir / ("config-%s.json" % b)
            path.write_text(json.dumps(cfg, indent=1))
            paths[b] = path

        # Chromium then Firefox in one lane, WebKit beside them in another
        # (--serial: one after the other).  A run mostly waits (on WebKit's
        # WebDriver, one command at a time, on page loads and timers): one
        # after the other the engines kept two cores less than half busy.
        # Three lanes loaded the machine past the pile-up cases' timing.
        # Every document, cookie and log line is per browser.
        ran = {}

        def lane(names):
            for name in names:
                log("== %s" % name)
                t0 = time.time()
                ran[name] = run_node(name, paths[name], workdir,
                                     xvfb.display if name == "webkit"
                                     else None)
                log("== %s done in %.1f s" % (name, time.time() - t0))

        lanes = [[b for b in browsers if b != "webkit"],
                 [b for b in browsers if b == "webkit"]]
        lanes = [x for x in lanes if x]
        if args.serial or len(lanes) < 2:
            for x in lanes:
                lane(x)
        else:
            threads = [threading.Thread(target=lane, args=(x,), daemon=True)
                       for x in lanes]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(timeout=1)
        # The sink cannot tell the lanes' requests apart: each browser's
        # row shows what all of them tried.
        caught = sink.take()
        for x in sorted(set(caught)):
            log("  caught by the sink (never left loopback): %s" % x)
        for b in browsers:
            data, problems = ran.get(b, ({"results": []},
                                         ["%s: no run" % b]))
            versions[b] = data.get("version", "unknown")
            for r in data.get("results", []):
                table[(r["id"], b)] = r
            judge_backends(b, config, table, seen_dir, backend)
            https_site.judge(b, config[b], table)
            hosts = sorted(set(leak_target(x) for x in caught))
            where = "loopback-only netns" if isolated else "proxy sink only"
            table[("net", b)] = {
                "ok": isolated or not caught,
                "outcome": "%s; %s" % (where, "no request tried to leave"
                                       if not caught else
                                       "%d background request(s) caught: %s"
                                       % (len(caught), ", ".join(hosts))),
                "failures": [] if isolated else
                ["tried to leave loopback: %s" % x
                 for x in sorted(set(caught))]}
            for p in problems:
                failures.append(p)
                log("PROBLEM: " + p)
    except KeyboardInterrupt as e:
        failures.append("interrupted (%s)" % e)
    finally:
        if xvfb:
            xvfb.stop()
        if sink:
            sink.stop()
        if attacker:
            attacker.stop()
        if planter:
            planter.stop()
        if backend and backend.thread:
            backend.stop()
        if httpd:
            try:
                httpd.stop()
            except AssertionError as e:
                failures.append(str(e))
        if php:
            php.stop()
        if httpd:
            # Tokens the browsers were given must not reach the error log.
            try:
                text = (httpd.root / "logs" / "browser.log").read_text(
                    "latin-1")
            except OSError:
                text = ""
            for q in re.findall(r"pdftoken=([A-Za-z0-9_-]+)", text):
                pdftoken_ref.remember(q)
            for p in httpd.log_problems():
                failures.append("httpd error log: " + p)
        harness.remove_workdir(workdir)

    judge_matrix(browsers, cells, recording, table,
                 partial=bool(args.matrix_cell))
    judge_holes(table)
    print_table(browsers, cases, table, versions)
    print_matrix_summary(browsers, cells, table)
    if args.record_matrix:
        failures += record_matrix(browsers, cells, table, versions,
                                  partial=bool(args.matrix_cell))
    passed = failed = limited = holes = 0
    case_failures = []
    for cid, _ in cases:
        for b in browsers:
            r = table.get((cid, b))
            if r is not None and r.get("hole"):
                holes += 1
            elif r is not None and r["ok"] and r.get("limits"):
                limited += 1
            elif r is not None and r["ok"]:
                passed += 1
            else:
                failed += 1
                if r is None:
                    case_failures.append("%s/%s: no result" % (cid, b))
                else:
                    for f in r.get("failures", []):
                        case_failures.append("%s/%s: %s" % (cid, b, f))
    # Run-level problems (a crashed child, a token in the error log, a
    # browser left running) count as one more failure.
    if failures:
        failed += 1
    if failures or case_failures:
        log("")
        log("Failures:")
        for f in failures + case_failures:
            log("  " + f)
    log("run time %.1f s" % (time.time() - started))
    log("%d passed, %d failed, %d with a stated limit, %d with a recorded "
        "hole" % (passed, failed, limited, holes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
