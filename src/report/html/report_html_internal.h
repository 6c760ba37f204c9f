/* commsched — internals shared by the HTML report's files (not installed):
 * - report_html_out.c: escaping (HTML, XML, JSON) and number formats;
 * - report_html_draw.c: the runs drawn (before, after, measured), their
 *   lanes, the timeline SVG with its aggregation and the memory chart;
 * - report_html.c: the page's sections, the data block for the script,
 *   and the entry points commsched_report_html / _svg.
 * The design (first view drawn in C, zoom drawn by the script from the
 * data block, nothing that refers outside the file) is described at the
 * top of report_html.c. */
#ifndef COMMSCHED_REPORT_HTML_INTERNAL_H
#define COMMSCHED_REPORT_HTML_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "commsched/report.h"
#include "graph_layout.h"

/* Geometry of the SVG viewBox, in user units (1 unit = 1 px at 100%). */
#define CS_HTML_PLOT_W 1200.0 /* the time axis */
#define CS_HTML_NCOLS 1200u   /* aggregation columns: one per unit */
#define CS_HTML_LABEL_W 150.0 /* lane names to the left */
#define CS_HTML_PAD_R 24.0
#define CS_HTML_SVG_W (CS_HTML_LABEL_W + CS_HTML_PLOT_W + CS_HTML_PAD_R)
#define CS_HTML_AXIS_H 28.0   /* the time labels above the lanes */
#define CS_HTML_RUN_HEAD 20.0 /* a run's title row */
#define CS_HTML_LANE_H 18.0
#define CS_HTML_LANE_GAP 5.0
#define CS_HTML_RUN_GAP 10.0
#define CS_HTML_MEM_TOP 16.0
#define CS_HTML_MEM_H 170.0 /* the memory plot */
#define CS_HTML_MEM_BOTTOM 26.0

#define CS_HTML_BAR_LIMIT 2000u /* lanes with at most this many nodes: all bars */
#define CS_HTML_MIN_BAR_PX 3.0  /* busier lanes: nodes this wide stay bars */
/* Axis ticks drawn at most: the nice steps give about 8; the cap keeps a
 * step that does not advance (a range beyond any the format allows) from
 * writing forever. */
#define CS_HTML_MAX_TICKS 64
#define CS_HTML_LEVELS 20       /* bin heights are quantised to 5% */
#define CS_HTML_DATA_BINS 2000u /* per-lane bins sent when nodes are left out */
#define CS_HTML_DEFAULT_MAX_BARS 50000u
#define CS_HTML_DEFAULT_MAX_ROWS 1000u
#define CS_HTML_MEM_RAW_POINTS 20000u /* memory curves up to this are sent whole */
#define CS_HTML_MEM_BUCKETS 4000u     /* otherwise min/max/last per bucket */
#define CS_HTML_MAX_RUNS 3

/* ---- output ------------------------------------------------------------- */

/* The stream a page is written to. Writers never check each call: the
 * entry points test ferror() once at the end. */
typedef struct cs_html_out {
    FILE *f;
} cs_html_out;

static inline void cs_html_put(cs_html_out *w, const char *s) { fputs(s, w->f); }

static inline void cs_html_putf(cs_html_out *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static inline void cs_html_putf(cs_html_out *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w->f, fmt, ap);
    va_end(ap);
}

/* report_html_out.c */
void cs_html_put_lines(cs_html_out *w, const char *const *lines);
void cs_html_esc(cs_html_out *w, const char *s);
void cs_html_esc_first_line(cs_html_out *w, const char *s);
void cs_html_jstr(cs_html_out *w, const char *s);
void cs_html_num_int(cs_html_out *w, double d);
const char *cs_html_fmt_time(double ns, char *buf, size_t size);
const char *cs_html_fmt_tick(double ns, double step, char *buf, size_t size);
const char *cs_html_fmt_pct(double frac, char *buf, size_t size);
double cs_html_nice_step(double range, int ticks);
double cs_html_nice_bytes_step(double max);
void cs_html_num_exact(cs_html_out *w, double d);

/* ---- runs and the page -------------------------------------------------- */

