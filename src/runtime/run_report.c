/* commsched — reports of a measured run (runtime.h): the measured figures
 * beside the simulator's prediction, as a table, JSON and a Chrome trace.
 * No communication library here: everything works from the gathered
 * commsched_measurement.
 *
 * Aggregation: a per-node or per-step figure is first averaged over ranks
 * within an iteration (the ranks run the same step), then the median over
 * iterations is taken, so one descheduled rank in one iteration does not
 * move the result. Step time is the exception: an iteration's step is its
 * slowest rank's (the step ends when every rank is done).
 *
 * Exposure: a wait's blocked time is split over the collectives it
 * completes by the simulator's rule (by completion time: the first to
 * complete owns the stall up to its completion, the next the increment),
 * and anything after the last completion (bookkeeping, --check) goes to
 * the last, so exposures add up to the time blocked in waits. A sync
 * collective is exposed for its whole issue-to-completion time. */
#include "commsched/runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/report.h"
#include "graph_layout.h"
#include "utf8.h"
#include "report_writer.h"

/* ---- prediction ------------------------------------------------------------ */

void commsched_measurement_predict(const commsched_measurement *m,
                                   const double *model_ns, double *runtime_ns,
                                   uint8_t *sources)
{
    const commsched_graph *g = m->graph;
    double ts = m->options.time_scale;
    for (uint32_t v = 0; v < m->nodes; v++) {
        const cs_node *nd = &g->nodes[v];
        double model = model_ns ? model_ns[v] : 0;
        double r = 0;
        uint8_t measured = 0;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            if (m->solo_ns) {
                r = m->solo_ns[v] + (m->skew_ns ? m->skew_ns[v] : 0) +
                    (m->wake_ns ? m->wake_ns[v] : 0);
                measured = 1;
            } else {
                r = model * ts;
            }
        } else if (nd->kind == COMMSCHED_NODE_COMPUTE) {
            /* Calibrated in every mode: a sleeping node lasts its runtime
             * plus how late this machine wakes it up, which on a loaded
             * machine is far more than the model's runtime alone. */
            if (m->solo_ns) {
                r = m->solo_ns[v];
                measured = 1;
            } else {
                r = model * ts;
            }
        } else {
            r = model * ts; /* a wait's own runtime, normally 0 */
        }
        runtime_ns[v] = r > 0 && isfinite(r) ? r : 0;
        if (sources)
            sources[v] = measured;
    }
}

/* ---- aggregation --------------------------------------------------------------- */

typedef struct summary {
    uint32_t R, n, I;
    double step_med, step_min, step_max;
    double step_mean, step_sd; /* over iterations: the spread of the
                                  repeated measurement */
    double *step_it;      /* [iter]: slowest rank */
    double compute, comm, exposed, overlap; /* medians of rank means */
    double *dur;          /* [node] median over iterations of the rank mean */
    double *exposed_node; /* [node] collectives: the same for exposure */
    double *issue;        /* [node] the same for the start time */
    int64_t peak;         /* max over ranks */
    uint32_t n_coll;
    double *rank_tot;     /* [rank * 5 + f]: medians over iterations of the
                             rank's step, compute, comm, exposed, overlap */
    uint32_t *wc_off, *wc; /* each wait's collectives (CSR by node) */
    size_t wc_max;         /* the most one wait has */
} summary;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The device allocator's high-water mark over ranks (pool_peak given). */
static int64_t max_pool_peak(const commsched_measurement *m)
{
    int64_t v = 0;
    for (uint32_t r = 0; r < m->ranks; r++)
        if (m->pool_peak[r] > v)
            v = m->pool_peak[r];
    return v;
}

static void summary_free(summary *s)
{
    free(s->step_it);
    free(s->dur);
    free(s->exposed_node);
    free(s->issue);
    free(s->rank_tot);
    free(s->wc_off);
    free(s->wc);
}

/* The collectives each wait completes: its direct producers that are
 * collectives (the simulator's rule), each once, in read order, as CSR
 * rows of s->wc. O(V + reads): a stamp per collective, not a scan of the
 * row (a wait may complete thousands). Returns 0 or -1 on OOM. */
