/* commsched — measured runs for the HTML report (docs/REPORTS.md
 * "Measured runs").
 *
 * A measured run is the shape `commsched simulate --format json` writes,
 * extended to every node: optional "totals", optional "memory", per-node
 * rows under "nodes" and/or "collectives" ({name, start_ns, end_ns,
 * issue_ns?, exposed_ns?}), and an optional "ranks" list whose entries have
 * the same keys. So a simulation report is itself a valid "measured" input
 * (the page then shows zero error), and the MPI runtime writes the same
 * keys with real timestamps. Unknown keys are ignored, so both producers
 * may add fields without breaking this reader.
 *
 * Names resolve against the graph the report draws; a name the graph lacks
 * is an error with its JSON path, as in the graph loader. Times must be
 * finite, >= 0, with end >= start. Derived totals (when "totals" omits
 * them): makespan = latest end, comm = sum of collective durations,
 * exposed = sum of collectives' exposed_ns, compute = sum of compute
 * durations.
 *
 * This file and report_json.c are the report's jansson boundary. */
#include "commsched/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_layout.h"
#include "json_util.h"
#include "util.h"

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

/* A schema error at JSON path where[.field] (either may be NULL). */
static commsched_status bad(commsched_error *err, const char *where,
                            const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static commsched_status bad(commsched_error *err, const char *where,
                            const char *field, const char *fmt, ...)
{
    char path[COMMSCHED_ERROR_PATH_LENGTH], text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    if (field && where && where[0])
        snprintf(path, sizeof path, "%s.%s", where, field);
    else
        snprintf(path, sizeof path, "%s", field ? field : where ? where : "");
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return commsched_error_set(err, COMMSCHED_ESCHEMA, path[0] ? path : NULL,
                               "%s", text);
}

static char *dup_str(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void commsched_measured_run_destroy(commsched_measured_run *m)
{
    if (!m)
        return;
    free(m->runtime);
    free(m->graph_name);
    free(m->timeline_from);
    free(m->start_ns);
    free(m->end_ns);
    free(m->issue_ns);
    free(m->exposed_ns_of);
    free(m->ranks);
    free(m->prediction_source);
    free(m->options_note);
    free(m);
}

commsched_status commsched_measured_run_create(const commsched_graph *g,
                                           commsched_measured_run **out,
                                           commsched_error *err)
{
    *out = NULL;
    commsched_measured_run *m = calloc(1, sizeof *m);
    if (!m)
        return oom(err);
    size_t n = g->n_nodes ? g->n_nodes : 1;
    m->graph = g;
    m->start_ns = malloc(n * sizeof *m->start_ns);
    m->end_ns = malloc(n * sizeof *m->end_ns);
    m->issue_ns = malloc(n * sizeof *m->issue_ns);
    m->exposed_ns_of = malloc(n * sizeof *m->exposed_ns_of);
    if (!m->start_ns || !m->end_ns || !m->issue_ns || !m->exposed_ns_of) {
        commsched_measured_run_destroy(m);
        return oom(err);
    }
    for (size_t i = 0; i < n; i++)
        m->start_ns[i] = m->end_ns[i] = m->issue_ns[i] = m->exposed_ns_of[i] =
            NAN;
    m->makespan_ns = m->compute_ns = m->comm_ns = m->exposed_ns = m->overlap =
        NAN;
    m->pred_makespan_ns = m->pred_compute_ns = m->pred_comm_ns =
        m->pred_exposed_ns = m->pred_overlap = NAN;
    m->peak_memory = -1;
    *out = m;
    return COMMSCHED_OK;
}

/* ---- parsing ------------------------------------------------------------ */

/* A number field: absent (or null) gives NAN; present must be a number
 * in lo..hi, else the error says `what`. Times are ns within the graph
 * format's limit for a runtime (an end_ns of 1e300 once printed as a
 * 300-digit time), shares within 0..1 (an overlap of 5 showed as 500%). */
static commsched_status num_field(json_t *o, const char *key,
                                  const char *where, double hi,
                                  const char *what, double *v,
                                  commsched_error *err)
{
    json_t *x = json_object_get(o, key);
    *v = NAN;
    if (!x || json_is_null(x))
        return COMMSCHED_OK;
    if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
        json_number_value(x) > hi)
        return bad(err, where, key, "expected %s", what);
    *v = json_number_value(x);
    return COMMSCHED_OK;
}

#define TIME_WHAT "a number of ns in 0..1e+30"

static commsched_status time_field(json_t *o, const char *key,
                                   const char *where, double *v,
                                   commsched_error *err)
{
    return num_field(o, key, where, COMMSCHED_MAX_RUNTIME_NS, TIME_WHAT, v,
                     err);
}

/* Per-node rows into the node arrays (NULL arrays: count only). Rows of
 * one list must name distinct nodes. */
static commsched_status rows(json_t *arr, const char *where,
                             const commsched_graph *g, commsched_measured_run *m,
                             int store, uint32_t *seen_stamp, uint32_t stamp,
                             double *latest, uint32_t *n_timed,
                             commsched_error *err)
{
    char path[96];
    if (!json_is_array(arr))
        return bad(err, where, NULL, "expected an array of rows");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *r = json_array_get(arr, i);
        snprintf(path, sizeof path, "%s[%zu]", where, i);
        if (!json_is_object(r))
            return bad(err, path, NULL, "expected an object");
        json_t *name = json_object_get(r, "name");
        if (!json_is_string(name))
            return bad(err, path, "name", "expected a node name");
        uint32_t v = commsched_graph_find_node(g, json_string_value(name));
        if (v == COMMSCHED_NONE)
            return bad(err, path, "name", "no node \"%s\" in graph %s",
                       json_string_value(name),
                       g->name ? g->name : "(unnamed)");
        if (seen_stamp[v] == stamp)
            return bad(err, path, "name", "node \"%s\" appears twice",
                       json_string_value(name));
        seen_stamp[v] = stamp;
        double s, e, q, x;
        commsched_status st;
        if ((st = time_field(r, "start_ns", path, &s, err)) ||
            (st = time_field(r, "end_ns", path, &e, err)) ||
            (st = time_field(r, "issue_ns", path, &q, err)) ||
            (st = time_field(r, "exposed_ns", path, &x, err)))
            return st;
        if (isnan(s) || isnan(e))
            return bad(err, path, NULL, "start_ns and end_ns are required");
        if (e < s)
            return bad(err, path, "end_ns", "%g is before start_ns %g", e, s);
        if (!isnan(q) && q > s)
            return bad(err, path, "issue_ns", "%g is after start_ns %g", q, s);
        if (e > *latest)
            *latest = e;
        (*n_timed)++;
        if (!store)
            continue;
        /* "nodes" is read before "collectives": a node given in both keeps
         * the first row, which carries every node's keys. */
        if (!isnan(m->start_ns[v]))
            continue;
        m->start_ns[v] = s;
        m->end_ns[v] = e;
        m->issue_ns[v] = q;
        m->exposed_ns_of[v] = x;
    }
    return COMMSCHED_OK;
}

