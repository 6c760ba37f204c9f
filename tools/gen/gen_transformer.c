/* commsched generate fsdp|ddp|tp|moe|2d — one training step (forward,
 * backward, optimizer update) of a decoder-only transformer, from its
 * shapes, as one rank of a parallel job sees it. Built through the public
 * builder API. docs/WORKLOADS.md is the reference for every modelling
 * choice; this comment is the map of the code.
 *
 * How it works: the forward pass is written out op by op (attention,
 * MLP / SwiGLU / MoE, norms, embedding, loss) and every op is also
 * recorded on a tape with its inputs and outputs. The backward pass is then
 * derived from the tape in reverse, the way an autograd engine orders it:
 * each op's gradient rule emits its gradient nodes, gradients that meet are
 * accumulated, saved activations are read where the gradient formula needs
 * them (so their lifetimes come out right), and parameter gradients are
 * synchronised as soon as they are final. The optimizer (AdamW) runs last.
 * Deriving instead of hand-writing the backward keeps fwd and bwd of every
 * variant (coarse / fine, FSDP / DDP / TP / SP / MoE / 2-D) consistent.
 *
 * Initial order: what a compiler emits before any scheduling. Weight
 * all-gathers are issued right before the first use of the weight (in
 * forward and again in backward); every other collective right after its
 * input is produced; every wait immediately follows its collective. So
 * nothing overlaps until a pass moves something.
 *
 * Memory: the batch (tokens, labels) is a freeable input; parameters and
 * optimizer states are non-freeable inputs (they live outside the step);
 * activations are node outputs freed after their last reader; reduced
 * gradients, the loss and the optimizer's in-place results are graph
 * outputs.
 *
 * Deterministic: no clocks, hashes or randomness; the same options give the
 * same bytes. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define NAME_LEN 64
#define MAX_IO 48

/* ---------------------------------------------------------------------- */
/* Shapes and presets                                                      */
/* ---------------------------------------------------------------------- */

typedef struct shape {
    const char *name;
    int64_t hidden, heads, kv_heads, ffn, layers, seq, batch, vocab;
    int64_t experts, topk;
    int swiglu;      /* 1: SwiGLU MLP (w1, w3, w2); 0: GELU MLP (w1, w2) */
    int rope;        /* 1: rotary positions; 0: a learned position table */
    int rmsnorm;     /* 1: RMSNorm (weight); 0: LayerNorm (weight, bias) */
    int ac;          /* the training recipe checkpoints every layer */
} shape;

/* Published configurations; docs/WORKLOADS.md cites each source. seq is
 * the training sequence length used by default (overridable). */
static const shape presets[] = {
    {"llama3-8b", 4096, 32, 8, 14336, 32, 8192, 1, 128256, 0, 0, 1, 1, 1, 0},
    {"llama2-70b", 8192, 64, 8, 28672, 80, 4096, 1, 32000, 0, 0, 1, 1, 1, 1},
    {"mixtral-8x7b", 4096, 32, 8, 14336, 32, 4096, 1, 32000, 8, 2, 1, 1, 1,
     0},
    {"gpt3-175b", 12288, 96, 96, 49152, 96, 2048, 1, 50257, 0, 0, 0, 0, 0, 1},
};

enum family { FAM_FSDP, FAM_DDP, FAM_TP, FAM_MOE, FAM_2D };
static const char *const family_names[] = {"fsdp", "ddp", "tp", "moe", "2d"};

/* Process groups, in the order they are added to the graph. */
enum { GRP_DP = 0, GRP_TP = 1, GRP_EP = 2, GRP_COUNT };
static const char *const group_names[] = {"dp", "tp", "ep"};

/* GPUs per host assumed when placing groups on hosts (TP innermost). */
#define GPUS_PER_HOST 8

/* ---------------------------------------------------------------------- */
/* Generator state                                                         */
/* ---------------------------------------------------------------------- */

/* A value of the step: a buffer name (or the alias compute reads) plus
 * what the gradient engine needs. */
typedef struct tensor {
    char name[NAME_LEN];
    int64_t bytes;
    int32_t grad;  /* tensor holding the accumulated gradient, -1: none */
    int32_t param; /* >= 0: this is (a view of) parameter `param` */
    uint8_t rg;    /* requires grad */
    uint16_t nacc; /* gradient accumulations so far (for unique names) */
} tensor;

enum op_type {
    T_MM,    /* c = a @ b */
    T_EW,    /* elementwise / reduction / fused kernel */
    T_ADD,   /* c = a + b, same shape: gradients pass through */
    T_VIEW,  /* an alias (fine mode only) */
    T_SDPA,  /* flash attention: q, k, v -> o (+ logsumexp) */
    T_COLL,  /* activation collective + wait */
    T_F,     /* Megatron's f: identity forward, all-reduce backward */
    T_PARAM  /* a parameter materialised for compute */
};

typedef struct tape_op {
    uint8_t type;
    uint8_t n_in;
    uint8_t gmask;    /* T_EW: inputs that get a gradient node */
    uint8_t pass;     /* T_EW: input 0's gradient is the output's */
    uint8_t rmask;    /* T_EW: inputs the gradient nodes read (saved) */
    uint8_t coll;     /* T_COLL: commsched_coll_op */
    uint8_t group;    /* T_COLL: GRP_* */
    int32_t in[4];
    int32_t out;
    int32_t aux;      /* T_SDPA: logsumexp tensor; T_PARAM: param index */
    double flops;     /* forward flops */
    const char *op;   /* T_EW: aten-style op name */
    char name[NAME_LEN];
} tape_op;

/* A checkpointed layer: tape ops [start, end) map x to y. */
typedef struct segment {
    size_t start, end;
    int32_t x, y;
    long layer;
} segment;

typedef struct param {
    char name[NAME_LEN];
    int64_t numel;   /* local elements (after TP / EP slicing) */
    int32_t unit;
    uint8_t fsdp;    /* sharded over dp (otherwise held whole locally) */
    uint8_t marked;  /* used again by a recompute: a T_PARAM marker exists */
    int32_t weight;  /* forward tensor; -1 before first use */
    int32_t wgrad;   /* accumulated compute-dtype gradient (tensor) */
    char grad[NAME_LEN]; /* final gradient buffer the optimizer reads */
} param;

/* The FSDP gather granularity and the optimizer's: a layer (coarse mode,
 * FSDP2's per-module groups) or a single parameter (fine mode,
 * SimpleFSDP's per-parameter collectives). */
typedef struct unit {
    char name[NAME_LEN];
    int32_t p0, np;
    int64_t fsdp_numel;   /* elements of the FSDP-sharded members */
    int32_t n_fsdp;
    int32_t fsdp_done;    /* members whose gradient is final */
    char fwd[NAME_LEN];   /* gathered buffer in forward ("" none) */
    char bwd[NAME_LEN];   /* gathered buffer in backward */
    char grad[NAME_LEN];  /* coarse FSDP: the unit's reduced grad shard */
} unit;

typedef struct layer_params {
    int32_t norm1, norm1_b, wq, wk, wv, wo, norm2, norm2_b, w1, w2, w3,
        router;
} layer_params;

/* A node under construction: names are copied in, because tensor names
 * live in an array that may move when it grows. */
typedef struct pending {
    commsched_node_spec s;
    char name[NAME_LEN];
    char op[NAME_LEN];
    char (*in)[NAME_LEN]; /* grows: a gradient-norm total reads them all */
    const char **inp;
    size_t cap_in;
    char out[MAX_IO][NAME_LEN];
    char alias[MAX_IO][NAME_LEN];
    commsched_output_spec outs[MAX_IO];
    size_t n_in, n_out;
} pending;

typedef struct gen {
    commsched_builder *b;
    commsched_error err;
    commsched_status st; /* first failure of our own (OOM, overflow) */

    int family, fine, sp, bwd;
    int ac;        /* full activation checkpointing of every layer */
    int clip;      /* clip the gradient norm before the update */
    int recompute; /* emitting a checkpointed layer's forward again */
    double bytes_override; /* >= 0: the next f_ew's bytes (gathers) */
    shape s;
    int64_t dp, tp, ep;
    commsched_dtype dtype, reduce_dtype;
    int64_t e, re;            /* bytes per element: compute, reduce */
    /* derived */
    int64_t T;                /* tokens per rank per step */
    int64_t Ts;               /* tokens in sequence-parallel regions */
    int64_t hd, nh_l, nkv_l, ffn_l, vocab_l, experts_l;
    int use_tp, use_ep;

    tensor *t;
    size_t nt, cap_t;
    tape_op *ops;
    size_t nops, cap_ops;
    param *p;
    size_t np, cap_p;
    unit *u;
    size_t nu, cap_u;

    struct segment *seg; /* checkpointed layers, in tape order */
    size_t nseg, cap_seg;
    layer_params *lps;
    int32_t (*experts)[3];

    char prefix[24]; /* "L3", "embed", "head": names start with it */
    int32_t tokens, labels, freqs, loss;
    pending cur;
    char scratch[4][NAME_LEN];
} gen;

static int grow(gen *g, void **arr, size_t *cap, size_t need, size_t elem)
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

static void fail(gen *g, const char *what)
{
    if (g->st == COMMSCHED_OK)
        g->st = commsched_error_set(&g->err, COMMSCHED_EINVAL, NULL, "%s",
                                    what);
}

/* Names are "<prefix>.<tag>"; a name that does not fit is an error rather
 * than a silent truncation that could collide. */
static void fmt_name(gen *g, char *dst, const char *a, const char *b)
{
    int n = b ? snprintf(dst, NAME_LEN, "%s.%s", a, b)
              : snprintf(dst, NAME_LEN, "%s", a);
    if (n < 0 || n >= NAME_LEN)
        fail(g, "generated name too long");
}

static void set_prefix(gen *g, const char *fmt, long i)
{
    snprintf(g->prefix, sizeof g->prefix, fmt, i);
}

static int32_t tensor_new(gen *g, const char *name, int64_t bytes, int rg)
{
    /* name may live in g->t itself, which grow() may move */
    char copy[NAME_LEN];
    fmt_name(g, copy, name, NULL);
    if (grow(g, (void **)&g->t, &g->cap_t, g->nt + 1, sizeof *g->t) != 0)
        return 0;
    tensor *t = &g->t[g->nt];
    memcpy(t->name, copy, NAME_LEN);
    t->bytes = bytes;
    t->grad = -1;
    t->param = -1;
    t->rg = (uint8_t)(rg != 0);
    t->nacc = 0;
    return (int32_t)g->nt++;
}

