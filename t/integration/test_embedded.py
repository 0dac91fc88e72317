# Licensed under the Apache License, Version 2.0; see LICENSE.
"""PDFs that Firefox shows in an <object> or <embed> although they are
attachments.

Measured on this machine (Firefox ESR 153, an <object> or <embed>, with or
without type="application/pdf", same-origin and cross-site): Firefox
ignores `Content-Disposition: attachment` there and shows
application/octet-stream in pdf.js, `X-Content-Type-Options: nosniff` or
not, whenever the URL path ends in .pdf or the disposition's filename
says .pdf in any spelling (filename*, continuations, RFC 2047, quoted
pairs, percent escapes), and it applies the embedding page's fragment.
Chromium and WebKitGTK download or show nothing.  Two holes followed:

- the fallback (R3) and every forced download are exactly such answers:
  a page that embeds `doc.pdf?pdftoken=T#...`, with a token T minted for
  itself, had the victim's Firefox show the document at the page's
  fragment, no cookie needed.  Forced downloads now carry
  `Content-Security-Policy: frame-ancestors 'none'` (Firefox and WebKit
  then show nothing in the frame);
- a script's own download (application/octet-stream, attachment,
  filename="report.pdf") passed as not PDF-like.  A generic type that is
  an attachment now counts when it names a file or its URL ends in .pdf;
  so do a text/plain attachment and one without a valid type, which
  Firefox takes for application/octet-stream first (a binary text/plain
  body; any body without a type) and shows by its name the same way.

Each answer is compared with the same script in an unprotected twin.
"""

import pytest

import httpd
from checks import assert_attachment, assert_redirect, assert_unframeable

SCOPES = r"""
<Directory "@DOCROOT@/emb">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/open">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect Off
</Directory>
<Directory "@DOCROOT@/emb-csp">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect On
    Header always set Content-Security-Policy "default-src 'self'"
    Header set Content-Security-Policy "img-src 'self'"
    <Files "doc.pdf">
        SetHandler default-handler
    </Files>
</Directory>
<Directory "@DOCROOT@/static">
    PdfTokenProtect On
    <Files "doc.bin">
        ForceType application/octet-stream
        Header set Content-Disposition "attachment; filename=doc.pdf"
    </Files>
</Directory>
<Directory "@DOCROOT@/static-open">
    <Files "doc.bin">
        ForceType application/octet-stream
        Header set Content-Disposition "attachment; filename=doc.pdf"
    </Files>
</Directory>
"""

OCTET = "Content-Type: application/octet-stream"
# name -> the script's headers: each a download a script might send
JUDGED = {
    "report": [OCTET, 'Content-Disposition: attachment; filename="r.pdf"'],
    "encoded": [OCTET,
                "Content-Disposition: attachment; filename*=UTF-8''r.%70df"],
    "continued": [OCTET, 'Content-Disposition: attachment; '
                  'filename*0="r."; filename*1="pdf"'],
    "rfc2047": [OCTET, 'Content-Disposition: attachment; '
                'filename="=?UTF-8?B?ci5wZGY=?="'],
    "nosniff": [OCTET, 'Content-Disposition: attachment; filename="r.pdf"',
                "X-Content-Type-Options: nosniff"],
    # any filename counts: the module does not decode names
    "other-name": [OCTET, "Content-Disposition: attachment; filename=r.bin"],
    "binary": ["Content-Type: binary/octet-stream",
               'Content-Disposition: attachment; filename="r.pdf"'],
    # What Firefox takes for application/octet-stream first (measured
    # 2026-12-07, <object> and <embed>): a text/plain body with binary
    # bytes (samplepdf's binary comment line has none, a real PDF's
    # streams do), and no valid type at all, whatever the body holds
    # before "%PDF-".  Chromium and WebKitGTK saved them.
    "text": ["Content-Type: text/plain",
             'Content-Disposition: attachment; filename="r.pdf"'],
    "text-encoded": ["Content-Type: text/plain",
                     "Content-Disposition: attachment; "
                     "filename*=UTF-8''r.%70df"],
    "no-type": ['Content-Disposition: attachment; filename="r.pdf"'],
    "malformed-type": ["Content-Type: foo",
                       'Content-Disposition: attachment; filename="r.pdf"'],
}
# Scripts whose body has bytes before "%PDF-" (pdf.js finds the header
# past them, the module's sniff does not): only their names judge them.
JUNK_FIRST = {"text", "text-encoded", "no-type", "malformed-type"}
UNTOUCHED = {
    # no name, no .pdf URL: Firefox has nothing to call a PDF
    "no-name": [OCTET, "Content-Disposition: attachment"],
    "text-no-name": ["Content-Type: text/plain",
                     "Content-Disposition: attachment"],
    "html": ["Content-Type: text/html",
             'Content-Disposition: attachment; filename="r.pdf"'],
}


