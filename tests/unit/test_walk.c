/* commsched unit tests — the exposed-time walks of passes/common.c with
 * the tracker's help against the plain walks, bit for bit.
 *
 * Collective walks (cs_coll_exposed): with the tracker's times
 * (cs_walk_sums_on, commsched_memory_use_times) a walk whose record is
 * full takes the rest of its sum from the order tree, which must leave the
 * same double as adding the runtimes one by one in the order: compared
 * with the plain walk (figures, terms, end, the record's terms) whatever
 * moves of the order come between. Between walks the order changes by
 * single moves both ways (plan_move/commit_move), far runs
 * (commsched_memory_far_run) with random groups, stops and limits, and
 * hoists of an async collective as far as its dependencies let it (far
 * runs with limit INT64_MAX, the group growing by the dependency it meets,
 * as RCPPM does). The graphs are random ones (tu_random_graph) and
 * FSDP-like chains (the shape of `commsched generate chain`, here with
 * extra zero-time nodes and sync collectives) whose collectives are
 * hoisted to the front one after another. Runtimes have many exact zeros
 * (+0.0 and -0.0) and repeated values, or are random full-precision values
 * of many magnitudes, whose sums show their order: the test counts the
 * long walks whose double sum differs from the exact sum rounded once.
 *
 * The wait walks (cs_wait_exposed) are compared the same way: with the
 * tracker's positions (the shortcut that, once the record is full, sums
 * only the stretch between the wait's collective and the first reset
 * after it) against the plain walk, on every wait after rounds of moves,
 * on random graphs with many waits, chains with their collectives hoisted,
 * and hand-made orders (see "wait walks" below). */
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
    size_t walks, long_walks, long_runs, order_shows, ended_user,
        ended_none, hoists, hoist_walks, moves_single, moves_before,
        far_runs;
} counts;

