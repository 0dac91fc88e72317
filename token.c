/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * token.c - mint and verify mod_pdftoken's tokens; parse the query and the
 * Cookie header.  The format is described in token.h.
 */

#include "token.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/* Offsets of the fields in the raw (decoded) token. */
#define OFF_VERSION 0
#define OFF_EXPIRY 1
#define OFF_NONCE (OFF_EXPIRY + PDFTOKEN_EXPIRY_LEN)
#define OFF_TAG (OFF_NONCE + PDFTOKEN_NONCE_LEN)
#define SIGNED_LEN OFF_TAG

const char *pdftoken_status_str(pdftoken_status st)
{
    switch (st) {
    case PDFTOKEN_OK:
        return "valid";
    case PDFTOKEN_EXPIRED:
        return "expired";
    case PDFTOKEN_MALFORMED:
        return "malformed";
    case PDFTOKEN_BAD_VERSION:
        return "unknown version";
    case PDFTOKEN_BAD_TAG:
        return "bad tag";
    case PDFTOKEN_SHORT_SECRET:
        return "secret too short";
    case PDFTOKEN_LONG_SECRET:
        return "secret too long";
    case PDFTOKEN_CRYPTO_ERROR:
        return "crypto error";
    }
    return "unknown status";
}

/* ---- keys ------------------------------------------------------------ */

pdftoken_status pdftoken_key_init(pdftoken_key *key,
                                  const unsigned char *secret, size_t len)
{
    EVP_MAC *mac;
    EVP_MAC_CTX *ctx = NULL;
    OSSL_PARAM params[2];
    char digest[] = "SHA256";

    key->mac = NULL;
    if (len == 0) {
        return PDFTOKEN_SHORT_SECRET;
    }
    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    ctx = EVP_MAC_CTX_new(mac);
    /* The context holds its own reference to the algorithm. */
    EVP_MAC_free(mac);
    if (ctx == NULL) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    params[0] =
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    /* Keying here computes the HMAC pads once; every MAC duplicates the
     * keyed context instead of re-deriving them from the secret. */
    if (!EVP_MAC_init(ctx, secret, len, params)) {
        EVP_MAC_CTX_free(ctx);
        return PDFTOKEN_CRYPTO_ERROR;
    }
    key->mac = ctx;
    return PDFTOKEN_OK;
}

pdftoken_status pdftoken_key_load(pdftoken_key *key, const unsigned char *bytes,
                                  size_t len)
{
    key->mac = NULL;
    /* A secret made with `openssl rand -hex 32 > file` ends in a newline
     * that an editor may or may not keep; ignore trailing whitespace so
     * that every server of a cluster derives the same key. */
    while (len > 0
           && (bytes[len - 1] == '\n' || bytes[len - 1] == '\r'
               || bytes[len - 1] == ' ' || bytes[len - 1] == '\t')) {
        len--;
    }
    if (len < PDFTOKEN_SECRET_MIN) {
        return PDFTOKEN_SHORT_SECRET;
    }
    if (len > PDFTOKEN_SECRET_MAX) {
        return PDFTOKEN_LONG_SECRET;
    }
    return pdftoken_key_init(key, bytes, len);
}

pdftoken_status pdftoken_key_generate(pdftoken_key *key)
{
    unsigned char secret[PDFTOKEN_SECRET_MIN];
    pdftoken_status st;

    key->mac = NULL;
    if (RAND_bytes(secret, sizeof(secret)) != 1) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    st = pdftoken_key_init(key, secret, sizeof(secret));
    OPENSSL_cleanse(secret, sizeof(secret));
    return st;
}

void pdftoken_key_wipe(pdftoken_key *key)
{
    /* Freeing the context clears the key material OpenSSL holds. */
    EVP_MAC_CTX_free((EVP_MAC_CTX *)key->mac);
    key->mac = NULL;
}

/* MAC over up to two pieces, so that a token's fields and its path need
 * not be copied into one buffer first. */
static pdftoken_status mac2(const pdftoken_key *key, const unsigned char *a,
                            size_t alen, const unsigned char *b, size_t blen,
                            unsigned char out[PDFTOKEN_HMAC_LEN])
{
    EVP_MAC_CTX *ctx;
    size_t outlen = 0;
    int ok;

    if (key == NULL || key->mac == NULL) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    /* Duplicate the keyed context: the original stays untouched, so one
     * key serves every thread of the server at once. */
    ctx = EVP_MAC_CTX_dup((const EVP_MAC_CTX *)key->mac);
    if (ctx == NULL) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    ok = EVP_MAC_update(ctx, a, alen)
         && (blen == 0 || EVP_MAC_update(ctx, b, blen))
         && EVP_MAC_final(ctx, out, &outlen, PDFTOKEN_HMAC_LEN)
         && outlen == PDFTOKEN_HMAC_LEN;
    EVP_MAC_CTX_free(ctx);
    return ok ? PDFTOKEN_OK : PDFTOKEN_CRYPTO_ERROR;
}

