/* commsched — scheduling passes, their knobs and the pipeline that runs
 * them (docs/PASSES.md).
 *
 * Passes are data: a table of (name, function, description), listed by
 * commsched_pass_count/commsched_pass_name. A pipeline is a comma-separated
 * list of names run in order over one schedule; after every pass (in debug
 * builds, and always with COMMSCHED_PIPELINE_VERIFY) an invariant check
 * proves the order is a permutation respecting every data and control edge.
 *
 * Knobs carry Inductor's config names and defaults
 * (reorder_iterative_peak_memory_budget=0.2, ...); commsched_knobs_set parses
 * "key", "value" pairs as the CLI's --set key=value does.
 */
#ifndef COMMSCHED_PASSES_H
#define COMMSCHED_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/cost.h"
#include "commsched/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- knobs ------------------------------------------------------------- */

typedef struct commsched_knobs commsched_knobs;

/* All knobs at their defaults. Caller destroys. */
COMMSCHED_EXPORT commsched_status commsched_knobs_create(commsched_knobs **out,
                                                         commsched_error *err);
COMMSCHED_EXPORT void commsched_knobs_destroy(commsched_knobs *k);
/* Sets one knob from text: booleans take true/false/1/0, numbers a decimal,
 * limits an integer or "none". EINVAL names the key for an unknown key or a
 * bad value; the knob keeps its value then. */
COMMSCHED_EXPORT commsched_status commsched_knobs_set(commsched_knobs *k,
                                                      const char *key,
                                                      const char *value,
                                                      commsched_error *err);
/* Knob `key`'s current value as text in buf (size bytes, at least 32), in
 * a form commsched_knobs_set reads back exactly. Returns 0, or -1 for an
 * unknown key (buf untouched). */
COMMSCHED_EXPORT int commsched_knobs_get(const commsched_knobs *k,
                                         const char *key, char *buf,
                                         size_t size);
/* The knob table, for --help and docs: name, default as text, meaning.
 * Out-of-range indices give NULL. */
COMMSCHED_EXPORT size_t commsched_knob_count(void);
COMMSCHED_EXPORT const char *commsched_knob_name(size_t i);
COMMSCHED_EXPORT const char *commsched_knob_default(size_t i);
COMMSCHED_EXPORT const char *commsched_knob_description(size_t i);
/* What knob i accepts, as text for a message or a table ("true or false",
 * "a number from 1, at most 1000000, or inf", ...): commsched_knobs_set
 * refuses anything else, so a pass never sees a value it cannot use.
 * Writes at most size bytes with the NUL; returns buf ("" for an
 * out-of-range index). */
COMMSCHED_EXPORT const char *commsched_knob_accepts(size_t i, char *buf,
                                                    size_t size);

/* ---- the pass table ------------------------------------------------------ */

COMMSCHED_EXPORT size_t commsched_pass_count(void);
COMMSCHED_EXPORT const char *commsched_pass_name(size_t i);
COMMSCHED_EXPORT const char *commsched_pass_description(size_t i);

/* The pipeline `commsched optimize` runs by default: "overlap" (at least as
 * fast as Inductor's recommended list at any per-pass budget that fits the
 * same memory, on every workload of the corpus; docs/PASSES.md). */
COMMSCHED_EXPORT const char *commsched_default_pipeline(void);

/* ---- statistics ----------------------------------------------------------- */

typedef enum commsched_stats_kind {
    COMMSCHED_STATS_NONE = 0,    /* the pass keeps no per-node table */
    COMMSCHED_STATS_REORDER = 1, /* ReorderInfo per collective */
    COMMSCHED_STATS_SINK = 2,    /* SinkWaitInfo per wait */
    COMMSCHED_STATS_BUCKET = 3,  /* one commsched_bucket_stats per bucket */
    COMMSCHED_STATS_OVERLAP = 4  /* overlap: one commsched_overlap_stats per
                                    collective (and a commsched_node_stats
                                    row per collective, for reports) */
} commsched_stats_kind;

/* One row of the seed's ReorderInfo / SinkWaitInfo (times in ns, already
 * multiplied by the reorder_sink_runtime_estimations_* factors). */
typedef struct commsched_node_stats {
    uint32_t node;
    double comm_time, comp_time, initial_exposed, final_exposed;
    uint32_t moves, grouped;
    const char *limiting_factor; /* "None" when nothing stopped it */
    const char *grouped_info;
    const char *moves_info;      /* sink only: "+a+b" */
    const char *overlap_info;
} commsched_node_stats;

/* One bucket a bucketing pass formed (bucket_all_gather, ...): its members
 * became one copy-in node, one collective and one wait (docs/PASSES.md). */
