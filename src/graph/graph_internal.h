/* commsched — the graph's internal representation, shared by the library's
 * own files (loader, analysis, schedule, memory, cost model, simulator,
 * passes, CLI). Not installed.
 *
 * Layout: flat arrays indexed by uint32 and compressed adjacency (CSR) so a
 * million-node graph costs a few hundred bytes per node and every walk is a
 * linear scan. Node indices follow the validated topological order, so
 * "dependency index < node index" holds for every data and control edge,
 * and for the fake edges the graph was loaded with; fake edges added later
 * by decide_global_ordering_of_comms follow the schedule instead.
 */
#ifndef COMMSCHED_GRAPH_INTERNAL_H
#define COMMSCHED_GRAPH_INTERNAL_H

#include <stdint.h>

#include "commsched/graph.h"
#include "util.h"

/* Compressed rows: row r is idx[off[r] .. off[r+1]). off has n + 1 entries. */
typedef struct cs_csr {
    uint32_t *off;
    uint32_t *idx;
} cs_csr;

#define CS_ROW_BEGIN(csr, r) ((csr).idx + (csr).off[(r)])
#define CS_ROW_LEN(csr, r) ((csr).off[(r) + 1] - (csr).off[(r)])

typedef struct cs_group {
    const char *name;
    uint32_t size;
    uint32_t hosts; /* 0: derive from the device profile */
} cs_group;

typedef struct cs_buffer {
    const char *name;
    int64_t size;      /* bytes allocated; 0 for an alias */
    uint32_t alias_of; /* COMMSCHED_NONE for a real buffer */
    uint32_t root;     /* end of the alias chain (itself when real) */
    uint32_t producer; /* node index; COMMSCHED_NONE for a graph input */
    uint8_t is_input;
    uint8_t freeable;  /* graph inputs only */
    uint8_t is_output; /* listed in the graph's outputs */
    uint8_t keep;      /* root of an output's alias chain: never freed */
    uint8_t has_from;  /* a node output with a "from": its row of `from` */
    uint8_t root_again; /* an in-place alias whose root an earlier output
                           of its node aliases too (builder.c) */
} cs_buffer;

typedef struct cs_node {
    const char *name;
    const char *op;     /* compute/wait: free text or NULL; collective: the
                           op's canonical name */
    uint8_t kind;       /* commsched_node_kind */
    uint8_t coll_op;    /* commsched_coll_op, collectives only */
    uint8_t is_sync;    /* collectives: blocks the compute stream */
    uint8_t gemm_like;
    uint8_t dtype;      /* commsched_dtype */
    uint8_t reduce_op;  /* commsched_reduce_op */
    uint32_t group;     /* COMMSCHED_NONE unless a collective */
    double runtime_ns;  /* < 0: absent */
    double flops;       /* < 0: absent */
    double bytes;       /* < 0: absent */
    uint32_t out_first; /* outputs are buffers[out_first .. out_first+n_out) */
    uint32_t n_out;
} cs_node;

struct commsched_graph {
    const char *name;
    cs_arena arena; /* owns every string */

    uint32_t n_groups, n_inputs, n_buffers, n_nodes, n_outputs;
    cs_group *groups;
    cs_buffer *buffers; /* graph inputs first, then outputs in node order */
    cs_node *nodes;
    uint32_t *outputs;  /* buffer indices, in file order */

    cs_strmap group_by_name, buffer_by_name, node_by_name;

    /* As written (file order, repeats kept) — for saving and equality. */
    cs_csr reads;      /* node -> buffers it reads */
    cs_csr after;      /* node -> control dependencies */
    cs_csr after_fake; /* node -> fake (ordering-only) dependencies */

    cs_csr from;       /* buffer -> the inputs of its producer it is
                          computed from, as written (rows of buffers with
                          has_from); off is NULL when no output has one */

    /* Derived: distinct, ascending. */
    cs_csr deps;       /* node -> non-fake dependencies (data + after +
                          the in-place write edges below) */
    cs_csr users;      /* node -> nodes with a non-fake dependency on it */
    cs_csr fake_users; /* node -> nodes listing it in after_fake */
    /* after_fake and fake_users are another graph's (an optimize result's
     * view, src/api/optimize.c): replaced, never written or freed. */
    uint8_t fake_borrowed;
    cs_csr readers;    /* buffer -> nodes reading it through any alias
                          (filled for root buffers; empty rows for aliases) */
    cs_csr derived;    /* node -> dependencies derived from in-place writes
                          (src/graph/mutation.c) that data and `after` edges
                          do not already give; all of them are in deps */
};

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

static inline int cs_is_async_collective(const cs_node *n)
{
    return n->kind == COMMSCHED_NODE_COLLECTIVE && !n->is_sync;
}

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

#endif /* COMMSCHED_GRAPH_INTERNAL_H */
