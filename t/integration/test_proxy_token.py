# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The token never reaches a proxied back end (SPEC R2, issue 19 item 7).

mod_proxy does not always build the back end's URL from r->args, which the
module cleans before the handler runs: under `ProxyPass ... nocanon` it
sends the client's own request URI, and `RewriteRule ... [P,NE]` puts the
query into r->filename when it rewrites (in server context before the
module's fixup; per directory, in <Directory> or <Location>, in a fixup of
its own).  Every one of them must send the application's query without the
token parameter: the other parameters in order, byte for byte (`%2F`, `+`,
`%41`, a flag without `=`, an empty value), on every request of a visit
(the first view, the follow-up with its cookie, the fallback download, the
Range continuation), over HTTP/1.1 and over HTTP/2 (h2c, which mod_http2
serves under both MPMs: test_http2.py).

The back end records each request line it receives; each test tags its
requests with a marker parameter of its own.  The ordinary ProxyPass is
covered in test_dynamic.py and test_cgi.py.
"""

import secrets

import pytest

import backends
import h2client
from checks import assert_attachment, assert_inline, assert_redirect
from samplepdf import make_pdf

CONFIG = r"""
Protocols h2c http/1.1

ProxyPass "/nc/" "http://127.0.0.1:@BACKEND@/" nocanon
<Location "/nc/">
    PdfTokenProtect On
</Location>

RewriteEngine On
RewriteRule "^/rwp/(.*)$" "http://127.0.0.1:@BACKEND@/$1" [P,NE]
<Location "/rwp/">
    PdfTokenProtect On
</Location>

<Directory "@DOCROOT@/rwd">
    PdfTokenProtect On
    RewriteEngine On
    RewriteRule "^(.*)$" "http://127.0.0.1:@BACKEND@/$1" [P,NE]
</Directory>

<Location "/rwl/">
    PdfTokenProtect On
    RewriteEngine On
    RewriteCond "%{REQUEST_URI}" "^/rwl/(.*)$"
    RewriteRule "^" "http://127.0.0.1:@BACKEND@/%1" [P,NE]
</Location>
"""

# How each front URL reaches the back end.
PREFIXES = {
    "nocanon": "/nc",
    "rewrite-server": "/rwp",
    "rewrite-directory": "/rwd",
    "rewrite-location": "/rwl",
}

# Back-end paths: judged after the handler (no .pdf), or by the fixup.
PATHS = {
    "dynamic": "/reports/7",
    "pdf-url": "/files/doc.pdf",
}

# The application's own query: raw bytes that a re-encoding would change.
QUERY = "a=1&b=x%2Fy&c=p+q&d=%41&e&f=&g=%C3%A9"

PROTOCOLS = ["http/1.1", "h2c"]


@pytest.fixture(scope="module")
def env(pool):
    s = pool.make("proxy-token", modules=["proxy", "proxy_http", "rewrite",
                                           "http2"])
    back = backends.HttpBackend()
    s.pdf = make_pdf("proxied, never with a token", pages=2)
    backends.add_report_routes(back, s.pdf)

    @back.route("/files/doc.pdf")
    def doc(h, q, head_only):
        h.send_body(200, [("Content-Type", "application/pdf")], s.pdf,
                    head_only)

    # <Directory> applies to a path below it only if the directory exists.
    s.write("rwd/placeholder.txt", "x\n")
    back.start()
    try:
        s.configure(CONFIG.replace("@BACKEND@", str(back.port)))
        s.start()
        s.back = back
        yield s
    finally:
        back.stop()


def request(s, proto, target, cookies=None, headers=()):
    """One request over `proto` on a connection of its own:
    (response, PDFTOKEN)."""
    tid = "px-" + secrets.token_hex(6)
    headers = [("X-Test-Id", tid)] + list(headers)
    if proto == "h2c":
        with h2client.H2Client(s, "h2c") as c:
            r = c.request("GET", target, headers=headers, cookies=cookies)
        assert r.protocol == "HTTP/2", r
    else:
        r = s.get(target, headers=headers, cookies=cookies)
    status, decision = s.access_log_entry(tid)
    assert int(status) == r.status, (status, r)
    return r, decision


def marked(query):
    m = "m" + secrets.token_hex(6)
    return m, query + "&mark=" + m


def back_end_saw(s, m):
    """The request targets the back end got with marker m."""
    return [line.split(" ")[1] for line in s.back.lines_with("mark=" + m)]


def assert_clean(s, m, back_path, query, at_least):
    """Every request that reached the back end carried exactly the
    application's query, and there were at least `at_least` of them."""
    seen = back_end_saw(s, m)
    assert len(seen) >= at_least, \
        "the back end got %d requests with mark=%s: %r" % (len(seen), m,
                                                           seen)
    want = back_path + "?" + query
    leaked = [t for t in seen if "pdftoken" in t]
    assert not leaked, "the token reached the back end: %r" % leaked
    assert all(t == want for t in seen), \
        "the back end got %r, want only %r" % (seen, want)


