/* commsched — overlap's state (map: overlap.c): the ready sets' ranks and
 * bit sets, the segment tree the budget test reads, and what every
 * variant shares. */
#include "overlap_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- what every variant shares ----------------------------------------- */

void cs_ov_base_free(ov_base *b)
{
    cs_ov_base_trim(b);
    free(b->cls);
    free(b->pos_in);
    free(b->cix);
}

void cs_ov_base_trim(ov_base *b)
{
    free(b->stream);
    free(b->bytes);
    if (!(b->borrowed & 1))
        cs_csr_free(&b->deps);
    if (!(b->borrowed & 2))
        cs_csr_free(&b->users);
    cs_csr_free(&b->wcoll);
    if (!(b->borrowed & 4))
        cs_csr_free(&b->reads);
    free(b->bsize);
    free(b->nreaders);
    free(b->alloc);
    free(b->unread_free);
    free(b->topo);
    free(b->tpos);
    free(b->frank);
    free(b->fat);
    free(b->brank);
    free(b->bat);
    free(b->soff);
    free(b->gap_start);
    free(b->free_ref);
    for (int i = 0; i < 2; i++) {
        free(b->set[i].dom);
        free(b->set[i].prev);
        free(b->set[i].next);
        free(b->set[i].dup);
        free(b->set[i].crank); /* urank too: the same array */
        free(b->set[i].cat);
        free(b->set[i].uat);
    }
    /* What stays is cls, pos_in and cix; the rest reads as "not made". */
    uint8_t *cls = b->cls;
    uint32_t *pos_in = b->pos_in, *cix = b->cix, n_cs = b->n_cs;
    const commsched_graph *g = b->g;
    const double *rt = b->rt;
    uint32_t n = b->n;
    memset(b, 0, sizeof *b);
    b->g = g;
    b->rt = rt;
    b->n = n;
    b->cls = cls;
    b->pos_in = pos_in;
    b->cix = cix;
    b->n_cs = n_cs;
}

/* The memory model over `order` (docs/FORMAT.md "Memory model (in brief)", as src/memory.c computes
 * it): bytes freed after each node (fr). rem is scratch of one entry per
 * buffer. The levels (post_alloc per position) follow from fr and alloc;
 * each sweep writes them into its tree (cs_ov_sweep). Returns the peak. */
static int64_t mem_walk(const ov_base *b, const uint32_t *order,
                        uint32_t *rem, int64_t *fr)
{
    memcpy(rem, b->nreaders, (size_t)b->n_tracked * sizeof *rem);
    int64_t cur = b->baseline, peak = cur;
    for (uint32_t k = 0; k < b->n; k++) {
        uint32_t v = order[k];
        cur += b->alloc[v];
        if (cur > peak)
            peak = cur;
        int64_t f = b->unread_free[v];
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (--rem[x] == 0)
                f += b->bsize[x];
        }
        fr[v] = f;
        cur -= f;
    }
    return peak;
}

/* Kahn's algorithm over data, after and fake edges, smallest input
 * position first: the input order itself when it respects every edge. */
static int topo_closest(ov_base *b)
{
    uint32_t n = b->n;
    uint32_t *unmet = cs_malloc_array(n ? n : 1, sizeof *unmet);
    cs_heap h = {0};
    int rc = -1;
    if (!unmet)
        goto out;
    /* The common case: the input order respects every edge, and is T. */
    int input_ok = 1;
    for (uint32_t v = 0; v < n && input_ok; v++)
        for (uint32_t e = b->deps.off[v]; e < b->deps.off[v + 1]; e++)
            if (b->pos_in[b->deps.idx[e]] >= b->pos_in[v]) {
                input_ok = 0;
                break;
            }
    if (input_ok) {
        for (uint32_t v = 0; v < n; v++) {
            b->tpos[v] = b->pos_in[v];
            b->topo[b->pos_in[v]] = v;
        }
        rc = 0;
        goto out;
    }
    for (uint32_t v = 0; v < n; v++)
        unmet[v] = CS_ROW_LEN(b->deps, v);
    for (uint32_t v = 0; v < n; v++)
        if (unmet[v] == 0 &&
            cs_heap_push(&h, ov_key(0, b->pos_in[v], 0.0, v)) != 0)
            goto out;
    uint32_t k = 0;
    while (h.n > 0) {
        uint32_t v = cs_heap_pop(&h).v;
        b->tpos[v] = k;
        b->topo[k++] = v;
        for (uint32_t e = b->users.off[v]; e < b->users.off[v + 1]; e++) {
            uint32_t u = b->users.idx[e];
            if (--unmet[u] == 0 &&
                cs_heap_push(&h, ov_key(0, b->pos_in[u], 0.0, u)) != 0)
                goto out;
        }
    }
    rc = k == n ? 0 : 1;
out:
    free(unmet);
    cs_heap_fini(&h);
    return rc;
}

