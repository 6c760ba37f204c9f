/* commsched — raise_comms, sink_waits, reorder_compute_for_overlap: the
 * seed's heap list scheduler _schedule_for_comm.
 *
 * Every ready node is ranked by (score0, score1, score2), smallest first:
 *   score0  raise_comms: a collective's own index among the collectives in
 *           the current order; any other node the smallest such index among
 *           the collectives it reaches over any edge (fake included);
 *           otherwise "infinity". Through a node whose outputs say what
 *           they are computed from (the format's "from": a fused kernel),
 *           a path goes on only from an input to the outputs made from it,
 *           as Inductor's ancestors follow the fused kernels' members;
 *           control, fake and in-place write edges are whole-node;
 *   score1  sink_waits: 1 for a wait, else 0;
 *   score2  the node's position in the current order.
 * Readiness counts every dependency, fake ones included.
 *
 * score0 comes from one reverse sweep over a topological order of data,
 * control and fake edges, never from per-collective ancestor walks: each
 * node, its users all seen, pushes what it reaches to the buffers it reads
 * and to the nodes it depends on otherwise. With reorder_for_overlap,
 * popping a collective schedules it and then the best ready compute nodes
 * (neither collective nor wait) while its cost is not used up. Two ready
 * sets — compute nodes and the rest — make "the best ready compute node"
 * cheap instead of the seed's scan of the ready list; the popped order is
 * the same. The keys are distinct, so each set is a set of ranks (rankset.h:
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

static void lower(uint64_t *x, uint64_t v)
{
    if (v < *x)
        *x = v;
}

/* score0 of every node into s0 (raise_comms): the smallest collective index
 * each node reaches, in one sweep over a reverse topological order of data,
 * control and fake edges. On entry s0[v] is v's own index if it is a
 * collective, else infinity. Once all of v's successors are done, v
 * reaches its own index, its outputs' (reach_buf[b]: the least index
 * reached from buffer b over its readers, by the name they list, as a
 * reader of an alias depends on the alias's producer) and what its
 * control successors pushed to reach[v] (after, the in-place write edges,
 * after_fake: whole-node edges). A collective, or a node whose outputs
 * carry no "from", pushes all of that to every buffer it reads and every
 * node it depends on otherwise. A node whose outputs carry a "from" pushes
 * to each input only what the outputs made from that input reach (plus,
 * to every input, its control successors' and its outputs' without a
 * "from"): a path through a fused kernel goes on only from the member it
 * enters by to the outputs that member feeds, as Inductor's ancestors are
 * its pre-fusion nodes'. Without any "from" this is the minimum over every
 * successor. O(nodes + reads + edges + from names). reach: n entries,
 * reach_buf: one per buffer; topo, unmet and stamp: scratch of n entries
 * (stamp all zero, and left so). */
static void reach_sweep(const commsched_graph *g, uint32_t *topo,
                        uint32_t *unmet, uint32_t *stamp, uint64_t *reach,
                        uint64_t *reach_buf, uint64_t *s0)
{
    const uint64_t inf = UINT64_MAX;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        reach[v] = inf;
    for (uint32_t b = 0; b < g->n_buffers; b++)
        reach_buf[b] = inf;
    uint32_t n_topo = topo_order(g, topo, unmet, stamp);
    const int any_from = g->from.off != NULL;
    for (uint32_t i = n_topo; i-- > 0;) {
        uint32_t v = topo[i];
        const cs_node *nd = &g->nodes[v];
        const int coll = cs_is_collective(g, v);
        /* below: what v's successors reach; whole: what each input of v
         * reaches through v when some outputs carry a "from" (its control
         * successors and its outputs without one) */
        uint64_t below = reach[v], whole = reach[v];
        int split = 0;
        for (uint32_t o = nd->out_first; o < nd->out_first + nd->n_out; o++) {
            lower(&below, reach_buf[o]);
            if (any_from && g->buffers[o].has_from && !coll)
                split = 1;
            else
                lower(&whole, reach_buf[o]);
        }
        /* A collective keeps its own index (the seed assigns it last). */
        uint64_t all = below;
        if (coll)
            lower(&all, s0[v]);
        else
            s0[v] = below;
        if (!split)
            whole = all;
        const cs_csr *ctl[3] = {&g->after, &g->derived, &g->after_fake};
        for (int c = 0; c < 3; c++)
            for (uint32_t k = ctl[c]->off[v]; k < ctl[c]->off[v + 1]; k++)
                lower(&reach[ctl[c]->idx[k]], all);
        for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++)
            lower(&reach_buf[g->reads.idx[k]], whole);
        if (split)
            for (uint32_t o = nd->out_first; o < nd->out_first + nd->n_out;
                 o++)
                if (g->buffers[o].has_from)
                    for (uint32_t k = g->from.off[o]; k < g->from.off[o + 1];
                         k++)
                        lower(&reach_buf[g->from.idx[k]], reach_buf[o]);
    }
}

int cs_heap_scratch_init(cs_heap_scratch *h, uint32_t n, uint32_t n_buffers)
{
    size_t nn = n ? n : 1;
    memset(h, 0, sizeof *h);
    h->n = n;
    h->n_buffers = n_buffers;
    h->reach_buf = cs_malloc_array(n_buffers ? n_buffers : 1,
                                   sizeof *h->reach_buf);
    h->rank = cs_malloc_array(nn, sizeof *h->rank);
    h->at = cs_malloc_array(nn, sizeof *h->at);
    h->unmet = cs_malloc_array(nn, sizeof *h->unmet);
    h->stamp = cs_malloc_array(nn, sizeof *h->stamp);
    h->reach = cs_malloc_array(nn, sizeof *h->reach);
    h->s0 = cs_malloc_array(nn, sizeof *h->s0);
    int sets_failed = cs_rankset_init(&h->compute, n) != 0 ||
                      cs_rankset_init(&h->other, n) != 0;
    if (sets_failed || !h->rank || !h->at || !h->unmet || !h->stamp ||
        !h->reach || !h->s0 || !h->reach_buf) {
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
    free(h->reach_buf);
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
    if (!scratch && cs_heap_scratch_init(&own, n, g->n_buffers) != 0)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    assert(h->n == n && h->n_buffers == g->n_buffers);
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
        s0[v] = raise_comms && cs_is_collective(g, v) ? comm_idx++ : inf;
    }
    if (raise_comms) /* order: borrowed as scratch until scheduling */
        reach_sweep(g, st.order, st.unmet, st.stamp, reach, h->reach_buf, s0);
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
