/* commsched — the order tree (ordtree.h): a treap keyed by position.
 *
 * Split and merge by size are the only structural operations; every
 * query that concerns a range of positions splits it out, reads or walks
 * it and merges back. Parent links give an item's position and level in
 * one walk to the root. Expected depth O(log n): the priorities are a
 * fixed hash of the item. */
#include "ordtree.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NONE CS_ORD_NONE
#define TWO53 9007199254740992ULL /* 2^53: more than a binade's room */
#define WCAP 4611686018427387904ULL /* 2^62: where column sums saturate */

/* A fixed pseudo-random priority per item (a 32-bit integer hash). */
static uint32_t prio(uint32_t v)
{
    v ^= v >> 16;
    v *= 0x7feb352dU;
    v ^= v >> 15;
    v *= 0x846ca68bU;
    v ^= v >> 16;
    return v;
}

static uint32_t sz(const cs_ordtree *t, uint32_t x)
{
    return x == NONE ? 0 : t->size[x];
}

static int64_t sm(const cs_ordtree *t, uint32_t x)
{
    return x == NONE ? 0 : t->sum[x];
}

static int64_t max2(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Recomputes x's aggregates from its children and adopts them. */
static void pull(cs_ordtree *t, uint32_t x)
{
    uint32_t a = t->l[x], b = t->r[x];
    int64_t at = sm(t, a);          /* level of x relative to the subtree */
    int64_t after = at + t->net[x]; /* level of b's first item */
    int64_t hi = at, hi_top = at + t->top[x];
    if (a != NONE) {
        hi = max2(hi, t->hi[a]);
        hi_top = max2(hi_top, t->hi_top[a]);
        t->up[a] = x;
    }
    if (b != NONE) {
        hi = max2(hi, after + t->hi[b]);
        hi_top = max2(hi_top, after + t->hi_top[b]);
        t->up[b] = x;
    }
    t->size[x] = 1 + sz(t, a) + sz(t, b);
    t->tags[x] = t->tag[x] + (a != NONE ? t->tags[a] : 0) +
                 (b != NONE ? t->tags[b] : 0);
    t->marks[x] = t->mark[x] + (a != NONE ? t->marks[a] : 0) +
                  (b != NONE ? t->marks[b] : 0);
    t->sum[x] = after + sm(t, b);
    t->hi[x] = hi;
    t->hi_top[x] = hi_top;
}

/* Item v's count in column k: its time in units of the binade's u,
 * rounded to nearest; TWO53 for a halfway one (or one past a binade).
 * The truncation is the floor (y >= 0), without a call to floor(). */
static uint64_t count_of_time(const cs_ordtree *t, uint32_t v, uint32_t k)
{
    double y = t->x[v] * t->scale[k]; /* exact: a power of two */
    if (!(y < (double)TWO53))
        return TWO53;
    uint64_t f = (uint64_t)y;
    double d = y - (double)f;
    if (d == 0.5)
        return TWO53;
    return f + (d > 0.5);
}

/* Recomputes x's column sums from its children's. */
static void sum_time(cs_ordtree *t, uint32_t x)
{
    uint32_t a = t->l[x], b = t->r[x], c = t->cols;
    uint64_t *w = t->wsum + (size_t)x * c;
    const uint64_t *wa = a != NONE ? t->wsum + (size_t)a * c : t->zero;
    const uint64_t *wb = b != NONE ? t->wsum + (size_t)b * c : t->zero;
    int tagged = t->tag[x];
    for (uint32_t k = 0; k < c; k++) {
        uint64_t o = tagged ? 0 : count_of_time(t, x, k);
        uint64_t y = wa[k] + wb[k] + o; /* <= 2^63 + 2^53 */
        w[k] = y < WCAP ? y : WCAP;
    }
}

/* x's children changed: its column sums are stale until a sum needs
 * them (clean_time). A structural change pulls every node on its paths
 * up to the root, so the stale nodes are closed under taking parents,
 * and the moves between two sums share most of their paths. */
static void pull_time(cs_ordtree *t, uint32_t x)
{
    if (t->cols > 0)
        t->stale[x] = 1;
}

/* Recomputes the stale column sums of subtree x (those below a fresh
 * node are fresh). */
static void clean_time(cs_ordtree *t, uint32_t x)
{
    if (x == NONE || !t->stale[x])
        return;
    clean_time(t, t->l[x]);
    clean_time(t, t->r[x]);
    sum_time(t, x);
    t->stale[x] = 0;
}

/* Splits the subtree x into its first k items (*a) and the rest (*b). */
static void split(cs_ordtree *t, uint32_t x, uint32_t k, uint32_t *a,
                  uint32_t *b)
{
    if (x == NONE) {
        *a = *b = NONE;
        return;
    }
    uint32_t left = sz(t, t->l[x]);
    if (k <= left) {
        split(t, t->l[x], k, a, &t->l[x]);
        pull(t, x);
        pull_time(t, x);
        *b = x;
    } else {
        split(t, t->r[x], k - left - 1, &t->r[x], b);
        pull(t, x);
        pull_time(t, x);
        *a = x;
    }
    if (*a != NONE)
        t->up[*a] = NONE;
    if (*b != NONE)
        t->up[*b] = NONE;
}

static uint32_t merge(cs_ordtree *t, uint32_t a, uint32_t b)
{
    if (a == NONE)
        return b;
    if (b == NONE)
        return a;
    if (prio(a) > prio(b)) {
        t->r[a] = merge(t, t->r[a], b);
        pull(t, a);
        pull_time(t, a);
        return a;
    }
    t->l[b] = merge(t, a, t->l[b]);
    pull(t, b);
    pull_time(t, b);
    return b;
}

/* Calls fn on every node, children first: a post-order walk with
 * `stack` (room for n) as its stack (a node is pushed once, then taken
 * when both of its children are done). */
static void post_order(cs_ordtree *t, uint32_t *stack,
                       void (*fn)(cs_ordtree *, uint32_t))
{
    if (t->root == NONE)
        return;
    uint32_t sp = 0, prev = NONE;
    stack[sp++] = t->root;
    while (sp > 0) {
        uint32_t x = stack[sp - 1];
        if (prev == NONE || t->l[prev] == x || t->r[prev] == x) {
            if (t->l[x] != NONE)
                stack[sp++] = t->l[x];
            else if (t->r[x] != NONE)
                stack[sp++] = t->r[x];
        } else if (t->l[x] == prev && t->r[x] != NONE) {
            stack[sp++] = t->r[x];
        } else {
            fn(t, x);
            sp--;
        }
        prev = x;
    }
}

int cs_ordtree_init(cs_ordtree *t, uint32_t n, const uint32_t *order,
                    const int64_t *net, const int64_t *top,
                    const uint8_t *tag, const uint8_t *mark)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    t->root = NONE;
    t->l = cs_malloc_array(n, sizeof *t->l);
    t->r = cs_malloc_array(n, sizeof *t->r);
    t->up = cs_malloc_array(n, sizeof *t->up);
    t->size = cs_malloc_array(n, sizeof *t->size);
    t->net = cs_malloc_array(n, sizeof *t->net);
    t->top = cs_malloc_array(n, sizeof *t->top);
    t->sum = cs_malloc_array(n, sizeof *t->sum);
    t->hi = cs_malloc_array(n, sizeof *t->hi);
    t->hi_top = cs_malloc_array(n, sizeof *t->hi_top);
    t->tag = cs_malloc_array(n, sizeof *t->tag);
    t->tags = cs_malloc_array(n, sizeof *t->tags);
    t->mark = cs_malloc_array(n, sizeof *t->mark);
    t->marks = cs_malloc_array(n, sizeof *t->marks);
    /* the right spine of the tree built so far, as a stack */
    uint32_t *spine = cs_malloc_array(n, sizeof *spine);
    if (!t->l || !t->r || !t->up || !t->size || !t->net || !t->top ||
        !t->sum || !t->hi || !t->hi_top || !t->tag || !t->tags || !t->mark ||
        !t->marks || !spine) {
        free(spine);
        cs_ordtree_free(t);
        return -1;
    }
    /* The treap of a sequence with fixed priorities is its Cartesian
     * tree: built left to right on the right spine in O(n). */
    uint32_t depth = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = order[i], last = NONE;
        assert(v < n);
        t->net[v] = net[v];
        t->top[v] = top[v];
        t->tag[v] = tag && tag[v] ? 1 : 0;
        t->mark[v] = mark && mark[v] ? 1 : 0;
        t->l[v] = t->r[v] = t->up[v] = NONE;
        while (depth > 0 && prio(spine[depth - 1]) < prio(v))
            last = spine[--depth];
        t->l[v] = last;
        if (depth > 0)
            t->r[spine[depth - 1]] = v;
        spine[depth++] = v;
    }
    t->root = n > 0 ? spine[0] : NONE;
    post_order(t, spine, pull);
    if (n > 0)
        t->up[t->root] = NONE;
    free(spine);
    return 0;
}