static int wait_lists(const commsched_graph *g, summary *s)
{
    uint32_t n = g->n_nodes;
    s->wc_off = calloc((size_t)n + 1, sizeof *s->wc_off);
    uint32_t *stamp = calloc(n ? n : 1, sizeof *stamp);
    size_t total = 0;
    for (uint32_t w = 0; w < n; w++)
        if (g->nodes[w].kind == COMMSCHED_NODE_WAIT)
            total += g->reads.off[w + 1] - g->reads.off[w];
    s->wc = malloc((total ? total : 1) * sizeof *s->wc);
    if (!s->wc_off || !stamp || !s->wc) {
        free(stamp);
        return -1;
    }
    uint32_t k = 0;
    for (uint32_t w = 0; w < n; w++) {
        s->wc_off[w] = k;
        if (g->nodes[w].kind != COMMSCHED_NODE_WAIT)
            continue;
        for (uint32_t e = g->reads.off[w]; e < g->reads.off[w + 1]; e++) {
            uint32_t p = g->buffers[g->reads.idx[e]].producer;
            if (p == COMMSCHED_NONE ||
                g->nodes[p].kind != COMMSCHED_NODE_COLLECTIVE ||
                stamp[p] == w + 1)
                continue;
            stamp[p] = w + 1;
            s->wc[k++] = p;
        }
        if (k - s->wc_off[w] > s->wc_max)
            s->wc_max = k - s->wc_off[w];
    }
    s->wc_off[n] = k;
    free(stamp);
    return 0;
}

typedef struct done_key {
    double end;
    uint32_t seq, node;
} done_key;

static int cmp_done(const void *a, const void *b)
{
    const done_key *x = a, *y = b;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Wait w's collectives into out, by completion time t1 (ties in read
 * order): insertion for the usual few, keys and qsort (keys: wc_max
 * entries) for many. Returns the count. */
