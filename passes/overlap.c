/* commsched — overlap: a simulator-driven latency-hiding list scheduler
 * with a hard peak-memory budget (DESIGN.md §9, docs/PASSES.md).
 *
 * The order is built forward, one node at a time, while the pass keeps the
 * simulator's clocks (DESIGN.md §5: the compute stream's time, each
 * group's comm stream's free time, each issued collective's end) and the
 * memory model's live bytes (§3: allocate at the producer, free after the
 * last reader, the freeable-input baseline, outputs never freed) exactly
 * as the judge will compute them. Each step:
 *
 *  1. waits whose collectives have already ended are placed (no stall;
 *     they may free memory and unlock dependent collectives);
 *  2. the next "frame" node (compute, or a sync collective: what occupies
 *     the compute stream) is chosen: the input order's next one, or — in
 *     the dynamic variants — a ready one that does not stall on an
 *     unfinished collective, preferring the input order or what unlocks
 *     the most urgent collective (the FX scheduler's domination index);
 *  3. prefetch: every comm stream that would go idle before that frame
 *     node ends is fed with its most urgent collective whose inputs are
 *     ready (or one cheap compute step away: the copy-in/cast feeding an
 *     all-gather is pulled along), if the memory budget allows;
 *  4. the frame node's waits (each as late as its first consumer allows)
 *     and the frame node itself.
 *
 * The budget test must see the future: a prefetched all-gather holds its
 * output from its issue until its consumers run. The pass keeps the input
 * order's per-step memory levels in a segment tree (range add, range max)
 * indexed by input position: a node placed earlier than its input
 * position adds its memory delta (allocations minus what it frees) over
 * the positions it jumped, and a prefetch is allowed only if the highest
 * level over that range plus its delta stays within the budget, and the
 * live bytes right now plus its allocation do too. The tree is an
 * estimate of the future (the rest of the order differs from the input's
 * in places), so every candidate order is then judged exactly by the
 * simulator and the memory model; an order above the budget is rebuilt
 * with the budget tightened by the excess (three tries).
 *
 * Several deterministic variants (frame rule x issue policy, and with the
 * collectives pinned to their input order) are built and simulated at the
 * budget and at each standard level below it (1.0, 1.25, 1.5, 2.0 x the
 * input's peak; what fits a tighter level fits the budget); the fastest
 * within the budget wins (then the lower peak, then the earlier variant),
 * and the input order is kept unless a variant is strictly faster: the
 * pass is never slower than its input and never above overlap_peak_budget
 * x the input's peak. A last O(V + E) step moves each wait that frees
 * nothing to just before its first dependent (never slower).
 *
 * Edges: data, `after` and `after_fake` edges are all respected (as the
 * heap scheduler does; overlap may run after
 * decide_global_ordering_of_comms). overlap_collective_order=group|input
 * adds edges chaining each group's (or all) collectives in input order.
 *
 * Cost: O((V + E) log V) per variant: heaps for ready nodes, the segment
 * tree for the budget, a frontier pointer for the input order; no
 * per-node ancestor sets. Reachability (domination index, "unlocks")
 * comes from one reverse sweep over a topological order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/simulate.h"
#include "passes_internal.h"

#define NONE COMMSCHED_NONE
#define NO_LIMIT INT64_MAX

/* Node classes as the pass sees them. A frame node runs on the compute
 * stream in the order chosen by the frame rule; collectives and waits are
 * placed around frame nodes. */
enum { C_COMPUTE = 0, C_COLL = 1, C_WAIT = 2, C_SYNC = 3 };

static int is_frame(uint8_t c) { return c == C_COMPUTE || c == C_SYNC; }

/* ---- a binary heap of (r, a, b) keys ------------------------------------- */

typedef struct hent {
    uint32_t r;  /* primary (class rank) */
    uint32_t b;  /* tertiary (input position: ties, determinism) */
    double a;    /* secondary */
    uint32_t v;  /* the node */
} hent;

typedef struct heap {
    hent *e;
    size_t n, cap;
} heap;

static int hless(const hent *x, const hent *y)
{
    if (x->r != y->r)
        return x->r < y->r;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(heap *h, hent x)
{
    if (cs_grow((void **)&h->e, &h->cap, h->n + 1, sizeof *h->e) != 0)
        return -1;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(&x, &h->e[p]))
            break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return 0;
}

