/* commsched — drawing the HTML report (report_html_internal.h): the runs
 * and their lanes, the timeline's first view and the memory chart, as SVG.
 *
 * A lane with at most CS_HTML_BAR_LIMIT nodes draws every node as a bar; a busier
 * one draws nodes at least CS_HTML_MIN_BAR_PX wide as bars and folds the others
 * into one-unit columns (busy fraction as height, exposed time as a red
 * strip, node counts for the tooltip), merged while the level repeats, so
 * the element count is bounded by the plot's width, not the node count.
 * The script (report_html.js) redraws zoomed windows by the same rule. */
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Node v's times in run r; 0 when the measured run lacks it. Measured
 * waits without exposed_ns count their whole span as stall: a real wait
 * only takes time when it stalls. */
int cs_html_get_span(const cs_html_run *r, uint32_t v, cs_html_span *s)
{
    if (r->sim) {
        const commsched_sim_node *x = &commsched_sim_get_nodes(r->sim)[v];
        s->issue = x->issue_ns;
        s->start = x->start_ns;
        s->end = x->end_ns;
        s->exposed = x->exposed_ns;
        s->stream = x->stream;
        return 1;
    }
    const commsched_measured_run *m = r->meas;
    if (isnan(m->start_ns[v]) || isnan(m->end_ns[v]))
        return 0;
    const cs_node *nd = &r->g->nodes[v];
    s->start = m->start_ns[v];
    s->end = m->end_ns[v];
    s->issue = isnan(m->issue_ns[v]) ? s->start : m->issue_ns[v];
    if (!isnan(m->exposed_ns_of[v]))
        s->exposed = m->exposed_ns_of[v];
    else if (nd->kind == COMMSCHED_NODE_WAIT ||
             (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync))
        s->exposed = s->end - s->issue;
    else
        s->exposed = 0;
    s->stream = commsched_sim_get_nodes(r->lanes_from)[v].stream;
    return 1;
}

/* Node ids as the data block and the bars' data-node see them. */
uint32_t cs_html_table_id(const cs_html_run *r, uint32_t v)
{
    return r->to_table ? r->to_table[v] : v;
}

/* get_span for a node id of the run's table. */
int cs_html_table_span(const cs_html_run *r, uint32_t t, cs_html_span *s)
{
    return cs_html_get_span(r, r->from_table ? r->from_table[t] : t, s);
}

void cs_html_run_fini(cs_html_run *r)
{
    free(r->from_table);
    free(r->to_table);
    free(r->lane_of);
    free(r->lane_stream);
    free(r->lane_nodes);
}