static size_t by_completion(const summary *s, uint32_t w, const double *t1,
                            uint32_t *out, done_key *keys)
{
    size_t k = s->wc_off[w + 1] - s->wc_off[w];
    const uint32_t *row = s->wc + s->wc_off[w];
    if (k > 32) {
        for (size_t i = 0; i < k; i++)
            keys[i] = (done_key){t1[row[i]], (uint32_t)i, row[i]};
        qsort(keys, k, sizeof *keys, cmp_done);
        for (size_t i = 0; i < k; i++)
            out[i] = keys[i].node;
        return k;
    }
    for (size_t i = 0; i < k; i++) {
        size_t j = i;
        while (j > 0 && t1[out[j - 1]] > t1[row[i]]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = row[i];
    }
    return k;
}

static int summarize(const commsched_measurement *m, summary *s)
{
    const commsched_graph *g = m->graph;
    uint32_t R = m->ranks, n = m->nodes, I = m->iters;
    memset(s, 0, sizeof *s);
    s->R = R;
    s->n = n;
    s->I = I;
    s->step_it = calloc(I ? I : 1, sizeof *s->step_it);
    s->dur = calloc(n ? n : 1, sizeof *s->dur);
    s->exposed_node = calloc(n ? n : 1, sizeof *s->exposed_node);
    s->issue = calloc(n ? n : 1, sizeof *s->issue);
    double *exp_ir = calloc(n ? n : 1, sizeof *exp_ir);  /* one (iter, rank) */
    double *acc_d = calloc((size_t)I * n + 1, sizeof *acc_d);
    double *acc_e = calloc((size_t)I * n + 1, sizeof *acc_e);
    double *acc_s = calloc((size_t)I * n + 1, sizeof *acc_s);
    double *tot = calloc((size_t)I * 4 + 1, sizeof *tot);
    double *col = malloc(((size_t)I + 1) * sizeof *col);
    double *tot_ir = calloc((size_t)I * R * 5 + 1, sizeof *tot_ir);
    s->rank_tot = calloc((size_t)R * 5 + 1, sizeof *s->rank_tot);
    int ok = s->step_it && s->dur && s->exposed_node && s->issue && exp_ir &&
             acc_d && acc_e && acc_s && tot && col && tot_ir && s->rank_tot &&
             wait_lists(g, s) == 0;
    uint32_t *wc = ok ? malloc((s->wc_max ? s->wc_max : 1) * sizeof *wc)
                      : NULL;
    done_key *keys = ok ? malloc((s->wc_max ? s->wc_max : 1) * sizeof *keys)
                        : NULL;
    ok = ok && wc && keys;
    if (!ok)
        goto done;
    for (uint32_t v = 0; v < n; v++)
        if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE)
            s->n_coll++;
    for (uint32_t it = 0; it < I; it++) {
        double worst = 0;
        for (uint32_t r = 0; r < R; r++) {
            size_t base = ((size_t)it * R + r) * n;
            const double *t0 = m->start_ns + base, *t1 = m->end_ns + base;
            double step = m->step_ns[(size_t)it * R + r];
            if (step > worst)
                worst = step;
            memset(exp_ir, 0, (size_t)n * sizeof *exp_ir);
            double comp = 0, comm = 0, exposed = 0;
            for (uint32_t v = 0; v < n; v++) {
                const cs_node *nd = &g->nodes[v];
                double d = t1[v] - t0[v];
                if (nd->kind == COMMSCHED_NODE_COMPUTE) {
                    comp += d;
                } else if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
                    comm += d;
                    if (nd->is_sync) {
                        exp_ir[v] += d;
                        exposed += d;
                    }
                } else {
                    exposed += d;
                    size_t k = by_completion(s, v, t1, wc, keys);
                    double cur = t0[v];
                    for (size_t i = 0; i < k; i++) {
                        double e = fmin(t1[wc[i]], t1[v]);
                        if (e > cur) {
                            exp_ir[wc[i]] += e - cur;
                            cur = e;
                        }
                    }
                    if (k > 0 && t1[v] > cur)
                        exp_ir[wc[k - 1]] += t1[v] - cur;
                }
            }
            for (uint32_t v = 0; v < n; v++) {
                acc_d[(size_t)it * n + v] += (t1[v] - t0[v]) / R;
                acc_e[(size_t)it * n + v] += exp_ir[v] / R;
                acc_s[(size_t)it * n + v] += t0[v] / R;
            }
            tot[it * 4 + 0] += comp / R;
            tot[it * 4 + 1] += comm / R;
            tot[it * 4 + 2] += exposed / R;
            tot[it * 4 + 3] += (comm > 0 ? fmax(0, 1 - exposed / comm) : 1) / R;
            double *ir = tot_ir + ((size_t)it * R + r) * 5;
            ir[0] = step;
            ir[1] = comp;
            ir[2] = comm;
            ir[3] = exposed;
            ir[4] = comm > 0 ? fmax(0, 1 - exposed / comm) : 1;
        }
        s->step_it[it] = worst;
    }
    for (uint32_t v = 0; v < n; v++) {
        for (uint32_t it = 0; it < I; it++)
            col[it] = acc_d[(size_t)it * n + v];
        s->dur[v] = median(col, I);
        for (uint32_t it = 0; it < I; it++)
            col[it] = acc_e[(size_t)it * n + v];
        s->exposed_node[v] = median(col, I);
        for (uint32_t it = 0; it < I; it++)
            col[it] = acc_s[(size_t)it * n + v];
        s->issue[v] = median(col, I);
    }
    double *fig[4] = {&s->compute, &s->comm, &s->exposed, &s->overlap};
    for (int f = 0; f < 4; f++) {
        for (uint32_t it = 0; it < I; it++)
            col[it] = tot[it * 4 + (uint32_t)f];
        *fig[f] = median(col, I);
    }
    for (uint32_t it = 0; it < I; it++)
        col[it] = s->step_it[it];
    s->step_med = median(col, I);
    s->step_min = s->step_max = I ? s->step_it[0] : 0;
    s->step_mean = s->step_sd = 0;
    for (uint32_t it = 0; it < I; it++) {
        s->step_min = fmin(s->step_min, s->step_it[it]);
        s->step_max = fmax(s->step_max, s->step_it[it]);
        s->step_mean += s->step_it[it] / I;
    }
    /* Sample standard deviation (n - 1): the iterations are a sample of
     * the steps this schedule takes. */
    for (uint32_t it = 0; I > 1 && it < I; it++)
        s->step_sd += (s->step_it[it] - s->step_mean) *
                      (s->step_it[it] - s->step_mean) / (I - 1);
    s->step_sd = sqrt(s->step_sd);
    for (uint32_t r = 0; r < R; r++) {
        if (m->peak_live[r] > s->peak)
            s->peak = m->peak_live[r];
        for (uint32_t f = 0; f < 5; f++) {
            for (uint32_t it = 0; it < I; it++)
                col[it] = tot_ir[((size_t)it * R + r) * 5 + f];
            s->rank_tot[(size_t)r * 5 + f] = median(col, I);
        }
    }
done:
    free(wc);
    free(keys);
    free(tot_ir);
    free(exp_ir);
    free(acc_d);
    free(acc_e);
    free(acc_s);
    free(tot);
    free(col);
    if (!ok)
        summary_free(s);
    return ok ? 0 : -1;
}

/* ---- formatting -------------------------------------------------------------------- */

static const char *fmt_time(double ns, char *buf, size_t size)
{
    return cs_fmt_time(ns, 3, "us", buf, size);
}


static double err_pct(double measured, double predicted)
{
    return predicted > 0 ? 100.0 * (measured - predicted) / predicted : NAN;
}

/* err_pct as text: "+2.5%", or "-" without a prediction. */
static const char *fmt_err(double measured, double predicted, char *buf,
                           size_t size)
{
    return cs_fmt_change(err_pct(measured, predicted), "%", buf, size);
}


