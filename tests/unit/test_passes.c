/* commsched unit tests — the seed passes (passes/ *.c) against Inductor's
 * scenarios (reference/inductor-overlap-passes.md §6, S1-S7), hand-derived
 * graphs that reach every limiting factor, the PR #184558 fix, the fake-edge
 * passes, and properties on random graphs.
 *
 * Every expected order and number is derived by hand in the comments from
 * the seed (seeds/003_inductor_comms.py.txt) with docs/PASSES.md's mapping.
 * Iterative passes multiply collective runtimes by
 * reorder_sink_runtime_estimations_comm_mult (2.0): a collective with
 * runtime_ns 10 has comm_time 20 there. The heap scheduler uses raw
 * runtimes. Every pipeline runs with COMMSCHED_PIPELINE_VERIFY, so memory
 * tracking is checked against a full recompute after every move.
 *
 * Graph texts use single quotes (turned into double quotes on load) to keep
 * the JSON readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/analysis.h"
#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "passes_internal.h"
#include "testutil.h"

#define RCPPM "reorder_communication_preserving_peak_memory"
#define SINK "sink_waits_iterative"
#define DECIDE "decide_global_ordering_of_comms"

/* The graph header: one group "g" (any collective may use it), no inputs
 * unless the test adds them after it. */
#define HDR "{'format': 'commsched-graph', 'version': 1, " \
            "'groups': [{'name': 'g', 'size': 8, 'hosts': 1}], "

typedef struct fx {
    commsched_graph *g;
    commsched_schedule *s;
    commsched_run *run;
    double *rt;
} fx;

static void fx_open(fx *f, const char *single_quoted, const uint32_t *order)
{
    memset(f, 0, sizeof *f);
    size_t n = strlen(single_quoted);
    char *json = malloc(n + 1);
    assert_non_null(json);
    for (size_t i = 0; i <= n; i++)
        json[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    f->g = tu_graph_from_json(json);
    free(json);
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(f->g, order, &f->s, &err),
                     COMMSCHED_OK);
    uint32_t nn = commsched_graph_node_count(f->g);
    f->rt = calloc(nn, sizeof *f->rt);
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

/* Runs `passes` with knobs "k=v,k=v" (NULL: defaults) and the pipeline's
 * flags; the run must succeed. */
static void fx_run_flags(fx *f, const char *passes, const char *knobs,
                         unsigned flags)
{
    commsched_error err = {0};
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    if (knobs) {
        char *copy = malloc(strlen(knobs) + 1);
        assert_non_null(copy);
        strcpy(copy, knobs);
        for (char *kv = strtok(copy, ","); kv; kv = strtok(NULL, ",")) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            if (commsched_knobs_set(k, kv, eq + 1, &err) != COMMSCHED_OK)
                fail_msg("knob %s: %s", kv, err.text);
        }
        free(copy);
    }
    commsched_run_destroy(f->run);
    f->run = NULL;
    commsched_status st =
        commsched_pipeline_run(f->g, f->s, f->rt, passes, k, flags, &f->run,
                               &err);
    commsched_knobs_destroy(k);
    if (st != COMMSCHED_OK)
        fail_msg("pipeline %s failed: %s: %s", passes,
                 commsched_status_name(st), err.text);
    assert_int_equal(commsched_schedule_check(f->s, 0, &err), COMMSCHED_OK);
}

/* fx_run_flags verifying memory after every move. */
static void fx_run(fx *f, const char *passes, const char *knobs)
{
    fx_run_flags(f, passes, knobs, COMMSCHED_PIPELINE_VERIFY);
}

static const commsched_pass_stats *pass_at(const fx *f, size_t i)
{
    const commsched_pass_stats *p = commsched_run_pass(f->run, i);
    assert_non_null(p);
    return p;
}

/* Pass i's row for `node`; fails when absent. */
static const commsched_node_stats *row(const fx *f, size_t i,
                                       const char *node)
{
    const commsched_pass_stats *p = pass_at(f, i);
    for (uint32_t k = 0; k < p->n_nodes; k++)
        if (strcmp(commsched_graph_node_name(f->g, p->nodes[k].node), node) ==
            0)
            return &p->nodes[k];
    fail_msg("pass %s has no row for %s", p->pass, node);
    return NULL;
}

static void expect_first_line(const commsched_node_stats *r, const char *want)
{
    const char *lf = r->limiting_factor ? r->limiting_factor : "None";
    size_t n = strcspn(lf, "\n");
    if (strlen(want) != n || strncmp(lf, want, n) != 0)
        fail_msg("limiting factor\n  got:  %s\n  want: %s", lf, want);
}

/* moves, grouped and the limiting factor's first line of one row. */
static void expect_row(const fx *f, size_t pass, const char *node,
                       uint32_t moves, uint32_t grouped, const char *factor)
{
    const commsched_node_stats *r = row(f, pass, node);
    if (r->moves != moves || r->grouped != grouped)
        fail_msg("%s: moves %u grouped %u, want %u %u (factor %s)", node,
                 r->moves, r->grouped, moves, grouped, r->limiting_factor);
    expect_first_line(r, factor);
}

/* ---- Inductor's scenarios (reference §6) ---------------------------------- */

/* S1 test_sink_waits: ar=AR(a); w=W(ar); b=mm(a,a); out=mm(w,b), original
 * order ar, w, b, out. sink_waits (heap): w scores (0, 1, 1) and b
 * (0, 0, 2), so b pops first: ar, b, w, out. sink_waits_iterative reaches
 * the same order: w swaps with b (no dependency), then out reads w's alias
 * and is gemm-like, so it cannot join: "data dependency detected". */
static const char *S1 =
    HDR "'inputs': [{'name': 'a', 'size': 16}], 'outputs': ['out_o'], "
        "'nodes': ["
        "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['a'], "
        " 'outputs': [{'name': 'ar_o', 'size': 16}], 'runtime_ns': 100},"
        "{'name': 'w', 'kind': 'wait', 'inputs': ['ar_o'], "
        " 'outputs': [{'name': 'w_o', 'alias_of': 'ar_o'}]},"
        "{'name': 'b', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['a', 'a'], 'outputs': [{'name': 'b_o', 'size': 16}], "
        " 'runtime_ns': 5},"
        "{'name': 'out', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['w_o', 'b_o'], 'outputs': [{'name': 'out_o', "
        " 'size': 16}], 'runtime_ns': 5}]}";

static void test_s1_sink_waits(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, S1, NULL);
    fx_run(&f, "sink_waits", NULL);
    tu_expect_order(f.g, f.s, "ar b w out");
    fx_close(&f);

    fx_open(&f, S1, NULL);
    fx_run(&f, SINK, NULL);
    tu_expect_order(f.g, f.s, "ar b w out");
    assert_int_equal(pass_at(&f, 0)->n_nodes, 1);
    expect_row(&f, 0, "w", 1, 0, "data dependency detected");
    assert_string_equal(row(&f, 0, "w")->limiting_factor,
                        "data dependency detected\n candidate:out\n "
                        "non_group_reason:candidate contains gemm_like out");
    assert_string_equal(row(&f, 0, "w")->moves_info, "+b");
    /* exposed: ar (200) minus b (5) once w sits after b */
    assert_true(row(&f, 0, "w")->initial_exposed == 200.0);
    assert_true(row(&f, 0, "w")->final_exposed == 195.0);
    fx_close(&f);
}

/* S2 test_raise_comms: b=mm(a,a); c=relu(b); d=mm(c,c); e=AR(b); we=W(e);
 * out=mm(d,we). raise_comms: e is collective 0, its ancestor b gets score0
 * 0, the rest sys.maxsize; after b both c (max, 0, 1) and e (0, 0, 3) are
 * ready and e wins: b, e, c, d, we, out. */
