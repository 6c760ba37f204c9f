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
#include "commsched/report.h"
#include "commsched/memory.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "graph_internal.h"

#define REPORT_FORMAT "commsched-simulation"
#define REPORT_VERSION 1
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12) | JSON_ENCODE_ANY)

static json_t *number(double d)
{
    if (d == floor(d) && fabs(d) < 9007199254740992.0)
        return json_integer((json_int_t)d);
    return json_real(d);
}

/* set_new steals v; a NULL v (failed allocation) makes the call fail, and
 * the caller checks once at the end through the `ok` flag. */
static void put(json_t *o, const char *k, json_t *v, int *ok)
{
    if (!v || json_object_set_new(o, k, v) != 0)
        *ok = 0;
}

static commsched_status emit(FILE *out, json_t *v, const char *before,
                             const char *after, commsched_error *err)
{
    if (!v)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    fputs(before, out);
    int rc = json_dumpf(v, out, DUMP_FLAGS);
    json_decref(v);
    fputs(after, out);
    if (rc != 0 || ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return COMMSCHED_OK;
}

static const char *bound_key(const commsched_sim_totals *t)
{
    if (t->lower_bound_ns <= 0)
        return "none";
    if (t->lower_bound_ns == t->bound_path_ns)
        return "critical_path";
    if (t->lower_bound_ns == t->bound_compute_ns)
        return "compute_stream";
    return "comm_stream";
}

static json_t *totals_json(const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    json_t *o = json_object();
    int ok = o != NULL;
    if (!ok)
        return NULL;
    put(o, "makespan_ns", number(t->makespan_ns), &ok);
    put(o, "compute_ns", number(t->compute_ns), &ok);
    put(o, "comm_ns", number(t->comm_ns), &ok);
    put(o, "exposed_ns", number(t->exposed_ns), &ok);
    put(o, "overlap", number(t->overlap), &ok);
    put(o, "lower_bound_ns", number(t->lower_bound_ns), &ok);
    put(o, "efficiency", number(t->efficiency), &ok);
    put(o, "collectives", json_integer(t->n_collectives), &ok);
    put(o, "waits", json_integer(t->n_waits), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *bound_json(const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    json_t *o = json_object();
    int ok = o != NULL;
    if (!ok)
        return NULL;
    put(o, "lower_bound_ns", number(t->lower_bound_ns), &ok);
    put(o, "binding", json_string(bound_key(t)), &ok);
    put(o, "compute_stream_ns", number(t->bound_compute_ns), &ok);
    put(o, "busiest_comm_stream_ns", number(t->bound_comm_ns), &ok);
    put(o, "busiest_comm_stream",
        t->bound_comm_stream == COMMSCHED_NONE
            ? json_null()
            : json_string(commsched_sim_stream_name(sim, t->bound_comm_stream)),
        &ok);
    put(o, "critical_path_ns", number(t->bound_path_ns), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *memory_json(const commsched_sim *sim)
{
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    if (!(commsched_sim_get_options(sim).flags & COMMSCHED_SIM_MEMORY))
        return json_null();
    json_t *o = json_object();
    int ok = o != NULL;
    if (!ok)
        return NULL;
    put(o, "baseline", json_integer(t->memory_baseline), &ok);
    put(o, "peak_simulated", json_integer(t->peak_memory), &ok);
    put(o, "peak_simulated_at_ns", number(t->peak_memory_at_ns), &ok);
    put(o, "peak_per_step", json_integer(t->peak_memory_step), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *streams_json(const commsched_sim *sim)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (uint32_t s = 0; s < commsched_sim_stream_count(sim); s++) {
        json_t *o = json_object();
        int ok = o != NULL;
        if (o) {
            put(o, "id", json_integer(s), &ok);
            put(o, "name", json_string(commsched_sim_stream_name(sim, s)), &ok);
            put(o, "kind", json_string(s == 0 ? "compute" : "comm"), &ok);
            put(o, "busy_ns", number(commsched_sim_stream_busy(sim, s)), &ok);
        }
        if (!ok || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *estimates_json(const commsched_sim *sim,
                              const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    if (!ctx->sources)
        return json_null();
    json_int_t cnt[3] = {0, 0, 0};
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if ((unsigned)ctx->sources[v] < 3)
            cnt[ctx->sources[v]]++;
    return json_pack("{sIsIsI}", "file", cnt[COMMSCHED_SOURCE_FILE], "model",
                     cnt[COMMSCHED_SOURCE_MODEL], "none",
                     cnt[COMMSCHED_SOURCE_NONE]);
}

static json_t *collective_json(const commsched_sim *sim, uint32_t v,
                               const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const commsched_sim_node *r = &res[v];
    const cs_node *nd = &g->nodes[v];
    json_t *o = json_object();
    int ok = o != NULL;
    if (!ok)
        return NULL;
    put(o, "name", json_string(nd->name), &ok);
    put(o, "op", json_string(commsched_coll_op_str((commsched_coll_op)nd->coll_op)), &ok);
    put(o, "group", json_string(g->groups[nd->group].name), &ok);
    put(o, "sync", json_boolean(nd->is_sync), &ok);
    put(o, "stream", json_integer(r->stream), &ok);
    put(o, "bytes", number(commsched_cost_collective_bytes(g, v)), &ok);
    put(o, "comm_ns", number(r->end_ns - r->start_ns), &ok);
    put(o, "source",
        ctx->sources ? json_string(commsched_cost_source_str(ctx->sources[v]))
                     : json_null(),
        &ok);
    put(o, "issue_ns", number(r->issue_ns), &ok);
    put(o, "start_ns", number(r->start_ns), &ok);
    put(o, "end_ns", number(r->end_ns), &ok);
    put(o, "queued_ns", number(r->start_ns - r->issue_ns), &ok);
    put(o, "overlapped_ns", number(r->overlapped_ns), &ok);
    put(o, "exposed_ns", number(r->exposed_ns), &ok);
    put(o, "issue_position", json_integer(r->position), &ok);
    if (r->wait == COMMSCHED_NONE) {
        put(o, "wait", json_null(), &ok);
        put(o, "wait_position", json_null(), &ok);
    } else {
        put(o, "wait", json_string(g->nodes[r->wait].name), &ok);
        put(o, "wait_position", json_integer(res[r->wait].position), &ok);
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
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
    commsched_status st;
    if ((st = emit(out, json_string(REPORT_FORMAT), "{\n  \"format\": ", ",\n",
                   err)) ||
        (st = emit(out, json_integer(REPORT_VERSION), "  \"version\": ", ",\n",
                   err)) ||
        (st = emit(out, g->name ? json_string(g->name) : json_null(),
                   "  \"graph\": ", ",\n", err)) ||
        (st = emit(out, json_integer(g->n_nodes), "  \"nodes\": ", ",\n",
                   err)) ||
        (st = emit(out, ctx->device ? json_string(ctx->device) : json_null(),
                   "  \"device\": ", ",\n", err)) ||
        (st = emit(out,
                   ctx->cost_model ? json_string(ctx->cost_model) : json_null(),
                   "  \"cost_model\": ", ",\n", err)) ||
        (st = emit(out,
                   json_string(opts.comm_streams == COMMSCHED_STREAMS_SINGLE
                                   ? "single"
                                   : "per_group"),
                   "  \"comm_streams\": ", ",\n", err)) ||
        (st = emit(out, totals_json(sim), "  \"totals\": ", ",\n", err)) ||
        (st = emit(out, bound_json(sim), "  \"lower_bound\": ", ",\n", err)) ||
        (st = emit(out, memory_json(sim), "  \"memory\": ", ",\n", err)) ||
        (st = emit(out, streams_json(sim), "  \"streams\": ", ",\n", err)) ||
        (st = emit(out, estimates_json(sim, ctx), "  \"estimates\": ", ",\n",
                   err)))
        return st;
    fputs("  \"collectives\": [", out);
    const char *sep = "\n    ";
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t v = order[i];
        if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        if ((st = emit(out, collective_json(sim, v, ctx), sep, "", err)))
            return st;
        sep = ",\n    ";
    }
    fputs(sep[0] == ',' ? "\n  ]\n}\n" : "]\n}\n", out);
    if (ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return COMMSCHED_OK;
}

/* ---- Chrome trace -------------------------------------------------------- */

#define PID 1

static double us(double ns) { return ns / 1000.0; }

static const char *category(const cs_node *nd)
{
    switch (nd->kind) {
    case COMMSCHED_NODE_COMPUTE: return "compute";
    case COMMSCHED_NODE_WAIT: return "wait";
    default: return nd->is_sync ? "sync collective" : "collective";
    }
}

static json_t *meta(const char *what, uint32_t tid, const char *key,
                    json_t *value)
{
    json_t *args = json_object();
    json_t *o = json_object();
    int ok = args && o;
    if (ok) {
        put(args, key, value, &ok);
        value = NULL;
        put(o, "name", json_string(what), &ok);
        put(o, "ph", json_string("M"), &ok);
        put(o, "pid", json_integer(PID), &ok);
        put(o, "tid", json_integer(tid), &ok);
        put(o, "args", args, &ok);
        args = NULL;
    }
    json_decref(value);
    json_decref(args);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A complete event for node v on thread tid from t0 to t1 (ns). */
static json_t *slice(const commsched_sim *sim, uint32_t v, uint32_t tid,
                     double t0, double t1, const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *r = &commsched_sim_get_nodes(sim)[v];
    const cs_node *nd = &g->nodes[v];
    json_t *o = json_object(), *args = json_object();
    int ok = o && args;
    if (ok) {
        put(args, "position", json_integer(r->position), &ok);
        if (nd->op)
            put(args, "op", json_string(nd->op), &ok);
        put(args, "runtime_ns", number(r->end_ns - r->start_ns), &ok);
        if (ctx->sources)
            put(args, "source",
                json_string(commsched_cost_source_str(ctx->sources[v])), &ok);
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            put(args, "group", json_string(g->groups[nd->group].name), &ok);
            put(args, "bytes", number(commsched_cost_collective_bytes(g, v)),
                &ok);
            put(args, "issue_ns", number(r->issue_ns), &ok);
            put(args, "exposed_ns", number(r->exposed_ns), &ok);
            if (!nd->is_sync)
                put(args, "overlapped_ns", number(r->overlapped_ns), &ok);
        } else if (nd->kind == COMMSCHED_NODE_WAIT) {
            put(args, "stall_ns", number(r->exposed_ns), &ok);
        }
        put(o, "name", json_string(nd->name), &ok);
        put(o, "cat", json_string(category(nd)), &ok);
        put(o, "ph", json_string("X"), &ok);
        put(o, "pid", json_integer(PID), &ok);
        put(o, "tid", json_integer(tid), &ok);
        put(o, "ts", number(us(t0)), &ok);
        put(o, "dur", number(us(t1 - t0)), &ok);
        put(o, "args", args, &ok);
        args = NULL;
    }
    json_decref(args);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A flow event. "s" binds to the slice enclosing its ts, so it sits at the
 * collective's midpoint, unambiguous where slices touch end to start. "f"
 * with "bp": "e" binds the same way and sits at the wait's midpoint; a wait
 * that takes no time (no stall, runtime 0) has no interior, so its "f"
 * omits "bp" and sits at the wait's ts: the trace format then binds it to
 * the next slice that starts there, and the caller writes the wait's slice
 * right after it. */
static json_t *flow(const char *ph, const char *name, json_int_t id,
                    uint32_t tid, double ts_ns, int enclosing)
{
    json_t *o = json_pack("{sssssssIsIsIso}", "name", name, "cat", "wait",
                          "ph", ph, "id", id, "pid", (json_int_t)PID, "tid",
                          (json_int_t)tid, "ts", number(us(ts_ns)));
    if (o && ph[0] == 'f' && enclosing &&
        json_object_set_new(o, "bp", json_string("e"))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

commsched_status commsched_report_trace(FILE *out, const commsched_sim *sim,
                                        const commsched_report_context *ctx,
                                        commsched_error *err)
{
    static const commsched_report_context none = {0};
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const uint32_t *order = commsched_sim_get_order(sim);
    if (!ctx)
        ctx = &none;
    commsched_status st;
    const char *sep = "\n";
#define EMIT(v)                                                                \
    do {                                                                       \
        if ((st = emit(out, (v), sep, "", err)) != COMMSCHED_OK)               \
            return st;                                                         \
        sep = ",\n";                                                           \
    } while (0)

    fputs("{\"displayTimeUnit\": \"ns\",\n\"otherData\": ", out);
    json_t *other = json_object();
    int ok = other != NULL;
    if (other) {
        put(other, "format", json_string("commsched-trace"), &ok);
        put(other, "graph", g->name ? json_string(g->name) : json_null(), &ok);
        put(other, "device",
            ctx->device ? json_string(ctx->device) : json_null(), &ok);
        put(other, "cost_model",
            ctx->cost_model ? json_string(ctx->cost_model) : json_null(), &ok);
        put(other, "makespan_ns",
            number(commsched_sim_get_totals(sim)->makespan_ns), &ok);
        put(other, "lower_bound_ns",
            number(commsched_sim_get_totals(sim)->lower_bound_ns), &ok);
    }
    if (!ok) {
        json_decref(other);
        other = NULL;
    }
    if ((st = emit(out, other, "", ",\n\"traceEvents\": [", err)))
        return st;

    char pname[160];
    snprintf(pname, sizeof pname, "commsched: %s", g->name ? g->name : "step");
    EMIT(meta("process_name", 0, "name", json_string(pname)));
    for (uint32_t s = 0; s < commsched_sim_stream_count(sim); s++) {
        char tname[160];
        if (s == COMMSCHED_STREAM_COMPUTE)
            snprintf(tname, sizeof tname, "compute");
        else
            snprintf(tname, sizeof tname, "comm %s",
                     commsched_sim_stream_name(sim, s));
        EMIT(meta("thread_name", s, "name", json_string(tname)));
        EMIT(meta("thread_sort_index", s, "sort_index", json_integer(s)));
    }

    json_int_t flow_id = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t v = order[i];
        const cs_node *nd = &g->nodes[v];
        const commsched_sim_node *r = &res[v];
        if (nd->kind == COMMSCHED_NODE_WAIT) {
            /* Arrows from the collectives this wait completes, written just
             * before its slice so "next slice" binding finds the wait. */
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
                flow_id++;
                EMIT(flow("s", g->nodes[c].name, flow_id, res[c].stream,
                          (res[c].start_ns + res[c].end_ns) / 2, 1));
                EMIT(flow("f", g->nodes[c].name, flow_id,
                          COMMSCHED_STREAM_COMPUTE,
                          empty ? r->issue_ns : (r->issue_ns + r->end_ns) / 2,
                          !empty));
            }
            /* The wait's slice covers its stall, so the stall shows. */
            EMIT(slice(sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns,
                       r->end_ns, ctx));
        } else {
            EMIT(slice(sim, v, r->stream, r->start_ns, r->end_ns, ctx));
            if (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync)
                EMIT(slice(sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns,
                           r->end_ns, ctx));
        }
    }

    size_t n_curve = 0;
    const commsched_sim_memory_point *curve =
        commsched_sim_get_memory_curve(sim, &n_curve);
    for (size_t i = 0; i < n_curve; i++)
        EMIT(json_pack("{sssssIsoso}", "name", "memory", "ph", "C", "pid",
                       (json_int_t)PID, "ts", number(us(curve[i].time_ns)),
                       "args", json_pack("{sI}", "bytes",
                                         (json_int_t)curve[i].bytes)));
#undef EMIT
    fputs("\n]}\n", out);
    if (ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the trace");
    return COMMSCHED_OK;
}

/* ---- estimates ------------------------------------------------------------ */

static json_t *estimate_json(const commsched_graph *g, uint32_t v,
                             const commsched_node_cost *nc)
{
    const cs_node *nd = &g->nodes[v];
    json_t *o = json_object();
    int ok = o != NULL;
    if (!ok)
        return NULL;
    put(o, "name", json_string(nd->name), &ok);
    put(o, "kind", json_string(commsched_node_kind_str((commsched_node_kind)nd->kind)), &ok);
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE)
        put(o, "op", json_string(commsched_coll_op_str((commsched_coll_op)nd->coll_op)), &ok);
    else
        put(o, "op", nd->op ? json_string(nd->op) : json_null(), &ok);
    put(o, "runtime_ns", number(nc->runtime_ns), &ok);
    put(o, "source", json_string(commsched_cost_source_str(nc->source)), &ok);
    put(o, "model_ns", number(nc->model_ns), &ok);
    put(o, "latency_ns", number(nc->tuple.latency_ns), &ok);
    put(o, "bandwidth_ns", number(nc->tuple.bandwidth_ns), &ok);
    put(o, "computation_ns", number(nc->tuple.computation_ns), &ok);
    put(o, "memory_delta", json_integer(nc->tuple.memory_delta), &ok);
    put(o, "bytes", number(nc->bytes), &ok);
    if (nd->kind == COMMSCHED_NODE_COMPUTE)
        put(o, "flops", number(nc->flops), &ok);
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        const commsched_coll_cost *c = &nc->coll;
        put(o, "group", json_string(g->groups[nd->group].name), &ok);
        put(o, "ranks", json_integer(c->ranks), &ok);
        put(o, "hosts", json_integer(c->hosts), &ok);
        put(o, "algorithm", json_string(commsched_nccl_algo_str(c->algo)), &ok);
        put(o, "protocol", json_string(commsched_nccl_proto_str(c->proto)), &ok);
        put(o, "steps", json_integer(c->steps), &ok);
        put(o, "inter_steps", json_integer(c->inter_steps), &ok);
        put(o, "bus_bw_gbs", number(c->bus_bw), &ok);
        put(o, "alg_bw_gbs", number(c->alg_bw), &ok);
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

commsched_status commsched_report_estimates_json(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const commsched_memory *mem, commsched_error *err)
{
    commsched_status st;
    if (!o || !o->device)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no device profile");
    if ((st = emit(out, json_string("commsched-estimates"), "{\n  \"format\": ",
                   ",\n", err)) ||
        (st = emit(out, json_integer(1), "  \"version\": ", ",\n", err)) ||
        (st = emit(out, g->name ? json_string(g->name) : json_null(),
                   "  \"graph\": ", ",\n", err)) ||
        (st = emit(out, json_string(o->device->name), "  \"device\": ", ",\n",
                   err)) ||
        (st = emit(out, json_string(commsched_comm_model_str(o->comm_model)),
                   "  \"cost_model\": ", ",\n", err)))
        return st;
    fputs("  \"nodes\": [", out);
    const char *sep = "\n    ";
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        commsched_node_cost nc;
        if ((st = commsched_cost_node(g, v, o, mem, &nc, err)) ||
            (st = emit(out, estimate_json(g, v, &nc), sep, "", err)))
            return st;
        sep = ",\n    ";
    }
    fputs(sep[0] == ',' ? "\n  ]\n}\n" : "]\n}\n", out);
    if (ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return COMMSCHED_OK;
}
