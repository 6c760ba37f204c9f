/* commsched unit tests — reachability and longest paths (the igraph
 * boundary) against brute force. The brute force builds its edges from the
 * graph as written (reads -> producer, after, after_fake), not from the
 * derived tables the library uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/analysis.h"
#include "graph_internal.h"
#include "testutil.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

/* Dense predecessor matrix: pred[v * n + u] = 1 when u -> v. */
static uint8_t *brute_preds(const commsched_graph *g, int with_fake)
{
    uint32_t n = g->n_nodes;
    uint8_t *pred = calloc((size_t)n * n, 1);
    assert_non_null(pred);
    for (uint32_t v = 0; v < n; v++) {
        for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++) {
            uint32_t p = g->buffers[g->reads.idx[k]].producer;
            if (p != COMMSCHED_NONE)
                pred[(size_t)v * n + p] = 1;
        }
        for (uint32_t k = g->after.off[v]; k < g->after.off[v + 1]; k++)
            pred[(size_t)v * n + g->after.idx[k]] = 1;
        /* edges derived from in-place writes are real edges too */
        for (uint32_t k = g->derived.off[v]; k < g->derived.off[v + 1]; k++)
            pred[(size_t)v * n + g->derived.idx[k]] = 1;
        if (with_fake)
            for (uint32_t k = g->after_fake.off[v];
                 k < g->after_fake.off[v + 1]; k++)
                pred[(size_t)v * n + g->after_fake.idx[k]] = 1;
    }
    return pred;
}

/* reach[v * n + u] = 1 when u is an ancestor of v (transitive closure by
 * repeated DFS). */
static uint8_t *brute_ancestors(const uint8_t *pred, uint32_t n)
{
    uint8_t *reach = calloc((size_t)n * n, 1);
    uint32_t *stack = malloc(n * sizeof *stack);
    assert_non_null(reach);
    assert_non_null(stack);
    for (uint32_t v = 0; v < n; v++) {
        uint8_t *seen = reach + (size_t)v * n;
        uint32_t top = 0;
        stack[top++] = v;
        while (top > 0) {
            uint32_t x = stack[--top];
            for (uint32_t u = 0; u < n; u++)
                if (pred[(size_t)x * n + u] && !seen[u]) {
                    seen[u] = 1;
                    stack[top++] = u;
                }
        }
    }
    free(stack);
    return reach;
}

static void expect_set(const uint32_t *got, uint32_t count,
                       const uint8_t *want, uint32_t n, const char *what,
                       uint32_t node)
{
    uint32_t k = 0;
    for (uint32_t u = 0; u < n; u++) {
        if (!want[u])
            continue;
        if (k >= count || got[k] != u)
            fail_msg("%s of %u: expected %u at %u, got %u (count %u)", what,
                     node, u, k, k < count ? got[k] : COMMSCHED_NONE, count);
        k++;
    }
    assert_int_equal(k, count);
}

static void check_reachability(const commsched_graph *g, int with_fake)
{
    uint32_t n = g->n_nodes;
    uint8_t *pred = brute_preds(g, with_fake);
    uint8_t *anc = brute_ancestors(pred, n);
    uint8_t *desc = calloc(n, 1);
    assert_non_null(desc);
    commsched_edges edges =
        with_fake ? COMMSCHED_EDGES_WITH_FAKE : COMMSCHED_EDGES_REAL;
    uint32_t nonempty = 0;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t *out = NULL, count = 0;
        commsched_error err = {0};
        assert_int_equal(commsched_graph_ancestors(g, v, edges, &out, &count,
                                                   &err),
                         COMMSCHED_OK);
        assert_non_null(out);
        assert_false(anc[(size_t)v * n + v]); /* a DAG */
        expect_set(out, count, anc + (size_t)v * n, n, "ancestors", v);
        nonempty += count > 0;
        commsched_free(out);

        for (uint32_t u = 0; u < n; u++)
            desc[u] = anc[(size_t)u * n + v];
        assert_int_equal(commsched_graph_descendants(g, v, edges, &out,
                                                     &count, &err),
                         COMMSCHED_OK);
        expect_set(out, count, desc, n, "descendants", v);
        commsched_free(out);
    }
    assert_true(nonempty > n / 2);
    free(desc);
    free(anc);
    free(pred);
}

