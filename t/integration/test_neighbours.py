# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The module beside the modules that share its servers (issue 14,
"Neighbours"): ModSecurity with the OWASP Core Rule Set, mod_deflate,
mod_headers and mod_cache, all in one server, in the five variants of
neighbours.py.

Each runs ModSecurity 2 with Debian's CRS 3.3 rules (SecRuleEngine On,
anomaly scoring, request and response bodies inspected, PDFs included),
mod_deflate on every response (SetOutputFilter DEFLATE), a site that sets
its own Cache-Control on everything and edits every Set-Cookie (mod_headers),
and mod_cache in front of it all.  What they must show:

  * the token flow is unchanged: R1 to R5, HEAD, two tabs, a CGI PDF judged
    by the output filter, a static PDF without a type found by its bytes
    under compression;
  * not one CRS rule fires on a legitimate reader's requests or on the
    module's answers: the ModSecurity audit log does not grow and the error
    log gets no ModSecurity line while a reader's requests run (the attack
    tests prove that both logs do record what CRS catches);
  * what CRS blocks stays blocked, with a 403, before the module runs.

What mod_cache must never answer in these servers is in test_cache.py.
No server carries an exclusion: at paranoia 2 the CRS reads some tokens
with a '-' as SQL ('--' is a comment to 942440, '-0x4E8' hex to 942450,
'9or3-' a chained condition to 942210), so the module never mints a token
holding a '-' (token.h, pdftoken_waf_inert).
"""

import re
import secrets
import time

import pytest

import pdftoken_ref as ref
from checks import assert_attachment, assert_inline, cache_directives
from neighbours import (LOOKALIKES, VARIANTS, assert_no_pdf,
                        assert_not_public, assert_site_redirect, first_view,
                        make_site, ran, send)


@pytest.fixture(scope="module", params=VARIANTS,
                ids=[v.name for v in VARIANTS])
def srv(pool, request):
    return make_site(pool, request.param)


class WafLogs:
    """Offsets into the audit log and error log, to read what one test's
    requests added to them."""

    def __init__(self, s):
        self.s = s
        self.audit_at = self._size(s.audit_log)
        self.error_at = s.error_log_size()

    @staticmethod
    def _size(path):
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    def audit(self):
        # send() waited for the access-log line, and read until httpd
        # closed the connection: ModSecurity has written its audit entry.
        try:
            with open(self.s.audit_log, "rb") as f:
                f.seek(self.audit_at)
                return f.read().decode("latin-1")
        except FileNotFoundError:
            return ""

    def modsec_lines(self):
        return [line for line in self.s.error_log_since(self.error_at)
                .splitlines() if "ModSecurity" in line]

    def rule_ids(self):
        return set(re.findall(r'\[id "(\d+)"\]',
                              "\n".join(self.modsec_lines())))


@pytest.fixture
def quiet_waf(srv):
    """For a legitimate reader's test: CRS must stay silent throughout."""
    logs = WafLogs(srv)
    yield logs
    audit = logs.audit()
    assert audit == "", "CRS wrote to the audit log for a legitimate " \
        "reader:\n" + audit[:4000]
    lines = logs.modsec_lines()
    assert not lines, "ModSecurity logged for a legitimate reader:\n" + \
        "\n".join(lines[:20])


# ------------------------------------------- the token flow, unchanged

def test_static_pdf_first_view_then_inline(srv, quiet_waf):
    path = "/prot/doc.pdf"
    r, token, cookie = first_view(srv, path)
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert decision == "pass"
    assert r2.gzipped, "mod_deflate did not compress the PDF: %r" % r2
    assert_inline(r2, srv.files["doc"])
    assert_not_public(r2)
    assert "no-store" in cache_directives(r2), r2


def test_query_parameters_survive_the_token_step(srv, quiet_waf):
    path = "/prot/doc.pdf"
    r, token, cookie = first_view(srv, path, query="lang=en&v=2")
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files["doc"])


