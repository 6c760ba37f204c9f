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
 * says the step's peak does not grow. Each swap is priced as the
 * incremental memory tracker (commsched_memory_plan_move), the same one
 * the iterative passes use, prices it: step 2 and the one-block-ahead
 * rise through the tracker itself, swap by swap; step 1 otherwise a run of
 * swaps at a time by the same formula (raise_batched); and one block ahead
 * with no limit (the transformer-block plan) each wait sinks in one move
 * (sink_unlimited). Verify mode checks both against the swaps. */
#include "passes_internal.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "segtree.h"

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

/* Phase 1 without one block ahead, a run of swaps at a time. There a
 * collective never groups and never passes another collective, so the
 * collectives keep their input order and each rises only past the
 * non-collective nodes between the previous collective and itself, which
 * keep their input order among themselves. Over input positions, two
 * segment trees hold the level before each node (A) and after its
 * allocations (B). The tracker prices c's swap past x
 * (commsched_memory_plan_move, group {c}) at max(A_x + alloc(c),
 * B_x + net(c)), net = alloc - free; so a run of swaps stops at the
 * rightmost x, above c's dependencies and the previous collective, where
 * A_x > limit - alloc(c) or B_x > limit - net(c), and each node passed
 * rises by net(c). The exception is a reader x of a buffer whose last use
 * is c: passing it moves that free to x (x's new level counts the buffer,
 * and c frees that much less from then on), so such a node is priced on
 * its own. O((V + E) log^2 V) where the swaps cost O(V x distance):
 * quadratic on a long chain whose all-gathers rise to the start. */
typedef struct batch {
    cs_segtree A, B;
    uint32_t *pos;     /* node -> input position */
    uint32_t *lu;      /* root buffer -> its last use, as the swaps leave it */
    uint32_t *before;  /* collective -> the input position it now sits
                          right before (its own when it stays) */
    uint32_t *special; /* scratch: input positions of c's special readers */
    size_t n_special, cap_special;
} batch;

/* The rightmost position in [l, r) whose value is above x, or NONE. */
static uint32_t rightmost_above(const cs_segtree *t, uint32_t l, uint32_t r,
                                int64_t x)
{
    if (l >= r || cs_segtree_max(t, l, r, NULL) <= x)
        return COMMSCHED_NONE;
    while (r - l > 1) {
        uint32_t mid = l + (r - l) / 2;
        if (cs_segtree_max(t, mid, r, NULL) > x)
            l = mid;
        else
            r = mid;
    }
    return l;
}

/* a - b, or INT64_MAX where that overflows (limit may be unbounded). */
static int64_t sat_sub(int64_t a, int64_t b)
{
    return b < 0 && a > INT64_MAX + b ? INT64_MAX : a - b;
}

/* Bytes of the buffers x reads whose last use is c, each root once (x
 * may read it twice, or through two aliases); take: they become x's. */
static int64_t frees_of(const commsched_graph *g, batch *bt, uint32_t c,
                        uint32_t x, int take)
{
    int64_t moved = 0;
    uint32_t lo = g->reads.off[x], hi = g->reads.off[x + 1];
    for (uint32_t k = lo; k < hi; k++) {
        uint32_t b = g->buffers[g->reads.idx[k]].root, j = lo;
        while (j < k && g->buffers[g->reads.idx[j]].root != b)
            j++;
        if (j < k || bt->lu[b] != c)
            continue; /* counted already, or not c's to free */
        moved += g->buffers[b].size;
        if (take)
            bt->lu[b] = x;
    }
    return moved;
}

