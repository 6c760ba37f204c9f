/* commsched — tune: many pipelines and knob settings judged in parallel
 * (commsched/commsched.h, docs/PASSES.md "tune").
 *
 * Each candidate is one commsched_optimize call with its own options, given
 * the input's runtimes and simulated figures from one baseline run
 * (cs_optimize_given) instead of pricing them again; the graph and those
 * are shared and only read (commsched_optimize works on a private view
 * of it, so passes that add fake edges or rewrite the graph never touch it),
 * and every candidate owns its pipeline run, schedule and simulator. The
 * parallel loop therefore shares nothing writable: each iteration writes
 * only its own slot of the candidate array. All options are built before
 * the loop, serially, and nothing in commsched_optimize calls igraph.
 *
 * Determinism: results live at their candidate's index and the ranking
 * breaks ties by index, so the answer (and every figure but wall_ms) is the
 * same for any thread count and any completion order.
 *
 * The search is three steps that commsched_tune runs in one call and a
 * caller spreading candidates over processes runs apart
 * (commsched_tune_prepare, _evaluate or _record, _finish): the figures
 * a candidate gets depend only on the graph and its options, and the
 * ranking only on the figures, so a candidate judged in another process
 * and recorded here ranks exactly as one judged here. */
#include "commsched/commsched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commsched/config.h"
#include "optimize_internal.h"
#include "util.h"

#if COMMSCHED_HAVE_OPENMP
#include <omp.h>
#endif

#define INDUCTOR                                                               \
    "decide_global_ordering_of_comms,"                                         \
    "reorder_communication_preserving_peak_memory,sink_waits_iterative,"       \
    "reorder_communication_preserving_peak_memory"
#define BUCKETS "bucket_all_gather,bucket_reduce_scatter,bucket_all_reduce"

typedef struct cand {
    char *passes, *knobs, *error;
    commsched_optimize_options *opts;
    commsched_tune_candidate pub;
    int judged; /* evaluated or recorded: pub holds its figures */
} cand;

struct commsched_tune_result {
    cand *c;
    size_t n, cap;
    size_t *rank; /* NULL until commsched_tune_finish */
    commsched_sim_totals input;
    double *runtime; /* the input's runtimes, priced once (node_count) */
    uint32_t node_count;
    int64_t budget_bytes, time_budget_bytes;
    commsched_tune_options o; /* candidates not kept; device copied below */
    commsched_device device;
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

static char *dup_str(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

void commsched_tune_options_init(commsched_tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->budget = 1.0;
    o->threads = 0;
    o->builtin = 1;
    o->device = NULL;
    o->measured = NULL;
    o->comm_model = COMMSCHED_COMM_MODEL_NCCL;
    o->comm_streams = COMMSCHED_STREAMS_PER_GROUP;
    o->peak_model = COMMSCHED_PEAK_BOTH;
}

void commsched_tune_result_destroy(commsched_tune_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->c[i].passes);
        free(r->c[i].knobs);
        free(r->c[i].error);
        commsched_optimize_options_destroy(r->c[i].opts);
    }
    free(r->c);
    free(r->rank);
    free(r->runtime);
    free(r);
}

/* Appends a candidate (passes, knobs copied; knobs may be NULL). */
static int add(commsched_tune_result *r, const char *passes, size_t plen,
               const char *knobs, size_t klen)
{
    if (cs_grow((void **)&r->c, &r->cap, r->n + 1, sizeof *r->c) != 0)
        return -1;
    cand *c = &r->c[r->n];
    memset(c, 0, sizeof *c);
    c->passes = dup_str(passes, plen);
    c->knobs = dup_str(knobs ? knobs : "", knobs ? klen : 0);
    if (!c->passes || !c->knobs) {
        free(c->passes);
        free(c->knobs);
        return -1;
    }
    r->n++;
    return 0;
}

static int add2(commsched_tune_result *r, const char *passes,
                const char *knobs)
{
    return add(r, passes, strlen(passes), knobs, knobs ? strlen(knobs) : 0);
}

