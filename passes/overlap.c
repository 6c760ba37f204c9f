/* commsched — overlap: a simulator-driven latency-hiding list scheduler
 * with a hard peak-memory budget (docs/PASSES.md).
 *
 * The order is built forward, one node at a time, while the pass keeps the
 * simulator's clocks (docs/REPORTS.md "What the figures mean": the compute stream's time, each
 * group's comm stream's free time, each issued collective's end) and the
 * memory model's live bytes (§3: allocate at the producer, free after the
 * last reader, the freeable-input baseline, outputs never freed) exactly
 * as the judge will compute them. Each step:
 *
 *  1. waits whose collectives have already ended are placed (no stall;
 *     they may free memory and unlock dependent collectives);
 *  2. the next "frame" node (compute, or a sync collective: what occupies
 *     the compute stream) is chosen: the input order's next one, or — in
 *     the dynamic variants — a ready one that does not stall on an
 *     unfinished collective, preferring the input order, what unlocks
 *     the most urgent collective (the FX scheduler's domination index),
 *     or the longest path to the end (the critical chain first);
 *  3. prefetch: every comm stream that would go idle before that frame
 *     node ends is fed with its most urgent collective whose inputs are
 *     ready (or one cheap compute step away: the copy-in/cast feeding an
 *     all-gather is pulled along), if the memory budget allows;
 *  4. the frame node's waits (each as late as its first consumer allows),
 *     step 3 again if they unlocked collectives (a fake edge from a wait
 *     to the next all-gather), and the frame node itself.
 *
 * The budget test must see the future: a prefetched all-gather holds its
 * output from its issue until its consumers run. The pass keeps the input
 * order's per-step memory levels in a segment tree (range add, range max)
 * indexed by input position: a node placed earlier than its input
 * position adds its memory delta (allocations minus what it frees) over
 * the positions it jumped, and a prefetch is allowed only if the highest
 * level over that range plus its delta stays within the budget, and the
 * live bytes right now plus its allocation do too. The tree is an
 * estimate of the future (the rest of the order differs from the input's
 * in places), so every candidate order is then judged exactly by the
 * simulator and the memory model; an order above the budget is rebuilt
 * with the budget tightened by the excess (three tries).
 *
 * Several deterministic variants (frame rule x issue policy, and with the
 * collectives pinned to their input order) are built and simulated at the
 * budget and at each standard level below it (1.0, 1.25, 1.5, 2.0 x the
 * input's peak; what fits a tighter level fits the budget); the fastest
 * within the budget wins (then the lower peak, then the earlier variant),
 * and the input order is kept unless a variant is strictly faster (from
 * CS_THREADS_MIN_NODES nodes up the variants run on every core, OpenMP,
 * each thread keeping its best; the answer is the one a single thread
 * gives trying them in order): the
 * pass is never slower than its input and never above overlap_peak_budget
 * x the input's peak. A last O(V + E) step moves each wait that frees
 * nothing to just before its first dependent (never slower). Where the
 * knobs leave the order free, the heap scheduler's orders from the input
 * (raise_comms,sink_waits; reorder_compute_for_overlap) are judged
 * against the winner too (ov_seeds), so the pass is never slower than
 * those passes at a budget their order fits.
 *
 * Edges: data, `after` and `after_fake` edges are all respected (as the
 * heap scheduler does; overlap may run after
 * decide_global_ordering_of_comms), a fake edge from a collective to a
 * wait as one to the collectives the wait completes (overlap_state.c).
 * overlap_collective_order=group|input adds edges chaining each group's
 * (or all) collectives in input order.
 *
 * Files: this one judges the variants, records the statistics and is the
 * pass; overlap_search.c builds one variant's order (the sweep);
 * overlap_state.c holds the heap, the segment tree and the state every
 * variant shares; overlap_internal.h what they share.
 *
 * Cost: O((V + E) log V) per variant: rank bit sets and heaps for ready
 * nodes (overlap_internal.h), the segment tree for the budget, a frontier
 * pointer for the input order; no per-node ancestor sets. Reachability (domination index, "unlocks")
 * comes from one reverse sweep over a topological order. */
#include "overlap_internal.h"
#include "fmt_g.h"

#include <math.h>
#include "commsched/config.h"
#if COMMSCHED_HAVE_OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- judging, the pass --------------------------------------------------- */

/* Simulates order into sim; makespan and per-step peak out. */
/* --verify-memory: `order` keeps every fake edge as overlap respects it
 * (ov_fake_to_wait: a collective's on a wait binds it to the collectives
 * the wait completes). Fails with EINTERNAL naming the two nodes. */
