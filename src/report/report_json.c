/* commsched — the jansson boundary for reports: the simulation as JSON and
 * as a Chrome trace event file (docs/REPORTS.md).
 *
 * Both writers stream. Each top-level JSON key, each collective and each
 * trace event is a small json_t dumped on its own line and freed at once,
 * so memory stays O(1) beyond the simulation whatever the graph's size, and
 * jansson does every string escape. The simulator core never sees jansson.
 *
 * Numbers: times are doubles (ns in the JSON report, µs in the trace as the
 * trace format requires); integral values print as integers, others with
 * 12 significant digits, so files are stable and diff well. */
/* commsched — reports as JSON: the simulation (docs/REPORTS.md), the
 * Chrome trace of it, and the per-node estimates.
 *
 * Every file streams through the one JSON writer (src/base/json_writer.h):
 * memory stays O(1) beyond the simulation whatever the graph's size, and
 * the writer validates UTF-8 and escapes every string. The simulator core
 * never sees JSON.
 *
 * Numbers: times are doubles (ns in the JSON report, µs in the trace as the
 * trace format requires); integral values print as integers, others with
 * 12 significant digits, so files are stable and diff well. */
#include "commsched/report.h"
#include "commsched/memory.h"

#include <stdlib.h>
#include <string.h>

#include "graph_layout.h"
#include "report_writer.h"
#include "utf8.h"

#define REPORT_FORMAT "commsched-simulation"
#define REPORT_VERSION 1

static void key_number(cs_jw *w, const char *key, double v)
{
    cs_jw_key(w, key);
    cs_jw_number(w, v, CS_REPORT_PRECISION);
}

/* Rows and trace events: printf's style (json_writer.h). */
static void key_g(cs_jw *w, const char *key, double v)
{
    cs_jw_key(w, key);
    cs_jw_number_g(w, v, CS_REPORT_PRECISION);
}

static const char *bound_key(const commsched_sim_totals *t)
{
    if (t->lower_bound_ns <= 0)
        return "none";
    if (t->lower_bound_ns == t->bound_path_ns)
        return "critical_path";
    if (t->lower_bound_ns == t->bound_compute_ns)
        return "compute_stream";
    if (t->lower_bound_ns == t->bound_comm_ns)
        return "comm_stream";
    return "stream_bound";
}

/* Each header value on its own line, compact inside. */
static void compact_object(cs_jw *w, const char *key)
{
    cs_jw_key(w, key);
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
}

static void totals_json(cs_jw *w, const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    compact_object(w, "totals");
    key_number(w, "makespan_ns", t->makespan_ns);
    key_number(w, "compute_ns", t->compute_ns);
    key_number(w, "comm_ns", t->comm_ns);
    key_number(w, "exposed_ns", t->exposed_ns);
    key_number(w, "overlap", t->overlap);
    key_number(w, "lower_bound_ns", t->lower_bound_ns);
    key_number(w, "efficiency", t->efficiency);
    cs_jw_key_int(w, "collectives", t->n_collectives);
    cs_jw_key_int(w, "waits", t->n_waits);
    cs_jw_end(w);
}

static void bound_json(cs_jw *w, const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    compact_object(w, "lower_bound");
    key_number(w, "lower_bound_ns", t->lower_bound_ns);
    cs_jw_key_string(w, "binding", bound_key(t));
    key_number(w, "compute_stream_ns", t->bound_compute_ns);
    key_number(w, "busiest_comm_stream_ns", t->bound_comm_ns);
    cs_jw_key_string(
        w, "busiest_comm_stream",
        t->bound_comm_stream == COMMSCHED_NONE
            ? NULL
            : commsched_sim_stream_name(sim, t->bound_comm_stream));
    key_number(w, "critical_path_ns", t->bound_path_ns);
    if (commsched_sim_get_options(sim).flags & COMMSCHED_SIM_BOUND) {
        key_number(w, "stream_bound_ns", t->bound_stream_ns);
        cs_jw_key_string(w, "stream_bound_stream",
                         t->bound_stream == COMMSCHED_NONE
                             ? NULL
                             : commsched_sim_stream_name(sim, t->bound_stream));
    }
    cs_jw_end(w);
}

