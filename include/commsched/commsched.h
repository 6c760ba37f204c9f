/* commsched — the whole public API in one include, and the one-call entry
 * point a compiler uses (commsched_optimize).
 *
 *     #include <commsched/commsched.h>
 *     cc prog.c $(pkg-config --cflags --libs commsched)
 *     find_package(commsched) + target_link_libraries(t commsched::commsched)
 *
 * The API, by task (each header documents its own functions in full):
 *
 *   build a graph in memory   commsched/graph.h: commsched_builder_create,
 *                             _add_group, _add_input, _add_node,
 *                             _add_output, _finish -> commsched_graph
 *   or load one               commsched_graph_load_file / _load_string
 *                             (format v1, docs/FORMAT.md)
 *   or generate one           commsched/generate.h: a transformer's
 *                             training step (FSDP, DDP, TP, MoE, 2-D)
 *                             from a preset, commsched_generate_transformer
 *   optimize it (one call)    commsched_optimize below: cost model ->
 *                             schedule -> pass pipeline -> simulator
 *                             before and after -> commsched_result
 *   set passes and knobs      commsched_optimize_options_create / _set
 *                             ("passes", "device", any knob by its
 *                             Inductor name, ...)
 *   read the new order        commsched_result_order (node indices),
 *                             commsched_result_node_name (names)
 *   read per-pass stats       commsched_result_run -> commsched_run_pass
 *                             (commsched/passes.h: ReorderInfo and
 *                             SinkWaitInfo rows per collective / wait)
 *   read simulator totals     commsched_result_before / _after
 *                             (commsched/simulate.h: makespan, exposed
 *                             comm, overlap, lower bound, peak memory)
 *   search pipelines (tune)   commsched_tune below: many pipelines and
 *                             knob settings judged in parallel (OpenMP),
 *                             the fastest within a memory budget
 *   free everything           commsched_result_destroy,
 *                             commsched_optimize_options_destroy,
 *                             commsched_graph_destroy (NULL is fine)
 *   step by step instead      commsched/schedule.h, memory.h, passes.h
 *                             (commsched_pipeline_apply), cost.h,
 *                             simulate.h, report.h, analysis.h
 *   version / ABI             commsched/version.h: commsched_version()
 *
 * Conventions that hold everywhere:
 * - Handles are opaque; every object has a _create/_destroy (or _finish /
 *   _load) pair and _destroy(NULL) does nothing.
 * - Every fallible function returns a commsched_status (commsched/status.h)
 *   and takes an optional commsched_error * (NULL allowed) that receives the
 *   first error's message and its place: "nodes[3].inputs[1]" for a graph
 *   field, line and column for JSON syntax, the option's key for an option.
 * - Strings and arrays passed in are borrowed for the call; results say who
 *   owns them ("caller destroys", "borrowed until ...").
 * - No global state. Different graphs (and their options and results) may be
 *   used from different threads at the same time; one object is used by one
 *   thread at a time, except that a finished graph may be read — and given
 *   to commsched_optimize — from several threads at once.
 *   One restriction: igraph (the Debian build is not thread-safe) is used by
 *   the graph analysis functions of commsched/analysis.h and by graph
 *   validation only when a node order is NOT topological (a cycle to report,
 *   or COMMSCHED_FINISH_TOPOSORT repairing the order). Serialise those calls
 *   across threads. Building or loading a graph whose order is already
 *   topological, and everything commsched_optimize does, never touches
 *   igraph.
 */
#ifndef COMMSCHED_COMMSCHED_H
#define COMMSCHED_COMMSCHED_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/analysis.h"
#include "commsched/cost.h"
#include "commsched/export.h"
#include "commsched/generate.h"
#include "commsched/graph.h"
#include "commsched/memory.h"
#include "commsched/passes.h"
#include "commsched/report.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"
#include "commsched/status.h"
#include "commsched/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Options                                                                 */
/* ---------------------------------------------------------------------- */

/* Everything commsched_optimize can be told, as key/value text so that new
 * options never change the ABI. Opaque; caller-owned. */
typedef struct commsched_optimize_options commsched_optimize_options;

/* Options at their defaults: the default pipeline, every knob at its
 * default, the built-in "h100" profile, the NCCL cost model, one comm
 * stream per process group, no extra verification. *out is owned by the
 * caller (commsched_optimize_options_destroy). Fails only with ENOMEM. */
COMMSCHED_EXPORT commsched_status commsched_optimize_options_create(
    commsched_optimize_options **out, commsched_error *err);

