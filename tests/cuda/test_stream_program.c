/* commsched — the stream program (src/runtime/stream_program.c): one
 * iteration of a plan lowered to operations on CUDA-like streams joined by
 * events, and cs_sprog_verify, the vector-clock checker that proves it
 * safe. No GPU needed. Expected values are derived in the comments. */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/commsched.h"
#include "commsched/graph.h"
#include "commsched/runtime.h"
#include "graph_internal.h"
#include "plan.h"
#include "stream_program.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

/* Two groups, ga (index 0) and gb (index 1); x freeable, p not.
 *
 *   0 c0    compute    x, p -> a (128)
 *   1 ar    all_reduce ga async, a -> ao (128)
 *   2 ag    all_gather gb async, p (64) -> go (256) (reads a non-freeable)
 *   3 c1    compute    x -> b (16)                 (x's last reader)
 *   4 sr    all_reduce ga SYNC, b -> so (16)
 *   5 w_ar  wait ao -> v (alias)                   (completes ar)
 *   6 w_ag  wait go -> u (alias)                   (completes ag)
 *   7 c2    compute    v, u, so -> y (8)           (y: graph output)
 *   8 bar   barrier    ga async, -> tok (0)        (nobody waits for it)
 *   9 ag2   all_gather gb async, y (8) -> z (32)   (nobody waits for it)
 *
 * Plan (plan.c): baseline x; other p; a is held until ar's wait w_ar;
 * ao, go, so freed after c2 (read through the aliases); x after c1; b
 * after sr (sync: no hold); y (output) and z (no wait) at the end.
 * Events: node v has 3v (start), 3v+1 (end), 3v+2 (post); the iteration's
 * start 30 and end 31; tails 32 (stream 1) and 33 (stream 2). */
static const char *const g_mixed =
    HDR "\"groups\": [{\"name\": \"ga\", \"size\": 2},"
    "             {\"name\": \"gb\", \"size\": 4}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 64, \"freeable\": true},"
    "             {\"name\": \"p\", \"size\": 64}],"
    "\"outputs\": [\"y\"], \"nodes\": ["
    "{\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\", \"p\"],"
    " \"outputs\": [{\"name\": \"a\", \"size\": 128}]},"
    "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"ga\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"ao\", \"size\": 128}]},"
    "{\"name\": \"ag\", \"kind\": \"collective\", \"op\": \"all_gather\","
    " \"group\": \"gb\", \"inputs\": [\"p\"],"
    " \"outputs\": [{\"name\": \"go\", \"size\": 256}]},"
    "{\"name\": \"c1\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"b\", \"size\": 16}]},"
    "{\"name\": \"sr\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"ga\", \"async\": false, \"inputs\": [\"b\"],"
    " \"outputs\": [{\"name\": \"so\", \"size\": 16}]},"
    "{\"name\": \"w_ar\", \"kind\": \"wait\", \"inputs\": [\"ao\"],"
    " \"outputs\": [{\"name\": \"v\", \"alias_of\": \"ao\"}]},"
    "{\"name\": \"w_ag\", \"kind\": \"wait\", \"inputs\": [\"go\"],"
    " \"outputs\": [{\"name\": \"u\", \"alias_of\": \"go\"}]},"
    "{\"name\": \"c2\", \"kind\": \"compute\", \"inputs\": [\"v\", \"u\", \"so\"],"
    " \"outputs\": [{\"name\": \"y\", \"size\": 8}]},"
    "{\"name\": \"bar\", \"kind\": \"collective\", \"op\": \"barrier\","
    " \"group\": \"ga\", \"inputs\": [],"
    " \"outputs\": [{\"name\": \"tok\", \"size\": 0}]},"
    "{\"name\": \"ag2\", \"kind\": \"collective\", \"op\": \"all_gather\","
    " \"group\": \"gb\", \"inputs\": [\"y\"],"
    " \"outputs\": [{\"name\": \"z\", \"size\": 32}]}]}";

enum { C0 = 0, AR = 1, AG = 2, C1 = 3, SR = 4, W_AR = 5, W_AG = 6, C2 = 7,
       BAR = 8, AG2 = 9, N_MIXED = 10 };

#define ANY UINT32_MAX
#define NOWHERE ((size_t)-1)

/* ---- helpers ---------------------------------------------------------------- */

