# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The sites of the browser run: the protected server's documents and
configuration, the attacker's pages, and the sink that catches any request
for another address.
"""

import html
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import matrix
import pdftoken_ref

HERE = Path(__file__).resolve().parent

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
if (m) { setTimeout(function () { eval(m[1]); window.probeDone = true; }, 0); }
else { window.probeDone = true; }
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


class AttackerSite:
    """http://localhost:PORT/: pages with links, scripts and iframes."""

    def __init__(self):
        self.pages = {}
        pages = self.pages
        # /leak/...: where a link inside a protected PDF points (c10); what
        # each request there carried, for GET /leaks.json
        leaks = self.leaks = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                if path.startswith("/leak/"):
                    leaks.append({"path": path,
                                  "referer": self.headers.get("Referer")})
                    body = page("followed", "the link was followed")
                elif path == "/leaks.json":
                    data = json.dumps(leaks).encode("utf-8")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                else:
                    body = pages.get(path)
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

        # Port 0: the kernel's choice, bound at once, so that no other
        # server of the run can be handed the same port meanwhile.
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
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


class ProxySink:
    """An HTTP proxy on loopback that records every request and refuses it.

    The browsers use it as their proxy for everything but loopback, so a
    request to any other address shows up here instead of leaving the
    machine.
    """

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
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
            # c9: a PDF served before protection was turned on
            '<Directory "@DOCROOT@/%s/c9">' % b,
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

    def pdf(case, pages=3, link=None):
        label = "%s %s" % (b, case)
        rel = "%s/%s/doc.pdf" % (b, case)
        httpd.write_pdf(rel, label=label, pages=pages, link=link)
        # Published documents are rarely new: a Last-Modified 30 days ago
        # gives browsers a heuristic freshness of days (RFC 9111 4.2.2).
        old = time.time() - 30 * 86400
        os.utime(httpd.docroot / rel, (old, old))
        return {"path": "/" + rel, "url": srv + "/" + rel, "label": label,
                "file": str(httpd.docroot / rel)}

    def attack(c, case, body):
        """The attacker's page for case: body, with c["attackUrl"]."""
        rel = "/%s/%s.html" % (b, case)
        attacker.pages[rel] = page("attacker " + case, body)
        c["attacker"] = attacker.url(rel)

    def link(url):
        return '<a id="go" href="%s">read the report</a>' % html.escape(url)

    cases = {}
    c = cases["c1"] = pdf("c1")
    c["attackUrl"] = c["url"] + ATTACK
    attack(c, "c1", link(c["attackUrl"]))

    c = cases["c2a"] = pdf("c2a")
    c["attackUrl"] = c["url"] + ATTACK
    attack(c, "c2a", "<script>setTimeout(function () { location.href = "
           "%s; }, 300);</script>" % json.dumps(c["attackUrl"]))

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
    attack(c, "c5", link(c["attackUrl"]))

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
    attack(c, "c7b", link(c["attackUrl"]))

    c = cases["c9"] = pdf("c9")
    c["pageUrl"] = c["url"] + "#page=2"

    # c10: a link inside the PDF to the attacker's site, clicked in the
    # viewer: the tokenized URL must not reach it in a Referer
    leak = "/leak/%s/c10" % b
    c = cases["c10"] = pdf("c10", link=attacker.url(leak))
    c["leakPath"] = leak
    # read by node, not a browser: the address, not the name
    c["leaks"] = "http://127.0.0.1:%d/leaks.json" % attacker.port

    c = cases["c8"] = pdf("c8")
    c["attackUrl"] = c["url"] + ATTACK
    attack(c, "c8", '<iframe id="victim" src="%s" width="700" '
           'height="400"></iframe>' % c["attackUrl"])

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
        attack(c, case, link(c["attackUrl"]))

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
        attack(c, case, link(c["attackUrl"]))
    c = cases["f5"] = pdf("f5", pages=5)
    c["attackUrl"] = c["url"] + "#page=3&x=javascript:alert(document.domain)"
    c = cases["f6"] = pdf("f6", pages=5)
    c["pageUrl"] = c["url"] + "#page=3"
    return cases