/* Frees the options. NULL is allowed. */
COMMSCHED_EXPORT void commsched_optimize_options_destroy(
    commsched_optimize_options *o);

/* Sets one option from text (both strings are copied; borrowed for the
 * call). Keys:
 *   "passes"        comma-separated pass names run in order
 *                   (commsched_pass_name lists them); "none" runs no pass;
 *                   "default" (the initial value) runs the library's
 *                   default pipeline, commsched_default_pipeline(): the
 *                   overlap pass (peak memory within overlap_peak_budget x
 *                   the input order's, 1.0 by default); Inductor's
 *                   recommended list is one "passes" value away.
 *                   commsched_result_passes says what actually ran. Names
 *                   are checked here.
 *   "device"        a built-in profile ("h100", "a100", "b200") or the path
 *                   of a JSON profile (docs/COST.md), read now; a
 *                   calibrated profile's measured tables (`commsched
 *                   calibrate`) price the nodes they know.
 *   "cost_model"    "nccl" or "inductor" (commsched/cost.h).
 *   "measured_first" "true"/"false" (default): the measured tables price
 *                   the nodes they know before the nodes' own runtime_ns
 *                   (a compiler's estimates, not measurements).
 *   "comm_streams"  "per_group" or "single" (the simulator's comm streams).
 *   "verify"        "true"/"false": check the order after every pass and
 *                   recompute memory after every move (the CLI's
 *                   --verify-memory); slower, for tests.
 *   any knob        by its Inductor config name, as commsched_knobs_set
 *                   takes it ("reorder_iterative_peak_memory_budget" =
 *                   "0.1"); commsched_knob_name lists them.
 * EINVAL, with the key as the error's path, for an unknown key or a bad
 * value; the option keeps its previous value then. O(strlen(value)) for
 * "passes"; a "device" file costs reading it (commsched_costs_load_file's
 * O(file size + rows log rows)); O(1) otherwise. */
COMMSCHED_EXPORT commsched_status commsched_optimize_options_set(
    commsched_optimize_options *o, const char *key, const char *value,
    commsched_error *err);

/* Uses a device profile built in memory (copied; checked with
 * commsched_device_check, EINVAL names the bad field). */
COMMSCHED_EXPORT commsched_status commsched_optimize_options_set_device(
    commsched_optimize_options *o, const commsched_device *device,
    commsched_error *err);

/* Prices nodes from measured tables before the model (commsched/cost.h;
 * borrowed: they must outlive every optimize call with o; NULL: none),
 * and before a node's runtime_ns too when `first` is set (the CLI's
 * --costs). Replaces the tables a "device" file brought. Never fails. */
COMMSCHED_EXPORT void commsched_optimize_options_set_costs(
    commsched_optimize_options *o, const commsched_costs *measured,
    int first);

/* ---------------------------------------------------------------------- */
/* The one call                                                            */
/* ---------------------------------------------------------------------- */

/* What commsched_optimize produced. Opaque; caller-owned. */
typedef struct commsched_result commsched_result;

/* Optimizes graph g's node order:
 *   1. runtimes: every node's runtime_ns when given, the cost model
 *      otherwise (commsched_cost_graph with the options' device and model);
 *   2. simulates g's own order ("before");
 *   3. runs the pass pipeline over a schedule in g's order
 *      (commsched_optimize_schedule: commsched_pipeline_apply with the
 *      options' knobs, nodes a rewriting pass creates priced with the
 *      options' cost model, the order checked, violated fake edges
 *      dropped);
 *   4. simulates the new order ("after").
 * o NULL means every option at its default. On success *out holds the
 * result (caller destroys with commsched_result_destroy); on failure *out
 * is NULL and err says why (EINVAL: a pass or option problem; EINTERNAL:
 * an invariant check failed; ENOMEM).
 *
 * g is only read, never modified, so one graph may be optimized from
 * several threads at once with different options. It is borrowed by the
 * result: destroy the result before the graph. Fake (ordering-only) edges
 * that a pass adds (decide_global_ordering_of_comms) live in the result's
 * graph view, not in g.
 *
 * Cost: the pipeline's (commsched_pipeline_apply: its passes',
 * docs/PASSES.md) plus one pricing (commsched_cost_graph, O(V + reads))
 * and two simulations (simulate.h's cost, the first with the stream
 * bound); no igraph call. */
COMMSCHED_EXPORT commsched_status commsched_optimize(
    const commsched_graph *g, const commsched_optimize_options *o,
    commsched_result **out, commsched_error *err);