def first_visit(s, proto, path, query):
    r, decision = request(s, proto, path + "?" + query)
    token, cookie = assert_redirect(s, r, path, query=query,
                                    secret=s.secret)
    assert decision == "redirect", decision
    return r, token, cookie


def cases():
    out = []
    for route, prefix in PREFIXES.items():
        for kind, back_path in PATHS.items():
            for proto in PROTOCOLS:
                out.append(pytest.param(prefix, back_path, proto,
                                        id="%s-%s-%s" % (route, kind,
                                                         proto)))
    return out


# The fixup answers a first view of a .pdf URL before mod_proxy runs, so
# only the dynamic one reaches the back end on R1.
def first_view_requests(back_path):
    return 0 if back_path.endswith(".pdf") else 1


@pytest.mark.parametrize("prefix,back_path,proto", cases())
def test_follow_up_with_cookie_sends_the_query_without_the_token(
        env, prefix, back_path, proto):
    path = prefix + back_path
    m, query = marked(QUERY)
    r, token, cookie = first_visit(env, proto, path, query)
    r2, decision = request(env, proto, r.location_target(),
                           cookies=[cookie])
    assert_inline(r2, env.pdf)
    assert decision == "pass", decision
    assert_clean(env, m, back_path, query,
                 first_view_requests(back_path) + 1)


@pytest.mark.parametrize("prefix,back_path,proto", cases())
def test_fallback_download_sends_the_query_without_the_token(
        env, prefix, back_path, proto):
    path = prefix + back_path
    m, query = marked(QUERY)
    r, token, cookie = first_visit(env, proto, path, query)
    r2, decision = request(env, proto, r.location_target())
    assert_attachment(r2, env.pdf)
    assert decision == "fallback", decision
    assert_clean(env, m, back_path, query,
                 first_view_requests(back_path) + 1)


@pytest.mark.parametrize("prefix,back_path,proto", cases())
def test_range_continuation_sends_the_query_without_the_token(
        env, prefix, back_path, proto):
    path = prefix + back_path
    m, query = marked(QUERY)
    r, token, cookie = first_visit(env, proto, path, query)
    r2, decision = request(env, proto, r.location_target(),
                           headers=[("Range", "bytes=0-99")])
    assert r2.status in (200, 206), r2
    assert r2.get("Location") is None and r2.get_all("Set-Cookie") == [], r2
    assert decision == "range", decision
    assert_clean(env, m, back_path, query,
                 first_view_requests(back_path) + 1)


@pytest.mark.parametrize("prefix,back_path,proto", cases())
def test_token_between_parameters_is_cut_out(env, prefix, back_path, proto):
    """A link that carries the token first and the application's
    parameters around it: the back end gets them in order, without it."""
    path = prefix + back_path
    m, query = marked(QUERY)
    r, token, cookie = first_visit(env, proto, path, query)
    head, tail = query.split("&c=", 1)
    target = "%s?pdftoken=%s&%s&c=%s" % (path, token, head, tail)
    r2, decision = request(env, proto, target, cookies=[cookie])
    assert_inline(r2, env.pdf)
    assert decision == "pass", decision
    assert_clean(env, m, back_path, query,
                 first_view_requests(back_path) + 1)


@pytest.mark.parametrize("prefix", sorted(PREFIXES.values()))
def test_query_of_only_the_token_reaches_the_back_end_empty(env, prefix):
    """A URL whose whole query is the token: the back end gets the path
    alone, or with an empty query, never the token."""
    path = prefix + "/reports/7"
    r, decision = request(env, "http/1.1", path)
    token, cookie = assert_redirect(env, r, path, secret=env.secret)
    before = len(env.back.all_requests())
    r2, decision = request(env, "http/1.1", r.location_target(),
                           cookies=[cookie])
    assert_inline(r2, env.pdf)
    seen = [line.split(" ")[1] for line in env.back.all_requests()[before:]]
    assert seen and all(t in ("/reports/7", "/reports/7?") for t in seen), \
        seen
