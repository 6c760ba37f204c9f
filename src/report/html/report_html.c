/* commsched — the HTML overlap report and its SVG timeline (DESIGN.md §7,
 * docs/REPORTS.md "HTML report").
 *
 * One self-contained page: inline CSS, inline SVG, a JSON data block and a
 * little JavaScript (src/report_html.css / .js, embedded at build time by
 * src/report_html_embed.cmake). Nothing refers outside the file, so it
 * opens from disk anywhere, and the writer guarantees it: every piece of
 * user text is escaped so that no "//" can appear (a '/' becomes &#47; in
 * HTML and \/ in JSON), and invalid UTF-8 becomes U+FFFD.
 *
 * Runs. A page draws up to three runs of one step on one time axis:
 * "before" and "after" (simulations, possibly of two graphs, matched by
 * node name) and "measured" (commsched_measured, drawn with the after
 * graph's lanes). Each run has a compute lane and a lane per comm stream
 * that carries a collective.
 *
 * Scale. The first view is drawn here, in C, at a fixed plot width of
 * PLOT_W units: a lane with at most BAR_LIMIT nodes draws every node as a
 * bar (so the small example shows one bar per scheduled node, which the
 * browser test counts); a busier lane draws nodes at least MIN_BAR_PX wide
 * as bars and folds the rest into one-unit columns (busy fraction as
 * height, exposed time as a red strip, node counts for the tooltip),
 * merged while the level repeats. So a 36k-node step draws a few hundred
 * elements, not tens of thousands. The zoomed views are drawn by the
 * script from the JSON data block with the same rule; the block holds
 * every node of a run up to max_bars (default 50000) and otherwise the
 * longest max_bars plus DATA_BINS bins per lane for the rest, so file size
 * stays bounded for a million nodes.
 *
 * Streaming. Every section is written as it is computed; the writer holds
 * O(V) small arrays (node selection, per-node pass-statistics links) and
 * O(lanes x columns) bins, never the page.
 *
 * The same first view, without the script, is commsched_report_svg.
 *
 * Files: this one writes the page's sections, the data block and the entry
 * points; report_html_draw.c the runs, timeline and memory SVG;
 * report_html_out.c escaping and formats; report_html_measured.c reads
 * measured runs. */
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_html_res.h"

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

/* "-28.0%" / "+22.9 pt", classed good or bad when direction matters. */
static void change_cell(hw *w, const figure *f, double x, double y)
{
    char buf[48];
    const char *cls = "";
    double d = y - x;
    /* Sums formed in another order differ in the last bits: no change. */
    if (fabs(d) <= 1e-9 * fmax(fabs(x), fabs(y)))
        d = 0;
    if (d == 0) {
        snprintf(buf, sizeof buf, f->kind == F_PCT ? "0.0 pt" : "0.0%%");
    } else if (f->kind == F_PCT) {
        snprintf(buf, sizeof buf, "%+.1f pt", 100.0 * d);
    } else if (x != 0) {
        snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * d / fabs(x));
    } else {
        snprintf(buf, sizeof buf, d == 0 ? "0.0%%" : "new");
    }
    if (f->lower_is_better && fabs(d) > 1e-12 * fmax(fabs(x), 1))
        cls = (d < 0) == (f->lower_is_better > 0) ? " good" : " bad";
    /* A minus sign, not a hyphen, reads better in a number column. */
    putf(w, "<td class=\"chg%s\" data-v=\"%.17g\">", cls, d);
    if (buf[0] == '-') {
        put(w, "\xE2\x88\x92");
        put(w, buf + 1);
    } else {
        put(w, buf);
    }
    put(w, "</td>");
}

