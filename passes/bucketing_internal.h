/* commsched — what the bucketing files share (passes/bucketing.c: the
 * candidates, the greedy walk and the rewrite; bucketing_price.c: a merge
 * priced over flat arrays; bucketing_incr.c: the same peak, priced
 * incrementally). Internal to the passes layer. */
#ifndef COMMSCHED_BUCKETING_INTERNAL_H
#define COMMSCHED_BUCKETING_INTERNAL_H

#include <assert.h>
#include <stdint.h>

#include "heap.h"
#include "kernel.h"
#include "passes_internal.h"

typedef struct bk_incr bk_incr_t; /* bucketing_incr.c */
typedef struct bk_time bk_time_t; /* bucketing_time.c */

/* A collective of the pass's op, in wait order. */
typedef struct cand {
    uint32_t coll, wait;
    uint32_t in, out;           /* the buffers it reads and writes */
    int64_t in_bytes, out_bytes; /* root sizes */
    int64_t bytes;              /* max of the two, as Inductor counts */
    int eligible;               /* may join a bucket at all */
    int in_place;               /* output is an alias of the input */
    int wait_reads_in;          /* the wait also reads the input */
} cand;

typedef struct bucket {
    uint32_t first, n;     /* members: mem[first .. first + n) */
    int64_t bytes;
    uint32_t name_k;       /* "bucket_<tag>_<name_k>" */
    const char *closed_by;
} bucket;

/* Names of one bucket's nodes and buffers. */
typedef struct bnames {
    char coll[48], copy_in[64], wait[64], in[64], out[64];
} bnames;

/* One rewritten graph. */
typedef struct built {
    commsched_graph *g;
    double *runtime;
    uint32_t *bucket_node; /* per bucket: copy-in, collective, wait */
    uint32_t fake_dropped;
} built;

typedef struct bk_pass {
    cs_pass_ctx *ctx;
    const commsched_graph *g;
    commsched_coll_op op;
    const char *tag;
    int by_block;          /* the key also holds the node's block run */
    uint32_t *block_run;   /* by_block: node -> its run of consecutive
                              nodes (input order) of one block */
    uint32_t n;
    uint32_t *order, *pos;
    cand *cands;
    size_t n_cands;
    uint32_t *mem;         /* member candidate indices */
    size_t n_mem;
    bucket *bk;            /* closed buckets of two or more */
    size_t n_bk, cap_bk;
    /* lazy descendant marks of the open bucket */
    uint32_t *mark, epoch;
    cs_heap desc;
    uint32_t *via;         /* buffer -> the candidate whose output is on its
                              alias chain, or NONE */
    uint32_t *cand_bucket; /* candidate -> its bucket while mapped */
    /* materialize scratch */
    uint32_t *vmap;        /* old node -> itself or its bucket node's id */
    bnames *names;
    size_t cap_names;
    const char **s_in, **s_after, **s_fake;
    size_t cap_in, cap_after, cap_fake;
    commsched_output_spec *s_out;
    size_t cap_out;
    uint32_t *seen, seen_stamp;
    size_t cap_seen;
    bk_incr_t *incr;       /* incremental peak, or NULL */
    bk_time_t *time;       /* incremental step (bucket_mode=cost), or NULL */
    uint32_t n_priced, n_full; /* merges priced; pricings the full way */
} bk_pass;

static inline commsched_status bk_oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

/* A node in the one heap (heap.h), ordered by its key. The heaps are reserved for every node up front and hold a node at
 * most once, so a push cannot need memory. */
static inline void bk_push_node(cs_heap *h, uint64_t key, uint32_t v)
{
    cs_heap_item x = {key, 0.0, v, v};
    int rc = cs_heap_push(h, x);
    assert(rc == 0);
    (void)rc;
}

static inline const bucket *bk_bucket_at(const bk_pass *p, const bucket *extra,
                               size_t i)
{
    return i < p->n_bk ? &p->bk[i] : extra;
}

static inline const cand *bk_member(const bk_pass *p, const bucket *b, uint32_t i)
{
    assert(i < b->n && b->first + i < p->n_mem + 1);
    return &p->cands[p->mem[b->first + i]];
}

/* What a bucket allocates. An all-gather gathers in place: its copy-in
 * allocates the whole flat output and writes this rank's slice of it, as
 * Inductor's _pre_bucket_all_gather does, so the bucket costs its output
 * and no separate flat input. An all-reduce whose members all were in
 * place is in place on the flat input too. */
typedef struct flat {
    int64_t copy_size; /* the copy-in's buffer ("_in") */
    int64_t out_size;  /* the collective's own buffer ("_out"), if real */
    int out_alias;     /* "_out" is an alias of "_in" */
    double copied;     /* bytes the copy-in reads (and writes) */
    int wait_reads_in; /* the wait reads "_in" too (a member's wait read
                          its input and "_out" is not "_in") */
} flat;

/* The new order over virtual ids (old nodes, then copy-in, collective and
 * wait of each bucket). Keys: an old node its position; a bucket's copy-in
 * and collective the later of its first member's issue point and its
 * inputs' producers (after the node there); its wait the first member
 * wait's position. A stable topological sort by key places every node as
 * close to its key as the dependencies allow. Buckets must be mapped. */
