/* commsched — the simulated step of a bucketing merge (bucket_mode=cost),
 * priced from the window of its incremental peak.
 *
 * In cost mode the greedy walk (passes/bucketing.c) keeps a merge only
 * when the simulated step gets shorter. Simulated from scratch that is
 * O(V) per merge tried and the pass grows with the square of the graph.
 * The window of bucketing_incr.c says which stretch of the order a merge
 * changes: positions L .. H of C (the order with the closed buckets
 * merged) become the window's nodes, and C's order goes on after H.
 *
 * The simulator (kernel.h) is max-plus: every clock is a maximum of sums
 * of runtimes along paths. So with the clocks at H + 1 (the compute
 * stream's `now`, each comm stream's free time, and the end of every
 * collective issued by then and waited for later), the step is, in exact
 * arithmetic, max(now + Gn(H + 1), free_s + Gs(s, H + 1), end_c +
 * Ge(c, H + 1)): G is the longest path from that clock to the end of the
 * step through the nodes after H, which are the input order's own nodes.
 * One backward pass over the input order gives every G. The clocks at
 * H + 1 take a simulation of C up to L (kept from one pricing to the
 * next) and of the window.
 *
 * The simulator computes in double, so the figure it would give and the
 * estimate differ by rounding: every time is a sum along one path of at
 * most N runtimes, none above the sum S of all of them, so each of the two
 * is within N u S of the exact value (u = 2^-53). The walk compares an
 * estimate with eps = (2N + 16) 2^-52 S and asks for the exact figures (a
 * full pricing) only when the two intervals it compares overlap.
 *
 * Not priced here (the caller prices the full way): a merge the peak did
 * not price incrementally, a member whose collective a wait after H
 * reads, more than CS_BK_PENDING collectives in flight at H + 1. A bucket
 * that closes on a full pricing ends this state for the pass. Verify mode
 * prices every merge both ways and requires the full figure inside the
 * interval. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bucketing_internal.h"
#include "kernel.h"

/* collectives in flight at a window's end that a pricing follows */
#define CS_BK_PENDING 256

/* The clocks at one position of an order and the collectives in flight
 * there (issued, a wait reading them still to come). */
typedef struct bk_clocks {
    double now;
    double *free_; /* per comm stream */
    uint32_t *pend;
    uint32_t n_pend;
    uint32_t pos;  /* the position they are at */
} bk_clocks;

/* One pricing's result, kept while its bucket is the open one. */
typedef struct time_rec {
    int valid;
    bk_clocks at;          /* the clocks at H + 1 */
    uint32_t *wv;          /* collectives the window issued ... */
    double *wend;          /* ... and their ends */
    uint32_t n_w;
    size_t cap_wv, cap_wend;
    double sum_new;        /* the bucket's runtimes */
} time_rec;

struct bk_time {
    int ok;
    uint32_t n, S, v_max;
    double *gn;            /* Gn at input positions 0 .. n */
    uint32_t *s_off;       /* per stream: its collectives' positions ... */
    uint32_t *s_pos;
    double *s_g;           /* ... and Gs there (before the collective) */
    uint32_t *w_off;       /* per node: the waits reading its output ... */
    uint32_t *w_pos;
    double *w_val;         /* ... and runtime + Gn after each */
    int64_t *last_wait;    /* per node: the last of them, -1: none */
    double sum;            /* runtimes of the nodes and closed buckets */
    double *end;           /* virtual id -> end of that collective in C (a
                              pricing writes its window's, then undoes) */
    double *undo;          /* C's ends the current pricing overwrote */
    size_t cap_undo;
    bk_clocks base;        /* C's clocks at the frontier */
    bk_clocks fwd;         /* and at some later position of C */
    bk_clocks scratch;     /* one pricing's */
    time_rec cur, acc;
};

static void clocks_free(bk_clocks *c)
{
    free(c->free_);
    free(c->pend);
}

static int clocks_init(bk_clocks *c, uint32_t S, uint32_t cap)
{
    c->free_ = cs_calloc((size_t)S + 1, sizeof *c->free_);
    c->pend = cs_malloc_array((size_t)cap + 1, sizeof *c->pend);
    c->now = 0.0;
    c->n_pend = 0;
    c->pos = 0;
    return c->free_ && c->pend ? 0 : -1;
}

static void clocks_copy(bk_clocks *to, const bk_clocks *from, uint32_t S)
{
    to->now = from->now;
    memcpy(to->free_, from->free_, (size_t)S * sizeof *to->free_);
    memcpy(to->pend, from->pend, (size_t)from->n_pend * sizeof *to->pend);
    to->n_pend = from->n_pend;
    to->pos = from->pos;
}

static void rec_free(time_rec *r)
{
    clocks_free(&r->at);
    free(r->wv);
    free(r->wend);
}

