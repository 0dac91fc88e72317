/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * mod_pdftoken.c - keep the fragment of a link away from PDF viewers (Amit
 * Klein's mitigation of the 2007 "PDF universal XSS").
 *
 * A request for a protected PDF that carries no valid token is answered
 * with a 302 to the same URL plus a fresh token in the query, an empty
 * fragment, and a short-lived cookie holding the same token.  The PDF is
 * served inline only when the query token is valid and equals the cookie.
 * The redirect is what throws the attacker's fragment
 * (doc.pdf#x=javascript:...) away: the browser never hands it to the PDF
 * viewer.  docs/behaviour.md has the decision table this file follows
 * (R1 to R5); token.h describes the token itself.
 */

#include <errno.h>

#include "apr_strings.h"
#include "apr_file_io.h"
#include "apr_lib.h"
#include "apr_version.h"

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "util_filter.h"
#include "ap_expr.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "token.h"

/* The one place the module's version is written: the start-up notice
 * (PDFTOKEN00016) says it. */
#define MOD_PDFTOKEN_VERSION "0.2.0"

/* The oldest httpd and APR whose API this file uses: httpd 2.4.1, the
 * first 2.4 release (module magic number 20120211.0; r->useragent_ip,
 * ap_state_query, the ap_expr API), and APR 1.5.0 (apr_table_getm).
 * Older headers stop the build here, saying so. */
#if !AP_MODULE_MAGIC_AT_LEAST(20120211, 0)
#error "mod_pdftoken needs Apache httpd 2.4.1 or later (apxs of httpd 2.4)"
#endif
#if !APR_VERSION_AT_LEAST(1, 5, 0)
#error "mod_pdftoken needs APR 1.5.0 or later"
#endif

/* Our own message numbers: httpd reserves AHnnnnn for itself. */
#define PDFTOKEN_LOGNO(n) "PDFTOKEN" #n ": "

#define TIMEOUT_DEFAULT 10
#define MAX_TIMEOUT 3600
#define NAME_DEFAULT "pdftoken"
#define MAX_NAME_LEN 32
/* R5: a byte-range continuation may use a token up to an hour past its
 * expiry, since a PDF viewer keeps fetching ranges long after the cookie
 * is gone. */
#define RANGE_GRACE 3600
#define FILTER_NAME "PDFTOKEN"
/* PdfTokenFragment safe: the handler that sends the fragment page, and the
 * note through which the fixup hands it the tokenized URL. */
#define PAGE_HANDLER "pdftoken-fragment-page"
#define PAGE_NOTE "pdftoken-fragment-url"
/* and the page's Content-Security-Policy */
#define PAGE_CSP_NOTE "pdftoken-fragment-csp"

/* AP_DECLARE_MODULE at the end also does APLOG_USE_MODULE(pdftoken), so
 * that `LogLevel pdftoken:debug` applies to this module's messages. */
module AP_MODULE_DECLARE_DATA pdftoken_module;

/* Set once in register_hooks, before any request: adding the filter by
 * handle skips a lookup by name on every request of a protected scope. */
static ap_filter_rec_t *watch_filter_handle;
/* The same filter, after mod_cache's CACHE_OUT: for a stored answer. */
static ap_filter_rec_t *cached_watch_filter_handle;
/* Set in register_hooks: what is left of a replaced answer goes here. */
static ap_filter_rec_t *discard_filter_handle;
/* Set in register_hooks: reads the first bytes of a body before any
 * filter compresses it. */
static ap_filter_rec_t *sniff_filter_handle;
/* mod_cache's CACHE filter, when mod_cache is loaded (post_config): an
 * administrator who places it explicitly puts the cache before the watch
 * filter. */
static ap_filter_rec_t *cache_filter_handle;

typedef enum { FALLBACK_ATTACHMENT = 0, FALLBACK_DENY = 1 } fallback_mode;

typedef enum { FRAGMENT_STRIP = 0, FRAGMENT_SAFE = 1 } fragment_mode;

typedef enum { DYNAMIC_REDIRECT = 0, DYNAMIC_ATTACHMENT = 1 } dynamic_mode;

/* PdfTokenBindAddress: auto binds for the engines that ignore __Host-. */
typedef enum { BIND_OFF = 0, BIND_ON = 1, BIND_AUTO = 2 } bind_mode;

typedef struct {
    int protect;                  /* -1 unset, 0 Off, 1 On */
    int timeout;                  /* -1 unset, else seconds */
    const char *name;             /* NULL unset */
    size_t name_len;              /* name's length, when set */
    int fallback;                 /* -1 unset, else fallback_mode */
    apr_array_header_t *types;    /* NULL unset; lower case, beyond the
                                   * built-in pdftoken_pdf_types */
    int fragment;                 /* -1 unset, else fragment_mode */
    int dynamic;                  /* -1 unset, else dynamic_mode */
    int exempt_set;               /* 0 unset, 1 set (exempt may be NULL) */
    const ap_expr_info_t *exempt; /* NULL: no request is exempt */
    int bind;                     /* -1 unset, else bind_mode */
    int cross_site;               /* -1 unset, 0 Off, 1 On */
} dir_conf;

typedef struct {
    pdftoken_key *keys;   /* keys[0] mints, all verify */
    int nkeys;            /* 0: not set here */
    const char *files[2]; /* where keys came from; NULL: random */
} srv_conf;

/* What the fixup decided for the request the browser made. */
typedef enum {
    VERDICT_REDIRECT, /* R1, R4 */
    VERDICT_PASS,     /* R2 */
    VERDICT_RANGE,    /* R5 */
    VERDICT_FALLBACK, /* R3, attachment */
    VERDICT_DENY      /* R3, deny */
} verdict;

static const char *const verdict_names[] = {"redirect", "pass", "range",
                                            "fallback", "deny"};

typedef struct req_state req_state;

/* A request in a protected scope: what every decision and every
 * enforcement needs. */
typedef struct {
    request_rec *r;        /* the request being answered */
    request_rec *ir;       /* the initial request: the URL the browser asked
                            * for, which internal redirects chain back to */
    const dir_conf *conf;  /* the protecting scope's settings */
    const srv_conf *sconf; /* the keys */
    const char *path;      /* ir's decoded URL path: what tokens are bound
                            * to; NULL only for "OPTIONS *" */
    size_t path_len;       /* its length */
    req_state *ist;        /* ir's state: the verdict, once judged */
} preq;

/* What the output filter must do to a response. */
typedef enum {
    WATCH_NONE = 0, /* no filter: the fixup answered, or nothing to do */
    WATCH_UNJUDGED, /* judge it if it turns out PDF-like */
    WATCH_PASS,     /* the fixup's R2/R5: inline headers, last word */
    WATCH_FALLBACK  /* the fixup's R3: a forced download, last word */
} watch_mode;

/*
 * Kept on each request_rec of a protected request, made by
 * protected_request() in the fixup.  On the initial request it also holds
 * the verdict and what was added to the answer, so that internal
 * redirects (mod_rewrite, ErrorDocument), which share its err_headers_out,
 * neither judge nor add anything twice.  Every request of a protected
 * scope makes one, so only what comes before pr is zeroed (a few
 * stores, not a loop): pr is filled in at once.
 */
struct req_state {
    watch_mode mode; /* this request's output filter, inserted later */
    int judged;      /* initial request: v holds the verdict, and
                      * cookies the Cookie header it read */
    verdict v;
    int marked;          /* initial request: surplus cookies expired */
    int exempted;        /* initial request: PdfTokenExempt's marks added */
    int kept_made;       /* initial request: kept is made */
    const char *cookies; /* initial request: its Cookie header */
    size_t cookies_len;  /* and that header's length */
    const char *clean;   /* initial request: its URL without the token,
                          * escaped for a header; NULL until needed */
    size_t clean_len;    /* and that URL's length */
    const char *kept;    /* initial request: its query without the token
                          * (NULL: none left) */
    const char *settled; /* this request: a type that can be no PDF
                          * (type_says), as the fixup saw it */
    const char *scheme;  /* initial request: ap_http_scheme, once asked */
    preq pr;             /* this request, as protected_request() found it */
};

/* What the first bytes of a body without a valid type say. */
typedef enum {
    SNIFF_PENDING = -1, /* too few bytes yet */
    SNIFF_NO = 0,       /* no PDF */
    SNIFF_PDF = 1,      /* "%PDF-", or encoded by the handler, which only
                         * the browser decodes: counted a PDF */
    SNIFF_SKIPPED = 2   /* the sniff filter left without reading: the
                         * response had a valid type then */
} sniff_state;

/* The first bytes of a body, as far as a sniff needs them. */
typedef struct {
    sniff_state state;
    apr_size_t len;
    unsigned char head[PDFTOKEN_SNIFF_MAX];
} body_head;

/* The watch filter's state for one response. */
typedef struct watch_ctx watch_ctx;
struct watch_ctx {
    preq pr;
    watch_mode mode;
    int seen; /* the filter was called */
    /* PDFTOKEN_CACHED's: the watch filter of the same request, which
     * judged the answer if mod_cache left it in place (NULL: none). */
    const watch_ctx *before;
    int started;  /* the first brigade has been seen */
    int sent;     /* something went on downstream, headers included */
    int replaced; /* the answer was replaced: what follows is dropped */
    pdftoken_render render; /* by the headers, once started */
    const char *settled;    /* req_state's: while r->content_type is this
                             * very string, the answer is no PDF */
    /* A handler's request: err_headers_out before it ran, so that an
     * answer put in its place carries none of the handler's headers. */
    apr_table_t *err_before;
    /* Read by the sniff filter before any encoder (NULL: none), and by
     * the watch filter itself (NULL until needed). */
    body_head *pre, *own;
    apr_bucket_brigade *held; /* body held back until the sniff tells */
};

/* ---- configuration ---------------------------------------------------- */

static void *create_dir_conf(apr_pool_t *p, char *dummy)
{
    dir_conf *conf = apr_pcalloc(p, sizeof(*conf));

    (void)dummy;
    conf->protect = -1;
    conf->timeout = -1;
    conf->fallback = -1;
    conf->fragment = -1;
    conf->dynamic = -1;
    conf->bind = -1;
    conf->cross_site = -1;
    return conf;
}

static void *merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    dir_conf *base = basev, *add = addv;
    dir_conf *conf = apr_palloc(p, sizeof(*conf));

    /* An inner scope overrides only what it sets. */
    conf->protect = add->protect != -1 ? add->protect : base->protect;
    conf->timeout = add->timeout != -1 ? add->timeout : base->timeout;
    conf->name = add->name ? add->name : base->name;
    conf->name_len = add->name ? add->name_len : base->name_len;
    conf->fallback = add->fallback != -1 ? add->fallback : base->fallback;
    conf->types = add->types ? add->types : base->types;
    conf->fragment = add->fragment != -1 ? add->fragment : base->fragment;
    conf->dynamic = add->dynamic != -1 ? add->dynamic : base->dynamic;
    conf->exempt_set = add->exempt_set || base->exempt_set;
    conf->exempt = add->exempt_set ? add->exempt : base->exempt;
    conf->bind = add->bind != -1 ? add->bind : base->bind;
    conf->cross_site =
        add->cross_site != -1 ? add->cross_site : base->cross_site;
    return conf;
}

static void *create_srv_conf(apr_pool_t *p, server_rec *s)
{
    (void)s;
    return apr_pcalloc(p, sizeof(srv_conf));
}

static void *merge_srv_conf(apr_pool_t *p, void *basev, void *addv)
{
    srv_conf *base = basev, *add = addv;
    srv_conf *conf = apr_palloc(p, sizeof(*conf));

    *conf = add->nkeys ? *add : *base;
    return conf;
}

/* Defaults live here, applied when a value is read. */
static int conf_timeout(const dir_conf *conf)
{
    return conf->timeout != -1 ? conf->timeout : TIMEOUT_DEFAULT;
}

static const char *conf_name(const dir_conf *conf)
{
    return conf->name ? conf->name : NAME_DEFAULT;
}

/* conf_name()'s length, measured once, when the directive was read. */
static size_t conf_name_len(const dir_conf *conf)
{
    return conf->name ? conf->name_len : sizeof(NAME_DEFAULT) - 1;
}

static fallback_mode conf_fallback(const dir_conf *conf)
{
    return conf->fallback != -1 ? (fallback_mode)conf->fallback
                                : FALLBACK_ATTACHMENT;
}

static fragment_mode conf_fragment(const dir_conf *conf)
{
    return conf->fragment != -1 ? (fragment_mode)conf->fragment
                                : FRAGMENT_STRIP;
}

static dynamic_mode conf_dynamic(const dir_conf *conf)
{
    return conf->dynamic != -1 ? (dynamic_mode)conf->dynamic : DYNAMIC_REDIRECT;
}

/*
 * Engines measured to store a __Host- cookie that a sibling host or plain
 * HTTP set (t/browser, KNOWN_HOLES): WebKitGTK, whose cookie jar is
 * libsoup's, and WPE, which shares it (not measured).  Their User-Agent
 * names AppleWebKit, like Safari's, without Safari's Apple platforms and
 * without Chrome (every Chromium browser says "Chrome").  A link cannot
 * change the User-Agent a victim's browser sends, and a client that claims
 * one only binds its own tokens to its own address.
 */
static int ignores_host_prefix(const request_rec *br)
{
    const char *ua = apr_table_get(br->headers_in, "User-Agent");

    return ua && strstr(ua, "AppleWebKit/") && !strstr(ua, "Chrome")
           && !strstr(ua, "Macintosh") && !strstr(ua, "iPhone")
           && !strstr(ua, "iPad") && !strstr(ua, "iPod");
}

/* Whether the tokens of br are signed over its client address too. */
static int binds_address(const request_rec *br, const dir_conf *conf)
{
    switch (conf->bind != -1 ? (bind_mode)conf->bind : BIND_AUTO) {
    case BIND_ON:
        return 1;
    case BIND_AUTO:
        return ignores_host_prefix(br);
    default:
        return 0;
    }
}

static const char *set_timeout(cmd_parms *cmd, void *cfg, const char *arg)
{
    char *end;
    apr_int64_t v;

    errno = 0;
    v = apr_strtoi64(arg, &end, 10);
    if (errno || end == arg || *end || v < 1 || v > MAX_TIMEOUT) {
        return apr_psprintf(cmd->pool,
                            "%s: '%s' is not a number of seconds from 1 "
                            "to %d",
                            cmd->cmd->name, arg, MAX_TIMEOUT);
    }
    ((dir_conf *)cfg)->timeout = (int)v;
    return NULL;
}

static const char *set_name(cmd_parms *cmd, void *cfg, const char *arg)
{
    const char *c;
    size_t len = strlen(arg);

    /* The name goes into the query and into Set-Cookie unescaped, so it is
     * held to characters that are safe in both. */
    for (c = arg; *c; c++) {
        if (!apr_isalnum(*c) && *c != '_' && *c != '-') {
            break;
        }
    }
    if (len < 1 || len > MAX_NAME_LEN || *c) {
        return apr_psprintf(cmd->pool,
                            "%s: '%s' must be 1 to %d letters, digits, '_' "
                            "or '-'",
                            cmd->cmd->name, arg, MAX_NAME_LEN);
    }
    ((dir_conf *)cfg)->name = arg;
    ((dir_conf *)cfg)->name_len = len;
    return NULL;
}

/* A directive that takes one of two or three keywords, stored as the
 * keyword's index: the enums of all such directives follow their word
 * order. */
typedef struct {
    size_t offset;
    const char *words[3]; /* words[2] NULL: two keywords */
} keyword_directive;

static const keyword_directive fallback_words = {
    APR_OFFSETOF(dir_conf, fallback), {"attachment", "deny"}};
static const keyword_directive fragment_words = {
    APR_OFFSETOF(dir_conf, fragment), {"strip", "safe"}};
static const keyword_directive dynamic_words = {APR_OFFSETOF(dir_conf, dynamic),
                                                {"redirect", "attachment"}};
static const keyword_directive bind_words = {APR_OFFSETOF(dir_conf, bind),
                                             {"Off", "On", "auto"}};
/* Keywords, not AP_INIT_FLAG, which takes the first word and ignores the
 * rest: "On Off" must fail configtest. */
static const keyword_directive protect_words = {APR_OFFSETOF(dir_conf, protect),
                                                {"Off", "On"}};
static const keyword_directive cross_site_words = {
    APR_OFFSETOF(dir_conf, cross_site), {"Off", "On"}};

static const char *set_keyword(cmd_parms *cmd, void *cfg, const char *arg)
{
    const keyword_directive *kd = cmd->info;
    int i;

    for (i = 0; i < 3 && kd->words[i]; i++) {
        if (!strcasecmp(arg, kd->words[i])) {
            *(int *)((char *)cfg + kd->offset) = i;
            return NULL;
        }
    }
    if (!kd->words[2]) {
        return apr_psprintf(cmd->pool, "%s: '%s' is neither '%s' nor '%s'",
                            cmd->cmd->name, arg, kd->words[0], kd->words[1]);
    }
    return apr_psprintf(cmd->pool, "%s: '%s' is not '%s', '%s' or '%s'",
                        cmd->cmd->name, arg, kd->words[0], kd->words[1],
                        kd->words[2]);
}

static const char *set_types(cmd_parms *cmd, void *cfg, int argc,
                             char *const argv[])
{
    dir_conf *conf = cfg;
    int i;

    if (argc < 1) {
        return apr_psprintf(cmd->pool, "%s needs at least one content type",
                            cmd->cmd->name);
    }
    /* One directive line replaces the scope's list.  The types browsers
     * render as PDF are protected whatever it says (token.h): a list meant
     * to add a type must not take application/pdf away. */
    conf->types = apr_array_make(cmd->pool, argc, sizeof(const char *));
    for (i = 0; i < argc; i++) {
        char essence[PDFTOKEN_TYPE_MAX + 1];
        size_t len = strlen(argv[i]);

        /* Exactly one type/subtype, as browsers parse it, no parameters. */
        if (strpbrk(argv[i], ",;")
            || pdftoken_mime_essence(argv[i], len, essence) != len
            || !strcmp(essence, "*/*")) {
            return apr_psprintf(cmd->pool,
                                "%s: '%s' is not a content type "
                                "(type/subtype, at most %d characters)",
                                cmd->cmd->name, argv[i], PDFTOKEN_TYPE_MAX);
        }
        APR_ARRAY_PUSH(conf->types, const char *) =
            apr_pstrdup(cmd->pool, essence);
    }
    return NULL;
}

/*
 * PdfTokenExempt: an ap_expr, parsed once here so that a syntax error
 * fails configtest naming the directive.  "none" takes an outer scope's
 * exemption away.
 */
static const char *set_exempt(cmd_parms *cmd, void *cfg, const char *arg)
{
    dir_conf *conf = cfg;
    const char *err = NULL;

    conf->exempt_set = 1;
    if (!strcasecmp(arg, "none")) {
        conf->exempt = NULL;
        return NULL;
    }
    conf->exempt = ap_expr_parse_cmd(cmd, arg, 0, &err, NULL);
    if (err) {
        return apr_psprintf(cmd->pool, "%s: cannot parse expression '%s': %s",
                            cmd->cmd->name, arg, err);
    }
    return NULL;
}

static apr_status_t wipe_key(void *data)
{
    pdftoken_key_wipe(data);
    return APR_SUCCESS;
}

/* Read one secret file into key; NULL or an error naming the directive. */
static const char *load_secret(cmd_parms *cmd, const char *arg,
                               pdftoken_key *key)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    /* Room for twice the longest secret: a file that fills it is too long
     * whatever whitespace it ends in, and the key loader judges the rest. */
    unsigned char buf[2 * PDFTOKEN_SECRET_MAX];
    apr_file_t *fd;
    apr_size_t len = 0;
    apr_status_t rv;
    pdftoken_status st;
    char err[120];

    if (!path) {
        return apr_psprintf(cmd->pool, "%s: invalid path '%s'", cmd->cmd->name,
                            arg);
    }
    rv = apr_file_open(&fd, path, APR_FOPEN_READ, APR_OS_DEFAULT,
                       cmd->temp_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_file_read_full(fd, buf, sizeof(buf), &len);
        apr_file_close(fd);
    }
    if (rv != APR_SUCCESS && rv != APR_EOF) {
        OPENSSL_cleanse(buf, sizeof(buf));
        return apr_psprintf(cmd->pool, "%s: cannot read '%s': %s",
                            cmd->cmd->name, path,
                            apr_strerror(rv, err, sizeof(err)));
    }
    st = len == sizeof(buf) ? PDFTOKEN_LONG_SECRET
                            : pdftoken_key_load(key, buf, len);
    OPENSSL_cleanse(buf, sizeof(buf));
    if (st == PDFTOKEN_SHORT_SECRET) {
        return apr_psprintf(cmd->pool,
                            "%s: '%s' holds fewer than %d bytes of secret",
                            cmd->cmd->name, path, PDFTOKEN_SECRET_MIN);
    }
    if (st == PDFTOKEN_LONG_SECRET) {
        return apr_psprintf(cmd->pool,
                            "%s: '%s' is larger than %d bytes; is it the "
                            "right file?",
                            cmd->cmd->name, path, PDFTOKEN_SECRET_MAX);
    }
    if (st != PDFTOKEN_OK) {
        return apr_psprintf(cmd->pool, "%s: cannot make a key from '%s': %s",
                            cmd->cmd->name, path, pdftoken_status_str(st));
    }
    apr_pool_cleanup_register(cmd->pool, key, wipe_key, apr_pool_cleanup_null);
    return NULL;
}