static void memory_json(cs_jw *w, const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    if (!(commsched_sim_get_options(sim).flags & COMMSCHED_SIM_MEMORY)) {
        cs_jw_key(w, "memory");
        cs_jw_null(w);
        return;
    }
    compact_object(w, "memory");
    cs_jw_key_int(w, "baseline", t->memory_baseline);
    cs_jw_key_int(w, "peak_simulated", t->peak_memory);
    key_number(w, "peak_simulated_at_ns", t->peak_memory_at_ns);
    cs_jw_key_int(w, "peak_per_step", t->peak_memory_step);
    cs_jw_end(w);
}

static void streams_json(cs_jw *w, const commsched_sim *sim)
{
    cs_jw_key(w, "streams");
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    for (uint32_t s = 0; s < commsched_sim_stream_count(sim); s++) {
        cs_jw_object(w);
        cs_jw_key_int(w, "id", s);
        cs_jw_key_string(w, "name", commsched_sim_stream_name(sim, s));
        cs_jw_key_string(w, "kind", s == 0 ? "compute" : "comm");
        key_number(w, "busy_ns", commsched_sim_stream_busy(sim, s));
        cs_jw_end(w);
    }
    cs_jw_end(w);
}

static void estimates_json(cs_jw *w, const commsched_sim *sim,
                           const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    if (!ctx->sources) {
        cs_jw_key(w, "estimates");
        cs_jw_null(w);
        return;
    }
    int64_t cnt[COMMSCHED_SOURCE_COUNT] = {0};
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if ((unsigned)ctx->sources[v] < COMMSCHED_SOURCE_COUNT)
            cnt[ctx->sources[v]]++;
    compact_object(w, "estimates");
    cs_jw_key_int(w, "file", cnt[COMMSCHED_SOURCE_FILE]);
    cs_jw_key_int(w, "model", cnt[COMMSCHED_SOURCE_MODEL]);
    /* measured tables' counts only where they priced a node: reports of
     * graphs priced without them keep their keys */
    if (cnt[COMMSCHED_SOURCE_MEASURED] || cnt[COMMSCHED_SOURCE_FITTED]) {
        cs_jw_key_int(w, "measured", cnt[COMMSCHED_SOURCE_MEASURED]);
        cs_jw_key_int(w, "fitted", cnt[COMMSCHED_SOURCE_FITTED]);
    }
    cs_jw_key_int(w, "none", cnt[COMMSCHED_SOURCE_NONE]);
    cs_jw_end(w);
}

/* One collective's row (docs/REPORTS.md), keys in a fixed order. */
static void collective_row(cs_jw *w, const commsched_sim *sim, uint32_t v,
                           const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const commsched_sim_node *r = &res[v];
    const cs_node *nd = &g->nodes[v];
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "name", nd->name);
    cs_jw_key_string(w, "op",
                     commsched_coll_op_str((commsched_coll_op)nd->coll_op));
    cs_jw_key_string(w, "group", g->groups[nd->group].name);
    cs_jw_key(w, "sync");
    cs_jw_bool(w, nd->is_sync);
    cs_jw_key_int(w, "stream", r->stream);
    key_g(w, "bytes", commsched_cost_collective_bytes(g, v));
    key_g(w, "comm_ns", r->end_ns - r->start_ns);
    cs_jw_key_string(w, "source",
                     ctx->sources ? commsched_cost_source_str(ctx->sources[v])
                                  : NULL);
    key_g(w, "issue_ns", r->issue_ns);
    key_g(w, "start_ns", r->start_ns);
    key_g(w, "end_ns", r->end_ns);
    key_g(w, "queued_ns", r->start_ns - r->issue_ns);
    key_g(w, "overlapped_ns", r->overlapped_ns);
    key_g(w, "exposed_ns", r->exposed_ns);
    cs_jw_key_int(w, "issue_position", r->position);
    if (r->wait == COMMSCHED_NONE) {
        cs_jw_key_string(w, "wait", NULL);
        cs_jw_key_string(w, "wait_position", NULL);
    } else {
        cs_jw_key_string(w, "wait", g->nodes[r->wait].name);
        cs_jw_key_int(w, "wait_position", res[r->wait].position);
    }
    cs_jw_end(w);
}

