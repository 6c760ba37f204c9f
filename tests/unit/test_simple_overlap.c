/* commsched unit tests — simple_overlap (passes/simple_overlap.c), PyTorch's
 * defensive overlap pass: what stops a collective's rise and a wait's sink
 * (a dependency, another collective or wait, peak memory), and on random
 * graphs that it never raises the peak and never reorders collectives or
 * waits among themselves. Every pipeline runs with COMMSCHED_PIPELINE_VERIFY
 * (memory checked against a full recompute after every swap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "testutil.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, " \
            "\"groups\": [{\"name\": \"g\", \"size\": 8, \"hosts\": 1}], "
#define COMPUTE(name, ins, out, size)                                        \
    "{\"name\": \"" name "\", \"kind\": \"compute\", \"op\": \"add\", "     \
    "\"inputs\": [" ins "], \"outputs\": [{\"name\": \"" out "\", "         \
    "\"size\": " #size "}], \"runtime_ns\": 10}"
#define ALL_REDUCE(name, in, out, size)                                      \
    "{\"name\": \"" name "\", \"kind\": \"collective\", \"op\": "           \
    "\"all_reduce\", \"group\": \"g\", \"inputs\": [\"" in "\"], "          \
    "\"outputs\": [{\"name\": \"" out "\", \"size\": " #size "}], "         \
    "\"runtime_ns\": 100}"
#define WAIT(name, in, out)                                                  \
    "{\"name\": \"" name "\", \"kind\": \"wait\", \"inputs\": [\"" in       \
    "\"], \"outputs\": [{\"name\": \"" out "\", \"alias_of\": \"" in "\"}]}"

/* Runs simple_overlap on g in its own order (verifying every swap) into a
 * new schedule *s; every edge must hold afterwards. Returns the run for its
 * statistics; caller destroys both. */
static commsched_run *run_pass(commsched_graph *g, commsched_schedule **s)
{
    commsched_error err = {0};
    uint32_t n = commsched_graph_node_count(g);
    double *rt = calloc(n, sizeof *rt);
    assert_non_null(rt);
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    assert_int_equal(commsched_cost_graph(g, &o, rt, NULL, &err), COMMSCHED_OK);
    assert_int_equal(commsched_schedule_create(g, NULL, s, &err), COMMSCHED_OK);
    commsched_run *run = NULL;
    commsched_status st = commsched_pipeline_run(
        g, *s, rt, "simple_overlap", NULL, COMMSCHED_PIPELINE_VERIFY, &run, &err);
    free(rt);
    if (st != COMMSCHED_OK)
        fail_msg("simple_overlap failed: %s: %s", commsched_status_name(st),
                 err.text);
    assert_int_equal(commsched_schedule_check(*s, 1, &err), COMMSCHED_OK);
    return run;
}

static void expect_order(const char *json, const char *want)
{
    commsched_graph *g = tu_graph_from_json(json);
    commsched_schedule *s = NULL;
    commsched_run *run = run_pass(g, &s);
    char got[512];
    size_t len = 0;
    got[0] = '\0';
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v))
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s",
                                len ? " " : "", commsched_graph_node_name(g, v));
    if (strcmp(got, want) != 0)
        fail_msg("order\n  got:  %s\n  want: %s", got, want);
    const commsched_pass_stats *p = commsched_run_pass(run, 0);
    assert_non_null(p);
    assert_true(p->peak_after <= p->peak_before);
    commsched_run_destroy(run);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

/* ar rises over q (independent) and stops at p, which it reads; w sinks
 * over r and stops at u, which reads its alias. Levels (q_o, r_o, u_o are
 * graph outputs): before p 16, q 32, ar 48->32, w 32, r 48, u 64->48;
 * after p 16, ar 32->16, q 32, r 48, w 48, u 64->48: the peak stays 64. */