/* Drops the tree's times and columns. */
static void time_off(cs_ordtree *t)
{
    free(t->x);
    free(t->wsum);
    free(t->stale);
    t->x = NULL;
    t->wsum = NULL;
    t->stale = NULL;
    t->cols = 0;
}

void cs_ordtree_free(cs_ordtree *t)
{
    free(t->l);
    free(t->r);
    free(t->up);
    free(t->size);
    free(t->net);
    free(t->top);
    free(t->sum);
    free(t->hi);
    free(t->hi_top);
    free(t->tag);
    free(t->tags);
    free(t->mark);
    free(t->marks);
    time_off(t);
    memset(t, 0, sizeof *t);
    t->root = NONE;
}

uint32_t cs_ordtree_rank(const cs_ordtree *t, uint32_t v)
{
    uint32_t k = sz(t, t->l[v]);
    for (uint32_t x = v, p = t->up[v]; p != NONE; x = p, p = t->up[p])
        if (t->r[p] == x)
            k += sz(t, t->l[p]) + 1;
    return k;
}

int64_t cs_ordtree_before(const cs_ordtree *t, uint32_t v)
{
    int64_t s = sm(t, t->l[v]);
    for (uint32_t x = v, p = t->up[v]; p != NONE; x = p, p = t->up[p])
        if (t->r[p] == x)
            s += sm(t, t->l[p]) + t->net[p];
    return s;
}

