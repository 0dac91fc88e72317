/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * fuzz_query.c - libFuzzer target for pdftoken_query_find(),
 * pdftoken_query_strip() and pdftoken_query_split().
 *
 * Input layout: the parameter name runs to the first '\n', the query
 * string (arbitrary bytes, NULs included) is everything after it.  Without
 * a '\n' the name is empty and the whole input is the query.  A seed is
 * therefore readable: "t\nfile=a.pdf&t=abc".
 *
 * Invariants (abort() on violation):
 *   - strip writes at most len bytes plus a NUL, never more than len + 1;
 *   - the stripped query holds no parameter of that name;
 *   - find counts 0 => strip returns the query byte for byte;
 *   - strip is idempotent, and agrees byte for byte with a reference
 *     split-filter-join;
 *   - a NULL query (len 0) finds nothing and strips to "";
 *   - split gives find's count and value and strip's output and length;
 *   - find agrees with an independent walk over the '&'-separated
 *     parameters: the same count, and as value exactly the bytes after
 *     "name=" in the first one (empty, just after the name, for a bare
 *     "name").
 */

#include "token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Reference: a second, index-based walk over the parameters.  Returns how
 * many carry the name and sets *first and *firstlen to the first one.
 */
static size_t ref_count(const char *args, size_t len, const char *name,
                        size_t namelen, size_t *first, size_t *firstlen)
{
    size_t i, start = 0, count = 0;

    if (namelen == 0) {
        return 0;
    }
    for (i = 0; i <= len; i++) {
        if (i == len || args[i] == '&') {
            size_t plen = i - start;

            if ((plen == namelen
                 || (plen > namelen && args[start + namelen] == '='))
                && memcmp(args + start, name, namelen) == 0 && count++ == 0) {
                *first = start;
                *firstlen = plen;
            }
            start = i + 1;
        }
    }
    return count;
}

/* Reference strip: keep every other parameter, in order, '&'-joined. */
static size_t ref_strip(const char *args, size_t len, const char *name,
                        size_t namelen, char *out)
{
    size_t i, start = 0, o = 0, kept = 0;

    for (i = 0; i <= len; i++) {
        if (i == len || args[i] == '&') {
            size_t plen = i - start;
            int drop = namelen > 0
                       && (plen == namelen
                           || (plen > namelen && args[start + namelen] == '='))
                       && memcmp(args + start, name, namelen) == 0;

            if (!drop) {
                if (kept++ > 0) {
                    out[o++] = '&';
                }
                memcpy(out + o, args + start, plen);
                o += plen;
            }
            start = i + 1;
        }
    }
    out[o] = '\0';
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t namelen = nl ? (size_t)(nl - data) : 0;
    size_t off = nl ? namelen + 1 : 0;
    size_t len = size - off;
    char *name, *args, *out, *out2;
    const char *val = NULL;
    size_t vallen = 0, count, olen, olen2, first = 0, firstlen = 0;

    /* Exact-size heap copies, so ASan sees any access past either end;
     * strip is promised exactly len + 1 bytes of output. */
    name = malloc(namelen);
    args = malloc(len);
    out = malloc(len + 1);
    out2 = malloc(len + 1);
    if ((namelen > 0 && name == NULL) || (len > 0 && args == NULL)
        || out == NULL || out2 == NULL) {
        abort();
    }
    memcpy(name, data, namelen);
    memcpy(args, data + off, len);

    count = pdftoken_query_find(args, len, name, namelen, &val, &vallen);
    if (count != ref_count(args, len, name, namelen, &first, &firstlen)) {
        abort();
    }
    if (count > 0) {
        /* The first such parameter's value: after "name=", or empty right
         * after a bare "name". */
        const char *want =
            args + first + (firstlen > namelen ? namelen + 1 : namelen);
        size_t wantlen = firstlen > namelen ? firstlen - namelen - 1 : 0;

        if (val != want || vallen != wantlen) {
            abort();
        }
    }

    olen = pdftoken_query_strip(args, len, name, namelen, out);
    if (olen > len || out[olen] != '\0') {
        abort();
    }
    if (pdftoken_query_find(out, olen, name, namelen, &val, &vallen) != 0) {
        abort();
    }
    if (count == 0 && (olen != len || memcmp(out, args, len) != 0)) {
        abort();
    }
    /* Removing a parameter removes at least its (non-empty) name. */
    if (count > 0 && olen >= len) {
        abort();
    }
    ref_strip(args, len, name, namelen, out2);
    if (memcmp(out2, out, olen + 1) != 0) {
        abort();
    }
    olen2 = pdftoken_query_strip(out, olen, name, namelen, out2);
    if (olen2 != olen || memcmp(out2, out, olen) != 0) {
        abort();
    }
    /* One pass says what the two say apart. */
    {
        const char *sval = NULL, *fval = NULL;
        size_t svallen = 0, fvallen = 0, slen = 0;

        pdftoken_query_find(args, len, name, namelen, &fval, &fvallen);
        if (pdftoken_query_split(args, len, name, namelen, &sval, &svallen,
                                 out2, &slen)
                != count
            || (count > 0 && (sval != fval || svallen != fvallen))
            || slen != olen || memcmp(out2, out, olen + 1) != 0) {
            abort();
        }
    }

    /* No query at all is ordinary: a NULL args finds nothing and strips to
     * the empty string. */
    if (len == 0) {
        out[0] = 'x';
        if (pdftoken_query_find(NULL, 0, name, namelen, &val, &vallen) != 0
            || pdftoken_query_strip(NULL, 0, name, namelen, out) != 0
            || out[0] != '\0') {
            abort();
        }
    }

    free(name);
    free(args);
    free(out);
    free(out2);
    return 0;
}
