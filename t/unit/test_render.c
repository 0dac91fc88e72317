/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * test_render.c - Check unit tests for what token.c calls a PDF: the
 * Content-Type read the Fetch way, the disposition and file-name rule, and
 * the %PDF- sniff (SPEC section 2).
 *
 * The last case reads t/browser/render-matrix.tsv, what Chromium, Firefox
 * and WebKit were measured to render as a PDF (make browser records it and
 * fails when an engine changes), and requires the library to call every
 * such cell a PDF: a browser update that renders a new kind of response
 * then fails here too, instead of opening a hole silently.
 */

#include "token.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELTS(a) (sizeof(a) / sizeof((a)[0]))

/* Copy s into a block of exactly its length: no NUL follows, so a read
 * past the end is caught by AddressSanitizer. */
static char *dup_exact(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);

    ck_assert_ptr_nonnull(p);
    memcpy(p, s, len);
    return p;
}

/* ---- pdftoken_mime_essence ------------------------------------------- */

static const struct {
    const char *name, *value, *essence;
} essence_cases[] = {
    {"plain", "text/html", "text/html"},
    {"case and parameters", "TEXT/Html; charset=x", "text/html"},
    {"whitespace around", " \t application/pdf \t", "application/pdf"},
    {"last valid wins", "text/html, application/pdf", "application/pdf"},
    {"first of two when last invalid", "application/pdf,", "application/pdf"},
    {"wildcard skipped", "application/pdf, */*", "application/pdf"},
    {"wildcard alone", "*/*", ""},
    {"empty", "", ""},
    {"no slash", "pdf", ""},
    {"no subtype", "application/", ""},
    {"no type", "/pdf", ""},
    {"empty parameters", "application/pdf;;", "application/pdf"},
    {"space inside subtype", "application/pdf foo", ""},
    {"non-ASCII", "application/pd\xc3\xa9", ""},
    {"quote in type", "text/\"html\"", ""},
    {"comma inside quotes", "text/html;charset=\"a,application/pdf\"",
     "text/html"},
    {"escaped quote inside quotes", "text/html;x=\"a\\\",b\", application/pdf",
     "application/pdf"},
    {"quoted comma hides the type", "foo; a=\"x, text/html; y=\"", ""},
    {"unterminated quote", "text/plain; a=\"x, application/pdf", "text/plain"},
    {"both invalid", "pdf, html", ""},
    {"trailing tab", "text/plain\t", "text/plain"},
    {"one-letter", "a/b", "a/b"},
};

START_TEST(test_mime_essence)
{
    char out[PDFTOKEN_TYPE_MAX + 1];
    const char *v = essence_cases[_i].value;
    char *copy = dup_exact(v, strlen(v));
    size_t n = pdftoken_mime_essence(copy, strlen(v), out);

    ck_assert_msg(n == strlen(essence_cases[_i].essence)
                      && !strcmp(out, essence_cases[_i].essence),
                  "%s: '%s' gave '%s' (%zu), want '%s'", essence_cases[_i].name,
                  v, out, n, essence_cases[_i].essence);
    free(copy);
}
END_TEST

START_TEST(test_mime_essence_long_and_null)
{
    char out[PDFTOKEN_TYPE_MAX + 1], big[400];

    ck_assert_uint_eq(pdftoken_mime_essence(NULL, 0, out), 0);
    ck_assert_str_eq(out, "");
    /* A valid type longer than the buffer: its full length, cut output. */
    memset(big, 'a', sizeof(big));
    big[1] = '/';
    ck_assert_uint_eq(pdftoken_mime_essence(big, sizeof(big), out),
                      sizeof(big));
    ck_assert_uint_eq(strlen(out), PDFTOKEN_TYPE_MAX);
}
END_TEST

/* ---- pdftoken_type_listed -------------------------------------------- */

static const char *const listed_types[] = {"application/pdf", "text/pdf"};

static const struct {
    const char *name, *value;
    int want;
} listed_cases[] = {
    {"exact", "application/pdf", 1},
    {"case and parameters", "APPLICATION/PDF;x=1", 1},
    {"first of a list", "application/pdf, text/html", 1},
    {"last of a list", "text/html,text/pdf", 1},
    {"leading space", " \ttext/pdf", 1},
    {"comment after", "application/pdf(x)", 1},
    {"longer subtype", "application/pdfx", 0},
    {"prefix before", "xapplication/pdf", 0},
    {"other type", "text/html", 0},
    {"empty", "", 0},
    {"only commas", ",,,", 0},
};