static commsched_status check_fake_edges(const commsched_graph *g,
                                         const uint32_t *order,
                                         commsched_error *err)
{
    uint32_t n = g->n_nodes, late = NONE, early = NONE;
    uint32_t *pos = cs_malloc_array(n ? n : 1, sizeof *pos);
    if (!pos)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t i = 0; i < n; i++)
        pos[order[i]] = i;
    for (uint32_t v = 0; v < n && late == NONE; v++)
        for (uint32_t e = g->after_fake.off[v];
             e < g->after_fake.off[v + 1] && late == NONE; e++) {
            uint32_t d = g->after_fake.idx[e];
            if (!ov_fake_to_wait(g, v, d)) {
                if (pos[d] > pos[v])
                    late = d, early = v;
                continue;
            }
            for (uint32_t r = g->reads.off[d]; r < g->reads.off[d + 1]; r++) {
                uint32_t pr = g->buffers[g->reads.idx[r]].producer;
                if (pr != NONE && pr != v &&
                    g->nodes[pr].kind == COMMSCHED_NODE_COLLECTIVE &&
                    pos[pr] > pos[v])
                    late = pr, early = v;
            }
        }
    free(pos);
    if (late == NONE)
        return COMMSCHED_OK;
    return commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                               "overlap: \"%s\" runs before \"%s\", which a "
                               "fake edge puts first",
                               g->nodes[early].name, g->nodes[late].name);
}

static commsched_status judge(commsched_sim *sim, const uint32_t *order,
                              const double *rt, double *makespan,
                              int64_t *peak, commsched_error *err)
{
    commsched_status st = commsched_sim_run(sim, order, rt, NULL, err);
    if (st != COMMSCHED_OK)
        return st;
    const commsched_sim_totals *t = commsched_sim_get_totals(sim);
    *makespan = t->makespan_ns;
    *peak = t->peak_memory_step;
    return COMMSCHED_OK;
}

/* What judge() reads of a sweep's order — the simulator's makespan and
 * per-step peak — replayed through the same kernel (kernel.h) on the
 * pass's flat arrays, in the simulator's order of operations, so both
 * figures are the simulator's to the bit (--verify-memory checks it on
 * every candidate) at a fraction of a simulator run, which also times
 * every node and fills the per-node results only the winner needs. The
 * scratch is the run's (its sweep is done): cend, sf, rem. Returns 0, or
 * 1 when the levels pass 2^63 bytes (the simulator reports that). */
static int replay(ov_run *S, const uint32_t *order, double *makespan,
                  int64_t *peak)
{
    const ov_base *b = S->b;
    memcpy(S->rem, b->nreaders, (size_t)b->n_tracked * sizeof *S->rem);
    for (uint32_t s = 0; s < b->n_streams; s++)
        S->sf[s] = 0;
    cs_clock clk = {0.0, S->sf};
    int64_t cur = b->baseline, pk = cur;
    int overflow = 0;
    for (uint32_t k = 0; k < b->n; k++) {
        uint32_t v = order[k];
        int64_t fr = b->unread_free[v];
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (--S->rem[x] == 0)
                fr += b->bsize[x];
        }
        int64_t level = cs_mem_step(&cur, b->alloc[v], fr, &overflow);
        if (level > pk)
            pk = level;
        double r = b->rt[v];
        switch (b->cls[v]) {
        case C_COMPUTE:
            cs_clock_compute(&clk, r);
            break;
        case C_COLL:
        case C_SYNC:
            S->cend[v] = cs_clock_collective(&clk, ov_stream(b, v), r,
                                             b->cls[v] == C_SYNC) + r;
            break;
        default: { /* wait */
            double e = clk.now;
            for (uint32_t x = b->wcoll.off[v]; x < b->wcoll.off[v + 1]; x++)
                if (S->cend[b->wcoll.idx[x]] > e)
                    e = S->cend[b->wcoll.idx[x]];
            cs_clock_wait(&clk, e, r);
            break;
        }
        }
    }
    *makespan = cs_clock_makespan(&clk, b->n_streams);
    *peak = pk;
    return overflow;
}

/* flags and ready (by cix) are the winning sweep's (S->flags, S->ready_t),
 * NULL for an order no sweep made (a seed): no flags, never issuable
 * early. */
static const char *limit_of(const ov_base *b, const uint8_t *flags,
                            const double *ready, int from_sweep, uint32_t c,
                            const commsched_sim_node *a)
{
    double comm = b->rt[c];
    if (!(a->exposed_ns > 1e-9 * (comm > 1 ? comm : 1)))
        return "none";
    if (b->cls[c] == C_SYNC)
        return "sync";
    if (!from_sweep)
        return "input order kept";
    uint8_t fl = flags ? flags[c] : 0;
    if (fl & F_MEM)
        return "memory budget";
    if (fl & F_INFL)
        return "in-flight limit";
    if (a->start_ns > a->issue_ns)
        return "stream busy";
    /* Issued as soon as its inputs existed: what follows it needed it
     * too soon (or nothing independent was left to run). */
    if (!ready || !(a->issue_ns > ready[b->cix[c]]))
        return (fl & F_NOCOMP) ? "no compute left" : "data dependency";
    return "stream busy"; /* held back while its stream was occupied */
}

static double hidden(double comm, double exposed)
{
    if (!(comm > 0))
        return 1.0;
    double h = 1.0 - exposed / comm;
    return h < 0 ? 0 : h > 1 ? 1 : h;
}

/* Appends s to buf at *len. */
static void put(char *buf, size_t *len, const char *s, size_t n)
{
    memcpy(buf + *len, s, n);
    *len += n;
}

