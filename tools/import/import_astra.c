/* commsched import astra FILE — ASTRA-sim 1.0 text workloads.
 *
 * The format (ASTRA-sim's README; ../shared/data/README.md): line 1 the
 * parallelism policy and optional "key: value" fields, line 2 the number of
 * layers, then one line per layer of 12 whitespace-separated fields:
 *   name reserved fwd_compute fwd_comm_type fwd_comm_bytes
 *   ig_compute ig_comm_type ig_comm_bytes wg_compute wg_comm_type
 *   wg_comm_bytes update_delay
 * Compute and the update delay are in cycles (--clock-ghz turns them into
 * nanoseconds), sizes in bytes.
 *
 * The step follows ASTRA-sim's training loop (Workload.cc): forward layer by
 * layer, each forward collective blocking before the next layer; backward
 * from the last layer, per layer the weight-gradient compute and its
 * collective, then the input-gradient compute and its collective (the first
 * layer has no input gradient, as in ASTRA-sim); then one update per layer,
 * which in ASTRA-sim waits for the layer's weight-gradient collective.
 * Collectives are waited right after they are issued (the naive order).
 * Which group a phase talks to follows ASTRA-sim's involved dimensions:
 * DATA: every phase over dp (all NPUs); MODEL: forward and input gradient
 * over mp (all NPUs), no weight-gradient sync; HYBRID_*: forward and input
 * gradient over mp, weight gradient over dp.
 *
 * Sizes: the format has none besides collective byte counts. A buffer a
 * collective moves gets that count; the rest (activations, gradients of
 * layers without a collective) are 0 bytes, and the importer says how many. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_TOKENS 64
#define MAX_NAME 256
/* Cycles stay exact in a double, and times within the format's runtime
 * limit at any --clock-ghz the CLI accepts (>= 1e-6). */
#define MAX_CYCLES (INT64_C(1) << 53)

typedef struct token {
    const char *s;
    size_t len;
    int col; /* 1-based byte column */
} token;

enum comm { C_NONE, C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_ALLTOALL };
static const char *const comm_names[] = {"NONE", "ALLREDUCE", "ALLGATHER",
                                         "REDUCESCATTER", "ALLTOALL"};

typedef struct layer {
    char *name;
    int line; /* in the file, for errors the builder finds */
    int64_t compute[3]; /* cycles: fwd, ig, wg */
    int comm[3];
    int64_t bytes[3];
    int64_t update;
} layer;

enum policy { P_DATA, P_MODEL, P_HYBRID };

typedef struct astra {
    const char *file; /* for messages */
    layer *layers;
    long n_layers;
    int policy;
    char policy_name[64];
    long mp;          /* from the header; 0: absent */
    long all_gpus;    /* from the header; 0: absent */
    int had_checkpoints;
} astra;

/* "FILE:LINE: msg" or "FILE:LINE:COL: msg"; always returns EXIT_INPUT. */
static int located(const char *file, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int located(const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    if (col > 0)
        fprintf(stderr, "commsched: %s:%d:%d: ", file, line, col);
    else
        fprintf(stderr, "commsched: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_INPUT;
}

/* Splits one line into whitespace-separated tokens. Returns the count,
 * or -1 when there are more than MAX_TOKENS. */
static int tokenize(const char *line, size_t len, token *tok)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)line[i]))
            i++;
        if (i >= len)
            break;
        size_t start = i;
        while (i < len && !isspace((unsigned char)line[i]))
            i++;
        if (n == MAX_TOKENS)
            return -1;
        tok[n].s = line + start;
        tok[n].len = i - start;
        tok[n].col = (int)start + 1;
        n++;
    }
    return n;
}

static int tok_eq(const token *t, const char *s)
{
    return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

/* A decimal integer; *ok is 0 when the token is not one or overflows. */
static int64_t tok_int(const token *t, int *ok)
{
    char buf[32];
    *ok = 0;
    if (t->len == 0 || t->len >= sizeof buf)
        return 0;
    memcpy(buf, t->s, t->len);
    buf[t->len] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end != '\0' || errno == ERANGE || !(isdigit((unsigned char)buf[0]) ||
                                             ((buf[0] == '-' || buf[0] == '+') &&
                                              isdigit((unsigned char)buf[1]))))
        return 0;
    *ok = 1;
    return (int64_t)v;
}