static void test_analysis_reachability_matches_brute_force(void **state)
{
    (void)state;
    for (uint64_t seed = 100; seed < 106; seed++) {
        tu_graph_opts o = tu_random_opts(seed % 2 ? 60 : 140);
        o.fake_percent = 40;
        o.after_percent = 20;
        commsched_graph *g = tu_random_graph(seed, &o);
        check_reachability(g, 0);
        check_reachability(g, 1);
        commsched_graph_destroy(g);
    }
}

/* Fake edges count only when asked for; a source has no ancestors. */
static void test_analysis_fake_edges_and_sources(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(
        HDR "\"nodes\": ["
            "{\"name\": \"a\", \"kind\": \"compute\", \"outputs\": "
            "[{\"name\": \"x\", \"size\": 1}]},"
            "{\"name\": \"b\", \"kind\": \"compute\", \"after_fake\": "
            "[\"a\"]},"
            "{\"name\": \"c\", \"kind\": \"compute\", \"after\": [\"b\"]},"
            "{\"name\": \"d\", \"kind\": \"compute\", \"inputs\": [\"x\"]}]}");
    uint32_t *out = NULL, count = 99;
    commsched_error err = {0};
    /* a: a source */
    assert_int_equal(commsched_graph_ancestors(g, 0, COMMSCHED_EDGES_WITH_FAKE,
                                               &out, &count, &err),
                     COMMSCHED_OK);
    assert_int_equal(count, 0);
    commsched_free(out);
    /* c: only b really; b and a with fake edges */
    assert_int_equal(commsched_graph_ancestors(g, 2, COMMSCHED_EDGES_REAL,
                                               &out, &count, &err),
                     COMMSCHED_OK);
    assert_int_equal(count, 1);
    assert_int_equal(out[0], 1);
    commsched_free(out);
    assert_int_equal(commsched_graph_ancestors(g, 2, COMMSCHED_EDGES_WITH_FAKE,
                                               &out, &count, &err),
                     COMMSCHED_OK);
    assert_int_equal(count, 2);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    commsched_free(out);
    /* descendants of a: d, and b, c through the fake edge */
    assert_int_equal(commsched_graph_descendants(g, 0, COMMSCHED_EDGES_REAL,
                                                 &out, &count, &err),
                     COMMSCHED_OK);
    assert_int_equal(count, 1);
    assert_int_equal(out[0], 3);
    commsched_free(out);
    assert_int_equal(commsched_graph_descendants(
                         g, 0, COMMSCHED_EDGES_WITH_FAKE, &out, &count, &err),
                     COMMSCHED_OK);
    assert_int_equal(count, 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 3);
    commsched_free(out);
    /* out of range */
    out = (uint32_t *)1;
    assert_int_equal(commsched_graph_descendants(g, 4, COMMSCHED_EDGES_REAL,
                                                 &out, &count, &err),
                     COMMSCHED_EINVAL);
    assert_null(out);
    assert_int_equal(count, 0);
    commsched_free(NULL);
    commsched_graph_destroy(g);
}

/* Longest path: length against a DP over the node order (topological,
 * fake edges included) and, on small graphs, against every path. */
static double brute_dp(const uint8_t *pred, uint32_t n, const double *w)
{
    double *dist = malloc(n * sizeof *dist), best = 0;
    assert_non_null(dist);
    for (uint32_t v = 0; v < n; v++) {
        double d = 0;
        for (uint32_t u = 0; u < v; u++)
            if (pred[(size_t)v * n + u] && dist[u] > d)
                d = dist[u];
        assert_false(pred[(size_t)v * n + v]);
        for (uint32_t u = v + 1; u < n; u++)
            assert_false(pred[(size_t)v * n + u]); /* order is topological */
        dist[v] = d + w[v];
        if (dist[v] > best)
            best = dist[v];
    }
    free(dist);
    return best;
}

/* The heaviest path ending at v, by walking every path backwards. */
static double brute_all_paths(const uint8_t *pred, uint32_t n,
                              const double *w, uint32_t v)
{
    double best = 0;
    for (uint32_t u = 0; u < n; u++)
        if (pred[(size_t)v * n + u]) {
            double d = brute_all_paths(pred, n, w, u);
            if (d > best)
                best = d;
        }
    return best + w[v];
}

