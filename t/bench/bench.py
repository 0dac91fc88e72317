#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""make bench / make bench-smoke: what mod_pdftoken costs a real httpd.

One httpd configuration with one <Directory> per scope, so that every
figure comes from the same server in the same run:

    bare             an unprotected directory serving the PDF: what httpd
                     costs anyway (bare-copy: an identical copy of it, the
                     noise floor)
    inline           protected; a valid token and its cookie (R2)
    fallback         protected; a valid token, no cookie (R3, download)
    redirect         protected; no token (R1: mint, 302)
    static-1k        a 1 KB static file, to compare the redirect with
    forced-download  `Header set Content-Disposition attachment` on PDFs,
                     the recipe admins use instead of this module
    untouched        an HTML file in a protected directory: a type known
                     not to be a PDF, the filter leaving at once
    untouched-text   a text/plain file there (10 KB): browsers may render
                     text/plain that begins with %PDF- as a PDF, so the
                     filter reads its first bytes
    bare-html        untouched's .htm file in the bare scope: what the
                     module alone adds to an untouched answer

Three measurements, all on 127.0.0.1, bounded in count and time:

1. wrk, throughput and latency, with the scenarios interleaved inside one
   run (t/bench/interleave.lua): every connection switches scenario every
   few tens of ms, so all of them share the machine's good and bad
   moments.  A round's ratio is the median over its cycles (one pass
   through every scenario) of the ratio within the cycle; the median of
   the rounds is reported, and bare-copy / bare says how far apart two
   identical scenarios come out.
2. valgrind --tool=callgrind on `apache2 -X` (prefork, one process, so the
   counts do not vary from run to run): instructions per request of each
   scenario, split into those inside libcrypto and those outside it.  Each
   scenario is one keep-alive connection of N1 requests, then one of N2;
   callgrind dumps after each connection, and (dump N2 - dump N1) /
   (N2 - N1) leaves exactly the per-request cost.
3. Resident size of the children before and after 1 M more requests of
   the mixed 10 KB scenarios.

Plus the output of build/bench_token (make bench-token).