static void summary_section(page *p)
{
    hw *w = &p->w;
    const commsched_sim_totals *A = commsched_sim_get_totals(p->after->sim);
    const commsched_sim_totals *B =
        p->before ? commsched_sim_get_totals(p->before->sim) : NULL;
    char a[48], b[48];
    put(w, "<section id=\"summary\"><h2>Summary</h2>\n");
    if (B) {
        double dm = A->makespan_ns - B->makespan_ns;
        put(w, "<p class=\"headline\">Makespan <b>");
        put(w, cs_html_fmt_time(B->makespan_ns, a, sizeof a));
        put(w, "</b> \xE2\x86\x92 <b>");
        put(w, cs_html_fmt_time(A->makespan_ns, a, sizeof a));
        putf(w, "</b> (%s%.1f%%), exposed comm <b>",
             dm <= 0 ? "\xE2\x88\x92" : "+",
             B->makespan_ns > 0 ? 100.0 * fabs(dm) / B->makespan_ns : 0.0);
        put(w, cs_html_fmt_time(B->exposed_ns, a, sizeof a));
        put(w, "</b> \xE2\x86\x92 <b>");
        put(w, cs_html_fmt_time(A->exposed_ns, a, sizeof a));
        put(w, "</b>, overlap ");
        put(w, cs_html_fmt_pct(B->overlap, a, sizeof a));
        put(w, " \xE2\x86\x92 ");
        put(w, cs_html_fmt_pct(A->overlap, a, sizeof a));
        put(w, ", peak memory ");
        put(w, cs_fmt_bytes((double)B->peak_memory, a, sizeof a));
        put(w, " \xE2\x86\x92 ");
        put(w, cs_fmt_bytes((double)A->peak_memory, b, sizeof b));
        put(w, ".</p>\n");
    }
    put(w, "<table class=\"summary\" id=\"cs-summary\"><thead><tr><th>"
           "simulated</th>");
    if (p->before) {
        put(w, "<th>");
        cs_html_esc(w, p->before->label);
        put(w, "</th>");
    }
    put(w, "<th>");
    cs_html_esc(w, p->after->label);
    put(w, "</th>");
    if (B)
        put(w, "<th>change</th>");
    put(w, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        const figure *f = &figures[i];
        putf(w, "<tr data-key=\"%s\"><th>%s</th>", f->key, f->label);
        if (B) {
            double x = figure_value(B, i);
            putf(w, "<td data-run=\"before\" data-key=\"%s\" data-value=\"",
                 f->key);
            cs_html_num_exact(w, x);
            putf(w, "\">%s</td>", fmt_fig(f->kind, x, a, sizeof a));
        }
        double y = figure_value(A, i);
        putf(w, "<td data-run=\"after\" data-key=\"%s\" data-value=\"", f->key);
        cs_html_num_exact(w, y);
        putf(w, "\">%s</td>", fmt_fig(f->kind, y, a, sizeof a));
        if (B)
            change_cell(w, f, figure_value(B, i), y);
        put(w, "</tr>\n");
    }
    put(w, "</tbody></table>\n<p class=\"note\">Makespan is the latest end "
           "over all streams; the lower bound is the largest of the compute "
           "stream's load, the busiest comm stream and the critical path "
           "(docs/REPORTS.md); efficiency = bound / makespan; overlap = 1 "
           "\xE2\x88\x92 exposed / comm.");
    if (p->after->sim) {
        put(w, " Bound set by the ");
        const char *what = "critical path";
        if (A->lower_bound_ns <= 0)
            what = "empty step";
        else if (A->lower_bound_ns == A->bound_path_ns)
            what = "critical path";
        else if (A->lower_bound_ns == A->bound_compute_ns)
            what = "compute stream";
        else
            what = "busiest comm stream";
        putf(w, "%s (after).", what);
    }
    put(w, "</p></section>\n");
}

/* ---- the timeline section ----------------------------------------------- */