void cs_ordtree_set(cs_ordtree *t, uint32_t v, int64_t net, int64_t top)
{
    t->net[v] = net;
    t->top[v] = top;
    for (uint32_t x = v; x != NONE; x = t->up[x])
        pull(t, x);
}

/* Positions [lo, hi) split out of the tree: *a before, *m the range, *b
 * after; join() puts them back. */
static void cut(cs_ordtree *t, uint32_t lo, uint32_t hi, uint32_t *a,
                uint32_t *m, uint32_t *b)
{
    uint32_t rest;
    split(t, t->root, lo, a, &rest);
    split(t, rest, hi - lo, m, b);
}

static void join(cs_ordtree *t, uint32_t a, uint32_t m, uint32_t b)
{
    t->root = merge(t, merge(t, a, m), b);
    t->up[t->root] = NONE;
}

/* What a range query reads of [lo, hi), left to right: the sum of its
 * nets so far, and the highest level + top so far relative to the level
 * before lo. */
typedef struct range_state {
    uint32_t lo, hi;
    int64_t sum, hi_top;
    int any; /* hi_top holds an item's */
} range_state;

/* Subtree v, its first item at position base: adds [lo, hi)'s part of
 * it; whole subtrees by their aggregates, so O(log n) nodes in all. */
static void range_in(const cs_ordtree *t, uint32_t v, uint32_t base,
                     range_state *st)
{
    if (v == NONE)
        return;
    uint32_t end = base + t->size[v];
    if (end <= st->lo || base >= st->hi)
        return;
    if (base >= st->lo && end <= st->hi) {
        int64_t h = st->sum + t->hi_top[v];
        st->hi_top = st->any ? max2(st->hi_top, h) : h;
        st->any = 1;
        st->sum += t->sum[v];
        return;
    }
    range_in(t, t->l[v], base, st);
    uint32_t at = base + sz(t, t->l[v]);
    if (at >= st->lo && at < st->hi) {
        int64_t h = st->sum + t->top[v];
        st->hi_top = st->any ? max2(st->hi_top, h) : h;
        st->any = 1;
        st->sum += t->net[v];
    }
    range_in(t, t->r[v], at + 1, st);
}

