/* commsched — the HTML report's sections: summary, timeline, the
 * collectives table and measured vs predicted (map: report_html.c). */
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- summary ------------------------------------------------------------ */

typedef enum { F_TIME, F_PCT, F_BYTES } fig_kind;

typedef struct figure {
    const char *key, *label;
    fig_kind kind;
    int lower_is_better; /* 1 lower, -1 higher, 0 neutral */
} figure;

static const figure figures[] = {
    {"makespan_ns", "makespan", F_TIME, 1},
    {"lower_bound_ns", "lower bound", F_TIME, 0},
    {"efficiency", "efficiency (bound / makespan)", F_PCT, -1},
    {"compute_ns", "compute", F_TIME, 0},
    {"comm_ns", "comm", F_TIME, 0},
    {"exposed_ns", "exposed comm", F_TIME, 1},
    {"overlap", "overlap", F_PCT, -1},
    {"peak_simulated", "peak memory (over simulated time)", F_BYTES, 1},
    {"peak_per_step", "peak memory (per step)", F_BYTES, 1},
};

static double figure_value(const commsched_sim_totals *t, size_t i)
{
    switch (i) {
    case 0: return t->makespan_ns;
    case 1: return t->lower_bound_ns;
    case 2: return t->efficiency;
    case 3: return t->compute_ns;
    case 4: return t->comm_ns;
    case 5: return t->exposed_ns;
    case 6: return t->overlap;
    case 7: return (double)t->peak_memory;
    default: return (double)t->peak_memory_step;
    }
}

static const char *fmt_fig(fig_kind k, double v, char *buf, size_t size)
{
    switch (k) {
    case F_TIME: return cs_html_fmt_time(v, buf, size);
    case F_PCT: return cs_html_fmt_pct(v, buf, size);
    default: return cs_fmt_bytes(v, buf, size);
    }
}

/* A signed change ("+22.9 pt", "\u221228.0%", "0.0%") with a minus sign,
 * not a hyphen, which reads better in a number column. */
static void put_change(cs_html_out *w, double value, const char *unit)
{
    char buf[48];
    cs_fmt_change(value, unit, buf, sizeof buf);
    cs_html_put(w, buf[0] == '-' && buf[1] ? "\xE2\x88\x92" : "");
    cs_html_put(w, buf[0] == '-' && buf[1] ? buf + 1 : buf);
}

/* "-28.0%" / "+22.9 pt", classed good or bad when direction matters. */
static void change_cell(cs_html_out *w, const figure *f, double x, double y)
{
    const char *cls = "";
    double d = y - x;
    /* Sums formed in another order differ in the last bits: no change. */
    if (fabs(d) <= 1e-9 * fmax(fabs(x), fabs(y)))
        d = 0;
    if (f->lower_is_better && fabs(d) > 1e-12 * fmax(fabs(x), 1))
        cls = (d < 0) == (f->lower_is_better > 0) ? " good" : " bad";
    cs_html_putf(w, "<td class=\"chg%s\" data-v=\"%.17g\">", cls, d);
    if (f->kind == F_PCT)
        put_change(w, 100.0 * d, " pt");
    else if (x != 0 || d == 0)
        put_change(w, x != 0 ? 100.0 * d / fabs(x) : 0, "%");
    else
        cs_html_put(w, "new");
    cs_html_put(w, "</td>");
}

