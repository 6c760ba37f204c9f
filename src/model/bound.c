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
 * `after_fake` edges are left out: an order may drop them.
 *
 * Sets (graphs up to BOUND_SETS_MAX nodes): paths take the longest branch,
 * but the compute stream runs parallel branches one after the other. With
 * anc(v) = v's ancestors (data, after, in-place edges: every order runs
 * them before v) and enf(a) = the nodes reached from a over end-enforced
 * edges (every order starts them after a ends), and C = the compute
 * stream's nodes:
 * - issue(v) >= min h(x) + sum p(x) over x in anc(v) & C (they run one at
 *   a time and end before the host issues v);
 * - issue(v) >= h(a) + p(a) + sum p(x) over x in enf(a) & anc(v) & C, for
 *   an anchor a in anc(v) (a wait or collective: the comm a segment of
 *   compute has to wait for) when that sum is over at least one node (an
 *   async a's control edge to v alone lets v be issued while a runs);
 * - symmetrically, q(v) >= sum p(x) + min q(x) over x in enf(v) & C, and
 *   q(v) >= sum p(x) over x in anc(c) & enf(v) & C, + p(c) + q(c), for an
 *   anchor c in enf(v) (c starts after v ends and after those x end).
 * Any subset of anchors is valid; the BOUND_ANCHORS nearest by node index
 * are taken, a rule that depends on the graph alone. */
#include "bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rankset.h"

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

/* Jackson's preemptive schedule of jobs[0..m) (node indices sorted by
 * head): the largest completion + tail. The ready jobs are a rank set
 * keyed by trank (largest tail first, then node index: the keys are
 * distinct and fixed, and the set is empty again at the end). rem is
 * scratch by node index. */
static double jackson(const uint32_t *jobs, uint32_t m, const double *head,
                      const double *p, const double *tail,
                      const uint32_t *trank, const uint32_t *tat,
                      double *rem, cs_rankset *ready)
{
    double t = 0, best = 0;
    uint32_t i = 0, nready = 0;
    while (i < m || nready > 0) {
        if (nready == 0 && head[jobs[i]] > t)
            t = head[jobs[i]];
        while (i < m && head[jobs[i]] <= t) {
            uint32_t j = jobs[i++];
            rem[j] = p[j];
            cs_rankset_add(ready, trank[j]);
            nready++;
        }
        uint32_t r = cs_rankset_next(ready, 0);
        uint32_t j = tat[r];
        double next = i < m ? head[jobs[i]] : INFINITY;
        if (t + rem[j] <= next) {
            t += rem[j];
            if (t + tail[j] > best)
                best = t + tail[j];
            cs_rankset_remove(ready, r);
            nready--;
        } else { /* preempted by the next release: stays ready */
            rem[j] -= next - t;
            t = next;
        }
    }
    return best;
}

/* Sets of nodes, one bit per node index, W words per node. */
typedef struct sets {
    uint32_t w;
    uint64_t *anc;  /* anc[v]: v's ancestors over data, after, in-place */
    uint64_t *denf; /* denf[v]: reached from v over end-enforced edges */
    uint64_t *comp; /* compute-stream nodes with a runtime */
    uint64_t *mark; /* waits and collectives (the anchors) */
} sets;

static inline uint64_t *row(uint64_t *base, const sets *S, uint32_t v)
{
    return base + (size_t)v * S->w;
}

static inline void set_bit(uint64_t *r, uint32_t v)
{
    r[v >> 6] |= (uint64_t)1 << (v & 63);
}

/* Sum of rt over the bits of x & y & comp, and the least `key` among them
 * (when minkey is not NULL). */
static double weigh(const sets *S, const uint64_t *x, const uint64_t *y,
                    const double *rt, const double *key, double *minkey)
{
    double sum = 0, lo = INFINITY;
    for (uint32_t i = 0; i < S->w; i++) {
        uint64_t m = x[i] & y[i] & S->comp[i];
        while (m) {
            uint32_t v = i * 64 + (uint32_t)__builtin_ctzll(m);
            m &= m - 1;
            sum += rt[v];
            if (key && key[v] < lo)
                lo = key[v];
        }
    }
    if (minkey)
        *minkey = lo;
    return sum;
}

/* Anchors considered per node: the nearest in node-index order (any subset
 * of anchors gives a valid bound; a fixed rule keeps it order-free). */
#define BOUND_ANCHORS 8
/* Graphs above this many nodes skip the set refinement (its memory grows
 * with n^2 / 4 bytes): their heads and tails are the path ones. */
#define BOUND_SETS_MAX 8192u

/* The set refinement of v's head: a bound on issue(v) from the compute
 * stream's serial load before v (the file comment, "Sets"). */
static double refine_head(const sets *S, uint32_t v, const double *rt,
                          const double *head)
{
    uint64_t *A = row(S->anc, S, v);
    double lo, best = 0;
    double load = weigh(S, A, A, rt, head, &lo);
    if (load > 0)
        best = lo + load;
    uint32_t taken = 0;
    for (uint32_t i = S->w; i-- > 0 && taken < BOUND_ANCHORS;) {
        uint64_t m = A[i] & S->mark[i];
        while (m && taken < BOUND_ANCHORS) {
            uint32_t a = i * 64 + 63 - (uint32_t)__builtin_clzll(m);
            m &= ~((uint64_t)1 << (a & 63));
            taken++;
            /* Only through a segment: with none between them, v may be
             * issued while a still runs (an async a's control edge). */
            double seg = weigh(S, row(S->denf, S, a), A, rt, NULL, NULL);
            if (seg > 0 && head[a] + rt[a] + seg > best)
                best = head[a] + rt[a] + seg;
        }
    }
    return best;
}

/* The same for v's tail: the compute stream's serial load after v. */
static void refine_tail(const sets *S, uint32_t v, const double *rt,
                        double *tail)
{
    uint64_t *D = row(S->denf, S, v);
    double lo;
    double load = weigh(S, D, D, rt, tail, &lo);
    if (load > 0 && load + lo > tail[v])
        tail[v] = load + lo;
    uint32_t taken = 0;
    for (uint32_t i = 0; i < S->w && taken < BOUND_ANCHORS; i++) {
        uint64_t m = D[i] & S->mark[i];
        while (m && taken < BOUND_ANCHORS) {
            uint32_t c = i * 64 + (uint32_t)__builtin_ctzll(m);
            m &= m - 1;
            taken++;
            double x = weigh(S, row(S->anc, S, c), D, rt, NULL, NULL) +
                       rt[c] + tail[c];
            if (x > tail[v])
                tail[v] = x;
        }
    }
}

/* Calls f(d) for every edge d -> v that every order enforces at d's end. */
#define FOR_END_ENFORCED(g, v, single, d, body)                               \
    do {                                                                      \
        const cs_node *nd_ = &(g)->nodes[v];                                  \
        for (uint32_t e_ = (g)->deps.off[v]; e_ < (g)->deps.off[(v) + 1];     \
             e_++) {                                                          \
            uint32_t d = (g)->deps.idx[e_];                                   \
            if (end_enforced(&(g)->nodes[d], nd_, single)) {                  \
                body                                                          \
            }                                                                 \
        }                                                                     \
        if (nd_->kind == COMMSCHED_NODE_WAIT)                                 \
            for (uint32_t e_ = (g)->reads.off[v];                             \
                 e_ < (g)->reads.off[(v) + 1]; e_++) {                        \
                uint32_t d = (g)->buffers[(g)->reads.idx[e_]].producer;       \
                if (d != COMMSCHED_NONE &&                                    \
                    (g)->nodes[d].kind == COMMSCHED_NODE_COLLECTIVE) {        \
                    body                                                      \
                }                                                             \
            }                                                                 \
    } while (0)

int cs_stream_bound(const commsched_graph *g, const uint32_t *order,
                    const double *rt, int single, double *bound,
                    uint32_t *stream)
{
    uint32_t n = g->n_nodes;
    uint32_t S = single ? 2 : 1 + g->n_groups;
    *bound = 0;
    *stream = COMMSCHED_NONE;
    size_t nn = n ? n : 1;
    double *head = malloc(nn * 4 * sizeof *head);
    uint32_t *jobs = malloc(nn * sizeof *jobs);
    uint32_t *count = calloc(S, sizeof *count);
    uint64_t *key = malloc(nn * sizeof *key);
    uint32_t *tmp = malloc(nn * sizeof *tmp);
    uint32_t *trank = malloc(nn * sizeof *trank);
    uint32_t *tat = malloc(nn * sizeof *tat);
    cs_rankset ready = {0};
    sets X = {0};
    int rc = -1;
    if (!head || !jobs || !count || !key || !tmp || !trank || !tat ||
        cs_rankset_init(&ready, n) != 0)
        goto out;
    double *ih = head + n, *tail = ih + n, *rem = tail + n;
    if (n > 0 && n <= BOUND_SETS_MAX) {
        X.w = (n + 63) / 64;
        size_t words = (size_t)n * X.w;
        X.anc = calloc(2 * words + 2 * X.w, sizeof *X.anc);
        if (!X.anc)
            goto out;
        X.denf = X.anc + words;
        X.comp = X.denf + words;
        X.mark = X.comp + X.w;
        for (uint32_t v = 0; v < n; v++) {
            const cs_node *nd = &g->nodes[v];
            if (on_compute(nd) && rt[v] > 0)
                set_bit(X.comp, v);
            if (nd->kind != COMMSCHED_NODE_COMPUTE)
                set_bit(X.mark, v);
        }
        for (uint32_t k = n; k-- > 0;) { /* successors come first */
            uint32_t v = order[k];
            uint64_t *Dv = row(X.denf, &X, v);
            FOR_END_ENFORCED(g, v, single, d, {
                uint64_t *Dd = row(X.denf, &X, d);
                for (uint32_t i = 0; i < X.w; i++)
                    Dd[i] |= Dv[i];
                set_bit(Dd, v);
            });
        }
    }

    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        double is = 0, st = 0;
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            uint32_t d = g->deps.idx[e];
            double end = head[d] + rt[d];
            if (on_compute(&g->nodes[d])) {
                if (end > is)
                    is = end;
            } else if (ih[d] > is) {
                is = ih[d];
            }
            if (X.anc) {
                uint64_t *Av = row(X.anc, &X, v), *Ad = row(X.anc, &X, d);
                for (uint32_t i = 0; i < X.w; i++)
                    Av[i] |= Ad[i];
                set_bit(Av, d);
            }
        }
        FOR_END_ENFORCED(g, v, single, d, {
            if (head[d] + rt[d] > st)
                st = head[d] + rt[d];
        });
        if (X.anc) {
            double r = refine_head(&X, v, rt, head);
            if (r > is)
                is = r;
        }
        ih[v] = is;
        head[v] = st > is ? st : is;
        tail[v] = 0;
    }
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = order[k];
        if (X.anc)
            refine_tail(&X, v, rt, tail);
        double q = tail[v] + rt[v];
        FOR_END_ENFORCED(g, v, single, d, {
            if (q > tail[d])
                tail[d] = q;
        });
    }

    /* Jackson's order among ready jobs: largest tail first, then node
     * index (a stable sort of the nodes by the complement of the tail's
     * bits; heads and tails are sums of runtimes, >= +0). */
    for (uint32_t v = 0; v < n; v++) {
        key[v] = ~cs_radix_key(tail[v]);
        tat[v] = v;
    }
    cs_radix_sort(tat, tmp, n, key);
    for (uint32_t r = 0; r < n; r++)
        trank[tat[r]] = r;
    /* The jobs of each stream, grouped (a sync collective also holds the
     * compute stream, so it is listed twice), each group sorted by head
     * (then node index: stable from index order). */
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
    if (total > n) { /* one stream holds at most n: tmp suffices */
        uint32_t *more = realloc(jobs, total * sizeof *jobs);
        if (!more)
            goto out;
        jobs = more;
    }
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        key[v] = cs_radix_key(head[v]);
        if (on_compute(nd))
            jobs[count[0]++] = v;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE)
            jobs[count[stream_of(nd, single)]++] = v;
    }
    /* count[s] is now the end of stream s's jobs, the start of s + 1's. */
    for (uint32_t s = 0, at = 0; s < S; at = count[s++]) {
        uint32_t m = count[s] - at;
        if (m == 0)
            continue;
        cs_radix_sort(jobs + at, tmp, m, key);
        double b = jackson(jobs + at, m, head, rt, tail, trank, tat, rem,
                           &ready);
        if (b > *bound || *stream == COMMSCHED_NONE) {
            *bound = b;
            *stream = s;
        }
    }
    rc = 0;
out:
    free(X.anc);
    free(head);
    free(jobs);
    free(count);
    free(key);
    free(tmp);
    free(trank);
    free(tat);
    cs_rankset_free(&ready);
    return rc;
}
