/* commsched generate — the command line of the generators: chain (here)
 * and the transformer families (the library's, commsched/generate.h: this
 * file turns the options into a commsched_generate_options, prints the
 * help and the errors).
 *
 * chain: synthetic FSDP-like graphs of any size, built through the public
 * builder API (so it is also the builder's largest user). Deterministic:
 * the same options give the same bytes.
 *
 * Per layer L, forward:  all_gather of w<L>_shard -> wait -> mm
 * and backward (layers in reverse): all_gather again -> wait -> dx, dw
 * -> reduce_scatter of dw -> wait, whose sharded result is a graph output.
 * Nine nodes a layer plus the loss. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/generate.h"
#include "progress.h"

/* What each family communicates, by commsched_generate_family. */
static const char *const family_about[COMMSCHED_GENERATE_FAMILY_COUNT] = {
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

static void print_families(FILE *f)
{
    for (int i = 0; i < COMMSCHED_GENERATE_FAMILY_COUNT; i++)
        fprintf(f, "  %-6s %s\n",
                commsched_generate_family_name((commsched_generate_family)i),
                family_about[i]);
}

/* The model presets with their shapes, from the library's table. */
static void print_presets(FILE *f)
{
    fprintf(f, "  %-13s %6s %6s %9s %6s %7s %5s %8s  %s\n", "preset",
            "layers", "hidden", "heads/kv", "ffn", "vocab", "seq",
            "experts", "recipe");
    const commsched_generate_shape *s;
    for (size_t i = 0; (s = commsched_generate_preset(i)); i++) {
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
            commsched_generate_preset_default(COMMSCHED_GENERATE_FSDP)->name,
            commsched_generate_preset_default(COMMSCHED_GENERATE_MOE)->name);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched generate KIND [options]\n"
            "\n"
            "Writes a synthetic graph. KIND is one of:\n"
            "  chain  an FSDP-like chain of layers, 9 nodes a layer + 1, of\n"
            "         any size (its options are below)\n");
    print_families(f);
    fprintf(f,
            "The transformer families write one training step of a model\n"
            "preset; 'commsched generate fsdp --help' lists their options.\n"
            "\n"
            "model presets (published shapes; --preset NAME):\n");
    print_presets(f);
    fprintf(f,
            "\n"
            "chain options:\n"
            "  --layers N     layers (default 4)\n"
            "  --nodes N      pick the layer count for about N nodes instead\n"
            "  --world N      data-parallel group size (default 8)\n"
            "  --hidden N     hidden size (default 4096)\n"
            "  --tokens N     tokens per micro-batch (default 4096)\n"
            "  -o, --output OUT  write here (default: standard output)\n");
}

typedef struct chain {
    commsched_builder *b;
    commsched_error err;
    cli_progress *progress;
    int64_t world, hidden, tokens;
    char n[6][96]; /* scratch names */
} chain;

#define NAME(g, i, ...) (snprintf((g)->n[i], sizeof (g)->n[i], __VA_ARGS__), (g)->n[i])

static commsched_status add_collective(chain *g, const char *name,
                                       const char *op, const char *in,
                                       const char *out, int64_t size)
{
    const char *inputs[] = {in};
    commsched_output_spec outs[] = {{out, size, NULL}};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = op;
    s.group = "dp";
    s.dtype = COMMSCHED_DTYPE_BFLOAT16;
    if (strcmp(op, "reduce_scatter") == 0)
        s.reduce_op = COMMSCHED_REDUCE_SUM;
    s.inputs = inputs;
    s.n_inputs = 1;
    s.outputs = outs;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    return commsched_builder_add_node(g->b, &s, &g->err);
}

static commsched_status add_wait(chain *g, const char *name, const char *in,
                                 const char *alias)
{
    const char *inputs[] = {in};
    commsched_output_spec outs[] = {{alias, 0, in}};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_WAIT;
    s.op = "wait_tensor";
    s.inputs = inputs;
    s.n_inputs = 1;
    s.outputs = outs;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    return commsched_builder_add_node(g->b, &s, &g->err);
}

/* A matmul-shaped compute node reading two buffers. */
static commsched_status add_mm(chain *g, const char *name, const char *a,
                               const char *bname, const char *out,
                               int64_t size)
{
    const char *inputs[] = {a, bname};
    commsched_output_spec outs[] = {{out, size, NULL}};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = "mm";
    s.gemm_like = 1;
    s.inputs = inputs;
    s.n_inputs = 2;
    s.outputs = outs;
    s.n_outputs = 1;
    s.runtime_ns = -1;
    s.flops = 2.0 * (double)g->tokens * (double)g->hidden * (double)g->hidden;
    s.bytes = 2.0 * (double)(2 * g->tokens * g->hidden + g->hidden * g->hidden);
    return commsched_builder_add_node(g->b, &s, &g->err);
}

