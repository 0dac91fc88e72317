# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 3, the secret: servers sharing a secret file accept each
other's tokens; another secret refuses them; `PdfTokenSecretFile new old`
rotates keys; without the directive every child shares one random secret
that a restart replaces; each start says in the error log which secret
signs the tokens."""

import re
import subprocess

import pytest

import httpd
import pdftoken_ref as ref
from checks import assert_inline, assert_redirect

DOC = "/prot/doc.pdf"
CONFIG = r"""
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
</Directory>
"""


def make(pool, name, secret_line=None, secret_directive=True):
    s = pool.make(name, secret_directive=secret_directive)
    s.files = {"doc": s.write_pdf("prot/doc.pdf", "shared doc")}
    s.configure((secret_line or "") + "\n" + CONFIG)
    return s


@pytest.fixture(scope="module")
def farm(pool, workdir):
    """A and B share one secret file, C has its own, D rotates."""
    shared = workdir / "shared-secret"
    shared.write_bytes(b"0123456789abcdef0123456789abcdef-shared\n")
    shared.chmod(0o644)
    old = workdir / "old-secret"
    old.write_bytes(b"old-old-old-old-old-old-old-old-old-old\r\n")
    old.chmod(0o644)
    new = workdir / "new-secret"
    new.write_bytes(b"new-new-new-new-new-new-new-new-new-new \t\n")
    new.chmod(0o644)
    servers = {
        "A": make(pool, "A", secret_directive=False,
                  secret_line='PdfTokenSecretFile "%s"' % shared),
        "B": make(pool, "B", secret_directive=False,
                  secret_line='PdfTokenSecretFile "%s"' % shared),
        "C": make(pool, "C"),
        "D": make(pool, "D", secret_directive=False,
                  secret_line='PdfTokenSecretFile "%s" "%s"' % (new, old)),
        "N": make(pool, "N", secret_directive=False,
                  secret_line='PdfTokenSecretFile "%s"' % new),
    }
    for s in servers.values():
        s.start()
    servers["shared"] = ref.read_secret(shared)
    servers["old"] = ref.read_secret(old)
    servers["new"] = ref.read_secret(new)
    return servers


def test_shared_secret_token_from_a_with_cookie_is_inline_on_b(farm):
    a, b = farm["A"], farm["B"]
    token, cookie = assert_redirect(a, a.get(DOC), DOC,
                                    secret=farm["shared"])
    assert_inline(b.get(DOC + "?pdftoken=" + token, cookies=[cookie]),
                  b.files["doc"])


def test_shared_secret_token_from_b_with_cookie_is_inline_on_a(farm):
    a, b = farm["A"], farm["B"]
    token, cookie = assert_redirect(b, b.get(DOC), DOC,
                                    secret=farm["shared"])
    assert_inline(a.get(DOC + "?pdftoken=" + token, cookies=[cookie]),
                  a.files["doc"])


def test_other_secret_refuses_token_from_a(farm):
    a, c = farm["A"], farm["C"]
    token, cookie = assert_redirect(a, a.get(DOC), DOC)
    r = c.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    new, _ = assert_redirect(c, r, DOC, secret=c.secret)
    assert new != token


def test_rotation_token_minted_under_previous_secret_still_verifies(farm):
    d = farm["D"]
    token = ref.mint(farm["old"], DOC, lifetime=30)
    assert_inline(d.get(DOC + "?pdftoken=" + token,
                        cookies=[ref.cookie_pair(token)]), d.files["doc"])


def test_rotation_token_minted_under_new_secret_verifies(farm):
    d = farm["D"]
    token = ref.mint(farm["new"], DOC, lifetime=30)
    assert_inline(d.get(DOC + "?pdftoken=" + token,
                        cookies=[ref.cookie_pair(token)]), d.files["doc"])


def test_rotation_new_tokens_are_minted_under_the_new_secret(farm):
    d = farm["D"]
    token, _ = assert_redirect(d, d.get(DOC), DOC, secret=farm["new"])
    assert not ref.verifies(farm["old"], token, DOC)


def test_rotation_previous_secret_keeps_range_continuation_working(farm):
    d = farm["D"]
    token = ref.mint(farm["old"], DOC, lifetime=30)
    r = d.get(DOC + "?pdftoken=" + token, headers=[("Range", "bytes=0-9")])
    assert r.status == 206 and r.body == d.files["doc"][:10]


def test_after_rotation_old_secret_is_refused_once_dropped(farm):
    n = farm["N"]
    token = ref.mint(farm["old"], DOC, lifetime=30)
    r = n.get(DOC + "?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert_redirect(n, r, DOC, secret=farm["new"])


def test_secret_file_trailing_whitespace_is_not_key_material(farm):
    # new-secret ends in " \t\n", old-secret in "\r\n": tokens minted with
    # the trimmed bytes verify (tested above); with the raw bytes they fail.
    n = farm["N"]
    raw = (farm["new"] + b" \t\n")
    token = ref.mint(raw, DOC, lifetime=30)
    r = n.get(DOC + "?pdftoken=" + token, cookies=[ref.cookie_pair(token)])
    assert r.status == 302, r


# ---------------------------------------------------- random per start

@pytest.fixture
def random_secret_server(fresh_pool):
    s = make(fresh_pool, "random", secret_directive=False)
    s.start()
    return s


def test_random_secret_is_shared_by_every_child(random_secret_server):
    s = random_secret_server
    # Many connections land on different children (prefork) or threads.
    pairs = [s.first_visit(DOC)[1:] for _ in range(12)]
    for token, cookie in pairs:
        for _ in range(3):
            assert_inline(s.get(DOC + "?pdftoken=" + token, cookies=[cookie]),
                          s.files["doc"])


def test_random_secret_is_not_a_known_one(random_secret_server):
    s = random_secret_server
    token, _ = assert_redirect(s, s.get(DOC), DOC)
    assert not ref.verifies(s.secret, token, DOC)  # the unused file


# Both kinds of restart run post_config, which makes the new key.  The
# hard one (SIGHUP) is exercised under prefork only: under event, httpd
# 2.4.71 can crash a child while it closes its workers' sockets on SIGHUP
# (close_worker_sockets -> apr_os_sock_get, no module frame; about once in
# 150 restarts here), and the suite's log check would count that httpd bug
# against this test.
RESTARTS = ["graceful"] + (["hard"] if httpd.MPM == "prefork" else [])


@pytest.mark.parametrize("kind", RESTARTS)
def test_random_secret_is_replaced_by_a_restart(random_secret_server, kind):
    s = random_secret_server
    _, token, cookie = s.first_visit(DOC)
    assert_inline(s.get(DOC + "?pdftoken=" + token, cookies=[cookie]),
                  s.files["doc"])
    s.restart(graceful=kind == "graceful")
    r = s.get(DOC + "?pdftoken=" + token, cookies=[cookie])
    new, _ = assert_redirect(s, r, DOC)
    assert new != token


def test_secret_file_survives_a_restart(fresh_pool):
    s = make(fresh_pool, "restart")
    s.start()
    _, token, cookie = s.first_visit(DOC)
    s.restart(graceful=True)
    assert_inline(s.get(DOC + "?pdftoken=" + token, cookies=[cookie]),
                  s.files["doc"])


# ------------------------------------------- the rotation procedure

def test_rotation_procedure_on_a_running_server(fresh_pool, workdir):
    # README's procedure, step by step on one running server: a token the
    # server minted before the rotation (and its cookie) is still inline
    # while `PdfTokenSecretFile new old` is in force; new tokens are
    # minted under the new secret; once the old file is dropped, the old
    # token is refused and heals through one redirect (R4), and tokens
    # minted under the new secret are still inline.
    def openssl_secret(name):
        path = workdir / ("procedure-%s.secret" % name)
        path.write_bytes(subprocess.run(
            ["openssl", "rand", "-hex", "32"], check=True,
            capture_output=True, timeout=30).stdout)
        path.chmod(0o600 if name == "new" else 0o644)
        return path

    old, new = openssl_secret("old"), openssl_secret("new")
    old_key, new_key = ref.read_secret(old), ref.read_secret(new)
    timeout = "PdfTokenTimeout 60\n"
    s = make(fresh_pool, "procedure", secret_directive=False,
             secret_line='PdfTokenSecretFile "%s"\n%s' % (old, timeout))
    s.start()
    r = s.get(DOC)
    t_old, c_old = assert_redirect(s, r, DOC, timeout=60, secret=old_key)

    s.configure('PdfTokenSecretFile "%s" "%s"\n%s' % (new, old, timeout)
                + CONFIG)
    s.restart(graceful=True)
    assert_inline(s.get(r.location_target(), cookies=[c_old]),
                  s.files["doc"])
    r = s.get(DOC)
    t_new, c_new = assert_redirect(s, r, DOC, timeout=60, secret=new_key)
    assert not ref.verifies(old_key, t_new, DOC)
    assert_inline(s.get(r.location_target(), cookies=[c_new]),
                  s.files["doc"])

    s.configure('PdfTokenSecretFile "%s"\n%s' % (new, timeout) + CONFIG)
    s.restart(graceful=True)
    refused = s.get(DOC + "?pdftoken=" + t_old, cookies=[c_old])
    healed, _ = assert_redirect(s, refused, DOC, timeout=60, secret=new_key)
    assert healed != t_old
    assert_inline(s.get(DOC + "?pdftoken=" + t_new, cookies=[c_new]),
                  s.files["doc"])


# ------------------------------------------------------------ start-up notice

def test_start_up_names_the_secret_file(farm):
    s = farm["C"]
    assert re.search(r"PDFTOKEN00016: .*tokens are signed with the secret "
                     r"in " + re.escape(str(s.secret_path)), s.error_text())


def test_start_up_names_the_previous_secret_when_rotating(fresh_pool,
                                                          workdir):
    s = fresh_pool.make("rotate", secret_directive=False)
    old = workdir / "start-up-old-secret"
    old.write_bytes(b"o" * 40 + b"\n")
    new = workdir / "start-up-new-secret"
    new.write_bytes(b"n" * 40 + b"\n")
    s.configure('PdfTokenSecretFile "%s" "%s"\n' % (new, old))
    s.start()
    text = s.error_text()
    assert re.search(r"PDFTOKEN00016: .*secret in %s; previous secret "
                     r"accepted for verification: %s"
                     % (re.escape(str(new)), re.escape(str(old))), text), text
    assert "o" * 40 not in text and "n" * 40 not in text


def test_start_up_says_when_the_secret_is_random(fresh_pool):
    s = fresh_pool.make("random", secret_directive=False)
    s.configure("")
    s.start()
    assert re.search(r"PDFTOKEN00016: .*random secret made at start-up.*"
                     r"PdfTokenSecretFile", s.error_text())


def test_start_up_notice_shows_under_the_default_log_level(fresh_pool):
    # LogLevel warn, as a stock server has: notices still reach the log.
    s = fresh_pool.make("warn")
    s.configure("LogLevel warn\n")
    s.start()
    assert "PDFTOKEN00016" in s.error_text()
