/* commsched unit tests — the bucketing passes (passes/bucketing.c):
 * Inductor's bucketing scenarios (reference/inductor-overlap-passes.md §6),
 * every close reason, the cap (DDP's and XLA's presets), the memory budget,
 * placement, names, statistics, the pipeline API that hands a rewritten
 * graph back, and properties on random graphs: the rewritten graph is
 * valid, round-trips through JSON, its memory equals a full recompute, the
 * budget holds, and bucket_mode=cost never lengthens the simulated step.
 *
 * Scenario graphs start with an "act" node whose unread 1 MB output sets
 * the peak, as activations do in a training step, so the default budget
 * (0) leaves room for the buckets unless a test is about memory. Graph
 * texts use single quotes (turned into double quotes on load). */
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
#include "graph_internal.h"
#include "testutil.h"

#define ALL_BUCKETS "bucket_all_gather,bucket_reduce_scatter,bucket_all_reduce"

#define HDR                                                                    \
    "{'format': 'commsched-graph', 'version': 1, "                             \
    "'groups': [{'name': 'dp', 'size': 4, 'hosts': 1}, "                       \
    "{'name': 'tp', 'size': 2, 'hosts': 1}], "
#define ACT                                                                    \
    "{'name': 'act', 'kind': 'compute', "                                      \
    " 'outputs': [{'name': 'act_o', 'size': 1000000}]},"

/* ---- fixture -------------------------------------------------------------- */

typedef struct bx {
    commsched_graph *g0;    /* ours: loaded or generated */
    commsched_schedule *s0; /* ours */
    commsched_graph *g;     /* the pipeline's result (g0 or the run's) */
    commsched_schedule *s;
    commsched_run *run;
    double *rt0;
} bx;

static char *unquote(const char *single_quoted)
{
    size_t n = strlen(single_quoted);
    char *json = malloc(n + 1);
    assert_non_null(json);
    for (size_t i = 0; i <= n; i++)
        json[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    return json;
}

static void bx_open_graph(bx *x, commsched_graph *g, const uint32_t *order)
{
    memset(x, 0, sizeof *x);
    commsched_error err = {0};
    x->g = x->g0 = g;
    assert_int_equal(commsched_schedule_create(g, order, &x->s0, &err),
                     COMMSCHED_OK);
    x->s = x->s0;
    x->rt0 = tu_default_runtimes(g);
}

static void bx_open(bx *x, const char *single_quoted)
{
    char *json = unquote(single_quoted);
    commsched_graph *g = tu_graph_from_json(json);
    free(json);
    bx_open_graph(x, g, NULL);
}

static void bx_close(bx *x)
{
    commsched_run_destroy(x->run); /* first: it owns rewritten graphs */
    commsched_schedule_destroy(x->s0);
    commsched_graph_destroy(x->g0);
    free(x->rt0);
    memset(x, 0, sizeof *x);
}

static commsched_knobs *knobs_from(const char *text)
{
    commsched_error err = {0};
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    if (!text)
        return k;
    char *copy = malloc(strlen(text) + 1);
    assert_non_null(copy);
    strcpy(copy, text);
    for (char *kv = strtok(copy, ","); kv; kv = strtok(NULL, ",")) {
        char *eq = strchr(kv, '=');
        assert_non_null(eq);
        *eq = '\0';
        if (commsched_knobs_set(k, kv, eq + 1, &err) != COMMSCHED_OK)
            fail_msg("knob %s: %s", kv, err.text);
    }
    free(copy);
    return k;
}

/* Runs `passes` with knobs "k=v,k=v" (NULL: defaults) through
 * commsched_pipeline_apply with every check on; the run must succeed. */
static void bx_run(bx *x, const char *passes, const char *knobs)
{
    commsched_error err = {0};
    commsched_knobs *k = knobs_from(knobs);
    assert_null(x->run);
    commsched_status st = commsched_pipeline_apply(
        &x->g, &x->s, x->rt0, NULL, passes, k, COMMSCHED_PIPELINE_VERIFY,
        &x->run, &err);
    commsched_knobs_destroy(k);
    if (st != COMMSCHED_OK)
        fail_msg("pipeline %s failed: %s: %s", passes,
                 commsched_status_name(st), err.text);
    assert_int_equal(commsched_schedule_check(x->s, 0, &err), COMMSCHED_OK);
    assert_ptr_equal(commsched_schedule_graph(x->s), x->g);
}

static const commsched_pass_stats *pass_at(const bx *x, size_t i)
{
    const commsched_pass_stats *p = commsched_run_pass(x->run, i);
    assert_non_null(p);
    return p;
}

static uint32_t count_kind(const commsched_graph *g, commsched_node_kind kind)
{
    uint32_t c = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        c += g->nodes[v].kind == kind;
    return c;
}

/* One bucket row: member names "a,b,c" and the close reason. */
static void expect_bucket(const commsched_pass_stats *p, uint32_t i,
                          const char *members, const char *closed_by)
{
    if (i >= p->n_buckets)
        fail_msg("%s: %u buckets, want bucket %u", p->pass, p->n_buckets, i);
    const commsched_bucket_stats *b = &p->buckets[i];
    char got[512];
    size_t len = 0;
    got[0] = '\0';
    for (uint32_t k = 0; k < b->n_members; k++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s",
                                k ? "," : "", b->members[k]);
    if (strcmp(got, members) != 0)
        fail_msg("bucket %u members\n  got:  %s\n  want: %s", i, got, members);
    if (strcmp(b->closed_by, closed_by) != 0)
        fail_msg("bucket %u (%s) closed by %s, want %s", i, got, b->closed_by,
                 closed_by);
}

static int64_t peak_of(const commsched_schedule *s)
{
    commsched_error err = {0};
    commsched_memory *m = NULL;
    assert_int_equal(commsched_memory_create(s, &m, &err), COMMSCHED_OK);
    int64_t p = commsched_memory_peak(m, s, NULL);
    commsched_memory_destroy(m);
    return p;
}

static double makespan_of(const commsched_schedule *s, const double *rt)
{
    commsched_error err = {0};
    commsched_sim *sim = NULL;
    assert_int_equal(
        commsched_sim_create(commsched_schedule_graph(s), &sim, &err),
        COMMSCHED_OK);
    assert_int_equal(commsched_sim_run_schedule(sim, s, rt, NULL, &err),
                     COMMSCHED_OK);
    double m = commsched_sim_get_totals(sim)->makespan_ns;
    commsched_sim_destroy(sim);
    return m;
}

/* The pipeline's graph: valid (the builder made it); saved in the final
 * order (after dropping the fake edges that order breaks, as the CLI does)
 * it loads again and saves to the same bytes; its memory equals a full
 * recompute on the reloaded graph, position by position. */
static void check_rewritten(const bx *x)
{
    commsched_error err = {0};
    uint32_t n = commsched_graph_node_count(x->g);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    uint32_t dropped = 0;
    assert_non_null(order);
    assert_int_equal(commsched_schedule_to_array(x->s, order, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_graph_drop_violated_fake_edges(
                         x->g, x->s, &dropped, NULL, &err),
                     COMMSCHED_OK);
    char *text = tu_graph_to_json(x->g, order);
    commsched_graph *back = tu_graph_from_json(text);
    char *again = tu_graph_to_json(back, NULL);
    if (strcmp(text, again) != 0)
        fail_msg("JSON round trip differs:\n%s\n%s", text, again);
    free(text);
    free(again);

    commsched_schedule *s2 = NULL;
    commsched_memory *m1 = NULL, *m2 = NULL;
    assert_int_equal(commsched_schedule_create(back, NULL, &s2, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(x->s, &m1, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s2, &m2, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_verify(m1, x->s, &err), COMMSCHED_OK);
    for (uint32_t k = 0; k < n; k++) {
        commsched_node_memory a = commsched_memory_node(m1, order[k]);
        commsched_node_memory b = commsched_memory_node(m2, k);
        assert_string_equal(commsched_graph_node_name(x->g, order[k]),
                            commsched_graph_node_name(back, k));
        assert_int_equal(a.post_alloc, b.post_alloc);
        assert_int_equal(a.post_free, b.post_free);
    }
    int64_t peak = commsched_memory_peak(m1, x->s, NULL);
    assert_int_equal(peak, commsched_memory_peak(m2, s2, NULL));
    size_t np = commsched_run_pass_count(x->run);
    if (np > 0)
        assert_int_equal(pass_at(x, np - 1)->peak_after, peak);
    commsched_memory_destroy(m1);
    commsched_memory_destroy(m2);
    commsched_schedule_destroy(s2);
    commsched_graph_destroy(back);
    free(order);
}

static const char *alias_name(const commsched_graph *g, const char *buffer)
{
    uint32_t b = tu_buffer(g, buffer);
    uint32_t a = g->buffers[b].alias_of;
    return a == COMMSCHED_NONE ? NULL : g->buffers[a].name;
}

/* ---- Inductor's scenarios ------------------------------------------------- */

/* test_basic_all_gather_bucketing: three independent all-gathers on one
 * group become one. The copy-in allocates the flat output (an all-gather
 * gathers in place), the collective aliases it, the wait hands the
 * members' old result names out as views of it. */
static const char *THREE_AG =
    HDR "'inputs': [{'name': 'a0', 'size': 256}, {'name': 'a1', 'size': 256}, "
        "{'name': 'a2', 'size': 256}, {'name': 'x', 'size': 64}], "
        "'outputs': ['y'], 'nodes': [" ACT
        "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'bfloat16', 'inputs': ['a0'], "
        " 'outputs': [{'name': 'ag0_o', 'size': 1024}]},"
        "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'bfloat16', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'ag1_o', 'size': 1024}]},"
        "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'bfloat16', 'inputs': ['a2'], "
        " 'outputs': [{'name': 'ag2_o', 'size': 1024}]},"
        "{'name': 'w0', 'kind': 'wait', 'op': 'wait_tensor', "
        " 'inputs': ['ag0_o'], 'outputs': [{'name': 'w0_o', "
        " 'alias_of': 'ag0_o'}]},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
        "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
        " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
        "{'name': 'mm', 'kind': 'compute', 'op': 'mm', "
        " 'inputs': ['x', 'w0_o', 'w1_o', 'w2_o'], "
        " 'outputs': [{'name': 'y', 'size': 64}], 'runtime_ns': 1000}]}";

static void test_three_all_gathers_one_bucket(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, THREE_AG);
    bx_run(&x, "bucket_all_gather", NULL);
    assert_ptr_not_equal(x.g, x.g0);
    tu_expect_order(x.g, x.s,
                    "act bucket_ag_0_copy_in bucket_ag_0 bucket_ag_0_wait mm");
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->kind, COMMSCHED_STATS_BUCKET);
    assert_ptr_equal(p->graph, x.g);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag1,ag2", "end");
    assert_int_equal(p->buckets[0].bytes, 3072);
    assert_string_equal(commsched_graph_node_name(x.g, p->buckets[0].node),
                        "bucket_ag_0");
    assert_string_equal(commsched_graph_node_name(x.g, p->buckets[0].copy_in),
                        "bucket_ag_0_copy_in");
    assert_string_equal(commsched_graph_node_name(x.g, p->buckets[0].wait),
                        "bucket_ag_0_wait");
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_COLLECTIVE), 1);
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_WAIT), 1);

    /* The structure: flat buffer of the summed outputs, views by name. */
    const commsched_graph *g = x.g;
    assert_int_equal(g->buffers[tu_buffer(g, "bucket_ag_0_in")].size, 3072);
    assert_string_equal(alias_name(g, "bucket_ag_0_out"), "bucket_ag_0_in");
    assert_string_equal(alias_name(g, "w0_o"), "bucket_ag_0_out");
    assert_string_equal(alias_name(g, "w2_o"), "bucket_ag_0_out");
    uint32_t coll = tu_node(g, "bucket_ag_0");
    assert_int_equal(g->nodes[coll].coll_op, COMMSCHED_COLL_ALL_GATHER);
    assert_int_equal(g->nodes[coll].dtype, COMMSCHED_DTYPE_BFLOAT16);
    assert_string_equal(g->groups[g->nodes[coll].group].name, "dp");
    uint32_t cp = tu_node(g, "bucket_ag_0_copy_in");
    assert_true(g->nodes[cp].runtime_ns < 0); /* estimated, not written */
    assert_true(g->nodes[cp].flops < 0);
    assert_true(g->nodes[cp].bytes == 2.0 * 768); /* read + write */
    assert_int_equal(CS_ROW_LEN(g->reads, cp), 3);
    uint32_t wa = tu_node(g, "bucket_ag_0_wait");
    assert_string_equal(g->nodes[wa].op, "wait_tensor");
    /* mm still reads the same names */
    uint32_t mm = tu_node(g, "mm");
    assert_string_equal(g->buffers[CS_ROW_BEGIN(g->reads, mm)[1]].name,
                        "w0_o");

    /* Memory: the three outputs were live together anyway. */
    assert_int_equal(p->peak_after, p->peak_before);
    check_rewritten(&x);
    bx_close(&x);
}

