/* commsched — the stream bound: a lower bound on the makespan of EVERY
 * order the simulator accepts for a graph (docs/REPORTS.md, "Lower bound";
 * the argument is written out there).
 *
 * Each stream (the compute stream; each comm stream) runs its nodes one at
 * a time. A node v cannot start before its head h(v), and once it ends the
 * step lasts at least its tail q(v) longer; both come from chains of edges
 * the simulator enforces in every order, so they hold for every order. The
 * stream's nodes then form a one-machine problem with release times h,
 * processing times p and delivery times q, and the optimum of its
 * preemptive relaxation — Jackson's preemptive schedule: always run the
 * released node with the largest tail — is a lower bound on the step.
 * That value is at least min h + sum p + min q over every subset of the
 * stream's nodes (Carlier 1982), so it dominates the stream's load and
 * every path through the stream's nodes.
 *
 * Heads (forward over the order, which is topological for data and
 * `after` edges in every accepted order):
 * - issue(v) >= ih(v) = max over v's dependencies d of h(d) + p(d) when d
 *   runs on the compute stream (the host issues v after d ended), and of
 *   ih(d) otherwise (the host issues in order);
 * - start(v) >= issue(v) for every node;
 * - start(v) >= h(d) + p(d) for the edges simulate.c enforces at the end:
 *   every edge out of a compute-stream node, an async collective's edge to
 *   a later collective on its own stream, and a wait's collectives.
 * Tails (backward): q(d) >= p(v) + q(v) over the same end-enforced edges.
 * `after_fake` edges are left out: an order may drop them. */
#include "bound.h"

#include <math.h>
#include <stdlib.h>

#include "heap.h"

static inline int on_compute(const cs_node *nd)
{
    return nd->kind != COMMSCHED_NODE_COLLECTIVE || nd->is_sync;
}

static inline uint32_t stream_of(const cs_node *nd, int single)
{
    if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
        return 0;
    return single ? 1u : 1u + nd->group;
}

/* Whether every order enforces start(v) >= end(d) for the edge d -> v. */
static inline int end_enforced(const cs_node *d, const cs_node *v, int single)
{
    if (on_compute(d))
        return 1;
    return v->kind == COMMSCHED_NODE_COLLECTIVE &&
           stream_of(d, single) == stream_of(v, single);
}

typedef struct job {
    double head;
    uint32_t v;
} job;

static int by_head(const void *a, const void *b)
{
    const job *x = a, *y = b;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

/* Jackson's preemptive schedule of jobs[0..m) (sorted by head): the
 * largest completion + tail. rem is scratch by node index. */
static int jackson(const job *jobs, uint32_t m, const double *p,
                   const double *tail, double *rem, cs_heap *h, double *out)
{
    double t = 0, best = 0;
    uint32_t i = 0;
    h->n = 0;
    while (i < m || h->n > 0) {
        if (h->n == 0 && jobs[i].head > t)
            t = jobs[i].head;
        while (i < m && jobs[i].head <= t) {
            uint32_t j = jobs[i++].v;
            rem[j] = p[j];
            cs_heap_item x = {0, -tail[j], j, j};
            if (cs_heap_push(h, x) != 0)
                return -1;
        }
        cs_heap_item top = cs_heap_pop(h);
        uint32_t j = top.v;
        double next = i < m ? jobs[i].head : INFINITY;
        if (t + rem[j] <= next) {
            t += rem[j];
            if (t + tail[j] > best)
                best = t + tail[j];
        } else { /* preempted by the next release */
            rem[j] -= next - t;
            t = next;
            if (cs_heap_push(h, top) != 0)
                return -1;
        }
    }
    *out = best;
    return 0;
}

int cs_stream_bound(const commsched_graph *g, const uint32_t *order,
                    const double *rt, int single, double *bound,
                    uint32_t *stream)
{
    uint32_t n = g->n_nodes;
    uint32_t S = single ? 2 : 1 + g->n_groups;
    *bound = 0;
    *stream = COMMSCHED_NONE;
    double *head = malloc((size_t)(n ? n : 1) * 4 * sizeof *head);
    job *jobs = malloc((size_t)(n ? n : 1) * sizeof *jobs);
    uint32_t *count = calloc(S, sizeof *count);
    cs_heap h = {0};
    int rc = -1;
    if (!head || !jobs || !count)
        goto out;
    double *ih = head + n, *tail = ih + n, *rem = tail + n;

    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        const cs_node *nd = &g->nodes[v];
        double is = 0, st = 0;
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            uint32_t d = g->deps.idx[e];
            const cs_node *dn = &g->nodes[d];
            double end = head[d] + rt[d];
            if (on_compute(dn)) {
                if (end > is)
                    is = end;
            } else if (ih[d] > is) {
                is = ih[d];
            }
            if (end_enforced(dn, nd, single) && end > st)
                st = end;
        }
        if (nd->kind == COMMSCHED_NODE_WAIT)
            for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++) {
                uint32_t p = g->buffers[g->reads.idx[e]].producer;
                if (p != COMMSCHED_NONE &&
                    g->nodes[p].kind == COMMSCHED_NODE_COLLECTIVE &&
                    head[p] + rt[p] > st)
                    st = head[p] + rt[p];
            }
        ih[v] = is;
        head[v] = st > is ? st : is;
        tail[v] = 0;
    }
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = order[k];
        const cs_node *nd = &g->nodes[v];
        double q = tail[v] + rt[v];
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            uint32_t d = g->deps.idx[e];
            if (end_enforced(&g->nodes[d], nd, single) && q > tail[d])
                tail[d] = q;
        }
        if (nd->kind == COMMSCHED_NODE_WAIT)
            for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++) {
                uint32_t p = g->buffers[g->reads.idx[e]].producer;
                if (p != COMMSCHED_NONE &&
                    g->nodes[p].kind == COMMSCHED_NODE_COLLECTIVE &&
                    q > tail[p])
                    tail[p] = q;
            }
    }

    /* The jobs of each stream, grouped (a sync collective also holds the
     * compute stream, so it is listed twice), each group sorted by head. */
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        if (on_compute(nd))
            count[0]++;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE)
            count[stream_of(nd, single)]++;
    }
    size_t total = 0;
    for (uint32_t s = 0; s < S; s++) { /* counts -> starts */
        size_t c = count[s];
        count[s] = (uint32_t)total;
        total += c;
    }
    if (total > n) {
        job *more = realloc(jobs, total * sizeof *jobs);
        if (!more)
            goto out;
        jobs = more;
    }
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        job x = {head[v], v};
        if (on_compute(nd))
            jobs[count[0]++] = x;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE)
            jobs[count[stream_of(nd, single)]++] = x;
    }
    /* count[s] is now the end of stream s's jobs, the start of s + 1's. */
    for (uint32_t s = 0, at = 0; s < S; at = count[s++]) {
        uint32_t m = count[s] - at;
        if (m == 0)
            continue;
        qsort(jobs + at, m, sizeof *jobs, by_head);
        double b;
        if (jackson(jobs + at, m, rt, tail, rem, &h, &b) != 0)
            goto out;
        if (b > *bound || *stream == COMMSCHED_NONE) {
            *bound = b;
            *stream = s;
        }
    }
    rc = 0;
out:
    free(head);
    free(jobs);
    free(count);
    cs_heap_fini(&h);
    return rc;
}
