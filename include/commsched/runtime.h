/* commsched — runtimes: executing a schedule on real ranks and measuring it
 * against the simulator's prediction (docs/RUNTIME.md).
 *
 * A runtime is an adaptor behind a versioned table of operations, looked up
 * by name (QBE's Target table): the core never includes mpi.h or CUDA
 * headers; an adaptor is compiled only where its library was found
 * (commsched/config.h says which), and commsched_runtime_find returns NULL
 * for one this build lacks. Every rank of the job walks the same schedule:
 * compute nodes run a timed kernel while driving communication progress,
 * collectives are non-blocking library calls on per-group communicators,
 * waits complete them, and buffers are really allocated and freed where the
 * memory model says (a collective's buffers stay alive until its wait).
 *
 * The measurement (per node, per rank, per iteration timestamps, measured
 * peak of live bytes, the --check verdicts, calibrated solo runtimes) comes
 * back on rank 0; commsched_run_report_* print it in the simulator's report
 * formats next to the prediction.
 *
 * Linking: everything declared here lives in libcommsched_runtime.a, not
 * in libcommsched, so a compiler that loads libcommsched as a plugin never
 * pulls in MPI. A program that executes schedules links
 * libcommsched_runtime.a, then libcommsched and MPI.
 *
 * Thread safety: a runtime context belongs to one thread. The report
 * writers only read their arguments.
 *
 * Costs: graph.h's terms, and T = iters x ranks x V timestamps of a
 * measurement.
 */
#ifndef COMMSCHED_RUNTIME_H
#define COMMSCHED_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "commsched/graph.h"
#include "commsched/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The layout of commsched_runtime_ops. An adaptor built against another
 * version is refused by commsched_runtime_find. */
#define COMMSCHED_RUNTIME_VERSION 1

/* What a compute node does for its runtime. */
typedef enum commsched_compute_mode {
    COMMSCHED_COMPUTE_SLEEP = 0, /* sleep, testing in-flight requests every
                                    poll quantum (a GPU kernel leaves the
                                    host free) */
    COMMSCHED_COMPUTE_SPIN = 1,  /* busy loop for the runtime, testing
                                    requests as it goes (host-bound work) */
    COMMSCHED_COMPUTE_TOUCH = 2, /* stream over the node's bytes for real
                                    (memory-bound work); takes what it takes
                                    (MPI only) */
    COMMSCHED_COMPUTE_GEMM = 3   /* a real cuBLAS GEMM sized from the node's
                                    FLOPs (CUDA only, where cuBLAS was
                                    found); nodes without FLOPs spin */
} commsched_compute_mode;

/* On a GPU, sleep and spin both run a kernel that spins on the SM clock
 * for the runtime: the host is free either way. */

/* "sleep" / "spin" / "touch" / "gemm"; NULL when out of range. */
COMMSCHED_EXPORT const char *
commsched_compute_mode_str(commsched_compute_mode m);
/* Parses the names above; 0, or -1 when unknown. */
COMMSCHED_EXPORT int commsched_compute_mode_parse(const char *s,
                                                  commsched_compute_mode *out);

/* How all_reduce nodes run. */
typedef enum commsched_allreduce_algo {
    COMMSCHED_ALLREDUCE_MPI = 0,       /* the library's MPI_Iallreduce */
    COMMSCHED_ALLREDUCE_RING = 1,      /* seed 001: chunked ring over point
                                          to point above the threshold and
                                          with more than two ranks, the naive
                                          algorithm otherwise (tinygrad's
                                          RING=1) */
    COMMSCHED_ALLREDUCE_RING_ALWAYS = 2 /* the ring whatever the size
                                          (tinygrad's RING=2) */
} commsched_allreduce_algo;

/* "mpi" / "ring" / "ring-always"; NULL when out of range. */
COMMSCHED_EXPORT const char *
commsched_allreduce_algo_str(commsched_allreduce_algo a);
COMMSCHED_EXPORT int
commsched_allreduce_algo_parse(const char *s, commsched_allreduce_algo *out);