/* Step 3 of commsched_optimize on a graph and schedule the caller holds,
 * for a caller that measures around it (the CLI's optimize): the pipeline
 * (commsched_pipeline_apply, same arguments and ownership: on return *g,
 * *s are the final graph and schedule), the final order checked
 * (commsched_schedule_check; EINTERNAL when a pass broke it), and the fake
 * edges it violates dropped from the final graph
 * (commsched_graph_drop_violated_fake_edges, so the graph saved in that
 * order loads again: *n_dropped of them, the names in *dropped as
 * commsched_graph_drop_violated_fake_edges lists them; dropped may be
 * NULL). On failure *out is NULL, nothing to free. Cost: the passes' own
 * plus O(V + E). */
COMMSCHED_EXPORT commsched_status commsched_optimize_schedule(
    commsched_graph **g, commsched_schedule **s, const double *runtime_ns,
    const commsched_cost_options *cost, const char *passes,
    const commsched_knobs *k, unsigned flags, commsched_run **out,
    uint32_t *n_dropped, const char ***dropped, commsched_error *err);

/* Frees the result and everything it lent out. NULL is allowed. */
COMMSCHED_EXPORT void commsched_result_destroy(commsched_result *r);

/* The graph the result's order indexes. Without a rewriting pass it is a
 * read-only view of g (same nodes, indices and names) with the fake edges
 * the final order respects (those g had plus those the pipeline added;
 * violated ones dropped, as the CLI's output does). When a pass rewrote
 * the graph (bucketing: commsched_pass_rewrites), it is the graph that
 * pass built, with nodes g does not have (copy-ins, merged collectives)
 * and without the members it merged. Either way
 * commsched_graph_save_stream(commsched_result_graph(r),
 * commsched_result_order(r), ...) writes a file that loads again.
 * Borrowed until the result is destroyed; never destroy it. */
COMMSCHED_EXPORT const commsched_graph *
commsched_result_graph(const commsched_result *r);

/* Number of nodes in the new order (= commsched_graph_node_count of
 * commsched_result_graph). */
COMMSCHED_EXPORT uint32_t commsched_result_node_count(const commsched_result *r);

/* The new order: node indices of commsched_result_graph, first to run
 * first; commsched_result_node_count entries. Borrowed until the result is
 * destroyed. */
COMMSCHED_EXPORT const uint32_t *commsched_result_order(const commsched_result *r);

/* The name of the node at `position` in the new order, or NULL when
 * position is out of range. Borrowed until the result is destroyed. */
COMMSCHED_EXPORT const char *commsched_result_node_name(const commsched_result *r,
                                                        uint32_t position);

/* The pass list that ran, comma-separated: the "passes" option as given,
 * or the pipeline "default" resolved to ("none" or "" ran no pass).
 * Borrowed until the result is destroyed. */
COMMSCHED_EXPORT const char *commsched_result_passes(const commsched_result *r);

/* Per-pass statistics: read with commsched_run_pass_count and
 * commsched_run_pass (commsched/passes.h); each pass's node indices index
 * its own `graph` field (the graph that pass left). Borrowed until the
 * result is destroyed (do not call commsched_run_destroy on it). */
COMMSCHED_EXPORT const commsched_run *
commsched_result_run(const commsched_result *r);

/* The simulator's totals for g's own order (before) and for the new order
 * (after), with memory peaks (peak_memory_step is the per-step peak of
 * docs/FORMAT.md, "Memory model (in brief)"). Borrowed until the result is destroyed. */
COMMSCHED_EXPORT const commsched_sim_totals *
commsched_result_before(const commsched_result *r);
COMMSCHED_EXPORT const commsched_sim_totals *
commsched_result_after(const commsched_result *r);

/* The runtime (ns) the passes and the simulator used for each node, by
 * node index of commsched_result_graph. Borrowed until the result is
 * destroyed. */
COMMSCHED_EXPORT const double *
commsched_result_runtimes(const commsched_result *r);

/* ---------------------------------------------------------------------- */
/* Tune: search pipelines and knob settings                                */
/* ---------------------------------------------------------------------- */

/* Which peaks a memory budget holds for (docs/PASSES.md, overlap): the
 * per-step peak (docs/FORMAT.md, "Memory model (in brief)": the order's
 * count, Inductor's model) and the peak over simulated time (a buffer
 * read by a collective in flight lives until the collective ends, as a
 * GPU allocator sees it), or the per-step peak alone. */
typedef enum commsched_peak_model {
    COMMSCHED_PEAK_BOTH = 0,
    COMMSCHED_PEAK_STEP = 1
} commsched_peak_model;