static int parse_header(astra *a, int line_no, const token *tok, int n)
{
    static const struct {
        const char *name;
        int policy;
    } policies[] = {
        {"DATA", P_DATA},
        {"MODEL", P_MODEL},
        {"HYBRID_TRANSFORMER", P_HYBRID},
        {"HYBRID_TRANSFORMER_FWD_IN_BCKWD", P_HYBRID},
        {"HYBRID_DATA_MODEL", P_HYBRID},
        {"HYBRID_MODEL_DATA", P_HYBRID},
    };
    if (n == 0)
        return located(a->file, line_no, 0,
                       "expected the parallelism policy (DATA, MODEL, "
                       "HYBRID_TRANSFORMER, HYBRID_DATA_MODEL, ...)");
    a->policy = -1;
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        if (tok_eq(&tok[0], policies[i].name)) {
            a->policy = policies[i].policy;
            snprintf(a->policy_name, sizeof a->policy_name, "%s",
                     policies[i].name);
        }
    if (a->policy < 0)
        return located(a->file, line_no, tok[0].col,
                       "unsupported parallelism policy \"%.*s\" (supported: "
                       "DATA, MODEL, HYBRID_TRANSFORMER, "
                       "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DATA_MODEL, "
                       "HYBRID_MODEL_DATA)",
                       (int)tok[0].len, tok[0].s);
    for (int i = 1; i < n; i++) {
        const token *k = &tok[i];
        if (k->len < 2 || k->s[k->len - 1] != ':')
            return located(a->file, line_no, k->col,
                           "expected a \"field:\" name, got \"%.*s\"",
                           (int)k->len, k->s);
        if (i + 1 >= n)
            return located(a->file, line_no, k->col,
                           "\"%.*s\" has no value", (int)k->len, k->s);
        int ok;
        int64_t v = tok_int(&tok[i + 1], &ok);
        if (!ok || v < 0)
            return located(a->file, line_no, tok[i + 1].col,
                           "%.*s expects a non-negative integer, got "
                           "\"%.*s\"",
                           (int)(k->len - 1), k->s, (int)tok[i + 1].len,
                           tok[i + 1].s);
        if ((tok_eq(k, "model_parallel_NPU_group:") ||
             tok_eq(k, "all_gpus:")) &&
            v > COMMSCHED_MAX_GROUP_SIZE)
            return located(a->file, line_no, tok[i + 1].col,
                           "%.*s is beyond the %u ranks a group may have",
                           (int)(k->len - 1), k->s, COMMSCHED_MAX_GROUP_SIZE);
        if (tok_eq(k, "model_parallel_NPU_group:")) {
            if (v < 1)
                return located(a->file, line_no, tok[i + 1].col,
                               "model_parallel_NPU_group must be at least 1");
            a->mp = (long)v;
            i++;
        } else if (tok_eq(k, "all_gpus:")) {
            if (v < 1)
                return located(a->file, line_no, tok[i + 1].col,
                               "all_gpus must be at least 1");
            a->all_gpus = (long)v;
            i++;
        } else if (tok_eq(k, "checkpoints:") ||
                   tok_eq(k, "checkpoint_initiates:")) {
            /* a count followed by that many layer indices; recomputation
             * is not modelled (reported) */
            a->had_checkpoints = 1;
            for (int64_t j = 0; j < v; j++) {
                if (i + 2 + j >= n)
                    return located(a->file, line_no, k->col,
                                   "%.*s lists fewer than %lld layers",
                                   (int)(k->len - 1), k->s, (long long)v);
                int ok2;
                (void)tok_int(&tok[i + 2 + j], &ok2);
                if (!ok2)
                    return located(a->file, line_no, tok[i + 2 + j].col,
                                   "expected a layer index, got \"%.*s\"",
                                   (int)tok[i + 2 + j].len, tok[i + 2 + j].s);
            }
            i += 1 + (int)v;
        } else {
            return located(a->file, line_no, k->col,
                           "unknown header field \"%.*s\" (known: "
                           "model_parallel_NPU_group, all_gpus, checkpoints, "
                           "checkpoint_initiates)",
                           (int)(k->len - 1), k->s);
        }
    }
    return 0;
}

