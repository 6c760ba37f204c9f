/* commsched — the order tree (ordtree.h): a treap keyed by position.
 *
 * Split and merge by size are the only structural operations; every
 * query that concerns a range of positions splits it out, reads or walks
 * it and merges back. Parent links give an item's position and level in
 * one walk to the root. Expected depth O(log n): the priorities are a
 * fixed hash of the item. */
#include "ordtree.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NONE CS_ORD_NONE

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
        *b = x;
    } else {
        split(t, t->r[x], k - left - 1, &t->r[x], b);
        pull(t, x);
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
        return a;
    }
    t->l[b] = merge(t, a, t->l[b]);
    pull(t, b);
    return b;
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
    /* aggregates children first: a post-order walk with the spine array
     * as its stack (a node is pushed once, then pulled when both of its
     * children are done) */
    if (n > 0) {
        uint32_t sp = 0, prev = NONE;
        spine[sp++] = t->root;
        while (sp > 0) {
            uint32_t x = spine[sp - 1];
            if (prev == NONE || t->l[prev] == x || t->r[prev] == x) {
                if (t->l[x] != NONE)
                    spine[sp++] = t->l[x];
                else if (t->r[x] != NONE)
                    spine[sp++] = t->r[x];
            } else if (t->l[x] == prev && t->r[x] != NONE) {
                spine[sp++] = t->r[x];
            } else {
                pull(t, x);
                sp--;
            }
            prev = x;
        }
        t->up[t->root] = NONE;
    }
    free(spine);
    return 0;
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

int64_t cs_ordtree_range(cs_ordtree *t, uint32_t first, uint32_t last,
                         int64_t *hi_top)
{
    uint32_t lo = cs_ordtree_rank(t, first), hi = cs_ordtree_rank(t, last) + 1;
    assert(lo < hi);
    uint32_t a, m, b;
    cut(t, lo, hi, &a, &m, &b);
    int64_t s = t->sum[m];
    *hi_top = t->hi_top[m];
    join(t, a, m, b);
    return s;
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

uint32_t cs_ordtree_last_over(cs_ordtree *t, uint32_t lo, uint32_t hi,
                              int64_t x, int64_t y)
{
    if (lo >= hi)
        return NONE;
    uint32_t a, m, b;
    cut(t, lo, hi, &a, &m, &b);
    uint32_t found = last_over(t, m, sm(t, a), x, y);
    join(t, a, m, b);
    return found;
}
