/* The graph of a parsed HLO module (hlo.h; docs/WORKLOADS.md, "XLA HLO").
 *
 * The entry computation's instructions become nodes in their order (XLA's
 * schedule when the module is scheduled):
 *   - parameters and constants are graph inputs (never freed), the root's
 *     leaves the graph outputs;
 *   - get-tuple-element, tuple, bitcast, opt-barrier, add-dependency,
 *     domain, async-update and copy-done are read through: no data moves,
 *     so they make no node, only new names for the same buffers;
 *   - a collective is a collective node and a wait; a synchronous one
 *     (what XLA's CPU backend emits) has its wait right after it, so the
 *     input order is XLA's; a *-start / *-done pair (and an async-start /
 *     async-done around one) has its wait where the done stands;
 *   - a while loop is unrolled by its known trip count (backend_config
 *     known_trip_count), a call inlined; a conditional is an error;
 *   - everything else (fusions, custom calls, dots, copies, ...) is a
 *     compute node reading its operands and writing its shape's leaves:
 *     bytes = what it reads + what it writes, flops = 2 x the multiply-adds
 *     of the dots and convolutions it holds (docs/COST.md).
 * A tuple-shaped value is its leaves: one buffer each, named NAME{i} (the
 * leaf's ShapeIndex). Nodes inside an unrolled loop are named
 * LOOP#ITERATION/NAME, inside an inlined call CALL/NAME. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "import_internal.h"

/* Buffers named in values: unrolled loops re-list a tuple's leaves each
 * iteration, so their count is bounded apart from the nodes'. */
#define MAX_LEAVES ((size_t)1 << 26)

typedef struct val {
    size_t off;   /* leaves: ctx.leaves[off .. off+n) */
    uint32_t n;
    int pending;  /* outputs of an async collective its done has not met */
} val;

typedef struct grp {
    size_t name;  /* pool offset */
    hlo_span at;  /* the first collective that named it */
} grp;

typedef struct ctx {
    const hlo_module *m;
    commsched_builder *b;
    commsched_error *err;
    hlo_stats *st;
    char *pool; /* NUL-terminated names, back to back */
    size_t n_pool, cap_pool;
    size_t *buf_name; /* per buffer: its name's pool offset */
    int64_t *buf_size; /* and the bytes it holds (an alias: its root's) */
    size_t n_bufs, cap_bufs, cap_bufsize;
    size_t *leaves;    /* buffer ids, the leaves of values */
    size_t n_leaves, cap_leaves;
    hlo_span *node_at, *input_at;
    size_t n_nodes, cap_nodes, n_inputs, cap_inputs;
    grp *groups;
    size_t n_groups, cap_groups;
    char *prefix;      /* LOOP#K/CALL/ of the instructions being made */
    size_t n_prefix, cap_prefix;
    const char **names; /* scratch: a node's input names */
    size_t cap_names;
    commsched_output_spec *outs; /* scratch: its outputs */
    size_t cap_outs;
    double *comp_flops; /* per computation, once computed */
    unsigned char *comp_state; /* 0 new, 1 being computed, 2 done */
    unsigned char *comp_gemm;
    unsigned char *comp_active; /* being made: a loop or call inside it */
    int depth;          /* nested loops and calls being made */
} ctx;

