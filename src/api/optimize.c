/* commsched — the one-call API for compilers (commsched/commsched.h):
 * options as key/value text, commsched_optimize, and the result accessors.
 *
 * Design: commsched_optimize never writes to the caller's graph, so a graph
 * may be optimized from several threads at once. The only part of a graph
 * a pass changes is its fake-edge table (decide_global_ordering_of_comms and
 * commsched_graph_drop_violated_fake_edges replace g->after_fake and
 * g->fake_users through cs_graph_set_fake_edges; nothing else is written).
 * So the result holds a *view*: a struct copy of the graph that shares every
 * array with the caller's graph; its two fake-edge tables are borrowed
 * (fake_borrowed) until a pass replaces them, and then the view's own.
 * The pipeline runs on the view; freeing the result frees only tables the
 * view owns. This costs O(1) instead of a deep copy (a copy of the two
 * tables was 8 B a node at the passes' peak).
 *
 * Invariant: the view's shared arrays are never written or freed, and
 * commsched_graph_destroy is never called on it. The pipeline runs through
 * commsched_pipeline_apply, which never destroys the graph it is given: a
 * rewriting pass (bucketing) builds a new graph that the run owns, and the
 * result keeps the run, so the final graph lives as long as the result.
 *
 * No igraph call is reachable from here (cost model, schedule, passes,
 * simulator), and there is no global state: everything lives in the
 * options and the result.
 */
#include "commsched/commsched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "optimize_internal.h"
#include "util.h"

/* ---- options --------------------------------------------------------------- */

struct commsched_optimize_options {
    char *passes; /* NULL: the default pipeline */
    commsched_device device;
    commsched_costs *file_costs;      /* a "device" file's tables (owned) */
    const commsched_costs *measured;  /* what prices: file_costs or borrowed */
    int measured_first;
    commsched_comm_model comm_model;
    commsched_comm_streams comm_streams;
    unsigned pipeline_flags;
    commsched_knobs *knobs;
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

commsched_status commsched_optimize_options_create(
    commsched_optimize_options **out, commsched_error *err)
{
    *out = NULL;
    commsched_optimize_options *o = cs_calloc(1, sizeof *o);
    if (!o)
        return oom(err);
    commsched_status st = commsched_knobs_create(&o->knobs, err);
    if (st != COMMSCHED_OK) {
        free(o);
        return st;
    }
    o->device = *commsched_device_builtin("h100");
    o->comm_model = COMMSCHED_COMM_MODEL_NCCL;
    o->comm_streams = COMMSCHED_STREAMS_PER_GROUP;
    *out = o;
    return COMMSCHED_OK;
}

void commsched_optimize_options_destroy(commsched_optimize_options *o)
{
    if (!o)
        return;
    commsched_knobs_destroy(o->knobs);
    commsched_costs_destroy(o->file_costs);
    free(o->passes);
    free(o);
}

/* Every comma-separated name in `list` is a pass (or "none", or empty);
 * the pipeline's own message, under the option's key. */
static commsched_status check_passes(const char *list, commsched_error *err)
{
    commsched_error local = {0};
    commsched_status st = commsched_pipeline_check(list, &local);
    if (st != COMMSCHED_OK)
        return commsched_error_set(err, st, "passes", "%s", local.text);
    return COMMSCHED_OK;
}

static commsched_status bad_bool(const char *key, const char *value,
                                 commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_EINVAL, key,
                               "bad value \"%s\" (expected true or false)",
                               value);
}

static int parse_bool(const char *v, int *out)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = 1;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = 0;
    else
        return -1;
    return 0;
}

/* The knob's index in the knob table, or SIZE_MAX. */
static size_t find_knob(const char *key)
{
    for (size_t i = 0; i < commsched_knob_count(); i++)
        if (strcmp(commsched_knob_name(i), key) == 0)
            return i;
    return SIZE_MAX;
}

static commsched_status set_knob(commsched_optimize_options *o, size_t i,
                                 const char *key, const char *value,
                                 commsched_error *err)
{
    commsched_error local = {0};
    if (commsched_knobs_set(o->knobs, key, value, &local) == COMMSCHED_OK)
        return COMMSCHED_OK;
    if (local.status != COMMSCHED_EINVAL)
        return commsched_error_set(err, local.status, key, "%s", local.text);
    /* The knob table's own message is worded for the CLI's --set. */
    char expected[160];
    return commsched_error_set(err, COMMSCHED_EINVAL, key,
                               "bad value \"%s\" (expected %s)", value,
                               commsched_knob_accepts(i, expected,
                                                      sizeof expected));
}

