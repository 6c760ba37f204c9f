/* commsched unit tests — the heap list scheduler's score0 (raise_comms,
 * reorder_compute_for_overlap; passes/heap_schedule.c) through fused
 * kernels: nodes whose outputs say which inputs they are made from (the
 * format's "from"). Inductor ranks a node by the collectives whose
 * ancestors contain it, and takes the ancestors before fusion, over the
 * kernels a fused node is made of; the graphs here are the smallest where
 * following "from" and ignoring it order differently. Every order is
 * derived by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/commsched.h"
#include "testutil.h"

/* One group "g", one 16-byte input "a", the graph output u_o. */
#define HDR                                                                    \
    "{\"format\": \"commsched-graph\", \"version\": 1, \"groups\": "           \
    "[{\"name\": \"g\", \"size\": 8, \"hosts\": 1}], \"inputs\": "             \
    "[{\"name\": \"a\", \"size\": 16}], \"outputs\": [\"u_o\"], \"nodes\": ["
#define COMPUTE(name, inputs, outputs)                                         \
    "{\"name\": \"" name "\", \"kind\": \"compute\", \"inputs\": [" inputs    \
    "], \"outputs\": [" outputs "], \"runtime_ns\": 1}"
#define OUT(name, rest) "{\"name\": \"" name "\", \"size\": 16" rest "}"
#define FROM(...) ", \"from\": [" __VA_ARGS__ "]"
#define COLL(name, inputs, after)                                              \
    "{\"name\": \"" name "\", \"kind\": \"collective\", \"op\": "             \
    "\"all_reduce\", \"group\": \"g\", \"inputs\": [" inputs "]" after        \
    ", \"outputs\": [" OUT(name "_o", "") "], \"runtime_ns\": 100}"
#define WAIT(name, coll)                                                       \
    "{\"name\": \"" name "\", \"kind\": \"wait\", \"inputs\": [\"" coll       \
    "_o\"], \"outputs\": [{\"name\": \"" name "_o\", \"alias_of\": \"" coll   \
    "_o\"}]}"

/* The order `passes` makes of the graph (verify on: every pass and memory
 * move checked), as "a b c". */