static const char *prediction_source(const commsched_measurement *m,
                                     const commsched_run_prediction *p)
{
    if (!p || !p->sim)
        return "none";
    return m->solo_ns ? "calibrated" : "model";
}

static commsched_status io_status(FILE *out, commsched_error *err)
{
    if (ferror(out))
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the report");
    return COMMSCHED_OK;
}

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

/* ---- table ------------------------------------------------------------------------- */

commsched_status commsched_run_report_table(FILE *out,
                                            const commsched_measurement *m,
                                            const commsched_run_prediction *p,
                                            commsched_error *err)
{
    const commsched_graph *g = m->graph;
    summary s;
    if (summarize(m, &s) != 0)
        return oom(err);
    const commsched_sim *sim = p ? p->sim : NULL;
    const commsched_sim_node *sn = sim ? commsched_sim_get_nodes(sim) : NULL;
    const commsched_sim_totals *st = sim ? commsched_sim_get_totals(sim) : NULL;
    const commsched_run_options *o = &m->options;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    fprintf(out,
            "%s: %u node%s, %u collective%s on %u rank%s (%s, %s)\n"
            "compute %s x%g, sizes x%g, all-reduce %s; %u iterations after "
            "%u warm-up; prediction: %s\n\n",
            g->name ? g->name : "(unnamed)", m->nodes,
            COMMSCHED_PLURAL(m->nodes), s.n_coll, COMMSCHED_PLURAL(s.n_coll),
            m->ranks, COMMSCHED_PLURAL(m->ranks),
            m->runtime, m->library[0] ? m->library : "?",
            commsched_compute_mode_str(o->compute), o->time_scale,
            o->size_scale, commsched_allreduce_algo_str(o->allreduce), m->iters,
            o->warmup,
            strcmp(prediction_source(m, p), "calibrated") == 0
                ? "simulator, collectives timed alone (calibration)"
                : strcmp(prediction_source(m, p), "model") == 0
                      ? "simulator, cost model"
                      : "none");
    if (s.n_coll > 0) {
        fprintf(out, "%-20s %-14s %-6s %10s %10s %10s %7s %10s %10s\n",
                "collective", "op", "group", "bytes", "predicted", "measured",
                "error", "pred exp", "meas exp");
        for (uint32_t k = 0; k < m->nodes; k++) {
            uint32_t v = m->order[k];
            const cs_node *nd = &g->nodes[v];
            if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
                continue;
            double pred = sn ? sn[v].end_ns - sn[v].issue_ns : NAN;
            double pexp = sn ? sn[v].exposed_ns : NAN;
            char name[96], op[16], grp[32];
            snprintf(op, sizeof op, "%s%s", nd->op, nd->is_sync ? "*" : "");
            fprintf(out, "%s %-14s %s %10s %10s %10s %7s %10s %10s\n",
                    cs_utf8_fit(nd->name, 20, 1, name, sizeof name), op,
                    cs_utf8_fit(g->groups[nd->group].name, 6, 1, grp,
                                sizeof grp),
                    cs_fmt_bytes(commsched_cost_collective_bytes(g, v) *
                                  o->size_scale,
                              a, sizeof a),
                    fmt_time(pred, b, sizeof b), fmt_time(s.dur[v], c, sizeof c),
                    fmt_err(s.dur[v], pred, d, sizeof d),
                    fmt_time(pexp, e, sizeof e),
                    fmt_time(s.exposed_node[v], f, sizeof f));
        }
        fprintf(out, "(predicted/measured: issue to completion; exp: time "
                     "the compute stream was blocked on it; * sync)\n");
        if (m->skew_ns && m->wake_ns && s.n_coll > 0) {
            double skew = 0, wake = 0;
            for (uint32_t v = 0; v < m->nodes; v++)
                if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE) {
                    skew += m->skew_ns[v];
                    wake += m->wake_ns[v];
                }
            fprintf(out, "(calibration: per collective on average, the last "
                         "rank arrives %s after the mean rank and the "
                         "waiting ranks wake %s late; both are in the "
                         "predicted times)\n",
                    fmt_time(skew / s.n_coll, a, sizeof a),
                    fmt_time(wake / s.n_coll, b, sizeof b));
        }
        fprintf(out, "\n");
    }
    fprintf(out, "%-22s %12s %12s %8s\n", "", "predicted", "measured", "error");
    fprintf(out, "%-22s %12s %12s %8s   (min %s, max %s)\n", "step time",
            fmt_time(st ? st->makespan_ns : NAN, a, sizeof a),
            fmt_time(s.step_med, b, sizeof b),
            fmt_err(s.step_med, st ? st->makespan_ns : NAN, c, sizeof c),
            fmt_time(s.step_min, d, sizeof d), fmt_time(s.step_max, e, sizeof e));
    fprintf(out, "%-22s %12s %12s %8s   (mean of %u iterations; standard "
                 "deviation %s, %.1f%% of the mean)\n",
            "  step mean", "", fmt_time(s.step_mean, b, sizeof b), "", m->iters,
            fmt_time(s.step_sd, d, sizeof d),
            s.step_mean > 0 ? 100 * s.step_sd / s.step_mean : 0.0);
    fprintf(out, "%-22s %12s %12s %8s\n", "compute",
            fmt_time(st ? st->compute_ns : NAN, a, sizeof a),
            fmt_time(s.compute, b, sizeof b),
            fmt_err(s.compute, st ? st->compute_ns : NAN, c, sizeof c));
    fprintf(out, "%-22s %12s %12s %8s\n", "comm",
            fmt_time(st ? st->comm_ns : NAN, a, sizeof a),
            fmt_time(s.comm, b, sizeof b),
            fmt_err(s.comm, st ? st->comm_ns : NAN, c, sizeof c));
    fprintf(out, "%-22s %12s %12s %8s\n", "exposed comm",
            fmt_time(st ? st->exposed_ns : NAN, a, sizeof a),
            fmt_time(s.exposed, b, sizeof b),
            fmt_err(s.exposed, st ? st->exposed_ns : NAN, c, sizeof c));
    snprintf(a, sizeof a, "%.1f%%", st ? 100 * st->overlap : NAN);
    snprintf(b, sizeof b, "%.1f%%", 100 * s.overlap);
    fprintf(out, "%-22s %12s %12s\n", "overlap", st ? a : "-", b);
    fprintf(out, "peak memory            model %s per step, %s over simulated "
                 "time; measured %s (max over ranks)\n",
            st ? cs_fmt_bytes((double)st->peak_memory_step * o->size_scale, a, sizeof a) : "-",
            st ? cs_fmt_bytes((double)st->peak_memory * o->size_scale, b, sizeof b) : "-",
            cs_fmt_bytes((double)s.peak, c, sizeof c));
    if (m->pool_peak)
        fprintf(out, "                       device allocator's high-water "
                     "mark %s (max over ranks)\n",
                cs_fmt_bytes((double)max_pool_peak(m), a, sizeof a));
    if (m->other_bytes > 0)
        fprintf(out, "                       plus %s of inputs the model does "
                     "not count\n",
                cs_fmt_bytes((double)m->other_bytes, a, sizeof a));
    if (o->check)
        fprintf(out, "check                  %llu results verified on %u ranks: "
                     "%s%s\n",
                (unsigned long long)m->checked, m->ranks,
                m->mismatches ? "MISMATCHES, first: " : "all correct",
                m->mismatches ? m->first_mismatch : "");
    summary_free(&s);
    return io_status(out, err);
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* Figures that may not exist (no prediction, no step) are null. */
static void key_num(cs_jw *w, const char *key, double v)
{
    cs_jw_key(w, key);
    cs_jw_number_g_or_null(w, v, CS_REPORT_PRECISION);
}

