/* commsched — raise_comms, sink_waits, reorder_compute_for_overlap: the
 * seed's heap list scheduler _schedule_for_comm.
 *
 * Every ready node is ranked by (score0, score1, score2), smallest first:
 *   score0  raise_comms: a collective's own index among the collectives in
 *           the current order; any other node the smallest such index among
 *           the collectives it reaches over any edge (fake included);
 *           otherwise "infinity";
 *   score1  sink_waits: 1 for a wait, else 0;
 *   score2  the node's position in the current order.
 * Readiness counts every dependency, fake ones included.
 *
 * score0 comes from one reverse sweep over the graph's node order (always a
 * topological order of data, control and fake edges), never from
 * per-collective ancestor walks. With reorder_for_overlap, popping a
 * collective schedules it and then the best ready compute nodes (neither
 * collective nor wait) while its cost is not used up. Two ready sets —
 * compute nodes and the rest — make "the best ready compute node" cheap
 * instead of the seed's scan of the ready list; the popped order is the
 * same. The keys are distinct, so each set is a set of ranks (rankset.h:
 * the keys sorted once; a pop is a few word operations where a binary
 * heap sifted through log2 n levels, 345 instructions a pop on a
 * 33K-node step). */
#include <stdlib.h>
#include <string.h>

#include <assert.h>

#include "passes_internal.h"
#include "rankset.h"

typedef struct sched_state {
    const commsched_graph *g;
    uint32_t *rank, *at; /* node -> rank of its (s0, s1, s2), and back */
    uint32_t *unmet;     /* dependencies not yet scheduled (distinct) */
    uint32_t *stamp;     /* scratch for de-duplicating users */
    cs_rankset *compute, *other; /* the ready nodes, by rank */
    uint32_t *order;
    uint32_t n_order;
} sched_state;

static int is_compute(const commsched_graph *g, uint32_t v)
{
    return !cs_is_collective(g, v) && !cs_is_wait(g, v);
}

static void make_ready(sched_state *st, uint32_t v)
{
    cs_rankset_add(is_compute(st->g, v) ? st->compute : st->other,
                   st->rank[v]);
}

/* Takes the least-ranked ready node out of set s (not empty). */
static uint32_t pop(sched_state *st, cs_rankset *s)
{
    uint32_t r = cs_rankset_next(s, 0);
    assert(r != UINT32_MAX);
    cs_rankset_remove(s, r);
    return st->at[r];
}

/* Appends v to the order and releases the nodes waiting only on it. A user
 * reached over both a real and a fake edge is released once. */
static void schedule_node(sched_state *st, uint32_t v)
{
    const commsched_graph *g = st->g;
    st->order[st->n_order++] = v;
    const cs_csr *rows[2] = {&g->users, &g->fake_users};
    for (int r = 0; r < 2; r++)
        for (uint32_t k = rows[r]->off[v]; k < rows[r]->off[v + 1]; k++) {
            uint32_t u = rows[r]->idx[k];
            if (st->stamp[u] == v + 1)
                continue;
            st->stamp[u] = v + 1;
            if (--st->unmet[u] == 0)
                make_ready(st, u);
        }
}

/* Distinct dependencies of v over real and fake edges. */
static uint32_t count_deps(const commsched_graph *g, uint32_t v,
                           uint32_t *stamp)
{
    uint32_t n = CS_ROW_LEN(g->deps, v);
    for (uint32_t k = g->deps.off[v]; k < g->deps.off[v + 1]; k++)
        stamp[g->deps.idx[k]] = v + 1;
    for (uint32_t k = g->after_fake.off[v]; k < g->after_fake.off[v + 1];
         k++) {
        uint32_t d = g->after_fake.idx[k];
        if (stamp[d] != v + 1) {
            stamp[d] = v + 1;
            n++;
        }
    }
    return n;
}

/* Kahn's algorithm over data, control and fake edges. The graph's node
 * indices are topological for the edges it was loaded with, but
 * decide_global_ordering_of_comms adds fake edges in schedule order. Done
 * here rather than through igraph because passes may run in parallel
 * threads (tune) and the Debian igraph is not thread-safe. unmet and stamp
 * are scratch of n entries; stamp must be all zero and is left so.
 * Returns how many nodes it ordered (fewer than n only on a cycle). */