void cs_bk_time_destroy(bk_pass *p)
{
    bk_time_t *t = p->time;
    if (!t)
        return;
    free(t->gn);
    free(t->s_off);
    free(t->s_pos);
    free(t->s_g);
    free(t->w_off);
    free(t->w_pos);
    free(t->w_val);
    free(t->last_wait);
    free(t->end);
    free(t->undo);
    clocks_free(&t->base);
    clocks_free(&t->fwd);
    clocks_free(&t->scratch);
    rec_free(&t->cur);
    rec_free(&t->acc);
    free(t);
    p->time = NULL;
}

/* What the simulator does with a node, as cs_bk_step reads it. */
static int is_compute(const commsched_graph *g, uint32_t v)
{
    return g->nodes[v].kind == COMMSCHED_NODE_COMPUTE;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* The backward pass over the input order: Gn at every position, Gs at
 * every collective, and for every wait the runtime + Gn after it that a
 * collective it waits for reaches the end through. */
static int backward(bk_pass *p, bk_time_t *t)
{
    const commsched_graph *g = p->g;
    const double *rt = p->ctx->runtime_ns;
    uint32_t n = p->n, S = t->S;
    double *gs = cs_calloc((size_t)S + 1, sizeof *gs);
    double *ge = cs_malloc_array(n, sizeof *ge);
    uint32_t *fill = cs_calloc((size_t)S + 1, sizeof *fill);
    uint32_t *wfill = cs_calloc((size_t)n + 1, sizeof *wfill);
    int rc = -1;
    if (!gs || !ge || !fill || !wfill)
        goto done;
    /* sizes of the per-stream and per-collective lists */
    for (uint32_t v = 0; v < n; v++) {
        t->last_wait[v] = -1;
        ge[v] = -INFINITY;
        if (cs_is_collective(g, v))
            t->s_off[g->nodes[v].group + 1]++;
        else if (!is_compute(g, v))
            CS_BK_FOR_WAITED(g, v, c, t->w_off[c + 1]++);
    }
    for (uint32_t s = 0; s < S; s++)
        t->s_off[s + 1] += t->s_off[s];
    for (uint32_t v = 0; v < n; v++)
        t->w_off[v + 1] += t->w_off[v];
    t->s_pos = cs_malloc_array((size_t)t->s_off[S] + 1, sizeof *t->s_pos);
    t->s_g = cs_malloc_array((size_t)t->s_off[S] + 1, sizeof *t->s_g);
    t->w_pos = cs_malloc_array((size_t)t->w_off[n] + 1, sizeof *t->w_pos);
    t->w_val = cs_malloc_array((size_t)t->w_off[n] + 1, sizeof *t->w_val);
    if (!t->s_pos || !t->s_g || !t->w_pos || !t->w_val)
        goto done;
    double gn = 0.0;
    /* positions descend, so each list fills from its end */
    for (uint32_t q = n; q-- > 0;) {
        uint32_t v = p->order[q];
        double r = rt[v];
        t->gn[q + 1] = gn;
        t->sum += r;
        if (is_compute(g, v)) {
            gn = r + gn;
        } else if (cs_is_collective(g, v)) {
            uint32_t s = g->nodes[v].group;
            double tail = dmax(gs[s], ge[v]);
            if (g->nodes[v].is_sync)
                tail = dmax(tail, gn);
            double gv = r + tail;
            gs[s] = gv;
            uint32_t k = t->s_off[s + 1] - ++fill[s];
            t->s_pos[k] = q;
            t->s_g[k] = gv;
            gn = g->nodes[v].is_sync ? gv : dmax(gn, gv);
        } else {
            double val = r + gn;
            CS_BK_FOR_WAITED(g, v, c, {
                ge[c] = dmax(ge[c], val);
                uint32_t k = t->w_off[c + 1] - ++wfill[c];
                t->w_pos[k] = q;
                t->w_val[k] = val;
                if ((int64_t)q > t->last_wait[c])
                    t->last_wait[c] = q;
            });
            gn = val;
        }
    }
    t->gn[0] = gn;
    rc = 0;
done:
    free(gs);
    free(ge);
    free(fill);
    free(wfill);
    return rc;
}

commsched_status cs_bk_time_create(bk_pass *p)
{
    const commsched_graph *g = p->g;
    const double *rt = p->ctx->runtime_ns;
    uint32_t n = p->n;
    if (n == 0 || !p->incr)
        return COMMSCHED_OK;
    for (uint32_t v = 0; v < n; v++)
        if (!(rt[v] >= 0.0 && rt[v] < INFINITY))
            return COMMSCHED_OK; /* the full way only */
    bk_time_t *t = cs_calloc(1, sizeof *t);
    if (!t)
        return bk_oom(p->ctx->err);
    p->time = t;
    t->n = n;
    t->S = g->n_groups;
    t->v_max = (uint32_t)(n + 3 * (p->n_cands / 2 + 2));
    t->gn = cs_malloc_array((size_t)n + 1, sizeof *t->gn);
    t->s_off = cs_calloc((size_t)t->S + 2, sizeof *t->s_off);
    t->w_off = cs_calloc((size_t)n + 2, sizeof *t->w_off);
    t->last_wait = cs_malloc_array(n, sizeof *t->last_wait);
    t->end = cs_calloc(t->v_max, sizeof *t->end);
    if (!t->gn || !t->s_off || !t->w_off || !t->last_wait || !t->end ||
        clocks_init(&t->base, t->S, CS_BK_PENDING) != 0 ||
        clocks_init(&t->fwd, t->S, CS_BK_PENDING) != 0 ||
        clocks_init(&t->scratch, t->S, CS_BK_PENDING) != 0 ||
        clocks_init(&t->cur.at, t->S, CS_BK_PENDING) != 0 ||
        clocks_init(&t->acc.at, t->S, CS_BK_PENDING) != 0 ||
        backward(p, t) != 0) {
        cs_bk_time_destroy(p);
        return bk_oom(p->ctx->err);
    }
    t->ok = t->sum < INFINITY;
    return COMMSCHED_OK;
}

/* Moves C's clocks c forward to position `to` (C is the input order at
 * and after the frontier). */
static int advance(bk_pass *p, bk_time_t *t, bk_clocks *c, uint32_t to)
{
    const commsched_graph *g = p->g;
    for (; c->pos < to; c->pos++) {
        uint32_t v = p->order[c->pos];
        cs_clock clk = {c->now, c->free_};
        cs_bk_step(p, NULL, &clk, v, p->ctx->runtime_ns[v], t->end);
        c->now = clk.now;
        if (cs_is_collective(g, v)) {
            if (t->last_wait[v] >= 0) {
                /* drop what is no longer in flight before adding */
                uint32_t k = 0;
                for (uint32_t i = 0; i < c->n_pend; i++)
                    if (t->last_wait[c->pend[i]] > (int64_t)c->pos)
                        c->pend[k++] = c->pend[i];
                c->n_pend = k;
                if (c->n_pend >= CS_BK_PENDING)
                    return -1;
                c->pend[c->n_pend++] = v;
            }
        }
    }
    return 0;
}

/* Gs of stream s at position q: the one at its first collective there or
 * later; 0 after its last. */
static double gs_at(const bk_time_t *t, uint32_t s, uint32_t q)
{
    uint32_t lo = t->s_off[s], hi = t->s_off[s + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->s_pos[mid] < q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->s_off[s + 1] ? t->s_g[lo] : 0.0;
}

/* The longest path from collective c's end through its waits at q or
 * later; -inf when none is there. */
static double ge_at(const bk_time_t *t, uint32_t c, uint32_t q)
{
    double best = -INFINITY;
    for (uint32_t k = t->w_off[c]; k < t->w_off[c + 1]; k++)
        if (t->w_pos[k] >= q && t->w_val[k] > best)
            best = t->w_val[k];
    return best;
}

/* Room for `need` collectives of a window in r. */
static int rec_reserve(time_rec *r, size_t need)
{
    return cs_grow((void **)&r->wv, &r->cap_wv, need, sizeof *r->wv) != 0 ||
                   cs_grow((void **)&r->wend, &r->cap_wend, need,
                           sizeof *r->wend) != 0
               ? -1
               : 0;
}

int cs_bk_time_price(bk_pass *p, const bucket *extra, bk_step *step)
{
    bk_time_t *t = p->time;
    bk_window w;
    if (!t)
        return 0;
    t->cur.valid = 0;
    if (!t->ok || !cs_bk_incr_window(p, &w))
        return 0;
    const commsched_graph *g = p->g;
    uint32_t n = p->n, S = t->S, q = w.H + 1;
    for (uint32_t i = 0; i < extra->n; i++)
        if (t->last_wait[bk_member(p, extra, i)->coll] > (int64_t)w.H)
            return 0; /* a wait after the window reads a member */
    flat f = cs_bk_flat_of(p, extra);
    double rt_copy, rt_coll;
    if (cs_bk_new_runtimes(p, extra, &f, &rt_copy, &rt_coll) != COMMSCHED_OK ||
        !(rt_copy >= 0.0 && rt_copy < INFINITY) ||
        !(rt_coll >= 0.0 && rt_coll < INFINITY))
        return 0; /* the full way reports the error, if any */
    /* C's clocks at L */
    if (t->fwd.pos > w.L)
        clocks_copy(&t->fwd, &t->base, S);
    if (advance(p, t, &t->fwd, w.L) != 0) {
        t->ok = 0; /* too many collectives in flight to follow */
        return 0;
    }
    bk_clocks *c = &t->scratch;
    clocks_copy(c, &t->fwd, S);
    time_rec *r = &t->cur;
    r->n_w = 0;
    /* The window on C's clocks at L; the ends of its collectives go to
     * t->end, whose values for C come back after (undo). */
    uint32_t cp = n + 3 * (uint32_t)p->n_bk, co = cp + 1;
    cs_clock clk = {c->now, c->free_};
    int room = 1;
    for (uint32_t j = 0; j < w.m && room; j++) {
        uint32_t v = w.v[j];
        int coll = v < n ? cs_is_collective(g, v) : v == co;
        if (coll) {
            room = rec_reserve(r, (size_t)r->n_w + 1) == 0 &&
                   cs_grow((void **)&t->undo, &t->cap_undo,
                           (size_t)r->n_w + 1, sizeof *t->undo) == 0;
            if (!room)
                break;
            t->undo[r->n_w] = t->end[v];
            r->wv[r->n_w] = v;
        }
        cs_bk_step(p, extra, &clk, v,
                   v < n ? p->ctx->runtime_ns[v]
                   : v == cp ? rt_copy
                   : v == co ? rt_coll
                             : 0.0,
                   t->end);
        if (coll) {
            r->wend[r->n_w] = t->end[v];
            r->n_w++;
        }
    }
    c->now = clk.now;
    for (uint32_t i = r->n_w; i-- > 0;)
        t->end[r->wv[i]] = t->undo[i];
    if (!room)
        return 0; /* out of memory: the full way */
    /* the step: the clocks at q and the longest paths from them */
    double est = c->now + t->gn[q];
    for (uint32_t s = 0; s < S; s++)
        est = dmax(est, c->free_[s] + gs_at(t, s, q));
    bk_clocks *at = &r->at;
    at->now = c->now;
    memcpy(at->free_, c->free_, (size_t)S * sizeof *at->free_);
    at->pos = q;
    at->n_pend = 0;
    for (uint32_t i = 0; i < c->n_pend; i++) { /* issued before L */
        uint32_t u = c->pend[i];
        if (t->last_wait[u] < (int64_t)q)
            continue;
        if (at->n_pend == CS_BK_PENDING)
            return 0;
        at->pend[at->n_pend++] = u;
        est = dmax(est, t->end[u] + ge_at(t, u, q));
    }
    for (uint32_t i = 0; i < r->n_w; i++) { /* issued in the window */
        uint32_t u = r->wv[i];
        if (u >= n || t->last_wait[u] < (int64_t)q)
            continue;
        if (at->n_pend == CS_BK_PENDING)
            return 0;
        at->pend[at->n_pend++] = u;
        est = dmax(est, r->wend[i] + ge_at(t, u, q));
    }
    r->sum_new = rt_copy + rt_coll;
    double sum = t->sum + r->sum_new;
    double eps = (2.0 * (double)t->v_max + 16.0) * 0x1p-52 * sum;
    if (!(est < INFINITY) || !(eps < INFINITY))
        return 0;
    step->est = est;
    step->eps = eps;
    r->valid = 1;
    return 1;
}

static int rec_copy(time_rec *to, const time_rec *from, uint32_t S)
{
    to->valid = 0;
    if (rec_reserve(to, from->n_w) != 0)
        return -1;
    if (from->n_w > 0) { /* a window with no collective has no arrays */
        memcpy(to->wv, from->wv, (size_t)from->n_w * sizeof *to->wv);
        memcpy(to->wend, from->wend, (size_t)from->n_w * sizeof *to->wend);
    }
    to->n_w = from->n_w;
    clocks_copy(&to->at, &from->at, S);
    to->sum_new = from->sum_new;
    to->valid = from->valid;
    return 0;
}

void cs_bk_time_accept(bk_pass *p)
{
    bk_time_t *t = p->time;
    if (t && t->ok && rec_copy(&t->acc, &t->cur, t->S) != 0)
        t->ok = 0; /* out of memory: the full way from here on */
}

void cs_bk_time_opened(bk_pass *p)
{
    if (p->time)
        p->time->acc.valid = 0;
}

/* The open bucket (two or more members) has closed on its last accepted
 * pricing: C now has that window, and its frontier moves past it. */
void cs_bk_time_closed(bk_pass *p)
{
    bk_time_t *t = p->time;
    if (!t || !t->ok)
        return;
    time_rec *a = &t->acc;
    if (!a->valid) {
        t->ok = 0; /* priced the full way: C's clocks are not known here */
        return;
    }
    for (uint32_t i = 0; i < a->n_w; i++)
        t->end[a->wv[i]] = a->wend[i];
    clocks_copy(&t->base, &a->at, t->S);
    clocks_copy(&t->fwd, &t->base, t->S);
    t->sum += a->sum_new;
    a->valid = 0;
}
