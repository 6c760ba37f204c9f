/* commsched — what the pass files share: the context a pass runs in, the
 * knobs, the per-node statistics it records, and the seed's helper walks
 * (_coll_exposed_communication_time and _wait_exposed_communication_time).
 *
 * Mapping onto the seed's scheduler nodes (docs/PASSES.md):
 *   contains_collective       kind == collective
 *   contains_async_collective kind == collective && !is_sync
 *   contains_wait             kind == wait
 *   contains_gemm_like        gemm_like
 *   "unmet_deps & outputs(B)" A has a non-fake dependency on B (g->deps)
 */
#ifndef COMMSCHED_PASSES_INTERNAL_H
#define COMMSCHED_PASSES_INTERNAL_H

#include <stdarg.h>

#include "commsched/memory.h"
#include "commsched/passes.h"
#include "graph_internal.h"
#include "rankset.h"

struct commsched_knobs {
    double reorder_iterative_peak_memory_budget;
    int reorder_iterative_use_runtime_estimations;
    double reorder_iterative_extra_comm_comp_overlap;
    int reorder_iterative_unsafe_collectives_reorder;
    int reorder_iterative_group_with_collectives;
    long reorder_iterative_debug_limit_to_reorder; /* < 0: none */
    double sink_iterative_peak_memory_budget;
    int sink_iterative_use_runtime_estimations;
    double sink_iterative_extra_comm_comp_overlap;
    int sink_waits_iterative_unsafe_collectives_reorder;
    int sink_waits_iterative_swap_with_collectives;
    long sink_waits_iterative_debug_limit_to_sink; /* < 0: none */
    double reorder_sink_runtime_estimations_comm_mult;
    double reorder_sink_runtime_estimations_non_comm_mult;
    int reorder_iterative_debug_memory_recompute;
    /* bucketing (passes/bucketing.c) */
    double bucket_cap_mb;             /* MiB, as Inductor's * 1024 * 1024 */
    long bucket_max_ops;              /* <= 0: unlimited */
    long bucket_cuts;                 /* bit i: a bucket ends after a pass's
                                         i-th eligible collective; < 0 none */
    int bucket_multidtype;
    int bucket_by_block;
    int bucket_mode;                  /* cs_bucket_mode */
    double bucket_peak_memory_budget;
    /* overlap (passes/overlap.c) */
    double overlap_peak_budget;       /* x the input order's peak; inf */
    long overlap_max_in_flight_bytes; /* per group; <= 0: unlimited */
    int overlap_collective_order;     /* cs_overlap_order */
    long overlap_reorder_window;      /* frame nodes; < 0: unlimited */
    int overlap_search;               /* cs_overlap_search */
    int overlap_peak_model;           /* cs_peak_model */
    int overlap_seeds;                /* cs_overlap_seeds */
};

typedef enum cs_overlap_order {
    CS_ORDER_FREE = 0,  /* any order the edges allow (the same on every
                           rank: the pass is deterministic) */
    CS_ORDER_GROUP = 1, /* each group's collectives keep their input order */
    CS_ORDER_INPUT = 2  /* all collectives keep their input order */
} cs_overlap_order;

typedef enum cs_overlap_search {
    CS_SEARCH_FAST = 0, /* a few candidate orders */
    CS_SEARCH_FULL = 1  /* every variant the pass knows */
} cs_overlap_search;

typedef enum cs_peak_model {
    CS_PEAK_BOTH = 0, /* the budget holds for the per-step peak and for the
                         peak over simulated time */
    CS_PEAK_STEP = 1  /* for the per-step peak alone (Inductor's model) */
} cs_peak_model;

typedef enum cs_overlap_seeds {
    CS_SEEDS_ALL = 0,   /* every built-in anchor order (overlap_seeds.c) */
    CS_SEEDS_CHEAP = 1, /* those made in O((V + E) log V): the heap
                           scheduler's and simple_overlap's */
    CS_SEEDS_NONE = 2   /* the search alone */
} cs_overlap_seeds;

