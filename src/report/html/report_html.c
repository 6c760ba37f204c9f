/* commsched — the HTML overlap report and its SVG timeline (docs/REPORTS.md "HTML report",
 * docs/REPORTS.md "HTML report").
 *
 * One self-contained page: inline CSS, inline SVG, a JSON data block and a
 * little JavaScript (report_html.css / .js, embedded at build time by
 * report_html_embed.cmake). Nothing refers outside the file, so it
 * opens from disk anywhere, and the writer guarantees it: every piece of
 * user text is escaped so that no "//" can appear (a '/' becomes &#47; in
 * HTML and \/ in JSON), and invalid UTF-8 becomes U+FFFD.
 *
 * Runs. A page draws up to three runs of one step on one time axis:
 * "before" and "after" (simulations, possibly of two graphs, matched by
 * node name) and "measured" (commsched_measured_run, drawn with the after
 * graph's lanes). Each run has a compute lane and a lane per comm stream
 * that carries a collective.
 *
 * Scale. The first view is drawn here, in C, at a fixed plot width of
 * CS_HTML_PLOT_W units: a lane with at most CS_HTML_BAR_LIMIT nodes draws every node as a
 * bar (so the small example shows one bar per scheduled node, which the
 * browser test counts); a busier lane draws nodes at least CS_HTML_MIN_BAR_PX wide
 * as bars and folds the rest into one-unit columns (busy fraction as
 * height, exposed time as a red strip, node counts for the tooltip),
 * merged while the level repeats. So a 36k-node step draws a few hundred
 * elements, not tens of thousands. The zoomed views are drawn by the
 * script from the JSON data block with the same rule; the block holds
 * every node of a run up to max_bars (default 50000) and otherwise the
 * longest max_bars plus CS_HTML_DATA_BINS bins per lane for the rest, so file size
 * stays bounded for a million nodes.
 *
 * Streaming. Every section is written as it is computed; the writer holds
 * O(V) small arrays (node selection, per-node pass-statistics links) and
 * O(lanes x columns) bins, never the page.
 *
 * The same first view, without the script, is commsched_report_svg.
 *
 * Files: this one assembles the page and holds the entry points;
 * report_html_sections.c writes the summary, timeline, collectives and
 * measured-run sections; report_html_data.c the JSON data block the
 * script zooms with; report_html_draw.c the runs, timeline and memory SVG;
 * report_html_out.c escaping and formats; report_html_measured.c reads
 * measured runs. */
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_html_res.h"
#include "utf8.h"

/* ---- assembling the page ------------------------------------------------ */

void commsched_html_options_init(commsched_html_options *o)
{
    memset(o, 0, sizeof *o);
    o->memory_budget = -1;
}

static void page_fini(cs_html_page *p)
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
static int map_nodes(cs_html_run *r, const commsched_graph *t)
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

static commsched_status add_run(cs_html_page *p, const char *key, const char *label,
                                const commsched_sim *sim,
                                const commsched_measured_run *m,
                                const commsched_sim *lanes_from, cs_html_run **out,
                                commsched_error *err)
{
    cs_html_run *r = &p->runs[p->n_runs++];
    memset(r, 0, sizeof *r);
    r->key = key;
    cs_utf8_trim(r->label, sizeof r->label,
                 snprintf(r->label, sizeof r->label, "%s", label));
    r->sim = sim;
    r->meas = m;
    r->lanes_from = lanes_from;
    r->g = commsched_sim_graph(lanes_from);
    r->order = commsched_sim_get_order(lanes_from);
    *out = r;
    return cs_html_run_lanes(r, err);
}