static commsched_status timeline_section(page *p, commsched_error *err)
{
    hw *w = &p->w;
    commsched_status st;
    put(w, "<section id=\"timeline\"><h2>Timeline</h2>\n"
           "<div class=\"controls\"><button type=\"button\" "
           "data-act=\"zoom-in\">+</button><button type=\"button\" "
           "data-act=\"zoom-out\">\xE2\x88\x92</button><button "
           "type=\"button\" data-act=\"left\">\xE2\x86\x90</button><button "
           "type=\"button\" data-act=\"right\">\xE2\x86\x92</button><button "
           "type=\"button\" data-act=\"reset\">whole step</button> "
           "<span id=\"cs-window\"></span> \xC2\xB7 drag across the lanes "
           "to zoom, double-click to reset, Ctrl+wheel zooms, Shift+wheel "
           "pans</div>\n");
    putf(w,
         "<div class=\"chart\"><svg id=\"cs-tl\" class=\"plot\" viewBox=\"0 0 "
         "%.0f %.0f\" role=\"img\" aria-label=\"per-stream timeline\">\n",
         SVG_W, p->tl_height);
    put(w, "<defs><pattern id=\"cs-hatch\" width=\"6\" height=\"6\" "
           "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
           "<rect width=\"6\" height=\"6\" fill=\"#f5b7b8\"/><rect "
           "width=\"3\" height=\"6\" fill=\"#e15759\"/></pattern></defs>\n");
    cs_html_timeline_frame(p);
    put(w, "<g class=\"static\">\n");
    if ((st = cs_html_timeline_static(p, 0, err)) != COMMSCHED_OK)
        return st;
    put(w, "</g><g class=\"dyn\"></g>\n<rect class=\"brush\" x=\"0\" y=\"0\" "
           "width=\"0\" ");
    putf(w, "height=\"%.0f\" style=\"display:none\"/>\n</svg></div>\n",
         p->tl_height);
    put(w, "<p class=\"legend\"><i class=\"sw-c\"></i>compute<i "
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

static void td_time(hw *w, double ns)
{
    char b[32];
    if (isnan(ns)) {
        put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
        return;
    }
    putf(w, "<td data-v=\"%.9g\">%s</td>", ns,
         cs_html_fmt_time(ns, b, sizeof b));
}

static void td_int(hw *w, double v)
{
    if (isnan(v))
        put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
    else
        putf(w, "<td data-v=\"%.0f\">%.0f</td>", v, v);
}

/* The pass statistics of node v (after graph): moves summed over passes,
 * the last pass's limiting factor, every pass in the cell's title. */
static void stats_cells(page *p, uint32_t v)
{
    hw *w = &p->w;
    const commsched_html_options *o = p->o;
    uint32_t moves = 0, any = 0;
    const char *lf = NULL;
    /* Rows are linked newest first: the head is the last pass. */
    for (uint32_t k = v == COMMSCHED_NONE ? COMMSCHED_NONE : p->stat_head[v];
         k != COMMSCHED_NONE; k = p->stat_next[k]) {
        moves += o->pass_rows[k].moves;
        if (!any)
            lf = o->pass_rows[k].limiting_factor
                     ? o->pass_rows[k].limiting_factor
                     : "None";
        any = 1;
    }
    if (!any) {
        put(w, "<td data-v=\"\">\xE2\x80\x94</td><td class=\"lf\" "
               "data-v=\"\"></td>");
        return;
    }
    putf(w, "<td data-v=\"%u\">%u</td><td class=\"lf\" title=\"", moves, moves);
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
        putf(w, ": %u moves, ", r->moves);
        cs_html_esc(w, r->limiting_factor ? r->limiting_factor : "None");
        if (i)
            put(w, "&#10;");
    }
    put(w, "\">");
    cs_html_esc_first_line(w, lf);
    put(w, "</td>");
}

static commsched_status collectives_section(page *p, commsched_error *err)
{
    hw *w = &p->w;
    const run *A = p->after;
    const commsched_graph *g = A->g;
    const commsched_sim_node *an = commsched_sim_get_nodes(A->sim);
    const commsched_sim_node *bn =
        p->before ? commsched_sim_get_nodes(p->before->sim) : NULL;
    const commsched_graph *bg = p->before ? p->before->g : NULL;
    const commsched_measured *m = p->meas ? p->meas->meas : NULL;
    uint32_t max_rows = p->o->max_rows ? p->o->max_rows : DEFAULT_MAX_ROWS;
    char b[48];
    size_t nc = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        nc += g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
    put(w, "<section id=\"collectives\"><h2>Collectives</h2>\n");
    if (nc == 0) {
        put(w, "<p class=\"note\">No collectives in this step.</p>"
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
    if (shown < nc)
        putf(w,
             "<p class=\"note\">%zu collectives; the %zu most exposed (after) "
             "are listed, in issue order. <code>commsched simulate --format "
             "json</code> lists them all.</p>\n",
             nc, shown);
    put(w, "<div class=\"tablewrap\"><table class=\"sortable\" "
           "id=\"cs-collectives\"><thead><tr><th>collective</th>"
           "<th class=\"txt\">op</th><th class=\"txt\">group</th>"
           "<th>bytes</th><th>comm</th>");
    if (bn)
        put(w, "<th>exposed before</th>");
    put(w, "<th>exposed after</th>");
    if (bn)
        put(w, "<th>change</th>");
    put(w, "<th>overlapped</th><th>queued</th><th>issue</th><th>wait</th>");
    if (p->has_stats)
        put(w, "<th>moves</th><th class=\"txt\">limiting factor</th>"
               "<th>wait moves</th><th class=\"txt\">wait limiting "
               "factor</th>");
    if (m)
        put(w, "<th>measured comm</th><th>measured exposed</th>");
    put(w, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < shown; i++) {
        uint32_t v = picks[i].v;
        const cs_node *nd = &g->nodes[v];
        const commsched_sim_node *r = &an[v];
        put(w, "<tr><td>");
        cs_html_esc(w, nd->name);
        if (nd->is_sync)
            put(w, " <span title=\"sync collective: blocks the compute "
                   "stream\">*</span>");
        putf(w, "</td><td class=\"txt\">%s</td><td class=\"txt\">",
             commsched_coll_op_str((commsched_coll_op)nd->coll_op));
        cs_html_esc(w, g->groups[nd->group].name);
        double bytes = commsched_cost_collective_bytes(g, v);
        putf(w, "</td><td data-v=\"%.0f\">%s</td>", bytes,
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
                put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
            } else {
                double d = r->exposed_ns - before_exp;
                putf(w, "<td class=\"chg%s\" data-v=\"%.9g\">%s%s</td>",
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
            stats_cells(p, v);
            stats_cells(p, r->wait);
        }
        if (m) {
            td_time(w, isnan(m->start_ns[v]) ? NAN
                                             : m->end_ns[v] - m->start_ns[v]);
            td_time(w, m->exposed_ns_of[v]);
        }
        put(w, "</tr>\n");
    }
    free(picks);
    put(w, "</tbody></table></div>\n<p class=\"note\">Click a column to "
           "sort. comm: the collective's runtime; exposed: the compute "
           "stream's stall charged to it (a collective that queued behind "
           "others can show more than its runtime); overlapped: compute "
           "that ran while it was in flight; issue / wait: positions in the "
           "order; * a sync collective.");
    if (p->has_stats)
        put(w, " moves and limiting factor: what the reordering passes did "
               "with the collective (summed over passes; the factor is the "
               "last pass's, hover for each), and the sink passes with its "
               "wait: Inductor's ReorderInfo / SinkWaitInfo.");
    put(w, "</p></section>\n");
    return COMMSCHED_OK;
}

/* ---- measured vs predicted ---------------------------------------------- */

/* A figure's cell: formatted, with its exact value for tests. */
static void td_fig(hw *w, fig_kind k, double v)
{
    char a[48];
    if (isnan(v))
        put(w, "<td>\xE2\x80\x94</td>");
    else
        putf(w, "<td data-value=\"%.17g\">%s</td>", v,
             fmt_fig(k, v, a, sizeof a));
}

/* (meas - pred) / pred, or points for fractions. */
static void td_error(hw *w, fig_kind k, double pred, double meas)
{
    double d = meas - pred;
    if (isnan(d) || (k != F_PCT && pred == 0)) {
        put(w, "<td>\xE2\x80\x94</td>");
        return;
    }
    char buf[48];
    if (fabs(d) <= 1e-9 * fmax(fabs(meas), fabs(pred)))
        d = 0;
    if (k == F_PCT)
        snprintf(buf, sizeof buf, "%+.1f pt", 100.0 * d);
    else
        snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * d / pred);
    put(w, "<td>");
    put(w, buf[0] == '-' ? "\xE2\x88\x92" : "");
    put(w, buf[0] == '-' ? buf + 1 : buf);
    put(w, "</td>");
}

/* One figure: simulated here, the run's own prediction (when the run made
 * one), measured, and the errors against each prediction. */
static void measured_row(hw *w, const char *label, const char *key,
                         fig_kind k, double pred, int has_run_pred,
                         double run_pred, double meas)
{
    putf(w, "<tr data-key=\"%s\"><th>%s</th>", key, label);
    td_fig(w, k, pred);
    if (has_run_pred)
        td_fig(w, k, run_pred);
    td_fig(w, k, meas);
    td_error(w, k, pred, meas);
    if (has_run_pred)
        td_error(w, k, run_pred, meas);
    put(w, "</tr>\n");
}

static void measured_section(page *p)
{
    hw *w = &p->w;
    const commsched_measured *m = p->meas->meas;
    const commsched_sim_totals *A = commsched_sim_get_totals(p->after->sim);
    int rp = !isnan(m->pred_makespan_ns);
    char a[48];
    put(w, "<section id=\"measured\"><h2>Measured vs predicted</h2>\n"
           "<p class=\"meta\">");
    if (m->runtime) {
        put(w, "runtime ");
        cs_html_esc(w, m->runtime);
        put(w, " \xC2\xB7 ");
    }
    if (m->options_note) {
        cs_html_esc(w, m->options_note);
        put(w, " \xC2\xB7 ");
    }
    putf(w, "%u of %u nodes timed", m->n_timed, p->after->g->n_nodes);
    if (m->timeline_from) {
        put(w, " \xC2\xB7 timeline from ");
        cs_html_esc(w, m->timeline_from);
    }
    if (m->graph_name && p->after->g->name &&
        strcmp(m->graph_name, p->after->g->name) != 0) {
        put(w, " \xC2\xB7 <b>the run names graph \xE2\x80\x9C");
        cs_html_esc(w, m->graph_name);
        put(w, "\xE2\x80\x9D</b>");
    }
    put(w, "</p>\n<table class=\"summary\" id=\"cs-measured\"><thead><tr>"
           "<th></th><th>simulated (");
    cs_html_esc(w, p->after->label);
    put(w, ")</th>");
    if (rp) {
        put(w, "<th>the run's prediction");
        if (m->prediction_source) {
            put(w, " (");
            cs_html_esc(w, m->prediction_source);
            put(w, ")");
        }
        put(w, "</th>");
    }
    put(w, "<th>measured</th><th>error</th>");
    if (rp)
        put(w, "<th>error vs the run's prediction</th>");
    put(w, "</tr></thead><tbody>\n");
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
    put(w, "</tbody></table>\n");
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
        put(w, "<h3>Per rank</h3>\n");
        if (hi >= lo) {
            char b[48];
            putf(w,
                 "<p class=\"note\">Makespan from %s to %s across %u ranks "
                 "(the slowest rank sets the step).</p>\n",
                 cs_html_fmt_time(lo, a, sizeof a),
                 cs_html_fmt_time(hi, b, sizeof b), m->n_ranks);
        }
        put(w, "<div class=\"tablewrap\"><table class=\"sortable\" "
               "id=\"cs-ranks\"><thead><tr><th>rank</th><th>makespan</th>"
               "<th>compute</th><th>comm</th><th>exposed</th><th>peak "
               "memory</th>");
        put(w, timed ? "<th>nodes timed</th>" : "");
        put(w, "</tr></thead><tbody>\n");
        for (uint32_t i = 0; i < m->n_ranks; i++) {
            const commsched_measured_rank *r = &m->ranks[i];
            putf(w, "<tr><td data-v=\"%lld\">%lld</td>", (long long)r->rank,
                 (long long)r->rank);
            td_time(w, r->makespan_ns);
            td_time(w, r->compute_ns);
            td_time(w, r->comm_ns);
            td_time(w, r->exposed_ns);
            if (r->peak_memory < 0)
                put(w, "<td data-v=\"\">\xE2\x80\x94</td>");
            else
                putf(w, "<td data-v=\"%lld\">%s</td>",
                     (long long)r->peak_memory,
                     cs_fmt_bytes((double)r->peak_memory, a, sizeof a));
            if (timed)
                td_int(w, (double)r->n_timed);
            put(w, "</tr>\n");
        }
        put(w, "</tbody></table></div>\n");
    }
    put(w, "<p class=\"note\">Simulated: this page's simulation of the "
           "schedule (the cost model's runtimes). The run's prediction, when "
           "it made one, simulates the same schedule with the runtimes it "
           "calibrated and the scales it ran with, so it is the fair "
           "yardstick for a scaled run. Measured: the run report "
           "(docs/REPORTS.md, \xE2\x80\x9CMeasured runs\xE2\x80\x9D); its "
           "nodes are drawn as the last block of the timeline. Error = "
           "(measured \xE2\x88\x92 predicted) / predicted.</p></section>\n");
}

/* ---- the data block ----------------------------------------------------- */

static int by_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Nodes of graph gi sent to the script: all, or the max_bars longest (by
 * the widest span any run gives them). */
static commsched_status choose_nodes(page *p, uint32_t gi, commsched_error *err)
{
    const commsched_graph *g = p->graphs[gi];
    uint32_t max = p->o->max_bars ? p->o->max_bars : DEFAULT_MAX_BARS;
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
            const run *r = &p->runs[k];
            span s;
            if (r->gid != (int)gi || !cs_html_table_span(r, v, &s))
                continue;
            if (s.stream < r->n_streams && r->lane_of[s.stream] >= 0 &&
                r->lane_nodes[r->lane_of[s.stream]] <= BAR_LIMIT)
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

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t sel_node(const page *p, uint32_t gi, uint32_t j)
{
    return p->sel[gi] ? p->sel[gi][j] : j;
}

/* A graph's table: names, kinds, ops, bytes of the nodes sent. */
static void data_graph(page *p, uint32_t gi)
{
    hw *w = &p->w;
    const commsched_graph *g = p->graphs[gi];
    uint32_t n = p->n_sel[gi];
    putf(w, "{\"n\":%u,\"sel\":", g->n_nodes);
    if (p->sel[gi]) {
        put(w, "[");
        for (uint32_t j = 0; j < n; j++)
            putf(w, j ? ",%u" : "%u", p->sel[gi][j]);
        put(w, "]");
    } else {
        put(w, "null");
    }
    put(w, ",\n\"name\":[");
    for (uint32_t j = 0; j < n; j++) {
        if (j)
            put(w, j % 64 ? "," : ",\n");
        cs_html_jstr(w, g->nodes[sel_node(p, gi, j)].name);
    }
    put(w, "],\n\"kind\":\"");
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
    put(w, "\",\n\"op\":[");
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
        putf(w, j ? ",%ld" : "%ld", idx);
    }
    put(w, "],\n\"ops\":[");
    for (uint32_t k = 0; k < n_ops; k++) {
        if (k)
            put(w, ",");
        cs_html_jstr(w, ops[k]);
    }
    put(w, "],\"opc\":[");
    for (uint32_t k = 0; k < n_ops; k++) {
        const char *c = strcmp(ops[k], "all_gather") == 0       ? "ag"
                        : strcmp(ops[k], "reduce_scatter") == 0 ? "rs"
                        : strcmp(ops[k], "all_reduce") == 0     ? "ar"
                                                                : "co";
        putf(w, k ? ",\"%s\"" : "\"%s\"", c);
    }
    put(w, "],\n\"bytes\":[");
    for (uint32_t j = 0; j < n; j++) {
        uint32_t v = sel_node(p, gi, j);
        const cs_node *nd = &g->nodes[v];
        double bytes = nd->kind == COMMSCHED_NODE_COLLECTIVE
                           ? commsched_cost_collective_bytes(g, v)
                       : nd->bytes > 0 ? nd->bytes
                                       : 0;
        if (j)
            put(w, ",");
        cs_html_num_int(w, bytes);
    }
    put(w, "]}");
}

/* A run's times: per node sent, its lane, start, duration (shorter than
 * an end time), start - issue (mostly 0) and exposed time (mostly 0). */
static commsched_status data_run(page *p, run *r, commsched_error *err)
{
    hw *w = &p->w;
    uint32_t gi = (uint32_t)r->gid, n = p->n_sel[gi];
    put(w, "{\"key\":");
    cs_html_jstr(w, r->key);
    put(w, ",\"label\":");
    cs_html_jstr(w, r->label);
    putf(w, ",\"g\":%u,\"end\":", gi);
    cs_html_num_int(w, r->end);
    put(w, ",\"lanes\":[");
    for (uint32_t l = 0; l < r->n_lanes; l++) {
        putf(w, "%s{\"name\":", l ? "," : "");
        cs_html_jstr(w, cs_html_lane_name(r, l));
        putf(w, ",\"y\":%.1f}", cs_html_lane_y(r, l));
    }
    put(w, "]");
    static const char *const keys[] = {"lane", "s", "d", "q", "x"};
    for (int f = 0; f < 5; f++) {
        putf(w, ",\n\"%s\":[", keys[f]);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t v = sel_node(p, gi, j);
            span s;
            int ok = cs_html_table_span(r, v, &s);
            if (j)
                put(w, j % 128 ? "," : ",\n");
            if (f == 0) {
                int lane =
                    ok && s.stream < r->n_streams ? r->lane_of[s.stream] : -1;
                putf(w, "%d", lane);
            } else if (!ok) {
                put(w, "0");
            } else {
                cs_html_num_int(w, f == 1   ? s.start
                                   : f == 2 ? s.end - s.start
                                   : f == 3 ? s.start - s.issue
                                            : s.exposed);
            }
        }
        put(w, "]");
    }
    /* Per-lane bins for the nodes left out. */
    if (!p->complete[gi]) {
        uint32_t B = DATA_BINS;
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
            span s;
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
        putf(w, ",\n\"bins\":{\"B\":%u,\"busy\":[", B);
        for (uint32_t l = 0; l < r->n_lanes; l++) {
            put(w, l ? "],\n[" : "[");
            for (uint32_t i = 0; i < B; i++)
                putf(w, i ? ",%.0f" : "%.0f",
                     fmin(1000, 1000 * busy[l * B + i]));
        }
        put(w, "]],\"cnt\":[");
        for (uint32_t l = 0; l < r->n_lanes; l++) {
            put(w, l ? "],\n[" : "[");
            for (uint32_t i = 0; i < B; i++)
                putf(w, i ? ",%u" : "%u", cnt[l * B + i]);
        }
        put(w, "]]}");
        free(busy);
        free(cnt);
    } else {
        put(w, ",\"bins\":null");
    }
    /* The memory curve, whole or as min/max/last per bucket. */
    size_t nm = 0;
    const commsched_sim_memory_point *c =
        r->sim ? commsched_sim_get_memory_curve(r->sim, &nm) : NULL;
    if (!c) {
        put(w, ",\"mem\":null}");
        return COMMSCHED_OK;
    }
    const commsched_sim_totals *t = commsched_sim_get_totals(r->sim);
    put(w, ",\n\"peak\":");
    cs_html_num_int(w, (double)t->peak_memory);
    put(w, ",\"peakAt\":");
    cs_html_num_int(w, t->peak_memory_at_ns);
    put(w, ",\"mem\":{\"t\":[");
    /* Two passes over the curve (times, then bytes) with the same
     * selection, so nothing is buffered. */
    for (int f = 0; f < 2; f++) {
        if (f)
            put(w, "],\n\"b\":[");
        uint32_t out = 0;
        if (nm <= MEM_RAW_POINTS) {
            for (size_t i = 0; i < nm; i++, out++) {
                if (out)
                    put(w, out % 128 ? "," : ",\n");
                cs_html_num_int(w, f ? (double)c[i].bytes : c[i].time_ns);
            }
            continue;
        }
        double bw = p->T / MEM_BUCKETS;
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
                    put(w, out % 128 ? "," : ",\n");
                out++;
                cs_html_num_int(w, f ? (double)c[keep[q]].bytes
                                     : c[keep[q]].time_ns);
            }
            i = j;
        }
    }
    put(w, "]}}");
    return COMMSCHED_OK;
}

