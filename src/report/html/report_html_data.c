/* commsched — the HTML report's JSON data block: every node of a run (or
 * the longest and bins for the rest) for the script's zoomed views (map:
 * report_html.c). */
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the data block ----------------------------------------------------- */

static int by_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Nodes of graph gi sent to the script: all, or the max_bars longest (by
 * the widest span any run gives them). */
commsched_status cs_html_choose_nodes(cs_html_page *p, uint32_t gi, commsched_error *err)
{
    const commsched_graph *g = p->graphs[gi];
    uint32_t max = p->o->max_bars ? p->o->max_bars : CS_HTML_DEFAULT_MAX_BARS;
    p->sel[gi] = NULL;
    p->n_sel[gi] = g->n_nodes;
    p->complete[gi] = 1;
    if (g->n_nodes <= max)
        return COMMSCHED_OK;
    double *len = malloc(g->n_nodes * sizeof *len);
    double *sorted = malloc(g->n_nodes * sizeof *sorted);
    uint32_t *sel = malloc((size_t)max * sizeof *sel);
    if (!len || !sorted || !sel) {
        free(len);
        free(sorted);
        free(sel);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    /* Nodes on lanes drawn bar by bar are always sent: the first view
     * shows them and their tooltips need the data. */
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        len[v] = -1;
        for (uint32_t k = 0; k < p->n_runs; k++) {
            const cs_html_run *r = &p->runs[k];
            cs_html_span s;
            if (r->gid != (int)gi || !cs_html_table_span(r, v, &s))
                continue;
            if (s.stream < r->n_streams && r->lane_of[s.stream] >= 0 &&
                r->lane_nodes[r->lane_of[s.stream]] <= CS_HTML_BAR_LIMIT)
                len[v] = INFINITY;
            else if (s.end - s.issue > len[v])
                len[v] = s.end - s.issue;
        }
        sorted[v] = len[v];
    }
    qsort(sorted, g->n_nodes, sizeof *sorted, by_double_desc);
    double thr = sorted[max - 1];
    uint32_t n = 0;
    /* Strictly longer first, then ties, so exactly `max` are kept. */
    for (uint32_t v = 0; v < g->n_nodes && n < max; v++)
        if (len[v] > thr)
            sel[n++] = v;
    for (uint32_t v = 0; v < g->n_nodes && n < max; v++)
        if (len[v] == thr)
            sel[n++] = v;
    free(len);
    free(sorted);
    p->sel[gi] = sel;
    p->n_sel[gi] = n;
    p->complete[gi] = 0;
    return COMMSCHED_OK;
}

int cs_html_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t sel_node(const cs_html_page *p, uint32_t gi, uint32_t j)
{
    return p->sel[gi] ? p->sel[gi][j] : j;
}

/* A graph's table: names, kinds, ops, bytes of the nodes sent. */
static void data_graph(cs_html_page *p, uint32_t gi)
{
    cs_html_out *w = &p->w;
    const commsched_graph *g = p->graphs[gi];
    uint32_t n = p->n_sel[gi];
    cs_html_putf(w, "{\"n\":%u,\"sel\":", g->n_nodes);
    if (p->sel[gi]) {
        cs_html_put(w, "[");
        for (uint32_t j = 0; j < n; j++)
            cs_html_putf(w, j ? ",%u" : "%u", p->sel[gi][j]);
        cs_html_put(w, "]");
    } else {
        cs_html_put(w, "null");
    }
    cs_html_put(w, ",\n\"name\":[");
    for (uint32_t j = 0; j < n; j++) {
        if (j)
            cs_html_put(w, j % 64 ? "," : ",\n");
        cs_html_jstr(w, g->nodes[sel_node(p, gi, j)].name);
    }
    cs_html_put(w, "],\n\"kind\":\"");
    for (uint32_t j = 0; j < n; j++) {
        const cs_node *nd = &g->nodes[sel_node(p, gi, j)];
        fputc(nd->kind == COMMSCHED_NODE_COMPUTE ? 'c'
              : nd->kind == COMMSCHED_NODE_WAIT  ? 'w'
              : nd->is_sync                      ? 's'
                                                 : 'a',
              w->f);
    }
    /* Ops: a small table and an index per node (-1: none). A linear
     * search per node is fine while ops are few; past 256 distinct ops
     * the rest are sent as "other". */
    enum { MAX_OPS = 256 };
    const char *ops[MAX_OPS];
    uint32_t n_ops = 0;
    cs_html_put(w, "\",\n\"op\":[");
    for (uint32_t j = 0; j < n; j++) {
        const cs_node *nd = &g->nodes[sel_node(p, gi, j)];
        const char *op =
            nd->kind == COMMSCHED_NODE_COLLECTIVE
                ? commsched_coll_op_str((commsched_coll_op)nd->coll_op)
                : nd->op;
        long idx = -1;
        if (op) {
            for (uint32_t k = 0; k < n_ops; k++)
                if (strcmp(ops[k], op) == 0) {
                    idx = k;
                    break;
                }
            if (idx < 0 && n_ops < MAX_OPS) {
                ops[n_ops] = op;
                idx = n_ops++;
            }
        }
        cs_html_putf(w, j ? ",%ld" : "%ld", idx);
    }
    cs_html_put(w, "],\n\"ops\":[");
    for (uint32_t k = 0; k < n_ops; k++) {
        if (k)
            cs_html_put(w, ",");
        cs_html_jstr(w, ops[k]);
    }
    cs_html_put(w, "],\"opc\":[");
    for (uint32_t k = 0; k < n_ops; k++) {
        const char *c = strcmp(ops[k], "all_gather") == 0       ? "ag"
                        : strcmp(ops[k], "reduce_scatter") == 0 ? "rs"
                        : strcmp(ops[k], "all_reduce") == 0     ? "ar"
                                                                : "co";
        cs_html_putf(w, k ? ",\"%s\"" : "\"%s\"", c);
    }
    cs_html_put(w, "],\n\"bytes\":[");
    for (uint32_t j = 0; j < n; j++) {
        uint32_t v = sel_node(p, gi, j);
        const cs_node *nd = &g->nodes[v];
        double bytes = nd->kind == COMMSCHED_NODE_COLLECTIVE
                           ? commsched_cost_collective_bytes(g, v)
                       : nd->bytes > 0 ? nd->bytes
                                       : 0;
        if (j)
            cs_html_put(w, ",");
        cs_html_num_int(w, bytes);
    }
    cs_html_put(w, "]}");
}

