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

#include "cli.h"
#include "progress.h"
#include "trace_json.h"

/* A decompressed trace larger than this is refused rather than let a
 * gzip bomb take the machine's memory. */
#define MAX_TRACE_BYTES ((size_t)4 << 30)

int trace_fail(const char *file, const char *path, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    commsched_error err = {0};
    commsched_error_set(&err, COMMSCHED_ESCHEMA, path, "%s", text);
    return cli_report(file, &err);
}

/* jansson pulls the decompressed text through this as it parses, so the
 * trace is never held twice and the progress line follows the file. */
typedef struct gz_feed {
    gzFile gz;
    cli_progress *progress;
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
    cli_progress_set(f->progress, at > 0 ? (uint64_t)at : f->len);
    return (size_t)got;
}

int trace_json_syntax_error(const char *file, const json_error_t *je,
                            const char *where)
{
    enum json_error_code code = json_error_code(je);
    /* jansson returns NULL without a message only when its lexer cannot
     * allocate its buffer. */
    if (code == json_error_out_of_memory || je->text[0] == '\0') {
        fprintf(stderr, "commsched: %s: out of memory\n", file);
        return EXIT_RUNTIME;
    }
    if (je->line <= 0) {
        fprintf(stderr, "commsched: %s: %s\n", file, je->text);
        return EXIT_INPUT;
    }
    if (je->line == 1 && je->position <= 3 &&
        strstr(je->text, "near '\xEF\xBB\xBF")) {
        fprintf(stderr, "commsched: %s:1:1: the text starts with a UTF-8 "
                        "byte order mark (bytes EF BB BF), which JSON does "
                        "not allow: save the file without it\n",
                file);
        return EXIT_INPUT;
    }
    fprintf(stderr, "commsched: %s:%d:%d: %s%s\n", file, je->line,
            je->column > 0 ? je->column : 1, je->text, where);
    return EXIT_INPUT;
}

int trace_json_load(const char *path, json_t **out)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *file = is_stdin ? "<stdin>" : path;
    *out = NULL;
    /* gzread passes uncompressed input through unchanged. */
    int fd = is_stdin ? dup(0) : open(path, O_RDONLY);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        fd = -1;
        errno = EISDIR;
    }
    gzFile gz = fd < 0 ? NULL : gzdopen(fd, "rb");
    if (!gz) {
        fprintf(stderr, "commsched: %s: cannot open: %s\n", file,
                errno ? strerror(errno) : "out of memory");
        if (fd >= 0)
            close(fd);
        return EXIT_INPUT;
    }
    cli_progress progress;
    const char *slash = strrchr(file, '/');
    cli_progress_begin(&progress, NULL, cli_file_size(fd),
                       "commsched import: reading %s",
                       slash ? slash + 1 : file);
    gz_feed feed = {gz, &progress, 0, 0};
    json_error_t jerr;
    *out = json_load_callback(gz_feed_read, &feed, JSON_REJECT_DUPLICATES,
                              &jerr);
    /* A damaged .gz can decompress to text the parser rejects before zlib
     * sees the damage (the check is at the end): the file's real fault is
     * the gzip error, so read on for it before blaming the JSON. */
    char scratch[65536];
    while (!*out && !feed.failed) {
        size_t got = gz_feed_read(scratch, sizeof scratch, &feed);
        if (got == 0 || got == (size_t)-1)
            break;
    }
    cli_progress_end(&progress);
    int rc = 0;
    if (feed.failed == 1) {
        int zerr;
        const char *msg = gzerror(gz, &zerr);
        const char *fdname = strstr(msg, ">: "); /* "<fd:3>: " says nothing */
        if (strncmp(msg, "<fd:", 4) == 0 && fdname)
            msg = fdname + 3;
        fprintf(stderr, "commsched: %s: gzip: %s\n", file, msg);
        rc = EXIT_INPUT;
    } else if (feed.failed == 2) {
        fprintf(stderr, "commsched: %s: more than %zu bytes of JSON\n", file,
                MAX_TRACE_BYTES);
        rc = EXIT_INPUT;
    } else if (!*out) {
        rc = trace_json_syntax_error(file, &jerr,
                                     gzdirect(gz) ? ""
                                                  : " (line of the decompressed "
                                                    "text)");
    }
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
