/* commsched simulate FILE — run the simulator (docs/REPORTS.md "What the figures mean") over the
 * file's order and report it: the overlap table, the same figures as JSON,
 * and optionally a Chrome trace for Perfetto. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commsched/report.h"
#include "commsched/simulate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched simulate [options] FILE\n"
            "\n"
            "Simulates FILE's node order: one compute stream, one comm stream\n"
            "per process group; async collectives overlap compute until their\n"
            "wait. Prints, per collective, its comm time (and whether the file\n"
            "or the model gave it), queue delay, compute overlapped, exposed\n"
            "time and issue/wait positions; then makespan against the lower\n"
            "bound, efficiency, exposed comm, overlap and peak memory.\n"
            "\n"
            CLI_COST_HELP
            "  --comm-streams M  per-group (default) or single: one stream for\n"
            "                    every collective\n"
            "  --format F        table or json (docs/REPORTS.md); default:\n"
            "                    table on a terminal or with --summary or\n"
            "                    --rows, else json\n"
            "  -o, --output OUT  write the report here (default: standard output)\n"
            "  --trace OUT.json  also write a Chrome trace (Perfetto,\n"
            "                    chrome://tracing): a track per stream, a memory\n"
            "                    counter, arrows from each collective to its wait\n"
            "  --rows N          table: only the first N collectives\n"
            "  --summary         table: totals only\n"
            "  --verbose         print each stage's wall time to standard error\n"
            "  --toposort        repair a non-topological input order first\n");
}

static int write_trace(const char *path, const commsched_sim *sim,
                       const commsched_report_context *ctx)
{
    cli_out t = {0};
    commsched_error err = {0};
    int rc = cli_out_open(&t, path);
    if (rc != 0)
        return rc;
    if (commsched_report_trace(t.f, sim, ctx, &err) != COMMSCHED_OK) {
        cli_out_abort(&t);
        return cli_report(path, &err);
    }
    return cli_out_commit(&t);
}

int cmd_simulate(int argc, char **argv)
{
    enum { O_DEVICE = 256, O_MODEL, O_COSTS, O_STREAMS, O_FORMAT, O_TRACE, O_ROWS,
           O_SUMMARY, O_VERBOSE, O_TOPO };
    static const struct option opts[] = {
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"comm-streams", required_argument, 0, O_STREAMS},
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"trace", required_argument, 0, O_TRACE},
        {"rows", required_argument, 0, O_ROWS},
        {"summary", no_argument, 0, O_SUMMARY},
        {"verbose", no_argument, 0, O_VERBOSE},
        {"toposort", no_argument, 0, O_TOPO},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *device = NULL, *model = NULL, *format = NULL, *costs = NULL;
    const char *out_path = NULL, *trace_path = NULL;
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_BOUND;
    commsched_report_context ctx = {0};
    int verbose = 0, c, rc;
    unsigned flags = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_STREAMS:
            if (strcmp(optarg, "per-group") == 0)
                so.comm_streams = COMMSCHED_STREAMS_PER_GROUP;
            else if (strcmp(optarg, "single") == 0)
                so.comm_streams = COMMSCHED_STREAMS_SINGLE;
            else
                return cli_usage_error("simulate",
                                       "--comm-streams takes per-group or "
                                       "single");
            break;
        case O_FORMAT: format = optarg; break;
        case 'o': out_path = optarg; break;
        case O_TRACE: trace_path = optarg; break;
        case O_ROWS: {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 1 || v > 2000000000L)
                return cli_usage_error("simulate",
                                       "--rows expects a positive integer, "
                                       "got \"%s\"",
                                       optarg);
            ctx.max_rows = (uint32_t)v;
            break;
        }
        case O_SUMMARY: ctx.totals_only = 1; break;
        case O_VERBOSE: verbose = 1; break;
        case O_TOPO: flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("simulate", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("simulate", "expected exactly one FILE");
    int to_file = out_path && strcmp(out_path, "-") != 0;
    /* --summary and --rows shape the table: asking for them is asking for
     * the table, wherever it goes (`simulate g.json --summary | less`). */
    int table_options = ctx.totals_only || ctx.max_rows;
    if (!format)
        format = table_options || (!to_file && isatty(STDOUT_FILENO))
                     ? "table"
                     : "json";
    if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
        return cli_usage_error("simulate", "--format takes table or json");
    if (table_options && strcmp(format, "table") != 0)
        return cli_usage_error("simulate",
                               "--summary and --rows shape the table; "
                               "--format json has every row");
    if (trace_path && out_path && strcmp(trace_path, out_path) == 0)
        return cli_usage_error("simulate",
                               "--trace and --output name the same file");
    if (trace_path && strcmp(trace_path, "-") == 0 &&
        (!out_path || strcmp(out_path, "-") == 0))
        return cli_usage_error("simulate",
                               "--trace - needs --output to a file");
    if (trace_path)
        so.flags |= COMMSCHED_SIM_MEMORY_CURVE;
    cli_cost cost;
    if ((rc = cli_cost_setup(&cost, "simulate", device, model, costs)) != 0)
        return rc;

    commsched_graph *g = NULL;
    commsched_sim *sim = NULL;
    double *runtime = NULL;
    commsched_cost_source *sources = NULL;
    commsched_error err = {0};
    cli_out out = {0};
    const char *in_path = argv[optind];
    const char *in_name = strcmp(in_path, "-") == 0 ? "<stdin>" : in_path;
    double t0 = cli_now();
    if ((rc = cli_load(in_path, flags, &g)) != 0)
        goto done;
    double t1 = cli_now();
    if ((rc = cli_estimate(g, &cost, &runtime, &sources)) != 0)
        goto done;
    double t2 = cli_now();
    if (commsched_sim_create(g, &sim, &err) != COMMSCHED_OK ||
        commsched_sim_run(sim, NULL, runtime, &so, &err) != COMMSCHED_OK) {
        rc = cli_report(in_name, &err);
        goto done;
    }
    double t3 = cli_now();
    ctx.device = cost.device.name;
    ctx.cost_model = commsched_comm_model_str(cost.opts.comm_model);
    ctx.sources = sources;
    if ((rc = cli_out_open(&out, out_path)) != 0)
        goto done;
    commsched_status st =
        strcmp(format, "json") == 0
            ? commsched_report_json(out.f, sim, &ctx, &err)
            : commsched_report_table(out.f, sim, &ctx, &err);
    if (st != COMMSCHED_OK) {
        cli_out_abort(&out);
        rc = cli_report(NULL, &err);
        goto done;
    }
    if ((rc = cli_out_commit(&out)) != 0)
        goto done;
    double t4 = cli_now();
    if (trace_path && (rc = write_trace(trace_path, sim, &ctx)) != 0)
        goto done;
    double t5 = cli_now();
    if (verbose) {
        fprintf(stderr,
                "commsched simulate: %u nodes; load %.1f ms, estimate %.1f ms, "
                "simulate %.1f ms, report %.1f ms",
                commsched_graph_node_count(g), 1e3 * (t1 - t0),
                1e3 * (t2 - t1), 1e3 * (t3 - t2), 1e3 * (t4 - t3));
        if (trace_path)
            fprintf(stderr, ", trace %.1f ms", 1e3 * (t5 - t4));
        fprintf(stderr, "\n");
    }
done:
    free(runtime);
    free(sources);
    commsched_sim_destroy(sim);
    commsched_graph_destroy(g);
    cli_cost_fini(&cost);
    return rc;
}
