/* commsched validate FILE — silent on success, located error otherwise. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "commsched/schedule.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: commsched validate [--toposort] [--races] FILE\n"
               "\n"
               "Loads FILE and runs every check of docs/FORMAT.md. Prints nothing\n"
               "and exits 0 when the graph is valid; otherwise prints the first\n"
               "problem as FILE:LINE:COL (syntax) or FILE: JSON.path (semantics)\n"
               "and exits 2.\n"
               "\n"
               "  --toposort   accept a node order that is not topological (it is\n"
               "               repaired); a dependency cycle is still an error\n"
               "  --races      also run the race checker on the node order: no two\n"
               "               nodes in flight at once (an async collective until\n"
               "               its wait) write/write or read/write one buffer\n"
               "               (docs/FORMAT.md, \"In-place writes\")\n");
}

int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"toposort", no_argument, 0, 't'},
                                         {"races", no_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    unsigned flags = 0;
    int races = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case 'r': races = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("validate", argc, argv, "h", opts);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("validate", "expected exactly one FILE");
    commsched_graph *g = NULL;
    int rc = cli_load(argv[optind], flags, &g);
    if (rc == 0 && races) {
        commsched_schedule *s = NULL;
        commsched_error err = {0};
        if (commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
            commsched_schedule_check_races(s, &err) != COMMSCHED_OK)
            rc = cli_report(argv[optind], &err);
        commsched_schedule_destroy(s);
    }
    commsched_graph_destroy(g);
    return rc;
}
