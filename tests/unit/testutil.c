/* commsched unit tests — shared helpers (see testutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "graph_internal.h"
#include "testutil.h"

/* ---- PRNG ------------------------------------------------------------- */

void tu_rng_seed(tu_rng *r, uint64_t seed)
{
    r->state = seed ^ 0x9e3779b97f4a7c15ull;
}

uint64_t tu_rng_next(tu_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t tu_rng_below(tu_rng *r, uint32_t n)
{
    assert_true(n > 0);
    return (uint32_t)(tu_rng_next(r) % n);
}

int tu_rng_chance(tu_rng *r, uint32_t percent)
{
    return tu_rng_below(r, 100) < percent;
}

tu_graph_opts tu_random_opts(uint32_t n_nodes)
{
    tu_graph_opts o;
    o.n_nodes = n_nodes;
    o.fake_percent = 10;
    o.after_percent = 10;
    o.no_in_place = 0;
    return o;
}

/* ---- random graphs ---------------------------------------------------- */

/* A buffer name with the root its alias chain ends at; for a pending
 * collective also the root it reads (`reads`). The generator keeps the
 * file order race-free (docs/FORMAT.md, "In-place writes"): nobody reads a
 * root that a collective still in flight writes in place, and no collective
 * writes a root in place while another one in flight reads it. */
typedef struct tu_name {
    char s[24];
    char root[24];
    char reads[24];
} tu_name;

typedef struct gen {
    tu_rng r;
    commsched_builder *b;
    const tu_graph_opts *o;
    tu_name *readable; /* buffers any node may read */
    size_t n_readable;
    tu_name *pending; /* async collective outputs still waiting for a wait */
    size_t n_pending;
    tu_name *wait_aliases;
    size_t n_wait_aliases;
    size_t cap; /* capacity of each of the three arrays */
    uint32_t n_nodes, n_bufs, n_groups;
    /* Sizes of the real buffers ("in<i>", "b<i>") and the groups, so a
     * collective's output fits its input (docs/FORMAT.md, "Collective
     * sizes"). */
    int64_t in_size[8], *b_size, group_size[4];
} gen;

static void push_root(gen *G, tu_name *arr, size_t *n, const char *s,
                      const char *root)
{
    assert_true(*n < G->cap);
    snprintf(arr[*n].s, sizeof arr[*n].s, "%s", s);
    snprintf(arr[*n].root, sizeof arr[*n].root, "%s", root);
    arr[*n].reads[0] = '\0';
    (*n)++;
}

static void push(gen *G, tu_name *arr, size_t *n, const char *s)
{
    push_root(G, arr, n, s, s);
}

/* The root of a name the generator handed out. */
static const char *root_of(const gen *G, const char *s)
{
    for (size_t k = 0; k < G->n_readable; k++)
        if (strcmp(G->readable[k].s, s) == 0)
            return G->readable[k].root;
    return s;
}

/* 1 when a pending collective writes `root` in place (mode 0) or reads it
 * (mode 1). */
static int pending_touches(const gen *G, const char *root, int reads)
{
    for (size_t k = 0; k < G->n_pending; k++) {
        const tu_name *p = &G->pending[k];
        if (reads ? strcmp(p->reads, root) == 0
                  : strcmp(p->root, p->s) != 0 && strcmp(p->root, root) == 0)
            return 1;
    }
    return 0;
}

/* A readable buffer whose root no in-flight collective writes, or NULL. */
static const char *pick_readable(gen *G)
{
    size_t n = G->n_readable;
    assert_true(n > 0);
    for (int tries = 0; tries < 8; tries++) {
        const tu_name *t =
            n > 16 && tu_rng_chance(&G->r, 70)
                ? &G->readable[n - 1 - tu_rng_below(&G->r, 16)]
                : &G->readable[tu_rng_below(&G->r, (uint32_t)n)];
        if (!pending_touches(G, t->root, 0))
            return t->s;
    }
    for (size_t k = n; k-- > 0;)
        if (!pending_touches(G, G->readable[k].root, 0))
            return G->readable[k].s;
    return NULL;
}

static int64_t random_size(gen *G)
{
    uint32_t c = tu_rng_below(&G->r, 100);
    if (c < 5)
        return 0;
    if (c < 35)
        return 1 + tu_rng_below(&G->r, 1000);
    return 1 + tu_rng_below(&G->r, 1u << 20);
}

static void new_buffer_name(gen *G, char *out, size_t size)
{
    snprintf(out, size, "b%u", G->n_bufs++);
}

static void maybe_estimates(gen *G, commsched_node_spec *s)
{
    s->runtime_ns = s->flops = s->bytes = -1.0;
    if (tu_rng_chance(&G->r, 50))
        s->runtime_ns = tu_rng_chance(&G->r, 50)
                            ? (double)tu_rng_below(&G->r, 200000)
                            : (double)tu_rng_below(&G->r, 200000) + 0.25;
    if (tu_rng_chance(&G->r, 30))
        s->flops = (double)tu_rng_below(&G->r, 1u << 30) * 64.0;
    if (tu_rng_chance(&G->r, 30))
        s->bytes = (double)tu_rng_below(&G->r, 1u << 24);
}

/* The size of a real buffer the generator named. */
static int64_t size_of(const gen *G, const char *root)
{
    unsigned long i = strtoul(root + (root[0] == 'i' ? 2 : 1), NULL, 10);
    return root[0] == 'i' ? G->in_size[i] : G->b_size[i];
}

static void add_node(gen *G, const commsched_node_spec *s)
{
    commsched_error err = {0};
    for (size_t k = 0; k < s->n_outputs; k++)
        if (!s->outputs[k].alias_of) {
            unsigned long i = strtoul(s->outputs[k].name + 1, NULL, 10);
            assert_true(i < G->cap * 3);
            G->b_size[i] = s->outputs[k].size;
        }
    commsched_status st = commsched_builder_add_node(G->b, s, &err);
    if (st != COMMSCHED_OK)
        fail_msg("add_node %s: %s: %s", s->name, err.path, err.text);
    G->n_nodes++;
}

static void gen_compute(gen *G)
{
    commsched_node_spec s;
    char name[24], outn[3][24];
    const char *in[4], *after[1], *fake[1];
    commsched_output_spec outs[3];
    memset(&s, 0, sizeof s);
    memset(outs, 0, sizeof outs);
    snprintf(name, sizeof name, "n%u", G->n_nodes);
    s.name = name;
    s.kind = COMMSCHED_NODE_COMPUTE;
    static const char *const ops[] = {"mm", "add", "layernorm", NULL};
    s.op = ops[tu_rng_below(&G->r, 4)];
    size_t n_in = 0;
    if (G->n_readable > 0) {
        size_t want = 1 + tu_rng_below(&G->r, 3);
        for (size_t k = 0; k < want; k++)
            if ((in[n_in] = pick_readable(G)) != NULL)
                n_in++;
        if (n_in > 0 && tu_rng_chance(&G->r, 5))
            in[n_in++] = in[0]; /* a repeated read */
    }
    s.inputs = in;
    s.n_inputs = n_in;
    size_t n_out = 0;
    size_t n_real = tu_rng_chance(&G->r, 5) ? 0 : 1 + tu_rng_below(&G->r, 2);
    for (size_t k = 0; k < n_real; k++) {
        new_buffer_name(G, outn[n_out], sizeof outn[n_out]);
        outs[n_out].name = outn[n_out];
        outs[n_out].size = random_size(G);
        n_out++;
    }
    char view_root[24] = "";
    if (n_in > 0 && tu_rng_chance(&G->r, 15)) {
        /* a view of something it reads */
        new_buffer_name(G, outn[n_out], sizeof outn[n_out]);
        outs[n_out].name = outn[n_out];
        outs[n_out].alias_of = in[tu_rng_below(&G->r, (uint32_t)n_in)];
        snprintf(view_root, sizeof view_root, "%s",
                 root_of(G, outs[n_out].alias_of));
        n_out++;
    } else if (n_real > 0 && tu_rng_chance(&G->r, 5)) {
        /* a view of its own output */
        new_buffer_name(G, outn[n_out], sizeof outn[n_out]);
        outs[n_out].name = outn[n_out];
        outs[n_out].alias_of = outn[0];
        n_out++;
    }
    s.outputs = outs;
    s.n_outputs = n_out;
    char an[24], fn[24];
    if (G->n_nodes > 0 && tu_rng_chance(&G->r, G->o->after_percent)) {
        snprintf(an, sizeof an, "n%u", tu_rng_below(&G->r, G->n_nodes));
        after[0] = an;
        s.after = after;
        s.n_after = 1;
    }
    if (G->n_nodes > 0 && tu_rng_chance(&G->r, G->o->fake_percent)) {
        snprintf(fn, sizeof fn, "n%u", tu_rng_below(&G->r, G->n_nodes));
        fake[0] = fn;
        s.after_fake = fake;
        s.n_after_fake = 1;
    }
    maybe_estimates(G, &s);
    s.gemm_like = tu_rng_chance(&G->r, 20);
    if (tu_rng_chance(&G->r, 20))
        s.dtype = (commsched_dtype)(1 + tu_rng_below(
                                            &G->r, COMMSCHED_DTYPE_COUNT - 1));
    add_node(G, &s);
    for (size_t k = 0; k < n_out; k++) {
        const char *root = outs[k].name;
        if (outs[k].alias_of)
            root = outs[k].alias_of == outn[0] ? outn[0] : view_root;
        push_root(G, G->readable, &G->n_readable, outs[k].name, root);
    }
}

static void gen_collective(gen *G, int sync)
{
    commsched_node_spec s;
    char name[24], group[24], outn[24];
    const char *in[1];
    commsched_output_spec out;
    memset(&s, 0, sizeof s);
    memset(&out, 0, sizeof out);
    snprintf(name, sizeof name, "n%u", G->n_nodes);
    uint32_t gi = tu_rng_below(&G->r, G->n_groups);
    snprintf(group, sizeof group, "pg%u", gi);
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    commsched_coll_op op =
        tu_rng_chance(&G->r, 40)
            ? COMMSCHED_COLL_ALL_REDUCE
            : (commsched_coll_op)tu_rng_below(&G->r, COMMSCHED_COLL_OP_COUNT);
    s.op = commsched_coll_op_str(op);
    s.group = group;
    s.is_sync = sync;
    in[0] = pick_readable(G);
    s.inputs = in;
    s.n_inputs = in[0] ? 1 : 0;
    new_buffer_name(G, outn, sizeof outn);
    out.name = outn;
    char in_root[24] = "";
    if (in[0])
        snprintf(in_root, sizeof in_root, "%s", root_of(G, in[0]));
    const char *root = outn;
    if (op == COMMSCHED_COLL_ALL_REDUCE && tu_rng_chance(&G->r, 50) && in[0] &&
        !G->o->no_in_place && !pending_touches(G, in_root, 1)) {
        out.alias_of = in[0]; /* in place */
        root = in_root;
    } else {
        /* Drawn whatever the op, so the rest of the graph stays what the
         * seed made it before sizes had to fit. */
        out.size = random_size(G);
        int64_t in_sz = in[0] ? size_of(G, in_root) : 0;
        int64_t k = G->group_size[gi];
        if (in_sz > 0 && op == COMMSCHED_COLL_ALL_GATHER)
            out.size = in_sz * k;
        else if (in_sz > 0 && op == COMMSCHED_COLL_REDUCE_SCATTER)
            out.size = in_sz % k == 0 ? in_sz / k : 0; /* 0: a token */
        else if (in_sz > 0 && op != COMMSCHED_COLL_SEND &&
                 op != COMMSCHED_COLL_RECV && op != COMMSCHED_COLL_BARRIER)
            out.size = in_sz;
    }
    s.outputs = &out;
    s.n_outputs = 1;
    if (tu_rng_chance(&G->r, 30))
        s.dtype = COMMSCHED_DTYPE_BFLOAT16;
    if (op == COMMSCHED_COLL_ALL_REDUCE && tu_rng_chance(&G->r, 50))
        s.reduce_op = COMMSCHED_REDUCE_SUM;
    maybe_estimates(G, &s);
    /* A collective's bytes say what it reads of its inputs (a view of a
     * larger buffer); the generator reads whole buffers. */
    s.bytes = -1.0;
    add_node(G, &s);
    if (sync) {
        push_root(G, G->readable, &G->n_readable, outn, root);
    } else {
        push_root(G, G->pending, &G->n_pending, outn, root);
        snprintf(G->pending[G->n_pending - 1].reads,
                 sizeof G->pending[0].reads, "%s", in_root);
    }
}

static void gen_wait(gen *G)
{
    size_t k = tu_rng_below(&G->r, (uint32_t)G->n_pending);
    tu_name coll = G->pending[k];
    G->pending[k] = G->pending[--G->n_pending];
    commsched_node_spec s;
    char name[24], outn[24];
    const char *in[1] = {coll.s};
    commsched_output_spec out;
    memset(&s, 0, sizeof s);
    memset(&out, 0, sizeof out);
    snprintf(name, sizeof name, "n%u", G->n_nodes);
    s.name = name;
    s.kind = COMMSCHED_NODE_WAIT;
    s.inputs = in;
    s.n_inputs = 1;
    new_buffer_name(G, outn, sizeof outn);
    out.name = outn;
    out.alias_of = coll.s;
    s.outputs = &out;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1.0;
    add_node(G, &s);
    push_root(G, G->readable, &G->n_readable, outn, coll.root);
    push(G, G->wait_aliases, &G->n_wait_aliases, outn);
}

static int already(const tu_name *names, size_t n, const char *s)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k].s, s) == 0)
            return 1;
    return 0;
}