static void test_three_all_gathers_stats_times(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, THREE_AG);
    bx_run(&x, "bucket_all_gather", NULL);
    const commsched_pass_stats *p = pass_at(&x, 0);
    const commsched_bucket_stats *b = &p->buckets[0];
    double before = x.rt0[tu_node(x.g0, "ag0")] + x.rt0[tu_node(x.g0, "ag1")] +
                    x.rt0[tu_node(x.g0, "ag2")];
    assert_true(b->time_before_ns == before);
    /* The new nodes come from the cost model: the copy-in is memory-bound
     * (2 x the copied bytes), the collective is priced on its bytes. */
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    double copy = commsched_cost_compute(o.device, -1, 2.0 * 768, NULL);
    commsched_coll_cost cc;
    commsched_error err = {0};
    assert_int_equal(commsched_cost_collective(o.device, o.comm_model,
                                               COMMSCHED_COLL_ALL_GATHER, 3072,
                                               4, 1, &cc, &err),
                     COMMSCHED_OK);
    assert_true(b->time_after_ns == copy + cc.time_ns);
    const double *rt = commsched_run_runtime_ns(x.run);
    assert_true(rt[b->copy_in] == copy);
    assert_true(rt[b->node] == cc.time_ns);
    assert_true(rt[tu_node(x.g, "mm")] == 1000);
    /* Small messages are latency-bound: one saves two latencies. */
    assert_true(b->time_after_ns < b->time_before_ns);
    bx_close(&x);
}

/* The same for reduce-scatters (key: group, reduce op, dtype) and
 * all-reduces; here the copy-in allocates a flat input and the collective
 * a separate flat output. */
static const char *THREE_RS =
    HDR "'inputs': [{'name': 'x', 'size': 64}], 'outputs': ['y'], "
        "'nodes': [" ACT
        "{'name': 'g0', 'kind': 'compute', 'inputs': ['x'], "
        " 'outputs': [{'name': 'g0_o', 'size': 1024}], 'runtime_ns': 10},"
        "{'name': 'rs0', 'kind': 'collective', 'op': 'reduce_scatter', "
        " 'group': 'dp', 'reduce_op': 'sum', 'inputs': ['g0_o'], "
        " 'outputs': [{'name': 'rs0_o', 'size': 256}]},"
        "{'name': 'g1', 'kind': 'compute', 'inputs': ['x'], "
        " 'outputs': [{'name': 'g1_o', 'size': 1024}], 'runtime_ns': 10},"
        "{'name': 'rs1', 'kind': 'collective', 'op': 'reduce_scatter', "
        " 'group': 'dp', 'reduce_op': 'sum', 'inputs': ['g1_o'], "
        " 'outputs': [{'name': 'rs1_o', 'size': 256}]},"
        "{'name': 'g2', 'kind': 'compute', 'inputs': ['x'], "
        " 'outputs': [{'name': 'g2_o', 'size': 1024}], 'runtime_ns': 10},"
        "{'name': 'rs2', 'kind': 'collective', 'op': 'reduce_scatter', "
        " 'group': 'dp', 'reduce_op': 'sum', 'inputs': ['g2_o'], "
        " 'outputs': [{'name': 'rs2_o', 'size': 256}]},"
        "{'name': 'w0', 'kind': 'wait', 'inputs': ['rs0_o'], "
        " 'outputs': [{'name': 'w0_o', 'alias_of': 'rs0_o'}]},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['rs1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'rs1_o'}]},"
        "{'name': 'w2', 'kind': 'wait', 'inputs': ['rs2_o'], "
        " 'outputs': [{'name': 'w2_o', 'alias_of': 'rs2_o'}]},"
        "{'name': 'opt', 'kind': 'compute', "
        " 'inputs': ['w0_o', 'w1_o', 'w2_o'], "
        " 'outputs': [{'name': 'y', 'size': 64}], 'runtime_ns': 10}]}";

static void test_three_reduce_scatters_one_bucket(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, THREE_RS);
    bx_run(&x, "bucket_reduce_scatter", NULL);
    /* Issued after the last input exists; the wait where w0 was. */
    tu_expect_order(x.g, x.s, "act g0 g1 g2 bucket_rs_0_copy_in bucket_rs_0 "
                              "bucket_rs_0_wait opt");
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "rs0,rs1,rs2", "end");
    const commsched_graph *g = x.g;
    assert_int_equal(g->buffers[tu_buffer(g, "bucket_rs_0_in")].size, 3072);
    assert_int_equal(g->buffers[tu_buffer(g, "bucket_rs_0_out")].size, 768);
    assert_null(alias_name(g, "bucket_rs_0_out"));
    assert_int_equal(p->buckets[0].bytes, 3072);
    assert_int_equal(g->nodes[tu_node(g, "bucket_rs_0")].reduce_op,
                     COMMSCHED_REDUCE_SUM);
    assert_int_equal(count_kind(g, COMMSCHED_NODE_COLLECTIVE), 1);
    check_rewritten(&x);
    bx_close(&x);
}

