/* commsched — the pass table, the knob table and the pipeline runner.
 *
 * Passes and knobs are data: adding a pass is one row in `passes`, adding a
 * knob one row in `knobs` (name, type, offset, default, meaning). The
 * runner parses the whole list first (an unknown name fails before
 * anything runs), then runs each pass with a fresh statistics record, times
 * it, and checks the invariant after it (debug builds, or when asked): the
 * order is a permutation respecting every data and control edge. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commsched/simulate.h"
#include "passes_internal.h"

/* ---- passes -------------------------------------------------------------- */

typedef struct pass {
    const char *name;
    cs_pass_fn run;
    commsched_stats_kind stats;
    const char *description;
    int rewrites; /* builds a new graph (cs_pass_replace) */
} pass;

static const pass passes[] = {
    {"decide_global_ordering_of_comms", cs_pass_decide_global_ordering,
     COMMSCHED_STATS_NONE,
     "fake edges chain consecutive collectives so every rank issues them in "
     "one order",
     0},
    {"raise_comms", cs_pass_raise_comms, COMMSCHED_STATS_NONE,
     "heap list scheduler: issue collectives as early as dependencies allow",
     0},
    {"sink_waits", cs_pass_sink_waits, COMMSCHED_STATS_NONE,
     "heap list scheduler: place waits as late as dependencies allow", 0},
    {"reorder_compute_for_overlap", cs_pass_reorder_compute_for_overlap,
     COMMSCHED_STATS_NONE,
     "heap list scheduler: raise collectives, sink waits and fill each "
     "collective's time with ready compute",
     0},
    {"reorder_communication_preserving_peak_memory",
     cs_pass_reorder_preserving_peak_memory, COMMSCHED_STATS_REORDER,
     "move each collective earlier, one swap at a time, while peak memory "
     "stays within the budget",
     0},
    {"sink_waits_iterative", cs_pass_sink_waits_iterative,
     COMMSCHED_STATS_SINK,
     "move each wait later, one swap at a time, while peak memory stays "
     "within the budget",
     0},
    {"simple_overlap", cs_pass_simple_overlap, COMMSCHED_STATS_NONE,
     "PyTorch's simple_overlap: each collective swaps earlier and each wait "
     "later, one position at a time, never past another collective (wait) "
     "and never raising peak memory",
     0},
    {"bucket_all_gather", cs_pass_bucket_all_gather, COMMSCHED_STATS_BUCKET,
     "merge all-gathers adjacent in wait order (one group and dtype) into "
     "one copy-in, one all-gather and one wait, up to bucket_cap_mb",
     1},
    {"bucket_reduce_scatter", cs_pass_bucket_reduce_scatter,
     COMMSCHED_STATS_BUCKET,
     "merge reduce-scatters adjacent in wait order (one group, dtype and "
     "reduce op), up to bucket_cap_mb",
     1},
    {"bucket_all_reduce", cs_pass_bucket_all_reduce, COMMSCHED_STATS_BUCKET,
     "merge all-reduces adjacent in wait order (one group, dtype and reduce "
     "op), up to bucket_cap_mb",
     1},
    {"bucket_transformer_blocks", cs_pass_bucket_transformer_blocks,
     COMMSCHED_STATS_BUCKET,
     "the hand-written plan (TBB): one all-gather and one reduce-scatter "
     "bucket per block (name up to its first '.'), each all-gather "
     "prefetched one block ahead, no cap and no memory check",
     1},
    {"overlap", cs_pass_overlap, COMMSCHED_STATS_OVERLAP,
     "simulator-driven list scheduler: prefetch collectives as far as the "
     "peak budget allows, sink waits, fill comm windows with independent "
     "compute; never slower than its input",
     0},
};
#define N_PASSES (sizeof passes / sizeof passes[0])

size_t commsched_pass_count(void) { return N_PASSES; }
const char *commsched_pass_name(size_t i)
{
    return i < N_PASSES ? passes[i].name : NULL;
}
const char *commsched_pass_description(size_t i)
{
    return i < N_PASSES ? passes[i].description : NULL;
}
int commsched_pass_rewrites(size_t i)
{
    return i < N_PASSES ? passes[i].rewrites : 0;
}