static int parse_layer(astra *a, int line_no, const token *tok, int n,
                       layer *l)
{
    static const char *const what[12] = {
        "name", "reserved", "forward compute", "forward comm type",
        "forward comm bytes", "input-gradient compute",
        "input-gradient comm type", "input-gradient comm bytes",
        "weight-gradient compute", "weight-gradient comm type",
        "weight-gradient comm bytes", "update delay"};
    if (n != 12) {
        if (n > 12)
            return located(a->file, line_no, tok[12].col,
                           "a layer has 12 fields, this line has %d", n);
        return located(a->file, line_no, 0,
                       "a layer has 12 fields (name, reserved, then compute, "
                       "comm type and comm bytes for forward, input gradient "
                       "and weight gradient, then the update delay); this "
                       "line has %d",
                       n);
    }
    int ok;
    (void)tok_int(&tok[1], &ok);
    if (!ok)
        return located(a->file, line_no, tok[1].col,
                       "reserved field: expected an integer (-1), got "
                       "\"%.*s\"",
                       (int)tok[1].len, tok[1].s);
    for (int phase = 0; phase < 3; phase++) {
        const token *c = &tok[2 + 3 * phase], *t = c + 1, *b = c + 2;
        int k = 2 + 3 * phase;
        l->compute[phase] = tok_int(c, &ok);
        if (!ok || l->compute[phase] < 0)
            return located(a->file, line_no, c->col,
                           "%s: expected a non-negative integer (cycles), got "
                           "\"%.*s\"",
                           what[k], (int)c->len, c->s);
        if (l->compute[phase] > MAX_CYCLES)
            return located(a->file, line_no, c->col,
                           "%s: %.*s cycles is beyond the limit of 2^53",
                           what[k], (int)c->len, c->s);
        l->comm[phase] = -1;
        for (int m = 0; m < 5; m++)
            if (tok_eq(t, comm_names[m]))
                l->comm[phase] = m;
        if (l->comm[phase] < 0)
            return located(a->file, line_no, t->col,
                           "%s: unknown type \"%.*s\" (NONE, ALLREDUCE, "
                           "ALLGATHER, REDUCESCATTER, ALLTOALL)",
                           what[k + 1], (int)t->len, t->s);
        l->bytes[phase] = tok_int(b, &ok);
        if (!ok || l->bytes[phase] < 0)
            return located(a->file, line_no, b->col,
                           "%s: expected a non-negative integer, got "
                           "\"%.*s\"",
                           what[k + 2], (int)b->len, b->s);
        if (l->bytes[phase] > COMMSCHED_MAX_SIZE)
            return located(a->file, line_no, b->col,
                           "%s: %.*s bytes is beyond the format's limit of "
                           "2^53",
                           what[k + 2], (int)b->len, b->s);
    }
    l->update = tok_int(&tok[11], &ok);
    if (!ok || l->update < 0)
        return located(a->file, line_no, tok[11].col,
                       "update delay: expected a non-negative integer "
                       "(cycles), got \"%.*s\"",
                       (int)tok[11].len, tok[11].s);
    if (l->update > MAX_CYCLES)
        return located(a->file, line_no, tok[11].col,
                       "update delay: %.*s cycles is beyond the limit of 2^53",
                       (int)tok[11].len, tok[11].s);
    /* Node names are "L<i>.<name>.<suffix>" in 512-byte buffers: a longer
     * name would be cut, perhaps inside a character. */
    if (tok[0].len > MAX_NAME)
        return located(a->file, line_no, tok[0].col,
                       "layer name longer than %d bytes", MAX_NAME);
    l->name = malloc(tok[0].len + 1);
    if (!l->name) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    memcpy(l->name, tok[0].s, tok[0].len);
    l->name[tok[0].len] = '\0';
    l->line = line_no;
    /* The graph holds UTF-8 names (it is saved as JSON). */
    if (!cli_utf8_valid(l->name))
        return located(a->file, line_no, tok[0].col,
                       "layer name is not valid UTF-8");
    return 0;
}

