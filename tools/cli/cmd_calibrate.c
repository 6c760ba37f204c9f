/* commsched calibrate TRACE... — a device profile whose costs were
 * measured (docs/COST.md, "Measured costs"): the Kineto traces' kernels
 * and collectives fitted into tables that --device PROFILE.json and the
 * plugin read; with --check, each trace's profiler steps held out in turn
 * and predicted from the others. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/cost.h"
#include "commsched/import.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched calibrate [options] TRACE...\n"
            "       commsched calibrate --check [options] TRACE...\n"
            "\n"
            "Fits the cost model to PyTorch profiler (Kineto) traces, .json or\n"
            ".json.gz: one or more ranks of one run (collectives are matched\n"
            "across them and timed from the last rank's arrival), or runs on\n"
            "the same hardware. Per kernel name the median duration; per\n"
            "collective op and group size the median at each size and a\n"
            "latency + bytes / bandwidth line. The profile written is the base\n"
            "profile with these tables: --device PROFILE.json (any command)\n"
            "and the plugin (device=\"PROFILE.json\") price what the tables\n"
            "know from them and the rest with the base's analytical model, the\n"
            "same rule on every rank (docs/COST.md).\n"
            "\n"
            "  -o, --output OUT    write the profile here (default: standard\n"
            "                      output), atomically; the fit's table goes to\n"
            "                      standard output, or standard error when the\n"
            "                      profile does\n"
            "  --base D            the profile extended: h100 (default), a100,\n"
            "                      b200 or a JSON profile file\n"
            "  --rank N            the device whose events to read, in a trace\n"
            "                      that holds several\n"
            "  --ranks N           group size of collectives whose kernel does\n"
            "                      not say it (default: distributedInfo's\n"
            "                      world_size, else 8)\n"
            "  --exclude-step N    leave profiler step N (0: the first) out\n"
            "  --max-memory SIZE   what parsing one trace may take (default 2G)\n"
            "  --check             validate instead: for each trace with 3\n"
            "                      profiler steps or more, hold each step but\n"
            "                      the last out in turn, fit on the trace's\n"
            "                      others, and predict the held-out step in the\n"
            "                      run's own order; prints the step's measured\n"
            "                      GPU span, its replay with its own durations,\n"
            "                      the prediction and the h100 and a100\n"
            "                      models' (their collectives, the same\n"
            "                      kernels), with each one's error\n"
            "\n"
            "A trace calibrates well with CUDA activities, record_shapes=True\n"
            "and 3 steps or more (docs/COST.md).\n");
}

static void print_fit(FILE *f, const commsched_costs *c,
                      const commsched_calibrate_stats *st)
{
    char a[32], b[32];
    fprintf(f,
            "calibrated from %zu trace%s (%zu profiler step%s at most): %zu "
            "kernel samples in %zu rows, %zu collective samples",
            st->traces, COMMSCHED_PLURAL(st->traces), st->steps,
            COMMSCHED_PLURAL(st->steps), st->kernel_samples,
            commsched_costs_kernel_count(c), st->collective_samples);
    if (st->traces > 1)
        fprintf(f, " (%zu found on every rank, %zu disagreeing left out)",
                st->matched, st->mismatched);
    if (st->unsized)
        fprintf(f, "; %zu NCCL kernel%s without a size, kept by place in "
                   "the step",
                st->unsized, COMMSCHED_PLURAL(st->unsized));
    fprintf(f, "\n");
    commsched_costs_roofline roof;
    if (commsched_costs_get_roofline(c, &roof))
        fprintf(f,
                "roofline for nodes no table knows: %.2f TFLOP/s achieved "
                "by %u matmul kernel%s, %.1f GB/s by %u device copies%s\n",
                roof.flops_per_s / 1e12, roof.flop_kernels,
                COMMSCHED_PLURAL(roof.flop_kernels), roof.bytes_per_s / 1e9,
                roof.byte_kernels,
                roof.flop_kernels ? ""
                                  : " (no shapes recorded: the base's flop/s)");
    size_t n = commsched_costs_collective_count(c);
    if (n == 0)
        return;
    fprintf(f, "\n%-16s %6s %6s %8s %11s %11s %10s %8s\n", "collective",
            "ranks", "sizes", "samples", "latency", "bandwidth", "fit error",
            "spread");
    for (size_t i = 0; i < n; i++) {
        commsched_costs_collective_row r;
        if (commsched_costs_collective_at(c, i, &r, NULL) != COMMSCHED_OK)
            break;
        if (r.has_line)
            snprintf(b, sizeof b, "%.2f GB/s", r.bytes_per_ns);
        fprintf(f, "%-16s %6u %6u %8u %11s %11s ",
                commsched_coll_op_str(r.op), r.ranks, r.sizes, r.samples,
                r.has_line ? cli_time_ns(r.latency_ns, a, sizeof a) : "-",
                r.has_line ? b : "-");
        if (r.has_line)
            fprintf(f, "%9.1f%% %7.1f%%\n", 100 * r.fit_error,
                    100 * r.spread);
        else
            fprintf(f, "%10s %7.1f%%\n", "-", 100 * r.spread);
    }
}

static int fit(const char *const *paths, size_t n,
               const commsched_calibrate_options *o, commsched_costs **out,
               commsched_calibrate_stats *st)
{
    commsched_error err = {0};
    commsched_calibrate_options oo = *o;
    cli_import ci;
    cli_import_begin(&ci, &oo.import, paths[0]);
    commsched_status s = commsched_calibrate(paths, n, &oo, out, st, &err);
    cli_import_end(&ci);
    return s == COMMSCHED_OK ? 0 : cli_report(NULL, &err);
}

static const char *error_pct(double x, double ref, char *buf, size_t size)
{
    snprintf(buf, size, "%+.1f%%", ref > 0 ? 100 * (x - ref) / ref : 0.0);
    return buf;
}

/* --check on one trace; adds each held-out step's |error| against the
 * measured step to sum[0], against its replay to sum[1]. */
