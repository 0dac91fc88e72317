# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Run a real Apache httpd with mod_pdftoken and talk HTTP to it.

Httpd writes a self-contained configuration (never /etc/apache2) into its
own directory, starts Debian's /usr/sbin/apache2 in the foreground on a
free 127.0.0.1 port, and stops it with SIGTERM.  Requests go over raw
sockets so that the tests control, and see, every header byte.

Configuration bodies use @NAME@ placeholders instead of str.format braces,
because httpd configuration is full of % and {}:

    @ROOT@     the server's directory        @DOCROOT@  @ROOT@/htdocs
    @PORT@     the listening port            @MODULE@   mod_pdftoken.so
    @SECRET@   @ROOT@/secret (random, made at construction)
"""

import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
from pathlib import Path

import pdftoken_ref
from samplepdf import make_pdf

APACHE = "/usr/sbin/apache2"
MODULES_DIR = "/usr/lib/apache2/modules"
REPO = Path(__file__).resolve().parents[2]
MODULE = os.environ.get("PDFTOKEN_MODULE",
                        str(REPO / ".libs" / "mod_pdftoken.so"))
MPM = os.environ.get("PDFTOKEN_MPM", "event")

# Sanitizer runs (make test-asan).  An instrumented module in Debian's
# uninstrumented apache2 needs the sanitizer runtime loaded first, so
# PDFTOKEN_HTTPD_PRELOAD goes into LD_PRELOAD of every apache2 the harness
# runs.  The runtimes then write their reports into <server>/sanitizer/,
# which must be empty when the server stops; PDFTOKEN_SANITIZER_LOG_DIR,
# when set, also keeps a copy of every report (the server trees are
# removed after the run).
HTTPD_PRELOAD = os.environ.get("PDFTOKEN_HTTPD_PRELOAD", "")
SANITIZER_LOG_DIR = os.environ.get("PDFTOKEN_SANITIZER_LOG_DIR", "")

# Error-log lines that mean a child died or memory was corrupted.
FATAL_LOG_PATTERNS = ("exit signal", "AH00052", "AH00060",
                      "Segmentation fault", "double free", "corrupted",
                      "stack smashing", "AddressSanitizer",
                      "runtime error:")

# Modules every server loads (names without the mod_ prefix).
BASE_MODULES = ("authz_core", "mime", "dir", "alias", "headers", "env",
                "setenvif")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def module_path():
    if not os.path.exists(MODULE):
        raise AssertionError(
            "mod_pdftoken is not built: %s does not exist (run make, or set "
            "PDFTOKEN_MODULE)" % MODULE)
    return MODULE


def cgi_module():
    """mod_cgid under the threaded event MPM, mod_cgi under prefork."""
    return "cgi" if MPM == "prefork" else "cgid"


def mpm_block():
    if MPM == "prefork":
        return ("LoadModule mpm_prefork_module %s/mod_mpm_prefork.so\n"
                "StartServers 3\nMinSpareServers 2\nMaxSpareServers 6\n"
                "MaxRequestWorkers 30\n" % MODULES_DIR)
    if MPM == "event":
        return ("LoadModule mpm_event_module %s/mod_mpm_event.so\n"
                "StartServers 2\nServerLimit 4\nThreadsPerChild 10\n"
                "MaxRequestWorkers 40\nMinSpareThreads 5\n"
                "MaxSpareThreads 30\n" % MODULES_DIR)
    raise AssertionError("PDFTOKEN_MPM must be event or prefork, not %r"
                         % MPM)


# ---------------------------------------------------------------- HTTP

class Response:
    """One HTTP response: status, headers in order (duplicates kept), body."""

    def __init__(self, request_head, raw, method):
        self.request_head = request_head
        self.raw = raw
        self.http09 = False
        self.protocol = "HTTP/1.1"
        if not raw.startswith(b"HTTP/"):
            # httpd answers a request line without a version (which is how
            # it reads a request line cut short by a raw CR LF) the HTTP/0.9
            # way: the body alone, no status line, no headers.
            self.http09 = True
            self.status, self.reason, self.headers = 0, "", []
            self.raw_head, self.rest, self.body = b"", raw, raw
            return
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            raise AssertionError("no end of headers in response to %r: %r"
                                 % (request_head, raw[:500]))
        self.raw_head = head
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3})(?: (.*))?$", lines[0])
        if not m:
            raise AssertionError("bad status line %r" % lines[0])
        self.status = int(m.group(1))
        self.reason = (m.group(2) or b"").decode("latin-1")
        self.headers = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or name != name.strip() or not name:
                raise AssertionError("malformed header line %r" % line)
            self.headers.append((name.decode("latin-1"),
                                 value.strip(b" \t").decode("latin-1")))
        self.rest = rest
        if method == "HEAD" or self.status in (204, 304) \
                or 100 <= self.status < 200:
            self.body = b""
        elif "chunked" in (self.get("Transfer-Encoding") or "").lower():
            self.body = _dechunk(rest)
        elif self.get("Content-Length") is not None:
            n = int(self.get("Content-Length"))
            if len(rest) != n:
                raise AssertionError("Content-Length %d but %d body bytes"
                                     % (n, len(rest)))
            self.body = rest
        else:
            self.body = rest
        self.protocol = lines[0].split(b" ")[0].decode("latin-1")
        self._remember_tokens()

    def _remember_tokens(self):
        # Every token the server hands out must stay out of its error log
        # (Httpd.log_problems).
        for name in ("Location", "Set-Cookie"):
            for value in self.get_all(name):
                for t in re.findall(r"[A-Za-z0-9_-]{60,}", value):
                    pdftoken_ref.remember(t)

    def get_all(self, name):
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def get(self, name):
        """The single value of header `name`, None if absent.

        Fails when the header appears more than once, so that a duplicate
        header is never silently ignored.
        """
        values = self.get_all(name)
        if len(values) > 1:
            raise AssertionError("header %s appears %d times: %r"
                                 % (name, len(values), values))
        return values[0] if values else None

    def __repr__(self):
        line = self.request_head.split(b"\r\n")[0]
        if len(line) > 300:
            line = line[:200] + b"...(%d bytes)..." % len(line) + line[-60:]
        head = self.raw_head.decode("latin-1")
        if len(head) > 3000:
            head = head[:3000] + "..."
        return "<Response %d to %r>\n%s" % (self.status, line, head)

    # -- what the module produces

    def set_cookies(self):
        return [parse_set_cookie(v) for v in self.get_all("Set-Cookie")]

    def location_target(self):
        """Path and query of Location, without scheme, host or fragment."""
        loc = self.get("Location")
        assert loc is not None, "no Location in %r" % self
        parts = urllib.parse.urlsplit(loc)
        return parts.path + ("?" + parts.query if parts.query else "")

    def location_query_values(self, name="pdftoken"):
        loc = self.get("Location")
        assert loc is not None, "no Location in %r" % self
        return query_values(urllib.parse.urlsplit(loc).query, name)

    def location_token(self, name="pdftoken"):
        values = self.location_query_values(name)
        assert len(values) == 1, \
            "expected one %s parameter in Location %r" % (
                name, self.get("Location"))
        return values[0]


def _dechunk(data):
    out = bytearray()
    while True:
        line, sep, data = data.partition(b"\r\n")
        if not sep:
            raise AssertionError("truncated chunked body")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        if data[size:size + 2] != b"\r\n":
            raise AssertionError("bad chunk terminator")
        data = data[size + 2:]


def query_values(query, name):
    """Raw values of every parameter called `name` in a query string."""
    values = []
    for part in query.split("&"):
        key, eq, value = part.partition("=")
        if key == name:
            values.append(value)
    return values


def parse_set_cookie(value):
    """(name, value, [(attribute-lowercase, value-or-None), ...])."""
    parts = value.split(";")
    name, eq, val = parts[0].strip().partition("=")
    assert eq, "Set-Cookie without '=': %r" % value
    attrs = []
    for part in parts[1:]:
        key, eq, v = part.strip().partition("=")
        attrs.append((key.strip().lower(), v.strip() if eq else None))
    return name.strip(), val.strip(), attrs


def tls_context(cafile, alpn=None):
    """A client context that trusts the test server's own certificate
    (`cafile`, made by Httpd) and checks it, name included: never a
    context with the checks turned off."""
    if not cafile:
        raise AssertionError("a TLS request needs the server's certificate "
                             "as its CA file")
    ctx = ssl.create_default_context(cafile=str(cafile))
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def tls_wrap(sock, cafile, alpn=None):
    # The certificate names IP:127.0.0.1, the only address servers bind.
    return tls_context(cafile, alpn).wrap_socket(sock,
                                                 server_hostname="127.0.0.1")


def raw_request(port, data, tls=False, timeout=20, cafile=None):
    """Send `data` as the whole request, byte for byte; return the Response.

    With tls, `cafile` is the server's certificate (Httpd.cert)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if tls:
            sock = tls_wrap(sock, cafile)
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    method = data.split(b" ", 1)[0].decode("latin-1")
    return Response(data, b"".join(chunks), method)