/* Reads the whole input ("-" is standard input). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int parse(astra *a, const char *text, size_t len)
{
    token tok[MAX_TOKENS];
    int line_no = 0, state = 0, rc = 0, last_line = 0;
    long seen = 0;
    size_t pos = 0;
    while (pos < len || (pos == len && state < 2 && line_no == 0)) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        line_no++;
        int n = tokenize(line, ll, tok);
        if (n < 0)
            return located(a->file, line_no, 0, "too many fields");
        if (n == 0 && state != 0)
            continue; /* blank lines between layers are harmless */
        if (state == 0) {
            if ((rc = parse_header(a, line_no, tok, n)) != 0)
                return rc;
            state = 1;
        } else if (state == 1) {
            int ok;
            int64_t v = tok_int(&tok[0], &ok);
            if (!ok || v < 1 || v > 10000000)
                return located(a->file, line_no, tok[0].col,
                               "expected the number of layers (a positive "
                               "integer), got \"%.*s\"",
                               (int)tok[0].len, tok[0].s);
            if (n > 1)
                return located(a->file, line_no, tok[1].col,
                               "unexpected \"%.*s\" after the layer count",
                               (int)tok[1].len, tok[1].s);
            a->n_layers = (long)v;
            a->layers = calloc((size_t)v, sizeof *a->layers);
            if (!a->layers) {
                fprintf(stderr, "commsched: out of memory\n");
                return EXIT_RUNTIME;
            }
            last_line = line_no;
            state = 2;
        } else {
            if (seen == a->n_layers)
                return located(a->file, line_no, tok[0].col,
                               "more layer lines than the %ld declared on "
                               "line %d",
                               a->n_layers, last_line);
            if ((rc = parse_layer(a, line_no, tok, n, &a->layers[seen])) != 0)
                return rc;
            seen++;
        }
        if (pos >= len)
            break;
    }
    if (state == 0)
        return located(a->file, 1, 0,
                       "empty file: expected the parallelism policy");
    if (state == 1)
        return located(a->file, line_no + 1, 0,
                       "expected the number of layers");
    if (seen < a->n_layers)
        return located(a->file, last_line, 0,
                       "declares %ld layers but the file has %ld", a->n_layers,
                       seen);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Graph                                                                   */
/* ---------------------------------------------------------------------- */

typedef struct bctx {
    commsched_builder *b;
    commsched_error err;
    double ns_per_cycle;
    long zero_sized;
    /* The file line each graph node comes from, so an error the builder
     * finds names the source line rather than the generated node. */
    int line;
    int *node_line;
    size_t n_nodes, cap_nodes;
    int lines_lost; /* the table could not grow: errors name the node */
} bctx;

static void add_node(bctx *c, const commsched_node_spec *s)
{
    if (!c->lines_lost && c->n_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? 2 * c->cap_nodes : 64;
        int *p = realloc(c->node_line, cap * sizeof *p);
        if (p) {
            c->node_line = p;
            c->cap_nodes = cap;
        } else {
            c->lines_lost = 1;
        }
    }
    if (!c->lines_lost)
        c->node_line[c->n_nodes++] = c->line;
    (void)commsched_builder_add_node(c->b, s, &c->err);
}

/* Reports a builder error at the line the node, input or group came from:
 * "file.txt:3: size ... (generated nodes[5].outputs[0].size)". */
static int report_build_error(const astra *a, const bctx *c)
{
    size_t k;
    int line = 0;
    if (sscanf(c->err.path, "nodes[%zu]", &k) == 1 && !c->lines_lost &&
        k < c->n_nodes)
        line = c->node_line[k];
    else if (sscanf(c->err.path, "inputs[%zu]", &k) == 1 && k >= 1 &&
             k <= (size_t)a->n_layers)
        line = a->layers[k - 1].line; /* inputs: batch, then the weights */
    else if (strncmp(c->err.path, "groups", 6) == 0)
        line = 1; /* sizes from the header (or --npus / --mp) */
    if (line == 0 || c->err.status == COMMSCHED_ENOMEM)
        return cli_report(a->file, &c->err);
    located(a->file, line, 0, "%s (generated %s)", c->err.text,
            c->err.path);
    return cli_exit_code(c->err.status);
}

