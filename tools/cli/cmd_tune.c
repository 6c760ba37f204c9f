/* commsched tune FILE — search pipelines and knob settings in parallel
 * (commsched_tune), print the best candidates, optionally write the best
 * order as `optimize -o` would. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tune_cli.h"
#include "commsched/commsched.h"
#include "commsched/config.h"

#if COMMSCHED_HAVE_OPENMP
#include <omp.h>
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: commsched tune [options] FILE\n"
            "       commsched tune [options] FILE|FOLDER... [-o OUTDIR]\n"
            "       mpirun -np N commsched tune [options] FILE|FOLDER...\n"
            "\n"
            "Runs many pipelines and knob settings on FILE in parallel (OpenMP),\n"
            "judges each with the simulator and keeps the fastest whose peak\n"
            "memory fits the budget, per step and over simulated time (a buffer\n"
            "a collective in flight reads lives until it ends). The answer does\n"
            "not depend on the\n"
            "thread count. Candidates: the input order, Inductor's pipeline at\n"
            "per-pass budgets 0, 0.05, 0.1 and 0.2, raise_comms,sink_waits,\n"
            "reorder_compute_for_overlap, overlap at the budget (and with its\n"
            "options), and bucketing before overlap and Inductor's pipeline\n"
            "(caps, cost mode, per block; with 3 to 6 collectives of one op\n"
            "and at most 50,000 nodes, every contiguous split of them:\n"
            "docs/PASSES.md, \"tune\").\n"
            "\n"
            "Several graphs (or a FOLDER: its *.json files) are tuned one after\n"
            "the other; a summary table (one row per graph) goes to standard\n"
            "output, and with -o OUTDIR each graph's best order to\n"
            "OUTDIR/NAME.json and every candidate to OUTDIR/NAME.tune.json.\n"
            "Under mpirun the (graph, candidate) pairs are spread over the\n"
            "ranks, OpenMP inside each; rank 0 prints exactly what one process\n"
            "would (docs/PASSES.md, \"tune over MPI ranks\").\n"
            "\n"
            "  --budget F         peak limit: F x the input order's peaks\n"
            "                     (default 1.0; inf: no limit)\n"
            "  --peak-model M     both (default: the per-step peak and the peak\n"
            "                     over simulated time) or step (the per-step\n"
            "                     peak alone, Inductor's model)\n"
            "  --threads N        OpenMP threads (per rank under mpirun; default:\n"
            "                     OMP_NUM_THREADS, else one per core)\n"
            "  --candidate SPEC   also try PASSES or \"PASSES|key=value,...\"\n"
            "                     (repeatable)\n"
            "  --no-builtin       only the --candidate ones\n"
            "  --top K            rows in the table (default 10; 0: all)\n"
            "  --format F         table (default) or json (every candidate; with\n"
            "                     several graphs, the summary)\n"
            "  -o, --output OUT   write the best order (the same file `optimize\n"
            "                     -o` writes for that pipeline), atomically; with\n"
            "                     several graphs, the folder of result files\n"
            "  --comm-streams S   per-group (default) or single\n"
            "  --verify-memory    check every order after every pass (slower)\n"
            "  --verbose          the search's wall time on standard error (and\n"
            "                     under mpirun what each rank judged)\n"
            "  --rank-timeout S   under mpirun: a rank holding a pair S seconds\n"
            "                     is named as hung and its pairs go to the\n"
            "                     others; the job then exits 1 (default 0: wait)\n"
            "  --debug-fail-rank R, --debug-hang-rank R, --debug-kill-rank R\n"
            "                     tests: rank R refuses its pairs, stops\n"
            "                     answering, or dies of SIGKILL\n" CLI_COST_HELP
            "\n"
            "The table goes to standard output, or to standard error when the\n"
            "graph goes to standard output (-o -).\n");
}

const char *tune_short_passes(const char *p, char *buf, size_t size)
{
    static const struct {
        const char *from, *to;
    } names[] = {
        {"decide_global_ordering_of_comms,reorder_communication_preserving_"
         "peak_memory,sink_waits_iterative,reorder_communication_preserving_"
         "peak_memory",
         "inductor"},
        {"bucket_all_gather,bucket_reduce_scatter,bucket_all_reduce",
         "bucket*"},
        {"decide_global_ordering_of_comms", "decide"},
    };
    snprintf(buf, size, "%s", p);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *at = strstr(buf, names[i].from);
        if (!at)
            continue;
        size_t fl = strlen(names[i].from), tl = strlen(names[i].to);
        memmove(at + tl, at + fl, strlen(at + fl) + 1);
        memcpy(at, names[i].to, tl);
    }
    return buf;
}

static double gap_closed(const commsched_sim_totals *in, double ms)
{
    double d = in->makespan_ns - in->lower_bound_ns;
    return d > 0 ? (in->makespan_ns - ms) / d : NAN;
}

static void print_table(FILE *f, const commsched_graph *g,
                        const commsched_tune_result *r, size_t top,
                        double budget, int threads, double wall_s)
{
    const commsched_sim_totals *in = commsched_tune_input(r);
    char x[32], y[32], z[32];
    size_t n = commsched_tune_count(r);
    uint32_t nodes = commsched_graph_node_count(g);
    fprintf(f, "graph %s: %u node%s; input order: makespan %s, lower bound "
               "%s, peak %s\n",
            commsched_graph_name(g) ? commsched_graph_name(g) : "(unnamed)",
            nodes, COMMSCHED_PLURAL(nodes),
            cli_time_ns(in->makespan_ns, x, sizeof x),
            cli_time_ns(in->lower_bound_ns, y, sizeof y),
            cli_bytes((double)in->peak_memory_step, z, sizeof z));
    if (isinf(budget))
        fprintf(f, "budget: none; ");
    else if (commsched_tune_time_budget_bytes(r) < 0)
        fprintf(f, "budget: %g x peak = %s per step; ", budget,
                cli_bytes((double)commsched_tune_budget_bytes(r), x, sizeof x));
    else
        fprintf(f, "budget: %g x peaks = %s per step, %s in time; ", budget,
                cli_bytes((double)commsched_tune_budget_bytes(r), x, sizeof x),
                cli_bytes((double)commsched_tune_time_budget_bytes(r), y,
                          sizeof y));
    fprintf(f, "%zu candidates", n);
    if (threads > 0)
        fprintf(f, " on %d thread%s", threads, threads == 1 ? "" : "s");
    if (wall_s >= 0)
        fprintf(f, " in %.2f s", wall_s);
    fprintf(f, "\n\n%-4s %-4s %12s %8s %7s %6s %12s %7s %12s %-9s %10s  %s\n",
            "rank", "#", "makespan", "speedup", "gap", "eff", "peak", "peak x",
            "peak (time)", "fits", "time", "pipeline | knobs");
    size_t rows = top == 0 || top > n ? n : top;
    for (size_t k = 0; k < rows; k++) {
        size_t i = commsched_tune_ranked(r, k);
        const commsched_tune_candidate *c = commsched_tune_candidate_at(r, i);
        char p[512], gp[16], eff[16], sp[16];
        tune_short_passes(c->passes, p, sizeof p);
        if (c->status != COMMSCHED_OK) {
            fprintf(f, "%-4zu %-4zu %12s %8s %7s %6s %12s %7s %12s %-9s %10s  "
                       "%s%s%s (failed: %s)\n",
                    k + 1, i, "-", "-", "-", "-", "-", "-", "-", "-",
                    cli_time_ns(c->wall_ms * 1e6, z, sizeof z), p,
                    c->knobs[0] ? " | " : "", c->knobs, c->error);
            continue;
        }
        double gc = gap_closed(in, c->makespan_ns);
        if (isnan(gc))
            snprintf(gp, sizeof gp, "-");
        else
            snprintf(gp, sizeof gp, "%.1f%%", 100 * gc);
        snprintf(eff, sizeof eff, "%.1f%%", 100 * c->efficiency);
        snprintf(sp, sizeof sp, "%.3fx",
                 c->makespan_ns > 0 ? in->makespan_ns / c->makespan_ns : 1.0);
        double px = in->peak_memory_step > 0
                        ? (double)c->peak_memory / (double)in->peak_memory_step
                        : 1.0;
        char tp[32];
        static const char *const fit_text[] = {"yes", "no (step)", "no (time)",
                                               "no (both)"};
        fprintf(f, "%-4zu %-4zu %12s %8s %7s %6s %12s %6.2fx %12s %-9s %10s  "
                   "%s%s%s\n",
                k + 1, i, cli_time_ns(c->makespan_ns, x, sizeof x), sp, gp, eff,
                cli_bytes((double)c->peak_memory, y, sizeof y), px,
                cli_bytes((double)c->peak_memory_time, tp, sizeof tp),
                fit_text[c->over & 3],
                cli_time_ns(c->wall_ms * 1e6, z, sizeof z), p,
                c->knobs[0] ? " | " : "", c->knobs);
    }
    size_t best = commsched_tune_best(r);
    if (best == SIZE_MAX)
        fprintf(f, "\nno candidate fits the budget\n");
    else
        fprintf(f, "\nbest: #%zu %s%s%s\n", best,
                commsched_tune_candidate_at(r, best)->passes,
                commsched_tune_candidate_at(r, best)->knobs[0] ? " | " : "",
                commsched_tune_candidate_at(r, best)->knobs);
}

/* timing 0: without wall_ms, the one figure that depends on threads,
 * ranks and load (the per-graph files of a search over many graphs). */
