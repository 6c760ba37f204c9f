/* commsched run FILE — execute the schedule on real ranks through a runtime
 * adaptor (docs/RUNTIME.md) and report what was measured
 * beside the simulator's prediction:
 *
 *     mpirun -np 4 commsched run --runtime mpi step.json
 *
 * Every rank parses the same options and loads its graph (FILE may contain
 * %r for per-rank files); the adaptor runs the order and gathers the
 * measurement on rank 0, which simulates the same order with the
 * prediction's runtimes and writes the reports. The command exists in every
 * build: without MPI it says so and exits 1. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "commsched/runtime.h"
#include "commsched/simulate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N commsched run [options] FILE\n"
            "       commsched run --runtime cuda [--gpus G] [options] FILE\n"
            "\n"
            "Runs FILE's node order on N ranks: compute nodes play their\n"
            "runtime, collectives are non-blocking MPI calls on per-group\n"
            "communicators (a group of size k: N/k groups of consecutive\n"
            "ranks), waits complete them; buffers are really allocated and\n"
            "freed. With --runtime cuda every GPU is a rank: NCCL collectives\n"
            "on one stream per group, kernels on a compute stream, CUDA\n"
            "events between them (one process per GPU under mpirun, or one\n"
            "process driving G GPUs). Reports the measured step, exposed comm\n"
            "and overlap next to the simulator's prediction. FILE may contain\n"
            "%%r, replaced by the process rank (a graph per rank).\n"
            "\n"
            "  --runtime R        mpi (default) or cuda (this build has:");
    for (unsigned i = 0; commsched_runtime_at(i); i++)
        fprintf(f, " %s", commsched_runtime_at(i)->name);
    fprintf(f,
            ")\n"
            "  --compute M        sleep (default; tests requests every poll\n"
            "                     quantum), spin (busy), touch (streams over\n"
            "                     the node's bytes); cuda: a kernel spinning\n"
            "                     the runtime (sleep, spin) or gemm (cuBLAS\n"
            "                     GEMMs of the node's FLOPs)\n"
            "  --gpus G           cuda: GPUs each process drives (default:\n"
            "                     all visible when the job is one process,\n"
            "                     else one)\n"
            "  --time-scale X     multiply compute runtimes (default 1)\n"
            "  --size-scale X     multiply buffer sizes (default 1)\n"
            "  --allreduce A      mpi (default), ring (seed 001: chunked ring\n"
            "                     above --ring-threshold elements and more than\n"
            "                     two ranks, naive below) or ring-always\n"
            "  --ring-threshold N elements (default 256000)\n"
            "  --comm-streams M   per-group (default: a group's collectives run\n"
            "                     in order, like an NCCL stream and the\n"
            "                     simulator), single (one stream for all) or\n"
            "                     concurrent (post at once; MPI overlaps them)\n"
            "  --check            give every buffer rank-dependent values and\n"
            "                     verify every collective's result against a\n"
            "                     host replay of the step (not timed)\n"
            "  --iters N          measured iterations (default 10)\n"
            "  --warmup N         unmeasured iterations first (default 2)\n"
            "  --calibrate N      passes timing every node alone, for the\n"
            "                     prediction (default 3; 0: cost model)\n"
            "  --timeout S        watchdog: a rank blocked S seconds aborts the\n"
            "                     job naming the node (default 60; 0: none)\n"
            "  --poll-us U        progress quantum in µs (default 20; 0: spin)\n"
            "  --no-preflight     skip the cross-rank graph and collective\n"
            "                     order check\n"
            "  --format F         table (default) or json\n"
            "  -o, --output OUT   write the report here (rank 0; default stdout)\n"
            "  --trace OUT.json   Chrome trace: a process per rank, a track per\n"
            "                     stream, the prediction as one more process\n"
            "  --progress, --no-progress\n"
            "                     progress bar on standard error (default: when\n"
            "                     it is a terminal)\n"
            CLI_COST_HELP
            "  --toposort         repair a non-topological input order first\n"
            "  --debug-kill-rank R  tests: rank R kills itself before running\n"
            "  --debug-corrupt-rank R  tests: with --check, rank R corrupts\n"
            "                     every reduction's result before verifying\n"
            "\n"
            "Exit status: 0 success, 1 runtime failure (or a --check mismatch),\n"
            "2 bad input (including graphs that differ between ranks).\n");
}

static int parse_double(const char *sub, const char *opt, const char *s,
                        double lo, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v >= lo) || !isfinite(v))
        return cli_usage_error(sub, "%s expects a number >= %g, got \"%s\"",
                               opt, lo, s);
    *out = v;
    return 0;
}

static int parse_u32(const char *sub, const char *opt, const char *s,
                     unsigned long lo, uint32_t *out)
{
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || v < lo || v > 100000000UL)
        return cli_usage_error(sub, "%s expects an integer >= %lu, got \"%s\"",
                               opt, lo, s);
    *out = (uint32_t)v;
    return 0;
}

/* FILE with %r replaced by the rank and %% by %. Caller frees. */
static char *expand_path(const char *path, int rank)
{
    size_t len = strlen(path), cap = len + 16;
    for (const char *p = path; (p = strstr(p, "%r")); p += 2)
        cap += 12;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (path[i] == '%' && path[i + 1] == 'r') {
            k += (size_t)snprintf(out + k, cap - k, "%d", rank);
            i++;
        } else if (path[i] == '%' && path[i + 1] == '%') {
            out[k++] = '%';
            i++;
        } else {
            out[k++] = path[i];
        }
    }
    out[k] = '\0';
    return out;
}

