/* commsched — the peak of a bucketing merge, priced incrementally.
 *
 * The greedy walk (passes/bucketing.c) prices every merge it tries on the
 * whole graph: the closed buckets and the open one merged, placed by a
 * stable topological sort by key (bucketing_price.c). Done from scratch,
 * that is O(V + E) per candidate and the pass grows with the square of
 * the graph. This file gives the same peak from a state kept across the
 * walk, in time that depends on the open bucket's stretch of the schedule.
 *
 * Why a window suffices. Let e(v) be the largest key on any path into v
 * (v included). The stable sort places nodes by increasing e, and the
 * nodes of one e by the same sort restricted to them: with distinct keys,
 * once everything of smaller e is placed, the node whose key is e is the
 * least ready one, and the others of its e (keys below e, all its
 * descendants) come before any node of larger e. Buckets close in wait
 * order, so the state keeps a frontier F: every node at input position
 * >= F is where the input order put it (e = its own key) in the graph with
 * the closed buckets merged (C). Merging the open bucket (T) changes
 * nothing before the first member's collective (position L >= F); the sort
 * is run from L, admitting nodes in input order, until every admitted node
 * and the bucket's three nodes are placed and the input order's next
 * node is due (H = the last admitted position): from there on T places
 * every node where C does.
 *
 * Memory. Peak memory is the maximum over positions of the live bytes
 * (cs_mem_step). For C the state keeps, per input position >= F, the level
 * in a segment tree with range additions, the bytes freed there, and per
 * root its last reader. T's levels are: C's before L; recomputed in the
 * window; after H, C's plus a few range additions (each member's output
 * dies, the bucket's flat buffer lives to the last reader of any of them).
 * When a bucket closes, the window of its last accepted pricing is frozen:
 * its maximum joins the prefix maximum, the additions stay, and F moves
 * past H.
 *
 * What it does not price (the caller then prices the full way, which stays
 * the reference): the simulated step (bucket_mode=cost), an in-place
 * member, a bucket that reaches before F, an unexpected edge into the
 * bucket. After a bucket that closed on such a pricing, the state is
 * dropped for the rest of the pass. Verify mode prices every merge both
 * ways and requires the same peak. */
#include <stdlib.h>
#include <string.h>

#include "bucketing_internal.h"
#include "kernel.h"
#include "segtree.h"

/* One pricing, kept while its bucket is the open one. */
typedef struct incr_rec {
    int valid;
    uint32_t L, H, m; /* m: nodes placed in the window (win) */
    int64_t wmax, carry_end;
    uint64_t key[3]; /* copy-in, collective, wait */
} incr_rec;

struct bk_incr {
    int ok;
    uint32_t n;          /* nodes */
    uint32_t n_roots;    /* buffers, then "_in"/"_out" of every bucket */
    uint32_t v_max;      /* virtual ids: nodes, then three per bucket */
    cs_segtree lv;       /* over input positions: C's level */
    int64_t *free_at;    /* bytes C frees at each position */
    int64_t *f_last;     /* root -> C's last reader position, -1: none */
    uint8_t *keep;       /* root -> never freed */
    uint8_t *counted;    /* buffer root -> freed at its last reader */
    flat *fl;            /* per bucket */
    uint64_t *bkey;      /* per bucket node (virtual id - n) */
    uint32_t F;
    int64_t carry_F, pm; /* live bytes before F; peak before F */
    /* scratch of one pricing */
    uint32_t epoch;
    uint32_t *adm, *plc; /* virtual id -> epoch when admitted / placed */
    uint32_t *indeg, *win;
    uint32_t *cnt_ep, *cnt[3]; /* old node -> edges into copy-in, coll, wait */
    uint32_t *r_ep, *lastw;    /* root -> epoch, last window index */
    cs_heap h;
    incr_rec cur, acc;
};

/* ---- segment tree: range add, range max ---------------------------------- */

/* Adds v to C's levels at positions a .. b (inclusive). */
static void range_add(bk_incr_t *s, uint32_t a, uint32_t b, int64_t v)
{
    if (a <= b && v != 0)
        cs_segtree_add(&s->lv, a, b + 1, v);
}

