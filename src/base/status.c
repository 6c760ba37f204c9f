/* commsched — status strings and the first-error-wins error struct. */
#include "commsched/status.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"
#include "util.h"

const char *commsched_status_str(commsched_status status)
{
    switch (status) {
#define XX(code, text)                                                         \
    case COMMSCHED_##code:                                                     \
        return text;
        COMMSCHED_STATUS_MAP(XX)
#undef XX
    }
    return "unknown status";
}

const char *commsched_status_name(commsched_status status)
{
    switch (status) {
#define XX(code, text)                                                         \
    case COMMSCHED_##code:                                                     \
        return #code;
        COMMSCHED_STATUS_MAP(XX)
#undef XX
    }
    return "UNKNOWN";
}

void commsched_error_clear(commsched_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

commsched_status commsched_error_set(commsched_error *err,
                                     commsched_status status, const char *path,
                                     const char *fmt, ...)
{
    if (!err || err->status != COMMSCHED_OK)
        return status;
    err->status = status;
    err->line = err->column = 0;
    int n = snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    cs_utf8_trim(err->path, sizeof err->path, n);
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    /* A name cut at the end of the text is cut between characters. */
    cs_utf8_trim(err->text, sizeof err->text, n);
    return status;
}

char *commsched_error_format(const commsched_error *err, const char *file,
                             char *buf, unsigned long size)
{
    const char *f = file ? file : "";
    const char *sep = file ? ": " : "";
    int n;
    if (size == 0)
        return buf;
    if (!err || err->status == COMMSCHED_OK)
        n = snprintf(buf, size, "%s%sno error", f, sep);
    else if (err->line > 0)
        n = snprintf(buf, size, "%s:%d:%d: %s", file ? file : "<input>",
                     err->line, err->column, err->text);
    else if (err->path[0])
        n = snprintf(buf, size, "%s%s%s: %s", f, sep, err->path, err->text);
    else
        n = snprintf(buf, size, "%s%s%s", f, sep, err->text);
    return cs_utf8_trim(buf, size, n);
}

size_t commsched_utf8_cut(const char *s, size_t max)
{
    return cs_utf8_cut(s, max);
}

int commsched_utf8_valid(const char *s) { return cs_utf8_valid(s); }

/* All of f, doubling the buffer (with room for the NUL); NULL with *oom
 * set when memory ran out, or with errno set on a read error. */
static char *read_stream(FILE *f, size_t *len, int *oom)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    *oom = !buf;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap > SIZE_MAX / 2 - 1 ? NULL
                                              : realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            *oom = 1;
            return NULL;
        }
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

commsched_status commsched_read_file(const char *path, char **text,
                                     size_t *len, commsched_error *err)
{
    *text = NULL;
    if (len)
        *len = 0;
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : cs_fopen_input(path);
    if (!f)
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot open: %s", strerror(errno));
    size_t n = 0;
    int oom;
    char *buf = read_stream(f, &n, &oom);
    int saved = errno;
    if (!is_stdin)
        fclose(f);
    if (!buf)
        return oom ? commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory")
                   : commsched_error_set(err, COMMSCHED_EIO, NULL,
                                         "cannot read: %s", strerror(saved));
    *text = buf;
    if (len)
        *len = n;
    return COMMSCHED_OK;
}

/* Names that stand for an already open descriptor: writing them must
 * reach that descriptor, whatever kind of file it is (even a regular file,
 * which rename() would replace behind the shell's back). */
static int descriptor_name(const char *path)
{
    return strcmp(path, "/dev/stdout") == 0 ||
           strcmp(path, "/dev/stderr") == 0 ||
           strncmp(path, "/dev/fd/", 8) == 0 ||
           strncmp(path, "/proc/self/fd/", 14) == 0;
}

static commsched_status cannot_write(commsched_error *err, int e)
{
    errno = e;
    return commsched_error_set(err, COMMSCHED_EIO, NULL, "cannot write: %s",
                               strerror(e));
}

commsched_status commsched_output_target(const char *path, char *target,
                                         unsigned long size, int *in_place,
                                         int *exists, unsigned *mode,
                                         commsched_error *err)
{
    *in_place = *exists = 0;
    *mode = 0;
    if (strlen(path) >= size)
        return cannot_write(err, ENAMETOOLONG);
    snprintf(target, size, "%s", path);
    if (descriptor_name(path)) {
        *in_place = 1;
        return COMMSCHED_OK;
    }
    /* Follow the links as the kernel would, keeping where the chain ends
     * even when nothing is there (a dangling link: the shell's `>`
     * creates the file it names). */
    struct stat st;
    for (int hops = 0;; hops++) {
        if (lstat(target, &st) != 0) {
            if (errno != ENOENT)
                return cannot_write(err, errno);
            break;
        }
        if (!S_ISLNK(st.st_mode)) {
            *exists = 1;
            break;
        }
        if (hops == 40)
            return cannot_write(err, ELOOP);
        char link[4096];
        ssize_t n = readlink(target, link, sizeof link - 1);
        if (n < 0)
            return cannot_write(err, errno);
        link[n] = '\0';
        const char *slash = strrchr(target, '/');
        size_t dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - target) + 1;
        if (dir + (size_t)n >= size || dir + (size_t)n >= sizeof link)
            return cannot_write(err, ENAMETOOLONG);
        memmove(target + dir, link, (size_t)n + 1);
    }
    if (!*exists) {
        mode_t mask = umask(0);
        umask(mask);
        *mode = 0666u & ~(unsigned)mask;
        return COMMSCHED_OK;
    }
    if (stat(target, &st) != 0)
        return cannot_write(err, errno);
    if (!S_ISREG(st.st_mode)) {
        *in_place = 1;
        return COMMSCHED_OK;
    }
    /* Renaming over it would succeed where opening it for writing fails
     * (the directory is writable, the file is not): refuse as `>` does. */
    if (access(target, W_OK) != 0)
        return cannot_write(err, errno);
    *mode = (unsigned)st.st_mode & 07777u;
    return COMMSCHED_OK;
}

/* Longest word or name the suggestion compares (every table name is far
 * shorter; longer user input is not a misspelling of one). */
#define SUGGEST_MAX 64

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

/* The optimal-string-alignment distance (Levenshtein plus adjacent swaps)
 * between a[0..la) and b[0..lb), both at most SUGGEST_MAX long: three
 * rows of the dynamic programme, on the stack. */
static size_t edit_distance(const char *a, size_t la, const char *b,
                            size_t lb)
{
    size_t rows[3][SUGGEST_MAX + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int same = lower(a[i - 1]) == lower(b[j - 1]);
            size_t d = prev[j - 1] + (same ? 0 : 1);
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

size_t commsched_name_suggest(const char *word, size_t len,
                              const char *const *names, size_t count,
                              size_t stride)
{
    if (!word || !names || len == 0 || len > SUGGEST_MAX ||
        memchr(word, '\0', len))
        return SIZE_MAX;
    size_t limit = len / 3 > 1 ? len / 3 : 1, best = SIZE_MAX;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        const char *name =
            *(const char *const *)((const char *)names + i * stride);
        size_t ln = name ? strlen(name) : 0;
        if (ln == 0 || ln > SUGGEST_MAX)
            continue;
        size_t d = edit_distance(word, len, name, ln);
        /* "gen" for "generate": a prefix is as good as one typo. */
        if (d > 1 && len >= 3 && len < ln && strncmp(name, word, len) == 0)
            d = 1;
        if (d <= limit && d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}