/* Lanes: compute always, then each comm stream that carries a node. */
commsched_status cs_html_run_lanes(cs_html_run *r, commsched_error *err)
{
    uint32_t S = commsched_sim_stream_count(r->lanes_from);
    r->n_streams = S ? S : 1;
    r->lane_of = malloc(r->n_streams * sizeof *r->lane_of);
    r->lane_stream = malloc(r->n_streams * sizeof *r->lane_stream);
    r->lane_nodes = calloc(r->n_streams, sizeof *r->lane_nodes);
    uint32_t *per_stream = calloc(r->n_streams, sizeof *per_stream);
    if (!r->lane_of || !r->lane_stream || !r->lane_nodes || !per_stream) {
        free(per_stream);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    r->end = 0;
    for (uint32_t v = 0; v < r->g->n_nodes; v++) {
        cs_html_span s;
        if (!cs_html_get_span(r, v, &s))
            continue;
        if (s.stream < r->n_streams)
            per_stream[s.stream]++;
        if (r->g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE &&
            r->g->nodes[v].is_sync)
            per_stream[0]++; /* its twin on the compute lane */
        if (s.end > r->end)
            r->end = s.end;
    }
    if (r->sim && commsched_sim_get_totals(r->sim)->makespan_ns > r->end)
        r->end = commsched_sim_get_totals(r->sim)->makespan_ns;
    r->n_lanes = 0;
    for (uint32_t s = 0; s < r->n_streams; s++) {
        if (s != 0 && per_stream[s] == 0) {
            r->lane_of[s] = -1;
            continue;
        }
        r->lane_of[s] = (int32_t)r->n_lanes;
        r->lane_stream[r->n_lanes] = s;
        r->lane_nodes[r->n_lanes] = per_stream[s];
        r->n_lanes++;
    }
    free(per_stream);
    return COMMSCHED_OK;
}

double cs_html_run_height(const cs_html_run *r)
{
    return CS_HTML_RUN_HEAD + r->n_lanes * (CS_HTML_LANE_H + CS_HTML_LANE_GAP);
}

double cs_html_lane_y(const cs_html_run *r, uint32_t lane)
{
    return r->y + CS_HTML_RUN_HEAD + lane * (CS_HTML_LANE_H + CS_HTML_LANE_GAP);
}

const char *cs_html_lane_name(const cs_html_run *r, uint32_t lane)
{
    return commsched_sim_stream_name(r->lanes_from, r->lane_stream[lane]);
}

/* ---- the timeline SVG --------------------------------------------------- */

/* Bar classes: collectives are coloured by op (the script's "opc"). */
static const char *op_class(const cs_node *nd)
{
    switch ((commsched_coll_op)nd->coll_op) {
    case COMMSCHED_COLL_ALL_GATHER: return "bar ag";
    case COMMSCHED_COLL_REDUCE_SCATTER: return "bar rs";
    case COMMSCHED_COLL_ALL_REDUCE: return "bar ar";
    default: return "bar co";
    }
}

static const char *kind_name(const cs_node *nd)
{
    switch (nd->kind) {
    case COMMSCHED_NODE_COMPUTE: return "compute";
    case COMMSCHED_NODE_WAIT: return "wait";
    default: return nd->is_sync ? "sync collective" : "collective";
    }
}

/* What a node looks like on one lane: the interval, its class and the
 * overlay (a wait's stall, a collective's exposed tail). */
typedef struct shape {
    double a, b; /* the bar */
    const char *cls;
    double oa, ob;     /* overlay, when ob > oa */
    int overlay_stall; /* 1: hatched stall over the whole lane height */
    double qa, qb;     /* queue line (collectives issued before their
                          stream was free) */
    int twin;          /* a sync collective's stall on the compute lane */
} shape;

static void make_shape(const cs_html_run *r, uint32_t v, const cs_html_span *s, int twin,
                       shape *o)
{
    const cs_node *nd = &r->g->nodes[v];
    memset(o, 0, sizeof *o);
    o->a = s->start;
    o->b = s->end;
    o->twin = twin;
    if (twin) {
        o->a = s->issue;
        o->cls = "st";
        return;
    }
    if (nd->kind == COMMSCHED_NODE_COMPUTE) {
        o->cls = "bar c";
    } else if (nd->kind == COMMSCHED_NODE_WAIT) {
        o->a = s->issue;
        o->cls = "bar w";
        if (s->exposed > 0) {
            o->oa = s->issue;
            o->ob = fmin(s->end, s->issue + s->exposed);
            o->overlay_stall = 1;
        }
    } else {
        o->cls = op_class(nd);
        if (s->exposed > 0) {
            o->oa = fmax(s->start, s->end - s->exposed);
            o->ob = s->end;
        }
        if (s->issue < s->start) {
            o->qa = s->issue;
            o->qb = s->start;
        }
    }
}

/* Columns of one lane while aggregating. */
typedef struct cols {
    double busy[CS_HTML_NCOLS]; /* units of the column covered */
    double expo[CS_HTML_NCOLS];
    uint32_t n[CS_HTML_NCOLS];
} cols;

static void cols_add(const cs_html_page *p, double *arr, double a, double b)
{
    double x0 = cs_html_x(p, a) - CS_HTML_LABEL_W, x1 = cs_html_x(p, b) - CS_HTML_LABEL_W;
    if (x0 < 0)
        x0 = 0;
    if (x1 > CS_HTML_PLOT_W)
        x1 = CS_HTML_PLOT_W;
    if (!(x1 > x0))
        return;
    for (long c = (long)floor(x0); c < (long)CS_HTML_NCOLS && (double)c < x1; c++) {
        double lo = fmax(x0, (double)c), hi = fmin(x1, (double)c + 1);
        if (hi > lo)
            arr[c] += hi - lo;
    }
}

static uint32_t col_of(const cs_html_page *p, double t)
{
    double x = floor(cs_html_x(p, t) - CS_HTML_LABEL_W);
    if (x < 0)
        return 0;
    if (x >= CS_HTML_NCOLS)
        return CS_HTML_NCOLS - 1;
    return (uint32_t)x;
}

static int level(double busy)
{
    double f = busy > 1 ? 1 : busy;
    return (int)floor(f * CS_HTML_LEVELS + 0.5);
}

static void emit_cols(cs_html_page *p, const cs_html_run *r, uint32_t lane, const cols *c,
                      int titles)
{
    cs_html_out *w = &p->w;
    double y = cs_html_lane_y(r, lane), units = p->T / CS_HTML_PLOT_W;
    char tb[32];
    for (uint32_t i = 0; i < CS_HTML_NCOLS;) {
        int lv = level(c->busy[i]);
        if (lv == 0) {
            i++;
            continue;
        }
        uint32_t j = i + 1, n = c->n[i];
        double busy = c->busy[i];
        while (j < CS_HTML_NCOLS && level(c->busy[j]) == lv) {
            n += c->n[j];
            busy += c->busy[j];
            j++;
        }
        double h = CS_HTML_LANE_H * lv / CS_HTML_LEVELS;
        cs_html_putf(w,
             "<rect class=\"bn %s\" x=\"%.1f\" y=\"%.2f\" width=\"%u\" "
             "height=\"%.2f\" data-run=\"%s\" data-lane=\"%u\" data-n=\"%u\" "
             "data-t0=\"%.0f\" data-t1=\"%.0f\" data-busy=\"%.0f\"",
             lane == 0 ? "c" : "k", CS_HTML_LABEL_W + i, y + CS_HTML_LANE_H - h, j - i, h,
             r->key, lane, n, i * units, j * units,
             1000.0 * busy / (double)(j - i));
        if (!titles) {
            cs_html_put(w, "/>\n");
            i = j;
            continue;
        }
        cs_html_put(w, "><title>");
        cs_html_putf(w, "%u node%s, busy %.0f%%, ", n, COMMSCHED_PLURAL(n),
                     100.0 * busy / (double)(j - i));
        cs_html_put(w, cs_html_fmt_time(i * units, tb, sizeof tb));
        cs_html_put(w, " to ");
        cs_html_put(w, cs_html_fmt_time(j * units, tb, sizeof tb));
        cs_html_put(w, "</title></rect>\n");
        i = j;
    }
    for (uint32_t i = 0; i < CS_HTML_NCOLS;) {
        if (!(c->expo[i] > 0)) {
            i++;
            continue;
        }
        uint32_t j = i + 1;
        double ex = c->expo[i];
        while (j < CS_HTML_NCOLS && c->expo[j] > 0)
            ex += c->expo[j++];
        cs_html_putf(w,
             "<rect class=\"ex\" x=\"%.1f\" y=\"%.2f\" width=\"%u\" "
             "height=\"4\" data-run=\"%s\" data-lane=\"%u\" "
             "data-exp=\"%.0f\"/>\n",
             CS_HTML_LABEL_W + i, y, j - i, r->key, lane, ex * units);
        i = j;
    }
}

/* One bar (and its overlays). SVG files get a <title> per bar; the page's
 * script builds richer tooltips from the data block instead. */
static void emit_bar(cs_html_page *p, const cs_html_run *r, uint32_t v, const cs_html_span *s,
                     const shape *o, uint32_t lane, int titles)
{
    cs_html_out *w = &p->w;
    double y = cs_html_lane_y(r, lane);
    double x0 = cs_html_x(p, o->a), x1 = cs_html_x(p, o->b);
    double wd = x1 - x0;
    char a[32], b[32];
    if (!o->twin && wd < 1)
        wd = 1; /* every node stays visible and hoverable */
    if (o->twin && wd < 0.5)
        wd = 0.5;
    int zero = !o->twin && !(o->b > o->a);
    if (o->qb > o->qa)
        cs_html_putf(w,
             "<line class=\"qu\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" "
             "y2=\"%.1f\"/>",
             cs_html_x(p, o->qa), cs_html_x(p, o->qb), y + CS_HTML_LANE_H / 2, y + CS_HTML_LANE_H / 2);
    cs_html_putf(w,
         "<rect class=\"%s%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
         "height=\"%.0f\" data-run=\"%s\" data-node=\"%u\"",
         o->cls, zero ? " z" : "", x0, y, wd, CS_HTML_LANE_H, r->key,
         cs_html_table_id(r, v));
    if (titles) {
        cs_html_put(w, "><title>");
        cs_html_esc(w, r->g->nodes[v].name);
        cs_html_putf(w, " (%s", kind_name(&r->g->nodes[v]));
        if (r->g->nodes[v].op) {
            cs_html_put(w, " ");
            cs_html_esc(w, r->g->nodes[v].op);
        }
        cs_html_putf(w, ") %s to %s", cs_html_fmt_time(o->a, a, sizeof a),
             cs_html_fmt_time(o->b, b, sizeof b));
        if (o->ob > o->oa || o->twin)
            cs_html_putf(w, ", exposed %s", cs_html_fmt_time(s->exposed, a, sizeof a));
        cs_html_put(w, "</title></rect>");
    } else {
        cs_html_put(w, "/>");
    }
    if (o->ob > o->oa) {
        double ox0 = cs_html_x(p, o->oa), ow = cs_html_x(p, o->ob) - ox0;
        cs_html_putf(w,
             "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
             "height=\"%.0f\" data-run=\"%s\" data-node=\"%u\"/>",
             o->overlay_stall ? "st" : "ex", ox0, y, ow < 1 ? 1 : ow,
             o->overlay_stall ? CS_HTML_LANE_H : 5.0, r->key, cs_html_table_id(r, v));
    }
    cs_html_put(w, "\n");
}

/* Does the lane draw this shape as a bar (rather than fold it into
 * columns)? */
static int as_bar(const cs_html_page *p, const cs_html_run *r, uint32_t lane, const shape *o)
{
    if (r->lane_nodes[lane] <= CS_HTML_BAR_LIMIT)
        return 1;
    return cs_html_x(p, o->b) - cs_html_x(p, o->a) >= CS_HTML_MIN_BAR_PX;
}

static void time_axis(cs_html_page *p, double top, double bottom)
{
    cs_html_out *w = &p->w;
    double step = cs_html_nice_step(p->T, 8);
    char b[32];
    for (int i = 0; i < CS_HTML_MAX_TICKS; i++) {
        double t = i * step;
        if (!(t <= p->T * (1 + 1e-9)))
            break;
        double x = cs_html_x(p, t);
        cs_html_putf(w,
             "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
             "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
             "text-anchor=\"middle\">%s</text>\n",
             x, x, top, bottom, x, top - 7,
             cs_html_fmt_tick(t, step, b, sizeof b));
    }
}

/* Lane labels and backgrounds: independent of the zoom window. */
void cs_html_timeline_frame(cs_html_page *p)
{
    cs_html_out *w = &p->w;
    for (uint32_t k = 0; k < p->n_runs; k++) {
        const cs_html_run *r = &p->runs[k];
        cs_html_putf(w, "<text class=\"runlbl\" x=\"4\" y=\"%.1f\">", r->y + 14);
        cs_html_esc(w, r->label);
        cs_html_put(w, "</text>\n");
        for (uint32_t l = 0; l < r->n_lanes; l++) {
            double y = cs_html_lane_y(r, l);
            cs_html_putf(w,
                 "<rect class=\"lanebg\" x=\"%.1f\" y=\"%.1f\" "
                 "width=\"%.1f\" height=\"%.0f\"/>"
                 "<text class=\"lanelbl\" x=\"14\" y=\"%.1f\">",
                 CS_HTML_LABEL_W, y, CS_HTML_PLOT_W, CS_HTML_LANE_H, y + 13);
            if (l == 0)
                cs_html_put(w, "compute");
            else {
                cs_html_put(w, "comm ");
                cs_html_esc(w, cs_html_lane_name(r, l));
            }
            cs_html_put(w, "</text>\n");
        }
    }
}

/* The first view of every run: bars, or columns plus wide bars. */
commsched_status cs_html_timeline_static(cs_html_page *p, int titles,
                                         commsched_error *err)
{
    time_axis(p, CS_HTML_AXIS_H, p->tl_height - 4);
    for (uint32_t k = 0; k < p->n_runs; k++) {
        cs_html_run *r = &p->runs[k];
        cols *c = NULL;
        int any_agg = 0;
        for (uint32_t l = 0; l < r->n_lanes; l++)
            any_agg |= r->lane_nodes[l] > CS_HTML_BAR_LIMIT;
        if (any_agg) {
            c = calloc(r->n_lanes, sizeof *c);
            if (!c)
                return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                           "out of memory");
        }
        /* Columns first, so wide bars draw over them. */
        for (int pass = any_agg ? 0 : 1; pass < 2; pass++) {
            for (uint32_t i = 0; i < r->g->n_nodes; i++) {
                uint32_t v = r->order[i];
                cs_html_span s;
                if (!cs_html_get_span(r, v, &s))
                    continue;
                const cs_node *nd = &r->g->nodes[v];
                int twins =
                    nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync;
                for (int t = 0; t <= twins; t++) {
                    uint32_t stream = t ? 0 : s.stream;
                    if (stream >= r->n_streams || r->lane_of[stream] < 0)
                        continue;
                    uint32_t lane = (uint32_t)r->lane_of[stream];
                    shape o;
                    make_shape(r, v, &s, t, &o);
                    int bar = as_bar(p, r, lane, &o);
                    if (pass == 1 && bar)
                        emit_bar(p, r, v, &s, &o, lane, titles);
                    else if (pass == 0 && !bar) {
                        cols *cl = &c[lane];
                        cols_add(p, cl->busy, o.a, o.b);
                        if (o.twin)
                            cols_add(p, cl->expo, o.a, o.b);
                        if (o.ob > o.oa)
                            cols_add(p, cl->expo, o.oa, o.ob);
                        cl->n[col_of(p, (o.a + o.b) / 2)]++;
                    }
                }
            }
            if (pass == 0)
                for (uint32_t l = 0; l < r->n_lanes; l++)
                    if (r->lane_nodes[l] > CS_HTML_BAR_LIMIT)
                        emit_cols(p, r, l, &c[l], titles);
        }
        free(c);
    }
    return COMMSCHED_OK;
}

