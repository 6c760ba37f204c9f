/* commsched unit tests — the order tree (src/base/ordtree.c) the memory
 * tracker keeps its levels in with commsched_memory_use_tree: an item's
 * position and level, a block's net sum and highest level + top, setting
 * values, moving a block after another item (or to the front), and the
 * last item of a position range whose level or level + top passes a
 * bound, against a plain array under random operations; and the tags
 * (cs_ordtree_init's tag array, sometimes NULL, with any nonzero byte
 * meaning tagged): cs_ordtree_tags over random ranges (empty and reversed
 * ones too) after every operation, so moves must carry each item's tag
 * and sets must keep it. Every so often the tree's structure is checked
 * too: parent links, sizes and the four aggregates (tags included)
 * against a recomputation, every item's own tag, every prefix count, the
 * in-order sequence against the reference, and a depth that stays
 * logarithmic.
 *
 * Times (cs_ordtree_time_on, cs_ordtree_fsum): after random block moves,
 * the sum over random position ranges from random starting sums must be,
 * bit for bit, the double a loop adding the untagged items' times in
 * order leaves, for times of several kinds: full-precision values of many
 * magnitudes, small integers, values halfway between two steps of the
 * binades large sums pass, zeros of both signs, huge and subnormal ones,
 * and negative or not finite ones (no columns: the loop, from negative
 * sums too). The reference loop counts
 * what the columns had to get right: additions made in a column's
 * binade, halfway ones among them, and crossings out of a binade. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ordtree.h"
#include "testutil.h"

/* The reference: the sequence and each item's values, with the level
 * before each position (lvl[i] = sum of the nets of seq[0 .. i-1]), and
 * whether each item is tagged (0 or 1). */
typedef struct ref {
    uint32_t n;
    uint32_t *seq, *pos;
    int64_t *net, *top, *lvl;
    uint8_t *tag, *mark;
} ref;

/* The first position >= p whose item is untagged (which 0) or marked
 * (which 1), or n: cs_ordtree_next's reference. */
static uint32_t ref_next(const ref *f, uint32_t p, int which)
{
    for (; p < f->n; p++)
        if (which ? f->mark[f->seq[p]] : !f->tag[f->seq[p]])
            return p;
    return f->n;
}

/* Tagged items at positions [lo, hi) of the reference (0 when lo >= hi). */
static uint32_t ref_tags(const ref *f, uint32_t lo, uint32_t hi)
{
    uint32_t k = 0;
    for (uint32_t i = lo; i < hi; i++)
        k += f->tag[f->seq[i]];
    return k;
}

static void ref_levels(ref *f)
{
    int64_t cur = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        f->pos[f->seq[i]] = i;
        f->lvl[i] = cur;
        cur += f->net[f->seq[i]];
    }
}

/* A reference of n items, values zero; ref_free releases it. */
static void ref_init(ref *f, uint32_t n)
{
    f->n = n;
    f->seq = calloc(n + 1, sizeof *f->seq);
    f->pos = calloc(n + 1, sizeof *f->pos);
    f->net = calloc(n + 1, sizeof *f->net);
    f->top = calloc(n + 1, sizeof *f->top);
    f->lvl = calloc(n + 1, sizeof *f->lvl);
    f->tag = calloc(n + 1, sizeof *f->tag);
    f->mark = calloc(n + 1, sizeof *f->mark);
    assert_true(f->seq && f->pos && f->net && f->top && f->lvl && f->tag &&
                f->mark);
}

static void ref_free(ref *f)
{
    free(f->seq);
    free(f->pos);
    free(f->net);
    free(f->top);
    free(f->lvl);
    free(f->tag);
    free(f->mark);
}

/* The identity order, shuffled when `shuffle`. */
static void ref_order(ref *f, tu_rng *r, int shuffle)
{
    for (uint32_t i = 0; i < f->n; i++)
        f->seq[i] = i;
    if (shuffle)
        for (uint32_t i = f->n; i > 1; i--) {
            uint32_t j = tu_rng_below(r, i), x = f->seq[i - 1];
            f->seq[i - 1] = f->seq[j];
            f->seq[j] = x;
        }
}

/* Values of one of three scales: tiny (many ties and equal levels), up to
 * 2^20, or up to 2^40 (the brief's range); tops are >= 0. */
