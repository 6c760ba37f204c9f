/* commsched unit tests — the reports (docs/REPORTS.md): the table's rows
 * and totals, the JSON document's keys and figures, and the Chrome trace's
 * structure as Perfetto / chrome://tracing read it: complete events with
 * non-negative durations on named threads, a memory counter, and flow
 * start/finish pairs that each land inside a slice of the right thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/report.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"
#include "graph_internal.h"
#include "testutil.h"
#include "util.h"

/* The "exposed collective" graph of test_simulate.c plus a sync
 * collective on a second group, and a name that needs JSON escaping. s
 * holds 8 bytes: c"q gathers them into 64 on dp's 8 ranks. */
static const char *graph =
    "{\"format\": \"commsched-graph\", \"version\": 1, \"name\": \"rep\","
    "\"groups\": [{\"name\": \"dp\", \"size\": 8}, {\"name\": \"tp\", "
    "\"size\": 4}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 16, \"freeable\": true},"
    " {\"name\": \"s\", \"size\": 8}],"
    "\"outputs\": [\"out\"], \"nodes\": ["
    "{\"name\": \"c\\\"q\", \"kind\": \"collective\", \"op\": \"all_gather\","
    " \"group\": \"dp\", \"inputs\": [\"s\"],"
    " \"outputs\": [{\"name\": \"c_out\", \"size\": 64}], \"runtime_ns\": 30},"
    "{\"name\": \"a\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"a_out\", \"size\": 32}], \"runtime_ns\": 10},"
    "{\"name\": \"sy\", \"kind\": \"collective\", \"op\": \"all_to_all\","
    " \"group\": \"tp\", \"async\": false, \"inputs\": [\"a_out\"],"
    " \"outputs\": [{\"name\": \"sy_out\", \"size\": 32}]},"
    "{\"name\": \"w\", \"kind\": \"wait\", \"inputs\": [\"c_out\"],"
    " \"outputs\": [{\"name\": \"wv\", \"alias_of\": \"c_out\"}]},"
    "{\"name\": \"b\", \"kind\": \"compute\", \"inputs\": [\"sy_out\", \"wv\"],"
    " \"outputs\": [{\"name\": \"out\", \"size\": 8}], \"flops\": 1e9}"
    "]}";

typedef struct fix {
    commsched_graph *g;
    commsched_sim *sim;
    double *rt;
    commsched_cost_source *src;
    commsched_report_context ctx;
    commsched_cost_options o;
} fix;

static void setup_fix(fix *f, const char *json, unsigned flags)
{
    commsched_error err = {0};
    memset(f, 0, sizeof *f);
    commsched_cost_options_init(&f->o);
    f->g = tu_graph_from_json(json);
    uint32_t n = commsched_graph_node_count(f->g);
    f->rt = calloc(n, sizeof *f->rt);
    f->src = calloc(n, sizeof *f->src);
    assert_non_null(f->rt);
    assert_non_null(f->src);
    assert_int_equal(commsched_cost_graph(f->g, &f->o, f->rt, f->src, &err),
                     COMMSCHED_OK);
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= flags;
    assert_int_equal(commsched_sim_create(f->g, &f->sim, &err), COMMSCHED_OK);
    assert_int_equal(commsched_sim_run(f->sim, NULL, f->rt, &so, &err),
                     COMMSCHED_OK);
    f->ctx.device = "h100";
    f->ctx.cost_model = "nccl";
    f->ctx.sources = f->src;
}

static void teardown_fix(fix *f)
{
    commsched_sim_destroy(f->sim);
    commsched_graph_destroy(f->g);
    free(f->rt);
    free(f->src);
}

typedef commsched_status (*writer)(FILE *, const commsched_sim *,
                                   const commsched_report_context *,
                                   commsched_error *);

/* The whole content of a stream written so far, NUL-terminated (caller
 * frees). A temporary file rather than open_memstream: GCC's
 * -Wdangling-pointer mistakes memstream's buffer for a local. */
static char *slurp(FILE *m)
{
    long len = ftell(m);
    assert_true(len >= 0);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    rewind(m);
    assert_int_equal(fread(buf, 1, (size_t)len, m), (size_t)len);
    buf[len] = '\0';
    fclose(m);
    return buf;
}

/* Runs a writer into a string (caller frees). */
static char *capture(writer w, const fix *f)
{
    FILE *m = tmpfile();
    assert_non_null(m);
    commsched_error err = {0};
    commsched_status st = w(m, f->sim, &f->ctx, &err);
    if (st != COMMSCHED_OK)
        fail_msg("writer failed: %s", err.text);
    return slurp(m);
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        fail_msg("not JSON (%d:%d %s):\n%s", je.line, je.column, je.text,
                 text);
    return j;
}

