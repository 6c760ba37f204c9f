/* commsched — the igraph boundary. The only file that includes igraph.
 *
 * Debian's igraph 0.10 is built without thread safety and its default error
 * handler aborts the process. Every entry point here therefore
 *   1. installs a handler that frees igraph's FINALLY stack and lets the
 *      failing call return its error code (no abort, no longjmp),
 *   2. silences igraph's warnings (we report our own errors),
 *   3. restores the previous handlers before returning,
 * and maps igraph_error_t to COMMSCHED_EANALYSIS with igraph's own text.
 * Callers must not enter this file from several threads at once. igraph's
 * FINALLY stack is never used outside this file. */
#include "analysis.h"

#include <igraph.h>
#include <stdlib.h>
#include <string.h>

static void on_igraph_error(const char *reason, const char *file, int line,
                            igraph_error_t code)
{
    (void)reason;
    (void)file;
    (void)line;
    (void)code;
    IGRAPH_FINALLY_FREE();
}

typedef struct handlers {
    igraph_error_handler_t *error;
    igraph_warning_handler_t *warning;
} handlers;

static handlers enter(void)
{
    handlers h;
    h.error = igraph_set_error_handler(on_igraph_error);
    h.warning = igraph_set_warning_handler(igraph_warning_handler_ignore);
    return h;
}

static void leave(handlers h)
{
    igraph_set_error_handler(h.error);
    igraph_set_warning_handler(h.warning);
}

static commsched_status fail(commsched_error *err, igraph_error_t code)
{
    if (code == IGRAPH_ENOMEM)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "igraph: out of memory");
    return commsched_error_set(err, COMMSCHED_EANALYSIS, NULL, "igraph: %s",
                               igraph_strerror(code));
}

static size_t pred_count(const cs_preds *p)
{
    size_t m = p->a->off[p->n];
    if (p->b)
        m += p->b->off[p->n];
    return m;
}

