# Licensed under the Apache License, Version 2.0; see LICENSE.
"""No pile-up, at HTTP level (SPEC sections 4 and 5, issue 20): whatever
number of first views a page forces, a browser that keeps the module's
cookies as RFC 6265 says (cookiejar.py) holds at most 8 of them for one
document over HTTP (Path is the document's) and for the host over HTTPS
(`__Host-`, Path=/); the site's own session cookie is never expired or
overwritten and goes with every request; no Cookie header reaches httpd's
limit; and the next view still redirects and then ends inline.

What a browser engine does with a flood is measured in t/browser (p0-p3);
here the requests come one after another or in bursts, with no clock in
the test: in a burst, N requests leave with the same jar (as the requests
of a flood do, each sent before any answer came back) and their answers
are then stored in a shuffled order (a fixed seed).  A burst's answers
each add a cookie, so right after a burst the jar holds more than 8; the
next request carries them all, and its answer expires the surplus.  The
module records at most 32 of its cookies per request (4 x MAX_COOKIES in
mod_pdftoken.c), so one answer cuts a burst of up to 32 back to 8; the
bursts here are 6 (a browser's connections to one host) and 30.

The scenarios, 300 first views each: one document over HTTP (its name
needs escaping, so that the expiries' Path must match the stored one byte
for byte); 300 documents over HTTP; 300 documents over HTTPS.
"""

import copy
import random
import re

import pytest

from checks import assert_inline, assert_redirect
from cookiejar import CookieJar

VIEWS = 300
LIMIT = 8                       # SPEC section 4
FIELD_LIMIT = 8190              # httpd's LimitRequestFieldSize default
SEED = 20
SESSION = "session"
ONE_DOC = "/prot/pile%20up.pdf"

CONFIG = r"""
<Location "/login.txt">
    Header always set Set-Cookie "session=@SESSION@; Path=/; HttpOnly@SECURE@"
</Location>
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    # Longer than any run: a slow machine must not turn a follow-up into
    # an expired token.
    PdfTokenTimeout 3600
</Directory>
"""


def doc_path(i):
    return "/prot/d%03d.pdf" % i


def make_site(pool, name, tls):
    s = pool.make(name, tls=tls)
    s.session = "s1te-%s" % name
    s.files = {"one": s.write_pdf("prot/pile up.pdf", "one document")}
    data = s.write_pdf(doc_path(0).lstrip("/"), "many documents")
    for i in range(1, VIEWS + 1):
        s.write(doc_path(i).lstrip("/"), data)
    s.files["many"] = data
    s.write("login.txt", "welcome\n")
    s.configure(CONFIG.replace("@SESSION@", s.session)
                .replace("@SECURE@", "; Secure" if tls else ""))
    s.start()
    return s


@pytest.fixture(scope="module")
def site(pool):
    return make_site(pool, "pile", tls=False)


@pytest.fixture(scope="module")
def tls_site(pool):
    return make_site(pool, "pile-tls", tls=True)


class Browser:
    """A jar and the requests a browser sends with it to server s."""

    def __init__(self, s):
        self.s = s
        self.jar = CookieJar()
        self.sent = 0

    def send(self, target, header=None):
        """GET target with the jar's Cookie header (or `header`, a
        snapshot); checks what every request must be."""
        url = self.s.url(target)
        if header is None:
            header = self.jar.header(url)
        assert header and "%s=%s" % (SESSION, self.s.session) in \
            header.split("; "), "the session cookie is not sent: %r" % header
        line = "Cookie: " + header
        assert len(line) < FIELD_LIMIT, \
            "a Cookie header of %d bytes: httpd would refuse it" % len(line)
        self.sent += 1
        return self.s.get(target, headers=[("Cookie", header)])

    def store(self, r, target):
        for name, _, _ in r.set_cookies():
            assert name != SESSION, "the module set the site's cookie: %r" % r
        self.jar.apply(r, self.s.url(target))
        [session] = self.jar.named(SESSION)
        assert session.value == self.s.session, session


