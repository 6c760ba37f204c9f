/* Plain or gzip JSON traces (trace_json.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "trace_json.h"

/* A decompressed trace larger than this is refused rather than let a
 * gzip bomb take the machine's memory. */
#define MAX_TRACE_BYTES ((size_t)4 << 30)

int trace_fail(import_diag *d, const char *file, const char *path,
               const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    commsched_error err = {0};
    commsched_error_set(&err, COMMSCHED_ESCHEMA, path, "%s", text);
    return import_report(d, file, &err);
}

/* What jansson's tree of a text will take, counted as the text goes by
 * (no allocation): per value the bytes jansson 2.14 allocates for it on
 * glibc, measured (a number 40 with its array slot, a string 64 + its
 * length, an array 144, an object 256 and 64 more per member; true,
 * false and null are shared). Within 10% above the real figure on Kineto
 * events and on arrays of numbers. */
typedef struct cost_scan {
    uint64_t bytes;
    size_t str_len;
    int in_str, esc, in_tok;
} cost_scan;

static void scan(cost_scan *c, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned ch = p[i];
        if (c->in_str) {
            if (c->esc)
                c->esc = 0;
            else if (ch == '\\')
                c->esc = 1;
            else if (ch == '"') {
                c->in_str = 0;
                c->bytes += 64 + c->str_len;
                continue;
            }
            c->str_len++;
            continue;
        }
        int tok = (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' ||
                  ch == '.' || ch == 'e' || ch == 'E' ||
                  (ch >= 'a' && ch <= 'z');
        if (tok && !c->in_tok)
            c->bytes += ch >= 'a' && ch != 'e' ? 8 : 40; /* literal, number */
        c->in_tok = tok;
        switch (ch) {
        case '"': c->in_str = 1; c->str_len = 0; break;
        case '[': c->bytes += 144; break;
        case '{': c->bytes += 256; break;
        case ':': c->bytes += 64; break;
        default: break;
        }
    }
}

/* The decompressed text as it comes: once to count what it will cost
 * (scan), then again for jansson to parse; standard input is read once
 * and kept. */
typedef struct gz_feed {
    gzFile gz;
    import_diag *d;
    uint64_t total; /* the file's size (0: a pipe) */
    size_t len;  /* decompressed bytes so far */
    int failed;  /* 1: zlib's error, 2: past MAX_TRACE_BYTES */
} gz_feed;

static size_t gz_feed_read(void *buf, size_t size, void *arg)
{
    gz_feed *f = arg;
    unsigned want = size > (1u << 30) ? 1u << 30 : (unsigned)size;
    int got = gzread(f->gz, buf, want);
    if (got < 0) {
        f->failed = 1;
        return (size_t)-1;
    }
    if ((size_t)got > MAX_TRACE_BYTES - f->len) {
        f->failed = 2;
        return (size_t)-1;
    }
    f->len += (size_t)got;
    /* The compressed offset: what the file's size measures. */
    z_off_t at = gzoffset(f->gz);
    import_progress(f->d, at > 0 ? (uint64_t)at : f->len, f->total);
    return (size_t)got;
}

/* zlib's gzread treats a stream that ends early (Z_BUF_ERROR: the
 * deflate data or the gzip trailer with its CRC-32 and length cut off) as
 * the end of the file, so a truncated .gz read as if whole: at the end of
 * a read, that is an error too. 0, or the code after recording it. */
static int gz_status(import_diag *d, const char *file, gzFile gz,
                     const gz_feed *f)
{
    int zerr = Z_OK;
    const char *msg = gzerror(gz, &zerr);
    if (f->failed == 2) {
        return import_fail(d, COMMSCHED_ESCHEMA,
                           "%s: more than %zu bytes of JSON", file,
                           MAX_TRACE_BYTES);
    }
    if (!f->failed && zerr == Z_BUF_ERROR && !gzdirect(gz)) {
        return import_fail(d, COMMSCHED_ESCHEMA,
                           "%s: gzip: the file ends early (its "
                           "trailer, the CRC-32 and length check, is cut "
                           "off)",
                           file);
    }
    if (f->failed == 1 || (zerr != Z_OK && zerr != Z_BUF_ERROR)) {
        const char *fdname = strstr(msg, ">: "); /* "<fd:3>: " says nothing */
        if (strncmp(msg, "<fd:", 4) == 0 && fdname)
            msg = fdname + 3;
        return import_fail(d, COMMSCHED_ESCHEMA, "%s: gzip: %s", file, msg);
    }
    return 0;
}

