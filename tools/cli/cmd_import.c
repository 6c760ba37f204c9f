/* commsched import astra|chakra|hlo|kineto|pytorch-et FILE — convert a third-party workload into
 * a commsched graph (docs/WORKLOADS.md). The graph is validated like any
 * file before it is written, atomically: a bad input leaves no output. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/import.h"
#include "progress.h"

/* The importers: `import FORMAT` runs the one named here; the usage line
 * and the unknown-format message are printed from this table. */
static const struct {
    const char *name;
    cli_importer_fn run;
} formats[] = {
    {"astra", commsched_import_astra},
    {"chakra", commsched_import_chakra},
    {"hlo", commsched_import_hlo},
    {"kineto", commsched_import_kineto},
    {"pytorch-et", commsched_import_pytorch_et},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: commsched import ");
    for (size_t i = 0; i < N_FORMATS; i++)
        fprintf(f, "%s%s", i ? "|" : "", formats[i].name);
    fprintf(f,
            " [options] FILE\n"
            "\n"
            "Converts a workload written by another tool into a commsched graph.\n"
            "\n"
            "  astra    ASTRA-sim 1.0 text workload, every policy the format\n"
            "           defines:\n");
    const char *what, *name;
    for (size_t i = 0; (name = commsched_import_astra_policy(i, &what)); i++)
        fprintf(f, "             %-32s %s\n", name, what);
    fprintf(f, "             comm types: NONE ALLREDUCE ALLGATHER "
               "REDUCESCATTER ALLTOALL\n               ALLREDUCEALLTOALL\n");
    fprintf(f,
            "  chakra   Chakra execution trace: binary .et (protobuf, what\n"
            "           ASTRA-sim reads) or the simple JSON form\n"
            "           (workload_graph), told apart by content\n"
            "  hlo      XLA HLO text, as XLA dumps it (--xla_dump_to=DIR\n"
            "           --xla_dump_hlo_as_text: *.after_optimizations.txt):\n"
            "           the entry computation in its order, collectives and\n"
            "           their waits, while loops unrolled by their trip count\n"
            "  kineto   PyTorch profiler (Kineto) trace, .json or .json.gz:\n"
            "           the GPU kernels one device ran, measured durations,\n"
            "           NCCL kernels as collectives\n"
            "  pytorch-et  PyTorch execution trace (schema 1.0.x, Chakra's\n"
            "           -chakra variants too), .json or .json.gz: top-level\n"
            "           operators, dependencies through tensor storages,\n"
            "           each collective once; runtimes from the cost model\n"
            "\n"
            "  -o, --output OUT  write here (default: standard output), atomically\n"
            "  --clock-ghz F     astra: compute cycles per ns (default 1)\n"
            "  --npus N          astra: NPUs in the job (default: the file's\n"
            "                    all_gpus, else 8 rounded up to a multiple of\n"
            "                    the model-parallel group)\n"
            "  --mp N            astra: model-parallel group size (default: the\n"
            "                    file's model_parallel_NPU_group, else 2);\n"
            "                    HYBRID_CUSTOMIZED: the inner dimension's size\n"
            "  --gpu-only        chakra: drop CPU-side ops (dependencies are\n"
            "                    bridged across them)\n"
            "  --ranks N         chakra, kineto, pytorch-et: ranks of the\n"
            "                    collectives' groups (default: what the trace\n"
            "                    says: chakra's ngpus, kineto's world_size,\n"
            "                    pytorch-et's process-group record; else 8)\n"
            "  --group-size NAME=K\n"
            "                    chakra, pytorch-et: group NAME (as the note\n"
            "                    names it) has K ranks; repeatable; wins over\n"
            "                    --ranks and the trace\n"
            "  --comm-group FILE chakra: ASTRA-sim's comm-group file\n"
            "                    ({\"<pg_name>\": [NPU ids], ...}): a group's\n"
            "                    size is its NPU count\n"
            "  --chakra-fields-only\n"
            "                    chakra: read a file commsched exported by its\n"
            "                    Chakra fields alone, ignoring the exact graph\n"
            "                    it carries in commsched.* attributes\n"
            "  --et ET.json[.gz] kineto: the run's PyTorch execution trace:\n"
            "                    each kernel's operator (linked by\n"
            "                    record-function id) gives host dependencies\n"
            "                    and output sizes\n"
            "  --max-memory SIZE kineto, pytorch-et: the most parsing the JSON\n"
            "                    trace may take (default 2G; the tree is\n"
            "                    about ten times the text): a trace that\n"
            "                    would take more is refused before it is\n"
            "                    parsed (exit 1)\n"
            "  --rank N          kineto: the device whose events to import\n"
            "                    (default: the only one in the trace); its\n"
            "                    group size is --ranks, else the trace's\n"
            "                    distributedInfo.world_size, else 8\n"
            "  --step N          kineto: only the events launched in profiler\n"
            "                    step N (0: the first ProfilerStep# by start;\n"
            "                    default: every step but the last, as HTA)\n"
            "\n"
            "Errors are located (FILE:LINE[:COL] for ASTRA-sim text and HLO,\n"
            "a JSON path or \"record N (byte B)\" for Chakra) and exit with\n"
            "status 2.\n"
            "Notes about what the input does not say (missing sizes, a group\n"
            "size assumed) go to standard error.\n");
}

static int positive(const char *s, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1)
        return -1;
    *out = v;
    return 0;
}