typedef struct wt {
    commsched_graph *g;
    commsched_schedule *s;
    commsched_memory *m;
    cs_walk a, b; /* a: with the tracker's sums; b: plain */
    cs_walk p;    /* positions only (cs_walk_positions_on): the wait
                     walks' shortcut */
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

/* The exact sum of c's walk's terms, rounded once (long double holds the
 * sums of these tests' runtimes exactly or nearly): where it differs from
 * the walk's, the walk's order of additions shows in its result. */
static double rounded_once(const wt *t, uint32_t c)
{
    const commsched_graph *g = t->g;
    long double sum = 0.0L;
    for (uint32_t v = commsched_schedule_next(t->s, c); v != COMMSCHED_NONE;
         v = commsched_schedule_next(t->s, v)) {
        if (cs_depends_on(g, v, c) || t->b.cls[v] == CS_WALK_SYNC)
            break;
        if (t->b.cls[v] != CS_WALK_ASYNC)
            sum += t->rt[v];
    }
    return (double)sum;
}

/* Both walks of c, compared bit for bit. */
static void walk(wt *t, uint32_t c, int hoisted)
{
    counts *k = t->c;
    /* walks that start in a run of 32 or more async collectives (passed
     * at once with positions) */
    uint32_t run = 0;
    for (uint32_t x = commsched_schedule_next(t->s, c);
         x != COMMSCHED_NONE && t->a.cls[x] == CS_WALK_ASYNC;
         x = commsched_schedule_next(t->s, x))
        run++;
    k->long_runs += run >= 32;
    double ca = -1.0, pa = -1.0, cb = -2.0, pb = -2.0;
    cs_coll_exposed(t->g, t->s, t->rt, c, &ca, &pa, &t->a);
    cs_coll_exposed(t->g, t->s, t->rt, c, &cb, &pb, &t->b);
    k->walks++;
    const cs_walk_record *ra = &t->a.rec, *rb = &t->b.rec;
    if (!bits_equal(ca, cb) || !bits_equal(pa, pb) || ra->terms != rb->terms ||
        ra->end != rb->end)
        fail_msg("%s seed %llu: walk of %s: comm %.17g comp %.17g terms %zu "
                 "end %u with sums, %.17g %.17g %zu %u without",
                 t->what, (unsigned long long)t->seed,
                 commsched_graph_node_name(t->g, c), ca, pa, ra->terms,
                 ra->end, cb, pb, rb->terms, rb->end);
    size_t kept = rb->terms < CS_OVERLAP_INFO_TERMS ? rb->terms
                                                    : CS_OVERLAP_INFO_TERMS;
    for (size_t i = 0; i < kept; i++)
        if (ra->node[i] != rb->node[i] ||
            !bits_equal(ra->time[i], rb->time[i]))
            fail_msg("%s seed %llu: walk of %s: term %zu is %s [%.17g] with "
                     "sums, %s [%.17g] without",
                     t->what, (unsigned long long)t->seed,
                     commsched_graph_node_name(t->g, c), i,
                     commsched_graph_node_name(t->g, ra->node[i]),
                     ra->time[i],
                     commsched_graph_node_name(t->g, rb->node[i]),
                     rb->time[i]);
    if (rb->terms > CS_OVERLAP_INFO_TERMS) { /* the tracker summed a part */
        k->long_walks++;
        k->order_shows += !bits_equal(rounded_once(t, c), pb);
        if (rb->end == COMMSCHED_NONE)
            k->ended_none++; /* at a sync collective or the end */
        else
            k->ended_user++;
    }
    k->hoist_walks += (size_t)hoisted;
}

/* After a move of head..tail: the tracker's positions must still be the
 * order's around the group. */
static void report(wt *t, uint32_t head, uint32_t tail)
{
    uint32_t ph = commsched_memory_position(t->m, head),
             pt = commsched_memory_position(t->m, tail);
    uint32_t before = commsched_schedule_prev(t->s, head),
             after = commsched_schedule_next(t->s, tail);
    assert_true(ph <= pt);
    if (before != COMMSCHED_NONE)
        assert_int_equal(commsched_memory_position(t->m, before) + 1, ph);
    if (after != COMMSCHED_NONE)
        assert_int_equal(commsched_memory_position(t->m, after), pt + 1);
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

/* A single legal move through the tracker, and the positions checked
 * around what moved: after the group (AFTER_GROUP) or the candidate
 * (BEFORE_GROUP: it now stands before the group). */
static void move(wt *t, commsched_move kind, uint32_t cand,
                 uint32_t head, uint32_t tail)
{
    commsched_error err = {0};
    int64_t pot;
    assert_int_equal(commsched_memory_plan_move(t->m, t->s, kind, cand, head,
                                                tail, &pot, &err),
                     COMMSCHED_OK);
    commsched_memory_commit_move(t->m, t->s);
    if (kind == COMMSCHED_MOVE_AFTER_GROUP)
        report(t, head, tail);
    else
        report(t, cand, cand);
}

/* One move of the node right before head..tail to right after it, when
 * legal: 1 when it moved. */
static int single_after(wt *t, uint32_t cand, uint32_t head, uint32_t tail)
{
    for (uint32_t v = head;; v = commsched_schedule_next(t->s, v)) {
        if (depends(t->g, v, cand))
            return 0;
        if (v == tail)
            break;
    }
    move(t, COMMSCHED_MOVE_AFTER_GROUP, cand, head, tail);
    t->c->moves_single++;
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
        report(t, head, tail);
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
    report(t, head, tail);
}

/* A random single move either way. A BEFORE_GROUP move of the candidate
 * right after head..tail is the group head..tail (len nodes) moving right
 * after the one-node group cand. */
static void random_single(wt *t)
{
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
    move(t, COMMSCHED_MOVE_BEFORE_GROUP, cand, head, tail);
    t->c->moves_before++;
}

/* Runtimes: many +0.0, some -0.0, a few repeated values, some random;
 * mode 4: mostly random full-precision values of many magnitudes (sums
 * whose order shows), with some zeros and repeats; mode 5: values halfway
 * between two steps of the binades large sums pass; mode 6: negative and
 * non-finite ones. The tracker gets them (commsched_memory_use_times). */
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
        else if (mode == 5) /* halfway cases in high binades: a few huge
                               values, the rest odd multiples of 2^7..2^13,
                               halfway between two steps of the binades
                               2^60..2^66 */
            d = x < 5    ? ldexp(1.0 + (double)tu_rng_below(&t->r, 1000) /
                                             1000.0,
                                 60 + (int)tu_rng_below(&t->r, 4))
                : x < 15 ? 0.0
                         : ldexp((double)(2 * tu_rng_below(&t->r, 32) + 1),
                                 7 + (int)tu_rng_below(&t->r, 7));
        else if (mode == 6) /* what a negative or infinite multiplier
                               makes: the tracker adds one by one, from
                               negative sums too */
            d = x < 3    ? (x == 0 ? INFINITY : x == 1 ? -INFINITY : NAN)
                : x < 40 ? -(double)tu_rng_below(&t->r, 1000) / 8.0
                         : (double)tu_rng_below(&t->r, 1000) / 8.0;
        else if (mode == 4)
            d = x < 10   ? 0.0
                : x < 12 ? -0.0
                : x < 20 ? rep[tu_rng_below(&t->r, 6)]
                         : ldexp((double)(tu_rng_next(&t->r) >> 11) * 0x1p-53,
                                 (int)tu_rng_below(&t->r, 41) - 20);
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
    commsched_error err = {0};
    assert_int_equal(commsched_memory_use_times(t->m, t->rt, &err),
                     COMMSCHED_OK);
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
    cs_walk_sums_on(&t->a, t->m);
    assert_int_equal(cs_walk_init(&t->p, g), 0);
    cs_walk_positions_on(&t->p, t->m);
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
    cs_walk_free(&t->p);
    commsched_memory_destroy(t->m);
    commsched_schedule_destroy(t->s);
    commsched_graph_destroy(t->g);
    free(t->rt);
    free(t->order);
    free(t->colls);
}

static void print_counts(const char *what, const counts *c)
{
    printf("%s: %zu walks (%zu starting in 32+ async collectives, %zu "
           "after a hoist), %zu with more than %d terms (the tracker summed "
           "the rest; %zu ending at a user, %zu at a sync collective or the "
           "end; %zu whose sum shows its order), %zu hoists; moves: %zu "
           "single after, %zu single before, %zu far runs\n",
           what, c->walks, c->long_runs, c->hoist_walks, c->long_walks,
           CS_OVERLAP_INFO_TERMS, c->ended_user, c->ended_none,
           c->order_shows, c->hoists, c->moves_single, c->moves_before,
           c->far_runs);
}

static uint32_t random_coll(wt *t)
{
    return t->colls[tu_rng_below(&t->r, t->n_colls)];
}

/* ---- random graphs ------------------------------------------------------- */

static void test_walk_sums_random(void **state)
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
        make_runtimes(&t, (uint32_t)(seed % 7));
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
    /* about half of what the seeds give */
    assert_true(c.long_walks >= 4000);
    assert_true(c.ended_user >= 1400);
    assert_true(c.ended_none >= 3000);
    assert_true(c.order_shows >= 2000);
}

/* ---- chains ---------------------------------------------------------------- */

/* An FSDP-like chain as `commsched generate chain` writes it (forward:
 * all_gather -> wait -> mm per layer; loss; backward: all_gather -> wait
 * -> dx, dw -> reduce_scatter -> wait), with, per layer and at random, a
 * zero-time compute node after the mm and (sync_pct in 100) a sync
 * all_reduce. */