static tape_op *tape_push(gen *g, int type, const char *name)
{
    if (grow(g, (void **)&g->ops, &g->cap_ops, g->nops + 1, sizeof *g->ops))
        return NULL;
    tape_op *o = &g->ops[g->nops++];
    memset(o, 0, sizeof *o);
    o->type = (uint8_t)type;
    o->out = o->aux = -1;
    o->in[0] = o->in[1] = o->in[2] = o->in[3] = -1;
    fmt_name(g, o->name, name, NULL);
    return o;
}

/* ---------------------------------------------------------------------- */
/* Node emission                                                           */
/* ---------------------------------------------------------------------- */

static void node_begin(gen *g, commsched_node_kind kind, const char *name,
                       const char *op)
{
    pending *c = &g->cur;
    memset(&c->s, 0, sizeof c->s);
    c->n_in = c->n_out = 0;
    fmt_name(g, c->name, name, NULL);
    fmt_name(g, c->op, op, NULL);
    c->s.kind = kind;
    c->s.runtime_ns = c->s.flops = c->s.bytes = -1;
}

static void node_in(gen *g, const char *buf)
{
    pending *c = &g->cur;
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
    fmt_name(g, c->in[c->n_in++], buf, NULL);
}

static void node_out(gen *g, const char *name, int64_t size, const char *alias)
{
    pending *c = &g->cur;
    if (c->n_out == MAX_IO) {
        fail(g, "too many node outputs");
        return;
    }
    fmt_name(g, c->out[c->n_out], name, NULL);
    c->outs[c->n_out].name = c->out[c->n_out];
    if (alias) {
        fmt_name(g, c->alias[c->n_out], alias, NULL);
        c->outs[c->n_out].alias_of = c->alias[c->n_out];
        c->outs[c->n_out].size = 0;
    } else {
        c->outs[c->n_out].alias_of = NULL;
        c->outs[c->n_out].size = size;
    }
    c->n_out++;
}

/* Adds the pending node. flops / bytes < 0 leave them out. */
static void node_end(gen *g, double flops, double bytes, int gemm)
{
    pending *c = &g->cur;
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
}

/* A collective and its wait, issued back to back (the naive order). The
 * wait's alias, named like the wait node, is what compute reads. Returns
 * nothing: the caller knows the alias is "<name>.wait". */
static void emit_collective(gen *g, const char *name, commsched_coll_op op,
                            int group, const char *const *in, size_t n_in,
                            int64_t out_bytes, commsched_dtype dtype,
                            commsched_reduce_op rop)
{
    char wait[NAME_LEN];
    node_begin(g, COMMSCHED_NODE_COLLECTIVE, name, commsched_coll_op_str(op));
    g->cur.s.group = group_names[group];
    g->cur.s.dtype = dtype;
    g->cur.s.reduce_op = rop;
    for (size_t i = 0; i < n_in; i++)
        node_in(g, in[i]);
    node_out(g, name, out_bytes, NULL);
    node_end(g, -1, -1, 0);
    fmt_name(g, wait, name, "wait");
    node_begin(g, COMMSCHED_NODE_WAIT, wait, "wait_tensor");
    node_in(g, name);
    node_out(g, wait, 0, name);
    node_end(g, -1, -1, 0);
}

/* ---------------------------------------------------------------------- */
/* Parameters and units                                                    */
/* ---------------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Elements of one dp shard of a parameter (padded, as FSDP pads). */
static int64_t shard_numel(const gen *g, int64_t numel)
{
    return ceil_div(numel, g->dp);
}

static int32_t unit_new(gen *g, const char *name)
{
    if (grow(g, (void **)&g->u, &g->cap_u, g->nu + 1, sizeof *g->u) != 0)
        return 0;
    unit *u = &g->u[g->nu];
    memset(u, 0, sizeof *u);
    fmt_name(g, u->name, name, NULL);
    u->p0 = (int32_t)g->np;
    return (int32_t)g->nu++;
}

/* Declares a parameter of the current prefix. In fine mode every parameter
 * is its own unit; in coarse mode `unit` groups them. */
static int32_t param_new(gen *g, int32_t unit_idx, const char *tag,
                         int64_t numel, int fsdp)
{
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    if (g->fine)
        unit_idx = unit_new(g, name);
    if (grow(g, (void **)&g->p, &g->cap_p, g->np + 1, sizeof *g->p) != 0)
        return 0;
    param *p = &g->p[g->np];
    memset(p, 0, sizeof *p);
    memcpy(p->name, name, NAME_LEN);
    p->numel = numel;
    p->unit = unit_idx;
    p->fsdp = (uint8_t)(fsdp != 0);
    p->weight = -1;
    p->wgrad = -1;
    unit *u = &g->u[unit_idx];
    u->np++;
    if (fsdp) {
        u->n_fsdp++;
        u->fsdp_numel += numel;
    }
    /* Master weights and AdamW states: fp32, outside the step. */
    char buf[NAME_LEN];
    int64_t held = fsdp ? shard_numel(g, numel) : numel;
    fmt_name(g, buf, name, fsdp ? "shard" : "master");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    fmt_name(g, buf, name, "exp_avg");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    fmt_name(g, buf, name, "exp_avg_sq");
    (void)commsched_builder_add_input(g->b, buf, held * 4, 0, &g->err);
    return (int32_t)g->np++;
}

/* All-gathers an FSDP unit's shards for compute (phase "f" or "b").
 * Coarse (FSDP2): copy-in (cast to the compute dtype and pack), one
 * all-gather, wait, copy-out into the unsharded parameters.
 * Fine (SimpleFSDP): per parameter a cast, the all-gather and its wait. */
static void gather_unit(gen *g, int32_t ui, const char *phase)
{
    unit *u = &g->u[ui];
    char n_in[NAME_LEN], n_ag[NAME_LEN], n_out[NAME_LEN], tag[16];
    const char *in[MAX_IO];
    char (*dst)[NAME_LEN] = phase[0] == 'f' ? &u->fwd : &u->bwd;
    int64_t shard = 0;
    for (int32_t i = u->p0; i < u->p0 + u->np; i++)
        if (g->p[i].fsdp)
            shard += shard_numel(g, g->p[i].numel);
    snprintf(tag, sizeof tag, "ag_%s", phase);
    fmt_name(g, n_ag, u->name, tag);
    if (!g->fine) {
        snprintf(tag, sizeof tag, "ag_%s_copy_in", phase);
        fmt_name(g, n_in, u->name, tag);
        size_t k = 0;
        char names[MAX_IO][NAME_LEN];
        for (int32_t i = u->p0; i < u->p0 + u->np && k < MAX_IO; i++)
            if (g->p[i].fsdp) {
                fmt_name(g, names[k], g->p[i].name, "shard");
                in[k] = names[k];
                k++;
            }
        /* reads the fp32 shards, writes the packed compute-dtype copy */
        node_begin(g, COMMSCHED_NODE_COMPUTE, n_in, "all_gather_copy_in");
        for (size_t i = 0; i < k; i++)
            node_in(g, in[i]);
        node_out(g, n_in, shard * g->e, NULL);
        node_end(g, (double)shard, (double)shard * (double)(4 + g->e), 0);
    } else {
        snprintf(tag, sizeof tag, "cast_%s", phase);
        fmt_name(g, n_in, u->name, tag);
        char src[NAME_LEN];
        fmt_name(g, src, g->p[u->p0].name, "shard");
        node_begin(g, COMMSCHED_NODE_COMPUTE, n_in, "_to_copy");
        node_in(g, src);
        node_out(g, n_in, shard * g->e, NULL);
        node_end(g, (double)shard, (double)shard * (double)(4 + g->e), 0);
    }
    in[0] = n_in;
    emit_collective(g, n_ag, COMMSCHED_COLL_ALL_GATHER, GRP_DP, in, 1,
                    shard * g->dp * g->e, g->dtype, COMMSCHED_REDUCE_NONE);
    char wait[NAME_LEN];
    fmt_name(g, wait, n_ag, "wait");
    if (!g->fine) {
        snprintf(tag, sizeof tag, "ag_%s_copy_out", phase);
        fmt_name(g, n_out, u->name, tag);
        in[0] = wait;
        node_begin(g, COMMSCHED_NODE_COMPUTE, n_out, "split_with_sizes_copy");
        node_in(g, wait);
        node_out(g, n_out, u->fsdp_numel * g->e, NULL);
        node_end(g, 0, 2.0 * (double)(u->fsdp_numel * g->e), 0);
        memcpy(*dst, n_out, NAME_LEN);
    } else {
        memcpy(*dst, wait, NAME_LEN);
    }
}

/* The forward tensor of parameter pi, materialising it if needed: an
 * FSDP gather (once per unit), or a cast of the fp32 master to the compute
 * dtype (autocast; the cast copy is saved for backward). */
static int32_t param_get(gen *g, int32_t pi)
{
    param *p = &g->p[pi];
    if (p->weight >= 0) {
        /* A recomputed layer uses the weight again: a marker on the tape
         * tells the backward walk where the parameter's gradient is final,
         * as the first use does without checkpointing. */
        if (g->recompute && !p->marked) {
            tape_op *o = tape_push(g, T_PARAM, p->name);
            if (o) {
                o->out = p->weight;
                o->aux = pi;
            }
            g->p[pi].marked = 1;
        }
        return g->p[pi].weight;
    }
    char buf[NAME_LEN];
    if (p->fsdp) {
        unit *u = &g->u[p->unit];
        if (!u->fwd[0])
            gather_unit(g, p->unit, "f");
        memcpy(buf, g->u[p->unit].fwd, NAME_LEN);
    } else {
        char src[NAME_LEN];
        fmt_name(g, src, p->name, "master");
        fmt_name(g, buf, p->name, "cast");
        node_begin(g, COMMSCHED_NODE_COMPUTE, buf, "_to_copy");
        node_in(g, src);
        node_out(g, buf, p->numel * g->e, NULL);
        node_end(g, (double)p->numel,
                 (double)p->numel * (double)(4 + g->e), 0);
    }
    int32_t w = tensor_new(g, buf, p->numel * g->e, 1);
    if (g->st != COMMSCHED_OK)
        return 0;
    g->t[w].param = pi;
    g->p[pi].weight = w;
    tape_op *o = tape_push(g, T_PARAM, g->p[pi].name);
    if (o) {
        o->out = w;
        o->aux = pi;
    }
    return w;
}

