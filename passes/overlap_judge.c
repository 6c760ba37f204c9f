/* commsched — what an order costs, as overlap judges its candidates (map:
 * overlap.c): the simulator's makespan, the per-step peak and the peak
 * over simulated time, from the simulator itself or replayed on the pass's
 * flat arrays; and whether an order keeps the fake edges as the pass
 * reads them. */
#include "overlap_internal.h"

#include <stdlib.h>
#include <string.h>

commsched_status cs_ov_check_fake_edges(const commsched_graph *g,
                                        const uint32_t *order, int *kept,
                                        commsched_error *err)
{
    uint32_t n = g->n_nodes, late = NONE, early = NONE;
    uint32_t *pos = cs_malloc_array(n ? n : 1, sizeof *pos);
    if (!pos)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t i = 0; i < n; i++)
        pos[order[i]] = i;
    for (uint32_t v = 0; v < n && late == NONE; v++)
        for (uint32_t e = g->after_fake.off[v];
             e < g->after_fake.off[v + 1] && late == NONE; e++) {
            uint32_t d = g->after_fake.idx[e];
            if (!ov_fake_to_wait(g, v, d)) {
                if (pos[d] > pos[v])
                    late = d, early = v;
                continue;
            }
            for (uint32_t r = g->reads.off[d]; r < g->reads.off[d + 1]; r++) {
                uint32_t pr = g->buffers[g->reads.idx[r]].producer;
                if (pr != NONE && pr != v &&
                    g->nodes[pr].kind == COMMSCHED_NODE_COLLECTIVE &&
                    pos[pr] > pos[v])
                    late = pr, early = v;
            }
        }
    free(pos);
    *kept = late == NONE;
    if (late == NONE || !err)
        return COMMSCHED_OK;
    return commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                               "overlap: \"%s\" runs before \"%s\", which a "
                               "fake edge puts first",
                               g->nodes[early].name, g->nodes[late].name);
}

commsched_status cs_ov_judge(commsched_sim *sim, const uint32_t *order,
                             const double *rt, ov_price *out,
                             commsched_error *err)
{
    commsched_status st = commsched_sim_run(sim, order, rt, NULL, err);
    if (st != COMMSCHED_OK)
        return st;
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    out->ms = t->makespan_ns;
    out->pk = t->peak_memory_step;
    out->tpk = t->peak_memory;
    return COMMSCHED_OK;
}

/* A stream's next event in the merge (as the simulator keys them: time,
 * then position, an allocation at a node's start before its frees at its
 * end); v is the stream. */
static cs_heap_item event_at(const ov_run *S, const uint32_t *pos, uint32_t v,
                             int phase, uint32_t stream)
{
    cs_heap_item x = {0, phase ? S->cend[v] : S->tstart[v],
                      (uint64_t)pos[v] << 1 | (uint64_t)phase, stream};
    return x;
}

/* The peak over simulated time of the order just replayed (each node's
 * start in tstart, its end in cend, position k of order[k]): the
 * simulator's curve (src/model/simulate.c, "memory over simulated time"),
 * its events in the same order. Scratch: stk (positions), unmet (the
 * streams' links), tlast (each tracked buffer's last reader in time).
 * Returns 0, or 1 when the levels pass 2^63 bytes. */
