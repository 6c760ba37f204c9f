/* commsched — overlap is never behind an anchor (issue 42): at every
 * budget, its order is at least as fast as every built-in anchor order
 * that fits the same budget, on random graphs and on every graph of the
 * corpus.
 *
 *   anchor_property --graphs N [--first S] [--search-alone] [FILE...]
 *   anchor_property --dump S OUT.json   (random graph S, to look closer)
 *
 * N random graphs (tests/unit/testutil.h: several process groups, in-place
 * all-reduces, sync collectives, after and fake edges, 8 to 57 nodes),
 * seeds S .. S + N - 1, then each FILE. For every graph and budget (1.0,
 * 1.25, 1.5 and inf x the input order's peaks) the anchors are: the input
 * order, raise_comms,sink_waits, reorder_compute_for_overlap,
 * simple_overlap and Inductor's pipeline at per-pass budgets 0, 0.05, 0.1
 * and 0.2, each through commsched_optimize as a user runs it. An anchor
 * fits when its per-step peak and its peak over simulated time are within
 * the budget x the input order's (the per-step one alone under
 * overlap_peak_model=step, which every fourth random graph and every
 * corpus graph also run at 1.0 and 1.25) and its order keeps the graph's
 * fake edges as overlap reads them (Inductor's iterative passes ignore
 * them; such an order is not one overlap may give). Checked: overlap's
 * result fits its budget, and its makespan is at most every fitting
 * anchor's, exactly. --search-alone also runs overlap_seeds=none and
 * counts the cells where the search alone is behind (printed, not
 * checked). Prints the counts; exits 1 on the first violation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/commsched.h"
#include "graph_internal.h"
#include "testutil.h"

#define INDUCTOR                                                               \
    "decide_global_ordering_of_comms,"                                         \
    "reorder_communication_preserving_peak_memory,sink_waits_iterative,"       \
    "reorder_communication_preserving_peak_memory"

static const struct anchor {
    const char *name, *passes, *budget; /* budget: Inductor's per-pass */
} anchors[] = {
    {"input", "none", NULL},
    {"raise_comms,sink_waits", "raise_comms,sink_waits", NULL},
    {"reorder_compute_for_overlap", "reorder_compute_for_overlap", NULL},
    {"simple_overlap", "simple_overlap", NULL},
    {"inductor b=0", INDUCTOR, "0"},
    {"inductor b=0.05", INDUCTOR, "0.05"},
    {"inductor b=0.1", INDUCTOR, "0.1"},
    {"inductor b=0.2", INDUCTOR, "0.2"},
};
#define N_ANCHORS (sizeof anchors / sizeof anchors[0])

static const char *const budgets[] = {"1.0", "1.25", "1.5", "inf"};
#define N_BUDGETS (sizeof budgets / sizeof budgets[0])

typedef struct fig {
    double ms;
    int64_t pk, tpk;
    int keeps_fake; /* the order keeps the graph's fake edges */
} fig;

static struct counts {
    unsigned long graphs, cells, compared, fitting, fake_broken, behind,
        search_behind, search_cells;
} cnt;

static const char *graph_name;
static int search_alone;

/* Whether order keeps every fake edge of g as overlap reads them: a fake
 * edge from an async collective onto a wait binds the collective to the
 * collectives that wait completes (docs/PASSES.md, overlap,
 * "Guarantees"). */
static int keeps_fake_edges(const commsched_graph *g, const uint32_t *order)
{
    uint32_t n = g->n_nodes;
    uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    assert_non_null(pos);
    for (uint32_t i = 0; i < n; i++)
        pos[order[i]] = i;
    int ok = 1;
    for (uint32_t v = 0; v < n && ok; v++)
        for (uint32_t e = g->after_fake.off[v];
             e < g->after_fake.off[v + 1] && ok; e++) {
            uint32_t d = g->after_fake.idx[e];
            if (!(cs_is_async_collective(&g->nodes[v]) &&
                  g->nodes[d].kind == COMMSCHED_NODE_WAIT)) {
                ok = pos[d] < pos[v];
                continue;
            }
            for (uint32_t r = g->reads.off[d]; r < g->reads.off[d + 1]; r++) {
                uint32_t p = g->buffers[g->reads.idx[r]].producer;
                if (p != COMMSCHED_NONE && p != v &&
                    g->nodes[p].kind == COMMSCHED_NODE_COLLECTIVE)
                    ok &= pos[p] < pos[v];
            }
        }
    free(pos);
    return ok;
}

/* One pipeline through commsched_optimize with "k=v" knobs (NULL ends). */
static fig run(const commsched_graph *g, const char *passes, ...)
{
    commsched_optimize_options *o = NULL;
    commsched_result *r = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_optimize_options_create(&o, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_optimize_options_set(o, "passes", passes, &err),
                     COMMSCHED_OK);
    va_list ap;
    va_start(ap, passes);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        if (commsched_optimize_options_set(o, k, v, &err) != COMMSCHED_OK)
            fail_msg("%s=%s: %s", k, v, err.text);
    }
    va_end(ap);
    if (commsched_optimize(g, o, &r, &err) != COMMSCHED_OK)
        fail_msg("%s: %s failed: %s", graph_name, passes, err.text);
    const commsched_sim_totals *t = commsched_result_after(r);
    fig f = {t->makespan_ns, t->peak_memory_step, t->peak_memory, 1};
    /* The result's graph is the input's (no pass here rewrites it); its
     * order against the input graph's own fake edges. */
    assert_int_equal(commsched_result_node_count(r),
                     commsched_graph_node_count(g));
    f.keeps_fake = keeps_fake_edges(g, commsched_result_order(r));
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(o);
    return f;
}