/* The totals object of the measured-run schema. */
static void jw_totals(cs_jw *w, double makespan, double compute, double comm,
                      double exposed, double overlap)
{
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    key_num(w, "makespan_ns", makespan);
    key_num(w, "compute_ns", compute);
    key_num(w, "comm_ns", comm);
    key_num(w, "exposed_ns", exposed);
    key_num(w, "overlap", overlap);
    cs_jw_end(w);
}

/* A key whose value is a list of rows, one a line. */
static void rows_begin(cs_jw *w, const char *key)
{
    cs_jw_key(w, key);
    cs_jw_array(w);
    cs_jw_layout(w, "\n", ":");
}

static void row_begin(cs_jw *w)
{
    if (!w->levels[w->depth].has_items)
        cs_jw_raw(w, "\n");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
}

static void json_header(cs_jw *w, const commsched_measurement *m,
                        const summary *s)
{
    const commsched_run_options *o = &m->options;
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "format", "commsched-measured");
    cs_jw_key_int(w, "version", 1);
    cs_jw_layout(w, "\n", ":");
    cs_jw_key_string(w, "graph", m->graph->name);
    cs_jw_layout(w, "", ":");
    cs_jw_key_int(w, "node_count", m->nodes);
    cs_jw_key_int(w, "collective_count", s->n_coll);
    cs_jw_key_int(w, "rank_count", m->ranks);
    cs_jw_layout(w, "\n", ":");
    cs_jw_key_string(w, "runtime", m->runtime);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "library", m->library);
    cs_jw_layout(w, "\n", ":");
    cs_jw_key(w, "options");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "compute", commsched_compute_mode_str(o->compute));
    key_num(w, "time_scale", o->time_scale);
    key_num(w, "size_scale", o->size_scale);
    cs_jw_key_string(w, "allreduce",
                     commsched_allreduce_algo_str(o->allreduce));
    cs_jw_key(w, "ring_threshold");
    cs_jw_uint(w, o->ring_threshold);
    cs_jw_key(w, "check");
    cs_jw_bool(w, o->check);
    cs_jw_key_int(w, "iters", o->iters);
    cs_jw_key_int(w, "warmup", o->warmup);
    cs_jw_key_int(w, "calibrate", o->calibrate);
    key_num(w, "timeout_s", o->timeout_s);
    key_num(w, "poll_us", o->poll_us);
    cs_jw_end(w);
}

