/* commsched unit tests — the schedule list, differentially against a plain
 * array model, and its invariant check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/schedule.h"
#include "graph_internal.h"
#include "testutil.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

/* The model: the linked nodes in order, and which nodes are linked. */
typedef struct model {
    uint32_t *v;
    uint32_t len;
    uint8_t *in;
    uint32_t n;
} model;

static uint32_t model_find(const model *md, uint32_t node)
{
    for (uint32_t i = 0; i < md->len; i++)
        if (md->v[i] == node)
            return i;
    fail_msg("node %u not in the model", node);
    return 0;
}

static void model_remove_range(model *md, uint32_t i, uint32_t count)
{
    memmove(md->v + i, md->v + i + count,
            (md->len - i - count) * sizeof *md->v);
    md->len -= count;
}

static void model_insert_range(model *md, uint32_t i, const uint32_t *vals,
                               uint32_t count)
{
    memmove(md->v + i + count, md->v + i, (md->len - i) * sizeof *md->v);
    memcpy(md->v + i, vals, count * sizeof *vals);
    md->len += count;
}

/* Compares every walk and query of s with the model. */
static void compare(const commsched_schedule *s, const model *md,
                    uint32_t *scratch, unsigned step)
{
    commsched_error err = {0};
    if (md->len == 0) {
        assert_int_equal(commsched_schedule_first(s), COMMSCHED_NONE);
        assert_int_equal(commsched_schedule_last(s), COMMSCHED_NONE);
    } else {
        assert_int_equal(commsched_schedule_first(s), md->v[0]);
        assert_int_equal(commsched_schedule_last(s), md->v[md->len - 1]);
    }
    for (uint32_t i = 0; i < md->len; i++) {
        uint32_t want_next = i + 1 < md->len ? md->v[i + 1] : COMMSCHED_NONE;
        uint32_t want_prev = i > 0 ? md->v[i - 1] : COMMSCHED_NONE;
        if (commsched_schedule_next(s, md->v[i]) != want_next ||
            commsched_schedule_prev(s, md->v[i]) != want_prev)
            fail_msg("step %u: neighbours of %u (position %u) differ", step,
                     md->v[i], i);
    }
    /* backward walk from the end */
    uint32_t k = md->len;
    for (uint32_t v = commsched_schedule_last(s); v != COMMSCHED_NONE;
         v = commsched_schedule_prev(s, v)) {
        assert_true(k > 0);
        assert_int_equal(v, md->v[--k]);
    }
    assert_int_equal(k, 0);
    for (uint32_t v = 0; v < md->n; v++)
        assert_int_equal(commsched_schedule_contains(s, v), md->in[v]);
    assert_int_equal(commsched_schedule_contains(s, md->n), 0);
    assert_int_equal(commsched_schedule_contains(s, COMMSCHED_NONE), 0);
    commsched_status st = commsched_schedule_to_array(s, scratch, &err);
    if (md->len == md->n) {
        assert_int_equal(st, COMMSCHED_OK);
        assert_memory_equal(scratch, md->v, md->n * sizeof *scratch);
    } else {
        assert_int_equal(st, COMMSCHED_EINTERNAL);
    }
}