int64_t cs_ordtree_range(const cs_ordtree *t, uint32_t first, uint32_t last,
                         int64_t *hi_top)
{
    uint32_t lo = cs_ordtree_rank(t, first), hi = cs_ordtree_rank(t, last) + 1;
    assert(lo < hi);
    range_state st = {lo, hi, 0, 0, 0};
    range_in(t, t->root, 0, &st);
    *hi_top = st.hi_top;
    return st.sum;
}

void cs_ordtree_move_after(cs_ordtree *t, uint32_t first, uint32_t last,
                           uint32_t after)
{
    uint32_t lo = cs_ordtree_rank(t, first), hi = cs_ordtree_rank(t, last) + 1;
    assert(lo < hi);
    /* the block's new start, counted in the sequence without it */
    uint32_t to = 0;
    if (after != NONE) {
        uint32_t ra = cs_ordtree_rank(t, after);
        assert(ra < lo || ra >= hi);
        to = ra < lo ? ra + 1 : ra + 1 - (hi - lo);
    }
    uint32_t a, m, b, x, y;
    cut(t, lo, hi, &a, &m, &b);
    uint32_t rest = merge(t, a, b);
    if (rest != NONE)
        t->up[rest] = NONE;
    split(t, rest, to, &x, &y);
    join(t, x, m, y);
}

/* Marked items (which 1) or untagged ones (which 0) in subtree x. */
static uint32_t count_of(const cs_ordtree *t, uint32_t x, int which)
{
    if (x == NONE)
        return 0;
    return which ? t->marks[x] : t->size[x] - t->tags[x];
}

/* Marked items (which 1) or untagged ones (which 0) at [0, p). */
static uint32_t count_before(const cs_ordtree *t, uint32_t p, int which)
{
    uint32_t k = 0;
    for (uint32_t x = t->root; x != NONE;) {
        uint32_t a = t->l[x], left = sz(t, a);
        if (p <= left) {
            x = a;
            continue;
        }
        k += count_of(t, a, which) + (which ? t->mark[x] : !t->tag[x]);
        p -= left + 1;
        x = t->r[x];
    }
    return k;
}

uint32_t cs_ordtree_tags(const cs_ordtree *t, uint32_t lo, uint32_t hi)
{
    if (lo >= hi)
        return 0;
    /* the range's items less its untagged ones */
    return (hi - lo) - (count_before(t, hi, 0) - count_before(t, lo, 0));
}

uint32_t cs_ordtree_next(const cs_ordtree *t, uint32_t p, int which)
{
    /* the (k+1)-th such item, k of them before p */
    uint32_t k = count_before(t, p, which), at = 0;
    for (uint32_t x = t->root; x != NONE;) {
        uint32_t a = t->l[x], in_a = count_of(t, a, which);
        if (k < in_a) {
            x = a;
            continue;
        }
        k -= in_a;
        at += sz(t, a);
        if (which ? t->mark[x] : !t->tag[x]) {
            if (k == 0)
                return at;
            k--;
        }
        at++;
        x = t->r[x];
    }
    return t->n;
}