json_t *tune_candidate_json(const commsched_tune_candidate *c, size_t i,
                            const commsched_sim_totals *in, int timing)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:b}", "index",
                          (json_int_t)i, "passes", c->passes, "knobs",
                          c->knobs, "status", commsched_status_name(c->status),
                          "fits", c->fits);
    if (!o)
        return NULL;
    if (timing)
        json_object_set_new(o, "wall_ms", json_real(c->wall_ms));
    if (c->status != COMMSCHED_OK) {
        json_object_set_new(o, "error", json_string(c->error));
        return o;
    }
    double gc = gap_closed(in, c->makespan_ns);
    json_object_set_new(o, "makespan_ns", json_real(c->makespan_ns));
    json_object_set_new(o, "lower_bound_ns", json_real(c->lower_bound_ns));
    json_object_set_new(o, "efficiency", json_real(c->efficiency));
    json_object_set_new(o, "exposed_ns", json_real(c->exposed_ns));
    json_object_set_new(o, "peak_memory", json_integer(c->peak_memory));
    json_object_set_new(o, "peak_memory_time",
                        json_integer(c->peak_memory_time));
    json_object_set_new(o, "over",
                        c->over == 0   ? json_null()
                        : c->over == 1 ? json_string("step")
                        : c->over == 2 ? json_string("time")
                                       : json_string("both"));
    json_object_set_new(o, "gap_closed",
                        isnan(gc) ? json_null() : json_real(gc));
    return o;
}

