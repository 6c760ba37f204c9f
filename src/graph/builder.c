/* commsched — the graph builder and the validation every graph goes through.
 *
 * The builder only records what it is given (copied into an arena); all
 * name resolution and the semantic checks happen in commsched_builder_finish
 * so that forward references can be told apart from unknown names. The JSON
 * loader is a thin layer over this file: it checks JSON types, then calls
 * the builder, so a compiler using the C API gets exactly the same checks
 * and the same JSON-path error locations ("nodes[3].inputs[1]").
 *
 * Checks run in a fixed order (groups, inputs, node names and outputs, node
 * references, aliases, the outputs' from, graph outputs, wait rules, order,
 * in-place write order) so that the first error reported for a given file
 * never changes. */
#include "analysis.h"
#include "graph_internal.h"
#include "graph_rules.h"
#include "utf8.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

typedef struct bgroup {
    const char *name;
    uint32_t size, hosts;
} bgroup;

typedef struct binput {
    const char *name;
    int64_t size;
    uint8_t freeable;
} binput;

typedef struct bout {
    const char *name;
    int64_t size;
    const char *alias_of;
    uint32_t from_first, n_from; /* its "from" names in refs */
    uint8_t has_from;            /* absent: from all the node's inputs */
} bout;

typedef struct bnode {
    const char *name, *op, *group;
    uint8_t kind, coll_op, is_sync, gemm_like, dtype, reduce_op;
    double runtime_ns, flops, bytes;
    uint32_t in_first, n_in, out_first, n_out;
    uint32_t after_first, n_after, fake_first, n_fake;
} bnode;

#define VEC(type, name)                                                        \
    type *name;                                                                \
    size_t n_##name, cap_##name

/* Distinct op texts remembered for reuse: a step has a handful of ops
 * ("mm", "wait_tensor", ...) over a million nodes. */
#define OP_CACHE 8

struct commsched_builder {
    cs_arena arena;   /* strings the graph keeps: names, ops */
    cs_arena scratch; /* names that only refer (inputs, after, after_fake,
                         group, alias_of, graph outputs): resolved by
                         finish, then freed with the builder */
    const char *ops[OP_CACHE]; /* recent op copies in arena */
    unsigned next_op;
    const char *name;
    VEC(bgroup, groups);
    VEC(binput, inputs);
    VEC(const char *, outputs);
    VEC(bnode, nodes);
    VEC(bout, outs);
    VEC(const char *, refs); /* names in inputs / after / after_fake and
                                the outputs' from */
    uint8_t any_from;        /* some output has a "from" */
    commsched_status failed; /* first failed add_* call, or OK */
};

#define PUSH(b, vec, err)                                                      \
    (cs_grow((void **)&(b)->vec, &(b)->cap_##vec, (b)->n_##vec + 1,            \
             sizeof *(b)->vec) == 0                                            \
         ? &(b)->vec[(b)->n_##vec++]                                           \
         : NULL)

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

/* Formats a JSON path into buf and records the error (first one wins). */
static commsched_status failf(commsched_error *err, commsched_status st,
                              const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static commsched_status failf(commsched_error *err, commsched_status st,
                              const char *path, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return commsched_error_set(err, st, path, "%s", text);
}

/* Every string the builder keeps must be UTF-8, as a loaded file's are:
 * otherwise the graph could not be saved (nor shown in a report). Sets an
 * ESCHEMA error at path and returns 1 when s is not; NULL is fine. */
/* 1, after failing with "not valid UTF-8" at the path fmt formats, when s
 * is not valid UTF-8. The path is formatted only then: formatting it for
 * every name was the largest cost of adding a node. */
static int bad_text(commsched_error *err, const char *s, const char *fmt,
                    ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int bad_text(commsched_error *err, const char *s, const char *fmt,
                    ...)
{
    if (!s || cs_utf8_valid(s))
        return 0;
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    failf(err, COMMSCHED_ESCHEMA, path, "not valid UTF-8");
    return 1;
}

commsched_status commsched_builder_create(const char *name,
                                          commsched_builder **out,
                                          commsched_error *err)
{
    *out = NULL;
    commsched_builder *b = cs_calloc(1, sizeof *b);
    if (!b)
        return oom(err);
    cs_arena_init(&b->arena);
    cs_arena_init(&b->scratch);
    if (bad_text(err, name, "name")) {
        commsched_builder_destroy(b);
        return COMMSCHED_ESCHEMA;
    }
    /* "" is no name: the format has no empty strings */
    if (name && name[0] && !(b->name = cs_arena_strdup(&b->arena, name))) {
        commsched_builder_destroy(b);
        return oom(err);
    }
    *out = b;
    return COMMSCHED_OK;
}


static int valid_name(const char *s) { return s && s[0] != '\0'; }


static commsched_status size_error(commsched_error *err, const char *path,
                                   int64_t size)
{
    if (size < 0)
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "size must be a non-negative integer, got %lld",
                     (long long)size);
    return failf(err, COMMSCHED_ESCHEMA, path,
                 "size %lld is beyond the format's limit of 2^53 bytes",
                 (long long)size);
}

static commsched_status add_group(commsched_builder *b, const char *name,
                                  int64_t size, int64_t hosts,
                                  commsched_error *err)
{
    char path[64];
    size_t i = b->n_groups;
    if (!valid_name(name)) {
        snprintf(path, sizeof path, "groups[%zu].name", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "a group needs a name");
    }
    if (bad_text(err, name, "groups[%zu].name", i))
        return COMMSCHED_ESCHEMA;
    if (size < 1 || size > COMMSCHED_MAX_GROUP_SIZE) {
        snprintf(path, sizeof path, "groups[%zu].size", i);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "group size must be an integer from 1 to %u, got %lld",
                     COMMSCHED_MAX_GROUP_SIZE, (long long)size);
    }
    if (hosts < 0 || hosts > size) {
        snprintf(path, sizeof path, "groups[%zu].hosts", i);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "hosts must be between 1 and the group size (%lld), got "
                     "%lld",
                     (long long)size, (long long)hosts);
    }
    bgroup *g = PUSH(b, groups, err);
    if (!g || !(g->name = cs_arena_strdup(&b->arena, name)))
        return oom(err);
    g->size = (uint32_t)size;
    g->hosts = (uint32_t)hosts;
    return COMMSCHED_OK;
}

commsched_status commsched_builder_add_group(commsched_builder *b,
                                             const char *name, int64_t size,
                                             int64_t hosts,
                                             commsched_error *err)
{
    size_t before = b->n_groups;
    commsched_status st = add_group(b, name, size, hosts, err);
    if (st != COMMSCHED_OK) {
        b->n_groups = before;
        b->failed = st;
    }
    return st;
}

static commsched_status add_input(commsched_builder *b, const char *name,
                                  int64_t size, int freeable,
                                  commsched_error *err)
{
    char path[64];
    size_t i = b->n_inputs;
    if (!valid_name(name)) {
        snprintf(path, sizeof path, "inputs[%zu].name", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "an input needs a name");
    }
    if (bad_text(err, name, "inputs[%zu].name", i))
        return COMMSCHED_ESCHEMA;
    if (size < 0 || size > COMMSCHED_MAX_SIZE) {
        snprintf(path, sizeof path, "inputs[%zu].size", i);
        return size_error(err, path, size);
    }
    binput *in = PUSH(b, inputs, err);
    if (!in || !(in->name = cs_arena_strdup(&b->arena, name)))
        return oom(err);
    in->size = size;
    in->freeable = freeable ? 1 : 0;
    return COMMSCHED_OK;
}

