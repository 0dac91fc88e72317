# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The administrator's documentation against the code.

The directives are read from the `AP_INIT_*("Name", ...)` entries of
mod_pdftoken.c: every one has a section in docs/directives.md with the
httpd manual's fields, whose Context, Override and Syntax agree with the
entry's flags and kind, and whose Default agrees with the code's defaults;
no section, and no mention in README.md, docs/ or the shipped
configurations, names a directive that does not exist.  The example
configuration shows every directive with its default; the packaged
pdftoken.conf names the secret the package makes and turns nothing on.
Every message number and every value of the PDFTOKEN variable that the
code can produce is in docs/logging.md with the code's level, and no
document names one the code does not; the version, the minimum httpd, the
LogFormat and the User-Agent rule of PdfTokenBindAddress auto are the
same everywhere.  The documents that the package ships link only to each
other and hold no test-suite language.  Every example block of the
reference and of the README, and both configurations with their examples
uncommented, pass `apache2 -t`.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "mod_pdftoken.c"
README = REPO / "README.md"
REFERENCE = REPO / "docs" / "directives.md"
BEHAVIOUR = REPO / "docs" / "behaviour.md"
LOGGING = REPO / "docs" / "logging.md"
CROSS_SITE = REPO / "docs" / "cross-site.md"
EXAMPLE = REPO / "conf" / "pdftoken.conf.example"
PACKAGED = REPO / "debian" / "pdftoken.conf"
# What the package ships under /usr/share/doc (debian/rules), as they lie
# in the source tree: they may link to each other only.
SHIPPED_DOCS = [README, REFERENCE, BEHAVIOUR, LOGGING, CROSS_SITE]
CONFIGS = [EXAMPLE, PACKAGED]
MENTIONS = SHIPPED_DOCS + CONFIGS

FIELDS = ["Description", "Syntax", "Default", "Context", "Override",
          "Status", "Module"]
# What each req_override of the command table means in the manual's terms.
CONTEXTS = {
    "RSRC_CONF": ("server config, virtual host", "not applicable"),
    "OR_FILEINFO": ("server config, virtual host, directory, .htaccess",
                    "FileInfo"),
}


def directives():
    """{name: (AP_INIT kind, req_override)} from the command table."""
    text = SOURCE.read_text()
    table = re.search(r"command_rec\s+\w+\[\]\s*=\s*\{(.*?)\{\s*NULL\s*\}",
                      text, re.S)
    assert table, "no command table in mod_pdftoken.c"
    entries = re.findall(r'AP_INIT_(\w+)\(\s*"([^"]+)"\s*,\s*\w+\s*,\s*'
                         r'[^,]+,\s*([\w|\s]+?)\s*,', table.group(1))
    found = {name: (kind, flags.replace(" ", "")) for kind, name, flags
             in entries}
    assert len(found) == len(entries) == table.group(1).count("AP_INIT_"), \
        entries
    return found


def sections():
    """{heading: {field: value}} of the `## Name` sections of the
    reference that hold a field table."""
    out = {}
    text = REFERENCE.read_text()
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = block.partition("\n")
        fields = {}
        for m in re.finditer(r"^\| ([A-Za-z ]+) \| (.*) \|$", body, re.M):
            if m.group(1) in FIELDS:
                fields[m.group(1)] = m.group(2)
        if "Syntax" in fields:
            out[heading.strip()] = fields
    return out


def code(value):
    """`x` -> x, with the table's escaped pipes unescaped."""
    value = value.strip()
    assert value.startswith("`") and value.endswith("`"), value
    return value[1:-1].replace("\\|", "|")


DIRECTIVES = directives()


def test_the_command_table_is_read():
    assert {"PdfTokenProtect", "PdfTokenSecretFile"} <= set(DIRECTIVES)
    assert DIRECTIVES["PdfTokenSecretFile"] == ("TAKE12", "RSRC_CONF")


def test_reference_has_a_section_for_each_directive_and_no_other():
    documented = set(sections())
    assert documented - set(DIRECTIVES) == set(), \
        "documented but not in mod_pdftoken.c"
    assert set(DIRECTIVES) - documented == set(), \
        "in mod_pdftoken.c but not documented in docs/directives.md"


def test_reference_lists_each_directive_once_in_its_index():
    text = REFERENCE.read_text()
    for name in DIRECTIVES:
        assert text.count("- [%s](#%s)" % (name, name.lower())) == 1, name
        assert len(re.findall(r"^## %s$" % name, text, re.M)) == 1, name