static commsched_status page_init(cs_html_page *p, FILE *out,
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
        cs_html_run *r = &p->runs[k];
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
    double y = CS_HTML_AXIS_H + 6;
    for (uint32_t k = 0; k < p->n_runs; k++) {
        p->runs[k].y = y;
        y += cs_html_run_height(&p->runs[k]) + CS_HTML_RUN_GAP;
    }
    p->tl_height = y + 4;
    /* Memory scale: every peak and the budget fit. With every peak 0 (no
     * buffer has a size) there is nothing to draw: mem_max stays 0 and the
     * memory section says why. */
    p->mem_max = 0;
    for (uint32_t k = 0; k < p->n_runs; k++)
        if (cs_html_has_curve(&p->runs[k]))
            p->mem_max = fmax(
                p->mem_max,
                (double)commsched_sim_get_totals(p->runs[k].sim)->peak_memory);
    if (p->mem_max > 0 && o->memory_budget > 0)
        p->mem_max = fmax(p->mem_max, (double)o->memory_budget);
    p->mem_max *= 1.08;
    for (uint32_t gi = 0; gi < p->n_graphs; gi++)
        if ((st = cs_html_choose_nodes(p, gi, err)))
            return st;
    for (uint32_t gi = 0; gi < p->n_graphs; gi++)
        if (p->sel[gi])
            qsort(p->sel[gi], p->n_sel[gi], sizeof *p->sel[gi], cs_html_cmp_u32);
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

static void header_section(cs_html_page *p)
{
    cs_html_out *w = &p->w;
    const commsched_graph *g = p->after->g;
    const commsched_sim_totals *t = commsched_sim_get_totals(p->after->sim);
    const commsched_html_options *o = p->o;
    cs_html_put(w, "<header><h1>");
    if (o->title)
        cs_html_esc(w, o->title);
    else {
        cs_html_put(w, "Overlap report: ");
        cs_html_esc(w, g->name ? g->name : "(unnamed graph)");
    }
    cs_html_putf(w,
         "</h1>\n<p class=\"meta\">%u node%s \xC2\xB7 %u collective%s "
         "\xC2\xB7 %u wait%s",
         g->n_nodes, COMMSCHED_PLURAL(g->n_nodes), t->n_collectives,
         COMMSCHED_PLURAL(t->n_collectives), t->n_waits,
         COMMSCHED_PLURAL(t->n_waits));
    if (p->ctx->device) {
        cs_html_put(w, " \xC2\xB7 device ");
        cs_html_esc(w, p->ctx->device);
    }
    if (p->ctx->cost_model) {
        cs_html_put(w, " \xC2\xB7 ");
        cs_html_esc(w, p->ctx->cost_model);
        cs_html_put(w, " cost model");
    }
    cs_html_putf(w, " \xC2\xB7 comm streams %s",
         commsched_sim_get_options(p->after->sim).comm_streams ==
                 COMMSCHED_STREAMS_SINGLE
             ? "single"
             : "per group");
    if (o->passes) {
        cs_html_put(w, " \xC2\xB7 passes: ");
        cs_html_esc(w, o->passes[0] ? o->passes : "none");
    }
    if (p->ctx->sources) {
        uint32_t cnt[COMMSCHED_SOURCE_COUNT] = {0};
        char text[160];
        for (uint32_t v = 0; v < g->n_nodes; v++)
            if ((unsigned)p->ctx->sources[v] < COMMSCHED_SOURCE_COUNT)
                cnt[p->ctx->sources[v]]++;
        cs_html_putf(w, " \xC2\xB7 runtimes: %s",
                     commsched_cost_sources_text(cnt, text, sizeof text));
    }
    cs_html_put(w, "</p></header>\n");
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
    cs_html_page p;
    commsched_status st;
    if (!opts) {
        commsched_html_options_init(&defaults);
        opts = &defaults;
    }
    if ((st = page_init(&p, out, after, opts, err)) != COMMSCHED_OK)
        goto done;
    cs_html_out *w = &p.w;
    cs_html_put(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
           "charset=\"utf-8\">\n<meta name=\"viewport\" "
           "content=\"width=device-width, initial-scale=1\">\n"
           "<meta name=\"generator\" content=\"commsched\">\n<title>");
    if (opts->title)
        cs_html_esc(w, opts->title);
    else {
        cs_html_put(w, "commsched: ");
        cs_html_esc(w, p.after->g->name ? p.after->g->name : "overlap report");
    }
    cs_html_put(w, "</title>\n<style>\n");
    cs_html_put_lines(w, report_html_css);
    cs_html_put(w, "</style>\n</head>\n<body>\n");
    header_section(&p);
    cs_html_summary_section(&p);
    if ((st = cs_html_timeline_section(&p, err)) != COMMSCHED_OK)
        goto done;
    cs_html_memory_section(&p);
    if ((st = cs_html_collectives_section(&p, err)) != COMMSCHED_OK)
        goto done;
    if (p.meas)
        cs_html_measured_section(&p);
    cs_html_put(w, "<div id=\"cs-tip\"></div>\n");
    if ((st = cs_html_data_block(&p, err)) != COMMSCHED_OK)
        goto done;
    cs_html_put(w, "<script>\n");
    cs_html_put_lines(w, report_html_js);
    cs_html_put(w, "</script>\n</body>\n</html>\n");
done:
    page_fini(&p);
    return finish(out, st, err);
}

commsched_status commsched_report_svg(FILE *out, const commsched_sim *after,
                                      const commsched_html_options *opts,
                                      commsched_error *err)
{
    commsched_html_options defaults;
    cs_html_page p;
    commsched_status st;
    if (!opts) {
        commsched_html_options_init(&defaults);
        opts = &defaults;
    }
    if ((st = page_init(&p, out, after, opts, err)) != COMMSCHED_OK)
        goto done;
    cs_html_out *w = &p.w;
    double legend_y = p.tl_height + 4, H = legend_y + 22, title_h = 22;
    cs_html_putf(w,
         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
         "xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" "
         "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 %.0f %.0f %.0f\">\n",
         CS_HTML_SVG_W, H + title_h, -title_h, CS_HTML_SVG_W, H + title_h);
    cs_html_put(w, "<style><![CDATA[\n");
    cs_html_put_lines(w, report_html_css);
    cs_html_put(w, "]]></style>\n<defs><pattern id=\"cs-hatch\" width=\"6\" "
           "height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
           "fill=\"#f5b7b8\"/><rect width=\"3\" height=\"6\" "
           "fill=\"#e15759\"/></pattern></defs>\n");
    cs_html_putf(w,
         "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
         "fill=\"#fff\"/>\n<text class=\"runlbl\" x=\"4\" y=\"%.0f\">",
         -title_h, CS_HTML_SVG_W, H + title_h, -title_h + 15);
    if (opts->title)
        cs_html_esc(w, opts->title);
    else
        cs_html_esc(w, p.after->g->name ? p.after->g->name : "timeline");
    char a[32];
    cs_html_putf(w, " \xE2\x80\x94 makespan %s",
         cs_html_fmt_time(commsched_sim_get_totals(after)->makespan_ns, a,
                          sizeof a));
    if (p.before)
        cs_html_putf(w, " (%s before)",
             cs_html_fmt_time(
                 commsched_sim_get_totals(opts->before)->makespan_ns, a,
                 sizeof a));
    cs_html_put(w, "</text>\n");
    cs_html_timeline_frame(&p);
    if ((st = cs_html_timeline_static(&p, 1, err)) != COMMSCHED_OK)
        goto done;
    cs_html_timeline_legend_svg(&p, legend_y);
    cs_html_put(w, "</svg>\n");
done:
    page_fini(&p);
    return finish(out, st, err);
}