static commsched_status data_block(page *p, commsched_error *err)
{
    hw *w = &p->w;
    commsched_status st;
    put(w, "<script type=\"application/json\" id=\"cs-data\">\n");
    putf(w,
         "{\"v\":1,\"T\":%.17g,\"W\":%.0f,\"L\":%.0f,\"laneH\":%.0f,"
         "\"axisY\":%.0f,\"axisBottom\":%.1f,",
         p->T, PLOT_W, LABEL_W, LANE_H, AXIS_H, p->tl_height - 4);
    if (p->mem_max > 0) {
        putf(w, "\"mem\":{\"y0\":%.0f,\"h\":%.0f,\"max\":%.17g,\"budget\":",
             MEM_TOP, MEM_H, p->mem_max);
        if (p->o->memory_budget >= 0)
            putf(w, "%lld}", (long long)p->o->memory_budget);
        else
            put(w, "null}");
    } else {
        put(w, "\"mem\":null");
    }
    put(w, ",\n\"graphs\":[");
    for (uint32_t gi = 0; gi < p->n_graphs; gi++) {
        if (gi)
            put(w, ",\n");
        data_graph(p, gi);
    }
    put(w, "],\n\"runs\":[");
    for (uint32_t k = 0; k < p->n_runs; k++) {
        if (k)
            put(w, ",\n");
        if ((st = data_run(p, &p->runs[k], err)) != COMMSCHED_OK)
            return st;
    }
    put(w, "]}\n</script>\n");
    return COMMSCHED_OK;
}