/* A run's times: per node sent, its lane, start, duration (shorter than
 * an end time), start - issue (mostly 0) and exposed time (mostly 0). */
static commsched_status data_run(cs_html_page *p, cs_html_run *r, commsched_error *err)
{
    cs_html_out *w = &p->w;
    uint32_t gi = (uint32_t)r->gid, n = p->n_sel[gi];
    cs_html_put(w, "{\"key\":");
    cs_html_jstr(w, r->key);
    cs_html_put(w, ",\"label\":");
    cs_html_jstr(w, r->label);
    cs_html_putf(w, ",\"g\":%u,\"end\":", gi);
    cs_html_num_int(w, r->end);
    cs_html_put(w, ",\"lanes\":[");
    for (uint32_t l = 0; l < r->n_lanes; l++) {
        cs_html_putf(w, "%s{\"name\":", l ? "," : "");
        cs_html_jstr(w, cs_html_lane_name(r, l));
        cs_html_putf(w, ",\"y\":%.1f}", cs_html_lane_y(r, l));
    }
    cs_html_put(w, "]");
    static const char *const keys[] = {"lane", "s", "d", "q", "x"};
    for (int f = 0; f < 5; f++) {
        cs_html_putf(w, ",\n\"%s\":[", keys[f]);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t v = sel_node(p, gi, j);
            cs_html_span s;
            int ok = cs_html_table_span(r, v, &s);
            if (j)
                cs_html_put(w, j % 128 ? "," : ",\n");
            if (f == 0) {
                int lane =
                    ok && s.stream < r->n_streams ? r->lane_of[s.stream] : -1;
                cs_html_putf(w, "%d", lane);
            } else if (!ok) {
                cs_html_put(w, "0");
            } else {
                cs_html_num_int(w, f == 1   ? s.start
                                   : f == 2 ? s.end - s.start
                                   : f == 3 ? s.start - s.issue
                                            : s.exposed);
            }
        }
        cs_html_put(w, "]");
    }
    /* Per-lane bins for the nodes left out. */
    if (!p->complete[gi]) {
        uint32_t B = CS_HTML_DATA_BINS;
        double *busy = calloc((size_t)r->n_lanes * B, sizeof *busy);
        uint32_t *cnt = calloc((size_t)r->n_lanes * B, sizeof *cnt);
        if (!busy || !cnt) {
            free(busy);
            free(cnt);
            return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        }
        double bw = p->T / B;
        for (uint32_t v = 0; v < r->g->n_nodes; v++) {
            cs_html_span s;
            if (!cs_html_get_span(r, v, &s) || s.stream >= r->n_streams ||
                r->lane_of[s.stream] < 0)
                continue;
            uint32_t l = (uint32_t)r->lane_of[s.stream];
            double a =
                r->g->nodes[v].kind == COMMSCHED_NODE_WAIT ? s.issue : s.start;
            double b = s.end;
            long i0 = (long)floor(a / bw), i1 = (long)floor(b / bw);
            if (i0 < 0)
                i0 = 0;
            if (i1 >= (long)B)
                i1 = (long)B - 1;
            for (long i = i0; i <= i1; i++) {
                double lo = fmax(a, (double)i * bw),
                       hi = fmin(b, (double)(i + 1) * bw);
                if (hi > lo)
                    busy[l * B + (uint32_t)i] += (hi - lo) / bw;
            }
            cnt[l * B + (uint32_t)((i0 + i1) / 2)]++;
        }
        cs_html_putf(w, ",\n\"bins\":{\"B\":%u,\"busy\":[", B);
        for (uint32_t l = 0; l < r->n_lanes; l++) {
            cs_html_put(w, l ? "],\n[" : "[");
            for (uint32_t i = 0; i < B; i++)
                cs_html_putf(w, i ? ",%.0f" : "%.0f",
                     fmin(1000, 1000 * busy[l * B + i]));
        }
        cs_html_put(w, "]],\"cnt\":[");
        for (uint32_t l = 0; l < r->n_lanes; l++) {
            cs_html_put(w, l ? "],\n[" : "[");
            for (uint32_t i = 0; i < B; i++)
                cs_html_putf(w, i ? ",%u" : "%u", cnt[l * B + i]);
        }
        cs_html_put(w, "]]}");
        free(busy);
        free(cnt);
    } else {
        cs_html_put(w, ",\"bins\":null");
    }
    /* The memory curve, whole or as min/max/last per bucket. */
    size_t nm = 0;
    const commsched_sim_memory_point *c =
        r->sim ? commsched_sim_get_memory_curve(r->sim, &nm) : NULL;
    if (!c) {
        cs_html_put(w, ",\"mem\":null}");
        return COMMSCHED_OK;
    }
    const commsched_sim_totals *t = commsched_sim_get_totals(r->sim);
    cs_html_put(w, ",\n\"peak\":");
    cs_html_num_int(w, (double)t->peak_memory);
    cs_html_put(w, ",\"peakAt\":");
    cs_html_num_int(w, t->peak_memory_at_ns);
    cs_html_put(w, ",\"mem\":{\"t\":[");
    /* Two passes over the curve (times, then bytes) with the same
     * selection, so nothing is buffered. */
    for (int f = 0; f < 2; f++) {
        if (f)
            cs_html_put(w, "],\n\"b\":[");
        uint32_t out = 0;
        if (nm <= CS_HTML_MEM_RAW_POINTS) {
            for (size_t i = 0; i < nm; i++, out++) {
                if (out)
                    cs_html_put(w, out % 128 ? "," : ",\n");
                cs_html_num_int(w, f ? (double)c[i].bytes : c[i].time_ns);
            }
            continue;
        }
        double bw = p->T / CS_HTML_MEM_BUCKETS;
        size_t i = 0;
        while (i < nm) {
            long bk = (long)floor(c[i].time_ns / bw);
            size_t j = i, imin = i, imax = i;
            while (j < nm && (long)floor(c[j].time_ns / bw) == bk) {
                if (c[j].bytes < c[imin].bytes)
                    imin = j;
                if (c[j].bytes > c[imax].bytes)
                    imax = j;
                j++;
            }
            size_t keep[3] = {imin < imax ? imin : imax,
                              imin < imax ? imax : imin, j - 1};
            for (int q = 0; q < 3; q++) {
                if (q && keep[q] == keep[q - 1])
                    continue;
                if (out)
                    cs_html_put(w, out % 128 ? "," : ",\n");
                out++;
                cs_html_num_int(w, f ? (double)c[keep[q]].bytes
                                     : c[keep[q]].time_ns);
            }
            i = j;
        }
    }
    cs_html_put(w, "]}}");
    return COMMSCHED_OK;
}

