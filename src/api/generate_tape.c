/* commsched generate — the generator's state, node emission, parameters,
 * forward ops that record the tape, and the backward pass derived from it
 * (map: generate.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate_internal.h"

int cs_gen_grow(cs_gen *g, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*arr, c * elem);
    if (!n) {
        if (g->st == COMMSCHED_OK)
            g->st = commsched_error_set(&g->err, COMMSCHED_ENOMEM, NULL,
                                        "out of memory");
        return -1;
    }
    *arr = n;
    *cap = c;
    return 0;
}

static void fail(cs_gen *g, const char *what)
{
    if (g->st == COMMSCHED_OK)
        g->st = commsched_error_set(&g->err, COMMSCHED_EINVAL, NULL, "%s",
                                    what);
}

/* Names are "<prefix>.<tag>"; a name that does not fit is an error rather
 * than a silent truncation that could collide. */
void cs_gen_fmt_name(cs_gen *g, char *dst, const char *a, const char *b)
{
    int n = b ? snprintf(dst, CS_GEN_NAME, "%s.%s", a, b)
              : snprintf(dst, CS_GEN_NAME, "%s", a);
    if (n < 0 || n >= CS_GEN_NAME)
        fail(g, "generated name too long");
}

void cs_gen_set_prefix(cs_gen *g, const char *fmt, long i)
{
    snprintf(g->prefix, sizeof g->prefix, fmt, i);
}

int32_t cs_gen_tensor_new(cs_gen *g, const char *name, int64_t bytes, int rg)
{
    /* name may live in g->t itself, which cs_gen_grow() may move */
    char copy[CS_GEN_NAME];
    cs_gen_fmt_name(g, copy, name, NULL);
    if (cs_gen_grow(g, (void **)&g->t, &g->cap_t, g->nt + 1, sizeof *g->t) != 0)
        return 0;
    cs_gen_tensor *t = &g->t[g->nt];
    memcpy(t->name, copy, CS_GEN_NAME);
    t->bytes = bytes;
    t->grad = -1;
    t->param = -1;
    t->rg = (uint8_t)(rg != 0);
    t->nacc = 0;
    return (int32_t)g->nt++;
}

cs_gen_op *cs_gen_tape_push(cs_gen *g, int type, const char *name)
{
    if (cs_gen_grow(g, (void **)&g->ops, &g->cap_ops, g->nops + 1,
                    sizeof *g->ops))
        return NULL;
    cs_gen_op *o = &g->ops[g->nops++];
    memset(o, 0, sizeof *o);
    o->type = (uint8_t)type;
    o->out = o->aux = -1;
    o->in[0] = o->in[1] = o->in[2] = o->in[3] = -1;
    cs_gen_fmt_name(g, o->name, name, NULL);
    return o;
}

/* ---------------------------------------------------------------------- */
/* Node emission                                                           */
/* ---------------------------------------------------------------------- */

void cs_gen_node_begin(cs_gen *g, commsched_node_kind kind, const char *name,
                       const char *op)
{
    cs_gen_pending *c = &g->cur;
    memset(&c->s, 0, sizeof c->s);
    c->n_in = c->n_out = 0;
    cs_gen_fmt_name(g, c->name, name, NULL);
    cs_gen_fmt_name(g, c->op, op, NULL);
    c->s.kind = kind;
    c->s.runtime_ns = c->s.flops = c->s.bytes = -1;
}

void cs_gen_node_in(cs_gen *g, const char *buf)
{
    cs_gen_pending *c = &g->cur;
    if (c->n_in == c->cap_in) {
        size_t cap = c->cap_in ? 2 * c->cap_in : 64;
        void *a = realloc(c->in, cap * sizeof *c->in);
        if (a)
            c->in = a;
        void *b = a ? realloc(c->inp, cap * sizeof *c->inp) : NULL;
        if (b)
            c->inp = (const char **)b;
        if (!a || !b) {
            if (g->st == COMMSCHED_OK)
                g->st = commsched_error_set(&g->err, COMMSCHED_ENOMEM, NULL,
                                            "out of memory");
            return;
        }
        c->cap_in = cap;
    }
    cs_gen_fmt_name(g, c->in[c->n_in++], buf, NULL);
}

void cs_gen_node_out(cs_gen *g, const char *name, int64_t size,
                     const char *alias)
{
    cs_gen_pending *c = &g->cur;
    if (c->n_out == CS_GEN_MAX_IO) {
        fail(g, "too many node outputs");
        return;
    }
    cs_gen_fmt_name(g, c->out[c->n_out], name, NULL);
    c->outs[c->n_out].name = c->out[c->n_out];
    if (alias) {
        cs_gen_fmt_name(g, c->alias[c->n_out], alias, NULL);
        c->outs[c->n_out].alias_of = c->alias[c->n_out];
        c->outs[c->n_out].size = 0;
    } else {
        c->outs[c->n_out].alias_of = NULL;
        c->outs[c->n_out].size = size;
    }
    c->n_out++;
}

