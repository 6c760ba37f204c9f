/* commsched unit tests — the overlap pass (passes/overlap.c).
 *
 * - XLA's latency-hiding-scheduler scenarios (reference/overlap-landscape.md
 *   §1) rebuilt as graphs with ApproximateLatencyEstimator's costs (a conv
 *   5000, an async collective 5000, everything else 1): each wait sits just
 *   before its consumer and each collective hides its own conv.
 * - A memory-bound FSDP chain where prefetching every all-gather would pass
 *   the budget: overlap prefetches only as far as memory allows.
 * - Weird graphs: a wait completing two collectives, a collective nobody
 *   waits for, sync collectives, `after` and fake edges, several groups.
 * - Properties on random graphs (testutil.h) at several budgets and
 *   options: a valid order that keeps every edge (fake ones included), the
 *   exact memory model's peak within budget x the input's, a simulated
 *   makespan no longer than the input order's, and determinism.
 *
 * Every pipeline runs with COMMSCHED_PIPELINE_VERIFY (the pass then also
 * checks its own peak against the memory model). Graph texts use single
 * quotes (turned into double quotes on load). */
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
#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"
#include "testutil.h"

typedef struct fx {
    commsched_graph *g;
    commsched_schedule *s;
    commsched_run *run;
    double *rt;
} fx;

static commsched_graph *load_quoted(const char *single_quoted)
{
    size_t n = strlen(single_quoted);
    char *json = malloc(n + 1);
    assert_non_null(json);
    for (size_t i = 0; i <= n; i++)
        json[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    commsched_graph *g = tu_graph_from_json(json);
    free(json);
    return g;
}

static void fx_init(fx *f, commsched_graph *g)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(f->g, NULL, &f->s, &err),
                     COMMSCHED_OK);
    uint32_t nn = commsched_graph_node_count(f->g);
    f->rt = calloc(nn ? nn : 1, sizeof *f->rt);
    assert_non_null(f->rt);
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    assert_int_equal(commsched_cost_graph(f->g, &o, f->rt, NULL, &err),
                     COMMSCHED_OK);
}

static void fx_close(fx *f)
{
    commsched_run_destroy(f->run);
    commsched_schedule_destroy(f->s);
    commsched_graph_destroy(f->g);
    free(f->rt);
    memset(f, 0, sizeof *f);
}

/* Runs `passes` with knobs "k=v,k=v" (NULL: defaults); returns the status
 * (err filled) instead of failing, for the tests of bad knobs. */
static commsched_status fx_try(fx *f, const char *passes, const char *knobs,
                               commsched_error *err)
{
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, err), COMMSCHED_OK);
    if (knobs) {
        char *copy = malloc(strlen(knobs) + 1);
        assert_non_null(copy);
        strcpy(copy, knobs);
        for (char *kv = strtok(copy, ","); kv; kv = strtok(NULL, ",")) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            if (commsched_knobs_set(k, kv, eq + 1, err) != COMMSCHED_OK)
                fail_msg("knob %s: %s", kv, err->text);
        }
        free(copy);
    }
    commsched_run_destroy(f->run);
    f->run = NULL;
    commsched_status st =
        commsched_pipeline_run(f->g, f->s, f->rt, passes, k,
                               COMMSCHED_PIPELINE_VERIFY, &f->run, err);
    commsched_knobs_destroy(k);
    return st;
}

static void fx_run(fx *f, const char *passes, const char *knobs)
{
    commsched_error err = {0};
    commsched_status st = fx_try(f, passes, knobs, &err);
    if (st != COMMSCHED_OK)
        fail_msg("pipeline %s failed: %s: %s", passes,
                 commsched_status_name(st), err.text);
    assert_int_equal(commsched_schedule_check(f->s, 1, &err), COMMSCHED_OK);
}

