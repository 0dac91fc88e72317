# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The browser run's verdicts: the cases, the recorded holes, the table,
the render matrix's judgement and the back ends' view of d1-d3.
"""

import re

import matrix


# Case id -> title, in the order of the summary table.
CASES = [
    ("c1", "link on attacker page to doc.pdf#x=javascript:..."),
    ("c2a", "location.href= from attacker script"),
    ("c2b", "typed URL (direct navigation)"),
    ("c3", "doc.pdf#page=2 (cost: opens on page 1)"),
    ("c4", "probe.html#x=javascript:alert(1) reports hash"),
    ("c5", "cookies blocked: download, no loop"),
    ("c6a", "two tabs open the same PDF at once"),
    ("c6b", "same PDF twice in same-site iframes"),
    ("c7a", "own stale tokenized URL (bookmark) heals"),
    ("c7b", "stale tokenized link from elsewhere heals"),
    ("c8", "cross-site iframe from attacker page"),
    ("c9", "PDF cached before protection: reopened from cache?"),
    ("c10", "link inside the PDF clicked: no token in Referer"),
    ("d1", "PHP-FPM invoice.php?id=3 (no .pdf): 302, inline"),
    ("d2", "proxied app /api/reports/7: 302, inline"),
    ("d3", "CGI /cgi/report (no extension): 302, inline"),
    ("f1", "PdfTokenFragment safe: fragments.json table via probe"),
    ("f2", "safe: doc.pdf#page=3 typed, opens on page 3"),
    ("f3", "safe: link to doc.pdf#page=3&x=javascript:..."),
    ("f4", "safe: link to doc.pdf#FDF=javascript:..."),
    ("f5", "safe, JavaScript off: inline, empty fragment"),
    ("f6", "default (strip) scope: doc.pdf#page=3 -> 302, p.1"),
    ("h1", "HTTPS+h2: link to doc.pdf#FDF=...: 302, inline, __Host-"),
    ("h2", "HTTPS+h2: PHP invoice.php?id=3: 302, inline"),
    ("h3", "sibling host plants Domain= cookies: not inline"),
    ("h4", "plain-HTTP same name plants cookies: not inline"),
    ("h5", "h3 where PdfTokenBindAddress Off: not inline"),
    ("h6", "h4 where PdfTokenBindAddress Off: not inline"),
    ("x1", "partner.test iframe, CrossSite Off/On (crosssite.tsv)"),
    ("x2", "CrossSite On: #FDF= via partner frames and link"),
    ("x3", "other.test frames a minted token: fallback"),
    ("x4", "partner frame's cookie: not at top, not other.test"),
    ("x5", "cross-site matrix: setting x element x scope x #"),
    ("x6", "x4 with each non-default third-party cookie setting"),
    ("x7", "a script's attachment x.pdf in partner frames: judged"),
    ("x8", "PDF bytes the module leaves alone, in partner frames: not shown"),
    ("p0", "pile-up: what stores the module's cookies (24 each)"),
    ("p1", "pile-up HTTP, 300 x one PDF: <= 8, session kept"),
    ("p2", "pile-up HTTP, 300 PDFs (residual: browser's cap)"),
    ("p3", "pile-up HTTPS, 300 PDFs: <= 8 for the host"),
    ("m1", "render matrix recorded = checked in"),
    ("m2", "protected matrix: nothing renders without the token step"),
    ("m3", "protected matrix in <embed> with #FDF=: never shown with it"),
    ("net", "no request left loopback"),
]


# The cases `make test` runs (--set mission): what proves the mission in
# every engine: the attack click and script, typed and stale tokenized
# links, cookies blocked, tabs and frames, PDF-like dynamic answers, the
# open parameters of PdfTokenFragment safe, HTTPS with planted cookies.
# `make browser` runs them all; "rest" is what `make test` leaves out: the
# pile-up, which measures the browser under a flood and needs the machine
# to itself, and the render matrix (some 400 cells per engine).
REST = ("x5", "x6", "p0", "p1", "p2", "p3", "m1", "m2", "m3")
SETS = {
    "all": [c for c, _ in CASES if c != "net"],
    "mission": [c for c, _ in CASES if c != "net" and c not in REST],
    "rest": list(REST),
}


# Holes an engine opens that the case's configuration leaves open
# (PdfTokenBindAddress Off), measured and recorded here and in README's
# Limitations.  Such a cell shows HOLE, not ok, and
# does not fail the run while it fails exactly as recorded (every failure
# matches the pattern, and no script ran); when the engine changes (the
# case passes, or fails another way) the run fails, so that this record
# and README are brought up to date.
PLANTED_HOST_COOKIE = re.compile(
    r"^(access log: expected \[fallback\], got \[\"pass\"\]"
    r"|fallback disposition undefined"
    r"|the PDF is shown inline at "
    r"|the browser stored the planted __Host-pdftoken_"
    r"|the browser sent the planted __Host-pdftoken_"
    r"|the planter's page sees its __Host-pdftoken_)")


KNOWN_HOLES = {
    ("h5", "webkit"): (
        "jar takes sibling __Host-", PLANTED_HOST_COOKIE,
        "WebKitGTK's cookie jar (libsoup) ignores the __Host- prefix: a "
        "Domain=site.test cookie set by the sibling host evil.site.test "
        "under the module's __Host- name is stored and sent to "
        "pdf.site.test, so the planted token opens inline with the "
        "attacker's fragment (its pdf.js ignores the fragment, no script "
        "ran).  Only where PdfTokenBindAddress Off keeps SPEC's bare token: "
        "the default auto refuses it (h3).  README, Limitations."),
    ("h6", "webkit"): (
        "jar takes HTTP __Host-", PLANTED_HOST_COOKIE,
        "WebKitGTK's cookie jar (libsoup) ignores the __Host- prefix: a "
        "cookie set over plain HTTP under the module's __Host- name is "
        "stored and sent over HTTPS, so the planted token opens inline "
        "with the attacker's fragment (its pdf.js ignores the fragment, no "
        "script ran).  Only where PdfTokenBindAddress Off keeps SPEC's bare "
        "token: the default auto refuses it (h4).  README, Limitations."),
}


def judge_holes(table):
    """Mark the recorded holes that reproduced exactly; fail the ones
    that did not."""
    for key, (tag, pattern, _) in KNOWN_HOLES.items():
        r = table.get(key)
        if r is None:
            continue
        fails = r.get("failures") or []
        if r["ok"]:
            r["ok"] = False
            r["failures"] = fails + [
                "recorded hole did not reproduce (the engine changed): "
                "update KNOWN_HOLES in report.py and README's Limitations"]
        elif all(pattern.match(f) for f in fails):
            r["hole"] = tag


def log(msg):
    print(msg, flush=True)


def cell(result):
    if result is None:
        return "FAIL: no result"
    if result.get("hole"):
        return "HOLE (%s): %s" % (result["hole"], result.get("outcome") or "-")
    if result["ok"] and result.get("notMeasured"):
        return "NOT MEASURED: %s" % (result.get("outcome") or "-")
    if result["ok"] and result.get("limits"):
        return "LIMIT (%s): %s" % (", ".join(result.get("limitTags") or []),
                                   result.get("outcome") or "-")
    word = "ok" if result["ok"] else "FAIL"
    return "%s: %s" % (word, result.get("outcome") or "-")


def print_table(browsers, cases, table, versions):
    rows = [["case", ""] + list(browsers)]
    for cid, title in cases:
        rows.append([cid, title] + [cell(table.get((cid, b)))
                                    for b in browsers])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    sep = "+".join("-" * (w + 2) for w in widths)
    log("")
    log("mod_pdftoken in real browsers (case x browser -> outcome)")
    log(sep)
    for i, r in enumerate(rows):
        log("|".join(" %s " % r[j].ljust(widths[j]) for j in range(len(r))))
        if i == 0:
            log(sep)
    log(sep)
    for b in browsers:
        log("%s: %s" % (b, versions.get(b, "unknown")))
    # What an engine could not do, as measured in this run: a LIMIT cell
    # passed every other check of its case.
    limits = [(cid, b, why) for cid, _ in cases for b in browsers
              for why in (table.get((cid, b)) or {}).get("limits") or []]
    if limits:
        log("LIMIT (the engine cannot do this; the case's other checks "
            "passed):")
        for cid, b, why in limits:
            log("  %s/%s: %s" % (cid, b, why))
    unmeasured = [(cid, b, (table.get((cid, b)) or {}).get("notMeasured"))
                  for cid, _ in cases for b in browsers]
    unmeasured = [x for x in unmeasured if x[2]]
    if unmeasured:
        log("NOT MEASURED (the machine was too busy to make the measurement; "
            "neither passed nor failed, the case's other checks passed):")
        for cid, b, why in unmeasured:
            log("  %s/%s: %s" % (cid, b, why))
    holes = [(cid, b) for cid, _ in cases for b in browsers
             if (table.get((cid, b)) or {}).get("hole")]
    if holes:
        log("HOLE (the engine lets this attack through in this case's "
            "configuration; it reproduced exactly as recorded):")
        for cid, b in holes:
            log("  %s/%s: %s" % (cid, b, KNOWN_HOLES[(cid, b)][2]))
            for f in table[(cid, b)].get("failures") or []:
                log("      measured: %s" % f)


def _observed(table, case, b):
    """{cell id: observation} of case m1 or m2 in browser b."""
    r = table.get((case, b))
    return {c["id"]: c for c in (r or {}).get("cells") or [] if c}


def _show(obs):
    """An observation for a message: outcome, URL, access log."""
    out = obs.get("outcome") or "no outcome"
    if obs.get("href"):
        out += " at %s" % obs["href"].split("://", 1)[-1].split("/", 1)[-1]
    if obs.get("seq") is not None:
        out += ", log [%s]" % ", ".join(obs["seq"])
    if obs.get("notes"):
        out += " (%s)" % "; ".join(obs["notes"])
    return out


def judge_matrix(browsers, cells, recording, table, partial=False):
    """Verdicts of m1 and m2, added to their results in `table`.

    m1: each cell's outcome equals the recording (in a recording run: each
    cell has one).  m2: a PDF only through the token step, and every cell
    that renders as a PDF anywhere unprotected goes through it or
    downloads.
    """
    drift = []
    if recording is not None:
        now = {c["id"]: matrix.key(c) for c in matrix.cells()}
        was = {c["id"]: matrix.key(c) for c in recording}
        ids = set(was) if partial else set(now) | set(was)
        drift = sorted(i for i in ids if now.get(i) != was.get(i))
    pdf_anywhere = set()
    for c in recording or []:
        if "pdf" in c["outcomes"].values():
            pdf_anywhere.add(c["id"])
    for b in browsers:
        pdf_anywhere |= {i for i, o in _observed(table, "m1", b).items()
                         if o.get("outcome") == "pdf"}
    for b in browsers:
        r = table.get(("m1", b))
        if r is not None:
            if drift:
                r["failures"].append(
                    "t/browser/matrix.py defines other cells than %s "
                    "(%s): record again with --record-matrix"
                    % (matrix.TSV.name, ", ".join(drift[:10])
                       + (", ..." if len(drift) > 10 else "")))
            seen = _observed(table, "m1", b)
            # A case that ended in an error before measuring says so once,
            # not once per cell.
            compare = (recording or []) if seen or not r["failures"] else []
            for c in compare:
                o = seen.get(c["id"], {})
                want, now = c["outcomes"].get(b), o.get("outcome")
                if o.get("notMeasured"):
                    continue  # out of time: the case says NOT MEASURED
                if want is None:
                    r["failures"].append(
                        "%s: no %s column in %s: record it with "
                        "--record-matrix" % (c["id"], b, matrix.TSV.name))
                elif now != want:
                    r["failures"].append(
                        "%s (%s): recorded %s, now %s"
                        % (c["id"], matrix.describe(c), want, _show(o)))
            for c in cells:
                for n in seen.get(c["id"], {}).get("notes", []):
                    if n.startswith("ALSO"):
                        r["failures"].append("%s: ambiguous: %s"
                                             % (c["id"], n))
            differ = len([f for f in r["failures"] if "recorded" in f])
            r["outcome"] = ("%d of %d differ from the recording; "
                            % (differ, len(cells)) if differ else
                            "= recording; " if recording else "recorded; ") \
                + r["outcome"]
            r["ok"] = not r["failures"]
        r = table.get(("m2", b))
        if r is None:
            continue
        seen = _observed(table, "m2", b)
        token_pdf = token_page = refused_dl = 0
        for c in cells:
            o = seen.get(c["id"])
            if not o or not o.get("outcome"):
                continue  # already a failure of cases.mjs
            what = "%s (%s)" % (c["id"], matrix.describe(c))
            step = o.get("tokenStep")
            if o["outcome"] == "pdf":
                if not step:
                    frag = o.get("fragment")
                    r["failures"].append(
                        "%s: PDF viewer without the token step%s: %s"
                        % (what, " and with the attacker's fragment"
                           if frag and "FDF" in frag else "", _show(o)))
                else:
                    token_pdf += 1
            elif o["outcome"] == "page" and step:
                token_page += 1
            # Neither engine downloads a response with an error status:
            # Chromium shows its error page, Firefox drops the navigation
            # (both "error").  After the module's forced download (logged
            # as a fallback, 4xx/5xx) that is what a download looks like.
            refused = o["outcome"] == "error" and any(
                x.endswith(":fallback") and x[0] in "45"
                for x in o.get("seq") or [])
            if refused:
                refused_dl += 1
            if c["id"] in pdf_anywhere and o["outcome"] != "download" \
                    and not step and not refused:
                unprot = ", ".join(
                    "%s %s" % (e, _observed(table, "m1", e).get(
                        c["id"], {}).get("outcome")
                        or (c.get("outcomes") or {}).get(e, "?"))
                    for e in matrix.ENGINES)
                r["failures"].append(
                    "%s: a PDF unprotected (%s), protected neither the "
                    "token step nor a download: %s" % (what, unprot,
                                                       _show(o)))
            for n in o.get("notes", []):
                if n.startswith("ALSO"):
                    r["failures"].append("%s: ambiguous: %s" % (what, n))
        r["outcome"] = ("%d cells that render as a PDF somewhere; token "
                        "step: %d pdf, %d page; %d forced downloads "
                        "refused; %s" % (len(seen), token_pdf, token_page,
                                         refused_dl, r["outcome"]))
        r["ok"] = not r["failures"]


def print_matrix_summary(browsers, cells, table):
    """Counts per engine, and which plain responses render as a PDF."""
    if not any(table.get(("m1", b)) for b in browsers):
        return
    log("")
    log("render matrix (%d cells)" % len(cells))
    for b in browsers:
        for case in ("m1", "m2"):
            seen = _observed(table, case, b)
            if not seen:
                continue
            counts = {}
            for o in seen.values():
                k = o.get("outcome") or ("not measured" if o.get("notMeasured")
                                         else "none")
                counts[k] = counts.get(k, 0) + 1
            log("  %s %s: %s" % (b, case, ", ".join(
                "%s %d" % (k, counts[k]) for k in
                ("pdf", "download", "page", "error", "none", "not measured")
                if k in counts)))
        seen = _observed(table, "m1", b)
        plain = [c for c in cells if c["status"] == 200
                 and c["disposition"] is None and not c["url_pdf"]
                 and c["body"] == "pdf" and not c["nosniff"]]
        types = [c["content_type"] for c in plain
                 if seen.get(c["id"], {}).get("outcome") == "pdf"]
        log("  %s renders as a PDF (200, body %%PDF-, no disposition): %s"
            % (b, ", ".join("(absent)" if t is None else "(empty)"
                            if t == "" else repr(t) for t in types)))


BLANK_NOTE = "%s: pdf, but the viewer showed no document in 8 s:"


def record_matrix(browsers, cells, table, versions, partial=False):
    """Write render-matrix.tsv from m1; returns problems (then no file).

    An engine not run this time (--browser) keeps its column, version and
    notes from the current recording, which must define the same cells.
    `partial` (--matrix-cell): `cells` are the ones measured; every other
    cell of matrix.py keeps its recorded row, which must define the same
    cell, and the engines run must be the recorded versions."""
    problems = ["%s/m1 failed" % b for b in browsers
                if not (table.get(("m1", b)) or {}).get("ok")]
    kept = [e for e in matrix.ENGINES if e not in browsers]
    measured = {c["id"] for c in cells}
    old = {}
    old_notes = []
    old_blank = {}
    if kept or partial:
        try:
            comments, recorded = matrix.read()
        except (OSError, ValueError) as e:
            recorded, comments = [], []
            problems.append("cannot keep %s from %s: %s"
                            % (", ".join(kept) or "the other cells",
                               matrix.TSV.name, e))
        old = {c["id"]: c for c in recorded}
        if partial:
            defined = matrix.cells()
            ids = {c["id"] for c in defined}
            bad = [c["id"] for c in defined if c["id"] not in measured
                   and (c["id"] not in old
                        or matrix.key(old[c["id"]]) != matrix.key(c))]
            bad += sorted(i for i in old if i not in ids)
            if bad:
                problems.append("%s and matrix.py differ in cells not "
                                "measured (%s): record them too"
                                % (matrix.TSV.name, ", ".join(bad[:10])))
            cells = defined
        elif [matrix.key(c) for c in recorded] != \
                [matrix.key(c) for c in cells]:
            problems.append("%s defines other cells: record every engine"
                            % matrix.TSV.name)
        for line in comments:
            for e in matrix.ENGINES:
                m = re.search(r"\b%s (.*?)(;|$)" % e, line)
                if line.startswith("# Browsers:") and m:
                    if e in kept:
                        versions[e] = m.group(1)
                    elif partial and versions.get(e) != m.group(1):
                        problems.append(
                            "%s is %s, recorded as %s: record every cell"
                            % (e, versions.get(e), m.group(1)))
                if line.startswith("# " + BLANK_NOTE % e):
                    if e in kept:
                        old_notes.append(line[2:])
                    elif partial:
                        old_blank[e] = [
                            i for i in line[2 + len(BLANK_NOTE % e):].split()
                            if i not in measured]
                elif line.startswith("# %s: " % e) and e in kept:
                    old_notes.append(line[2:])
    rows = []
    for c in cells:
        row = dict(c, outcomes={})
        for b in matrix.ENGINES:
            if b in kept or c["id"] not in measured:
                o = old.get(c["id"], {}).get("outcomes", {}).get(b)
            else:
                o = _observed(table, "m1", b).get(c["id"], {}).get("outcome")
            if o not in matrix.OUTCOMES:
                problems.append("%s/%s: no outcome to record" % (c["id"], b))
            row["outcomes"][b] = o
        rows.append(row)
    if problems:
        log("render matrix NOT written")
        return problems
    # Cells where the viewer took the response but showed no document in
    # 8 s (an HTML body aside): not an outcome, worth knowing.
    notes = list(old_notes)
    for b in browsers:
        blank = old_blank.get(b, []) + [
            c["id"] for c in cells if c["id"] in measured
            and c["body"] != "html" and "viewer showed no document" in
            _observed(table, "m1", b).get(c["id"], {}).get("notes", [])]
        if blank:
            notes.append(BLANK_NOTE % b + " " + " ".join(sorted(blank)))
    matrix.write(rows, versions, notes)
    log("render matrix written: %s" % matrix.TSV)
    return []


def backend_queries(case, b, seen_dir, backend):
    """The queries d1-d3's back end received from browser b, in order."""
    if case == "d2":
        out = []
        for line in backend.all_requests():
            parts = line.split()
            target = parts[1] if len(parts) > 1 else ""
            if target.split("?")[0] == "/%s/reports/7" % b:
                out.append(target.partition("?")[2])
        return out
    try:
        text = (seen_dir / ("%s-%s.log" % (b, case))).read_text("latin-1")
    except OSError:
        return []
    return text.splitlines()


def judge_backends(b, config, table, seen_dir, backend):
    """d1-d3: the back end saw its query, never the token.

    The handler runs for the first view (its answer replaced by the 302)
    and again for the tokenized follow-up: two requests, both with the
    application's own query exactly.
    """
    for case in ("d1", "d2", "d3"):
        r = table.get((case, b))
        if r is None:
            continue
        want = config[b][case]["query"]
        got = backend_queries(case, b, seen_dir, backend)
        if len(got) < 2 or any(q != want for q in got):
            r["failures"].append(
                "back end saw the queries %s, expected %r twice or more "
                "(the 302 and the pass), never a token" % (got, want))
        r["outcome"] += "; back end saw %s" % (
            ", ".join(repr(q) for q in got) or "nothing")
        r["ok"] = not r["failures"]
