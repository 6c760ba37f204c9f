/* commsched_generate_transformer (commsched/generate.h) — one training
 * step (forward, backward, optimizer update) of a decoder-only
 * transformer, from its shapes, as one rank of a parallel job sees it.
 * Built through the public builder API only, which is why it is a
 * library call (the CLI's `commsched generate` is its command line).
 * docs/WORKLOADS.md is the reference for every modelling choice; this
 * comment is the map of the code. The code is in three files:
 * generate_tape.c (the generator's state, node emission, parameters, the
 * forward ops and the backward pass derived from the tape),
 * generate_model.c (the layers, gradient clipping, the optimizer, the
 * whole step) and this one (the presets and generate.h's entry points);
 * generate_internal.h holds what they share.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate_internal.h"

/* Published configurations; docs/WORKLOADS.md cites each source. seq is
 * the training sequence length used by default (overridable). */
const commsched_generate_shape *commsched_generate_preset(size_t i)
{
    static const commsched_generate_shape presets[] = {
        {"llama3-8b", 4096, 32, 8, 14336, 32, 8192, 1, 128256, 0, 0, 1, 1, 1,
         0},
        {"llama2-70b", 8192, 64, 8, 28672, 80, 4096, 1, 32000, 0, 0, 1, 1, 1,
         1},
        {"mixtral-8x7b", 4096, 32, 8, 14336, 32, 4096, 1, 32000, 8, 2, 1, 1,
         1, 0},
        {"gpt3-175b", 12288, 96, 96, 49152, 96, 2048, 1, 50257, 0, 0, 0, 0, 0,
         1},
    };
    return i < sizeof presets / sizeof presets[0] ? &presets[i] : NULL;
}

const commsched_generate_shape *commsched_generate_preset_find(const char *name)
{
    const commsched_generate_shape *p = NULL;
    for (size_t i = 0; name && (p = commsched_generate_preset(i)); i++)
        if (strcmp(name, p->name) == 0)
            return p;
    return NULL;
}

const commsched_generate_shape *
commsched_generate_preset_default(commsched_generate_family family)
{
    if (!commsched_generate_family_name(family))
        return NULL;
    return commsched_generate_preset_find(
        family == COMMSCHED_GENERATE_MOE ? "mixtral-8x7b" : "llama3-8b");
}

const char *commsched_generate_family_name(commsched_generate_family family)
{
    static const char *const names[] = {"fsdp", "ddp", "tp", "moe", "2d"};
    _Static_assert(sizeof names / sizeof names[0] ==
                       COMMSCHED_GENERATE_FAMILY_COUNT,
                   "a name for every family");
    int f = (int)family;
    return f >= 0 && f < COMMSCHED_GENERATE_FAMILY_COUNT ? names[f] : NULL;
}

const char *cs_gen_group_name(int group)
{
    static const char *const names[CS_GEN_COUNT] = {"dp", "tp", "ep"};
    return names[group];
}

/* ---------------------------------------------------------------------- */
/* Options                                                                 */
/* ---------------------------------------------------------------------- */

/* Checks the shape and derives the per-rank sizes. Returns NULL, or what
 * is wrong with the options. */
static const char *configure(cs_gen *g, int asked_experts)
{
    int fam = g->family;
    /* What only a caller of the library can get wrong (the CLI's options
     * take names and integers from 1 to 2^31), checked before anything
     * divides by a size or indexes by the family. */
    if (!commsched_generate_family_name((commsched_generate_family)fam))
        return "unknown family";
    if (!g->s.name)
        return "the shape has no name";
    const int64_t *sizes[] = {&g->s.hidden, &g->s.heads, &g->s.kv_heads,
                              &g->s.ffn, &g->s.layers, &g->s.seq,
                              &g->s.batch, &g->s.vocab, &g->dp, &g->tp,
                              &g->ep};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (*sizes[i] < 1 || *sizes[i] > CS_GEN_MAX_SIZE)
            return "shape sizes and group sizes must be from 1 to 2^31";
    if (g->s.experts < 0 || g->s.experts > CS_GEN_MAX_SIZE ||
        g->s.topk < 0 || g->s.topk > CS_GEN_MAX_SIZE)
        return "experts and topk must be from 0 to 2^31";
    if (commsched_dtype_size(g->dtype) == 0 ||
        commsched_dtype_size(g->reduce_dtype) == 0)
        return "dtype and reduce_dtype must be dtypes with a size";
    g->use_tp = fam == COMMSCHED_GENERATE_TP || fam == COMMSCHED_GENERATE_2D;
    g->use_ep = fam == COMMSCHED_GENERATE_MOE;
    if (g->sp && !g->use_tp)
        return "--sp applies to tp and 2d only";
    if (fam == COMMSCHED_GENERATE_MOE && (g->s.experts < 1 || g->s.topk < 1))
        return "moe needs experts: use --preset mixtral-8x7b or --experts N "
               "--topk K";
    if (fam != COMMSCHED_GENERATE_MOE && asked_experts)
        return "--experts and --topk apply to moe only";
    if (fam != COMMSCHED_GENERATE_MOE && g->s.experts > 0)
        return "this preset is a mixture of experts: generate it with the "
               "moe family";
    if (fam != COMMSCHED_GENERATE_MOE)
        g->s.experts = g->s.topk = 0;
    if (g->s.hidden % g->s.heads != 0 || g->s.heads % g->s.kv_heads != 0)
        return "hidden must divide by heads and heads by kv-heads";
    if ((g->s.hidden / g->s.heads) % 2 != 0 && g->s.rope)
        return "rotary embeddings need an even head dimension";
    if (fam == COMMSCHED_GENERATE_MOE && g->s.topk > g->s.experts)
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
    g->vocab_l = cs_gen_ceil_div(g->s.vocab, tpd);
    g->experts_l = g->use_ep ? g->s.experts / g->ep : g->s.experts;
    return NULL;
}

