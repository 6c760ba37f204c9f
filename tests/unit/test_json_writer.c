/* The one JSON writer (src/base/json_writer.h): escaping and numbers
 * checked against jansson itself (the files it replaced jansson in must
 * stay byte-identical), UTF-8 validation, nesting and layout, misuse, and
 * a stream that refuses writes; the integer formatter behind its numbers
 * (fmt_g.h) against printf on random values and every kind of tie. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_g.h"
#include "json_writer.h"

/* The next of Marsaglia's xorshift64 states: the tests' reproducible
 * random bit patterns. */
static void xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
}

/* Runs body on a fresh writer over a memory stream; returns the text
 * (caller frees) and the finish status. */
typedef void (*writer_body)(cs_jw *w, const void *arg);

static char *write_with(writer_body body, const void *arg,
                        commsched_status *st)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cs_jw *w = malloc(sizeof *w);
    assert_non_null(w);
    cs_jw_init(w, f);
    body(w, arg);
    *st = cs_jw_finish(w);
    free(w);
    fclose(f);
    return text;
}

static void body_string(cs_jw *w, const void *arg)
{
    cs_jw_string(w, arg);
}

/* jansson's own rendering of s as a JSON string (NULL: it refuses s). */
static char *jansson_string(const char *s)
{
    json_t *j = json_string(s);
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return text;
}

static void test_escapes_like_jansson(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "",
        "plain_name.0",
        "quote\" backslash\\ slash/",
        "\b\f\n\r\t",
        "\x01\x1f\x7f",
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        "\xe2\x80\xa8 line separator",
        "\xed\x9f\xbf edge of the surrogates",
        "\xf4\x8f\xbf\xbf last code point",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        commsched_status st;
        char *ours = write_with(body_string, cases[i], &st);
        char *ref = jansson_string(cases[i]);
        assert_int_equal(st, COMMSCHED_OK);
        assert_non_null(ref);
        assert_string_equal(ours, ref);
        free(ours);
        free(ref);
    }
    /* Every single byte and every pair of bytes, against jansson: each
     * either both accept and write the same text, or both refuse. */
    char s[3] = {0};
    for (unsigned a = 1; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            s[0] = (char)a;
            s[1] = (char)b;
            commsched_status st;
            char *ours = write_with(body_string, s, &st);
            char *ref = jansson_string(s);
            if (ref) {
                assert_int_equal(st, COMMSCHED_OK);
                assert_string_equal(ours, ref);
            } else {
                assert_int_equal(st, COMMSCHED_EINVAL);
            }
            free(ours);
            free(ref);
        }
}

static void test_invalid_utf8_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\x80",              /* a lone continuation byte */
        "\xc0\xaf",          /* overlong '/' */
        "\xc3",              /* truncated at the end */
        "\xe0\x80\xaf",      /* overlong, three bytes */
        "\xed\xa0\x80",      /* a surrogate */
        "\xf4\x90\x80\x80",  /* past U+10FFFF */
        "\xf5\x80\x80\x80",  /* never a lead byte */
        "ok\xff",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        commsched_status st;
        char *ours = write_with(body_string, bad[i], &st);
        assert_int_equal(st, COMMSCHED_EINVAL);
        assert_null(jansson_string(bad[i])); /* jansson agrees */
        free(ours);
    }
}

typedef struct num_case {
    double d;
    int precision;
} num_case;

static void body_real(cs_jw *w, const void *arg)
{
    const num_case *c = arg;
    cs_jw_real(w, c->d, c->precision);
}

static void body_number(cs_jw *w, const void *arg)
{
    const num_case *c = arg;
    cs_jw_number(w, c->d, c->precision);
}

static void check_real(double d, int precision)
{
    num_case c = {d, precision};
    commsched_status st;
    char *ours = write_with(body_real, &c, &st);
    json_t *j = json_real(d);
    /* json_dumps takes size_t flags; the precision is 1..17 */
    size_t digits = (size_t)(precision ? precision : 17);
    char *ref = json_dumps(j, JSON_ENCODE_ANY | JSON_REAL_PRECISION(digits));
    assert_int_equal(st, COMMSCHED_OK);
    assert_string_equal(ours, ref);
    free(ours);
    free(ref);
    json_decref(j);
}