/* The critical-path rule's ranks (brank, bat): each node's bottom level,
 * its runtime plus the longest bottom level among its users, in one
 * reverse sweep over T. A ready node with a high bottom level is on the
 * step's critical chain and runs first; the rest (a layer's
 * weight-gradient matmuls) fills the compute stream only while that chain
 * waits on a collective, so what one window does not need is left for
 * the next instead of all going to the first. Returns 0, or -1 on OOM. */
static int crit_ranks(ov_base *b)
{
    uint32_t n = b->n, nf = b->n_frame ? b->n_frame : 1;
    double *bl = cs_malloc_array(n ? n : 1, sizeof *bl);
    uint64_t *key = cs_malloc_array(nf, sizeof *key);
    uint32_t *tmp = cs_malloc_array(nf, sizeof *tmp);
    b->brank = cs_malloc_array(n ? n : 1, sizeof *b->brank);
    b->bat = cs_malloc_array(nf, sizeof *b->bat);
    int rc = -1;
    if (!bl || !key || !tmp || !b->brank || !b->bat)
        goto out;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = b->topo[k];
        double m = 0.0;
        for (uint32_t e = b->users.off[v]; e < b->users.off[v + 1]; e++)
            if (bl[b->users.idx[e]] > m)
                m = bl[b->users.idx[e]];
        bl[v] = m + (b->cls[v] == C_WAIT ? 0.0 : b->rt[v]);
    }
    /* Highest bottom level first, then frame rank: a stable ascending
     * sort of the frame ranks by the complement of the level's bits (a
     * non-negative double's bits order as its value does; runtimes are
     * finite and >= 0, so the levels are). */
    for (uint32_t f = 0; f < b->n_frame; f++) {
        double x = bl[b->fat[f]];
        assert(x >= 0.0);
        key[f] = ~cs_radix_key(x);
        b->bat[f] = f;
    }
    cs_radix_sort(b->bat, tmp, b->n_frame, key);
    for (uint32_t r = 0; r < b->n_frame; r++) {
        uint32_t v = b->fat[b->bat[r]];
        b->bat[r] = v;
        b->brank[v] = r;
    }
    rc = 0;
out:
    free(bl);
    free(key);
    free(tmp);
    return rc;
}

/* Whether a and b, of `rows` rows each, hold the same rows. */
static int csr_same(const cs_csr *a, const cs_csr *b, uint32_t rows)
{
    size_t m = a->off[rows];
    return memcmp(a->off, b->off, ((size_t)rows + 1) * sizeof *a->off) == 0 &&
           (m == 0 || memcmp(a->idx, b->idx, m * sizeof *a->idx) == 0);
}

/* Replaces *own with the graph's table when the two are the same (bit
 * `bit` of b->borrowed then says it is not b's to free): a graph without
 * fake edges and without repeated dependencies has exactly the tables the
 * pass derives (deps, users, and reads where no buffer is untracked), ~9
 * MB each at 1M nodes, so they are not kept twice. */
static void borrow_same(ov_base *b, cs_csr *own, const cs_csr *graph_csr,
                        unsigned bit)
{
    if (!csr_same(own, graph_csr, b->n))
        return;
    cs_csr_free(own);
    *own = *graph_csr;
    b->borrowed |= bit;
}

/* Appends the edge "v after d" at rows/vals[k] unless v has it already
 * (stamp[d] == v + 1); returns the new count. */
static size_t add_dep(uint32_t *stamp, uint32_t *rows, uint32_t *vals,
                      size_t k, uint32_t v, uint32_t d)
{
    if (stamp[d] == v + 1)
        return k;
    stamp[d] = v + 1;
    rows[k] = v;
    vals[k] = d;
    return k + 1;
}

/* Whether the memory model frees buffer bu (nr readers) after its last
 * reader: a real buffer, not kept, read, and made by a node or a graph
 * input that may be freed. */
static int tracked(const cs_buffer *bu, uint32_t nr)
{
    return bu->alias_of == NONE && !bu->keep && nr > 0 &&
           (!bu->is_input || bu->freeable);
}