static commsched_status oom(ctx *x)
{
    return commsched_error_set(x->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* Appends s[0..len) and a NUL to the pool; *off: where. */
static commsched_status pool_add(ctx *x, const char *s, size_t len,
                                 size_t *off)
{
    if (grow((void **)&x->pool, &x->cap_pool, x->n_pool + len + 1, 1) != 0)
        return oom(x);
    memcpy(x->pool + x->n_pool, s, len);
    x->pool[x->n_pool + len] = '\0';
    *off = x->n_pool;
    x->n_pool += len + 1;
    return COMMSCHED_OK;
}

/* Appends a[0..al) b[0..bl) and a NUL: one name of two parts. */
static commsched_status pool_add2(ctx *x, const char *a, size_t al,
                                  const char *b, size_t bl, size_t *off)
{
    if (grow((void **)&x->pool, &x->cap_pool, x->n_pool + al + bl + 1, 1) !=
        0)
        return oom(x);
    memcpy(x->pool + x->n_pool, a, al);
    memcpy(x->pool + x->n_pool + al, b, bl);
    x->pool[x->n_pool + al + bl] = '\0';
    *off = x->n_pool;
    x->n_pool += al + bl + 1;
    return COMMSCHED_OK;
}

static const char *pool_str(const ctx *x, size_t off) { return x->pool + off; }

static commsched_status prefix_push(ctx *x, const char *s, size_t len)
{
    if (grow((void **)&x->prefix, &x->cap_prefix, x->n_prefix + len + 1,
             1) != 0)
        return oom(x);
    memcpy(x->prefix + x->n_prefix, s, len);
    x->n_prefix += len;
    x->prefix[x->n_prefix] = '\0';
    return COMMSCHED_OK;
}

static const hlo_shape *shape_at(const ctx *x, uint32_t s)
{
    return &x->m->shapes[s];
}

/* A new buffer named PREFIX + base + suffix. */
static commsched_status new_buf(ctx *x, hlo_span base, const char *suffix,
                                int64_t size, size_t *id)
{
    size_t sl = strlen(suffix);
    size_t len = x->n_prefix + base.len + sl;
    if (grow((void **)&x->pool, &x->cap_pool, x->n_pool + len + 1, 1) != 0 ||
        grow((void **)&x->buf_name, &x->cap_bufs, x->n_bufs + 1,
             sizeof *x->buf_name) != 0 ||
        grow((void **)&x->buf_size, &x->cap_bufsize, x->n_bufs + 1,
             sizeof *x->buf_size) != 0)
        return oom(x);
    char *d = x->pool + x->n_pool;
    memcpy(d, x->prefix, x->n_prefix);
    memcpy(d + x->n_prefix, base.p, base.len);
    memcpy(d + x->n_prefix + base.len, suffix, sl + 1);
    x->buf_name[x->n_bufs] = x->n_pool;
    x->buf_size[x->n_bufs] = size;
    x->n_pool += len + 1;
    *id = x->n_bufs++;
    return COMMSCHED_OK;
}

static commsched_status push_leaf(ctx *x, size_t id)
{
    if (x->n_leaves >= MAX_LEAVES)
        return commsched_error_set(
            x->err, COMMSCHED_ENOMEM, NULL,
            "more than %zu buffers (the HLO importer's limit)",
            (size_t)MAX_LEAVES);
    if (grow((void **)&x->leaves, &x->cap_leaves, x->n_leaves + 1,
             sizeof *x->leaves) != 0)
        return oom(x);
    x->leaves[x->n_leaves++] = id;
    return COMMSCHED_OK;
}

/* Leaves of nothing: leaves_for makes buffers of the shape's own sizes. */
#define NO_ALIAS SIZE_MAX

/* One new buffer per leaf of shape s, named base or base{i,j} (the
 * leaf's ShapeIndex), appended to the leaves; alias (NO_ALIAS: none) is
 * where in the leaves the buffers they alias start, leaf by leaf (their
 * sizes are those). An offset, not a pointer: the leaves grow here. */
static commsched_status make_leaves(ctx *x, uint32_t s, hlo_span base,
                                    char *path, size_t plen, size_t cap,
                                    size_t alias, size_t *k)
{
    const hlo_shape *sh = shape_at(x, s);
    commsched_status st;
    if (sh->kind != HLO_TUPLE) {
        const char *sfx = "";
        if (plen > 0) {
            path[plen] = '}';
            path[plen + 1] = '\0';
            sfx = path;
        }
        size_t id = 0;
        int64_t size = alias != NO_ALIAS
                           ? x->buf_size[x->leaves[alias + *k]]
                           : sh->bytes;
        if ((st = new_buf(x, base, sfx, size, &id)) != COMMSCHED_OK)
            return st;
        (*k)++;
        return push_leaf(x, id);
    }
    for (uint32_t i = 0; i < sh->n; i++) {
        int w = snprintf(path + plen, cap - plen, "%s%u", plen ? "," : "{",
                         i);
        if (w < 0 || (size_t)w + plen + 2 >= cap)
            return commsched_error_set(x->err, COMMSCHED_EINTERNAL, NULL,
                                       "tuple index path too long");
        if ((st = make_leaves(x, x->m->children[sh->children + i], base,
                              path, plen + (size_t)w, cap, alias, k)) !=
            COMMSCHED_OK)
            return st;
    }
    return COMMSCHED_OK;
}

/* MAX_DEPTH levels of at most 10 digits and a comma, and the braces. */
#define PATH_CAP (64 * 12 + 4)

static commsched_status leaves_for(ctx *x, uint32_t s, hlo_span base,
                                   size_t alias, val *out)
{
    char path[PATH_CAP];
    size_t k = 0;
    if (x->n_leaves + shape_at(x, s)->leaves > MAX_LEAVES)
        return commsched_error_set(
            x->err, COMMSCHED_ENOMEM, NULL,
            "more than %zu buffers (the HLO importer's limit)",
            (size_t)MAX_LEAVES);
    out->off = x->n_leaves;
    out->pending = 0;
    commsched_status st = make_leaves(x, s, base, path, 0, sizeof path,
                                      alias, &k);
    out->n = (uint32_t)(x->n_leaves - out->off);
    return st;
}

/* The node about to be added: where it stands, and the node limit. */
static commsched_status node_slot(ctx *x, hlo_span at)
{
    if (x->n_nodes >= HLO_MAX_NODES)
        return hlo_fail(x->err, COMMSCHED_ENOMEM, at,
                        "the graph would have more than %u nodes (the HLO "
                        "importer's limit; unrolled loops multiply their "
                        "bodies)",
                        HLO_MAX_NODES);
    if (grow((void **)&x->node_at, &x->cap_nodes, x->n_nodes + 1,
             sizeof *x->node_at) != 0)
        return oom(x);
    x->node_at[x->n_nodes] = at;
    return COMMSCHED_OK;
}

static commsched_status add_node(ctx *x, commsched_node_spec *s, hlo_span at)
{
    commsched_status st = node_slot(x, at);
    if (st != COMMSCHED_OK)
        return st;
    st = commsched_builder_add_node(x->b, s, x->err);
    if (st == COMMSCHED_OK)
        x->n_nodes++;
    return st;
}

/* ---------------------------------------------------------------------- */
/* Numbers and lists in attribute values                                  */

/* "{1,2,3}" into out (at most cap); the count, or -1 when malformed. */
static long int_list(hlo_span s, int64_t *out, long cap)
{
    hlo_rd r = {s.p, s.p + s.len};
    long n = 0;
    if (!hlo_rd_char(&r, '{'))
        return -1;
    if (hlo_rd_char(&r, '}'))
        return 0;
    do {
        int64_t v = hlo_rd_int(&r);
        if (v < 0 || n >= cap)
            return -1;
        out[n++] = v;
    } while (hlo_rd_char(&r, ','));
    return hlo_rd_char(&r, '}') && (hlo_rd_blank(&r), r.p == r.end) ? n : -1;
}

static double shape_elems(const ctx *x, const hlo_shape *s)
{
    double e = 1;
    for (uint16_t i = 0; i < s->rank; i++)
        e *= (double)x->m->dims[s->dims + i];
    return e;
}

static const hlo_instr *operand(const ctx *x, const hlo_instr *in, uint32_t k)
{
    return &x->m->instrs[x->m->operands[in->ops + k].instr];
}

/* ---------------------------------------------------------------------- */
/* Work: flops of dots and convolutions (docs/COST.md)                    */

static commsched_status comp_work(ctx *x, uint32_t k, hlo_span at,
                                  double *flops, int *gemm);

/* The computations an attribute names: "%a" or "{%a, %b}". */
static commsched_status called(ctx *x, const hlo_attr *a, double *flops,
                               int *gemm)
{
    const char *p = a->val.p, *end = p + a->val.len;
    while (p < end) {
        while (p < end && (*p == '{' || *p == '}' || *p == ',' || *p == ' '))
            p++;
        const char *s = p;
        while (p < end && *p != ',' && *p != '}' && *p != ' ')
            p++;
        if (p == s)
            continue;
        uint32_t k = hlo_comp_find(x->m, s, (size_t)(p - s));
        if (k == UINT32_MAX)
            return hlo_fail(x->err, COMMSCHED_EPARSE, a->val,
                            "%.*s names no computation of the module: "
                            "\"%.*s\"",
                            (int)a->key.len, a->key.p, (int)(p - s), s);
        double f = 0;
        int g = 0;
        commsched_status st = comp_work(x, k, a->val, &f, &g);
        if (st != COMMSCHED_OK)
            return st;
        *flops += f;
        *gemm |= g;
    }
    return COMMSCHED_OK;
}

static commsched_status dot_flops(ctx *x, const hlo_instr *in, double *flops)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, "lhs_contracting_dims");
    if (in->n_ops < 2)
        return hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                        "a dot has two operands");
    const hlo_shape *lhs = shape_at(x, operand(x, in, 0)->shape);
    int64_t dims[64];
    long n = a ? int_list(a->val, dims, 64) : 0;
    if (n < 0)
        return hlo_fail(x->err, COMMSCHED_EPARSE, a->val,
                        "lhs_contracting_dims: expected {dimension, ...}");
    double contract = 1;
    for (long i = 0; i < n; i++) {
        if (lhs->kind != HLO_ARRAY || dims[i] >= lhs->rank)
            return hlo_fail(x->err, COMMSCHED_EPARSE, a->val,
                            "lhs_contracting_dims: dimension %lld of a "
                            "rank-%u operand",
                            (long long)dims[i], (unsigned)lhs->rank);
        contract *= (double)x->m->dims[lhs->dims + (uint32_t)dims[i]];
    }
    *flops = 2 * shape_elems(x, shape_at(x, in->shape)) * contract;
    return COMMSCHED_OK;
}

