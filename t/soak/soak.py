#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Soak: wrk against a real httpd with graceful restarts (make soak).

For each MPM (event, then prefork): start Debian's apache2 with the module
on a free 127.0.0.1 port, a PdfTokenSecretFile and PdfTokenTimeout 3600;
pre-mint a rotation of raw requests (R1 to R5 and hostile ones) with the
independent minter (t/integration/pdftoken_ref.py); run wrk (t/soak/
mixed.lua) with 256 connections for 60 s, and send SIGUSR1 (graceful
restart) to the parent every 15 s.  Meanwhile a prober opens a fresh
connection every 50 ms and timestamps every failure, and before each
restart a token is minted by the server (R1) whose cookie must still get
the PDF inline (R2) after that restart and every later one.

Reports, per MPM: requests, statuses, 5xx (target 0), wrk's socket errors
(all of them; wrk cannot say when they happened), the prober's failures
outside the restart windows (target 0), access-log lines whose status or
verdict is not the one their kind must get (target 0), crashes in the
error log (target 0), and the tokens-across-restarts check.  Writes
build/soak/<mpm>.json and prints a Markdown table for BENCHMARKS.md.

    t/soak/soak.py [--module M] [--mpm event --mpm prefork] [--seconds 60]
                   [--connections 256] [--restart-every 15] [--control]

--control adds, per MPM, the same run without restarts: wrk cannot
timestamp its socket errors, so the control shows how many of them the
restarts account for.
"""

import argparse
import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "t" / "integration"))

import harness  # noqa: E402
import pdftoken_ref as ref  # noqa: E402

DOCS = ("/prot/a.pdf", "/prot/b.pdf", "/prot/c.pdf")
CONFIG = r"""
KeepAlive On
KeepAliveTimeout 5
MaxKeepAliveRequests 1000
LogLevel notice pdftoken:notice
GracefulShutdownTimeout 10
PdfTokenTimeout 3600
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""
# Room for 256 connections at once, and for the old generation that
# finishes its requests after a graceful restart.  An event child whose
# workers are all busy closes its idle keep-alive connections (so that
# they reconnect to another child), which wrk counts as read errors: so
# every event child has a worker for each of the 256 connections.
MPM_TUNING = {
    "event": "ThreadLimit 256\nServerLimit 4\nThreadsPerChild 256\n"
             "MaxRequestWorkers 512\nStartServers 2\nMinSpareThreads 64\n"
             "MaxSpareThreads 768\n",
    "prefork": "ServerLimit 256\nMaxRequestWorkers 256\nStartServers 256\n"
               "MinSpareServers 64\nMaxSpareServers 256\n",
}
# What each kind of request must get: (status, PDFTOKEN as logged).
EXPECT = {
    "R1": ("302", "redirect"),
    "R2": ("200", "pass"),
    "R3": ("200", "fallback"),
    "R4": ("302", "redirect"),
    "R5": ("206", "range"),
    "H-token8k": ("302", "redirect"),
    "H-junk-cookie": ("200", "fallback"),
    "H-bad-percent": ("400", "-"),
    "H-crlf": ("302", "redirect"),
    "H-dup-tokens": ("302", "redirect"),
    "H-dotdot": ("302", "redirect"),
    "H-bad-range": ("200", "range"),
    "unprotected": ("200", "-"),
}
# After a restart signal, how long connection failures count as the
# restart's: until the new generation answers, plus this.
WINDOW_AFTER = 2.0


