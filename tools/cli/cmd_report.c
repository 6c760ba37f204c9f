/* commsched report AFTER.json — the overlap report as one self-contained
 * HTML page (or its timeline as SVG): AFTER.json simulated, beside the
 * order before optimizing (--before) and a measured run (--measured).
 * Pass statistics come from AFTER.json's "schedule" object when
 * `commsched optimize` wrote it. `optimize --html` writes the same page
 * through cli_write_html. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/passes.h"
#include "commsched/report.h"
#include "commsched/simulate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched report [options] AFTER.json\n"
            "       commsched report --measured TRACE [--measured TRACE...]\n"
            "                        [--rank N] [options]\n"
            "\n"
            "Writes the overlap report of AFTER.json's order as one HTML page\n"
            "that opens from disk in any browser (no network): the summary\n"
            "before and after with the change, per-stream timelines on one\n"
            "time axis (exposed stalls marked; hover a node for its figures;\n"
            "drag to zoom), memory over time with the peaks and the budget,\n"
            "the sortable per-collective table with the passes' statistics,\n"
            "and measured against predicted figures.\n"
            "\n"
            "  --before FILE     the order before optimizing (the file given\n"
            "                    to 'commsched optimize')\n"
            "  --measured RUN    a measured run of AFTER.json's graph (JSON,\n"
            "                    docs/REPORTS.md \"Measured runs\")\n"
            "  --measured TRACE  without AFTER.json: a Kineto (PyTorch\n"
            "                    profiler) trace, .json or .json.gz, one per\n"
            "                    rank; prints each rank's comm/comp overlap by\n"
            "                    HTA's definition beside the simulated one in\n"
            "                    the run's order and in the optimized order\n"
            "                    (standard error when the page goes to\n"
            "                    standard output), and draws the page of the\n"
            "                    first trace: the run's order before, the\n"
            "                    optimized one after\n"
            "  --rank N          with --measured TRACE: the device to read\n"
            "                    in each trace (default: the only one)\n"
            "  -o, --output OUT  write here (default: standard output);\n"
            "                    written atomically\n"
            "  --format F        html (default) or svg: the timeline alone\n"
            "  --budget F|none   the memory budget line: the before order's\n"
            "                    peak x (1 + F) when AFTER.json says passes\n"
            "                    ran (default F: the file's recorded\n"
            "                    reorder_iterative_peak_memory_budget knob,\n"
            "                    else 0.2), else the before peak; none: no\n"
            "                    line. Without --budget, a pipeline with the\n"
            "                    overlap pass draws its own budget: the\n"
            "                    before peak x overlap_peak_budget\n"
            "  --title TEXT      the page's title\n"
            "  --max-bars N      nodes per run sent to the page one by one\n"
            "                    (default 50000; the longest when there are\n"
            "                    more, the rest as bins)\n"
            "  --rows N          collectives in the table (default 1000, the\n"
            "                    most exposed when there are more)\n"
            CLI_COST_HELP
            "  --comm-streams M  per-group (default) or single\n"
            "  --toposort        repair a non-topological input order first\n"
            "\n"
            "'commsched optimize FILE --html OUT.html' writes the same page\n"
            "for one run of the passes. docs/REPORTS.md describes the page.\n");
}

/* ---- pass statistics ---------------------------------------------------- */

int cli_pass_rows_from_run(const commsched_graph *g, const commsched_run *run,
                           commsched_html_pass_row **rows, size_t *n)
{
    size_t total = 0, k = 0;
    *rows = NULL;
    *n = 0;
    for (size_t i = 0; run && i < commsched_run_pass_count(run); i++)
        total += commsched_run_pass(run, i)->n_nodes;
    if (total == 0)
        return 0;
    *rows = malloc(total * sizeof **rows);
    if (!*rows) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < commsched_run_pass_count(run); i++) {
        const commsched_pass_stats *p = commsched_run_pass(run, i);
        for (uint32_t j = 0; j < p->n_nodes; j++) {
            const commsched_node_stats *r = &p->nodes[j];
            (*rows)[k++] = (commsched_html_pass_row){
                .pass = p->pass,
                /* A rewriting pass (bucketing) numbers its rows in its
                 * own graph; earlier records keep theirs. */
                .node = commsched_graph_node_name(p->graph ? p->graph : g,
                                                  r->node),
                .limiting_factor = r->limiting_factor,
                .moves = r->moves,
                .initial_exposed_ns = r->initial_exposed,
                .final_exposed_ns = r->final_exposed};
        }
    }
    *n = k;
    return 0;
}

