/* commsched optimize FILE — run a pipeline of passes over the schedule and
 * write the graph in the new order with a "schedule" object describing the
 * run (DESIGN.md §2). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/memory.h"
#include "commsched/schedule.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched optimize [options] FILE\n"
            "\n"
            "Runs the scheduling passes over FILE's node order and writes the\n"
            "graph in the new order (same format, plus a \"schedule\" object).\n"
            "\n"
            "  -o, --output OUT  write here (default: standard output); written\n"
            "                    atomically, so a failed run leaves no file\n"
            "  --passes LIST     comma-separated passes; 'none' keeps the order\n"
            "  --report          print peak memory before and after\n"
            "  --toposort        repair a non-topological input order first\n");
}

typedef struct figures {
    int64_t peak;
    uint32_t peak_at;
} figures;

static int measure(const commsched_schedule *s, figures *out,
                   commsched_error *err)
{
    commsched_memory *m = NULL;
    if (commsched_memory_create(s, &m, err) != COMMSCHED_OK)
        return -1;
    out->peak = commsched_memory_peak(m, s, &out->peak_at);
    commsched_memory_destroy(m);
    return 0;
}

/* Only 'none' exists until the pass table lands (docs/PASSES.md). */
static int parse_passes(const char *list)
{
    if (!list || strcmp(list, "none") == 0 || list[0] == '\0')
        return 0;
    char *copy = strdup(list);
    if (!copy)
        return EXIT_RUNTIME;
    char *save = NULL;
    for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (strcmp(p, "none") != 0) {
            cli_usage_error("optimize", "unknown pass \"%s\"", p);
            free(copy);
            return EXIT_INPUT;
        }
    free(copy);
    return 0;
}

static void print_report(FILE *f, const commsched_graph *g, const figures *b,
                         const figures *a)
{
    char x[32], y[32];
    fprintf(f, "graph %s: %u nodes\n",
            commsched_graph_name(g) ? commsched_graph_name(g) : "(unnamed)",
            commsched_graph_node_count(g));
    fprintf(f, "%-14s %14s %14s\n", "", "before", "after");
    fprintf(f, "%-14s %14s %14s\n", "peak memory",
            cli_bytes((double)b->peak, x, sizeof x),
            cli_bytes((double)a->peak, y, sizeof y));
}

int cmd_optimize(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"passes", required_argument, 0, 'p'},
        {"report", no_argument, 0, 'r'},
        {"toposort", no_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *out_path = NULL, *passes = NULL;
    int report = 0, c;
    unsigned flags = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'p': passes = optarg; break;
        case 'r': report = 1; break;
        case 't': flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_usage_error("optimize", "bad option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("optimize", "expected exactly one FILE");
    int rc = parse_passes(passes);
    if (rc != 0)
        return rc;

    commsched_graph *g = NULL;
    commsched_schedule *s = NULL;
    uint32_t *order = NULL;
    commsched_error err = {0};
    figures before, after;
    cli_out out = {0};
    if ((rc = cli_load(argv[optind], flags, &g)) != 0)
        return rc;
    if (commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
        measure(s, &before, &err) != 0)
        goto fail;
    /* The pipeline runs here once passes exist; 'none' keeps the order. */
    if (commsched_schedule_check(s, 1, &err) != COMMSCHED_OK ||
        measure(s, &after, &err) != 0)
        goto fail;
    order = malloc((size_t)commsched_graph_node_count(g) * sizeof *order);
    if (!order) {
        commsched_error_set(&err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    if (commsched_schedule_to_array(s, order, &err) != COMMSCHED_OK)
        goto fail;
    char sched[256];
    snprintf(sched, sizeof sched,
             "{\"passes\": [], \"before\": {\"peak_memory\": %" PRId64 "}, "
             "\"after\": {\"peak_memory\": %" PRId64 "}, "
             "\"dropped_fake_edges\": []}",
             before.peak, after.peak);
    if ((rc = cli_out_open(&out, out_path)) != 0)
        goto done;
    if (commsched_graph_save_stream(g, order, sched, out.f, &err) !=
        COMMSCHED_OK) {
        cli_out_abort(&out);
        goto fail;
    }
    if ((rc = cli_out_commit(&out)) != 0)
        goto done;
    if (report)
        print_report(out.f == stdout || !out_path || strcmp(out_path, "-") == 0
                         ? stderr
                         : stdout,
                     g, &before, &after);
    goto done;
fail:
    rc = cli_report(argv[optind], &err);
done:
    free(order);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
    return rc;
}