void cs_html_summary_section(cs_html_page *p)
{
    cs_html_out *w = &p->w;
    const commsched_sim_totals *A = commsched_sim_get_totals(p->after->sim);
    const commsched_sim_totals *B =
        p->before ? commsched_sim_get_totals(p->before->sim) : NULL;
    char a[48], b[48];
    cs_html_put(w, "<section id=\"summary\"><h2>Summary</h2>\n");
    if (B) {
        double dm = A->makespan_ns - B->makespan_ns;
        cs_html_put(w, "<p class=\"headline\">Makespan <b>");
        cs_html_put(w, cs_html_fmt_time(B->makespan_ns, a, sizeof a));
        cs_html_put(w, "</b> \xE2\x86\x92 <b>");
        cs_html_put(w, cs_html_fmt_time(A->makespan_ns, a, sizeof a));
        cs_html_put(w, "</b> (");
        put_change(w, B->makespan_ns > 0 ? 100.0 * dm / B->makespan_ns : 0.0,
                   "%");
        cs_html_put(w, "), exposed comm <b>");
        cs_html_put(w, cs_html_fmt_time(B->exposed_ns, a, sizeof a));
        cs_html_put(w, "</b> \xE2\x86\x92 <b>");
        cs_html_put(w, cs_html_fmt_time(A->exposed_ns, a, sizeof a));
        cs_html_put(w, "</b>, overlap ");
        cs_html_put(w, cs_html_fmt_pct(B->overlap, a, sizeof a));
        cs_html_put(w, " \xE2\x86\x92 ");
        cs_html_put(w, cs_html_fmt_pct(A->overlap, a, sizeof a));
        cs_html_put(w, ", peak memory ");
        cs_html_put(w, cs_fmt_bytes((double)B->peak_memory, a, sizeof a));
        cs_html_put(w, " \xE2\x86\x92 ");
        cs_html_put(w, cs_fmt_bytes((double)A->peak_memory, b, sizeof b));
        cs_html_put(w, ".</p>\n");
    }
    cs_html_put(w, "<table class=\"summary\" id=\"cs-summary\"><thead><tr><th>"
           "simulated</th>");
    if (p->before) {
        cs_html_put(w, "<th>");
        cs_html_esc(w, p->before->label);
        cs_html_put(w, "</th>");
    }
    cs_html_put(w, "<th>");
    cs_html_esc(w, p->after->label);
    cs_html_put(w, "</th>");
    if (B)
        cs_html_put(w, "<th>change</th>");
    cs_html_put(w, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        const figure *f = &figures[i];
        cs_html_putf(w, "<tr data-key=\"%s\"><th>%s</th>", f->key, f->label);
        if (B) {
            double x = figure_value(B, i);
            cs_html_putf(w, "<td data-run=\"before\" data-key=\"%s\" data-value=\"",
                 f->key);
            cs_html_num_exact(w, x);
            cs_html_putf(w, "\">%s</td>", fmt_fig(f->kind, x, a, sizeof a));
        }
        double y = figure_value(A, i);
        cs_html_putf(w, "<td data-run=\"after\" data-key=\"%s\" data-value=\"", f->key);
        cs_html_num_exact(w, y);
        cs_html_putf(w, "\">%s</td>", fmt_fig(f->kind, y, a, sizeof a));
        if (B)
            change_cell(w, f, figure_value(B, i), y);
        cs_html_put(w, "</tr>\n");
    }
    cs_html_put(w, "</tbody></table>\n<p class=\"note\">Makespan is the latest end "
           "over all streams; the lower bound is the largest of the compute "
           "stream's load, the busiest comm stream, the critical path and "
           "the stream bound "
           "(docs/REPORTS.md, \xE2\x80\x9CWhat the figures mean\xE2\x80\x9D); efficiency = bound / makespan; overlap = 1 "
           "\xE2\x88\x92 exposed / comm.");
    if (p->after->sim) {
        cs_html_put(w, " Bound set by the ");
        const char *what = "critical path";
        if (A->lower_bound_ns <= 0)
            what = "empty step";
        else if (A->lower_bound_ns == A->bound_path_ns)
            what = "critical path";
        else if (A->lower_bound_ns == A->bound_compute_ns)
            what = "compute stream";
        else if (A->lower_bound_ns == A->bound_comm_ns)
            what = "busiest comm stream";
        else
            what = "stream bound";
        cs_html_putf(w, "%s (after).", what);
    }
    cs_html_put(w, "</p></section>\n");
}

/* ---- the timeline section ----------------------------------------------- */

