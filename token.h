/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * token.h - HMAC-signed, path-bound, expiring tokens for mod_pdftoken.
 *
 * Plain C on OpenSSL's libcrypto: no httpd or APR headers, no globals, no
 * logging.  Every function takes its inputs explicitly (key, path, time)
 * and writes into caller-owned buffers, so that the library is unit-tested,
 * fuzzed and benchmarked on its own and linked unchanged into the module.
 *
 * Token format, version 2
 * -----------------------
 *
 * The token is the base64url encoding (RFC 4648 section 5, no padding) of
 * 45 raw bytes, so it is always exactly 60 characters long:
 *
 *     offset  length  field
 *          0       1  version, 0x02
 *          1       8  masked expiry: the expiry (seconds since the Unix
 *                     epoch, unsigned) XOR the nonce's first 8 bytes,
 *                     big-endian
 *          9      16  nonce, from RAND_bytes()
 *         25      20  tag: the first 20 bytes (160 bits) of
 *                     HMAC-SHA256(key, message)
 *
 * where message is
 *
 *     version (1) || masked expiry (8) || nonce (16)
 *     || len(path) (8, big-endian) || path
 *
 * "path" is the URL path the token is minted for, exactly as the caller
 * gives it (mod_pdftoken passes the decoded path of the request the browser
 * made).  The length prefix keeps the variable-length path from sliding
 * into the fixed fields; the fixed fields cannot slide because their
 * lengths never change.  45 bytes is a whole number of base64 groups, so
 * the encoding has no partial group and no padding bits to canonicalise.
 *
 * Why the mask: version 1 carried the expiry in clear, so its characters 0
 * to 11 were the same for every token minted in one second, and for one
 * second in 4096 (and longer runs more rarely) they held "--", which the
 * OWASP CRS at paranoia level 2 takes for an SQL comment: every first view
 * in that second was refused by such a WAF, whatever nonce was drawn.
 * Masked, every character of the token depends on the nonce, and drawing
 * another nonce (pdftoken_mint) gives a token without "--".  The tag covers
 * the masked bytes, so the mask changes nothing of what is signed.
 *
 * Characters 12 to 19 of the token encode the first six bytes of the nonce
 * (the nonce starts on a group boundary at byte 9): mod_pdftoken suffixes
 * its cookie name with them so that two tokens for one document, minted
 * for two tabs, do not overwrite each other's cookie.
 */

#ifndef PDFTOKEN_TOKEN_H
#define PDFTOKEN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define PDFTOKEN_VERSION 0x02
#define PDFTOKEN_EXPIRY_LEN 8
#define PDFTOKEN_NONCE_LEN 16
#define PDFTOKEN_TAG_LEN 20
#define PDFTOKEN_RAW_LEN                                                       \
    (1 + PDFTOKEN_EXPIRY_LEN + PDFTOKEN_NONCE_LEN + PDFTOKEN_TAG_LEN)
/* Length of an encoded token, without the terminating NUL. */
#define PDFTOKEN_LEN 60
/* Anything longer than this is refused before it is decoded. */
#define PDFTOKEN_MAX_LEN 64

/* Where the cookie-name suffix sits in an encoded token. */
#define PDFTOKEN_SUFFIX_OFFSET 12
#define PDFTOKEN_SUFFIX_LEN 8

/* A secret file must hold at least this many bytes (after trailing
 * whitespace is trimmed). */
#define PDFTOKEN_SECRET_MIN 32
/* A secret file larger than this is refused: it is almost certainly the
 * wrong file. */
#define PDFTOKEN_SECRET_MAX 4096

#define PDFTOKEN_HMAC_LEN 32