/* 2 x output elements x kernel elements per output feature (the kernel's
 * 'o' dimension in dim_labels "b01f_01io->b01f"). */
static commsched_status conv_flops(ctx *x, const hlo_instr *in,
                                   double *flops)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, "dim_labels");
    if (in->n_ops < 2 || !a)
        return hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                        "a convolution has two operands and dim_labels");
    const char *end = a->val.p + a->val.len;
    const char *us = memchr(a->val.p, '_', a->val.len), *arrow = NULL;
    for (const char *p = us; p && p + 1 < end && !arrow; p++)
        if (p[0] == '-' && p[1] == '>')
            arrow = p;
    const hlo_shape *k = shape_at(x, operand(x, in, 1)->shape);
    const char *o = arrow ? memchr(us, 'o', (size_t)(arrow - us)) : NULL;
    if (!o ||
        k->kind != HLO_ARRAY || (size_t)(o - us - 1) >= k->rank)
        return hlo_fail(x->err, COMMSCHED_EPARSE, a->val,
                        "dim_labels: expected the input, kernel and output "
                        "labels (\"b01f_01io->b01f\")");
    double per = shape_elems(x, k);
    int64_t of = x->m->dims[k->dims + (uint32_t)(o - us - 1)];
    *flops = of > 0 ? 2 * shape_elems(x, shape_at(x, in->shape)) * per /
                          (double)of
                    : 0;
    return COMMSCHED_OK;
}

static commsched_status instr_work(ctx *x, const hlo_instr *in, double *flops,
                                   int *gemm)
{
    commsched_status st = COMMSCHED_OK;
    double f = 0;
    if (hlo_span_eq(in->opcode, "dot")) {
        st = dot_flops(x, in, &f);
        *gemm = 1;
    } else if (hlo_span_eq(in->opcode, "convolution")) {
        st = conv_flops(x, in, &f);
        *gemm = 1;
    } else {
        static const char *const keys[] = {"calls", "called_computations",
                                           "to_apply"};
        for (size_t i = 0; i < 3 && st == COMMSCHED_OK; i++) {
            /* to_apply of a reduce or a collective is a scalar combiner */
            if (i == 2 && !hlo_span_eq(in->opcode, "call"))
                break;
            const hlo_attr *a = hlo_attr_find(x->m, in, keys[i]);
            if (a)
                st = called(x, a, &f, gemm);
        }
    }
    *flops += f;
    return st;
}

static commsched_status comp_work(ctx *x, uint32_t k, hlo_span at,
                                  double *flops, int *gemm)
{
    if (x->comp_state[k] == 1)
        return hlo_fail(x->err, COMMSCHED_EPARSE, at,
                        "computation %.*s calls itself",
                        (int)x->m->comps[k].name.len, x->m->comps[k].name.p);
    if (x->comp_state[k] == 0) {
        x->comp_state[k] = 1;
        double f = 0;
        int g = 0;
        const hlo_comp *c = &x->m->comps[k];
        for (uint32_t i = c->first; i < c->first + c->n; i++) {
            commsched_status st = instr_work(x, &x->m->instrs[i], &f, &g);
            if (st != COMMSCHED_OK)
                return st;
        }
        x->comp_flops[k] = f;
        x->comp_gemm[k] = (unsigned char)g;
        x->comp_state[k] = 2;
    }
    *flops = x->comp_flops[k];
    *gemm = x->comp_gemm[k];
    return COMMSCHED_OK;
}

/* ---------------------------------------------------------------------- */
/* Collectives and their groups                                           */

typedef struct coll_kind {
    const char *sync, *start; /* opcodes; start may be NULL */
    commsched_coll_op op;
    int global_ids;           /* has use_global_device_ids */
} coll_kind;

