/* commsched unit tests — the graph: JSON load/save round trips, builder vs
 * JSON, equality, the error struct, and the builder's validation errors. */
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

static void expect_equal(const commsched_graph *a, const commsched_graph *b)
{
    char why[256] = "";
    if (!commsched_graph_equal(a, b, why, sizeof why))
        fail_msg("graphs differ: %s", why);
}

static commsched_graph *reload(const commsched_graph *g, const uint32_t *order)
{
    char *text = tu_graph_to_json(g, order);
    commsched_graph *h = tu_graph_from_json(text);
    free(text);
    return h;
}

/* ---- round trips ------------------------------------------------------- */

static void test_graph_random_round_trip(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 25; seed++) {
        tu_graph_opts o = tu_random_opts(seed % 5 == 0 ? 400 : 120);
        o.fake_percent = 20;
        commsched_graph *g = tu_random_graph(seed, &o);
        char *t1 = tu_graph_to_json(g, NULL);
        commsched_graph *h = tu_graph_from_json(t1);
        expect_equal(g, h);
        expect_equal(h, g);
        /* derived data survives too */
        assert_int_equal(h->n_buffers, g->n_buffers);
        for (uint32_t b = 0; b < g->n_buffers; b++) {
            assert_int_equal(h->buffers[b].root, g->buffers[b].root);
            assert_int_equal(h->buffers[b].keep, g->buffers[b].keep);
        }
        /* and saving is deterministic */
        char *t2 = tu_graph_to_json(h, NULL);
        assert_string_equal(t1, t2);
        free(t1);
        free(t2);
        commsched_graph_destroy(h);
        commsched_graph_destroy(g);
    }
}

/* The generator makes every shape the other tests rely on. */
static void test_graph_random_generator_covers_features(void **state)
{
    (void)state;
    enum {
        FREEABLE_READ, FREEABLE_UNREAD, NONFREEABLE, ASYNC, SYNC, WAIT,
        INPLACE, VIEW, CHAIN3, UNREAD, OUT_WAIT_ALIAS, AFTER, FAKE,
        REPEAT, N_FEATURES
    };
    unsigned seen[N_FEATURES] = {0};
    for (uint64_t seed = 1; seed <= 10; seed++) {
        tu_graph_opts o = tu_random_opts(200);
        commsched_graph *g = tu_random_graph(seed, &o);
        assert_true(g->n_nodes >= 200);
        assert_true(g->n_groups >= 1);
        for (uint32_t b = 0; b < g->n_buffers; b++) {
            const cs_buffer *x = &g->buffers[b];
            uint32_t readers = CS_ROW_LEN(g->readers, x->root);
            if (x->is_input)
                seen[!x->freeable ? NONFREEABLE
                     : readers  ? FREEABLE_READ
                                : FREEABLE_UNREAD]++;
            if (x->alias_of == COMMSCHED_NONE && !x->is_input && !readers)
                seen[UNREAD]++;
            if (x->alias_of != COMMSCHED_NONE) {
                const cs_node *p = &g->nodes[x->producer];
                if (p->kind == COMMSCHED_NODE_COMPUTE)
                    seen[VIEW]++;
                if (p->kind == COMMSCHED_NODE_COLLECTIVE)
                    seen[INPLACE]++;
                uint32_t depth = 0;
                for (uint32_t c = b; g->buffers[c].alias_of != COMMSCHED_NONE;
                     c = g->buffers[c].alias_of)
                    depth++;
                if (depth >= 3)
                    seen[CHAIN3]++;
            }
        }
        for (uint32_t i = 0; i < g->n_outputs; i++) {
            uint32_t p = g->buffers[g->outputs[i]].producer;
            if (p != COMMSCHED_NONE && g->nodes[p].kind == COMMSCHED_NODE_WAIT)
                seen[OUT_WAIT_ALIAS]++;
        }
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            const cs_node *n = &g->nodes[v];
            if (n->kind == COMMSCHED_NODE_COLLECTIVE)
                seen[n->is_sync ? SYNC : ASYNC]++;
            if (n->kind == COMMSCHED_NODE_WAIT) {
                /* a wait's output aliases what it completes */
                assert_int_equal(n->n_out, 1);
                assert_int_equal(g->buffers[n->out_first].alias_of,
                                 CS_ROW_BEGIN(g->reads, v)[0]);
                seen[WAIT]++;
            }
            seen[AFTER] += CS_ROW_LEN(g->after, v);
            seen[FAKE] += CS_ROW_LEN(g->after_fake, v);
            const uint32_t *in = CS_ROW_BEGIN(g->reads, v);
            for (uint32_t a = 0; a < CS_ROW_LEN(g->reads, v); a++)
                for (uint32_t c = 0; c < a; c++)
                    seen[REPEAT] += in[a] == in[c];
        }
        commsched_graph_destroy(g);
    }
    for (int f = 0; f < N_FEATURES; f++)
        if (seen[f] == 0)
            fail_msg("feature %d never generated", f);
    assert_int_equal(seen[ASYNC], seen[WAIT]);
}

/* Every field of format v1. */
static const char every_field[] =
    "{\"format\": \"commsched-graph\", \"version\": 1, \"name\": "
    "\"every-field\",\n"
    " \"groups\": [{\"name\": \"dp\", \"size\": 8, \"hosts\": 2}, {\"name\": "
    "\"tp\", \"size\": 4}],\n"
    " \"inputs\": [{\"name\": \"w0\", \"size\": 1048576, \"freeable\": false},"
    " {\"name\": \"x\", \"size\": 4096, \"freeable\": true},"
    " {\"name\": \"unused\", \"size\": 0}],\n"
    " \"outputs\": [\"loss\", \"g_done\"],\n"
    " \"schedule\": {\"passes\": [\"none\"]},\n"
    " \"metadata\": {\"source\": \"hand\"},\n"
    " \"nodes\": [\n"
    "  {\"name\": \"ag0\", \"kind\": \"collective\", \"op\": \"all_gather\", "
    "\"group\": \"dp\", \"dtype\": \"bfloat16\", \"inputs\": [\"w0\"], "
    "\"outputs\": [{\"name\": \"ag0_out\", \"size\": 8388608}], "
    "\"runtime_ns\": 120000},\n"
    "  {\"name\": \"sync_a2a\", \"kind\": \"collective\", \"op\": "
    "\"all_to_all\", \"group\": \"tp\", \"async\": false, \"inputs\": [\"x\"], "
    "\"outputs\": [{\"name\": \"a2a_out\", \"size\": 4096}], \"bytes\": 4096},\n"
    "  {\"name\": \"ag0_wait\", \"kind\": \"wait\", \"inputs\": [\"ag0_out\"], "
    "\"outputs\": [{\"name\": \"w0_full\", \"alias_of\": \"ag0_out\"}]},\n"
    "  {\"name\": \"mm0\", \"kind\": \"compute\", \"op\": \"mm\", "
    "\"gemm_like\": true, \"inputs\": [\"a2a_out\", \"w0_full\"], "
    "\"outputs\": [{\"name\": \"y0\", \"size\": 4194304}, {\"name\": "
    "\"y0_view\", \"alias_of\": \"y0\", \"from\": []}], \"flops\": "
    "68719476736, "
    "\"after\": [\"sync_a2a\"], \"after_fake\": [\"ag0\"]},\n"
    "  {\"name\": \"loss_fn\", \"kind\": \"compute\", \"op\": "
    "\"cross_entropy\", \"inputs\": [\"y0_view\", \"x\"], \"outputs\": "
    "[{\"name\": \"loss\", \"size\": 4, \"from\": [\"y0_view\"]}], "
    "\"runtime_ns\": 1500.5, "
    "\"bytes\": 123.25},\n"
    "  {\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\", "
    "\"group\": \"dp\", \"dtype\": \"float32\", \"reduce_op\": \"avg\", "
    "\"inputs\": [\"y0\"], \"outputs\": [{\"name\": \"g\", \"alias_of\": "
    "\"y0\"}], \"after_fake\": [\"loss_fn\"]},\n"
    "  {\"name\": \"ar_wait\", \"kind\": \"wait\", \"op\": \"wait_tensor\", "
    "\"inputs\": [\"g\"], \"outputs\": [{\"name\": \"g_done\", \"alias_of\": "
    "\"g\"}], \"after\": [\"loss_fn\"]}\n"
    " ]}\n";