typedef enum {
    PDFTOKEN_OK = 0,       /* valid token / operation succeeded */
    PDFTOKEN_EXPIRED,      /* tag good for this path, expiry in the past */
    PDFTOKEN_MALFORMED,    /* wrong length, not base64url, padding, NUL */
    PDFTOKEN_BAD_VERSION,  /* decodes, but a version we do not know */
    PDFTOKEN_BAD_TAG,      /* tag wrong: forged, other path, other key */
    PDFTOKEN_SHORT_SECRET, /* key material below PDFTOKEN_SECRET_MIN */
    PDFTOKEN_LONG_SECRET,  /* key material above PDFTOKEN_SECRET_MAX */
    PDFTOKEN_CRYPTO_ERROR  /* libcrypto failed (RNG, MAC) */
} pdftoken_status;

/*
 * A prepared HMAC-SHA256 key.  The SHA-256 states after the key's inner
 * and outer pad blocks are computed once, when the key is initialised;
 * every MAC copies them and hashes only the message, with no allocation
 * (the -DPDFTOKEN_EVP_MAC build keeps a keyed EVP_MAC_CTX and duplicates
 * it instead; see token.c).
 * A key is only read after initialisation, so one key may be used by many
 * threads.
 */
typedef struct pdftoken_key {
    void *mac; /* the prepared state, opaque to callers */
} pdftoken_key;

/* Human-readable name of a status, for log messages. */
const char *pdftoken_status_str(pdftoken_status st);

/*
 * Initialise key from len raw bytes (len >= 1).  Used for the HMAC known
 * answers; servers use pdftoken_key_load() or pdftoken_key_generate().
 */
pdftoken_status pdftoken_key_init(pdftoken_key *key,
                                  const unsigned char *secret, size_t len);

/*
 * Initialise key from the contents of a secret file.  Trailing CR, LF,
 * space and tab are ignored (so `openssl rand -hex 32 > file` works), then
 * at least PDFTOKEN_SECRET_MIN and at most PDFTOKEN_SECRET_MAX bytes must
 * remain.  The caller still owns and should wipe the file bytes.
 */
pdftoken_status pdftoken_key_load(pdftoken_key *key, const unsigned char *bytes,
                                  size_t len);

/* Initialise key from 32 fresh bytes of OpenSSL's CSPRNG. */
pdftoken_status pdftoken_key_generate(pdftoken_key *key);

/* Release the key and wipe its material.  Safe on a zeroed key. */
void pdftoken_key_wipe(pdftoken_key *key);

/* HMAC-SHA256 of msg under key: the same code path that tags tokens. */
pdftoken_status pdftoken_hmac(const pdftoken_key *key, const unsigned char *msg,
                              size_t len, unsigned char out[PDFTOKEN_HMAC_LEN]);

/*
 * base64url without padding.  encode writes ((len * 4) + 2) / 3 characters
 * and a NUL into out and returns the number of characters.  decode is
 * strict: it refuses '=', any byte outside the alphabet, a length that
 * leaves one dangling character, non-zero padding bits, and output that
 * would exceed outcap; it returns the number of bytes, or -1 (and then
 * what it wrote to out means nothing).
 */
size_t pdftoken_b64url_encode(const unsigned char *in, size_t len, char *out);
long pdftoken_b64url_decode(const char *in, size_t len, unsigned char *out,
                            size_t outcap);

/*
 * Mint a token for path, valid until expiry (seconds since the epoch),
 * under key, with a fresh nonce.  out receives PDFTOKEN_LEN characters and
 * a NUL.
 */
pdftoken_status pdftoken_mint(const pdftoken_key *key, const char *path,
                              size_t pathlen, uint64_t expiry,
                              char out[PDFTOKEN_LEN + 1]);

/*
 * Does a minted token read as plain data to web application firewalls?
 * The OWASP Core Rule Set takes '-' for an SQL operator or comment: at
 * paranoia level 2, "--" (rule 942440, one random token in 70), "-0x" and
 * three hex digits (942450) and a digit, "or" and digits before a '-'
 * (942210) were blocked, their readers having done nothing wrong, and at
 * levels 3 and 4 a few '-' alone score.  A token without '-' is one word
 * of letters, digits and '_', which no rule of the set matches.  The mint
 * functions draw a new nonce until this holds.
 */
