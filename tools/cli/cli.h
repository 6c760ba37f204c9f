/* commsched CLI — helpers shared by the subcommands: loading with located
 * errors, exit codes, atomic output files, number formatting. */
#ifndef COMMSCHED_CLI_H
#define COMMSCHED_CLI_H

#include <stdio.h>

#include "commsched/cost.h"
#include "commsched/graph.h"
#include "commsched/import.h"

/* Exit statuses (README.md "Usage"). */
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

/* The message for what getopt_long refused (it returned '?' or ':'; main
 * sets opterr = 0 so getopt itself prints nothing): names the argument --
 * an unknown option with the closest one when it looks misspelt ("did you
 * mean"), an ambiguous abbreviation with its candidates, a missing or an
 * unexpected value. shortopts and opts: what was given to getopt_long.
 * Returns EXIT_INPUT. */
struct option;
int cli_bad_option(const char *sub, int argc, char **argv,
                   const char *shortopts, const struct option *opts);

/* Prints " (did you mean \"PREFIXNAME\"?)" to f when commsched_name_suggest
 * finds a name close to word[0..len) in the table (same arguments); returns
 * 1 when it printed. */
int cli_did_you_mean(FILE *f, const char *prefix, const char *word, size_t len,
                     const char *const *names, size_t count, size_t stride);

/* Reads a whole input file ("-": stdin; a directory refused) into a
 * NUL-terminated malloc'ed buffer (*len: its length, without the NUL; len
 * may be NULL). On failure prints why, in the one wording every
 * subcommand uses ("commsched: FILE: cannot open: <strerror>", cannot
 * read, out of memory), and returns NULL. */
char *cli_read_file(const char *path, size_t *len);

/* Loads a graph ("-" is stdin), printing a located error on failure:
 * commsched_graph_load_any, so a file that is a Chakra binary trace by
 * content is imported as `commsched import chakra FILE` would, with its
 * defaults (flags do not apply: the importer orders the nodes as Chakra's
 * feeder does), and goes straight to the passes without a JSON copy.
 * Returns 0 or the exit code to use. */
int cli_load(const char *path, unsigned flags, commsched_graph **out);
/* Gives the pages of freed heap memory back to the system (glibc; nothing
 * elsewhere). cli_load does after a Chakra import; see cli.c for when it
 * pays. */
void cli_release_freed_pages(void);

/* An output file written atomically: data goes to a temporary file in the
 * same directory, renamed over `path` by cli_out_commit; cli_out_abort (or
 * any failure) removes it, so a failed run leaves no file behind. "-" or
 * NULL writes to stdout. Only regular files (or new names) are replaced
 * that way: a symlink to one has its target replaced (keeping the
 * target's mode), and anything else -- a device such as /dev/null, a FIFO,
 * a terminal, /dev/stdout or /dev/fd/N -- is opened and written in place,
 * since renaming over it would destroy it or bypass its reader.
 * While the temporary file exists, SIGINT, SIGTERM and SIGHUP remove it
 * before the process ends (tmpfiles.c). */
typedef struct cli_out {
    FILE *f;
    char *path; /* where the data lands: a symlink's resolved target */
    char *tmp;  /* NULL when written in place */
    int slot;   /* tmp's cli_tmp_register slot; -1: none */
} cli_out;

/* Registers a temporary file to be removed if a signal ends the process
 * (tmpfiles.c); path is copied. Returns the slot for cli_tmp_release, or
 * -1 when the path is too long or every slot is taken. */
int cli_tmp_register(const char *path);
/* Stops protecting a slot (after the file was renamed or removed). */
void cli_tmp_release(int slot);

int cli_out_open(cli_out *o, const char *path);
/* Returns 0, or EXIT_RUNTIME after printing why. */
int cli_out_commit(cli_out *o);
void cli_out_abort(cli_out *o);

/* A byte count as a user writes one: "512", "64M", "2G", "1.5GiB" (K, M,
 * G, T with or without "iB": powers of 1024). 0 and *out, or -1 when s is
 * not one (or is 0, or past 2^62). */
int cli_parse_bytes(const char *s, uint64_t *out);

/* A generator's size check, before it allocates anything: `nodes` (what
 * `option` asks for) past the format's limit of 2^32 - 2 nodes is bad
 * input (exit 2); past this machine's memory, at CLI_BYTES_PER_NODE, a
 * resource limit (exit 1), each message naming the option and the limit.
 * 0 when it fits. */
#define CLI_BYTES_PER_NODE 1024.0
int cli_check_graph_size(const char *sub, const char *option, double nodes);

/* "1.50 GiB", "512 B" into buf. */
const char *cli_bytes(double bytes, char *buf, size_t size);
/* "1.234 ms", "56.7 µs", "890 ns" into buf. */
const char *cli_time_ns(double ns, char *buf, size_t size);

/* The passes' statistics as the seed's tables, one per pass (as JSON:
 * commsched_run_stats_write_json). */
#include "commsched/passes.h"
void cli_print_pass_stats(FILE *f, const commsched_graph *g,
                          const commsched_run *run);

