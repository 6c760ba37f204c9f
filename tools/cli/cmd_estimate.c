/* commsched estimate FILE — every node's runtime estimate, where it came
 * from (file / model / none) and the model's cost tuple, so a user can see
 * why the simulator believes what it does before trusting a schedule. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commsched/memory.h"
#include "commsched/report.h"
#include "commsched/schedule.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched estimate [options] FILE\n"
            "\n"
            "Prints every node's runtime estimate in file order: the runtime the\n"
            "simulator uses and its source (file: the node's runtime_ns; model:\n"
            "the cost model; none: nothing to estimate from, costs 0), then the\n"
            "model's cost tuple: latency, bandwidth term, computation and memory\n"
            "delta (bytes allocated minus bytes freed after the node, in file\n"
            "order). runtime = latency + max(bandwidth, computation).\n"
            "\n"
            CLI_COST_HELP
            "  --format F        table (default on a terminal) or json\n"
            "  -o, --output OUT  write here (default: standard output)\n"
            "  --toposort        repair a non-topological input order first\n");
}

int cmd_estimate(int argc, char **argv)
{
    enum { O_DEVICE = 256, O_MODEL, O_COSTS, O_FORMAT, O_TOPO };
    static const struct option opts[] = {
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"toposort", no_argument, 0, O_TOPO},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *device = NULL, *model = NULL, *format = NULL, *out_path = NULL;
    const char *costs = NULL;
    unsigned flags = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_FORMAT: format = optarg; break;
        case 'o': out_path = optarg; break;
        case O_TOPO: flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("estimate", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("estimate", "expected exactly one FILE");
    int to_file = out_path && strcmp(out_path, "-") != 0;
    if (!format)
        format = !to_file && isatty(STDOUT_FILENO) ? "table" : "json";
    if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
        return cli_usage_error("estimate", "--format takes table or json");
    cli_cost cost;
    if ((rc = cli_cost_setup(&cost, "estimate", device, model, costs)) != 0)
        return rc;

    commsched_graph *g = NULL;
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL;
    commsched_error err = {0};
    cli_out out = {0};
    if ((rc = cli_load(argv[optind], flags, &g)) != 0)
        goto done;
    if (commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
        commsched_memory_create(s, &m, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto done;
    }
    if ((rc = cli_out_open(&out, out_path)) != 0)
        goto done;
    commsched_status st =
        strcmp(format, "json") == 0
            ? commsched_report_estimates_json(out.f, g, &cost.opts, m, &err)
            : commsched_report_estimates_table(out.f, g, &cost.opts, m, &err);
    if (st != COMMSCHED_OK) {
        cli_out_abort(&out);
        rc = cli_report(NULL, &err);
        goto done;
    }
    rc = cli_out_commit(&out);
done:
    commsched_memory_destroy(m);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
    cli_cost_fini(&cost);
    return rc;
}
