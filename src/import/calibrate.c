/* commsched calibrate — measured costs from Kineto traces (commsched/
 * import.h, docs/COST.md "Measured costs").
 *
 * Samples. Every GPU event the Kineto importer keeps (the same scope:
 * HTA's, every profiler step but the last) is one sample, unless it was
 * launched in the step left out: a compute kernel, memcpy or memset by
 * its name's key and its position in its step; a NCCL kernel with a size as a collective of its op and
 * group (the kernel's own "Group size", else the importer's ranks).
 *
 * Several ranks of one run. The k-th collective a rank launches in a
 * profiler step is the k-th on every rank (the step is SPMD), so the
 * traces' collectives are matched by (step name, k). A rank that arrives
 * early waits inside the kernel for the last one; every rank leaves
 * together. So the time the collective itself takes, without the wait
 * for peers, is the shortest of the ranks' durations: the last arrival's.
 * A sample is taken for each matched collective, not one per rank.
 *
 * The roofline. Where the trace recorded shapes (record_shapes=True), a
 * matmul kernel's flops come from the op that launched it; their flops
 * over their time, and device-to-device copies' bytes over theirs, price
 * the compute nodes no table knows (a compiled graph's, by their flops and
 * bytes). Sums, not a median of rates: a kernel too small to fill the GPU
 * is as common as one that does, and what a step's time is made of is
 * the total work at the rate the total ran. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/import.h"
#include "commsched/simulate.h"
#include "kineto.h"

void commsched_calibrate_options_init(commsched_calibrate_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    commsched_import_options_init(&o->import);
    o->exclude_step = -1;
}

typedef struct coll_sample {
    const char *step; /* its step's name ("" outside every step) */
    size_t seq;       /* its position among the step's collectives */
    size_t trace;
    int op;
    int64_t bytes;
    long ranks;
    double ns;
} coll_sample;

static int cmp_coll(const void *a, const void *b)
{
    const coll_sample *x = a, *y = b;
    int c = strcmp(x->step, y->step);
    if (c)
        return c;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->trace < y->trace ? -1 : x->trace > y->trace;
}

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

/* Achieved rates (flop/s of matmuls, bytes/s of device copies), for the
 * roofline: the work over the time, summed. */
typedef struct rates {
    double work, ns;
    uint32_t n;
} rates;

static void rate_add(rates *r, double work, double ns)
{
    r->work += work;
    r->ns += ns;
    r->n++;
}

static double rate_of(const rates *r)
{
    return r->ns > 0 ? r->work / r->ns * 1e9 : 0;
}

typedef struct samples {
    coll_sample *cs;
    size_t n_cs, cap_cs;
    rates flops, bytes;
} samples;

/* One trace's samples: kernels straight into c, collectives and rates
 * into *sm, each kernel with its position in its step. */
static commsched_status read_trace(const commsched_kineto *t, size_t trace,
                                   const commsched_calibrate_options *o,
                                   commsched_costs *c, samples *sm,
                                   commsched_calibrate_stats *st,
                                   commsched_error *err)
{
    coll_sample **cs = &sm->cs;
    size_t *n_cs = &sm->n_cs, *cap_cs = &sm->cap_cs;
    const kineto *k = kineto_of_handle(t);
    size_t n = kineto_event_count(k), steps = kineto_step_count(k);
    /* per step ([steps]: outside every step): collectives so far, and
     * events so far (a kernel's position, as the graph of one step names
     * its nodes) */
    size_t *seq = calloc(2 * (steps + 1), sizeof *seq);
    if (!seq)
        return oom(err);
    size_t *pos = seq + steps + 1;
    long world = kineto_ranks(k, &o->import);
    commsched_status s = COMMSCHED_OK;
    for (size_t i = 0; i < n && s == COMMSCHED_OK; i++) {
        kineto_event e = kineto_event_at(k, i);
        if (o->exclude_step >= 0 && e.step == o->exclude_step)
            continue;
        double ns = e.dur_us * 1e3;
        size_t slot = e.step >= 0 ? (size_t)e.step : steps;
        size_t at = pos[slot]++;
        if (e.coll < 0) {
            s = commsched_costs_add_kernel(c, e.name,
                                           e.step >= 0 ? (long)at : -1, ns,
                                           err);
            st->kernel_samples += s == COMMSCHED_OK;
            if (s == COMMSCHED_OK && e.flops > 0)
                rate_add(&sm->flops, e.flops, ns);
            if (s == COMMSCHED_OK && e.mem_bytes > 0)
                rate_add(&sm->bytes, e.mem_bytes, ns);
            continue;
        }
        size_t nth = seq[slot]++;
        if (e.bytes <= 0) {
            /* no size to fit a line to: by its place in the step, as a
             * kernel is (what the cost model looks up for a collective
             * its size table cannot price) */
            st->unsized++;
            if (e.step >= 0)
                s = commsched_costs_add_kernel(c, e.name, (long)at, ns, err);
            continue;
        }
        if (*n_cs == *cap_cs) {
            size_t nc = *cap_cs ? 2 * *cap_cs : 64;
            coll_sample *p = realloc(*cs, nc * sizeof *p);
            if (!p) {
                s = oom(err);
                break;
            }
            *cs = p;
            *cap_cs = nc;
        }
        const char *step = kineto_step_name(k, e.step);
        (*cs)[(*n_cs)++] = (coll_sample){step ? step : "", nth, trace,
                                         e.coll, e.bytes,
                                         e.group_size > 0 ? e.group_size
                                                          : world,
                                         ns};
    }
    if (steps > st->steps)
        st->steps = steps;
    free(seq);
    return s;
}

