/* commsched export chakra GRAPH -o PREFIX — write a graph in another
 * tool's format (tools/import/export_chakra.c; docs/WORKLOADS.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched export chakra [options] GRAPH -o PREFIX\n"
            "\n"
            "Writes the graph, in its order (an optimized schedule included),\n"
            "as Chakra binary execution traces, one per rank, named as\n"
            "ASTRA-sim expects: PREFIX.0.et, PREFIX.1.et, ... Compute\n"
            "durations come from the file or the cost model; collectives carry\n"
            "comm_type, comm_size and their group as pg_name. The exact graph\n"
            "rides along in commsched.* attributes, so `commsched import\n"
            "chakra PREFIX.0.et` gives it back unchanged.\n"
            "\n"
            "  -o, --output PREFIX  where to write (required)\n"
            "  --ranks N            files to write (default: the largest\n"
            "                       group's size, 1 without collectives)\n"
            "  --chakra-fields-only  leave the commsched.* attributes out:\n"
            "                       the files hold what a PyTorch trace\n"
            "                       converted by Chakra holds (a quarter of\n"
            "                       the size), and import as such a trace does\n"
            CLI_COST_HELP
            "\n"
            "All files or none: a failure removes those already written.\n");
}

int cmd_export(int argc, char **argv)
{
    enum { O_RANKS = 256, O_DEVICE, O_MODEL, O_FIELDS };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"ranks", required_argument, 0, O_RANKS},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"chakra-fields-only", no_argument, 0, O_FIELDS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *prefix = NULL, *device = NULL, *model = NULL;
    long ranks = 0;
    int c, exact = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': prefix = optarg; break;
        case O_RANKS: {
            char *end = NULL;
            ranks = strtol(optarg, &end, 10);
            if (!*optarg || *end || ranks < 1 || ranks > EXPORT_MAX_RANKS)
                return cli_usage_error("export",
                                       "--ranks expects 1..%ld, got \"%s\"",
                                       EXPORT_MAX_RANKS, optarg);
            break;
        }
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_FIELDS: exact = 0; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("export", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 2 || strcmp(argv[optind], "chakra") != 0)
        return cli_usage_error("export", "expected \"chakra\" and one GRAPH");
    if (!prefix || !*prefix)
        return cli_usage_error("export", "-o PREFIX is required");
    /* '-' is standard output everywhere else; here it would be a prefix
     * ("-.0.et", ...), and one file per rank cannot go to a stream. */
    if (strcmp(prefix, "-") == 0)
        return cli_usage_error("export",
                               "-o -: export writes one file per rank "
                               "(PREFIX.0.et, PREFIX.1.et, ...), not standard "
                               "output: give a PREFIX");
    cli_cost cost;
    int rc = cli_cost_setup(&cost, "export", device, model);
    if (rc)
        return rc;
    commsched_graph *g = NULL;
    if ((rc = cli_load(argv[optind + 1], 0, &g)) != 0)
        return rc;
    double *runtime = NULL;
    if ((rc = cli_estimate(g, &cost, &runtime, NULL)) == 0)
        rc = export_chakra(g, runtime, prefix, ranks, exact);
    free(runtime);
    commsched_graph_destroy(g);
    return rc;
}