/* A list of rows under key, one a line: "[\n    row,\n    row\n  ]", or
 * "[]" with a line break before the closing brace when empty, as the
 * report has always been laid out. */
static void rows_begin(cs_jw *w, const char *key)
{
    cs_jw_key(w, key);
    cs_jw_array(w);
    cs_jw_layout(w, "\n    ", ":");
}

static void rows_end(cs_jw *w)
{
    int any = w->levels[w->depth].has_items;
    if (any)
        cs_jw_raw(w, "\n  ");
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
}

static void row_begin(cs_jw *w)
{
    if (!w->levels[w->depth].has_items)
        cs_jw_raw(w, "\n    ");
}

/* The report's header: one key a line, two spaces in. */
static void header_begin(cs_jw *w)
{
    cs_jw_object(w);
    cs_jw_layout(w, "\n  ", ": ");
    cs_jw_raw(w, "\n  ");
}

commsched_status commsched_report_json(FILE *out, const commsched_sim *sim,
                                       const commsched_report_context *ctx,
                                       commsched_error *err)
{
    static const commsched_report_context none = {0};
    const commsched_graph *g = commsched_sim_graph(sim);
    const uint32_t *order = commsched_sim_get_order(sim);
    commsched_sim_options opts = commsched_sim_get_options(sim);
    if (!ctx)
        ctx = &none;
    cs_jw *w = cs_report_writer(out, err);
    if (!w)
        return COMMSCHED_ENOMEM;
    header_begin(w);
    cs_jw_key_string(w, "format", REPORT_FORMAT);
    cs_jw_key_int(w, "version", REPORT_VERSION);
    cs_jw_key_string(w, "graph", g->name);
    cs_jw_key_int(w, "nodes", g->n_nodes);
    cs_jw_key_string(w, "device", ctx->device);
    cs_jw_key_string(w, "cost_model", ctx->cost_model);
    cs_jw_key_string(w, "comm_streams",
                     opts.comm_streams == COMMSCHED_STREAMS_SINGLE
                         ? "single"
                         : "per_group");
    totals_json(w, sim);
    bound_json(w, sim);
    memory_json(w, sim);
    streams_json(w, sim);
    estimates_json(w, sim, ctx);
    rows_begin(w, "collectives");
    for (uint32_t i = 0; i < g->n_nodes && !w->error; i++) {
        uint32_t v = order[i];
        if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        row_begin(w);
        collective_row(w, sim, v, ctx);
    }
    rows_end(w);
    return cs_report_finish(w, "report", err);
}

/* ---- Chrome trace -------------------------------------------------------- */

#define PID 1

static const char *category(const cs_node *nd)
{
    switch (nd->kind) {
    case COMMSCHED_NODE_COMPUTE: return "compute";
    case COMMSCHED_NODE_WAIT: return "wait";
    default: return nd->is_sync ? "sync collective" : "collective";
    }
}

/* A complete event for node v on thread tid from t0 to t1 (ns). */
static void slice(cs_jw *w, const commsched_sim *sim, uint32_t v,
                  uint32_t tid, double t0, double t1,
                  const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *r = &commsched_sim_get_nodes(sim)[v];
    const cs_node *nd = &g->nodes[v];
    cs_trace_slice_begin(w, nd->name, category(nd), PID, (int)tid, t0,
                         t1 - t0);
    cs_jw_key_int(w, "position", r->position);
    if (nd->op)
        cs_jw_key_string(w, "op", nd->op);
    key_g(w, "runtime_ns", r->end_ns - r->start_ns);
    if (ctx->sources)
        cs_jw_key_string(w, "source",
                         commsched_cost_source_str(ctx->sources[v]));
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        cs_jw_key_string(w, "group", g->groups[nd->group].name);
        key_g(w, "bytes", commsched_cost_collective_bytes(g, v));
        key_g(w, "issue_ns", r->issue_ns);
        key_g(w, "exposed_ns", r->exposed_ns);
        if (!nd->is_sync)
            key_g(w, "overlapped_ns", r->overlapped_ns);
    } else if (nd->kind == COMMSCHED_NODE_WAIT) {
        key_g(w, "stall_ns", r->exposed_ns);
    }
    cs_trace_slice_end(w);
}

