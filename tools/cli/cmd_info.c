/* commsched info FILE — what is in a graph, in one screen. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commsched/analysis.h"
#include "commsched/cost.h"
#include "commsched/memory.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: commsched info [options] FILE\n"
               "       commsched info --measured TRACE [--rank N] [FILE]\n"
               "\n"
               "Prints node counts by kind, collectives by op and group with the\n"
               "bytes they move, buffer totals, peak memory (docs/FORMAT.md,\n"
               "\"Memory model (in brief)\") and the node where it happens, the\n"
               "ordering edges derived from in-place writes (docs/FORMAT.md,\n"
               "\"In-place writes\"), and the critical path in nodes and in time\n"
               "(runtimes from the file or the cost model).\n"
               "\n"
               CLI_COST_HELP
               "  --toposort        repair a non-topological input order first\n"
               "  --measured TRACE  a Kineto (PyTorch profiler) trace, .json or\n"
               "                    .json.gz: its comm/comp overlap by Holistic\n"
               "                    Trace Analysis's definition (share of NCCL\n"
               "                    kernel time with a compute kernel running),\n"
               "                    beside the same figure simulated for the graph\n"
               "                    imported from it, in the run's order and in\n"
               "                    the default pipeline's; FILE is then optional\n"
               "  --rank N          with --measured: the trace's device to read\n");
}

/* The edges derived from in-place writes (docs/FORMAT.md), the first few
 * by name: they constrain every pass, so a user who wonders why a node did
 * not move can see them. Nothing is printed for a graph without any. */
static void print_derived(const commsched_graph *g)
{
    enum { SHOWN = 8 };
    uint32_t n_nodes = commsched_graph_node_count(g), total = 0;
    for (uint32_t v = 0; v < n_nodes; v++) {
        const uint32_t *d;
        total += commsched_graph_node_derived_deps(g, v, &d);
    }
    if (total == 0)
        return;
    printf("in-place:     %u derived edge%s (each left node completes before "
           "the right one starts)\n",
           total, COMMSCHED_PLURAL(total));
    uint32_t shown = 0;
    for (uint32_t v = 0; v < n_nodes && shown < SHOWN; v++) {
        const uint32_t *d;
        uint32_t n = commsched_graph_node_derived_deps(g, v, &d);
        for (uint32_t k = 0; k < n && shown < SHOWN; k++, shown++)
            printf("              \"%s\" -> \"%s\"\n",
                   commsched_graph_node_name(g, d[k]),
                   commsched_graph_node_name(g, v));
    }
    if (total > shown)
        printf("              ... %u more\n", total - shown);
}