/* The buffer a backward node reads for tensor ti: FSDP parameters were
 * resharded after forward, so their first backward use gathers again. */
static const char *bwd_read(gen *g, int32_t ti)
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
static void fwd_read(gen *g, int32_t ti, char *dst)
{
    const char *src = g->recompute ? bwd_read(g, ti) : g->t[ti].name;
    memcpy(dst, src, NAME_LEN);
}

/* ---------------------------------------------------------------------- */
/* Forward ops (they emit the node and record the tape)                    */
/* ---------------------------------------------------------------------- */

static double tb(const gen *g, int32_t t) { return (double)g->t[t].bytes; }

static int32_t f_mm(gen *g, const char *tag, int32_t a, int32_t b, double M,
                    double K, double N)
{
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    int64_t out = (int64_t)(M * N) * g->e;
    char ra[NAME_LEN], rb[NAME_LEN];
    fwd_read(g, a, ra);
    fwd_read(g, b, rb);
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
    node_in(g, ra);
    node_in(g, rb);
    node_out(g, name, out, NULL);
    node_end(g, 2.0 * M * K * N, tb(g, a) + tb(g, b) + (double)out, 1);
    int32_t c = tensor_new(g, name, out, g->t[a].rg || g->t[b].rg);
    tape_op *o = tape_push(g, T_MM, name);
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
static int32_t f_ew(gen *g, const char *tag, const char *op, int n,
                    const int32_t *in, int gmask, int rmask, int pass,
                    int64_t out, double flops)
{
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    double bytes = (double)out;
    int rg = 0;
    char rd[4][NAME_LEN];
    for (int i = 0; i < n; i++)
        fwd_read(g, in[i], rd[i]);
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
    for (int i = 0; i < n; i++) {
        node_in(g, rd[i]);
        bytes += tb(g, in[i]);
        if (((gmask >> i) & 1) && g->t[in[i]].rg)
            rg = 1;
    }
    node_out(g, name, out, NULL);
    if (g->bytes_override >= 0)
        bytes = g->bytes_override;
    g->bytes_override = -1;
    node_end(g, flops, bytes, 0);
    int32_t c = tensor_new(g, name, out, rg || (pass && g->t[in[0]].rg));
    tape_op *o = tape_push(g, T_EW, name);
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
static int32_t f_ew1(gen *g, const char *tag, const char *op, int32_t x,
                     int64_t out, double flops, int saves)
{
    return f_ew(g, tag, op, 1, &x, 1, saves ? 1 : 0, 0, out, flops);
}

static int32_t f_add(gen *g, const char *tag, int32_t a, int32_t b)
{
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    int64_t out = g->t[a].bytes;
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, "add");
    node_in(g, g->t[a].name);
    node_in(g, g->t[b].name);
    node_out(g, name, out, NULL);
    node_end(g, (double)(out / g->e), 3.0 * (double)out, 0);
    int32_t c = tensor_new(g, name, out, g->t[a].rg || g->t[b].rg);
    tape_op *o = tape_push(g, T_ADD, name);
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
static int32_t f_view(gen *g, const char *tag, const char *op, int32_t x)
{
    if (!g->fine)
        return x;
    char name[NAME_LEN], rx[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    fwd_read(g, x, rx);
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
    node_in(g, rx);
    node_out(g, name, 0, rx);
    node_end(g, 0, 0, 0);
    int32_t c = tensor_new(g, name, g->t[x].bytes, g->t[x].rg);
    g->t[c].param = g->t[x].param;
    tape_op *o = tape_push(g, T_VIEW, name);
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
static int32_t f_coll(gen *g, const char *tag, commsched_coll_op op, int grp,
                      int32_t x, int64_t out, commsched_reduce_op rop)
{
    char name[NAME_LEN], wait[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    const char *in[1] = {g->t[x].name};
    emit_collective(g, name, op, grp, in, 1, out, g->dtype, rop);
    fmt_name(g, wait, name, "wait");
    int32_t c = tensor_new(g, wait, out, g->t[x].rg);
    tape_op *o = tape_push(g, T_COLL, name);
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
static int32_t f_identity_ar(gen *g, const char *tag, int32_t x)
{
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, tag);
    int32_t c = tensor_new(g, g->t[x].name, g->t[x].bytes, g->t[x].rg);
    tape_op *o = tape_push(g, T_F, name);
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
static void grad_share(gen *g, int32_t ti, int32_t gt)
{
    if (!g->t[ti].rg || gt < 0)
        return;
    int32_t prev = g->t[ti].grad;
    if (prev < 0) {
        g->t[ti].grad = gt;
        return;
    }
    char name[NAME_LEN], tag[24];
    snprintf(tag, sizeof tag, "grad_acc%u", (unsigned)++g->t[ti].nacc);
    fmt_name(g, name, g->t[ti].name, tag);
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, "add");
    node_in(g, g->t[prev].name);
    node_in(g, g->t[gt].name);
    node_out(g, name, g->t[ti].bytes, NULL);
    node_end(g, (double)(g->t[ti].bytes / g->e), 3.0 * (double)g->t[ti].bytes,
             0);
    int32_t sum = tensor_new(g, name, g->t[ti].bytes, 1);
    g->t[ti].grad = sum; /* not in one statement: tensor_new moves g->t */
}

/* Emits the pending node as a gradient contribution to ti. Coarse mode
 * folds accumulation into the producer (it reads the previous gradient and
 * writes the sum, as a fused epilogue would); fine mode adds a node. */
static void grad_emit(gen *g, int32_t ti, double flops, double bytes,
                      int gemm)
{
    const char *name = g->cur.name;
    char copy[NAME_LEN];
    memcpy(copy, name, NAME_LEN);
    int32_t prev = g->t[ti].grad;
    if (!g->fine && prev >= 0) {
        node_in(g, g->t[prev].name);
        bytes += tb(g, prev);
        node_out(g, copy, g->t[ti].bytes, NULL);
        node_end(g, flops, bytes, gemm);
        int32_t sum = tensor_new(g, copy, g->t[ti].bytes, 1);
        g->t[ti].grad = sum;
        return;
    }
    node_out(g, copy, g->t[ti].bytes, NULL);
    node_end(g, flops, bytes, gemm);
    grad_share(g, ti, tensor_new(g, copy, g->t[ti].bytes, 1));
}

/* Final gradient of a parameter: cast to the reduce dtype, then synchronised
 * over dp (FSDP reduce-scatter per unit, DDP all-reduce per parameter) or
 * kept (TP / EP-local parameters). */
static void param_grad_final(gen *g, int32_t pi)
{
    param *p = &g->p[pi];
    int32_t wg = g->t[p->weight].grad;
    if (wg < 0)
        return;
    p->wgrad = wg;
    unit *u = &g->u[p->unit];
    char name[NAME_LEN], src[NAME_LEN];
    const char *in[MAX_IO];
    if (p->fsdp) {
        if (++u->fsdp_done < u->n_fsdp)
            return;
        int64_t shard = 0;
        for (int32_t i = u->p0; i < u->p0 + u->np; i++)
            if (g->p[i].fsdp)
                shard += shard_numel(g, g->p[i].numel);
        if (!g->fine) {
            /* FSDP2 foreach_reduce: pack the unit's gradients (cast to the
             * reduce dtype) into one flat buffer, then one reduce-scatter. */
            char names[MAX_IO][NAME_LEN];
            size_t k = 0;
            double bytes = (double)(shard * g->dp * g->re);
            fmt_name(g, name, u->name, "rs_copy_in");
            node_begin(g, COMMSCHED_NODE_COMPUTE, name, "chunk_cat");
            for (int32_t i = u->p0; i < u->p0 + u->np && k < MAX_IO; i++)
                if (g->p[i].fsdp && g->p[i].wgrad >= 0) {
                    memcpy(names[k], g->t[g->p[i].wgrad].name, NAME_LEN);
                    node_in(g, names[k]);
                    bytes += tb(g, g->p[i].wgrad);
                    k++;
                }
            node_out(g, name, shard * g->dp * g->re, NULL);
            node_end(g, (double)(shard * g->dp), bytes, 0);
        } else {
            fmt_name(g, name, u->name, "grad_cast");
            node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_to_copy");
            node_in(g, g->t[wg].name);
            node_out(g, name, shard * g->dp * g->re, NULL);
            node_end(g, (double)(shard * g->dp),
                     (double)(shard * g->dp) * (double)(g->e + g->re), 0);
        }
        memcpy(src, name, NAME_LEN);
        in[0] = src;
        fmt_name(g, name, u->name, "rs");
        emit_collective(g, name, COMMSCHED_COLL_REDUCE_SCATTER, GRP_DP, in, 1,
                        shard * g->re, g->reduce_dtype, COMMSCHED_REDUCE_AVG);
        fmt_name(g, u->grad, name, "wait");
        (void)commsched_builder_add_output(g->b, u->grad, &g->err);
        for (int32_t i = u->p0; i < u->p0 + u->np; i++)
            if (g->p[i].fsdp)
                memcpy(g->p[i].grad, u->grad, NAME_LEN);
        return;
    }
    /* Local parameter: autocast's cast backward gives the fp32 gradient. */
    fmt_name(g, name, p->name, "grad_cast");
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_to_copy");
    node_in(g, g->t[wg].name);
    node_out(g, name, p->numel * g->re, NULL);
    node_end(g, (double)p->numel, (double)p->numel * (double)(g->e + g->re),
             0);
    if (g->family == FAM_DDP) {
        memcpy(src, name, NAME_LEN);
        in[0] = src;
        fmt_name(g, name, p->name, "ar");
        emit_collective(g, name, COMMSCHED_COLL_ALL_REDUCE, GRP_DP, in, 1,
                        p->numel * g->re, g->reduce_dtype,
                        COMMSCHED_REDUCE_AVG);
        fmt_name(g, p->grad, name, "wait");
    } else {
        memcpy(p->grad, name, NAME_LEN);
    }
    (void)commsched_builder_add_output(g->b, p->grad, &g->err);
}

static void bwd_mm(gen *g, const tape_op *o)
{
    int32_t a = o->in[0], b = o->in[1], dy = g->t[o->out].grad;
    char name[NAME_LEN];
    if (dy < 0)
        return;
    if (g->t[a].rg) {
        fmt_name(g, name, o->name, "dx");
        const char *w = bwd_read(g, b);
        char wcopy[NAME_LEN];
        memcpy(wcopy, w, NAME_LEN);
        node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
        node_in(g, g->t[dy].name);
        node_in(g, wcopy);
        grad_emit(g, a, o->flops, tb(g, dy) + tb(g, b) + tb(g, a), 1);
    }
    if (g->t[b].rg) {
        char acopy[NAME_LEN];
        memcpy(acopy, bwd_read(g, a), NAME_LEN);
        fmt_name(g, name, o->name, "dw");
        node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mm");
        node_in(g, acopy);
        node_in(g, g->t[dy].name);
        grad_emit(g, b, o->flops, tb(g, dy) + tb(g, a) + tb(g, b), 1);
    }
}

static void bwd_ew(gen *g, const tape_op *o)
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
        char reads[4][NAME_LEN];
        double bytes = tb(g, dy) + tb(g, x);
        int nr = 0;
        for (int k = 0; k < o->n_in; k++)
            if ((o->rmask >> k) & 1) {
                memcpy(reads[nr++], bwd_read(g, o->in[k]), NAME_LEN);
                bytes += tb(g, o->in[k]);
            }
        char name[NAME_LEN], tag[16], op[NAME_LEN];
        snprintf(tag, sizeof tag, ng > 1 ? "bwd%d" : "bwd", i);
        fmt_name(g, name, o->name, tag);
        if (snprintf(op, sizeof op, "%s_backward", o->op) >= (int)sizeof op)
            fail(g, "generated op name too long");
        node_begin(g, COMMSCHED_NODE_COMPUTE, name, op);
        node_in(g, g->t[dy].name);
        for (int k = 0; k < nr; k++)
            node_in(g, reads[k]);
        grad_emit(g, x, o->flops, bytes, 0);
    }
}

static void bwd_view(gen *g, const tape_op *o)
{
    int32_t dy = g->t[o->out].grad;
    if (dy < 0)
        return;
    char name[NAME_LEN];
    fmt_name(g, name, o->name, "bwd");
    node_begin(g, COMMSCHED_NODE_COMPUTE, name, o->op);
    node_in(g, g->t[dy].name);
    node_out(g, name, 0, g->t[dy].name);
    node_end(g, 0, 0, 0);
    grad_share(g, o->in[0], tensor_new(g, name, g->t[o->in[0]].bytes, 1));
}

static void bwd_sdpa(gen *g, const tape_op *o)
{
    int32_t dy = g->t[o->out].grad;
    if (dy < 0)
        return;
    char name[NAME_LEN], outs[3][NAME_LEN];
    static const char *const tags[3] = {"dq", "dk", "dv"};
    fmt_name(g, name, o->name, "bwd");
    node_begin(g, COMMSCHED_NODE_COMPUTE, name,
               "_scaled_dot_product_flash_attention_backward");
    node_in(g, g->t[dy].name);
    double bytes = tb(g, dy);
    for (int i = 0; i < 3; i++) {
        node_in(g, g->t[o->in[i]].name);
        bytes += 2.0 * tb(g, o->in[i]);
    }
    node_in(g, g->t[o->out].name);
    node_in(g, g->t[o->aux].name);
    bytes += tb(g, o->out) + tb(g, o->aux);
    for (int i = 0; i < 3; i++) {
        fmt_name(g, outs[i], name, tags[i]);
        node_out(g, outs[i], g->t[o->in[i]].bytes, NULL);
    }
    /* Flash attention's backward does 5 of the forward's 2 matmuls. */
    node_end(g, 2.5 * o->flops, bytes, 1);
    for (int i = 0; i < 3; i++)
        grad_share(g, o->in[i],
                   tensor_new(g, outs[i], g->t[o->in[i]].bytes, 1));
}

static void bwd_coll(gen *g, const tape_op *o)
{
    int32_t dy = g->t[o->out].grad, x = o->in[0];
    if (dy < 0 || !g->t[x].rg)
        return;
    commsched_coll_op op;
    commsched_reduce_op rop = COMMSCHED_REDUCE_NONE;
    switch (o->type == T_F ? COMMSCHED_COLL_BARRIER : o->coll) {
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
    case COMMSCHED_COLL_BARRIER: /* T_F: all-reduce backward */
        op = COMMSCHED_COLL_ALL_REDUCE;
        rop = COMMSCHED_REDUCE_SUM;
        break;
    default:
        op = (commsched_coll_op)o->coll;
        break;
    }
    char name[NAME_LEN], wait[NAME_LEN], src[NAME_LEN];
    const char *in[1] = {src};
    memcpy(src, g->t[dy].name, NAME_LEN);
    fmt_name(g, name, o->name, "bwd");
    emit_collective(g, name, op, o->type == T_F ? GRP_TP : o->group, in, 1,
                    g->t[x].bytes, g->dtype, rop);
    fmt_name(g, wait, name, "wait");
    grad_share(g, x, tensor_new(g, wait, g->t[x].bytes, 1));
}

static int32_t layer(gen *g, int32_t x, long l);

/* The gradient rules of tape ops [lo, hi), last first. A checkpointed layer
 * is met at its last op: its forward is emitted again (reading the saved
 * layer input and the backward gathers), and the recomputed ops are walked
 * instead of the originals, whose intermediates were freed in forward. */
static void backward_range(gen *g, size_t hi, size_t lo)
{
    size_t k = g->nseg;
    for (size_t i = hi; i-- > lo && g->st == COMMSCHED_OK;) {
        while (k > 0 && g->seg[k - 1].start > i)
            k--;
        if (k > 0 && g->seg[k - 1].end == i + 1 && i < g->seg[k - 1].end) {
            segment sg = g->seg[k - 1];
            char saved[sizeof g->prefix];
            memcpy(saved, g->prefix, sizeof saved);
            set_prefix(g, "L%ld.rc", sg.layer);
            size_t r0 = g->nops;
            g->recompute = 1;
            int32_t y = layer(g, sg.x, sg.layer);
            g->recompute = 0;
            memcpy(g->prefix, saved, sizeof saved);
            g->t[y].grad = g->t[sg.y].grad;
            backward_range(g, g->nops, r0);
            i = sg.start; /* the loop steps below it */
            k--;
            continue;
        }
        tape_op o = g->ops[i]; /* copy: emission may grow the tape array */
        switch (o.type) {
        case T_MM: bwd_mm(g, &o); break;
        case T_EW: bwd_ew(g, &o); break;
        case T_ADD:
            if (g->t[o.out].grad >= 0) {
                grad_share(g, o.in[0], g->t[o.out].grad);
                grad_share(g, o.in[1], g->t[o.out].grad);
            }
            break;
        case T_VIEW: bwd_view(g, &o); break;
        case T_SDPA: bwd_sdpa(g, &o); break;
        case T_COLL:
        case T_F: bwd_coll(g, &o); break;
        case T_PARAM: param_grad_final(g, o.aux); break;
        default: break;
        }
    }
}

static void backward(gen *g)
{
    g->bwd = 1;
    backward_range(g, g->nops, 0);
}

/* ---------------------------------------------------------------------- */
/* Gradient clipping (torch.nn.utils.clip_grad_norm_, torchtitan's default) */
/* ---------------------------------------------------------------------- */

/* Norm of every local gradient, their total, an all-reduce over every
 * group the gradients are sharded over (the local norms are partial sums),
 * and the clip coefficient every update then reads: the optimizer cannot
 * start before the last gradient is reduced. Coarse: one norm per unit
 * and the scaling fused into the update; fine: per parameter a norm and an
 * in-place mul_. */
static void clip_grads(gen *g)
{
    char name[NAME_LEN], prev[NAME_LEN];
    int sharded_dp = 0, sharded_ep = 0;
    for (size_t ui = 0; ui < g->nu && g->st == COMMSCHED_OK; ui++) {
        unit *u = &g->u[ui];
        if (u->np == 0)
            continue;
        int64_t numel = 0;
        fmt_name(g, name, u->name, "grad_norm");
        node_begin(g, COMMSCHED_NODE_COMPUTE, name,
                   g->fine ? "linalg_vector_norm" : "_foreach_norm");
        if (u->n_fsdp && u->grad[0])
            node_in(g, u->grad);
        for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
            param *p = &g->p[i];
            sharded_dp |= p->fsdp;
            sharded_ep |= !p->fsdp && g->use_ep && strstr(p->name, "experts");
            numel += p->fsdp ? shard_numel(g, p->numel) : p->numel;
            if (!p->fsdp && p->grad[0])
                node_in(g, p->grad);
        }
        node_out(g, name, 4, NULL);
        node_end(g, 2.0 * (double)numel, (double)numel * (double)g->re, 0);
    }
    node_begin(g, COMMSCHED_NODE_COMPUTE, "clip.total_norm", "stack_norm");
    for (size_t ui = 0; ui < g->nu; ui++)
        if (g->u[ui].np > 0) {
            fmt_name(g, name, g->u[ui].name, "grad_norm");
            node_in(g, name);
        }
    node_out(g, "clip.total_norm", 4, NULL);
    node_end(g, (double)g->nu, 8.0 * (double)g->nu, 0);
    memcpy(prev, "clip.total_norm", sizeof "clip.total_norm");
    int groups[3] = {sharded_dp ? GRP_DP : -1, g->use_tp ? GRP_TP : -1,
                     sharded_ep ? GRP_EP : -1};
    for (int k = 0; k < 3; k++) {
        if (groups[k] < 0)
            continue;
        const char *in[1] = {prev};
        char src[NAME_LEN];
        memcpy(src, prev, NAME_LEN);
        in[0] = src;
        snprintf(name, sizeof name, "clip.ar_%s", group_names[groups[k]]);
        emit_collective(g, name, COMMSCHED_COLL_ALL_REDUCE, groups[k], in, 1,
                        4, COMMSCHED_DTYPE_FLOAT32, COMMSCHED_REDUCE_SUM);
        fmt_name(g, prev, name, "wait");
    }
    node_begin(g, COMMSCHED_NODE_COMPUTE, "clip.coef", "clamp");
    node_in(g, prev);
    node_out(g, "clip.coef", 4, NULL);
    node_end(g, 4, 8, 0);
    if (!g->fine)
        return; /* the fused update reads clip.coef */
    for (size_t i = 0; i < g->np && g->st == COMMSCHED_OK; i++) {
        param *p = &g->p[i];
        if (!p->grad[0])
            continue;
        int64_t n = p->fsdp ? shard_numel(g, p->numel) : p->numel;
        fmt_name(g, name, p->name, "clip");
        node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mul_");
        node_in(g, p->grad);
        node_in(g, "clip.coef");
        node_out(g, name, 0, p->grad);
        node_end(g, (double)n, 2.0 * (double)n * (double)g->re, 0);
        memcpy(p->grad, name, NAME_LEN);
    }
}

/* ---------------------------------------------------------------------- */
/* Optimizer: AdamW on the fp32 master weights                              */
/* ---------------------------------------------------------------------- */

/* Coarse: one fused multi-tensor AdamW kernel per unit, in place. Fine: the
 * foreach decomposition per parameter (weight decay, two moment updates,
 * the denominator, the step): eight elementwise ops, one temporary. */
static void optimizer(gen *g)
{
    char name[NAME_LEN], a[NAME_LEN], b[NAME_LEN], c[NAME_LEN], d[NAME_LEN];
    for (size_t ui = 0; ui < g->nu && g->st == COMMSCHED_OK; ui++) {
        unit *u = &g->u[ui];
        if (u->np == 0) /* fine mode: the per-layer units stay empty */
            continue;
        if (!g->fine) {
            int64_t numel = 0;
            fmt_name(g, name, u->name, "adamw");
            node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_fused_adamw_");
            if (g->clip)
                node_in(g, "clip.coef");
            if (u->n_fsdp)
                node_in(g, u->grad);
            for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
                param *p = &g->p[i];
                if (!p->grad[0])
                    continue;
                if (!p->fsdp)
                    node_in(g, p->grad);
                numel += p->fsdp ? shard_numel(g, p->numel) : p->numel;
                fmt_name(g, a, p->name, p->fsdp ? "shard" : "master");
                node_in(g, a);
                fmt_name(g, b, p->name, "exp_avg");
                node_in(g, b);
                fmt_name(g, c, p->name, "exp_avg_sq");
                node_in(g, c);
            }
            for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
                param *p = &g->p[i];
                if (!p->grad[0])
                    continue;
                fmt_name(g, a, p->name, p->fsdp ? "shard" : "master");
                fmt_name(g, d, a, "new");
                node_out(g, d, 0, a);
                fmt_name(g, b, p->name, "exp_avg");
                fmt_name(g, d, b, "new");
                node_out(g, d, 0, b);
                fmt_name(g, c, p->name, "exp_avg_sq");
                fmt_name(g, d, c, "new");
                node_out(g, d, 0, c);
            }
            if (g->cur.n_out == 0)
                continue;
            /* reads p, g, m, v and writes p, m, v: 7 fp32 streams */
            node_end(g, 12.0 * (double)numel, 28.0 * (double)numel, 0);
            for (size_t k = 0; k < g->cur.n_out; k++)
                (void)commsched_builder_add_output(g->b, g->cur.out[k],
                                                   &g->err);
            continue;
        }
        /* fine: one parameter per unit */
        param *p = &g->p[u->p0];
        if (!p->grad[0])
            continue;
        int64_t n = p->fsdp ? shard_numel(g, p->numel) : p->numel;
        double s4 = 4.0 * (double)n;
        char pw[NAME_LEN], m[NAME_LEN], v[NAME_LEN], den[NAME_LEN];
        fmt_name(g, pw, p->name, p->fsdp ? "shard" : "master");
        fmt_name(g, m, p->name, "exp_avg");
        fmt_name(g, v, p->name, "exp_avg_sq");
        struct step {
            const char *tag, *op;
            char *dst;   /* the buffer this step updates in place */
            int reads;   /* 1: +grad, 2: +grad twice, 3: +m +den */
        } steps[] = {
            {"opt.decay", "mul_", pw, 0},
            {"opt.lerp", "lerp_", m, 1},
            {"opt.mul", "mul_", v, 0},
            {"opt.addcmul", "addcmul_", v, 2},
            {"opt.sqrt", "sqrt", NULL, 0},
            {"opt.div", "div_", den, 0},
            {"opt.add_eps", "add_", den, 0},
            {"opt.addcdiv", "addcdiv_", pw, 3},
        };
        for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
            fmt_name(g, name, p->name, steps[k].tag);
            node_begin(g, COMMSCHED_NODE_COMPUTE, name, steps[k].op);
            double bytes = 2.0 * s4;
            if (!steps[k].dst) { /* sqrt(v) into a new denominator */
                node_in(g, v);
                node_out(g, name, 4 * n, NULL);
                node_end(g, (double)n, bytes, 0);
                memcpy(den, name, NAME_LEN);
                continue;
            }
            node_in(g, steps[k].dst);
            if (steps[k].reads == 1 || steps[k].reads == 2) {
                node_in(g, p->grad);
                bytes += s4;
            }
            if (steps[k].reads == 3) {
                node_in(g, m);
                node_in(g, den);
                bytes += 2.0 * s4;
            }
            node_out(g, name, 0, steps[k].dst);
            node_end(g, 2.0 * (double)n, bytes, 0);
            memcpy(steps[k].dst, name, NAME_LEN);
        }
        (void)commsched_builder_add_output(g->b, pw, &g->err);
        (void)commsched_builder_add_output(g->b, m, &g->err);
        (void)commsched_builder_add_output(g->b, v, &g->err);
    }
}