def login(s):
    b = Browser(s)
    r = s.get("/login.txt")
    assert r.status == 200, r
    b.jar.apply(r, s.url("/login.txt"))
    assert [c.value for c in b.jar.named(SESSION)] == [s.session], r
    return b


def module_cookies(jar, s, target):
    """The module's cookies the jar holds for one document (HTTP) or for
    the host (HTTPS: __Host-, Path=/)."""
    if s.tls:
        return [c for c in jar.cookies.values()
                if re.fullmatch(r"__Host-pdftoken_[A-Za-z0-9_-]{8}", c.name)
                and c.path == "/"]
    return [c for c in jar.cookies.values()
            if re.fullmatch(r"pdftoken_[A-Za-z0-9_-]{8}", c.name)
            and c.path == target]


def first_view(s, r, target):
    """R1 (its one fresh cookie, checked by assert_redirect), and besides
    it only expiries of the module's own cookies."""
    expiries = [v for v in r.get_all("Set-Cookie") if "; Max-Age=0;" in v]
    for v in expiries:
        assert re.fullmatch(r"(__Host-)?pdftoken_[A-Za-z0-9_-]{8}=; Path=%s; "
                            r"Max-Age=0; HttpOnly; SameSite=Lax%s"
                            % (re.escape("/" if s.tls else target),
                               "; Secure" if s.tls else ""), v), v
    fresh = copy.copy(r)
    fresh.headers = [(n, v) for n, v in r.headers if v not in expiries]
    assert_redirect(s, fresh, target, secret=s.secret, timeout=3600)


def check(b, target):
    held = module_cookies(b.jar, b.s, target)
    assert len(held) <= LIMIT, (
        "after %d requests the jar holds %d of the module's cookies for "
        "%s: %r" % (b.sent, len(held), "the host" if b.s.tls else target,
                    held))


def flood(b, targets, burst):
    """First views of targets in order: each burst of `burst` requests
    leaves with one snapshot of the jar, its answers are stored in a
    shuffled order, then one request goes alone; the bound is checked
    after each request that went alone.  (The last burst may have none
    after it: next_view's request follows.)"""
    rng = random.Random(SEED)
    i = 0
    while i < len(targets):
        group = targets[i:i + burst]
        i += len(group)
        if burst > 1:
            answers = [(b.send(t, header=b.jar.header(b.s.url(t))), t)
                       for t in group]
            rng.shuffle(answers)
            for r, t in answers:
                first_view(b.s, r, t)
                b.store(r, t)
            if i >= len(targets):
                break
            group = [targets[i]]
            i += 1
        t = group[0]
        r = b.send(t)
        first_view(b.s, r, t)
        b.store(r, t)
        check(b, t)


def next_view(b, target, body):
    """The next view still works: a redirect, then inline."""
    r = b.send(target)
    first_view(b.s, r, target)
    b.store(r, target)
    check(b, target)
    follow = r.location_target()
    r2 = b.send(follow)
    assert_inline(r2, body)
    b.store(r2, follow)
    check(b, target)


SCENARIOS = {
    "one-http": ("site", lambda: [ONE_DOC] * VIEWS, "one"),
    "many-http": ("site", lambda: [doc_path(i) for i in range(1, VIEWS + 1)],
                  "many"),
    "many-https": ("tls_site",
                   lambda: [doc_path(i) for i in range(1, VIEWS + 1)],
                   "many"),
}


@pytest.mark.parametrize("burst", [1, 6, 30],
                         ids=["sequential", "bursts-of-6", "bursts-of-30"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_first_views_never_pile_up(request, scenario, burst):
    fixture, targets, body = SCENARIOS[scenario]
    s = request.getfixturevalue(fixture)
    b = login(s)
    targets = targets()
    flood(b, targets, burst)
    assert b.sent == VIEWS
    last = ONE_DOC if scenario == "one-http" else doc_path(0)
    next_view(b, last, s.files[body])
    # Every document's family, not only the last one's.
    for t in set(targets):
        check(b, t)
