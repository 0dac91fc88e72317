# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The token flows over HTTP/2, through Debian's mod_http2 (issue 14).

Three ways a client reaches HTTP/2, each with its own connection per test:

    h2       TLS with ALPN (what browsers use), the harness certificate
             trusted as the CA, never a check turned off;
    h2c      cleartext, HTTP/2 from the first byte (prior knowledge);
    upgrade  cleartext, the first request as HTTP/1.1 with `Upgrade: h2c`.

What httpd 2.4 does with them depends on the MPM and on the phase that
answers, and every test asserts the protocol the answer came over, both as
the client saw it and as the access log wrote it (%H):

- event: all three give HTTP/2, except that an Upgrade request answered
  before the handler (the module's fixup redirect, R1/R4, and its `deny`)
  gets its answer over HTTP/1.1: core switches protocols in its upgrade
  handler, which a fixup's answer never reaches.  The follow-up upgrades.
  An upgraded connection rarely lives past that first stream: httpd ends
  it with GOAWAY (NO_ERROR, last stream 1) as soon as it has to wait for
  the client, module or not, so the multiplexed tests and the big
  documents run over h2 and h2c.
- prefork: mod_http2 says at start-up (AH10034) that the MPM is not
  supported and that HTTP/2 "will be inactive": ALPN and the Upgrade give
  HTTP/1.1, and the module answers exactly as over HTTP/1.1.  A client
  that speaks h2c by prior knowledge is still served HTTP/2 (mod_http2 runs
  its own worker threads in the prefork child): measured, and pinned here.

Over every protocol: R1 to R5, the `deny` fallback, two tabs, HEAD, the
`PdfTokenFragment safe` page, and the dynamic PDFs judged by the output
filter (PHP-FPM, CGI, a proxied back end), where the module throws the
handler's output away and sends its 302 through the protocol filters
(mod_pdftoken.c, replace_response): over HTTP/2 that 302 must arrive whole
with its cookie, with no byte of the PDF, on a stream that ends cleanly on
a connection that goes on serving other streams, with nothing from
mod_http2 in the error log.  mod_http2 joins a request's `cookie` fields
with "; ", so a cookie in a field of its own counts, and a "," still never
splits one.  A few flows also go through curl, an independent HTTP/2
client.
"""

import re
import time
import uuid

import h2.exceptions
import pytest

import backends
import h2client
import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_token_cookie, cache_directives)
from samplepdf import make_pdf
from test_fragment import NAV, page_parts

MPM = httpd.MPM
MODES = ["h2", "h2c", "upgrade"]

# The protocol an answer comes over: (MPM, mode, phase that answers).
# phase "fixup": the module answers before the handler (R1, R4, deny);
# "handler": the handler runs (R2, R3, R5, every dynamic PDF).
EXPECTED = {
    ("event", "h2"): {"fixup": "HTTP/2", "handler": "HTTP/2"},
    ("event", "h2c"): {"fixup": "HTTP/2", "handler": "HTTP/2"},
    ("event", "upgrade"): {"fixup": "HTTP/1.1", "handler": "HTTP/2"},
    ("prefork", "h2"): {"fixup": "HTTP/1.1", "handler": "HTTP/1.1"},
    ("prefork", "h2c"): {"fixup": "HTTP/2", "handler": "HTTP/2"},
    ("prefork", "upgrade"): {"fixup": "HTTP/1.1", "handler": "HTTP/1.1"},
}

# The modes that give a multiplexed HTTP/2 connection under this MPM.  Not
# the upgrade: httpd mostly ends an upgraded connection after its first
# stream (test_upgraded_connection_ends_gracefully_if_at_all).
MUX_MODES = [m for m in ("h2", "h2c")
             if EXPECTED[(MPM, m)]["handler"] == "HTTP/2"]

CONFIG = r"""
Protocols h2 h2c http/1.1
KeepAlive On
LogLevel notice pdftoken:debug http2:info
LogFormat "%{X-Test-Id}i %H %>s %{PDFTOKEN}e" proto
CustomLog "@ROOT@/logs/proto.log" proto
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
    <FilesMatch "\.php$">
        SetHandler "@PHP@"
    </FilesMatch>
</Directory>
<Directory "@DOCROOT@/safe">
    PdfTokenProtect On
    PdfTokenFragment safe
</Directory>
""" + backends.DYNAMIC_SCOPES

PHP_INVOICE = r"""<?php
header('Content-Type: application/pdf');
readfile(%r);
"""

CGI_REPORT = r"""#!/usr/bin/python3
import sys
data = open(%r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

# Error-log lines that say mod_http2 (or anything) went wrong.
TROUBLE = re.compile(r"\[[a-z_0-9]+:(error|crit|alert|emerg)\]"
                     r"|\[http2:warn\]")
# But one: mod_proxy_fcgi logs at error level that the module stopped the
# PHP script's output (AP_FILTER_ERROR, -102) to send its 302 instead, one
# line per first view of a PHP-made PDF, over HTTP/1.1 as over HTTP/2.
# Not mod_http2's, and not new here; the module would have to let PHP run
# to its end to avoid it.
KNOWN = re.compile(r"\[proxy_fcgi:error\] .*\(-102\)Unknown error -102: .*"
                   r"AH01075: Error dispatching request to :\d+: \(passing "
                   r"brigade to output filters\)$")


@pytest.fixture(scope="module")
def env(pool):
    """Two servers (TLS for h2, cleartext for h2c) sharing one php-fpm and
    one HTTP back end, all on loopback."""
    mods = ["http2", httpd.cgi_module(), "proxy", "proxy_http",
            "proxy_fcgi"]
    tls = pool.make("h2-tls", tls=True, modules=mods)
    clear = pool.make("h2-clear", modules=mods)
    php = backends.PhpFpm(tls.root / "fpm")
    back = backends.HttpBackend()
    files = {}
    for key in ("doc", "deny", "safe", "php", "cgi", "http"):
        files[key] = make_pdf("h2 %s %s" % (key, uuid.uuid4().hex),
                              pages=3)
    # Far beyond HTTP/2's initial 64 KiB flow-control window.
    files["big"] = make_pdf("h2 big %s" % uuid.uuid4().hex, pages=4,
                            padding=600000)
    for s in (tls, clear):
        s.files = files
        s.write("prot/doc.pdf", files["doc"])
        s.write("deny/doc.pdf", files["deny"])
        s.write("safe/doc.pdf", files["safe"])
        s.write("open/hello.txt", b"hello\n")
        s.write("data/php.pdf", files["php"], base=s.root)
        s.write("data/cgi.pdf", files["cgi"], base=s.root)
        s.write("data/big.pdf", files["big"], base=s.root)
        s.write("prot/big.pdf", files["big"])
        s.write("prot/big.php",
                PHP_INVOICE % str(s.root / "data" / "big.pdf"))
        s.write("prot/invoice.php",
                PHP_INVOICE % str(s.root / "data" / "php.pdf"))
        s.write("deny/invoice.php",
                PHP_INVOICE % str(s.root / "data" / "php.pdf"))
        s.write("prot/report.cgi",
                CGI_REPORT % str(s.root / "data" / "cgi.pdf"), mode=0o755)
    backends.add_report_routes(back, files["http"])
    back.start()
    try:
        php.start()
        for s in (tls, clear):
            s.configure(CONFIG.replace("@PHP@", php.handler)
                        .replace("@BACKEND@", str(back.port)))
            s.start()
        yield {"h2": tls, "h2c": clear, "upgrade": clear, "back": back,
               "files": files}
    finally:
        php.stop()
        back.stop()


def trouble(s, checked):
    """Lines at error level or worse, or warnings from mod_http2, that
    server s logged since the offset checked[s]; moves checked[s] on."""
    text = s.error_log_since(checked[s])
    checked[s] += len(text.encode("latin-1"))
    bad = [line for line in text.splitlines()
           if TROUBLE.search(line) and not KNOWN.search(line)]
    return "%s error log:\n%s" % (s.root.name, "\n".join(bad)) if bad \
        else None


@pytest.fixture(scope="module")
def checked(env):
    """How far each error log has been read by quiet_logs.  The windows
    of successive tests join up, so that a line a connection's end writes
    after its test was checked is still seen (by the next test's check,
    or by this fixture's at the end of the module), with no waiting."""
    servers = (env["h2"], env["h2c"])
    offsets = {s: s.error_log_size() for s in servers}
    yield offsets
    late = [t for t in (trouble(s, offsets) for s in servers) if t]
    assert not late, "after the last test:\n" + "\n".join(late)


@pytest.fixture(autouse=True)
def quiet_logs(env, checked):
    """Every test: nothing in either error log at error level or worse,
    and no warning from mod_http2, while it ran (or the test before it
    ended its connections)."""
    yield
    bad = [t for t in (trouble(s, checked) for s in (env["h2"], env["h2c"]))
           if t]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- helpers

def proto_log(server, tid, count, timeout=5):
    """[(protocol, status, PDFTOKEN)] logged for requests tagged tid, once
    there are `count` of them (or the time is up)."""
    deadline = time.time() + timeout
    while True:
        try:
            lines = (server.root / "logs" / "proto.log").read_text(
                "latin-1").splitlines()
        except FileNotFoundError:
            lines = []
        got = [tuple(line.split(" ")[1:]) for line in lines
               if line.split(" ")[0] == tid]
        if len(got) >= count or time.time() > deadline:
            return got
        time.sleep(0.05)


LOGGED = {"HTTP/2": "HTTP/2.0", "HTTP/1.1": "HTTP/1.1"}


def fetch(env, mode, method, target, phase="handler", cookies=None,
          headers=(), cookie_fields=None):
    """One request on a connection of its own: (response, PDFTOKEN).

    Asserts the protocol the answer came over, as the client saw it and
    as httpd logged it, from EXPECTED."""
    server = env[mode]
    tid = "h2-" + uuid.uuid4().hex[:12]
    with h2client.H2Client(server, mode) as c:
        r = c.request(method, target, headers=[("X-Test-Id", tid)]
                      + list(headers), cookies=cookies,
                      cookie_fields=cookie_fields)
    want = EXPECTED[(MPM, mode)][phase]
    assert r.protocol == want, "%s: answered over %s, want %s\n%r" % (
        mode, r.protocol, want, r)
    # An upgraded request is logged twice: its 101, and its answer.
    upgraded = mode == "upgrade" and want == "HTTP/2"
    logged = proto_log(server, tid, 2 if upgraded else 1)
    assert len(logged) == (2 if upgraded else 1), logged
    final = [e for e in logged if e[1] != "101"]
    assert len(final) == 1, logged
    proto, status, decision = final[0]
    assert proto == LOGGED[want] and int(status) == r.status, (logged, r)
    return r, decision


def first_visit(env, mode, target, path=None, query=""):
    """R1 over `mode`: (response, token, cookie pair)."""
    server = env[mode]
    r, decision = fetch(env, mode, "GET", target, phase=phase_of_r1(target))
    token, cookie = assert_redirect(server, r, path or target.split("?")[0],
                                    query=query, secret=server.secret)
    assert decision == "redirect", decision
    return r, token, cookie


def phase_of_r1(target):
    """Static PDFs are judged by the fixup, dynamic ones after the
    handler ran."""
    return "fixup" if target.split("?")[0].endswith(".pdf") else "handler"


def h2_session(env, mode):
    """An HTTP/2 connection ready for streams (mode h2 or h2c)."""
    c = h2client.H2Client(env[mode], mode)
    assert c.protocol == "HTTP/2", c
    return c


def assert_canonical(server, r, clean):
    """R2, R3, R5: one Link naming the URL without the token."""
    links = [v for v in r.get_all("Link") if 'rel="canonical"' in v]
    assert links == ['<%s>; rel="canonical"' % server.url(clean)], r


def assert_clean(c):
    """The connection is alive: no GOAWAY, no stream reset, a PING
    answered."""
    c.ping()
    assert c.goaway is None, "GOAWAY %s" % c.goaway
    assert not c.resets, "streams reset: %r" % c.resets


DYNAMIC = [
    # (name, URL path, query, key of the PDF the back end sends)
    ("php", "/prot/invoice.php", "id=3", "php"),
    ("cgi", "/prot/report.cgi", "a=1", "cgi"),
    ("proxy", "/api/reports/7", "", "http"),
    ("proxy-chunked", "/api/reports/chunked", "x=1", "http"),
]


def dyn_target(path, query):
    return path + ("?" + query if query else "")


# --------------------------------------------------- the protocol itself

def test_start_up_log_says_whether_h2_is_active(env):
    """What mod_http2 does under each MPM, from the start-up log: under
    prefork AH10034 (HTTP/2 inactive), under event no such warning."""
    for s in (env["h2"], env["h2c"]):
        text = s.error_text()
        if MPM == "prefork":
            assert "AH10034" in text and "prefork.c" in text \
                and "HTTP/2 protocol will be inactive" in text, text[-3000:]
        else:
            assert "AH10034" not in text, text[-3000:]


@pytest.mark.parametrize("mode", MODES)
def test_alpn_and_upgrade_give_the_expected_protocol(env, mode):
    """An unprotected file, to see the protocol alone."""
    r, decision = fetch(env, mode, "GET", "/open/hello.txt")
    assert r.status == 200 and r.body == b"hello\n", r
    assert decision == "-"


# ------------------------------------------------------ R1 to R5, static

@pytest.mark.parametrize("mode", MODES)
def test_r1_redirect_whole(env, mode):
    """R1: 302, absolute Location ending in '#', the cookie (__Host- over
    TLS), no-store, an empty body (assert_redirect)."""
    r, token, cookie = first_visit(env, mode, "/prot/doc.pdf?a=1&b=2",
                                   query="a=1&b=2")
    assert r.get("Location").startswith(
        "%s://127.0.0.1:" % env[mode].scheme), r
    if env[mode].tls:
        assert cookie.startswith("__Host-pdftoken_"), cookie


@pytest.mark.parametrize("mode", MODES)
def test_r2_inline_with_matching_cookie(env, mode):
    r, token, cookie = first_visit(env, mode, "/prot/doc.pdf")
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r2, env["files"]["doc"])
    assert {"private", "no-store"} <= cache_directives(r2), r2
    assert r2.get_all("Set-Cookie") == [], r2
    assert_canonical(env[mode], r2, "/prot/doc.pdf")
    assert decision == "pass"


@pytest.mark.parametrize("mode", MODES)
def test_r3_fallback_without_cookie_is_a_download(env, mode):
    r, token, cookie = first_visit(env, mode, "/prot/doc.pdf")
    r2, decision = fetch(env, mode, "GET", r.location_target())
    assert_attachment(r2, env["files"]["doc"], filename="doc.pdf")
    assert_canonical(env[mode], r2, "/prot/doc.pdf")
    assert decision == "fallback"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["expired", "forged", "other-path"])