/* The highest of C's levels at positions a .. b, INT64_MIN when a > b. */
static int64_t range_max(const bk_incr_t *s, uint32_t a, uint32_t b)
{
    return a <= b ? cs_segtree_max(&s->lv, a, b + 1, NULL) : INT64_MIN;
}

/* ---- the state ------------------------------------------------------------- */

void cs_bk_incr_destroy(bk_pass *p)
{
    bk_incr_t *s = p->incr;
    if (!s)
        return;
    cs_segtree_free(&s->lv);
    free(s->free_at);
    free(s->f_last);
    free(s->keep);
    free(s->counted);
    free(s->fl);
    free(s->bkey);
    free(s->adm);
    free(s->plc);
    free(s->indeg);
    free(s->win);
    free(s->cnt_ep);
    for (int j = 0; j < 3; j++)
        free(s->cnt[j]);
    free(s->r_ep);
    free(s->lastw);
    cs_heap_fini(&s->h);
    free(s);
    p->incr = NULL;
}

/* C with no bucket merged is the input order: its levels as
 * cs_bk_virtual_price computes them with no bucket. */
commsched_status cs_bk_incr_create(bk_pass *p)
{
    const commsched_graph *g = p->g;
    uint32_t n = p->n, nbuf = g->n_buffers;
    if (n == 0)
        return COMMSCHED_OK;
    bk_incr_t *s = cs_calloc(1, sizeof *s);
    if (!s)
        return bk_oom(p->ctx->err);
    p->incr = s;
    size_t maxb = p->n_cands / 2 + 2;
    if ((uint64_t)n + 3 * (uint64_t)maxb >= UINT32_MAX ||
        (uint64_t)nbuf + 2 * (uint64_t)maxb >= UINT32_MAX) {
        cs_bk_incr_destroy(p);
        return COMMSCHED_OK; /* the full way only */
    }
    s->n = n;
    s->v_max = (uint32_t)(n + 3 * maxb);
    s->n_roots = (uint32_t)(nbuf + 2 * maxb);
    int tree_failed = cs_segtree_init(&s->lv, n) != 0;
    s->free_at = cs_calloc(n, sizeof *s->free_at);
    s->f_last = cs_malloc_array(s->n_roots, sizeof *s->f_last);
    s->keep = cs_calloc(s->n_roots, 1);
    s->counted = cs_calloc(nbuf + 1, 1);
    s->fl = cs_calloc(maxb, sizeof *s->fl);
    s->bkey = cs_calloc(3 * maxb, sizeof *s->bkey);
    s->adm = cs_calloc(s->v_max, sizeof *s->adm);
    s->plc = cs_calloc(s->v_max, sizeof *s->plc);
    s->indeg = cs_calloc(s->v_max, sizeof *s->indeg);
    s->win = cs_malloc_array(s->v_max, sizeof *s->win);
    s->cnt_ep = cs_calloc(n, sizeof *s->cnt_ep);
    for (int j = 0; j < 3; j++)
        s->cnt[j] = cs_calloc(n, sizeof *s->cnt[j]);
    s->r_ep = cs_calloc(s->n_roots, sizeof *s->r_ep);
    s->lastw = cs_calloc(s->n_roots, sizeof *s->lastw);
    int heap_failed = cs_heap_reserve(&s->h, s->v_max) != 0;
    int64_t *alloc = cs_calloc(n, sizeof *alloc);
    if (tree_failed || !s->free_at || !s->f_last || !s->keep ||
        !s->counted || !s->fl || !s->bkey || !s->adm || !s->plc ||
        !s->indeg || !s->win || !s->cnt_ep || !s->cnt[0] || !s->cnt[1] ||
        !s->cnt[2] || !s->r_ep || !s->lastw || heap_failed || !alloc) {
        free(alloc);
        cs_bk_incr_destroy(p);
        return bk_oom(p->ctx->err);
    }
    for (uint32_t r = 0; r < s->n_roots; r++)
        s->f_last[r] = -1;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = p->order[k];
        for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++)
            s->f_last[g->buffers[g->reads.idx[e]].root] = k;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        s->keep[g->buffers[g->outputs[i]].root] = 1;
    int64_t base = 0;
    for (uint32_t b = 0; b < nbuf; b++) {
        const cs_buffer *x = &g->buffers[b];
        if (x->alias_of != COMMSCHED_NONE)
            continue;
        int64_t at;
        if (x->is_input) {
            if (!x->freeable || s->f_last[b] < 0)
                continue;
            base += x->size;
            at = -1;
        } else {
            at = p->pos[x->producer];
            alloc[at] += x->size;
        }
        s->counted[b] = 1;
        if (!s->keep[b])
            s->free_at[s->f_last[b] >= 0 ? s->f_last[b] : at] += x->size;
    }
    int64_t cur = base;
    int overflow = 0;
    for (uint32_t k = 0; k < n; k++) /* alloc becomes the levels */
        alloc[k] = cs_mem_step(&cur, alloc[k], s->free_at[k], &overflow);
    cs_segtree_build(&s->lv, alloc, n);
    free(alloc);
    s->ok = !overflow;
    s->F = 0;
    s->carry_F = base;
    s->pm = base;
    return COMMSCHED_OK;
}

