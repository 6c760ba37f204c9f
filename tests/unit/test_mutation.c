/* commsched unit tests — in-place writes: the write-after-read and
 * read-after-write edges derived at load (src/graph/mutation.c), the errors
 * for file orders that race, the race checker (src/graph/races.c), and the
 * pipeline refusing an input order that races. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "testutil.h"

#define HDR                                                                    \
    "{\"format\": \"commsched-graph\", \"version\": 1, "                       \
    "\"groups\": [{\"name\": \"dp\", \"size\": 8}], "                          \
    "\"inputs\": [{\"name\": \"x\", \"size\": 64}], "

/* x is produced by p; r1 reads x, then ar all-reduces x in place, its wait
 * hands the result on as y; r2 reads x by its own name after the wait. */
static const char *const INPLACE =
    HDR "\"nodes\": ["
        "{\"name\": \"p\", \"kind\": \"compute\", \"inputs\": [\"x\"], "
        " \"outputs\": [{\"name\": \"g\", \"size\": 64}]},"
        "{\"name\": \"r1\", \"kind\": \"compute\", \"inputs\": [\"g\"], "
        " \"outputs\": [{\"name\": \"n1\", \"size\": 4}]},"
        "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\", "
        " \"group\": \"dp\", \"inputs\": [\"g\"], "
        " \"outputs\": [{\"name\": \"ar_out\", \"alias_of\": \"g\"}]},"
        "{\"name\": \"other\", \"kind\": \"compute\", "
        " \"outputs\": [{\"name\": \"o\", \"size\": 4}]},"
        "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"ar_out\"], "
        " \"outputs\": [{\"name\": \"y\", \"alias_of\": \"ar_out\"}]},"
        "{\"name\": \"r2\", \"kind\": \"compute\", \"inputs\": [\"g\", \"o\"], "
        " \"outputs\": [{\"name\": \"n2\", \"size\": 4}]}]}";

static uint32_t derived(const commsched_graph *g, const char *node,
                        const uint32_t **d)
{
    return commsched_graph_node_derived_deps(g, tu_node(g, node), d);
}

static void test_mutation_edges_derived(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(INPLACE);
    const uint32_t *d;
    /* write-after-read: r1 (reads the old g) before ar */
    assert_int_equal(derived(g, "ar", &d), 1);
    assert_int_equal(d[0], tu_node(g, "r1"));
    /* read-after-write: r2 reads g by its own name, after the wait */
    assert_int_equal(derived(g, "r2", &d), 1);
    assert_int_equal(d[0], tu_node(g, "w"));
    /* nothing else; the wait reads through ar's output (a data edge) */
    uint32_t total = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        total += commsched_graph_node_derived_deps(g, v, &d);
    assert_int_equal(total, 2);
    /* they are real dependencies: an order that moves r1 after ar, or r2
     * before the wait, is rejected by the schedule check */
    uint32_t ar = tu_node(g, "ar"), found = 0;
    for (uint32_t k = g->deps.off[ar]; k < g->deps.off[ar + 1]; k++)
        found += g->deps.idx[k] == tu_node(g, "r1");
    assert_int_equal(found, 1);
    uint32_t order[6] = {tu_node(g, "p"),  tu_node(g, "ar"),
                         tu_node(g, "r1"), tu_node(g, "other"),
                         tu_node(g, "w"),  tu_node(g, "r2")};
    commsched_schedule *s = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_schedule_check(s, 0, &err), COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "\"r1\""));
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

static void expect_load_error(const char *json, const char *path,
                              const char *a, const char *b)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_graph_load_string(json, 0, &g, &err),
                     COMMSCHED_EGRAPH);
    assert_null(g);
    assert_string_equal(err.path, path);
    if (!strstr(err.text, a) || !strstr(err.text, b))
        fail_msg("expected %s and %s in: %s", a, b, err.text);
}

static void test_mutation_racing_file_orders_rejected(void **state)
{
    (void)state;
    /* a reader by its own name between the in-place write and its wait */
    expect_load_error(
        HDR "\"nodes\": ["
            "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
            " \"all_reduce\", \"group\": \"dp\", \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"a\", \"alias_of\": \"x\"}]},"
            "{\"name\": \"mid\", \"kind\": \"compute\", \"inputs\": [\"x\"]},"
            "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"a\"], "
            " \"outputs\": [{\"name\": \"y\", \"alias_of\": \"a\"}]}]}",
        "nodes[1].inputs[0]", "\"mid\"", "\"ar\"");
    /* ... or after it when the write is never waited for */
    expect_load_error(
        HDR "\"nodes\": ["
            "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
            " \"all_reduce\", \"group\": \"dp\", \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"a\", \"alias_of\": \"x\"}]},"
            "{\"name\": \"late\", \"kind\": \"compute\", \"inputs\": [\"x\"]}"
            "]}",
        "nodes[1].inputs[0]", "\"late\"", "no wait");
    /* an async collective still reading x when x is written in place */
    expect_load_error(
        HDR "\"nodes\": ["
            "{\"name\": \"ag\", \"kind\": \"collective\", \"op\": "
            " \"all_gather\", \"group\": \"dp\", \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"b\", \"size\": 512}]},"
            "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
            " \"all_reduce\", \"group\": \"dp\", \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"a\", \"alias_of\": \"x\"}]},"
            "{\"name\": \"wg\", \"kind\": \"wait\", \"inputs\": [\"b\"]},"
            "{\"name\": \"wa\", \"kind\": \"wait\", \"inputs\": [\"a\"]}]}",
        "nodes[1]", "\"ar\"", "\"ag\"");
    /* a sync in-place write needs no wait: later readers follow it */
    commsched_graph *g = tu_graph_from_json(
        HDR "\"nodes\": ["
            "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
            " \"all_reduce\", \"group\": \"dp\", \"async\": false, "
            " \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"a\", \"alias_of\": \"x\"}]},"
            "{\"name\": \"late\", \"kind\": \"compute\", \"inputs\": [\"x\"]}"
            "]}");
    const uint32_t *d;
    assert_int_equal(derived(g, "late", &d), 1);
    assert_int_equal(d[0], tu_node(g, "ar"));
    commsched_graph_destroy(g);
}