/* A collective's overlap_info, as snprintf's "issue %u -> %u, wait %u ->
 * %u, hidden %.0f%% -> %.0f%%" (or "no wait") wrote it: glibc's %.0f was
 * ~7,000 instructions a value, 4% of optimize on a 133K-node trace. The
 * hidden shares are in [0, 1] or NaN (hidden()), so each piece is short:
 * the whole is below 100 bytes. cs_fmt_f0 and cs_fmt_u64 are printf's
 * byte for byte (tests/unit/test_json_writer.c). */
static void format_info(char buf[160], const commsched_overlap_stats *o)
{
    char t[CS_FMT_G_SIZE];
    size_t len = 0;
#define PUT_LIT(s) put(buf, &len, s, sizeof s - 1)
#define PUT_U(v) put(buf, &len, t, cs_fmt_u64(t, v))
#define PUT_F0(v) put(buf, &len, t, cs_fmt_f0(t, v))
    PUT_LIT("issue ");
    PUT_U(o->issue_before);
    PUT_LIT(" -> ");
    PUT_U(o->issue_after);
    if (o->wait_after == NONE) {
        PUT_LIT(", no wait");
    } else {
        PUT_LIT(", wait ");
        PUT_U(o->wait_before);
        PUT_LIT(" -> ");
        PUT_U(o->wait_after);
    }
    PUT_LIT(", hidden ");
    PUT_F0(100 * o->hidden_before);
    PUT_LIT("% -> ");
    PUT_F0(100 * o->hidden_after);
    PUT_LIT("%");
#undef PUT_LIT
#undef PUT_U
#undef PUT_F0
    buf[len] = '\0';
}

/* What the statistics keep of the input order's simulation, per
 * collective (the rest of a node's result is not read; at 1M nodes a
 * copy of every node's was 56 MB): the first wait completing it and its
 * exposed time, indexed by the base's cix (collectives and syncs only).
 * Positions in the input order are the base's pos_in. */
typedef struct ov_before {
    uint32_t *wait;
    double *exposed;
} ov_before;

/* The statistics: one row per collective in output order. */
static commsched_status record_stats(cs_pass_ctx *ctx, const ov_base *b,
                                     const uint8_t *flags, const double *ready,
                                     int from_sweep,
                                     const ov_before *bf,
                                     const commsched_sim_node *after,
                                     const uint32_t *order_out)
{
    cs_pass_record *rec = ctx->rec;
    const commsched_graph *g = b->g;
    uint32_t n = b->n, nc = 0;
    for (uint32_t v = 0; v < n; v++)
        nc += b->cls[v] == C_COLL || b->cls[v] == C_SYNC;
    free(rec->overlap);
    rec->overlap = cs_calloc(nc ? nc : 1, sizeof *rec->overlap);
    if (!rec->overlap)
        goto oom;
    uint32_t i = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t c = order_out[k];
        if (b->cls[c] != C_COLL && b->cls[c] != C_SYNC)
            continue;
        commsched_overlap_stats *o = &rec->overlap[i++];
        const commsched_sim_node *sa = &after[c];
        o->node = c;
        o->wait = sa->wait;
        o->issue_before = b->pos_in[c];
        o->issue_after = sa->position;
        uint32_t ci = b->cix[c], wb = bf->wait[ci];
        o->wait_before = wb == NONE ? NONE : b->pos_in[wb];
        o->wait_after = sa->wait == NONE ? NONE : after[sa->wait].position;
        o->comm_ns = b->rt[c];
        o->exposed_before_ns = bf->exposed[ci];
        o->exposed_after_ns = sa->exposed_ns;
        o->hidden_before = hidden(o->comm_ns, bf->exposed[ci]);
        o->hidden_after = hidden(o->comm_ns, sa->exposed_ns);
        o->limit = limit_of(b, flags, ready, from_sweep, c, sa);
        commsched_node_stats *row = cs_record_row(rec, c);
        if (!row)
            goto oom;
        row->comm_time = o->comm_ns;
        row->comp_time = sa->overlapped_ns;
        row->initial_exposed = bf->exposed[ci];
        row->final_exposed = sa->exposed_ns;
        row->moves = o->issue_before > o->issue_after
                         ? o->issue_before - o->issue_after
                         : 0;
        char *lf = cs_strdup(o->limit == NULL ? "None"
                             : strcmp(o->limit, "none") == 0 ? "None"
                                                             : o->limit);
        char buf[160];
        format_info(buf, o);
        char *info = cs_strdup(buf);
        cs_row_set(&row->limiting_factor, lf);
        cs_row_set(&row->overlap_info, info);
        if (!lf || !info)
            goto oom;
    }
    rec->pub.n_overlap = i;
    rec->pub.overlap = rec->overlap;
    (void)g;
    return COMMSCHED_OK;
oom:
    return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

/* The best order the search has seen, one for all its threads: a job
 * that beats it copies its order in under the lock. The jobs' answers
 * compare by beats(), a total order, so the order kept is the same
 * whichever thread finished which job first (one copy of n entries
 * instead of one a thread: 7 MB at 1M nodes). The lock is the search's
 * own, not a named critical section: that is a global symbol, exported
 * from the shared library, and one lock for every tune candidate's
 * search at once. */
