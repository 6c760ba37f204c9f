/* Fuzz harness: load -> the default pipeline -> simulate -> save ->
 * reload. Every accepted graph optimizes without an internal error, every
 * figure the simulator reports is finite, and the optimized graph saves to
 * text that loads back and saves to the same bytes. Then the bucketing
 * passes and overlap on it with every check on ("verify": each bucket
 * merge priced both incrementally and on the built graph, which must
 * agree, and each order checked), as tune runs them, with a split the
 * input's length picks (bucket_cuts 0 .. 6: tune's split search; greedy
 * or cost mode): the rewrite must give a graph that round-trips too. And the passes that
 * move a run at a time, alone with verify (against their swaps). */
#include "fuzz.h"

#include <math.h>

static void check_totals(const commsched_sim_totals *t)
{
    FUZZ_CHECK(isfinite(t->makespan_ns) && t->makespan_ns >= 0,
               "makespan %g", t->makespan_ns);
    FUZZ_CHECK(isfinite(t->exposed_ns) && isfinite(t->comm_ns) &&
                   isfinite(t->compute_ns),
               "non-finite time");
    FUZZ_CHECK(t->peak_memory >= 0 && t->peak_memory_step >= 0 &&
                   t->peak_memory_step >= t->memory_baseline,
               "peak %lld / %lld, baseline %lld", (long long)t->peak_memory,
               (long long)t->peak_memory_step, (long long)t->memory_baseline);
}

/* commsched_optimize(g, o): on success finite figures and an output that
 * round-trips, on failure a located error and no result; g is valid, so
 * only running out of memory may fail it (a rewrite the builder refuses,
 * a cycle or a bad order is a pass's bug). Returns 1 when it succeeded. */
static int check_optimize(const commsched_graph *g,
                          const commsched_optimize_options *o)
{
    commsched_error err = {0};
    commsched_result *r = NULL;
    commsched_status st = commsched_optimize(g, o, &r, &err);
    if (st != COMMSCHED_OK) {
        FUZZ_CHECK(r == NULL, "failed optimize returned a result");
        fuzz_check_error(st, &err);
        FUZZ_CHECK(st == COMMSCHED_ENOMEM, "a valid graph failed: %s: %s: %s",
                   commsched_status_name(st), err.path, err.text);
        return 0;
    }
    check_totals(commsched_result_before(r));
    check_totals(commsched_result_after(r));
    fuzz_check_roundtrip(commsched_result_graph(r), commsched_result_order(r));
    commsched_result_destroy(r);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    commsched_status st = commsched_graph_load_string(text, 0, &g, &err);
    free(text);
    if (st != COMMSCHED_OK) {
        fuzz_check_error(st, &err);
        return 0;
    }
    commsched_optimize_options *o = NULL, *so = NULL;
    char cuts[2] = {(char)('0' + size % 7), '\0'};
    /* every other length in cost mode: each merge's step priced from its
     * window too, and verify requires the full figure within its bound */
    const char *mode = size / 7 % 2 ? "cost" : "greedy";
    int ok = check_optimize(g, NULL);
    /* The passes that move a run at a time, with verify: simple_overlap's
     * batched rise and the transformer-block plan's one-move sink must
     * leave the order their swaps leave, and RCPPM's runs must price every
     * move as plan_move does and keep the tracker exact. */
    static const char *const one_go[] = {
        "simple_overlap", "bucket_transformer_blocks",
        "reorder_communication_preserving_peak_memory,sink_waits_iterative"};
    for (size_t i = 0; ok && i < sizeof one_go / sizeof one_go[0]; i++) {
        if (commsched_optimize_options_create(&so, &err) == COMMSCHED_OK &&
            commsched_optimize_options_set(so, "passes", one_go[i], &err) ==
                COMMSCHED_OK &&
            commsched_optimize_options_set(so, "verify", "true", &err) ==
                COMMSCHED_OK)
            check_optimize(g, so);
        commsched_optimize_options_destroy(so);
        so = NULL;
    }
    /* tune's two kinds of bucketing candidate: before overlap, and before
     * Inductor's pipeline (whose passes then run on the rewritten graph) */
    static const char *const after_buckets[] = {
        "overlap", "decide_global_ordering_of_comms,"
                   "reorder_communication_preserving_peak_memory,"
                   "sink_waits_iterative"};
    for (size_t i = 0; ok && i < 2; i++) {
        char passes[256];
        snprintf(passes, sizeof passes,
                 "bucket_all_gather,bucket_reduce_scatter,bucket_all_reduce,%s",
                 after_buckets[i]);
        if (commsched_optimize_options_create(&o, &err) == COMMSCHED_OK &&
            commsched_optimize_options_set(o, "passes", passes, &err) ==
                COMMSCHED_OK &&
            commsched_optimize_options_set(o, "verify", "true", &err) ==
                COMMSCHED_OK &&
            commsched_optimize_options_set(o, "bucket_cuts", cuts, &err) ==
                COMMSCHED_OK &&
            commsched_optimize_options_set(o, "bucket_mode", mode, &err) ==
                COMMSCHED_OK)
            check_optimize(g, o);
        commsched_optimize_options_destroy(o);
        o = NULL;
    }
    commsched_graph_destroy(g);
    return 0;
}