static void test_s2_raise_comms(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'a', 'size': 16}], "
                "'outputs': ['out_o'], 'nodes': ["
                "{'name': 'b', 'kind': 'compute', 'op': 'mm', "
                " 'gemm_like': true, 'inputs': ['a', 'a'], "
                " 'outputs': [{'name': 'b_o', 'size': 16}], 'runtime_ns': 5},"
                "{'name': 'c', 'kind': 'compute', 'op': 'relu', "
                " 'inputs': ['b_o'], 'outputs': [{'name': 'c_o', "
                " 'size': 16}], 'runtime_ns': 1},"
                "{'name': 'd', 'kind': 'compute', 'op': 'mm', "
                " 'gemm_like': true, 'inputs': ['c_o', 'c_o'], "
                " 'outputs': [{'name': 'd_o', 'size': 16}], 'runtime_ns': 5},"
                "{'name': 'e', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['b_o'], "
                " 'outputs': [{'name': 'e_o', 'size': 16}], "
                " 'runtime_ns': 100},"
                "{'name': 'we', 'kind': 'wait', 'inputs': ['e_o'], "
                " 'outputs': [{'name': 'we_o', 'alias_of': 'e_o'}]},"
                "{'name': 'out', 'kind': 'compute', 'op': 'mm', "
                " 'gemm_like': true, 'inputs': ['d_o', 'we_o'], "
                " 'outputs': [{'name': 'out_o', 'size': 16}], "
                " 'runtime_ns': 5}]}",
            NULL);
    fx_run(&f, "raise_comms", NULL);
    tu_expect_order(f.g, f.s, "b e c d we out");
    fx_close(&f);
}

/* S3 (aten test_sink_waits_raise_comms): mm=mm(a,a); relu=relu(mm);
 * mm_1=mm(relu,relu); ar=AR(mm); relu_1=relu(mm_1); mm_2=mm(relu_1,relu_1);
 * w=W(ar); mm_3=mm(w,mm_2). Costs: c10d ops 1.0 (the wait too), mm 1.0,
 * relu (memory-bound) 0.1.
 *
 * Inductor's [sink_waits, raise_comms]: sink_waits keeps the order (w is
 * already just before its consumer); raise_comms pops ar right after mm:
 * mm, all_reduce, relu, mm_1, relu_1, mm_2, wait, mm_3 — the Inductor
 * FileCheck order without its clone prologue.
 *
 * The aten scheduler's exact order, mm, relu, all_reduce, mm_1, relu_1,
 * mm_2, wait_tensor, mm_3, is the iterative pair [sink_waits_iterative,
 * RCPPM] with runtime estimations: the sink groups w with mm_3 (its data
 * dependency, groupable with estimations on) and reaches the end; RCPPM
 * sees ar exposed 2.0 - (0.1 + 1.0) = 0.9, swaps mm_1 above it (now
 * 2.0 - 2.1 < 0) and stops, "unexposed by runtime estimations" with
 * reorder_iterative_extra_comm_comp_overlap=0 (stop once not exposed). */
static const char *S3 =
    HDR "'inputs': [{'name': 'a', 'size': 16}], 'outputs': ['mm_3_o'], "
        "'nodes': ["
        "{'name': 'mm', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['a', 'a'], 'outputs': [{'name': 'mm_o', 'size': 16}], "
        " 'runtime_ns': 1},"
        "{'name': 'relu', 'kind': 'compute', 'op': 'relu', "
        " 'inputs': ['mm_o'], 'outputs': [{'name': 'relu_o', 'size': 16}], "
        " 'runtime_ns': 0.1},"
        "{'name': 'mm_1', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['relu_o', 'relu_o'], "
        " 'outputs': [{'name': 'mm_1_o', 'size': 16}], 'runtime_ns': 1},"
        "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['mm_o'], "
        " 'outputs': [{'name': 'ar_o', 'size': 16}], 'runtime_ns': 1},"
        "{'name': 'relu_1', 'kind': 'compute', 'op': 'relu', "
        " 'inputs': ['mm_1_o'], 'outputs': [{'name': 'relu_1_o', "
        " 'size': 16}], 'runtime_ns': 0.1},"
        "{'name': 'mm_2', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['relu_1_o', 'relu_1_o'], "
        " 'outputs': [{'name': 'mm_2_o', 'size': 16}], 'runtime_ns': 1},"
        "{'name': 'w', 'kind': 'wait', 'op': 'wait_tensor', "
        " 'inputs': ['ar_o'], 'outputs': [{'name': 'w_o', "
        " 'alias_of': 'ar_o'}], 'runtime_ns': 1},"
        "{'name': 'mm_3', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['w_o', 'mm_2_o'], "
        " 'outputs': [{'name': 'mm_3_o', 'size': 16}], 'runtime_ns': 1}]}";

static void test_s3_sink_and_raise(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, S3, NULL);
    fx_run(&f, "sink_waits,raise_comms", NULL);
    tu_expect_order(f.g, f.s, "mm ar relu mm_1 relu_1 mm_2 w mm_3");
    fx_close(&f);

    fx_open(&f, S3, NULL);
    fx_run(&f, SINK "," RCPPM,
           "sink_iterative_use_runtime_estimations=true,"
           "reorder_iterative_use_runtime_estimations=true,"
           "reorder_iterative_extra_comm_comp_overlap=0");
    tu_expect_order(f.g, f.s, "mm relu ar mm_1 relu_1 mm_2 w mm_3");
    expect_row(&f, 0, "w", 0, 1, "None");
    expect_row(&f, 1, "ar", 1, 0, "unexposed by runtime estimations");
    const commsched_node_stats *r = row(&f, 1, "ar");
    assert_true(r->comm_time == 2.0);
    assert_true(r->initial_exposed == 2.0 - (0.1 + 1.0));
    assert_true(r->final_exposed == 2.0 - (0.1 + 1.0 + 1.0));
    fx_close(&f);
}

/* Two all-reduces, gemms and pointwise ops (s4 and the knob tests). */
static const char S4_GRAPH[] =
    HDR "'inputs': [{'name': 'a', 'size': 16}], 'outputs': ['e_o'], "
        "'nodes': ["
        "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['a'], "
        " 'outputs': [{'name': 'ar_o', 'size': 16}], "
        " 'runtime_ns': 100},"
        "{'name': 'mm_g', 'kind': 'compute', 'op': 'mm', "
        " 'gemm_like': true, 'inputs': ['a', 'a'], "
        " 'outputs': [{'name': 'g_o', 'size': 16}], 'runtime_ns': 5},"
        "{'name': 'relu', 'kind': 'compute', 'op': 'relu', "
        " 'inputs': ['a'], 'outputs': [{'name': 'c_o', 'size': 16}], "
        " 'runtime_ns': 1},"
        "{'name': 'mm_d', 'kind': 'compute', 'op': 'mm', "
        " 'gemm_like': true, 'inputs': ['c_o', 'c_o'], "
        " 'outputs': [{'name': 'd_o', 'size': 16}], 'runtime_ns': 5},"
        "{'name': 'w_ar', 'kind': 'wait', 'inputs': ['ar_o'], "
        " 'outputs': [{'name': 'w_ar_o', 'alias_of': 'ar_o'}], "
        " 'runtime_ns': 0},"
        "{'name': 'mul', 'kind': 'compute', 'op': 'mul', "
        " 'inputs': ['d_o', 'c_o', 'w_ar_o'], "
        " 'outputs': [{'name': 'f_o', 'size': 16}], 'runtime_ns': 1},"
        "{'name': 'fr', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['f_o'], "
        " 'outputs': [{'name': 'fr_o', 'size': 16}], "
        " 'runtime_ns': 100},"
        "{'name': 'w_fr', 'kind': 'wait', 'inputs': ['fr_o'], "
        " 'outputs': [{'name': 'w_fr_o', 'alias_of': 'fr_o'}], "
        " 'runtime_ns': 0},"
        "{'name': 'add', 'kind': 'compute', 'op': 'add', "
        " 'inputs': ['d_o', 'w_ar_o', 'w_fr_o'], "
        " 'outputs': [{'name': 'add_o', 'size': 16}], "
        " 'runtime_ns': 1},"
        "{'name': 'mm_e', 'kind': 'compute', 'op': 'mm', "
        " 'gemm_like': true, 'inputs': ['add_o', 'g_o'], "
        " 'outputs': [{'name': 'e_o', 'size': 16}], "
        " 'runtime_ns': 5}]}";