typedef struct ov_best {
    int have;             /* a best below */
    double ms;
    int64_t pk;
    size_t job;
    const char *name;     /* its variant */
    double level;
    uint32_t *order;
    uint8_t *flags;
    double *ready;
#if COMMSCHED_HAVE_OPENMP
    omp_lock_t lock;
    int locked;           /* lock initialised */
#endif
} ov_best;

/* One thread's share of the search: its own sweep state, a view of the
 * base whose collective-order set it may switch, and a simulator made
 * only when a replay cannot decide (overflow) or verify asks. */
typedef struct ov_worker {
    ov_base view;
    ov_run S;
    commsched_sim *sim;
    commsched_status st;
    commsched_error err;
    uint32_t tried;
    ov_best *best;        /* the search's, shared */
} ov_worker;

static int worker_alloc(ov_worker *w, const ov_base *b, ov_best *best)
{
    memset(w, 0, sizeof *w);
    w->view = *b;
    w->best = best;
    return cs_ov_run_alloc(&w->S, &w->view);
}

static void worker_free(ov_worker *w)
{
    cs_ov_run_free(&w->S);
    commsched_sim_destroy(w->sim);
}

/* best is all zero (memset) before; best_free releases it either way. */
static int best_alloc(ov_best *best, const ov_base *b)
{
    size_t nn = b->n ? b->n : 1;
#if COMMSCHED_HAVE_OPENMP
    omp_init_lock(&best->lock);
    best->locked = 1;
#endif
    best->order = cs_malloc_array(nn, sizeof *best->order);
    best->flags = cs_malloc_array(nn, sizeof *best->flags);
    best->ready = cs_malloc_array(b->n_cs ? b->n_cs : 1, sizeof *best->ready);
    return best->order && best->flags && best->ready ? 0 : -1;
}

static void best_free(ov_best *best)
{
    free(best->order);
    free(best->flags);
    free(best->ready);
#if COMMSCHED_HAVE_OPENMP
    if (best->locked)
        omp_destroy_lock(&best->lock);
#endif
}

/* Whether (ms, pk) of job `job` beats the best w: faster wins; as fast,
 * less memory; then the earlier job, so the answer is the same whichever
 * thread ran which job, and the same as one thread trying them in job
 * order. An order must be strictly faster than the input (in_ms) to
 * count. */
static int beats(const ov_best *w, double in_ms, double ms, int64_t pk,
                 size_t job)
{
    if (!(ms < in_ms))
        return 0;
    if (!w->have)
        return 1;
    if (ms != w->ms)
        return ms < w->ms;
    if (pk != w->pk)
        return pk < w->pk;
    return job < w->job;
}

/* A sweep's relative cost, for the order the jobs start in: by its frame
 * rule first, then whether it issues every ready collective ("asap") or
 * just in time. Measured per job (one thread) on the 33K-node FSDP step:
 * the unlock and critical-path rules 13-14 ms, the position rule 3.6-7.6,
 * the input order's 4.3-5.9, asap 1.3-1.6 x its jit twin; on a 1M-node
 * chain the rules cost alike (0.16-0.33 s) and asap 0.40-0.43 s, so an
 * asap sweep started last left one thread idle for 0.3 s. */
#define JOB_WEIGHTS 6
static int job_weight(const ov_variant *var)
{
    int frame = var->frame == FR_REF       ? 0
                : var->frame == FR_DYN_POS ? 1
                                           : 2;
    return 2 * frame + (var->jit ? 0 : 1);
}

/* Prices `order`: the replay, and the simulator (*sim, made on first use)
 * where the replay overflows or verify asks, when both must agree. */
static commsched_status price(cs_pass_ctx *ctx, ov_run *S, commsched_sim **sim,
                              const uint32_t *order, const char *name,
                              double *ms, int64_t *pk, commsched_error *err)
{
    if (replay(S, order, ms, pk) == 0 && !ctx->verify)
        return COMMSCHED_OK;
    double ms2;
    int64_t pk2;
    commsched_status st;
    if ((!*sim && (st = commsched_sim_create(ctx->g, sim, err)) !=
                      COMMSCHED_OK) ||
        (st = judge(*sim, order, ctx->runtime_ns, &ms2, &pk2, err)) !=
            COMMSCHED_OK)
        return st;
    if (ms2 != *ms || pk2 != *pk)
        return commsched_error_set(
            err, COMMSCHED_EINTERNAL, NULL,
            "overlap: %s replayed at %.17g ns, peak %lld; the simulator says "
            "%.17g ns, %lld",
            name, *ms, (long long)*pk, ms2, (long long)pk2);
    return COMMSCHED_OK;
}

/* Prices the sweep's order and keeps it as the search's best when it fits
 * target and beats it (beats()). Errors go to w->err. */