/*
 * The secret is read while the configuration is parsed, as root and before
 * any child starts, so that `apachectl configtest` already refuses a
 * missing or short file and the file may be readable by root only.
 */
static const char *set_secret_file(cmd_parms *cmd, void *dummy,
                                   const char *current, const char *previous)
{
    srv_conf *conf =
        ap_get_module_config(cmd->server->module_config, &pdftoken_module);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_CONTEXT);

    (void)dummy;
    if (err) {
        return err;
    }
    conf->keys = apr_pcalloc(cmd->pool, 2 * sizeof(pdftoken_key));
    conf->nkeys = 0;
    if ((err = load_secret(cmd, current, &conf->keys[0]))) {
        return err;
    }
    if (previous && (err = load_secret(cmd, previous, &conf->keys[1]))) {
        return err;
    }
    conf->nkeys = previous ? 2 : 1;
    /* For the start-up notice: which files sign, never what they hold. */
    conf->files[0] = ap_server_root_relative(cmd->pool, current);
    conf->files[1] =
        previous ? ap_server_root_relative(cmd->pool, previous) : NULL;
    return NULL;
}

static const command_rec pdftoken_cmds[] = {
    AP_INIT_TAKE1("PdfTokenProtect", set_keyword, (void *)&protect_words,
                  OR_FILEINFO,
                  "On to redirect PDF requests through a token and cookie"),
    AP_INIT_TAKE1("PdfTokenTimeout", set_timeout, NULL, OR_FILEINFO,
                  "token lifetime and cookie Max-Age in seconds (1-3600)"),
    AP_INIT_TAKE1("PdfTokenName", set_name, NULL, OR_FILEINFO,
                  "name of the query parameter and cookie"),
    AP_INIT_TAKE1("PdfTokenFallback", set_keyword, (void *)&fallback_words,
                  OR_FILEINFO,
                  "'attachment' or 'deny': answer to a valid token "
                  "without its cookie"),
    AP_INIT_TAKE1("PdfTokenFragment", set_keyword, (void *)&fragment_words,
                  OR_FILEINFO,
                  "'strip' (default) drops every URL fragment; 'safe' keeps "
                  "validated PDF open parameters such as page=N"),
    AP_INIT_TAKE_ARGV("PdfTokenTypes", set_types, NULL, OR_FILEINFO,
                      "content types that count as PDF, beyond those "
                      "browsers render as PDF"),
    AP_INIT_TAKE1("PdfTokenDynamic", set_keyword, (void *)&dynamic_words,
                  OR_FILEINFO,
                  "'redirect' (default) puts PDFs that a handler generates "
                  "through the token step; 'attachment' forces a download"),
    AP_INIT_TAKE1("PdfTokenExempt", set_exempt, NULL, OR_FILEINFO,
                  "an expression (ap_expr); requests it matches are served "
                  "as if unprotected, or 'none'"),
    AP_INIT_TAKE1("PdfTokenBindAddress", set_keyword, (void *)&bind_words,
                  OR_FILEINFO,
                  "'On' binds each token to the client address it was minted "
                  "for; 'auto' (default) only for browsers that ignore the "
                  "__Host- cookie prefix; 'Off' never"),
    AP_INIT_TAKE1("PdfTokenCrossSite", set_keyword, (void *)&cross_site_words,
                  OR_FILEINFO,
                  "'On' lets other sites frame the PDFs over HTTPS (a "
                  "partitioned SameSite=None cookie); 'Off' (default) "
                  "keeps SameSite=Lax"),
    AP_INIT_TAKE12("PdfTokenSecretFile", set_secret_file, NULL, RSRC_CONF,
                   "file holding the secret, and optionally the previous "
                   "secret's file"),
    {NULL}};

/* ---- request helpers --------------------------------------------------- */

/* The initial request, the one the browser made: internal redirects chain
 * back to it. */
static request_rec *initial_request(request_rec *r)
{
    while (r->prev) {
        r = r->prev;
    }
    return r;
}

/* An ErrorDocument is an internal redirect from a request that failed. */
static int is_error_document(const request_rec *r)
{
    for (r = r->prev; r; r = r->prev) {
        if (ap_is_HTTP_ERROR(r->status)) {
            return 1;
        }
    }
    return 0;
}

/* The scope's extra types, for the library. */
static const char *const *extra_types(const dir_conf *conf, size_t *n)
{
    *n = conf->types ? (size_t)conf->types->nelts : 0;
    return conf->types ? (const char *const *)conf->types->elts : NULL;
}

/* What a type known before the handler runs (mod_mime, ForceType) says on
 * its own, read as browsers read it (case, parameters, lists):
 * PDFTOKEN_PDF, PDFTOKEN_NOT_PDF (whatever else the answer says), or
 * PDFTOKEN_PDF_IF_BODY (the answer's other headers or body decide). */
static pdftoken_render type_says(const dir_conf *conf, const char *ctype)
{
    const char *const *types;
    size_t n;

    types = extra_types(conf, &n);
    return pdftoken_classify_type_str(ctype, types, n);
}

