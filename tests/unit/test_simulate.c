/* commsched unit tests — the simulator (docs/REPORTS.md "What the figures mean").
 *
 * Each small graph below carries its runtimes in the file (runtime_ns), so
 * the cost model passes them through untouched, and its timeline is worked
 * out by hand in the comment above the test from the rules:
 *   compute: start = now, now = end;
 *   async collective: start = max(now, its stream free);
 *   wait: now jumps to max(now, end of what it reads); the jump is exposed;
 *   sync collective: start = max(now, stream free), now = end,
 *     exposed = end - issue;
 *   bound = max(compute-stream load, busiest comm stream, critical path
 *     over enforced edges).
 * Then random graphs check the properties every run must have. */
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
#include "commsched/memory.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"
#include "graph_internal.h"
#include "testutil.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "
#define GROUPS_DP "\"groups\": [{\"name\": \"dp\", \"size\": 8}],"
#define GROUPS_DP_TP                                                           \
    "\"groups\": [{\"name\": \"dp\", \"size\": 8}, {\"name\": \"tp\", "       \
    "\"size\": 4}],"
/* 8 bytes each, so an all_gather on dp (8 ranks) writes 64 and an
 * all_reduce writes 8 (docs/FORMAT.md, "Collective sizes"). */
#define INPUTS "\"inputs\": [{\"name\": \"x\", \"size\": 8}," \
               " {\"name\": \"s\", \"size\": 8}],"

/* Node JSON snippets. */
#define COLL(name, op, group, in, out, size, rt)                               \
    "{\"name\": \"" name "\", \"kind\": \"collective\", \"op\": \"" op        \
    "\", \"group\": \"" group "\", \"inputs\": [\"" in "\"],"                 \
    " \"outputs\": [{\"name\": \"" out "\", \"size\": " #size "}],"           \
    " \"runtime_ns\": " #rt "}"
#define SYNC(name, op, group, in, out, size, rt)                               \
    "{\"name\": \"" name "\", \"kind\": \"collective\", \"op\": \"" op        \
    "\", \"group\": \"" group "\", \"async\": false, \"inputs\": [\"" in      \
    "\"], \"outputs\": [{\"name\": \"" out "\", \"size\": " #size "}],"       \
    " \"runtime_ns\": " #rt "}"
#define WAIT(name, in, alias)                                                  \
    "{\"name\": \"" name "\", \"kind\": \"wait\", \"inputs\": [\"" in "\"],"  \
    " \"outputs\": [{\"name\": \"" alias "\", \"alias_of\": \"" in "\"}]}"
/* A compute node; `ins` is a JSON list body such as "\"x\", \"y\"". */
#define COMP(name, ins, out, size, rt)                                         \
    "{\"name\": \"" name "\", \"kind\": \"compute\", \"inputs\": [" ins "],"  \
    " \"outputs\": [{\"name\": \"" out "\", \"size\": " #size "}],"           \
    " \"runtime_ns\": " #rt "}"

typedef struct fix {
    commsched_graph *g;
    commsched_sim *sim;
    double *rt;
    const commsched_sim_node *res;
    const commsched_sim_totals *t;
} fix;

/* Loads json, simulates `order` (node names, NULL-terminated; NULL: the
 * file's order) in the given stream mode with the memory curve on. */
static void run(fix *f, const char *json, const char *const *names,
                commsched_comm_streams mode)
{
    commsched_error err = {0};
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    f->g = tu_graph_from_json(json);
    uint32_t n = commsched_graph_node_count(f->g);
    f->rt = calloc(n, sizeof *f->rt);
    assert_non_null(f->rt);
    assert_int_equal(commsched_cost_graph(f->g, &o, f->rt, NULL, &err),
                     COMMSCHED_OK);
    uint32_t *order = NULL;
    if (names) {
        order = calloc(n, sizeof *order);
        assert_non_null(order);
        uint32_t k = 0;
        for (; names[k]; k++)
            order[k] = tu_node(f->g, names[k]);
        assert_int_equal(k, n);
    }
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.comm_streams = mode;
    so.flags |= COMMSCHED_SIM_MEMORY_CURVE;
    assert_int_equal(commsched_sim_create(f->g, &f->sim, &err), COMMSCHED_OK);
    if (commsched_sim_run(f->sim, order, f->rt, &so, &err) != COMMSCHED_OK)
        fail_msg("simulation failed: %s", err.text);
    free(order);
    f->res = commsched_sim_get_nodes(f->sim);
    f->t = commsched_sim_get_totals(f->sim);
}