/* overlap: at its default budget (1.0 x the input order's peak) it is at
 * least as fast as Inductor's recommended pipeline at any per-pass budget
 * that fits the same memory, on every workload of the corpus, and faster
 * on most (docs/PASSES.md, "Why overlap is the default"). Inductor's list
 * stays one --passes away. */
const char *commsched_default_pipeline(void) { return "overlap"; }

/* ---- knobs --------------------------------------------------------------- */

typedef enum { K_BOOL, K_REAL, K_LIMIT, K_ENUM } knob_type;

typedef struct knob {
    const char *name;
    knob_type type;
    size_t offset;
    const char *def;
    const char *description;
    const char *const *choices; /* K_ENUM: names of 0, 1, ..., then NULL */
    /* K_REAL: the values a pass can use, checked when the knob is set
     * (a multiplier of inf ran every pass and failed writing the
     * statistics; a negative budget made RCPPM refuse every move): lo..hi,
     * lo itself excluded when lo_open, and inf besides when inf_ok (its
     * meaning in the description). */
    double lo, hi;
    int lo_open, inf_ok;
} knob;

#define KNOB(field, type, def, text)                                           \
    {#field, type, offsetof(commsched_knobs, field), def, text, NULL,         \
     0, 0, 0, 0}
#define KNOB_REAL(field, def, lo, lo_open, hi, inf_ok, text)                   \
    {#field, K_REAL, offsetof(commsched_knobs, field), def, text, NULL,       \
     lo, hi, lo_open, inf_ok}
#define KNOB_ENUM(field, choices, def, text)                                   \
    {#field, K_ENUM, offsetof(commsched_knobs, field), def, text, choices,    \
     0, 0, 0, 0}

/* Fractions and multipliers: 1e6 is far past any use, and far below the
 * sizes that would overflow a budget in bytes (the peak is below 2^53,
 * so 1e6 x it stays below 2^73: a double, not an int64, holds it). */
#define KNOB_MAX 1e6

/* bucket_mode, in cs_bucket_mode order. */
static const char *const bucket_modes[] = {"greedy", "cost", NULL};
/* overlap_collective_order, in cs_overlap_order order. */
static const char *const overlap_orders[] = {"free", "group", "input", NULL};
/* overlap_search, in cs_overlap_search order. */
static const char *const overlap_searches[] = {"fast", "full", NULL};
/* overlap_peak_model, in cs_peak_model order. */
static const char *const peak_models[] = {"both", "step", NULL};
/* overlap_seeds, in cs_overlap_seeds order. */
static const char *const overlap_seed_sets[] = {"all", "cheap", "none", NULL};

