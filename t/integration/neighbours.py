# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The site where the module has neighbours: ModSecurity with the OWASP
Core Rule Set, mod_deflate, mod_headers and mod_cache in one server, in
five variants, and a reader that sends what a browser sends.  Used by
test_neighbours.py (the token flow and the WAF) and test_cache.py
(mod_cache).

    paranoia  cache provider  CacheQuickHandler  CacheIgnoreQueryString
    1         disk            On                 On
    1         socache         Off                Off
    2         socache         On                 Off
    2         disk            Off                On      (HTTPS)
    4         disk            Off                On      (HTTPS)

The readers send what a browser sends (User-Agent, Accept, a host name in
Host): CRS scores a bare scripted request (920320 no User-Agent, 920350
numeric Host) and that would say nothing about the module.
"""

import gzip
import os
import pwd
import re
import secrets

import httpd
from checks import assert_redirect, cache_directives
from samplepdf import make_pdf

# --------------------------------------------------------------- config

# ModSecurity as Debian's modsecurity.conf-recommended sets it up, with
# the engine on, PDFs and downloads added to the inspected response types,
# and every file in the server's own tree (nothing of /etc/apache2 or
# /var/log is read or written).  The test PDFs are text, so inspecting them
# shows that nothing the module adds trips a response rule; a real site
# must not inspect PDFs: rule 953120 (PHP leakage, "<?" not followed by
# "xml") matches about every other 48 KiB of compressed stream and blocks
# such a PDF, protected or not (README, "Tested neighbours").
MODSEC = r"""
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecResponseBodyAccess On
SecResponseBodyMimeType text/plain text/html text/xml application/pdf application/octet-stream
SecResponseBodyLimit 1048576
SecResponseBodyLimitAction ProcessPartial
SecPcreMatchLimit 100000
SecPcreMatchLimitRecursion 100000
SecTmpDir "@ROOT@/modsec/tmp"
SecDataDir "@ROOT@/modsec/data"
SecAuditEngine RelevantOnly
SecAuditLogRelevantStatus "^(?:5|4(?!04))"
SecAuditLogParts ABFHZ
SecAuditLogType Serial
SecAuditLog "@ROOT@/logs/modsec_audit.log"
SecArgumentSeparator &
SecCookieFormat 0
SecUnicodeMapFile /etc/modsecurity/unicode.mapping 20127
SecStatusEngine Off
"""

# crs-setup.conf of our own: CRS 3.3's defaults (anomaly scoring, inbound
# threshold 5, outbound 4), at the paranoia level of the server.
CRS_SETUP = r"""
SecDefaultAction "phase:1,log,auditlog,pass"
SecDefaultAction "phase:2,log,auditlog,pass"
SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=@PL@"
SecAction "id:900990,phase:1,nolog,pass,t:none,setvar:tx.crs_setup_version=334"
Include /usr/share/modsecurity-crs/rules/*.conf
"""

SITE = r"""
UseCanonicalName Off
@CACHE@
CacheQuickHandler @QUICK@
CacheIgnoreQueryString @IGNOREQS@
CacheEnable @PROVIDER@ /
CacheHeader On
CacheDetailHeader On

# The site compresses everything a client accepts compressed.
<Location "/">
    SetOutputFilter DEFLATE
</Location>
DeflateCompressionLevel 6

# The site's own caching policy for everything it serves, a cookie flag
# it adds to every cookie, a header on every answer.
Header set Cache-Control "public, max-age=600"
Header always edit Set-Cookie "^(.*)$" "$1; Priority=High"
Header always set X-Frame-Options "SAMEORIGIN"

<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
<Directory "@DOCROOT@/prot/own">
    Header set Referrer-Policy "no-referrer"
</Directory>
<Directory "@DOCROOT@/prot/frag">
    PdfTokenFragment safe
</Directory>
# A scope whose caching policy is set on every answer, errors too.
<Directory "@DOCROOT@/prot/always">
    Header always set Cache-Control "public, max-age=600"
</Directory>
<Directory "@DOCROOT@/open">
    Options +ExecCGI
    AddHandler cgi-script .cgi
</Directory>
"""

CACHE_DISK = r"""
CacheRoot "@ROOT@/cache"
CacheDirLevels 1
CacheDirLength 2
"""
CACHE_SOCACHE = r"""
CacheSocache "shmcb:@ROOT@/run/cache(2097152)"
CacheSocacheMaxSize 262144
"""

# A CGI that writes a PDF (type from ?ct=, none without), and notes each
# run with its query, so that a test can tell whether it ran at all.
CGI_PDF = r"""#!/usr/bin/python3
import os, sys
with open(%(ran)r, "a") as f:
    f.write(os.environ.get("QUERY_STRING", "") + "\n")
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
if %(typed)r:
    out.write(b"Content-Type: application/pdf\r\n")
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""


class Variant:
    def __init__(self, name, paranoia, provider, quick, ignoreqs,
                 tls=False):
        self.name, self.paranoia, self.provider = name, paranoia, provider
        self.quick, self.ignoreqs, self.tls = quick, ignoreqs, tls


VARIANTS = [
    Variant("pl1-disk-quick", 1, "disk", "On", "On"),
    Variant("pl1-socache", 1, "socache", "Off", "Off"),
    Variant("pl2-socache-quick", 2, "socache", "On", "Off"),
    # Over HTTPS the cookie is __Host-pdftoken_...: CRS reads that name.
    Variant("pl2-disk-tls", 2, "disk", "Off", "On", tls=True),
    # Paranoia 4 runs every rule of levels 3 and 4 too: 942432 scores two
    # special characters in one argument, which six tokens in ten held.
    Variant("pl4-disk-tls", 4, "disk", "Off", "On", tls=True),
]


def config(v):
    modsec = MODSEC + CRS_SETUP.replace("@PL@", str(v.paranoia))
    return modsec + (
        SITE.replace("@CACHE@", CACHE_DISK if v.provider == "disk"
                     else CACHE_SOCACHE)
        .replace("@QUICK@", v.quick).replace("@IGNOREQS@", v.ignoreqs)
        .replace("@PROVIDER@", v.provider))


def _owned_by_www_data(path):
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        www = pwd.getpwnam("www-data")
        os.chown(path, www.pw_uid, www.pw_gid)
    else:
        path.chmod(0o777)


def make_site(pool, v):
    """The site of variant v, started, from `pool`."""
    modules = ["unique_id", "security2", "deflate", "filter", "cache",
               "cache_" + v.provider, httpd.cgi_module()]
    if v.provider == "socache":
        modules.append("socache_shmcb")
    s = pool.make("nb-" + v.name, modules=modules, tls=v.tls)
    s.variant = v
    s.host = "localhost:%d" % s.port
    # Location and cookies name the host the reader asked for.
    s.url = lambda target: "%s://%s%s" % (s.scheme, s.host, target)
    for d in ("modsec/tmp", "modsec/data", "cache", "ran"):
        _owned_by_www_data(s.root / d)
    s.audit_log = s.root / "logs" / "modsec_audit.log"
    f = s.files = {}
    f["doc"] = s.write_pdf("prot/doc.pdf", "neighbours doc")
    f["own"] = s.write_pdf("prot/own/doc.pdf", "own referrer policy")
    f["frag"] = s.write_pdf("prot/frag/doc.pdf", "fragment page")
    f["always"] = s.write_pdf("prot/always/doc.pdf", "always header")
    f["scan"] = s.write_pdf("prot/scan", "no type, found by its bytes")
    f["open"] = s.write_pdf("open/doc.pdf", "unprotected")
    f["cgi"] = make_pdf("from a CGI", pages=2)
    s.write("data/cgi.pdf", f["cgi"], base=s.root)
    data = str(s.root / "data" / "cgi.pdf")
    for d, name, typed in (("prot", "report.cgi", True),
                           ("prot/always", "report.cgi", True),
                           ("prot", "notype.cgi", False),
                           ("open", "report.cgi", True)):
        s.write("%s/%s" % (d, name), CGI_PDF % {
            "ran": str(s.root / "ran" / ("%s-%s.log" % (d.replace("/", "-"),
                                                      name))),
            "data": data, "typed": typed}, mode=0o755)
    s.configure(config(v))
    s.start()
    return s


# --------------------------------------------------------------- helpers

BROWSER = [
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) "
                   "Gecko/20100101 Firefox/128.0"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,"
               "*/*;q=0.8"),
    ("Accept-Language", "en-US,en;q=0.5"),
    ("Accept-Encoding", "gzip, deflate"),
]


