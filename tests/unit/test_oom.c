/* commsched unit tests — out of memory: the loader and the passes return
 * COMMSCHED_ENOMEM when any single allocation fails, never crash, leak or
 * report another error (issue 21).
 *
 * Allocation failures are injected at link time: this executable is
 * linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (see
 * CMakeLists.txt), so every allocation the library makes goes through the
 * wrappers below, and jansson's through json_set_alloc_funcs. The library
 * itself has no hook and no global; the counter lives in this test only.
 * Each case runs once per allocation it makes, failing that one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/commsched.h"
#include "testutil.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

/* Allocations left before the one that fails; < 0: none fails. */
static long fail_in = -1;
static int failed;     /* the armed failure happened */
static int in_jansson; /* count (and fail) jansson's allocations, not ours */

static int fail_now(void)
{
    if (fail_in < 0)
        return 0;
    if (fail_in-- == 0) {
        failed = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    return !in_jansson && fail_now() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
    return !in_jansson && fail_now() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
    return !in_jansson && fail_now() ? NULL : __real_realloc(p, n);
}
static void *json_malloc(size_t n)
{
    return in_jansson && fail_now() ? NULL : __real_malloc(n);
}

static void arm(long n, int jansson)
{
    failed = 0;
    fail_in = n;
    in_jansson = jansson;
}

static void disarm(void) { fail_in = -1; }

static const char *GRAPH =
    "{\"format\": \"commsched-graph\", \"version\": 1, \"name\": \"oom\","
    " \"groups\": [{\"name\": \"dp\", \"size\": 8}],"
    " \"inputs\": [{\"name\": \"x\", \"size\": 4096, \"freeable\": true},"
    "   {\"name\": \"w\", \"size\": 1024}],"
    " \"outputs\": [\"g\"],"
    " \"nodes\": ["
    "  {\"name\": \"ag\", \"kind\": \"collective\", \"op\": \"all_gather\","
    "   \"group\": \"dp\", \"inputs\": [\"w\"],"
    "   \"outputs\": [{\"name\": \"ag_out\", \"size\": 8192}]},"
    "  {\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    "   \"outputs\": [{\"name\": \"y\", \"size\": 4096}], \"runtime_ns\": 500},"
    "  {\"name\": \"ag_wait\", \"kind\": \"wait\", \"inputs\": [\"ag_out\"],"
    "   \"outputs\": [{\"name\": \"wf\", \"alias_of\": \"ag_out\"}]},"
    "  {\"name\": \"mm\", \"kind\": \"compute\", \"inputs\": [\"y\", \"wf\"],"
    "   \"outputs\": [{\"name\": \"z\", \"size\": 4096, \"from\": [\"y\","
    "   \"wf\"]}], \"flops\": 1e9},"
    "  {\"name\": \"rs\", \"kind\": \"collective\", \"op\": \"reduce_scatter\","
    "   \"group\": \"dp\", \"inputs\": [\"z\"],"
    "   \"outputs\": [{\"name\": \"rs_out\", \"size\": 512}]},"
    "  {\"name\": \"rs_wait\", \"kind\": \"wait\", \"inputs\": [\"rs_out\"],"
    "   \"outputs\": [{\"name\": \"g\", \"alias_of\": \"rs_out\"}]}]}";

/* Loading, with every allocation of the library's in turn failing. */
static void test_load_oom(void **state)
{
    (void)state;
    long n;
    for (n = 0;; n++) {
        commsched_graph *g = NULL;
        commsched_error err = {0};
        arm(n, 0);
        commsched_status st = commsched_graph_load_string(GRAPH, 0, &g, &err);
        disarm();
        if (!failed) {
            assert_int_equal(st, COMMSCHED_OK);
            commsched_graph_destroy(g);
            break;
        }
        if (st != COMMSCHED_ENOMEM)
            fail_msg("allocation %ld failing gave %s: %s: %s", n,
                     commsched_status_name(st), err.path, err.text);
        assert_null(g);
    }
    assert_true(n > 10); /* the loop did reach the library's allocations */
}

/* jansson's own allocations failing: never a crash or a leak, and never
 * success. jansson 2.14's lexer ignores some failures (a string whose
 * buffer cannot grow is cut short, docs/FORMAT.md "Errors"), so besides
 * ENOMEM a located error about the cut text is possible; the loader turns
 * the lexer's other failures (no message, or a syntax error that parsing
 * again does not reproduce) into ENOMEM. */
static void test_load_oom_in_jansson(void **state)
{
    (void)state;
    long n, enomem = 0;
    for (n = 0;; n++) {
        commsched_graph *g = NULL;
        commsched_error err = {0};
        arm(n, 1);
        commsched_status st = commsched_graph_load_string(GRAPH, 0, &g, &err);
        disarm();
        if (!failed) {
            assert_int_equal(st, COMMSCHED_OK);
            commsched_graph_destroy(g);
            break;
        }
        commsched_graph_destroy(g);
        enomem += st == COMMSCHED_ENOMEM;
        if (st != COMMSCHED_ENOMEM && st != COMMSCHED_ESCHEMA &&
            st != COMMSCHED_EGRAPH && st != COMMSCHED_EPARSE)
            fail_msg("jansson allocation %ld failing gave %s: %s", n,
                     commsched_status_name(st), err.text);
    }
    assert_true(n > 10 && enomem > n / 2);
}

/* The default pipeline and both simulations (commsched_optimize), and a
 * pipeline of every kind of pass, with every allocation in turn failing. */
static void test_optimize_oom(void **state)
{
    (void)state;
    static const char *const passes[] = {"default",
                                          "bucket_all_gather,"
                                          "bucket_reduce_scatter,"
                                          "reorder_compute_for_overlap,"
                                          "sink_waits,raise_comms"};
    commsched_graph *g = tu_graph_from_json(GRAPH);
    for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) {
        long n;
        for (n = 0;; n++) {
            commsched_optimize_options *o = NULL;
            commsched_result *r = NULL;
            commsched_error err = {0};
            assert_int_equal(commsched_optimize_options_create(&o, &err),
                             COMMSCHED_OK);
            assert_int_equal(
                commsched_optimize_options_set(o, "passes", passes[p], &err),
                COMMSCHED_OK);
            arm(n, 0);
            commsched_status st = commsched_optimize(g, o, &r, &err);
            disarm();
            commsched_optimize_options_destroy(o);
            if (!failed) {
                if (st != COMMSCHED_OK)
                    fail_msg("%s: %s: %s", passes[p], err.path, err.text);
                commsched_result_destroy(r);
                break;
            }
            if (st != COMMSCHED_ENOMEM)
                fail_msg("%s: allocation %ld failing gave %s: %s: %s",
                         passes[p], n, commsched_status_name(st), err.path,
                         err.text);
            assert_null(r);
        }
        assert_true(n > 10);
    }
    commsched_graph_destroy(g);
}

int main(void)
{
    json_set_alloc_funcs(json_malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_oom),
        cmocka_unit_test(test_load_oom_in_jansson),
        cmocka_unit_test(test_optimize_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
