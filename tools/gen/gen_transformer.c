/* commsched generate fsdp|ddp|tp|moe|2d — one training step (forward,
 * backward, optimizer update) of a decoder-only transformer, from its
 * shapes, as one rank of a parallel job sees it. Built through the public
 * builder API. docs/WORKLOADS.md is the reference for every modelling
 * choice; this comment is the map of the code. The code is in three
 * files: gen_tape.c (the generator's state, node emission, parameters, the
 * forward ops and the backward pass derived from the tape), gen_model.c
 * (the layers, gradient clipping, the optimizer, the whole step) and this
 * one (the presets and the command line); gen_internal.h holds what they
 * share.
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
#include "progress.h"
#include "gen_internal.h"

/* Published configurations; docs/WORKLOADS.md cites each source. seq is
 * the training sequence length used by default (overridable). */
const shape gen_presets[] = {
    {"llama3-8b", 4096, 32, 8, 14336, 32, 8192, 1, 128256, 0, 0, 1, 1, 1, 0},
    {"llama2-70b", 8192, 64, 8, 28672, 80, 4096, 1, 32000, 0, 0, 1, 1, 1, 1},
    {"mixtral-8x7b", 4096, 32, 8, 14336, 32, 4096, 1, 32000, 8, 2, 1, 1, 1,
     0},
    {"gpt3-175b", 12288, 96, 96, 49152, 96, 2048, 1, 50257, 0, 0, 0, 0, 0, 1},
};
const size_t gen_preset_count = sizeof gen_presets / sizeof gen_presets[0];
const char *const gen_family_names[] = {"fsdp", "ddp", "tp", "moe", "2d"};
#define DEFAULT_PRESET "llama3-8b"
#define DEFAULT_MOE_PRESET "mixtral-8x7b"
const char *const gen_group_names[] = {"dp", "tp", "ep"};

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
    g->vocab_l = gen_ceil_div(g->s.vocab, tpd);
    g->experts_l = g->use_ep ? g->s.experts / g->ep : g->s.experts;
    return NULL;
}

/* What each family communicates, by enum family (gen_family_names). */
static const char *const family_about[] = {
    "per-layer all-gather of the parameter shard in forward and\n"
    "         again in backward, reduce-scatter of gradients (group dp)",
    "replicated parameters, one gradient all-reduce per\n"
    "         parameter in backward (group dp)",
    "Megatron tensor parallelism: all-reduce of activations\n"
    "         per block (group tp); --sp: sequence parallel\n"
    "         (all-gather + reduce-scatter)",
    "FSDP for dense parameters (dp) and expert parallelism\n"
    "         with all-to-all dispatch and combine (ep)",
    "FSDP (dp) x tensor parallelism (tp)",
};

const char *gen_family_name(size_t i)
{
    return i < sizeof family_about / sizeof family_about[0]
               ? gen_family_names[i]
               : NULL;
}

void gen_print_families(FILE *f)
{
    for (size_t i = 0; gen_family_name(i); i++)
        fprintf(f, "  %-6s %s\n", gen_family_names[i], family_about[i]);
}