static void compute(bctx *c, const char *name, const char *op,
                    const char *const *in, size_t n_in, const char *out,
                    int64_t size, double cycles)
{
    commsched_output_spec o = {out, size, NULL};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = op;
    s.inputs = in;
    s.n_inputs = n_in;
    s.outputs = out ? &o : NULL;
    s.n_outputs = out ? 1 : 0;
    s.runtime_ns = cycles * c->ns_per_cycle;
    s.flops = s.bytes = -1;
    if (out && size == 0)
        c->zero_sized++;
    add_node(c, &s);
}

static const char *const group_of[] = {"dp", "mp"};

/* A collective of `bytes` on group g reading `in`, waited at once; the
 * wait's alias is named `alias`. */
static void collective(bctx *c, const char *name, int comm, const char *group,
                       const char *in, int64_t bytes, const char *alias)
{
    static const commsched_coll_op ops[] = {
        COMMSCHED_COLL_BARRIER, COMMSCHED_COLL_ALL_REDUCE,
        COMMSCHED_COLL_ALL_GATHER, COMMSCHED_COLL_REDUCE_SCATTER,
        COMMSCHED_COLL_ALL_TO_ALL};
    char out[512], wait[512];
    snprintf(out, sizeof out, "%s.out", name);
    snprintf(wait, sizeof wait, "%s.wait", name);
    const char *inputs[1] = {in};
    commsched_output_spec o = {out, bytes, NULL};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = commsched_coll_op_str(ops[comm]);
    s.group = group;
    if (comm == C_ALLREDUCE || comm == C_REDUCESCATTER)
        s.reduce_op = COMMSCHED_REDUCE_SUM;
    s.inputs = inputs;
    s.n_inputs = 1;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    add_node(c, &s);
    const char *win[1] = {out};
    commsched_output_spec wo = {alias, 0, out};
    commsched_node_spec w = {0};
    w.name = wait;
    w.kind = COMMSCHED_NODE_WAIT;
    w.op = "wait";
    w.inputs = win;
    w.n_inputs = 1;
    w.outputs = &wo;
    w.n_outputs = 1;
    w.runtime_ns = w.flops = w.bytes = -1;
    add_node(c, &w);
}

/* The size of the tensor a collective of `bytes` reads: an all-gather
 * reads one rank's share, everything else the full count. */
static int64_t coll_input(int comm, int64_t bytes, long ranks)
{
    return comm == C_ALLGATHER ? (bytes + ranks - 1) / ranks : bytes;
}

static int64_t coll_output(int comm, int64_t bytes, long ranks)
{
    return comm == C_REDUCESCATTER ? (bytes + ranks - 1) / ranks : bytes;
}

/* Which group a phase (0 fwd, 1 ig, 2 wg) uses; -1: none. */
static int phase_group(int policy, int phase)
{
    if (policy == P_DATA)
        return 0;
    if (policy == P_MODEL)
        return phase == 2 ? -1 : 1;
    return phase == 2 ? 0 : 1;
}