commsched_status commsched_builder_add_input(commsched_builder *b,
                                             const char *name, int64_t size,
                                             int freeable,
                                             commsched_error *err)
{
    size_t before = b->n_inputs;
    commsched_status st = add_input(b, name, size, freeable, err);
    if (st != COMMSCHED_OK) {
        b->n_inputs = before;
        b->failed = st;
    }
    return st;
}

static commsched_status add_output(commsched_builder *b, const char *buffer,
                                   commsched_error *err)
{
    char path[64];
    if (!valid_name(buffer)) {
        snprintf(path, sizeof path, "outputs[%zu]", b->n_outputs);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "a graph output must name a buffer");
    }
    if (bad_text(err, buffer, "outputs[%zu]", b->n_outputs))
        return COMMSCHED_ESCHEMA;
    const char **o = PUSH(b, outputs, err);
    if (!o || !(*o = cs_arena_strdup(&b->scratch, buffer)))
        return oom(err);
    return COMMSCHED_OK;
}

commsched_status commsched_builder_add_output(commsched_builder *b,
                                              const char *buffer,
                                              commsched_error *err)
{
    size_t before = b->n_outputs;
    commsched_status st = add_output(b, buffer, err);
    if (st != COMMSCHED_OK) {
        b->n_outputs = before;
        b->failed = st;
    }
    return st;
}

static commsched_status push_refs(commsched_builder *b, const char *const *names,
                                  size_t n, const char *field, size_t node,
                                  uint32_t *first, commsched_error *err)
{
    *first = (uint32_t)b->n_refs;
    for (size_t k = 0; k < n; k++) {
        if (!valid_name(names[k])) {
            char path[96];
            snprintf(path, sizeof path, "nodes[%zu].%s[%zu]", node, field, k);
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "expected a non-empty name");
        }
        if (bad_text(err, names[k], "nodes[%zu].%s[%zu]", node, field, k))
            return COMMSCHED_ESCHEMA;
        const char **r = PUSH(b, refs, err);
        if (!r || !(*r = cs_arena_strdup(&b->scratch, names[k])))
            return oom(err);
    }
    return COMMSCHED_OK;
}

static int lookup_coll_op(const char *s, uint8_t *op)
{
    for (unsigned i = 0; i < COMMSCHED_COLL_OP_COUNT; i++)
        if (strcmp(s, commsched_coll_op_str((commsched_coll_op)i)) == 0) {
            *op = (uint8_t)i;
            return 1;
        }
    return 0;
}

/* The arena's copy of op, shared with earlier nodes of the same op. */
static const char *intern_op(commsched_builder *b, const char *op)
{
    for (unsigned i = 0; i < OP_CACHE && b->ops[i]; i++)
        if (strcmp(b->ops[i], op) == 0)
            return b->ops[i];
    const char *copy = cs_arena_strdup(&b->arena, op);
    if (copy) {
        b->ops[b->next_op] = copy;
        b->next_op = (b->next_op + 1) % OP_CACHE;
    }
    return copy;
}

static commsched_status add_node(commsched_builder *b,
                                 const commsched_node_spec *s,
                                 commsched_error *err)
{
    char path[96];
    size_t i = b->n_nodes;
    commsched_status st;
    if (!valid_name(s->name)) {
        snprintf(path, sizeof path, "nodes[%zu].name", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "a node needs a name");
    }
    if (bad_text(err, s->name, "nodes[%zu].name", i) ||
        bad_text(err, s->op, "nodes[%zu].op", i) ||
        bad_text(err, s->group, "nodes[%zu].group", i))
        return COMMSCHED_ESCHEMA;
    if ((unsigned)s->kind > COMMSCHED_NODE_WAIT) {
        snprintf(path, sizeof path, "nodes[%zu].kind", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "unknown node kind %d",
                     (int)s->kind);
    }
    /* Nothing the JSON loader would refuse, so a built graph saves to a
     * file that loads back. */
    if (s->is_sync && s->kind != COMMSCHED_NODE_COLLECTIVE) {
        snprintf(path, sizeof path, "nodes[%zu].async", i);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "only a collective is async or not");
    }
    if (s->op && s->op[0] == '\0') {
        snprintf(path, sizeof path, "nodes[%zu].op", i);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "expected a non-empty string");
    }
    uint8_t coll_op = 0;
    if (s->kind == COMMSCHED_NODE_COLLECTIVE) {
        int known = s->op && lookup_coll_op(s->op, &coll_op);
        if (!known) /* the path only when it is needed */
            snprintf(path, sizeof path, "nodes[%zu].op", i);
        if (!s->op)
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "collective \"%s\" needs an op", s->name);
        if (!known)
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "unknown collective op \"%s\" (expected all_reduce, "
                         "all_gather, reduce_scatter, all_to_all, broadcast, "
                         "reduce, send, recv or barrier)",
                         s->op);
    }
    if ((unsigned)s->dtype >= COMMSCHED_DTYPE_COUNT) {
        snprintf(path, sizeof path, "nodes[%zu].dtype", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "unknown dtype %d",
                     (int)s->dtype);
    }
    if ((unsigned)s->reduce_op >= COMMSCHED_REDUCE_OP_COUNT) {
        snprintf(path, sizeof path, "nodes[%zu].reduce_op", i);
        return failf(err, COMMSCHED_ESCHEMA, path, "unknown reduce op %d",
                     (int)s->reduce_op);
    }
    const struct {
        double v, max;
        const char *field;
    } nums[] = {{s->runtime_ns, COMMSCHED_MAX_RUNTIME_NS, "runtime_ns"},
                {s->flops, COMMSCHED_MAX_WORK, "flops"},
                {s->bytes, COMMSCHED_MAX_WORK, "bytes"}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        /* The path is formatted only on failure: per node it was the
         * largest cost of adding one. */
        if (!isfinite(nums[k].v) || nums[k].v > nums[k].max)
            snprintf(path, sizeof path, "nodes[%zu].%s", i, nums[k].field);
        if (isnan(nums[k].v) || isinf(nums[k].v))
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "expected a finite number");
        if (nums[k].v > nums[k].max)
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "%g is beyond the format's limit of %g",
                         nums[k].v, nums[k].max);
    }

    bnode *n = PUSH(b, nodes, err);
    if (!n)
        return oom(err);
    memset(n, 0, sizeof *n);
    if (!(n->name = cs_arena_strdup(&b->arena, s->name)))
        return oom(err);
    if (s->kind == COMMSCHED_NODE_COLLECTIVE)
        n->op = commsched_coll_op_str((commsched_coll_op)coll_op);
    else if (s->op && !(n->op = intern_op(b, s->op)))
        return oom(err);
    if (s->group && !(n->group = cs_arena_strdup(&b->scratch, s->group)))
        return oom(err);
    n->kind = (uint8_t)s->kind;
    n->coll_op = coll_op;
    n->is_sync = s->is_sync ? 1 : 0;
    n->gemm_like = s->gemm_like ? 1 : 0;
    n->dtype = (uint8_t)s->dtype;
    n->reduce_op = (uint8_t)s->reduce_op;
    n->runtime_ns = s->runtime_ns < 0 ? -1.0 : s->runtime_ns;
    n->flops = s->flops < 0 ? -1.0 : s->flops;
    n->bytes = s->bytes < 0 ? -1.0 : s->bytes;
    n->n_in = (uint32_t)s->n_inputs;
    n->n_after = (uint32_t)s->n_after;
    n->n_fake = (uint32_t)s->n_after_fake;
    if ((st = push_refs(b, s->inputs, s->n_inputs, "inputs", i, &n->in_first,
                        err)) != COMMSCHED_OK ||
        (st = push_refs(b, s->after, s->n_after, "after", i, &n->after_first,
                        err)) != COMMSCHED_OK ||
        (st = push_refs(b, s->after_fake, s->n_after_fake, "after_fake", i,
                        &n->fake_first, err)) != COMMSCHED_OK)
        return st;
    n->out_first = (uint32_t)b->n_outs;
    n->n_out = (uint32_t)s->n_outputs;
    for (size_t k = 0; k < s->n_outputs; k++) {
        const commsched_output_spec *o = &s->outputs[k];
        if (!valid_name(o->name)) {
            snprintf(path, sizeof path, "nodes[%zu].outputs[%zu].name", i, k);
            return failf(err, COMMSCHED_ESCHEMA, path,
                         "an output needs a name");
        }
        if (bad_text(err, o->name, "nodes[%zu].outputs[%zu].name", i, k) ||
            bad_text(err, o->alias_of, "nodes[%zu].outputs[%zu].alias_of",
                     i, k))
            return COMMSCHED_ESCHEMA;
        if (!o->alias_of && (o->size < 0 || o->size > COMMSCHED_MAX_SIZE)) {
            snprintf(path, sizeof path, "nodes[%zu].outputs[%zu].size", i, k);
            return size_error(err, path, o->size);
        }
        bout *bo = PUSH(b, outs, err);
        if (!bo) {
            return oom(err);
        }
        bo->name = cs_arena_strdup(&b->arena, o->name);
        bo->alias_of = o->alias_of ? cs_arena_strdup(&b->scratch, o->alias_of)
                                   : NULL;
        bo->size = o->alias_of ? 0 : o->size;
        bo->from_first = bo->n_from = 0;
        bo->has_from = 0;
        if (!bo->name || (o->alias_of && !bo->alias_of)) {
            return oom(err);
        }
    }
    return COMMSCHED_OK;
}

