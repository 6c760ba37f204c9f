/* commsched — graph tables, accessors, equality and the CSR helpers.
 * Building and validation live in builder.c; JSON in graph_json.c. */
#include "graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- name tables ------------------------------------------------------ */

const char *commsched_node_kind_str(commsched_node_kind kind)
{
    switch (kind) {
    case COMMSCHED_NODE_COMPUTE: return "compute";
    case COMMSCHED_NODE_COLLECTIVE: return "collective";
    case COMMSCHED_NODE_WAIT: return "wait";
    }
    return NULL;
}

static const char *const coll_op_names[] = {
#define XX(code, text) text,
    COMMSCHED_COLL_OP_MAP(XX)
#undef XX
};

const char *commsched_coll_op_str(commsched_coll_op op)
{
    return (unsigned)op < COMMSCHED_COLL_OP_COUNT ? coll_op_names[op] : NULL;
}

static const struct {
    const char *name;
    unsigned size;
} dtype_table[] = {
    {NULL, 0},
#define XX(code, text, size) {text, size},
    COMMSCHED_DTYPE_MAP(XX)
#undef XX
};

const char *commsched_dtype_str(commsched_dtype dtype)
{
    return (unsigned)dtype < COMMSCHED_DTYPE_COUNT ? dtype_table[dtype].name
                                                   : NULL;
}

unsigned commsched_dtype_size(commsched_dtype dtype)
{
    return (unsigned)dtype < COMMSCHED_DTYPE_COUNT ? dtype_table[dtype].size
                                                   : 0;
}

static const char *const reduce_op_names[] = {
    NULL,
#define XX(code, text) text,
    COMMSCHED_REDUCE_OP_MAP(XX)
#undef XX
};

const char *commsched_reduce_op_str(commsched_reduce_op op)
{
    return (unsigned)op < COMMSCHED_REDUCE_OP_COUNT ? reduce_op_names[op]
                                                    : NULL;
}

/* ---- CSR ---------------------------------------------------------------- */

int cs_csr_from_pairs(cs_csr *out, uint32_t n, const uint32_t *rows,
                      const uint32_t *vals, size_t n_pairs)
{
    out->off = cs_calloc((size_t)n + 1, sizeof *out->off);
    out->idx = cs_malloc_array(n_pairs, sizeof *out->idx);
    if (!out->off || !out->idx) {
        cs_csr_free(out);
        return -1;
    }
    for (size_t k = 0; k < n_pairs; k++)
        out->off[rows[k] + 1]++;
    for (uint32_t r = 0; r < n; r++)
        out->off[r + 1] += out->off[r];
    uint32_t *fill = cs_malloc_array(n ? n : 1, sizeof *fill);
    if (!fill) {
        cs_csr_free(out);
        return -1;
    }
    memcpy(fill, out->off, (size_t)n * sizeof *fill);
    for (size_t k = 0; k < n_pairs; k++)
        out->idx[fill[rows[k]]++] = vals[k];
    free(fill);
    return 0;
}

int cs_csr_transpose(cs_csr *out, const cs_csr *in, uint32_t n_in,
                     uint32_t n_out)
{
    size_t m = in->off[n_in];
    out->off = cs_calloc((size_t)n_out + 1, sizeof *out->off);
    out->idx = cs_malloc_array(m, sizeof *out->idx);
    uint32_t *fill = cs_malloc_array(n_out ? n_out : 1, sizeof *fill);
    if (!out->off || !out->idx || !fill) {
        free(fill);
        cs_csr_free(out);
        return -1;
    }
    for (size_t k = 0; k < m; k++)
        out->off[in->idx[k] + 1]++;
    for (uint32_t r = 0; r < n_out; r++)
        out->off[r + 1] += out->off[r];
    memcpy(fill, out->off, (size_t)n_out * sizeof *fill);
    for (uint32_t r = 0; r < n_in; r++)
        for (uint32_t k = in->off[r]; k < in->off[r + 1]; k++)
            out->idx[fill[in->idx[k]]++] = r;
    free(fill);
    return 0;
}

void cs_csr_free(cs_csr *c)
{
    free(c->off);
    free(c->idx);
    c->off = c->idx = NULL;
}

/* ---- lifetime and accessors --------------------------------------------- */