/* text with every `from` replaced by `to` (malloc'ed). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to), n = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + lf, from))
        n++;
    char *out = malloc(strlen(text) + n * lt + 1), *o = out;
    assert_non_null(out);
    for (const char *p = text, *q; (q = strstr(p, from)); p = q + lf) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, lt);
        o += lt;
        text = q + lf;
    }
    strcpy(o, text);
    return out;
}

/* THREE_RS as Inductor hands it over (graphs/torch/fsdp-mlp-4L-1): each
 * wait also reads its reduce-scatter's input, which keeps the input alive
 * until the collective is done, and the graph returns rs1's own output.
 * They bucket all the same: the bucket's wait reads the flat input too, so
 * the copy the collective reads lives as long, and rs1_o stays, as the
 * view of its slice. */
static void test_inductor_shaped_reduce_scatters(void **state)
{
    (void)state;
    char *a = replace_all(THREE_RS, "'inputs': ['rs0_o']",
                          "'inputs': ['rs0_o', 'g0_o']");
    char *b = replace_all(a, "'inputs': ['rs1_o']",
                          "'inputs': ['rs1_o', 'g1_o']");
    char *c = replace_all(b, "'inputs': ['rs2_o']",
                          "'inputs': ['rs2_o', 'g2_o']");
    char *text = replace_all(c, "'outputs': ['y']", "'outputs': ['y', 'rs1_o']");
    free(a);
    free(b);
    free(c);
    bx x;
    bx_open(&x, text);
    free(text);
    bx_run(&x, "bucket_reduce_scatter", NULL);
    tu_expect_order(x.g, x.s, "act g0 g1 g2 bucket_rs_0_copy_in bucket_rs_0 "
                              "bucket_rs_0_wait opt");
    expect_bucket(pass_at(&x, 0), 0, "rs0,rs1,rs2", "end");
    const commsched_graph *g = x.g;
    uint32_t wa = tu_node(g, "bucket_rs_0_wait");
    assert_int_equal(CS_ROW_LEN(g->reads, wa), 2);
    assert_string_equal(g->buffers[CS_ROW_BEGIN(g->reads, wa)[1]].name,
                        "bucket_rs_0_in");
    assert_string_equal(alias_name(g, "rs1_o"), "bucket_rs_0_out");
    assert_true(g->buffers[tu_buffer(g, "rs1_o")].is_output);
    check_rewritten(&x);
    bx_close(&x);
}

static void test_three_all_reduces_one_bucket(void **state)
{
    (void)state;
    /* An all_reduce writes what it reads: 1024-byte outputs. */
    char *ar = replace_all(THREE_RS, "reduce_scatter", "all_reduce");
    char *text = replace_all(ar, "'size': 256}", "'size': 1024}");
    free(ar);
    bx x;
    bx_open(&x, text);
    free(text);
    bx_run(&x, "bucket_reduce_scatter,bucket_all_reduce", NULL);
    assert_int_equal(pass_at(&x, 0)->n_buckets, 0);
    const commsched_pass_stats *p = pass_at(&x, 1);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "rs0,rs1,rs2", "end");
    assert_int_not_equal(commsched_graph_find_node(x.g, "bucket_ar_0"),
                         COMMSCHED_NONE);
    assert_int_equal(x.g->buffers[tu_buffer(x.g, "bucket_ar_0_out")].size,
                     3072);
    assert_int_equal(p->buckets[0].bytes, 3072);
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_COLLECTIVE), 1);
    check_rewritten(&x);
    bx_close(&x);
}

/* A side of 0 bytes is a trace's dependency token, not a payload: the
 * op's size rule gives it from the other side, so the bucket keeps the
 * rule (it read 2048 bytes and wrote 768 before: the builder refused the
 * rewrite and the pass failed). */
static void test_zero_byte_side(void **state)
{
    (void)state;
    char *text = replace_all(THREE_RS, "{'name': 'g1_o', 'size': 1024}",
                             "{'name': 'g1_o', 'size': 0}");
    bx x;
    bx_open(&x, text);
    free(text);
    bx_run(&x, "bucket_reduce_scatter", NULL);
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "rs0,rs1,rs2", "end");
    assert_int_equal(x.g->buffers[tu_buffer(x.g, "bucket_rs_0_in")].size,
                     3072);
    assert_int_equal(x.g->buffers[tu_buffer(x.g, "bucket_rs_0_out")].size,
                     768);
    check_rewritten(&x);
    bx_close(&x);
    /* all-reduces: a 0-byte output writes what the input holds */
    char *ar = replace_all(THREE_RS, "reduce_scatter", "all_reduce");
    char *ar2 = replace_all(ar, "'size': 256}", "'size': 1024}");
    text = replace_all(ar2, "{'name': 'rs1_o', 'size': 1024}",
                       "{'name': 'rs1_o', 'size': 0}");
    free(ar);
    free(ar2);
    bx_open(&x, text);
    free(text);
    bx_run(&x, "bucket_all_reduce", "bucket_mode=cost");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    assert_int_equal(x.g->buffers[tu_buffer(x.g, "bucket_ar_0_out")].size,
                     3072);
    check_rewritten(&x);
    bx_close(&x);
}

/* A wait that reads its collective's input may return a view of it; the
 * bucket's wait would read the flat input instead, so such a member stays
 * out (the rewrite named a buffer its wait no longer read: EGRAPH). */
static void test_wait_view_of_input(void **state)
{
    (void)state;
    char *text = replace_all(
        THREE_RS,
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['rs1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'rs1_o'}]}",
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['rs1_o', 'g1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'rs1_o'}, "
        " {'name': 'w1_in', 'alias_of': 'g1_o'}]}");
    assert_non_null(strstr(text, "w1_in"));
    bx x;
    bx_open(&x, text);
    free(text);
    bx_run(&x, "bucket_reduce_scatter", NULL);
    const commsched_pass_stats *p = pass_at(&x, 0);
    for (uint32_t k = 0; k < p->n_buckets; k++)
        for (uint32_t i = 0; i < p->buckets[k].n_members; i++)
            assert_string_not_equal(p->buckets[k].members[i], "rs1");
    check_rewritten(&x);
    bx_close(&x);
}

/* In-place all-reduces (DDP's): the merged one is in place on the flat
 * input too. */
static void test_in_place_all_reduces(void **state)
{
    (void)state;
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'x', 'size': 64}], 'outputs': ['y'], "
                "'nodes': [" ACT
                "{'name': 'g0', 'kind': 'compute', 'inputs': ['x'], "
                " 'outputs': [{'name': 'g0_o', 'size': 512}]},"
                "{'name': 'ar0', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'dp', 'inputs': ['g0_o'], "
                " 'outputs': [{'name': 'ar0_o', 'alias_of': 'g0_o'}]},"
                "{'name': 'g1', 'kind': 'compute', 'inputs': ['x'], "
                " 'outputs': [{'name': 'g1_o', 'size': 512}]},"
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'dp', 'inputs': ['g1_o'], "
                " 'outputs': [{'name': 'ar1_o', 'alias_of': 'g1_o'}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ar0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ar0_o'}, "
                "             {'name': 'w0_v', 'alias_of': 'w0_o'}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ar1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ar1_o'}]},"
                "{'name': 'opt', 'kind': 'compute', "
                " 'inputs': ['w0_v', 'w1_o'], "
                " 'outputs': [{'name': 'y', 'size': 64}]}]}");
    bx_run(&x, "bucket_all_reduce", NULL);
    const commsched_graph *g = x.g;
    assert_int_equal(pass_at(&x, 0)->n_buckets, 1);
    assert_string_equal(alias_name(g, "bucket_ar_0_out"), "bucket_ar_0_in");
    assert_string_equal(alias_name(g, "w0_o"), "bucket_ar_0_out");
    assert_string_equal(alias_name(g, "w0_v"), "w0_o"); /* own output kept */
    assert_int_equal(pass_at(&x, 0)->buckets[0].bytes, 1024);
    check_rewritten(&x);
    bx_close(&x);
}

/* test_all_gather_bucket_path: an all-gather whose input depends on
 * another's wait is not bucketed; both waits remain and the graph is the
 * one passed in. */
static void test_dependent_all_gather_not_bucketed(void **state)
{
    (void)state;
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'a', 'size': 256}], 'outputs': ['w1_o'], "
                "'nodes': [" ACT
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 1024}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['w0_o'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 4096}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    assert_ptr_equal(x.g, x.g0);
    assert_ptr_equal(x.s, x.s0);
    assert_int_equal(pass_at(&x, 0)->n_buckets, 0);
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_WAIT), 2);
    tu_expect_order(x.g, x.s, "act ag0 w0 ag1 w1");
    bx_close(&x);
}

/* Four all-gathers, dtypes bf16 f32 bf16 f32: no two adjacent in wait
 * order share a key, so nothing merges; Inductor's multidtype mode drops
 * the dtype and merges all four, the flat buffer taking the smallest
 * element type. */