static commsched_status consider(cs_pass_ctx *ctx, ov_worker *w,
                                 const char *name, int64_t target,
                                 double in_ms, size_t job, double level,
                                 int64_t *pk)
{
    ov_run *S = &w->S;
    size_t nn = ctx->g->n_nodes ? ctx->g->n_nodes : 1;
    double ms;
    w->tried++;
    commsched_status st =
        price(ctx, S, &w->sim, S->order, name, &ms, pk, &w->err);
    if (st != COMMSCHED_OK || (target != NO_LIMIT && *pk > target))
        return st;
    ov_best *best = w->best;
#if COMMSCHED_HAVE_OPENMP
    omp_set_lock(&best->lock);
#endif
    if (beats(best, in_ms, ms, *pk, job)) {
        best->have = 1;
        best->ms = ms;
        best->pk = *pk;
        best->job = job;
        best->name = name;
        best->level = level;
        memcpy(best->order, S->order, nn * sizeof *best->order);
        memcpy(best->flags, S->flags, nn * sizeof *best->flags);
        memcpy(best->ready, S->ready_t,
               (size_t)S->b->n_cs * sizeof *best->ready);
    }
#if COMMSCHED_HAVE_OPENMP
    omp_unset_lock(&best->lock);
#endif
    return st;
}

/* Job `job`: variant var at budget target, rebuilt with less room while it
 * comes out above the target (three tries). Records into w only. */
static commsched_status run_job(cs_pass_ctx *ctx, ov_worker *w,
                                const ov_base *b, const ov_variant *var,
                                int64_t target, int64_t cap, long window,
                                double in_ms, size_t job, double level)
{
    uint32_t n = ctx->g->n_nodes;
    w->view = *b;
    cs_ov_base_use(&w->view, var->pinned ? 1 : 0);
    ov_run *S = &w->S;
    int64_t B = target;
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = cs_ov_sweep(S, var, B, cap, window);
        if (rc < 0)
            return commsched_error_set(&w->err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        if (rc > 0)
            return commsched_error_set(&w->err, COMMSCHED_EINTERNAL, NULL,
                                       "overlap: variant %s placed %u of "
                                       "%u nodes",
                                       var->name, S->k, n);
        if (cap == 0)
            cs_ov_sink_waits_late(S);
        int64_t pk;
        commsched_status st =
            consider(ctx, w, var->name, target, in_ms, job, level, &pk);
        if (st != COMMSCHED_OK || target == NO_LIMIT || pk <= target)
            return st;
        /* Over the level: the tree's view of the future was off by at
         * least the excess. Rebuild with that much less room. */
        B -= pk - target;
        if (B < 0)
            break;
    }
    return COMMSCHED_OK;
}

/* Orders the pass judges beside its own sweeps: the seed's heap list
 * scheduler (cs_heap_order) from the input order, as the passes of those
 * names make them. Each is kept only where it fits the budget and is
 * faster (ties go to the sweeps), so overlap is never slower than those
 * passes at a budget their order fits: its sweeps place each collective
 * by rules, and on a step where the heap scheduler's exact sequence of
 * issues and waits happens to run a few hundred nanoseconds shorter
 * (astra/Transformer_HybridParallel at budget 1.0) they missed it. Only
 * where the knobs leave the order free, as those passes do. */
typedef struct ov_heap_step {
    uint8_t raise, sink, for_overlap; /* cs_heap_order's flags */
} ov_heap_step;

static const struct ov_seed {
    const char *name;
    size_t n_steps;
    ov_heap_step step[2];
} ov_seeds[] = {
    {"raise_comms,sink_waits", 2, {{1, 0, 0}, {0, 1, 0}}},
    {"reorder_compute_for_overlap", 1, {{1, 1, 1}}},
};

/* A seed's order, its price, how making it went, and its working memory
 * (the replay's scratch: rem, sf, cend; the heap scheduler's; tmp for a
 * seed of two steps). All of it is allocated by seed_alloc on the pass's
 * own thread before the seeds run, one a thread: a thread's allocations
 * come from its own malloc arena, where glibc keeps what is freed resident
 * (cs_heap_scratch). */
typedef struct ov_seed_run {
    uint32_t *order; /* n */
    double ms;
    int64_t pk;
    commsched_status st;
    commsched_error err;
    ov_run S;
    cs_heap_scratch hs;
    uint32_t *tmp;
} ov_seed_run;

/* Frees r's working memory; its order stays. */
static void seed_free_scratch(ov_seed_run *r)
{
    cs_ov_run_free(&r->S);
    memset(&r->S, 0, sizeof r->S);
    cs_heap_scratch_free(&r->hs);
    free(r->tmp);
    r->tmp = NULL;
}

static int seed_alloc(ov_seed_run *r, const ov_base *b, size_t i)
{
    size_t nn = b->n ? b->n : 1, nt = b->n_tracked ? b->n_tracked : 1;
    r->S.b = b;
    r->S.rem = cs_malloc_array(nt, sizeof *r->S.rem);
    r->S.sf = cs_malloc_array(b->n_streams, sizeof *r->S.sf);
    r->S.cend = cs_malloc_array(nn, sizeof *r->S.cend);
    if (ov_seeds[i].n_steps > 1)
        r->tmp = cs_malloc_array(nn, sizeof *r->tmp);
    r->order = cs_malloc_array(nn, sizeof *r->order);
    return r->S.rem && r->S.sf && r->S.cend && r->order &&
                   (ov_seeds[i].n_steps == 1 || r->tmp) &&
                   cs_heap_scratch_init(&r->hs, b->n) == 0
               ? 0
               : -1;
}

/* Seed `i`'s order from in_order into r (seed_alloc'd), and its price.
 * Run before the search's workers exist (cs_pass_overlap): the heap
 * scheduler's state (~34 bytes a node) and a sweep's (~140) are never
 * live at once. */