/* Is c the lower-case ASCII letter l, in either case?  OR-ing 0x20 maps
 * exactly the two cases of a letter onto it, without the locale's
 * tolower(), which costs a call per byte. */
#define IS_LETTER(c, l) (((unsigned char)(c) | 0x20) == (l))

static APR_INLINE int ends_in_pdf(const char *path, size_t len)
{
    return len >= 4 && path[len - 4] == '.' && IS_LETTER(path[len - 3], 'p')
           && IS_LETTER(path[len - 2], 'd') && IS_LETTER(path[len - 1], 'f');
}

/*
 * The bytes each escape keeps as they are, besides letters and digits.
 * A decoded URL path, for Location and for the cookie's Path attribute:
 * ';' and ',' are encoded because they would end the cookie's Path.
 * Browsers keep these escapes as they are, so the cookie's Path equals
 * the path of the URL the browser requests next.
 */
#define PATH_KEEP "/-._~!$&'()*+=:@"
/*
 * A raw query goes back into Location byte for byte, except bytes that
 * may never stand in a header or a URL (controls, space, non-ASCII,
 * quotes, '#').  httpd refuses most of them on the request line already;
 * this keeps Location safe when it does not (HttpProtocolOptions Unsafe).
 */
#define QUERY_KEEP "!$%&'()*+,-./:;=?@[]_~"
/* RFC 5987 attr-char, for filename* in Content-Disposition. */
#define FILENAME_KEEP "!#$&+-.^_`|~"

typedef enum { ESC_PATH = 1, ESC_QUERY = 2, ESC_FILENAME = 4 } escape;

/* For each byte, the escapes that keep it (bits of escape): made once, in
 * register_hooks, before any request, and only read after. */
static unsigned char kept_by[256];

static void make_escape_table(void)
{
    static const struct {
        escape e;
        const char *keep;
    } sets[] = {{ESC_PATH, PATH_KEEP},
                {ESC_QUERY, QUERY_KEEP},
                {ESC_FILENAME, FILENAME_KEEP}};
    size_t i;
    const char *c;
    int b;

    for (b = 0; b < 128; b++) {
        kept_by[b] = apr_isalnum(b) ? ESC_PATH | ESC_QUERY | ESC_FILENAME : 0;
    }
    for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        for (c = sets[i].keep; *c; c++) {
            kept_by[(unsigned char)*c] |= (unsigned char)sets[i].e;
        }
    }
}

/*
 * Percent-encode the string s, of length len, for esc: the bytes it keeps
 * stay as they are, every other byte (controls, space, non-ASCII above
 * all) becomes %XX.  Everything this module writes into a header from the
 * request passes through here.  Returns s itself when nothing needs
 * escaping, and the result's length in *outlen (when not NULL).
 */
static const char *pct_encode(apr_pool_t *p, const char *s, size_t len,
                              escape esc, size_t *outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out, *o;
    size_t i = 0;

    /* No escape keeps the NUL: it ends this scan without a count. */
    while (kept_by[(unsigned char)s[i]] & esc) {
        i++;
    }
    if (i == len) {
        if (outlen) {
            *outlen = len;
        }
        return s;
    }
    out = apr_palloc(p, 3 * len + 1);
    memcpy(out, s, i);
    for (o = out + i; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (kept_by[c] & esc) {
            *o++ = (char)c;
        }
        else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    if (outlen) {
        *outlen = (size_t)(o - out);
    }
    return out;
}

/* The document path as an error-log line names it: never with the
 * query, which holds the token.  httpd escapes control characters in
 * error-log messages itself (ap_log_rerror). */
static const char *log_path(const char *path)
{
    return path ? path : "*";
}

/* ---- the fallback: a forced download ------------------------------------ */

/*
 * Content-Disposition per RFC 6266: an ASCII filename, and filename* in
 * UTF-8 when the name is not plain ASCII.  The name is the served
 * document's own, never one a script or back end proposes (a reflected
 * "Invoice.exe"), and it always ends in .pdf, so that what was a PDF opens
 * as one once saved.
 */
static const char *attachment_header(request_rec *r)
{
    const char *slash = strrchr(r->uri, '/');
    const char *name = slash ? slash + 1 : r->uri;
    char *ascii, *c;
    int plain = 1;

    if (!*name) {
        name = "document.pdf";
    }
    else if (!ends_in_pdf(name, strlen(name))) {
        name = apr_pstrcat(r->pool, name, ".pdf", NULL);
    }
    ascii = apr_pstrdup(r->pool, name);
    for (c = ascii; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u >= 0x7f || *c == '"' || *c == '\\' || *c == '%') {
            *c = '_';
            plain = 0;
        }
    }
    if (plain) {
        return apr_pstrcat(r->pool, "attachment; filename=\"", ascii, "\"",
                           NULL);
    }
    return apr_pstrcat(
        r->pool, "attachment; filename=\"", ascii, "\"; filename*=UTF-8''",
        pct_encode(r->pool, name, strlen(name), ESC_FILENAME, NULL), NULL);
}

static void force_download(request_rec *r)
{
    /* octet-stream plus nosniff: no browser renders it inline at top
     * level or in an iframe, so no PDF viewer sees the URL's fragment. */
    ap_set_content_type(r, "application/octet-stream");
    /* A CGI script's own headers land in err_headers_out: an "inline" of
     * its own must not survive beside ours. */
    apr_table_unset(r->err_headers_out, "Content-Disposition");
    apr_table_setn(r->headers_out, "Content-Disposition", attachment_header(r));
    apr_table_unset(r->headers_out, "X-Content-Type-Options");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    /* Firefox ignores "attachment" in an <object> or <embed> and shows
     * octet-stream named x.pdf in pdf.js there, nosniff or not, with the
     * fragment of the page's link: a download is no frame's to show.
     * Added beside any policy of the site's: browsers enforce both. */
    apr_table_addn(r->err_headers_out, "Content-Security-Policy",
                   "frame-ancestors 'none'");
}

/* ---- PdfTokenFragment safe: the fragment page ----------------------- */

/*
 * The sanitiser, in one place.  A navigation that R1 would redirect gets a
 * tiny page instead; this script reads the fragment the attacker or the
 * linking site wrote, keeps only Adobe PDF open parameters whose values
 * have an exact, harmless form, and replaces the page with the tokenized
 * URL plus those parameters.  Everything else (FDF, javascript:, unknown
 * keys, any value with ':', '/', '<' or a stray '%') is dropped.  Values are
 * percent-decoded once before the test, so "%3A" cannot smuggle a ':' in.
 * The script never writes the fragment into the document, so the page
 * itself cannot be a sink.  CSP allows this script alone, by its hash.
 */
static const char fragment_script[] =
    "(function () {\n"
    "  'use strict';\n"
    "  var rules = {\n"
    "    page: /^[1-9][0-9]{0,4}$/,\n"
    "    nameddest: /^[A-Za-z0-9._-]{1,64}$/,\n"
    "    zoom: /^[0-9]{1,5}(\\.[0-9]{1,3})?"
    "(,-?[0-9]{1,6}(\\.[0-9]{1,3})?,-?[0-9]{1,6}(\\.[0-9]{1,3})?)?$/,\n"
    "    view: /^(Fit|FitH|FitV|FitB|FitBH|FitBV)(,-?[0-9]{1,6}"
    "(\\.[0-9]{1,3})?)?$/,\n"
    "    pagemode: /^(none|thumbs|bookmarks)$/,\n"
    "    search: /^[A-Za-z0-9 ]{1,64}$/\n"
    "  };\n"
    "  var kept = [], seen = {};\n"
    "  var parts = location.hash.replace(/^#/, '').split('&');\n"
    "  for (var i = 0; i < parts.length && i < 32; i++) {\n"
    "    var eq = parts[i].indexOf('='), key, value;\n"
    "    if (eq < 1) { continue; }\n"
    "    key = parts[i].slice(0, eq);\n"
    "    try { value = decodeURIComponent(parts[i].slice(eq + 1)); }\n"
    "    catch (e) { continue; }\n"
    "    if (!Object.prototype.hasOwnProperty.call(rules, key)\n"
    "        || seen[key] || !rules[key].test(value)) { continue; }\n"
    "    seen[key] = true;\n"
    "    kept.push(key + '=' + value.replace(/ /g, '%20'));\n"
    "  }\n"
    "  var target = document.getElementById('pdftoken-continue').href;\n"
    "  location.replace(target.split('#')[0] + '#' + kept.join('&'));\n"
    "})();\n";

/* Content-Security-Policy of the page, with the script's hash: computed
 * once in post_config, before any child starts, and only read after.  The
 * page may be framed by this site only, or, where PdfTokenCrossSite lets
 * other sites frame the PDFs, by any site: their frames are navigations
 * too, and must get the page rather than a blocked frame. */
static const char *fragment_csp, *fragment_csp_any_frame;

static const char *make_fragment_csp(apr_pool_t *p)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    unsigned char b64[2 * EVP_MAX_MD_SIZE];

    if (!EVP_Digest(fragment_script, sizeof(fragment_script) - 1, md, &mdlen,
                    EVP_sha256(), NULL)) {
        return NULL;
    }
    EVP_EncodeBlock(b64, md, (int)mdlen);
    return apr_pstrcat(p, "default-src 'none'; script-src 'sha256-",
                       (const char *)b64,
                       "'; base-uri 'none'; form-action 'none'", NULL);
}

/* A Range header that is a valid byte-range request (RFC 9110): anything
 * else is judged as if there were none (R5). */
static int has_valid_range(const request_rec *r)
{
    const char *range = apr_table_get(r->headers_in, "Range");

    return range && pdftoken_range_valid(range, strlen(range));
}

/*
 * Only a navigation shows the page: Sec-Fetch-Dest says so in current
 * browsers; without it, a browser navigating asks for text/html.  HEAD,
 * <embed>, <object>, range requests and fetches keep the plain 302.
 */
static int wants_fragment_page(request_rec *r, const dir_conf *conf)
{
    const char *dest, *accept;

    if (conf_fragment(conf) != FRAGMENT_SAFE || r->header_only
        || has_valid_range(r)) {
        return 0;
    }
    dest = apr_table_get(r->headers_in, "Sec-Fetch-Dest");
    if (dest) {
        return !strcasecmp(dest, "document") || !strcasecmp(dest, "iframe");
    }
    accept = apr_table_get(r->headers_in, "Accept");
    return accept && ap_strcasestr(accept, "text/html") != NULL;
}

static int fragment_page_handler(request_rec *r)
{
    const char *url, *html, *csp;

    if (!r->handler || strcmp(r->handler, PAGE_HANDLER)) {
        return DECLINED;
    }
    /* Without the fixup's note this is a SetHandler from the config, not
     * a redirect of ours: nothing to send. */
    url = apr_table_get(r->notes, PAGE_NOTE);
    csp = apr_table_get(r->notes, PAGE_CSP_NOTE);
    if (!url || !csp) {
        return DECLINED;
    }
    html = ap_escape_html2(r->pool, url, 1);
    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->headers_out, "Content-Security-Policy", csp);
    apr_table_setn(r->headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->headers_out, "Referrer-Policy", "same-origin");
    if (r->header_only) {
        return OK;
    }
    ap_rvputs(r,
              "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
              "<title>Opening the document</title>\n"
              /* Without script, the page still goes on, with an empty
               * fragment: the reader loses the page number, never the
               * document, and never loops. */
              "<noscript><meta http-equiv=\"refresh\" content=\"0; url=",
              html,
              "\"></noscript>\n</head><body>\n"
              "<p><a id=\"pdftoken-continue\" href=\"",
              html, "\">Open the document</a></p>\n<script>", NULL);
    ap_rputs(fragment_script, r);
    ap_rputs("</script>\n</body></html>\n", r);
    return OK;
}

/* ---- the decision table ------------------------------------------------- */

/*
 * Over HTTPS the cookie's name starts with "__Host-": browsers then take
 * it only from this very host, over HTTPS, with Path=/ and no Domain, so
 * neither a sibling subdomain (Domain=) nor a network attacker on plain
 * HTTP can plant a matching one.  Only that name is accepted over HTTPS.
 */
#define HOST_PREFIX "__Host-"
#define HOST_PREFIX_LEN 7

/* The request's scheme, asked of httpd (a hook) once per request. */
static const char *scheme_of(const preq *pr)
{
    req_state *ist = pr->ist;

    if (!ist->scheme) {
        ist->scheme = ap_http_scheme(pr->r);
    }
    return ist->scheme;
}

static int is_https(const preq *pr)
{
    return !strcmp(scheme_of(pr), "https");
}

/* <prefix><name>_<eight characters of token's nonce>, into cname (room
 * for the longest); returns its length.  The suffix lets two tabs hold two
 * tokens for one document without one cookie overwriting the other. */
static size_t cookie_name(
    int https, const char *name, size_t nlen, const char *token,
    char cname[HOST_PREFIX_LEN + MAX_NAME_LEN + 1 + PDFTOKEN_SUFFIX_LEN + 1])
{
    size_t o = 0;

    if (https) {
        memcpy(cname, HOST_PREFIX, HOST_PREFIX_LEN);
        o = HOST_PREFIX_LEN;
    }
    memcpy(cname + o, name, nlen);
    o += nlen;
    cname[o++] = '_';
    memcpy(cname + o, token + PDFTOKEN_SUFFIX_OFFSET, PDFTOKEN_SUFFIX_LEN);
    o += PDFTOKEN_SUFFIX_LEN;
    cname[o] = '\0';
    return o;
}

