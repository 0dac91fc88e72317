#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""One httpd under valgrind: memory errors and leaks of mod_pdftoken.

Starts Debian's apache2 in one process (-X, prefork) under
`valgrind --leak-check=full` with a self-contained configuration on a free
127.0.0.1 port, sends a representative mix (R1 to R5, both fallbacks, an
internal redirect, and every entry of the hostile corpus with its checks),
stops it with SIGTERM, and reads valgrind's log.  Fails when valgrind saw
any invalid read, write or free, any other error whose stack passes
through mod_pdftoken.c or token.c, or any definitely, indirectly or
possibly lost block allocated from them.

    t/hostile/valgrind_run.py [--module .libs/mod_pdftoken.so] [--keep]

Everything is bounded in time; the server's directory is removed unless
--keep is given.
"""

import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
sys.path.insert(0, str(HERE))

import httpd  # noqa: E402
import pdftoken_ref as ref  # noqa: E402
import hostile_site  # noqa: E402
import test_hostile_corpus as corpus  # noqa: E402

OURS = re.compile(r"\((?:mod_pdftoken|token)\.c:\d+\)")
EXTRA_CONFIG = r"""
<Directory "@DOCROOT@/deny">
    PdfTokenProtect On
    PdfTokenFallback deny
</Directory>
<Directory "@DOCROOT@/idx">
    PdfTokenProtect On
    DirectoryIndex index.pdf
</Directory>
<Directory "@DOCROOT@/late">
    PdfTokenProtect On
    ErrorDocument 404 /late/notfound.pdf
    SetOutputFilter DEFLATE
</Directory>
"""


def start_under_valgrind(s, vlog, timeout):
    """Start s's apache2 -X under valgrind; wait until it answers."""
    cmd = ["valgrind", "--leak-check=full",
           "--show-leak-kinds=definite,indirect,possible",
           "--errors-for-leak-kinds=definite,indirect,possible",
           # httpd unloads its modules before exit: keep their symbols so
           # that leak stacks still name mod_pdftoken.c.
           "--keep-debuginfo=yes", "--num-callers=40",
           "--log-file=%s" % vlog,
           httpd.APACHE, "-X", "-f", str(s.conf)]
    out = open(s.stderr_log, "ab")
    s.proc = subprocess.Popen(cmd, env=s.httpd_env(), stdin=subprocess.DEVNULL,
                              stdout=out, stderr=out, start_new_session=True,
                              cwd=str(s.root))
    out.close()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if s.proc.poll() is not None:
            raise SystemExit("httpd under valgrind exited at start-up:\n"
                             + s.logs_text())
        # apache2 -X does not log "resuming normal operations".
        if s._answers():
            return
        time.sleep(0.2)
    os.killpg(s.proc.pid, signal.SIGKILL)
    raise SystemExit("httpd under valgrind did not come up in %d s"
                     % timeout)


def stop(s, timeout):
    proc, s.proc = s.proc, None
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        raise SystemExit("httpd under valgrind ignored SIGTERM for %d s"
                         % timeout)


def request_mix(s):
    """R1 to R5, the deny fallback and an internal redirect; returns how
    many requests were sent."""
    doc = hostile_site.DOC
    data = s.files["doc"]
    n = 0

    def get(target, **kw):
        nonlocal n
        n += 1
        return s.get(target, timeout=120, **kw)

    for _ in range(3):
        r = get(doc)                                    # R1
        assert r.status == 302, r
        token = r.location_token()
        cookie = ref.cookie_pair(token)
        r = get(r.location_target(), cookies=[cookie])  # R2
        assert r.status == 200 and r.body == data, r
        r = get(doc + "?pdftoken=" + token)             # R3, attachment
        assert r.status == 200 and r.get("Content-Disposition"), r
        r = get(doc + "?pdftoken=" + token,             # R5
                headers=[("Range", "bytes=0-99")])
        assert r.status == 206 and r.body == data[:100], r
        r = get(doc + "?a=1&pdftoken=" + ref.forge(token))   # R4
        assert r.status == 302, r
        expired = ref.mint(s.secret, doc, expiry=int(time.time()) - 60)
        r = get(doc + "?pdftoken=" + expired, cookies=[
            ref.cookie_pair(expired)])                  # R4, expired
        assert r.status == 302, r
        r = get(doc + "?pdftoken=" + expired,           # R5 in the grace
                headers=[("Range", "bytes=10-19")])
        assert r.status == 206, r
        t = ref.mint(s.secret, "/deny/doc.pdf", lifetime=60)
        r = get("/deny/doc.pdf?pdftoken=" + t)          # R3, deny
        assert r.status == 403, r
        r = get("/idx/")                                # DirectoryIndex
        assert r.status == 302, r
        r = get(r.location_target(), cookies=[
            ref.cookie_pair(r.location_token())])
        assert r.status == 200, r
        r = get("/pub/doc.pdf")                         # not protected
        assert r.status == 200, r
        r = get(doc, headers=[("User-Agent", "ExemptBot/1.0")])  # exempt
        assert r.status == 200 and r.body == data, r
        assert "private" in (r.get("Cache-Control") or ""), r
        # Judged after the handler: a sniffed PDF without a type, through
        # mod_deflate, replaced by the 302, then inline and as a download.
        r = get("/late/noext", headers=[("Accept-Encoding", "gzip")])
        assert r.status == 302 and r.body == b"", r
        late = r.location_target()
        r = get(late, cookies=[ref.cookie_pair(r.location_token())])
        assert r.status == 200 and r.body == s.files["noext"], r
        r = get(late)
        assert r.status == 200 and r.get("Content-Disposition"), r
        r = get("/late/nope")                           # PDF ErrorDocument
        assert r.status == 404 and r.get("Content-Disposition"), r
    return n


