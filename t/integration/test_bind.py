# Licensed under the Apache License, Version 2.0; see LICENSE.
"""PdfTokenBindAddress: tokens signed over the document path and the
client's address (README, Limitations: WebKitGTK's cookie jar takes a
__Host- cookie that a sibling host or plain HTTP planted).

The planter fetches a real token and its cookie from its own address
(127.0.0.2, still loopback) and the victim (127.0.0.1) presents both: with
the directive the token does not verify for the victim's address, and the
matching cookie beside it turns the answer into the fallback (a download,
never inline, never a redirect that a reader whose address changes would
go round in).  Without the cookie it heals like any invalid token (R4).
Off keeps SPEC's token: any address may use it.  auto, the default, binds
only the requests whose User-Agent is an engine measured to ignore the
__Host- prefix (WebKitGTK; t/browser's h3-h6): a link cannot change the
User-Agent the victim's browser sends, and the planter's token, minted for
another address or for none, does not verify for the victim's.  Behind a
proxy, mod_remoteip's address is the one bound.
"""

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline, assert_redirect

VICTIM, PLANTER = "127.0.0.1", "127.0.0.2"

# User-Agents as the engines send them.  WEBKITGTK and CHROMIUM were read
# off Debian 12's WebKitGTK 2.50.6 (MiniBrowser) and Chromium 156; the
# others are the published forms of the browsers that keep __Host-.
WEBKITGTK = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 "
             "(KHTML, like Gecko) Version/60.5 Safari/605.1.15")
UNBOUND_AGENTS = {
    "chromium": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
                "(KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    "headless-chromium": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/"
                         "537.36 (KHTML, like Gecko) HeadlessChrome/"
                         "156.0.0.0 Safari/537.36",
    "firefox": "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 "
               "Firefox/153.0",
    "safari-mac": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) "
                  "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.0 "
                  "Safari/605.1.15",
    "safari-iphone": "Mozilla/5.0 (iPhone; CPU iPhone OS 26_0 like Mac OS "
                     "X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
                     "Version/26.0 Mobile/15E148 Safari/604.1",
    "curl": "curl/7.88.1",
    "none": None,
}

CONFIG = r"""
<Directory "@DOCROOT@/bind">
    PdfTokenProtect On
    PdfTokenBindAddress On
</Directory>
<Directory "@DOCROOT@/bind/deny">
    PdfTokenFallback deny
</Directory>
<Directory "@DOCROOT@/bind/off">
    PdfTokenBindAddress Off
</Directory>
<Directory "@DOCROOT@/plain">
    PdfTokenProtect On
</Directory>
<Directory "@DOCROOT@/plain/auto">
    PdfTokenBindAddress AUTO
</Directory>
<If "%{HTTP_USER_AGENT} =~ /ExampleBrowser/">
    PdfTokenBindAddress On
</If>
"""

PROXIED = r"""
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
<Directory "@DOCROOT@/bind">
    PdfTokenProtect On
    PdfTokenBindAddress On
</Directory>
"""


@pytest.fixture(scope="module")
def srv(pool):
    s = pool.make("bind")
    s.files = {"bind": s.write_pdf("bind/doc.pdf", "bound doc"),
               "deny": s.write_pdf("bind/deny/doc.pdf", "bound deny doc"),
               "off": s.write_pdf("bind/off/doc.pdf", "unbound doc"),
               "plain": s.write_pdf("plain/doc.pdf", "plain doc"),
               "auto": s.write_pdf("plain/auto/doc.pdf", "auto doc")}
    s.configure(CONFIG)
    s.start()
    return s


def bound(path, address):
    return path.encode() + b"\0" + address.encode()


def first(srv, path, source=VICTIM, headers=()):
    r = srv.get(path, source=source, headers=list(headers))
    token, cookie = assert_redirect(srv, r, path)
    return r, token, cookie


def test_token_is_signed_over_path_and_client_address(srv):
    r = srv.get("/bind/doc.pdf")
    assert_redirect(srv, r, "/bind/doc.pdf", secret=srv.secret,
                    token_path=bound("/bind/doc.pdf", VICTIM))
    token = r.location_token("pdftoken")
    assert not ref.verifies(srv.secret, token, b"/bind/doc.pdf")


def test_a_forwarded_for_header_cannot_choose_the_address(srv):
    """Without mod_remoteip the connection's address is bound, whatever
    X-Forwarded-For claims: a planter cannot mint for the victim's."""
    r = srv.get("/bind/doc.pdf", source=PLANTER,
                headers=[("X-Forwarded-For", VICTIM)])
    assert_redirect(srv, r, "/bind/doc.pdf", secret=srv.secret,
                    token_path=bound("/bind/doc.pdf", PLANTER))


