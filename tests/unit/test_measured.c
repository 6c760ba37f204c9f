/* commsched unit tests — measured costs (src/model/measured.c, docs/COST.md
 * "Measured costs"): the fit's medians, means and lines, every lookup
 * rule, the cost model taking them before its own, and the profile file
 * written and read back to the same figures, with located errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commsched/cost.h"
#include "testutil.h"

static void ok(commsched_status st, const commsched_error *err)
{
    if (st != COMMSCHED_OK)
        fail_msg("status %d: %s", (int)st, err ? err->text : "");
}

/* A kernel "mm" at positions 0 (10, 12, 100 ns: median 12) and 5 (40 ns),
 * "add" once; all_reduce over 4 ranks at 1000 B (10, 11, 12 ns: median
 * 11), 2000 B (21) and 4000 B (41): the line 1 ns + 0.01 ns/B exactly. */
static commsched_costs *sample_costs(void)
{
    commsched_costs *c = NULL;
    commsched_error err = {0};
    ok(commsched_costs_create(&c, &err), &err);
    static const double mm0[] = {10, 100, 12};
    for (int i = 0; i < 3; i++)
        ok(commsched_costs_add_kernel(c, "void mm<float>(float*, int)", 0,
                                      mm0[i], &err),
           &err);
    ok(commsched_costs_add_kernel(c, "mm<float>", 5, 40, &err), &err);
    ok(commsched_costs_add_kernel(c, "add", -1, 7, &err), &err);
    static const double ar[][2] = {{1000, 12}, {1000, 10}, {1000, 11},
                                   {2000, 21}, {4000, 41}};
    for (int i = 0; i < 5; i++)
        ok(commsched_costs_add_collective(c, COMMSCHED_COLL_ALL_REDUCE, 4,
                                          ar[i][0], ar[i][1], &err),
           &err);
    ok(commsched_costs_fit(c, &err), &err);
    return c;
}

static void test_measured_keys(void **state)
{
    (void)state;
    char buf[96];
    assert_string_equal(
        commsched_costs_key("12:void at::native::k<4>(float*)", buf,
                            sizeof buf),
        "at::native::k<4>");
    assert_int_equal(commsched_costs_position("12:void k(int)"), 12);
    assert_int_equal(commsched_costs_position("k:12"), -1);
    assert_int_equal(commsched_costs_position("buf3"), -1);
    /* cut at 80 bytes, never inside a UTF-8 character */
    char longname[200];
    memset(longname, 'a', 79);
    strcpy(longname + 79, "\xC3\xA9tail");
    assert_int_equal(strlen(commsched_costs_key(longname, buf, sizeof buf)),
                     79);
}

