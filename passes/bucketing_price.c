/* commsched — pricing a bucketing merge over flat arrays: the placement of
 * the merged graph's nodes (a stable topological sort by key) and its peak
 * memory and simulated step, with the memory model's and the simulator's
 * arithmetic (kernel.h), without building the graph (passes/bucketing.c
 * says what a merge is and why it is priced). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "bucketing_internal.h"
#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/simulate.h"
#include "kernel.h"

flat cs_bk_flat_of(const bk_pass *p, const bucket *bk)
{
    int64_t in_sum = 0, out_sum = 0;
    int all_in_place = 1, wait_reads_in = 0;
    for (uint32_t i = 0; i < bk->n; i++) {
        in_sum += bk_member(p, bk, i)->in_bytes;
        out_sum += bk_member(p, bk, i)->out_bytes;
        all_in_place &= bk_member(p, bk, i)->in_place;
        wait_reads_in |= bk_member(p, bk, i)->wait_reads_in;
    }
    flat f;
    f.out_alias = p->op == COMMSCHED_COLL_ALL_GATHER || all_in_place;
    f.wait_reads_in = wait_reads_in && !f.out_alias;
    f.copy_size = p->op == COMMSCHED_COLL_ALL_GATHER ? out_sum : in_sum;
    f.out_size = f.out_alias ? 0 : out_sum;
    f.copied = (double)in_sum;
    return f;
}


void cs_bk_placement_free(placement *pl)
{
    free(pl->vorder);
    free(pl->newidx);
    memset(pl, 0, sizeof *pl);
}

/* The placement's ready set, popped in (key, node) order as a heap of
 * them would pop it, but by position: a key's high half is a position of
 * the current order (1..n), and the sort meets nearly every node when the
 * scan reaches its position. A ready node at or after the scan waits in
 * its position's list (sorted: a bucket's nodes share one); one that
 * became ready behind the scan (a dependency placed it late: the
 * consumers a bucket's wait releases) goes into a heap, whose keys are all
 * below the lists'. Those could go at the front of the scan's own list in
 * the same order, but one list of many of them would be sorted by
 * insertion, quadratic; the heap keeps them O(log). Linear where the heap
 * of every ready node was O(V log V), most of a priced merge. */
typedef struct pos_queue {
    const uint64_t *key;
    uint32_t *head; /* per position 0..n: its list, NONE for empty */
    uint32_t *next; /* per node: the next in its position's list */
    uint32_t cur;   /* positions below it have empty lists */
    uint32_t n;     /* the last position */
    cs_heap late;   /* ready nodes whose position is below cur */
} pos_queue;

static int pq_before(const pos_queue *q, uint32_t a, uint32_t b)
{
    return q->key[a] != q->key[b] ? q->key[a] < q->key[b] : a < b;
}

static void pq_push(pos_queue *q, uint32_t v)
{
    uint32_t at = (uint32_t)(q->key[v] >> 32);
    assert(at <= q->n);
    if (at < q->cur) {
        bk_push_node(&q->late, q->key[v], v);
        return;
    }
    uint32_t *link = &q->head[at];
    while (*link != COMMSCHED_NONE && pq_before(q, *link, v))
        link = &q->next[*link];
    q->next[v] = *link;
    *link = v;
}

/* The smallest ready node; the caller knows one is ready. */
static uint32_t pq_pop(pos_queue *q)
{
    if (q->late.n > 0)
        return cs_heap_pop(&q->late).v;
    while (q->head[q->cur] == COMMSCHED_NONE)
        q->cur++;
    uint32_t v = q->head[q->cur];
    q->head[q->cur] = q->next[v];
    return v;
}