static commsched_graph *chain_graph(uint64_t seed, uint32_t layers,
                                    unsigned sync_pct)
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
        if (tu_rng_chance(&r, sync_pct))
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
static void test_walk_sums_chain(void **state)
{
    (void)state;
    counts c;
    memset(&c, 0, sizeof c);
    for (uint64_t seed = 1; seed <= 24; seed++) {
        uint32_t layers = 20 + 12 * (uint32_t)(seed % 5);
        commsched_graph *g = chain_graph(seed, layers, 2);
        wt t;
        open_wt(&t, g, NULL, seed, &c, "chain");
        make_runtimes(&t, (uint32_t)(seed % 6));
        int noise = seed > 4; /* the first seeds: the pure RCPPM shape */
        for (int round = 0; round < 2; round++) {
            to_order(&t);
            uint32_t n_colls = 0;
            for (uint32_t i = 0; i < t.n; i++)
                if (cs_is_async(g, t.order[i]))
                    t.colls[n_colls++] = t.order[i];
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
        }
        close_wt(&t);
    }
    print_counts("chain", &c);
    /* about half of what the seeds give */
    assert_true(c.long_walks >= 2000);
    assert_true(c.long_runs >= 2000);
    assert_true(c.ended_user >= 900);
    assert_true(c.order_shows >= 1200);
}

/* ---- wait walks -------------------------------------------------------------
 *
 * cs_wait_exposed with positions (the walker `p`, cs_walk_positions_on, and
 * the sums walker `a`, whose sums wait walks do not use) against the plain
 * walk (`b`), bit for bit, on every wait after every round of moves. Wait
 * walks only need the tracker's positions to match the schedule, which
 * every move here keeps (each goes through the tracker, and the positions
 * are checked against the order before each round).
 *
 * Each walk is also predicted independently from the order: E (the last
 * collective before the node that it depends on), the terms (the
 * non-collectives between E, or the start, and the node), whether the
 * record fills before E (the shortcut is tried: at the node v0 where the
 * 32nd term has been summed), and whether a reset (a sync collective, or
 * one that a wait between it and the node completes) lies in E+1 .. v0:
 * then the shortcut returns early, and the figure is the stretch between E
 * and the first such reset summed backward from +0.0. The prediction is
 * checked against the plain walk, and counts how often the shortcut
 * returned early, fell back, and which of its parts decided the figure. */

typedef struct wcounts {
    size_t walks, wait_walks, other_walks, long_rec, tried, early,
        fallback_no_reset, fallback_at_end, early_end_none, early_long_stretch,
        early_order, early_nearest, early_by_wait, early_by_sync,
        early_pending, early_deps2, early_empty, early_several, pos_checks,
        sinks, sink_moves, rounds;
} wcounts;

typedef struct wpred {
    uint32_t end;   /* E, or COMMSCHED_NONE */
    size_t terms;   /* non-collectives between E (or the start) and it */
    int tried;      /* the record filled before the walk reached E */
    uint32_t v0;    /* the node the walk stood at then */
    int early;      /* a reset in E+1 .. v0 */
    uint32_t reset; /* the first one */
    double comp;    /* early: the stretch E+1 .. reset-1, summed backward */
    size_t stretch, resets;
    int order_shows;   /* the stretch summed forward differs */
    int nearest_shows; /* summed up to the last reset in range differs */
    int pending;       /* an async collective in the stretch whose
                          completing wait stands after the node */
    int deps2;         /* the node depends on 2+ collectives */
} wpred;

static int is_coll(const commsched_graph *g, uint32_t v)
{
    return cs_is_collective(g, v);
}

/* Non-collectives at positions [lo, hi) summed backward from +0.0 (the
 * walk's order), or forward. */
static double stretch_sum(const wt *t, uint32_t lo, uint32_t hi, int forward)
{
    double s = 0.0;
    if (forward) {
        for (uint32_t i = lo; i < hi; i++)
            if (!is_coll(t->g, t->order[i]))
                s += t->rt[t->order[i]];
    } else {
        for (uint32_t i = hi; i-- > lo;)
            if (!is_coll(t->g, t->order[i]))
                s += t->rt[t->order[i]];
    }
    return s;
}

/* The prediction, from t->order and pos (its inverse) alone. */
static void predict(const wt *t, const uint32_t *pos, uint32_t node,
                    wpred *q)
{
    const commsched_graph *g = t->g;
    memset(q, 0, sizeof *q);
    q->end = q->v0 = q->reset = COMMSCHED_NONE;
    uint32_t at = pos[node];
    size_t ncoll = 0;
    for (uint32_t k = g->deps.off[node]; k < g->deps.off[node + 1]; k++) {
        uint32_t d = g->deps.idx[k];
        if (!is_coll(g, d))
            continue;
        ncoll++;
        if (pos[d] < at && (q->end == COMMSCHED_NONE || pos[d] > pos[q->end]))
            q->end = d;
    }
    q->deps2 = ncoll >= 2;
    uint32_t lo = q->end == COMMSCHED_NONE ? 0 : pos[q->end] + 1;
    /* the walk: before each node (E included) it checks the record */
    int64_t stop = q->end == COMMSCHED_NONE ? 0 : (int64_t)pos[q->end];
    for (int64_t i = (int64_t)at - 1; i >= stop; i--) {
        uint32_t v = t->order[i];
        if (!q->tried && q->terms >= CS_OVERLAP_INFO_TERMS) {
            q->tried = 1;
            q->v0 = v;
        }
        if (v == q->end)
            break;
        if (!is_coll(g, v))
            q->terms++;
    }
    if (!q->tried || q->v0 == q->end)
        return;
    uint32_t first = 0, last = 0;
    for (uint32_t i = lo; i <= pos[q->v0]; i++) {
        uint32_t x = t->order[i];
        if (!is_coll(g, x))
            continue;
        int reset = !cs_is_async(g, x), later = 0;
        for (uint32_t k = g->users.off[x]; k < g->users.off[x + 1]; k++) {
            uint32_t u = g->users.idx[k];
            if (!cs_is_wait(g, u))
                continue;
            if (pos[u] > i && pos[u] < at)
                reset = 1;
            else if (pos[u] > at)
                later = 1;
        }
        if (reset) {
            if (q->resets++ == 0)
                first = i;
            last = i;
        } else if (q->resets == 0 && later) {
            q->pending = 1;
        }
    }
    if (q->resets == 0)
        return;
    q->early = 1;
    q->reset = t->order[first];
    for (uint32_t i = lo; i < first; i++)
        q->stretch += !is_coll(g, t->order[i]);
    q->comp = stretch_sum(t, lo, first, 0);
    q->order_shows = !bits_equal(q->comp, stretch_sum(t, lo, first, 1));
    q->nearest_shows =
        last != first && !bits_equal(q->comp, stretch_sum(t, lo, last, 0));
}