/* Adds the pending node. flops / bytes < 0 leave them out. */
void cs_gen_node_end(cs_gen *g, double flops, double bytes, int gemm)
{
    cs_gen_pending *c = &g->cur;
    if (g->st != COMMSCHED_OK)
        return;
    for (size_t i = 0; i < c->n_in; i++)
        c->inp[i] = c->in[i];
    c->s.name = c->name;
    c->s.op = c->op;
    c->s.inputs = c->inp;
    c->s.n_inputs = c->n_in;
    c->s.outputs = c->outs;
    c->s.n_outputs = c->n_out;
    c->s.flops = flops;
    c->s.bytes = bytes;
    c->s.gemm_like = gemm;
    /* The builder's failures are sticky: finish reports the first one. */
    (void)commsched_builder_add_node(g->b, &c->s, &g->err);
    if (g->progress && g->emitted < g->total)
        g->progress(g->progress_arg, ++g->emitted, g->total);
}

/* A collective and its wait, issued back to back (the naive order). The
 * wait's alias, named like the wait node, is what compute reads. Returns
 * nothing: the caller knows the alias is "<name>.wait". */
void cs_gen_emit_collective(cs_gen *g, const char *name, commsched_coll_op op,
                            int group, const char *const *in, size_t n_in,
                            int64_t out_bytes, commsched_dtype dtype,
                            commsched_reduce_op rop)
{
    char wait[CS_GEN_NAME];
    cs_gen_node_begin(g, COMMSCHED_NODE_COLLECTIVE, name,
                      commsched_coll_op_str(op));
    g->cur.s.group = cs_gen_group_name(group);
    g->cur.s.dtype = dtype;
    g->cur.s.reduce_op = rop;
    for (size_t i = 0; i < n_in; i++)
        cs_gen_node_in(g, in[i]);
    cs_gen_node_out(g, name, out_bytes, NULL);
    cs_gen_node_end(g, -1, -1, 0);
    cs_gen_fmt_name(g, wait, name, "wait");
    cs_gen_node_begin(g, COMMSCHED_NODE_WAIT, wait, "wait_tensor");
    cs_gen_node_in(g, name);
    cs_gen_node_out(g, wait, 0, name);
    cs_gen_node_end(g, -1, -1, 0);
}

/* ---------------------------------------------------------------------- */
/* Parameters and units                                                    */
/* ---------------------------------------------------------------------- */


/* Elements of one dp shard of a parameter (padded, as FSDP pads). */
int64_t cs_gen_shard_numel(const cs_gen *g, int64_t numel)
{
    return cs_gen_ceil_div(numel, g->dp);
}

int32_t cs_gen_unit_new(cs_gen *g, const char *name)
{
    if (cs_gen_grow(g, (void **)&g->u, &g->cap_u, g->nu + 1, sizeof *g->u) != 0)
        return 0;
    cs_gen_unit *u = &g->u[g->nu];
    memset(u, 0, sizeof *u);
    cs_gen_fmt_name(g, u->name, name, NULL);
    u->p0 = (int32_t)g->np;
    return (int32_t)g->nu++;
}

/* Declares a parameter of the current prefix. In fine mode every parameter
 * is its own unit; in coarse mode `unit` groups them. */
int32_t cs_gen_param_new(cs_gen *g, int32_t unit_idx, const char *tag,
                         int64_t numel, int fsdp)
{
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    if (g->fine)
        unit_idx = cs_gen_unit_new(g, name);
    if (cs_gen_grow(g, (void **)&g->p, &g->cap_p, g->np + 1, sizeof *g->p) != 0)
        return 0;
    cs_gen_param *p = &g->p[g->np];
    memset(p, 0, sizeof *p);
    memcpy(p->name, name, CS_GEN_NAME);
    p->numel = numel;
    p->unit = unit_idx;
    p->fsdp = (uint8_t)(fsdp != 0);
    p->weight = -1;
    p->wgrad = -1;
    cs_gen_unit *u = &g->u[unit_idx];
    u->np++;
    if (fsdp) {
        u->n_fsdp++;
        u->fsdp_numel += numel;
    }
    /* Master weights and AdamW states: fp32, outside the step. */
    char buf[CS_GEN_NAME];
    int64_t held = fsdp ? cs_gen_shard_numel(g, numel) : numel;
    cs_gen_fmt_name(g, buf, name, fsdp ? "shard" : "master");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    cs_gen_fmt_name(g, buf, name, "exp_avg");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    cs_gen_fmt_name(g, buf, name, "exp_avg_sq");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    return (int32_t)g->np++;
}