static hent heap_pop(heap *h)
{
    hent top = h->e[0], x = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const hent *best = &x;
        if (l < h->n && hless(&h->e[l], best)) {
            m = l;
            best = &h->e[l];
        }
        if (l + 1 < h->n && hless(&h->e[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        h->e[i] = h->e[m];
        i = m;
    }
    if (h->n > 0)
        h->e[i] = x;
    return top;
}

/* ---- segment tree: range add, range max (positions 0 .. n) --------------- */

typedef struct segt {
    uint32_t size, h; /* leaves, a power of two; its log2 */
    int64_t *t, *d;   /* value of a subtree (with its own pending add), and
                         the add pending for the whole subtree */
} segt;

#define SEG_LOW (INT64_MIN / 4)

static void seg_apply(segt *s, uint32_t x, int64_t v)
{
    s->t[x] += v;
    if (x < s->size)
        s->d[x] += v;
}

static void seg_pull(segt *s, uint32_t x)
{
    while (x > 1) {
        x >>= 1;
        int64_t l = s->t[2 * x], r = s->t[2 * x + 1];
        s->t[x] = (l > r ? l : r) + s->d[x];
    }
}

static void seg_push(segt *s, uint32_t x)
{
    for (uint32_t k = s->h; k > 0; k--) {
        uint32_t y = x >> k;
        if (s->d[y] != 0) {
            seg_apply(s, 2 * y, s->d[y]);
            seg_apply(s, 2 * y + 1, s->d[y]);
            s->d[y] = 0;
        }
    }
}

static void seg_build(segt *s, const int64_t *leaf, uint32_t n)
{
    for (uint32_t i = 0; i < s->size; i++)
        s->t[s->size + i] = i < n ? leaf[i] : SEG_LOW;
    memset(s->d, 0, (size_t)s->size * sizeof *s->d);
    for (uint32_t x = s->size - 1; x > 0; x--)
        s->t[x] = s->t[2 * x] > s->t[2 * x + 1] ? s->t[2 * x] : s->t[2 * x + 1];
}

/* Adds v to positions [l, r). */
static void seg_add(segt *s, uint32_t l, uint32_t r, int64_t v)
{
    if (l >= r || v == 0)
        return;
    uint32_t l0 = l + s->size, r0 = r + s->size;
    seg_push(s, l0);
    seg_push(s, r0 - 1);
    for (l = l0, r = r0; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            seg_apply(s, l++, v);
        if (r & 1)
            seg_apply(s, --r, v);
    }
    seg_pull(s, l0);
    seg_pull(s, r0 - 1);
}

/* The maximum over positions [l, r) (SEG_LOW when empty). */
static int64_t seg_max(segt *s, uint32_t l, uint32_t r)
{
    if (l >= r)
        return SEG_LOW;
    l += s->size;
    r += s->size;
    seg_push(s, l);
    seg_push(s, r - 1);
    int64_t m = SEG_LOW;
    for (; l < r; l >>= 1, r >>= 1) {
        if (l & 1) {
            if (s->t[l] > m)
                m = s->t[l];
            l++;
        }
        if (r & 1) {
            --r;
            if (s->t[r] > m)
                m = s->t[r];
        }
    }
    return m;
}

/* ---- what every variant shares ----------------------------------------- */

typedef struct ov_base {
    const commsched_graph *g;
    uint32_t n, n_streams;
    const double *rt;
    uint8_t *cls;
    uint32_t *stream;     /* collectives: their group (their comm stream) */
    int64_t *bytes;       /* collectives: bytes moved (in-flight limit) */
    cs_csr deps, users;   /* data + after + after_fake, distinct */
    cs_csr wcoll;         /* wait -> the collectives whose outputs it reads */
    cs_csr reads;         /* node -> buffers freed after their last reader
                             that it reads (the memory model's tracked set) */
    int64_t *bsize;       /* per buffer */
    uint32_t *nreaders;   /* per buffer */
    int64_t *alloc;       /* per node: bytes its real outputs allocate */
    int64_t *unread_free; /* per node: its outputs nobody reads, not kept */
    int64_t baseline;
    int64_t max_alloc;    /* the largest allocation of one node */
    /* The reference order T: the input order, or the closest order that
     * respects every fake edge when the input breaks some. */
    uint32_t *topo, *tpos;
    uint32_t *frank;      /* frame nodes: index among frame nodes in T */
    uint32_t *gap_start;  /* frame nodes: T position after the previous
                             frame node */
    int64_t *level;       /* T position -> post_alloc of that step in T */
    int64_t *free_ref;    /* per node: bytes freed after it in T */
    int64_t *dref;        /* per node: alloc - free_ref */
    /* The collective order in force (ov_ord below) — the knob's, or the
     * input order's for the variants that pin it; the sweep reads these. */
    uint32_t *dom;        /* frame rank of the first frame node reached */
    uint32_t *unl;        /* smallest dom of a collective reached */
    uint32_t *ord_prev, *ord_next; /* collective order edges */
    uint8_t *ord_dup;     /* the order edge duplicates a real one */
    struct ov_ord {
        uint32_t *dom, *unl, *prev, *next;
        uint8_t *dup;
    } set[2];             /* [0] the knob's order, [1] the input's */
    int n_sets;
    uint32_t *pos_in;     /* position in the pass's input order */
} ov_base;

static void base_free(ov_base *b)
{
    free(b->cls);
    free(b->stream);
    free(b->bytes);
    cs_csr_free(&b->deps);
    cs_csr_free(&b->users);
    cs_csr_free(&b->wcoll);
    cs_csr_free(&b->reads);
    free(b->bsize);
    free(b->nreaders);
    free(b->alloc);
    free(b->unread_free);
    free(b->topo);
    free(b->tpos);
    free(b->frank);
    free(b->gap_start);
    free(b->level);
    free(b->free_ref);
    free(b->dref);
    for (int i = 0; i < 2; i++) {
        free(b->set[i].dom);
        free(b->set[i].unl);
        free(b->set[i].prev);
        free(b->set[i].next);
        free(b->set[i].dup);
    }
    free(b->pos_in);
}

/* The memory model over `order` (DESIGN.md §3, as src/memory.c computes
 * it): post_alloc per position (level, may be NULL) and bytes freed after
 * each node (fr, may be NULL). rem is scratch of one entry per buffer.
 * Returns the peak. */
static int64_t mem_walk(const ov_base *b, const uint32_t *order,
                        uint32_t *rem, int64_t *level, int64_t *fr)
{
    memcpy(rem, b->nreaders, (size_t)b->g->n_buffers * sizeof *rem);
    int64_t cur = b->baseline, peak = cur;
    for (uint32_t k = 0; k < b->n; k++) {
        uint32_t v = order[k];
        cur += b->alloc[v];
        if (level)
            level[k] = cur;
        if (cur > peak)
            peak = cur;
        int64_t f = b->unread_free[v];
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (--rem[x] == 0)
                f += b->bsize[x];
        }
        if (fr)
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
    heap h = {0};
    int rc = -1;
    if (!unmet)
        goto out;
    for (uint32_t v = 0; v < n; v++)
        unmet[v] = CS_ROW_LEN(b->deps, v);
    for (uint32_t v = 0; v < n; v++)
        if (unmet[v] == 0 &&
            heap_push(&h, (hent){0, b->pos_in[v], 0.0, v}) != 0)
            goto out;
    uint32_t k = 0;
    while (h.n > 0) {
        uint32_t v = heap_pop(&h).v;
        b->tpos[v] = k;
        b->topo[k++] = v;
        for (uint32_t e = b->users.off[v]; e < b->users.off[v + 1]; e++) {
            uint32_t u = b->users.idx[e];
            if (--unmet[u] == 0 &&
                heap_push(&h, (hent){0, b->pos_in[u], 0.0, u}) != 0)
                goto out;
        }
    }
    rc = k == n ? 0 : 1;
out:
    free(unmet);
    free(h.e);
    return rc;
}

/* Builds everything but the collective-order edges. Returns 0, -1 on OOM,
 * 1 when the edges form a cycle. */
static int base_init(ov_base *b, const commsched_graph *g,
                     const commsched_schedule *s, const double *rt)
{
    uint32_t n = g->n_nodes, nb = g->n_buffers;
    memset(b, 0, sizeof *b);
    b->g = g;
    b->n = n;
    b->rt = rt;
    b->n_streams = g->n_groups > 0 ? g->n_groups : 1;
    size_t nn = n ? n : 1, nbb = nb ? nb : 1;
    b->cls = cs_malloc_array(nn, sizeof *b->cls);
    b->stream = cs_calloc(nn, sizeof *b->stream);
    b->bytes = cs_calloc(nn, sizeof *b->bytes);
    b->bsize = cs_calloc(nbb, sizeof *b->bsize);
    b->nreaders = cs_calloc(nbb, sizeof *b->nreaders);
    b->alloc = cs_calloc(nn, sizeof *b->alloc);
    b->unread_free = cs_calloc(nn, sizeof *b->unread_free);
    b->topo = cs_malloc_array(nn, sizeof *b->topo);
    b->tpos = cs_malloc_array(nn, sizeof *b->tpos);
    b->frank = cs_malloc_array(nn, sizeof *b->frank);
    b->gap_start = cs_malloc_array(nn, sizeof *b->gap_start);
    b->level = cs_malloc_array(nn, sizeof *b->level);
    b->free_ref = cs_malloc_array(nn, sizeof *b->free_ref);
    b->dref = cs_malloc_array(nn, sizeof *b->dref);
    b->pos_in = cs_malloc_array(nn, sizeof *b->pos_in);
    uint32_t *stamp = cs_calloc(nn, sizeof *stamp);
    uint32_t *rows = NULL, *vals = NULL, *rem = NULL;
    int rc = -1;
    if (!b->cls || !b->stream || !b->bytes || !b->bsize || !b->nreaders ||
        !b->alloc || !b->unread_free || !b->topo || !b->tpos || !b->frank ||
        !b->gap_start || !b->level || !b->free_ref || !b->dref ||
        !b->pos_in || !stamp)
        goto out;

    uint32_t p = 0;
    for (uint32_t v = commsched_schedule_first(s); v != NONE;
         v = commsched_schedule_next(s, v))
        b->pos_in[v] = p++;
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            b->cls[v] = nd->is_sync ? C_SYNC : C_COLL;
            b->stream[v] = nd->group < g->n_groups ? nd->group : 0;
            double by = commsched_cost_collective_bytes(g, v);
            b->bytes[v] = by > 0 ? (int64_t)by : 0;
        } else {
            b->cls[v] = nd->kind == COMMSCHED_NODE_WAIT ? C_WAIT : C_COMPUTE;
        }
    }

    /* deps: data + after + fake, distinct. */
    size_t m = (size_t)g->deps.off[n] + g->after_fake.off[n], k = 0;
    rows = cs_malloc_array(m ? m : 1, sizeof *rows);
    vals = cs_malloc_array(m ? m : 1, sizeof *vals);
    if (!rows || !vals)
        goto out;
    for (uint32_t v = 0; v < n; v++) {
        const cs_csr *src[2] = {&g->deps, &g->after_fake};
        for (int r = 0; r < 2; r++)
            for (uint32_t e = src[r]->off[v]; e < src[r]->off[v + 1]; e++) {
                uint32_t d = src[r]->idx[e];
                if (stamp[d] == v + 1)
                    continue;
                stamp[d] = v + 1;
                rows[k] = v;
                vals[k++] = d;
            }
    }
    if (cs_csr_from_pairs(&b->deps, n, rows, vals, k) != 0 ||
        cs_csr_transpose(&b->users, &b->deps, n, n) != 0)
        goto out;

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

    /* Memory (src/memory.c's rules). */
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
        b->bsize[x] = bu->size;
        b->nreaders[x] = nr;
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
    for (uint32_t x = 0; x < nb; x++)
        if (b->nreaders[x] > 0)
            for (uint32_t e = g->readers.off[x]; e < g->readers.off[x + 1];
                 e++) {
                rows[k] = g->readers.idx[e];
                vals[k++] = x;
            }
    if (cs_csr_from_pairs(&b->reads, n, rows, vals, k) != 0)
        goto out;

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
        b->frank[v] = fr++;
        b->gap_start[v] = after_prev;
        after_prev = i + 1;
    }
    /* The reference profile. */
    rem = cs_malloc_array(nbb, sizeof *rem);
    if (!rem)
        goto out;
    mem_walk(b, b->topo, rem, b->level, b->free_ref);
    for (uint32_t v = 0; v < n; v++) {
        b->dref[v] = b->alloc[v] - b->free_ref[v];
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

/* Collective order set i: the order edges of `mode` along T (each
 * group's, or all, collectives chained in input order; none for "free"),
 * then the domination index and "unlocks" in one reverse sweep over T,
 * counting the order edges as edges (a collective that must precede
 * another is at least as urgent). Returns 0, or -1 on OOM. */
static int base_order(ov_base *b, int i, int mode)
{
    uint32_t n = b->n;
    size_t nn = n ? n : 1;
    struct ov_ord *o = &b->set[i];
    o->dom = cs_malloc_array(nn, sizeof *o->dom);
    o->unl = cs_malloc_array(nn, sizeof *o->unl);
    o->prev = cs_malloc_array(nn, sizeof *o->prev);
    o->next = cs_malloc_array(nn, sizeof *o->next);
    o->dup = cs_calloc(nn, sizeof *o->dup);
    uint32_t *last = cs_malloc_array(b->n_streams, sizeof *last);
    if (!o->dom || !o->unl || !o->prev || !o->next || !o->dup || !last) {
        free(last);
        return -1;
    }
    for (uint32_t v = 0; v < n; v++)
        o->prev[v] = o->next[v] = NONE;
    for (uint32_t s = 0; s < b->n_streams; s++)
        last[s] = NONE;
    uint32_t glast = NONE;
    for (uint32_t k = 0; k < n && mode != CS_ORDER_FREE; k++) {
        uint32_t c = b->topo[k];
        if (b->cls[c] != C_COLL && b->cls[c] != C_SYNC)
            continue;
        uint32_t p = mode == CS_ORDER_INPUT ? glast : last[b->stream[c]];
        if (p != NONE) {
            o->prev[c] = p;
            o->next[p] = c;
            for (uint32_t e = b->deps.off[c]; e < b->deps.off[c + 1]; e++)
                if (b->deps.idx[e] == p)
                    o->dup[c] = 1;
        }
        glast = c;
        last[b->stream[c]] = c;
    }
    free(last);
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = b->topo[k];
        uint32_t d = is_frame(b->cls[v]) ? b->frank[v] : NONE, u = NONE;
        for (uint32_t e = b->users.off[v]; e <= b->users.off[v + 1]; e++) {
            uint32_t w = e < b->users.off[v + 1] ? b->users.idx[e] : o->next[v];
            if (w == NONE)
                continue;
            if (o->dom[w] < d)
                d = o->dom[w];
            if (o->unl[w] < u)
                u = o->unl[w];
        }
        o->dom[v] = d;
        if ((b->cls[v] == C_COLL || b->cls[v] == C_SYNC) && d < u)
            u = d;
        o->unl[v] = u;
    }
    if (i >= b->n_sets)
        b->n_sets = i + 1;
    return 0;
}