/* threads < 0: no "threads" member and no wall_ms (timing off). */
json_t *tune_result_json(const commsched_tune_result *r, double budget,
                         int threads)
{
    int timing = threads >= 0;
    const commsched_sim_totals *in = commsched_tune_input(r);
    json_t *cands = json_array(), *rank = json_array();
    for (size_t i = 0; cands && i < commsched_tune_count(r); i++)
        json_array_append_new(
            cands,
            tune_candidate_json(commsched_tune_candidate_at(r, i), i, in,
                                timing));
    for (size_t k = 0; rank && k < commsched_tune_count(r); k++)
        json_array_append_new(rank,
                              json_integer((json_int_t)commsched_tune_ranked(
                                  r, k)));
    size_t best = commsched_tune_best(r);
    json_t *o = json_pack(
        "{s:{s:f, s:f, s:I, s:I}, s:o, s:I, s:I}", "input",
        "makespan_ns", in->makespan_ns, "lower_bound_ns", in->lower_bound_ns,
        "peak_memory", (json_int_t)in->peak_memory_step, "peak_memory_time",
        (json_int_t)in->peak_memory, "budget",
        isinf(budget) ? json_string("inf") : json_real(budget), "budget_bytes",
        (json_int_t)commsched_tune_budget_bytes(r), "time_budget_bytes",
        (json_int_t)commsched_tune_time_budget_bytes(r));
    if (!o) {
        json_decref(cands);
        json_decref(rank);
        return NULL;
    }
    if (timing)
        json_object_set_new(o, "threads", json_integer(threads));
    json_object_set_new(o, "candidates", cands ? cands : json_array());
    json_object_set_new(o, "ranking", rank ? rank : json_array());
    json_object_set_new(
        o, "best",
        best == SIZE_MAX
            ? json_null()
            : tune_candidate_json(commsched_tune_candidate_at(r, best), best,
                                  in, timing));
    return o;
}

/* The candidate's knobs ("k=v,k=v", what it set over the defaults) as a
 * knob table (*out; NULL on OOM). */