void commsched_graph_destroy(commsched_graph *g)
{
    if (!g)
        return;
    free(g->groups);
    free(g->buffers);
    free(g->nodes);
    free(g->outputs);
    cs_strmap_fini(&g->group_by_name);
    cs_strmap_fini(&g->buffer_by_name);
    cs_strmap_fini(&g->node_by_name);
    cs_csr_free(&g->reads);
    cs_csr_free(&g->after);
    cs_csr_free(&g->after_fake);
    cs_csr_free(&g->from);
    cs_csr_free(&g->deps);
    cs_csr_free(&g->users);
    cs_csr_free(&g->derived);
    cs_csr_free(&g->fake_users);
    cs_csr_free(&g->readers);
    cs_arena_fini(&g->arena);
    free(g);
}

void cs_graph_view_init(commsched_graph *view, const commsched_graph *g)
{
    *view = *g;
    view->fake_borrowed = 1;
}

void cs_graph_view_release(commsched_graph *view)
{
    if (!view->fake_borrowed) {
        cs_csr_free(&view->after_fake);
        cs_csr_free(&view->fake_users);
    }
}

const char *commsched_graph_name(const commsched_graph *g) { return g->name; }
uint32_t commsched_graph_node_count(const commsched_graph *g)
{
    return g->n_nodes;
}
uint32_t commsched_graph_buffer_count(const commsched_graph *g)
{
    return g->n_buffers;
}
uint32_t commsched_graph_group_count(const commsched_graph *g)
{
    return g->n_groups;
}
const char *commsched_graph_node_name(const commsched_graph *g, uint32_t node)
{
    return g->nodes[node].name;
}
commsched_node_kind commsched_graph_node_kind(const commsched_graph *g,
                                              uint32_t node)
{
    return (commsched_node_kind)g->nodes[node].kind;
}
uint32_t commsched_graph_find_node(const commsched_graph *g, const char *name)
{
    return cs_strmap_get(&g->node_by_name, name);
}
uint32_t commsched_graph_find_buffer(const commsched_graph *g,
                                     const char *name)
{
    return cs_strmap_get(&g->buffer_by_name, name);
}
const char *commsched_graph_buffer_name(const commsched_graph *g,
                                        uint32_t buffer)
{
    return g->buffers[buffer].name;
}
uint32_t commsched_graph_input_count(const commsched_graph *g)
{
    return g->n_inputs;
}
uint32_t commsched_graph_output_count(const commsched_graph *g)
{
    return g->n_outputs;
}
const char *commsched_graph_group_name(const commsched_graph *g,
                                       uint32_t group)
{
    return g->groups[group].name;
}
uint32_t commsched_graph_group_size(const commsched_graph *g, uint32_t group)
{
    return g->groups[group].size;
}
int commsched_graph_node_collective(const commsched_graph *g, uint32_t node,
                                   commsched_coll_op *op, uint32_t *group)
{
    const cs_node *n = &g->nodes[node];
    if (n->kind != COMMSCHED_NODE_COLLECTIVE)
        return 0;
    if (op)
        *op = (commsched_coll_op)n->coll_op;
    if (group)
        *group = n->group;
    return 1;
}

uint32_t commsched_graph_node_derived_deps(const commsched_graph *g,
                                           uint32_t node,
                                           const uint32_t **deps)
{
    *deps = CS_ROW_BEGIN(g->derived, node);
    return CS_ROW_LEN(g->derived, node);
}

/* ---- equality ------------------------------------------------------------- */

static int str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Optional doubles: both absent, or equal. */
static int opt_eq(double a, double b)
{
    if (a < 0 || b < 0)
        return (a < 0) == (b < 0);
    return a == b;
}

/* Compares row r of two CSRs whose values are indices into name tables. */
static int row_names_eq(const cs_csr *ca, const cs_csr *cb, uint32_t r,
                        const char *(*name_a)(const commsched_graph *, uint32_t),
                        const commsched_graph *ga, const commsched_graph *gb)
{
    uint32_t la = CS_ROW_LEN(*ca, r), lb = CS_ROW_LEN(*cb, r);
    if (la != lb)
        return 0;
    const uint32_t *ra = CS_ROW_BEGIN(*ca, r), *rb = CS_ROW_BEGIN(*cb, r);
    for (uint32_t k = 0; k < la; k++)
        if (!str_eq(name_a(ga, ra[k]), name_a(gb, rb[k])))
            return 0;
    return 1;
}

#define DIFF(...)                                                              \
    do {                                                                       \
        if (why && why_size)                                                   \
            snprintf(why, why_size, __VA_ARGS__);                              \
        return 0;                                                              \
    } while (0)