/* ---- assembling the page ------------------------------------------------ */

void commsched_html_options_init(commsched_html_options *o)
{
    memset(o, 0, sizeof *o);
    o->memory_budget = -1;
}

static void page_fini(page *p)
{
    for (uint32_t k = 0; k < p->n_runs; k++)
        cs_html_run_fini(&p->runs[k]);
    free(p->sel[0]);
    free(p->sel[1]);
    free(p->stat_head);
    free(p->stat_next);
}

/* When run r's graph has the same nodes as the table graph t (an
 * optimized file and its input do, in another order), maps them by name
 * so both runs share one table in the data block and node ids mean the
 * same node in both. Returns 1 when mapped, 0 when the graphs differ, -1
 * on OOM. */
static int map_nodes(run *r, const commsched_graph *t)
{
    const commsched_graph *a = r->g;
    if (a->n_nodes != t->n_nodes)
        return 0;
    size_t n = a->n_nodes ? a->n_nodes : 1;
    r->from_table = malloc(n * sizeof *r->from_table);
    r->to_table = malloc(n * sizeof *r->to_table);
    if (!r->from_table || !r->to_table)
        return -1;
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        uint32_t u = commsched_graph_find_node(a, t->nodes[v].name);
        if (u == COMMSCHED_NONE || a->nodes[u].kind != t->nodes[v].kind) {
            free(r->from_table);
            free(r->to_table);
            r->from_table = r->to_table = NULL;
            return 0;
        }
        r->from_table[v] = u;
        r->to_table[u] = v;
    }
    return 1;
}