static void cs_gen_free(cs_gen *g)
{
    free(g->t);
    free(g->ops);
    free(g->p);
    free(g->u);
    free(g->seg);
    free(g->cur.in);
    free(g->cur.inp);
    free(g);
}

/* The node count of g's step with `layers` layers (a build of its own,
 * thrown away, reporting no progress), -1 when that build fails. */
static long probe_nodes(const cs_gen *tmpl, int64_t layers)
{
    cs_gen *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    *p = *tmpl;
    p->s.layers = layers;
    p->b = NULL;
    p->st = COMMSCHED_OK;
    memset(&p->err, 0, sizeof p->err);
    p->progress = NULL;
    p->t = NULL, p->nt = p->cap_t = 0;
    p->ops = NULL, p->nops = p->cap_ops = 0;
    p->p = NULL, p->np = p->cap_p = 0;
    p->u = NULL, p->nu = p->cap_u = 0;
    p->seg = NULL, p->nseg = p->cap_seg = 0;
    p->lps = NULL;
    p->experts = NULL;
    memset(&p->cur, 0, sizeof p->cur);
    long n = -1;
    commsched_graph *graph = NULL;
    if (commsched_builder_create("probe", &p->b, &p->err) == COMMSCHED_OK) {
        cs_gen_build(p);
        if (p->st == COMMSCHED_OK &&
            commsched_builder_finish(p->b, 0, &graph, &p->err) == COMMSCHED_OK)
            n = (long)commsched_graph_node_count(graph);
        else
            commsched_builder_destroy(p->b);
    }
    commsched_graph_destroy(graph);
    cs_gen_free(p);
    return n;
}

void commsched_generate_options_init(commsched_generate_options *o,
                                     commsched_generate_family family,
                                     const commsched_generate_shape *preset)
{
    memset(o, 0, sizeof *o);
    o->family = family;
    if (!preset)
        preset = commsched_generate_preset_default(family);
    if (!preset) /* a family outside the enum: refused by configure */
        preset = commsched_generate_preset(0);
    o->shape = *preset;
    o->ac = preset->ac;
    o->clip = 1;
    o->dp = o->tp = o->ep = 8;
    o->dtype = COMMSCHED_DTYPE_BFLOAT16;
    o->reduce_dtype = COMMSCHED_DTYPE_FLOAT32;
}

/* A generator for the options, checked and sized (configure), on the heap
 * (the pending node is large): *out, or a status with err set. */
static commsched_status cs_gen_new(const commsched_generate_options *o,
                                   cs_gen **out, commsched_error *err)
{
    cs_gen *g = *out = calloc(1, sizeof *g);
    if (!g)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    g->s = o->shape;
    g->family = (int)o->family;
    g->fine = o->fine;
    g->sp = o->sp;
    g->ac = o->ac;
    g->clip = o->clip;
    g->dp = o->dp;
    g->tp = o->tp;
    g->ep = o->ep;
    g->dtype = o->dtype;
    g->reduce_dtype = o->reduce_dtype;
    g->bytes_override = -1;
    const char *bad = configure(g, o->asked_experts);
    if (!bad)
        return COMMSCHED_OK;
    free(g);
    *out = NULL;
    return commsched_error_set(err, COMMSCHED_EINVAL, NULL, "%s", bad);
}

/* The step's node count from builds of one and two layers; -1 when one
 * of them fails. */
static double step_nodes(const cs_gen *g)
{
    long n1 = probe_nodes(g, 1), n2 = probe_nodes(g, 2);
    if (n1 < 0 || n2 < 0)
        return -1;
    return (double)n1 + (double)(g->s.layers - 1) * (double)(n2 - n1);
}

commsched_status commsched_generate_size(const commsched_generate_options *o,
                                         double *nodes, commsched_error *err)
{
    cs_gen *g;
    commsched_status st = cs_gen_new(o, &g, err);
    if (st != COMMSCHED_OK)
        return st;
    *nodes = step_nodes(g);
    cs_gen_free(g);
    return st;
}

commsched_status
commsched_generate_transformer(const commsched_generate_options *o,
                               commsched_graph **out, commsched_error *err)
{
    *out = NULL;
    cs_gen *g;
    commsched_status st = cs_gen_new(o, &g, err);
    if (st != COMMSCHED_OK)
        return st;
    if (o->progress) {
        double total = step_nodes(g);
        g->progress = o->progress;
        g->progress_arg = o->progress_arg;
        g->total = total > 0 ? (uint64_t)total : 0;
    }
    char name[128];
    snprintf(name, sizeof name, "%s-%s%s%s%s-%ldL", g->s.name,
             commsched_generate_family_name(o->family), g->sp ? "-sp" : "",
             g->fine ? "-fine" : "", g->ac ? "-ac" : "", (long)g->s.layers);
    st = commsched_builder_create(name, &g->b, &g->err);
    if (st == COMMSCHED_OK) {
        cs_gen_build(g);
        if ((st = g->st) != COMMSCHED_OK)
            commsched_builder_destroy(g->b);
        else
            st = commsched_builder_finish(g->b, 0, out, &g->err);
    }
    if (st != COMMSCHED_OK && err && err->status == COMMSCHED_OK)
        *err = g->err;
    cs_gen_free(g);
    return st;
}