static void test_numbers_like_jansson(void **state)
{
    (void)state;
    static const double fixed[] = {
        0.0, -0.0, 0.1, 1.0 / 3, 2.5, -7.25, 1e-5, 1.5e-300, 1e20, 1.5e20,
        123456789012.4, 9007199254740992.0, 9007199254740993.0, 1e300,
        DBL_MAX, DBL_MIN, 5e-324, -1e-7, 120000.0, 0.00012};
    static const int precisions[] = {0, 12, 17, 3};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++)
            check_real(fixed[i], precisions[p]);
    /* Random bit patterns cover every exponent. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 20000; i++) {
        xorshift(&x);
        double d;
        memcpy(&d, &x, sizeof d);
        if (isfinite(d))
            check_real(d, i % 2 ? 12 : 0);
    }
}

/* cs_fmt_g(d, p) is snprintf's "%.*g" byte for byte. */
static void check_fmt_g(double d, int p)
{
    char ours[CS_FMT_G_SIZE], ref[64];
    size_t len = cs_fmt_g(ours, d, p);
    snprintf(ref, sizeof ref, "%.*g", p, d);
    if (strcmp(ours, ref) != 0 || len != strlen(ref))
        fail_msg("%%.%dg of %a: ours \"%s\", printf \"%s\"", p, d, ours,
                 ref);
}

static void test_fmt_g_like_printf(void **state)
{
    (void)state;
    uint64_t x = 0xD1B54A32D192ED03u;
    /* Values spread evenly over the magnitudes of the integer path, 1e-4
     * to 1e17, and past both ends (printf's own path). */
    for (int i = 0; i < 40000; i++) {
        xorshift(&x);
        double u = (double)(x >> 11) / 9007199254740992.0;
        double d = pow(10.0, -6.0 + 24.0 * u);
        if (x & 1)
            d = -d;
        for (int p = 1; p <= 17; p++)
            check_fmt_g(d, p);
    }
    /* Halfway cases, where rounding half to even decides: odd / 2^s has an
     * exact decimal expansion ending in 5 (s fractional digits), a tie at
     * the precision one short of its significant digits. */
    for (int s = 0; s <= 44; s++)
        for (uint64_t odd = 1; odd < 4096; odd += 2 + 2 * (odd % 7)) {
            for (int shift = 0; shift <= 40; shift += 8) {
                double d = ldexp((double)((odd << shift) | 1), -s);
                for (int p = 1; p <= 17; p++)
                    check_fmt_g(d, p);
            }
        }
    /* Powers of ten and their neighbours, where log10's guess of the
     * exponent is off by one and rounding carries into a new digit. */
    for (int e = -6; e <= 18; e++) {
        double t = pow(10.0, e);
        double d = t;
        for (int k = 0; k < 4; k++)
            d = nextafter(d, 0);
        for (int k = 0; k < 9; k++, d = nextafter(d, INFINITY))
            for (int p = 1; p <= 17; p++) {
                check_fmt_g(d, p);
                check_fmt_g(d * 0.99999999, p);
                check_fmt_g(d * 0.9999999999999999, p);
            }
    }
    static const double edge[] = {0.0, -0.0, 5e-324, DBL_MIN, DBL_MAX,
                                  1e-4, 9.99999999999999e-5, 0.5, 1.5,
                                  2.5, 9007199254740991.0, 123456.5,
                                  99999999999999999.0, 9.5, 0.95, 0.095};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int p = 1; p <= 17; p++) {
            check_fmt_g(edge[i], p);
            check_fmt_g(-edge[i], p);
        }
}

/* cs_fmt_f0 is snprintf's "%.0f" (overlap's "hidden N%" text, values in
 * [0, 100]): every multiple of 1/1024 there (every tie k + 0.5 among
 * them), their neighbours, random values, and the ends. cs_fmt_u64 is
 * "%" PRIu64. */
static void check_fmt_f0(double d)
{
    char ours[CS_FMT_G_SIZE], ref[64];
    size_t len = cs_fmt_f0(ours, d);
    snprintf(ref, sizeof ref, "%.0f", d);
    if (strcmp(ours, ref) != 0 || len != strlen(ref))
        fail_msg("%%.0f of %a: ours \"%s\", printf \"%s\"", d, ours, ref);
}