/* Makes order set i the one the sweep reads. */
static void base_use(ov_base *b, int i)
{
    b->dom = b->set[i].dom;
    b->unl = b->set[i].unl;
    b->ord_prev = b->set[i].prev;
    b->ord_next = b->set[i].next;
    b->ord_dup = b->set[i].dup;
}

/* ---- one variant: the forward list scheduler ----------------------------- */

enum { FR_REF = 0, FR_DYN_POS = 1, FR_DYN_UNLOCK = 2 };

typedef struct ov_variant {
    uint8_t frame;      /* FR_*: how the next compute node is chosen */
    uint8_t pinned;     /* keep all collectives in their input order (as
                           after decide_global_ordering_of_comms); only
                           tried when the knob leaves the order freer */
    uint8_t jit;        /* 1: feed a comm stream only when it would go idle
                           before the next compute node ends; 0: issue
                           every ready collective the budget allows */
    uint8_t eager_free; /* issue collectives that lower memory (a
                           reduce-scatter freeing its input) at once, even
                           when their stream is busy */
    const char *name;
} ov_variant;

/* The fast set first; `full` adds the rest. */
static const ov_variant variants[] = {
    {FR_REF, 0, 1, 1, "input-order/jit"},
    {FR_DYN_POS, 0, 1, 1, "fill/jit"},
    {FR_DYN_UNLOCK, 0, 1, 1, "unlock/jit"},
    {FR_REF, 0, 0, 1, "input-order/asap"},
    {FR_DYN_POS, 0, 0, 1, "fill/asap"},
    {FR_DYN_POS, 1, 1, 1, "fill/jit/pinned"},
    {FR_DYN_UNLOCK, 1, 1, 1, "unlock/jit/pinned"},
    {FR_DYN_UNLOCK, 0, 0, 1, "unlock/asap"},
    {FR_REF, 0, 1, 0, "input-order/jit-lazy-free"},
    {FR_DYN_POS, 0, 1, 0, "fill/jit-lazy-free"},
    {FR_DYN_UNLOCK, 0, 1, 0, "unlock/jit-lazy-free"},
    {FR_REF, 1, 1, 1, "input-order/jit/pinned"},
    {FR_DYN_POS, 1, 0, 1, "fill/asap/pinned"},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])
#define N_FAST 7

/* Per-collective flags the statistics read. */
enum {
    F_MEM = 1,      /* the budget refused an issue it wanted */
    F_INFL = 2,     /* overlap_max_in_flight_bytes refused one */
    F_INFLIGHT = 4, /* issued, its wait not placed yet (in-flight bytes) */
    F_NOCOMP = 8    /* its wait stalled with no other ready compute */
};

#define K_STREAM 8  /* collectives examined per prefetch decision */
#define K_FRAME 16  /* frame candidates examined per step */
#define FEEDER_FRACTION 0.25 /* compute a prefetch may pull along, as a
                                fraction of the collective's runtime */

typedef struct ov_run {
    const ov_base *b;
    const ov_variant *var;
    int64_t B;          /* effective budget, NO_LIMIT for none */
    int64_t cap;        /* in-flight bytes per group, <= 0: none */
    long window;
    uint32_t *unmet;    /* unscheduled deps (all edges + order edge) */
    uint32_t *blockers; /* collectives: unscheduled deps other than ready
                           compute nodes (which can be pulled along) */
    uint8_t *sched, *in_fh, *in_sh;
    uint32_t *order, k;
    uint32_t *rem;
    double *cend, *wend, now, *sf;
    int64_t *infl, cur, peak;
    heap fh;            /* ready frame nodes, by the frame rule's key */
    heap wh;            /* ready waits, by the end of their collectives */
    heap ah, tmp;       /* force()'s scratch; popped entries */
    heap *sh, *shf;     /* per stream: issuable collectives by urgency;
                           shf those that free at least what they take */
    segt seg;
    int use_seg;
    uint32_t fi, lo;
    double *ready_t; /* collectives: compute-stream time they became
                        issuable (inputs ready or one cheap step away) */
    uint8_t *flags;
    uint32_t *stk, *list, *mark, *mark2, epoch, *undo;
    uint32_t *pos, *lastpos, *head, *next, *tmp_order; /* sink_waits_late */
    int oom;
} ov_run;

static void run_free(ov_run *S)
{
    free(S->unmet);
    free(S->blockers);
    free(S->sched);
    free(S->in_fh);
    free(S->in_sh);
    free(S->order);
    free(S->rem);
    free(S->cend);
    free(S->wend);
    free(S->sf);
    free(S->infl);
    free(S->fh.e);
    free(S->wh.e);
    free(S->ah.e);
    free(S->tmp.e);
    if (S->sh)
        for (uint32_t s = 0; s < S->b->n_streams; s++)
            free(S->sh[s].e);
    if (S->shf)
        for (uint32_t s = 0; s < S->b->n_streams; s++)
            free(S->shf[s].e);
    free(S->sh);
    free(S->shf);
    free(S->seg.t);
    free(S->seg.d);
    free(S->ready_t);
    free(S->flags);
    free(S->stk);
    free(S->list);
    free(S->mark);
    free(S->mark2);
    free(S->undo);
    free(S->pos);
    free(S->lastpos);
    free(S->head);
    free(S->next);
    free(S->tmp_order);
}