def blocks(text):
    """valgrind's log as blocks of lines, one per error or loss record."""
    out, cur = [], []
    for line in text.splitlines():
        body = re.sub(r"^==\d+== ?", "", line)
        if not body.strip():
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(body)
    if cur:
        out.append(cur)
    return out


def analyse(text):
    """(summary lines, problems) of a valgrind log."""
    problems = []
    contexts = collections.Counter()
    for b in blocks(text):
        head, stack = b[0], "\n".join(b)
        leak = re.search(r"are (definitely|indirectly|possibly) lost", head)
        error = re.match(r"(Invalid|Mismatched|Conditional|Use of uninit|"
                         r"Syscall param|Source and destination|Argument)",
                         head)
        if error:
            contexts[re.sub(r"\s+(of size|at 0x).*", "", head)] += 1
        if error and re.match(r"(Invalid (read|write|free)|Mismatched)",
                              head):
            problems.append(stack)      # whoever's it is
        elif (error or leak) and OURS.search(stack):
            problems.append(stack)
    summary = [re.sub(r"^==\d+== ?", "", line) for line in text.splitlines()
               if re.search(r"(ERROR SUMMARY|definitely lost:|indirectly "
                            r"lost:|possibly lost:|still reachable:|"
                            r"total heap usage)", line)]
    summary += ["%s: %d context(s)" % kv for kv in sorted(contexts.items())]
    return summary, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default=httpd.MODULE)
    ap.add_argument("--keep", action="store_true",
                    help="keep the server directory")
    ap.add_argument("--timeout", type=int, default=180,
                    help="seconds for start-up and for shutdown")
    args = ap.parse_args()
    httpd.MODULE = args.module
    httpd.MPM = "prefork"     # -X: one process, one thread

    work = httpd.make_workdir()
    s = httpd.Httpd(work / "valgrind", modules=["deflate", "filter"])
    hostile_site.prepare(s)
    s.write_pdf("deny/doc.pdf", "deny")
    s.write_pdf("idx/index.pdf", "index")
    s.files["noext"] = s.write_pdf("late/noext", "no extension")
    s.write_pdf("late/notfound.pdf", "not found")
    s.configure(hostile_site.CONFIG + EXTRA_CONFIG)
    vlog = s.root / "logs" / "valgrind.log"
    began = time.time()
    ok = False
    try:
        start_under_valgrind(s, vlog, args.timeout)
        hostile_site.set_values(s)
        n = request_mix(s)
        failed = []
        for entry in corpus.CORPUS_ENTRIES:
            try:
                corpus.run_entry(s, entry)
            except AssertionError as e:
                failed.append("%s: %s" % (entry["name"], str(e)[:500]))
            n += 3
        rc = stop(s, args.timeout)
        text = vlog.read_text("latin-1")
        summary, problems = analyse(text)
        crashes = corpus.crash_lines(s.error_text())
        print("valgrind: apache2 -X (prefork), %s" % args.module)
        print("requests: about %d (R1-R5 mix x3, hostile corpus %d "
              "entries); %.0f s; apache2 exit status %d"
              % (n, len(corpus.CORPUS_ENTRIES), time.time() - began, rc))
        for line in summary:
            print("  " + line)
        for f in failed:
            print("corpus entry failed: " + f)
        for c in crashes:
            print("crash in the error log: " + c)
        for p in problems:
            print("-- valgrind problem in or through the module:\n" + p)
        ok = not (failed or crashes or problems) and rc == 0
        print("valgrind_run: %s" % ("OK" if ok else "FAILED"))
    finally:
        if s.proc is not None:
            os.killpg(s.proc.pid, signal.SIGKILL)
            s.proc.wait(timeout=30)
        if args.keep or not ok:
            print("server directory kept: %s" % s.root)
        else:
            httpd.remove_workdir(work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