static int64_t limit(const char *budget, int64_t peak)
{
    if (strcmp(budget, "inf") == 0)
        return INT64_MAX;
    return (int64_t)floor(strtod(budget, NULL) * (double)peak);
}

/* Every anchor against overlap on g, at every budget (and with the
 * per-step model alone at 1.0 and 1.25 when step_too). */
static void check_graph(const commsched_graph *g, const char *name,
                        int step_too)
{
    graph_name = name;
    fig a[N_ANCHORS];
    for (size_t i = 0; i < N_ANCHORS; i++)
        a[i] = anchors[i].budget
                   ? run(g, anchors[i].passes,
                         "reorder_iterative_peak_memory_budget",
                         anchors[i].budget, "sink_iterative_peak_memory_budget",
                         anchors[i].budget, NULL)
                   : run(g, anchors[i].passes, NULL);
    const fig *in = &a[0];
    cnt.graphs++;
    for (int model = 0; model < (step_too ? 2 : 1); model++)
        for (size_t b = 0; b < N_BUDGETS; b++) {
            if (model == 1 && b >= 2)
                break;
            const char *pm = model ? "step" : "both";
            int64_t lim = limit(budgets[b], in->pk);
            int64_t tlim = model ? INT64_MAX : limit(budgets[b], in->tpk);
            fig ov = run(g, "overlap", "overlap_peak_budget", budgets[b],
                         "overlap_peak_model", pm, NULL);
            cnt.cells++;
            if (ov.pk > lim || ov.tpk > tlim || !ov.keeps_fake)
                fail_msg("%s, budget %s (%s): overlap's peaks %lld / %lld "
                         "above %lld / %lld, or a fake edge broken (%d)",
                         name, budgets[b], pm, (long long)ov.pk,
                         (long long)ov.tpk, (long long)lim, (long long)tlim,
                         ov.keeps_fake);
            double best = INFINITY;
            for (size_t i = 0; i < N_ANCHORS; i++) {
                cnt.compared++;
                if (!a[i].keeps_fake) {
                    cnt.fake_broken++;
                    continue;
                }
                if (a[i].pk > lim || a[i].tpk > tlim)
                    continue;
                cnt.fitting++;
                if (a[i].ms < best)
                    best = a[i].ms;
                if (ov.ms > a[i].ms) {
                    cnt.behind++;
                    fail_msg("%s, budget %s (%s): overlap %.17g ns behind %s "
                             "%.17g ns (peaks %lld / %lld within %lld / "
                             "%lld)",
                             name, budgets[b], pm, ov.ms, anchors[i].name,
                             a[i].ms, (long long)a[i].pk, (long long)a[i].tpk,
                             (long long)lim, (long long)tlim);
                }
            }
            if (search_alone) {
                fig se = run(g, "overlap", "overlap_peak_budget", budgets[b],
                             "overlap_peak_model", pm, "overlap_seeds",
                             "none", NULL);
                cnt.search_cells++;
                if (se.ms > best) {
                    cnt.search_behind++;
                    printf("search alone behind: %s, budget %s (%s): %.6g "
                           "vs %.6g ns (%.3f%%)\n",
                           name, budgets[b], pm, se.ms, best,
                           100 * (se.ms / best - 1));
                }
            }
        }
}

static unsigned long n_graphs = 1000, first = 1;
static char **files;
static int n_files;

static void test_property(void **state)
{
    (void)state;
    char name[64];
    for (unsigned long s = first; s < first + n_graphs; s++) {
        tu_graph_opts o = tu_random_opts(8 + (uint32_t)(s % 50));
        commsched_graph *g = tu_random_graph(s, &o);
        snprintf(name, sizeof name, "random graph %lu", s);
        check_graph(g, name, s % 4 == 0);
        commsched_graph_destroy(g);
    }
    for (int i = 0; i < n_files; i++) {
        commsched_graph *g = NULL;
        commsched_error err = {0};
        if (commsched_graph_load_file(files[i], 0, &g, &err) != COMMSCHED_OK)
            fail_msg("%s: %s", files[i], err.text);
        check_graph(g, files[i], 1);
        commsched_graph_destroy(g);
    }
    printf("anchor property: %lu graphs (%lu random, %d files), %lu "
           "graph x budget cells; %lu anchor comparisons: %lu fit, %lu "
           "broke a fake edge, overlap behind in %lu\n",
           cnt.graphs, n_graphs, n_files, cnt.cells, cnt.compared,
           cnt.fitting, cnt.fake_broken, cnt.behind);
    if (search_alone)
        printf("the search alone (overlap_seeds=none) behind the best fitting "
               "anchor in %lu of %lu cells\n",
               cnt.search_behind, cnt.search_cells);
}

int main(int argc, char **argv)
{
    files = malloc((size_t)argc * sizeof *files);
    if (!files)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graphs") == 0 && i + 1 < argc)
            n_graphs = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc)
            first = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--search-alone") == 0)
            search_alone = 1;
        else if (strcmp(argv[i], "--dump") == 0 && i + 2 < argc) {
            /* random graph S as a file, to look at one case closer */
            unsigned long sd = strtoul(argv[++i], NULL, 10);
            tu_graph_opts o = tu_random_opts(8 + (uint32_t)(sd % 50));
            commsched_graph *g = tu_random_graph(sd, &o);
            char *text = tu_graph_to_json(g, NULL);
            FILE *f = fopen(argv[++i], "w");
            int bad = !f || fputs(text, f) < 0;
            if (f)
                bad |= fclose(f) != 0;
            free(text);
            commsched_graph_destroy(g);
            free(files);
            return bad;
        }
        else
            files[n_files++] = argv[i];
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_property)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(files);
    return rc;
}