static commsched_graph *load(const char *json)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    if (commsched_graph_load_string(json, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("graph: %s %s", err.path, err.text);
    return g;
}

/* The graph and its plan in file order, shared by a test. */
typedef struct fixture {
    commsched_graph *g;
    cs_plan p;
} fixture;

static void fixture_init(fixture *f, const char *json)
{
    commsched_error err = {0};
    f->g = load(json);
    if (cs_plan_build(&f->p, f->g, NULL, 1.0, &err) != COMMSCHED_OK)
        fail_msg("plan: %s", err.text);
}

static void fixture_fini(fixture *f)
{
    cs_plan_fini(&f->p);
    commsched_graph_destroy(f->g);
}

static uint32_t buf(const fixture *f, const char *name)
{
    uint32_t b = commsched_graph_find_buffer(f->g, name);
    if (b == COMMSCHED_NONE)
        fail_msg("no buffer %s", name);
    return b;
}

static void build(cs_sprog *sp, const cs_plan *p, commsched_run_streams rs,
                  int check, int calibrating, const uint8_t *wr)
{
    commsched_error err = {0};
    commsched_status st = cs_sprog_build(sp, p, rs, check, calibrating, wr,
                                         &err);
    if (st != COMMSCHED_OK)
        fail_msg("build: %s", err.text);
}

static void verify_ok(const cs_sprog *sp, const cs_plan *p)
{
    commsched_error err = {0};
    commsched_status st = cs_sprog_verify(sp, p, &err);
    if (st != COMMSCHED_OK)
        fail_msg("verify: %s", err.text);
}

static int op_is(const cs_sop *o, cs_sop_kind kind, uint32_t stream,
                 uint32_t arg)
{
    return o->kind == (uint8_t)kind && (stream == ANY || o->stream == stream) &&
           (arg == ANY || o->arg == arg);
}

/* The first op at or after `from` matching (ANY matches everything). */
static size_t find_from(const cs_sprog *sp, size_t from, cs_sop_kind kind,
                        uint32_t stream, uint32_t arg)
{
    for (size_t i = from; i < sp->n_ops; i++)
        if (op_is(&sp->ops[i], kind, stream, arg))
            return i;
    return NOWHERE;
}

/* The one op matching; fails unless there is exactly one. */
static size_t find1(const cs_sprog *sp, cs_sop_kind kind, uint32_t stream,
                    uint32_t arg)
{
    size_t i = find_from(sp, 0, kind, stream, arg);
    if (i == NOWHERE)
        fail_msg("no %s on stream %u with arg %u", cs_sop_kind_str(kind),
                 stream, arg);
    if (find_from(sp, i + 1, kind, stream, arg) != NOWHERE)
        fail_msg("several %s on stream %u with arg %u",
                 cs_sop_kind_str(kind), stream, arg);
    return i;
}

static size_t count(const cs_sprog *sp, cs_sop_kind kind, uint32_t stream,
                    uint32_t arg)
{
    size_t n = 0;
    for (size_t i = 0; i < sp->n_ops; i++)
        n += (size_t)op_is(&sp->ops[i], kind, stream, arg);
    return n;
}

/* The op before index i on the same stream (NOWHERE when none). */
static size_t prev_on_stream(const cs_sprog *sp, size_t i)
{
    for (size_t j = i; j-- > 0;)
        if (sp->ops[j].stream == sp->ops[i].stream)
            return j;
    return NOWHERE;
}

static size_t next_on_stream(const cs_sprog *sp, size_t i)
{
    for (size_t j = i + 1; j < sp->n_ops; j++)
        if (sp->ops[j].stream == sp->ops[i].stream)
            return j;
    return NOWHERE;
}

static void assert_op(const cs_sprog *sp, size_t i, cs_sop_kind kind,
                      uint32_t stream, uint32_t arg)
{
    if (i >= sp->n_ops)
        fail_msg("op %zu out of range (%zu ops)", i, sp->n_ops);
    const cs_sop *o = &sp->ops[i];
    if (!op_is(o, kind, stream, arg))
        fail_msg("op %zu is %s/%u/%u, expected %s/%u/%u", i,
                 cs_sop_kind_str((cs_sop_kind)o->kind), o->stream, o->arg,
                 cs_sop_kind_str(kind), stream, arg);
}

static uint32_t ev(uint32_t v, cs_sprog_ev w) { return cs_sprog_event(v, w); }

/* ---- mutants: a copy of a valid program, changed, then checked --------- */

typedef struct mutant {
    cs_sprog m; /* shares everything with the original but ops */
} mutant;

static void mutant_init(mutant *mu, const cs_sprog *sp)
{
    mu->m = *sp;
    mu->m.ops = malloc((sp->n_ops + 4) * sizeof *sp->ops);
    assert_non_null(mu->m.ops);
    memcpy(mu->m.ops, sp->ops, sp->n_ops * sizeof *sp->ops);
}

static void mutant_fini(mutant *mu)
{
    free(mu->m.ops);
    mu->m.ops = NULL;
}

static void mut_delete(mutant *mu, size_t i)
{
    assert_true(i < mu->m.n_ops);
    memmove(mu->m.ops + i, mu->m.ops + i + 1,
            (mu->m.n_ops - i - 1) * sizeof *mu->m.ops);
    mu->m.n_ops--;
}

/* Inserts op before index i (room for 4 more was reserved). */
static void mut_insert(mutant *mu, size_t i, cs_sop op)
{
    assert_true(i <= mu->m.n_ops);
    memmove(mu->m.ops + i + 1, mu->m.ops + i,
            (mu->m.n_ops - i) * sizeof *mu->m.ops);
    mu->m.ops[i] = op;
    mu->m.n_ops++;
}

/* Moves op `from` so that it sits right before what was at index `to`
 * (to < from). */
static void mut_move_before(mutant *mu, size_t from, size_t to)
{
    assert_true(to < from);
    cs_sop op = mu->m.ops[from];
    mut_delete(mu, from);
    mut_insert(mu, to, op);
}

static void expect_violation(const mutant *mu, const cs_plan *p,
                             const char *needle)
{
    commsched_error err = {0};
    commsched_status st = cs_sprog_verify(&mu->m, p, &err);
    if (st != COMMSCHED_EINTERNAL)
        fail_msg("verify returned %d, expected EINTERNAL (%s); message: %s",
                 (int)st, needle, err.text);
    if (!strstr(err.text, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err.text, needle);
}

/* ---- 1. structure ------------------------------------------------------------ */

static void test_structure_per_group(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    const cs_plan *p = &f.p;
    cs_sprog sp;
    build(&sp, p, COMMSCHED_RUN_STREAMS_PER_GROUP, 0, 0, NULL);
    verify_ok(&sp, p);

    /* Streams: compute + ga + gb. Events: 3 per node (30), then the
     * iteration's start (30) and end (31), then one tail per stream
     * (n_events counts ev_iter_end + n_streams: 31 + 3 = 34). */
    assert_int_equal(sp.n_nodes, N_MIXED);
    assert_int_equal(sp.n_streams, 3);
    assert_int_equal(sp.ev_iter_start, 30);
    assert_int_equal(sp.ev_iter_end, 31);
    assert_int_equal(sp.n_events, 34);
    /* The stream each async collective runs on: 1 + its group. */
    assert_int_equal(sp.stream_of[AR], 1);
    assert_int_equal(sp.stream_of[BAR], 1);
    assert_int_equal(sp.stream_of[AG], 2);
    assert_int_equal(sp.stream_of[AG2], 2);

    uint32_t x = buf(&f, "x"), a = buf(&f, "a"), b = buf(&f, "b"),
             y = buf(&f, "y"), z = buf(&f, "z"), p_in = buf(&f, "p");
    /* The head: the freeable input, a world barrier, the start event. */
    assert_op(&sp, 0, CS_SOP_ALLOC, 0, x);
    assert_op(&sp, 1, CS_SOP_BARRIER, 0, CS_SPROG_WORLD);
    assert_op(&sp, 2, CS_SOP_RECORD, 0, sp.ev_iter_start);
    /* p is not freeable: never allocated or freed by the program. */
    assert_int_equal(count(&sp, CS_SOP_ALLOC, ANY, p_in), 0);
    assert_int_equal(count(&sp, CS_SOP_FREE, ANY, p_in), 0);

    /* Async collectives: START recorded on stream 0, waited for on the
     * collective's stream, then POST, COLL, END there. */
    const uint32_t async[] = {AR, AG, BAR, AG2};
    for (size_t i = 0; i < sizeof async / sizeof async[0]; i++) {
        uint32_t v = async[i], s = sp.stream_of[v];
        size_t coll = find1(&sp, CS_SOP_COLL, ANY, v);
        assert_int_equal(sp.ops[coll].stream, s);
        size_t post = prev_on_stream(&sp, coll);
        assert_op(&sp, post, CS_SOP_RECORD, s, ev(v, CS_EV_POST));
        size_t wstart = prev_on_stream(&sp, post);
        assert_op(&sp, wstart, CS_SOP_WAIT, s, ev(v, CS_EV_START));
        size_t start = find1(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_START));
        assert_int_equal(sp.ops[start].stream, 0);
        assert_true(start < wstart);
        size_t end = next_on_stream(&sp, coll);
        assert_op(&sp, end, CS_SOP_RECORD, s, ev(v, CS_EV_END));
        assert_int_equal(find1(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_END)),
                         end);
        assert_int_equal(find1(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_POST)),
                         post);
    }
    /* START events at the place in the order: stream 0's start records
     * follow the plan's order exactly. */
    size_t last = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        size_t at = find1(&sp, CS_SOP_RECORD, 0, ev(p->order[k], CS_EV_START));
        assert_true(k == 0 || at > last);
        last = at;
    }

    /* The wait nodes make stream 0 wait for the END of what they
     * complete, between their own START and END records. */
    size_t w_ar_start = find1(&sp, CS_SOP_RECORD, 0, ev(W_AR, CS_EV_START));
    size_t w_ar_wait = find1(&sp, CS_SOP_WAIT, ANY, ev(AR, CS_EV_END));
    size_t w_ar_end = find1(&sp, CS_SOP_RECORD, 0, ev(W_AR, CS_EV_END));
    assert_int_equal(sp.ops[w_ar_wait].stream, 0);
    assert_true(w_ar_start < w_ar_wait && w_ar_wait < w_ar_end);
    size_t w_ag_wait = find1(&sp, CS_SOP_WAIT, ANY, ev(AG, CS_EV_END));
    assert_int_equal(sp.ops[w_ag_wait].stream, 0);
    assert_true(w_ag_wait > find1(&sp, CS_SOP_RECORD, 0, ev(W_AG, CS_EV_START)));
    /* Nobody waits for bar or ag2: their END is waited for by no op. */
    assert_int_equal(count(&sp, CS_SOP_WAIT, ANY, ev(BAR, CS_EV_END)), 0);
    assert_int_equal(count(&sp, CS_SOP_WAIT, ANY, ev(AG2, CS_EV_END)), 0);

    /* ar's input a is held until w_ar: freed after the WAIT, once. */
    size_t free_a = find1(&sp, CS_SOP_FREE, ANY, a);
    assert_int_equal(sp.ops[free_a].stream, 0);
    assert_true(free_a > w_ar_wait);
    assert_true(free_a > find1(&sp, CS_SOP_COLL, ANY, AR));
    /* x after its last reader c1; b right after the sync collective. */
    assert_true(find1(&sp, CS_SOP_FREE, 0, x) >
                find1(&sp, CS_SOP_COMPUTE, 0, C1));
    assert_true(find1(&sp, CS_SOP_FREE, 0, b) >
                find1(&sp, CS_SOP_COLL, 0, SR));
    assert_true(find1(&sp, CS_SOP_FREE, 0, b) < w_ar_start);

    /* The sync collective runs on stream 0, with its POST and END. */
    size_t sr = find1(&sp, CS_SOP_COLL, ANY, SR);
    assert_int_equal(sp.ops[sr].stream, 0);
    assert_op(&sp, sr - 1, CS_SOP_RECORD, 0, ev(SR, CS_EV_POST));
    assert_op(&sp, sr + 1, CS_SOP_RECORD, 0, ev(SR, CS_EV_END));
    assert_int_equal(count(&sp, CS_SOP_WAIT, ANY, ev(SR, CS_EV_START)), 0);
    /* Compute nodes: COMPUTE between START and END on stream 0. */
    const uint32_t comp[] = {C0, C1, C2};
    for (size_t i = 0; i < 3; i++) {
        size_t c = find1(&sp, CS_SOP_COMPUTE, ANY, comp[i]);
        assert_int_equal(sp.ops[c].stream, 0);
        assert_op(&sp, c - 1, CS_SOP_RECORD, 0, ev(comp[i], CS_EV_START));
        assert_op(&sp, c + 1, CS_SOP_RECORD, 0, ev(comp[i], CS_EV_END));
    }
    /* No check, no calibration, no wait runtime: none of their ops; one
     * barrier only (the world's). */
    assert_int_equal(count(&sp, CS_SOP_FILL, ANY, ANY), 0);
    assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, ANY), 0);
    assert_int_equal(count(&sp, CS_SOP_BARRIER, ANY, ANY), 1);
    assert_int_equal(count(&sp, CS_SOP_COMPUTE, ANY, ANY), 3);

    /* The tail: each comm stream records its tail, stream 0 waits for it;
     * then the end-of-iteration frees (y: output; z: no wait), and the end
     * event last on stream 0. */
    size_t n = sp.n_ops;
    assert_op(&sp, n - 1, CS_SOP_RECORD, 0, sp.ev_iter_end);
    for (uint32_t s = 1; s < sp.n_streams; s++) {
        uint32_t tail = sp.ev_iter_end + s;
        size_t rec = find1(&sp, CS_SOP_RECORD, ANY, tail);
        size_t wt = find1(&sp, CS_SOP_WAIT, ANY, tail);
        assert_int_equal(sp.ops[rec].stream, s);
        assert_int_equal(sp.ops[wt].stream, 0);
        assert_true(rec < wt);
        /* the tail is the last op of its stream */
        assert_int_equal(next_on_stream(&sp, rec), NOWHERE);
        assert_true(wt < n - 1);
    }
    size_t free_y = find1(&sp, CS_SOP_FREE, 0, y),
           free_z = find1(&sp, CS_SOP_FREE, 0, z);
    assert_true(free_y > find1(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + 2));
    assert_true(free_z > find1(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + 2));
    assert_true(free_y < n - 1 && free_z < n - 1);
    /* Every allocation is freed exactly once: a, ao, go, b, so, y, z, x. */
    assert_int_equal(count(&sp, CS_SOP_ALLOC, ANY, ANY), 8);
    assert_int_equal(count(&sp, CS_SOP_FREE, ANY, ANY), 8);
    for (size_t i = 0; i < sp.n_ops; i++)
        if (sp.ops[i].kind == CS_SOP_ALLOC) {
            assert_int_equal(sp.ops[i].stream, 0);
            assert_int_equal(count(&sp, CS_SOP_FREE, 0, sp.ops[i].arg), 1);
            assert_true(find1(&sp, CS_SOP_FREE, 0, sp.ops[i].arg) > i);
        }
    /* Every event a stream waits for exists and is recorded before. */
    for (size_t i = 0; i < sp.n_ops; i++)
        if (sp.ops[i].kind == CS_SOP_WAIT) {
            assert_true(sp.ops[i].arg < sp.n_events);
            size_t r = find1(&sp, CS_SOP_RECORD, ANY, sp.ops[i].arg);
            assert_true(r < i);
        }
    cs_sprog_fini(&sp);
    /* fini empties the program and is idempotent. */
    assert_null(sp.ops);
    assert_int_equal(sp.n_ops, 0);
    cs_sprog_fini(&sp);
    cs_sprog_fini(NULL);
    fixture_fini(&f);
}

