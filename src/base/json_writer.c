/* commsched — the one JSON writer (json_writer.h). */
#include "json_writer.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/config.h"
#include "fmt_g.h"
#include "utf8.h"
#if COMMSCHED_HAVE_OPENMP
#include <omp.h>
#endif

/* n bytes onto the stream, or onto a memory writer's text. */
static void sink(cs_jw *w, const char *s, size_t n)
{
    if (w->f) {
        if (fwrite(s, 1, n, w->f) != n && !w->error)
            w->error = CS_JW_EIO;
        return;
    }
    if (n > w->mem_cap - w->mem_len) {
        size_t cap = w->mem_cap ? w->mem_cap : CS_JW_BUFFER;
        while (cap - w->mem_len < n && cap <= SIZE_MAX / 2)
            cap *= 2;
        char *m = cap - w->mem_len >= n ? realloc(w->mem, cap) : NULL;
        if (!m) {
            if (!w->error)
                w->error = CS_JW_ENOMEM;
            return;
        }
        w->mem = m;
        w->mem_cap = cap;
    }
    memcpy(w->mem + w->mem_len, s, n);
    w->mem_len += n;
}

static void flush(cs_jw *w)
{
    if (w->len)
        sink(w, w->buf, w->len);
    w->len = 0;
}

static void put(cs_jw *w, const char *s, size_t n)
{
    if (n > CS_JW_BUFFER - w->len) {
        flush(w);
        if (n > CS_JW_BUFFER) {
            sink(w, s, n);
            return;
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void put_c(cs_jw *w, char c)
{
    if (w->len == CS_JW_BUFFER)
        flush(w);
    w->buf[w->len++] = c;
}

static void put_s(cs_jw *w, const char *s) { put(w, s, strlen(s)); }

static void fail(cs_jw *w, cs_jw_error e)
{
    if (!w->error)
        w->error = e;
}

void cs_jw_init(cs_jw *w, FILE *f)
{
    w->f = f;
    w->mem = NULL;
    w->mem_len = w->mem_cap = 0;
    w->len = 0;
    w->error = CS_JW_OK;
    w->depth = w->base = 0;
    memset(&w->levels[0], 0, sizeof w->levels[0]);
    cs_jw_layout(w, " ", ": ");
}

void cs_jw_layout(cs_jw *w, const char *sep, const char *colon)
{
    size_t ns = strlen(sep), nc = strlen(colon);
    if (ns > UCHAR_MAX || nc > UCHAR_MAX) {
        fail(w, CS_JW_ENEST);
        return;
    }
    cs_jw_level *l = &w->levels[w->depth];
    l->sep = sep;
    l->colon = colon;
    l->sep_len = (unsigned char)ns;
    l->colon_len = (unsigned char)nc;
}

void cs_jw_indent(cs_jw *w, int width)
{
    if (width < 1 || width > 31)
        fail(w, CS_JW_ENEST);
    else
        w->levels[w->depth].indent = (unsigned char)width;
}

/* A newline and `depth` levels of l's indent. */
static void put_indent(cs_jw *w, const cs_jw_level *l, int depth)
{
    static const char spaces[] = "                                ";
    size_t n = (size_t)l->indent * (size_t)depth;
    put_c(w, '\n');
    for (; n > sizeof spaces - 1; n -= sizeof spaces - 1)
        put(w, spaces, sizeof spaces - 1);
    put(w, spaces, n);
}

/* What goes before an item of the innermost container: a comma after the
 * first, then its separator, or with an indent a new line every time. */
static void put_item_sep(cs_jw *w, const cs_jw_level *l)
{
    if (l->has_items)
        put_c(w, ',');
    if (l->indent)
        put_indent(w, l, w->depth);
    else if (l->has_items)
        put(w, l->sep, l->sep_len);
}

void cs_jw_raw(cs_jw *w, const char *s)
{
    if (!w->error)
        put_s(w, s);
}

/* Before a value: the comma and separator in an array; nothing after a key
 * (the key wrote them); an object's value needs its key first. Returns 0
 * when the value must not be written. */
static int begin_value(cs_jw *w)
{
    if (w->error)
        return 0;
    cs_jw_level *l = &w->levels[w->depth];
    if (l->is_object) {
        if (!l->after_key) {
            fail(w, CS_JW_ENEST);
            return 0;
        }
        l->after_key = 0;
        return 1;
    }
    if (w->depth == 0 && l->has_items) {
        fail(w, CS_JW_ENEST); /* one value per document */
        return 0;
    }
    if (w->depth > 0)
        put_item_sep(w, l);
    l->has_items = 1;
    return 1;
}

static void open_container(cs_jw *w, char c, unsigned char is_object)
{
    if (!begin_value(w))
        return;
    if (w->depth == CS_JW_MAX_DEPTH) {
        fail(w, CS_JW_ENEST);
        return;
    }
    const cs_jw_level *up = &w->levels[w->depth];
    cs_jw_level *l = &w->levels[++w->depth];
    l->sep = up->sep;
    l->colon = up->colon;
    l->sep_len = up->sep_len;
    l->colon_len = up->colon_len;
    l->indent = up->indent;
    l->is_object = is_object;
    l->has_items = 0;
    l->after_key = 0;
    put_c(w, c);
}

void cs_jw_object(cs_jw *w) { open_container(w, '{', 1); }
void cs_jw_array(cs_jw *w) { open_container(w, '[', 0); }

void cs_jw_end(cs_jw *w)
{
    if (w->error)
        return;
    cs_jw_level *l = &w->levels[w->depth];
    if (w->depth == 0 || l->after_key) {
        fail(w, CS_JW_ENEST);
        return;
    }
    if (l->indent && l->has_items)
        put_indent(w, l, w->depth - 1);
    put_c(w, l->is_object ? '}' : ']');
    w->depth--;
}

/* 1 for the bytes a string holds as they are: 0x20-0x7F but the quote
 * and the backslash (what jansson leaves unescaped below 0x80). One load
 * a byte where four compares were (the scan is most of a save's string
 * work: names are plain ASCII). */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

/* The quoted, escaped string. Runs of bytes that need no escape are copied
 * in one piece: names are almost always plain ASCII, and then the whole
 * string goes into the buffer with one test of its room. */
static void put_string(cs_jw *w, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)s, *run = p;
    while (plain[*p])
        p++;
    size_t plain_len = (size_t)(p - run);
    if (*p == 0 && plain_len + 2 <= CS_JW_BUFFER - w->len) {
        char *o = w->buf + w->len;
        o[0] = '"';
        memcpy(o + 1, s, plain_len);
        o[plain_len + 1] = '"';
        w->len += plain_len + 2;
        return;
    }
    put_c(w, '"');
    for (;;) {
        while (plain[*p])
            p++;
        unsigned c = *p;
        if (c >= 0x80) {
            size_t n = cs_utf8_seq(p);
            if (n == 0) {
                fail(w, CS_JW_EUTF8);
                return;
            }
            p += n;
            continue;
        }
        put(w, (const char *)run, (size_t)(p - run));
        if (c == 0)
            break;
        char esc[6] = {'\\', 0, '0', '0', 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        put(w, esc, n);
        run = ++p;
    }
    put_c(w, '"');
}

void cs_jw_key(cs_jw *w, const char *key)
{
    if (w->error)
        return;
    cs_jw_level *l = &w->levels[w->depth];
    if (!l->is_object || l->after_key) {
        fail(w, CS_JW_ENEST);
        return;
    }
    put_item_sep(w, l);
    l->has_items = 1;
    put_string(w, key);
    put(w, l->colon, l->colon_len);
    l->after_key = 1;
}

void cs_jw_string(cs_jw *w, const char *s)
{
    if (!s)
        cs_jw_null(w);
    else if (begin_value(w))
        put_string(w, s);
}

void cs_jw_null(cs_jw *w)
{
    if (begin_value(w))
        put(w, "null", 4);
}

void cs_jw_bool(cs_jw *w, int b)
{
    if (begin_value(w))
        put_s(w, b ? "true" : "false");
}

/* Digits of v, most significant first, into the end of buf[21]. */
static void put_u64(cs_jw *w, uint64_t v, int negative)
{
    char buf[1 + CS_FMT_G_SIZE] = "-";
    size_t n = cs_fmt_u64(buf + 1, v);
    put(w, negative ? buf : buf + 1, n + (negative != 0));
}

void cs_jw_int(cs_jw *w, int64_t v)
{
    if (begin_value(w))
        put_u64(w, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void cs_jw_uint(cs_jw *w, uint64_t v)
{
    if (begin_value(w))
        put_u64(w, v, 0);
}

void cs_jw_key_int(cs_jw *w, const char *key, int64_t v)
{
    cs_jw_key(w, key);
    cs_jw_int(w, v);
}

void cs_jw_key_string(cs_jw *w, const char *key, const char *s)
{
    cs_jw_key(w, key);
    cs_jw_string(w, s);
}

/* jansson's jsonp_dtostr: the C library's "%.*g" (not shortest digits),
 * marked as a real, exponent normalised. The library runs in the "C"
 * locale for numbers, as jansson assumes when it finds no localeconv. */
static void put_real(cs_jw *w, double d, int precision)
{
    char buf[CS_FMT_G_SIZE + 2];
    size_t len = cs_fmt_g(buf, d, precision ? precision : 17);
    char *e = memchr(buf, 'e', len);
    if (!e && !memchr(buf, '.', len)) {
        buf[len++] = '.';
        buf[len++] = '0';
    }
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        /* "e+05" -> "e5", "e-05" -> "e-5": %g always prints at least
         * one nonzero exponent digit. */
        memmove(start, end, (size_t)(buf + len - end));
        len -= (size_t)(end - start);
    }
    put(w, buf, len);
}

void cs_jw_real(cs_jw *w, double d, int precision)
{
    if (!isfinite(d))
        fail(w, CS_JW_ENUMBER);
    else if (begin_value(w))
        put_real(w, d, precision);
}

void cs_jw_number(cs_jw *w, double d, int precision)
{
    if (!isfinite(d))
        fail(w, CS_JW_ENUMBER);
    else if (d == floor(d) && fabs(d) < 9007199254740992.0)
        cs_jw_int(w, (int64_t)d);
    else
        cs_jw_real(w, d, precision);
}

/* "%.0f" of an integral double below 2^53 ("-0" for negative zero), as the
 * reports printed integral figures with printf. */
static void put_integral(cs_jw *w, double d)
{
    if (d == 0 && signbit(d))
        put(w, "-0", 2);
    else
        put_u64(w, d < 0 ? (uint64_t)-d : (uint64_t)d, d < 0);
}

void cs_jw_number_g(cs_jw *w, double d, int precision)
{
    if (!isfinite(d)) {
        fail(w, CS_JW_ENUMBER);
        return;
    }
    if (!begin_value(w))
        return;
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        put_integral(w, d);
        return;
    }
    char buf[CS_FMT_G_SIZE];
    put(w, buf, cs_fmt_g(buf, d, precision));
}

void cs_jw_number_g_or_null(cs_jw *w, double d, int precision)
{
    if (isfinite(d))
        cs_jw_number_g(w, d, precision);
    else
        cs_jw_null(w);
}

void cs_jw_json(cs_jw *w, const json_t *v, const char *sep,
                const char *colon)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        cs_jw_object(w);
        cs_jw_layout(w, sep, colon);
        json_object_foreach((json_t *)v, key, val) {
            cs_jw_key(w, key);
            cs_jw_json(w, val, sep, colon);
        }
        cs_jw_end(w);
        break;
    }
    case JSON_ARRAY:
        cs_jw_array(w);
        cs_jw_layout(w, sep, colon);
        for (size_t i = 0; i < json_array_size(v); i++)
            cs_jw_json(w, json_array_get(v, i), sep, colon);
        cs_jw_end(w);
        break;
    case JSON_STRING: cs_jw_string(w, json_string_value(v)); break;
    case JSON_INTEGER: cs_jw_int(w, (int64_t)json_integer_value(v)); break;
    case JSON_REAL: cs_jw_real(w, json_real_value(v), 0); break;
    case JSON_TRUE: cs_jw_bool(w, 1); break;
    case JSON_FALSE: cs_jw_bool(w, 0); break;
    case JSON_NULL: cs_jw_null(w); break;
    }
}