static commsched_status add_run(page *p, const char *key, const char *label,
                                const commsched_sim *sim,
                                const commsched_measured *m,
                                const commsched_sim *lanes_from, run **out,
                                commsched_error *err)
{
    run *r = &p->runs[p->n_runs++];
    memset(r, 0, sizeof *r);
    r->key = key;
    snprintf(r->label, sizeof r->label, "%s", label);
    r->sim = sim;
    r->meas = m;
    r->lanes_from = lanes_from;
    r->g = commsched_sim_graph(lanes_from);
    r->order = commsched_sim_get_order(lanes_from);
    *out = r;
    return cs_html_run_lanes(r, err);
}

static commsched_status page_init(page *p, FILE *out,
                                  const commsched_sim *after,
                                  const commsched_html_options *o,
                                  commsched_error *err)
{
    static const commsched_report_context none = {0};
    commsched_status st;
    memset(p, 0, sizeof *p);
    p->w.f = out;
    p->o = o;
    p->ctx = o->ctx ? o->ctx : &none;
    const commsched_graph *g = commsched_sim_graph(after);
    if (o->measured && o->measured->graph != g)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the measured run belongs to another "
                                   "graph than the report's");
    if (o->before &&
        (st = add_run(p, "before", o->label_before ? o->label_before : "before",
                      o->before, NULL, o->before, &p->before, err)))
        return st;
    if ((st = add_run(p, "after", o->label_after ? o->label_after : "after",
                      after, NULL, after, &p->after, err)))
        return st;
    if (o->measured) {
        char label[64];
        snprintf(label, sizeof label, "measured%s%s%s",
                 o->measured->timeline_from ? " (" : "",
                 o->measured->timeline_from ? o->measured->timeline_from : "",
                 o->measured->timeline_from ? ")" : "");
        if ((st = add_run(p, "measured", label, NULL, o->measured, after,
                          &p->meas, err)))
            return st;
    }
    /* Graph tables: after's first. */
    p->graphs[0] = g;
    p->n_graphs = 1;
    for (uint32_t k = 0; k < p->n_runs; k++) {
        run *r = &p->runs[k];
        int mapped = r->g == g ? 1 : map_nodes(r, g);
        if (mapped < 0)
            return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        if (mapped) {
            r->gid = 0;
        } else {
            p->graphs[1] = r->g;
            p->n_graphs = 2;
            r->gid = 1;
        }
    }
    /* One time axis for every run. */
    p->T = 0;
    for (uint32_t k = 0; k < p->n_runs; k++)
        p->T = fmax(p->T, p->runs[k].end);
    if (!(p->T > 0))
        p->T = 1;
    double y = AXIS_H + 6;
    for (uint32_t k = 0; k < p->n_runs; k++) {
        p->runs[k].y = y;
        y += cs_html_run_height(&p->runs[k]) + RUN_GAP;
    }
    p->tl_height = y + 4;
    /* Memory scale: every peak and the budget fit. */
    p->mem_max = 0;
    for (uint32_t k = 0; k < p->n_runs; k++)
        if (cs_html_has_curve(&p->runs[k]))
            p->mem_max = fmax(
                p->mem_max,
                (double)commsched_sim_get_totals(p->runs[k].sim)->peak_memory);
    if (p->mem_max > 0 && o->memory_budget > 0)
        p->mem_max = fmax(p->mem_max, (double)o->memory_budget);
    if (p->mem_max > 0)
        p->mem_max *= 1.08;
    else if (o->memory_budget > 0)
        p->mem_max = (double)o->memory_budget * 1.08;
    for (uint32_t gi = 0; gi < p->n_graphs; gi++)
        if ((st = choose_nodes(p, gi, err)))
            return st;
    for (uint32_t gi = 0; gi < p->n_graphs; gi++)
        if (p->sel[gi])
            qsort(p->sel[gi], p->n_sel[gi], sizeof *p->sel[gi], cmp_u32);
    /* Pass statistics: rows linked per node of the after graph. */
    if (o->n_pass_rows) {
        p->stat_head =
            malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *p->stat_head);
        p->stat_next = malloc(o->n_pass_rows * sizeof *p->stat_next);
        if (!p->stat_head || !p->stat_next)
            return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        for (uint32_t v = 0; v < g->n_nodes; v++)
            p->stat_head[v] = COMMSCHED_NONE;
        for (size_t i = 0; i < o->n_pass_rows; i++) {
            const commsched_html_pass_row *row = &o->pass_rows[i];
            uint32_t v = row->node ? commsched_graph_find_node(g, row->node)
                                   : COMMSCHED_NONE;
            p->stat_next[i] = COMMSCHED_NONE;
            if (v == COMMSCHED_NONE)
                continue;
            p->stat_next[i] = p->stat_head[v];
            p->stat_head[v] = (uint32_t)i;
            p->has_stats = 1;
        }
    }
    return COMMSCHED_OK;
}