static void compare_wait(const wt *t, uint32_t node, const char *who,
                         double ca, double pa, const cs_walk_record *ra,
                         double cb, double pb, const cs_walk_record *rb,
                         const wpred *q)
{
    const commsched_graph *g = t->g;
    if (!bits_equal(ca, cb) || !bits_equal(pa, pb) || ra->terms != rb->terms ||
        ra->end != rb->end)
        fail_msg("%s seed %llu: wait walk of %s (%s; predicted: tried %d "
                 "early %d, E %s, reset %s, stretch %zu): comm %.17g comp "
                 "%.17g terms %zu end %s, the plain walk %.17g %.17g %zu %s",
                 t->what, (unsigned long long)t->seed,
                 commsched_graph_node_name(g, node), who, q->tried, q->early,
                 q->end == COMMSCHED_NONE ? "-"
                                          : commsched_graph_node_name(g, q->end),
                 q->reset == COMMSCHED_NONE
                     ? "-"
                     : commsched_graph_node_name(g, q->reset),
                 q->stretch, ca, pa, ra->terms,
                 ra->end == COMMSCHED_NONE ? "-"
                                           : commsched_graph_node_name(g, ra->end),
                 cb, pb, rb->terms,
                 rb->end == COMMSCHED_NONE
                     ? "-"
                     : commsched_graph_node_name(g, rb->end));
    size_t kept = rb->terms < CS_OVERLAP_INFO_TERMS ? rb->terms
                                                    : CS_OVERLAP_INFO_TERMS;
    for (size_t i = 0; i < kept; i++)
        if (ra->node[i] != rb->node[i] ||
            !bits_equal(ra->time[i], rb->time[i]))
            fail_msg("%s seed %llu: wait walk of %s (%s): term %zu is %s "
                     "[%.17g], the plain walk's %s [%.17g]",
                     t->what, (unsigned long long)t->seed,
                     commsched_graph_node_name(g, node), who, i,
                     commsched_graph_node_name(g, ra->node[i]), ra->time[i],
                     commsched_graph_node_name(g, rb->node[i]), rb->time[i]);
}

/* The walks of node with and without positions, compared; the prediction
 * checked against the plain walk; the counts. */
static void wait_walk(wt *t, const uint32_t *pos, uint32_t node, wcounts *k,
                      wpred *out)
{
    wpred q;
    predict(t, pos, node, &q);
    double cp = -1.0, pp = -1.0, cm = -3.0, pm = -3.0, cb = -2.0, pb = -2.0;
    cs_wait_exposed(t->g, t->s, t->rt, node, &cp, &pp, &t->p);
    cs_wait_exposed(t->g, t->s, t->rt, node, &cb, &pb, &t->b);
    cs_wait_exposed(t->g, t->s, t->rt, node, &cm, &pm, &t->a);
    compare_wait(t, node, "positions", cp, pp, &t->p.rec, cb, pb, &t->b.rec,
                 &q);
    compare_wait(t, node, "sums walker", cm, pm, &t->a.rec, cb, pb,
                 &t->b.rec, &q);
    const cs_walk_record *rb = &t->b.rec;
    double comm = q.end == COMMSCHED_NONE ? 0.0 : t->rt[q.end];
    if (rb->end != q.end || rb->terms != q.terms || !bits_equal(cb, comm) ||
        (q.early && !bits_equal(pb, q.comp)))
        fail_msg("%s seed %llu: the prediction of %s's walk (E %s, terms %zu, "
                 "early %d, comp %.17g) is not the plain walk's (%s, %zu, "
                 "%.17g)",
                 t->what, (unsigned long long)t->seed,
                 commsched_graph_node_name(t->g, node),
                 q.end == COMMSCHED_NONE ? "-"
                                         : commsched_graph_node_name(t->g, q.end),
                 q.terms, q.early, q.comp,
                 rb->end == COMMSCHED_NONE
                     ? "-"
                     : commsched_graph_node_name(t->g, rb->end),
                 rb->terms, pb);
    k->walks++;
    if (cs_is_wait(t->g, node))
        k->wait_walks++;
    else
        k->other_walks++;
    k->long_rec +=
        rb->terms > CS_OVERLAP_INFO_TERMS && rb->end != COMMSCHED_NONE;
    k->tried += (size_t)q.tried;
    k->fallback_at_end += q.tried && q.v0 == q.end;
    k->fallback_no_reset += q.tried && q.v0 != q.end && !q.early;
    if (q.early) {
        k->early++;
        k->early_end_none += q.end == COMMSCHED_NONE;
        k->early_long_stretch += q.stretch >= 3;
        k->early_order += (size_t)q.order_shows;
        k->early_nearest += (size_t)q.nearest_shows;
        k->early_by_sync += !cs_is_async(t->g, q.reset);
        k->early_by_wait += cs_is_async(t->g, q.reset) != 0;
        k->early_pending += (size_t)q.pending;
        k->early_deps2 += (size_t)q.deps2;
        k->early_empty += q.stretch == 0;
        k->early_several += q.resets >= 2;
    }
    if (out)
        *out = q;
}

/* Every wait's walk (and, at `other` percent, a compute node's: the same
 * walk with the node standing for a wait, E often none), after checking
 * the tracker's positions against the order. */
static void walk_waits(wt *t, wcounts *k, uint32_t other)
{
    to_order(t);
    uint32_t *pos = malloc(t->n * sizeof *pos);
    assert_non_null(pos);
    for (uint32_t i = 0; i < t->n; i++) {
        pos[t->order[i]] = i;
        assert_int_equal(commsched_memory_position(t->m, t->order[i]), i);
    }
    k->pos_checks++;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t v = t->order[i];
        if (cs_is_wait(t->g, v) ||
            (!is_coll(t->g, v) && tu_rng_chance(&t->r, other)))
            wait_walk(t, pos, v, k, NULL);
    }
    free(pos);
    k->rounds++;
}

