# Licensed under the Apache License, Version 2.0; see LICENSE.
"""SPEC section 5: bad values fail `apache2 -t` with a message naming the
directive; an unreadable or too short secret file fails start-up; secret
directives are refused in <Directory> and .htaccess."""

import pytest

from checks import assert_redirect

NAME33 = "a" * 33

# (test id, directive line, where: "dir" | "server")
INVALID = [
    ("protect-maybe", "PdfTokenProtect maybe", "dir"),
    ("protect-no-arg", "PdfTokenProtect", "dir"),
    # AP_INIT_FLAG would take the first word and ignore the rest.
    ("protect-two-words", "PdfTokenProtect On Off", "dir"),
    ("protect-on-junk", "PdfTokenProtect On junk", "server"),
    ("timeout-0", "PdfTokenTimeout 0", "dir"),
    ("timeout-3601", "PdfTokenTimeout 3601", "dir"),
    ("timeout-abc", "PdfTokenTimeout abc", "dir"),
    ("timeout-minus-1", "PdfTokenTimeout -1", "dir"),
    ("timeout-trailing-junk", "PdfTokenTimeout 12x", "dir"),
    ("timeout-empty", 'PdfTokenTimeout ""', "dir"),
    ("timeout-overflow", "PdfTokenTimeout 18446744073709551626", "dir"),
    ("timeout-0-server", "PdfTokenTimeout 0", "server"),
    ("name-dot", "PdfTokenName bad.name", "dir"),
    ("name-space", 'PdfTokenName "bad name"', "dir"),
    ("name-equals", "PdfTokenName na=me", "dir"),
    ("name-semicolon", 'PdfTokenName "na;me"', "dir"),
    ("name-non-ascii", "PdfTokenName caf\u00e9", "dir"),
    ("name-33-chars", "PdfTokenName " + NAME33, "dir"),
    ("name-empty", 'PdfTokenName ""', "dir"),
    ("name-bad-server", "PdfTokenName bad.name", "server"),
    ("fallback-other", "PdfTokenFallback other", "dir"),
    ("fallback-empty", 'PdfTokenFallback ""', "dir"),
    ("types-no-args", "PdfTokenTypes", "dir"),
    ("fragment-other", "PdfTokenFragment keep", "dir"),
    ("fragment-no-arg", "PdfTokenFragment", "dir"),
    ("crosssite-maybe", "PdfTokenCrossSite maybe", "dir"),
    ("crosssite-no-arg", "PdfTokenCrossSite", "dir"),
    # AP_INIT_FLAG would take the first word and ignore the rest.
    ("crosssite-two-words", "PdfTokenCrossSite On Off", "dir"),
    ("crosssite-server", "PdfTokenCrossSite yes", "server"),
    ("secret-missing-file", "PdfTokenSecretFile @ROOT@/no-such-file",
     "server"),
    ("secret-too-short", "PdfTokenSecretFile @ROOT@/short-secret", "server"),
    ("secret-short-after-trim",
     "PdfTokenSecretFile @ROOT@/short-trimmed-secret", "server"),
    ("secret-empty-file", "PdfTokenSecretFile @ROOT@/empty-secret", "server"),
    ("secret-4097-bytes", "PdfTokenSecretFile @ROOT@/secret-4097", "server"),
    ("secret-long-with-newline-inside",
     "PdfTokenSecretFile @ROOT@/secret-long-split", "server"),
    ("secret-previous-missing",
     "PdfTokenSecretFile @SECRET@ @ROOT@/no-such-file", "server"),
    ("secret-three-args",
     "PdfTokenSecretFile @SECRET@ @SECRET@ @SECRET@", "server"),
    ("secret-no-args", "PdfTokenSecretFile", "server"),
    ("secret-in-directory", "PdfTokenSecretFile @SECRET@", "dir"),
    ("secret-in-location", "PdfTokenSecretFile @SECRET@", "location"),
]

VALID = [
    ("timeout-1", "PdfTokenTimeout 1"),
    ("timeout-3600", "PdfTokenTimeout 3600"),
    ("name-one-char", "PdfTokenName x"),
    ("name-32-chars", "PdfTokenName " + "b" * 32),
    ("name-all-classes", "PdfTokenName Az09_-"),
    ("fallback-attachment", "PdfTokenFallback attachment"),
    ("fallback-deny", "PdfTokenFallback deny"),
    ("types-several", "PdfTokenTypes application/pdf application/x-pdf"),
    ("protect-off", "PdfTokenProtect Off"),
    ("protect-on-any-case", "PdfTokenProtect oN"),
    ("fragment-strip", "PdfTokenFragment strip"),
    ("fragment-safe", "PdfTokenFragment safe"),
    ("crosssite-on", "PdfTokenCrossSite On"),
    ("crosssite-off-any-case", "PdfTokenCrossSite off"),
]

VALID_SERVER = [
    ("secret-32-bytes", "PdfTokenSecretFile @ROOT@/secret-32"),
    ("secret-32-bytes-and-newline",
     "PdfTokenSecretFile @ROOT@/secret-32-crlf"),
    ("secret-with-previous", "PdfTokenSecretFile @SECRET@ @ROOT@/secret-32"),
    ("secret-4096-bytes-and-newline",
     "PdfTokenSecretFile @ROOT@/secret-4096-lf"),
]


