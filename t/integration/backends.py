# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Real back ends for the dynamic-PDF tests, on loopback only.

PhpFpm runs Debian's php-fpm8.2 in the foreground with a configuration of
its own, listening on a unix socket in the test's directory, for httpd's
mod_proxy_fcgi (`SetHandler "proxy:unix:SOCK|fcgi://localhost"`).

HttpBackend is a small HTTP/1.1 application server (Python's http.server in
a thread) on a free 127.0.0.1 port, for mod_proxy_http.  It records every
request line it receives, so that a test can tell what reached it, and
counts the TCP connections it accepts: it keeps a connection open across
requests (HTTP/1.1 keep-alive) until the client closes it, so the count
tells whether mod_proxy reused its connection.

Both are started and stopped by the tests' fixtures; neither ever talks to
anything but 127.0.0.1 or its own socket.
"""

import gzip
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The three dynamic back ends in one protected site: CGI and PHP-FPM under
# /prot/, the HTTP back end proxied under /api/ (a <Location>: <Directory>
# does not cover proxied URLs).  @PHP@ and @BACKEND@ are the tests'.
DYNAMIC_SCOPES = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
</Directory>
ProxyPass "/api/" "http://127.0.0.1:@BACKEND@/"
<Location "/api/">
    PdfTokenProtect On
</Location>
"""

PHP_FPM = "/usr/sbin/php-fpm8.2"

FPM_CONF = """\
[global]
pid = {root}/php-fpm.pid
error_log = {root}/php-fpm.log
daemonize = no
process_control_timeout = 5

[www]
{user}listen = {sock}
listen.mode = 0666
pm = static
pm.max_children = 4
catch_workers_output = yes
clear_env = yes
security.limit_extensions = .php
"""