commsched_graph *tu_random_graph(uint64_t seed, const tu_graph_opts *opts)
{
    gen G;
    commsched_error err = {0};
    char name[32];
    memset(&G, 0, sizeof G);
    tu_rng_seed(&G.r, seed);
    G.o = opts;
    G.cap = (size_t)opts->n_nodes * 4 + 64;
    G.readable = calloc(G.cap, sizeof *G.readable);
    G.pending = calloc(G.cap, sizeof *G.pending);
    G.wait_aliases = calloc(G.cap, sizeof *G.wait_aliases);
    G.b_size = calloc(G.cap * 3, sizeof *G.b_size);
    assert_non_null(G.b_size);
    assert_non_null(G.readable);
    assert_non_null(G.pending);
    assert_non_null(G.wait_aliases);
    snprintf(name, sizeof name, "random-%llu", (unsigned long long)seed);
    assert_int_equal(commsched_builder_create(name, &G.b, &err),
                     COMMSCHED_OK);

    G.n_groups = 1 + tu_rng_below(&G.r, 4);
    for (uint32_t i = 0; i < G.n_groups; i++) {
        char gn[24];
        int64_t size = 2 + tu_rng_below(&G.r, 15);
        int64_t hosts = tu_rng_chance(&G.r, 50) ? 0
                                                : 1 + tu_rng_below(
                                                          &G.r, (uint32_t)size);
        snprintf(gn, sizeof gn, "pg%u", i);
        G.group_size[i] = size;
        assert_int_equal(commsched_builder_add_group(G.b, gn, size, hosts, &err),
                         COMMSCHED_OK);
    }
    uint32_t n_inputs = 3 + tu_rng_below(&G.r, 6);
    for (uint32_t i = 0; i < n_inputs; i++) {
        char in[24];
        snprintf(in, sizeof in, "in%u", i);
        int freeable = tu_rng_chance(&G.r, 50);
        G.in_size[i] = random_size(&G);
        assert_int_equal(commsched_builder_add_input(G.b, in, G.in_size[i],
                                                     freeable, &err),
                         COMMSCHED_OK);
        if (i == 0 || !tu_rng_chance(&G.r, 20)) /* some inputs stay unread */
            push(&G, G.readable, &G.n_readable, in);
    }

    while (G.n_nodes < opts->n_nodes) {
        uint32_t c = tu_rng_below(&G.r, 100);
        if (G.n_pending > 0 && (c < 20 || G.n_pending > 6))
            gen_wait(&G);
        else if (c < 40)
            gen_collective(&G, 0);
        else if (c < 45)
            gen_collective(&G, 1);
        else
            gen_compute(&G);
    }
    while (G.n_pending > 0)
        gen_wait(&G);

    /* Graph outputs: a few readable buffers, usually a wait's alias. */
    tu_name chosen[8];
    size_t n_chosen = 0;
    if (G.n_wait_aliases > 0 && tu_rng_chance(&G.r, 80))
        push(&G, chosen, &n_chosen,
             G.wait_aliases[tu_rng_below(&G.r, (uint32_t)G.n_wait_aliases)].s);
    uint32_t want = 1 + tu_rng_below(&G.r, 4);
    for (uint32_t k = 0; k < want; k++) {
        const char *b = pick_readable(&G);
        if (b && !already(chosen, n_chosen, b))
            push(&G, chosen, &n_chosen, b);
    }
    for (size_t k = 0; k < n_chosen; k++)
        assert_int_equal(commsched_builder_add_output(G.b, chosen[k].s, &err),
                         COMMSCHED_OK);

    commsched_graph *g = NULL;
    commsched_status st = commsched_builder_finish(G.b, 0, &g, &err);
    if (st != COMMSCHED_OK)
        fail_msg("random graph (seed %llu) rejected: %s: %s: %s",
                 (unsigned long long)seed, commsched_status_name(st), err.path,
                 err.text);
    free(G.readable);
    free(G.pending);
    free(G.wait_aliases);
    free(G.b_size);
    return g;
}