static int write_report(const char *path, const char *format,
                        const commsched_measurement *m,
                        const commsched_run_prediction *pred, int trace)
{
    cli_out out = {0};
    commsched_error err = {0};
    int rc = cli_out_open(&out, path);
    if (rc != 0)
        return rc;
    commsched_status st =
        trace ? commsched_run_report_trace(out.f, m, pred, &err)
        : strcmp(format, "json") == 0
            ? commsched_run_report_json(out.f, m, pred, &err)
            : commsched_run_report_table(out.f, m, pred, &err);
    if (st != COMMSCHED_OK) {
        cli_out_abort(&out);
        return cli_report(path, &err);
    }
    return cli_out_commit(&out);
}

int cmd_run(int argc, char **argv)
{
    enum { O_RUNTIME = 256, O_COMPUTE, O_TSCALE, O_SSCALE, O_ALLREDUCE,
           O_RING_TH, O_CHECK, O_ITERS, O_WARMUP, O_CALIB, O_TIMEOUT, O_POLL,
           O_NO_PRE, O_FORMAT, O_TRACE, O_PROGRESS, O_NO_PROGRESS, O_DEVICE,
           O_MODEL, O_COSTS, O_TOPO, O_KILL, O_CORRUPT, O_STREAMS, O_GPUS };
    static const struct option opts[] = {
        {"runtime", required_argument, 0, O_RUNTIME},
        {"compute", required_argument, 0, O_COMPUTE},
        {"time-scale", required_argument, 0, O_TSCALE},
        {"size-scale", required_argument, 0, O_SSCALE},
        {"allreduce", required_argument, 0, O_ALLREDUCE},
        {"ring-threshold", required_argument, 0, O_RING_TH},
        {"comm-streams", required_argument, 0, O_STREAMS},
        {"gpus", required_argument, 0, O_GPUS},
        {"check", no_argument, 0, O_CHECK},
        {"iters", required_argument, 0, O_ITERS},
        {"warmup", required_argument, 0, O_WARMUP},
        {"calibrate", required_argument, 0, O_CALIB},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"poll-us", required_argument, 0, O_POLL},
        {"no-preflight", no_argument, 0, O_NO_PRE},
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"trace", required_argument, 0, O_TRACE},
        {"progress", no_argument, 0, O_PROGRESS},
        {"no-progress", no_argument, 0, O_NO_PROGRESS},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"toposort", no_argument, 0, O_TOPO},
        {"debug-kill-rank", required_argument, 0, O_KILL},
        {"debug-corrupt-rank", required_argument, 0, O_CORRUPT},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *runtime_name = "mpi", *format = "table", *out_path = NULL,
               *trace_path = NULL, *device = NULL, *model = NULL,
               *costs = NULL;
    commsched_run_options ro;
    commsched_run_options_init(&ro);
    int progress = -1, c, rc = 0;
    unsigned flags = 0;
    uint32_t u = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_RUNTIME: runtime_name = optarg; break;
        case O_COMPUTE:
            if (commsched_compute_mode_parse(optarg, &ro.compute) != 0)
                return cli_usage_error("run", "--compute takes sleep, spin, "
                                              "touch or gemm, got \"%s\"",
                                       optarg);
            break;
        case O_TSCALE:
            if ((rc = parse_double("run", "--time-scale", optarg, 0, &ro.time_scale)))
                return rc;
            break;
        case O_SSCALE:
            if ((rc = parse_double("run", "--size-scale", optarg, 1e-12, &ro.size_scale)))
                return rc;
            break;
        case O_ALLREDUCE:
            if (commsched_allreduce_algo_parse(optarg, &ro.allreduce) != 0)
                return cli_usage_error("run", "--allreduce takes mpi, ring or "
                                              "ring-always, got \"%s\"", optarg);
            break;
        case O_RING_TH:
            if ((rc = parse_u32("run", "--ring-threshold", optarg, 0, &u)))
                return rc;
            ro.ring_threshold = u;
            break;
        case O_STREAMS:
            if (commsched_run_streams_parse(optarg, &ro.streams) != 0)
                return cli_usage_error("run", "--comm-streams takes per-group, "
                                              "single or concurrent, got \"%s\"",
                                       optarg);
            break;
        case O_GPUS:
            if ((rc = parse_u32("run", "--gpus", optarg, 1, &ro.gpus)))
                return rc;
            break;
        case O_CHECK: ro.check = 1; break;
        case O_ITERS:
            if ((rc = parse_u32("run", "--iters", optarg, 1, &ro.iters)))
                return rc;
            break;
        case O_WARMUP:
            if ((rc = parse_u32("run", "--warmup", optarg, 0, &ro.warmup)))
                return rc;
            break;
        case O_CALIB:
            if ((rc = parse_u32("run", "--calibrate", optarg, 0, &ro.calibrate)))
                return rc;
            break;
        case O_TIMEOUT:
            if ((rc = parse_double("run", "--timeout", optarg, 0, &ro.timeout_s)))
                return rc;
            break;
        case O_POLL:
            if ((rc = parse_double("run", "--poll-us", optarg, 0, &ro.poll_us)))
                return rc;
            break;
        case O_NO_PRE: ro.preflight = 0; break;
        case O_FORMAT: format = optarg; break;
        case 'o': out_path = optarg; break;
        case O_TRACE: trace_path = optarg; break;
        case O_PROGRESS: progress = 1; break;
        case O_NO_PROGRESS: progress = 0; break;
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_TOPO: flags |= COMMSCHED_FINISH_TOPOSORT; break;
        case O_KILL:
            if ((rc = parse_u32("run", "--debug-kill-rank", optarg, 0, &u)))
                return rc;
            ro.debug_kill_rank = (int)u;
            break;
        case O_CORRUPT:
            if ((rc = parse_u32("run", "--debug-corrupt-rank", optarg, 0, &u)))
                return rc;
            ro.debug_corrupt_rank = (int)u;
            break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("run", argc, argv, "o:h", opts);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("run", "expected exactly one FILE");
    if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
        return cli_usage_error("run", "--format takes table or json");
    if (trace_path && out_path && strcmp(trace_path, out_path) == 0)
        return cli_usage_error("run", "--trace and --output name the same file");
    if (trace_path && strcmp(trace_path, "-") == 0 &&
        (!out_path || strcmp(out_path, "-") == 0))
        return cli_usage_error("run", "--trace - needs --output to a file");
    int cuda = strcmp(runtime_name, "cuda") == 0;
    if (!cuda && (ro.gpus || ro.compute == COMMSCHED_COMPUTE_GEMM))
        return cli_usage_error("run", "%s needs --runtime cuda",
                               ro.gpus ? "--gpus" : "--compute gemm");
    const commsched_runtime_ops *ops = commsched_runtime_find(runtime_name);
    if (!ops) {
        if (commsched_runtime_known(runtime_name)) {
            fprintf(stderr,
                    "commsched run: this build has no %s runtime (%s was not "
                    "found when it was configured; see docs/RUNTIME.md)\n",
                    runtime_name,
                    strcmp(runtime_name, "mpi") == 0 ? "MPI" : "CUDA/NCCL");
            return EXIT_RUNTIME;
        }
        return cli_usage_error("run", "unknown runtime \"%s\"", runtime_name);
    }
    cli_cost cost;
    if ((rc = cli_cost_setup(&cost, "run", device, model, costs)) != 0)
        return rc;

    commsched_runtime *rt = NULL;
    commsched_graph *g = NULL;
    commsched_measurement *m = NULL;
    commsched_sim *sim = NULL;
    double *runtime = NULL, *pred_rt = NULL;
    uint8_t *measured = NULL;
    char *path = NULL;
    commsched_error err = {0};
    char buf[1024];
    if (ops->init(&argc, &argv, &rt, &err) != COMMSCHED_OK) {
        /* Only the process that saw the cause has a message (runtime.h). */
        if (err.text[0])
            fprintf(stderr, "commsched run: %s\n",
                    commsched_error_format(&err, NULL, buf, sizeof buf));
        ops->fini(rt); /* after the message: see runtime.h */
        cli_cost_fini(&cost);
        return EXIT_RUNTIME;
    }
    int rank = ops->rank(rt);
    path = expand_path(argv[optind], rank);
    if (!path) {
        fprintf(stderr, "commsched run: out of memory\n");
        rc = EXIT_RUNTIME;
    } else {
        rc = cli_load(path, flags, &g);
    }
    if (rc == 0)
        rc = cli_estimate(g, &cost, &runtime, NULL);
    /* A rank that cannot load its graph must not leave the others waiting
     * for it in the first collective. */
    if (ops->first_failed(rt, rc != 0) >= 0) {
        if (rc == 0)
            rc = EXIT_INPUT;
        goto done;
    }
    ro.runtime_ns = runtime;
    cli_progress bar;
    cli_progress_begin(&bar, "passes", 0, "commsched run:");
    bar.on = rank == 0 && (progress >= 0 ? progress : bar.on);
    ro.progress = cli_progress_fn;
    ro.progress_arg = &bar;
    commsched_status st = ops->execute(rt, g, NULL, &ro, &m, &err);
    cli_progress_end(&bar);
    if (st != COMMSCHED_OK) {
        /* Only the rank that saw the cause has a message (runtime.h). */
        if (err.text[0])
            fprintf(stderr, "commsched run: rank %d: %s\n", rank,
                    commsched_error_format(&err, strcmp(path, "-") == 0
                                                     ? "<stdin>" : path,
                                           buf, sizeof buf));
        rc = cli_exit_code(st);
        goto done;
    }
    if (!m)
        goto done; /* not rank 0: rank 0 reports */

    /* The prediction: the same order, simulated with calibrated collective
     * times (or the cost model's) and the compute runtimes the ranks
     * played. */
    uint32_t n = commsched_graph_node_count(g);
    pred_rt = malloc((n ? n : 1) * sizeof *pred_rt);
    measured = malloc(n ? n : 1);
    if (!pred_rt || !measured) {
        fprintf(stderr, "commsched run: out of memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    commsched_measurement_predict(m, runtime, pred_rt, measured);
    commsched_sim_options so;
    commsched_sim_options_init(&so);
    so.flags |= COMMSCHED_SIM_BOUND;
    if (ro.streams == COMMSCHED_RUN_STREAMS_SINGLE)
        so.comm_streams = COMMSCHED_STREAMS_SINGLE;
    if (commsched_sim_create(g, &sim, &err) != COMMSCHED_OK ||
        commsched_sim_run(sim, m->order, pred_rt, &so, &err) != COMMSCHED_OK) {
        rc = cli_report(path, &err);
        goto done;
    }
    commsched_run_prediction pred = {sim, measured, cost.device.name};
    if ((rc = write_report(out_path, format, m, &pred, 0)) != 0)
        goto done;
    if (trace_path && (rc = write_report(trace_path, format, m, &pred, 1)) != 0)
        goto done;
    if (ro.check && m->mismatches > 0) {
        fprintf(stderr,
                "commsched run: --check found %llu wrong result(s) of %llu; "
                "first: %s\n",
                (unsigned long long)m->mismatches,
                (unsigned long long)m->checked, m->first_mismatch);
        rc = EXIT_RUNTIME;
    }
done:
    commsched_sim_destroy(sim);
    commsched_measurement_destroy(m);
    free(pred_rt);
    free(measured);
    free(runtime);
    commsched_graph_destroy(g);
    free(path);
    ops->fini(rt);
    cli_cost_fini(&cost);
    return rc;
}
