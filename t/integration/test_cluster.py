# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A real cluster (SPEC section 3: "Servers behind one load balancer share a
secret file, and the design needs no shared state"; README "Behind a load
balancer").

Two back ends behind a front httpd with mod_proxy_balancer, round robin
(`lbmethod=byrequests`), no stickiness, all on 127.0.0.1.  Each back end
says who it is in `X-Backend` (`Header always set`, so that the 302s carry
it too), which is how every test proves where each request landed.

- Shared secret: the redirect comes from one back end, the follow-up with
  the cookie is served inline by the other.
- Different secrets: each back end refuses the other's token (R4), so a
  browser is sent from redirect to redirect and never sees the document.
- `ProxyPreserveHost On` makes the `Location` point at the front end;
  without it the back end builds the `Location` from the balancer member's
  address and sends the browser straight past the front end;
  `ProxyPassReverse` maps that header back, but not the link in the
  page that `PdfTokenFragment safe` sends instead of the 302.
- Rotating the secret node by node (`PdfTokenSecretFile new old`): what a
  reader sees while the nodes disagree.
"""

import re
import subprocess

import pytest

import pdftoken_ref as ref
from checks import assert_inline, assert_redirect, assert_untouched

DOC = "/prot/doc.pdf"
SAFE_DOC = "/prot/safe/doc.pdf"
NAVIGATION = [("Sec-Fetch-Dest", "document"), ("Accept", "text/html")]
OPEN = "/open/page.txt"
PROXY_MODULES = ("proxy", "proxy_http", "proxy_balancer", "slotmem_shm",
                 "lbmethod_byrequests")

BACKEND = r"""
@SECRETLINE@
Header always set X-Backend "@NAME@"
<Directory "@DOCROOT@/prot">
    PdfTokenProtect On
    PdfTokenTimeout 30
</Directory>
<Directory "@DOCROOT@/prot/safe">
    PdfTokenFragment safe
</Directory>
"""

FRONT = r"""
<Proxy "balancer://pdfs">
    BalancerMember "http://127.0.0.1:@P1@"
    BalancerMember "http://127.0.0.1:@P2@"
    ProxySet lbmethod=byrequests
