/* commsched — the text reports: the per-collective overlap table (in the
 * spirit of Inductor's reorder/sink stats and the seed's cost tables) and
 * the before/after comparison. Plain stdio; widths are fixed so rows align
 * and a full row fits 120 columns. */
#include "commsched/report.h"
#include "commsched/memory.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph_layout.h"
#include "utf8.h"
#include "util.h"

#define NAME_MAX_W 22
#define GROUP_MAX_W 8

/* "999 ns", "999.9 us", "999.99 ms", "12.345 s": at most 9 characters
 * below 1000 s. */
static const char *fmt_time(double ns, char *buf, size_t size)
{
    return cs_fmt_time(ns, 2, "us", buf, size);
}


static const char *fmt_pos(uint32_t pos, char *buf, size_t size)
{
    if (pos == COMMSCHED_NONE)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%u", pos);
    return buf;
}

static const char *bound_name(const commsched_sim_totals *t)
{
    if (t->lower_bound_ns <= 0)
        return "empty step";
    if (t->lower_bound_ns == t->bound_path_ns)
        return "critical path";
    if (t->lower_bound_ns == t->bound_compute_ns)
        return "compute stream";
    if (t->lower_bound_ns == t->bound_comm_ns)
        return "busiest comm stream";
    return "stream bound";
}

