/* commsched generate chain — synthetic FSDP-like graphs of any size, built
 * through the public builder API (so it is also the builder's largest
 * user). Deterministic: the same options give the same bytes.
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
#include "progress.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched generate KIND [options]\n"
            "\n"
            "Writes a synthetic graph. KIND is one of:\n"
            "  chain  an FSDP-like chain of layers, 9 nodes a layer + 1, of\n"
            "         any size (its options are below)\n");
    gen_print_families(f);
    fprintf(f,
            "The transformer families write one training step of a model\n"
            "preset; 'commsched generate fsdp --help' lists their options.\n"
            "\n"
            "model presets (published shapes; --preset NAME):\n");
    gen_print_presets(f);
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

typedef struct gen {
    commsched_builder *b;
    commsched_error err;
    cli_progress *progress;
    int64_t world, hidden, tokens;
    char n[6][96]; /* scratch names */
} gen;

#define NAME(g, i, ...) (snprintf((g)->n[i], sizeof (g)->n[i], __VA_ARGS__), (g)->n[i])

static commsched_status add_collective(gen *g, const char *name,
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

static commsched_status add_wait(gen *g, const char *name, const char *in,
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
static commsched_status add_mm(gen *g, const char *name, const char *a,
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

static commsched_status build_chain(gen *g, long layers)
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

/* The transformer families live in gen_transformer.c; the shape word may
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
        for (size_t f = 0; gen_family_name(f); f++)
            if (strcmp(argv[i], gen_family_name(f)) == 0)
                return 1;
    }
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    if (is_transformer_family(argc, argv))
        return gen_transformer_main(argc, argv);
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
        const char *kinds[8] = {"chain"};
        size_t n = 1;
        while (n < 8 && gen_family_name(n - 1)) {
            kinds[n] = gen_family_name(n - 1);
            n++;
        }
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

    gen g;
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
