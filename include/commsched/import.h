/* commsched — graphs from the field's trace formats, and back to Chakra.
 *
 * One way in for every format, the same for the CLI (`commsched import`),
 * a compiler through C and the Python binding (commsched.import_trace,
 * commsched.load): ASTRA-sim text workloads, Chakra execution traces
 * (the JSON form and the binary .et protobuf), Kineto (PyTorch profiler)
 * traces, PyTorch execution traces and XLA HLO text modules
 * (docs/WORKLOADS.md says what each becomes). commsched_graph_load_any
 * tells the formats apart by content.
 *
 * These functions live in their own archive (libcommsched_import.a, with
 * protobuf-c and zlib private to it), so a compiler that loads
 * libcommsched as a plugin pulls in neither.
 *
 * Errors. Every failing call here returns a status and fills the caller's
 * commsched_error (NULL allowed) with the whole located message in
 * err->text, the file named as the importer calls it ("<stdin>" for "-";
 * a Kineto import's --et trace by its own path when the fault is there):
 * "FILE:LINE:COL: why" or "FILE:LINE: why" for a text format,
 * "FILE: traceEvents[3].dur: why" (a JSON path) or "FILE: record 2 (byte
 * 20).data_deps[0]: why" (a binary record) for the others. err->line,
 * err->column and err->path stay unset, so commsched_error_format(err,
 * NULL, ...) prints the message as `commsched import` does. Statuses: EIO
 * (cannot open or read), EPARSE / ESCHEMA / EGRAPH / ECYCLE / EINVAL (the
 * file or an option is wrong), ENOMEM (out of memory, or parsing would
 * pass the options' max_memory: the message names the limit), ELIBRARY (a
 * system call on the input failed: spooling standard input, reading a
 * descriptor again), EINTERNAL (a graph's own JSON did not parse back).
 *
 * Notes and warnings (what became what, sizes the trace does not give)
 * go to the options' `message` callback; the library prints nothing.
 *
 * Threads: the importers keep no state between calls and only read the
 * options, so calls may run at once (sharing an options struct too, when
 * its callbacks may be called from several threads).
 */
#ifndef COMMSCHED_IMPORT_H
#define COMMSCHED_IMPORT_H

#include <stdint.h>
#include <stdio.h>

#include "commsched/cost.h"
#include "commsched/export.h"
#include "commsched/graph.h"
#include "commsched/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a message to the options' `message` callback is. */
typedef enum commsched_import_level {
    COMMSCHED_IMPORT_NOTE = 0,   /* what was imported, and how */
    COMMSCHED_IMPORT_WARNING = 1 /* the graph may not be what the user
                                    expects (a size assumed, 0 bytes) */
} commsched_import_level;

/* "note" or "warning". Never NULL. */
COMMSCHED_EXPORT const char *commsched_import_level_str(
    commsched_import_level level);

/* A note or warning: `file` the input it is about (as in errors), `text`
 * one line without a trailing newline. Both borrowed for the call. Called
 * on the importing thread, before the call returns. */
typedef void (*commsched_import_message_fn)(void *arg,
                                            commsched_import_level level,
                                            const char *file,
                                            const char *text);

/* The size of a process group a trace names but does not size (Chakra,
 * PyTorch ET): `--group-size NAME=K`. */
typedef struct commsched_import_group_size {
    const char *name; /* borrowed */
    long size;
} commsched_import_group_size;

/* Options of every importer; each reads the fields named for it and
 * ignores the rest. Initialise with commsched_import_options_init. */