@pytest.fixture(scope="module")
def cfg(pool):
    # Never started: only `apache2 -t` runs on this tree.
    s = pool.make("configtest", secret_directive=False)
    s.write_secret(s.root / "short-secret", b"s" * 31)
    s.write_secret(s.root / "short-trimmed-secret", b"s" * 31 + b" \t\r\n")
    s.write_secret(s.root / "empty-secret", b"")
    s.write_secret(s.root / "secret-32", b"k" * 32)
    s.write_secret(s.root / "secret-32-crlf", b"k" * 32 + b"\r\n")
    s.write_secret(s.root / "secret-4097", b"k" * 4097)
    s.write_secret(s.root / "secret-4096-lf", b"k" * 4096 + b"\n")
    # The tail after the 4096th byte must not be ignored because a newline
    # happens to stand there.
    s.write_secret(s.root / "secret-long-split",
                   b"a" * 4096 + b"\n" + b"b" * 100)
    return s


def place(line, where):
    if where == "server":
        return line + "\n"
    if where == "location":
        return '<Location "/x">\n    %s\n</Location>\n' % line
    return '<Directory "@DOCROOT@">\n    %s\n</Directory>\n' % line


@pytest.mark.parametrize("line,where", [(l, w) for _, l, w in INVALID],
                         ids=[i for i, _, _ in INVALID])
def test_configtest_rejects_invalid_value_naming_the_directive(cfg, line,
                                                               where):
    cfg.configure(place(line, where))
    rc, out = cfg.configtest()
    assert rc != 0, "apache2 -t accepted %r:\n%s" % (line, out)
    directive = line.split()[0]
    assert directive.lower() in out.lower(), out
    assert "Syntax OK" not in out


@pytest.mark.parametrize("line", [l for _, l in VALID],
                         ids=[i for i, _ in VALID])
def test_configtest_accepts_boundary_values(cfg, line):
    cfg.configure(place(line, "dir") + "PdfTokenSecretFile @ROOT@/secret-32\n")
    rc, out = cfg.configtest()
    assert rc == 0, out
    assert "Syntax OK" in out


@pytest.mark.parametrize("line", [l for _, l in VALID_SERVER],
                         ids=[i for i, _ in VALID_SERVER])
def test_configtest_accepts_valid_secret_files(cfg, line):
    cfg.configure(line + "\n")
    rc, out = cfg.configtest()
    assert rc == 0, out


def test_configtest_accepts_secret_file_in_virtual_host(cfg):
    cfg.configure("<VirtualHost *:@PORT@>\n    ServerName v.test\n"
                  "    PdfTokenSecretFile @ROOT@/secret-32\n"
                  "</VirtualHost>\n")
    rc, out = cfg.configtest()
    assert rc == 0, out


def test_configtest_accepts_the_module_without_any_directive(cfg):
    cfg.configure("")
    rc, out = cfg.configtest()
    assert rc == 0, out


# ------------------------------------------------------------- start-up

@pytest.mark.parametrize("secret_file,content", [
    ("short-secret", b"s" * 31),
    ("empty-secret", b""),
    ("no-such-file", None),
], ids=["too-short", "empty", "missing"])
def test_startup_fails_with_bad_secret_file(fresh_pool, secret_file,
                                            content):
    s = fresh_pool.make("badsecret", secret_directive=False)
    if content is not None:
        s.write_secret(s.root / secret_file, content)
    s.configure("PdfTokenSecretFile @ROOT@/%s\n" % secret_file)
    rc = s.start(expect_failure=True)
    assert rc != 0
    assert "pdftokensecretfile" in s.logs_text().lower(), s.logs_text()


def test_startup_fails_with_unreadable_secret_file(fresh_pool):
    # The tests run as root, who reads through any file mode: a directory
    # is a path that exists and still cannot be read as a file.
    s = fresh_pool.make("unreadable", secret_directive=False)
    (s.root / "secretdir").mkdir()
    s.configure("PdfTokenSecretFile @ROOT@/secretdir\n")
    rc = s.start(expect_failure=True)
    assert rc != 0
    assert "pdftokensecretfile" in s.logs_text().lower(), s.logs_text()


# --------------------------------------------------------------- .htaccess

HTACCESS_CONFIG = r"""
<Directory "@DOCROOT@">
    AllowOverride All
</Directory>
"""


@pytest.fixture(scope="module")
def htsrv(pool):
    s = pool.make("htaccess-errors")
    s.write_pdf("secret/doc.pdf")
    s.write("secret/.htaccess", "PdfTokenProtect On\n"
            "PdfTokenSecretFile %s\n" % s.secret_path)
    s.write_pdf("badtimeout/doc.pdf")
    s.write("badtimeout/.htaccess", "PdfTokenProtect On\n"
            "PdfTokenTimeout 0\n")
    s.write_pdf("badname/doc.pdf")
    s.write("badname/.htaccess", "PdfTokenProtect On\nPdfTokenName a.b\n")
    s.write_pdf("good/doc.pdf")
    s.write("good/.htaccess", "PdfTokenProtect On\nPdfTokenTimeout 30\n")
    s.configure(HTACCESS_CONFIG)
    s.start()
    return s


@pytest.mark.parametrize("directory,directive", [
    ("secret", "PdfTokenSecretFile"),
    ("badtimeout", "PdfTokenTimeout"),
    ("badname", "PdfTokenName"),
])
def test_htaccess_with_forbidden_or_bad_directive_is_500_naming_it(
        htsrv, directory, directive):
    offset = htsrv.error_log_size()
    r = htsrv.get("/%s/doc.pdf" % directory)
    assert r.status == 500, r
    assert b"%PDF" not in r.body
    log = htsrv.error_log_since(offset)
    assert directive.lower() in log.lower(), log


def test_htaccess_with_valid_directives_applies_them(htsrv):
    r = htsrv.get("/good/doc.pdf")
    assert_redirect(htsrv, r, "/good/doc.pdf", timeout=30,
                    secret=htsrv.secret)
