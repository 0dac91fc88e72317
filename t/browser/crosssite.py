# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Issue 22: partner sites framing protected PDFs (PdfTokenCrossSite).

    PartnerSite  one TLS server (the run's test CA) answering as
                 https://partner.test:<port> and https://other.test:<port>,
                 two registrable domains other than the site's
                 (site.test): the partner that frames the PDFs and another
                 site.  Its pages are made from their query:
                   /frame?iframe=U&embed=U&object=U   the elements, each
                       with src/data U (embed and object with
                       type="application/pdf", as partners write them)
                   /link?href=U                        a link, id "go"
                   /mint-frame?path=P&frag=F&el=E...   the attack harness:
                       a first request of its own to the site (from the
                       browsers' own 127.0.0.1, with the visitor's
                       User-Agent) mints a token T for P; the page frames
                       P?pdftoken=T+F with element E.  The harness learns
                       T the way the server's log would show it; the page
                       could not.
                 Every first request it makes is kept (status, Location,
                 Set-Cookie) for judge().
    scopes       /<b>/xs/off (PdfTokenCrossSite Off), /<b>/xs/on (On),
                 /<b>/xs/safe (On with PdfTokenFragment safe), each with
                 PdfTokenTimeout 30 (WebKit reads a frame at a time).
    crosssite.tsv  what each engine did, per cookie setting, element,
                 scope and fragment (x1, x5, x6): the run fails when an
                 engine's behaviour changes (--record-crosssite writes it).
"""

import html
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pdftoken_ref
from samplepdf import make_pdf

HERE = Path(__file__).resolve().parent
TSV = HERE / "crosssite.tsv"

SITE = "pdf.site.test"
PARTNER = "partner.test"
OTHER = "other.test"
HOSTS = (PARTNER, OTHER)
TIMEOUT = 30
FDF = "#FDF=javascript:alert(1)"
XJS = "#x=javascript:alert(1)"
PAGE2 = "#page=2"

# The cookie settings each engine is measured with (x5, x6); the first is
# the engine as shipped (what x1-x4 use).
SETTINGS = {
    "chromium": ("shipped", "3pc-blocked", "3pc-allowed"),
    "firefox": ("cb5", "cb1", "cb0"),
    "webkit": ("shipped", "accept-all"),
}
SETTING_TEXT = {
    "shipped": "as shipped",
    "3pc-blocked": "third-party cookies blocked (cookie_controls_mode 1)",
    "3pc-allowed": "third-party cookies allowed (cookie_controls_mode 0)",
    "cb5": "cookieBehavior 5 (Total Cookie Protection, the default)",
    "cb1": "cookieBehavior 1 (block all third-party)",
    "cb0": "cookieBehavior 0 (accept all)",
    "accept-all": "--cookies-policy=always (accept all)",
}
ELEMENTS = ("iframe", "embed", "object")
# The scripts' downloads of x7 and x8: (name, Content-Type lines,
# Content-Disposition, body), where %(name)s in the disposition is the
# script's name and the body is "pdf" (a PDF), "bin" (a PDF with control
# bytes in its first comment line, what makes Firefox take text/plain for
# binary) or "junk" (bytes before %PDF-).
# x7: the forms Firefox shows in an <object> or <embed> although they are
# attachments, all named .pdf.
NAMED = 'attachment; filename="%(name)s.pdf"'
X7_FORMS = (("octet", ["application/octet-stream"], NAMED, "pdf"),
            ("text", ["text/plain"], NAMED, "junk"),
            ("no-type", [], NAMED, "junk"))
# x8: what the module leaves alone although it holds a PDF, each next to a
# form that it judges (measured 2026-12-07 in <object>, <embed> and
# <iframe>, with and without type="application/pdf": no engine shows one).
X8_FORMS = (
    ("text-no-name", ["text/plain"], "attachment", "bin"),
    ("octet-no-name", ["application/octet-stream"], "attachment", "pdf"),
    ("unknown-no-name", ["unknown/unknown"], "attachment", "junk"),
    ("html-named", ["text/html"], "attachment; filename=x.pdf", "bin"),
    ("foo-named", ["application/x-foo"], "attachment; filename=x.pdf", "bin"),
    ("json-inline", ["application/json"], "inline; filename=x.pdf", "pdf"),
    ("html-last", ["application/octet-stream, text/html"],
     "attachment; filename=x.pdf", "bin"),
    ("text-junk", ["text/plain"], None, "junk"),
    ("untyped-junk", [], None, "junk"),
    ("image", ["image/png"], None, "pdf"),
)
# x5: the fragments each scope is framed with
VARIANTS = {
    "off": ("none", "page2"),
    "on": ("none", "page2", "fdf"),
    "safe": ("page2", "xjs"),
}
FRAGMENT = {"none": "", "page2": PAGE2, "fdf": FDF, "xjs": XJS}
OUTCOMES = ("inline", "download", "blocked", "fallback", "pass")


def httpd_config(b):
    lines = []
    for scope, extra in (("off", ["PdfTokenCrossSite Off"]),
                         ("on", ["PdfTokenCrossSite On"]),
                         ("safe", ["PdfTokenCrossSite On",
                                   "PdfTokenFragment safe"])):
        lines += ['<Directory "@DOCROOT@/%s/xs/%s">' % (b, scope)]
        lines += ["    " + x for x in extra]
        lines += ["    PdfTokenTimeout %d" % TIMEOUT, "</Directory>"]
    # x7: a script's own download (PdfTokenCrossSite Off)
    lines += ['<Directory "@DOCROOT@/%s/xs/script">' % b,
              "    Options +ExecCGI", "    SetHandler cgi-script",
              "    PdfTokenTimeout %d" % TIMEOUT, "</Directory>"]
    return "\n".join(lines) + "\n"


def head_of(port, path, ca, user_agent=None, source=None):
    """One request of the harness to the site over HTTPS (SNI SITE,
    verified against the test CA), from the address `source` (default
    127.0.0.1), claiming `user_agent`: (status, [(lowercase name,
    value)]).  The tokens of its Location are remembered (never a
    secret in a report)."""
    ua = ("User-Agent: %s\r\n" % user_agent) if user_agent else ""
    ctx = ca.client_context()
    with socket.create_connection(("127.0.0.1", port), timeout=10,
                                  source_address=(source, 0) if source
                                  else None) as raw:
        with ctx.wrap_socket(raw, server_hostname=SITE) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s"
                       "Connection: close\r\n\r\n"
                       % (path, SITE, port, ua)).encode("latin-1"))
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = []
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.append((k.strip().lower(), v.strip()))
        if k.strip().lower() == "location":
            for t in parse_qs(urlsplit(v.strip()).query).get("pdftoken", []):
                pdftoken_ref.remember(t)
    return status, headers


def element_html(el, src, label):
    s = html.escape(src)
    if el == "iframe":
        return ('<iframe id="iframe" title="%s" src="%s" width="600" '
                'height="420"></iframe>' % (label, s))
    if el == "embed":
        return ('<embed id="embed" title="%s" src="%s" type="application/pdf" '
                'width="600" height="420">' % (label, s))
    return ('<object id="object" title="%s" data="%s" type="application/pdf" '
            'width="600" height="420"></object>' % (label, s))


PAGE = """<!doctype html>
<meta charset="utf-8"><title>%(host)s</title>
<h1>%(host)s</h1>
%(body)s
"""


class PartnerSite:
    def __init__(self, ca):
        self.ca = ca
        self.site_port = None
        self.minted = []   # (path, user agent, status, headers)
        self.visits = []   # (host, path)
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                u = urlsplit(self.path)
                q = {k: v[-1] for k, v in parse_qs(u.query).items()}
                host = (self.headers.get("Host") or "").split(":")[0]
                site.visits.append((host, self.path))
                if host not in HOSTS:
                    self.send_error(421)
                    return
                if u.path == "/frame":
                    body = "\n".join(element_html(el, q[el], el)
                                     for el in ELEMENTS if el in q)
                elif u.path == "/frames":
                    # f=E|U, repeated: many elements of each kind
                    body = "\n".join(
                        element_html(*f.split("|", 1), label="frame")
                        for f in parse_qs(u.query).get("f", []))
                elif u.path == "/link":
                    body = '<a id="go" href="%s">the report</a>' % (
                        html.escape(q["href"]))
                    if q.get("check"):
                        # the harness's own first view of another document
                        # of the scope, with the visitor's User-Agent: what
                        # the redirect and cookie look like (judge())
                        ua = self.headers.get("User-Agent")
                        try:
                            status, headers = head_of(
                                site.site_port, q["check"], site.ca, ua)
                        except OSError as e:
                            self.send_error(502, str(e)[:200])
                            return
                        site.minted.append((q["check"], ua, status, headers))
                elif u.path == "/mint-frame":
                    ua = self.headers.get("User-Agent")
                    els = []
                    tokens = {}
                    for el in ELEMENTS:
                        path = q.get(el)
                        if not path:
                            continue
                        try:
                            status, headers = head_of(site.site_port, path,
                                                      site.ca, ua)
                        except OSError as e:
                            self.send_error(502, str(e)[:200])
                            return
                        site.minted.append((path, ua, status, headers))
                        loc = dict(headers).get("location", "")
                        t = (parse_qs(urlsplit(loc).query).get("pdftoken")
                             or [None])[0]
                        if status != 302 or not t:
                            self.send_error(502, "no token for %s" % path)
                            return
                        tokens[el] = t
                        src = "https://%s:%d%s?pdftoken=%s%s" % (
                            SITE, site.site_port, path, t, q.get("frag", ""))
                        els.append(element_html(el, src, el))
                    body = "\n".join(els) + (
                        "\n<script>window.harnessTokens = %s;</script>"
                        % json.dumps(tokens))
                else:
                    self.send_error(404)
                    return
                data = (PAGE % {"host": host, "body": body}).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        # Port 0: bound at once, so no other server of the run gets it.
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.server.daemon_threads = True
        self.server.socket = ca.server_context().wrap_socket(
            self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def url(self, host, path, **query):
        return "https://%s:%d%s%s" % (host, self.port, path,
                                      ("?" + urlencode(query, doseq=True))
                                      if query
                                      else "")

    def start(self):
        self.thread.start()

    def stop(self):
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()


def build(httpd, partner, b, https_port):
    """Browser b's documents and partner pages: its x cases for
    cases.mjs."""
    https = "https://%s:%d" % (SITE, https_port)

    def pdf(scope, where, name):
        rel = "%s/xs/%s/%s/%s" % (b, scope, where, name)
        label = "%s xs %s %s %s" % (b, scope, where, name)
        httpd.write_pdf(rel, label=label, pages=3)
        return {"path": "/" + rel, "url": https + "/" + rel, "label": label,
                "file": name}

    cases = {"settings": list(SETTINGS[b]),
             "partner": PARTNER, "other": OTHER}
    # x1: an iframe on partner.test, Off and On (as shipped)
    x1 = cases["x1"] = {}
    for scope in ("off", "on"):
        d = pdf(scope, "x1", "x1-%s.pdf" % scope)
        x1[scope] = {"doc": d, "page": partner.url(PARTNER, "/frame",
                                                    iframe=d["url"])}
    # x2: the attacker's fragment through a partner's frame (each element)
    # and a partner's top-level link, On
    x2 = cases["x2"] = {"docs": {}}
    for el in ELEMENTS:
        x2["docs"][el] = pdf("on", "x2", "x2-%s.pdf" % el)
    x2["page"] = partner.url(PARTNER, "/frame", **{
        el: d["url"] + FDF for el, d in x2["docs"].items()})
    x2["link"] = pdf("on", "x2", "x2-link.pdf")
    x2["link"]["attackUrl"] = x2["link"]["url"] + FDF
    check = pdf("on", "x2", "x2-check.pdf")
    x2["linkPage"] = partner.url(PARTNER, "/link",
                                 href=x2["link"]["attackUrl"],
                                 check=check["path"])
    # x3: a tokenized URL (the harness minted it) framed by other.test,
    # where the reader has no cookie: the fallback, for each element
    x3 = cases["x3"] = {"docs": {}}
    for el in ELEMENTS:
        x3["docs"][el] = pdf("on", "x3", "x3-%s.pdf" % el)
    x3["page"] = partner.url(OTHER, "/mint-frame", frag=FDF, **{
        el: d["path"] for el, d in x3["docs"].items()})
    def download_script(case, form, el):
        """The CGI script /<b>/xs/script/<case>-<name>-<el> that sends
        form's headers and body (X7_FORMS, X8_FORMS)."""
        name = "%s-%s-%s" % (case, form[0], el)
        rel = "%s/xs/script/%s" % (b, name)
        label = "%s xs %s %s %s" % (b, case, form[0], el)
        body = make_pdf(label, pages=1)
        if form[3] == "bin":
            body = body.replace(b"%\xe2\xe3\xcf\xd3\n", b"%\x01\x02\x03\x04\n",
                                1)
        elif form[3] == "junk":
            body = b"\0\1\2\3\n" + body
        data = httpd.write("data/%s-%s.pdf" % (b, name), body, base=httpd.root)
        head = "".join("Content-Type: %s\r\n" % t for t in form[1])
        if form[2]:
            head += "Content-Disposition: %s\r\n" % (form[2] % {"name": name})
        head = httpd.write("data/%s-%s.head" % (b, name), head + "\r\n",
                           base=httpd.root)
        httpd.write(rel, "#!/bin/sh\ncat '%s' '%s'\n" % (head, data),
                    mode=0o755)
        return {"path": "/" + rel, "url": https + "/" + rel, "label": label,
                "file": name + ".pdf"}

    # x7: a script's download in each form of X7_FORMS, in a partner's
    # frames with the attacker's fragment: it must take the token step
    # (then the fallback).  One page per form.
    x7 = cases["x7"] = {"forms": {}}
    for form in X7_FORMS:
        docs = {el: download_script("x7", form, el) for el in ELEMENTS}
        x7["forms"][form[0]] = {"docs": docs, "page": partner.url(
            PARTNER, "/frame", **{el: d["url"] + FDF
                                  for el, d in docs.items()})}
    # x8: what the module leaves alone, in the same frames: no engine may
    # show one as a PDF.  Two pages of five forms (15 frames each).
    x8 = cases["x8"] = {"pages": []}
    for start in (0, 5):
        docs = {"%s %s" % (form[0], el): download_script("x8", form, el)
                for form in X8_FORMS[start:start + 5] for el in ELEMENTS}
        x8["pages"].append({"docs": docs, "page": partner.url(
            PARTNER, "/frames", f=["%s|%s" % (k.split()[1], d["url"] + FDF)
                                   for k, d in docs.items()])})
    # x4 (as shipped) and x6 (each other setting): partner.test's frame
    # gets the cookie in its partition; the same tokenized URL at top
    # level and in other.test's frame must get the fallback
    def partition(case, s, scope):
        d = pdf(scope, "%s-%s" % (case, s), "%s-%s-%s.pdf" % (case, s, scope))
        return {"doc": d, "page": partner.url(PARTNER, "/frame",
                                              iframe=d["url"]),
                "otherBase": partner.url(OTHER, "/frame")}
    cases["x4"] = {s: partition("x4", s, "on") for s in SETTINGS[b][:1]}
    # x6: in Off too, to tell what On changes from what the engine does
    # with the Lax cookie anyway
    cases["x6"] = {s: {scope: partition("x6", s, scope)
                       for scope in ("off", "on")}
                   for s in SETTINGS[b][1:]}
    # x5: the matrix: each setting x scope x fragment, one partner page
    # holding the three elements
    x5 = cases["x5"] = {}
    for s in SETTINGS[b]:
        pages = []
        for scope, variants in VARIANTS.items():
            for v in variants:
                docs = {el: pdf(scope, "x5-%s" % s,
                                "x5-%s-%s-%s-%s.pdf" % (s, scope, v, el))
                        for el in ELEMENTS}
                pages.append({"scope": scope, "variant": v,
                              "fragment": FRAGMENT[v], "docs": docs,
                              "page": partner.url(PARTNER, "/frame", **{
                                  el: d["url"] + FRAGMENT[v]
                                  for el, d in docs.items()})})
        x5[s] = pages
    return cases


# ------------------------------------------------------------ recording

HEADER = """\
# mod_pdftoken cross-site embedding (issue 22, PdfTokenCrossSite): what
# each engine does when https://partner.test frames a protected PDF of
# https://pdf.site.test (t/browser/crosssite.py, cases x1, x4, x5, x6).
# Recorded by: python3 t/browser/run.py --record-crosssite
# Browsers: %(versions)s
# case: x5 the matrix (x1 reads its iframe rows); x6 (x4 for as shipped)
#   the partition check: frame = partner.test's iframe, top = the same
#   tokenized URL at top level, other = it in other.test's iframe.
# element: iframe, embed (type=application/pdf), object (type=...).
# scope: off (PdfTokenCrossSite Off), on (On), safe (On, Fragment safe).
# fragment: none, page2 (#page=2), fdf (#FDF=javascript:alert(1)),
#   xjs (#x=javascript:alert(1)).
# outcome: inline (the frame shows the PDF after the token step), download
#   (the fallback, saved), blocked (the fallback, not saved, nothing shown);
#   x4/x6: pass or fallback as the module logged it; no-token when the
#   frame got the fallback at once (PDFTOKEN00022), so nothing to carry.
# settings: %(settings)s
"""
COLUMNS = ("case", "engine", "setting", "element", "scope", "fragment",
           "outcome")


def read(path=TSV):
    """{(case, engine, setting, element, scope, fragment): outcome}"""
    out = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if not line or line.startswith("#") or line.startswith("case\t"):
            continue
        f = line.split("\t")
        if len(f) != len(COLUMNS):
            raise ValueError("%s: bad line %r" % (path, line))
        out[tuple(f[:-1])] = f[-1]
    return out


def observed(table, browsers):
    """The rows this run measured: {key: outcome}."""
    rows = {}
    for b in browsers:
        for cid in ("x1", "x4", "x5", "x6"):
            r = table.get((cid, b)) or {}
            for row in r.get("rows") or []:
                rows[tuple(row[:-1])] = row[-1]
    return rows


def judge(b, table, partner, expected_rows):
    """x2: the harness's own first request with this browser's
    User-Agent: Location ends in '#', and the cookie carries the
    attributes the engine is due.  x1, x4-x6: rows measured against the
    recording."""
    r = table.get(("x2", b))
    if r is not None:
        mine = [m for m in partner.minted
                if m[0].startswith("/%s/xs/on/x2/" % b)]
        for path, ua, status, headers in mine:
            h = dict(headers)
            loc = h.get("location", "")
            if status != 302 or not loc.endswith("#"):
                r["failures"].append("harness's first view of %s: %d, "
                                     "Location %r does not end in '#'"
                                     % (path, status, loc))
            cookie = h.get("set-cookie", "")
            webkit = "AppleWebKit/" in (ua or "") and "Chrome" not in ua
            want = ({"Path=/", "Max-Age=%d" % TIMEOUT, "Secure", "HttpOnly",
                     "SameSite=Lax"} if webkit else
                    {"Path=/", "Max-Age=%d" % TIMEOUT, "Secure", "HttpOnly",
                     "SameSite=None", "Partitioned"})
            attrs = {a.strip() for a in cookie.split(";")[1:]}
            if not cookie.startswith("__Host-pdftoken_") or attrs != want:
                r["failures"].append("Set-Cookie %r for %s, expected the "
                                     "attributes %s" % (cookie, ua,
                                                        sorted(want)))
        if not mine:
            r["failures"].append("the harness made no first request")
        else:
            r["outcome"] += "; Location ends in '#', cookie %s" % (
                "Lax (WebKit exception)" if "AppleWebKit/" in (mine[0][1]
                                                              or "") and
                "Chrome" not in mine[0][1] else "None; Partitioned")
        r["ok"] = not r["failures"]
    if expected_rows is None:
        return
    for cid in ("x1", "x4", "x5", "x6"):
        r = table.get((cid, b))
        if r is None:
            continue
        for row in r.get("rows") or []:
            key = tuple(row[:-1])
            want = expected_rows.get(key)
            if want is None:
                r["failures"].append("not recorded in %s: %s -> %s (record "
                                     "with --record-crosssite)"
                                     % (TSV.name, " ".join(key), row[-1]))
            elif want != row[-1]:
                r["failures"].append("%s: %s, recorded %s (the engine "
                                     "changed: re-record %s)"
                                     % (" ".join(key), row[-1], want,
                                        TSV.name))
        r["ok"] = not r["failures"]


def write(rows, versions, path=TSV):
    settings = "; ".join("%s: %s" % (b, ", ".join(
        "%s = %s" % (s, SETTING_TEXT[s]) for s in SETTINGS[b]))
        for b in SETTINGS)
    out = [HEADER % {"versions": "; ".join("%s %s" % kv
                                          for kv in sorted(versions.items())),
                     "settings": settings}]
    out.append("\t".join(COLUMNS) + "\n")
    order = {b: i for i, b in enumerate(SETTINGS)}
    for key in sorted(rows, key=lambda k: (k[0], order.get(k[1], 9),
                                           SETTINGS.get(k[1], ()).index(k[2])
                                           if k[2] in SETTINGS.get(k[1], ())
                                           else 9,
                                           k[4], k[5], k[3])):
        out.append("\t".join(key + (rows[key],)) + "\n")
    Path(path).write_text("".join(out))