static void test_report_table(void **state)
{
    (void)state;
    fix f;
    setup_fix(&f, graph, 0);
    char *t = capture(commsched_report_table, &f);
    /* Header, one row per collective in issue order, the totals. */
    assert_non_null(strstr(t, "rep: 5 nodes, 2 collectives, 1 wait;"));
    assert_non_null(strstr(t, "device h100, nccl model"));
    const char *row_c = strstr(t, "c\"q ");
    const char *row_sy = strstr(t, "sy ");
    assert_non_null(row_c);
    assert_non_null(row_sy);
    assert_true(row_c < row_sy);
    assert_non_null(strstr(row_sy, "all_to_all*"));
    assert_non_null(strstr(row_c, "30 ns file"));
    assert_non_null(strstr(t, "makespan"));
    assert_non_null(strstr(t, "lower bound"));
    assert_non_null(strstr(t, "efficiency"));
    assert_non_null(strstr(t, "peak memory"));
    assert_non_null(
        strstr(t, "2 from the file, 2 from the model, 1 with nothing"));
    /* Every line fits 120 columns. */
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 120)
            fail_msg("line longer than 120 columns: %.*s", (int)len, p);
        p += len + (nl != NULL);
    }
    free(t);
    /* Totals only. */
    f.ctx.totals_only = 1;
    t = capture(commsched_report_table, &f);
    assert_null(strstr(t, "c\"q"));
    assert_non_null(strstr(t, "makespan"));
    free(t);
    f.ctx.totals_only = 0;
    f.ctx.max_rows = 1;
    t = capture(commsched_report_table, &f);
    assert_non_null(strstr(t, "... 1 more collective\n"));
    free(t);
    teardown_fix(&f);
}

static void test_report_json(void **state)
{
    (void)state;
    fix f;
    setup_fix(&f, graph, 0);
    char *text = capture(commsched_report_json, &f);
    json_t *j = parse(text);
    const commsched_sim_totals *t = commsched_sim_get_totals(f.sim);
    assert_string_equal(json_string_value(json_object_get(j, "format")),
                        "commsched-simulation");
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "graph")), "rep");
    assert_string_equal(json_string_value(json_object_get(j, "comm_streams")),
                        "per_group");
    json_t *tot = json_object_get(j, "totals");
    assert_true(fabs(json_number_value(json_object_get(tot, "makespan_ns")) -
                     t->makespan_ns) < 1e-6 * t->makespan_ns);
    assert_true(fabs(json_number_value(json_object_get(tot, "exposed_ns")) -
                     t->exposed_ns) < 1e-6 * (1 + t->exposed_ns));
    json_t *lb = json_object_get(j, "lower_bound");
    assert_non_null(json_object_get(lb, "critical_path_ns"));
    assert_non_null(json_object_get(lb, "binding"));
    json_t *mem = json_object_get(j, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "peak_per_step")),
                     t->peak_memory_step);
    assert_int_equal(json_array_size(json_object_get(j, "streams")), 3);
    json_t *est = json_object_get(j, "estimates");
    assert_int_equal(json_integer_value(json_object_get(est, "file")), 2);
    json_t *cs = json_object_get(j, "collectives");
    assert_int_equal(json_array_size(cs), 2);
    json_t *c0 = json_array_get(cs, 0);
    assert_string_equal(json_string_value(json_object_get(c0, "name")), "c\"q");
    assert_string_equal(json_string_value(json_object_get(c0, "source")),
                        "file");
    assert_string_equal(json_string_value(json_object_get(c0, "wait")), "w");
    assert_int_equal(json_integer_value(json_object_get(c0, "wait_position")),
                     3);
    assert_true(json_number_value(json_object_get(c0, "comm_ns")) == 30);
    static const char *const keys[] = {
        "name", "op", "group", "sync", "stream", "bytes", "comm_ns", "source",
        "issue_ns", "start_ns", "end_ns", "queued_ns", "overlapped_ns",
        "exposed_ns", "issue_position", "wait", "wait_position"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_get(c0, keys[i]))
            fail_msg("collective lacks \"%s\"", keys[i]);
    json_t *c1 = json_array_get(cs, 1);
    assert_true(json_is_true(json_object_get(c1, "sync")));
    assert_true(json_is_null(json_object_get(c1, "wait")));
    json_decref(j);
    free(text);
    teardown_fix(&f);
}

