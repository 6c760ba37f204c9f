/* commsched — an order tree: a sequence of items 0 .. n-1 kept in a
 * treap by position (base layer; not installed).
 *
 * Each item carries a step `net` and a bump `top` (>= 0 is not required);
 * the level before an item is the sum of the nets of the items before it,
 * and the tree answers, each in O(log n) expected: an item's position, its
 * level, the last item of a range of positions whose level (or level +
 * top) passes a bound, and moving a contiguous block of items elsewhere in
 * the sequence. Memory levels of a schedule (net = bytes allocated -
 * freed, top = bytes allocated) are the use: a block moved past k items
 * changes k levels, which a level array pays item by item and the tree in
 * one split and merge (RCPPM's runs, src/model/memory.c). Items may also
 * be tagged and marked (the schedule's collectives and sync ones), for
 * counts over a range and the next untagged or marked item (the passes'
 * exposed-time walks, passes/common.c). Items may carry a time, for the
 * sum a loop adding the untagged items' times over a range of positions
 * would leave, bit for bit, in O(log n) per binade the sum crosses
 * (cs_ordtree_fsum). The priorities are a hash of the item, so a tree is
 * the same on every run. */
#ifndef COMMSCHED_ORDTREE_H
#define COMMSCHED_ORDTREE_H

#include <stdint.h>

#define CS_ORD_NONE UINT32_MAX
/* Binades of sums the tree keeps columns for (cs_ordtree_time_on). */
#define CS_ORD_COLS 16

typedef struct cs_ordtree {
    uint32_t n, root;
    uint32_t *l, *r, *up; /* children and parent, CS_ORD_NONE for none */
    uint32_t *size;       /* items in the subtree */
    int64_t *net, *top;   /* the item's own values */
    int64_t *sum;         /* sum of the subtree's nets */
    int64_t *hi;          /* max over the subtree of level, relative to
                             the level before its first item */
    int64_t *hi_top;      /* the same of level + top */
    uint8_t *tag;         /* the item is tagged (0 or 1) */
    uint32_t *tags;       /* tagged items in the subtree */
    uint8_t *mark;        /* the item is marked (0 or 1) */
    uint32_t *marks;      /* marked items in the subtree */
    /* Times (cs_ordtree_time_on). A double sum s in binade e (2^e <= s <
     * 2^(e+1)) is an integer count of u = 2^(e-52), and adding x to it
     * adds round(x / u) to that count, whatever s is, while the sum stays
     * in the binade and x / u is not halfway between two integers (then
     * the rounding goes to the even count, which depends on s). Column k
     * (binade e_lo + k) sums per subtree those counts of the untagged
     * items' times, a halfway one counting 2^53 (more than a binade has
     * room for), saturated at 2^62: a descent finds how far a sum goes
     * in its binade, and the item that carries it out is added by hand. */
    double *x;              /* the item's time (NULL: no times) */
    uint32_t cols;          /* 0 .. CS_ORD_COLS */
    int e_lo;
    double scale[CS_ORD_COLS]; /* 2^(52 - e) of column k's binade e */
    uint64_t *wsum;         /* cols per item: its subtree's sums */
    uint8_t *stale;         /* the item's wsum awaits its children's */
    uint64_t zero[CS_ORD_COLS]; /* an empty subtree's sums */
} cs_ordtree;

/* Items order[0 .. n-1] (a permutation of 0 .. n-1) in that order, with
 * their nets and tops, tagged where tag[v] != 0 and marked where
 * mark[v] != 0 (either NULL: none).
 * Returns 0, or -1 on OOM (t then owns nothing). The values must keep
 * every partial sum within int64_t (the caller's levels do). O(n). */
int cs_ordtree_init(cs_ordtree *t, uint32_t n, const uint32_t *order,
                    const int64_t *net, const int64_t *top,
                    const uint8_t *tag, const uint8_t *mark);
void cs_ordtree_free(cs_ordtree *t);

/* The item's position (0-based). */
uint32_t cs_ordtree_rank(const cs_ordtree *t, uint32_t v);
/* Sum of the nets of the items before v. */
int64_t cs_ordtree_before(const cs_ordtree *t, uint32_t v);
/* Sum of the nets of the items first .. last (first not after last), and
 * in *hi_top the highest level + top among them relative to the level
 * before first. */
int64_t cs_ordtree_range(const cs_ordtree *t, uint32_t first, uint32_t last,
                         int64_t *hi_top);
/* Sets v's values. */
void cs_ordtree_set(cs_ordtree *t, uint32_t v, int64_t net, int64_t top);
/* Moves the block first .. last (first not after last) so that it follows
 * `after` (CS_ORD_NONE: to the front); `after` is not in the block. */
void cs_ordtree_move_after(cs_ordtree *t, uint32_t first, uint32_t last,
                           uint32_t after);
/* How many tagged items lie at positions [lo, hi). */
uint32_t cs_ordtree_tags(const cs_ordtree *t, uint32_t lo, uint32_t hi);
/* The first position >= p holding an untagged item (which 0) or a marked
 * one (which 1); n when none. */
uint32_t cs_ordtree_next(const cs_ordtree *t, uint32_t p, int which);
/* The item at position p (< n). */
uint32_t cs_ordtree_at(const cs_ordtree *t, uint32_t p);
/* Gives the items times x[0 .. n-1] (copied), which must be finite and
 * >= 0 where untagged (else the sums are added one by one). Returns 0,
 * or -1 on OOM (the tree then has no times). O(n x columns); the nodes
 * structural changes touch are marked stale, and the next
 * cs_ordtree_fsum recomputes their columns (O(columns) each). */
int cs_ordtree_time_on(cs_ordtree *t, const double *x);
/* What `for (p .. q-1) if (item at p is untagged) s += its time;` leaves
 * in s, bit for bit (round to nearest even), for any s (after bringing
 * stale columns up to date): O(log n) per
 * binade between s and the result, plus per item whose time is halfway
 * between two counts of a binade the sum passes; without times, the
 * loop itself. */
double cs_ordtree_fsum(cs_ordtree *t, uint32_t p, uint32_t q, double s);
/* The last item at a position in [lo, hi) whose level > x or level + top
 * > y (levels as sums of the nets before it), or CS_ORD_NONE. */
uint32_t cs_ordtree_last_over(const cs_ordtree *t, uint32_t lo, uint32_t hi,
                              int64_t x, int64_t y);

#endif /* COMMSCHED_ORDTREE_H */