static int time_peak(ov_run *S, const uint32_t *order, int64_t *out)
{
    const ov_base *b = S->b;
    uint32_t n = b->n, ns = b->n_streams + 1;
    uint32_t *last = S->tlast, *next = S->unmet, *pos = S->stk;
    /* Each tracked buffer is freed at the end of its reader that ends
     * last (the later position on a tie: order is walked forward). */
    for (uint32_t x = 0; x < b->n_tracked; x++)
        last[x] = NONE;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        pos[v] = k;
        S->tfree[v] = b->unread_free[v];
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (last[x] == NONE || !(S->cend[v] < S->cend[last[x]]))
                last[x] = v;
        }
    }
    int overflow = 0;
    for (uint32_t x = 0; x < b->n_tracked; x++)
        if (last[x] != NONE)
            overflow |= cs_add_i64(&S->tfree[last[x]], b->bsize[x]);
    /* The streams' sequences in order, linked back to front: compute
     * (with waits and sync collectives) first, then one per group. */
    for (uint32_t s = 0; s < ns; s++)
        S->thead[s] = NONE;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = order[k];
        uint32_t s = b->cls[v] == C_COLL ? 1 + ov_stream(b, v) : 0;
        next[v] = S->thead[s];
        S->thead[s] = v;
    }
    cs_heap *h = &S->ev;
    h->n = 0;
    for (uint32_t s = 0; s < ns; s++)
        if (S->thead[s] != NONE)
            h->a[h->n++] = event_at(S, pos, S->thead[s], 0, s);
    cs_heap_make(h);
    int64_t cur = b->baseline, peak = cur;
    while (h->n > 0 && !overflow) {
        uint32_t s = (uint32_t)h->a[0].v;
        uint32_t v = S->thead[s];
        if ((h->a[0].k3 & 1) == 0) {
            overflow |= cs_add_i64(&cur, b->alloc[v]);
            cs_heap_replace_top(h, event_at(S, pos, v, 1, s));
        } else {
            cur -= S->tfree[v];
            S->thead[s] = next[v];
            if (next[v] == NONE)
                cs_heap_pop(h);
            else
                cs_heap_replace_top(h, event_at(S, pos, next[v], 0, s));
        }
        if (cur > peak)
            peak = cur;
    }
    *out = peak;
    return overflow;
}

int cs_ov_replay(ov_run *S, const uint32_t *order, ov_price *out)
{
    const ov_base *b = S->b;
    memcpy(S->rem, b->nreaders, (size_t)b->n_tracked * sizeof *S->rem);
    for (uint32_t s = 0; s < b->n_streams; s++)
        S->sf[s] = 0;
    cs_clock clk = {0.0, S->sf};
    int64_t cur = b->baseline, pk = cur;
    int overflow = 0, timed = b->time_peak;
    for (uint32_t k = 0; k < b->n; k++) {
        uint32_t v = order[k];
        int64_t fr = b->unread_free[v];
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (--S->rem[x] == 0)
                fr += b->bsize[x];
        }
        int64_t level = cs_mem_step(&cur, b->alloc[v], fr, &overflow);
        if (level > pk)
            pk = level;
        double r = b->rt[v], start;
        switch (b->cls[v]) {
        case C_COMPUTE:
            start = cs_clock_compute(&clk, r);
            if (timed)
                S->cend[v] = clk.now;
            break;
        case C_COLL:
        case C_SYNC:
            start = cs_clock_collective(&clk, ov_stream(b, v), r,
                                        b->cls[v] == C_SYNC);
            S->cend[v] = start + r;
            break;
        default: { /* wait */
            double e = clk.now;
            for (uint32_t x = b->wcoll.off[v]; x < b->wcoll.off[v + 1]; x++)
                if (S->cend[b->wcoll.idx[x]] > e)
                    e = S->cend[b->wcoll.idx[x]];
            start = cs_clock_wait(&clk, e, r);
            if (timed)
                S->cend[v] = clk.now;
            break;
        }
        }
        if (timed)
            S->tstart[v] = start;
    }
    out->ms = cs_clock_makespan(&clk, b->n_streams);
    out->pk = pk;
    out->tpk = 0;
    if (timed && !overflow)
        overflow = time_peak(S, order, &out->tpk);
    return overflow;
}

commsched_status cs_ov_price(cs_pass_ctx *ctx, ov_run *S, commsched_sim **sim,
                             const uint32_t *order, const char *name,
                             ov_price *out, commsched_error *err)
{
    if (cs_ov_replay(S, order, out) == 0 && !ctx->verify)
        return COMMSCHED_OK;
    ov_price p;
    commsched_status st;
    if ((!*sim && (st = commsched_sim_create(ctx->g, sim, err)) !=
                      COMMSCHED_OK) ||
        (st = cs_ov_judge(*sim, order, ctx->runtime_ns, &p, err)) !=
            COMMSCHED_OK)
        return st;
    if (!S->b->time_peak)
        p.tpk = 0;
    if (p.ms != out->ms || p.pk != out->pk || p.tpk != out->tpk)
        return commsched_error_set(
            err, COMMSCHED_EINTERNAL, NULL,
            "overlap: %s replayed at %.17g ns, peaks %lld per step and %lld "
            "in time; the simulator says %.17g ns, %lld and %lld",
            name, out->ms, (long long)out->pk, (long long)out->tpk, p.ms,
            (long long)p.pk, (long long)p.tpk);
    return COMMSCHED_OK;
}