static void test_kind_names(void **state)
{
    (void)state;
    assert_string_equal(cs_sop_kind_str(CS_SOP_ALLOC), "alloc");
    assert_string_equal(cs_sop_kind_str(CS_SOP_WAIT), "wait");
    assert_string_equal(cs_sop_kind_str(CS_SOP_COLL), "collective");
    assert_string_equal(cs_sop_kind_str(CS_SOP_FETCH), "fetch");
    assert_string_equal(cs_sop_kind_str((cs_sop_kind)99), "?");
    assert_int_equal(cs_sprog_event(7, CS_EV_POST), 23);
}

/* ---- 2. stream modes ---------------------------------------------------------- */

static void test_streams_single_and_concurrent(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    cs_sprog sp;
    build(&sp, &f.p, COMMSCHED_RUN_STREAMS_SINGLE, 0, 0, NULL);
    verify_ok(&sp, &f.p);
    /* One comm stream: 2 streams; events 30 + 2 + 1 tail = 33. */
    assert_int_equal(sp.n_streams, 2);
    assert_int_equal(sp.n_events, 33);
    const uint32_t async[] = {AR, AG, BAR, AG2};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(sp.stream_of[async[i]], 1);
        assert_int_equal(sp.ops[find1(&sp, CS_SOP_COLL, ANY, async[i])].stream,
                         1);
    }
    /* The sync collective stays on the compute stream. */
    assert_int_equal(sp.ops[find1(&sp, CS_SOP_COLL, ANY, SR)].stream, 0);
    /* One tail only. */
    assert_int_equal(count(&sp, CS_SOP_RECORD, ANY, sp.ev_iter_end + 1), 1);
    assert_int_equal(count(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + 1), 1);
    for (size_t i = 0; i < sp.n_ops; i++)
        assert_true(sp.ops[i].stream < 2);
    cs_sprog_fini(&sp);

    /* Concurrent has no GPU equivalent: EINVAL, program left empty. */
    commsched_error err = {0};
    memset(&sp, 0xa5, sizeof sp);
    assert_int_equal(cs_sprog_build(&sp, &f.p,
                                    COMMSCHED_RUN_STREAMS_CONCURRENT, 0, 0,
                                    NULL, &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "concurrent"));
    assert_null(sp.ops);
    assert_int_equal(sp.n_ops, 0);
    assert_null(sp.stream_of);
    assert_int_equal(sp.n_streams, 0);
    assert_int_equal(sp.n_events, 0);
    cs_sprog_fini(&sp); /* still safe */
    fixture_fini(&f);
}