/* How heavy a candidate is likely to be, by what it runs: Inductor's
 * iterative passes move each collective past every node it passes (in
 * O(log n) a run) and walk from each to its wait for their statistics
 * (O(log n) per binade of the sum), the heaviest of the set by a constant
 * factor (docs/PERFORMANCE.md, "tune"). 0 for the rest. */
static int weight_of(const char *passes)
{
    return strstr(passes, "reorder_communication_preserving_peak_memory") ? 1
                                                                          : 0;
}

/* Up to this many collectives of one op, the built-in set also tries
 * every cut of them into contiguous buckets (bucket_cuts; 2^(k-1) - 2
 * splits besides one bucket and none, 30 at most), each followed by
 * overlap: the greedy cuts judge a merge before overlap has placed
 * anything, and on a small step which collectives to leave alone is
 * worth more than any cap (an FSDP backward of four reduce-scatters is
 * fastest as 1 + 1 + 2, as torch's FX bucketer leaves it). */
#define TUNE_SPLIT_MAX_COLLS 6u
/* ... and up to this many nodes: each cut is one more overlap run, which
 * on a large graph with few collectives would be most of the search. */
#define TUNE_SPLIT_MAX_NODES 50000u

/* The most collectives of one bucketable op (all-gather, reduce-scatter,
 * all-reduce): what each bucketing pass walks at most. */
static uint32_t max_per_op(const commsched_graph *g)
{
    uint32_t count[3] = {0, 0, 0}, m = 0;
    static const commsched_coll_op ops[3] = {COMMSCHED_COLL_ALL_GATHER,
                                             COMMSCHED_COLL_REDUCE_SCATTER,
                                             COMMSCHED_COLL_ALL_REDUCE};
    for (uint32_t v = 0; v < commsched_graph_node_count(g); v++) {
        commsched_coll_op op;
        if (!commsched_graph_node_collective(g, v, &op, NULL))
            continue;
        for (int i = 0; i < 3; i++)
            if (op == ops[i] && ++count[i] > m)
                m = count[i];
    }
    return m;
}

/* The built-in set (docs/PASSES.md, tune): the input order; Inductor's
 * pipeline at per-pass budgets 0 .. 0.2; the heap schedulers; overlap at
 * the budget with its options; pinned collective order; bucketing (DDP's
 * and Inductor's caps, greedy and cost modes; per transformer block)
 * before overlap and before Inductor's pipeline; the hand-written
 * transformer-block plan followed by overlap; and, for a graph of at most
 * TUNE_SPLIT_MAX_NODES (!large) with 3 .. TUNE_SPLIT_MAX_COLLS
 * collectives of one op (per_op), every cut of them into buckets. */