static int64_t rnd_net(tu_rng *r, int scale)
{
    if (scale == 0)
        return (int64_t)tu_rng_below(r, 9) - 4;
    int bits = scale == 1 ? 20 : 40;
    uint64_t mag = tu_rng_next(r) & ((UINT64_C(1) << bits) - 1);
    if (tu_rng_chance(r, 10))
        mag = 0;
    return tu_rng_chance(r, 50) ? (int64_t)mag : -(int64_t)mag;
}

static int64_t rnd_top(tu_rng *r, int scale)
{
    if (tu_rng_chance(r, 15))
        return 0;
    if (scale == 0)
        return (int64_t)tu_rng_below(r, 5);
    int bits = scale == 1 ? 20 : 40;
    return (int64_t)(tu_rng_next(r) % ((UINT64_C(1) << bits) + 1));
}

/* ---- structure ----------------------------------------------------------- */

typedef struct agg {
    uint32_t size, tags;
    int64_t sum, hi, hi_top;
} agg;

typedef struct walk {
    const cs_ordtree *t;
    const ref *f;
    uint32_t visited, max_depth;
} walk;

/* Recomputes the subtree's aggregates from the items' own values,
 * checking every node's stored ones, its children's parent links and its
 * place in the in-order sequence on the way. */
static agg check_sub(walk *w, uint32_t x, uint32_t depth)
{
    agg out = {0, 0, 0, 0, 0};
    if (x == CS_ORD_NONE)
        return out;
    const cs_ordtree *t = w->t;
    assert_true(x < t->n);
    if (++w->visited > t->n)
        fail_msg("more nodes reached than items: a cycle");
    if (depth > w->max_depth)
        w->max_depth = depth;
    uint32_t a = t->l[x], b = t->r[x];
    if (a != CS_ORD_NONE)
        assert_int_equal(t->up[a], x);
    if (b != CS_ORD_NONE)
        assert_int_equal(t->up[b], x);
    agg la = check_sub(w, a, depth + 1);
    agg rb = check_sub(w, b, depth + 1);
    assert_true(t->net[x] == w->f->net[x]);
    assert_true(t->top[x] == w->f->top[x]);
    if (t->tag[x] != w->f->tag[x])
        fail_msg("item %u: tag %u, reference %u", x, t->tag[x], w->f->tag[x]);
    int64_t at = la.sum, after = at + t->net[x];
    out.size = 1 + la.size + rb.size;
    out.tags = t->tag[x] + la.tags + rb.tags;
    out.sum = after + rb.sum;
    out.hi = at;
    out.hi_top = at + t->top[x];
    if (a != CS_ORD_NONE) {
        if (la.hi > out.hi)
            out.hi = la.hi;
        if (la.hi_top > out.hi_top)
            out.hi_top = la.hi_top;
    }
    if (b != CS_ORD_NONE) {
        if (after + rb.hi > out.hi)
            out.hi = after + rb.hi;
        if (after + rb.hi_top > out.hi_top)
            out.hi_top = after + rb.hi_top;
    }
    if (t->size[x] != out.size || t->sum[x] != out.sum ||
        t->hi[x] != out.hi || t->hi_top[x] != out.hi_top ||
        t->tags[x] != out.tags)
        fail_msg("item %u: size %u sum %lld hi %lld hi_top %lld tags %u, "
                 "recomputed %u %lld %lld %lld %u",
                 x, t->size[x], (long long)t->sum[x], (long long)t->hi[x],
                 (long long)t->hi_top[x], t->tags[x], out.size,
                 (long long)out.sum, (long long)out.hi, (long long)out.hi_top,
                 out.tags);
    return out;
}

/* The in-order sequence, iteratively (bounded by n so a cycle ends). */
static void check_order(const cs_ordtree *t, const ref *f, uint32_t *stack)
{
    uint32_t sp = 0, k = 0, x = t->root;
    while (x != CS_ORD_NONE || sp > 0) {
        while (x != CS_ORD_NONE) {
            assert_true(sp < t->n);
            stack[sp++] = x;
            x = t->l[x];
        }
        x = stack[--sp];
        assert_true(k < f->n);
        if (x != f->seq[k])
            fail_msg("position %u holds item %u, reference %u", k, x,
                     f->seq[k]);
        k++;
        x = t->r[x];
    }
    assert_int_equal(k, f->n);
}

static uint32_t log2_ceil(uint32_t n)
{
    uint32_t k = 0;
    while ((UINT64_C(1) << k) < n)
        k++;
    return k;
}

