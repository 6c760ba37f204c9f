/* commsched — sink_waits_iterative, the seed's
 * _sink_waits_iterative_internal: RCPPM's mirror image.
 *
 * Walks waits right to left. For each wait `curr` it grows a group
 * [curr .. tail] and looks at the node just after the group: the candidate
 * stops the walk (an async collective, unless swap_with_collectives),
 * joins the group (it depends on the group, or both contain collectives,
 * and it is groupable), stops it (a data dependency it cannot join; a
 * collective-ordering conflict when unsafe reorder is off), or is swapped
 * to right before the group when runtime estimations and the memory budget
 * allow.
 *
 * Corrections to the seed (docs/FORMAT.md "Memory model (in brief)", docs/PASSES.md): memory is the exact tracker
 * (the last-use map is updated when a buffer's last use moves into the
 * group), the group's levels are read fresh before each budget test, and
 * with runtime estimations on a compute candidate is swapped only if
 *   exposed_delta = [max(0, comm - comp - c) - max(0, comm - comp)]
 *                 + sum over group collectives
 *                   [max(0, gc_comm - gc_comp + c) - max(0, gc_comm - gc_comp)]
 * is <= 0 (PyTorch PR #184558; the seed drops the first term's second half
 * and reverses the sign of the sum).
 *
 * Literal details kept: the first node is never processed; after a wait the
 * walk resumes at the node that preceded it before it was processed; a wait
 * may move past a sync collective (only async ones stop it). */
#include <stdlib.h>
#include <string.h>

#include "passes_internal.h"

typedef struct group_coll {
    uint32_t node;
    double comm, comp;
} group_coll;

typedef struct sinker {
    cs_pass_ctx *ctx;
    const commsched_graph *g;
    commsched_memory *m;
    double *rt;
    int64_t peak_memory;
    uint32_t *in_group; /* in_group[v] == epoch: v is in the current group */
    uint32_t epoch;
    group_coll *colls;
    size_t n_colls, cap_colls;
    cs_walk walk;
    uint64_t walked; /* terms the waits' walks summed without positions */
    uint64_t moved;  /* moves the pass made so far */
    cs_text info, why, moves;
} sinker;

