/* commsched — reorder_communication_preserving_peak_memory (RCPPM), the
 * seed's _reorder_communication_preserving_peak_memory_internal.
 *
 * Walks async collectives left to right. For each collective `curr` it
 * grows a group [head .. curr] and looks at the node just before the group:
 * the candidate either joins the group (it has a data dependency and is
 * groupable), stops the walk (a limiting factor), or is swapped to right
 * after the group when the memory budget allows. Rules in the seed's order:
 *   1. runtime estimations on and curr already unexposed enough: stop;
 *   2. unsafe_collectives_reorder off and the candidate is a collective;
 *   3. data dependency: group the candidate, or stop if not groupable;
 *   4. runtime estimations: refuse swaps that expose waits in the group or
 *      an earlier collective;
 *   5. memory: stop if the potential peak passes peak x (1 + budget).
 * Memory is the exact tracker of memory.c (docs/FORMAT.md "Memory model (in brief)"): the potential
 * peak reads the group's current levels before every test.
 *
 * Literal details kept: the last node is never processed; after a
 * collective the walk resumes at the node that followed it before it was
 * processed. Cost: with runtime estimations off, O((group size + log n) x
 * runs), a run being the moves between two candidates that join or stop
 * the group (far_run; move_run, O(moves + group size x runs), when
 * collectives keep their order); with them on, O(moves x group size);
 * plus the exposed-time walks, O(distance to the wait) per collective,
 * or O(log n x binades the sum crosses) in far runs' mode (the tracker
 * adds the runtimes: commsched_memory_time_sum). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heap.h"
#include "passes_internal.h"

typedef struct group_wait {
    uint32_t node;
    double comm, comp;
} group_wait;

typedef struct rcppm {
    cs_pass_ctx *ctx;
    const commsched_graph *g;
    commsched_memory *m;
    double *rt;
    int64_t peak_memory;
    uint32_t *dep_mark; /* dep_mark[v] == epoch: some group node depends on v */
    uint32_t epoch;
    cs_heap deps;       /* far runs: the marked nodes not yet in the group,
                           the last in the order first */
    int far;            /* the tracker moves runs as far as they go */
    int64_t limit;      /* the highest potential peak within the budget */
    group_wait *waits;
    size_t n_waits, cap_waits;
    uint32_t *run;     /* a run of candidates for the tracker to price */
    int64_t *run_peak; /* and each one's potential peak */
    size_t cap_run, cap_run_peak;
    int verify_flip;   /* --verify-memory: which check the next run gets */
    cs_walk walk;
    cs_text info, why;
} rcppm;