/* How a viewer binds the flow event at index `at` (thread tid, time ts):
 * "enclosing" finds the X slice that strictly contains ts (a zero-length
 * slice only at its own ts) and fails when two qualify; otherwise ("next
 * slice" binding, for an "f" without "bp") the first slice in time order
 * after the event, where slices at the same ts count only when written
 * after it (viewers sort stably by time). */
static json_t *bind_flow(json_t *events, size_t at, json_int_t tid, double ts,
                         int enclosing)
{
    size_t i;
    json_t *e, *found = NULL;
    double best = INFINITY;
    json_array_foreach(events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (strcmp(ph, "X") != 0 ||
            json_integer_value(json_object_get(e, "tid")) != tid)
            continue;
        double t0 = json_number_value(json_object_get(e, "ts"));
        double d = json_number_value(json_object_get(e, "dur"));
        if (enclosing) {
            int in = d > 0 ? (t0 < ts && ts < t0 + d) : ts == t0;
            if (!in)
                continue;
            if (found)
                fail_msg("flow at %g on thread %lld binds ambiguously: %s / %s",
                         ts, (long long)tid,
                         json_string_value(json_object_get(found, "name")),
                         json_string_value(json_object_get(e, "name")));
            found = e;
        } else if ((t0 > ts || (t0 == ts && i > at)) && t0 < best) {
            best = t0;
            found = e;
        }
    }
    return found;
}

/* The structural checks a trace viewer relies on. Returns the number of
 * flow pairs. */
static size_t check_trace(json_t *j, const commsched_sim *sim)
{
    json_t *ev = json_object_get(j, "traceEvents");
    assert_true(json_is_array(ev));
    uint32_t S = commsched_sim_stream_count(sim);
    int named[16] = {0};
    size_t i, n_x = 0, n_c = 0, n_s = 0, n_f = 0;
    json_t *e;
    int process_named = 0;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_int_equal(json_integer_value(json_object_get(e, "pid")), 1);
        assert_true(json_is_string(json_object_get(e, "name")));
        if (strcmp(ph, "M") == 0) {
            const char *what = json_string_value(json_object_get(e, "name"));
            json_int_t tid = json_integer_value(json_object_get(e, "tid"));
            if (strcmp(what, "thread_name") == 0) {
                assert_true(tid >= 0 && tid < (json_int_t)S);
                named[tid] = 1;
                const char *nm = json_string_value(
                    json_object_get(json_object_get(e, "args"), "name"));
                assert_non_null(nm);
                if (tid == 0)
                    assert_string_equal(nm, "compute");
                else
                    assert_non_null(strstr(nm, commsched_sim_stream_name(
                                                   sim, (uint32_t)tid)));
            } else if (strcmp(what, "process_name") == 0) {
                process_named = 1;
            }
            continue;
        }
        double ts = json_number_value(json_object_get(e, "ts"));
        assert_true(json_is_number(json_object_get(e, "ts")) && ts >= 0);
        if (strcmp(ph, "X") == 0) {
            n_x++;
            assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
            json_int_t tid = json_integer_value(json_object_get(e, "tid"));
            assert_true(tid >= 0 && tid < (json_int_t)S);
            assert_true(json_is_string(json_object_get(e, "cat")));
        } else if (strcmp(ph, "C") == 0) {
            n_c++;
            assert_string_equal(json_string_value(json_object_get(e, "name")),
                                "memory");
            assert_true(json_is_integer(
                json_object_get(json_object_get(e, "args"), "bytes")));
        } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            assert_true(json_is_integer(json_object_get(e, "id")));
            json_int_t tid = json_integer_value(json_object_get(e, "tid"));
            int by_enclosing = ph[0] == 's' || json_object_get(e, "bp");
            json_t *sl = bind_flow(ev, i, tid, ts, by_enclosing);
            if (!sl)
                fail_msg("flow %s of %s at %g binds to no slice on thread %lld",
                         ph, json_string_value(json_object_get(e, "name")), ts,
                         (long long)tid);
            if (ph[0] == 's') {
                n_s++;
                assert_true(tid > 0); /* from a comm stream */
                assert_string_equal(
                    json_string_value(json_object_get(sl, "name")),
                    json_string_value(json_object_get(e, "name")));
            } else {
                n_f++;
                assert_int_equal(tid, 0);
                if (json_object_get(e, "bp"))
                    assert_string_equal(
                        json_string_value(json_object_get(e, "bp")), "e");
                assert_string_equal(
                    json_string_value(json_object_get(sl, "cat")), "wait");
            }
        } else {
            fail_msg("unexpected phase \"%s\"", ph);
        }
    }
    assert_true(process_named);
    for (uint32_t s = 0; s < S && s < 16; s++)
        assert_true(named[s]);
    assert_true(n_x >= commsched_graph_node_count(commsched_sim_graph(sim)));
    assert_true(n_c > 0);
    assert_int_equal(n_s, n_f);
    /* Every "s" has exactly one "f" with the same id. */
    json_array_foreach(ev, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "ph")), "s") != 0)
            continue;
        json_int_t id = json_integer_value(json_object_get(e, "id"));
        size_t k, found = 0;
        json_t *x;
        json_array_foreach(ev, k, x) {
            if (strcmp(json_string_value(json_object_get(x, "ph")), "f") == 0 &&
                json_integer_value(json_object_get(x, "id")) == id)
                found++;
        }
        assert_int_equal(found, 1);
    }
    return n_s;
}

