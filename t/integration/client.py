# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The tests' HTTP/1.1 client: one request per connection, over raw sockets
(TLS checked against the test server's own certificate), so that a test
controls, and sees, every header byte; and Response, which parses an
answer and keeps every header in order, duplicates included.

Every token a response hands out (Location, Set-Cookie) is remembered in
pdftoken_ref.SEEN_TOKENS: no server's error log may show one
(httpd.Httpd.log_problems).
"""

import re
import socket
import ssl
import urllib.parse

import pdftoken_ref

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
            self.body = dechunk(rest)
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


def dechunk(data):
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


def to_bytes(value):
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
    if not any(to_bytes(n).lower() == b"host" for n, _ in headers):
        headers.insert(0, ("Host", host or "127.0.0.1:%d" % port))
    if add_content_length is None:
        add_content_length = bool(body) or method == "POST"
    if add_content_length:
        headers.append(("Content-Length", str(len(body))))
    headers.append(("Connection", "close"))
    head = to_bytes(method) + b" " + to_bytes(target) + b" HTTP/1.1\r\n"
    for n, v in headers:
        head += to_bytes(n) + b": " + to_bytes(v) + b"\r\n"
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
    return Response(head, b"".join(chunks), to_bytes(method).decode(
        "latin-1"))
