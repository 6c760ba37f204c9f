/* commsched — overlap reports from a simulation (DESIGN.md §7,
 * docs/REPORTS.md): an aligned text table, a JSON document with stable keys,
 * and a Chrome trace event file that Perfetto and chrome://tracing open.
 *
 * Every writer streams: it never holds more than one row or one event in
 * memory besides the simulation itself, so a million-node step can be
 * reported. The writers only read the sim (borrowed for the call); distinct
 * calls may run concurrently on distinct streams.
 */
#ifndef COMMSCHED_REPORT_H
#define COMMSCHED_REPORT_H

#include <stdio.h>

#include "commsched/cost.h"
#include "commsched/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the report says about where its numbers came from. Every field may
 * be NULL / 0. Borrowed for the call. */
typedef struct commsched_report_context {
    const char *device;                   /* profile name ("h100") */
    const char *cost_model;               /* "nccl" / "inductor" */
    const commsched_cost_source *sources; /* per node, from the estimate */
    uint32_t max_rows;                    /* table: 0 = every collective;
                                             otherwise the first N in order */
    int totals_only;                      /* table: no per-collective rows */
} commsched_report_context;

/* The per-collective table (name, op, group, bytes, comm time and its
 * source, queue delay, compute overlapped, exposed, issue and wait
 * positions) followed by the totals, the lower bound and peak memory.
 * Fits 120 columns. EIO when the stream fails. */
COMMSCHED_EXPORT commsched_status commsched_report_table(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* The same figures as JSON (format "commsched-simulation", version 1; keys
 * in docs/REPORTS.md). One top-level key per line, one collective per line.
 * ENOMEM / EIO on failure. */
COMMSCHED_EXPORT commsched_status commsched_report_json(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* Chrome trace event JSON: one thread per stream (named after it, in stream
 * order), complete events (ph "X", µs) for every node, a "memory" counter
 * track (ph "C") when the run kept the memory curve
 * (COMMSCHED_SIM_MEMORY_CURVE), flow arrows (ph "s" / "f") from each
 * collective to its wait, and process/thread name metadata. */
COMMSCHED_EXPORT commsched_status commsched_report_trace(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* Two runs side by side (optimize --report): makespan, lower bound,
 * efficiency, compute, comm, exposed, overlap, both memory peaks, with the
 * change. Labels default to "before" / "after". */
COMMSCHED_EXPORT commsched_status commsched_report_compare(
    FILE *out, const commsched_sim_totals *before,
    const commsched_sim_totals *after, const char *label_before,
    const char *label_after, commsched_error *err);

/* Every node's estimate (commsched estimate): runtime and its source, the
 * model's cost tuple (latency, bandwidth term, computation, memory delta)
 * and, for collectives, ranks, hosts and the NCCL algorithm and protocol
 * priced. mem may be NULL (memory deltas print as 0); when given it tracks
 * some order of g (normally the file's). One row / one JSON line per node,
 * in node order. EINVAL for an unusable profile, EIO / ENOMEM on output. */
COMMSCHED_EXPORT commsched_status commsched_report_estimates_table(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const struct commsched_memory *mem, commsched_error *err);
COMMSCHED_EXPORT commsched_status commsched_report_estimates_json(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const struct commsched_memory *mem, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_REPORT_H */
