/* commsched — the passes' statistics as JSON (report.h,
 * commsched_run_stats_write_json): the "stats" array of a saved schedule
 * and `optimize --stats=json`. Written straight through the one JSON
 * writer, row by row: on a 36K-node step the per-collective rows are a
 * megabyte of text, which used to be built as a jansson tree, dumped to
 * text and parsed again by the save. Keys and number styles are the ones
 * that tree had (reals as jansson writes them, "0.0"; counts as integers;
 * absent positions as null); "no limiting factor" is null (the seed's
 * "None" and overlap's "none" were both written before), and figures are
 * written without the arithmetic's rounding (key_time). */
#include "report_writer.h"

#include "commsched/passes.h"
#include "commsched/report.h"
#include "fmt_g.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void key_real(cs_jw *w, const char *key, double v)
{
    cs_jw_key(w, key);
    cs_jw_real(w, v, 0);
}

/* A figure of the statistics to 12 significant digits, and 0 when it is
 * within 1e-9 of `scale` (the row's comm time): the times are sums and
 * differences of runtimes, and past that they carry the arithmetic's
 * rounding, not a figure (an exposed time of 1.16e-10 ns for a collective
 * fully hidden; 10901.673758865334 ns of exposure for 10901.673758865249
 * of comm). The records keep the exact doubles (the seed's arithmetic,
 * bit for bit); the file says what they measure. */
static void key_time(cs_jw *w, const char *key, double v, double scale)
{
    if (isfinite(v) && v != 0) {
        if (fabs(v) <= 1e-9 * fmax(fabs(scale), 1.0)) {
            v = 0;
        } else {
            char buf[CS_FMT_G_SIZE];
            cs_fmt_g(buf, v, 12);
            v = strtod(buf, NULL);
        }
    }
    key_real(w, key, v);
}

/* A share of a time (0..1) to 1e-9: 1 - 0.9999999999999999 is not a
 * share of anything. */
static void key_share(cs_jw *w, const char *key, double v)
{
    double r = isfinite(v) ? round(v * 1e9) / 1e9 : v;
    key_real(w, key, r == 0 ? 0.0 : r);
}

/* A limiting factor or limit: JSON's null for none (the seed's "None",
 * overlap's "none"), else its text. */
static void key_limit(cs_jw *w, const char *key, const char *v)
{
    cs_jw_key(w, key);
    if (!v || strcmp(v, "None") == 0 || strcmp(v, "none") == 0)
        cs_jw_null(w);
    else
        cs_jw_string(w, v);
}

/* A position, or null for none. */
static void key_pos(cs_jw *w, const char *key, uint32_t p)
{
    cs_jw_key(w, key);
    if (p == COMMSCHED_NONE)
        cs_jw_null(w);
    else
        cs_jw_uint(w, p);
}

/* One row of a reordering or sink pass (the seed's per-node stats). */
static void node_row(cs_jw *w, const commsched_graph *g,
                     const commsched_node_stats *r, int sink)
{
    cs_jw_object(w);
    cs_jw_key_string(w, "node", commsched_graph_node_name(g, r->node));
    double c = r->comm_time;
    key_time(w, "comm_time_ns", c, c);
    key_time(w, "comp_time_ns", r->comp_time, c);
    key_time(w, "initial_exposed_ns", r->initial_exposed, c);
    key_time(w, "final_exposed_ns", r->final_exposed, c);
    key_time(w, "improvement_ns", r->initial_exposed - r->final_exposed, c);
    key_limit(w, "limiting_factor", r->limiting_factor);
    cs_jw_key_int(w, "moves", r->moves);
    cs_jw_key_int(w, "grouped", r->grouped);
    cs_jw_key_string(w, "grouped_info", r->grouped_info ? r->grouped_info : "");
    cs_jw_key_string(w, "overlap_info", r->overlap_info ? r->overlap_info : "");
    if (sink)
        cs_jw_key_string(w, "moves_info", r->moves_info ? r->moves_info : "");
    cs_jw_end(w);
}