pdftoken_status pdftoken_hmac(const pdftoken_key *key, const unsigned char *msg,
                              size_t len, unsigned char out[PDFTOKEN_HMAC_LEN])
{
    return mac2(key, msg, len, NULL, 0, out);
}

/* ---- base64url ------------------------------------------------------- */

static const char b64url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t pdftoken_b64url_encode(const unsigned char *in, size_t len, char *out)
{
    size_t i, o = 0;

    for (i = 0; i + 2 < len; i += 3) {
        unsigned long v = ((unsigned long)in[i] << 16)
                          | ((unsigned long)in[i + 1] << 8) | in[i + 2];
        out[o++] = b64url_alphabet[(v >> 18) & 63];
        out[o++] = b64url_alphabet[(v >> 12) & 63];
        out[o++] = b64url_alphabet[(v >> 6) & 63];
        out[o++] = b64url_alphabet[v & 63];
    }
    if (len - i == 1) {
        unsigned long v = (unsigned long)in[i] << 16;
        out[o++] = b64url_alphabet[(v >> 18) & 63];
        out[o++] = b64url_alphabet[(v >> 12) & 63];
    }
    else if (len - i == 2) {
        unsigned long v =
            ((unsigned long)in[i] << 16) | ((unsigned long)in[i + 1] << 8);
        out[o++] = b64url_alphabet[(v >> 18) & 63];
        out[o++] = b64url_alphabet[(v >> 12) & 63];
        out[o++] = b64url_alphabet[(v >> 6) & 63];
    }
    out[o] = '\0';
    return o;
}

/* Value of one base64url character, or -1.  A range test rather than a
 * table lookup keeps signed chars and bytes above 0x7f out of any index. */
static int b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '-') {
        return 62;
    }
    if (c == '_') {
        return 63;
    }
    return -1;
}