static int builtin_set(commsched_tune_result *r, double budget,
                       commsched_peak_model model, int large, uint32_t per_op)
{
    char b[64], k[512];
    if (isinf(budget))
        snprintf(b, sizeof b, "inf");
    else
        snprintf(b, sizeof b, "%.17g", budget);
    /* After every overlap_peak_budget: the tune's peaks, and the cheap
     * seeds only (Inductor's pipeline at each per-pass budget is a
     * candidate of its own here, on the same graph). */
    const char *ov = model == COMMSCHED_PEAK_STEP
                         ? ",overlap_seeds=cheap,overlap_peak_model=step"
                         : ",overlap_seeds=cheap";
    /* bucketing's own budget is a fraction over its input's peak */
    char bb[64];
    if (isinf(budget))
        snprintf(bb, sizeof bb, "inf");
    else
        snprintf(bb, sizeof bb, "%.17g", budget > 1 ? budget - 1 : 0.0);
    static const char *const per_pass[] = {"0", "0.05", "0.1", "0.2"};
    if (add2(r, "none", NULL) != 0)
        return -1;
    for (size_t i = 0; i < sizeof per_pass / sizeof per_pass[0]; i++) {
        snprintf(k, sizeof k,
                 "reorder_iterative_peak_memory_budget=%s,"
                 "sink_iterative_peak_memory_budget=%s",
                 per_pass[i], per_pass[i]);
        if (add2(r, INDUCTOR, k) != 0)
            return -1;
    }
    if (add2(r, "raise_comms,sink_waits", NULL) != 0 ||
        add2(r, "reorder_compute_for_overlap", NULL) != 0)
        return -1;
    static const char *const overlap_opts[] = {
        "", ",overlap_search=full", ",overlap_collective_order=group",
        ",overlap_reorder_window=16"};
    for (size_t i = 0; i < sizeof overlap_opts / sizeof overlap_opts[0];
         i++) {
        snprintf(k, sizeof k, "overlap_peak_budget=%s%s%s", b, ov,
                 overlap_opts[i]);
        if (add2(r, "overlap", k) != 0)
            return -1;
    }
    snprintf(k, sizeof k, "overlap_peak_budget=%s%s", b, ov);
    if (add2(r, "decide_global_ordering_of_comms,overlap", k) != 0)
        return -1;
    static const char *const caps[] = {"25", "2000"};
    static const char *const modes[] = {"greedy", "cost"};
    for (size_t c = 0; c < 2; c++)
        for (size_t m = 0; m < 2; m++) {
            snprintf(k, sizeof k,
                     "bucket_cap_mb=%s,bucket_mode=%s,"
                     "bucket_peak_memory_budget=%s,overlap_peak_budget=%s%s",
                     caps[c], modes[m], bb, b, ov);
            if (add2(r, BUCKETS ",overlap", k) != 0)
                return -1;
        }
    /* Buckets of two: a greedy cut in wait order takes every merge that
     * fits the cap, and cost mode every merge that shortens the step in
     * the order before overlap, so neither leaves the first of several
     * buckets early enough to overlap the compute after it (an FSDP
     * backward: 4 reduce-scatters in pairs beat one bucket of four once
     * overlap has placed them, graphs/torch/fsdp-mlp-4L-1). */
    snprintf(k, sizeof k,
             "bucket_cap_mb=2000,bucket_max_ops=2,"
             "bucket_peak_memory_budget=%s,overlap_peak_budget=%s%s",
             bb, b, ov);
    if (add2(r, BUCKETS ",overlap", k) != 0)
        return -1;
    /* Transformer blocks: one bucket per block run, found from the node
     * names (as the hand-written plan), then overlap within the budget; and
     * the hand-written plan itself with overlap tightening it at its own
     * peak (it fits the budget only where the plan does). */
    snprintf(k, sizeof k,
             "bucket_by_block=true,bucket_cap_mb=inf,"
             "bucket_peak_memory_budget=%s,overlap_peak_budget=%s%s",
             bb, b, ov);
    if (add2(r, BUCKETS ",overlap", k) != 0)
        return -1;
    snprintf(k, sizeof k, "overlap_peak_budget=1%s", ov);
    if (add2(r, "bucket_transformer_blocks,overlap", k) != 0)
        return -1;
    if (!large && per_op >= 3 && per_op <= TUNE_SPLIT_MAX_COLLS)
        for (unsigned long cuts = 1; cuts + 1 < 1ul << (per_op - 1); cuts++) {
            snprintf(k, sizeof k,
                     "bucket_cap_mb=inf,bucket_cuts=%lu,"
                     "bucket_peak_memory_budget=%s,overlap_peak_budget=%s%s",
                     cuts, bb, b, ov);
            if (add2(r, BUCKETS ",overlap", k) != 0)
                return -1;
        }
    snprintf(k, sizeof k,
             "bucket_cap_mb=25,bucket_mode=cost,bucket_peak_memory_budget=%s,"
             "reorder_iterative_peak_memory_budget=0,"
             "sink_iterative_peak_memory_budget=0",
             bb);
    if (add2(r, BUCKETS "," INDUCTOR, k) != 0)
        return -1;
    return 0;
}

