/* commsched unit tests — the segment tree (src/base/segtree.c) the
 * overlap pass and the bucketing passes' incremental pricing keep memory
 * levels in: range adds, the range maximum with the position holding it,
 * and the value at one position, against a plain array under random
 * operations. The overlap pass's budget test keeps that position as the
 * witness of a refusal and re-reads it instead of re-asking the range, so
 * a position that does not hold the maximum would let it accept an order
 * over budget (or refuse one within it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "segtree.h"
#include "testutil.h"

/* Below every internal node, the larger child is 0 (each node holds its
 * maximum less its parent's), and the root holds the maximum of the
 * reference: an add that stopped pulling too early (segtree.c stops where
 * a pull moves nothing) leaves a node stale even where the queries below
 * happen not to read it. */
static void check_nodes(const cs_segtree *s, const int64_t *ref, uint32_t n)
{
    for (uint32_t x = 1; x < s->size; x++) {
        int64_t l = s->a[2 * x], r = s->a[2 * x + 1];
        assert_true((l > r ? l : r) == 0);
    }
    int64_t m = CS_SEG_LOW;
    for (uint32_t i = 0; i < n; i++)
        if (ref[i] > m)
            m = ref[i];
    assert_true(s->a[1] == m);
}

static void check_tree(uint32_t n, uint64_t seed)
{
    cs_segtree s;
    assert_int_equal(cs_segtree_init(&s, n + 1), 0);
    assert_true(s.size >= n + 1 && (s.size & (s.size - 1)) == 0);
    int64_t *ref = calloc(n, sizeof *ref);
    assert_non_null(ref);
    tu_rng x;
    tu_rng_seed(&x, seed);
    for (uint32_t i = 0; i < n; i++)
        ref[i] = (int64_t)(tu_rng_next(&x) % 1000) - 500;
    cs_segtree_build(&s, ref, n);
    for (int op = 0; op < 4000; op++) {
        uint32_t l = (uint32_t)(tu_rng_next(&x) % (n + 1));
        uint32_t r = (uint32_t)(tu_rng_next(&x) % (n + 1));
        if (l > r) {
            uint32_t t = l;
            l = r;
            r = t;
        }
        if (tu_rng_next(&x) % 2) {
            /* small values, so ties (several positions at the maximum)
             * are common */
            int64_t v = (int64_t)(tu_rng_next(&x) % 7) - 3;
            cs_segtree_add(&s, l, r, v);
            for (uint32_t i = l; i < r; i++)
                ref[i] += v;
            if (n <= 64 || op % 64 == 0)
                check_nodes(&s, ref, n);
            continue;
        }
        uint32_t pos = UINT32_MAX;
        int64_t m = cs_segtree_max(&s, l, r, &pos);
        if (l == r) {
            assert_true(m == CS_SEG_LOW);
            continue;
        }
        int64_t want = ref[l];
        uint32_t last = l;
        for (uint32_t i = l; i < r; i++)
            if (ref[i] >= want) {
                want = ref[i];
                last = i;
            }
        assert_true(m == want);
        assert_true(cs_segtree_max(&s, l, r, NULL) == want);
        /* the rightmost position holding it */
        assert_int_equal(pos, last);
        assert_true(cs_segtree_at(&s, pos) == want);
        uint32_t p = (uint32_t)(tu_rng_next(&x) % n);
        assert_true(cs_segtree_at(&s, p) == ref[p]);
    }
    cs_segtree_free(&s);
    free(ref);
}

static void test_seg_small(void **state)
{
    (void)state;
    for (uint32_t n = 1; n <= 40; n++)
        check_tree(n, 0x9e3779b97f4a7c15u + n);
}

static void test_seg_large(void **state)
{
    (void)state;
    check_tree(1000, 12345);
    check_tree(1024, 777);
    check_tree(1025, 4242);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seg_small),
        cmocka_unit_test(test_seg_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