static void test_report_trace(void **state)
{
    (void)state;
    fix f;
    setup_fix(&f, graph, COMMSCHED_SIM_MEMORY_CURVE);
    char *text = capture(commsched_report_trace, &f);
    json_t *j = parse(text);
    assert_int_equal(check_trace(j, f.sim), 1); /* c -> w; sy has no wait */
    /* The sync collective shows on both its comm track and compute. */
    json_t *ev = json_object_get(j, "traceEvents");
    size_t i, sy_slices = 0;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (strcmp(nm, "sy") == 0 &&
            strcmp(json_string_value(json_object_get(e, "ph")), "X") == 0)
            sy_slices++;
    }
    assert_int_equal(sy_slices, 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(j, "otherData"), "graph")),
                        "rep");
    json_decref(j);
    free(text);
    teardown_fix(&f);
}

static void test_report_trace_random(void **state)
{
    (void)state;
    for (uint64_t seed = 7; seed < 12; seed++) {
        tu_graph_opts go = tu_random_opts(80);
        commsched_graph *g = tu_random_graph(seed, &go);
        char *json = tu_graph_to_json(g, NULL);
        commsched_graph_destroy(g);
        fix f;
        setup_fix(&f, json, COMMSCHED_SIM_MEMORY_CURVE);
        char *text = capture(commsched_report_trace, &f);
        json_t *j = parse(text);
        check_trace(j, f.sim);
        json_decref(j);
        free(text);
        text = capture(commsched_report_json, &f);
        j = parse(text);
        json_decref(j);
        free(text);
        text = capture(commsched_report_table, &f);
        free(text);
        teardown_fix(&f);
        free(json);
    }
}

static void test_report_estimates(void **state)
{
    (void)state;
    fix f;
    setup_fix(&f, graph, 0);
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_create(f.g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s, &m, &err), COMMSCHED_OK);
    FILE *mf = tmpfile();
    assert_non_null(mf);
    assert_int_equal(commsched_report_estimates_json(mf, f.g, &f.o, m, &err),
                     COMMSCHED_OK);
    char *buf = slurp(mf);
    json_t *j = parse(buf);
    json_t *nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 5);
    json_t *sy = json_array_get(nodes, 2);
    assert_string_equal(json_string_value(json_object_get(sy, "source")),
                        "model");
    assert_int_equal(json_integer_value(json_object_get(sy, "ranks")), 4);
    assert_non_null(json_object_get(sy, "protocol"));
    json_t *w = json_array_get(nodes, 3);
    assert_string_equal(json_string_value(json_object_get(w, "source")),
                        "none");
    json_t *a = json_array_get(nodes, 1);
    /* a allocates a_out (32) and is x's (16, freeable) last reader. */
    assert_int_equal(json_integer_value(json_object_get(a, "memory_delta")),
                     32 - 16);
    json_decref(j);
    free(buf);
    mf = tmpfile();
    assert_non_null(mf);
    assert_int_equal(commsched_report_estimates_table(mf, f.g, &f.o, m, &err),
                     COMMSCHED_OK);
    buf = slurp(mf);
    assert_non_null(strstr(buf, "a wait costs 0"));
    assert_non_null(strstr(buf, "4 rk/1 host"));
    free(buf);
    commsched_memory_destroy(m);
    commsched_schedule_destroy(s);
    teardown_fix(&f);
}

