/* commsched — building on the graph's layout (graph_layout.h): views of a
 * graph a pass may rewrite, CSR construction, a schedule's links. For the
 * graph itself, the passes, the memory tracker and optimize; layers that
 * only read a graph include graph_layout.h alone. Not installed. */
#ifndef COMMSCHED_GRAPH_INTERNAL_H
#define COMMSCHED_GRAPH_INTERNAL_H

#include "graph_layout.h"

/* A schedule's links, for loops that walk far through it (the iterative
 * passes' statistics): prev and next of n + 1 entries, where n is the
 * sentinel before the first node and after the last. Valid until the
 * schedule changes size (never) or is destroyed. */
typedef struct cs_links {
    const uint32_t *prev, *next;
    uint32_t end;
} cs_links;
struct commsched_schedule;
cs_links cs_schedule_links(const struct commsched_schedule *s);

/* Builds CSR `out` with n rows from (row, value) pairs; rows keep pair
 * order. Returns 0 or -1 on OOM. */
/* A view of g: a struct copy sharing every array of g, with g's fake-edge
 * tables borrowed (fake_borrowed) until a pass replaces them
 * (cs_graph_set_fake_edges, passes/); the only part of a graph a pass
 * writes. O(1). A view outlives nothing of g's; it is never handed to
 * commsched_graph_destroy: cs_graph_view_release frees the tables it
 * came to own (none while it borrows), and the view stays a view. */
void cs_graph_view_init(commsched_graph *view, const commsched_graph *g);
void cs_graph_view_release(commsched_graph *view);

int cs_csr_from_pairs(cs_csr *out, uint32_t n, const uint32_t *rows,
                      const uint32_t *vals, size_t n_pairs);
/* The transpose of `in` (n_in rows, values < n_out) as a CSR of n_out rows,
 * rows ascending when `in` rows are visited in ascending order. */
int cs_csr_transpose(cs_csr *out, const cs_csr *in, uint32_t n_in,
                     uint32_t n_out);
void cs_csr_free(cs_csr *c);

#endif /* COMMSCHED_GRAPH_INTERNAL_H */
