/* commsched unit tests — the walk memo of cs_coll_exposed (passes/common.c,
 * cs_walk_memo_on / cs_walk_memo_moved): with the memo on, every walk must
 * give bit for bit the figures and the record of the same walk with it
 * off, whatever moves of the order come between (each reported through
 * cs_walk_memo_moved), and the memo must actually be used.
 *
 * Two cs_walk objects walk the same schedule with the same runtimes: one
 * with the memo (on a tree-mode tracker), one without. Between walks the
 * order changes by single moves both ways (plan_move/commit_move), far runs
 * (commsched_memory_far_run) with random groups, stops and limits, and
 * hoists of an async collective as far as its dependencies let it (far runs
 * with limit INT64_MAX, the group growing by the dependency it meets, as
 * RCPPM does). The graphs are random ones (tu_random_graph) and FSDP-like
 * chains (the shape of `commsched generate chain`, here with extra zero-time
 * nodes and sync collectives) whose collectives are hoisted to the front
 * one after another, each before the last: the case the memo is for.
 * Runtimes have many exact zeros (+0.0 and -0.0) and repeated values.
 *
 * Besides the comparison, the test checks the memo's own invariant after
 * every step (while it is live: a contiguous span of the current order,
 * after[i] and terms[i] + terms_off the sums of a walk from its first node
 * from +0.0), and predicts every join independently (the walk reaches the
 * memo's first node, as it was before the call, with comp_time +0.0): after
 * a join the memo must be live and start right after the walked
 * collective. The counts are printed and some asserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/graph.h"
#include "commsched/memory.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "passes_internal.h"
#include "testutil.h"

typedef struct counts {
    size_t walks, joins, join_stops, jumped, hoists, hoist_walks,
        hoist_joins, moves_single, moves_before, far_runs, reported,
        kept_live, dropped, max_memo, live_walks, invariant_checks,
        front_walks, front_joins, join_pre, join_cap, join_full,
        join_in, join_at_first;
} counts;

typedef struct wt {
    commsched_graph *g;
    commsched_schedule *s;
    commsched_memory *m;
    cs_walk a, b; /* a: the memo on; b: off */
    double *rt;
    uint32_t n;
    uint32_t *order;
    uint32_t *colls; /* async collectives */
    uint32_t n_colls;
    tu_rng r;
    counts *c;
    const char *what;
    uint64_t seed;
} wt;