/* Matched collectives (equal step name and position) into c: the
 * shortest duration of those that agree on op, size and group with the
 * first trace's. */
static commsched_status add_collectives(commsched_costs *c, coll_sample *cs,
                                        size_t n, size_t traces,
                                        commsched_calibrate_stats *st,
                                        commsched_error *err)
{
    if (n > 1)
        qsort(cs, n, sizeof *cs, cmp_coll);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        double ns = cs[i].ns;
        while (j < n && strcmp(cs[j].step, cs[i].step) == 0 &&
               cs[j].seq == cs[i].seq) {
            if (cs[j].op == cs[i].op && cs[j].bytes == cs[i].bytes &&
                cs[j].ranks == cs[i].ranks) {
                if (cs[j].ns < ns)
                    ns = cs[j].ns;
            } else {
                st->mismatched++;
            }
            j++;
        }
        if (traces > 1 && j - i == traces)
            st->matched++;
        commsched_status s = commsched_costs_add_collective(
            c, (commsched_coll_op)cs[i].op, (uint32_t)cs[i].ranks,
            (double)cs[i].bytes, ns, err);
        if (s != COMMSCHED_OK)
            return s;
        st->collective_samples++;
        i = j;
    }
    return COMMSCHED_OK;
}

commsched_status commsched_calibrate(const char *const *paths, size_t n,
                                     const commsched_calibrate_options *opts,
                                     commsched_costs **out,
                                     commsched_calibrate_stats *stats,
                                     commsched_error *err)
{
    commsched_calibrate_options def;
    const commsched_calibrate_options *o = opts;
    if (!o) {
        commsched_calibrate_options_init(&def);
        o = &def;
    }
    commsched_calibrate_stats st = {0};
    if (!out || !paths || n == 0)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no trace to calibrate from");
    *out = NULL;
    commsched_costs *c = NULL;
    commsched_kineto **t = calloc(n, sizeof *t);
    samples sm = {0};
    commsched_status s = t ? commsched_costs_create(&c, err) : oom(err);
    /* All traces stay open while their collectives are matched: the step
     * names are borrowed from them. */
    for (size_t i = 0; i < n && s == COMMSCHED_OK; i++)
        if ((s = commsched_kineto_open(paths[i], &o->import, &t[i], err)) ==
            COMMSCHED_OK)
            s = read_trace(t[i], i, o, c, &sm, &st, err);
    st.traces = n;
    if (s == COMMSCHED_OK)
        s = add_collectives(c, sm.cs, sm.n_cs, n, &st, err);
    if (s == COMMSCHED_OK) {
        commsched_costs_roofline roof = {rate_of(&sm.flops),
                                         rate_of(&sm.bytes), sm.flops.n,
                                         sm.bytes.n};
        s = commsched_costs_set_roofline(c, &roof, err);
    }
    if (s == COMMSCHED_OK)
        s = commsched_costs_fit(c, err);
    for (size_t i = 0; t && i < n; i++)
        commsched_kineto_destroy(t[i]);
    free(t);
    free(sm.cs);
    if (s != COMMSCHED_OK) {
        commsched_costs_destroy(c);
        return s;
    }
    if (stats)
        *stats = st;
    *out = c;
    return COMMSCHED_OK;
}

/* ---- validation on a held-out step --------------------------------------- */

/* Runtimes of g's nodes: collectives from `coll`, every other node from
 * `rest`; *priced counts the nodes whose source is not NONE under them. */
static commsched_status price(const commsched_graph *g,
                              const commsched_cost_options *coll,
                              const commsched_cost_options *rest, double *ns,
                              uint32_t *from, commsched_error *err)
{
    uint32_t n = commsched_graph_node_count(g);
    for (uint32_t i = 0; i < n; i++) {
        commsched_node_cost nc;
        const commsched_cost_options *o =
            commsched_graph_node_kind(g, i) == COMMSCHED_NODE_COLLECTIVE
                ? coll
                : rest;
        commsched_status s = commsched_cost_node(g, i, o, NULL, &nc, err);
        if (s != COMMSCHED_OK)
            return s;
        ns[i] = nc.runtime_ns;
        if (from)
            from[nc.source]++;
    }
    return COMMSCHED_OK;
}