def build_requests(s):
    """[(kind, raw request)], shuffled with a fixed seed."""
    host = "127.0.0.1:%d" % s.port
    secret = s.secret
    now = int(time.time())
    out = []

    def req(kind, target, headers=(), times=1):
        head = "GET %s HTTP/1.1\r\nHost: %s\r\nX-Test-Id: %s\r\n" % (
            target, host, kind)
        for name, value in headers:
            head += "%s: %s\r\n" % (name, value)
        out.extend([(kind, (head + "\r\n").encode("latin-1"))] * times)

    for doc in DOCS:
        tok = ref.mint(secret, doc, lifetime=3600)
        ck = ref.cookie_pair(tok)
        expired = ref.mint(secret, doc, expiry=now - 60)
        forged = ref.forge(tok)
        name = doc.rsplit("/", 1)[1]
        req("R1", doc + "?x=1", times=2)
        req("R2", doc + "?pdftoken=" + tok, [("Cookie", ck)], times=4)
        req("R3", doc + "?pdftoken=" + tok)
        req("R4", doc + "?pdftoken=" + forged,
            [("Cookie", ref.cookie_pair(forged))])
        req("R4", doc + "?pdftoken=" + expired,
            [("Cookie", ref.cookie_pair(expired))])
        req("R5", doc + "?pdftoken=" + tok, [("Range", "bytes=0-1023")],
            times=2)
        req("R5", doc + "?pdftoken=" + expired, [("Range", "bytes=100-")])
        req("H-token8k", doc + "?pdftoken=" + "A" * 8000)
        req("H-junk-cookie", doc + "?pdftoken=" + tok,
            [("Cookie", ref.cookie_name(tok) + "=<junk>; " + "x=y; " * 300
              + "pdftoken=" + tok)])
        req("H-bad-percent", "/prot/%zz" + name)
        req("H-crlf", doc + "?a=%0d%0aSet-Cookie:%20x=1")
        req("H-dup-tokens", doc + "?" + "pdftoken=x&" * 300 + "a=1")
        req("H-dotdot", "/prot/../prot/./" + name)
        req("H-bad-range", doc + "?pdftoken=" + tok,
            [("Range", "bytes=0-9,abc")])
        req("unprotected", "/pub/page.html")
    random.Random(1).shuffle(out)
    return out


def lua_string(data):
    """A Lua string literal holding exactly these bytes."""
    out = []
    for b in data:
        if 0x20 <= b < 0x7f and b not in (0x22, 0x5c):
            out.append(chr(b))
        else:
            out.append("\\%03d" % b)
    return '"' + "".join(out) + '"'