static void test_schedule_matches_array_model(void **state)
{
    (void)state;
    tu_graph_opts o = tu_random_opts(40);
    commsched_graph *g = tu_random_graph(77, &o);
    uint32_t n = commsched_graph_node_count(g);
    commsched_error err = {0};
    commsched_schedule *s = NULL;
    assert_int_equal(commsched_schedule_create(g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_ptr_equal(commsched_schedule_graph(s), g);
    model md;
    md.n = n;
    md.len = n;
    md.v = malloc(n * sizeof *md.v);
    md.in = malloc(n);
    uint32_t *scratch = malloc(n * sizeof *scratch);
    uint32_t *run = malloc(n * sizeof *run);
    assert_non_null(md.v);
    assert_non_null(md.in);
    assert_non_null(scratch);
    assert_non_null(run);
    for (uint32_t i = 0; i < n; i++) {
        md.v[i] = i;
        md.in[i] = 1;
    }
    compare(s, &md, scratch, 0);
    tu_rng r;
    tu_rng_seed(&r, 4242);
    unsigned counts[5] = {0};
    for (unsigned step = 1; step <= 6000; step++) {
        uint32_t op = tu_rng_below(&r, 5);
        uint32_t unlinked = n - md.len;
        /* keep the list between empty and full, mostly near full */
        if (op == 0 && (md.len == 0 || unlinked > n / 2))
            op = 1 + tu_rng_below(&r, 4);
        if ((op == 1 || op == 2) && unlinked == 0)
            op = 0;
        if ((op == 3 || op == 4) && md.len < 2)
            op = 1;
        if (op == 0) {
            uint32_t i = tu_rng_below(&r, md.len);
            uint32_t v = md.v[i];
            commsched_schedule_unlink(s, v);
            model_remove_range(&md, i, 1);
            md.in[v] = 0;
        } else if (op == 1 || op == 2) {
            /* pick an unlinked node */
            uint32_t pick = tu_rng_below(&r, unlinked), v = 0;
            for (v = 0; v < n; v++)
                if (!md.in[v] && pick-- == 0)
                    break;
            /* position: a linked node, or NONE */
            int at_none = md.len == 0 || tu_rng_chance(&r, 15);
            uint32_t i = at_none ? 0 : tu_rng_below(&r, md.len);
            uint32_t pos = at_none ? COMMSCHED_NONE : md.v[i];
            if (op == 1) {
                commsched_schedule_insert_before(s, v, pos);
                model_insert_range(&md, at_none ? md.len : i, &v, 1);
            } else {
                commsched_schedule_insert_after(s, v, pos);
                model_insert_range(&md, at_none ? 0 : i + 1, &v, 1);
            }
            md.in[v] = 1;
        } else {
            /* a run i..j and a position outside it */
            uint32_t i = tu_rng_below(&r, md.len);
            uint32_t j = i + tu_rng_below(&r, md.len - i);
            uint32_t count = j - i + 1;
            if (count == md.len)
                continue; /* nowhere to go but NONE; covered below */
            uint32_t first = md.v[i], last = md.v[j];
            uint32_t pos = COMMSCHED_NONE;
            if (!tu_rng_chance(&r, 15)) {
                uint32_t p = tu_rng_below(&r, md.len - count);
                pos = md.v[p < i ? p : p + count];
            }
            memcpy(run, md.v + i, count * sizeof *run);
            model_remove_range(&md, i, count);
            if (op == 3) {
                commsched_schedule_move_run_after(s, first, last, pos);
                uint32_t at = pos == COMMSCHED_NONE ? 0
                                                    : model_find(&md, pos) + 1;
                model_insert_range(&md, at, run, count);
            } else {
                commsched_schedule_move_run_before(s, first, last, pos);
                uint32_t at = pos == COMMSCHED_NONE ? md.len
                                                    : model_find(&md, pos);
                model_insert_range(&md, at, run, count);
            }
        }
        counts[op]++;
        compare(s, &md, scratch, step);
    }
    for (int k = 0; k < 5; k++)
        assert_true(counts[k] > 300);
    /* empty the list entirely, then rebuild it at the front */
    while (md.len > 0) {
        uint32_t v = md.v[0];
        commsched_schedule_unlink(s, v);
        model_remove_range(&md, 0, 1);
        md.in[v] = 0;
        compare(s, &md, scratch, 0);
    }
    for (uint32_t v = 0; v < n; v++) {
        commsched_schedule_insert_after(s, v, COMMSCHED_NONE);
        model_insert_range(&md, 0, &v, 1);
        md.in[v] = 1;
    }
    compare(s, &md, scratch, 0);
    /* a run of everything moved to the front/end is a no-op */
    commsched_schedule_move_run_after(s, md.v[0], md.v[n - 1],
                                      COMMSCHED_NONE);
    compare(s, &md, scratch, 0);
    commsched_schedule_move_run_before(s, md.v[0], md.v[n - 1],
                                       COMMSCHED_NONE);
    compare(s, &md, scratch, 0);
    free(run);
    free(scratch);
    free(md.v);
    free(md.in);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

static void test_schedule_clone_is_independent(void **state)
{
    (void)state;
    tu_graph_opts o = tu_random_opts(30);
    commsched_graph *g = tu_random_graph(5, &o);
    uint32_t n = commsched_graph_node_count(g);
    commsched_error err = {0};
    commsched_schedule *a = NULL, *b = NULL;
    assert_int_equal(commsched_schedule_create(g, NULL, &a, &err),
                     COMMSCHED_OK);
    commsched_schedule_move_run_after(a, 3, 5, 10);
    uint32_t *oa = malloc(n * sizeof *oa), *ob = malloc(n * sizeof *ob);
    assert_non_null(oa);
    assert_non_null(ob);
    assert_int_equal(commsched_schedule_clone(a, &b, &err), COMMSCHED_OK);
    assert_ptr_equal(commsched_schedule_graph(b), g);
    assert_int_equal(commsched_schedule_to_array(a, oa, &err), COMMSCHED_OK);
    assert_int_equal(commsched_schedule_to_array(b, ob, &err), COMMSCHED_OK);
    assert_memory_equal(oa, ob, n * sizeof *oa);
    /* 0 1 2 6 7 8 9 10 3 4 5 11 ... */
    assert_int_equal(oa[3], 6);
    assert_int_equal(oa[8], 3);
    /* changing the clone leaves the original alone, and the reverse */
    commsched_schedule_unlink(b, 0);
    commsched_schedule_insert_before(b, 0, COMMSCHED_NONE);
    assert_int_equal(commsched_schedule_first(a), 0);
    assert_int_equal(commsched_schedule_last(b), 0);
    assert_int_equal(commsched_schedule_first(b), 1);
    commsched_schedule_move_run_before(a, n - 2, n - 1, 1);
    assert_int_equal(commsched_schedule_next(a, 0), n - 2);
    assert_int_equal(commsched_schedule_next(b, 1), 2);
    assert_int_equal(commsched_schedule_to_array(b, ob, &err), COMMSCHED_OK);
    assert_int_equal(ob[n - 1], 0);
    commsched_schedule_destroy(b);
    commsched_schedule_destroy(a);
    commsched_schedule_destroy(NULL);
    free(oa);
    free(ob);
    commsched_graph_destroy(g);
}

static void test_schedule_create_with_order(void **state)
{
    (void)state;
    tu_graph_opts o = tu_random_opts(25);
    commsched_graph *g = tu_random_graph(9, &o);
    uint32_t n = commsched_graph_node_count(g);
    uint32_t *order = malloc(n * sizeof *order), *back = malloc(n * sizeof *back);
    assert_non_null(order);
    assert_non_null(back);
    commsched_error err = {0};
    commsched_schedule *s = NULL;
    /* any permutation is accepted (validity is commsched_schedule_check's
     * business): the reverse order */
    for (uint32_t i = 0; i < n; i++)
        order[i] = n - 1 - i;
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_schedule_to_array(s, back, &err), COMMSCHED_OK);
    assert_memory_equal(order, back, n * sizeof *order);
    assert_int_equal(commsched_schedule_first(s), n - 1);
    assert_int_equal(commsched_schedule_last(s), 0);
    commsched_schedule_destroy(s);

    /* a repeat is not a permutation */
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    order[n - 1] = 0;
    s = (commsched_schedule *)1;
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_EINVAL);
    assert_null(s);
    assert_int_equal(err.status, COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "not a permutation"));
    /* an index out of range neither */
    commsched_error_clear(&err);
    order[n - 1] = n;
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_EINVAL);
    assert_null(s);
    commsched_error_clear(&err);
    order[n - 1] = COMMSCHED_NONE;
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_EINVAL);
    assert_null(s);
    free(order);
    free(back);
    commsched_graph_destroy(g);
}