static void seed_job(cs_pass_ctx *ctx, const ov_base *b, size_t i,
                     const uint32_t *in_order, ov_seed_run *r)
{
    const struct ov_seed *sd = &ov_seeds[i];
    commsched_sim *sim = NULL;
    commsched_status st = COMMSCHED_OK;
    const uint32_t *src = in_order;
    for (size_t k = 0; k < sd->n_steps && st == COMMSCHED_OK; k++) {
        const ov_heap_step *h = &sd->step[k];
        if (k > 0) {
            memcpy(r->tmp, r->order, b->n * sizeof *r->tmp);
            src = r->tmp;
        }
        st = cs_heap_order(ctx->g, src, ctx->runtime_ns, h->raise, h->sink,
                           h->for_overlap, r->order, &r->hs, &r->err);
    }
    if (st == COMMSCHED_OK)
        st = price(ctx, &r->S, &sim, r->order, sd->name, &r->ms, &r->pk,
                   &r->err);
    r->st = st;
    commsched_sim_destroy(sim);
}

/* Whether a seed at (ms, pk) replaces the best so far: faster by more than
 * the rounding of a sum of runtimes (a different order of the same
 * additions can land an ulp apart), or as fast and lighter. */
static int seed_beats(double ms, int64_t pk, double best_ms, int64_t best_pk)
{
    double slack = 1e-9 * best_ms;
    if (ms < best_ms - slack)
        return 1;
    return !(ms > best_ms + slack) && pk < best_pk;
}