static void expect_order(const char *json, const char *passes,
                         const char *want)
{
    commsched_graph *g = tu_graph_from_json(json);
    commsched_optimize_options *o = NULL;
    commsched_result *r = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_optimize_options_create(&o, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_optimize_options_set(o, "passes", passes,
                                                    &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_optimize_options_set(o, "verify", "true",
                                                    &err),
                     COMMSCHED_OK);
    if (commsched_optimize(g, o, &r, &err) != COMMSCHED_OK)
        fail_msg("%s: %s", passes, err.text);
    char got[256];
    size_t len = 0;
    got[0] = '\0';
    for (uint32_t i = 0; i < commsched_result_node_count(r); i++) {
        int w = snprintf(got + len, sizeof got - len, "%s%s", i ? " " : "",
                         commsched_result_node_name(r, i));
        assert_true(w > 0 && (size_t)w < sizeof got - len);
        len += (size_t)w;
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  got:  %s\n  want: %s", passes, got, want);
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(o);
    commsched_graph_destroy(g);
}

/* f fuses a kernel reading a into f_a and one reading p's output into f_b;
 * the collective c reads f_a only. Inductor's ancestors give c the fused
 * node f but not p, which feeds f_b alone. File order q p f c w u; c is
 * collective 0 and f's score0 is 0 either way. With the "from", p's score0
 * is infinity: p ties with q, q comes first, and the order stays
 * q p f c w u. Without it (f's outputs from all its inputs) p reaches c
 * through f, scores 0 and goes first: p f c q w u. */
#define FUSED(fa, fb)                                                          \
    HDR COMPUTE("q", "\"a\"", OUT("q_o", "")) ","                              \
        COMPUTE("p", "\"a\"", OUT("p_o", "")) ","                              \
        COMPUTE("f", "\"a\", \"p_o\"", OUT("f_a", fa) ", " OUT("f_b", fb)) "," \
        COLL("c", "\"f_a\"", "") "," WAIT("w", "c") ","                        \
        COMPUTE("u", "\"q_o\", \"f_b\", \"w_o\"", OUT("u_o", "")) "]}"

static void test_raise_comms_through_fused_kernel(void **state)
{
    (void)state;
    static const struct {
        const char *graph, *passes, *order;
    } cases[] = {
        {FUSED(FROM("\"a\""), FROM("\"p_o\"")), "raise_comms",
         "q p f c w u"},
        {FUSED("", ""), "raise_comms", "p f c q w u"},
        /* f_a made from p_o after all: the path is back */
        {FUSED(FROM("\"p_o\""), FROM()), "raise_comms", "p f c q w u"},
        /* an output without a "from" is made from every input */
        {FUSED("", FROM()), "raise_comms", "p f c q w u"},
        /* reorder_compute_for_overlap ranks by the same score0; after c
         * the ready compute nodes fill its 100 ns: none with the "from"
         * (q went first), q without it */
        {FUSED(FROM("\"a\""), FROM("\"p_o\"")),
         "reorder_compute_for_overlap", "q p f c w u"},
        {FUSED("", ""), "reorder_compute_for_overlap", "p f c q w u"},
        /* sink_waits does not read score0 */
        {FUSED(FROM("\"a\""), FROM("\"p_o\"")), "sink_waits",
         "q p f c w u"},
        {FUSED("", ""), "sink_waits", "q p f c w u"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        expect_order(cases[k].graph, cases[k].passes, cases[k].order);
}

/* Control edges stay whole-node: c reads a, not f's outputs, but lists f
 * in `after`, so everything f reads reaches c, p included, whatever f's
 * outputs are made from: p f c q. */
static void test_raise_comms_after_is_whole_node(void **state)
{
    (void)state;
    expect_order(HDR COMPUTE("q", "\"a\"", OUT("q_o", "")) ","
                     COMPUTE("p", "\"a\"", OUT("p_o", "")) ","
                     COMPUTE("f", "\"a\", \"p_o\"",
                             OUT("f_a", FROM("\"a\""))) ","
                     COLL("c", "\"a\"", ", \"after\": [\"f\"]") ","
                     WAIT("w", "c") ","
                     COMPUTE("u", "\"q_o\", \"f_a\", \"w_o\"",
                             OUT("u_o", "")) "]}",
                 "raise_comms", "p f c q w u");
}

/* Over two fused kernels: g makes g_1 from f_b, which f makes from p_o.
 * With c reading g_1, p reaches c through both (p f g c q w u); with c
 * reading g_2 (made from a), neither p nor f does (f's outputs feed only
 * u and g_1): q p f g c w u. */
#define TWO(c_reads)                                                           \
    HDR COMPUTE("q", "\"a\"", OUT("q_o", "")) ","                              \
        COMPUTE("p", "\"a\"", OUT("p_o", "")) ","                              \
        COMPUTE("f", "\"a\", \"p_o\"",                                         \
                OUT("f_a", FROM("\"a\"")) ", " OUT("f_b", FROM("\"p_o\""))) \
        ","                                                                    \
        COMPUTE("g", "\"f_b\", \"a\"",                                         \
                OUT("g_1", FROM("\"f_b\"")) ", " OUT("g_2", FROM("\"a\"")))  \
        "," COLL("c", c_reads, "") "," WAIT("w", "c") ","                      \
        COMPUTE("u", "\"q_o\", \"f_a\", \"g_1\", \"g_2\", \"w_o\"",            \
                OUT("u_o", "")) "]}"

static void test_raise_comms_through_two_fused_kernels(void **state)
{
    (void)state;
    expect_order(TWO("\"g_1\""), "raise_comms", "p f g c q w u");
    expect_order(TWO("\"g_2\""), "raise_comms", "q p f g c w u");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raise_comms_through_fused_kernel),
        cmocka_unit_test(test_raise_comms_after_is_whole_node),
        cmocka_unit_test(test_raise_comms_through_two_fused_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