static commsched_status oom(sinker *k)
{
    return commsched_error_set(k->ctx->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

/* _is_node_groupable_for_sink_waits; *reason gets the seed's text. */
static int groupable(const sinker *k, uint32_t c, const char **reason)
{
    const commsched_graph *g = k->g;
    if (cs_is_wait(g, c)) {
        *reason = "candidate contains wait";
        return 0;
    }
    if (cs_is_async(g, c)) {
        *reason = "candidate contains_async_collective";
        return 0;
    }
    if (!k->ctx->k->sink_iterative_use_runtime_estimations) {
        if (cs_is_collective(g, c)) {
            *reason = "candidate contains collective";
            return 0;
        }
        if (g->nodes[c].gemm_like) {
            *reason = "candidate contains gemm_like";
            return 0;
        }
    }
    *reason = NULL;
    return 1;
}

/* 1 when c has a non-fake dependency on a node of the group. */
static int depends_on_group(const sinker *k, uint32_t c)
{
    const commsched_graph *g = k->g;
    for (uint32_t i = g->deps.off[c]; i < g->deps.off[c + 1]; i++)
        if (k->in_group[g->deps.idx[i]] == k->epoch)
            return 1;
    return 0;
}

static double pos0(double x) { return x > 0 ? x : 0; }

/* The seed's walk from a wait back to its collective. Once the walks have
 * cost about twice what the tracker's order tree would have (measured on
 * the FSDP step: a node passed ~1.5 ns, a tree built ~50 ns a node, a move
 * with the tree ~0.7 us more), the levels move into the tree and the walks
 * take positions from it: a long walk then skips what its figure cannot
 * depend on (cs_wait_exposed). A graph whose walks are short against its
 * moves (the FSDP step: 11M terms, 27K moves) never pays for the tree.
 * Fails only with ENOMEM (building the tree). */
static commsched_status wait_walk(sinker *k, uint32_t wait, double *comm,
                                  double *comp)
{
    cs_wait_exposed(k->g, k->ctx->s, k->rt, wait, comm, comp, &k->walk);
    if (k->walk.m)
        return COMMSCHED_OK;
    k->walked += k->walk.rec.terms;
    if (k->walked <= 64 * (uint64_t)k->g->n_nodes + 1000 * k->moved)
        return COMMSCHED_OK;
    commsched_status st = commsched_memory_use_tree(k->m, k->ctx->s, k->ctx->err);
    if (st == COMMSCHED_OK)
        cs_walk_positions_on(&k->walk, k->m);
    return st;
}

static commsched_status process(sinker *k, uint32_t curr,
                                commsched_node_stats *info)
{
    const commsched_graph *g = k->g;
    const commsched_knobs *kn = k->ctx->k;
    commsched_schedule *s = k->ctx->s;
    double comm, comp;
    commsched_status wst = wait_walk(k, curr, &comm, &comp);
    if (wst != COMMSCHED_OK)
        return wst;
    /* the final walk's too when the wait does not move (a walk back to
     * the collective can be most of the pass once RCPPM has raised the
     * collectives) */
    cs_walk_record first = k->walk.rec;
    info->initial_exposed = info->final_exposed = comm - comp;
    info->comm_time = comm;
    info->comp_time = comp;

    if (++k->epoch == 0) {
        memset(k->in_group, 0, (size_t)g->n_nodes * sizeof *k->in_group);
        k->epoch = 1;
    }
    k->in_group[curr] = k->epoch;
    k->n_colls = 0;
    uint32_t head = curr, tail = curr;
    double group_runtime = 0.0;
    int group_has_collective = cs_is_collective(g, curr);
    cs_text_clear(&k->why);
    cs_text_clear(&k->moves);
    const char *factor = NULL;
    int stopped = 0;

    uint32_t cand = commsched_schedule_next(s, curr);
    while (cand != COMMSCHED_NONE) {
        if (kn->sink_iterative_use_runtime_estimations &&
            info->final_exposed <
                -kn->sink_iterative_extra_comm_comp_overlap * info->comm_time) {
            factor = "unexposed by runtime estimations";
            break;
        }
        int data_dep = depends_on_group(k, cand);
        if (!kn->sink_waits_iterative_swap_with_collectives &&
            cs_is_async(g, cand)) {
            cs_text_appendf(&k->why, "candidate contains_async_collective %s",
                            g->nodes[cand].name);
            stopped = 1;
            break;
        }
        int both_comms = group_has_collective && cs_is_collective(g, cand);
        if (data_dep || both_comms) {
            const char *reason;
            if (groupable(k, cand, &reason)) {
                tail = cand;
                k->in_group[cand] = k->epoch;
                group_has_collective |= cs_is_collective(g, cand);
                if (kn->sink_iterative_use_runtime_estimations &&
                    cs_is_collective(g, cand)) {
                    if (cs_grow((void **)&k->colls, &k->cap_colls,
                                k->n_colls + 1, sizeof *k->colls) != 0)
                        return oom(k);
                    group_coll *c = &k->colls[k->n_colls++];
                    c->node = cand;
                    cs_coll_exposed(g, s, k->rt, cand, &c->comm, &c->comp,
                                    &k->walk);
                    /* Inductor adds only sync collectives' runtimes to the
                     * group (torch 2.13 comms.py:1901, inside this branch);
                     * grouped compute does not count. */
                    if (!cs_is_async(g, cand))
                        group_runtime += k->rt[cand];
                }
                info->grouped++;
                cand = commsched_schedule_next(s, cand);
                continue;
            } else if (!data_dep) {
                if (!kn->sink_waits_iterative_unsafe_collectives_reorder &&
                    both_comms) {
                    cs_text_appendf(&k->why,
                                    "collective ordering\n with candidate:%s",
                                    g->nodes[cand].name);
                    stopped = 1;
                    break;
                }
                /* unsafe reordering allowed: fall through to the swap */
            } else {
                cs_text_appendf(&k->why,
                                "data dependency detected\n candidate:%s\n "
                                "non_group_reason:%s %s",
                                g->nodes[cand].name, reason,
                                g->nodes[cand].name);
                stopped = 1;
                break;
            }
        }
        if (kn->sink_iterative_use_runtime_estimations) {
            if (cs_is_wait(g, cand)) {
                double wc, wp;
                if ((wst = wait_walk(k, cand, &wc, &wp)) != COMMSCHED_OK)
                    return wst;
                double before = pos0(wc - wp);
                double after = pos0(wc - wp + group_runtime);
                if (after > before) {
                    char b1[32], b2[32];
                    cs_text_appendf(&k->why,
                                    "candidate is wait, exposed_before:%s "
                                    "vs exposed_after:%s",
                                    cs_pymax0(b1, before),
                                    cs_pymax0(b2, after));
                    stopped = 1;
                    break;
                }
            }
            if (!cs_is_async(g, cand)) {
                double c = k->rt[cand];
                if (c > 0 && k->n_colls > 0) {
                    double delta = pos0(info->comm_time - info->comp_time - c) -
                                   pos0(info->comm_time - info->comp_time);
                    for (size_t i = 0; i < k->n_colls; i++) {
                        double gb = k->colls[i].comm - k->colls[i].comp;
                        delta += pos0(gb + c) - pos0(gb);
                    }
                    if (delta > 0) {
                        char b1[32], b2[32];
                        cs_text_appendf(&k->why,
                                        "candidate has compute %s, group "
                                        "contains collectives, "
                                        "total_exposed_delta %s",
                                        cs_pyfloat(b1, c),
                                        cs_pyfloat(b2, delta));
                        stopped = 1;
                        break;
                    }
                    for (size_t i = 0; i < k->n_colls; i++)
                        k->colls[i].comp -= c;
                }
            }
        }
        int64_t potential;
        commsched_status st = commsched_memory_plan_move(
            k->m, s, COMMSCHED_MOVE_BEFORE_GROUP, cand, head, tail, &potential,
            k->ctx->err);
        if (st != COMMSCHED_OK)
            return st;
        if ((double)(potential - k->peak_memory) >
            (double)k->peak_memory * kn->sink_iterative_peak_memory_budget) {
            cs_text_appendf(&k->why, "peak memory new:%lld vs base:%lld",
                            (long long)potential, (long long)k->peak_memory);
            stopped = 1;
            break;
        }
        info->moves++;
        k->moved++;
        if (info->moves <= CS_OVERLAP_INFO_TERMS)
            cs_text_appendf(&k->moves, "+%s", g->nodes[cand].name);
        commsched_memory_commit_move(k->m, s);
        /* As in RCPPM: re-walk per move only when a rule reads it. */
        if (kn->sink_iterative_use_runtime_estimations) {
            if ((st = wait_walk(k, curr, &comm, &comp)) != COMMSCHED_OK)
                return st;
            info->comm_time = comm;
            info->comp_time = comp;
            info->final_exposed = comm - comp;
        }
        if (k->ctx->verify &&
            (st = commsched_memory_verify(k->m, s, k->ctx->err)) !=
                COMMSCHED_OK)
            return st;
        cand = commsched_schedule_next(s, tail);
    }
    if (info->moves > CS_OVERLAP_INFO_TERMS)
        cs_text_appendf(&k->moves, "+...(%u more)",
                        info->moves - CS_OVERLAP_INFO_TERMS);
    if (info->moves > 0) {
        if ((wst = wait_walk(k, curr, &comm, &comp)) != COMMSCHED_OK)
            return wst;
        info->comm_time = comm;
        info->comp_time = comp;
        info->final_exposed = comm - comp;
        first = k->walk.rec;
    }
    if (!k->ctx->order_only)
        cs_walk_info(&first, g, 'C', &k->info);
    char *ov = cs_text_take(&k->info);
    char *lf = factor ? cs_strdup(factor)
                      : stopped ? cs_text_take(&k->why) : cs_strdup("None");
    char *mv = cs_text_take(&k->moves);
    char *empty = cs_strdup("");
    if (!ov || !lf || !mv || !empty) {
        free(ov);
        free(lf);
        free(mv);
        free(empty);
        return oom(k);
    }
    cs_row_set(&info->overlap_info, ov);
    cs_row_set(&info->limiting_factor, lf);
    cs_row_set(&info->moves_info, mv);
    cs_row_set(&info->grouped_info, empty);
    return COMMSCHED_OK;
}

commsched_status cs_pass_sink_waits_iterative(cs_pass_ctx *ctx)
{
    const commsched_graph *g = ctx->g;
    sinker k;
    memset(&k, 0, sizeof k);
    k.ctx = ctx;
    k.g = g;
    commsched_status st = COMMSCHED_OK;
    k.rt = cs_iterative_runtimes(ctx);
    k.in_group = cs_calloc(g->n_nodes, sizeof *k.in_group);
    uint8_t *processed = cs_calloc(g->n_nodes, 1);
    if (!k.rt || !k.in_group || !processed || cs_walk_init(&k.walk, g) != 0) {
        st = oom(&k);
        goto cleanup;
    }
    if ((st = commsched_memory_create(ctx->s, &k.m, ctx->err)) != COMMSCHED_OK)
        goto cleanup;
    k.peak_memory = commsched_memory_peak(k.m, ctx->s, NULL);

    long limit = ctx->k->sink_waits_iterative_debug_limit_to_sink;
    long n_processed = 0;
    uint32_t curr = commsched_schedule_last(ctx->s);
    while (curr != COMMSCHED_NONE &&
           commsched_schedule_prev(ctx->s, curr) != COMMSCHED_NONE) {
        uint32_t prev_curr = commsched_schedule_prev(ctx->s, curr);
        if (limit >= 0 && n_processed >= limit)
            break;
        if (!cs_is_wait(g, curr) || processed[curr]) {
            curr = prev_curr;
            continue;
        }
        processed[curr] = 1;
        n_processed++;
        commsched_node_stats *info = cs_record_row(ctx->rec, curr);
        if (!info) {
            st = oom(&k);
            goto cleanup;
        }
        if ((st = process(&k, curr, info)) != COMMSCHED_OK)
            goto cleanup;
        curr = prev_curr;
    }
cleanup:
    commsched_memory_destroy(k.m);
    free(k.rt);
    free(k.in_group);
    free(processed);
    cs_walk_free(&k.walk);
    free(k.colls);
    cs_text_free(&k.info);
    cs_text_free(&k.why);
    cs_text_free(&k.moves);
    return st;
}