static void test_report_compare(void **state)
{
    (void)state;
    commsched_sim_totals a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.makespan_ns = 2000;
    b.makespan_ns = 1500;
    a.efficiency = 0.5;
    b.efficiency = 0.75;
    FILE *mf = tmpfile();
    assert_non_null(mf);
    commsched_error err = {0};
    assert_int_equal(commsched_report_compare(mf, &a, &b, NULL, NULL, &err),
                     COMMSCHED_OK);
    char *buf = slurp(mf);
    assert_non_null(strstr(buf, "-25.0%"));
    assert_non_null(strstr(buf, "+25.0 pt"));
    free(buf);
}

/* Every report's signed change: one decimal, a sign, and no "-0.0" for a
 * change that rounds to zero (sums formed in another order). */
static void test_format_change(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(cs_fmt_change(-0.01, "%", buf, sizeof buf), "0.0%");
    assert_string_equal(cs_fmt_change(-0.049, " pt", buf, sizeof buf),
                        "0.0 pt");
    assert_string_equal(cs_fmt_change(0.0, "%", buf, sizeof buf), "0.0%");
    assert_string_equal(cs_fmt_change(-0.06, "%", buf, sizeof buf), "-0.1%");
    assert_string_equal(cs_fmt_change(12.34, "%", buf, sizeof buf),
                        "+12.3%");
    assert_string_equal(cs_fmt_change(NAN, "%", buf, sizeof buf), "-");
    assert_string_equal(cs_fmt_change(INFINITY, "%", buf, sizeof buf), "-");
}

/* The passes' statistics as JSON: every pass of a pipeline with node rows
 * (RCPPM, sink) and per-collective rows (overlap), names escaped; jansson
 * reads the compact form back and writes it again byte for byte, and the
 * indented form is jansson's JSON_INDENT(1) of the same document. */
static char *stats_text(const commsched_graph *g, const commsched_run *run,
                        unsigned flags)
{
    FILE *m = tmpfile();
    assert_non_null(m);
    commsched_error err = {0};
    if (commsched_run_stats_write_json(m, g, run, flags, &err) !=
        COMMSCHED_OK)
        fail_msg("stats failed: %s", err.text);
    return slurp(m);
}

static void test_run_stats_json(void **state)
{
    (void)state;
    fix f;
    setup_fix(&f, graph, 0);
    commsched_error err = {0};
    commsched_schedule *s = NULL;
    commsched_run *run = NULL;
    assert_int_equal(commsched_schedule_create(f.g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(
        commsched_pipeline_run(
            f.g, s, f.rt,
            "reorder_communication_preserving_peak_memory,sink_waits_iterative,"
            "overlap",
            NULL, 0, &run, &err),
        COMMSCHED_OK);
    char *text = stats_text(f.g, run, 0);
    json_t *j = parse(text);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 3);
    char *again = json_dumps(j, JSON_COMPACT);
    assert_string_equal(text, again);
    free(again);
    const json_t *ov = json_array_get(j, 2);
    assert_string_equal(json_string_value(json_object_get(ov, "pass")),
                        "overlap");
    const json_t *cl = json_object_get(ov, "collectives");
    assert_true(json_array_size(cl) >= 1);
    int quoted = 0;
    for (size_t i = 0; i < json_array_size(cl); i++)
        quoted |= strcmp(json_string_value(json_object_get(
                             json_array_get(cl, i), "node")),
                         "c\"q") == 0;
    assert_true(quoted);
    assert_non_null(json_object_get(json_array_get(j, 1), "nodes"));
    assert_null(json_object_get(ov, "wall_ms"));
    free(text);

    text = stats_text(f.g, run,
                      COMMSCHED_STATS_JSON_TIMING | COMMSCHED_STATS_JSON_INDENT);
    json_t *t = parse(text);
    assert_non_null(json_object_get(json_array_get(t, 0), "wall_ms"));
    again = json_dumps(t, JSON_INDENT(1));
    assert_string_equal(text, again);
    free(again);
    free(text);
    json_decref(t);
    json_decref(j);

    text = stats_text(f.g, NULL, 0); /* no run: no passes */
    assert_string_equal(text, "[]");
    free(text);
    commsched_run_destroy(run);
    commsched_schedule_destroy(s);
    teardown_fix(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_table),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_report_trace),
        cmocka_unit_test(test_report_trace_random),
        cmocka_unit_test(test_report_estimates),
        cmocka_unit_test(test_report_compare),
        cmocka_unit_test(test_format_change),
        cmocka_unit_test(test_run_stats_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