/* ---- 3. check ------------------------------------------------------------------ */

static void test_check_fill_fetch(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    const commsched_run_streams modes[] = {COMMSCHED_RUN_STREAMS_PER_GROUP,
                                           COMMSCHED_RUN_STREAMS_SINGLE};
    for (int m = 0; m < 2; m++) {
        cs_sprog sp;
        build(&sp, &f.p, modes[m], 1, 0, NULL);
        verify_ok(&sp, &f.p);
        /* Values per buffer, once per step (check_ref.h): every
         * allocation is followed at once by its FILL on stream 0, and the
         * run-long inputs are filled before the iteration starts; nothing
         * is filled per collective. */
        size_t allocs = 0, others = 0;
        for (size_t i = 0; i < sp.n_ops; i++)
            if (sp.ops[i].kind == CS_SOP_ALLOC) {
                allocs++;
                assert_true(i + 1 < sp.n_ops);
                assert_int_equal(sp.ops[i + 1].kind, CS_SOP_FILL);
                assert_int_equal(sp.ops[i + 1].stream, 0);
                assert_int_equal(sp.ops[i + 1].arg, sp.ops[i].arg);
                assert_int_equal(count(&sp, CS_SOP_FILL, ANY, sp.ops[i].arg),
                                 1);
            }
        size_t iter_start = find1(&sp, CS_SOP_RECORD, 0, sp.ev_iter_start);
        for (uint32_t i = 0; i < f.p.n_other; i++)
            if (f.p.bytes[f.p.other[i]] > 0) {
                others++;
                assert_true(find1(&sp, CS_SOP_FILL, 0, f.p.other[i]) <
                            iter_start);
            }
        assert_int_equal(count(&sp, CS_SOP_FILL, ANY, ANY), allocs + others);
        const uint32_t colls[] = {AR, AG, SR, AG2};
        for (size_t i = 0; i < 4; i++) {
            uint32_t v = colls[i];
            size_t fill = find1(&sp, CS_SOP_FILL, 0, f.p.coll[v].recv);
            size_t start = find1(&sp, CS_SOP_RECORD, 0, ev(v, CS_EV_START));
            assert_true(fill < start);
            assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, v), 1);
            assert_int_equal(sp.ops[find1(&sp, CS_SOP_FETCH, ANY, v)].stream,
                             0);
        }
        /* ar: fetched after w_ar's END record, before its buffers go. */
        size_t fetch_ar = find1(&sp, CS_SOP_FETCH, 0, AR);
        assert_true(fetch_ar > find1(&sp, CS_SOP_RECORD, 0, ev(W_AR, CS_EV_END)));
        assert_true(fetch_ar < find1(&sp, CS_SOP_FREE, 0, buf(&f, "a")));
        assert_true(fetch_ar < find1(&sp, CS_SOP_RECORD, 0, ev(W_AG, CS_EV_START)));
        /* ag: after w_ag's END record. */
        size_t fetch_ag = find1(&sp, CS_SOP_FETCH, 0, AG);
        assert_true(fetch_ag > find1(&sp, CS_SOP_RECORD, 0, ev(W_AG, CS_EV_END)));
        assert_true(fetch_ag < find1(&sp, CS_SOP_RECORD, 0, ev(C2, CS_EV_START)));
        /* sr (sync): right after its END record on stream 0. */
        assert_int_equal(find1(&sp, CS_SOP_FETCH, 0, SR),
                         find1(&sp, CS_SOP_RECORD, 0, ev(SR, CS_EV_END)) + 1);
        /* ag2 (nobody waits): after every tail wait, before z is freed. */
        size_t fetch_ag2 = find1(&sp, CS_SOP_FETCH, 0, AG2);
        for (uint32_t s = 1; s < sp.n_streams; s++)
            assert_true(fetch_ag2 >
                        find1(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + s));
        assert_true(fetch_ag2 < find1(&sp, CS_SOP_FREE, 0, buf(&f, "z")));
        /* The barrier has no result to fetch. */
        assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, BAR), 0);
        assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, ANY), 4);
        cs_sprog_fini(&sp);
    }
    fixture_fini(&f);
}

/* A collective completed by two waits is fetched once, after the first;
 * one wait completing two collectives fetches both. */