static const knob knobs[] = {
    KNOB_REAL(reorder_iterative_peak_memory_budget, "0.2", 0, 0, KNOB_MAX, 1,
         "RCPPM may raise peak memory by this fraction"),
    KNOB(reorder_iterative_use_runtime_estimations, K_BOOL, "false",
         "RCPPM consults runtime estimates (stop when unexposed, refuse "
         "swaps that expose waits)"),
    KNOB_REAL(reorder_iterative_extra_comm_comp_overlap, "0.5",
              0, 0, KNOB_MAX, 0,
         "RCPPM stops once overlap reaches (1 + x) x comm time"),
    KNOB(reorder_iterative_unsafe_collectives_reorder, K_BOOL, "true",
         "RCPPM may move a collective past another collective"),
    KNOB(reorder_iterative_group_with_collectives, K_BOOL, "false",
         "RCPPM may group an async collective it depends on"),
    KNOB(reorder_iterative_debug_limit_to_reorder, K_LIMIT, "none",
         "process at most this many collectives"),
    KNOB_REAL(sink_iterative_peak_memory_budget, "0.2", 0, 0, KNOB_MAX, 1,
         "sink_waits_iterative may raise peak memory by this fraction"),
    KNOB(sink_iterative_use_runtime_estimations, K_BOOL, "false",
         "sink_waits_iterative consults runtime estimates"),
    KNOB_REAL(sink_iterative_extra_comm_comp_overlap, "0.5", 0, 0, KNOB_MAX, 0,
         "sink_waits_iterative stops once overlap reaches (1 + x) x comm time"),
    KNOB(sink_waits_iterative_unsafe_collectives_reorder, K_BOOL, "true",
         "sink_waits_iterative may swap when group and candidate both hold "
         "collectives"),
    KNOB(sink_waits_iterative_swap_with_collectives, K_BOOL, "false",
         "sink_waits_iterative may move a wait past an async collective"),
    KNOB(sink_waits_iterative_debug_limit_to_sink, K_LIMIT, "none",
         "process at most this many waits"),
    KNOB_REAL(reorder_sink_runtime_estimations_comm_mult, "2.0",
              0, 1, KNOB_MAX, 0,
         "iterative passes multiply collective runtimes by this"),
    KNOB_REAL(reorder_sink_runtime_estimations_non_comm_mult, "1.0",
              0, 1, KNOB_MAX, 0,
         "iterative passes multiply other runtimes by this"),
    KNOB(reorder_iterative_debug_memory_recompute, K_BOOL, "false",
         "recompute memory after every move and stop at the first "
         "difference (as --verify-memory)"),
    KNOB_REAL(bucket_cap_mb, "2000", 0, 1, 8796093022208.0, 1,
         "bucketing: close a bucket before it passes this many MiB "
         "(Inductor's bucket_cap_mb; DDP uses 25)"),
    KNOB(bucket_max_ops, K_LIMIT, "0",
         "bucketing: at most this many collectives a bucket (0 or none: no "
         "limit; XLA uses 256)"),
    KNOB(bucket_cuts, K_LIMIT, "0",
         "bucketing: a bit mask; bit i closes the bucket after each pass's "
         "i-th eligible collective in wait order (0 or none: no cut; tune's "
         "split search and hand-made splits)"),
    KNOB(bucket_multidtype, K_BOOL, "false",
         "bucket_all_gather: leave the dtype out of the key (Inductor's "
         "multidtype mode)"),
    KNOB(bucket_by_block, K_BOOL, "false",
         "bucketing: merge only within one run of a transformer block (node "
         "names up to the first '.', as bucket_transformer_blocks)"),
    KNOB_ENUM(bucket_mode, bucket_modes, "greedy",
              "bucketing: greedy (Inductor's rule) or cost (stop when a merge "
              "no longer shortens the simulated step)"),
    KNOB_REAL(bucket_peak_memory_budget, "0", 0, 0, KNOB_MAX, 1,
         "bucketing: refuse a merge that raises peak memory above "
         "(1 + this) x the peak before the pass"),
    KNOB_REAL(overlap_peak_budget, "1.0", 1, 0, KNOB_MAX, 1,
         "overlap: keep peak memory within this x the peak of the "
         "pipeline's input order (>= 1; inf: no limit)"),
    KNOB(overlap_max_in_flight_bytes, K_LIMIT, "0",
         "overlap: at most this many bytes of prefetched collectives in "
         "flight per group (0 or none: no limit)"),
    KNOB_ENUM(overlap_collective_order, overlap_orders, "free",
              "overlap: free (any order the edges allow; every rank computes "
              "the same), group (each group keeps its input order) or input "
              "(all collectives keep their input order)"),
    KNOB(overlap_reorder_window, K_LIMIT, "none",
         "overlap: pull compute at most this many compute nodes ahead of "
         "the input order to fill a comm window (0: keep the compute order; "
         "none: no limit)"),
    KNOB_ENUM(overlap_search, overlap_searches, "fast",
              "overlap: fast (a few candidate orders) or full (every variant, "
              "slower)"),
    KNOB_ENUM(overlap_peak_model, peak_models, "both",
              "overlap: the budget holds for both the per-step peak and the "
              "peak over simulated time (both), or for the per-step peak "
              "alone (step, Inductor's model)"),
    KNOB_ENUM(overlap_seeds, overlap_seed_sets, "all",
              "overlap: the anchor orders judged beside the search: all "
              "(the heap scheduler's, simple_overlap's and Inductor's "
              "pipeline at per-pass budgets 0, 0.05, 0.1, 0.2), cheap (all "
              "but Inductor's pipeline) or none (the search alone)"),
};
#define N_KNOBS (sizeof knobs / sizeof knobs[0])