void cs_html_timeline_legend_svg(cs_html_page *p, double y)
{
    /* Swatches take the bars' colours through "lg" classes, so a count
     * of the bars (class "bar") finds nodes only. */
    static const struct {
        const char *cls, *text;
    } items[] = {{"lg c", "compute"},
                 {"lg ag", "all_gather"},
                 {"lg rs", "reduce_scatter"},
                 {"lg ar", "all_reduce"},
                 {"lg co", "other collective"},
                 {"lg w", "wait"},
                 {"st", "compute stalled (exposed)"},
                 {"ex", "exposed comm"}};
    double x = CS_HTML_LABEL_W;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        cs_html_putf(&p->w,
             "<rect class=\"%s\" x=\"%.0f\" y=\"%.0f\" width=\"12\" "
             "height=\"10\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
             items[i].cls, x, y, x + 16, y + 9, items[i].text);
        x += 28 + 6.2 * (double)strlen(items[i].text);
    }
}

/* ---- memory ------------------------------------------------------------- */

static double mem_y(const cs_html_page *p, double bytes)
{
    return CS_HTML_MEM_TOP + CS_HTML_MEM_H - bytes / p->mem_max * CS_HTML_MEM_H;
}

/* A run's curve as a step path; points closer than half a unit share a
 * column and draw its min..max as a vertical stroke, so a dense curve
 * keeps its envelope (and its peak) at any size. */