def test_r4_bad_token_gets_a_fresh_one(env, mode, kind):
    server = env[mode]
    now = int(time.time())
    bad = {"expired": ref.mint(server.secret, "/prot/doc.pdf",
                               expiry=now - 5),
           "forged": ref.forge(ref.mint(server.secret, "/prot/doc.pdf")),
           "other-path": ref.mint(server.secret, "/prot/other.pdf")}[kind]
    r, decision = fetch(env, mode, "GET", "/prot/doc.pdf?pdftoken=" + bad,
                        phase="fixup",
                        cookies=[ref.cookie_pair(bad, secure=server.tls)])
    token, _ = assert_redirect(server, r, "/prot/doc.pdf",
                               secret=server.secret)
    assert token != bad and decision == "redirect"


@pytest.mark.parametrize("mode", MODES)
def test_r5_range_with_token_is_206(env, mode):
    r, token, cookie = first_visit(env, mode, "/prot/doc.pdf")
    data = env["files"]["doc"]
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         headers=[("Range", "bytes=100-299")])
    assert r2.status == 206, r2
    assert r2.get("Content-Range") == "bytes 100-299/%d" % len(data), r2
    assert r2.body == data[100:300]
    assert r2.get_all("Set-Cookie") == [] and r2.get("Location") is None
    assert_canonical(env[mode], r2, "/prot/doc.pdf")
    assert decision == "range"