static void test_mutation_race_checker(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(INPLACE);
    commsched_error err = {0};
    commsched_schedule *s = NULL;
    assert_int_equal(commsched_schedule_create(g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_schedule_check_races(s, &err), COMMSCHED_OK);
    /* r2 between ar and its wait: reads g while ar writes it */
    commsched_schedule_unlink(s, tu_node(g, "r2"));
    commsched_schedule_insert_before(s, tu_node(g, "r2"), tu_node(g, "w"));
    assert_int_equal(commsched_schedule_check_races(s, &err),
                     COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "race on buffer \"g\""));
    assert_non_null(strstr(err.text, "\"r2\""));
    assert_non_null(strstr(err.text, "\"ar\""));
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

/* The derived edges are exactly what race freedom needs: every order that
 * respects the non-fake edges of a random graph (with in-place
 * all-reduces, readers of their buffers and waits far away) is race-free. */
static void test_mutation_every_topological_order_is_race_free(void **state)
{
    (void)state;
    uint32_t graphs = 0, with_derived = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        tu_graph_opts o = tu_random_opts(20 + (uint32_t)(seed % 60));
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = g->n_nodes;
        with_derived += g->derived.off[n] > 0;
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        for (uint64_t k = 0; k < 4; k++) {
            tu_random_topo_order(g, seed * 31 + k, 0, order);
            commsched_schedule *s = NULL;
            commsched_error err = {0};
            assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                             COMMSCHED_OK);
            if (commsched_schedule_check_races(s, &err) != COMMSCHED_OK)
                fail_msg("seed %llu order %llu: %s: %s",
                         (unsigned long long)seed, (unsigned long long)k,
                         err.path, err.text);
            commsched_schedule_destroy(s);
        }
        free(order);
        commsched_graph_destroy(g);
        graphs++;
    }
    assert_int_equal(graphs, 300);
    /* the property is not vacuous: most graphs have derived edges */
    assert_true(with_derived > 100);
}

static void test_mutation_toposort_rejects_racing_repair(void **state)
{
    (void)state;
    /* listed out of order; the repair puts "mid" where igraph's sort puts
     * it, between the write and its wait, which is reported */
    commsched_graph *g = NULL;
    commsched_error err = {0};
    const char *json =
        HDR "\"nodes\": ["
            "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"a\"]},"
            "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
            " \"all_reduce\", \"group\": \"dp\", \"inputs\": [\"x\"], "
            " \"outputs\": [{\"name\": \"a\", \"alias_of\": \"x\"}]},"
            "{\"name\": \"mid\", \"kind\": \"compute\", \"inputs\": [\"x\"]}"
            "]}";
    commsched_status st =
        commsched_graph_load_string(json, COMMSCHED_FINISH_TOPOSORT, &g, &err);
    if (st == COMMSCHED_OK) {
        /* the repair kept "mid" out of the write: then it is ordered */
        const uint32_t *d;
        uint32_t n = commsched_graph_node_derived_deps(g, tu_node(g, "mid"),
                                                       &d);
        uint32_t m = commsched_graph_node_derived_deps(g, tu_node(g, "ar"),
                                                       &d);
        assert_int_equal(n + m, 1);
        commsched_graph_destroy(g);
    } else {
        assert_int_equal(st, COMMSCHED_EGRAPH);
        assert_non_null(strstr(err.text, "\"mid\""));
    }
}

/* An order that runs r1 after the in-place write, handed to the pipeline,
 * is the caller's error (EORDER naming r1), not blamed on the first pass
 * (decide_global_ordering_of_comms would keep it). A pass that breaks the
 * order itself is EINTERNAL naming the pass: tests/unit/test_pipeline_check.c. */
static void test_mutation_pipeline_rejects_racing_input(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(INPLACE);
    uint32_t order[6] = {tu_node(g, "p"),     tu_node(g, "ar"),
                         tu_node(g, "other"), tu_node(g, "w"),
                         tu_node(g, "r1"),    tu_node(g, "r2")};
    commsched_schedule *s = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_OK);
    commsched_knobs *k = NULL;
    assert_int_equal(commsched_knobs_create(&k, &err), COMMSCHED_OK);
    double rt[6] = {1, 1, 1, 1, 1, 1};
    commsched_run *run = NULL;
    assert_int_equal(commsched_pipeline_run(g, s, rt,
                                            "decide_global_ordering_of_comms",
                                            k, COMMSCHED_PIPELINE_VERIFY, &run,
                                            &err),
                     COMMSCHED_EORDER);
    assert_null(run);
    assert_null(strstr(err.text, "decide_global_ordering_of_comms"));
    assert_non_null(strstr(err.text, "\"r1\""));
    commsched_knobs_destroy(k);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutation_edges_derived),
        cmocka_unit_test(test_mutation_racing_file_orders_rejected),
        cmocka_unit_test(test_mutation_race_checker),
        cmocka_unit_test(test_mutation_every_topological_order_is_race_free),
        cmocka_unit_test(test_mutation_toposort_rejects_racing_repair),
        cmocka_unit_test(test_mutation_pipeline_rejects_racing_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