/* S4 test_reorder_compute_for_overlap: ar=AR(a); g=mm(a,a); c=relu(a);
 * d=mm(c,c); f=d*c*W(ar); fr=AR(f); e=mm(d+W(ar)+W(fr), g), as Inductor's
 * nodes in source order: ar, g, c, d, w_ar, f, fr, w_fr, add, e. Costs:
 * collective 100, wait 0, extern (gemm) 5, other 1.
 *
 * score0: ar 0, fr 1 and its ancestors c, d, w_ar, f 1; g, w_fr, add, e
 * sys.maxsize. score1: waits 1. Ready at start: ar (0,0,0), g, c. ar pops
 * and takes compute for its 100: c (1,0,2), then d (1,0,3), then g
 * (max,0,1): 100-1-5-5 > 0 but nothing else is ready (f needs w_ar). Then
 * w_ar, f, fr (nothing to overlap: add needs w_fr), w_fr, add, e:
 * AR, relu, mm, mm, W(ar), mul, AR, W(fr), add, mm. */

static void test_s4_reorder_compute_for_overlap(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, S4_GRAPH, NULL);
    fx_run(&f, "reorder_compute_for_overlap", NULL);
    tu_expect_order(f.g, f.s, "ar relu mm_d mm_g w_ar mul fr w_fr add mm_e");
    fx_close(&f);
}

/* S5 test_inductor_default_comms_ordering: AR0, AR1, AR2 on three groups,
 * waits in reverse order, no compute. RCPPM with the default
 * reorder_iterative_unsafe_collectives_reorder=true: AR0 (first node) has
 * no candidate; AR1 swaps with AR0 (no dependency, memory: peak 3 x 16
 * stays); the walk resumes at AR2 (AR1's old successor), which passes AR0
 * and AR1: AR2 AR1 AR0 W2 W1 W0, moves 0, 1, 2. With the flag off, AR1 and
 * AR2 stop at "collective ordering" and the order is the input's. */
static const char *S5 =
    "{'format': 'commsched-graph', 'version': 1, "
    "'groups': [{'name': 'g1', 'size': 2}, {'name': 'g2', 'size': 2}, "
    "           {'name': 'g3', 'size': 2}], "
    "'inputs': [{'name': 'x', 'size': 16}], "
    "'outputs': ['w0_o', 'w1_o', 'w2_o'], 'nodes': ["
    "{'name': 'AR0', 'kind': 'collective', 'op': 'all_reduce', "
    " 'group': 'g1', 'inputs': ['x'], 'outputs': [{'name': 'a0', "
    " 'size': 16}], 'runtime_ns': 10},"
    "{'name': 'AR1', 'kind': 'collective', 'op': 'all_reduce', "
    " 'group': 'g2', 'inputs': ['x'], 'outputs': [{'name': 'a1', "
    " 'size': 16}], 'runtime_ns': 10},"
    "{'name': 'AR2', 'kind': 'collective', 'op': 'all_reduce', "
    " 'group': 'g3', 'inputs': ['x'], 'outputs': [{'name': 'a2', "
    " 'size': 16}], 'runtime_ns': 10},"
    "{'name': 'W2', 'kind': 'wait', 'inputs': ['a2'], "
    " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]},"
    "{'name': 'W1', 'kind': 'wait', 'inputs': ['a1'], "
    " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
    "{'name': 'W0', 'kind': 'wait', 'inputs': ['a0'], "
    " 'outputs': [{'name': 'w0_o', 'alias_of': 'a0'}]}]}";


/* NULL knobs mean every knob at its default (the header's promise): the
 * same order as knobs made by commsched_knobs_create. */
static void test_null_knobs_are_defaults(void **state)
{
    (void)state;
    const char *pipeline = "sink_waits_iterative,"
                           "reorder_communication_preserving_peak_memory,"
                           "reorder_compute_for_overlap,overlap";
    fx a, b;
    fx_open(&a, S4_GRAPH, NULL);
    fx_run(&a, pipeline, NULL);
    fx_open(&b, S4_GRAPH, NULL);
    commsched_error err = {0};
    assert_int_equal(commsched_pipeline_run(b.g, b.s, b.rt, pipeline, NULL,
                                            COMMSCHED_PIPELINE_VERIFY, &b.run,
                                            &err),
                     COMMSCHED_OK);
    char want[1024];
    tu_order_text(a.g, a.s, want, sizeof want);
    tu_expect_order(b.g, b.s, want);
    assert_int_equal(commsched_run_pass_count(b.run), 4);
    fx_close(&a);
    fx_close(&b);
}

static void test_s5_collective_order(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, S5, NULL);
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "AR2 AR1 AR0 W2 W1 W0");
    const commsched_pass_stats *p = pass_at(&f, 0);
    assert_int_equal(p->n_nodes, 3);
    /* rows in processing order: the resume point skips the moved AR0 */
    assert_string_equal(commsched_graph_node_name(f.g, p->nodes[0].node),
                        "AR0");
    assert_string_equal(commsched_graph_node_name(f.g, p->nodes[1].node),
                        "AR1");
    assert_string_equal(commsched_graph_node_name(f.g, p->nodes[2].node),
                        "AR2");
    expect_row(&f, 0, "AR0", 0, 0, "None");
    expect_row(&f, 0, "AR1", 1, 0, "None");
    expect_row(&f, 0, "AR2", 2, 0, "None");
    assert_true(p->peak_after == p->peak_before);
    fx_close(&f);

    fx_open(&f, S5, NULL);
    fx_run(&f, RCPPM, "reorder_iterative_unsafe_collectives_reorder=false");
    tu_expect_order(f.g, f.s, "AR0 AR1 AR2 W2 W1 W0");
    expect_row(&f, 0, "AR0", 0, 0, "None");
    expect_row(&f, 0, "AR1", 0, 0, "collective ordering");
    expect_row(&f, 0, "AR2", 0, 0, "collective ordering");
    fx_close(&f);
}

/* S6 test_reorder_respects_wait_dep: ag0=AG(inp); w0=W(ag0); ag1=AG(w0);
 * w1=W(ag1), passes [sink_waits, RCPPM]. Nothing can move. RCPPM keeps two
 * rows: ag0 (the first node, no candidate) and ag1, whose candidate w0 is
 * a dependency and joins the group, then ag0 (a dependency of w0, an
 * async collective, not groupable) stops it. w1 is the last node and is
 * never processed. */
static void test_s6_wait_dependency(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'inp', 'size': 16}], "
                "'outputs': ['w1_o'], 'nodes': ["
                "{'name': 'ag0', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'g', 'inputs': ['inp'], "
                " 'outputs': [{'name': 'ag0_o', 'size': 128}], "
                " 'runtime_ns': 10},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['ag0_o'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'ag0_o'}]},"
                "{'name': 'ag1', 'kind': 'collective', 'op': 'all_gather', "
                " 'group': 'g', 'inputs': ['w0_o'], "
                " 'outputs': [{'name': 'ag1_o', 'size': 1024}], "
                " 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['ag1_o'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'ag1_o'}]}]}",
            NULL);
    fx_run(&f, "sink_waits," RCPPM, NULL);
    tu_expect_order(f.g, f.s, "ag0 w0 ag1 w1");
    const commsched_pass_stats *p = pass_at(&f, 1);
    assert_int_equal(p->n_nodes, 2);
    expect_row(&f, 1, "ag0", 0, 0, "None");
    expect_row(&f, 1, "ag1", 0, 1, "data dependency detected");
    assert_string_equal(row(&f, 1, "ag1")->limiting_factor,
                        "data dependency detected\n"
                        " candidate:ag0(outs:['ag0_o'])\n"
                        " non_group_reason:candidate contains_collective ag0");
    fx_close(&f);
}

/* S7 test_reorder_peak_memory: x=inp+1; RS_coalesced([x, inp]); y=x+2;
 * waits; other=ones+22. One RCPPM row (rs): its candidate x is a data
 * dependency and joins the group, then the list begins: "None", 0 moves.
 * Exposed: comm 2 x 5 minus y's 10 = 0. */