commsched_status cs_bk_place(bk_pass *p, const bucket *extra,
                              placement *pl)
{
    const commsched_graph *g = p->g;
    commsched_error *err = p->ctx->err;
    uint32_t n = p->n;
    size_t nb = p->n_bk + (extra ? 1 : 0);
    size_t V = (size_t)n + 3 * nb, removed = 0;
    commsched_status st = COMMSCHED_OK;
    uint32_t *rows = NULL, *vals = NULL, *indeg = NULL;
    uint64_t *key = NULL;
    cs_csr users = {0};
    pos_queue q = {0};
    memset(pl, 0, sizeof *pl);
    pl->nb = nb;
    pl->V = V;
    if (V >= UINT32_MAX)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "bucketing: too many nodes");
    size_t m = g->deps.off[n] + 2 * nb;
    for (size_t bi = 0; bi < nb; bi++) {
        const bucket *bk = bk_bucket_at(p, extra, bi);
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            m += 1 + CS_ROW_LEN(g->after, c->coll) +
                 CS_ROW_LEN(g->after, c->wait);
        }
        removed += 2 * (size_t)bk->n;
    }
    rows = cs_malloc_array(m ? m : 1, sizeof *rows);
    vals = cs_malloc_array(m ? m : 1, sizeof *vals);
    indeg = cs_calloc(V, sizeof *indeg);
    key = cs_malloc_array(V, sizeof *key);
    pl->newidx = cs_malloc_array(V, sizeof *pl->newidx);
    pl->vorder = cs_malloc_array(V, sizeof *pl->vorder);
    q.head = cs_malloc_array((size_t)n + 1, sizeof *q.head);
    q.next = cs_malloc_array(V, sizeof *q.next);
    int heap_failed = cs_heap_reserve(&q.late, V) != 0;
    if (!rows || !vals || !indeg || !key || !pl->newidx || !pl->vorder ||
        !q.head || !q.next || heap_failed)
        goto oom;
    for (uint32_t i = 0; i <= n; i++)
        q.head[i] = COMMSCHED_NONE;
    q.key = key;
    q.n = n;
    size_t k = 0;
    for (uint32_t v = 0; v < n; v++) {
        key[v] = (uint64_t)(p->pos[v] + 1) << 32;
        if (p->vmap[v] != v)
            continue;
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            rows[k] = p->vmap[g->deps.idx[e]];
            vals[k++] = v;
        }
    }
    for (size_t bi = 0; bi < nb; bi++) {
        const bucket *bk = bk_bucket_at(p, extra, bi);
        uint32_t cp = (uint32_t)(n + 3 * bi), co = cp + 1, wa = cp + 2;
        /* A bucket depends only on buckets whose waits come earlier, so
         * their keys are known here. */
        uint64_t at = UINT64_MAX, wait_at = UINT64_MAX;
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            uint64_t a = (uint64_t)(p->pos[c->coll] + 1);
            uint64_t w = (uint64_t)(p->pos[c->wait] + 1);
            at = a < at ? a : at;
            wait_at = w < wait_at ? w : wait_at;
        }
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            uint32_t pr = g->buffers[c->in].producer;
            if (pr != COMMSCHED_NONE) {
                rows[k] = p->vmap[pr];
                vals[k++] = cp;
                if (key[p->vmap[pr]] >> 32 > at)
                    at = key[p->vmap[pr]] >> 32;
            }
            for (uint32_t e = g->after.off[c->coll];
                 e < g->after.off[c->coll + 1]; e++) {
                uint32_t d = p->vmap[g->after.idx[e]];
                rows[k] = d;
                vals[k++] = co;
                if (key[d] >> 32 > at)
                    at = key[d] >> 32;
            }
            for (uint32_t e = g->after.off[c->wait];
                 e < g->after.off[c->wait + 1]; e++) {
                uint32_t d = p->vmap[g->after.idx[e]];
                if (d == co || d == wa)
                    continue;
                rows[k] = d;
                vals[k++] = wa;
            }
        }
        rows[k] = cp;
        vals[k++] = co;
        rows[k] = co;
        vals[k++] = wa;
        key[cp] = at << 32 | (uint64_t)(1 + 2 * bi);
        key[co] = at << 32 | (uint64_t)(2 + 2 * bi);
        key[wa] = wait_at << 32;
    }
    if (cs_csr_from_pairs(&users, (uint32_t)V, rows, vals, k) != 0)
        goto oom;
    for (size_t e = 0; e < k; e++)
        indeg[vals[e]]++;
    /* In decreasing order: a position's list then mostly takes each at
     * its head (the order of pushes does not change the pops). */
    size_t ready = 0;
    for (uint32_t v = (uint32_t)V; v-- > 0;)
        if ((v >= n || p->vmap[v] == v) && indeg[v] == 0) {
            pq_push(&q, v);
            ready++;
        }
    while (ready > 0) {
        uint32_t v = pq_pop(&q);
        ready--;
        assert(pl->placed < V - removed); /* each node once */
        pl->newidx[v] = pl->placed;
        pl->vorder[pl->placed++] = v;
        for (uint32_t e = users.off[v]; e < users.off[v + 1]; e++)
            if (--indeg[users.idx[e]] == 0) {
                pq_push(&q, users.idx[e]);
                ready++;
            }
    }
    if (pl->placed != V - removed)
        st = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                 "bucketing: the merged graph has a "
                                 "dependency cycle");
    goto cleanup;
