# Licensed under the Apache License, Version 2.0; see LICENSE.
"""mod_xsendfile (Debian's libapache2-mod-xsendfile): a script answers with
headers only and an `X-Sendfile: /path` header, and mod_xsendfile's output
filter throws the script's body away and sends that file in its place.

Its filter used to be inserted after this module's (insert_filter at
APR_HOOK_LAST + 1), so the script's empty body was judged, and the file
went out unjudged.  Measured on the module before the fix: a script that
named no type, or text/plain, had a PDF sent with no token step; all
three engines render a PDF sent without a type (render matrix c001), and
WebKitGTK one sent as text/plain whose first bytes look binary, as a
real PDF's compressed streams do (c337).  The watch filter now runs
after every filter other modules insert, and judges the bytes it is
handed, not those the handler wrote.

Each answer is compared with the same script in an unprotected twin
directory where it must pass unchanged.
"""

import os

import pytest

import httpd
from checks import assert_inline, assert_redirect, assert_untouched

SCOPES = r"""
XSendFile On
XSendFilePath "@ROOT@/files"
<Directory "@DOCROOT@/xs">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/open">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect Off
</Directory>
"""

# name -> (headers the script prints, file it names, body it writes itself)
SCRIPTS = {
    "untyped": ([], "doc.pdf", ""),
    "octet.pdf": (["Content-Type: application/octet-stream"], "doc.pdf", ""),
    "typed": (["Content-Type: application/pdf"], "doc.pdf", ""),
    "plain": (["Content-Type: text/plain"], "doc.pdf", ""),
    # the script's own body is a PDF, the file sent in its place is not
    "untyped-text": ([], "notes.txt", "%PDF-1.7 from the script"),
    "html": (["Content-Type: text/html"], "doc.pdf", ""),
}

OLD = 1e9
TEXT = b"plain notes, not a PDF\n" * 40


def script(headers, path, body):
    lines = "".join(h + "\\r\\n" for h in headers + ["X-Sendfile: " + path])
    return "#!/bin/sh\nprintf '%s\\r\\n'\nprintf '%%s' '%s'\n" % (lines, body)


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("xsendfile", modules=[httpd.cgi_module(), "xsendfile"])
    files = s.root / "files"
    s.write("notes.txt", TEXT, base=files)
    s.files = {"doc.pdf": s.write_pdf("doc.pdf", "sent by mod_xsendfile",
                                      base=files),
               "notes.txt": TEXT}
    for name, (headers, f, body) in SCRIPTS.items():
        for d in ("xs", "open"):
            p = s.write("%s/%s" % (d, name),
                        script(headers, str(files / f), body), mode=0o755)
            # Older than the file: mod_xsendfile's Last-Modified and ETag
            # are then the file's alone, the same in both directories.
            os.utime(p, (OLD, OLD))
    s.configure(SCOPES)
    s.start()
    return s


def view(s, name):
    """The first view, checked as a token redirect, then the follow-up."""
    path = "/xs/" + name
    r = s.get(path)
    token, cookie = assert_redirect(s, r, path, secret=s.secret)
    return s.get(r.location_target(), cookies=[cookie])


def unprotected(s, name):
    r = s.get("/open/" + name)
    assert r.status == 200 and r.get("X-Sendfile") is None, r
    return r


@pytest.mark.parametrize("name,ctype", [("untyped", None),
                                        ("octet.pdf", None),
                                        ("typed", "application/pdf"),
                                        ("plain", "text/plain")])
def test_pdf_sent_in_place_of_the_body_takes_the_token_step(srv, name, ctype):
    assert unprotected(srv, name).body == srv.files["doc.pdf"]
    r = view(srv, name)
    assert_inline(r, srv.files["doc.pdf"], content_type=ctype)
    if name == "untyped":
        assert r.get("Content-Type") is None, r


@pytest.mark.parametrize("name,body", [("untyped-text", "notes.txt"),
                                       ("html", "doc.pdf")])
def test_what_no_engine_renders_as_pdf_passes_unchanged(srv, name, body):
    """A text file sent in place of a script's PDF bytes (judged on what is
    sent), and a PDF sent as text/html (a page in every engine)."""
    r = srv.get("/xs/" + name)
    assert_untouched(r, body=srv.files[body])
    twin = unprotected(srv, name)
    drop = {"date"}
    assert [(k, v) for k, v in r.headers if k.lower() not in drop] == \
        [(k, v) for k, v in twin.headers if k.lower() not in drop], (r, twin)