/* Builds the directed igraph of p. On success *g must be destroyed. */
static igraph_error_t make_graph(const cs_preds *p, igraph_t *g)
{
    igraph_vector_int_t edges;
    size_t m = pred_count(p);
    igraph_error_t rc = igraph_vector_int_init(&edges, (igraph_integer_t)(2 * m));
    if (rc != IGRAPH_SUCCESS)
        return rc;
    igraph_integer_t k = 0;
    for (uint32_t v = 0; v < p->n; v++) {
        const cs_csr *rows[2] = {p->a, p->b};
        for (int r = 0; r < 2; r++) {
            if (!rows[r])
                continue;
            for (uint32_t i = rows[r]->off[v]; i < rows[r]->off[v + 1]; i++) {
                VECTOR(edges)[k++] = rows[r]->idx[i];
                VECTOR(edges)[k++] = v;
            }
        }
    }
    rc = igraph_create(g, &edges, (igraph_integer_t)p->n, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    return rc;
}

commsched_status cs_analysis_is_dag(const cs_preds *p, int *is_dag,
                                    commsched_error *err)
{
    handlers h = enter();
    igraph_t g;
    igraph_bool_t res = 0;
    igraph_error_t rc = make_graph(p, &g);
    if (rc == IGRAPH_SUCCESS) {
        rc = igraph_is_dag(&g, &res);
        igraph_destroy(&g);
    }
    leave(h);
    if (rc != IGRAPH_SUCCESS)
        return fail(err, rc);
    *is_dag = res ? 1 : 0;
    return COMMSCHED_OK;
}

commsched_status cs_analysis_toposort(const cs_preds *p, uint32_t *order,
                                      commsched_error *err)
{
    int dag = 0;
    commsched_status st = cs_analysis_is_dag(p, &dag, err);
    if (st != COMMSCHED_OK)
        return st;
    if (!dag)
        return commsched_error_set(err, COMMSCHED_ECYCLE, NULL,
                                   "the graph has a dependency cycle");
    handlers h = enter();
    igraph_t g;
    igraph_vector_int_t res;
    igraph_error_t rc = make_graph(p, &g);
    if (rc == IGRAPH_SUCCESS) {
        rc = igraph_vector_int_init(&res, 0);
        if (rc == IGRAPH_SUCCESS) {
            rc = igraph_topological_sorting(&g, &res, IGRAPH_OUT);
            if (rc == IGRAPH_SUCCESS)
                for (uint32_t i = 0; i < p->n; i++)
                    order[i] = (uint32_t)VECTOR(res)[i];
            igraph_vector_int_destroy(&res);
        }
        igraph_destroy(&g);
    }
    leave(h);
    return rc == IGRAPH_SUCCESS ? COMMSCHED_OK : fail(err, rc);
}

/* A cycle lies inside one strongly connected component of two or more
 * nodes: take its smallest node v and a successor w of v inside it; the
 * shortest path w ~> v closes the cycle v -> w ~> v. */
commsched_status cs_analysis_find_cycle(const cs_preds *p, uint32_t **cycle,
                                        uint32_t *len, commsched_error *err)
{
    *cycle = NULL;
    *len = 0;
    handlers h = enter();
    igraph_t g;
    igraph_vector_int_t memb, csize, neis, path;
    igraph_integer_t ncomp = 0;
    igraph_error_t rc = make_graph(p, &g);
    if (rc != IGRAPH_SUCCESS) {
        leave(h);
        return fail(err, rc);
    }
    int inited = 0;
    rc = igraph_vector_int_init(&memb, 0);
    if (rc == IGRAPH_SUCCESS && ++inited)
        rc = igraph_vector_int_init(&csize, 0);
    if (rc == IGRAPH_SUCCESS && ++inited)
        rc = igraph_vector_int_init(&neis, 0);
    if (rc == IGRAPH_SUCCESS && ++inited)
        rc = igraph_vector_int_init(&path, 0);
    if (rc == IGRAPH_SUCCESS && ++inited)
        rc = igraph_connected_components(&g, &memb, &csize, &ncomp,
                                         IGRAPH_STRONG);
    igraph_integer_t v = -1, w = -1;
    if (rc == IGRAPH_SUCCESS) {
        for (igraph_integer_t i = 0; i < (igraph_integer_t)p->n && v < 0; i++)
            if (VECTOR(csize)[VECTOR(memb)[i]] > 1)
                v = i;
    }
    if (rc == IGRAPH_SUCCESS && v >= 0)
        rc = igraph_neighbors(&g, &neis, v, IGRAPH_OUT);
    if (rc == IGRAPH_SUCCESS && v >= 0) {
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(&neis); i++)
            if (VECTOR(memb)[VECTOR(neis)[i]] == VECTOR(memb)[v]) {
                w = VECTOR(neis)[i];
                break;
            }
        rc = igraph_get_shortest_path(&g, &path, NULL, w, v, IGRAPH_OUT);
    }
    commsched_status st = COMMSCHED_OK;
    if (rc != IGRAPH_SUCCESS) {
        st = fail(err, rc);
    } else if (v >= 0) {
        /* path is w .. v; the cycle is v, w, .., (v omitted at the end) */
        igraph_integer_t pl = igraph_vector_int_size(&path);
        uint32_t *c = cs_malloc_array((size_t)pl, sizeof *c);
        if (!c) {
            st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                     "out of memory");
        } else {
            c[0] = (uint32_t)v;
            for (igraph_integer_t i = 0; i + 1 < pl; i++)
                c[i + 1] = (uint32_t)VECTOR(path)[i];
            *cycle = c;
            *len = (uint32_t)pl;
        }
    }
    if (inited >= 4)
        igraph_vector_int_destroy(&path);
    if (inited >= 3)
        igraph_vector_int_destroy(&neis);
    if (inited >= 2)
        igraph_vector_int_destroy(&csize);
    if (inited >= 1)
        igraph_vector_int_destroy(&memb);
    igraph_destroy(&g);
    leave(h);
    return st;
}

/* ---- public analyses over a finished graph ------------------------------- */

static cs_preds graph_preds(const commsched_graph *g, commsched_edges edges)
{
    cs_preds p = {g->n_nodes, &g->deps,
                  edges == COMMSCHED_EDGES_WITH_FAKE ? &g->after_fake : NULL};
    return p;
}