START_TEST(test_type_listed)
{
    const char *v = listed_cases[_i].value;
    char *copy = dup_exact(v, strlen(v));

    ck_assert_msg(
        pdftoken_type_listed(copy, strlen(v), listed_types, NELTS(listed_types))
            == listed_cases[_i].want,
        "%s: '%s'", listed_cases[_i].name, v);
    free(copy);
}
END_TEST

/* ---- pdftoken_classify ----------------------------------------------- */

static const char *const extra_types[] = {"application/x-custom"};

static const struct {
    const char *name, *ctype, *disposition, *path;
    int extra;
    pdftoken_render want;
} classify_cases[] = {
    {"no type", NULL, NULL, "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"empty type", "", NULL, "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"unknown/unknown", "unknown/unknown", NULL, "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"application/unknown", "application/unknown", NULL, "/x", 0,
     PDFTOKEN_PDF_IF_BODY},
    {"wildcard", "*/*", NULL, "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"malformed", "pdf", NULL, "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"html", "text/html", NULL, "/x", 0, PDFTOKEN_NOT_PDF},
    {"application/pdf", "application/pdf", NULL, "/x", 0, PDFTOKEN_PDF},
    {"text/pdf", "text/pdf", NULL, "/x", 0, PDFTOKEN_PDF},
    {"application/x-pdf", "application/x-pdf", NULL, "/x", 0, PDFTOKEN_PDF},
    {"pdf first of a list", "application/pdf, text/html", NULL, "/x", 0,
     PDFTOKEN_PDF},
    {"pdf as attachment", "application/pdf", "attachment", "/x", 0,
     PDFTOKEN_PDF},
    {"extra type", "application/x-custom", NULL, "/x", 1, PDFTOKEN_PDF},
    {"extra type not configured", "application/x-custom", NULL, "/x", 0,
     PDFTOKEN_NOT_PDF},
    {"octet-stream inline .pdf", "application/octet-stream",
     "inline; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream quoted .PDF", "application/octet-stream",
     "inline; filename=\"x.PDF\"", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream filename*", "application/octet-stream",
     "inline; filename*=UTF-8''x%2Epdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream unknown disposition", "application/octet-stream",
     "foo; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    /* Firefox shows application/octet-stream in an <object> or <embed>
     * whatever its disposition, when the URL or the filename (in any
     * spelling) says .pdf: an attachment that names a file counts. */
    {"octet-stream attachment", "application/octet-stream",
     "Attachment ; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream attachment, encoded name", "application/octet-stream",
     "attachment; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream attachment, RFC 2047", "application/octet-stream",
     "attachment; FILENAME=\"=?UTF-8?B?eC5wZGY=?=\"", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream attachment, continuations", "application/octet-stream",
     "attachment; filename*0=\"x.\"; filename*1=\"pdf\"", "/x", 0,
     PDFTOKEN_PDF},
    {"octet-stream attachment, other name", "application/octet-stream",
     "attachment; filename=x.bin", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream attachment, URL .pdf", "application/octet-stream",
     "attachment", "/x.pdf", 0, PDFTOKEN_PDF},
    {"octet-stream attachment, no name", "application/octet-stream",
     "attachment", "/x", 0, PDFTOKEN_NOT_PDF},
    {"octet-stream attachment, name= only", "application/octet-stream",
     "attachment; name=x.bin", "/x", 0, PDFTOKEN_NOT_PDF},
    /* Issue 19: a generic type with any disposition but attachment is
     * PDF-like, whatever name it gives and however it writes it. */
    {"octet-stream .txt", "application/octet-stream", "inline; filename=x.txt",
     "/x", 0, PDFTOKEN_PDF},
    {"octet-stream inline, no name", "application/octet-stream", "inline", "/x",
     0, PDFTOKEN_PDF},
    {"octet-stream empty disposition", "application/octet-stream", "", "/x", 0,
     PDFTOKEN_PDF},
    {"octet-stream no type token", "application/octet-stream",
     "filename=x.pd%66", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream filename* escaped p", "application/octet-stream",
     "inline; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream filename* escaped f", "application/octet-stream",
     "inline; filename*=UTF-8''x.pd%66", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream continuations", "application/octet-stream",
     "inline; filename*0=\"x.\"; filename*1=\"pdf\"", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream quoted-pair", "application/octet-stream",
     "inline; filename=\"x.p\\df\"", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream RFC 2047", "application/octet-stream",
     "inline; filename=\"=?UTF-8?B?eC5wZGY=?=\"", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream percent in filename", "application/octet-stream",
     "inline; filename=x.pd%66", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream name=", "application/octet-stream", "inline; name=x.pd%66",
     "/x", 0, PDFTOKEN_PDF},
    {"octet-stream quoted type", "application/octet-stream",
     "\"inline\"; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream malformed", "application/octet-stream", ";;=\"", "/x", 0,
     PDFTOKEN_PDF},
    {"octet-stream attachment beside inline", "application/octet-stream",
     "attachment, inline; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream, parameters and case", "Application/Octet-Stream; x=y",
     "inline; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"binary/octet-stream encoded", "binary/octet-stream",
     "inline; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"application/x-download .txt", "application/x-download",
     "inline; filename=x.txt", "/x", 0, PDFTOKEN_PDF},
    {"application/force-download foo", "application/force-download",
     "foo; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"application/download empty", "application/download", "", "/x", 0,
     PDFTOKEN_PDF},
    {"application/binary continuations", "application/binary",
     "inline; filename*0=\"x.\"; filename*1=\"pdf\"", "/x", 0, PDFTOKEN_PDF},
    {"application/x-octet-stream inline", "application/x-octet-stream",
     "inline", "/x", 0, PDFTOKEN_PDF},
    {"application/x-download attachment", "application/x-download",
     "attachment; filename=x.pdf", "/x", 0, PDFTOKEN_PDF},
    {"octet-stream .txt at a .pdf URL", "application/octet-stream",
     "inline; filename=x.txt", "/x.pdf", 0, PDFTOKEN_PDF},
    {"octet-stream, URL .pdf", "application/octet-stream", NULL, "/a/B.PDF", 0,
     PDFTOKEN_PDF},
    {"octet-stream, inline, URL .pdf", "application/octet-stream", "inline",
     "/b.pdf", 0, PDFTOKEN_PDF},
    {"octet-stream, URL not .pdf", "application/octet-stream", NULL, "/b", 0,
     PDFTOKEN_NOT_PDF},
    {"binary/octet-stream .pdf", "binary/octet-stream", "filename=x.pdf", "/x",
     0, PDFTOKEN_PDF},
    {"text/plain inline .pdf", "text/plain", "inline; filename=a.pdf", "/x", 0,
     PDFTOKEN_PDF},
    {"text/plain, URL .pdf", "text/plain", NULL, "/a.pdf", 0, PDFTOKEN_PDF},
    /* Firefox takes a binary text/plain body for application/octet-stream,
     * and WebKitGTK sniffs it: c337-c341. */
    {"text/plain inline .txt", "text/plain", "inline; filename=a.txt", "/x", 0,
     PDFTOKEN_PDF},
    {"text/plain inline, encoded name", "text/plain",
     "inline; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"text/plain, no disposition", "text/plain", NULL, "/x", 0,
     PDFTOKEN_PDF_IF_BODY},
    {"text/plain; charset=utf-8", "text/plain; charset=utf-8", NULL, "/x", 0,
     PDFTOKEN_PDF_IF_BODY},
    /* In an <object> or <embed> Firefox takes a binary text/plain, and a
     * body without a valid type, for application/octet-stream, and shows
     * it in pdf.js by its name despite "attachment" (measured
     * 2026-12-07): an attachment that names a file counts. */
    {"text/plain attachment", "text/plain", "attachment; filename=a.pdf", "/x",
     0, PDFTOKEN_PDF},
    {"text/plain attachment, encoded name", "text/plain",
     "attachment; filename*=UTF-8''x.%70df", "/x", 0, PDFTOKEN_PDF},
    {"text/plain attachment, other name", "text/plain",
     "attachment; filename=a.txt", "/x", 0, PDFTOKEN_PDF},
    {"text/plain attachment, URL .pdf", "text/plain", "attachment", "/a.pdf", 0,
     PDFTOKEN_PDF},
    {"text/plain attachment, no name", "text/plain", "attachment", "/x", 0,
     PDFTOKEN_NOT_PDF},
    {"no type, attachment", NULL, "attachment; filename=a.pdf", "/x", 0,
     PDFTOKEN_PDF},
    {"empty type, attachment", "", "attachment; filename=a.pdf", "/x", 0,
     PDFTOKEN_PDF},
    {"malformed type, attachment", "foo", "attachment; filename=a.pdf", "/x", 0,
     PDFTOKEN_PDF},
    {"wildcard, attachment", "*/*", "attachment; filename*=UTF-8''x.%70df",
     "/x", 0, PDFTOKEN_PDF},
    {"no type, attachment, no name", NULL, "attachment", "/x", 0,
     PDFTOKEN_PDF_IF_BODY},
    {"unknown/unknown attachment, no name", "unknown/unknown", "attachment",
     "/x", 0, PDFTOKEN_PDF_IF_BODY},
    {"html attachment .pdf", "text/html", "attachment; filename=a.pdf", "/x", 0,
     PDFTOKEN_NOT_PDF},
    {"text/html", "text/html", NULL, "/x", 0, PDFTOKEN_NOT_PDF},
    {"no type, inline .pdf", NULL, "inline; filename=a.pdf", "/x", 0,
     PDFTOKEN_PDF},
    {"html inline .pdf", "text/html", "inline; filename=a.pdf", "/x", 0,
     PDFTOKEN_NOT_PDF},
};

START_TEST(test_classify)
{
    pdftoken_response resp;
    const char *ct = classify_cases[_i].ctype;
    const char *cd = classify_cases[_i].disposition;
    const char *path = classify_cases[_i].path;
    pdftoken_render got, by_type;

    resp.content_type = ct ? dup_exact(ct, strlen(ct)) : NULL;
    resp.content_type_len = ct ? strlen(ct) : 0;
    resp.disposition = cd ? dup_exact(cd, strlen(cd)) : NULL;
    resp.disposition_len = cd ? strlen(cd) : 0;
    resp.path = dup_exact(path, strlen(path));
    resp.path_len = strlen(path);
    resp.types = classify_cases[_i].extra ? extra_types : NULL;
    resp.ntypes = classify_cases[_i].extra ? NELTS(extra_types) : 0;
    got = pdftoken_classify(&resp);
    ck_assert_msg(got == classify_cases[_i].want, "%s: got %d, want %d",
                  classify_cases[_i].name, (int)got,
                  (int)classify_cases[_i].want);
    /* The type alone, where it decides, decides the same. */
    by_type = pdftoken_classify_type(resp.content_type, resp.content_type_len,
                                     resp.types, resp.ntypes);
    ck_assert_msg(by_type == PDFTOKEN_PDF_IF_BODY || by_type == got,
                  "%s: the type alone says %d", classify_cases[_i].name,
                  (int)by_type);
    free((void *)resp.content_type);
    free((void *)resp.disposition);
    free((void *)resp.path);
}
END_TEST

/* ---- pdftoken_classify_type and pdftoken_single_essence --------------- */

static const struct {
    const char *value, *essence; /* essence NULL: the general readings */
    pdftoken_render by_type;
} type_cases[] = {
    {"text/html", "text/html", PDFTOKEN_NOT_PDF},
    {"Text/HTML; charset=UTF-8", "text/html", PDFTOKEN_NOT_PDF},
    {" image/png ;", "image/png", PDFTOKEN_NOT_PDF},
    {"application/pdf", "application/pdf", PDFTOKEN_PDF},
    {"application/PDF;x=\"y\"", "application/pdf", PDFTOKEN_PDF},
    {"text/plain", "text/plain", PDFTOKEN_PDF_IF_BODY},
    {"application/octet-stream", "application/octet-stream",
     PDFTOKEN_PDF_IF_BODY},
    {"unknown/unknown", "unknown/unknown", PDFTOKEN_PDF_IF_BODY},
    {NULL, NULL, PDFTOKEN_PDF_IF_BODY},
    {"", NULL, PDFTOKEN_PDF_IF_BODY},
    {"text/html, application/pdf", NULL, PDFTOKEN_PDF},
    {"application/pdf, text/html", NULL, PDFTOKEN_PDF},
    {"text/html x", NULL, PDFTOKEN_PDF_IF_BODY},
    {"/pdf", NULL, PDFTOKEN_PDF_IF_BODY},
    {"/a/b", NULL, PDFTOKEN_PDF_IF_BODY},
    {"a/b/c", NULL, PDFTOKEN_PDF_IF_BODY},
    {"*/*", NULL, PDFTOKEN_PDF_IF_BODY},
    {"application/pdf\x01", NULL, PDFTOKEN_PDF},
    /* WebKitGTK shows a PDF part of it in its viewer (render matrix) */
    {"multipart/x-mixed-replace; boundary=pdftoken-part",
     "multipart/x-mixed-replace", PDFTOKEN_PDF},
    {"Multipart/X-Mixed-Replace;boundary=\"b\"", "multipart/x-mixed-replace",
     PDFTOKEN_PDF},
    {"text/html, multipart/x-mixed-replace; boundary=b", NULL, PDFTOKEN_PDF},
    {"multipart/mixed; boundary=b", "multipart/mixed", PDFTOKEN_NOT_PDF},
};

START_TEST(test_classify_type)
{
    const char *v = type_cases[_i].value;
    char *copy = v ? dup_exact(v, strlen(v)) : NULL;
    char out[PDFTOKEN_TYPE_MAX + 1];
    size_t len = v ? strlen(v) : 0, n = pdftoken_single_essence(copy, len, out);

    if (type_cases[_i].essence) {
        ck_assert_msg(n == strlen(type_cases[_i].essence)
                          && !strcmp(out, type_cases[_i].essence),
                      "'%s': essence '%s'", v, n ? out : "");
    }
    else {
        ck_assert_msg(n == 0, "'%s': no one-pass reading, got '%s'",
                      v ? v : "(null)", out);
    }
    ck_assert_int_eq(pdftoken_classify_type(copy, len, NULL, 0),
                     type_cases[_i].by_type);
    free(copy);
}
END_TEST

/* Every type the library knows by name, and a few it does not: the
 * one-pass reading and the general ones (a ',' after the value) must say
 * the same of each, alone and with parameters. */
static const char *const named_types[] = {"application/pdf",
                                          "text/pdf",
                                          "application/x-pdf",
                                          "text/x-pdf",
                                          "application/acrobat",
                                          "applications/vnd.pdf",
                                          "application/vnd.pdf",
                                          "multipart/x-mixed-replace",
                                          "unknown/unknown",
                                          "application/unknown",
                                          "application/x-unknown-content-type",
                                          "application/octet-stream",
                                          "binary/octet-stream",
                                          "application/x-download",
                                          "application/force-download",
                                          "application/download",
                                          "application/binary",
                                          "application/x-octet-stream",
                                          "text/plain",
                                          "text/html",
                                          "image/png",
                                          "application/json",
                                          "text/pdfx",
                                          "text/plai",
                                          "application/pdf2"};

START_TEST(test_one_pass_agrees)
{
    const char *suffixes[] = {"", "; charset=utf-8", " ;x", "\t"};
    char value[200], listed[201];
    size_t i, len;

    for (i = 0; i < NELTS(suffixes); i++) {
        len = (size_t)snprintf(value, sizeof(value), "%s%s", named_types[_i],
                               suffixes[i]);
        memcpy(listed, value, len);
        listed[len] = ',';
        ck_assert_msg(pdftoken_classify_type(value, len, NULL, 0)
                          == pdftoken_classify_type(listed, len + 1, NULL, 0),
                      "'%s': the one-pass and the general readings differ",
                      value);
    }
}
END_TEST

/* ---- pdftoken_classify_type_str --------------------------------------- */

/* The NUL-terminated reading says what the measured one says of v, with
 * and without extra types. */
static void check_str_agrees(const char *v)
{
    size_t len = v ? strlen(v) : 0;

    ck_assert_msg(pdftoken_classify_type_str(v, NULL, 0)
                      == pdftoken_classify_type(v, len, NULL, 0),
                  "'%s': the NUL-terminated reading differs", v ? v : "(null)");
    ck_assert_msg(
        pdftoken_classify_type_str(v, extra_types, NELTS(extra_types))
            == pdftoken_classify_type(v, len, extra_types, NELTS(extra_types)),
        "'%s': the NUL-terminated reading differs with an extra type",
        v ? v : "(null)");
}

/* Values where the one-pass reading stops at each of its conditions. */
static const char *const str_cases[] = {
    "application/x-custom",
    "APPLICATION/X-CUSTOM ; a=b",
    "application/x-custom, text/html",
    "text/html; a=\"b,c\"",
    "text/html;",
    "text/html ;",
    "text/html x",
    "text/html\t",
    " \r\n text/html",
    "text/",
    "/html",
    "text",
    "text/html/",
    "*/*",
    "*/*; q=1",
    "a/b",
    "image/svg+xml",
    "text/plain; charset=utf-8",
    "unknown/unknown;",
    "application/pdf\x7f",
    "t\xc3\xa9xt/html",
    ",",
    " ",
};

START_TEST(test_classify_type_str)
{
    char value[200];
    size_t i;
    const char *suffixes[] = {"", "; charset=utf-8", " ;x", "\t", ","};

    check_str_agrees(NULL);
    for (i = 0; i < NELTS(str_cases); i++) {
        check_str_agrees(str_cases[i]);
    }
    for (i = 0; i < NELTS(type_cases); i++) {
        check_str_agrees(type_cases[i].value);
    }
    for (i = 0; i < NELTS(essence_cases); i++) {
        check_str_agrees(essence_cases[i].value);
    }
    for (i = 0; i < NELTS(listed_cases); i++) {
        check_str_agrees(listed_cases[i].value);
    }
    for (i = 0; i < NELTS(named_types) * NELTS(suffixes); i++) {
        snprintf(value, sizeof(value), "%s%s", named_types[i / NELTS(suffixes)],
                 suffixes[i % NELTS(suffixes)]);
        check_str_agrees(value);
    }
}
END_TEST

/* A type longer than an essence may be: the general readings decide. */
START_TEST(test_classify_type_str_long)
{
    char big[PDFTOKEN_TYPE_MAX + 10];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[3] = '/';
    check_str_agrees(big);
    big[PDFTOKEN_TYPE_MAX] = '\0';
    check_str_agrees(big);
    big[PDFTOKEN_TYPE_MAX - 1] = '\0';
    check_str_agrees(big);
}
END_TEST

/* ---- pdftoken_sniff_pdf ---------------------------------------------- */

static const struct {
    const char *name, *body;
    size_t len;
    int want;
} sniff_cases[] = {
    {"pdf", "%PDF-1.4\n", 9, 1},           {"exactly the magic", "%PDF-", 5, 1},
    {"four bytes so far", "%PDF", 4, -1},  {"nothing yet", "", 0, -1},
    {"newline first", "\n%PDF-1.7", 9, 1}, {"spaces so far", "   ", 3, -1},
    {"lower case", "%pdf-1.4", 8, 0},      {"underscore", "%PDF_", 5, 0},
    {"html", "<!doctype html>", 15, 0},    {"NUL first", "\0%PDF-", 6, 0},
};

START_TEST(test_sniff_pdf)
{
    char *copy = dup_exact(sniff_cases[_i].body, sniff_cases[_i].len);

    ck_assert_msg(
        pdftoken_sniff_pdf((const unsigned char *)copy, sniff_cases[_i].len)
            == sniff_cases[_i].want,
        "%s", sniff_cases[_i].name);
    free(copy);
}
END_TEST

START_TEST(test_sniff_gives_up_after_limit)
{
    unsigned char ws[PDFTOKEN_SNIFF_MAX + 10];

    memset(ws, ' ', sizeof(ws));
    ck_assert_int_eq(pdftoken_sniff_pdf(ws, PDFTOKEN_SNIFF_MAX - 1), -1);
    ck_assert_int_eq(pdftoken_sniff_pdf(ws, sizeof(ws)), 0);
}
END_TEST

/* ---- the browsers' render matrix ------------------------------------- */

/* Seven columns define a cell; then one column per engine, named in the
 * header row.  Every engine the browser suite drives must have its column. */
#define MATRIX_CELL_COLS 7
#define MATRIX_MAX_COLS 16

static const char *const matrix_engines[] = {"chromium", "firefox", "webkit"};

/* "(absent)" is no header, "(empty)" an empty one. */
static const char *header_value(const char *cell)
{
    if (!strcmp(cell, "(absent)")) {
        return NULL;
    }
    return strcmp(cell, "(empty)") ? cell : "";
}

/* A header sent on several lines is recorded as its values joined by
 * " (+) ".  The module must judge all of them (an engine may take any
 * one, or all merged), so the library is asked about them as httpd merges
 * them, apr_table_getm's "a, b": rewritten in place. */
static void merge_lines(char *cell)
{
    static const char more[] = " (+) ";
    char *m;

    while ((m = strstr(cell, more)) != NULL) {
        m[0] = ',';
        m[1] = ' ';
        memmove(m + 2, m + sizeof(more) - 1, strlen(m + sizeof(more) - 1) + 1);
    }
}

static const char *matrix_body(const char *kind, size_t *len)
{
    static const char pdf[] = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj";
    static const char pdf_ws[] = "\n%PDF-1.4\n1 0 obj";
    static const char pdf_bin[] = "%PDF-1.4\n%\x01\x02\x03\x04\n1 0 obj";
    static const char bin_pdf[] =
        "\0\1\2\3\n%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj";
    static const char html[] = "<!doctype html><p>not a pdf</p>";
    /* The first bytes of matrix.py's multipart/x-mixed-replace bodies. */
    static const char mxr_pdf[] = "--pdftoken-part\r\nContent-Type: "
                                  "application/pdf\r\n\r\n%PDF-1.4\n";
    static const char mxr_html_pdf[] = "--pdftoken-part\r\nContent-Type: "
                                       "text/html\r\n\r\n<!doctype html>";

    if (!strcmp(kind, "pdf")) {
        *len = sizeof(pdf) - 1;
        return pdf;
    }
    if (!strcmp(kind, "pdf-ws")) {
        *len = sizeof(pdf_ws) - 1;
        return pdf_ws;
    }
    if (!strcmp(kind, "pdf-bin")) {
        *len = sizeof(pdf_bin) - 1;
        return pdf_bin;
    }
    if (!strcmp(kind, "bin-pdf")) {
        *len = sizeof(bin_pdf) - 1;
        return bin_pdf;
    }
    if (!strcmp(kind, "mxr-pdf")) {
        *len = sizeof(mxr_pdf) - 1;
        return mxr_pdf;
    }
    if (!strcmp(kind, "mxr-html-pdf")) {
        *len = sizeof(mxr_html_pdf) - 1;
        return mxr_html_pdf;
    }
    ck_assert_msg(!strcmp(kind, "html"), "unknown body kind '%s'", kind);
    *len = sizeof(html) - 1;
    return html;
}

/* Split line at tabs into at most MATRIX_MAX_COLS cells; returns the count,
 * or -1 for more. */
static int split_tabs(char *line, char *cells[MATRIX_MAX_COLS])
{
    int n = 0;
    char *c = line;

    line[strcspn(line, "\r\n")] = '\0';
    while (n < MATRIX_MAX_COLS) {
        cells[n++] = c;
        c = strchr(c, '\t');
        if (!c) {
            break;
        }
        *c++ = '\0';
    }
    return c ? -1 : n;
}

START_TEST(test_render_matrix)
{
    const char *dir = getenv("PDFTOKEN_SRCDIR");
    char path[4096], line[4096], *cells[MATRIX_MAX_COLS];
    char engines[MATRIX_MAX_COLS][16];
    FILE *fp;
    int header = 0, rows = 0, lineno = 0, ncols = 0, nengines = 0, engine;
    int pdf_rows[MATRIX_MAX_COLS] = {0};
    size_t k;

    snprintf(path, sizeof(path), "%s/t/browser/render-matrix.tsv",
             dir ? dir : ".");
    fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s (make browser records it)", path);
    while (fgets(line, sizeof(line), fp)) {
        pdftoken_response resp;
        pdftoken_render render;
        const char *body;
        char urlpath[64];
        size_t blen;
        char which[MATRIX_MAX_COLS * 16];
        int rendered = 0, pdf_like, n;

        lineno++;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        n = split_tabs(line, cells);
        if (!header) {
            /* id ... url_pdf, then the engines, each once. */
            ck_assert_msg(n > MATRIX_CELL_COLS && !strcmp(cells[0], "id")
                              && !strcmp(cells[6], "url_pdf"),
                          "%s:%d: unexpected header row", path, lineno);
            ncols = n;
            nengines = n - MATRIX_CELL_COLS;
            for (engine = 0; engine < nengines; engine++) {
                const char *e = cells[MATRIX_CELL_COLS + engine];

                ck_assert_msg(strlen(e) > 0 && strlen(e) < sizeof(engines[0]),
                              "%s:%d: bad engine column '%s'", path, lineno, e);
                for (n = 0; n < engine; n++) {
                    ck_assert_msg(strcmp(engines[n], e) != 0,
                                  "%s:%d: engine '%s' twice", path, lineno, e);
                }
                strcpy(engines[engine], e);
            }
            for (k = 0; k < NELTS(matrix_engines); k++) {
                for (n = 0; n < nengines; n++) {
                    if (!strcmp(engines[n], matrix_engines[k])) {
                        break;
                    }
                }
                ck_assert_msg(n < nengines, "%s:%d: no column for engine %s",
                              path, lineno, matrix_engines[k]);
            }
            header = 1;
            continue;
        }
        ck_assert_msg(n == ncols, "%s:%d: want %d tab-separated columns", path,
                      lineno, ncols);
        rows++;
        which[0] = '\0';
        for (engine = 0; engine < nengines; engine++) {
            if (!strcmp(cells[MATRIX_CELL_COLS + engine], "pdf")) {
                rendered = 1;
                pdf_rows[engine]++;
                strcat(which, " ");
                strcat(which, engines[engine]);
            }
        }
        if (!rendered) {
            continue; /* calling more a PDF than browsers do is allowed */
        }
        snprintf(urlpath, sizeof(urlpath), "/m/%s%s", cells[0],
                 !strcmp(cells[6], "1") ? "/x.pdf" : "");
        resp.content_type = header_value(cells[2]);
        resp.content_type_len =
            resp.content_type ? strlen(resp.content_type) : 0;
        merge_lines(cells[3]);
        resp.disposition = header_value(cells[3]);
        resp.disposition_len = resp.disposition ? strlen(resp.disposition) : 0;
        resp.path = urlpath;
        resp.path_len = strlen(urlpath);
        resp.types = NULL;
        resp.ntypes = 0;
        render = pdftoken_classify(&resp);
        body = matrix_body(cells[5], &blen);
        pdf_like =
            render == PDFTOKEN_PDF
            || (render == PDFTOKEN_PDF_IF_BODY
                && pdftoken_sniff_pdf((const unsigned char *)body, blen) == 1);
        ck_assert_msg(pdf_like,
                      "%s:%d: cell %s (status %s, type '%s', disposition "
                      "'%s', nosniff %s, body %s, url .pdf %s) renders as a "
                      "PDF in%s, but the library does not call it one",
                      path, lineno, cells[0], cells[1], cells[2], cells[3],
                      cells[4], cells[5], cells[6], which);
    }
    fclose(fp);
    /* A file cut short or recorded wrong must not pass by saying little. */
    ck_assert_msg(header && rows >= 100, "%s: only %d rows", path, rows);
    for (engine = 0; engine < nengines; engine++) {
        ck_assert_msg(pdf_rows[engine] > 0, "%s: no cell rendered as PDF in %s",
                      path, engines[engine]);
    }
}
END_TEST

Suite *render_suite(void);

Suite *render_suite(void)
{
    Suite *s = suite_create("render");
    TCase *tc = tcase_create("mime_essence");

    suite_add_tcase(s, tc);
    tcase_add_loop_test(tc, test_mime_essence, 0, NELTS(essence_cases));
    tcase_add_test(tc, test_mime_essence_long_and_null);
    tc = tcase_create("type_listed");
    suite_add_tcase(s, tc);
    tcase_add_loop_test(tc, test_type_listed, 0, NELTS(listed_cases));
    tc = tcase_create("classify");
    suite_add_tcase(s, tc);
    tcase_add_loop_test(tc, test_classify, 0, NELTS(classify_cases));
    tcase_add_loop_test(tc, test_classify_type, 0, NELTS(type_cases));
    tcase_add_loop_test(tc, test_one_pass_agrees, 0, NELTS(named_types));
    tcase_add_test(tc, test_classify_type_str);
    tcase_add_test(tc, test_classify_type_str_long);
    tc = tcase_create("sniff");
    suite_add_tcase(s, tc);
    tcase_add_loop_test(tc, test_sniff_pdf, 0, NELTS(sniff_cases));
    tcase_add_test(tc, test_sniff_gives_up_after_limit);
    tc = tcase_create("render_matrix");
    suite_add_tcase(s, tc);
    tcase_add_test(tc, test_render_matrix);
    return s;
}