static int check_trace(const char *path, const commsched_calibrate_options *o,
                       const cli_cost *base, double sum[2], size_t *count)
{
    commsched_costs *all = NULL;
    commsched_calibrate_stats st;
    int rc = fit(&path, 1, o, &all, &st);
    commsched_costs_destroy(all);
    if (rc)
        return rc;
    if (st.steps < 3) {
        printf("%s: %zu profiler step%s: nothing to hold out (3 needed: "
               "the last is out of scope)\n",
               path, st.steps, COMMSCHED_PLURAL(st.steps));
        return 0;
    }
    const commsched_device *bl[2] = {commsched_device_builtin("h100"),
                                     commsched_device_builtin("a100")};
    char m[32], r[32], p[32], h[32], a[32], e1[16], e2[16], e3[16], e4[16],
        e5[16];
    printf("%s\n%-18s %6s %10s %10s %7s %10s %7s %8s %10s %7s %10s %7s "
           "%7s\n",
           path, "held-out step", "nodes", "measured", "replay", "error",
           "predicted", "error", "(replay)", "h100", "error", "a100",
           "error", "tables");
    double trace_sum = 0, replay_sum = 0;
    size_t trace_n = 0;
    for (long step = 0; (size_t)step + 1 < st.steps; step++) {
        commsched_calibrate_options ho = *o;
        ho.exclude_step = step;
        commsched_costs *c = NULL;
        commsched_calibrate_stats hs;
        if ((rc = fit(&path, 1, &ho, &c, &hs)) != 0)
            return rc;
        commsched_cost_options co = base->opts;
        co.measured = c;
        commsched_calibrate_result res;
        commsched_error err = {0};
        commsched_status s = commsched_calibrate_check(
            path, step, &o->import, &co, bl, 2, &res, &err);
        commsched_costs_destroy(c);
        if (s != COMMSCHED_OK)
            return cli_report(NULL, &err);
        uint32_t priced = res.from_measured + res.from_fitted;
        printf("%-18s %6u %10s %10s %7s %10s %7s %8s %10s %7s %10s %7s "
               "%6.1f%%\n",
               res.step_name, res.nodes,
               cli_time_ns(res.measured_ns, m, sizeof m),
               cli_time_ns(res.replay_ns, r, sizeof r),
               error_pct(res.replay_ns, res.measured_ns, e1, sizeof e1),
               cli_time_ns(res.predicted_ns, p, sizeof p),
               error_pct(res.predicted_ns, res.measured_ns, e2, sizeof e2),
               error_pct(res.predicted_ns, res.replay_ns, e5, sizeof e5),
               cli_time_ns(res.baseline_ns[0], h, sizeof h),
               error_pct(res.baseline_ns[0], res.measured_ns, e3, sizeof e3),
               cli_time_ns(res.baseline_ns[1], a, sizeof a),
               error_pct(res.baseline_ns[1], res.measured_ns, e4, sizeof e4),
               res.nodes > res.waits
                   ? 100.0 * priced / (res.nodes - res.waits)
                   : 0.0);
        if (res.matmuls)
            printf("%-18s %u matmul kernels by the roofline alone: %s "
                   "measured, %s predicted (%s)\n",
                   "", res.matmuls, cli_time_ns(res.matmul_ns, m, sizeof m),
                   cli_time_ns(res.matmul_roofline_ns, p, sizeof p),
                   error_pct(res.matmul_roofline_ns, res.matmul_ns, e1,
                             sizeof e1));
        if (res.measured_ns > 0 && res.replay_ns > 0) {
            trace_sum += fabs(res.predicted_ns - res.measured_ns) /
                         res.measured_ns;
            replay_sum += fabs(res.predicted_ns - res.replay_ns) /
                          res.replay_ns;
            trace_n++;
        }
    }
    if (trace_n)
        printf("mean |error| of the prediction: %.1f%% of the measured "
               "step, %.1f%% of its replay, over %zu held-out step%s\n\n",
               100 * trace_sum / (double)trace_n,
               100 * replay_sum / (double)trace_n, trace_n,
               COMMSCHED_PLURAL(trace_n));
    sum[0] += trace_sum;
    sum[1] += replay_sum;
    *count += trace_n;
    return 0;
}