static const coll_kind coll_kinds[] = {
    {"all-reduce", "all-reduce-start", COMMSCHED_COLL_ALL_REDUCE, 1},
    {"all-gather", "all-gather-start", COMMSCHED_COLL_ALL_GATHER, 1},
    {"reduce-scatter", NULL, COMMSCHED_COLL_REDUCE_SCATTER, 1},
    {"all-to-all", NULL, COMMSCHED_COLL_ALL_TO_ALL, 0},
    {"ragged-all-to-all", NULL, COMMSCHED_COLL_ALL_TO_ALL, 0},
    /* one transfer to one peer per device: priced as a send */
    {"collective-permute", "collective-permute-start", COMMSCHED_COLL_SEND, 0},
    {"collective-broadcast", NULL, COMMSCHED_COLL_BROADCAST, 0},
};
#define N_COLL_KINDS (sizeof coll_kinds / sizeof coll_kinds[0])

static const coll_kind *coll_sync(hlo_span op)
{
    for (size_t i = 0; i < N_COLL_KINDS; i++)
        if (hlo_span_eq(op, coll_kinds[i].sync))
            return &coll_kinds[i];
    return NULL;
}

static const coll_kind *coll_start(hlo_span op)
{
    for (size_t i = 0; i < N_COLL_KINDS; i++)
        if (coll_kinds[i].start && hlo_span_eq(op, coll_kinds[i].start))
            return &coll_kinds[i];
    return NULL;
}

/* The group a collective talks to (hlo_group: its name and size),
 * registered with the builder the first time its name is seen; *name_off:
 * the name in the pool. */
static commsched_status group_of(ctx *x, const hlo_instr *in,
                                 const coll_kind *kind, size_t *name_off)
{
    char buf[HLO_GROUP_NAME_CAP];
    int64_t size = 1;
    size_t off = 0; /* pool_add sets it; gcc -O2 cannot tell */
    commsched_status st =
        hlo_group(x->m, in, kind->op == COMMSCHED_COLL_SEND, kind->global_ids,
                  &size, buf, sizeof buf, x->err);
    if (st != COMMSCHED_OK ||
        (st = pool_add(x, buf, strlen(buf), &off)) != COMMSCHED_OK)
        return st;
    for (size_t i = 0; i < x->n_groups; i++)
        if (strcmp(pool_str(x, x->groups[i].name), pool_str(x, off)) == 0) {
            x->n_pool = off; /* a name already made */
            *name_off = x->groups[i].name;
            return COMMSCHED_OK;
        }
    if (grow((void **)&x->groups, &x->cap_groups, x->n_groups + 1,
             sizeof *x->groups) != 0)
        return oom(x);
    x->groups[x->n_groups].name = off;
    x->groups[x->n_groups].at = in->name;
    x->n_groups++;
    x->st->groups++;
    *name_off = off;
    return commsched_builder_add_group(x->b, pool_str(x, off), size, 0,
                                       x->err);
}

static commsched_reduce_op reduce_of(ctx *x, const hlo_instr *in)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, "to_apply");
    uint32_t k = a ? hlo_comp_find(x->m, a->val.p, a->val.len) : UINT32_MAX;
    if (k == UINT32_MAX)
        return COMMSCHED_REDUCE_NONE;
    hlo_span op = x->m->instrs[x->m->comps[k].root].opcode;
    return hlo_span_eq(op, "add") ? COMMSCHED_REDUCE_SUM
           : hlo_span_eq(op, "multiply") ? COMMSCHED_REDUCE_PRODUCT
           : hlo_span_eq(op, "maximum") ? COMMSCHED_REDUCE_MAX
           : hlo_span_eq(op, "minimum") ? COMMSCHED_REDUCE_MIN
                                        : COMMSCHED_REDUCE_NONE;
}

/* Fills x->names with the leaves of vals and x->outs with the leaves of
 * out (aliases of `alias`'s leaves when alias is not NULL): called once
 * every name of the node is in the pool, which may move until then. */
static commsched_status node_names(ctx *x, const val *vals, size_t n_vals,
                                   const val *out, const val *alias,
                                   size_t *n_in)
{
    size_t n = 0;
    for (size_t i = 0; i < n_vals; i++)
        n += vals[i].n;
    if (grow((void **)&x->names, &x->cap_names, n + 1, sizeof *x->names) !=
            0 ||
        grow((void **)&x->outs, &x->cap_outs, out->n + 1, sizeof *x->outs) !=
            0)
        return oom(x);
    *n_in = 0;
    for (size_t i = 0; i < n_vals; i++)
        for (uint32_t j = 0; j < vals[i].n; j++)
            x->names[(*n_in)++] =
                pool_str(x, x->buf_name[x->leaves[vals[i].off + j]]);
    for (uint32_t j = 0; j < out->n; j++) {
        size_t id = x->leaves[out->off + j];
        x->outs[j].name = pool_str(x, x->buf_name[id]);
        x->outs[j].size = alias ? 0 : x->buf_size[id];
        x->outs[j].alias_of =
            alias ? pool_str(x, x->buf_name[x->leaves[alias->off + j]]) : NULL;
    }
    return COMMSCHED_OK;
}

/* A wait named PREFIX + base + suffix reading the collective outputs v,
 * its aliases of them named the same along shape s (the done's, or the
 * synchronous collective's). */
static commsched_status add_wait(ctx *x, hlo_span base, const char *suffix,
                                 uint32_t s, const val *v, hlo_span at,
                                 val *out)
{
    commsched_status st;
    if (shape_at(x, s)->leaves != v->n)
        return hlo_fail(x->err, COMMSCHED_EPARSE, at,
                        "the done's shape has %u leaves, its collective's "
                        "result %u",
                        shape_at(x, s)->leaves, v->n);
    size_t keep = x->n_prefix, node = 0; /* set by pool_add */
    hlo_span empty = {"", 0, 0, 0};
    if ((st = prefix_push(x, base.p, base.len)) == COMMSCHED_OK &&
        (st = prefix_push(x, suffix, strlen(suffix))) == COMMSCHED_OK &&
        (st = pool_add(x, x->prefix, x->n_prefix, &node)) == COMMSCHED_OK)
        st = leaves_for(x, s, empty, v->off, out);
    x->n_prefix = keep;
    x->prefix[keep] = '\0';
    size_t ni = 0;
    if (st != COMMSCHED_OK ||
        (st = node_names(x, v, 1, out, v, &ni)) != COMMSCHED_OK)
        return st;
    commsched_node_spec sp = import_wait_spec(
        pool_str(x, node), (const char *const *)x->names, ni, x->outs, out->n);
    x->st->waits++;
    return add_node(x, &sp, at);
}