</Proxy>
ProxyPass "/" "balancer://pdfs/"
@EXTRA@
"""

PDF_BYTES = None


def pdf_bytes():
    global PDF_BYTES
    if PDF_BYTES is None:
        from samplepdf import make_pdf
        PDF_BYTES = make_pdf("cluster doc")
    return PDF_BYTES


def secret_file(workdir, name):
    """A secret made the way README says: openssl rand -hex 32."""
    path = workdir / ("cluster-%s.secret" % name)
    out = subprocess.run(["openssl", "rand", "-hex", "32"], check=True,
                         capture_output=True, timeout=30).stdout
    path.write_bytes(out)
    path.chmod(0o644)
    return path


def secret_line(*files):
    return "PdfTokenSecretFile " + " ".join('"%s"' % f for f in files)


def backend(pool, name, *files):
    s = pool.make(name, secret_directive=False)
    s.name = name
    s.write("prot/doc.pdf", pdf_bytes())
    s.write("prot/safe/doc.pdf", pdf_bytes())
    s.write("open/page.txt", "page from %s\n" % name)
    s.configure_secret = lambda *f: s.configure(
        BACKEND.replace("@SECRETLINE@", secret_line(*f))
        .replace("@NAME@", name))
    s.configure_secret(*files)
    s.start()
    return s


def front(pool, name, b1, b2, extra=""):
    s = pool.make(name, modules=PROXY_MODULES)
    s.configure(FRONT.replace("@P1@", str(b1.port))
                .replace("@P2@", str(b2.port)).replace("@EXTRA@", extra))
    s.start()
    s.backends = {b1.name: b1, b2.name: b2}
    return s


def served_by(r):
    name = r.get("X-Backend")
    assert name, "no X-Backend in %r" % r
    return name


@pytest.fixture(scope="module")
def cluster(pool, workdir):
    shared = secret_file(workdir, "shared")
    own3, own4 = secret_file(workdir, "own3"), secret_file(workdir, "own4")
    c = {
        "shared": ref.read_secret(shared),
        "own3": ref.read_secret(own3),
        "own4": ref.read_secret(own4),
        "b1": backend(pool, "b1", shared),
        "b2": backend(pool, "b2", shared),
        "b3": backend(pool, "b3", own3),
        "b4": backend(pool, "b4", own4),
    }
    c["front"] = front(pool, "front", c["b1"], c["b2"],
                       "ProxyPreserveHost On")
    c["apart"] = front(pool, "apart", c["b3"], c["b4"],
                       "ProxyPreserveHost On")
    c["nohost"] = front(pool, "nohost", c["b1"], c["b2"])
    c["reverse"] = front(pool, "reverse", c["b1"], c["b2"],
                         'ProxyPassReverse "/" "balancer://pdfs/"')
    return c


def test_balancer_sends_requests_round_robin(cluster):
    f = cluster["front"]
    seen = []
    for _ in range(4):
        r = f.get(OPEN)
        name = served_by(r)
        assert_untouched(r, ("page from %s\n" % name).encode())
        seen.append(name)
    assert seen[0] != seen[1] and seen[0::2] == [seen[0]] * 2 \
        and seen[1::2] == [seen[1]] * 2, seen


def test_shared_secret_redirect_on_one_backend_inline_on_the_other(cluster):
    f = cluster["front"]
    r = f.get(DOC)
    first = served_by(r)
    # ProxyPreserveHost On: the back end saw the front end's Host, so the
    # Location (and the cookie's host) is the front end's.
    token, cookie = assert_redirect(f, r, DOC, timeout=30,
                                    secret=cluster["shared"])
    landed = []
    for _ in range(2):
        r2 = f.get(r.location_target(), cookies=[cookie])
        landed.append(served_by(r2))
        assert_inline(r2, pdf_bytes())
    # Round robin: the two follow-ups went to both back ends, one of them
    # the one that did not mint the token.
    assert sorted(landed) == ["b1", "b2"], (first, landed)
    assert landed[0] != first, (first, landed)


def test_shared_secret_both_directions(cluster):
    # Whichever back end the redirect comes from, the other accepts it.
    f = cluster["front"]
    for first in ("b1", "b2"):
        for _ in range(3):  # round robin: at most two tries to land there
            r = f.get(DOC)
            if served_by(r) == first:
                break
        assert served_by(r) == first
        _, cookie = assert_redirect(f, r, DOC, timeout=30,
                                    secret=cluster["shared"])
        for _ in range(3):
            r2 = f.get(r.location_target(), cookies=[cookie])
            assert_inline(r2, pdf_bytes())
            if served_by(r2) != first:
                break
        assert served_by(r2) != first


def test_different_secrets_send_the_browser_round_in_redirects(cluster):
    # The contract's R4: a token with a bad tag (here: another server's
    # secret) is answered with a fresh token, never the document.  Behind
    # a round-robin balancer every follow-up lands on the other back end,
    # so a browser goes from 302 to 302 until it gives up.
    f = cluster["apart"]
    secrets = {"b3": cluster["own3"], "b4": cluster["own4"]}
    cookies = []
    r = f.get(DOC)
    hops = []
    for _ in range(6):
        name = served_by(r)
        hops.append(name)
        token, cookie = assert_redirect(f, r, DOC, timeout=30,
                                        secret=secrets[name])
        other = secrets["b4" if name == "b3" else "b3"]
        assert not ref.verifies(other, token, DOC)
        cookies.append(cookie)  # a browser keeps and sends them all
        r = f.get(r.location_target(), cookies=cookies)
    assert hops == [hops[0], hops[1]] * 3 and hops[0] != hops[1], hops
    assert r.status == 302, r


def test_without_preserve_host_location_points_at_the_backend(cluster):
    # ProxyPreserveHost Off (httpd's default): the back end sees the
    # balancer member's address as Host and builds the Location from it.
    # The browser would leave the front end and go to the back end
    # directly (which, in production, it usually cannot even reach).
    f = cluster["nohost"]
    r = f.get(DOC)
    b = f.backends[served_by(r)]
    token, _ = assert_redirect(b, r, DOC, timeout=30,
                               secret=cluster["shared"])
    assert r.get("Location").startswith("http://127.0.0.1:%d/" % b.port)
    assert "127.0.0.1:%d" % f.port not in r.get("Location")


def test_proxy_pass_reverse_maps_the_backend_location_back(cluster):
    # Without ProxyPreserveHost, ProxyPassReverse rewrites the back end's
    # Location to the front end, query and empty fragment intact.
    f = cluster["reverse"]
    r = f.get(DOC)
    served_by(r)
    token, cookie = assert_redirect(f, r, DOC, timeout=30,
                                    secret=cluster["shared"])
    r2 = f.get(r.location_target(), cookies=[cookie])
    assert_inline(r2, pdf_bytes())


def fragment_page_url(r):
    """The tokenized URL a PdfTokenFragment safe page goes on to."""
    assert r.status == 200 and r.get("Location") is None, r
    assert r.get("Content-Type") == "text/html; charset=utf-8", r
    m = re.search(r'<a id="pdftoken-continue" href="([^"]*)"',
                  r.body.decode("utf-8"))
    assert m, r.body
    return m.group(1).replace("&amp;", "&")


def test_fragment_page_through_the_front_end_links_to_it(cluster):
    # PdfTokenFragment safe answers a navigation with a page whose link is
    # relative, so it resolves against the front end the browser talks to;
    # following it with the cookie lands inline on either back end.
    f = cluster["front"]
    r = f.get(SAFE_DOC, headers=NAVIGATION)
    first = served_by(r)
    url = fragment_page_url(r)
    token = url.split("pdftoken=")[1].rstrip("#")
    assert url == SAFE_DOC + "?pdftoken=" + token + "#", url
    assert ref.verifies(cluster["shared"], token, SAFE_DOC)
    r2 = f.get(SAFE_DOC + "?pdftoken=" + token,
               cookies=[ref.cookie_pair(token)], headers=NAVIGATION)
    assert served_by(r2) != first
    assert_inline(r2, pdf_bytes())


def test_fragment_page_link_needs_no_proxy_rewriting(cluster):
    # Behind a proxy with ProxyPassReverse only (no ProxyPreserveHost),
    # the Location names the back end, but the page's relative link still
    # resolves against the front end.
    f = cluster["reverse"]
    r = f.get(SAFE_DOC, headers=NAVIGATION)
    url = fragment_page_url(r)
    assert url.startswith(SAFE_DOC + "?pdftoken="), url


# ------------------------------------------------ rotating a cluster


def cross_visit(first, second):
    """R1 on `first`, the follow-up with its cookie on `second`; returns
    (token, follow-up response)."""
    r = first.get(DOC)
    assert served_by(r) == first.name
    token, cookie = assert_redirect(first, r, DOC, timeout=30)
    r2 = second.get(r.location_target(), cookies=[cookie])
    assert served_by(r2) == second.name
    return token, r2


@pytest.fixture
def rolling(fresh_pool, workdir):
    old, new = secret_file(workdir, "old"), secret_file(workdir, "new")
    n1 = backend(fresh_pool, "n1", old)
    n2 = backend(fresh_pool, "n2", old)
    return {"n1": n1, "n2": n2, "old": old, "new": new,
            "old_key": ref.read_secret(old), "new_key": ref.read_secret(new)}


def reconfigure(node, *files):
    node.configure_secret(*files)
    node.restart(graceful=True)


def test_rotation_node_by_node_costs_one_redirect_at_most(rolling):
    # README's procedure applied one node at a time: n1 already runs
    # `new old`, n2 still `old`.  n1 mints under the new secret, which n2
    # does not know yet: n2 answers with a fresh token under the old
    # secret, which n1 (and n2) accept.  One extra redirect, no loop.
    n1, n2 = rolling["n1"], rolling["n2"]
    reconfigure(n1, rolling["new"], rolling["old"])
    token, r2 = cross_visit(n1, n2)
    assert ref.verifies(rolling["new_key"], token, DOC)
    token2, cookie2 = assert_redirect(n2, r2, DOC, timeout=30,
                                      secret=rolling["old_key"])
    assert_inline(n1.get(r2.location_target(), cookies=[cookie2]),
                  pdf_bytes())
    assert_inline(n2.get(r2.location_target(), cookies=[cookie2]),
                  pdf_bytes())
    # The other direction needs no extra step: n1 still accepts old.
    token, r2 = cross_visit(n2, n1)
    assert_inline(r2, pdf_bytes())


def test_rotation_in_three_steps_never_refuses_a_token(rolling):
    # Step 1, every node `old new`: still mint old, already accept new.
    # Step 2, every node `new old`: mint new, still accept old.
    # Step 3, after the timeout, every node `new`.  Between any two nodes
    # at neighbouring steps, a token minted by either verifies on both.
    n1, n2 = rolling["n1"], rolling["n2"]
    old, new = rolling["old"], rolling["new"]
    for files in ((old, new), (new, old), (new,)):
        reconfigure(n1, *files)          # n1 a step ahead of n2
        for a, b in ((n1, n2), (n2, n1)):
            _, r2 = cross_visit(a, b)
            assert_inline(r2, pdf_bytes())
        reconfigure(n2, *files)          # n2 catches up
        for a, b in ((n1, n2), (n2, n1)):
            token, r2 = cross_visit(a, b)
            assert_inline(r2, pdf_bytes())
        key = rolling["old_key"] if files[0] == old else rolling["new_key"]
        assert ref.verifies(key, token, DOC)
