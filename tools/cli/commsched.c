/* commsched — the command-line tool: a table of subcommands. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commsched/config.h"

static const cli_command commands[] = {
    {"validate", cmd_validate, "check a graph file; silent when it is valid"},
    {"info", cmd_info, "summarize a graph: counts, bytes, peak memory, critical path"},
    {"optimize", cmd_optimize, "run scheduling passes and write the new order"},
    {"tune", cmd_tune, "search pipelines and knobs in parallel for the fastest order within a memory budget"},
    {"estimate", cmd_estimate, "print every node's runtime estimate, its source and cost tuple"},
    {"simulate", cmd_simulate, "simulate the schedule: overlap table, JSON or Chrome trace"},
    {"report", cmd_report, "write the overlap report as one HTML page (or an SVG timeline)"},
    {"run", cmd_run, "execute the schedule on MPI ranks, measured against the prediction"},
    {"generate", cmd_generate, "write a synthetic graph: chain, or a transformer step (fsdp, ddp, tp, moe, 2d)"},
    {"import", cmd_import, "convert an ASTRA-sim text workload or a Chakra trace (.et or JSON)"},
    {"calibrate", cmd_calibrate, "fit measured costs from profiler traces into a device profile"},
    {"export", cmd_export, "write a graph as Chakra .et traces, one per rank, for ASTRA-sim"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched <command> [options] [FILE]\n"
            "       commsched --help | --version\n"
            "\n"
            "Orders a training step's compute, collective and wait nodes so\n"
            "communication hides behind compute without raising peak memory.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "FILE is a graph in commsched format v1 (docs/FORMAT.md); '-' is\n"
            "standard input. A Chakra binary trace (.et) is read as well, as\n"
            "'commsched import chakra FILE' reads it (told apart by content).\n"
            "'commsched <command> --help' describes a command.\n"
            "Exit status: 0 success, 1 runtime failure, 2 bad input.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_INPUT;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("commsched %s\n", COMMSCHED_VERSION_STRING);
        return EXIT_OK;
    }
    size_t n = sizeof commands / sizeof commands[0];
    /* Every refusal is worded by cli_bad_option, naming the argument. */
    opterr = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    static const char *const top_options[] = {"help", "version"};
    int dashes = strncmp(argv[1], "--", 2) == 0;
    fprintf(stderr, "commsched: unknown %s \"%s\"",
            dashes ? "option" : "command", argv[1]);
    if (!(dashes ? cli_did_you_mean(stderr, "--", argv[1] + 2,
                                    strlen(argv[1] + 2), top_options, 2,
                                    sizeof top_options[0])
                 : cli_did_you_mean(stderr, "", argv[1], strlen(argv[1]),
                                    &commands[0].name, n,
                                    sizeof commands[0])))
        fprintf(stderr, " (see 'commsched --help')");
    fprintf(stderr, "\n");
    return EXIT_INPUT;
}