/* The totals object (absent keys stay NaN). */
static commsched_status totals(json_t *o, const char *where, double *mk,
                               double *cp, double *cm, double *ex, double *ov,
                               commsched_error *err)
{
    commsched_status st;
    if (!o || json_is_null(o))
        return COMMSCHED_OK;
    if (!json_is_object(o))
        return bad(err, where, NULL, "expected an object");
    if ((st = time_field(o, "makespan_ns", where, mk, err)) ||
        (st = time_field(o, "compute_ns", where, cp, err)) ||
        (st = time_field(o, "comm_ns", where, cm, err)) ||
        (st = time_field(o, "exposed_ns", where, ex, err)))
        return st;
    if (ov && (st = num_field(o, "overlap", where, 1, "a share in 0..1", ov,
                              err)))
        return st;
    return COMMSCHED_OK;
}

/* Fills the totals the file left out from the stored nodes. */
static void derive(commsched_measured_run *m)
{
    const commsched_graph *g = m->graph;
    double latest = 0, comp = 0, comm = 0, exposed = 0;
    int any_comp = 0, any_comm = 0, any_exp = 0;
    m->n_timed = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (isnan(m->start_ns[v]))
            continue;
        m->n_timed++;
        double d = m->end_ns[v] - m->start_ns[v];
        if (m->end_ns[v] > latest)
            latest = m->end_ns[v];
        if (g->nodes[v].kind == COMMSCHED_NODE_COMPUTE) {
            comp += d;
            any_comp = 1;
        } else if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE) {
            comm += d;
            any_comm = 1;
            if (!isnan(m->exposed_ns_of[v])) {
                exposed += m->exposed_ns_of[v];
                any_exp = 1;
            }
        }
    }
    if (isnan(m->makespan_ns) && m->n_timed)
        m->makespan_ns = latest;
    if (isnan(m->compute_ns) && any_comp)
        m->compute_ns = comp;
    if (isnan(m->comm_ns) && any_comm)
        m->comm_ns = comm;
    if (isnan(m->exposed_ns) && any_exp)
        m->exposed_ns = exposed;
    if (isnan(m->overlap) && !isnan(m->comm_ns) && !isnan(m->exposed_ns))
        m->overlap = m->comm_ns > 0 ? 1.0 - m->exposed_ns / m->comm_ns : 1.0;
}

/* "compute sleep, time scale 1, size scale 0.01, 10 iterations" from the
 * runtime's options (keys it lacks are left out). Informational: a
 * malformed options object is ignored, never an error. */