/* Sinks w past up to `far` nodes one move at a time, as sink_waits does,
 * until a node that depends on it. */
static void sink(wt *t, uint32_t w, uint32_t far, wcounts *k)
{
    k->sinks++;
    for (uint32_t i = 0; i < far; i++) {
        uint32_t nx = commsched_schedule_next(t->s, w);
        if (nx == COMMSCHED_NONE || !single_after(t, w, nx, nx))
            break;
        k->sink_moves++;
    }
}

static uint32_t random_wait(wt *t)
{
    for (;;) {
        uint32_t v = tu_rng_below(&t->r, t->n);
        if (cs_is_wait(t->g, v))
            return v;
    }
}

static void print_wcounts(const char *what, const wcounts *k)
{
    printf("%s: %zu wait walks (%zu of waits, %zu of compute nodes) in %zu "
           "rounds; %zu with more than %d terms ending at a collective; the "
           "shortcut tried %zu times: returned early %zu (%zu with E none, "
           "%zu at a sync reset, %zu at one a wait completes, %zu with an "
           "empty stretch, %zu with 3+ terms in it, %zu where its order "
           "shows, %zu where the reset nearest the node would differ, %zu "
           "passing a collective completed after the node, %zu of nodes "
           "with 2+ collectives), fell back %zu (no reset) + %zu (the record "
           "filled at E); %zu sinks (%zu moves)\n",
           what, k->walks, k->wait_walks, k->other_walks, k->rounds,
           k->long_rec, CS_OVERLAP_INFO_TERMS, k->tried, k->early,
           k->early_end_none, k->early_by_sync, k->early_by_wait,
           k->early_empty, k->early_long_stretch, k->early_order,
           k->early_nearest, k->early_pending, k->early_deps2,
           k->fallback_no_reset, k->fallback_at_end, k->sinks, k->sink_moves);
}

/* A random graph with many waits: computes reading one or two earlier
 * buffers; async all_reduces, each completed by a later wait that often
 * completes several at once (and now and then also reads a sync
 * collective's output, or lists an earlier node in `after`); sync
 * all_reduces whose outputs anyone reads. */
static commsched_graph *wait_graph(uint64_t seed, uint32_t n_target)
{
    tu_rng r;
    tu_rng_seed(&r, seed * 31 + 7);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    enum { MAXB = 4096, NAME = 24 };
    static char readable[MAXB][NAME], syncs[MAXB][NAME], nodes[MAXB][NAME];
    uint32_t pend[64], n_pend = 0, n_read = 0, n_sync = 0, n_nodes = 0;
    fprintf(f, "{\"format\": \"commsched-graph\", \"version\": 1, "
               "\"groups\": [{\"name\": \"dp\", \"size\": 8, \"hosts\": 1}], "
               "\"inputs\": [");
    for (uint32_t i = 0; i < 4; i++) {
        fprintf(f, "%s{\"name\": \"in%u\", \"size\": 8}", i ? ", " : "", i);
        snprintf(readable[n_read++], NAME, "in%u", i);
    }
    fprintf(f, "], \"outputs\": [], \"nodes\": [");
    const char *sep = "";
    uint32_t id = 0;
    while (n_nodes < n_target || n_pend > 0) {
        uint32_t x = tu_rng_below(&r, 100);
        int must_wait = n_pend >= 8 || (n_nodes >= n_target && n_pend > 0);
        assert_true(n_nodes + 1 < MAXB && n_read + 4 < MAXB);
        id++;
        if (must_wait || (n_pend > 0 && x < 22)) {
            /* a wait for 1-3 pending collectives (at random among them) */
            uint32_t take = 1 + tu_rng_below(&r, n_pend < 3 ? n_pend : 3);
            if (tu_rng_chance(&r, 50))
                take = 1;
            snprintf(nodes[n_nodes], NAME, "w%u", id);
            fprintf(f, "%s{\"name\": \"w%u\", \"kind\": \"wait\", "
                       "\"inputs\": [", sep, id);
            uint32_t got[3];
            for (uint32_t j = 0; j < take; j++) {
                uint32_t q = tu_rng_below(&r, n_pend);
                got[j] = pend[q];
                pend[q] = pend[--n_pend];
                fprintf(f, "%s\"a%u_o\"", j ? ", " : "", got[j]);
            }
            if (n_sync > 0 && tu_rng_chance(&r, 15))
                fprintf(f, ", \"%s\"", syncs[tu_rng_below(&r, n_sync)]);
            fprintf(f, "], \"outputs\": [");
            for (uint32_t j = 0; j < take; j++) {
                fprintf(f, "%s{\"name\": \"w%u_%u\", \"alias_of\": "
                           "\"a%u_o\"}", j ? ", " : "", id, j, got[j]);
                snprintf(readable[n_read++], NAME, "w%u_%u", id, j);
            }
            fprintf(f, "]");
            if (n_nodes > 0 && tu_rng_chance(&r, 8))
                fprintf(f, ", \"after\": [\"%s\"]",
                        nodes[tu_rng_below(&r, n_nodes)]);
            fprintf(f, "}");
        } else if (x < 45) {
            uint32_t a = tu_rng_below(&r, n_read);
            snprintf(nodes[n_nodes], NAME, "a%u", id);
            fprintf(f, "%s{\"name\": \"a%u\", \"kind\": \"collective\", "
                       "\"op\": \"all_reduce\", \"group\": \"dp\", "
                       "\"inputs\": [\"%s\"], \"outputs\": [{\"name\": "
                       "\"a%u_o\", \"size\": 8}], \"runtime_ns\": 10}",
                    sep, id, readable[a], id);
            pend[n_pend++] = id;
        } else if (x < 53) {
            uint32_t a = tu_rng_below(&r, n_read);
            snprintf(nodes[n_nodes], NAME, "s%u", id);
            fprintf(f, "%s{\"name\": \"s%u\", \"kind\": \"collective\", "
                       "\"op\": \"all_reduce\", \"group\": \"dp\", "
                       "\"async\": false, \"inputs\": [\"%s\"], \"outputs\": "
                       "[{\"name\": \"s%u_o\", \"size\": 8}], "
                       "\"runtime_ns\": 3}",
                    sep, id, readable[a], id);
            snprintf(readable[n_read++], NAME, "s%u_o", id);
            snprintf(syncs[n_sync++], NAME, "s%u_o", id);
        } else {
            /* a compute, reading recent buffers mostly */
            uint32_t a = n_read - 1 - tu_rng_below(&r, n_read < 6 ? n_read : 6);
            if (tu_rng_chance(&r, 30))
                a = tu_rng_below(&r, n_read);
            uint32_t b = tu_rng_below(&r, n_read);
            snprintf(nodes[n_nodes], NAME, "c%u", id);
            fprintf(f, "%s{\"name\": \"c%u\", \"kind\": \"compute\", "
                       "\"op\": \"mm\", \"inputs\": [\"%s\"",
                    sep, id, readable[a]);
            if (b != a && tu_rng_chance(&r, 40))
                fprintf(f, ", \"%s\"", readable[b]);
            fprintf(f, "], \"outputs\": [{\"name\": \"c%u_o\", \"size\": 8}], "
                       "\"runtime_ns\": 5}",
                    id);
            snprintf(readable[n_read++], NAME, "c%u_o", id);
        }
        n_nodes++;
        sep = ", ";
    }
    fprintf(f, "]}");
    assert_int_equal(fclose(f), 0);
    commsched_graph *g = tu_graph_from_json(text);
    free(text);
    return g;
}

