/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * fuzz_render.c - libFuzzer target for what token.c calls a PDF:
 * pdftoken_mime_essence(), pdftoken_type_listed(), pdftoken_classify() and
 * pdftoken_sniff_pdf().
 *
 * Input layout: "CONTENT-TYPE\nDISPOSITION\nPATH\nBODY": each part runs to
 * the next '\n' (the body is the rest, NULs included); a missing part is
 * absent (NULL), so a seed is readable.
 *
 * Invariants (abort() on violation):
 *   - pdftoken_classify_type() says the same of a value and of that value
 *     followed by ',' (the general readings), and
 *     pdftoken_classify_type_str() the same of the value up to its first
 *     NUL;
 *   - pdftoken_single_essence(), where it answers, gives the essence
 *     that pdftoken_mime_essence() gives, and that type is listed by
 *     pdftoken_type_listed() (and application/pdf only when it is that);
 *   - the essence, when there is one, is lower case, holds exactly one
 *     '/', has a type and a subtype of token characters, and is not the
 *     wildcard; its length is what the function returned;
 *   - a value that is exactly that essence yields the same essence, and
 *     the essence counts as listed among a list holding it;
 *   - appending ", " and a valid type to a value without quotes changes
 *     the essence to that type (the last valid type wins);
 *   - pdftoken_classify_type(), where it says PDF or not, agrees with
 *     classify whatever the disposition and path;
 *   - classify calls every type of pdftoken_pdf_types a PDF, whatever the
 *     disposition and path, and calls a valid, listed type a PDF;
 *   - classify says PDFTOKEN_PDF_IF_BODY only when there is no valid type,
 *     an unknown one, or text/plain;
 *   - the sniff answers -1, 0 or 1, never -1 for PDFTOKEN_SNIFF_MAX bytes
 *     or more, and a body that starts with "%PDF-" sniffs as 1.
 */

#include "token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next part of the input, as an exact-size heap copy (NULL when the
 * input has run out). */
static char *next_part(const uint8_t *data, size_t size, size_t *off,
                       size_t *len, int last)
{
    const uint8_t *nl;
    char *p;

    if (*off > size || (*off == size && !last)) {
        *len = 0;
        return NULL;
    }
    nl = last ? NULL : memchr(data + *off, '\n', size - *off);
    *len = nl ? (size_t)(nl - (data + *off)) : size - *off;
    p = malloc(*len ? *len : 1);
    if (p == NULL) {
        abort();
    }
    memcpy(p, data + *off, *len);
    *off += *len + 1;
    return p;
}

static int is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
           || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* ct[0..len) and then c, in a heap block of exactly that size. */
static char *copy_plus(const char *ct, size_t len, char c)
{
    char *p = malloc(len + 1);

    if (p == NULL) {
        abort();
    }
    if (len) {
        memcpy(p, ct, len);
    }
    p[len] = c;
    return p;
}

/* The NUL-terminated reading of ct as httpd would hold it (up to its
 * first NUL) says what the measured one says, with an extra type too. */
static void check_str_reading(const char *ct, size_t ctlen)
{
    static const char *const extra[] = {"a/b"};
    const char *nul = ct ? memchr(ct, '\0', ctlen) : NULL;
    size_t len = nul ? (size_t)(nul - ct) : ctlen;
    char *str = copy_plus(ct, len, '\0');

    if (pdftoken_classify_type_str(ct ? str : NULL, NULL, 0)
            != pdftoken_classify_type(ct ? str : NULL, len, NULL, 0)
        || pdftoken_classify_type_str(ct ? str : NULL, extra, 1)
               != pdftoken_classify_type(ct ? str : NULL, len, extra, 1)) {
        abort();
    }
    free(str);
}

/* The one-pass reading, where it answers, sees what both general
 * readings see: the same essence, and that type listed. */
static void check_single_essence(const char *ct, size_t ctlen)
{
    char quick[PDFTOKEN_TYPE_MAX + 1], full[PDFTOKEN_TYPE_MAX + 1];
    const char *list[1];
    size_t n = pdftoken_single_essence(ct, ctlen, quick);
    /* A ',' after the value adds an empty piece, which changes nothing,
     * but takes the general readings instead of the one-pass one. */
    char *listed = copy_plus(ct, ctlen, ',');

    if (pdftoken_classify_type(ct, ctlen, NULL, 0)
        != pdftoken_classify_type(listed, ctlen + 1, NULL, 0)) {
        abort();
    }
    free(listed);
    check_str_reading(ct, ctlen);
    if (n == 0) {
        return;
    }
    if (pdftoken_mime_essence(ct, ctlen, full) != n || strcmp(quick, full)) {
        abort();
    }
    list[0] = quick;
    if (!pdftoken_type_listed(ct, ctlen, list, 1)) {
        abort();
    }
    list[0] = "application/pdf";
    if (pdftoken_type_listed(ct, ctlen, list, 1)
        != !strcmp(quick, "application/pdf")) {
        abort();
    }
}