uint32_t cs_ordtree_at(const cs_ordtree *t, uint32_t p)
{
    uint32_t x = t->root;
    while (x != NONE) {
        uint32_t left = sz(t, t->l[x]);
        if (p < left) {
            x = t->l[x];
        } else if (p == left) {
            return x;
        } else {
            p -= left + 1;
            x = t->r[x];
        }
    }
    return NONE;
}

/* The last item of subtree x whose level > x_ or level + top > y, levels
 * starting at base before the subtree's first item; CS_ORD_NONE if none. */
static uint32_t last_over(const cs_ordtree *t, uint32_t x, int64_t base,
                          int64_t x_, int64_t y)
{
    while (x != NONE) {
        uint32_t a = t->l[x], b = t->r[x];
        int64_t at = base + sm(t, a), after = at + t->net[x];
        if (b != NONE && (after + t->hi[b] > x_ || after + t->hi_top[b] > y)) {
            base = after;
            x = b;
            continue;
        }
        if (at > x_ || at + t->top[x] > y)
            return x;
        if (a == NONE || (base + t->hi[a] <= x_ && base + t->hi_top[a] <= y))
            return NONE;
        x = a;
    }
    return NONE;
}

/* Subtree v, its first item at position base and level lev before it:
 * the last item of it within [lo, hi) over x or y, or CS_ORD_NONE. From
 * the right, whole subtrees by their maxima: O(log n). */
static uint32_t last_over_in(const cs_ordtree *t, uint32_t v, uint32_t base,
                             int64_t lev, uint32_t lo, uint32_t hi,
                             int64_t x, int64_t y)
{
    if (v == NONE)
        return NONE;
    uint32_t end = base + t->size[v];
    if (end <= lo || base >= hi)
        return NONE;
    if (base >= lo && end <= hi)
        return lev + t->hi[v] > x || lev + t->hi_top[v] > y
                   ? last_over(t, v, lev, x, y)
                   : NONE;
    uint32_t a = t->l[v], at = base + sz(t, a);
    int64_t at_lev = lev + sm(t, a);
    uint32_t found = last_over_in(t, t->r[v], at + 1, at_lev + t->net[v],
                                  lo, hi, x, y);
    if (found != NONE)
        return found;
    if (at >= lo && at < hi && (at_lev > x || at_lev + t->top[v] > y))
        return v;
    return last_over_in(t, a, base, lev, lo, hi, x, y);
}

uint32_t cs_ordtree_last_over(const cs_ordtree *t, uint32_t lo, uint32_t hi,
                              int64_t x, int64_t y)
{
    if (lo >= hi)
        return NONE;
    return last_over_in(t, t->root, 0, 0, lo, hi, x, y);
}

int cs_ordtree_time_on(cs_ordtree *t, const double *x)
{
    time_off(t);
    double *copy = cs_malloc_array(t->n, sizeof *copy);
    uint32_t *stack = cs_malloc_array(t->n, sizeof *stack);
    if (!copy || !stack) {
        free(copy);
        free(stack);
        return -1;
    }
    memcpy(copy, x, (size_t)t->n * sizeof *copy);
    t->x = copy;
    /* The columns: the binades from the total's (a sum's highest, one
     * more for its rounding) down CS_ORD_COLS, not below the smallest
     * time's (a sum under it has passed few items) */
    double total = 0.0, least = HUGE_VAL;
    int ok = 1;
    for (uint32_t v = 0; v < t->n; v++) {
        if (t->tag[v])
            continue;
        ok &= x[v] >= 0 && x[v] < HUGE_VAL;
        total += x[v];
        if (x[v] > 0 && x[v] < least)
            least = x[v];
    }
    int e_hi = ok && total > 0 && total < HUGE_VAL ? ilogb(total) + 1 : 0;
    int e_lo = e_hi - CS_ORD_COLS + 1;
    if (ok && total > 0 && ilogb(least) > e_lo)
        e_lo = ilogb(least);
    /* 2^(52 - e) and 2^(e - 52) must be normal, as must a sum there */
    if (ok && total > 0 && e_lo > -960 && e_hi < 960) {
        uint32_t c = (uint32_t)(e_hi - e_lo + 1);
        t->wsum = cs_malloc_array((size_t)t->n * c, sizeof *t->wsum);
        t->stale = cs_calloc(t->n, sizeof *t->stale);
        if (!t->wsum || !t->stale) {
            time_off(t); /* no times, as the header says */
            free(stack);
            return -1;
        }
        t->cols = c;
        t->e_lo = e_lo;
        for (uint32_t k = 0; k < c; k++)
            t->scale[k] = ldexp(1.0, 52 - (e_lo + (int)k));
        post_order(t, stack, sum_time);
    }
    free(stack);
    return 0;
}