static void test_s7_peak_memory_noop(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'inp', 'size': 64, 'freeable': true}], "
                "'outputs': ['y_o', 'o_o', 'w0_o', 'w1_o'], 'nodes': ["
                "{'name': 'x', 'kind': 'compute', 'op': 'add', "
                " 'inputs': ['inp'], 'outputs': [{'name': 'x_o', "
                " 'size': 64}], 'runtime_ns': 1},"
                "{'name': 'rs', 'kind': 'collective', "
                " 'op': 'reduce_scatter', 'group': 'g', "
                " 'inputs': ['x_o', 'inp'], "
                " 'outputs': [{'name': 'rs0', 'size': 8}, "
                "             {'name': 'rs1', 'size': 8}], 'runtime_ns': 5},"
                "{'name': 'y', 'kind': 'compute', 'op': 'add', "
                " 'inputs': ['x_o'], 'outputs': [{'name': 'y_o', "
                " 'size': 64}], 'runtime_ns': 10},"
                "{'name': 'w0', 'kind': 'wait', 'inputs': ['rs0'], "
                " 'outputs': [{'name': 'w0_o', 'alias_of': 'rs0'}]},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['rs1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'rs1'}]},"
                "{'name': 'other', 'kind': 'compute', 'op': 'add', "
                " 'outputs': [{'name': 'o_o', 'size': 64}], "
                " 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "x rs y w0 w1 other");
    const commsched_pass_stats *p = pass_at(&f, 0);
    assert_int_equal(p->n_nodes, 1);
    expect_row(&f, 0, "rs", 0, 1, "None");
    assert_true(row(&f, 0, "rs")->initial_exposed == 0.0);
    assert_true(p->peak_after == p->peak_before);
    fx_close(&f);
}

/* ---- RCPPM limiting factors -------------------------------------------- */

/* The candidate is a gemm-like dependency: "data dependency detected" with
 * non_group_reason contains_gemm_like. With runtime estimations on, gemms
 * group, and the list's start ends the walk. */
static const char *GEMM_DEP =
    HDR "'inputs': [{'name': 'a', 'size': 16}], 'outputs': ['w_o'], "
        "'nodes': ["
        "{'name': 'mm', 'kind': 'compute', 'op': 'mm', 'gemm_like': true, "
        " 'inputs': ['a'], 'outputs': [{'name': 'mm_o', 'size': 16}], "
        " 'runtime_ns': 5},"
        "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['mm_o'], "
        " 'outputs': [{'name': 'ar_o', 'size': 16}], 'runtime_ns': 10},"
        "{'name': 'w', 'kind': 'wait', 'inputs': ['ar_o'], "
        " 'outputs': [{'name': 'w_o', 'alias_of': 'ar_o'}]}]}";

static void test_rcppm_data_dependency_gemm(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, GEMM_DEP, NULL);
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "mm ar w");
    expect_row(&f, 0, "ar", 0, 0, "data dependency detected");
    assert_string_equal(row(&f, 0, "ar")->limiting_factor,
                        "data dependency detected\n candidate:mm(outs:"
                        "['mm_o'])\n non_group_reason:contains_gemm_like");
    fx_close(&f);

    fx_open(&f, GEMM_DEP, NULL);
    fx_run(&f, RCPPM, "reorder_iterative_use_runtime_estimations=true");
    expect_row(&f, 0, "ar", 0, 1, "None");
    fx_close(&f);
}

/* p allocates 100 bytes nobody reads (freed at once), then ar allocates
 * 100 that lives until w. Peak 100. Moving p after ar puts p's 100 on top
 * of ar's: 200 - 100 > 100 x 0.2, "peak memory new:200 vs base:100". With a
 * budget of 1.0 it moves (200 - 100 <= 100). x (100: ar writes what it
 * reads) is not freeable, so not counted. */
static const char *PEAK_REORDER =
    HDR "'inputs': [{'name': 'x', 'size': 100}], 'nodes': ["
        "{'name': 'p', 'kind': 'compute', 'op': 'tmp', "
        " 'outputs': [{'name': 'p_o', 'size': 100}], 'runtime_ns': 1},"
        "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'ar_o', 'size': 100}], 'runtime_ns': 10},"
        "{'name': 'w', 'kind': 'wait', 'inputs': ['ar_o'], "
        " 'outputs': [{'name': 'w_o', 'alias_of': 'ar_o'}]}]}";

static void test_rcppm_peak_memory(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, PEAK_REORDER, NULL);
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "p ar w");
    expect_row(&f, 0, "ar", 0, 0, "peak memory new:200 vs base:100");
    fx_close(&f);

    fx_open(&f, PEAK_REORDER, NULL);
    fx_run(&f, RCPPM, "reorder_iterative_peak_memory_budget=1.0");
    tu_expect_order(f.g, f.s, "ar p w");
    expect_row(&f, 0, "ar", 1, 0, "None");
    assert_true(pass_at(&f, 0)->peak_after == 200);
    fx_close(&f);
}

/* COMMSCHED_PIPELINE_ORDER_ONLY (what overlap's seeds run with): the same
 * orders, moves and limiting factors, the overlap_info texts left empty. */
static void test_order_only_leaves_out_overlap_info(void **state)
{
    (void)state;
    static const char *const pipelines[] = {
        RCPPM, "sink_waits_iterative", RCPPM ",sink_waits_iterative"};
    for (size_t i = 0; i < sizeof pipelines / sizeof *pipelines; i++) {
        char want[256], got[256];
        fx full, only;
        fx_open(&full, PEAK_REORDER, NULL);
        fx_open(&only, PEAK_REORDER, NULL);
        const char *kn = "reorder_iterative_peak_memory_budget=1.0";
        fx_run(&full, pipelines[i], kn);
        fx_run_flags(&only, pipelines[i], kn,
                     COMMSCHED_PIPELINE_VERIFY | COMMSCHED_PIPELINE_ORDER_ONLY);
        tu_order_text(full.g, full.s, want, sizeof want);
        tu_order_text(only.g, only.s, got, sizeof got);
        assert_string_equal(got, want);
        size_t texts = 0;
        for (size_t p = 0; p < commsched_run_pass_count(full.run); p++) {
            const commsched_pass_stats *a = pass_at(&full, p);
            const commsched_pass_stats *b = pass_at(&only, p);
            assert_int_equal(a->n_nodes, b->n_nodes);
            for (uint32_t k = 0; k < a->n_nodes; k++) {
                assert_int_equal(a->nodes[k].moves, b->nodes[k].moves);
                assert_string_equal(a->nodes[k].limiting_factor,
                                    b->nodes[k].limiting_factor);
                assert_string_equal(b->nodes[k].overlap_info, "");
                texts += a->nodes[k].overlap_info[0] != '\0';
            }
        }
        assert_true(texts > 0); /* the full run wrote some */
        fx_close(&full);
        fx_close(&only);
    }
}

/* Runtime estimations on. ar (comm 20) is followed by c1 (30): exposed
 * -10 is not below -0.5 x 20, so p (1) swaps above it (exposed -11); then
 * -11 < -10: "unexposed by runtime estimations", before q is looked at. */
static void test_rcppm_unexposed(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'q', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'q_o', 'size': 1}], 'runtime_ns': 1},"
                "{'name': 'p', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'p_o', 'size': 1}], 'runtime_ns': 1},"
                "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'ar_o', 'size': 8}], "
                " 'runtime_ns': 10},"
                "{'name': 'c1', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c1_o', 'size': 1}], "
                " 'runtime_ns': 30},"
                "{'name': 'w', 'kind': 'wait', 'inputs': ['ar_o'], "
                " 'outputs': [{'name': 'w_o', 'alias_of': 'ar_o'}]}]}",
            NULL);
    fx_run(&f, RCPPM, "reorder_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "q ar p c1 w");
    expect_row(&f, 0, "ar", 1, 0, "unexposed by runtime estimations");
    assert_true(row(&f, 0, "ar")->initial_exposed == -10.0);
    assert_true(row(&f, 0, "ar")->final_exposed == -11.0);
    fx_close(&f);
}

