/* commsched — the simulator: the judge of every schedule (docs/REPORTS.md,
 * "What the figures mean").
 *
 * The host issues nodes in schedule order onto one compute stream and one
 * comm stream per process group (or a single shared comm stream):
 * - compute: starts when the compute stream is free, runs its runtime;
 * - async collective: starts at max(compute-stream time at its issue point,
 *   the time its stream is free), runs on its comm stream;
 * - wait: the compute stream jumps to max(now, end of the collective(s)
 *   whose outputs it reads); the jump is those collectives' exposed time;
 *   then the wait's own runtime (normally 0) runs on the compute stream;
 * - sync collective: starts at max(compute-stream time, its stream free),
 *   occupies both until it ends; exposed = its end - the compute-stream
 *   time at its issue.
 * Reported: per-node issue/start/end, per-collective exposed and overlapped
 * compute, makespan, totals, overlap, the lower bound (docs/REPORTS.md) and
 * efficiency = bound / makespan, and memory over simulated time (allocate
 * at a node's start, free at the end of the buffer's last reader in time)
 * beside the per-step peak of §3.
 *
 * Cost (graph.h's terms): O(V + E + R + B) per run plus O(C log V) for
 * the overlapped-compute figures (C collectives) and O(V log S) for the
 * memory curve (S streams); a wait that completes k collectives costs
 * O(k^2) more when its inputs are not listed in the order those end (they
 * are insertion-sorted by end time). A
 * commsched_sim owns its result buffers, so a caller estimates runtimes
 * once (commsched_cost_graph) and simulates many orders into one sim with
 * no allocation after the first run. Distinct sims may run concurrently
 * over one graph (the graph is only read); one sim belongs to one thread.
 */
#ifndef COMMSCHED_SIMULATE_H
#define COMMSCHED_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct commsched_sim commsched_sim;

typedef enum commsched_comm_streams {
    COMMSCHED_STREAMS_PER_GROUP = 0, /* one comm stream per process group */
    COMMSCHED_STREAMS_SINGLE = 1     /* every collective shares one stream */
} commsched_comm_streams;

/* Option flags. */
#define COMMSCHED_SIM_MEMORY 1u       /* compute both memory peaks */
#define COMMSCHED_SIM_MEMORY_CURVE 2u /* keep the curve too (implies MEMORY) */
#define COMMSCHED_SIM_BOUND 4u  /* also the stream bound (bound_stream_ns):
                                   O(V + E + V log V) more per run, and up
                                   to 8,192 nodes O((V + E) V / 64) for
                                   the ancestor bit sets */

typedef struct commsched_sim_options {
    commsched_comm_streams comm_streams;
    unsigned flags;
} commsched_sim_options;

/* Per-group streams, memory peaks on, no curve, no stream bound (the
 * passes simulate many orders and need only the timeline and the peak;
 * reports add COMMSCHED_SIM_BOUND). */
COMMSCHED_EXPORT void commsched_sim_options_init(commsched_sim_options *o);

/* Stream 0 is the compute stream; comm streams follow. */
#define COMMSCHED_STREAM_COMPUTE 0u

/* One node's simulated timeline. Times in ns from the step's start. */
typedef struct commsched_sim_node {
    double issue_ns;      /* compute-stream time when the host issues it */
    double start_ns;      /* waits: after the stall */
    double end_ns;
    double exposed_ns;    /* collectives: compute-stream stall charged to
                             it; waits: their stall; compute: 0 */
    double overlapped_ns; /* async collectives: compute-node time that ran
                             on the compute stream within [start, end] */
    uint32_t stream;      /* compute nodes and waits: 0; collectives: their
                             comm stream (sync ones occupy 0 as well) */
    uint32_t position;    /* index in the simulated order */
    uint32_t wait;        /* collectives: the first wait (in order) that
                             completes it, COMMSCHED_NONE if none */
} commsched_sim_node;