typedef struct commsched_import_options {
    double clock_ghz; /* astra: cycles per nanosecond (default 1) */
    long npus, mp;    /* astra: 0 = from the file, else the default */
    int gpu_only;     /* chakra: drop CPU-side ops */
    long ranks;       /* chakra: 0 = the trace's ngpus, else 8 */
    int chakra_fields_only; /* chakra: ignore commsched's own attributes */
    long rank;        /* kineto: the device to keep; -1: the only one */
    const char *et;   /* kineto: the run's PyTorch execution trace, or NULL */
    /* chakra, pytorch-et: group sizes (they win over the trace's), and
     * ASTRA-sim's comm-group file (chakra), or NULL. Borrowed. */
    const commsched_import_group_size *group_sizes;
    size_t n_group_sizes;
    const char *comm_groups;
    /* kineto, pytorch-et: what parsing a JSON trace may take in memory;
     * 0: 2 GiB */
    uint64_t max_memory;
    /* Notes and warnings (NULL: none reported). */
    commsched_import_message_fn message;
    void *message_arg;
    /* Bytes of the input read so far (total: the file's size, 0 while
     * unknown, as for a pipe), for the reading stage of chakra, kineto
     * and pytorch-et; the last call has done == total. Called on the
     * importing thread. NULL: none reported. */
    commsched_progress_fn progress;
    void *progress_arg;
    /* kineto: keep only the GPU events launched inside this profiler
     * step (0-based, the distinct ProfilerStep# names in order of their
     * first start), the last included; -1: Holistic Trace Analysis's
     * scope (every step but the last) */
    long step;
} commsched_import_options;

/* The defaults: 1 cycle per ns, sizes from the file, no rank chosen (-1:
 * the only one), no step chosen (-1), no limit given, no callback. Never
 * fails. */
COMMSCHED_EXPORT void commsched_import_options_init(
    commsched_import_options *o);

/* Each importer reads the file at `path` ("-": standard input), builds
 * the graph and returns COMMSCHED_OK with *out (the caller destroys it
 * with commsched_graph_destroy); on failure *out is NULL and err says
 * why (see above). opts NULL: the defaults. Cost: O(file size + nodes +
 * edges) time, memory a small multiple of the graph (a JSON trace's parse
 * tree, bounded by max_memory, while it is read). */
/* ASTRA-sim's text workload (a parallelism policy, then one line per
 * layer). */
COMMSCHED_EXPORT commsched_status commsched_import_astra(
    const char *path, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);
/* The i-th parallelism policy commsched_import_astra reads ("DATA",
 * "HYBRID_TRANSFORMER", ...; NULL past the last), with what it
 * communicates in *what (may be NULL): the importer's own table, for a
 * help text. Static strings; never fails. */
COMMSCHED_EXPORT const char *commsched_import_astra_policy(size_t i,
                                                           const char **what);

/* A Chakra execution trace: the simple JSON form (workload_graph) or the
 * binary .et protobuf, told apart by content; a file exported with its
 * commsched attributes (commsched_export_chakra) gives the exact graph
 * back. */
COMMSCHED_EXPORT commsched_status commsched_import_chakra(
    const char *path, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);
/* A Kineto trace (.json or .json.gz): one device's GPU events, its NCCL
 * kernels as collectives; with opts->et, its operators' dependencies and
 * sizes from the PyTorch execution trace. */
COMMSCHED_EXPORT commsched_status commsched_import_kineto(
    const char *path, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);
/* A PyTorch execution trace (.json or .json.gz, schema 1.x); runtimes
 * from the cost model (the trace has no durations). */
COMMSCHED_EXPORT commsched_status commsched_import_pytorch_et(
    const char *path, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);
/* An XLA HLO text module (--xla_dump_hlo_as_text): the ENTRY computation,
 * loops with a known trip count unrolled, calls inlined. No option
 * applies but the callbacks. */
COMMSCHED_EXPORT commsched_status commsched_import_hlo(
    const char *path, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);

/* The formats commsched_graph_load_any tells apart. */
typedef enum commsched_format {
    COMMSCHED_FORMAT_GRAPH = 0, /* commsched's own JSON (docs/FORMAT.md) */
    COMMSCHED_FORMAT_CHAKRA_ET, /* a Chakra binary trace */
    COMMSCHED_FORMAT_COUNT
} commsched_format;

/* 1 when the file at path is a Chakra binary trace (.et) by content: it
 * starts with a length-delimited record that decodes as Chakra's
 * GlobalMetadata. 0 otherwise (JSON, anything else, a file that cannot
 * be read, or one that is not a regular file: a pipe cannot be read
 * twice). Never fails; reads at most the first record. */