@pytest.mark.parametrize("name", sorted(DIRECTIVES))
def test_section_fields_match_the_code(name):
    kind, flags = DIRECTIVES[name]
    fields = sections()[name]
    assert list(fields) == FIELDS, fields
    assert fields["Status"] == "External"
    assert fields["Module"] == "mod_pdftoken"
    assert fields["Description"].strip()
    assert flags in CONTEXTS, "add %s to CONTEXTS" % flags
    context, override = CONTEXTS[flags]
    assert fields["Context"] == context, fields["Context"]
    assert fields["Override"] == override, fields["Override"]

    syntax = code(fields["Syntax"]).split()
    assert syntax[0] == name, syntax
    args = syntax[1:]
    if kind == "FLAG":
        assert args == ["On|Off"], syntax
    elif kind == "TAKE1":
        assert len(args) == 1 and not args[0].startswith("["), syntax
    elif kind == "TAKE12":
        assert len(args) == 2 and not args[0].startswith("[") \
            and re.fullmatch(r"\[[^\]]+\]", args[1]), syntax
    elif kind == "TAKE_ARGV":
        assert args[-1] == "...", syntax
    else:
        raise AssertionError("AP_INIT_%s: add a rule for it" % kind)


def test_defaults_match_the_code():
    text = SOURCE.read_text()

    def define(macro):
        m = re.search(r"^#define %s (.+)$" % macro, text, re.M)
        assert m, "no #define %s in mod_pdftoken.c" % macro
        return m.group(1).strip().strip('"')

    s = sections()
    assert code(s["PdfTokenTimeout"]["Default"]) == \
        "PdfTokenTimeout " + define("TIMEOUT_DEFAULT")
    assert code(s["PdfTokenName"]["Default"]) == \
        "PdfTokenName " + define("NAME_DEFAULT")
    assert s["PdfTokenTypes"]["Default"] == "none beyond the built-in types"
    assert code(s["PdfTokenDynamic"]["Default"]) == "PdfTokenDynamic redirect"
    assert code(s["PdfTokenExempt"]["Default"]) == "PdfTokenExempt none"
    # The built-in types the reference names are the library's list.
    lib = (REPO / "token.c").read_text()
    m = re.search(r"pdftoken_pdf_types\[\] = \{(.*?)\};", lib, re.S)
    assert m, "no pdftoken_pdf_types in token.c"
    builtin = re.findall(r'"([^"]+)"', m.group(1))
    body = REFERENCE.read_text().split("## PdfTokenTypes")[1]
    para = body[body.index("The types that"):body.index("(each measured")]
    named = re.findall(r"`([a-z]+/[a-z.+-]+)`", para)
    assert named == builtin, (named, builtin)
    assert code(s["PdfTokenProtect"]["Default"]) == "PdfTokenProtect Off"
    assert code(s["PdfTokenFallback"]["Default"]) == \
        "PdfTokenFallback attachment"
    # The timeout's range in the text is the code's.
    body = REFERENCE.read_text().split("## PdfTokenTimeout")[1]
    assert "From 1 to %s." % define("MAX_TIMEOUT") in body


@pytest.mark.parametrize("path", MENTIONS, ids=lambda p: p.name)
def test_only_real_directives_are_mentioned(path):
    names = set(re.findall(r"\bPdfToken[A-Z]\w*", path.read_text()))
    assert names, "%s mentions no directive at all" % path
    assert names - set(DIRECTIVES) == set(), path


# ------------------------------------- one set of directives and defaults


def default_of(name):
    """The reference's default for name, as a value ("10", "Off", ...)."""
    d = sections()[name]["Default"]
    if d.startswith("`"):
        words = code(d).split(None, 1)
        assert words[0] == name, d
        return words[1]
    return d


def flat(path):
    """path's text with line breaks (and a config's comment marks)
    folded into single spaces."""
    return re.sub(r"\s*\n\s*#?\s*", " ", path.read_text())


def test_readme_states_the_code_defaults():
    text = flat(README)
    assert "`PdfTokenTimeout` seconds (%s)" % default_of(
        "PdfTokenTimeout") in text
    assert "`PdfTokenBindAddress %s` (the default)" % default_of(
        "PdfTokenBindAddress") in text
    assert "pdftoken=" in text and default_of("PdfTokenName") == "pdftoken"


