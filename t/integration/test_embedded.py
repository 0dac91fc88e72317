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
  an attachment now counts when it names a file or its URL ends in .pdf.

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
}
UNTOUCHED = {
    # no name, no .pdf URL: Firefox has nothing to call a PDF
    "no-name": [OCTET, "Content-Disposition: attachment"],
    # text/plain is text to Firefox in a frame, an attachment to the rest
    "text": ["Content-Type: text/plain",
             'Content-Disposition: attachment; filename="r.pdf"'],
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
    for d in ("emb", "open"):
        for name, headers in list(JUDGED.items()) + list(UNTOUCHED.items()):
            script(s, "%s/%s" % (d, name), headers, s.docroot / "files/doc.pdf")
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
    twin = srv.get("/open/" + name)
    assert twin.status == 200 and twin.body == srv.pdf, twin
    assert twin.get("Location") is None, twin
    path = "/emb/" + name
    r = srv.get(path)
    token, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    # the follow-up: the script's own download, as it sent it
    ok = srv.get(r.location_target(), cookies=[cookie])
    assert ok.status == 200 and ok.body == srv.pdf, ok
    assert ok.get("Content-Disposition") == twin.get("Content-Disposition")
    assert ok.get("Content-Type") == twin.get("Content-Type")
    assert "no-store" in (ok.get("Cache-Control") or ""), ok
    # the token without its cookie (a page embedding a URL it minted):
    # the fallback, which no frame may show
    fb = srv.get(r.location_target())
    assert_attachment(fb, srv.pdf)


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