COMMSCHED_EXPORT int commsched_import_is_chakra_et(const char *path);

/* Loads a graph from any file commsched reads without being told the
 * format: a Chakra binary trace by content is imported as
 * commsched_import_chakra would with opts (NULL: the defaults; its
 * callbacks apply), anything else is loaded as commsched's JSON with
 * `flags` (commsched_graph_load_file; "-" is standard input, always
 * JSON). *format (may be NULL) says which, failure or not, and so how err
 * is located: for a trace as above (the file named in err->text), for
 * JSON as commsched_graph_load_file locates it (line and column, or a
 * JSON path; commsched_error_format(err, FILE, ...) names the file).
 * Cost: that of the loader it picks, plus reading the first record. */
COMMSCHED_EXPORT commsched_status commsched_graph_load_any(
    const char *path, unsigned flags, const commsched_import_options *opts,
    commsched_graph **out, commsched_format *format, commsched_error *err);

/* ---------------------------------------------------------------------- */
/* Kineto traces beyond the graph: Holistic Trace Analysis's overlap.      */
/* ---------------------------------------------------------------------- */

typedef struct commsched_kineto commsched_kineto;

/* Reads a Kineto trace and keeps the GPU events of one device
 * (opts->rank, or the only one); opts->et is not read here. Returns OK
 * with *out (commsched_kineto_destroy it), or fails as the importers do.
 * O(file size). */
COMMSCHED_EXPORT commsched_status commsched_kineto_open(
    const char *path, const commsched_import_options *opts,
    commsched_kineto **out, commsched_error *err);
/* NULL is allowed. */
COMMSCHED_EXPORT void commsched_kineto_destroy(commsched_kineto *k);
/* The device kept, and the rank the trace's distributedInfo names (-1:
 * none). */
COMMSCHED_EXPORT long commsched_kineto_device(const commsched_kineto *k);
COMMSCHED_EXPORT long commsched_kineto_rank(const commsched_kineto *k);
/* HTA's get_comm_comp_overlap (HolisticTraceAnalysis 0.5.0) for the kept
 * device: the time during which a communication kernel (^nccl.*Kernel)
 * and a computation kernel run at once, over the time a communication
 * kernel runs, on HTA's rounded microseconds. *comm_us (may be NULL):
 * that denominator. NAN without communication kernels. O(events log
 * events). */
COMMSCHED_EXPORT double commsched_kineto_overlap(const commsched_kineto *k,
                                                 double *comm_us);
/* The graph of the kept device, as commsched_import_kineto makes it
 * (opts->et read here when given; its note to opts->message). Not to be
 * called on one k from two threads at once. O(events + the ET). */
COMMSCHED_EXPORT commsched_status commsched_kineto_graph(
    commsched_kineto *k, const commsched_import_options *opts,
    commsched_graph **out, commsched_error *err);

/* ---------------------------------------------------------------------- */
/* Calibration: the cost model's tables measured from profiler traces     */
/* (docs/COST.md, "Measured costs"; `commsched calibrate`).               */
/* ---------------------------------------------------------------------- */

typedef struct commsched_calibrate_options {
    /* How each trace is read, as commsched_import_kineto reads it (its
     * scope, --rank, --ranks, max_memory, the message callback); `step`
     * is not read here. */
    commsched_import_options import;
    /* A profiler step (ordinal, as import.step numbers them) whose events
     * are left out of the fit: the held-out step of a validation; -1:
     * none. */
    long exclude_step;
} commsched_calibrate_options;

/* The defaults of commsched_import_options_init, no step excluded. */
COMMSCHED_EXPORT void commsched_calibrate_options_init(
    commsched_calibrate_options *o);

typedef struct commsched_calibrate_stats {
    size_t traces;
    size_t steps;              /* the most profiler steps one trace has */
    size_t kernel_samples;     /* compute, memcpy and memset events */
    size_t collective_samples; /* after matching ranks: one per collective */
    size_t matched;            /* collectives found in every trace given */
    size_t mismatched;         /* matched by position, but op, size or
                                  group differ from the first trace's: left
                                  out */
    size_t unsized;            /* NCCL kernels the trace gives no size: kept
                                  by name and position (as kernels), not
                                  in the size tables */
} commsched_calibrate_stats;