def test_example_shows_every_directive_with_its_default():
    # "# Default: <directive> <value>" (or, for a directive whose default
    # is no value, the reference's wording), and the directive itself,
    # set or commented out.
    text = EXAMPLE.read_text()
    for name in DIRECTIVES:
        assert re.search(r"^\s*#?\s*%s\b" % name, text, re.M), name
        m = re.findall(r"^\s*# Default: %s (.+)$" % name, text, re.M)
        assert m == [default_of(name)], (name, m)


@pytest.mark.parametrize("path", MENTIONS, ids=lambda p: p.name)
def test_every_default_stated_is_the_reference_default(path):
    for name, value in re.findall(r"# Default: (PdfToken\w+) (.+)$",
                                  path.read_text(), re.M):
        assert value == default_of(name), (path, name, value)


def active_lines(text):
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_packaged_conf_names_the_packages_secret_and_turns_nothing_on():
    text = PACKAGED.read_text()
    postinst = (REPO / "debian" /
                "libapache2-mod-pdftoken.postinst").read_text()
    secret = re.search(r"^SECRET=(\S+)$", postinst, re.M).group(1)
    assert active_lines(text) == ["<IfModule pdftoken_module>",
                                  "PdfTokenSecretFile " + secret,
                                  "</IfModule>"]
    # The example names the same file, and says where it is named.
    assert "#PdfTokenSecretFile %s" % secret in EXAMPLE.read_text()
    # Where PdfTokenProtect goes is shown outside the <IfModule>, and the
    # example of it is not wrapped either.
    wrapper = text.index("<IfModule")
    assert text.index("PdfTokenProtect On") < wrapper
    assert "<IfModule" not in "\n".join(active_lines(EXAMPLE.read_text()))


def test_one_whitespace_rule_and_one_rotation_everywhere():
    rule = "trailing spaces, tabs, CR and LF are not part of it"
    for path in [REFERENCE] + CONFIGS:
        assert rule in flat(path), path
    for path in MENTIONS:
        # The secret and the previous secret have one name each.
        names = set(re.findall(r"pdftoken\.secret[\w.]*",
                               path.read_text()))
        assert names <= {"pdftoken.secret", "pdftoken.secret.old"}, \
            (path, names)


# ------------------------------------------------------------- logging


def message_levels():
    """{"PDFTOKEN000nn": level} from the code's log calls."""
    text = SOURCE.read_text()
    found = {}
    for level, number in re.findall(
            r"ap_log_r?error\(\s*APLOG_MARK,\s*APLOG_(\w+),[^;]*?"
            r"PDFTOKEN_LOGNO\((\d{5})\)", text, re.S):
        name = "PDFTOKEN" + number
        assert found.setdefault(name, level.lower()) == level.lower(), name
    assert len(set(re.findall(r"PDFTOKEN_LOGNO\((\d{5})\)", text))) == \
        len(found), "a PDFTOKEN_LOGNO outside an ap_log_*error call"
    return {n: {"err": "error"}.get(lv, lv) for n, lv in found.items()}


def logging_table():
    """{number: level} of the message table in docs/logging.md."""
    rows = re.findall(r"^\| `(PDFTOKEN\d{5})` \| (\w+) \|",
                      LOGGING.read_text(), re.M)
    assert len(rows) == len(dict(rows)), rows
    return dict(rows)


def test_every_message_number_is_in_the_table_with_its_level():
    assert logging_table() == message_levels()


def test_unused_message_numbers_are_said_and_no_document_names_another():
    used = message_levels()
    top = max(int(n[8:]) for n in used)
    gaps = {"PDFTOKEN%05d" % i for i in range(1, top)} - set(used)
    m = re.search(r"Numbers? ((?:`PDFTOKEN\d{5}`(?:,| and| )*)+) (?:is|are) "
                  r"not used", flat(LOGGING))
    assert m and set(re.findall(r"PDFTOKEN\d{5}", m.group(1))) == gaps
    for path in MENTIONS:
        text = path.read_text().replace(m.group(0), "") \
            if path == LOGGING else path.read_text()
        named = set(re.findall(r"PDFTOKEN\d{5}", text))
        assert named <= set(used), (path, named - set(used))


def pdftoken_values():
    """Every value the code gives the PDFTOKEN variable."""
    text = SOURCE.read_text()
    m = re.search(r"verdict_names\[\] = \{(.*?)\};", text, re.S)
    values = set(re.findall(r'"(\w+)"', m.group(1)))
    values |= set(re.findall(
        r'apr_table_setn\(r->subprocess_env, "PDFTOKEN", "(\w+)"\)', text))
    assert len(re.findall(r'"PDFTOKEN", ', text)) == \
        len(re.findall(r'apr_table_setn\(r->subprocess_env, "PDFTOKEN", ',
                       text))
    return values