/* Runtime estimations on; the group holds a wait and the candidate is
 * compute. Order ar1, c, w1, ar2, c2, w2 (ar1, ar2 comm 20 each).
 * ar2: exposed 20 - 25 = -5 (not below -10). w1 is a dependency (ar2 reads
 * its alias) and joins, with its own exposure 20 - 3 = 17. Candidate c (3):
 * exposed_delta = [max(0, -5 - 3) - max(0, -5)] + [max(0, 17 + 3) -
 * max(0, 17)] = 3 > 0: stop. */
static void test_rcppm_candidate_compute_group_waits(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 1}], 'runtime_ns': 3},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 'ar2', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['w1_o'], "
                " 'outputs': [{'name': 'a2', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'c2', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c2_o', 'size': 1}], "
                " 'runtime_ns': 25},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]}]}",
            NULL);
    fx_run(&f, RCPPM, "reorder_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar1 c w1 ar2 c2 w2");
    expect_row(&f, 0, "ar2", 0, 1,
               "candidate has compute 3.0, group contains waits, "
               "total_exposed_delta 3.0");
    fx_close(&f);
}

/* Runtime estimations on; the candidate is an async collective and the
 * group has runtime. Order ar1, p, ar2, w1, w2. ar2 (comm 20, nothing
 * before its wait but w1: exposed 20) groups p (4; ar2 reads it). Candidate
 * ar1: its exposure walks p (4), skips the async ar2, stops at w1: 20 - 4 =
 * 16; after the swap it would be 16 + 4: delta 4 > 0, stop. */
static void test_rcppm_candidate_collective_group_runtime(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'p', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'p_o', 'size': 8}], 'runtime_ns': 4},"
                "{'name': 'ar2', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['p_o'], "
                " 'outputs': [{'name': 'a2', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]}]}",
            NULL);
    fx_run(&f, RCPPM, "reorder_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar1 p ar2 w1 w2");
    expect_row(&f, 0, "ar2", 0, 1,
               "candidate ar1 is collective, group_runtime:4.0, "
               "exposed_delta:4.0 c_comm_time:20.0 c_comp_time:4.0");
    /* Without estimations the same swap is only a memory question. */
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "p ar2 ar1 w1 w2");
    expect_row(&f, 0, "ar2", 1, 1, "None");
    fx_close(&f);
}

/* The last node is never processed, even an async collective. */
static void test_rcppm_skips_last_node(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 1}], 'runtime_ns': 3},"
                "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a', 'size': 8}], 'runtime_ns': 10}]}",
            NULL);
    fx_run(&f, RCPPM, NULL);
    tu_expect_order(f.g, f.s, "c ar");
    assert_int_equal(pass_at(&f, 0)->n_nodes, 0);
    fx_close(&f);
}

/* ---- sink_waits_iterative limiting factors ------------------------------- */

/* ar1, w1, ar2, w2 (no memory: every buffer has size 0): w2 is processed
 * first (last node, nothing after it: "None"); w1 meets ar2, an async
 * collective. With sink_waits_iterative_swap_with_collectives it passes ar2
 * and then w2 too (a wait with no dependency on the group). */
static const char *TWO_AR =
    HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
        "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'a1', 'size': 0}], 'runtime_ns': 10},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
        "{'name': 'ar2', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'a2', 'size': 0}], 'runtime_ns': 10},"
        "{'name': 'w2', 'kind': 'wait', 'inputs': ['a2'], "
        " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]}]}";

static void test_sink_async_collective(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, TWO_AR, NULL);
    fx_run(&f, SINK, NULL);
    tu_expect_order(f.g, f.s, "ar1 w1 ar2 w2");
    const commsched_pass_stats *p = pass_at(&f, 0);
    assert_int_equal(p->n_nodes, 2);
    assert_string_equal(commsched_graph_node_name(f.g, p->nodes[0].node),
                        "w2");
    expect_row(&f, 0, "w2", 0, 0, "None");
    expect_row(&f, 0, "w1", 0, 0, "candidate contains_async_collective ar2");
    fx_close(&f);

    fx_open(&f, TWO_AR, NULL);
    fx_run(&f, SINK, "sink_waits_iterative_swap_with_collectives=true");
    tu_expect_order(f.g, f.s, "ar1 ar2 w2 w1");
    expect_row(&f, 0, "w1", 2, 0, "None");
    assert_string_equal(row(&f, 0, "w1")->moves_info, "+ar2+w2");
    fx_close(&f);
}

/* ar (100 bytes), w (last reader of ar's buffer: frees it), c (allocates
 * 100 that z reads later). Peak 100. Sinking w past c keeps ar's 100 alive
 * under c's: "peak memory new:200 vs base:100". x (100, what ar reads) is
 * not freeable, so not counted. */
static void test_sink_peak_memory(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 100}], 'nodes': ["
                "{'name': 'ar', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a', 'size': 100}], 'runtime_ns': 10},"
                "{'name': 'w', 'kind': 'wait', 'inputs': ['a'], "
                " 'outputs': [{'name': 'w_o', 'alias_of': 'a'}]},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 100}], 'runtime_ns': 1},"
                "{'name': 'z', 'kind': 'compute', 'op': 'k', "
                " 'inputs': ['c_o'], 'outputs': [{'name': 'z_o', "
                " 'size': 0}], 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, SINK, NULL);
    tu_expect_order(f.g, f.s, "ar w c z");
    expect_row(&f, 0, "w", 0, 0, "peak memory new:200 vs base:100");
    fx_close(&f);
}

/* Runtime estimations on. ar2, ar1, w1, c, w2 (comm 20 each). w2 is the
 * last node. w1: exposed 20 (ar1 just before it); c, a sync collective
 * (5, comm mult 2), reads w1's alias and joins (group runtime 10).
 * Candidate w2 is exposed 20 (its walk ends at ar2); after the swap it
 * would see the group's 10 more: "candidate is wait". */
static void test_sink_candidate_is_wait(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'ar2', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a2', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 'c', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'async': false, "
                " 'inputs': ['w1_o'], 'outputs': [{'name': 'c_o', "
                " 'size': 1}], 'runtime_ns': 5},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]}]}",
            NULL);
    fx_run(&f, SINK, "sink_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar2 ar1 w1 c w2");
    expect_row(&f, 0, "w1", 0, 1,
               "candidate is wait, exposed_before:20.0 vs exposed_after:30.0");
    fx_close(&f);
}

/* The same group with c a compute node: Inductor adds only sync
 * collectives to the group runtime (torch 2.13 comms.py:1901), so w2's
 * exposure does not grow and it sinks past the group. */
static void test_sink_group_compute_adds_no_runtime(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
                "{'name': 'ar2', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a2', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['x'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'inputs': ['w1_o'], 'outputs': [{'name': 'c_o', "
                " 'size': 1}], 'runtime_ns': 5},"
                "{'name': 'w2', 'kind': 'wait', 'inputs': ['a2'], "
                " 'outputs': [{'name': 'w2_o', 'alias_of': 'a2'}]}]}",
            NULL);
    fx_run(&f, SINK, "sink_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar2 ar1 w2 w1 c");
    fx_close(&f);
}

/* A group holding a sync collective (runtime estimations on, so it joins).
 * ar1 (comm 20), x (20), w1, s (sync, comm 20, reads w1's alias), c (5),
 * u (reads s). w1 exposed 20 - 20 = 0. s joins; its exposure walks c (5)
 * to u: 20 - 5 = 15. Candidate c: fixed exposed_delta = [max(0, 0 - 5) -
 * max(0, 0)] + [max(0, 15 + 5) - max(0, 15)] = 5 > 0, stop. (The seed's
 * unfixed formula gives max(0, 0) + (15 - 20) = -5 and would swap.) */
static void test_sink_candidate_compute_group_collectives(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'in', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['in'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'x', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'x_o', 'size': 1}], 'runtime_ns': 20},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 's', 'kind': 'collective', 'op': 'all_to_all', "
                " 'group': 'g', 'async': false, 'inputs': ['w1_o'], "
                " 'outputs': [{'name': 's_o', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 1}], 'runtime_ns': 5},"
                "{'name': 'u', 'kind': 'compute', 'op': 'k', "
                " 'inputs': ['s_o'], 'outputs': [{'name': 'u_o', "
                " 'size': 1}], 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, SINK, "sink_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar1 x w1 s c u");
    expect_row(&f, 0, "w1", 0, 1,
               "candidate has compute 5.0, group contains collectives, "
               "total_exposed_delta 5.0");
    fx_close(&f);
}