/* The file follows the measured-run schema the HTML report reads
 * (docs/REPORTS.md "Measured runs": totals, memory.peak, per-node rows,
 * ranks) and adds the prediction, the step distribution and the check. */
commsched_status commsched_run_report_json(FILE *out,
                                           const commsched_measurement *m,
                                           const commsched_run_prediction *p,
                                           commsched_error *err)
{
    const commsched_graph *g = m->graph;
    summary s;
    if (summarize(m, &s) != 0)
        return oom(err);
    const commsched_sim *sim = p ? p->sim : NULL;
    const commsched_sim_node *sn = sim ? commsched_sim_get_nodes(sim) : NULL;
    const commsched_sim_totals *st = sim ? commsched_sim_get_totals(sim) : NULL;
    const commsched_run_options *o = &m->options;
    cs_jw *w = cs_report_writer(out, err);
    if (!w) {
        summary_free(&s);
        return COMMSCHED_ENOMEM;
    }
    json_header(w, m, &s);
    cs_jw_key(w, "totals");
    jw_totals(w, s.step_med, s.compute, s.comm, s.exposed, s.overlap);
    cs_jw_key(w, "step");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    key_num(w, "median_ns", s.step_med);
    key_num(w, "min_ns", s.step_min);
    key_num(w, "max_ns", s.step_max);
    key_num(w, "mean_ns", s.step_mean);
    key_num(w, "stddev_ns", s.step_sd);
    key_num(w, "predicted_ns", st ? st->makespan_ns : NAN);
    key_num(w, "error_pct", err_pct(s.step_med, st ? st->makespan_ns : NAN));
    cs_jw_key(w, "per_iteration_ns");
    cs_jw_array(w);
    for (uint32_t it = 0; it < m->iters; it++)
        cs_jw_number_g_or_null(w, s.step_it[it], CS_REPORT_PRECISION);
    cs_jw_end(w);
    cs_jw_end(w);
    cs_jw_key(w, "prediction");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_string(w, "source", prediction_source(m, p));
    cs_jw_key_string(w, "device", p ? p->device : NULL);
    cs_jw_key(w, "totals");
    if (st) {
        jw_totals(w, st->makespan_ns, st->compute_ns, st->comm_ns,
                  st->exposed_ns, st->overlap);
        key_num(w, "lower_bound_ns", st->lower_bound_ns);
    } else {
        cs_jw_null(w);
    }
    cs_jw_end(w);
    cs_jw_key(w, "memory");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key_int(w, "peak", s.peak);
    cs_jw_key(w, "per_rank");
    cs_jw_array(w);
    for (uint32_t r = 0; r < m->ranks; r++)
        cs_jw_int(w, m->peak_live[r]);
    cs_jw_end(w);
    key_num(w, "model_peak_step",
            st ? round((double)st->peak_memory_step * o->size_scale) : NAN);
    key_num(w, "model_peak_simulated",
            st ? round((double)st->peak_memory * o->size_scale) : NAN);
    cs_jw_key(w, "pool_peak");
    if (m->pool_peak)
        cs_jw_int(w, max_pool_peak(m));
    else
        cs_jw_null(w);
    cs_jw_key_int(w, "uncounted_inputs", m->other_bytes);
    cs_jw_end(w);
    cs_jw_key(w, "check");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key(w, "enabled");
    cs_jw_bool(w, o->check);
    cs_jw_key(w, "verified");
    cs_jw_uint(w, m->checked);
    cs_jw_key(w, "mismatches");
    cs_jw_uint(w, m->mismatches);
    cs_jw_key_string(w, "first_mismatch",
                     m->first_mismatch[0] ? m->first_mismatch : NULL);
    cs_jw_end(w);
    rows_begin(w, "ranks");
    for (uint32_t r = 0; r < m->ranks; r++) {
        const double *t = s.rank_tot + (size_t)r * 5;
        row_begin(w);
        cs_jw_key_int(w, "rank", r);
        cs_jw_key(w, "totals");
        jw_totals(w, t[0], t[1], t[2], t[3], t[4]);
        cs_jw_key_int(w, "peak_memory", m->peak_live[r]);
        cs_jw_end(w);
    }
    cs_jw_end(w);
    /* Per node, in the executed order: the median (over iterations) of the
     * rank-mean issue time and duration. */
    rows_begin(w, "nodes");
    for (uint32_t k = 0; k < m->nodes && !w->error; k++) {
        uint32_t v = m->order[k];
        const cs_node *nd = &g->nodes[v];
        row_begin(w);
        cs_jw_key_string(w, "name", nd->name);
        cs_jw_key_string(
            w, "kind", commsched_node_kind_str((commsched_node_kind)nd->kind));
        key_num(w, "start_ns", fmax(0, s.issue[v]));
        key_num(w, "end_ns", fmax(0, s.issue[v]) + fmax(0, s.dur[v]));
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            key_num(w, "issue_ns", fmax(0, s.issue[v]));
            key_num(w, "exposed_ns", s.exposed_node[v]);
        }
        cs_jw_end(w);
    }
    cs_jw_end(w);
    rows_begin(w, "collectives");
    for (uint32_t k = 0; k < m->nodes && !w->error; k++) {
        uint32_t v = m->order[k];
        const cs_node *nd = &g->nodes[v];
        if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        row_begin(w);
        cs_jw_key_string(w, "name", nd->name);
        cs_jw_key_string(w, "op", nd->op);
        cs_jw_key_string(w, "group", g->groups[nd->group].name);
        cs_jw_key(w, "sync");
        cs_jw_bool(w, nd->is_sync);
        key_num(w, "bytes",
                round(commsched_cost_collective_bytes(g, v) * o->size_scale));
        key_num(w, "issue_ns", fmax(0, s.issue[v]));
        key_num(w, "start_ns", fmax(0, s.issue[v]));
        key_num(w, "end_ns", fmax(0, s.issue[v]) + fmax(0, s.dur[v]));
        key_num(w, "measured_ns", s.dur[v]);
        key_num(w, "exposed_ns", s.exposed_node[v]);
        key_num(w, "solo_ns", m->solo_ns ? m->solo_ns[v] : NAN);
        key_num(w, "skew_ns", m->skew_ns ? m->skew_ns[v] : NAN);
        key_num(w, "wake_ns", m->wake_ns ? m->wake_ns[v] : NAN);
        double pred = sn ? sn[v].end_ns - sn[v].issue_ns : NAN;
        key_num(w, "predicted_ns", pred);
        key_num(w, "error_pct", err_pct(s.dur[v], pred));
        key_num(w, "predicted_exposed_ns", sn ? sn[v].exposed_ns : NAN);
        cs_jw_end(w);
    }
    cs_jw_end(w);
    key_num(w, "wall_s", m->wall_s);
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    summary_free(&s);
    return cs_report_finish(w, "report", err);
}