@pytest.mark.parametrize("mode", MODES)
def test_fallback_deny_answers_403(env, mode):
    r, token, cookie = first_visit(env, mode, "/deny/doc.pdf")
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         phase="fixup")
    assert r2.status == 403, r2
    assert b"%PDF" not in r2.body and decision == "deny"
    r3, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r3, env["files"]["deny"])


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_fallback_deny_answers_403_in_place_of_the_pdf(env, mode):
    """The output filter's other replacement: a 403 instead of the PHP
    script's PDF, with none of its bytes."""
    r, token, cookie = first_visit(env, mode, "/deny/invoice.php?id=4",
                                   path="/deny/invoice.php", query="id=4")
    r2, decision = fetch(env, mode, "GET", r.location_target())
    assert r2.status == 403, r2
    assert b"%PDF" not in r2.body and decision == "deny", r2
    assert r2.get("Content-Disposition") is None, r2
    r3, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r3, env["files"]["php"])


@pytest.mark.parametrize("mode", MODES)
def test_two_tabs_get_two_cookies_and_both_end_inline(env, mode):
    r1, t1, c1 = first_visit(env, mode, "/prot/doc.pdf")
    r2, t2, c2 = first_visit(env, mode, "/prot/doc.pdf")
    assert t1 != t2 and c1.split("=")[0] != c2.split("=")[0]
    for r in (r1, r2):
        v, decision = fetch(env, mode, "GET", r.location_target(),
                            cookies=[c1, c2])
        assert_inline(v, env["files"]["doc"])