/* ---- one pricing ----------------------------------------------------------- */

typedef struct win_ctx {
    bk_pass *p;
    bk_incr_t *s;
    const bucket *bk;
    uint32_t bo;      /* the open bucket's index */
    uint32_t cp, co, wa;
    uint32_t L, unplaced, m;
    int bad;
} win_ctx;

static uint64_t vkey(const win_ctx *w, uint32_t v)
{
    if (v < w->p->n)
        return (uint64_t)(w->p->pos[v] + 1) << 32;
    return w->s->bkey[v - w->p->n];
}

static int is_open(const win_ctx *w, uint32_t v)
{
    return v >= w->cp && v <= w->wa;
}

/* Whether dependency d (a virtual id) is still to be placed in the
 * window: closed buckets' nodes and nodes before L are placed. */
static int pending(const win_ctx *w, uint32_t d)
{
    if (d < w->p->n)
        return w->p->pos[d] >= w->L && w->s->plc[d] != w->s->epoch;
    return is_open(w, d) && w->s->plc[d] != w->s->epoch;
}

static void ready(win_ctx *w, uint32_t v)
{
    bk_push_node(&w->s->h, vkey(w, v), v);
}

/* An edge from old node d into bucket node j (0 copy-in, 1 coll, 2 wait). */
static void bucket_dep(win_ctx *w, int j, uint32_t d)
{
    bk_incr_t *s = w->s;
    if (d >= w->p->n) {
        if (is_open(w, d))
            w->bad = 1; /* a member depending on the bucket */
        return;
    }
    if (!pending(w, d))
        return;
    if (s->cnt_ep[d] != s->epoch) {
        s->cnt_ep[d] = s->epoch;
        s->cnt[0][d] = s->cnt[1][d] = s->cnt[2][d] = 0;
    }
    s->cnt[j][d]++;
    s->indeg[w->cp + (uint32_t)j]++;
}

static void admit(win_ctx *w, uint32_t v)
{
    bk_pass *p = w->p;
    bk_incr_t *s = w->s;
    const commsched_graph *g = p->g;
    if (p->vmap[v] != v)
        return; /* a member: the bucket's nodes stand for it */
    s->adm[v] = s->epoch;
    uint32_t k = 0;
    for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++)
        k += (uint32_t)pending(w, p->vmap[g->deps.idx[e]]);
    s->indeg[v] = k;
    w->unplaced++;
    if (k == 0)
        ready(w, v);
}

/* An edge from a placed node to old node u. */
static void release(win_ctx *w, uint32_t u)
{
    bk_incr_t *s = w->s;
    if (u >= w->p->n) {
        w->bad = 1; /* a bucket depending on a node of the window */
        return;
    }
    if (s->adm[u] == s->epoch && s->plc[u] != s->epoch &&
        --s->indeg[u] == 0)
        ready(w, u);
}

static void release_bucket(win_ctx *w, uint32_t b, uint32_t by)
{
    if ((w->s->indeg[b] -= by) == 0)
        ready(w, b);
}

