/* commsched — overlap reports from a simulation (docs/REPORTS.md): an
 * aligned text table, a JSON document with stable keys, a Chrome trace
 * event file that Perfetto and chrome://tracing open, and a self-contained
 * HTML page (timelines per stream, memory curve, sortable
 * per-collective table) or its timeline alone as SVG.
 *
 * Every writer streams: it never holds more than one row or one event in
 * memory besides the simulation itself, so a million-node step can be
 * reported. The writers only read the sim (borrowed for the call); distinct
 * calls may run concurrently on distinct streams.
 */
#ifndef COMMSCHED_REPORT_H
#define COMMSCHED_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "commsched/cost.h"
#include "commsched/passes.h"
#include "commsched/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Figures as every report writes them, so a tool prints the same quantity
 * the same way: bytes in binary units ("512 B", "1.50 GiB"; negatives keep
 * their sign) and nanoseconds as "890 ns", "56.7 us", "1.234 ms" (three
 * decimals), "2.000 s" ("-" when not finite). Each writes at most size
 * bytes (always terminated when size > 0) and returns buf. */
COMMSCHED_EXPORT const char *commsched_format_bytes(double bytes, char *buf,
                                                    size_t size);
COMMSCHED_EXPORT const char *commsched_format_time(double ns, char *buf,
                                                   size_t size);

/* "s" unless n is 1, for a count followed by its noun:
 * printf("%u node%s", n, COMMSCHED_PLURAL(n)) gives "1 node", "0 nodes",
 * "2 nodes" -- the one rule every report and the CLI follow. A macro, so
 * it takes any integer or floating type without a conversion. */
#define COMMSCHED_PLURAL(n) ((n) == 1 ? "" : "s")

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
 * Fits 120 columns. EIO when the stream fails. O(V + R) (graph.h's
 * terms), each collective's bytes as commsched_cost_collective_bytes. */
