/* commsched — the anchor orders overlap judges beside its own search (map:
 * overlap.c; docs/PASSES.md, overlap, "Seeds"): what the built-in anchors
 * make of the pass's input order — the seed's heap list scheduler
 * (raise_comms then sink_waits; reorder_compute_for_overlap), PyTorch's
 * simple_overlap and Inductor's recommended pipeline at each per-pass
 * budget tune tries. The pass keeps one when it fits the budget and beats
 * the search's order, so, by construction, its answer is never slower
 * than an anchor whose order fits: the search places collectives by
 * rules, and where an anchor's exact sequence runs shorter, it misses it.
 * Each seed is made exactly as the pass of its name makes it (the
 * pipeline runs those passes, on a view of the graph whose fake edges
 * decide_global_ordering_of_comms may replace), so its order and figures
 * are the anchor's. */
#include "overlap_internal.h"

#include <stdlib.h>
#include <string.h>

#define INDUCTOR                                                               \
    "decide_global_ordering_of_comms,"                                         \
    "reorder_communication_preserving_peak_memory,sink_waits_iterative,"       \
    "reorder_communication_preserving_peak_memory"

/* The heap scheduler's steps (cs_heap_order's flags). */
typedef struct ov_heap_step {
    uint8_t raise, sink, for_overlap;
} ov_heap_step;

/* How a seed's order is made: the heap scheduler (n_steps steps, priced
 * from preallocated scratch: ~34 bytes a node, 8 a
 * buffer), or a pipeline of passes
 * (their own allocations) with the per-pass budgets of Inductor's
 * iterative passes (NULL: the knobs' defaults). */
static const struct ov_seed {
    const char *name;
    size_t n_steps;
    ov_heap_step step[2];
    const char *passes;
    const char *per_pass_budget;
    uint8_t keeps_collective_order; /* never reorders collectives nor
                                       compute: fits every order knob */
    uint8_t costly;                 /* not in the cheap set */
} ov_seeds[] = {
    {"raise_comms,sink_waits", 2, {{1, 0, 0}, {0, 1, 0}}, NULL, NULL, 0, 0},
    {"reorder_compute_for_overlap", 1, {{1, 1, 1}}, NULL, NULL, 0, 0},
    {"simple_overlap", 0, {{0}}, "simple_overlap", NULL, 1, 0},
    {"inductor b=0", 0, {{0}}, INDUCTOR, "0", 0, 1},
    {"inductor b=0.05", 0, {{0}}, INDUCTOR, "0.05", 0, 1},
    {"inductor b=0.1", 0, {{0}}, INDUCTOR, "0.1", 0, 1},
    {"inductor b=0.2", 0, {{0}}, INDUCTOR, "0.2", 0, 1},
};
#define N_SEEDS (sizeof ov_seeds / sizeof ov_seeds[0])

size_t cs_ov_seed_count(void) { return N_SEEDS; }

const char *cs_ov_seed_name(size_t i) { return ov_seeds[i].name; }

int cs_ov_seed_costly(size_t i) { return ov_seeds[i].costly; }

int cs_ov_seed_wanted(size_t i, const commsched_knobs *k)
{
    const struct ov_seed *sd = &ov_seeds[i];
    if (k->overlap_seeds == CS_SEEDS_NONE ||
        (sd->costly && k->overlap_seeds != CS_SEEDS_ALL))
        return 0;
    /* No seed counts a collective's bytes in flight. */
    if (k->overlap_max_in_flight_bytes > 0)
        return 0;
    return sd->keeps_collective_order ||
           (k->overlap_collective_order == CS_ORDER_FREE &&
            k->overlap_reorder_window < 0);
}

void cs_ov_seed_free_scratch(ov_seed_run *r)
{
    cs_ov_run_free(&r->S);
    memset(&r->S, 0, sizeof r->S);
    cs_heap_scratch_free(&r->hs);
    free(r->tmp);
    r->tmp = NULL;
}

void cs_ov_seed_free(ov_seed_run *r)
{
    cs_ov_seed_free_scratch(r);
    free(r->order);
    r->order = NULL;
}