static uint32_t topo_order(const commsched_graph *g, uint32_t *order,
                           uint32_t *unmet, uint32_t *stamp)
{
    uint32_t n = g->n_nodes, head = 0, tail = 0;
    for (uint32_t v = 0; v < n; v++) {
        unmet[v] = count_deps(g, v, stamp);
        if (unmet[v] == 0)
            order[tail++] = v;
    }
    memset(stamp, 0, (size_t)n * sizeof *stamp);
    while (head < tail) {
        uint32_t v = order[head++];
        const cs_csr *rows[2] = {&g->users, &g->fake_users};
        for (int r = 0; r < 2; r++)
            for (uint32_t k = rows[r]->off[v]; k < rows[r]->off[v + 1]; k++) {
                uint32_t u = rows[r]->idx[k];
                if (stamp[u] == v + 1)
                    continue;
                stamp[u] = v + 1;
                if (--unmet[u] == 0)
                    order[tail++] = u;
            }
    }
    memset(stamp, 0, (size_t)n * sizeof *stamp);
    return tail;
}

int cs_heap_scratch_init(cs_heap_scratch *h, uint32_t n)
{
    size_t nn = n ? n : 1;
    memset(h, 0, sizeof *h);
    h->n = n;
    h->rank = cs_malloc_array(nn, sizeof *h->rank);
    h->at = cs_malloc_array(nn, sizeof *h->at);
    h->unmet = cs_malloc_array(nn, sizeof *h->unmet);
    h->stamp = cs_malloc_array(nn, sizeof *h->stamp);
    h->reach = cs_malloc_array(nn, sizeof *h->reach);
    h->s0 = cs_malloc_array(nn, sizeof *h->s0);
    int sets_failed = cs_rankset_init(&h->compute, n) != 0 ||
                      cs_rankset_init(&h->other, n) != 0;
    if (sets_failed || !h->rank || !h->at || !h->unmet || !h->stamp ||
        !h->reach || !h->s0) {
        cs_heap_scratch_free(h);
        return -1;
    }
    return 0;
}

void cs_heap_scratch_free(cs_heap_scratch *h)
{
    free(h->rank);
    free(h->at);
    free(h->unmet);
    free(h->stamp);
    free(h->reach);
    free(h->s0);
    cs_rankset_free(&h->compute);
    cs_rankset_free(&h->other);
    memset(h, 0, sizeof *h);
}