/* All-gathers an FSDP unit's shards for compute (phase "f" or "b").
 * Coarse (FSDP2): copy-in (cast to the compute dtype and pack), one
 * all-gather, wait, copy-out into the unsharded parameters.
 * Fine (SimpleFSDP): per parameter a cast, the all-gather and its wait. */
static void gather_unit(cs_gen *g, int32_t ui, const char *phase)
{
    cs_gen_unit *u = &g->u[ui];
    char n_in[CS_GEN_NAME], n_ag[CS_GEN_NAME], n_out[CS_GEN_NAME], tag[16];
    const char *in[CS_GEN_MAX_IO];
    char (*dst)[CS_GEN_NAME] = phase[0] == 'f' ? &u->fwd : &u->bwd;
    int64_t shard = 0;
    for (int32_t i = u->p0; i < u->p0 + u->np; i++)
        if (g->p[i].fsdp)
            shard += cs_gen_shard_numel(g, g->p[i].numel);
    snprintf(tag, sizeof tag, "ag_%s", phase);
    cs_gen_fmt_name(g, n_ag, u->name, tag);
    if (!g->fine) {
        snprintf(tag, sizeof tag, "ag_%s_copy_in", phase);
        cs_gen_fmt_name(g, n_in, u->name, tag);
        size_t k = 0;
        char names[CS_GEN_MAX_IO][CS_GEN_NAME];
        for (int32_t i = u->p0; i < u->p0 + u->np && k < CS_GEN_MAX_IO; i++)
            if (g->p[i].fsdp) {
                cs_gen_fmt_name(g, names[k], g->p[i].name, "shard");
                in[k] = names[k];
                k++;
            }
        /* reads the fp32 shards, writes the packed compute-dtype copy */
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, n_in,
                          "all_gather_copy_in");
        for (size_t i = 0; i < k; i++)
            cs_gen_node_in(g, in[i]);
        cs_gen_node_out(g, n_in, shard * g->e, NULL);
        cs_gen_node_end(g, (double)shard, (double)shard * (double)(4 + g->e),
                        0);
    } else {
        snprintf(tag, sizeof tag, "cast_%s", phase);
        cs_gen_fmt_name(g, n_in, u->name, tag);
        char src[CS_GEN_NAME];
        cs_gen_fmt_name(g, src, g->p[u->p0].name, "shard");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, n_in, "_to_copy");
        cs_gen_node_in(g, src);
        cs_gen_node_out(g, n_in, shard * g->e, NULL);
        cs_gen_node_end(g, (double)shard, (double)shard * (double)(4 + g->e),
                        0);
    }
    in[0] = n_in;
    cs_gen_emit_collective(g, n_ag, COMMSCHED_COLL_ALL_GATHER, CS_GEN_DP, in, 1,
                           shard * g->dp * g->e, g->dtype,
                           COMMSCHED_REDUCE_NONE);
    char wait[CS_GEN_NAME];
    cs_gen_fmt_name(g, wait, n_ag, "wait");
    if (!g->fine) {
        snprintf(tag, sizeof tag, "ag_%s_copy_out", phase);
        cs_gen_fmt_name(g, n_out, u->name, tag);
        in[0] = wait;
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, n_out,
                          "split_with_sizes_copy");
        cs_gen_node_in(g, wait);
        cs_gen_node_out(g, n_out, u->fsdp_numel * g->e, NULL);
        cs_gen_node_end(g, 0, 2.0 * (double)(u->fsdp_numel * g->e), 0);
        memcpy(*dst, n_out, CS_GEN_NAME);
    } else {
        memcpy(*dst, wait, CS_GEN_NAME);
    }
}

/* The forward tensor of parameter pi, materialising it if needed: an
 * FSDP gather (once per unit), or a cast of the fp32 master to the compute
 * dtype (autocast; the cast copy is saved for backward). */
int32_t cs_gen_param_get(cs_gen *g, int32_t pi)
{
    cs_gen_param *p = &g->p[pi];
    if (p->weight >= 0) {
        /* A recomputed layer uses the weight again: a marker on the tape
         * tells the backward walk where the parameter's gradient is final,
         * as the first use does without checkpointing. */
        if (g->recompute && !p->marked) {
            cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_PARAM, p->name);
            if (o) {
                o->out = p->weight;
                o->aux = pi;
            }
            g->p[pi].marked = 1;
        }
        return g->p[pi].weight;
    }
    char buf[CS_GEN_NAME];
    if (p->fsdp) {
        cs_gen_unit *u = &g->u[p->unit];
        if (!u->fwd[0])
            gather_unit(g, p->unit, "f");
        memcpy(buf, g->u[p->unit].fwd, CS_GEN_NAME);
    } else {
        char src[CS_GEN_NAME];
        cs_gen_fmt_name(g, src, p->name, "master");
        cs_gen_fmt_name(g, buf, p->name, "cast");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, buf, "_to_copy");
        cs_gen_node_in(g, src);
        cs_gen_node_out(g, buf, p->numel * g->e, NULL);
        cs_gen_node_end(g, (double)p->numel,
                        (double)p->numel * (double)(4 + g->e), 0);
    }
    int32_t w = cs_gen_tensor_new(g, buf, p->numel * g->e, 1);
    if (g->st != COMMSCHED_OK)
        return 0;
    g->t[w].param = pi;
    g->p[pi].weight = w;
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_PARAM, g->p[pi].name);
    if (o) {
        o->out = w;
        o->aux = pi;
    }
    return w;
}

