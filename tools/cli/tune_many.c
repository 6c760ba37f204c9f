/* commsched tune over many graphs (a summary table, result files per
 * graph) and over MPI ranks (commsched/tune_ranks.h): docs/PASSES.md,
 * "Many graphs in one search" and "tune over MPI ranks". */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "progress.h"
#include "tune_cli.h"
#include "commsched/commsched.h"
#include "commsched/config.h"
#if COMMSCHED_HAVE_MPI
#include "commsched/tune_ranks.h"
#endif

void tune_inputs_free(tune_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->path[i]);
    free(in->path);
}

static int inputs_add(tune_inputs *in, const char *dir, const char *name)
{
    if (in->n == in->cap) {
        size_t c = in->cap ? 2 * in->cap : 16;
        char **p = realloc(in->path, c * sizeof *p);
        if (!p)
            return -1;
        in->path = p;
        in->cap = c;
    }
    size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *s = malloc(len);
    if (!s)
        return -1;
    if (dir)
        snprintf(s, len, "%s%s%s", dir,
                 dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    else
        snprintf(s, len, "%s", name);
    in->path[in->n++] = s;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tune_inputs_expand(tune_inputs *in, int argc, char **argv, int first)
{
    memset(in, 0, sizeof *in);
    in->many = argc - first > 1;
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 &&
            S_ISDIR(st.st_mode)) {
            in->many = 1;
            DIR *d = opendir(argv[i]);
            if (!d) {
                fprintf(stderr, "commsched: %s: cannot open: %s\n", argv[i],
                        strerror(errno));
                return EXIT_INPUT;
            }
            size_t from = in->n;
            for (struct dirent *e; (e = readdir(d));) {
                size_t l = strlen(e->d_name);
                if (e->d_name[0] == '.' || l < 6 ||
                    strcmp(e->d_name + l - 5, ".json") != 0)
                    continue;
                if (inputs_add(in, argv[i], e->d_name) != 0) {
                    closedir(d);
                    fprintf(stderr, "commsched: out of memory\n");
                    return EXIT_RUNTIME;
                }
                if (stat(in->path[in->n - 1], &st) != 0 ||
                    !S_ISREG(st.st_mode))
                    free(in->path[--in->n]);
            }
            closedir(d);
            if (in->n == from)
                return cli_usage_error("tune", "%s: no *.json graph in the "
                                               "directory",
                                       argv[i]);
            qsort(in->path + from, in->n - from, sizeof *in->path, name_cmp);
        } else if (inputs_add(in, NULL, argv[i]) != 0) {
            fprintf(stderr, "commsched: out of memory\n");
            return EXIT_RUNTIME;
        }
    }
    for (size_t i = 0; in->many && i < in->n; i++)
        if (strcmp(in->path[i], "-") == 0)
            return cli_usage_error("tune", "standard input (-) is one graph "
                                           "alone, not one of several");
    return 0;
}

/* A graph's name in the output folder: its file name without ".json". */
static const char *stem_of(const char *path, char *buf, size_t size)
{
    const char *b = strrchr(path, '/');
    snprintf(buf, size, "%s", b ? b + 1 : path);
    size_t l = strlen(buf);
    if (l > 5 && strcmp(buf + l - 5, ".json") == 0)
        buf[l - 5] = '\0';
    return buf;
}

/* Two graphs whose results would land on the same files. */
int tune_stems_clash(const tune_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        for (size_t k = i + 1; k < in->n; k++) {
            char a[512], b[512];
            if (strcmp(stem_of(in->path[i], a, sizeof a),
                       stem_of(in->path[k], b, sizeof b)) == 0)
                return cli_usage_error("tune",
                                       "%s and %s would both write %s.json "
                                       "in the output folder",
                                       in->path[i], in->path[k], a);
        }
    return 0;
}

/* What a search over many graphs prints per graph. */
typedef struct summary_row {
    const char *path;
    uint32_t nodes;
    size_t candidates, best;
    commsched_sim_totals input;
    const commsched_tune_candidate *c; /* the best (&copy), NULL when none
                                          fits */
    commsched_tune_candidate copy;     /* its figures; passes and knobs
                                          owned: the result is gone */
    int rc;                            /* the graph's exit code */
} summary_row;

static void rows_free(summary_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        if (rows[i].c) {
            free((char *)rows[i].copy.passes);
            free((char *)rows[i].copy.knobs);
        }
    free(rows);
}