commsched_status commsched_optimize_options_set(commsched_optimize_options *o,
                                                const char *key,
                                                const char *value,
                                                commsched_error *err)
{
    if (!o || !key || !value)
        return commsched_error_set(err, COMMSCHED_EINVAL, key,
                                   "options, key and value must not be NULL");
    if (strcmp(key, "passes") == 0) {
        char *copy = NULL;
        if (strcmp(value, "default") != 0) {
            commsched_status st = check_passes(value, err);
            if (st != COMMSCHED_OK)
                return st;
            if (!(copy = dup_string(value)))
                return oom(err);
        }
        free(o->passes);
        o->passes = copy;
        return COMMSCHED_OK;
    }
    if (strcmp(key, "device") == 0) {
        commsched_device d;
        commsched_costs *c = NULL;
        commsched_error local = {0};
        if (commsched_device_lookup(value, &d, &local) != COMMSCHED_OK ||
            commsched_costs_load_file(value, &c, &local) != COMMSCHED_OK) {
            /* Keep a file's own place (line:column or a field path). */
            if (err && err->status == COMMSCHED_OK) {
                *err = local;
                if (!local.path[0] && local.line == 0)
                    snprintf(err->path, sizeof err->path, "device");
            }
            return local.status;
        }
        o->device = d;
        commsched_costs_destroy(o->file_costs);
        o->file_costs = c;
        o->measured = c;
        return COMMSCHED_OK;
    }
    if (strcmp(key, "cost_model") == 0) {
        if (commsched_comm_model_parse(value, &o->comm_model) != 0)
            return commsched_error_set(err, COMMSCHED_EINVAL, key,
                                       "bad value \"%s\" (expected nccl or "
                                       "inductor)",
                                       value);
        return COMMSCHED_OK;
    }
    if (strcmp(key, "comm_streams") == 0) {
        if (strcmp(value, "per_group") == 0)
            o->comm_streams = COMMSCHED_STREAMS_PER_GROUP;
        else if (strcmp(value, "single") == 0)
            o->comm_streams = COMMSCHED_STREAMS_SINGLE;
        else
            return commsched_error_set(err, COMMSCHED_EINVAL, key,
                                       "bad value \"%s\" (expected per_group "
                                       "or single)",
                                       value);
        return COMMSCHED_OK;
    }
    int on;
    if (strcmp(key, "measured_first") == 0) {
        if (parse_bool(value, &on) != 0)
            return bad_bool(key, value, err);
        o->measured_first = on;
        return COMMSCHED_OK;
    }
    if (strcmp(key, "verify") == 0) {
        if (parse_bool(value, &on) != 0)
            return bad_bool(key, value, err);
        if (on)
            o->pipeline_flags |= COMMSCHED_PIPELINE_VERIFY;
        else
            o->pipeline_flags &= ~COMMSCHED_PIPELINE_VERIFY;
        return COMMSCHED_OK;
    }
    size_t k = find_knob(key);
    if (k != SIZE_MAX)
        return set_knob(o, k, key, value, err);
    return commsched_error_set(err, COMMSCHED_EINVAL, key,
                               "unknown option (expected passes, device, "
                               "cost_model, comm_streams, measured_first, "
                               "verify or a knob; "
                               "commsched optimize --list-passes lists the "
                               "knobs)");
}

commsched_status commsched_optimize_options_set_device(
    commsched_optimize_options *o, const commsched_device *device,
    commsched_error *err)
{
    if (!o || !device)
        return commsched_error_set(err, COMMSCHED_EINVAL, "device",
                                   "options and device must not be NULL");
    commsched_status st = commsched_device_check(device, err);
    if (st == COMMSCHED_OK)
        o->device = *device;
    return st;
}

void commsched_optimize_options_set_costs(commsched_optimize_options *o,
                                          const commsched_costs *measured,
                                          int first)
{
    commsched_costs_destroy(o->file_costs);
    o->file_costs = NULL;
    o->measured = measured;
    o->measured_first = first;
}

/* ---- the result ------------------------------------------------------------ */

