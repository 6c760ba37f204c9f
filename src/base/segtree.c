/* commsched — a segment tree over positions 0 .. size-1 with range adds
 * and range maxima (base layer; not installed), for the memory levels of
 * an order that the overlap pass and the bucketing passes' incremental
 * pricing move nodes across. (segtree.h) */
#include "segtree.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int cs_segtree_init(cs_segtree *s, uint32_t n)
{
    s->size = 1;
    while (s->size < n)
        s->size <<= 1;
    s->t = cs_malloc_array(2 * (size_t)s->size, sizeof *s->t);
    s->d = cs_malloc_array(s->size, sizeof *s->d);
    if (!s->t || !s->d) {
        cs_segtree_free(s);
        return -1;
    }
    return 0;
}

void cs_segtree_free(cs_segtree *s)
{
    free(s->t);
    free(s->d);
    s->t = s->d = NULL;
}

/* t[x] is the maximum over x's subtree with every add applied at x or
 * below; d[x] (internal nodes) the adds applied to x's whole subtree. An
 * add never pushes d down: a query adds the d of the ancestors of what it
 * collects on its way up instead, so both are one bottom-up walk. */

static void seg_apply(cs_segtree *s, uint32_t x, int64_t v)
{
    s->t[x] += v;
    if (x < s->size)
        s->d[x] += v;
}

/* Recomputes internal node x from its children. */
static void seg_fix(cs_segtree *s, uint32_t x)
{
    int64_t l = s->t[2 * x], r = s->t[2 * x + 1];
    s->t[x] = (l > r ? l : r) + s->d[x];
}

int64_t *cs_segtree_leaves(cs_segtree *s)
{
    return s->t + s->size;
}

void cs_segtree_build(cs_segtree *s, const int64_t *leaf, uint32_t n)
{
    assert(n <= s->size);
    if (leaf)
        memcpy(s->t + s->size, leaf, (size_t)n * sizeof *leaf);
    for (uint32_t i = n; i < s->size; i++)
        s->t[s->size + i] = CS_SEG_LOW;
    memset(s->d, 0, (size_t)s->size * sizeof *s->d);
    for (uint32_t x = s->size - 1; x > 0; x--)
        s->t[x] = s->t[2 * x] > s->t[2 * x + 1] ? s->t[2 * x] : s->t[2 * x + 1];
}

/* Adds v to positions [l, r). */
void cs_segtree_add(cs_segtree *s, uint32_t l, uint32_t r, int64_t v)
{
    assert(r <= s->size);
    if (l >= r || v == 0)
        return;
    uint32_t l0 = l + s->size, r0 = r + s->size;
    for (l = l0, r = r0; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            seg_apply(s, l++, v);
        if (r & 1)
            seg_apply(s, --r, v);
    }
    /* The ancestors of both ends, each once: below their meeting point
     * two paths, from it to the root one. */
    uint32_t a = l0 >> 1, b = (r0 - 1) >> 1;
    for (; a != b; a >>= 1, b >>= 1) {
        seg_fix(s, a);
        seg_fix(s, b);
    }
    for (; a >= 1; a >>= 1)
        seg_fix(s, a);
}

/* The maximum over positions [l, r) (CS_SEG_LOW when empty), and in *pos
 * (when not NULL) the rightmost position holding it. What the walk
 * collected on the left lies under node l - 1 once l moved up a level, on
 * the right under node r: their d apply to it. Each side keeps the node
 * its maximum came from (later left nodes lie further right, earlier
 * right ones too); the position is found below that node, taking the
 * right child on ties. */
int64_t cs_segtree_max(const cs_segtree *s, uint32_t l, uint32_t r, uint32_t *pos)
{
    assert(r <= s->size);
    if (l >= r)
        return CS_SEG_LOW;
    int64_t ml = CS_SEG_LOW, mr = CS_SEG_LOW;
    uint32_t nl = 0, nr = 0; /* the nodes they came from, 0 for none */
    for (l += s->size, r += s->size; l < r;) {
        if (l & 1) {
            if (!nl || s->t[l] >= ml) {
                ml = s->t[l];
                nl = l;
            }
            l++;
        }
        if (r & 1) {
            --r;
            if (!nr || s->t[r] > mr) {
                mr = s->t[r];
                nr = r;
            }
        }
        l >>= 1;
        r >>= 1;
        if (nl)
            ml += s->d[l - 1];
        if (nr)
            mr += s->d[r];
    }
    /* l == r: the left part lies under l - 1, the right under r. Up to
     * their common ancestor each side adds its own ancestors; from there
     * on, the maximum of both takes the rest. */
    uint32_t x = l - 1, y = r;
    int64_t m;
    if (!nl) {
        m = mr;
        x = y;
    } else if (!nr) {
        m = ml;
    } else {
        while (x != y) {
            x >>= 1;
            y >>= 1;
            if (x != y) {
                ml += s->d[x];
                mr += s->d[y];
            }
        }
        m = ml > mr ? ml : mr;
        if (x >= 1)
            m += s->d[x];
    }
    while (x > 1) {
        x >>= 1;
        m += s->d[x];
    }
    if (pos) {
        uint32_t v = nr && (!nl || mr >= ml) ? nr : nl;
        while (v < s->size)
            v = s->t[2 * v + 1] >= s->t[2 * v] ? 2 * v + 1 : 2 * v;
        *pos = v - s->size;
    }
    return m;
}

/* The value at position p: its leaf plus the adds of its ancestors. */
int64_t cs_segtree_at(const cs_segtree *s, uint32_t p)
{
    assert(p < s->size);
    uint32_t x = p + s->size;
    int64_t v = s->t[x];
    while (x > 1) {
        x >>= 1;
        v += s->d[x];
    }
    return v;
}