static void memory_path(cs_html_page *p, const cs_html_run *r)
{
    size_t n = 0;
    const commsched_sim_memory_point *c =
        commsched_sim_get_memory_curve(r->sim, &n);
    cs_html_out *w = &p->w;
    if (!n)
        return;
    cs_html_putf(w, "<path class=\"mline %s\" d=\"M%.1f %.1f", r->key, CS_HTML_LABEL_W,
         mem_y(p, (double)c[0].bytes));
    long col = -1;
    int64_t mn = 0, mx = 0, last = 0;
    for (size_t i = 1; i <= n; i++) {
        long cc = i < n ? (long)floor((cs_html_x(p, c[i].time_ns) - CS_HTML_LABEL_W) * 2) : -2;
        if (cc != col || i == n) {
            if (col >= 0) {
                cs_html_putf(w, " H%.1f V%.1f", CS_HTML_LABEL_W + (double)col / 2,
                     mem_y(p, (double)mx));
                if (mn != mx)
                    cs_html_putf(w, " V%.1f", mem_y(p, (double)mn));
                if (last != mn)
                    cs_html_putf(w, " V%.1f", mem_y(p, (double)last));
            }
            if (i == n)
                break;
            col = cc;
            mn = mx = last = c[i].bytes;
        } else {
            if (c[i].bytes < mn)
                mn = c[i].bytes;
            if (c[i].bytes > mx)
                mx = c[i].bytes;
            last = c[i].bytes;
        }
    }
    cs_html_putf(w, " H%.1f\"/>\n", cs_html_x(p, r->end));
    const commsched_sim_totals *t = commsched_sim_get_totals(r->sim);
    cs_html_putf(w,
         "<circle class=\"mdot %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" "
         "data-run=\"%s\" data-peak=\"%lld\" data-t0=\"%.0f\"/>\n",
         r->key, cs_html_x(p, t->peak_memory_at_ns), mem_y(p, (double)t->peak_memory),
         r->key, (long long)t->peak_memory, t->peak_memory_at_ns);
}