struct commsched_result {
    commsched_graph view;  /* see the file comment: shares g's arrays;
                              after_fake and fake_users too until a pass
                              replaces them (fake_borrowed) */
    const commsched_graph *graph; /* the final graph the order indexes:
                              &view, or one a rewriting pass built (owned
                              by run) */
    char *passes;          /* what ran */
    uint32_t n;            /* node count of graph */
    uint32_t *order;       /* n node indices of graph */
    double *runtime;       /* g's runtimes, by g's node index */
    const double *final_runtime; /* graph's: runtime, or the run's */
    commsched_run *run;
    commsched_sim_totals before, after;
};

void commsched_result_destroy(commsched_result *r)
{
    if (!r)
        return;
    /* Only the tables the view owns (none before the view is made: r is
     * zeroed); everything else is g's. */
    cs_graph_view_release(&r->view);
    commsched_run_destroy(r->run);
    free(r->passes);
    free(r->order);
    free(r->runtime);
    free(r);
}

/* Simulates `order` (NULL: the graph's own) of graph g into *out. A sim of
 * its own each time: a sim may cache the graph's edge tables, and the
 * pipeline replaces the view's fake-edge tables in between. */
static commsched_status simulate(const commsched_graph *g, const uint32_t *order,
                                 const double *runtime,
                                 commsched_comm_streams streams,
                                 unsigned flags, commsched_sim_totals *out,
                                 commsched_error *err)
{
    commsched_sim *sim = NULL;
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.comm_streams = streams;
    so.flags |= COMMSCHED_SIM_MEMORY | flags;
    commsched_status st = commsched_sim_create(g, &sim, err);
    if (st == COMMSCHED_OK)
        st = commsched_sim_run(sim, order, runtime, &so, err);
    if (st == COMMSCHED_OK)
        *out = *commsched_sim_get_totals(sim);
    commsched_sim_destroy(sim);
    return st;
}

commsched_status commsched_optimize_schedule(
    commsched_graph **g, commsched_schedule **s, const double *runtime_ns,
    const commsched_cost_options *cost, const char *passes,
    const commsched_knobs *k, unsigned flags, commsched_run **out,
    uint32_t *n_dropped, const char ***dropped, commsched_error *err)
{
    commsched_graph *g0 = g ? *g : NULL;
    commsched_schedule *s0 = s ? *s : NULL;
    uint32_t n = 0;
    if (n_dropped)
        *n_dropped = 0;
    if (dropped)
        *dropped = NULL;
    commsched_status st = commsched_pipeline_apply(g, s, runtime_ns, cost,
                                                   passes, k, flags, out, err);
    if (st != COMMSCHED_OK)
        return st;
    if ((st = commsched_schedule_check(*s, 0, err)) == COMMSCHED_OK &&
        (st = commsched_graph_drop_violated_fake_edges(*g, *s, &n, dropped,
                                                       err)) == COMMSCHED_OK) {
        if (n_dropped)
            *n_dropped = n;
        return COMMSCHED_OK;
    }
    /* As commsched_pipeline_apply fails: the caller's pair back, no run. */
    commsched_run_destroy(*out);
    *out = NULL;
    *g = g0;
    *s = s0;
    return st;
}

commsched_status commsched_optimize(const commsched_graph *g,
                                    const commsched_optimize_options *o,
                                    commsched_result **out,
                                    commsched_error *err)
{
    return cs_optimize_given(g, o, NULL, NULL, out, err);
}