commsched_status cs_html_timeline_section(cs_html_page *p, commsched_error *err)
{
    cs_html_out *w = &p->w;
    commsched_status st;
    cs_html_put(w, "<section id=\"timeline\"><h2>Timeline</h2>\n"
           "<div class=\"controls\"><button type=\"button\" "
           "data-act=\"zoom-in\">+</button><button type=\"button\" "
           "data-act=\"zoom-out\">\xE2\x88\x92</button><button "
           "type=\"button\" data-act=\"left\">\xE2\x86\x90</button><button "
           "type=\"button\" data-act=\"right\">\xE2\x86\x92</button><button "
           "type=\"button\" data-act=\"reset\">whole step</button> "
           "<span id=\"cs-window\"></span> \xC2\xB7 drag across the lanes "
           "to zoom, double-click to reset, Ctrl+wheel zooms, Shift+wheel "
           "pans</div>\n");
    cs_html_putf(w,
         "<div class=\"chart\"><svg id=\"cs-tl\" class=\"plot\" viewBox=\"0 0 "
         "%.0f %.0f\" role=\"img\" aria-label=\"per-stream timeline\">\n",
         CS_HTML_SVG_W, p->tl_height);
    cs_html_put(w, "<defs><pattern id=\"cs-hatch\" width=\"6\" height=\"6\" "
           "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
           "<rect width=\"6\" height=\"6\" fill=\"#f5b7b8\"/><rect "
           "width=\"3\" height=\"6\" fill=\"#e15759\"/></pattern></defs>\n");
    cs_html_timeline_frame(p);
    cs_html_put(w, "<g class=\"static\">\n");
    if ((st = cs_html_timeline_static(p, 0, err)) != COMMSCHED_OK)
        return st;
    cs_html_put(w, "</g><g class=\"dyn\"></g>\n<rect class=\"brush\" x=\"0\" y=\"0\" "
           "width=\"0\" ");
    cs_html_putf(w, "height=\"%.0f\" style=\"display:none\"/>\n</svg></div>\n",
         p->tl_height);
    cs_html_put(w, "<p class=\"legend\"><i class=\"sw-c\"></i>compute<i "
           "class=\"sw-ag\"></i>all_gather<i class=\"sw-rs\"></i>"
           "reduce_scatter<i class=\"sw-ar\"></i>all_reduce<i "
           "class=\"sw-co\"></i>other collective<i class=\"sw-w\"></i>wait"
           "<i class=\"sw-st\"></i>exposed: compute stalled (hatched), comm "
           "not hidden (red strip)</p>\n"
           "<p class=\"note\">One compute stream and one lane per comm "
           "stream, all on one time axis. A wait's bar starts when the host "
           "issues it; the hatched part is the stall until its collective "
           "ends. A dashed line before a collective is time queued behind "
           "its stream. Lanes with more than 2000 nodes fold nodes narrower "
           "than 3 px into columns whose height is the busy fraction; zoom "
           "in to see them one by one.</p></section>\n");
    return COMMSCHED_OK;
}

/* ---- collectives table -------------------------------------------------- */

typedef struct pick {
    uint32_t v;
    double exposed;
    uint32_t pos;
} pick;