/*
 * What follows Max-Age in each Set-Cookie of ours, expiries included (a
 * partitioned cookie is replaced only by a partitioned one).  Lax, not
 * Strict: a link from another site is a cross-site navigation, and Strict
 * would withhold the cookie on the follow-up and send every such reader to
 * the fallback.  PdfTokenCrossSite On, over HTTPS: SameSite=None lets a
 * partner site's frame send the cookie back, and Partitioned (CHIPS) keeps
 * it in that site's partition, so it is neither sent at top level nor in
 * another site's frame.  SameSite=None needs Secure: over HTTP nothing
 * changes.  The engines that ignore __Host- (libsoup) were measured to
 * ignore Partitioned too when they take third-party cookies, so they keep
 * Lax: their readers get a partner's frame as a download.
 */
static const char *cookie_attributes(const preq *pr, int https)
{
    if (!https) {
        return "; HttpOnly; SameSite=Lax";
    }
    if (pr->conf->cross_site == 1 && !ignores_host_prefix(pr->ir)) {
        return "; Secure; HttpOnly; SameSite=None; Partitioned";
    }
    return "; HttpOnly; SameSite=Lax; Secure";
}

/*
 * No pile-up: a hostile page that forces one first view after another
 * would make the browser hold one more cookie each time, until it evicts
 * the site's own cookies or the Cookie header outgrows httpd's limit.  At
 * most MAX_COOKIES of ours may stand for one document (over HTTPS, where
 * Path=/, for the host): the oldest beyond keep that this request carries
 * are expired in this response.  Their names are our prefix and eight
 * base64url characters, so they go back into Set-Cookie as they came.
 */
#define MAX_COOKIES 8

static void expire_surplus_now(const preq *pr, size_t keep)
{
    request_rec *r = pr->r;
    const char *header = pr->ist->cookies, *name = conf_name(pr->conf);
    const char *path = pr->path;
    char prefix[HOST_PREFIX_LEN + MAX_NAME_LEN + 2];
    size_t starts[4 * MAX_COOKIES], lens[4 * MAX_COOKIES], n, i, plen = 0;
    size_t nlen = conf_name_len(pr->conf), hlen = pr->ist->cookies_len;
    int https = is_https(pr);
    const char *epath, *attributes;

    if (https) {
        memcpy(prefix, HOST_PREFIX, HOST_PREFIX_LEN);
        plen = HOST_PREFIX_LEN;
    }
    memcpy(prefix + plen, name, nlen);
    plen += nlen;
    prefix[plen++] = '_';
    n = pdftoken_cookie_family(header, hlen, prefix, plen, starts, lens,
                               sizeof(starts) / sizeof(starts[0]));
    if (n <= keep) {
        return;
    }
    /* Header order is oldest first; a header with more than we recorded
     * is cut down over the next requests. */
    n = n - keep < sizeof(starts) / sizeof(starts[0])
            ? n - keep
            : sizeof(starts) / sizeof(starts[0]);
    epath =
        https ? "/" : pct_encode(r->pool, path, pr->path_len, ESC_PATH, NULL);
    attributes = cookie_attributes(pr, https);
    for (i = 0; i < n; i++) {
        apr_table_addn(
            r->err_headers_out, "Set-Cookie",
            apr_pstrcat(r->pool,
                        apr_pstrmemdup(r->pool, header + starts[i], lens[i]),
                        "=; Path=", epath, "; Max-Age=0", attributes, NULL));
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  PDFTOKEN_LOGNO(00015) "%s: %" APR_SIZE_T_FMT
                                        " of the module's cookies beyond %d: "
                                        "expired",
                  log_path(path), n, (int)keep);
}

/* Each of ours is at least "<prefix><8>=; " long: a shorter Cookie header
 * (nearly every one) cannot hold more than keep of them. */
static APR_INLINE void expire_surplus(const preq *pr, size_t keep)
{
    if (pr->ist->cookies_len > (keep + 1)
                                   * (HOST_PREFIX_LEN + conf_name_len(pr->conf)
                                      + 1 + PDFTOKEN_SUFFIX_LEN + 3)) {
        expire_surplus_now(pr, keep);
    }
}

/* Is there a cookie of q's name whose value is q in the initial request's
 * Cookie header? */
static int has_matching_cookie(const preq *pr, const char *q, size_t qlen)
{
    char cname[HOST_PREFIX_LEN + MAX_NAME_LEN + 1 + PDFTOKEN_SUFFIX_LEN + 1];
    size_t clen;

    if (!pr->ist->cookies || qlen != PDFTOKEN_LEN) {
        return 0;
    }
    clen = cookie_name(is_https(pr), conf_name(pr->conf),
                       conf_name_len(pr->conf), q, cname);
    return pdftoken_cookie_match(pr->ist->cookies, pr->ist->cookies_len, cname,
                                 clen, q, qlen);
}

/*
 * What a token is signed over: the document path, and where the request
 * binds (binds_address) also the client address (mod_remoteip's, behind a
 * proxy).  A browser that ignores the __Host- prefix (WebKitGTK) stores a
 * cookie a sibling host or plain HTTP planted; the planter's token was
 * minted for the planter's address, or for no address, so it does not
 * verify for the victim's.  Paths never hold a NUL (the module reads them
 * with strlen), so "path NUL address" never equals another path.
 */
static const char *token_subject(request_rec *br, int bound, const char *path,
                                 size_t plen, size_t *len)
{
    size_t alen;
    char *subject;

    if (!bound || !br->useragent_ip) {
        *len = plen;
        return path;
    }
    alen = strlen(br->useragent_ip);
    subject = apr_palloc(br->pool, plen + 1 + alen);
    memcpy(subject, path, plen);
    subject[plen] = '\0';
    memcpy(subject + plen + 1, br->useragent_ip, alen);
    *len = plen + 1 + alen;
    return subject;
}

/* The state kept on r (state_of creates it). */
static APR_INLINE req_state *state_of(request_rec *r)
{
    req_state *st = ap_get_module_config(r->request_config, &pdftoken_module);

    if (!st) {
        st = apr_palloc(r->pool, sizeof(*st));
        memset(st, 0, APR_OFFSETOF(req_state, pr));
        ap_set_module_config(r->request_config, &pdftoken_module, st);
    }
    return st;
}

/*
 * target[0..tlen) (path and query, escaped) as an absolute URL on this
 * server, the way ap_construct_url() makes it but without its printf.  It
 * starts pre bytes into the buffer returned, which has room for post more
 * bytes after it (and for a NUL after those): the caller writes what goes
 * around it.  *len is the URL's length.
 */
static char *absolute_url(const preq *pr, size_t pre, const char *target,
                          size_t tlen, size_t post, size_t *len)
{
    request_rec *r = pr->r;
    apr_port_t port = ap_get_server_port(r);
    const char *scheme = scheme_of(pr), *host = ap_get_server_name_for_url(r);
    size_t slen = strlen(scheme), hlen = strlen(host), plen;
    char num[8], *n = num + sizeof(num);
    char *buf, *o;
    unsigned int v = port, q;

    if (!ap_is_default_port(port, r)) {
        do {
            q = v / 10;
            *--n = (char)('0' + (v - q * 10));
            v = q;
        } while (v);
        *--n = ':';
    }
    plen = (size_t)(num + sizeof(num) - n);
    *len = slen + 3 + hlen + plen + tlen;
    buf = apr_palloc(r->pool, pre + *len + post + 1);
    o = buf + pre;
    memcpy(o, scheme, slen);
    o += slen;
    memcpy(o, "://", 3);
    o += 3;
    memcpy(o, host, hlen);
    o += hlen;
    memcpy(o, n, plen);
    o += plen;
    memcpy(o, target, tlen);
    return buf;
}

/*
 * The initial request's query, read once for all that needs it: returns
 * how many tokens it holds, with the first one's value in *q and *qlen,
 * and keeps the query without them (NULL: nothing left), which the
 * handler sees and the canonical URL keeps.
 */
static size_t read_query(const preq *pr, const char **q, size_t *qlen)
{
    req_state *ist = pr->ist;
    const char *args = pr->ir->parsed_uri.query;
    size_t alen, klen = 0, count = 0;
    char *kept;

    ist->kept_made = 1;
    ist->kept = args;
    if (args && *args) {
        alen = strlen(args);
        kept = apr_palloc(pr->r->pool, alen + 1);
        count =
            pdftoken_query_split(args, alen, conf_name(pr->conf),
                                 conf_name_len(pr->conf), q, qlen, kept, &klen);
        ist->kept = klen ? kept : NULL;
    }
    return count;
}

/* The initial request's query without the token (NULL: nothing left). */
static const char *kept_query(const preq *pr)
{
    const char *q;
    size_t qlen;

    if (!pr->ist->kept_made) {
        read_query(pr, &q, &qlen);
    }
    return pr->ist->kept;
}

/* The initial request's URL without the token, escaped for a header: what
 * the redirect adds its token to, and the canonical URL of a tokenized
 * answer.  Made once per initial request. */
static const char *clean_target(const preq *pr, size_t *len)
{
    req_state *ist = pr->ist;
    apr_pool_t *p = pr->r->pool;
    const char *kept = kept_query(pr);

    if (!ist->clean) {
        ist->clean =
            pct_encode(p, pr->path, pr->path_len, ESC_PATH, &ist->clean_len);
        if (kept && *kept) {
            ist->clean = apr_pstrcat(
                p, ist->clean, "?",
                pct_encode(p, kept, strlen(kept), ESC_QUERY, NULL), NULL);
            ist->clean_len = strlen(ist->clean);
        }
    }
    *len = ist->clean_len;
    return ist->clean;
}

/*
 * Can the browser's follow-up carry the tokenized URL?  A request line
 * longer than LimitRequestLine is answered 414, so a redirect to such a
 * URL would lose the reader the document.  The follow-up's request line
 * is "<method> <target>&<name>=<token> HTTP/1.1".
 */
static int token_fits(const preq *pr)
{
    size_t clen, len;

    clean_target(pr, &clen);
    len = strlen(pr->ir->method) + 1 + clen + 1 + conf_name_len(pr->conf) + 1
          + PDFTOKEN_LEN + sizeof(" HTTP/1.1") - 1;
    return len <= (size_t)pr->r->server->limit_req_line;
}

/* R3, for a token without its cookie and for what cannot take a token. */
static verdict fallback_verdict(const preq *pr)
{
    return conf_fallback(pr->conf) == FALLBACK_DENY ? VERDICT_DENY
                                                    : VERDICT_FALLBACK;
}

/*
 * A frame, embed or object on another site (Fetch Metadata) in an engine
 * that ignores __Host- (libsoup, which keeps SameSite=Lax even under
 * PdfTokenCrossSite On).  A cross-site frame never sends a Lax cookie back,
 * so its follow-up would end in R3 anyway; and libsoup set to accept all
 * cookies was measured to store the cookie of that frame's redirect and
 * send it when the same tokenized URL is opened at top level (t/browser
 * x6).  Such a request gets R3 at once: no token, no cookie.
 */
static int is_lax_lost_frame(const preq *pr)
{
    const char *site, *dest;

    if (!ignores_host_prefix(pr->ir)) {
        return 0;
    }
    site = apr_table_get(pr->ir->headers_in, "Sec-Fetch-Site");
    dest = apr_table_get(pr->ir->headers_in, "Sec-Fetch-Dest");
    return site && dest && !strcasecmp(site, "cross-site")
           && (!strcasecmp(dest, "iframe") || !strcasecmp(dest, "frame")
               || !strcasecmp(dest, "embed") || !strcasecmp(dest, "object"));
}

/* R1 and R4, unless the follow-up could not carry the token or its
 * cookie. */
static verdict redirect_verdict(const preq *pr)
{
    const char *outcome =
        conf_fallback(pr->conf) == FALLBACK_DENY ? "denied" : "download";

    if (!token_fits(pr)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, pr->r,
                      PDFTOKEN_LOGNO(00021) "%s: the URL with a token would "
                                            "exceed LimitRequestLine: %s",
                      log_path(pr->path), outcome);
        return fallback_verdict(pr);
    }
    if (is_lax_lost_frame(pr)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, pr->r,
                      PDFTOKEN_LOGNO(00022) "%s: another site's frame in an "
                                            "engine that keeps no cookie for "
                                            "it: %s",
                      log_path(pr->path), outcome);
        return fallback_verdict(pr);
    }
    return VERDICT_REDIRECT;
}

/* Judge the initial request by the decision table (R1 to R5).  No side
 * effect but the log. */