/* Reads the Kineto traces at paths[0..n) (one or more ranks of one run,
 * or runs on the same hardware) and fits their measured costs: per
 * kernel name the median duration, per (collective op, group size) the
 * median at each size and a latency + bytes/bandwidth line, a
 * collective's time across ranks from the last rank's arrival (the
 * shortest of the ranks' durations). OK with *out (fitted;
 * commsched_costs_destroy it) and *stats (may be NULL); on failure *out
 * is NULL and err says why, located as the importers locate errors.
 * O(total file size + samples log samples); every trace is held at once. */
COMMSCHED_EXPORT commsched_status commsched_calibrate(
    const char *const *paths, size_t n, const commsched_calibrate_options *o,
    commsched_costs **out, commsched_calibrate_stats *stats,
    commsched_error *err);

#define COMMSCHED_CALIBRATE_BASELINES 4

/* One held-out step, predicted. Times in ns. */
typedef struct commsched_calibrate_result {
    long step;
    char step_name[64];
    uint32_t nodes, waits; /* waits cost nothing and are never priced */
    double measured_ns;  /* the step's GPU span in the trace: first start
                            of an event launched in it to the last end */
    double replay_ns;    /* the step's graph simulated with the trace's
                            own durations (what the importer and the
                            simulator make of the run) */
    double predicted_ns; /* simulated with the cost options (their
                            measured tables), none of its own durations */
    uint32_t from_measured, from_fitted, from_model, unpriced; /* nodes */
    /* The roofline alone on the step's matmul kernels (those whose shapes
     * the trace recorded): their summed durations, and their flops at
     * the fitted flop/s (0 without either). */
    uint32_t matmuls;
    double matmul_ns, matmul_roofline_ns;
    size_t n_baselines;
    double baseline_ns[COMMSCHED_CALIBRATE_BASELINES]; /* the same, with
                            each baseline profile's analytical model for
                            the collectives */
} commsched_calibrate_result;

/* Predicts profiler step `step` of the Kineto trace at path (its graph
 * as commsched_import_kineto makes it with io->step = step) in the run's
 * own order and compares it with what was measured. costs: how it is
 * predicted (costs->measured the tables fitted without this step;
 * ignore_runtime is set here). baselines: up to
 * COMMSCHED_CALIBRATE_BASELINES device profiles (borrowed). Errors as
 * the importers' and the simulator's. O(file size + nodes log nodes). */
COMMSCHED_EXPORT commsched_status commsched_calibrate_check(
    const char *path, long step, const commsched_import_options *io,
    const commsched_cost_options *costs,
    const commsched_device *const *baselines, size_t n_baselines,
    commsched_calibrate_result *out, commsched_error *err);

/* ---------------------------------------------------------------------- */
/* Chakra export: what ASTRA-sim replays.                                  */
/* ---------------------------------------------------------------------- */

/* The most files (ranks) one export is asked for. */
#define COMMSCHED_EXPORT_MAX_RANKS (1L << 20)

/* Writes g, in its order, as one rank's Chakra binary execution trace to
 * out (every rank's file is the same: the step is SPMD). runtime[i]: node
 * i's duration in ns (the file's or the cost model's). exact: also the
 * commsched.* attributes that give the exact graph back on import. On
 * failure (ENOMEM, EIO with errno's text) some bytes may have been
 * written: the caller discards the file. O(nodes + edges); the graph's
 * JSON is held while it is written. */
COMMSCHED_EXPORT commsched_status commsched_export_chakra(
    const commsched_graph *g, const double *runtime, int exact, FILE *out,
    commsched_error *err);

/* The files an export writes by default: the largest group's size (1
 * without collectives). O(groups). */
COMMSCHED_EXPORT long commsched_export_chakra_ranks(const commsched_graph *g);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_IMPORT_H */