static void check_structure(const cs_ordtree *t, const ref *f,
                            uint32_t *stack)
{
    assert_int_equal(t->n, f->n);
    if (f->n == 0) {
        assert_int_equal(t->root, CS_ORD_NONE);
        return;
    }
    assert_true(t->root < t->n);
    assert_int_equal(t->up[t->root], CS_ORD_NONE);
    walk w = {t, f, 0, 0};
    agg all = check_sub(&w, t->root, 0);
    assert_int_equal(w.visited, f->n);
    assert_int_equal(all.size, f->n);
    assert_int_equal(all.tags, ref_tags(f, 0, f->n));
    check_order(t, f, stack);
    /* a treap's depth is O(log n): about 2.4 log2 n here at most (29 for
     * 3001 items); a merge that broke the heap order (by priorities
     * inverted, say) reaches about 4.5 log2 n and shows here */
    uint32_t bound = 3 * log2_ceil(f->n + 1) + 8;
    if (w.max_depth > bound)
        fail_msg("depth %u for %u items (bound %u)", w.max_depth, f->n,
                 bound);
}

/* Every item's rank and before against the reference, and the tag count
 * of every prefix and every suffix (and the whole, and the empty range at
 * each end). */
static void check_all_items(const cs_ordtree *t, const ref *f)
{
    for (uint32_t v = 0; v < f->n; v++) {
        assert_int_equal(cs_ordtree_rank(t, v), f->pos[v]);
        assert_true(cs_ordtree_before(t, v) == f->lvl[f->pos[v]]);
    }
    uint32_t all = ref_tags(f, 0, f->n), pre = 0;
    for (uint32_t p = 0; p <= f->n; p++) {
        if (p > 0)
            pre += f->tag[f->seq[p - 1]];
        uint32_t got = cs_ordtree_tags(t, 0, p),
                 suf = cs_ordtree_tags(t, p, f->n);
        if (got != pre || suf != all - pre)
            fail_msg("n %u: tags [0, %u) %u and [%u, %u) %u, reference %u "
                     "and %u",
                     f->n, p, got, p, f->n, suf, pre, all - pre);
        assert_int_equal(cs_ordtree_tags(t, p, p), 0);
        if (p < f->n)
            assert_int_equal(cs_ordtree_at(t, p), f->seq[p]);
        for (int which = 0; which < 2; which++)
            assert_int_equal(cs_ordtree_next(t, p, which),
                             ref_next(f, p, which));
    }
}

static unsigned long long n_next_q, n_next_found;

/* cs_ordtree_next and cs_ordtree_at at a random position. */
static void check_next_query(const cs_ordtree *t, const ref *f, tu_rng *r)
{
    uint32_t p = tu_rng_below(r, f->n + 1);
    int which = (int)tu_rng_below(r, 2);
    uint32_t want = ref_next(f, p, which);
    assert_int_equal(cs_ordtree_next(t, p, which), want);
    if (p < f->n)
        assert_int_equal(cs_ordtree_at(t, p), f->seq[p]);
    n_next_q++;
    n_next_found += want < f->n;
}

static unsigned long long n_tag_q, n_tag_empty, n_tag_mixed;

/* A random tags query: empty or reversed, the whole, a short or any
 * range, each against the reference. */
static void check_tags_query(const cs_ordtree *t, const ref *f, tu_rng *r,
                             uint64_t seed, unsigned op)
{
    uint32_t n = f->n, lo, hi;
    unsigned k = tu_rng_below(r, 100);
    if (k < 12) { /* empty or reversed */
        lo = tu_rng_below(r, n + 1);
        hi = tu_rng_below(r, lo + 1);
    } else if (k < 20) {
        lo = 0;
        hi = n;
    } else if (k < 60) { /* short, anywhere (the ends included) */
        lo = tu_rng_below(r, n + 1);
        hi = lo + tu_rng_below(r, 5);
        if (hi > n)
            hi = n;
    } else {
        lo = tu_rng_below(r, n + 1);
        hi = lo + tu_rng_below(r, n - lo + 1);
    }
    uint32_t got = cs_ordtree_tags(t, lo, hi);
    uint32_t want = lo < hi ? ref_tags(f, lo, hi) : 0;
    if (got != want)
        fail_msg("n %u seed %llu op %u: tags [%u, %u) %u, reference %u", n,
                 (unsigned long long)seed, op, lo, hi, got, want);
    n_tag_q++;
    n_tag_empty += lo >= hi;
    n_tag_mixed += want > 0 && want < hi - lo;
}