static commsched_status oom(rcppm *r)
{
    return commsched_error_set(r->ctx->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

/* Marks v's dependencies; 0, or -1 out of memory. */
static int mark_deps(rcppm *r, uint32_t v)
{
    const commsched_graph *g = r->g;
    for (uint32_t k = g->deps.off[v]; k < g->deps.off[v + 1]; k++) {
        uint32_t d = g->deps.idx[k];
        if (r->dep_mark[d] == r->epoch)
            continue;
        r->dep_mark[d] = r->epoch;
        if (!r->far)
            continue;
        /* Keyed by position, which stays as it is while the collective is
         * processed: runs move only the nodes after the last marked one,
         * and a single move the node right before the group. */
        cs_heap_item it = {UINT32_MAX - commsched_memory_position(r->m, d),
                           0.0, 0, d};
        if (cs_heap_push(&r->deps, it) != 0)
            return -1;
    }
    return 0;
}

/* Far runs: the last node before the group that a group node depends on
 * (a run ends there), or COMMSCHED_NONE. */
static uint32_t last_dep(const rcppm *r)
{
    return r->deps.n > 0 ? r->deps.a[0].v : COMMSCHED_NONE;
}

/* _is_node_groupable_for_reorder; *reason gets the seed's text. */
static int groupable(const rcppm *r, uint32_t c, const char **reason)
{
    const commsched_knobs *k = r->ctx->k;
    if (!k->reorder_iterative_group_with_collectives && cs_is_async(r->g, c)) {
        *reason = "candidate contains_collective";
        return 0;
    }
    if (!k->reorder_iterative_use_runtime_estimations &&
        r->g->nodes[c].gemm_like) {
        *reason = "contains_gemm_like";
        return 0;
    }
    *reason = NULL;
    return 1;
}

static void outs_list(rcppm *r, uint32_t c)
{
    const cs_node *n = &r->g->nodes[c];
    cs_text_appendf(&r->why, "(outs:[");
    for (uint32_t k = 0; k < n->n_out; k++)
        cs_text_appendf(&r->why, "%s'%s'", k ? ", " : "",
                        r->g->buffers[n->out_first + k].name);
    cs_text_appendf(&r->why, "])");
}

/* Rule 5: the potential peak passes peak x (1 + budget). */
static int over_budget(const rcppm *r, int64_t potential)
{
    return (double)(potential - r->peak_memory) >
           (double)r->peak_memory *
               r->ctx->k->reorder_iterative_peak_memory_budget;
}

static void why_memory(rcppm *r, int64_t potential)
{
    cs_text_appendf(&r->why, "peak memory new:%lld vs base:%lld",
                    (long long)potential, (long long)r->peak_memory);
}

/* The highest potential peak over_budget accepts (-1: none, INT64_MAX:
 * all): it is monotone in the potential, so far runs compare integers. */
static int64_t budget_limit(const rcppm *r)
{
    if (over_budget(r, 0))
        return -1;
    if (!over_budget(r, INT64_MAX))
        return INT64_MAX;
    int64_t lo = 0, hi = INT64_MAX; /* !over(lo), over(hi) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (over_budget(r, mid))
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* With runtime estimations off and collectives free to pass collectives
 * (the defaults), a candidate faces only the memory test until a node
 * the group depends on: the tracker moves the whole run in one go, as far
 * as the budget allows (commsched_memory_far_run), and stops before a
 * node that takes a free from the group, for the rules one at a time.
 * Sets *stopped on a memory stop; leaves *cand at the next candidate. */
static commsched_status far_run(rcppm *r, commsched_node_stats *info,
                                uint32_t head, uint32_t tail, uint32_t stop,
                                uint32_t *cand, int *stopped)
{
    commsched_far_run fr;
    commsched_status st = commsched_memory_far_run(
        r->m, r->ctx->s, head, tail, stop, r->limit, &fr, r->ctx->err);
    if (st != COMMSCHED_OK)
        return st;
    info->moves += (uint32_t)fr.moved; /* < nodes */
    if (r->ctx->verify &&
        (st = commsched_memory_verify(r->m, r->ctx->s, r->ctx->err)) !=
            COMMSCHED_OK)
        return st;
    if (fr.over) {
        why_memory(r, fr.potential);
        *stopped = 1;
    }
    *cand = fr.next;
    return COMMSCHED_OK;
}

/* --verify-memory for a run: every other run is moved one node at a time
 * with plan_move's own price compared against the run's (the stopping
 * candidate's included), the others through commit_run; after either the
 * tracker must equal a full recompute. */
static commsched_status verify_run(rcppm *r, uint32_t head, uint32_t tail,
                                   size_t planned, size_t k)
{
    commsched_schedule *s = r->ctx->s;
    commsched_status st;
    if ((r->verify_flip ^= 1) != 0) {
        for (size_t j = 0; j < planned && j <= k; j++) {
            int64_t potential;
            st = commsched_memory_plan_move(r->m, s, COMMSCHED_MOVE_AFTER_GROUP,
                                            r->run[j], head, tail, &potential,
                                            r->ctx->err);
            if (st != COMMSCHED_OK)
                return st;
            if (potential != r->run_peak[j])
                return commsched_error_set(
                    r->ctx->err, COMMSCHED_EINTERNAL, NULL,
                    "RCPPM: the run priced moving \"%s\" at %lld bytes, one "
                    "move at a time says %lld",
                    r->g->nodes[r->run[j]].name, (long long)r->run_peak[j],
                    (long long)potential);
            if (j < k)
                commsched_memory_commit_move(r->m, s);
        }
    } else {
        commsched_memory_commit_run(r->m, s, k);
    }
    return commsched_memory_verify(r->m, s, r->ctx->err);
}

/* With runtime estimations off, rules 1 and 4 never apply, so from *cand
 * back to the next candidate that stops the walk or joins the group every
 * candidate only faces the memory test: the tracker prices the run in one
 * go and the accepted prefix moves in one splice (the seed's order, moves
 * and figures; a walk of n moves costs O(n + group), not O(n x group)).
 * Takes at most *chunk candidates, doubling it each time, so a walk that
 * stops early has not looked far ahead. Sets *stopped on a memory stop;
 * leaves *cand at the next candidate, for the rules one at a time when
 * *single (it stops or joins the walk, or takes a free from the group). */
static commsched_status move_run(rcppm *r, commsched_node_stats *info,
                                 uint32_t head, uint32_t tail, uint32_t *cand,
                                 size_t *chunk, int *stopped, int *single)
{
    const commsched_graph *g = r->g;
    commsched_schedule *s = r->ctx->s;
    int unsafe = r->ctx->k->reorder_iterative_unsafe_collectives_reorder;
    size_t n = 0;
    *single = 1;
    if (cs_grow((void **)&r->run, &r->cap_run, *chunk, sizeof *r->run) != 0 ||
        cs_grow((void **)&r->run_peak, &r->cap_run_peak, *chunk,
                sizeof *r->run_peak) != 0)
        return oom(r);
    cs_links l = cs_schedule_links(s);
    for (uint32_t c = *cand; n < *chunk && c != l.end &&
                             (unsafe || !cs_is_collective(g, c)) &&
                             r->dep_mark[c] != r->epoch;
         c = l.prev[c])
        r->run[n++] = c;
    if (n == 0)
        return COMMSCHED_OK;
    size_t planned, k = 0;
    commsched_status st = commsched_memory_plan_run(
        r->m, s, head, tail, r->run, n, r->run_peak, &planned, r->ctx->err);
    if (st != COMMSCHED_OK)
        return st;
    while (k < planned && !over_budget(r, r->run_peak[k]))
        k++;
    if (r->ctx->verify) {
        if ((st = verify_run(r, head, tail, planned, k)) != COMMSCHED_OK)
            return st;
    } else {
        commsched_memory_commit_run(r->m, s, k);
    }
    info->moves += (uint32_t)k; /* k <= *chunk <= 2^16 */
    if (k < planned) {
        why_memory(r, r->run_peak[k]);
        *stopped = 1;
        return COMMSCHED_OK;
    }
    *cand = commsched_schedule_prev(s, head);
    *single = planned < n;
    if (*chunk < ((size_t)1 << 16))
        *chunk *= 2;
    return COMMSCHED_OK;
}

/* Processes one async collective; returns OK or an error status. */
static commsched_status process(rcppm *r, uint32_t curr,
                                commsched_node_stats *info)
{
    const commsched_graph *g = r->g;
    const commsched_knobs *k = r->ctx->k;
    commsched_schedule *s = r->ctx->s;
    double comm, comp;
    cs_coll_exposed(g, s, r->rt, curr, &comm, &comp, &r->walk);
    /* the final walk's too when nothing moves */
    cs_walk_record first = r->walk.rec;
    info->comm_time = comm;
    info->comp_time = comp;
    info->initial_exposed = info->final_exposed = comm - comp;

    if (++r->epoch == 0) {
        memset(r->dep_mark, 0, (size_t)g->n_nodes * sizeof *r->dep_mark);
        r->epoch = 1;
    }
    r->deps.n = 0;
    if (mark_deps(r, curr) != 0)
        return oom(r);
    r->n_waits = 0;
    uint32_t head = curr, tail = curr;
    double group_runtime = 0.0;
    cs_text_clear(&r->why);
    const char *factor = NULL; /* static text, or NULL: r->why / "None" */
    int stopped = 0;

    uint32_t cand = commsched_schedule_prev(s, curr);
    uint32_t stop = last_dep(r);
    size_t chunk = 8;
    while (cand != COMMSCHED_NONE) {
        if (r->far) {
            commsched_status st =
                far_run(r, info, head, tail, stop, &cand, &stopped);
            if (st != COMMSCHED_OK)
                return st;
            if (stopped || cand == COMMSCHED_NONE)
                break;
        } else if (!k->reorder_iterative_use_runtime_estimations) {
            int single;
            commsched_status st = move_run(r, info, head, tail, &cand, &chunk,
                                           &stopped, &single);
            if (st != COMMSCHED_OK)
                return st;
            if (stopped)
                break;
            if (!single)
                continue;
        }
        if (k->reorder_iterative_use_runtime_estimations &&
            info->final_exposed <
                -k->reorder_iterative_extra_comm_comp_overlap * info->comm_time) {
            factor = "unexposed by runtime estimations";
            break;
        }
        if (!k->reorder_iterative_unsafe_collectives_reorder &&
            cs_is_collective(g, cand)) {
            factor = "collective ordering";
            break;
        }
        if (r->dep_mark[cand] == r->epoch) { /* a group node depends on it */
            const char *reason;
            if (!groupable(r, cand, &reason)) {
                cs_text_appendf(&r->why, "data dependency detected\n candidate:%s",
                                g->nodes[cand].name);
                outs_list(r, cand);
                cs_text_appendf(&r->why, "\n non_group_reason:%s%s%s", reason,
                                strcmp(reason, "contains_gemm_like") ? " " : "",
                                strcmp(reason, "contains_gemm_like")
                                    ? g->nodes[cand].name
                                    : "");
                stopped = 1;
                break;
            }
            head = cand;
            if (r->far) { /* the last marked node joins */
                assert(stop == cand);
                cs_heap_pop(&r->deps);
            }
            if (mark_deps(r, cand) != 0)
                return oom(r);
            stop = last_dep(r);
            if (k->reorder_iterative_use_runtime_estimations &&
                cs_is_wait(g, cand)) {
                if (cs_grow((void **)&r->waits, &r->cap_waits, r->n_waits + 1,
                            sizeof *r->waits) != 0)
                    return oom(r);
                group_wait *w = &r->waits[r->n_waits++];
                w->node = cand;
                cs_wait_exposed(g, s, r->rt, cand, &w->comm, &w->comp,
                                &r->walk);
            }
            if (!cs_is_async(g, cand))
                group_runtime += r->rt[cand];
            info->grouped++;
            cand = commsched_schedule_prev(s, cand);
            continue;
        }
        if (k->reorder_iterative_use_runtime_estimations) {
            if (!cs_is_async(g, cand)) {
                double c = r->rt[cand];
                if (c > 0 && r->n_waits > 0) {
                    double before = info->comm_time - info->comp_time;
                    double after = before - c;
                    double delta = (after > 0 ? after : 0) -
                                   (before > 0 ? before : 0);
                    for (size_t i = 0; i < r->n_waits; i++) {
                        double gb = r->waits[i].comm - r->waits[i].comp;
                        double ga = gb + c;
                        delta += (ga > 0 ? ga : 0) - (gb > 0 ? gb : 0);
                    }
                    if (delta > 0) {
                        char b1[32], b2[32];
                        cs_text_appendf(&r->why,
                                        "candidate has compute %s, group "
                                        "contains waits, total_exposed_delta "
                                        "%s",
                                        cs_pyfloat(b1, c),
                                        cs_pyfloat(b2, delta));
                        stopped = 1;
                        break;
                    }
                    for (size_t i = 0; i < r->n_waits; i++)
                        r->waits[i].comp -= c;
                }
            } else if (group_runtime > 0) {
                double cc, cp;
                cs_coll_exposed(g, s, r->rt, cand, &cc, &cp, &r->walk);
                double before = cc - cp, after = cc - cp + group_runtime;
                double delta = (after > 0 ? after : 0) - (before > 0 ? before : 0);
                if (delta > 0) {
                    char b1[32], b2[32], b3[32], b4[32];
                    cs_text_appendf(&r->why,
                                    "candidate %s is collective, "
                                    "group_runtime:%s, exposed_delta:%s "
                                    "c_comm_time:%s c_comp_time:%s",
                                    g->nodes[cand].name,
                                    cs_pyfloat(b1, group_runtime),
                                    cs_pyfloat(b2, delta), cs_pyfloat(b3, cc),
                                    cs_pyfloat(b4, cp));
                    stopped = 1;
                    break;
                }
            }
        }
        int64_t potential;
        commsched_status st = commsched_memory_plan_move(
            r->m, s, COMMSCHED_MOVE_AFTER_GROUP, cand, head, tail, &potential,
            r->ctx->err);
        if (st != COMMSCHED_OK)
            return st;
        if (over_budget(r, potential)) {
            why_memory(r, potential);
            stopped = 1;
            break;
        }
        info->moves++;
        commsched_memory_commit_move(r->m, s);
        /* The seed re-walks to the wait after every move. Only the runtime
         * estimation rules read the result before the collective is done;
         * otherwise the one walk at the end gives the same figures, and
         * skipping the rest keeps a pass linear in the moves. */
        if (k->reorder_iterative_use_runtime_estimations) {
            cs_coll_exposed(g, s, r->rt, curr, &comm, &comp, &r->walk);
            info->comm_time = comm;
            info->comp_time = comp;
            info->final_exposed = comm - comp;
        }
        if (r->ctx->verify &&
            (st = commsched_memory_verify(r->m, s, r->ctx->err)) !=
                COMMSCHED_OK)
            return st;
        cand = commsched_schedule_prev(s, head);
    }
    /* overlap_info and the final figures as of the last move */
    if (info->moves > 0) {
        cs_coll_exposed(g, s, r->rt, curr, &comm, &comp, &r->walk);
        info->comm_time = comm;
        info->comp_time = comp;
        info->final_exposed = comm - comp;
        first = r->walk.rec;
    }
    if (!r->ctx->order_only)
        cs_walk_info(&first, g, 'W', &r->info);
    char *ov = cs_text_take(&r->info);
    char *lf = factor ? cs_strdup(factor)
                      : stopped ? cs_text_take(&r->why) : cs_strdup("None");
    char *empty = cs_strdup("");
    if (!ov || !lf || !empty) {
        free(ov);
        free(lf);
        free(empty);
        return oom(r);
    }
    cs_row_set(&info->overlap_info, ov);
    cs_row_set(&info->limiting_factor, lf);
    cs_row_set(&info->grouped_info, empty);
    return COMMSCHED_OK;
}

commsched_status cs_pass_reorder_preserving_peak_memory(cs_pass_ctx *ctx)
{
    const commsched_graph *g = ctx->g;
    rcppm r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.g = g;
    commsched_status st = COMMSCHED_OK;
    int has_collectives = 0;
    for (uint32_t v = 0; v < g->n_nodes && !has_collectives; v++)
        has_collectives = cs_is_collective(g, v);
    if (!has_collectives)
        return COMMSCHED_OK;
    r.rt = cs_iterative_runtimes(ctx);
    r.dep_mark = cs_calloc(g->n_nodes, sizeof *r.dep_mark);
    if (!r.rt || !r.dep_mark || cs_walk_init(&r.walk, g) != 0) {
        st = oom(&r);
        goto cleanup;
    }
    if ((st = commsched_memory_create(ctx->s, &r.m, ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    r.peak_memory = commsched_memory_peak(r.m, ctx->s, NULL);
    r.limit = budget_limit(&r);
    r.far = !ctx->k->reorder_iterative_use_runtime_estimations &&
            ctx->k->reorder_iterative_unsafe_collectives_reorder;
    if (r.far) {
        if ((st = commsched_memory_use_tree(r.m, ctx->s, ctx->err)) !=
            COMMSCHED_OK)
            goto cleanup;
        /* the walks from a raised collective to its wait are as long as
         * the hoists: the tracker adds their runtimes */
        if ((st = commsched_memory_use_times(r.m, r.rt, ctx->err)) !=
            COMMSCHED_OK)
            goto cleanup;
        cs_walk_sums_on(&r.walk, r.m);
    }

    long limit = ctx->k->reorder_iterative_debug_limit_to_reorder;
    long processed = 0;
    uint32_t curr = commsched_schedule_first(ctx->s);
    while (curr != COMMSCHED_NONE &&
           commsched_schedule_next(ctx->s, curr) != COMMSCHED_NONE) {
        uint32_t next_curr = commsched_schedule_next(ctx->s, curr);
        if (!cs_is_async(g, curr)) {
            curr = next_curr;
            continue;
        }
        if (limit >= 0 && processed >= limit)
            break;
        processed++;
        commsched_node_stats *info = cs_record_row(ctx->rec, curr);
        if (!info) {
            st = oom(&r);
            goto cleanup;
        }
        if ((st = process(&r, curr, info)) != COMMSCHED_OK)
            goto cleanup;
        curr = next_curr;
    }
cleanup:
    commsched_memory_destroy(r.m);
    free(r.rt);
    free(r.dep_mark);
    cs_heap_fini(&r.deps);
    cs_walk_free(&r.walk);
    free(r.waits);
    free(r.run);
    free(r.run_peak);
    cs_text_free(&r.info);
    cs_text_free(&r.why);
    return st;
}
