/* commsched tune — what the command (cmd_tune.c: options, one graph's
 * table and JSON, the best order) shares with the search over many graphs
 * and MPI ranks (tune_many.c: inputs, result files, the summary). */
#ifndef COMMSCHED_TUNE_CLI_H
#define COMMSCHED_TUNE_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "commsched/commsched.h"

/* What the command line asked for. */
typedef struct tune_cli {
    commsched_tune_options to;
    const char *out_path;
    size_t top;
    int json, verbose;
} tune_cli;

/* The graphs of the command line: files as given, a folder's *.json
 * files (not its subfolders) in name order. */
typedef struct tune_inputs {
    char **path;
    size_t n, cap;
    int many; /* more than one argument, or a folder */
} tune_inputs;

/* Fills *in from argv[first..argc) (memset first, so tune_inputs_free is
 * safe after any return). 0, or the exit code after printing why (a
 * folder without graphs, - among several: 2). */
int tune_inputs_expand(tune_inputs *in, int argc, char **argv, int first);
void tune_inputs_free(tune_inputs *in);
/* Two graphs whose result files would have one name: 2 after saying so. */
int tune_stems_clash(const tune_inputs *in);
/* -o with several graphs: a folder, made when `create`. 0 or the exit
 * code. */
int tune_make_outdir(const char *dir, int create);

/* In this process, graph after graph; the exit code. */
int tune_here(tune_cli *t, const tune_inputs *in);
/* Started by mpirun (Open MPI's, PMIx's or PMI's variables are set). */
int tune_launched_by_mpi(void);
/* Under mpirun (builds with MPI): the pairs over the ranks; rank 0 prints
 * and writes what tune_here would. fp: the job's fingerprint; debug: the
 * ranks to fail, hang and kill (-1: none). The exit code. */
int tune_ranks(tune_cli *t, const tune_inputs *in, const char *fp,
               double timeout, const int debug[3]);

/* One graph alone: the table or JSON of every candidate, -o the best
 * order. ranks > 0: under mpirun (--verbose says so). The exit code. */
int tune_output_single(const tune_cli *t, const commsched_graph *g,
                       const commsched_tune_result *r, double wall,
                       int threads, int ranks);
/* Runs the best candidate again and writes its order to out_path
 * (atomically; *to_stdout: it went to standard output). The exit code. */
int tune_write_best(const char *out_path, const commsched_graph *g,
                    const commsched_tune_result *r, double budget,
                    int *to_stdout);
/* --format json's document; threads < 0: without the timings (no
 * "threads", no wall_ms). NULL on OOM. */
json_t *tune_result_json(const commsched_tune_result *r, double budget,
                         int threads);
/* One candidate as JSON; timing 0: without wall_ms. */
json_t *tune_candidate_json(const commsched_tune_candidate *c, size_t i,
                            const commsched_sim_totals *in, int timing);
/* The pipeline with its well-known runs shortened ("inductor", ...). */
const char *tune_short_passes(const char *p, char *buf, size_t size);
/* The threads a search uses: --threads, else OpenMP's default (1 without
 * OpenMP). */
int tune_threads_used(const commsched_tune_options *to);

#endif