int pdftoken_waf_inert(const char token[PDFTOKEN_LEN + 1]);

/* How many nonces one mint draws before it settles for a token that is
 * not WAF-inert: 4 in 10 are, so 0.6^64 (1e-14) never happens, and such a
 * token still works wherever no WAF stands. */
#define PDFTOKEN_MINT_DRAWS 64

/* As pdftoken_mint, with the caller's nonce: for known-answer tests. */
pdftoken_status pdftoken_mint_nonce(
    const pdftoken_key *key, const char *path, size_t pathlen, uint64_t expiry,
    const unsigned char nonce[PDFTOKEN_NONCE_LEN], char out[PDFTOKEN_LEN + 1]);

/*
 * Nonces drawn in batches: one RAND_bytes() call fills PDFTOKEN_NONCE_BATCH
 * of them.  A RAND_bytes() call costs about as much as the token's whole
 * HMAC, whatever its length, and a nonce is no secret (it is printed in
 * the token), so drawing ahead changes nothing but the cost.  A pool
 * belongs to one thread; a zeroed pool is empty and fills itself on the
 * first take.  A pool must not be shared across fork(): mod_pdftoken
 * keeps one per thread of a child, and children never fork to serve.
 */
#define PDFTOKEN_NONCE_BATCH 64
typedef struct pdftoken_nonce_pool {
    unsigned char bytes[PDFTOKEN_NONCE_BATCH * PDFTOKEN_NONCE_LEN];
    unsigned int left; /* nonces not yet handed out, from the end */
} pdftoken_nonce_pool;

/* Copy the pool's next nonce to nonce, refilling the pool when it is
 * empty.  PDFTOKEN_OK or PDFTOKEN_CRYPTO_ERROR (the CSPRNG failed; the
 * pool stays empty). */
pdftoken_status pdftoken_nonce_take(pdftoken_nonce_pool *pool,
                                    unsigned char nonce[PDFTOKEN_NONCE_LEN]);

/* As pdftoken_mint, with nonces from pool. */
pdftoken_status pdftoken_mint_pool(const pdftoken_key *key, const char *path,
                                   size_t pathlen, uint64_t expiry,
                                   pdftoken_nonce_pool *pool,
                                   char out[PDFTOKEN_LEN + 1]);

/*
 * Verify token (toklen bytes, not necessarily NUL-terminated) for path at
 * time now, against keys[0..nkeys-1] in order (the first key mints, every
 * key verifies, so a previous secret keeps tokens in flight valid).
 *
 * The order is fixed: cap the length, decode strictly, require the exact
 * decoded length and a known version, recompute the tag, compare it in
 * constant time, and only then look at the clock.  Returns PDFTOKEN_OK,
 * PDFTOKEN_EXPIRED (the tag is good, so *expiry is meaningful),
 * PDFTOKEN_MALFORMED, PDFTOKEN_BAD_VERSION, PDFTOKEN_BAD_TAG or
 * PDFTOKEN_CRYPTO_ERROR.  If expiry is not NULL it receives the token's
 * expiry whenever the tag was good.
 */
pdftoken_status pdftoken_verify(const pdftoken_key *keys, size_t nkeys,
                                const char *token, size_t toklen,
                                const char *path, size_t pathlen, uint64_t now,
                                uint64_t *expiry);

/*
 * Query strings, as raw bytes (no percent-decoding: a token never needs
 * escaping, so an escaped one is simply malformed).
 *
 * args may be NULL (no query).
 *
 * pdftoken_query_find: look for parameters whose name is exactly
 * name[0..namelen) ("name" alone, without '=', counts, with an empty
 * value).  Returns how many there are; when at least one, *val and *vallen
 * describe the first one's value.
 *
 * pdftoken_query_strip: copy args to out with every such parameter
 * removed and everything else kept byte for byte, in order, joined by the
 * '&' that separated it.  out must have room for len + 1 bytes; the result
 * is NUL-terminated and its length returned.
 */
