/* commsched — internal entry points of the igraph boundary
 * (analysis_igraph.c), used while a graph is still being validated and so
 * has no commsched_graph yet. A DAG is given as one or two predecessor CSRs
 * over the same n nodes (second may be NULL): an edge p -> v for every p in
 * row v. */
#ifndef COMMSCHED_ANALYSIS_INTERNAL_H
#define COMMSCHED_ANALYSIS_INTERNAL_H

#include "commsched/analysis.h"
#include "graph_internal.h"

typedef struct cs_preds {
    uint32_t n;
    const cs_csr *a;
    const cs_csr *b; /* may be NULL */
} cs_preds;

/* *is_dag = 1 when the edges have no cycle. */
commsched_status cs_analysis_is_dag(const cs_preds *p, int *is_dag,
                                    commsched_error *err);

/* A topological order in order[0..n) (the caller allocates n entries).
 * Fails with ECYCLE when there is none. */
commsched_status cs_analysis_toposort(const cs_preds *p, uint32_t *order,
                                      commsched_error *err);

/* One cycle as nodes c[0] -> c[1] -> ... -> c[len-1] -> c[0] (each must run
 * before the next). *cycle is malloc'ed (caller frees); *len 0 and *cycle
 * NULL when the graph is acyclic. */
commsched_status cs_analysis_find_cycle(const cs_preds *p, uint32_t **cycle,
                                        uint32_t *len, commsched_error *err);

#endif /* COMMSCHED_ANALYSIS_INTERNAL_H */
