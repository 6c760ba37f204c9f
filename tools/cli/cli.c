/* commsched CLI — shared helpers. */
#include "cli.h"
#include "progress.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_exit_code(commsched_status st)
{
    switch (st) {
    case COMMSCHED_OK:
        return EXIT_OK;
    case COMMSCHED_EIO:
    case COMMSCHED_EPARSE:
    case COMMSCHED_ESCHEMA:
    case COMMSCHED_EGRAPH:
    case COMMSCHED_ECYCLE:
    case COMMSCHED_EORDER:
    case COMMSCHED_EINVAL:
        return EXIT_INPUT;
    default:
        return EXIT_RUNTIME;
    }
}

int cli_report(const char *file, const commsched_error *err)
{
    char buf[1024];
    fprintf(stderr, "commsched: %s\n",
            commsched_error_format(err, file, buf, sizeof buf));
    return cli_exit_code(err->status);
}

int cli_usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "commsched %s: ", sub);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'commsched %s --help')\n", sub);
    return EXIT_INPUT;
}

int cli_did_you_mean(FILE *f, const char *prefix, const char *word, size_t len,
                     const char *const *names, size_t count, size_t stride)
{
    size_t i = commsched_name_suggest(word, len, names, count, stride);
    if (i == SIZE_MAX)
        return 0;
    fprintf(f, " (did you mean \"%s%s\"?)", prefix,
            *(const char *const *)((const char *)names + i * stride));
    return 1;
}

int cli_bad_option(const char *sub, int argc, char **argv,
                   const char *shortopts, const struct option *opts)
{
    size_t n = 0;
    while (opts[n].name)
        n++;
    /* glibc leaves optind past a long option it refused (and past a short
     * one that ended its word), and optopt at the option's value for a
     * known option whose value was missing or unwanted, 0 for an unknown
     * or ambiguous long option, the letter for an unknown short one. */
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (strncmp(arg, "--", 2) == 0 && arg[2]) {
        const char *name = arg + 2;
        size_t len = strcspn(name, "=");
        size_t exact = SIZE_MAX, first = SIZE_MAX, matches = 0;
        for (size_t i = 0; i < n; i++) {
            if (strncmp(opts[i].name, name, len) != 0)
                continue;
            if (strlen(opts[i].name) == len)
                exact = i;
            if (first == SIZE_MAX)
                first = i;
            matches++;
        }
        size_t k = exact != SIZE_MAX ? exact : matches == 1 ? first : SIZE_MAX;
        if (k != SIZE_MAX) {
            if (name[len] == '=' && opts[k].has_arg == no_argument)
                return cli_usage_error(sub, "option --%s takes no value",
                                       opts[k].name);
            return cli_usage_error(sub, "option --%s needs a value",
                                   opts[k].name);
        }
        if (matches > 1) {
            fprintf(stderr, "commsched %s: option \"--%.*s\" is ambiguous:",
                    sub, (int)len, name);
            for (size_t i = 0; i < n; i++)
                if (strncmp(opts[i].name, name, len) == 0)
                    fprintf(stderr, " --%s", opts[i].name);
            fprintf(stderr, "\n");
            return EXIT_INPUT;
        }
        fprintf(stderr, "commsched %s: unknown option \"--%.*s\"", sub,
                (int)len, name);
        if (!cli_did_you_mean(stderr, "--", name, len, &opts[0].name, n,
                              sizeof opts[0]))
            fprintf(stderr, " (see 'commsched %s --help')", sub);
        fprintf(stderr, "\n");
        return EXIT_INPUT;
    }
    if (optopt > 0 && optopt != ':' && strchr(shortopts, optopt))
        return cli_usage_error(sub, "option -%c needs a value", optopt);
    /* An unknown letter; "-summary" is most likely --summary with one dash
     * (getopt stops at its first unknown letter, optind still on it). */
    const char *word = optind < argc && argv[optind][0] == '-' &&
                               argv[optind][1] == optopt
                           ? argv[optind]
                       : arg[0] == '-' && arg[1] == optopt ? arg
                                                          : NULL;
    if (word)
        fprintf(stderr, "commsched %s: unknown option \"%s\"", sub, word);
    else
        fprintf(stderr, "commsched %s: unknown option \"-%c\"", sub,
                optopt > ' ' && optopt < 127 ? optopt : '?');
    if (!word || strlen(word) < 3 ||
        !cli_did_you_mean(stderr, "--", word + 1, strlen(word + 1),
                          &opts[0].name, n, sizeof opts[0]))
        fprintf(stderr, " (see 'commsched %s --help')", sub);
    fprintf(stderr, "\n");
    return EXIT_INPUT;
}