The full run prints one table and writes it, with the machine and the
commands, to BENCHMARKS.md between its own markers (other sections of the
file are kept).  --smoke runs every part briefly and only checks that each
produced numbers.  Exit status: 0 when every part produced numbers (missed
targets included: this is a benchmark), 1 otherwise.
"""

import argparse
import collections
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "t" / "integration"))

import httpd  # noqa: E402
import pdftoken_ref  # noqa: E402
from samplepdf import make_pdf  # noqa: E402

LUA = HERE / "interleave.lua"
BEGIN = "<!-- make bench: begin (written by t/bench/bench.py) -->"
END = "<!-- make bench: end -->"

# Under callgrind OpenSSL cannot use the CPU's SHA extensions; one
# HMAC-SHA256 with its pads prepared once costs about this many
# instructions (BENCH-NOTES): the floor for the libcrypto part.
HMAC_FLOOR_IR = 4600
# Below this 1-minute load average the machine counts as quiet.
QUIET_LOAD = 0.5

TARGETS = {
    "inline": 0.98,       # inline / bare throughput, 10 KB
    "module_ir": 3000,    # inline Ir outside libcrypto, minus bare+token
    "untouched_ir": 0.01,  # untouched Ir over bare
    "redirect": 1.0,      # redirect / static-1k throughput
    "untouched": 0.99,    # untouched / bare throughput
    "verify": 1.5,        # verify / one bare HMAC() (bench_token)
    "rss": 1024,          # child RSS growth, KiB, after 1 M requests
}

# ---------------------------------------------------------------- config

# Every scope has its own <Directory> and every URL path is 14 bytes
# (/xxxx/dNNN.ext): an extra section or a longer path alone shows up as
# 0.2 to 2 % in instruction counts.
UNPROTECTED = "    PdfTokenProtect Off\n"
# One token lasts the whole run.
PROTECTED = "    PdfTokenProtect On\n    PdfTokenTimeout 3600\n"
FORCED = (UNPROTECTED
          + '    <FilesMatch "\\.pdf$">\n'
          + "        Header set Content-Disposition attachment\n"
          + "    </FilesMatch>\n")
SCOPES = (("bare", UNPROTECTED), ("copy", UNPROTECTED),
          ("inln", PROTECTED), ("fall", PROTECTED), ("redr", PROTECTED),
          ("stat", UNPROTECTED), ("fdwn", FORCED), ("untc", PROTECTED))

# Server-wide settings after the harness's base configuration: keep-alive
# like any benchmark client, and the module's debug log (on in the
# integration tests) back to notice.
SERVER = """KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 5
LogLevel notice pdftoken:notice
"""

SIZES = {"10k": ("d10k", "10 KB"), "1m": ("d01m", "1 MB")}


class Scenario:
    """One kind of request: a path, maybe a token and its cookie."""

    def __init__(self, name, size, scope, filename, token=False,
                 cookie=False, expect="plain", token_path=None):
        self.name = name          # as in the tables
        self.size = size          # "10k", "1m" or "1k"
        self.key = "%s.%s" % (name, size)
        self.path = "/%s/%s" % (scope, filename)
        self.token = token
        self.cookie = cookie
        self.expect = expect
        self.token_path = token_path or self.path
        self.target = self.path
        self.cookie_header = ""

    def mint(self, secret):
        if self.token:
            t = pdftoken_ref.mint(secret, self.token_path, lifetime=3600)
            self.target = "%s?pdftoken=%s" % (self.path, t)
            if self.cookie:
                self.cookie_header = pdftoken_ref.cookie_pair(t)


def scenarios_for(size):
    f = SIZES[size][0]
    out = [Scenario("bare", size, "bare", f + ".pdf"),
           Scenario("bare-copy", size, "copy", f + ".pdf")]
    if size == "10k":
        out.append(control_scenario())
    out += [
           Scenario("inline", size, "inln", f + ".pdf", token=True,
                    cookie=True, expect="inline"),
           Scenario("fallback", size, "fall", f + ".pdf", token=True,
                    expect="fallback")]
    if size == "10k":
        out += [Scenario("redirect", size, "redr", f + ".pdf",
                         expect="redirect"),
                Scenario("static-1k", "1k", "stat", "d01k.txt")]
    out += [Scenario("forced-download", size, "fdwn", f + ".pdf",
                     expect="forced"),
            Scenario("untouched", size, "untc", f + ".htm")]
    if size == "10k":
        out.append(Scenario("untouched-text", size, "untc", f + ".txt"))
        # untouched's own file in the bare scope: what an HTML file costs
        # httpd (mod_mime, ETag) apart from the module.
        out.append(Scenario("bare-html", size, "bare", f + ".htm"))
    return out


def control_scenario():
    """bare with inline's query and cookie: separates what httpd (and the
    client, and the kernel) spend on the longer request from what the
    module does."""
    return Scenario("bare+token", "10k", "bare", "d10k.pdf", token=True,
                    cookie=True, token_path="/bare/d10k.pdf")


def write_documents(server):
    """The same bytes in every scope; sizes as close to 10 KiB and 1 MiB
    as samplepdf makes them."""
    small = make_pdf("bench", pages=1, padding=9520)
    large = make_pdf("bench", pages=16, padding=65200)
    one_k = (b"static text, one kilobyte\n" * 40)[:1023] + b"\n"
    for scope, _ in SCOPES:
        server.write("%s/d10k.pdf" % scope, small)
        server.write("%s/d01m.pdf" % scope, large)
    # Not PDFs, the PDFs' sizes.
    for name, n in (("d10k", len(small)), ("d01m", len(large))):
        text = (b"plain text, not a PDF\n" * (n // 22 + 1))[:n]
        server.write("untc/%s.htm" % name, text)
        server.write("untc/%s.txt" % name, text)
        server.write("bare/%s.htm" % name, text)
    server.write("stat/d01k.txt", one_k)
    return {"10k": len(small), "1m": len(large), "1k": len(one_k)}


def config_body():
    body = SERVER
    for scope, inner in SCOPES:
        body += '<Directory "@DOCROOT@/%s">\n%s</Directory>\n' % (scope,
                                                                 inner)
    return body


# ---------------------------------------------------------------- checks

def check_scenario(server, sc, size):
    """One request by hand: does the scenario do what its name says?"""
    headers = [("Cookie", sc.cookie_header)] if sc.cookie_header else []
    r = server.get(sc.target, headers=headers)
    cd = r.get("Content-Disposition") or ""
    ctype = r.get("Content-Type") or ""
    problems = []
    if sc.expect == "redirect":
        loc = r.get("Location") or ""
        if r.status != 302 or "pdftoken=" not in loc \
                or not loc.endswith("#") or not r.get_all("Set-Cookie"):
            problems.append("not a 302 with a token and a cookie")
    else:
        if r.status != 200 or len(r.body) != size:
            problems.append("status %d, %d bytes" % (r.status, len(r.body)))
        if r.get_all("Set-Cookie"):
            problems.append("sets a cookie")
        attachment = cd.startswith("attachment")
        if sc.expect in ("fallback", "forced") and not attachment:
            problems.append("no Content-Disposition: attachment")
        if sc.expect not in ("fallback", "forced") and cd:
            problems.append("Content-Disposition %r" % cd)
        if sc.expect == "fallback" \
                and not ctype.startswith("application/octet-stream"):
            problems.append("Content-Type %r" % ctype)
        if sc.expect in ("inline", "forced") \
                and not ctype.startswith("application/pdf"):
            problems.append("Content-Type %r" % ctype)
        if sc.expect == "inline" and "private" not in (
                r.get("Cache-Control") or ""):
            problems.append("no Cache-Control: private")
    if problems:
        raise SystemExit("bench: scenario %s (%s) is wrong: %s\n%r"
                         % (sc.name, sc.target[:40], "; ".join(problems), r))


def check_module(path):
    """A module built with sanitizers would measure the sanitizer."""
    out = subprocess.run(["nm", "-D", path], capture_output=True,
                         text=True).stdout
    if "__asan_" in out or "__ubsan_" in out:
        raise SystemExit("bench: %s is built with sanitizers; run `make` "
                         "for the plain module" % path)


# ------------------------------------------------------------------- wrk

class WrkResult:
    def __init__(self, text, conns):
        self.text = text
        self.stats = {}
        self.cycles = {}
        self.summary = None
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 5 and f[:2] == ["pdftoken-bench", "scenario"]:
                hist = collections.Counter()
                for pair in f[5:]:
                    b, c = pair.split(":")
                    hist[int(b)] += int(c)
                count, total_ns = int(f[3]), float(f[4])
                self.stats[f[2]] = {
                    "count": count,
                    # Closed loop, one request in flight per connection:
                    # rate = connections / mean duration.
                    "rps": (count * conns / (total_ns / 1e9)
                            if total_ns else 0.0),
                    "p50": percentile(hist, 0.50),
                    "p99": percentile(hist, 0.99),
                }
            elif len(f) >= 3 and f[:2] == ["pdftoken-bench", "cycles"]:
                cyc = self.cycles.setdefault(f[2], {})
                for item in f[3:]:
                    c, count, total_ns = item.split(":")
                    cyc[int(c)] = (int(count), float(total_ns))
            elif len(f) >= 2 and f[:2] == ["pdftoken-bench", "summary"]:
                vals = f[2:]
                self.summary = {vals[i]: int(vals[i + 1])
                                for i in range(0, len(vals) - 1, 2)}

    def cycle_ratios(self, a, b, least=8):
        """Throughput ratio a / b in each cycle where both ran at least
        `least` requests."""
        out = []
        ca, cb = self.cycles.get(a, {}), self.cycles.get(b, {})
        for c in set(ca) & set(cb):
            (na, ta), (nb, tb) = ca[c], cb[c]
            if na >= least and nb >= least and ta and tb:
                out.append((na / ta) / (nb / tb))
        return out

    def ratio(self, a, b):
        """Throughput ratio a / b in this run: the median of the per-cycle
        ratios (a burst of other work on the machine spoils a few cycles,
        not the run), or the ratio of the totals when there are too few
        cycles; None if a or b did not run."""
        sa, sb = self.stats.get(a), self.stats.get(b)
        if not sa or not sb or not sa["rps"] or not sb["rps"]:
            return None
        cr = self.cycle_ratios(a, b)
        if len(cr) >= 5:
            return statistics.median(cr)
        return sa["rps"] / sb["rps"]

    def errors(self):
        if self.summary is None:
            return ["no summary from wrk"]
        return ["%s errors: %d" % (k, v) for k, v in self.summary.items()
                if k not in ("requests", "duration_us") and v]


def percentile(hist, q):
    """Duration in ms at quantile q of a log-bucket histogram."""
    total = sum(hist.values())
    if not total:
        return 0.0
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= q * total:
            return math.exp((b + 0.5) / 100) / 1e6
    return 0.0


class Wrk:
    def __init__(self, server, workdir, conns):
        self.server = server
        self.workdir = workdir
        self.conns = conns
        self.runs = 0
        self.commands = []

    def run(self, scenarios, seconds, slice_ms, warmup=1.0, quota=0):
        """One wrk run over the scenarios; a WrkResult."""
        self.runs += 1
        spec = self.workdir / ("wrk-%02d.tsv" % self.runs)
        epoch = int(time.time()) - 1
        start = time.time() - epoch
        lines = ["param\tepoch\t%d" % epoch,
                 "param\tslice_ms\t%d" % slice_ms,
                 "param\tquota\t%d" % quota]
        if not quota:
            lines += ["param\tfrom_ms\t%d" % ((start + warmup) * 1000),
                      "param\tuntil_ms\t%d" % ((start + seconds - 0.3)
                                              * 1000)]
        for sc in scenarios:
            lines.append("scenario\t%s\t%s\t%s" % (sc.key, sc.target,
                                                   sc.cookie_header))
        spec.write_text("\n".join(lines) + "\n")
        cmd = ["wrk", "-t", str(self.conns), "-c", str(self.conns),
               "-d", "%ds" % seconds, "--timeout", "10s", "-s", str(LUA),
               "http://127.0.0.1:%d/" % self.server.port, "--", str(spec)]
        self.commands.append(cmd)
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=seconds + 120)
        if p.returncode != 0:
            raise SystemExit("bench: wrk failed (%d):\n%s%s"
                             % (p.returncode, p.stdout, p.stderr))
        return WrkResult(p.stdout, self.conns)


# ---------------------------------------------------------------- memory

def children(parent):
    """{pid: VmRSS KiB} of the processes whose parent is `parent`."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue
        ppid = re.search(r"^PPid:\s+(\d+)", status, re.M)
        rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        if ppid and rss and int(ppid.group(1)) == parent:
            out[int(d.name)] = int(rss.group(1))
    return out


