/* commsched tests — the HTML report's C API (report.h): the page and the
 * SVG for a small graph with a sync collective on a second group and names
 * that need escaping; measured runs from JSON text and their located
 * errors; the measured run of another graph; write failures. The browser
 * and the CLI are tested by the scripts next to this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/report.h"
#include "commsched/simulate.h"

/* c"q</script> (all_gather on dp) overlaps a; sy is a sync all_to_all on
 * tp; the wait w stalls; b reads both. s holds 8 bytes: c"q gathers them
 * into 64 on dp's 8 ranks. */
static const char *graph =
    "{\"format\": \"commsched-graph\", \"version\": 1, \"name\": "
    "\"rep//</title>\","
    "\"groups\": [{\"name\": \"dp\", \"size\": 8}, {\"name\": \"tp\", "
    "\"size\": 4}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 16, \"freeable\": true},"
    " {\"name\": \"s\", \"size\": 8}],"
    "\"outputs\": [\"out\"], \"nodes\": ["
    "{\"name\": \"c\\\"q</script>\", \"kind\": \"collective\", \"op\": "
    "\"all_gather\", \"group\": \"dp\", \"inputs\": [\"s\"],"
    " \"outputs\": [{\"name\": \"c_out\", \"size\": 64}], \"runtime_ns\": 30},"
    "{\"name\": \"a\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"a_out\", \"size\": 32}], \"runtime_ns\": 10},"
    "{\"name\": \"sy\", \"kind\": \"collective\", \"op\": \"all_to_all\","
    " \"group\": \"tp\", \"async\": false, \"inputs\": [\"a_out\"],"
    " \"outputs\": [{\"name\": \"sy_out\", \"size\": 32}], \"runtime_ns\": 5},"
    "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"c_out\"],"
    " \"outputs\": [{\"name\": \"wv\", \"alias_of\": \"c_out\"}]},"
    "{\"name\": \"b\", \"kind\": \"compute\", \"inputs\": [\"sy_out\", \"wv\"],"
    " \"outputs\": [{\"name\": \"out\", \"size\": 8}], \"runtime_ns\": 20}"
    "]}";

typedef struct fix {
    commsched_graph *g;
    commsched_sim *sim;
    double rt[5];
} fix;