static const char *MIXED_DTYPES =
    HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'a1', 'size': 64}, "
        "{'name': 'a2', 'size': 64}, {'name': 'a3', 'size': 64}], "
        "'outputs': ['y'], 'nodes': [" ACT
        "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'bfloat16', 'inputs': ['a0'], "
        " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
        "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'float32', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
        "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'bfloat16', 'inputs': ['a2'], "
        " 'outputs': [{'name': 'ag2_o', 'size': 256}]},"
        "{'name': 'ag3', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'dtype': 'float32', 'inputs': ['a3'], "
        " 'outputs': [{'name': 'ag3_o', 'size': 256}]},"
        "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
        " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
        "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
        " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
        "{'name': 'w3', 'kind': 'wait', 'inputs': ['ag3_o'], "
        " 'outputs': [{'name': 'w3_o', 'alias_of': 'ag3_o'}]},"
        "{'name': 'mm', 'kind': 'compute', "
        " 'inputs': ['w0_o', 'w1_o', 'w2_o', 'w3_o'], "
        " 'outputs': [{'name': 'y', 'size': 64}]}]}";

static void test_dtypes_apart_unless_multidtype(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, MIXED_DTYPES);
    bx_run(&x, "bucket_all_gather", NULL);
    assert_ptr_equal(x.g, x.g0);
    assert_int_equal(pass_at(&x, 0)->n_buckets, 0);
    bx_close(&x);

    bx_open(&x, MIXED_DTYPES);
    bx_run(&x, "bucket_all_gather", "bucket_multidtype=true");
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag1,ag2,ag3", "end");
    assert_int_equal(x.g->nodes[tu_node(x.g, "bucket_ag_0")].dtype,
                     COMMSCHED_DTYPE_BFLOAT16);
    check_rewritten(&x);
    bx_close(&x);
}

/* Group is part of every key: two runs, the first closed by the key
 * change. */
static void test_key_change_closes(void **state)
{
    (void)state;
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'a1', "
                "'size': 64}, {'name': 'a2', 'size': 64}, {'name': 'a3', "
                "'size': 64}], 'outputs': ['y'], 'nodes': [" ACT
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a0'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
                "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'tp', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'ag2_o', 'size': 128}]},"
                "{'name': 'ag3', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'tp', 'inputs': ['a3'], "
                " 'outputs': [{'name': 'ag3_o', 'size': 128}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
                "{'name': 'w3', 'kind': 'wait', 'inputs': ['ag3_o'], "
                " 'outputs': [{'name': 'w3_o', 'alias_of': 'ag3_o'}]},"
                "{'name': 'mm', 'kind': 'compute', "
                " 'inputs': ['w0_o', 'w1_o', 'w2_o', 'w3_o'], "
                " 'outputs': [{'name': 'y', 'size': 64}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    const commsched_pass_stats *ps = pass_at(&x, 0);
    assert_int_equal(ps->n_buckets, 2);
    expect_bucket(ps, 0, "ag0,ag1", "key");
    expect_bucket(ps, 1, "ag2,ag3", "end");
    tu_expect_order(x.g, x.s,
                    "act bucket_ag_0_copy_in bucket_ag_0 bucket_ag_1_copy_in "
                    "bucket_ag_1 bucket_ag_0_wait bucket_ag_1_wait mm");
    check_rewritten(&x);
    bx_close(&x);
}

/* A candidate that depends on the open bucket is skipped for good (as
 * Inductor's `continue`), and later independent ones may still join; when
 * the rest of a run depends on the bucket the close reason says so. */
static void test_dependency_skip(void **state)
{
    (void)state;
    /* ag1 reads w0's result; ag2 is independent. */
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'a2', "
                "'size': 64}], 'outputs': ['y'], 'nodes': [" ACT
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a0'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'f', 'kind': 'compute', 'inputs': ['w0_o'], "
                " 'outputs': [{'name': 'f_o', 'size': 64}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['f_o'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
                "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'ag2_o', 'size': 256}]},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
                "{'name': 'mm', 'kind': 'compute', "
                " 'inputs': ['w1_o', 'w2_o'], "
                " 'outputs': [{'name': 'y', 'size': 64}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag2", "end");
    tu_expect_order(x.g, x.s,
                    "act bucket_ag_0_copy_in bucket_ag_0 bucket_ag_0_wait f "
                    "ag1 w1 mm");
    check_rewritten(&x);
    bx_close(&x);

    /* ag0, ag1 independent; ag2 reads w0's result: the bucket of two
     * closes on the dependency. */
    bx_open(&x,
            HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'a1', "
                "'size': 64}], 'outputs': ['y'], 'nodes': [" ACT
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a0'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
                "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['w0_o'], "
                " 'outputs': [{'name': 'ag2_o', 'size': 1024}]},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
                "{'name': 'mm', 'kind': 'compute', "
                " 'inputs': ['w1_o', 'w2_o'], "
                " 'outputs': [{'name': 'y', 'size': 64}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag1", "dependency");
    check_rewritten(&x);
    bx_close(&x);
}

/* ---- the cap ----------------------------------------------------------------- */

/* n all-reduces of `sizes[i]` bytes each (out of place, group dp, fp32,
 * sum), every one waited at the end, the optimizer reading them all. */
static commsched_graph *ar_chain(const int64_t *sizes, uint32_t n)
{
    commsched_error err = {0};
    commsched_builder *b = NULL;
    assert_int_equal(commsched_builder_create("ar-chain", &b, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "dp", 8, 1, &err),
                     COMMSCHED_OK);
    char name[64], in[64], out[64];
    const char *reads[1];
    commsched_output_spec o;
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.name = "act";
    s.kind = COMMSCHED_NODE_COMPUTE;
    o.name = "act_o";
    o.size = INT64_C(1) << 40;
    o.alias_of = NULL;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(in, sizeof in, "grad%u", i);
        assert_int_equal(commsched_builder_add_input(b, in, sizes[i], 0, &err),
                         COMMSCHED_OK);
        memset(&s, 0, sizeof s);
        snprintf(name, sizeof name, "ar%u", i);
        snprintf(out, sizeof out, "ar%u_o", i);
        reads[0] = in;
        o.name = out;
        o.size = sizes[i];
        o.alias_of = NULL;
        s.name = name;
        s.kind = COMMSCHED_NODE_COLLECTIVE;
        s.op = "all_reduce";
        s.group = "dp";
        s.dtype = COMMSCHED_DTYPE_FLOAT32;
        s.reduce_op = COMMSCHED_REDUCE_SUM;
        s.inputs = reads;
        s.n_inputs = 1;
        s.outputs = &o;
        s.n_outputs = 1;
        s.runtime_ns = s.flops = s.bytes = -1;
        assert_int_equal(commsched_builder_add_node(b, &s, &err),
                         COMMSCHED_OK);
    }
    const char **results = calloc(n, sizeof *results);
    char(*rn)[64] = calloc(n, sizeof *rn);
    assert_non_null(results);
    assert_non_null(rn);
    for (uint32_t i = 0; i < n; i++) {
        memset(&s, 0, sizeof s);
        snprintf(name, sizeof name, "w%u", i);
        snprintf(out, sizeof out, "ar%u_o", i);
        snprintf(rn[i], sizeof rn[i], "w%u_o", i);
        reads[0] = out;
        o.name = rn[i];
        o.alias_of = out;
        s.name = name;
        s.kind = COMMSCHED_NODE_WAIT;
        s.inputs = reads;
        s.n_inputs = 1;
        s.outputs = &o;
        s.n_outputs = 1;
        s.runtime_ns = s.flops = s.bytes = -1;
        assert_int_equal(commsched_builder_add_node(b, &s, &err),
                         COMMSCHED_OK);
        results[i] = rn[i];
    }
    memset(&s, 0, sizeof s);
    s.name = "opt";
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.inputs = results;
    s.n_inputs = n;
    o.name = "y";
    o.size = 8;
    o.alias_of = NULL;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_output(b, "y", &err), COMMSCHED_OK);
    commsched_graph *g = NULL;
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    free(results);
    free(rn);
    return g;
}

static void test_cap_respected(void **state)
{
    (void)state;
    const int64_t MiB = 1048576;
    int64_t sizes[5] = {MiB, MiB, MiB, MiB, MiB};
    bx x;
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cap_mb=2.5");
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 2);
    expect_bucket(p, 0, "ar0,ar1", "cap");
    expect_bucket(p, 1, "ar2,ar3", "cap");
    for (uint32_t i = 0; i < p->n_buckets; i++)
        assert_true(p->buckets[i].bytes <= (int64_t)(2.5 * (double)MiB));
    /* ar4 stays on its own */
    assert_int_not_equal(commsched_graph_find_node(x.g, "ar4"), COMMSCHED_NONE);
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_COLLECTIVE), 3);
    check_rewritten(&x);
    bx_close(&x);

    /* Exactly at the cap still fits (Inductor closes when the sum would
     * pass it), in MiB as Inductor counts: 2 MiB. */
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cap_mb=2");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 2);
    expect_bucket(p, 1, "ar2,ar3", "cap");
    bx_close(&x);

    /* XLA's 256-op preset style: a count cap. */
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_max_ops=2");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 2);
    expect_bucket(p, 0, "ar0,ar1", "max_ops");
    expect_bucket(p, 1, "ar2,ar3", "max_ops");
    bx_close(&x);

    /* Cuts given by hand (tune's split search): bit i ends a bucket after
     * the i-th candidate, so 0b0101 leaves ar0 alone and cuts after ar2:
     * {ar0} {ar1, ar2} {ar3, ar4}; cuts beyond the candidates are no-ops. */
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cuts=5");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 2);
    expect_bucket(p, 0, "ar1,ar2", "cut");
    expect_bucket(p, 1, "ar3,ar4", "end");
    assert_int_not_equal(commsched_graph_find_node(x.g, "ar0"), COMMSCHED_NONE);
    check_rewritten(&x);
    bx_close(&x);
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cuts=15");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 0);
    bx_close(&x);
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cuts=4611686018427387904");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ar0,ar1,ar2,ar3,ar4", "end");
    bx_close(&x);

    /* The default 2000 MiB takes all five. */
    bx_open_graph(&x, ar_chain(sizes, 5), NULL);
    bx_run(&x, "bucket_all_reduce", NULL);
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ar0,ar1,ar2,ar3,ar4", "end");
    check_rewritten(&x);
    bx_close(&x);
}