/* A failed call leaves the builder as it was before it (nothing half
 * added) and marks it failed, so finish cannot return a graph that silently
 * lacks the node. */
commsched_status commsched_builder_add_node(commsched_builder *b,
                                            const commsched_node_spec *s,
                                            commsched_error *err)
{
    size_t n_nodes = b->n_nodes, n_outs = b->n_outs, n_refs = b->n_refs;
    commsched_status st = add_node(b, s, err);
    if (st != COMMSCHED_OK) {
        b->n_nodes = n_nodes;
        b->n_outs = n_outs;
        b->n_refs = n_refs;
        b->failed = st;
    }
    return st;
}

static commsched_status set_output_from(commsched_builder *b, size_t output,
                                        const char *const *from,
                                        size_t n_from, commsched_error *err)
{
    char path[96];
    if (b->n_nodes == 0)
        return failf(err, COMMSCHED_ESCHEMA, "nodes",
                     "no node was added to give an output's from to");
    size_t i = b->n_nodes - 1;
    const bnode *n = &b->nodes[i];
    if (output >= n->n_out) {
        snprintf(path, sizeof path, "nodes[%zu].outputs", i);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "node \"%s\" has %u outputs, no output %zu", n->name,
                     n->n_out, output);
    }
    bout *o = &b->outs[n->out_first + output];
    if (o->has_from) {
        snprintf(path, sizeof path, "nodes[%zu].outputs[%zu].from", i, output);
        return failf(err, COMMSCHED_ESCHEMA, path,
                     "the output's from is already given");
    }
    char field[48];
    snprintf(field, sizeof field, "outputs[%zu].from", output);
    uint32_t first;
    commsched_status st = push_refs(b, from, n_from, field, i, &first, err);
    if (st != COMMSCHED_OK)
        return st;
    o->from_first = first;
    o->n_from = (uint32_t)n_from;
    o->has_from = 1;
    b->any_from = 1;
    return COMMSCHED_OK;
}

/* As commsched_builder_add_node: a failed call leaves nothing behind and
 * marks the builder failed. */
commsched_status commsched_builder_set_output_from(commsched_builder *b,
                                                   size_t output,
                                                   const char *const *from,
                                                   size_t n_from,
                                                   commsched_error *err)
{
    size_t n_refs = b->n_refs;
    commsched_status st = set_output_from(b, output, from, n_from, err);
    if (st != COMMSCHED_OK) {
        b->n_refs = n_refs;
        b->failed = st;
    }
    return st;
}

/* ---- finish: resolution and validation ---------------------------------- */

/* Where buffer b was defined, as a JSON path, for "duplicate" messages. */
static void buffer_origin(const commsched_graph *g, uint32_t b, char *buf,
                          size_t size)
{
    if (b < g->n_inputs) {
        snprintf(buf, size, "inputs[%u]", b);
        return;
    }
    uint32_t p = g->buffers[b].producer;
    snprintf(buf, size, "nodes[%u].outputs[%u]", p,
             b - g->nodes[p].out_first);
}

/* Paths of errors found while resolving, formatted only when one is: doing
 * it for every node was a fifth of loading a large graph. */
static const char *group_path(char *buf, size_t size, uint32_t node)
{
    snprintf(buf, size, "nodes[%u].group", node);
    return buf;
}