/* Reads the whole text once, counting what its tree will cost; keeps it
 * in *text (malloc'ed) when keep. 0, or the code after recording why. */
static int scan_text(import_diag *d, const char *file, gzFile gz,
                     uint64_t total, int keep, uint64_t limit, char **text,
                     size_t *len)
{
    gz_feed feed = {gz, d, total, 0, 0};
    cost_scan c = {0};
    size_t cap = 0;
    char chunk[65536], *buf = NULL;
    *text = NULL;
    for (;;) {
        size_t got = gz_feed_read(chunk, sizeof chunk, &feed);
        if (got == 0 || got == (size_t)-1)
            break;
        scan(&c, (const unsigned char *)chunk, got);
        if (keep) {
            if (feed.len + 1 > cap) {
                size_t ncap = cap ? cap : 1 << 20;
                while (ncap < feed.len + 1)
                    ncap *= 2;
                char *nb = realloc(buf, ncap);
                if (!nb) {
                    free(buf);
                    return import_fail(d, COMMSCHED_ENOMEM,
                                       "%s: out of memory", file);
                }
                buf = nb;
                cap = ncap;
            }
            memcpy(buf + feed.len - got, chunk, got);
        }
        if (c.bytes + (keep ? feed.len : 0) > limit)
            break; /* over already: no need to read on */
    }
    int rc = gz_status(d, file, gz, &feed);
    uint64_t need = c.bytes + (keep ? feed.len : 0);
    if (rc == 0 && need > limit) {
        char a[32], b[32], l[32];
        rc = import_fail(d, COMMSCHED_ENOMEM,
                         "%s: parsing this trace would take more than %s "
                "of memory (%s of text read); the limit is --max-memory "
                         "%s",
                         file, import_bytes((double)need, a, sizeof a),
                         import_bytes((double)feed.len, b, sizeof b),
                         import_bytes((double)limit, l, sizeof l));
    }
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = feed.len;
    return 0;
}

int trace_json_syntax_error(import_diag *d, const char *file,
                            const json_error_t *je, const char *where)
{
    enum json_error_code code = json_error_code(je);
    /* jansson returns NULL without a message only when its lexer cannot
     * allocate its buffer. */
    if (code == json_error_out_of_memory || je->text[0] == '\0') {
        return import_fail(d, COMMSCHED_ENOMEM, "%s: out of memory", file);
    }
    if (je->line <= 0) {
        return import_fail(d, COMMSCHED_EPARSE, "%s: %s", file, je->text);
    }
    if (je->line == 1 && je->position <= 3 &&
        strstr(je->text, "near '\xEF\xBB\xBF")) {
        return import_fail(d, COMMSCHED_EPARSE,
                           "%s:1:1: the text starts with a UTF-8 "
                           "byte order mark (bytes EF BB BF), which JSON does "
                           "not allow: save the file without it",
                           file);
    }
    return import_fail(d, COMMSCHED_EPARSE, "%s:%d:%d: %s%s", file, je->line,
                       je->column > 0 ? je->column : 1, je->text, where);
}

int trace_json_load(import_diag *d, const char *path, uint64_t max_memory,
                    json_t **out)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *file = is_stdin ? "<stdin>" : path;
    *out = NULL;
    int fd = is_stdin ? dup(0) : open(path, O_RDONLY);
    if (fd < 0) {
        return import_fail(d, COMMSCHED_EIO, "%s: cannot open: %s", file,
                           strerror(errno));
    }
    return trace_json_load_fd(d, fd, file, max_memory, out);
}

