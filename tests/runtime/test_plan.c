/* commsched — the runtime's execution plan (src/runtime/plan.c), which
 * needs no MPI: where buffers are allocated and freed (a collective's
 * buffers live until its wait, unlike the memory model's per-step frees),
 * which wait completes which collective, the preflight's fingerprints and
 * sequence comparison, the prediction's runtimes and the calibrated skew.
 * Expected values are derived in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/graph.h"
#include "commsched/runtime.h"
#include "graph_internal.h"
#include "coord.h"
#include "plan.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

/* x (freeable) -> c0 -> a; ar reads a -> o (async); c1 reads x -> b;
 * w waits o -> v; c2 reads v, b -> y (a graph output).
 * Node indices: c0 0, ar 1, c1 2, w 3, c2 4. */
static const char *const g_overlap =
    HDR "\"groups\": [{\"name\": \"dp\", \"size\": 2}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 100, \"freeable\": true},"
    "             {\"name\": \"p\", \"size\": 7}],"
    "\"outputs\": [\"y\"], \"nodes\": ["
    "{\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\", \"p\"],"
    " \"outputs\": [{\"name\": \"a\", \"size\": 1000}]},"
    "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"dp\", \"dtype\": \"int64\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"o\", \"size\": 1000}]},"
    "{\"name\": \"c1\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"b\", \"size\": 10}]},"
    "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"o\"],"
    " \"outputs\": [{\"name\": \"v\", \"alias_of\": \"o\"}]},"
    "{\"name\": \"c2\", \"kind\": \"compute\", \"inputs\": [\"v\", \"b\"],"
    " \"outputs\": [{\"name\": \"y\", \"size\": 4}]}]}";

static commsched_graph *load(const char *json)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    if (commsched_graph_load_string(json, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("graph: %s %s", err.path, err.text);
    return g;
}

static int row_has(const cs_csr *c, uint32_t row, uint32_t val)
{
    for (uint32_t e = c->off[row]; e < c->off[row + 1]; e++)
        if (c->idx[e] == val)
            return 1;
    return 0;
}

static void test_plan_frees_after_wait(void **state)
{
    (void)state;
    commsched_graph *g = load(g_overlap);
    cs_plan p;
    commsched_error err = {0};
    assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
    uint32_t a = commsched_graph_find_buffer(g, "a"),
             o = commsched_graph_find_buffer(g, "o"),
             x = commsched_graph_find_buffer(g, "x"),
             b = commsched_graph_find_buffer(g, "b"),
             y = commsched_graph_find_buffer(g, "y");
    /* The model frees a after ar (its last reader); the runtime must keep
     * it until ar's wait w (node 3), MPI still reads it. */
    assert_false(row_has(&p.free_after, 1, a));
    assert_true(row_has(&p.free_after, 3, a));
    /* o is read through the alias v by c2: freed after c2. */
    assert_true(row_has(&p.free_after, 4, o));
    /* x: last reader c1; b: c2. */
    assert_true(row_has(&p.free_after, 2, x));
    assert_true(row_has(&p.free_after, 4, b));
    /* y is a graph output: only at the iteration's end. */
    assert_int_equal(p.n_at_end, 1);
    assert_int_equal(p.at_end[0], y);
    /* Allocation at the producers. */
    assert_true(row_has(&p.alloc_at, 0, a));
    assert_true(row_has(&p.alloc_at, 1, o));
    /* x is the baseline; p (not freeable) is allocated once. */
    assert_int_equal(p.n_baseline, 1);
    assert_int_equal(p.baseline[0], x);
    assert_int_equal(p.n_other, 1);
    /* The wait completes ar; int64 elements. */
    assert_int_equal(p.coll[1].wait, 3);
    assert_int_equal(p.coll[1].elem, 8);
    assert_int_equal(p.coll[1].send, a);
    assert_int_equal(p.coll[1].recv, o);
    assert_true(row_has(&p.wait_colls, 3, 1));
    assert_int_equal(p.n_coll, 1);
    assert_string_equal(p.seq, "all_reduce\tdp\t1000\tar\n");
    cs_plan_fini(&p);
    commsched_graph_destroy(g);
}

/* Without its wait, a collective holds its buffers to the end. */
static void test_plan_no_wait_holds_to_end(void **state)
{
    (void)state;
    commsched_graph *g = load(
        HDR "\"groups\": [{\"name\": \"dp\", \"size\": 2}],"
        "\"inputs\": [{\"name\": \"x\", \"size\": 8, \"freeable\": true}],"
        "\"nodes\": ["
        "{\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
        " \"outputs\": [{\"name\": \"a\", \"size\": 64}]},"
        "{\"name\": \"ag\", \"kind\": \"collective\", \"op\": \"all_gather\","
        " \"group\": \"dp\", \"inputs\": [\"a\"],"
        " \"outputs\": [{\"name\": \"o\", \"size\": 128}]},"
        "{\"name\": \"c1\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
        " \"outputs\": [{\"name\": \"b\", \"size\": 4}]}]}");
    cs_plan p;
    commsched_error err = {0};
    assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
    uint32_t a = commsched_graph_find_buffer(g, "a"),
             o = commsched_graph_find_buffer(g, "o");
    assert_int_equal(p.coll[1].wait, COMMSCHED_NONE);
    int found_a = 0, found_o = 0;
    for (uint32_t i = 0; i < p.n_at_end; i++) {
        found_a |= p.at_end[i] == a;
        found_o |= p.at_end[i] == o;
    }
    assert_true(found_a && found_o);
    assert_int_equal(p.coll[1].elem, 4); /* no dtype: float32 */
    cs_plan_fini(&p);
    commsched_graph_destroy(g);
}

/* --size-scale: whole 8-byte words, at least one; 1.0 keeps sizes. */
static void test_plan_size_scale(void **state)
{
    (void)state;
    commsched_graph *g = load(g_overlap);
    cs_plan p;
    commsched_error err = {0};
    assert_int_equal(cs_plan_build(&p, g, NULL, 0.01, &err), COMMSCHED_OK);
    assert_int_equal(p.bytes[commsched_graph_find_buffer(g, "a")], 16);
    assert_int_equal(p.bytes[commsched_graph_find_buffer(g, "y")], 8);
    assert_int_equal(p.bytes[commsched_graph_find_buffer(g, "v")], 0);
    cs_plan_fini(&p);
    assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
    assert_int_equal(p.bytes[commsched_graph_find_buffer(g, "p")], 7);
    cs_plan_fini(&p);
    commsched_graph_destroy(g);
}

/* Another order: a different hash; a non-topological one: EORDER. */
static void test_plan_orders(void **state)
{
    (void)state;
    commsched_graph *g = load(g_overlap);
    cs_plan p, q;
    commsched_error err = {0};
    const uint32_t swapped[] = {0, 2, 1, 3, 4}, bad[] = {1, 0, 2, 3, 4};
    assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
    assert_int_equal(cs_plan_build(&q, g, swapped, 1.0, &err), COMMSCHED_OK);
    assert_true(p.graph_hash != q.graph_hash);
    /* Same again: same hash. */
    cs_plan_fini(&q);
    assert_int_equal(cs_plan_build(&q, g, NULL, 1.0, &err), COMMSCHED_OK);
    assert_true(p.graph_hash == q.graph_hash);
    cs_plan_fini(&q);
    assert_int_equal(cs_plan_build(&q, g, bad, 1.0, &err), COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "\"ar\" runs before its dependency"));
    cs_plan_fini(&q);
    cs_plan_fini(&p);
    commsched_graph_destroy(g);
}

