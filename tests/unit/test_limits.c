/* commsched unit tests — the format's limits (docs/FORMAT.md "Limits") and
 * what they protect: every figure the model derives stays finite and every
 * sum of sizes fits, whatever a caller or a file says.
 *
 * Each case reproduces a fuzzing finding (issue 21): a group of 2^32 - 1
 * ranks made the host count wrap to 0 and the cost model read out of
 * bounds; sizes near 2^63 wrapped the memory sums to a peak of 0; a device
 * profile with absurd rates priced nodes at infinity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "utf8.h"
#include "commsched/memory.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"
#include "graph_internal.h"
#include "testutil.h"

/* The API prices collectives for callers that never built a graph: a rank
 * count past the limit is refused, not wrapped into an out-of-bounds host
 * count (the fuzzer's SEGV). At the limit, hosts derive in 64 bits. */
static void test_cost_collective_rank_limit(void **state)
{
    (void)state;
    const commsched_device *d = commsched_device_builtin("h100");
    commsched_coll_cost c;
    commsched_error err = {0};
    for (int model = 0; model < 2; model++) {
        commsched_error_clear(&err);
        assert_int_equal(commsched_cost_collective(
                             d, (commsched_comm_model)model,
                             COMMSCHED_COLL_ALL_REDUCE, 1024.0, UINT32_MAX, 0,
                             &c, &err),
                         COMMSCHED_EINVAL);
        assert_non_null(strstr(err.text, "ranks"));
        commsched_error_clear(&err);
        assert_int_equal(commsched_cost_collective(
                             d, (commsched_comm_model)model,
                             COMMSCHED_COLL_ALL_REDUCE, 1024.0,
                             COMMSCHED_MAX_GROUP_SIZE, 0, &c, &err),
                         COMMSCHED_OK);
        assert_int_equal(c.hosts, COMMSCHED_MAX_GROUP_SIZE / 8);
        assert_true(isfinite(c.time_ns) && c.time_ns > 0);
    }
}

static commsched_status build_one(int64_t group_size, int64_t in_size,
                                  int64_t out_size, double runtime_ns,
                                  commsched_graph **g, commsched_error *err)
{
    commsched_builder *b = NULL;
    commsched_status st = commsched_builder_create("limits", &b, err);
    if (st != COMMSCHED_OK)
        return st;
    const char *in[] = {"x"};
    commsched_output_spec out = {.name = "y", .size = out_size};
    commsched_node_spec n;
    memset(&n, 0, sizeof n);
    n.name = "ar";
    n.kind = COMMSCHED_NODE_COLLECTIVE;
    n.op = "all_reduce";
    n.group = "dp";
    n.is_sync = 1;
    n.inputs = in;
    n.n_inputs = 1;
    n.outputs = &out;
    n.n_outputs = 1;
    n.runtime_ns = runtime_ns;
    n.flops = n.bytes = -1;
    commsched_builder_add_group(b, "dp", group_size, 0, err);
    commsched_builder_add_input(b, "x", in_size, 1, err);
    commsched_builder_add_node(b, &n, err);
    commsched_builder_add_output(b, "y", err);
    return commsched_builder_finish(b, 0, g, err); /* consumes b */
}

/* The builder API holds callers to the same limits as files, each with the
 * JSON path a file would get. */
