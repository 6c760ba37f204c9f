/* commsched unit tests — simple_overlap (passes/simple_overlap.c), PyTorch's
 * defensive overlap pass: what stops a collective's rise and a wait's sink
 * (a dependency, another collective or wait, peak memory), and on random
 * graphs that it never raises the peak and never reorders collectives or
 * waits among themselves; and the hand-written transformer-block plan
 * built on it (bucket_transformer_blocks): one bucket per block run,
 * prefetched one block ahead. Every pipeline runs with
 * COMMSCHED_PIPELINE_VERIFY (memory checked against a full recompute after
 * every swap). */
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
#define ALL_GATHER(name, in, out)                                           \
    "{\"name\": \"" name "\", \"kind\": \"collective\", \"op\": "           \
    "\"all_gather\", \"group\": \"g\", \"inputs\": [\"" in "\"], "          \
    "\"outputs\": [{\"name\": \"" out "\", \"size\": 64}]}"
#define WAIT(name, in, out)                                                  \
    "{\"name\": \"" name "\", \"kind\": \"wait\", \"inputs\": [\"" in       \
    "\"], \"outputs\": [{\"name\": \"" out "\", \"alias_of\": \"" in "\"}]}"

/* Runs simple_overlap on g in its own order (verifying every swap) into a
 * new schedule *s; every edge must hold afterwards. Returns the run for its
 * statistics; caller destroys both. */