static int run_alloc(ov_run *S, const ov_base *b)
{
    uint32_t n = b->n;
    size_t nn = n ? n : 1, nb = b->g->n_buffers ? b->g->n_buffers : 1;
    memset(S, 0, sizeof *S);
    S->b = b;
    S->unmet = cs_malloc_array(nn, sizeof *S->unmet);
    S->blockers = cs_malloc_array(nn, sizeof *S->blockers);
    S->sched = cs_malloc_array(nn, sizeof *S->sched);
    S->in_fh = cs_malloc_array(nn, sizeof *S->in_fh);
    S->in_sh = cs_malloc_array(nn, sizeof *S->in_sh);
    S->order = cs_malloc_array(nn, sizeof *S->order);
    S->rem = cs_malloc_array(nb, sizeof *S->rem);
    S->cend = cs_malloc_array(nn, sizeof *S->cend);
    S->wend = cs_malloc_array(nn, sizeof *S->wend);
    S->sf = cs_malloc_array(b->n_streams, sizeof *S->sf);
    S->infl = cs_malloc_array(b->n_streams, sizeof *S->infl);
    S->sh = cs_calloc(b->n_streams, sizeof *S->sh);
    S->shf = cs_calloc(b->n_streams, sizeof *S->shf);
    S->ready_t = cs_malloc_array(nn, sizeof *S->ready_t);
    S->flags = cs_malloc_array(nn, sizeof *S->flags);
    S->stk = cs_malloc_array(nn, sizeof *S->stk);
    S->list = cs_malloc_array(nn, sizeof *S->list);
    S->mark = cs_calloc(nn, sizeof *S->mark);
    S->mark2 = cs_calloc(nn, sizeof *S->mark2);
    size_t nr = b->reads.off[n];
    S->undo = cs_malloc_array(nr ? nr : 1, sizeof *S->undo);
    S->pos = cs_malloc_array(nn, sizeof *S->pos);
    S->lastpos = cs_malloc_array(nb, sizeof *S->lastpos);
    S->head = cs_malloc_array(nn + 1, sizeof *S->head);
    S->next = cs_malloc_array(nn, sizeof *S->next);
    S->tmp_order = cs_malloc_array(nn, sizeof *S->tmp_order);
    uint32_t size = 1, h = 0;
    while (size < n + 1) {
        size <<= 1;
        h++;
    }
    S->seg.size = size;
    S->seg.h = h;
    S->seg.t = cs_malloc_array(2 * (size_t)size, sizeof *S->seg.t);
    S->seg.d = cs_malloc_array(size, sizeof *S->seg.d);
    return S->unmet && S->blockers && S->sched && S->in_fh && S->in_sh &&
                   S->order && S->rem && S->cend && S->wend && S->sf &&
                   S->infl && S->sh && S->shf && S->ready_t && S->flags &&
                   S->stk && S->list && S->mark && S->mark2 && S->undo &&
                   S->seg.t && S->seg.d && S->pos && S->lastpos && S->head &&
                   S->next && S->tmp_order
               ? 0
               : -1;
}

static void push(ov_run *S, heap *h, hent x)
{
    if (heap_push(h, x) != 0)
        S->oom = 1;
}

static hent frame_key(const ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    hent x = {0, b->tpos[v], 0.0, v};
    if (S->var->frame == FR_DYN_UNLOCK)
        x.a = b->unl[v] == NONE ? INFINITY : (double)b->unl[v];
    return x;
}

static hent coll_key(const ov_base *b, uint32_t c)
{
    return (hent){0, b->tpos[c],
                  b->dom[c] == NONE ? (double)INFINITY : (double)b->dom[c], c};
}

/* Puts u in the heaps it now qualifies for. */
static void touch(ov_run *S, uint32_t u)
{
    const ov_base *b = S->b;
    if (S->sched[u])
        return;
    uint8_t c = b->cls[u];
    if (is_frame(c) && !S->in_fh[u] && S->unmet[u] == 0) {
        S->in_fh[u] = 1;
        push(S, &S->fh, frame_key(S, u));
    }
    if (c == C_COLL && !S->in_sh[u] && S->blockers[u] == 0) {
        S->in_sh[u] = 1;
        push(S, b->dref[u] <= 0 ? &S->shf[b->stream[u]] : &S->sh[b->stream[u]],
             coll_key(b, u));
    }
}

static void became_ready(ov_run *S, uint32_t u)
{
    const ov_base *b = S->b;
    if (b->cls[u] == C_WAIT) {
        double e = 0;
        for (uint32_t x = b->wcoll.off[u]; x < b->wcoll.off[u + 1]; x++)
            if (S->cend[b->wcoll.idx[x]] > e)
                e = S->cend[b->wcoll.idx[x]];
        S->wend[u] = e;
        push(S, &S->wh, (hent){0, b->tpos[u], e, u});
    } else if (b->cls[u] == C_COLL) {
        S->ready_t[u] = S->now;
    } else if (b->cls[u] == C_COMPUTE) {
        for (uint32_t x = b->users.off[u]; x < b->users.off[u + 1]; x++) {
            uint32_t w = b->users.idx[x];
            if (b->cls[w] == C_COLL) {
                S->blockers[w]--;
                touch(S, w);
            }
        }
    }
    touch(S, u);
}

/* The edge v -> u is met: v was just scheduled. */
static void release(ov_run *S, uint32_t v, uint32_t u)
{
    const ov_base *b = S->b;
    S->unmet[u]--;
    if (b->cls[u] == C_COLL && b->cls[v] != C_COMPUTE)
        S->blockers[u]--;
    if (S->unmet[u] == 0)
        became_ready(S, u);
    else
        touch(S, u);
}

static void advance_frontier(ov_run *S)
{
    const ov_base *b = S->b;
    while (S->fi < b->n &&
           (S->sched[b->topo[S->fi]] || !is_frame(b->cls[b->topo[S->fi]])))
        S->fi++;
    S->lo = S->fi < b->n ? b->gap_start[b->topo[S->fi]] : b->n;
}

static void sched_node(ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    S->sched[v] = 1;
    S->order[S->k++] = v;
    /* memory, exactly as the model counts it */
    S->cur += b->alloc[v];
    if (S->cur > S->peak)
        S->peak = S->cur;
    int64_t fr = b->unread_free[v];
    for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
        uint32_t x = b->reads.idx[e];
        if (--S->rem[x] == 0)
            fr += b->bsize[x];
    }
    S->cur -= fr;
    /* time, exactly as the simulator runs it */
    double r = b->rt[v];
    switch (b->cls[v]) {
    case C_COMPUTE:
        S->now += r;
        break;
    case C_COLL: {
        uint32_t s = b->stream[v];
        double st = S->now > S->sf[s] ? S->now : S->sf[s];
        S->cend[v] = st + r;
        S->sf[s] = st + r;
        S->infl[s] += b->bytes[v];
        S->flags[v] |= F_INFLIGHT;
        break;
    }
    case C_SYNC: {
        uint32_t s = b->stream[v];
        double st = S->now > S->sf[s] ? S->now : S->sf[s];
        S->cend[v] = st + r;
        S->sf[s] = st + r;
        S->now = st + r;
        break;
    }
    default: { /* wait */
        double e = S->now;
        for (uint32_t x = b->wcoll.off[v]; x < b->wcoll.off[v + 1]; x++) {
            uint32_t c = b->wcoll.idx[x];
            if (S->cend[c] > e)
                e = S->cend[c];
            if (S->flags[c] & F_INFLIGHT) {
                S->flags[c] &= (uint8_t)~F_INFLIGHT;
                S->infl[b->stream[c]] -= b->bytes[c];
            }
        }
        S->now = e + r;
        break;
    }
    }
    /* Placed before its reference position: its memory delta now holds
     * over the positions it jumped. */
    if (S->use_seg && b->tpos[v] > S->lo)
        seg_add(&S->seg, S->lo, b->tpos[v], b->dref[v]);
    for (uint32_t e = b->users.off[v]; e < b->users.off[v + 1]; e++)
        release(S, v, b->users.idx[e]);
    uint32_t on = b->ord_next[v];
    if (on != NONE && !b->ord_dup[on])
        release(S, v, on);
    if (is_frame(b->cls[v]))
        advance_frontier(S);
}

/* The time the compute stream would wait before frame node f could run
 * (its waits' collectives; unissued ones estimated as issued now). */
static double stall_of(const ov_run *S, uint32_t f)
{
    const ov_base *b = S->b;
    double t = S->now;
    for (uint32_t e = b->deps.off[f]; e < b->deps.off[f + 1]; e++) {
        uint32_t w = b->deps.idx[e];
        if (S->sched[w] || b->cls[w] != C_WAIT)
            continue;
        for (uint32_t x = b->wcoll.off[w]; x < b->wcoll.off[w + 1]; x++) {
            uint32_t c = b->wcoll.idx[x];
            double end;
            if (S->sched[c]) {
                end = S->cend[c];
            } else {
                double sf = S->sf[b->stream[c]];
                end = (S->now > sf ? S->now : sf) + b->rt[c];
            }
            if (end > t)
                t = end;
        }
    }
    return t - S->now;
}

