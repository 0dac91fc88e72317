# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A CGI back end in a protected scope (mod_cgid under event, mod_cgi under
prefork), and the same scripts behind mod_proxy_http.

SPEC R2: the token is removed from r->args before the handler runs, so a
script never sees it and gets its other parameters intact.  SPEC section 2:
a response whose final Content-Type is a protected type, from a URL the
fixup did not judge (no .pdf), goes through the decision table after the
handler (PdfTokenDynamic redirect, the default): a first view is the R1
redirect, the follow-up with its cookie is inline, without it a forced
download; a POST answered with a PDF is always a forced download.  More
back ends (PHP-FPM, an HTTP application server, mod_asis, NPH scripts) are
in test_dynamic.py and test_dynamic_edge.py.
"""

import pytest

import httpd
import pdftoken_ref as ref
from checks import (assert_attachment, assert_download_name,
                    assert_forced_download, assert_inline, assert_redirect,
                    assert_untouched)

ECHO = r"""#!/usr/bin/python3
import os, sys
body = sys.stdin.buffer.read()
sys.stdout.write("Content-Type: text/plain\r\n\r\n")
sys.stdout.write("QUERY_STRING=%s\n" % os.environ.get("QUERY_STRING", ""))
sys.stdout.write("METHOD=%s\n" % os.environ.get("REQUEST_METHOD", ""))
sys.stdout.write("BODY=%d\n" % len(body))
"""

GEN = r"""#!/usr/bin/python3
import sys
sys.stdin.buffer.read()
data = open(%(data)r, "rb").read()
out = sys.stdout.buffer
out.write(b"Content-Type: %(ctype)s\r\n")
%(extra)s
out.write(b"Content-Length: %%d\r\n\r\n" %% len(data))
out.write(data)
"""

CONFIG = r"""
<Directory "@DOCROOT@/cgi">
    Options +ExecCGI
    SetHandler cgi-script
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/cgi-open">
    Options +ExecCGI
    SetHandler cgi-script
</Directory>
ProxyPass "/px/" "http://127.0.0.1:@PORT@/cgi-open/"
<Location "/px/">
    PdfTokenProtect On
</Location>
ScriptAlias "/sa/" "@ROOT@/sa/"
<Directory "@ROOT@/sa">
    PdfTokenProtect On
    <Files "echo">
        ForceType application/pdf
    </Files>