static void done(fix *f)
{
    commsched_sim_destroy(f->sim);
    commsched_graph_destroy(f->g);
    free(f->rt);
}

/* Asserts one node's issue, start, end and exposed time (exact: every
 * figure here is a small integer). */
static void expect(const fix *f, const char *name, double issue, double start,
                   double end, double exposed)
{
    const commsched_sim_node *r = &f->res[tu_node(f->g, name)];
    if (r->issue_ns != issue || r->start_ns != start || r->end_ns != end ||
        r->exposed_ns != exposed)
        fail_msg("%s: issue %g start %g end %g exposed %g; want %g %g %g %g",
                 name, r->issue_ns, r->start_ns, r->end_ns, r->exposed_ns,
                 issue, start, end, exposed);
}

static void expect_totals(const fix *f, double makespan, double exposed,
                          double comm, double bound, double eff)
{
    const commsched_sim_totals *t = f->t;
    if (t->makespan_ns != makespan || t->exposed_ns != exposed ||
        t->comm_ns != comm || t->lower_bound_ns != bound ||
        fabs(t->efficiency - eff) > 1e-12)
        fail_msg("makespan %g exposed %g comm %g bound %g eff %g; want %g %g "
                 "%g %g %g",
                 t->makespan_ns, t->exposed_ns, t->comm_ns, t->lower_bound_ns,
                 t->efficiency, makespan, exposed, comm, bound, eff);
    double overlap = comm > 0 ? 1 - exposed / comm : 1;
    assert_true(fabs(t->overlap - overlap) < 1e-12);
}

static void expect_bound(const fix *f, double compute, double comm,
                         double path)
{
    const commsched_sim_totals *t = f->t;
    if (t->bound_compute_ns != compute || t->bound_comm_ns != comm ||
        t->bound_path_ns != path)
        fail_msg("bound parts: compute %g comm %g path %g; want %g %g %g",
                 t->bound_compute_ns, t->bound_comm_ns, t->bound_path_ns,
                 compute, comm, path);
}

static double overlapped(const fix *f, const char *name)
{
    return f->res[tu_node(f->g, name)].overlapped_ns;
}

/* ---- 1. a hidden collective --------------------------------------------
 * c (10) on dp from 0 to 10 while a (20) runs 0..20; w at 20 finds c done
 * (no stall); b 20..25. Makespan 25 = compute load; c fully overlapped.
 * Memory (x, s not freeable: not counted): c_out 64 at 0 (comm), a_out 32
 * at 0, b's out 8 at 20 -> 104, then b frees c_out and a_out at 25 -> 8. */
static const char *g_hidden =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c", "all_gather", "dp", "s", "c_out", 64, 10) ","
    COMP("a", "\"x\"", "a_out", 32, 20) ","
    WAIT("w", "c_out", "wv") ","
    COMP("b", "\"a_out\", \"wv\"", "out", 8, 5) "]}";