static void header_section(page *p)
{
    hw *w = &p->w;
    const commsched_graph *g = p->after->g;
    const commsched_sim_totals *t = commsched_sim_get_totals(p->after->sim);
    const commsched_html_options *o = p->o;
    put(w, "<header><h1>");
    if (o->title)
        cs_html_esc(w, o->title);
    else {
        put(w, "Overlap report: ");
        cs_html_esc(w, g->name ? g->name : "(unnamed graph)");
    }
    putf(w,
         "</h1>\n<p class=\"meta\">%u nodes \xC2\xB7 %u collectives "
         "\xC2\xB7 %u waits",
         g->n_nodes, t->n_collectives, t->n_waits);
    if (p->ctx->device) {
        put(w, " \xC2\xB7 device ");
        cs_html_esc(w, p->ctx->device);
    }
    if (p->ctx->cost_model) {
        put(w, " \xC2\xB7 ");
        cs_html_esc(w, p->ctx->cost_model);
        put(w, " cost model");
    }
    putf(w, " \xC2\xB7 comm streams %s",
         commsched_sim_get_options(p->after->sim).comm_streams ==
                 COMMSCHED_STREAMS_SINGLE
             ? "single"
             : "per group");
    if (o->passes) {
        put(w, " \xC2\xB7 passes: ");
        cs_html_esc(w, o->passes[0] ? o->passes : "none");
    }
    if (p->ctx->sources) {
        uint32_t cnt[3] = {0, 0, 0};
        for (uint32_t v = 0; v < g->n_nodes; v++)
            if ((unsigned)p->ctx->sources[v] < 3)
                cnt[p->ctx->sources[v]]++;
        putf(w,
             " \xC2\xB7 runtimes: %u from the file, %u from the model, "
             "%u with nothing to go on",
             cnt[COMMSCHED_SOURCE_FILE], cnt[COMMSCHED_SOURCE_MODEL],
             cnt[COMMSCHED_SOURCE_NONE]);
    }
    put(w, "</p></header>\n");
}

