/* Plain or gzip JSON traces (trace_json.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
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

int trace_json_load(const char *path, json_t **out)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *file = is_stdin ? "<stdin>" : path;
    *out = NULL;
    /* gzread passes uncompressed input through unchanged. The file is
     * opened by cli_open_input, which words a missing file or a directory
     * as every subcommand does. */
    FILE *f = cli_open_input(path);
    if (!f)
        return EXIT_INPUT;
    gzFile gz = gzdopen(dup(fileno(f)), "rb");
    if (f != stdin)
        fclose(f);
    if (!gz) {
        fprintf(stderr, "commsched: %s: cannot open: %s\n", file,
                errno ? strerror(errno) : "out of memory");
        return EXIT_INPUT;
    }
    int compressed = 0;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    int rc = 0;
    for (;;) {
        if (!buf) {
            fprintf(stderr, "commsched: out of memory\n");
            rc = EXIT_RUNTIME;
            break;
        }
        if (len == cap) {
            if (cap >= MAX_TRACE_BYTES) {
                fprintf(stderr,
                        "commsched: %s: more than %zu bytes of JSON\n", file,
                        MAX_TRACE_BYTES);
                rc = EXIT_INPUT;
                break;
            }
            char *t = realloc(buf, cap * 2);
            if (!t) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = t;
            cap *= 2;
        }
        unsigned want = (unsigned)((cap - len) > (1u << 30) ? (1u << 30)
                                                             : (cap - len));
        int got = gzread(gz, buf + len, want);
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(gz, &zerr);
            fprintf(stderr, "commsched: %s: gzip: %s\n", file, msg);
            rc = EXIT_INPUT;
            break;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    compressed = !gzdirect(gz);
    gzclose(gz);
    if (rc == 0) {
        json_error_t jerr;
        *out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!*out) {
            if (jerr.line > 0)
                fprintf(stderr, "commsched: %s:%d:%d: %s%s\n", file,
                        jerr.line, jerr.column, jerr.text,
                        compressed ? " (line of the decompressed text)" : "");
            else
                fprintf(stderr, "commsched: %s: %s\n", file, jerr.text);
            rc = EXIT_INPUT;
        }
    }
    free(buf);
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