FILE *cs_jw_value_stream(cs_jw *w)
{
    if (!begin_value(w))
        return NULL;
    flush(w);
    return w->error ? NULL : w->f;
}

commsched_status cs_jw_finish(cs_jw *w)
{
    flush(w);
    if (!w->error && w->depth != w->base)
        w->error = CS_JW_ENEST;
    if (!w->error && w->f && ferror(w->f))
        w->error = CS_JW_EIO;
    switch (w->error) {
    case CS_JW_OK: return COMMSCHED_OK;
    case CS_JW_EIO: return COMMSCHED_EIO;
    case CS_JW_ENOMEM: return COMMSCHED_ENOMEM;
    default: return COMMSCHED_EINVAL;
    }
}

void cs_jw_init_memory(cs_jw *w) { cs_jw_init(w, NULL); }

void cs_jw_items_of(cs_jw *part, const cs_jw *w, int has_items)
{
    assert(!part->f && w->depth > 0 && !w->levels[w->depth].is_object);
    part->len = part->mem_len = 0;
    part->error = CS_JW_OK;
    part->depth = part->base = w->depth;
    memcpy(part->levels, w->levels,
           ((size_t)w->depth + 1) * sizeof part->levels[0]);
    part->levels[w->depth].has_items = has_items != 0;
}