static void overlap_row(cs_jw *w, const commsched_graph *g,
                        const commsched_overlap_stats *o)
{
    cs_jw_object(w);
    cs_jw_key_string(w, "node", commsched_graph_node_name(g, o->node));
    key_time(w, "comm_ns", o->comm_ns, o->comm_ns);
    key_time(w, "exposed_before_ns", o->exposed_before_ns, o->comm_ns);
    key_time(w, "exposed_after_ns", o->exposed_after_ns, o->comm_ns);
    key_share(w, "hidden_before", o->hidden_before);
    key_share(w, "hidden_after", o->hidden_after);
    key_limit(w, "limit", o->limit);
    cs_jw_key_string(w, "wait", o->wait == COMMSCHED_NONE
                                    ? NULL
                                    : commsched_graph_node_name(g, o->wait));
    key_pos(w, "issue_before", o->issue_before);
    key_pos(w, "issue_after", o->issue_after);
    key_pos(w, "wait_before", o->wait_before);
    key_pos(w, "wait_after", o->wait_after);
    cs_jw_end(w);
}

static void bucket_row(cs_jw *w, const commsched_graph *g,
                       const commsched_bucket_stats *b)
{
    cs_jw_object(w);
    cs_jw_key_string(w, "node", commsched_graph_node_name(g, b->node));
    cs_jw_key_string(w, "copy_in", commsched_graph_node_name(g, b->copy_in));
    cs_jw_key_string(w, "wait", commsched_graph_node_name(g, b->wait));
    cs_jw_key(w, "members");
    cs_jw_array(w);
    for (uint32_t i = 0; i < b->n_members; i++)
        cs_jw_string(w, b->members[i]);
    cs_jw_end(w);
    cs_jw_key_int(w, "bytes", b->bytes);
    key_time(w, "time_before_ns", b->time_before_ns, b->time_before_ns);
    key_time(w, "time_after_ns", b->time_after_ns, b->time_after_ns);
    cs_jw_key_string(w, "closed_by", b->closed_by);
    cs_jw_end(w);
}

/* What a row reads (cs_jw_array_items may call it on several threads). */
typedef struct rows {
    const commsched_graph *g;
    const commsched_pass_stats *p;
} rows;

static void node_item(cs_jw *w, size_t k, const void *ctx)
{
    const rows *r = ctx;
    node_row(w, r->g, &r->p->nodes[k], r->p->kind == COMMSCHED_STATS_SINK);
}

static void overlap_item(cs_jw *w, size_t k, const void *ctx)
{
    const rows *r = ctx;
    overlap_row(w, r->g, &r->p->overlap[k]);
}

/* Rows a thread writes at a time: ~40 KB of text at ~650 bytes a row. */
#define ROWS_PER_PART 64u

static void pass_object(cs_jw *w, const commsched_graph *g,
                        const commsched_pass_stats *p, unsigned flags)
{
    /* Node indices are the pass's own graph's (bucketing makes one). */
    const commsched_graph *pg = p->graph ? p->graph : g;
    /* The per-node and per-collective rows of a large graph's pass on
     * every core: a megabyte of text on a 36K-node step. */
    rows r = {pg, p};
    int threaded = commsched_graph_node_count(pg) >= CS_THREADS_MIN_NODES;
    cs_jw_object(w);
    cs_jw_key_string(w, "pass", p->pass);
    cs_jw_key_int(w, "peak_memory_before", p->peak_before);
    cs_jw_key_int(w, "peak_memory_after", p->peak_after);
    cs_jw_key_int(w, "fake_edges_added", p->fake_edges_added);
    cs_jw_key(w, "nodes");
    cs_jw_array(w);
    cs_jw_array_items(w, p->n_nodes, ROWS_PER_PART, threaded, node_item, &r);
    cs_jw_end(w);
    if (p->kind == COMMSCHED_STATS_BUCKET) {
        cs_jw_key(w, "buckets");
        cs_jw_array(w);
        for (uint32_t k = 0; k < p->n_buckets; k++)
            bucket_row(w, pg, &p->buckets[k]);
        cs_jw_end(w);
        cs_jw_key_int(w, "fake_edges_dropped", p->fake_edges_dropped);
        cs_jw_key_int(w, "merges_priced", p->merges_priced);
        cs_jw_key_int(w, "full_pricings", p->full_pricings);
    }
    if (p->kind == COMMSCHED_STATS_OVERLAP) {
        cs_jw_key(w, "collectives");
        cs_jw_array(w);
        cs_jw_array_items(w, p->n_overlap, ROWS_PER_PART, threaded,
                          overlap_item, &r);
        cs_jw_end(w);
        cs_jw_key_string(w, "variant",
                         p->overlap_variant ? p->overlap_variant : "input");
        cs_jw_key(w, "budget_bytes");
        if (p->overlap_budget_bytes < 0)
            cs_jw_null(w);
        else
            cs_jw_int(w, p->overlap_budget_bytes);
        cs_jw_key(w, "time_budget_bytes");
        if (p->overlap_time_budget_bytes < 0)
            cs_jw_null(w);
        else
            cs_jw_int(w, p->overlap_time_budget_bytes);
        cs_jw_key(w, "peak_time_before");
        if (p->overlap_peak_time_before < 0)
            cs_jw_null(w);
        else
            cs_jw_int(w, p->overlap_peak_time_before);
        cs_jw_key(w, "peak_time_after");
        if (p->overlap_peak_time_after < 0)
            cs_jw_null(w);
        else
            cs_jw_int(w, p->overlap_peak_time_after);
        cs_jw_key_int(w, "candidates", p->overlap_candidates);
        cs_jw_key_int(w, "over_budget", p->overlap_over_budget);
        cs_jw_key_string(w, "binds",
                         p->overlap_binds ? p->overlap_binds : "none");
    }
    if (flags & COMMSCHED_STATS_JSON_TIMING)
        key_real(w, "wall_ms", p->wall_ms);
    cs_jw_end(w);
}