/* The buffer a backward node reads for tensor ti: FSDP parameters were
 * resharded after forward, so their first backward use gathers again. */
static const char *bwd_read(cs_gen *g, int32_t ti)
{
    int32_t pi = g->t[ti].param;
    if (pi < 0 || !g->p[pi].fsdp)
        return g->t[ti].name;
    int32_t ui = g->p[pi].unit;
    if (!g->u[ui].bwd[0])
        gather_unit(g, ui, "b");
    return g->u[ui].bwd;
}

/* The buffer a forward node reads for tensor ti, copied into dst: while a
 * checkpointed layer is recomputed in backward, parameters come from the
 * backward gather. Called before node_begin (a gather emits nodes). */
static void fwd_read(cs_gen *g, int32_t ti, char *dst)
{
    const char *src = g->recompute ? bwd_read(g, ti) : g->t[ti].name;
    memcpy(dst, src, CS_GEN_NAME);
}

/* ---------------------------------------------------------------------- */
/* Forward ops (they emit the node and record the tape)                    */
/* ---------------------------------------------------------------------- */


int32_t cs_gen_f_mm(cs_gen *g, const char *tag, int32_t a, int32_t b, double M,
                    double K, double N)
{
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    int64_t out = (int64_t)(M * N) * g->e;
    char ra[CS_GEN_NAME], rb[CS_GEN_NAME];
    fwd_read(g, a, ra);
    fwd_read(g, b, rb);
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
    cs_gen_node_in(g, ra);
    cs_gen_node_in(g, rb);
    cs_gen_node_out(g, name, out, NULL);
    cs_gen_node_end(g, 2.0 * M * K * N,
                    cs_gen_tb(g, a) + cs_gen_tb(g, b) + (double)out, 1);
    int32_t c = cs_gen_tensor_new(g, name, out, g->t[a].rg || g->t[b].rg);
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_MM, name);
    if (o) {
        o->in[0] = a;
        o->in[1] = b;
        o->n_in = 2;
        o->out = c;
        o->flops = 2.0 * M * K * N;
    }
    return c;
}

/* An elementwise / reduction / fused op over n inputs with one output.
 * gmask: inputs that receive a gradient node in backward; rmask: inputs
 * those nodes read (what autograd saves: a cast saves nothing, mul saves
 * both operands, an index gather its indices); pass: input 0's gradient is
 * the output's unchanged (adding a constant). */
int32_t cs_gen_f_ew(cs_gen *g, const char *tag, const char *op, int n,
                    const int32_t *in, int gmask, int rmask, int pass,
                    int64_t out, double flops)
{
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    double bytes = (double)out;
    int rg = 0;
    char rd[4][CS_GEN_NAME];
    for (int i = 0; i < n; i++)
        fwd_read(g, in[i], rd[i]);
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
    for (int i = 0; i < n; i++) {
        cs_gen_node_in(g, rd[i]);
        bytes += cs_gen_tb(g, in[i]);
        if (((gmask >> i) & 1) && g->t[in[i]].rg)
            rg = 1;
    }
    cs_gen_node_out(g, name, out, NULL);
    if (g->bytes_override >= 0)
        bytes = g->bytes_override;
    g->bytes_override = -1;
    cs_gen_node_end(g, flops, bytes, 0);
    int32_t c = cs_gen_tensor_new(g, name, out, rg || (pass && g->t[in[0]].rg));
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_EW, name);
    if (o) {
        for (int i = 0; i < n; i++)
            o->in[i] = in[i];
        o->n_in = (uint8_t)n;
        o->gmask = (uint8_t)gmask;
        o->rmask = (uint8_t)rmask;
        o->pass = (uint8_t)pass;
        o->out = c;
        o->flops = flops;
        o->op = op;
    }
    return c;
}

/* A unary op; saves: whether its gradient reads the input. */
int32_t cs_gen_f_ew1(cs_gen *g, const char *tag, const char *op, int32_t x,
                     int64_t out, double flops, int saves)
{
    return cs_gen_f_ew(g, tag, op, 1, &x, 1, saves ? 1 : 0, 0, out, flops);
}

