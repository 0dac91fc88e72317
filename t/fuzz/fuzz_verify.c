/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * fuzz_verify.c - libFuzzer target for pdftoken_verify() and the strict
 * base64url codec.
 *
 * Input layout: the first byte n says how many of the following bytes are
 * the token (clamped to what is there); the rest is the path.  A seed is
 * therefore readable: "<" (60) + a 60-character token + "/a.pdf".
 *
 * Invariants (abort() on violation):
 *   - a length other than PDFTOKEN_LEN is MALFORMED, before any key is
 *     used (checked with a key set that would fail if a MAC were tried);
 *   - OK or EXPIRED only for a token of exactly PDFTOKEN_LEN characters
 *     that re-mints, from its own expiry and nonce under the key that
 *     accepted it, to the same characters; OK iff now < expiry; the
 *     expiry is reported; the same token is BAD_TAG for another path and
 *     under an unrelated key;
 *   - a token that decodes to PDFTOKEN_RAW_LEN bytes with a known version
 *     is never MALFORMED or BAD_VERSION;
 *   - base64url: whatever decodes re-encodes to exactly the input
 *     (canonical), decoding needs exactly the room it reports, and any
 *     bytes survive encode then decode.
 */

#include "token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The seed tokens in t/fuzz/seeds/verify/ were minted under these keys,
 * with expiries either side of FUZZ_NOW. */
static const unsigned char fuzz_secret[] = "fuzz-key-0123456789abcdefghijklm";
static const unsigned char fuzz_old_secret[] =
    "fuzz-old-0123456789abcdefghijklm";
static const unsigned char fuzz_other_secret[] =
    "fuzz-oth-0123456789abcdefghijklm";
#define FUZZ_SECRET_LEN 32
#define FUZZ_NOW UINT64_C(1700000000)

/* keys[0] mints, keys[1] is the previous secret; other is unrelated. */
static pdftoken_key keys[2];
static pdftoken_key other;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (pdftoken_key_init(&keys[0], fuzz_secret, FUZZ_SECRET_LEN) != PDFTOKEN_OK
        || pdftoken_key_init(&keys[1], fuzz_old_secret, FUZZ_SECRET_LEN)
               != PDFTOKEN_OK
        || pdftoken_key_init(&other, fuzz_other_secret, FUZZ_SECRET_LEN)
               != PDFTOKEN_OK) {
        abort();
    }
    return 0;
}

static void check_b64url(const unsigned char *in, size_t len)
{
    /* Room for the decoded bytes and, separately, for re-encoding. */
    size_t cap = len / 4 * 3 + 3;
    unsigned char *raw = malloc(cap);
    char *enc = malloc(len + 4);
    char *enc2 = malloc((len + 2) / 3 * 4 + 1);
    unsigned char *raw2 = malloc(len + 1);
    long n;

    if (raw == NULL || enc == NULL || enc2 == NULL || raw2 == NULL) {
        abort();
    }
    n = pdftoken_b64url_decode((const char *)in, len, raw, cap);
    if (n >= 0) {
        /* Strict decoding means one string per byte sequence. */
        if (pdftoken_b64url_encode(raw, (size_t)n, enc) != len
            || memcmp(enc, in, len) != 0) {
            abort();
        }
        /* The capacity check is exact: n bytes fit in n, not in n - 1. */
        if (pdftoken_b64url_decode((const char *)in, len, raw, (size_t)n)
            != n) {
            abort();
        }
        if (n > 0
            && pdftoken_b64url_decode((const char *)in, len, raw, (size_t)n - 1)
                   != -1) {
            abort();
        }
    }
    /* Any bytes survive the trip out and back. */
    n = (long)pdftoken_b64url_encode(in, len, enc2);
    if ((size_t)n != (len * 4 + 2) / 3 || enc2[n] != '\0'
        || pdftoken_b64url_decode(enc2, (size_t)n, raw2, len) != (long)len
        || memcmp(raw2, in, len) != 0) {
        abort();
    }
    free(raw);
    free(enc);
    free(enc2);
    free(raw2);
}