def script(srv, path, headers, pdf):
    """A CGI script at path that sends headers, then pdf's bytes: both
    from files, so that no shell quoting touches a header."""
    head = srv.write(path + ".head",
                     "".join(h + "\r\n" for h in headers) + "\r\n")
    srv.write(path, "#!/bin/sh\ncat '%s' '%s'\n" % (head, pdf), mode=0o755)


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("embedded", modules=[httpd.cgi_module(), "headers"])
    s.pdf = s.write_pdf("files/doc.pdf", "a script's download")
    s.junk_pdf = b"\0\1\2\3\n" + s.pdf
    s.write("files/junk.pdf", s.junk_pdf)
    for d in ("emb", "open"):
        for name, headers in list(JUDGED.items()) + list(UNTOUCHED.items()):
            body = "junk.pdf" if name in JUNK_FIRST else "doc.pdf"
            script(s, "%s/%s" % (d, name), headers, s.docroot / "files" / body)
    script(s, "emb-csp/report", JUDGED["report"], s.docroot / "files/doc.pdf")
    s.write("emb-csp/doc.pdf", s.pdf)
    for d in ("static", "static-open"):
        s.write("%s/doc.bin" % d, s.pdf)
    s.configure(SCOPES)
    s.start()
    return s


def same_headers(r, twin, drop=("date",)):
    def kept(resp):
        return [(k, v) for k, v in resp.headers if k.lower() not in drop]
    assert kept(r) == kept(twin), (r, twin)


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_a_scripts_pdf_attachment_takes_the_token_step(srv, name):
    body = srv.junk_pdf if name in JUNK_FIRST else srv.pdf
    twin = srv.get("/open/" + name)
    assert twin.status == 200 and twin.body == body, twin
    assert twin.get("Location") is None, twin
    path = "/emb/" + name
    r = srv.get(path)
    token, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    # the follow-up: the script's own download, as it sent it
    ok = srv.get(r.location_target(), cookies=[cookie])
    assert ok.status == 200 and ok.body == body, ok
    assert ok.get("Content-Disposition") == twin.get("Content-Disposition")
    assert ok.get("Content-Type") == twin.get("Content-Type")
    assert "no-store" in (ok.get("Cache-Control") or ""), ok
    # the token without its cookie (a page embedding a URL it minted):
    # the fallback, which no frame may show
    fb = srv.get(r.location_target())
    assert_attachment(fb, body)


def test_the_scripts_send_the_types_they_name(srv):
    """The forms above reach the client as written: httpd adds no type to
    a script that sends none and keeps a malformed one."""
    sent = {n: srv.get("/open/" + n).get("Content-Type")
            for n in ("no-type", "malformed-type", "text")}
    assert sent == {"no-type": None, "malformed-type": "foo",
                    "text": "text/plain"}, sent


@pytest.mark.parametrize("name", sorted(UNTOUCHED))
def test_an_attachment_no_engine_shows_passes_unchanged(srv, name):
    r = srv.get("/emb/" + name)
    assert r.status == 200 and r.body == srv.pdf, r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == [], r
    same_headers(r, srv.get("/open/" + name))


def test_a_static_file_made_an_attachment_takes_the_token_step(srv):
    twin = srv.get("/static-open/doc.bin")
    assert twin.status == 200 and twin.body == srv.pdf, twin
    assert twin.get("Content-Disposition") == "attachment; filename=doc.pdf"
    r = srv.get("/static/doc.bin")
    token, cookie = assert_redirect(srv, r, "/static/doc.bin",
                                    secret=srv.secret)
    fb = srv.get(r.location_target())
    assert_attachment(fb, srv.pdf, filename="doc.bin.pdf")


@pytest.mark.parametrize("path", ["/emb-csp/report", "/emb-csp/doc.pdf"])
def test_a_site_policy_stays_beside_the_fallbacks(srv, path):
    """The fallback adds its frame-ancestors policy beside the site's own
    Content-Security-Policy ("Header set" and "Header always set"),
    judged after the handler (a script) and before it (a static PDF);
    browsers enforce every policy they get."""
    r = srv.get(path)
    _, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    fb = srv.get(r.location_target())
    assert_attachment(fb, srv.pdf)
    policies = sorted(fb.get_all("Content-Security-Policy"))
    assert policies == ["default-src 'self'", "frame-ancestors 'none'",
                        "img-src 'self'"], fb