/* ---- trace ---------------------------------------------------------------------------- */

/* Names and orders a process (is_process) or one of its threads. */
static void tr_meta(cs_jw *w, int pid, int tid, int is_process,
                    const char *name, int sort)
{
    cs_trace_name(w, is_process ? "process_name" : "thread_name", pid, tid,
                  name);
    cs_trace_sort_index(w,
                        is_process ? "process_sort_index"
                                   : "thread_sort_index",
                        pid, tid, sort);
}

static void tr_slice(cs_jw *w, int pid, int tid, const char *name,
                     const char *cat, double ts_ns, double dur_ns,
                     const cs_node *nd, const commsched_graph *g,
                     uint32_t iter)
{
    cs_trace_slice_begin(w, name, cat, pid, tid, ts_ns, fmax(0, dur_ns));
    cs_jw_key_string(w, "op", nd->op);
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE)
        cs_jw_key_string(w, "group", g->groups[nd->group].name);
    cs_jw_key_int(w, "iteration", iter);
    key_num(w, "dur_ns", dur_ns);
    cs_trace_slice_end(w);
}

static const char *cat_of(const cs_node *nd)
{
    if (nd->kind == COMMSCHED_NODE_COMPUTE)
        return "compute";
    if (nd->kind == COMMSCHED_NODE_WAIT)
        return "wait";
    return nd->is_sync ? "sync collective" : "collective";
}

