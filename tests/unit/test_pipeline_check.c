/* commsched unit tests — the invariant check between passes blames the
 * right party (issue 20, part 4): a pass that breaks the order is an
 * internal error (EINTERNAL) naming that pass, whichever pipeline it runs
 * in and whichever entry point ran it; an order that was already broken
 * when the caller handed it over is the caller's error (EORDER) and names
 * no pass.
 *
 * The broken pass is real code from the library with a fault injected at
 * link time: this executable is linked with --wrap=cs_pass_sink_waits
 * (tests/unit/CMakeLists.txt), so the pipeline's table entry for
 * sink_waits calls __wrap_cs_pass_sink_waits below, which runs the real
 * pass and then, when a test asks for it, moves one node before one of its
 * dependencies. The library carries no test hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/commsched.h"
#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "passes_internal.h"
#include "testutil.h"

/* What the wrapped pass does after the real one: nothing (move NULL), or
 * move the node named `move` to run just after the node named `after`. */
typedef struct fault {
    const char *move, *after;
    unsigned calls; /* how often the wrapped pass ran */
} fault;

static fault the_fault;

commsched_status __real_cs_pass_sink_waits(cs_pass_ctx *ctx);
commsched_status __wrap_cs_pass_sink_waits(cs_pass_ctx *ctx);

commsched_status __wrap_cs_pass_sink_waits(cs_pass_ctx *ctx)
{
    the_fault.calls++;
    commsched_status st = __real_cs_pass_sink_waits(ctx);
    if (st != COMMSCHED_OK || !the_fault.move)
        return st;
    uint32_t v = tu_node(ctx->g, the_fault.move);
    commsched_schedule_unlink(ctx->s, v);
    commsched_schedule_insert_after(ctx->s, v, tu_node(ctx->g, the_fault.after));
    return COMMSCHED_OK;
}

#define HDR                                                                    \
    "{\"format\": \"commsched-graph\", \"version\": 1, "                       \
    "\"groups\": [{\"name\": \"dp\", \"size\": 8}], "                          \
    "\"inputs\": [{\"name\": \"x\", \"size\": 64}], "

/* p produces g; r1 reads g, then ar all-reduces g in place (a
 * write-after-read edge r1 -> ar), its wait w hands the result on; two
 * independent compute nodes give the passes something to move. */
static const char *const GRAPH =
    HDR "\"nodes\": ["
        "{\"name\": \"p\", \"kind\": \"compute\", \"inputs\": [\"x\"], "
        " \"outputs\": [{\"name\": \"g\", \"size\": 64}]},"
        "{\"name\": \"r1\", \"kind\": \"compute\", \"inputs\": [\"g\"], "
        " \"outputs\": [{\"name\": \"n1\", \"size\": 4}]},"
        "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\", "
        " \"group\": \"dp\", \"inputs\": [\"g\"], "
        " \"outputs\": [{\"name\": \"ar_out\", \"alias_of\": \"g\"}]},"
        "{\"name\": \"c1\", \"kind\": \"compute\", "
        " \"outputs\": [{\"name\": \"o1\", \"size\": 4}]},"
        "{\"name\": \"c2\", \"kind\": \"compute\", \"inputs\": [\"o1\"], "
        " \"outputs\": [{\"name\": \"o2\", \"size\": 4}]},"
        "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"ar_out\"], "
        " \"outputs\": [{\"name\": \"y\", \"alias_of\": \"ar_out\"}]},"
        "{\"name\": \"use\", \"kind\": \"compute\", \"inputs\": [\"y\", \"o2\"], "
        " \"outputs\": [{\"name\": \"z\", \"size\": 4}]}]}";

typedef struct fixture {
    commsched_graph *g;
    commsched_schedule *s;
    double rt[7];
} fixture;

static void fixture_open(fixture *f)
{
    f->g = tu_graph_from_json(GRAPH);
    commsched_error err = {0};
    if (commsched_schedule_create(f->g, NULL, &f->s, &err) != COMMSCHED_OK)
        fail_msg("schedule: %s", err.text);
    for (size_t i = 0; i < 7; i++)
        f->rt[i] = 1000.0;
    the_fault.move = NULL;
    the_fault.calls = 0;
}

static void fixture_close(fixture *f)
{
    commsched_schedule_destroy(f->s);
    commsched_graph_destroy(f->g);
    the_fault.move = NULL;
}

/* The error names `pass` as the one that broke the order, and no other. */
static void assert_blames(const commsched_error *err, const char *pass,
                          const char *node)
{
    assert_int_equal(err->status, COMMSCHED_EINTERNAL);
    char want[128];
    snprintf(want, sizeof want, "pass %s broke the order", pass);
    if (!strstr(err->text, want))
        fail_msg("error does not name %s: %s", pass, err->text);
    if (!strstr(err->text, node))
        fail_msg("error does not name %s: %s", node, err->text);
    for (size_t i = 0; i < commsched_pass_count(); i++) {
        const char *other = commsched_pass_name(i);
        snprintf(want, sizeof want, "pass %s ", other);
        if (strcmp(other, pass) != 0 && strstr(err->text, want))
            fail_msg("error blames %s too: %s", other, err->text);
    }
}