</Directory>
"""


def gen_script(data_path, ctype, extra_headers=()):
    extra = "\n".join('out.write(b"%s\\r\\n")' % h for h in extra_headers)
    return GEN % {"data": str(data_path), "ctype": ctype, "extra": extra}


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("cgi", modules=[httpd.cgi_module(), "proxy",
                                  "proxy_http"])
    data = s.write_pdf("data/generated.pdf", "generated", base=s.root)
    dpath = s.root / "data" / "generated.pdf"
    s.files = {"gen": data}
    s.write("cgi/echo.pdf", ECHO, mode=0o755)
    s.write("cgi/refpol.pdf", gen_script(
        dpath, "application/pdf", ["Referrer-Policy: no-referrer"]),
        mode=0o755)
    s.write("cgi/gen", gen_script(dpath, "application/pdf"), mode=0o755)
    s.write("cgi/gen-upper", gen_script(dpath, "Application/PDF; q=1"),
            mode=0o755)
    s.write("cgi/gen-inline", gen_script(
        dpath, "application/pdf",
        ["Content-Disposition: inline; filename=x.pdf"]), mode=0o755)
    s.write("cgi/html", "#!/usr/bin/python3\nprint('Content-Type: "
            "text/html\\r\\n\\r\\n<p>hi</p>')\n", mode=0o755)
    s.write("cgi-open/gen", gen_script(dpath, "application/pdf"),
            mode=0o755)
    s.write("cgi-open/echo.pdf", ECHO, mode=0o755)
    s.write("echo", ECHO, mode=0o755, base=s.root / "sa")
    s.configure(CONFIG)
    s.start()
    return s


def echo_lines(r):
    return dict(line.split("=", 1)
                for line in r.body.decode("latin-1").splitlines()
                if "=" in line)


# ------------------------------------------ the script never sees the token

def test_cgi_pdf_url_without_token_redirects(srv):
    r = srv.get("/cgi/echo.pdf?a=1")
    assert_redirect(srv, r, "/cgi/echo.pdf", query="a=1", secret=srv.secret)
    assert b"QUERY_STRING" not in r.body


def test_cgi_inline_script_sees_query_without_token(srv):
    r = srv.get("/cgi/echo.pdf?a=1&b=%20c&a=2")
    token, cookie = assert_redirect(srv, r, "/cgi/echo.pdf",
                                    query="a=1&b=%20c&a=2")
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, r2.body, content_type="text/plain")
    assert echo_lines(r2)["QUERY_STRING"] == "a=1&b=%20c&a=2"
    assert token.encode() not in r2.body


def test_cgi_inline_token_between_params_is_cut_out(srv):
    token, cookie = assert_redirect(srv, srv.get("/cgi/echo.pdf"),
                                    "/cgi/echo.pdf")
    r = srv.get("/cgi/echo.pdf?x=1&pdftoken=%s&y=2" % token, cookies=[cookie])
    assert r.status == 200, r
    assert echo_lines(r)["QUERY_STRING"] == "x=1&y=2"


def test_cgi_inline_token_only_query_becomes_empty(srv):
    token, cookie = assert_redirect(srv, srv.get("/cgi/echo.pdf"),
                                    "/cgi/echo.pdf")
    r = srv.get("/cgi/echo.pdf?pdftoken=" + token, cookies=[cookie])
    assert r.status == 200, r
    assert echo_lines(r)["QUERY_STRING"] == ""


def test_cgi_fallback_script_sees_query_without_token(srv):
    token, _ = assert_redirect(srv, srv.get("/cgi/echo.pdf"),
                               "/cgi/echo.pdf")
    r = srv.get("/cgi/echo.pdf?q=z&pdftoken=" + token)
    assert_attachment(r, None)
    assert echo_lines(r)["QUERY_STRING"] == "q=z"
    assert token.encode() not in r.body


def test_cgi_range_continuation_script_sees_query_without_token(srv):
    token, _ = assert_redirect(srv, srv.get("/cgi/echo.pdf"),
                               "/cgi/echo.pdf")
    r = srv.get("/cgi/echo.pdf?pdftoken=%s&k=v" % token,
                headers=[("Range", "bytes=0-10000")])
    # The range asks for more than the whole (short) echo: served whole.
    assert r.status == 200, r
    assert r.get("Location") is None
    assert token.encode() not in r.body
    assert b"QUERY_STRING=k=v\n" in r.body


def test_cgi_scriptalias_with_forcetype_pdf_is_protected(srv):
    r = srv.get("/sa/echo?m=1")
    token, cookie = assert_redirect(srv, r, "/sa/echo", query="m=1",
                                    secret=srv.secret)
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert r2.status == 200, r2
    assert echo_lines(r2)["QUERY_STRING"] == "m=1"


def test_cgi_post_to_pdf_script_is_not_redirected(srv):
    r = srv.request("POST", "/cgi/echo.pdf?x=1", body=b"field=value")
    assert r.status == 200, r
    assert r.get("Location") is None and r.get_all("Set-Cookie") == []
    lines = echo_lines(r)
    assert lines["QUERY_STRING"] == "x=1"
    assert lines["METHOD"] == "POST" and lines["BODY"] == "11"


def test_cgi_referrer_policy_set_by_script_is_kept(srv):
    r = srv.get("/cgi/refpol.pdf")
    token, cookie = assert_redirect(srv, r, "/cgi/refpol.pdf")
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files["gen"], referrer_policy="no-referrer")


# ------------------------------- PDF output from a URL the fixup did not judge

def test_cgi_pdf_output_from_url_without_pdf_redirects_first(srv):
    r = srv.get("/cgi/gen?n=1")
    assert_redirect(srv, r, "/cgi/gen", query="n=1", secret=srv.secret)


def test_cgi_pdf_output_follow_up_with_cookie_is_inline(srv):
    r = srv.get("/cgi/gen?n=1")
    token, cookie = assert_redirect(srv, r, "/cgi/gen", query="n=1")
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["gen"])


def test_cgi_pdf_output_follow_up_without_cookie_is_forced_download(srv):
    r = srv.get("/cgi/gen")
    token, cookie = assert_redirect(srv, r, "/cgi/gen")
    r2 = srv.get(r.location_target())
    assert_attachment(r2, srv.files["gen"])
    assert_download_name(r2, "/cgi/gen")
    assert r2.get_all("Set-Cookie") == []


def test_cgi_pdf_output_with_params_and_upper_case_redirects(srv):
    r = srv.get("/cgi/gen-upper")
    token, cookie = assert_redirect(srv, r, "/cgi/gen-upper")
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["gen"])


def test_cgi_pdf_output_declaring_inline_still_redirects(srv):
    r = srv.get("/cgi/gen-inline")
    token, cookie = assert_redirect(srv, r, "/cgi/gen-inline")
    # Without the cookie: a download under the URL's name, not the
    # script's own x.pdf.
    r2 = srv.get(r.location_target())
    assert_attachment(r2, srv.files["gen"])
    assert_download_name(r2, "/cgi/gen-inline")


def test_cgi_pdf_output_with_minted_token_and_cookie_is_inline(srv):
    token = ref.mint(srv.secret, "/cgi/gen", lifetime=30)
    r = srv.get("/cgi/gen?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert_inline(r, srv.files["gen"])


def test_cgi_pdf_output_with_token_for_another_path_redirects(srv):
    token = ref.mint(srv.secret, "/cgi/gen-upper", lifetime=30)
    r = srv.get("/cgi/gen?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert_redirect(srv, r, "/cgi/gen")


def test_cgi_pdf_output_head_redirects(srv):
    r = srv.head("/cgi/gen")
    assert_redirect(srv, r, "/cgi/gen")


def test_cgi_pdf_output_to_post_is_forced_download(srv):
    r = srv.request("POST", "/cgi/gen", body=b"a=1")
    assert_forced_download(r, srv.files["gen"])
    assert_download_name(r, "/cgi/gen")


def test_cgi_html_output_in_protected_scope_is_untouched(srv):
    r = srv.get("/cgi/html")
    assert_untouched(r)
    assert r.get("Content-Type").startswith("text/html")
    assert b"<p>hi</p>" in r.body


def test_cgi_pdf_output_in_unprotected_scope_is_untouched(srv):
    r = srv.get("/cgi-open/gen")
    assert_untouched(r, body=srv.files["gen"])
    assert r.get("Content-Type") == "application/pdf"


# ------------------------------------------------- a proxied back end

def test_proxy_pdf_url_without_token_redirects(srv):
    r = srv.get("/px/echo.pdf?a=1")
    assert_redirect(srv, r, "/px/echo.pdf", query="a=1", secret=srv.secret)


def test_proxy_back_end_sees_query_without_token(srv):
    r = srv.get("/px/echo.pdf?a=1&b=2")
    token, cookie = assert_redirect(srv, r, "/px/echo.pdf", query="a=1&b=2")
    r2 = srv.get(r.location_target(), cookies=[cookie])
    assert r2.status == 200, r2
    assert echo_lines(r2)["QUERY_STRING"] == "a=1&b=2"
    assert token.encode() not in r2.body


def test_proxy_pdf_from_url_without_pdf_redirects_then_inline(srv):
    r = srv.get("/px/gen")
    token, cookie = assert_redirect(srv, r, "/px/gen", secret=srv.secret)
    assert_inline(srv.get(r.location_target(), cookies=[cookie]),
                  srv.files["gen"])


def test_proxy_pdf_from_url_without_pdf_without_cookie_is_download(srv):
    r = srv.get("/px/gen")
    token, cookie = assert_redirect(srv, r, "/px/gen")
    assert_attachment(srv.get(r.location_target()), srv.files["gen"])