static void place_one(win_ctx *w, uint32_t x)
{
    bk_pass *p = w->p;
    bk_incr_t *s = w->s;
    const commsched_graph *g = p->g;
    s->plc[x] = s->epoch;
    s->win[w->m++] = x;
    w->unplaced--;
    if (x < p->n) {
        for (uint32_t e = g->users.off[x]; e < g->users.off[x + 1]; e++) {
            uint32_t u = p->vmap[g->users.idx[e]];
            if (!is_open(w, u))
                release(w, u);
        }
        if (s->cnt_ep[x] == s->epoch)
            for (uint32_t j = 0; j < 3; j++)
                if (s->cnt[j][x])
                    release_bucket(w, w->cp + j, s->cnt[j][x]);
    } else if (x == w->cp) {
        release_bucket(w, w->co, 1);
    } else if (x == w->co) {
        release_bucket(w, w->wa, 1);
    } else {
        for (uint32_t i = 0; i < w->bk->n; i++) {
            uint32_t wt = bk_member(p, w->bk, i)->wait;
            for (uint32_t e = g->users.off[wt]; e < g->users.off[wt + 1]; e++) {
                uint32_t u = p->vmap[g->users.idx[e]];
                if (is_open(w, u))
                    w->bad = 1;
                else
                    release(w, u);
            }
        }
    }
}

static int64_t root_size(const win_ctx *w, uint32_t r)
{
    uint32_t nbuf = w->p->g->n_buffers;
    if (r < nbuf)
        return w->s->counted[r] ? w->p->g->buffers[r].size : 0;
    const flat *f = &w->s->fl[(r - nbuf) / 2];
    return (r - nbuf) % 2 ? f->out_size : f->copy_size;
}

/* Calls fn for every root node x of the window reads (T's roots). */
#define FOR_READS(w, x, r, body)                                             \
    do {                                                                     \
        const commsched_graph *g_ = (w)->p->g;                               \
        uint32_t nb_ = g_->n_buffers, bo_ = (w)->bo;                         \
        if ((x) < (w)->p->n) {                                               \
            for (uint32_t e_ = g_->reads.off[x]; e_ < g_->reads.off[(x) + 1]; \
                 e_++) {                                                     \
                uint32_t r = cs_bk_new_root((w)->p, (w)->s->fl,              \
                                            g_->reads.idx[e_]);              \
                body;                                                        \
            }                                                                \
        } else if ((x) == (w)->cp) {                                         \
            for (uint32_t i_ = 0; i_ < (w)->bk->n; i_++) {                   \
                uint32_t r = cs_bk_new_root(                                 \
                    (w)->p, (w)->s->fl, bk_member((w)->p, (w)->bk, i_)->in); \
                body;                                                        \
            }                                                                \
        } else if ((x) == (w)->co) {                                         \
            uint32_t r = nb_ + 2 * bo_;                                      \
            body;                                                            \
        } else {                                                             \
            uint32_t r = nb_ + 2 * bo_ + ((w)->s->fl[bo_].out_alias ? 0 : 1); \
            body;                                                            \
            if ((w)->s->fl[bo_].wait_reads_in) {                             \
                r = nb_ + 2 * bo_;                                           \
                body;                                                        \
            }                                                                \
        }                                                                    \
    } while (0)