/* Writes OUTDIR/STEM.json (the best order) and OUTDIR/STEM.tune.json
 * (every candidate, as --format json without timings). */
static int write_graph_files(const char *dir, const char *path,
                             const commsched_graph *g,
                             const commsched_tune_result *r, double budget)
{
    char stem[512], file[4096];
    stem_of(path, stem, sizeof stem);
    int to_stdout = 0, rc;
    if (commsched_tune_best(r) != SIZE_MAX) {
        snprintf(file, sizeof file, "%s/%s.json", dir, stem);
        if ((rc = tune_write_best(file, g, r, budget, &to_stdout)) != 0)
            return rc;
    }
    snprintf(file, sizeof file, "%s/%s.tune.json", dir, stem);
    json_t *j = tune_result_json(r, budget, -1);
    cli_out out;
    if (!j) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    if ((rc = cli_out_open(&out, file)) != 0) {
        json_decref(j);
        return rc;
    }
    if (json_dumpf(j, out.f, JSON_INDENT(1)) != 0 || fputc('\n', out.f) < 0) {
        json_decref(j);
        fprintf(stderr, "commsched: %s: cannot write\n", file);
        cli_out_abort(&out);
        return EXIT_RUNTIME;
    }
    json_decref(j);
    return cli_out_commit(&out);
}

static void print_summary(FILE *f, const summary_row *row, size_t n,
                          double budget)
{
    int w = 5;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(row[i].path) > w)
            w = (int)strlen(row[i].path);
    size_t ok = 0, improved = 0;
    fprintf(f, "%-*s %9s %5s %12s %12s %8s %7s  %s\n", w, "graph", "nodes",
            "cands", "input", "best", "speedup", "peak x",
            "best pipeline | knobs");
    for (size_t i = 0; i < n; i++) {
        const summary_row *s = &row[i];
        char x[32], y[32], p[512];
        if (s->rc != 0) {
            fprintf(f, "%-*s %9s %5s %12s %12s %8s %7s  (%s)\n", w, s->path,
                    "-", "-", "-", "-", "-", "-",
                    s->rc == EXIT_INPUT ? "bad input" : "failed");
            continue;
        }
        ok++;
        if (!s->c) {
            fprintf(f, "%-*s %9u %5zu %12s %12s %8s %7s  (no candidate fits "
                       "the budget)\n",
                    w, s->path, s->nodes, s->candidates,
                    cli_time_ns(s->input.makespan_ns, x, sizeof x), "-", "-",
                    "-");
            continue;
        }
        double sp = s->c->makespan_ns > 0
                        ? s->input.makespan_ns / s->c->makespan_ns
                        : 1.0;
        double px = s->input.peak_memory_step > 0
                        ? (double)s->c->peak_memory /
                              (double)s->input.peak_memory_step
                        : 1.0;
        if (s->c->makespan_ns < s->input.makespan_ns)
            improved++;
        fprintf(f, "%-*s %9u %5zu %12s %12s %7.3fx %6.2fx  #%zu %s%s%s\n", w,
                s->path, s->nodes, s->candidates,
                cli_time_ns(s->input.makespan_ns, x, sizeof x),
                cli_time_ns(s->c->makespan_ns, y, sizeof y), sp, px, s->best,
                tune_short_passes(s->c->passes, p, sizeof p),
                s->c->knobs[0] ? " | " : "", s->c->knobs);
    }
    fprintf(f, "\n%zu graph%s, %zu tuned, %zu faster than their input order",
            n, COMMSCHED_PLURAL(n), ok, improved);
    if (isinf(budget))
        fprintf(f, " (no budget)\n");
    else
        fprintf(f, " (budget %g x peak)\n", budget);
}

static json_t *summary_json(const summary_row *row, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const summary_row *s = &row[i];
        json_t *o = json_pack("{s:s}", "file", s->path);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
        if (s->rc != 0) {
            json_object_set_new(o, "error",
                                json_string(s->rc == EXIT_INPUT
                                                ? "bad input"
                                                : "failed"));
            continue;
        }
        json_object_set_new(o, "nodes", json_integer(s->nodes));
        json_object_set_new(o, "candidates",
                            json_integer((json_int_t)s->candidates));
        json_object_set_new(
            o, "input",
            json_pack("{s:f, s:f, s:I, s:I}", "makespan_ns",
                      s->input.makespan_ns, "lower_bound_ns",
                      s->input.lower_bound_ns, "peak_memory",
                      (json_int_t)s->input.peak_memory_step,
                      "peak_memory_time", (json_int_t)s->input.peak_memory));
        json_object_set_new(o, "best",
                            s->c ? tune_candidate_json(s->c, s->best,
                                                       &s->input, 0)
                                 : json_null());
    }
    json_t *o = a ? json_pack("{s:o}", "graphs", a) : NULL;
    return o;
}