int32_t cs_gen_f_add(cs_gen *g, const char *tag, int32_t a, int32_t b)
{
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    int64_t out = g->t[a].bytes;
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "add");
    cs_gen_node_in(g, g->t[a].name);
    cs_gen_node_in(g, g->t[b].name);
    cs_gen_node_out(g, name, out, NULL);
    cs_gen_node_end(g, (double)(out / g->e), 3.0 * (double)out, 0);
    int32_t c = cs_gen_tensor_new(g, name, out, g->t[a].rg || g->t[b].rg);
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_ADD, name);
    if (o) {
        o->in[0] = a;
        o->in[1] = b;
        o->n_in = 2;
        o->out = c;
    }
    return c;
}

/* A view (reshape, transpose, view_as_complex ...): in fine mode a
 * zero-cost node whose output aliases its input, as in the post-grad FX
 * graph; in coarse mode nothing at all. */
int32_t cs_gen_f_view(cs_gen *g, const char *tag, const char *op, int32_t x)
{
    if (!g->fine)
        return x;
    char name[CS_GEN_NAME], rx[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    fwd_read(g, x, rx);
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
    cs_gen_node_in(g, rx);
    cs_gen_node_out(g, name, 0, rx);
    cs_gen_node_end(g, 0, 0, 0);
    int32_t c = cs_gen_tensor_new(g, name, g->t[x].bytes, g->t[x].rg);
    g->t[c].param = g->t[x].param;
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_VIEW, name);
    if (o) {
        o->in[0] = x;
        o->n_in = 1;
        o->out = c;
        o->op = op;
    }
    return c;
}

/* An activation collective (TP all-reduce, SP all-gather / reduce-scatter,
 * EP all-to-all) and its wait. */
int32_t cs_gen_f_coll(cs_gen *g, const char *tag, commsched_coll_op op, int grp,
                      int32_t x, int64_t out, commsched_reduce_op rop)
{
    char name[CS_GEN_NAME], wait[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    const char *in[1] = {g->t[x].name};
    cs_gen_emit_collective(g, name, op, grp, in, 1, out, g->dtype, rop);
    cs_gen_fmt_name(g, wait, name, "wait");
    int32_t c = cs_gen_tensor_new(g, wait, out, g->t[x].rg);
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_COLL, name);
    if (o) {
        o->in[0] = x;
        o->n_in = 1;
        o->out = c;
        o->coll = (uint8_t)op;
        o->group = (uint8_t)grp;
    }
    return c;
}

/* Megatron's f: the input of a column-parallel block is replicated, so its
 * gradient must be all-reduced over tp in backward. No forward node. */
int32_t cs_gen_f_identity_ar(cs_gen *g, const char *tag, int32_t x)
{
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, tag);
    int32_t c = cs_gen_tensor_new(g, g->t[x].name, g->t[x].bytes, g->t[x].rg);
    cs_gen_op *o = cs_gen_tape_push(g, CS_GEN_F, name);
    if (o) {
        o->in[0] = x;
        o->n_in = 1;
        o->out = c;
    }
    return c;
}

/* ---------------------------------------------------------------------- */
/* Backward: the tape in reverse                                           */
/* ---------------------------------------------------------------------- */

/* Gives tensor ti the gradient held in buffer `gname` (an existing
 * tensor gt): the first contribution is taken as is; a later one is added
 * (one "add" node, both modes). */
static void grad_share(cs_gen *g, int32_t ti, int32_t gt)
{
    if (!g->t[ti].rg || gt < 0)
        return;
    int32_t prev = g->t[ti].grad;
    if (prev < 0) {
        g->t[ti].grad = gt;
        return;
    }
    char name[CS_GEN_NAME], tag[24];
    snprintf(tag, sizeof tag, "grad_acc%u", (unsigned)++g->t[ti].nacc);
    cs_gen_fmt_name(g, name, g->t[ti].name, tag);
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "add");
    cs_gen_node_in(g, g->t[prev].name);
    cs_gen_node_in(g, g->t[gt].name);
    cs_gen_node_out(g, name, g->t[ti].bytes, NULL);
    cs_gen_node_end(g, (double)(g->t[ti].bytes / g->e),
                    3.0 * (double)g->t[ti].bytes, 0);
    int32_t sum = cs_gen_tensor_new(g, name, g->t[ti].bytes, 1);
    g->t[ti].grad = sum; /* not in one statement: tensor_new moves g->t */
}

/* Emits the pending node as a gradient contribution to ti. Coarse mode
 * folds accumulation into the producer (it reads the previous gradient and
 * writes the sum, as a fused epilogue would); fine mode adds a node. */