/* Rows from an optimized file's schedule.stats (borrowing the strings of
 * `sched`, which must outlive them). Malformed statistics are skipped:
 * they decorate the page and never decide a figure. */
static int pass_rows_from_json(json_t *sched, commsched_html_pass_row **rows,
                               size_t *n)
{
    json_t *stats = json_object_get(sched, "stats");
    size_t total = 0, k = 0, i, j;
    json_t *p, *r;
    *rows = NULL;
    *n = 0;
    json_array_foreach(stats, i, p)
        total += json_array_size(json_object_get(p, "nodes"));
    if (total == 0)
        return 0;
    *rows = malloc(total * sizeof **rows);
    if (!*rows) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    json_array_foreach(stats, i, p) {
        const char *pass = json_string_value(json_object_get(p, "pass"));
        json_array_foreach(json_object_get(p, "nodes"), j, r) {
            const char *node = json_string_value(json_object_get(r, "node"));
            json_t *mv = json_object_get(r, "moves");
            if (!pass || !node || !json_is_integer(mv) ||
                json_integer_value(mv) < 0)
                continue;
            (*rows)[k++] = (commsched_html_pass_row){
                .pass = pass,
                .node = node,
                .limiting_factor = json_string_value(
                    json_object_get(r, "limiting_factor")),
                .moves = (uint32_t)json_integer_value(mv),
                .initial_exposed_ns = json_number_value(
                    json_object_get(r, "initial_exposed_ns")),
                .final_exposed_ns = json_number_value(
                    json_object_get(r, "final_exposed_ns"))};
        }
    }
    *n = k;
    return 0;
}

/* ---- the budget line ---------------------------------------------------- */

void cli_html_budget(cli_budget *b, int pipeline_ran, int64_t before_peak,
                     const char *peak_from, double fraction)
{
    char x[32], y[32];
    memset(b, 0, sizeof *b);
    b->bytes = -1;
    if (isnan(fraction)) {
        snprintf(b->note, sizeof b->note, "switched off (--budget none)");
        return;
    }
    if (before_peak < 0) {
        snprintf(b->note, sizeof b->note,
                 "no before order to derive it from (give --before, or "
                 "report a file written by commsched optimize)");
        return;
    }
    if (!pipeline_ran) {
        b->bytes = before_peak;
        snprintf(b->note, sizeof b->note,
                 "no pipeline ran, so the budget is the before order's peak "
                 "per step, %s (%s)",
                 cli_bytes((double)before_peak, x, sizeof x), peak_from);
        return;
    }
    b->bytes = (int64_t)floor((double)before_peak * (1.0 + fraction));
    snprintf(b->note, sizeof b->note,
             "the before order's peak per step, %s (%s), \xC3\x97 (1 + %g) = "
             "%s, with %g the reorder_iterative_peak_memory_budget knob. Each "
             "memory-budgeted pass keeps its own result within that factor "
             "of its input's peak, so a pipeline of several can end above the "
             "line",
             cli_bytes((double)before_peak, x, sizeof x), peak_from, fraction,
             cli_bytes((double)b->bytes, y, sizeof y), fraction);
}

