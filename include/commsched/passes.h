/* commsched — scheduling passes, their knobs and the pipeline that runs
 * them (DESIGN.md §6).
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
/* The knob table, for --help and docs: name, default as text, meaning.
 * Out-of-range indices give NULL. */
COMMSCHED_EXPORT size_t commsched_knob_count(void);
COMMSCHED_EXPORT const char *commsched_knob_name(size_t i);
COMMSCHED_EXPORT const char *commsched_knob_default(size_t i);
COMMSCHED_EXPORT const char *commsched_knob_description(size_t i);

/* ---- the pass table ------------------------------------------------------ */

COMMSCHED_EXPORT size_t commsched_pass_count(void);
COMMSCHED_EXPORT const char *commsched_pass_name(size_t i);
COMMSCHED_EXPORT const char *commsched_pass_description(size_t i);

/* The pipeline `commsched optimize` runs by default (Inductor's recommended
 * list). */
COMMSCHED_EXPORT const char *commsched_default_pipeline(void);

/* ---- statistics ----------------------------------------------------------- */

typedef enum commsched_stats_kind {
    COMMSCHED_STATS_NONE = 0,    /* the pass keeps no per-node table */
    COMMSCHED_STATS_REORDER = 1, /* ReorderInfo per collective */
    COMMSCHED_STATS_SINK = 2     /* SinkWaitInfo per wait */
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

typedef struct commsched_pass_stats {
    const char *pass;
    double wall_ms;
    int64_t peak_before, peak_after;
    commsched_stats_kind kind;
    uint32_t n_nodes;
    const commsched_node_stats *nodes;
    uint32_t fake_edges_added; /* decide_global_ordering_of_comms */
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

/* Runs `passes` ("a,b,c"; "" or "none" runs nothing) over schedule s of
 * graph g. runtime_ns[i] is node i's runtime estimate (the cost model's or
 * the file's), used by the passes exactly as Inductor uses
 * estimate_op_runtime. g is modified only by passes that add fake edges
 * (decide_global_ordering_of_comms). On success *out holds the statistics
 * (caller destroys). On failure s may hold a partially optimized but valid
 * order; *out is NULL. Unknown pass names give EINVAL before anything
 * runs. */
COMMSCHED_EXPORT commsched_status commsched_pipeline_run(
    commsched_graph *g, commsched_schedule *s, const double *runtime_ns,
    const char *passes, const commsched_knobs *k, unsigned flags,
    commsched_run **out, commsched_error *err);

/* Fake edges of g that the order in s violates (the iterative passes may
 * break them) are removed from g; *dropped receives how many. Call before
 * saving, so the output loads again. The pairs removed are listed in
 * (*names)[2k] -> (*names)[2k+1] when names is not NULL (caller frees the
 * array with commsched_free; the strings are borrowed from g). */
COMMSCHED_EXPORT commsched_status commsched_graph_drop_violated_fake_edges(
    commsched_graph *g, const commsched_schedule *s, uint32_t *dropped,
    const char ***names, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_PASSES_H */