static void check_every_field(const commsched_graph *g)
{
    assert_string_equal(commsched_graph_name(g), "every-field");
    assert_int_equal(commsched_graph_node_count(g), 7);
    assert_int_equal(commsched_graph_buffer_count(g), 11);
    assert_int_equal(commsched_graph_group_count(g), 2);
    assert_int_equal(g->groups[0].hosts, 2);
    assert_int_equal(g->groups[1].hosts, 0);
    assert_int_equal(g->groups[1].size, 4);
    uint32_t sync = tu_node(g, "sync_a2a"), ag = tu_node(g, "ag0");
    assert_int_equal(sync, 1);
    assert_int_equal(commsched_graph_node_kind(g, sync),
                     COMMSCHED_NODE_COLLECTIVE);
    assert_int_equal(commsched_graph_node_kind(g, tu_node(g, "ag0_wait")),
                     COMMSCHED_NODE_WAIT);
    assert_int_equal(g->nodes[sync].is_sync, 1);
    assert_int_equal(g->nodes[ag].is_sync, 0);
    assert_int_equal(g->nodes[ag].dtype, COMMSCHED_DTYPE_BFLOAT16);
    assert_int_equal(g->nodes[ag].coll_op, COMMSCHED_COLL_ALL_GATHER);
    assert_true(g->nodes[ag].runtime_ns == 120000.0);
    assert_true(g->nodes[ag].flops < 0);
    uint32_t ar = tu_node(g, "ar"), mm = tu_node(g, "mm0");
    assert_int_equal(g->nodes[ar].reduce_op, COMMSCHED_REDUCE_AVG);
    assert_int_equal(g->nodes[mm].gemm_like, 1);
    assert_true(g->nodes[mm].flops == 68719476736.0);
    uint32_t lf = tu_node(g, "loss_fn");
    assert_true(g->nodes[lf].runtime_ns == 1500.5);
    assert_true(g->nodes[lf].bytes == 123.25);
    assert_string_equal(g->nodes[tu_node(g, "ar_wait")].op, "wait_tensor");
    assert_int_equal(CS_ROW_LEN(g->after_fake, mm), 1);
    assert_int_equal(CS_ROW_BEGIN(g->after_fake, mm)[0], ag);
    /* aliases: g_done -> g -> y0, kept alive by the output g_done */
    uint32_t y0 = tu_buffer(g, "y0"), gd = tu_buffer(g, "g_done");
    assert_int_equal(g->buffers[gd].root, y0);
    assert_int_equal(g->buffers[tu_buffer(g, "g")].root, y0);
    assert_int_equal(g->buffers[tu_buffer(g, "y0_view")].root, y0);
    assert_true(g->buffers[y0].keep);
    assert_false(g->buffers[tu_buffer(g, "ag0_out")].keep);
    assert_true(g->buffers[tu_buffer(g, "x")].freeable);
    assert_false(g->buffers[tu_buffer(g, "w0")].freeable);
    /* readers of y0 through any alias: mm0 does not read it; loss_fn (via
     * y0_view), ar, ar_wait (via g) do */
    assert_int_equal(CS_ROW_LEN(g->readers, y0), 3);
    assert_int_equal(commsched_graph_find_node(g, "nope"), COMMSCHED_NONE);
    assert_int_equal(commsched_graph_find_buffer(g, "nope"), COMMSCHED_NONE);
    assert_string_equal(commsched_graph_buffer_name(g, gd), "g_done");
    /* from: loss is made from y0_view alone, y0_view from nothing; the
     * other outputs say nothing (from all their node's inputs) */
    uint32_t loss = tu_buffer(g, "loss"), view = tu_buffer(g, "y0_view");
    assert_true(g->buffers[loss].has_from);
    assert_int_equal(CS_ROW_LEN(g->from, loss), 1);
    assert_int_equal(CS_ROW_BEGIN(g->from, loss)[0], tu_buffer(g, "y0_view"));
    assert_true(g->buffers[view].has_from);
    assert_int_equal(CS_ROW_LEN(g->from, view), 0);
    assert_false(g->buffers[y0].has_from);
    assert_int_equal(CS_ROW_LEN(g->from, y0), 0);
}

static void test_graph_every_field_round_trip(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(every_field);
    check_every_field(g);
    commsched_graph *h = reload(g, NULL);
    check_every_field(h);
    expect_equal(g, h);
    commsched_graph_destroy(h);
    commsched_graph_destroy(g);
}

/* The same graph through the C API. */
static commsched_graph *every_field_builder(void)
{
    commsched_builder *b = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_builder_create("every-field", &b, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "dp", 8, 2, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "tp", 4, 0, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "w0", 1048576, 0, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "x", 4096, 1, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "unused", 0, 0, &err),
                     COMMSCHED_OK);
    /* outputs may be named before the nodes that make them */
    assert_int_equal(commsched_builder_add_output(b, "loss", &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_output(b, "g_done", &err),
                     COMMSCHED_OK);
    commsched_node_spec s;

#define RESET()                                                                \
    do {                                                                       \
        memset(&s, 0, sizeof s);                                               \
        s.runtime_ns = s.flops = s.bytes = -1.0;                               \
    } while (0)
#define ADD()                                                                  \
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK)

    const char *in_w0[] = {"w0"};
    commsched_output_spec o_ag[] = {{"ag0_out", 8388608, NULL}};
    RESET();
    s.name = "ag0";
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = "all_gather";
    s.group = "dp";
    s.dtype = COMMSCHED_DTYPE_BFLOAT16;
    s.inputs = in_w0;
    s.n_inputs = 1;
    s.outputs = o_ag;
    s.n_outputs = 1;
    s.runtime_ns = 120000;
    ADD();

    const char *in_x[] = {"x"};
    commsched_output_spec o_a2a[] = {{"a2a_out", 4096, NULL}};
    RESET();
    s.name = "sync_a2a";
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = "all_to_all";
    s.group = "tp";
    s.is_sync = 1;
    s.inputs = in_x;
    s.n_inputs = 1;
    s.outputs = o_a2a;
    s.n_outputs = 1;
    s.bytes = 4096;
    ADD();

    const char *in_ag[] = {"ag0_out"};
    commsched_output_spec o_w[] = {{"w0_full", 0, "ag0_out"}};
    RESET();
    s.name = "ag0_wait";
    s.kind = COMMSCHED_NODE_WAIT;
    s.inputs = in_ag;
    s.n_inputs = 1;
    s.outputs = o_w;
    s.n_outputs = 1;
    ADD();

    const char *in_mm[] = {"a2a_out", "w0_full"};
    const char *after_mm[] = {"sync_a2a"}, *fake_mm[] = {"ag0"};
    /* an alias's size is ignored */
    commsched_output_spec o_mm[] = {{"y0", 4194304, NULL},
                                    {"y0_view", 12345, "y0"}};
    RESET();
    s.name = "mm0";
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = "mm";
    s.gemm_like = 1;
    s.inputs = in_mm;
    s.n_inputs = 2;
    s.outputs = o_mm;
    s.n_outputs = 2;
    s.flops = 68719476736.0;
    s.after = after_mm;
    s.n_after = 1;
    s.after_fake = fake_mm;
    s.n_after_fake = 1;
    ADD();
    assert_int_equal(commsched_builder_set_output_from(b, 1, NULL, 0, &err),
                     COMMSCHED_OK);

    const char *in_lf[] = {"y0_view", "x"};
    commsched_output_spec o_lf[] = {{"loss", 4, NULL}};
    RESET();
    s.name = "loss_fn";
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = "cross_entropy";
    s.inputs = in_lf;
    s.n_inputs = 2;
    s.outputs = o_lf;
    s.n_outputs = 1;
    s.runtime_ns = 1500.5;
    s.bytes = 123.25;
    ADD();
    assert_int_equal(commsched_builder_set_output_from(b, 0, in_lf, 1, &err),
                     COMMSCHED_OK);

    const char *in_ar[] = {"y0"}, *fake_ar[] = {"loss_fn"};
    commsched_output_spec o_ar[] = {{"g", 0, "y0"}};
    RESET();
    s.name = "ar";
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = "all_reduce";
    s.group = "dp";
    s.dtype = COMMSCHED_DTYPE_FLOAT32;
    s.reduce_op = COMMSCHED_REDUCE_AVG;
    s.inputs = in_ar;
    s.n_inputs = 1;
    s.outputs = o_ar;
    s.n_outputs = 1;
    s.after_fake = fake_ar;
    s.n_after_fake = 1;
    ADD();

    const char *in_arw[] = {"g"}, *after_arw[] = {"loss_fn"};
    commsched_output_spec o_arw[] = {{"g_done", 0, "g"}};
    RESET();
    s.name = "ar_wait";
    s.kind = COMMSCHED_NODE_WAIT;
    s.op = "wait_tensor";
    s.inputs = in_arw;
    s.n_inputs = 1;
    s.outputs = o_arw;
    s.n_outputs = 1;
    s.after = after_arw;
    s.n_after = 1;
    ADD();