size_t commsched_knob_count(void) { return N_KNOBS; }
const char *commsched_knob_name(size_t i)
{
    return i < N_KNOBS ? knobs[i].name : NULL;
}
const char *commsched_knob_default(size_t i)
{
    return i < N_KNOBS ? knobs[i].def : NULL;
}
const char *commsched_knob_description(size_t i)
{
    return i < N_KNOBS ? knobs[i].description : NULL;
}

static int parse_value(const knob *kn, const char *text, void *field)
{
    char *end = NULL;
    switch (kn->type) {
    case K_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1") ||
            !strcmp(text, "True")) {
            *(int *)field = 1;
            return 0;
        }
        if (!strcmp(text, "false") || !strcmp(text, "0") ||
            !strcmp(text, "False")) {
            *(int *)field = 0;
            return 0;
        }
        return -1;
    case K_REAL: {
        errno = 0;
        double d = strtod(text, &end);
        if (end == text || *end || d != d)
            return -1;
        if (errno == ERANGE && isinf(d))
            return -2; /* 1e999: a number past any range, not "inf" */
        if (isinf(d) ? !(kn->inf_ok && d > 0)
                     : d < kn->lo || (kn->lo_open && d == kn->lo) ||
                           d > kn->hi)
            return -2; /* a number, but one the passes cannot use */
        *(double *)field = d;
        return 0;
    }
    case K_LIMIT: {
        if (!strcmp(text, "none") || !strcmp(text, "None")) {
            *(long *)field = -1;
            return 0;
        }
        errno = 0;
        long l = strtol(text, &end, 10);
        if (errno || end == text || *end || l < 0)
            return -1;
        *(long *)field = l;
        return 0;
    }
    case K_ENUM:
        for (int i = 0; kn->choices[i]; i++)
            if (!strcmp(text, kn->choices[i])) {
                *(int *)field = i;
                return 0;
            }
        return -1;
    }
    return -1;
}

/* What a knob of this type accepts, for error messages. */
static void expected_text(const knob *kn, char *buf, size_t size)
{
    switch (kn->type) {
    case K_BOOL: snprintf(buf, size, "true or false"); return;
    case K_REAL:
        snprintf(buf, size, "a number %s %.15g, at most %.15g%s",
                 kn->lo_open ? "above" : "from", kn->lo, kn->hi,
                 kn->inf_ok ? ", or inf" : "");
        return;
    case K_LIMIT: snprintf(buf, size, "a count or none"); return;
    case K_ENUM: {
        size_t len = 0;
        buf[0] = '\0';
        for (int i = 0; kn->choices[i] && len < size; i++)
            len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                    i == 0                 ? ""
                                    : kn->choices[i + 1]   ? ", "
                                                           : " or ",
                                    kn->choices[i]);
        return;
    }
    }
    snprintf(buf, size, "bad value");
}

const char *commsched_knob_accepts(size_t i, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    buf[0] = '\0';
    if (i < N_KNOBS)
        expected_text(&knobs[i], buf, size);
    return buf;
}

commsched_status commsched_knobs_create(commsched_knobs **out,
                                        commsched_error *err)
{
    commsched_knobs *k = cs_calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (size_t i = 0; i < N_KNOBS; i++) {
        int rc = parse_value(&knobs[i], knobs[i].def,
                             (char *)k + knobs[i].offset);
        assert(rc == 0);
        (void)rc;
    }
    *out = k;
    return COMMSCHED_OK;
}

void commsched_knobs_destroy(commsched_knobs *k) { free(k); }

/* The value as text that commsched_knobs_set reads back to the same
 * value (reals with 17 significant digits). */
static void format_value(const knob *kn, const void *field, char *buf,
                         size_t size)
{
    switch (kn->type) {
    case K_BOOL:
        snprintf(buf, size, "%s", *(const int *)field ? "true" : "false");
        return;
    case K_REAL:
        snprintf(buf, size, "%.17g", *(const double *)field);
        return;
    case K_LIMIT:
        if (*(const long *)field < 0)
            snprintf(buf, size, "none");
        else
            snprintf(buf, size, "%ld", *(const long *)field);
        return;
    case K_ENUM:
        snprintf(buf, size, "%s", kn->choices[*(const int *)field]);
        return;
    }
    snprintf(buf, size, "?");
}