static void grad_emit(cs_gen *g, int32_t ti, double flops, double bytes,
                      int gemm)
{
    const char *name = g->cur.name;
    char copy[CS_GEN_NAME];
    memcpy(copy, name, CS_GEN_NAME);
    int32_t prev = g->t[ti].grad;
    if (!g->fine && prev >= 0) {
        cs_gen_node_in(g, g->t[prev].name);
        bytes += cs_gen_tb(g, prev);
        cs_gen_node_out(g, copy, g->t[ti].bytes, NULL);
        cs_gen_node_end(g, flops, bytes, gemm);
        int32_t sum = cs_gen_tensor_new(g, copy, g->t[ti].bytes, 1);
        g->t[ti].grad = sum;
        return;
    }
    cs_gen_node_out(g, copy, g->t[ti].bytes, NULL);
    cs_gen_node_end(g, flops, bytes, gemm);
    grad_share(g, ti, cs_gen_tensor_new(g, copy, g->t[ti].bytes, 1));
}

/* Final gradient of a parameter: cast to the reduce dtype, then synchronised
 * over dp (FSDP reduce-scatter per unit, DDP all-reduce per parameter) or
 * kept (TP / EP-local parameters). */
static void param_grad_final(cs_gen *g, int32_t pi)
{
    cs_gen_param *p = &g->p[pi];
    int32_t wg = g->t[p->weight].grad;
    if (wg < 0)
        return;
    p->wgrad = wg;
    cs_gen_unit *u = &g->u[p->unit];
    char name[CS_GEN_NAME], src[CS_GEN_NAME];
    const char *in[CS_GEN_MAX_IO];
    if (p->fsdp) {
        if (++u->fsdp_done < u->n_fsdp)
            return;
        int64_t shard = 0;
        for (int32_t i = u->p0; i < u->p0 + u->np; i++)
            if (g->p[i].fsdp)
                shard += cs_gen_shard_numel(g, g->p[i].numel);
        if (!g->fine) {
            /* FSDP2 foreach_reduce: pack the unit's gradients (cast to the
             * reduce dtype) into one flat buffer, then one reduce-scatter. */
            char names[CS_GEN_MAX_IO][CS_GEN_NAME];
            size_t k = 0;
            double bytes = (double)(shard * g->dp * g->re);
            cs_gen_fmt_name(g, name, u->name, "rs_copy_in");
            cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "chunk_cat");
            for (int32_t i = u->p0; i < u->p0 + u->np && k < CS_GEN_MAX_IO; i++)
                if (g->p[i].fsdp && g->p[i].wgrad >= 0) {
                    memcpy(names[k], g->t[g->p[i].wgrad].name, CS_GEN_NAME);
                    cs_gen_node_in(g, names[k]);
                    bytes += cs_gen_tb(g, g->p[i].wgrad);
                    k++;
                }
            cs_gen_node_out(g, name, shard * g->dp * g->re, NULL);
            cs_gen_node_end(g, (double)(shard * g->dp), bytes, 0);
        } else {
            cs_gen_fmt_name(g, name, u->name, "grad_cast");
            cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_to_copy");
            cs_gen_node_in(g, g->t[wg].name);
            cs_gen_node_out(g, name, shard * g->dp * g->re, NULL);
            cs_gen_node_end(g, (double)(shard * g->dp),
                            (double)(shard * g->dp) * (double)(g->e + g->re),
                            0);
        }
        memcpy(src, name, CS_GEN_NAME);
        in[0] = src;
        cs_gen_fmt_name(g, name, u->name, "rs");
        cs_gen_emit_collective(g, name, COMMSCHED_COLL_REDUCE_SCATTER,
                               CS_GEN_DP, in, 1, shard * g->re, g->reduce_dtype,
                               COMMSCHED_REDUCE_AVG);
        cs_gen_fmt_name(g, u->grad, name, "wait");
        (void)commsched_builder_add_output(g->b, u->grad, &g->err);
        for (int32_t i = u->p0; i < u->p0 + u->np; i++)
            if (g->p[i].fsdp)
                memcpy(g->p[i].grad, u->grad, CS_GEN_NAME);
        return;
    }
    /* Local parameter: autocast's cast backward gives the fp32 gradient. */
    cs_gen_fmt_name(g, name, p->name, "grad_cast");
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_to_copy");
    cs_gen_node_in(g, g->t[wg].name);
    cs_gen_node_out(g, name, p->numel * g->re, NULL);
    cs_gen_node_end(g, (double)p->numel,
                    (double)p->numel * (double)(g->e + g->re), 0);
    if (g->family == COMMSCHED_GENERATE_DDP) {
        memcpy(src, name, CS_GEN_NAME);
        in[0] = src;
        cs_gen_fmt_name(g, name, p->name, "ar");
        cs_gen_emit_collective(g, name, COMMSCHED_COLL_ALL_REDUCE, CS_GEN_DP,
                               in, 1, p->numel * g->re, g->reduce_dtype,
                               COMMSCHED_REDUCE_AVG);
        cs_gen_fmt_name(g, p->grad, name, "wait");
    } else {
        memcpy(p->grad, name, CS_GEN_NAME);
    }
    (void)commsched_builder_add_output(g->b, p->grad, &g->err);
}

