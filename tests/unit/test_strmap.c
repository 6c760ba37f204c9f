/* commsched unit tests — the name table (src/base/util.c): puts and gets
 * one at a time against the pipelined form the builder uses at a million
 * names (cs_strmap_pipe: keys hashed and their slots, records and names
 * prefetched CS_STRMAP_AHEAD lookups ahead, then put or got with that
 * hash). A pipeline that handed back the wrong key's hash would file a
 * name under another's slot: a later get misses it, or a duplicate goes
 * unreported. Tables small enough to collide often (a capacity of 64 for
 * the first 32 names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util.h"

typedef struct rec {
    const char *name;
    uint32_t extra; /* a record is more than its name (stride != 8) */
} rec;

/* n names, some repeated (every 7th repeats an earlier one), in recs;
 * their text in buf (n * 24 bytes). */
static void make_names(rec *recs, char *buf, uint32_t n, uint64_t seed)
{
    tu_rng x;
    tu_rng_seed(&x, seed);
    for (uint32_t i = 0; i < n; i++) {
        char *s = buf + (size_t)i * 24;
        if (i > 0 && i % 7 == 0)
            snprintf(s, 24, "%s", recs[tu_rng_below(&x, i)].name);
        else
            snprintf(s, 24, "n%u:%llx", i,
                     (unsigned long long)tu_rng_below(&x, 100000));
        recs[i].name = s;
        recs[i].extra = i;
    }
}

static void check_pipeline(uint32_t n, uint64_t seed)
{
    rec *recs = calloc(n, sizeof *recs);
    char *buf = calloc((size_t)n * 24, 1);
    uint32_t *first_plain = calloc(n, sizeof *first_plain);
    assert_non_null(recs);
    assert_non_null(buf);
    assert_non_null(first_plain);
    make_names(recs, buf, n, seed);

    cs_strmap plain, piped;
    cs_strmap_init(&plain, recs, sizeof *recs, offsetof(rec, name));
    cs_strmap_init(&piped, recs, sizeof *recs, offsetof(rec, name));

    /* Inserts, one at a time and through the pipeline: the same answer
     * for every name (new, or the index it repeats). */
    cs_strmap_pipe p;
    p.n = 0;
    for (uint32_t i = 0; i < n; i++) {
        while (p.n < n && p.n < (size_t)i + CS_STRMAP_AHEAD)
            cs_strmap_pipe_push(&p, &piped, recs[p.n].name);
        uint32_t e1 = UINT32_MAX, e2 = UINT32_MAX;
        int r1 = cs_strmap_put(&plain, recs[i].name, i, &e1);
        int r2 = cs_strmap_put_h(&piped, recs[i].name,
                                 cs_strmap_pipe_hash(&p, i), i, &e2);
        assert_true(r1 >= 0 && r2 >= 0);
        assert_int_equal(r1, r2);
        if (r1 == 0)
            assert_int_equal(e1, e2);
        first_plain[i] = r1 == 1 ? i : e1;
    }
    assert_int_equal(plain.count, piped.count);

    /* Gets: every name, and names nobody put, through the pipeline and
     * plainly, in both tables. */
    char absent[24];
    p.n = 0;
    for (uint32_t i = 0; i < 2 * n; i++) {
        while (p.n < 2 * (size_t)n && p.n < (size_t)i + CS_STRMAP_AHEAD) {
            uint32_t k = (uint32_t)p.n;
            if (k < n) {
                cs_strmap_pipe_push(&p, &piped, recs[k].name);
            } else {
                snprintf(absent, sizeof absent, "absent%u", k);
                cs_strmap_pipe_push(&p, &piped, absent);
            }
        }
        const char *key = recs[i % n].name;
        if (i >= n) {
            snprintf(absent, sizeof absent, "absent%u", i);
            key = absent;
        }
        uint32_t want = i < n ? first_plain[i] : UINT32_MAX;
        assert_int_equal(cs_strmap_get(&plain, key), want);
        assert_int_equal(cs_strmap_get(&piped, key), want);
        assert_int_equal(cs_strmap_get_h(&piped, key,
                                         cs_strmap_pipe_hash(&p, i)),
                         want);
    }
    cs_strmap_fini(&plain);
    cs_strmap_fini(&piped);
    free(first_plain);
    free(buf);
    free(recs);
}

static void test_strmap_pipeline_small(void **state)
{
    (void)state;
    /* fewer names than the pipeline's depth, then about one table */
    for (uint32_t n = 1; n <= 40; n++)
        check_pipeline(n, 0x9e3779b97f4a7c15u + n);
}

static void test_strmap_pipeline_large(void **state)
{
    (void)state;
    check_pipeline(5000, 12345);
    check_pipeline(65536, 777);
}

/* A table with nothing in it: gets answer "absent" without a slot array,
 * and the pipeline's prefetches do not read one. */
static void test_strmap_empty(void **state)
{
    (void)state;
    rec r = {"x", 0};
    cs_strmap m;
    cs_strmap_init(&m, &r, sizeof r, offsetof(rec, name));
    cs_strmap_pipe p;
    p.n = 0;
    cs_strmap_pipe_push(&p, &m, "x");
    assert_int_equal(cs_strmap_get(&m, "x"), UINT32_MAX);
    assert_int_equal(cs_strmap_get_h(&m, "x", cs_strmap_pipe_hash(&p, 0)),
                     UINT32_MAX);
    cs_strmap_fini(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strmap_pipeline_small),
        cmocka_unit_test(test_strmap_pipeline_large),
        cmocka_unit_test(test_strmap_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