/* Builds everything but the collective-order edges. Returns 0, -1 on OOM,
 * 1 when the edges form a cycle. */
int cs_ov_base_init(ov_base *b, const commsched_graph *g,
                     const commsched_schedule *s, const double *rt)
{
    uint32_t n = g->n_nodes, nb = g->n_buffers;
    memset(b, 0, sizeof *b);
    b->g = g;
    b->n = n;
    b->rt = rt;
    b->n_streams = g->n_groups > 0 ? g->n_groups : 1;
    size_t nn = n ? n : 1;
    for (uint32_t v = 0; v < n; v++)
        b->n_cs += g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
    size_t ncs = b->n_cs ? b->n_cs : 1;
    b->cls = cs_malloc_array(nn, sizeof *b->cls);
    b->stream = cs_calloc(ncs, sizeof *b->stream);
    b->bytes = cs_calloc(ncs, sizeof *b->bytes);
    b->alloc = cs_calloc(nn, sizeof *b->alloc);
    b->unread_free = cs_calloc(nn, sizeof *b->unread_free);
    b->topo = cs_malloc_array(nn, sizeof *b->topo);
    b->tpos = cs_malloc_array(nn, sizeof *b->tpos);
    b->frank = cs_malloc_array(nn, sizeof *b->frank);
    b->fat = cs_malloc_array(nn, sizeof *b->fat);
    b->soff = cs_calloc((size_t)b->n_streams + 1, sizeof *b->soff);
    b->gap_start = cs_malloc_array(nn, sizeof *b->gap_start);
    b->free_ref = cs_malloc_array(nn, sizeof *b->free_ref);
    b->cix = cs_malloc_array(nn, sizeof *b->cix);
    b->pos_in = cs_malloc_array(nn, sizeof *b->pos_in);
    uint32_t *stamp = cs_calloc(nn, sizeof *stamp);
    uint32_t *rows = NULL, *vals = NULL, *rem = NULL;
    int rc = -1;
    if (!b->cls || !b->stream || !b->bytes ||
        !b->alloc || !b->unread_free || !b->topo || !b->tpos || !b->frank ||
        !b->fat || !b->soff ||
        !b->gap_start || !b->free_ref || !b->cix ||
        !b->pos_in || !stamp)
        goto out;

    uint32_t p = 0;
    for (uint32_t v = commsched_schedule_first(s); v != NONE;
         v = commsched_schedule_next(s, v))
        b->pos_in[v] = p++;
    uint32_t ci = 0;
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        b->cix[v] = NONE;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            b->cls[v] = nd->is_sync ? C_SYNC : C_COLL;
            b->cix[v] = ci;
            b->stream[ci] = nd->group < g->n_groups ? nd->group : 0;
            double by = commsched_cost_collective_bytes(g, v);
            b->bytes[ci++] = by > 0 ? (int64_t)by : 0;
        } else {
            b->cls[v] = nd->kind == COMMSCHED_NODE_WAIT ? C_WAIT : C_COMPUTE;
        }
        if (b->cls[v] == C_COLL) {
            b->soff[ov_stream(b, v) + 1]++;
            b->n_coll++;
        }
    }
    assert(ci == b->n_cs);
    for (uint32_t s2 = 0; s2 < b->n_streams; s2++)
        b->soff[s2 + 1] += b->soff[s2];

    /* deps: data + after + fake, distinct. A fake edge exists to keep the
     * collectives in one order on every rank, so one from a collective to
     * a wait binds it to the collectives that wait completes, not to the
     * wait: Inductor's wait mutates its collective's output, so the
     * WeakDep decide_global_ordering_of_comms puts on the previous
     * collective's buffer lands on the wait, and kept there it would forbid
     * issuing the next collective before the previous one is waited on
     * (torch's own FX scheduler, which runs before those deps exist, does
     * so). The collective is after those collectives through the wait
     * anyway, so the edge only gets weaker and no cycle appears. */
    size_t m = (size_t)g->deps.off[n], k = 0;
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++)
            m += ov_fake_to_wait(g, v, g->after_fake.idx[e])
                     ? CS_ROW_LEN(g->reads, g->after_fake.idx[e])
                     : 1;
    rows = cs_malloc_array(m ? m : 1, sizeof *rows);
    vals = cs_malloc_array(m ? m : 1, sizeof *vals);
    if (!rows || !vals)
        goto out;
    for (uint32_t v = 0; v < n; v++) {
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++)
            k = add_dep(stamp, rows, vals, k, v, g->deps.idx[e]);
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++) {
            uint32_t d = g->after_fake.idx[e];
            if (!ov_fake_to_wait(g, v, d)) {
                k = add_dep(stamp, rows, vals, k, v, d);
                continue;
            }
            for (uint32_t r = g->reads.off[d]; r < g->reads.off[d + 1]; r++) {
                uint32_t pr = g->buffers[g->reads.idx[r]].producer;
                if (pr != NONE && pr != v &&
                    g->nodes[pr].kind == COMMSCHED_NODE_COLLECTIVE)
                    k = add_dep(stamp, rows, vals, k, v, pr);
            }
        }
    }
    if (cs_csr_from_pairs(&b->deps, n, rows, vals, k) != 0 ||
        cs_csr_transpose(&b->users, &b->deps, n, n) != 0)
        goto out;
    borrow_same(b, &b->deps, &g->deps, 1);
    borrow_same(b, &b->users, &g->users, 2);

    /* wait -> collectives it reads (the simulator's rule). */
    k = 0;
    memset(stamp, 0, nn * sizeof *stamp);
    {
        size_t mr = g->reads.off[n];
        uint32_t *r2 = cs_realloc_array(rows, mr ? mr : 1, sizeof *r2);
        if (!r2)
            goto out;
        rows = r2;
        uint32_t *v2 = cs_realloc_array(vals, mr ? mr : 1, sizeof *v2);
        if (!v2)
            goto out;
        vals = v2;
    }
    for (uint32_t v = 0; v < n; v++) {
        if (b->cls[v] != C_WAIT)
            continue;
        for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++) {
            uint32_t pr = g->buffers[g->reads.idx[e]].producer;
            if (pr == NONE || g->nodes[pr].kind != COMMSCHED_NODE_COLLECTIVE ||
                stamp[pr] == v + 1)
                continue;
            stamp[pr] = v + 1;
            rows[k] = v;
            vals[k++] = pr;
        }
    }
    if (cs_csr_from_pairs(&b->wcoll, n, rows, vals, k) != 0)
        goto out;

    /* Memory (src/memory.c's rules). When every buffer read is tracked,
     * reads may be the graph's own table (borrow_same), indexed by buffer;
     * otherwise a tracked buffer's index is its rank among them, so bsize,
     * nreaders and each worker's rem skip the rest (the graph inputs that
     * stay, the kept outputs: half the buffers of a training step). */
    uint32_t nt = 0, t = 0;
    int by_buffer = 1;
    for (uint32_t x = 0; x < nb; x++) {
        uint32_t nr = CS_ROW_LEN(g->readers, x);
        if (tracked(&g->buffers[x], nr))
            nt++;
        else if (nr > 0)
            by_buffer = 0;
    }
    b->n_tracked = by_buffer ? nb : nt;
    size_t ntt = b->n_tracked ? b->n_tracked : 1;
    b->bsize = cs_calloc(ntt, sizeof *b->bsize);
    b->nreaders = cs_calloc(ntt, sizeof *b->nreaders);
    if (!b->bsize || !b->nreaders)
        goto out;
    size_t mt = 0;
    for (uint32_t x = 0; x < nb; x++) {
        const cs_buffer *bu = &g->buffers[x];
        uint32_t nr = CS_ROW_LEN(g->readers, x);
        if (bu->alias_of != NONE)
            continue;
        if (bu->is_input) {
            if (!bu->freeable || nr == 0)
                continue;
            b->baseline += bu->size;
        } else {
            b->alloc[bu->producer] += bu->size;
        }
        if (bu->keep)
            continue;
        if (nr == 0) {
            b->unread_free[bu->producer] += bu->size;
            continue;
        }
        assert(tracked(bu, nr));
        uint32_t i = by_buffer ? x : t++;
        b->bsize[i] = bu->size;
        b->nreaders[i] = nr;
        mt += nr;
    }
    {
        uint32_t *r2 = cs_realloc_array(rows, mt ? mt : 1, sizeof *r2);
        if (!r2)
            goto out;
        rows = r2;
        uint32_t *v2 = cs_realloc_array(vals, mt ? mt : 1, sizeof *v2);
        if (!v2)
            goto out;
        vals = v2;
    }
    k = 0;
    t = 0;
    for (uint32_t x = 0; x < nb; x++) {
        if (!tracked(&g->buffers[x], CS_ROW_LEN(g->readers, x)))
            continue;
        uint32_t i = by_buffer ? x : t++;
        for (uint32_t e = g->readers.off[x]; e < g->readers.off[x + 1]; e++) {
            rows[k] = g->readers.idx[e];
            vals[k++] = i;
        }
    }
    if (cs_csr_from_pairs(&b->reads, n, rows, vals, k) != 0)
        goto out;
    borrow_same(b, &b->reads, &g->reads, 4);

    rc = topo_closest(b);
    if (rc != 0)
        goto out;

    rc = -1;

    /* Frame ranks and gap starts along T. */
    uint32_t fr = 0, after_prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = b->topo[i];
        if (!is_frame(b->cls[v]))
            continue;
        b->fat[fr] = v;
        b->gap_start[fr] = after_prev;
        b->frank[v] = fr++;
        after_prev = i + 1;
    }
    b->n_frame = fr;
    { /* one entry a frame node, read by frank (the rest was not) */
        uint32_t *gs = cs_realloc_array(b->gap_start, fr ? fr : 1,
                                        sizeof *gs);
        if (!gs)
            goto out;
        b->gap_start = gs;
    }
    if (crit_ranks(b) != 0)
        goto out;
    /* The reference profile. */
    rem = cs_malloc_array(ntt, sizeof *rem);
    if (!rem)
        goto out;
    mem_walk(b, b->topo, rem, b->free_ref);
    for (uint32_t v = 0; v < n; v++) {
        if (b->alloc[v] > b->max_alloc)
            b->max_alloc = b->alloc[v];
    }

    rc = 0;