/* What commsched_tune searches and how. Initialise with
 * commsched_tune_options_init and set what you need; strings and arrays are
 * borrowed for the call. */
typedef struct commsched_tune_options {
    double budget;       /* a candidate fits when its per-step peak
                            is <= budget x the input order's and, with
                            peak_model COMMSCHED_PEAK_BOTH, so is its peak
                            over simulated time; INFINITY: any peak fits.
                            Default 1.0. */
    int threads;         /* OpenMP threads; 0: OpenMP's default (the
                            OMP_NUM_THREADS environment variable, else one per
                            core); 1: serial. Ignored in builds without
                            OpenMP (COMMSCHED_HAVE_OPENMP 0). */
    int builtin;         /* 1 (default): start from the built-in candidate
                            set (docs/PASSES.md, tune); 0: only `candidates` */
    const char *const *candidates; /* more candidates: "PASSES" or
                                      "PASSES|key=value,key=value" */
    size_t n_candidates;
    const commsched_device *device; /* NULL: the built-in h100 */
    const commsched_costs *measured; /* measured tables (borrowed), or
                                        NULL */
    int measured_first;  /* they win over nodes' runtime_ns too */
    commsched_comm_model comm_model;
    commsched_comm_streams comm_streams;
    int verify;          /* check every order after every pass (slower) */
    commsched_progress_fn progress; /* called as each candidate finishes
                                       (done of the candidate count), from
                                       whichever thread ran it, one call at
                                       a time; NULL (default): none */
    void *progress_arg;  /* passed to progress */
    commsched_peak_model peak_model; /* which peaks the budget holds for
                                        (default COMMSCHED_PEAK_BOTH); the
                                        built-in overlap candidates get
                                        the same overlap_peak_model */
} commsched_tune_options;

/* Budget 1.0 over both peaks, OpenMP's default threads, the built-in set,
 * h100, NCCL model, one comm stream per group, no verification, no
 * progress callback. */
COMMSCHED_EXPORT void commsched_tune_options_init(commsched_tune_options *o);

/* One candidate, as commsched_optimize judged it. */
typedef struct commsched_tune_candidate {
    const char *passes;      /* the pipeline ("none": the input order) */
    const char *knobs;       /* "key=value,..." it set ("" for none) */
    commsched_status status; /* OK, or why it failed (message below) */
    const char *error;       /* the failure's message ("" when OK) */
    double makespan_ns;      /* the simulator's, after the pipeline */
    double lower_bound_ns;   /* the lower bound of the result's order */
    double efficiency;       /* lower bound / makespan */
    double exposed_ns;       /* exposed communication */
    int64_t peak_memory;     /* per-step peak of the result */
    int fits;                /* status OK and both peaks within their
                                budgets (the per-step one alone with
                                COMMSCHED_PEAK_STEP) */
    double wall_ms;          /* its commsched_optimize call (the only figure
                                that depends on threads and load) */
    int64_t peak_memory_time; /* the result's peak over simulated time */
    unsigned over;           /* status OK: which budgets it is over, 1 the
                                per-step peak's, 2 the time peak's (0: it
                                fits) */
} commsched_tune_candidate;

typedef struct commsched_tune_result commsched_tune_result;

/* Runs commsched_optimize on g once per candidate, in parallel (each
 * candidate its own options, pipeline, graph view and simulator; g is only
 * read), and ranks them: the best is the smallest makespan among those
 * that fit the budget, ties to the lower peak, then the earlier candidate.
 * Results are stored by candidate index, so the answer is the same
 * whatever the thread count.
 * The first built-in candidate is "none" (the input order), so with the
 * built-in set a candidate always fits and the best is never slower than
 * the input. A candidate that fails (a bad knob, ...) is recorded with its
 * status and does not stop the search; a malformed candidate text is
 * EINVAL before anything runs. *out: caller destroys. No igraph call.
 * Cost: commsched_tune_prepare's, one commsched_optimize per candidate over
 * the threads, and commsched_tune_finish's ranking. */
COMMSCHED_EXPORT commsched_status commsched_tune(
    const commsched_graph *g, const commsched_tune_options *o,
    commsched_tune_result **out, commsched_error *err);

COMMSCHED_EXPORT void commsched_tune_result_destroy(commsched_tune_result *r);

/* Candidates in the order they were given (built-in first). */
COMMSCHED_EXPORT size_t commsched_tune_count(const commsched_tune_result *r);
/* Candidate i (borrowed until the result is destroyed), NULL when out of
 * range. */