oom:
    st = bk_oom(err);
cleanup:
    cs_csr_free(&users);
    free(rows);
    free(vals);
    free(indeg);
    free(key);
    free(q.head);
    free(q.next);
    cs_heap_fini(&q.late);
    if (st != COMMSCHED_OK)
        cs_bk_placement_free(pl);
    return st;
}

/* ---- pricing a merge ------------------------------------------------------- */

/* Peak memory of a graph in its own order, and (makespan not NULL) the
 * simulated step, with the library's own memory model and simulator. */
commsched_status cs_bk_price(const commsched_graph *g, const uint32_t *order,
                              const double *runtime, int64_t *peak,
                              double *makespan, commsched_error *err)
{
    commsched_schedule *s = NULL;
    commsched_memory *mem = NULL;
    commsched_sim *sim = NULL;
    commsched_status st = commsched_schedule_create(g, order, &s, err);
    if (st == COMMSCHED_OK)
        st = commsched_memory_create(s, &mem, err);
    if (st == COMMSCHED_OK)
        *peak = commsched_memory_peak(mem, s, NULL);
    if (st == COMMSCHED_OK && makespan) {
        commsched_sim_options so;
        commsched_sim_options_init(&so);
        so.flags = 0; /* the timeline is all we need */
        if ((st = commsched_sim_create(g, &sim, err)) == COMMSCHED_OK &&
            (st = commsched_sim_run(sim, order, runtime, &so, err)) ==
                COMMSCHED_OK)
            *makespan = commsched_sim_get_totals(sim)->makespan_ns;
    }
    commsched_sim_destroy(sim);
    commsched_memory_destroy(mem);
    commsched_schedule_destroy(s);
    return st;
}

/* The new nodes' runtimes exactly as commsched_cost_node prices the nodes
 * materialize writes: the copy-in from its bytes (flops absent), the
 * collective from the larger of its root input and output. */
commsched_status cs_bk_new_runtimes(const bk_pass *p, const bucket *bk,
                                    const flat *f, double *copy, double *coll)
{
    const commsched_cost_options *o = p->ctx->cost;
    const cs_group *gr = &p->g->groups[p->g->nodes[bk_member(p, bk, 0)->coll].group];
    double in = (double)f->copy_size;
    double out = f->out_alias ? in : (double)f->out_size;
    commsched_coll_cost cc;
    commsched_status st = commsched_cost_collective(
        o->device, o->comm_model, p->op, in > out ? in : out, gr->size,
        gr->hosts, &cc, p->ctx->err);
    *copy = commsched_cost_compute(o->device, -1.0, 2.0 * f->copied, NULL);
    *coll = cc.time_ns;
    return st;
}

/* Buffer x's root in the merged graph: the flat buffer of the first
 * bucketed member whose output is on x's alias chain (a chain runs through
 * several outputs only across in-place collectives), else its root. */