typedef struct commsched_bucket_stats {
    uint32_t node;            /* the merged collective, in the pass's graph */
    uint32_t copy_in, wait;   /* its copy-in and wait nodes, likewise */
    uint32_t n_members;
    const char *const *members; /* the former collectives' names, in wait
                                   order (copies owned by the run) */
    int64_t bytes;            /* the merged collective's bytes: the larger
                                 of its flat input and output (docs/COST.md) */
    double time_before_ns;    /* the members' runtimes, summed */
    double time_after_ns;     /* merged collective + copy-in (cost model) */
    const char *closed_by;    /* why it took no further member: "cap",
                                 "max_ops", "cut" (bucket_cuts), "memory",
                                 "cost", "key" (the
                                 next collective in wait order has another
                                 key or cannot be bucketed), "dependency"
                                 (the rest of its run depends on it),
                                 "end" (no further collective) */
} commsched_bucket_stats;

/* One collective as the overlap pass left it (docs/PASSES.md, overlap).
 * Positions are indices in the pass's input order (before) and output order
 * (after); times come from the simulator (simulate.h) with the pipeline's
 * runtimes, one comm stream per process group. */
typedef struct commsched_overlap_stats {
    uint32_t node;                     /* the collective */
    uint32_t wait;                     /* its first wait in the output
                                          order; COMMSCHED_NONE: none */
    uint32_t issue_before, issue_after; /* its own positions */
    uint32_t wait_before, wait_after;  /* its first wait's positions;
                                          COMMSCHED_NONE without a wait */
    double comm_ns;                    /* its runtime */
    double exposed_before_ns, exposed_after_ns;
    double hidden_before, hidden_after; /* 1 - exposed / comm, in [0, 1]
                                           (1 for a collective of no time) */
    const char *limit;                 /* what kept it from hiding fully
                                          ("none", "data dependency",
                                          "memory budget", "in-flight limit",
                                          "stream busy", "no compute left",
                                          "sync"); static text */
} commsched_overlap_stats;

typedef struct commsched_pass_stats {
    const char *pass;
    double wall_ms;
    int64_t peak_before, peak_after;
    commsched_stats_kind kind;
    uint32_t n_nodes;
    const commsched_node_stats *nodes;
    uint32_t fake_edges_added; /* decide_global_ordering_of_comms */
    /* The graph the node indices above and below refer to: the graph the
     * pass left (a bucketing pass builds a new one). Borrowed: the caller's
     * graph or one the run owns. */
    const commsched_graph *graph;
    uint32_t n_buckets;        /* COMMSCHED_STATS_BUCKET */
    const commsched_bucket_stats *buckets;
    uint32_t fake_edges_dropped; /* bucketing: after_fake edges the
                                    rewritten order no longer respects */
    /* COMMSCHED_STATS_OVERLAP: one row per collective, in output order. */
    uint32_t n_overlap;
    const commsched_overlap_stats *overlap;
    const char *overlap_variant; /* the candidate order that won ("input"
                                    when none beat the input order) */
    int64_t overlap_budget_bytes; /* the peak the pass kept within; -1 for
                                     no limit (overlap_peak_budget=inf) */
    uint32_t overlap_candidates; /* orders built and simulated */
    /* Bucketing: merges priced, and how many times a merge's figures were
     * computed on the whole merged graph rather than from its window of
     * the schedule (docs/PASSES.md, "Bucketing"; verify mode's own
     * checks not counted). */
    uint32_t merges_priced, full_pricings;
    /* COMMSCHED_STATS_OVERLAP, beside overlap_budget_bytes (the per-step
     * peak's budget): the budget of the peak over simulated time (-1 for
     * none: overlap_peak_model=step, or no limit), the time peaks of the
     * pass's input and output orders (-1 when not budgeted), how many
     * candidate orders a budget refused, and which budget refused the
     * fastest order faster than the answer: "none" (memory held nothing
     * back), "step", "time" or "step and time" (static text). */
    int64_t overlap_time_budget_bytes;
    int64_t overlap_peak_time_before, overlap_peak_time_after;
    uint32_t overlap_over_budget;
    const char *overlap_binds;
} commsched_pass_stats;

/* The record of one pipeline run. */
typedef struct commsched_run commsched_run;

COMMSCHED_EXPORT void commsched_run_destroy(commsched_run *r);
COMMSCHED_EXPORT size_t commsched_run_pass_count(const commsched_run *r);
/* Borrowed until the run is destroyed. */
COMMSCHED_EXPORT const commsched_pass_stats *
commsched_run_pass(const commsched_run *r, size_t i);

/* ---- running ------------------------------------------------------------- */

#define COMMSCHED_PIPELINE_VERIFY 1u /* invariant check after every pass and
                                        a full memory recompute after every
                                        move (--verify-memory) */
