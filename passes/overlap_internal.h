/* commsched — what the overlap pass's files share (map: overlap.c): the
 * node classes, the ready sets and the segment tree (overlap_state.c), the
 * state every variant shares (ov_base, overlap_state.c), one variant's
 * forward list scheduler (ov_run, overlap_search.c). Not installed. */
#ifndef COMMSCHED_OVERLAP_INTERNAL_H
#define COMMSCHED_OVERLAP_INTERNAL_H

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/simulate.h"
#include "heap.h"
#include "kernel.h"
#include "rankset.h"
#include "segtree.h"
#include "passes_internal.h"

#define NONE COMMSCHED_NONE
#define NO_LIMIT INT64_MAX

/* Node classes as the pass sees them. A frame node runs on the compute
 * stream in the order chosen by the frame rule; collectives and waits are
 * placed around frame nodes. */
enum { C_COMPUTE = 0, C_COLL = 1, C_WAIT = 2, C_SYNC = 3 };

static inline int is_frame(uint8_t c) { return c == C_COMPUTE || c == C_SYNC; }

/* Whether the fake edge "v after d" binds v to the collectives wait d
 * completes rather than to d (an async collective's on a wait: why in
 * cs_ov_base_init). Overlap respects every other fake edge as it is. */
static inline int ov_fake_to_wait(const commsched_graph *g, uint32_t v,
                                  uint32_t d)
{
    return cs_is_async(g, v) && g->nodes[d].kind == COMMSCHED_NODE_WAIT;
}

/* A heap key of the pass (waits, force()'s scratch), in the one heap's
 * item (heap.h): class rank r first, then a (urgency, or a time), then
 * the input position b, which makes every key distinct. */
static inline cs_heap_item ov_key(uint32_t r, uint32_t b, double a, uint32_t v)
{
    cs_heap_item x = {r, a, b, v};
    return x;
}


typedef struct ov_base {
    const commsched_graph *g;
    uint32_t n, n_streams;
    const double *rt;
    uint8_t *cls;
    uint32_t *stream;     /* collectives, by cix: their group (their comm
                             stream; ov_stream) */
    int64_t *bytes;       /* collectives, by cix: bytes moved (in-flight
                             limit; ov_bytes) */
    cs_csr deps, users;   /* data + after + after_fake, distinct */
    unsigned borrowed;    /* bits 1, 2, 4: deps, users, reads are the
                             graph's own (cs_ov_base_init), not freed */
    cs_csr wcoll;         /* wait -> the collectives whose outputs it reads */
    cs_csr reads;         /* node -> buffers freed after their last reader
                             that it reads (the memory model's tracked set) */
    /* The buffers the memory model frees after their last reader, by
     * their index in reads.idx (cs_ov_base_init): their rank among those
     * buffers, or the buffer's own index when reads is the graph's. The
     * workers' rem has n_tracked entries too. */
    uint32_t n_tracked;
    int64_t *bsize;
    uint32_t *nreaders;
    int64_t *alloc;       /* per node: bytes its real outputs allocate */
    int64_t *unread_free; /* per node: its outputs nobody reads, not kept */
    int64_t baseline;
    int64_t max_alloc;    /* the largest allocation of one node */
    /* The reference order T: the input order, or the closest order that
     * respects every fake edge when the input breaks some. */
    uint32_t *topo, *tpos;
    uint32_t *frank;      /* frame nodes: index among frame nodes in T */
    uint32_t *fat;        /* frame index -> frame node */
    uint32_t *brank, *bat; /* frame nodes ranked by bottom level (the
                              longest path of runtimes, collectives'
                              included, from the node to the end),
                              highest first, then by T position: the
                              critical-path rule's key */
    uint32_t n_frame, n_coll; /* frame nodes; collectives (C_COLL) */
    uint32_t *soff;       /* per stream + 1: its first collective rank */
    uint32_t *gap_start;  /* frame nodes, by frank: T position after the
                             previous frame node */
    int64_t *free_ref;    /* per node: bytes freed after it in T (a
                             node's delta, ov_dref, is computed where
                             read: one subtraction, not 8 B a node) */
    /* Collectives and syncs (C_COLL, C_SYNC), in node order: cix[v] is
     * v's index among them (NONE for the other nodes), n_cs their count.
     * What is kept of a collective only (ready times, the input order's
     * waits and exposed times) is indexed by it, a third of the nodes in
     * a training step instead of all. Kept by cs_ov_base_trim. */
    uint32_t *cix, n_cs;
    /* The collective order in force (ov_ord below) — the knob's, or the
     * input order's for the variants that pin it; the sweep reads these. */
    uint32_t *dom;        /* collectives and syncs, by cix (ov_dom): frame
                             rank of the first frame node reached, n_frame
                             when none is */
    uint32_t *ord_prev, *ord_next; /* collective order edges, by cix
                                      (ov_prev); NULL when there are none
                                      ("free") */
    uint8_t *ord_dup;     /* the order edge duplicates a real one */
    /* The ready sets' keys as ranks (cs_rankset): collectives (C_COLL) by
     * (dom, T position) within their stream, the streams one after the
     * other (stream s's ranks are soff[s] .. soff[s + 1]); frame nodes by
     * (unl, T position) for the unlock rule (by T position: frank). */
    uint32_t *crank, *cat; /* collective -> rank, rank -> collective */
    uint32_t *urank, *uat; /* frame node -> rank, rank -> frame node;
                              urank is crank's array (the two sets of
                              nodes are disjoint) */
    struct ov_ord {
        uint32_t *dom, *prev, *next;
        uint8_t *dup;
        uint32_t *crank, *cat, *urank, *uat;
    } set[2];             /* [0] the knob's order, [1] the input's */
    int n_sets;
    uint32_t *pos_in;     /* position in the pass's input order */
    int time_peak;        /* the replay also prices the peak over
                             simulated time (overlap_peak_model=both) */
} ov_base;

