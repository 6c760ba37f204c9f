/* commsched — graph analysis: reachability and weighted critical paths.
 * Backed by igraph; calls are serialised by the caller's thread (the Debian
 * igraph build is not thread-safe), so do not call these from several
 * threads at once. */
#ifndef COMMSCHED_ANALYSIS_H
#define COMMSCHED_ANALYSIS_H

#include <stdint.h>

#include "commsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which edges an analysis follows. */
typedef enum commsched_edges {
    COMMSCHED_EDGES_REAL = 0,    /* data and `after` edges */
    COMMSCHED_EDGES_WITH_FAKE = 1 /* those plus `after_fake` */
} commsched_edges;

/* The nodes from which `node` is reachable (its ancestors, excluding
 * itself), ascending. *out is malloc'ed: the caller frees it with
 * commsched_free(). On failure *out is NULL and *count 0. O(V + E + k log k)
 * for the k nodes found: igraph builds the whole graph on each call. */
COMMSCHED_EXPORT commsched_status commsched_graph_ancestors(
    const commsched_graph *g, uint32_t node, commsched_edges edges,
    uint32_t **out, uint32_t *count, commsched_error *err);

/* The nodes reachable from `node` (descendants, excluding itself). The
 * same cost. */
COMMSCHED_EXPORT commsched_status commsched_graph_descendants(
    const commsched_graph *g, uint32_t node, commsched_edges edges,
    uint32_t **out, uint32_t *count, commsched_error *err);

/* The heaviest path through the DAG when node i weighs weight[i] (>= 0):
 * its total in *length and, when path is not NULL, its nodes in order
 * (caller frees with commsched_free). O(V + E). */
COMMSCHED_EXPORT commsched_status commsched_graph_longest_path(
    const commsched_graph *g, commsched_edges edges, const double *weight,
    double *length, uint32_t **path, uint32_t *count, commsched_error *err);

/* Frees memory the library handed to the caller. NULL is allowed. */
COMMSCHED_EXPORT void commsched_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_ANALYSIS_H */