def test_site_referrer_policy_is_kept(srv, quiet_waf):
    r, token, cookie = first_view(srv, "/prot/own/doc.pdf")
    r2, _ = send(srv, r.location_target(), cookies=[cookie])
    assert_inline(r2, srv.files["own"], referrer_policy="no-referrer")


def test_fragment_page_passes_and_is_never_cached(srv, quiet_waf):
    """PdfTokenFragment safe: the module's own HTML page (one inline
    script) goes through response inspection and compression; it is never
    stored, so each navigation gets a token of its own."""
    path = "/prot/frag/doc.pdf"
    nav = [("Sec-Fetch-Dest", "document"), ("Sec-Fetch-Mode", "navigate")]
    tokens = set()
    for _ in range(2):
        r, decision = send(srv, path, headers=nav)
        assert r.status == 200 and decision == "redirect", r
        assert "HIT" not in (r.get("X-Cache") or ""), r
        assert r.gzipped, r
        assert r.get("Content-Type") == "text/html; charset=utf-8", r
        assert r.get("Content-Security-Policy"), r
        assert "no-store" in cache_directives(r), r
        link = re.search(rb'<a id="pdftoken-continue" href="([^"]*)"',
                         r.body)
        assert link, r.body
        url = link.group(1).decode().replace("&amp;", "&")
        token = url.split("pdftoken=", 1)[1].rstrip("#")
        assert ref.verifies(srv.secret, token, path) and token not in tokens
        tokens.add(token)
        pair = ref.cookie_pair(token, secure=srv.tls)
        assert [c for c in r.get_all("Set-Cookie")
                if c.startswith(pair + ";")], r
    r2, decision = send(srv, url.split("#")[0], cookies=[pair])
    assert decision == "pass"
    assert_inline(r2, srv.files["frag"])


@pytest.mark.parametrize("path,key", [("/prot/always/doc.pdf", "always"),
                                      ("/prot/always/report.cgi", "cgi")])
def test_site_s_always_cache_control_does_not_replace_no_store(
        srv, quiet_waf, path, key):
    """`Header always set Cache-Control "public, max-age=600"` acts on
    err_headers_out, where the module keeps its own: the inline answer
    still carries private, no-store and nothing public, or a shared cache
    in front and the browser would keep the tokenized inline PDF."""
    r, token, cookie = first_view(srv, path)
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert decision == "pass"
    assert_inline(r2, srv.files[key])
    assert r2.get_all("Cache-Control") == ["private, no-store"], r2


def test_token_without_cookie_is_a_download(srv, quiet_waf):
    path = "/prot/doc.pdf"
    r, token, cookie = first_view(srv, path)
    r2, decision = send(srv, r.location_target())
    assert decision == "fallback"
    assert_attachment(r2, srv.files["doc"], filename="doc.pdf")
    assert "private" in cache_directives(r2), r2


@pytest.mark.parametrize("how", ["expired", "forged", "other-path"])
def test_bad_token_heals_with_a_freshassert_site_redirect(srv, quiet_waf, how):
    path = "/prot/doc.pdf"
    # Like the module's own, the test's tokens hold no '-': at paranoia 2
    # CRS could block one before the module saw it.
    bad = "-"
    while "-" in bad:
        if how == "expired":
            bad = ref.mint(srv.secret, path, expiry=int(time.time()) - 30)
        elif how == "forged":
            bad = ref.forge(ref.mint(srv.secret, path, lifetime=30))
        else:
            bad = ref.mint(srv.secret, "/prot/own/doc.pdf", lifetime=30)
    r, decision = send(srv, path + "?pdftoken=" + bad,
                       cookies=[ref.cookie_pair(bad, secure=srv.tls)])
    token, _ = assert_site_redirect(srv, r, path, "")
    assert token != bad and decision == "redirect"