static commsched_status io_error(FILE *out, commsched_error *err)
{
    if (ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return COMMSCHED_OK;
}

commsched_status commsched_report_table(FILE *out, const commsched_sim *sim,
                                        const commsched_report_context *ctx,
                                        commsched_error *err)
{
    static const commsched_report_context none = {0};
    const commsched_graph *g = commsched_sim_graph(sim);
    const commsched_sim_node *res = commsched_sim_get_nodes(sim);
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    const uint32_t *order = commsched_sim_get_order(sim);
    commsched_sim_options opts = commsched_sim_get_options(sim);
    char a[32], b[32], c[32], d[32], e[32], f[32], h[160], k[160];
    if (!ctx)
        ctx = &none;

    /* Names are cut so every line stays within 120 columns. */
    fprintf(out, "%s: %u node%s, %u collective%s, %u wait%s",
            cs_utf8_fit(g->name ? g->name : "(unnamed)", 32, 0, h, sizeof h),
            g->n_nodes,
            COMMSCHED_PLURAL(g->n_nodes), t->n_collectives,
            COMMSCHED_PLURAL(t->n_collectives), t->n_waits,
            COMMSCHED_PLURAL(t->n_waits));
    if (ctx->device)
        fprintf(out, "; device %s", ctx->device);
    if (ctx->cost_model)
        fprintf(out, ", %s model", ctx->cost_model);
    fprintf(out, "; comm streams %s\n",
            opts.comm_streams == COMMSCHED_STREAMS_SINGLE ? "single"
                                                          : "per group");

    if (!ctx->totals_only && t->n_collectives > 0) {
        size_t nw = strlen("collective"), gw = strlen("group");
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            const cs_node *nd = &g->nodes[v];
            if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
                continue;
            size_t l = cs_utf8_width(nd->name);
            if (l > nw)
                nw = l;
            l = cs_utf8_width(g->groups[nd->group].name);
            if (l > gw)
                gw = l;
        }
        if (nw > NAME_MAX_W)
            nw = NAME_MAX_W;
        if (gw > GROUP_MAX_W)
            gw = GROUP_MAX_W;
        fprintf(out, "\n%-*s %-14s %-*s %10s %9s %-5s %9s %10s %9s %6s %6s\n",
                (int)nw, "collective", "op", (int)gw, "group", "bytes",
                "comm", "src", "queued", "overlapped", "exposed", "issue",
                "wait");
        uint32_t rows = 0, skipped = 0;
        for (uint32_t i = 0; i < g->n_nodes; i++) {
            uint32_t v = order[i];
            const cs_node *nd = &g->nodes[v];
            if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
                continue;
            if (ctx->max_rows && rows >= ctx->max_rows) {
                skipped++;
                continue;
            }
            rows++;
            const commsched_sim_node *r = &res[v];
            const char *src =
                ctx->sources ? commsched_cost_source_str(ctx->sources[v]) : "-";
            char op[32];
            snprintf(op, sizeof op, "%s%s", commsched_coll_op_str((commsched_coll_op)nd->coll_op),
                     nd->is_sync ? "*" : "");
            fprintf(out,
                    "%s %-14s %s %10s %9s %-5s %9s %10s %9s %6u %6s\n",
                    cs_utf8_fit(nd->name, nw, 1, h, sizeof h), op,
                    cs_utf8_fit(g->groups[nd->group].name, gw, 1, k,
                                sizeof k),
                    cs_fmt_bytes(commsched_cost_collective_bytes(g, v), a,
                              sizeof a),
                    fmt_time(r->end_ns - r->start_ns, b, sizeof b), src,
                    fmt_time(r->start_ns - r->issue_ns, c, sizeof c),
                    fmt_time(r->overlapped_ns, d, sizeof d),
                    fmt_time(r->exposed_ns, e, sizeof e), r->position,
                    fmt_pos(r->wait == COMMSCHED_NONE ? COMMSCHED_NONE
                                                      : res[r->wait].position,
                            f, sizeof f));
        }
        if (skipped)
            fprintf(out, "... %u more collective%s\n", skipped,
                    COMMSCHED_PLURAL(skipped));
        fprintf(out, "(* sync collective: blocks the compute stream; "
                     "issue/wait: positions in the order)\n");
    }

    fprintf(out, "\n");
    fprintf(out, "makespan        %10s   lower bound %s (%s), efficiency "
                 "%.1f%%\n",
            fmt_time(t->makespan_ns, a, sizeof a),
            fmt_time(t->lower_bound_ns, b, sizeof b), bound_name(t),
            100.0 * t->efficiency);
    fprintf(out, "lower bound     compute stream %s, busiest comm stream %s",
            fmt_time(t->bound_compute_ns, a, sizeof a),
            fmt_time(t->bound_comm_ns, b, sizeof b));
    if (t->bound_comm_stream != COMMSCHED_NONE)
        fprintf(out, " (%s)",
                cs_utf8_fit(commsched_sim_stream_name(sim, t->bound_comm_stream),
                            16, 0, h, sizeof h));
    fprintf(out, ", critical path %s\n", fmt_time(t->bound_path_ns, c, sizeof c));
    if (commsched_sim_get_options(sim).flags & COMMSCHED_SIM_BOUND &&
        t->bound_stream != COMMSCHED_NONE)
        fprintf(out, "stream bound    %10s   (%s stream; no order of this "
                     "graph is faster)\n",
                fmt_time(t->bound_stream_ns, a, sizeof a),
                cs_utf8_fit(commsched_sim_stream_name(sim, t->bound_stream),
                            16, 0, h, sizeof h));
    fprintf(out, "compute         %10s\n", fmt_time(t->compute_ns, a, sizeof a));
    fprintf(out, "comm            %10s   exposed %s, overlap %.1f%%\n",
            fmt_time(t->comm_ns, a, sizeof a),
            fmt_time(t->exposed_ns, b, sizeof b), 100.0 * t->overlap);
    if (opts.flags & COMMSCHED_SIM_MEMORY) {
        fprintf(out, "peak memory     %10s   over simulated time (at %s); "
                     "%s per step; baseline %s\n",
                cs_fmt_bytes((double)t->peak_memory, a, sizeof a),
                fmt_time(t->peak_memory_at_ns, b, sizeof b),
                cs_fmt_bytes((double)t->peak_memory_step, c, sizeof c),
                cs_fmt_bytes((double)t->memory_baseline, d, sizeof d));
    }
    if (ctx->sources) {
        uint32_t cnt[COMMSCHED_SOURCE_COUNT] = {0};
        char text[160];
        for (uint32_t v = 0; v < g->n_nodes; v++)
            if ((unsigned)ctx->sources[v] < COMMSCHED_SOURCE_COUNT)
                cnt[ctx->sources[v]]++;
        fprintf(out, "estimates       %s (cost 0)\n",
                commsched_cost_sources_text(cnt, text, sizeof text));
    }
    return io_error(out, err);
}