static void test_check_shared_waits(void **state)
{
    (void)state;
    fixture f;
    fixture_init(
        &f,
        HDR "\"groups\": [{\"name\": \"dp\", \"size\": 2}],"
        "\"inputs\": [{\"name\": \"x\", \"size\": 64, \"freeable\": true}],"
        "\"outputs\": [\"y\"], \"nodes\": ["
        "{\"name\": \"r1\", \"kind\": \"collective\", \"op\": \"all_reduce\","
        " \"group\": \"dp\", \"inputs\": [\"x\"],"
        " \"outputs\": [{\"name\": \"o1\", \"size\": 64}]},"
        "{\"name\": \"r2\", \"kind\": \"collective\", \"op\": \"all_reduce\","
        " \"group\": \"dp\", \"inputs\": [\"x\"],"
        " \"outputs\": [{\"name\": \"o2\", \"size\": 64}]},"
        "{\"name\": \"w1\", \"kind\": \"wait\", \"inputs\": [\"o1\", \"o2\"],"
        " \"outputs\": [{\"name\": \"v1\", \"alias_of\": \"o1\"},"
        "               {\"name\": \"v2\", \"alias_of\": \"o2\"}]},"
        "{\"name\": \"w2\", \"kind\": \"wait\", \"inputs\": [\"o1\"],"
        " \"outputs\": [{\"name\": \"v3\", \"alias_of\": \"o1\"}]},"
        "{\"name\": \"c\", \"kind\": \"compute\","
        " \"inputs\": [\"v1\", \"v2\", \"v3\"],"
        " \"outputs\": [{\"name\": \"y\", \"size\": 8}]}]}");
    /* r1 0, r2 1, w1 2, w2 3, c 4. */
    cs_sprog sp;
    build(&sp, &f.p, COMMSCHED_RUN_STREAMS_PER_GROUP, 1, 0, NULL);
    verify_ok(&sp, &f.p);
    size_t w1_end = find1(&sp, CS_SOP_RECORD, 0, ev(2, CS_EV_END));
    size_t w2_start = find1(&sp, CS_SOP_RECORD, 0, ev(3, CS_EV_START));
    assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, 0), 1);
    assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, 1), 1);
    size_t f0 = find1(&sp, CS_SOP_FETCH, 0, 0), f1 = find1(&sp, CS_SOP_FETCH, 0, 1);
    assert_true(f0 > w1_end && f0 < w2_start);
    assert_true(f1 > w1_end && f1 < w2_start);
    /* w1 waits for both ENDs; w2 waits for r1's again. */
    assert_int_equal(count(&sp, CS_SOP_WAIT, 0, ev(0, CS_EV_END)), 2);
    assert_int_equal(count(&sp, CS_SOP_WAIT, 0, ev(1, CS_EV_END)), 1);
    cs_sprog_fini(&sp);
    fixture_fini(&f);
}

/* ---- 4. calibrating ------------------------------------------------------------ */

static void test_calibrating(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    const commsched_run_streams modes[] = {COMMSCHED_RUN_STREAMS_PER_GROUP,
                                           COMMSCHED_RUN_STREAMS_SINGLE};
    for (int m = 0; m < 2; m++)
        for (int check = 0; check < 2; check++) {
            cs_sprog sp;
            build(&sp, &f.p, modes[m], check, 1, NULL);
            verify_ok(&sp, &f.p);
            /* Every collective: BARRIER(group) right before its POST
             * record on its stream. */
            const uint32_t colls[] = {AR, AG, SR, BAR, AG2};
            for (size_t i = 0; i < 5; i++) {
                uint32_t v = colls[i];
                size_t post = find1(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_POST));
                size_t bar = prev_on_stream(&sp, post);
                assert_op(&sp, bar, CS_SOP_BARRIER, sp.ops[post].stream,
                          f.g->nodes[v].group);
                assert_int_equal(sp.ops[post].stream,
                                 v == SR ? 0 : sp.stream_of[v]);
            }
            /* Async ones: stream 0 waits for END right after the issue
             * (the END record is the last op of the issue). */
            const uint32_t async[] = {AR, AG, BAR, AG2};
            for (size_t i = 0; i < 4; i++) {
                uint32_t v = async[i];
                size_t end = find1(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_END));
                assert_int_equal(sp.ops[end].stream, sp.stream_of[v]);
                assert_op(&sp, end + 1, CS_SOP_WAIT, 0, ev(v, CS_EV_END));
                /* and before the next node starts */
                if (f.p.pos[v] + 1 < f.p.n)
                    assert_true(end + 1 <
                                find1(&sp, CS_SOP_RECORD, 0,
                                      ev(f.p.order[f.p.pos[v] + 1],
                                         CS_EV_START)));
            }
            /* World barrier + one per collective. */
            assert_int_equal(count(&sp, CS_SOP_BARRIER, ANY, ANY), 6);
            /* Calibrating with check: every result fetched right after it
             * completed (before the next node), the barrier's not. */
            if (check) {
                for (size_t i = 0; i < 4; i++) {
                    uint32_t v = async[i];
                    if (v == BAR)
                        continue;
                    size_t end = find1(&sp, CS_SOP_RECORD, ANY,
                                       ev(v, CS_EV_END));
                    assert_int_equal(find1(&sp, CS_SOP_FETCH, ANY, v),
                                     end + 2);
                }
                assert_int_equal(count(&sp, CS_SOP_FETCH, ANY, ANY), 4);
            }
            cs_sprog_fini(&sp);
        }
    fixture_fini(&f);
}

/* ---- 5. wait runtime -------------------------------------------------------------- */

static void test_wait_runtime(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    uint8_t wr[N_MIXED] = {0};
    wr[W_AR] = 1;
    cs_sprog sp;
    build(&sp, &f.p, COMMSCHED_RUN_STREAMS_PER_GROUP, 0, 0, wr);
    verify_ok(&sp, &f.p);
    size_t c = find1(&sp, CS_SOP_COMPUTE, ANY, W_AR);
    assert_int_equal(sp.ops[c].stream, 0);
    /* After its WAIT on ar's END, right before its own END record. */
    assert_true(c > find1(&sp, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)));
    assert_op(&sp, c + 1, CS_SOP_RECORD, 0, ev(W_AR, CS_EV_END));
    /* Unflagged w_ag plays nothing. */
    assert_int_equal(count(&sp, CS_SOP_COMPUTE, ANY, W_AG), 0);
    assert_int_equal(count(&sp, CS_SOP_COMPUTE, ANY, ANY), 4);
    cs_sprog_fini(&sp);
    /* With check and calibration too. */
    build(&sp, &f.p, COMMSCHED_RUN_STREAMS_SINGLE, 1, 1, wr);
    verify_ok(&sp, &f.p);
    c = find1(&sp, CS_SOP_COMPUTE, ANY, W_AR);
    assert_op(&sp, c + 1, CS_SOP_RECORD, 0, ev(W_AR, CS_EV_END));
    assert_int_equal(count(&sp, CS_SOP_COMPUTE, ANY, W_AG), 0);
    cs_sprog_fini(&sp);
    fixture_fini(&f);
}

/* ---- 6. the checker catches mutations ------------------------------------- */