size_t pdftoken_query_find(const char *args, size_t len, const char *name,
                           size_t namelen, const char **val, size_t *vallen);
size_t pdftoken_query_strip(const char *args, size_t len, const char *name,
                            size_t namelen, char *out);

/*
 * Both in one pass, for a request that needs both (a tokenized one): the
 * count, *val and *vallen as pdftoken_query_find gives them, and out and
 * *outlen (the returned length) as pdftoken_query_strip writes them.
 */
size_t pdftoken_query_split(const char *args, size_t len, const char *name,
                            size_t namelen, const char **val, size_t *vallen,
                            char *out, size_t *outlen);

/*
 * Cookie header: does it hold a cookie named exactly name[0..namelen)
 * whose value equals token[0..toklen) byte for byte?  The walk follows
 * RFC 6265 syntax and tolerates junk: empty pairs, pairs without '=',
 * spaces and tabs around names and values, a value in double quotes.
 * Pairs are separated by ';' only, as browsers send them: a ',' is part
 * of a value.  Returns 1 or 0.
 */
int pdftoken_cookie_match(const char *header, size_t len, const char *name,
                          size_t namelen, const char *token, size_t toklen);

/*
 * The module's own cookies in a Cookie header: pairs whose name is
 * prefix[0..prefixlen) followed by exactly PDFTOKEN_SUFFIX_LEN base64url
 * characters (names are compared as the match above splits them).
 * Returns how many there are; the names of the first max of them, in
 * header order (for one path, oldest first: RFC 6265 section 5.4), go to
 * starts[] and lens[] as offsets into header.
 */
size_t pdftoken_cookie_family(const char *header, size_t len,
                              const char *prefix, size_t prefixlen,
                              size_t *starts, size_t *lens, size_t max);

/*
 * Is value[0..len) a syntactically valid byte-range request (RFC 9110
 * section 14.1.1): "bytes=" (unit case-insensitive) and a comma-separated
 * list of at least one "first-[last]" with last >= first, or "-suffix",
 * with optional whitespace around the commas?  Only then is a request a
 * viewer's range continuation (R5 of the decision table in
 * docs/behaviour.md).  value may be NULL.  1 or 0.
 */
int pdftoken_range_valid(const char *value, size_t len);

/*
 * What a browser renders as a PDF
 * -------------------------------
 *
 * Browsers do not go by the URL, and not only by the declared type: they
 * read Content-Type the WHATWG Fetch way, sniff a body without a valid
 * type, and re-guess a generic type (application/octet-stream) from the
 * file name a non-attachment Content-Disposition gives; Firefox in an
 * <object> or <embed> does so for an attachment too, and takes a binary
 * text/plain or a body without a valid type for a generic one first.  The
 * engines differ in the details, and a miss here is a hole, so every rule
 * below is a superset of what the engines were measured to do
 * (t/browser/render-matrix.tsv, checked by the unit tests, and the framed
 * forms of browser cases x7 and x8): a response is
 * never called "not a PDF" when one engine renders it as one.  Calling a
 * non-PDF a PDF only costs that response a token step.
 */

/* Longest type/subtype a PdfTokenTypes entry may have. */
#define PDFTOKEN_TYPE_MAX 127
/* How many body bytes pdftoken_sniff_pdf() looks at, at most. */
#define PDFTOKEN_SNIFF_MAX 512

typedef enum {
    PDFTOKEN_NOT_PDF = 0, /* no engine renders it as a PDF */
    PDFTOKEN_PDF,         /* a PDF by its headers alone */
    PDFTOKEN_PDF_IF_BODY  /* no valid type: a PDF if the body says so */
} pdftoken_render;

/*
 * The response headers a verdict depends on.  content_type and
 * disposition are NULL when the header is absent; path is the URL path
 * the browser asked for (a file name of last resort).  types are extra
 * protected types, beyond pdftoken_pdf_types, as lower-case
 * "type/subtype" strings.
 */