/* A descent for cs_ordtree_fsum: the items of [p, q) from p on, each
 * adding its count in column k to got while got stays <= room. */
typedef struct reach_state {
    uint32_t p, q, k;
    uint64_t room, got;
    uint32_t stop; /* the first item that did not fit */
} reach_state;

/* Subtree v, its first item at position base: 1 when an item did not
 * fit (st->stop set). Only the subtrees on the paths to p, q and the
 * stop are entered: O(log n). */
static int reach(const cs_ordtree *t, uint32_t v, uint32_t base,
                 reach_state *st)
{
    if (v == NONE)
        return 0;
    uint32_t end = base + t->size[v];
    if (end <= st->p || base >= st->q)
        return 0;
    uint64_t w = t->wsum[(size_t)v * t->cols + st->k];
    if (base >= st->p && end <= st->q && w <= st->room - st->got) {
        st->got += w;
        return 0;
    }
    if (reach(t, t->l[v], base, st))
        return 1;
    uint32_t at = base + sz(t, t->l[v]);
    if (at >= st->p && at < st->q) {
        uint64_t o = t->tag[v] ? 0 : count_of_time(t, v, st->k);
        if (o > st->room - st->got) {
            st->stop = at;
            return 1;
        }
        st->got += o;
    }
    return reach(t, t->r[v], at + 1, st);
}

/* The item after v in the order, or CS_ORD_NONE. */
static uint32_t succ(const cs_ordtree *t, uint32_t v)
{
    if (t->r[v] != NONE) {
        for (v = t->r[v]; t->l[v] != NONE;)
            v = t->l[v];
        return v;
    }
    uint32_t p = t->up[v];
    while (p != NONE && t->r[p] == v) {
        v = p;
        p = t->up[p];
    }
    return p;
}

double cs_ordtree_fsum(cs_ordtree *t, uint32_t p, uint32_t q, double s)
{
    if (t->cols > 0)
        clean_time(t, t->root);
    assert(q <= t->n);
    uint32_t v = NONE; /* the item at p while adding one by one */
    while (p < q) {
        int e = s > 0 ? ilogb(s) : INT32_MIN;
        if (t->cols > 0 && e >= t->e_lo && e - t->e_lo < (int)t->cols) {
            /* in a column's binade: s is base units of u, and the items
             * that keep it there add their counts */
            reach_state st = {p, q, (uint32_t)(e - t->e_lo), 0, 0, q};
            uint64_t base = (uint64_t)(s * t->scale[st.k]);
            assert(base >= TWO53 / 2 && base < TWO53);
            st.room = TWO53 - 1 - base;
            reach(t, t->root, 0, &st);
            s = (double)(base + st.got) / t->scale[st.k];
            p = st.stop;
            v = NONE;
            if (p == q)
                break;
            /* the item at p carries s out of the binade (or is halfway):
             * added by hand below */
        }
        if (v == NONE)
            v = cs_ordtree_at(t, p);
        if (!t->tag[v])
            s += t->x[v];
        p++;
        v = succ(t, v);
    }
    return s;
}