static void test_fmt_f0_like_printf(void **state)
{
    (void)state;
    for (int i = 0; i <= 100 * 1024; i++) {
        double d = i / 1024.0;
        check_fmt_f0(d);
        check_fmt_f0(-d);
        check_fmt_f0(nextafter(d, INFINITY));
        check_fmt_f0(nextafter(d, -INFINITY));
        check_fmt_f0(100 * (d / 100)); /* as overlap computes it */
    }
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        xorshift(&x);
        double u = (double)(x >> 11) / 9007199254740992.0;
        check_fmt_f0(100 * u);
        check_fmt_f0(pow(10.0, -3.0 + 21.0 * u) * 0.999);
    }
    static const double edge[] = {0.0, -0.0, 0.5, 1.5, 2.5, 99.5, 100.5,
                                  0.49999999999999994, 4503599627370495.5,
                                  4503599627370496.0, 9007199254740993.0,
                                  9.99e18, 5e-324, INFINITY, -INFINITY,
                                  NAN, -NAN};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        check_fmt_f0(edge[i]);
        check_fmt_f0(-edge[i]);
    }
    static const uint64_t u[] = {0, 1, 9, 10, 99, 100, 4294967295u,
                                 4294967296u, UINT64_MAX};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        char ours[CS_FMT_G_SIZE], ref[32];
        size_t len = cs_fmt_u64(ours, u[i]);
        snprintf(ref, sizeof ref, "%llu", (unsigned long long)u[i]);
        assert_string_equal(ours, ref);
        assert_int_equal(len, strlen(ref));
    }
}

static void test_number_integral(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *text;
    } cases[] = {{120000, "120000"},
                 {0, "0"},
                 {-0.0, "0"},
                 {-42, "-42"},
                 {9007199254740991.0, "9007199254740991"},
                 {9007199254740992.0, "9007199254740992.0"},
                 {2.5, "2.5"},
                 {1e20, "1e20"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        num_case c = {cases[i].d, 17};
        commsched_status st;
        char *ours = write_with(body_number, &c, &st);
        assert_int_equal(st, COMMSCHED_OK);
        assert_string_equal(ours, cases[i].text);
        free(ours);
    }
    num_case nan_case = {NAN, 17}, inf_case = {INFINITY, 12};
    commsched_status st;
    free(write_with(body_number, &nan_case, &st));
    assert_int_equal(st, COMMSCHED_EINVAL);
    free(write_with(body_real, &inf_case, &st));
    assert_int_equal(st, COMMSCHED_EINVAL);
}

static void body_number_g(cs_jw *w, const void *arg)
{
    const num_case *c = arg;
    cs_jw_number_g(w, c->d, c->precision);
}

/* The reports' rows printed figures with printf ("%.0f" when integral,
 * else "%.12g"); cs_jw_number_g must give the same bytes. */
static void test_number_g_like_printf(void **state)
{
    (void)state;
    uint64_t x = 0x2545F4914F6CDD1Du;
    for (int i = 0; i < 20000; i++) {
        xorshift(&x);
        double d;
        if (i % 3 == 0)
            d = (double)(int64_t)(x % 2000000001u) - 1e9; /* integral */
        else if (i % 3 == 1)
            d = (double)(x >> 11) / 9007199254740992.0 * 1e-6; /* tiny */
        else
            memcpy(&d, &x, sizeof d);
        if (!isfinite(d))
            continue;
        char ref[64];
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            snprintf(ref, sizeof ref, "%.0f", d);
        else
            snprintf(ref, sizeof ref, "%.12g", d);
        num_case c = {d, 12};
        commsched_status st;
        char *ours = write_with(body_number_g, &c, &st);
        assert_int_equal(st, COMMSCHED_OK);
        assert_string_equal(ours, ref);
        free(ours);
    }
    num_case neg_zero = {-0.0, 12}, nan_case = {NAN, 12};
    commsched_status st;
    char *text = write_with(body_number_g, &neg_zero, &st);
    assert_string_equal(text, "-0");
    free(text);
    free(write_with(body_number_g, &nan_case, &st));
    assert_int_equal(st, COMMSCHED_EINVAL);
}

static void body_ints(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    cs_jw_int(w, INT64_MIN);
    cs_jw_int(w, INT64_MAX);
    cs_jw_int(w, -1);
    cs_jw_uint(w, UINT64_MAX);
    cs_jw_number_g_or_null(w, NAN, 12);
    cs_jw_number_g_or_null(w, 3.0, 12);
    cs_jw_end(w);
}

static void test_integers(void **state)
{
    (void)state;
    commsched_status st;
    char *text = write_with(body_ints, NULL, &st);
    assert_int_equal(st, COMMSCHED_OK);
    assert_string_equal(text, "[-9223372036854775808,9223372036854775807,-1,"
                              "18446744073709551615,null,3]");
    free(text);
}

/* Nesting, commas and layouts, against the text jansson writes for the
 * same document with the same separators. */
