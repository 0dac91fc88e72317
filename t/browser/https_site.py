# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The HTTPS side of the browser suite (issue 13, issue 14's h2 part).

    TestCA      a throw-away certificate authority made per run (openssl),
                a server certificate for SITE and SIBLING signed by it, and
                an NSS database that trusts it and nothing else: the
                browsers are told to trust this CA only, never to ignore
                certificate errors.
    vhost       httpd's TLS virtual host on 127.0.0.1:<free port>,
                `Protocols h2 http/1.1` (Debian's mod_http2), the same
                docroot and <Directory> scopes as the HTTP site.
    PlantSite   the planter of issue 13: on https://SIBLING:<port> (a
                sibling host under the registrable domain DOMAIN) and on
                http://SITE:<another port> (the site's own name over plain
                HTTP, as a network attacker would answer it: cookies are
                not port-scoped), a page that fetches a real token from the
                site (a first request of its own, server side) and plants
                cookies carrying it, by Set-Cookie and by document.cookie.

The host names resolve to 127.0.0.1 inside the browsers only (Chromium's
--host-resolver-rules, Firefox's network.dns.localDomains); nothing is
sent anywhere else.
"""

import html
import json
import secrets
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import crosssite
import pdftoken_ref

SITE = "pdf.site.test"
SIBLING = "evil.site.test"
DOMAIN = "site.test"
# Where h3 and h4's planter fetches its token from: not the browsers'
# 127.0.0.1, so that a token bound to the client address is not theirs.
PLANTER_ADDRESS = "127.0.0.2"
# The token lifetime (cookie Max-Age) of h1 and h2's scopes.
H_TIMEOUT = 30
# partner.test and other.test: issue 22's partner sites (crosssite.py)
HOSTS = (SITE, SIBLING) + crosssite.HOSTS

# The fragment of issue 13's attack.
FDF_ATTACK = "#FDF=javascript:alert(1)"

# Pile-up (p0-p3): first requests an attacker page forces, how many the
# p0 measurement of each method sends, and the methods p0 compares.
FLOOD = 300
FLOOD_PROBE = 24
FLOOD_METHODS = ("reopen", "popups", "popup", "opener", "iframes", "images")
FLOOD_INTERVAL_MS = 20


# ------------------------------------------------------------------ CA

class TestCA:
    """A CA of this run only, and the site's certificate signed by it."""

    def __init__(self, d):
        self.dir = Path(d)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cert = self.dir / "ca.pem"
        self.key = self.dir / "ca.key"
        self.server_cert = self.dir / "server.pem"
        self.server_key = self.dir / "server.key"
        self.nssdb = self.dir / "nssdb"
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-nodes"]
        self._openssl(["req", "-x509"] + ec + [
            "-keyout", str(self.key), "-out", str(self.cert), "-days", "2",
            "-subj", "/CN=mod_pdftoken browser suite test CA %s"
            % secrets.token_hex(4),
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        csr = self.dir / "server.csr"
        self._openssl(["req", "-new"] + ec + [
            "-keyout", str(self.server_key), "-out", str(csr),
            "-subj", "/CN=%s" % SITE])
        ext = self.dir / "server.ext"
        ext.write_text(
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\n"
            "extendedKeyUsage=serverAuth\n"
            "subjectAltName=%s\n" % ",".join("DNS:" + h for h in HOSTS))
        self._openssl(["x509", "-req", "-in", str(csr), "-CA", str(self.cert),
                       "-CAkey", str(self.key), "-CAcreateserial",
                       "-out", str(self.server_cert), "-days", "2",
                       "-extfile", str(ext)])
        for k in (self.key, self.server_key):
            k.chmod(0o600)
        # httpd's children (www-data) never read the key: the parent does
        self._nss(self.nssdb)

    @staticmethod
    def _openssl(args):
        subprocess.run(["openssl"] + args, check=True, capture_output=True)

    def _nss(self, d):
        """An NSS database (cert9.db, key4.db) trusting this CA for TLS
        servers ("C,,") and holding nothing else."""
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["certutil", "-N", "-d", "sql:%s" % d,
                        "--empty-password"], check=True, capture_output=True)
        subprocess.run(["certutil", "-A", "-d", "sql:%s" % d,
                        "-n", "mod_pdftoken test CA", "-t", "C,,",
                        "-i", str(self.cert)], check=True,
                       capture_output=True)
        out = subprocess.run(["certutil", "-L", "-d", "sql:%s" % d],
                             check=True, capture_output=True,
                             text=True).stdout
        if "mod_pdftoken test CA" not in out:
            raise SystemExit("certutil did not store the test CA:\n" + out)

    def install_nssdb(self, d):
        """Copy the database to d (Chromium: $HOME/.pki/nssdb; Firefox:
        the profile directory)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        for f in self.nssdb.iterdir():
            (d / f.name).write_bytes(f.read_bytes())

    def client_context(self):
        """Trusts this CA and no other."""
        ctx = ssl.create_default_context(cafile=str(self.cert))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    def server_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.server_cert), str(self.server_key))
        return ctx


def vhost_config(port, ca):
    """The TLS virtual host: h2 first, HTTP/1.1 for who lacks it."""
    return "\n".join([
        "Listen 127.0.0.1:%d https" % port,
        'SSLSessionCache "shmcb:@ROOT@/run/ssl_scache(512000)"',
        "<VirtualHost 127.0.0.1:%d>" % port,
        "    ServerName %s" % SITE,
        "    SSLEngine on",
        '    SSLCertificateFile "%s"' % ca.server_cert,
        '    SSLCertificateKeyFile "%s"' % ca.server_key,
        "    Protocols h2 http/1.1",
        # the base configuration says Off for the raw-socket tests; a
        # browser's h2 connection carries many requests
        "    KeepAlive On",
        "</VirtualHost>",
    ]) + "\n"


def first_visit(port, path, ca, source=None, user_agent=None):
    """The planter's own first request to the site over HTTPS (h1.1,
    SNI SITE, verified against the test CA), from the address `source`
    (default 127.0.0.1, the browsers' own), claiming `user_agent` (the
    victim's, which its visit to the planter's page showed): (token,
    cookie name)."""
    status, head = crosssite.head_of(port, path, ca, user_agent, source)
    if status != 302:
        raise RuntimeError("first visit of %s: %d" % (path, status))
    token = name = None
    value = ""
    for k, v in head:
        if k == "location":
            q = parse_qs(urlsplit(v).query)
            token = (q.get("pdftoken") or [None])[0]
        elif k == "set-cookie":
            n, _, rest = v.partition("=")
            if token is None or rest.split(";")[0] == token:
                name, value = n, rest.split(";")[0]
    if not token or not name or value != token:
        raise RuntimeError("first visit of %s: no token and cookie in %s"
                           % (path, head))
    pdftoken_ref.remember(token)
    return token, name


# ------------------------------------------------------------ planter

PLANT_PAGE = """<!doctype html>
<meta charset="utf-8"><title>planter</title>
<h1>planter on %(origin)s</h1>
<a id="go" href="%(target_html)s">the report</a>
<script>
var plant = %(plant)s;
plant.afterHeaders = document.cookie;
// Then the same cookies by script, each after removing what the header
// may have stored under its name, so that what stays is the script's.
plant.script.forEach(function (c) {
  document.cookie = c.replace(/=[^;]*/, '=') + '; Max-Age=0';
});
plant.afterClear = document.cookie;
plant.script.forEach(function (c) { document.cookie = c; });
plant.afterScript = document.cookie;
window.pdftokenPlant = plant;
</script>
"""


class PlantSite:
    """Two servers, one plain and one TLS, answering /plant/<b>/<case>.

    Each answer mints a token for the case's document with a first request
    of its own to the site, claiming the visiting browser's User-Agent,
    then plants the case's cookies (names and
    attributes from the case's `plant` list) by Set-Cookie and again by
    document.cookie, and links to the tokenized URL with the attacker's
    fragment.
    """

    def __init__(self, ca):
        self.ca = ca
        self.site_port = None  # the site's HTTPS port, set by the caller
        self.plants = {}       # "/plant/<b>/<case>" -> case config
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                c = site.plants.get(self.path.split("?")[0])
                if c is None:
                    self.send_error(404)
                    return
                try:
                    token, name = first_visit(
                        site.site_port, c["path"], site.ca, c.get("source"),
                        self.headers.get("User-Agent"))
                except (OSError, RuntimeError) as e:
                    self.send_error(502, str(e)[:200])
                    return
                suffix = name[-pdftoken_ref.SUFFIX_LEN:]
                cookies = [p.replace("@SUFFIX@", suffix)
                           .replace("@TOKEN@", token) for p in c["plant"]]
                target = "%s?pdftoken=%s%s" % (c["url"], token, FDF_ATTACK)
                origin = "%s://%s" % (c["scheme"], self.headers.get("Host"))
                plant = {"token": token, "suffix": suffix, "target": target,
                         "script": cookies, "header": cookies}
                data = (PLANT_PAGE % {
                    "origin": html.escape(origin),
                    "target_html": html.escape(target),
                    "plant": json.dumps(plant)}).encode("utf-8")
                self.send_response(200)
                for v in cookies:
                    self.send_header("Set-Cookie", v)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        # Port 0: bound at once, so no other server of the run gets it.
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.tls = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http_port = self.http.server_address[1]
        self.tls_port = self.tls.server_address[1]
        self.tls.socket = ca.server_context().wrap_socket(
            self.tls.socket, server_side=True)
        self.threads = []
        for s in (self.http, self.tls):
            s.daemon_threads = True
            self.threads.append(threading.Thread(target=s.serve_forever,
                                                 daemon=True))

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        for s, t in zip((self.http, self.tls), self.threads):
            if t.is_alive():
                s.shutdown()
            s.server_close()


# --------------------------------------------------------------- site

FLOOD_PAGE = """<!doctype html>
<meta charset="utf-8"><title>attacker: pile-up</title>
<h1>attacker: pile-up</h1>
<button id="go">go</button>
<script>
// Force first requests for the site's PDFs, one every F.interval ms, the
// way F.method says: top-level navigations of one popup window (popup), of
// 8 named popup windows in turn by setting their location (popups) or by
// window.open(url, name) (reopen), of this page's own window driven from a
// popup it opens (opener); cross-site iframes; image requests.
var F = %(flood)s;
var driver = /[?&]driver=1/.test(location.search);
window.floodState = { sent: 0, done: false, windows: 0, driver: driver };
function each(fn) {
  var i = 0;
  var t = setInterval(function () {
    if (i >= F.urls.length) {
      clearInterval(t);
      window.floodState.done = true;
      return;
    }
    try {
      fn(F.urls[i], i);
    } catch (e) {
      window.floodState.error = String(e);
    }
    i += 1;
    window.floodState.sent = i;
  }, F.interval);
}
var POPUP = 'popup,width=320,height=240';
function go() {
  var ws = [];
  if (F.method === 'popup' || F.method === 'popups') {
    var n = F.method === 'popup' ? 1 : 8;
    for (var k = 0; k < n; k++) {
      var w = window.open('about:blank', 'flood' + k, POPUP);
      if (w) ws.push(w);
    }
    window.floodState.windows = ws.length;
    each(function (u, i) { ws[i %% ws.length].location.href = u; });
  } else if (F.method === 'reopen') {
    each(function (u, i) { window.open(u, 'flood' + (i %% 8), POPUP); });
  } else if (F.method === 'opener') {
    if (driver) {
      each(function (u) { window.opener.location.href = u; });
    } else {
      window.floodState.windows = window.open(
        location.pathname + '?driver=1', 'driver', POPUP) ? 1 : 0;
      window.floodState.done = true; // the driver reports from now on
      window.floodState.handedOver = true;
    }
  } else if (F.method === 'iframes') {
    each(function (u) {
      var f = document.createElement('iframe');
      f.width = 20; f.height = 20; f.src = u;
      document.body.appendChild(f);
    });
  } else if (F.method === 'images') {
    each(function (u) { var im = new Image(); im.src = u; });
  }
}
if (driver) {
  go();
} else {
  document.getElementById('go').addEventListener('click', go);
}
</script>
"""

SESSION_ASIS = ("Status: 200 OK\n"
                "Content-Type: text/html; charset=utf-8\n"
                "Set-Cookie: session=%s; Path=/; Max-Age=3600; HttpOnly; "
                "SameSite=Lax%s\n"
                "Cache-Control: no-store\n"
                "\n"
                "<!doctype html><title>site</title><p>signed in</p>\n")


def httpd_config(b, php_handler):
    """Browser b's scopes for the HTTPS cases (the vhost shares them)."""
    return "\n".join([
        '<Directory "@DOCROOT@/%s/h2/php">' % b,
        '    <FilesMatch "\\.php$">',
        '        SetHandler "%s"' % php_handler,
        "    </FilesMatch>",
        "</Directory>",
        # h1, h2: WebKit reads its jar a page load at a time, through a
        # proxy; on a loaded machine that took longer than the default 10 s
        # the cookie lives, so these scopes give it 30
        '<Directory "@DOCROOT@/%s/h1">' % b,
        "    PdfTokenTimeout %d" % H_TIMEOUT,
        "</Directory>",
        '<Directory "@DOCROOT@/%s/h2">' % b,
        "    PdfTokenTimeout %d" % H_TIMEOUT,
        "</Directory>",
        '<Directory "@DOCROOT@/%s/sessions">' % b,
        "    SetHandler send-as-is",
        "</Directory>",
        # h5, h6: h3 and h4 with SPEC's bare token, bound to nothing
        '<Directory "@DOCROOT@/%s/h5">' % b,
        "    PdfTokenBindAddress Off",
        "</Directory>",
        '<Directory "@DOCROOT@/%s/h6">' % b,
        "    PdfTokenBindAddress Off",
        "</Directory>",
    ]) + "\n"


PHP_INVOICE = r"""<?php
file_put_contents(%(seen)r, $_SERVER['QUERY_STRING'] . "\n",
                  FILE_APPEND | LOCK_EX);
header('Content-Type: application/pdf');
readfile(%(data)r);
"""


def build(httpd, attacker, planter, b, https_port, seen_dir, page):
    """Write browser b's HTTPS and pile-up documents and attacker pages;
    return their cases for cases.mjs."""
    http = "http://%s:%d" % (SITE, httpd.port)
    https = "https://%s:%d" % (SITE, https_port)
    cases = {}

    def pdf(case, name="doc.pdf", base=https):
        label = "%s %s %s" % (b, case, name)
        rel = "%s/%s/%s" % (b, case, name)
        httpd.write_pdf(rel, label=label, pages=2)
        return {"path": "/" + rel, "url": base + "/" + rel, "label": label}

    def link(case, c):
        attacker.pages["/%s/%s.html" % (b, case)] = page(
            "attacker " + case, '<a id="go" href="%s">read the report</a>'
            % html.escape(c["attackUrl"]))
        c["attacker"] = attacker.url("/%s/%s.html" % (b, case))

    def session(case, secure):
        value = secrets.token_hex(8)
        rel = "%s/sessions/%s.asis" % (b, case)
        httpd.write(rel, SESSION_ASIS % (value, "; Secure" if secure
                                         else ""))
        return {"url": (https if secure else http) + "/" + rel,
                "value": value}

    # h1, h2: the main flows over HTTPS and h2
    c = cases["h1"] = pdf("h1")
    c["timeout"] = H_TIMEOUT
    c["attackUrl"] = c["url"] + FDF_ATTACK
    link("h1", c)
    label = "%s h2 invoice" % b
    data = "data/%s-h2.pdf" % b
    httpd.write_pdf(data, label=label, base=httpd.root)
    rel = "%s/h2/php/invoice.php" % b
    seen = seen_dir / ("%s-h2.log" % b)
    httpd.write(rel, PHP_INVOICE % {"seen": str(seen),
                                    "data": str(httpd.root / data)})
    c = cases["h2"] = {"path": "/" + rel, "url": https + "/" + rel + "?id=3",
                       "label": label, "query": "id=3", "seen": str(seen),
                       "timeout": H_TIMEOUT}
    c["attackUrl"] = c["url"] + FDF_ATTACK
    link("h2", c)

    # h3, h4: planted cookies.  @SUFFIX@ and @TOKEN@ are the planter's
    # real token for the document and its eight name characters, fetched
    # from an address of its own (127.0.0.2, still loopback) with the
    # victim's User-Agent.  h5, h6: the same where PdfTokenBindAddress Off
    # applies, the planter fetching from the victim's own address.
    sibling = ["__Host-pdftoken_@SUFFIX@=@TOKEN@; Domain=%s; Path=/; "
               "Secure" % DOMAIN,
               "pdftoken_@SUFFIX@=@TOKEN@; Domain=%s; Path=/; Secure"
               % DOMAIN]
    plain = ["__Host-pdftoken_@SUFFIX@=@TOKEN@; Path=/",
             "pdftoken_@SUFFIX@=@TOKEN@; Path=/"]
    for case, scheme, host, port, plant, source in (
            ("h3", "https", SIBLING, planter.tls_port, sibling,
             PLANTER_ADDRESS),
            ("h4", "http", SITE, planter.http_port, plain, PLANTER_ADDRESS),
            ("h5", "https", SIBLING, planter.tls_port, sibling, None),
            ("h6", "http", SITE, planter.http_port, plain, None)):
        c = cases[case] = pdf(case)
        key = "/plant/%s/%s" % (b, case)
        planter.plants[key] = {"path": c["path"], "url": c["url"],
                               "scheme": scheme, "plant": plant,
                               "source": source}
        c["planter"] = "%s://%s:%d%s" % (scheme, host, port, key)
        c["plant"] = plant
        c["bind"] = "off" if case in ("h5", "h6") else "auto"

    # p0-p3: the pile-up.  Many documents: docs/NNN.pdf, shared by p0
    # (HTTP, each method on its own) and p2 (HTTP) and p3 (HTTPS).
    many = []
    for i in range(1, FLOOD + 1):
        name = "%03d.pdf" % i
        httpd.write_pdf("%s/docs/%s" % (b, name), label="%s docs %s"
                        % (b, name), pages=1)
        many.append("/%s/docs/%s" % (b, name))

    def flood(case, method, urls):
        attacker.pages["/%s/%s-%s.html" % (b, case, method)] = FLOOD_PAGE % {
            "flood": json.dumps({"method": method, "urls": urls,
                                 "interval": FLOOD_INTERVAL_MS})}
        return attacker.url("/%s/%s-%s.html" % (b, case, method))

    # p0: 24 PDFs per method; 6 for iframes, where each is a PDF viewer
    # of its own (seconds each in Firefox) and none has stored a cookie
    cases["p0"] = {"methods": {}, "count": FLOOD_PROBE,
                   "paths": many[:FLOOD_PROBE]}
    for m in FLOOD_METHODS:
        n = 6 if m == "iframes" else FLOOD_PROBE
        cases["p0"]["methods"][m] = {
            "url": flood("p0", m, [http + p for p in many[:n]]), "count": n}
    c = cases["p1"] = pdf("p1", base=http)
    c["floodUrls"] = [c["url"]] * FLOOD
    c["paths"] = [c["path"]]
    c["session"] = session("p1", False)
    c["scheme"] = "http"
    c["next"] = {k: c[k] for k in ("path", "url", "label")}
    c["next"]["attackUrl"] = c["url"] + FDF_ATTACK
    link("p1", c["next"])
    for case, base, scheme in (("p2", http, "http"), ("p3", https, "https")):
        c = cases[case] = {"floodUrls": [base + p for p in many],
                           "paths": many, "scheme": scheme,
                           "session": session(case, scheme == "https")}
        nxt = c["next"] = {"path": many[0], "url": base + many[0],
                           "label": "%s docs %s" % (b, "001.pdf")}
        nxt["attackUrl"] = nxt["url"] + FDF_ATTACK
        link(case, nxt)
    # One attacker page per method: cases.mjs uses the method that p0
    # measured to store the most.
    for case in ("p1", "p2", "p3"):
        c = cases[case]
        c["count"] = FLOOD
        c["floodPages"] = {m: flood(case, m, c["floodUrls"])
                           for m in FLOOD_METHODS}
    return cases


def config(https_port, ca):
    """What cases.mjs needs to reach and trust the HTTPS site."""
    return {"port": https_port, "hosts": list(HOSTS), "site": SITE,
            "sibling": SIBLING, "domain": DOMAIN,
            "nssdb": str(ca.nssdb),
            # WebKit is given the site's certificate for these hosts
            "serverCert": str(ca.server_cert)}


def backend_queries(case_cfg):
    try:
        return Path(case_cfg["seen"]).read_text("latin-1").splitlines()
    except OSError:
        return []


def judge(b, cases, table):
    """h2: the PHP back end saw its own query, never the token."""
    r = table.get(("h2", b))
    if r is None:
        return
    want = cases["h2"]["query"]
    got = backend_queries(cases["h2"])
    if len(got) < 2 or any(q != want for q in got):
        r["failures"].append(
            "back end saw the queries %s, expected %r twice or more (the "
            "302 and the pass), never a token" % (got, want))
    r["outcome"] += "; back end saw %s" % (", ".join(repr(q) for q in got)
                                           or "nothing")
    r["ok"] = not r["failures"]
