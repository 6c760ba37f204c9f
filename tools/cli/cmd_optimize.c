/* commsched optimize FILE — run a pipeline of passes over the schedule and
 * write the graph in the new order with a "schedule" object describing the
 * run (docs/FORMAT.md "The `schedule` object"). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/commsched.h"
#include "commsched/analysis.h"
#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/passes.h"
#include "commsched/report.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched optimize [options] FILE\n"
            "\n"
            "Runs scheduling passes over FILE's node order and writes the graph\n"
            "in the new order (same format, plus a \"schedule\" object).\n"
            "\n"
            "  -o, --output OUT     write here (default: standard output); written\n"
            "                       atomically, so a failed run leaves no file\n"
            "  --passes LIST        comma-separated passes (default: overlap,\n"
            "                       within overlap_peak_budget x the input's\n"
            "                       peak; see --list-passes); 'none' keeps the\n"
            "                       order\n"
            "  --set KEY=VALUE      set a knob (repeatable; see --list-passes)\n"
            "  --stats[=FORMAT]     print each pass's statistics: table (default)\n"
            "                       or json\n"
            "  --report             print the figures before and after: peak\n"
            "                       memory and the simulator's totals (makespan,\n"
            "                       lower bound, efficiency, exposed comm, overlap)\n"
            "  --html OUT.html      also write the overlap report as one HTML page\n"
            "                       (timelines before/after, memory, per-collective\n"
            "                       table with the passes' statistics; see\n"
            "                       'commsched report')\n"
            "  --device D           device profile for the runtimes: h100\n"
            "                       (default), a100, b200 or a JSON profile file\n"
            "  --cost-model M       nccl (default) or inductor (docs/COST.md)\n"
            "  --costs TRACE        price what a Kineto trace measured from it\n"
            "                       (kernels by name, collectives by op, group\n"
            "                       and size), the profile elsewhere\n"
            "  --verify-memory      recompute memory after every move and stop at\n"
            "                       the first difference; check every pass\n"
            "  --list-passes        list passes and knobs with their defaults\n"
            "  --toposort           repair a non-topological input order first\n"
            "  --verbose            print the stages' wall time to standard\n"
            "                       error: load, passes, the rest, save\n"
            "\n"
            "Tables go to standard output, or to standard error when the graph\n"
            "itself goes to standard output.\n");
}

static void list_passes(void)
{
    printf("passes:\n");
    for (size_t i = 0; i < commsched_pass_count(); i++)
        printf("  %-46s %s\n", commsched_pass_name(i),
               commsched_pass_description(i));
    printf("\ndefault pipeline:\n  %s\n\nknobs (--set KEY=VALUE):\n",
           commsched_default_pipeline());
    for (size_t i = 0; i < commsched_knob_count(); i++)
        printf("  %-48s %-6s %s\n", commsched_knob_name(i),
               commsched_knob_default(i), commsched_knob_description(i));
}

typedef struct figures {
    int64_t peak;
    uint32_t peak_at;
} figures;

static commsched_status measure(const commsched_schedule *s, figures *out,
                                commsched_error *err)
{
    commsched_memory *m = NULL;
    commsched_status st = commsched_memory_create(s, &m, err);
    if (st == COMMSCHED_OK)
        out->peak = commsched_memory_peak(m, s, &out->peak_at);
    commsched_memory_destroy(m);
    return st;
}

/* The simulator's totals for the current order of s (runtimes from the
 * same cost model the passes used), for --report. The simulator lives
 * only for the call: kept across the passes, it was ~100 MB of a 1M-node
 * run's peak. */
static commsched_status simulate(const commsched_graph *g,
                                 const commsched_schedule *s,
                                 const double *runtime,
                                 commsched_sim_totals *out,
                                 commsched_error *err)
{
    commsched_sim *sim = NULL;
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_BOUND;
    commsched_status st = commsched_sim_create(g, &sim, err);
    if (st == COMMSCHED_OK)
        st = commsched_sim_run_schedule(sim, s, runtime, &so, err);
    if (st == COMMSCHED_OK)
        *out = *commsched_sim_get_totals(sim);
    commsched_sim_destroy(sim);
    return st;
}