/* NAME=K, K in 1..COMMSCHED_MAX_GROUP_SIZE (the last '=' separates: a
 * group name may hold one). */
static int group_size_arg(char *arg, commsched_import_group_size *out)
{
    char *eq = strrchr(arg, '=');
    long k = 0;
    if (!eq || eq == arg || positive(eq + 1, &k) != 0 ||
        k > (long)COMMSCHED_MAX_GROUP_SIZE)
        return cli_usage_error("import",
                               "--group-size expects NAME=K (K ranks, 1..%u), "
                               "got \"%s\"",
                               (unsigned)COMMSCHED_MAX_GROUP_SIZE, arg);
    *eq = '\0';
    out->name = arg;
    out->size = k;
    return 0;
}

static int run_import(int argc, char **argv, commsched_import_group_size *sizes);

int cmd_import(int argc, char **argv)
{
    /* each --group-size takes one argument at least */
    commsched_import_group_size *sizes = malloc((size_t)argc * sizeof *sizes);
    if (!sizes) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    int rc = run_import(argc, argv, sizes);
    free(sizes);
    return rc;
}

static int run_import(int argc, char **argv, commsched_import_group_size *sizes)
{
    enum { O_CLOCK = 256, O_NPUS, O_MP, O_GPU, O_RANKS, O_FIELDS, O_RANK,
           O_ET, O_GROUP_SIZE, O_COMM_GROUP, O_MAX_MEMORY, O_STEP };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"clock-ghz", required_argument, 0, O_CLOCK},
        {"npus", required_argument, 0, O_NPUS},
        {"mp", required_argument, 0, O_MP},
        {"gpu-only", no_argument, 0, O_GPU},
        {"ranks", required_argument, 0, O_RANKS},
        {"chakra-fields-only", no_argument, 0, O_FIELDS},
        {"rank", required_argument, 0, O_RANK},
        {"et", required_argument, 0, O_ET},
        {"group-size", required_argument, 0, O_GROUP_SIZE},
        {"comm-group", required_argument, 0, O_COMM_GROUP},
        {"max-memory", required_argument, 0, O_MAX_MEMORY},
        {"step", required_argument, 0, O_STEP},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    commsched_import_options io;
    commsched_import_options_init(&io);
    io.group_sizes = sizes;
    const char *out_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case O_GROUP_SIZE:
            if (group_size_arg(optarg, &sizes[io.n_group_sizes]) != 0)
                return EXIT_INPUT;
            io.n_group_sizes++;
            break;
        case O_COMM_GROUP: io.comm_groups = optarg; break;
        case O_CLOCK: {
            char *end = NULL;
            io.clock_ghz = strtod(optarg, &end);
            if (!*optarg || *end || !(io.clock_ghz > 0) ||
                io.clock_ghz > 1e6)
                return cli_usage_error("import",
                                       "--clock-ghz expects a positive number, "
                                       "got \"%s\"",
                                       optarg);
            break;
        }
        case O_NPUS:
        case O_MP:
        case O_RANKS:
            if (positive(optarg, c == O_NPUS ? &io.npus
                                 : c == O_MP ? &io.mp
                                             : &io.ranks) != 0)
                return cli_usage_error("import",
                                       "expected a positive integer, got "
                                       "\"%s\"",
                                       optarg);
            break;
        case O_GPU: io.gpu_only = 1; break;
        case O_FIELDS: io.chakra_fields_only = 1; break;
        case O_ET:
            io.et = optarg;
            break;
        case O_MAX_MEMORY:
            if (cli_parse_bytes(optarg, &io.max_memory) != 0)
                return cli_usage_error("import",
                                       "--max-memory expects a size in bytes "
                                       "(64M, 4G, ...), got \"%s\"",
                                       optarg);
            break;
        case O_RANK: {
            char *end = NULL;
            io.rank = strtol(optarg, &end, 10);
            if (!*optarg || *end || io.rank < 0 || io.rank > 1 << 24)
                return cli_usage_error("import",
                                       "--rank expects a device number, got "
                                       "\"%s\"",
                                       optarg);
            break;
        }
        case O_STEP: {
            char *end = NULL;
            io.step = strtol(optarg, &end, 10);
            if (!*optarg || *end || io.step < 0 || io.step > 1L << 30)
                return cli_usage_error("import",
                                       "--step expects a step number (0 is "
                                       "the first), got \"%s\"",
                                       optarg);
            break;
        }
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("import", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 2)
        return cli_usage_error("import", "expected a FORMAT and one FILE");
    const char *fmt = argv[optind], *path = argv[optind + 1];
    commsched_graph *g = NULL;
    size_t k = 0;
    while (k < N_FORMATS && strcmp(fmt, formats[k].name) != 0)
        k++;
    if (k == N_FORMATS) {
        fprintf(stderr, "commsched import: unknown format \"%s\"", fmt);
        if (!cli_did_you_mean(stderr, "", fmt, strlen(fmt), &formats[0].name,
                              N_FORMATS, sizeof formats[0])) {
            fprintf(stderr, " (");
            for (size_t i = 0; i < N_FORMATS; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", formats[i].name);
            fprintf(stderr, ")");
        }
        fprintf(stderr, "\n");
        return EXIT_INPUT;
    }
    int rc = cli_import_run(formats[k].run, path, &io, &g);
    if (rc != 0)
        return rc;
    rc = cli_write_graph(g, NULL, NULL, out_path, "import");
    commsched_graph_destroy(g);
    return rc;
}