/* The window's levels: its maximum and the live bytes after it. */
static void window_memory(win_ctx *w, uint32_t H, int64_t carry,
                          int64_t *wmax, int64_t *carry_end)
{
    bk_pass *p = w->p;
    bk_incr_t *s = w->s;
    const commsched_graph *g = p->g;
    uint32_t ep = s->epoch;
    for (uint32_t j = 0; j < w->m; j++) {
        uint32_t x = s->win[j];
        FOR_READS(w, x, r, {
            s->r_ep[r] = ep;
            s->lastw[r] = j;
        });
    }
    int64_t mx = INT64_MIN;
    int overflow = 0;
    for (uint32_t j = 0; j < w->m; j++) {
        uint32_t x = s->win[j];
        int64_t alloc = 0, freed = 0;
        /* what x allocates; a root nothing reads dies where it is born */
#define ALLOC(r, size)                                                       \
    do {                                                                     \
        alloc += (size);                                                     \
        if (!s->keep[r] && s->r_ep[r] != ep && s->f_last[r] < 0)             \
            freed += (size);                                                 \
    } while (0)
        if (x < p->n) {
            const cs_node *nd = &g->nodes[x];
            for (uint32_t o = nd->out_first; o < nd->out_first + nd->n_out; o++)
                if (g->buffers[o].alias_of == COMMSCHED_NONE)
                    ALLOC(o, g->buffers[o].size);
        } else if (x == w->cp) {
            ALLOC(g->n_buffers + 2 * w->bo, s->fl[w->bo].copy_size);
        } else if (x == w->co) {
            if (!s->fl[w->bo].out_alias)
                ALLOC(g->n_buffers + 2 * w->bo + 1, s->fl[w->bo].out_size);
        } else {
            for (uint32_t i = 0; i < w->bk->n; i++) {
                const cs_node *nd = &g->nodes[bk_member(p, w->bk, i)->wait];
                for (uint32_t o = nd->out_first; o < nd->out_first + nd->n_out;
                     o++)
                    if (g->buffers[o].alias_of == COMMSCHED_NONE)
                        ALLOC(o, g->buffers[o].size);
            }
        }
#undef ALLOC
        /* what x is the last to read (once per root) */
        FOR_READS(w, x, r, {
            if (s->r_ep[r] == ep && s->lastw[r] == j) {
                s->lastw[r] = UINT32_MAX;
                if (!s->keep[r] && s->f_last[r] <= (int64_t)H)
                    freed += root_size(w, r);
            }
        });
        int64_t level = cs_mem_step(&carry, alloc, freed, &overflow);
        if (level > mx)
            mx = level;
    }
    if (overflow)
        w->bad = 1;
    *wmax = mx;
    *carry_end = carry;
}

/* The bucket's output roots after H: each member's output (C) and the
 * flat buffer that replaces them (T), as range additions of sign `sign`
 * over (H, n); returns the change of the live bytes right after H. */
static int64_t suffix_adds(win_ctx *w, uint32_t H, int sign, int commit)
{
    bk_pass *p = w->p;
    bk_incr_t *s = w->s;
    uint32_t n = p->n, nbuf = p->g->n_buffers;
    uint32_t fr = nbuf + 2 * w->bo + (s->fl[w->bo].out_alias ? 0 : 1);
    int64_t fsize = s->fl[w->bo].out_alias ? s->fl[w->bo].copy_size
                                           : s->fl[w->bo].out_size;
    int64_t delta = 0;
    for (uint32_t i = 0; i < w->bk->n; i++) {
        uint32_t r = bk_member(p, w->bk, i)->out;
        int64_t sz = p->g->buffers[r].size;
        if (s->keep[r] || s->f_last[r] > (int64_t)H) {
            uint32_t end = s->keep[r] ? n - 1 : (uint32_t)s->f_last[r];
            if (H + 1 < n)
                range_add(s, H + 1, end, -sign * sz);
            delta -= sz;
            if (commit && !s->keep[r])
                s->free_at[end] -= sz;
        }
    }
    if (s->keep[fr] || s->f_last[fr] > (int64_t)H) {
        uint32_t end = s->keep[fr] ? n - 1 : (uint32_t)s->f_last[fr];
        if (H + 1 < n)
            range_add(s, H + 1, end, sign * fsize);
        delta += fsize;
        if (commit && !s->keep[fr])
            s->free_at[end] += fsize;
    }
    return delta;
}

/* The flat roots of the open bucket: T's last reader after the window
 * (the last of its members' outputs' readers) and whether it is kept. */
static void flat_roots(win_ctx *w)
{
    bk_pass *p = w->p;
    bk_incr_t *s = w->s;
    uint32_t nbuf = p->g->n_buffers, in = nbuf + 2 * w->bo;
    uint32_t fr = in + (s->fl[w->bo].out_alias ? 0 : 1);
    int64_t f = -1;
    uint8_t keep = 0;
    for (uint32_t i = 0; i < w->bk->n; i++) {
        uint32_t r = bk_member(p, w->bk, i)->out;
        if (s->f_last[r] > f)
            f = s->f_last[r];
        keep |= s->keep[r];
    }
    s->f_last[in] = s->f_last[in + 1] = -1;
    s->keep[in] = s->keep[in + 1] = 0;
    s->f_last[fr] = f;
    s->keep[fr] = keep;
}

