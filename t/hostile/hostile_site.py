# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The server every hostile test runs against: its configuration and
documents (prepare), and the values corpus.txt's placeholders stand for
(set_values), which the Python cases use too."""

import os
import time

import pdftoken_ref as ref

DOC = "/prot/doc.pdf"
CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    # Only this exact User-Agent is exempt (SPEC 5); the corpus tries to
    # reach it through what a link controls.
    PdfTokenExempt "%{HTTP_USER_AGENT} == 'ExemptBot/1.0'"
</Directory>
"""
# Documents the corpus names, by key: (URL path, file below the docroot).
FILES = {
    "doc": ("/prot/doc.pdf", "prot/doc.pdf"),
    "quote": ('/prot/q"uote;x.pdf', 'prot/q"uote;x.pdf'),
    "resume": ("/prot/r\u00e9sum\u00e9.pdf", "prot/r\u00e9sum\u00e9.pdf"),
    "pub": ("/pub/doc.pdf", "pub/doc.pdf"),
    # No extension, so no type: judged after the handler, by its body.
    "scan": ("/prot/scan", "prot/scan"),
}
# PDFs under /prot whose names hold what SPEC section 6 is about (CR LF,
# controls, ';' and ',', bytes that are not UTF-8), so that their requests
# get R1 and show how Location and the cookie's Path escape them: a made-up
# .pdf path that names no file gets httpd's 404 instead (SPEC section 4).
HOSTILE_NAMES = (b"doc\r\nSet-Cookie: injected=1.pdf", b"\x01\x1b\x7f\t.pdf",
                 b"a;Domain=evil.example;Secure,x.pdf", b"\xff\xfe.pdf",
                 b"\xc0\xaf..\xc0\xafdoc.pdf")


def prepare(s):
    """Write the corpus's documents and configuration into server s."""
    s.files = {}
    for key, (_, rel) in FILES.items():
        s.files[key] = s.write_pdf(rel, key)
    # Files an hour old: their ETag and Last-Modified are strong
    # validators, which If-Range needs.
    old = time.time() - 3600
    for key, (_, rel) in FILES.items():
        os.utime(s.docroot / rel, (old, old))
    prot = os.fsencode(s.docroot / "prot")
    for name in HOSTILE_NAMES:
        path = os.path.join(prot, name)
        with open(path, "wb") as f:
            f.write(s.files["doc"])
        os.chmod(path, 0o644)
    s.configure(CONFIG)


def set_values(s):
    """The placeholders' values for the running server s."""
    secret = s.secret
    now = int(time.time())
    tok = ref.mint(secret, DOC, lifetime=3600)
    exp = ref.mint(secret, DOC, expiry=now - 600)
    other = ref.mint(secret, "/prot/other.pdf", lifetime=3600)
    forged = ref.forge(ref.mint(secret, DOC, lifetime=3600))
    v1 = ref.mint(secret, DOC, lifetime=3600, version=1)
    s.values = {
        "HOST": "127.0.0.1:%d" % s.port,
        "PORT": str(s.port),
        "TOK": tok,
        "CK": ref.cookie_pair(tok),
        "CKNAME": ref.cookie_name(tok),
        "TOKEXP": exp,
        "CKEXP": ref.cookie_pair(exp),
        "TOKOLD": ref.mint(secret, DOC, expiry=now - 7200),
        "TOKOTHER": other,
        "CKOTHER": ref.cookie_pair(other),
        "TOKV1": v1,
        "CKV1": ref.cookie_pair(v1),
        "TOKV3": ref.mint(secret, DOC, lifetime=3600, version=3),
        "TOKFORGED": forged,
        "CKFORGED": ref.cookie_pair(forged),
        "TOKNUL": tok[:30] + "%00" + tok[33:],
    }
    r = s.get(DOC + "?pdftoken=" + tok, cookies=[s.values["CK"]])
    assert r.status == 200 and r.get("ETag") and r.get("Last-Modified"), r
    s.values["ETAG"] = r.get("ETag")
    s.values["LASTMOD"] = r.get("Last-Modified")