char *cli_read_file(const char *path, size_t *len)
{
    char *text;
    commsched_error err = {0};
    if (commsched_read_file(path, &text, len, &err) == COMMSCHED_OK)
        return text;
    /* "commsched: out of memory", as every subcommand words it; "-" never
     * fails to open, so the file is named as given then. */
    cli_report(err.status == COMMSCHED_ENOMEM ? NULL
               : strcmp(path, "-") == 0       ? "<stdin>"
                                              : path,
               &err);
    return NULL;
}

/* What a Chakra import frees (its record arenas, the importer's and the
 * builder's tables) lies between the graph's arrays, where glibc keeps
 * its pages resident for reuse, and the passes' arrays fit those holes
 * badly: giving the pages back (glibc's malloc_trim releases free pages
 * anywhere in its heaps, not only at the top) lowers the peak that
 * follows by what the holes held, 29 MiB of 500 when optimize runs a
 * 1M-node trace on two threads, for ~16K more page faults (~25 ms). Not
 * after a JSON load: its parse tree is freed whole, the passes reuse it
 * without raising the load's own peak, and giving it back would cost
 * them a fault per page they take again (~36K, ~50 ms, for simulate on a
 * 1M-node chain); tune calls it after either (cmd_tune.c). A
 * process-wide choice, so the tool's, not the library's. */