void cli_html_budget_overlap(cli_budget *b, int64_t before_peak,
                             int64_t before_time_peak, const char *peak_from,
                             double factor)
{
    char x[32], y[32];
    memset(b, 0, sizeof *b);
    b->bytes = -1;
    if (before_peak < 0) {
        snprintf(b->note, sizeof b->note,
                 "no before order to derive it from (give --before, or "
                 "report a file written by commsched optimize)");
        return;
    }
    if (isinf(factor)) {
        snprintf(b->note, sizeof b->note,
                 "none: the overlap pass ran with overlap_peak_budget=inf");
        return;
    }
    if (before_time_peak >= 0) {
        /* the curve is over time, and so is this budget (both peaks) */
        b->bytes = (int64_t)floor((double)before_time_peak * factor);
        snprintf(b->note, sizeof b->note,
                 "the before order's peak over simulated time, %s (%s), "
                 "\xC3\x97 %g = %s, with %g the overlap_peak_budget knob: the "
                 "overlap pass never ends above it, nor above that factor of "
                 "the peak per step",
                 cli_bytes((double)before_time_peak, x, sizeof x), peak_from,
                 factor, cli_bytes((double)b->bytes, y, sizeof y), factor);
        return;
    }
    b->bytes = (int64_t)floor((double)before_peak * factor);
    snprintf(b->note, sizeof b->note,
             "the before order's peak per step, %s (%s), \xC3\x97 %g = %s, "
             "with %g the overlap_peak_budget knob: the overlap pass never "
             "ends above it",
             cli_bytes((double)before_peak, x, sizeof x), peak_from, factor,
             cli_bytes((double)b->bytes, y, sizeof y), factor);
}

int cli_has_pass(const char *passes, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = passes; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int cli_write_html(const char *path, int svg, const commsched_sim *after,
                   const commsched_html_options *o)
{
    cli_out out = {0};
    commsched_error err = {0};
    int rc = cli_out_open(&out, path);
    if (rc != 0)
        return rc;
    commsched_status st = svg ? commsched_report_svg(out.f, after, o, &err)
                              : commsched_report_html(out.f, after, o, &err);
    if (st != COMMSCHED_OK) {
        cli_out_abort(&out);
        return cli_report(path, &err);
    }
    return cli_out_commit(&out);
}

/* ---- the command -------------------------------------------------------- */

/* Estimates and simulates g's own order with the memory curve. */
static int simulate(const char *name, const commsched_graph *g,
                    const cli_cost *cost, commsched_comm_streams streams,
                    commsched_sim **sim, commsched_cost_source **sources)
{
    commsched_error err = {0};
    double *runtime = NULL;
    int rc = cli_estimate(g, cost, &runtime, sources);
    if (rc != 0)
        return rc;
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.comm_streams = streams;
    so.flags |= COMMSCHED_SIM_MEMORY_CURVE | COMMSCHED_SIM_BOUND;
    if (commsched_sim_create(g, sim, &err) != COMMSCHED_OK ||
        commsched_sim_run(*sim, NULL, runtime, &so, &err) != COMMSCHED_OK)
        rc = cli_report(name, &err);
    free(runtime);
    return rc;
}

static int positive(const char *opt, const char *arg, uint32_t *out)
{
    char *end = NULL;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < 1 || v > 2000000000L)
        return cli_usage_error("report", "%s expects a positive integer, got "
                                         "\"%s\"",
                               opt, arg);
    *out = (uint32_t)v;
    return 0;
}

#define MAX_TRACES 1024

/* report --measured TRACE...: the figures per rank, the page of the
 * first rank's graph (the run's order before, the optimized one after). */