int commsched_knobs_get(const commsched_knobs *k, const char *key, char *buf,
                        size_t size)
{
    for (size_t i = 0; i < N_KNOBS; i++)
        if (strcmp(knobs[i].name, key) == 0) {
            format_value(&knobs[i], (const char *)k + knobs[i].offset, buf,
                         size);
            return 0;
        }
    return -1;
}

commsched_status commsched_knobs_set(commsched_knobs *k, const char *key,
                                     const char *value, commsched_error *err)
{
    for (size_t i = 0; i < N_KNOBS; i++) {
        if (strcmp(knobs[i].name, key) != 0)
            continue;
        int rc = parse_value(&knobs[i], value, (char *)k + knobs[i].offset);
        if (rc != 0) {
            char expected[128];
            expected_text(&knobs[i], expected, sizeof expected);
            return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                       "--set %s: %s \"%s\" (expected %s)",
                                       key,
                                       rc == -2 ? "out of range:" : "bad value",
                                       value, expected);
        }
        return COMMSCHED_OK;
    }
    size_t near = commsched_name_suggest(key, strlen(key), &knobs[0].name,
                                         N_KNOBS, sizeof knobs[0]);
    if (near != SIZE_MAX)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "--set: unknown knob \"%s\" (did you "
                                   "mean \"%s\"?)",
                                   key, knobs[near].name);
    return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                               "--set: unknown knob \"%s\" (see "
                               "--list-passes)",
                               key);
}

/* ---- runs ------------------------------------------------------------------ */

struct commsched_run {
    cs_pass_record *records;
    size_t n, cap;
    /* What rewriting passes created: every graph and schedule (the last
     * ones are the pipeline's result) and the runtimes of the last graph.
     * The caller's own graph and schedule are never here. */
    struct made {
        commsched_graph *g;
        commsched_schedule *s;
    } *made;
    size_t n_made, cap_made;
    double *runtime;            /* owned, for the last created graph */
    const double *final_runtime; /* runtime, or the caller's array */
};

static void record_free(cs_pass_record *r)
{
    for (uint32_t i = 0; i < r->pub.n_nodes; i++) {
        free((char *)r->rows[i].limiting_factor);
        free((char *)r->rows[i].grouped_info);
        free((char *)r->rows[i].moves_info);
        free((char *)r->rows[i].overlap_info);
    }
    free(r->rows);
    for (uint32_t i = 0; i < r->pub.n_buckets; i++)
        free((void *)r->buckets[i].members);
    free(r->buckets);
    free(r->overlap);
}

commsched_bucket_stats *cs_record_bucket(cs_pass_record *r)
{
    if (cs_grow((void **)&r->buckets, &r->cap_buckets,
                (size_t)r->pub.n_buckets + 1, sizeof *r->buckets) != 0)
        return NULL;
    commsched_bucket_stats *b = &r->buckets[r->pub.n_buckets++];
    memset(b, 0, sizeof *b);
    r->pub.buckets = r->buckets;
    return b;
}

void commsched_run_destroy(commsched_run *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        record_free(&r->records[i]);
    free(r->records);
    for (size_t i = 0; i < r->n_made; i++) {
        commsched_schedule_destroy(r->made[i].s);
        commsched_graph_destroy(r->made[i].g);
    }
    free(r->made);
    free(r->runtime);
    free(r);
}

size_t commsched_run_pass_count(const commsched_run *r) { return r->n; }

const commsched_pass_stats *commsched_run_pass(const commsched_run *r,
                                               size_t i)
{
    return i < r->n ? &r->records[i].pub : NULL;
}

const double *commsched_run_runtime_ns(const commsched_run *r)
{
    return r->final_runtime;
}