uint32_t cs_bk_new_root(const bk_pass *p, const flat *fl, uint32_t x)
{
    uint32_t c = p->via[x];
    while (c != COMMSCHED_NONE && p->cand_bucket[c] == COMMSCHED_NONE)
        c = p->cands[c].in_place ? p->via[p->cands[c].in] : COMMSCHED_NONE;
    if (c == COMMSCHED_NONE)
        return p->g->buffers[x].root;
    uint32_t bi = p->cand_bucket[c];
    return (uint32_t)(p->g->n_buffers + 2 * (size_t)bi +
                      (fl[bi].out_alias ? 0 : 1));
}

void cs_bk_step(const bk_pass *p, const bucket *extra, cs_clock *clk,
                uint32_t v, double r, double *end)
{
    const commsched_graph *g = p->g;
    uint32_t n = p->n;
    const cs_node *nd = v < n ? &g->nodes[v] : NULL;
    int kind = nd ? nd->kind
               : (v - n) % 3 == 0 ? COMMSCHED_NODE_COMPUTE
               : (v - n) % 3 == 1 ? COMMSCHED_NODE_COLLECTIVE
                                  : COMMSCHED_NODE_WAIT;
    if (kind == COMMSCHED_NODE_COMPUTE) {
        cs_clock_compute(clk, r);
    } else if (kind == COMMSCHED_NODE_COLLECTIVE) {
        uint32_t grp =
            nd ? nd->group
               : g->nodes[bk_member(p, bk_bucket_at(p, extra, (v - n) / 3), 0)
                              ->coll]
                     .group;
        end[v] = cs_clock_collective(clk, grp, r, nd && nd->is_sync) + r;
    } else {
        double t = clk->now;
        if (nd) {
            CS_BK_FOR_WAITED(g, v, pr, {
                if (end[p->vmap[pr]] > t)
                    t = end[p->vmap[pr]];
            });
        } else if (end[v - 1] > t) {
            t = end[v - 1];
        }
        cs_clock_wait(clk, t, r);
    }
}

/* The peak and the simulated step of the merged graph without building
 * it: the model's kernel (kernel.h: the memory step and the streams'
 * clocks, as the memory model and the simulator step through them, with
 * per-group comm streams) over the placement, so the figures are
 * identical; verify mode compares them with the real ones for every merge
 * priced. Buckets must be mapped. */
