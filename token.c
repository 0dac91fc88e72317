/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * token.c - mint and verify mod_pdftoken's tokens; parse the query and the
 * Cookie header.  The format is described in token.h.
 */

#include "token.h"

#include <string.h>

/*
 * The HMAC is computed from prepared SHA-256 states (see "keys" below)
 * through OpenSSL's low-level SHA256_* functions.  OpenSSL 3 marks them
 * deprecated but ships them in every default build; this file asks for the
 * 1.1.1 API level so that they are declared without a warning.  A libcrypto
 * built with no-deprecated, or a site that wants every digest to go through
 * a provider (FIPS), builds with -DPDFTOKEN_EVP_MAC and gets the EVP_MAC
 * implementation instead: same tags, about twice the cost per MAC.
 */
#define OPENSSL_API_COMPAT 10101

#include <openssl/crypto.h>
#include <openssl/rand.h>

#if defined(OPENSSL_NO_DEPRECATED) && !defined(PDFTOKEN_EVP_MAC)
#define PDFTOKEN_EVP_MAC
#endif

#ifdef PDFTOKEN_EVP_MAC
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#else
#include <openssl/sha.h>
#endif

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

#ifdef PDFTOKEN_EVP_MAC

/* The keyed EVP_MAC context is made once; every MAC duplicates it, so the
 * original stays untouched and one key serves every thread at once. */
static void *prepare_key(const unsigned char *secret, size_t len)
{
    EVP_MAC *mac;
    EVP_MAC_CTX *ctx;
    OSSL_PARAM params[2];
    char digest[] = "SHA256";

    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL) {
        return NULL;
    }
    ctx = EVP_MAC_CTX_new(mac);
    /* The context holds its own reference to the algorithm. */
    EVP_MAC_free(mac);
    if (ctx == NULL) {
        return NULL;
    }
    params[0] =
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    if (!EVP_MAC_init(ctx, secret, len, params)) {
        EVP_MAC_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Freeing the context clears the key material OpenSSL holds. */
static void release_key(void *prepared)
{
    EVP_MAC_CTX_free((EVP_MAC_CTX *)prepared);
}

static int mac_prepared(const void *prepared, const unsigned char *a,
                        size_t alen, const unsigned char *b, size_t blen,
                        unsigned char out[PDFTOKEN_HMAC_LEN])
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup((const EVP_MAC_CTX *)prepared);
    size_t outlen = 0;
    int ok;

    if (ctx == NULL) {
        return 0;
    }
    ok = EVP_MAC_update(ctx, a, alen)
         && (blen == 0 || EVP_MAC_update(ctx, b, blen))
         && EVP_MAC_final(ctx, out, &outlen, PDFTOKEN_HMAC_LEN)
         && outlen == PDFTOKEN_HMAC_LEN;
    EVP_MAC_CTX_free(ctx);
    return ok;
}

#else /* !PDFTOKEN_EVP_MAC */

/*
 * HMAC-SHA256 (RFC 2104) is SHA256((K ^ opad) || SHA256((K ^ ipad) || m)).
 * The first block of each of the two hashes depends on the key alone, so
 * the key keeps the two SHA-256 states that follow those blocks.  A MAC
 * copies them (a struct assignment) and hashes only the message: for a
 * token, three compressions and no allocation, where EVP_MAC_CTX_dup
 * allocates, copies, cleanses and frees five objects per MAC.
 */
typedef struct {
    SHA256_CTX inner; /* after the block K ^ ipad */
    SHA256_CTX outer; /* after the block K ^ opad */
} hmac_pads;

