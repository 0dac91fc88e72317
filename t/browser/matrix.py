# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The render matrix: which responses each browser engine renders as a PDF.

A cell is one response: status, Content-Type, Content-Disposition,
X-Content-Type-Options, body, and whether the URL path ends in `.pdf`.
run.py serves every cell twice through mod_asis, so that each header byte
is the cell's own: from an unprotected directory (m1: what does the engine
do with it?) and from a protected one (m2: does anything render as a PDF
without the token step?).

The recording, t/browser/render-matrix.tsv, is data that other tests read
(t/unit parses it), so its format is fixed:

    # comment lines start with '#'
    id<TAB>status<TAB>content_type<TAB>disposition<TAB>nosniff<TAB>body<TAB>
        url_pdf<TAB>chromium<TAB>firefox<TAB>webkit

one column per engine after the seven that define the cell, named in the
header row (a reader takes the engines from it);
`(absent)` is a header that is not sent, `(empty)` one sent with an empty
value, and ` (+) ` separates the values of a header sent on several lines
(`attachment (+) inline; filename=x.pdf` is two Content-Disposition
lines); nosniff and url_pdf are 0/1; body is pdf, pdf-ws (the same PDF
after one "\\n"), pdf-bin (the same PDF with control bytes in its binary
comment line, so that a text/plain sniffer calls it binary), bin-pdf (the
PDF after five bytes of binary junk, "\\0\\1\\2\\3\\n": no %PDF- at the
start, which pdf.js does not need), html, mxr-pdf (a
multipart/x-mixed-replace body of one part, the PDF typed
application/pdf) or mxr-html-pdf (an HTML part, then that PDF part); the
engine columns are pdf, download, page or error.