typedef struct placement {
    size_t nb, V;
    uint32_t *vorder, *newidx;
    uint32_t placed;
} placement;

/* What bucket bk allocates (above). */
flat cs_bk_flat_of(const bk_pass *p, const bucket *bk);
/* The placement with the closed buckets and `extra` (may be NULL) merged;
 * `extra` must be mapped (map_buckets). On failure pl is empty. */
commsched_status cs_bk_place(bk_pass *p, const bucket *extra, placement *pl);
void cs_bk_placement_free(placement *pl);
/* Peak memory of g in `order` (NULL: its own), and (makespan not NULL)
 * the simulated step, by the library's memory model and simulator. */
commsched_status cs_bk_price(const commsched_graph *g, const uint32_t *order,
                             const double *runtime, int64_t *peak,
                             double *makespan, commsched_error *err);
/* The runtimes of bucket bk's copy-in and collective (flat f). */
commsched_status cs_bk_new_runtimes(const bk_pass *p, const bucket *bk,
                                    const flat *f, double *copy,
                                    double *coll);
/* Buffer x's root in the merged graph (root ids: the graph's buffers, then
 * "_in" and "_out" of each bucket); fl holds every mapped bucket's flat. */
uint32_t cs_bk_new_root(const bk_pass *p, const flat *fl, uint32_t x);
/* Runs body with c for every collective whose end the wait-like node v
 * (an old node, neither compute nor collective) waits for: the producer
 * of a buffer it reads. The simulator's rule, as cs_bk_step applies it. */
#define CS_BK_FOR_WAITED(g, v, c, body)                                      \
    do {                                                                     \
        for (uint32_t e_ = (g)->reads.off[v]; e_ < (g)->reads.off[(v) + 1];  \
             e_++) {                                                         \
            uint32_t c = (g)->buffers[(g)->reads.idx[e_]].producer;          \
            if (c != COMMSCHED_NONE && cs_is_collective(g, c)) {             \
                body;                                                        \
            }                                                                \
        }                                                                    \
    } while (0)

/* Steps node v of a merged order (a virtual id: an old node, or a
 * bucket's copy-in, collective or wait; buckets mapped) on clk as the
 * simulator does (kernel.h), with runtime r: a collective's end goes to
 * end[v], a wait starts once the collectives it waits for have ended
 * (their ends read from end). The one step the full pricing and the
 * incremental one (bucketing_time.c) share. */
void cs_bk_step(const bk_pass *p, const bucket *extra, cs_clock *clk,
                uint32_t v, double r, double *end);
/* The peak and (makespan_out not NULL) the simulated step of placement pl
 * without building the graph. */
commsched_status cs_bk_virtual_price(bk_pass *p, const bucket *extra,
                                     const placement *pl, int64_t *peak_out,
                                     double *makespan_out);

/* bucketing_incr.c: the peak of a merge from a state kept across the walk.
 * create builds it for the input order (p->incr stays NULL where it does
 * not apply); peak prices the closed buckets and `extra` (mapped, index
 * p->n_bk) and returns 1, or 0 when the caller must price the full way;
 * accept: the last priced merge was taken; opened: a new open bucket;
 * closed: bucket bk (two or more members, index p->n_bk) has closed. */
commsched_status cs_bk_incr_create(bk_pass *p);
int cs_bk_incr_peak(bk_pass *p, const bucket *extra, int64_t *peak);
void cs_bk_incr_accept(bk_pass *p);
void cs_bk_incr_opened(bk_pass *p);
void cs_bk_incr_closed(bk_pass *p, const bucket *bk);
void cs_bk_incr_destroy(bk_pass *p);

/* The window of the last pricing cs_bk_incr_peak did (it returned 1):
 * input positions L .. H of the graph with the closed buckets merged are
 * replaced by v[0 .. m), virtual ids in order; everything before L and
 * after H is where that graph has it. Returns 0 when there is none. */
typedef struct bk_window {
    uint32_t L, H, m;
    const uint32_t *v;
} bk_window;
int cs_bk_incr_window(const bk_pass *p, bk_window *w);

/* bucketing_time.c: the simulated step of a merge (bucket_mode=cost) from
 * the window of its incremental peak and a state kept across the walk.
 * The step is known exactly (eps 0) or to lie within eps of est. */
typedef struct bk_step {
    double est, eps;
} bk_step;
/* create keeps p->time NULL where it does not apply (a runtime that is
 * negative or not finite). price: after cs_bk_incr_peak returned 1 for
 * `extra`, returns 1 and the step, or 0 when the caller must price the
 * full way; accept, opened and closed as for the peak. */
commsched_status cs_bk_time_create(bk_pass *p);
int cs_bk_time_price(bk_pass *p, const bucket *extra, bk_step *step);
void cs_bk_time_accept(bk_pass *p);
void cs_bk_time_opened(bk_pass *p);
void cs_bk_time_closed(bk_pass *p);
void cs_bk_time_destroy(bk_pass *p);

#endif
