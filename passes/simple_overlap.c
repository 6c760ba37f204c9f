/* commsched — simple_overlap, PyTorch's defensive overlap pass (pull
 * requests 184225 and 184235, on by default in PyTorch since 184240), kept
 * as an anchor that overlap and tune must beat (docs/PASSES.md).
 *
 *   1. Each async collective, in schedule order, swaps one position earlier
 *      at a time toward its last dependency. It stops at a node it depends
 *      on (data, control or fake edge), at another collective (collectives
 *      are never reordered, so every rank issues them in one order) or when
 *      the swap would raise peak memory.
 *   2. Each wait, in schedule order, swaps one position later at a time
 *      toward its first consumer. It stops at a node that depends on it, at
 *      another wait, or when the swap would raise peak memory.
 *
 * No runtime model, no budget: a move is taken only when the memory model
 * says the step's peak does not grow. Each swap is priced exactly by the
 * incremental memory tracker (commsched_memory_plan_move), the same one
 * the iterative passes use. */
#include "passes_internal.h"

#include <stdlib.h>

/* 1 when a must stay after b: a non-fake dependency or a fake edge. */
static int ordered_after(const commsched_graph *g, uint32_t a, uint32_t b)
{
    if (cs_depends_on(g, a, b))
        return 1;
    for (uint32_t k = g->after_fake.off[a]; k < g->after_fake.off[a + 1]; k++)
        if (g->after_fake.idx[k] == b)
            return 1;
    return 0;
}

/* One swap of `cand` across its neighbour `other` in direction dir, taken
 * when the peak stays at most `peak`. *moved says whether it was taken. */
static commsched_status try_swap(cs_pass_ctx *ctx, commsched_memory *m,
                                 commsched_move dir, uint32_t cand,
                                 uint32_t other, int64_t peak, int *moved)
{
    int64_t potential;
    *moved = 0;
    commsched_status st = commsched_memory_plan_move(m, ctx->s, dir, cand, other,
                                                     other, &potential, ctx->err);
    if (st != COMMSCHED_OK || potential > peak)
        return st;
    commsched_memory_commit_move(m, ctx->s);
    *moved = 1;
    if (ctx->verify)
        return commsched_memory_verify(m, ctx->s, ctx->err);
    return COMMSCHED_OK;
}

/* Phase 1: collectives earlier (and, with stop_at_waits, never above a
 * wait: one block ahead at most). */
static commsched_status raise_collectives(cs_pass_ctx *ctx, commsched_memory *m,
                                          const uint32_t *order, uint32_t n,
                                          int64_t peak, int stop_at_waits)
{
    const commsched_graph *g = ctx->g;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = order[i];
        if (!cs_is_async(g, c))
            continue;
        for (;;) {
            uint32_t p = commsched_schedule_prev(ctx->s, c);
            if (p == COMMSCHED_NONE || cs_is_collective(g, p) ||
                (stop_at_waits && cs_is_wait(g, p)) || ordered_after(g, c, p))
                break;
            int moved;
            commsched_status st = try_swap(ctx, m, COMMSCHED_MOVE_BEFORE_GROUP,
                                           c, p, peak, &moved);
            if (st != COMMSCHED_OK)
                return st;
            if (!moved)
                break;
        }
    }
    return COMMSCHED_OK;
}

/* Phase 2: waits later. */
static commsched_status sink_waits(cs_pass_ctx *ctx, commsched_memory *m,
                                   const uint32_t *order, uint32_t n,
                                   int64_t peak)
{
    const commsched_graph *g = ctx->g;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = order[i];
        if (!cs_is_wait(g, w))
            continue;
        for (;;) {
            uint32_t q = commsched_schedule_next(ctx->s, w);
            if (q == COMMSCHED_NONE || cs_is_wait(g, q) || ordered_after(g, q, w))
                break;
            int moved;
            commsched_status st = try_swap(ctx, m, COMMSCHED_MOVE_AFTER_GROUP,
                                           w, q, peak, &moved);
            if (st != COMMSCHED_OK)
                return st;
            if (!moved)
                break;
        }
    }
    return COMMSCHED_OK;
}

commsched_status cs_simple_overlap(cs_pass_ctx *ctx, double peak_budget,
                                   int stop_at_waits)
{
    uint32_t n = ctx->g->n_nodes;
    commsched_memory *m = NULL;
    /* Nodes are visited in the input's order, as PyTorch's loops do. */
    uint32_t *order = cs_malloc_array(n ? n : 1, sizeof *order);
    if (!order)
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    commsched_status st = commsched_schedule_to_array(ctx->s, order, ctx->err);
    if (st == COMMSCHED_OK)
        st = commsched_memory_create(ctx->s, &m, ctx->err);
    if (st == COMMSCHED_OK) {
        /* The input's peak (x 1 + budget): no swap may pass it. A swap
         * changes only the levels of the two nodes it exchanges, so
         * comparing their new levels with it bounds the whole step. */
        int64_t peak = commsched_memory_peak(m, ctx->s, NULL);
        int64_t limit = peak;
        if (peak_budget > 0) {
            double l = (double)peak * (1.0 + peak_budget);
            limit = l >= 9.2e18 ? INT64_MAX : (int64_t)l;
        }
        st = raise_collectives(ctx, m, order, n, limit, stop_at_waits);
        if (st == COMMSCHED_OK)
            st = sink_waits(ctx, m, order, n, limit);
    }
    commsched_memory_destroy(m);
    free(order);
    return st;
}

commsched_status cs_pass_simple_overlap(cs_pass_ctx *ctx)
{
    return cs_simple_overlap(ctx, 0.0, 0);
}