static const char *alias_path(char *buf, size_t size, uint32_t node,
                              uint32_t k)
{
    snprintf(buf, size, "nodes[%u].outputs[%u].alias_of", node, k);
    return buf;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts a row ascending and drops repeats; returns the new length. Rows
 * are short (a node's dependencies), so insertion; a long one (a hostile
 * node with 10^5 inputs) goes to qsort rather than O(n^2). */
static uint32_t sort_unique(uint32_t *v, uint32_t n)
{
    if (n > 32)
        qsort(v, n, sizeof *v, cmp_u32);
    for (uint32_t i = 1; i < n && n <= 32; i++) {
        uint32_t x = v[i], j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

/* A walk over every reference, node by node (b->nodes' order, which
 * COMMSCHED_FINISH_TOPOSORT may have changed from the order they were
 * added, and so from b->refs'): each node's inputs (buffer names), then
 * its after and after_fake (node names). */
typedef struct ref_walk {
    size_t node, k;
    int part;
} ref_walk;

/* The walk's next reference, and its table; 0 past the last. */
static int ref_next(const commsched_builder *b, const commsched_graph *g,
                    ref_walk *w, uint32_t *ref, const cs_strmap **map)
{
    for (; w->node < b->n_nodes; w->node++, w->part = 0, w->k = 0)
        for (; w->part < 3; w->part++, w->k = 0) {
            const bnode *bn = &b->nodes[w->node];
            uint32_t first = w->part == 0   ? bn->in_first
                             : w->part == 1 ? bn->after_first
                                            : bn->fake_first;
            uint32_t n = w->part == 0   ? bn->n_in
                         : w->part == 1 ? bn->n_after
                                        : bn->n_fake;
            if (w->k < n) {
                *ref = first + (uint32_t)w->k++;
                *map = w->part == 0 ? &g->buffer_by_name : &g->node_by_name;
                return 1;
            }
        }
    return 0;
}

/* Every name of b->refs resolved into rv (UINT32_MAX: unknown) in its
 * field's table: two walks, one queueing CS_STRMAP_AHEAD references ahead of
 * the one that looks them up. */
static void resolve_all_refs(const commsched_builder *b,
                             const commsched_graph *g, uint32_t *rv)
{
    cs_strmap_pipe p;
    ref_walk lead = {0, 0, 0}, lag = {0, 0, 0};
    uint32_t ref;
    const cs_strmap *map;
    p.n = 0;
    for (size_t i = 0; ref_next(b, g, &lag, &ref, &map); i++) {
        uint32_t r2;
        const cs_strmap *m2;
        while (p.n < i + CS_STRMAP_AHEAD && ref_next(b, g, &lead, &r2, &m2))
            cs_strmap_pipe_push(&p, m2, b->refs[r2]);
        rv[ref] = cs_strmap_get_h(map, b->refs[ref],
                                  cs_strmap_pipe_hash(&p, i));
    }
}

/* Row `node`'s n references of `field`, resolved into rv by
 * resolve_all_refs, into out; reports the first unknown one as
 * "nodes[i].<field>[k]: unknown <what> "x"". */
static commsched_status resolve_refs(const commsched_builder *b,
                                     const uint32_t *rv, uint32_t first,
                                     uint32_t n, uint32_t node,
                                     const char *field, const char *what,
                                     uint32_t *out, commsched_error *err)
{
    for (uint32_t k = 0; k < n; k++) {
        const char *name = b->refs[first + k];
        uint32_t v = rv[first + k];
        if (v == UINT32_MAX) {
            char path[96];
            snprintf(path, sizeof path, "nodes[%u].%s[%u]", node, field, k);
            return failf(err, COMMSCHED_EGRAPH, path, "unknown %s \"%s\"",
                         what, name);
        }
        out[k] = v;
    }
    return COMMSCHED_OK;
}

/* Builds a CSR whose row i holds n_i resolved references. */
static commsched_status alloc_rows(cs_csr *c, const commsched_builder *b,
                                   size_t which, commsched_error *err)
{
    size_t n = b->n_nodes;
    c->off = cs_calloc(n + 1, sizeof *c->off);
    size_t total = 0;
    if (!c->off)
        return oom(err);
    for (size_t i = 0; i < n; i++) {
        const bnode *bn = &b->nodes[i];
        uint32_t len = which == 0 ? bn->n_in
                       : which == 1 ? bn->n_after
                                    : bn->n_fake;
        total += len;
        if (total > UINT32_MAX)
            return failf(err, COMMSCHED_ESCHEMA, "nodes",
                         "too many references (more than 2^32)");
        c->off[i + 1] = (uint32_t)total;
    }
    c->idx = cs_malloc_array(total, sizeof *c->idx);
    return c->idx ? COMMSCHED_OK : oom(err);
}

static commsched_status check_groups_and_inputs(commsched_graph *g,
                                                const commsched_builder *b,
                                                commsched_error *err)
{
    char path[96];
    g->n_groups = (uint32_t)b->n_groups;
    g->groups = cs_calloc(b->n_groups, sizeof *g->groups);
    if (!g->groups)
        return oom(err);
    cs_strmap_init(&g->group_by_name, g->groups, sizeof *g->groups,
                   offsetof(cs_group, name));
    for (uint32_t i = 0; i < g->n_groups; i++) {
        uint32_t first;
        g->groups[i].name = b->groups[i].name;
        g->groups[i].size = b->groups[i].size;
        g->groups[i].hosts = b->groups[i].hosts;
        int r = cs_strmap_put(&g->group_by_name, b->groups[i].name, i, &first);
        if (r < 0)
            return oom(err);
        if (r == 0) {
            snprintf(path, sizeof path, "groups[%u].name", i);
            return failf(err, COMMSCHED_EGRAPH, path,
                         "duplicate group name \"%s\" (first at groups[%u])",
                         b->groups[i].name, first);
        }
    }
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        cs_buffer *buf = &g->buffers[i];
        uint32_t first;
        buf->name = b->inputs[i].name;
        buf->size = b->inputs[i].size;
        buf->alias_of = COMMSCHED_NONE;
        buf->root = i;
        buf->producer = COMMSCHED_NONE;
        buf->is_input = 1;
        buf->freeable = b->inputs[i].freeable;
        int r = cs_strmap_put(&g->buffer_by_name, buf->name, i, &first);
        if (r < 0)
            return oom(err);
        if (r == 0) {
            snprintf(path, sizeof path, "inputs[%u].name", i);
            return failf(err, COMMSCHED_EGRAPH, path,
                         "duplicate buffer name \"%s\" (first at inputs[%u])",
                         buf->name, first);
        }
    }
    return COMMSCHED_OK;
}

/* Node names and output buffers, with their duplicate checks. */
static commsched_status define_nodes(commsched_graph *g,
                                     const commsched_builder *b,
                                     commsched_error *err)
{
    char path[96], origin[96];
    cs_strmap_pipe pn, po; /* node names; output names (b->outs in order) */
    pn.n = po.n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const bnode *bn = &b->nodes[i];
        cs_node *n = &g->nodes[i];
        uint32_t first;
        while (pn.n < g->n_nodes && pn.n < (size_t)i + CS_STRMAP_AHEAD)
            cs_strmap_pipe_push(&pn, &g->node_by_name, b->nodes[pn.n].name);
        n->name = bn->name;
        n->op = bn->op;
        n->kind = bn->kind;
        n->coll_op = bn->coll_op;
        n->is_sync = bn->is_sync;
        n->gemm_like = bn->gemm_like;
        n->dtype = bn->dtype;
        n->reduce_op = bn->reduce_op;
        n->runtime_ns = bn->runtime_ns;
        n->flops = bn->flops;
        n->bytes = bn->bytes;
        n->group = COMMSCHED_NONE;
        n->out_first = g->n_inputs + bn->out_first;
        n->n_out = bn->n_out;
        int r = cs_strmap_put_h(&g->node_by_name, bn->name,
                                cs_strmap_pipe_hash(&pn, i), i, &first);
        if (r < 0)
            return oom(err);
        if (r == 0) {
            snprintf(path, sizeof path, "nodes[%u].name", i);
            return failf(err, COMMSCHED_EGRAPH, path,
                         "duplicate node name \"%s\" (first at nodes[%u])",
                         bn->name, first);
        }
        for (uint32_t k = 0; k < bn->n_out; k++) {
            const bout *o = &b->outs[bn->out_first + k];
            uint32_t bi = n->out_first + k;
            cs_buffer *buf = &g->buffers[bi];
            buf->name = o->name;
            buf->size = o->size;
            buf->alias_of = COMMSCHED_NONE;
            buf->root = bi;
            buf->producer = i;
            size_t oi = (size_t)bn->out_first + k;
            while (po.n < b->n_outs && po.n < oi + CS_STRMAP_AHEAD)
                cs_strmap_pipe_push(&po, &g->buffer_by_name,
                                    b->outs[po.n].name);
            r = cs_strmap_put_h(&g->buffer_by_name, o->name,
                                cs_strmap_pipe_hash(&po, oi), bi, &first);
            if (r < 0)
                return oom(err);
            if (r == 0) {
                buffer_origin(g, first, origin, sizeof origin);
                snprintf(path, sizeof path, "nodes[%u].outputs[%u].name", i,
                         k);
                return failf(err, COMMSCHED_EGRAPH, path,
                             "duplicate buffer name \"%s\" (first at %s)",
                             o->name, origin);
            }
        }
    }
    return COMMSCHED_OK;
}

/* resolve_node_refs's checks and rows, node by node, from the resolved
 * names rv. */
static commsched_status resolve_rows(commsched_graph *g,
                                     const commsched_builder *b,
                                     const uint32_t *rv, commsched_error *err)
{
    char path[96];
    commsched_status st;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const bnode *bn = &b->nodes[i];
        cs_node *n = &g->nodes[i];
        if (n->kind == COMMSCHED_NODE_COLLECTIVE) {
            if (!bn->group)
                return failf(err, COMMSCHED_EGRAPH,
                             group_path(path, sizeof path, i),
                             "collective \"%s\" needs a group", n->name);
            n->group = cs_strmap_get(&g->group_by_name, bn->group);
            if (n->group == UINT32_MAX)
                return failf(err, COMMSCHED_EGRAPH,
                             group_path(path, sizeof path, i),
                             "unknown group \"%s\"", bn->group);
        } else if (bn->group) {
            return failf(err, COMMSCHED_EGRAPH,
                         group_path(path, sizeof path, i),
                         "only a collective has a group (\"%s\" is a %s)",
                         n->name,
                         commsched_node_kind_str((commsched_node_kind)n->kind));
        }
        if ((st = resolve_refs(b, rv, bn->in_first, bn->n_in,
                               i, "inputs", "buffer",
                               CS_ROW_BEGIN(g->reads, i), err)) !=
                COMMSCHED_OK ||
            (st = resolve_refs(b, rv, bn->after_first,
                               bn->n_after, i, "after", "node",
                               CS_ROW_BEGIN(g->after, i), err)) !=
                COMMSCHED_OK ||
            (st = resolve_refs(b, rv, bn->fake_first,
                               bn->n_fake, i, "after_fake", "node",
                               CS_ROW_BEGIN(g->after_fake, i), err)) !=
                COMMSCHED_OK)
            return st;
        const uint32_t *in = CS_ROW_BEGIN(g->reads, i);
        for (uint32_t k = 0; k < bn->n_in; k++)
            if (g->buffers[in[k]].producer == i) {
                snprintf(path, sizeof path, "nodes[%u].inputs[%u]", i, k);
                return failf(err, COMMSCHED_ECYCLE, path,
                             "node \"%s\" reads its own output \"%s\"",
                             n->name, g->buffers[in[k]].name);
            }
        const cs_csr *ctl[2] = {&g->after, &g->after_fake};
        const char *field[2] = {"after", "after_fake"};
        for (int c = 0; c < 2; c++)
            for (uint32_t k = 0; k < CS_ROW_LEN(*ctl[c], i); k++)
                if (CS_ROW_BEGIN(*ctl[c], i)[k] == i) {
                    snprintf(path, sizeof path, "nodes[%u].%s[%u]", i,
                             field[c], k);
                    return failf(err, COMMSCHED_ECYCLE, path,
                                 "node \"%s\" depends on itself", n->name);
                }
    }
    return COMMSCHED_OK;
}