commsched_status cs_heap_order(const commsched_graph *g, const uint32_t *in,
                               const double *runtime_ns, int raise_comms,
                               int sink_waits, int for_overlap, uint32_t *out,
                               cs_heap_scratch *scratch, commsched_error *err)
{
    uint32_t n = g->n_nodes;
    cs_heap_scratch own;
    cs_heap_scratch *h = scratch ? scratch : &own;
    if (!scratch && cs_heap_scratch_init(&own, n) != 0)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    assert(h->n == n);
    sched_state st;
    memset(&st, 0, sizeof st);
    st.g = g;
    st.rank = h->rank;
    st.at = h->at;
    st.unmet = h->unmet;
    st.stamp = h->stamp;
    memset(st.stamp, 0, (size_t)n * sizeof *st.stamp);
    st.compute = &h->compute;
    st.other = &h->other;
    cs_rankset_clear(st.compute);
    cs_rankset_clear(st.other);
    st.order = out;
    uint64_t *reach = h->reach, *s0 = h->s0;
    commsched_status rc = COMMSCHED_OK;

    /* each collective's index in the current order */
    const uint64_t inf = UINT64_MAX;
    uint32_t comm_idx = 0;
    for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t v = in[pos];
        s0[v] = inf;
        reach[v] = raise_comms && cs_is_collective(g, v) ? comm_idx++ : inf;
    }
    if (raise_comms) {
        /* reach[v] = min(own index, reach of every successor): the smallest
         * collective index at or below v, in one sweep over a reverse
         * topological order of data, control and fake edges. */
        uint32_t *topo = st.order; /* borrowed as scratch until scheduling */
        uint32_t n_topo = topo_order(g, topo, st.unmet, st.stamp);
        for (uint32_t i = n_topo; i-- > 0;) {
            uint32_t v = topo[i];
            uint64_t below = inf;
            const cs_csr *rows[2] = {&g->users, &g->fake_users};
            for (int r = 0; r < 2; r++)
                for (uint32_t k = rows[r]->off[v]; k < rows[r]->off[v + 1];
                     k++)
                    if (reach[rows[r]->idx[k]] < below)
                        below = reach[rows[r]->idx[k]];
            /* A collective keeps its own index (the seed assigns it last). */
            s0[v] = cs_is_collective(g, v) ? reach[v] : below;
            if (below < reach[v])
                reach[v] = below;
        }
    }
    /* The keys are distinct (score2 is the position), so the heaps of the
     * seed are sets of ranks: the nodes in position order, sorted stably
     * by (score0, score1) — score0 is a collective index (< n) or
     * "infinity" (n here). reach is free again: it holds that key. */
    for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t v = in[pos];
        reach[v] = (s0[v] < n ? s0[v] : n) << 1 |
                   (sink_waits && cs_is_wait(g, v) ? 1u : 0u);
        st.at[pos] = v;
    }
    cs_radix_sort(st.at, st.order, n, reach); /* order: scratch still */
    for (uint32_t r = 0; r < n; r++)
        st.rank[st.at[r]] = r;
    for (uint32_t v = 0; v < n; v++) {
        st.unmet[v] = count_deps(g, v, st.stamp);
    }
    memset(st.stamp, 0, (size_t)n * sizeof *st.stamp);
    for (uint32_t v = 0; v < n; v++)
        if (st.unmet[v] == 0)
            make_ready(&st, v);

    for (;;) {
        /* the least key of both sets (ranks are distinct; empty: MAX) */
        uint32_t rc_min = cs_rankset_next(st.compute, 0);
        uint32_t ro_min = cs_rankset_next(st.other, 0);
        if (rc_min == UINT32_MAX && ro_min == UINT32_MAX)
            break;
        uint32_t v = pop(&st, rc_min < ro_min ? st.compute : st.other);
        schedule_node(&st, v);
        if (for_overlap && cs_is_collective(g, v)) {
            double cost = runtime_ns[v];
            while (cost > 0 &&
                   cs_rankset_next(st.compute, 0) != UINT32_MAX) {
                uint32_t c = pop(&st, st.compute);
                schedule_node(&st, c);
                cost -= runtime_ns[c];
            }
        }
    }
    if (st.n_order != n)
        rc = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                 "heap scheduler placed %u of %u nodes",
                                 st.n_order, n);
    if (!scratch)
        cs_heap_scratch_free(&own);
    return rc;
}

static commsched_status schedule_for_comm(cs_pass_ctx *ctx, int raise_comms,
                                          int sink_waits, int for_overlap)
{
    uint32_t n = ctx->g->n_nodes;
    uint32_t *in = cs_malloc_array(n ? n : 1, sizeof *in);
    uint32_t *out = cs_malloc_array(n ? n : 1, sizeof *out);
    commsched_status rc;
    if (!in || !out)
        rc = commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                 "out of memory");
    else if ((rc = commsched_schedule_to_array(ctx->s, in, ctx->err)) ==
                 COMMSCHED_OK &&
             (rc = cs_heap_order(ctx->g, in, ctx->runtime_ns, raise_comms,
                                 sink_waits, for_overlap, out, NULL,
                                 ctx->err)) == COMMSCHED_OK)
        cs_relink(ctx->s, out, n);
    free(in);
    free(out);
    return rc;
}

commsched_status cs_pass_raise_comms(cs_pass_ctx *ctx)
{
    return schedule_for_comm(ctx, 1, 0, 0);
}

commsched_status cs_pass_sink_waits(cs_pass_ctx *ctx)
{
    return schedule_for_comm(ctx, 0, 1, 0);
}

commsched_status cs_pass_reorder_compute_for_overlap(cs_pass_ctx *ctx)
{
    return schedule_for_comm(ctx, 1, 1, 1);
}
