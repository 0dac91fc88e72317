# Licensed under the Apache License, Version 2.0; see LICENSE.
"""HTTP/2 for the tests: H2Client, one connection to a test server over
h2 (TLS with ALPN), h2c (prior knowledge) or an HTTP/1.1 Upgrade, built on
the h2 library; curl(), the same requests through an independent client;
H2Response, an answer read like a client.Response.
"""

import os
import socket
import subprocess
import time

from client import Response, tls_wrap, to_bytes

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
        return [(to_bytes(n), to_bytes(v)) for n, v in fields]

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