commsched_status cs_pass_replace(cs_pass_ctx *ctx, commsched_graph *g,
                                 commsched_schedule *s, double *runtime_ns)
{
    commsched_run *r = ctx->run;
    if (cs_grow((void **)&r->made, &r->cap_made, r->n_made + 1,
                sizeof *r->made) != 0) {
        /* The contract: they belong to the run even on failure. */
        commsched_schedule_destroy(s);
        commsched_graph_destroy(g);
        free(runtime_ns);
        return commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    r->made[r->n_made].g = g;
    r->made[r->n_made++].s = s;
    free(r->runtime); /* no later pass reads the previous graph's */
    r->runtime = runtime_ns;
    r->final_runtime = runtime_ns;
    ctx->g = g;
    ctx->s = s;
    ctx->runtime_ns = runtime_ns;
    return COMMSCHED_OK;
}

/* The one message for a name that is no pass, whoever asked (the CLI, C
 * and Python callers alike): the closest pass when the name looks like a
 * misspelling of one, else every pass. */
static commsched_status unknown_pass(const char *p, size_t len,
                                     commsched_error *err)
{
    size_t near =
        commsched_name_suggest(p, len, &passes[0].name, N_PASSES,
                               sizeof passes[0]);
    if (near != SIZE_MAX)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "unknown pass \"%.*s\" (did you mean "
                                   "\"%s\"?)",
                                   (int)len, p, passes[near].name);
    char names[COMMSCHED_ERROR_TEXT_LENGTH] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_PASSES; i++) {
        int w = snprintf(names + used, sizeof names - used, "%s%s",
                         i ? ", " : "", passes[i].name);
        if (w < 0 || (size_t)w >= sizeof names - used)
            break;
        used += (size_t)w;
    }
    return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                               "unknown pass \"%.*s\" (known: %s)", (int)len,
                               p, names);
}

/* Splits "a,b,c" into pass indices; "" and "none" give an empty list. */
static commsched_status parse_pipeline(const char *list, size_t **out,
                                       size_t *count, commsched_error *err)
{
    *out = NULL;
    *count = 0;
    size_t cap = 0;
    const char *p = list ? list : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 4 && strncmp(p, "none", 4) == 0) {
            /* 'none' is no pass */
        } else if (len > 0) {
            size_t i = 0;
            while (i < N_PASSES && (strlen(passes[i].name) != len ||
                                    strncmp(passes[i].name, p, len) != 0))
                i++;
            if (i == N_PASSES) {
                free(*out);
                *out = NULL;
                *count = 0;
                return unknown_pass(p, len, err);
            }
            if (cs_grow((void **)out, &cap, *count + 1, sizeof **out) != 0) {
                free(*out);
                *out = NULL;
                return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                           "out of memory");
            }
            (*out)[(*count)++] = i;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return COMMSCHED_OK;
}

commsched_status commsched_pipeline_check(const char *passes_list,
                                          commsched_error *err)
{
    size_t *ids = NULL, n = 0;
    commsched_status st = parse_pipeline(passes_list, &ids, &n, err);
    free(ids);
    return st;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static commsched_status peak_of(const commsched_schedule *s, int64_t *peak,
                                commsched_error *err)
{
    commsched_memory *m = NULL;
    commsched_status st = commsched_memory_create(s, &m, err);
    if (st == COMMSCHED_OK)
        *peak = commsched_memory_peak(m, s, NULL);
    commsched_memory_destroy(m);
    return st;
}

/* The peak over simulated time of s's order (the simulator's memory
 * curve). */
static commsched_status time_peak_of(const commsched_graph *g,
                                     const commsched_schedule *s,
                                     const double *runtime_ns, int64_t *peak,
                                     commsched_error *err)
{
    commsched_sim *sim = NULL;
    commsched_status st = commsched_sim_create(g, &sim, err);
    if (st == COMMSCHED_OK &&
        (st = commsched_sim_run_schedule(sim, s, runtime_ns, NULL, err)) ==
            COMMSCHED_OK)
        *peak = commsched_sim_get_totals(sim)->peak_memory;
    commsched_sim_destroy(sim);
    return st;
}

/* The invariants every pass must keep, checked between passes in debug
 * builds and under COMMSCHED_PIPELINE_VERIFY: the order respects every
 * non-fake edge (data, `after`, in-place write order) and no two nodes in
 * flight at once race on a buffer. After a pass (pass_name), a broken
 * invariant is a bug in the pass, not in the user's graph: EINTERNAL naming
 * the pass, followed by what the check found. On the order the caller hands
 * the pipeline (pass_name NULL) it is the caller's error (EORDER, or what
 * the check found), and must not be blamed on the first pass, which may
 * keep it. */
static commsched_status check_order(const commsched_schedule *s,
                                    const char *pass_name,
                                    commsched_error *err)
{
    commsched_error found = {0};
    commsched_status st = commsched_schedule_check(s, 0, &found);
    if (st == COMMSCHED_OK)
        st = commsched_schedule_check_races(s, &found);
    if (st == COMMSCHED_OK)
        return COMMSCHED_OK;
    if (st == COMMSCHED_ENOMEM)
        return commsched_error_set(err, st, NULL, "%s", found.text);
    if (!pass_name)
        return commsched_error_set(err, st, found.path,
                                   "the order given to the pipeline is not "
                                   "valid (before any pass ran): %s",
                                   found.text);
    return commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                               "pass %s broke the order (a bug in the pass): "
                               "%s%s%s",
                               pass_name, found.path, found.path[0] ? ": " : "",
                               found.text);
}