/* The arrows from the collectives wait v completes, one per collective.
 * "s" binds to the slice enclosing its ts, so it sits at the collective's
 * midpoint, unambiguous where slices touch end to start. "f" with "bp": "e"
 * binds the same way and sits at the wait's midpoint; a wait that takes no
 * time (no stall, runtime 0) has no interior, so its "f" omits "bp" and
 * sits at the wait's ts: the trace format then binds it to the next slice
 * that starts there, and the caller writes the wait's slice right after. */
static void wait_flows(cs_jw *w, const commsched_graph *g,
                       const commsched_sim_node *res, uint32_t v,
                       long long *flow_id)
{
    const commsched_sim_node *r = &res[v];
    int empty = !(r->end_ns > r->issue_ns);
    for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++) {
        uint32_t c = g->buffers[g->reads.idx[k]].producer;
        if (c == COMMSCHED_NONE || res[c].wait != v ||
            g->nodes[c].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        uint32_t first = g->reads.off[v]; /* one arrow per collective */
        while (g->buffers[g->reads.idx[first]].producer != c)
            first++;
        if (first != k)
            continue;
        ++*flow_id;
        cs_trace_flow(w, g->nodes[c].name, "wait", 's', (uint64_t)*flow_id,
                      PID, (int)res[c].stream,
                      (res[c].start_ns + res[c].end_ns) / 2, 1);
        cs_trace_flow(w, g->nodes[c].name, "wait", 'f', (uint64_t)*flow_id,
                      PID, COMMSCHED_STREAM_COMPUTE,
                      empty ? r->issue_ns : (r->issue_ns + r->end_ns) / 2,
                      !empty);
    }
}

commsched_status commsched_report_trace(FILE *out, const commsched_sim *sim,
                                        const commsched_report_context *ctx,
                                        commsched_error *err)
{
    static const commsched_report_context none = {0};
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    const uint32_t *order = commsched_sim_get_order(sim);
    if (!ctx)
        ctx = &none;
    cs_jw *w = cs_trace_begin(out, "commsched-trace", err);
    if (!w)
        return COMMSCHED_ENOMEM;
    cs_jw_key_string(w, "graph", g->name);
    cs_jw_key_string(w, "device", ctx->device);
    cs_jw_key_string(w, "cost_model", ctx->cost_model);
    key_g(w, "makespan_ns", t->makespan_ns);
    key_g(w, "lower_bound_ns", t->lower_bound_ns);
    cs_trace_events(w);

    char pname[160];
    cs_utf8_trim(pname, sizeof pname,
                 snprintf(pname, sizeof pname, "commsched: %s",
                          g->name ? g->name : "step"));
    cs_trace_name(w, "process_name", PID, 0, pname);
    for (uint32_t s = 0; s < commsched_sim_stream_count(sim); s++) {
        char tname[160];
        int n;
        if (s == COMMSCHED_STREAM_COMPUTE ||
            commsched_sim_get_options(sim).comm_streams ==
                COMMSCHED_STREAMS_SINGLE)
            n = snprintf(tname, sizeof tname, "%s",
                         commsched_sim_stream_name(sim, s));
        else
            n = snprintf(tname, sizeof tname, "comm %s",
                         commsched_sim_stream_name(sim, s));
        cs_utf8_trim(tname, sizeof tname, n);
        cs_trace_name(w, "thread_name", PID, (int)s, tname);
        cs_trace_sort_index(w, "thread_sort_index", PID, (int)s, s);
    }

    long long flow_id = 0;
    for (uint32_t i = 0; i < g->n_nodes && !w->error; i++) {
        uint32_t v = order[i];
        const cs_node *nd = &g->nodes[v];
        const commsched_sim_node *r = &res[v];
        if (nd->kind == COMMSCHED_NODE_WAIT) {
            /* Arrows written just before the wait's slice so "next slice"
             * binding finds the wait; the slice covers its stall. */
            wait_flows(w, g, res, v, &flow_id);
            slice(w, sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns, r->end_ns,
                  ctx);
        } else {
            slice(w, sim, v, r->stream, r->start_ns, r->end_ns, ctx);
            if (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync)
                slice(w, sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns,
                      r->end_ns, ctx);
        }
    }

    size_t n_curve = 0;
    const commsched_sim_memory_point *curve =
        commsched_sim_get_memory_curve(sim, &n_curve);
    for (size_t i = 0; i < n_curve && !w->error; i++)
        cs_trace_counter(w, "memory", PID, curve[i].time_ns, "bytes",
                         curve[i].bytes);
    return cs_trace_end(w, err);
}