/* How collectives share the communicators. MPI itself would progress every
 * posted collective at once; a GPU runtime (NCCL) runs one group's
 * collectives one after another on its stream, and so does the simulator. */
typedef enum commsched_run_streams {
    COMMSCHED_RUN_STREAMS_PER_GROUP = 0,  /* one in-order stream per group:
                                             a collective is posted when the
                                             previous one of its group
                                             completes (the simulator's
                                             default, NCCL's behaviour) */
    COMMSCHED_RUN_STREAMS_SINGLE = 1,     /* one stream for every collective
                                             (simulate --comm-streams
                                             single) */
    COMMSCHED_RUN_STREAMS_CONCURRENT = 2  /* post at once; MPI overlaps
                                             collectives as it likes */
} commsched_run_streams;

/* "per-group" / "single" / "concurrent"; NULL when out of range. */
COMMSCHED_EXPORT const char *
commsched_run_streams_str(commsched_run_streams s);
COMMSCHED_EXPORT int commsched_run_streams_parse(const char *s,
                                                 commsched_run_streams *out);

/* tinygrad's RING_ALLREDUCE_THRESHOLD: the ring only pays off above this
 * many elements. */
#define COMMSCHED_RING_THRESHOLD_DEFAULT 256000u

/* Everything a run is told. Initialise with commsched_run_options_init. */
typedef struct commsched_run_options {
    commsched_compute_mode compute;
    double time_scale;         /* compute runtimes are multiplied by this */
    double size_scale;         /* buffer sizes are multiplied by this
                                  (rounded up to whole elements) */
    commsched_allreduce_algo allreduce;
    uint64_t ring_threshold;   /* elements (RING mode) */
    commsched_run_streams streams;
    int check;                 /* fill inputs with rank-dependent values and
                                  verify every collective's result */
    uint32_t iters;            /* measured iterations (>= 1) */
    uint32_t warmup;           /* unmeasured iterations before them */
    uint32_t calibrate;        /* passes that run every node alone to time
                                  it for the prediction; 0: none */
    double timeout_s;          /* a wait, collective or barrier stuck this
                                  long aborts the job naming the node;
                                  0: no watchdog (waits call MPI_Wait) */
    double poll_us;            /* progress quantum: how often sleeping
                                  compute and waits test requests; 0: spin */
    int preflight;             /* compare graphs and collective sequences
                                  across ranks before running (default 1) */
    commsched_progress_fn progress; /* rank 0 reports each finished pass
                                  (calibration, warm-up, measured) of the
                                  total; NULL: none (commsched/status.h) */
    void *progress_arg;        /* passed to progress */
    int debug_kill_rank;       /* tests: this rank kills itself with SIGKILL
                                  before the first iteration; -1: none */
    uint32_t gpus;             /* CUDA: GPUs each process drives (each is a
                                  rank); 0: every visible GPU when the job
                                  is one process, else one */
    const double *runtime_ns;  /* per node: the compute runtime to play
                                  (the file's or the cost model's, before
                                  time_scale); borrowed for the call.
                                  Required. */
    int debug_corrupt_rank;    /* tests: with check, this rank adds one to
                                  the first byte of every reduction's result
                                  before verifying it (MPI); -1: none */
} commsched_run_options;

/* sleep, scales 1, MPI all-reduce, no check, 10 iterations after 2 warm-up,
 * 3 calibration passes, 60 s watchdog, 20 µs poll quantum, per-group
 * streams, preflight on. */
COMMSCHED_EXPORT void commsched_run_options_init(commsched_run_options *o);

/* The measurement of one run, complete on rank 0. Arrays are indexed
 * [(iter * ranks + rank) * nodes + node]; times are ns from that rank's
 * start of that iteration (each iteration starts after a barrier).
 * Collectives: start = issue (the host reached it), post = when it was
 * handed to MPI (later than issue when it queued behind its stream), end =
 * when the runtime first saw it complete; waits: start = reached, end =
 * done (end - start is the time blocked). */