static void test_verify_mutations(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    const cs_plan *p = &f.p;
    cs_sprog sp;
    build(&sp, p, COMMSCHED_RUN_STREAMS_PER_GROUP, 0, 0, NULL);
    verify_ok(&sp, p);
    uint32_t a = buf(&f, "a"), y = buf(&f, "y"), x = buf(&f, "x");
    mutant mu;

    /* ar's stream no longer waits for ar's START: its COLL reads a, whose
     * ALLOC on stream 0 is not ordered before it. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_WAIT, 1, ev(AR, CS_EV_START)));
    expect_violation(&mu, p,
                     "uses a buffer before its allocation is ordered before "
                     "it: \"a\"");
    mutant_fini(&mu);

    /* w_ar no longer waits for ar's END: freeing a after w_ar races with
     * ar still reading it on stream 1. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)));
    expect_violation(&mu, p, "frees a buffer another stream may still use: "
                             "\"a\"");
    mutant_fini(&mu);

    /* a freed before w_ar (right after ar's issue). */
    mutant_init(&mu, &sp);
    mut_move_before(&mu, find1(&sp, CS_SOP_FREE, 0, a),
                    find1(&sp, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)));
    expect_violation(&mu, p, "frees a buffer another stream may still use: "
                             "\"a\"");
    mutant_fini(&mu);
    /* ... even freed right before the record of ar's END on stream 1: it
     * is stream 0's view that counts. */
    mutant_init(&mu, &sp);
    mut_move_before(&mu, find1(&sp, CS_SOP_FREE, 0, a),
                    find1(&sp, CS_SOP_RECORD, 0, ev(AG, CS_EV_START)));
    expect_violation(&mu, p, "frees a buffer another stream may still use");
    mutant_fini(&mu);

    /* ar's END never recorded: w_ar waits for nothing. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_RECORD, 1, ev(AR, CS_EV_END)));
    char num[32];
    snprintf(num, sizeof num, "\"%u\"", ev(AR, CS_EV_END));
    expect_violation(&mu, p, "waits for an event not recorded yet");
    expect_violation(&mu, p, num);
    mutant_fini(&mu);
    /* c0's START missing: no one waits for it, but its kernel now runs
     * outside its events. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_RECORD, 0, ev(C0, CS_EV_START)));
    expect_violation(&mu, p,
                     "runs outside its node's events (or twice): \"c0\"");
    mutant_fini(&mu);
    /* ar's START missing: its stream waits for an unrecorded event. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_RECORD, 0, ev(AR, CS_EV_START)));
    expect_violation(&mu, p, "waits for an event not recorded yet");
    mutant_fini(&mu);

    /* a allocated twice. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_ALLOC, 0, a);
        mut_insert(&mu, i, sp.ops[i]);
    }
    expect_violation(&mu, p, "allocates a live buffer: \"a\"");
    mutant_fini(&mu);

    /* y never freed. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_FREE, 0, y));
    expect_violation(&mu, p,
                     "buffer \"y\" is still allocated when the iteration "
                     "ends");
    mutant_fini(&mu);
    /* x freed twice. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_FREE, 0, x);
        mut_insert(&mu, i, sp.ops[i]);
    }
    expect_violation(&mu, p, "frees a buffer that is not live: \"x\"");
    mutant_fini(&mu);
    /* x freed before its last reader c1 runs. */
    mutant_init(&mu, &sp);
    mut_move_before(&mu, find1(&sp, CS_SOP_FREE, 0, x),
                    find1(&sp, CS_SOP_COMPUTE, 0, C1));
    expect_violation(&mu, p, "uses a freed buffer: \"x\"");
    mutant_fini(&mu);
    /* a's ALLOC dropped: c0 writes a buffer never allocated. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_ALLOC, 0, a));
    expect_violation(&mu, p, "uses a buffer never allocated: \"a\"");
    mutant_fini(&mu);

    /* Stream 1's tail not waited for: bar (nobody waits for it) runs
     * after the iteration's end event. Nothing on stream 1 is freed at
     * the end, so the end-event check is what fires. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + 1));
    expect_violation(&mu, p,
                     "stream 1 still runs work after the iteration's end "
                     "event");
    mutant_fini(&mu);
    /* Stream 2's tail: ag2 reads y, freed at the end. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_WAIT, 0, sp.ev_iter_end + 2));
    expect_violation(&mu, p, "frees a buffer another stream may still use");
    mutant_fini(&mu);

    /* c0's START recorded twice. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_RECORD, 0, ev(C0, CS_EV_START));
        mut_insert(&mu, i + 1, sp.ops[i]);
    }
    expect_violation(&mu, p, "the start event of \"c0\" is recorded 2 times");
    mutant_fini(&mu);
    /* ag's POST recorded twice. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_RECORD, 2, ev(AG, CS_EV_POST));
        mut_insert(&mu, i + 1, sp.ops[i]);
    }
    expect_violation(&mu, p, "the post event of \"ag\" is recorded 2 times");
    mutant_fini(&mu);
    /* The iteration's end recorded twice. */
    mutant_init(&mu, &sp);
    mut_insert(&mu, mu.m.n_ops, sp.ops[sp.n_ops - 1]);
    expect_violation(&mu, p, "the iteration's start or end event");
    mutant_fini(&mu);

    /* ar and bar (stream 1) swapped: each runs outside its own events
     * (test_verify_order_only moves whole issues to reach the order
     * check). */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_COLL, 1, AR),
               j = find1(&sp, CS_SOP_COLL, 1, BAR);
        cs_sop t = mu.m.ops[i];
        mu.m.ops[i] = mu.m.ops[j];
        mu.m.ops[j] = t;
    }
    expect_violation(&mu, p, "runs outside its node's events (or twice)");
    mutant_fini(&mu);
    /* ag and ag2 (stream 2) swapped: ag2 runs between ag's post and
     * end, outside its own events. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_COLL, 2, AG),
               j = find1(&sp, CS_SOP_COLL, 2, AG2);
        cs_sop t = mu.m.ops[i];
        mu.m.ops[i] = mu.m.ops[j];
        mu.m.ops[j] = t;
    }
    expect_violation(&mu, p,
                     "runs outside its node's events (or twice): \"ag2\"");
    mutant_fini(&mu);

    /* Malformed ops: a stream that does not exist, an unknown kind, a
     * record of no event. */
    mutant_init(&mu, &sp);
    mu.m.ops[3].stream = sp.n_streams;
    expect_violation(&mu, p, "names a stream that does not exist");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    mu.m.ops[3].kind = 200;
    expect_violation(&mu, p, "is of no known kind");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    mut_insert(&mu, 3, (cs_sop){CS_SOP_RECORD, 0, sp.n_events});
    expect_violation(&mu, p, "names something that does not exist: \"34\"");
    mutant_fini(&mu);
    /* Out-of-range operands of the other kinds: a buffer, a node, a
     * group. */
    mutant_init(&mu, &sp);
    mut_insert(&mu, 3, (cs_sop){CS_SOP_FREE, 0, f.g->n_buffers});
    expect_violation(&mu, p, "names something that does not exist");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    mut_insert(&mu, 3, (cs_sop){CS_SOP_COMPUTE, 0, f.p.n});
    expect_violation(&mu, p, "names something that does not exist");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    mut_insert(&mu, 3, (cs_sop){CS_SOP_BARRIER, 0, f.g->n_groups});
    expect_violation(&mu, p, "names something that does not exist");
    mutant_fini(&mu);

    /* Work dropped, duplicated or misplaced. */
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_COLL, 1, AR));
    expect_violation(&mu, p, "records a node's end before its work");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_COMPUTE, 0, C1);
        mut_insert(&mu, i + 1, sp.ops[i]);
    }
    expect_violation(&mu, p,
                     "runs outside its node's events (or twice): \"c1\"");
    mutant_fini(&mu);
    /* c1's kernel after its end record. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_COMPUTE, 0, C1);
        cs_sop t = mu.m.ops[i];
        mu.m.ops[i] = mu.m.ops[i + 1];
        mu.m.ops[i + 1] = t;
    }
    expect_violation(&mu, p, "records a node's end before its work");
    mutant_fini(&mu);
    /* ar's collective on the compute stream instead of its group's. */
    mutant_init(&mu, &sp);
    mu.m.ops[find1(&sp, CS_SOP_COLL, 1, AR)].stream = 0;
    expect_violation(&mu, p, "runs outside its node's events (or twice): "
                             "\"ar\"");
    mutant_fini(&mu);
    mutant_init(&mu, &sp);
    mut_delete(&mu, find1(&sp, CS_SOP_COMPUTE, 0, C1));
    expect_violation(&mu, p, "records a node's end before its work, or on "
                             "another stream: \"c1\"");
    mutant_fini(&mu);

    /* Every mutant was a copy: the program itself still verifies. */
    verify_ok(&sp, p);
    cs_sprog_fini(&sp);
    fixture_fini(&f);
}