/* The unscheduled dependencies of collective c (all ready compute nodes
 * once c is in its stream's heap), into S->list in T order. */
static uint32_t feeders(ov_run *S, uint32_t c)
{
    const ov_base *b = S->b;
    uint32_t nf = 0;
    for (uint32_t e = b->deps.off[c]; e < b->deps.off[c + 1]; e++) {
        uint32_t d = b->deps.idx[e];
        if (!S->sched[d])
            S->list[nf++] = d;
    }
    uint32_t op = b->ord_prev[c];
    if (op != NONE && !b->ord_dup[c] && !S->sched[op])
        S->list[nf++] = op;
    for (uint32_t i = 1; i < nf; i++) { /* insertion sort: a few entries */
        uint32_t x = S->list[i], j = i;
        while (j > 0 && b->tpos[S->list[j - 1]] > b->tpos[x]) {
            S->list[j] = S->list[j - 1];
            j--;
        }
        S->list[j] = x;
    }
    return nf;
}

/* Would placing list[0 .. nf) and then c right now keep memory within the
 * budget: now (exactly) and over the positions they jump (the tree)? */
static int mem_ok(ov_run *S, uint32_t nf, uint32_t c)
{
    const ov_base *b = S->b;
    if (S->B == NO_LIMIT)
        return 1;
    int64_t level = S->cur, delta = 0;
    uint32_t nu = 0;
    int ok = 1;
    for (uint32_t i = 0; i <= nf && ok; i++) {
        uint32_t x = i < nf ? S->list[i] : c;
        if (level + b->alloc[x] > S->B) {
            ok = 0;
            break;
        }
        int64_t fr = b->unread_free[x];
        for (uint32_t e = b->reads.off[x]; e < b->reads.off[x + 1]; e++) {
            uint32_t y = b->reads.idx[e];
            if (S->rem[y] == 1)
                fr += b->bsize[y];
            S->rem[y]--;
            S->undo[nu++] = y;
        }
        level += b->alloc[x] - fr;
        /* The frees that also happen at its reference position are the
         * ones the jump moves; count the smaller, to stay on the safe
         * side. */
        delta += b->alloc[x] - (fr < b->free_ref[x] ? fr : b->free_ref[x]);
    }
    while (nu > 0)
        S->rem[S->undo[--nu]]++;
    if (ok && S->use_seg && delta > 0 && b->tpos[c] > S->lo &&
        seg_max(&S->seg, S->lo, b->tpos[c]) + delta > S->B)
        ok = 0;
    return ok;
}

/* Issues c with the compute nodes it still needs. Returns their runtime. */
static double issue(ov_run *S, uint32_t c)
{
    uint32_t nf = feeders(S, c);
    double t = 0;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t x = S->list[i];
        t += S->b->rt[x];
        sched_node(S, x);
    }
    sched_node(S, c);
    return t;
}

/* Pops up to K live entries of h into S->tmp after the ones there (pops
 * come out in key order). */
static void take(ov_run *S, heap *h, size_t k)
{
    size_t want = S->tmp.n + k;
    while (h->n > 0 && S->tmp.n < want) {
        hent x = heap_pop(h);
        if (!S->sched[x.v] && cs_grow((void **)&S->tmp.e, &S->tmp.cap,
                                      S->tmp.n + 1, sizeof *S->tmp.e) == 0)
            S->tmp.e[S->tmp.n++] = x;
        else if (!S->sched[x.v])
            S->oom = 1;
    }
}

/* Issues the first of S->tmp[from ..) (in the order given) that passes the
 * in-flight and budget tests, pushes the others back where they came from
 * (freeing collectives to hf, others to h). Returns the one issued or
 * NONE, and adds the compute it pulled along to *t_next. */
static uint32_t try_issue(ov_run *S, uint32_t s, heap *h, heap *hf,
                          int only_freeing, double *t_next)
{
    const ov_base *b = S->b;
    uint32_t chosen = NONE;
    for (size_t i = 0; i < S->tmp.n && chosen == NONE; i++) {
        uint32_t c = S->tmp.e[i].v;
        uint32_t nf = feeders(S, c);
        int64_t d = b->dref[c];
        double pull = 0;
        for (uint32_t j = 0; j < nf; j++) {
            d += b->dref[S->list[j]];
            pull += b->rt[S->list[j]];
        }
        if (only_freeing && d > 0)
            continue;
        /* Pull compute along only when it is cheap beside the collective
         * (the copy-in or cast of an all-gather); real work waits for its
         * turn in the frame order. */
        if (pull > FEEDER_FRACTION * b->rt[c])
            continue;
        if (S->cap > 0 && d > 0 && S->infl[s] + b->bytes[c] > S->cap) {
            S->flags[c] |= F_INFL;
            continue;
        }
        /* A collective that frees at least what it allocates only gets
         * dearer later (its input stays live), so it goes now; its
         * momentary step peak is checked with the whole order, and an
         * excess tightens the budget of the decisions that led to it. */
        if (d > 0 && !mem_ok(S, nf, c)) {
            S->flags[c] |= F_MEM;
            continue;
        }
        chosen = c;
    }
    for (size_t i = 0; i < S->tmp.n; i++)
        if (S->tmp.e[i].v != chosen)
            push(S, b->dref[S->tmp.e[i].v] <= 0 ? hf : h, S->tmp.e[i]);
    S->tmp.n = 0;
    if (chosen != NONE)
        *t_next += issue(S, chosen);
    return chosen;
}

/* Feeds the comm streams before the next frame node (which would end at
 * t_next if nothing else ran first). Collectives that free memory (a
 * reduce-scatter frees its full-size input) wait in their own heap, so a
 * queue of urgent all-gathers never hides them. */
static void prefetch(ov_run *S, double t_next)
{
    const ov_base *b = S->b;
    const ov_variant *var = S->var;
    for (uint32_t s = 0; s < b->n_streams && !S->oom; s++) {
        heap *h = &S->sh[s], *hf = &S->shf[s];
        if (var->eager_free)
            for (;;) {
                S->tmp.n = 0;
                take(S, hf, K_STREAM);
                if (try_issue(S, s, h, hf, 1, &t_next) == NONE)
                    break;
            }
        for (;;) {
            if (var->jit && S->sf[s] >= t_next)
                break;
            /* the most urgent of both heaps, in key order */
            S->tmp.n = 0;
            take(S, h, K_STREAM);
            size_t nh = S->tmp.n;
            take(S, hf, K_STREAM);
            for (size_t i = nh; i < S->tmp.n; i++) { /* merge: insertion */
                hent x = S->tmp.e[i];
                size_t j = i;
                while (j > 0 && hless(&x, &S->tmp.e[j - 1])) {
                    S->tmp.e[j] = S->tmp.e[j - 1];
                    j--;
                }
                S->tmp.e[j] = x;
            }
            if (try_issue(S, s, h, hf, 0, &t_next) == NONE)
                break;
        }
    }
}

/* Order among the ancestors force() places: collectives first (most
 * urgent first), then anything else, waits last (soonest done first). */
static hent force_key(const ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    switch (b->cls[v]) {
    case C_COLL:
        return (hent){0, b->tpos[v],
                      b->dom[v] == NONE ? (double)INFINITY : (double)b->dom[v],
                      v};
    case C_WAIT:
        return (hent){2, b->tpos[v], S->wend[v], v};
    default:
        return (hent){1, b->tpos[v], 0.0, v};
    }
}

/* Schedules every unscheduled ancestor of f (collectives and waits: all
 * compute ancestors are placed already), collectives first, each wait as
 * late as it can go. */
