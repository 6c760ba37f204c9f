/* commsched — a segment tree: range add, range maximum (with the rightmost
 * position holding it) and the value at one position, over positions
 * 0 .. size-1 (base layer; not installed).
 *
 * Memory levels of an order: the overlap pass keeps the input order's
 * levels and adds a node's delta over the positions it jumps; the
 * bucketing passes' incremental pricing (passes/bucketing_incr.c) keeps
 * the closed buckets' levels likewise. Each node holds its maximum less
 * its parent's (the root its own): one int64 a node and no pending adds
 * to push down; an add and a query are each one bottom-up walk of
 * O(log size). */
#ifndef COMMSCHED_SEGTREE_H
#define COMMSCHED_SEGTREE_H

#include <stdint.h>

/* The value of a position past the ones built, and of an empty range:
 * low enough that no level reaches it, far enough from INT64_MIN that
 * adds cannot overflow. */
#define CS_SEG_LOW (INT64_MIN / 4)

typedef struct cs_segtree {
    uint32_t size;    /* leaves, a power of two */
    int64_t *a;       /* 2 size: a[1] the maximum of all positions, a[x]
                         (x >= 2) the maximum under x less its parent's;
                         the leaves at size .. 2 size - 1 */
} cs_segtree;

/* Room for positions 0 .. n-1 (n >= 1 leaves at least). Returns 0, or -1
 * on OOM (s then owns nothing). cs_segtree_free releases it. */
int cs_segtree_init(cs_segtree *s, uint32_t n);
void cs_segtree_free(cs_segtree *s);
/* Positions 0 .. n-1 hold leaf[i], the rest CS_SEG_LOW; no adds. leaf
 * NULL: what the caller wrote at cs_segtree_leaves(s)[0 .. n-1]. */
void cs_segtree_build(cs_segtree *s, const int64_t *leaf, uint32_t n);
/* The leaf row (size entries), for a caller that computes the leaves
 * where they go instead of keeping a copy (overlap: 8 B a node); then
 * cs_segtree_build(s, NULL, n). */
int64_t *cs_segtree_leaves(cs_segtree *s);
/* Adds v to positions [l, r) (r <= size). */
void cs_segtree_add(cs_segtree *s, uint32_t l, uint32_t r, int64_t v);
/* The maximum over [l, r) (CS_SEG_LOW when empty), and in *pos (when not
 * NULL and the range is not empty) the rightmost position holding it. */
int64_t cs_segtree_max(const cs_segtree *s, uint32_t l, uint32_t r,
                       uint32_t *pos);
/* The value at position p. */
int64_t cs_segtree_at(const cs_segtree *s, uint32_t p);

#endif /* COMMSCHED_SEGTREE_H */