commsched_status cs_pass_overlap(cs_pass_ctx *ctx)
{
    const commsched_graph *g = ctx->g;
    const commsched_knobs *kn = ctx->k;
    uint32_t n = g->n_nodes;
    double factor = kn->overlap_peak_budget; /* >= 1: knobs_set checks */
    ov_base b;
    ov_worker *wk = NULL;
    int nt = 0; /* workers allocated */
    commsched_sim *sim = NULL;
    ov_before bf = {NULL, NULL};
    const commsched_sim_node *after = NULL;
    uint32_t *in_order = NULL;
    uint32_t *final_own = NULL; /* the winning order, taken from its owner */
    uint8_t *flags = NULL;      /* the winning sweep's (limit_of) */
    double *ready = NULL;
    ov_seed_run seeds[sizeof ov_seeds / sizeof ov_seeds[0]];
    memset(seeds, 0, sizeof seeds);
    ov_best best;
    memset(&best, 0, sizeof best);
    long *jobs = NULL;
    commsched_status st = COMMSCHED_OK;
    int rc = cs_ov_base_init(&b, g, ctx->s, ctx->runtime_ns);
    if (rc == 1) {
        cs_ov_base_free(&b);
        return commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                   "overlap: the graph's edges form a cycle");
    }
    if (rc != 0)
        goto oom;
    if (cs_ov_base_order(&b, 0, kn->overlap_collective_order) != 0 ||
        (kn->overlap_collective_order != CS_ORDER_INPUT &&
         cs_ov_base_order(&b, 1, CS_ORDER_INPUT) != 0))
        goto oom;
    cs_ov_base_use(&b, 0);
    size_t nn = n ? n : 1;
    in_order = cs_malloc_array(nn, sizeof *in_order);
    size_t ncs = b.n_cs ? b.n_cs : 1;
    bf.wait = cs_malloc_array(ncs, sizeof *bf.wait);
    bf.exposed = cs_malloc_array(ncs, sizeof *bf.exposed);
    if (!in_order || !bf.wait || !bf.exposed)
        goto oom;
    if ((st = commsched_schedule_to_array(ctx->s, in_order, ctx->err)) !=
            COMMSCHED_OK ||
        (st = commsched_sim_create(g, &sim, ctx->err)) != COMMSCHED_OK)
        goto cleanup;

    /* The input order: the bar to beat. The budget is a factor of the
     * pipeline's input peak, but never below this order's own peak (the
     * input order is always a valid answer). */
    double in_makespan;
    int64_t in_peak;
    if ((st = judge(sim, in_order, ctx->runtime_ns, &in_makespan, &in_peak,
                    ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    const commsched_sim_node *sn = commsched_sim_get_nodes(sim);
    for (uint32_t v = 0; v < n; v++)
        if (b.cls[v] == C_COLL || b.cls[v] == C_SYNC) {
            assert(sn[v].position == b.pos_in[v]);
            bf.wait[b.cix[v]] = sn[v].wait;
            bf.exposed[b.cix[v]] = sn[v].exposed_ns;
        }
    /* The simulator's state (a record per node and its tables, ~120 MB at
     * 1M nodes) is not read again until the winner is judged: not kept
     * through the search, where the workers' own states peak. */
    commsched_sim_destroy(sim);
    sim = NULL;
    int64_t budget = NO_LIMIT;
    if (!isinf(factor)) {
        double lim = floor(factor * (double)ctx->pipeline_peak);
        budget = lim >= 9.2e18 ? NO_LIMIT : (int64_t)lim;
        if (budget < in_peak)
            budget = in_peak;
    }
    int64_t cap = kn->overlap_max_in_flight_bytes > 0
                      ? (int64_t)kn->overlap_max_in_flight_bytes
                      : 0;
    long window = kn->overlap_reorder_window;

    size_t nv = kn->overlap_search == CS_SEARCH_FULL ? cs_ov_n_variants : N_FAST;
    /* The budget itself and, below it, the standard levels: an order that
     * fits a tighter level fits the budget too, and the heuristics do not
     * always do better with more room, so searching the tighter levels
     * keeps the result monotone in the budget across those levels. */
    static const double levels[] = {1.0, 1.25, 1.5, 2.0};
    double lv[1 + sizeof levels / sizeof levels[0]];
    int64_t tg[1 + sizeof levels / sizeof levels[0]];
    size_t nl = 0;
    lv[nl++] = factor;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (levels[i] < factor)
            lv[nl++] = levels[i];
    for (size_t li = 0; li < nl; li++) {
        tg[li] = NO_LIMIT;
        if (!isinf(lv[li])) {
            double lim = floor(lv[li] * (double)in_peak);
            tg[li] = lim >= 9.2e18 ? NO_LIMIT : (int64_t)lim;
            if (tg[li] < in_peak)
                tg[li] = in_peak;
            if (tg[li] > budget)
                tg[li] = budget;
        }
    }
    /* Job j = (level j / nv, variant j % nv). The jobs share nothing
     * writable but the best (ov_best, under a lock), so they run on every
     * core (OpenMP; one thread in verify mode, which is for tests); the
     * best kept is the answer a single thread gives (beats()). */
    long njobs = (long)(nl * nv);
    int want = 1;
#if COMMSCHED_HAVE_OPENMP
    /* Inside tune's parallel loop the cores are taken already; and a graph
     * below CS_THREADS_MIN_NODES is searched in a few milliseconds on one
     * thread, so its caller (a compiler's process, which may run its own
     * OpenMP runtime) gets no threads started on its behalf. */
    if (!ctx->verify && !omp_in_parallel() && n >= CS_THREADS_MIN_NODES)
        want = omp_get_max_threads();
#endif
    /* The seeds (ov_seeds), where the knobs leave the order free as the
     * passes of those names do: made and priced first, one a thread, and
     * judged against the winner in order after the search. Only their
     * orders stay meanwhile. */
    long nseeds = kn->overlap_collective_order == CS_ORDER_FREE &&
                          window < 0 && cap == 0
                      ? (long)(sizeof ov_seeds / sizeof ov_seeds[0])
                      : 0;
    int seed_threads = want < nseeds ? want : nseeds > 0 ? (int)nseeds : 1;
    (void)seed_threads; /* without OpenMP */
    for (long i = 0; i < nseeds; i++)
        if (seed_alloc(&seeds[i], &b, (size_t)i) != 0)
            goto oom;
#if COMMSCHED_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(seed_threads) \
    if (seed_threads > 1)
#endif
    for (long i = 0; i < nseeds; i++)
        seed_job(ctx, &b, (size_t)i, in_order, &seeds[i]);
    for (long i = 0; i < nseeds; i++)
        seed_free_scratch(&seeds[i]);
    uint32_t tried = 0;
    for (long i = 0; i < nseeds; i++, tried++)
        if (seeds[i].st != COMMSCHED_OK) {
            st = seeds[i].st;
            *ctx->err = seeds[i].err;
            goto cleanup;
        }
    /* The input order is the base's pos_in inverted: not kept through the
     * search (4 B a node), remade below if it stays the answer. */
    free(in_order);
    in_order = NULL;
    if (want > njobs)
        want = (int)njobs;
    if (want < 1)
        want = 1;
    wk = cs_calloc((size_t)want, sizeof *wk);
    if (!wk || best_alloc(&best, &b) != 0)
        goto oom;
    for (; nt < want; nt++)
        if (worker_alloc(&wk[nt], &b, &best) != 0) {
            worker_free(&wk[nt]);
            goto oom;
        }
    jobs = cs_malloc_array((size_t)njobs, sizeof *jobs);
    if (!jobs)
        goto oom;
    /* The heaviest jobs first (job_weight): started last, one of them
     * would leave the other threads idle at the end. Which thread runs
     * which job, and when, does not change the answer (beats()). */
    size_t nj = 0;
    for (int w8 = JOB_WEIGHTS - 1; w8 >= 0; w8--)
        for (long j = 0; j < njobs; j++)
            if (job_weight(&cs_ov_variants[(size_t)j % nv]) == w8)
                jobs[nj++] = j;
    assert(nj == (size_t)njobs);
#if COMMSCHED_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (long i = 0; i < njobs; i++) {
        long j = jobs[i];
        int t = 0;
#if COMMSCHED_HAVE_OPENMP
        t = omp_get_thread_num();
#endif
        ov_worker *w = &wk[t];
        if (w->st != COMMSCHED_OK)
            continue;
        size_t li = (size_t)j / nv;
        const ov_variant *var = &cs_ov_variants[(size_t)j % nv];
        if (window == 0 && var->frame != FR_REF)
            continue; /* the same order as the input-order variant */
        if (var->pinned && b.n_sets < 2)
            continue; /* the knob pins the order already */
        w->st = run_job(ctx, w, &b, var, tg[li], cap, window, in_makespan,
                        (size_t)j, lv[li]);
    }
    for (int t = 0; t < nt; t++) {
        if (wk[t].st != COMMSCHED_OK) {
            st = wk[t].st;
            *ctx->err = wk[t].err;
            goto cleanup;
        }
        tried += wk[t].tried;
    }
    ov_best *win = best.have ? &best : NULL;

    const char *name = win ? win->name : NULL;
    double level = win ? win->level : factor;
    /* The seeds, at the budget itself, against the winner, in order. */
    ov_seed_run *kept = NULL;
    for (long i = 0; i < nseeds; i++) {
        double best_ms = kept ? kept->ms : win ? win->ms : in_makespan;
        int64_t best_pk = kept ? kept->pk : win ? win->pk : in_peak;
        if ((budget != NO_LIMIT && seeds[i].pk > budget) ||
            !seed_beats(seeds[i].ms, seeds[i].pk, best_ms, best_pk))
            continue;
        kept = &seeds[i];
        name = ov_seeds[i].name;
        level = factor;
    }
    /* What the rest reads of the search: the final order and, for a
     * sweep's, its flags and ready times (the statistics' limits; a seed
     * has none). They are taken out of the best or the seed, and all the
     * rest is freed before the simulator is made again: the workers'
     * states, the other orders and the input order are most of the
     * pass's memory, and the judge and the statistics come on top. */
    int from_sweep = kept || win;
    if (kept) {
        final_own = kept->order;
        kept->order = NULL;
    } else if (win) {
        final_own = win->order;
        flags = win->flags;
        ready = win->ready;
        win->order = NULL;
        win->flags = NULL;
        win->ready = NULL;
    }
    for (int t = 0; t < nt; t++)
        worker_free(&wk[t]);
    free(wk);
    wk = NULL;
    nt = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        free(seeds[i].order);
        seeds[i].order = NULL;
    }
    free(jobs);
    jobs = NULL;
    cs_ov_base_trim(&b);
    if (!from_sweep) {
        final_own = cs_malloc_array(nn, sizeof *final_own);
        if (!final_own)
            goto oom;
        for (uint32_t v = 0; v < n; v++)
            final_own[b.pos_in[v]] = v;
    }
    const uint32_t *final = final_own;
    double ms_after;
    int64_t pk_after;
    if ((st = commsched_sim_create(g, &sim, ctx->err)) != COMMSCHED_OK ||
        (st = judge(sim, final, ctx->runtime_ns, &ms_after, &pk_after,
                    ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    /* The simulator's results stay until its next run: none follows. */
    after = commsched_sim_get_nodes(sim);
    if (budget != NO_LIMIT && pk_after > budget && from_sweep) {
        st = commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                 "overlap: peak %lld above the budget %lld",
                                 (long long)pk_after, (long long)budget);
        goto cleanup;
    }
    if (from_sweep)
        cs_relink(ctx->s, final, n);
    if (ctx->verify) {
        commsched_memory *m = NULL;
        /* Fake edges bind overlap's own order; when overlap keeps its
         * input, an earlier pass (RCPPM, sink_waits_iterative) may have
         * legitimately crossed them, so only the real edges are checked. */
        if ((st = commsched_schedule_check(ctx->s, 0, ctx->err)) !=
                COMMSCHED_OK ||
            (from_sweep &&
             (st = check_fake_edges(g, final, ctx->err)) != COMMSCHED_OK) ||
            (st = commsched_memory_create(ctx->s, &m, ctx->err)) !=
                COMMSCHED_OK)
            goto cleanup;
        int64_t pk = commsched_memory_peak(m, ctx->s, NULL);
        commsched_memory_destroy(m);
        if (pk != pk_after) {
            st = commsched_error_set(ctx->err, COMMSCHED_EINTERNAL, NULL,
                                     "overlap: memory model peak %lld, "
                                     "simulator %lld",
                                     (long long)pk, (long long)pk_after);
            goto cleanup;
        }
    }
    if (name && level != factor)
        snprintf(ctx->rec->overlap_variant, sizeof ctx->rec->overlap_variant,
                 "%s, budget %g", name, level);
    else
        snprintf(ctx->rec->overlap_variant, sizeof ctx->rec->overlap_variant,
                 "%s", name ? name : "input");
    ctx->rec->pub.overlap_variant = ctx->rec->overlap_variant;
    ctx->rec->pub.overlap_budget_bytes = budget == NO_LIMIT ? -1 : budget;
    ctx->rec->pub.overlap_candidates = tried;
    st = record_stats(ctx, &b, flags, ready, from_sweep, &bf, after, final);
    goto cleanup;
oom:
    st = commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                             "out of memory");
cleanup:
    commsched_sim_destroy(sim);
    free(bf.wait);
    free(bf.exposed);
    free(in_order);
    free(final_own);
    free(flags);
    free(ready);
    for (int t = 0; t < nt; t++)
        worker_free(&wk[t]);
    free(wk);
    free(jobs);
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        seed_free_scratch(&seeds[i]);
        free(seeds[i].order);
    }
    best_free(&best);
    cs_ov_base_free(&b);
    return st;
}