static void force(ov_run *S, uint32_t f)
{
    const ov_base *b = S->b;
    if (++S->epoch == 0) {
        memset(S->mark, 0, (size_t)b->n * sizeof *S->mark);
        memset(S->mark2, 0, (size_t)b->n * sizeof *S->mark2);
        S->epoch = 1;
    }
    uint32_t ep = S->epoch, ns = 0, na = 0;
    S->stk[ns++] = f;
    S->mark[f] = ep;
    while (ns > 0) {
        uint32_t x = S->stk[--ns];
        uint32_t op = b->ord_prev[x];
        for (uint32_t e = b->deps.off[x]; e <= b->deps.off[x + 1]; e++) {
            uint32_t d = e < b->deps.off[x + 1] ? b->deps.idx[e] : op;
            if (d == NONE || S->sched[d] || S->mark[d] == ep)
                continue;
            S->mark[d] = ep;
            S->list[na++] = d;
            S->stk[ns++] = d;
        }
    }
    if (na == 0)
        return;
    S->ah.n = 0;
    for (uint32_t i = 0; i < na; i++) {
        uint32_t a = S->list[i];
        if (S->unmet[a] == 0) {
            S->mark2[a] = ep;
            push(S, &S->ah, force_key(S, a));
        }
    }
    while (S->ah.n > 0 && !S->oom) {
        uint32_t a = heap_pop(&S->ah).v;
        if (S->sched[a])
            continue;
        sched_node(S, a);
        uint32_t on = b->ord_next[a];
        for (uint32_t e = b->users.off[a]; e <= b->users.off[a + 1]; e++) {
            uint32_t u = e < b->users.off[a + 1] ? b->users.idx[e] : on;
            if (u == NONE || u == f || S->mark[u] != ep || S->mark2[u] == ep ||
                S->sched[u] || S->unmet[u] != 0)
                continue;
            S->mark2[u] = ep;
            push(S, &S->ah, force_key(S, u));
        }
    }
}

/* Would running frame node x now, ahead of the input order, keep memory
 * within the budget? */
static int frame_mem_ok(ov_run *S, uint32_t x)
{
    const ov_base *b = S->b;
    if (S->B == NO_LIMIT)
        return 1;
    if (S->cur + b->alloc[x] > S->B)
        return 0;
    return !S->use_seg || b->dref[x] <= 0 || b->tpos[x] <= S->lo ||
           seg_max(&S->seg, S->lo, b->tpos[x]) + b->dref[x] <= S->B;
}

/* The next frame node: the input order's next one (the frontier), or in
 * the dynamic variants the best ready one that does not stall. */
static uint32_t pick_frame(ov_run *S, uint32_t *stalled_alone)
{
    const ov_base *b = S->b;
    *stalled_alone = 0;
    if (S->fi >= b->n)
        return NONE;
    uint32_t fs = b->topo[S->fi];
    if (S->var->frame == FR_REF || S->window == 0)
        return fs;
    /* Near the budget, the input order's next node goes first when it is
     * ready and frees at least what it allocates: running other work
     * ahead of it would hold its inputs live longer. A tighter budget
     * (the rebuild after an excess) makes this rule bite earlier. */
    if (S->B != NO_LIMIT && S->unmet[fs] == 0 && b->dref[fs] <= 0 &&
        S->cur + b->max_alloc > S->B)
        return fs;
    S->tmp.n = 0;
    while (S->fh.n > 0 && S->tmp.n < K_FRAME) {
        hent x = heap_pop(&S->fh);
        if (S->sched[x.v]) {
            S->in_fh[x.v] = 0;
            continue;
        }
        push(S, &S->tmp, x);
    }
    uint32_t chosen = NONE;
    for (size_t i = 0; i < S->tmp.n && chosen == NONE; i++) {
        uint32_t x = S->tmp.e[i].v;
        if (x != fs && S->window > 0 &&
            b->frank[x] > b->frank[fs] + (uint32_t)S->window)
            continue;
        if (stall_of(S, x) > 0)
            continue;
        if (x != fs && !frame_mem_ok(S, x))
            continue;
        chosen = x;
    }
    for (size_t i = 0; i < S->tmp.n; i++)
        push(S, &S->fh, S->tmp.e[i]);
    if (chosen == NONE) {
        *stalled_alone = 1;
        return fs;
    }
    return chosen;
}

/* No frame node is left: collectives first (most urgent), then waits. */
static void tail_step(ov_run *S)
{
    const ov_base *b = S->b;
    heap *bh = NULL;
    for (uint32_t s = 0; s < 2 * b->n_streams; s++) {
        heap *h = s < b->n_streams ? &S->sh[s] : &S->shf[s - b->n_streams];
        while (h->n > 0 && S->sched[h->e[0].v])
            heap_pop(h);
        if (h->n > 0 && (!bh || hless(&h->e[0], &bh->e[0])))
            bh = h;
    }
    if (bh) {
        issue(S, heap_pop(bh).v);
        return;
    }
    while (S->wh.n > 0) {
        uint32_t w = heap_pop(&S->wh).v;
        if (!S->sched[w]) {
            sched_node(S, w);
            return;
        }
    }
    for (uint32_t i = 0; i < b->n; i++) { /* cannot happen on a DAG */
        uint32_t v = b->topo[i];
        if (!S->sched[v] && S->unmet[v] == 0) {
            sched_node(S, v);
            return;
        }
    }
}

/* Builds one order. Returns 0, -1 on OOM, 1 when stuck (a bug). */
static int sweep(ov_run *S, const ov_variant *var, int64_t budget, int64_t cap,
                 long window)
{
    const ov_base *b = S->b;
    uint32_t n = b->n;
    S->var = var;
    S->B = budget;
    S->cap = cap;
    S->window = window;
    S->k = 0;
    S->now = 0;
    S->cur = S->peak = b->baseline;
    S->fi = 0;
    S->oom = 0;
    S->fh.n = S->wh.n = S->ah.n = S->tmp.n = 0;
    for (uint32_t s = 0; s < b->n_streams; s++) {
        S->sh[s].n = 0;
        S->shf[s].n = 0;
        S->sf[s] = 0;
        S->infl[s] = 0;
    }
    memcpy(S->rem, b->nreaders, (size_t)b->g->n_buffers * sizeof *S->rem);
    S->use_seg = budget != NO_LIMIT;
    if (S->use_seg)
        seg_build(&S->seg, b->level, n);
    for (uint32_t v = 0; v < n; v++) {
        S->sched[v] = S->in_fh[v] = S->in_sh[v] = 0;
        S->flags[v] = 0;
        S->cend[v] = S->wend[v] = 0;
        S->ready_t[v] = INFINITY;
        uint32_t u = CS_ROW_LEN(b->deps, v);
        if (b->ord_prev[v] != NONE && !b->ord_dup[v])
            u++;
        S->unmet[v] = u;
    }
    for (uint32_t v = 0; v < n; v++) {
        uint32_t bl = 0;
        uint32_t op = b->ord_prev[v];
        for (uint32_t e = b->deps.off[v]; e <= b->deps.off[v + 1]; e++) {
            uint32_t d = e < b->deps.off[v + 1] ? b->deps.idx[e]
                         : (op != NONE && !b->ord_dup[v] ? op : NONE);
            if (d != NONE && !(b->cls[d] == C_COMPUTE && S->unmet[d] == 0))
                bl++;
        }
        S->blockers[v] = bl;
    }
    for (uint32_t v = 0; v < n; v++) {
        if (S->unmet[v] == 0 && b->cls[v] == C_WAIT)
            became_ready(S, v); /* a wait with no dependency: ill-formed
                                   but harmless */
        else
            touch(S, v);
    }
    advance_frontier(S);
    while (S->k < n) {
        uint32_t k0 = S->k;
        if (S->oom)
            return -1;
        /* 1. waits already complete */
        while (S->wh.n > 0) {
            const hent *t = &S->wh.e[0];
            if (S->sched[t->v]) {
                heap_pop(&S->wh);
                continue;
            }
            if (t->a > S->now)
                break;
            sched_node(S, heap_pop(&S->wh).v);
        }
        /* 2. the next frame node */
        uint32_t stalled = 0;
        uint32_t f = pick_frame(S, &stalled);
        if (f == NONE) {
            if (S->k < n)
                tail_step(S);
            if (S->k == k0)
                return 1;
            continue;
        }
        double stall = stall_of(S, f);
        if (stalled && stall > 0) {
            /* Everything ready would stall: wait for whichever collective
             * ends first rather than for f's (it may unlock other compute),
             * when that is sooner. */
            while (S->wh.n > 0 && S->sched[S->wh.e[0].v])
                heap_pop(&S->wh);
            if (S->wh.n > 0 && S->wh.e[0].a <= S->now + stall) {
                prefetch(S, S->wh.e[0].a);
                uint32_t w = heap_pop(&S->wh).v;
                if (!S->sched[w])
                    sched_node(S, w);
                continue;
            }
        }
        /* 3. feed the comm streams */
        double t_next = S->now + stall + b->rt[f];
        prefetch(S, t_next);
        /* 4. its waits, then the frame node */
        if (!S->sched[f]) {
            if (stalled) {
                /* nothing independent was ready: note it on the
                 * collectives this node waits for */
                for (uint32_t e = b->deps.off[f]; e < b->deps.off[f + 1]; e++) {
                    uint32_t w = b->deps.idx[e];
                    if (S->sched[w] || b->cls[w] != C_WAIT)
                        continue;
                    for (uint32_t x = b->wcoll.off[w]; x < b->wcoll.off[w + 1];
                         x++)
                        S->flags[b->wcoll.idx[x]] |= F_NOCOMP;
                }
            }
            force(S, f);
            sched_node(S, f);
        }
        if (S->k == k0)
            return 1;
    }
    return S->oom ? -1 : 0;
}

