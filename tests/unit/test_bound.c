/* The stream bound (src/model/bound.c, docs/REPORTS.md "Lower bound"):
 * no order the simulator accepts finishes before it, and it is the same
 * for every order. Small random graphs: EVERY topological order of the
 * data and `after` edges is simulated (fake edges may be broken, as
 * optimize may drop them), so the bound is checked against the optimum
 * itself; larger ones: many random orders. Both stream modes, runtimes
 * with zeros and ties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/simulate.h"
#include "graph_internal.h"
#include "testutil.h"

typedef struct enum_state {
    const commsched_graph *g;
    commsched_sim *sim;
    const double *rt;
    commsched_sim_options so;
    uint32_t *order, *indeg;
    uint32_t n, k;
    unsigned long runs, limit;
    double bound, best;
    int have_bound;
    uint64_t seed;
} enum_state;

/* One complete order: simulate, check. */
static void check_order(enum_state *E)
{
    commsched_error err = {0};
    if (commsched_sim_run(E->sim, E->order, E->rt, &E->so, &err) !=
        COMMSCHED_OK)
        fail_msg("simulate: %s", err.text);
    const commsched_sim_totals *t = commsched_sim_get_totals(E->sim);
    if (!E->have_bound) {
        E->bound = t->bound_stream_ns;
        E->have_bound = 1;
    } else if (t->bound_stream_ns != E->bound) {
        fail_msg("the stream bound depends on the order: %.17g vs %.17g",
                 t->bound_stream_ns, E->bound);
    }
    if (t->bound_stream_ns > t->makespan_ns)
    {
        char *json = tu_graph_to_json(E->g, E->order);
        fprintf(stderr, "graph (seed %llu, streams %d, order as listed):\n%s\n",
                (unsigned long long)E->seed, (int)E->so.comm_streams, json);
        free(json);
        fail_msg("stream bound %.17g above the makespan %.17g of an order",
                 t->bound_stream_ns, t->makespan_ns);
    }
    if (t->lower_bound_ns > t->makespan_ns)
        fail_msg("lower bound %.17g above the makespan %.17g",
                 t->lower_bound_ns, t->makespan_ns);
    /* It dominates the load terms (the one-machine bound with the whole
     * stream as the subset). */
    if (t->bound_stream_ns < t->bound_compute_ns ||
        t->bound_stream_ns < t->bound_comm_ns)
        fail_msg("stream bound %.17g below a stream's load (%.17g, %.17g)",
                 t->bound_stream_ns, t->bound_compute_ns, t->bound_comm_ns);
    if (t->makespan_ns < E->best)
        E->best = t->makespan_ns;
    E->runs++;
}

/* Every topological order of deps (data + after), depth first. */
static void enumerate(enum_state *E)
{
    if (E->runs >= E->limit)
        return;
    if (E->k == E->n) {
        check_order(E);
        return;
    }
    const commsched_graph *g = E->g;
    for (uint32_t v = 0; v < E->n; v++) {
        if (E->indeg[v] != 0)
            continue;
        E->indeg[v] = UINT32_MAX; /* placed */
        for (uint32_t e = g->users.off[v]; e < g->users.off[v + 1]; e++)
            E->indeg[g->users.idx[e]]--;
        E->order[E->k++] = v;
        enumerate(E);
        E->k--;
        for (uint32_t e = g->users.off[v]; e < g->users.off[v + 1]; e++)
            E->indeg[g->users.idx[e]]++;
        E->indeg[v] = 0;
    }
}

static double *runtimes(const commsched_graph *g, uint64_t seed)
{
    uint32_t n = g->n_nodes;
    double *rt = malloc((n ? n : 1) * sizeof *rt);
    assert_non_null(rt);
    tu_rng r;
    tu_rng_seed(&r, seed);
    for (uint32_t v = 0; v < n; v++)
        rt[v] = tu_rng_chance(&r, 10) ? 0
                                      : (double)(1 + tu_rng_below(&r, 8)) *
                                            (g->nodes[v].kind ==
                                                     COMMSCHED_NODE_COLLECTIVE
                                                 ? 3.0
                                                 : 1.0);
    return rt;
}

static void test_bound_every_order_of_small_graphs(void **state)
{
    (void)state;
    unsigned long total = 0, tight = 0, graphs = 0;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        tu_graph_opts go = tu_random_opts(5 + (uint32_t)(seed % 4));
        go.no_in_place = 1; /* every order must load and simulate */
        commsched_graph *g = tu_random_graph(seed, &go);
        uint32_t n = g->n_nodes;
        double *rt = runtimes(g, seed * 7919);
        enum_state E = {0};
        E.g = g;
        E.rt = rt;
        E.n = n;
        E.seed = seed;
        E.limit = 20000;
        E.order = malloc((n ? n : 1) * sizeof *E.order);
        E.indeg = malloc((n ? n : 1) * sizeof *E.indeg);
        assert_non_null(E.order);
        assert_non_null(E.indeg);
        commsched_error err = {0};
        assert_int_equal(commsched_sim_create(g, &E.sim, &err), COMMSCHED_OK);
        for (int mode = 0; mode < 2; mode++) {
            commsched_sim_options_init(&E.so);
            E.so.flags = COMMSCHED_SIM_BOUND;
            E.so.comm_streams = mode ? COMMSCHED_STREAMS_SINGLE
                                     : COMMSCHED_STREAMS_PER_GROUP;
            for (uint32_t v = 0; v < n; v++)
                E.indeg[v] = CS_ROW_LEN(g->deps, v);
            E.k = 0;
            E.runs = 0;
            E.have_bound = 0;
            E.best = 1e300;
            enumerate(&E);
            assert_true(E.runs > 0);
            total += E.runs;
            graphs++;
            if (E.best == E.bound)
                tight++;
        }
        commsched_sim_destroy(E.sim);
        free(E.order);
        free(E.indeg);
        free(rt);
        commsched_graph_destroy(g);
    }
    print_message("stream bound: %lu orders of %lu graph/mode pairs; "
                  "optimum = bound on %lu\n",
                  total, graphs, tight);
}

