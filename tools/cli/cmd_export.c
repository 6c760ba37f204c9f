/* commsched export chakra GRAPH -o PREFIX — write a graph in another
 * tool's format (commsched_export_chakra, src/import/export_chakra.c;
 * docs/WORKLOADS.md), one file per rank, all or none. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/import.h"
#include "progress.h"

/* 1 when SIGINT, SIGTERM or SIGHUP (blocked) has arrived. */
static int interrupted(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGINT) == 1 ||
            sigismember(&pending, SIGTERM) == 1 ||
            sigismember(&pending, SIGHUP) == 1);
}

/* Copies the finished rank-0 file into another rank's output. */
static int copy_file(const char *from, FILE *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    char b[65536];
    size_t got;
    int rc = 0;
    while ((got = fread(b, 1, sizeof b, in)) > 0)
        if (fwrite(b, 1, got, to) != got) {
            rc = -1;
            break;
        }
    if (ferror(in))
        rc = -1;
    fclose(in);
    return rc;
}

/* Writes PREFIX.<rank>.et for ranks 0..ranks-1 (ranks 0: the largest
 * group's size), all files or none, Ctrl-C included. */
static int export_files(const commsched_graph *g, const double *runtime,
                        const char *prefix, long ranks, int exact)
{
    /* All or nothing holds against Ctrl-C too: the signals wait while a
     * file is written and are looked for between files, so an interrupt
     * removes the ranks already written before it ends the process (once
     * unblocked below). One file's write is the longest wait. Blocked
     * from the start: the save below may start the library's threads (a
     * large graph's lines are made on every core), and a thread inherits
     * the mask it is started with; one started unblocked would take the
     * signal itself, and its handler would end the process with the ranks
     * already written left behind. */
    sigset_t stop, saved;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &saved);
    if (ranks == 0) { /* the largest group's size */
        ranks = commsched_export_chakra_ranks(g);
        /* The cap --ranks has, for the default too: a group of 2^24 ranks
         * would have started 16.7 million files. */
        if (ranks > COMMSCHED_EXPORT_MAX_RANKS) {
            pthread_sigmask(SIG_SETMASK, &saved, NULL);
            fprintf(stderr,
                    "commsched export: the graph's largest group has more "
                    "than %ld ranks, and export writes one file per rank, at "
                    "most %ld: give --ranks N for the files to write\n",
                    COMMSCHED_EXPORT_MAX_RANKS, COMMSCHED_EXPORT_MAX_RANKS);
            return EXIT_RUNTIME;
        }
    }
    int rc = 0;
    size_t plen = strlen(prefix) + 32;
    char *path = malloc(plen), *first = malloc(plen);
    long done = 0;
    if (!path || !first) {
        fprintf(stderr, "commsched: out of memory\n");
        rc = EXIT_RUNTIME;
    }
    cli_progress progress;
    const char *base = strrchr(prefix, '/');
    cli_progress_begin(&progress, "files", (uint64_t)ranks,
                       "commsched export: writing %s.<rank>.et",
                       base ? base + 1 : prefix);
    for (long r = 0; r < ranks && rc == 0; r++) {
        if (interrupted()) {
            rc = EXIT_RUNTIME;
            break;
        }
        snprintf(path, plen, "%s.%ld.et", prefix, r);
        cli_out out;
        if ((rc = cli_out_open(&out, path)) != 0)
            break;
        commsched_error err = {0};
        errno = 0;
        int bad = r == 0 ? commsched_export_chakra(g, runtime, exact, out.f,
                                                   &err) != COMMSCHED_OK
                         : copy_file(first, out.f);
        if (bad && r == 0 && err.status != COMMSCHED_EIO) {
            cli_out_abort(&out);
            rc = cli_report(NULL, &err);
            break;
        }
        if (bad) {
            fprintf(stderr, "commsched: cannot write %s: %s\n", path,
                    errno ? strerror(errno) : "out of memory");
            cli_out_abort(&out);
            rc = EXIT_RUNTIME;
            break;
        }
        if ((rc = cli_out_commit(&out)) != 0)
            break;
        if (r == 0)
            snprintf(first, plen, "%s", path);
        done = r + 1;
        cli_progress_set(&progress, (uint64_t)done);
    }
    cli_progress_end(&progress);
    /* Once more, as late as can be: the last file, the line's erasure. */
    if (interrupted()) {
        fprintf(stderr, "commsched export: interrupted: removing the %ld "
                        "file%s already written\n",
                done, done == 1 ? "" : "s");
        rc = EXIT_RUNTIME;
    }
    if (rc != 0) /* all or nothing: remove the ranks already written */
        for (long r = 0; r < done; r++) {
            snprintf(path, plen, "%s.%ld.et", prefix, r);
            remove(path);
        }
    pthread_sigmask(SIG_SETMASK, &saved, NULL); /* a pending signal ends us */
    if (rc == 0)
        fprintf(stderr,
                "commsched export: note: %ld file%s %s.<rank>.et, %u nodes "
                "each\n",
                ranks, ranks == 1 ? "" : "s", prefix,
                commsched_graph_node_count(g));
    free(path);
    free(first);
    return rc;
}

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
    enum { O_RANKS = 256, O_DEVICE, O_MODEL, O_COSTS, O_FIELDS };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"ranks", required_argument, 0, O_RANKS},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"chakra-fields-only", no_argument, 0, O_FIELDS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *prefix = NULL, *device = NULL, *model = NULL, *costs = NULL;
    long ranks = 0;
    int c, exact = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': prefix = optarg; break;
        case O_RANKS: {
            char *end = NULL;
            ranks = strtol(optarg, &end, 10);
            if (!*optarg || *end || ranks < 1 || ranks > COMMSCHED_EXPORT_MAX_RANKS)
                return cli_usage_error("export",
                                       "--ranks expects 1..%ld, got \"%s\"",
                                       COMMSCHED_EXPORT_MAX_RANKS, optarg);
            break;
        }
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
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
    int rc = cli_cost_setup(&cost, "export", device, model, costs);
    if (rc)
        return rc;
    commsched_graph *g = NULL;
    double *runtime = NULL;
    if ((rc = cli_load(argv[optind + 1], 0, &g)) == 0 &&
        (rc = cli_estimate(g, &cost, &runtime, NULL)) == 0)
        rc = export_files(g, runtime, prefix, ranks, exact);
    free(runtime);
    commsched_graph_destroy(g);
    cli_cost_fini(&cost);
    return rc;
}