/* The runner behind both entry points. allow_rewrite is 0 for
 * commsched_pipeline_run, whose caller could not receive a new graph. */
static commsched_status run_pipeline(commsched_graph **gp,
                                     commsched_schedule **sp,
                                     const double *runtime_ns,
                                     const commsched_cost_options *cost,
                                     const char *list, const commsched_knobs *k,
                                     unsigned flags, int allow_rewrite,
                                     commsched_run **out, commsched_error *err)
{
    size_t *ids = NULL, n_ids = 0;
    *out = NULL;
    commsched_status st = parse_pipeline(list, &ids, &n_ids, err);
    if (st != COMMSCHED_OK)
        return st;
    /* No knobs: every knob at its Inductor default, as the header says. */
    commsched_knobs *own_knobs = NULL;
    if (!k) {
        if ((st = commsched_knobs_create(&own_knobs, err)) != COMMSCHED_OK) {
            free(ids);
            return st;
        }
        k = own_knobs;
    }
    for (size_t i = 0; i < n_ids && !allow_rewrite; i++)
        if (passes[ids[i]].rewrites) {
            const char *name = passes[ids[i]].name;
            free(ids);
            commsched_knobs_destroy(own_knobs);
            return commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "pass %s rewrites the graph: run it with "
                "commsched_pipeline_apply",
                name);
        }
    commsched_run *run = cs_calloc(1, sizeof *run);
    if (!run || (n_ids && !(run->records = cs_calloc(n_ids,
                                                     sizeof *run->records)))) {
        free(ids);
        commsched_run_destroy(run);
        commsched_knobs_destroy(own_knobs);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    run->cap = n_ids;
    run->final_runtime = runtime_ns;
    commsched_cost_options default_cost;
    commsched_cost_options_init(&default_cost);
#ifndef NDEBUG
    int check = 1;
#else
    int check = (flags & COMMSCHED_PIPELINE_VERIFY) != 0;
#endif
    if (check && (st = check_order(*sp, NULL, err)) != COMMSCHED_OK) {
        free(ids);
        commsched_run_destroy(run);
        commsched_knobs_destroy(own_knobs);
        return st;
    }
    commsched_graph *g0 = *gp;
    commsched_schedule *s0 = *sp;
    cs_pass_ctx ctx = {*gp, *sp, runtime_ns, k,
                       (flags & COMMSCHED_PIPELINE_VERIFY) ||
                           k->reorder_iterative_debug_memory_recompute,
                       (flags & COMMSCHED_PIPELINE_ORDER_ONLY) != 0,
                       NULL, err, cost ? cost : &default_cost, run, 0, -1};
    /* A pass after the first that budgets the peak over simulated time
     * (overlap) needs it of the order the pipeline was given. */
    int later_overlap = 0;
    for (size_t i = 1; i < n_ids; i++)
        later_overlap |= passes[ids[i]].run == cs_pass_overlap;
    for (size_t i = 0; i < n_ids && st == COMMSCHED_OK; i++) {
        const pass *ps = &passes[ids[i]];
        cs_pass_record *rec = &run->records[run->n++];
        rec->pub.pass = ps->name;
        rec->pub.kind = ps->stats;
        ctx.rec = rec;
        if ((st = peak_of(ctx.s, &rec->pub.peak_before, err)) != COMMSCHED_OK)
            break;
        if (i == 0)
            ctx.pipeline_peak = rec->pub.peak_before;
        if (i == 0 && later_overlap &&
            (st = time_peak_of(ctx.g, ctx.s, ctx.runtime_ns,
                               &ctx.pipeline_time_peak, err)) != COMMSCHED_OK)
            break;
        double t0 = now_ms();
        st = ps->run(&ctx);
        rec->pub.wall_ms = now_ms() - t0;
        rec->pub.graph = ctx.g;
        if (st == COMMSCHED_OK)
            st = peak_of(ctx.s, &rec->pub.peak_after, err);
        if (st == COMMSCHED_OK && check)
            st = check_order(ctx.s, ps->name, err);
    }
    free(ids);
    commsched_knobs_destroy(own_knobs);
    if (st != COMMSCHED_OK) {
        /* The caller gets its own graph and schedule back; whatever the
         * passes created goes with the run. */
        *gp = g0;
        *sp = s0;
        commsched_run_destroy(run);
        return st;
    }
    *gp = ctx.g;
    *sp = ctx.s;
    *out = run;
    return COMMSCHED_OK;
}