/* All of a seed's working memory is allocated here, on the pass's own
 * thread, before the seeds run one a thread: a thread's allocations come
 * from its own malloc arena, where glibc keeps what is freed resident
 * (cs_heap_scratch). The pipeline seeds' passes allocate their own. */
int cs_ov_seed_alloc(ov_seed_run *r, const ov_base *b, size_t i)
{
    const struct ov_seed *sd = &ov_seeds[i];
    size_t nn = b->n ? b->n : 1;
    if (cs_ov_replay_alloc(&r->S, b) != 0)
        return -1;
    r->order = cs_malloc_array(nn, sizeof *r->order);
    if (!r->order)
        return -1;
    if (sd->n_steps > 1 && !(r->tmp = cs_malloc_array(nn, sizeof *r->tmp)))
        return -1;
    if (sd->n_steps > 0 &&
        cs_heap_scratch_init(&r->hs, b->n, b->g->n_buffers) != 0)
        return -1;
    return 0;
}

/* The order the seed's passes make of in_order, into out. */
static commsched_status run_passes(cs_pass_ctx *ctx, const struct ov_seed *sd,
                                   const uint32_t *in_order, uint32_t *out,
                                   commsched_error *err)
{
    commsched_graph view;
    commsched_schedule *s = NULL;
    commsched_knobs *k = NULL;
    commsched_run *run = NULL;
    cs_graph_view_init(&view, ctx->g);
    commsched_status st = commsched_knobs_create(&k, err);
    if (st == COMMSCHED_OK && sd->per_pass_budget &&
        ((st = commsched_knobs_set(k, "reorder_iterative_peak_memory_budget",
                                   sd->per_pass_budget, err)) !=
             COMMSCHED_OK ||
         (st = commsched_knobs_set(k, "sink_iterative_peak_memory_budget",
                                   sd->per_pass_budget, err)) !=
             COMMSCHED_OK))
        goto done;
    if (st == COMMSCHED_OK)
        st = commsched_schedule_create(&view, in_order, &s, err);
    if (st == COMMSCHED_OK)
        st = commsched_pipeline_run(&view, s, ctx->runtime_ns, sd->passes, k,
                                    COMMSCHED_PIPELINE_ORDER_ONLY |
                                        (ctx->verify
                                             ? COMMSCHED_PIPELINE_VERIFY
                                             : 0u),
                                    &run, err);
    if (st == COMMSCHED_OK)
        st = commsched_schedule_to_array(s, out, err);
done:
    commsched_run_destroy(run);
    commsched_schedule_destroy(s);
    commsched_knobs_destroy(k);
    cs_graph_view_release(&view);
    return st;
}

void cs_ov_seed_run(cs_pass_ctx *ctx, const ov_base *b, size_t i,
                    const uint32_t *in_order, ov_seed_run *r)
{
    const struct ov_seed *sd = &ov_seeds[i];
    commsched_sim *sim = NULL;
    commsched_status st = COMMSCHED_OK;
    const uint32_t *src = in_order;
    r->valid = 1;
    if (sd->passes) {
        st = run_passes(ctx, sd, in_order, r->order, &r->err);
        /* Inductor's iterative passes ignore fake edges (as Inductor
         * does); an order that breaks one the pass must keep is not an
         * answer it may give. */
        if (st == COMMSCHED_OK &&
            (st = cs_ov_check_fake_edges(ctx->g, r->order, &r->valid,
                                         NULL)) != COMMSCHED_OK)
            commsched_error_set(&r->err, st, NULL, "out of memory");
    }
    for (size_t k = 0; k < sd->n_steps && st == COMMSCHED_OK; k++) {
        const ov_heap_step *h = &sd->step[k];
        if (k > 0) {
            memcpy(r->tmp, r->order, b->n * sizeof *r->tmp);
            src = r->tmp;
        }
        st = cs_heap_order(ctx->g, src, ctx->runtime_ns, h->raise, h->sink,
                           h->for_overlap, r->order, &r->hs, &r->err);
    }
    if (st == COMMSCHED_OK && r->valid)
        st = cs_ov_price(ctx, &r->S, &sim, r->order, sd->name, &r->price,
                         &r->err);
    r->st = st;
    commsched_sim_destroy(sim);
}