/* Random moves between rounds of wait walks: single moves both ways, far
 * runs, hoists (a collective as far up as it goes, sometimes growing by
 * what it meets), waits sunk one move at a time, and now and then every
 * collective hoisted in order, as RCPPM does. */
static void wait_moves(wt *t, wcounts *k, unsigned n_moves)
{
    for (unsigned i = 0; i < n_moves; i++) {
        uint32_t kind = tu_rng_below(&t->r, 100);
        if (kind < 20) {
            random_single(t);
        } else if (kind < 35) {
            random_far_run(t);
        } else if (kind < 55 && t->n_colls > 0) {
            hoist(t, random_coll(t), tu_rng_chance(&t->r, 50));
        } else if (kind < 95) {
            sink(t, random_wait(t), 1 + tu_rng_below(&t->r, 80), k);
        } else if (t->n_colls > 0) {
            to_order(t);
            uint32_t n_colls = 0;
            for (uint32_t j = 0; j < t->n; j++)
                if (cs_is_async(t->g, t->order[j]))
                    t->colls[n_colls++] = t->order[j];
            for (uint32_t j = 0; j < n_colls; j++)
                hoist(t, t->colls[j], tu_rng_chance(&t->r, 30));
        }
    }
}

static void test_walk_wait_random(void **state)
{
    (void)state;
    counts c;
    wcounts k;
    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        commsched_graph *g;
        if (seed % 4 == 0) {
            tu_graph_opts o = tu_random_opts(100 + 40 * (uint32_t)(seed % 5));
            g = tu_random_graph(seed + 1000, &o);
        } else {
            g = wait_graph(seed, 90 + 30 * (uint32_t)(seed % 6));
        }
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        tu_random_topo_order(g, seed * 11 + 5, 0, order);
        wt t;
        open_wt(&t, g, seed % 3 ? order : NULL, seed, &c, "wait random");
        free(order);
        /* modes 0-3, and 4 (sums whose order shows) for two seeds in 5 */
        make_runtimes(&t, seed % 5 == 3 ? 4 : (uint32_t)(seed % 5));
        int has_wait = 0;
        for (uint32_t v = 0; v < t.n; v++)
            has_wait |= cs_is_wait(g, v);
        if (!has_wait) {
            close_wt(&t);
            continue;
        }
        walk_waits(&t, &k, 10);
        for (unsigned round = 0; round < 30; round++) {
            wait_moves(&t, &k, 1 + tu_rng_below(&t.r, 4));
            walk_waits(&t, &k, 5);
        }
        close_wt(&t);
    }
    print_wcounts("wait random", &k);
    /* about half of what the seeds give, so that none of these can pass
     * without the shortcut deciding many walks each way */
    assert_true(k.early >= 6000);
    assert_true(k.long_rec >= 5000);
    assert_true(k.fallback_no_reset >= 300);
    assert_true(k.fallback_at_end >= 100);
    assert_true(k.early_end_none >= 1500);
    assert_true(k.early_by_sync >= 1500);
    assert_true(k.early_by_wait >= 4000);
    assert_true(k.early_long_stretch >= 1000);
    assert_true(k.early_order >= 120);
    assert_true(k.early_nearest >= 4000);
    assert_true(k.early_pending >= 800);
    assert_true(k.early_deps2 >= 1000);
    assert_true(k.early_empty >= 2500);
}

/* Chains with every collective hoisted in order (the shape the shortcut
 * is for), then waits sunk and random moves, two rounds (the second
 * growing the hoisted groups). */