static void test_plan_seq_diff(void **state)
{
    (void)state;
    const char *a = "all_reduce\tdp\t1000\tar1\nall_gather\tdp\t64\tag\n";
    const char *same = "all_reduce\tdp\t1000\tother\nall_gather\tdp\t64\tx\n";
    const char *swapped = "all_gather\tdp\t64\tag\nall_reduce\tdp\t1000\tar1\n";
    const char *shorter = "all_reduce\tdp\t1000\tar1\n";
    char m[200], t[200];
    /* names do not matter */
    assert_int_equal(cs_plan_seq_diff(a, strlen(a), same, strlen(same), m, t,
                                      sizeof m), -1);
    assert_int_equal(cs_plan_seq_diff(a, strlen(a), swapped, strlen(swapped),
                                      m, t, sizeof m), 0);
    assert_string_equal(m, "\"ar1\": all_reduce on group \"dp\", 1000 bytes");
    assert_string_equal(t, "\"ag\": all_gather on group \"dp\", 64 bytes");
    assert_int_equal(cs_plan_seq_diff(a, strlen(a), shorter, strlen(shorter),
                                      m, t, sizeof m), 1);
    assert_string_equal(t, "nothing (the sequence has ended)");
    assert_int_equal(cs_plan_seq_diff("", 0, "", 0, m, t, sizeof m), -1);
}