class PhpFpm:
    """php-fpm8.2 -F with its own configuration under `root`."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self.sock = self.root / "php.sock"
        self.conf = self.root / "php-fpm.conf"
        self.log = self.root / "php-fpm.log"
        self.proc = None

    @property
    def handler(self):
        """The SetHandler argument that sends .php files to this pool."""
        return "proxy:unix:%s|fcgi://localhost" % self.sock

    def start(self, timeout=20):
        if not os.path.exists(PHP_FPM):
            raise AssertionError("%s is missing: run t/deps.sh integration "
                                 "(package php8.2-fpm)" % PHP_FPM)
        # As root the master stays root and the workers run as www-data,
        # the user httpd's children run as; otherwise everything runs as
        # the caller and `user` must not be set.
        user = ("user = www-data\ngroup = www-data\n"
                if os.geteuid() == 0 else "")
        self.conf.write_text(FPM_CONF.format(root=self.root, sock=self.sock,
                                             user=user))
        out = open(self.root / "stderr.log", "ab")
        # -n: no php.ini (the defaults are what the scripts expect);
        # -F: stay in the foreground, a child of this process.
        self.proc = subprocess.Popen(
            [PHP_FPM, "-n", "-F", "-y", str(self.conf),
             "-d", "display_errors=stderr", "-d", "log_errors=On"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, cwd=str(self.root))
        out.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                rc, self.proc = self.proc.returncode, None
                raise AssertionError("php-fpm exited with %d:\n%s"
                                     % (rc, self.logs_text()))
            if self.sock.exists() and self._answers():
                return
            time.sleep(0.05)
        self.stop()
        raise AssertionError("php-fpm did not come up:\n" + self.logs_text())

    def _answers(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(1)
            s.connect(str(self.sock))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # graceful
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def logs_text(self):
        out = ""
        for f in (self.log, self.root / "stderr.log"):
            try:
                out += f.read_text("latin-1")
            except FileNotFoundError:
                pass
        return out[-4000:]


# --------------------------------------------------------------- HTTP

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pdftoken-test-backend"

    def log_message(self, fmt, *args):  # no stderr noise
        pass

    def _dispatch(self, head_only):
        backend = self.server.backend
        with backend.lock:
            backend.requests.append(self.requestline)
            backend.headers.append(dict(self.headers.items()))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = urllib.parse.urlsplit(self.path)
        route = backend.routes.get(parts.path)
        if route is None:
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "10")
            self.end_headers()
            if not head_only:
                self.wfile.write(b"not found\n")
            return
        query = urllib.parse.parse_qs(parts.query)
        route(self, query, head_only)

    def do_GET(self):
        self._dispatch(False)

    def do_HEAD(self):
        self._dispatch(True)

    def do_POST(self):
        self._dispatch(False)

    # -- helpers for routes

    def send_body(self, status, headers, body, head_only, chunked=False):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head_only:
            return
        if not chunked:
            self.wfile.write(body)
            return
        step = max(1, len(body) // 3)
        for i in range(0, len(body), step):
            piece = body[i:i + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def process_request(self, request, client_address):
        # One call per accepted TCP connection (its requests are then
        # read in a loop by one handler, keep-alive).
        with self.backend.lock:
            self.backend.connections += 1
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        # httpd closing a back-end connection (a client that went away, a
        # restart) is expected here, not worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class HttpBackend:
    """An HTTP/1.1 server in a thread on 127.0.0.1, with routes by path.

    A route is f(handler, query, head_only); handler.send_body() helps.
    `requests` holds every request line received, in order;
    `connections` counts the TCP connections accepted (connection_count()).
    """

    def __init__(self):
        self.routes = {}
        self.requests = []
        self.connections = 0
        self.headers = []
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.backend = self
        self.port = self.server.server_address[1]
        self.thread = None

    def route(self, path):
        def register(f):
            self.routes[path] = f
            return f
        return register

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.1},
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        if self.thread:
            self.thread.join(timeout=10)

    def lines_with(self, marker):
        with self.lock:
            return [line for line in self.requests if marker in line]

    def all_requests(self):
        with self.lock:
            return list(self.requests)

    def connection_count(self):
        """TCP connections accepted so far."""
        with self.lock:
            return self.connections


# ------------------------------------------ the application's routes

def add_report_routes(backend, pdf):
    """The routes of the dynamic-PDF tests, under /reports/.

    /reports/7        application/pdf with Content-Length; honours a
                      simple Range (bytes=A-B) with its own 206
    /reports/chunked  application/pdf, chunked transfer coding
    /reports/notype   no Content-Type at all, body %PDF-
    /reports/typed    Content-Type from ?ct=, Content-Disposition from ?cd=,
                      status from ?st= (default 200)
    /reports/split    no Content-Type, chunked, "%P" in a chunk of its own
    /reports/gzipped  Content-Encoding: gzip, Content-Type from ?ct= or none
    /reports/etag     application/pdf with ETag "v1"; If-None-Match: "v1"
                      gets a 304
    /reports/err500   500 with a PDF body
    /reports/json     application/json
    /reports/twotypes an empty Content-Type, then application/pdf; the
                      body has bytes before %PDF- (backend.junk_pdf)
    /reports/slow     application/pdf of about 6.5 MiB: the first 4 KiB,
                      then the rest in 64 KiB writes once
                      backend.slow_release is set (at most 60 s later);
                      backend.slow_done is set when it stops, and
                      backend.slow_aborted when the peer stopped reading
    """
    backend.slow_done = threading.Event()
    backend.slow_aborted = threading.Event()
    backend.slow_release = threading.Event()
    pdf_type = [("Content-Type", "application/pdf")]

    @backend.route("/reports/7")
    def report(h, q, head_only):
        rng = h.headers.get("Range") or ""
        if rng.startswith("bytes=") and "," not in rng:
            first, _, last = rng[6:].partition("-")
            if first.isdigit() and (last.isdigit() or last == ""):
                a = int(first)
                b = min(int(last) if last else len(pdf) - 1, len(pdf) - 1)
                if a <= b:
                    h.send_body(206, pdf_type + [
                        ("Content-Range", "bytes %d-%d/%d" % (a, b, len(pdf)))
                    ], pdf[a:b + 1], head_only)
                    return
        h.send_body(200, pdf_type + [("Accept-Ranges", "bytes")], pdf,
                    head_only)

    @backend.route("/reports/chunked")
    def chunked(h, q, head_only):
        h.send_body(200, pdf_type, pdf, head_only, chunked=True)

    @backend.route("/reports/notype")
    def notype(h, q, head_only):
        h.send_body(200, [], pdf, head_only)

    @backend.route("/reports/typed")
    def typed(h, q, head_only):
        headers = [("Content-Type", q["ct"][0])]
        if "cd" in q:
            headers.append(("Content-Disposition", q["cd"][0]))
        status = int(q["st"][0]) if "st" in q else 200
        h.send_body(status, headers, pdf, head_only)

    @backend.route("/reports/split")
    def split(h, q, head_only):
        """No Content-Type; the body's first chunk is "%P" alone, the rest
        comes 100 ms later, so that httpd passes it on separately."""
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        if head_only:
            return
        for piece in (pdf[:2], pdf[2:]):
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            h.wfile.flush()
            if piece == pdf[:2]:
                time.sleep(0.1)
        h.wfile.write(b"0\r\n\r\n")

    @backend.route("/reports/gzipped")
    def gzipped(h, q, head_only):
        """The PDF compressed by the back end itself (Content-Encoding),
        with the type from ?ct= or none."""
        headers = [("Content-Encoding", "gzip")]
        if "ct" in q:
            headers.append(("Content-Type", q["ct"][0]))
        h.send_body(200, headers, gzip.compress(pdf), head_only)

    @backend.route("/reports/etag")
    def etag(h, q, head_only):
        headers = pdf_type + [("ETag", '"v1"')]
        if h.headers.get("If-None-Match") == '"v1"':
            h.send_response(304)
            h.send_header("ETag", '"v1"')
            h.end_headers()
            return
        h.send_body(200, headers, pdf, head_only)

    @backend.route("/reports/err500")
    def err500(h, q, head_only):
        h.send_body(500, pdf_type, pdf, head_only)

    # mod_proxy_http takes the first Content-Type, empty, for
    # r->content_type; httpd then sends both headers as they came.
    backend.junk_pdf = b"\0\1\2\3\n" + pdf

    @backend.route("/reports/twotypes")
    def twotypes(h, q, head_only):
        h.send_body(200, [("Content-Type", ""),
                          ("Content-Type", "application/pdf")],
                    backend.junk_pdf, head_only)

    @backend.route("/reports/json")
    def json(h, q, head_only):
        h.send_body(200, [("Content-Type", "application/json")],
                    b'{"report": 7}\n', head_only)

    @backend.route("/reports/slow")
    def slow(h, q, head_only):
        h.connection.settimeout(2)
        h.close_connection = True
        try:
            h.send_response(200)
            h.send_header("Content-Type", "application/pdf")
            filler = b"%" + b"x" * 65534 + b"\n"
            h.send_header("Content-Length", str(4096 + 100 * len(filler)))
            h.end_headers()
            if head_only:
                return
            h.wfile.write(pdf[:4096].ljust(4096, b"\n"))
            h.wfile.flush()
            backend.slow_release.wait(60)
            for _ in range(100):
                h.wfile.write(filler)
                h.wfile.flush()
        except OSError:
            backend.slow_aborted.set()
        finally:
            backend.slow_done.set()