void cs_jw_splice(cs_jw *w, cs_jw *part)
{
    assert(!part->f);
    if (!part->error && part->depth != part->base)
        part->error = CS_JW_ENEST; /* an item left open */
    if (part->error) {
        if (!w->error)
            w->error = part->error;
    } else if (!w->error) {
        if (part->mem_len)
            put(w, part->mem, part->mem_len);
        put(w, part->buf, part->len);
        /* Its items are the container's (an indented one closes on a line
         * of its own). Written only when it changes: cs_jw_array_items
         * sets it first, as other threads read w's levels. */
        cs_jw_level *l = &w->levels[w->depth];
        if (!l->has_items && part->levels[part->depth].has_items)
            l->has_items = 1;
    }
    part->len = part->mem_len = 0;
}

void cs_jw_release(cs_jw *w)
{
    free(w->mem);
    w->mem = NULL;
    w->mem_len = w->mem_cap = 0;
}

void cs_jw_array_items(cs_jw *w, size_t n, size_t per_part, int threaded,
                       cs_jw_item_fn item, const void *ctx)
{
    int nt = 1;
#if COMMSCHED_HAVE_OPENMP
    if (threaded && n > per_part && !omp_in_parallel())
        nt = omp_get_max_threads();
#else
    (void)threaded;
    (void)per_part;
#endif
    cs_jw *parts = nt > 1 && !w->error && w->depth > 0 &&
                           !w->levels[w->depth].is_object
                       ? malloc((size_t)nt * sizeof *parts)
                       : NULL;
    if (!parts) {
        for (size_t i = 0; i < n && !w->error; i++)
            item(w, i, ctx);
        return;
    }
#if COMMSCHED_HAVE_OPENMP
    int had = w->levels[w->depth].has_items;
    w->levels[w->depth].has_items = n > 0; /* before the threads read it */
    for (int t = 0; t < nt; t++)
        cs_jw_init_memory(&parts[t]);
    long np = (long)((n + per_part - 1) / per_part);
    /* Each part is made while the one before may still be waiting for its
     * turn: the ordered splices are the only serial work. */
#pragma omp parallel for ordered schedule(static, 1) num_threads(nt)
    for (long p = 0; p < np; p++) {
        cs_jw *pw = &parts[omp_get_thread_num()];
        size_t lo = (size_t)p * per_part;
        size_t hi = n - lo > per_part ? lo + per_part : n;
        cs_jw_items_of(pw, w, p > 0 || had);
        for (size_t i = lo; i < hi && !pw->error; i++)
            item(pw, i, ctx);
#pragma omp ordered
        cs_jw_splice(w, pw);
    }
    for (int t = 0; t < nt; t++)
        cs_jw_release(&parts[t]);
#endif
    free(parts);
}