static void compare_row(FILE *out, const char *what, const char *x,
                        const char *y, const char *change)
{
    fprintf(out, "%-22s %14s %14s %12s\n", what, x, y, change);
}

static const char *pct_change(double before, double after, char *buf,
                              size_t size)
{
    if (before == 0 && after != 0)
        return cs_fmt_change(NAN, "%", buf, size);
    double pct = before == 0 ? 0 : 100.0 * (after - before) / before;
    return cs_fmt_change(pct, "%", buf, size);
}

static const char *pt_change(double before, double after, char *buf,
                             size_t size)
{
    return cs_fmt_change(100.0 * (after - before), " pt", buf, size);
}

commsched_status commsched_report_compare(FILE *out,
                                          const commsched_sim_totals *x,
                                          const commsched_sim_totals *y,
                                          const char *lx, const char *ly,
                                          commsched_error *err)
{
    char a[32], b[32], c[32];
    fprintf(out, "%-22s %14s %14s %12s\n", "simulated", lx ? lx : "before",
            ly ? ly : "after", "change");
    const struct {
        const char *what;
        double x, y;
    } times[] = {
        {"makespan", x->makespan_ns, y->makespan_ns},
        {"lower bound", x->lower_bound_ns, y->lower_bound_ns},
        {"compute", x->compute_ns, y->compute_ns},
        {"comm", x->comm_ns, y->comm_ns},
        {"exposed comm", x->exposed_ns, y->exposed_ns},
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        compare_row(out, times[i].what, fmt_time(times[i].x, a, sizeof a),
                    fmt_time(times[i].y, b, sizeof b),
                    pct_change(times[i].x, times[i].y, c, sizeof c));
    snprintf(a, sizeof a, "%.1f%%", 100.0 * x->efficiency);
    snprintf(b, sizeof b, "%.1f%%", 100.0 * y->efficiency);
    compare_row(out, "efficiency", a, b,
                pt_change(x->efficiency, y->efficiency, c, sizeof c));
    snprintf(a, sizeof a, "%.1f%%", 100.0 * x->overlap);
    snprintf(b, sizeof b, "%.1f%%", 100.0 * y->overlap);
    compare_row(out, "overlap", a, b,
                pt_change(x->overlap, y->overlap, c, sizeof c));
    compare_row(out, "peak memory (sim)",
                cs_fmt_bytes((double)x->peak_memory, a, sizeof a),
                cs_fmt_bytes((double)y->peak_memory, b, sizeof b),
                pct_change((double)x->peak_memory, (double)y->peak_memory, c,
                           sizeof c));
    compare_row(out, "peak memory (step)",
                cs_fmt_bytes((double)x->peak_memory_step, a, sizeof a),
                cs_fmt_bytes((double)y->peak_memory_step, b, sizeof b),
                pct_change((double)x->peak_memory_step,
                           (double)y->peak_memory_step, c, sizeof c));
    return io_error(out, err);
}

/* ---- estimates ------------------------------------------------------------ */

static const char *fmt_delta(int64_t bytes, char *buf, size_t size)
{
    char tmp[32];
    if (bytes == 0)
        return snprintf(buf, size, "0"), buf;
    cs_fmt_bytes((double)(bytes < 0 ? -bytes : bytes), tmp, sizeof tmp);
    snprintf(buf, size, "%c%s", bytes < 0 ? '-' : '+', tmp);
    return buf;
}

commsched_status commsched_report_estimates_table(
    FILE *out, const commsched_graph *g, const commsched_cost_options *o,
    const commsched_memory *mem, commsched_error *err)
{
    char a[32], b[32], c[32], d[32], e[48], f[64], name[160];
    uint32_t cnt[COMMSCHED_SOURCE_COUNT] = {0};
    size_t nw = strlen("node");
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        size_t l = cs_utf8_width(g->nodes[v].name);
        if (l > nw)
            nw = l;
    }
    if (nw > NAME_MAX_W)
        nw = NAME_MAX_W;
    fprintf(out, "%s: %u node%s; device %s, %s model\n",
            cs_utf8_fit(g->name ? g->name : "(unnamed)", 40, 0, name,
                        sizeof name),
            g->n_nodes, COMMSCHED_PLURAL(g->n_nodes),
            o && o->device ? o->device->name : "-",
            o ? commsched_comm_model_str(o->comm_model) : "-");
    fprintf(out, "runtime = latency + max(bandwidth, compute); mem: bytes "
                 "allocated minus freed after the node\n\n");
    fprintf(out, "%-*s %-14s %9s %-5s %9s %9s %9s %10s  %s\n", (int)nw, "node",
            "op", "runtime", "src", "latency", "bandwidth", "compute", "mem",
            "detail");
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        const cs_node *nd = &g->nodes[v];
        commsched_node_cost nc;
        commsched_status st = commsched_cost_node(g, v, o, mem, &nc, err);
        if (st != COMMSCHED_OK)
            return st;
        cnt[nc.source]++;
        const char *op = nd->kind == COMMSCHED_NODE_COLLECTIVE
                             ? commsched_coll_op_str((commsched_coll_op)nd->coll_op)
                         : nd->op ? nd->op
                         : nd->kind == COMMSCHED_NODE_WAIT ? "(wait)"
                                                           : "(compute)";
        f[0] = '\0';
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            snprintf(f, sizeof f, "%s, %u rk/%u host%s %s/%s",
                     cs_fmt_bytes(nc.bytes, e, sizeof e), nc.coll.ranks,
                     nc.coll.hosts, nc.coll.hosts == 1 ? "" : "s",
                     commsched_nccl_algo_str(nc.coll.algo),
                     commsched_nccl_proto_str(nc.coll.proto));
        } else if (nc.source == COMMSCHED_SOURCE_NONE) {
            snprintf(f, sizeof f, "%s",
                     nd->kind == COMMSCHED_NODE_WAIT
                         ? "a wait costs 0"
                         : "no runtime_ns, flops or bytes: costs 0");
        } else if (nc.source == COMMSCHED_SOURCE_MEASURED ||
                   nc.source == COMMSCHED_SOURCE_FITTED) {
            snprintf(f, sizeof f, "%s",
                     nc.source == COMMSCHED_SOURCE_MEASURED
                         ? "its kernel's measured median"
                         : "the fitted roofline");
        } else if (nd->kind == COMMSCHED_NODE_COMPUTE &&
                   nc.source == COMMSCHED_SOURCE_MODEL) {
            snprintf(f, sizeof f, "%s-bound",
                     nc.tuple.computation_ns >= nc.tuple.bandwidth_ns
                         ? "compute"
                         : "memory");
        }
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE &&
            (nc.source == COMMSCHED_SOURCE_MEASURED ||
             nc.source == COMMSCHED_SOURCE_FITTED)) {
            size_t l = strlen(f);
            snprintf(f + l, sizeof f - l, "; %s",
                     nc.source == COMMSCHED_SOURCE_MEASURED
                         ? "measured size"
                         : "between/near measured sizes");
        }
        if (nc.source != COMMSCHED_SOURCE_MODEL &&
            nc.source != COMMSCHED_SOURCE_NONE && nc.model_ns > 0) {
            size_t l = strlen(f);
            snprintf(f + l, sizeof f - l, "%smodel %s", l ? "; " : "",
                     fmt_time(nc.model_ns, e, sizeof e));
        }
        fprintf(out, "%s %-14s %9s %-5s %9s %9s %9s %10s  %s\n",
                cs_utf8_fit(nd->name, nw, 1, name, sizeof name), op,
                fmt_time(nc.runtime_ns, a, sizeof a),
                commsched_cost_source_str(nc.source),
                fmt_time(nc.tuple.latency_ns, b, sizeof b),
                fmt_time(nc.tuple.bandwidth_ns, c, sizeof c),
                fmt_time(nc.tuple.computation_ns, d, sizeof d),
                fmt_delta(nc.tuple.memory_delta, e, sizeof e), f);
    }
    fprintf(out, "\n%s (cost 0)\n",
            commsched_cost_sources_text(cnt, name, sizeof name));
    return io_error(out, err);
}