static void print_report(FILE *f, const commsched_graph *g, const figures *b,
                         const figures *a, const commsched_sim_totals *sb,
                         const commsched_sim_totals *sa,
                         const commsched_run *run, const char *device,
                         const char *model)
{
    char x[32], y[32];
    uint32_t n = commsched_graph_node_count(g);
    fprintf(f, "graph %s: %u node%s\n",
            commsched_graph_name(g) ? commsched_graph_name(g) : "(unnamed)", n,
            COMMSCHED_PLURAL(n));
    fprintf(f, "%-14s %14s %14s\n", "", "before", "after");
    fprintf(f, "%-14s %14s %14s\n", "peak memory",
            cli_bytes((double)b->peak, x, sizeof x),
            cli_bytes((double)a->peak, y, sizeof y));
    fprintf(f, "\n");
    commsched_report_compare(f, sb, sa, NULL, NULL, NULL);
    /* Each overlap pass's budgets and which one binds (docs/PASSES.md,
     * overlap: "binds"). */
    for (size_t i = 0; i < commsched_run_pass_count(run); i++) {
        const commsched_pass_stats *p = commsched_run_pass(run, i);
        if (p->kind != COMMSCHED_STATS_OVERLAP)
            continue;
        if (p->overlap_budget_bytes < 0)
            snprintf(x, sizeof x, "none");
        else
            cli_bytes((double)p->overlap_budget_bytes, x, sizeof x);
        fprintf(f, "overlap's peak budget: %s per step", x);
        if (p->overlap_time_budget_bytes >= 0)
            fprintf(f, ", %s in time",
                    cli_bytes((double)p->overlap_time_budget_bytes, y,
                              sizeof y));
        fprintf(f, "; binds: %s\n",
                p->overlap_binds ? p->overlap_binds : "none");
    }
    fprintf(f, "(simulated on %s, %s model; docs/REPORTS.md)\n", device, model);
}

/* Runs the pipeline as the library's optimize does
 * (commsched_optimize_schedule: the passes, the order checked, violated
 * fake edges dropped: *dropped, n_dropped). A pass that rewrites the
 * graph (bucketing) leaves *g and *s pointing at a graph and schedule
 * the run owns; *g_in and *s_in then keep the loaded ones, which stay
 * ours to destroy. Everything sized
 * or built for the graph follows it: the runtimes (the run's) and the
 * estimate sources (sources may be NULL, *sources NULL when not kept). */
