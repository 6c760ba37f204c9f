/* commsched — the graph's layout, read-only: the arrays every layer above
 * src/graph walks (the cost model, the simulator, the passes, the reports,
 * the runtime). What builds or rewrites graphs is in graph_internal.h
 * (views, CSR construction, a schedule's links) and graph_rules.h (the
 * builder's checks), which the layers that only read need not see. Not
 * installed.
 *
 * Layout: flat arrays indexed by uint32 and compressed adjacency (CSR) so a
 * million-node graph costs a few hundred bytes per node and every walk is a
 * linear scan. Node indices follow the validated topological order, so
 * "dependency index < node index" holds for every data and control edge,
 * and for the fake edges the graph was loaded with; fake edges added later
 * by decide_global_ordering_of_comms follow the schedule instead.
 */
#ifndef COMMSCHED_GRAPH_LAYOUT_H
#define COMMSCHED_GRAPH_LAYOUT_H

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

static inline int cs_is_async_collective(const cs_node *n)
{
    return n->kind == COMMSCHED_NODE_COLLECTIVE && !n->is_sync;
}

#endif /* COMMSCHED_GRAPH_LAYOUT_H */