@pytest.mark.parametrize("mode", MODES)
def test_head_redirect_and_inline_carry_no_body(env, mode):
    server = env[mode]
    r, decision = fetch(env, mode, "HEAD", "/prot/doc.pdf", phase="fixup")
    token, cookie = assert_redirect(server, r, "/prot/doc.pdf")
    assert r.body == b"" and decision == "redirect"
    r2, decision = fetch(env, mode, "HEAD", r.location_target(),
                         cookies=[cookie])
    assert_inline(r2, b"")
    assert r2.get("Content-Length") == str(len(env["files"]["doc"])), r2
    assert decision == "pass"


@pytest.mark.parametrize("mode", MODES)
def test_fragment_page_then_inline(env, mode):
    """PdfTokenFragment safe: a navigation gets the page (200, its cookie,
    no-store, nosniff, CSP), and the page's link opens the PDF inline."""
    server = env[mode]
    # The page comes from the module's handler: an Upgrade is taken.
    r, decision = fetch(env, mode, "GET", "/safe/doc.pdf?page=2",
                        headers=NAV)
    assert r.status == 200 and decision == "redirect", r
    assert r.get("Content-Type") == "text/html; charset=utf-8", r
    assert r.get("X-Content-Type-Options") == "nosniff", r
    assert "no-store" in cache_directives(r), r
    assert "script-src 'sha256-" in r.get("Content-Security-Policy"), r
    url, _ = page_parts(r)
    m = re.fullmatch(r"/safe/doc\.pdf\?page=2&pdftoken=([A-Za-z0-9_-]+)#",
                     url)
    assert m, url
    token = m.group(1)
    assert ref.verifies(server.secret, token, "/safe/doc.pdf")
    cookie = assert_token_cookie(r, token, "/safe/doc.pdf",
                                 secure=server.tls)
    v, decision = fetch(env, mode, "GET", url[:-1], cookies=[cookie],
                        headers=NAV)
    assert_inline(v, env["files"]["safe"])