/* Groups, inputs, after and after_fake of every node. */
static commsched_status resolve_node_refs(commsched_graph *g,
                                          const commsched_builder *b,
                                          commsched_error *err)
{
    commsched_status st;
    if ((st = alloc_rows(&g->reads, b, 0, err)) != COMMSCHED_OK ||
        (st = alloc_rows(&g->after, b, 1, err)) != COMMSCHED_OK ||
        (st = alloc_rows(&g->after_fake, b, 2, err)) != COMMSCHED_OK)
        return st;
    uint32_t *rv = cs_malloc_array(b->n_refs ? b->n_refs : 1, sizeof *rv);
    if (!rv)
        return oom(err);
    resolve_all_refs(b, g, rv);
    st = resolve_rows(g, b, rv, err);
    free(rv);
    return st;
}

/* Marks the in-place aliases whose root an earlier output of the same
 * node aliases too (root_again), so that a collective's bytes count each
 * root once in O(outputs) (commsched_cost_collective_bytes). mark: one
 * entry per buffer, zeroed. */
static void mark_repeated_roots(commsched_graph *g, uint32_t *mark)
{
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const cs_node *n = &g->nodes[i];
        uint32_t first = n->out_first, end = n->out_first + n->n_out;
        for (uint32_t bi = first; bi < end; bi++) {
            cs_buffer *buf = &g->buffers[bi];
            if (buf->alias_of == COMMSCHED_NONE ||
                (buf->root >= first && buf->root < end))
                continue;
            buf->root_again = mark[buf->root] == i + 1;
            mark[buf->root] = i + 1;
        }
    }
}

/* alias_of must name a buffer the node reads or one of its own outputs
 * (a stamp per buffer marks the node's inputs, so a node with many alias
 * outputs costs its inputs plus its outputs); chains are followed to
 * their root with a cycle check. */