static void body_nested(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    cs_jw_key(w, "a");
    cs_jw_array(w);
    cs_jw_end(w);
    cs_jw_key(w, "b");
    cs_jw_object(w);
    cs_jw_end(w);
    cs_jw_key(w, "c");
    cs_jw_array(w);
    cs_jw_int(w, 1);
    cs_jw_object(w);
    cs_jw_key(w, "d");
    cs_jw_array(w);
    cs_jw_array(w);
    cs_jw_null(w);
    cs_jw_bool(w, 1);
    cs_jw_bool(w, 0);
    cs_jw_end(w);
    cs_jw_end(w);
    cs_jw_key(w, "e\n");
    cs_jw_string(w, "x");
    cs_jw_end(w);
    cs_jw_end(w);
    cs_jw_end(w);
}

static void test_nesting(void **state)
{
    (void)state;
    commsched_status st;
    char *text = write_with(body_nested, NULL, &st);
    assert_int_equal(st, COMMSCHED_OK);
    const char *doc =
        "{\"a\": [], \"b\": {}, \"c\": [1, {\"d\": [[null, true, false]], "
        "\"e\\n\": \"x\"}]}";
    json_t *j = json_loads(doc, 0, NULL);
    char *ref = json_dumps(j, 0);
    assert_string_equal(text, ref);
    assert_string_equal(text, doc);
    free(ref);
    json_decref(j);
    free(text);
}

static void body_json(cs_jw *w, const void *arg)
{
    cs_jw_json(w, arg, "", ":");
}

static void test_jansson_value(void **state)
{
    (void)state;
    const char *doc = "{\"z\":1,\"a\":[0.1,\"s\\u0001\",null,true,{}],"
                      "\"m\":{\"k\":-3,\"r\":1e-05}}";
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    commsched_status st;
    char *text = write_with(body_json, j, &st);
    char *ref = json_dumps(j, JSON_COMPACT);
    assert_int_equal(st, COMMSCHED_OK);
    assert_string_equal(text, ref);
    free(text);
    free(ref);
    json_decref(j);
}

/* A jansson value through the indented layout: jansson's JSON_INDENT(w)
 * byte for byte (nested and empty containers, keys, reals). */
typedef struct indented {
    const json_t *v;
    int width;
} indented;

static void body_indented(cs_jw *w, const void *arg)
{
    const indented *in = arg;
    cs_jw_layout(w, "", ": ");
    cs_jw_indent(w, in->width);
    cs_jw_json(w, in->v, "", ": ");
}

static void test_indent_like_jansson(void **state)
{
    (void)state;
    const char *docs[] = {
        ("[{\"pass\":\"x\",\"nodes\":[],\"m\":{},\"r\":[{\"a\":1.5,"
         "\"b\":null,\"c\":[1,[2,[]]]}],\"w\":0.0}]"),
        "[]", "{}", "{\"k\":[[]]}", "[1,2,{\"x\":{\"y\":\"z\"}}]"};
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++)
        for (int width = 1; width <= 3; width += 2) {
            json_t *j = json_loads(docs[d], 0, NULL);
            assert_non_null(j);
            indented in = {j, width};
            commsched_status st;
            char *text = write_with(body_indented, &in, &st);
            char *ref = json_dumps(j, JSON_INDENT(width));
            assert_int_equal(st, COMMSCHED_OK);
            assert_string_equal(text, ref);
            free(text);
            free(ref);
            json_decref(j);
        }
}

/* A value the caller writes straight onto the stream sits where the
 * writer's own would, with the writer's buffered text before it. */
static void body_value_stream(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    cs_jw_key(w, "a");
    cs_jw_int(w, 1);
    cs_jw_key(w, "b");
    FILE *f = cs_jw_value_stream(w);
    assert_non_null(f);
    fputs("{\"own\":[2]}", f);
    cs_jw_key(w, "c");
    cs_jw_array(w);
    cs_jw_int(w, 3);
    fputs("4", cs_jw_value_stream(w));
    cs_jw_end(w);
    cs_jw_end(w);
}

static void body_value_stream_misplaced(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    assert_null(cs_jw_value_stream(w)); /* no key */
    cs_jw_end(w);
}

static void test_value_stream(void **state)
{
    (void)state;
    commsched_status st;
    char *text = write_with(body_value_stream, NULL, &st);
    assert_int_equal(st, COMMSCHED_OK);
    assert_string_equal(text, "{\"a\": 1, \"b\": {\"own\":[2]}, \"c\": [3, 4]}");
    free(text);
    text = write_with(body_value_stream_misplaced, NULL, &st);
    assert_int_equal(st, COMMSCHED_EINVAL);
    free(text);
}