static verdict judge(const preq *pr)
{
    request_rec *r = pr->r, *ir = pr->ir;
    const char *q = NULL, *subject, *cookies = pr->ist->cookies;
    size_t qlen = 0, count, slen;
    uint64_t now = (uint64_t)apr_time_sec(r->request_time), expiry = 0;
    pdftoken_status st;
    int bound;

    count = read_query(pr, &q, &qlen);
    if (count == 0) { /* R1 */
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      PDFTOKEN_LOGNO(00002) "%s: no token: redirect",
                      log_path(pr->path));
        return redirect_verdict(pr);
    }
    if (count > 1) { /* R4 */
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      PDFTOKEN_LOGNO(00003) "%s: %" APR_SIZE_T_FMT
                                            " tokens in the query: redirect",
                      log_path(pr->path), count);
        return redirect_verdict(pr);
    }
    bound = binds_address(ir, pr->conf);
    subject = token_subject(ir, bound, pr->path, pr->path_len, &slen);
    st = pdftoken_verify(pr->sconf->keys, (size_t)pr->sconf->nkeys, q, qlen,
                         subject, slen, now, &expiry);
    if (st == PDFTOKEN_OK && has_matching_cookie(pr, q, qlen)) {
        ap_log_rerror(
            APLOG_MARK, APLOG_DEBUG, 0, r,
            PDFTOKEN_LOGNO(00004) "%s: valid token and matching cookie: "
                                  "inline",
            log_path(pr->path));
        return VERDICT_PASS; /* R2 */
    }
    /* A navigation cannot send Range, so a range request with a genuine
     * token is a PDF viewer fetching more of a document it already has.
     * Only a valid one: "Range: garbage" would be served whole. */
    if ((st == PDFTOKEN_OK
         || (st == PDFTOKEN_EXPIRED && now - expiry < RANGE_GRACE))
        && has_valid_range(r)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      PDFTOKEN_LOGNO(00005) "%s: %s token with Range: served",
                      log_path(pr->path), pdftoken_status_str(st));
        return VERDICT_RANGE; /* R5 */
    }
    if (st == PDFTOKEN_OK) { /* R3 */
        /* Never a redirect here: a client without cookies would loop. */
        ap_log_rerror(
            APLOG_MARK, APLOG_INFO, 0, r,
            PDFTOKEN_LOGNO(00006) "%s: valid token, %s: %s", log_path(pr->path),
            cookies ? "cookie mismatch" : "no cookie",
            conf_fallback(pr->conf) == FALLBACK_DENY ? "denied" : "download");
        return fallback_verdict(pr);
    }
    if (st == PDFTOKEN_BAD_TAG && bound && has_matching_cookie(pr, q, qlen)) {
        /* Its own cookie beside it: a token minted for another address
         * (or for none), planted with its cookie, or a reader whose
         * address changed between the redirect and the follow-up.  A
         * download, never a redirect: that reader would be sent round for
         * as long as the address keeps changing. */
        ap_log_rerror(
            APLOG_MARK, APLOG_INFO, 0, r,
            PDFTOKEN_LOGNO(00019) "%s: token not minted for this client "
                                  "address, with its cookie: %s",
            log_path(pr->path),
            conf_fallback(pr->conf) == FALLBACK_DENY ? "denied" : "download");
        return fallback_verdict(pr);
    }
    if (st == PDFTOKEN_CRYPTO_ERROR) {
        ap_log_rerror(
            APLOG_MARK, APLOG_ERR, 0, r,
            PDFTOKEN_LOGNO(00007) "%s: token verification failed inside "
                                  "libcrypto",
            log_path(pr->path));
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  PDFTOKEN_LOGNO(00008) "%s: %s token: redirect",
                  log_path(pr->path), pdftoken_status_str(st));
    return redirect_verdict(pr); /* R4 */
}

/* The verdict on the initial request: judged once, kept on it, so that
 * internal redirects and the output filter carry out the same one. */
static verdict verdict_of(const preq *pr)
{
    req_state *ist = pr->ist;

    if (!ist->judged) {
        ist->cookies = apr_table_get(pr->r->headers_in, "Cookie");
        ist->cookies_len = ist->cookies ? strlen(ist->cookies) : 0;
        ist->v = judge(pr);
        ist->judged = 1;
    }
    return ist->v;
}

/* ---- carrying out a verdict ---------------------------------------------- */

#if AP_HAS_THREAD_LOCAL
/* Each thread draws its nonces in batches (token.h): one RAND_bytes() per
 * 64 redirects instead of one per redirect, and no lock.  httpd's children
 * never fork to serve requests, so no two processes share a batch. */
static AP_THREAD_LOCAL pdftoken_nonce_pool nonce_pool;
#endif

/* A fresh token for subject[0..len) (token_subject), valid until expiry,
 * that a WAF in front reads as one plain word: no '-', which the OWASP CRS
 * takes for SQL (token.h, pdftoken_waf_inert). */
static pdftoken_status mint_token(const pdftoken_key *key, const char *subject,
                                  size_t len, uint64_t expiry,
                                  char out[PDFTOKEN_LEN + 1])
{
#if AP_HAS_THREAD_LOCAL
    return pdftoken_mint_pool(key, subject, len, expiry, &nonce_pool, out);
#else
    return pdftoken_mint(key, subject, len, expiry, out);
#endif
}

/*
 * R1/R4: mint a token, set the cookie that must come back with it, and
 * return the tokenized URL (path and query, ending in '#'); NULL when no
 * token could be made.
 */
static const char *mint_redirect_url(const preq *pr)
{
    request_rec *r = pr->r;
    const char *name = conf_name(pr->conf), *clean;
    char token[PDFTOKEN_LEN + 1];
    char cname[HOST_PREFIX_LEN + MAX_NAME_LEN + 1 + PDFTOKEN_SUFFIX_LEN + 1];
    const char *url, *cookie, *subject;
    int timeout = conf_timeout(pr->conf), https = is_https(pr);
    uint64_t now = (uint64_t)apr_time_sec(r->request_time);
    size_t slen, clen;
    pdftoken_status st;

    clean = clean_target(pr, &clen);
    subject = token_subject(pr->ir, binds_address(pr->ir, pr->conf), pr->path,
                            pr->path_len, &slen);
    st = mint_token(&pr->sconf->keys[0], subject, slen, now + (uint64_t)timeout,
                    token);
    if (st != PDFTOKEN_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      PDFTOKEN_LOGNO(00009) "%s: cannot mint a token: %s",
                      log_path(pr->path), pdftoken_status_str(st));
        return NULL;
    }
    /* The trailing '#' gives the target its own, empty fragment: without
     * it browsers carry the attacker's fragment across the redirect
     * (RFC 9110 section 10.2.2) and the defence does nothing. */
    url = apr_pstrcat(r->pool, clean, strchr(clean, '?') ? "&" : "?", name, "=",
                      token, "#", NULL);
    /* __Host- requires Path=/ and Secure: over HTTPS the cookie is the
     * host's, and the name's nonce suffix still keeps tokens apart. */
    cookie_name(https, name, conf_name_len(pr->conf), token, cname);
    cookie = apr_pstrcat(
        r->pool, cname, "=", token, "; Path=",
        https ? "/"
              : pct_encode(r->pool, pr->path, pr->path_len, ESC_PATH, NULL),
        "; Max-Age=", apr_itoa(r->pool, timeout), cookie_attributes(pr, https),
        NULL);
    /* httpd sends only err_headers_out with a non-2xx answer. */
    expire_surplus(pr, MAX_COOKIES - 1);
    apr_table_addn(r->err_headers_out, "Set-Cookie", cookie);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    OPENSSL_cleanse(token, sizeof(token));
    return url;
}

/*
 * R1/R4: the 302 to the tokenized URL, or, when the handler has not run
 * yet (may_page) and PdfTokenFragment safe asks for it, the fragment page
 * (200, same cookie) in its place.
 */
static int redirect(const preq *pr, int may_page)
{
    request_rec *r = pr->r;
    const char *url = mint_redirect_url(pr);
    char *location;
    size_t len;

    if (!url) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (may_page && wants_fragment_page(r, pr->conf)) {
        /* The page's link stays relative, so a proxy in front needs no
         * rewriting; but a path that begins with "//" (MergeSlashes Off)
         * would read as a network-path reference to another host, so it
         * gets a "/." first, which browsers resolve to the same path on
         * this host. */
        apr_table_setn(r->notes, PAGE_NOTE,
                       url[0] == '/' && url[1] == '/'
                           ? apr_pstrcat(r->pool, "/.", url, NULL)
                           : url);
        apr_table_setn(r->notes, PAGE_CSP_NOTE,
                       pr->conf->cross_site == 1 && is_https(pr)
                           ? fragment_csp_any_frame
                           : fragment_csp);
        r->handler = PAGE_HANDLER;
        return DECLINED;
    }
    location = absolute_url(pr, 0, url, strlen(url), 0, &len);
    location[len] = '\0';
    apr_table_setn(r->headers_out, "Location", location);
    /* An empty body: browsers follow the Location without showing one, and
     * httpd's default "Found" page would cost as much again as the token
     * (it HTML-escapes the whole URL).  Also keeps an ErrorDocument 302
     * from replacing the redirect.  HTTP/0.9 has no headers, so there the
     * page and its link are all the client gets: keep it. */
    if (!r->assbackwards) {
        ap_custom_response(r, HTTP_MOVED_TEMPORARILY, "");
    }
    return HTTP_MOVED_TEMPORARILY;
}

/* Take the token out of s (a query), in place of it in p's memory. */
static char *query_without_token(apr_pool_t *p, const char *s, size_t len,
                                 const char *name, size_t nlen)
{
    char *kept = apr_palloc(p, len + 1);

    len = pdftoken_query_strip(s, len, name, nlen, kept);
    return len ? kept : NULL;
}

/*
 * Take the token out of what the handler sees, so that scripts and
 * proxied back ends get the URL as the reader wrote it: the query, and
 * mod_proxy's URL, which has the raw query in it already under
 * "ProxyPass ... nocanon" and "RewriteRule ... [P,NE]", and after
 * mod_proxy's own fixup in any case.
 */
static void strip_token_now(const preq *pr)
{
    request_rec *r = pr->r;
    const char *name = conf_name(pr->conf);
    size_t nlen = conf_name_len(pr->conf);
    char *q;

    if (r->args && r->args == pr->ir->parsed_uri.query) {
        /* The browser's own query, stripped once per initial request. */
        r->args = (char *)kept_query(pr);
    }
    else if (r->args && strstr(r->args, name)) {
        r->args =
            query_without_token(r->pool, r->args, strlen(r->args), name, nlen);
    }
    if (r->proxyreq && r->filename && !strncmp(r->filename, "proxy:", 6)
        && (q = strchr(r->filename, '?')) != NULL && strstr(q, name)) {
        const char *kept =
            query_without_token(r->pool, q + 1, strlen(q + 1), name, nlen);

        r->filename =
            kept ? apr_pstrcat(
                r->pool,
                apr_pstrmemdup(r->pool, r->filename, q + 1 - r->filename), kept,
                NULL)
                 : apr_pstrmemdup(r->pool, r->filename, q - r->filename);
    }
}

/* Nearly every request has no query and goes to no proxy: nothing to
 * strip, and this test costs the untouched path no call. */
static APR_INLINE void strip_token(const preq *pr)
{
    if (pr->r->args || pr->r->proxyreq) {
        strip_token_now(pr);
    }
}

/*
 * R2, R3, R5, once per initial request (internal redirects share its
 * err_headers_out): the surplus cookies expired.
 */
static void mark_tokenized(const preq *pr)
{
    req_state *ist = pr->ist;

    if (ist->marked) {
        return;
    }
    ist->marked = 1;
    expire_surplus(pr, MAX_COOKIES);
}

/*
 * R2 and R5: what an inline answer carries.  Set once the handler's and
 * mod_headers' headers are final (insert_filter or the watch filter), on
 * the request that answers: headers_out is that request's own, so an
 * internal redirect before it adds nothing twice, and an answer with
 * nothing in err_headers_out spares httpd merging the two.
 */
static void inline_headers(request_rec *r)
{
    /* private: a shared cache would serve it inline to the next reader.
     * no-store: the browser's own cache would show it again, long after
     * the token expired and without asking us, to a link that reuses this
     * tokenized URL with an attacker's fragment.  A handler's own
     * Cache-Control (public, max-age; a CGI's lands in err_headers_out)
     * must not stand beside it, nor a site's "Header always set
     * Cache-Control".  err_headers_out is mostly empty: then there is
     * nothing to look for or take out there. */
    int err = !apr_is_empty_table(r->err_headers_out);

    apr_table_setn(r->headers_out, "Cache-Control", "private, no-store");
    if (err) {
        apr_table_unset(r->err_headers_out, "Cache-Control");
    }
    if (!apr_table_get(r->headers_out, "Referrer-Policy")
        && !(err && apr_table_get(r->err_headers_out, "Referrer-Policy"))) {
        /* The tokenized URL must not leak to other sites.  Not in
         * headers_out, as just asked: added without another search. */
        apr_table_addn(r->headers_out, "Referrer-Policy", "same-origin");
    }
}

/*
 * The last word on a tokenized answer (R2, R3, R5), after everything that
 * may set headers: the canonical link, then inline or download headers.
 * The tokenized URL is one reader's, for seconds; a search engine that
 * indexes it sends the next reader a dead token, so the canonical link
 * names the URL without it.
 */
static void tokenized_headers(const preq *pr, verdict v)
{
    static const char rel[] = ">; rel=\"canonical\"";
    request_rec *r = pr->r;
    size_t clen, len;
    const char *clean = clean_target(pr, &clen);
    char *link = absolute_url(pr, 1, clean, clen, sizeof(rel) - 1, &len);

    link[0] = '<';
    memcpy(link + 1 + len, rel, sizeof(rel));
    apr_table_addn(r->headers_out, "Link", link);
    if (v == VERDICT_FALLBACK) {
        force_download(r);
        apr_table_mergen(r->headers_out, "Cache-Control", "private");
    }
    else {
        inline_headers(r);
    }
}