static commsched_status resolve_aliases(commsched_graph *g,
                                        const commsched_builder *b,
                                        commsched_error *err)
{
    char path[96];
    uint32_t *mark = calloc(g->n_buffers ? g->n_buffers : 1, sizeof *mark);
    if (!mark)
        return oom(err);
    cs_strmap_pipe p; /* the alias_of names, b->outs in order */
    size_t ahead = 0, q = 0; /* the next out to queue; the name's index */
    uint32_t marked = 0;     /* the node whose inputs mark holds, + 1 */
    p.n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const bnode *bn = &b->nodes[i];
        const cs_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_out; k++) {
            const char *base = b->outs[bn->out_first + k].alias_of;
            if (!base)
                continue;
            for (; ahead < b->n_outs && p.n < q + CS_STRMAP_AHEAD; ahead++)
                if (b->outs[ahead].alias_of)
                    cs_strmap_pipe_push(&p, &g->buffer_by_name,
                                        b->outs[ahead].alias_of);
            uint32_t bi = cs_strmap_get_h(&g->buffer_by_name, base,
                                          cs_strmap_pipe_hash(&p, q++));
            if (bi == UINT32_MAX) {
                free(mark);
                return failf(err, COMMSCHED_EGRAPH,
                             alias_path(path, sizeof path, i, k),
                             "alias of unknown buffer \"%s\"", base);
            }
            const uint32_t *in = CS_ROW_BEGIN(g->reads, i);
            if (marked != i + 1) { /* the node's first alias: its inputs */
                for (uint32_t r = 0; r < CS_ROW_LEN(g->reads, i); r++)
                    mark[in[r]] = i + 1;
                marked = i + 1;
            }
            if (g->buffers[bi].producer != i && mark[bi] != i + 1) {
                free(mark);
                return failf(err, COMMSCHED_EGRAPH,
                             alias_path(path, sizeof path, i, k),
                             "\"%s\" is neither read by node \"%s\" nor one "
                             "of its outputs",
                             base, n->name);
            }
            g->buffers[n->out_first + k].alias_of = bi;
        }
    }
    /* Roots, memoised so that a chain of views across many nodes costs its
     * length once: state 0 = not seen, 1 = on the current walk, 2 = root
     * known. Meeting a buffer already on the current walk is a cycle. (A
     * chain may cross any number of nodes: a view of a wait's alias of an
     * in-place all_reduce is three steps long.) */
    uint8_t *state = cs_calloc(g->n_buffers, sizeof *state);
    if (!state) {
        free(mark);
        return oom(err);
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const cs_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_out; k++) {
            uint32_t bi = n->out_first + k, r = bi;
            while (state[r] == 0 &&
                   g->buffers[r].alias_of != COMMSCHED_NONE) {
                state[r] = 1;
                r = g->buffers[r].alias_of;
            }
            if (state[r] == 1) {
                char chain[256];
                size_t len = 0;
                int seen_r = 0;
                for (uint32_t c = bi; len < sizeof chain;
                     c = g->buffers[c].alias_of) {
                    int w = snprintf(chain + len, sizeof chain - len,
                                     "%s\"%s\"", len ? " -> " : "",
                                     g->buffers[c].name);
                    if (w < 0)
                        break;
                    len += (size_t)w;
                    if (c == r && seen_r++)
                        break;
                }
                free(state);
                free(mark);
                snprintf(path, sizeof path, "nodes[%u].outputs[%u].alias_of",
                         i, k);
                return failf(err, COMMSCHED_EGRAPH, path, "alias cycle %s",
                             chain);
            }
            uint32_t root = g->buffers[r].root;
            for (uint32_t c = bi; c != r; c = g->buffers[c].alias_of) {
                g->buffers[c].root = root;
                state[c] = 2;
            }
            state[r] = 2;
        }
    }
    free(state);
    memset(mark, 0, (g->n_buffers ? g->n_buffers : 1) * sizeof *mark);
    mark_repeated_roots(g, mark);
    free(mark);
    return COMMSCHED_OK;
}

/* Each output's "from" (only when some output has one: g->from stays
 * empty otherwise): every name must be one of its node's inputs. A stamp
 * per buffer marks the node's inputs, so a node costs its inputs plus its
 * from names. */
static commsched_status resolve_from(commsched_graph *g,
                                     const commsched_builder *b,
                                     commsched_error *err)
{
    if (!b->any_from)
        return COMMSCHED_OK;
    if (b->n_refs > UINT32_MAX)
        return failf(err, COMMSCHED_ESCHEMA, "nodes",
                     "too many references (more than 2^32)");
    uint32_t nb = g->n_buffers;
    size_t total = 0;
    g->from.off = cs_calloc((size_t)nb + 1, sizeof *g->from.off);
    if (!g->from.off)
        return oom(err);
    for (uint32_t bi = 0; bi < nb; bi++) {
        if (bi >= g->n_inputs) {
            const bout *o = &b->outs[bi - g->n_inputs];
            total += o->n_from;
            g->buffers[bi].has_from = o->has_from;
        }
        g->from.off[bi + 1] = (uint32_t)total;
    }
    g->from.idx = cs_malloc_array(total ? total : 1, sizeof *g->from.idx);
    uint32_t *mark = cs_calloc(nb, sizeof *mark);
    commsched_status st = COMMSCHED_OK;
    if (!g->from.idx || !mark) {
        free(mark);
        return oom(err);
    }
    for (uint32_t i = 0; i < g->n_nodes && st == COMMSCHED_OK; i++) {
        const cs_node *n = &g->nodes[i];
        const bnode *bn = &b->nodes[i];
        for (uint32_t k = g->reads.off[i]; k < g->reads.off[i + 1]; k++)
            mark[g->reads.idx[k]] = i + 1;
        for (uint32_t k = 0; k < n->n_out && st == COMMSCHED_OK; k++) {
            const bout *o = &b->outs[bn->out_first + k];
            uint32_t *row = CS_ROW_BEGIN(g->from, n->out_first + k);
            for (uint32_t m = 0; m < o->n_from; m++) {
                const char *name = b->refs[o->from_first + m];
                uint32_t bi = cs_strmap_get(&g->buffer_by_name, name);
                if (bi == UINT32_MAX || mark[bi] != i + 1) {
                    char path[96];
                    snprintf(path, sizeof path,
                             "nodes[%u].outputs[%u].from[%u]", i, k, m);
                    st = failf(err, COMMSCHED_EGRAPH, path,
                               "\"%s\" is not an input of node \"%s\"", name,
                               n->name);
                    break;
                }
                row[m] = bi;
            }
        }
    }
    free(mark);
    return st;
}

static commsched_status resolve_outputs(commsched_graph *g,
                                        const commsched_builder *b,
                                        commsched_error *err)
{
    char path[64];
    g->n_outputs = (uint32_t)b->n_outputs;
    g->outputs = cs_calloc(b->n_outputs, sizeof *g->outputs);
    if (!g->outputs)
        return oom(err);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t bi = cs_strmap_get(&g->buffer_by_name, b->outputs[i]);
        /* The path only on error: per output it was a fifth of finish. */
        if (bi == UINT32_MAX || g->buffers[bi].is_output)
            snprintf(path, sizeof path, "outputs[%u]", i);
        if (bi == UINT32_MAX)
            return failf(err, COMMSCHED_EGRAPH, path, "unknown buffer \"%s\"",
                         b->outputs[i]);
        if (g->buffers[bi].is_output)
            return failf(err, COMMSCHED_EGRAPH, path,
                         "buffer \"%s\" is listed twice", b->outputs[i]);
        g->buffers[bi].is_output = 1;
        g->outputs[i] = bi;
        /* Nothing on an output's alias chain is ever freed. */
        for (uint32_t c = bi; c != COMMSCHED_NONE; c = g->buffers[c].alias_of)
            g->buffers[c].keep = 1;
    }
    return COMMSCHED_OK;
}

/* All real buffers together stay within COMMSCHED_MAX_SIZE, so no sum the
 * memory model or a report forms can overflow (each size is checked when
 * added, so the running total cannot overflow before the test). */
static commsched_status check_total_size(const commsched_graph *g,
                                         commsched_error *err)
{
    int64_t total = 0;
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        total += g->buffers[b].size; /* 0 for aliases */
        if (total > COMMSCHED_MAX_SIZE) {
            char origin[96], path[128];
            buffer_origin(g, b, origin, sizeof origin);
            snprintf(path, sizeof path, "%s.size", origin);
            return failf(err, COMMSCHED_EGRAPH, path,
                         "the graph's buffers add up to more than the "
                         "format's limit of 2^53 bytes");
        }
    }
    return COMMSCHED_OK;
}

