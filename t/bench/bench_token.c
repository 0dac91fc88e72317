/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * bench_token.c - nanoseconds per operation of the token library, against
 * a bare one-shot HMAC() as the floor.
 *
 *     build/bench_token [rounds]
 *
 * The machines this runs on are small and shared, so the operations are
 * interleaved: every round runs each one for a short slice (about 45 ms),
 * and the table reports the median over the rounds.  Ratios are taken
 * within a round, where both sides saw the same machine, and the median
 * of those is reported.  A second, identical HMAC() row is the noise
 * floor: its ratio to the first should be 1.00.
 *
 * Exits 0 whatever the numbers (this is a benchmark, not a test), 1 if an
 * operation gives a wrong answer, 2 on a bad argument.
 */

#define _POSIX_C_SOURCE 200809L

#include "token.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define DEFAULT_ROUNDS 11
#define MAX_ROUNDS 1000
/* Time per operation per round, and the least spent calibrating. */
#define SLICE_NS 45000000.0
#define WARMUP_NS 30000000.0
/* The target from the brief: verify costs at most 1.5 bare HMAC()s. */
#define VERIFY_TARGET 1.5

/* Equal to the path length a real document URL might have. */
static const char bench_path[] = "/docs/reports/2024/annual-report.pdf";
#define BENCH_PATHLEN (sizeof(bench_path) - 1)
/* What the tag covers: version, expiry, nonce, len(path), then path. */
#define HEAD_LEN (1 + PDFTOKEN_EXPIRY_LEN + PDFTOKEN_NONCE_LEN + 8)
#define MSG_LEN (HEAD_LEN + BENCH_PATHLEN)

static const unsigned char secret[32] = "bench-key-0123456789abcdefghijkl";
static const unsigned char old_secret[32] = "bench-old-0123456789abcdefghijkl";
#define NOW UINT64_C(1700000000)
#define EXPIRY UINT64_C(2000000000)

static pdftoken_key keys[2];    /* current, previous */
static pdftoken_key rotated[2]; /* a newer key first: 2 MACs to accept */
static char tok_valid[PDFTOKEN_LEN + 1];
static char tok_badtag[PDFTOKEN_LEN + 1];
static char tok_badchar[PDFTOKEN_LEN + 1];
static unsigned char msg[MSG_LEN];

/* Count of wrong answers seen inside the timed loops. */
static unsigned long failures;
/* Written by every loop so the compiler keeps the work. */
static volatile unsigned char sink;

typedef void (*bench_fn)(unsigned long n);

static void run_mint(unsigned long n)
{
    char out[PDFTOKEN_LEN + 1];

    while (n--) {
        if (pdftoken_mint(&keys[0], bench_path, BENCH_PATHLEN, EXPIRY, out)
            != PDFTOKEN_OK) {
            failures++;
        }
        sink = (unsigned char)out[0];
    }
}

static void expect_verify(const pdftoken_key *k, size_t nkeys, const char *tok,
                          size_t toklen, pdftoken_status want, unsigned long n)
{
    while (n--) {
        if (pdftoken_verify(k, nkeys, tok, toklen, bench_path, BENCH_PATHLEN,
                            NOW, NULL)
            != want) {
            failures++;
        }
    }
}

static void run_verify_ok(unsigned long n)
{
    expect_verify(keys, 2, tok_valid, PDFTOKEN_LEN, PDFTOKEN_OK, n);
}

static void run_verify_prev(unsigned long n)
{
    expect_verify(rotated, 2, tok_valid, PDFTOKEN_LEN, PDFTOKEN_OK, n);
}

static void run_verify_short(unsigned long n)
{
    expect_verify(keys, 2, tok_valid, PDFTOKEN_LEN - 1, PDFTOKEN_MALFORMED, n);
}

static void run_verify_badchar(unsigned long n)
{
    expect_verify(keys, 2, tok_badchar, PDFTOKEN_LEN, PDFTOKEN_MALFORMED, n);
}

static void run_verify_badtag(unsigned long n)
{
    /* One key, so that this row is one MAC like the valid one. */
    expect_verify(keys, 1, tok_badtag, PDFTOKEN_LEN, PDFTOKEN_BAD_TAG, n);
}

static void run_pdftoken_hmac(unsigned long n)
{
    unsigned char out[PDFTOKEN_HMAC_LEN];

    while (n--) {
        if (pdftoken_hmac(&keys[0], msg, MSG_LEN, out) != PDFTOKEN_OK) {
            failures++;
        }
        sink = out[0];
    }
}

static void run_bare_hmac(unsigned long n)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int outlen;

    while (n--) {
        if (HMAC(EVP_sha256(), secret, (int)sizeof(secret), msg, MSG_LEN, out,
                 &outlen)
            == NULL) {
            failures++;
        }
        sink = out[0];
    }
}

typedef struct {
    const char *name;
    bench_fn fn;
    unsigned long iters; /* per round, from calibration */
    double *ns;          /* ns/op, one per round */
} bench_op;