static void setup_keys(win_ctx *w, uint64_t key[3])
{
    bk_pass *p = w->p;
    const commsched_graph *g = p->g;
    uint64_t at = UINT64_MAX, wait_at = UINT64_MAX;
    for (uint32_t i = 0; i < w->bk->n; i++) {
        const cand *c = bk_member(p, w->bk, i);
        uint64_t a = (uint64_t)(p->pos[c->coll] + 1);
        uint64_t t = (uint64_t)(p->pos[c->wait] + 1);
        at = a < at ? a : at;
        wait_at = t < wait_at ? t : wait_at;
    }
    /* as cs_bk_place: after the members' inputs' producers and the
     * collectives' control dependencies */
    for (uint32_t i = 0; i < w->bk->n; i++) {
        const cand *c = bk_member(p, w->bk, i);
        uint32_t pr = g->buffers[c->in].producer;
        if (pr != COMMSCHED_NONE) {
            uint32_t d = p->vmap[pr];
            if (is_open(w, d))
                w->bad = 1;
            else if (vkey(w, d) >> 32 > at)
                at = vkey(w, d) >> 32;
        }
        for (uint32_t e = g->after.off[c->coll]; e < g->after.off[c->coll + 1];
             e++) {
            uint32_t d = p->vmap[g->after.idx[e]];
            if (is_open(w, d))
                w->bad = 1;
            else if (vkey(w, d) >> 32 > at)
                at = vkey(w, d) >> 32;
        }
    }
    key[0] = at << 32 | (uint64_t)(1 + 2 * w->bo);
    key[1] = at << 32 | (uint64_t)(2 + 2 * w->bo);
    key[2] = wait_at << 32;
}

static void setup_deps(win_ctx *w)
{
    bk_pass *p = w->p;
    const commsched_graph *g = p->g;
    w->s->indeg[w->cp] = 0;
    w->s->indeg[w->co] = 1; /* the copy-in */
    w->s->indeg[w->wa] = 1; /* the collective */
    for (uint32_t i = 0; i < w->bk->n; i++) {
        const cand *c = bk_member(p, w->bk, i);
        uint32_t pr = g->buffers[c->in].producer;
        if (pr != COMMSCHED_NONE)
            bucket_dep(w, 0, p->vmap[pr]);
        for (uint32_t e = g->after.off[c->coll]; e < g->after.off[c->coll + 1];
             e++)
            bucket_dep(w, 1, p->vmap[g->after.idx[e]]);
        for (uint32_t e = g->after.off[c->wait]; e < g->after.off[c->wait + 1];
             e++) {
            uint32_t d = p->vmap[g->after.idx[e]];
            if (d != w->co && d != w->wa)
                bucket_dep(w, 2, d);
        }
    }
}

