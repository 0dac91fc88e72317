/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * fuzz_cookie.c - libFuzzer target for pdftoken_cookie_match().
 *
 * Input layout: "NAME\nTOKEN\nHEADER": the cookie name runs to the first
 * '\n', the token to the second, and the Cookie header (arbitrary bytes,
 * NULs included) is the rest.  With one '\n' the token is empty, with
 * none the name is too.  A seed is therefore readable.
 *
 * Invariants (abort() on violation):
 *   - pdftoken_cookie_family() with NAME as the prefix counts what an
 *     independent walk counts, and records names that start with it;
 *   - the verdict on the header equals that of an independent reference
 *     walk written from the contract in token.h;
 *   - when NAME is a non-empty RFC 6265 token and TOKEN a run of
 *     cookie-octets (as a real name and token are): "NAME=TOKEN" matches,
 *     and still matches with "; HEADER" appended, with "HEADER; "
 *     prepended, quoted, or with spaces and tabs around name and value;
 *     and "NAME=TOKENx", a one-byte-shorter value and "xNAME=TOKEN" do
 *     not; nor does "HEADER,NAME=TOKEN" when HEADER holds no ';' (a ','
 *     separates nothing).
 */

#include "token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_sp(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/*
 * Reference: split on ';'; in each piece cut at the first '=',
 * trim spaces and tabs on both sides of both halves, drop one pair of
 * surrounding double quotes from the value, compare.
 */
static int ref_match(const unsigned char *h, size_t len,
                     const unsigned char *name, size_t namelen,
                     const unsigned char *tok, size_t toklen)
{
    size_t a = 0, b, eq, ns, ne, vs, ve;
    int found = 0;

    while (a < len) {
        b = a;
        while (b < len && h[b] != ';') {
            b++;
        }
        eq = a;
        while (eq < b && h[eq] != '=') {
            eq++;
        }
        if (eq < b) {
            ns = a;
            ne = eq;
            vs = eq + 1;
            ve = b;
            while (ns < ne && is_sp(h[ns])) {
                ns++;
            }
            while (ne > ns && is_sp(h[ne - 1])) {
                ne--;
            }
            while (vs < ve && is_sp(h[vs])) {
                vs++;
            }
            while (ve > vs && is_sp(h[ve - 1])) {
                ve--;
            }
            if (ve - vs >= 2 && h[vs] == '"' && h[ve - 1] == '"') {
                vs++;
                ve--;
            }
            if (ne - ns == namelen && ve - vs == toklen
                && memcmp(h + ns, name, namelen) == 0
                && memcmp(h + vs, tok, toklen) == 0) {
                found = 1;
            }
        }
        a = b + 1;
    }
    return found;
}

/* Reference for pdftoken_cookie_family(): split on ';', keep pairs with
 * '=' whose trimmed name is prefix and eight base64url characters. */
static size_t ref_family(const unsigned char *h, size_t len,
                         const unsigned char *prefix, size_t plen)
{
    size_t a = 0, b, eq, ns, ne, i, n = 0;

    while (a < len) {
        int ok;

        b = a;
        while (b < len && h[b] != ';') {
            b++;
        }
        eq = a;
        while (eq < b && h[eq] != '=') {
            eq++;
        }
        ns = a;
        ne = eq;
        while (ns < ne && is_sp(h[ns])) {
            ns++;
        }
        while (ne > ns && is_sp(h[ne - 1])) {
            ne--;
        }
        ok = eq < b && ne - ns == plen + 8 && memcmp(h + ns, prefix, plen) == 0;
        for (i = ns + plen; ok && i < ne; i++) {
            ok = (h[i] >= 'A' && h[i] <= 'Z') || (h[i] >= 'a' && h[i] <= 'z')
                 || (h[i] >= '0' && h[i] <= '9') || h[i] == '-' || h[i] == '_';
        }
        n += ok;
        a = b + 1;
    }
    return n;
}

/* RFC 6265 cookie-name: an RFC 2616 token, no CTLs and no separators. */
static int is_token_char(unsigned char c)
{
    return c > 0x20 && c < 0x7f && strchr("()<>@,;:\\\"/[]?={}", c) == NULL;
}

/* RFC 6265 cookie-octet. */
static int is_cookie_octet(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a)
           || (c >= 0x3c && c <= 0x5b) || (c >= 0x5d && c <= 0x7e);
}

/* The cookie being looked for, and a scratch buffer to build headers. */
typedef struct {
    const char *name, *tok;
    size_t namelen, toklen;
    char *buf;
    size_t len;
} probe;

static void put(probe *pr, const char *s, size_t n)
{
    memcpy(pr->buf + pr->len, s, n);
    pr->len += n;
}

static void puts_lit(probe *pr, const char *s)
{
    put(pr, s, strlen(s));
}

/* Run the library on the built header, from an exact-size heap copy, and
 * hold it to the reference; then reset the builder. */
static int run(probe *pr)
{
    char *h = malloc(pr->len);
    int r;

    if (pr->len > 0 && h == NULL) {
        abort();
    }
    memcpy(h, pr->buf, pr->len);
    r = pdftoken_cookie_match(h, pr->len, pr->name, pr->namelen, pr->tok,
                              pr->toklen);
    if (r
        != ref_match((const unsigned char *)h, pr->len,
                     (const unsigned char *)pr->name, pr->namelen,
                     (const unsigned char *)pr->tok, pr->toklen)) {
        abort();
    }
    free(h);
    pr->len = 0;
    return r;
}