class Prober(threading.Thread):
    """A fresh connection every 50 ms; remembers when anything failed."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.results = []       # (time, None or failure)

    def run(self):
        while not self.stop.is_set():
            t = time.time()
            try:
                r = harness.http_request(self.port, "GET", "/pub/page.html",
                                         timeout=5)
                fail = None if r.status == 200 else "status %d" % r.status
            except Exception as e:   # any failure is what we count
                fail = "%s: %s" % (type(e).__name__, e)
            self.results.append((t, fail))
            self.stop.wait(0.05)


class Restarter(threading.Thread):
    """SIGUSR1 every `every` seconds; checks tokens across restarts."""

    def __init__(self, s, every, seconds):
        super().__init__(daemon=True)
        self.s = s
        self.every = every
        self.seconds = seconds
        self.windows = []       # (signal time, ready time)
        self.checks = []        # (restart number, token number, ok, what)
        self.tokens = []        # (doc, token, cookie) minted by the server
        self.error = None

    def mint_one(self):
        doc = DOCS[len(self.tokens) % len(DOCS)]
        r = harness.http_request(self.s.port, "GET", doc, timeout=10)
        assert r.status == 302, r
        token = r.location_token()
        cookie = ref.cookie_pair(token)
        assert any(c[0] + "=" + c[1] == cookie for c in r.set_cookies()), r
        self.tokens.append((doc, token, cookie))

    def run(self):
        if self.every <= 0:
            return
        try:
            start = time.time()
            n = 0
            while True:
                n += 1
                at = start + n * self.every
                if at >= start + self.seconds - 1:
                    break
                time.sleep(max(0.0, at - time.time() - 1))
                self.mint_one()
                time.sleep(max(0.0, at - time.time()))
                before = self.s._count_starts()
                t_sig = time.time()
                self.s.proc.send_signal(signal.SIGUSR1)
                deadline = t_sig + 30
                while self.s._count_starts() <= before:
                    assert time.time() < deadline, "no restart in 30 s"
                    assert self.s.alive(), "httpd died on graceful restart"
                    time.sleep(0.05)
                self.windows.append((t_sig, time.time()))
                for i, (doc, token, cookie) in enumerate(self.tokens):
                    r = harness.http_request(
                        self.s.port, "GET", doc + "?pdftoken=" + token,
                        headers=[("Cookie", cookie)], timeout=10)
                    ok = (r.status == 200
                          and r.get("Content-Type") == "application/pdf"
                          and r.get("Content-Disposition") is None)
                    self.checks.append((n, i + 1, ok, "%d %s" % (
                        r.status, r.get("Content-Type"))))
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)


def graceful_stop(s):
    """Stop with SIGWINCH (graceful-stop), not the harness's SIGTERM: on
    SIGTERM, event children close their workers' sockets from the main
    thread (close_worker_sockets), which races with the workers and now
    and then crashes a child -- inside httpd, after the measurement."""
    if s.proc is None:
        return
    proc, s.proc = s.proc, None
    proc.send_signal(signal.SIGWINCH)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        raise


def soak(mpm, args, workdir, restarts=True):
    harness.MPM = mpm
    s = harness.Httpd(workdir / ("%s-%s" % (mpm, "restarts" if restarts
                                           else "control")))
    for doc in DOCS:
        s.write_pdf(doc.lstrip("/"), doc, pages=8)
    s.write("pub/page.html", "<p>soak</p>\n")
    s.configure(MPM_TUNING[mpm] + CONFIG)
    s.start(timeout=60)
    result = {"mpm": mpm, "seconds": args.seconds,
              "connections": args.connections, "restarts_on": restarts,
              "label": mpm if restarts else mpm + ", no restart"}
    try:
        reqs = build_requests(s)
        reqfile = s.root / "requests.lua"
        reqfile.write_text("return {\n" + ",\n".join(
            lua_string(raw) for _, raw in reqs) + "\n}\n")
        result["rotation"] = dict(collections.Counter(k for k, _ in reqs))

        prober = Prober(s.port)
        restarter = Restarter(s, args.restart_every if restarts else 0,
                              args.seconds)
        cmd = ["wrk", "-t", str(args.threads), "-c", str(args.connections),
               "-d", "%ds" % args.seconds, "--timeout", "5s",
               "-s", str(HERE / "mixed.lua"),
               "http://127.0.0.1:%d/" % s.port, "--", str(reqfile)]
        t0 = time.time()
        prober.start()
        wrk = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
        restarter.start()
        try:
            out, _ = wrk.communicate(timeout=args.seconds + 60)
        except subprocess.TimeoutExpired:
            wrk.kill()
            out, _ = wrk.communicate(timeout=10)
            result["wrk_timeout"] = True
        restarter.join(timeout=60)
        prober.stop.set()
        prober.join(timeout=10)
        result["wall_seconds"] = round(time.time() - t0, 1)
        out = out.decode("latin-1")
        result["wrk_rc"] = wrk.returncode
        for m in re.finditer(r"^SOAK (\S+) (\d+)$", out, re.M):
            result[m.group(1)] = int(m.group(2))
        result["wrk_output"] = out[-3000:]

        # Restart windows and the prober.
        result["restarts"] = [
            {"signal_at_s": round(a - t0, 2), "ready_after_s": round(b - a, 2)}
            for a, b in restarter.windows]
        result["restarter_error"] = restarter.error
        result["token_checks"] = len(restarter.checks)
        result["token_checks_failed"] = [c for c in restarter.checks
                                         if not c[2]]

        def in_window(t):
            return any(a - 0.1 <= t <= b + WINDOW_AFTER
                       for a, b in restarter.windows)
        fails = [(t, f) for t, f in prober.results if f]
        result["probes"] = len(prober.results)
        result["probe_failures_in_windows"] = sum(1 for t, _ in fails
                                                  if in_window(t))
        result["probe_failures_outside_windows"] = [
            "%.2f s: %s" % (t - t0, f) for t, f in fails if not in_window(t)]
    finally:
        graceful_stop(s)

    # The server's own view: every kind must get its status and verdict.
    seen = collections.Counter()
    wrong = collections.Counter()
    status5xx = 0
    for line in s.access_log.read_text("latin-1").splitlines():
        fields = line.split(" ")
        if len(fields) != 3:
            continue
        kind, status, verdict = fields
        if status.startswith("5"):
            status5xx += 1
        if kind in EXPECT:
            seen[kind] += 1
            if (status, verdict) != EXPECT[kind]:
                wrong["%s %s %s" % (kind, status, verdict)] += 1
    result["logged_by_kind"] = dict(seen)
    result["logged_5xx"] = status5xx
    result["logged_wrong_answers"] = dict(wrong)
    result["log_problems"] = s.log_problems()
    result["crashes"] = [p for p in result["log_problems"]
                         if re.search(r"exit signal|AH00052|Segmentation",
                                      p)]
    return result


def verdict(r):
    five = sum(v for k, v in r.items() if re.fullmatch(r"status_5\d\d", k))
    ok = (five == 0 and r["logged_5xx"] == 0
          and not r["probe_failures_outside_windows"]
          and not r["logged_wrong_answers"] and not r["log_problems"]
          and not r["token_checks_failed"]
          and (r["token_checks"] > 0 or not r["restarts_on"])
          and not r["restarter_error"] and not r.get("wrk_timeout")
          and r.get("requests", 0) > 0)
    return ok, five


def markdown(results):
    rows = [
        ("requests (wrk)", lambda r: "%d" % r.get("requests", 0)),
        ("requests/s", lambda r: "%.0f" % (
            r.get("requests", 0) / (r.get("duration_us", 1) / 1e6))),
        ("latency p50 / p99 / max (ms)", lambda r: "%.1f / %.1f / %.0f" % (
            r.get("latency_p50_us", 0) / 1e3,
            r.get("latency_p99_us", 0) / 1e3,
            r.get("latency_max_us", 0) / 1e3)),
        ("statuses", lambda r: ", ".join(
            "%s: %d" % (k[7:], v) for k, v in sorted(r.items())
            if k.startswith("status_"))),
        ("5xx (wrk / access log)", lambda r: "%d / %d" % (
            verdict(r)[1], r["logged_5xx"])),
        ("wrk socket errors (connect/read/write/timeout), all",
         lambda r: "%d / %d / %d / %d" % (
             r.get("error_connect", 0), r.get("error_read", 0),
             r.get("error_write", 0), r.get("error_timeout", 0))),
        ("graceful restarts (ready after, s)", lambda r: "%d (%s)" % (
            len(r["restarts"]), ", ".join(
                "%.2f" % w["ready_after_s"] for w in r["restarts"]))),
        ("prober connections: failures in / outside restart windows",
         lambda r: "%d: %d / %d" % (
             r["probes"], r["probe_failures_in_windows"],
             len(r["probe_failures_outside_windows"]))),
        ("answers not per SPEC (access log)", lambda r: "%d" % sum(
            r["logged_wrong_answers"].values())),
        ("crashes in the error log", lambda r: "%d" % len(r["crashes"])),
        ("tokens minted before a restart, inline after it", lambda r:
            "%d/%d" % (r["token_checks"] - len(r["token_checks_failed"]),
                       r["token_checks"])),
    ]
    out = ["| | " + " | ".join(r["label"] for r in results) + " |",
           "|---|" + "---|" * len(results)]
    for name, fn in rows:
        out.append("| %s | %s |" % (name, " | ".join(fn(r)
                                                      for r in results)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default=harness.MODULE)
    ap.add_argument("--mpm", action="append", choices=("event", "prefork"))
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--connections", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--restart-every", type=int, default=15)
    ap.add_argument("--control", action="store_true",
                    help="also run each MPM without restarts, to tell "
                    "wrk's socket errors of the restarts from the others")
    ap.add_argument("--out", default=str(REPO / "build" / "soak"))
    args = ap.parse_args()
    harness.MODULE = args.module
    harness.module_path()
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)

    workdir = harness.make_workdir()
    results = []
    try:
        runs = [(mpm, True) for mpm in args.mpm or ["event", "prefork"]]
        if args.control:
            runs = [(m, r) for m, _ in runs for r in (True, False)]
        for mpm, restarts in runs:
            print("soak: %s, %d connections, %d s, %s" % (
                mpm, args.connections, args.seconds,
                "graceful restart every %d s" % args.restart_every
                if restarts else "no restart"), flush=True)
            r = soak(mpm, args, workdir, restarts)
            (outdir / ("%s%s.json" % (mpm, "" if restarts else "-control"))
             ).write_text(json.dumps(r, indent=2))
            results.append(r)
            ok, _ = verdict(r)
            print("soak: %s %s" % (r["label"], "OK" if ok else "FAILED"),
                  flush=True)
    finally:
        harness.remove_workdir(workdir)
    print()
    print(markdown(results))
    bad = [r["label"] for r in results if not verdict(r)[0]]
    for r in results:
        if r["label"] in bad:
            print("\n%s: %s" % (r["label"], json.dumps(
                {k: r[k] for k in ("probe_failures_outside_windows",
                                   "logged_wrong_answers", "log_problems",
                                   "token_checks_failed",
                                   "restarter_error")}, indent=2)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