# -------------------------------------------------------------- callgrind

def parse_callgrind(path):
    """Self cost per ELF object and per (object, function), and the
    inclusive cost of each call edge, from one callgrind dump.

    callgrind_annotate has no per-object view, so the format is read
    here: `ob=`/`fn=` set where cost lines go; the cost line after a
    `calls=` line is the call's inclusive cost, not self cost.
    """
    names = {"ob": {}, "fl": {}, "fn": {}}
    space = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl",
             "cfi": "fl", "cfl": "fl", "jfi": "fl", "fn": "fn",
             "cfn": "fn", "jfn": "fn"}
    fn_object = {}

    def resolve(kind, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value, value
        table = names[space[kind]]
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return m.group(1), table.get(m.group(1), "?")

    obj_self = collections.Counter()
    fn_self = collections.Counter()
    edges = []
    ob = fn = fn_id = cob = cfn_id = None
    in_call = False
    with open(path, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if in_call:
                    edges.append((ob, fn, cob, cfn_id, cost))
                    in_call = False
                    cob = None
                else:
                    obj_self[ob] += cost
                    fn_self[(ob, fn)] += cost
                continue
            key, eq, value = line.rstrip("\n").partition("=")
            if not eq or key not in space and key != "calls":
                continue
            if key == "ob":
                ob = resolve(key, value)[1]
            elif key == "fn":
                fn_id, fn = resolve(key, value)
                fn_object.setdefault(fn_id, ob)
            elif key == "cob":
                cob = resolve(key, value)[1]
            elif key == "cfn":
                cfn_id = resolve(key, value)[0]
            elif key == "calls":
                in_call = True
            else:
                resolve(key, value)
    calls = collections.Counter()
    for ob_, fn_, cob_, cfn_id_, cost in edges:
        callee_ob = fn_object.get(cfn_id_, cob_ or ob_)
        calls[(ob_, fn_, callee_ob, names["fn"].get(cfn_id_, "?"))] += cost
    return obj_self, fn_self, calls


def per_request(a, b, n):
    """(b - a) / n for every key of two Counters."""
    return {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}


class CallgrindRun:
    """Instructions per request of each scenario, from one apache2 -X."""

    def __init__(self, server, workdir, n1, n2, warm):
        self.server = server
        self.dir = workdir / "callgrind"
        self.n1, self.n2, self.warm = n1, n2, warm
        self.command = None
        self.conf = None
        self.results = {}

    def write_config(self, body):
        # The same configuration text with a prefork MPM block: -X then
        # serves every request in one process, one at a time, with no
        # timer thread to add instructions that depend on the wall clock.
        mpm = httpd.MPM
        httpd.MPM = "prefork"
        try:
            text = self.server.base_config() + body + "\n"
        finally:
            httpd.MPM = mpm
        self.conf = self.server.root / "httpd-callgrind.conf"
        self.conf.write_text(self.server.substitute(text))
        self.conf.chmod(0o644)

    def dumps(self):
        return sorted(self.dir.glob("callgrind.out.*"),
                      key=lambda p: int(p.suffix[1:]))

    def wait_dump(self, count, proc, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise SystemExit("bench: apache2 under callgrind exited "
                                 "(%d)" % proc.returncode)
            have = self.dumps()
            if len(have) >= count:
                # The dump is written by the time the next one starts;
                # wait for the file to stop growing.
                size = -1
                while size != have[count - 1].stat().st_size:
                    size = have[count - 1].stat().st_size
                    time.sleep(0.05)
                return have[count - 1]
            time.sleep(0.05)
        raise SystemExit("bench: no callgrind dump %d after %ds"
                         % (count, timeout))

    def run(self, scenarios):
        self.dir.mkdir()
        # apache2 writes the dumps after it switched to www-data.
        self.dir.chmod(0o777)
        self.command = [
            "valgrind", "--tool=callgrind", "--vgdb=no",
            "--dump-instr=no", "--dump-line=yes",
            # One dump per connection: its requests, and the accept and
            # lingering close around them.
            "--dump-after=ap_process_connection",
            "--callgrind-out-file=%s/callgrind.out" % self.dir,
            httpd.APACHE, "-X", "-f", str(self.conf)]
        log = open(self.dir / "valgrind.log", "wb")
        proc = subprocess.Popen(self.command, env=self.server.httpd_env(),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True,
                                cwd=str(self.server.root))
        log.close()
        try:
            # The first connection that succeeds is the first dump.
            deadline = time.time() + 120
            while True:
                try:
                    socket.create_connection(
                        ("127.0.0.1", self.server.port), timeout=2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        raise SystemExit(
                            "bench: apache2 did not start under callgrind:"
                            "\n%s" % (self.dir / "valgrind.log").read_text())
                    time.sleep(0.2)
            count = 1
            self.wait_dump(count, proc)
            for sc in scenarios:
                got = []
                for n in (self.warm, self.n1, self.n2):
                    keepalive_batch(self.server.port, sc, n)
                    count += 1
                    got.append(self.wait_dump(count, proc))
                self.results[sc.key] = (got[1], got[2])
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def analyse(self, key):
        """Per-request Ir of a scenario: total, per object, per function,
        per call edge."""
        a, b = self.results[key]
        oa, fa, ca = parse_callgrind(a)
        ob, fb, cb = parse_callgrind(b)
        n = self.n2 - self.n1
        objs = per_request(oa, ob, n)
        return {"total": sum(objs.values()), "objects": objs,
                "functions": per_request(fa, fb, n),
                "calls": per_request(ca, cb, n), "dump": b}


def keepalive_batch(port, sc, n):
    """n requests of scenario sc over one keep-alive connection."""
    head = "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (sc.target, port)
    if sc.cookie_header:
        head += "Cookie: %s\r\n" % sc.cookie_header
    req = (head + "\r\n").encode("latin-1")
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        buf = b""
        for _ in range(n):
            s.sendall(req)
            while True:
                hdr, sep, rest = buf.partition(b"\r\n\r\n")
                if sep:
                    m = re.search(rb"\r\nContent-Length: (\d+)", hdr)
                    length = int(m.group(1)) if m else 0
                    if len(rest) >= length:
                        if not re.match(rb"HTTP/1\.1 (200|302) ", hdr):
                            raise SystemExit("bench: %s answered %r under "
                                             "callgrind" % (sc.key,
                                                            hdr[:200]))
                        buf = rest[length:]
                        break
                data = s.recv(1 << 20)
                if not data:
                    raise SystemExit("bench: connection closed (%s)"
                                     % sc.key)
                buf += data


def annotate_dump(dump, workdir):
    """callgrind_annotate --auto=yes of one dump: the module's source, line
    by line.  A dump taken mid-run records the frames still on the stack
    as `calls=0` edges, which callgrind_annotate 3.19 counts as self cost
    of the caller (main gets 100 %); as calls=1 they are counted right."""
    fixed = workdir / (dump.name + ".annotate")
    with open(dump) as src, open(fixed, "w") as dst:
        for line in src:
            dst.write("calls=1 " + line[8:] if line.startswith("calls=0 ")
                      else line)
    out = workdir / "callgrind-inline-annotate.txt"
    with open(out, "w") as f:
        subprocess.run(["callgrind_annotate", "--auto=yes",
                        "--include=%s" % REPO, "--threshold=99", str(fixed)],
                       stdout=f, stderr=subprocess.STDOUT, timeout=300)
    return out


def named(fn, calls):
    """A function name, or for a stripped one (0x...) its main caller."""
    if not fn.startswith("0x"):
        return fn
    callers = collections.Counter()
    for (_, caller, _, callee), v in calls.items():
        if callee == fn:
            callers[caller] += v
    if not callers:
        return fn
    return "%s (called by %s)" % (fn, callers.most_common(1)[0][0])


def is_crypto(obj):
    return obj is not None and "libcrypto" in os.path.basename(obj)


def is_module(obj):
    return obj is not None and os.path.basename(obj) == "mod_pdftoken.so"


def module_own(r):
    """Ir per request that the module's own code runs, libcrypto left out:
    its functions' self cost plus the calls they make into httpd, APR and
    libc (inclusive).  Not ap_pass_brigade, which is the rest of the
    answer.  Of "inline - bare+token", the remainder is what httpd does
    with what the module added: checking and writing the headers SPEC
    section 4 requires (Link, Cache-Control, Referrer-Policy), logging
    %{PDFTOKEN}e."""
    own = sum(v for (o, _), v in r["functions"].items() if is_module(o))
    return own + sum(v for (o, _, co, cfn), v in r["calls"].items()
                     if is_module(o) and not is_module(co)
                     and not is_crypto(co)
                     and not cfn.startswith("ap_pass_brigade"))


# ----------------------------------------------------------- the machine

def run_text(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def loadavg():
    return Path("/proc/loadavg").read_text().split()[:3]


def machine():
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = re.search(r"MemTotal:\s+(\d+) kB",
                    Path("/proc/meminfo").read_text())
    debian = Path("/etc/debian_version")
    libcrypto = re.search(r"libcrypto\S* => (\S+)",
                          run_text(["ldd", httpd.MODULE]))
    return [
        ("CPUs (nproc)", run_text(["nproc"])),
        ("CPU", cpu),
        ("memory", "%.1f GiB" % (int(mem.group(1)) / 1048576)
         if mem else "?"),
        ("kernel", run_text(["uname", "-srm"])),
        ("OS", "Debian %s" % debian.read_text().strip()
         if debian.exists() else "?"),
        ("httpd", run_text([httpd.APACHE, "-v"]).splitlines()[0]),
        ("MPM", "%s for wrk and memory; prefork `-X` under callgrind"
         % httpd.MPM),
        ("OpenSSL", "%s (module linked to %s)" % (
            run_text(["openssl", "version"]),
            libcrypto.group(1) if libcrypto else "?")),
        ("wrk", run_text(["wrk", "-v"]).splitlines()[0]),
        ("valgrind", run_text(["valgrind", "--version"])),
    ]


# ----------------------------------------------------------------- report

def fmt_int(v):
    return "{:,}".format(int(round(v)))


def fmt_ratio(v):
    return "%.3f" % v if v is not None else "-"


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class Report:
    def __init__(self, args):
        self.args = args
        self.lines = []

    def out(self, text=""):
        self.lines.append(text)
        print(text, flush=True)


def ratio_rows(rounds, key, ref):
    """Within-round throughput ratios key / ref over the rounds."""
    out = []
    for r in rounds:
        for w in r["_wrk"]:
            v = w.ratio(key, ref)
            if v is not None:
                out.append(v)
    return out


def verdict(ok):
    return "met" if ok else "**not met**"


# ------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true",
                    help="every part briefly; check only that each "
                         "produced numbers")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds-10k", type=int, default=24,
                    help="seconds of one wrk run of the 10 KB group")
    ap.add_argument("--seconds-1m", type=int, default=16,
                    help="seconds of one wrk run of the 1 MB group")
    ap.add_argument("--connections", type=int, default=4,
                    help="wrk connections (and threads: one each)")
    ap.add_argument("--memory-requests", type=int, default=1000000)
    ap.add_argument("--memory-cap", type=int, default=240,
                    help="seconds at most for the memory run")
    ap.add_argument("--callgrind-n", type=int, nargs=2, default=(20, 220),
                    metavar=("N1", "N2"))
    ap.add_argument("--bench-token", default=str(REPO / "build" /
                                                 "bench_token"))
    ap.add_argument("--out", help="write the results into this file "
                                  "(BENCHMARKS.md)")
    ap.add_argument("--keep", help="keep the server tree and callgrind "
                                   "dumps in this directory")
    ap.add_argument("--ir-rows", type=int, default=40,
                    help="functions listed by --ir")
    ap.add_argument("--ir", action="store_true",
                    help="callgrind alone (make bench-ir): Ir per request "
                         "of the 10 KB scenarios and where inline's go, "
                         "in a minute or two; writes no file")
    args = ap.parse_args()
    if args.ir:
        return ir_main(args)
    if args.smoke:
        args.rounds, args.seconds_10k, args.seconds_1m = 1, 4, 3
        args.memory_requests, args.memory_cap = 20000, 30
        args.callgrind_n = (2, 6)
        args.out = None
    if args.rounds < 1 or args.connections < 1:
        ap.error("--rounds and --connections must be at least 1")

    t_start = time.time()
    loads = [loadavg()]
    workdir, server = prepare(args, ("wrk", "valgrind", "callgrind_annotate"))
    failures = []
    rep = Report(args)
    try:
        sizes = write_documents(server)
        body = config_body()
        server.configure(body)
        groups = {"10k": scenarios_for("10k"), "1m": scenarios_for("1m")}
        control = next(sc for sc in groups["10k"]
                       if sc.name == "bare+token")
        everything = groups["10k"] + groups["1m"]
        for sc in everything:
            sc.mint(server.secret)

        # ---- bench_token
        token_out = ""
        if Path(args.bench_token).exists():
            p = subprocess.run([args.bench_token] +
                               (["3"] if args.smoke else []),
                               capture_output=True, text=True, timeout=300)
            token_out = p.stdout.strip()
            if p.returncode != 0:
                failures.append("bench_token failed: %s" % p.stderr)
        else:
            failures.append("%s missing (make bench-token)"
                            % args.bench_token)
        m = re.search(r"verify valid / bare HMAC\(\)\s+([\d.]+)", token_out)
        verify_ratio = float(m.group(1)) if m else None
        if verify_ratio is None:
            failures.append("no verify ratio from bench_token")

        # ---- wrk and memory, on one server
        server.start()
        for sc in everything:
            check_scenario(server, sc, sizes[sc.size])
        rss_fresh = children(server.proc.pid)
        wrk = Wrk(server, workdir, args.connections)
        rounds = []
        for r in range(args.rounds):
            res = {"_wrk": []}
            order = ("10k", "1m") if r % 2 == 0 else ("1m", "10k")
            for g in order:
                w = wrk.run(groups[g],
                            args.seconds_10k if g == "10k"
                            else args.seconds_1m,
                            slice_ms=40 if g == "10k" else 100)
                failures += ["wrk %s round %d: %s" % (g, r + 1, e)
                             for e in w.errors()]
                res["_wrk"].append(w)
                for sc in groups[g]:
                    st = w.stats.get(sc.key)
                    if not st or not st["count"]:
                        failures.append("wrk %s round %d: no requests of "
                                        "%s" % (g, r + 1, sc.key))
                    res[sc.key] = st
            rounds.append(res)
            loads.append(loadavg())
            print("round %d of %d done (%.0f s)" % (r + 1, args.rounds,
                                                    time.time() - t_start),
                  flush=True)

        rss_before = children(server.proc.pid)
        per_thread = -(-args.memory_requests // args.connections)
        # wrk runs for its whole -d even when every thread has stopped at
        # its quota: give it half again the time the rounds' rate needs.
        rate = med([r[sc.key]["rps"] for r in rounds for sc in groups["10k"]
                    if r.get(sc.key)]) or 1
        mem_seconds = min(args.memory_cap,
                          int(args.memory_requests / rate * 1.5) + 5)
        mw = wrk.run(groups["10k"], mem_seconds, slice_ms=40,
                     quota=per_thread)
        failures += ["memory run: %s" % e for e in mw.errors()]
        mem_requests = (mw.summary or {}).get("requests", 0)
        if mem_requests < args.memory_requests * 0.99:
            failures.append("memory run: only %d of %d requests in %d s"
                            % (mem_requests, args.memory_requests,
                               mem_seconds))
        time.sleep(0.5)
        rss_after = children(server.proc.pid)
        server.stop()
        problems = server.log_problems()
        failures += ["error log: %s" % p for p in problems]

        # ---- callgrind
        cg = CallgrindRun(server, workdir, args.callgrind_n[0],
                          args.callgrind_n[1], warm=2 if args.smoke else 10)
        cg.write_config(body)
        cg_order = groups["10k"] + groups["1m"]
        cg.run(cg_order)
        ir = {sc.key: cg.analyse(sc.key) for sc in cg_order}
        for k, v in ir.items():
            if v["total"] <= 0:
                failures.append("callgrind: no instructions for %s" % k)
        annotate = annotate_dump(ir["inline.10k"]["dump"], workdir)

        if failures:
            return fail(failures)
        # The profile of an inline request, for a look at the source.
        keep = REPO / "build" / "bench"
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(annotate, keep / annotate.name)

        # ---- report
        report(rep, args, sizes, groups, rounds, ir, control, verify_ratio,
               token_out, rss_fresh, rss_before, rss_after, mem_requests,
               wrk, cg, loads, t_start, annotate)
    finally:
        try:
            server.stop()
        except AssertionError as e:
            failures.append(str(e))
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    if failures:
        return fail(failures)
    if args.out:
        write_markdown(Path(args.out), rep.lines)
        print("\nwritten to %s" % args.out)
    print("bench: %s finished in %.0f s" % (
        "smoke run" if args.smoke else "run", time.time() - t_start))
    return 0


def prepare(args, tools):
    """The module built, the tools there, and the work directory (kept
    at --keep): (workdir, the Httpd to configure in it)."""
    httpd.module_path()
    check_module(httpd.MODULE)
    for tool in tools:
        if not shutil.which(tool):
            raise SystemExit("bench: %s is missing (sh t/deps.sh bench)"
                             % tool)
    if args.keep:
        workdir = Path(args.keep)
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="pdftoken-bench-",
                                        dir="/tmp"))
    workdir.chmod(0o755)
    return workdir, httpd.Httpd(workdir / "httpd")


def ir_main(args):
    """make bench-ir: only the callgrind part, on the 10 KB scenarios.
    Instruction counts do not depend on the machine's load, so this is
    the quick loop for work on the module's own cost: each scenario's Ir,
    the module alone on inline (inline - bare+token, libcrypto left out)
    and on untouched (against bare and bare-html), then inline -
    bare+token function by function."""
    t_start = time.time()
    workdir, server = prepare(args, ("valgrind", "callgrind_annotate"))
    try:
        sizes = write_documents(server)
        body = config_body()
        server.configure(body)
        scenarios = scenarios_for("10k")
        for sc in scenarios:
            sc.mint(server.secret)
        # Each scenario must be what its name says before it is counted.
        server.start()
        for sc in scenarios:
            check_scenario(server, sc, sizes[sc.size])
        server.stop()
        cg = CallgrindRun(server, workdir, args.callgrind_n[0],
                          args.callgrind_n[1], warm=10)
        cg.write_config(body)
        cg.run(scenarios)
        ir = {sc.key: cg.analyse(sc.key) for sc in scenarios}
        annotate = annotate_dump(ir["inline.10k"]["dump"], workdir)
        keep = REPO / "build" / "bench"
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(annotate, keep / annotate.name)
    finally:
        try:
            server.stop()
        except AssertionError as e:
            print("bench: %s" % e)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    def crypto(k):
        return sum(v for o, v in ir[k]["objects"].items() if is_crypto(o))

    def total(k):
        return ir[k]["total"]

    bare = total("bare.10k")
    print("%-16s %8s %8s %8s %9s" % ("scenario", "Ir/req", "crypto",
                                     "outside", "vs bare"))
    for sc in scenarios:
        print("%-16s %8.0f %8.0f %8.0f %+8.2f%%" % (
            sc.name, total(sc.key), crypto(sc.key),
            total(sc.key) - crypto(sc.key), 100 * (total(sc.key) / bare - 1)))
    inl, ctl = ir["inline.10k"], ir["bare+token.10k"]
    module = ((total("inline.10k") - crypto("inline.10k"))
              - (total("bare+token.10k") - crypto("bare+token.10k")))
    unt, html = total("untouched.10k"), total("bare-html.10k")
    print()
    print("inline, module alone (inline - bare+token, outside libcrypto): "
          "%.0f Ir (target <= %d)" % (module, TARGETS["module_ir"]))
    own = module_own(inl) - module_own(ctl)
    print("  of which the module's own code: %.0f Ir; httpd handling what it "
          "added (headers, log): %.0f Ir" % (own, module - own))
    print("inline, libcrypto: %.0f Ir" % crypto("inline.10k"))
    print("untouched - bare: %+.0f Ir = %+.2f %% (target <= +1 %%)"
          % (unt - bare, 100 * (unt / bare - 1)))
    print("untouched - bare-html: %+.0f Ir = %+.2f %%"
          % (unt - html, 100 * (unt / html - 1)))

    def diff(a, b, rows, title):
        print()
        print(title)
        d = {k: a["functions"].get(k, 0) - b["functions"].get(k, 0)
             for k in set(a["functions"]) | set(b["functions"])}
        by_obj = collections.Counter()
        for (o, fn), v in d.items():
            if not is_crypto(o):
                by_obj[os.path.basename(o or "?")] += v
        print("  by object: " + ", ".join(
            "%s %+.0f" % kv for kv in by_obj.most_common() if abs(kv[1]) >= 1))
        for (o, fn), v in sorted(d.items(), key=lambda kv: -abs(kv[1])):
            if is_crypto(o) or abs(v) < 1:
                continue
            rows -= 1
            if rows < 0:
                break
            print("  %+8.1f  %-44s %s" % (v, named(fn, a["calls"])[:44],
                                          os.path.basename(o or "?")))

    diff(inl, ctl, args.ir_rows, "inline - bare+token, self Ir per request "
         "by function (libcrypto left out):")
    print()
    print("calls the module makes into other objects (inclusive, inline):")
    calls = sorted(((k, v) for k, v in inl["calls"].items()
                    if is_module(k[0]) and not is_module(k[2]) and v >= 10
                    and not k[3].startswith("ap_pass_brigade")),
                   key=lambda kv: -kv[1])
    for (o, fn, co, cfn), v in calls:
        print("  %8.1f  %-24s -> %s (%s)" % (v, fn, cfn,
                                             os.path.basename(co or "?")))
    diff(ir["untouched.10k"], ir["bare-html.10k"], 15,
         "untouched - bare-html, by function:")
    print()
    print("line by line: build/bench/%s" % annotate.name)
    print("bench-ir: %.0f s" % (time.time() - t_start))
    return 0


def fail(failures):
    print("\nbench: FAILED:\n  " + "\n  ".join(failures), flush=True)
    return 1


def report(rep, args, sizes, groups, rounds, ir, control, verify_ratio,
           token_out, rss_fresh, rss_before, rss_after, mem_requests, wrk,
           cg, loads, t_start, annotate):
    out = rep.out
    loads = loads + [loadavg()]
    bare_ir = ir["bare.10k"]

    def crypto(k):
        return sum(v for o, v in ir[k]["objects"].items() if is_crypto(o))

    def module_self(k):
        return sum(v for o, v in ir[k]["objects"].items() if is_module(o))

    def size_label(sc):
        if sc.size == "1k":
            return "1 KB"
        return SIZES[sc.size][1]

    out("## Throughput, latency and instructions (make bench)")
    out()
    out("%d rounds; in each, one wrk run per size group (%d s for 10 KB, "
        "%d s for 1 MB), %d connections, the scenarios of the group "
        "interleaved every 40 ms (10 KB) or 100 ms (1 MB). req/s, p50 "
        "and p99 are medians over the rounds. *ratio* is the throughput "
        "ratio to the scenario named in *to*: within a round, the median "
        "over its cycles (one pass through the group's scenarios) of the "
        "ratio in that cycle; then the median over the rounds, with the "
        "lowest and highest round after it. Ir = instructions per "
        "request under callgrind (deterministic), split into libcrypto and "
        "the rest." % (args.rounds, args.seconds_10k, args.seconds_1m,
                       args.connections))
    out()
    out("| scenario | size | req/s | p50 ms | p99 ms | ratio | to | "
        "Ir/req | Ir libcrypto | Ir outside | Ir vs bare |")
    out("|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|")
    ratios = {}
    for g in ("10k", "1m"):
        bare_key = "bare.%s" % g
        for sc in groups[g]:
            ref = "static-1k.1k" if sc.name == "redirect" else bare_key
            if sc.name == "bare":
                ref = None
            vals = [r[sc.key] for r in rounds if r.get(sc.key)]
            rs = ratio_rows(rounds, sc.key, ref) if ref else []
            ratios[sc.key] = rs
            rps = med([v["rps"] for v in vals])
            p50 = med([v["p50"] for v in vals])
            p99 = med([v["p99"] for v in vals])
            i = ir[sc.key]
            ref_ir = ir["static-1k.1k" if sc.name == "redirect"
                        else bare_key]["total"]
            out("| %s | %s | %s | %.3f | %.3f | %s | %s | %s | %s | %s | "
                "%s |" % (
                    sc.name, size_label(sc), fmt_int(rps or 0), p50 or 0,
                    p99 or 0,
                    ("%s (%s-%s)" % (fmt_ratio(med(rs)), fmt_ratio(min(rs)),
                                     fmt_ratio(max(rs)))) if rs else "1",
                    ref.split(".")[0] if ref else "",
                    fmt_int(i["total"]), fmt_int(crypto(sc.key)),
                    fmt_int(i["total"] - crypto(sc.key)),
                    "%+.1f %%" % (100 * (i["total"] / ref_ir - 1))
                    if ref else ""))
    out()
    c = ir[control.key]
    out("Documents: the PDF is %s bytes (10 KB) or %s bytes (1 MB), the "
        "same bytes in every scope; static-1k is %s bytes; untouched "
        "serves as many bytes of text as `.htm` (text/html), and "
        "untouched-text as `.txt` (text/plain)." % (
            fmt_int(sizes["10k"]), fmt_int(sizes["1m"]), fmt_int(sizes["1k"])))
    out()
    out("Control: *bare+token* is the bare scope sent inline's exact "
        "request (same query and Cookie header): %s Ir (%+.1f %% on bare), "
        "throughput %s of bare. What the longer request line and the Cookie "
        "header cost httpd, wrk and the kernel before the module does "
        "anything; inline / bare+token is the module's own share." % (
            fmt_int(c["total"]),
            100 * (c["total"] / bare_ir["total"] - 1),
            fmt_ratio(med(ratios[control.key]))))
    out()

    # ---- targets
    inl = ir["inline.10k"]
    extra_out = ((inl["total"] - crypto("inline.10k"))
                 - (bare_ir["total"] - crypto("bare.10k")))
    extra_frac = extra_out / bare_ir["total"]
    mod_extra = ((inl["total"] - crypto("inline.10k"))
                 - (c["total"] - crypto(control.key)))
    mod_own = module_own(inl) - module_own(c)
    crypto_inl = crypto("inline.10k")
    growth = {pid: rss_after.get(pid, 0) - kb
              for pid, kb in rss_before.items() if pid in rss_after}
    max_growth = max(growth.values()) if growth else None
    same_children = set(rss_before) == set(rss_after)

    def trow(what, value, target, ok, margin):
        out("| %s | %s | %s | %s | %s |" % (what, value, target,
                                             verdict(ok), margin))

    out("### Targets")
    out()
    out("| ratio | measured | target | | how close |")
    out("|---|--:|--:|---|---|")
    r_inl = med(ratios["inline.10k"])
    trow("inline / bare throughput, 10 KB", fmt_ratio(r_inl), ">= 0.98",
         r_inl >= TARGETS["inline"],
         "%+.1f points" % (100 * (r_inl - TARGETS["inline"])))
    trow("Ir per inline request outside libcrypto, module alone (inline - "
         "bare+token)", "%s = %.1f %% of bare" % (
             fmt_int(mod_extra), 100 * mod_extra / bare_ir["total"]),
         "<= %s" % fmt_int(TARGETS["module_ir"]),
         mod_extra <= TARGETS["module_ir"],
         "%+d Ir: the module's own code %s, httpd checking and writing "
         "the headers it adds (SPEC R2) and logging %%{PDFTOKEN}e %s; "
         "besides, httpd reading the token and cookie bytes %s "
         "(bare+token - bare): %s = %.1f %% of bare in all" % (
             round(mod_extra - TARGETS["module_ir"]), fmt_int(mod_own),
             fmt_int(mod_extra - mod_own),
             fmt_int(c["total"] - bare_ir["total"]), fmt_int(extra_out),
             100 * extra_frac))
    # The constant-time compares (SPEC section 3) are not the MAC.
    cmp_inl = sum(v for (o, fn), v in inl["functions"].items()
                  if is_crypto(o) and fn == "CRYPTO_memcmp")
    mac_inl = crypto_inl - cmp_inl
    trow("Ir per inline request inside libcrypto for the MAC, vs the "
         "prepared-pad floor", "%s = %.2f x %s" % (
             fmt_int(mac_inl), mac_inl / HMAC_FLOOR_IR,
             fmt_int(HMAC_FLOOR_IR)),
         "~%s (1 HMAC)" % fmt_int(HMAC_FLOOR_IR),
         mac_inl <= 1.1 * HMAC_FLOOR_IR,
         "%+d Ir; besides, CRYPTO_memcmp of the tag and the cookie %s" % (
             round(mac_inl - HMAC_FLOOR_IR), fmt_int(cmp_inl)))
    rs = ratio_rows(rounds, "inline.10k", control.key)
    out("| inline / bare+token throughput, 10 KB (the module alone) | %s | "
        "| | rounds %s-%s |" % (fmt_ratio(med(rs)), fmt_ratio(min(rs)),
                               fmt_ratio(max(rs))))
    r_red = med(ratios["redirect.10k"])
    trow("redirect / static-1k throughput", fmt_ratio(r_red), ">= 1.0",
         r_red >= TARGETS["redirect"],
         "%+.1f points" % (100 * (r_red - TARGETS["redirect"])))
    for g in ("10k", "1m"):
        r_unt = med(ratios["untouched.%s" % g])
        trow("untouched / bare throughput, %s" % SIZES[g][1],
             fmt_ratio(r_unt), ">= 0.99", r_unt >= TARGETS["untouched"],
             "%+.1f points; Ir %+.1f %%" % (
                 100 * (r_unt - TARGETS["untouched"]),
                 100 * (ir["untouched.%s" % g]["total"]
                        / ir["bare.%s" % g]["total"] - 1)))
    for g in ("10k", "1m"):
        extra_unt = (ir["untouched.%s" % g]["total"]
                     / ir["bare.%s" % g]["total"] - 1)
        trow("untouched Ir over bare, %s" % SIZES[g][1],
             "%+.2f %%" % (100 * extra_unt), "<= +1 %",
             extra_unt <= TARGETS["untouched_ir"],
             "%+d Ir" % round(ir["untouched.%s" % g]["total"]
                               - ir["bare.%s" % g]["total"]))
    if "bare-html.10k" in ir:
        extra_own = (ir["untouched.10k"]["total"]
                     / ir["bare-html.10k"]["total"] - 1)
        trow("untouched Ir over bare-html (the same .htm unprotected: the "
             "module alone), 10 KB", "%+.2f %%" % (100 * extra_own),
             "<= +1 %", extra_own <= TARGETS["untouched_ir"],
             "%+d Ir" % round(ir["untouched.10k"]["total"]
                               - ir["bare-html.10k"]["total"]))
    if "untouched-text.10k" in ir:
        out("| untouched-text (text/plain, first bytes read) Ir over bare, "
            "10 KB | %+.1f %% | | | |" % (
                100 * (ir["untouched-text.10k"]["total"]
                       / ir["bare.10k"]["total"] - 1)))
    if verify_ratio is not None:
        trow("token verify / one bare HMAC() (make bench-token)",
             "%.2f" % verify_ratio, "<= 1.5",
             verify_ratio <= TARGETS["verify"],
             "%.0f %% of the limit" % (100 * verify_ratio
                                        / TARGETS["verify"]))
    if max_growth is not None:
        trow("child RSS growth after %s more requests" % fmt_int(
                mem_requests),
             "%+d KiB (max of %d children)" % (max_growth, len(growth)),
             "< 1 MB", max_growth < TARGETS["rss"] and same_children,
             "%s" % ("same children before and after" if same_children
                     else "children changed: %s -> %s" % (
                         sorted(rss_before), sorted(rss_after))))
    for g in ("10k", "1m"):
        rs = ratio_rows(rounds, "inline.%s" % g, "forced-download.%s" % g)
        out("| inline / forced-download (the recipe), %s | %s | | | "
            "rounds %s-%s |" % (SIZES[g][1], fmt_ratio(med(rs)),
                                fmt_ratio(min(rs)), fmt_ratio(max(rs))))
    for g in ("10k", "1m"):
        rs = ratios["bare-copy.%s" % g]
        out("| noise floor: bare-copy / bare, %s | %s | 1.000 | | "
            "rounds %s-%s |" % (SIZES[g][1], fmt_ratio(med(rs)),
                                fmt_ratio(min(rs)), fmt_ratio(max(rs))))
    out()

    # ---- where the inline instructions go
    out("### Where an inline request's extra instructions go")
    out()
    out("Per request, inline minus bare+token (the same request bytes, "
        "so httpd's parsing cancels out), by ELF object (self cost):")
    out()
    out("| object | bare | bare+token | inline | inline - bare+token |")
    out("|---|--:|--:|--:|--:|")
    objs = set(inl["objects"]) | set(c["objects"])
    for o in sorted(objs, key=lambda o: -(inl["objects"].get(o, 0)
                                           - c["objects"].get(o, 0))):
        d = inl["objects"].get(o, 0) - c["objects"].get(o, 0)
        if abs(d) < 5 and o and not is_module(o):
            continue
        out("| %s | %s | %s | %s | %s |" % (
            os.path.basename(o or "?"),
            fmt_int(bare_ir["objects"].get(o, 0)),
            fmt_int(c["objects"].get(o, 0)),
            fmt_int(inl["objects"].get(o, 0)), "{:+,}".format(round(d))))
    out()
    out("Largest differences by function (self cost, inline - bare+token):")
    out()
    out("| function | object | Ir/req |")
    out("|---|---|--:|")
    fdiff = {k: inl["functions"].get(k, 0) - c["functions"].get(k, 0)
             for k in set(inl["functions"]) | set(c["functions"])}
    for (o, fn), d in sorted(fdiff.items(), key=lambda kv: -kv[1])[:20]:
        out("| %s | %s | %s |" % (named(fn, inl["calls"]),
                                  os.path.basename(o or "?"),
                                  "{:+,}".format(round(d))))
    out()
    out("Calls the module makes into other objects (inclusive cost per "
        "request, inline):")
    out()
    out("| caller | callee | object | Ir/req |")
    out("|---|---|---|--:|")
    # ap_pass_brigade is the rest of the response (the output filters
    # after the module's), not the module's cost.
    calls = sorted(((k, v) for k, v in inl["calls"].items()
                    if is_module(k[0]) and not is_module(k[2]) and v >= 50
                    and not k[3].startswith("ap_pass_brigade")),
                   key=lambda kv: -kv[1])
    for (o, fn, co, cfn), v in calls[:14]:
        out("| %s | %s | %s | %s |" % (fn, cfn, os.path.basename(co or "?"),
                                       fmt_int(v)))
    out()
    out("Redirect, per request: %s Ir, of which %s in libcrypto (mint: "
        "RAND_bytes and about 1.5 HMACs, as a nonce whose token would hold "
        "a '-' is drawn again) and %s in mod_pdftoken.so itself; "
        "static-1k: %s Ir." % (
            fmt_int(ir["redirect.10k"]["total"]),
            fmt_int(crypto("redirect.10k")),
            fmt_int(module_self("redirect.10k")),
            fmt_int(ir["static-1k.1k"]["total"])))
    out()

    # ---- memory
    out("### Memory")
    out()
    out("VmRSS of each child (KiB): just after start, after the wrk rounds "
        "(before), and after %s more requests of the mixed 10 KB "
        "scenarios (after)." % fmt_int(mem_requests))
    out()
    out("| child | fresh | before | after | growth |")
    out("|---|--:|--:|--:|--:|")
    for pid in sorted(set(rss_before) | set(rss_after)):
        b, a = rss_before.get(pid), rss_after.get(pid)
        out("| %d | %s | %s | %s | %s |" % (
            pid, rss_fresh.get(pid, "-"), b if b is not None else "-",
            a if a is not None else "-",
            "%+d" % (a - b) if a is not None and b is not None else "-"))
    out()

    # ---- bench_token
    out("### Token library (make bench-token)")
    out()
    out("```")
    out(token_out)
    out("```")
    out()

    # ---- machine and commands
    out("### Machine")
    out()
    for k, v in machine():
        out("- %s: %s" % (k, v))
    out("- load average (1, 5, 15 min): %s at the start, %s at the end; "
        "1-min load at most %s during the run (wrk's and httpd's own "
        "threads count)"
        % (" ".join(loads[0]), " ".join(loads[-1]),
           max(loads, key=lambda v: float(v[0]))[0]))
    if float(loads[0][0]) >= QUIET_LOAD:
        out("- **the machine was not quiet**: the 1-minute load was %s "
            "when the run started (other jobs were running), so the "
            "throughput and latency figures are noisier than they would "
            "be; the instruction counts are not affected" % loads[0][0])
    out("- run took %.0f s" % (time.time() - t_start))
    out()
    out("### How to reproduce")
    out()
    out("```sh")
    out("make bench            # this file's section; about %d min"
        % max(1, round((time.time() - t_start) / 60)))
    out("make bench-smoke      # every part for a few seconds, < 2 min")
    out("```")
    out()
    out("`make bench` runs `%s t/bench/bench.py --out BENCHMARKS.md`. "
        "The server is Debian's `%s` from the integration harness "
        "(`t/integration/httpd.py`), its configuration the harness's "
        "base plus:" % (os.path.basename(sys.executable), httpd.APACHE))
    out()
    out("```apache")
    out(config_body().replace("@DOCROOT@", "htdocs").rstrip())
    out("```")
    out()
    out("One wrk round of each group, and the memory run (which stops each "
        "thread after its share of the requests):")
    out()
    out("```sh")
    seen = set()
    for cmd in wrk.commands:
        text = " ".join(cmd)
        text = re.sub(r"/tmp/[^ ]*/(wrk-\d+\.tsv)", r"\1", text)
        text = text.replace(str(REPO) + "/", "")
        shape = re.sub(r"wrk-\d+\.tsv", "", text)
        if shape not in seen:
            seen.add(shape)
            out(text)
    out("```")
    out()
    out("Each `wrk-NN.tsv` names the scenarios (path, Cookie) and the "
        "slice; see `t/bench/interleave.lua`. Callgrind, on the same "
        "configuration with the prefork MPM block (%d, then %d requests of "
        "each scenario on one keep-alive connection each, after %d to "
        "warm up):" % (cg.n1, cg.n2, cg.warm))
    out()
    out("```sh")
    out(re.sub(r"/tmp/[^ ]*/", "", " ".join(cg.command)))
    out("```")
    out()
    out("The dumps are read per ELF object by bench.py itself "
        "(callgrind_annotate has no per-object view). The line-by-line "
        "profile of the %d-request inline connection, `callgrind_annotate "
        "--auto=yes` on mod_pdftoken.c and token.c, is left in "
        "`build/bench/callgrind-inline-annotate.txt`." % cg.n2)
    out()


def write_markdown(path, lines):
    section = BEGIN + "\n" + "\n".join(lines).rstrip() + "\n" + END + "\n"
    if path.exists():
        text = path.read_text()
        if BEGIN in text and END in text:
            head, _, rest = text.partition(BEGIN)
            _, _, tail = rest.partition(END + "\n")
            text = head + section + tail
        else:
            text = text.rstrip() + "\n\n" + section
    else:
        text = "# Benchmarks\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