/* ---- the reference operations -------------------------------------------- */

static void ref_move_after(ref *f, uint32_t lo, uint32_t hi, uint32_t after,
                           uint32_t *tmp)
{
    uint32_t len = hi - lo, k = 0;
    memcpy(tmp, f->seq + lo, len * sizeof *tmp);
    /* the sequence without the block, then the block inserted */
    uint32_t *rest = tmp + len;
    for (uint32_t i = 0; i < f->n; i++)
        if (i < lo || i >= hi)
            rest[k++] = f->seq[i];
    uint32_t to = 0;
    if (after != CS_ORD_NONE) {
        while (rest[to] != after)
            to++;
        to++;
    }
    memcpy(f->seq, rest, to * sizeof *rest);
    memcpy(f->seq + to, tmp, len * sizeof *tmp);
    memcpy(f->seq + to + len, rest + to, (k - to) * sizeof *rest);
    ref_levels(f);
}

static uint32_t ref_last_over(const ref *f, uint32_t lo, uint32_t hi,
                              int64_t x, int64_t y)
{
    for (uint32_t i = hi; i-- > lo;) {
        int64_t l = f->lvl[i];
        if (l > x || l + f->top[f->seq[i]] > y)
            return f->seq[i];
    }
    return CS_ORD_NONE;
}

/* A bound for last_over: an extreme, a small constant, or near a level
 * (with its top when with_top) of a random position, or near the range's
 * highest, so that the answer lands anywhere in the range or nowhere. */
static int64_t rnd_bound(tu_rng *r, const ref *f, uint32_t lo, uint32_t hi,
                         int with_top)
{
    switch (tu_rng_below(r, 8)) {
    case 0:
        return INT64_MAX;
    case 1:
        return INT64_MIN;
    case 2:
        return 4;
    case 3:
        return (int64_t)tu_rng_below(r, 5) - 2;
    case 4:
    case 5: {
        uint32_t i = tu_rng_below(r, f->n);
        int64_t v = f->lvl[i] + (with_top ? f->top[f->seq[i]] : 0);
        return v + (int64_t)tu_rng_below(r, 3) - 1;
    }
    default: {
        int64_t m = INT64_MIN;
        for (uint32_t i = lo; i < hi; i++) {
            int64_t v = f->lvl[i] + (with_top ? f->top[f->seq[i]] : 0);
            if (v > m)
                m = v;
        }
        if (m == INT64_MIN)
            return 0;
        /* just below the highest: few items pass, often only the last
         * holding it; at it: none */
        return m - (int64_t)tu_rng_below(r, 2);
    }
    }
}

static unsigned long long n_ops[6], n_found, n_front_moves, n_struct,
    n_null_tags;