typedef enum cs_bucket_mode {
    CS_BUCKET_GREEDY = 0, /* Inductor's greedy_bucket_collective_by_mb */
    CS_BUCKET_COST = 1    /* stop when a merge no longer shortens the step */
} cs_bucket_mode;

/* A growable string for limiting factors and overlap info. */
typedef struct cs_text {
    char *s;
    size_t len, cap;
    int failed; /* an append ran out of memory since the last clear: the
                   text is incomplete, and cs_text_take says so */
} cs_text;

/* overlap_info keeps the seed's first terms only: after a collective has
 * been hoisted far, the full text names every node it passes, and
 * formatting it dominated the pass on large graphs. */
#define CS_OVERLAP_INFO_TERMS 32

/* Appends the formatted text; 0, or -1 on OOM with the text unchanged and
 * marked failed. */
int cs_text_appendf(cs_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cs_text_clear(cs_text *t);
void cs_text_free(cs_text *t);
/* A malloc'ed copy of s (C11 has no strdup); NULL on OOM. */
char *cs_strdup(const char *s);
/* Moves the text out as a malloc'ed string ("" when empty); NULL on OOM,
 * now or in an append since the last clear (the text would be cut). */
char *cs_text_take(cs_text *t);

/* x as Python's str(float) prints it (the seed formats its limiting factors
 * and overlap info with f-strings): the shortest text that reads back as x,
 * fixed notation with at least one decimal ("5.0", "0.0001") when
 * 1e-4 <= |x| < 1e16, else "1e+16", "1.5e-05". Returns buf. */
const char *cs_pyfloat(char buf[static 32], double x);
/* The seed's max(0, x) printed: Python returns the int 0 unless x > 0. */
const char *cs_pymax0(char buf[static 32], double x);

/* The statistics a pass records (public view: commsched_pass_stats). */
typedef struct cs_pass_record {
    commsched_pass_stats pub;
    commsched_node_stats *rows;
    size_t cap_rows;
    commsched_bucket_stats *buckets; /* members arrays owned (one malloc
                                        each: pointers, then the names) */
    size_t cap_buckets;
    commsched_overlap_stats *overlap; /* overlap: one per collective */
    char overlap_variant[48];
} cs_pass_record;

/* Appends a row for `node` with the seed's initial values; returns it or
 * NULL on OOM. Strings are owned by the record (freed with the run). */
commsched_node_stats *cs_record_row(cs_pass_record *r, uint32_t node);
/* Replaces one of a row's strings (takes ownership of s). */
void cs_row_set(const char **field, char *s);

typedef struct cs_pass_ctx {
    commsched_graph *g;
    commsched_schedule *s;
    const double *runtime_ns;    /* estimate_op_runtime per node */
    const commsched_knobs *k;
    int verify;                  /* full recompute after every move */
    int order_only;              /* COMMSCHED_PIPELINE_ORDER_ONLY: no
                                    overlap_info texts */
    cs_pass_record *rec;
    commsched_error *err;
    /* For passes that rewrite the graph (cs_pass_replace). */
    const commsched_cost_options *cost; /* estimates for new nodes */
    commsched_run *run;          /* owns the graphs a rewrite creates */
    int64_t pipeline_peak;       /* the peak of the order the pipeline was
                                    given: budgets are factors of it, so a
                                    pass before (bucketing) that raised the
                                    peak does not raise them too */
    int64_t pipeline_time_peak;  /* its peak over simulated time, for the
                                    passes that budget it (overlap); -1
                                    when the first pass is the one that
                                    reads it (its own input is that order)
                                    or none does */
} cs_pass_ctx;

/* Hands a rewritten graph, a schedule over it and its runtimes (all owned
 * by the run from now on, even on failure) to the pipeline: ctx->g, ->s and
 * ->runtime_ns point at them afterwards. The previous ones stay valid until
 * the run is destroyed, so earlier records can still name their nodes. */
commsched_status cs_pass_replace(cs_pass_ctx *ctx, commsched_graph *g,
                                 commsched_schedule *s, double *runtime_ns);

/* Appends a bucket row (zeroed); returns it or NULL on OOM. */
commsched_bucket_stats *cs_record_bucket(cs_pass_record *r);

typedef commsched_status (*cs_pass_fn)(cs_pass_ctx *ctx);

/* ---- node predicates ------------------------------------------------------- */

static inline int cs_is_collective(const commsched_graph *g, uint32_t v)
{
    return g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
}
static inline int cs_is_async(const commsched_graph *g, uint32_t v)
{
    return cs_is_async_collective(&g->nodes[v]);
}
static inline int cs_is_wait(const commsched_graph *g, uint32_t v)
{
    return g->nodes[v].kind == COMMSCHED_NODE_WAIT;
}

/* 1 when a has a non-fake dependency on b (binary search: rows sorted). */
int cs_depends_on(const commsched_graph *g, uint32_t a, uint32_t b);

/* Relinks s into `order` (a permutation of its n nodes): moving each node
 * to the end in turn leaves them in exactly that order. O(n). */
void cs_relink(commsched_schedule *s, const uint32_t *order, uint32_t n);

/* Per-node runtimes as the iterative passes use them: estimate x the comm
 * or non-comm multiplier. Caller frees. */
double *cs_iterative_runtimes(const cs_pass_ctx *ctx);

/* What an exposed-time walk passed, for the seed's overlap_info: its
 * first terms (the node and the walk's comp_time after minus before it)
 * and where it ended. Walks always keep it, and the text is written only
 * for the walks whose text is printed (cs_walk_info). */
typedef struct cs_walk_record {
    uint32_t node[CS_OVERLAP_INFO_TERMS];
    double time[CS_OVERLAP_INFO_TERMS];
    size_t terms; /* nodes the walk summed, kept or not */
    uint32_t end; /* the wait or collective it stopped at, or NONE */
} cs_walk_record;

/* Scratch for the exposed-time walks: a stamp per node, and what a walk
 * does at each node, read from one byte instead of the node record (the
 * walks pass every node between a collective and its wait, and on a graph
 * RCPPM has reordered that is most of the pass). cs_walk_init fills it;
 * cs_walk_free releases it. rec is the last walk's record. */
enum { CS_WALK_COMPUTE, CS_WALK_WAIT, CS_WALK_ASYNC, CS_WALK_SYNC };

typedef struct cs_walk {
    uint32_t *mark;
    uint8_t *cls; /* CS_WALK_* per node */
    uint32_t epoch;
    uint32_t n;
    cs_walk_record rec;
    /* positions (cs_walk_positions_on): a walk skips what its figures
     * cannot depend on; sums: the tracker also adds runtimes
     * (cs_walk_sums_on) */
    const commsched_memory *m;
    int sums;
    uint32_t *seg; /* a wait walk's last stretch (cs_wait_exposed) */
    size_t cap_seg;
} cs_walk;

/* 0, or -1 out of memory (w then holds nothing to free). */
int cs_walk_init(cs_walk *w, const commsched_graph *g);
void cs_walk_free(cs_walk *w);

/* Walks read positions from m (borrowed, in tree mode:
 * commsched_memory_use_tree) from now on: a wait's walk then skips what
 * its figures cannot depend on (cs_wait_exposed). */
void cs_walk_positions_on(cs_walk *w, const commsched_memory *m);
/* As cs_walk_positions_on, m also having times
 * (commsched_memory_use_times): a collective's walk, once its record is
 * full, takes the rest of its sum from the tracker, in O(log n) per binade
 * the sum crosses instead of O(nodes). */
void cs_walk_sums_on(cs_walk *w, const commsched_memory *m);

/* The seed's overlap_info text of a walk into info (cleared first): a
 * "+name[t]" per kept term, "+...(N more)" for the terms past the cap,
 * then "->W[wait]" (a collective's walk, end_kind 'W') or "->C[coll]" (a
 * wait's, 'C') where it found one. */
void cs_walk_info(const cs_walk_record *r, const commsched_graph *g,
                  char end_kind, cs_text *info);

/* _coll_exposed_communication_time: walk forward from coll summing the
 * runtimes of the nodes after it until a node that depends on it or a sync
 * collective; w->rec records it. */
void cs_coll_exposed(const commsched_graph *g, const commsched_schedule *s,
                     const double *rt, uint32_t coll, double *comm,
                     double *comp, cs_walk *w);

/* _wait_exposed_communication_time: walk backward from wait to the
 * collective it depends on. With positions (cs_walk_positions_on), once
 * the record is full the rest is not walked where it need not be: the
 * figure is the sum since the last reset before that collective, and the
 * terms a count. */
void cs_wait_exposed(const commsched_graph *g, const commsched_schedule *s,
                     const double *rt, uint32_t wait, double *comm,
                     double *comp, cs_walk *w);

/* cs_heap_order's working memory (~34 bytes a node and 8 a buffer). A
 * caller that runs the scheduler on a thread of its own makes it first on
 * its calling thread: what a thread allocates comes from that thread's malloc arena,
 * and glibc keeps up to tens of MB freed there resident, where the calling
 * thread's next allocations would have reused it (overlap's seeds: ~40 MB
 * of peak RSS at 1M nodes). */
typedef struct cs_heap_scratch {
    uint32_t n, n_buffers;
    uint32_t *rank, *at, *unmet, *stamp;
    uint64_t *reach, *s0, *reach_buf;
    cs_rankset compute, other;
} cs_heap_scratch;

/* Room for a graph of n nodes and n_buffers buffers. Returns 0, or -1 on
 * OOM (h then owns nothing). cs_heap_scratch_free releases it. */
int cs_heap_scratch_init(cs_heap_scratch *h, uint32_t n, uint32_t n_buffers);
void cs_heap_scratch_free(cs_heap_scratch *h);

/* The order the seed's heap list scheduler (_schedule_for_comm: raise_comms,
 * sink_waits, reorder_compute_for_overlap) makes from `in`, a permutation of
 * the nodes, into out (n entries, the caller's). runtime_ns is read only
 * with for_overlap. scratch: working memory for g's node and buffer counts
 * (cs_heap_scratch_init), or NULL to allocate its own. ENOMEM, or
 * EINTERNAL when the edges form a cycle; out is then unspecified. */
commsched_status cs_heap_order(const commsched_graph *g, const uint32_t *in,
                               const double *runtime_ns, int raise_comms,
                               int sink_waits, int for_overlap, uint32_t *out,
                               cs_heap_scratch *scratch, commsched_error *err);

/* The pass functions. */
commsched_status cs_pass_raise_comms(cs_pass_ctx *ctx);
commsched_status cs_pass_sink_waits(cs_pass_ctx *ctx);
commsched_status cs_pass_reorder_compute_for_overlap(cs_pass_ctx *ctx);
commsched_status cs_pass_reorder_preserving_peak_memory(cs_pass_ctx *ctx);
commsched_status cs_pass_sink_waits_iterative(cs_pass_ctx *ctx);
commsched_status cs_pass_decide_global_ordering(cs_pass_ctx *ctx);
commsched_status cs_pass_bucket_all_gather(cs_pass_ctx *ctx);
commsched_status cs_pass_bucket_reduce_scatter(cs_pass_ctx *ctx);
commsched_status cs_pass_bucket_all_reduce(cs_pass_ctx *ctx);
commsched_status cs_pass_overlap(cs_pass_ctx *ctx);
commsched_status cs_pass_simple_overlap(cs_pass_ctx *ctx);
commsched_status cs_pass_bucket_transformer_blocks(cs_pass_ctx *ctx);
/* simple_overlap with its PyTorch constants opened up: moves may raise the
 * input's peak by peak_budget (x; INFINITY: no limit), and with
 * one_block_ahead a collective stops below any wait (so one issued at the
 * start of a block rises one block ahead at most) and takes along the
 * compute nodes that feed only it (a bucket's copy-in). */
commsched_status cs_simple_overlap(cs_pass_ctx *ctx, double peak_budget,
                                   int one_block_ahead);

/* Replaces g's fake edges (after_fake) and the derived fake_users; takes
 * ownership of `after_fake` on success. Returns 0 or -1 on OOM. */
int cs_graph_set_fake_edges(commsched_graph *g, cs_csr *after_fake);

#endif /* COMMSCHED_PASSES_INTERNAL_H */