/* "PASSES" or "PASSES|key=value,...". */
static int add_spec(commsched_tune_result *r, const char *spec)
{
    const char *bar = strchr(spec, '|');
    if (!bar)
        return add(r, spec, strlen(spec), NULL, 0);
    return add(r, spec, (size_t)(bar - spec), bar + 1, strlen(bar + 1));
}

/* The options of one candidate; EINVAL names the candidate. */
static commsched_status make_options(const commsched_tune_result *r,
                                     const cand *c,
                                     commsched_optimize_options **out,
                                     commsched_error *err)
{
    commsched_optimize_options *o = NULL;
    commsched_error e = {0};
    commsched_status st = commsched_optimize_options_create(&o, &e);
    char *copy = NULL;
    if (st != COMMSCHED_OK)
        goto fail;
    commsched_optimize_options_set_costs(o, r->o.measured,
                                         r->o.measured_first);
    if ((st = commsched_optimize_options_set_device(o, &r->device, &e)) !=
            COMMSCHED_OK ||
        (st = commsched_optimize_options_set(
             o, "cost_model", commsched_comm_model_str(r->o.comm_model),
             &e)) != COMMSCHED_OK ||
        (st = commsched_optimize_options_set(
             o, "comm_streams",
             r->o.comm_streams == COMMSCHED_STREAMS_SINGLE ? "single"
                                                           : "per_group",
             &e)) != COMMSCHED_OK ||
        (st = commsched_optimize_options_set(o, "verify",
                                             r->o.verify ? "true" : "false",
                                             &e)) != COMMSCHED_OK ||
        (st = commsched_optimize_options_set(o, "passes", c->passes, &e)) !=
            COMMSCHED_OK)
        goto fail;
    copy = dup_str(c->knobs, strlen(c->knobs));
    if (!copy) {
        st = oom(&e);
        goto fail;
    }
    for (char *kv = copy; kv && *kv;) {
        char *comma = strchr(kv, ',');
        if (comma)
            *comma = '\0';
        char *eq = strchr(kv, '=');
        if (!eq) {
            st = commsched_error_set(&e, COMMSCHED_EINVAL, NULL,
                                     "expected key=value, got \"%s\"", kv);
            goto fail;
        }
        *eq = '\0';
        if ((st = commsched_optimize_options_set(o, kv, eq + 1, &e)) !=
            COMMSCHED_OK)
            goto fail;
        kv = comma ? comma + 1 : NULL;
    }
    free(copy);
    *out = o;
    return COMMSCHED_OK;
fail:
    free(copy);
    commsched_optimize_options_destroy(o);
    *out = NULL;
    return commsched_error_set(err, st == COMMSCHED_ENOMEM ? st
                                                           : COMMSCHED_EINVAL,
                               NULL, "tune candidate \"%s%s%s\": %s",
                               c->passes, c->knobs[0] ? "|" : "", c->knobs,
                               e.text);
}