static void bwd_mm(cs_gen *g, const cs_gen_op *o)
{
    int32_t a = o->in[0], b = o->in[1], dy = g->t[o->out].grad;
    char name[CS_GEN_NAME];
    if (dy < 0)
        return;
    if (g->t[a].rg) {
        cs_gen_fmt_name(g, name, o->name, "dx");
        const char *w = bwd_read(g, b);
        char wcopy[CS_GEN_NAME];
        memcpy(wcopy, w, CS_GEN_NAME);
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
        cs_gen_node_in(g, g->t[dy].name);
        cs_gen_node_in(g, wcopy);
        grad_emit(g, a, o->flops,
                  cs_gen_tb(g, dy) + cs_gen_tb(g, b) + cs_gen_tb(g, a), 1);
    }
    if (g->t[b].rg) {
        char acopy[CS_GEN_NAME];
        memcpy(acopy, bwd_read(g, a), CS_GEN_NAME);
        cs_gen_fmt_name(g, name, o->name, "dw");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
        cs_gen_node_in(g, acopy);
        cs_gen_node_in(g, g->t[dy].name);
        grad_emit(g, b, o->flops,
                  cs_gen_tb(g, dy) + cs_gen_tb(g, a) + cs_gen_tb(g, b), 1);
    }
}

static void bwd_ew(cs_gen *g, const cs_gen_op *o)
{
    int32_t dy = g->t[o->out].grad;
    if (dy < 0)
        return;
    if (o->pass) {
        grad_share(g, o->in[0], dy);
        return;
    }
    int ng = 0;
    for (int i = 0; i < o->n_in; i++)
        if (((o->gmask >> i) & 1) && g->t[o->in[i]].rg)
            ng++;
    for (int i = 0; i < o->n_in; i++) {
        int32_t x = o->in[i];
        if (!((o->gmask >> i) & 1) || !g->t[x].rg)
            continue;
        /* Resolve the saved inputs first: an FSDP weight may need its
         * backward all-gather, which is a node of its own. */
        char reads[4][CS_GEN_NAME];
        double bytes = cs_gen_tb(g, dy) + cs_gen_tb(g, x);
        int nr = 0;
        for (int k = 0; k < o->n_in; k++)
            if ((o->rmask >> k) & 1) {
                memcpy(reads[nr++], bwd_read(g, o->in[k]), CS_GEN_NAME);
                bytes += cs_gen_tb(g, o->in[k]);
            }
        char name[CS_GEN_NAME], tag[16], op[CS_GEN_NAME];
        snprintf(tag, sizeof tag, ng > 1 ? "bwd%d" : "bwd", i);
        cs_gen_fmt_name(g, name, o->name, tag);
        if (snprintf(op, sizeof op, "%s_backward", o->op) >= (int)sizeof op)
            fail(g, "generated op name too long");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
        cs_gen_node_in(g, g->t[dy].name);
        for (int k = 0; k < nr; k++)
            cs_gen_node_in(g, reads[k]);
        grad_emit(g, x, o->flops, bytes, 0);
    }
}

static void bwd_view(cs_gen *g, const cs_gen_op *o)
{
    int32_t dy = g->t[o->out].grad;
    if (dy < 0)
        return;
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, o->name, "bwd");
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, o->op);
    cs_gen_node_in(g, g->t[dy].name);
    cs_gen_node_out(g, name, 0, g->t[dy].name);
    cs_gen_node_end(g, 0, 0, 0);
    grad_share(g, o->in[0],
               cs_gen_tensor_new(g, name, g->t[o->in[0]].bytes, 1));
}

static void bwd_sdpa(cs_gen *g, const cs_gen_op *o)
{
    int32_t dy = g->t[o->out].grad;
    if (dy < 0)
        return;
    char name[CS_GEN_NAME], outs[3][CS_GEN_NAME];
    static const char *const tags[3] = {"dq", "dk", "dv"};
    cs_gen_fmt_name(g, name, o->name, "bwd");
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name,
                      "_scaled_dot_product_flash_attention_backward");
    cs_gen_node_in(g, g->t[dy].name);
    double bytes = cs_gen_tb(g, dy);
    for (int i = 0; i < 3; i++) {
        cs_gen_node_in(g, g->t[o->in[i]].name);
        bytes += 2.0 * cs_gen_tb(g, o->in[i]);
    }
    cs_gen_node_in(g, g->t[o->out].name);
    cs_gen_node_in(g, g->t[o->aux].name);
    bytes += cs_gen_tb(g, o->out) + cs_gen_tb(g, o->aux);
    for (int i = 0; i < 3; i++) {
        cs_gen_fmt_name(g, outs[i], name, tags[i]);
        cs_gen_node_out(g, outs[i], g->t[o->in[i]].bytes, NULL);
    }
    /* Flash attention's backward does 5 of the forward's 2 matmuls. */
    cs_gen_node_end(g, 2.5 * o->flops, bytes, 1);
    for (int i = 0; i < 3; i++)
        grad_share(g, o->in[i],
                   cs_gen_tensor_new(g, outs[i], g->t[o->in[i]].bytes, 1));
}

