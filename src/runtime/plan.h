/* commsched — what a runtime adaptor needs to execute one order of a graph,
 * computed once, without any communication library: where each buffer is
 * allocated and freed, which wait completes which collective, which buffers
 * a collective sends and receives, and the rank-independent fingerprints
 * the preflight compares (graph hash, collective sequence). Internal. */
#ifndef COMMSCHED_RUNTIME_PLAN_H
#define COMMSCHED_RUNTIME_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"
#include "graph_layout.h"

/* A collective as an adaptor runs it. Buffers are root buffers. */
typedef struct cs_plan_coll {
    uint32_t send;       /* the largest root buffer it reads, or NONE */
    uint32_t recv;       /* the largest root buffer it writes, or NONE; may
                            equal send (in place) */
    uint32_t in, out;    /* what the library call reads and writes: send
                            and recv, a missing one standing for the other
                            (in place); NONE when it touches no buffer */
    uint32_t wait;       /* async: the first wait (in order) reading its
                            outputs, NONE when none does */
    unsigned elem;       /* element size: the dtype's, float32 when none */
} cs_plan_coll;

typedef struct cs_plan {
    const commsched_graph *g;
    uint32_t n;
    uint32_t *order;     /* the executed order */
    uint32_t *pos;       /* node -> position */
    double size_scale;
    int64_t *bytes;      /* per buffer: scaled bytes (root buffers), 0 for
                            aliases and empty buffers */
    cs_plan_coll *coll;  /* per node (meaningful for collectives) */
    cs_csr alloc_at;     /* node -> root buffers it allocates when it starts */
    cs_csr free_after;   /* node -> root buffers freed once it is done */
    cs_csr wait_colls;   /* node -> collectives a wait completes */
    uint32_t *baseline;  /* freeable inputs that are read: allocated at
                            every iteration's start, counted as live */
    uint32_t n_baseline;
    uint32_t *other;     /* other inputs: allocated once, not counted */
    uint32_t n_other;
    uint32_t *at_end;    /* counted buffers freed only when the iteration
                            ends (outputs, and a collective's buffers when
                            no wait completes it) */
    uint32_t n_at_end;
    uint64_t graph_hash; /* FNV-1a over everything the run depends on */
    char *seq;           /* one line per collective in order:
                            "op group bytes name\n" */
    size_t seq_len;
    uint32_t n_coll;
} cs_plan;

/* How one rank runs collective `node` in a group of `group_size` ranks,
 * from its plan buffers (scaled sizes and the dtype's element size):
 * count is in the libraries' convention (elements per rank for all_gather
 * and reduce_scatter, per peer for all_to_all, of the buffer otherwise);
 * in_place when it reads and writes one buffer (or has only one);
 * scratch_bytes is the private buffer an adaptor needs beside it (the
 * partner of a send/recv ring shift, the copy an in-place all-to-all sends
 * from), 0 when none. */
typedef struct cs_coll_shape {
    size_t count;
    int in_place;
    size_t scratch_bytes;
} cs_coll_shape;

void cs_plan_coll_shape(const cs_plan *p, uint32_t node, size_t group_size,
                        cs_coll_shape *out);

/* Builds the plan for `order` (NULL: file order; must be a topological
 * permutation, EINVAL/EORDER otherwise). The graph is borrowed. On failure
 * the plan is left empty (cs_plan_fini is still safe). */
commsched_status cs_plan_build(cs_plan *p, const commsched_graph *g,
                               const uint32_t *order, double size_scale,
                               commsched_error *err);
void cs_plan_fini(cs_plan *p);

/* Compares two collective sequences (cs_plan.seq texts) by (op, group,
 * bytes), ignoring node names. Returns -1 when they agree, otherwise the
 * index of the first collective that differs (a missing one counts), and
 * writes the two lines (or "nothing") to mine_out / theirs_out. */
long cs_plan_seq_diff(const char *mine, size_t mine_len, const char *theirs,
                      size_t theirs_len, char *mine_out, char *theirs_out,
                      size_t out_size);

#endif /* COMMSCHED_RUNTIME_PLAN_H */