static void check_essence(const char *ct, size_t ctlen)
{
    char out[PDFTOKEN_TYPE_MAX + 1], again[PDFTOKEN_TYPE_MAX + 1];
    const char *list[1];
    size_t n = pdftoken_mime_essence(ct, ctlen, out), i, slashes = 0;
    char *longer;

    check_single_essence(ct, ctlen);
    if (n == 0) {
        if (out[0] != '\0') {
            abort();
        }
        return;
    }
    if (n > PDFTOKEN_TYPE_MAX) {
        return; /* cut: the whole essence is not in out */
    }
    if (strlen(out) != n || out[0] == '/' || out[n - 1] == '/'
        || !strcmp(out, "*/*")) {
        abort();
    }
    for (i = 0; i < n; i++) {
        if (out[i] == '/') {
            slashes++;
        }
        else if (!is_tchar(out[i])) {
            abort();
        }
    }
    if (slashes != 1) {
        abort();
    }
    if (pdftoken_mime_essence(out, n, again) != n || strcmp(out, again)) {
        abort();
    }
    list[0] = out;
    if (!pdftoken_type_listed(out, n, list, 1)) {
        abort();
    }
    /* The last valid type wins, whatever came before; without quotes in
     * the value, no quoted string can swallow the appended type. */
    if (memchr(ct, '"', ctlen) != NULL) {
        return;
    }
    longer = malloc(ctlen + 8);
    if (longer == NULL) {
        abort();
    }
    memcpy(longer, ct, ctlen);
    memcpy(longer + ctlen, ", a/b", 5);
    if (pdftoken_mime_essence(longer, ctlen + 5, again) != 3
        || strcmp(again, "a/b")) {
        abort();
    }
    free(longer);
}

static void check_classify(const char *ct, size_t ctlen, const char *cd,
                           size_t cdlen, const char *path, size_t pathlen)
{
    pdftoken_response resp;
    pdftoken_render render;
    char essence[PDFTOKEN_TYPE_MAX + 1];
    size_t i, n;

    resp.content_type = ct;
    resp.content_type_len = ctlen;
    resp.disposition = cd;
    resp.disposition_len = cdlen;
    resp.path = path;
    resp.path_len = pathlen;
    resp.types = NULL;
    resp.ntypes = 0;
    render = pdftoken_classify(&resp);
    if (render != PDFTOKEN_NOT_PDF && render != PDFTOKEN_PDF
        && render != PDFTOKEN_PDF_IF_BODY) {
        abort();
    }
    /* The type alone, where it decides, decides the same. */
    switch (pdftoken_classify_type(ct, ctlen, NULL, 0)) {
    case PDFTOKEN_PDF:
        if (render != PDFTOKEN_PDF) {
            abort();
        }
        break;
    case PDFTOKEN_NOT_PDF:
        if (render != PDFTOKEN_NOT_PDF) {
            abort();
        }
        break;
    default:
        break;
    }
    n = pdftoken_mime_essence(ct, ctlen, essence);
    if (render == PDFTOKEN_PDF_IF_BODY && n != 0
        && strcmp(essence, "unknown/unknown")
        && strcmp(essence, "application/unknown")
        && strcmp(essence, "application/x-unknown-content-type")
        && strcmp(essence, "text/plain")) {
        abort();
    }
    /* A valid type, listed as extra, is a PDF. */
    if (n > 0 && n <= PDFTOKEN_TYPE_MAX) {
        const char *list[1];

        list[0] = essence;
        resp.types = list;
        resp.ntypes = 1;
        if (pdftoken_type_listed(ct, ctlen, list, 1)
            && pdftoken_classify(&resp) != PDFTOKEN_PDF) {
            abort();
        }
        resp.types = NULL;
        resp.ntypes = 0;
    }
    /* The built-in types are PDFs whatever else is said. */
    for (i = 0; i < pdftoken_pdf_ntypes; i++) {
        resp.content_type = pdftoken_pdf_types[i];
        resp.content_type_len = strlen(pdftoken_pdf_types[i]);
        if (pdftoken_classify(&resp) != PDFTOKEN_PDF) {
            abort();
        }
    }
}

static void check_sniff(const char *body, size_t len)
{
    int r = pdftoken_sniff_pdf((const unsigned char *)body, len);
    char *pdf;

    if (r < -1 || r > 1 || (r == -1 && len >= PDFTOKEN_SNIFF_MAX)) {
        abort();
    }
    pdf = malloc(len + 5);
    if (pdf == NULL) {
        abort();
    }
    memcpy(pdf, "%PDF-", 5);
    memcpy(pdf + 5, body, len);
    if (pdftoken_sniff_pdf((const unsigned char *)pdf, len + 5) != 1) {
        abort();
    }
    free(pdf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0, ctlen, cdlen, pathlen, bodylen;
    char *ct = next_part(data, size, &off, &ctlen, 0);
    char *cd = next_part(data, size, &off, &cdlen, 0);
    char *path = next_part(data, size, &off, &pathlen, 0);
    char *body = next_part(data, size, &off, &bodylen, 1);

    check_essence(ct, ctlen);
    check_classify(ct, ctlen, cd, cdlen, path, pathlen);
    check_sniff(body ? body : "", bodylen);
    free(ct);
    free(cd);
    free(path);
    free(body);
    return 0;
}
