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

/* The rows that grow with the graph (a collective per line here, about 4M
 * events in a million-node trace) are printed field by field: numbers with
 * printf, strings escaped by jansson one at a time. That keeps jansson the
 * only JSON encoder without building a json_t tree per row. */
typedef struct jw {
    FILE *f;
    int bad;     /* a string failed to encode (invalid UTF-8) or OOM */
} jw;

static void jw_raw(jw *w, const char *s) { fputs(s, w->f); }

/* A JSON string: jansson validates UTF-8 and escapes. */
static void jw_str(jw *w, const char *s)
{
    json_t *j = json_string(s);
    if (!j || json_dumpf(j, w->f, JSON_ENCODE_ANY) != 0)
        w->bad = 1;
    json_decref(j);
}

/* Integral values as integers, others with 12 significant digits, like
 * number() for the json_t writers. */
static void jw_num(jw *w, double d)
{
    if (d == floor(d) && fabs(d) < 9007199254740992.0)
        fprintf(w->f, "%.0f", d);
    else
        fprintf(w->f, "%.12g", d);
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

/* One collective's row (docs/REPORTS.md), keys in a fixed order. */
static void collective_row(jw *w, const commsched_sim *sim, uint32_t v,
                           const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const commsched_sim_node *r = &res[v];
    const cs_node *nd = &g->nodes[v];
    jw_raw(w, "{\"name\":");
    jw_str(w, nd->name);
    fprintf(w->f, ",\"op\":\"%s\",\"group\":",
            commsched_coll_op_str((commsched_coll_op)nd->coll_op));
    jw_str(w, g->groups[nd->group].name);
    fprintf(w->f, ",\"sync\":%s,\"stream\":%u,\"bytes\":",
            nd->is_sync ? "true" : "false", r->stream);
    jw_num(w, commsched_cost_collective_bytes(g, v));
    jw_raw(w, ",\"comm_ns\":");
    jw_num(w, r->end_ns - r->start_ns);
    if (ctx->sources)
        fprintf(w->f, ",\"source\":\"%s\"",
                commsched_cost_source_str(ctx->sources[v]));
    else
        jw_raw(w, ",\"source\":null");
    const struct {
        const char *key;
        double v;
    } f[] = {{"issue_ns", r->issue_ns},
             {"start_ns", r->start_ns},
             {"end_ns", r->end_ns},
             {"queued_ns", r->start_ns - r->issue_ns},
             {"overlapped_ns", r->overlapped_ns},
             {"exposed_ns", r->exposed_ns}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fprintf(w->f, ",\"%s\":", f[i].key);
        jw_num(w, f[i].v);
    }
    fprintf(w->f, ",\"issue_position\":%u,\"wait\":", r->position);
    if (r->wait == COMMSCHED_NONE) {
        jw_raw(w, "null,\"wait_position\":null}");
    } else {
        jw_str(w, g->nodes[r->wait].name);
        fprintf(w->f, ",\"wait_position\":%u}", res[r->wait].position);
    }
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
    jw w = {out, 0};
    for (uint32_t i = 0; i < g->n_nodes && !w.bad; i++) {
        uint32_t v = order[i];
        if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        jw_raw(&w, sep);
        collective_row(&w, sim, v, ctx);
        sep = ",\n    ";
    }
    fputs(sep[0] == ',' ? "\n  ]\n}\n" : "]\n}\n", out);
    if (w.bad)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a name is not valid UTF-8 (or out of "
                                   "memory): the report is incomplete");
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

static void meta(jw *w, const char *what, uint32_t tid, const char *key,
                 const char *str, long long num)
{
    fprintf(w->f, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                  "\"args\":{\"%s\":",
            what, PID, tid, key);
    if (str)
        jw_str(w, str);
    else
        fprintf(w->f, "%lld", num);
    jw_raw(w, "}}");
}

/* A complete event for node v on thread tid from t0 to t1 (ns). */
static void slice(jw *w, const commsched_sim *sim, uint32_t v, uint32_t tid,
                  double t0, double t1, const commsched_report_context *ctx)
{
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *r = &commsched_sim_get_nodes(sim)[v];
    const cs_node *nd = &g->nodes[v];
    jw_raw(w, ",\n{\"name\":");
    jw_str(w, nd->name);
    fprintf(w->f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":",
            category(nd), PID, tid);
    jw_num(w, us(t0));
    jw_raw(w, ",\"dur\":");
    jw_num(w, us(t1 - t0));
    fprintf(w->f, ",\"args\":{\"position\":%u", r->position);
    if (nd->op) {
        jw_raw(w, ",\"op\":");
        jw_str(w, nd->op);
    }
    jw_raw(w, ",\"runtime_ns\":");
    jw_num(w, r->end_ns - r->start_ns);
    if (ctx->sources)
        fprintf(w->f, ",\"source\":\"%s\"",
                commsched_cost_source_str(ctx->sources[v]));
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        jw_raw(w, ",\"group\":");
        jw_str(w, g->groups[nd->group].name);
        jw_raw(w, ",\"bytes\":");
        jw_num(w, commsched_cost_collective_bytes(g, v));
        jw_raw(w, ",\"issue_ns\":");
        jw_num(w, r->issue_ns);
        jw_raw(w, ",\"exposed_ns\":");
        jw_num(w, r->exposed_ns);
        if (!nd->is_sync) {
            jw_raw(w, ",\"overlapped_ns\":");
            jw_num(w, r->overlapped_ns);
        }
    } else if (nd->kind == COMMSCHED_NODE_WAIT) {
        jw_raw(w, ",\"stall_ns\":");
        jw_num(w, r->exposed_ns);
    }
    jw_raw(w, "}}");
}

/* A flow event. "s" binds to the slice enclosing its ts, so it sits at the
 * collective's midpoint, unambiguous where slices touch end to start. "f"
 * with "bp": "e" binds the same way and sits at the wait's midpoint; a wait
 * that takes no time (no stall, runtime 0) has no interior, so its "f"
 * omits "bp" and sits at the wait's ts: the trace format then binds it to
 * the next slice that starts there, and the caller writes the wait's slice
 * right after it. */
static void flow(jw *w, const char *ph, const char *name, long long id,
                 uint32_t tid, double ts_ns, int enclosing)
{
    jw_raw(w, ",\n{\"name\":");
    jw_str(w, name);
    fprintf(w->f, ",\"cat\":\"wait\",\"ph\":\"%s\",\"id\":%lld,\"pid\":%d,"
                  "\"tid\":%u,\"ts\":",
            ph, id, PID, tid);
    jw_num(w, us(ts_ns));
    jw_raw(w, enclosing && ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}");
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
    jw w = {out, 0};
    if (!ctx)
        ctx = &none;

    jw_raw(&w, "{\"displayTimeUnit\": \"ns\",\n\"otherData\": "
               "{\"format\":\"commsched-trace\",\"graph\":");
    if (g->name)
        jw_str(&w, g->name);
    else
        jw_raw(&w, "null");
    jw_raw(&w, ",\"device\":");
    if (ctx->device)
        jw_str(&w, ctx->device);
    else
        jw_raw(&w, "null");
    jw_raw(&w, ",\"cost_model\":");
    if (ctx->cost_model)
        jw_str(&w, ctx->cost_model);
    else
        jw_raw(&w, "null");
    jw_raw(&w, ",\"makespan_ns\":");
    jw_num(&w, t->makespan_ns);
    jw_raw(&w, ",\"lower_bound_ns\":");
    jw_num(&w, t->lower_bound_ns);
    jw_raw(&w, "},\n\"traceEvents\": [");

    /* The first event carries no leading comma; every later one does. */
    char pname[160];
    snprintf(pname, sizeof pname, "commsched: %s", g->name ? g->name : "step");
    fprintf(out, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                 "\"tid\":0,\"args\":{\"name\":",
            PID);
    jw_str(&w, pname);
    jw_raw(&w, "}}");
    for (uint32_t s = 0; s < commsched_sim_stream_count(sim); s++) {
        char tname[160];
        if (s == COMMSCHED_STREAM_COMPUTE ||
            commsched_sim_get_options(sim).comm_streams ==
                COMMSCHED_STREAMS_SINGLE)
            snprintf(tname, sizeof tname, "%s",
                     commsched_sim_stream_name(sim, s));
        else
            snprintf(tname, sizeof tname, "comm %s",
                     commsched_sim_stream_name(sim, s));
        meta(&w, "thread_name", s, "name", tname, 0);
        meta(&w, "thread_sort_index", s, "sort_index", NULL, (long long)s);
    }

    long long flow_id = 0;
    for (uint32_t i = 0; i < g->n_nodes && !w.bad; i++) {
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
                flow(&w, "s", g->nodes[c].name, flow_id, res[c].stream,
                     (res[c].start_ns + res[c].end_ns) / 2, 1);
                flow(&w, "f", g->nodes[c].name, flow_id,
                     COMMSCHED_STREAM_COMPUTE,
                     empty ? r->issue_ns : (r->issue_ns + r->end_ns) / 2,
                     !empty);
            }
            /* The wait's slice covers its stall, so the stall shows. */
            slice(&w, sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns, r->end_ns,
                  ctx);
        } else {
            slice(&w, sim, v, r->stream, r->start_ns, r->end_ns, ctx);
            if (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync)
                slice(&w, sim, v, COMMSCHED_STREAM_COMPUTE, r->issue_ns,
                      r->end_ns, ctx);
        }
    }

    size_t n_curve = 0;
    const commsched_sim_memory_point *curve =
        commsched_sim_get_memory_curve(sim, &n_curve);
    for (size_t i = 0; i < n_curve; i++) {
        fprintf(out, ",\n{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d,\"ts\":",
                PID);
        jw_num(&w, us(curve[i].time_ns));
        fprintf(out, ",\"args\":{\"bytes\":%lld}}", (long long)curve[i].bytes);
    }
    fputs("\n]}\n", out);
    if (w.bad)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a name is not valid UTF-8 (or out of "
                                   "memory): the trace is incomplete");
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
