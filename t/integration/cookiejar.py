# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A browser's cookie jar, as RFC 6265 section 5 (and the cookie prefixes
of RFC 6265bis) has a user agent store and send cookies, for one host.

What it models: a cookie is keyed by name, domain and path; storing one
with a key already held replaces it and keeps the old creation time;
Max-Age=0 (or less) deletes; Path defaults to the request path's directory
and scopes what is sent; a Secure cookie is stored only from, and sent
only over, HTTPS; a `__Secure-` name needs Secure, a `__Host-` name needs
Secure, Path=/ and no Domain, from HTTPS; the Cookie header lists the
cookies with longer paths first, then the older first.

What it leaves out, on purpose: time (no cookie ever expires by its
Max-Age: the worst case for a pile-up), eviction (browsers keep at least
50 cookies per domain; what they evict beyond that is theirs to choose),
Expires (the module never sends it: a Set-Cookie with one fails).
"""

import urllib.parse

from client import parse_set_cookie


class Cookie:
    def __init__(self, name, value, domain, path, secure, created):
        self.name, self.value = name, value
        self.domain, self.path, self.secure = domain, path, secure
        self.created = created

    @property
    def key(self):
        return (self.name, self.domain, self.path)

    def __repr__(self):
        return "<Cookie %s=%s path=%s%s>" % (self.name, self.value[:12],
                                             self.path,
                                             " secure" if self.secure else "")


def default_path(request_path):
    """RFC 6265 section 5.1.4."""
    if not request_path.startswith("/") or request_path.count("/") == 1:
        return "/"
    return request_path[:request_path.rindex("/")]


def path_matches(request_path, cookie_path):
    """RFC 6265 section 5.1.4: does cookie_path cover request_path?"""
    if request_path == cookie_path:
        return True
    return request_path.startswith(cookie_path) and (
        cookie_path.endswith("/") or request_path[len(cookie_path)] == "/")


class CookieJar:
    """The cookies of one host, as a browser keeps them."""

    def __init__(self, host="127.0.0.1"):
        self.host = host
        self.cookies = {}   # key -> Cookie
        self.clock = 0      # creation order

    def store(self, set_cookie, url):
        """Apply one Set-Cookie value received in answer to `url`."""
        parts = urllib.parse.urlsplit(url)
        https = parts.scheme == "https"
        name, value, attrs = parse_set_cookie(set_cookie)
        keys = [k for k, _ in attrs]
        assert "expires" not in keys, \
            "this jar does not model Expires: %r" % set_cookie
        path = dict(attrs).get("path")
        if not path or not path.startswith("/"):
            path = default_path(parts.path or "/")
        secure = "secure" in keys
        if "domain" in keys:
            domain = dict(attrs)["domain"].lstrip(".").lower()
            if domain != self.host:
                return          # a domain that does not match: ignored
        if secure and not https:
            return              # RFC 6265bis: Secure needs a secure origin
        if name.startswith("__Secure-") and not secure:
            return
        if name.startswith("__Host-") and not (
                secure and path == "/" and "domain" not in keys):
            return
        max_age = dict(attrs).get("max-age")
        key = (name, self.host, path)
        if max_age is not None and int(max_age) <= 0:
            self.cookies.pop(key, None)
            return
        old = self.cookies.get(key)
        self.clock += 1
        self.cookies[key] = Cookie(name, value, self.host, path, secure,
                                   old.created if old else self.clock)

    def apply(self, response, url):
        """Store every Set-Cookie of a response, in order."""
        for value in response.get_all("Set-Cookie"):
            self.store(value, url)

    def header(self, url):
        """The Cookie header value a request to `url` carries, or None."""
        parts = urllib.parse.urlsplit(url)
        https = parts.scheme == "https"
        sent = [c for c in self.cookies.values()
                if path_matches(parts.path or "/", c.path)
                and (https or not c.secure)]
        sent.sort(key=lambda c: (-len(c.path), c.created))
        return "; ".join("%s=%s" % (c.name, c.value) for c in sent) or None

    def named(self, name):
        return [c for c in self.cookies.values() if c.name == name]