static void run_tree(uint32_t n, uint64_t seed, unsigned ops)
{
    tu_rng r;
    tu_rng_seed(&r, seed * 1000003u + n);
    int scale = (int)(seed % 3);
    ref f;
    ref_init(&f, n);
    uint8_t *mark_in = malloc((n + 1) * sizeof *mark_in);
    uint8_t *tag_in = malloc((n + 1) * sizeof *tag_in);
    uint32_t *tmp = malloc((2 * n + 1) * sizeof *tmp);
    assert_true(tag_in && mark_in && tmp);
    /* a random permutation (or, for some seeds, the identity) */
    ref_order(&f, &r, seed % 4 != 0);
    for (uint32_t v = 0; v < n; v++) {
        f.net[v] = rnd_net(&r, scale);
        f.top[v] = rnd_top(&r, scale);
    }
    /* tags: none (NULL), none or all (arrays), or a random density; a
     * tagged item's byte is any nonzero value */
    unsigned tag_mode = (unsigned)((seed + n) % 8);
    uint32_t density = tu_rng_below(&r, 101);
    for (uint32_t v = 0; v < n; v++) {
        int on = tag_mode == 1   ? 0
                 : tag_mode == 2 ? 1
                                 : tu_rng_below(&r, 100) < density;
        if (tag_mode == 0)
            on = 0;
        f.tag[v] = (uint8_t)on;
        tag_in[v] = on ? (uint8_t)(1 + tu_rng_below(&r, 255)) : 0;
    }
    /* marks: none (NULL) in one tree of four, else sparse or dense */
    int no_marks = (seed + n) % 4 == 3;
    uint32_t mark_density = tu_rng_below(&r, 2) ? 5 : 60;
    for (uint32_t v = 0; v < n; v++) {
        int on = !no_marks && tu_rng_below(&r, 100) < mark_density;
        f.mark[v] = (uint8_t)on;
        mark_in[v] = on ? (uint8_t)(1 + tu_rng_below(&r, 255)) : 0;
    }
    ref_levels(&f);
    cs_ordtree t;
    assert_int_equal(cs_ordtree_init(&t, n, f.seq, f.net, f.top,
                                     tag_mode == 0 ? NULL : tag_in,
                                     no_marks ? NULL : mark_in),
                     0);
    n_null_tags += tag_mode == 0;
    /* the tree keeps its own copy */
    if (n > 0) {
        memset(tag_in, 0xa5, n);
        memset(mark_in, 0xa5, n);
    }
    check_structure(&t, &f, tmp);
    check_all_items(&t, &f);
    n_struct++;
    if (n == 0) {
        assert_int_equal(cs_ordtree_last_over(&t, 0, 0, INT64_MIN, INT64_MIN),
                         CS_ORD_NONE);
        assert_int_equal(cs_ordtree_tags(&t, 0, 0), 0);
        ops = 0;
    }
    uint32_t every = n < 64 ? 1 : n / 32;
    for (unsigned op = 0; op < ops; op++) {
        unsigned kind = tu_rng_below(&r, 100);
        if (kind < 15) { /* set */
            uint32_t v = tu_rng_below(&r, n);
            int64_t net = rnd_net(&r, scale), top = rnd_top(&r, scale);
            cs_ordtree_set(&t, v, net, top);
            f.net[v] = net;
            f.top[v] = top;
            ref_levels(&f);
            n_ops[0]++;
        } else if (kind < 40) { /* move a block */
            uint32_t cap = n == 1 || tu_rng_chance(&r, 30)
                               ? n
                               : (n - 1 < 8 ? n - 1 : 8);
            uint32_t len = 1 + tu_rng_below(&r, cap);
            uint32_t lo = tu_rng_below(&r, n - len + 1), hi = lo + len;
            uint32_t after;
            if (len == n || tu_rng_chance(&r, 15)) {
                after = CS_ORD_NONE; /* the whole sequence: only there */
            } else if (tu_rng_chance(&r, 20) && (lo > 0 || hi < n)) {
                /* right next to the block: a move that changes nothing,
                 * or one item over */
                if (lo > 0 && (hi == n || tu_rng_chance(&r, 50)))
                    after = f.seq[lo - 1];
                else
                    after = f.seq[hi];
            } else {
                uint32_t k = tu_rng_below(&r, n - len);
                after = f.seq[k < lo ? k : k + len];
            }
            if (after == CS_ORD_NONE)
                n_front_moves++;
            uint32_t first = f.seq[lo], last = f.seq[hi - 1];
            cs_ordtree_move_after(&t, first, last, after);
            ref_move_after(&f, lo, hi, after, tmp);
            assert_int_equal(cs_ordtree_rank(&t, first),
                             after == CS_ORD_NONE ? 0 : f.pos[after] + 1);
            assert_int_equal(cs_ordtree_rank(&t, last),
                             cs_ordtree_rank(&t, first) + len - 1);
            n_ops[1]++;
        } else if (kind < 55) { /* range */
            uint32_t lo = tu_rng_below(&r, n);
            uint32_t hi = lo + 1 + tu_rng_below(&r, n - lo);
            int64_t hi_top = INT64_MIN;
            int64_t s = cs_ordtree_range(&t, f.seq[lo], f.seq[hi - 1], &hi_top);
            int64_t want_s = 0, want_top = INT64_MIN;
            for (uint32_t i = lo; i < hi; i++) {
                int64_t v = f.lvl[i] - f.lvl[lo] + f.top[f.seq[i]];
                if (v > want_top)
                    want_top = v;
                want_s += f.net[f.seq[i]];
            }
            if (s != want_s || hi_top != want_top)
                fail_msg("n %u seed %llu op %u: range [%u, %u) sum %lld "
                         "hi_top %lld, reference %lld %lld",
                         n, (unsigned long long)seed, op, lo, hi,
                         (long long)s, (long long)hi_top, (long long)want_s,
                         (long long)want_top);
            n_ops[2]++;
        } else if (kind < 65) { /* rank and before of a few items */
            for (int q = 0; q < 4; q++) {
                uint32_t v = tu_rng_below(&r, n);
                assert_int_equal(cs_ordtree_rank(&t, v), f.pos[v]);
                assert_true(cs_ordtree_before(&t, v) == f.lvl[f.pos[v]]);
            }
            n_ops[3] += 4;
        } else { /* last_over */
            uint32_t lo, hi;
            if (tu_rng_chance(&r, 10)) {
                lo = tu_rng_below(&r, n + 1); /* empty or reversed */
                hi = tu_rng_below(&r, lo + 1);
            } else if (tu_rng_chance(&r, 25)) {
                lo = 0;
                hi = n;
            } else {
                lo = tu_rng_below(&r, n);
                hi = lo + 1 + tu_rng_below(&r, n - lo);
            }
            uint32_t blo = lo < hi ? lo : 0, bhi = lo < hi ? hi : n;
            int64_t x = rnd_bound(&r, &f, blo, bhi, 0);
            int64_t y = rnd_bound(&r, &f, blo, bhi, 1);
            if (tu_rng_chance(&r, 25))
                x = INT64_MAX; /* the top bound alone */
            else if (tu_rng_chance(&r, 25))
                y = INT64_MAX; /* the level bound alone */
            uint32_t got = cs_ordtree_last_over(&t, lo, hi, x, y);
            uint32_t want = ref_last_over(&f, lo, hi, x, y);
            if (got != want)
                fail_msg("n %u seed %llu op %u: last_over [%u, %u) x %lld "
                         "y %lld: item %u, reference %u",
                         n, (unsigned long long)seed, op, lo, hi,
                         (long long)x, (long long)y, got, want);
            if (want != CS_ORD_NONE)
                n_found++;
            n_ops[4]++;
        }
        /* a few items after every op (the queries split and merge too),
         * all of them and the structure every so often */
        for (int q = 0; q < 3; q++) {
            uint32_t v = tu_rng_below(&r, n);
            assert_int_equal(cs_ordtree_rank(&t, v), f.pos[v]);
            assert_true(cs_ordtree_before(&t, v) == f.lvl[f.pos[v]]);
        }
        for (int q = 0; q < 2; q++) {
            check_tags_query(&t, &f, &r, seed, op);
            check_next_query(&t, &f, &r);
        }
        if (op % every == 0 || op + 1 == ops) {
            check_structure(&t, &f, tmp);
            check_all_items(&t, &f);
            n_struct++;
        }
    }
    cs_ordtree_free(&t);
    ref_free(&f);
    free(tag_in);
    free(mark_in);
    free(tmp);
}