#undef RESET
#undef ADD

    commsched_graph *g = NULL;
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    return g;
}

static void test_graph_builder_matches_json(void **state)
{
    (void)state;
    commsched_graph *j = tu_graph_from_json(every_field);
    commsched_graph *b = every_field_builder();
    check_every_field(b);
    expect_equal(j, b);
    expect_equal(b, j);
    /* and the builder's graph saves to text that loads to the same */
    commsched_graph *h = reload(b, NULL);
    expect_equal(j, h);
    commsched_graph_destroy(h);
    commsched_graph_destroy(b);
    commsched_graph_destroy(j);
}

/* The builder accepts nothing the JSON loader would reject, so whatever
 * it builds can be saved and loaded back. */
static void test_graph_builder_rejects_what_json_cannot_hold(void **state)
{
    (void)state;
    commsched_builder *b = NULL;
    commsched_error err = {0};
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.runtime_ns = s.flops = s.bytes = -1.0;
    s.name = "c";
    s.kind = COMMSCHED_NODE_COMPUTE;

    /* "async": false exists only for collectives */
    assert_int_equal(commsched_builder_create("g", &b, &err), COMMSCHED_OK);
    s.is_sync = 1;
    assert_int_equal(commsched_builder_add_node(b, &s, &err),
                     COMMSCHED_ESCHEMA);
    assert_string_equal(err.path, "nodes[0].async");
    s.is_sync = 0;
    /* an empty op */
    commsched_error_clear(&err);
    s.op = "";
    assert_int_equal(commsched_builder_add_node(b, &s, &err),
                     COMMSCHED_ESCHEMA);
    assert_string_equal(err.path, "nodes[0].op");
    s.op = NULL;
    /* A builder that refused a call stays failed: finish must not return a
     * graph that silently lacks the refused node, even if later calls
     * succeed. It reports the first refusal's status. */
    commsched_error_clear(&err);
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    commsched_graph *g = NULL;
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err),
                     COMMSCHED_ESCHEMA);
    assert_null(g);
    assert_non_null(strstr(err.text, "earlier builder call failed"));
    /* a fresh builder with the same node works and round-trips */
    commsched_error_clear(&err);
    assert_int_equal(commsched_builder_create("g", &b, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    commsched_graph *h = reload(g, NULL);
    expect_equal(g, h);
    commsched_graph_destroy(h);
    commsched_graph_destroy(g);

    /* an empty graph name is no name (the format has no empty strings) */
    assert_int_equal(commsched_builder_create("", &b, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_node(b, &s, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_finish(b, 0, &g, &err), COMMSCHED_OK);
    assert_null(commsched_graph_name(g));
    h = reload(g, NULL);
    expect_equal(g, h);
    commsched_graph_destroy(h);
    commsched_graph_destroy(g);
}

/* Saving in a (topological) permutation reloads with that node order. */
static void test_graph_save_permuted_order(void **state)
{
    (void)state;
    for (uint64_t seed = 30; seed < 36; seed++) {
        tu_graph_opts o = tu_random_opts(150);
        o.fake_percent = 25;
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = g->n_nodes;
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        tu_random_topo_order(g, seed, 1, order);
        int identity = 1;
        for (uint32_t i = 0; i < n; i++)
            identity &= order[i] == i;
        assert_false(identity);
        commsched_graph *h = reload(g, order);
        assert_int_equal(h->n_nodes, n);
        for (uint32_t i = 0; i < n; i++)
            assert_string_equal(commsched_graph_node_name(h, i),
                                commsched_graph_node_name(g, order[i]));
        char why[128] = "";
        assert_int_equal(commsched_graph_equal(g, h, why, sizeof why), 0);
        assert_non_null(strstr(why, "names differ"));
        /* saving h in g's order restores g exactly */
        uint32_t *inv = malloc(n * sizeof *inv);
        assert_non_null(inv);
        for (uint32_t i = 0; i < n; i++)
            inv[order[i]] = i;
        commsched_graph *back = reload(h, inv);
        expect_equal(g, back);
        commsched_graph_destroy(back);
        free(inv);
        free(order);
        commsched_graph_destroy(h);
        commsched_graph_destroy(g);
    }
}

static void test_graph_save_schedule_object(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(every_field);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    commsched_error err = {0};
    assert_int_equal(commsched_graph_save_stream(
                         g, NULL, "{\"passes\": [\"sink_waits\"]}", f, &err),
                     COMMSCHED_OK);
    fclose(f);
    assert_non_null(strstr(text, "\"schedule\": {\"passes\":[\"sink_waits\"]}"));
    commsched_graph *h = tu_graph_from_json(text);
    expect_equal(g, h);
    commsched_graph_destroy(h);
    free(text);
    /* a schedule that is not a JSON object is refused */
    f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(commsched_graph_save_stream(g, NULL, "[1, 2]", f, &err),
                     COMMSCHED_EINVAL);
    commsched_error_clear(&err);
    assert_int_equal(commsched_graph_save_stream(g, NULL, "{oops", f, &err),
                     COMMSCHED_EINVAL);
    fclose(f);
    free(text);
    commsched_graph_destroy(g);
}

/* A schedule the caller writes itself: the same bytes as the same object
 * given as text, and the caller's failure is the save's. */
static commsched_status write_passes(FILE *out, void *ctx,
                                     commsched_error *err)
{
    (void)err;
    fputs(ctx, out);
    return COMMSCHED_OK;
}

static commsched_status write_fails(FILE *out, void *ctx, commsched_error *err)
{
    (void)out;
    (void)ctx;
    return commsched_error_set(err, COMMSCHED_EIO, NULL, "refused");
}

static void test_graph_save_schedule_writer(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(every_field);
    const char *sched = "{\"passes\":[\"sink_waits\"],\"n\":1.5}";
    char *text = NULL, *ref = NULL;
    size_t len = 0, ref_len = 0;
    commsched_error err = {0};
    FILE *f = open_memstream(&ref, &ref_len);
    assert_non_null(f);
    assert_int_equal(commsched_graph_save_stream(g, NULL, sched, f, &err),
                     COMMSCHED_OK);
    fclose(f);
    f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(commsched_graph_save_stream_with(
                         g, NULL, write_passes, (void *)sched, f, &err),
                     COMMSCHED_OK);
    fclose(f);
    assert_string_equal(text, ref);
    free(text);
    free(ref);
    /* no writer: no schedule, as with NULL text */
    f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(
        commsched_graph_save_stream_with(g, NULL, NULL, NULL, f, &err),
        COMMSCHED_OK);
    fclose(f);
    assert_null(strstr(text, "\"schedule\""));
    free(text);
    f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(
        commsched_graph_save_stream_with(g, NULL, write_fails, NULL, f, &err),
        COMMSCHED_EIO);
    assert_string_equal(err.text, "refused");
    fclose(f);
    free(text);
    commsched_graph_destroy(g);
}

/* ---- equality --------------------------------------------------------- */

/* Replaces the first occurrence of `from` in every_field. */
static char *mutate(const char *from, const char *to)
{
    const char *at = strstr(every_field, from);
    if (!at)
        fail_msg("\"%s\" not in the graph", from);
    size_t pre = (size_t)(at - every_field);
    size_t len = strlen(every_field) - strlen(from) + strlen(to) + 1;
    char *out = malloc(len);
    assert_non_null(out);
    memcpy(out, every_field, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

static void test_graph_equal_reports_differences(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *why;
    } cases[] = {
        {"\"every-field\"", "\"every-fielx\"", "graph names differ"},
        /* tp's size, not dp's: ag0 gathers w0 over dp's 8 ranks, and 16
         * would not fit its sizes (docs/FORMAT.md, "Collective sizes") */
        {"\"tp\", \"size\": 4}", "\"tp\", \"size\": 2}", "groups[1] differs"},
        {"\"hosts\": 2", "\"hosts\": 1", "groups[0] differs"},
        {"\"tp\", \"size\": 4}", "\"tp\", \"size\": 4}, {\"name\": \"pp\", "
                                 "\"size\": 2}",
         "group counts differ (2 vs 3)"},
        {"\"size\": 4096, \"freeable\": true", "\"size\": 4097, \"freeable\": "
                                               "true",
         "inputs[1] differs"},
        {"\"freeable\": true", "\"freeable\": false", "inputs[1] differs"},
        {"[\"loss\", \"g_done\"]", "[\"g_done\", \"loss\"]",
         "outputs[0] differs"},
        {"[\"loss\", \"g_done\"]", "[\"loss\"]", "output counts differ"},
        {"\"runtime_ns\": 120000", "\"runtime_ns\": 120001",
         "nodes[0] (\"ag0\"): estimates differ"},
        {"\"runtime_ns\": 1500.5", "\"flops\": 1500.5",
         "nodes[4] (\"loss_fn\"): estimates differ"},
        {"\"dtype\": \"bfloat16\", ", "", "nodes[0] (\"ag0\"): attributes "
                                          "differ"},
        {"\"group\": \"dp\", \"dtype\"", "\"group\": \"dp\", \"async\": false, "
                                       "\"dtype\"",
         "nodes[0] (\"ag0\"): attributes differ"},
        {"\"all_to_all\"", "\"broadcast\"", "nodes[1] (\"sync_a2a\"): "
                                           "attributes differ"},
        {"\"group\": \"tp\"", "\"group\": \"dp\"", "attributes differ"},
        {"\"gemm_like\": true, ", "", "nodes[3] (\"mm0\"): attributes differ"},
        {"\"reduce_op\": \"avg\"", "\"reduce_op\": \"sum\"",
         "nodes[5] (\"ar\"): attributes differ"},
        {"\"op\": \"wait_tensor\", ", "", "nodes[6] (\"ar_wait\"): "
                                          "attributes differ"},
        {"\"size\": 4194304", "\"size\": 4194305", "nodes[3].outputs[0] "
                                                   "differs"},
        {"\"name\": \"y0_view\", \"alias_of\": \"y0\"",
         "\"name\": \"y0_view\", \"size\": 8", "nodes[3].outputs[1] differs"},
        {"[\"y0_view\", \"x\"]", "[\"x\", \"y0_view\"]",
         "nodes[4] (\"loss_fn\"): inputs differ"},
        {"\"from\": [\"y0_view\"]", "\"from\": [\"x\"]",
         "nodes[4].outputs[0] differs"},
        {"\"from\": [\"y0_view\"]", "\"from\": [\"y0_view\", \"x\"]",
         "nodes[4].outputs[0] differs"},
        {", \"from\": [\"y0_view\"]", "", "nodes[4].outputs[0] differs"},
        {", \"from\": []", "", "nodes[3].outputs[1] differs"},
        {", \"after\": [\"sync_a2a\"]", "", "nodes[3] (\"mm0\"): after "
                                            "differs"},
        {"\"after_fake\": [\"ag0\"]", "\"after_fake\": [\"sync_a2a\"]",
         "nodes[3] (\"mm0\"): after_fake differs"},
        {"\"name\": \"ar_wait\"", "\"name\": \"ar_wait2\"",
         "nodes[6]: names differ"},
    };
    commsched_graph *g = tu_graph_from_json(every_field);
    char why[256];
    assert_int_equal(commsched_graph_equal(g, g, why, sizeof why), 1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *text = mutate(cases[k].from, cases[k].to);
        commsched_graph *h = tu_graph_from_json(text);
        why[0] = '\0';
        if (commsched_graph_equal(g, h, why, sizeof why) != 0)
            fail_msg("case %zu: graphs compare equal", k);
        if (!strstr(why, cases[k].why))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", k, why,
                     cases[k].why);
        /* symmetric, and why may be NULL */
        assert_int_equal(commsched_graph_equal(h, g, NULL, 0), 0);
        commsched_graph_destroy(h);
        free(text);
    }
    commsched_graph_destroy(g);
}

/* ---- status and error struct ------------------------------------------ */

static void test_graph_status_strings(void **state)
{
    (void)state;
    static const struct {
        commsched_status st;
        const char *name, *text;
    } all[] = {
#define XX(code, text) {COMMSCHED_##code, #code, text},
        COMMSCHED_STATUS_MAP(XX)
#undef XX
    };
    size_t n = sizeof all / sizeof all[0];
    assert_int_equal(n, 14);
    assert_int_equal(COMMSCHED_OK, 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(all[i].st, (commsched_status)i);
        assert_string_equal(commsched_status_name(all[i].st), all[i].name);
        assert_string_equal(commsched_status_str(all[i].st), all[i].text);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(commsched_status_str(all[i].st),
                                    commsched_status_str(all[j].st));
    }
    assert_string_equal(commsched_status_str(COMMSCHED_ENOMEM),
                        "out of memory");
    assert_string_equal(commsched_status_name(COMMSCHED_ECYCLE), "ECYCLE");
    assert_string_equal(commsched_status_str((commsched_status)999),
                        "unknown status");
    assert_string_equal(commsched_status_name((commsched_status)999),
                        "UNKNOWN");
}

static void test_graph_error_first_wins(void **state)
{
    (void)state;
    commsched_error err;
    memset(&err, 0x5a, sizeof err);
    commsched_error_clear(&err);
    assert_int_equal(err.status, COMMSCHED_OK);
    assert_string_equal(err.path, "");
    assert_string_equal(err.text, "");
    assert_int_equal(commsched_error_set(&err, COMMSCHED_EGRAPH,
                                         "nodes[1].inputs[0]",
                                         "unknown buffer \"%s\"", "w9"),
                     COMMSCHED_EGRAPH);
    /* a later failure returns its own status but leaves err alone */
    assert_int_equal(commsched_error_set(&err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory"),
                     COMMSCHED_ENOMEM);
    assert_int_equal(err.status, COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[1].inputs[0]");
    assert_string_equal(err.text, "unknown buffer \"w9\"");
    assert_int_equal(err.line, 0);
    /* NULL err is allowed */
    assert_int_equal(commsched_error_set(NULL, COMMSCHED_EIO, NULL, "x"),
                     COMMSCHED_EIO);
    commsched_error_clear(NULL);
    commsched_error_clear(&err);
    assert_int_equal(commsched_error_set(&err, COMMSCHED_EIO, NULL, "x%d", 1),
                     COMMSCHED_EIO);
    assert_string_equal(err.text, "x1");
    assert_string_equal(err.path, "");

    /* through a real load: the first problem is reported, not a later one
     * (nodes[0] has an unknown input AND nodes[1] a duplicate name) */
    commsched_graph *g = NULL;
    commsched_error_clear(&err);
    assert_int_equal(commsched_graph_load_string(
                         HDR "\"nodes\": [{\"name\": \"a\", \"kind\": "
                             "\"compute\", \"inputs\": [\"zz\"]}, {\"name\": "
                             "\"a\", \"kind\": \"compute\"}]}",
                         0, &g, &err),
                     COMMSCHED_EGRAPH);
    assert_null(g);
    assert_string_equal(err.path, "nodes[1].name");
    /* duplicates are checked before references: the duplicate wins */
    assert_non_null(strstr(err.text, "duplicate node name \"a\""));
    /* a caller's earlier error is kept */
    assert_int_equal(commsched_graph_load_string("{", 0, &g, &err),
                     COMMSCHED_EPARSE);
    assert_string_equal(err.path, "nodes[1].name");
    assert_int_equal(err.status, COMMSCHED_EGRAPH);
}

static void test_graph_error_format(void **state)
{
    (void)state;
    commsched_error err = {0};
    char buf[600];
    assert_string_equal(commsched_error_format(&err, "f.json", buf, sizeof buf),
                        "f.json: no error");
    assert_string_equal(commsched_error_format(NULL, NULL, buf, sizeof buf),
                        "no error");
    /* a JSON path */
    commsched_error_set(&err, COMMSCHED_EGRAPH, "nodes[12].inputs[1]",
                        "unknown buffer \"w9\"");
    assert_string_equal(commsched_error_format(&err, "f.json", buf, sizeof buf),
                        "f.json: nodes[12].inputs[1]: unknown buffer \"w9\"");
    assert_string_equal(commsched_error_format(&err, NULL, buf, sizeof buf),
                        "nodes[12].inputs[1]: unknown buffer \"w9\"");
    /* no location */
    commsched_error_clear(&err);
    commsched_error_set(&err, COMMSCHED_ENOMEM, NULL, "out of memory");
    assert_string_equal(commsched_error_format(&err, "f.json", buf, sizeof buf),
                        "f.json: out of memory");
    assert_string_equal(commsched_error_format(&err, NULL, buf, sizeof buf),
                        "out of memory");
    /* line and column, from a real syntax error */
    commsched_graph *g = NULL;
    commsched_error_clear(&err);
    assert_int_equal(commsched_graph_load_string(
                         "{\"format\": \"commsched-graph\",\n  \"version\": }",
                         0, &g, &err),
                     COMMSCHED_EPARSE);
    assert_null(g);
    assert_int_equal(err.line, 2);
    assert_true(err.column > 0);
    assert_string_equal(err.path, "");
    char want[600];
    snprintf(want, sizeof want, "f.json:2:%d: %s", err.column, err.text);
    assert_string_equal(commsched_error_format(&err, "f.json", buf, sizeof buf),
                        want);
    snprintf(want, sizeof want, "<input>:2:%d: %s", err.column, err.text);
    assert_string_equal(commsched_error_format(&err, NULL, buf, sizeof buf),
                        want);
    /* a location on line 1, set by hand */
    commsched_error at1 = {0};
    commsched_error_set(&at1, COMMSCHED_EPARSE, NULL, "end of file expected");
    at1.line = 1;
    at1.column = 3;
    assert_string_equal(commsched_error_format(&at1, "g.json", buf, sizeof buf),
                        "g.json:1:3: end of file expected");
    /* truncation keeps the NUL; size 0 writes nothing */
    char small[8];
    assert_ptr_equal(commsched_error_format(&err, "f.json", small,
                                            sizeof small),
                     small);
    assert_string_equal(small, "f.json:");
    small[0] = 'Q';
    commsched_error_format(&err, "f.json", small, 0);
    assert_int_equal(small[0], 'Q');
    /* a file that does not exist */
    commsched_error_clear(&err);
    assert_int_equal(commsched_graph_load_file("/nonexistent/commsched.json",
                                               0, &g, &err),
                     COMMSCHED_EIO);
    assert_null(g);
}

/* ---- builder-level errors --------------------------------------------- */

/* A small builder session: nodes named n0.. with one output each (b0..)
 * reading the given buffers; returns finish's status. */
typedef struct nodedef {
    const char *name;
    const char *in[3];
    const char *out;
    const char *alias_of;
    const char *after;
} nodedef;

static commsched_status build(const nodedef *defs, size_t n, unsigned flags,
                              commsched_graph **out, commsched_error *err)
{
    commsched_builder *b = NULL;
    assert_int_equal(commsched_builder_create(NULL, &b, err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "in", 10, 1, err),
                     COMMSCHED_OK);
    for (size_t i = 0; i < n; i++) {
        commsched_node_spec s;
        commsched_output_spec o = {defs[i].out, 8, defs[i].alias_of};
        memset(&s, 0, sizeof s);
        s.runtime_ns = s.flops = s.bytes = -1.0;
        s.name = defs[i].name;
        s.kind = COMMSCHED_NODE_COMPUTE;
        size_t k = 0;
        while (k < 3 && defs[i].in[k])
            k++;
        s.inputs = defs[i].in;
        s.n_inputs = k;
        if (defs[i].out) {
            s.outputs = &o;
            s.n_outputs = 1;
        }
        if (defs[i].after) {
            s.after = &defs[i].after;
            s.n_after = 1;
        }
        commsched_status st = commsched_builder_add_node(b, &s, err);
        if (st != COMMSCHED_OK) {
            commsched_builder_destroy(b);
            return st;
        }
    }
    return commsched_builder_finish(b, flags, out, err);
}

static void test_graph_builder_errors(void **state)
{
    (void)state;
    commsched_graph *g = NULL;
    commsched_error err = {0};

    /* unknown buffer */
    const nodedef unknown[] = {{"n0", {"in"}, "b0", NULL, NULL},
                               {"n1", {"nope"}, "b1", NULL, NULL}};
    assert_int_equal(build(unknown, 2, 0, &g, &err), COMMSCHED_EGRAPH);
    assert_null(g);
    assert_string_equal(err.path, "nodes[1].inputs[0]");
    assert_string_equal(err.text, "unknown buffer \"nope\"");

    /* unknown node in after */
    commsched_error_clear(&err);
    const nodedef unknown_after[] = {{"n0", {"in"}, "b0", NULL, "ghost"}};
    assert_int_equal(build(unknown_after, 1, 0, &g, &err), COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[0].after[0]");
    assert_non_null(strstr(err.text, "unknown node \"ghost\""));

    /* duplicate node name */
    commsched_error_clear(&err);
    const nodedef dup[] = {{"n0", {"in"}, "b0", NULL, NULL},
                           {"n1", {"b0"}, "b1", NULL, NULL},
                           {"n0", {"b1"}, "b2", NULL, NULL}};
    assert_int_equal(build(dup, 3, 0, &g, &err), COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[2].name");
    assert_non_null(strstr(err.text, "duplicate node name \"n0\""));
    assert_non_null(strstr(err.text, "nodes[0]"));

    /* duplicate buffer name */
    commsched_error_clear(&err);
    const nodedef dupbuf[] = {{"n0", {"in"}, "in", NULL, NULL}};
    assert_int_equal(build(dupbuf, 1, 0, &g, &err), COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[0].outputs[0].name");
    assert_non_null(strstr(err.text, "first at inputs[0]"));

    /* not topological: n0 reads b1, which n1 (later) makes */
    commsched_error_clear(&err);
    const nodedef order[] = {{"n0", {"b1"}, "b0", NULL, NULL},
                             {"n1", {"in"}, "b1", NULL, NULL},
                             {"n2", {"b0"}, "b2", NULL, NULL}};
    assert_int_equal(build(order, 3, 0, &g, &err), COMMSCHED_EORDER);
    assert_null(g);
    assert_string_equal(err.path, "nodes[0].inputs[0]");
    assert_non_null(strstr(err.text, "\"n0\""));
    assert_non_null(strstr(err.text, "\"n1\""));

    /* ... which COMMSCHED_FINISH_TOPOSORT repairs */
    commsched_error_clear(&err);
    assert_int_equal(build(order, 3, COMMSCHED_FINISH_TOPOSORT, &g, &err),
                     COMMSCHED_OK);
    assert_non_null(g);
    assert_string_equal(commsched_graph_node_name(g, 0), "n1");
    assert_string_equal(commsched_graph_node_name(g, 1), "n0");
    assert_string_equal(commsched_graph_node_name(g, 2), "n2");
    commsched_schedule *s = NULL;
    assert_int_equal(commsched_schedule_create(g, NULL, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_schedule_check(s, 1, &err), COMMSCHED_OK);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);

    /* an `after` edge pointing forward is an order error too */
    commsched_error_clear(&err);
    const nodedef after_fwd[] = {{"n0", {"in"}, "b0", NULL, "n1"},
                                 {"n1", {"in"}, "b1", NULL, NULL}};
    assert_int_equal(build(after_fwd, 2, 0, &g, &err), COMMSCHED_EORDER);
    assert_string_equal(err.path, "nodes[0].after[0]");
    assert_non_null(strstr(err.text, "\"n1\""));

    /* a two-node cycle, with or without the repair flag */
    const nodedef cyc2[] = {{"n0", {"b1"}, "b0", NULL, NULL},
                            {"n1", {"b0"}, "b1", NULL, NULL}};
    for (unsigned flags = 0; flags <= COMMSCHED_FINISH_TOPOSORT; flags++) {
        commsched_error_clear(&err);
        assert_int_equal(build(cyc2, 2, flags, &g, &err), COMMSCHED_ECYCLE);
        assert_null(g);
        assert_non_null(
            strstr(err.text, "\"n0\" -> \"n1\" -> \"n0\""));
    }
    /* a three-node cycle through an `after` edge */
    commsched_error_clear(&err);
    const nodedef cyc3[] = {{"x", {"in"}, "bx", NULL, NULL},
                            {"n0", {"bx"}, "b0", NULL, "n2"},
                            {"n1", {"b0"}, "b1", NULL, NULL},
                            {"n2", {"b1"}, "b2", NULL, NULL}};
    assert_int_equal(build(cyc3, 4, COMMSCHED_FINISH_TOPOSORT, &g, &err),
                     COMMSCHED_ECYCLE);
    assert_string_equal(err.path, "nodes[1]");
    assert_non_null(strstr(err.text, "\"n0\" -> \"n1\" -> \"n2\" -> \"n0\""));

    /* a node reading its own output */
    commsched_error_clear(&err);
    const nodedef self[] = {{"n0", {"b0"}, "b0", NULL, NULL}};
    assert_int_equal(build(self, 1, 0, &g, &err), COMMSCHED_ECYCLE);
    assert_string_equal(err.path, "nodes[0].inputs[0]");
}

/* A builder with the inputs x and y (8 bytes each). */
static commsched_builder *xy_builder(void)
{
    commsched_builder *b = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_builder_create(NULL, &b, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "x", 8, 0, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_input(b, "y", 8, 0, &err),
                     COMMSCHED_OK);
    return b;
}

static commsched_node_spec compute_spec(const char *name,
                                        const char *const *inputs,
                                        size_t n_inputs,
                                        const commsched_output_spec *outputs,
                                        size_t n_outputs)
{
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.runtime_ns = s.flops = s.bytes = -1.0;
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.name = name;
    s.inputs = inputs;
    s.n_inputs = n_inputs;
    s.outputs = outputs;
    s.n_outputs = n_outputs;
    return s;
}

/* An output's from through the builder: the calls' own errors (each marks
 * the builder failed), finish's check that every name is one of the
 * node's inputs, and a repaired order keeping each output's list. */
static void test_graph_output_from(void **state)
{
    (void)state;
    commsched_builder *b = NULL;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    const char *x[] = {"x"}, *xy[] = {"x", "y"}, *empty[] = {""};
    const commsched_output_spec outs[] = {{"a", 8, NULL}, {"b", 8, NULL}},
                                o0 = {"b0", 8, NULL};
    commsched_node_spec f = compute_spec("f", xy, 2, outs, 2);
    const commsched_node_spec n0 = compute_spec("n0", x, 1, &o0, 1);

    /* the calls' own errors */
    const struct {
        int add_node;
        size_t output;
        const char *const *names;
        int twice;
        const char *path, *text;
    } bad[] = {
        {0, 0, x, 0, "nodes", "no node was added to give an output's "
                              "from to"},
        {1, 2, x, 0, "nodes[0].outputs", "node \"f\" has 2 outputs, no "
                                         "output 2"},
        {1, 1, empty, 0, "nodes[0].outputs[1].from[0]",
         "expected a non-empty name"},
        {1, 0, x, 1, "nodes[0].outputs[0].from",
         "the output's from is already given"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        commsched_error_clear(&err);
        b = xy_builder();
        if (bad[k].add_node)
            assert_int_equal(commsched_builder_add_node(b, &f, &err),
                             COMMSCHED_OK);
        if (bad[k].twice)
            assert_int_equal(commsched_builder_set_output_from(
                                 b, bad[k].output, bad[k].names, 1, &err),
                             COMMSCHED_OK);
        assert_int_equal(commsched_builder_set_output_from(
                             b, bad[k].output, bad[k].names, 1, &err),
                         COMMSCHED_ESCHEMA);
        assert_string_equal(err.path, bad[k].path);
        assert_string_equal(err.text, bad[k].text);
        /* the builder is marked failed */
        assert_int_equal(commsched_builder_finish(b, 0, &g, &err),
                         COMMSCHED_ESCHEMA);
        assert_null(g);
    }

    /* finish: a name that is not one of the node's inputs (an unknown
     * buffer, or one another node reads), located at the name */
    const char *unread[] = {"y", "b0"}, *unknown[] = {"zz"};
    const struct {
        const char *const *names;
        size_t n;
        const char *path, *text;
    } unresolved[] = {
        {unread, 2, "nodes[1].outputs[0].from[1]",
         "\"b0\" is not an input of node \"f\""},
        {unknown, 1, "nodes[1].outputs[0].from[0]",
         "\"zz\" is not an input of node \"f\""},
    };
    for (size_t k = 0; k < sizeof unresolved / sizeof unresolved[0]; k++) {
        commsched_error_clear(&err);
        b = xy_builder();
        assert_int_equal(commsched_builder_add_node(b, &n0, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_builder_add_node(b, &f, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_builder_set_output_from(
                             b, 0, unresolved[k].names, unresolved[k].n,
                             &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_builder_finish(b, 0, &g, &err),
                         COMMSCHED_EGRAPH);
        assert_null(g);
        assert_string_equal(err.path, unresolved[k].path);
        assert_string_equal(err.text, unresolved[k].text);
    }

    /* f (reading b0, made later) first: the repair moves it after n0 and
     * its outputs keep their lists, which save and load back */
    const char *in_f[] = {"x", "b0"}, *from_b[] = {"b0"};
    commsched_error_clear(&err);
    b = xy_builder();
    f.inputs = in_f;
    assert_int_equal(commsched_builder_add_node(b, &f, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_set_output_from(b, 1, from_b, 1, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_set_output_from(b, 0, x, 1, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_node(b, &n0, &err), COMMSCHED_OK);
    assert_int_equal(
        commsched_builder_finish(b, COMMSCHED_FINISH_TOPOSORT, &g, &err),
        COMMSCHED_OK);
    assert_string_equal(commsched_graph_node_name(g, 0), "n0");
    uint32_t a = tu_buffer(g, "a"), bb = tu_buffer(g, "b");
    assert_true(g->buffers[a].has_from && g->buffers[bb].has_from);
    assert_int_equal(CS_ROW_LEN(g->from, a), 1);
    assert_int_equal(CS_ROW_BEGIN(g->from, a)[0], tu_buffer(g, "x"));
    assert_int_equal(CS_ROW_LEN(g->from, bb), 1);
    assert_int_equal(CS_ROW_BEGIN(g->from, bb)[0], tu_buffer(g, "b0"));
    assert_false(g->buffers[tu_buffer(g, "b0")].has_from);
    char *text = tu_graph_to_json(g, NULL);
    assert_non_null(strstr(text, "{\"name\": \"a\", \"size\": 8, "
                                 "\"from\": [\"x\"]}"));
    assert_non_null(strstr(text, "{\"name\": \"b\", \"size\": 8, "
                                 "\"from\": [\"b0\"]}"));
    assert_non_null(strstr(text, "{\"name\": \"b0\", \"size\": 8}"));
    commsched_graph *h = tu_graph_from_json(text);
    expect_equal(g, h);
    char *again = tu_graph_to_json(h, NULL);
    assert_string_equal(text, again);
    free(again);
    free(text);
    commsched_graph_destroy(h);
    commsched_graph_destroy(g);
}

/* Alias chains: any length across nodes is fine; a cycle is not. */
static void test_graph_alias_chains(void **state)
{
    (void)state;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    /* in <- v0 <- v1 <- v2 <- v3: four views in four nodes */
    const nodedef chain[] = {{"n0", {"in"}, "v0", "in", NULL},
                             {"n1", {"v0"}, "v1", "v0", NULL},
                             {"n2", {"v1"}, "v2", "v1", NULL},
                             {"n3", {"v2"}, "v3", "v2", NULL},
                             {"n4", {"v3"}, "out", NULL, NULL}};
    assert_int_equal(build(chain, 5, 0, &g, &err), COMMSCHED_OK);
    uint32_t in = tu_buffer(g, "in");
    assert_int_equal(g->buffers[tu_buffer(g, "v3")].root, in);
    assert_int_equal(g->buffers[tu_buffer(g, "v2")].root, in);
    assert_int_equal(g->buffers[tu_buffer(g, "v0")].root, in);
    assert_int_equal(CS_ROW_LEN(g->readers, in), 5);
    assert_int_equal(CS_ROW_LEN(g->readers, tu_buffer(g, "v1")), 0);
    commsched_graph_destroy(g);

    /* the same chain in reverse node order, repaired by TOPOSORT */
    const nodedef rev[] = {{"n4", {"v3"}, "out", NULL, NULL},
                           {"n3", {"v2"}, "v3", "v2", NULL},
                           {"n2", {"v1"}, "v2", "v1", NULL},
                           {"n1", {"v0"}, "v1", "v0", NULL},
                           {"n0", {"in"}, "v0", "in", NULL}};
    assert_int_equal(build(rev, 5, COMMSCHED_FINISH_TOPOSORT, &g, &err),
                     COMMSCHED_OK);
    assert_string_equal(commsched_graph_node_name(g, 0), "n0");
    assert_int_equal(g->buffers[tu_buffer(g, "v3")].root, tu_buffer(g, "in"));
    commsched_graph_destroy(g);

    /* a cycle between two outputs of one node */
    assert_int_equal(
        commsched_graph_load_string(
            HDR "\"nodes\": [{\"name\": \"n\", \"kind\": \"compute\", "
                "\"outputs\": [{\"name\": \"p\", \"alias_of\": \"q\"}, "
                "{\"name\": \"q\", \"alias_of\": \"p\"}]}]}",
            0, &g, &err),
        COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[0].outputs[0].alias_of");
    assert_string_equal(err.text, "alias cycle \"p\" -> \"q\" -> \"p\"");
    /* a cycle across two nodes that read each other's views */
    commsched_error_clear(&err);
    const nodedef across[] = {{"n0", {"b"}, "a", "b", NULL},
                              {"n1", {"a"}, "b", "a", NULL}};
    assert_int_equal(build(across, 2, COMMSCHED_FINISH_TOPOSORT, &g, &err),
                     COMMSCHED_EGRAPH);
    assert_string_equal(err.path, "nodes[0].outputs[0].alias_of");
    assert_string_equal(err.text, "alias cycle \"a\" -> \"b\" -> \"a\"");
}

/* The loader checks types and names; errors carry the JSON path. */
static void test_graph_json_schema_errors(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        commsched_status st;
        const char *path;
    } cases[] = {
        {"[]", COMMSCHED_ESCHEMA, ""},
        {"{\"format\": \"other\", \"version\": 1, \"nodes\": []}",
         COMMSCHED_ESCHEMA, "format"},
        {HDR "\"nodes\": []}", COMMSCHED_EGRAPH, "nodes"},
        {"{\"format\": \"commsched-graph\", \"version\": 2, \"nodes\": []}",
         COMMSCHED_ESCHEMA, "version"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"runtime\": 5}]}",
         COMMSCHED_ESCHEMA, "nodes[0].runtime"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"async\": false}]}",
         COMMSCHED_ESCHEMA, "nodes[0].async"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"outputs\": [{\"name\": \"o\", \"size\": -1}]}]}",
         COMMSCHED_ESCHEMA, "nodes[0].outputs[0].size"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"collective\", "
             "\"op\": \"all_reduce\", \"group\": \"none\"}]}",
         COMMSCHED_EGRAPH, "nodes[0].group"},
        {HDR "\"groups\": [{\"name\": \"g\", \"size\": 2}], \"nodes\": ["
             "{\"name\": \"a\", \"kind\": \"compute\", \"outputs\": "
             "[{\"name\": \"x\", \"size\": 1}]},"
             "{\"name\": \"c\", \"kind\": \"collective\", \"op\": "
             "\"all_reduce\", \"group\": \"g\", \"inputs\": [\"x\"], "
             "\"outputs\": [{\"name\": \"y\", \"size\": 1}]},"
             "{\"name\": \"d\", \"kind\": \"compute\", \"inputs\": [\"y\"]}]}",
         COMMSCHED_EGRAPH, "nodes[2].inputs[0]"},
        {HDR "\"groups\": [{\"name\": \"g\", \"size\": 2, \"hosts\": 3}], "
             "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\"}]}",
         COMMSCHED_ESCHEMA, "groups[0].hosts"},
        {HDR "\"outputs\": [\"zz\"], \"nodes\": [{\"name\": \"a\", "
             "\"kind\": \"compute\"}]}",
         COMMSCHED_EGRAPH, "outputs[0]"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"outputs\": [{\"name\": \"o\", \"size\": 1, \"from\": "
             "\"x\"}]}]}",
         COMMSCHED_ESCHEMA, "nodes[0].outputs[0].from"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"outputs\": [{\"name\": \"o\", \"size\": 1, \"from\": "
             "[1]}]}]}",
         COMMSCHED_ESCHEMA, "nodes[0].outputs[0].from[0]"},
        {HDR "\"nodes\": [{\"name\": \"a\", \"kind\": \"compute\", "
             "\"outputs\": [{\"name\": \"o\", \"size\": 1, \"from\": "
             "[\"o\"]}]}]}",
         COMMSCHED_EGRAPH, "nodes[0].outputs[0].from[0]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        commsched_graph *g = (commsched_graph *)1;
        commsched_error err = {0};
        commsched_status st = commsched_graph_load_string(cases[k].json, 0,
                                                          &g, &err);
        if (st != cases[k].st || strcmp(err.path, cases[k].path) != 0)
            fail_msg("case %zu: got %s at \"%s\" (%s), want %s at \"%s\"", k,
                     commsched_status_name(st), err.path, err.text,
                     commsched_status_name(cases[k].st), cases[k].path);
        assert_null(g);
        assert_int_equal(err.status, st);
    }
}

/* A random graph saved in a shuffled, non-topological order loads only
 * with the repair flag, and the repaired order is topological. */
static void test_graph_toposort_repairs_random_graphs(void **state)
{
    (void)state;
    for (uint64_t seed = 40; seed < 44; seed++) {
        tu_graph_opts o = tu_random_opts(120);
        o.fake_percent = 25;
        /* The reversed file defines other buffer versions than the
         * generated order: with in-place writes the repair may be rejected
         * (test_graph_toposort_rejects_racing_repair). */
        o.no_in_place = 1;
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = g->n_nodes;
        uint32_t *rev = malloc(n * sizeof *rev);
        assert_non_null(rev);
        for (uint32_t i = 0; i < n; i++)
            rev[i] = n - 1 - i;
        char *text = tu_graph_to_json(g, rev);
        commsched_graph *h = NULL;
        commsched_error err = {0};
        assert_int_equal(commsched_graph_load_string(text, 0, &h, &err),
                         COMMSCHED_EORDER);
        assert_null(h);
        commsched_error_clear(&err);
        assert_int_equal(commsched_graph_load_string(
                             text, COMMSCHED_FINISH_TOPOSORT, &h, &err),
                         COMMSCHED_OK);
        assert_int_equal(h->n_nodes, n);
        /* topological, fake edges included */
        for (uint32_t v = 0; v < n; v++) {
            for (uint32_t k = h->deps.off[v]; k < h->deps.off[v + 1]; k++)
                assert_true(h->deps.idx[k] < v);
            for (uint32_t k = h->after_fake.off[v];
                 k < h->after_fake.off[v + 1]; k++)
                assert_true(h->after_fake.idx[k] < v);
        }
        /* the layout rule holds after the repair: inputs first, then the
         * outputs in node order (as if the repaired order had been read) */
        for (uint32_t b = h->n_inputs + 1; b < h->n_buffers; b++)
            assert_true(h->buffers[b - 1].producer <= h->buffers[b].producer);
        for (uint32_t v = 0; v + 1 < n; v++)
            assert_int_equal(h->nodes[v].out_first + h->nodes[v].n_out,
                             h->nodes[v + 1].out_first);
        commsched_graph *same = reload(h, NULL);
        for (uint32_t b = 0; b < h->n_buffers; b++)
            assert_string_equal(h->buffers[b].name, same->buffers[b].name);
        commsched_graph_destroy(same);
        /* the same graph: saved in g's node order it equals g */
        uint32_t *order = malloc(n * sizeof *order);
        assert_non_null(order);
        for (uint32_t i = 0; i < n; i++)
            order[i] = tu_node(h, commsched_graph_node_name(g, i));
        commsched_graph *back = reload(h, order);
        expect_equal(g, back);
        commsched_graph_destroy(back);
        commsched_graph_destroy(h);
        free(order);
        free(text);
        free(rev);
        commsched_graph_destroy(g);
    }
}

static void test_graph_name_tables(void **state)
{
    (void)state;
    assert_string_equal(commsched_node_kind_str(COMMSCHED_NODE_WAIT), "wait");
    assert_null(commsched_node_kind_str((commsched_node_kind)7));
    assert_string_equal(commsched_coll_op_str(COMMSCHED_COLL_REDUCE_SCATTER),
                        "reduce_scatter");
    assert_null(commsched_coll_op_str(COMMSCHED_COLL_OP_COUNT));
    assert_string_equal(commsched_dtype_str(COMMSCHED_DTYPE_BFLOAT16),
                        "bfloat16");
    assert_int_equal(commsched_dtype_size(COMMSCHED_DTYPE_BFLOAT16), 2);
    assert_int_equal(commsched_dtype_size(COMMSCHED_DTYPE_INT64), 8);
    assert_null(commsched_dtype_str(COMMSCHED_DTYPE_NONE));
    assert_int_equal(commsched_dtype_size(COMMSCHED_DTYPE_COUNT), 0);
    assert_string_equal(commsched_reduce_op_str(COMMSCHED_REDUCE_PREMUL_SUM),
                        "premul_sum");
    assert_null(commsched_reduce_op_str(COMMSCHED_REDUCE_NONE));
    commsched_graph_destroy(NULL);
    commsched_builder_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_random_round_trip),
        cmocka_unit_test(test_graph_random_generator_covers_features),
        cmocka_unit_test(test_graph_every_field_round_trip),
        cmocka_unit_test(test_graph_builder_matches_json),
        cmocka_unit_test(test_graph_builder_rejects_what_json_cannot_hold),
        cmocka_unit_test(test_graph_save_permuted_order),
        cmocka_unit_test(test_graph_save_schedule_object),
        cmocka_unit_test(test_graph_save_schedule_writer),
        cmocka_unit_test(test_graph_equal_reports_differences),
        cmocka_unit_test(test_graph_status_strings),
        cmocka_unit_test(test_graph_error_first_wins),
        cmocka_unit_test(test_graph_error_format),
        cmocka_unit_test(test_graph_builder_errors),
        cmocka_unit_test(test_graph_output_from),
        cmocka_unit_test(test_graph_alias_chains),
        cmocka_unit_test(test_graph_json_schema_errors),
        cmocka_unit_test(test_graph_toposort_repairs_random_graphs),
        cmocka_unit_test(test_graph_name_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