/* Headers built around a well-formed NAME=TOKEN; hdr is arbitrary. */
static void check_wellformed(probe *pr, const char *hdr, size_t hdrlen)
{
    const char *name = pr->name, *tok = pr->tok;
    size_t namelen = pr->namelen, toklen = pr->toklen;

    /* Exactly "NAME=TOKEN". */
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    if (!run(pr)) {
        abort();
    }
    /* "NAME=TOKEN; junk": what follows a ';' is another pair. */
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    puts_lit(pr, "; ");
    put(pr, hdr, hdrlen);
    if (!run(pr)) {
        abort();
    }
    /* "junk; NAME=TOKEN" and "junk; NAME=TOKEN; junk". */
    put(pr, hdr, hdrlen);
    puts_lit(pr, "; ");
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    if (!run(pr)) {
        abort();
    }
    put(pr, hdr, hdrlen);
    puts_lit(pr, ";");
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    puts_lit(pr, "; ");
    put(pr, hdr, hdrlen);
    if (!run(pr)) {
        abort();
    }
    /* "junk,NAME=TOKEN": a ',' separates nothing, so without a ';' in
     * junk the pair's name starts with junk. */
    if (memchr(hdr, ';', hdrlen) == NULL) {
        put(pr, hdr, hdrlen);
        puts_lit(pr, ",");
        put(pr, name, namelen);
        puts_lit(pr, "=");
        put(pr, tok, toklen);
        if (run(pr)) {
            abort();
        }
    }
    /* Quoted value; spaces and tabs around name and value. */
    put(pr, name, namelen);
    puts_lit(pr, "=\"");
    put(pr, tok, toklen);
    puts_lit(pr, "\"");
    if (!run(pr)) {
        abort();
    }
    puts_lit(pr, " \t");
    put(pr, name, namelen);
    puts_lit(pr, " = ");
    put(pr, tok, toklen);
    puts_lit(pr, "\t ");
    if (!run(pr)) {
        abort();
    }
    /* Near misses: longer value, shorter value, longer name. */
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    puts_lit(pr, "x");
    if (run(pr)) {
        abort();
    }
    if (toklen > 0) {
        put(pr, name, namelen);
        puts_lit(pr, "=");
        put(pr, tok, toklen - 1);
        if (run(pr)) {
            abort();
        }
    }
    puts_lit(pr, "x");
    put(pr, name, namelen);
    puts_lit(pr, "=");
    put(pr, tok, toklen);
    if (run(pr)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl;
    size_t namelen = 0, tokoff = 0, toklen = 0, off = 0, hdrlen, i;
    char *name, *tok, *hdr;
    int valid, r;

    /* Offsets, not pointers: a missing '\n' leaves the part empty. */
    nl = memchr(data, '\n', size);
    if (nl != NULL) {
        namelen = (size_t)(nl - data);
        tokoff = off = namelen + 1;
        nl = memchr(data + off, '\n', size - off);
        if (nl != NULL) {
            toklen = (size_t)(nl - (data + off));
            off += toklen + 1;
        }
    }
    hdrlen = size - off;

    /* Exact-size heap copies, so ASan sees any read past either end. */
    name = malloc(namelen);
    tok = malloc(toklen);
    hdr = malloc(hdrlen);
    if ((namelen > 0 && name == NULL) || (toklen > 0 && tok == NULL)
        || (hdrlen > 0 && hdr == NULL)) {
        abort();
    }
    memcpy(name, data, namelen);
    memcpy(tok, data + tokoff, toklen);
    memcpy(hdr, data + off, hdrlen);

    r = pdftoken_cookie_match(hdr, hdrlen, name, namelen, tok, toklen);
    if (r != 0 && r != 1) {
        abort();
    }
    if (r
        != ref_match((const unsigned char *)hdr, hdrlen,
                     (const unsigned char *)name, namelen,
                     (const unsigned char *)tok, toklen)) {
        abort();
    }

    /* The cookie family with NAME as the prefix: the reference's count,
     * and every recorded name really starts with the prefix. */
    {
        size_t starts[4], lens[4], k, n;

        n = pdftoken_cookie_family(hdr, hdrlen, name, namelen, starts, lens, 4);
        if (n
            != ref_family((const unsigned char *)hdr, hdrlen,
                          (const unsigned char *)name, namelen)) {
            abort();
        }
        for (k = 0; k < n && k < 4; k++) {
            if (lens[k] != namelen + PDFTOKEN_SUFFIX_LEN
                || starts[k] + lens[k] > hdrlen
                || memcmp(hdr + starts[k], name, namelen) != 0) {
                abort();
            }
        }
    }

    valid = namelen > 0;
    for (i = 0; valid && i < namelen; i++) {
        valid = is_token_char((unsigned char)name[i]);
    }
    for (i = 0; valid && i < toklen; i++) {
        valid = is_cookie_octet((unsigned char)tok[i]);
    }
    if (valid) {
        probe pr;

        pr.name = name;
        pr.namelen = namelen;
        pr.tok = tok;
        pr.toklen = toklen;
        pr.len = 0;
        /* Room for the longest header built: two copies of hdr. */
        pr.buf = malloc(2 * hdrlen + namelen + toklen + 16);
        if (pr.buf == NULL) {
            abort();
        }
        check_wellformed(&pr, hdr, hdrlen);
        free(pr.buf);
    }

    free(name);
    free(tok);
    free(hdr);
    return 0;
}