/* XLA's default threshold is 30 MiB + 7 bytes = 31,457,287 bytes; as
 * bucket_cap_mb that is 30 + 7/2^20 = 30.00000667572021484375 exactly
 * (a binary fraction, so the double holds it and the byte cap comes out
 * exact). */
static void test_xla_preset_exact(void **state)
{
    (void)state;
    int64_t sizes[3] = {31457280, 7, 1};
    bx x;
    bx_open_graph(&x, ar_chain(sizes, 3), NULL);
    bx_run(&x, "bucket_all_reduce",
           "bucket_cap_mb=30.00000667572021484375,bucket_max_ops=256");
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ar0,ar1", "cap"); /* 31457287 fits, +1 does not */
    assert_int_equal(p->buckets[0].bytes, 31457287);
    bx_close(&x);

    bx_open_graph(&x, ar_chain(sizes, 3), NULL);
    bx_run(&x, "bucket_all_reduce", "bucket_cap_mb=30");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ar1,ar2", "end"); /* ar0 + 7 passes 30 MiB */
    bx_close(&x);
}

/* ---- memory ----------------------------------------------------------------- */

/* ag0 and ag1 are consumed together (merging them costs nothing); ag2's
 * large output used to live only around its consumer (peak 5000 + c01's
 * 10 + y's 10), but in the bucket it is allocated with the others at the
 * start: 7000 + 10 + 10. The inputs (a quarter of each output: dp has 4
 * ranks) are not freeable, so not counted. */
static const char *MEMORY_GRAPH =
    HDR "'inputs': [{'name': 'a0', 'size': 250}, {'name': 'a1', 'size': 250}, "
        "{'name': 'a2', 'size': 1250}], 'outputs': ['y'], 'nodes': ["
        "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'inputs': ['a0'], "
        " 'outputs': [{'name': 'ag0_o', 'size': 1000}]},"
        "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'ag1_o', 'size': 1000}]},"
        "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
        " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
        "{'name': 'c01', 'kind': 'compute', 'inputs': ['w0_o', 'w1_o'], "
        " 'outputs': [{'name': 'c01_o', 'size': 10}]},"
        "{'name': 'ag2', 'kind': 'collective', 'op': 'all_gather', "
        " 'group': 'dp', 'inputs': ['a2'], "
        " 'outputs': [{'name': 'ag2_o', 'size': 5000}]},"
        "{'name': 'w2', 'kind': 'wait', 'inputs': ['ag2_o'], "
        " 'outputs': [{'name': 'w2_o', 'alias_of': 'ag2_o'}]},"
        "{'name': 'c2', 'kind': 'compute', 'inputs': ['w2_o', 'c01_o'], "
        " 'outputs': [{'name': 'y', 'size': 10}]}]}";

static void test_memory_budget_refusal(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, MEMORY_GRAPH);
    assert_int_equal(peak_of(x.s), 5020);
    bx_run(&x, "bucket_all_gather", NULL);
    const commsched_pass_stats *p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag1", "memory");
    assert_int_equal(p->peak_before, 5020);
    assert_int_equal(p->peak_after, 5020);
    check_rewritten(&x);
    bx_close(&x);

    /* With room for it (7020 <= 1.5 x 5020) all three merge. */
    bx_open(&x, MEMORY_GRAPH);
    bx_run(&x, "bucket_all_gather", "bucket_peak_memory_budget=0.5");
    p = pass_at(&x, 0);
    assert_int_equal(p->n_buckets, 1);
    expect_bucket(p, 0, "ag0,ag1,ag2", "end");
    assert_int_equal(p->peak_after, 7020);
    check_rewritten(&x);
    bx_close(&x);

    /* A budget below the input's own peak could refuse every merge: it
     * is refused when set, naming the knob and its range. */
    commsched_knobs *k = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    assert_int_equal(commsched_knobs_set(k, "bucket_peak_memory_budget",
                                         "-0.5", &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "bucket_peak_memory_budget: out of "
                                     "range"));
    commsched_knobs_destroy(k);
}

/* ---- placement and names ---------------------------------------------------- */

/* ag1's input is produced after w0: the bucket is issued after that
 * producer, and w0's consumer u0 moves after the merged wait. */
static void test_placement_after_last_input(void **state)
{
    (void)state;
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'x', "
                "'size': 64}], 'outputs': ['u0_o', 'u1_o'], 'nodes': [" ACT
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a0'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'u0', 'kind': 'compute', 'inputs': ['w0_o'], "
                " 'outputs': [{'name': 'u0_o', 'size': 8}]},"
                "{'name': 'c1', 'kind': 'compute', 'inputs': ['x'], "
                " 'outputs': [{'name': 'x1', 'size': 64}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['x1'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
                "{'name': 'u1', 'kind': 'compute', 'inputs': ['w1_o'], "
                " 'outputs': [{'name': 'u1_o', 'size': 8}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    tu_expect_order(x.g, x.s,
                    "act c1 bucket_ag_0_copy_in bucket_ag_0 bucket_ag_0_wait "
                    "u0 u1");
    check_rewritten(&x);
    bx_close(&x);
}

/* New names never collide: "bucket_ag_0" is taken, so the bucket is 1;
 * after edges and fake edges that named members now name the bucket. The
 * nodes that stay keep their outputs' from (b reads the member's wait
 * alias, which the bucket's wait makes under the same name). */
static void test_names_and_edges(void **state)
{
    (void)state;
    bx x;
    bx_open(&x,
            HDR "'inputs': [{'name': 'a0', 'size': 64}, {'name': 'a1', "
                "'size': 64}], 'outputs': ['y'], 'nodes': ["
                "{'name': 'bucket_ag_0', 'kind': 'compute', "
                " 'outputs': [{'name': 'act_o', 'size': 1000000}]},"
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a0'], 'after': ['bucket_ag_0'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 256}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'dp', 'inputs': ['a1'], 'after_fake': ['ag0'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 256}]},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]},"
                "{'name': 'b', 'kind': 'compute', 'after': ['w1'], "
                " 'after_fake': ['ag1'], 'inputs': ['w0_o', 'a1'], "
                " 'outputs': [{'name': 'y', 'size': 8, 'from': ['w0_o']}, "
                "  {'name': 'z', 'size': 8, 'from': []}, "
                "  {'name': 'u', 'size': 8}]}]}");
    bx_run(&x, "bucket_all_gather", NULL);
    const commsched_graph *g = x.g;
    assert_ptr_not_equal(g, x.g0);
    uint32_t y = tu_buffer(g, "y"), z = tu_buffer(g, "z");
    assert_true(g->buffers[y].has_from && g->buffers[z].has_from);
    assert_false(g->buffers[tu_buffer(g, "u")].has_from);
    assert_int_equal(CS_ROW_LEN(g->from, y), 1);
    assert_int_equal(CS_ROW_BEGIN(g->from, y)[0], tu_buffer(g, "w0_o"));
    assert_int_equal(CS_ROW_LEN(g->from, z), 0);
    assert_int_equal(pass_at(&x, 0)->n_buckets, 1);
    uint32_t coll = tu_node(g, "bucket_ag_1");
    assert_int_equal(CS_ROW_LEN(g->after, coll), 1);
    assert_string_equal(g->nodes[CS_ROW_BEGIN(g->after, coll)[0]].name,
                        "bucket_ag_0");
    assert_int_equal(CS_ROW_LEN(g->after_fake, coll), 0); /* ag1 -> ag0 */
    uint32_t b = tu_node(g, "b");
    assert_string_equal(g->nodes[CS_ROW_BEGIN(g->after, b)[0]].name,
                        "bucket_ag_1_wait");
    assert_string_equal(g->nodes[CS_ROW_BEGIN(g->after_fake, b)[0]].name,
                        "bucket_ag_1");
    check_rewritten(&x);
    bx_close(&x);
}

/* ---- API ------------------------------------------------------------------------ */