typedef struct commsched_measurement {
    const commsched_graph *graph; /* borrowed: outlives the measurement */
    uint32_t ranks, nodes, iters;
    uint32_t *order;              /* the executed order (nodes entries) */
    double *start_ns, *end_ns;
    double *post_ns;              /* collectives; equal to start otherwise */
    double *step_ns;              /* [iter * ranks + rank] */
    double *solo_ns;              /* [node] calibrated runtime alone: median
                                     over the passes, mean over ranks, from
                                     posting to completion; NULL without
                                     calibration */
    double *skew_ns;              /* [node] collectives: how long after the
                                     mean rank the last rank of the group
                                     arrived at it in the calibration passes
                                     (per pass the mean over ranks of the
                                     time waited for the others minus the
                                     least of them; median over passes);
                                     0 for other nodes; NULL with solo_ns */
    double *wake_ns;              /* [node] collectives: after the last
                                     rank arrived, how long until the
                                     others, sleeping while they wait,
                                     woke and let it start (per pass the
                                     least wait over ranks; median over
                                     passes); 0 for other nodes; NULL with
                                     solo_ns. CUDA: the wait is the device
                                     barrier before the collective in the
                                     calibration program, so skew is how
                                     late the last GPU reaches it and wake
                                     the barrier's own time */
    int64_t *peak_live;           /* [rank] peak of live buffer bytes
                                     (scaled), counted as the memory model
                                     counts (freeable inputs that are read
                                     and node outputs) */
    int64_t *pool_peak;           /* [rank] the device allocator's high-water
                                     mark of the measured iterations (CUDA:
                                     cudaMallocAsync's pool, allocation
                                     rounding included); NULL when the
                                     runtime has no such figure */
    int64_t other_bytes;          /* inputs the model does not count
                                     (non-freeable), allocated for the data */
    uint64_t checked;             /* collective results verified (all ranks,
                                     all iterations) */
    uint64_t mismatches;          /* of which wrong */
    char first_mismatch[256];     /* the first wrong one, or "" */
    commsched_run_options options; /* as run (runtime_ns NULL) */
    char runtime[32];             /* adaptor name */
    char library[96];             /* e.g. "Open MPI v4.1.4" */
    double wall_s;                /* whole execute call */
} commsched_measurement;

/* Frees a measurement. NULL is allowed. */
COMMSCHED_EXPORT void commsched_measurement_destroy(commsched_measurement *m);

/* The runtimes to simulate as the prediction, into runtime_ns[node count]:
 * collectives take their calibrated solo time plus the calibrated skew and
 * wake-up latency when there is one (a collective completes only once its
 * last rank posted it and the waiting ranks woke up to progress it; the
 * simulator's ranks are identical, so this is where that time goes), else
 * the cost model's (model_ns) x time_scale; compute nodes take their
 * calibrated time when there is one (in sleep mode that includes how late
 * this machine wakes a sleeping rank; in touch mode what streaming costs
 * here), else model_ns x time_scale; waits 0. sources
 * (may be NULL) receives, per node, 1 when the figure was measured. O(V). */
COMMSCHED_EXPORT void commsched_measurement_predict(
    const commsched_measurement *m, const double *model_ns,
    double *runtime_ns, uint8_t *sources);

/* ---- adaptors ------------------------------------------------------------ */

typedef struct commsched_runtime commsched_runtime; /* adaptor's context */

/* A runtime adaptor. Every rank calls init, then execute, then fini.
 * Errors are collective: when execute fails on one rank it fails on every
 * rank with the same status, and only one rank (the lowest that saw the
 * cause) carries a message; the others' err->text is "" (print nothing). */