def test_pdftoken_values_in_the_logging_table_are_the_codes():
    rows = re.findall(r"^\| `([a-z]+)` \| ", LOGGING.read_text(), re.M)
    assert set(rows) == pdftoken_values() == {
        "redirect", "pass", "range", "fallback", "deny", "exempt"}


@pytest.mark.parametrize("path", [README, EXAMPLE], ids=lambda p: p.name)
def test_pdftoken_values_listed_are_the_codes(path):
    text = flat(path)
    m = re.search(r"(`?redirect`?, .*?) or `?(\w+)`?", text) \
        if path == README else re.search(r"PDFTOKEN: ([\w, ]+);", text)
    listed = re.findall(r"\w+", m.group(0).split(":", 1)[-1]
                        if path != README else m.group(0))
    listed = [w for w in listed if w not in ("or", "PDFTOKEN")]
    assert set(listed) == pdftoken_values(), listed


def readme_logformat():
    lines = re.findall(r"^LogFormat .* pdftoken$", README.read_text(), re.M)
    assert len(lines) == 1, lines
    return lines[0]


def test_one_logformat_combined_plus_the_decision():
    line = readme_logformat()
    # httpd's combined (with %b, which needs no mod_logio) and one field.
    combined = r'%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" ' \
        r'\"%{User-Agent}i\"'
    assert line == 'LogFormat "%s pdftoken=%%{PDFTOKEN}e" pdftoken' \
        % combined, line
    # The example shows the same line, commented out (a nickname defined
    # in a file that a2disconf or a2dismod takes away would leave
    # CustomLog logging the bare word); the packaged file defines none.
    assert "#   " + line in EXAMPLE.read_text()
    assert "LogFormat" not in "\n".join(active_lines(PACKAGED.read_text()))
    assert "LogFormat" not in "\n".join(active_lines(EXAMPLE.read_text()))


# ------------------------------------------ version, minimum, UA rule


def version():
    m = re.search(r'^#define MOD_PDFTOKEN_VERSION "([\d.]+)"$',
                  SOURCE.read_text(), re.M)
    assert m
    return m.group(1)


def test_one_version_everywhere():
    v = version()
    assert SOURCE.read_text().count(v) == 1, "written once"
    changelog = (REPO / "debian" / "changelog").read_text()
    assert re.match(r"libapache2-mod-pdftoken \(%s-\d+\) " % re.escape(v),
                    changelog), changelog.splitlines()[0]
    changes = (REPO / "CHANGES").read_text()
    assert re.findall(r"^(\d+\.\d+\.\d+) ", changes, re.M)[0] == v
    readme = README.read_text()
    assert "Version %s." % v in readme
    assert set(re.findall(r"libapache2-mod-pdftoken_([\d.]+)-\d+_",
                          readme)) == {v}
    for path in (REFERENCE, LOGGING, BEHAVIOUR):
        assert set(re.findall(r"mod_pdftoken/([\d.]+)",
                              path.read_text())) == {v}, path


def test_one_minimum_httpd_everywhere():
    text = SOURCE.read_text()
    m = re.search(r"#if !AP_MODULE_MAGIC_AT_LEAST\((\d+), (\d+)\)\n"
                  r'#error "mod_pdftoken needs Apache httpd ([\d.]+) or later',
                  text)
    assert m, "no build-time check of the httpd version"
    # 20120211.0 is httpd 2.4.1, the first 2.4 release.
    assert (m.group(1), m.group(2), m.group(3)) == ("20120211", "0", "2.4.1")
    assert "httpd module (%s or later" % m.group(3) in README.read_text()
    assert "| Compatibility | Apache httpd %s and later |" % m.group(3) \
        in REFERENCE.read_text()
    control = (REPO / "debian" / "control").read_text()
    assert "apache2-dev (>= %s)" % m.group(3) in control


def bind_rule():
    """The User-Agent words of PdfTokenBindAddress auto, in the code."""
    body = re.search(r"static int ignores_host_prefix\(.*?\n\}",
                     SOURCE.read_text(), re.S).group(0)
    return re.findall(r'strstr\(ua, "([^"]+)"\)', body)


@pytest.mark.parametrize("path", [README, REFERENCE, EXAMPLE],
                         ids=lambda p: p.name)