/* The statistics of every pass of run as one array on w. */
static void stats_array(cs_jw *w, const commsched_graph *g,
                        const commsched_run *run, unsigned flags)
{
    cs_jw_array(w);
    for (size_t i = 0; run && i < commsched_run_pass_count(run); i++)
        pass_object(w, g, commsched_run_pass(run, i), flags);
    cs_jw_end(w);
}

commsched_status commsched_run_stats_write_json(FILE *out,
                                                const commsched_graph *g,
                                                const commsched_run *run,
                                                unsigned flags,
                                                commsched_error *err)
{
    cs_jw *w = cs_report_writer(out, err);
    if (!w)
        return COMMSCHED_ENOMEM;
    if (flags & COMMSCHED_STATS_JSON_INDENT) {
        cs_jw_layout(w, "", ": ");
        cs_jw_indent(w, 1);
    } else {
        cs_jw_layout(w, "", ":");
    }
    stats_array(w, g, run, flags);
    return cs_report_finish(w, "statistics", err);
}

void commsched_schedule_record_init(commsched_schedule_record *r)
{
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->tune_candidate = -1;
}

commsched_status commsched_schedule_record_write(FILE *out, void *ctx,
                                                 commsched_error *err)
{
    const commsched_schedule_record *r = ctx;
    cs_jw *w = cs_report_writer(out, err);
    if (!w)
        return COMMSCHED_ENOMEM;
    cs_jw_layout(w, "", ":"); /* compact: the saved file's one line */
    cs_jw_object(w);
    cs_jw_key_string(w, "passes", r->passes);
    cs_jw_key(w, "before");
    cs_jw_object(w);
    cs_jw_key_int(w, "peak_memory", r->peak_before);
    cs_jw_end(w);
    cs_jw_key(w, "after");
    cs_jw_object(w);
    cs_jw_key_int(w, "peak_memory", r->peak_after);
    cs_jw_end(w);
    if (r->has_dropped) {
        cs_jw_key(w, "dropped_fake_edges");
        cs_jw_array(w);
        for (uint32_t i = 0; i < r->n_dropped; i++) {
            cs_jw_object(w);
            cs_jw_key_string(w, "from", r->dropped[2 * i]);
            cs_jw_key_string(w, "to", r->dropped[2 * i + 1]);
            cs_jw_end(w);
        }
        cs_jw_end(w);
    }
    cs_jw_key(w, "stats");
    stats_array(w, r->g, r->run, 0);
    if (r->knobs) {
        char buf[64];
        cs_jw_key(w, "knobs");
        cs_jw_object(w);
        for (size_t i = 0; i < commsched_knob_count(); i++)
            if (commsched_knobs_get(r->knobs, commsched_knob_name(i), buf,
                                    sizeof buf) == 0)
                cs_jw_key_string(w, commsched_knob_name(i), buf);
        cs_jw_end(w);
    }
    if (r->tune_candidate >= 0) {
        cs_jw_key(w, "tune");
        cs_jw_object(w);
        cs_jw_key_int(w, "candidate", r->tune_candidate);
        cs_jw_key(w, "budget");
        if (isinf(r->tune_budget))
            cs_jw_string(w, "inf");
        else
            cs_jw_real(w, r->tune_budget, 0);
        cs_jw_end(w);
    }
    cs_jw_end(w);
    return cs_report_finish(w, "the schedule", err);
}