/* Collectives that touch no counted buffer (a non-freeable input, token
 * outputs): swapping two of one stream is caught by the order check alone,
 * naming the first that comes back out of order. r1 0, r2 1, r3 2. */
static void test_verify_order_only(void **state)
{
    (void)state;
    fixture f;
    fixture_init(
        &f,
        HDR "\"groups\": [{\"name\": \"dp\", \"size\": 2}],"
        "\"inputs\": [{\"name\": \"p\", \"size\": 64}], \"nodes\": ["
        "{\"name\": \"r1\", \"kind\": \"collective\", \"op\": \"all_reduce\","
        " \"group\": \"dp\", \"inputs\": [\"p\"],"
        " \"outputs\": [{\"name\": \"t1\", \"size\": 0}]},"
        "{\"name\": \"r2\", \"kind\": \"collective\", \"op\": \"broadcast\","
        " \"group\": \"dp\", \"inputs\": [\"p\"],"
        " \"outputs\": [{\"name\": \"t2\", \"size\": 0}]},"
        "{\"name\": \"r3\", \"kind\": \"collective\", \"op\": \"all_reduce\","
        " \"group\": \"dp\", \"inputs\": [\"p\"],"
        " \"outputs\": [{\"name\": \"t3\", \"size\": 0}]}]}");
    const commsched_run_streams modes[] = {COMMSCHED_RUN_STREAMS_PER_GROUP,
                                           COMMSCHED_RUN_STREAMS_SINGLE};
    for (int m = 0; m < 2; m++) {
        cs_sprog sp;
        build(&sp, &f.p, modes[m], 0, 0, NULL);
        verify_ok(&sp, &f.p);
        /* Nothing to allocate: the head is the barrier and the start. */
        assert_int_equal(count(&sp, CS_SOP_ALLOC, ANY, ANY), 0);
        assert_op(&sp, 0, CS_SOP_BARRIER, 0, CS_SPROG_WORLD);
        assert_int_equal(sp.n_streams, 2);
        mutant mu;
        mutant_init(&mu, &sp);
        size_t i = find1(&sp, CS_SOP_COLL, 1, 0), j = find1(&sp, CS_SOP_COLL, 1, 1);
        cs_sop t = mu.m.ops[i];
        mu.m.ops[i] = mu.m.ops[j];
        mu.m.ops[j] = t;
        /* Each COLL now runs between the other's post and end. */
        expect_violation(&mu, &f.p,
                         "runs outside its node's events (or twice): "
                         "\"r2\"");
        mutant_fini(&mu);
        /* r3's whole issue (start on stream 0; wait, post, COLL, end on
         * stream 1: five operations) moved in front of r1's: every
         * bracket holds, only the order is wrong. */
        mutant_init(&mu, &sp);
        size_t r1 = find1(&sp, CS_SOP_RECORD, 0, ev(0, CS_EV_START)),
               r3 = find1(&sp, CS_SOP_RECORD, 0, ev(2, CS_EV_START));
        for (size_t k = 0; k < 5; k++)
            mut_move_before(&mu, r3 + k, r1 + k);
        expect_violation(&mu, &f.p,
                         "issues a collective out of the plan's order: "
                         "\"r1\"");
        mutant_fini(&mu);
        cs_sprog_fini(&sp);
    }
    fixture_fini(&f);
}

/* In calibrating mode the comm stream's barrier and the compute stream's
 * wait after each collective matter too. */
static void test_verify_mutations_calibrating(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, g_mixed);
    const cs_plan *p = &f.p;
    cs_sprog sp;
    build(&sp, p, COMMSCHED_RUN_STREAMS_PER_GROUP, 1, 1, NULL);
    verify_ok(&sp, p);
    mutant mu;
    /* Stream 0 waits for ar's END twice: right after the issue
     * (calibrating) and at w_ar. Without both, freeing a after w_ar races
     * with ar on stream 1. */
    assert_int_equal(count(&sp, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)), 2);
    mutant_init(&mu, &sp);
    mut_delete(&mu, find_from(&mu.m, 0, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)));
    mut_delete(&mu, find_from(&mu.m, 0, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)));
    /* --check's copy of the result is the first casualty. */
    expect_violation(&mu, p,
                     "may copy a result before the collective has finished: "
                     "\"ar\"");
    mutant_fini(&mu);
    /* The FILL of ar's output moved before its allocation. */
    uint32_t ao = f.p.coll[AR].recv;
    mutant_init(&mu, &sp);
    mut_move_before(&mu, find1(&sp, CS_SOP_FILL, 0, ao),
                    find1(&sp, CS_SOP_ALLOC, 0, ao));
    expect_violation(&mu, p, "uses a buffer never allocated: \"ao\"");
    mutant_fini(&mu);
    /* ... or after ar ran on it: its values would overwrite the result. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_FILL, 0, ao);
        cs_sop op = mu.m.ops[i];
        mut_delete(&mu, i);
        mut_insert(&mu, find_from(&mu.m, 0, CS_SOP_WAIT, 0, ev(AR, CS_EV_END)) + 1,
                   op);
    }
    expect_violation(&mu, p, "fills a buffer after a collective used it: "
                             "\"ao\"");
    mutant_fini(&mu);
    /* ... or after the event ar's stream waits for: the fill is then not
     * ordered before the collective on the other stream. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_FILL, 0, ao);
        cs_sop op = mu.m.ops[i];
        mut_delete(&mu, i);
        mut_insert(&mu, find_from(&mu.m, 0, CS_SOP_RECORD, 0,
                                  ev(AR, CS_EV_START)) + 1,
                   op);
    }
    expect_violation(&mu, p, "may run before --check has filled its buffers: "
                             "\"ar\"");
    mutant_fini(&mu);
    /* FETCH of ag2 moved after the end-of-iteration frees. */
    mutant_init(&mu, &sp);
    {
        size_t i = find1(&sp, CS_SOP_FETCH, 0, AG2);
        cs_sop op = mu.m.ops[i];
        mut_delete(&mu, i);
        mut_insert(&mu, mu.m.n_ops - 1, op);
    }
    expect_violation(&mu, p, "uses a freed buffer");
    mutant_fini(&mu);
    cs_sprog_fini(&sp);
    fixture_fini(&f);
}

/* ---- 7. the corpus ------------------------------------------------------------ */

static int n_programs;

