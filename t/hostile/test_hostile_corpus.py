# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The hostile-request corpus (t/hostile/corpus.txt) against a real httpd.

Every entry is sent byte for byte over a raw socket and must get the status
written beside it, pass its own checks and the checks every response must
pass (SPEC section 6: no control character or raw CR/LF in a header, no
cookie but the module's, every redirect with its empty fragment).  After
each entry the server must still be up and serve a PDF inline through an
ordinary visit, and the error log must show no crash.  The corpus format is
described at the top of corpus.txt; the server (`srv`, conftest.py) and the
placeholders' values are hostile_site.py's.
"""

import codecs
import re
import time
import urllib.parse
from pathlib import Path

import pytest

import client
import disposition
import pdftoken_ref as ref
from hostile_site import DOC, FILES

CORPUS = Path(__file__).resolve().parent / "corpus.txt"
# Crash signs, checked after every entry (the pool checks the whole log,
# and any sanitizer report, when the server stops).
CRASH_PATTERNS = ("exit signal", "AH00052", "Segmentation fault",
                  "AddressSanitizer", "runtime error:")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
FIELDS = ("name", "why", "request", "length", "expect", "check", "header",
          "body")


def load_corpus():
    """[{field: value or [values]}] in file order."""
    entries, cur = [], {}
    lines = CORPUS.read_text("ascii").splitlines() + [""]
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                entries.append(cur)
                cur = {}
            continue
        field, sep, value = line.partition(": ")
        assert sep and field in FIELDS, \
            "corpus.txt:%d: not a field line: %r" % (number, line)
        if field in ("check", "header", "body"):
            cur.setdefault(field, []).append(value)
        else:
            assert field not in cur, "corpus.txt:%d: %s twice" % (number,
                                                                  field)
            cur[field] = value
    for e in entries:
        assert {"name", "why", "request", "expect"} <= set(e), e
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names)), "duplicate names in corpus.txt"
    return entries


CORPUS_ENTRIES = load_corpus()


def test_corpus_is_large_enough():
    assert len(CORPUS_ENTRIES) >= 40


def unescape(text):
    """Python bytes escapes in an ASCII/latin-1 str to bytes."""
    return codecs.escape_decode(text.encode("latin-1"))[0]


def expand(srv, text):
    """Placeholders of corpus.txt to their values (still escaped text)."""

    minted = {}  # one token per path in an entry: {ck:P} pairs {tok:P}

    def token(m):
        kind, path = m.group(1), unescape(m.group(2))
        if path not in minted:
            minted[path] = ref.mint(srv.secret, path, lifetime=3600)
        t = minted[path]
        return t if kind == "tok" else ref.cookie_pair(t)

    def value(m):
        assert m.group(1) in srv.values, "unknown placeholder %s" % m.group(0)
        return srv.values[m.group(1)]

    text = re.sub(r"\{(tok|ck):([^{}]*)\}", token, text)
    text = re.sub(r"\{([A-Z][A-Z0-9]*)\}", value, text)
    rep = re.compile(r"\{rep:(\d+):([^{}]*)\}")
    while rep.search(text):
        text = rep.sub(lambda m: m.group(2) * int(m.group(1)), text)
    assert not re.search(r"\{(rep:|tok:|ck:|[A-Z][A-Z0-9]*\})", text), \
        "unexpanded placeholder in %r" % text[:200]
    return text


# ----------------------------------------------------------------- checks

def check_every_response(r):
    """What SPEC section 6 asks of any response, whatever the request."""
    for name, value in r.headers:
        assert HEADER_NAME.fullmatch(name), "bad header name %r" % name
        assert "injected" not in name.lower(), "injected header %r" % name
        bad = [c for c in value if ord(c) < 0x20 and c != "\t"
               or ord(c) == 0x7f]
        assert not bad, "control characters %r in %s: %r" % (bad, name,
                                                              value)
    for cname, _, _ in r.set_cookies():
        assert r.status == 302 and re.fullmatch(r"pdftoken_[A-Za-z0-9_-]{8}",
                                                cname), \
            "unexpected cookie %r on a %d" % (cname, r.status)
    for loc in r.get_all("Location"):
        assert loc.endswith("#"), "Location without its empty fragment: %r" \
            % loc


def check_redirect(srv, r, path, query=None):
    """R1/R4: the module's 302 for the decoded path `path` (bytes)."""
    assert r.status == 302, r
    loc = r.get("Location")
    assert loc and re.match(r"https?://[^/?#]+/", loc), r
    assert loc.endswith("#") and loc.count("#") == 1, loc
    parts = urllib.parse.urlsplit(loc)
    assert urllib.parse.unquote_to_bytes(parts.path) == path, \
        "Location path %r is not %r" % (parts.path, path)
    values = client.query_values(parts.query, "pdftoken")
    assert len(values) == 1, "want one fresh token in %r" % loc
    new = values[0]
    assert ref.TOKEN_RE.match(new), new
    assert ref.verifies(srv.secret, new, path), \
        "the new token is not valid for %r" % path
    assert ref.expiry_of(new) > time.time(), "the new token is expired"
    # The fresh token is the last parameter; everything before it is the
    # request's query without its tokens, byte for byte.
    assert parts.query.endswith("pdftoken=" + new), loc
    if query is not None:
        want = (query.decode("latin-1") + "&" if query else "") \
            + "pdftoken=" + new
        assert parts.query == want, "Location query %r, want %r" % (
            parts.query[:300], want[:300])
    cookies = [c for c in r.set_cookies() if c[1] == new]
    assert len(cookies) == 1 and len(r.get_all("Set-Cookie")) == 1, r
    cname, _, attrs = cookies[0]
    assert cname == ref.cookie_name(new), cname
    attrs = dict(attrs)
    assert urllib.parse.unquote_to_bytes(attrs["path"]) == path, attrs
    assert re.fullmatch(r"[!-:<-~]+", attrs["path"]), \
        "cookie Path %r holds bytes that would end it" % attrs["path"]
    assert "httponly" in attrs and attrs.get("samesite") == "Lax", attrs
    assert "domain" not in attrs, attrs
    assert r.get("Cache-Control") == "no-store", r


def check_file(srv, r, key, status=200):
    assert r.status == status, r
    assert r.body == srv.files[key], "body is not the whole %s" % key


def file_type(key):
    """The Content-Type httpd gives the file: none without an extension."""
    return "application/pdf" if FILES[key][0].endswith(".pdf") else None


def check_inline(srv, r, key):
    check_file(srv, r, key)
    assert r.get("Content-Type") == file_type(key), r
    assert r.get("Content-Disposition") is None, r


def check_attachment(srv, r, key):
    check_file(srv, r, key)
    assert r.get("Content-Type") == "application/octet-stream", r
    assert r.get("X-Content-Type-Options") == "nosniff", r
    name = FILES[key][0].rsplit("/", 1)[1]
    if not name.endswith(".pdf"):
        name += ".pdf"  # SPEC 2: a forced download's name ends in .pdf
    cd = r.get("Content-Disposition")
    assert cd and cd.lower().startswith("attachment"), r
    assert disposition.download_name(cd) == name, cd


def check_range(srv, r, key, first, last):
    data = srv.files[key]
    assert r.status == 206, r
    assert r.get("Content-Range") == "bytes %d-%d/%d" % (first, last,
                                                         len(data)), r
    assert r.body == data[first:last + 1], r
    assert r.get("Content-Type") == file_type(key), r
    assert r.get("Content-Disposition") is None, r


def check_header(srv, r, spec):
    spec = expand(srv, spec)
    if spec.startswith("!"):
        assert not r.get_all(spec[1:]), "%s present in %r" % (spec[1:], r)
        return
    m = re.fullmatch(r"([A-Za-z0-9-]+) (!?~) (.*)", spec)
    assert m, "bad header predicate %r" % spec
    name, op, regex = m.groups()
    values = r.get_all(name)
    if op == "~":
        assert values, "no %s in %r" % (name, r)
        assert any(re.search(regex, v) for v in values), \
            "%s %r does not match %r" % (name, values, regex)
    else:
        assert not any(re.search(regex, v) for v in values), \
            "%s %r matches %r" % (name, values, regex)


def run_check(srv, r, spec):
    words = expand(srv, spec).split(" ")
    kind, args = words[0], [unescape(w) for w in words[1:]]
    if kind == "redirect":
        check_redirect(srv, r, args[0], args[1] if len(args) > 1 else None)
    elif kind == "inline":
        check_inline(srv, r, args[0].decode())
    elif kind == "attachment":
        check_attachment(srv, r, args[0].decode())
    elif kind == "range":
        check_range(srv, r, args[0].decode(), int(args[1]), int(args[2]))
    elif kind == "untouched":
        assert not r.get_all("Set-Cookie") and not r.get_all("Location"), r
    else:
        raise AssertionError("unknown check %r" % spec)


# ------------------------------------------------------------------ tests

def crash_lines(text):
    return [line for line in text.splitlines()
            if any(p in line for p in CRASH_PATTERNS)]


def run_entry(srv, entry):
    """Send one corpus entry and hold the answer and the server to it."""
    data = unescape(expand(srv, entry["request"]))
    if "length" in entry:
        line = data.split(b"\r\n", 1)[0]
        assert len(line) == int(entry["length"]), \
            "request line is %d bytes, corpus says %s" % (len(line),
                                                          entry["length"])
    offset = srv.error_log_size()
    r = srv.raw(data)

    expect = int(entry["expect"])
    if expect == 0:
        assert r.http09, "want an HTTP/0.9-style answer, got %r" % r
    else:
        assert not r.http09 and r.status == expect, \
            "want %d (%s), got %r" % (expect, entry["why"], r)
    check_every_response(r)
    for spec in entry.get("check", []):
        run_check(srv, r, spec)
    for spec in entry.get("header", []):
        check_header(srv, r, spec)
    for spec in entry.get("body", []):
        op, _, regex = expand(srv, spec).partition(" ")
        found = re.search(regex.encode("latin-1"), r.body)
        assert op in ("~", "!~"), "bad body predicate %r" % spec
        assert bool(found) == (op == "~"), \
            "body %r %s %r" % (r.body[:400], "does not match" if op == "~"
                               else "matches", regex)

    # The server survives, and still does its job.
    assert srv.alive(), srv.logs_text()
    check_inline(srv, srv.view(DOC), "doc")
    crashes = crash_lines(srv.error_log_since(offset))
    assert not crashes, "\n".join(crashes)
    # Under make test-asan: a report names the entry that caused it.
    reports = srv.sanitizer_reports()
    assert not reports, "sanitizer report %s:\n%s" % reports[0]


@pytest.mark.parametrize("entry", CORPUS_ENTRIES,
                         ids=[e["name"] for e in CORPUS_ENTRIES])
def test_hostile_request(srv, entry):
    run_entry(srv, entry)