static commsched_status finish(FILE *out, commsched_status st,
                               commsched_error *err)
{
    if (st == COMMSCHED_OK && ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return st;
}

commsched_status commsched_report_html(FILE *out, const commsched_sim *after,
                                       const commsched_html_options *opts,
                                       commsched_error *err)
{
    commsched_html_options defaults;
    page p;
    commsched_status st;
    if (!opts) {
        commsched_html_options_init(&defaults);
        opts = &defaults;
    }
    if ((st = page_init(&p, out, after, opts, err)) != COMMSCHED_OK)
        goto done;
    hw *w = &p.w;
    put(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
           "charset=\"utf-8\">\n<meta name=\"viewport\" "
           "content=\"width=device-width, initial-scale=1\">\n"
           "<meta name=\"generator\" content=\"commsched\">\n<title>");
    if (opts->title)
        cs_html_esc(w, opts->title);
    else {
        put(w, "commsched: ");
        cs_html_esc(w, p.after->g->name ? p.after->g->name : "overlap report");
    }
    put(w, "</title>\n<style>\n");
    cs_html_put_lines(w, report_html_css);
    put(w, "</style>\n</head>\n<body>\n");
    header_section(&p);
    summary_section(&p);
    if ((st = timeline_section(&p, err)) != COMMSCHED_OK)
        goto done;
    cs_html_memory_section(&p);
    if ((st = collectives_section(&p, err)) != COMMSCHED_OK)
        goto done;
    if (p.meas)
        measured_section(&p);
    put(w, "<div id=\"cs-tip\"></div>\n");
    if ((st = data_block(&p, err)) != COMMSCHED_OK)
        goto done;
    put(w, "<script>\n");
    cs_html_put_lines(w, report_html_js);
    put(w, "</script>\n</body>\n</html>\n");
done:
    page_fini(&p);
    return finish(out, st, err);
}

commsched_status commsched_report_svg(FILE *out, const commsched_sim *after,
                                      const commsched_html_options *opts,
                                      commsched_error *err)
{
    commsched_html_options defaults;
    page p;
    commsched_status st;
    if (!opts) {
        commsched_html_options_init(&defaults);
        opts = &defaults;
    }
    if ((st = page_init(&p, out, after, opts, err)) != COMMSCHED_OK)
        goto done;
    hw *w = &p.w;
    double legend_y = p.tl_height + 4, H = legend_y + 22, title_h = 22;
    putf(w,
         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
         "xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" "
         "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 %.0f %.0f %.0f\">\n",
         SVG_W, H + title_h, -title_h, SVG_W, H + title_h);
    put(w, "<style><![CDATA[\n");
    cs_html_put_lines(w, report_html_css);
    put(w, "]]></style>\n<defs><pattern id=\"cs-hatch\" width=\"6\" "
           "height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
           "fill=\"#f5b7b8\"/><rect width=\"3\" height=\"6\" "
           "fill=\"#e15759\"/></pattern></defs>\n");
    putf(w,
         "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
         "fill=\"#fff\"/>\n<text class=\"runlbl\" x=\"4\" y=\"%.0f\">",
         -title_h, SVG_W, H + title_h, -title_h + 15);
    if (opts->title)
        cs_html_esc(w, opts->title);
    else
        cs_html_esc(w, p.after->g->name ? p.after->g->name : "timeline");
    char a[32];
    putf(w, " \xE2\x80\x94 makespan %s",
         cs_html_fmt_time(commsched_sim_get_totals(after)->makespan_ns, a,
                          sizeof a));
    if (p.before)
        putf(w, " (%s before)",
             cs_html_fmt_time(
                 commsched_sim_get_totals(opts->before)->makespan_ns, a,
                 sizeof a));
    put(w, "</text>\n");
    cs_html_timeline_frame(&p);
    if ((st = cs_html_timeline_static(&p, 1, err)) != COMMSCHED_OK)
        goto done;
    cs_html_timeline_legend_svg(&p, legend_y);
    put(w, "</svg>\n");
done:
    page_fini(&p);
    return finish(out, st, err);
}