static void test_old_api_refuses_rewrites(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, THREE_AG);
    commsched_error err = {0};
    commsched_knobs *k = knobs_from(NULL);
    commsched_run *run = NULL;
    assert_int_equal(commsched_pipeline_run(x.g0, x.s0, x.rt0,
                                            "sink_waits,bucket_all_gather", k,
                                            0, &run, &err),
                     COMMSCHED_EINVAL);
    assert_null(run);
    assert_non_null(strstr(err.text, "commsched_pipeline_apply"));
    commsched_knobs_destroy(k);
    /* The three bucketing passes and the transformer-block plan rewrite. */
    size_t i = 0;
    int rewrites = 0;
    for (; commsched_pass_name(i); i++)
        rewrites += commsched_pass_rewrites(i);
    assert_int_equal(rewrites, 4);
    assert_int_equal(commsched_pass_rewrites(i), 0);
    bx_close(&x);
}

static void test_knobs(void **state)
{
    (void)state;
    commsched_error err = {0};
    commsched_knobs *k = knobs_from(NULL);
    assert_int_equal(commsched_knobs_set(k, "bucket_mode", "cost", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_knobs_set(k, "bucket_mode", "greedy", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_knobs_set(k, "bucket_mode", "fast", &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "expected greedy or cost"));
    assert_int_equal(commsched_knobs_set(k, "bucket_max_ops", "none", &err),
                     COMMSCHED_OK);
    commsched_knobs_destroy(k);
    int seen = 0;
    for (size_t i = 0; commsched_knob_name(i); i++) {
        const char *n = commsched_knob_name(i), *d = commsched_knob_default(i);
        if (!strcmp(n, "bucket_cap_mb"))
            seen++, assert_string_equal(d, "2000");
        if (!strcmp(n, "bucket_mode"))
            seen++, assert_string_equal(d, "greedy");
        if (!strcmp(n, "bucket_peak_memory_budget"))
            seen++, assert_string_equal(d, "0");
        if (!strcmp(n, "bucket_multidtype"))
            seen++, assert_string_equal(d, "false");
        if (!strcmp(n, "bucket_max_ops"))
            seen++, assert_string_equal(d, "0");
        if (!strcmp(n, "bucket_cuts"))
            seen++, assert_string_equal(d, "0");
    }
    assert_int_equal(seen, 6);
}

/* Passes after a rewrite run on the new graph, and their records name its
 * nodes; records of earlier passes keep theirs. */
static void test_pipeline_continues_on_new_graph(void **state)
{
    (void)state;
    bx x;
    bx_open(&x, THREE_AG);
    bx_run(&x, "sink_waits_iterative,bucket_all_gather,"
               "decide_global_ordering_of_comms,"
               "reorder_communication_preserving_peak_memory",
           NULL);
    assert_int_equal(commsched_run_pass_count(x.run), 4);
    assert_ptr_equal(pass_at(&x, 0)->graph, x.g0);
    assert_ptr_equal(pass_at(&x, 1)->graph, x.g);
    assert_ptr_equal(pass_at(&x, 3)->graph, x.g);
    const commsched_pass_stats *r = pass_at(&x, 3);
    assert_int_equal(r->n_nodes, 1);
    assert_string_equal(commsched_graph_node_name(x.g, r->nodes[0].node),
                        "bucket_ag_0");
    check_rewritten(&x);
    bx_close(&x);
}

/* ---- random graphs ------------------------------------------------------------ */

/* The root size of buffer "in<i>" or "b<i>" of bucket_graph. */
static int64_t root_size(const int64_t *in_size, const int64_t *b_size,
                         const char *name)
{
    if (strncmp(name, "in", 2) == 0)
        return in_size[strtoul(name + 2, NULL, 10)];
    return b_size[strtoul(name + 1, NULL, 10)];
}

/* A random graph rich in mergeable collectives: mostly all-gathers,
 * reduce-scatters and all-reduces on two groups with two dtypes, in-place
 * all-reduces, waits far from or near their collective (some with a view
 * of their own result), inputs from graph inputs or computed, collectives
 * reading earlier results (dependencies), `after` and `after_fake` edges,
 * and a wait's result among the graph outputs. Built through the builder,
 * so it is valid; its order is race-free (docs/FORMAT.md, "In-place
 * writes"): an all-reduce works in place only on a graph input no
 * collective in flight reads, which nobody reads by its own name again.
 * Sizes fit each collective's op and group (docs/FORMAT.md, "Collective
 * sizes"): where the drawn op cannot fit its input (an all_gather past 1
 * MiB, a reduce_scatter of bytes its group does not divide), it becomes an
 * all_reduce. */
/* inductor: shaped as Inductor hands collectives over (graphs/torch): a
 * wait also reads its collective's input (that keeps the input alive until
 * the collective is done), and the graph returns some collectives' own
 * outputs (a forward saving a gathered weight for the backward). */
static commsched_graph *bucket_graph_as(uint64_t seed, uint32_t n_nodes,
                                        int inductor)
{
    tu_rng r;
    tu_rng_seed(&r, seed);
    commsched_error err = {0};
    commsched_builder *b = NULL;
    assert_int_equal(commsched_builder_create("bucket-random", &b, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "dp", 8, 1, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "tp", 4, 0, &err),
                     COMMSCHED_OK);
    enum { CAP = 4096 };
    char(*readable)[24] = calloc(CAP, sizeof *readable);
    char(*pend)[24] = calloc(CAP, sizeof *pend);
    char(*preads)[24] = calloc(CAP, sizeof *preads); /* what pend[k] read */
    char(*results)[24] = calloc(CAP, sizeof *results);
    assert_non_null(readable);
    assert_non_null(pend);
    assert_non_null(preads);
    assert_non_null(results);
    /* root sizes of "in<i>" and "b<i>" */
    int64_t in_size[5], *b_size = calloc(2 * CAP, sizeof *b_size);
    assert_non_null(b_size);
    size_t n_read = 0, n_pend = 0, n_res = 0, n_out = 0;
    char outs[8][24];
    uint32_t n = 0, buf = 0;
    for (uint32_t i = 0; i < 5; i++) {
        snprintf(readable[n_read], 24, "in%u", i);
        in_size[i] = 64 * (1 + tu_rng_below(&r, 64));
        assert_int_equal(commsched_builder_add_input(b, readable[n_read],
                                                     in_size[i],
                                                     tu_rng_chance(&r, 50),
                                                     &err),
                         COMMSCHED_OK);
        n_read++;
    }
    while (n < n_nodes || n_pend > 0) {
        char name[24], out0[24], out1[24], after[24], fake[24];
        const char *in[2], *af[1], *fk[1];
        commsched_output_spec o[2];
        commsched_node_spec s;
        memset(&s, 0, sizeof s);
        memset(o, 0, sizeof o);
        s.runtime_ns = s.flops = s.bytes = -1;
        snprintf(name, sizeof name, "n%u", n);
        s.name = name;
        uint32_t c = tu_rng_below(&r, 100);
        if (n_pend > 0 && (n >= n_nodes || c < 25 || n_pend > 5)) {
            /* a wait: the oldest pending one usually, sometimes any */
            size_t k = tu_rng_chance(&r, 70) ? 0 : tu_rng_below(&r, (uint32_t)n_pend);
            in[0] = pend[k];
            s.kind = COMMSCHED_NODE_WAIT;
            s.op = "wait_tensor";
            b_size[buf] = root_size(in_size, b_size, pend[k]);
            snprintf(out0, sizeof out0, "b%u", buf++);
            o[0].name = out0;
            o[0].alias_of = pend[k];
            s.n_outputs = 1;
            if (tu_rng_chance(&r, 15)) {
                b_size[buf] = b_size[buf - 1];
                snprintf(out1, sizeof out1, "b%u", buf++);
                o[1].name = out1;
                o[1].alias_of = out0;
                s.n_outputs = 2;
            }
            s.inputs = in;
            s.n_inputs = 1;
            for (size_t q = 0; inductor && q < n_read; q++)
                if (strcmp(readable[q], preads[k]) == 0) {
                    in[s.n_inputs++] = preads[k]; /* not written in place */
                    break;
                }
            if (inductor && n_out < 8 && tu_rng_chance(&r, 30))
                strcpy(outs[n_out++], pend[k]);
            s.outputs = o;
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            for (uint32_t q = 0; q < s.n_outputs; q++) {
                strcpy(readable[n_read++], o[q].name);
                strcpy(results[n_res++], o[q].name);
            }
            memmove(pend[k], pend[k + 1], (n_pend - k - 1) * sizeof *pend);
            memmove(preads[k], preads[k + 1],
                    (n_pend - k - 1) * sizeof *preads);
            n_pend--;
        } else if (c < 60) {
            static const char *ops[3] = {"all_gather", "reduce_scatter",
                                         "all_reduce"};
            uint32_t op = tu_rng_below(&r, 3);
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = ops[op];
            s.group = tu_rng_chance(&r, 80) ? "dp" : "tp";
            s.dtype = tu_rng_chance(&r, 75) ? COMMSCHED_DTYPE_BFLOAT16
                                            : COMMSCHED_DTYPE_FLOAT32;
            if (op > 0)
                s.reduce_op = COMMSCHED_REDUCE_SUM;
            /* inputs: graph inputs or early buffers mostly, so most
             * collectives are independent; sometimes a wait's result */
            in[0] = tu_rng_chance(&r, 20) && n_res
                        ? results[tu_rng_below(&r, (uint32_t)n_res)]
                        : readable[tu_rng_below(&r, (uint32_t)n_read)];
            s.inputs = in;
            s.n_inputs = 1;
            int64_t in_sz = root_size(in_size, b_size, in[0]);
            int64_t k = strcmp(s.group, "dp") == 0 ? 8 : 4;
            if ((op == 0 && in_sz * k > (1 << 20)) ||
                (op == 1 && in_sz % k != 0)) {
                op = 2;
                s.op = ops[op];
                s.reduce_op = COMMSCHED_REDUCE_SUM;
            }
            int64_t out_sz = op == 0 ? in_sz * k : op == 1 ? in_sz / k : in_sz;
            snprintf(out0, sizeof out0, "b%u", buf++);
            o[0].name = out0;
            char src[24];
            snprintf(src, sizeof src, "%s", in[0]);
            in[0] = src;
            int in_place = op == 2 && tu_rng_chance(&r, 30) &&
                           strncmp(src, "in", 2) == 0 && n_read > 1;
            for (size_t q = 0; q < n_pend && in_place; q++)
                in_place = strcmp(preads[q], in[0]) != 0;
            if (in_place) {
                b_size[buf - 1] = in_sz;
                o[0].alias_of = in[0];
                /* written: nobody reads it by its own name any more */
                for (size_t q = 0; q < n_read; q++)
                    if (strcmp(readable[q], src) == 0) {
                        memmove(readable[q], readable[q + 1],
                                (n_read - q - 1) * sizeof *readable);
                        n_read--;
                        break;
                    }
            } else {
                /* drawn still, so the rest of the graph stays what the
                 * seed made it before sizes had to fit */
                (void)tu_rng_below(&r, 256);
                o[0].size = b_size[buf - 1] = out_sz;
            }
            s.outputs = o;
            s.n_outputs = 1;
            if (tu_rng_chance(&r, 10) && n > 0) {
                snprintf(fake, sizeof fake, "n%u", tu_rng_below(&r, n));
                fk[0] = fake;
                s.after_fake = fk;
                s.n_after_fake = 1;
            }
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            strcpy(preads[n_pend], in[0]);
            strcpy(pend[n_pend++], out0);
        } else {
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = "mm";
            in[0] = readable[tu_rng_below(&r, (uint32_t)n_read)];
            in[1] = readable[tu_rng_below(&r, (uint32_t)n_read)];
            s.inputs = in;
            s.n_inputs = 1 + tu_rng_below(&r, 2);
            snprintf(out0, sizeof out0, "b%u", buf++);
            o[0].name = out0;
            o[0].size = b_size[buf - 1] = 64 * (1 + tu_rng_below(&r, 512));
            s.outputs = o;
            s.n_outputs = 1;
            s.flops = (double)(1 + tu_rng_below(&r, 1000)) * 1e6;
            if (tu_rng_chance(&r, 10) && n > 0) {
                snprintf(after, sizeof after, "n%u", tu_rng_below(&r, n));
                af[0] = after;
                s.after = af;
                s.n_after = 1;
            }
            if (tu_rng_chance(&r, 10) && n > 0) {
                snprintf(fake, sizeof fake, "n%u", tu_rng_below(&r, n));
                fk[0] = fake;
                s.after_fake = fk;
                s.n_after_fake = 1;
            }
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            strcpy(readable[n_read++], out0);
        }
        n++;
        assert_true(n_read < CAP && n_res < CAP && buf < 2 * CAP - 2);
    }
    const char *first = n_res ? results[tu_rng_below(&r, (uint32_t)n_res)]
                              : NULL;
    if (first)
        assert_int_equal(commsched_builder_add_output(b, first, &err),
                         COMMSCHED_OK);
    if (!first || strcmp(first, readable[n_read - 1]) != 0)
        assert_int_equal(
            commsched_builder_add_output(b, readable[n_read - 1], &err),
            COMMSCHED_OK);
    for (size_t q = 0; q < n_out; q++)
        assert_int_equal(commsched_builder_add_output(b, outs[q], &err),
                         COMMSCHED_OK);
    commsched_graph *g = NULL;
    commsched_status st = commsched_builder_finish(b, 0, &g, &err);
    if (st != COMMSCHED_OK)
        fail_msg("bucket_graph(%llu): %s: %s", (unsigned long long)seed,
                 err.path, err.text);
    free(readable);
    free(pend);
    free(preads);
    free(results);
    free(b_size);
    return g;
}

static commsched_graph *bucket_graph(uint64_t seed, uint32_t n_nodes)
{
    return bucket_graph_as(seed, n_nodes, 0);
}

/* Every bucket pass on a graph: the result is valid, round-trips, its
 * memory equals a recompute, the budget holds pass by pass, collectives
 * only go down, and the seed passes run on afterwards. */
static void check_random(commsched_graph *g, const uint32_t *order,
                         const char *knobs, double budget, uint64_t seed,
                         uint32_t *buckets)
{
    bx x;
    bx_open_graph(&x, g, order);
    uint32_t colls = count_kind(g, COMMSCHED_NODE_COLLECTIVE);
    bx_run(&x, ALL_BUCKETS ",decide_global_ordering_of_comms,"
               "reorder_communication_preserving_peak_memory,"
               "sink_waits_iterative",
           knobs);
    for (size_t i = 0; i < 3; i++) {
        const commsched_pass_stats *p = pass_at(&x, i);
        if ((double)p->peak_after > (double)p->peak_before * (1 + budget))
            fail_msg("seed %llu: %s raised the peak %lld -> %lld",
                     (unsigned long long)seed, p->pass,
                     (long long)p->peak_before, (long long)p->peak_after);
        for (uint32_t k = 0; k < p->n_buckets; k++)
            assert_true(p->buckets[k].n_members >= 2);
        if (buckets)
            *buckets += p->n_buckets;
    }
    uint32_t merged = 0;
    for (size_t i = 0; i < 3; i++)
        for (uint32_t k = 0; k < pass_at(&x, i)->n_buckets; k++)
            merged += pass_at(&x, i)->buckets[k].n_members - 1;
    assert_int_equal(count_kind(x.g, COMMSCHED_NODE_COLLECTIVE),
                     colls - merged);
    check_rewritten(&x);
    bx_close(&x);
}

static void test_random_greedy(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        commsched_graph *g = bucket_graph(seed, 20 + (uint32_t)(seed % 50));
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc((size_t)n * sizeof *order);
        assert_non_null(order);
        tu_random_topo_order(g, seed * 7, 0, order);
        /* our graph is destroyed by check_random's bx_close */
        check_random(g, seed % 2 ? order : NULL,
                     seed % 3 == 0 ? "bucket_peak_memory_budget=1"
                     : seed % 3 == 1 ? "bucket_cap_mb=0.02"
                                     : NULL,
                     seed % 3 == 0 ? 1.0 : 0.0, seed, NULL);
        free(order);
    }
    /* Shaped as Inductor's: waits that read their collective's input,
     * collectives' outputs the graph returns. Those must bucket (they did
     * not: no real Inductor graph was ever bucketed). */
    uint32_t buckets = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        commsched_graph *g =
            bucket_graph_as(seed, 20 + (uint32_t)(seed % 50), 1);
        check_random(g, NULL,
                     seed % 2 ? "bucket_peak_memory_budget=1" : NULL,
                     seed % 2 ? 1.0 : 0.0, seed, &buckets);
    }
    assert_true(buckets >= 20);
    /* The generic random graphs too (every collective op, sync ones). */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        tu_graph_opts o = tu_random_opts(20 + (uint32_t)(seed % 40));
        check_random(tu_random_graph(seed, &o), NULL,
                     "bucket_peak_memory_budget=0.5", 0.5, seed, NULL);
    }
}