/* The counts run_tree keeps, back to zero. */
static void reset_ops(void)
{
    memset(n_ops, 0, sizeof n_ops);
    n_found = n_front_moves = n_struct = n_null_tags = 0;
    n_tag_q = n_tag_empty = n_tag_mixed = 0;
    n_next_q = n_next_found = 0;
}

static void print_ops(const char *what)
{
    print_message("%s: %llu sets, %llu moves (%llu to the front), %llu "
                  "ranges, %llu ranks, %llu last_over (%llu found), %llu "
                  "tags queries (%llu empty or reversed, %llu partly "
                  "tagged; %llu trees with tag NULL), %llu structure "
                  "checks\n",
                  what, n_ops[0], n_ops[1], n_front_moves, n_ops[2],
                  n_ops[3], n_ops[4], n_found, n_tag_q, n_tag_empty,
                  n_tag_mixed, n_null_tags, n_struct);
}

/* Small trees, every shape: each op is followed by a full check. */
static void test_ordtree_small(void **state)
{
    (void)state;
    reset_ops();
    for (uint32_t n = 0; n <= 40; n++)
        for (uint64_t seed = 1; seed <= 6; seed++)
            run_tree(n, seed, n == 0 ? 0 : 400);
    assert_true(n_ops[1] >= 10000);
    assert_true(n_ops[4] >= 20000);
    assert_true(n_found >= n_ops[4] / 4);
    assert_true(n_found <= n_ops[4] - n_ops[4] / 8);
    assert_true(n_front_moves >= 1000);
    assert_true(n_null_tags >= 30);
    assert_true(n_tag_q >= 30000);
    assert_true(n_tag_empty >= n_tag_q / 10);
    assert_true(n_tag_mixed >= n_tag_q / 10);
    print_ops("small");
}