`cells()` below is the matrix's definition; a normal run serves the cells
of the recording and fails when the definition no longer matches it, so a
change here goes with `run.py --record-matrix`.
"""

import re
from pathlib import Path

from samplepdf import make_pdf

HERE = Path(__file__).resolve().parent
TSV = HERE / "render-matrix.tsv"

ENGINES = ["chromium", "firefox", "webkit"]
CELL_COLUMNS = ["id", "status", "content_type", "disposition", "nosniff",
                "body", "url_pdf"]
COLUMNS = CELL_COLUMNS + ENGINES
OUTCOMES = ("pdf", "download", "page", "error")
BODIES = ("pdf", "pdf-ws", "pdf-bin", "bin-pdf", "html", "mxr-pdf",
          "mxr-html-pdf")
# The type of the multipart/x-mixed-replace cells, and their boundary.
MXR_BOUNDARY = "pdftoken-part"
MXR_TYPE = "multipart/x-mixed-replace; boundary=" + MXR_BOUNDARY
ABSENT = "(absent)"
EMPTY = "(empty)"
# Between the values of a header sent on several lines.  mod_asis merges
# repeated header lines into one ("a, b"), so the later ones are added by
# mod_headers (header_fixes).
MORE = " (+) "
REASONS = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}

# The attacker's fragment of the protected run (m2): what the 2007 plug-in
# would have run.
ATTACK = "#FDF=javascript:alert(1)"

# Every Content-Type of the matrix: the PDF types engines and servers use,
# the octet-stream family that Firefox may hand to pdf.js, values that
# Fetch reads as "no valid type" (so engines sniff the body), and comma
# lists, where Fetch's "extract a MIME type" takes the last valid type.
# None is a response without the header, "" one with an empty value.
PDF_TYPES = ["application/pdf", "APPLICATION/PDF",
             "application/pdf; charset=x", "text/pdf", "application/x-pdf",
             "text/x-pdf", "application/acrobat", "applications/vnd.pdf",
             "application/vnd.pdf", "application/x-bzpdf",
             "application/x-gzpdf"]
OCTET_TYPES = ["application/octet-stream", "binary/octet-stream",
               "application/x-download", "application/force-download",
               "application/download", "application/unknown"]
NO_TYPES = [None, "", "unknown/unknown", "*/*"]
MALFORMED = ["pdf", "application/", "/pdf", "application/pdf;;"]
TEXT_TYPES = ["text/plain", "text/html"]
LISTS = ["application/pdf,", "text/html, application/pdf",
         "application/pdf, text/html", "application/pdf, */*",
         "text/plain, application/pdf"]
ALL_TYPES = (NO_TYPES[:2] + PDF_TYPES + OCTET_TYPES + NO_TYPES[2:]
             + TEXT_TYPES + MALFORMED + LISTS)

DISPOSITIONS = [None, "inline; filename=x.pdf", 'inline; filename="x.PDF"',
                "inline; filename*=UTF-8''x%2Epdf",
                "attachment; filename=x.pdf", "inline; filename=x.txt",
                "inline", "foo; filename=x.pdf"]

# Issue 19: a .pdf name however it is written.  Firefox opens a top-level
# application/octet-stream in pdf.js when the file name it decodes from
# the disposition ends in ".pdf" (case-sensitive: x.PDF downloads), and
# its decoder takes RFC 5987/2231 (filename*, continuations), quoted-pairs,
# RFC 2047 words and percent escapes in a plain filename (measured; `name`
# instead of `filename` downloads).
ENCODED_NAMES = [
    "inline; filename*=UTF-8''x.%70df",
    'inline; filename*0="x."; filename*1="pdf"',
    'inline; filename="x.p\\df"',
    'inline; filename="=?UTF-8?B?eC5wZGY=?="',
    "inline; filename=x.pd%66",
    "inline; filename*=UTF-8''x.pd%66",
    'inline; filename="=?UTF-8?Q?x=2Epdf?="',
    "inline; filename*0*=UTF-8''x.%70; filename*1=df",
    "inline; filename*=UTF-8''x.%70%64%66",
    "inline; name=x.pdf",
    "inline; name=x.pd%66",
    "inline; filename=x.txt; filename*=UTF-8''x.pdf",
    'inline; filename="x.pdf"',
    "inline; filename=x.PDF",
]
# ... and a disposition type that is not a plain `inline`: none, empty,
# quoted, upper case, odd spacing, no ';', "attachment" beside "inline"
# in one header line and on two lines.
ODD_DISPOSITIONS = [
    "filename=x.pdf",
    "filename=x.pd%66",
    "",
    '"inline"; filename=x.pdf',
    "INLINE; filename=x.pdf",
    "inline;filename=x.pdf;",
    'inline ;filename= "x.pdf" ;',
    "inline filename=x.pdf",
    "attachment, inline; filename=x.pdf",
    "inline; filename=x.pdf, attachment",
    "attachment" + MORE + "inline; filename=x.pdf",
    "inline; filename=x.pdf" + MORE + "attachment",
    "inline; filename=x.pdf" + MORE + "inline; filename=x.pdf",
]
# The generic types beside application/octet-stream (issue 19), the two
# that OCTET_TYPES lacks first.
GENERIC_TYPES = ["application/binary", "application/x-octet-stream",
                 "binary/octet-stream", "application/x-download",
                 "application/force-download", "application/download"]


def _cell(status=200, ctype=None, disp=None, nosniff=False, body="pdf",
          url_pdf=False):
    return {"status": status, "content_type": ctype, "disposition": disp,
            "nosniff": nosniff, "body": body, "url_pdf": url_pdf}


def cells():
    """The matrix, in id order: a chosen slice of the cross product."""
    out = []
    # Every type with a PDF and an HTML body, with and without nosniff:
    # what the type alone does, and what sniffing adds.
    for ctype in ALL_TYPES:
        for body in ("pdf", "html"):
            for nosniff in (False, True):
                out.append(_cell(ctype=ctype, body=body, nosniff=nosniff))
    # The PDF after a newline: Chromium's sniffer looks for %PDF- at byte
    # 0 only, PDF parsers anywhere in the first KiB.
    for ctype in ALL_TYPES:
        out.append(_cell(ctype=ctype, body="pdf-ws"))
    for ctype in NO_TYPES + ["application/octet-stream", "application/pdf",
                             "text/pdf", "text/plain"]:
        out.append(_cell(ctype=ctype, body="pdf-ws", nosniff=True))
    # Types that say "some file": the disposition's filename and the URL's
    # extension are what an engine has left to go on.
    for ctype in OCTET_TYPES + NO_TYPES:
        for disp in DISPOSITIONS[1:]:
            out.append(_cell(ctype=ctype, disp=disp))
        out.append(_cell(ctype=ctype, url_pdf=True))
    for ctype in (None, "application/octet-stream"):
        out.append(_cell(ctype=ctype, disp="inline", url_pdf=True))
        out.append(_cell(ctype=ctype, disp="inline; filename=x.txt",
                         url_pdf=True))
        out.append(_cell(ctype=ctype, disp="inline; filename=x.pdf",
                         nosniff=True))
        out.append(_cell(ctype=ctype, disp="inline; filename=x.pdf",
                         body="html"))
    # A PDF type with a disposition that is not a plain inline.
    for ctype in ("application/pdf", "text/pdf"):
        for disp in ("attachment; filename=x.pdf", "inline; filename=x.txt",
                     "foo; filename=x.pdf", "inline"):
            out.append(_cell(ctype=ctype, disp=disp))
    # Error statuses, for responses that render with 200.
    for status in (404, 500):
        for ctype, disp in (("application/pdf", None), ("text/pdf", None),
                            ("application/x-pdf", None), (None, None),
                            ("application/octet-stream",
                             "inline; filename=x.pdf")):
            out.append(_cell(status, ctype, disp))
    out += [_cell(404, "application/pdf", body="html"),
            _cell(404, None, url_pdf=True),
            _cell(404, None, nosniff=True),
            _cell(404, "text/pdf", nosniff=True)]
    # The module's own forced download (SPEC R3), as engines take it.
    for status in (200, 404, 500):
        out.append(_cell(status, "application/octet-stream",
                         'attachment; filename="c.pdf"', nosniff=True))
    # Issue 19 (c282 on): encoded names and odd disposition types, for
    # application/octet-stream and text/plain (which a sniffer may turn
    # into a guess from the name); the other generic types with a few.
    for ctype in ("application/octet-stream", "text/plain"):
        for disp in ENCODED_NAMES + ODD_DISPOSITIONS:
            out.append(_cell(ctype=ctype, disp=disp))
    out.append(_cell(ctype="text/plain", url_pdf=True))
    for disp, url_pdf in ((None, False), (None, True),
                          ("inline; filename=x.pdf", False),
                          ("inline; filename*=UTF-8''x.%70df", False),
                          ("", False)):
        out.append(_cell(ctype="text/plain", disp=disp, body="pdf-bin",
                         url_pdf=url_pdf))
    for ctype in GENERIC_TYPES[:2]:
        out += [_cell(ctype=ctype, disp="inline; filename=x.pdf"),
                _cell(ctype=ctype),
                _cell(ctype=ctype, url_pdf=True)]
    for ctype in GENERIC_TYPES:
        for disp in ("inline; filename*=UTF-8''x.%70df",
                     'inline; filename*0="x."; filename*1="pdf"',
                     "filename=x.pdf", ""):
            out.append(_cell(ctype=ctype, disp=disp))
    # (c372 on) A binary text/plain: WebKit sniffs it (WHATWG "text or
    # binary") and renders a %PDF- body whatever its name; Firefox guesses
    # the type from the name it decodes (or the URL) and opens pdf.js,
    # which finds %PDF- after junk too.  Which text/plain spellings are
    # sniffed, nosniff, more names, and junk before %PDF-.
    for ctype in ("text/plain; charset=UTF-8", "text/plain; charset=x",
                  "Text/Plain"):
        out.append(_cell(ctype=ctype, body="pdf-bin"))
    out += [_cell(ctype="text/plain", body="pdf-bin", nosniff=True),
            _cell(ctype="text/plain", disp="inline; filename=x.pdf",
                  body="pdf-bin", nosniff=True),
            _cell(ctype="text/plain", disp="attachment; filename=x.pdf",
                  body="pdf-bin"),
            _cell(ctype="text/plain", disp="inline; filename=x.txt",
                  body="pdf-bin")]
    for disp in ENCODED_NAMES[1:6] + ["filename=x.pdf",
                                      "INLINE; filename=x.pdf",
                                      "inline"]:
        out.append(_cell(ctype="text/plain", disp=disp, body="pdf-bin"))
    for ctype in ("text/plain", "application/octet-stream", None):
        out += [_cell(ctype=ctype, disp="inline; filename*=UTF-8''x.%70df",
                      body="bin-pdf"),
                _cell(ctype=ctype, disp="inline; filename=x.pdf",
                      body="bin-pdf"),
                _cell(ctype=ctype, body="bin-pdf", url_pdf=True),
                _cell(ctype=ctype, body="bin-pdf")]
    out += [_cell(ctype="text/plain", disp="inline; filename*=UTF-8''x.%70df",
                  body="bin-pdf", url_pdf=True),
            _cell(ctype=None, disp="inline; filename*=UTF-8''x.%70df"),
            _cell(ctype="unknown/unknown",
                  disp="inline; filename*=UTF-8''x.%70df", body="bin-pdf")]
    # (c402 on) WebKitGTK shows each part of a multipart/x-mixed-replace
    # answer as the document at its URL, fragment kept: a PDF part in its
    # viewer, also after an HTML part.
    out += [_cell(ctype=MXR_TYPE, body="mxr-pdf"),
            _cell(ctype=MXR_TYPE, body="mxr-html-pdf"),
            _cell(ctype=MXR_TYPE, body="mxr-pdf", nosniff=True)]
    # PDF-sounding types that no engine was seen to render (2026-12-06,
    # with image/x-pdf, application/x-acrobat, application/vnd.apple.pdf
    # and a dozen more): kept so that a change shows.
    for ctype in ("image/pdf", "application/postscript",
                  "application/vnd.adobe.pdf"):
        out.append(_cell(ctype=ctype))
    # (c408 on) A PDF type with bytes before %PDF-: the viewers look for
    # the header further in, so a body the module's sniff would not call
    # a PDF still renders when the type says one.  This is why a type
    # httpd sends from its header tables (r->content_type unset: mod_lua,
    # "Header add") must be judged as a type.
    out += [_cell(ctype="application/pdf", body="bin-pdf"),
            _cell(ctype="text/pdf", body="bin-pdf")]
    # (c410 on) Other types with an inline .pdf name: Firefox re-guesses
    # the generic ones above from the name, and these in no engine
    # (measured 2026-12-07, each also at a .pdf URL, with
    # application/x-msdos-program, application/vnd.ms-excel,
    # application/msword, application/x-pdf-foo, application/x-download-file,
    # application/x-stream, application/x-zip-compressed, text/csv,
    # application/json, application/xml, image/png and text/html): kept so
    # that a change shows.
    for ctype in ("application/x-foo", "application/x-unknown",
                  "application/x-binary", "application/x-octetstream",
                  "application/save", "application/x-msdownload",
                  "application/zip", "x-application/pdf"):
        out.append(_cell(ctype=ctype, disp="inline; filename=x.pdf"))
    # (c418 on) The type Chromium's own viewer plugin registers inside the
    # browser: a site must not reach the viewer by naming it.
    out += [_cell(ctype="application/x-google-chrome-pdf"),
            _cell(ctype="application/x-google-chrome-pdf", url_pdf=True)]
    for i, c in enumerate(out, start=1):
        c["id"] = "c%03d" % i
    return out


# ------------------------------------------------------------- the file

def _field(value):
    if value is None:
        return ABSENT
    if value == "":
        return EMPTY
    if "\t" in value or "\n" in value or value in (ABSENT, EMPTY):
        raise ValueError("cannot write %r in the matrix" % value)
    return value


def _value(field):
    return None if field == ABSENT else "" if field == EMPTY else field


def key(cell):
    """What a cell is, without its id and recorded outcomes."""
    return (cell["status"], cell["content_type"], cell["disposition"],
            cell["nosniff"], cell["body"], cell["url_pdf"])


def values(field):
    """The values of a header, one per line it is sent on: [] for none."""
    return [] if field is None else field.split(MORE)


def describe(cell):
    """One line for messages: status, headers, body, URL."""
    parts = [str(cell["status"])]
    ct = cell["content_type"]
    parts.append("no Content-Type" if ct is None
                 else "Content-Type: (empty)" if ct == ""
                 else "Content-Type: %s" % ct)
    for v in values(cell["disposition"]):
        parts.append("Content-Disposition: %s" % (v or "(empty)"))
    if cell["nosniff"]:
        parts.append("nosniff")
    parts.append("body %s" % cell["body"])
    if cell["url_pdf"]:
        parts.append("URL ends in .pdf")
    return ", ".join(parts)


def read(path=TSV):
    """(comment lines, cells with an `outcomes` dict per engine).

    The engines are the header's columns after the cell's own: a recording
    may lack an engine (then run.py says it is not recorded), never name
    one twice or one it does not know."""
    comments, rows, header = [], [], None
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if line.startswith("#"):
            comments.append(line)
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            engines = header[len(CELL_COLUMNS):]
            if header[:len(CELL_COLUMNS)] != CELL_COLUMNS or not engines \
                    or len(set(engines)) != len(engines) \
                    or any(e not in ENGINES for e in engines):
                raise ValueError("%s:%d: header row %r, expected %r"
                                 % (path, n, header, COLUMNS))
            continue
        if len(fields) != len(header):
            raise ValueError("%s:%d: %d fields" % (path, n, len(fields)))
        f = dict(zip(header, fields))
        bad = [c for c in ("nosniff", "url_pdf") if f[c] not in ("0", "1")]
        bad += [e for e in engines if f[e] not in OUTCOMES]
        if bad or f["body"] not in BODIES or not f["status"].isdigit() \
                or not re.match(r"^c\d{3}$", f["id"]):
            raise ValueError("%s:%d: bad row %r" % (path, n, line))
        rows.append({"id": f["id"], "status": int(f["status"]),
                     "content_type": _value(f["content_type"]),
                     "disposition": _value(f["disposition"]),
                     "nosniff": f["nosniff"] == "1", "body": f["body"],
                     "url_pdf": f["url_pdf"] == "1",
                     "outcomes": {e: f[e] for e in engines}})
    if header is None:
        raise ValueError("%s: no header row" % path)
    return comments, rows


def write(rows, versions, notes=(), path=TSV):
    """Write the recording; `rows` carry an `outcomes` dict per engine;
    `notes` are more comment lines (without the '# ')."""
    lines = [
        "# mod_pdftoken render matrix: what each engine does with a "
        "top-level navigation",
        "# to each cell, served from a scope without the module "
        "(t/browser/matrix.py).",
        "# Recorded by: python3 t/browser/run.py --record-matrix",
        "# Browsers: " + "; ".join("%s %s" % (e, versions.get(e, "unknown"))
                                   for e in ENGINES),
        "# (absent) = header not sent, (empty) = sent with an empty value; "
        "body pdf-ws = \"\\n\" + pdf.",
        "# a (+) b = the header sent on two lines, a then b; body pdf-bin = "
        "pdf with \\1\\2\\3\\4 in its binary comment line, bin-pdf = "
        "\"\\0\\1\\2\\3\\n\" + pdf.",
        "# mxr-pdf = a multipart/x-mixed-replace body of the pdf as one "
        "application/pdf part; mxr-html-pdf = an HTML part, then that part.",
    ] + ["# " + n for n in notes] + ["\t".join(COLUMNS)]
    for c in rows:
        lines.append("\t".join([
            c["id"], str(c["status"]), _field(c["content_type"]),
            _field(c["disposition"]), "1" if c["nosniff"] else "0",
            c["body"], "1" if c["url_pdf"] else "0"]
            + [c["outcomes"][e] for e in ENGINES]))
    path.write_text("\n".join(lines) + "\n", "utf-8")


# -------------------------------------------------------------- serving

def label(browser, scope, cell):
    """Text in the body (the PDF's /Title and page, the HTML's <title>)
    that names the cell: the viewer shows it, a download carries it."""
    return "pdftoken-matrix %s %s %s" % (browser, scope, cell["id"])


def _mixed_replace(parts):
    """A multipart/x-mixed-replace body (MXR_TYPE) of (type, bytes)
    parts."""
    dash = b"--" + MXR_BOUNDARY.encode("ascii")
    out = b""
    for ctype, data in parts:
        out += b"%s\r\nContent-Type: %s\r\n\r\n%s\r\n" \
            % (dash, ctype.encode("ascii"), data)
    return out + dash + b"--\r\n"


def body(browser, scope, cell):
    text = label(browser, scope, cell)
    html = ("<!doctype html>\n<meta charset=\"utf-8\"><title>%s</title>\n"
            "<h1>%s</h1>\n<p>An HTML body.</p>\n"
            % (text, text)).encode("ascii")
    if cell["body"] == "html":
        return html
    pdf = make_pdf(text, pages=1, padding=256)
    if cell["body"] == "mxr-pdf":
        return _mixed_replace([("application/pdf", pdf)])
    if cell["body"] == "mxr-html-pdf":
        return _mixed_replace([("text/html", html), ("application/pdf", pdf)])
    if cell["body"] == "pdf-bin":
        # The same length, so the cross reference table stays right.
        marker = b"%\xe2\xe3\xcf\xd3\n"
        assert pdf.startswith(b"%PDF-1.4\n" + marker)
        return pdf.replace(marker, b"%\x01\x02\x03\x04\n", 1)
    if cell["body"] == "bin-pdf":
        return b"\0\1\2\3\n" + pdf
    return b"\n" + pdf if cell["body"] == "pdf-ws" else pdf


def _tolower_type(ctype):
    """httpd's ap_content_type_tolower: the type, up to ';', lower-cased
    (what mod_asis makes of a Content-Type line)."""
    head, sep, rest = ctype.partition(";")
    return head.lower() + sep + rest


def asis(browser, scope, cell):
    """The cell as a mod_asis file: status, header lines, blank, body."""
    head = ["Status: %d %s" % (cell["status"], REASONS[cell["status"]])]
    ct = cell["content_type"]
    if ct:
        head.append("Content-Type: " + ct)
    if cell["disposition"] is not None:
        # the first line; header_fixes adds the others
        head.append("Content-Disposition: "
                    + values(cell["disposition"])[0])
    if cell["nosniff"]:
        head.append("X-Content-Type-Options: nosniff")
    return ("\n".join(head) + "\n\n").encode("latin-1") \
        + body(browser, scope, cell)


def name(cell):
    """The file name: no extension, so mod_mime never types it."""
    return cell["id"]


def path(browser, scope, cell):
    """The URL path; `.../x.pdf` cells reach the same file by PATH_INFO."""
    p = "/%s/%s/%s" % (browser, scope, name(cell))
    return p + "/x.pdf" if cell["url_pdf"] else p


def header_fixes(cell):
    """mod_headers lines for what mod_asis cannot send byte for byte: it
    drops an empty Content-Type, lower-cases the type and merges repeated
    header lines into one.  mod_headers runs before the module's output
    filter, which so sees what is sent."""
    out = []
    ct = cell["content_type"]
    if ct == "":
        out.append('Header set Content-Type ""')
    elif ct and _tolower_type(ct) != ct:
        out.append('Header edit Content-Type "^%s$" "%s"'
                   % (re.escape(_tolower_type(ct)), ct))
    for v in values(cell["disposition"])[1:]:
        # kept simple: mod_headers reads % and \\ in its own way
        if any(ch in v for ch in '%"\\'):
            raise ValueError("cannot add Content-Disposition %r" % v)
        out.append('Header add Content-Disposition "%s"' % v)
    return out


def httpd_config(browser, matrix):
    """<Directory> blocks for browser's two copies of the matrix: m1
    without the module, m2 protected with every default."""
    lines = []
    for scope, protect in (("m1", "Off"), ("m2", None)):
        lines += ['<Directory "@DOCROOT@/%s/%s">' % (browser, scope),
                  "    SetHandler send-as-is",
                  "    AcceptPathInfo On"]
        if protect:
            lines.append("    PdfTokenProtect %s" % protect)
        for c in matrix:
            fixes = header_fixes(c)
            if fixes:
                lines.append('    <Files "%s">' % name(c))
                lines += ["        " + f for f in fixes]
                lines.append("    </Files>")
        lines.append("</Directory>")
    return "\n".join(lines) + "\n"


def write_site(httpd, browser, matrix):
    """Write both scopes' files; return cases.mjs's cell list per scope."""
    out = {}
    for scope in ("m1", "m2"):
        out[scope] = []
        for c in matrix:
            httpd.write("%s/%s/%s" % (browser, scope, name(c)),
                        asis(browser, scope, c))
            out[scope].append({
                "id": c["id"], "path": path(browser, scope, c),
                "url": httpd.url(path(browser, scope, c))
                + (ATTACK if scope == "m2" else ""),
                "label": label(browser, scope, c), "body": c["body"]})
    return out


# m3: the protected copy of every cell inside an <embed> of a same-site
# page, with the attacker's fragment.  Firefox's pdf.js shows in an
# <embed> or <object> what it only downloads at top level (attachments,
# no type, text/plain with binary bytes), so the top-level matrix alone
# cannot tell whether the module judges all that an embedding page can
# show.  Same-site, so the module's Lax cookie is sent: a cell it judges
# is shown after the token step with an empty fragment, or not at all.
# Each page also embeds one unprotected PDF (the control), which must be
# shown with the fragment: that is how m3 knows it reads fragments.
EMBED_BATCH = 24


def _control(matrix):
    return next(c for c in matrix if c["status"] == 200 and not c["url_pdf"]
                and c["content_type"] == "application/pdf"
                and c["disposition"] is None and c["body"] == "pdf")


def embed_pages(httpd, browser, matrix):
    """Write m3's pages; return them for cases.mjs: url, cells, control."""
    control = _control(matrix)
    pages = []
    for n in range(0, len(matrix), EMBED_BATCH):
        chunk = matrix[n:n + EMBED_BATCH]
        embeds = [(control["id"], path(browser, "m1", control))] \
            + [(c["id"], path(browser, "m2", c)) for c in chunk]
        tags = "\n".join(
            '<embed id="%s%s" src="%s%s" width="160" height="120">'
            % ("control-" if i == 0 else "", cid, src, ATTACK)
            for i, (cid, src) in enumerate(embeds))
        rel = "%s/m3/page-%02d.html" % (browser, n // EMBED_BATCH)
        httpd.write(rel, ("<!doctype html>\n<meta charset=\"utf-8\">"
                          "<title>m3 %d</title>\n%s\n"
                          % (n // EMBED_BATCH, tags)).encode("ascii"))
        pages.append({
            "url": httpd.url("/" + rel),
            "control": path(browser, "m1", control),
            "cells": [{"id": c["id"], "path": path(browser, "m2", c)}
                      for c in chunk]})
    return pages


def check_served(httpd, browser, matrix, request):
    """What httpd sends for each m1 cell is exactly the cell: status,
    Content-Type (absent, empty, the exact value), Content-Disposition,
    nosniff and body.  `request(target)` returns a harness Response."""
    problems = []
    for c in matrix:
        r = request(path(browser, "m1", c))
        want = {"Content-Type": [c["content_type"]],
                "Content-Disposition": values(c["disposition"]) or [None],
                "X-Content-Type-Options": ["nosniff" if c["nosniff"]
                                           else None]}
        got = {h: (r.get_all(h) or [None]) for h in want}
        bad = []
        if r.status != c["status"]:
            bad.append("status %d" % r.status)
        for h, v in want.items():
            if got[h] != v:
                bad.append("%s %r, expected %r" % (h, got[h], v))
        if r.body != body(browser, "m1", c):
            bad.append("a different body (%d bytes)" % len(r.body))
        if bad:
            problems.append("%s %s (%s): %s" % (browser, c["id"], describe(c),
                                               "; ".join(bad)))
    return problems