commsched_status commsched_run_report_trace(FILE *out,
                                            const commsched_measurement *m,
                                            const commsched_run_prediction *p,
                                            commsched_error *err)
{
    const commsched_graph *g = m->graph;
    summary s;
    if (summarize(m, &s) != 0)
        return oom(err);
    uint32_t R = m->ranks, n = m->nodes;
    const commsched_sim *sim = p ? p->sim : NULL;
    cs_jw *w = cs_trace_begin(out, "commsched-run-trace", err);
    if (!w) {
        summary_free(&s);
        return COMMSCHED_ENOMEM;
    }
    cs_jw_key_string(w, "graph", g->name);
    cs_jw_key_int(w, "ranks", R);
    cs_jw_key_int(w, "iterations", m->iters);
    key_num(w, "step_median_ns", s.step_med);
    cs_trace_events(w);
    char label[64];
    uint32_t procs = R + (sim ? 1u : 0u);
    for (uint32_t r = 0; r < procs; r++) {
        int pid = (int)r + 1;
        if (r < R)
            snprintf(label, sizeof label, "rank %u", r);
        else
            snprintf(label, sizeof label, "predicted (simulator)");
        tr_meta(w, pid, 0, 1, label, (int)r);
        tr_meta(w, pid, 0, 0, "compute", 0);
        for (uint32_t gi = 0; gi < g->n_groups; gi++) {
            cs_utf8_trim(label, sizeof label,
                         snprintf(label, sizeof label, "comm %s",
                                  g->groups[gi].name));
            tr_meta(w, pid, (int)gi + 1, 0, label, (int)gi + 1);
        }
    }
    /* Iterations end to end, a small gap apart, whatever the ranks' clocks
     * say (each iteration's times are relative to its own start). */
    double gap = s.step_med * 0.02, offset = 0;
    for (uint32_t it = 0; it < m->iters && !w->error; it++) {
        for (uint32_t r = 0; r < R; r++) {
            size_t base = ((size_t)it * R + r) * n;
            int pid = (int)r + 1;
            for (uint32_t v = 0; v < n; v++) {
                const cs_node *nd = &g->nodes[v];
                /* A collective's slice starts when it was handed to MPI:
                 * queueing behind its stream shows as a gap. */
                double s0 = nd->kind == COMMSCHED_NODE_COLLECTIVE && m->post_ns
                                ? m->post_ns[base + v]
                                : m->start_ns[base + v];
                double t0 = offset + s0;
                double d = m->end_ns[base + v] - s0;
                int tid = nd->kind == COMMSCHED_NODE_COLLECTIVE ? (int)nd->group + 1 : 0;
                tr_slice(w, pid, tid, nd->name, cat_of(nd), t0, d, nd, g, it);
                if (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync)
                    tr_slice(w, pid, 0, nd->name, cat_of(nd), t0, d, nd, g, it);
                if (nd->kind != COMMSCHED_NODE_WAIT)
                    continue;
                for (uint32_t i = s.wc_off[v]; i < s.wc_off[v + 1]; i++) {
                    uint32_t c = s.wc[i];
                    uint64_t id = ((uint64_t)(it * R + r) * n + c) + 1;
                    double cs = offset + (m->post_ns ? m->post_ns[base + c]
                                                     : m->start_ns[base + c]),
                           ce = offset + m->end_ns[base + c];
                    cs_trace_flow(w, "completes", "flow", 's', id, pid,
                                  (int)g->nodes[c].group + 1, (cs + ce) / 2,
                                  0);
                    cs_trace_flow(w, "completes", "flow", 'f', id, pid, 0,
                                  (t0 + t0 + fmax(d, 0)) / 2, 1);
                }
            }
        }
        offset += s.step_it[it] + gap;
    }
    if (sim) {
        const commsched_sim_node *sn = commsched_sim_get_nodes(sim);
        int pid = (int)R + 1;
        for (uint32_t v = 0; v < n; v++) {
            const cs_node *nd = &g->nodes[v];
            int tid = nd->kind == COMMSCHED_NODE_COLLECTIVE ? (int)nd->group + 1 : 0;
            double t0 = nd->kind == COMMSCHED_NODE_WAIT ? sn[v].issue_ns : sn[v].start_ns;
            tr_slice(w, pid, tid, nd->name, cat_of(nd), t0, sn[v].end_ns - t0,
                     nd, g, 0);
            if (nd->kind == COMMSCHED_NODE_COLLECTIVE && nd->is_sync)
                tr_slice(w, pid, 0, nd->name, cat_of(nd), t0,
                         sn[v].end_ns - t0, nd, g, 0);
        }
    }
    summary_free(&s);
    return cs_trace_end(w, err);
}