/* ---- JSON ------------------------------------------------------------- */

commsched_graph *tu_graph_from_json(const char *json)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    commsched_status st = commsched_graph_load_string(json, 0, &g, &err);
    if (st != COMMSCHED_OK) {
        char buf[800];
        fail_msg("graph does not load: %s (%s)",
                 commsched_error_format(&err, "<json>", buf, sizeof buf),
                 commsched_status_name(st));
    }
    return g;
}

char *tu_graph_to_json(const commsched_graph *g, const uint32_t *order)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    commsched_error err = {0};
    commsched_status st = commsched_graph_save_stream(g, order, NULL, f, &err);
    assert_int_equal(fclose(f), 0);
    if (st != COMMSCHED_OK)
        fail_msg("save failed: %s", err.text);
    return text;
}

void tu_random_topo_order(const commsched_graph *g, uint64_t seed,
                          int with_fake, uint32_t *order)
{
    uint32_t n = g->n_nodes;
    uint32_t *indeg = calloc(n, sizeof *indeg);
    uint32_t *ready = malloc(n * sizeof *ready);
    assert_non_null(indeg);
    assert_non_null(ready);
    for (uint32_t v = 0; v < n; v++) {
        indeg[v] = CS_ROW_LEN(g->deps, v);
        if (with_fake)
            indeg[v] += CS_ROW_LEN(g->after_fake, v);
    }
    uint32_t n_ready = 0, k = 0;
    for (uint32_t v = 0; v < n; v++)
        if (indeg[v] == 0)
            ready[n_ready++] = v;
    tu_rng r;
    tu_rng_seed(&r, seed);
    while (n_ready > 0) {
        uint32_t i = tu_rng_below(&r, n_ready);
        uint32_t v = ready[i];
        ready[i] = ready[--n_ready];
        order[k++] = v;
        const cs_csr *rows[2] = {&g->users, with_fake ? &g->fake_users : NULL};
        for (int c = 0; c < 2; c++) {
            if (!rows[c])
                continue;
            for (uint32_t e = rows[c]->off[v]; e < rows[c]->off[v + 1]; e++)
                if (--indeg[rows[c]->idx[e]] == 0)
                    ready[n_ready++] = rows[c]->idx[e];
        }
    }
    assert_int_equal(k, n);
    free(indeg);
    free(ready);
}