static char *options_note(json_t *o)
{
    char buf[256];
    size_t n = 0;
    buf[0] = '\0';
    if (!json_is_object(o))
        return NULL;
    json_t *c = json_object_get(o, "compute");
    if (json_is_string(c))
        n += (size_t)snprintf(buf + n, sizeof buf - n, "compute %s",
                              json_string_value(c));
    static const struct {
        const char *key, *label;
    } nums[] = {{"time_scale", "time scale"}, {"size_scale", "size scale"}};
    for (size_t i = 0; i < 2 && n < sizeof buf; i++) {
        json_t *x = json_object_get(o, nums[i].key);
        if (json_is_number(x))
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s %g",
                                  n ? ", " : "", nums[i].label,
                                  json_number_value(x));
    }
    json_t *it = json_object_get(o, "iters");
    if (json_is_integer(it) && n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld iterations",
                              n ? ", " : "",
                              (long long)json_integer_value(it));
    return n ? dup_str(buf) : NULL;
}

static int known_format(const char *f)
{
    /* Our own simulation report is a valid measured input (zero error);
     * "commsched-measured" is what the runtime writes. */
    return strcmp(f, "commsched-measured") == 0 ||
           strcmp(f, "commsched-simulation") == 0;
}

static commsched_status from_json(json_t *root, const commsched_graph *g,
                                  commsched_measured_run **out,
                                  commsched_error *err)
{
    commsched_measured_run *m = NULL;
    uint32_t *stamp = NULL;
    commsched_status st;
    char where[64];
    if (!json_is_object(root))
        return bad(err, NULL, NULL, "expected a JSON object");
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || !known_format(json_string_value(fmt)))
        return bad(err, "format", NULL,
                   "expected \"commsched-measured\" (or a "
                   "\"commsched-simulation\" report)");
    json_t *ver = json_object_get(root, "version");
    if (ver && (!json_is_integer(ver) || json_integer_value(ver) != 1))
        return bad(err, "version", NULL, "only version 1 is known");
    if ((st = commsched_measured_run_create(g, &m, err)) != COMMSCHED_OK)
        return st;
    stamp = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *stamp);
    if (!stamp) {
        st = oom(err);
        goto fail;
    }
    json_t *name = json_object_get(root, "graph");
    json_t *rt = json_object_get(root, "runtime");
    if ((name && !json_is_string(name) && !json_is_null(name)) ||
        (rt && !json_is_string(rt) && !json_is_null(rt))) {
        st = bad(err,
                 name && !json_is_string(name) && !json_is_null(name)
                     ? "graph"
                     : "runtime",
                 NULL, "expected a string");
        goto fail;
    }
    if ((json_is_string(name) &&
         !(m->graph_name = dup_str(json_string_value(name)))) ||
        (json_is_string(rt) &&
         !(m->runtime = dup_str(json_string_value(rt))))) {
        st = oom(err);
        goto fail;
    }
    if ((st = totals(json_object_get(root, "totals"), "totals", &m->makespan_ns,
                     &m->compute_ns, &m->comm_ns, &m->exposed_ns, &m->overlap,
                     err)))
        goto fail;
    /* The run's own prediction and options (the MPI runtime writes them). */
    json_t *pred = json_object_get(root, "prediction");
    if (json_is_object(pred)) {
        json_t *src = json_object_get(pred, "source");
        if (json_is_string(src) &&
            !(m->prediction_source = dup_str(json_string_value(src)))) {
            st = oom(err);
            goto fail;
        }
        if ((st = totals(json_object_get(pred, "totals"), "prediction.totals",
                         &m->pred_makespan_ns, &m->pred_compute_ns,
                         &m->pred_comm_ns, &m->pred_exposed_ns,
                         &m->pred_overlap, err)))
            goto fail;
    }
    m->options_note = options_note(json_object_get(root, "options"));
    json_t *mem = json_object_get(root, "memory");
    if (mem && !json_is_null(mem)) {
        json_t *pk = json_object_get(mem, "peak");
        if (!pk)
            pk = json_object_get(mem, "peak_simulated");
        if (!json_is_object(mem) ||
            (pk && (!json_is_integer(pk) || json_integer_value(pk) < 0))) {
            st = bad(err, "memory", NULL, "expected {\"peak\": bytes}");
            goto fail;
        }
        if (pk)
            m->peak_memory = (int64_t)json_integer_value(pk);
    }
    double latest = 0;
    uint32_t stamp_no = 0, timed = 0;
    int have_top = 0;
    static const char *const lists[] = {"nodes", "collectives"};
    for (int k = 0; k < 2; k++) {
        json_t *a = json_object_get(root, lists[k]);
        /* A simulation report's "nodes" is the node count. */
        if (!a || json_is_null(a) || (k == 0 && json_is_integer(a)))
            continue;
        have_top = 1;
        if ((st = rows(a, lists[k], g, m, 1, stamp, ++stamp_no, &latest, &timed,
                       err)))
            goto fail;
    }
    if (have_top && !(m->timeline_from = dup_str("run"))) {
        st = oom(err);
        goto fail;
    }

    json_t *ranks = json_object_get(root, "ranks");
    if (ranks && !json_is_null(ranks)) {
        if (!json_is_array(ranks)) {
            st = bad(err, "ranks", NULL, "expected an array");
            goto fail;
        }
        size_t nr = json_array_size(ranks);
        m->ranks = calloc(nr ? nr : 1, sizeof *m->ranks);
        if (!m->ranks) {
            st = oom(err);
            goto fail;
        }
        for (size_t i = 0; i < nr; i++) {
            json_t *r = json_array_get(ranks, i);
            commsched_measured_run_rank *R = &m->ranks[i];
            snprintf(where, sizeof where, "ranks[%zu]", i);
            if (!json_is_object(r)) {
                st = bad(err, where, NULL, "expected an object");
                goto fail;
            }
            json_t *id = json_object_get(r, "rank");
            if (id && !json_is_integer(id)) {
                st = bad(err, where, "rank", "expected an integer");
                goto fail;
            }
            R->rank = id ? (int64_t)json_integer_value(id) : (int64_t)i;
            R->makespan_ns = R->compute_ns = R->comm_ns = R->exposed_ns = NAN;
            json_t *pk = json_object_get(r, "peak_memory");
            if (pk && !json_is_null(pk) &&
                (!json_is_integer(pk) || json_integer_value(pk) < 0)) {
                st = bad(err, where, "peak_memory",
                         "expected bytes (an integer >= 0)");
                goto fail;
            }
            R->peak_memory =
                json_is_integer(pk) ? (int64_t)json_integer_value(pk) : -1;
            char tw[80];
            snprintf(tw, sizeof tw, "%s.totals", where);
            if ((st = totals(json_object_get(r, "totals"), tw, &R->makespan_ns,
                             &R->compute_ns, &R->comm_ns, &R->exposed_ns, NULL,
                             err)))
                goto fail;
            /* The first rank with nodes draws the timeline when the run
             * has no top-level nodes. */
            int store = !have_top && !m->timeline_from;
            double r_latest = 0;
            uint32_t r_timed = 0;
            for (int k = 0; k < 2; k++) {
                json_t *a = json_object_get(r, lists[k]);
                if (!a || json_is_null(a))
                    continue;
                char lw[80];
                snprintf(lw, sizeof lw, "%s.%s", where, lists[k]);
                if ((st = rows(a, lw, g, m, store, stamp, ++stamp_no, &r_latest,
                               &r_timed, err)))
                    goto fail;
            }
            R->n_timed = r_timed;
            if (isnan(R->makespan_ns) && r_timed)
                R->makespan_ns = r_latest;
            if (store && r_timed) {
                char label[48];
                snprintf(label, sizeof label, "rank %lld", (long long)R->rank);
                if (!(m->timeline_from = dup_str(label))) {
                    st = oom(err);
                    goto fail;
                }
            }
            m->n_ranks++;
        }
        /* A run known only per rank finishes with its slowest rank. */
        if (isnan(m->makespan_ns) && !have_top)
            for (uint32_t i = 0; i < m->n_ranks; i++)
                if (!isnan(m->ranks[i].makespan_ns) &&
                    (isnan(m->makespan_ns) ||
                     m->ranks[i].makespan_ns > m->makespan_ns))
                    m->makespan_ns = m->ranks[i].makespan_ns;
    }
    derive(m);
    free(stamp);
    *out = m;
    return COMMSCHED_OK;
fail:
    free(stamp);
    commsched_measured_run_destroy(m);
    return st;
}

commsched_status commsched_measured_run_load_string(const char *text,
                                                const commsched_graph *g,
                                                commsched_measured_run **out,
                                                commsched_error *err)
{
    json_error_t je;
    *out = NULL;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return cs_json_syntax_error(&je, err);
    commsched_status st = from_json(root, g, out, err);
    json_decref(root);
    return st;
}

commsched_status commsched_measured_run_load_file(const char *path,
                                              const commsched_graph *g,
                                              commsched_measured_run **out,
                                              commsched_error *err)
{
    json_error_t je;
    *out = NULL;
    json_t *root;
    if (strcmp(path, "-") == 0) {
        root = json_loadf(stdin, JSON_REJECT_DUPLICATES, &je);
    } else {
        FILE *f = cs_fopen_input(path);
        if (!f) /* worded as every other reader words it */
            return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                       "cannot open: %s", strerror(errno));
        root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
        fclose(f);
    }
    if (!root)
        return cs_json_syntax_error(&je, err);
    commsched_status st = from_json(root, g, out, err);
    json_decref(root);
    return st;
}