static void test_sim_hidden_collective(void **state)
{
    (void)state;
    fix f;
    run(&f, g_hidden, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c", 0, 0, 10, 0);
    expect(&f, "a", 0, 0, 20, 0);
    expect(&f, "w", 20, 20, 20, 0);
    expect(&f, "b", 20, 20, 25, 0);
    expect_totals(&f, 25, 0, 10, 25, 1.0);
    expect_bound(&f, 25, 10, 25);
    assert_true(overlapped(&f, "c") == 10);
    assert_int_equal(f.res[tu_node(f.g, "c")].wait, tu_node(f.g, "w"));
    assert_int_equal(f.res[tu_node(f.g, "c")].stream, 1);
    assert_int_equal(f.t->peak_memory, 104);
    assert_true(f.t->peak_memory_at_ns == 20);
    assert_int_equal(f.t->peak_memory_step, 104);
    size_t n = 0;
    const commsched_sim_memory_point *c =
        commsched_sim_get_memory_curve(f.sim, &n);
    const commsched_sim_memory_point want[] = {
        {0, 0}, {0, 64}, {0, 96}, {20, 104}, {25, 8}};
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        if (c[i].time_ns != want[i].time_ns || c[i].bytes != want[i].bytes)
            fail_msg("curve[%zu] = (%g, %lld), want (%g, %lld)", i,
                     c[i].time_ns, (long long)c[i].bytes, want[i].time_ns,
                     (long long)want[i].bytes);
    done(&f);
}

/* ---- 2. an exposed collective ------------------------------------------
 * c (30) 0..30, a (10) 0..10; w stalls from 10 to 30 (20 exposed); b
 * 30..35. Critical path c -> w -> b = 35 = makespan: the bound, eff 1. */
static const char *g_exposed =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c", "all_gather", "dp", "s", "c_out", 64, 30) ","
    COMP("a", "\"x\"", "a_out", 32, 10) ","
    WAIT("w", "c_out", "wv") ","
    COMP("b", "\"a_out\", \"wv\"", "out", 8, 5) "]}";

static void test_sim_exposed_collective(void **state)
{
    (void)state;
    fix f;
    run(&f, g_exposed, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c", 0, 0, 30, 20);
    expect(&f, "a", 0, 0, 10, 0);
    expect(&f, "w", 10, 30, 30, 20);
    expect(&f, "b", 30, 30, 35, 0);
    expect_totals(&f, 35, 20, 30, 35, 1.0);
    expect_bound(&f, 15, 30, 35);
    assert_true(overlapped(&f, "c") == 10);
    done(&f);
}

/* ---- 3. two groups in parallel, and 6. the same in single-stream mode ---
 * Per group: c1 (dp, 20) and c2 (tp, 20) both 0..20; a 0..10; w1 stalls
 * 10..20 (c1 exposed 10); w2 finds c2 done; b 20..25. Bound: compute 15,
 * busiest stream 20, path max(c1, c2) + b = 25 = makespan.
 * Single stream: c2 queues behind c1, 20..40; w1 stalls 10..20 (c1: 10),
 * w2 20..40 (c2: 20); b 40..45. Bound: one stream carries 40. */
static const char *g_two_groups =
    HDR GROUPS_DP_TP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c1", "all_gather", "dp", "s", "c1_out", 64, 20) ","
    COLL("c2", "all_reduce", "tp", "s", "c2_out", 8, 20) ","
    COMP("a", "\"x\"", "a_out", 32, 10) ","
    WAIT("w1", "c1_out", "v1") ","
    WAIT("w2", "c2_out", "v2") ","
    COMP("b", "\"a_out\", \"v1\", \"v2\"", "out", 8, 5) "]}";

static void test_sim_two_groups_in_parallel(void **state)
{
    (void)state;
    fix f;
    run(&f, g_two_groups, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c1", 0, 0, 20, 10);
    expect(&f, "c2", 0, 0, 20, 0);
    expect(&f, "w1", 10, 20, 20, 10);
    expect(&f, "w2", 20, 20, 20, 0);
    expect(&f, "b", 20, 20, 25, 0);
    expect_totals(&f, 25, 10, 40, 25, 1.0);
    expect_bound(&f, 15, 20, 25);
    assert_int_equal(commsched_sim_stream_count(f.sim), 3);
    assert_string_equal(commsched_sim_stream_name(f.sim, 2), "tp");
    assert_true(commsched_sim_stream_busy(f.sim, 1) == 20);
    assert_true(overlapped(&f, "c1") == 10 && overlapped(&f, "c2") == 10);
    done(&f);
}

static void test_sim_single_stream_mode(void **state)
{
    (void)state;
    fix f;
    run(&f, g_two_groups, NULL, COMMSCHED_STREAMS_SINGLE);
    expect(&f, "c1", 0, 0, 20, 10);
    expect(&f, "c2", 0, 20, 40, 20);
    expect(&f, "w1", 10, 20, 20, 10);
    expect(&f, "w2", 20, 40, 40, 20);
    expect(&f, "b", 40, 40, 45, 0);
    expect_totals(&f, 45, 30, 40, 40, 40.0 / 45.0);
    expect_bound(&f, 15, 40, 25);
    assert_int_equal(commsched_sim_stream_count(f.sim), 2);
    assert_string_equal(commsched_sim_stream_name(f.sim, 1), "comm");
    assert_int_equal(f.res[tu_node(f.g, "c2")].stream, 1);
    done(&f);
}

/* ---- 4. two collectives queued on one group's stream --------------------
 * c1 0..20, c2 queues 20..40; a 0..10; w1 stalls 10..20 (c1: 10), w2
 * stalls 20..40 (c2: 20, more than... its own 20 of runtime is all
 * exposed); b 40..45. Bound: the dp stream's 40; efficiency 40/45. c2
 * overlaps no compute (a ended at 10). */
static const char *g_queued =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c1", "all_gather", "dp", "s", "c1_out", 64, 20) ","
    COLL("c2", "all_gather", "dp", "x", "c2_out", 64, 20) ","
    COMP("a", "\"x\"", "a_out", 32, 10) ","
    WAIT("w1", "c1_out", "v1") ","
    WAIT("w2", "c2_out", "v2") ","
    COMP("b", "\"a_out\", \"v1\", \"v2\"", "out", 8, 5) "]}";

static void test_sim_queued_on_one_stream(void **state)
{
    (void)state;
    fix f;
    run(&f, g_queued, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c1", 0, 0, 20, 10);
    expect(&f, "c2", 0, 20, 40, 20);
    expect(&f, "w1", 10, 20, 20, 10);
    expect(&f, "w2", 20, 40, 40, 20);
    expect(&f, "b", 40, 40, 45, 0);
    expect_totals(&f, 45, 30, 40, 40, 40.0 / 45.0);
    expect_bound(&f, 15, 40, 25);
    assert_true(overlapped(&f, "c1") == 10);
    assert_true(overlapped(&f, "c2") == 0);
    done(&f);
}

/* ---- 5. a sync collective -----------------------------------------------
 * c (dp, async, 20) 0..20; a 0..10; s (dp, sync, 15) issued at 10 waits
 * for the stream until 20, runs 20..35 on both streams: exposed 35 - 10 =
 * 25; w at 35 finds c done; b 35..40. Bound: compute load a + s + b = 30,
 * dp stream c + s = 35, path a -> s -> b = 30: 35; efficiency 35/40. */
static const char *g_sync =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c", "all_gather", "dp", "s", "c_out", 64, 20) ","
    COMP("a", "\"x\"", "a_out", 32, 10) ","
    SYNC("sy", "all_to_all", "dp", "a_out", "sy_out", 32, 15) ","
    WAIT("w", "c_out", "wv") ","
    COMP("b", "\"sy_out\", \"wv\"", "out", 8, 5) "]}";

static void test_sim_sync_collective(void **state)
{
    (void)state;
    fix f;
    run(&f, g_sync, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c", 0, 0, 20, 0);
    expect(&f, "a", 0, 0, 10, 0);
    expect(&f, "sy", 10, 20, 35, 25);
    expect(&f, "w", 35, 35, 35, 0);
    expect(&f, "b", 35, 35, 40, 0);
    expect_totals(&f, 40, 25, 35, 35, 35.0 / 40.0);
    expect_bound(&f, 30, 35, 30);
    assert_int_equal(f.res[tu_node(f.g, "sy")].stream, 1);
    assert_true(overlapped(&f, "sy") == 0);
    done(&f);
}

/* ---- 7. a wait for a collective issued long ago -------------------------
 * c (20) issued at position 0, 0..20, behind it a1 0..10, a2 10..20; c2
 * (15) issued at 20, stream free at 20: 20..35; a3 20..30; w (position 5)
 * finds c done; w2 stalls 30..35 (c2: 5); b 35..40. c overlapped a1 + a2
 * = 20, c2 overlapped a3 = 10. */
static const char *g_long_ago =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COLL("c", "all_gather", "dp", "s", "c_out", 64, 20) ","
    COMP("a1", "\"x\"", "o1", 8, 10) ","
    COMP("a2", "\"o1\"", "o2", 8, 10) ","
    COLL("c2", "all_gather", "dp", "x", "c2_out", 64, 15) ","
    COMP("a3", "\"o2\"", "o3", 8, 10) ","
    WAIT("w", "c_out", "wv") ","
    WAIT("w2", "c2_out", "wv2") ","
    COMP("b", "\"o3\", \"wv\", \"wv2\"", "out", 8, 5) "]}";

static void test_sim_wait_for_collective_issued_long_ago(void **state)
{
    (void)state;
    fix f;
    run(&f, g_long_ago, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c", 0, 0, 20, 0);
    expect(&f, "a2", 10, 10, 20, 0);
    expect(&f, "c2", 20, 20, 35, 5);
    expect(&f, "a3", 20, 20, 30, 0);
    expect(&f, "w", 30, 30, 30, 0);
    expect(&f, "w2", 30, 35, 35, 5);
    expect(&f, "b", 35, 35, 40, 0);
    /* Bound: compute a1 + a2 + a3 + b = 35, dp 35, path a1..a3 -> b 35. */
    expect_totals(&f, 40, 5, 35, 35, 35.0 / 40.0);
    expect_bound(&f, 35, 35, 35);
    assert_true(overlapped(&f, "c") == 20);
    assert_true(overlapped(&f, "c2") == 10);
    const commsched_sim_node *c = &f.res[tu_node(f.g, "c")];
    assert_int_equal(c->position, 0);
    assert_int_equal(f.res[c->wait].position, 5);
    done(&f);
}

/* ---- 8. a chain where the critical path is the bound --------------------
 * a (10) -> c (50, reads a's output) -> w -> b (10); d (5) and e (5,
 * `after: [c]`) are independent compute. a 0..10, c 10..60, d 10..15,
 * e 15..20 (the control edge from an async collective is met at issue),
 * w stalls 20..60, b 60..70. Compute load 30, dp 50, path a + c + b = 70
 * = makespan. e's edge from c must not count: c + e would be 65 (< 70,
 * harmless here); see the next test for where it matters. */
static const char *g_chain =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\", \"dd\", \"ee\"], \"nodes\": ["
    COMP("a", "\"x\"", "a_out", 8, 10) ","
    COLL("c", "all_reduce", "dp", "a_out", "c_out", 8, 50) ","
    COMP("d", "\"x\"", "dd", 8, 5) ","
    "{\"name\": \"e\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"after\": [\"c\"], \"outputs\": [{\"name\": \"ee\", \"size\": 8}],"
    " \"runtime_ns\": 5},"
    WAIT("w", "c_out", "wv") ","
    COMP("b", "\"wv\"", "out", 8, 10) "]}";

static void test_sim_critical_path_is_the_bound(void **state)
{
    (void)state;
    fix f;
    run(&f, g_chain, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "a", 0, 0, 10, 0);
    expect(&f, "c", 10, 10, 60, 40);
    expect(&f, "d", 10, 10, 15, 0);
    expect(&f, "e", 15, 15, 20, 0);
    expect(&f, "w", 20, 60, 60, 40);
    expect(&f, "b", 60, 60, 70, 0);
    expect_totals(&f, 70, 40, 50, 70, 1.0);
    expect_bound(&f, 30, 50, 70);
    done(&f);
}

/* An async collective's `after` edge to a compute node is met at issue:
 * c (100) 0..100, e (10, after c) 0..10, w stalls to 100. Counting the
 * edge would give a "bound" of 110 above the makespan of 100. */
static const char *g_after_async =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"ee\", \"wv\"], \"nodes\": ["
    COLL("c", "all_gather", "dp", "s", "c_out", 64, 100) ","
    "{\"name\": \"e\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"after\": [\"c\"], \"outputs\": [{\"name\": \"ee\", \"size\": 8}],"
    " \"runtime_ns\": 10},"
    WAIT("w", "c_out", "wv") "]}";

static void test_sim_async_control_edge_not_in_bound(void **state)
{
    (void)state;
    fix f;
    run(&f, g_after_async, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "e", 0, 0, 10, 0);
    expect(&f, "w", 10, 100, 100, 90);
    expect_totals(&f, 100, 90, 100, 100, 1.0);
    expect_bound(&f, 10, 100, 100);
    done(&f);
}

/* A fake edge counts only where the order respects it: a (30) with c2
 * (50) after_fake a. Order a, c2: c2 30..80, path a -> c2 = 80. Order c2,
 * a (the fake edge violated, as the iterative passes may): c2 0..50, a
 * 0..30, path 50 (counting the edge would claim 80 > makespan 50). */
static const char *g_fake =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"aa\", \"wv\"], \"nodes\": ["
    COMP("a", "\"x\"", "aa", 8, 30) ","
    "{\"name\": \"c2\", \"kind\": \"collective\", \"op\": \"all_gather\","
    " \"group\": \"dp\", \"inputs\": [\"s\"], \"after_fake\": [\"a\"],"
    " \"outputs\": [{\"name\": \"c2_out\", \"size\": 64}],"
    " \"runtime_ns\": 50},"
    WAIT("w", "c2_out", "wv") "]}";

static void test_sim_fake_edge_counts_when_respected(void **state)
{
    (void)state;
    fix f;
    run(&f, g_fake, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c2", 30, 30, 80, 50);
    expect_bound(&f, 30, 50, 80);
    expect_totals(&f, 80, 50, 50, 80, 1.0);
    done(&f);
    const char *const violated[] = {"c2", "a", "w", NULL};
    run(&f, g_fake, violated, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "c2", 0, 0, 50, 20);
    expect(&f, "a", 0, 0, 30, 0);
    expect_bound(&f, 30, 50, 50);
    expect_totals(&f, 50, 20, 50, 50, 1.0);
    done(&f);
}

/* ---- memory over simulated time vs per step -------------------------------
 * p (10) makes g (80); rs (50) reads g asynchronously and scatters it
 * over dp's 8 ranks; q (10) makes h (100) while rs still holds g; w stalls
 * until rs ends at 60; z reads h and rs's result. Per step: 80, 90 (rs's
 * output, then g freed: 10), 110 (h), 111 (z's out): peak 111. In time, g
 * lives until rs ENDS at 60, so at t = 10 g (80) + rs_out (10) + h (100) =
 * 190. */
static const char *g_memory =
    HDR GROUPS_DP INPUTS "\"outputs\": [\"out\"], \"nodes\": ["
    COMP("p", "\"x\"", "g", 80, 10) ","
    COLL("rs", "reduce_scatter", "dp", "g", "rs_out", 10, 50) ","
    COMP("q", "\"x\"", "h", 100, 10) ","
    WAIT("w", "rs_out", "r") ","
    COMP("z", "\"h\", \"r\"", "out", 1, 1) "]}";

static void test_sim_memory_over_time(void **state)
{
    (void)state;
    fix f;
    run(&f, g_memory, NULL, COMMSCHED_STREAMS_PER_GROUP);
    expect(&f, "rs", 10, 10, 60, 40);
    expect(&f, "z", 60, 60, 61, 0);
    assert_int_equal(f.t->peak_memory_step, 111);
    assert_int_equal(f.t->peak_memory, 190);
    assert_true(f.t->peak_memory_at_ns == 10);
    size_t n = 0;
    const commsched_sim_memory_point *c =
        commsched_sim_get_memory_curve(f.sim, &n);
    const commsched_sim_memory_point want[] = {
        {0, 0}, {0, 80}, {10, 90}, {10, 190}, {60, 110}, {60, 111}, {61, 1}};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        if (c[i].time_ns != want[i].time_ns || c[i].bytes != want[i].bytes)
            fail_msg("curve[%zu] = (%g, %lld), want (%g, %lld)", i,
                     c[i].time_ns, (long long)c[i].bytes, want[i].time_ns,
                     (long long)want[i].bytes);
    done(&f);
}

/* ---- errors and reuse --------------------------------------------------- */

static void test_sim_rejects_bad_input(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(g_hidden);
    commsched_sim *sim = NULL;
    commsched_error err = {0};
    double rt[4] = {10, 20, 0, 5};
    uint32_t dup[4] = {0, 1, 1, 3}, bad[4] = {0, 1, 2, 9};
    uint32_t wrong[4] = {0, 2, 1, 3}; /* w reads c_out: fine; b before... */
    uint32_t late[4] = {3, 0, 1, 2};  /* b before its inputs */
    assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(sim, dup, rt, NULL, &err),
                     COMMSCHED_EINVAL);
    commsched_error_clear(&err);
    assert_int_equal(commsched_sim_run(sim, bad, rt, NULL, &err),
                     COMMSCHED_EINVAL);
    commsched_error_clear(&err);
    assert_int_equal(commsched_sim_run(sim, late, rt, NULL, &err),
                     COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "\"b\""));
    commsched_error_clear(&err);
    assert_int_equal(commsched_sim_run(sim, wrong, rt, NULL, &err),
                     COMMSCHED_OK); /* c, w, a, b is topological */
    rt[1] = -1;
    assert_int_equal(commsched_sim_run(sim, NULL, rt, NULL, &err),
                     COMMSCHED_EINVAL);
    commsched_error_clear(&err);
    rt[1] = NAN;
    assert_int_equal(commsched_sim_run(sim, NULL, rt, NULL, &err),
                     COMMSCHED_EINVAL);
    commsched_sim_destroy(sim);
    commsched_sim_destroy(NULL);
    commsched_graph_destroy(g);
}

/* ---- properties on random graphs ---------------------------------------- */

typedef struct interval {
    double s, e;
} interval;

static int by_start(const void *a, const void *b)
{
    const interval *x = a, *y = b;
    if (x->s != y->s)
        return (x->s > y->s) - (x->s < y->s);
    return (x->e > y->e) - (x->e < y->e); /* empty slices first */
}

/* No two intervals on one stream overlap. */
static void check_streams(const commsched_graph *g, const commsched_sim *sim)
{
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    uint32_t S = commsched_sim_stream_count(sim), n = g->n_nodes;
    interval *iv = malloc((size_t)(n ? n : 1) * sizeof *iv);
    assert_non_null(iv);
    for (uint32_t s = 0; s < S; s++) {
        size_t k = 0;
        for (uint32_t v = 0; v < n; v++) {
            const cs_node *nd = &g->nodes[v];
            int on = s == 0 ? (nd->kind != COMMSCHED_NODE_COLLECTIVE ||
                               nd->is_sync)
                            : (nd->kind == COMMSCHED_NODE_COLLECTIVE &&
                               res[v].stream == s);
            if (on) {
                iv[k].s = res[v].start_ns;
                iv[k].e = res[v].end_ns;
                k++;
            }
        }
        qsort(iv, k, sizeof *iv, by_start);
        for (size_t i = 1; i < k; i++)
            if (iv[i].s < iv[i - 1].e)
                fail_msg("stream %u: [%g, %g] overlaps [%g, %g]", s, iv[i].s,
                         iv[i].e, iv[i - 1].s, iv[i - 1].e);
    }
    free(iv);
}

static void check_run(const commsched_graph *g, const commsched_sim *sim,
                      const uint32_t *order, const double *rt)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    if (!(t->makespan_ns >= t->lower_bound_ns))
        fail_msg("makespan %.17g below the lower bound %.17g (compute %.17g, "
                 "comm %.17g, path %.17g)",
                 t->makespan_ns, t->lower_bound_ns, t->bound_compute_ns,
                 t->bound_comm_ns, t->bound_path_ns);
    if (!(t->exposed_ns <= t->comm_ns * (1 + 1e-12) + 1e-9))
        fail_msg("exposed %.17g above total comm %.17g", t->exposed_ns,
                 t->comm_ns);
    assert_true(t->efficiency > 0 && t->efficiency <= 1.0);
    assert_true(t->overlap >= 0 && t->overlap <= 1.0);
    double exposed = 0;
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t v = order[k];
        const commsched_sim_node *r = &res[v];
        assert_int_equal(r->position, k);
        assert_true(r->start_ns >= r->issue_ns);
        assert_true(r->end_ns == r->start_ns + rt[v]);
        assert_true(r->end_ns <= t->makespan_ns);
        if (k > 0)
            assert_true(r->issue_ns >= res[order[k - 1]].issue_ns);
        if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE) {
            exposed += r->exposed_ns;
            double tol = 1e-9 * (1 + r->end_ns); /* busy-time differences */
            if (!(r->overlapped_ns >= -tol && r->overlapped_ns <= rt[v] + tol))
                fail_msg("%s: overlapped %.17g, runtime %.17g",
                         g->nodes[v].name, r->overlapped_ns, rt[v]);
        }
        /* Every data / after dependency ended before a node that is not
         * an async collective's control-edge successor started. */
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            uint32_t d = g->deps.idx[e];
            if (!cs_is_async_collective(&g->nodes[d]))
                assert_true(res[d].end_ns <= r->start_ns);
        }
    }
    assert_true(fabs(exposed - t->exposed_ns) <= 1e-6 * (1 + t->exposed_ns));
    check_streams(g, sim);
}

static void test_sim_random_properties(void **state)
{
    (void)state;
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tu_graph_opts go = tu_random_opts(20 + (uint32_t)(seed * 7 % 200));
        commsched_graph *g = tu_random_graph(seed, &go);
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc(n * sizeof *order);
        double *rt = malloc(n * sizeof *rt);
        assert_non_null(order);
        assert_non_null(rt);
        commsched_error err = {0};
        tu_rng r;
        tu_rng_seed(&r, seed * 977);
        for (uint32_t v = 0; v < n; v++)
            rt[v] = tu_rng_chance(&r, 10)
                        ? 0
                        : (double)tu_rng_below(&r, 100000) / 7.0;
        commsched_sim *sim = NULL;
        assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
        commsched_sim_options so;
        commsched_sim_options_init(&so);
        for (int trial = 0; trial < 4; trial++) {
            tu_random_topo_order(g, seed * 31 + (uint64_t)trial, trial & 1,
                                 order);
            so.comm_streams = trial & 2 ? COMMSCHED_STREAMS_SINGLE
                                        : COMMSCHED_STREAMS_PER_GROUP;
            if (commsched_sim_run(sim, order, rt, &so, &err) != COMMSCHED_OK)
                fail_msg("seed %llu: %s", (unsigned long long)seed, err.text);
            check_run(g, sim, order, rt);

            /* Per-step peak equals the memory model's. */
            commsched_schedule *s = NULL;
            commsched_memory *m = NULL;
            assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                             COMMSCHED_OK);
            assert_int_equal(commsched_memory_create(s, &m, &err),
                             COMMSCHED_OK);
            const commsched_sim_totals *t = commsched_sim_get_totals(sim);
            assert_int_equal(t->peak_memory_step,
                             commsched_memory_peak(m, s, NULL));
            assert_int_equal(t->memory_baseline, commsched_memory_baseline(m));
            /* The schedule entry point gives the same run. */
            commsched_sim_totals copy = *t;
            assert_int_equal(commsched_sim_run_schedule(sim, s, rt, &so, &err),
                             COMMSCHED_OK);
            assert_memory_equal(&copy, commsched_sim_get_totals(sim),
                                sizeof copy);
            commsched_memory_destroy(m);
            commsched_schedule_destroy(s);
        }
        /* With every runtime 0, time collapses onto the order: the curve's
         * peak is exactly the per-step peak. */
        memset(rt, 0, n * sizeof *rt);
        so.flags |= COMMSCHED_SIM_MEMORY_CURVE;
        assert_int_equal(commsched_sim_run(sim, order, rt, &so, &err),
                         COMMSCHED_OK);
        const commsched_sim_totals *t = commsched_sim_get_totals(sim);
        assert_int_equal(t->peak_memory, t->peak_memory_step);
        assert_true(t->makespan_ns == 0 && t->efficiency == 1.0);
        so.flags &= ~COMMSCHED_SIM_MEMORY_CURVE;
        commsched_sim_destroy(sim);
        free(order);
        free(rt);
        commsched_graph_destroy(g);
    }
}