commsched_status commsched_tune_candidate_options(
    const commsched_tune_result *r, size_t i,
    commsched_optimize_options **out, commsched_error *err)
{
    if (!r || i >= r->n)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no tune candidate %zu", i);
    return make_options(r, &r->c[i], out, err);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One candidate: its own commsched_optimize call on the input's runtimes
 * and figures (priced once); writes only *c. */
static void evaluate(const commsched_graph *g, const commsched_tune_result *r,
                     cand *c)
{
    commsched_result *res = NULL;
    commsched_error e = {0};
    int64_t budget = r->budget_bytes, time_budget = r->time_budget_bytes;
    double t0 = now_ms();
    commsched_status st =
        cs_optimize_given(g, c->opts, r->runtime, &r->input, &res, &e);
    c->pub.wall_ms = now_ms() - t0;
    c->pub.status = st;
    c->judged = 1;
    if (st != COMMSCHED_OK) {
        free(c->error);
        c->error = dup_str(e.text, strlen(e.text));
        c->pub.error = c->error ? c->error : "";
        c->pub.makespan_ns = INFINITY;
        c->pub.fits = 0;
        return;
    }
    const commsched_sim_totals *t = commsched_result_after(res);
    c->pub.makespan_ns = t->makespan_ns;
    c->pub.lower_bound_ns = t->lower_bound_ns;
    c->pub.efficiency = t->efficiency;
    c->pub.exposed_ns = t->exposed_ns;
    c->pub.peak_memory = t->peak_memory_step;
    c->pub.peak_memory_time = t->peak_memory;
    c->pub.over = (budget >= 0 && t->peak_memory_step > budget ? 1u : 0u) |
                  (time_budget >= 0 && t->peak_memory > time_budget ? 2u : 0u);
    c->pub.fits = c->pub.over == 0;
    commsched_result_destroy(res);
}

/* Rank order: fitting first, then the rest, failures last; within each by
 * makespan, then peak memory, then index. */
static int rank_cmp(const commsched_tune_result *r, size_t i, size_t j)
{
    const commsched_tune_candidate *x = &r->c[i].pub, *y = &r->c[j].pub;
    int cx = x->status != COMMSCHED_OK ? 2 : x->fits ? 0 : 1;
    int cy = y->status != COMMSCHED_OK ? 2 : y->fits ? 0 : 1;
    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (x->makespan_ns != y->makespan_ns)
        return x->makespan_ns < y->makespan_ns ? -1 : 1;
    if (x->status == COMMSCHED_OK && x->peak_memory != y->peak_memory)
        return x->peak_memory < y->peak_memory ? -1 : 1;
    return i < j ? -1 : i > j ? 1 : 0;
}

commsched_status commsched_tune_prepare(const commsched_graph *g,
                                        const commsched_tune_options *o,
                                        commsched_tune_result **out,
                                        commsched_error *err)
{
    commsched_tune_options defaults;
    commsched_tune_result *r = NULL;
    commsched_optimize_options *none = NULL;
    commsched_result *res = NULL;
    commsched_status st = COMMSCHED_OK;
    if (!out || !g)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "graph and out must not be NULL");
    *out = NULL;
    if (!o) {
        commsched_tune_options_init(&defaults);
        o = &defaults;
    }
    if (!(o->budget >= 1.0))
        return commsched_error_set(err, COMMSCHED_EINVAL, "budget",
                                   "the budget must be >= 1 (a factor of "
                                   "the input order's peak), got %g",
                                   o->budget);
    r = cs_calloc(1, sizeof *r);
    if (!r)
        return oom(err);
    r->o = *o;
    r->o.candidates = NULL;
    r->o.n_candidates = 0;
    if (o->device) {
        r->device = *o->device;
    } else {
        const commsched_device *d = commsched_device_builtin("h100");
        r->device = *d;
    }
    if (o->peak_model != COMMSCHED_PEAK_BOTH &&
        o->peak_model != COMMSCHED_PEAK_STEP) {
        st = commsched_error_set(err, COMMSCHED_EINVAL, "peak_model",
                                 "unknown peak model %d", (int)o->peak_model);
        goto fail;
    }
    if ((o->builtin &&
         builtin_set(r, o->budget, o->peak_model,
                     commsched_graph_node_count(g) > TUNE_SPLIT_MAX_NODES,
                     max_per_op(g)) != 0)) {
        st = oom(err);
        goto fail;
    }
    for (size_t i = 0; i < o->n_candidates; i++)
        if (add_spec(r, o->candidates[i]) != 0) {
            st = oom(err);
            goto fail;
        }
    if (r->n == 0) {
        st = commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                 "no candidate to tune (the built-in set is "
                                 "off and none was given)");
        goto fail;
    }
    /* Every candidate's options, serially: a bad pass or knob is the
     * caller's input error, reported before anything runs. */
    for (size_t i = 0; i < r->n; i++) {
        if ((st = make_options(r, &r->c[i], &r->c[i].opts, err)) !=
            COMMSCHED_OK)
            goto fail;
        r->c[i].pub.passes = r->c[i].passes;
        r->c[i].pub.knobs = r->c[i].knobs;
        r->c[i].pub.error = "";
    }
    /* The input order's figures, its runtimes and the budget in bytes. */
    cand base = {0};
    base.passes = "none";
    base.knobs = "";
    if ((st = make_options(r, &base, &none, err)) != COMMSCHED_OK ||
        (st = commsched_optimize(g, none, &res, err)) != COMMSCHED_OK)
        goto fail;
    r->input = *commsched_result_before(res);
    r->node_count = commsched_graph_node_count(g);
    r->runtime = cs_malloc_array(r->node_count ? r->node_count : 1,
                                 sizeof *r->runtime);
    if (!r->runtime) {
        st = oom(err);
        goto fail;
    }
    if (r->node_count)
        memcpy(r->runtime, commsched_result_runtimes(res),
               r->node_count * sizeof *r->runtime);
    r->budget_bytes =
        isinf(o->budget)
            ? -1
            : (int64_t)floor(o->budget * (double)r->input.peak_memory_step);
    r->time_budget_bytes =
        isinf(o->budget) || o->peak_model == COMMSCHED_PEAK_STEP
            ? -1
            : (int64_t)floor(o->budget * (double)r->input.peak_memory);
    commsched_result_destroy(res);
    commsched_optimize_options_destroy(none);
    *out = r;
    return COMMSCHED_OK;