static commsched_knobs *candidate_knobs(const commsched_tune_candidate *c)
{
    commsched_error err = {0};
    commsched_knobs *k = NULL;
    if (commsched_knobs_create(&k, &err) != COMMSCHED_OK)
        return NULL;
    char *copy = malloc(strlen(c->knobs) + 1);
    if (!copy) {
        commsched_knobs_destroy(k);
        return NULL;
    }
    strcpy(copy, c->knobs);
    for (char *kv = strtok(copy, ","); kv; kv = strtok(NULL, ",")) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = '\0';
            commsched_knobs_set(k, kv, eq + 1, &err);
        }
    }
    free(copy);
    return k;
}

/* Deterministic: the same order as the search judged. */
int tune_write_best(const char *out_path, const commsched_graph *g,
                    const commsched_tune_result *r, double budget,
                    int *to_stdout)
{
    commsched_error err = {0};
    commsched_optimize_options *opts = NULL;
    commsched_result *res = NULL;
    commsched_knobs *knobs = NULL;
    cli_out out = {0};
    int rc = 0;
    size_t best = commsched_tune_best(r);
    if (best == SIZE_MAX) {
        fprintf(stderr, "commsched tune: no candidate fits the budget; "
                        "nothing written\n");
        return EXIT_RUNTIME;
    }
    if (commsched_tune_candidate_options(r, best, &opts, &err) !=
            COMMSCHED_OK ||
        commsched_optimize(g, opts, &res, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto done;
    }
    if (!(knobs = candidate_knobs(commsched_tune_candidate_at(r, best)))) {
        fprintf(stderr, "commsched: out of memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((rc = cli_out_open(&out, out_path)) != 0)
        goto done;
    *to_stdout = out.f == stdout;
    /* The "schedule" object (docs/FORMAT.md): what optimize records, and
     * which candidate it was; the library's writer. */
    commsched_schedule_record sched;
    commsched_schedule_record_init(&sched);
    sched.passes = commsched_tune_candidate_at(r, best)->passes;
    sched.peak_before = commsched_result_before(res)->peak_memory_step;
    sched.peak_after = commsched_result_after(res)->peak_memory_step;
    sched.g = commsched_result_graph(res);
    sched.run = commsched_result_run(res);
    sched.knobs = knobs;
    sched.tune_candidate = (long)best;
    sched.tune_budget = budget;
    if (commsched_graph_save_stream_with(
            commsched_result_graph(res), commsched_result_order(res),
            commsched_schedule_record_write, &sched, out.f, &err) !=
        COMMSCHED_OK) {
        cli_out_abort(&out);
        rc = cli_report(NULL, &err);
        goto done;
    }
    rc = cli_out_commit(&out);
done:
    commsched_knobs_destroy(knobs);
    commsched_result_destroy(res);
    commsched_optimize_options_destroy(opts);
    return rc;
}

int tune_output_single(const tune_cli *t, const commsched_graph *g,
                       const commsched_tune_result *r, double wall,
                       int threads, int ranks)
{
    if (t->verbose) {
        fprintf(stderr, "tune: %zu candidates on %d thread%s", 
                commsched_tune_count(r), threads, threads == 1 ? "" : "s");
        if (ranks > 0)
            fprintf(stderr, " x %d rank%s", ranks, ranks == 1 ? "" : "s");
        fprintf(stderr, " in %.3f s\n", wall);
    }
    int to_stdout = 0, rc;
    if (t->out_path &&
        (rc = tune_write_best(t->out_path, g, r, t->to.budget,
                              &to_stdout)) != 0)
        return rc;
    FILE *f = to_stdout ? stderr : stdout;
    if (t->json) {
        json_t *j = tune_result_json(r, t->to.budget, threads);
        if (!j || json_dumpf(j, f, JSON_INDENT(1)) != 0) {
            json_decref(j);
            fprintf(stderr, "commsched: out of memory\n");
            return EXIT_RUNTIME;
        }
        fputc('\n', f);
        json_decref(j);
    } else {
        print_table(f, g, r, t->top, t->to.budget, threads,
                    t->verbose ? wall : -1);
    }
    return 0;
}

/* Graph i of many, tuned: its files (with -o) and its summary row. */
int tune_threads_used(const commsched_tune_options *to)
{
#if COMMSCHED_HAVE_OPENMP
    return to->threads > 0 ? to->threads : omp_get_max_threads();
#else
    (void)to;
    return 1;
#endif
}

/* In this process, graph after graph: each loaded, tuned, written and
 * freed before the next. */
static int parse_rank(const char *opt, const char *arg, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 0 || v > 1000000)
        return cli_usage_error("tune", "%s takes a rank >= 0, got \"%s\"", opt,
                               arg);
    *out = (int)v;
    return 0;
}

int cmd_tune(int argc, char **argv)
{
    enum { O_BUDGET = 256, O_THREADS, O_CAND, O_NOBUILTIN, O_TOP, O_FORMAT,
           O_DEVICE, O_MODEL, O_COSTS, O_STREAMS, O_VERIFY, O_VERBOSE, O_PEAK,
           O_TIMEOUT, O_DFAIL, O_DHANG, O_DKILL };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"budget", required_argument, 0, O_BUDGET},
        {"peak-model", required_argument, 0, O_PEAK},
        {"threads", required_argument, 0, O_THREADS},
        {"candidate", required_argument, 0, O_CAND},
        {"no-builtin", no_argument, 0, O_NOBUILTIN},
        {"top", required_argument, 0, O_TOP},
        {"format", required_argument, 0, O_FORMAT},
        {"device", required_argument, 0, O_DEVICE},
        {"cost-model", required_argument, 0, O_MODEL},
        {"costs", required_argument, 0, O_COSTS},
        {"comm-streams", required_argument, 0, O_STREAMS},
        {"verify-memory", no_argument, 0, O_VERIFY},
        {"verbose", no_argument, 0, O_VERBOSE},
        {"rank-timeout", required_argument, 0, O_TIMEOUT},
        {"debug-fail-rank", required_argument, 0, O_DFAIL},
        {"debug-hang-rank", required_argument, 0, O_DHANG},
        {"debug-kill-rank", required_argument, 0, O_DKILL},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    tune_cli t;
    memset(&t, 0, sizeof t);
    commsched_tune_options_init(&t.to);
    t.top = 10;
    const char *device = NULL, *model = NULL, *costs = NULL;
    const char **cands = NULL;
    size_t n_cands = 0;
    double rank_timeout = 0;
    int debug[3] = {-1, -1, -1}; /* fail, hang, kill */
    int c, rc = 0;
    char *end;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': t.out_path = optarg; break;
        case O_BUDGET:
            t.to.budget = strtod(optarg, &end);
            if (end == optarg || *end || !(t.to.budget >= 1.0)) {
                free(cands);
                return cli_usage_error("tune",
                                       "--budget takes a factor >= 1 or "
                                       "inf, got \"%s\"",
                                       optarg);
            }
            break;
        case O_PEAK:
            if (strcmp(optarg, "both") == 0)
                t.to.peak_model = COMMSCHED_PEAK_BOTH;
            else if (strcmp(optarg, "step") == 0)
                t.to.peak_model = COMMSCHED_PEAK_STEP;
            else {
                free(cands);
                return cli_usage_error("tune",
                                       "--peak-model takes both or step, got "
                                       "\"%s\"",
                                       optarg);
            }
            break;
        case O_THREADS: {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 4096) {
                free(cands);
                return cli_usage_error("tune",
                                       "--threads takes a count >= 1, got "
                                       "\"%s\"",
                                       optarg);
            }
            t.to.threads = (int)v;
            break;
        }
        case O_CAND: {
            const char **nc = realloc(cands, (n_cands + 1) * sizeof *nc);
            if (!nc) {
                free(cands);
                fprintf(stderr, "commsched: out of memory\n");
                return EXIT_RUNTIME;
            }
            cands = nc;
            cands[n_cands++] = optarg;
            break;
        }
        case O_NOBUILTIN: t.to.builtin = 0; break;
        case O_TOP: {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0) {
                free(cands);
                return cli_usage_error("tune", "--top takes a count >= 0");
            }
            t.top = (size_t)v;
            break;
        }
        case O_FORMAT:
            if (strcmp(optarg, "json") == 0)
                t.json = 1;
            else if (strcmp(optarg, "table") == 0)
                t.json = 0;
            else {
                free(cands);
                return cli_usage_error("tune", "--format takes table or json");
            }
            break;
        case O_DEVICE: device = optarg; break;
        case O_MODEL: model = optarg; break;
        case O_COSTS: costs = optarg; break;
        case O_STREAMS:
            if (strcmp(optarg, "per-group") == 0)
                t.to.comm_streams = COMMSCHED_STREAMS_PER_GROUP;
            else if (strcmp(optarg, "single") == 0)
                t.to.comm_streams = COMMSCHED_STREAMS_SINGLE;
            else {
                free(cands);
                return cli_usage_error("tune",
                                       "--comm-streams takes per-group or "
                                       "single");
            }
            break;
        case O_VERIFY: t.to.verify = 1; break;
        case O_VERBOSE: t.verbose = 1; break;
        case O_TIMEOUT:
            rank_timeout = strtod(optarg, &end);
            if (end == optarg || *end || !(rank_timeout >= 0) ||
                isinf(rank_timeout)) {
                free(cands);
                return cli_usage_error("tune",
                                       "--rank-timeout takes seconds >= 0, "
                                       "got \"%s\"",
                                       optarg);
            }
            break;
        case O_DFAIL:
        case O_DHANG:
        case O_DKILL:
            if ((rc = parse_rank(c == O_DFAIL   ? "--debug-fail-rank"
                                 : c == O_DHANG ? "--debug-hang-rank"
                                                : "--debug-kill-rank",
                                 optarg, &debug[c - O_DFAIL]))) {
                free(cands);
                return rc;
            }
            break;
        case 'h':
            free(cands);
            usage(stdout);
            return EXIT_OK;
        default:
            free(cands);
            return cli_bad_option("tune", argc, argv, "o:h", opts);
        }
    }
    if (optind >= argc) {
        free(cands);
        return cli_usage_error("tune", "expected a FILE (or several, or a "
                                       "folder)");
    }
    tune_inputs in;
    cli_cost cost = {0};
    int mpi = tune_launched_by_mpi();
    if ((rc = tune_inputs_expand(&in, argc, argv, optind)) != 0 ||
        (in.many && (rc = tune_stems_clash(&in)) != 0) ||
        (rc = cli_cost_setup(&cost, "tune", device, model, costs)) != 0)
        goto done;
    if (mpi && in.n == 1 && strcmp(in.path[0], "-") == 0) {
        rc = cli_usage_error("tune", "under mpirun every rank reads the "
                                     "graph: give a file, not -");
        goto done;
    }
    if (in.many && t.out_path && (rc = tune_make_outdir(t.out_path, !mpi)) != 0)
        goto done;
    t.to.device = &cost.device;
    t.to.measured = cost.opts.measured;
    t.to.measured_first = cost.opts.measured_first;
    t.to.comm_model = cost.opts.comm_model;
    t.to.candidates = cands;
    t.to.n_candidates = n_cands;
    if (!mpi) {
        rc = tune_here(&t, &in);
        goto done;
    }