void gen_print_presets(FILE *f)
{
    fprintf(f, "  %-13s %6s %6s %9s %6s %7s %5s %8s  %s\n", "preset",
            "layers", "hidden", "heads/kv", "ffn", "vocab", "seq",
            "experts", "recipe");
    for (size_t i = 0; i < gen_preset_count; i++) {
        const shape *s = &gen_presets[i];
        char heads[32], experts[32];
        snprintf(heads, sizeof heads, "%lld/%lld", (long long)s->heads,
                 (long long)s->kv_heads);
        if (s->experts > 0)
            snprintf(experts, sizeof experts, "%lld top%lld",
                     (long long)s->experts, (long long)s->topk);
        else
            snprintf(experts, sizeof experts, "-");
        fprintf(f, "  %-13s %6lld %6lld %9s %6lld %7lld %5lld %8s  %s\n",
                s->name, (long long)s->layers, (long long)s->hidden, heads,
                (long long)s->ffn, (long long)s->vocab, (long long)s->seq,
                experts, s->ac ? "full AC" : "-");
    }
    fprintf(f, "  default: %s (moe: %s); sources: docs/WORKLOADS.md\n",
            DEFAULT_PRESET, DEFAULT_MOE_PRESET);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched generate FAMILY [--preset NAME] [options]\n"
            "\n"
            "Writes one training step (forward, backward, AdamW update) of a\n"
            "decoder-only transformer as one rank sees it (docs/WORKLOADS.md).\n"
            "\n"
            "families:\n");
    gen_print_families(f);
    fprintf(f, "\nmodel presets (published shapes; --preset NAME):\n");
    gen_print_presets(f);
    fprintf(f,
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
            "                    (default: the preset's recipe, above)\n"
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

/* The node count of g's step with `layers` layers (a build of its own,
 * thrown away), -1 when that build fails. */
static long probe_nodes(const gen *tmpl, int64_t layers)
{
    gen *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    *p = *tmpl;
    p->s.layers = layers;
    p->b = NULL;
    p->st = COMMSCHED_OK;
    memset(&p->err, 0, sizeof p->err);
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
        gen_build(p);
        if (p->st == COMMSCHED_OK &&
            commsched_builder_finish(p->b, 0, &graph, &p->err) == COMMSCHED_OK)
            n = (long)commsched_graph_node_count(graph);
        else
            commsched_builder_destroy(p->b);
    }
    commsched_graph_destroy(graph);
    free(p->t);
    free(p->ops);
    free(p->p);
    free(p->u);
    free(p->seg);
    free(p->cur.in);
    free(p->cur.inp);
    free(p);
    return n;
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
        case '?': return cli_bad_option("generate", argc, argv, "o:h", opts);
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
        if (strcmp(argv[optind], gen_family_names[f]) == 0)
            family = f;
    if (family < 0)
        return cli_usage_error("generate", "unknown family \"%s\"",
                               argv[optind]);
    if (!preset)
        preset = family == FAM_MOE ? DEFAULT_MOE_PRESET : DEFAULT_PRESET;
    const shape *base = NULL;
    for (size_t i = 0; i < gen_preset_count; i++)
        if (strcmp(preset, gen_presets[i].name) == 0)
            base = &gen_presets[i];
    if (!base) {
        fprintf(stderr, "commsched generate: unknown preset \"%s\"", preset);
        if (!cli_did_you_mean(stderr, "", preset, strlen(preset),
                              &gen_presets[0].name, gen_preset_count,
                              sizeof gen_presets[0]))
            fprintf(stderr, " (see 'commsched generate fsdp --help')");
        fprintf(stderr, "\n");
        return EXIT_INPUT;
    }

    commsched_graph *graph = NULL;
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

    /* The size, before anything is allocated for it: a step's nodes grow
     * linearly with its layers, so two small builds give the count (a
     * --layers 100000000 once took 7 GB before failing). */
    long n1 = probe_nodes(g, 1), n2 = probe_nodes(g, 2);
    /* (a probe that fails leaves the error to the build below) */
    if (n1 >= 0 && n2 >= 0 &&
        (rc = cli_check_graph_size("generate",
                                   have[O_LAYERS] ? "--layers" : "--preset",
                                   (double)n1 + (double)(g->s.layers - 1) *
                                                    (double)(n2 - n1))))
        goto cleanup;

    char name[128];
    snprintf(name, sizeof name, "%s-%s%s%s%s-%ldL", g->s.name,
             gen_family_names[family], g->sp ? "-sp" : "", fine ? "-fine" : "",
             g->ac ? "-ac" : "", (long)g->s.layers);
    if (commsched_builder_create(name, &g->b, &g->err) != COMMSCHED_OK) {
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    gen_build(g);
    if (g->st != COMMSCHED_OK) {
        commsched_builder_destroy(g->b);
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    if (commsched_builder_finish(g->b, 0, &graph, &g->err) != COMMSCHED_OK) {
        rc = cli_report("generate", &g->err);
        goto cleanup;
    }
    rc = cli_write_graph(graph, NULL, NULL, out_path, "generate");
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