/* A collective node `in` (its attributes those of `attrs_of`: itself, or
 * the collective an async-start wraps) reading vals, writing the leaves
 * of shape `result`. */
static commsched_status add_collective(ctx *x, const hlo_instr *in,
                                       const hlo_instr *attrs_of,
                                       const coll_kind *kind,
                                       const val *vals, size_t n_vals,
                                       uint32_t result, val *out)
{
    commsched_status st;
    size_t gname = 0, node = 0, ni = 0;
    if ((st = group_of(x, attrs_of, kind, &gname)) != COMMSCHED_OK ||
        (st = leaves_for(x, result, in->name, NO_ALIAS, out)) !=
            COMMSCHED_OK ||
        (st = pool_add2(x, x->prefix, x->n_prefix, in->name.p, in->name.len,
                        &node)) != COMMSCHED_OK ||
        (st = node_names(x, vals, n_vals, out, NULL, &ni)) != COMMSCHED_OK)
        return st;
    const hlo_shape *rs = shape_at(x, result);
    while (rs->kind == HLO_TUPLE && rs->n > 0)
        rs = shape_at(x, x->m->children[rs->children]);
    commsched_node_spec sp = {0};
    sp.name = pool_str(x, node);
    sp.kind = COMMSCHED_NODE_COLLECTIVE;
    sp.op = commsched_coll_op_str(kind->op);
    sp.group = pool_str(x, gname);
    sp.dtype = rs->kind == HLO_ARRAY ? hlo_etype_at(rs->etype)->dtype
                                     : COMMSCHED_DTYPE_NONE;
    sp.reduce_op = kind->op == COMMSCHED_COLL_ALL_REDUCE ||
                           kind->op == COMMSCHED_COLL_REDUCE_SCATTER
                       ? reduce_of(x, attrs_of)
                       : COMMSCHED_REDUCE_NONE;
    sp.inputs = x->names;
    sp.n_inputs = ni;
    sp.outputs = x->outs;
    sp.n_outputs = out->n;
    sp.runtime_ns = sp.flops = sp.bytes = -1;
    x->st->collectives++;
    x->st->per_op[kind->op]++;
    return add_node(x, &sp, in->name);
}

/* ---------------------------------------------------------------------- */
/* Making nodes                                                           */

static commsched_status add_compute(ctx *x, const hlo_instr *in,
                                    const val *vals, size_t n_vals,
                                    uint32_t result, val *out)
{
    commsched_status st;
    double flops = 0, bytes = 0;
    int gemm = 0;
    size_t node = 0, ni = 0;
    if ((st = instr_work(x, in, &flops, &gemm)) != COMMSCHED_OK ||
        (st = leaves_for(x, result, in->name, NO_ALIAS, out)) !=
            COMMSCHED_OK ||
        (st = pool_add2(x, x->prefix, x->n_prefix, in->name.p, in->name.len,
                        &node)) != COMMSCHED_OK ||
        (st = node_names(x, vals, n_vals, out, NULL, &ni)) != COMMSCHED_OK)
        return st;
    for (size_t i = 0; i < n_vals; i++)
        for (uint32_t j = 0; j < vals[i].n; j++)
            bytes += (double)x->buf_size[x->leaves[vals[i].off + j]];
    for (uint32_t j = 0; j < out->n; j++)
        bytes += (double)x->outs[j].size;
    if (flops > COMMSCHED_MAX_WORK || bytes > COMMSCHED_MAX_WORK)
        return hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                        "%.3g flops / %.3g bytes: beyond the format's limit "
                        "of 1e30",
                        flops, bytes);
    char op[64];
    const hlo_attr *tgt = hlo_span_eq(in->opcode, "custom-call")
                              ? hlo_attr_find(x->m, in, "custom_call_target")
                              : NULL;
    if (tgt && tgt->val.len > 2) /* what it is: "__onednn$matmul", ... */
        snprintf(op, sizeof op, "custom-call:%.*s", (int)(tgt->val.len - 2),
                 tgt->val.p + 1);
    else
        snprintf(op, sizeof op, "%.*s", (int)in->opcode.len, in->opcode.p);
    commsched_node_spec sp = {0};
    sp.name = pool_str(x, node);
    sp.kind = COMMSCHED_NODE_COMPUTE;
    sp.op = op;
    sp.inputs = x->names;
    sp.n_inputs = ni;
    sp.outputs = x->outs;
    sp.n_outputs = out->n;
    sp.runtime_ns = -1;
    sp.flops = flops > 0 ? flops : -1;
    sp.bytes = bytes;
    sp.gemm_like = gemm;
    x->st->compute++;
    return add_node(x, &sp, in->name);
}

/* Graph inputs for the leaves of shape s (a parameter, a constant). */
static commsched_status add_inputs(ctx *x, const hlo_instr *in, val *out)
{
    commsched_status st = leaves_for(x, in->shape, in->name, NO_ALIAS, out);
    for (uint32_t j = 0; j < out->n && st == COMMSCHED_OK; j++) {
        size_t id = x->leaves[out->off + j];
        if (grow((void **)&x->input_at, &x->cap_inputs, x->n_inputs + 1,
                 sizeof *x->input_at) != 0)
            return oom(x);
        x->input_at[x->n_inputs++] = in->name;
        st = commsched_builder_add_input(x->b, pool_str(x, x->buf_name[id]),
                                         x->buf_size[id], 0, x->err);
        x->st->inputs++;
    }
    return st;
}