int cmd_calibrate(int argc, char **argv)
{
    enum { O_BASE = 256, O_RANK, O_RANKS, O_EXCLUDE, O_MAX_MEMORY, O_CHECK };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"base", required_argument, 0, O_BASE},
        {"rank", required_argument, 0, O_RANK},
        {"ranks", required_argument, 0, O_RANKS},
        {"exclude-step", required_argument, 0, O_EXCLUDE},
        {"max-memory", required_argument, 0, O_MAX_MEMORY},
        {"check", no_argument, 0, O_CHECK},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    commsched_calibrate_options o;
    commsched_calibrate_options_init(&o);
    const char *out_path = NULL, *base = NULL;
    int check = 0, c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        char *end = NULL;
        long v = 0;
        switch (c) {
        case 'o': out_path = optarg; break;
        case O_BASE: base = optarg; break;
        case O_CHECK: check = 1; break;
        case O_RANK:
        case O_RANKS:
        case O_EXCLUDE:
            v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < (c == O_RANKS) || v > 1L << 24)
                return cli_usage_error("calibrate",
                                       "--%s expects %s integer, got \"%s\"",
                                       c == O_RANK      ? "rank"
                                       : c == O_RANKS ? "ranks"
                                                      : "exclude-step",
                                       c == O_RANKS ? "a positive"
                                                    : "a non-negative",
                                       optarg);
            if (c == O_RANK)
                o.import.rank = v;
            else if (c == O_RANKS)
                o.import.ranks = v;
            else
                o.exclude_step = v;
            break;
        case O_MAX_MEMORY:
            if (cli_parse_bytes(optarg, &o.import.max_memory) != 0)
                return cli_usage_error("calibrate",
                                       "--max-memory expects a size in bytes "
                                       "(64M, 4G, ...), got \"%s\"",
                                       optarg);
            break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("calibrate", argc, argv, "o:h", opts);
        }
    }
    if (optind >= argc)
        return cli_usage_error("calibrate", "expected one TRACE or more");
    if (check && (out_path || o.exclude_step >= 0))
        return cli_usage_error("calibrate", "--check writes no profile and "
                                            "chooses the held-out steps: "
                                            "no -o or --exclude-step");
    cli_cost cost;
    int rc = cli_cost_setup(&cost, "calibrate", base, NULL, NULL);
    if (rc)
        return rc;
    const char *const *paths = (const char *const *)argv + optind;
    size_t n = (size_t)(argc - optind);
    if (check) {
        double sum[2] = {0, 0};
        size_t count = 0;
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = check_trace(paths[i], &o, &cost, sum, &count);
        if (rc == 0 && n > 1 && count)
            printf("all traces: mean |error| of the prediction %.1f%% of the "
                   "measured step, %.1f%% of its replay, over %zu held-out "
                   "steps\n",
                   100 * sum[0] / (double)count, 100 * sum[1] / (double)count,
                   count);
        cli_cost_fini(&cost);
        return rc;
    }
    commsched_costs *costs = NULL;
    commsched_calibrate_stats st;
    cli_out out = {0};
    if ((rc = fit(paths, n, &o, &costs, &st)) == 0 &&
        (rc = cli_out_open(&out, out_path)) == 0) {
        commsched_error err = {0};
        /* A report that names the device should say it was measured. */
        commsched_device d = cost.device;
        snprintf(d.name, sizeof d.name, "calibrated (%.40s)",
                 cost.device.name);
        if (commsched_profile_save(out.f, &d, costs, &err) !=
            COMMSCHED_OK) {
            cli_out_abort(&out);
            rc = cli_report(NULL, &err);
        } else {
            rc = cli_out_commit(&out);
        }
    }
    if (rc == 0)
        print_fit(out_path && strcmp(out_path, "-") != 0 ? stdout : stderr,
                  costs, &st);
    commsched_costs_destroy(costs);
    cli_cost_fini(&cost);
    return rc;
}