out:
    free(stamp);
    free(rows);
    free(vals);
    free(rem);
    return rc;
}

/* The ready sets' ranks under order set o (overlap_internal.h): a
 * counting sort by dom (collectives) or unl (frame nodes) over T, which
 * keeps T order among equal keys (n_frame + 1 at most: a collective no
 * compute waits for is at n_frame); NONE sorts last, as the heap keys'
 * infinity did. Then the collectives go to their streams' ranges, in that
 * order. O(V). Returns 0, or -1 on OOM. */
static int rank_keys(const ov_base *b, struct ov_ord *o,
                     const uint32_t *dom, const uint32_t *unl)
{
    uint32_t n = b->n, nk = b->n_frame + 3;
    size_t nn = n ? n : 1;
    /* crank is read for collectives only and urank for frame nodes only:
     * one array holds both (4 B a node a set). */
    o->crank = cs_malloc_array(nn, sizeof *o->crank);
    o->urank = o->crank;
    o->cat = cs_malloc_array(b->n_coll ? b->n_coll : 1, sizeof *o->cat);
    o->uat = cs_malloc_array(b->n_frame ? b->n_frame : 1, sizeof *o->uat);
    uint32_t *cnt = cs_malloc_array(nk, sizeof *cnt);
    uint32_t *tmp = cs_malloc_array(nn, sizeof *tmp);
    uint32_t *fill = cs_malloc_array(b->n_streams, sizeof *fill);
    int rc = -1;
    if (!o->crank || !o->cat || !o->urank || !o->uat || !cnt || !tmp ||
        !fill)
        goto out;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: collectives by dom; pass 1: frame nodes by unl */
        const uint32_t *key = pass == 0 ? dom : unl;
        memset(cnt, 0, (size_t)nk * sizeof *cnt);
        uint32_t m = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = b->topo[k];
            if (pass == 0 ? b->cls[v] != C_COLL : !is_frame(b->cls[v]))
                continue;
            uint32_t x = key[v] == NONE ? b->n_frame + 1 : key[v];
            assert(x <= b->n_frame + 1);
            cnt[x + 1]++;
            m++;
        }
        for (uint32_t x = 1; x < nk; x++)
            cnt[x] += cnt[x - 1];
        uint32_t *dst = pass == 0 ? tmp : o->uat;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = b->topo[k];
            if (pass == 0 ? b->cls[v] != C_COLL : !is_frame(b->cls[v]))
                continue;
            uint32_t x = key[v] == NONE ? b->n_frame + 1 : key[v];
            dst[cnt[x]++] = v;
        }
        if (pass == 1) {
            for (uint32_t r = 0; r < m; r++)
                o->urank[o->uat[r]] = r;
            continue;
        }
        memcpy(fill, b->soff, (size_t)b->n_streams * sizeof *fill);
        for (uint32_t r = 0; r < m; r++) {
            uint32_t c = tmp[r], at = fill[ov_stream(b, c)]++;
            o->cat[at] = c;
            o->crank[c] = at;
        }
    }
    rc = 0;