int cs_html_has_curve(const cs_html_run *r)
{
    size_t n = 0;
    return r->sim && commsched_sim_get_memory_curve(r->sim, &n) && n > 0;
}

void cs_html_memory_section(cs_html_page *p)
{
    cs_html_out *w = &p->w;
    const commsched_html_options *o = p->o;
    char a[32], b[32];
    int any = 0;
    cs_html_put(w, "<section id=\"memory\"><h2>Memory over time</h2>\n");
    for (uint32_t k = 0; k < p->n_runs; k++)
        any |= cs_html_has_curve(&p->runs[k]);
    if (!any) {
        cs_html_put(w, "<p class=\"note\">No memory curve was recorded for this "
               "page (simulate with COMMSCHED_SIM_MEMORY_CURVE).</p>"
               "</section>\n");
        return;
    }
    if (!(p->mem_max > 0)) {
        /* A curve at 0 B would draw an empty chart that looks broken. */
        cs_html_put(w, "<p class=\"note\" id=\"cs-mem-none\">No memory to draw: the "
               "peak is 0 B because no buffer this step allocates has a "
               "size. Graphs imported from traces that record no sizes look "
               "like this: a Chakra trace's nodes without "
               "<code>tensor_size</code> / <code>comm_size</code> import with "
               "0-byte buffers (docs/WORKLOADS.md, \xE2\x80\x9C"
               "commsched import chakra FILE\xE2\x80\x9D). Give the outputs "
               "sizes (docs/FORMAT.md, \xE2\x80\x9COutputs\xE2\x80\x9D) to "
               "see memory over time.</p></section>\n");
        return;
    }
    double H = CS_HTML_MEM_TOP + CS_HTML_MEM_H + CS_HTML_MEM_BOTTOM;
    cs_html_putf(w,
         "<div class=\"chart\"><svg id=\"cs-mem\" class=\"plot\" "
         "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"memory over "
         "time\">\n",
         CS_HTML_SVG_W, H);
    /* The y axis and the budget do not move with the zoom window. */
    double step = cs_html_nice_bytes_step(p->mem_max);
    for (int i = 0; i < CS_HTML_MAX_TICKS; i++) {
        double v = i * step;
        if (!(v <= p->mem_max * (1 + 1e-9)))
            break;
        cs_html_putf(w,
             "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
             "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
             "text-anchor=\"end\">%s</text>\n",
             CS_HTML_LABEL_W, CS_HTML_LABEL_W + CS_HTML_PLOT_W, mem_y(p, v), mem_y(p, v), CS_HTML_LABEL_W - 6,
             mem_y(p, v) + 4, cs_fmt_bytes(v, a, sizeof a));
    }
    if (o->memory_budget >= 0) {
        double y = mem_y(p, (double)o->memory_budget);
        cs_html_putf(w,
             "<line class=\"budget\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
             "y2=\"%.1f\" data-value=\"%lld\"/><text class=\"budgetlbl\" "
             "x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">budget %s</text>\n",
             CS_HTML_LABEL_W, CS_HTML_LABEL_W + CS_HTML_PLOT_W, y, y, (long long)o->memory_budget,
             CS_HTML_LABEL_W + CS_HTML_PLOT_W, y - 4,
             cs_fmt_bytes((double)o->memory_budget, a, sizeof a));
    }
    cs_html_put(w, "<g class=\"static\">\n");
    double tstep = cs_html_nice_step(p->T, 8);
    for (int i = 0; i < CS_HTML_MAX_TICKS && i * tstep <= p->T * (1 + 1e-9);
         i++)
        cs_html_putf(w,
             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
             cs_html_x(p, i * tstep), CS_HTML_MEM_TOP + CS_HTML_MEM_H + 16,
             cs_html_fmt_tick(i * tstep, tstep, a, sizeof a));
    for (uint32_t k = 0; k < p->n_runs; k++)
        if (cs_html_has_curve(&p->runs[k]))
            memory_path(p, &p->runs[k]);
    cs_html_put(w, "</g><g class=\"dyn\"></g>\n</svg></div>\n<p class=\"legend\">");
    for (uint32_t k = 0; k < p->n_runs; k++) {
        const cs_html_run *r = &p->runs[k];
        if (!cs_html_has_curve(r))
            continue;
        const commsched_sim_totals *t = commsched_sim_get_totals(r->sim);
        cs_html_putf(w, "<i class=\"sw-%s\"></i>", r == p->before ? "mb" : "ma");
        cs_html_esc(w, r->label);
        cs_html_putf(w,
             ": peak <b data-run=\"%s\" data-key=\"peak_simulated\" "
             "data-value=\"%lld\">%s</b> at %s",
             r->key, (long long)t->peak_memory,
             cs_fmt_bytes((double)t->peak_memory, a, sizeof a),
             cs_html_fmt_time(t->peak_memory_at_ns, b, sizeof b));
    }
    if (o->memory_budget >= 0)
        cs_html_putf(w, "<i class=\"sw-bu\"></i>budget %s",
             cs_fmt_bytes((double)o->memory_budget, a, sizeof a));
    cs_html_put(w, "</p>\n<p class=\"note\">Live bytes over simulated time: a "
           "buffer is allocated when its producer starts and freed when its "
           "last reader ends (docs/REPORTS.md, \xE2\x80\x9CWhat the "
           "figures mean\xE2\x80\x9D), so "
           "overlap can keep buffers alive longer than the per-step count "
           "the passes budget. ");
    if (o->memory_budget >= 0) {
        cs_html_put(w, "Budget line: ");
        cs_html_esc(w, o->memory_budget_note ? o->memory_budget_note
                                             : "as given by the caller");
        cs_html_put(w, ".");
    } else {
        cs_html_put(w, "No budget line: ");
        cs_html_esc(w, o->memory_budget_note
                           ? o->memory_budget_note
                           : "no before order to derive it from");
        cs_html_put(w, ".");
    }
    cs_html_put(w, "</p></section>\n");
}