static int buffer_eq(const commsched_graph *a, const commsched_graph *b,
                     uint32_t i, uint32_t j)
{
    const cs_buffer *x = &a->buffers[i], *y = &b->buffers[j];
    const char *ax = x->alias_of == COMMSCHED_NONE ? NULL
                                                   : a->buffers[x->alias_of].name;
    const char *ay = y->alias_of == COMMSCHED_NONE ? NULL
                                                   : b->buffers[y->alias_of].name;
    if (!str_eq(x->name, y->name) || x->size != y->size || !str_eq(ax, ay) ||
        x->is_input != y->is_input || x->freeable != y->freeable ||
        x->has_from != y->has_from)
        return 0;
    if (!x->has_from)
        return 1;
    uint32_t lx = CS_ROW_LEN(a->from, i), ly = CS_ROW_LEN(b->from, j);
    if (lx != ly)
        return 0;
    for (uint32_t k = 0; k < lx; k++)
        if (!str_eq(a->buffers[CS_ROW_BEGIN(a->from, i)[k]].name,
                    b->buffers[CS_ROW_BEGIN(b->from, j)[k]].name))
            return 0;
    return 1;
}

int commsched_graph_equal(const commsched_graph *a, const commsched_graph *b,
                          char *why, size_t why_size)
{
    if (!str_eq(a->name, b->name))
        DIFF("graph names differ");
    if (a->n_groups != b->n_groups)
        DIFF("group counts differ (%u vs %u)", a->n_groups, b->n_groups);
    for (uint32_t i = 0; i < a->n_groups; i++) {
        const cs_group *x = &a->groups[i], *y = &b->groups[i];
        if (!str_eq(x->name, y->name) || x->size != y->size ||
            x->hosts != y->hosts)
            DIFF("groups[%u] differs", i);
    }
    if (a->n_inputs != b->n_inputs)
        DIFF("input counts differ (%u vs %u)", a->n_inputs, b->n_inputs);
    for (uint32_t i = 0; i < a->n_inputs; i++)
        if (!buffer_eq(a, b, i, i))
            DIFF("inputs[%u] differs", i);
    if (a->n_outputs != b->n_outputs)
        DIFF("output counts differ (%u vs %u)", a->n_outputs, b->n_outputs);
    for (uint32_t i = 0; i < a->n_outputs; i++)
        if (!str_eq(a->buffers[a->outputs[i]].name,
                    b->buffers[b->outputs[i]].name))
            DIFF("outputs[%u] differs", i);
    if (a->n_nodes != b->n_nodes)
        DIFF("node counts differ (%u vs %u)", a->n_nodes, b->n_nodes);
    for (uint32_t i = 0; i < a->n_nodes; i++) {
        const cs_node *x = &a->nodes[i], *y = &b->nodes[i];
        const char *gx = x->group == COMMSCHED_NONE ? NULL
                                                    : a->groups[x->group].name;
        const char *gy = y->group == COMMSCHED_NONE ? NULL
                                                    : b->groups[y->group].name;
        if (!str_eq(x->name, y->name))
            DIFF("nodes[%u]: names differ (\"%s\" vs \"%s\")", i, x->name,
                 y->name);
        if (x->kind != y->kind || !str_eq(x->op, y->op) || !str_eq(gx, gy) ||
            x->is_sync != y->is_sync || x->gemm_like != y->gemm_like ||
            x->dtype != y->dtype || x->reduce_op != y->reduce_op)
            DIFF("nodes[%u] (\"%s\"): attributes differ", i, x->name);
        if (!opt_eq(x->runtime_ns, y->runtime_ns) ||
            !opt_eq(x->flops, y->flops) || !opt_eq(x->bytes, y->bytes))
            DIFF("nodes[%u] (\"%s\"): estimates differ", i, x->name);
        if (x->n_out != y->n_out)
            DIFF("nodes[%u] (\"%s\"): output counts differ", i, x->name);
        for (uint32_t k = 0; k < x->n_out; k++)
            if (!buffer_eq(a, b, x->out_first + k, y->out_first + k))
                DIFF("nodes[%u].outputs[%u] differs", i, k);
        if (!row_names_eq(&a->reads, &b->reads, i, commsched_graph_buffer_name,
                          a, b))
            DIFF("nodes[%u] (\"%s\"): inputs differ", i, x->name);
        if (!row_names_eq(&a->after, &b->after, i, commsched_graph_node_name,
                          a, b))
            DIFF("nodes[%u] (\"%s\"): after differs", i, x->name);
        if (!row_names_eq(&a->after_fake, &b->after_fake, i,
                          commsched_graph_node_name, a, b))
            DIFF("nodes[%u] (\"%s\"): after_fake differs", i, x->name);
    }
    return 1;
}