#define COMMSCHED_PIPELINE_ORDER_ONLY 2u /* for a caller that reads only the
                                            order: the iterative passes'
                                            overlap_info texts are left
                                            empty (writing them, floats as
                                            Python prints them, was most of
                                            RCPPM's time); every figure and
                                            the limiting factors stay */

/* Runs `passes` ("a,b,c"; "" or "none" runs nothing) over schedule s of
 * graph g. runtime_ns[i] is node i's runtime estimate (the cost model's or
 * the file's), used by the passes exactly as Inductor uses
 * estimate_op_runtime. k NULL means every knob at its default. g is modified only by passes that add fake edges
 * (decide_global_ordering_of_comms). On success *out holds the statistics
 * (caller destroys). On failure s may hold a partially optimized order
 * (valid, except after EINTERNAL); *out is NULL. With the invariant check
 * on (debug builds, or COMMSCHED_PIPELINE_VERIFY): an order s that breaks
 * an edge or races before any pass runs gives EORDER (the caller's);
 * an order a pass breaks gives EINTERNAL naming the pass. Unknown pass
 * names give EINVAL before anything
 * runs, and so do passes that rewrite the graph (commsched_pass_rewrites):
 * run those with commsched_pipeline_apply.
 * Cost: its passes' (docs/PASSES.md, "Cost" and each pass's section;
 * docs/PERFORMANCE.md measures each one's growth), plus per pass two peaks
 * of the memory model (O(V + B + R), graph.h's terms) and, with the
 * invariant check on, commsched_schedule_check and _check_races
 * (O(V + E + R + B)); a pipeline with overlap after its first pass also
 * simulates the input order once. */
COMMSCHED_EXPORT commsched_status commsched_pipeline_run(
    commsched_graph *g, commsched_schedule *s, const double *runtime_ns,
    const char *passes, const commsched_knobs *k, unsigned flags,
    commsched_run **out, commsched_error *err);

/* Checks a pipeline's names without running it, so a caller can refuse a
 * misspelt pass before loading anything: EINVAL names the first name that
 * is no pass, with the closest pass when it looks like a misspelling of
 * one ("did you mean") and else the list of passes -- the same message
 * commsched_pipeline_run and commsched_optimize give. NULL is the empty
 * pipeline. O(strlen(passes)) (the pass table is fixed). */
COMMSCHED_EXPORT commsched_status commsched_pipeline_check(const char *passes,
                                                           commsched_error *err);

/* 1 when pass i replaces the graph instead of reordering it (the bucketing
 * passes); 0 otherwise or out of range. */
COMMSCHED_EXPORT int commsched_pass_rewrites(size_t i);

/* commsched_pipeline_run for pipelines that may rewrite the graph.
 *
 * *g and *s are the graph and a schedule over it, as for
 * commsched_pipeline_run. A rewriting pass builds a new graph (through the
 * builder, so it is a valid graph) and a schedule over it, and the
 * following passes run on those: on return *g and *s point at the final
 * graph and schedule. Ownership: the graph and schedule passed in stay
 * the caller's (the pipeline never destroys them; they change only as
 * commsched_pipeline_run changes them); every graph and schedule a pass
 * creates is owned by the run and lives until commsched_run_destroy. So a
 * caller keeps its own pointers, destroys the run first and then its own
 * graph and schedule.
 *
 * runtime_ns[i] is the runtime of node i of the graph passed in. Nodes a
 * rewrite creates are estimated with `cost` (NULL: the defaults of
 * commsched_cost_options_init); the other nodes keep their runtime_ns
 * value. commsched_run_runtime_ns gives the runtimes of the final graph.
 *
 * On failure *out is NULL and *g, *s are the ones passed in again (s may
 * hold a partially optimized order, valid except after EINTERNAL).
 * Cost: as commsched_pipeline_run; a rewriting pass's own cost includes
 * building its graph (commsched_builder_finish; docs/PASSES.md,
 * "Bucketing"). */
COMMSCHED_EXPORT commsched_status commsched_pipeline_apply(
    commsched_graph **g, commsched_schedule **s, const double *runtime_ns,
    const commsched_cost_options *cost, const char *passes,
    const commsched_knobs *k, unsigned flags, commsched_run **out,
    commsched_error *err);

/* The runtimes the run's last pass used, one per node of the final graph
 * (the graph commsched_pipeline_apply left in *g): the caller's runtime_ns
 * when no pass rewrote the graph, else an array owned by the run. Borrowed
 * until the run is destroyed. */
COMMSCHED_EXPORT const double *commsched_run_runtime_ns(const commsched_run *r);

/* Fake edges of g that the order in s violates (the iterative passes may
 * break them) are removed from g; *dropped receives how many. Call before
 * saving, so the output loads again. The pairs removed are listed in
 * (*names)[2k] -> (*names)[2k+1] when names is not NULL (caller frees the
 * array with commsched_free; the strings are borrowed from g).
 * O(V + F) for F `after_fake` edges. */
COMMSCHED_EXPORT commsched_status commsched_graph_drop_violated_fake_edges(
    commsched_graph *g, const commsched_schedule *s, uint32_t *dropped,
    const char ***names, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_PASSES_H */
