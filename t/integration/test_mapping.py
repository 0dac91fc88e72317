# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 2: which requests are PDFs, whatever maps the URL to them.

.htaccess, ForceType, upper-case suffixes, DirectoryIndex, mod_rewrite (at
server level and per directory), Alias, MultiViews, subrequests and error
documents.  The token is bound to the URL path the browser asked for.
"""

import pytest

import pdftoken_ref as ref
from samplepdf import make_pdf
from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_untouched)

CONFIG = r"""
<Directory "@DOCROOT@/ht">
    AllowOverride All
</Directory>
<Directory "@DOCROOT@/htconf">
    AllowOverride All
    PdfTokenProtect On
    PdfTokenTimeout 20
</Directory>

<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    <Files "report">
        ForceType application/pdf
    </Files>
    <Files "plain.PDF">
        ForceType text/plain
    </Files>
    <Files "page.shtml">
        Options +Includes
        SetOutputFilter INCLUDES
    </Files>
</Directory>

<Directory "@DOCROOT@/dir">
    PdfTokenProtect On
    DirectoryIndex index.pdf
</Directory>

RewriteEngine On
RewriteRule "^/pretty$" "/prot/doc.pdf" [PT]
<Directory "@DOCROOT@/rw">
    PdfTokenProtect On
    RewriteEngine On
    RewriteRule "^pretty$" "doc.pdf" [L]
</Directory>

Alias "/aliased" "@ROOT@/outside"
<Directory "@ROOT@/outside">
    PdfTokenProtect On
</Directory>

<Directory "@DOCROOT@/mv">
    PdfTokenProtect On
    Options +MultiViews
</Directory>

<Directory "@DOCROOT@/late">
    PdfTokenProtect On
    <Files "retyped.txt">
        Header set Content-Type application/pdf
    </Files>
</Directory>

<Directory "@DOCROOT@/errdoc">
    PdfTokenProtect On
    ErrorDocument 302 "moved, says the admin"
</Directory>
<Directory "@DOCROOT@/errlocal">
    PdfTokenProtect On
    ErrorDocument 302 /errors/moved.html
</Directory>

<Directory "@DOCROOT@/typemap">
    PdfTokenProtect On
    AddHandler type-map .var
</Directory>

<Directory "@DOCROOT@/dav">
    PdfTokenProtect On
    DAV On
</Directory>

ExtFilterDefine html-to-pdf mode=output intype=text/html \
    outtype=application/pdf cmd="/bin/cat"
<Directory "@DOCROOT@/extfilter">
    PdfTokenProtect On
    SetOutputFilter html-to-pdf
</Directory>

# A Content-Type header that httpd sends while r->content_type stays unset:
# a mod_lua handler's headers_out, mod_headers' add, merge and append.
<Directory "@DOCROOT@/lua">
    PdfTokenProtect On
    SetHandler lua-script
</Directory>
<Directory "@DOCROOT@/hdrtype">
    PdfTokenProtect On
    <Files "add">
        Header add Content-Type application/pdf
    </Files>
    <Files "merge">
        Header merge Content-Type application/pdf
    </Files>
    <Files "append">
        Header append Content-Type application/pdf
    </Files>
</Directory>

# A type given on the way, before the module's fixup: mod_rewrite's [T=]
# (per directory, in its own fixup).
<Directory "@DOCROOT@/rwtype">
    PdfTokenProtect On
    RewriteEngine On
    RewriteRule "\.txt$" - [T=application/pdf]
</Directory>

ErrorDocument 404 /errors/404.pdf
<Directory "@DOCROOT@/errors">
    PdfTokenProtect On
</Directory>
"""


# r->content_type unset, the type in a header table: httpd sends that header
# as it is.
LUA_HANDLER = """
function handle(r)
  %s['Content-Type'] = '%s'
  local f = io.open(r.filename .. ".body", "rb")
  r:write(f:read("*a"))
  f:close()
  return apache2.OK