/* Larger trees, up to a few thousand items. */
static void test_ordtree_large(void **state)
{
    (void)state;
    reset_ops();
    static const uint32_t sizes[] = {64, 257, 1000, 2048, 3001};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (uint64_t seed = 1; seed <= 6; seed++)
            run_tree(sizes[k], seed + 10 * k, sizes[k] > 1000 ? 1500 : 2500);
    assert_true(n_ops[1] >= 5000);
    assert_true(n_ops[4] >= 10000);
    assert_true(n_found >= n_ops[4] / 4);
    assert_true(n_found <= n_ops[4] - n_ops[4] / 8);
    assert_true(n_null_tags >= 3);
    assert_true(n_tag_q >= 20000);
    assert_true(n_tag_mixed >= n_tag_q / 6);
    assert_true(n_next_found >= n_next_q / 2);
    print_message("large: %llu next/at queries (%llu found one)\n", n_next_q,
                  n_next_found);
    print_ops("large");
}

/* ---- times ---------------------------------------------------------------- */

static unsigned long long n_fq, n_fq_cols, n_col_adds, n_halfway,
    n_crossings, n_plain_trees;

/* A time of kind k (see the file's comment). */
static double rnd_time(tu_rng *r, unsigned k)
{
    uint32_t x = tu_rng_below(r, 100);
    double mant = (double)(tu_rng_next(r) >> 11) * 0x1p-53; /* [0, 1) */
    switch (k) {
    case 0: /* full precision, many magnitudes, some zeros */
        return x < 8 ? (x < 4 ? 0.0 : -0.0)
                     : ldexp(mant, (int)tu_rng_below(r, 41) - 20);
    case 1: /* small integers */
        return (double)tu_rng_below(r, 1000);
    case 2: /* a few huge, the rest odd multiples of 2^7 .. 2^13: halfway
             * between two steps of the binades 2^60 .. 2^66 */
        return x < 4 ? ldexp(1.0 + mant, 60 + (int)tu_rng_below(r, 4))
                     : ldexp((double)(2 * tu_rng_below(r, 32) + 1),
                             7 + (int)tu_rng_below(r, 7));
    case 3: /* close values: long walks inside each binade */
        return 1000.0 + mant;
    case 4: /* huge exponents and subnormals */
        return x < 50 ? ldexp(1.0 + mant, 900 + (int)tu_rng_below(r, 4))
                      : ldexp(mant, -1060);
    case 5: /* full precision; run_times makes one negative: no columns */
        return x < 2 ? -1.0 - mant : ldexp(mant, (int)tu_rng_below(r, 8));
    default: /* not finite now and then (a multiplier of inf; run_times
              * makes one +inf): no columns */
        return x < 3 ? (x == 0 ? INFINITY : x == 1 ? -INFINITY : NAN)
                     : ldexp(mant, (int)tu_rng_below(r, 8));
    }
}

/* The loop cs_ordtree_fsum stands for, over the reference order, with
 * its counts. */
static double ref_fsum(const cs_ordtree *t, const ref *f, const double *x,
                       uint32_t p, uint32_t q, double s)
{
    for (uint32_t i = p; i < q; i++) {
        uint32_t v = f->seq[i];
        if (f->tag[v])
            continue;
        int e = s > 0 ? ilogb(s) : INT_MIN;
        int in = t->cols > 0 && e >= t->e_lo && e - t->e_lo < (int)t->cols;
        if (in) {
            double y = x[v] / ldexp(1.0, e - 52); /* exact */
            n_col_adds++;
            n_halfway += y - floor(y) == 0.5;
        }
        double next = s + x[v];
        n_crossings += in && next > 0 && ilogb(next) != e;
        s = next;
    }
    return s;
}