int cs_bk_incr_peak(bk_pass *p, const bucket *extra, int64_t *peak)
{
    bk_incr_t *s = p->incr;
    if (!s)
        return 0;
    s->cur.valid = 0;
    if (!s->ok)
        return 0;
    win_ctx w;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.s = s;
    w.bk = extra;
    w.bo = (uint32_t)p->n_bk;
    w.cp = p->n + 3 * w.bo;
    w.co = w.cp + 1;
    w.wa = w.cp + 2;
    uint32_t L = UINT32_MAX, H0 = 0;
    for (uint32_t i = 0; i < extra->n; i++) {
        const cand *c = bk_member(p, extra, i);
        if (c->in_place)
            return 0;
        if (p->pos[c->coll] < L)
            L = p->pos[c->coll];
        if (p->pos[c->wait] > H0)
            H0 = p->pos[c->wait];
    }
    if (L < s->F)
        return 0;
    w.L = L;
    if (++s->epoch == 0) {
        memset(s->adm, 0, s->v_max * sizeof *s->adm);
        memset(s->plc, 0, s->v_max * sizeof *s->plc);
        memset(s->cnt_ep, 0, s->n * sizeof *s->cnt_ep);
        memset(s->r_ep, 0, s->n_roots * sizeof *s->r_ep);
        s->epoch = 1;
    }
    s->fl[w.bo] = cs_bk_flat_of(p, extra);
    setup_keys(&w, s->cur.key);
    memcpy(&s->bkey[3 * w.bo], s->cur.key, sizeof s->cur.key);
    s->h.n = 0;
    setup_deps(&w);
    w.unplaced = 3;
    for (uint32_t j = 0; j < 3; j++)
        if (s->indeg[w.cp + j] == 0)
            ready(&w, w.cp + j);
    uint32_t nx = L;
    while (!w.bad) {
        if (s->h.n > 0 &&
            (nx >= p->n || s->h.a[0].k1 < (uint64_t)(nx + 1) << 32)) {
            place_one(&w, cs_heap_pop(&s->h).v);
            continue;
        }
        if (nx < p->n && (nx <= H0 || w.unplaced > 0)) {
            admit(&w, p->order[nx++]);
            continue;
        }
        break;
    }
    if (w.bad || w.unplaced > 0)
        return 0;
    uint32_t H = nx - 1;

    /* memory */
    flat_roots(&w);
    int64_t carry = L == s->F ? s->carry_F
                              : range_max(s, L - 1, L - 1) - s->free_at[L - 1];
    int64_t wmax, carry_end;
    window_memory(&w, H, carry, &wmax, &carry_end);
    int64_t delta = suffix_adds(&w, H, 1, 0);
    int64_t best = H + 1 < p->n ? range_max(s, H + 1, p->n - 1) : INT64_MIN;
    suffix_adds(&w, H, -1, 0);
    /* the live bytes after H must be C's plus the bucket's change */
    if (w.bad ||
        carry_end != range_max(s, H, H) - s->free_at[H] + delta)
        return 0;
    int64_t pre = L > s->F ? range_max(s, s->F, L - 1) : INT64_MIN;
    int64_t pk = s->pm;
    if (pre > pk)
        pk = pre;
    if (wmax > pk)
        pk = wmax;
    if (best > pk)
        pk = best;
    *peak = pk;
    s->cur.valid = 1;
    s->cur.L = L;
    s->cur.H = H;
    s->cur.m = w.m;
    s->cur.wmax = wmax;
    s->cur.carry_end = carry_end;
    return 1;
}

int cs_bk_incr_window(const bk_pass *p, bk_window *w)
{
    const bk_incr_t *s = p->incr;
    if (!s || !s->ok || !s->cur.valid)
        return 0;
    w->L = s->cur.L;
    w->H = s->cur.H;
    w->m = s->cur.m;
    w->v = s->win;
    return 1;
}

void cs_bk_incr_accept(bk_pass *p)
{
    if (p->incr)
        p->incr->acc = p->incr->cur;
}

void cs_bk_incr_opened(bk_pass *p)
{
    if (p->incr)
        p->incr->acc.valid = 0;
}

/* Bucket bk (two or more members, index p->n_bk) has closed: its last
 * accepted pricing becomes part of C. */
void cs_bk_incr_closed(bk_pass *p, const bucket *bk)
{
    bk_incr_t *s = p->incr;
    if (!s || !s->ok)
        return;
    if (!s->acc.valid) {
        s->ok = 0; /* priced the full way: C is not known here any more */
        return;
    }
    win_ctx w;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.s = s;
    w.bk = bk;
    w.bo = (uint32_t)p->n_bk;
    incr_rec *a = &s->acc;
    s->fl[w.bo] = cs_bk_flat_of(p, bk);
    memcpy(&s->bkey[3 * w.bo], a->key, sizeof a->key);
    flat_roots(&w);
    int64_t pre = a->L > s->F ? range_max(s, s->F, a->L - 1) : INT64_MIN;
    if (pre > s->pm)
        s->pm = pre;
    if (a->wmax > s->pm)
        s->pm = a->wmax;
    suffix_adds(&w, a->H, 1, 1);
    /* the flat root after the window: dead unless read after H */
    uint32_t fr = p->g->n_buffers + 2 * w.bo + (s->fl[w.bo].out_alias ? 0 : 1);
    if (s->f_last[fr] <= (int64_t)a->H)
        s->f_last[fr] = -1;
    s->F = a->H + 1;
    s->carry_F = a->carry_end;
    s->acc.valid = 0;
}