/* PyTorch PR #184558. ar1 (comm 20), w1 (exposed 20), s (sync, comm 2,
 * reads w1's alias), c (5), y (10), u (reads s). s joins with exposure
 * 2 - (5 + 10) = -13. Candidate c: the fixed delta is [max(0, 20 - 5) -
 * max(0, 20)] + [max(0, -13 + 5) - max(0, -13)] = -5 <= 0: swap (s's
 * compute drops to 10: -8; w1's exposure 15). Candidate y: [max(0, 15 - 10)
 * - 15] + [max(0, -8 + 10) - 0] = -8: swap. Then u joins and the list ends:
 * 2 moves. The seed's formula, max(0, 20) + [max(0, -13) - max(0, -8)] =
 * 20 > 0, would have stopped at c with no move. */
static void test_sink_pr184558_exposed_delta(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'in', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['in'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 's', 'kind': 'collective', 'op': 'all_to_all', "
                " 'group': 'g', 'async': false, 'inputs': ['w1_o'], "
                " 'outputs': [{'name': 's_o', 'size': 8}], 'runtime_ns': 1},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 1}], 'runtime_ns': 5},"
                "{'name': 'y', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'y_o', 'size': 1}], 'runtime_ns': 10},"
                "{'name': 'u', 'kind': 'compute', 'op': 'k', "
                " 'inputs': ['s_o'], 'outputs': [{'name': 'u_o', "
                " 'size': 1}], 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, SINK, "sink_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar1 c y w1 s u");
    expect_row(&f, 0, "w1", 2, 2, "None");
    assert_string_equal(row(&f, 0, "w1")->moves_info, "+c+y");
    assert_true(row(&f, 0, "w1")->initial_exposed == 20.0);
    assert_true(row(&f, 0, "w1")->final_exposed == 5.0);
    fx_close(&f);
}

/* Runtime estimations and swap_with_collectives on, unsafe reorder off:
 * w1's group holds the sync s (it reads w1's alias); the async ar3 after it
 * has no dependency on the group, both hold collectives and ar3 cannot
 * join: "collective ordering". With unsafe reorder on (the default) ar3
 * swaps before the group (peak 16 -> 24: budget 1.0), and then w3 stops
 * the walk: its exposure, 20 (s is sync: the walk resets there and passes
 * w1 to reach ar3), would grow by the group's runtime 2. */
static const char *COLL_ORDER =
    HDR "'inputs': [{'name': 'in', 'size': 8}], 'nodes': ["
        "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['in'], "
        " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
        "{'name': 's', 'kind': 'collective', 'op': 'all_to_all', "
        " 'group': 'g', 'async': false, 'inputs': ['w1_o'], "
        " 'outputs': [{'name': 's_o', 'size': 8}], 'runtime_ns': 1},"
        "{'name': 'ar3', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['in'], "
        " 'outputs': [{'name': 'a3', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'w3', 'kind': 'wait', 'inputs': ['a3'], "
        " 'outputs': [{'name': 'w3_o', 'alias_of': 'a3'}]}]}";

static void test_sink_collective_ordering(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, COLL_ORDER, NULL);
    fx_run(&f, SINK,
           "sink_iterative_use_runtime_estimations=true,"
           "sink_waits_iterative_swap_with_collectives=true,"
           "sink_waits_iterative_unsafe_collectives_reorder=false");
    tu_expect_order(f.g, f.s, "ar1 w1 s ar3 w3");
    expect_row(&f, 0, "w1", 0, 1, "collective ordering");
    assert_string_equal(row(&f, 0, "w1")->limiting_factor,
                        "collective ordering\n with candidate:ar3");
    fx_close(&f);

    fx_open(&f, COLL_ORDER, NULL);
    fx_run(&f, SINK,
           "sink_iterative_use_runtime_estimations=true,"
           "sink_waits_iterative_swap_with_collectives=true,"
           "sink_iterative_peak_memory_budget=1.0");
    tu_expect_order(f.g, f.s, "ar1 ar3 w1 s w3");
    expect_row(&f, 0, "w1", 1, 1,
               "candidate is wait, exposed_before:20.0 vs exposed_after:22.0");
    fx_close(&f);
}

/* The seed stops a sinking wait only at async collectives: w1 passes the
 * sync s (no dependency between them), then meets z, its consumer, which
 * joins; the list ends. */
static void test_sink_passes_sync_collective(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'in', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['in'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 's', 'kind': 'collective', 'op': 'all_to_all', "
                " 'group': 'g', 'async': false, 'inputs': ['in'], "
                " 'outputs': [{'name': 's_o', 'size': 8}], 'runtime_ns': 1},"
                "{'name': 'z', 'kind': 'compute', 'op': 'k', "
                " 'inputs': ['w1_o', 's_o'], 'outputs': [{'name': 'z_o', "
                " 'size': 1}], 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, SINK, NULL);
    tu_expect_order(f.g, f.s, "ar1 s w1 z");
    expect_row(&f, 0, "w1", 1, 1, "None");
    fx_close(&f);
}

/* Runtime estimations on: ar1 (comm 20) then 100 of compute before w1:
 * exposed -80 < -10 stops at once. */
static void test_sink_unexposed(void **state)
{
    (void)state;
    fx f;
    fx_open(&f,
            HDR "'inputs': [{'name': 'in', 'size': 8}], 'nodes': ["
                "{'name': 'ar1', 'kind': 'collective', 'op': 'all_reduce', "
                " 'group': 'g', 'inputs': ['in'], "
                " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
                "{'name': 'c', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'c_o', 'size': 1}], 'runtime_ns': 100},"
                "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
                " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
                "{'name': 'z', 'kind': 'compute', 'op': 'k', "
                " 'outputs': [{'name': 'z_o', 'size': 1}], "
                " 'runtime_ns': 1}]}",
            NULL);
    fx_run(&f, SINK, "sink_iterative_use_runtime_estimations=true");
    tu_expect_order(f.g, f.s, "ar1 c w1 z");
    expect_row(&f, 0, "w1", 0, 0, "unexposed by runtime estimations");
    assert_true(row(&f, 0, "w1")->initial_exposed == -80.0);
    fx_close(&f);
}

/* ---- fake edges --------------------------------------------------------- */

/* Four collectives: decide_global_ordering_of_comms adds exactly three fake
 * edges, each collective after the previous one. */
static const char *FOUR =
    HDR "'inputs': [{'name': 'x', 'size': 8}], 'nodes': ["
        "{'name': 'c0', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'a0', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'c1', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'a1', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'k', 'kind': 'compute', 'op': 'k', "
        " 'outputs': [{'name': 'k_o', 'size': 1}], 'runtime_ns': 1},"
        "{'name': 'c2', 'kind': 'collective', 'op': 'all_to_all', "
        " 'group': 'g', 'async': false, 'inputs': ['x'], "
        " 'outputs': [{'name': 'a2', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'c3', 'kind': 'collective', 'op': 'all_reduce', "
        " 'group': 'g', 'inputs': ['x'], "
        " 'outputs': [{'name': 'a3', 'size': 8}], 'runtime_ns': 10},"
        "{'name': 'w3', 'kind': 'wait', 'inputs': ['a3'], "
        " 'outputs': [{'name': 'w3_o', 'alias_of': 'a3'}]},"
        "{'name': 'w1', 'kind': 'wait', 'inputs': ['a1'], "
        " 'outputs': [{'name': 'w1_o', 'alias_of': 'a1'}]},"
        "{'name': 'w0', 'kind': 'wait', 'inputs': ['a0'], "
        " 'outputs': [{'name': 'w0_o', 'alias_of': 'a0'}]}]}";

static void expect_fake_edges(const fx *f, const char *want)
{
    char got[512];
    size_t len = 0;
    got[0] = '\0';
    const commsched_graph *g = f->g;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++) {
            int w = snprintf(got + len, sizeof got - len, "%s%s>%s",
                             len ? " " : "",
                             g->nodes[g->after_fake.idx[e]].name,
                             g->nodes[v].name);
            assert_true(w > 0 && (size_t)w < sizeof got - len);
            len += (size_t)w;
        }
    if (strcmp(got, want) != 0)
        fail_msg("fake edges\n  got:  %s\n  want: %s", got, want);
}