# ------------------------------------------ dynamic PDFs, output filter

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,path,query,key", DYNAMIC,
                         ids=[d[0] for d in DYNAMIC])
def test_dynamic_redirect_inline_and_fallback(env, mode, name, path, query,
                                              key):
    """The output filter's 302 in place of the handler's PDF: whole, with
    its cookie, without a byte of the PDF; then inline with the cookie and
    a download without."""
    r, token, cookie = first_visit(env, mode, dyn_target(path, query),
                                   path=path, query=query)
    assert b"%PDF" not in r.body
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r2, env["files"][key])
    assert_canonical(env[mode], r2, dyn_target(path, query))
    assert decision == "pass"
    r3, decision = fetch(env, mode, "GET", r.location_target())
    assert_attachment(r3, env["files"][key])
    assert_canonical(env[mode], r3, dyn_target(path, query))
    assert decision == "fallback"


@pytest.mark.parametrize("mode", MODES)
def test_type_httpd_sends_from_its_tables_is_judged(env, mode):
    """mod_http2 builds the answer's headers as HTTP/1.1 does: with
    r->content_type empty it sends the back end's Content-Type headers as
    they came, an empty one and then application/pdf.  The filter judges
    that type (backends.add_report_routes, /reports/twotypes)."""
    path = "/api/reports/twotypes"
    r, token, cookie = first_visit(env, mode, path)
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r2, env["back"].junk_pdf, content_type=None)
    assert "application/pdf" in r2.get_all("Content-Type"), r2
    assert decision == "pass"