commsched_status cs_html_data_block(cs_html_page *p, commsched_error *err)
{
    cs_html_out *w = &p->w;
    commsched_status st;
    cs_html_put(w, "<script type=\"application/json\" id=\"cs-data\">\n");
    cs_html_putf(w,
         "{\"v\":1,\"T\":%.17g,\"W\":%.0f,\"L\":%.0f,\"laneH\":%.0f,"
         "\"axisY\":%.0f,\"axisBottom\":%.1f,",
         p->T, CS_HTML_PLOT_W, CS_HTML_LABEL_W, CS_HTML_LANE_H, CS_HTML_AXIS_H, p->tl_height - 4);
    if (p->mem_max > 0) {
        cs_html_putf(w, "\"mem\":{\"y0\":%.0f,\"h\":%.0f,\"max\":%.17g,\"budget\":",
             CS_HTML_MEM_TOP, CS_HTML_MEM_H, p->mem_max);
        if (p->o->memory_budget >= 0)
            cs_html_putf(w, "%lld}", (long long)p->o->memory_budget);
        else
            cs_html_put(w, "null}");
    } else {
        cs_html_put(w, "\"mem\":null");
    }
    cs_html_put(w, ",\n\"graphs\":[");
    for (uint32_t gi = 0; gi < p->n_graphs; gi++) {
        if (gi)
            cs_html_put(w, ",\n");
        data_graph(p, gi);
    }
    cs_html_put(w, "],\n\"runs\":[");
    for (uint32_t k = 0; k < p->n_runs; k++) {
        if (k)
            cs_html_put(w, ",\n");
        if ((st = data_run(p, &p->runs[k], err)) != COMMSCHED_OK)
            return st;
    }
    cs_html_put(w, "]}\n</script>\n");
    return COMMSCHED_OK;
}