static commsched_status reach(const commsched_graph *g, uint32_t node,
                              commsched_edges edges, igraph_neimode_t mode,
                              uint32_t **out, uint32_t *count,
                              commsched_error *err)
{
    *out = NULL;
    *count = 0;
    if (node >= g->n_nodes)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "node index %u out of range", node);
    cs_preds p = graph_preds(g, edges);
    handlers h = enter();
    igraph_t ig;
    igraph_vector_int_t res;
    commsched_status st = COMMSCHED_OK;
    igraph_error_t rc = make_graph(&p, &ig);
    if (rc == IGRAPH_SUCCESS) {
        rc = igraph_vector_int_init(&res, 0);
        if (rc == IGRAPH_SUCCESS) {
            rc = igraph_subcomponent(&ig, &res, node, mode);
            if (rc == IGRAPH_SUCCESS) {
                igraph_vector_int_sort(&res);
                igraph_integer_t n = igraph_vector_int_size(&res);
                uint32_t *o = cs_malloc_array((size_t)n, sizeof *o);
                if (!o) {
                    st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                             "out of memory");
                } else {
                    uint32_t k = 0;
                    for (igraph_integer_t i = 0; i < n; i++)
                        if ((uint32_t)VECTOR(res)[i] != node)
                            o[k++] = (uint32_t)VECTOR(res)[i];
                    *out = o;
                    *count = k;
                }
            }
            igraph_vector_int_destroy(&res);
        }
        igraph_destroy(&ig);
    }
    leave(h);
    if (rc != IGRAPH_SUCCESS)
        return fail(err, rc);
    return st;
}

commsched_status commsched_graph_ancestors(const commsched_graph *g,
                                           uint32_t node, commsched_edges edges,
                                           uint32_t **out, uint32_t *count,
                                           commsched_error *err)
{
    return reach(g, node, edges, IGRAPH_IN, out, count, err);
}

commsched_status commsched_graph_descendants(const commsched_graph *g,
                                             uint32_t node,
                                             commsched_edges edges,
                                             uint32_t **out, uint32_t *count,
                                             commsched_error *err)
{
    return reach(g, node, edges, IGRAPH_OUT, out, count, err);
}

/* igraph supplies the topological order; the weighted longest path over it
 * is one dynamic-programming sweep (igraph has no vertex-weighted DAG
 * longest path, and Bellman-Ford on negated weights would be O(V E)). */
commsched_status commsched_graph_longest_path(const commsched_graph *g,
                                              commsched_edges edges,
                                              const double *weight,
                                              double *length, uint32_t **path,
                                              uint32_t *count,
                                              commsched_error *err)
{
    uint32_t n = g->n_nodes;
    cs_preds p = graph_preds(g, edges);
    uint32_t *order = cs_malloc_array(n, sizeof *order);
    double *dist = cs_malloc_array(n, sizeof *dist);
    uint32_t *from = cs_malloc_array(n, sizeof *from);
    commsched_status st = COMMSCHED_OK;
    if (path)
        *path = NULL;
    if (count)
        *count = 0;
    if (!order || !dist || !from) {
        st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto cleanup;
    }
    st = cs_analysis_toposort(&p, order, err);
    if (st != COMMSCHED_OK)
        goto cleanup;
    double best = 0.0;
    uint32_t best_end = COMMSCHED_NONE;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = order[i];
        double d = 0.0;
        uint32_t f = COMMSCHED_NONE;
        const cs_csr *rows[2] = {p.a, p.b};
        for (int r = 0; r < 2; r++) {
            if (!rows[r])
                continue;
            for (uint32_t k = rows[r]->off[v]; k < rows[r]->off[v + 1]; k++) {
                uint32_t u = rows[r]->idx[k];
                if (f == COMMSCHED_NONE || dist[u] > d) {
                    d = dist[u];
                    f = u;
                }
            }
        }
        dist[v] = d + weight[v];
        from[v] = f;
        if (best_end == COMMSCHED_NONE || dist[v] > best) {
            best = dist[v];
            best_end = v;
        }
    }
    *length = best;
    if (path && best_end != COMMSCHED_NONE) {
        uint32_t len = 0;
        for (uint32_t v = best_end; v != COMMSCHED_NONE; v = from[v])
            len++;
        uint32_t *out = cs_malloc_array(len, sizeof *out);
        if (!out) {
            st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                     "out of memory");
            goto cleanup;
        }
        uint32_t k = len;
        for (uint32_t v = best_end; v != COMMSCHED_NONE; v = from[v])
            out[--k] = v;
        *path = out;
        *count = len;
    }
cleanup:
    free(order);
    free(dist);
    free(from);
    return st;
}

void commsched_free(void *p) { free(p); }