/* Without the fault the wrapped pass is the real one: the pipeline runs
 * clean (so the failures below come from the fault, not the graph). */
static void test_pipeline_check_clean_without_fault(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    commsched_run *run = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_pipeline_run(f.g, f.s, f.rt,
                                            "raise_comms,sink_waits", NULL,
                                            COMMSCHED_PIPELINE_VERIFY, &run,
                                            &err),
                     COMMSCHED_OK);
    assert_int_equal(the_fault.calls, 1);
    commsched_run_destroy(run);
    fixture_close(&f);
}

/* A data edge broken by the pass (the collective after its wait), the pass
 * alone and in the middle of a pipeline: EINTERNAL naming sink_waits, never
 * the passes around it, never EORDER. */
static void test_pipeline_check_names_the_breaking_pass(void **state)
{
    (void)state;
    static const char *const pipelines[] = {
        "sink_waits",
        "raise_comms,sink_waits,reorder_compute_for_overlap",
        "decide_global_ordering_of_comms,sink_waits,overlap",
    };
    for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++) {
        fixture f;
        fixture_open(&f);
        the_fault.move = "ar"; /* after its own wait */
        the_fault.after = "w";
        commsched_run *run = NULL;
        commsched_error err = {0};
        assert_int_equal(commsched_pipeline_run(f.g, f.s, f.rt, pipelines[i],
                                                NULL, COMMSCHED_PIPELINE_VERIFY,
                                                &run, &err),
                         COMMSCHED_EINTERNAL);
        assert_null(run);
        assert_blames(&err, "sink_waits", "\"w\"");
        fixture_close(&f);
    }
}

/* A write-after-read edge (derived at load, not in the file): the reader r1
 * moved after the in-place all-reduce is the pass's fault as well. */
static void test_pipeline_check_names_the_pass_for_war_edge(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    the_fault.move = "r1"; /* after the write it must precede */
    the_fault.after = "ar";
    commsched_run *run = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_pipeline_run(f.g, f.s, f.rt, "sink_waits", NULL,
                                            COMMSCHED_PIPELINE_VERIFY, &run,
                                            &err),
                     COMMSCHED_EINTERNAL);
    assert_blames(&err, "sink_waits", "\"r1\"");
    fixture_close(&f);
}

/* Through the one call users make (commsched_optimize, as the CLI's
 * optimize does through commsched_pipeline_apply), with a rewriting pass
 * before the faulty one: the error still names sink_waits. */
static void test_pipeline_check_names_the_pass_through_optimize(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    the_fault.move = "ar";
    the_fault.after = "w";
    commsched_optimize_options *o = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_optimize_options_create(&o, &err), COMMSCHED_OK);
    assert_int_equal(commsched_optimize_options_set(
                         o, "passes", "bucket_all_reduce,sink_waits", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_optimize_options_set(o, "verify", "true", &err),
                     COMMSCHED_OK);
    commsched_result *r = NULL;
    assert_int_equal(commsched_optimize(f.g, o, &r, &err),
                     COMMSCHED_EINTERNAL);
    assert_null(r);
    assert_int_equal(the_fault.calls, 1);
    assert_blames(&err, "sink_waits", "\"w\"");
    commsched_optimize_options_destroy(o);
    fixture_close(&f);
}

/* An order that is broken before any pass runs is the caller's: EORDER,
 * naming the nodes and no pass, and no pass runs on it. */
static void test_pipeline_check_broken_input_is_callers(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    uint32_t w = tu_node(f.g, "w"), ar = tu_node(f.g, "ar");
    commsched_schedule_unlink(f.s, w);
    commsched_schedule_insert_before(f.s, w, ar);
    commsched_run *run = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_pipeline_run(f.g, f.s, f.rt, "sink_waits", NULL,
                                            COMMSCHED_PIPELINE_VERIFY, &run,
                                            &err),
                     COMMSCHED_EORDER);
    assert_null(run);
    assert_int_equal(the_fault.calls, 0);
    assert_null(strstr(err.text, "broke the order"));
    assert_null(strstr(err.text, "sink_waits"));
    assert_non_null(strstr(err.text, "before any pass ran"));
    assert_non_null(strstr(err.text, "\"w\""));
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_check_clean_without_fault),
        cmocka_unit_test(test_pipeline_check_names_the_breaking_pass),
        cmocka_unit_test(test_pipeline_check_names_the_pass_for_war_edge),
        cmocka_unit_test(test_pipeline_check_names_the_pass_through_optimize),
        cmocka_unit_test(test_pipeline_check_broken_input_is_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