/* cs_pyfloat is Python's repr of a float (the iterative passes' texts):
 * the values Python prints, and on random bit patterns and ns-scale
 * times the two properties that define it -- the text reads back as x,
 * and one significant digit fewer ("%.*e", correctly rounded) does not. */
static void test_pyfloat_is_python_repr(void **state)
{
    (void)state;
    static const struct {
        double x;
        const char *repr;
    } known[] = {
        {0.1, "0.1"},
        {1e-7, "1e-07"},
        {1e16, "1e+16"},
        {123456789.0, "123456789.0"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1e22, "1e+22"},
        {-0.0, "-0.0"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {1234.5, "1234.5"},
        {1e-5, "1e-05"},
        {1e15, "1000000000000000.0"},
        {0.0025, "0.0025"},
        {0.0, "0.0"},
        {0.00012345, "0.00012345"},
        {-2.5e-300, "-2.5e-300"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        assert_string_equal(cs_pyfloat(buf, known[i].x), known[i].repr);
    uint64_t r = 88172645463325252u;
    for (int i = 0; i < 200000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        double x;
        if (i % 2) {
            memcpy(&x, &r, sizeof x);
            if (x != x || x - x != 0)
                continue; /* NaN and infinities have their own words */
        } else {
            x = (double)(r >> 11) * 0x1p-53 * 1e9;
        }
        const char *t = cs_pyfloat(buf, x);
        assert_true(strtod(t, NULL) == x);
        int digits = 0, lead = 1;
        for (const char *c = t; *c && *c != 'e'; c++)
            if (*c >= '0' && *c <= '9') {
                lead &= *c == '0';
                digits += !lead;
            }
        /* trailing zeros (of "123.0", "1000.0") are not significant */
        for (const char *c = strchr(t, 'e') ? strchr(t, 'e') : t + strlen(t);
             c > t && (c[-1] == '0' || c[-1] == '.') && digits > 1; c--)
            digits -= c[-1] == '0';
        if (digits > 1) {
            char e[40];
            snprintf(e, sizeof e, "%.*e", digits - 2, x);
            if (strtod(e, NULL) == x)
                fail_msg("%s for %a: %s is shorter", t, x, e);
        }
    }
}

static void test_decide_global_ordering(void **state)
{
    (void)state;
    fx f;
    commsched_error err = {0};
    fx_open(&f, FOUR, NULL);
    fx_run(&f, DECIDE, NULL);
    assert_int_equal(pass_at(&f, 0)->fake_edges_added, 3);
    expect_fake_edges(&f, "c0>c1 c1>c2 c2>c3");
    tu_expect_order(f.g, f.s, "c0 c1 k c2 c3 w3 w1 w0");
    assert_int_equal(commsched_schedule_check(f.s, 1, &err), COMMSCHED_OK);
    /* Running it again adds nothing: the chain is there. */
    fx_run(&f, DECIDE, NULL);
    assert_int_equal(pass_at(&f, 0)->fake_edges_added, 0);
    expect_fake_edges(&f, "c0>c1 c1>c2 c2>c3");
    /* The heap scheduler waits for them: c1..c3 become ready only once
     * their predecessor is scheduled; raise_comms puts the chain first. */
    fx_run(&f, "raise_comms", NULL);
    tu_expect_order(f.g, f.s, "c0 c1 c2 c3 k w3 w1 w0");
    assert_int_equal(commsched_schedule_check(f.s, 1, &err), COMMSCHED_OK);
    fx_close(&f);
}

/* The iterative passes ignore fake edges: after decide_global_ordering,
 * RCPPM (unsafe reorder on) reverses S5's collectives, violating both
 * chain edges; commsched_graph_drop_violated_fake_edges removes exactly
 * those, so the output loads again. */
static void test_drop_violated_fake_edges(void **state)
{
    (void)state;
    fx f;
    commsched_error err = {0};
    fx_open(&f, S5, NULL);
    fx_run(&f, DECIDE "," RCPPM, NULL);
    tu_expect_order(f.g, f.s, "AR2 AR1 AR0 W2 W1 W0");
    expect_fake_edges(&f, "AR0>AR1 AR1>AR2");
    assert_int_equal(commsched_schedule_check(f.s, 1, &err), COMMSCHED_EORDER);
    uint32_t dropped = 0;
    const char **names = NULL;
    assert_int_equal(commsched_graph_drop_violated_fake_edges(
                         f.g, f.s, &dropped, &names, &err),
                     COMMSCHED_OK);
    assert_int_equal(dropped, 2);
    assert_string_equal(names[0], "AR0");
    assert_string_equal(names[1], "AR1");
    assert_string_equal(names[2], "AR1");
    assert_string_equal(names[3], "AR2");
    commsched_free(names);
    expect_fake_edges(&f, "");
    commsched_error_clear(&err);
    assert_int_equal(commsched_schedule_check(f.s, 1, &err), COMMSCHED_OK);
    fx_close(&f);

    /* A respected fake edge stays; only the violated one goes. */
    fx_open(&f,
            HDR "'nodes': ["
                "{'name': 'a', 'kind': 'compute', 'runtime_ns': 1},"
                "{'name': 'b', 'kind': 'compute', 'after_fake': ['a'], "
                " 'runtime_ns': 1},"
                "{'name': 'c', 'kind': 'compute', 'after_fake': ['a'], "
                " 'runtime_ns': 1}]}",
            (const uint32_t[]){2, 0, 1});
    dropped = 9;
    assert_int_equal(commsched_graph_drop_violated_fake_edges(
                         f.g, f.s, &dropped, NULL, &err),
                     COMMSCHED_OK);
    assert_int_equal(dropped, 1);
    expect_fake_edges(&f, "a>b");
    fx_close(&f);
}

/* ---- properties on random graphs ------------------------------------------ */

static uint32_t collective_sequence(const fx *f, uint32_t *out)
{
    uint32_t n = 0;
    for (uint32_t v = commsched_schedule_first(f->s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(f->s, v))
        if (commsched_graph_node_kind(f->g, v) == COMMSCHED_NODE_COLLECTIVE)
            out[n++] = v;
    return n;
}

static void open_random(fx *f, uint64_t seed, uint32_t n)
{
    memset(f, 0, sizeof *f);
    tu_graph_opts o = tu_random_opts(n);
    f->g = tu_random_graph(seed, &o);
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(f->g, NULL, &f->s, &err),
                     COMMSCHED_OK);
    f->rt = calloc(commsched_graph_node_count(f->g), sizeof *f->rt);
    assert_non_null(f->rt);
    commsched_cost_options co;
    commsched_cost_options_init(&co);
    assert_int_equal(commsched_cost_graph(f->g, &co, f->rt, NULL, &err),
                     COMMSCHED_OK);
}

/* Each iterative pass, at several budgets and with runtime estimations off
 * and on: the order stays valid, memory tracking equals a recompute after
 * every move (COMMSCHED_PIPELINE_VERIFY fails the run otherwise), and
 * peak_after <= peak_before x (1 + budget). */
static void test_random_iterative_properties(void **state)
{
    (void)state;
    static const char *const budgets[] = {"0", "0.2", "1.0"};
    char knobs[512];
    for (uint64_t seed = 1; seed <= 40; seed++)
        for (size_t b = 0; b < 3; b++)
            for (int rte = 0; rte < 2; rte++) {
                snprintf(knobs, sizeof knobs,
                         "reorder_iterative_peak_memory_budget=%s,"
                         "sink_iterative_peak_memory_budget=%s,"
                         "reorder_iterative_use_runtime_estimations=%s,"
                         "sink_iterative_use_runtime_estimations=%s",
                         budgets[b], budgets[b], rte ? "true" : "false",
                         rte ? "true" : "false");
                fx f;
                open_random(&f, seed, 10 + (uint32_t)(seed % 30));
                fx_run(&f,
                       RCPPM "," SINK "," DECIDE "," SINK "," RCPPM
                             ",sink_waits",
                       knobs);
                double budget = strtod(budgets[b], NULL);
                for (size_t i = 0; i < commsched_run_pass_count(f.run); i++) {
                    const commsched_pass_stats *p = pass_at(&f, i);
                    if (p->kind == COMMSCHED_STATS_NONE)
                        continue;
                    if ((double)p->peak_after >
                        (double)p->peak_before * (1.0 + budget))
                        fail_msg("seed %llu budget %s pass %s: peak %lld -> "
                                 "%lld",
                                 (unsigned long long)seed, budgets[b],
                                 p->pass, (long long)p->peak_before,
                                 (long long)p->peak_after);
                }
                fx_close(&f);
            }
}

/* The heap passes keep every edge, fake ones included, and with unsafe
 * reordering off in both iterative passes the collectives keep their
 * relative order (reference §6 property 2). */
static void test_random_order_properties(void **state)
{
    (void)state;
    static const char *const heap[] = {"raise_comms", "sink_waits",
                                       "reorder_compute_for_overlap",
                                       DECIDE ",reorder_compute_for_overlap"};
    commsched_error err = {0};
    for (uint64_t seed = 100; seed < 140; seed++) {
        for (size_t h = 0; h < 4; h++) {
            fx f;
            open_random(&f, seed, 8 + (uint32_t)(seed % 40));
            fx_run(&f, heap[h], NULL);
            if (commsched_schedule_check(f.s, 1, &err) != COMMSCHED_OK)
                fail_msg("seed %llu %s: %s", (unsigned long long)seed,
                         heap[h], err.text);
            fx_close(&f);
        }
        fx f;
        open_random(&f, seed, 8 + (uint32_t)(seed % 40));
        uint32_t n = commsched_graph_node_count(f.g);
        uint32_t *before = calloc(n, sizeof *before);
        uint32_t *after = calloc(n, sizeof *after);
        assert_non_null(before);
        assert_non_null(after);
        uint32_t nb = collective_sequence(&f, before);
        fx_run(&f,
               DECIDE "," RCPPM "," SINK "," RCPPM "," SINK
                      ",reorder_compute_for_overlap",
               "reorder_iterative_unsafe_collectives_reorder=false,"
               "sink_waits_iterative_unsafe_collectives_reorder=false");
        uint32_t na = collective_sequence(&f, after);
        assert_int_equal(na, nb);
        if (memcmp(before, after, nb * sizeof *before) != 0)
            fail_msg("seed %llu: collective order changed",
                     (unsigned long long)seed);
        free(before);
        free(after);
        fx_close(&f);
    }
}

/* "Did you mean" (commsched_name_suggest): typos, swaps, case and a
 * prefix find the name; anything further gets no guess; a struct table is
 * read through its stride. */
static void test_name_suggest(void **state)
{
    (void)state;
    static const char *const cmds[] = {"info", "optimize", "simulate",
                                       "generate", NULL, "report"};
    size_t n = sizeof cmds / sizeof cmds[0], st = sizeof cmds[0];
    assert_int_equal(commsched_name_suggest("optimse", 7, cmds, n, st), 1);
    assert_int_equal(commsched_name_suggest("simluate", 8, cmds, n, st), 2);
    assert_int_equal(commsched_name_suggest("REPORT", 6, cmds, n, st), 5);
    assert_int_equal(commsched_name_suggest("gen", 3, cmds, n, st), 3);
    assert_int_equal(commsched_name_suggest("inof", 4, cmds, n, st), 0);
    /* len bounds the word: "reprotXYZ" read as "reprot". */
    assert_int_equal(commsched_name_suggest("reprotXYZ", 6, cmds, n, st), 5);
    assert_int_equal(commsched_name_suggest("xyzzy", 5, cmds, n, st),
                     SIZE_MAX);
    assert_int_equal(commsched_name_suggest("oxtimxzx", 8, cmds, n, st),
                     SIZE_MAX); /* three edits in eight letters; two pass */
    assert_int_equal(commsched_name_suggest("optmzie", 7, cmds, n, st), 1);
    assert_int_equal(commsched_name_suggest("", 0, cmds, n, st), SIZE_MAX);
    assert_int_equal(commsched_name_suggest(NULL, 3, cmds, n, st), SIZE_MAX);
    char long_word[100];
    memset(long_word, 'a', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = '\0';
    assert_int_equal(commsched_name_suggest(long_word, 99, cmds, n, st),
                     SIZE_MAX);
    struct row {
        int id;
        const char *name;
    } rows[] = {{1, "summary"}, {2, "rows"}};
    assert_int_equal(commsched_name_suggest("sumary", 6, &rows[0].name, 2,
                                            sizeof rows[0]),
                     0);
    assert_int_equal(commsched_name_suggest("rosw", 4, &rows[0].name, 2,
                                            sizeof rows[0]),
                     1);
}

/* One message for a misspelt pass, from the check and from the runner. */
static void test_pipeline_check(void **state)
{
    (void)state;
    commsched_error err = {0};
    assert_int_equal(commsched_pipeline_check(NULL, &err), COMMSCHED_OK);
    assert_int_equal(commsched_pipeline_check("none,,overlap", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_pipeline_check("sink_waits,overlapp", &err),
                     COMMSCHED_EINVAL);
    assert_string_equal(err.text,
                        "unknown pass \"overlapp\" (did you mean "
                        "\"overlap\"?)");
    commsched_error_clear(&err);
    assert_int_equal(commsched_pipeline_check("nope", &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "unknown pass \"nope\" (known: "));
    assert_non_null(strstr(err.text, "sink_waits_iterative"));
    commsched_knobs *k = NULL;
    commsched_error_clear(&err);
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    assert_int_equal(commsched_knobs_set(k, "overlap_peak_budgt", "1", &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "did you mean \"overlap_peak_budget\""));
    commsched_knobs_destroy(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s1_sink_waits),
        cmocka_unit_test(test_s2_raise_comms),
        cmocka_unit_test(test_s3_sink_and_raise),
        cmocka_unit_test(test_s4_reorder_compute_for_overlap),
        cmocka_unit_test(test_null_knobs_are_defaults),
        cmocka_unit_test(test_s5_collective_order),
        cmocka_unit_test(test_s6_wait_dependency),
        cmocka_unit_test(test_s7_peak_memory_noop),
        cmocka_unit_test(test_rcppm_data_dependency_gemm),
        cmocka_unit_test(test_rcppm_peak_memory),
        cmocka_unit_test(test_order_only_leaves_out_overlap_info),
        cmocka_unit_test(test_rcppm_unexposed),
        cmocka_unit_test(test_rcppm_candidate_compute_group_waits),
        cmocka_unit_test(test_rcppm_candidate_collective_group_runtime),
        cmocka_unit_test(test_rcppm_skips_last_node),
        cmocka_unit_test(test_sink_async_collective),
        cmocka_unit_test(test_sink_peak_memory),
        cmocka_unit_test(test_sink_candidate_is_wait),
        cmocka_unit_test(test_sink_group_compute_adds_no_runtime),
        cmocka_unit_test(test_sink_candidate_compute_group_collectives),
        cmocka_unit_test(test_sink_pr184558_exposed_delta),
        cmocka_unit_test(test_sink_collective_ordering),
        cmocka_unit_test(test_sink_passes_sync_collective),
        cmocka_unit_test(test_sink_unexposed),
        cmocka_unit_test(test_decide_global_ordering),
        cmocka_unit_test(test_pyfloat_is_python_repr),
        cmocka_unit_test(test_drop_violated_fake_edges),
        cmocka_unit_test(test_random_iterative_properties),
        cmocka_unit_test(test_random_order_properties),
        cmocka_unit_test(test_name_suggest),
        cmocka_unit_test(test_pipeline_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