static int cmp_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The lowest input position c may rise to: past its dependencies (a
 * collective one lies before bar, the previous collective's place). */
static uint32_t rise_floor(const commsched_graph *g, const batch *bt,
                           uint32_t c, uint32_t bar)
{
    uint32_t lo = bar, pc = bt->pos[c];
    for (int fake = 0; fake < 2; fake++) {
        const cs_csr *e = fake ? &g->after_fake : &g->deps;
        for (uint32_t k = e->off[c]; k < e->off[c + 1]; k++) {
            uint32_t d = e->idx[k];
            if (!cs_is_collective(g, d) && bt->pos[d] < pc &&
                bt->pos[d] + 1 > lo)
                lo = bt->pos[d] + 1;
        }
    }
    return lo;
}

/* c's swaps: sets bt->before[c]. -1 on OOM. */
static int rise_batched(const commsched_graph *g, commsched_memory *m,
                        const uint32_t *order, batch *bt, uint32_t c,
                        uint32_t bar, int64_t limit)
{
    uint32_t pc = bt->pos[c], lo = rise_floor(g, bt, c, bar);
    bt->n_special = 0;
    for (uint32_t k = g->reads.off[c]; k < g->reads.off[c + 1]; k++) {
        uint32_t b = g->buffers[g->reads.idx[k]].root;
        if (bt->lu[b] != c)
            continue;
        for (uint32_t r = g->readers.off[b]; r < g->readers.off[b + 1]; r++) {
            uint32_t x = g->readers.idx[r];
            if (cs_is_collective(g, x) || bt->pos[x] < lo || bt->pos[x] >= pc)
                continue;
            if (cs_grow((void **)&bt->special, &bt->cap_special,
                        bt->n_special + 1, sizeof *bt->special) != 0)
                return -1;
            bt->special[bt->n_special++] = bt->pos[x];
        }
    }
    if (bt->n_special > 1) /* qsort's base may not be NULL, even for 0 */
        qsort(bt->special, bt->n_special, sizeof *bt->special, cmp_desc);
    commsched_node_memory cm = commsched_memory_node(m, c);
    int64_t alloc_c = cm.size_alloc, net = cm.size_alloc - cm.size_free;
    uint32_t cur = pc; /* c sits right before input position cur */
    size_t si = 0;
    for (;;) {
        while (si < bt->n_special && bt->special[si] >= cur)
            si++; /* a duplicate of one passed */
        uint32_t sp = si < bt->n_special ? bt->special[si] : COMMSCHED_NONE;
        uint32_t seg = sp != COMMSCHED_NONE ? sp + 1 : lo;
        uint32_t fa = rightmost_above(&bt->A, seg, cur, sat_sub(limit, alloc_c));
        uint32_t fb = rightmost_above(&bt->B, seg, cur, sat_sub(limit, net));
        uint32_t f = fa == COMMSCHED_NONE ? fb
                     : fb == COMMSCHED_NONE || fa > fb ? fa : fb;
        uint32_t stop = f != COMMSCHED_NONE ? f + 1 : seg;
        if (stop < cur) {
            cs_segtree_add(&bt->A, stop, cur, net);
            cs_segtree_add(&bt->B, stop, cur, net);
            cur = stop;
        }
        if (f != COMMSCHED_NONE || sp == COMMSCHED_NONE)
            break;
        uint32_t x = order[sp];
        int64_t moved = frees_of(g, bt, c, x, 0);
        if (cs_segtree_at(&bt->A, sp) + alloc_c > limit ||
            cs_segtree_at(&bt->B, sp) + net + moved > limit)
            break;
        frees_of(g, bt, c, x, 1);
        net += moved;
        cs_segtree_add(&bt->A, sp, sp + 1, net);
        cs_segtree_add(&bt->B, sp, sp + 1, net);
        cur = sp;
    }
    bt->before[c] = cur;
    return 0;
}

static void batch_free(batch *bt)
{
    cs_segtree_free(&bt->A);
    cs_segtree_free(&bt->B);
    free(bt->pos);
    free(bt->lu);
    free(bt->before);
    free(bt->special);
}

/* Phase 1 (no block ahead) into out: the order its swaps leave; *moved
 * says whether any collective rose. */
static commsched_status raise_batched(cs_pass_ctx *ctx, commsched_memory *m,
                                      const uint32_t *order, uint32_t n,
                                      int64_t limit, uint32_t *out, int *moved)
{
    const commsched_graph *g = ctx->g;
    uint32_t nn = n ? n : 1, nb = g->n_buffers ? g->n_buffers : 1;
    batch bt = {0};
    bt.pos = cs_malloc_array(nn, sizeof *bt.pos);
    bt.lu = cs_malloc_array(nb, sizeof *bt.lu);
    bt.before = cs_malloc_array(nn, sizeof *bt.before);
    if (!bt.pos || !bt.lu || !bt.before || cs_segtree_init(&bt.A, nn) != 0 ||
        cs_segtree_init(&bt.B, nn) != 0) {
        batch_free(&bt);
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    int64_t *la = cs_segtree_leaves(&bt.A), *lb = cs_segtree_leaves(&bt.B);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = order[i];
        bt.pos[v] = i;
        commsched_node_memory nm = commsched_memory_node(m, v);
        /* Collectives are never passed: no level of theirs stops one. */
        la[i] = cs_is_collective(g, v) ? CS_SEG_LOW : nm.post_alloc - nm.size_alloc;
        lb[i] = cs_is_collective(g, v) ? CS_SEG_LOW : nm.post_alloc;
    }
    cs_segtree_build(&bt.A, NULL, n);
    cs_segtree_build(&bt.B, NULL, n);
    for (uint32_t b = 0; b < g->n_buffers; b++)
        bt.lu[b] = g->buffers[b].root == b ? commsched_memory_last_use(m, b)
                                           : COMMSCHED_NONE;
    uint32_t bar = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = order[i];
        if (!cs_is_collective(g, c))
            continue;
        bt.before[c] = i;
        if (cs_is_async(g, c) &&
            rise_batched(g, m, order, &bt, c, bar, limit) != 0) {
            batch_free(&bt);
            return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        }
        bar = bt.before[c];
        *moved |= bar != i;
    }
    /* Each collective right before the input position it rose to, after
     * those that rose there before it (they keep their order). */
    uint32_t k = 0, ci = 0; /* ci: the next collective to place */
    for (uint32_t i = 0; i <= n; i++) {
        for (; ci < n; ci++) {
            uint32_t c = order[ci];
            if (!cs_is_collective(g, c))
                continue;
            if (bt.before[c] != i)
                break; /* it goes later: the before[] rise along order */
            out[k++] = c;
        }
        if (i < n && !cs_is_collective(g, order[i]))
            out[k++] = order[i];
    }
    batch_free(&bt);
    assert(k == n);
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

/* Phase 2 one block ahead with no memory limit (the hand-written plan):
 * no swap is refused, and a wait passes waits there, so each wait sinks
 * to right before its first dependent after it (data, control or fake),
 * or to the end: one relink, where the swaps passed every node on the way
 * (quadratic on a chain, whose waits sink past the whole step). Which
 * dependent comes first needs no order structure: a wait's dependents
 * follow it in the input order, which the loop follows, so none of them
 * has moved yet, nor the wait itself, and their positions at the start
 * of the phase still compare them. O(V + E). */
static commsched_status sink_unlimited(cs_pass_ctx *ctx, commsched_schedule *s,
                                       const uint32_t *order, uint32_t n)
{
    const commsched_graph *g = ctx->g;
    uint32_t *pos = cs_malloc_array(n ? n : 1, sizeof *pos);
    if (!pos)
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    uint32_t k = 0;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v))
        pos[v] = k++;
    const cs_csr *rows[2] = {&g->users, &g->fake_users};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = order[i];
        if (!cs_is_wait(g, w))
            continue;
        uint32_t q = COMMSCHED_NONE; /* the end */
        for (int r = 0; r < 2; r++)
            for (uint32_t e = rows[r]->off[w]; e < rows[r]->off[w + 1]; e++) {
                uint32_t d = rows[r]->idx[e];
                if (pos[d] > pos[w] && (q == COMMSCHED_NONE || pos[d] < pos[q]))
                    q = d;
            }
        if (commsched_schedule_next(s, w) == q)
            continue;
        commsched_schedule_unlink(s, w);
        commsched_schedule_insert_before(s, w, q);
    }
    free(pos);
    return COMMSCHED_OK;
}