def _to_bytes(value):
    if isinstance(value, bytes):
        return value
    return str(value).encode("latin-1")


def http_request(port, method="GET", target="/", headers=(), body=b"",
                 host=None, tls=False, timeout=20, add_content_length=None,
                 cafile=None, source=None):
    """Send one request (Connection: close) and return its Response.

    target and header values may be bytes, so that a test can put any byte
    on the wire.  `headers` is a list of (name, value) pairs; a Host header
    is added unless one is given.  `source`: the client's own address, say
    127.0.0.2 for a second client (still loopback).
    """
    headers = list(headers)
    if not any(_to_bytes(n).lower() == b"host" for n, _ in headers):
        headers.insert(0, ("Host", host or "127.0.0.1:%d" % port))
    if add_content_length is None:
        add_content_length = bool(body) or method == "POST"
    if add_content_length:
        headers.append(("Content-Length", str(len(body))))
    headers.append(("Connection", "close"))
    head = _to_bytes(method) + b" " + _to_bytes(target) + b" HTTP/1.1\r\n"
    for n, v in headers:
        head += _to_bytes(n) + b": " + _to_bytes(v) + b"\r\n"
    head += b"\r\n"
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0) if source
                                    else None)
    try:
        if tls:
            sock = tls_wrap(sock, cafile)
        sock.sendall(head + body)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except ssl.SSLError as e:
                if chunks and "EOF" in str(e):
                    break
                raise
            if not data:
                break
            chunks.append(data)
    finally:
        sock.close()
    return Response(head, b"".join(chunks), _to_bytes(method).decode(
        "latin-1"))