enum {
    OP_MINT,
    OP_VERIFY_OK,
    OP_VERIFY_PREV,
    OP_VERIFY_SHORT,
    OP_VERIFY_BADCHAR,
    OP_VERIFY_BADTAG,
    OP_PDFTOKEN_HMAC,
    OP_BARE_HMAC,
    OP_BARE_HMAC_COPY,
    OP_COUNT
};

static bench_op ops[OP_COUNT] = {
    {"mint", run_mint, 0, NULL},
    {"verify, valid", run_verify_ok, 0, NULL},
    {"verify, valid under 2nd key", run_verify_prev, 0, NULL},
    {"verify, malformed (59 chars)", run_verify_short, 0, NULL},
    {"verify, malformed (bad char)", run_verify_badchar, 0, NULL},
    {"verify, bad tag", run_verify_badtag, 0, NULL},
    {"pdftoken_hmac (prepared key)", run_pdftoken_hmac, 0, NULL},
    {"HMAC() one-shot (floor)", run_bare_hmac, 0, NULL},
    {"HMAC() one-shot, again", run_bare_hmac, 0, NULL},
};

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double time_ns(bench_fn fn, unsigned long n)
{
    double t0 = now_ns();

    fn(n);
    return now_ns() - t0;
}

/* Warm the caches and the CPU up, and pick iterations for one slice. */
static void calibrate(bench_op *op)
{
    unsigned long n = 16;
    double t;

    while ((t = time_ns(op->fn, n)) < WARMUP_NS) {
        n *= 2;
    }
    op->iters = (unsigned long)(SLICE_NS / (t / (double)n)) + 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Median of v[0..n); sorts a copy. */
static double median(const double *v, int n)
{
    double *s = malloc((size_t)n * sizeof(*s)), m;

    if (s == NULL) {
        abort();
    }
    memcpy(s, v, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

static double extreme(const double *v, int n, int want_max)
{
    double m = v[0];
    int i;

    for (i = 1; i < n; i++) {
        if (want_max ? v[i] > m : v[i] < m) {
            m = v[i];
        }
    }
    return m;
}

/* Median over rounds of the within-round ratio a/b. */
static double ratio(int a, int b, int rounds)
{
    double *r = malloc((size_t)rounds * sizeof(*r)), m;
    int i;

    if (r == NULL) {
        abort();
    }
    for (i = 0; i < rounds; i++) {
        r[i] = ops[a].ns[i] / ops[b].ns[i];
    }
    m = median(r, rounds);
    free(r);
    return m;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_token: %s\n", what);
    return 1;
}

/* Build the keys, the tokens and the message; check every answer once. */
static int setup(void)
{
    static const unsigned char nonce[PDFTOKEN_NONCE_LEN] = "bench-nonce-16by";
    unsigned char a[PDFTOKEN_HMAC_LEN], b[EVP_MAX_MD_SIZE];
    unsigned int blen = 0;
    uint64_t v;
    size_t i;

    if (pdftoken_key_init(&keys[0], secret, sizeof(secret)) != PDFTOKEN_OK
        || pdftoken_key_init(&keys[1], old_secret, sizeof(old_secret))
               != PDFTOKEN_OK
        || pdftoken_key_generate(&rotated[0]) != PDFTOKEN_OK
        || pdftoken_key_init(&rotated[1], secret, sizeof(secret))
               != PDFTOKEN_OK) {
        return fail("cannot make keys");
    }
    if (pdftoken_mint_nonce(&keys[0], bench_path, BENCH_PATHLEN, EXPIRY, nonce,
                            tok_valid)
            != PDFTOKEN_OK
        || strlen(tok_valid) != PDFTOKEN_LEN) {
        return fail("cannot mint");
    }
    /* Same length and alphabet, last tag character changed. */
    memcpy(tok_badtag, tok_valid, sizeof(tok_badtag));
    tok_badtag[PDFTOKEN_LEN - 1] =
        tok_badtag[PDFTOKEN_LEN - 1] == 'A' ? 'B' : 'A';
    /* Right length, but a '.' half way: refused by the decoder. */
    memcpy(tok_badchar, tok_valid, sizeof(tok_badchar));
    tok_badchar[PDFTOKEN_LEN / 2] = '.';

    /* The MAC input of a token, same size as the real one. */
    msg[0] = PDFTOKEN_VERSION;
    for (i = 0, v = EXPIRY; i < 8; i++, v >>= 8) {
        msg[8 - i] = (unsigned char)(v & 0xff);
    }
    memcpy(msg + 9, nonce, PDFTOKEN_NONCE_LEN);
    for (i = 0, v = BENCH_PATHLEN; i < 8; i++, v >>= 8) {
        msg[HEAD_LEN - 1 - i] = (unsigned char)(v & 0xff);
    }
    memcpy(msg + HEAD_LEN, bench_path, BENCH_PATHLEN);

    /* The prepared key must compute exactly what HMAC() computes. */
    if (pdftoken_hmac(&keys[0], msg, MSG_LEN, a) != PDFTOKEN_OK
        || HMAC(EVP_sha256(), secret, (int)sizeof(secret), msg, MSG_LEN, b,
                &blen)
               == NULL
        || blen != PDFTOKEN_HMAC_LEN || memcmp(a, b, blen) != 0) {
        return fail("pdftoken_hmac differs from HMAC()");
    }

    if (pdftoken_verify(keys, 2, tok_valid, PDFTOKEN_LEN, bench_path,
                        BENCH_PATHLEN, NOW, NULL)
        != PDFTOKEN_OK) {
        return fail("valid token does not verify");
    }
    if (pdftoken_verify(rotated, 2, tok_valid, PDFTOKEN_LEN, bench_path,
                        BENCH_PATHLEN, NOW, NULL)
        != PDFTOKEN_OK) {
        return fail("valid token does not verify under the second key");
    }
    if (pdftoken_verify(keys, 2, tok_valid, PDFTOKEN_LEN - 1, bench_path,
                        BENCH_PATHLEN, NOW, NULL)
            != PDFTOKEN_MALFORMED
        || pdftoken_verify(keys, 2, tok_badchar, PDFTOKEN_LEN, bench_path,
                           BENCH_PATHLEN, NOW, NULL)
               != PDFTOKEN_MALFORMED) {
        return fail("malformed token not refused as malformed");
    }
    if (pdftoken_verify(keys, 1, tok_badtag, PDFTOKEN_LEN, bench_path,
                        BENCH_PATHLEN, NOW, NULL)
        != PDFTOKEN_BAD_TAG) {
        return fail("forged token not refused as bad tag");
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = DEFAULT_ROUNDS, r, i;
    double t0 = now_ns(), rv, rh, rfloor;

    if (argc > 2) {
        fprintf(stderr, "usage: %s [rounds]\n", argv[0]);
        return 2;
    }
    if (argc == 2) {
        char *end;
        long l = strtol(argv[1], &end, 10);

        if (end == argv[1] || *end != '\0' || l < 1 || l > MAX_ROUNDS) {
            fprintf(stderr, "%s: rounds must be 1 to %d\n", argv[0],
                    MAX_ROUNDS);
            return 2;
        }
        rounds = (int)l;
    }

    if (setup() != 0) {
        return 1;
    }

    for (i = 0; i < OP_COUNT; i++) {
        ops[i].ns = malloc((size_t)rounds * sizeof(double));
        if (ops[i].ns == NULL) {
            return fail("out of memory");
        }
        calibrate(&ops[i]);
    }

    /* Interleave: every round runs every operation once, and alternate
     * rounds run them in reverse so that no row always follows the same
     * neighbour. */
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < OP_COUNT; i++) {
            bench_op *op = &ops[r % 2 ? OP_COUNT - 1 - i : i];

            op->ns[r] = time_ns(op->fn, op->iters) / (double)op->iters;
        }
    }
    if (failures != 0) {
        fprintf(stderr, "bench_token: %lu wrong answers while timing\n",
                failures);
        return 1;
    }

    printf("token library, path of %zu bytes (MAC input %d bytes), "
           "%d rounds\n\n",
           BENCH_PATHLEN, (int)MSG_LEN, rounds);
    printf("%-30s %10s %10s %10s %10s\n", "operation", "median ns", "min ns",
           "max ns", "iter/round");
    for (i = 0; i < OP_COUNT; i++) {
        printf("%-30s %10.1f %10.1f %10.1f %10lu\n", ops[i].name,
               median(ops[i].ns, rounds), extreme(ops[i].ns, rounds, 0),
               extreme(ops[i].ns, rounds, 1), ops[i].iters);
    }

    rv = ratio(OP_VERIFY_OK, OP_BARE_HMAC, rounds);
    rh = ratio(OP_PDFTOKEN_HMAC, OP_BARE_HMAC, rounds);
    rfloor = ratio(OP_BARE_HMAC_COPY, OP_BARE_HMAC, rounds);
    printf("\nratios (median of within-round ratios):\n");
    printf("  verify valid / bare HMAC()    %6.2f  (target <= %.1f: %s)\n", rv,
           VERIFY_TARGET, rv <= VERIFY_TARGET ? "met" : "NOT met");
    printf("  pdftoken_hmac / bare HMAC()   %6.2f\n", rh);
    printf("  bare HMAC() copy / bare HMAC()%6.2f  (noise floor, ideal "
           "1.00)\n",
           rfloor);
    printf("  bare HMAC() / verify short    %6.0f  (malformed refused "
           "before any MAC)\n",
           1.0 / ratio(OP_VERIFY_SHORT, OP_BARE_HMAC, rounds));
    printf("\n%.1f s in all\n", (now_ns() - t0) / 1e9);

    for (i = 0; i < OP_COUNT; i++) {
        free(ops[i].ns);
    }
    for (i = 0; i < 2; i++) {
        pdftoken_key_wipe(&keys[i]);
        pdftoken_key_wipe(&rotated[i]);
    }
    return 0;
}