/* ---------------------------------------------------------------------- */
/* The model                                                               */
/* ---------------------------------------------------------------------- */

/* A linear layer x[M,K] @ W[K,N]. Fine mode adds the views the FX graph
 * has around aten.mm (flatten the batch, transpose the weight, unflatten). */
static int32_t linear(gen *g, const char *tag, int32_t x, int32_t pi,
                      double M, double K, double N)
{
    char t[NAME_LEN];
    int32_t w = param_get(g, pi);
    if (!g->fine)
        return f_mm(g, tag, x, w, M, K, N);
    snprintf(t, sizeof t, "%s.view_in", tag);
    int32_t x2 = f_view(g, t, "view", x);
    snprintf(t, sizeof t, "%s.t", tag);
    int32_t wt = f_view(g, t, "permute", w);
    snprintf(t, sizeof t, "%s.mm", tag);
    int32_t y = f_mm(g, t, x2, wt, M, K, N);
    snprintf(t, sizeof t, "%s.view_out", tag);
    return f_view(g, t, "view", y);
}

/* RMSNorm / LayerNorm over the last dimension of x[M, H]. Fine mode is
 * torchtitan's RMSNorm as traced: x.float(), pow, mean, +eps, rsqrt, mul,
 * type_as, * weight (LayerNorm: var_mean, sub, ..., * weight + bias). */