static void test_measured_kernel_lookups(void **state)
{
    (void)state;
    commsched_costs *c = sample_costs();
    double ns = -1;
    assert_int_equal(commsched_costs_kernel_count(c), 4); /* 2 keys, 2 pos */
    assert_int_equal(commsched_costs_kernel_samples(c), 5);
    assert_int_equal(commsched_costs_price_kernel(c, "mm<float>", 0, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == 12); /* the median of its steps, not 100's mean */
    assert_int_equal(commsched_costs_price_kernel(c, "mm<float>", 4, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == 40); /* position 5 is nearer */
    assert_int_equal(commsched_costs_price_kernel(c, "mm<float>", 2, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == 12);
    /* beyond the window, or no position: the key's mean */
    assert_int_equal(commsched_costs_price_kernel(c, "mm<float>", 200, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == (10 + 12 + 100 + 40) / 4.0);
    assert_int_equal(commsched_costs_price_kernel(c, "mm<float>", -1, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == (10 + 12 + 100 + 40) / 4.0);
    assert_int_equal(commsched_costs_price_kernel(c, "add", 3, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == 7);
    ns = -1;
    assert_int_equal(commsched_costs_price_kernel(c, "mm<double>", 0, &ns),
                     COMMSCHED_SOURCE_NONE);
    assert_true(ns == -1); /* untouched */
    commsched_costs_destroy(c);
}

static void test_measured_collective_lookups(void **state)
{
    (void)state;
    commsched_costs *c = sample_costs();
    double ns = -1;
    commsched_costs_collective_row r;
    assert_int_equal(commsched_costs_collective_count(c), 1);
    ok(commsched_costs_collective_at(c, 0, &r, NULL), NULL);
    assert_int_equal(r.sizes, 3);
    assert_int_equal(r.samples, 5);
    assert_true(r.has_line);
    assert_true(fabs(r.latency_ns - 1) < 1e-9);
    assert_true(fabs(r.bytes_per_ns - 100) < 1e-6);
    assert_true(r.fit_error < 1e-12);
    assert_int_equal(commsched_costs_collective_at(c, 1, &r, NULL),
                     COMMSCHED_EINVAL);

    commsched_coll_op ar = COMMSCHED_COLL_ALL_REDUCE;
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 1000, &ns),
                     COMMSCHED_SOURCE_MEASURED);
    assert_true(ns == 11);
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 1005, &ns),
                     COMMSCHED_SOURCE_MEASURED); /* within 1% */
    assert_true(ns == 11);
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 3000, &ns),
                     COMMSCHED_SOURCE_FITTED); /* between two points */
    assert_true(fabs(ns - 31) < 1e-9);
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 8000, &ns),
                     COMMSCHED_SOURCE_FITTED); /* the line, up to 2x */
    assert_true(fabs(ns - 81) < 1e-9);
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 500, &ns),
                     COMMSCHED_SOURCE_FITTED);
    assert_true(fabs(ns - 6) < 1e-9);
    /* the model's turn: past twice the largest, another group, another op */
    assert_int_equal(commsched_costs_price_collective(c, ar, 4, 8001, &ns),
                     COMMSCHED_SOURCE_NONE);
    assert_int_equal(commsched_costs_price_collective(c, ar, 8, 1000, &ns),
                     COMMSCHED_SOURCE_NONE);
    assert_int_equal(commsched_costs_price_collective(
                         c, COMMSCHED_COLL_ALL_GATHER, 4, 1000, &ns),
                     COMMSCHED_SOURCE_NONE);
    commsched_costs_destroy(c);
}

static void test_measured_bad_samples(void **state)
{
    (void)state;
    commsched_costs *c = NULL;
    commsched_error err = {0};
    ok(commsched_costs_create(&c, &err), &err);
    assert_int_equal(commsched_costs_add_kernel(c, "k", 0, -1, &err),
                     COMMSCHED_EINVAL);
    assert_int_equal(commsched_costs_add_kernel(c, "k", 0, NAN, &err),
                     COMMSCHED_EINVAL);
    assert_int_equal(commsched_costs_add_collective(
                         c, COMMSCHED_COLL_ALL_REDUCE, 0, 8, 1, &err),
                     COMMSCHED_EINVAL);
    assert_int_equal(commsched_costs_add_collective(
                         c, COMMSCHED_COLL_ALL_REDUCE, 2, -8, 1, &err),
                     COMMSCHED_EINVAL);
    commsched_costs_roofline bad = {-1, 0, 0, 0};
    assert_int_equal(commsched_costs_set_roofline(c, &bad, &err),
                     COMMSCHED_EINVAL);
    ok(commsched_costs_fit(c, &err), &err); /* empty tables fit */
    double ns;
    assert_int_equal(commsched_costs_price_kernel(c, "k", 0, &ns),
                     COMMSCHED_SOURCE_NONE);
    commsched_costs_destroy(c);
}

static const char *graph_json =
    "{\"format\": \"commsched-graph\", \"version\": 1, "
    "\"groups\": [{\"name\": \"dp\", \"size\": 4}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 2000}],"
    "\"nodes\": ["
    " {\"name\": \"0:mm<float>\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    "  \"outputs\": [{\"name\": \"y\", \"size\": 2000}], \"runtime_ns\": 999},"
    " {\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    "  \"group\": \"dp\", \"inputs\": [\"y\"],"
    "  \"outputs\": [{\"name\": \"y_ar\", \"alias_of\": \"y\"}]},"
    " {\"name\": \"ar_wait\", \"kind\": \"wait\", \"inputs\": [\"y_ar\"],"
    "  \"outputs\": [{\"name\": \"z\", \"alias_of\": \"y_ar\"}]},"
    " {\"name\": \"gemm\", \"kind\": \"compute\", \"inputs\": [\"z\"],"
    "  \"outputs\": [{\"name\": \"w\", \"size\": 8}], \"flops\": 1e9}"
    "]}";