def test_bind_auto_rule_is_the_codes(path):
    words = bind_rule()
    assert words == ["AppleWebKit/", "Chrome", "Macintosh", "iPhone",
                     "iPad", "iPod"]
    text = flat(path).replace("`", "")
    m = re.search(r"contains AppleWebKit/ and none of ", text)
    assert m, path
    named = [w for w in re.findall(r"\w+", text[m.end():])[:6]
             if w != "and"]
    assert named[:len(words) - 1] == words[1:], named


# --------------------------------------- what the package's docs link to


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", path.read_text(), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(slug)
    return out


@pytest.mark.parametrize("path", SHIPPED_DOCS, ids=lambda p: p.name)
def test_shipped_docs_link_only_to_shipped_docs(path):
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"https?://", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest in SHIPPED_DOCS, (path.name, target)
        if anchor:
            assert anchor in anchors(dest), (path.name, target)


@pytest.mark.parametrize("path", SHIPPED_DOCS + CONFIGS,
                         ids=lambda p: p.name)
def test_admin_docs_speak_of_the_module_not_of_its_tests(path):
    text = path.read_text()
    for word in ("SPEC", "t/browser", "t/deploy", "t/integration",
                 "make browser", "the suite", "test suite", "pytest"):
        assert word not in text, (path.name, word)


def test_readme_stays_short():
    assert len(README.read_text().splitlines()) <= 200
    assert len(README.read_text().split()) <= 1400


# ------------------------------------------------- examples are valid


def examples():
    """(section, block) for each ```apache block of the reference."""
    out = []
    text = REFERENCE.read_text()
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        heading = block.partition("\n")[0].strip()
        for m in re.finditer(r"^```apache\n(.*?)^```$", block, re.M | re.S):
            out.append((heading, m.group(1)))
    return out


EXAMPLES = examples()


@pytest.fixture(scope="module")
def cfg(pool):
    # Never started: only `apache2 -t` runs on this tree.  The examples'
    # secret files are made here.
    s = pool.make("docs", secret_directive=False)
    s.write_secret(s.root / "pdftoken.secret", "a" * 64 + "\n")
    s.write_secret(s.root / "pdftoken.secret.old", "b" * 64 + "\n")
    return s


def localise(text):
    return text.replace("/etc/apache2/pdftoken.secret",
                        "@ROOT@/pdftoken.secret")


def test_every_directive_has_an_example():
    assert {h for h, _ in EXAMPLES} >= set(DIRECTIVES), EXAMPLES


@pytest.mark.parametrize("heading,block", EXAMPLES,
                         ids=["%s-%d" % (h, i) for i, (h, _) in
                              enumerate(EXAMPLES)])
def test_reference_example_passes_configtest(cfg, heading, block):
    cfg.configure(localise(block))
    rc, out = cfg.configtest()
    assert rc == 0, "%s example:\n%s\n%s" % (heading, block, out)
    assert "Syntax OK" in out


def uncommented(path):
    """The configuration with every commented-out directive set: each
    "#PdfToken..." line (also indented, as in a block); prose is "# ..."."""
    return re.sub(r"^(\s*)#(PdfToken\w+)\b", r"\1\2", path.read_text(),
                  flags=re.M)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_configuration_passes_configtest_as_shipped(cfg, path):
    # The packaged one reads /etc/apache2/pdftoken.secret, which the
    # package makes; the example names no secret of its own.
    cfg.configure(localise(path.read_text()))
    rc, out = cfg.configtest()
    assert rc == 0, out


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_configuration_passes_configtest_with_its_examples_set(cfg, path):
    text = uncommented(path)
    if path == EXAMPLE:
        active = {line.split()[0] for line in active_lines(text)
                  if line.startswith("PdfToken")}
        assert active == set(DIRECTIVES), active
    cfg.configure(localise(text))
    rc, out = cfg.configtest()
    assert rc == 0, out


def test_readme_blocks_pass_configtest(cfg):
    # The blocks as an administrator pastes them, with this test's paths:
    # the module is loaded already, the log directory is the server's.
    blocks = re.findall(r"^```apache\n(.*?)^```$", README.read_text(),
                        re.M | re.S)
    assert len(blocks) == 3, blocks
    text = "\n".join(blocks)
    text = re.sub(r"^LoadModule .*$", "", text, flags=re.M)
    text = text.replace("/etc/httpd/conf/pdftoken.secret",
                        "/etc/apache2/pdftoken.secret")
    cfg.configure("Define APACHE_LOG_DIR @ROOT@/logs\n" + localise(text))
    rc, out = cfg.configtest()
    assert rc == 0 and "Syntax OK" in out, out