static int32_t norm(gen *g, const char *tag, int32_t x, int32_t pw,
                    int32_t pb, int64_t M)
{
    int64_t H = g->s.hidden, e = g->e;
    double n = (double)(M * H);
    char t[NAME_LEN];
    int32_t w = param_get(g, pw);
    int32_t bias = pb >= 0 ? param_get(g, pb) : -1;
    if (!g->fine) {
        int32_t in[3] = {x, w, bias};
        return f_ew(g, tag, g->s.rmsnorm ? "rms_norm" : "layer_norm",
                    bias >= 0 ? 3 : 2, in, 7, 7, 0, M * H * e, 5.0 * n);
    }
#define T(s) (snprintf(t, sizeof t, "%s.%s", tag, s), t)
    int32_t xf = f_ew1(g, T("to_fp32"), "_to_copy", x, M * H * 4, n, 0);
    int32_t r;
    int32_t xc = xf;
    if (g->s.rmsnorm) {
        int32_t p2 = f_ew1(g, T("pow"), "pow", xf, M * H * 4, n, 1);
        int32_t m = f_ew1(g, T("mean"), "mean", p2, M * 4, n, 0);
        int32_t a = f_ew(g, T("add_eps"), "add", 1, &m, 0, 0, 1, M * 4,
                         (double)M);
        r = f_ew1(g, T("rsqrt"), "rsqrt", a, M * 4, (double)M, 1);
    } else {
        int32_t vm = f_ew1(g, T("var_mean"), "var_mean", xf, M * 8, 2.0 * n,
                           1);
        int32_t a = f_ew(g, T("add_eps"), "add", 1, &vm, 0, 0, 1, M * 8,
                         (double)M);
        r = f_ew1(g, T("rsqrt"), "rsqrt", a, M * 8, (double)M, 1);
        int32_t in[2] = {xf, r};
        xc = f_ew(g, T("sub"), "sub", 2, in, 3, 0, 0, M * H * 4, n);
    }
    int32_t in[2] = {xc, r};
    int32_t y = f_ew(g, T("mul"), "mul", 2, in, 3, 3, 0, M * H * 4, n);
    y = f_ew1(g, T("to_bf16"), "_to_copy", y, M * H * e, n, 0);
    in[0] = y;
    in[1] = w;
    y = f_ew(g, T("mul_w"), "mul", 2, in, 3, 3, 0, M * H * e, n);
    if (bias >= 0) {
        in[0] = y;
        in[1] = bias;
        y = f_ew(g, T("add_b"), "add", 2, in, 3, 0, 0, M * H * e, n);
    }
    return y;
#undef T
}

/* Rotary embedding of x (M tokens x `width` features). Fine mode is
 * torchtitan's complex form: float(), view_as_complex, * freqs_cis,
 * view_as_real, flatten, type_as. */
static int32_t rope(gen *g, const char *tag, int32_t x, int64_t M,
                    int64_t width)
{
    double n = (double)(M * width);
    char t[NAME_LEN];
    if (!g->fine) {
        int32_t in[2] = {x, g->freqs};
        return f_ew(g, tag, "rotary_emb", 2, in, 1, 2, 0, M * width * g->e,
                    3.0 * n);
    }
#define T(s) (snprintf(t, sizeof t, "%s.%s", tag, s), t)
    int32_t xf = f_ew1(g, T("to_fp32"), "_to_copy", x, M * width * 4, n, 0);
    xf = f_view(g, T("as_complex"), "view_as_complex", xf);
    int32_t in[2] = {xf, g->freqs};
    int32_t y = f_ew(g, T("mul"), "mul", 2, in, 1, 2, 0, M * width * 4,
                     3.0 * n);
    y = f_view(g, T("as_real"), "view_as_real", y);
    y = f_view(g, T("flatten"), "view", y);
    return f_ew1(g, T("type_as"), "_to_copy", y, M * width * g->e, n, 0);
#undef T
}