uint32_t tu_node(const commsched_graph *g, const char *name)
{
    uint32_t v = commsched_graph_find_node(g, name);
    if (v == COMMSCHED_NONE)
        fail_msg("no node \"%s\"", name);
    return v;
}

uint32_t tu_buffer(const commsched_graph *g, const char *name)
{
    uint32_t b = commsched_graph_find_buffer(g, name);
    if (b == COMMSCHED_NONE)
        fail_msg("no buffer \"%s\"", name);
    return b;
}

double *tu_default_runtimes(const commsched_graph *g)
{
    commsched_error err = {0};
    uint32_t n = commsched_graph_node_count(g);
    double *rt = calloc(n ? n : 1, sizeof *rt);
    assert_non_null(rt);
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    assert_int_equal(commsched_cost_graph(g, &o, rt, NULL, &err), COMMSCHED_OK);
    return rt;
}

void tu_order_text(const commsched_graph *g, const commsched_schedule *s,
                   char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v)) {
        int w = snprintf(buf + len, size - len, "%s%s", len ? " " : "",
                         commsched_graph_node_name(g, v));
        if (w <= 0 || (size_t)w >= size - len)
            fail_msg("the order does not fit in %zu bytes", size);
        len += (size_t)w;
    }
}

void tu_expect_order(const commsched_graph *g, const commsched_schedule *s,
                     const char *want)
{
    char got[4096];
    tu_order_text(g, s, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("order\n  got:  %s\n  want: %s", got, want);
}