end
"""
LUA_TABLES = {"out": ("r.headers_out", "application/pdf"),
              "err": ("r.err_headers_out", "application/pdf"),
              "html": ("r.headers_out", "text/html")}


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("mapping", modules=["rewrite", "negotiation", "include",
                                       "dav", "dav_fs", "ext_filter", "lua"])
    f = s.files = {}
    f["ht"] = s.write_pdf("ht/doc.pdf", "ht")
    s.write("ht/.htaccess", "PdfTokenProtect On\n")
    f["ht/sub"] = s.write_pdf("ht/sub/doc.pdf", "ht-sub")
    s.write("ht/sub/.htaccess", "PdfTokenProtect Off\n")
    f["ht/named"] = s.write_pdf("ht/named/doc.pdf", "ht-named")
    s.write("ht/named/.htaccess", "PdfTokenName fromhtaccess\n"
            "PdfTokenTimeout 25\n")
    f["htconf"] = s.write_pdf("htconf/doc.pdf", "htconf")
    s.write("htconf/.htaccess", "PdfTokenName viahtaccess\n")
    f["doc"] = s.write_pdf("prot/doc.pdf", "doc")
    f["report"] = s.write_pdf("prot/report", "report")
    f["upper"] = s.write_pdf("prot/UPPER.PDF", "upper")
    f["mixed"] = s.write_pdf("prot/Mixed.Pdf", "mixed")
    f["plain"] = s.write_pdf("prot/plain.PDF", "plain")
    f["small"] = s.write("prot/small.pdf", b"%PDF-1.4 tiny\n").read_bytes()
    s.write("prot/page.shtml",
            'before<!--#include virtual="/prot/small.pdf" -->after\n')
    f["index"] = s.write_pdf("dir/index.pdf", "index")
    f["rw"] = s.write_pdf("rw/doc.pdf", "rw")
    f["outside"] = s.write_pdf("doc.pdf", "outside", base=s.root / "outside")
    f["mv"] = s.write_pdf("mv/manual.pdf", "manual")
    f["404"] = s.write_pdf("errors/404.pdf", "not found")
    f["errdoc"] = s.write_pdf("errdoc/doc.pdf", "errdoc")
    f["retyped"] = s.write_pdf("late/retyped.txt", "retyped")
    f["pdftxt"] = s.write_pdf("late/pdf.txt", "a PDF named .txt")
    f["plaintxt"] = b"plain text, not a PDF\n" * 20
    s.write("late/plain.txt", f["plaintxt"])
    f["errlocal"] = s.write_pdf("errlocal/doc.pdf", "errlocal")
    s.write("errors/moved.html", "<p>the admin's moved page</p>\n")
    # mod_negotiation keeps a Body: variant in memory: a small PDF.
    f["typemap"] = make_pdf("type map body", pages=1, padding=0)
    s.write("typemap/doc.var", b"Content-Type: application/pdf\n"
            b"Body:----end----\n" + f["typemap"] + b"----end----\n")
    f["dav"] = s.write_pdf("dav/doc.pdf", "dav")
    f["extfilter"] = s.write_pdf("extfilter/page.html", "an HTML name")
    # A newline first: a PDF viewer takes it, the module's %PDF- sniff
    # does not, so only the header can make these PDFs.
    f["typeless"] = b"junk\n" + make_pdf("typeless", pages=1)
    for name, table_type in LUA_TABLES.items():
        s.write("lua/" + name, LUA_HANDLER % table_type)
        s.write("lua/%s.body" % name, f["typeless"])
    f["html-pdf"] = make_pdf("an HTML page", pages=1)
    s.write("lua/html.body", f["html-pdf"])
    for name in ("add", "merge", "append"):
        s.write("hdrtype/" + name, f["typeless"])
    f["rwtype"] = s.write_pdf("rwtype/notes.txt", "typed by mod_rewrite")
    s.configure(CONFIG)
    s.start()
    return s


def follow(srv, r, cookie):
    return srv.get(r.location_target(), cookies=[cookie])


# ------------------------------------------------------------ .htaccess

def test_htaccess_protect_on_redirects(srv):
    r = srv.get("/ht/doc.pdf")
    token, cookie = assert_redirect(srv, r, "/ht/doc.pdf", secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["ht"])


def test_htaccess_protect_off_in_subdirectory(srv):
    assert_untouched(srv.get("/ht/sub/doc.pdf"), body=srv.files["ht/sub"])


def test_htaccess_settings_merge_with_parent_htaccess(srv):
    r = srv.get("/ht/named/doc.pdf")
    token, cookie = assert_redirect(srv, r, "/ht/named/doc.pdf",
                                    name="fromhtaccess", timeout=25,
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["ht/named"])


def test_htaccess_overrides_only_what_it_sets(srv):
    # Protect and timeout from <Directory>, the name from .htaccess.
    r = srv.get("/htconf/doc.pdf")
    assert_redirect(srv, r, "/htconf/doc.pdf", name="viahtaccess",
                    timeout=20, secret=srv.secret)


# ----------------------------------------------- content type and suffix

def test_forcetype_pdf_on_file_without_extension_is_protected(srv):
    r = srv.get("/prot/report")
    token, cookie = assert_redirect(srv, r, "/prot/report",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["report"])


def test_forcetype_pdf_file_without_cookie_is_attachment(srv):
    token, _ = assert_redirect(srv, srv.get("/prot/report"), "/prot/report")
    assert_attachment(srv.get("/prot/report?pdftoken=" + token),
                      srv.files["report"], filename="report.pdf")


@pytest.mark.parametrize("path,key", [("/prot/UPPER.PDF", "upper"),
                                      ("/prot/Mixed.Pdf", "mixed")])
def test_pdf_suffix_in_any_case_is_protected(srv, path, key):
    r = srv.get(path)
    token, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    r2 = follow(srv, r, cookie)
    assert r2.status == 200 and r2.body == srv.files[key]


def test_pdf_suffix_protects_whatever_the_content_type(srv):
    r = srv.get("/prot/plain.PDF")
    token, cookie = assert_redirect(srv, r, "/prot/plain.PDF",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["plain"],
                  content_type="text/plain")


# ------------------------------------------------------- DirectoryIndex

def test_directory_index_pdf_redirects_to_directory_url(srv):
    r = srv.get("/dir/")
    assert r.status == 302, r
    token = r.location_token()
    assert r.get("Location") == srv.url("/dir/?pdftoken=%s#" % token)
    assert_redirect(srv, r, "/dir/", secret=srv.secret)


def test_directory_index_token_bound_to_directory_path(srv):
    token = srv.get("/dir/").location_token()
    assert ref.verifies(srv.secret, token, "/dir/")


def test_directory_index_follow_up_is_inline(srv):
    r = srv.get("/dir/?a=1")
    token, cookie = assert_redirect(srv, r, "/dir/", query="a=1",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["index"])


def test_directory_index_file_by_its_own_name(srv):
    r = srv.get("/dir/index.pdf")
    token, cookie = assert_redirect(srv, r, "/dir/index.pdf",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["index"])


# ------------------------------------------------------------ mod_rewrite

def test_server_rewrite_to_pdf_redirects_to_pretty_url(srv):
    r = srv.get("/pretty?x=1")
    assert_redirect(srv, r, "/pretty", query="x=1", secret=srv.secret)


def test_server_rewrite_to_pdf_follow_up_is_inline(srv):
    r = srv.get("/pretty")
    token, cookie = assert_redirect(srv, r, "/pretty", secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["doc"])


def test_server_rewrite_token_of_target_path_is_not_valid(srv):
    token = ref.mint(srv.secret, "/prot/doc.pdf", lifetime=30)
    r = srv.get("/pretty?pdftoken=" + token,
                cookies=[ref.cookie_pair(token)])
    assert_redirect(srv, r, "/pretty", secret=srv.secret)


def test_directory_rewrite_to_pdf_redirects_to_pretty_url(srv):
    r = srv.get("/rw/pretty?y=2")
    token, cookie = assert_redirect(srv, r, "/rw/pretty", query="y=2",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["rw"])


def test_directory_rewrite_without_cookie_is_attachment(srv):
    token, _ = assert_redirect(srv, srv.get("/rw/pretty"), "/rw/pretty")
    r = srv.get("/rw/pretty?pdftoken=" + token)
    assert_attachment(r, srv.files["rw"])


# ------------------------------------------------------------------ Alias

def test_alias_to_protected_directory_redirects(srv):
    r = srv.get("/aliased/doc.pdf")
    token, cookie = assert_redirect(srv, r, "/aliased/doc.pdf",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["outside"])


# ------------------------------------------------------------- MultiViews

def test_multiviews_negotiated_pdf_redirects_to_requested_url(srv):
    r = srv.get("/mv/manual")
    token, cookie = assert_redirect(srv, r, "/mv/manual", secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["mv"])


# ---------------------------------------- subrequests and error documents

def test_subrequest_for_pdf_is_not_redirected(srv):
    r = srv.get("/prot/page.shtml")
    assert_untouched(r)
    assert r.body == b"before" + srv.files["small"] + b"after\n"


def test_error_document_pdf_is_not_redirected(srv):
    r = srv.get("/prot/missing.txt")
    assert r.status == 404, r
    assert r.get("Location") is None
    assert r.get_all("Set-Cookie") == []


# ------------------------------------------------- ErrorDocument 302

@pytest.mark.parametrize("scope", ["errdoc", "errlocal"])
def test_errordocument_302_does_not_replace_the_redirect(srv, scope):
    """The module's 302 sets its own (empty) body, so an ErrorDocument for
    302, text or local page, can neither add a body nor turn the redirect
    into an internal one."""
    path = "/%s/doc.pdf" % scope
    r = srv.get(path)
    token, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files[scope])


# --------------------------------------- a type set after the fixup

def test_static_file_retyped_to_pdf_after_the_fixup_takes_the_token_step(srv):
    """A .txt file is text/plain at fixup time, so the fixup lets it pass;
    mod_headers then names it application/pdf in its output filter.  The
    module's filter sees the final type and judges it like a static PDF
    (SPEC section 2): the decline path keeps its filter for this."""
    r = srv.get("/late/retyped.txt")
    token, cookie = assert_redirect(srv, r, "/late/retyped.txt",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["retyped"])
    assert_attachment(srv.get(r.location_target()), srv.files["retyped"],
                      filename="retyped.txt.pdf")


def test_static_non_pdf_beside_it_is_untouched(srv):
    r = srv.get("/late/plain.txt")
    assert_untouched(r, body=srv.files["plaintxt"])
    assert r.get("Content-Type").startswith("text/plain"), r


def test_pdf_served_as_text_plain_takes_the_token_step(srv):
    """WebKitGTK renders a text/plain body that begins with %PDF- as a PDF,
    and Firefox a binary one named .pdf (render matrix c337-c341): text
    that is a PDF is judged by its first bytes."""
    r = srv.get("/late/pdf.txt")
    token, cookie = assert_redirect(srv, r, "/late/pdf.txt",
                                    secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files["pdftxt"],
                  content_type="text/plain")


# ------------------------------- other handlers and filters that serve PDFs

# (URL path, srv.files key) of answers that only the filter can judge.
MADE_LATE = [
    # A type map can hold its variants' bytes (Body:): mod_negotiation's
    # handler serves them as application/pdf at a .var URL.
    ("/typemap/doc.var", "typemap"),
    # mod_dav's own handler answers GET under DAV On.
    ("/dav/doc.pdf", "dav"),
    # mod_ext_filter's outtype turns text/html into application/pdf in a
    # filter that runs ahead of the module's.
    ("/extfilter/page.html", "extfilter"),
    # httpd sends a Content-Type from headers_out or err_headers_out as it
    # is when r->content_type is unset: a mod_lua handler's tables;
    # mod_headers' add, merge and append, which unlike set leave
    # r->content_type alone.  The body has bytes before %PDF-, so only the
    # sent type makes it a PDF.
    ("/lua/out", "typeless"),
    ("/lua/err", "typeless"),
    ("/hdrtype/add", "typeless"),
    ("/hdrtype/merge", "typeless"),
    ("/hdrtype/append", "typeless"),
]


@pytest.fixture(scope="module")
def magic_srv(pool):
    """mod_mime_magic, server-wide (its only context), types a file without
    an extension by its first bytes, before any fixup."""
    s = pool.make("magic", modules=["mime_magic"])
    s.files = {"magic": s.write_pdf("prot/scan", "typed by mod_mime_magic")}
    # Debian's /etc/apache2/magic has this line; that file comes with the
    # apache2 package, which the integration tests do not need.
    s.write("magic", "0\tstring\t\t%PDF-\t\tapplication/pdf\n",
            base=s.root)
    s.configure('MimeMagicFile "@ROOT@/magic"\n'
                '<Directory "@DOCROOT@/prot">\n'
                '    PdfTokenProtect On\n'
                '</Directory>\n')
    s.start()
    return s


@pytest.mark.parametrize("server,path,key", [
    ("srv", "/rwtype/notes.txt", "rwtype"),
    ("magic_srv", "/prot/scan", "magic")])
def test_pdf_typed_by_another_module_takes_the_token_step(
        request, server, path, key):
    """Typed application/pdf before the fixup by a module other than
    mod_mime: mod_rewrite's [T=], mod_mime_magic."""
    s = request.getfixturevalue(server)
    r = s.get(path)
    token, cookie = assert_redirect(s, r, path, secret=s.secret)
    assert_inline(follow(s, r, cookie), s.files[key])


@pytest.mark.parametrize("path,key", MADE_LATE)
def test_pdf_made_after_the_fixup_takes_the_token_step(srv, path, key):
    r = srv.get(path)
    token, cookie = assert_redirect(srv, r, path, secret=srv.secret)
    assert_inline(follow(srv, r, cookie), srv.files[key])


def test_html_type_header_without_content_type_is_untouched(srv):
    """The other way round: the body begins with %PDF-, but the type the
    browser gets is text/html, which no engine sniffs.  Judged by its sent
    type, the answer is not PDF-like and passes byte for byte."""
    r = srv.get("/lua/html")
    assert_untouched(r, body=srv.files["html-pdf"])
    assert r.get_all("Content-Type") == ["text/html"], r