def test_range_with_token_and_no_cookie(srv, request):
    """R5, as a viewer continues after the cookie is gone (browsers ask for
    ranges uncompressed: Accept-Encoding identity).  From paranoia 3 the
    CRS itself refuses every request with a Range header (921230), before
    the module runs and whether it is there or not."""
    path = "/prot/doc.pdf"
    data = srv.files["doc"]
    if srv.variant.paranoia < 3:
        request.getfixturevalue("quiet_waf")
    r, token, cookie = first_view(srv, path)
    logs = WafLogs(srv)
    r2, decision = send(srv, r.location_target(), headers=[
        ("Range", "bytes=100-199"), ("Accept-Encoding", "identity")])
    if srv.variant.paranoia >= 3:
        assert r2.status == 403 and decision == "-", r2
        assert logs.rule_ids() == {"921230", "949110", "980130"}, \
            logs.rule_ids()
        return
    assert decision == "range", decision
    assert r2.status == 206 and not r2.gzipped, r2
    assert r2.get("Content-Range") == "bytes 100-199/%d" % len(data), r2
    assert r2.body == data[100:200]
    assert r2.get_all("Set-Cookie") == [] and r2.get("Location") is None, r2
    assert r2.get("Content-Disposition") is None, r2
    assert_not_public(r2)


def test_head_first_view_and_follow_up(srv, quiet_waf):
    path = "/prot/doc.pdf"
    r, token, cookie = first_view(srv, path, method="HEAD")
    assert r.rest == b""
    r2, decision = send(srv, r.location_target(), cookies=[cookie],
                        method="HEAD")
    assert decision == "pass"
    assert_inline(r2, b"")
    assert r2.rest == b""


def test_two_tabs_both_end_inline(srv, quiet_waf):
    path = "/prot/doc.pdf"
    r1, t1, c1 = first_view(srv, path)
    r2, t2, c2 = first_view(srv, path)
    assert t1 != t2 and c1.split("=")[0] != c2.split("=")[0]
    for r in (r1, r2):
        r3, _ = send(srv, r.location_target(), cookies=[c1, c2])
        assert_inline(r3, srv.files["doc"])


def test_cgi_pdf_is_judged_by_the_output_filter(srv, quiet_waf):
    path = "/prot/report.cgi"
    q = "id=" + secrets.token_hex(4)
    r, token, cookie = first_view(srv, path, query=q)
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert decision == "pass"
    assert r2.gzipped, r2
    assert_inline(r2, srv.files["cgi"])
    assert_not_public(r2)
    r3, decision = send(srv, r.location_target())
    assert decision == "fallback"
    assert_attachment(r3, srv.files["cgi"])
    # The script ran for each answer, and never saw the token.
    runs = [line for line in ran(srv, "prot-report.cgi.log") if q in line]
    assert runs == [q, q, q], runs


@pytest.mark.parametrize("path", ["/prot/scan", "/prot/notype.cgi"])
def test_untyped_pdf_is_sniffed_before_deflate(srv, quiet_waf, path):
    """No Content-Type: the sniff filter reads %PDF- before mod_deflate
    compresses, so compression does not hide the PDF from the module."""
    r, token, cookie = first_view(srv, path)
    data = srv.files["scan" if path.endswith("scan") else "cgi"]
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert decision == "pass" and r2.gzipped, r2
    assert_inline(r2, data, content_type=None)
    r3, decision = send(srv, r.location_target())
    assert decision == "fallback"
    assert_attachment(r3, data)


def test_no_minted_token_holds_a_dash(srv, quiet_waf):
    """Six random tokens in ten hold a '-', and some of those the CRS blocks
    at paranoia 2 (one in 70 holds '--', one in 60,000 '-0x' and three hex
    digits): in 300 first views not one token or cookie name holds a '-'
    and no rule fires (a module minting blindly would show about 180)."""
    path = "/prot/doc.pdf"
    for _ in range(300):
        r, token, cookie = first_view(srv, path)
        name = cookie.split("=")[0]
        assert "-" not in token and "-" not in name.replace("__Host-", ""), \
            (token, cookie)
    r, token, cookie = first_view(srv, path)
    r2, decision = send(srv, r.location_target(), cookies=[cookie])
    assert decision == "pass", (decision, r2)
    assert_inline(r2, srv.files["doc"])