def test_reader_on_one_address_gets_it_inline(srv):
    r, token, cookie = first(srv, "/bind/doc.pdf")
    r2 = srv.get(r.location_target(), cookies=[cookie],
                 headers=[("X-Test-Id", "bind-pass")])
    assert_inline(r2, srv.files["bind"])
    assert srv.access_log_entry("bind-pass") == ("200", "pass")


def test_planted_token_and_cookie_from_another_address_is_a_download(srv):
    r, token, cookie = first(srv, "/bind/doc.pdf", source=PLANTER)
    at = srv.error_log_size()
    r2 = srv.get(r.location_target(), cookies=[cookie], source=VICTIM,
                 headers=[("X-Test-Id", "bind-planted")])
    assert_attachment(r2, srv.files["bind"])
    assert srv.access_log_entry("bind-planted") == ("200", "fallback")
    log = srv.error_log_since(at)
    assert ("PDFTOKEN00019: /bind/doc.pdf: token not minted for this client "
            "address, with its cookie: download") in log, log
    assert token not in log and "pdftoken=" not in log, log


def test_planted_token_without_its_cookie_heals_for_this_address(srv):
    r, token, cookie = first(srv, "/bind/doc.pdf", source=PLANTER)
    r2 = srv.get(r.location_target(), source=VICTIM)
    fresh, _ = assert_redirect(srv, r2, "/bind/doc.pdf", secret=srv.secret,
                               token_path=bound("/bind/doc.pdf", VICTIM))
    assert fresh != token


def test_planted_pair_with_fallback_deny_is_refused(srv):
    r, token, cookie = first(srv, "/bind/deny/doc.pdf", source=PLANTER)
    r2 = srv.get(r.location_target(), cookies=[cookie], source=VICTIM)
    assert r2.status == 403, r2
    assert b"%PDF" not in r2.body


def test_token_of_another_address_gets_no_range(srv):
    r, token, cookie = first(srv, "/bind/doc.pdf", source=PLANTER)
    r2 = srv.get(r.location_target(), source=VICTIM,
                 headers=[("Range", "bytes=0-99")])
    assert_redirect(srv, r2, "/bind/doc.pdf")
    r3 = srv.get(r.location_target(), source=PLANTER,
                 headers=[("Range", "bytes=0-99")])
    assert r3.status == 206 and r3.body == srv.files["bind"][:100], r3


def test_unbound_token_is_not_accepted_where_tokens_are_bound(srv):
    token = ref.mint(srv.secret, "/bind/doc.pdf")
    pair = ref.cookie_pair(token)
    r = srv.get("/bind/doc.pdf?pdftoken=" + token, cookies=[pair])
    assert_attachment(r, srv.files["bind"])
    r = srv.get("/bind/doc.pdf?pdftoken=" + token)
    assert_redirect(srv, r, "/bind/doc.pdf")


def test_off_in_an_inner_scope_keeps_the_specs_token(srv):
    r, token, cookie = first(srv, "/bind/off/doc.pdf", source=PLANTER)
    assert ref.verifies(srv.secret, token, b"/bind/off/doc.pdf")
    r2 = srv.get(r.location_target(), cookies=[cookie], source=VICTIM)
    assert_inline(r2, srv.files["off"])


def agent(ua):
    return [("User-Agent", ua)] if ua else []


@pytest.mark.parametrize("who", sorted(UNBOUND_AGENTS))
@pytest.mark.parametrize("scope", ["plain", "plain/auto"])
def test_auto_keeps_the_specs_token_for_browsers_that_keep_host(srv, who,
                                                                 scope):
    """auto (the default, and said explicitly) binds nothing for a client
    that is not WebKitGTK: its token is SPEC's, usable from any address."""
    path = "/%s/doc.pdf" % scope
    ua = agent(UNBOUND_AGENTS[who])
    r, token, cookie = first(srv, path, source=PLANTER, headers=ua)
    assert ref.verifies(srv.secret, token, path.encode())
    r2 = srv.get(r.location_target(), cookies=[cookie], source=VICTIM,
                 headers=ua)
    assert_inline(r2, srv.files["auto" if "auto" in scope else "plain"])


@pytest.mark.parametrize("scope", ["plain", "plain/auto"])
def test_auto_binds_webkitgtk_tokens_to_the_address(srv, scope):
    path = "/%s/doc.pdf" % scope
    body = srv.files["auto" if "auto" in scope else "plain"]
    r, token, cookie = first(srv, path, headers=agent(WEBKITGTK))
    assert ref.verifies(srv.secret, token, bound(path, VICTIM))
    assert not ref.verifies(srv.secret, token, path.encode())
    r2 = srv.get(r.location_target(), cookies=[cookie],
                 headers=agent(WEBKITGTK))
    assert_inline(r2, body)