commsched_status cs_bk_virtual_price(bk_pass *p, const bucket *extra,
                                      const placement *pl, int64_t *peak_out,
                                      double *makespan_out)
{
    const commsched_graph *g = p->g;
    uint32_t n = p->n, nbuf = g->n_buffers;
    size_t nb = pl->nb, NB = (size_t)nbuf + 2 * nb;
    commsched_status st = COMMSCHED_OK;
    flat *fl = cs_malloc_array(nb + 1, sizeof *fl);
    double *rt_new = cs_malloc_array(2 * nb + 1, sizeof *rt_new);
    uint32_t *last = cs_malloc_array(NB, sizeof *last);
    uint8_t *keep = cs_calloc(NB, 1);
    int64_t *alloc = cs_calloc(pl->placed + 1, sizeof *alloc);
    int64_t *fr = cs_calloc(pl->placed + 1, sizeof *fr);
    double *coll_end = NULL, *stream_free = NULL;
    if (!fl || !rt_new || !last || !keep || !alloc || !fr)
        goto oom;
    for (size_t bi = 0; bi < nb; bi++) {
        fl[bi] = cs_bk_flat_of(p, bk_bucket_at(p, extra, bi));
        if ((st = cs_bk_new_runtimes(p, bk_bucket_at(p, extra, bi), &fl[bi],
                                      &rt_new[2 * bi], &rt_new[2 * bi + 1])) !=
            COMMSCHED_OK)
            goto cleanup;
    }
#define FLAT_ROOT(bi) ((uint32_t)(nbuf + 2 * (bi) + (fl[bi].out_alias ? 0 : 1)))
#define NEW_ROOT(x) cs_bk_new_root(p, fl, x)

    /* Last reader of every root, and what each position allocates. */
    for (size_t i = 0; i < NB; i++)
        last[i] = COMMSCHED_NONE;
    for (uint32_t k = 0; k < pl->placed; k++) {
        uint32_t v = pl->vorder[k];
        if (v < n) {
            for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++)
                last[NEW_ROOT(g->reads.idx[e])] = k;
            continue;
        }
        size_t bi = (v - n) / 3;
        const bucket *bk = bk_bucket_at(p, extra, bi);
        switch ((v - n) % 3) {
        case 0:
            for (uint32_t i = 0; i < bk->n; i++)
                last[NEW_ROOT(bk_member(p, bk, i)->in)] = k;
            alloc[k] += fl[bi].copy_size;
            break;
        case 1:
            last[nbuf + 2 * bi] = k;
            alloc[k] += fl[bi].out_size;
            break;
        default:
            last[FLAT_ROOT(bi)] = k;
            if (fl[bi].wait_reads_in)
                last[nbuf + 2 * bi] = k;
            break;
        }
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        keep[NEW_ROOT(g->outputs[i])] = 1;

    int64_t base = 0;
    for (uint32_t b = 0; b < nbuf; b++) {
        const cs_buffer *x = &g->buffers[b];
        if (x->alias_of != COMMSCHED_NONE ||
            (p->via[b] != COMMSCHED_NONE &&
             p->cand_bucket[p->via[b]] != COMMSCHED_NONE))
            continue; /* an alias, or a member's output: gone */
        uint32_t at;
        if (x->is_input) {
            if (!x->freeable || last[b] == COMMSCHED_NONE)
                continue;
            base += x->size;
            at = COMMSCHED_NONE;
        } else {
            at = pl->newidx[p->vmap[x->producer]];
            alloc[at] += x->size;
        }
        if (!keep[b])
            fr[last[b] != COMMSCHED_NONE ? last[b] : at] += x->size;
    }
    for (size_t bi = 0; bi < nb; bi++) {
        uint32_t in = (uint32_t)(nbuf + 2 * bi);
        if (!keep[in])
            fr[last[in]] += fl[bi].copy_size;
        if (!fl[bi].out_alias && !keep[in + 1])
            fr[last[in + 1]] += fl[bi].out_size;
    }
    int64_t cur = base, peak = base;
    int overflow = 0; /* the builder's limits keep sums far from 2^63 */
    for (uint32_t k = 0; k < pl->placed; k++) {
        int64_t level = cs_mem_step(&cur, alloc[k], fr[k], &overflow);
        if (level > peak)
            peak = level;
    }
    *peak_out = peak;

    if (makespan_out) {
        const double *rt = p->ctx->runtime_ns;
        coll_end = cs_malloc_array(pl->V, sizeof *coll_end);
        stream_free = cs_calloc(g->n_groups + 1, sizeof *stream_free);
        if (!coll_end || !stream_free)
            goto oom;
        cs_clock clk = {0.0, stream_free};
        for (uint32_t k = 0; k < pl->placed; k++) {
            uint32_t v = pl->vorder[k];
            double r = v < n ? rt[v]
                       : (v - n) % 3 == 2 ? 0.0
                                          : rt_new[2 * ((v - n) / 3) + ((v - n) % 3)];
            cs_bk_step(p, extra, &clk, v, r, coll_end);
        }
        *makespan_out = cs_clock_makespan(&clk, g->n_groups);
    }
#undef NEW_ROOT
#undef FLAT_ROOT
    goto cleanup;
oom:
    st = bk_oom(p->ctx->err);
cleanup:
    free(fl);
    free(rt_new);
    free(last);
    free(keep);
    free(alloc);
    free(fr);
    free(coll_end);
    free(stream_free);
    return st;
}