/* Collective c's domination index (dom above). */
static inline uint32_t ov_dom(const ov_base *b, uint32_t c)
{
    return b->dom[b->cix[c]];
}

/* Collective (or sync) c's comm stream, and the bytes it moves. */
static inline uint32_t ov_stream(const ov_base *b, uint32_t c)
{
    return b->stream[b->cix[c]];
}

static inline int64_t ov_bytes(const ov_base *b, uint32_t c)
{
    return b->bytes[b->cix[c]];
}

/* The bytes node v adds to the levels it jumps: what it allocates less
 * what it frees at its reference position. */
static inline int64_t ov_dref(const ov_base *b, uint32_t v)
{
    return b->alloc[v] - b->free_ref[v];
}

/* The collective-order edges in force: v's predecessor and successor
 * (NONE for none: always so for a node other than a collective or sync,
 * and under "free", which allocates no arrays), and whether v's edge
 * from its predecessor duplicates a real one. */
static inline uint32_t ov_prev(const ov_base *b, uint32_t v)
{
    return b->ord_prev && b->cix[v] != NONE ? b->ord_prev[b->cix[v]]
                                            : NONE;
}

static inline uint32_t ov_next(const ov_base *b, uint32_t v)
{
    return b->ord_next && b->cix[v] != NONE ? b->ord_next[b->cix[v]]
                                            : NONE;
}

static inline int ov_dup(const ov_base *b, uint32_t v)
{
    return b->ord_dup && b->cix[v] != NONE ? b->ord_dup[b->cix[v]] : 0;
}

enum { FR_REF = 0, FR_DYN_POS = 1, FR_DYN_UNLOCK = 2, FR_DYN_CRIT = 3 };

typedef struct ov_variant {
    uint8_t frame;      /* FR_*: how the next compute node is chosen */
    uint8_t pinned;     /* keep all collectives in their input order (as
                           after decide_global_ordering_of_comms); only
                           tried when the knob leaves the order freer */
    uint8_t jit;        /* 1: feed a comm stream only when it would go idle
                           before the next compute node ends; 0: issue
                           every ready collective the budget allows */
    uint8_t eager_free; /* issue collectives that lower memory (a
                           reduce-scatter freeing its input) at once, even
                           when their stream is busy */
    const char *name;
} ov_variant;

/* The fast set is the first N_FAST variants; `full` runs them all. */
#define N_FAST 8

/* Per-node flags: the statistics read the first four of collectives;
 * force()'s two are set only while it runs. */
enum {
    F_MEM = 1,      /* the budget refused an issue it wanted */
    F_INFL = 2,     /* overlap_max_in_flight_bytes refused one */
    F_INFLIGHT = 4, /* issued, its wait not placed yet (in-flight bytes) */
    F_NOCOMP = 8,   /* its wait stalled with no other ready compute */
    F_MOVED = 16,   /* a wait cs_ov_sink_waits_late moves (its pos is the
                       slot it moves to) */
    F_FORCE_IN = 32, /* force(): its target or an ancestor it found */
    F_FORCE_QUEUED = 64, /* force(): ... and put in its heap (ah) */
    F_ROOM = 128     /* a wait placed early to make room (make_room):
                        cs_ov_sink_waits_late leaves it */
};

#define K_STREAM 8  /* collectives examined per prefetch decision */
#define K_FRAME 16  /* frame candidates examined per step */
#define OV_WIT_SLOTS 65536 /* at most: the witnesses re-read are those of
                              the candidates near the sweep's front */
#define FEEDER_FRACTION 0.25 /* compute a prefetch may pull along, as a
                                fraction of the collective's runtime */