static void test_builder_limits(void **state)
{
    (void)state;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    static const struct {
        int64_t group, in, out;
        double runtime;
        const char *path;
    } bad[] = {
        {(int64_t)UINT32_MAX, 8, 8, -1, "groups[0].size"},
        {COMMSCHED_MAX_GROUP_SIZE + 1, 8, 8, -1, "groups[0].size"},
        {8, COMMSCHED_MAX_SIZE + 1, 8, -1, "inputs[0].size"},
        {8, 8, INT64_MAX, -1, "nodes[0].outputs[0].size"},
        {8, COMMSCHED_MAX_SIZE, 1, -1, "nodes[0].outputs[0].size"},
        {8, 8, 8, 1e308, "nodes[0].runtime_ns"},
        {8, 8, 8, COMMSCHED_MAX_RUNTIME_NS * 2, "nodes[0].runtime_ns"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        commsched_error_clear(&err);
        assert_int_not_equal(build_one(bad[i].group, bad[i].in, bad[i].out,
                                       bad[i].runtime, &g, &err),
                             COMMSCHED_OK);
        assert_null(g);
        assert_string_equal(err.path, bad[i].path);
    }
    /* At the limits everything loads, estimates and simulates finitely. */
    commsched_error_clear(&err);
    assert_int_equal(build_one(COMMSCHED_MAX_GROUP_SIZE,
                               COMMSCHED_MAX_SIZE / 2, COMMSCHED_MAX_SIZE / 2,
                               -1, &g, &err),
                     COMMSCHED_OK);
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    double rt[1];
    assert_int_equal(commsched_cost_graph(g, &o, rt, NULL, &err),
                     COMMSCHED_OK);
    assert_true(isfinite(rt[0]));
    commsched_sim *sim = NULL;
    assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(sim, NULL, rt, NULL, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_sim_get_totals(sim)->peak_memory,
                     COMMSCHED_MAX_SIZE);
    commsched_sim_destroy(sim);
    commsched_graph_destroy(g);
}

/* Sums are checked even for graphs that did not come through the builder's
 * total (a pass or a caller editing sizes): a wrapped peak is refused. */
static void test_memory_sums_checked(void **state)
{
    (void)state;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    assert_int_equal(build_one(8, 8, 8, 1.0, &g, &err), COMMSCHED_OK);
    g->buffers[0].size = INT64_MAX - 4; /* x, freeable: the baseline */
    g->buffers[1].size = INT64_MAX - 4; /* y, allocated by ar */
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL;
    assert_int_equal(commsched_schedule_create(g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s, &m, &err), COMMSCHED_EGRAPH);
    assert_null(m);
    assert_non_null(strstr(err.text, "2^63"));
    commsched_sim *sim = NULL;
    double rt[1] = {1.0};
    commsched_error_clear(&err);
    assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(sim, NULL, rt, NULL, &err),
                     COMMSCHED_EGRAPH);
    commsched_sim_destroy(sim);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

/* A profile whose rates are valid but absurd prices a node past the limit:
 * refused with the node's location rather than summed to infinity. */
static void test_estimate_beyond_limit(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(
        "{\"format\": \"commsched-graph\", \"version\": 1, \"nodes\": "
        "[{\"name\": \"c\", \"kind\": \"compute\", \"flops\": 1e30}]}");
    commsched_device d = *commsched_device_builtin("h100");
    d.peak_flops = 1e-300;
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    o.device = &d;
    commsched_node_cost c;
    commsched_error err = {0};
    assert_int_equal(commsched_cost_node(g, 0, &o, NULL, &c, &err),
                     COMMSCHED_EINVAL);
    assert_string_equal(err.path, "nodes[0]");
    commsched_graph_destroy(g);
}

/* Each name that is not UTF-8 is reported at its own path (the paths are
 * formatted only on failure, so a stale one would show here). */
static void test_builder_utf8_paths(void **state)
{
    (void)state;
    const char *bad = "x\xff";
    for (int which = 0; which < 4; which++) {
        commsched_builder *b = NULL;
        commsched_error err = {0};
        assert_int_equal(commsched_builder_create("g", &b, &err), COMMSCHED_OK);
        commsched_output_spec o = {.name = "out", .size = 4};
        const char *in = "in";
        commsched_node_spec n;
        memset(&n, 0, sizeof n);
        n.name = "n";
        n.kind = COMMSCHED_NODE_COMPUTE;
        n.outputs = &o;
        n.n_outputs = 1;
        n.inputs = &in;
        n.n_inputs = 1;
        n.runtime_ns = n.flops = n.bytes = -1;
        static const char *const paths[] = {
            "nodes[0].outputs[0].name", "nodes[0].outputs[0].alias_of",
            "nodes[0].inputs[0]", "nodes[0].op"};
        if (which == 0)
            o.name = bad;
        else if (which == 1)
            o.alias_of = bad;
        else if (which == 2)
            in = bad;
        else
            n.op = bad;
        assert_int_equal(commsched_builder_add_node(b, &n, &err),
                         COMMSCHED_ESCHEMA);
        assert_string_equal(err.path, paths[which]);
        assert_string_equal(err.text, "not valid UTF-8");
        commsched_builder_destroy(b);
    }
}

/* Names must be UTF-8 whichever way they arrive (the JSON loader already
 * refused anything else; the importers and the API did not), so a graph
 * always saves. Valid non-ASCII names go through intact. */
static void test_builder_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\xff",         "ab\xc3",         "\xc0\x80", /* overlong NUL */
        "\xed\xa0\x80", /* a surrogate */ "\xf4\x90\x80\x80", /* > U+10FFFF */
        "\x80x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(cs_utf8_valid(bad[i]));
        commsched_builder *b = NULL;
        commsched_error err = {0};
        commsched_graph *g = NULL;
        assert_int_equal(commsched_builder_create("g", &b, &err), COMMSCHED_OK);
        commsched_node_spec n;
        memset(&n, 0, sizeof n);
        n.name = bad[i];
        n.kind = COMMSCHED_NODE_COMPUTE;
        n.runtime_ns = n.flops = n.bytes = -1;
        assert_int_equal(commsched_builder_add_node(b, &n, &err),
                         COMMSCHED_ESCHEMA);
        assert_string_equal(err.path, "nodes[0].name");
        assert_string_equal(err.text, "not valid UTF-8");
        assert_int_not_equal(commsched_builder_finish(b, 0, &g, &err),
                             COMMSCHED_OK);
    }
    const char *good = "gr\xc3\xb6\xc3\x9f" "e\xe2\x86\x92\xf0\x9f\x9a\x80"; /* größe→🚀 */
    assert_true(cs_utf8_valid(good));
    commsched_builder *b = NULL;
    commsched_error err = {0};
    commsched_graph *g = NULL;
    assert_int_equal(commsched_builder_create(good, &b, &err), COMMSCHED_OK);
    commsched_output_spec o = {.name = good, .size = 4};
    commsched_node_spec n;
    memset(&n, 0, sizeof n);
    n.name = good;
    n.op = good;
    n.kind = COMMSCHED_NODE_COMPUTE;
    n.outputs = &o;
    n.n_outputs = 1;
    n.runtime_ns = n.flops = n.bytes = -1;
    assert_int_equal(commsched_builder_add_node(b, &n, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    char *text = tu_graph_to_json(g, NULL);
    commsched_graph *back = tu_graph_from_json(text);
    assert_string_equal(commsched_graph_node_name(back, 0), good);
    free(text);
    commsched_graph_destroy(back);
    commsched_graph_destroy(g);
}

/* Cuts between characters (src/base/utf8.c): every cut, however many
 * bytes the limit allows, leaves valid UTF-8 of a text that was valid;
 * a table column counts CJK as two columns and pads to the width. */
static void test_utf8_cuts(void **state)
{
    (void)state;
    const char *mix = "a\xc3\xb6\xe5\x9b\xb3\xf0\x9f\x9a\x80z"; /* aö図🚀z */
    static const size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11, 11};
    for (size_t max = 0; max < sizeof want / sizeof want[0]; max++) {
        assert_int_equal(cs_utf8_cut(mix, max), want[max]);
        assert_int_equal(commsched_utf8_cut(mix, max), want[max]);
        char buf[16];
        memcpy(buf, mix, want[max]);
        buf[want[max]] = '\0';
        assert_true(cs_utf8_valid(buf));
    }
    /* snprintf's cut, repaired: whatever the size, a valid prefix. */
    for (size_t size = 1; size < 14; size++) {
        char buf[16];
        int n = snprintf(buf, size, "%s", mix);
        cs_utf8_trim(buf, size, n);
        assert_true(cs_utf8_valid(buf));
        assert_int_equal(strlen(buf), cs_utf8_cut(mix, size - 1));
    }
    char big[64];
    assert_int_equal(cs_utf8_width(mix), 7); /* a, ö, 図 (2), 🚀 (2), z */
    assert_string_equal(cs_utf8_fit(mix, 7, 1, big, sizeof big), mix);
    assert_string_equal(cs_utf8_fit("ab", 5, 1, big, sizeof big), "ab   ");
    /* 図図図 is 6 columns: in 5, two characters are cut for "..". */
    assert_string_equal(cs_utf8_fit("\xe5\x9b\xb3\xe5\x9b\xb3\xe5\x9b\xb3", 5, 1,
                                    big, sizeof big),
                        "\xe5\x9b\xb3.. ");
    assert_int_equal(cs_utf8_width(cs_utf8_fit(mix, 6, 1, big, sizeof big)), 6);
    /* A buffer smaller than the text: still cut between characters. */
    assert_string_equal(cs_utf8_fit(mix, 20, 0, big, 5), "a\xc3\xb6");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_collective_rank_limit),
        cmocka_unit_test(test_builder_limits),
        cmocka_unit_test(test_memory_sums_checked),
        cmocka_unit_test(test_estimate_beyond_limit),
        cmocka_unit_test(test_builder_utf8),
        cmocka_unit_test(test_builder_utf8_paths),
        cmocka_unit_test(test_utf8_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