/* Moves each wait that frees nothing to just before its first dependent
 * (the end when it has none), and never past the last reader of a buffer
 * it reads, so it never becomes the one that frees it. The sweep places
 * a completed wait as soon as it notices (it may unlock a collective);
 * where it unlocks nothing, later is as fast — a wait only holds the
 * compute stream back, and a later point is never earlier in time — and
 * costs no memory, and it is where XLA's and Inductor's schedulers put
 * it. Skipped under overlap_max_in_flight_bytes: the limit counts a
 * collective as in flight until its wait. O(V + E). */
static void sink_waits_late(ov_run *S)
{
    const ov_base *b = S->b;
    uint32_t n = b->n, nb = b->g->n_buffers;
    for (uint32_t k = 0; k < n; k++)
        S->pos[S->order[k]] = k;
    for (uint32_t x = 0; x < nb; x++)
        S->lastpos[x] = 0;
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (S->pos[v] > S->lastpos[x])
                S->lastpos[x] = S->pos[v];
        }
    for (uint32_t k = 0; k <= n; k++)
        S->head[k] = NONE;
    /* Waits to insert before position p, in their order: walk backward
     * and push at the front. */
    uint32_t moved = 0;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t w = S->order[k];
        S->next[w] = NONE;
        if (b->cls[w] != C_WAIT)
            continue;
        uint32_t bound = n;
        int frees = 0;
        for (uint32_t e = b->users.off[w]; e < b->users.off[w + 1]; e++)
            if (S->pos[b->users.idx[e]] < bound)
                bound = S->pos[b->users.idx[e]];
        for (uint32_t e = b->reads.off[w]; e < b->reads.off[w + 1]; e++) {
            uint32_t lp = S->lastpos[b->reads.idx[e]];
            if (lp == k)
                frees = 1;
            else if (lp < bound)
                bound = lp;
        }
        if (frees || b->unread_free[w] != 0 || bound <= k + 1)
            continue;
        S->next[w] = S->head[bound];
        S->head[bound] = w;
        S->pos[w] = NONE; /* moved: skipped at its old place */
        moved++;
    }
    if (moved == 0)
        return;
    uint32_t m = 0;
    for (uint32_t k = 0; k <= n; k++) {
        for (uint32_t w = S->head[k]; w != NONE; w = S->next[w])
            S->tmp_order[m++] = w;
        if (k < n && S->pos[S->order[k]] != NONE)
            S->tmp_order[m++] = S->order[k];
    }
    memcpy(S->order, S->tmp_order, (size_t)n * sizeof *S->order);
}

/* ---- judging, the pass --------------------------------------------------- */

/* Simulates order into sim; makespan and per-step peak out. */
static commsched_status judge(commsched_sim *sim, const uint32_t *order,
                              const double *rt, double *makespan,
                              int64_t *peak, commsched_error *err)
{
    commsched_status st = commsched_sim_run(sim, order, rt, NULL, err);
    if (st != COMMSCHED_OK)
        return st;
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    *makespan = t->makespan_ns;
    *peak = t->peak_memory_step;
    return COMMSCHED_OK;
}

static const char *limit_of(const ov_base *b, const ov_run *S, int from_sweep,
                            uint32_t c, const commsched_sim_node *a)
{
    double comm = b->rt[c];
    if (!(a->exposed_ns > 1e-9 * (comm > 1 ? comm : 1)))
        return "none";
    if (b->cls[c] == C_SYNC)
        return "sync";
    if (!from_sweep)
        return "input order kept";
    uint8_t fl = S->flags[c];
    if (fl & F_MEM)
        return "memory budget";
    if (fl & F_INFL)
        return "in-flight limit";
    if (a->start_ns > a->issue_ns)
        return "stream busy";
    /* Issued as soon as its inputs existed: what follows it needed it
     * too soon (or nothing independent was left to run). */
    if (!(a->issue_ns > S->ready_t[c]))
        return (fl & F_NOCOMP) ? "no compute left" : "data dependency";
    return "stream busy"; /* held back while its stream was occupied */
}

static double hidden(double comm, double exposed)
{
    if (!(comm > 0))
        return 1.0;
    double h = 1.0 - exposed / comm;
    return h < 0 ? 0 : h > 1 ? 1 : h;
}

/* The statistics: one row per collective in output order. */
static commsched_status record_stats(cs_pass_ctx *ctx, const ov_base *b,
                                     const ov_run *S, int from_sweep,
                                     const commsched_sim_node *before,
                                     const uint32_t *order_in,
                                     const commsched_sim_node *after,
                                     const uint32_t *order_out)
{
    cs_pass_record *rec = ctx->rec;
    const commsched_graph *g = b->g;
    uint32_t n = b->n, nc = 0;
    for (uint32_t v = 0; v < n; v++)
        nc += b->cls[v] == C_COLL || b->cls[v] == C_SYNC;
    free(rec->overlap);
    rec->overlap = cs_calloc(nc ? nc : 1, sizeof *rec->overlap);
    if (!rec->overlap)
        goto oom;
    uint32_t i = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t c = order_out[k];
        if (b->cls[c] != C_COLL && b->cls[c] != C_SYNC)
            continue;
        commsched_overlap_stats *o = &rec->overlap[i++];
        const commsched_sim_node *sb = &before[c], *sa = &after[c];
        o->node = c;
        o->wait = sa->wait;
        o->issue_before = sb->position;
        o->issue_after = sa->position;
        o->wait_before = sb->wait == NONE ? NONE : before[sb->wait].position;
        o->wait_after = sa->wait == NONE ? NONE : after[sa->wait].position;
        o->comm_ns = b->rt[c];
        o->exposed_before_ns = sb->exposed_ns;
        o->exposed_after_ns = sa->exposed_ns;
        o->hidden_before = hidden(o->comm_ns, sb->exposed_ns);
        o->hidden_after = hidden(o->comm_ns, sa->exposed_ns);
        o->limit = limit_of(b, S, from_sweep, c, sa);
        commsched_node_stats *row = cs_record_row(rec, c);
        if (!row)
            goto oom;
        row->comm_time = o->comm_ns;
        row->comp_time = sa->overlapped_ns;
        row->initial_exposed = sb->exposed_ns;
        row->final_exposed = sa->exposed_ns;
        row->moves = o->issue_before > o->issue_after
                         ? o->issue_before - o->issue_after
                         : 0;
        char buf[160];
        char *lf = cs_strdup(o->limit == NULL ? "None"
                             : strcmp(o->limit, "none") == 0 ? "None"
                                                             : o->limit);
        if (o->wait_after == NONE)
            snprintf(buf, sizeof buf,
                     "issue %u -> %u, no wait, hidden %.0f%% -> %.0f%%",
                     o->issue_before, o->issue_after, 100 * o->hidden_before,
                     100 * o->hidden_after);
        else
            snprintf(buf, sizeof buf,
                     "issue %u -> %u, wait %u -> %u, hidden %.0f%% -> %.0f%%",
                     o->issue_before, o->issue_after, o->wait_before,
                     o->wait_after, 100 * o->hidden_before,
                     100 * o->hidden_after);
        char *info = cs_strdup(buf);
        cs_row_set(&row->limiting_factor, lf);
        cs_row_set(&row->overlap_info, info);
        if (!lf || !info)
            goto oom;
    }
    rec->pub.n_overlap = i;
    rec->pub.overlap = rec->overlap;
    (void)g;
    (void)order_in;
    return COMMSCHED_OK;
oom:
    return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