@pytest.mark.parametrize("mode", MUX_MODES)
def test_dynamic_redirects_multiplexed_leave_the_connection_usable(env,
                                                                   mode):
    """Every dynamic back end and a static PDF on one HTTP/2 connection at
    once, twice over: each 302 whole, no DATA at all on its stream, no
    reset, no GOAWAY; then the follow-ups with their cookies, and the
    fallbacks, on the same connection, at once too."""
    server = env[mode]
    targets = [(dyn_target(p, q), p, q, k) for _, p, q, k in DYNAMIC] * 2
    targets.append(("/prot/doc.pdf", "/prot/doc.pdf", "", "doc"))
    with h2_session(env, mode) as c:
        sids = [c.send("GET", t) for t, _, _, _ in targets]
        answers = c.collect(sids)
        follow = []
        for sid, r, (t, p, q, k) in zip(sids, answers, targets):
            token, cookie = assert_redirect(server, r, p, query=q,
                                            secret=server.secret)
            assert sid not in c.received, \
                "DATA on the 302's stream %d: %r" % (sid, c.received[sid])
            follow.append((r.location_target(), cookie, k))
        assert_clean(c)
        sids = [c.send("GET", t, cookies=[ck]) for t, ck, _ in follow]
        sids += [c.send("GET", t) for t, _, _ in follow]
        answers = c.collect(sids)
        n = len(follow)
        for r, (_, _, k) in zip(answers[:n], follow):
            assert_inline(r, env["files"][k])
        for r, (_, _, k) in zip(answers[n:], follow):
            assert_attachment(r, env["files"][k])
        assert_clean(c)
        assert c.protocol == "HTTP/2"


@pytest.mark.parametrize("mode", MUX_MODES)
def test_no_byte_of_a_discarded_pdf_reaches_the_client(env, mode):
    """A connection that only ever gets the module's 302s in place of
    dynamic PDFs: not one byte of any of those PDFs on the wire (after
    TLS), no DATA frame at all after the session's own set-up."""
    with h2_session(env, mode) as c:
        before = len(c.wire)
        sids = [c.send("GET", dyn_target(p, q)) for _, p, q, _ in DYNAMIC]
        answers = c.collect(sids)
        assert [r.status for r in answers] == [302] * len(DYNAMIC), answers
        assert_clean(c)
        wire = bytes(c.wire[before:])
        assert not any(s in c.received for s in sids), c.received
    for key in ("php", "cgi", "http"):
        pdf = env["files"][key]
        label = re.search(rb"h2 \w+ [0-9a-f]{32}", pdf).group(0)
        assert label not in wire and b"%PDF" not in wire, key