/*
 * No cache may keep what only this reader may see: mod_cache's CACHE_SAVE
 * looks for "no-cache" on the answer's first bytes, after this module's
 * filter.  The variable rather than r->no_cache, which would also make
 * httpd add an Expires header.  Without mod_cache nothing reads it.
 */
static void keep_from_cache(request_rec *r)
{
    if (cache_filter_handle) {
        apr_table_setn(r->subprocess_env, "no-cache", "1");
    }
}

/* r's output filter, for insert_filter to add (or to do without). */
static APR_INLINE req_state *watch(request_rec *r, watch_mode mode)
{
    req_state *st = state_of(r);

    st->mode = mode;
    return st;
}

/*
 * The one place that carries out a verdict on pr->r: before the handler
 * (from the fixup) or after it (from the watch filter, before any byte of
 * the answer is sent).  Returns DECLINED when the answer goes on, or the
 * status to answer with instead.
 */
static int enforce(const preq *pr, verdict v, int after_handler)
{
    request_rec *r = pr->r;

    apr_table_setn(r->subprocess_env, "PDFTOKEN", verdict_names[v]);
    switch (v) {
    case VERDICT_REDIRECT:
        return redirect(pr, !after_handler);
    case VERDICT_DENY:
        return HTTP_FORBIDDEN;
    case VERDICT_PASS:
    case VERDICT_RANGE:
    case VERDICT_FALLBACK:
        break;
    }
    mark_tokenized(pr);
    keep_from_cache(r);
    if (!after_handler) {
        /* The last word on the headers waits until the handler and
         * mod_headers have set theirs. */
        strip_token(pr);
        watch(r, v == VERDICT_FALLBACK ? WATCH_FALLBACK : WATCH_PASS);
    }
    else {
        tokenized_headers(pr, v);
    }
    return DECLINED;
}

/* PdfTokenExempt: does the expression match?  One that fails to evaluate
 * exempts nobody. */
static int is_exempt(const preq *pr)
{
    const char *err = NULL;
    int rc;

    if (!pr->conf->exempt) {
        return 0;
    }
    rc = ap_expr_exec(pr->r, pr->conf->exempt, &err);
    if (rc < 0 || err) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, pr->r,
                      PDFTOKEN_LOGNO(00017) "%s: PdfTokenExempt cannot be "
                                            "evaluated (%s): protected",
                      log_path(pr->path), err ? err : "error");
        return 0;
    }
    return rc;
}

/*
 * A PDF that PdfTokenExempt serves as if unprotected: inline at the plain
 * URL, so private, since a shared cache in front must not hand it to a
 * reader the expression would not match (ap_expr has added the headers
 * it read to Vary), and no-store, since the reader's own browser would
 * otherwise show its copy again, to a link with an attacker's fragment,
 * without asking, once the reader no longer matches (a laptop that left
 * the exempt network; Chromium and Firefox do, browser case c9).  Beside
 * a handler's own Cache-Control, no-store still wins.  Only PDFs are
 * asked, so that every other answer of the scope stays untouched.
 */
static void mark_exempt(const preq *pr)
{
    request_rec *r = pr->r;

    apr_table_setn(r->subprocess_env, "PDFTOKEN", "exempt");
    if (pr->ist->exempted) {
        /* An internal redirect shares err_headers_out: added once. */
        return;
    }
    pr->ist->exempted = 1;
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  PDFTOKEN_LOGNO(00018) "%s: exempt by PdfTokenExempt",
                  log_path(pr->path));
    apr_table_mergen(r->err_headers_out, "Cache-Control", "private, no-store");
}

/* ---- the output filter: judging what the handler made ------------------ */

/* A response header wherever the handler put it (CGI scripts' headers
 * land in err_headers_out). */
static const char *response_header(const request_rec *r, const char *name)
{
    const char *v = apr_table_get(r->headers_out, name);

    return v ? v : apr_table_get(r->err_headers_out, name);
}

/*
 * Every value of a response header, as one list in the order httpd sends
 * them: its header filter puts err_headers_out's entries (a CGI script's
 * headers, "Header always") before headers_out's.  A browser that meets
 * two Content-Disposition headers may follow either.
 */
static const char *sent_values(const request_rec *r, const char *name)
{
    const char *err = apr_table_getm(r->pool, r->err_headers_out, name);
    const char *out = apr_table_getm(r->pool, r->headers_out, name);

    if (err && out) {
        return apr_pstrcat(r->pool, err, ", ", out, NULL);
    }
    return err ? err : out;
}

/*
 * The Content-Type the browser will get.  httpd's header filter sends
 * r->content_type when it is set and not empty, in place of any other;
 * otherwise the header tables as they are: a mod_lua handler's
 * r.headers_out, mod_headers' "Header add" or "merge" (only "set" sets
 * r->content_type), any module that writes the table.
 */
static const char *sent_type(const request_rec *r)
{
    if (r->content_type && *r->content_type) {
        return r->content_type;
    }
    return sent_values(r, "Content-Type");
}

/* Is the response PDF-like, by its headers: the library's verdict. */
static pdftoken_render classify_response(const request_rec *r, const preq *pr)
{
    pdftoken_response resp;

    resp.content_type = sent_type(r);
    resp.content_type_len = resp.content_type ? strlen(resp.content_type) : 0;
    resp.disposition = sent_values(r, "Content-Disposition");
    resp.disposition_len = resp.disposition ? strlen(resp.disposition) : 0;
    resp.path = pr->path;
    resp.path_len = pr->path ? strlen(pr->path) : 0;
    resp.types = extra_types(pr->conf, &resp.ntypes);
    return pdftoken_classify(&resp);
}

/* Has a filter or the handler encoded the body (gzip)?  Then its bytes
 * are not what the browser sniffs, after it decodes them. */
static int is_encoded(const request_rec *r)
{
    return r->content_encoding || response_header(r, "Content-Encoding");
}

/*
 * Add bb's first bytes to h and sniff them as a browser would.  Reads
 * only as far as the sniff needs, so that a CGI's pipe or a file is not
 * drained; while h->state stays SNIFF_PENDING every bucket of bb has been
 * read.  An EOS before enough bytes: a body too short to be a PDF.
 */
static void sniff_more(body_head *h, apr_bucket_brigade *bb)
{
    apr_bucket *e;
    int res = pdftoken_sniff_pdf(h->head, h->len);

    for (e = APR_BRIGADE_FIRST(bb); res == -1 && e != APR_BRIGADE_SENTINEL(bb);
         e = APR_BUCKET_NEXT(e)) {
        const char *data;
        apr_size_t len, room = sizeof(h->head) - h->len;

        if (APR_BUCKET_IS_EOS(e)) {
            res = 0;
            break;
        }
        if (APR_BUCKET_IS_METADATA(e)) {
            continue;
        }
        if (apr_bucket_read(e, &data, &len, APR_BLOCK_READ) != APR_SUCCESS) {
            /* Unreadable: the filters after us will report it. */
            res = 0;
            break;
        }
        len = len < room ? len : room;
        memcpy(h->head + h->len, data, len);
        h->len += len;
        res = pdftoken_sniff_pdf(h->head, h->len);
    }
    h->state = res == -1 ? SNIFF_PENDING : res ? SNIFF_PDF : SNIFF_NO;
}

/*
 * Before the filters that encode a body (mod_deflate), for a handler's
 * response that may lack a valid type: reads its first bytes as the
 * browser will see them once decoded, for the watch filter, and passes
 * everything on at once, unchanged.
 */
static apr_status_t sniff_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    watch_ctx *ctx = f->ctx;
    body_head *h = ctx->pre;
    request_rec *r = f->r;

    if (h->len == 0 && is_encoded(r)) {
        h->state = SNIFF_PDF;
    }
    else if (h->len == 0 && r->content_type
             && classify_response(r, &ctx->pr) != PDFTOKEN_PDF_IF_BODY) {
        h->state = SNIFF_SKIPPED;
    }
    else {
        sniff_more(h, bb);
    }
    if (h->state != SNIFF_PENDING) {
        ap_remove_output_filter(f);
    }
    return ap_pass_brigade(f->next, bb);
}

/*
 * Drop what is left of a replaced answer, reading to their end the buckets
 * that stand for output still to come (a CGI script's pipe): the script
 * then writes all it means to and ends as it would have, instead of
 * dying of a broken pipe when the handler closes it.  Buckets of a known
 * length (memory, files) are dropped unread.
 */
static void drain(apr_bucket_brigade *bb)
{
    apr_bucket *e;
    const char *data;
    apr_size_t len;

    while (!APR_BRIGADE_EMPTY(bb)) {
        e = APR_BRIGADE_FIRST(bb);
        if (e->length == (apr_size_t)-1
            && apr_bucket_read(e, &data, &len, APR_BLOCK_READ) != APR_SUCCESS) {
            /* An unreadable pipe: nothing more will come of it. */
            apr_brigade_cleanup(bb);
            return;
        }
        apr_bucket_delete(e);
    }
}

/* Drops whatever a handler still sends after its answer was replaced, and
 * lets it run to its end: a back end read to the end keeps its
 * connection, a script its exit status, and the error log stays quiet. */
static apr_status_t discard_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    (void)f;
    drain(bb);
    return APR_SUCCESS;
}

/* The answer goes on: what was held first, in a brigade of its own as it
 * came (with the end in the same brigade, the protocol filters would frame
 * the body otherwise than without the module), then bb. */
static apr_status_t leave(ap_filter_t *f, apr_bucket_brigade *bb)
{
    watch_ctx *ctx = f->ctx;
    apr_status_t rv;

    ap_remove_output_filter(f);
    if (ctx->held && !APR_BRIGADE_EMPTY(ctx->held)) {
        rv = ap_pass_brigade(f->next, ctx->held);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return ap_pass_brigade(f->next, bb);
}

/* err_headers_out as it was before the handler ran: an answer sent in
 * place of the handler's carries none of its headers, like the fixup's. */
static void forget_handler_headers(request_rec *r, const watch_ctx *ctx)
{
    if (ctx->err_before) {
        r->err_headers_out = apr_table_copy(r->pool, ctx->err_before);
    }
    else {
        apr_table_clear(r->err_headers_out);
    }
}

/*
 * Throw the handler's answer away, before any byte of it is sent, and
 * answer status instead, the way httpd answers a fixup's error or
 * redirect (ap_send_error_response: the same headers, the ErrorDocument
 * text, "Header always").  The answer is flushed at once; the handler is
 * then left to run to its end, and what it still sends is dropped.
 */
static apr_status_t replace(ap_filter_t *f, apr_bucket_brigade *bb, int status)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;
    apr_bucket_brigade *flush;

    if (ctx->held) {
        apr_brigade_cleanup(ctx->held);
    }
    ctx->replaced = 1;
    r->status = status;
    r->status_line = NULL;
    ap_send_error_response(r, 0);
    /* Twice: a handler that passes past the first filter (httpd-tests'
     * passbrigade) must land in a discard too, not in the protocol
     * filters of an answer already sent. */
    ap_add_output_filter_handle(discard_filter_handle, NULL, r, r->connection);
    ap_add_output_filter_handle(discard_filter_handle, NULL, r, r->connection);
    flush = apr_brigade_create(r->pool, f->c->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(flush, apr_bucket_flush_create(f->c->bucket_alloc));
    /* A reader who has gone is no error of the handler's: it runs on. */
    ap_pass_brigade(r->connection->output_filters, flush);
    /* Only now, with the answer out, what the handler sent with it. */
    drain(bb);
    return APR_SUCCESS;
}

/* Never inline: a forced download for what cannot take the redirect. */
static apr_status_t send_as_download(ap_filter_t *f, apr_bucket_brigade *bb,
                                     const char *why)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;

    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  PDFTOKEN_LOGNO(00014) "%s: PDF-like response (%s, status %d) "
                                        "sent as a download",
                  log_path(ctx->pr.path), why, r->status);
    apr_table_setn(r->subprocess_env, "PDFTOKEN", "fallback");
    force_download(r);
    keep_from_cache(r);
    return leave(f, bb);
}

/*
 * After the handler: a PDF-like response that the fixup
 * did not judge.  A GET or HEAD with a 2xx status goes through the same
 * decision table as a static PDF; everything else is never inline.
 */
static apr_status_t judge_response(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;
    const preq *pr = &ctx->pr;
    verdict v;
    int status;

    if (is_exempt(pr)) {
        mark_exempt(pr);
        return leave(f, bb);
    }
    if (r->method_number != M_GET || !pr->path) {
        return send_as_download(f, bb, r->method);
    }
    if (!ap_is_HTTP_SUCCESS(r->status) || is_error_document(r)) {
        return send_as_download(f, bb, "not a success");
    }
    if (conf_dynamic(pr->conf) == DYNAMIC_ATTACHMENT) {
        return send_as_download(f, bb, "PdfTokenDynamic attachment");
    }
    v = verdict_of(pr);
    if (v == VERDICT_REDIRECT || v == VERDICT_DENY) {
        forget_handler_headers(r, ctx);
    }
    status = enforce(pr, v, 1);
    return status == DECLINED ? leave(f, bb) : replace(f, bb, status);
}