commsched_status cs_pass_overlap(cs_pass_ctx *ctx)
{
    const commsched_graph *g = ctx->g;
    const commsched_knobs *kn = ctx->k;
    uint32_t n = g->n_nodes;
    double factor = kn->overlap_peak_budget;
    if (!(factor >= 1.0))
        return commsched_error_set(ctx->err, COMMSCHED_EINVAL, NULL,
                                   "overlap_peak_budget must be >= 1 (a "
                                   "factor of the input order's peak), got %g",
                                   factor);
    ov_base b;
    ov_run S;
    memset(&S, 0, sizeof S);
    commsched_sim *sim = NULL;
    commsched_sim_node *before = NULL, *after = NULL;
    uint32_t *in_order = NULL, *best = NULL;
    double *best_ready = NULL;
    uint8_t *best_flags = NULL;
    commsched_status st = COMMSCHED_OK;
    int rc = base_init(&b, g, ctx->s, ctx->runtime_ns);
    if (rc == 1) {
        base_free(&b);
        return commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                   "overlap: the graph's edges form a cycle");
    }
    if (rc != 0)
        goto oom;
    if (base_order(&b, 0, kn->overlap_collective_order) != 0 ||
        (kn->overlap_collective_order != CS_ORDER_INPUT &&
         base_order(&b, 1, CS_ORDER_INPUT) != 0))
        goto oom;
    base_use(&b, 0);
    size_t nn = n ? n : 1;
    in_order = cs_malloc_array(nn, sizeof *in_order);
    best = cs_malloc_array(nn, sizeof *best);
    best_ready = cs_malloc_array(nn, sizeof *best_ready);
    best_flags = cs_malloc_array(nn, sizeof *best_flags);
    before = cs_malloc_array(nn, sizeof *before);
    after = cs_malloc_array(nn, sizeof *after);
    if (!in_order || !best || !best_ready || !best_flags ||
        !before || !after || run_alloc(&S, &b) != 0)
        goto oom;
    if ((st = commsched_schedule_to_array(ctx->s, in_order, ctx->err)) !=
            COMMSCHED_OK ||
        (st = commsched_sim_create(g, &sim, ctx->err)) != COMMSCHED_OK)
        goto cleanup;

    /* The input order: the bar to beat and the budget's base. */
    double in_makespan;
    int64_t in_peak;
    if ((st = judge(sim, in_order, ctx->runtime_ns, &in_makespan, &in_peak,
                    ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    memcpy(before, commsched_sim_get_nodes(sim), nn * sizeof *before);
    int64_t budget = NO_LIMIT;
    if (!isinf(factor)) {
        double lim = floor(factor * (double)in_peak);
        budget = lim >= 9.2e18 ? NO_LIMIT : (int64_t)lim;
        if (budget < in_peak)
            budget = in_peak;
    }
    int64_t cap = kn->overlap_max_in_flight_bytes > 0
                      ? (int64_t)kn->overlap_max_in_flight_bytes
                      : 0;
    long window = kn->overlap_reorder_window;

    size_t nv = kn->overlap_search == CS_SEARCH_FULL ? N_VARIANTS : N_FAST;
    const ov_variant *win = NULL;
    double win_level = 0;
    double best_ms = in_makespan;
    int64_t best_pk = in_peak;
    uint32_t tried = 0;
    /* The budget itself and, below it, the standard levels: an order that
     * fits a tighter level fits the budget too, and the heuristics do not
     * always do better with more room, so searching the tighter levels
     * keeps the result monotone in the budget across those levels. */
    static const double levels[] = {1.0, 1.25, 1.5, 2.0};
    double lv[1 + sizeof levels / sizeof levels[0]];
    size_t nl = 0;
    lv[nl++] = factor;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (levels[i] < factor)
            lv[nl++] = levels[i];
    for (size_t li = 0; li < nl; li++) {
        int64_t target = NO_LIMIT;
        if (!isinf(lv[li])) {
            double lim = floor(lv[li] * (double)in_peak);
            target = lim >= 9.2e18 ? NO_LIMIT : (int64_t)lim;
            if (target < in_peak)
                target = in_peak;
            if (target > budget)
                target = budget;
        }
        for (size_t vi = 0; vi < nv; vi++) {
            const ov_variant *var = &variants[vi];
            if (window == 0 && var->frame != FR_REF)
                continue; /* the same order as the input-order variant */
            if (var->pinned && b.n_sets < 2)
                continue; /* the knob pins the order already */
            base_use(&b, var->pinned ? 1 : 0);
            int64_t B = target;
            for (int attempt = 0; attempt < 3; attempt++) {
                rc = sweep(&S, var, B, cap, window);
                if (rc < 0)
                    goto oom;
                if (rc > 0) {
                    st = commsched_error_set(ctx->err, COMMSCHED_EINTERNAL,
                                             NULL,
                                             "overlap: variant %s placed %u "
                                             "of %u nodes",
                                             var->name, S.k, n);
                    goto cleanup;
                }
                if (cap == 0)
                    sink_waits_late(&S);
                double ms;
                int64_t pk;
                tried++;
                if ((st = judge(sim, S.order, ctx->runtime_ns, &ms, &pk,
                                ctx->err)) != COMMSCHED_OK)
                    goto cleanup;
                if (target == NO_LIMIT || pk <= target) {
                    /* faster wins; as fast, less memory wins */
                    if (ms < best_ms ||
                        (win && ms == best_ms && pk < best_pk)) {
                        best_ms = ms;
                        best_pk = pk;
                        win = var;
                        win_level = lv[li];
                        memcpy(best, S.order, nn * sizeof *best);
                        memcpy(best_flags, S.flags, nn * sizeof *best_flags);
                        memcpy(best_ready, S.ready_t, nn * sizeof *best_ready);
                    }
                    break;
                }
                /* Over the level: the tree's view of the future was off
                 * by at least the excess. Rebuild with that much less
                 * room. */
                B -= pk - target;
                if (B < 0)
                    break;
            }
        }
    }

    const uint32_t *final = win ? best : in_order;
    if (win) { /* the winner's flags, for its statistics */
        memcpy(S.flags, best_flags, nn * sizeof *S.flags);
        memcpy(S.ready_t, best_ready, nn * sizeof *S.ready_t);
    }
    double ms_after;
    int64_t pk_after;
    if ((st = judge(sim, final, ctx->runtime_ns, &ms_after, &pk_after,
                    ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    memcpy(after, commsched_sim_get_nodes(sim), nn * sizeof *after);
    if (budget != NO_LIMIT && pk_after > budget && final != in_order) {
        st = commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                 "overlap: peak %lld above the budget %lld",
                                 (long long)pk_after, (long long)budget);
        goto cleanup;
    }
    /* Relink the list: moving each node to the end in turn leaves them in
     * exactly that order. */
    if (final != in_order)
        for (uint32_t k = 0; k < n; k++)
            commsched_schedule_move_run_before(ctx->s, final[k], final[k],
                                               NONE);
    if (ctx->verify) {
        commsched_memory *m = NULL;
        if ((st = commsched_schedule_check(ctx->s, 1, ctx->err)) !=
                COMMSCHED_OK ||
            (st = commsched_memory_create(ctx->s, &m, ctx->err)) !=
                COMMSCHED_OK)
            goto cleanup;
        int64_t pk = commsched_memory_peak(m, ctx->s, NULL);
        commsched_memory_destroy(m);
        if (pk != pk_after) {
            st = commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                     "overlap: memory model peak %lld, "
                                     "simulator %lld",
                                     (long long)pk, (long long)pk_after);
            goto cleanup;
        }
    }
    if (win && win_level != factor)
        snprintf(ctx->rec->overlap_variant, sizeof ctx->rec->overlap_variant,
                 "%s, budget %g", win->name, win_level);
    else
        snprintf(ctx->rec->overlap_variant, sizeof ctx->rec->overlap_variant,
                 "%s", win ? win->name : "input");
    ctx->rec->pub.overlap_variant = ctx->rec->overlap_variant;
    ctx->rec->pub.overlap_budget_bytes = budget == NO_LIMIT ? -1 : budget;
    ctx->rec->pub.overlap_candidates = tried;
    st = record_stats(ctx, &b, &S, win != NULL, before, in_order, after,
                      final);
    goto cleanup;
oom:
    st = commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                             "out of memory");
cleanup:
    commsched_sim_destroy(sim);
    free(before);
    free(after);
    free(in_order);
    free(best);
    free(best_ready);
    free(best_flags);
    run_free(&S);
    base_free(&b);
    return st;
}