static int print_info(const commsched_graph *g, const cli_cost *cost)
{
    char b1[32], b2[32];
    uint32_t kinds[3] = {0};
    uint32_t ng = commsched_graph_group_count(g);
    uint32_t n_nodes = commsched_graph_node_count(g);
    uint32_t *count = calloc((size_t)ng * COMMSCHED_COLL_OP_COUNT + 1,
                             sizeof *count);
    double *bytes = calloc((size_t)ng * COMMSCHED_COLL_OP_COUNT + 1,
                           sizeof *bytes);
    double total = 0;
    if (!count || !bytes) {
        free(count);
        free(bytes);
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    for (uint32_t i = 0; i < n_nodes; i++) {
        commsched_coll_op op;
        uint32_t group;
        kinds[commsched_graph_node_kind(g, i)]++;
        if (commsched_graph_node_collective(g, i, &op, &group)) {
            size_t slot = (size_t)group * COMMSCHED_COLL_OP_COUNT + op;
            double b = commsched_cost_collective_bytes(g, i);
            count[slot]++;
            bytes[slot] += b;
            total += b;
        }
    }
    const char *name = commsched_graph_name(g);
    printf("graph:        %s\n", name ? name : "(unnamed)");
    printf("nodes:        %u (compute %u, collective %u, wait %u)\n",
           n_nodes, kinds[0], kinds[1], kinds[2]);
    uint32_t n_in = commsched_graph_input_count(g);
    uint32_t n_out = commsched_graph_output_count(g);
    printf("buffers:      %u (%u graph input%s, %u graph output%s)\n",
           commsched_graph_buffer_count(g), n_in, COMMSCHED_PLURAL(n_in),
           n_out, COMMSCHED_PLURAL(n_out));
    printf("groups:       %u\n", ng);
    print_derived(g);
    if (kinds[1]) {
        printf("collectives:  %-16s %-12s %8s %14s\n", "op", "group", "count",
               "bytes");
        for (uint32_t gi = 0; gi < ng; gi++)
            for (unsigned op = 0; op < COMMSCHED_COLL_OP_COUNT; op++) {
                size_t slot = (size_t)gi * COMMSCHED_COLL_OP_COUNT + op;
                if (!count[slot])
                    continue;
                printf("              %-16s %-12s %8u %14s\n",
                       commsched_coll_op_str((commsched_coll_op)op),
                       commsched_graph_group_name(g, gi), count[slot],
                       cli_bytes(bytes[slot], b1, sizeof b1));
            }
        printf("bytes moved:  %s\n", cli_bytes(total, b1, sizeof b1));
    }
    free(count);
    free(bytes);

    commsched_error err = {0};
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL;
    double *unit = NULL, *runtime = NULL;
    uint32_t *path = NULL, path_len = 0;
    double length = 0;
    int rc = EXIT_OK;
    if (commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
        commsched_memory_create(s, &m, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto cleanup;
    }
    uint32_t at = COMMSCHED_NONE;
    int64_t peak = commsched_memory_peak(m, s, &at);
    printf("memory:       baseline %s, peak %s",
           cli_bytes((double)commsched_memory_baseline(m), b1, sizeof b1),
           cli_bytes((double)peak, b2, sizeof b2));
    if (at != COMMSCHED_NONE)
        printf(" after \"%s\" allocates (position %u)", commsched_graph_node_name(g, at), at);
    printf("\n");
    unit = malloc((size_t)n_nodes * sizeof *unit);
    if (!unit) {
        fprintf(stderr, "commsched: out of memory\n");
        rc = EXIT_RUNTIME;
        goto cleanup;
    }
    for (uint32_t i = 0; i < n_nodes; i++)
        unit[i] = 1.0;
    if (commsched_graph_longest_path(g, COMMSCHED_EDGES_REAL, unit, &length,
                                     &path, &path_len, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto cleanup;
    }
    /* Two figures, one line each only when they differ: the critical path
     * in time (what bounds the step), and the longest chain in nodes when
     * it is another path (before, two lines named different paths by the
     * same words, or the same path twice). */
    double chain = length;
    uint32_t chain_first = path[0], chain_last = path[path_len - 1];
    commsched_free(path);
    path = NULL;
    commsched_cost_source *src = NULL;
    if ((rc = cli_estimate(g, cost, &runtime, &src)) != 0)
        goto cleanup;
    if (commsched_graph_longest_path(g, COMMSCHED_EDGES_REAL, runtime, &length,
                                     &path, &path_len, &err) != COMMSCHED_OK) {
        free(src);
        rc = cli_report(NULL, &err);
        goto cleanup;
    }
    uint32_t cnt[COMMSCHED_SOURCE_COUNT] = {0};
    for (uint32_t i = 0; i < n_nodes; i++)
        cnt[src[i]]++;
    free(src);
    uint32_t from_file = cnt[COMMSCHED_SOURCE_FILE],
             from_model = cnt[COMMSCHED_SOURCE_MODEL];
    char how[240], counted[160];
    if (cnt[COMMSCHED_SOURCE_MEASURED] || cnt[COMMSCHED_SOURCE_FITTED])
        snprintf(how, sizeof how, "runtimes: %s (%s, %s)",
                 commsched_cost_sources_text(cnt, counted, sizeof counted),
                 cost->device.name,
                 commsched_comm_model_str(cost->opts.comm_model));
    else if (from_model == 0)
        snprintf(how, sizeof how, "runtimes from the file");
    else if (from_file == 0)
        snprintf(how, sizeof how, "runtimes from the cost model (%s, %s)",
                 cost->device.name,
                 commsched_comm_model_str(cost->opts.comm_model));
    else
        snprintf(how, sizeof how,
                 "runtimes from the file for %u node%s, the cost model (%s, "
                 "%s) for %u",
                 from_file, COMMSCHED_PLURAL(from_file), cost->device.name,
                 commsched_comm_model_str(cost->opts.comm_model), from_model);
    printf("critical path: %s, %u node%s (\"%s\" ... \"%s\"); %s\n",
           cli_time_ns(length, b1, sizeof b1), path_len,
           COMMSCHED_PLURAL(path_len), commsched_graph_node_name(g, path[0]),
           commsched_graph_node_name(g, path[path_len - 1]), how);
    if (chain != (double)path_len || chain_first != path[0] ||
        chain_last != path[path_len - 1])
        printf("longest chain: %.0f node%s (\"%s\" ... \"%s\"), in nodes "
               "rather than time\n",
               chain, COMMSCHED_PLURAL(chain),
               commsched_graph_node_name(g, chain_first),
               commsched_graph_node_name(g, chain_last));
cleanup:
    free(runtime);
    commsched_free(path);
    free(unit);
    commsched_memory_destroy(m);
    commsched_schedule_destroy(s);
    return rc;
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {{"toposort", no_argument, 0, 't'},
                                         {"device", required_argument, 0, 'd'},
                                         {"cost-model", required_argument, 0, 'm'},
                                         {"costs", required_argument, 0, 'c'},
                                         {"measured", required_argument, 0, 'M'},
                                         {"rank", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    unsigned flags = 0;
    const char *device = NULL, *model = NULL, *measured = NULL;
    const char *costs = NULL;
    long rank = -1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'd': device = optarg; break;
        case 'm': model = optarg; break;
        case 'c': costs = optarg; break;
        case 'M': measured = optarg; break;
        case 'r': {
            char *end = NULL;
            rank = strtol(optarg, &end, 10);
            if (!*optarg || *end || rank < 0 || rank > 1 << 24)
                return cli_usage_error("info", "--rank expects a device "
                                               "number, got \"%s\"",
                                       optarg);
            break;
        }
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("info", argc, argv, "h", opts);
        }
    }
    if (optind != argc - 1 && !(measured && optind == argc))
        return cli_usage_error("info", "expected exactly one FILE");
    cli_cost cost;
    int rc = cli_cost_setup(&cost, "info", device, model, costs);
    if (rc != 0)
        return rc;
    if (measured) {
        rc = cli_measured_overlap(measured, rank, &cost, stdout, NULL, NULL,
                                  NULL);
        if (rc == 0 && optind < argc)
            printf("\n");
    }
    commsched_graph *g = NULL;
    if (rc == 0 && optind < argc && (rc = cli_load(argv[optind], flags, &g)) == 0)
        rc = print_info(g, &cost);
    commsched_graph_destroy(g);
    cli_cost_fini(&cost);
    return rc;
}