static void bwd_coll(cs_gen *g, const cs_gen_op *o)
{
    int32_t dy = g->t[o->out].grad, x = o->in[0];
    if (dy < 0 || !g->t[x].rg)
        return;
    commsched_coll_op op;
    commsched_reduce_op rop = COMMSCHED_REDUCE_NONE;
    switch (o->type == CS_GEN_F ? COMMSCHED_COLL_BARRIER : o->coll) {
    case COMMSCHED_COLL_ALL_REDUCE: /* Megatron's g: identity backward */
        grad_share(g, x, dy);
        return;
    case COMMSCHED_COLL_ALL_GATHER:
        op = COMMSCHED_COLL_REDUCE_SCATTER;
        rop = COMMSCHED_REDUCE_SUM;
        break;
    case COMMSCHED_COLL_REDUCE_SCATTER:
        op = COMMSCHED_COLL_ALL_GATHER;
        break;
    case COMMSCHED_COLL_BARRIER: /* CS_GEN_F: all-reduce backward */
        op = COMMSCHED_COLL_ALL_REDUCE;
        rop = COMMSCHED_REDUCE_SUM;
        break;
    default:
        op = (commsched_coll_op)o->coll;
        break;
    }
    char name[CS_GEN_NAME], wait[CS_GEN_NAME], src[CS_GEN_NAME];
    const char *in[1] = {src};
    memcpy(src, g->t[dy].name, CS_GEN_NAME);
    cs_gen_fmt_name(g, name, o->name, "bwd");
    cs_gen_emit_collective(g, name, op,
                           o->type == CS_GEN_F ? CS_GEN_TP : o->group, in, 1,
                           g->t[x].bytes, g->dtype, rop);
    cs_gen_fmt_name(g, wait, name, "wait");
    grad_share(g, x, cs_gen_tensor_new(g, wait, g->t[x].bytes, 1));
}


/* The gradient rules of tape ops [lo, hi), last first. A checkpointed layer
 * is met at its last op: its forward is emitted again (reading the saved
 * layer input and the backward gathers), and the recomputed ops are walked
 * instead of the originals, whose intermediates were freed in forward. */
static void backward_range(cs_gen *g, size_t hi, size_t lo)
{
    size_t k = g->nseg;
    for (size_t i = hi; i-- > lo && g->st == COMMSCHED_OK;) {
        while (k > 0 && g->seg[k - 1].start > i)
            k--;
        if (k > 0 && g->seg[k - 1].end == i + 1 && i < g->seg[k - 1].end) {
            cs_gen_segment sg = g->seg[k - 1];
            char saved[sizeof g->prefix];
            memcpy(saved, g->prefix, sizeof saved);
            cs_gen_set_prefix(g, "L%ld.rc", sg.layer);
            size_t r0 = g->nops;
            g->recompute = 1;
            int32_t y = cs_gen_layer(g, sg.x, sg.layer);
            g->recompute = 0;
            memcpy(g->prefix, saved, sizeof saved);
            g->t[y].grad = g->t[sg.y].grad;
            backward_range(g, g->nops, r0);
            i = sg.start; /* the loop steps below it */
            k--;
            continue;
        }
        cs_gen_op o = g->ops[i]; /* copy: emission may grow the tape array */
        switch (o.type) {
        case CS_GEN_MM: bwd_mm(g, &o); break;
        case CS_GEN_EW: bwd_ew(g, &o); break;
        case CS_GEN_ADD:
            if (g->t[o.out].grad >= 0) {
                grad_share(g, o.in[0], g->t[o.out].grad);
                grad_share(g, o.in[1], g->t[o.out].grad);
            }
            break;
        case CS_GEN_VIEW: bwd_view(g, &o); break;
        case CS_GEN_SDPA: bwd_sdpa(g, &o); break;
        case CS_GEN_COLL:
        case CS_GEN_F: bwd_coll(g, &o); break;
        case CS_GEN_PARAM: param_grad_final(g, o.aux); break;
        default: break;
        }
    }
}

void cs_gen_backward(cs_gen *g)
{
    g->bwd = 1;
    backward_range(g, g->nops, 0);
}