static commsched_status build_chain(chain *g, long layers)
{
    /* A layer's bf16 weight, padded to a multiple of the world size as
     * FSDP pads its flat parameter, so each rank's shard is exact: the
     * all-gather writes world x shard, the reduce-scatter reads it
     * (docs/FORMAT.md, "Collective sizes"). */
    int64_t shard = (2 * g->hidden * g->hidden + g->world - 1) / g->world;
    int64_t weight = shard * g->world;
    int64_t act = 2 * g->tokens * g->hidden;
    commsched_status st = commsched_builder_add_group(g->b, "dp", g->world, 1,
                                                      &g->err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_input(g->b, "act0", act, 1, &g->err);
    for (long l = 1; st == COMMSCHED_OK && l <= layers; l++)
        st = commsched_builder_add_input(g->b, NAME(g, 0, "w%ld_shard", l),
                                         shard, 0, &g->err);
    for (long l = 1; st == COMMSCHED_OK && l <= layers; l++) {
        cli_progress_set(g->progress, (uint64_t)(3 * (l - 1)));
        (void)((st = add_collective(g, NAME(g, 0, "fwd_ag%ld", l), "all_gather",
                                    NAME(g, 1, "w%ld_shard", l),
                                    NAME(g, 2, "fwd_ag%ld_out", l), weight)) ||
               (st = add_wait(g, NAME(g, 0, "fwd_ag%ld_wait", l), g->n[2],
                              NAME(g, 3, "w%ld_f", l))) ||
               (st = add_mm(g, NAME(g, 0, "fwd_mm%ld", l),
                            NAME(g, 4, "act%ld", l - 1), g->n[3],
                            NAME(g, 5, "act%ld", l), act)));
    }
    if (st == COMMSCHED_OK) {
        const char *inputs[] = {NAME(g, 0, "act%ld", layers)};
        commsched_output_spec outs[] = {{NAME(g, 1, "grad%ld", layers), act,
                                         NULL}};
        commsched_node_spec s = {0};
        s.name = "loss";
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.op = "loss";
        s.inputs = inputs;
        s.n_inputs = 1;
        s.outputs = outs;
        s.n_outputs = 1;
        s.runtime_ns = s.flops = -1;
        s.bytes = 2.0 * (double)act;
        st = commsched_builder_add_node(g->b, &s, &g->err);
    }
    for (long l = layers; st == COMMSCHED_OK && l >= 1; l--) {
        cli_progress_set(g->progress, (uint64_t)(3 * layers + 1 +
                                                 6 * (layers - l)));
        (void)((st = add_collective(g, NAME(g, 0, "bwd_ag%ld", l), "all_gather",
                                    NAME(g, 1, "w%ld_shard", l),
                                    NAME(g, 2, "bwd_ag%ld_out", l), weight)) ||
               (st = add_wait(g, NAME(g, 0, "bwd_ag%ld_wait", l), g->n[2],
                              NAME(g, 3, "w%ld_b", l))) ||
               (st = add_mm(g, NAME(g, 0, "bwd_dx%ld", l),
                            NAME(g, 4, "grad%ld", l), g->n[3],
                            NAME(g, 5, "grad%ld", l - 1), act)) ||
               (st = add_mm(g, NAME(g, 0, "bwd_dw%ld", l), g->n[4],
                            NAME(g, 1, "act%ld", l - 1),
                            NAME(g, 2, "gw%ld", l), weight)) ||
               (st = add_collective(g, NAME(g, 0, "rs%ld", l),
                                    "reduce_scatter", g->n[2],
                                    NAME(g, 3, "rs%ld_out", l), shard)) ||
               (st = add_wait(g, NAME(g, 0, "rs%ld_wait", l), g->n[3],
                              NAME(g, 4, "g%ld_shard", l))) ||
               (st = commsched_builder_add_output(g->b, g->n[4], &g->err)));
    }
    return st;
}

/* ---------------------------------------------------------------------- */
/* generate fsdp|ddp|tp|moe|2d                                             */
/* ---------------------------------------------------------------------- */

static void transformer_usage(FILE *f)
{
    fprintf(f,
            "usage: commsched generate FAMILY [--preset NAME] [options]\n"
            "\n"
            "Writes one training step (forward, backward, AdamW update) of a\n"
            "decoder-only transformer as one rank sees it (docs/WORKLOADS.md).\n"
            "\n"
            "families:\n");
    print_families(f);
    fprintf(f, "\nmodel presets (published shapes; --preset NAME):\n");
    print_presets(f);
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

/* The error for --preset NAME naming no preset, with the nearest name
 * when one is close; EXIT_INPUT. */
static int unknown_preset(const char *preset)
{
    size_t n = 0;
    while (commsched_generate_preset(n))
        n++;
    const char **names = malloc(n * sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        names[i] = commsched_generate_preset(i)->name;
    fprintf(stderr, "commsched generate: unknown preset \"%s\"", preset);
    if (!names || !cli_did_you_mean(stderr, "", preset, strlen(preset),
                                    names, n, sizeof names[0]))
        fprintf(stderr, " (see 'commsched generate fsdp --help')");
    fprintf(stderr, "\n");
    free(names);
    return EXIT_INPUT;
}

/* `generate FAMILY ...`: argv[0] is "generate". */
static int generate_transformer(int argc, char **argv)
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
        case 'h': transformer_usage(stdout); return EXIT_OK;
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
    for (int f = 0; f < COMMSCHED_GENERATE_FAMILY_COUNT; f++)
        if (strcmp(argv[optind], commsched_generate_family_name(
                                     (commsched_generate_family)f)) == 0)
            family = f;
    if (family < 0)
        return cli_usage_error("generate", "unknown family \"%s\"",
                               argv[optind]);
    const commsched_generate_shape *base =
        preset ? commsched_generate_preset_find(preset)
               : commsched_generate_preset_default(
                     (commsched_generate_family)family);
    if (!base)
        return unknown_preset(preset);

    commsched_generate_options o;
    commsched_generate_options_init(&o, (commsched_generate_family)family,
                                    base);
    o.fine = fine;
    o.sp = sp;
    if (ac >= 0)
        o.ac = ac;
    o.clip = clip;
    int64_t *fields[] = {[O_LAYERS] = &o.shape.layers,
                         [O_HIDDEN] = &o.shape.hidden,
                         [O_HEADS] = &o.shape.heads,
                         [O_KV] = &o.shape.kv_heads, [O_FFN] = &o.shape.ffn,
                         [O_VOCAB] = &o.shape.vocab, [O_SEQ] = &o.shape.seq,
                         [O_BATCH] = &o.shape.batch,
                         [O_EXPERTS] = &o.shape.experts,
                         [O_TOPK] = &o.shape.topk, [O_DP] = &o.dp,
                         [O_TP] = &o.tp, [O_EP] = &o.ep};
    for (int k = O_LAYERS; k <= O_EP; k++)
        if (have[k] && fields[k])
            *fields[k] = ov[k];
    o.asked_experts = have[O_EXPERTS] || have[O_TOPK];
    o.dtype = dtype;
    o.reduce_dtype = rdtype;

    /* The size, before anything is allocated for it (a --layers 100000000
     * once took 7 GB before failing); a size the generator could not
     * tell leaves the error to the build. */
    commsched_error err = {0};
    double nodes;
    if (commsched_generate_size(&o, &nodes, &err) != COMMSCHED_OK)
        return err.status == COMMSCHED_EINVAL
                   ? cli_usage_error("generate", "%s", err.text)
                   : cli_report(NULL, &err);
    int rc;
    if (nodes >= 0 &&
        (rc = cli_check_graph_size("generate",
                                   have[O_LAYERS] ? "--layers" : "--preset",
                                   nodes)))
        return rc;

    commsched_graph *graph = NULL;
    cli_progress progress;
    o.progress = cli_progress_fn;
    o.progress_arg = &progress;
    cli_progress_begin(&progress, "nodes", nodes > 0 ? (uint64_t)nodes : 0,
                       "commsched generate: building");
    commsched_status st = commsched_generate_transformer(&o, &graph, &err);
    cli_progress_end(&progress);
    if (st != COMMSCHED_OK)
        return cli_report("generate", &err);
    rc = cli_write_graph(graph, NULL, NULL, out_path, "generate");
    commsched_graph_destroy(graph);
    return rc;
}

/* The transformer families have options of their own; the family word may
 * come anywhere among the options (getopt permutes), but never as the value
 * of -o / --output. */
static int is_transformer_family(int argc, char **argv)
{
    static const char *const flags[] = {"--fine", "--sp", "--no-clip",
                                        "--help"};
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        const char *prev = argv[i - 1];
        int takes_value = i > 1 && prev[0] == '-' && !strchr(prev, '=') &&
                          (prev[1] == '-' || strcmp(prev, "-o") == 0);
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            if (strcmp(prev, flags[f]) == 0)
                takes_value = 0;
        if (takes_value)
            continue; /* the value of an option, e.g. -o fsdp */
        for (int f = 0; f < COMMSCHED_GENERATE_FAMILY_COUNT; f++)
            if (strcmp(argv[i], commsched_generate_family_name(
                                    (commsched_generate_family)f)) == 0)
                return 1;
    }
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    if (is_transformer_family(argc, argv))
        return generate_transformer(argc, argv);
    static const struct option opts[] = {
        {"layers", required_argument, 0, 'l'},
        {"nodes", required_argument, 0, 'n'},
        {"world", required_argument, 0, 'w'},
        {"hidden", required_argument, 0, 'H'},
        {"tokens", required_argument, 0, 'T'},
        {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    long layers = 4, nodes = 0, world = 8, hidden = 4096, tokens = 4096;
    const char *out_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        char *end = NULL;
        long v = 0;
        if (optarg) {
            v = strtol(optarg, &end, 10);
            if (c != 'o' && (*end != '\0' || v < 1))
                return cli_usage_error("generate",
                                       "expected a positive integer, got \"%s\"",
                                       optarg);
        }
        switch (c) {
        case 'l': layers = v; break;
        case 'n': nodes = v; break;
        case 'w': world = v; break;
        case 'H': hidden = v; break;
        case 'T': tokens = v; break;
        case 'o': out_path = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("generate", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("generate", "expected one KIND: chain or a "
                                           "transformer family");
    if (strcmp(argv[optind], "chain") != 0) {
        const char *kinds[1 + COMMSCHED_GENERATE_FAMILY_COUNT] = {"chain"};
        size_t n = 1;
        for (int f = 0; f < COMMSCHED_GENERATE_FAMILY_COUNT; f++)
            kinds[n++] = commsched_generate_family_name(
                (commsched_generate_family)f);
        fprintf(stderr, "commsched generate: unknown kind \"%s\"",
                argv[optind]);
        if (!cli_did_you_mean(stderr, "", argv[optind], strlen(argv[optind]),
                              kinds, n, sizeof kinds[0]))
            fprintf(stderr, " (see 'commsched generate --help')");
        fprintf(stderr, "\n");
        return EXIT_INPUT;
    }
    if (nodes)
        layers = nodes > 10 ? (nodes - 1) / 9 : 1;
    /* Refused here, naming the option, rather than overflowing on the way
     * (2 h^2 in an int64_t, 9 layers + 1 nodes in a long) or reaching the
     * builder as a figure of a graph the user never wrote. */
    int rc_size = cli_check_graph_size("generate",
                                       nodes ? "--nodes" : "--layers",
                                       9.0 * (double)layers + 1);
    if (rc_size)
        return rc_size;
    if (world > (long)COMMSCHED_MAX_GROUP_SIZE)
        return cli_usage_error("generate", "--world: at most %lu ranks "
                               "(docs/FORMAT.md, \"Limits\")",
                               (unsigned long)COMMSCHED_MAX_GROUP_SIZE);
    if (2.0 * (double)hidden * (double)hidden + (double)world >
            (double)COMMSCHED_MAX_SIZE ||
        2.0 * (double)tokens * (double)hidden > (double)COMMSCHED_MAX_SIZE)
        return cli_usage_error("generate", "--hidden/--tokens: a layer's "
                               "weight (2 x hidden^2 bytes) and activation "
                               "(2 x tokens x hidden) must each fit the "
                               "format's limit of 2^53 bytes per buffer");

    chain g;
    memset(&g, 0, sizeof g);
    g.world = world;
    g.hidden = hidden;
    g.tokens = tokens;
    char name[64];
    snprintf(name, sizeof name, "chain-%ld-layers", layers);
    commsched_graph *graph = NULL;
    cli_progress progress;
    g.progress = &progress;
    cli_progress_begin(&progress, "nodes", (uint64_t)(9 * layers + 1),
                       "commsched generate: building");
    commsched_status st = commsched_builder_create(name, &g.b, &g.err);
    if (st == COMMSCHED_OK && (st = build_chain(&g, layers)) == COMMSCHED_OK) {
        cli_progress_end(&progress);
        cli_progress_begin(&progress, NULL, 0, "commsched generate: checking");
        st = commsched_builder_finish(g.b, 0, &graph, &g.err);
        g.b = NULL; /* consumed */
    }
    cli_progress_end(&progress);
    commsched_builder_destroy(g.b);
    if (st != COMMSCHED_OK)
        return cli_report("generate", &g.err);
    int rc = cli_write_graph(graph, NULL, NULL, out_path, "generate");
    commsched_graph_destroy(graph);
    return rc;
}