static void run_times(uint32_t n, uint64_t seed, unsigned kind, unsigned ops)
{
    tu_rng r;
    tu_rng_seed(&r, seed * 7777 + n * 31 + kind);
    ref f;
    ref_init(&f, n);
    uint32_t *tmp = malloc((2 * n + 1) * sizeof *tmp);
    double *x = malloc((n + 1) * sizeof *x);
    assert_true(tmp && x);
    ref_order(&f, &r, 1);
    uint32_t density = tu_rng_below(&r, 40);
    for (uint32_t v = 0; v < n; v++) {
        f.tag[v] = tu_rng_below(&r, 100) < density;
        /* tagged items' times are never read: garbage there */
        x[v] = f.tag[v] ? NAN : rnd_time(&r, kind);
    }
    for (uint32_t v = 0; v < n && kind >= 5; v++)
        if (!f.tag[v]) {
            x[v] = kind == 5 ? -0.75 : INFINITY;
            break;
        }
    ref_levels(&f);
    cs_ordtree t;
    assert_int_equal(cs_ordtree_init(&t, n, f.seq, f.net, f.top, f.tag, NULL),
                     0);
    assert_int_equal(cs_ordtree_time_on(&t, x), 0);
    int positive = 0; /* sums in binades with columns */
    for (uint32_t v = 0; v < n; v++)
        positive |= !f.tag[v] && x[v] > 0x1p-900;
    if (kind >= 5 || !positive)
        assert_int_equal(t.cols, 0);
    else if (t.cols == 0)
        fail_msg("n %u seed %llu kind %u: no columns", n,
                 (unsigned long long)seed, kind);
    n_plain_trees += t.cols == 0;
    for (unsigned op = 0; op < ops; op++) {
        if (tu_rng_chance(&r, 30)) { /* move a block */
            uint32_t len = 1 + tu_rng_below(&r, tu_rng_chance(&r, 20) ? n : 8);
            if (len >= n)
                continue;
            uint32_t lo = tu_rng_below(&r, n - len + 1), hi = lo + len;
            uint32_t k = tu_rng_below(&r, n - len);
            uint32_t after =
                tu_rng_chance(&r, 10) ? CS_ORD_NONE : f.seq[k < lo ? k : k + len];
            cs_ordtree_move_after(&t, f.seq[lo], f.seq[hi - 1], after);
            ref_move_after(&f, lo, hi, after, tmp);
            continue;
        }
        uint32_t p = tu_rng_below(&r, n + 1);
        uint32_t q = p + tu_rng_below(&r, n - p + 1);
        if (tu_rng_chance(&r, 30)) { /* long ranges */
            p = tu_rng_below(&r, n / 8 + 1);
            q = n - tu_rng_below(&r, n / 8 + 1);
        }
        /* from 0, from a prefix's sum (a walk's start), or near the top
         * of a binade */
        double s0 = 0.0;
        uint32_t how = tu_rng_below(&r, 3);
        if (how == 1 && p > 0)
            s0 = fabs(ref_fsum(&t, &f, x, tu_rng_below(&r, p), p, 0.0));
        else if (how == 2)
            s0 = nextafter(ldexp(1.0, (int)t.e_lo + (int)tu_rng_below(&r, 4)),
                           0.0);
        if (!(s0 >= 0 && s0 < HUGE_VAL))
            s0 = 0.0;
        if (kind >= 5 && tu_rng_chance(&r, 30))
            s0 = -s0 - 1.0; /* negative sums, where times are */
        unsigned long long adds = n_col_adds;
        double want = ref_fsum(&t, &f, x, p, q, s0);
        double got = cs_ordtree_fsum(&t, p, q, s0);
        if (memcmp(&got, &want, sizeof got) != 0)
            fail_msg("n %u seed %llu kind %u op %u: fsum [%u, %u) from "
                     "%.17g: %.17g, the loop %.17g",
                     n, (unsigned long long)seed, kind, op, p, q, s0, got,
                     want);
        n_fq++;
        n_fq_cols += n_col_adds > adds;
    }
    cs_ordtree_free(&t);
    ref_free(&f);
    free(tmp);
    free(x);
}

static void test_ordtree_times(void **state)
{
    (void)state;
    n_fq = n_fq_cols = n_col_adds = n_halfway = n_crossings = 0;
    n_plain_trees = 0;
    static const uint32_t sizes[] = {1, 2, 5, 33, 200, 1000, 4000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (unsigned kind = 0; kind < 7; kind++)
            for (uint64_t seed = 1; seed <= 3; seed++)
                run_times(sizes[k], seed, kind, sizes[k] > 1000 ? 300 : 600);
    print_message("times: %llu sums (%llu adding in a column's binade), "
                  "%llu additions in a column's binade, %llu of them "
                  "halfway, %llu crossings out of one; %llu trees without "
                  "columns\n",
                  n_fq, n_fq_cols, n_col_adds, n_halfway, n_crossings,
                  n_plain_trees);
    /* about half of what the seeds give */
    assert_true(n_fq_cols >= n_fq / 4);
    assert_true(n_col_adds >= 3000000);
    assert_true(n_halfway >= 70000);
    assert_true(n_crossings >= 50000);
    assert_true(n_plain_trees >= 6 * sizeof sizes / sizeof sizes[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordtree_small),
        cmocka_unit_test(test_ordtree_large),
        cmocka_unit_test(test_ordtree_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