typedef struct cs_html_run {
    const char *key; /* data-run: before / after / measured */
    char label[64];
    const commsched_graph *g;
    const commsched_sim *sim;        /* simulated runs */
    const commsched_measured_run *meas;  /* the measured run */
    const commsched_sim *lanes_from; /* streams per node (after, for meas) */
    const uint32_t *order;           /* drawing order */
    double end;                      /* latest end */
    uint32_t n_streams, n_lanes;
    int32_t *lane_of;                /* stream -> lane, -1 when empty */
    uint32_t *lane_stream;           /* lane -> stream */
    uint32_t *lane_nodes;            /* nodes (and sync twins) per lane */
    double y;                        /* top of the run's block */
    int gid;                         /* graph table in the data block */
    uint32_t *from_table, *to_table; /* node ids of the table <-> this
                                        run's graph (NULL: the same) */
} cs_html_run;

typedef struct cs_html_span {
    double issue, start, end, exposed;
    uint32_t stream;
} cs_html_span;

typedef struct cs_html_page {
    cs_html_out w;
    const commsched_html_options *o;
    const commsched_report_context *ctx;
    cs_html_run runs[CS_HTML_MAX_RUNS];
    uint32_t n_runs;
    cs_html_run *before, *after, *meas;
    double T; /* the time axis: [0, T] */
    double tl_height;
    /* Memory plot. */
    double mem_max;
    /* Graph tables of the data block: after's graph, and before's when it
     * is another graph. sel[gi] lists the nodes sent (NULL: all). */
    const commsched_graph *graphs[2];
    uint32_t n_graphs;
    uint32_t *sel[2];
    uint32_t n_sel[2];
    int complete[2];
    /* Pass statistics, linked per after-graph node. */
    uint32_t *stat_head, *stat_next;
    int has_stats;
} cs_html_page;

/* Time (ns) to the timeline's x (first view: the whole step). */
static inline double cs_html_x(const cs_html_page *p, double t)
{
    return CS_HTML_LABEL_W + t / p->T * CS_HTML_PLOT_W;
}

/* report_html_draw.c */
int cs_html_get_span(const cs_html_run *r, uint32_t v, cs_html_span *s);
uint32_t cs_html_table_id(const cs_html_run *r, uint32_t v);
int cs_html_table_span(const cs_html_run *r, uint32_t t, cs_html_span *s);
void cs_html_run_fini(cs_html_run *r);
commsched_status cs_html_run_lanes(cs_html_run *r, commsched_error *err);
double cs_html_run_height(const cs_html_run *r);
double cs_html_lane_y(const cs_html_run *r, uint32_t lane);
const char *cs_html_lane_name(const cs_html_run *r, uint32_t lane);
void cs_html_timeline_frame(cs_html_page *p);
commsched_status cs_html_timeline_static(cs_html_page *p, int titles,
                                         commsched_error *err);
void cs_html_timeline_legend_svg(cs_html_page *p, double y);
int cs_html_has_curve(const cs_html_run *r);
void cs_html_memory_section(cs_html_page *p);
/* report_html_limit.c: a pass's limiting factor (its statistics row's
 * text, NULL or "None" when nothing stopped it) as words, escaped;
 * hidden: the node ended up fully hidden. */
void cs_html_limit_words(cs_html_out *w, const char *pass, const char *factor,
                         int hidden);

/* report_html_sections.c and report_html_data.c: the page's parts, in
 * the order report_html.c writes them. */
void cs_html_summary_section(cs_html_page *p);
commsched_status cs_html_timeline_section(cs_html_page *p, commsched_error *err);
commsched_status cs_html_collectives_section(cs_html_page *p, commsched_error *err);
void cs_html_measured_section(cs_html_page *p);
commsched_status cs_html_choose_nodes(cs_html_page *p, uint32_t gi, commsched_error *err);
commsched_status cs_html_data_block(cs_html_page *p, commsched_error *err);
/* qsort order of uint32_t values, ascending. */
int cs_html_cmp_u32(const void *a, const void *b);

#endif /* COMMSCHED_REPORT_HTML_INTERNAL_H */
