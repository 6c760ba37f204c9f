/* commsched — the builder's checks and derived edges (builder.c,
 * collective_rules.c, mutation.c), for src/graph alone. Not installed. */
#ifndef COMMSCHED_GRAPH_RULES_H
#define COMMSCHED_GRAPH_RULES_H

#include "graph_layout.h"

/* The wait rules (only a wait reads an async collective's output; a wait
 * reads at least one collective output) and the collective sizes
 * (docs/FORMAT.md), on a graph whose names and aliases are resolved: the
 * first violation, EGRAPH at its JSON path. O(nodes + reads).
 * src/graph/collective_rules.c. */
commsched_status cs_graph_check_wait_rules(const commsched_graph *g,
                                           commsched_error *err);
commsched_status cs_graph_check_collective_sizes(const commsched_graph *g,
                                                 commsched_error *err);

/* Derives the in-place write edges (write-after-read and read-after-write,
 * docs/FORMAT.md "In-place writes") from the node order, which must already
 * be topological, and merges them into deps/users. EGRAPH, naming both
 * nodes, when the order itself reads a buffer while an in-place collective
 * writes it. */
commsched_status cs_graph_derive_mutation_edges(commsched_graph *g,
                                                commsched_error *err);

#endif /* COMMSCHED_GRAPH_RULES_H */