/* deps (data + after), users, fake_users and buffer readers. */
static commsched_status derive_edges(commsched_graph *g, commsched_error *err)
{
    uint32_t n = g->n_nodes;
    size_t cap = (size_t)g->reads.off[n] + g->after.off[n];
    g->deps.off = cs_calloc((size_t)n + 1, sizeof *g->deps.off);
    g->deps.idx = cs_malloc_array(cap, sizeof *g->deps.idx);
    if (!g->deps.off || !g->deps.idx)
        return oom(err);
    uint32_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t start = len;
        for (uint32_t k = g->reads.off[i]; k < g->reads.off[i + 1]; k++) {
            uint32_t p = g->buffers[g->reads.idx[k]].producer;
            if (p != COMMSCHED_NONE)
                g->deps.idx[len++] = p;
        }
        for (uint32_t k = g->after.off[i]; k < g->after.off[i + 1]; k++)
            g->deps.idx[len++] = g->after.idx[k];
        len = start + sort_unique(g->deps.idx + start, len - start);
        g->deps.off[i + 1] = len;
    }
    if (cs_csr_transpose(&g->users, &g->deps, n, n) != 0 ||
        cs_csr_transpose(&g->fake_users, &g->after_fake, n, n) != 0)
        return oom(err);

    /* readers: root buffer -> distinct nodes, ascending. Pairs come in node
     * order, so a node's repeated reads of one root are adjacent in a row. */
    size_t m = g->reads.off[n];
    uint32_t *rows = cs_malloc_array(m, sizeof *rows);
    uint32_t *vals = cs_malloc_array(m, sizeof *vals);
    if (!rows || !vals) {
        free(rows);
        free(vals);
        return oom(err);
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = g->reads.off[i]; k < g->reads.off[i + 1]; k++) {
            rows[k] = g->buffers[g->reads.idx[k]].root;
            vals[k] = i;
        }
    int rc = cs_csr_from_pairs(&g->readers, g->n_buffers, rows, vals, m);
    free(rows);
    free(vals);
    if (rc != 0)
        return oom(err);
    uint32_t w = 0, r0 = 0;
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        uint32_t r1 = g->readers.off[b + 1];
        uint32_t start = w;
        for (uint32_t k = r0; k < r1; k++)
            if (w == start || g->readers.idx[w - 1] != g->readers.idx[k])
                g->readers.idx[w++] = g->readers.idx[k];
        g->readers.off[b + 1] = w;
        r0 = r1;
    }
    return COMMSCHED_OK;
}

/* The first edge that points forward in the node order, reported by the
 * field that created it, or COMMSCHED_OK when the order is topological. */
static commsched_status check_order(const commsched_graph *g,
                                    commsched_error *err)
{
    char path[96];
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const char *name = g->nodes[i].name;
        for (uint32_t k = 0; k < CS_ROW_LEN(g->reads, i); k++) {
            uint32_t bi = CS_ROW_BEGIN(g->reads, i)[k];
            uint32_t p = g->buffers[bi].producer;
            if (p != COMMSCHED_NONE && p > i) {
                snprintf(path, sizeof path, "nodes[%u].inputs[%u]", i, k);
                return failf(err, COMMSCHED_EORDER, path,
                             "\"%s\" reads \"%s\", produced by nodes[%u] "
                             "(\"%s\") which comes later: the node order is "
                             "not topological (--toposort repairs it)",
                             name, g->buffers[bi].name, p, g->nodes[p].name);
            }
        }
        const cs_csr *ctl[2] = {&g->after, &g->after_fake};
        const char *field[2] = {"after", "after_fake"};
        for (int c = 0; c < 2; c++)
            for (uint32_t k = 0; k < CS_ROW_LEN(*ctl[c], i); k++) {
                uint32_t d = CS_ROW_BEGIN(*ctl[c], i)[k];
                if (d > i) {
                    snprintf(path, sizeof path, "nodes[%u].%s[%u]", i,
                             field[c], k);
                    return failf(err, COMMSCHED_EORDER, path,
                                 "\"%s\" must run after nodes[%u] (\"%s\") "
                                 "which comes later: the node order is not "
                                 "topological (--toposort repairs it)",
                                 name, d, g->nodes[d].name);
                }
            }
    }
    return COMMSCHED_OK;
}

/* "a" -> "b" -> ... -> "a": every node of the cycle while the message has
 * room, else as many as fit, then how many are left out and the first
 * one again, so a cut message still ends at the node it started from. */
static commsched_status report_cycle(const commsched_graph *g,
                                     const uint32_t *cycle, uint32_t len,
                                     commsched_error *err)
{
    /* Room for the text around the list (failf's format) and for the
     * ellipsis and the closing name. */
    enum { ROOM = COMMSCHED_ERROR_TEXT_LENGTH - 64 };
    char text[COMMSCHED_ERROR_TEXT_LENGTH], path[64], last[160];
    const char *first = g->nodes[cycle[0]].name;
    cs_utf8_trim(last, sizeof last,
                 snprintf(last, sizeof last, "\"%s\"", first));
    size_t used = 0;
    size_t tail = strlen(last) + sizeof " -> ... (4294967295 more) -> ";
    uint32_t k = 0;
    text[0] = '\0';
    for (; k < len; k++) {
        const char *name = g->nodes[cycle[k]].name;
        size_t need = strlen(name) + 6;
        if (used + need + tail > ROOM)
            break;
        used += (size_t)snprintf(text + used, sizeof text - used, "%s\"%s\"",
                                 k ? " -> " : "", name);
    }
    if (k == 0) { /* not even the first name fits: the cut one */
        used = (size_t)snprintf(text, sizeof text, "%s", last);
        k = 1;
    }
    if (k < len)
        snprintf(text + used, sizeof text - used, " -> ... (%u more) -> %s",
                 len - k, last);
    else
        snprintf(text + used, sizeof text - used, " -> %s", last);
    snprintf(path, sizeof path, "nodes[%u]", cycle[0]);
    return failf(err, COMMSCHED_ECYCLE, path,
                 "dependency cycle: %s (each must run before the next)", text);
}

/* Frees what the builder recorded (its strings that the graph keeps are
 * in the arena, which stays); the builder can then only be destroyed. */
static void release_records(commsched_builder *b)
{
    free(b->groups);
    free(b->inputs);
    free(b->outputs);
    free(b->nodes);
    free(b->outs);
    free(b->refs);
    b->groups = NULL;
    b->inputs = NULL;
    b->outputs = NULL;
    b->nodes = NULL;
    b->outs = NULL;
    b->refs = NULL;
    b->n_groups = b->n_inputs = b->n_outputs = b->n_nodes = b->n_outs =
        b->n_refs = 0;
    b->cap_groups = b->cap_inputs = b->cap_outputs = b->cap_nodes =
        b->cap_outs = b->cap_refs = 0;
    cs_arena_fini(&b->scratch);
}

void commsched_builder_destroy(commsched_builder *b)
{
    if (!b)
        return;
    release_records(b);
    cs_arena_fini(&b->arena);
    free(b);
}