static commsched_status makespan(commsched_sim *sim, const double *ns,
                                 double *out, commsched_error *err)
{
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags = 0;
    commsched_status s = commsched_sim_run(sim, NULL, ns, &so, err);
    if (s == COMMSCHED_OK)
        *out = commsched_sim_get_totals(sim)->makespan_ns;
    return s;
}

commsched_status commsched_calibrate_check(
    const char *path, long step, const commsched_import_options *io,
    const commsched_cost_options *costs,
    const commsched_device *const *baselines, size_t n_baselines,
    commsched_calibrate_result *out, commsched_error *err)
{
    memset(out, 0, sizeof *out);
    if (!path || !costs || step < 0 || n_baselines > COMMSCHED_CALIBRATE_BASELINES)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a trace, cost options, a step >= 0 "
                                   "and at most %d baselines are needed",
                                   COMMSCHED_CALIBRATE_BASELINES);
    commsched_import_options o;
    if (io)
        o = *io;
    else
        commsched_import_options_init(&o);
    o.step = step;
    commsched_kineto *t = NULL;
    commsched_graph *g = NULL;
    commsched_sim *sim = NULL;
    double *ns = NULL;
    commsched_status s = commsched_kineto_open(path, &o, &t, err);
    if (s == COMMSCHED_OK)
        s = commsched_kineto_graph(t, &o, &g, err);
    if (s == COMMSCHED_OK)
        s = commsched_sim_create(g, &sim, err);
    uint32_t n = g ? commsched_graph_node_count(g) : 0;
    if (s == COMMSCHED_OK && !(ns = malloc((n ? n : 1) * sizeof *ns)))
        s = oom(err);
    if (s == COMMSCHED_OK) {
        const kineto *k = kineto_of_handle(t);
        double lo = INFINITY, hi = -INFINITY, flops = 0;
        commsched_costs_roofline roof;
        commsched_costs_get_roofline(costs->measured, &roof);
        for (size_t i = 0; i < kineto_event_count(k); i++) {
            kineto_event e = kineto_event_at(k, i);
            lo = fmin(lo, e.ts_us);
            hi = fmax(hi, e.ts_us + e.dur_us);
            if (e.flops > 0 && roof.flops_per_s > 0) {
                out->matmuls++;
                out->matmul_ns += e.dur_us * 1e3;
                flops += e.flops;
            }
        }
        out->matmul_roofline_ns =
            roof.flops_per_s > 0 ? flops / roof.flops_per_s * 1e9 : 0;
        out->step = step;
        out->nodes = n;
        for (uint32_t i = 0; i < n; i++)
            out->waits += commsched_graph_node_kind(g, i) == COMMSCHED_NODE_WAIT;
        out->measured_ns = (hi - lo) * 1e3;
        snprintf(out->step_name, sizeof out->step_name, "%s",
                 kineto_step_name(k, step));
    }
    /* replay: the trace's own durations */
    commsched_cost_options own = *costs;
    own.measured = NULL;
    own.ignore_runtime = 0;
    if (s == COMMSCHED_OK &&
        (s = price(g, &own, &own, ns, NULL, err)) == COMMSCHED_OK)
        s = makespan(sim, ns, &out->replay_ns, err);
    /* predicted: the calibrated tables, none of the step's own durations */
    commsched_cost_options pred = *costs;
    pred.ignore_runtime = 1;
    uint32_t from[COMMSCHED_SOURCE_COUNT] = {0};
    if (s == COMMSCHED_OK &&
        (s = price(g, &pred, &pred, ns, from, err)) == COMMSCHED_OK)
        s = makespan(sim, ns, &out->predicted_ns, err);
    out->from_measured = from[COMMSCHED_SOURCE_MEASURED];
    out->from_fitted = from[COMMSCHED_SOURCE_FITTED];
    out->from_model = from[COMMSCHED_SOURCE_MODEL];
    out->unpriced = from[COMMSCHED_SOURCE_NONE];
    /* baselines: the same compute, collectives from an analytical
     * profile alone */
    for (size_t b = 0; b < n_baselines && s == COMMSCHED_OK; b++) {
        commsched_cost_options an = pred;
        an.device = baselines[b];
        an.measured = NULL;
        if ((s = price(g, &an, &pred, ns, NULL, err)) == COMMSCHED_OK)
            s = makespan(sim, ns, &out->baseline_ns[b], err);
    }
    out->n_baselines = n_baselines;
    free(ns);
    commsched_sim_destroy(sim);
    commsched_graph_destroy(g);
    commsched_kineto_destroy(t);
    return s;
}