int trace_json_load_fd(import_diag *d, int fd, const char *file,
                       uint64_t max_memory, json_t **out)
{
    uint64_t limit = max_memory ? max_memory : TRACE_DEFAULT_MAX_MEMORY;
    *out = NULL;
    /* gzread passes uncompressed input through unchanged. */
    struct stat st = {0};
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return import_fail(d, COMMSCHED_EIO, "%s: cannot open: %s", file,
                           strerror(EISDIR));
    }
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        import_fail(d, COMMSCHED_EIO, "%s: cannot open: %s", file,
                    errno ? strerror(errno) : "out of memory");
        close(fd);
        return IMPORT_INPUT;
    }
    /* A pipe is read once and kept; a file twice (to count, to parse),
     * where rewinding fails (a FIFO given by name) it is kept too. */
    int keep = !S_ISREG(st.st_mode) || lseek(fd, 0, SEEK_CUR) != 0;
    uint64_t total = import_file_size(fd);
    import_progress(d, 0, total);
    char *text = NULL;
    size_t len = 0;
    int rc = scan_text(d, file, gz, total, keep, limit, &text, &len);
    json_error_t jerr;
    if (rc == 0 && keep) {
        *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    } else if (rc == 0) {
        if (gzrewind(gz) != 0) {
            rc = import_fail(d, COMMSCHED_EIO,
                             "%s: cannot read it again: %s", file,
                             strerror(errno));
        } else {
            gz_feed feed = {gz, d, total, 0, 0};
            *out = json_load_callback(gz_feed_read, &feed,
                                      JSON_REJECT_DUPLICATES, &jerr);
            /* The first read saw the whole stream without a gzip error. */
            if (!*out && feed.failed)
                rc = gz_status(d, file, gz, &feed);
        }
    }
    free(text);
    /* The reading stage ends (a pipe's total is what came). */
    import_progress(d, total ? total : (uint64_t)len, total ? total : len);
    if (rc == 0 && !*out)
        rc = trace_json_syntax_error(d, file, &jerr,
                                     gzdirect(gz) ? ""
                                                  : " (line of the decompressed "
                                                    "text)");
    if (rc != 0) {
        json_decref(*out);
        *out = NULL;
    }
    gzclose(gz);
    return rc;
}

unsigned trace_type_size(const char *name, commsched_dtype *dtype)
{
    static const struct {
        const char *n;
        unsigned size;
        commsched_dtype d;
    } t[] = {
        {"float", 4, COMMSCHED_DTYPE_FLOAT32},
        {"double", 8, COMMSCHED_DTYPE_FLOAT64},
        {"c10::Half", 2, COMMSCHED_DTYPE_FLOAT16},
        {"c10::BFloat16", 2, COMMSCHED_DTYPE_BFLOAT16},
        {"long", 8, COMMSCHED_DTYPE_INT64},
        {"long int", 8, COMMSCHED_DTYPE_INT64},
        {"int", 4, COMMSCHED_DTYPE_INT32},
        {"short", 2, COMMSCHED_DTYPE_INT16},
        {"signed char", 1, COMMSCHED_DTYPE_INT8},
        {"unsigned char", 1, COMMSCHED_DTYPE_UINT8},
        {"char", 1, COMMSCHED_DTYPE_INT8},
        {"bool", 1, COMMSCHED_DTYPE_BOOL},
        {"c10::Float8_e4m3fn", 1, COMMSCHED_DTYPE_FLOAT8_E4M3FN},
        {"c10::Float8_e5m2", 1, COMMSCHED_DTYPE_FLOAT8_E5M2},
        {"c10::complex<float>", 8, COMMSCHED_DTYPE_NONE},
        /* ScalarType names, as NCCL kernels' and record_param_comms'
         * "dtype" give them */
        {"Float", 4, COMMSCHED_DTYPE_FLOAT32},
        {"Double", 8, COMMSCHED_DTYPE_FLOAT64},
        {"Half", 2, COMMSCHED_DTYPE_FLOAT16},
        {"BFloat16", 2, COMMSCHED_DTYPE_BFLOAT16},
        {"Long", 8, COMMSCHED_DTYPE_INT64},
        {"Int", 4, COMMSCHED_DTYPE_INT32},
        {"Short", 2, COMMSCHED_DTYPE_INT16},
        {"Char", 1, COMMSCHED_DTYPE_INT8},
        {"Byte", 1, COMMSCHED_DTYPE_UINT8},
        {"Bool", 1, COMMSCHED_DTYPE_BOOL},
        {"Float8_e4m3fn", 1, COMMSCHED_DTYPE_FLOAT8_E4M3FN},
        {"Float8_e5m2", 1, COMMSCHED_DTYPE_FLOAT8_E5M2},
    };
    if (dtype)
        *dtype = COMMSCHED_DTYPE_NONE;
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].n) == 0) {
            if (dtype)
                *dtype = t[i].d;
            return t[i].size;
        }
    return 0;
}

double trace_number(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : -1;
}
