# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Browser end-to-end tests of mod_pdftoken: Debian's Chromium, Firefox ESR
and WebKitGTK.

This driver owns the server side (sites.py: the documents, the attacker,
the sink; engines.py: starting each engine; report.py: the cases, the
verdicts and the table); t/browser/cases.mjs owns the browser side (its
helpers in lib/, the cases by concern in cases/) and is run once per
browser: puppeteer-core for Chromium (CDP) and Firefox
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
default scope (PdfTokenFragment strip); c9 measures what README warns of: a
PDF cached while unprotected, reopened from the browser's cache; c10 clicks
a link inside a protected PDF and reads the Referer the linked site got;
d1-d3 are PDFs made by a handler
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

x1-x6 are issue 22 (PdfTokenCrossSite, t/browser/crosssite.py,
cases/crosssite.mjs): partner pages on https://partner.test and
https://other.test (other registrable domains, the same test CA and
port-less names as the site) frame PDFs of scopes with PdfTokenCrossSite
Off, On, and On with PdfTokenFragment safe.  x1 (Off/On in partner.test's
iframe), x2 (the attacker's fragment through a partner's iframe, embed,
object and link; the harness's own first request checks the Location
ends in '#' and the cookie's attributes), x3 (other.test frames a token
the harness minted: fallback) and x4 (partner.test's frame gets the
cookie; the same tokenized URL at top level and in other.test's frame
gets the fallback) run in each engine as shipped; x5 (setting x element x
scope x fragment) and x6 (x4 in Off and On with each other third-party
cookie setting) in the rest set.  x1, x4, x5 and x6 compare what they
saw with t/browser/crosssite.tsv (--record-crosssite writes it).  x7: a
CGI script's own download (attachment, filename="x7-<form>-<element>.pdf";
application/octet-stream, text/plain with a binary body, no type with
bytes before %PDF-) in partner.test's iframe, embed and object with
#FDF=: Firefox shows such an answer in an <object> or <embed> whatever
"attachment" says, so each must be judged and none shown.  x8: ten answers
the module leaves alone although they hold a PDF (attachments without a
name, types no engine re-guesses, junk before %PDF-) in the same frames:
none may be shown.

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
download, which both engines refuse with an error).  m3 puts every cell
of the protected scope, with the same fragment, into the <embed>s of
same-site pages (Firefox shows attachments, untyped and binary text/plain
answers there that it only saves at top level): an embed may show a PDF
only after a pass with the matching cookie, at the tokenized URL, with an
empty fragment; each page's control, an unprotected application/pdf cell,
must show with the fragment.  The run prints a table
(case x browser -> outcome), the browser versions and a closing
`N passed, N failed` line, and exits non-zero on any failure.  With the
pile-up, Chromium and Firefox run one after the other while WebKit runs
beside them (a run mostly waits on page loads, timers and WebKit's
one-command-at-a-time WebDriver); without it (--set mission, `make test`)
the three engines run side by side.  Nothing is skipped: a missing
browser or puppeteer-core is a failure (`make browser` installs them).