static int has_eos(apr_bucket_brigade *bb)
{
    apr_bucket *e;

    for (e = APR_BRIGADE_FIRST(bb); e != APR_BRIGADE_SENTINEL(bb);
         e = APR_BUCKET_NEXT(e)) {
        if (APR_BUCKET_IS_EOS(e)) {
            return 1;
        }
    }
    return 0;
}

/* Does bb hold body bytes (or a bucket that may turn into some)? */
static int has_body(apr_bucket_brigade *bb)
{
    apr_bucket *e;

    for (e = APR_BRIGADE_FIRST(bb); e != APR_BRIGADE_SENTINEL(bb);
         e = APR_BUCKET_NEXT(e)) {
        if (!APR_BUCKET_IS_METADATA(e) && e->length != 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * A handler's final answer with a 1xx status (CGI "Status: 100", an .asis
 * file): httpd sends its body, and browsers read that body as the real
 * response, a PDF with the attacker's fragment included.  Interim answers
 * (100-continue, a proxy's 101) never pass here; the end of a proxy's
 * tunnel does, as a bodiless 101, and goes on.
 */
static apr_status_t refuse_1xx(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;
    int status = r->status;

    if (status == HTTP_SWITCHING_PROTOCOLS && !has_body(bb)) {
        ctx->sent = 1;
        return ap_pass_brigade(f->next, bb);
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                  PDFTOKEN_LOGNO(00020) "%s: refused: the handler's final "
                                        "answer has status %d, whose body "
                                        "browsers would read as the response",
                  log_path(ctx->pr.path), status);
    apr_table_setn(r->subprocess_env, "PDFTOKEN", "deny");
    if (ctx->sent) {
        /* Its headers are out already: only the body can be kept back. */
        ctx->replaced = 1;
        apr_brigade_cleanup(bb);
        return APR_SUCCESS;
    }
    forget_handler_headers(r, ctx);
    return replace(f, bb, HTTP_BAD_GATEWAY);
}

/*
 * A response without a valid type is PDF-like when its body begins with
 * "%PDF-": read as the browser reads it, after decoding.  This filter
 * reads the bytes it is handed, which are the ones sent: a filter between
 * the handler and this one may have put others in place of the handler's
 * (mod_xsendfile sends a file for a script's empty body).  Only an encoded
 * body (mod_deflate) is judged by what the sniff filter read before the
 * encoder, or, when that cannot tell, counted a PDF.  Until the bytes
 * tell, the body is held back here.
 */
static sniff_state sniff_body(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;
    sniff_state state;

    if (is_encoded(r)) {
        if (ctx->pre
            && (ctx->pre->state == SNIFF_PDF || ctx->pre->state == SNIFF_NO)) {
            state = ctx->pre->state;
        }
        else {
            /* Wait for the sniff filter while it may still tell. */
            state = ctx->pre && ctx->pre->state == SNIFF_PENDING && !has_eos(bb)
                        ? SNIFF_PENDING
                        : SNIFF_PDF;
        }
    }
    else {
        if (!ctx->own) {
            ctx->own = apr_pcalloc(r->pool, sizeof(*ctx->own));
        }
        sniff_more(ctx->own, bb);
        state = ctx->own->state;
    }
    if (state == SNIFF_PENDING) {
        /* Every bucket is read (sniff_more); keep them past this call. */
        ap_save_brigade(f, &ctx->held, &bb, r->pool);
        apr_brigade_cleanup(bb);
    }
    return state;
}

/*
 * Every response of a protected scope that reaches a handler passes here,
 * once its headers are final (after mod_headers) and before any byte is
 * sent or cached (before mod_cache's CACHE_SAVE): the fixup only saw the
 * type known before the handler, and CGI scripts, back ends and sniffing
 * browsers decide theirs later.  It decides on the first brigade and
 * leaves; only a body without a valid type is read, up to its first
 * bytes.
 */
static apr_status_t watch_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    watch_ctx *ctx = f->ctx;

    if (ctx->replaced) {
        drain(bb);
        return APR_SUCCESS;
    }
    if (!ctx->seen) {
        ctx->seen = 1;
        if (ctx->before && ctx->before->seen) {
            /* The watch filter judged this answer: mod_cache did not
             * answer, or left the filter in place (a CACHE filter placed
             * by hand). */
            return leave(f, bb);
        }
    }
    if (r->status < 200) {
        return refuse_1xx(f, bb);
    }
    switch (ctx->mode) {
    case WATCH_PASS:
        /* A script's own Cache-Control (public, max-age) or mod_headers'
         * came after the fixup and must not stand beside ours. */
        tokenized_headers(&ctx->pr, VERDICT_PASS);
        return leave(f, bb);
    case WATCH_FALLBACK:
        tokenized_headers(&ctx->pr, VERDICT_FALLBACK);
        return leave(f, bb);
    default:
        break;
    }
    if (!ctx->started) {
        ctx->started = 1;
        /* No body, nothing to render; or the type the fixup knew can be
         * no PDF, and no filter or handler has changed it. */
        if (AP_STATUS_IS_HEADER_ONLY(r->status)
            || (ctx->settled && ctx->settled == r->content_type)) {
            return leave(f, bb);
        }
        ctx->render = classify_response(r, &ctx->pr);
    }
    switch (ctx->render) {
    case PDFTOKEN_NOT_PDF:
        return leave(f, bb);
    case PDFTOKEN_PDF:
        return judge_response(f, bb);
    case PDFTOKEN_PDF_IF_BODY:
        break;
    }
    switch (sniff_body(f, bb)) {
    case SNIFF_PENDING:
        return APR_SUCCESS;
    case SNIFF_PDF:
        return judge_response(f, bb);
    default:
        return leave(f, bb);
    }
}

/* ---- the fixup: judging before the handler ----------------------------- */

/*
 * mod_cgi and mod_cgid hand an nph- script's output to the client past
 * every output filter, so nothing this module sets or checks would reach
 * it.  Their test, on the handler (or, before ap_invoke_handler sets it,
 * the type that becomes the handler) and the file's name.
 */
static int is_nph_script(const request_rec *r)
{
    const char *h = r->handler ? r->handler : r->content_type;
    const char *base;

    if (!h || !r->filename) {
        return 0;
    }
    /* The handler first: nearly every request is no CGI, and its first
     * letter or its length says so (text/html, application/pdf). */
    switch (*h | 0x20) {
    case 'c':
        if (strcasecmp(h, "cgi-script")) {
            return 0;
        }
        break;
    case 'a':
        if (strlen(h) < 23 || strncasecmp(h, "application/x-httpd-cgi", 23)) {
            return 0;
        }
        break;
    default:
        return 0;
    }
    base = strrchr(r->filename, '/');
    return !strncmp(base ? base + 1 : r->filename, "nph-", 4);
}

/*
 * A static file that does not exist gets httpd's 404, not a token: every
 * made-up path would otherwise mint one more cookie for a hostile page to
 * pile up.  Only for the default handler: a script, a proxy or a handler
 * set by the configuration answers for paths that are no files.
 */
static int is_missing_file(const request_rec *r)
{
    return r->finfo.filetype == APR_NOFILE
           && (!r->handler || !strcmp(r->handler, "default-handler"))
           && r->filename && strncmp(r->filename, "proxy:", 6);
}

/* r's state, its preq filled in for a request that conf protects, whose
 * initial request is ir and whose decoded URL path is path.  The preq
 * lives in the state, so that what follows reads it without a copy. */
static APR_INLINE req_state *protected_state(request_rec *r, request_rec *ir,
                                             const dir_conf *conf,
                                             const char *path)
{
    req_state *st = state_of(r);

    st->pr.r = r;
    st->pr.ir = ir;
    st->pr.conf = conf;
    st->pr.sconf =
        ap_get_module_config(r->server->module_config, &pdftoken_module);
    st->pr.path = path;
    st->pr.path_len = path ? strlen(path) : 0;
    st->pr.ist = ir == r ? st : state_of(ir);
    return st;
}

/*
 * The settings that protect r, whose own scope's are conf and whose
 * initial request is ir, or NULL.  An internal redirect (an ErrorDocument,
 * mod_rewrite) answers for the URL the browser asked for: when that URL is
 * protected, so is the answer, wherever it comes from.
 */
static APR_INLINE const dir_conf *protecting_conf(const request_rec *r,
                                                  const request_rec *ir,
                                                  const dir_conf *conf)
{
    if (conf->protect == 1) {
        return conf;
    }
    if (ir == r) {
        return NULL;
    }
    conf = ap_get_module_config(ir->per_dir_config, &pdftoken_module);
    return conf->protect == 1 ? conf : NULL;
}

/* Is r protected?  Returns r's state (protected_state), or NULL. */
static req_state *protected_request(request_rec *r)
{
    request_rec *ir = initial_request(r);
    const dir_conf *conf = protecting_conf(
        r, ir, ap_get_module_config(r->per_dir_config, &pdftoken_module));

    if (!conf) {
        return NULL;
    }
    /* httpd decodes r->uri in place and parsed_uri.path is the same
     * string, so this is the browser's path even after mod_dir or
     * MultiViews have pointed r->uri at another file. */
    return protected_state(r, ir, conf, ir->parsed_uri.path);
}

/*
 * Is the answer known to be a PDF before the handler runs: a static file
 * at a .pdf URL or of a PDF type?  Sets *by_type to what the type says
 * when it had to be read (else PDFTOKEN_PDF_IF_BODY).
 */
static int is_static_pdf(const preq *pr, pdftoken_render *by_type)
{
    request_rec *r = pr->r;

    *by_type = PDFTOKEN_PDF_IF_BODY;
    if (r->method_number != M_GET) { /* HEAD is M_GET too */
        return 0;
    }
    /* r->uri is the browser's path, measured already, unless mod_dir or
     * a rewrite pointed it elsewhere. */
    if (!ends_in_pdf(r->uri, r->uri == pr->path ? pr->path_len
                             : r->uri           ? strlen(r->uri)
                                                : 0)) {
        *by_type = type_says(pr->conf, r->content_type);
        if (*by_type != PDFTOKEN_PDF) {
            return 0;
        }
    }
    /* Only what would be judged needs the file: most answers are
     * settled before this. */
    return !is_missing_file(r);
}

static int pdftoken_fixup(request_rec *r)
{
    req_state *st;
    const preq *pr;
    pdftoken_render by_type = PDFTOKEN_PDF_IF_BODY;

    if (r->main || !(st = protected_request(r))) {
        return DECLINED;
    }
    pr = &st->pr;
    if (is_nph_script(r)) {
        if (is_exempt(pr)) {
            return DECLINED;
        }
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      PDFTOKEN_LOGNO(00013) "%s: refused: an NPH script's "
                                            "output bypasses the output "
                                            "filters, so PdfTokenProtect "
                                            "cannot judge it",
                      log_path(pr->path));
        apr_table_setn(r->subprocess_env, "PDFTOKEN", "deny");
        return HTTP_FORBIDDEN;
    }
    if (is_error_document(r)
        || (!pr->ist->judged && !is_static_pdf(pr, &by_type))) {
        /* Judged after the handler if it turns out PDF-like; the handler
         * must not see the token either way. */
        strip_token(pr);
        st->mode = WATCH_UNJUDGED;
        if (by_type == PDFTOKEN_NOT_PDF) {
            st->settled = r->content_type;
        }
        return DECLINED;
    }
    if (!pr->path) {
        /* Only "OPTIONS *" lacks a path, and it is no GET. */
        return HTTP_BAD_REQUEST;
    }
    if (!pr->ist->judged && is_exempt(pr)) {
        mark_exempt(pr);
        return DECLINED;
    }
    /* Section 4: judged once per initial request; internal redirects that
     * follow carry out the same verdict. */
    return enforce(pr, verdict_of(pr), 0);
}

/*
 * An untouched static file: a type the fixup saw and found can be no PDF,
 * still the same, and of a kind no module takes for a handler's name
 * (text, images, sound, video, fonts; AddType application/x-httpd-php is
 * a handler's).  The major type is compared byte by byte, so that a
 * shorter type ends the test at its NUL.
 */
static int is_plain_static(const request_rec *r, const req_state *st)
{
    const char *t = r->content_type;

    if (!st->settled || st->settled != t) {
        return 0;
    }
    switch (*t | 0x20) {
    case 't':
        return IS_LETTER(t[1], 'e') && IS_LETTER(t[2], 'x')
               && IS_LETTER(t[3], 't') && t[4] == '/';
    case 'i':
        return IS_LETTER(t[1], 'm') && IS_LETTER(t[2], 'a')
               && IS_LETTER(t[3], 'g') && IS_LETTER(t[4], 'e') && t[5] == '/';
    case 'a':
        return IS_LETTER(t[1], 'u') && IS_LETTER(t[2], 'd')
               && IS_LETTER(t[3], 'i') && IS_LETTER(t[4], 'o') && t[5] == '/';
    case 'v':
        return IS_LETTER(t[1], 'i') && IS_LETTER(t[2], 'd')
               && IS_LETTER(t[3], 'e') && IS_LETTER(t[4], 'o') && t[5] == '/';
    case 'f':
        return IS_LETTER(t[1], 'o') && IS_LETTER(t[2], 'n')
               && IS_LETTER(t[3], 't') && t[4] == '/';
    default:
        return 0;
    }
}

/* Has the administrator placed mod_cache's CACHE filter ahead of ours
 * (CacheQuickHandler Off)?  Then the cache decides before this
 * module can judge the answer. */
static int cache_placed_first(const request_rec *r)
{
    const ap_filter_t *f;

    if (!cache_filter_handle) {
        return 0;
    }
    for (f = r->output_filters; f && f != r->proto_output_filters;
         f = f->next) {
        if (f->frec == cache_filter_handle) {
            return 1;
        }
    }
    return 0;
}

/*
 * mod_cache answers with a stored answer by taking out every output filter
 * ahead of its CACHE_OUT (AP_FTYPE_CONTENT_SET + 1), the watch filter
 * with them: as the handler (CacheQuickHandler Off) after the fixup, and
 * in its quick handler (On, the default) before any fixup, running the
 * insert_filter hooks itself under the server's configuration.  The module
 * never lets a judged answer be stored, but a PDF stored before
 * PdfTokenProtect was turned on went on being served as it was, inline and
 * without a token, until it expired (measured with mod_cache_disk, after a
 * graceful and after a full restart; with CacheQuickHandler Off the
 * download of R3 came inline too).  So where mod_cache is loaded,
 * PDFTOKEN_CACHED, the watch filter one type after CACHE_OUT, judges a
 * stored answer of a protected scope as the watch filter judges a
 * handler's.
 *
 * For the quick handler the scope is found as httpd finds it for this URL,
 * by a lookup subrequest, which never reaches the cache: only for a stored
 * answer whose type may be a PDF's.  Other hits (HTML, images) cost a type
 * check.  The built-in types are the ones asked about: they hold every
 * type the engines render as a PDF.  Returns r's state, or NULL.
 */
static req_state *cache_hit_state(request_rec *r)
{
    request_rec *rr, *ir = initial_request(r);
    const dir_conf *conf;

    if (!r->uri || r->uri[0] != '/'
        || (r->content_type
            && pdftoken_classify_type_str(r->content_type, NULL, 0)
                   == PDFTOKEN_NOT_PDF)) {
        return NULL;
    }
    /* Kept to the end of r: conf may live in its pool. */
    rr = ap_sub_req_lookup_uri(r->uri, r, NULL);
    conf = protecting_conf(
        r, ir, ap_get_module_config(rr->per_dir_config, &pdftoken_module));
    if (!conf) {
        return NULL;
    }
    /* The lookup decoded the path as httpd decodes a request's. */
    return protected_state(r, ir, conf,
                           ir == r ? rr->parsed_uri.path : ir->parsed_uri.path);
}

/* The watch filter's state for r, from r's state. */
static watch_ctx *watch_context(request_rec *r, const req_state *st)
{
    watch_ctx *ctx = apr_pcalloc(r->pool, sizeof(*ctx));

    ctx->pr = st->pr;
    ctx->mode = st->mode;
    ctx->settled = st->settled;
    if (st->mode == WATCH_UNJUDGED) {
        /* Before the handler and mod_headers add theirs (CGI's headers go
         * to err_headers_out).  Mostly empty, and then nothing to copy. */
        ctx->err_before = apr_is_empty_table(r->err_headers_out)
                              ? NULL
                              : apr_table_copy(r->pool, r->err_headers_out);
    }
    return ctx;
}

/* PDFTOKEN_CACHED for r: it leaves what the watch filter (before, NULL
 * for none) has seen, which means mod_cache left that in place.  Beside
 * that filter it starts from the same state, without the sniff filter's
 * first bytes, which mod_cache takes out with it. */
static void add_cached_watch(request_rec *r, const req_state *st,
                             const watch_ctx *before)
{
    watch_ctx *ctx;

    if (before) {
        ctx = apr_pmemdup(r->pool, before, sizeof(*ctx));
        ctx->pre = NULL;
    }
    else {
        ctx = watch_context(r, st);
    }
    ctx->before = before;
    ap_add_output_filter_handle(cached_watch_filter_handle, ctx, r,
                                r->connection);
}

/* A hit of mod_cache's quick handler (mod_cache says so in "cache-hit"),
 * in a protected scope. */
static void quick_cache_hit(request_rec *r)
{
    req_state *st;

    if (r->main || !apr_table_get(r->subprocess_env, "cache-hit")
        || !(st = cache_hit_state(r))) {
        return;
    }
    st->mode = WATCH_UNJUDGED;
    add_cached_watch(r, st, NULL);
}

/*
 * The watch filter goes in last of all, after mod_headers' (whose
 * "Header set Content-Type" can make a response a PDF) and before
 * mod_cache's CACHE_SAVE (one filter type later), so that it sees the
 * final headers and the cache sees its verdict.
 */
static void pdftoken_insert_filter(request_rec *r)
{
    req_state *st = ap_get_module_config(r->request_config, &pdftoken_module);
    watch_ctx *ctx;

    if (!st && !r->filename && cache_filter_handle) {
        /* No translate_name ran: mod_cache's quick handler. */
        quick_cache_hit(r);
        return;
    }
    if (!st || st->mode == WATCH_NONE) {
        return;
    }
    if (!r->handler && r->output_filters == r->proto_output_filters
        && !cache_filter_handle) {
        /* A file for httpd's own handler, and no filter between it and
         * the protocol: nothing can change the headers from here on, so
         * they are final now, and no filter is needed (what a static
         * file costs).  Not where mod_cache may answer instead. */
        switch (st->mode) {
        case WATCH_PASS:
            tokenized_headers(&st->pr, VERDICT_PASS);
            return;
        case WATCH_FALLBACK:
            tokenized_headers(&st->pr, VERDICT_FALLBACK);
            return;
        default:
            if (is_plain_static(r, st)) {
                return;
            }
        }
    }
    ctx = watch_context(r, st);
    if (st->mode == WATCH_UNJUDGED) {
        if (r->handler || !r->content_type
            || (r->content_type != st->settled
                && classify_response(r, &ctx->pr) == PDFTOKEN_PDF_IF_BODY)) {
            /* It may send no valid type, or text/plain: its first bytes
             * may be needed as they leave it, before mod_deflate
             * compresses them. */
            ctx->pre = apr_pcalloc(r->pool, sizeof(*ctx->pre));
            ctx->pre->state = SNIFF_PENDING;
            ap_add_output_filter_handle(sniff_filter_handle, ctx, r,
                                        r->connection);
        }
        if (cache_placed_first(r)) {
            keep_from_cache(r);
        }
    }
    ap_add_output_filter_handle(watch_filter_handle, ctx, r, r->connection);
    if (cache_filter_handle) {
        /* mod_cache as the handler (CacheQuickHandler Off) may answer
         * with a stored answer instead. */
        add_cached_watch(r, st, ctx);
    }
}

/* ---- start-up ----------------------------------------------------------- */

/* What the start-up notice calls this module.  Not in the Server header:
 * outside PDFs the module leaves every answer as httpd sends it without
 * it, and under ServerTokens Full (httpd's default) a product token would
 * change every answer of the server. */
#define VERSION_COMPONENT "mod_pdftoken/" MOD_PDFTOKEN_VERSION

/* One notice per server at every start: the module's version and which
 * secret signs its tokens.  The file's name only, never what it holds. */
static void log_secret_source(server_rec *s, const srv_conf *sconf)
{
    const char *where = s->defn_name
                            ? apr_psprintf(s->process->pconf, " (%s:%u)",
                                           s->defn_name, s->defn_line_number)
                            : "";
    const char *host = s->server_hostname ? s->server_hostname : "*";

    if (!sconf->files[0]) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                     PDFTOKEN_LOGNO(00016) "%s, %s%s: tokens are signed "
                                           "with a "
                                           "random secret made at start-up: "
                                           "a restart ends the tokens in "
                                           "flight, and servers behind one "
                                           "load balancer reject each "
                                           "other's; set PdfTokenSecretFile",
                     VERSION_COMPONENT, host, where);
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                 PDFTOKEN_LOGNO(00016) "%s, %s%s: tokens are signed with "
                                       "the secret in %s%s%s",
                 VERSION_COMPONENT, host, where, sconf->files[0],
                 sconf->files[1] ? "; previous secret accepted for "
                                   "verification: "
                                 : "",
                 sconf->files[1] ? sconf->files[1] : "");
}