static void check_longest(const commsched_graph *g, int with_fake, tu_rng *r,
                          int exhaustive)
{
    uint32_t n = g->n_nodes;
    double *w = malloc(n * sizeof *w);
    assert_non_null(w);
    for (uint32_t v = 0; v < n; v++)
        w[v] = tu_rng_chance(r, 10) ? 0.0 : (double)tu_rng_below(r, 1000);
    uint8_t *pred = brute_preds(g, with_fake);
    double want = brute_dp(pred, n, w);
    if (exhaustive) {
        double all = 0;
        for (uint32_t v = 0; v < n; v++) {
            double d = brute_all_paths(pred, n, w, v);
            if (d > all)
                all = d;
        }
        assert_true(all == want);
    }
    double length = -1;
    uint32_t *path = NULL, count = 0;
    commsched_error err = {0};
    commsched_edges edges =
        with_fake ? COMMSCHED_EDGES_WITH_FAKE : COMMSCHED_EDGES_REAL;
    assert_int_equal(commsched_graph_longest_path(g, edges, w, &length, &path,
                                                  &count, &err),
                     COMMSCHED_OK);
    if (length != want)
        fail_msg("longest path %g, brute force %g", length, want);
    /* the path is a real path whose weights add up to the length */
    assert_true(count > 0);
    double sum = w[path[0]];
    for (uint32_t k = 1; k < count; k++) {
        assert_true(pred[(size_t)path[k] * n + path[k - 1]]);
        sum += w[path[k]];
    }
    assert_true(sum == length);
    commsched_free(path);
    /* length only */
    double len2 = -1;
    assert_int_equal(commsched_graph_longest_path(g, edges, w, &len2, NULL,
                                                  NULL, &err),
                     COMMSCHED_OK);
    assert_true(len2 == want);
    free(pred);
    free(w);
}

static void test_analysis_longest_path_matches_brute_force(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_seed(&r, 99);
    for (uint64_t seed = 200; seed < 212; seed++) {
        int small = seed % 3 == 0;
        tu_graph_opts o = tu_random_opts(small ? 14 : 150);
        o.fake_percent = 40;
        o.after_percent = 20;
        commsched_graph *g = tu_random_graph(seed, &o);
        for (int rep = 0; rep < 3; rep++) {
            check_longest(g, 0, &r, small);
            check_longest(g, 1, &r, small);
        }
        commsched_graph_destroy(g);
    }
}

/* A fake edge can lengthen the critical path: a(5) -> c(1) really, and
 * b(10) -fake-> c. Real: max(a + c, b) = 10; with fake: b + c = 11. */
static void test_analysis_longest_path_fake_edge(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(
        HDR "\"nodes\": ["
            "{\"name\": \"a\", \"kind\": \"compute\", \"outputs\": "
            "[{\"name\": \"x\", \"size\": 1}]},"
            "{\"name\": \"b\", \"kind\": \"compute\"},"
            "{\"name\": \"c\", \"kind\": \"compute\", \"inputs\": [\"x\"], "
            "\"after_fake\": [\"b\"]}]}");
    const double w[] = {5, 10, 1};
    double len = 0;
    uint32_t *path = NULL, count = 0;
    assert_int_equal(commsched_graph_longest_path(g, COMMSCHED_EDGES_REAL, w,
                                                  &len, &path, &count, NULL),
                     COMMSCHED_OK);
    assert_true(len == 10);
    assert_int_equal(count, 1);
    assert_int_equal(path[0], 1);
    commsched_free(path);
    assert_int_equal(commsched_graph_longest_path(g, COMMSCHED_EDGES_WITH_FAKE,
                                                  w, &len, &path, &count,
                                                  NULL),
                     COMMSCHED_OK);
    assert_true(len == 11);
    assert_int_equal(count, 2);
    assert_int_equal(path[0], 1);
    assert_int_equal(path[1], 2);
    commsched_free(path);
    commsched_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_reachability_matches_brute_force),
        cmocka_unit_test(test_analysis_fake_edges_and_sources),
        cmocka_unit_test(test_analysis_longest_path_matches_brute_force),
        cmocka_unit_test(test_analysis_longest_path_fake_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