COMMSCHED_EXPORT commsched_status commsched_report_table(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* The same figures as JSON (format "commsched-simulation", version 1; keys
 * in docs/REPORTS.md). One top-level key per line, one collective per line.
 * ENOMEM / EIO on failure. O(V + R), as the table. */
COMMSCHED_EXPORT commsched_status commsched_report_json(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* Chrome trace event JSON: one thread per stream (named after it, in stream
 * order), complete events (ph "X", µs) for every node, a "memory" counter
 * track (ph "C") when the run kept the memory curve
 * (COMMSCHED_SIM_MEMORY_CURVE), flow arrows (ph "s" / "f") from each
 * collective to its wait, and process/thread name metadata. O(V + R +
 * curve points), and O(r^2) for a wait with r inputs (each input's
 * collective is searched for among the earlier inputs, one arrow each). */
COMMSCHED_EXPORT commsched_status commsched_report_trace(
    FILE *out, const commsched_sim *sim, const commsched_report_context *ctx,
    commsched_error *err);

/* ---- the passes' statistics -------------------------------------------- */

#define COMMSCHED_STATS_JSON_TIMING 1u /* each pass's "wall_ms" */
#define COMMSCHED_STATS_JSON_INDENT 2u /* one item a line, indented one
                                          space a level (jansson's
                                          JSON_INDENT(1)); else compact */

/* The statistics of every pass of run (NULL: none) as one JSON array,
 * one object per pass (keys in docs/PASSES.md: pass, peak
 * memory before and after, fake edges added, the per-node rows, and the
 * buckets or per-collective rows of bucketing and overlap passes), with
 * node names from g (or from the graph a pass built). Streams row by row:
 * the "stats" member of a saved schedule (commsched_graph_save_stream_with)
 * and `optimize --stats=json`; the rows of a pass over 10,000 nodes or more
 * are made on OpenMP's threads, as the save's node lines are
 * (commsched_graph_save_stream). Borrows everything for the call. ENOMEM,
 * EIO when the stream fails, EINVAL for a non-finite figure (the output is
 * then incomplete). O(the statistics' rows + bucket members). */
COMMSCHED_EXPORT commsched_status commsched_run_stats_write_json(
    FILE *out, const commsched_graph *g, const commsched_run *run,
    unsigned flags, commsched_error *err);

/* What a saved graph's "schedule" object records (docs/FORMAT.md "The
 * `schedule` object"): what `commsched optimize` and `tune` write, and
 * anyone else saving an optimized order. Everything borrowed. */
typedef struct commsched_schedule_record {
    const char *passes;              /* the pipeline as given */
    int64_t peak_before, peak_after; /* bytes, the memory model's */
    int has_dropped;                 /* write "dropped_fake_edges" */
    const char *const *dropped;      /* from, to names: 2 * n_dropped */
    uint32_t n_dropped;
    const commsched_graph *g;        /* "stats": run's passes, names from g */
    const commsched_run *run;        /* NULL: an empty array */
    const commsched_knobs *knobs;    /* "knobs": every knob's value as text
                                        --set reads back; NULL: none */
    long tune_candidate;             /* >= 0: "tune": {"candidate", "budget"} */
    double tune_budget;              /* inf is written "inf" */
} commsched_schedule_record;

/* Every field empty, tune_candidate -1 (no "tune" member). */
COMMSCHED_EXPORT void commsched_schedule_record_init(
    commsched_schedule_record *r);

/* A commsched_schedule_writer (graph.h) for commsched_graph_save_stream_with:
 * ctx is a commsched_schedule_record. Writes, compact and in this order,
 * "passes", "before" and "after" ({"peak_memory"}), "dropped_fake_edges"
 * (when has_dropped), "stats" (commsched_run_stats_write_json's array,
 * without wall times), "knobs", "tune" -- through the one JSON writer, the
 * statistics streamed row by row. ENOMEM, EIO when the stream fails.
 * O(the statistics' rows + knobs). */
COMMSCHED_EXPORT commsched_status commsched_schedule_record_write(
    FILE *out, void *ctx, commsched_error *err);

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
 * in node order. EINVAL for an unusable profile, EIO / ENOMEM on output.
 * O(V + R): commsched_cost_node per node (cost.h). */
COMMSCHED_EXPORT commsched_status commsched_report_estimates_table(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const struct commsched_memory *mem, commsched_error *err);
COMMSCHED_EXPORT commsched_status commsched_report_estimates_json(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const struct commsched_memory *mem, commsched_error *err);


/* ---- measured runs ------------------------------------------------------ */

/* Per-rank totals of a measured run (NaN where the file gives nothing). */
typedef struct commsched_measured_run_rank {
    int64_t rank;
    double makespan_ns, compute_ns, comm_ns, exposed_ns;
    int64_t peak_memory; /* bytes, -1 when absent */
    uint32_t n_timed;    /* nodes with a measured start and end */
} commsched_measured_run_rank;

/* A measured run of one graph (the MPI runtime's output, or any tool that
 * writes the same JSON: docs/REPORTS.md "Measured runs"), to set beside the
 * simulator's prediction: one set of figures per node, as a report reads
 * it back. (The runtime's raw record of every rank and iteration, before it
 * is reduced and written, is runtime.h's commsched_measurement.) Node arrays are indexed by node index of `graph`
 * and hold NaN where a node was not measured. Created by
 * commsched_measured_run_create (everything absent, for callers that fill it
 * by hand) or the loaders; every pointer is owned by the struct and freed
 * by commsched_measured_run_destroy. */
typedef struct commsched_measured_run {
    const commsched_graph *graph; /* borrowed: must outlive the struct */
    char *runtime;                /* "mpi", ... or NULL */
    char *graph_name;             /* as the file says, or NULL */
    char *timeline_from;          /* "run" (top-level nodes) or "rank N" */
    /* Totals: from the file's "totals", else derived from the nodes (the
     * latest end; sums of collective runtimes and exposures), else NaN. */
    double makespan_ns, compute_ns, comm_ns, exposed_ns, overlap;
    int64_t peak_memory;          /* bytes, -1 when absent */
    double *start_ns, *end_ns;    /* per node, NaN when absent */
    double *issue_ns;             /* per node, NaN when absent */
    double *exposed_ns_of;        /* per node (collectives, waits), NaN */
    uint32_t n_timed;             /* nodes with start and end */
    uint32_t n_ranks;
    commsched_measured_run_rank *ranks;
    /* The run's own prediction, when it made one (the MPI runtime's
     * "prediction": calibrated solo timings or the cost model, scaled as
     * the run was): source ("calibrated", "model") or NULL, and totals
     * (NaN where absent). */
    char *prediction_source;
    double pred_makespan_ns, pred_compute_ns, pred_comm_ns, pred_exposed_ns,
        pred_overlap;
    /* How the run was made ("compute sleep, size scale 0.01, 10
     * iterations"), from its "options", or NULL. */
    char *options_note;
} commsched_measured_run;

/* An empty measured run of g (every figure absent). Caller destroys.
 * O(V). */
COMMSCHED_EXPORT commsched_status commsched_measured_run_create(
    const commsched_graph *g, commsched_measured_run **out, commsched_error *err);

/* Loads a measured run ("-": standard input) whose node names resolve in g
 * (borrowed; it must outlive the result). Syntax errors carry line:column,
 * field errors a JSON path ("nodes[3].end_ns: ..."): EPARSE / ESCHEMA, bad
 * input both; EIO when the file cannot be read. Caller destroys.
 * O(file size + V) expected (node names are hashed). */
COMMSCHED_EXPORT commsched_status commsched_measured_run_load_file(
    const char *path, const commsched_graph *g, commsched_measured_run **out,
    commsched_error *err);
/* The same from a NUL-terminated JSON text, at the same cost. */
COMMSCHED_EXPORT commsched_status commsched_measured_run_load_string(
    const char *text, const commsched_graph *g, commsched_measured_run **out,
    commsched_error *err);
/* NULL is allowed. */
COMMSCHED_EXPORT void commsched_measured_run_destroy(commsched_measured_run *m);

/* ---- HTML page and SVG timeline ------------------------------------------ */

/* One row of a pass's per-node statistics (Inductor's ReorderInfo for a
 * collective, SinkWaitInfo for a wait) to show beside the collective in the
 * HTML table. Strings borrowed for the call. */
typedef struct commsched_html_pass_row {
    const char *pass;             /* the pass's name */
    const char *node;             /* a collective's or a wait's name */
    const char *limiting_factor;  /* "None" (or NULL) when nothing stopped it */
    uint32_t moves;
    double initial_exposed_ns, final_exposed_ns;
} commsched_html_pass_row;

/* What the page shows besides the "after" simulation. Initialise with
 * commsched_html_options_init; everything is optional and borrowed for the
 * call. */
typedef struct commsched_html_options {
    const char *title;        /* NULL: "commsched: <graph name>" */
    const commsched_sim *before; /* the order before optimizing, simulated
                                    with the same runtimes; NULL: none. May be
                                    a sim of another graph (an older file):
                                    collectives are matched by name */
    const char *label_before, *label_after; /* NULL: "before", "after" */
    const commsched_report_context *ctx;    /* device, cost model, sources
                                               (of the after graph) */
    const char *passes;       /* the pipeline that ran, or NULL */
    int64_t memory_budget;    /* bytes; < 0: no budget line */
    const char *memory_budget_note; /* how the budget was derived (shown) */
    const commsched_html_pass_row *pass_rows;
    size_t n_pass_rows;
    const commsched_measured_run *measured; /* of the after graph; NULL: none */
    uint32_t max_bars;  /* nodes per run sent to the page individually
                           (the longest ones when a run has more; the rest
                           are drawn as per-lane bins); 0: 50000 */
    uint32_t max_rows;  /* collectives in the table (the most exposed when
                           there are more); 0: 2000 */
} commsched_html_options;

COMMSCHED_EXPORT void commsched_html_options_init(commsched_html_options *o);

/* One self-contained HTML page (inline CSS, SVG and JavaScript; no
 * network, no external file): the summary before/after with the change,
 * timelines on one time axis (the compute stream and one lane per comm
 * stream, before, after and measured; exposed stalls marked; hover shows a
 * node; drag to zoom), memory over time with each peak and the budget line,
 * the sortable per-collective table with pass statistics, and measured vs
 * predicted figures. `after` (and o->before) should have run with
 * COMMSCHED_SIM_MEMORY_CURVE for the memory chart (the page says when a
 * curve is missing). Streams the page: memory is O(V) for the chosen nodes
 * plus O(lanes x bins), never the page itself. EINVAL for a measured run of
 * another graph, EIO / ENOMEM on failure. Time: O(V log V + R + curve
 * points) per run drawn (the longest nodes are chosen by sorting), plus
 * O(C log C) for the table (the most exposed collectives). */
COMMSCHED_EXPORT commsched_status commsched_report_html(
    FILE *out, const commsched_sim *after, const commsched_html_options *o,
    commsched_error *err);

/* The timeline alone as a standalone SVG document (for docs and papers):
 * the same lanes, bars and aggregated bins as the page's first view, with a
 * <title> tooltip per bar. The page's cost, without the table. */
COMMSCHED_EXPORT commsched_status commsched_report_svg(
    FILE *out, const commsched_sim *after, const commsched_html_options *o,
    commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_REPORT_H */