/* The items of one array: item i is an object with a string a little
 * longer each time, every 50th long enough (70 KB) to outgrow a writer's
 * own buffer, so memory writers grow their text. */
static void put_item(cs_jw *w, int i, char *big)
{
    size_t len = i % 50 == 49 ? 70000 : (size_t)i % 40;
    memset(big, 'a' + i % 26, len);
    big[len] = 0;
    cs_jw_object(w);
    cs_jw_key_int(w, "i", i);
    cs_jw_key_string(w, "s", big);
    cs_jw_end(w);
}

typedef struct parts_case {
    int per;      /* items per part; 0: one writer */
    int indent;   /* jansson's JSON_INDENT(1) instead of a layout */
    int helper;   /* through cs_jw_array_items (threaded) */
    int bad;      /* the item with an invalid name, or -1 */
} parts_case;

typedef struct items_ctx {
    int bad;
} items_ctx;

/* Items only read their context (they run on threads): each makes its
 * string in a buffer of its own. */
static void item_fn(cs_jw *w, size_t i, const void *ctx)
{
    const items_ctx *c = ctx;
    if ((int)i == c->bad) {
        cs_jw_string(w, "bad\xff");
        return;
    }
    char *big = malloc(70001);
    assert_non_null(big);
    put_item(w, (int)i, big);
    free(big);
}

static void body_parts(cs_jw *w, const void *arg)
{
    const parts_case *pc = arg;
    items_ctx ctx = {pc->bad};
    cs_jw_object(w);
    cs_jw_key(w, "items");
    cs_jw_array(w);
    if (pc->indent)
        cs_jw_indent(w, 1);
    else
        cs_jw_layout(w, "\n  ", ": ");
    if (pc->helper) {
        cs_jw_array_items(w, 200, (size_t)pc->per, 1, item_fn, &ctx);
    } else if (pc->per == 0) {
        for (int i = 0; i < 200; i++)
            item_fn(w, (size_t)i, &ctx);
    } else {
        cs_jw *part = malloc(sizeof *part);
        assert_non_null(part);
        cs_jw_init_memory(part);
        for (int lo = 0; lo < 200; lo += pc->per) {
            cs_jw_items_of(part, w, lo > 0);
            for (int i = lo; i < lo + pc->per && i < 200; i++)
                item_fn(part, (size_t)i, &ctx);
            cs_jw_splice(w, part);
        }
        cs_jw_release(part);
        free(part);
    }
    cs_jw_end(w);
    cs_jw_end(w);
}

/* A part that fails (invalid UTF-8, an object left open) passes its
 * error on; the parts after it write nothing. */
static void body_part_fails(cs_jw *w, const void *arg)
{
    int how = *(const int *)arg;
    cs_jw *part = malloc(sizeof *part);
    assert_non_null(part);
    cs_jw_init_memory(part);
    cs_jw_array(w);
    cs_jw_items_of(part, w, 0);
    cs_jw_int(part, 1);
    cs_jw_splice(w, part);
    cs_jw_items_of(part, w, 1);
    if (how == 0) {
        cs_jw_string(part, "bad\xff");
    } else {
        cs_jw_object(part);
        cs_jw_key_int(part, "open", 2);
    }
    cs_jw_splice(w, part);
    cs_jw_items_of(part, w, 1);
    cs_jw_int(part, 3);
    assert_int_equal(cs_jw_finish(part), COMMSCHED_OK); /* a fresh start */
    cs_jw_splice(w, part);
    cs_jw_end(w);
    cs_jw_release(part);
    free(part);
}

static void test_memory_parts(void **state)
{
    (void)state;
    commsched_status st;
    for (int indent = 0; indent < 2; indent++) {
        parts_case whole = {0, indent, 0, -1};
        char *ref = write_with(body_parts, &whole, &st);
        assert_int_equal(st, COMMSCHED_OK);
        assert_true(strlen(ref) > 200000);
        static const int per[] = {1, 7, 50, 199, 200, 500};
        for (size_t k = 0; k < sizeof per / sizeof per[0]; k++)
            for (int helper = 0; helper < 2; helper++) {
                parts_case pc = {per[k], indent, helper, -1};
                char *text = write_with(body_parts, &pc, &st);
                assert_int_equal(st, COMMSCHED_OK);
                assert_string_equal(text, ref);
                free(text);
            }
        free(ref);
    }
    for (int how = 0; how < 2; how++) {
        char *text = write_with(body_part_fails, &how, &st);
        assert_int_equal(st, COMMSCHED_EINVAL);
        assert_string_equal(text, "[1"); /* nothing after the failed part */
        free(text);
    }
    /* A failing item among threaded parts fails the document. */
    parts_case bad = {7, 0, 1, 120};
    char *text = write_with(body_parts, &bad, &st);
    assert_int_equal(st, COMMSCHED_EINVAL);
    free(text);
}

