# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The directive reference (docs/directives.md) against the code.

The directives are read from the `AP_INIT_*("Name", ...)` entries of
mod_pdftoken.c: every one has a section in docs/directives.md with the
httpd manual's fields, whose Context, Override and Syntax agree with the
entry's flags and kind, and whose Default agrees with the code's defaults;
no section, and no mention in README.md or the example configurations,
names a directive that does not exist.  Every example block of the
reference, and the packaged pdftoken.conf with all its examples
uncommented, passes `apache2 -t`.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "mod_pdftoken.c"
REFERENCE = REPO / "docs" / "directives.md"
MENTIONS = [REPO / "README.md", REFERENCE,
            REPO / "conf" / "pdftoken.conf.example",
            REPO / "debian" / "pdftoken.conf"]

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
    para = body[body.index("The types that"):body.index("(the browser")]
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


def readme_table():
    """{directive: default} from the directive table of README.md."""
    text = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| `(PdfToken\w+)[^`]*` \| ([^|]+?) \|", text,
                      re.M)
    assert len(rows) == len(dict(rows)), rows
    return dict(rows)


def test_readme_table_has_every_directive_with_the_reference_default():
    table = readme_table()
    assert set(table) == set(DIRECTIVES), table
    for name, default in table.items():
        assert default == default_of(name), (name, default)


@pytest.mark.parametrize("path", MENTIONS[2:], ids=lambda p: p.name)
def test_configuration_files_show_every_directive_with_its_default(path):
    # Each shipped configuration names every directive, and says its
    # default in a "# Default: <directive> <value>" line (or, for a
    # directive whose default is no value, the reference's wording).
    text = path.read_text()
    for name in DIRECTIVES:
        assert re.search(r"^\s*#?\s*%s\b" % name, text, re.M), (path, name)
        m = re.findall(r"^\s*# Default: %s (.+)$" % name, text, re.M)
        assert m == [default_of(name)], (path, name, m)


def test_one_whitespace_rule_and_one_rotation_everywhere():
    rule = "trailing spaces, tabs, CR and LF are not part of it"
    for path in [REPO / "README.md", REFERENCE] + MENTIONS[2:]:
        text = re.sub(r"\s*\n\s*#?\s*", " ", path.read_text())
        assert rule in text, path
        # The secret and the previous secret have one name each, everywhere.
        names = set(re.findall(r"pdftoken\.secret[\w.]*", text))
        assert names <= {"pdftoken.secret", "pdftoken.secret.old"}, \
            (path, names)


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


def packaged_conf(uncomment):
    text = (REPO / "debian" / "pdftoken.conf").read_text()
    if uncomment:
        # Examples are "#Directive" (or "#    " inside a block); prose
        # is "# text".
        text = re.sub(r"^(\s*)#((?:    )?(?:PdfToken\w+|</?Directory)\b)",
                      r"\1\2", text, flags=re.M)
        # Both PdfTokenSecretFile examples are now active; the second wins.
    return text


def test_packaged_conf_passes_configtest_as_shipped(cfg):
    # It reads /etc/apache2/pdftoken.secret, which the package makes.
    cfg.configure(localise(packaged_conf(False)))
    rc, out = cfg.configtest()
    assert rc == 0, out


def test_packaged_conf_examples_pass_configtest_uncommented(cfg):
    text = packaged_conf(True)
    active = [line.split()[0] for line in text.splitlines()
              if line.strip().startswith("PdfToken")]
    assert sorted(set(active)) == sorted(DIRECTIVES), active
    cfg.configure(localise(text))
    rc, out = cfg.configtest()
    assert rc == 0, out