/* Verify mode: the swaps have ordered ctx->s; fast (n nodes) is what the
 * one-go version of `what` computed. EINTERNAL at the first difference. */
static commsched_status same_order(const cs_pass_ctx *ctx, const uint32_t *fast,
                                   const char *what)
{
    uint32_t k = 0;
    for (uint32_t v = commsched_schedule_first(ctx->s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(ctx->s, v), k++)
        if (fast[k] != v)
            return commsched_error_set(
                ctx->err, COMMSCHED_EINTERNAL, NULL,
                "simple_overlap: the %s placed %s at %u, the swaps %s", what,
                ctx->g->nodes[fast[k]].name, k, ctx->g->nodes[v].name);
    return COMMSCHED_OK;
}

/* Phase 2 unlimited, one block ahead. In verify mode it orders a copy,
 * the swaps order the schedule, and the two must agree. The tracker is
 * not read after phase 2, and is left behind the relinked order. */
static commsched_status sink_then_check(cs_pass_ctx *ctx, commsched_memory *m,
                                        const uint32_t *order, uint32_t n)
{
    if (!ctx->verify)
        return sink_unlimited(ctx, ctx->s, order, n);
    commsched_schedule *copy = NULL;
    uint32_t *fast = cs_malloc_array(n ? n : 1, sizeof *fast);
    commsched_status st =
        fast ? commsched_schedule_clone(ctx->s, &copy, ctx->err)
             : commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    if (st == COMMSCHED_OK)
        st = sink_unlimited(ctx, copy, order, n);
    if (st == COMMSCHED_OK)
        st = commsched_schedule_to_array(copy, fast, ctx->err);
    if (st == COMMSCHED_OK)
        st = sink_waits(ctx, m, order, n, INT64_MAX, 1);
    if (st == COMMSCHED_OK)
        st = same_order(ctx, fast, "unlimited sink");
    commsched_schedule_destroy(copy);
    free(fast);
    return st;
}

/* Phase 1 without one block ahead: the batched order relinked, the
 * tracker recomputed for phase 2. In verify mode the swaps themselves run
 * (they keep the tracker exact move by move) and must leave the same
 * order. */
static commsched_status raise_then_check(cs_pass_ctx *ctx, commsched_memory *m,
                                         const uint32_t *order, uint32_t n,
                                         int64_t limit, rise *r)
{
    uint32_t *fast = cs_malloc_array(n ? n : 1, sizeof *fast);
    if (!fast)
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    int moved = 0;
    commsched_status st = raise_batched(ctx, m, order, n, limit, fast, &moved);
    if (st == COMMSCHED_OK && ctx->verify) {
        st = raise_collectives(ctx, m, order, n, limit, 0, r);
        if (st == COMMSCHED_OK)
            st = same_order(ctx, fast, "batched rise");
    } else if (st == COMMSCHED_OK && moved) {
        cs_relink(ctx->s, fast, n);
        st = commsched_memory_recompute(m, ctx->s, ctx->err);
    }
    free(fast);
    return st;
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
            /* an infinite budget is no limit, even over a peak of 0 (where
             * the product is NaN, which no cast may take) */
            double l = (double)peak * (1.0 + peak_budget);
            limit = isinf(peak_budget) || !(l < 9.2e18) ? INT64_MAX
                                                         : (int64_t)l;
        }
        if (one_block_ahead)
            st = raise_collectives(ctx, m, order, n, limit, 1, &r);
        else
            st = raise_then_check(ctx, m, order, n, limit, &r);
        if (st == COMMSCHED_OK)
            st = one_block_ahead && limit == INT64_MAX
                     ? sink_then_check(ctx, m, order, n)
                     : sink_waits(ctx, m, order, n, limit, one_block_ahead);
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