@pytest.mark.parametrize("mode", MUX_MODES)
def test_slow_back_end_redirect_is_prompt_and_the_connection_goes_on(env,
                                                                     mode):
    """A back end that sends the start of a 6.5 MiB PDF and holds the
    rest: the 302 comes on its stream while the back end holds, the next
    stream on the same connection is served, and the back end is not left
    hanging.  Whether mod_proxy reads it to its end (the discard drains)
    or mod_http2 ends the stream's connection first (its next writes fail)
    is a race between httpd's own threads, so either end counts."""
    back = env["back"]
    back.slow_done.clear()
    back.slow_release.clear()
    try:
        with h2_session(env, mode) as c:
            [r] = c.collect([c.send("GET", "/api/reports/slow")])
            back.slow_release.set()
            assert_redirect(env[mode], r, "/api/reports/slow")
            [r2] = c.collect([c.send("GET", "/open/hello.txt")])
            assert r2.status == 200 and r2.body == b"hello\n", r2
            assert_clean(c)
    finally:
        back.slow_release.set()
    assert back.slow_done.wait(30), "the back end never ended"


@pytest.mark.parametrize("mode", ["h2", "h2c"])
@pytest.mark.parametrize("target", ["/prot/big.pdf", "/prot/big.php"])
def test_big_pdf_redirect_then_whole_document(env, mode, target):
    """A 2.4 MB PDF, static and from PHP: the 302 carries none of it, the
    inline answer all of it, through HTTP/2 flow control; a Range for its
    last bytes is served with the token alone.  (Not after an Upgrade:
    see test_upgraded_connection_ends_gracefully_if_at_all.)"""
    data = env["files"]["big"]
    assert len(data) > 2000000
    r, token, cookie = first_visit(env, mode, target)
    r2, decision = fetch(env, mode, "GET", r.location_target(),
                         cookies=[cookie])
    assert_inline(r2, data)
    if target.endswith(".pdf"):
        r3, decision = fetch(env, mode, "GET", r.location_target(),
                             headers=[("Range", "bytes=-100")])
        assert r3.status == 206 and r3.body == data[-100:], r3
        assert decision == "range"


def test_upgraded_connection_ends_gracefully_if_at_all(env):
    """An Upgrade on a dynamic PDF's first view.  Under event httpd takes
    it (the handler runs) and the module's 302 is stream 1, whole, with no
    DATA.  What httpd does with the upgraded connection next is a race of
    its own: measured (httpd 2.4.71, mod_http2 2.0.42, with or without
    this module), a second stream is answered about one time in ten; the
    other times httpd says GOAWAY (NO_ERROR, last stream 1, "timeout") as
    soon as it has to wait for the client, and a stream that must wait for
    a WINDOW_UPDATE (a 2.4 MB PDF) is cut short the same way (curl, with
    its 32 MiB window, usually gets it whole).  Either way the end must be
    graceful, and a new connection serves the request.  Big answers are
    therefore tested over h2 and h2c.  Under prefork the Upgrade is
    declined and the 302 comes over HTTP/1.1."""
    server = env["upgrade"]
    c = h2client.H2Client(server, "upgrade")
    try:
        sid = c.send("GET", "/prot/invoice.php?id=1")
        [r] = c.collect([sid])
        assert_redirect(server, r, "/prot/invoice.php", query="id=1",
                        secret=server.secret)
        assert b"%PDF" not in c.wire
        if MPM == "prefork":
            assert sid == 0 and r.protocol == "HTTP/1.1", r
            assert b" 101 " not in c.wire
            return
        assert sid == 1 and r.protocol == "HTTP/2", r
        assert 1 not in c.received, c.received
        try:
            # the GOAWAY may come before this request is even sent (seen
            # once under ASan): h2 then refuses to open a stream
            sid = c.send("GET", "/open/hello.txt")
            [r2] = c.collect([sid])
        except (AssertionError, h2.exceptions.ProtocolError):
            assert (c.goaway, c.goaway_last) == (0, 1), \
                (c.goaway, c.goaway_last)
            r2 = None
        assert not c.resets, c.resets
    finally:
        c.close()
    if r2 is None:
        r2, _ = fetch(env, "upgrade", "GET", "/open/hello.txt")
    assert r2.status == 200 and r2.body == b"hello\n", r2


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_head_is_redirected_without_body(env, mode):
    server = env[mode]
    r, decision = fetch(env, mode, "HEAD", "/prot/invoice.php?id=9")
    assert_redirect(server, r, "/prot/invoice.php", query="id=9")
    assert r.body == b"" and decision == "redirect"