def test_auto_refuses_a_pair_planted_in_webkitgtk_from_another_address(srv):
    """The planter claims the victim's User-Agent: its token is bound to
    its own address, and WebKitGTK's matching cookie brings a download."""
    r, token, cookie = first(srv, "/plain/doc.pdf", source=PLANTER,
                             headers=agent(WEBKITGTK))
    at = srv.error_log_size()
    r2 = srv.get(r.location_target(), cookies=[cookie], source=VICTIM,
                 headers=agent(WEBKITGTK) + [("X-Test-Id", "auto-planted")])
    assert_attachment(r2, srv.files["plain"])
    assert srv.access_log_entry("auto-planted") == ("200", "fallback")
    assert "PDFTOKEN00019: /plain/doc.pdf:" in srv.error_log_since(at)


@pytest.mark.parametrize("who", ["chromium", "none"])
def test_auto_refuses_an_unbound_pair_planted_in_webkitgtk(srv, who):
    """The planter minted with another User-Agent (or none): SPEC's bare
    token, which no WebKitGTK request accepts, with or without its
    cookie."""
    r, token, cookie = first(srv, "/plain/doc.pdf",
                             headers=agent(UNBOUND_AGENTS[who]))
    r2 = srv.get(r.location_target(), cookies=[cookie],
                 headers=agent(WEBKITGTK))
    assert_attachment(r2, srv.files["plain"])
    r3 = srv.get(r.location_target(), headers=agent(WEBKITGTK))
    fresh, _ = assert_redirect(srv, r3, "/plain/doc.pdf", secret=srv.secret,
                               token_path=bound("/plain/doc.pdf", VICTIM))
    assert fresh != token


@pytest.mark.parametrize("value", ["on", "OFF", "Auto"])
def test_keywords_are_case_insensitive(fresh_pool, value):
    s = fresh_pool.make("bindcase")
    s.configure('<Directory "@DOCROOT@/bind">\n    PdfTokenProtect On\n'
                '    PdfTokenBindAddress %s\n</Directory>\n' % value)
    rc, out = s.configtest()
    assert rc == 0, out


def test_bad_value_fails_configtest_naming_the_directive(fresh_pool):
    s = fresh_pool.make("badbind")
    s.configure('<Directory "@DOCROOT@/bind">\n    PdfTokenProtect On\n'
                '    PdfTokenBindAddress address\n</Directory>\n')
    rc, out = s.configtest()
    assert rc != 0, out
    assert ("PdfTokenBindAddress: 'address' is not 'Off', 'On' or 'auto'"
            in out), out


# ------------------------------------------------- behind a proxy: remoteip

@pytest.fixture(scope="module")
def proxied(pool):
    s = pool.make("bindproxy", modules=("remoteip",))
    s.files = {"bind": s.write_pdf("bind/doc.pdf", "proxied doc")}
    s.configure(PROXIED)
    s.start()
    return s


def xff(address):
    return [("X-Forwarded-For", address)]


def test_behind_a_proxy_the_forwarded_address_is_bound(proxied):
    r = proxied.get("/bind/doc.pdf", headers=xff("198.51.100.7"))
    token, cookie = assert_redirect(
        proxied, r, "/bind/doc.pdf", secret=proxied.secret,
        token_path=bound("/bind/doc.pdf", "198.51.100.7"))
    r2 = proxied.get(r.location_target(), cookies=[cookie],
                     headers=xff("198.51.100.7"))
    assert_inline(r2, proxied.files["bind"])
    r3 = proxied.get(r.location_target(), cookies=[cookie],
                     headers=xff("203.0.113.9"))
    assert_attachment(r3, proxied.files["bind"])


def test_on_inside_if_binds_one_more_kind_of_client(srv):
    """docs/directives.md's example: <If> on the User-Agent binds that
    client's tokens in every protected scope; others keep the bare one."""
    ua = agent("ExampleBrowser/1.0")
    r, token, cookie = first(srv, "/plain/doc.pdf", headers=ua)
    assert ref.verifies(srv.secret, token, bound("/plain/doc.pdf", VICTIM))
    r2 = srv.get(r.location_target(), cookies=[cookie], headers=ua)
    assert_inline(r2, srv.files["plain"])
    r3 = srv.get(r.location_target(), cookies=[cookie], source=PLANTER,
                 headers=ua)
    assert_attachment(r3, srv.files["plain"])