static int report_traces(const char *const *traces, int n, long rank,
                         const cli_cost *cost, commsched_comm_streams streams,
                         const char *out_path, int svg, int budget_given,
                         double fraction, commsched_html_options *ho)
{
    FILE *f = out_path && strcmp(out_path, "-") != 0 ? stdout : stderr;
    commsched_graph *g = NULL;
    commsched_schedule *s = NULL;
    commsched_run *run = NULL;
    commsched_sim *sa = NULL, *sb = NULL;
    commsched_cost_source *sources = NULL;
    commsched_html_pass_row *rows = NULL;
    double *runtime = NULL;
    commsched_error err = {0};
    commsched_report_context ctx = {0};
    cli_budget budget;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = cli_measured_overlap(traces[i], rank, cost, f,
                                  i == 0 ? &g : NULL, i == 0 ? &s : NULL,
                                  i == 0 ? &run : NULL);
    if (rc != 0)
        goto done;
    const char *name = strcmp(traces[0], "-") == 0 ? "<stdin>" : traces[0];
    if ((rc = simulate(name, g, cost, streams, &sb, NULL)) != 0 ||
        (rc = cli_estimate(g, cost, &runtime, &sources)) != 0)
        goto done;
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.comm_streams = streams;
    so.flags |= COMMSCHED_SIM_MEMORY_CURVE | COMMSCHED_SIM_BOUND;
    if (commsched_sim_create(g, &sa, &err) != COMMSCHED_OK ||
        commsched_sim_run_schedule(sa, s, runtime, &so, &err) !=
            COMMSCHED_OK) {
        rc = cli_report(name, &err);
        goto done;
    }
    size_t n_rows = 0;
    if ((rc = cli_pass_rows_from_run(g, run, &rows, &n_rows)) != 0)
        goto done;
    int64_t before_peak = commsched_sim_get_totals(sb)->peak_memory_step;
    /* the default pipeline's overlap pass keeps within the run's peak */
    if (budget_given)
        cli_html_budget(&budget, 1, before_peak, "the run's order", fraction);
    else
        cli_html_budget_overlap(&budget, before_peak,
                                commsched_sim_get_totals(sb)->peak_memory,
                                "the run's order", 1.0);
    ctx.device = cost->device.name;
    ctx.cost_model = commsched_comm_model_str(cost->opts.comm_model);
    ctx.sources = sources;
    ho->before = sb;
    ho->ctx = &ctx;
    ho->passes = commsched_default_pipeline();
    ho->memory_budget = budget.bytes;
    ho->memory_budget_note = budget.note;
    ho->pass_rows = rows;
    ho->n_pass_rows = n_rows;
    rc = cli_write_html(out_path, svg, sa, ho);
done:
    free(rows);
    free(runtime);
    free(sources);
    commsched_sim_destroy(sa);
    commsched_sim_destroy(sb);
    commsched_run_destroy(run);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    enum { O_BEFORE = 256, O_MEASURED, O_FORMAT, O_BUDGET, O_TITLE,
           O_MAXBARS, O_ROWS, O_DEVICE, O_MODEL, O_COSTS, O_STREAMS, O_TOPO,
           O_RANK };
    static const struct option opts[] = {
        {"before", required_argument, 0, O_BEFORE},
        {"measured", required_argument, 0, O_MEASURED},
        {"output", required_argument, 0, 'o'},
        {"format", required_argument, 0, O_FORMAT},
        {"budget", required_argument, 0, O_BUDGET},
        {"title", required_argument, 0, O_TITLE},
        {"max-bars", required_argument, 0, O_MAXBARS},
        {"rows", required_argument, 0, O_ROWS},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"comm-streams", required_argument, 0, O_STREAMS},
        {"toposort", no_argument, 0, O_TOPO},
        {"rank", required_argument, 0, O_RANK},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *before_path = NULL, *measured_path = NULL, *out_path = NULL;
    const char *traces[MAX_TRACES];
    int n_traces = 0;
    long rank = -1;
    const char *device = NULL, *model = NULL, *costs = NULL;
    int svg = 0, c, rc;
    double fraction = 0.2;
    int budget_given = 0;
    unsigned flags = 0;
    commsched_comm_streams streams = COMMSCHED_STREAMS_PER_GROUP;
    commsched_html_options ho;
    commsched_html_options_init(&ho);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_BEFORE: before_path = optarg; break;
        case O_MEASURED:
            if (n_traces == MAX_TRACES)
                return cli_usage_error("report", "at most %d --measured",
                                       MAX_TRACES);
            traces[n_traces++] = measured_path = optarg;
            break;
        case O_RANK: {
            char *end = NULL;
            rank = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || rank < 0 ||
                rank > 1000000000L)
                return cli_usage_error("report", "--rank expects a "
                                                 "non-negative integer, got "
                                                 "\"%s\"",
                                       optarg);
            break;
        }
        case 'o': out_path = optarg; break;
        case O_FORMAT:
            if (strcmp(optarg, "html") == 0)
                svg = 0;
            else if (strcmp(optarg, "svg") == 0)
                svg = 1;
            else
                return cli_usage_error("report", "--format takes html or svg");
            break;
        case O_BUDGET: {
            char *end = NULL;
            budget_given = 1;
            if (strcmp(optarg, "none") == 0) {
                fraction = NAN;
                break;
            }
            fraction = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(fraction >= 0) ||
                isinf(fraction))
                return cli_usage_error("report",
                                       "--budget expects a fraction >= 0 or "
                                       "none, got \"%s\"",
                                       optarg);
            break;
        }
        case O_TITLE: ho.title = optarg; break;
        case O_MAXBARS:
            if ((rc = positive("--max-bars", optarg, &ho.max_bars)) != 0)
                return rc;
            break;
        case O_ROWS:
            if ((rc = positive("--rows", optarg, &ho.max_rows)) != 0)
                return rc;
            break;
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_STREAMS:
            if (strcmp(optarg, "per-group") == 0)
                streams = COMMSCHED_STREAMS_PER_GROUP;
            else if (strcmp(optarg, "single") == 0)
                streams = COMMSCHED_STREAMS_SINGLE;
            else
                return cli_usage_error("report", "--comm-streams takes "
                                                 "per-group or single");
            break;
        case O_TOPO: flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("report", argc, argv, "o:h", opts);
        }
    }
    if (optind == argc && n_traces > 0) {
        /* Kineto traces, one per rank, without a graph of their own */
        if (before_path)
            return cli_usage_error("report", "--before needs AFTER.json; "
                                             "with traces alone the run's "
                                             "order is the before");
        cli_cost tcost;
        if ((rc = cli_cost_setup(&tcost, "report", device, model, costs)) != 0)
            return rc;
        rc = report_traces(traces, n_traces, rank, &tcost, streams, out_path,
                           svg, budget_given, fraction, &ho);
        cli_cost_fini(&tcost);
        return rc;
    }
    if (optind != argc - 1)
        return cli_usage_error("report", "expected exactly one AFTER.json");
    if (n_traces > 1)
        return cli_usage_error("report", "with AFTER.json, one --measured "
                                         "run");
    if (rank >= 0)
        return cli_usage_error("report", "--rank goes with --measured "
                                         "TRACE and no AFTER.json");
    const char *after_path = argv[optind];
    if (before_path && strcmp(before_path, "-") == 0 &&
        strcmp(after_path, "-") == 0)
        return cli_usage_error("report",
                               "AFTER.json and --before cannot both be "
                               "standard input");
    if (measured_path && strcmp(measured_path, "-") == 0 &&
        (strcmp(after_path, "-") == 0 ||
         (before_path && strcmp(before_path, "-") == 0)))
        return cli_usage_error("report", "only one input can be standard "
                                         "input");
    cli_cost cost;
    if ((rc = cli_cost_setup(&cost, "report", device, model, costs)) != 0)
        return rc;

    const char *after_name = strcmp(after_path, "-") == 0 ? "<stdin>"
                                                          : after_path;
    char *text = NULL;
    json_t *doc = NULL;
    commsched_graph *ga = NULL, *gb = NULL;
    commsched_sim *sa = NULL, *sb = NULL;
    commsched_cost_source *sources = NULL;
    commsched_measured_run *meas = NULL;
    commsched_html_pass_row *rows = NULL;
    commsched_error err = {0};
    cli_budget budget;
    commsched_report_context ctx = {0};

    /* AFTER.json is read once: the graph from the text, and the schedule
     * object (pass statistics, the before peak) from the same text. */
    if (!(text = cli_read_file(after_path, NULL))) {
        rc = EXIT_INPUT;
        goto done;
    }
    if (commsched_graph_load_string(text, flags, &ga, &err) != COMMSCHED_OK) {
        rc = cli_report(after_name, &err);
        goto done;
    }
    json_t *sched = NULL;
    if (strstr(text, "\"schedule\"")) {
        doc = json_loads(text, 0, NULL);
        sched = json_object_get(doc, "schedule");
        if (sched && !json_is_object(sched))
            sched = NULL;
    }
    free(text);
    text = NULL;
    if ((rc = simulate(after_name, ga, &cost, streams, &sa, &sources)) != 0)
        goto done;
    if (before_path) {
        const char *before_name =
            strcmp(before_path, "-") == 0 ? "<stdin>" : before_path;
        if ((rc = cli_load(before_path, flags, &gb)) != 0 ||
            (rc = simulate(before_name, gb, &cost, streams, &sb, NULL)) != 0)
            goto done;
    }
    if (measured_path &&
        commsched_measured_run_load_file(measured_path, ga, &meas, &err) !=
            COMMSCHED_OK) {
        rc = cli_report(strcmp(measured_path, "-") == 0 ? "<stdin>"
                                                        : measured_path,
                        &err);
        goto done;
    }
    size_t n_rows = 0;
    if (sched && (rc = pass_rows_from_json(sched, &rows, &n_rows)) != 0)
        goto done;

    /* The budget: the before order's per-step peak, from the schedule
     * object when optimize wrote one, else from --before. */
    const char *passes = sched ? json_string_value(json_object_get(sched,
                                                                   "passes"))
                               : NULL;
    int ran = passes && passes[0] && strcmp(passes, "none") != 0;
    json_t *bp = json_object_get(json_object_get(sched, "before"),
                                 "peak_memory");
    int64_t before_peak = -1;
    const char *peak_from = "";
    if (json_is_integer(bp)) {
        before_peak = (int64_t)json_integer_value(bp);
        peak_from = "from the file's schedule object";
    } else if (sb) {
        before_peak = commsched_sim_get_totals(sb)->peak_memory_step;
        peak_from = "from --before";
    }
    /* optimize records its knobs: use the budget the passes really had. */
    json_t *kb = json_object_get(json_object_get(sched, "knobs"),
                                 "reorder_iterative_peak_memory_budget");
    if (!budget_given && json_is_string(kb)) {
        char *end = NULL;
        double f = strtod(json_string_value(kb), &end);
        if (end && *end == '\0' && f >= 0 && !isinf(f))
            fraction = f;
    }
    /* The overlap pass (the default pipeline) has a budget of its own: a
     * factor of the before order's peak, which it never exceeds. */
    json_t *ob = json_object_get(json_object_get(sched, "knobs"),
                                 "overlap_peak_budget");
    double factor = 1.0;
    if (json_is_string(ob)) {
        char *end = NULL;
        double f = strtod(json_string_value(ob), &end);
        if (end && *end == '\0' && f >= 1)
            factor = f;
    }
    if (!budget_given && ran && cli_has_pass(passes, "overlap"))
        cli_html_budget_overlap(&budget, before_peak, -1, peak_from, factor);
    else
        cli_html_budget(&budget, ran, before_peak, peak_from, fraction);

    ctx.device = cost.device.name;
    ctx.cost_model = commsched_comm_model_str(cost.opts.comm_model);
    ctx.sources = sources;
    ho.before = sb;
    ho.ctx = &ctx;
    ho.passes = passes;
    ho.memory_budget = budget.bytes;
    ho.memory_budget_note = budget.note;
    ho.pass_rows = rows;
    ho.n_pass_rows = n_rows;
    ho.measured = meas;
    rc = cli_write_html(out_path, svg, sa, &ho);
done:
    free(text);
    free(rows);
    json_decref(doc);
    free(sources);
    commsched_measured_run_destroy(meas);
    commsched_sim_destroy(sa);
    commsched_sim_destroy(sb);
    commsched_graph_destroy(ga);
    commsched_graph_destroy(gb);
    cli_cost_fini(&cost);
    return rc;
}