typedef struct {
    const char *content_type;
    size_t content_type_len;
    const char *disposition;
    size_t disposition_len;
    const char *path;
    size_t path_len;
    const char *const *types;
    size_t ntypes;
} pdftoken_response;

/*
 * WHATWG Fetch "extract a MIME type": split the value on ',' outside
 * quoted strings, parse each piece strictly, skip failures and the
 * wildcard type (star/star), and keep the last valid one.  Writes its
 * lower-case essence (type/subtype) and a NUL to out, at most
 * PDFTOKEN_TYPE_MAX characters, and returns the essence's full length; 0
 * when the value holds no valid type.  value may be NULL.
 */
size_t pdftoken_mime_essence(const char *value, size_t len,
                             char out[PDFTOKEN_TYPE_MAX + 1]);

/*
 * The one-pass reading of the common case: a value without ',' whose
 * leading type/subtype is followed by nothing but whitespace, ';' and
 * parameters ("text/html; charset=utf-8").  Then the lenient reading
 * (pdftoken_type_listed) and the Fetch one (pdftoken_mime_essence) see the
 * same type, and this writes it to out, lower case, and returns its
 * length; 0 when the value needs the general readings (lists, quotes
 * before a ',', odd characters, the wildcard, more than
 * PDFTOKEN_TYPE_MAX characters).  pdftoken_classify() tries it first.
 */
size_t pdftoken_single_essence(const char *value, size_t len,
                               char out[PDFTOKEN_TYPE_MAX + 1]);

/*
 * Does any comma-separated piece of a Content-Type value begin, read
 * leniently (leading whitespace skipped, up to the first character that
 * is neither a token character nor '/', case ignored), with one of types?
 * Wider than Fetch on purpose: "application/pdf, text/html" counts, in
 * case an engine takes the first type rather than the last.
 */
int pdftoken_type_listed(const char *value, size_t len,
                         const char *const *types, size_t ntypes);

/*
 * The types that engines render as a PDF whatever else the response says
 * (measured: t/browser/render-matrix.tsv).  pdftoken_classify() always
 * counts them; pdftoken_response.types only adds to them.
 */
extern const char *const pdftoken_pdf_types[];
extern const size_t pdftoken_pdf_ntypes;

/* The verdict on a response's headers. */
pdftoken_render pdftoken_classify(const pdftoken_response *resp);

/*
 * What a Content-Type value says on its own: PDFTOKEN_PDF for a PDF type
 * (built in or among types), PDFTOKEN_NOT_PDF for a type that no
 * disposition, URL path or body can make a PDF (text/html, image/png),
 * and PDFTOKEN_PDF_IF_BODY for the rest (no valid type, generic types,
 * text/plain), which pdftoken_classify() must judge with the response's
 * other headers.  value may be NULL.
 */
pdftoken_render pdftoken_classify_type(const char *value, size_t len,
                                       const char *const *types, size_t ntypes);

/*
 * pdftoken_classify_type() of a NUL-terminated value (httpd keeps
 * Content-Type so): the same answer, but the common value, one type and
 * perhaps parameters, is read in one pass without measuring it first.
 * Every response of a protected scope is classified once, so this is
 * the cheapest reading of it.  value may be NULL.
 */
pdftoken_render pdftoken_classify_type_str(const char *value,
                                           const char *const *types,
                                           size_t ntypes);

/*
 * For PDFTOKEN_PDF_IF_BODY: do the first len bytes of the body make it a
 * PDF?  1 when "%PDF-" starts the body (after whitespace, which no
 * engine was measured to skip but which costs nothing to allow), 0 when
 * it cannot, -1 when len bytes are too few to tell and more may come.
 */
int pdftoken_sniff_pdf(const unsigned char *body, size_t len);

#endif /* PDFTOKEN_TOKEN_H */
