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

/* Moves `cand` across the contiguous group head..tail in direction dir
 * when the peak stays at most `peak`. *moved says whether it did. */
static commsched_status try_move(cs_pass_ctx *ctx, commsched_memory *m,
                                 commsched_move dir, uint32_t cand,
                                 uint32_t head, uint32_t tail, int64_t peak,
                                 int *moved)
{
    int64_t potential;
    *moved = 0;
    commsched_status st = commsched_memory_plan_move(m, ctx->s, dir, cand, head,
                                                     tail, &potential, ctx->err);
    if (st != COMMSCHED_OK || potential > peak)
        return st;
    commsched_memory_commit_move(m, ctx->s);
    *moved = 1;
    if (ctx->verify)
        return commsched_memory_verify(m, ctx->s, ctx->err);
    return COMMSCHED_OK;
}

/* Scratch of the rising group: a stamp per node marks its members. */
typedef struct rise {
    uint32_t *mark;
    uint32_t stamp;
} rise;

/* 1 when some node of head..tail must stay after x. */
static int group_needs(const cs_pass_ctx *ctx, uint32_t head, uint32_t tail,
                       uint32_t x)
{
    for (uint32_t v = head;; v = commsched_schedule_next(ctx->s, v)) {
        if (ordered_after(ctx->g, v, x))
            return 1;
        if (v == tail)
            return 0;
    }
}

/* 1 when compute node x feeds only the group, so it may rise with it (a
 * bucket's copy-in, prefetched with its all-gather). */
static int feeds_only(const commsched_graph *g, const rise *r, uint32_t x)
{
    if (g->nodes[x].kind != COMMSCHED_NODE_COMPUTE)
        return 0;
    for (uint32_t k = g->users.off[x]; k < g->users.off[x + 1]; k++)
        if (r->mark[g->users.idx[k]] != r->stamp)
            return 0;
    for (uint32_t k = g->fake_users.off[x]; k < g->fake_users.off[x + 1]; k++)
        if (r->mark[g->fake_users.idx[k]] != r->stamp)
            return 0;
    return 1;
}

/* The collective wait node w completes: the first producer of a
 * collective along its first input's alias chain (a bucket's in-place
 * all-gather writes an alias of its copy-in), or NONE. */
static uint32_t waited_collective(const commsched_graph *g, uint32_t w)
{
    if (g->reads.off[w] == g->reads.off[w + 1])
        return COMMSCHED_NONE;
    for (uint32_t b = g->reads.idx[g->reads.off[w]]; b != COMMSCHED_NONE;
         b = g->buffers[b].alias_of) {
        uint32_t p = g->buffers[b].producer;
        if (p != COMMSCHED_NONE && cs_is_collective(g, p))
            return p;
    }
    return COMMSCHED_NONE;
}

/* 1 when wait w completes a collective of c's op: one block ahead, c rises
 * no higher than the wait of the previous collective of its kind. */
static int waits_for_same_op(const commsched_graph *g, uint32_t w, uint32_t c)
{
    uint32_t x = waited_collective(g, w);
    return x != COMMSCHED_NONE && g->nodes[x].coll_op == g->nodes[c].coll_op;
}

/* Phase 1: collectives earlier. One block ahead (ahead set), the plan is
 * the same on every rank, so a collective may pass collectives of another
 * op (a prefetched all-gather goes ahead of the previous block's
 * reduce-scatter); it stops at the previous collective of its own op or
 * at that collective's wait, and pulls along the compute nodes that feed
 * only it. */
static commsched_status raise_collectives(cs_pass_ctx *ctx, commsched_memory *m,
                                          const uint32_t *order, uint32_t n,
                                          int64_t peak, int ahead, rise *r)
{
    const commsched_graph *g = ctx->g;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = order[i];
        if (!cs_is_async(g, c))
            continue;
        uint32_t head = c;
        r->mark[c] = ++r->stamp;
        for (;;) {
            uint32_t x = commsched_schedule_prev(ctx->s, head);
            if (x == COMMSCHED_NONE)
                break;
            if (group_needs(ctx, head, c, x)) {
                if (!ahead || !feeds_only(g, r, x))
                    break;
                r->mark[x] = r->stamp;
                head = x;
                continue;
            }
            if (ahead ? (cs_is_collective(g, x) &&
                         g->nodes[x].coll_op == g->nodes[c].coll_op) ||
                            (cs_is_wait(g, x) && waits_for_same_op(g, x, c))
                      : cs_is_collective(g, x))
                break;
            int moved;
            commsched_status st = try_move(ctx, m, COMMSCHED_MOVE_AFTER_GROUP,
                                           x, head, c, peak, &moved);
            if (st != COMMSCHED_OK)
                return st;
            if (!moved)
                break;
        }
    }
    return COMMSCHED_OK;
}

/* Phase 2: waits later. One block ahead (ahead set), a wait passes other
 * waits too: the plan waits for a gradient's reduction where it is read. */
static commsched_status sink_waits(cs_pass_ctx *ctx, commsched_memory *m,
                                   const uint32_t *order, uint32_t n,
                                   int64_t peak, int ahead)
{
    const commsched_graph *g = ctx->g;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = order[i];
        if (!cs_is_wait(g, w))
            continue;
        for (;;) {
            uint32_t q = commsched_schedule_next(ctx->s, w);
            if (q == COMMSCHED_NONE || (!ahead && cs_is_wait(g, q)) ||
                ordered_after(g, q, w))
                break;
            int moved;
            commsched_status st = try_move(ctx, m, COMMSCHED_MOVE_AFTER_GROUP,
                                           w, q, q, peak, &moved);
            if (st != COMMSCHED_OK)
                return st;
            if (!moved)
                break;
        }
    }
    return COMMSCHED_OK;
}

commsched_status cs_simple_overlap(cs_pass_ctx *ctx, double peak_budget,
                                   int one_block_ahead)
{
    uint32_t n = ctx->g->n_nodes;
    commsched_memory *m = NULL;
    /* Nodes are visited in the input's order, as PyTorch's loops do. */
    uint32_t *order = cs_malloc_array(n ? n : 1, sizeof *order);
    rise r = {cs_calloc(n ? n : 1, sizeof *r.mark), 0};
    if (!order || !r.mark) {
        free(order);
        free(r.mark);
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
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
        st = raise_collectives(ctx, m, order, n, limit, one_block_ahead, &r);
        if (st == COMMSCHED_OK)
            st = sink_waits(ctx, m, order, n, limit, one_block_ahead);
    }
    commsched_memory_destroy(m);
    free(order);
    free(r.mark);
    return st;
}

commsched_status cs_pass_simple_overlap(cs_pass_ctx *ctx)
{
    return cs_simple_overlap(ctx, 0.0, 0);
}