/* The leaves of child `index` of a tuple value. */
static commsched_status tuple_child(ctx *x, const hlo_instr *in,
                                    uint32_t shape, const val *v,
                                    int64_t index, val *out)
{
    const hlo_shape *s = shape_at(x, shape);
    if (s->kind != HLO_TUPLE || index < 0 || index >= s->n)
        return hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                        "tuple index %lld of a %s", (long long)index,
                        s->kind == HLO_TUPLE ? "smaller tuple" : "non-tuple");
    size_t off = v->off;
    for (int64_t i = 0; i < index; i++)
        off += shape_at(x, x->m->children[s->children + (uint32_t)i])->leaves;
    out->off = off;
    out->n = shape_at(x, x->m->children[s->children + (uint32_t)index])->leaves;
    out->pending = v->pending;
    return COMMSCHED_OK;
}

static int64_t int_attr(const ctx *x, const hlo_instr *in, const char *key)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, key);
    if (!a)
        return -1;
    hlo_rd r = {a->val.p, a->val.p + a->val.len};
    int64_t v = hlo_rd_int(&r);
    return r.p == r.end ? v : -1;
}

/* The while loop's known trip count, from its backend_config JSON. */
static commsched_status trip_count(ctx *x, const hlo_instr *in, int64_t *n)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, "backend_config");
    json_t *root = NULL;
    if (a && a->val.len > 0 && (a->val.p[0] == '{' || a->val.p[0] == '"')) {
        /* raw JSON, or (older printers) a C-escaped string of it */
        const char *text = a->val.p;
        size_t len = a->val.len;
        char *copy = NULL;
        if (text[0] == '"') {
            if (!(copy = malloc(len)))
                return oom(x);
            size_t k = 0;
            for (size_t i = 1; i + 1 < len; i++) {
                if (text[i] == '\\' && i + 2 < len)
                    i++;
                copy[k++] = text[i];
            }
            text = copy;
            len = k;
        }
        json_error_t je;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        free(copy);
        if (!root)
            return hlo_fail(x->err, COMMSCHED_EPARSE, a->val,
                            "backend_config is not JSON: %s", je.text);
    }
    json_t *k = json_object_get(json_object_get(root, "known_trip_count"),
                                "n");
    int64_t v = -1;
    if (json_is_string(k)) {
        const char *s = json_string_value(k);
        char *end = NULL;
        long long t = strtoll(s, &end, 10);
        if (*s >= '0' && *s <= '9' && end && *end == '\0')
            v = t;
    } else if (json_is_integer(k)) {
        v = json_integer_value(k);
    }
    json_decref(root);
    if (v < 0)
        return hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                        "while loop %%%.*s has no known trip count "
                        "(backend_config's known_trip_count): only a loop "
                        "whose count is static can be unrolled into the "
                        "step",
                        (int)in->name.len, in->name.p);
    *n = v;
    return COMMSCHED_OK;
}

static commsched_status called_comp(ctx *x, const hlo_instr *in,
                                    const char *key, uint32_t *k)
{
    const hlo_attr *a = hlo_attr_find(x->m, in, key);
    *k = a ? hlo_comp_find(x->m, a->val.p, a->val.len) : UINT32_MAX;
    if (*k == UINT32_MAX)
        return hlo_fail(x->err, COMMSCHED_EPARSE, a ? a->val : in->name,
                        "%.*s: %s names no computation of the module",
                        (int)in->opcode.len, in->opcode.p, key);
    return COMMSCHED_OK;
}

static commsched_status emit_comp(ctx *x, uint32_t k, const val *params,
                                  size_t n_params, val *result);