typedef struct ov_run {
    const ov_base *b;
    const ov_variant *var;
    int64_t B;          /* effective budget, NO_LIMIT for none */
    int64_t cap;        /* in-flight bytes per group, <= 0: none */
    long window;
    uint32_t *unmet;    /* unscheduled deps (all edges + order edge) */
    uint32_t *blockers; /* collectives: unscheduled deps other than ready
                           compute nodes (which can be pulled along) */
    uint8_t *sched, *in_fh, *in_sh; /* placed; in fh; in sh or shf */
    uint32_t *order, k;
    uint32_t *rem;
    double *cend;       /* a collective's end; a wait's, the latest end
                           of its collectives (one array: the two sets
                           are disjoint, and it is 8 bytes a node) */
    double now, *sf;
    int64_t *infl, cur, peak;
    cs_rankset fh;        /* ready frame nodes, by the frame rule's key
                             (ranks frk; kept only by the dynamic rules) */
    const uint32_t *frk, *fat; /* the frame rule's node -> rank -> node */
    int use_fh;
    cs_heap wh;           /* ready waits, by the end of their collectives */
    cs_heap ah;           /* force()'s scratch */
    cs_rankset sh, shf;   /* issuable collectives by urgency (crank), each
                             stream its own range; shf those that free at
                             least what they take. A node leaves its set
                             as soon as it is placed */
    cs_segtree seg;
    int use_seg;
    struct ov_wit {     /* where the tree last refused a node, in a
                           direct-mapped cache (wit_key: frame nodes by
                           frank, collectives after them by cix; nothing
                           else is tested), wit_mask + 1 slots */
        int64_t val;    /* the level there, as of epoch ep */
        uint32_t pos;   /* the position */
        uint32_t ep;
        uint32_t key;   /* whose witness it is, NONE for nobody's */
    } *wit;
    uint32_t wit_mask;
    uint32_t neg_ep;    /* counts the tree's negative adds: while it stays,
                           every level is at least what it was */
    uint32_t fi, lo;
    double *ready_t; /* collectives, by cix: compute-stream time they
                        became issuable (inputs ready or one cheap step
                        away) */
    /* A stream's last walk of its candidates (try_issue), by 2 x stream +
     * only_freeing, when it refused every one for reasons that stay true
     * until one of the conditions kept here moves: the walk is not made
     * again until then (its answer and its flags would be the same). */
    struct ov_refusal {
        uint32_t neg_ep; /* the tree's negative adds, as of the walk */
        uint32_t minpos; /* the lowest witness position it relied on */
        uint8_t stands;  /* 0: walk again (the stream's candidates, or a
                            feeder of one, changed since) */
    } *refused;
    uint8_t walk_stable; /* scratch of one walk: every refusal so far is
                            one that stands (issuable) */
    uint32_t walk_minpos;
#ifndef NDEBUG
    uint32_t new_notes; /* flags issuable set that were not set: a walk
                           try_issue skips must add none */
#endif
    uint8_t *flags;
    uint32_t *stk, *list, *undo; /* list: n + 1 */
    int oom;
    /* The peak over simulated time, when the base budgets it: its budget
     * (NO_LIMIT for none) and the live bytes at the compute stream's time
     * now as the simulator's curve counts them, where a buffer that an
     * async collective in flight reads lives until that collective ends
     * (hold: the latest end of those placed, per tracked buffer; held:
     * the frees still to come, by time, v the buffer). */
    int64_t Bt, cur_t;
    int room;           /* make_room on (cs_ov_sweep) */
    double *hold;
    cs_heap held;
    /* ... and the collectives issued but not started by now (queued on
     * their stream), by start: their allocations land then (lands, v the
     * collective; pend_alloc their sum). */
    cs_heap lands;
    int64_t pend_alloc;
    /* The replay's, when the base prices the peak over simulated time
     * (overlap_judge.c): each node's start, the bytes freed at its end in
     * time, the head of each stream's sequence of nodes (compute first)
     * and the merge of their events. */
    double *tstart;
    int64_t *tfree;
    uint32_t *thead, *tlast; /* tlast: per tracked buffer */
    cs_heap ev;
} ov_run;

/* The variants, fast set first (overlap_search.c). */
extern const ov_variant cs_ov_variants[];
extern const size_t cs_ov_n_variants;

/* overlap_state.c: the heap, the segment tree, the shared state. */
void cs_ov_base_free(ov_base *b);
/* Frees all of b but what the statistics read after the search (g, n, rt,
 * cls, pos_in); cs_ov_base_free still frees those. */
void cs_ov_base_trim(ov_base *b);
int cs_ov_base_init(ov_base *b, const commsched_graph *g,
                     const commsched_schedule *s, const double *rt);