static int by_exposed_desc(const void *a, const void *b)
{
    const pick *x = a, *y = b;
    if (x->exposed != y->exposed)
        return x->exposed < y->exposed ? 1 : -1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_pos(const void *a, const void *b)
{
    const pick *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void td_time(cs_html_out *w, double ns)
{
    char b[32];
    if (isnan(ns)) {
        cs_html_put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
        return;
    }
    cs_html_putf(w, "<td data-v=\"%.9g\">%s</td>", ns,
         cs_html_fmt_time(ns, b, sizeof b));
}

static void td_int(cs_html_out *w, double v)
{
    if (isnan(v))
        cs_html_put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
    else
        cs_html_putf(w, "<td data-v=\"%.0f\">%.0f</td>", v, v);
}

/* The pass statistics of node v (after graph): moves summed over passes,
 * the last pass's limiting factor in words (report_html_limit.c), every
 * pass with its own text in the cell's title. hidden: v ended up fully
 * hidden (a collective) or never stalled (a wait). */
static void stats_cells(cs_html_page *p, uint32_t v, int hidden)
{
    cs_html_out *w = &p->w;
    const commsched_html_options *o = p->o;
    uint32_t moves = 0, any = 0;
    const commsched_html_pass_row *last = NULL;
    /* Rows are linked newest first: the head is the last pass. */
    for (uint32_t k = v == COMMSCHED_NONE ? COMMSCHED_NONE : p->stat_head[v];
         k != COMMSCHED_NONE; k = p->stat_next[k]) {
        moves += o->pass_rows[k].moves;
        if (!any)
            last = &o->pass_rows[k];
        any = 1;
    }
    if (!any) {
        cs_html_put(w, "<td data-v=\"\">\xE2\x80\x94</td><td class=\"lf\" "
               "data-v=\"\"></td>");
        return;
    }
    cs_html_putf(w, "<td data-v=\"%u\">%u</td><td class=\"lf\" title=\"", moves, moves);
    /* The title lists the passes in the order they ran: walk the list
     * (newest first) from its far end. Lists are a few rows long. */
    uint32_t cnt = 0;
    for (uint32_t k = p->stat_head[v]; k != COMMSCHED_NONE; k = p->stat_next[k])
        cnt++;
    for (uint32_t i = cnt; i-- > 0;) {
        uint32_t k = p->stat_head[v];
        for (uint32_t j = 0; j < i; j++)
            k = p->stat_next[k];
        const commsched_html_pass_row *r = &o->pass_rows[k];
        cs_html_esc(w, r->pass);
        cs_html_putf(w, ": %u move%s, ", r->moves, COMMSCHED_PLURAL(r->moves));
        cs_html_limit_words(w, r->pass, r->limiting_factor, hidden);
        if (r->limiting_factor && strcmp(r->limiting_factor, "None") != 0 &&
            strcmp(r->limiting_factor, "none") != 0) {
            cs_html_put(w, " (the pass says: ");
            cs_html_esc(w, r->limiting_factor);
            cs_html_put(w, ")");
        }
        if (i)
            cs_html_put(w, "&#10;");
    }
    cs_html_put(w, "\">");
    cs_html_limit_words(w, last->pass, last->limiting_factor, hidden);
    cs_html_put(w, "</td>");
}

commsched_status cs_html_collectives_section(cs_html_page *p, commsched_error *err)
{
    cs_html_out *w = &p->w;
    const cs_html_run *A = p->after;
    const commsched_graph *g = A->g;
    const commsched_sim_node *an = commsched_sim_get_nodes(A->sim);
    const commsched_sim_node *bn =
        p->before ? commsched_sim_get_nodes(p->before->sim) : NULL;
    const commsched_graph *bg = p->before ? p->before->g : NULL;
    const commsched_measured_run *m = p->meas ? p->meas->meas : NULL;
    uint32_t max_rows = p->o->max_rows ? p->o->max_rows : CS_HTML_DEFAULT_MAX_ROWS;
    char b[48];
    size_t nc = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        nc += g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
    cs_html_put(w, "<section id=\"collectives\"><h2>Collectives</h2>\n");
    if (nc == 0) {
        cs_html_put(w, "<p class=\"note\">No collectives in this step.</p>"
               "</section>\n");
        return COMMSCHED_OK;
    }
    pick *picks = malloc(nc * sizeof *picks);
    if (!picks)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    size_t k = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE)
            picks[k++] = (pick){v, an[v].exposed_ns, an[v].position};
    size_t shown = nc;
    if (nc > max_rows) {
        qsort(picks, nc, sizeof *picks, by_exposed_desc);
        shown = max_rows;
    }
    qsort(picks, shown, sizeof *picks, by_pos);
    if (shown == 1 && nc > 1)
        cs_html_putf(w,
             "<p class=\"note\">%zu collectives; the most exposed (after) is "
             "listed. <code>commsched simulate --format json</code> lists "
             "them all.</p>\n",
             nc);
    else if (shown < nc)
        cs_html_putf(w,
             "<p class=\"note\">%zu collectives; the %zu most exposed (after) "
             "are listed, in issue order. <code>commsched simulate --format "
             "json</code> lists them all.</p>\n",
             nc, shown);
    cs_html_put(w, "<div class=\"tablewrap\"><table class=\"sortable\" "
           "id=\"cs-collectives\"><thead><tr><th>collective</th>"
           "<th class=\"txt\">op</th><th class=\"txt\">group</th>"
           "<th>bytes</th><th>comm</th>");
    if (bn)
        cs_html_put(w, "<th>exposed before</th>");
    cs_html_put(w, "<th>exposed after</th>");
    if (bn)
        cs_html_put(w, "<th>change</th>");
    cs_html_put(w, "<th>overlapped</th><th>queued</th><th>issue</th><th>wait</th>");
    if (p->has_stats)
        cs_html_put(w, "<th>moves</th><th class=\"txt\">limiting factor</th>"
               "<th>wait moves</th><th class=\"txt\">wait limiting "
               "factor</th>");
    if (m)
        cs_html_put(w, "<th>measured comm</th><th>measured exposed</th>");
    cs_html_put(w, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < shown; i++) {
        uint32_t v = picks[i].v;
        const cs_node *nd = &g->nodes[v];
        const commsched_sim_node *r = &an[v];
        cs_html_put(w, "<tr><td>");
        cs_html_esc(w, nd->name);
        if (nd->is_sync)
            cs_html_put(w, " <span title=\"sync collective: blocks the compute "
                   "stream\">*</span>");
        /* reduce_<wbr>scatter: op names may break after an underscore. */
        cs_html_put(w, "</td><td class=\"txt\">");
        for (const char *op = commsched_coll_op_str((commsched_coll_op)nd->coll_op);
             *op; op++)
            cs_html_put(w, *op == '_' ? "_<wbr>" : (char[2]){*op, 0});
        cs_html_put(w, "</td><td class=\"txt\">");
        cs_html_esc(w, g->groups[nd->group].name);
        double bytes = commsched_cost_collective_bytes(g, v);
        cs_html_putf(w, "</td><td data-v=\"%.0f\">%s</td>", bytes,
             cs_fmt_bytes(bytes, b, sizeof b));
        td_time(w, r->end_ns - r->start_ns);
        double before_exp = NAN;
        if (bn) {
            uint32_t u = bg == g ? v : commsched_graph_find_node(bg, nd->name);
            if (u != COMMSCHED_NONE &&
                bg->nodes[u].kind == COMMSCHED_NODE_COLLECTIVE)
                before_exp = bn[u].exposed_ns;
            td_time(w, before_exp);
        }
        td_time(w, r->exposed_ns);
        if (bn) {
            if (isnan(before_exp)) {
                cs_html_put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
            } else {
                double d = r->exposed_ns - before_exp;
                cs_html_putf(w, "<td class=\"chg%s\" data-v=\"%.9g\">%s%s</td>",
                     d < 0   ? " good"
                     : d > 0 ? " bad"
                             : "",
                     d,
                     d < 0   ? "\xE2\x88\x92"
                     : d > 0 ? "+"
                             : "",
                     cs_html_fmt_time(fabs(d), b, sizeof b));
            }
        }
        td_time(w, nd->is_sync ? NAN : r->overlapped_ns);
        td_time(w, r->start_ns - r->issue_ns);
        td_int(w, (double)r->position);
        td_int(w,
               r->wait == COMMSCHED_NONE ? NAN : (double)an[r->wait].position);
        if (p->has_stats) {
            stats_cells(p, v, !(r->exposed_ns > 1e-9 * fmax(r->end_ns - r->start_ns, 1)));
            stats_cells(p, r->wait,
                        r->wait != COMMSCHED_NONE && !(an[r->wait].exposed_ns > 0));
        }
        if (m) {
            td_time(w, isnan(m->start_ns[v]) ? NAN
                                             : m->end_ns[v] - m->start_ns[v]);
            td_time(w, m->exposed_ns_of[v]);
        }
        cs_html_put(w, "</tr>\n");
    }
    free(picks);
    cs_html_put(w, "</tbody></table></div>\n<p class=\"note\">Click a column to "
           "sort. comm: the collective's runtime; exposed: the compute "
           "stream's stall charged to it (a collective that queued behind "
           "others can show more than its runtime); overlapped: compute "
           "that ran while it was in flight; issue / wait: positions in the "
           "order; * a sync collective.");
    if (p->has_stats)
        cs_html_put(w, " moves and limiting factor: what the reordering passes did "
               "with the collective (summed over passes; the factor is the "
               "last pass's, hover for each), and the sink passes with its "
               "wait: Inductor's ReorderInfo / SinkWaitInfo.");
    cs_html_put(w, "</p></section>\n");
    return COMMSCHED_OK;
}

/* ---- measured vs predicted ---------------------------------------------- */

/* A figure's cell: formatted, with its exact value for tests. */
static void td_fig(cs_html_out *w, fig_kind k, double v)
{
    char a[48];
    if (isnan(v))
        cs_html_put(w, "<td>\xE2\x80\x94</td>");
    else
        cs_html_putf(w, "<td data-value=\"%.17g\">%s</td>", v,
             fmt_fig(k, v, a, sizeof a));
}

/* (meas - pred) / pred, or points for fractions. */
static void td_error(cs_html_out *w, fig_kind k, double pred, double meas)
{
    double d = meas - pred;
    if (isnan(d) || (k != F_PCT && pred == 0)) {
        cs_html_put(w, "<td>\xE2\x80\x94</td>");
        return;
    }
    if (fabs(d) <= 1e-9 * fmax(fabs(meas), fabs(pred)))
        d = 0;
    cs_html_put(w, "<td>");
    put_change(w, k == F_PCT ? 100.0 * d : 100.0 * d / pred,
               k == F_PCT ? " pt" : "%");
    cs_html_put(w, "</td>");
}

/* One figure: simulated here, the run's own prediction (when the run made
 * one), measured, and the errors against each prediction. */
static void measured_row(cs_html_out *w, const char *label, const char *key,
                         fig_kind k, double pred, int has_run_pred,
                         double run_pred, double meas)
{
    cs_html_putf(w, "<tr data-key=\"%s\"><th>%s</th>", key, label);
    td_fig(w, k, pred);
    if (has_run_pred)
        td_fig(w, k, run_pred);
    td_fig(w, k, meas);
    td_error(w, k, pred, meas);
    if (has_run_pred)
        td_error(w, k, run_pred, meas);
    cs_html_put(w, "</tr>\n");
}

void cs_html_measured_section(cs_html_page *p)
{
    cs_html_out *w = &p->w;
    const commsched_measured_run *m = p->meas->meas;
    const commsched_sim_totals *A = commsched_sim_get_totals(p->after->sim);
    int rp = !isnan(m->pred_makespan_ns);
    char a[48];
    cs_html_put(w, "<section id=\"measured\"><h2>Measured vs predicted</h2>\n"
           "<p class=\"meta\">");
    if (m->runtime) {
        cs_html_put(w, "runtime ");
        cs_html_esc(w, m->runtime);
        cs_html_put(w, " \xC2\xB7 ");
    }
    if (m->options_note) {
        cs_html_esc(w, m->options_note);
        cs_html_put(w, " \xC2\xB7 ");
    }
    cs_html_putf(w, "%u of %u node%s timed", m->n_timed, p->after->g->n_nodes,
                 COMMSCHED_PLURAL(p->after->g->n_nodes));
    if (m->timeline_from) {
        cs_html_put(w, " \xC2\xB7 timeline from ");
        cs_html_esc(w, m->timeline_from);
    }
    if (m->graph_name && p->after->g->name &&
        strcmp(m->graph_name, p->after->g->name) != 0) {
        cs_html_put(w, " \xC2\xB7 <b>the run names graph \xE2\x80\x9C");
        cs_html_esc(w, m->graph_name);
        cs_html_put(w, "\xE2\x80\x9D</b>");
    }
    cs_html_put(w, "</p>\n<table class=\"summary\" id=\"cs-measured\"><thead><tr>"
           "<th></th><th>simulated (");
    cs_html_esc(w, p->after->label);
    cs_html_put(w, ")</th>");
    if (rp) {
        cs_html_put(w, "<th>the run's prediction");
        if (m->prediction_source) {
            cs_html_put(w, " (");
            cs_html_esc(w, m->prediction_source);
            cs_html_put(w, ")");
        }
        cs_html_put(w, "</th>");
    }
    cs_html_put(w, "<th>measured</th><th>error</th>");
    if (rp)
        cs_html_put(w, "<th>error vs the run's prediction</th>");
    cs_html_put(w, "</tr></thead><tbody>\n");
    measured_row(w, "makespan", "makespan_ns", F_TIME, A->makespan_ns, rp,
                 m->pred_makespan_ns, m->makespan_ns);
    measured_row(w, "compute", "compute_ns", F_TIME, A->compute_ns, rp,
                 m->pred_compute_ns, m->compute_ns);
    measured_row(w, "comm", "comm_ns", F_TIME, A->comm_ns, rp,
                 m->pred_comm_ns, m->comm_ns);
    measured_row(w, "exposed comm", "exposed_ns", F_TIME, A->exposed_ns, rp,
                 m->pred_exposed_ns, m->exposed_ns);
    measured_row(w, "overlap", "overlap", F_PCT, A->overlap, rp,
                 m->pred_overlap, m->overlap);
    measured_row(w, "peak memory", "peak_memory", F_BYTES,
                 (double)A->peak_memory, rp, NAN,
                 m->peak_memory < 0 ? NAN : (double)m->peak_memory);
    cs_html_put(w, "</tbody></table>\n");
    if (m->n_ranks) {
        double lo = INFINITY, hi = -INFINITY;
        for (uint32_t i = 0; i < m->n_ranks; i++)
            if (!isnan(m->ranks[i].makespan_ns)) {
                lo = fmin(lo, m->ranks[i].makespan_ns);
                hi = fmax(hi, m->ranks[i].makespan_ns);
            }
        int timed = 0; /* ranks with nodes of their own */
        for (uint32_t i = 0; i < m->n_ranks; i++)
            timed |= m->ranks[i].n_timed > 0;
        cs_html_put(w, "<h3>Per rank</h3>\n");
        if (hi >= lo) {
            char b[48];
            cs_html_putf(w,
                 "<p class=\"note\">Makespan from %s to %s across %u rank%s "
                 "(the slowest rank sets the step).</p>\n",
                 cs_html_fmt_time(lo, a, sizeof a),
                 cs_html_fmt_time(hi, b, sizeof b), m->n_ranks,
                 COMMSCHED_PLURAL(m->n_ranks));
        }
        cs_html_put(w, "<div class=\"tablewrap\"><table class=\"sortable\" "
               "id=\"cs-ranks\"><thead><tr><th>rank</th><th>makespan</th>"
               "<th>compute</th><th>comm</th><th>exposed</th><th>peak "
               "memory</th>");
        cs_html_put(w, timed ? "<th>nodes timed</th>" : "");
        cs_html_put(w, "</tr></thead><tbody>\n");
        for (uint32_t i = 0; i < m->n_ranks; i++) {
            const commsched_measured_run_rank *r = &m->ranks[i];
            cs_html_putf(w, "<tr><td data-v=\"%lld\">%lld</td>", (long long)r->rank,
                 (long long)r->rank);
            td_time(w, r->makespan_ns);
            td_time(w, r->compute_ns);
            td_time(w, r->comm_ns);
            td_time(w, r->exposed_ns);
            if (r->peak_memory < 0)
                cs_html_put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
            else
                cs_html_putf(w, "<td data-v=\"%lld\">%s</td>",
                     (long long)r->peak_memory,
                     cs_fmt_bytes((double)r->peak_memory, a, sizeof a));
            if (timed)
                td_int(w, (double)r->n_timed);
            cs_html_put(w, "</tr>\n");
        }
        cs_html_put(w, "</tbody></table></div>\n");
    }
    cs_html_put(w, "<p class=\"note\">Simulated: this page's simulation of the "
           "schedule (the cost model's runtimes). The run's prediction, when "
           "it made one, simulates the same schedule with the runtimes it "
           "calibrated and the scales it ran with, so it is the fair "
           "yardstick for a scaled run. Measured: the run report "
           "(docs/REPORTS.md, \xE2\x80\x9CMeasured runs\xE2\x80\x9D); its "
           "nodes are drawn as the last block of the timeline. Error = "
           "(measured \xE2\x88\x92 predicted) / predicted.</p></section>\n");
}