/* Every combination of streams x check x calibrating for one plan, with
 * and without wait runtimes. */
static void verify_all_modes(const cs_plan *p, const char *path,
                             const char *which)
{
    const commsched_run_streams modes[] = {COMMSCHED_RUN_STREAMS_PER_GROUP,
                                           COMMSCHED_RUN_STREAMS_SINGLE};
    uint8_t *wr = calloc(p->n ? p->n : 1, 1);
    assert_non_null(wr);
    for (uint32_t v = 0; v < p->n; v++)
        wr[v] = p->g->nodes[v].kind == COMMSCHED_NODE_WAIT && (v % 2);
    for (int m = 0; m < 2; m++)
        for (int check = 0; check < 2; check++)
            for (int calib = 0; calib < 2; calib++) {
                cs_sprog sp;
                commsched_error err = {0};
                const uint8_t *w = (check ^ calib) ? wr : NULL;
                if (cs_sprog_build(&sp, p, modes[m], check, calib, w, &err) !=
                    COMMSCHED_OK)
                    fail_msg("%s (%s): build: %s", path, which, err.text);
                if (cs_sprog_verify(&sp, p, &err) != COMMSCHED_OK)
                    fail_msg("%s (%s, %s, check %d, calibrating %d): %s", path,
                             which, commsched_run_streams_str(modes[m]), check,
                             calib, err.text);
                /* Every node's start and end recorded exactly once. */
                assert_int_equal(sp.n_nodes, p->n);
                for (uint32_t v = 0; v < p->n; v += 1 + p->n / 64) {
                    assert_int_equal(
                        count(&sp, CS_SOP_RECORD, ANY, ev(v, CS_EV_START)), 1);
                }
                n_programs++;
                cs_sprog_fini(&sp);
            }
    free(wr);
}

static void corpus_file(const char *path)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    if (commsched_graph_load_file(path, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("%s: %s %s", path, err.path, err.text);
    cs_plan p;
    if (cs_plan_build(&p, g, NULL, 1.0, &err) != COMMSCHED_OK)
        fail_msg("%s: plan: %s", path, err.text);
    verify_all_modes(&p, path, "file order");
    cs_plan_fini(&p);

    /* The default pipeline's order (no rewriting pass: the result's graph
     * is a view of g with the same nodes). */
    commsched_result *r = NULL;
    if (commsched_optimize(g, NULL, &r, &err) != COMMSCHED_OK)
        fail_msg("%s: optimize: %s", path, err.text);
    const commsched_graph *rg = commsched_result_graph(r);
    assert_int_equal(commsched_result_node_count(r),
                     commsched_graph_node_count(g));
    if (cs_plan_build(&p, rg, commsched_result_order(r), 1.0, &err) !=
        COMMSCHED_OK)
        fail_msg("%s: optimized plan: %s", path, err.text);
    verify_all_modes(&p, path, "optimized");
    cs_plan_fini(&p);
    /* A second pipeline that moves more: sinking waits and raising
     * collectives as Inductor does. */
    commsched_optimize_options *o = NULL;
    assert_int_equal(commsched_optimize_options_create(&o, &err), COMMSCHED_OK);
    if (commsched_optimize_options_set(o, "passes",
                                       "reorder_compute_for_overlap,sink_waits,"
                                       "raise_comms",
                                       &err) == COMMSCHED_OK) {
        commsched_result *r2 = NULL;
        if (commsched_optimize(g, o, &r2, &err) != COMMSCHED_OK)
            fail_msg("%s: optimize (inductor passes): %s", path, err.text);
        if (cs_plan_build(&p, commsched_result_graph(r2),
                          commsched_result_order(r2), 1.0, &err) !=
            COMMSCHED_OK)
            fail_msg("%s: inductor plan: %s", path, err.text);
        verify_all_modes(&p, path, "inductor passes");
        cs_plan_fini(&p);
        commsched_result_destroy(r2);
    } else {
        fail_msg("passes: %s", err.text);
    }
    commsched_optimize_options_destroy(o);
    commsched_result_destroy(r);
    commsched_graph_destroy(g);
}

static char *copy_str(const char *s)
{
    size_t len = strlen(s) + 1;
    char *c = malloc(len);
    assert_non_null(c);
    memcpy(c, s, len);
    return c;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t ls = strlen(s), lf = strlen(suf);
    return ls >= lf && strcmp(s + ls - lf, suf) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_corpus(void **state)
{
    (void)state;
    /* Every hand-made example (the directory listing, so a new one is
     * covered), the imported ones and the generated transformer steps
     * (about 1.5 s in all in a Debug build). */
    static const char *const more[] = {
        "graphs/chakra/small_chakra.0.json",
        "graphs/astra/MLP_HybridParallel_Data_Model.json",
        "graphs/astra/Resnet50_DataParallel.json",
        "graphs/astra/Transformer_HybridParallel.json",
        "graphs/generated/llama3-8b-fsdp-fine-4L.json",
        "graphs/generated/llama3-8b-ddp.json",
        "graphs/generated/llama3-8b-fsdp.json",
        "graphs/generated/llama3-8b-tp.json",
        "graphs/generated/llama3-8b-tp-sp.json",
        "graphs/generated/mixtral-8x7b-moe.json",
        "graphs/generated/llama2-70b-fsdp.json",
        "graphs/generated/llama2-70b-fsdp-fine-8L.json",
        "graphs/generated/llama2-70b-2d-sp.json",
        "graphs/generated/gpt3-175b-fsdp.json"};
    enum { N_MORE = sizeof more / sizeof more[0], CAP = 64 };
    char *files[CAP];
    size_t n = 0;
    DIR *d = opendir("graphs/examples");
    if (!d)
        fail_msg("graphs/examples: not found (run from the repository root)");
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (has_suffix(e->d_name, ".json")) {
            if (n == CAP - N_MORE)
                fail_msg("more than %d examples: raise CAP", CAP - N_MORE);
            size_t len = strlen("graphs/examples/") + strlen(e->d_name) + 1;
            files[n] = malloc(len);
            assert_non_null(files[n]);
            snprintf(files[n], len, "graphs/examples/%s", e->d_name);
            n++;
        }
    closedir(d);
    assert_true(n >= 2);
    qsort(files, n, sizeof *files, cmp_str);
    for (size_t i = 0; i < N_MORE; i++)
        files[n++] = copy_str(more[i]);
    n_programs = 0;
    for (size_t i = 0; i < n; i++) {
        corpus_file(files[i]);
        free(files[i]);
    }
    /* 3 orders x 8 combinations per file. */
    assert_int_equal(n_programs, (int)(n * 3 * 8));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure_per_group),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_streams_single_and_concurrent),
        cmocka_unit_test(test_check_fill_fetch),
        cmocka_unit_test(test_check_shared_waits),
        cmocka_unit_test(test_calibrating),
        cmocka_unit_test(test_wait_runtime),
        cmocka_unit_test(test_verify_mutations),
        cmocka_unit_test(test_verify_order_only),
        cmocka_unit_test(test_verify_mutations_calibrating),
        cmocka_unit_test(test_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