static void test_runtime_registry(void **state)
{
    (void)state;
    assert_true(commsched_runtime_known("mpi"));
    assert_true(commsched_runtime_known("cuda"));
    assert_false(commsched_runtime_known("tpu"));
    assert_null(commsched_runtime_find("tpu"));
    for (unsigned i = 0; commsched_runtime_at(i); i++) {
        const commsched_runtime_ops *o = commsched_runtime_at(i);
        assert_int_equal(o->version, COMMSCHED_RUNTIME_VERSION);
        assert_ptr_equal(commsched_runtime_find(o->name), o);
        assert_non_null(o->init);
        assert_non_null(o->execute);
        assert_non_null(o->fini);
    }
    commsched_run_options o;
    commsched_run_options_init(&o);
    assert_int_equal(o.ring_threshold, 256000);
    assert_int_equal(o.iters, 10);
    commsched_compute_mode cm;
    assert_int_equal(commsched_compute_mode_parse("touch", &cm), 0);
    assert_int_equal(cm, COMMSCHED_COMPUTE_TOUCH);
    assert_int_equal(commsched_compute_mode_parse("nap", &cm), -1);
    commsched_allreduce_algo aa;
    assert_int_equal(commsched_allreduce_algo_parse("ring-always", &aa), 0);
    assert_string_equal(commsched_allreduce_algo_str(aa), "ring-always");
    commsched_run_streams rs;
    assert_int_equal(commsched_run_streams_parse("concurrent", &rs), 0);
    assert_string_equal(commsched_run_streams_str(rs), "concurrent");
}

/* The prediction's runtimes: the model (scaled) without calibration;
 * calibrated collectives and compute (in every compute mode: a sleeping
 * node's calibrated time holds this machine's wake-up latency) with it. */
static void test_measurement_predict(void **state)
{
    (void)state;
    commsched_graph *g = load(g_overlap);
    commsched_measurement m;
    memset(&m, 0, sizeof m);
    m.graph = g;
    m.nodes = 5;
    commsched_run_options_init(&m.options);
    m.options.time_scale = 2;
    double model[5] = {100, 50, 200, 0, 300}, solo[5] = {111, 77, 222, 0, 333};
    double out[5];
    uint8_t src[5];
    commsched_measurement_predict(&m, model, out, src);
    assert_true(out[0] == 200 && out[1] == 100 && out[2] == 400 &&
                out[4] == 600 && src[1] == 0);
    m.solo_ns = solo;
    commsched_measurement_predict(&m, model, out, src);
    assert_true(out[0] == 111 && out[1] == 77 && out[4] == 333 &&
                src[1] == 1 && src[0] == 1 && src[3] == 0);
    m.options.compute = COMMSCHED_COMPUTE_TOUCH;
    commsched_measurement_predict(&m, model, out, src);
    assert_true(out[0] == 111 && out[4] == 333 && src[4] == 1);
    /* The collective completes once its last rank posted it and the
     * waiting ranks woke: skew and wake-up are added to it, and only to
     * it (compute nodes have none, whatever the arrays say). */
    double skew[5] = {5, 1000, 5, 0, 5}, wake[5] = {7, 30, 7, 0, 7};
    m.skew_ns = skew;
    m.wake_ns = wake;
    commsched_measurement_predict(&m, model, out, src);
    assert_true(out[1] == 77 + 1000 + 30 && out[0] == 111 && out[2] == 222 &&
                src[1] == 1);
    commsched_graph_destroy(g);
}

/* The skew and wake-up latency from the calibration waits, per pass across
 * ranks: waits[rank][node][pass], 4 ranks, 2 nodes, 3 passes.
 * Node 0 (a collective): pass 0 ranks wait 10, 10, 10, 2 (rank 3 came
 * last, 8 after the others; it waited 2 for them to wake) -> least 2, mean
 * 8 -> skew 6; pass 1 waits 3, 3, 3, 3 (together) -> least 3, skew 0;
 * pass 2 waits 21, 1, 1, 1 (rank 0 came first, 20 early) -> least 1, mean
 * 6 -> skew 5. Medians: skew of {6, 0, 5} = 5, wake of {2, 3, 1} = 2.
 * Node 1 (compute: never waits) -> 0 and 0. A per-rank median first
 * (rank 0: 10, 3, 21 -> 10; the others 3, 3, 2 -> mean 4.5, least 2)
 * would give a different skew (2.5): the ranks' lateness changes from
 * pass to pass, so the cross-rank figure is taken within each pass. */
static void test_coord_skew(void **state)
{
    (void)state;
    const double waits[4][2][3] = {
        {{10, 3, 21}, {0, 0, 0}},
        {{10, 3, 1}, {0, 0, 0}},
        {{10, 3, 1}, {0, 0, 0}},
        {{2, 3, 1}, {0, 0, 0}},
    };
    double skew[2], wake[2], scratch[6];
    cs_coord_skew(&waits[0][0][0], 4, 2, 3, skew, wake, scratch);
    assert_true(skew[0] == 5 && wake[0] == 2);
    assert_true(skew[1] == 0 && wake[1] == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_frees_after_wait),
        cmocka_unit_test(test_plan_no_wait_holds_to_end),
        cmocka_unit_test(test_plan_size_scale),
        cmocka_unit_test(test_plan_orders),
        cmocka_unit_test(test_plan_seq_diff),
        cmocka_unit_test(test_runtime_registry),
        cmocka_unit_test(test_measurement_predict),
        cmocka_unit_test(test_coord_skew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
