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
    s->a = cs_malloc_array(2 * (size_t)s->size, sizeof *s->a);
    return s->a ? 0 : -1;
}

void cs_segtree_free(cs_segtree *s)
{
    free(s->a);
    s->a = NULL;
}

/* a[1] is the maximum of the whole row; a[x], below it, the maximum over
 * x's subtree less its parent's, so at most 0, and 0 for one child of
 * every internal node at least. A position's value is the sum of a over
 * its leaf's path to the root: an add to a whole subtree changes only the
 * a of the subtree's node (its descendants are relative to it), and no
 * add pushes anything down. One array of 2 size entries where a maximum
 * per node and a pending add per internal node took three halves of it
 * (8 B a position less: the overlap pass keeps one tree a thread). */

/* Restores x's invariant after a change of its children's a: the larger
 * of them becomes 0 and x takes up what it was. Returns that change of
 * a[x] (0: nothing above x moves on x's account). */
static int64_t seg_pull(cs_segtree *s, uint32_t x)
{
    int64_t l = s->a[2 * x], r = s->a[2 * x + 1];
    int64_t m = l > r ? l : r;
    if (m != 0) {
        s->a[2 * x] = l - m;
        s->a[2 * x + 1] = r - m;
        s->a[x] += m;
    }
    return m;
}

int64_t *cs_segtree_leaves(cs_segtree *s)
{
    return s->a + s->size;
}

void cs_segtree_build(cs_segtree *s, const int64_t *leaf, uint32_t n)
{
    assert(n <= s->size);
    int64_t *a = s->a;
    if (leaf)
        memcpy(a + s->size, leaf, (size_t)n * sizeof *leaf);
    for (uint32_t i = n; i < s->size; i++)
        a[s->size + i] = CS_SEG_LOW;
    /* From the last internal node down: its children hold their own
     * maxima still, so a pull from 0 gives x the larger and makes them
     * relative to it. */
    for (uint32_t x = s->size - 1; x > 0; x--) {
        a[x] = 0;
        seg_pull(s, x);
    }
    a[0] = 0; /* added by a query whose left side reaches the root */
}

/* Adds v to positions [l, r): to the a of the nodes that tile the range
 * (at the lowest `top` levels), then pulls their ancestors, which lie on
 * the paths of the range's two ends: below the paths' meeting point both,
 * from it up one. Above the tiling levels a node's a moves only by its
 * pull, so the walk stops at the first pull that moves nothing. */
void cs_segtree_add(cs_segtree *s, uint32_t l, uint32_t r, int64_t v)
{
    assert(r <= s->size);
    if (l >= r || v == 0)
        return;
    uint32_t l0 = l + s->size, r0 = r + s->size, top = 0;
    for (l = l0, r = r0; l < r; l >>= 1, r >>= 1, top++) {
        if (l & 1)
            s->a[l++] += v;
        if (r & 1)
            s->a[--r] += v;
    }
    uint32_t a = l0 >> 1, b = (r0 - 1) >> 1, level = 1;
    for (; a != b; a >>= 1, b >>= 1, level++) {
        seg_pull(s, a);
        seg_pull(s, b);
    }
    for (; a >= 1; a >>= 1, level++)
        if (seg_pull(s, a) == 0 && level >= top)
            break;
}

/* The maximum over positions [l, r) (CS_SEG_LOW when empty), and in *pos
 * (when not NULL) the rightmost position holding it. A node's a is its
 * maximum less the sum of its ancestors' a; the walk keeps each side's
 * maximum in the same terms at its level, adding the a of the node over
 * what it collected as it moves up: on the left node l - 1 once l moved
 * up a level, on the right node r. Each side keeps the node its maximum
 * came from (later left nodes lie further right, earlier right ones too);
 * the position is found below that node, taking the right child on ties. */
int64_t cs_segtree_max(const cs_segtree *s, uint32_t l, uint32_t r, uint32_t *pos)
{
    assert(r <= s->size);
    if (l >= r)
        return CS_SEG_LOW;
    const int64_t *a = s->a;
    int64_t ml = CS_SEG_LOW, mr = CS_SEG_LOW;
    uint32_t nl = 0, nr = 0; /* the nodes they came from, 0 for none */
    for (l += s->size, r += s->size; l < r;) {
        if (l & 1) {
            if (!nl || a[l] >= ml) {
                ml = a[l];
                nl = l;
            }
            l++;
        }
        if (r & 1) {
            --r;
            if (!nr || a[r] > mr) {
                mr = a[r];
                nr = r;
            }
        }
        l >>= 1;
        r >>= 1;
        if (nl)
            ml += a[l - 1];
        if (nr)
            mr += a[r];
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
                ml += a[x];
                mr += a[y];
            }
        }
        m = ml > mr ? ml : mr;
        if (x >= 1)
            m += a[x];
    }
    while (x > 1) {
        x >>= 1;
        m += a[x];
    }
    if (pos) {
        uint32_t v = nr && (!nl || mr >= ml) ? nr : nl;
        while (v < s->size)
            v = a[2 * v + 1] >= a[2 * v] ? 2 * v + 1 : 2 * v;
        *pos = v - s->size;
    }
    return m;
}

/* The value at position p: the a of its leaf and of every ancestor. */
int64_t cs_segtree_at(const cs_segtree *s, uint32_t p)
{
    assert(p < s->size);
    uint32_t x = p + s->size;
    int64_t v = s->a[x];
    while (x > 1) {
        x >>= 1;
        v += s->a[x];
    }
    return v;
}
