/* commsched CLI — helpers shared by the subcommands: loading with located
 * errors, exit codes, atomic output files, number formatting. */
#ifndef COMMSCHED_CLI_H
#define COMMSCHED_CLI_H

#include <stdio.h>

#include "commsched/graph.h"

/* Exit statuses (DESIGN.md §2). */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_INPUT = 2 };

/* A subcommand: argc/argv start at the subcommand's name. */
typedef int (*cli_command_fn)(int argc, char **argv);

typedef struct cli_command {
    const char *name;
    cli_command_fn run;
    const char *summary;
} cli_command;

/* Maps a status to the exit code: bad input 2, anything else 1. */
int cli_exit_code(commsched_status st);

/* Prints "commsched: FILE:LINE:COL: msg" / "commsched: FILE: path: msg" to
 * stderr and returns cli_exit_code(err->status). */
int cli_report(const char *file, const commsched_error *err);

/* Prints "commsched SUB: msg" to stderr and returns EXIT_INPUT. */
int cli_usage_error(const char *sub, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Loads a graph ("-" is stdin), printing a located error on failure.
 * Returns 0 or the exit code to use. */
int cli_load(const char *path, unsigned flags, commsched_graph **out);

/* An output file written atomically: data goes to a temporary file in the
 * same directory, renamed over `path` by cli_out_commit; cli_out_abort (or
 * any failure) removes it, so a failed run leaves no file behind. "-" or
 * NULL writes to stdout. */
typedef struct cli_out {
    FILE *f;
    char *path;
    char *tmp;
} cli_out;

int cli_out_open(cli_out *o, const char *path);
/* Returns 0, or EXIT_RUNTIME after printing why. */
int cli_out_commit(cli_out *o);
void cli_out_abort(cli_out *o);

/* "1.50 GiB", "512 B" into buf. */
const char *cli_bytes(double bytes, char *buf, size_t size);
/* "1.234 ms", "56.7 µs", "890 ns" into buf. */
const char *cli_time_ns(double ns, char *buf, size_t size);

/* The passes' statistics: the seed's tables, one per pass, or a JSON
 * array (a new reference; NULL on OOM). */
struct json_t;
#include "commsched/passes.h"
void cli_print_pass_stats(FILE *f, const commsched_graph *g,
                          const commsched_run *run);
struct json_t *cli_pass_stats_json(const commsched_graph *g,
                                   const commsched_run *run);

/* Subcommands. */
int cmd_validate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_generate(int argc, char **argv);

#endif /* COMMSCHED_CLI_H */