# ------------------------------------------------------ cookie fields

@pytest.mark.parametrize("mode", MUX_MODES)
@pytest.mark.parametrize("target", ["/prot/doc.pdf", "/prot/invoice.php"])
def test_cookie_in_a_field_of_its_own_is_accepted(env, mode, target):
    """RFC 9113 section 8.2.3: a client may send each cookie as a
    separate `cookie` field; mod_http2 joins them with "; "."""
    server = env[mode]
    key = "doc" if target.endswith(".pdf") else "php"
    with h2_session(env, mode) as c:
        [r] = c.collect([c.send("GET", target)])
        token, cookie = assert_redirect(server, r, target)
        [r2] = c.collect([c.send("GET", r.location_target(),
                                 cookie_fields=["a=1", cookie, "b=2"])])
        assert_inline(r2, env["files"][key])
        [r3] = c.collect([c.send("GET", r.location_target(),
                                 cookie_fields=[cookie])])
        assert_inline(r3, env["files"][key])
        assert_clean(c)


@pytest.mark.parametrize("mode", MUX_MODES)
@pytest.mark.parametrize("fields", [
    ["a=1, {c}"],
    ["a=1", "x=y, {c}"],
    ["{c}, a=1"],
    ["a=1", "x=y,{c}", "b=2"],
], ids=["comma-one-field", "comma-second-field", "comma-after",
        "comma-no-space"])
def test_comma_never_splits_cookies_over_h2(env, mode, fields):
    """A site may have put a "," into a cookie value from untrusted input:
    "x=y, pdftoken_...=T" is one cookie named x, whatever the fields."""
    server = env[mode]
    with h2_session(env, mode) as c:
        [r] = c.collect([c.send("GET", "/prot/doc.pdf")])
        token, cookie = assert_redirect(server, r, "/prot/doc.pdf")
        [r2] = c.collect([c.send("GET", r.location_target(), cookie_fields=[
            f.format(c=cookie) for f in fields])])
        assert_attachment(r2, env["files"]["doc"], filename="doc.pdf")
        # The same cookie after a ';' of its own is accepted.
        [r3] = c.collect([c.send("GET", r.location_target(), cookie_fields=[
            "x=y,", cookie])])
        assert_inline(r3, env["files"]["doc"])
        assert_clean(c)


# --------------------------------------------------------------- curl

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("target,key", [("/prot/doc.pdf", "doc"),
                                        ("/prot/invoice.php", "php"),
                                        ("/api/reports/7", "http")],
                         ids=["static", "php", "proxy"])
def test_curl_sees_the_same_flow(env, mode, target, key):
    """curl (libcurl on nghttp2): R1, R2 and R3 over each mode, the
    protocol curl used as EXPECTED says."""
    server = env[mode]
    want = EXPECTED[(MPM, mode)]
    r = h2client.curl(server, "GET", target, mode)
    assert r.protocol == want[phase_of_r1(target)], r
    token, cookie = assert_redirect(server, r, target, secret=server.secret)
    r2 = h2client.curl(server, "GET", r.location_target(), mode,
                       cookies=[cookie])
    assert r2.protocol == want["handler"], r2
    assert_inline(r2, env["files"][key])
    r3 = h2client.curl(server, "GET", r.location_target(), mode)
    assert r3.protocol == want["handler"], r3
    assert_attachment(r3, env["files"][key])