static int output_row(const tune_cli *t, const char *path,
                      const commsched_graph *g, const commsched_tune_result *r,
                      summary_row *row)
{
    row->path = path;
    row->nodes = commsched_graph_node_count(g);
    row->candidates = commsched_tune_count(r);
    row->input = *commsched_tune_input(r);
    row->best = commsched_tune_best(r);
    row->c = NULL;
    if (row->best != SIZE_MAX) {
        row->copy = *commsched_tune_candidate_at(r, row->best);
        row->copy.passes = strdup(row->copy.passes);
        row->copy.knobs = strdup(row->copy.knobs);
        row->copy.error = "";
        if (!row->copy.passes || !row->copy.knobs) {
            free((char *)row->copy.passes);
            free((char *)row->copy.knobs);
            fprintf(stderr, "commsched: out of memory\n");
            return row->rc = EXIT_RUNTIME;
        }
        row->c = &row->copy;
    }
    row->rc = t->out_path ? write_graph_files(t->out_path, path, g, r,
                                              t->to.budget)
                          : 0;
    return row->rc;
}

static int output_summary(const tune_cli *t, const summary_row *rows,
                          size_t n)
{
    if (t->json) {
        json_t *j = summary_json(rows, n);
        if (!j || json_dumpf(j, stdout, JSON_INDENT(1)) != 0) {
            json_decref(j);
            fprintf(stderr, "commsched: out of memory\n");
            return EXIT_RUNTIME;
        }
        fputc('\n', stdout);
        json_decref(j);
    } else
        print_summary(stdout, rows, n, t->to.budget);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].rc > rc)
            rc = rows[i].rc;
    return rc;
}

/* Under mpirun rank 0 makes it once the search is done; every rank
 * checks it first. */
int tune_make_outdir(const char *dir, int create)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        return cli_usage_error("tune", "-o %s: with several graphs -o names "
                                       "a folder, and this is a file",
                               dir);
    }
    if (create && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "commsched: %s: cannot create: %s\n", dir,
                strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}

int tune_here(tune_cli *t, const tune_inputs *in)
{
    summary_row *rows = in->many ? calloc(in->n, sizeof *rows) : NULL;
    if (in->many && !rows) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    int rc = 0;
    for (size_t i = 0; i < in->n; i++) {
        const char *path = in->path[i];
        const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
        commsched_graph *g = NULL;
        commsched_tune_result *r = NULL;
        commsched_error err = {0};
        int grc = cli_load(path, 0, &g);
        if (grc == 0) {
            /* The candidates run on the OpenMP threads, whose malloc
             * arenas cannot reuse what the load freed in the main one (a
             * JSON parse tree): given back, it does not stay resident under
             * their peak (the 100K chain on two threads: 252 -> 220 MiB). */
            cli_release_freed_pages();
            cli_progress progress;
            cli_progress_begin(&progress, "candidates", 0,
                               "commsched tune: searching");
            t->to.progress = cli_progress_fn;
            t->to.progress_arg = &progress;
            double t0 = cli_now();
            commsched_status st = commsched_tune(g, &t->to, &r, &err);
            cli_progress_end(&progress);
            t->to.progress = NULL;
            if (st != COMMSCHED_OK)
                grc = cli_report(name, &err);
            else if (in->many)
                output_row(t, path, g, r, &rows[i]);
            else
                grc = tune_output_single(t, g, r, cli_now() - t0,
                                    tune_threads_used(&t->to), 0);
        }
        if (in->many) {
            rows[i].path = path;
            if (grc)
                rows[i].rc = grc;
        } else
            rc = grc;
        commsched_tune_result_destroy(r);
        commsched_graph_destroy(g);
    }
    if (in->many)
        rc = output_summary(t, rows, in->n);
    rows_free(rows, in->n);
    return rc;
}