static commsched_node_cost node_cost(const commsched_graph *g,
                                     const char *name,
                                     const commsched_cost_options *o)
{
    commsched_node_cost nc;
    commsched_error err = {0};
    ok(commsched_cost_node(g, tu_node(g, name), o, NULL, &nc, &err), &err);
    return nc;
}

static void test_measured_prices_nodes(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(graph_json);
    commsched_costs *c = sample_costs();
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    o.measured = c;
    /* the file's runtime still wins ... */
    commsched_node_cost nc = node_cost(g, "0:mm<float>", &o);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_FILE);
    assert_true(nc.runtime_ns == 999);
    /* ... unless ignored: then its kernel at its position */
    o.ignore_runtime = 1;
    nc = node_cost(g, "0:mm<float>", &o);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_MEASURED);
    assert_true(nc.runtime_ns == 12);
    nc = node_cost(g, "ar", &o);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_MEASURED);
    assert_true(nc.runtime_ns == 21);
    assert_true(nc.model_ns > 0); /* the model's figure stays beside it */
    /* no table, no roofline: the model */
    nc = node_cost(g, "gemm", &o);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_MODEL);
    /* the roofline: 1e9 flop at 1e12 flop/s = 1 ms */
    commsched_costs_roofline roof = {1e12, 0, 3, 0};
    commsched_error err = {0};
    ok(commsched_costs_set_roofline(c, &roof, &err), &err);
    nc = node_cost(g, "gemm", &o);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_FITTED);
    assert_true(fabs(nc.runtime_ns - 1e6) < 1e-6);

    /* a trace's tables over a profile's: the first that knows wins */
    commsched_costs *top = NULL;
    ok(commsched_costs_create(&top, &err), &err);
    ok(commsched_costs_add_kernel(top, "mm<float>", 0, 3, &err), &err);
    ok(commsched_costs_fit(top, &err), &err);
    commsched_costs_set_fallback(top, c);
    o.measured = top;
    assert_true(node_cost(g, "0:mm<float>", &o).runtime_ns == 3);
    assert_true(node_cost(g, "ar", &o).runtime_ns == 21);
    assert_int_equal(node_cost(g, "gemm", &o).source,
                     COMMSCHED_SOURCE_FITTED);

    uint32_t counts[COMMSCHED_SOURCE_COUNT] = {1, 2, 3, 4, 5};
    char text[160];
    assert_string_equal(
        commsched_cost_sources_text(counts, text, sizeof text),
        "2 from the file, 3 from the model, 4 measured, 5 fitted, 1 with "
        "nothing to go on");
    counts[COMMSCHED_SOURCE_MEASURED] = counts[COMMSCHED_SOURCE_FITTED] = 0;
    assert_string_equal(
        commsched_cost_sources_text(counts, text, sizeof text),
        "2 from the file, 3 from the model, 1 with nothing to go on");
    commsched_costs_destroy(top);
    commsched_costs_destroy(c);
    commsched_graph_destroy(g);
}

static void test_measured_profile_round_trip(void **state)
{
    (void)state;
    commsched_costs *c = sample_costs();
    commsched_error err = {0};
    commsched_costs_roofline roof = {1.234567890123e14, 2.5e12, 7, 9};
    ok(commsched_costs_set_roofline(c, &roof, &err), &err);
    char path[] = "/tmp/commsched-measured-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    commsched_device d = *commsched_device_builtin("a100");
    ok(commsched_profile_save(f, &d, c, &err), &err);
    fclose(f);

    commsched_device back;
    ok(commsched_device_load_file(path, &back, &err), &err);
    assert_string_equal(back.name, "a100");
    assert_true(back.peak_flops == d.peak_flops);
    assert_true(back.mem_bw == d.mem_bw);
    commsched_costs *r = NULL;
    ok(commsched_costs_load_file(path, &r, &err), &err);
    assert_non_null(r);
    static const double sizes[] = {1000, 1005, 3000, 8000, 500, 8001};
    for (int i = 0; i < 6; i++) {
        double a = -1, b = -1;
        assert_int_equal(
            commsched_costs_price_collective(c, COMMSCHED_COLL_ALL_REDUCE,
                                             4, sizes[i], &a),
            commsched_costs_price_collective(r, COMMSCHED_COLL_ALL_REDUCE,
                                             4, sizes[i], &b));
        assert_true(a == b);
    }
    static const long pos[] = {0, 4, 200, -1};
    for (int i = 0; i < 4; i++) {
        double a = -1, b = -1;
        commsched_costs_price_kernel(c, "mm<float>", pos[i], &a);
        commsched_costs_price_kernel(r, "mm<float>", pos[i], &b);
        assert_true(a == b);
    }
    commsched_costs_roofline rb;
    assert_true(commsched_costs_get_roofline(r, &rb));
    assert_true(rb.flops_per_s == roof.flops_per_s);
    assert_true(rb.byte_kernels == 9);
    commsched_costs_destroy(r);
    commsched_costs_destroy(c);

    /* a built-in's name, or a profile without "measured": no tables */
    ok(commsched_costs_load_file("h100", &r, &err), &err);
    assert_null(r);
    unlink(path);
}