/* p -> x read by c (data edge); d after p (control edge); f after_fake c. */
static const char check_graph[] =
    HDR "\"nodes\": ["
        "{\"name\": \"p\", \"kind\": \"compute\", \"outputs\": [{\"name\": "
        "\"x\", \"size\": 4}]},"
        "{\"name\": \"c\", \"kind\": \"compute\", \"inputs\": [\"x\"]},"
        "{\"name\": \"d\", \"kind\": \"compute\", \"after\": [\"p\"]},"
        "{\"name\": \"f\", \"kind\": \"compute\", \"after_fake\": [\"c\"]}]}";

static commsched_status check_order(const commsched_graph *g,
                                    const uint32_t *order, int with_fake,
                                    commsched_error *err)
{
    commsched_schedule *s = NULL;
    assert_int_equal(commsched_schedule_create(g, order, &s, NULL),
                     COMMSCHED_OK);
    commsched_error_clear(err);
    commsched_status st = commsched_schedule_check(s, with_fake, err);
    commsched_schedule_destroy(s);
    return st;
}

static void test_schedule_check_detects_violations(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(check_graph);
    commsched_error err;
    /* indices: p 0, c 1, d 2, f 3 */
    static const uint32_t good[] = {0, 1, 2, 3};
    assert_int_equal(check_order(g, good, 1, &err), COMMSCHED_OK);
    static const uint32_t good2[] = {0, 2, 1, 3};
    assert_int_equal(check_order(g, good2, 1, &err), COMMSCHED_OK);

    /* data edge: c before p */
    static const uint32_t data[] = {1, 0, 2, 3};
    assert_int_equal(check_order(g, data, 0, &err), COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "\"c\""));
    assert_non_null(strstr(err.text, "\"p\""));
    assert_null(strstr(err.text, "fake"));

    /* control edge: d before p */
    static const uint32_t ctl[] = {2, 0, 1, 3};
    assert_int_equal(check_order(g, ctl, 0, &err), COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "\"d\""));
    assert_non_null(strstr(err.text, "\"p\""));

    /* fake edge: f before c, only with with_fake */
    static const uint32_t fake[] = {0, 3, 1, 2};
    assert_int_equal(check_order(g, fake, 0, &err), COMMSCHED_OK);
    assert_int_equal(check_order(g, fake, 1, &err), COMMSCHED_EORDER);
    assert_non_null(strstr(err.text, "fake dependency"));
    assert_non_null(strstr(err.text, "\"f\""));
    assert_non_null(strstr(err.text, "\"c\""));

    /* a broken list: a node missing */
    commsched_schedule *s = NULL;
    assert_int_equal(commsched_schedule_create(g, good, &s, NULL),
                     COMMSCHED_OK);
    commsched_schedule_unlink(s, 2);
    commsched_error_clear(&err);
    assert_int_equal(commsched_schedule_check(s, 0, &err),
                     COMMSCHED_EINTERNAL);
    assert_non_null(strstr(err.text, "3 of 4"));
    /* relinked at the end: whole again, and still valid */
    commsched_schedule_insert_before(s, 2, COMMSCHED_NONE);
    commsched_error_clear(&err);
    assert_int_equal(commsched_schedule_check(s, 1, &err), COMMSCHED_OK);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