static void *prepare_key(const unsigned char *secret, size_t len)
{
    unsigned char k[SHA256_CBLOCK], pad[SHA256_CBLOCK];
    hmac_pads *pads;
    size_t i;
    int ok = 1;

    memset(k, 0, sizeof(k));
    /* RFC 2104: a key longer than the block is replaced by its hash. */
    if (len > sizeof(k)) {
        ok = SHA256(secret, len, k) != NULL;
    }
    else {
        memcpy(k, secret, len);
    }
    pads = OPENSSL_zalloc(sizeof(*pads));
    for (i = 0; i < sizeof(pad); i++) {
        pad[i] = k[i] ^ 0x36;
    }
    ok = ok && pads != NULL && SHA256_Init(&pads->inner)
         && SHA256_Update(&pads->inner, pad, sizeof(pad));
    for (i = 0; i < sizeof(pad); i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    ok = ok && SHA256_Init(&pads->outer)
         && SHA256_Update(&pads->outer, pad, sizeof(pad));
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
    if (!ok) {
        OPENSSL_clear_free(pads, sizeof(*pads));
        return NULL;
    }
    return pads;
}

static void release_key(void *prepared)
{
    OPENSSL_clear_free(prepared, sizeof(hmac_pads));
}

static int mac_prepared(const void *prepared, const unsigned char *a,
                        size_t alen, const unsigned char *b, size_t blen,
                        unsigned char out[PDFTOKEN_HMAC_LEN])
{
    const hmac_pads *pads = prepared;
    SHA256_CTX c = pads->inner;
    unsigned char inner[SHA256_DIGEST_LENGTH];
    int ok;

    ok = SHA256_Update(&c, a, alen) && (blen == 0 || SHA256_Update(&c, b, blen))
         && SHA256_Final(inner, &c);
    c = pads->outer;
    ok = ok && SHA256_Update(&c, inner, sizeof(inner)) && SHA256_Final(out, &c);
    /* Once Final has run, c holds the tag, not the keyed state, and Final
     * wipes its block buffer itself; only the inner digest is left. */
    OPENSSL_cleanse(inner, sizeof(inner));
    if (!ok) {
        OPENSSL_cleanse(&c, sizeof(c));
    }
    return ok;
}

#endif /* PDFTOKEN_EVP_MAC */

pdftoken_status pdftoken_key_init(pdftoken_key *key,
                                  const unsigned char *secret, size_t len)
{
    key->mac = NULL;
    if (len == 0) {
        return PDFTOKEN_SHORT_SECRET;
    }
    key->mac = prepare_key(secret, len);
    return key->mac != NULL ? PDFTOKEN_OK : PDFTOKEN_CRYPTO_ERROR;
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
    if (key->mac != NULL) {
        release_key(key->mac);
    }
    key->mac = NULL;
}

/* MAC over up to two pieces, so that a token's fields and its path need
 * not be copied into one buffer first. */
static pdftoken_status mac2(const pdftoken_key *key, const unsigned char *a,
                            size_t alen, const unsigned char *b, size_t blen,
                            unsigned char out[PDFTOKEN_HMAC_LEN])
{
    if (key == NULL || key->mac == NULL) {
        return PDFTOKEN_CRYPTO_ERROR;
    }
    return mac_prepared(key->mac, a, alen, b, blen, out)
               ? PDFTOKEN_OK
               : PDFTOKEN_CRYPTO_ERROR;
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

/* Each base64url character's value plus one; every other byte, including
 * those above 0x7f, is zero.  Indexed by unsigned char, so one lookup both
 * decodes and refuses. */
static const unsigned char b64url_values[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,
    ['G'] = 7,  ['H'] = 8,  ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12,
    ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18,
    ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30,
    ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36,
    ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
    ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54,
    ['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60,
    ['8'] = 61, ['9'] = 62, ['-'] = 63, ['_'] = 64};

/* Value of the character in[i], or -1 for a byte outside the alphabet. */
static long b64url_value(const char *in, size_t i)
{
    return (long)b64url_values[(unsigned char)in[i]] - 1;
}

/*
 * The same values, shifted to where each of four characters lands in its
 * three bytes, and bit 24 for a byte outside the alphabet: a group of four
 * decodes with four lookups and three ORs.  Every request with a token
 * decodes one, so this is worth 4 KiB of tables built by the compiler.
 */
#define B64_VALUE(c)                                                           \
    ((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'                                    \
     : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26                               \
     : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52                               \
     : (c) == '-'               ? 62                                           \
     : (c) == '_'               ? 63                                           \
                                : -1)
#define B64_BAD 0x1000000u
#define B64_AT(c, s)                                                           \
    (B64_VALUE(c) < 0 ? B64_BAD : (uint32_t)B64_VALUE(c) << (s))
#define B64_4(c, s)                                                            \
    B64_AT(c, s), B64_AT((c) + 1, s), B64_AT((c) + 2, s), B64_AT((c) + 3, s)
#define B64_16(c, s)                                                           \
    B64_4(c, s), B64_4((c) + 4, s), B64_4((c) + 8, s), B64_4((c) + 12, s)
#define B64_64(c, s)                                                           \
    B64_16(c, s), B64_16((c) + 16, s), B64_16((c) + 32, s), B64_16((c) + 48, s)
#define B64_256(s) B64_64(0, s), B64_64(64, s), B64_64(128, s), B64_64(192, s)

static const uint32_t b64url_shifted[4][256] = {
    {B64_256(18)}, {B64_256(12)}, {B64_256(6)}, {B64_256(0)}};

long pdftoken_b64url_decode(const char *in, size_t len, unsigned char *out,
                            size_t outcap)
{
    size_t i, o = 0, rem = len % 4;
    long a, b, c, v;
    uint32_t bad = 0;

    /* One dangling character carries only six bits: no byte. */
    if (rem == 1 || (len / 4) * 3 + (rem ? rem - 1 : 0) > outcap) {
        return -1;
    }
    /* Four characters make three bytes.  A character outside the
     * alphabet sets B64_BAD, which bad collects: tested once, after the
     * last group, since the bytes written meanwhile are the caller's to
     * throw away. */
    for (i = 0; i + 4 <= len; i += 4) {
        uint32_t w = b64url_shifted[0][(unsigned char)in[i]]
                     | b64url_shifted[1][(unsigned char)in[i + 1]]
                     | b64url_shifted[2][(unsigned char)in[i + 2]]
                     | b64url_shifted[3][(unsigned char)in[i + 3]];

        bad |= w;
        out[o] = (unsigned char)(w >> 16);
        out[o + 1] = (unsigned char)(w >> 8);
        out[o + 2] = (unsigned char)w;
        o += 3;
    }
    if (bad & B64_BAD) {
        return -1;
    }
    if (rem == 0) {
        return (long)o;
    }
    /* Two or three characters are left, for one or two bytes. */
    a = b64url_value(in, i);
    b = b64url_value(in, i + 1);
    c = rem == 3 ? b64url_value(in, i + 2) : 0;
    if ((a | b | c) < 0) {
        return -1;
    }
    v = (a << 18) | (b << 12) | (c << 6);
    /* The bits below the last whole byte must be zero, or two strings
     * would decode to the same bytes and the encoding would not be
     * canonical. */
    if ((v & (rem == 2 ? 0xffff : 0xff)) != 0) {
        return -1;
    }
    out[o++] = (unsigned char)(v >> 16);
    if (rem == 3) {
        out[o++] = (unsigned char)(v >> 8);
    }
    return (long)o;
}

/* ---- tokens ---------------------------------------------------------- */

/* Byte by byte, written out: compilers make one byte swap of each, where
 * a loop costs forty instructions on every token. */
static void put_be64(unsigned char *p, uint64_t v)
{
    p[0] = (unsigned char)(v >> 56);
    p[1] = (unsigned char)(v >> 48);
    p[2] = (unsigned char)(v >> 40);
    p[3] = (unsigned char)(v >> 32);
    p[4] = (unsigned char)(v >> 24);
    p[5] = (unsigned char)(v >> 16);
    p[6] = (unsigned char)(v >> 8);
    p[7] = (unsigned char)v;
}

static uint64_t get_be64(const unsigned char *p)
{
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48)
           | ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32)
           | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16)
           | ((uint64_t)p[6] << 8) | (uint64_t)p[7];
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

/* The signed fields before the tag: version, masked expiry, nonce. */
static void token_head(unsigned char raw[PDFTOKEN_RAW_LEN], uint64_t expiry,
                       const unsigned char nonce[PDFTOKEN_NONCE_LEN])
{
    raw[OFF_VERSION] = PDFTOKEN_VERSION;
    memcpy(raw + OFF_NONCE, nonce, PDFTOKEN_NONCE_LEN);
    put_be64(raw + OFF_EXPIRY, expiry ^ get_be64(raw + OFF_NONCE));
}

/* Tag the head in raw for path, in place. */
static pdftoken_status token_seal(const pdftoken_key *key, const char *path,
                                  size_t pathlen,
                                  unsigned char raw[PDFTOKEN_RAW_LEN])
{
    unsigned char tag[PDFTOKEN_HMAC_LEN];
    pdftoken_status st;

    st = token_tag(key, raw, path, pathlen, tag);
    if (st == PDFTOKEN_OK) {
        memcpy(raw + OFF_TAG, tag, PDFTOKEN_TAG_LEN);
    }
    return st;
}

pdftoken_status pdftoken_mint_nonce(
    const pdftoken_key *key, const char *path, size_t pathlen, uint64_t expiry,
    const unsigned char nonce[PDFTOKEN_NONCE_LEN], char out[PDFTOKEN_LEN + 1])
{
    unsigned char raw[PDFTOKEN_RAW_LEN];
    pdftoken_status st;

    token_head(raw, expiry, nonce);
    st = token_seal(key, path, pathlen, raw);
    if (st == PDFTOKEN_OK) {
        pdftoken_b64url_encode(raw, PDFTOKEN_RAW_LEN, out);
    }
    return st;
}

int pdftoken_waf_inert(const char token[PDFTOKEN_LEN + 1])
{
    return memchr(token, '-', PDFTOKEN_LEN) == NULL;
}

/* Would base64url show a '-' (62) for in[0..len), len a multiple of 3?
 * Read off the bytes, so that a draw that fails costs no encoding.  In
 * each group, a sextet of the bytes ^ dashes is zero where they show a
 * '-', and the has-zero test on 6-bit lanes finds one without a branch
 * per character: a borrow can only set the high bit of a lane above a
 * lane that is zero, so the answer is exact (also checked against all
 * 2^24 groups when it was written). */
static int encodes_dash(const unsigned char *in, size_t len)
{
    static const uint32_t dashes = 0xfbefbe, low = 0x041041, high = 0x820820;
    size_t i;
    uint32_t x;

    for (i = 0; i + 3 <= len; i += 3) {
        x = (((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | in[i + 2])
            ^ dashes;
        if (((x - low) & ~x & high) != 0) {
            return 1;
        }
    }
    return 0;
}

/* The whole groups of 3 bytes before the tag: their characters are fixed
 * before the HMAC runs (24 bytes, the first 32 characters), and the tag's
 * bytes start a group of their own after them. */
#define HEAD_WHOLE_BYTES (SIGNED_LEN / 3 * 3)

static pdftoken_status draw_nonce(pdftoken_nonce_pool *pool,
                                  unsigned char nonce[PDFTOKEN_NONCE_LEN])
{
    if (pool) {
        return pdftoken_nonce_take(pool, nonce);
    }
    return RAND_bytes(nonce, PDFTOKEN_NONCE_LEN) == 1 ? PDFTOKEN_OK
                                                      : PDFTOKEN_CRYPTO_ERROR;
}

/* Mint with nonces from pool (or straight from RAND_bytes when pool is
 * NULL), drawing again while the token is not WAF-inert.  Four draws in
 * ten give an inert token; a head that would already show a '-' is
 * dropped before its HMAC, so a mint costs about 1.5 HMACs, not 2.5. */
static pdftoken_status mint_inert(const pdftoken_key *key, const char *path,
                                  size_t pathlen, uint64_t expiry,
                                  pdftoken_nonce_pool *pool,
                                  char out[PDFTOKEN_LEN + 1])
{
    unsigned char nonce[PDFTOKEN_NONCE_LEN];
    unsigned char raw[PDFTOKEN_RAW_LEN];
    pdftoken_status st;
    int draw, last;

    for (draw = 1;; draw++) {
        last = draw >= PDFTOKEN_MINT_DRAWS;
        st = draw_nonce(pool, nonce);
        if (st != PDFTOKEN_OK) {
            return st;
        }
        token_head(raw, expiry, nonce);
        if (!last && encodes_dash(raw, HEAD_WHOLE_BYTES)) {
            continue;
        }
        st = token_seal(key, path, pathlen, raw);
        if (st != PDFTOKEN_OK) {
            return st;
        }
        if (last
            || !encodes_dash(raw + HEAD_WHOLE_BYTES,
                             PDFTOKEN_RAW_LEN - HEAD_WHOLE_BYTES)) {
            pdftoken_b64url_encode(raw, PDFTOKEN_RAW_LEN, out);
            return PDFTOKEN_OK;
        }
    }
}

pdftoken_status pdftoken_mint(const pdftoken_key *key, const char *path,
                              size_t pathlen, uint64_t expiry,
                              char out[PDFTOKEN_LEN + 1])
{
    return mint_inert(key, path, pathlen, expiry, NULL, out);
}

pdftoken_status pdftoken_mint_pool(const pdftoken_key *key, const char *path,
                                   size_t pathlen, uint64_t expiry,
                                   pdftoken_nonce_pool *pool,
                                   char out[PDFTOKEN_LEN + 1])
{
    return mint_inert(key, path, pathlen, expiry, pool, out);
}

pdftoken_status pdftoken_nonce_take(pdftoken_nonce_pool *pool,
                                    unsigned char nonce[PDFTOKEN_NONCE_LEN])
{
    if (pool->left == 0 || pool->left > PDFTOKEN_NONCE_BATCH) {
        pool->left = 0;
        if (RAND_bytes(pool->bytes, sizeof(pool->bytes)) != 1) {
            return PDFTOKEN_CRYPTO_ERROR;
        }
        pool->left = PDFTOKEN_NONCE_BATCH;
    }
    pool->left--;
    memcpy(nonce, pool->bytes + pool->left * PDFTOKEN_NONCE_LEN,
           PDFTOKEN_NONCE_LEN);
    return PDFTOKEN_OK;
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
    exp = get_be64(raw + OFF_EXPIRY) ^ get_be64(raw + OFF_NONCE);
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

/*
 * One walk over the query for find, strip and split: counts the
 * parameters that carry name and points *val at the first one's value
 * (val may be NULL); when out is not NULL, copies every other parameter
 * there, joined by '&', and puts the copy's length in *outlen.
 */
static size_t query_walk(const char *args, size_t len, const char *name,
                         size_t namelen, const char **val, size_t *vallen,
                         char *out, size_t *outlen)
{
    size_t start = 0, count = 0, o = 0;
    int kept = 0;

    while (args != NULL && start <= len) {
        const char *amp = memchr(args + start, '&', len - start);
        size_t end = amp ? (size_t)(amp - args) : len;
        const char *p = args + start;
        size_t plen = end - start;

        if (namelen > 0 && param_is(p, plen, name, namelen)) {
            if (count++ == 0 && val != NULL) {
                *val = plen > namelen ? p + namelen + 1 : p + plen;
                *vallen = plen > namelen ? plen - namelen - 1 : 0;
            }
        }
        else if (out != NULL) {
            if (kept++) {
                out[o++] = '&';
            }
            memcpy(out + o, p, plen);
            o += plen;
        }
        if (amp == NULL) {
            break;
        }
        start = end + 1;
    }
    if (out != NULL) {
        out[o] = '\0';
        *outlen = o;
    }
    return count;
}

size_t pdftoken_query_find(const char *args, size_t len, const char *name,
                           size_t namelen, const char **val, size_t *vallen)
{
    return query_walk(args, len, name, namelen, val, vallen, NULL, NULL);
}

size_t pdftoken_query_strip(const char *args, size_t len, const char *name,
                            size_t namelen, char *out)
{
    size_t o;

    query_walk(args, len, name, namelen, NULL, NULL, out, &o);
    return o;
}

size_t pdftoken_query_split(const char *args, size_t len, const char *name,
                            size_t namelen, const char **val, size_t *vallen,
                            char *out, size_t *outlen)
{
    return query_walk(args, len, name, namelen, val, vallen, out, outlen);
}

/* ---- Cookie header --------------------------------------------------- */

static int is_cookie_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Trim spaces and tabs from both ends of s[*b..*e). */
static inline void trim_cookie_space(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && is_cookie_space(s[*b])) {
        (*b)++;
    }
    while (*e > *b && is_cookie_space(s[*e - 1])) {
        (*e)--;
    }
}

/* Position of the first c in s[from..len), or len. */
static size_t next_byte(const char *s, size_t from, size_t len, char c)
{
    const char *p = memchr(s + from, c, len - from);

    return p ? (size_t)(p - s) : len;
}

int pdftoken_cookie_match(const char *header, size_t len, const char *name,
                          size_t namelen, const char *token, size_t toklen)
{
    size_t start = 0;
    int found = 0;

    if (header == NULL || len == 0) {
        return 0;
    }

    /* One pair runs to the next ';', and only ';': browsers join cookies
     * with "; " (RFC 6265 section 5.4) and so does mod_http2 with cookie
     * fields.  A ',' may stand inside a value that a site set from
     * untrusted input ("utm=a,pdftoken_X=T"); splitting there would let
     * that input plant a matching cookie. */
    while (start < len) {
        size_t end = next_byte(header, start, len, ';');
        size_t eq, ns, ne, vs, ve;

        eq = next_byte(header, start, end, '=');
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

/* ---- what a browser renders as a PDF ----------------------------------- */

/* RFC 9110 token characters (Fetch's "HTTP token code points"), as a
 * table: every response of a protected scope is classified, so the walk
 * over its Content-Type must cost next to nothing. */
static const unsigned char token_chars[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
    ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
    ['`'] = 1, ['|'] = 1, ['~'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1,
    ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1,
    ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,
    ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,
    ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1,
    ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1,
    ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,
    ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1,
    ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1};

static int is_token_char(unsigned char c)
{
    return token_chars[c];
}

/* Fetch's "HTTP whitespace". */
static int is_http_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Case-insensitive equality of a[0..len) and the lower-case b[0..len). */
static int equal_lower(const char *a, const char *b, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (lower((unsigned char)a[i]) != (unsigned char)b[i]) {
            return 0;
        }
    }
    return 1;
}

/* Is s[0..len) one of the lower-case strings in list? */
static int in_list(const char *s, size_t len, const char *const *list, size_t n)
{
    size_t i;

    if (len == 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        /* The first character turns nearly every entry away cheaply. */
        if (list[i] != NULL && list[i][0] == (char)lower((unsigned char)s[0])
            && strlen(list[i]) == len && equal_lower(s, list[i], len)) {
            return 1;
        }
    }
    return 0;
}

/* Does s[0..len) contain the lower-case needle, case ignored? */
static int contains_lower(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;

    for (i = 0; i + n <= len; i++) {
        if (equal_lower(s + i, needle, n)) {
            return 1;
        }
    }
    return 0;
}

/*
 * Fetch "parse a MIME type", as far as the essence: v[0..len) is one
 * piece of the header value.  On success *t, *tlen and *s, *slen describe
 * type and subtype and 1 is returned.
 */
static int parse_mime(const char *v, size_t len, size_t *t, size_t *tlen,
                      size_t *s, size_t *slen)
{
    size_t b = 0, e = len, i, slash;

    while (b < e && is_http_space((unsigned char)v[b])) {
        b++;
    }
    while (e > b && is_http_space((unsigned char)v[e - 1])) {
        e--;
    }
    for (slash = b; slash < e && v[slash] != '/'; slash++) {
        if (!is_token_char((unsigned char)v[slash])) {
            return 0;
        }
    }
    if (slash == b || slash == e) {
        return 0;
    }
    /* The subtype runs to ';', less trailing whitespace. */
    for (i = slash + 1; i < e && v[i] != ';'; i++) {
    }
    *s = slash + 1;
    while (i > *s && is_http_space((unsigned char)v[i - 1])) {
        i--;
    }
    *slen = i - *s;
    if (*slen == 0) {
        return 0;
    }
    for (i = *s; i < *s + *slen; i++) {
        if (!is_token_char((unsigned char)v[i])) {
            return 0;
        }
    }
    *t = b;
    *tlen = slash - b;
    return 1;
}

/*
 * End of the piece that starts at from: Fetch's "getting, decoding, and
 * splitting" cuts at ',' except inside a quoted string, where a backslash
 * escapes the next character.
 */
static size_t piece_end(const char *v, size_t from, size_t len)
{
    size_t i = from;

    while (i < len && v[i] != ',') {
        if (v[i++] != '"') {
            continue;
        }
        while (i < len && v[i] != '"') {
            i += v[i] == '\\' ? 2 : 1;
        }
        if (i < len) {
            i++; /* the closing quote */
        }
    }
    return i < len ? i : len;
}

size_t pdftoken_mime_essence(const char *value, size_t len,
                             char out[PDFTOKEN_TYPE_MAX + 1])
{
    size_t from = 0, found = 0;

    out[0] = '\0';
    if (value == NULL) {
        return 0;
    }
    while (from <= len) {
        size_t end = piece_end(value, from, len), t, tl, s, sl, i, o = 0;

        if (parse_mime(value + from, end - from, &t, &tl, &s, &sl)
            && !(tl == 1 && sl == 1 && value[from + t] == '*'
                 && value[from + s] == '*')) {
            /* type "/" subtype, lower-cased, cut to the buffer. */
            for (i = 0; i < tl + 1 + sl && o < PDFTOKEN_TYPE_MAX; i++) {
                out[o++] =
                    (char)(i < tl ? lower((unsigned char)value[from + t + i])
                           : i == tl
                               ? '/'
                               : lower((
                                   unsigned char)value[from + s + i - tl - 1]));
            }
            out[o] = '\0';
            found = tl + 1 + sl;
        }
        from = end + 1;
    }
    return found;
}

int pdftoken_type_listed(const char *value, size_t len,
                         const char *const *types, size_t ntypes)
{
    size_t from = 0;

    if (value == NULL) {
        return 0;
    }
    while (from < len) {
        const char *comma = memchr(value + from, ',', len - from);
        size_t end = comma ? (size_t)(comma - value) : len, b = from, e;

        while (b < end && is_http_space((unsigned char)value[b])) {
            b++;
        }
        for (e = b;
             e < end
             && (is_token_char((unsigned char)value[e]) || value[e] == '/');
             e++) {
        }
        if (in_list(value + b, e - b, types, ntypes)) {
            return 1;
        }
        from = end + 1;
    }
    return 0;
}

/*
 * multipart/x-mixed-replace is here because WebKitGTK shows each part as
 * the document at the response's URL, fragment included: a part typed
 * application/pdf opens in its PDF viewer, also after parts of other
 * types, so no reading of the first part would do (measured:
 * t/browser/render-matrix.tsv).
 */
const char *const pdftoken_pdf_types[] = {
    "application/pdf",     "text/pdf",
    "application/x-pdf",   "text/x-pdf",
    "application/acrobat", "applications/vnd.pdf",
    "application/vnd.pdf", "multipart/x-mixed-replace"};
const size_t pdftoken_pdf_ntypes =
    sizeof(pdftoken_pdf_types) / sizeof(pdftoken_pdf_types[0]);

/* Types that engines replace with a sniffed one. */
static const char *const unknown_types[] = {
    "unknown/unknown", "application/unknown",
    "application/x-unknown-content-type"};

/*
 * Types that an engine re-guesses from the file name: Firefox opens
 * application/octet-stream that is not an attachment in its PDF viewer
 * when it reads the name as x.pdf, and it reads names in more ways than
 * are worth following here (filename*, RFC 2231 continuations, RFC 2047
 * words, quoted-pairs, percent escapes).  So with these types any
 * Content-Disposition that is not an attachment counts, whatever name it
 * gives, and so does a URL path ending in .pdf.  In an <object> or
 * <embed> Firefox ignores "attachment" too and shows such a body in
 * pdf.js when its URL or filename says .pdf (measured in all those
 * spellings): an attachment that names a file counts as well.
 */
static const char *const generic_types[] = {
    "application/octet-stream",   "binary/octet-stream",
    "application/x-download",     "application/force-download",
    "application/download",       "application/binary",
    "application/x-octet-stream", "text/plain"};

/* text/plain whose body looks binary is sniffed on: WebKitGTK renders it
 * as a PDF when it begins with "%PDF-", Firefox takes it for
 * application/octet-stream (above). */
static const char text_plain[] = "text/plain";

#define NELTS(a) (sizeof(a) / sizeof((a)[0]))

/* Is the Content-Disposition's type "attachment"?  Browsers treat any
 * other value, unknown and malformed ones included, as inline or as
 * something no stricter. */
static int is_attachment(const char *cd, size_t len)
{
    size_t b = 0, e;

    while (b < len && is_http_space((unsigned char)cd[b])) {
        b++;
    }
    for (e = b; e < len && cd[e] != ';'; e++) {
    }
    while (e > b && is_http_space((unsigned char)cd[e - 1])) {
        e--;
    }
    return e - b == 10 && equal_lower(cd + b, "attachment", 10);
}

/*
 * Would a browser take the document's name to end in .pdf?  Any mention
 * of ".pdf" in the disposition (filename, filename*, escaped or not)
 * counts, and so does a URL path ending in .pdf, even beside a disposition
 * that names another file: Firefox was measured to open
 * application/octet-stream at x.pdf with "inline; filename=x.txt" in its
 * PDF viewer.
 */
static int named_pdf(const pdftoken_response *resp)
{
    const char *cd = resp->disposition;
    size_t cdlen = resp->disposition_len;

    if (cd != NULL
        && (contains_lower(cd, cdlen, ".pdf")
            || contains_lower(cd, cdlen, "%2epdf"))) {
        return 1;
    }
    return resp->path != NULL && resp->path_len >= 4
           && equal_lower(resp->path + resp->path_len - 4, ".pdf", 4);
}

/*
 * Does an attachment name a file that a browser may call a PDF?  Firefox
 * shows a generic type (and what it takes for one: no valid type, a
 * binary text/plain) in an <object> or <embed> despite "attachment" when
 * the name says .pdf, and it reads names in more ways than are followed
 * here: any filename counts, as does a URL path ending in .pdf.
 */
static int names_file(const pdftoken_response *resp)
{
    return named_pdf(resp)
           || contains_lower(resp->disposition, resp->disposition_len,
                             "filename");
}

/* Where the one-pass reading finds the type in value: value[*b..*e), or
 * 0 when the value needs the general readings (pdftoken_single_essence). */
static int single_bounds(const char *value, size_t len, size_t *b, size_t *e)
{
    size_t i = 0, slash, rest;

    if (value == NULL) {
        return 0;
    }
    while (i < len && is_http_space((unsigned char)value[i])) {
        i++;
    }
    *b = i;
    /* type "/" subtype, both tokens */
    while (i < len && token_chars[(unsigned char)value[i]]) {
        i++;
    }
    if (i == *b || i == len || value[i] != '/') {
        return 0;
    }
    slash = i++;
    while (i < len && token_chars[(unsigned char)value[i]]) {
        i++;
    }
    *e = i;
    while (i < len && is_http_space((unsigned char)value[i])) {
        i++;
    }
    rest = i;
    /* Past the type only whitespace, then ';' and parameters without a
     * ',' (which would make a list), or nothing. */
    return *e != slash + 1 && *e - *b <= PDFTOKEN_TYPE_MAX
           && (rest == len
               || (value[rest] == ';'
                   && memchr(value + rest, ',', len - rest) == NULL))
           && !(*e - *b == 3 && value[*b] == '*' && value[*b + 2] == '*');
}

size_t pdftoken_single_essence(const char *value, size_t len,
                               char out[PDFTOKEN_TYPE_MAX + 1])
{
    size_t b, e, i;

    if (!single_bounds(value, len, &b, &e)) {
        return 0;
    }
    for (i = b; i < e; i++) {
        out[i - b] = (char)lower((unsigned char)value[i]);
    }
    out[e - b] = '\0';
    return e - b;
}

/* What a Content-Type value says, before the other headers count. */
typedef enum {
    KIND_PDF,     /* a PDF type, built in or listed */
    KIND_UNKNOWN, /* no valid type, or one that engines replace */
    KIND_GENERIC, /* re-guessed from the name */
    KIND_TEXT,    /* text/plain: re-guessed, and sniffed */
    KIND_OTHER    /* none of these: never a PDF */
} type_kind;

/* The lists above as one table with lengths, for the one-pass reading,
 * which compares a lower-case essence without another pass (the unit
 * tests hold it to the lists). */
#define KNOWN(s, k)                                                            \
    {                                                                          \
        s, sizeof(s) - 1, k                                                    \
    }
static const struct {
    const char *name;
    size_t len;
    type_kind kind;
} known_types[] = {
    KNOWN("application/pdf", KIND_PDF),
    KNOWN("text/pdf", KIND_PDF),
    KNOWN("application/x-pdf", KIND_PDF),
    KNOWN("text/x-pdf", KIND_PDF),
    KNOWN("application/acrobat", KIND_PDF),
    KNOWN("applications/vnd.pdf", KIND_PDF),
    KNOWN("application/vnd.pdf", KIND_PDF),
    KNOWN("multipart/x-mixed-replace", KIND_PDF),
    KNOWN("unknown/unknown", KIND_UNKNOWN),
    KNOWN("application/unknown", KIND_UNKNOWN),
    KNOWN("application/x-unknown-content-type", KIND_UNKNOWN),
    KNOWN("application/octet-stream", KIND_GENERIC),
    KNOWN("binary/octet-stream", KIND_GENERIC),
    KNOWN("application/x-download", KIND_GENERIC),
    KNOWN("application/force-download", KIND_GENERIC),
    KNOWN("application/download", KIND_GENERIC),
    KNOWN("application/binary", KIND_GENERIC),
    KNOWN("application/x-octet-stream", KIND_GENERIC),
    KNOWN("text/plain", KIND_TEXT),
};

/* Bit n set: some name in known_types has n characters.  Most types of
 * the web (text/html, image/png) have another length and are settled
 * here. */
#define KNOWN_LENGTHS                                                          \
    ((1ULL << 8) | (1ULL << 10) | (1ULL << 15) | (1ULL << 17) | (1ULL << 18)   \
     | (1ULL << 19) | (1ULL << 20) | (1ULL << 22) | (1ULL << 24)               \
     | (1ULL << 25) | (1ULL << 26) | (1ULL << 34))

#define IS_KNOWN_LENGTH(len) ((len) < 64 && ((KNOWN_LENGTHS >> (len)) & 1))

/* The kind of type[0..len) (any case) among known_types, else
 * KIND_OTHER. */
static type_kind known_kind(const char *type, size_t len)
{
    size_t i;

    if (!IS_KNOWN_LENGTH(len)) {
        return KIND_OTHER;
    }
    for (i = 0; i < NELTS(known_types); i++) {
        if (known_types[i].len == len
            && equal_lower(type, known_types[i].name, len)) {
            return known_types[i].kind;
        }
    }
    return KIND_OTHER;
}

/* The kind of the one type a value holds, type[0..len) as the one-pass
 * reading found it. */
static type_kind single_kind(const char *type, size_t len,
                             const char *const *types, size_t ntypes)
{
    return ntypes && in_list(type, len, types, ntypes) ? KIND_PDF
                                                       : known_kind(type, len);
}

static type_kind kind_of(const char *value, size_t len,
                         const char *const *types, size_t ntypes)
{
    char essence[PDFTOKEN_TYPE_MAX + 1];
    size_t elen, b, e;

    if (single_bounds(value, len, &b, &e)) {
        /* One type, its essence what both readings see (nearly every
         * response): compared once, without the general parse. */
        return single_kind(value + b, e - b, types, ntypes);
    }
    if (pdftoken_type_listed(value, len, pdftoken_pdf_types,
                             pdftoken_pdf_ntypes)
        || pdftoken_type_listed(value, len, types, ntypes)) {
        return KIND_PDF;
    }
    elen = pdftoken_mime_essence(value, len, essence);
    if (elen == 0
        || in_list(essence, elen, unknown_types, NELTS(unknown_types))) {
        return KIND_UNKNOWN;
    }
    if (!in_list(essence, elen, generic_types, NELTS(generic_types))) {
        return KIND_OTHER;
    }
    return elen == sizeof(text_plain) - 1 && !memcmp(essence, text_plain, elen)
               ? KIND_TEXT
               : KIND_GENERIC;
}

pdftoken_render pdftoken_classify(const pdftoken_response *resp)
{
    type_kind kind = kind_of(resp->content_type, resp->content_type_len,
                             resp->types, resp->ntypes);
    int attachment = resp->disposition != NULL
                     && is_attachment(resp->disposition, resp->disposition_len);

    switch (kind) {
    case KIND_PDF:
        return PDFTOKEN_PDF;
    case KIND_OTHER:
        return PDFTOKEN_NOT_PDF;
    case KIND_UNKNOWN:
        /* Firefox re-guesses it from the name like a generic type (in an
         * <object> or <embed> an attachment's name too), and pdf.js finds
         * "%PDF-" past junk that the sniff below stops at. */
        return (attachment ? names_file(resp)
                           : resp->disposition != NULL || named_pdf(resp))
                   ? PDFTOKEN_PDF
                   : PDFTOKEN_PDF_IF_BODY;
    default:
        break;
    }
    if (attachment) {
        /* A generic type, or text/plain that Firefox took for one (a
         * binary body): shown in an <object> or <embed> by its name. */
        return names_file(resp) ? PDFTOKEN_PDF : PDFTOKEN_NOT_PDF;
    }
    if (resp->disposition != NULL || named_pdf(resp)) {
        return PDFTOKEN_PDF;
    }
    return kind == KIND_TEXT ? PDFTOKEN_PDF_IF_BODY : PDFTOKEN_NOT_PDF;
}

/* What a kind says before the other headers count. */
static pdftoken_render kind_says(type_kind kind)
{
    switch (kind) {
    case KIND_PDF:
        return PDFTOKEN_PDF;
    case KIND_OTHER:
        return PDFTOKEN_NOT_PDF;
    default:
        return PDFTOKEN_PDF_IF_BODY;
    }
}

pdftoken_render pdftoken_classify_type(const char *value, size_t len,
                                       const char *const *types, size_t ntypes)
{
    return kind_says(kind_of(value, len, types, ntypes));
}

/*
 * single_bounds() on a NUL-terminated value: the NUL ends every run, since
 * it is neither a token character nor whitespace, so no length is needed.
 * The same conditions; the unit tests and the fuzzer hold the two to the
 * same answers.
 */
static int single_bounds_str(const char *value, size_t *b, size_t *e)
{
    const char *p = value, *type, *slash;

    while (is_http_space((unsigned char)*p)) {
        p++;
    }
    type = p;
    while (token_chars[(unsigned char)*p]) {
        p++;
    }
    if (p == type || *p != '/') {
        return 0;
    }
    slash = p++;
    while (token_chars[(unsigned char)*p]) {
        p++;
    }
    *b = (size_t)(type - value);
    *e = (size_t)(p - value);
    while (is_http_space((unsigned char)*p)) {
        p++;
    }
    if (*p == ';') {
        /* Parameters, but no ',' that would make a list. */
        while (*p != '\0' && *p != ',') {
            p++;
        }
    }
    return value + *e != slash + 1 && *e - *b <= PDFTOKEN_TYPE_MAX && *p == '\0'
           && !(*e - *b == 3 && type[0] == '*' && type[2] == '*');
}

pdftoken_render pdftoken_classify_type_str(const char *value,
                                           const char *const *types,
                                           size_t ntypes)
{
    size_t b, e;

    if (value != NULL && single_bounds_str(value, &b, &e)) {
        /* Most types of the web (text/html, image/png) are settled by
         * their length alone. */
        if (ntypes == 0 && !IS_KNOWN_LENGTH(e - b)) {
            return PDFTOKEN_NOT_PDF;
        }
        return kind_says(single_kind(value + b, e - b, types, ntypes));
    }
    return pdftoken_classify_type(value, value ? strlen(value) : 0, types,
                                  ntypes);
}

int pdftoken_sniff_pdf(const unsigned char *body, size_t len)
{
    static const char magic[] = "%PDF-";
    size_t i = 0, m;

    while (i < len && i < PDFTOKEN_SNIFF_MAX && is_http_space(body[i])) {
        i++;
    }
    if (i == PDFTOKEN_SNIFF_MAX) {
        return 0;
    }
    for (m = 0; m < sizeof(magic) - 1; m++) {
        if (i + m == len) {
            return -1;
        }
        if (body[i + m] != (unsigned char)magic[m]) {
            return 0;
        }
    }
    return 1;
}

size_t pdftoken_cookie_family(const char *header, size_t len,
                              const char *prefix, size_t prefixlen,
                              size_t *starts, size_t *lens, size_t max)
{
    size_t start = 0, count = 0;

    if (header == NULL) {
        return 0;
    }
    while (start < len) {
        size_t end = next_byte(header, start, len, ';');
        size_t ns = start, ne = next_byte(header, start, end, '='), i;
        int suffix = 1;

        start = end + 1;
        if (ne == end) {
            continue;
        }
        trim_cookie_space(header, &ns, &ne);
        if (ne - ns != prefixlen + PDFTOKEN_SUFFIX_LEN
            || memcmp(header + ns, prefix, prefixlen) != 0) {
            continue;
        }
        for (i = ns + prefixlen; i < ne; i++) {
            unsigned char c = (unsigned char)header[i];
            suffix &= (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                      || (c >= '0' && c <= '9') || c == '-' || c == '_';
        }
        if (!suffix) {
            continue;
        }
        if (count < max) {
            starts[count] = ns;
            lens[count] = ne - ns;
        }
        count++;
    }
    return count;
}

/* ---- Range header ------------------------------------------------------- */

/* A run of digits at v[*i..len): its start and length, leading zeros
 * skipped (so lengths compare numbers); 0 when there is no digit. */
static size_t digits(const char *v, size_t len, size_t *i, size_t *start)
{
    size_t b = *i;

    while (*i < len && v[*i] >= '0' && v[*i] <= '9') {
        (*i)++;
    }
    if (*i == b) {
        return 0;
    }
    while (b + 1 < *i && v[b] == '0') {
        b++;
    }
    *start = b;
    return *i - b;
}

static void skip_ows(const char *v, size_t len, size_t *i)
{
    while (*i < len && (v[*i] == ' ' || v[*i] == '\t')) {
        (*i)++;
    }
}

int pdftoken_range_valid(const char *value, size_t len)
{
    size_t i = 6, specs = 0;

    if (value == NULL || len < 6 || !equal_lower(value, "bytes=", 6)) {
        return 0;
    }
    for (;;) {
        size_t fs = 0, fl, ls = 0, ll;

        skip_ows(value, len, &i);
        if (i < len && value[i] != ',') {
            if (value[i] == '-') { /* suffix-range */
                i++;
                if (!digits(value, len, &i, &ls)) {
                    return 0;
                }
            }
            else { /* int-range: first-pos "-" [ last-pos ] */
                fl = digits(value, len, &i, &fs);
                if (!fl || i == len || value[i++] != '-') {
                    return 0;
                }
                ll = digits(value, len, &i, &ls);
                /* last-pos < first-pos makes the range invalid. */
                if (ll
                    && (ll < fl
                        || (ll == fl
                            && memcmp(value + ls, value + fs, ll) < 0))) {
                    return 0;
                }
            }
            specs++;
            skip_ows(value, len, &i);
        }
        if (i == len) {
            return specs > 0;
        }
        if (value[i++] != ',') {
            return 0;
        }
    }
}