static commsched_status run_passes(commsched_graph **g, commsched_schedule **s,
                                   commsched_graph **g_in,
                                   commsched_schedule **s_in, double **runtime,
                                   commsched_cost_source **sources,
                                   const cli_cost *cost, const char *passes,
                                   const commsched_knobs *knobs, unsigned flags,
                                   commsched_run **run, uint32_t *n_dropped,
                                   const char ***dropped,
                                   commsched_error *err)
{
    commsched_graph *g0 = *g;
    commsched_schedule *s0 = *s;
    commsched_status st = commsched_optimize_schedule(
        g, s, *runtime, &cost->opts, passes, knobs, flags, run, n_dropped,
        dropped, err);
    if (st != COMMSCHED_OK || *g == g0)
        return st;
    *g_in = g0;
    *s_in = s0;
    uint32_t n = commsched_graph_node_count(*g);
    double *rt = malloc((size_t)n * sizeof *rt);
    int want_sources = sources && *sources;
    commsched_cost_source *src =
        want_sources ? realloc(*sources, (size_t)n * sizeof *src) : NULL;
    if (src)
        *sources = src;
    if (!rt || (want_sources && !src)) {
        free(rt);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    /* The estimates of the nodes that stayed are unchanged; only the
     * sources need the new graph. */
    if (src && (st = commsched_cost_graph(*g, &cost->opts, rt, src, err)) !=
                   COMMSCHED_OK) {
        free(rt);
        return st;
    }
    memcpy(rt, commsched_run_runtime_ns(*run), (size_t)n * sizeof *rt);
    free(*runtime);
    *runtime = rt;
    return st;
}

int cmd_optimize(int argc, char **argv)
{
    enum { O_PASSES = 256, O_SET, O_STATS, O_REPORT, O_VERIFY, O_LIST,
           O_TOPO, O_DEVICE, O_MODEL, O_COSTS, O_HTML, O_VERBOSE };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"passes", required_argument, 0, O_PASSES},
        {"set", required_argument, 0, O_SET},
        {"stats", optional_argument, 0, O_STATS},
        {"report", no_argument, 0, O_REPORT},
        {"html", required_argument, 0, O_HTML},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"verify-memory", no_argument, 0, O_VERIFY},
        {"list-passes", no_argument, 0, O_LIST},
        {"toposort", no_argument, 0, O_TOPO},
        {"verbose", no_argument, 0, O_VERBOSE},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *out_path = NULL, *passes = commsched_default_pipeline();
    const char *stats = NULL, *device = NULL, *model = NULL, *costs = NULL;
    const char *html = NULL;
    /* The HTML page's budget line uses the knob the RCPPM passes obey. */
    double budget_fraction = 0.2;
    int report = 0, verbose = 0, c, rc = 0;
    unsigned flags = 0, pipe_flags = 0;
    commsched_error err = {0};
    commsched_knobs *knobs = NULL;
    if (commsched_knobs_create(&knobs, &err) != COMMSCHED_OK)
        return cli_report(NULL, &err);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case O_PASSES: passes = optarg; break;
        case O_SET: {
            char *eq = strchr(optarg, '=');
            if (!eq) {
                commsched_knobs_destroy(knobs);
                return cli_usage_error("optimize",
                                       "--set expects KEY=VALUE, got \"%s\"",
                                       optarg);
            }
            *eq = '\0';
            if (commsched_knobs_set(knobs, optarg, eq + 1, &err) !=
                COMMSCHED_OK) {
                commsched_knobs_destroy(knobs);
                return cli_report(NULL, &err);
            }
            if (strcmp(optarg, "reorder_iterative_peak_memory_budget") == 0)
                budget_fraction = strtod(eq + 1, NULL);
            break;
        }
        case O_STATS:
            stats = optarg ? optarg : "table";
            if (strcmp(stats, "table") != 0 && strcmp(stats, "json") != 0) {
                commsched_knobs_destroy(knobs);
                return cli_usage_error("optimize",
                                       "--stats takes table or json");
            }
            break;
        case O_REPORT: report = 1; break;
        case O_HTML: html = optarg; break;
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_VERIFY: pipe_flags |= COMMSCHED_PIPELINE_VERIFY; break;
        case O_LIST:
            commsched_knobs_destroy(knobs);
            list_passes();
            return EXIT_OK;
        case O_TOPO: flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case O_VERBOSE: verbose = 1; break;
        case 'h':
            commsched_knobs_destroy(knobs);
            usage(stdout);
            return EXIT_OK;
        default:
            commsched_knobs_destroy(knobs);
            return cli_bad_option("optimize", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 1) {
        commsched_knobs_destroy(knobs);
        return cli_usage_error("optimize", "expected exactly one FILE");
    }
    /* A misspelt pass is the argument's fault: say so before loading
     * (and blaming) the graph file. */
    if (commsched_pipeline_check(passes, &err) != COMMSCHED_OK) {
        commsched_knobs_destroy(knobs);
        fprintf(stderr, "commsched optimize: --passes: %s\n", err.text);
        return cli_exit_code(err.status);
    }
    const char *in_path = argv[optind];
    const char *in_name = strcmp(in_path, "-") == 0 ? "<stdin>" : in_path;
    if (html && (strcmp(html, "-") == 0 ||
                 (out_path && strcmp(html, out_path) == 0))) {
        commsched_knobs_destroy(knobs);
        return cli_usage_error("optimize",
                               "--html needs a file of its own (not '-', "
                               "not --output)");
    }

    commsched_graph *g = NULL, *g_in = NULL;
    commsched_schedule *s = NULL, *s_in = NULL;
    commsched_run *run = NULL;
    uint32_t *order = NULL;
    double *runtime = NULL;
    const char **dropped = NULL;
    uint32_t n_dropped = 0;
    figures before, after;
    cli_out out = {0};
    commsched_sim_totals sim_before, sim_after;
    /* --html: both orders simulated with their memory curves. */
    commsched_sim *html_before = NULL, *html_after = NULL;
    commsched_cost_source *sources = NULL;
    commsched_html_pass_row *rows = NULL;
    size_t n_rows = 0;
    commsched_sim_options curve;
    commsched_sim_options_init(&curve);
    curve.flags |= COMMSCHED_SIM_MEMORY_CURVE | COMMSCHED_SIM_BOUND;
    cli_cost cost;
    if ((rc = cli_cost_setup(&cost, "optimize", device, model, costs)) != 0)
        goto done;
    double t_load = cli_now();
    if ((rc = cli_load(in_path, flags, &g)) != 0)
        goto done;
    double t_loaded = cli_now();
    uint32_t n = commsched_graph_node_count(g);
    runtime = malloc((size_t)n * sizeof *runtime);
    if (html)
        sources = malloc((size_t)(n ? n : 1) * sizeof *sources);
    if (!runtime || (html && !sources)) {
        commsched_error_set(&err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    if (commsched_cost_graph(g, &cost.opts, runtime, sources, &err) !=
            COMMSCHED_OK ||
        commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
        measure(s, &before, &err) != COMMSCHED_OK ||
        (report &&
         simulate(g, s, runtime, &sim_before, &err) != COMMSCHED_OK) ||
        (html &&
         (commsched_sim_create(g, &html_before, &err) != COMMSCHED_OK ||
          commsched_sim_run_schedule(html_before, s, runtime, &curve,
                                     &err) != COMMSCHED_OK)) ||
        run_passes(&g, &s, &g_in, &s_in, &runtime, &sources, &cost, passes,
                   knobs, pipe_flags, &run, &n_dropped, &dropped, &err) !=
            COMMSCHED_OK ||
        measure(s, &after, &err) != COMMSCHED_OK ||
        (report &&
         simulate(g, s, runtime, &sim_after, &err) != COMMSCHED_OK) ||
        (html &&
         (commsched_sim_create(g, &html_after, &err) != COMMSCHED_OK ||
          commsched_sim_run_schedule(html_after, s, runtime, &curve, &err) !=
              COMMSCHED_OK)))
        goto fail;
    /* Made after the passes, whose peak it would add to (4 B a node), for
     * the graph they leave. */
    order = malloc((size_t)commsched_graph_node_count(g) * sizeof *order);
    if (!order) {
        commsched_error_set(&err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    if (commsched_schedule_to_array(s, order, &err) != COMMSCHED_OK)
        goto fail;
    double t_saving = cli_now();
    if ((rc = cli_out_open(&out, out_path)) != 0)
        goto done;
    /* The "schedule" object (docs/FORMAT.md): the library's writer. */
    commsched_schedule_record sched;
    commsched_schedule_record_init(&sched);
    sched.passes = passes;
    sched.peak_before = before.peak;
    sched.peak_after = after.peak;
    sched.has_dropped = 1;
    sched.dropped = dropped;
    sched.n_dropped = n_dropped;
    sched.g = g;
    sched.run = run;
    sched.knobs = knobs;
    if (commsched_graph_save_stream_with(g, order,
                                         commsched_schedule_record_write,
                                         &sched, out.f, &err) !=
        COMMSCHED_OK) {
        cli_out_abort(&out);
        goto fail;
    }
    int to_stdout = out.f == stdout;
    if ((rc = cli_out_commit(&out)) != 0)
        goto done;
    if (verbose) {
        /* The passes' own time is in their statistics; the rest of the
         * middle stage is the cost model, the memory measurements, the
         * schedule check and --report's simulations. */
        double passes_ms = 0;
        for (size_t i = 0; i < commsched_run_pass_count(run); i++)
            passes_ms += commsched_run_pass(run, i)->wall_ms;
        fprintf(stderr,
                "commsched optimize: %u nodes; load %.1f ms, passes %.1f ms, "
                "the rest of optimizing %.1f ms, save %.1f ms\n",
                commsched_graph_node_count(g), 1e3 * (t_loaded - t_load),
                passes_ms, 1e3 * (t_saving - t_loaded) - passes_ms,
                1e3 * (cli_now() - t_saving));
    }
    FILE *tables = to_stdout ? stderr : stdout;
    if (stats && strcmp(stats, "json") == 0) {
        if (commsched_run_stats_write_json(
                tables, g, run,
                COMMSCHED_STATS_JSON_TIMING | COMMSCHED_STATS_JSON_INDENT,
                &err) != COMMSCHED_OK) {
            rc = cli_report(NULL, &err);
            goto done;
        }
        fputc('\n', tables);
    } else if (stats) {
        cli_print_pass_stats(tables, g, run);
    }
    if (report)
        print_report(tables, g, &before, &after, &sim_before, &sim_after,
                     run, cost.device.name,
                     commsched_comm_model_str(cost.opts.comm_model));
    if (html) {
        cli_budget budget;
        commsched_report_context ctx = {
            .device = cost.device.name,
            .cost_model = commsched_comm_model_str(cost.opts.comm_model),
            .sources = sources};
        commsched_html_options ho;
        commsched_html_options_init(&ho);
        if ((rc = cli_pass_rows_from_run(g, run, &rows, &n_rows)) != 0)
            goto done;
        char ob[64] = "1";
        commsched_knobs_get(knobs, "overlap_peak_budget", ob, sizeof ob);
        char pm[16] = "both";
        commsched_knobs_get(knobs, "overlap_peak_model", pm, sizeof pm);
        if (cli_has_pass(passes, "overlap"))
            cli_html_budget_overlap(&budget, before.peak,
                                    strcmp(pm, "both") == 0
                                        ? commsched_sim_get_totals(html_before)
                                              ->peak_memory
                                        : -1,
                                    "the input order", strtod(ob, NULL));
        else
            cli_html_budget(&budget,
                            passes[0] != '\0' && strcmp(passes, "none") != 0,
                            before.peak, "the input order", budget_fraction);
        ho.before = html_before;
        ho.ctx = &ctx;
        ho.passes = passes;
        ho.memory_budget = budget.bytes;
        ho.memory_budget_note = budget.note;
        ho.pass_rows = rows;
        ho.n_pass_rows = n_rows;
        rc = cli_write_html(html, 0, html_after, &ho);
    }
    goto done;
fail:
    rc = cli_report(in_name, &err);
done:
    free(rows);
    free(sources);
    commsched_sim_destroy(html_before);
    commsched_sim_destroy(html_after);
    commsched_free(dropped);
    free(order);
    free(runtime);
    commsched_run_destroy(run);
    /* The loaded graph and its schedule; a rewritten pair is the run's. */
    commsched_schedule_destroy(g_in ? s_in : s);
    commsched_graph_destroy(g_in ? g_in : g);
    commsched_knobs_destroy(knobs);
    cli_cost_fini(&cost);
    return rc;
}
