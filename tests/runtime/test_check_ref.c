/* commsched — --check's host reference (src/runtime/check_ref.c), which
 * needs no MPI: values per buffer, so two in-flight collectives sharing an
 * input expect the same; a collective reading another's output expects
 * the replayed result; a wrong element is found. Expected values are built from the fills of every
 * rank, as the ranks would hold them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "check_ref.h"
#include "commsched/graph.h"
#include "graph_internal.h"
#include "plan.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "
#define W 4
#define N 16 /* int32 elements of every buffer */

/* Two all-reduces of the world read `a` while both are in flight; after
 * their waits, a sync all-reduce on pairs reads the first one's result. */
static const char *const g_shared =
    HDR "\"groups\": [{\"name\": \"world\", \"size\": 4},"
    "              {\"name\": \"pair\", \"size\": 2}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 64, \"freeable\": true}],"
    "\"outputs\": [\"o3\", \"v2\"], \"nodes\": ["
    "{\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"a\", \"size\": 64}]},"
    "{\"name\": \"ar1\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"world\", \"dtype\": \"int32\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"o1\", \"size\": 64}]},"
    "{\"name\": \"ar2\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"world\", \"dtype\": \"int32\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"o2\", \"size\": 64}]},"
    "{\"name\": \"w1\", \"kind\": \"wait\", \"inputs\": [\"o1\"],"
    " \"outputs\": [{\"name\": \"v1\", \"alias_of\": \"o1\"}]},"
    "{\"name\": \"w2\", \"kind\": \"wait\", \"inputs\": [\"o2\"],"
    " \"outputs\": [{\"name\": \"v2\", \"alias_of\": \"o2\"}]},"
    "{\"name\": \"ar3\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"pair\", \"dtype\": \"int32\", \"async\": false,"
    " \"inputs\": [\"v1\"], \"outputs\": [{\"name\": \"o3\", \"size\": 64}]}"
    "]}";

static commsched_graph *load(const char *json)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    if (commsched_graph_load_string(json, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("graph: %s %s", err.path, err.text);
    return g;
}

typedef struct fixture {
    commsched_graph *g;
    cs_plan p;
    cs_check_ref *ref[W];
} fixture;

static void setup(fixture *f, const char *json)
{
    commsched_error err = {0};
    f->g = load(json);
    if (cs_plan_build(&f->p, f->g, NULL, 1.0, &err) != COMMSCHED_OK)
        fail_msg("plan: %s", err.text);
    uint8_t ek[16] = {0};
    for (uint32_t v = 0; v < f->g->n_nodes; v++)
        ek[v] = CS_EK_I32;
    for (int r = 0; r < W; r++)
        assert_int_equal(cs_check_ref_build(&f->ref[r], &f->p, W, r, ek,
                                            CS_REF_RS_AT_START, &err),
                         COMMSCHED_OK);
}

static void teardown(fixture *f)
{
    for (int r = 0; r < W; r++)
        cs_check_ref_free(f->ref[r]);
    cs_plan_fini(&f->p);
    commsched_graph_destroy(f->g);
}

static uint32_t node(const fixture *f, const char *name)
{
    return commsched_graph_find_node(f->g, name);
}

static void test_shared_input_and_chain(void **state)
{
    (void)state;
    fixture f;
    setup(&f, g_shared);
    uint32_t a = commsched_graph_find_buffer(f.g, "a");
    assert_true(cs_check_ref_touched(f.ref[0], a));
    /* What every rank holds in a, and their sum. */
    int32_t hold[W][N], sum[N] = {0};
    for (int r = 0; r < W; r++) {
        cs_check_ref_fill(f.ref[r], a, hold[r], sizeof hold[r]);
        for (int i = 0; i < N; i++)
            sum[i] += hold[r][i];
    }
    /* Values differ between ranks (a piece from the wrong rank shows). */
    assert_true(memcmp(hold[0], hold[1], sizeof hold[0]) != 0);
    for (int r = 0; r < W; r++) {
        /* Both all-reduces read the same values while in flight. */
        const char *both[2] = {"ar1", "ar2"};
        for (int k = 0; k < 2; k++) {
            uint32_t v = node(&f, both[k]), buf;
            size_t off, len;
            cs_check_ref_region(f.ref[r], v, &buf, &off, &len);
            assert_int_equal(off, 0);
            assert_int_equal(len, sizeof sum);
            assert_int_equal(cs_check_ref_verify(f.ref[r], v, sum, NULL, NULL),
                             -1);
        }
        /* ar3 reads ar1's result on pairs: twice the world's sum. */
        int32_t twice[N];
        for (int i = 0; i < N; i++)
            twice[i] = 2 * sum[i];
        assert_int_equal(cs_check_ref_verify(f.ref[r], node(&f, "ar3"), twice,
                                             NULL, NULL),
                         -1);
        /* The input's own values are not the result: a no-op fails. */
        assert_int_equal(cs_check_ref_verify(f.ref[r], node(&f, "ar3"), sum,
                                             NULL, NULL),
                         0);
        assert_int_equal(cs_check_ref_unknown(f.ref[r]), 0);
    }
    /* A corrupted element is found, with both values. */
    sum[5] += 1;
    double want = 0, got = 0;
    assert_int_equal(cs_check_ref_verify(f.ref[2], node(&f, "ar1"), sum, &want,
                                         &got),
                     5);
    assert_true(got == want + 1);
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_input_and_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