static int bits_equal(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* The memo's invariant while live. */
static void check_memo(wt *t, const char *when)
{
    const cs_walk *w = &t->a;
    t->c->invariant_checks++;
    if (!w->live)
        return;
    const cs_walk_span *z = &w->memo;
    assert_true(z->len > 0);
    assert_true(z->lo + z->len <= z->cap);
    uint32_t v = z->node[z->lo];
    double comp = 0.0;
    int64_t terms = 0;
    for (size_t i = 0; i < z->len; i++, v = commsched_schedule_next(t->s, v)) {
        if (v != z->node[z->lo + i])
            fail_msg("%s seed %llu %s: memo entry %zu of %zu is %s, the order "
                     "has %s there",
                     t->what, (unsigned long long)t->seed, when, i, z->len,
                     commsched_graph_node_name(t->g, z->node[z->lo + i]),
                     v == COMMSCHED_NONE ? "(end)"
                                         : commsched_graph_node_name(t->g, v));
        assert_true(w->cls[v] != CS_WALK_SYNC);
        if (w->cls[v] != CS_WALK_ASYNC) {
            comp += t->rt[v];
            terms++;
        }
        if (!bits_equal(comp, z->after[z->lo + i]) ||
            terms != z->terms[z->lo + i] + z->terms_off)
            fail_msg("%s seed %llu %s: memo entry %zu (%s): after %.17g "
                     "terms %lld, a walk from its start gives %.17g %lld",
                     t->what, (unsigned long long)t->seed, when, i,
                     commsched_graph_node_name(t->g, v), z->after[z->lo + i],
                     (long long)(z->terms[z->lo + i] + z->terms_off), comp,
                     (long long)terms);
    }
}

/* Whether the walk of c reaches `first` with comp_time +0.0 (the memo's
 * join), by the seed's rules. */
static int reaches_at_zero(const wt *t, uint32_t c, uint32_t first,
                           size_t *terms)
{
    const commsched_graph *g = t->g;
    double comp = 0.0;
    *terms = 0;
    for (uint32_t v = commsched_schedule_next(t->s, c); v != COMMSCHED_NONE;
         v = commsched_schedule_next(t->s, v)) {
        if (v == first)
            return comp == 0.0 && !signbit(comp);
        for (uint32_t k = g->users.off[c]; k < g->users.off[c + 1]; k++)
            if (g->users.idx[k] == v)
                return 0;
        if (t->a.cls[v] == CS_WALK_SYNC)
            return 0;
        if (t->a.cls[v] != CS_WALK_ASYNC) {
            comp += t->rt[v];
            ++*terms;
        }
    }
    return 0;
}

/* Both walks of c, compared bit for bit. */
static void walk(wt *t, uint32_t c, int hoisted)
{
    counts *k = t->c;
    int live0 = t->a.live;
    uint32_t first0 = live0 ? t->a.memo.node[t->a.memo.lo] : COMMSCHED_NONE;
    size_t len0 = live0 ? t->a.memo.len : 0;
    uint32_t at0 = live0 ? commsched_memory_position(t->m, first0) : 0;
    size_t pre = 0; /* the terms the walk sums before it joins */
    int join = live0 && reaches_at_zero(t, c, first0, &pre);

    double ca = -1.0, pa = -1.0, cb = -2.0, pb = -2.0;
    cs_coll_exposed(t->g, t->s, t->rt, c, &ca, &pa, &t->a);
    cs_coll_exposed(t->g, t->s, t->rt, c, &cb, &pb, &t->b);
    k->walks++;
    k->live_walks += (size_t)live0;
    const cs_walk_record *ra = &t->a.rec, *rb = &t->b.rec;
    if (!bits_equal(ca, cb) || !bits_equal(pa, pb) || ra->terms != rb->terms ||
        ra->end != rb->end)
        fail_msg("%s seed %llu: walk of %s (join %d, memo of %zu from %s): "
                 "comm %.17g comp %.17g terms %zu end %u with the memo, "
                 "%.17g %.17g %zu %u without",
                 t->what, (unsigned long long)t->seed,
                 commsched_graph_node_name(t->g, c), join, len0,
                 first0 == COMMSCHED_NONE
                     ? "-"
                     : commsched_graph_node_name(t->g, first0),
                 ca, pa, ra->terms, ra->end, cb, pb, rb->terms, rb->end);
    size_t kept = rb->terms < CS_OVERLAP_INFO_TERMS ? rb->terms
                                                    : CS_OVERLAP_INFO_TERMS;
    for (size_t i = 0; i < kept; i++)
        if (ra->node[i] != rb->node[i] ||
            !bits_equal(ra->time[i], rb->time[i]))
            fail_msg("%s seed %llu: walk of %s (join %d): term %zu is %s "
                     "[%.17g] with the memo, %s [%.17g] without",
                     t->what, (unsigned long long)t->seed,
                     commsched_graph_node_name(t->g, c), join, i,
                     commsched_graph_node_name(t->g, ra->node[i]),
                     ra->time[i],
                     commsched_graph_node_name(t->g, rb->node[i]),
                     rb->time[i]);
    /* the walk without the memo never keeps one */
    assert_false(t->b.live);
    if (join) {
        /* the memo was used: it is live and opens right after c now */
        k->joins++;
        k->jumped += len0;
        k->join_stops += rb->end != COMMSCHED_NONE;
        if (rb->end != COMMSCHED_NONE) {
            uint32_t p = commsched_memory_position(t->m, rb->end);
            k->join_in += p >= at0 && p - at0 < len0; /* stopped in it */
            k->join_at_first += rb->end == first0;
        }
        k->join_pre += pre > 0;
        k->join_cap += pre < CS_OVERLAP_INFO_TERMS &&
                       rb->terms > CS_OVERLAP_INFO_TERMS;
        k->join_full += pre >= CS_OVERLAP_INFO_TERMS;
        assert_true(t->a.live);
        assert_int_equal(t->a.memo.node[t->a.memo.lo],
                         commsched_schedule_next(t->s, c));
        assert_true(t->a.memo.len >= len0);
        if (hoisted)
            k->hoist_joins++;
    }
    if (hoisted)
        k->hoist_walks++;
    if (hoisted && commsched_schedule_prev(t->s, c) == COMMSCHED_NONE) {
        k->front_walks++;
        k->front_joins += (size_t)join;
    }
    if (t->a.live && t->a.memo.len > k->max_memo)
        k->max_memo = t->a.memo.len;
    check_memo(t, "after a walk");
}

/* `moved` nodes that stood right before head..tail now follow it. */
static void report(wt *t, uint32_t head, uint32_t tail, size_t moved)
{
    int live0 = t->a.live;
    cs_walk_memo_moved(&t->a, head, tail, moved);
    cs_walk_memo_moved(&t->b, head, tail, moved);
    t->c->reported++;
    if (live0 && moved > 0) {
        if (t->a.live)
            t->c->kept_live++;
        else
            t->c->dropped++;
    }
    check_memo(t, "after a move");
}

static void to_order(wt *t)
{
    commsched_error err = {0};
    assert_int_equal(commsched_schedule_to_array(t->s, t->order, &err),
                     COMMSCHED_OK);
}

static int depends(const commsched_graph *g, uint32_t a, uint32_t b)
{
    for (uint32_t k = g->deps.off[a]; k < g->deps.off[a + 1]; k++)
        if (g->deps.idx[k] == b)
            return 1;
    return 0;
}

/* The last node before head that a node of head..tail depends on, or
 * COMMSCHED_NONE. */
static uint32_t last_dep(const wt *t, uint32_t head, uint32_t tail)
{
    const commsched_graph *g = t->g;
    uint32_t at = commsched_memory_position(t->m, head);
    uint32_t best = COMMSCHED_NONE, best_at = 0;
    for (uint32_t v = head;; v = commsched_schedule_next(t->s, v)) {
        for (uint32_t k = g->deps.off[v]; k < g->deps.off[v + 1]; k++) {
            uint32_t d = g->deps.idx[k];
            uint32_t p = commsched_memory_position(t->m, d);
            if (p < at && (best == COMMSCHED_NONE || p > best_at)) {
                best = d;
                best_at = p;
            }
        }
        if (v == tail)
            break;
    }
    return best;
}

/* One move of the node right before head..tail to right after it, when
 * legal: 1 when it moved. */
static int single_after(wt *t, uint32_t cand, uint32_t head, uint32_t tail)
{
    commsched_error err = {0};
    for (uint32_t v = head;; v = commsched_schedule_next(t->s, v)) {
        if (depends(t->g, v, cand))
            return 0;
        if (v == tail)
            break;
    }
    int64_t pot;
    assert_int_equal(commsched_memory_plan_move(t->m, t->s,
                                                COMMSCHED_MOVE_AFTER_GROUP,
                                                cand, head, tail, &pot, &err),
                     COMMSCHED_OK);
    commsched_memory_commit_move(t->m, t->s);
    t->c->moves_single++;
    report(t, head, tail, 1);
    return 1;
}

/* Hoists c as far as its dependencies let it: far runs with no limit,
 * a single move past a node that takes a free from the group, and (grow)
 * the dependency it meets joining the group, as RCPPM does. */
static void hoist(wt *t, uint32_t c, int grow)
{
    commsched_error err = {0};
    uint32_t head = c, tail = c;
    t->c->hoists++;
    for (;;) {
        uint32_t stop = last_dep(t, head, tail);
        commsched_far_run fr;
        assert_int_equal(commsched_memory_far_run(t->m, t->s, head, tail,
                                                  stop, INT64_MAX, &fr, &err),
                         COMMSCHED_OK);
        t->c->far_runs++;
        report(t, head, tail, fr.moved);
        assert_false(fr.over);
        uint32_t prev = commsched_schedule_prev(t->s, head);
        if (prev == COMMSCHED_NONE)
            break;
        if (prev != stop) {
            /* it would take a free from the group: one move at a time */
            assert_true(single_after(t, prev, head, tail));
            continue;
        }
        if (!grow || !tu_rng_chance(&t->r, 60))
            break;
        head = prev; /* the dependency joins the group */
    }
}

/* A random far run: a random group, the candidates before it back to the
 * first illegal one or a random legal point, a random limit. */
static void random_far_run(wt *t)
{
    commsched_error err = {0};
    to_order(t);
    uint32_t len = 1 + tu_rng_below(&t->r, tu_rng_chance(&t->r, 20) ? 10 : 3);
    if (len >= t->n)
        return;
    uint32_t i = tu_rng_below(&t->r, t->n - len + 1);
    uint32_t head = t->order[i], tail = t->order[i + len - 1];
    uint32_t stop = last_dep(t, head, tail);
    uint32_t j = stop == COMMSCHED_NONE
                     ? 0
                     : commsched_memory_position(t->m, stop) + 1;
    if (tu_rng_chance(&t->r, 35)) {
        j += tu_rng_below(&t->r, i - j + 1);
        stop = j == 0 ? COMMSCHED_NONE : t->order[j - 1];
    }
    int64_t limit = INT64_MAX;
    uint32_t lk = tu_rng_below(&t->r, 100);
    if (lk < 30) {
        int64_t peak = commsched_memory_peak(t->m, t->s, NULL);
        int64_t span = peak / 4 + 1;
        limit = peak - span +
                (int64_t)(tu_rng_next(&t->r) % (uint64_t)(2 * span + 1));
    } else if (lk < 35) {
        limit = -1;
    }
    commsched_far_run fr;
    assert_int_equal(commsched_memory_far_run(t->m, t->s, head, tail, stop,
                                              limit, &fr, &err),
                     COMMSCHED_OK);
    t->c->far_runs++;
    report(t, head, tail, fr.moved);
}

/* A random single move either way. A BEFORE_GROUP move of the candidate
 * right after head..tail is, for the memo, the group head..tail (len
 * nodes) moving right after the one-node group cand. */
static void random_single(wt *t)
{
    commsched_error err = {0};
    to_order(t);
    uint32_t len = 1 + tu_rng_below(&t->r, 6);
    if (len + 1 > t->n)
        return;
    uint32_t i = tu_rng_below(&t->r, t->n - len);
    if (tu_rng_chance(&t->r, 50)) {
        (void)single_after(t, t->order[i], t->order[i + 1],
                           t->order[i + len]);
        return;
    }
    uint32_t head = t->order[i], tail = t->order[i + len - 1],
             cand = t->order[i + len];
    for (uint32_t q = i; q < i + len; q++)
        if (depends(t->g, cand, t->order[q]))
            return;
    int64_t pot;
    assert_int_equal(commsched_memory_plan_move(t->m, t->s,
                                                COMMSCHED_MOVE_BEFORE_GROUP,
                                                cand, head, tail, &pot, &err),
                     COMMSCHED_OK);
    commsched_memory_commit_move(t->m, t->s);
    t->c->moves_before++;
    report(t, cand, cand, len);
}

/* Runtimes: many +0.0, some -0.0, a few repeated values, some random. */
static void make_runtimes(wt *t, uint32_t mode)
{
    static const double rep[] = {1.0, 0.5, 3.0, 0.1, 1e-3, 7.25};
    for (uint32_t v = 0; v < t->n; v++) {
        uint32_t x = tu_rng_below(&t->r, 100);
        double d;
        if (mode == 0) /* zeros only, of both signs */
            d = x < 80 ? 0.0 : -0.0;
        else if (mode == 1) /* one value everywhere */
            d = 1.0;
        else if (x < 45)
            d = 0.0;
        else if (x < 50)
            d = -0.0;
        else if (x < 85)
            d = rep[tu_rng_below(&t->r, 6)];
        else
            d = (double)(tu_rng_next(&t->r) >> 11) * 0x1p-50;
        t->rt[v] = d;
    }
}

static void open_wt(wt *t, commsched_graph *g, const uint32_t *order,
                    uint64_t seed, counts *c, const char *what)
{
    commsched_error err = {0};
    memset(t, 0, sizeof *t);
    t->g = g;
    t->c = c;
    t->what = what;
    t->seed = seed;
    tu_rng_seed(&t->r, seed * 7919 + 13);
    t->n = commsched_graph_node_count(g);
    assert_int_equal(commsched_schedule_create(g, order, &t->s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(t->s, &t->m, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_use_tree(t->m, t->s, &err),
                     COMMSCHED_OK);
    assert_int_equal(cs_walk_init(&t->a, g), 0);
    assert_int_equal(cs_walk_init(&t->b, g), 0);
    cs_walk_memo_on(&t->a, t->m);
    t->rt = malloc(t->n * sizeof *t->rt);
    t->order = malloc(t->n * sizeof *t->order);
    t->colls = malloc(t->n * sizeof *t->colls);
    assert_true(t->rt && t->order && t->colls);
    to_order(t);
    for (uint32_t i = 0; i < t->n; i++)
        if (cs_is_async(g, t->order[i]))
            t->colls[t->n_colls++] = t->order[i];
}

static void close_wt(wt *t)
{
    cs_walk_free(&t->a);
    cs_walk_free(&t->b);
    commsched_memory_destroy(t->m);
    commsched_schedule_destroy(t->s);
    commsched_graph_destroy(t->g);
    free(t->rt);
    free(t->order);
    free(t->colls);
}

static void print_counts(const char *what, const counts *c)
{
    printf("%s: %zu walks (%zu with a live memo), %zu joins (%zu ending at "
           "a user, %zu of them in the memo, %zu at its first node; %zu with terms summed before the "
           "memo, %zu crossing the record's %d terms in the memo, %zu past "
           "them before it; %zu memo nodes jumped), %zu hoists (%zu of %zu "
           "walks after one joined); moves: %zu single after, %zu single "
           "before, %zu far runs; %zu reported, the memo kept %zu times, "
           "dropped %zu; longest memo %zu; %zu memo checks\n",
           what, c->walks, c->live_walks, c->joins, c->join_stops,
           c->join_in, c->join_at_first, c->join_pre, c->join_cap, CS_OVERLAP_INFO_TERMS, c->join_full,
           c->jumped, c->hoists, c->hoist_joins, c->hoist_walks,
           c->moves_single, c->moves_before, c->far_runs, c->reported,
           c->kept_live, c->dropped, c->max_memo, c->invariant_checks);
}

static uint32_t random_coll(wt *t)
{
    return t->colls[tu_rng_below(&t->r, t->n_colls)];
}

/* ---- random graphs ------------------------------------------------------- */

static void test_walk_memo_random(void **state)
{
    (void)state;
    counts c;
    memset(&c, 0, sizeof c);
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tu_graph_opts o = tu_random_opts(60 + 40 * (uint32_t)(seed % 6));
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        tu_random_topo_order(g, seed * 5 + 3, 0, order);
        wt t;
        open_wt(&t, g, seed % 3 ? order : NULL, seed, &c, "random");
        free(order);
        if (t.n_colls == 0) {
            close_wt(&t);
            continue;
        }
        make_runtimes(&t, (uint32_t)(seed % 4));
        for (unsigned step = 0; step < 800; step++) {
            uint32_t kind = tu_rng_below(&t.r, 100);
            if (kind < 40) {
                walk(&t, random_coll(&t), 0);
            } else if (kind < 55) {
                random_single(&t);
            } else if (kind < 70) {
                random_far_run(&t);
            } else if (kind < 90) {
                /* hoist, then walk it and the collectives around it */
                uint32_t x = random_coll(&t);
                walk(&t, x, 0);
                hoist(&t, x, tu_rng_chance(&t.r, 50));
                walk(&t, x, 1);
                uint32_t p = commsched_schedule_prev(t.s, x);
                if (p != COMMSCHED_NONE && cs_is_async(t.g, p))
                    walk(&t, p, 0);
            } else {
                /* hoist every collective in order, as RCPPM does */
                to_order(&t);
                for (uint32_t i = 0; i < t.n_colls; i++) {
                    hoist(&t, t.colls[i], tu_rng_chance(&t.r, 30));
                    walk(&t, t.colls[i], 1);
                }
            }
        }
        close_wt(&t);
    }
    print_counts("random", &c);
    assert_true(c.joins >= 2000);
    assert_true(c.join_stops >= 500);
    assert_true(c.join_pre >= 500);
    assert_true(c.join_cap >= 20);
    assert_true(c.join_full >= 10);
    assert_true(c.join_in >= 500);
    assert_true(c.join_at_first >= 50);
    assert_true(c.kept_live >= 500);
    assert_true(c.dropped >= 100);
}

/* ---- chains ---------------------------------------------------------------- */

/* An FSDP-like chain as `commsched generate chain` writes it (forward:
 * all_gather -> wait -> mm per layer; loss; backward: all_gather -> wait
 * -> dx, dw -> reduce_scatter -> wait), with, per layer and at random, a
 * zero-time compute node after the mm and a sync all_reduce. */
static commsched_graph *chain_graph(uint64_t seed, uint32_t layers)
{
    tu_rng r;
    tu_rng_seed(&r, seed);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    fprintf(f, "{\"format\": \"commsched-graph\", \"version\": 1, "
               "\"groups\": [{\"name\": \"dp\", \"size\": 8, \"hosts\": 1}], "
               "\"inputs\": [{\"name\": \"act0\", \"size\": 64, "
               "\"freeable\": true}");
    for (uint32_t l = 1; l <= layers; l++)
        fprintf(f, ", {\"name\": \"w%u_shard\", \"size\": 8}", l);
    fprintf(f, "], \"outputs\": [");
    for (uint32_t l = 1; l <= layers; l++)
        fprintf(f, "%s\"g%u_shard\"", l > 1 ? ", " : "", l);
    fprintf(f, "], \"nodes\": [");
    const char *sep = "";
#define NODE(...) (fprintf(f, "%s", sep), fprintf(f, __VA_ARGS__), sep = ", ")
    for (uint32_t l = 1; l <= layers; l++) {
        NODE("{\"name\": \"fwd_ag%u\", \"kind\": \"collective\", \"op\": "
             "\"all_gather\", \"group\": \"dp\", \"inputs\": [\"w%u_shard\"], "
             "\"outputs\": [{\"name\": \"fwd_ag%u_out\", \"size\": 64}], "
             "\"runtime_ns\": 10}",
             l, l, l);
        NODE("{\"name\": \"fwd_ag%u_wait\", \"kind\": \"wait\", \"inputs\": "
             "[\"fwd_ag%u_out\"], \"outputs\": [{\"name\": \"w%u_f\", "
             "\"alias_of\": \"fwd_ag%u_out\"}]}",
             l, l, l, l);
        NODE("{\"name\": \"fwd_mm%u\", \"kind\": \"compute\", \"op\": \"mm\", "
             "\"gemm_like\": true, \"inputs\": [\"act%u\", \"w%u_f\"], "
             "\"outputs\": [{\"name\": \"act%u\", \"size\": 64}], "
             "\"runtime_ns\": 5}",
             l, l - 1, l, l);
        if (tu_rng_chance(&r, 40))
            NODE("{\"name\": \"fwd_z%u\", \"kind\": \"compute\", \"op\": "
                 "\"relu\", \"inputs\": [\"act%u\"], \"outputs\": "
                 "[{\"name\": \"fwd_z%u_o\", \"size\": 4}], \"runtime_ns\": 0}",
                 l, l, l);
        if (tu_rng_chance(&r, 15))
            NODE("{\"name\": \"fwd_sync%u\", \"kind\": \"collective\", "
                 "\"op\": \"all_reduce\", \"group\": \"dp\", \"async\": false, "
                 "\"inputs\": [\"act%u\"], \"outputs\": [{\"name\": "
                 "\"fwd_sync%u_o\", \"size\": 64}], \"runtime_ns\": 3}",
                 l, l, l);
    }
    NODE("{\"name\": \"loss\", \"kind\": \"compute\", \"op\": \"loss\", "
         "\"inputs\": [\"act%u\"], \"outputs\": [{\"name\": \"grad%u\", "
         "\"size\": 64}], \"runtime_ns\": 1}",
         layers, layers);
    for (uint32_t l = layers; l >= 1; l--) {
        NODE("{\"name\": \"bwd_ag%u\", \"kind\": \"collective\", \"op\": "
             "\"all_gather\", \"group\": \"dp\", \"inputs\": [\"w%u_shard\"], "
             "\"outputs\": [{\"name\": \"bwd_ag%u_out\", \"size\": 64}], "
             "\"runtime_ns\": 10}",
             l, l, l);
        NODE("{\"name\": \"bwd_ag%u_wait\", \"kind\": \"wait\", \"inputs\": "
             "[\"bwd_ag%u_out\"], \"outputs\": [{\"name\": \"w%u_b\", "
             "\"alias_of\": \"bwd_ag%u_out\"}]}",
             l, l, l, l);
        NODE("{\"name\": \"bwd_dx%u\", \"kind\": \"compute\", \"op\": \"mm\", "
             "\"gemm_like\": true, \"inputs\": [\"grad%u\", \"w%u_b\"], "
             "\"outputs\": [{\"name\": \"grad%u\", \"size\": 64}], "
             "\"runtime_ns\": 5}",
             l, l, l, l - 1);
        NODE("{\"name\": \"bwd_dw%u\", \"kind\": \"compute\", \"op\": \"mm\", "
             "\"gemm_like\": true, \"inputs\": [\"grad%u\", \"act%u\"], "
             "\"outputs\": [{\"name\": \"gw%u\", \"size\": 64}], "
             "\"runtime_ns\": 5}",
             l, l, l - 1, l);
        NODE("{\"name\": \"rs%u\", \"kind\": \"collective\", \"op\": "
             "\"reduce_scatter\", \"group\": \"dp\", \"inputs\": [\"gw%u\"], "
             "\"outputs\": [{\"name\": \"rs%u_out\", \"size\": 8}], "
             "\"runtime_ns\": 10}",
             l, l, l);
        NODE("{\"name\": \"rs%u_wait\", \"kind\": \"wait\", \"inputs\": "
             "[\"rs%u_out\"], \"outputs\": [{\"name\": \"g%u_shard\", "
             "\"alias_of\": \"rs%u_out\"}]}",
             l, l, l, l);
        if (tu_rng_chance(&r, 30))
            NODE("{\"name\": \"bwd_z%u\", \"kind\": \"compute\", \"op\": "
                 "\"relu\", \"inputs\": [\"grad%u\"], \"outputs\": "
                 "[{\"name\": \"bwd_z%u_o\", \"size\": 4}], \"runtime_ns\": 0}",
                 l, l - 1, l);
    }
#undef NODE
    fprintf(f, "]}");
    assert_int_equal(fclose(f), 0);
    commsched_graph *g = tu_graph_from_json(text);
    free(text);
    return g;
}

/* Hoisting every collective of a chain in order, each to the front before
 * the previous ones, as RCPPM does (the walk before and after each), with
 * now and then a random move or walk in between. */
static void test_walk_memo_chain(void **state)
{
    (void)state;
    counts c;
    memset(&c, 0, sizeof c);
    size_t front_walks[2] = {0, 0}, front_joins[2] = {0, 0};
    for (uint64_t seed = 1; seed <= 24; seed++) {
        uint32_t layers = 8 + 6 * (uint32_t)(seed % 5);
        commsched_graph *g = chain_graph(seed, layers);
        wt t;
        open_wt(&t, g, NULL, seed, &c, "chain");
        make_runtimes(&t, (uint32_t)(seed % 4));
        int noise = seed > 4; /* the first seeds: the pure RCPPM shape */
        for (int round = 0; round < 2; round++) {
            to_order(&t);
            uint32_t n_colls = 0;
            for (uint32_t i = 0; i < t.n; i++)
                if (cs_is_async(g, t.order[i]))
                    t.colls[n_colls++] = t.order[i];
            size_t before_w = c.front_walks, before_j = c.front_joins;
            for (uint32_t i = 0; i < n_colls; i++) {
                uint32_t x = t.colls[i];
                walk(&t, x, 0);
                hoist(&t, x, round == 1);
                walk(&t, x, 1);
                if (noise && tu_rng_chance(&t.r, 20)) {
                    uint32_t kind = tu_rng_below(&t.r, 3);
                    if (kind == 0)
                        random_single(&t);
                    else if (kind == 1)
                        random_far_run(&t);
                    else
                        walk(&t, t.colls[tu_rng_below(&t.r, n_colls)], 0);
                }
            }
            if (!noise) {
                front_walks[round] += c.front_walks - before_w;
                front_joins[round] += c.front_joins - before_j;
            }
        }
        close_wt(&t);
    }
    print_counts("chain", &c);
    printf("chain: collectives hoisted to the front without noise: %zu of "
           "%zu walks joined in the first round, %zu of %zu in the second\n",
           front_joins[0], front_walks[0], front_joins[1], front_walks[1]);
    /* In the pure shape every walk of a collective hoisted to the front
     * joins but each chain's first two (the first has no memo to join,
     * the second's makes the first memo): 4 chains, 8 misses. In the
     * second round each hoist moves the collective out of the middle of
     * the memo (which starts right after the previous one), which drops
     * it: no joins there. */
    assert_true(front_walks[0] > 100);
    assert_int_equal(front_joins[0] + 8, front_walks[0]);
    assert_true(c.joins >= 600);
    assert_true(c.max_memo >= 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_memo_random),
        cmocka_unit_test(test_walk_memo_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