static uint32_t pos_of(const fx *f, const char *name)
{
    uint32_t want = tu_node(f->g, name), k = 0;
    for (uint32_t v = commsched_schedule_first(f->s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(f->s, v), k++)
        if (v == want)
            return k;
    fail_msg("%s not in the schedule", name);
    return 0;
}

/* Simulated makespan and per-step peak of the current order. */
static void measure(const fx *f, double *makespan, int64_t *peak)
{
    commsched_error err = {0};
    commsched_sim *sim = NULL;
    assert_int_equal(commsched_sim_create(f->g, &sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run_schedule(sim, f->s, f->rt, NULL, &err),
                     COMMSCHED_OK);
    *makespan = commsched_sim_get_totals(sim)->makespan_ns;
    *peak = commsched_sim_get_totals(sim)->peak_memory_step;
    commsched_sim_destroy(sim);
    /* the scheduling memory model agrees with the simulator's */
    commsched_memory *m = NULL;
    assert_int_equal(commsched_memory_create(f->s, &m, &err), COMMSCHED_OK);
    assert_true(commsched_memory_peak(m, f->s, NULL) == *peak);
    commsched_memory_destroy(m);
}

static const commsched_overlap_stats *ov_row(const fx *f, const char *node)
{
    const commsched_pass_stats *p = commsched_run_pass(f->run, 0);
    assert_non_null(p);
    assert_int_equal(p->kind, COMMSCHED_STATS_OVERLAP);
    uint32_t v = tu_node(f->g, node);
    for (uint32_t i = 0; i < p->n_overlap; i++)
        if (p->overlap[i].node == v)
            return &p->overlap[i];
    fail_msg("no overlap row for %s", node);
    return NULL;
}

/* ---- XLA's latency hiding scheduler scenarios --------------------------- */

#define HDR                                                                    \
    "{'format': 'commsched-graph', 'version': 1, "                           \
    "'groups': [{'name': 'g', 'size': 8, 'hosts': 1}], "
/* A compute node: name, inputs (quoted list body), output size, runtime. */
#define COMP(name, in, size, rt)                                               \
    "{'name': '" name "', 'kind': 'compute', 'inputs': [" in "], "           \
    "'outputs': [{'name': '" name "_o', 'size': " #size "}], "               \
    "'runtime_ns': " #rt "}"
#define COLL(name, op, in, size)                                               \
    "{'name': '" name "', 'kind': 'collective', 'op': '" op "', "            \
    "'group': 'g', 'inputs': [" in "], "                                     \
    "'outputs': [{'name': '" name "_o', 'size': " #size "}], "               \
    "'runtime_ns': 5000}"
#define WAIT(name, coll)                                                       \
    "{'name': '" name "', 'kind': 'wait', 'inputs': ['" coll "_o'], "       \
    "'outputs': [{'name': '" name "_o', 'alias_of': '" coll "_o'}]}"

/* AllGatherAsyncSimple: rid -> cvt -> bcast -> ag_start -> ag_done;
 * c0 = conv(p0, p1), c1 = conv(p0, p1) (unused); ROOT a2 = add(ag_done,
 * c0). The input order waits right after the start. Expected: the done
 * immediately before its consumer a2, both convs between start and done:
 *   rid cvt bcast ag c0 c1 ag_done a2
 * (the input order's compute order; the all-gather is issued as soon as
 * bcast exists and hides both convs: makespan 3 + 5000 + 5000 + 1). */
static void test_xla_all_gather_async_simple(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, load_quoted(
                    HDR "'inputs': [{'name': 'p0', 'size': 16}, "
                        "{'name': 'p1', 'size': 16}, {'name': 'p2', "
                        "'size': 16}], 'outputs': ['a2_o'], 'nodes': ["
                    COMP("rid", "'p2'", 16, 1) ","
                    COMP("cvt", "'rid_o'", 16, 1) ","
                    COMP("bcast", "'cvt_o'", 16, 1) ","
                    COLL("ag", "all_gather", "'bcast_o'", 128) ","
                    WAIT("ag_done", "ag") ","
                    COMP("c0", "'p0', 'p1'", 16, 5000) ","
                    COMP("c1", "'p0', 'p1'", 16, 5000) ","
                    COMP("a2", "'ag_done_o', 'c0_o'", 16, 1) "]}"));
    double before, after;
    int64_t pk_before, pk_after;
    measure(&f, &before, &pk_before);
    fx_run(&f, "overlap", NULL);
    tu_expect_order(f.g, f.s, "rid cvt bcast ag c0 c1 ag_done a2");
    assert_int_equal(pos_of(&f, "ag_done") + 1, pos_of(&f, "a2"));
    measure(&f, &after, &pk_after);
    assert_true(after == 3 + 5000 + 5000 + 1);
    assert_true(before == 3 + 5000 + 5000 + 5000 + 1);
    assert_true(pk_after <= pk_before);
    const commsched_overlap_stats *o = ov_row(&f, "ag");
    assert_true(o->hidden_before == 0.0 && o->hidden_after == 1.0);
    assert_string_equal(o->limit, "none");
    fx_close(&f);
}

/* AllGatherAsyncBalance / AllReduceAsyncBalance: two chains
 * bcast -> start_i -> done_i -> bitcast_i and two convs c0, c1,
 * a2 = add(c1, c0); outputs a2, bitcast1, bitcast0. The input order puts
 * each done and bitcast right after its start. Expected: each collective
 * hides exactly one conv and they do not nest —
 *   start(ag0) < c0 < done(ag0) and start(ag1) < c1 < done(ag1):
 *   bcast ag0 c0 ag0_done bitcast0 ag1 c1 ag1_done bitcast1 a2,
 * each done right before its bitcast. The second start is issued only
 * when the group's stream would go idle (ag0 runs until 5001, c0 ends at
 * 5001), so it starts as the first ends; of the orders that fast, the one
 * issuing ag1 after bitcast0 holds the least memory. With XLA's limit of
 * one in flight (overlap_max_in_flight_bytes = one collective's bytes) the
 * order is the same. Both write 128 bytes: an all_gather 8 x bcast's 16 on
 * g's 8 ranks, an all_reduce the 128 it reads (docs/FORMAT.md, "Collective
 * sizes"). bcast_o is a graph output, so neither collective frees it: an
 * all_reduce that did (the last reader of its input) would be issued at no
 * memory cost, which the pass prefers, and ag1 would hide c0 (the same
 * balance under other names). */
static void balance(const char *op)
{
    char text[4096];
    int in = strcmp(op, "all_gather") == 0 ? 16 : 128;
    snprintf(text, sizeof text,
             HDR "'inputs': [{'name': 'p', 'size': 16}], "
                 "'outputs': ['a2_o', 'bitcast1_o', 'bitcast0_o', 'bcast_o'], "
                 "'nodes': ["
             "{'name': 'bcast', 'kind': 'compute', 'inputs': ['p'], "
             "'outputs': [{'name': 'bcast_o', 'size': %d}], "
             "'runtime_ns': 1},"
             "{'name': 'ag0', 'kind': 'collective', 'op': '%s', "
             "'group': 'g', 'inputs': ['bcast_o'], 'outputs': [{'name': "
             "'ag0_o', 'size': 128}], 'runtime_ns': 5000},"
             WAIT("ag0_done", "ag0") ","
             COMP("bitcast0", "'ag0_done_o'", 16, 1) ","
             "{'name': 'ag1', 'kind': 'collective', 'op': '%s', "
             "'group': 'g', 'inputs': ['bcast_o'], 'outputs': [{'name': "
             "'ag1_o', 'size': 128}], 'runtime_ns': 5000},"
             WAIT("ag1_done", "ag1") ","
             COMP("bitcast1", "'ag1_done_o'", 16, 1) ","
             COMP("c0", "'p'", 16, 5000) ","
             COMP("c1", "'p'", 16, 5000) ","
             COMP("a2", "'c1_o', 'c0_o'", 16, 1) "]}",
             in, op, op);
    fx f;
    for (int limit = 0; limit < 2; limit++) {
        fx_init(&f, load_quoted(text));
        fx_run(&f, "overlap",
               limit ? "overlap_peak_budget=inf,"
                       "overlap_max_in_flight_bytes=128"
                     : "overlap_peak_budget=inf");
        tu_expect_order(f.g, f.s,
                        "bcast ag0 c0 ag0_done bitcast0 ag1 c1 ag1_done "
                        "bitcast1 a2");
        assert_true(pos_of(&f, "ag0_done") < pos_of(&f, "ag1"));
        assert_true(pos_of(&f, "ag0") < pos_of(&f, "c0") &&
                    pos_of(&f, "c0") < pos_of(&f, "ag0_done"));
        assert_true(pos_of(&f, "ag1") < pos_of(&f, "c1") &&
                    pos_of(&f, "c1") < pos_of(&f, "ag1_done"));
        double ms;
        int64_t pk;
        measure(&f, &ms, &pk);
        assert_true(ms == 1 + 5000 + 1 + 5000 + 1 + 1);
        assert_string_equal(ov_row(&f, "ag0")->limit, "none");
        assert_string_equal(ov_row(&f, "ag1")->limit, "none");
        fx_close(&f);
    }
}

static void test_xla_all_gather_async_balance(void **state)
{
    (void)state;
    balance("all_gather");
}

static void test_xla_all_reduce_async_balance(void **state)
{
    (void)state;
    balance("all_reduce");
}

/* AllGatherAsyncOverlapped: ag0 = start(bcast1), ag1 = start(bcast2);
 * ROOT add(done0, done1); c0 and c1 are unused convs. XLA's overlap limit
 * of one in-flight all-gather gives done(ag0) < start(ag1). Ours is
 * overlap_max_in_flight_bytes: set to one all-gather's bytes, the second
 * is issued only after the first's wait, and each hides one conv:
 *   bcast1 ag0 bcast2 c0 ag0_done ag1 c1 ag1_done add.
 * Without the limit both are in flight at once (the stream still runs
 * them one after the other). Variants 2 and 3 feed both dones into a conv
 * instead of the add: same property. */
static void overlapped(const char *root, int root_rt)
{
    char text[4096];
    snprintf(text, sizeof text,
             HDR "'inputs': [{'name': 'p', 'size': 16}], "
                 "'outputs': ['%s_o'], 'nodes': ["
             COMP("bcast1", "'p'", 16, 1) ","
             COLL("ag0", "all_gather", "'bcast1_o'", 128) ","
             WAIT("ag0_done", "ag0") ","
             COMP("bcast2", "'p'", 16, 1) ","
             COLL("ag1", "all_gather", "'bcast2_o'", 128) ","
             WAIT("ag1_done", "ag1") ","
             "{'name': '%s', 'kind': 'compute', 'inputs': ['ag0_done_o', "
             "'ag1_done_o'], 'outputs': [{'name': '%s_o', 'size': 16}], "
             "'runtime_ns': %d},"
             COMP("c0", "'p'", 16, 5000) ","
             COMP("c1", "'p'", 16, 5000) "]}",
             root, root, root, root_rt);
    fx f;
    fx_init(&f, load_quoted(text));
    fx_run(&f, "overlap",
           "overlap_peak_budget=inf,overlap_max_in_flight_bytes=128");
    char want[256];
    snprintf(want, sizeof want,
             "bcast1 ag0 bcast2 c0 ag0_done ag1 c1 ag1_done %s", root);
    tu_expect_order(f.g, f.s, want);
    assert_true(pos_of(&f, "ag0_done") < pos_of(&f, "ag1"));
    fx_close(&f);

    fx_init(&f, load_quoted(text));
    fx_run(&f, "overlap", "overlap_peak_budget=inf");
    assert_true(pos_of(&f, "ag1") < pos_of(&f, "ag0_done"));
    fx_close(&f);
}

static void test_xla_all_gather_async_overlapped(void **state)
{
    (void)state;
    overlapped("add", 1);
    overlapped("conv", 5000);
}

/* ---- memory-bound FSDP: prefetch only as far as memory allows ----------- */

/* Four layers: all-gather i (100 ns, 1000 bytes out) -> wait -> compute i
 * (100 ns, reads the weights and the previous activation, 10 bytes out).
 * The input order waits at once, so one layer's weights are live at a
 * time: peak = 1000 + activations. Prefetching every all-gather (what
 * raise_comms,sink_waits does) holds all four. With a budget of 2x the
 * input's peak, overlap keeps at most two layers' weights live: it
 * prefetches one layer ahead, and the all-gather it cannot hoist further
 * reports the memory budget as its limit. */
static const char *FSDP4 =
    HDR "'inputs': [{'name': 'x', 'size': 10, 'freeable': true}, "
        "{'name': 's0', 'size': 125}, {'name': 's1', 'size': 125}, "
        "{'name': 's2', 'size': 125}, {'name': 's3', 'size': 125}], "
        "'outputs': ['y3_o'], 'nodes': ["
    "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', 'group': 'g', "
    " 'inputs': ['s0'], 'outputs': [{'name': 'ag0_o', 'size': 1000}], "
    " 'runtime_ns': 100},"
    WAIT("w0", "ag0") ","
    COMP("y0", "'x', 'w0_o'", 10, 100) ","
    "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', 'group': 'g', "
    " 'inputs': ['s1'], 'outputs': [{'name': 'ag1_o', 'size': 1000}], "
    " 'runtime_ns': 100},"
    WAIT("w1", "ag1") ","
    COMP("y1", "'y0_o', 'w1_o'", 10, 100) ","
    "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', 'group': 'g', "
    " 'inputs': ['s2'], 'outputs': [{'name': 'ag2_o', 'size': 1000}], "
    " 'runtime_ns': 100},"
    WAIT("w2", "ag2") ","
    COMP("y2", "'y1_o', 'w2_o'", 10, 100) ","
    "{'name': 'ag3', 'kind': 'collective', 'op': 'all_gather', 'group': 'g', "
    " 'inputs': ['s3'], 'outputs': [{'name': 'ag3_o', 'size': 1000}], "
    " 'runtime_ns': 100},"
    WAIT("w3", "ag3") ","
    COMP("y3", "'y2_o', 'w3_o'", 10, 100) "]}";

static void test_fsdp_memory_bound_prefetch(void **state)
{
    (void)state;
    fx f;
    double ms_in, ms;
    int64_t pk_in, pk;

    /* Prefetching everything passes a 2x budget. */
    fx_init(&f, load_quoted(FSDP4));
    measure(&f, &ms_in, &pk_in);
    assert_true(ms_in == 800);
    fx_run(&f, "raise_comms,sink_waits", NULL);
    measure(&f, &ms, &pk);
    assert_true(pk > 2 * pk_in);
    fx_close(&f);

    /* Budget 2x: one layer ahead. Each all-gather after the first is
     * issued before the previous layer's compute and its weights are
     * never live with more than one other layer's. */
    fx_init(&f, load_quoted(FSDP4));
    fx_run(&f, "overlap", "overlap_peak_budget=2");
    measure(&f, &ms, &pk);
    assert_true(pk <= 2 * pk_in);
    assert_true(ms < ms_in);
    assert_true(pos_of(&f, "ag1") < pos_of(&f, "y0"));
    assert_true(pos_of(&f, "ag2") < pos_of(&f, "y1"));
    assert_true(pos_of(&f, "ag3") < pos_of(&f, "y2"));
    /* ... but not two ahead: that would hold three layers' weights */
    assert_true(pos_of(&f, "ag2") > pos_of(&f, "y0"));
    assert_true(pos_of(&f, "ag3") > pos_of(&f, "y1"));
    assert_true(ms == 100 + 4 * 100); /* only the first gather exposed */
    fx_close(&f);

    /* Budget 1x: no room for a second layer's weights; the all-gathers
     * stay where they were and say why. */
    fx_init(&f, load_quoted(FSDP4));
    fx_run(&f, "overlap", "overlap_peak_budget=1");
    measure(&f, &ms, &pk);
    assert_true(pk <= pk_in);
    assert_true(ms == ms_in);
    const commsched_pass_stats *p = commsched_run_pass(f.run, 0);
    assert_string_equal(p->overlap_variant, "input");
    assert_true(p->overlap_budget_bytes == pk_in);
    fx_close(&f);

    /* No limit: every all-gather goes as early as the stream takes it. */
    fx_init(&f, load_quoted(FSDP4));
    fx_run(&f, "overlap", "overlap_peak_budget=inf");
    measure(&f, &ms, &pk);
    assert_true(ms == 100 + 4 * 100);
    assert_true(commsched_run_pass(f.run, 0)->overlap_budget_bytes == -1);
    fx_close(&f);
}

/* With a 1.5x budget the second layer's weights fit ahead of the first
 * compute only partly: overlap hoists what fits and the one it could not
 * hoist far enough is limited by the memory budget. */
static void test_fsdp_limit_is_memory(void **state)
{
    (void)state;
    fx f;
    double ms_in, ms;
    int64_t pk_in, pk;
    fx_init(&f, load_quoted(FSDP4));
    measure(&f, &ms_in, &pk_in);
    fx_run(&f, "overlap", "overlap_peak_budget=1.5");
    measure(&f, &ms, &pk);
    assert_true(pk <= (int64_t)(1.5 * (double)pk_in));
    assert_true(ms <= ms_in);
    int memory = 0;
    const commsched_pass_stats *p = commsched_run_pass(f.run, 0);
    for (uint32_t i = 0; i < p->n_overlap; i++)
        memory += strcmp(p->overlap[i].limit, "memory budget") == 0 ||
                  strcmp(p->overlap[i].limit, "input order kept") == 0;
    assert_true(memory >= 1);
    fx_close(&f);
}

/* ---- weird graphs -------------------------------------------------------- */

/* Two groups; a wait that completes two collectives; a collective nobody
 * waits for; a sync collective; an `after` edge from a compute node to a
 * collective; a fake edge. The order is valid for every edge and never
 * slower than the input; with overlap_collective_order=group each group's
 * collectives keep their input order. */
static const char *WEIRD =
    "{'format': 'commsched-graph', 'version': 1, "
    "'groups': [{'name': 'dp', 'size': 8, 'hosts': 1}, "
    "{'name': 'tp', 'size': 4, 'hosts': 1}], "
    "'inputs': [{'name': 'x', 'size': 64, 'freeable': true}, "
    "{'name': 'w', 'size': 64}], 'outputs': ['out_o', 'lone_o'], "
    "'nodes': ["
    "{'name': 'a', 'kind': 'compute', 'inputs': ['x'], 'outputs': "
    " [{'name': 'a_o', 'size': 64}], 'runtime_ns': 100},"
    "{'name': 'c1', 'kind': 'collective', 'op': 'all_reduce', 'group': 'dp',"
    " 'inputs': ['a_o'], 'outputs': [{'name': 'c1_o', 'size': 64}],"
    " 'runtime_ns': 300},"
    "{'name': 'c2', 'kind': 'collective', 'op': 'all_gather', 'group': 'tp',"
    " 'inputs': ['w'], 'outputs': [{'name': 'c2_o', 'size': 256}],"
    " 'runtime_ns': 200},"
    "{'name': 'w12', 'kind': 'wait', 'inputs': ['c1_o', 'c2_o'], 'outputs':"
    " [{'name': 'w1_o', 'alias_of': 'c1_o'}, {'name': 'w2_o', 'alias_of':"
    " 'c2_o'}]},"
    "{'name': 'lone', 'kind': 'collective', 'op': 'broadcast', 'group': 'tp',"
    " 'inputs': ['x'], 'outputs': [{'name': 'lone_o', 'size': 64}],"
    " 'runtime_ns': 50},"
    "{'name': 'b', 'kind': 'compute', 'inputs': ['x'], 'outputs': "
    " [{'name': 'b_o', 'size': 64}], 'runtime_ns': 400, 'after': ['a']},"
    "{'name': 's', 'kind': 'collective', 'op': 'all_reduce', 'group': 'dp',"
    " 'async': false, 'inputs': ['b_o'], 'outputs': [{'name': 's_o',"
    " 'size': 64}], 'runtime_ns': 80},"
    "{'name': 'd', 'kind': 'compute', 'inputs': ['x'], 'outputs': "
    " [{'name': 'd_o', 'size': 64}], 'runtime_ns': 300, "
    " 'after_fake': ['s']},"
    "{'name': 'c3', 'kind': 'collective', 'op': 'all_reduce', 'group': 'dp',"
    " 'inputs': ['d_o'], 'outputs': [{'name': 'c3_o', 'size': 64}],"
    " 'runtime_ns': 300, 'after': ['b']},"
    "{'name': 'w3', 'kind': 'wait', 'inputs': ['c3_o'], 'outputs': "
    " [{'name': 'w3_o', 'alias_of': 'c3_o'}]},"
    "{'name': 'out', 'kind': 'compute', 'inputs': ['w1_o', 'w2_o', 's_o',"
    " 'w3_o'], 'outputs': [{'name': 'out_o', 'size': 64}],"
    " 'runtime_ns': 10}]}";

static uint32_t collective_sequence(const fx *f, const char *group_prefix,
                                    uint32_t *out)
{
    (void)group_prefix;
    uint32_t n = 0;
    for (uint32_t v = commsched_schedule_first(f->s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(f->s, v))
        if (commsched_graph_node_kind(f->g, v) == COMMSCHED_NODE_COLLECTIVE)
            out[n++] = v;
    return n;
}

static void test_weird_graph(void **state)
{
    (void)state;
    static const char *const knobs[] = {
        NULL, "overlap_peak_budget=inf", "overlap_collective_order=group",
        "overlap_collective_order=input", "overlap_reorder_window=0",
        "overlap_max_in_flight_bytes=64", "overlap_search=full"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        fx f;
        double ms_in, ms;
        int64_t pk_in, pk;
        fx_init(&f, load_quoted(WEIRD));
        measure(&f, &ms_in, &pk_in);
        uint32_t before[16], after[16];
        uint32_t nb = collective_sequence(&f, NULL, before);
        fx_run(&f, "overlap", knobs[i]);
        measure(&f, &ms, &pk);
        if (ms > ms_in)
            fail_msg("%s: makespan %g > input %g", knobs[i] ? knobs[i] : "-",
                     ms, ms_in);
        if (!knobs[i] || strcmp(knobs[i], "overlap_peak_budget=inf") != 0)
            assert_true(pk <= pk_in);
        uint32_t na = collective_sequence(&f, NULL, after);
        assert_int_equal(na, nb);
        if (knobs[i] && strcmp(knobs[i], "overlap_collective_order=input") == 0)
            assert_memory_equal(before, after, nb * sizeof *before);
        /* every collective has a row; the lone one has no wait */
        const commsched_overlap_stats *o = ov_row(&f, "lone");
        assert_true(o->wait == COMMSCHED_NONE &&
                    o->wait_after == COMMSCHED_NONE);
        assert_string_equal(ov_row(&f, "s")->limit,
                            ov_row(&f, "s")->exposed_after_ns > 0 ? "sync"
                                                                  : "none");
        fx_close(&f);
    }
    /* The unconstrained order hides c1 and c2 behind b and d. */
    fx f;
    fx_init(&f, load_quoted(WEIRD));
    fx_run(&f, "overlap", "overlap_peak_budget=inf");
    assert_true(ov_row(&f, "c1")->exposed_after_ns == 0);
    assert_true(ov_row(&f, "c2")->exposed_after_ns == 0);
    fx_close(&f);
}

/* overlap after decide_global_ordering_of_comms keeps the chain of fake
 * edges it added (the heap scheduler's rule), so the collectives keep
 * their order. */
static void test_after_global_ordering(void **state)
{
    (void)state;
    for (uint64_t seed = 300; seed < 320; seed++) {
        fx f;
        tu_graph_opts o = tu_random_opts(10 + (uint32_t)(seed % 40));
        fx_init(&f, tu_random_graph(seed, &o));
        uint32_t n = commsched_graph_node_count(f.g);
        uint32_t *before = calloc(n, sizeof *before);
        uint32_t *after = calloc(n, sizeof *after);
        assert_non_null(before);
        assert_non_null(after);
        uint32_t nb = collective_sequence(&f, NULL, before);
        fx_run(&f, "decide_global_ordering_of_comms,overlap",
               "overlap_peak_budget=inf");
        uint32_t na = collective_sequence(&f, NULL, after);
        assert_int_equal(na, nb);
        if (memcmp(before, after, nb * sizeof *before) != 0)
            fail_msg("seed %llu: collective order changed",
                     (unsigned long long)seed);
        free(before);
        free(after);
        fx_close(&f);
    }
}

/* ---- properties on random graphs ---------------------------------------- */

static void test_random_properties(void **state)
{
    (void)state;
    static const char *const knobs[] = {
        "overlap_peak_budget=1.0",
        "overlap_peak_budget=1.25",
        "overlap_peak_budget=inf",
        "overlap_peak_budget=1.1,overlap_collective_order=group",
        "overlap_peak_budget=1.0,overlap_collective_order=input",
        "overlap_peak_budget=1.5,overlap_max_in_flight_bytes=100000",
        "overlap_peak_budget=1.2,overlap_reorder_window=3",
        "overlap_peak_budget=1.0,overlap_search=full"};
    static const double factor[] = {1.0, 1.25, INFINITY, 1.1,
                                    1.0, 1.5,  1.2,      1.0};
    commsched_error err = {0};
    for (uint64_t seed = 1; seed <= 60; seed++)
        for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
            fx f;
            tu_graph_opts o = tu_random_opts(8 + (uint32_t)(seed % 50));
            fx_init(&f, tu_random_graph(seed, &o));
            double ms_in, ms;
            int64_t pk_in, pk;
            measure(&f, &ms_in, &pk_in);
            uint32_t n = commsched_graph_node_count(f.g);
            uint32_t *in = calloc(n ? n : 1, sizeof *in);
            uint32_t *out = calloc(n ? n : 1, sizeof *out);
            assert_non_null(in);
            assert_non_null(out);
            uint32_t nc_in = collective_sequence(&f, NULL, in);
            fx_run(&f, "overlap", knobs[i]);
            /* every data, after and fake edge runs forward */
            if (commsched_schedule_check(f.s, 1, &err) != COMMSCHED_OK)
                fail_msg("seed %llu %s: %s", (unsigned long long)seed,
                         knobs[i], err.text);
            measure(&f, &ms, &pk);
            if (ms > ms_in)
                fail_msg("seed %llu %s: makespan %.17g > input %.17g",
                         (unsigned long long)seed, knobs[i], ms, ms_in);
            if (!isinf(factor[i]) &&
                (double)pk > floor(factor[i] * (double)pk_in))
                fail_msg("seed %llu %s: peak %lld above %g x %lld",
                         (unsigned long long)seed, knobs[i], (long long)pk,
                         factor[i], (long long)pk_in);
            const commsched_pass_stats *p = commsched_run_pass(f.run, 0);
            assert_true(p->peak_after == pk && p->peak_before == pk_in);
            if (strstr(knobs[i], "order=input")) {
                uint32_t nc = collective_sequence(&f, NULL, out);
                assert_int_equal(nc, nc_in);
                assert_memory_equal(in, out, nc * sizeof *in);
            }
            /* statistics: one row per collective, limits from the list */
            uint32_t nc = 0;
            for (uint32_t v = 0; v < n; v++)
                nc += commsched_graph_node_kind(f.g, v) ==
                      COMMSCHED_NODE_COLLECTIVE;
            assert_int_equal(p->n_overlap, nc);
            for (uint32_t r = 0; r < p->n_overlap; r++) {
                const commsched_overlap_stats *s = &p->overlap[r];
                assert_true(s->hidden_after >= 0 && s->hidden_after <= 1);
                static const char *const limits[] = {
                    "none",           "data dependency", "memory budget",
                    "in-flight limit", "stream busy",    "no compute left",
                    "sync",           "input order kept"};
                int known = 0;
                for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
                    known |= strcmp(s->limit, limits[l]) == 0;
                if (!known)
                    fail_msg("unknown limit %s", s->limit);
                if (s->exposed_after_ns == 0)
                    assert_string_equal(s->limit, "none");
            }
            /* deterministic: the same input gives the same order */
            uint32_t *first = calloc(n ? n : 1, sizeof *first);
            assert_non_null(first);
            assert_int_equal(commsched_schedule_to_array(f.s, first, &err),
                             COMMSCHED_OK);
            fx_close(&f);
            fx_init(&f, tu_random_graph(seed, &o));
            fx_run(&f, "overlap", knobs[i]);
            assert_int_equal(commsched_schedule_to_array(f.s, out, &err),
                             COMMSCHED_OK);
            assert_memory_equal(first, out, n * sizeof *out);
            free(first);
            free(in);
            free(out);
            fx_close(&f);
        }
}

/* Run twice, the second pass's input is the first's output: still valid,
 * still within budget of its own input. And a random topological input
 * order (not the file's). */
static void test_random_input_orders(void **state)
{
    (void)state;
    commsched_error err = {0};
    for (uint64_t seed = 500; seed < 530; seed++) {
        tu_graph_opts o = tu_random_opts(30);
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *ord = calloc(n, sizeof *ord);
        assert_non_null(ord);
        tu_random_topo_order(g, seed, 1, ord);
        fx f;
        fx_init(&f, g);
        commsched_schedule_destroy(f.s);
        assert_int_equal(commsched_schedule_create(f.g, ord, &f.s, &err),
                         COMMSCHED_OK);
        double ms_in, ms;
        int64_t pk_in, pk;
        measure(&f, &ms_in, &pk_in);
        fx_run(&f, "overlap,overlap", NULL);
        measure(&f, &ms, &pk);
        assert_true(ms <= ms_in);
        assert_true(pk <= pk_in);
        free(ord);
        fx_close(&f);
    }
}

static void test_bad_budget(void **state)
{
    (void)state;
    commsched_error err = {0};
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    /* Below 1, and finite but past the range (1e308 x the peak once drew
     * a negative budget): refused when set. */
    static const char *const bad[] = {"0.5", "1e308", "1e999", "-inf", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        commsched_error_clear(&err);
        assert_int_equal(commsched_knobs_set(k, "overlap_peak_budget", bad[i],
                                             &err),
                         COMMSCHED_EINVAL);
        assert_non_null(strstr(err.text, "--set overlap_peak_budget: "));
    }
    char buf[64];
    assert_int_equal(commsched_knobs_get(k, "overlap_peak_budget", buf,
                                         sizeof buf),
                     0);
    assert_string_equal(buf, "1");
    assert_int_equal(commsched_knobs_set(k, "overlap_peak_budget", "inf", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_knobs_get(k, "overlap_peak_budget", buf,
                                         sizeof buf),
                     0);
    assert_int_equal(commsched_knobs_set(k, "overlap_peak_budget", buf, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_knobs_set(k, "overlap_collective_order",
                                         "sideways", &err),
                     COMMSCHED_EINVAL);
    commsched_knobs_destroy(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xla_all_gather_async_simple),
        cmocka_unit_test(test_xla_all_gather_async_balance),
        cmocka_unit_test(test_xla_all_reduce_async_balance),
        cmocka_unit_test(test_xla_all_gather_async_overlapped),
        cmocka_unit_test(test_fsdp_memory_bound_prefetch),
        cmocka_unit_test(test_fsdp_limit_is_memory),
        cmocka_unit_test(test_weird_graph),
        cmocka_unit_test(test_after_global_ordering),
        cmocka_unit_test(test_random_properties),
        cmocka_unit_test(test_random_input_orders),
        cmocka_unit_test(test_bad_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