/* The cost model's runtimes on random graphs in the file order: the same
 * properties, and two sims on one graph agree (no shared state). */
static void test_sim_random_with_cost_model(void **state)
{
    (void)state;
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    for (uint64_t seed = 100; seed < 120; seed++) {
        tu_graph_opts go = tu_random_opts(300);
        commsched_graph *g = tu_random_graph(seed, &go);
        uint32_t n = commsched_graph_node_count(g);
        double *rt = malloc(n * sizeof *rt);
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(rt);
        assert_non_null(order);
        for (uint32_t v = 0; v < n; v++)
            order[v] = v;
        commsched_error err = {0};
        assert_int_equal(commsched_cost_graph(g, &o, rt, NULL, &err),
                         COMMSCHED_OK);
        commsched_sim *a = NULL, *b = NULL;
        assert_int_equal(commsched_sim_create(g, &a, &err), COMMSCHED_OK);
        assert_int_equal(commsched_sim_create(g, &b, &err), COMMSCHED_OK);
        assert_int_equal(commsched_sim_run(a, NULL, rt, NULL, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_sim_run(b, order, rt, NULL, &err),
                         COMMSCHED_OK);
        check_run(g, a, order, rt);
        assert_memory_equal(commsched_sim_get_totals(a),
                            commsched_sim_get_totals(b),
                            sizeof(commsched_sim_totals));
        assert_memory_equal(commsched_sim_get_nodes(a),
                            commsched_sim_get_nodes(b),
                            n * sizeof(commsched_sim_node));
        commsched_sim_destroy(a);
        commsched_sim_destroy(b);
        free(rt);
        free(order);
        commsched_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_hidden_collective),
        cmocka_unit_test(test_sim_exposed_collective),
        cmocka_unit_test(test_sim_two_groups_in_parallel),
        cmocka_unit_test(test_sim_single_stream_mode),
        cmocka_unit_test(test_sim_queued_on_one_stream),
        cmocka_unit_test(test_sim_sync_collective),
        cmocka_unit_test(test_sim_wait_for_collective_issued_long_ago),
        cmocka_unit_test(test_sim_critical_path_is_the_bound),
        cmocka_unit_test(test_sim_async_control_edge_not_in_bound),
        cmocka_unit_test(test_sim_fake_edge_counts_when_respected),
        cmocka_unit_test(test_sim_memory_over_time),
        cmocka_unit_test(test_sim_rejects_bad_input),
        cmocka_unit_test(test_sim_random_properties),
        cmocka_unit_test(test_sim_random_with_cost_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