static void test_bound_random_orders_of_larger_graphs(void **state)
{
    (void)state;
    for (uint64_t seed = 1000; seed < 1040; seed++) {
        tu_graph_opts go = tu_random_opts(20 + (uint32_t)(seed * 13 % 180));
        commsched_graph *g = tu_random_graph(seed, &go);
        uint32_t n = g->n_nodes;
        double *rt = runtimes(g, seed);
        enum_state E = {0};
        E.g = g;
        E.rt = rt;
        E.n = n;
        E.best = 1e300;
        E.order = malloc((n ? n : 1) * sizeof *E.order);
        assert_non_null(E.order);
        commsched_error err = {0};
        assert_int_equal(commsched_sim_create(g, &E.sim, &err), COMMSCHED_OK);
        for (int trial = 0; trial < 60; trial++) {
            commsched_sim_options_init(&E.so);
            E.so.flags |= COMMSCHED_SIM_BOUND;
            if (trial == 30) /* the other stream mode: its own bound */
                E.have_bound = 0;
            E.so.comm_streams = trial >= 30 ? COMMSCHED_STREAMS_SINGLE
                                            : COMMSCHED_STREAMS_PER_GROUP;
            tu_random_topo_order(g, seed * 101 + (uint64_t)trial, trial & 1,
                                 E.order);
            check_order(&E);
        }
        commsched_sim_destroy(E.sim);
        free(E.order);
        free(rt);
        commsched_graph_destroy(g);
    }
}

/* The bound sees what no order can hide: the all-gather before the first
 * compute and the reduce-scatter after the last (an FSDP step). */
static void test_bound_counts_unhideable_comm(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(
        "{\"format\":\"commsched-graph\",\"version\":1,"
        "\"groups\":[{\"name\":\"dp\",\"size\":8}],"
        "\"inputs\":[{\"name\":\"w\",\"size\":8}],"
        "\"outputs\":[\"g2\"],"
        "\"nodes\":["
        "{\"name\":\"ag\",\"kind\":\"collective\",\"op\":\"all_gather\","
        "\"group\":\"dp\",\"inputs\":[\"w\"],\"runtime_ns\":10,"
        "\"outputs\":[{\"name\":\"wf\",\"size\":64}]},"
        "{\"name\":\"agw\",\"kind\":\"wait\",\"inputs\":[\"wf\"],"
        "\"outputs\":[{\"name\":\"wf2\",\"alias_of\":\"wf\"}]},"
        "{\"name\":\"c1\",\"kind\":\"compute\",\"inputs\":[\"wf2\"],"
        "\"runtime_ns\":50,\"outputs\":[{\"name\":\"a\",\"size\":8}]},"
        "{\"name\":\"c1b\",\"kind\":\"compute\",\"inputs\":[\"wf2\"],"
        "\"runtime_ns\":50,\"outputs\":[{\"name\":\"b\",\"size\":8}]},"
        "{\"name\":\"c2\",\"kind\":\"compute\",\"inputs\":[\"a\",\"b\"],"
        "\"runtime_ns\":50,\"outputs\":[{\"name\":\"g\",\"size\":64}]},"
        "{\"name\":\"rs\",\"kind\":\"collective\","
        "\"op\":\"reduce_scatter\",\"group\":\"dp\",\"inputs\":[\"g\"],"
        "\"runtime_ns\":20,\"outputs\":[{\"name\":\"g1\",\"size\":8}]},"
        "{\"name\":\"rsw\",\"kind\":\"wait\",\"inputs\":[\"g1\"],"
        "\"outputs\":[{\"name\":\"g2\",\"alias_of\":\"g1\"}]}]}");
    double rt[7] = {10, 0, 50, 50, 50, 20, 0};
    commsched_sim *sim = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_BOUND;
    assert_int_equal(commsched_sim_run(sim, NULL, rt, &so, &err),
                     COMMSCHED_OK);
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    /* Load 150, critical path 10 + 50 + 50 + 20 = 130; every order idles
     * the compute stream for the all-gather and the comm stream for the
     * reduce-scatter after the last compute: 10 + 150 + 20. */
    assert_true(t->bound_compute_ns == 150 && t->bound_path_ns == 130);
    assert_true(t->bound_stream_ns == 180);
    assert_true(t->lower_bound_ns == 180 && t->makespan_ns == 180);
    assert_int_equal(t->bound_stream, COMMSCHED_STREAM_COMPUTE);
    /* Without the flag the term is not computed. */
    so.flags &= ~COMMSCHED_SIM_BOUND;
    assert_int_equal(commsched_sim_run(sim, NULL, rt, &so, &err),
                     COMMSCHED_OK);
    t = commsched_sim_get_totals(sim);
    assert_true(t->bound_stream_ns == 0 && t->lower_bound_ns == 150);
    assert_int_equal(t->bound_stream, COMMSCHED_NONE);
    commsched_sim_destroy(sim);
    commsched_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_counts_unhideable_comm),
        cmocka_unit_test(test_bound_every_order_of_small_graphs),
        cmocka_unit_test(test_bound_random_orders_of_larger_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