void cli_release_freed_pages(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* The notes and warnings of an import, as the CLI has always worded
 * them: "commsched import: note: FILE: text". */
static void say(void *arg, commsched_import_level level, const char *file,
                const char *text)
{
    (void)arg;
    fprintf(stderr, "commsched import: %s: %s: %s\n",
            commsched_import_level_str(level), file, text);
}

/* The reading line: begun at the first report of a stage, ended when it
 * reports everything read (a .gz is read twice: two stages). */
static void reading(void *arg, uint64_t done, uint64_t total)
{
    cli_import *ci = arg;
    if (!ci->p)
        return;
    if (!ci->drawing) {
        cli_progress_begin(ci->p, NULL, total, "commsched import: reading %s",
                           ci->name);
        ci->drawing = 1;
    }
    cli_progress_fn(ci->p, done, total);
    if (total > 0 && done >= total) {
        cli_progress_end(ci->p);
        ci->drawing = 0;
    }
}

void cli_import_begin(cli_import *ci, commsched_import_options *o,
                      const char *path)
{
    const char *file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    const char *slash = strrchr(file, '/');
    ci->name = slash ? slash + 1 : file;
    ci->drawing = 0;
    /* Without memory for the line there is no line; the import runs. */
    ci->p = calloc(1, sizeof *ci->p);
    o->message = say;
    o->message_arg = NULL;
    o->progress = reading;
    o->progress_arg = ci;
}

void cli_import_end(cli_import *ci)
{
    if (ci->p && ci->drawing)
        cli_progress_end(ci->p);
    free(ci->p);
    ci->p = NULL;
    ci->drawing = 0;
}

int cli_import_run(cli_importer_fn fn, const char *path,
                   commsched_import_options *o, commsched_graph **out)
{
    cli_import ci;
    cli_import_begin(&ci, o, path);
    commsched_error err = {0};
    commsched_status st = fn(path, o, out, &err);
    cli_import_end(&ci);
    return st == COMMSCHED_OK ? 0 : cli_report(NULL, &err);
}

int cli_load(const char *path, unsigned flags, commsched_graph **out)
{
    commsched_import_options o;
    commsched_import_options_init(&o);
    cli_import ci;
    cli_import_begin(&ci, &o, path);
    commsched_error err = {0};
    commsched_format format;
    commsched_status st =
        commsched_graph_load_any(path, flags, &o, out, &format, &err);
    cli_import_end(&ci);
    if (st != COMMSCHED_OK) /* a trace's error names its file already */
        return cli_report(format == COMMSCHED_FORMAT_CHAKRA_ET ? NULL
                          : strcmp(path, "-") == 0        ? "<stdin>"
                                                          : path,
                          &err);
    if (format == COMMSCHED_FORMAT_CHAKRA_ET)
        cli_release_freed_pages();
    return 0;
}

static int out_fail(cli_out *o, int code, const char *what, const char *path)
{
    fprintf(stderr, "commsched: %s %s: %s\n", what, path, strerror(errno));
    cli_out_abort(o);
    return code;
}

int cli_out_open(cli_out *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->slot = -1;
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    /* The one rule every writer follows (commsched_output_target): links
     * followed, devices and FIFOs written in place, a file the user may
     * not write refused, anything else replaced atomically. */
    char target[4096];
    int in_place, exists;
    unsigned mode;
    commsched_error err = {0};
    if (commsched_output_target(path, target, sizeof target, &in_place,
                                &exists, &mode, &err) != COMMSCHED_OK) {
        fprintf(stderr, "commsched: %s: %s\n", path, err.text);
        return EXIT_INPUT;
    }
    o->path = strdup(in_place ? path : target);
    if (!o->path) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (in_place) {
        /* "w" truncates what can be truncated, nothing else. */
        o->f = fopen(path, "w");
        return o->f ? 0 : out_fail(o, EXIT_INPUT, "cannot write", path);
    }
    size_t len = strlen(o->path);
    o->tmp = malloc(len + 16);
    if (!o->tmp) {
        cli_out_abort(o);
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    /* Same directory as the target, so rename() never crosses devices. */
    snprintf(o->tmp, len + 16, "%s.tmpXXXXXX", o->path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        return out_fail(o, EXIT_INPUT, "cannot create", path);
    }
    /* Removed by the signal handler should Ctrl-C come before commit or
     * abort does it; refusing to write is better than leaving it behind. */
    if ((o->slot = cli_tmp_register(o->tmp)) < 0) {
        close(fd);
        errno = ENAMETOOLONG;
        return out_fail(o, EXIT_RUNTIME,
                        "cannot protect the temporary file of", path);
    }
    /* mkstemp creates 0600: give a new file the mode a plain fopen would,
     * and a replaced one the mode it had. */
    if (fchmod(fd, (mode_t)mode) != 0) {
        close(fd);
        return out_fail(o, EXIT_RUNTIME, "cannot set the mode of", path);
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        return out_fail(o, EXIT_RUNTIME, "cannot write", path);
    }
    return 0;
}

int cli_out_commit(cli_out *o)
{
    if (o->f == stdout) {
        if (fflush(stdout) != 0) {
            fprintf(stderr, "commsched: cannot write to standard output\n");
            return EXIT_RUNTIME;
        }
        return 0;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f);
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad || (o->tmp && rename(o->tmp, o->path) != 0))
        return out_fail(o, EXIT_RUNTIME, "cannot write", o->path);
    if (o->tmp) /* after the rename: no window without protection */
        cli_tmp_release(o->slot);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void cli_out_abort(cli_out *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    if (o->tmp) {
        unlink(o->tmp);
        /* After the unlink, for the same reason; only a cli_out with a
         * temporary file owns a slot (a `= {0}` one has slot 0). */
        cli_tmp_release(o->slot);
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    o->slot = -1;
}

int cli_check_graph_size(const char *sub, const char *option, double nodes)
{
    char a[32], b[32];
    if (nodes > (double)UINT32_MAX - 2) {
        fprintf(stderr,
                "commsched %s: %s: the graph would have %.3g nodes, past the "
                "format's limit of 2^32 - 2 (docs/FORMAT.md, \"Limits\")\n",
                sub, option, nodes);
        return EXIT_INPUT;
    }
    /* What the builder, the graph and the writer take a node, measured
     * (docs/PERFORMANCE.md: 315 B a chain node, 650 B an fsdp one, 860 B
     * at the builder's peak), rounded up. */
    double need = nodes * CLI_BYTES_PER_NODE;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (have > 0 && need > have) {
        fprintf(stderr,
                "commsched %s: %s: the graph would have %.3g nodes, about %s "
                "in memory (%.0f bytes a node), more than this machine's %s\n",
                sub, option, nodes, cli_bytes(need, a, sizeof a),
                CLI_BYTES_PER_NODE, cli_bytes(have, b, sizeof b));
        return EXIT_RUNTIME;
    }
    return 0;
}

int cli_parse_bytes(const char *s, uint64_t *out)
{
    static const char units[] = "KMGT";
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    const char *u = *end ? strchr(units, *end) : NULL;
    if (*end && !u)
        return -1;
    if (u) {
        for (long k = u - units; k >= 0; k--)
            v *= 1024;
        end++;
        if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
            end += strlen(end);
    }
    if (*end || v > 0x1p62 || v < 1)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

const char *cli_bytes(double bytes, char *buf, size_t size)
{
    return commsched_format_bytes(bytes, buf, size);
}

const char *cli_time_ns(double ns, char *buf, size_t size)
{
    return commsched_format_time(ns, buf, size);
}

int cli_cost_setup(cli_cost *c, const char *sub, const char *device,
                   const char *model, const char *costs_trace)
{
    commsched_error err = {0};
    memset(c, 0, sizeof *c);
    commsched_cost_options_init(&c->opts);
    if (model && commsched_comm_model_parse(model, &c->opts.comm_model) != 0)
        return cli_usage_error(sub,
                               "unknown cost model \"%s\" (nccl, inductor)",
                               model);
    const char *name = device ? device : "h100";
    if (commsched_device_lookup(name, &c->device, &err) != COMMSCHED_OK ||
        commsched_costs_load_file(name, &c->measured, &err) != COMMSCHED_OK) {
        /* A located error names the profile file; a bad name does not. */
        cli_cost_fini(c);
        if (err.line > 0 || err.path[0] || err.status == COMMSCHED_EIO)
            return cli_report(device, &err);
        return cli_report(NULL, &err);
    }
    c->opts.device = &c->device;
    c->opts.measured = c->measured;
    if (costs_trace) {
        commsched_calibrate_options o;
        commsched_calibrate_options_init(&o);
        cli_import ci;
        cli_import_begin(&ci, &o.import, costs_trace);
        commsched_status st =
            commsched_calibrate(&costs_trace, 1, &o, &c->trace, NULL, &err);
        cli_import_end(&ci);
        if (st != COMMSCHED_OK) {
            cli_cost_fini(c);
            return cli_report(NULL, &err);
        }
        commsched_costs_set_fallback(c->trace, c->measured);
        c->opts.measured = c->trace;
        /* asked for by name: over the graph's own runtime_ns too */
        c->opts.measured_first = 1;
    }
    return 0;
}

void cli_cost_fini(cli_cost *c)
{
    commsched_costs_destroy(c->trace);
    commsched_costs_destroy(c->measured);
    c->trace = c->measured = NULL;
    c->opts.measured = NULL;
}

int cli_estimate(const commsched_graph *g, const cli_cost *c, double **runtime,
                 commsched_cost_source **sources)
{
    commsched_error err = {0};
    size_t n = commsched_graph_node_count(g);
    *runtime = malloc((n ? n : 1) * sizeof **runtime);
    if (sources)
        *sources = malloc((n ? n : 1) * sizeof **sources);
    if (!*runtime || (sources && !*sources)) {
        free(*runtime);
        *runtime = NULL;
        if (sources) {
            free(*sources);
            *sources = NULL;
        }
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (commsched_cost_graph(g, &c->opts, *runtime, sources ? *sources : NULL,
                             &err) != COMMSCHED_OK)
        return cli_report(NULL, &err);
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