/* bucket_mode=cost accepts a merge only when the simulated step gets
 * shorter, so the step is never longer than with no bucketing. Every
 * merge is priced both ways here (bx_run's verify: the full figure must
 * lie within the incremental estimate's bound), and most are decided
 * from their window (bucketing_time.c), not the whole graph. */
static void test_random_cost_mode_never_worse(void **state)
{
    (void)state;
    int improved = 0;
    uint32_t priced = 0, full = 0;
    for (uint64_t seed = 100; seed < 160; seed++) {
        commsched_graph *g = bucket_graph(seed, 30 + (uint32_t)(seed % 40));
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc((size_t)n * sizeof *order);
        assert_non_null(order);
        tu_random_topo_order(g, seed, 0, order);
        bx x;
        bx_open_graph(&x, g, seed % 2 ? order : NULL);
        double before = makespan_of(x.s, x.rt0);
        bx_run(&x, ALL_BUCKETS,
               seed % 4 == 0 ? "bucket_mode=cost,bucket_peak_memory_budget=2"
                             : "bucket_mode=cost");
        double after = makespan_of(x.s, commsched_run_runtime_ns(x.run));
        if (after > before)
            fail_msg("seed %llu: makespan %.17g -> %.17g",
                     (unsigned long long)seed, before, after);
        improved += after < before;
        for (size_t i = 0; i < 3; i++) {
            priced += pass_at(&x, i)->merges_priced;
            full += pass_at(&x, i)->full_pricings;
        }
        check_rewritten(&x);
        bx_close(&x);
        free(order);
    }
    assert_true(improved > 0); /* the mode does merge something */
    /* The generic random graphs: several groups (a comm stream each), sync
     * collectives, waits on several collectives, collectives still in
     * flight after a merge's window: every term of the estimate. */
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tu_graph_opts o = tu_random_opts(30 + (uint32_t)(seed % 50));
        bx x;
        bx_open_graph(&x, tu_random_graph(seed, &o), NULL);
        double before = makespan_of(x.s, x.rt0);
        bx_run(&x, ALL_BUCKETS,
               seed % 3 == 0   ? "bucket_mode=cost,bucket_cap_mb=inf,"
                                 "bucket_peak_memory_budget=inf"
               : seed % 3 == 1 ? "bucket_mode=cost,bucket_max_ops=3"
                               : "bucket_mode=cost");
        double after = makespan_of(x.s, commsched_run_runtime_ns(x.run));
        if (after > before)
            fail_msg("seed %llu: makespan %.17g -> %.17g",
                     (unsigned long long)seed, before, after);
        for (size_t i = 0; i < 3; i++) {
            priced += pass_at(&x, i)->merges_priced;
            full += pass_at(&x, i)->full_pricings;
        }
        check_rewritten(&x);
        bx_close(&x);
    }
    /* small random graphs: ties, in-place members and windows that
     * reach back are common; the CLI test holds generated steps to more */
    if (!(priced >= 100 && full * 3 < priced))
        fail_msg("%u merges priced, %u times the full way", priced, full);
}