int tune_launched_by_mpi(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                       "PMI_SIZE", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

#if COMMSCHED_HAVE_MPI
static commsched_status load_nth(void *arg, size_t i, commsched_graph **out,
                                 commsched_error *err)
{
    const tune_inputs *in = arg;
    int rc = cli_load(in->path[i], 0, out);
    if (rc == 0)
        return COMMSCHED_OK;
    /* cli_load has printed the located message; this one is what the
     * other ranks' failure names. */
    return commsched_error_set(err,
                               rc == EXIT_INPUT ? COMMSCHED_EINVAL
                                                : COMMSCHED_EIO,
                               NULL, "cannot load %s", in->path[i]);
}

int tune_ranks(tune_cli *t, const tune_inputs *in, const char *fp,
               double timeout, const int debug[3])
{
    commsched_tune_ranks_options ro;
    commsched_tune_ranks_options_init(&ro);
    ro.n_graphs = in->n;
    ro.load = load_nth;
    ro.load_arg = (void *)in;
    ro.tune = &t->to;
    ro.fingerprint = fp;
    ro.timeout_s = timeout;
    ro.debug_fail_rank = debug[0];
    ro.debug_hang_rank = debug[1];
    ro.debug_kill_rank = debug[2];
    commsched_tune_result **res = calloc(in->n, sizeof *res);
    const commsched_graph **gs = calloc(in->n, sizeof *gs);
    commsched_error *errs = calloc(in->n, sizeof *errs);
    summary_row *rows = calloc(in->n, sizeof *rows);
    if (!res || !gs || !errs || !rows) {
        free(res);
        free(gs);
        free(errs);
        free(rows);
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    commsched_tune_ranks *job = NULL;
    commsched_error err = {0};
    cli_progress progress;
    double t0 = cli_now();
    /* rank 0's progress line only: the others print nothing */
    int root = !getenv("OMPI_COMM_WORLD_RANK") ||
               strcmp(getenv("OMPI_COMM_WORLD_RANK"), "0") == 0;
    if (root) {
        cli_progress_begin(&progress, "candidates", 0,
                           "commsched tune: searching");
        t->to.progress = cli_progress_fn;
        t->to.progress_arg = &progress;
    }
    commsched_status st =
        commsched_tune_ranks_run(&ro, res, gs, errs, &job, &err);
    if (root)
        cli_progress_end(&progress);
    t->to.progress = NULL;
    double wall = cli_now() - t0;
    int rc = 0;
    if (st != COMMSCHED_OK) {
        fprintf(stderr, "commsched tune: rank %d: %s\n",
                commsched_tune_ranks_rank(job), err.text);
        rc = cli_exit_code(st);
    } else if (commsched_tune_ranks_rank(job) == 0 &&
               (!in->many || !t->out_path ||
                (rc = tune_make_outdir(t->out_path, 1)) == 0)) {
        int ranks = commsched_tune_ranks_size(job);
        if (t->verbose) {
            for (int r = 0; r < ranks; r++)
                fprintf(stderr, "tune: rank %d judged %zu pair%s\n", r,
                        commsched_tune_ranks_pairs_of(job, r),
                        COMMSCHED_PLURAL(commsched_tune_ranks_pairs_of(job,
                                                                       r)));
            for (size_t i = 0; i < in->n; i++)
                if (res[i] && commsched_tune_best(res[i]) != SIZE_MAX)
                    fprintf(stderr, "tune: %s: the best, #%zu, was judged "
                                    "on rank %d\n",
                            in->path[i], commsched_tune_best(res[i]),
                            commsched_tune_ranks_judge_of(
                                job, i, commsched_tune_best(res[i])));
        }
        for (size_t i = 0; i < in->n; i++) {
            int grc = 0;
            if (!res[i])
                /* a load failure was printed where it happened */
                grc = errs[i].text[0] && strncmp(errs[i].text,
                                                 "cannot load ", 12) != 0
                          ? cli_report(in->path[i], &errs[i])
                          : cli_exit_code(errs[i].status);
            else if (in->many)
                grc = output_row(t, in->path[i], gs[i], res[i], &rows[i]);
            else
                grc = tune_output_single(t, gs[i], res[i], wall,
                                         tune_threads_used(&t->to), ranks);
            rows[i].path = in->path[i];
            if (grc)
                rows[i].rc = grc;
            if (!in->many)
                rc = grc;
        }
        if (in->many)
            rc = output_summary(t, rows, in->n);
        if (commsched_tune_ranks_failed(job) && rc == 0)
            rc = EXIT_RUNTIME;
    }
    fflush(stdout);
    commsched_tune_ranks_end(job, rc ? rc : EXIT_RUNTIME);
    free(res);
    free(gs);
    free(errs);
    rows_free(rows, in->n);
    return rc;
}
#endif