fail:
    commsched_result_destroy(res);
    commsched_optimize_options_destroy(none);
    commsched_tune_result_destroy(r);
    return st;
}

int commsched_tune_weight(const commsched_tune_result *r, size_t i)
{
    return r && i < r->n ? weight_of(r->c[i].passes) : 0;
}

int commsched_tune_judged(const commsched_tune_result *r, size_t i)
{
    return r && i < r->n && r->c[i].judged;
}

commsched_status commsched_tune_evaluate(commsched_tune_result *r,
                                         const commsched_graph *g,
                                         const size_t *which, size_t count,
                                         commsched_error *err)
{
    if (!r || !g || (count && !which))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "result, graph and which must not be "
                                   "NULL");
    if (r->rank)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the tune is finished");
    if (commsched_graph_node_count(g) != r->node_count)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the graph has %u nodes, the tune was "
                                   "prepared on %u",
                                   commsched_graph_node_count(g),
                                   r->node_count);
    for (size_t k = 0; k < count; k++)
        if (which[k] >= r->n)
            return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                       "no tune candidate %zu", which[k]);
    /* The loop runs the heaviest candidates first, so the last ones to
     * finish are short and the threads end together (the longest
     * candidate alone was half of the search on a 33K-node step and,
     * started last, left the other thread idle). Results stay at their
     * index, so the order changes no answer. */
    size_t *run = cs_malloc_array(count ? count : 1, sizeof *run);
    if (!run)
        return oom(err);
    size_t m = 0;
    for (int w = 1; w >= 0; w--)
        for (size_t k = 0; k < count; k++)
            if (weight_of(r->c[which[k]].passes) == w)
                run[m++] = which[k];
    long n = (long)count;
    const commsched_tune_options *o = &r->o;
    cand *c = r->c;
    uint64_t finished = 0;