COMMSCHED_EXPORT const commsched_tune_candidate *
commsched_tune_candidate_at(const commsched_tune_result *r, size_t i);
/* The index of the candidate at rank k: fitting ones by makespan (ties by
 * peak memory, then index), then the others likewise, failed ones last. SIZE_MAX when k is
 * out of range. Rank 0 is the best when any candidate fits. */
COMMSCHED_EXPORT size_t commsched_tune_ranked(const commsched_tune_result *r,
                                              size_t k);
/* The best candidate's index, or SIZE_MAX when none fits. */
COMMSCHED_EXPORT size_t commsched_tune_best(const commsched_tune_result *r);
/* The input order's totals (makespan, lower bound, per-step peak). */
COMMSCHED_EXPORT const commsched_sim_totals *
commsched_tune_input(const commsched_tune_result *r);
/* The budget in bytes, or -1 when unlimited. */
COMMSCHED_EXPORT int64_t
commsched_tune_budget_bytes(const commsched_tune_result *r);
/* The budget of the peak over simulated time in bytes (budget x the input
 * order's), or -1 when unlimited or not budgeted (COMMSCHED_PEAK_STEP). */
COMMSCHED_EXPORT int64_t
commsched_tune_time_budget_bytes(const commsched_tune_result *r);
/* Options that reproduce candidate i with commsched_optimize (its passes
 * and knobs over the tune's device, model and streams). Caller destroys. */
COMMSCHED_EXPORT commsched_status commsched_tune_candidate_options(
    const commsched_tune_result *r, size_t i,
    commsched_optimize_options **out, commsched_error *err);

/* The search in steps, for a caller that judges candidates elsewhere (in
 * other processes: commsched_tune_ranks in commsched/runtime.h) or a few at
 * a time. commsched_tune is prepare, evaluate of every candidate, finish;
 * a candidate's figures depend only on the graph and its options and the
 * ranking only on the figures, so the steps give commsched_tune's answer
 * whichever process judged which candidate.
 *
 * prepare: the candidate set, every candidate's options (a malformed one
 * is EINVAL before anything runs), the input order's figures and runtimes
 * (commsched_optimize of g with no pass: one pricing and two simulations,
 * O(graph)) and the budgets; no candidate is judged yet. The result keeps
 * no pointer into g or o (the progress callback excepted). *out: caller
 * destroys; on failure NULL. */
COMMSCHED_EXPORT commsched_status commsched_tune_prepare(
    const commsched_graph *g, const commsched_tune_options *o,
    commsched_tune_result **out, commsched_error *err);
/* Judges the candidates which[0..count) on g (the graph prepared, or a
 * copy of it loaded from the same file: a different node count is EINVAL),
 * in parallel over the options' threads, heaviest first; o's progress
 * callback counts them. Concurrent calls on disjoint sets of candidates
 * are safe. A candidate that fails is recorded with its status, as in
 * commsched_tune; the call itself fails only on bad arguments (nothing
 * judged), after finish, or ENOMEM. Cost: one commsched_optimize each. */
COMMSCHED_EXPORT commsched_status commsched_tune_evaluate(
    commsched_tune_result *r, const commsched_graph *g, const size_t *which,
    size_t count, commsched_error *err);
/* Records candidate i's figures as judged elsewhere: every field of *fig
 * but passes and knobs (the result's own are kept); error is copied.
 * EINVAL for an index out of range or after finish, ENOMEM. */
COMMSCHED_EXPORT commsched_status commsched_tune_record(
    commsched_tune_result *r, size_t i, const commsched_tune_candidate *fig,
    commsched_error *err);
/* Ranks the candidates (the rule of commsched_tune_ranked); EINVAL while a
 * candidate is neither evaluated nor recorded. Until it has succeeded,
 * commsched_tune_ranked and _best answer SIZE_MAX. A second call does
 * nothing. O(K^2) for K candidates (an insertion sort: the built-in set is
 * a few dozen, but every candidate given counts). */
COMMSCHED_EXPORT commsched_status commsched_tune_finish(
    commsched_tune_result *r, commsched_error *err);
/* How heavy candidate i is likely to be (1: Inductor's iterative passes,
 * the heaviest of the set; 0: the rest): commsched_tune_evaluate runs the
 * heavier first, and so should a caller handing candidates out. */
COMMSCHED_EXPORT int commsched_tune_weight(const commsched_tune_result *r,
                                           size_t i);
/* 1 when candidate i was evaluated or recorded. */
COMMSCHED_EXPORT int commsched_tune_judged(const commsched_tune_result *r,
                                           size_t i);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_COMMSCHED_H */