/* ---- DDP ------------------------------------------------------------------------- */

/* A DDP-like step: forward and backward compute per layer; in backward
 * every parameter's gradient gets its own all-reduce, waited only before
 * the optimizer update. Gradients of 1-8 MiB, fp32. */
static commsched_graph *ddp_graph(uint32_t layers)
{
    commsched_error err = {0};
    commsched_builder *b = NULL;
    assert_int_equal(commsched_builder_create("ddp-like", &b, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "dp", 8, 1, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "x", 1 << 20, 1, &err),
                     COMMSCHED_OK);
    static const int64_t mib[4] = {1, 4, 8, 2};
    uint32_t params = layers * 4;
    char(*res)[32] = calloc(params, sizeof *res);
    const char **res_p = calloc(params, sizeof *res_p);
    assert_non_null(res);
    assert_non_null(res_p);
    char prev[32] = "x", name[32], out[32], in2[32];
    const char *in[2];
    commsched_output_spec o;
    commsched_node_spec s;
    for (uint32_t l = 0; l < layers; l++) {
        for (uint32_t p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "w%u_%u", l, p);
            assert_int_equal(commsched_builder_add_input(
                                 b, name, mib[p] << 20, 0, &err),
                             COMMSCHED_OK);
        }
        memset(&s, 0, sizeof s);
        memset(&o, 0, sizeof o);
        snprintf(name, sizeof name, "fwd%u", l);
        snprintf(out, sizeof out, "act%u", l);
        snprintf(in2, sizeof in2, "w%u_0", l);
        in[0] = prev;
        in[1] = in2;
        s.name = name;
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.op = "mm";
        s.inputs = in;
        s.n_inputs = 2;
        o.name = out;
        o.size = 1 << 20;
        s.outputs = &o;
        s.n_outputs = 1;
        s.runtime_ns = -1;
        s.flops = 2e10;
        s.bytes = -1;
        assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
        strcpy(prev, out);
    }
    uint32_t k = 0;
    for (uint32_t l = layers; l-- > 0;) {
        for (uint32_t p = 0; p < 4; p++, k++) {
            char grad[32], ar[32], ar_o[32];
            memset(&s, 0, sizeof s);
            memset(&o, 0, sizeof o);
            snprintf(name, sizeof name, "bwd%u_%u", l, p);
            snprintf(grad, sizeof grad, "grad%u_%u", l, p);
            snprintf(in2, sizeof in2, "act%u", l);
            in[0] = in2;
            s.name = name;
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = "mm";
            s.inputs = in;
            s.n_inputs = 1;
            o.name = grad;
            o.size = mib[p] << 20;
            s.outputs = &o;
            s.n_outputs = 1;
            s.runtime_ns = -1;
            s.flops = 1e10;
            s.bytes = -1;
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            memset(&s, 0, sizeof s);
            snprintf(ar, sizeof ar, "ar%u_%u", l, p);
            snprintf(ar_o, sizeof ar_o, "ar%u_%u_o", l, p);
            in[0] = grad;
            s.name = ar;
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = "all_reduce";
            s.group = "dp";
            s.dtype = COMMSCHED_DTYPE_FLOAT32;
            s.reduce_op = COMMSCHED_REDUCE_AVG;
            s.inputs = in;
            s.n_inputs = 1;
            o.name = ar_o;
            o.size = mib[p] << 20;
            s.outputs = &o;
            s.n_outputs = 1;
            s.runtime_ns = s.flops = s.bytes = -1;
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            snprintf(res[k], sizeof res[k], "ar%u_%u_w", l, p);
        }
    }
    /* waits, in the order the all-reduces were issued */
    k = 0;
    for (uint32_t l = layers; l-- > 0;)
        for (uint32_t p = 0; p < 4; p++, k++) {
            char ar_o[32];
            memset(&s, 0, sizeof s);
            memset(&o, 0, sizeof o);
            snprintf(name, sizeof name, "wait%u_%u", l, p);
            snprintf(ar_o, sizeof ar_o, "ar%u_%u_o", l, p);
            in[0] = ar_o;
            s.name = name;
            s.kind = COMMSCHED_NODE_WAIT;
            s.op = "wait_tensor";
            s.inputs = in;
            s.n_inputs = 1;
            o.name = res[k];
            o.alias_of = ar_o;
            s.outputs = &o;
            s.n_outputs = 1;
            s.runtime_ns = s.flops = s.bytes = -1;
            assert_int_equal(commsched_builder_add_node(b, &s, &err),
                             COMMSCHED_OK);
            res_p[k] = res[k];
        }
    memset(&s, 0, sizeof s);
    memset(&o, 0, sizeof o);
    s.name = "optimizer";
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = "adamw";
    s.inputs = res_p;
    s.n_inputs = params;
    o.name = "step";
    o.size = 8;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = -1;
    s.flops = -1;
    s.bytes = 1e8;
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_output(b, "step", &err),
                     COMMSCHED_OK);
    commsched_graph *g = NULL;
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    free(res);
    free(res_p);
    return g;
}

static void test_ddp_25mb(void **state)
{
    (void)state;
    bx x;
    bx_open_graph(&x, ddp_graph(6), NULL);
    uint32_t before_colls = count_kind(x.g0, COMMSCHED_NODE_COLLECTIVE);
    double before = makespan_of(x.s0, x.rt0);
    bx_run(&x, "bucket_all_reduce", "bucket_cap_mb=25");
    uint32_t after_colls = count_kind(x.g, COMMSCHED_NODE_COLLECTIVE);
    double after = makespan_of(x.s, commsched_run_runtime_ns(x.run));
    assert_int_equal(before_colls, 24);
    assert_true(after_colls < before_colls);
    assert_true(after < before);
    const commsched_pass_stats *p = pass_at(&x, 0);
    for (uint32_t i = 0; i < p->n_buckets; i++)
        assert_true(p->buckets[i].bytes <= 25 * 1048576);
    /* 1+4+8+2 = 15 MiB a layer: buckets straddle layers up to 25 MiB */
    assert_int_equal(p->buckets[0].n_members, 6); /* 1+4+8+2+1+4 MiB */
    check_rewritten(&x);
    bx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_all_gathers_one_bucket),
        cmocka_unit_test(test_three_all_gathers_stats_times),
        cmocka_unit_test(test_three_reduce_scatters_one_bucket),
        cmocka_unit_test(test_inductor_shaped_reduce_scatters),
        cmocka_unit_test(test_three_all_reduces_one_bucket),
        cmocka_unit_test(test_zero_byte_side),
        cmocka_unit_test(test_wait_view_of_input),
        cmocka_unit_test(test_in_place_all_reduces),
        cmocka_unit_test(test_dependent_all_gather_not_bucketed),
        cmocka_unit_test(test_dtypes_apart_unless_multidtype),
        cmocka_unit_test(test_key_change_closes),
        cmocka_unit_test(test_dependency_skip),
        cmocka_unit_test(test_cap_respected),
        cmocka_unit_test(test_xla_preset_exact),
        cmocka_unit_test(test_memory_budget_refusal),
        cmocka_unit_test(test_placement_after_last_input),
        cmocka_unit_test(test_names_and_edges),
        cmocka_unit_test(test_old_api_refuses_rewrites),
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_pipeline_continues_on_new_graph),
        cmocka_unit_test(test_random_greedy),
        cmocka_unit_test(test_random_cost_mode_never_worse),
        cmocka_unit_test(test_ddp_25mb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