/* On random graphs: the node order and every random topological order pass
 * the check; swapping a node with a dependency it has fails it. */
static void test_schedule_check_random_orders(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        tu_graph_opts o = tu_random_opts(150);
        o.fake_percent = 30;
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = commsched_graph_node_count(g);
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        commsched_error err;
        assert_int_equal(check_order(g, NULL, 1, &err), COMMSCHED_OK);
        tu_random_topo_order(g, seed, 1, order);
        assert_int_equal(check_order(g, order, 1, &err), COMMSCHED_OK);
        tu_random_topo_order(g, seed, 0, order);
        assert_int_equal(check_order(g, order, 0, &err), COMMSCHED_OK);
        /* move every 7th node that has a dependency to just before that
         * dependency: the check must fail, and every violated edge now
         * involves the moved node, so the message names it */
        unsigned swapped = 0;
        for (uint32_t v = 0; v < n; v += 7) {
            if (CS_ROW_LEN(g->deps, v) == 0)
                continue;
            uint32_t d = CS_ROW_BEGIN(g->deps, v)[0];
            uint32_t k = 0;
            for (uint32_t i = 0; i < n; i++) {
                if (i == d)
                    order[k++] = v;
                if (i != v)
                    order[k++] = i;
            }
            assert_int_equal(check_order(g, order, 0, &err), COMMSCHED_EORDER);
            char quoted[40];
            snprintf(quoted, sizeof quoted, "\"%s\"", g->nodes[v].name);
            assert_non_null(strstr(err.text, quoted));
            swapped++;
        }
        assert_true(swapped > 5);
        free(order);
        commsched_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_matches_array_model),
        cmocka_unit_test(test_schedule_clone_is_independent),
        cmocka_unit_test(test_schedule_create_with_order),
        cmocka_unit_test(test_schedule_check_detects_violations),
        cmocka_unit_test(test_schedule_check_random_orders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