typedef struct commsched_sim_totals {
    double makespan_ns;      /* latest end over all streams */
    double compute_ns;       /* sum of compute-node runtimes */
    double comm_ns;          /* sum of collective runtimes */
    double exposed_ns;       /* sum of the collectives' exposed time */
    double overlap;          /* 1 - exposed / comm; 1.0 with no comm */
    double lower_bound_ns;   /* max of the terms below (the stream bound
                                when COMMSCHED_SIM_BOUND) */
    double bound_compute_ns; /* compute-stream load: compute + wait + sync
                                collective runtimes */
    double bound_comm_ns;    /* the busiest comm stream's load */
    uint32_t bound_comm_stream; /* which one (COMMSCHED_NONE: no comm) */
    double bound_path_ns;    /* critical path over the enforced edges
                                (with the after_fake edges this order
                                respects: valid for this order) */
    double efficiency;       /* lower_bound / makespan; 1.0 when 0 / 0 */
    uint32_t n_collectives;
    uint32_t n_waits;
    /* Memory (COMMSCHED_SIM_MEMORY; zero otherwise). */
    int64_t memory_baseline; /* freeable graph inputs that are read */
    int64_t peak_memory;     /* over simulated time */
    double peak_memory_at_ns;
    int64_t peak_memory_step; /* per-step peak (docs/FORMAT.md), same order */
    /* The stream bound (COMMSCHED_SIM_BOUND; zero otherwise): no order the
     * simulator accepts finishes sooner (docs/REPORTS.md, "Lower bound");
     * the same for every order of the graph. */
    double bound_stream_ns;
    uint32_t bound_stream;   /* the stream that sets it (0 compute, then
                                the comm streams; COMMSCHED_NONE: none) */
} commsched_sim_totals;

/* One point of the memory curve: live bytes from time_ns on. */
typedef struct commsched_sim_memory_point {
    double time_ns;
    int64_t bytes;
} commsched_sim_memory_point;

/* A simulator for graph g (borrowed: it must outlive the sim). Allocates
 * the per-node result buffers once. Caller destroys. O(V + groups). */
COMMSCHED_EXPORT commsched_status commsched_sim_create(const commsched_graph *g,
                                                       commsched_sim **out,
                                                       commsched_error *err);

/* Frees the sim and its results. NULL is allowed. */
COMMSCHED_EXPORT void commsched_sim_destroy(commsched_sim *sim);

/* Simulates `order` (a permutation of the nodes in a topological order of
 * the data and `after` edges; NULL: the graph's own order) with runtime_ns[i]
 * for node i (>= 0, finite; borrowed for the call). opts NULL means
 * commsched_sim_options_init's defaults. Replaces the previous results.
 * EINVAL for a bad permutation or runtime, EORDER when a node precedes a
 * dependency; after an error the results are unspecified. Cost: as above,
 * with the options' flags. */
COMMSCHED_EXPORT commsched_status commsched_sim_run(
    commsched_sim *sim, const uint32_t *order, const double *runtime_ns,
    const commsched_sim_options *opts, commsched_error *err);

/* The same for a schedule of the same graph (its current order), plus
 * O(V) to read the order. */
COMMSCHED_EXPORT commsched_status commsched_sim_run_schedule(
    commsched_sim *sim, const commsched_schedule *s, const double *runtime_ns,
    const commsched_sim_options *opts, commsched_error *err);

/* Results of the last successful run, borrowed until the next run or
 * destroy. Nodes are indexed by node index (not position). */
COMMSCHED_EXPORT const commsched_graph *
commsched_sim_graph(const commsched_sim *sim);
COMMSCHED_EXPORT const commsched_sim_totals *
commsched_sim_get_totals(const commsched_sim *sim);
COMMSCHED_EXPORT const commsched_sim_node *
commsched_sim_get_nodes(const commsched_sim *sim);
/* The simulated order (node count entries). */
COMMSCHED_EXPORT const uint32_t *commsched_sim_get_order(const commsched_sim *sim);
/* The options of the last run. */
COMMSCHED_EXPORT commsched_sim_options
commsched_sim_get_options(const commsched_sim *sim);

/* Streams of the last run: 0 is "compute", then one per process group
 * (named after it) or one named "comm". Names are borrowed from the graph
 * or static. busy = the runtime the stream carried. */
COMMSCHED_EXPORT uint32_t commsched_sim_stream_count(const commsched_sim *sim);
COMMSCHED_EXPORT const char *commsched_sim_stream_name(const commsched_sim *sim,
                                                       uint32_t stream);
COMMSCHED_EXPORT double commsched_sim_stream_busy(const commsched_sim *sim,
                                                  uint32_t stream);

/* The memory curve of the last run (COMMSCHED_SIM_MEMORY_CURVE): points in
 * time order, the first at 0 with the baseline; one point per allocation or
 * free. *count 0 and NULL when it was not requested. */
COMMSCHED_EXPORT const commsched_sim_memory_point *
commsched_sim_get_memory_curve(const commsched_sim *sim, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_SIMULATE_H */