/* The file's "measured" member, mangled: each error names its field. */
static void bad_profile(const char *measured, commsched_status want,
                        const char *want_path)
{
    char path[] = "/tmp/commsched-badmeasured-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"format\": \"commsched-device\", \"version\": 1, "
               "\"base\": \"h100\", \"measured\": %s}\n",
            measured);
    fclose(f);
    commsched_costs *c = (commsched_costs *)1;
    commsched_error err = {0};
    assert_int_equal(commsched_costs_load_file(path, &c, &err), want);
    assert_null(c);
    if (strcmp(err.path, want_path) != 0)
        fail_msg("%s: path \"%s\", want \"%s\" (%s)", measured, err.path,
                 want_path, err.text);
    unlink(path);
}

static void test_measured_bad_profiles(void **state)
{
    (void)state;
    bad_profile("[]", COMMSCHED_ESCHEMA, "measured");
    bad_profile("{\"kernel\": []}", COMMSCHED_ESCHEMA, "measured.kernel");
    bad_profile("{\"kernels\": [{\"name\": \"k\", \"ns\": -1}]}",
                COMMSCHED_ESCHEMA, "measured.kernels[0].ns");
    bad_profile("{\"kernels\": [{\"name\": \"k\"}]}", COMMSCHED_ESCHEMA,
                "measured.kernels[0].ns");
    bad_profile("{\"kernels\": [{\"name\": \"k(int)\", \"ns\": 1}]}",
                COMMSCHED_ESCHEMA, "measured.kernels[0].name");
    bad_profile("{\"kernels\": [{\"name\": \"k\", \"position\": 1.5, "
                "\"ns\": 1}]}",
                COMMSCHED_ESCHEMA, "measured.kernels[0].position");
    bad_profile("{\"kernels\": [{\"name\": \"k\", \"ns\": 1}, "
                "{\"name\": \"a\", \"ns\": 1}]}",
                COMMSCHED_ESCHEMA, "measured.kernels[1]");
    bad_profile("{\"collectives\": [{\"op\": \"allreduce\", \"ranks\": 2, "
                "\"points\": [{\"bytes\": 1, \"ns\": 1}]}]}",
                COMMSCHED_ESCHEMA, "measured.collectives[0].op");
    bad_profile("{\"collectives\": [{\"op\": \"all_reduce\", \"ranks\": 0, "
                "\"points\": [{\"bytes\": 1, \"ns\": 1}]}]}",
                COMMSCHED_ESCHEMA, "measured.collectives[0].ranks");
    bad_profile("{\"collectives\": [{\"op\": \"all_reduce\", \"ranks\": 2, "
                "\"points\": []}]}",
                COMMSCHED_ESCHEMA, "measured.collectives[0].points");
    bad_profile("{\"collectives\": [{\"op\": \"all_reduce\", \"ranks\": 2, "
                "\"points\": [{\"bytes\": 9, \"ns\": 1}, "
                "{\"bytes\": 9, \"ns\": 2}]}]}",
                COMMSCHED_ESCHEMA, "measured.collectives[0].points[1]");
    bad_profile("{\"roofline\": {\"peak_flops\": \"fast\"}}",
                COMMSCHED_ESCHEMA, "measured.roofline.peak_flops");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_keys),
        cmocka_unit_test(test_measured_kernel_lookups),
        cmocka_unit_test(test_measured_collective_lookups),
        cmocka_unit_test(test_measured_bad_samples),
        cmocka_unit_test(test_measured_prices_nodes),
        cmocka_unit_test(test_measured_profile_round_trip),
        cmocka_unit_test(test_measured_bad_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