long pdftoken_b64url_decode(const char *in, size_t len, unsigned char *out,
                            size_t outcap)
{
    size_t i, o = 0, rem = len % 4;
    unsigned long acc = 0;
    int bits = 0;

    /* One dangling character carries only six bits: no byte. */
    if (rem == 1 || (len / 4) * 3 + (rem ? rem - 1 : 0) > outcap) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        int v = b64url_value((unsigned char)in[i]);
        if (v < 0) {
            return -1;
        }
        acc = ((acc << 6) | (unsigned long)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    /* The bits left over must be zero, or two strings would decode to the
     * same bytes and the encoding would not be canonical. */
    if ((acc & ((1UL << bits) - 1)) != 0) {
        return -1;
    }
    return (long)o;
}

/* ---- tokens ---------------------------------------------------------- */

static void put_be64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 7; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

static uint64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/*
 * Tag raw[0..SIGNED_LEN) plus the length-prefixed path.  The fixed fields
 * and the path length are hashed as one block, then the path itself.
 */
static pdftoken_status token_tag(const pdftoken_key *key,
                                 const unsigned char *raw, const char *path,
                                 size_t pathlen,
                                 unsigned char tag[PDFTOKEN_HMAC_LEN])
{
    unsigned char head[SIGNED_LEN + 8];

    memcpy(head, raw, SIGNED_LEN);
    put_be64(head + SIGNED_LEN, (uint64_t)pathlen);
    return mac2(key, head, sizeof(head), (const unsigned char *)path, pathlen,
                tag);
}

pdftoken_status pdftoken_mint_nonce(
    const pdftoken_key *key, const char *path, size_t pathlen, uint64_t expiry,
    const unsigned char nonce[PDFTOKEN_NONCE_LEN], char out[PDFTOKEN_LEN + 1])
{
    unsigned char raw[PDFTOKEN_RAW_LEN];
    unsigned char tag[PDFTOKEN_HMAC_LEN];
    pdftoken_status st;

    raw[OFF_VERSION] = PDFTOKEN_VERSION;
    put_be64(raw + OFF_EXPIRY, expiry);
    memcpy(raw + OFF_NONCE, nonce, PDFTOKEN_NONCE_LEN);
    st = token_tag(key, raw, path, pathlen, tag);
    if (st != PDFTOKEN_OK) {
        return st;
    }
    memcpy(raw + OFF_TAG, tag, PDFTOKEN_TAG_LEN);
    pdftoken_b64url_encode(raw, sizeof(raw), out);
    return PDFTOKEN_OK;
}

pdftoken_status pdftoken_mint(const pdftoken_key *key, const char *path,
                              size_t pathlen, uint64_t expiry,
                              char out[PDFTOKEN_LEN + 1])
{
    unsigned char nonce[PDFTOKEN_NONCE_LEN];

    if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    return pdftoken_mint_nonce(key, path, pathlen, expiry, nonce, out);
}

pdftoken_status pdftoken_verify(const pdftoken_key *keys, size_t nkeys,
                                const char *token, size_t toklen,
                                const char *path, size_t pathlen, uint64_t now,
                                uint64_t *expiry)
{
    unsigned char raw[PDFTOKEN_RAW_LEN];
    unsigned char tag[PDFTOKEN_HMAC_LEN];
    uint64_t exp;
    size_t k;
    int good = 0;

    /* Cheap, data-independent checks first: no crypto is spent on input
     * that cannot be a token. */
    if (toklen != PDFTOKEN_LEN
        || pdftoken_b64url_decode(token, toklen, raw, sizeof(raw))
               != PDFTOKEN_RAW_LEN) {
        return PDFTOKEN_MALFORMED;
    }
    if (raw[OFF_VERSION] != PDFTOKEN_VERSION) {
        return PDFTOKEN_BAD_VERSION;
    }
    for (k = 0; k < nkeys && !good; k++) {
        if (token_tag(&keys[k], raw, path, pathlen, tag) != PDFTOKEN_OK) {
            return PDFTOKEN_CRYPTO_ERROR;
        }
        /* Constant time, so that response timing does not tell an
         * attacker how many leading bytes of a forged tag were right. */
        good = CRYPTO_memcmp(tag, raw + OFF_TAG, PDFTOKEN_TAG_LEN) == 0;
    }
    OPENSSL_cleanse(tag, sizeof(tag));
    if (!good) {
        return PDFTOKEN_BAD_TAG;
    }
    /* The clock is read only for authentic tokens, so that "expired"
     * always means "genuine but old". */
    exp = get_be64(raw + OFF_EXPIRY);
    if (expiry != NULL) {
        *expiry = exp;
    }
    return now < exp ? PDFTOKEN_OK : PDFTOKEN_EXPIRED;
}

/* ---- query string ---------------------------------------------------- */

/* Does the parameter p[0..plen) carry the name name[0..namelen)? */
static int param_is(const char *p, size_t plen, const char *name,
                    size_t namelen)
{
    return plen >= namelen && memcmp(p, name, namelen) == 0
           && (plen == namelen || p[namelen] == '=');
}

size_t pdftoken_query_find(const char *args, size_t len, const char *name,
                           size_t namelen, const char **val, size_t *vallen)
{
    size_t start = 0, count = 0;

    if (args == NULL) {
        return 0;
    }
    while (start <= len) {
        const char *amp = memchr(args + start, '&', len - start);
        size_t end = amp ? (size_t)(amp - args) : len;
        const char *p = args + start;
        size_t plen = end - start;

        if (namelen > 0 && param_is(p, plen, name, namelen)) {
            if (count++ == 0) {
                *val = plen > namelen ? p + namelen + 1 : p + plen;
                *vallen = plen > namelen ? plen - namelen - 1 : 0;
            }
        }
        if (amp == NULL) {
            break;
        }
        start = end + 1;
    }
    return count;
}

size_t pdftoken_query_strip(const char *args, size_t len, const char *name,
                            size_t namelen, char *out)
{
    size_t start = 0, o = 0;
    int kept = 0;

    if (args == NULL) {
        out[0] = '\0';
        return 0;
    }
    while (start <= len) {
        const char *amp = memchr(args + start, '&', len - start);
        size_t end = amp ? (size_t)(amp - args) : len;
        size_t plen = end - start;

        if (namelen == 0 || !param_is(args + start, plen, name, namelen)) {
            if (kept++) {
                out[o++] = '&';
            }
            memcpy(out + o, args + start, plen);
            o += plen;
        }
        if (amp == NULL) {
            break;
        }
        start = end + 1;
    }
    out[o] = '\0';
    return o;
}

/* ---- Cookie header --------------------------------------------------- */

static int is_cookie_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Trim spaces and tabs from both ends of s[*b..*e). */
static void trim_cookie_space(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && is_cookie_space(s[*b])) {
        (*b)++;
    }
    while (*e > *b && is_cookie_space(s[*e - 1])) {
        (*e)--;
    }
}

int pdftoken_cookie_match(const char *header, size_t len, const char *name,
                          size_t namelen, const char *token, size_t toklen)
{
    size_t start = 0;
    int found = 0;

    while (start < len) {
        size_t end = start, eq, ns, ne, vs, ve;

        /* One pair runs to the next ';' or ','.  RFC 6265 values hold
         * neither, and ',' is what joins repeated Cookie header lines. */
        while (end < len && header[end] != ';' && header[end] != ',') {
            end++;
        }
        for (eq = start; eq < end && header[eq] != '='; eq++) {
        }
        ns = start;
        ne = eq;
        vs = eq + 1;
        ve = end;
        start = end + 1;
        if (eq == end) {
            continue; /* no '=': not a cookie */
        }
        trim_cookie_space(header, &ns, &ne);
        trim_cookie_space(header, &vs, &ve);
        if (ve - vs >= 2 && header[vs] == '"' && header[ve - 1] == '"') {
            vs++;
            ve--;
        }
        if (ne - ns == namelen && memcmp(header + ns, name, namelen) == 0
            && ve - vs == toklen
            && CRYPTO_memcmp(header + vs, token, toklen) == 0) {
            /* Keep walking: the time taken should not say which pair
             * matched. */
            found = 1;
        }
    }
    return found;
}