/* Attention block: x (residual stream, M tokens: T, or T/tp with sequence
 * parallelism) -> x + attn(norm(x)). */
static int32_t attention(gen *g, int32_t x, const layer_params *lp)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, hd = g->hd;
    int64_t M = g->sp ? g->Ts : T;
    int64_t q_w = g->nh_l * hd, kv_w = g->nkv_l * hd;
    int32_t xn = norm(g, "attn_norm", x, lp->norm1, lp->norm1_b, M);
    if (g->use_tp && g->sp)
        xn = f_coll(g, "sp_ag_attn", COMMSCHED_COLL_ALL_GATHER, GRP_TP, xn,
                    T * H * e, COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        xn = f_identity_ar(g, "tp_f_attn", xn);
    double Td = (double)T, Hd = (double)H;
    int32_t q = linear(g, "wq", xn, lp->wq, Td, Hd, (double)q_w);
    int32_t k = linear(g, "wk", xn, lp->wk, Td, Hd, (double)kv_w);
    int32_t v = linear(g, "wv", xn, lp->wv, Td, Hd, (double)kv_w);
    q = f_view(g, "q.view_heads", "view", q);
    k = f_view(g, "k.view_heads", "view", k);
    v = f_view(g, "v.view_heads", "view", v);
    if (g->s.rope) {
        q = rope(g, "q.rope", q, T, q_w);
        k = rope(g, "k.rope", k, T, kv_w);
    }
    if (g->fine && g->nkv_l < g->nh_l) {
        /* repeat_kv for grouped-query attention: expand, copy, reshape */
        k = f_view(g, "k.expand", "expand", k);
        k = f_ew1(g, "k.repeat", "clone", k, T * q_w * e, (double)(T * q_w),
                  0);
        k = f_view(g, "k.reshape", "view", k);
        v = f_view(g, "v.expand", "expand", v);
        v = f_ew1(g, "v.repeat", "clone", v, T * q_w * e, (double)(T * q_w),
                  0);
        v = f_view(g, "v.reshape", "view", v);
    }
    q = f_view(g, "q.transpose", "transpose", q);
    k = f_view(g, "k.transpose", "transpose", k);
    v = f_view(g, "v.transpose", "transpose", v);
    /* Causal flash attention: QK^T and PV, 2 flops per MAC, half masked. */
    double S = (double)g->s.seq, B = (double)g->s.batch;
    double flops = 4.0 * B * S * S * (double)q_w * 0.5;
    char name[NAME_LEN];
    fmt_name(g, name, g->prefix, "sdpa");
    char lse[NAME_LEN];
    fmt_name(g, lse, name, "lse");
    int64_t lse_b = (int64_t)(B * S) * g->nh_l * 4;
    node_begin(g, COMMSCHED_NODE_COMPUTE, name,
               "_scaled_dot_product_flash_attention");
    node_in(g, g->t[q].name);
    node_in(g, g->t[k].name);
    node_in(g, g->t[v].name);
    node_out(g, name, T * q_w * e, NULL);
    node_out(g, lse, lse_b, NULL);
    node_end(g, flops,
             tb(g, q) + tb(g, k) + tb(g, v) + (double)(T * q_w * e), 1);
    int32_t o = tensor_new(g, name, T * q_w * e, 1);
    int32_t ol = tensor_new(g, lse, lse_b, 0);
    tape_op *op = tape_push(g, T_SDPA, name);
    if (op) {
        op->in[0] = q;
        op->in[1] = k;
        op->in[2] = v;
        op->n_in = 3;
        op->out = o;
        op->aux = ol;
        op->flops = flops;
    }
    o = f_view(g, "o.transpose", "transpose", o);
    if (g->fine)
        o = f_ew1(g, "o.contiguous", "clone", o, T * q_w * e,
                  (double)(T * q_w), 0);
    o = f_view(g, "o.view", "view", o);
    int32_t a = linear(g, "wo", o, lp->wo, Td, (double)q_w, Hd);
    if (g->use_tp && g->sp)
        a = f_coll(g, "sp_rs_attn", COMMSCHED_COLL_REDUCE_SCATTER, GRP_TP, a,
                   M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        a = f_coll(g, "tp_ar_attn", COMMSCHED_COLL_ALL_REDUCE, GRP_TP, a,
                   T * H * e, COMMSCHED_REDUCE_SUM);
    return f_add(g, "attn_residual", x, a);
}

/* Dense MLP block (SwiGLU or GELU). */
static int32_t mlp(gen *g, int32_t h, const layer_params *lp)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, F = g->ffn_l;
    int64_t M = g->sp ? g->Ts : T;
    double Td = (double)T, Hd = (double)H, Fd = (double)F;
    int32_t hn = norm(g, "mlp_norm", h, lp->norm2, lp->norm2_b, M);
    if (g->use_tp && g->sp)
        hn = f_coll(g, "sp_ag_mlp", COMMSCHED_COLL_ALL_GATHER, GRP_TP, hn,
                    T * H * e, COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        hn = f_identity_ar(g, "tp_f_mlp", hn);
    int32_t gate = linear(g, "w1", hn, lp->w1, Td, Hd, Fd);
    int32_t act;
    if (g->s.swiglu) {
        int32_t up = linear(g, "w3", hn, lp->w3, Td, Hd, Fd);
        if (g->fine) {
            int32_t s = f_ew1(g, "silu", "silu", gate, T * F * e,
                              4.0 * Td * Fd, 1);
            int32_t in[2] = {s, up};
            act = f_ew(g, "mul", "mul", 2, in, 3, 3, 0, T * F * e, Td * Fd);
        } else {
            int32_t in[2] = {gate, up};
            act = f_ew(g, "silu_mul", "silu_mul", 2, in, 3, 3, 0, T * F * e,
                       5.0 * Td * Fd);
        }
    } else {
        act = f_ew1(g, "gelu", "gelu", gate, T * F * e, 8.0 * Td * Fd, 1);
    }
    int32_t d = linear(g, "w2", act, lp->w2, Td, Fd, Hd);
    if (g->use_tp && g->sp)
        d = f_coll(g, "sp_rs_mlp", COMMSCHED_COLL_REDUCE_SCATTER, GRP_TP, d,
                   M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        d = f_coll(g, "tp_ar_mlp", COMMSCHED_COLL_ALL_REDUCE, GRP_TP, d,
                   T * H * e, COMMSCHED_REDUCE_SUM);
    return f_add(g, "mlp_residual", h, d);
}

/* Mixture-of-experts block (Mixtral): router, top-k, permute, all-to-all
 * dispatch over ep, local experts (grouped GEMMs), all-to-all combine,
 * un-permute with the routing weights. Tokens are assumed balanced: every
 * rank receives T x topk tokens. */
static int32_t moe(gen *g, int32_t h, const layer_params *lp, int32_t w1,
                   int32_t w3, int32_t w2)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, F = g->s.ffn;
    int64_t E = g->s.experts, K = g->s.topk, TK = T * K;
    double Td = (double)T, Hd = (double)H, Fd = (double)F, TKd = (double)TK;
    int32_t hn = norm(g, "mlp_norm", h, lp->norm2, lp->norm2_b, T);
    int32_t logits = linear(g, "router", hn, lp->router, Td, Hd, (double)E);
    int32_t routing;
    if (g->fine) {
        int32_t lf = f_ew1(g, "router.to_fp32", "_to_copy", logits, T * E * 4,
                           Td * (double)E, 0);
        int32_t sm = f_ew1(g, "router.softmax", "_softmax", lf, T * E * 4,
                           5.0 * Td * (double)E, 1);
        int32_t tk = f_ew1(g, "router.topk", "topk", sm, TK * 12,
                           Td * (double)E, 1);
        routing = f_ew1(g, "router.renorm", "div", tk, TK * 12, TKd, 1);
    } else {
        routing = f_ew1(g, "router.topk", "softmax_topk", logits, TK * 12,
                        6.0 * Td * (double)E, 1);
    }
    int32_t in[2] = {hn, routing};
    int32_t xp = f_ew(g, "moe.permute", "index_select", 2, in, 1, 2, 0,
                      TK * H * e, TKd * Hd);
    int32_t xr = f_coll(g, "a2a_dispatch", COMMSCHED_COLL_ALL_TO_ALL, GRP_EP,
                        xp, TK * H * e, COMMSCHED_REDUCE_NONE);
    int32_t a1 = f_mm(g, "experts.w1", xr, param_get(g, w1), TKd, Hd, Fd);
    int32_t a3 = f_mm(g, "experts.w3", xr, param_get(g, w3), TKd, Hd, Fd);
    int32_t act;
    if (g->fine) {
        int32_t s = f_ew1(g, "experts.silu", "silu", a1, TK * F * e,
                          4.0 * TKd * Fd, 1);
        int32_t in2[2] = {s, a3};
        act = f_ew(g, "experts.mul", "mul", 2, in2, 3, 3, 0, TK * F * e,
                   TKd * Fd);
    } else {
        int32_t in2[2] = {a1, a3};
        act = f_ew(g, "experts.silu_mul", "silu_mul", 2, in2, 3, 3, 0,
                   TK * F * e,
                   5.0 * TKd * Fd);
    }
    int32_t y = f_mm(g, "experts.w2", act, param_get(g, w2), TKd, Fd, Hd);
    int32_t yc = f_coll(g, "a2a_combine", COMMSCHED_COLL_ALL_TO_ALL, GRP_EP, y,
                        TK * H * e, COMMSCHED_REDUCE_NONE);
    int32_t in3[2] = {yc, routing};
    int32_t out = f_ew(g, "moe.unpermute", "index_add_weighted", 2, in3, 3, 3, 0,
                       T * H * e, 2.0 * TKd * Hd);
    return f_add(g, "mlp_residual", h, out);
}

/* One transformer layer: attention then MLP or MoE. */
static int32_t layer(gen *g, int32_t x, long l)
{
    x = attention(g, x, &g->lps[l]);
    if (g->family == FAM_MOE)
        return moe(g, x, &g->lps[l], g->experts[l][0], g->experts[l][1],
                   g->experts[l][2]);
    return mlp(g, x, &g->lps[l]);
}

static void build(gen *g)
{
    const shape *s = &g->s;
    int64_t T = g->T, H = s->hidden, e = g->e;
    int64_t M = g->sp ? g->Ts : T;
    int fsdp = g->family == FAM_FSDP || g->family == FAM_MOE ||
               g->family == FAM_2D;
    int32_t emb_unit, head_unit, wte, wpe = -1;
    int32_t fnorm, fnorm_b = -1, wout;
    size_t nl = (size_t)s->layers;
    layer_params *lps = calloc(nl ? nl : 1, sizeof *lps);
    int32_t (*experts)[3] = calloc(nl ? nl : 1, sizeof *experts);
    if (!lps || !experts) {
        free(lps);
        free(experts);
        g->st = commsched_error_set(&g->err, COMMSCHED_ENOMEM, NULL,
                                    "out of memory");
        return;
    }

    /* Groups. Ranks: TP innermost, then dp; hosts follow GPUS_PER_HOST. */
    if (g->family != FAM_TP) {
        int64_t ranks_below = g->use_tp ? g->tp : 1;
        int64_t hosts = ceil_div(g->dp * ranks_below, GPUS_PER_HOST);
        (void)commsched_builder_add_group(g->b, group_names[GRP_DP], g->dp,
                                          hosts < g->dp ? hosts : g->dp,
                                          &g->err);
    }
    if (g->use_tp)
        (void)commsched_builder_add_group(g->b, group_names[GRP_TP], g->tp,
                                          ceil_div(g->tp, GPUS_PER_HOST),
                                          &g->err);
    if (g->use_ep)
        (void)commsched_builder_add_group(g->b, group_names[GRP_EP], g->ep,
                                          ceil_div(g->ep, GPUS_PER_HOST),
                                          &g->err);

    /* The batch and constant buffers. */
    (void)commsched_builder_add_input(g->b, "tokens", T * 8, 1, &g->err);
    (void)commsched_builder_add_input(g->b, "labels", T * 8, 1, &g->err);
    g->tokens = tensor_new(g, "tokens", T * 8, 0);
    g->labels = tensor_new(g, "labels", T * 8, 0);
    if (s->rope) {
        /* complex64 cos/sin table of the sequence */
        int64_t fb = s->seq * (g->hd / 2) * 8;
        (void)commsched_builder_add_input(g->b, "freqs_cis", fb, 0, &g->err);
        g->freqs = tensor_new(g, "freqs_cis", fb, 0);
    }

    /* Parameters, declared in module order (that is also the optimizer's
     * order). TP slices: q/k/v/w1/w3 by columns, wo/w2 by rows, the
     * embedding and output by vocabulary; norms replicated. */
    int64_t q_w = g->nh_l * g->hd, kv_w = g->nkv_l * g->hd;
    set_prefix(g, "embed", 0);
    emb_unit = unit_new(g, "embed");
    wte = param_new(g, emb_unit, "wte", g->vocab_l * H, fsdp);
    if (!s->rope)
        wpe = param_new(g, emb_unit, "wpe", s->seq * H, fsdp);
    for (size_t l = 0; l < nl && g->st == COMMSCHED_OK; l++) {
        layer_params *lp = &lps[l];
        set_prefix(g, "L%ld", (long)l);
        int32_t un = unit_new(g, g->prefix);
        lp->norm1_b = lp->norm2_b = lp->w3 = lp->router = -1;
        lp->norm1 = param_new(g, un, "attn_norm.w", H, fsdp);
        if (!s->rmsnorm)
            lp->norm1_b = param_new(g, un, "attn_norm.b", H, fsdp);
        lp->wq = param_new(g, un, "wq", H * q_w, fsdp);
        lp->wk = param_new(g, un, "wk", H * kv_w, fsdp);
        lp->wv = param_new(g, un, "wv", H * kv_w, fsdp);
        lp->wo = param_new(g, un, "wo", q_w * H, fsdp);
        lp->norm2 = param_new(g, un, "mlp_norm.w", H, fsdp);
        if (!s->rmsnorm)
            lp->norm2_b = param_new(g, un, "mlp_norm.b", H, fsdp);
        if (g->family == FAM_MOE) {
            int64_t el = g->experts_l * H * s->ffn;
            lp->router = param_new(g, un, "router", H * s->experts, fsdp);
            experts[l][0] = param_new(g, un, "experts.w1", el, 0);
            experts[l][1] = param_new(g, un, "experts.w3", el, 0);
            experts[l][2] = param_new(g, un, "experts.w2", el, 0);
        } else {
            lp->w1 = param_new(g, un, "w1", H * g->ffn_l, fsdp);
            if (s->swiglu)
                lp->w3 = param_new(g, un, "w3", H * g->ffn_l, fsdp);
            lp->w2 = param_new(g, un, "w2", g->ffn_l * H, fsdp);
        }
    }
    set_prefix(g, "head", 0);
    head_unit = unit_new(g, "head");
    fnorm = param_new(g, head_unit, "norm.w", H, fsdp);
    if (!s->rmsnorm)
        fnorm_b = param_new(g, head_unit, "norm.b", H, fsdp);
    wout = param_new(g, head_unit, "output", H * g->vocab_l, fsdp);
    if (g->st != COMMSCHED_OK)
        goto done;

    /* Forward. */
    set_prefix(g, "embed", 0);
    int32_t in[3] = {g->tokens, param_get(g, wte)};
    /* a gather touches T rows of the table, not all of it */
    g->bytes_override = (double)(T * 8 + 2 * T * H * e);
    int32_t x = f_ew(g, "lookup", "embedding", 2, in, 2, 1, 0, T * H * e,
                     (double)(T * H));
    if (wpe >= 0) {
        in[0] = x;
        in[1] = param_get(g, wpe);
        x = f_ew(g, "add_pos", "add", 2, in, 3, 0, 0, T * H * e,
                 (double)(T * H));
    }
    if (g->use_tp && g->sp)
        x = f_coll(g, "sp_rs", COMMSCHED_COLL_REDUCE_SCATTER, GRP_TP, x,
                   M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        x = f_coll(g, "tp_ar", COMMSCHED_COLL_ALL_REDUCE, GRP_TP, x, T * H * e,
                   COMMSCHED_REDUCE_SUM);
    g->lps = lps;
    g->experts = experts;
    for (size_t l = 0; l < nl && g->st == COMMSCHED_OK; l++) {
        set_prefix(g, "L%ld", (long)l);
        size_t start = g->nops;
        int32_t x0 = x;
        x = layer(g, x, (long)l);
        if (g->ac &&
            grow(g, (void **)&g->seg, &g->cap_seg, g->nseg + 1,
                 sizeof *g->seg) == 0)
            g->seg[g->nseg++] = (segment){start, g->nops, x0, x, (long)l};
    }
    set_prefix(g, "head", 0);
    x = norm(g, "norm", x, fnorm, fnorm_b, M);
    if (g->use_tp && g->sp)
        x = f_coll(g, "sp_ag", COMMSCHED_COLL_ALL_GATHER, GRP_TP, x, T * H * e,
                   COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        x = f_identity_ar(g, "tp_f", x);
    int32_t logits = linear(g, "output", x, wout, (double)T, (double)H,
                            (double)g->vocab_l);
    int64_t V = g->vocab_l;
    double TV = (double)(T * V);
    int32_t loss;
    if (g->use_tp) {
        /* Vocabulary-parallel cross-entropy (loss_parallel): local max and
         * sum of exponentials, one all-reduce of the statistics, then the
         * loss. The statistics need no gradient. */
        int32_t st_ = f_ew(g, "ce.stats", "ce_local_stats", 1, &logits, 0, 0, 0,
                           T * 12, 3.0 * TV);
        g->t[st_].rg = 0;
        st_ = f_coll(g, "ce.ar", COMMSCHED_COLL_ALL_REDUCE, GRP_TP, st_,
                     T * 12, COMMSCHED_REDUCE_SUM);
        int32_t in2[3] = {logits, st_, g->labels};
        loss = f_ew(g, "loss", "vocab_parallel_cross_entropy", 3, in2, 1, 7, 0,
                    4,
                    3.0 * TV);
    } else if (g->fine) {
        int32_t lf = f_ew1(g, "ce.to_fp32", "_to_copy", logits, T * V * 4, TV,
                           0);
        int32_t ls = f_ew1(g, "ce.log_softmax", "_log_softmax", lf, T * V * 4,
                           4.0 * TV, 1);
        int32_t in2[2] = {ls, g->labels};
        loss = f_ew(g, "loss", "nll_loss_forward", 2, in2, 1, 3, 0, 4,
                    (double)T);
    } else {
        int32_t in2[2] = {logits, g->labels};
        loss = f_ew(g, "loss", "cross_entropy", 2, in2, 1, 3, 0, 4,
                    5.0 * TV);
    }
    (void)commsched_builder_add_output(g->b, g->t[loss].name, &g->err);
    g->loss = loss;

    /* Backward, seeded with d(loss) = 1: the loss node's gradient rule
     * reads the loss itself in place of a ones tensor. */
    g->t[loss].grad = loss;
    backward(g);
    if (g->clip)
        clip_grads(g);
    optimizer(g);
done:
    g->lps = NULL;
    g->experts = NULL;
    free(lps);
    free(experts);
}

/* ---------------------------------------------------------------------- */
/* Command line                                                            */
/* ---------------------------------------------------------------------- */

/* Checks the shape and derives the per-rank sizes. Returns NULL, or what
 * is wrong with the options. */
static const char *configure(gen *g, int asked_experts)
{
    int fam = g->family;
    g->use_tp = fam == FAM_TP || fam == FAM_2D;
    g->use_ep = fam == FAM_MOE;
    if (g->sp && !g->use_tp)
        return "--sp applies to tp and 2d only";
    if (fam == FAM_MOE && (g->s.experts < 1 || g->s.topk < 1))
        return "moe needs experts: use --preset mixtral-8x7b or --experts N "
               "--topk K";
    if (fam != FAM_MOE && asked_experts)
        return "--experts and --topk apply to moe only";
    if (fam != FAM_MOE && g->s.experts > 0)
        return "this preset is a mixture of experts: generate it with the "
               "moe family";
    if (fam != FAM_MOE)
        g->s.experts = g->s.topk = 0;
    if (g->s.hidden % g->s.heads != 0 || g->s.heads % g->s.kv_heads != 0)
        return "hidden must divide by heads and heads by kv-heads";
    if ((g->s.hidden / g->s.heads) % 2 != 0 && g->s.rope)
        return "rotary embeddings need an even head dimension";
    if (fam == FAM_MOE && g->s.topk > g->s.experts)
        return "topk exceeds experts";
    int64_t tpd = g->use_tp ? g->tp : 1;
    if (g->use_tp && (g->s.heads % tpd != 0 || g->s.ffn % tpd != 0 ||
                      (g->sp && (g->s.seq * g->s.batch) % tpd != 0)))
        return "heads, ffn (and with --sp, seq x batch) must divide by tp";
    if (g->use_ep && g->s.experts % g->ep != 0)
        return "experts must divide by ep";
    g->e = commsched_dtype_size(g->dtype);
    g->re = commsched_dtype_size(g->reduce_dtype);
    g->T = g->s.seq * g->s.batch;
    g->Ts = g->T / tpd;
    g->hd = g->s.hidden / g->s.heads;
    g->nh_l = g->s.heads / tpd;
    /* KV heads fewer than tp ranks are replicated (one per rank). */
    g->nkv_l = g->s.kv_heads >= tpd ? g->s.kv_heads / tpd : 1;
    g->ffn_l = g->s.ffn / tpd;
    g->vocab_l = ceil_div(g->s.vocab, tpd);
    g->experts_l = g->use_ep ? g->s.experts / g->ep : g->s.experts;
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched generate FAMILY [--preset NAME] [options]\n"
            "\n"
            "Writes one training step (forward, backward, AdamW update) of a\n"
            "decoder-only transformer as one rank sees it (docs/WORKLOADS.md).\n"
            "\n"
            "families:\n"
            "  fsdp   per-layer all-gather of the parameter shard in forward and\n"
            "         again in backward, reduce-scatter of gradients (group dp)\n"
            "  ddp    replicated parameters, one gradient all-reduce per\n"
            "         parameter in backward (group dp)\n"
            "  tp     Megatron tensor parallelism: all-reduce of activations\n"
            "         per block (group tp); --sp: sequence parallel\n"
            "         (all-gather + reduce-scatter)\n"
            "  moe    FSDP for dense parameters (dp) and expert parallelism\n"
            "         with all-to-all dispatch and combine (ep)\n"
            "  2d     FSDP (dp) x tensor parallelism (tp)\n"
            "\n"
            "presets (published shapes):");
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        fprintf(f, " %s", presets[i].name);
    fprintf(f,
            "\n"
            "  default: llama3-8b (moe: mixtral-8x7b)\n"
            "\n"
            "  --layers N        transformer layers (default: the preset's)\n"
            "  --fine            one node per aten op of the post-grad graph\n"
            "                    (views, casts, elementwise ops; per-parameter\n"
            "                    FSDP collectives as SimpleFSDP issues them)\n"
            "  --hidden N --heads N --kv-heads N --ffn N --vocab N\n"
            "  --seq N --batch N --experts N --topk N\n"
            "                    shape overrides\n"
            "  --dtype T         compute dtype (default bfloat16); parameters\n"
            "                    and AdamW states are float32\n"
            "  --reduce-dtype T  gradient reduction dtype (default float32)\n"
            "  --dp N --tp N --ep N  group sizes (default 8 each, as used)\n"
            "  --sp              sequence parallelism (tp, 2d)\n"
            "  --ac none|full    activation checkpointing of every layer\n"
            "                    (default: the preset's recipe: full for\n"
            "                    llama2-70b and gpt3-175b, none otherwise)\n"
            "  --no-clip         no gradient-norm clipping (default: clip, as\n"
            "                    torchtitan does)\n"
            "  -o, --output OUT  write here (default: standard output)\n");
}

static int parse_dtype(const char *s, commsched_dtype *out)
{
    for (int d = 1; d < COMMSCHED_DTYPE_COUNT; d++)
        if (strcmp(s, commsched_dtype_str((commsched_dtype)d)) == 0) {
            *out = (commsched_dtype)d;
            return 0;
        }
    return -1;
}

int gen_transformer_main(int argc, char **argv)
{
    enum { O_PRESET = 256, O_LAYERS, O_FINE, O_HIDDEN, O_HEADS, O_KV, O_FFN,
           O_VOCAB, O_SEQ, O_BATCH, O_EXPERTS, O_TOPK, O_DTYPE, O_RDTYPE,
           O_DP, O_TP, O_EP, O_SP, O_AC, O_NOCLIP };
    static const struct option opts[] = {
        {"preset", required_argument, 0, O_PRESET},
        {"layers", required_argument, 0, O_LAYERS},
        {"fine", no_argument, 0, O_FINE},
        {"hidden", required_argument, 0, O_HIDDEN},
        {"heads", required_argument, 0, O_HEADS},
        {"kv-heads", required_argument, 0, O_KV},
        {"ffn", required_argument, 0, O_FFN},
        {"vocab", required_argument, 0, O_VOCAB},
        {"seq", required_argument, 0, O_SEQ},
        {"batch", required_argument, 0, O_BATCH},
        {"experts", required_argument, 0, O_EXPERTS},
        {"topk", required_argument, 0, O_TOPK},
        {"dtype", required_argument, 0, O_DTYPE},
        {"reduce-dtype", required_argument, 0, O_RDTYPE},
        {"dp", required_argument, 0, O_DP},
        {"tp", required_argument, 0, O_TP},
        {"ep", required_argument, 0, O_EP},
        {"sp", no_argument, 0, O_SP},
        {"ac", required_argument, 0, O_AC},
        {"no-clip", no_argument, 0, O_NOCLIP},
        {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    gen *g = NULL; /* large (the pending node): on the heap */
    const char *preset = NULL, *out_path = NULL;
    int64_t ov[O_SP + 1];
    int have[O_SP + 1];
    int fine = 0, sp = 0, c, family = -1, ac = -1, clip = 1;
    commsched_dtype dtype = COMMSCHED_DTYPE_BFLOAT16;
    commsched_dtype rdtype = COMMSCHED_DTYPE_FLOAT32;
    memset(have, 0, sizeof have);
    memset(ov, 0, sizeof ov);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_PRESET: preset = optarg; break;
        case O_FINE: fine = 1; break;
        case O_SP: sp = 1; break;
        case O_NOCLIP: clip = 0; break;
        case O_AC:
            if (strcmp(optarg, "none") == 0)
                ac = 0;
            else if (strcmp(optarg, "full") == 0)
                ac = 1;
            else
                return cli_usage_error("generate",
                                       "--ac takes none or full, got \"%s\"",
                                       optarg);
            break;
        case O_DTYPE:
        case O_RDTYPE:
            if (parse_dtype(optarg, c == O_DTYPE ? &dtype : &rdtype) != 0 ||
                commsched_dtype_size(c == O_DTYPE ? dtype : rdtype) == 0)
                return cli_usage_error("generate", "unknown dtype \"%s\"",
                                       optarg);
            break;
        case 'o': out_path = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case '?': return cli_usage_error("generate", "bad option");
        default: {
            char *end = NULL;
            long long v = strtoll(optarg, &end, 10);
            if (*end != '\0' || v < 1 || v > (1LL << 31))
                return cli_usage_error(
                    "generate", "--%s expects a positive integer, got \"%s\"",
                    opts[c - O_PRESET].name, optarg);
            ov[c] = (int64_t)v;
            have[c] = 1;
            break;
        }
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("generate", "expected one FAMILY");
    for (int f = 0; f < 5; f++)
        if (strcmp(argv[optind], family_names[f]) == 0)
            family = f;
    if (family < 0)
        return cli_usage_error("generate", "unknown family \"%s\"",
                               argv[optind]);
    if (!preset)
        preset = family == FAM_MOE ? "mixtral-8x7b" : "llama3-8b";
    const shape *base = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(preset, presets[i].name) == 0)
            base = &presets[i];
    if (!base)
        return cli_usage_error("generate", "unknown preset \"%s\"", preset);

    commsched_graph *graph = NULL;
    cli_out out;
    int rc = 0;
    const char *bad;
    g = calloc(1, sizeof *g);
    if (!g) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    g->s = *base;
    g->family = family;
    g->fine = fine;
    g->sp = sp;
    g->ac = ac >= 0 ? ac : base->ac;
    g->clip = clip;
    g->dp = g->tp = g->ep = 8;
    g->bytes_override = -1;
    int64_t *fields[] = {[O_LAYERS] = &g->s.layers, [O_HIDDEN] = &g->s.hidden,
                         [O_HEADS] = &g->s.heads, [O_KV] = &g->s.kv_heads,
                         [O_FFN] = &g->s.ffn, [O_VOCAB] = &g->s.vocab,
                         [O_SEQ] = &g->s.seq, [O_BATCH] = &g->s.batch,
                         [O_EXPERTS] = &g->s.experts, [O_TOPK] = &g->s.topk,
                         [O_DP] = &g->dp, [O_TP] = &g->tp, [O_EP] = &g->ep};
    for (int k = O_LAYERS; k <= O_EP; k++)
        if (have[k] && fields[k])
            *fields[k] = ov[k];
    g->dtype = dtype;
    g->reduce_dtype = rdtype;
    if ((bad = configure(g, have[O_EXPERTS] || have[O_TOPK])) != NULL) {
        rc = cli_usage_error("generate", "%s", bad);
        goto cleanup;
    }

    char name[128];
    snprintf(name, sizeof name, "%s-%s%s%s%s-%ldL", g->s.name,
             family_names[family], g->sp ? "-sp" : "", fine ? "-fine" : "",
             g->ac ? "-ac" : "", (long)g->s.layers);
    if (commsched_builder_create(name, &g->b, &g->err) != COMMSCHED_OK) {
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    build(g);
    if (g->st != COMMSCHED_OK) {
        commsched_builder_destroy(g->b);
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    if (commsched_builder_finish(g->b, 0, &graph, &g->err) != COMMSCHED_OK) {
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    if ((rc = cli_out_open(&out, out_path)) == 0) {
        if (commsched_graph_save_stream(graph, NULL, NULL, out.f, &g->err) !=
            COMMSCHED_OK) {
            cli_out_abort(&out);
            rc = cli_report(out_path, &g->err);
        } else {
            rc = cli_out_commit(&out);
        }
    }
cleanup:
    commsched_graph_destroy(graph);
    free(g->t);
    free(g->ops);
    free(g->p);
    free(g->u);
    free(g->seg);
    free(g->cur.in);
    free(g->cur.inp);
    free(g);
    return rc;
}