A pile-up case whose flood did not reach the bound (a machine too busy to
send a third of the first views, or, for p0, p1 and p3, no request
carrying 8 module cookies) shows NOT MEASURED and the number of first
views that reached the server: it is neither passed nor failed, and its
other checks still count.  The module's own bound is asserted at HTTP
level, independent of timing, in t/integration/test_pile_up.py.
The same holds for a matrix scope (m1, m2) that runs out of its budget
(MATRIX_CASE_TIMEOUT): the cells it did not reach are listed as not
measured, every cell it measured is still judged.

    PDFTOKEN_KEEP_TMP=1        keep the work directory (logs, profiles)
    PDFTOKEN_BROWSER_SHOTS=DIR save every screenshot taken into DIR
    PDFTOKEN_WEBKIT_DEBUG=1    log WebKit's WebDriver commands and proxy
    --browser NAME             run one browser only (for debugging)
    --serial                   run the engines one after the other, not
                               side by side
    --set mission|rest|all     the cases to run: mission (what `make test`
                               runs: every case but x5, x6, the pile-up
                               and the render matrix), rest (those), all
                               (default)
    --case ID                  run only this case, repeatable (debugging)
    --record-matrix            run m1 and m2 only, in every browser, and
                               write t/browser/render-matrix.tsv from m1
    --record-crosssite         run x1, x4, x5 and x6 only and write
                               t/browser/crosssite.tsv (with --browser,
                               keep the other engines' rows)
    --matrix-tabs N            tabs the matrix uses at once (default 4)
    --matrix-cell ID           run only this matrix cell, repeatable
                               (debugging); with --record-matrix, record
                               only these cells of matrix.py (new ones
                               included) and keep every other row as
                               recorded, with the same browser versions
"""

import argparse
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

import backends  # noqa: E402
import crosssite  # noqa: E402
import harness  # noqa: E402
import https_site  # noqa: E402
import matrix  # noqa: E402
import pdftoken_ref  # noqa: E402
from engines import (  # noqa: E402
    BROWSERS, MINIBROWSER, WEBKIT_SLOWER, Xvfb, enter_private_network,
    run_node)
from report import (  # noqa: E402
    CASES, SETS, judge_backends, judge_holes, judge_matrix, log,
    print_matrix_summary, print_table, record_matrix)
from sites import (  # noqa: E402
    AttackerSite, ProxySink, build_site, httpd_config, leak_target, page)


MATRIX_TABS = 4  # tabs the matrix uses at once
# Firefox's m1 (401 cells) took 98 s alone, 157 s beside WebKit and 315 s
# beside WebKit and Chromium on an idle 2-core machine here; one CI run
# went past 342 s.
MATRIX_CASE_TIMEOUT = 480  # seconds of budget for one scope of the matrix ...
MATRIX_TIMEOUT_CELLS = 281  # ... of this many cells (more: in proportion)
# cases.mjs lets a scope run this long past its budget (MATRIX_CASE_GRACE
# in cases/matrix.mjs) before it gives up on it.
MATRIX_CASE_GRACE = 120


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--browser", choices=sorted(BROWSERS), action="append")
    ap.add_argument("--case", choices=[c for c, _ in CASES if c != "net"],
                    action="append", help="run only this case (debugging)")
    ap.add_argument("--set", choices=sorted(SETS), default="all",
                    help="run this set of cases (make test: mission)")
    ap.add_argument("--record-matrix", action="store_true",
                    help="run m1 and m2 in both browsers and write %s"
                    % matrix.TSV.name)
    ap.add_argument("--record-crosssite", action="store_true",
                    help="run x1, x4, x5 and x6 and write %s"
                    % crosssite.TSV.name)
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
    elif args.record_crosssite:
        if args.case:
            ap.error("--record-crosssite runs x1, x4, x5 and x6")
        args.case = ["x1", "x4", "x5", "x6"]
    elif args.case is None and args.set != "all":
        args.case = SETS[args.set]
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
    partner = https_hold = None
    try:
        xs_expected = crosssite.read()
    except ValueError as e:
        raise SystemExit(str(e))
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
        # Held until httpd has stopped, as httpd's own port is: no server
        # of the run is handed it before httpd binds it.
        https_port, https_hold = harness.reserve_port()
        planter = https_site.PlantSite(ca)
        planter.site_port = https_port
        # issue 22: partner.test and other.test, framing the site's PDFs
        partner = crosssite.PartnerSite(ca)
        partner.site_port = https_port
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
                                  for b in browsers)
                        + "".join(crosssite.httpd_config(b)
                                  for b in browsers))
        config = {}
        matrix_sites = {}
        for b in browsers:
            config[b] = build_site(httpd, attacker, b, seen_dir, backend)
            config[b].update(https_site.build(httpd, attacker, planter, b,
                                              https_port, seen_dir, page))
            config[b]["xs"] = crosssite.build(httpd, partner, b, https_port)
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
            matrix_sites[b]["m3"] = matrix.embed_pages(httpd, b, cells)
        backend.start()
        php.start()
        httpd.start()
        if any(c in ("m1", "m2", "m3") for c, _ in cases):
            for b in browsers:
                for p in matrix.check_served(httpd, b, cells, httpd.get):
                    failures.append("matrix cell served wrong: " + p)
        attacker.start()
        planter.start()
        partner.start()
        sink.start()
        log("httpd (protected site): %s    attacker: %s    proxy sink: "
            "127.0.0.1:%d" % (httpd.url("/"), attacker.url("/"), sink.port))
        paths = {}
        budgets = {b: int(MATRIX_CASE_TIMEOUT
                          * max(1.0, len(cells) / MATRIX_TIMEOUT_CELLS)
                          * (WEBKIT_SLOWER if b == "webkit" else 1))
                   for b in browsers}  # seconds per matrix scope
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
                               budget=budgets[b] * 1000,
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

        # The matrix scopes' budgets, and the grace after each, extend the
        # backstop of each browser's run.
        scopes = sum(1 for c in cases if c[0] in ("m1", "m2", "m3"))
        matrix_s = {b: scopes * (budgets[b] + MATRIX_CASE_GRACE)
                    for b in browsers}

        # Firefox then Chromium in one lane, WebKit beside them in another
        # (--serial: one after the other).  A run mostly waits (on WebKit's
        # WebDriver, one command at a time, on page loads and timers): one
        # after the other the engines kept two cores less than half busy.
        # Three lanes loaded the machine past the pile-up cases' timing, so
        # they are used only when no pile-up case runs (make test).  Every
        # document, cookie and log line is per browser.
        ran = {}

        def lane(names):
            for name in names:
                log("== %s" % name)
                t0 = time.time()
                ran[name] = run_node(name, paths[name], workdir,
                                     xvfb.display if name == "webkit"
                                     else None, matrix_s=matrix_s[name])
                log("== %s done in %.1f s" % (name, time.time() - t0))

        if any(c[0] in ("p1", "p2", "p3") for c in cases):
            # Firefox first: its matrix, the slowest beside another
            # engine's, then overlaps WebKit's pile-up rather than WebKit's
            # own matrix.
            lanes = [sorted((b for b in browsers if b != "webkit"),
                            key=lambda b: b != "firefox"),
                     [b for b in browsers if b == "webkit"]]
        else:
            lanes = [[b] for b in browsers]
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
            crosssite.judge(b, table, partner,
                            None if args.record_crosssite else xs_expected)
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
        if partner:
            partner.stop()
        if backend and backend.thread:
            backend.stop()
        if httpd:
            try:
                httpd.stop()
            except AssertionError as e:
                failures.append(str(e))
        if php:
            php.stop()
        if https_hold:
            https_hold.close()
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
    if args.record_crosssite:
        rows = {k: v for k, v in xs_expected.items()
                if k[1] not in browsers}
        rows.update(crosssite.observed(table, browsers))
        old = {}
        for line in (crosssite.TSV.read_text().splitlines()
                     if crosssite.TSV.exists() else []):
            if line.startswith("# Browsers: "):
                for part in line[len("# Browsers: "):].split("; "):
                    b, _, v = part.partition(" ")
                    old[b] = v
        crosssite.write(rows, {**old, **{b: versions.get(b, "unknown")
                                         for b in browsers}})
        log("wrote %s (%d rows)" % (crosssite.TSV, len(rows)))
    if args.record_matrix:
        failures += record_matrix(browsers, cells, table, versions,
                                  partial=bool(args.matrix_cell))
    passed = failed = limited = holes = unmeasured = 0
    case_failures = []
    for cid, _ in cases:
        for b in browsers:
            r = table.get((cid, b))
            if r is not None and r.get("hole"):
                holes += 1
            elif r is not None and r["ok"] and r.get("notMeasured"):
                unmeasured += 1
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
        "hole, %d not measured" % (passed, failed, limited, holes, unmeasured))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