/* The cost model as the CLI configures it: --device NAME|FILE,
 * --cost-model nccl|inductor and --costs TRACE. `device` holds the
 * profile and `measured` the tables of a calibrated profile file,
 * `trace` those of --costs (consulted first, the profile's after);
 * opts points into them, so a cli_cost must not be copied after
 * cli_cost_setup, and cli_cost_fini frees the tables. */
typedef struct cli_cost {
    commsched_device device;
    commsched_costs *measured, *trace;
    commsched_cost_options opts;
} cli_cost;

/* Fills c from the option values (NULL: h100, nccl, no trace). On a bad
 * value prints a located error ("commsched: prof.json: nccl.channels:
 * ...") and returns the exit code (2); 0 on success. Either way c is
 * ready for cli_cost_fini. */
int cli_cost_setup(cli_cost *c, const char *sub, const char *device,
                   const char *model, const char *costs_trace);
void cli_cost_fini(cli_cost *c);

/* Every node's runtime (malloc'ed arrays the caller frees; sources may be
 * NULL). Returns 0 or an exit code after printing why. */
int cli_estimate(const commsched_graph *g, const cli_cost *c, double **runtime,
                 commsched_cost_source **sources);

/* Help text for the two options above, shared by every command. */
#define CLI_COST_HELP                                                          \
    "  --device D        device profile: h100 (default), a100, b200, or a\n"   \
    "                    JSON profile file (docs/COST.md)\n"                   \
    "  --cost-model M    collective model: nccl (default: ring/tree x\n"       \
    "                    LL/LL128/Simple, fastest) or inductor (Inductor's\n"  \
    "                    canonical ring + LL estimate)\n"                      \
    "  --costs TRACE     price the nodes a Kineto trace measured from it,\n"   \
    "                    over their runtime_ns (kernels by name and place\n"   \
    "                    in the step, collectives by op, group and size;\n"    \
    "                    docs/COST.md), the file and profile elsewhere\n"

/* The HTML report (cmd_report.c), shared by `report` and `optimize --html`.
 * The memory budget line: the before order's per-step peak x (1 +
 * fraction) when a pipeline ran, else the before peak; fraction NAN or no
 * before peak (< 0): no line. `note` says how it was derived, for the
 * page. */
#include "commsched/report.h"
typedef struct cli_budget {
    int64_t bytes; /* -1: no line */
    char note[480];
} cli_budget;
void cli_html_budget(cli_budget *b, int pipeline_ran, int64_t before_peak,
                     const char *peak_from, double fraction);
/* The same for a pipeline with the overlap pass: the before peak x its
 * overlap_peak_budget factor (inf: no line). */
/* before_time_peak: the before order's peak over simulated time when the
 * budget holds for it too (overlap_peak_model=both; the line is then
 * drawn there, on the time curve), -1 for the per-step model. */
void cli_html_budget_overlap(cli_budget *b, int64_t before_peak,
                             int64_t before_time_peak, const char *peak_from,
                             double factor);
/* 1 when the comma-separated pipeline runs pass `name`. */
int cli_has_pass(const char *passes, const char *name);
/* The passes' per-node statistics as the page's rows (malloc'ed; names
 * borrowed from g and run). Returns 0 or an exit code after printing why. */
int cli_pass_rows_from_run(const commsched_graph *g, const commsched_run *run,
                           commsched_html_pass_row **rows, size_t *n);
/* Writes the page (svg: the timeline alone) to path atomically. Returns 0
 * or an exit code after printing why. */
int cli_write_html(const char *path, int svg, const commsched_sim *after,
                   const commsched_html_options *o);

/* Monotonic clock in seconds, for --verbose timings. */
double cli_now(void);

/* Subcommands. */
int cmd_validate(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* The importers (include/commsched/import.h) as the CLI runs them: the
 * options' callbacks print notes and warnings as "commsched import:
 * note: FILE: text" and draw "commsched import: reading FILE" on a
 * terminal (progress.h). cli_import_begin sets them on o (after
 * commsched_import_options_init); `path` names the reading line. */
typedef struct cli_import {
    struct cli_progress *p; /* malloc'ed by cli_import_begin */
    const char *name;       /* the file's base name, for the line */
    int drawing;
} cli_import;
void cli_import_begin(cli_import *ci, commsched_import_options *o,
                      const char *path);
void cli_import_end(cli_import *ci);
/* Runs an importer with o: 0 with *out, or after printing the located
 * error "commsched: FILE...: why" the exit code (cli_exit_code). */
typedef commsched_status (*cli_importer_fn)(const char *path,
                                            const commsched_import_options *o,
                                            commsched_graph **out,
                                            commsched_error *err);
int cli_import_run(cli_importer_fn fn, const char *path,
                   commsched_import_options *o, commsched_graph **out);
/* `info --measured TRACE` and `report --measured TRACE`
 * (measured_overlap.c): prints to f the Kineto trace's comm/comp overlap
 * by HTA's definition beside the simulated figures. rank: the device to
 * read, -1 for the only one. g_out non-NULL: *g_out, *s_out, *run_out get
 * the imported graph, the optimized order and the pipeline's record (the
 * caller destroys them). Returns 0 or an exit code after printing why. */
int cli_measured_overlap(const char *trace, long rank, const cli_cost *cost,
                         FILE *f, commsched_graph **g_out,
                         commsched_schedule **s_out, commsched_run **run_out);

#endif /* COMMSCHED_CLI_H */