commsched_status cs_optimize_given(const commsched_graph *g,
                                   const commsched_optimize_options *o,
                                   const double *runtime,
                                   const commsched_sim_totals *before,
                                   commsched_result **out,
                                   commsched_error *err)
{
    commsched_optimize_options *defaults = NULL;
    commsched_schedule *s = NULL;
    commsched_result *r = NULL;
    commsched_status st;
    uint32_t dropped = 0;

    if (!out)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "out must not be NULL");
    *out = NULL;
    if (!g)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "graph must not be NULL");
    if (!o) {
        if ((st = commsched_optimize_options_create(&defaults, err)) !=
            COMMSCHED_OK)
            return st;
        o = defaults;
    }
    const char *passes = o->passes ? o->passes : commsched_default_pipeline();
    commsched_cost_options cost;
    commsched_cost_options_init(&cost);
    cost.device = &o->device;
    cost.comm_model = o->comm_model;
    cost.measured = o->measured;
    cost.measured_first = o->measured_first;

    r = cs_calloc(1, sizeof *r);
    if (!r) {
        st = oom(err);
        goto cleanup;
    }
    r->passes = dup_string(passes);
    r->runtime = cs_malloc_array(g->n_nodes ? g->n_nodes : 1,
                                 sizeof *r->runtime);
    if (!r->passes || !r->runtime) {
        st = oom(err);
        goto cleanup;
    }
    cs_graph_view_init(&r->view, g);
    if (runtime && before) {
        memcpy(r->runtime, runtime, (size_t)g->n_nodes * sizeof *r->runtime);
        r->before = *before;
    } else if ((st = commsched_cost_graph(g, &cost, r->runtime, NULL, err)) !=
                   COMMSCHED_OK ||
               (st = simulate(g, NULL, r->runtime, o->comm_streams,
                              COMMSCHED_SIM_BOUND, &r->before, err)) !=
                   COMMSCHED_OK)
        goto cleanup;
    if ((st = commsched_schedule_create(&r->view, NULL, &s, err)) !=
        COMMSCHED_OK)
        goto cleanup;
    /* A rewriting pass (bucketing) leaves a new graph and schedule in
     * gw/sw, owned by the run; otherwise they are the view and s. Nodes a
     * rewrite creates are priced with the options' cost model. */
    commsched_graph *gw = &r->view;
    commsched_schedule *sw = s;
    if ((st = commsched_optimize_schedule(&gw, &sw, r->runtime, &cost, passes,
                                          o->knobs, o->pipeline_flags,
                                          &r->run, &dropped, NULL, err)) !=
        COMMSCHED_OK)
        goto cleanup;
    r->graph = gw;
    r->n = gw->n_nodes;
    r->final_runtime = commsched_run_runtime_ns(r->run);
    /* No rewrite and the same runtimes: the input's stream bound holds
     * (it ignores the fake edges the view may have changed). */
    int same_bound = gw == &r->view && gw->n_nodes == g->n_nodes &&
                     memcmp(r->final_runtime, r->runtime,
                            (size_t)g->n_nodes * sizeof *r->runtime) == 0;
    r->order = cs_malloc_array(r->n ? r->n : 1, sizeof *r->order);
    if (!r->order) {
        st = oom(err);
        goto cleanup;
    }
    if ((st = commsched_schedule_to_array(sw, r->order, err)) !=
            COMMSCHED_OK ||
        (st = simulate(gw, r->order, r->final_runtime, o->comm_streams,
                       same_bound ? 0 : COMMSCHED_SIM_BOUND, &r->after,
                       err)) != COMMSCHED_OK)
        goto cleanup;
    if (same_bound) { /* the stream bound does not depend on the order */
        commsched_sim_totals *a = &r->after;
        a->bound_stream_ns = r->before.bound_stream_ns;
        a->bound_stream = r->before.bound_stream;
        if (a->bound_stream_ns > a->makespan_ns && /* rounding, as sim */
            a->bound_stream_ns <= a->makespan_ns * (1 + 1e-12))
            a->bound_stream_ns = a->makespan_ns;
        if (a->bound_stream_ns > a->lower_bound_ns)
            a->lower_bound_ns = a->bound_stream_ns;
        a->efficiency =
            a->makespan_ns > 0 ? a->lower_bound_ns / a->makespan_ns : 1.0;
    }
    *out = r;
    r = NULL;
cleanup:
    commsched_schedule_destroy(s);
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(defaults);
    return st;
}

const commsched_graph *commsched_result_graph(const commsched_result *r)
{
    return r->graph;
}

uint32_t commsched_result_node_count(const commsched_result *r)
{
    return r->n;
}

const uint32_t *commsched_result_order(const commsched_result *r)
{
    return r->order;
}

const char *commsched_result_node_name(const commsched_result *r,
                                       uint32_t position)
{
    if (position >= r->n)
        return NULL;
    return r->graph->nodes[r->order[position]].name;
}

const char *commsched_result_passes(const commsched_result *r)
{
    return r->passes;
}

const commsched_run *commsched_result_run(const commsched_result *r)
{
    return r->run;
}

const commsched_sim_totals *commsched_result_before(const commsched_result *r)
{
    return &r->before;
}

const commsched_sim_totals *commsched_result_after(const commsched_result *r)
{
    return &r->after;
}

const double *commsched_result_runtimes(const commsched_result *r)
{
    return r->final_runtime;
}