/* Opcodes that move no data: the value is (part of) an operand's. */
static int is_alias_op(hlo_span op)
{
    static const char *const names[] = {
        "bitcast", "tuple", "get-tuple-element", "opt-barrier",
        "optimization-barrier", "add-dependency", "domain", "async-update",
        "copy-done"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (hlo_span_eq(op, names[i]))
            return 1;
    return 0;
}

/* Where an async start's result sits in its shape: element 1 of
 * (operands, result, context...) -- all-reduce-start's shape is the
 * result itself. */
static uint32_t start_result(const ctx *x, const hlo_instr *in)
{
    const hlo_shape *s = shape_at(x, in->shape);
    if (s->kind == HLO_TUPLE && s->n >= 2 &&
        !hlo_span_eq(in->opcode, "all-reduce-start"))
        return x->m->children[s->children + 1];
    return in->shape;
}

static commsched_status emit_instr(ctx *x, const hlo_instr *in, val *env,
                                   uint32_t local, const val *params,
                                   size_t n_params, int entry)
{
    commsched_status st;
    val *out = &env[local];
    uint32_t base = x->m->comps[in->comp].first;
    val ops_stack[8];
    val *ops = in->n_ops <= 8 ? ops_stack
                              : malloc(in->n_ops * sizeof *ops);
    if (!ops)
        return oom(x);
    for (uint32_t j = 0; j < in->n_ops; j++)
        ops[j] = env[x->m->operands[in->ops + j].instr - base];
    hlo_span op = in->opcode;
    const coll_kind *kind;
    if (hlo_span_eq(op, "parameter")) {
        hlo_rd r = {in->args.p, in->args.p + in->args.len};
        int64_t i = hlo_rd_int(&r);
        if (i < 0 || r.p != r.end)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->args,
                          "expected the parameter's number");
        else if (entry)
            st = add_inputs(x, in, out);
        else if ((size_t)i >= n_params)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->args,
                          "parameter %lld of a computation given %zu",
                          (long long)i, n_params);
        else if (shape_at(x, in->shape)->leaves != params[i].n)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                          "the parameter's shape has %u leaves, its "
                          "argument %u",
                          shape_at(x, in->shape)->leaves, params[i].n);
        else {
            *out = params[i];
            st = COMMSCHED_OK;
        }
    } else if (hlo_span_eq(op, "constant")) {
        st = add_inputs(x, in, out);
    } else if (is_alias_op(op)) {
        x->st->aliases++;
        if (hlo_span_eq(op, "get-tuple-element")) {
            st = in->n_ops == 1
                     ? tuple_child(x, in, operand(x, in, 0)->shape, &ops[0],
                                   int_attr(x, in, "index"), out)
                     : hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                                "get-tuple-element has one operand");
        } else if (hlo_span_eq(op, "copy-done")) {
            st = in->n_ops == 1
                     ? tuple_child(x, in, operand(x, in, 0)->shape, &ops[0],
                                   0, out)
                     : hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                                "copy-done has one operand");
        } else if (hlo_span_eq(op, "tuple") ||
                   hlo_span_eq(op, "opt-barrier") ||
                   hlo_span_eq(op, "optimization-barrier")) {
            /* the operands' leaves side by side, in a fresh range */
            out->off = x->n_leaves;
            out->pending = 0;
            st = COMMSCHED_OK;
            for (uint32_t j = 0; j < in->n_ops && st == COMMSCHED_OK; j++)
                for (uint32_t l = 0; l < ops[j].n && st == COMMSCHED_OK; l++)
                    st = push_leaf(x, x->leaves[ops[j].off + l]);
            out->n = (uint32_t)(x->n_leaves - out->off);
            if (st == COMMSCHED_OK && out->n != shape_at(x, in->shape)->leaves)
                st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                              "the shape has %u leaves, the operands %u",
                              shape_at(x, in->shape)->leaves, out->n);
        } else if (in->n_ops == 0) {
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                          "%.*s needs an operand", (int)op.len, op.p);
        } else if (ops[0].n != shape_at(x, in->shape)->leaves) {
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                          "the shape has %u leaves, the operand %u",
                          shape_at(x, in->shape)->leaves, ops[0].n);
        } else {
            *out = ops[0]; /* bitcast, add-dependency, domain, async-update */
            st = COMMSCHED_OK;
        }
    } else if ((kind = coll_sync(op)) != NULL) {
        val c;
        st = add_collective(x, in, in, kind, ops, in->n_ops, in->shape, &c);
        if (st == COMMSCHED_OK)
            st = add_wait(x, in->name, ".wait", in->shape, &c, in->name, out);
    } else if ((kind = coll_start(op)) != NULL) {
        st = add_collective(x, in, in, kind, ops, in->n_ops,
                            start_result(x, in), out);
        out->pending = 1;
        x->st->async_pairs++;
    } else if (hlo_span_eq(op, "async-start")) {
        uint32_t k;
        st = called_comp(x, in, "calls", &k);
        if (st == COMMSCHED_OK) {
            const hlo_instr *w = &x->m->instrs[x->m->comps[k].root];
            if ((kind = coll_sync(w->opcode)) != NULL) {
                st = add_collective(x, in, w, kind, ops, in->n_ops,
                                    start_result(x, in), out);
                out->pending = 1;
                x->st->async_pairs++;
            } else { /* async compute: done where it starts */
                st = add_compute(x, in, ops, in->n_ops, start_result(x, in),
                                 out);
            }
        }
    } else if (op.len > 5 && memcmp(op.p + op.len - 5, "-done", 5) == 0 &&
               !hlo_span_eq(op, "send-done") &&
               !hlo_span_eq(op, "recv-done")) {
        if (in->n_ops != 1)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                          "%.*s has one operand", (int)op.len, op.p);
        else if (ops[0].pending)
            st = add_wait(x, in->name, "", in->shape, &ops[0], in->name, out);
        else if (ops[0].n != shape_at(x, in->shape)->leaves)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                          "the shape has %u leaves, the operand %u",
                          shape_at(x, in->shape)->leaves, ops[0].n);
        else {
            *out = ops[0];
            x->st->aliases++;
            st = COMMSCHED_OK;
        }
    } else if (hlo_span_eq(op, "send") || hlo_span_eq(op, "recv") ||
               hlo_span_eq(op, "send-done") || hlo_span_eq(op, "recv-done")) {
        st = hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                      "%.*s: send and recv (host transfers, or a "
                      "collective-permute XLA split into them) are not "
                      "imported",
                      (int)op.len, op.p);
    } else if (hlo_span_eq(op, "conditional")) {
        st = hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                      "conditional %%%.*s: which branch runs is decided at "
                      "run time, so no single order of the step exists; "
                      "not imported",
                      (int)in->name.len, in->name.p);
    } else if (hlo_span_eq(op, "while") || hlo_span_eq(op, "call")) {
        int loop = hlo_span_eq(op, "while");
        uint32_t body;
        int64_t trips = 1;
        st = called_comp(x, in, loop ? "body" : "to_apply", &body);
        if (st == COMMSCHED_OK && loop)
            st = trip_count(x, in, &trips);
        if (st == COMMSCHED_OK && loop && in->n_ops != 1)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->opcode,
                          "a while loop has one operand");
        if (st == COMMSCHED_OK && x->depth >= 64)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                          "loops and calls nested deeper than 64");
        val cur = loop ? ops[0] : (val){0, 0, 0};
        if (loop) {
            x->st->loops++;
            if (trips > (int64_t)HLO_MAX_NODES)
                st = hlo_fail(x->err, COMMSCHED_ENOMEM, in->name,
                              "while loop %%%.*s runs %lld times: unrolled, "
                              "more than %u nodes (the HLO importer's limit)",
                              (int)in->name.len, in->name.p,
                              (long long)trips, HLO_MAX_NODES);
        } else {
            x->st->calls++;
        }
        size_t keep = x->n_prefix;
        x->depth++;
        for (int64_t t = 0; t < trips && st == COMMSCHED_OK; t++) {
            char tag[32];
            int w = loop ? snprintf(tag, sizeof tag, "#%lld/", (long long)t)
                         : snprintf(tag, sizeof tag, "/");
            st = prefix_push(x, in->name.p, in->name.len);
            if (st == COMMSCHED_OK)
                st = prefix_push(x, tag, (size_t)w);
            val res = cur;
            if (st == COMMSCHED_OK)
                st = emit_comp(x, body, loop ? &cur : ops,
                               loop ? 1 : in->n_ops, &res);
            x->n_prefix = keep;
            x->prefix[keep] = '\0';
            cur = res;
            if (loop && ++x->st->loop_iters > HLO_MAX_NODES && st == COMMSCHED_OK)
                st = hlo_fail(x->err, COMMSCHED_ENOMEM, in->name,
                              "more than %u loop iterations unrolled (the "
                              "HLO importer's limit)",
                              HLO_MAX_NODES);
        }
        x->depth--;
        if (st == COMMSCHED_OK && cur.n != shape_at(x, in->shape)->leaves)
            st = hlo_fail(x->err, COMMSCHED_EPARSE, in->name,
                          "the shape has %u leaves, the %s's result %u",
                          shape_at(x, in->shape)->leaves,
                          loop ? "loop body" : "call", cur.n);
        *out = cur;
        out->pending = 0;
    } else {
        st = add_compute(x, in, ops, in->n_ops, in->shape, out);
    }
    if (ops != ops_stack)
        free(ops);
    return st;
}