#if COMMSCHED_HAVE_OPENMP
    int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    /* One caller at a time and a count that only grows, as
     * commsched_progress_fn promises. A lock of this call's own, not a
     * named critical section: that would be a symbol the library exports. */
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < n; i++) {
        evaluate(g, r, &c[run[i]]);
        if (o->progress) {
            omp_set_lock(&lock);
            o->progress(o->progress_arg, ++finished, (uint64_t)n);
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
#else
    for (long i = 0; i < n; i++) {
        evaluate(g, r, &c[run[i]]);
        if (o->progress)
            o->progress(o->progress_arg, ++finished, (uint64_t)n);
    }
#endif
    for (size_t k = 0; k < count; k++)
        if (c[run[k]].pub.status != COMMSCHED_OK && !c[run[k]].error) {
            free(run);
            return oom(err);
        }
    free(run);
    return COMMSCHED_OK;
}

commsched_status commsched_tune_record(commsched_tune_result *r, size_t i,
                                       const commsched_tune_candidate *fig,
                                       commsched_error *err)
{
    if (!r || !fig || i >= r->n)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no tune candidate %zu", i);
    if (r->rank)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the tune is finished");
    cand *c = &r->c[i];
    char *e = NULL;
    if (fig->status != COMMSCHED_OK) {
        const char *t = fig->error ? fig->error : "";
        if (!(e = dup_str(t, strlen(t))))
            return oom(err);
    }
    free(c->error);
    c->error = e;
    const char *passes = c->pub.passes, *knobs = c->pub.knobs;
    c->pub = *fig;
    c->pub.passes = passes;
    c->pub.knobs = knobs;
    c->pub.error = e ? e : "";
    if (fig->status != COMMSCHED_OK) {
        c->pub.makespan_ns = INFINITY;
        c->pub.fits = 0;
    }
    c->judged = 1;
    return COMMSCHED_OK;
}

commsched_status commsched_tune_finish(commsched_tune_result *r,
                                       commsched_error *err)
{
    if (!r)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "result must not be NULL");
    if (r->rank)
        return COMMSCHED_OK;
    for (size_t i = 0; i < r->n; i++)
        if (!r->c[i].judged)
            return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                       "tune candidate %zu was neither "
                                       "evaluated nor recorded",
                                       i);
    size_t *rank = cs_malloc_array(r->n, sizeof *rank);
    if (!rank)
        return oom(err);
    /* Insertion sort: a few dozen candidates, and qsort would need the
     * result through a global. */
    for (size_t i = 0; i < r->n; i++) {
        size_t j = i;
        while (j > 0 && rank_cmp(r, i, rank[j - 1]) < 0) {
            rank[j] = rank[j - 1];
            j--;
        }
        rank[j] = i;
    }
    r->rank = rank;
    return COMMSCHED_OK;
}

commsched_status commsched_tune(const commsched_graph *g,
                                const commsched_tune_options *o,
                                commsched_tune_result **out,
                                commsched_error *err)
{
    commsched_tune_result *r = NULL;
    commsched_status st = commsched_tune_prepare(g, o, &r, err);
    if (st != COMMSCHED_OK)
        return st;
    size_t *all = cs_malloc_array(r->n, sizeof *all);
    if (!all) {
        commsched_tune_result_destroy(r);
        return oom(err);
    }
    for (size_t i = 0; i < r->n; i++)
        all[i] = i;
    st = commsched_tune_evaluate(r, g, all, r->n, err);
    free(all);
    if (st == COMMSCHED_OK)
        st = commsched_tune_finish(r, err);
    if (st != COMMSCHED_OK) {
        commsched_tune_result_destroy(r);
        return st;
    }
    *out = r;
    return COMMSCHED_OK;
}

size_t commsched_tune_count(const commsched_tune_result *r) { return r->n; }

const commsched_tune_candidate *
commsched_tune_candidate_at(const commsched_tune_result *r, size_t i)
{
    return i < r->n ? &r->c[i].pub : NULL;
}

size_t commsched_tune_ranked(const commsched_tune_result *r, size_t k)
{
    return r->rank && k < r->n ? r->rank[k] : SIZE_MAX;
}

size_t commsched_tune_best(const commsched_tune_result *r)
{
    return r->rank && r->n > 0 && r->c[r->rank[0]].pub.fits ? r->rank[0]
                                                            : SIZE_MAX;
}

const commsched_sim_totals *commsched_tune_input(const commsched_tune_result *r)
{
    return &r->input;
}

int64_t commsched_tune_budget_bytes(const commsched_tune_result *r)
{
    return r->budget_bytes;
}

int64_t commsched_tune_time_budget_bytes(const commsched_tune_result *r)
{
    return r->time_budget_bytes;
}