int cs_ov_base_order(ov_base *b, int i, int mode);
void cs_ov_base_use(ov_base *b, int i);

/* overlap_search.c: one variant's sweep and what the pass reuses of it. */
double cs_ov_issue(ov_run *S, uint32_t c);
int cs_ov_run_alloc(ov_run *S, const ov_base *b);
/* Only what cs_ov_replay reads (the seeds' runs); cs_ov_run_free frees
 * either. */
int cs_ov_replay_alloc(ov_run *S, const ov_base *b);
void cs_ov_run_free(ov_run *S);
/* Right after cs_ov_sweep only: its scratch is the sweep's own. */
void cs_ov_sink_waits_late(ov_run *S);
/* One order at budgets budget (per step) and budget_t (over time,
 * NO_LIMIT for none); room: before a frame node that would pass either,
 * place the waits that free what it needs (make_room). */
int cs_ov_sweep(ov_run *S, const ov_variant *var, int64_t budget,
                int64_t budget_t, int room, int64_t cap, long window);

/* overlap_judge.c: what an order costs, and whether it keeps the fake
 * edges as the pass reads them. */
typedef struct ov_price {
    double ms;   /* the simulator's makespan */
    int64_t pk;  /* the per-step peak (memory model) */
    int64_t tpk; /* the peak over simulated time; 0 unless the base's
                    time_peak */
} ov_price;

/* Budgets in bytes, NO_LIMIT for none. */
typedef struct ov_budget {
    int64_t step, time;
} ov_budget;

static inline int ov_fits(const ov_price *p, ov_budget bg)
{
    return p->pk <= bg.step && p->tpk <= bg.time;
}

/* The simulator's figures of order (sim made for ctx->g). */
commsched_status cs_ov_judge(commsched_sim *sim, const uint32_t *order,
                             const double *rt, ov_price *out,
                             commsched_error *err);
/* The same figures from the base's flat arrays, bit for bit (S's replay
 * scratch, cs_ov_replay_alloc); returns 1 when the levels pass 2^63
 * bytes (the simulator reports that), else 0. O((V + E) + V log S). */
int cs_ov_replay(ov_run *S, const uint32_t *order, ov_price *out);
/* cs_ov_replay, and the simulator (*sim, made on first use) where the
 * replay overflows or ctx->verify asks, when both must agree (EINTERNAL
 * naming `name` otherwise). */
commsched_status cs_ov_price(cs_pass_ctx *ctx, ov_run *S, commsched_sim **sim,
                             const uint32_t *order, const char *name,
                             ov_price *out, commsched_error *err);
/* Whether order keeps every fake edge of g as overlap reads them
 * (ov_fake_to_wait); with err, EINTERNAL naming the two nodes when not
 * (err NULL: the answer only). ENOMEM on OOM. */
commsched_status cs_ov_check_fake_edges(const commsched_graph *g,
                                        const uint32_t *order, int *kept,
                                        commsched_error *err);

/* overlap_seeds.c: the anchor orders judged beside the search (docs/
 * PASSES.md, overlap, "Seeds"): each made from the pass's input order by
 * the pass of its name, priced like a sweep's. */
typedef struct ov_seed_run {
    uint32_t *order;  /* n */
    ov_price price;
    int valid;        /* 0: its order breaks a fake edge as overlap reads
                         them, and is not the pass's to give */
    commsched_status st;
    commsched_error err;
    ov_run S;         /* the replay's scratch */
    cs_heap_scratch hs;
    uint32_t *tmp;
} ov_seed_run;

size_t cs_ov_seed_count(void);
const char *cs_ov_seed_name(size_t i);
/* Seed i is Inductor's pipeline: ~10x a sweep's cost, not in the cheap
 * set, and started first. */
int cs_ov_seed_costly(size_t i);
/* Whether seed i is judged under these knobs: the seed set asks for it and
 * its order obeys the order knobs (collective order, reorder window, no
 * in-flight limit, which no seed keeps). */
int cs_ov_seed_wanted(size_t i, const commsched_knobs *k);
/* r zeroed before; cs_ov_seed_free frees it either way. 0 or -1 (OOM). */
int cs_ov_seed_alloc(ov_seed_run *r, const ov_base *b, size_t i);
/* Seed i's order from in_order into r and its price. Errors in r->st and
 * r->err. */
void cs_ov_seed_run(cs_pass_ctx *ctx, const ov_base *b, size_t i,
                    const uint32_t *in_order, ov_seed_run *r);
/* Frees r's working memory; its order stays. */
void cs_ov_seed_free_scratch(ov_seed_run *r);
void cs_ov_seed_free(ov_seed_run *r);

#endif /* COMMSCHED_OVERLAP_INTERNAL_H */