static void test_walk_wait_chain(void **state)
{
    (void)state;
    counts c;
    wcounts k;
    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    size_t early_hoisted = 0, long_hoisted = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint32_t layers = 10 + 5 * (uint32_t)(seed % 5);
        commsched_graph *g = chain_graph(seed + 100, layers, 15);
        wt t;
        open_wt(&t, g, NULL, seed, &c, "wait chain");
        make_runtimes(&t, seed % 5 == 3 ? 4 : (uint32_t)(seed % 5));
        walk_waits(&t, &k, 0);
        for (int round = 0; round < 2; round++) {
            to_order(&t);
            uint32_t n_colls = 0;
            for (uint32_t i = 0; i < t.n; i++)
                if (cs_is_async(g, t.order[i]))
                    t.colls[n_colls++] = t.order[i];
            for (uint32_t i = 0; i < n_colls; i++)
                hoist(&t, t.colls[i], round == 1);
            size_t e0 = k.early, l0 = k.long_rec;
            walk_waits(&t, &k, 0);
            early_hoisted += k.early - e0;
            long_hoisted += k.long_rec - l0;
            for (int j = 0; j < 6; j++) {
                for (int q = 0; q < 4; q++)
                    sink(&t, random_wait(&t), 1 + tu_rng_below(&t.r, 40), &k);
                if (j % 2)
                    wait_moves(&t, &k, 3);
                walk_waits(&t, &k, 10);
            }
        }
        close_wt(&t);
    }
    print_wcounts("wait chain", &k);
    printf("wait chain: right after hoisting every collective: %zu walks "
           "returned early, %zu had more than %d terms and a collective\n",
           early_hoisted, long_hoisted, CS_OVERLAP_INFO_TERMS);
    assert_true(early_hoisted >= 300);
    assert_true(k.early >= 2500);
    assert_true(k.long_rec >= 2000);
    assert_true(k.early_long_stretch >= 80);
    assert_true(k.early_order >= 12);
    assert_true(k.early_pending >= 700);
    assert_true(k.fallback_no_reset >= 80);
}

/* ---- wait walks: hand-made orders ----------------------------------------- */

/* A graph in exactly the order of a spec: tokens "A<k>" (an async
 * all_reduce), "S<k>" (a sync one), "x*<n>" (n computes reading nothing),
 * "c:<name>" (one compute), "<name>:<coll>,<coll>..." (a wait reading
 * those collectives' outputs). */
static commsched_graph *spec_graph(const char *spec)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    fprintf(f, "{\"format\": \"commsched-graph\", \"version\": 1, "
               "\"groups\": [{\"name\": \"dp\", \"size\": 8, \"hosts\": 1}], "
               "\"inputs\": [{\"name\": \"in0\", \"size\": 8}], "
               "\"outputs\": [], \"nodes\": [");
    const char *sep = "";
    unsigned nx = 0;
    char tok[128];
    for (const char *p = spec; *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (len == 0)
            break;
        assert_true(len < sizeof tok);
        memcpy(tok, p, len);
        tok[len] = '\0';
        p += len;
        char *colon = strchr(tok, ':');
        if (tok[0] == 'x' && tok[1] == '*') {
            int cnt = atoi(tok + 2);
            for (int i = 0; i < cnt; i++, nx++) {
                fprintf(f, "%s{\"name\": \"x%u\", \"kind\": \"compute\", "
                           "\"op\": \"mm\", \"inputs\": [], \"outputs\": "
                           "[{\"name\": \"x%u_o\", \"size\": 4}], "
                           "\"runtime_ns\": 1}",
                        sep, nx, nx);
                sep = ", ";
            }
        } else if (tok[0] == 'c' && tok[1] == ':') {
            fprintf(f, "%s{\"name\": \"%s\", \"kind\": \"compute\", \"op\": "
                       "\"mm\", \"inputs\": [], \"outputs\": [{\"name\": "
                       "\"%s_o\", \"size\": 4}], \"runtime_ns\": 1}",
                    sep, tok + 2, tok + 2);
        } else if (colon) {
            *colon = '\0';
            fprintf(f, "%s{\"name\": \"%s\", \"kind\": \"wait\", \"inputs\": [",
                    sep, tok);
            const char *q = colon + 1;
            int j = 0;
            char outs[512] = "";
            size_t ol = 0;
            while (*q) {
                size_t cl = strcspn(q, ",");
                fprintf(f, "%s\"%.*s_o\"", j ? ", " : "", (int)cl, q);
                if (q[0] == 'A')
                    ol += (size_t)snprintf(outs + ol, sizeof outs - ol,
                                           "%s{\"name\": \"%s_%d\", "
                                           "\"alias_of\": \"%.*s_o\"}",
                                           ol ? ", " : "", tok, j, (int)cl, q);
                j++;
                q += cl;
                if (*q == ',')
                    q++;
            }
            fprintf(f, "], \"outputs\": [%s]}", outs);
        } else {
            assert_true(tok[0] == 'A' || tok[0] == 'S');
            fprintf(f, "%s{\"name\": \"%s\", \"kind\": \"collective\", "
                       "\"op\": \"all_reduce\", \"group\": \"dp\", "
                       "\"async\": %s, \"inputs\": [\"in0\"], \"outputs\": "
                       "[{\"name\": \"%s_o\", \"size\": 8}], "
                       "\"runtime_ns\": 10}",
                    sep, tok, tok[0] == 'A' ? "true" : "false", tok);
        }
        sep = ", ";
    }
    fprintf(f, "]}");
    assert_int_equal(fclose(f), 0);
    commsched_graph *g = tu_graph_from_json(text);
    free(text);
    return g;
}

/* Non-collectives strictly between `from` (NULL: the start) and `to`,
 * summed backward from +0.0 as the walk sums them. */
static double between(wt *t, const char *from, const char *to)
{
    to_order(t);
    uint32_t lo = 0, hi = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const char *nm = commsched_graph_node_name(t->g, t->order[i]);
        if (from && strcmp(nm, from) == 0)
            lo = i + 1;
        if (strcmp(nm, to) == 0)
            hi = i;
    }
    return stretch_sum(t, lo, hi, 0);
}