static commsched_run *run_pass(commsched_graph *g, commsched_schedule **s)
{
    commsched_error err = {0};
    double *rt = tu_default_runtimes(g);
    assert_int_equal(commsched_schedule_create(g, NULL, s, &err), COMMSCHED_OK);
    commsched_run *run = NULL;
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    commsched_status st = commsched_pipeline_run(
        g, *s, rt, "simple_overlap", k, COMMSCHED_PIPELINE_VERIFY, &run, &err);
    commsched_knobs_destroy(k);
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
    tu_expect_order(g, s, want);
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
 * the peak is 108 (big 100, k 108->8, ar 108). ar stays where it is. a
 * (100: ar writes what it reads) is not freeable, so not counted. */
static void test_peak_memory_stops_the_rise(void **state)
{
    (void)state;
    expect_order(HDR "\"inputs\": [{\"name\": \"a\", \"size\": 100}], "
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

/* bucket_transformer_blocks run on g in its own order, verified: the
 * pipeline may hand back a rewritten graph and schedule (g, s); the
 * originals are kept to be destroyed. */
typedef struct plan_run {
    commsched_graph *g0, *g;
    commsched_schedule *s0, *s;
    commsched_run *run;
    double *rt;
} plan_run;

static void plan_open(plan_run *pr, commsched_graph *g)
{
    commsched_error err = {0};
    memset(pr, 0, sizeof *pr);
    pr->g0 = pr->g = g;
    pr->rt = tu_default_runtimes(g);
    assert_int_equal(commsched_schedule_create(g, NULL, &pr->s, &err),
                     COMMSCHED_OK);
    pr->s0 = pr->s;
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    commsched_status st = commsched_pipeline_apply(
        &pr->g, &pr->s, pr->rt, NULL, "bucket_transformer_blocks", k,
        COMMSCHED_PIPELINE_VERIFY, &pr->run, &err);
    commsched_knobs_destroy(k);
    if (st != COMMSCHED_OK)
        fail_msg("bucket_transformer_blocks: %s", err.text);
    assert_int_equal(commsched_schedule_check(pr->s, 1, &err), COMMSCHED_OK);
}

static void plan_close(plan_run *pr)
{
    commsched_run_destroy(pr->run);
    commsched_schedule_destroy(pr->s0);
    commsched_graph_destroy(pr->g0);
    free(pr->rt);
}

/* Block L0 gathers a and b, block L1 gathers a and b; after L1 comes L0's
 * backward gather of c, a second run of block L0. The plan merges each
 * block run's gathers (two buckets of two: L0's c stays alone, it is not
 * in L0's first run), prefetches L1's bucket (with its copy-in) over L0.mm
 * up to L0's bucket, and sinks every wait to its first consumer. */
static void test_transformer_blocks(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(
        HDR "\"inputs\": [{\"name\": \"x\", \"size\": 8, \"freeable\": true}, "
            "{\"name\": \"s0a\", \"size\": 8}, {\"name\": \"s0b\", \"size\": 8}, "
            "{\"name\": \"s1a\", \"size\": 8}, {\"name\": \"s1b\", \"size\": 8}, "
            "{\"name\": \"s0c\", \"size\": 8}], "
            "\"outputs\": [\"L0.bwd_o\"], \"nodes\": ["
        ALL_GATHER("L0.a.ag", "s0a", "L0.a.full") ","
        WAIT("L0.a.w", "L0.a.full", "L0.a.wf") ","
        ALL_GATHER("L0.b.ag", "s0b", "L0.b.full") ","
        WAIT("L0.b.w", "L0.b.full", "L0.b.wf") ","
        COMPUTE("L0.mm", "\"x\", \"L0.a.wf\", \"L0.b.wf\"", "L0.y", 8) ","
        ALL_GATHER("L1.a.ag", "s1a", "L1.a.full") ","
        WAIT("L1.a.w", "L1.a.full", "L1.a.wf") ","
        ALL_GATHER("L1.b.ag", "s1b", "L1.b.full") ","
        WAIT("L1.b.w", "L1.b.full", "L1.b.wf") ","
        COMPUTE("L1.mm", "\"L0.y\", \"L1.a.wf\", \"L1.b.wf\"", "L1.y", 8) ","
        ALL_GATHER("L0.c.ag", "s0c", "L0.c.full") ","
        WAIT("L0.c.w", "L0.c.full", "L0.c.wf") ","
        COMPUTE("L0.bwd", "\"L1.y\", \"L0.c.wf\"", "L0.bwd_o", 8) "]}");
    plan_run pr;
    plan_open(&pr, g);
    g = pr.g;
    commsched_schedule *s = pr.s;
    const commsched_pass_stats *p = commsched_run_pass(pr.run, 0);
    assert_int_equal(p->n_buckets, 2);
    for (uint32_t b = 0; b < 2; b++) {
        assert_int_equal(p->buckets[b].n_members, 2);
        assert_memory_equal(p->buckets[b].members[0], b ? "L1." : "L0.", 3);
        assert_memory_equal(p->buckets[b].members[1], b ? "L1." : "L0.", 3);
    }
    uint32_t pos[64] = {0}, i = 0;
    assert_true(commsched_graph_node_count(g) <= 64);
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v))
        pos[v] = i++;
    uint32_t l0 = p->buckets[0].node, l0_wait = p->buckets[0].wait;
    uint32_t l1 = p->buckets[1].node, l1_copy = p->buckets[1].copy_in;
    uint32_t l1_wait = p->buckets[1].wait;
    uint32_t mm0 = commsched_graph_find_node(g, "L0.mm");
    uint32_t mm1 = commsched_graph_find_node(g, "L1.mm");
    assert_string_equal(commsched_graph_node_name(g, l1), "bucket_ag_1");
    /* L1's gather, with its copy-in, goes out right after L0's and before
     * L0's compute; each wait sits right before its first consumer. */
    assert_true(pos[l0] < pos[l1_copy] && pos[l1_copy] < pos[l1]);
    assert_true(pos[l1] < pos[l0_wait] && pos[l0_wait] + 1 == pos[mm0]);
    assert_true(pos[l1_wait] + 1 == pos[mm1]);
    plan_close(&pr);
}

/* The plan has no memory limit, also where the step holds no memory at
 * all: the peak of 0 times an infinite budget (NaN) was cast to a limit
 * that refused every swap (UBSan's report under the fuzzer), so nothing
 * was prefetched. L1's gather must go out before L0's wait. */
static void test_transformer_blocks_without_memory(void **state)
{
    (void)state;
#define ZAG(l)                                                               \
    "{\"name\": \"" l ".ag\", \"kind\": \"collective\", \"op\": "           \
    "\"all_gather\", \"group\": \"g\", \"inputs\": [\"" l ".s\"], "          \
    "\"outputs\": [{\"name\": \"" l ".f\", \"size\": 0}], "                 \
    "\"runtime_ns\": 1000}, "                                               \
    "{\"name\": \"" l ".w\", \"kind\": \"wait\", \"inputs\": [\"" l         \
    ".f\"], \"outputs\": [{\"name\": \"" l ".wf\", \"alias_of\": \"" l      \
    ".f\"}]}"
    commsched_graph *g = tu_graph_from_json(
        HDR "\"inputs\": [{\"name\": \"x\", \"size\": 0}, "
            "{\"name\": \"L0.s\", \"size\": 0}, "
            "{\"name\": \"L1.s\", \"size\": 0}], "
            "\"outputs\": [\"L1.y\"], \"nodes\": [" ZAG("L0") ", "
        "{\"name\": \"L0.mm\", \"kind\": \"compute\", \"inputs\": [\"x\", "
        "\"L0.wf\"], \"outputs\": [{\"name\": \"L0.y\", \"size\": 0}], "
        "\"runtime_ns\": 5000}, " ZAG("L1") ", "
        "{\"name\": \"L1.mm\", \"kind\": \"compute\", \"inputs\": "
        "[\"L0.y\", \"L1.wf\"], \"outputs\": [{\"name\": \"L1.y\", "
        "\"size\": 0}], \"runtime_ns\": 5000}]}");
#undef ZAG
    plan_run pr;
    plan_open(&pr, g);
    uint32_t l1 = commsched_graph_find_node(pr.g, "L1.ag");
    uint32_t l0_wait = commsched_graph_find_node(pr.g, "L0.w");
    assert_true(l1 != COMMSCHED_NONE && l0_wait != COMMSCHED_NONE);
    int l1_first = 0;
    for (uint32_t v = commsched_schedule_first(pr.s);
         v != l0_wait && v != COMMSCHED_NONE;
         v = commsched_schedule_next(pr.s, v))
        l1_first |= v == l1;
    assert_true(l1_first);
    plan_close(&pr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rise_and_sink),
        cmocka_unit_test(test_collectives_and_waits_keep_order),
        cmocka_unit_test(test_peak_memory_stops_the_rise),
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_transformer_blocks),
        cmocka_unit_test(test_transformer_blocks_without_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