static int setup(void **state)
{
    fix *f = calloc(1, sizeof *f);
    commsched_error err = {0};
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    assert_int_equal(commsched_graph_load_string(graph, 0, &f->g, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_cost_graph(f->g, &o, f->rt, NULL, &err),
                     COMMSCHED_OK);
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_MEMORY_CURVE;
    assert_int_equal(commsched_sim_create(f->g, &f->sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(f->sim, NULL, f->rt, &so, &err),
                     COMMSCHED_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix *f = *state;
    commsched_sim_destroy(f->sim);
    commsched_graph_destroy(f->g);
    free(f);
    return 0;
}

/* The page (or SVG) in a malloc'ed string. */
static char *render(const commsched_sim *sim, const commsched_html_options *o,
                    int svg, commsched_status want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    commsched_error err = {0};
    assert_non_null(m);
    commsched_status st = svg ? commsched_report_svg(m, sim, o, &err)
                              : commsched_report_html(m, sim, o, &err);
    fclose(m);
    assert_int_equal(st, want);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_report_html_page(void **state)
{
    fix *f = *state;
    char *page = render(f->sim, NULL, 0, COMMSCHED_OK);
    assert_int_equal(strncmp(page, "<!DOCTYPE html>", 15), 0);
    /* One bar per node. The sync collective (node 2) also has its
     * exposed tail on the comm lane and its stall on the compute lane:
     * overlays that hover like the bar, not second bars. */
    assert_int_equal(count(page, "class=\"bar"), 5);
    assert_int_equal(count(page, "data-run=\"after\" data-node=\"2\""), 3);
    /* Escaping: no raw name, no "//", the script never closed early. */
    assert_null(strstr(page, "c\"q</script>"));
    assert_null(strstr(page, "//"));
    assert_null(strstr(page, "http"));
    assert_non_null(strstr(page, "rep&#47;&#47;&lt;&#47;title&gt;"));
    assert_non_null(strstr(page, "\"c\\\"q\\u003c\\/script\\u003e\""));
    assert_int_equal(count(page, "<script"), 2);
    assert_int_equal(count(page, "</script>"), 2);
    /* The summary carries machine-readable figures; no before, no change
     * column. */
    assert_non_null(
        strstr(page, "data-run=\"after\" data-key=\"makespan_ns\""));
    assert_null(strstr(page, "data-run=\"before\""));
    /* Counts read as English: 2 collectives, 1 wait. */
    assert_non_null(strstr(page, "5 nodes \xC2\xB7 2 collectives \xC2\xB7 1 wait \xC2\xB7"));
    assert_null(strstr(page, "1 waits"));
    /* The memory chart and its peak. */
    assert_non_null(strstr(page, "id=\"cs-mem\""));
    assert_non_null(strstr(page, "class=\"mdot after\""));
    /* No budget was given. */
    assert_null(strstr(page, "class=\"budget\""));
    free(page);
}

static void test_report_html_before_budget_stats(void **state)
{
    fix *f = *state;
    commsched_html_options o;
    commsched_html_options_init(&o);
    const commsched_html_pass_row rows[] = {
        {"reorder_communication_preserving_peak_memory", "c\"q</script>",
         "peak memory\nsecond line", 3, 30, 10},
        {"sink_waits_iterative", "w", NULL, 2, 30, 0},
        {"reorder_communication_preserving_peak_memory", "unknown", "x", 1, 0,
         0},
        {"reorder_communication_preserving_peak_memory", "sy",
         "peak memory new:1048576 vs base:524288", 1, 5, 5},
        {"overlap", "sy", "none", 0, 5, 5}};
    o.before = f->sim;
    o.memory_budget = 1000;
    o.memory_budget_note = "a note";
    o.pass_rows = rows;
    o.n_pass_rows = sizeof rows / sizeof rows[0];
    o.title = "T<1>";
    char *page = render(f->sim, &o, 0, COMMSCHED_OK);
    assert_int_equal(count(page, "class=\"bar"), 10);
    assert_non_null(strstr(page, "<title>T&lt;1&gt;</title>"));
    assert_non_null(strstr(page, "class=\"budget\""));
    assert_non_null(strstr(page, "data-value=\"1000\""));
    assert_non_null(strstr(page, "Budget line: a note."));
    /* The limiting factor's first line, the moves, and the wait's. */
    assert_non_null(strstr(page, ">peak memory</td>"));
    /* A factor said in words, never "None": the wait's sink pass stopped
     * at nothing (and the wait stalls), the sync collective's last pass
     * (overlap) at nothing, and it is hidden by nothing: it blocks. Each
     * pass's own text stays in the title. */
    assert_null(strstr(page, "None"));
    assert_non_null(strstr(page, ">nothing: the wait reached the end of the "
                                 "order</td>"));
    assert_non_null(strstr(page, ">nothing stopped the pass</td>"));
    assert_non_null(strstr(page, "1 move, memory budget: the peak would reach "
                                 "1.00 MiB (base 512.00 KiB) (the pass says: "
                                 "peak memory new:1048576 vs base:524288)"));
    assert_non_null(strstr(page, "overlap: 0 moves, nothing stopped the pass"));
    assert_non_null(strstr(page, "<td data-v=\"3\">3</td>"));
    assert_non_null(strstr(page, "<td data-v=\"2\">2</td>"));
    assert_non_null(strstr(page, "<th>change</th>"));
    free(page);
}

/* A graph whose buffers have no size (a Chakra trace without
 * tensor_size / comm_size imports so): the memory panel says why it draws
 * nothing instead of an empty chart with NaN coordinates. */
static void test_report_html_no_sizes(void **state)
{
    (void)state;
    static const char *sizeless =
        "{\"format\": \"commsched-graph\", \"version\": 1,"
        "\"groups\": [{\"name\": \"dp\", \"size\": 8}], \"nodes\": ["
        "{\"name\": \"c\", \"kind\": \"collective\", \"op\": "
        "\"all_reduce\", \"group\": \"dp\", \"outputs\": [{\"name\": "
        "\"c_out\", \"size\": 0}], \"runtime_ns\": 30},"
        "{\"name\": \"a\", \"kind\": \"compute\", \"outputs\": "
        "[{\"name\": \"a_out\", \"size\": 0}], \"runtime_ns\": 10},"
        "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"c_out\"],"
        " \"outputs\": [{\"name\": \"wv\", \"alias_of\": \"c_out\"}]}]}";
    commsched_graph *g = NULL;
    commsched_sim *sim = NULL;
    commsched_error err = {0};
    double rt[3] = {30, 10, 0};
    assert_int_equal(commsched_graph_load_string(sizeless, 0, &g, &err),
                     COMMSCHED_OK);
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_MEMORY_CURVE;
    assert_int_equal(commsched_sim_create(g, &sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(sim, NULL, rt, &so, &err), COMMSCHED_OK);
    commsched_html_options o;
    commsched_html_options_init(&o);
    o.memory_budget = 0; /* a budget of 0 B draws nothing either */
    char *page = render(sim, &o, 0, COMMSCHED_OK);
    assert_null(strstr(page, "nan"));
    assert_null(strstr(page, "id=\"cs-mem\""));
    assert_non_null(strstr(page, "id=\"cs-mem-none\">No memory to draw: the "
                                 "peak is 0 B"));
    assert_non_null(strstr(page, "\"mem\":null"));
    assert_non_null(strstr(page, "3 nodes \xC2\xB7 1 collective \xC2\xB7 1 wait \xC2\xB7"));
    free(page);
    commsched_sim_destroy(sim);
    commsched_graph_destroy(g);
}

static void test_report_html_svg(void **state)
{
    fix *f = *state;
    char *svg = render(f->sim, NULL, 1, COMMSCHED_OK);
    assert_int_equal(strncmp(svg, "<?xml", 5), 0);
    assert_int_equal(count(svg, "http://"), 1); /* the namespace only */
    assert_int_equal(count(svg, "//"), 1);
    assert_int_equal(count(svg, "class=\"bar"), 5);
    /* Bars, and the sync collective's stall on the compute lane. */
    assert_int_equal(count(svg, "<title>"), 6);
    assert_null(strstr(svg, "<script"));
    free(svg);
}

static void test_report_html_measured(void **state)
{
    fix *f = *state;
    commsched_measured_run *m = NULL;
    commsched_error err = {0};
    const char *run =
        "{\"format\": \"commsched-measured\", \"version\": 1, \"runtime\": "
        "\"mpi\", \"memory\": {\"peak\": 4096},"
        " \"nodes\": [{\"name\": \"a\", \"start_ns\": 0, \"end_ns\": 12},"
        "  {\"name\": \"c\\\"q</script>\", \"start_ns\": 1, \"end_ns\": 40,"
        "   \"exposed_ns\": 7}, {\"name\": \"w\", \"start_ns\": 12,"
        "   \"end_ns\": 40}],"
        " \"ranks\": [{\"rank\": 3, \"totals\": {\"makespan_ns\": 41},"
        "   \"peak_memory\": 100}, {\"nodes\": [{\"name\": \"b\","
        "   \"start_ns\": 0, \"end_ns\": 50}]}]}";
    assert_int_equal(commsched_measured_run_load_string(run, f->g, &m, &err),
                     COMMSCHED_OK);
    assert_int_equal(m->n_timed, 3);
    assert_true(m->makespan_ns == 40); /* derived: the latest end */
    assert_true(m->comm_ns == 39);
    assert_true(m->exposed_ns == 7);
    assert_true(m->peak_memory == 4096);
    assert_string_equal(m->runtime, "mpi");
    assert_string_equal(m->timeline_from, "run");
    assert_int_equal(m->n_ranks, 2);
    assert_true(m->ranks[0].rank == 3 && m->ranks[0].makespan_ns == 41);
    assert_true(m->ranks[0].peak_memory == 100);
    assert_true(m->ranks[1].rank == 1 && m->ranks[1].makespan_ns == 50);
    assert_true(isnan(m->start_ns[4])); /* b: only rank 1 timed it */

    commsched_html_options o;
    commsched_html_options_init(&o);
    o.measured = m;
    char *page = render(f->sim, &o, 0, COMMSCHED_OK);
    assert_non_null(strstr(page, "id=\"cs-measured\""));
    assert_non_null(strstr(page, "id=\"cs-ranks\""));
    /* a; c"q with its exposed tail; w with its stall (a measured wait
     * without exposed_ns stalls for its whole span). */
    assert_int_equal(count(page, "data-run=\"measured\" data-node="), 5);
    free(page);
    commsched_measured_run_destroy(m);

    /* Only per-rank nodes: the first rank with nodes draws the timeline. */
    assert_int_equal(
        commsched_measured_run_load_string(
            "{\"format\": \"commsched-measured\", \"ranks\": [{\"rank\": 0},"
            " {\"rank\": 1, \"nodes\": [{\"name\": \"a\", \"start_ns\": 5,"
            " \"end_ns\": 9}]}]}",
            f->g, &m, &err),
        COMMSCHED_OK);
    assert_string_equal(m->timeline_from, "rank 1");
    assert_true(m->makespan_ns == 9);
    commsched_measured_run_destroy(m);

    /* A simulation report is a measured run ("nodes" is a count there). */
    char *sim_json = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&sim_json, &len);
    assert_int_equal(commsched_report_json(mf, f->sim, NULL, &err),
                     COMMSCHED_OK);
    fclose(mf);
    assert_int_equal(commsched_measured_run_load_string(sim_json, f->g, &m, &err),
                     COMMSCHED_OK);
    assert_int_equal(m->n_timed, 2); /* the two collectives */
    assert_true(m->makespan_ns ==
                commsched_sim_get_totals(f->sim)->makespan_ns);
    commsched_measured_run_destroy(m);
    free(sim_json);
}

static void expect_error(const fix *f, const char *text, commsched_status st,
                         const char *path, int line)
{
    commsched_measured_run *m = (commsched_measured_run *)1;
    commsched_error err = {0};
    assert_int_equal(commsched_measured_run_load_string(text, f->g, &m, &err), st);
    assert_null(m);
    if (path)
        assert_string_equal(err.path, path);
    if (line)
        assert_int_equal(err.line, line);
}

static void test_report_html_measured_errors(void **state)
{
    fix *f = *state;
    expect_error(f, "{\"format\": \"commsched-measured\",\n\"nodes\": [}",
                 COMMSCHED_EPARSE, NULL, 2);
    expect_error(f, "[]", COMMSCHED_ESCHEMA, NULL, 0);
    expect_error(f, "{\"format\": \"x\"}", COMMSCHED_ESCHEMA, "format", 0);
    expect_error(f, "{\"format\": \"commsched-measured\", \"version\": 2}",
                 COMMSCHED_ESCHEMA, "version", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"nodes\": [{\"name\": "
                 "\"a\", \"start_ns\": 0, \"end_ns\": 1}, {\"name\": \"zz\"}]}",
                 COMMSCHED_ESCHEMA, "nodes[1].name", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"nodes\": [{\"name\": "
                 "\"a\", \"start_ns\": 5, \"end_ns\": 1}]}",
                 COMMSCHED_ESCHEMA, "nodes[0].end_ns", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"nodes\": [{\"name\": "
                 "\"a\", \"start_ns\": -1, \"end_ns\": 1}]}",
                 COMMSCHED_ESCHEMA, "nodes[0].start_ns", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"nodes\": [{\"name\": "
                 "\"a\", \"start_ns\": 0, \"end_ns\": 1}, {\"name\": \"a\", "
                 "\"start_ns\": 0, \"end_ns\": 1}]}",
                 COMMSCHED_ESCHEMA, "nodes[1].name", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"totals\": "
                 "{\"makespan_ns\": \"1\"}}",
                 COMMSCHED_ESCHEMA, "totals.makespan_ns", 0);
    expect_error(f,
                 "{\"format\": \"commsched-measured\", \"ranks\": [{\"rank\": "
                 "0, \"collectives\": [{\"name\": \"a\"}]}]}",
                 COMMSCHED_ESCHEMA, "ranks[0].collectives[0]", 0);
}

static void test_report_html_wrong_graph(void **state)
{
    fix *f = *state;
    commsched_graph *other = NULL;
    commsched_measured_run *m = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_graph_load_string(graph, 0, &other, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_measured_run_create(other, &m, &err), COMMSCHED_OK);
    commsched_html_options o;
    commsched_html_options_init(&o);
    o.measured = m;
    free(render(f->sim, &o, 0, COMMSCHED_EINVAL));
    commsched_measured_run_destroy(m);
    commsched_graph_destroy(other);
    commsched_measured_run_destroy(NULL);
}

static void test_report_html_write_error(void **state)
{
    fix *f = *state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    commsched_error err = {0};
    assert_int_equal(commsched_report_html(full, f->sim, NULL, &err),
                     COMMSCHED_EIO);
    assert_int_equal(err.status, COMMSCHED_EIO);
    fclose(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report_html_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_html_before_budget_stats,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_html_svg, setup, teardown),
        cmocka_unit_test(test_report_html_no_sizes),
        cmocka_unit_test_setup_teardown(test_report_html_measured, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_report_html_measured_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_report_html_wrong_graph, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_report_html_write_error, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