static void test_walk_wait_edges(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *node, *end; /* end NULL: none */
        size_t terms;
        int early, tried;
        const char *from, *to; /* the figure: between(from, to); to NULL: 0 */
    } cases[] = {
        /* the collective at position 0, a sync reset after it */
        {"A0 x*40 S1 x*40 wa:A0", "wa", "A0", 80, 1, 1, "A0", "S1"},
        /* at position 0, no reset: the walk goes on to it */
        {"A0 x*40 wa:A0", "wa", "A0", 40, 0, 1, "A0", "wa"},
        /* the next collective is completed by a wait in between: reset
         * right after E, nothing summed */
        {"A0 A1 x*40 wb:A1 x*5 wa:A0", "wa", "A0", 46, 1, 1, NULL, NULL},
        /* a wait right after its collective */
        {"x*40 A0 wa:A0", "wa", "A0", 0, 0, 0, NULL, NULL},
        {"A0 wa:A0", "wa", "A0", 0, 0, 0, NULL, NULL},
        /* the record fills exactly at E */
        {"A0 x*32 wa:A0", "wa", "A0", 32, 0, 1, "A0", "wa"},
        /* ... at a sync reset right after E */
        {"A0 S1 x*32 wa:A0", "wa", "A0", 32, 1, 1, NULL, NULL},
        /* ... at a compute right after E: no reset in range */
        {"A0 x*33 wa:A0", "wa", "A0", 33, 0, 1, "A0", "wa"},
        /* ... with 31 terms the shortcut is not tried */
        {"A0 S1 x*31 wa:A0", "wa", "A0", 31, 0, 0, NULL, NULL},
        /* a reset among the nodes passed before the record filled: the
         * shortcut finds none in E+1 .. v0 and falls back */
        {"A0 x*5 S1 x*31 wa:A0", "wa", "A0", 36, 0, 1, "A0", "S1"},
        /* ... and the reset at v0 itself, or just before it */
        {"A0 x*2 S1 x*32 wa:A0", "wa", "A0", 34, 1, 1, "A0", "S1"},
        {"A0 x*2 S1 x*33 wa:A0", "wa", "A0", 35, 1, 1, "A0", "S1"},
        /* no collective: E none, a reset at position 0 */
        {"S0 x*40 c:z", "z", NULL, 40, 1, 1, NULL, NULL},
        {"x*3 S0 x*40 c:z", "z", NULL, 43, 1, 1, NULL, "S0"},
        /* a collective at position 0 completed on the way (terms count
         * the wait) */
        {"A0 x*2 wa:A0 x*40 c:z", "z", NULL, 43, 1, 1, NULL, NULL},
        /* ... completed after the node: no reset, the walk to the start */
        {"A0 x*40 c:z wa:A0", "z", NULL, 40, 0, 1, NULL, "z"},
        /* a node at position 0 */
        {"c:z x*3", "z", NULL, 0, 0, 0, NULL, NULL},
        /* a wait reading only a sync collective's output */
        {"S0 x*5 S1 x*40 ws:S0", "ws", "S0", 45, 1, 1, "S0", "S1"},
        /* a wait completing several: E is the last of them */
        {"A0 x*4 A1 x*6 S2 x*3 A3 x*40 wm:A0,A1 wz:A3", "wm", "A1", 49, 1, 1,
         "A1", "S2"},
        {"A1 x*4 A0 x*6 S2 x*3 A3 x*40 wm:A0,A1 wz:A3", "wm", "A0", 49, 1, 1,
         "A0", "S2"},
        /* passing a collective completed after the node, then one
         * completed before it */
        {"A0 x*5 A1 x*5 A2 x*5 w2:A2 x*40 w0:A0 w1:A1", "w0", "A0", 56, 1, 1,
         "A0", "A2"},
        /* two resets in range: the one nearest E decides */
        {"A0 x*4 S1 x*4 S2 x*40 wa:A0", "wa", "A0", 48, 1, 1, "A0", "S1"},
        /* E is the later of the two the wait completes, whatever the
         * order of its inputs */
        {"A0 x*4 A1 x*40 wa:A0,A1", "wa", "A1", 40, 0, 1, "A1", "wa"},
    };
    counts c;
    wcounts k;
    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        for (uint64_t rs = 1; rs <= 4; rs++) {
            wt t;
            open_wt(&t, spec_graph(cases[ci].spec), NULL, ci * 10 + rs, &c,
                    cases[ci].spec);
            /* distinct full-precision runtimes (some zeros for rs 4) */
            make_runtimes(&t, rs == 4 ? 2 : 4);
            if (rs < 4)
                for (uint32_t v = 0; v < t.n; v++)
                    t.rt[v] = ldexp(1.0 + (double)(tu_rng_next(&t.r) >> 11) *
                                              0x1p-53,
                                    (int)tu_rng_below(&t.r, 21) - 10);
            to_order(&t);
            uint32_t *pos = malloc(t.n * sizeof *pos);
            assert_non_null(pos);
            for (uint32_t i = 0; i < t.n; i++)
                pos[t.order[i]] = i;
            uint32_t node = tu_node(t.g, cases[ci].node);
            wpred q;
            wait_walk(&t, pos, node, &k, &q);
            const cs_walk_record *rb = &t.b.rec;
            uint32_t end = cases[ci].end ? tu_node(t.g, cases[ci].end)
                                         : COMMSCHED_NONE;
            double want = cases[ci].to
                              ? between(&t, cases[ci].from, cases[ci].to)
                              : 0.0;
            double comm = 0.0, comp = 0.0;
            cs_wait_exposed(t.g, t.s, t.rt, node, &comm, &comp, &t.p);
            if (rb->end != end || rb->terms != cases[ci].terms ||
                q.early != cases[ci].early || q.tried != cases[ci].tried ||
                !bits_equal(comp, want) ||
                !bits_equal(comm, end == COMMSCHED_NONE ? 0.0 : t.rt[end]))
                fail_msg("\"%s\" (runtimes %llu), walk of %s: end %s terms "
                         "%zu tried %d early %d comm %.17g comp %.17g; "
                         "expected %s %zu %d %d, comp %.17g",
                         cases[ci].spec, (unsigned long long)rs,
                         cases[ci].node,
                         rb->end == COMMSCHED_NONE
                             ? "-"
                             : commsched_graph_node_name(t.g, rb->end),
                         rb->terms, q.tried, q.early, comm, comp,
                         cases[ci].end ? cases[ci].end : "-",
                         cases[ci].terms, cases[ci].tried, cases[ci].early,
                         want);
            free(pos);
            close_wt(&t);
        }
    }
    print_wcounts("wait edges", &k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_sums_random),
        cmocka_unit_test(test_walk_sums_chain),
        cmocka_unit_test(test_walk_wait_edges),
        cmocka_unit_test(test_walk_wait_random),
        cmocka_unit_test(test_walk_wait_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