typedef struct commsched_runtime_ops {
    int version;             /* COMMSCHED_RUNTIME_VERSION */
    const char *name;        /* "mpi", "cuda" */
    const char *description;
    /* Starts the runtime (MPI_Init; the CUDA adaptor also finds its GPUs
     * and fails with ENODEV, on every process, when there are none).
     * argc/argv may be NULL. On success *out is the context (fini frees
     * it). On failure *out is NULL, or, where the processes stopped
     * together (the CUDA adaptor's ENODEV), the context: the caller prints
     * its message, if any, and then calls fini, which no process leaves
     * before every process has reached it. */
    commsched_status (*init)(int *argc, char ***argv, commsched_runtime **out,
                             commsched_error *err);
    /* This process's index and the process count (a CUDA process may
     * drive several GPUs, each a rank of the measurement). */
    int (*rank)(const commsched_runtime *rt);
    int (*size)(const commsched_runtime *rt);
    /* Collective: every rank passes whether it failed; returns the lowest
     * failed rank, or -1 when none did. Lets ranks stop together when one
     * cannot load its graph, instead of leaving the others blocked. */
    int (*first_failed)(commsched_runtime *rt, int failed);
    /* Collective: runs `order` (a permutation of g's nodes; NULL: the file
     * order) as the options say. On rank 0 *out receives the measurement
     * (caller destroys); elsewhere *out is NULL. g is borrowed and must
     * outlive the measurement. */
    commsched_status (*execute)(commsched_runtime *rt,
                                const commsched_graph *g,
                                const uint32_t *order,
                                const commsched_run_options *o,
                                commsched_measurement **out,
                                commsched_error *err);
    /* Collective: waits for every process to get here, then stops the
     * runtime (MPI_Finalize) and frees the context. NULL is allowed. */
    void (*fini)(commsched_runtime *rt);
} commsched_runtime_ops;

/* The adaptor called `name` in this build, or NULL. Static table: never
 * freed. */
COMMSCHED_EXPORT const commsched_runtime_ops *
commsched_runtime_find(const char *name);
/* The i-th adaptor of this build (0 ..), NULL past the end. */
COMMSCHED_EXPORT const commsched_runtime_ops *commsched_runtime_at(unsigned i);
/* 1 when `name` is an adaptor commsched has ("mpi", "cuda"), built here or
 * not; lets the CLI tell "not in this build" from "no such runtime". */
COMMSCHED_EXPORT int commsched_runtime_known(const char *name);

/* ---- reports ------------------------------------------------------------ */

/* The prediction a report compares against: a simulation of the executed
 * order with commsched_measurement_predict's runtimes (borrowed; NULL for
 * none), and where its figures came from (per node, may be NULL). */
typedef struct commsched_run_prediction {
    const commsched_sim *sim;
    const uint8_t *measured;  /* per node: 1 = calibrated, 0 = model */
    const char *device;       /* profile used for the model's figures */
} commsched_run_prediction;

/* Measured step (median, min, max over iterations of the slowest rank),
 * compute, comm, time blocked in waits (exposed), overlap and peak memory;
 * then predicted vs measured per collective and in total with the error.
 * EIO when the stream fails. O(T + iters x ranks x R + V iters log iters):
 * every timestamp is read, each wait's collectives found from its inputs,
 * and each node's median over iterations taken by sorting. */
COMMSCHED_EXPORT commsched_status commsched_run_report_table(
    FILE *out, const commsched_measurement *m,
    const commsched_run_prediction *p, commsched_error *err);

/* The same as JSON (format "commsched-run", version 1; keys in
 * docs/RUNTIME.md), at the same cost. */
COMMSCHED_EXPORT commsched_status commsched_run_report_json(
    FILE *out, const commsched_measurement *m,
    const commsched_run_prediction *p, commsched_error *err);

/* Chrome trace: one process per rank (one track per stream: compute, then
 * one per process group), every measured iteration laid end to end, flow
 * arrows from collectives to their waits; plus a "predicted" process with
 * the simulated timeline when p->sim is given. The table's cost, plus
 * O(V + R) for the predicted process. */
COMMSCHED_EXPORT commsched_status commsched_run_report_trace(
    FILE *out, const commsched_measurement *m,
    const commsched_run_prediction *p, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_RUNTIME_H */