# ------------------------------------------------------------- HTTP/2

class H2Response(Response):
    """One HTTP/2 (or fallback HTTP/1.1) answer, read like a Response."""

    def __init__(self, request_head, status, headers, body, method,
                 protocol="HTTP/2", stream_id=None):
        self.request_head = request_head
        self.http09 = False
        self.protocol = protocol
        self.stream_id = stream_id
        self.status = status
        self.reason = ""
        self.headers = list(headers)
        self.body = self.rest = body
        self.raw_head = "\r\n".join(
            ["%s %d" % (protocol, status)]
            + ["%s: %s" % h for h in self.headers]).encode("latin-1")
        self.raw = self.raw_head + b"\r\n\r\n" + body
        length = self.get("Content-Length")
        if length is not None and method != "HEAD" \
                and status not in (204, 304):
            if int(length) != len(body):
                raise AssertionError("content-length %s but %d body bytes "
                                     "in %r" % (length, len(body), self))
        self._remember_tokens()


class H2Client:
    """One connection to a harness server that speaks HTTP/2 if it can.

    mode "h2":      TLS, ALPN offering h2 and http/1.1, the server's
                    certificate checked against Httpd.cert;
    mode "h2c":     cleartext, HTTP/2 from the first byte (prior knowledge);
    mode "upgrade": cleartext, the first request as HTTP/1.1 with
                    `Upgrade: h2c` (RFC 7540 section 3.2).

    When the server does not take HTTP/2 (ALPN chose http/1.1, the upgrade
    was not answered with 101) the connection goes on as HTTP/1.1, as a
    browser's would, and `protocol` says so: "HTTP/2" or "HTTP/1.1".
    Requests are sent with send() and read with collect(), so several
    streams can be in flight at once; request() does one.  Everything the
    peer did to the connection is kept: `resets` (stream id -> error
    code), `goaway` (error code, or None) and `goaway_last` (its last
    stream id), `wire` (every byte read), `received` (every byte of
    every DATA frame, per stream).

    Header fields go out exactly as given (no splitting or joining of
    cookie fields by the client library): `cookie_fields` sends one h2
    `cookie` field per item.  `window` is the flow-control window the
    client opens, for each stream and for the connection.
    """

    def __init__(self, server, mode, timeout=20, window=1 << 24):
        import h2.config
        import h2.connection
        import h2.settings
        self.server = server
        self.mode = mode
        self.timeout = timeout
        self.authority = "127.0.0.1:%d" % server.port
        self.resets = {}
        self.goaway = None       # the GOAWAY's error code, if one came
        self.goaway_last = None  # and its last stream id
        self.received = {}
        self.first = None        # the upgrade request's own answer
        self.buffer = b""
        self.wire = bytearray()  # every byte read, after TLS
        sock = socket.create_connection(("127.0.0.1", server.port),
                                        timeout=timeout)
        if mode == "h2":
            if not server.tls:
                raise AssertionError("mode h2 needs a TLS server")
            sock = tls_wrap(sock, server.cert, alpn=("h2", "http/1.1"))
            alpn = sock.selected_alpn_protocol()
            self.protocol = "HTTP/2" if alpn == "h2" else "HTTP/1.1"
        elif mode in ("h2c", "upgrade"):
            if server.tls:
                raise AssertionError("mode %s needs a cleartext server"
                                     % mode)
            self.protocol = "HTTP/2" if mode == "h2c" else None
        else:
            raise AssertionError("unknown mode %r" % mode)
        self.sock = sock
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding=None,
            normalize_outbound_headers=False))
        # Flow-control windows as large as browsers open theirs (curl:
        # 32 MiB), so that a document rarely waits for a WINDOW_UPDATE,
        # and no server push.
        self.window = window
        codes = h2.settings.SettingCodes
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={
                codes.MAX_CONCURRENT_STREAMS: 100,
                codes.MAX_HEADER_LIST_SIZE:
                    self.conn.DEFAULT_MAX_HEADER_LIST_SIZE,
                codes.INITIAL_WINDOW_SIZE: window,
                codes.ENABLE_PUSH: 0})
        self.streams = {}
        if self.protocol == "HTTP/2":
            self.conn.initiate_connection()
            self._open_window()
            self._flush()

    def _open_window(self):
        # The connection's own window starts at 64 KiB whatever SETTINGS
        # say; only a WINDOW_UPDATE on stream 0 opens it.
        if self.window > 65535:
            self.conn.increment_flow_control_window(self.window - 65535)

    def __repr__(self):
        return "<H2Client %s %s to %s>" % (self.mode, self.protocol,
                                           self.authority)

    # -- sending

    def _fields(self, method, target, headers, cookies, cookie_fields):
        fields = [(":method", method), (":scheme", self.server.scheme),
                  (":authority", self.authority), (":path", target)]
        for n, v in headers:
            fields.append((n.lower(), v))
        if cookies:
            fields.append(("cookie", "; ".join(cookies)))
        for c in cookie_fields or ():
            fields.append(("cookie", c))
        return [(_to_bytes(n), _to_bytes(v)) for n, v in fields]

    def send(self, method, target, headers=(), cookies=None,
             cookie_fields=None):
        """Open a stream for one request (no body); returns its id."""
        if self.protocol is None:
            return self._upgrade(method, target, headers, cookies,
                                 cookie_fields)
        if self.protocol != "HTTP/2":
            raise AssertionError("the server did not take HTTP/2 on this "
                                 "connection: one request per connection")
        sid = self.conn.get_next_available_stream_id()
        fields = self._fields(method, target, headers, cookies,
                              cookie_fields)
        self.conn.send_headers(sid, fields, end_stream=True)
        self._flush()
        self.streams[sid] = {"method": method, "head": fields,
                             "headers": None, "body": bytearray(),
                             "done": False}
        return sid

    def _upgrade(self, method, target, headers, cookies, cookie_fields):
        settings = self.conn.initiate_upgrade_connection()
        lines = ["%s %s HTTP/1.1" % (method, target),
                 "Host: %s" % self.authority,
                 "Connection: Upgrade, HTTP2-Settings",
                 "Upgrade: h2c",
                 "HTTP2-Settings: %s" % settings.decode("ascii")]
        lines += ["%s: %s" % (n, v) for n, v in headers]
        cookie_values = list(cookie_fields or ())
        if cookies:
            cookie_values.insert(0, "; ".join(cookies))
        lines += ["Cookie: %s" % c for c in cookie_values]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(head)
        while b"\r\n\r\n" not in self.buffer:
            self._recv_raw()
        status_line = self.buffer.split(b"\r\n", 1)[0]
        if status_line.startswith(b"HTTP/1.1 101 "):
            self.protocol = "HTTP/2"
            self.buffer = self.buffer.partition(b"\r\n\r\n")[2]
            # Stream 1 is the upgraded request, half closed already.
            self.streams[1] = {"method": method, "head": head,
                               "headers": None, "body": bytearray(),
                               "done": False}
            self._open_window()
            self._flush()
            if self.buffer:
                data, self.buffer = self.buffer, b""
                self._handle(self.conn.receive_data(data))
            return 1
        # Declined: an HTTP/1.1 answer on an HTTP/1.1 connection.
        self.protocol = "HTTP/1.1"
        self.first = self._read_http1(head, method)
        return 0

    def _read_http1(self, head, method):
        top, _, rest = self.buffer.partition(b"\r\n\r\n")
        raw = top + b"\r\n\r\n"
        probe = Response(head, raw, "HEAD")
        if method != "HEAD" and probe.status not in (204, 304):
            length = probe.get("Content-Length")
            if length is not None:
                while len(rest) < int(length):
                    rest += self._recv_raw(keep=False)
            elif "chunked" in (probe.get("Transfer-Encoding") or ""):
                while not rest.endswith(b"0\r\n\r\n"):
                    rest += self._recv_raw(keep=False)
            else:
                while True:
                    chunk = self._recv_raw(keep=False, eof_ok=True)
                    if not chunk:
                        break
                    rest += chunk
        self.buffer = b""
        return Response(head, raw + rest, method)

    def _recv_raw(self, keep=True, eof_ok=False):
        data = self.sock.recv(65536)
        self.wire += data
        if not data and not eof_ok:
            raise AssertionError("connection closed by the server")
        if keep:
            self.buffer += data
        return data

    def _flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    # -- receiving

    def _handle(self, events):
        import h2.events as ev
        for e in events:
            sid = getattr(e, "stream_id", None)
            st = self.streams.get(sid)
            if st is None and sid:
                st = self.streams[sid] = {"method": "PUSH", "head": b"",
                                          "headers": None,
                                          "body": bytearray(), "done": False}
            if isinstance(e, ev.ResponseReceived):
                st["headers"] = e.headers
            elif isinstance(e, ev.TrailersReceived):
                st["trailers"] = e.headers
            elif isinstance(e, ev.DataReceived):
                st["body"] += e.data
                self.received.setdefault(e.stream_id, bytearray()).extend(
                    e.data)
                self.conn.acknowledge_received_data(
                    e.flow_controlled_length, e.stream_id)
            elif isinstance(e, ev.StreamEnded):
                st["done"] = True
            elif isinstance(e, ev.StreamReset):
                self.resets[e.stream_id] = e.error_code
                if st is not None:
                    st["done"] = True
            elif isinstance(e, ev.ConnectionTerminated):
                self.goaway = e.error_code
                self.goaway_last = e.last_stream_id
        self._flush()

    def collect(self, stream_ids):
        """The answers of the given streams, in the same order; fails on
        a GOAWAY that leaves one of them unanswered (an error, or one
        whose last stream is below theirs)."""
        if stream_ids == [0] and self.first is not None:
            return [self.first]
        deadline = time.time() + self.timeout
        while not all(self.streams[s]["done"] for s in stream_ids):
            # A GOAWAY lets the streams up to its last one finish.
            lost = [s for s in stream_ids if self.goaway is not None
                    and (self.goaway != 0 or s > self.goaway_last)
                    and not self.streams[s]["done"]]
            if lost:
                raise AssertionError(
                    "GOAWAY (error %s, last stream %s) leaves streams %s "
                    "unanswered" % (self.goaway, self.goaway_last, lost))
            if time.time() > deadline:
                raise AssertionError("no complete answer on streams %s in "
                                     "%ds" % (stream_ids, self.timeout))
            data = self.sock.recv(65536)
            self.wire += data
            if not data:
                raise AssertionError("connection closed with streams %s "
                                     "open" % stream_ids)
            self._handle(self.conn.receive_data(data))
        out = []
        for sid in stream_ids:
            st = self.streams[sid]
            if sid in self.resets:
                raise AssertionError("stream %d reset by the server (error "
                                     "%s)" % (sid, self.resets[sid]))
            fields = [(n.decode("latin-1"), v.decode("latin-1"))
                      for n, v in st["headers"]]
            status = int(dict(fields)[":status"])
            headers = [(n, v) for n, v in fields if not n.startswith(":")]
            head = st["head"]
            if not isinstance(head, bytes):
                f = dict(head)
                head = b"\r\n".join(
                    [b"%s %s HTTP/2" % (f[b":method"], f[b":path"])]
                    + [n + b": " + v for n, v in head])
            out.append(H2Response(head, status, headers, bytes(st["body"]),
                                  st["method"], stream_id=sid))
        return out

    def request(self, method, target, **kw):
        """One request, its answer: an HTTP/1.1 one when the server did
        not take HTTP/2 (a fresh HTTP/1.1 exchange on this connection)."""
        if self.protocol == "HTTP/1.1" and self.first is None:
            return self._http1(method, target, **kw)
        sid = self.send(method, target, **kw)
        [r] = self.collect([sid])
        return r

    def _http1(self, method, target, headers=(), cookies=None,
               cookie_fields=None):
        lines = ["%s %s HTTP/1.1" % (method, target),
                 "Host: %s" % self.authority]
        lines += ["%s: %s" % (n, v) for n, v in headers]
        values = list(cookie_fields or ())
        if cookies:
            values.insert(0, "; ".join(cookies))
        lines += ["Cookie: %s" % c for c in values]
        lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(head)
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self._recv_raw()
        return self._read_http1(head, method)

    def ping(self):
        """A PING answered: the connection is alive and read."""
        import h2.events as ev
        self.conn.ping(b"pdftoken")
        self._flush()
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            data = self.sock.recv(65536)
            self.wire += data
            if not data:
                raise AssertionError("connection closed on PING")
            events = self.conn.receive_data(data)
            self._handle(events)
            if any(isinstance(e, ev.PingAckReceived) for e in events):
                return
        raise AssertionError("no PING ACK")

    def close(self):
        try:
            if self.protocol == "HTTP/2":
                self.conn.close_connection()
                self._flush()
        except OSError:
            pass
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def curl(server, method, target, mode, headers=(), cookies=None,
         timeout=20):
    """The same request through curl (libcurl on nghttp2): an independent
    HTTP/2 client.  mode as for H2Client: "h2" (--http2 over TLS, the
    server's certificate as --cacert), "h2c" (--http2-prior-knowledge),
    "upgrade" (--http2 on http://, Upgrade: h2c).  Returns an H2Response
    whose `protocol` is the version curl used."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        hdr, body = os.path.join(d, "h"), os.path.join(d, "b")
        args = ["curl", "-sS", "--max-time", str(timeout), "-D", hdr,
                "-o", body, "-w", "%{http_version}", "--path-as-is"]
        if method == "HEAD":
            args.append("--head")
        elif method != "GET":
            args += ["-X", method]
        if mode == "h2":
            args += ["--http2", "--cacert", str(server.cert)]
        elif mode == "h2c":
            args.append("--http2-prior-knowledge")
        elif mode == "upgrade":
            args.append("--http2")
        else:
            raise AssertionError("unknown mode %r" % mode)
        for n, v in headers:
            args += ["-H", "%s: %s" % (n, v)]
        if cookies:
            args += ["-H", "Cookie: " + "; ".join(cookies)]
        args.append(server.url(target))
        p = subprocess.run(args, capture_output=True, timeout=timeout + 5)
        if p.returncode != 0:
            raise AssertionError("curl %s failed (%d): %s" % (
                " ".join(args), p.returncode, p.stderr.decode("latin-1")))
        version = p.stdout.decode("ascii").strip()
        with open(hdr, "rb") as f:
            blocks = f.read().decode("latin-1").split("\r\n\r\n")
        with open(body, "rb") as f:
            data = f.read()
    # The last block is the final answer (after a 101, say).
    lines = [b for b in blocks if b.strip()][-1].split("\r\n")
    status = int(lines[0].split(" ")[1])
    hdrs = []
    for line in lines[1:]:
        n, _, v = line.partition(":")
        hdrs.append((n, v.strip()))
    protocol = {"2": "HTTP/2", "1.1": "HTTP/1.1"}.get(version, version)
    return H2Response(("%s %s (curl %s)" % (method, target, mode)).encode(
        "latin-1"), status, hdrs, data, method, protocol=protocol)


# --------------------------------------------------------------- httpd

class Httpd:
    """One Apache httpd instance with its own directory tree."""

    def __init__(self, root, tls=False, modules=(), secret_directive=True):
        self.root = Path(root)
        self.docroot = self.root / "htdocs"
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self.port = free_port()
        self.extra_modules = list(modules)
        self.secret_directive = secret_directive
        self.proc = None
        self.conf = self.root / "httpd.conf"
        self.error_log = self.root / "logs" / "error.log"
        self.access_log = self.root / "logs" / "access.log"
        self.stderr_log = self.root / "logs" / "stderr.log"
        self.sanitizer_dir = self.root / "sanitizer"
        for d in (self.root, self.docroot, self.root / "logs",
                  self.root / "run"):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)
        self.secret_path = self.root / "secret"
        self.write_secret(self.secret_path, secrets.token_hex(32) + "\n")
        self.body = ""
        self.base_used = True
        if tls:
            self._make_certificate()

    # -- files

    def write(self, rel, data, mode=0o644, base=None):
        """Write a file below the docroot (or `base`), dirs made 0755."""
        base = Path(base) if base else self.docroot
        path = base / rel
        self._mkdirs(path.parent)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        path.chmod(mode)
        return path

    def write_pdf(self, rel, label=None, pages=3, base=None):
        data = make_pdf(label or str(rel), pages=pages)
        self.write(rel, data, base=base)
        return data

    def _mkdirs(self, d):
        d = Path(d)
        missing = []
        while not d.exists():
            missing.append(d)
            d = d.parent
        for m in reversed(missing):
            m.mkdir()
            m.chmod(0o755)

    def write_secret(self, path, content):
        path = Path(path)
        self._mkdirs(path.parent)
        path.write_bytes(_to_bytes(content) if isinstance(content, str)
                         else content)
        path.chmod(0o644)
        return path

    @property
    def secret(self):
        return pdftoken_ref.read_secret(self.secret_path)

    def _make_certificate(self):
        self.cert = self.root / "cert.pem"
        self.key = self.root / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
             "-keyout", str(self.key), "-out", str(self.cert),
             "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True)
        self.key.chmod(0o600)

    # -- configuration

    def substitute(self, text):
        return (text.replace("@DOCROOT@", str(self.docroot))
                .replace("@ROOT@", str(self.root))
                .replace("@PORT@", str(self.port))
                .replace("@MODULE@", MODULE)
                .replace("@SECRET@", str(self.secret_path)))

    def base_config(self):
        mods = list(BASE_MODULES) + [m for m in self.extra_modules
                                     if m not in BASE_MODULES]
        if self.tls:
            mods += [m for m in ("socache_shmcb", "ssl") if m not in mods]
        lines = [
            'ServerRoot "@ROOT@"',
            'DefaultRuntimeDir "@ROOT@/run"',
            'PidFile "@ROOT@/run/httpd.pid"',
            'Mutex file:@ROOT@/run default',
            'Listen 127.0.0.1:@PORT@' + (" https" if self.tls else ""),
            'ServerName 127.0.0.1:@PORT@',
            'ErrorLog "@ROOT@/logs/error.log"',
            'LogFormat "%{X-Test-Id}i %>s %{PDFTOKEN}e" pdftoken',
            'CustomLog "@ROOT@/logs/access.log" pdftoken',
            'Timeout 30',
            'KeepAlive Off',
            mpm_block(),
        ]
        # Servers stop gracefully (see stop()): bounded, like the SIGTERM
        # it replaces.
        lines.append("GracefulShutdownTimeout 10")
        if os.geteuid() == 0:
            lines += ["User www-data", "Group www-data"]
        for m in mods:
            lines.append("LoadModule %s_module %s/mod_%s.so"
                         % (m, MODULES_DIR, m))
        if "cgid" in mods:
            lines.append('ScriptSock "@ROOT@/run/cgid.sock"')
        lines += [
            "LoadModule pdftoken_module @MODULE@",
            # pdftoken:debug: the module says why at info/debug, and its
            # messages must still never carry a token.  (After LoadModule:
            # a per-module level needs the module loaded.)
            "LogLevel notice pdftoken:debug",
            "TypesConfig /etc/mime.types",
            "AddType application/pdf .pdf",
            "AddType text/html .html",
            "AddType text/plain .txt",
            'DocumentRoot "@DOCROOT@"',
            "<Directory />",
            "    AllowOverride None",
            "    Require all denied",
            "</Directory>",
            '<Directory "@ROOT@">',
            "    Options FollowSymLinks",
            "    AllowOverride None",
            "    Require all granted",
            "</Directory>",
        ]
        if self.tls:
            lines += ["SSLEngine on",
                      'SSLCertificateFile "%s"' % self.cert,
                      'SSLCertificateKeyFile "%s"' % self.key,
                      'SSLSessionCache "shmcb:@ROOT@/run/ssl_scache(512000)"']
        if self.secret_directive:
            lines.append('PdfTokenSecretFile "@SECRET@"')
        return "\n".join(lines) + "\n"

    def configure(self, body="", base=True):
        """Write httpd.conf: the base configuration, then `body`."""
        self.body = body
        self.base_used = base
        text = (self.base_config() if base else "") + body + "\n"
        self.conf.write_text(self.substitute(text))
        self.conf.chmod(0o644)
        return self.conf

    def configtest(self):
        """Run `apache2 -t`; return (exit status, stdout + stderr)."""
        p = subprocess.run([APACHE, "-t", "-f", str(self.conf)],
                           capture_output=True, timeout=60,
                           env=self.httpd_env())
        return p.returncode, (p.stdout + p.stderr).decode("latin-1")

    # -- process

    def httpd_env(self):
        """The environment apache2 runs in: ours, plus the sanitizer
        runtime and its options when PDFTOKEN_HTTPD_PRELOAD is set."""
        env = dict(os.environ)
        if not HTTPD_PRELOAD:
            return env
        # The children run as www-data: the report directory must be
        # writable by them.
        self._mkdirs(self.sanitizer_dir)
        self.sanitizer_dir.chmod(0o777)
        env["LD_PRELOAD"] = " ".join(
            p for p in (HTTPD_PRELOAD, env.get("LD_PRELOAD", "")) if p)
        # Defaults first, so that the caller's options override them; the
        # log path last, so that every report lands where it is checked.
        # httpd's own SIGSEGV handler would hide ASan's report (and its
        # stack) behind a bare "exit signal Segmentation fault".
        env["ASAN_OPTIONS"] = ":".join(
            p for p in ("detect_leaks=0:abort_on_error=0:"
                        "allow_user_segv_handler=0",
                        env.get("ASAN_OPTIONS", ""),
                        "log_path=%s/asan" % self.sanitizer_dir) if p)
        # gcc's libubsan may still print to stderr (logs/stderr.log),
        # where "runtime error:" is one of the fatal patterns.
        env["UBSAN_OPTIONS"] = ":".join(
            p for p in ("print_stacktrace=1:halt_on_error=1",
                        env.get("UBSAN_OPTIONS", ""),
                        "log_path=%s/ubsan" % self.sanitizer_dir) if p)
        return env

    def sanitizer_reports(self):
        """[(file name, text)] of every ASan/UBSan report of this server."""
        if not self.sanitizer_dir.is_dir():
            return []
        reports = []
        for f in sorted(self.sanitizer_dir.iterdir()):
            text = f.read_bytes().decode("latin-1")
            reports.append((f.name, text))
            if SANITIZER_LOG_DIR:
                keep = Path(SANITIZER_LOG_DIR)
                keep.mkdir(parents=True, exist_ok=True)
                (keep / ("%s-%s" % (self.root.name, f.name))).write_text(
                    text, "latin-1")
        return reports

    def start(self, expect_failure=False, timeout=30):
        module_path()
        if not self.conf.exists():
            self.configure()
        self._starts = self._count_starts()
        stderr = open(self.stderr_log, "ab")
        self.proc = subprocess.Popen(
            [APACHE, "-f", str(self.conf), "-DFOREGROUND"],
            env=self.httpd_env(),
            stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
            start_new_session=True, cwd=str(self.root))
        stderr.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                self.proc = None
                if expect_failure:
                    return rc
                raise AssertionError(
                    "httpd exited with status %d at start-up:\n%s"
                    % (rc, self.logs_text()))
            if self._count_starts() > self._starts and self._answers() \
                    and self._cgid_ready():
                if expect_failure:
                    raise AssertionError("httpd started although it "
                                         "should have refused to")
                return 0
            time.sleep(0.05)
        self.stop()
        raise AssertionError("httpd did not come up in %ds:\n%s"
                             % (timeout, self.logs_text()))

    def _cgid_ready(self):
        # mod_cgid's daemon makes its socket (ScriptSock, with the
        # parent's pid appended) after the server already answers; a CGI
        # request before that gets a 503 on a loaded machine.
        if not self.base_used or "cgid" not in self.extra_modules \
                or "ScriptSock" in self.body:
            return True
        return any(p.name.startswith("cgid.sock.")
                   for p in (self.root / "run").iterdir())

    def _answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port),
                                          timeout=1):
                return True
        except OSError:
            return False

    def _count_starts(self):
        # AH00489/AH00094: "... configured -- resuming normal operations"
        return self.error_text().count("resuming normal operations")

    def restart(self, graceful=False, timeout=30):
        """SIGHUP (or SIGUSR1) the parent and wait for it to come back."""
        assert self.proc is not None
        before = self._count_starts()
        self.proc.send_signal(signal.SIGUSR1 if graceful else signal.SIGHUP)
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, \
                "httpd died on restart:\n" + self.logs_text()
            if self._count_starts() > before and self._answers():
                time.sleep(0.3)
                return
            time.sleep(0.05)
        raise AssertionError("httpd did not restart:\n" + self.logs_text())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            # Stop gracefully: on SIGTERM the event MPM's children close
            # their workers' sockets from the main thread
            # (close_worker_sockets), a race inside httpd that crashes a
            # child about once in 200 stops, with or without this module,
            # and the crash check would fail the test.
            proc.send_signal(signal.SIGWINCH)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                raise AssertionError("httpd did not stop within 30s")

    # -- logs

    def error_text(self):
        try:
            return self.error_log.read_bytes().decode("latin-1")
        except FileNotFoundError:
            return ""

    def logs_text(self):
        out = self.error_text()
        try:
            out += self.stderr_log.read_bytes().decode("latin-1")
        except FileNotFoundError:
            pass
        return out[-6000:]

    def log_problems(self):
        """What is wrong with this server's error log (empty list if ok)."""
        text = self.error_text()
        try:
            text += self.stderr_log.read_bytes().decode("latin-1")
        except FileNotFoundError:
            pass
        problems = []
        for pattern in FATAL_LOG_PATTERNS:
            for line in text.splitlines():
                if pattern in line:
                    problems.append("%s: %s" % (pattern, line))
        for name, report in self.sanitizer_reports():
            problems.append("sanitizer report %s:\n%s" % (name,
                                                          report[:6000]))
        for token in sorted(pdftoken_ref.SEEN_TOKENS):
            if token in text:
                problems.append("issued/minted token %s... appears in the "
                                "error log" % token[:12])
        return problems

    def error_log_size(self):
        try:
            return self.error_log.stat().st_size
        except FileNotFoundError:
            return 0

    def error_log_since(self, offset, settle=0.2):
        time.sleep(settle)
        with open(self.error_log, "rb") as f:
            f.seek(offset)
            return f.read().decode("latin-1")

    def access_log_entry(self, test_id, timeout=5):
        """(status, PDFTOKEN) logged for the request with X-Test-Id."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                lines = self.access_log.read_text("latin-1").splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines:
                fields = line.split(" ")
                if fields[0] == test_id:
                    return fields[1], fields[2]
            time.sleep(0.05)
        raise AssertionError("no access log line for %s" % test_id)

    # -- requests

    def url(self, target):
        return "%s://127.0.0.1:%d%s" % (self.scheme, self.port, target)

    def request(self, method, target, headers=(), cookies=None, body=b"",
                host=None, **kw):
        headers = list(headers)
        if cookies:
            headers.append(("Cookie", "; ".join(cookies)))
        return http_request(self.port, method, target, headers=headers,
                            body=body, host=host, tls=self.tls,
                            cafile=self.cert if self.tls else None, **kw)

    def get(self, target, **kw):
        return self.request("GET", target, **kw)

    def raw(self, data):
        return raw_request(self.port, data, tls=self.tls,
                           cafile=self.cert if self.tls else None)

    def head(self, target, **kw):
        return self.request("HEAD", target, **kw)

    def first_visit(self, target, name="pdftoken", **kw):
        """GET without a token: returns (response, token, cookie pair)."""
        r = self.get(target, **kw)
        assert r.status == 302, r
        token = r.location_token(name)
        cookie = None
        prefix = "%s_" % name
        for cname, cval, _ in r.set_cookies():
            if cname.startswith(prefix) and cval == token:
                cookie = "%s=%s" % (cname, cval)
        assert cookie, "no cookie for the token in %r" % r
        return r, token, cookie

    def view(self, target, name="pdftoken", **kw):
        """A browser's whole visit: redirect, then follow with the cookie."""
        r, token, cookie = self.first_visit(target, name=name, **kw)
        return self.get(r.location_target(), cookies=[cookie], **kw)


class ServerPool:
    """Makes Httpd instances under one directory and stops them all."""

    def __init__(self, base):
        self.base = Path(base)
        self.servers = []

    def make(self, name="httpd", **kw):
        root = self.base / ("%s-%d" % (name, len(self.servers)))
        server = Httpd(root, **kw)
        self.servers.append(server)
        return server

    def close(self):
        problems = []
        for s in self.servers:
            try:
                s.stop()
            except AssertionError as e:
                problems.append("%s: %s" % (s.root, e))
            problems += ["%s: %s" % (s.root.name, p) for p in s.log_problems()]
        self.servers = []
        return problems


def make_workdir():
    """A directory under /tmp that the www-data children can read."""
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="pdftoken-it-", dir="/tmp"))
    d.chmod(0o755)
    return d


def remove_workdir(d):
    if os.environ.get("PDFTOKEN_KEEP_TMP"):
        return
    shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------- Content-Disposition

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