static int build(astra *a, const import_options *o, commsched_graph **out)
{
    bctx c;
    memset(&c, 0, sizeof c);
    c.ns_per_cycle = 1.0 / o->clock_ghz;
    long npus = o->npus > 0 ? o->npus : a->all_gpus > 0 ? a->all_gpus : 8;
    long mp = o->mp > 0 ? o->mp : a->mp;
    if (a->policy == P_DATA)
        mp = 1;
    else if (a->policy == P_MODEL)
        mp = npus;
    else if (mp <= 0)
        mp = npus >= 2 ? 2 : 1;
    if (mp > npus || npus % mp != 0) {
        fprintf(stderr,
                "commsched import: %ld NPUs do not split into model-parallel "
                "groups of %ld (use --npus / --mp)\n",
                npus, mp);
        return EXIT_INPUT;
    }
    long dp = npus / mp;
    long ranks[2] = {a->policy == P_DATA ? npus : dp, mp};
    char gname[256];
    snprintf(gname, sizeof gname, "astra-%s", a->policy_name);
    if (commsched_builder_create(gname, &c.b, &c.err) != COMMSCHED_OK)
        return cli_report("import", &c.err);
    /* GPUs per host 8, model parallelism innermost. */
    for (int k = 0; k < 2; k++) {
        int used = 0;
        for (long i = 0; i < a->n_layers && !used; i++)
            for (int ph = 0; ph < 3; ph++)
                if (a->layers[i].comm[ph] != C_NONE &&
                    phase_group(a->policy, ph) == k)
                    used = 1;
        if (!used)
            continue;
        long stride = k == 0 ? mp : 1;
        long hosts = (ranks[k] * stride + 7) / 8;
        if (hosts > ranks[k])
            hosts = ranks[k];
        (void)commsched_builder_add_group(c.b, group_of[k], ranks[k], hosts,
                                          &c.err);
    }
    (void)commsched_builder_add_input(c.b, "batch", 0, 1, &c.err);
    c.zero_sized++;
    char name[512], buf[512], out_name[512], act[512], grad[512];
    char (*weights)[512] = calloc((size_t)a->n_layers, sizeof *weights);
    char (*wgrads)[512] = calloc((size_t)a->n_layers, sizeof *wgrads);
    char (*inputs)[512] = calloc((size_t)a->n_layers, sizeof *inputs);
    int rc = 0;
    if (!weights || !wgrads || !inputs) {
        fprintf(stderr, "commsched: out of memory\n");
        rc = EXIT_RUNTIME;
        goto cleanup;
    }
    for (long i = 0; i < a->n_layers; i++) {
        /* Weights are outside the step: a non-freeable input sized like
         * the weight gradient the file gives. */
        snprintf(weights[i], sizeof weights[i], "L%ld.%s.weight", i,
                 a->layers[i].name);
        (void)commsched_builder_add_input(c.b, weights[i],
                                          a->layers[i].bytes[2], 0, &c.err);
    }
    /* Forward. */
    snprintf(act, sizeof act, "batch");
    for (long i = 0; i < a->n_layers; i++) {
        const layer *l = &a->layers[i];
        c.line = l->line;
        int g = phase_group(a->policy, 0);
        memcpy(inputs[i], act, sizeof act);
        snprintf(name, sizeof name, "L%ld.%s.fwd", i, l->name);
        const char *in[2] = {act, weights[i]};
        int has = l->comm[0] != C_NONE && g >= 0;
        int64_t sz = has ? coll_input(l->comm[0], l->bytes[0], ranks[g]) : 0;
        compute(&c, name, "forward", in, 2, name, sz, (double)l->compute[0]);
        if (has) {
            snprintf(buf, sizeof buf, "L%ld.%s.fwd_comm", i, l->name);
            snprintf(out_name, sizeof out_name, "L%ld.%s.act", i, l->name);
            collective(&c, buf, l->comm[0], group_of[g], name,
                       coll_output(l->comm[0], l->bytes[0], ranks[g]),
                       out_name);
            memcpy(act, out_name, sizeof act);
        } else {
            memcpy(act, name, sizeof act);
        }
    }
    /* Backward: the gradient arriving at the last layer is the loss's
     * (the last activation stands for it). */
    memcpy(grad, act, sizeof grad);
    for (long i = a->n_layers - 1; i >= 0; i--) {
        const layer *l = &a->layers[i];
        c.line = l->line;
        int g = phase_group(a->policy, 2);
        int has = l->comm[2] != C_NONE && g >= 0;
        snprintf(name, sizeof name, "L%ld.%s.wg", i, l->name);
        const char *in[2] = {grad, inputs[i]};
        int64_t sz = has ? coll_input(l->comm[2], l->bytes[2], ranks[g]) : 0;
        compute(&c, name, "weight_gradient", in, 2, name, sz,
                (double)l->compute[2]);
        if (has) {
            snprintf(buf, sizeof buf, "L%ld.%s.wg_comm", i, l->name);
            snprintf(wgrads[i], sizeof wgrads[i], "L%ld.%s.wgrad", i,
                     l->name);
            collective(&c, buf, l->comm[2], group_of[g], name,
                       coll_output(l->comm[2], l->bytes[2], ranks[g]),
                       wgrads[i]);
        } else {
            memcpy(wgrads[i], name, sizeof name);
        }
        if (i == 0)
            break; /* ASTRA-sim runs no input gradient for layer 0 */
        g = phase_group(a->policy, 1);
        has = l->comm[1] != C_NONE && g >= 0;
        snprintf(name, sizeof name, "L%ld.%s.ig", i, l->name);
        in[1] = weights[i];
        sz = has ? coll_input(l->comm[1], l->bytes[1], ranks[g]) : 0;
        compute(&c, name, "input_gradient", in, 2, name, sz,
                (double)l->compute[1]);
        if (has) {
            snprintf(buf, sizeof buf, "L%ld.%s.ig_comm", i, l->name);
            snprintf(out_name, sizeof out_name, "L%ld.%s.igrad", i, l->name);
            collective(&c, buf, l->comm[1], group_of[g], name,
                       coll_output(l->comm[1], l->bytes[1], ranks[g]),
                       out_name);
            memcpy(grad, out_name, sizeof grad);
        } else {
            memcpy(grad, name, sizeof grad);
        }
    }
    /* Updates, in layer order (the next forward needs them in that order):
     * in place on the weight, after its gradient is reduced. */
    for (long i = 0; i < a->n_layers; i++) {
        const layer *l = &a->layers[i];
        c.line = l->line;
        snprintf(name, sizeof name, "L%ld.%s.update", i, l->name);
        snprintf(out_name, sizeof out_name, "L%ld.%s.weight.new", i, l->name);
        const char *in[2] = {wgrads[i], weights[i]};
        commsched_output_spec os = {out_name, 0, weights[i]};
        commsched_node_spec s = {0};
        s.name = name;
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.op = "update";
        s.inputs = in;
        s.n_inputs = 2;
        s.outputs = &os;
        s.n_outputs = 1;
        s.runtime_ns = (double)l->update * c.ns_per_cycle;
        s.flops = s.bytes = -1;
        add_node(&c, &s);
        (void)commsched_builder_add_output(c.b, out_name, &c.err);
    }
    if (commsched_builder_finish(c.b, 0, out, &c.err) != COMMSCHED_OK) {
        c.b = NULL;
        rc = report_build_error(a, &c);
        goto cleanup;
    }
    c.b = NULL;
    fprintf(stderr,
            "commsched import: note: %s: %s, %ld layers, %ld NPUs (dp %ld, mp "
            "%ld), %.3g GHz; the format gives no tensor sizes: %ld buffer%s "
            "no collective moves %s 0 bytes%s\n",
            a->file, a->policy_name, a->n_layers, npus,
            a->policy == P_DATA ? npus : dp, mp, o->clock_ghz, c.zero_sized,
            c.zero_sized == 1 ? "" : "s", c.zero_sized == 1 ? "is" : "are",
            a->had_checkpoints ? "; checkpoint fields read but recomputation "
                                 "is not modelled"
                               : "");
cleanup:
    commsched_builder_destroy(c.b);
    free(c.node_line);
    free(weights);
    free(wgrads);
    free(inputs);
    return rc;
}

int import_astra(const char *path, const import_options *o,
                 commsched_graph **out)
{
    astra a;
    memset(&a, 0, sizeof a);
    a.file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    size_t len = 0;
    char *text = slurp(path, &len);
    if (!text) {
        fprintf(stderr, "commsched: %s: cannot read: %s\n", a.file,
                strerror(errno));
        return EXIT_INPUT;
    }
    int rc = parse(&a, text, len);
    if (rc == 0)
        rc = build(&a, o, out);
    for (long i = 0; i < a.n_layers && a.layers; i++)
        free(a.layers[i].name);
    free(a.layers);
    free(text);
    return rc;
}