static commsched_status emit_comp(ctx *x, uint32_t k, const val *params,
                                  size_t n_params, val *result)
{
    const hlo_comp *c = &x->m->comps[k];
    int entry = k == x->m->entry && x->depth == 0;
    if (x->comp_active[k])
        return hlo_fail(x->err, COMMSCHED_EPARSE, c->name,
                        "computation %.*s runs itself (a loop or call "
                        "inside it names it)",
                        (int)c->name.len, c->name.p);
    val *env = calloc(c->n, sizeof *env);
    if (!env)
        return oom(x);
    x->comp_active[k] = 1;
    commsched_status st = COMMSCHED_OK;
    for (uint32_t i = 0; i < c->n && st == COMMSCHED_OK; i++) {
        if (entry)
            x->st->entry_instrs++;
        st = emit_instr(x, &x->m->instrs[c->first + i], env, i, params,
                        n_params, entry);
    }
    if (st == COMMSCHED_OK)
        *result = env[c->root - c->first];
    x->comp_active[k] = 0;
    free(env);
    return st;
}

/* A builder error (a JSON path such as nodes[12].inputs[1]) located at
 * the HLO instruction that made the element. */
static commsched_status relocate(ctx *x, const commsched_error *be)
{
    unsigned long idx = 0;
    const hlo_span *at = NULL;
    const char *p = be->path;
    static const char *const heads[] = {"nodes[", "inputs[", "groups[",
                                        "outputs["};
    for (size_t h = 0; h < 4 && !at; h++) {
        size_t l = strlen(heads[h]);
        if (strncmp(p, heads[h], l) != 0)
            continue;
        idx = strtoul(p + l, NULL, 10);
        if (h == 0 && idx <= x->n_nodes && idx < x->cap_nodes)
            at = &x->node_at[idx]; /* n_nodes: the node being added */
        else if (h == 1 && idx < x->n_inputs)
            at = &x->input_at[idx];
        else if (h == 2 && idx < x->n_groups)
            at = &x->groups[idx].at;
        else if (h == 3)
            at = &x->m->instrs[x->m->comps[x->m->entry].root].name;
    }
    hlo_span whole = {x->m->text, 0, 1, 1};
    commsched_error_clear(x->err);
    return hlo_fail(x->err, be->status, at ? *at : whole, "%s", be->text);
}

static void ctx_free(ctx *x)
{
    free(x->pool);
    free(x->buf_name);
    free(x->buf_size);
    free(x->leaves);
    free(x->node_at);
    free(x->input_at);
    free(x->groups);
    free(x->prefix);
    free(x->names);
    free(x->outs);
    free(x->comp_flops);
    free(x->comp_state);
    free(x->comp_gemm);
    free(x->comp_active);
}

commsched_status hlo_build(const hlo_module *m, const char *graph_name,
                           commsched_graph **out, hlo_stats *stats,
                           commsched_error *err)
{
    ctx x;
    memset(&x, 0, sizeof x);
    memset(stats, 0, sizeof *stats);
    *out = NULL;
    x.m = m;
    x.st = stats;
    commsched_error be = {0};
    x.err = &be;
    commsched_status st = commsched_builder_create(graph_name, &x.b, &be);
    x.comp_flops = calloc(m->n_comps ? m->n_comps : 1, sizeof *x.comp_flops);
    x.comp_state = calloc(m->n_comps ? m->n_comps : 1, 1);
    x.comp_gemm = calloc(m->n_comps ? m->n_comps : 1, 1);
    x.comp_active = calloc(m->n_comps ? m->n_comps : 1, 1);
    if (st == COMMSCHED_OK && (!x.comp_flops || !x.comp_state ||
                               !x.comp_gemm || !x.comp_active ||
                               prefix_push(&x, "", 0) != 0))
        st = oom(&x);
    val root = {0, 0, 0};
    if (st == COMMSCHED_OK)
        st = emit_comp(&x, m->entry, NULL, 0, &root);
    /* the root's leaves, each once */
    for (uint32_t j = 0; j < root.n && st == COMMSCHED_OK; j++) {
        size_t id = x.leaves[root.off + j], i = 0;
        while (i < j && x.leaves[root.off + i] != id)
            i++;
        if (i == j)
            st = commsched_builder_add_output(
                x.b, pool_str(&x, x.buf_name[id]), &be);
    }
    if (st == COMMSCHED_OK) {
        st = commsched_builder_finish(x.b, 0, out, &be);
        x.b = NULL;
    }
    if (st != COMMSCHED_OK) {
        commsched_error_clear(err);
        if (be.line > 0 || be.status == COMMSCHED_ENOMEM ||
            be.status == COMMSCHED_EINTERNAL) {
            *err = be;
        } else {
            x.err = err;
            relocate(&x, &be);
        }
    }
    commsched_builder_destroy(x.b);
    ctx_free(&x);
    return st;
}

commsched_status hlo_import_text(const char *text, size_t len,
                                 commsched_graph **out, hlo_stats *stats,
                                 commsched_error *err)
{
    hlo_module m;
    *out = NULL;
    commsched_status st = hlo_parse(text, len, &m, err);
    if (st == COMMSCHED_OK) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)m.name.len, m.name.p);
        st = hlo_build(&m, name, out, stats, err);
    }
    hlo_module_free(&m);
    return st;
}