/* ---- estimates ------------------------------------------------------------ */

static void estimate_json(cs_jw *w, const commsched_graph *g, uint32_t v,
                          const commsched_node_cost *nc)
{
    const cs_node *nd = &g->nodes[v];
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "name", nd->name);
    cs_jw_key_string(w, "kind",
                     commsched_node_kind_str((commsched_node_kind)nd->kind));
    cs_jw_key_string(w, "op",
                     nd->kind == COMMSCHED_NODE_COLLECTIVE
                         ? commsched_coll_op_str((commsched_coll_op)nd->coll_op)
                         : nd->op);
    key_number(w, "runtime_ns", nc->runtime_ns);
    cs_jw_key_string(w, "source", commsched_cost_source_str(nc->source));
    key_number(w, "model_ns", nc->model_ns);
    key_number(w, "latency_ns", nc->tuple.latency_ns);
    key_number(w, "bandwidth_ns", nc->tuple.bandwidth_ns);
    key_number(w, "computation_ns", nc->tuple.computation_ns);
    cs_jw_key_int(w, "memory_delta", nc->tuple.memory_delta);
    key_number(w, "bytes", nc->bytes);
    if (nd->kind == COMMSCHED_NODE_COMPUTE)
        key_number(w, "flops", nc->flops);
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        const commsched_coll_cost *c = &nc->coll;
        cs_jw_key_string(w, "group", g->groups[nd->group].name);
        cs_jw_key_int(w, "ranks", c->ranks);
        cs_jw_key_int(w, "hosts", c->hosts);
        cs_jw_key_string(w, "algorithm", commsched_nccl_algo_str(c->algo));
        cs_jw_key_string(w, "protocol", commsched_nccl_proto_str(c->proto));
        cs_jw_key_int(w, "steps", c->steps);
        cs_jw_key_int(w, "inter_steps", c->inter_steps);
        key_number(w, "bus_bw_gbs", c->bus_bw);
        key_number(w, "alg_bw_gbs", c->alg_bw);
    }
    cs_jw_end(w);
}

commsched_status commsched_report_estimates_json(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const commsched_memory *mem, commsched_error *err)
{
    if (!o || !o->device)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no device profile");
    cs_jw *w = cs_report_writer(out, err);
    if (!w)
        return COMMSCHED_ENOMEM;
    header_begin(w);
    cs_jw_key_string(w, "format", "commsched-estimates");
    cs_jw_key_int(w, "version", 1);
    cs_jw_key_string(w, "graph", g->name);
    cs_jw_key_string(w, "device", o->device->name);
    cs_jw_key_string(w, "cost_model", commsched_comm_model_str(o->comm_model));
    rows_begin(w, "nodes");
    for (uint32_t v = 0; v < g->n_nodes && !w->error; v++) {
        commsched_node_cost nc;
        commsched_status st = commsched_cost_node(g, v, o, mem, &nc, err);
        if (st != COMMSCHED_OK) {
            free(w);
            return st;
        }
        row_begin(w);
        estimate_json(w, g, v, &nc);
    }
    rows_end(w);
    return cs_report_finish(w, "report", err);
}