out:
    free(cnt);
    free(tmp);
    free(fill);
    return rc;
}

/* Collective order set i: the order edges of `mode` along T (each
 * group's, or all, collectives chained in input order; none for "free"),
 * then the domination index and "unlocks" in one reverse sweep over T,
 * counting the order edges as edges (a collective that must precede
 * another is at least as urgent). Returns 0, or -1 on OOM. */
int cs_ov_base_order(ov_base *b, int i, int mode)
{
    uint32_t n = b->n;
    size_t nn = n ? n : 1;
    struct ov_ord *o = &b->set[i];
    /* "free" has no order edges: no arrays (9 B a node; ov_prev). unl is
     * read only by the ranking below, and dom after it only for
     * collectives (o->dom, by cix). */
    int edges = mode != CS_ORDER_FREE;
    uint32_t *dom = cs_malloc_array(nn, sizeof *dom);
    uint32_t *unl = cs_malloc_array(nn, sizeof *unl);
    o->dom = cs_malloc_array(b->n_cs ? b->n_cs : 1, sizeof *o->dom);
    if (edges) {
        size_t ncs = b->n_cs ? b->n_cs : 1; /* by cix (ov_prev) */
        o->prev = cs_malloc_array(ncs, sizeof *o->prev);
        o->next = cs_malloc_array(ncs, sizeof *o->next);
        o->dup = cs_calloc(ncs, sizeof *o->dup);
    }
    uint32_t *last = cs_malloc_array(b->n_streams, sizeof *last);
    if (!o->dom || !dom || !unl ||
        (edges && (!o->prev || !o->next || !o->dup)) || !last) {
        free(last);
        free(dom);
        free(unl);
        return -1;
    }
    for (uint32_t j = 0; j < b->n_cs && edges; j++)
        o->prev[j] = o->next[j] = NONE;
    for (uint32_t s = 0; s < b->n_streams; s++)
        last[s] = NONE;
    uint32_t glast = NONE;
    for (uint32_t k = 0; k < n && edges; k++) {
        uint32_t c = b->topo[k];
        if (b->cls[c] != C_COLL && b->cls[c] != C_SYNC)
            continue;
        uint32_t p = mode == CS_ORDER_INPUT ? glast : last[ov_stream(b, c)];
        if (p != NONE) {
            o->prev[b->cix[c]] = p;
            o->next[b->cix[p]] = c;
            for (uint32_t e = b->deps.off[c]; e < b->deps.off[c + 1]; e++)
                if (b->deps.idx[e] == p)
                    o->dup[b->cix[c]] = 1;
        }
        glast = c;
        last[ov_stream(b, c)] = c;
    }
    free(last);
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = b->topo[k];
        uint32_t d = is_frame(b->cls[v]) ? b->frank[v] : NONE, u = NONE;
        uint32_t on = edges && b->cix[v] != NONE ? o->next[b->cix[v]]
                                                 : NONE;
        for (uint32_t e = b->users.off[v]; e <= b->users.off[v + 1]; e++) {
            uint32_t w = e < b->users.off[v + 1] ? b->users.idx[e] : on;
            if (w == NONE)
                continue;
            if (dom[w] < d)
                d = dom[w];
            if (unl[w] < u)
                u = unl[w];
        }
        /* A collective no compute waits for still ends the step: it is
         * urgent after every one some compute needs (n_frame), and the
         * compute that unlocks it before compute that unlocks nothing. */
        if ((b->cls[v] == C_COLL || b->cls[v] == C_SYNC) && d == NONE)
            d = b->n_frame;
        dom[v] = d;
        if ((b->cls[v] == C_COLL || b->cls[v] == C_SYNC) && d < u)
            u = d;
        unl[v] = u;
        if (b->cix[v] != NONE)
            o->dom[b->cix[v]] = d;
    }
    int rc = rank_keys(b, o, dom, unl);
    free(dom);
    free(unl);
    if (rc != 0)
        return -1;
    if (i >= b->n_sets)
        b->n_sets = i + 1;
    return 0;
}

/* Makes order set i the one the sweep reads. */
void cs_ov_base_use(ov_base *b, int i)
{
    b->dom = b->set[i].dom;
    b->ord_prev = b->set[i].prev;
    b->ord_next = b->set[i].next;
    b->ord_dup = b->set[i].dup;
    b->crank = b->set[i].crank;
    b->cat = b->set[i].cat;
    b->urank = b->set[i].urank;
    b->uat = b->set[i].uat;
}