static void test_rise_and_sink(void **state)
{
    (void)state;
    expect_order(HDR "\"inputs\": [{\"name\": \"a\", \"size\": 8}], "
                     "\"outputs\": [\"q_o\", \"r_o\", \"u_o\"], \"nodes\": ["
                 COMPUTE("p", "\"a\"", "p_o", 16) ","
                 COMPUTE("q", "\"a\"", "q_o", 16) ","
                 ALL_REDUCE("ar", "p_o", "ar_o", 16) ","
                 WAIT("w", "ar_o", "w_o") ","
                 COMPUTE("r", "\"a\"", "r_o", 16) ","
                 COMPUTE("u", "\"w_o\"", "u_o", 16) "]}",
                 "p ar q r w u");
}

/* ar2 rises over c and over w1 (a wait is no barrier to a start) but not
 * over ar1: collectives keep their order. Then w1 sinks over c and stops
 * at w2 (waits keep their order); w2 sinks over u1, which reads only w1's
 * alias, and stops at u2. The peak (32: three outputs and one collective
 * buffer live) is reached before and after. */
static void test_collectives_and_waits_keep_order(void **state)
{
    (void)state;
    expect_order(HDR "\"inputs\": [{\"name\": \"a\", \"size\": 8}, "
                     "{\"name\": \"b\", \"size\": 8}], "
                     "\"outputs\": [\"c_o\", \"u1_o\", \"u2_o\"], \"nodes\": ["
                 ALL_REDUCE("ar1", "a", "ar1_o", 8) ","
                 WAIT("w1", "ar1_o", "w1_o") ","
                 COMPUTE("c", "\"a\"", "c_o", 8) ","
                 ALL_REDUCE("ar2", "b", "ar2_o", 8) ","
                 WAIT("w2", "ar2_o", "w2_o") ","
                 COMPUTE("u1", "\"w1_o\"", "u1_o", 8) ","
                 COMPUTE("u2", "\"w2_o\"", "u2_o", 8) "]}",
                 "ar1 ar2 c w1 u1 w2 u2");
}

/* Rising over k would hold big_o (100) and ar_o (100) at once: 200 where
 * the peak is 108 (big 100, k 108->8, ar 108). ar stays where it is. */
static void test_peak_memory_stops_the_rise(void **state)
{
    (void)state;
    expect_order(HDR "\"inputs\": [{\"name\": \"a\", \"size\": 8}], "
                     "\"outputs\": [\"k_o\", \"u_o\"], \"nodes\": ["
                 COMPUTE("big", "\"a\"", "big_o", 100) ","
                 COMPUTE("k", "\"big_o\"", "k_o", 8) ","
                 ALL_REDUCE("ar", "a", "ar_o", 100) ","
                 WAIT("w", "ar_o", "w_o") ","
                 COMPUTE("u", "\"w_o\"", "u_o", 8) "]}",
                 "big k ar w u");
}

/* The rank-safety and memory guarantees on random graphs: every edge holds
 * (schedule_check with fake edges, in run_pass), the peak never grows, and
 * collectives and waits keep their relative order. */
static void test_random_graphs(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        tu_graph_opts opts = tu_random_opts(40 + (uint32_t)(seed % 60));
        commsched_graph *g = tu_random_graph(seed, &opts);
        commsched_schedule *s = NULL;
        commsched_run *run = run_pass(g, &s);
        const commsched_pass_stats *p = commsched_run_pass(run, 0);
        assert_true(p->peak_after <= p->peak_before);
        uint32_t last_coll = 0, last_wait = 0, n_coll = 0, n_wait = 0;
        for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
             v = commsched_schedule_next(s, v)) {
            commsched_node_kind k = commsched_graph_node_kind(g, v);
            /* Node indices are the input order: a later index seen first
             * would be a reordering. */
            if (k == COMMSCHED_NODE_COLLECTIVE) {
                if (n_coll++)
                    assert_true(v > last_coll);
                last_coll = v;
            } else if (k == COMMSCHED_NODE_WAIT) {
                if (n_wait++)
                    assert_true(v > last_wait);
                last_wait = v;
            }
        }
        commsched_run_destroy(run);
        commsched_schedule_destroy(s);
        commsched_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rise_and_sink),
        cmocka_unit_test(test_collectives_and_waits_keep_order),
        cmocka_unit_test(test_peak_memory_stops_the_rise),
        cmocka_unit_test(test_random_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