@pytest.mark.parametrize("rule,lookalike", LOOKALIKES,
                         ids=[rule for rule, _ in LOOKALIKES])
def test_a_token_with_a_dash_is_what_crs_blocks(srv, rule, lookalike):
    """Why the module never mints '-': such a value in the token's own
    parameter is blocked at paranoia 2 before the module runs; at paranoia
    1, where these rules do not run, the module answers it as a malformed
    token (R4)."""
    logs = WafLogs(srv)
    r, decision = send(srv, "/prot/doc.pdf?pdftoken=" + lookalike)
    expected = {rule, "949110", "980130"}
    if srv.variant.paranoia >= 4 and lookalike.count("-") >= 2:
        expected.add("942432")  # two special characters in one argument
    if srv.variant.paranoia >= 2:
        assert r.status == 403 and decision == "-", r
        assert logs.rule_ids() == expected, logs.rule_ids()
    else:
        assert r.status == 302 and decision == "redirect", r
        assert logs.rule_ids() == set()


# ------------------------------------------------ CRS still blocks

ATTACKS = [
    ("xss-query", "/prot/doc.pdf?q=%3Cscript%3Ealert(1)%3C/script%3E",
     "941"),
    ("sqli-query", "/prot/doc.pdf?id=1%27%20or%201=1--", "942"),
    ("xss-token", "/prot/doc.pdf?pdftoken=%3Cscript%3Ealert(1)%3C/script%3E",
     "941"),
    ("xss-cgi", "/prot/report.cgi?q=%3Csvg%20onload=alert(1)%3E", "941"),
    ("sqli-cgi", "/prot/report.cgi?id=1%20union%20select%20password%20"
                 "from%20users", "942"),
]


@pytest.mark.parametrize("target,family", [a[1:] for a in ATTACKS],
                         ids=[a[0] for a in ATTACKS])
def test_attack_is_blocked_before_the_module(srv, target, family):
    logs = WafLogs(srv)
    runs_before = len(ran(srv, "prot-report.cgi.log"))
    r, decision = send(srv, target)
    assert r.status == 403, r
    assert decision == "-", "the module ran for a blocked request: %s" \
        % decision
    assert r.get_all("Set-Cookie") == [] and r.get("Location") is None, r
    assert_no_pdf(r)
    assert len(ran(srv, "prot-report.cgi.log")) == runs_before
    ids = logs.rule_ids()
    assert "949110" in ids, ids
    assert any(i.startswith(family) for i in ids), ids
    audit = logs.audit()
    assert target.split("?")[0] in audit and "949110" in audit, audit[:2000]


def test_attack_with_a_reader_s_valid_token_and_cookie_is_blocked(srv):
    """A reader's own tokenized URL and cookie do not carry an attack
    through: CRS blocks on the other parameter, the module never runs."""
    path = "/prot/doc.pdf"
    r, token, cookie = first_view(srv, path)
    logs = WafLogs(srv)
    r2, decision = send(srv, r.location_target() +
                        "&x=%3Cscript%3Ealert(1)%3C/script%3E",
                        cookies=[cookie])
    assert r2.status == 403 and decision == "-", r2
    assert_no_pdf(r2)
    assert "949110" in logs.rule_ids()


def test_attack_is_blocked_after_the_cache_saw_the_document(srv):
    """Views first, so that a cache that kept anything would answer
    before ModSecurity's phase 2; then the attack."""
    path = "/prot/doc.pdf"
    for _ in range(2):
        r, token, cookie = first_view(srv, path)
        assert_inline(send(srv, r.location_target(), cookies=[cookie])[0],
                      srv.files["doc"])
    r, decision = send(srv, path + "?q=%3Cscript%3Ealert(1)%3C/script%3E")
    assert r.status == 403 and decision == "-", r
    assert "HIT" not in (r.get("X-Cache") or ""), r