#if COMMSCHED_HAVE_MPI
    {
        /* what every rank must have been given alike */
        size_t fl = 1;
        for (int i = 0; i < argc; i++)
            fl += strlen(argv[i]) + 1;
        for (size_t i = 0; i < in.n; i++)
            fl += strlen(in.path[i]) + 1;
        char *fp = malloc(fl);
        if (!fp) {
            fprintf(stderr, "commsched: out of memory\n");
            rc = EXIT_RUNTIME;
            goto done;
        }
        char *at = fp;
        for (int i = 0; i < argc; i++)
            at += sprintf(at, "%s\n", argv[i]);
        for (size_t i = 0; i < in.n; i++)
            at += sprintf(at, "%s\n", in.path[i]);
        rc = tune_ranks(&t, &in, fp, rank_timeout, debug);
        free(fp);
    }
#else
    {
        /* one rank: the search of one process is the job's */
        const char *size = getenv("OMPI_COMM_WORLD_SIZE");
        if (!size)
            size = getenv("PMI_SIZE");
        if (size && strcmp(size, "1") == 0) {
            rc = tune_here(&t, &in);
            goto done;
        }
    }
    fprintf(stderr, "commsched tune: started by mpirun, but this build has "
                    "no MPI (COMMSCHED_HAVE_MPI 0): every rank would search "
                    "alone\n");
    (void)rank_timeout;
    rc = EXIT_RUNTIME;
#endif
done:
    tune_inputs_free(&in);
    free(cands);
    cli_cost_fini(&cost);
    return rc;
}