/* The token was accepted: check everything that must follow from that. */
static void check_accepted(const pdftoken_key *by, pdftoken_status st,
                           const char *tok, size_t toklen, const char *path,
                           size_t pathlen, uint64_t exp)
{
    unsigned char raw[PDFTOKEN_RAW_LEN];
    char again[PDFTOKEN_LEN + 1];
    char *longer;
    uint64_t want = 0;
    int i;

    if (toklen != PDFTOKEN_LEN
        || pdftoken_b64url_decode(tok, toklen, raw, sizeof(raw))
               != PDFTOKEN_RAW_LEN) {
        abort();
    }
    /* token.h, version 2: the expiry field is masked by the nonce. */
    for (i = 0; i < 8; i++) {
        want = (want << 8) | (raw[1 + i] ^ raw[1 + PDFTOKEN_EXPIRY_LEN + i]);
    }
    if (exp != want || (st == PDFTOKEN_OK) != (FUZZ_NOW < want)) {
        abort();
    }
    /* Minting the same fields must give back the same characters. */
    if (pdftoken_mint_nonce(by, path, pathlen, want,
                            raw + 1 + PDFTOKEN_EXPIRY_LEN, again)
            != PDFTOKEN_OK
        || memcmp(again, tok, PDFTOKEN_LEN) != 0) {
        abort();
    }
    /* Bound to the path: one more byte makes it someone else's token. */
    longer = malloc(pathlen + 1);
    if (longer == NULL) {
        abort();
    }
    if (pathlen > 0) {
        memcpy(longer, path, pathlen);
    }
    longer[pathlen] = 'x';
    if (pdftoken_verify(keys, 2, tok, toklen, longer, pathlen + 1, FUZZ_NOW,
                        NULL)
            != PDFTOKEN_BAD_TAG
        || pdftoken_verify(&other, 1, tok, toklen, path, pathlen, FUZZ_NOW,
                           NULL)
               != PDFTOKEN_BAD_TAG) {
        abort();
    }
    free(longer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A key that was never initialised: any MAC attempt would fail. */
    pdftoken_key unset = {NULL};
    unsigned char raw[PDFTOKEN_RAW_LEN];
    const char *tok, *path;
    char *tokcopy, *pathcopy;
    size_t toklen, pathlen;
    pdftoken_status st, st0, st1;
    uint64_t exp = 0, exp0 = 0, exp1 = 0;
    int decodes;

    if (size == 0) {
        return 0;
    }
    toklen = data[0];
    if (toklen > size - 1) {
        toklen = size - 1;
    }
    pathlen = size - 1 - toklen;

    /* Exact-size heap copies, so ASan sees any read past either end (its
     * malloc(0) returns a zero-byte block with redzones, not NULL). */
    tokcopy = malloc(toklen);
    pathcopy = malloc(pathlen);
    if ((toklen > 0 && tokcopy == NULL) || (pathlen > 0 && pathcopy == NULL)) {
        abort();
    }
    memcpy(tokcopy, data + 1, toklen);
    memcpy(pathcopy, data + 1 + toklen, pathlen);
    tok = tokcopy;
    path = pathcopy;

    check_b64url((const unsigned char *)tok, toklen);

    st = pdftoken_verify(keys, 2, tok, toklen, path, pathlen, FUZZ_NOW, &exp);
    st0 = pdftoken_verify(&keys[0], 1, tok, toklen, path, pathlen, FUZZ_NOW,
                          &exp0);
    st1 = pdftoken_verify(&keys[1], 1, tok, toklen, path, pathlen, FUZZ_NOW,
                          &exp1);

    /* Nothing but MALFORMED, BAD_VERSION, BAD_TAG, EXPIRED or OK. */
    if (st != PDFTOKEN_OK && st != PDFTOKEN_EXPIRED && st != PDFTOKEN_MALFORMED
        && st != PDFTOKEN_BAD_VERSION && st != PDFTOKEN_BAD_TAG) {
        abort();
    }

    /* Length is checked before any crypto: a wrong length is MALFORMED
     * even when the key could not compute a MAC at all. */
    if (toklen != PDFTOKEN_LEN) {
        if (st != PDFTOKEN_MALFORMED
            || pdftoken_verify(&unset, 1, tok, toklen, path, pathlen, FUZZ_NOW,
                               NULL)
                   != PDFTOKEN_MALFORMED) {
            abort();
        }
    }

    decodes = toklen == PDFTOKEN_LEN
              && pdftoken_b64url_decode(tok, toklen, raw, sizeof(raw))
                     == PDFTOKEN_RAW_LEN;
    if (decodes != (st != PDFTOKEN_MALFORMED)) {
        abort();
    }
    if (decodes
        && (raw[0] == PDFTOKEN_VERSION) != (st != PDFTOKEN_BAD_VERSION)) {
        abort();
    }
    /* A token that cannot be a token never reaches the key. */
    if (!decodes || raw[0] != PDFTOKEN_VERSION) {
        if (pdftoken_verify(&unset, 1, tok, toklen, path, pathlen, FUZZ_NOW,
                            NULL)
            != st) {
            abort();
        }
    }

    /* The two-key verdict is the first single-key verdict that accepts;
     * with no acceptance all three agree. */
    if (st0 == PDFTOKEN_OK || st0 == PDFTOKEN_EXPIRED) {
        if (st != st0 || exp != exp0) {
            abort();
        }
        check_accepted(&keys[0], st0, tok, toklen, path, pathlen, exp0);
    }
    else if (st1 == PDFTOKEN_OK || st1 == PDFTOKEN_EXPIRED) {
        if (st != st1 || exp != exp1) {
            abort();
        }
        check_accepted(&keys[1], st1, tok, toklen, path, pathlen, exp1);
    }
    else if (st != st0 || st != st1) {
        abort();
    }

    /* Verdicts that accept carry an exact-length token (restated here so
     * that this invariant stands on its own). */
    if ((st == PDFTOKEN_OK || st == PDFTOKEN_EXPIRED)
        && toklen != PDFTOKEN_LEN) {
        abort();
    }

    free(tokcopy);
    free(pathcopy);
    return 0;
}