/*
 * Servers without PdfTokenSecretFile share one random key, made here in
 * the parent so that every child of every MPM inherits the same one.  A
 * restart makes a new one, which ends the tokens in flight: acceptable for
 * a 10 s token, and the reason clusters use a secret file.
 */
static int pdftoken_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                                apr_pool_t *ptemp, server_rec *s)
{
    pdftoken_key *key = NULL;
    pdftoken_status st;

    (void)plog;
    (void)ptemp;
    /* The first pass only checks the configuration. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    cache_filter_handle = ap_get_output_filter_handle("CACHE");
    fragment_csp_any_frame = make_fragment_csp(pconf);
    fragment_csp = fragment_csp_any_frame
                       ? apr_pstrcat(pconf, fragment_csp_any_frame,
                                     "; frame-ancestors 'self'", NULL)
                       : NULL;
    if (!fragment_csp) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     PDFTOKEN_LOGNO(00012) "cannot hash the fragment page's "
                                           "script");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    for (; s; s = s->next) {
        srv_conf *sconf =
            ap_get_module_config(s->module_config, &pdftoken_module);
        if (sconf->nkeys) {
            log_secret_source(s, sconf);
            continue;
        }
        if (!key) {
            key = apr_pcalloc(pconf, sizeof(*key));
            st = pdftoken_key_generate(key);
            if (st != PDFTOKEN_OK) {
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                             PDFTOKEN_LOGNO(00011) "cannot make a random "
                                                   "secret: %s",
                             pdftoken_status_str(st));
                return HTTP_INTERNAL_SERVER_ERROR;
            }
            apr_pool_cleanup_register(pconf, key, wipe_key,
                                      apr_pool_cleanup_null);
        }
        sconf->keys = key;
        sconf->nkeys = 1;
        log_secret_source(s, sconf);
    }
    return OK;
}

static void register_hooks(apr_pool_t *p)
{
    /* After mod_dir, whose DirectoryIndex turns a directory request into
     * the PDF. */
    static const char *const after_dir[] = {"mod_dir.c", NULL};
    /* After mod_headers', whose "Header set Content-Type" can make a
     * response a PDF, and mod_xsendfile's (APR_HOOK_LAST + 1), whose
     * filter sends a file in place of a script's body. */
    static const char *const after_filters[] = {"mod_headers.c",
                                                "mod_xsendfile.c", NULL};

    (void)p;
    make_escape_table();
    /* The random default key, made once in the parent. */
    ap_hook_post_config(pdftoken_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    /* The decision: the content type is known, the handler has not run. */
    ap_hook_fixups(pdftoken_fixup, after_dir, NULL, APR_HOOK_LAST);
    /* The watch filter, once every other module has put in its own: of
     * two filters of one type, the one added first runs first. */
    ap_hook_insert_filter(pdftoken_insert_filter, after_filters, NULL,
                          APR_HOOK_REALLY_LAST);
    /* The fragment page; first, because mod_proxy's handler takes any
     * proxied request whatever r->handler says. */
    ap_hook_handler(fragment_page_handler, NULL, NULL, APR_HOOK_REALLY_FIRST);
    /*
     * The filters, in the order a response meets them:
     *   mod_include, mod_substitute, ... (AP_FTYPE_RESOURCE)
     *   PDFTOKEN_SNIFF  reads the first bytes as they leave the handler
     *   mod_deflate, mod_filter's, mod_headers', mod_xsendfile's
     *                   (AP_FTYPE_CONTENT_SET, inserted before ours)
     *   PDFTOKEN        judges on the final headers, and leaves
     *   mod_cache's CACHE_SAVE (AP_FTYPE_CONTENT_SET + 1)
     *   the protocol filters
     * PDFTOKEN_DISCARD takes the place of them all once an answer has
     * been replaced.  A stored answer mod_cache serves (quick handler or
     * not) leaves CACHE_OUT (AP_FTYPE_CONTENT_SET + 1), which removes
     * every filter ahead of it: PDFTOKEN_CACHED is the watch filter one
     * type later.
     */
    sniff_filter_handle = ap_register_output_filter(
        FILTER_NAME "_SNIFF", sniff_filter, NULL, AP_FTYPE_CONTENT_SET - 1);
    watch_filter_handle = ap_register_output_filter(FILTER_NAME, watch_filter,
                                                    NULL, AP_FTYPE_CONTENT_SET);
    cached_watch_filter_handle = ap_register_output_filter(
        FILTER_NAME "_CACHED", watch_filter, NULL, AP_FTYPE_CONTENT_SET + 2);
    discard_filter_handle = ap_register_output_filter(
        FILTER_NAME "_DISCARD", discard_filter, NULL, AP_FTYPE_CONTENT_SET);
}

AP_DECLARE_MODULE(pdftoken) = {
    STANDARD20_MODULE_STUFF,
    create_dir_conf,    /* create per-directory config structure */
    merge_dir_conf,     /* merge per-directory config structures */
    create_srv_conf,    /* create per-server config structure */
    merge_srv_conf,     /* merge per-server config structures */
    pdftoken_cmds,      /* command table */
    register_hooks,     /* register hooks */
    AP_MODULE_FLAG_NONE /* flags */
};