static void body_layout(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    cs_jw_layout(w, "\n ", ":");
    cs_jw_key(w, "rows");
    cs_jw_array(w);
    cs_jw_layout(w, "\n  ", ":");
    cs_jw_raw(w, "\n  ");
    cs_jw_int(w, 1);
    cs_jw_int(w, 2);
    cs_jw_raw(w, "\n ");
    cs_jw_end(w);
    cs_jw_key(w, "n");
    cs_jw_int(w, 3);
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
}

static void test_layout(void **state)
{
    (void)state;
    commsched_status st;
    char *text = write_with(body_layout, NULL, &st);
    assert_int_equal(st, COMMSCHED_OK);
    assert_string_equal(text, "{\"rows\":[\n  1,\n  2\n ],\n \"n\":3}\n");
    free(text);
}

static void body_key_in_array(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_array(w);
    cs_jw_key(w, "k");
    cs_jw_end(w);
}

static void body_value_without_key(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    cs_jw_int(w, 1);
    cs_jw_end(w);
}

static void body_unbalanced(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_array(w);
    cs_jw_end(w);
    cs_jw_end(w);
}

static void body_unclosed(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_object(w);
    cs_jw_key(w, "k");
}

static void body_too_deep(cs_jw *w, const void *arg)
{
    (void)arg;
    for (int i = 0; i <= CS_JW_MAX_DEPTH; i++)
        cs_jw_array(w);
    for (int i = 0; i <= CS_JW_MAX_DEPTH; i++)
        cs_jw_end(w);
}

static void body_two_values(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_int(w, 1);
    cs_jw_int(w, 2);
}

/* A separator longer than the 255 bytes a level keeps the length of. */
static void body_long_separator(cs_jw *w, const void *arg)
{
    (void)arg;
    static char sep[257];
    memset(sep, ' ', 256);
    cs_jw_array(w);
    cs_jw_layout(w, sep, ":");
    cs_jw_int(w, 1);
    cs_jw_int(w, 2);
    cs_jw_end(w);
}

static void test_misuse(void **state)
{
    (void)state;
    writer_body bodies[] = {body_key_in_array, body_value_without_key,
                            body_unbalanced, body_unclosed, body_too_deep,
                            body_two_values, body_long_separator};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        commsched_status st;
        free(write_with(bodies[i], NULL, &st));
        assert_int_equal(st, COMMSCHED_EINVAL);
    }
}

/* A document much larger than the buffer, written to a stream that
 * cannot take it (/dev/full), fails with EIO; the same to a file is the
 * text expected. */
static void body_big(cs_jw *w, const void *arg)
{
    (void)arg;
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    for (int i = 0; i < 100000; i++)
        cs_jw_string(w, "a string of some length, repeated");
    cs_jw_end(w);
}

static void test_io_failure(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    assert_non_null(full);
    cs_jw *w = malloc(sizeof *w);
    assert_non_null(w);
    cs_jw_init(w, full);
    body_big(w, NULL);
    assert_int_equal(cs_jw_finish(w), COMMSCHED_EIO);
    assert_int_equal(w->error, CS_JW_EIO);
    fclose(full);
    free(w);

    commsched_status st;
    char *text = write_with(body_big, NULL, &st);
    assert_int_equal(st, COMMSCHED_OK);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), 100000);
    json_decref(j);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_like_jansson),
        cmocka_unit_test(test_invalid_utf8_rejected),
        cmocka_unit_test(test_numbers_like_jansson),
        cmocka_unit_test(test_fmt_g_like_printf),
        cmocka_unit_test(test_fmt_f0_like_printf),
        cmocka_unit_test(test_number_integral),
        cmocka_unit_test(test_number_g_like_printf),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_jansson_value),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_indent_like_jansson),
        cmocka_unit_test(test_value_stream),
        cmocka_unit_test(test_memory_parts),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_io_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
