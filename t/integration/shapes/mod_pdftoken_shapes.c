/* Licensed under the Apache License, Version 2.0; see LICENSE. */
/*
 * mod_pdftoken_shapes: a test handler that sends the file it is asked for
 * (r->filename) in the shape the query string names, so that the
 * integration tests (t/integration/test_output_shapes.py) can check that
 * mod_pdftoken judges or sends every response whatever its shape, never
 * drops or holds it (SPEC section 2, issue 19).
 *
 *     SetHandler pdftoken-shapes
 *
 * Query parameters (all optional):
 *   ct=TYPE   the Content-Type to set; absent or empty: none at all
 *   cd=VALUE  a Content-Disposition header
 *   b=t|h|p|f the body's buckets: transient (the default), heap, pool, or
 *             file buckets on r->filename (apr_brigade_insert_file)
 *   n=N       pieces of N bytes, each its own bucket (0, the default: the
 *             whole body in one bucket)
 *   bb=many   each piece in a brigade of its own (default: one brigade)
 *   fl=1      a FLUSH bucket after each piece
 *   pre=1     a brigade holding a FLUSH alone before the first byte
 *   eos=own   EOS in a brigade of its own (default: with the last piece)
 *   to=next   pass to r->output_filters->next, past the first filter
 *
 * Transient buckets point into a buffer that is scribbled over as soon as
 * the brigade holding them has been passed: a filter that keeps them
 * without setting them aside sends the scribble.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_protocol.h"
#include "http_request.h"
#include "util_filter.h"
#include "util_script.h"

#include "apr_buckets.h"
#include "apr_file_io.h"
#include "apr_strings.h"

typedef struct {
    char bucket;
    apr_size_t piece;
    int many, flush, pre, eos_own, skip_first;
    char *buf;       /* the body, read from the file */
    apr_size_t done; /* buf[0, done) has been passed and scribbled over */
} shape;

static const char *arg(apr_table_t *args, const char *name)
{
    const char *v = apr_table_get(args, name);

    return v ? v : "";
}

/* Pass bb on (past the first filter if asked), then scribble over the
 * transient buckets' bytes up to `upto`. */
static apr_status_t pass(request_rec *r, shape *s, apr_bucket_brigade *bb,
                         apr_size_t upto)
{
    ap_filter_t *to =
        s->skip_first ? r->output_filters->next : r->output_filters;
    apr_status_t rv = ap_pass_brigade(to, bb);

    apr_brigade_cleanup(bb);
    if (upto > s->done) {
        memset(s->buf + s->done, '#', upto - s->done);
        s->done = upto;
    }
    return rv;
}

static void add_piece(request_rec *r, shape *s, apr_bucket_brigade *bb,
                      apr_file_t *fd, apr_off_t at, apr_size_t len)
{
    apr_bucket_alloc_t *ba = r->connection->bucket_alloc;

    switch (s->bucket) {
    case 'h':
        APR_BRIGADE_INSERT_TAIL(
            bb, apr_bucket_heap_create(s->buf + at, len, NULL, ba));
        break;
    case 'p':
        APR_BRIGADE_INSERT_TAIL(
            bb, apr_bucket_pool_create(apr_pmemdup(r->pool, s->buf + at, len),
                                       len, r->pool, ba));
        break;
    case 'f':
        apr_brigade_insert_file(bb, fd, at, len, r->pool);
        break;
    default:
        APR_BRIGADE_INSERT_TAIL(
            bb, apr_bucket_transient_create(s->buf + at, len, ba));
        break;
    }
    if (s->flush) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(ba));
    }
}

static int shapes_handler(request_rec *r)
{
    apr_bucket_alloc_t *ba = r->connection->bucket_alloc;
    apr_bucket_brigade *bb;
    apr_table_t *args;
    apr_file_t *fd;
    apr_finfo_t fi;
    apr_size_t size, at, len;
    apr_status_t rv = APR_SUCCESS;
    shape s;

    if (!r->handler || strcmp(r->handler, "pdftoken-shapes") != 0) {
        return DECLINED;
    }
    if (!r->filename
        || apr_file_open(&fd, r->filename, APR_FOPEN_READ | APR_FOPEN_BINARY, 0,
                         r->pool)
               != APR_SUCCESS
        || apr_file_info_get(&fi, APR_FINFO_SIZE, fd) != APR_SUCCESS) {
        return HTTP_NOT_FOUND;
    }
    size = (apr_size_t)fi.size;
    s.buf = apr_palloc(r->pool, size + 1);
    if (size && apr_file_read_full(fd, s.buf, size, NULL) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    s.done = 0;

    ap_args_to_table(r, &args);
    s.bucket = arg(args, "b")[0];
    s.piece = (apr_size_t)apr_atoi64(arg(args, "n"));
    s.many = !strcmp(arg(args, "bb"), "many");
    s.flush = !strcmp(arg(args, "fl"), "1");
    s.pre = !strcmp(arg(args, "pre"), "1");
    s.eos_own = !strcmp(arg(args, "eos"), "own");
    s.skip_first = !strcmp(arg(args, "to"), "next");

    /* No ap_set_content_type(r, NULL): mod_mime may have typed the file. */
    r->content_type = NULL;
    if (*arg(args, "ct")) {
        ap_set_content_type(r, apr_pstrdup(r->pool, arg(args, "ct")));
    }
    if (*arg(args, "cd")) {
        apr_table_set(r->headers_out, "Content-Disposition", arg(args, "cd"));
    }

    bb = apr_brigade_create(r->pool, ba);
    if (s.pre) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(ba));
        rv = pass(r, &s, bb, 0);
    }
    for (at = 0; rv == APR_SUCCESS && at < size; at += len) {
        len = s.piece && s.piece < size - at ? s.piece : size - at;
        add_piece(r, &s, bb, fd, (apr_off_t)at, len);
        if (s.many) {
            rv = pass(r, &s, bb, at + len);
        }
    }
    if (rv == APR_SUCCESS && s.eos_own && !APR_BRIGADE_EMPTY(bb)) {
        rv = pass(r, &s, bb, size);
    }
    if (rv == APR_SUCCESS) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(ba));
        rv = pass(r, &s, bb, size);
    }
    /* Like ap_pass_brigade_fchk(): a filter that failed has answered. */
    return rv == APR_SUCCESS ? OK : AP_FILTER_ERROR;
}

static void register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_handler(shapes_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(pdftoken_shapes) = {
    STANDARD20_MODULE_STUFF,
    NULL,               /* create per-directory config structure */
    NULL,               /* merge per-directory config structures */
    NULL,               /* create per-server config structure */
    NULL,               /* merge per-server config structures */
    NULL,               /* command table */
    register_hooks,     /* register hooks */
    AP_MODULE_FLAG_NONE /* flags */
};