commsched_status commsched_pipeline_run(commsched_graph *g,
                                        commsched_schedule *s,
                                        const double *runtime_ns,
                                        const char *list,
                                        const commsched_knobs *k,
                                        unsigned flags, commsched_run **out,
                                        commsched_error *err)
{
    return run_pipeline(&g, &s, runtime_ns, NULL, list, k, flags, 0, out,
                        err);
}

commsched_status commsched_pipeline_apply(
    commsched_graph **g, commsched_schedule **s, const double *runtime_ns,
    const commsched_cost_options *cost, const char *list,
    const commsched_knobs *k, unsigned flags, commsched_run **out,
    commsched_error *err)
{
    return run_pipeline(g, s, runtime_ns, cost, list, k, flags, 1, out, err);
}

commsched_status commsched_graph_drop_violated_fake_edges(
    commsched_graph *g, const commsched_schedule *s, uint32_t *dropped,
    const char ***names, commsched_error *err)
{
    uint32_t n = g->n_nodes;
    size_t m = g->after_fake.off[n], k = 0, nd = 0;
    uint32_t *pos = cs_malloc_array(n, sizeof *pos);
    uint32_t *rows = cs_malloc_array(m, sizeof *rows);
    uint32_t *vals = cs_malloc_array(m, sizeof *vals);
    const char **list = names ? cs_malloc_array(2 * m, sizeof *list) : NULL;
    cs_csr fake = {0};
    commsched_status st = COMMSCHED_OK;
    *dropped = 0;
    if (names)
        *names = NULL;
    if (!pos || !rows || !vals || (names && !list))
        goto oom;
    uint32_t p = 0;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v))
        pos[v] = p++;
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++) {
            uint32_t d = g->after_fake.idx[e];
            if (pos[d] < pos[v]) {
                rows[k] = v;
                vals[k++] = d;
            } else if (list) {
                list[2 * nd] = g->nodes[d].name;
                list[2 * nd + 1] = g->nodes[v].name;
                nd++;
            } else {
                nd++;
            }
        }
    if (nd > 0 && (cs_csr_from_pairs(&fake, n, rows, vals, k) != 0 ||
                   cs_graph_set_fake_edges(g, &fake) != 0))
        goto oom;
    *dropped = (uint32_t)nd;
    if (names) {
        *names = list;
        list = NULL;
    }
    goto cleanup;
oom:
    st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
cleanup:
    cs_csr_free(&fake);
    free(pos);
    free(rows);
    free(vals);
    free(list);
    return st;
}