def send(s, target, cookies=None, headers=(), method="GET", browser=True):
    """One request as a browser sends it; returns (response, PDFTOKEN),
    the body decoded from gzip when the server compressed it."""
    tid = "nb-" + secrets.token_hex(6)
    given = {n.lower() for n, _ in headers}
    hdrs = [("X-Test-Id", tid)] + [
        (n, v) for n, v in (BROWSER if browser else [])
        if n.lower() not in given] + list(headers)
    r = s.request(method, target, cookies=cookies, headers=hdrs,
                  host=s.host)
    status, decision = s.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    r.gzipped = (r.get("Content-Encoding") or "").lower() == "gzip"
    if r.gzipped and r.body:
        r.body = gzip.decompress(r.body)
    return r, decision


def first_view(s, path, query="", method="GET"):
    target = path + ("?" + query if query else "")
    r, decision = send(s, target, method=method)
    # The empty 302 stays empty: nothing for mod_deflate to compress.
    assert not r.gzipped, r
    token, cookie = assert_site_redirect(s, r, path, query)
    assert decision == "redirect", decision
    return r, token, cookie


def assert_site_redirect(s, r, path, query):
    """R1 under the site's headers: the module's cookie, attribute for
    attribute.  The site's `Header always edit Set-Cookie` does not reach
    it (httpd hands an error or redirect answer's headers to mod_headers'
    error filter already moved out of err_headers_out), which the README
    says; a Priority=High appended by a later httpd would be accepted."""
    values = r.get_all("Set-Cookie")
    assert len(values) == 1, r
    unedited = re.sub(r"; Priority=High$", "", values[0])
    r.headers = [(n, unedited if n.lower() == "set-cookie" else v)
                 for n, v in r.headers]
    token, cookie = assert_redirect(s, r, path, query=query, secret=s.secret)
    # The site's Cache-Control must not stand beside the module's no-store;
    # its "always" header is there.  (A site's `Header always set
    # Cache-Control` does join the 302: mod_headers' error filter runs after
    # the module; no-store still forbids every cache to keep it.)
    if "/always/" in path:
        assert "no-store" in cache_directives(r), r
    else:
        assert r.get_all("Cache-Control") == ["no-store"], r
    assert r.get_all("X-Frame-Options") == ["SAMEORIGIN"], r
    return token, cookie


def assert_not_public(r):
    assert "public" not in cache_directives(r), r
    assert "max-age" not in cache_directives(r), r


def assert_no_pdf(r):
    """Not the document, in any form."""
    assert b"%PDF" not in r.body, r


def ran(s, name):
    """The queries a CGI ran with."""
    try:
        return (s.root / "ran" / name).read_text().splitlines()
    except FileNotFoundError:
        return []


# Token-shaped values with one '-' form that a CRS rule reads as SQL, each
# met by a real reader before the module stopped minting '-': 56
# characters, short of a token, so that the harness does not take one for
# a token when ModSecurity logs it.
LOOKALIKES = [
    ("942440", "AQAAAABr" + "A" * 16 + "--x-" + "B" * 28),
    ("942450", "AgRc5Hs8UrHMBFzn61dEDAAJ" + "-0x4E8" + "B" * 26),
    ("942210", "AlGBbGjv7Sd883ht3_ZA3zvw" + "9or3-O" + "B" * 26),
]