static commsched_status build(commsched_graph *g, commsched_builder *b,
                              int keep_builder, commsched_error *err)
{
    commsched_status st;
    if (b->n_nodes == 0)
        return failf(err, COMMSCHED_EGRAPH, "nodes", "the graph has no nodes");
    if (b->n_nodes >= UINT32_MAX || b->n_inputs + b->n_outs >= UINT32_MAX)
        return failf(err, COMMSCHED_EGRAPH, "nodes",
                     "too many nodes or buffers (at most 2^32 - 2)");
    g->n_nodes = (uint32_t)b->n_nodes;
    g->n_inputs = (uint32_t)b->n_inputs;
    g->n_buffers = (uint32_t)(b->n_inputs + b->n_outs);
    g->nodes = cs_calloc(g->n_nodes, sizeof *g->nodes);
    g->buffers = cs_calloc(g->n_buffers, sizeof *g->buffers);
    if (!g->nodes || !g->buffers)
        return oom(err);
    /* Sized once: growing a table rehashes every name again. */
    cs_strmap_init(&g->node_by_name, g->nodes, sizeof *g->nodes,
                   offsetof(cs_node, name));
    cs_strmap_init(&g->buffer_by_name, g->buffers, sizeof *g->buffers,
                   offsetof(cs_buffer, name));
    if (cs_strmap_reserve(&g->node_by_name, g->n_nodes) != 0 ||
        cs_strmap_reserve(&g->buffer_by_name, g->n_buffers) != 0)
        return oom(err);
    if ((st = check_groups_and_inputs(g, b, err)) != COMMSCHED_OK ||
        (st = define_nodes(g, b, err)) != COMMSCHED_OK ||
        (st = check_total_size(g, err)) != COMMSCHED_OK ||
        (st = resolve_node_refs(g, b, err)) != COMMSCHED_OK ||
        (st = resolve_aliases(g, b, err)) != COMMSCHED_OK ||
        (st = resolve_from(g, b, err)) != COMMSCHED_OK ||
        (st = resolve_outputs(g, b, err)) != COMMSCHED_OK ||
        (st = cs_graph_check_wait_rules(g, err)) != COMMSCHED_OK ||
        (st = cs_graph_check_collective_sizes(g, err)) != COMMSCHED_OK)
        return st;
    /* Everything the builder recorded is in g now. Unless a repair may
     * need to rebuild from it, let it go before the derived tables are
     * made: the records and reference names were a third of the peak of
     * building a million-node graph. */
    if (!keep_builder)
        release_records(b);
    return derive_edges(g, err);
}

static commsched_graph *graph_new(commsched_builder *b)
{
    commsched_graph *g = cs_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    /* The graph takes the builder's strings over. */
    g->arena = b->arena;
    cs_arena_init(&b->arena);
    g->name = b->name;
    /* Empty until build() knows the records they index. */
    cs_strmap_init(&g->group_by_name, NULL, 0, 0);
    cs_strmap_init(&g->buffer_by_name, NULL, 0, 0);
    cs_strmap_init(&g->node_by_name, NULL, 0, 0);
    return g;
}

/* Reorders the builder's nodes (order[k] = old index of the k-th node),
 * and their outputs with them, so the rebuilt graph keeps its layout rule
 * (buffers: inputs first, then outputs in node order). */
static commsched_status permute_nodes(commsched_builder *b,
                                      const uint32_t *order,
                                      commsched_error *err)
{
    bnode *sorted = cs_malloc_array(b->n_nodes, sizeof *sorted);
    bout *outs = cs_malloc_array(b->n_outs, sizeof *outs);
    if (!sorted || !outs) {
        free(sorted);
        free(outs);
        return oom(err);
    }
    uint32_t n_out = 0;
    for (size_t k = 0; k < b->n_nodes; k++) {
        sorted[k] = b->nodes[order[k]];
        if (sorted[k].n_out)
            memcpy(outs + n_out, b->outs + sorted[k].out_first,
                   sorted[k].n_out * sizeof *outs);
        sorted[k].out_first = n_out;
        n_out += sorted[k].n_out;
    }
    free(b->nodes);
    b->nodes = sorted;
    b->cap_nodes = b->n_nodes;
    free(b->outs);
    b->outs = outs;
    b->cap_outs = b->n_outs;
    return COMMSCHED_OK;
}

/* The order is not topological: report a cycle if there is one; otherwise
 * either repair the order (TOPOSORT) or keep the EORDER error. */
static commsched_status handle_bad_order(commsched_graph *g,
                                         commsched_builder *b, unsigned flags,
                                         commsched_error *order_err,
                                         int *repaired, commsched_error *err)
{
    cs_preds p = {g->n_nodes, &g->deps, &g->after_fake};
    uint32_t *cycle = NULL, len = 0;
    *repaired = 0;
    commsched_status st = cs_analysis_find_cycle(&p, &cycle, &len, err);
    if (st != COMMSCHED_OK)
        return st;
    if (len > 0) {
        st = report_cycle(g, cycle, len, err);
        free(cycle);
        return st;
    }
    if (!(flags & COMMSCHED_FINISH_TOPOSORT)) {
        if (err && err->status == COMMSCHED_OK)
            *err = *order_err;
        return order_err->status;
    }
    uint32_t *order = cs_malloc_array(g->n_nodes, sizeof *order);
    if (!order)
        return oom(err);
    st = cs_analysis_toposort(&p, order, err);
    if (st == COMMSCHED_OK)
        st = permute_nodes(b, order, err);
    free(order);
    if (st == COMMSCHED_OK)
        *repaired = 1;
    return st;
}

commsched_status commsched_builder_finish(commsched_builder *b, unsigned flags,
                                          commsched_graph **out,
                                          commsched_error *err)
{
    *out = NULL;
    if (b->failed != COMMSCHED_OK) {
        commsched_status failed = b->failed;
        commsched_builder_destroy(b);
        return commsched_error_set(err, failed, NULL,
                                   "an earlier builder call failed; the "
                                   "graph is incomplete");
    }
    commsched_graph *g = NULL;
    commsched_status st;
    for (int attempt = 0; attempt < 2; attempt++) {
        g = graph_new(b);
        if (!g) {
            st = oom(err);
            goto cleanup;
        }
        st = build(g, b, (flags & COMMSCHED_FINISH_TOPOSORT) != 0, err);
        if (st != COMMSCHED_OK)
            goto cleanup;
        commsched_error order_err = {0};
        if (check_order(g, &order_err) == COMMSCHED_OK) {
            /* The versions of in-place written buffers follow the final
             * (topological, possibly repaired) order. */
            st = cs_graph_derive_mutation_edges(g, err);
            if (st != COMMSCHED_OK)
                goto cleanup;
            *out = g;
            g = NULL;
            goto cleanup;
        }
        int repaired = 0;
        st = handle_bad_order(g, b, flags, &order_err, &repaired, err);
        if (st != COMMSCHED_OK || !repaired)
            goto cleanup;
        /* Rebuild from the permuted builder; strings stay in the arena the
         * first graph took over, so hand them back first. */
        b->arena = g->arena;
        cs_arena_init(&g->arena);
        commsched_graph_destroy(g);
        g = NULL;
        flags &= ~COMMSCHED_FINISH_TOPOSORT;
    }
    st = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                             "topological repair did not converge");
cleanup:
    commsched_graph_destroy(g);
    commsched_builder_destroy(b);
    return st;
}
