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

#include "import_internal.h"

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

enum comm {
    C_NONE,
    C_ALLREDUCE,
    C_ALLGATHER,
    C_REDUCESCATTER,
    C_ALLTOALL,
    C_ALLREDUCEALLTOALL
};
#define N_COMM 6
static const char *const comm_names[N_COMM] = {
    "NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL",
    "ALLREDUCEALLTOALL"};

enum phase { FWD, IG, WG };

/* The parallelism policies of ASTRA-sim 1.0's Workload.cc; which loop runs
 * the step and over which dimensions each phase talks is in
 * astra_policies[] below. */
enum policy {
    P_DATA,
    P_MODEL,
    P_HYBRID_DATA_MODEL,
    P_HYBRID_MODEL_DATA,
    P_TRANSFORMER,
    P_TRANSFORMER_FIB,
    P_DLRM,
    P_DLRM_ENHANCED,
    P_CUSTOMIZED,
    P_MICRO,
    P_INFERENCE
};

typedef struct layer {
    char *name;
    int line; /* in the file, for errors the builder finds */
    int64_t compute[3]; /* cycles: fwd, ig, wg */
    int comm[3];
    int64_t bytes[3];
    int bytes_col[3]; /* their columns, for errors found once k is known */
    int64_t update;
    int policy; /* HYBRID_CUSTOMIZED: this layer's own policy; else -1 */
    int checkpoint, initiates; /* HYBRID_TRANSFORMER_FWD_IN_BCKWD */
} layer;

typedef struct astra {
    const char *file; /* for messages */
    import_diag *d;   /* where failures and notes go */
    layer *layers;
    long n_layers;
    int policy;
    const char *policy_name;
    long mp;          /* from the header; 0: absent */
    long all_gpus;    /* from the header; 0: absent */
    long last_bottom; /* HYBRID_DLRM*: the header's last bottom layer */
    int last_bottom_col;
    /* checkpoints / checkpoint_initiates: layer indices and their columns
     * on line 1, checked against the layer count once it is known */
    long *marks;
    int *mark_cols, *mark_kind;
    int n_marks;
} astra;

/* What the format defines, one row per policy: `import --help` prints
 * this table (import_astra_policies), the parser reads it. */
static const struct {
    const char *name;
    int policy;
    const char *what;
} astra_policies[] = {
    {"DATA", P_DATA, "weight gradients over all NPUs"},
    {"MODEL", P_MODEL, "forward and input gradients over all NPUs"},
    {"HYBRID_DATA_MODEL", P_HYBRID_DATA_MODEL,
     "model parallel inner (--mp), data outer"},
    {"HYBRID_MODEL_DATA", P_HYBRID_MODEL_DATA,
     "data parallel inner, model outer (--mp)"},
    {"HYBRID_TRANSFORMER", P_TRANSFORMER,
     "as HYBRID_DATA_MODEL, input-gradient collectives blocking"},
    {"HYBRID_TRANSFORMER_FWD_IN_BCKWD", P_TRANSFORMER_FIB,
     "HYBRID_TRANSFORMER with activation recomputation"},
    {"HYBRID_DLRM", P_DLRM,
     "data parallel, layer 0's all-to-all around the bottom MLP"},
    {"HYBRID_DLRM_ENHANCED", P_DLRM_ENHANCED,
     "HYBRID_DLRM, embedding gradient waited at the end"},
    {"HYBRID_CUSTOMIZED", P_CUSTOMIZED,
     "each layer names its own policy (13th field)"},
    {"MICRO", P_MICRO, "layer 0's weight-gradient collective alone"},
    {"DISTRIBUTED_INFERENCE", P_INFERENCE, "forward pass only"},
};
#define N_POLICIES (sizeof astra_policies / sizeof astra_policies[0])

const char *commsched_import_astra_policy(size_t i, const char **what)
{
    if (i >= N_POLICIES)
        return NULL;
    if (what)
        *what = astra_policies[i].what;
    return astra_policies[i].name;
}

static int find_policy(const token *t)
{
    for (size_t i = 0; i < N_POLICIES; i++)
        if (t->len == strlen(astra_policies[i].name) &&
            memcmp(t->s, astra_policies[i].name, t->len) == 0)
            return (int)i;
    return -1;
}

/* Records "FILE:LINE: msg" or "FILE:LINE:COL: msg" (ESCHEMA, or st
 * when given: a builder's status); returns its code. */
static int located_st(const astra *a, commsched_status st, int line, int col,
                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int located_st(const astra *a, commsched_status st, int line, int col,
                      const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (col > 0)
        return import_fail(a->d, st, "%s:%d:%d: %s", a->file, line, col, text);
    return import_fail(a->d, st, "%s:%d: %s", a->file, line, text);
}
#define located(a, line, col, ...)                                             \
    located_st(a, COMMSCHED_ESCHEMA, line, col, __VA_ARGS__)

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

/* Remembers a checkpoint (kind 0) or initiating (kind 1) layer index. */
static int add_mark(astra *a, long v, int col, int kind)
{
    if (a->n_marks % 16 == 0) {
        size_t cap = (size_t)a->n_marks + 16;
        long *m = realloc(a->marks, cap * sizeof *m);
        if (m)
            a->marks = m;
        int *c = realloc(a->mark_cols, cap * sizeof *c);
        if (c)
            a->mark_cols = c;
        int *k = realloc(a->mark_kind, cap * sizeof *k);
        if (k)
            a->mark_kind = k;
        if (!m || !c || !k) {
            return import_fail(a->d, COMMSCHED_ENOMEM, "out of memory");
        }
    }
    a->marks[a->n_marks] = v;
    a->mark_cols[a->n_marks] = col;
    a->mark_kind[a->n_marks] = kind;
    a->n_marks++;
    return 0;
}

static int parse_header(astra *a, int line_no, const token *tok, int n)
{
    int rc;
    if (n == 0)
        return located(a, line_no, 0,
                       "expected the parallelism policy (DATA, MODEL, "
                       "HYBRID_TRANSFORMER, HYBRID_DATA_MODEL, ...)");
    int k = find_policy(&tok[0]);
    if (k < 0) {
        char list[512];
        size_t used = 0;
        for (size_t i = 0; i < N_POLICIES; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                     i ? ", " : "", astra_policies[i].name);
        return located(a, line_no, tok[0].col,
                       "unsupported parallelism policy \"%.*s\" (supported: "
                       "%s)",
                       (int)tok[0].len, tok[0].s, list);
    }
    a->policy = astra_policies[k].policy;
    a->policy_name = astra_policies[k].name;
    int i = 1;
    if (a->policy == P_DLRM || a->policy == P_DLRM_ENHANCED) {
        /* ASTRA-sim reads the last bottom-MLP layer right after the name */
        int ok = 0;
        int64_t v = i < n ? tok_int(&tok[i], &ok) : 0;
        if (!ok || v < 0)
            return located(a, line_no, i < n ? tok[i].col : 0,
                           "%s expects the index of the last bottom-MLP "
                           "layer after the policy",
                           a->policy_name);
        if (v > 10000000)
            return located(a, line_no, tok[i].col,
                           "last bottom-MLP layer %lld is beyond the layer "
                           "limit",
                           (long long)v);
        a->last_bottom = (long)v;
        a->last_bottom_col = tok[i].col;
        i++;
    }
    for (; i < n; i++) {
        const token *key = &tok[i];
        if (key->len < 2 || key->s[key->len - 1] != ':')
            return located(a, line_no, key->col,
                           "expected a \"field:\" name, got \"%.*s\"",
                           (int)key->len, key->s);
        if (i + 1 >= n)
            return located(a, line_no, key->col,
                           "\"%.*s\" has no value", (int)key->len, key->s);
        int ok;
        int64_t v = tok_int(&tok[i + 1], &ok);
        if (!ok || v < 0)
            return located(a, line_no, tok[i + 1].col,
                           "%.*s expects a non-negative integer, got "
                           "\"%.*s\"",
                           (int)(key->len - 1), key->s, (int)tok[i + 1].len,
                           tok[i + 1].s);
        if ((tok_eq(key, "model_parallel_NPU_group:") ||
             tok_eq(key, "all_gpus:")) &&
            v > COMMSCHED_MAX_GROUP_SIZE)
            return located(a, line_no, tok[i + 1].col,
                           "%.*s is beyond the %u ranks a group may have",
                           (int)(key->len - 1), key->s,
                           COMMSCHED_MAX_GROUP_SIZE);
        if (tok_eq(key, "model_parallel_NPU_group:")) {
            if (v < 1)
                return located(a, line_no, tok[i + 1].col,
                               "model_parallel_NPU_group must be at least 1");
            a->mp = (long)v;
            i++;
        } else if (tok_eq(key, "all_gpus:")) {
            if (v < 1)
                return located(a, line_no, tok[i + 1].col,
                               "all_gpus must be at least 1");
            a->all_gpus = (long)v;
            i++;
        } else if (tok_eq(key, "checkpoints:") ||
                   tok_eq(key, "checkpoint_initiates:")) {
            /* a count followed by that many layer indices */
            int kind = tok_eq(key, "checkpoint_initiates:");
            for (int64_t j = 0; j < v; j++) {
                if (i + 2 + j >= n)
                    return located(a, line_no, key->col,
                                   "%.*s lists fewer than %lld layers",
                                   (int)(key->len - 1), key->s,
                                   (long long)v);
                const token *t = &tok[i + 2 + j];
                int ok2;
                int64_t l = tok_int(t, &ok2);
                if (!ok2 || l < 0 || l > 10000000)
                    return located(a, line_no, t->col,
                                   "expected a layer index, got \"%.*s\"",
                                   (int)t->len, t->s);
                if ((rc = add_mark(a, (long)l, t->col, kind)) != 0)
                    return rc;
            }
            i += 1 + (int)v;
        } else {
            return located(a, line_no, key->col,
                           "unknown header field \"%.*s\" (known: "
                           "model_parallel_NPU_group, all_gpus, checkpoints, "
                           "checkpoint_initiates)",
                           (int)(key->len - 1), key->s);
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
    int want = a->policy == P_CUSTOMIZED ? 13 : 12;
    if (n != want) {
        if (n > want)
            return located(a, line_no, tok[want].col,
                           "a layer has %d fields, this line has %d", want,
                           n);
        if (want == 13 && n == 12)
            return located(a, line_no, 0,
                           "HYBRID_CUSTOMIZED: a layer names its own "
                           "policy in a 13th field; this line has 12");
        return located(a, line_no, 0,
                       "a layer has %d fields (name, reserved, then compute, "
                       "comm type and comm bytes for forward, input gradient "
                       "and weight gradient, then the update delay%s); this "
                       "line has %d",
                       want, want == 13 ? ", then the layer's policy" : "",
                       n);
    }
    l->policy = -1;
    if (want == 13) {
        int k = find_policy(&tok[12]);
        if (k < 0 || astra_policies[k].policy == P_CUSTOMIZED)
            return located(a, line_no, tok[12].col,
                           "layer policy \"%.*s\" is not one a layer can "
                           "take (DATA, MODEL, HYBRID_*, ...)",
                           (int)tok[12].len, tok[12].s);
        l->policy = astra_policies[k].policy;
    }
    int ok;
    (void)tok_int(&tok[1], &ok);
    if (!ok)
        return located(a, line_no, tok[1].col,
                       "reserved field: expected an integer (-1), got "
                       "\"%.*s\"",
                       (int)tok[1].len, tok[1].s);
    for (int phase = 0; phase < 3; phase++) {
        const token *c = &tok[2 + 3 * phase], *t = c + 1, *b = c + 2;
        int k = 2 + 3 * phase;
        l->compute[phase] = tok_int(c, &ok);
        if (!ok || l->compute[phase] < 0)
            return located(a, line_no, c->col,
                           "%s: expected a non-negative integer (cycles), got "
                           "\"%.*s\"",
                           what[k], (int)c->len, c->s);
        if (l->compute[phase] > MAX_CYCLES)
            return located(a, line_no, c->col,
                           "%s: %.*s cycles is beyond the limit of 2^53",
                           what[k], (int)c->len, c->s);
        l->comm[phase] = -1;
        for (int m = 0; m < N_COMM; m++)
            if (tok_eq(t, comm_names[m]))
                l->comm[phase] = m;
        if (l->comm[phase] < 0)
            return located(a, line_no, t->col,
                           "%s: unknown type \"%.*s\" (NONE, ALLREDUCE, "
                           "ALLGATHER, REDUCESCATTER, ALLTOALL, "
                           "ALLREDUCEALLTOALL)",
                           what[k + 1], (int)t->len, t->s);
        l->bytes[phase] = tok_int(b, &ok);
        l->bytes_col[phase] = b->col;
        if (!ok || l->bytes[phase] < 0)
            return located(a, line_no, b->col,
                           "%s: expected a non-negative integer, got "
                           "\"%.*s\"",
                           what[k + 2], (int)b->len, b->s);
        if (l->bytes[phase] > COMMSCHED_MAX_SIZE)
            return located(a, line_no, b->col,
                           "%s: %.*s bytes is beyond the format's limit of "
                           "2^53",
                           what[k + 2], (int)b->len, b->s);
    }
    l->update = tok_int(&tok[11], &ok);
    if (!ok || l->update < 0)
        return located(a, line_no, tok[11].col,
                       "update delay: expected a non-negative integer "
                       "(cycles), got \"%.*s\"",
                       (int)tok[11].len, tok[11].s);
    if (l->update > MAX_CYCLES)
        return located(a, line_no, tok[11].col,
                       "update delay: %.*s cycles is beyond the limit of 2^53",
                       (int)tok[11].len, tok[11].s);
    /* Node names are "L<i>.<name>.<suffix>" in 512-byte buffers: a longer
     * name would be cut, perhaps inside a character. */
    if (tok[0].len > MAX_NAME)
        return located(a, line_no, tok[0].col,
                       "layer name longer than %d bytes", MAX_NAME);
    l->name = malloc(tok[0].len + 1);
    if (!l->name) {
        return import_fail(a->d, COMMSCHED_ENOMEM, "out of memory");
    }
    memcpy(l->name, tok[0].s, tok[0].len);
    l->name[tok[0].len] = '\0';
    l->line = line_no;
    /* The graph holds UTF-8 names (it is saved as JSON). */
    if (!commsched_utf8_valid(l->name))
        return located(a, line_no, tok[0].col,
                       "layer name is not valid UTF-8");
    return 0;
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
        /* A NUL would end a name read as a C string: the layer
         * "conv1\0x" imported as "conv1". The format is text. */
        const char *nul = memchr(line, '\0', ll);
        if (nul)
            return located(a, line_no, (int)(nul - line) + 1,
                           "a NUL byte (the file is not ASTRA-sim text)");
        int n = tokenize(line, ll, tok);
        if (n < 0)
            return located(a, line_no, 0, "too many fields");
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
                return located(a, line_no, tok[0].col,
                               "expected the number of layers (a positive "
                               "integer), got \"%.*s\"",
                               (int)tok[0].len, tok[0].s);
            if (n > 1)
                return located(a, line_no, tok[1].col,
                               "unexpected \"%.*s\" after the layer count",
                               (int)tok[1].len, tok[1].s);
            a->n_layers = (long)v;
            a->layers = calloc((size_t)v, sizeof *a->layers);
            if (!a->layers) {
                return import_fail(a->d, COMMSCHED_ENOMEM, "out of memory");
            }
            last_line = line_no;
            state = 2;
        } else {
            if (seen == a->n_layers)
                return located(a, line_no, tok[0].col,
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
        return located(a, 1, 0,
                       "empty file: expected the parallelism policy");
    if (state == 1)
        return located(a, line_no + 1, 0,
                       "expected the number of layers");
    if (seen < a->n_layers)
        return located(a, last_line, 0,
                       "declares %ld layers but the file has %ld", a->n_layers,
                       seen);
    if ((a->policy == P_DLRM || a->policy == P_DLRM_ENHANCED) &&
        a->last_bottom >= a->n_layers)
        return located(a, 1, a->last_bottom_col,
                       "last bottom-MLP layer %ld, but the file has %ld "
                       "layers",
                       a->last_bottom, a->n_layers);
    for (int i = 0; i < a->n_marks; i++) {
        if (a->marks[i] >= a->n_layers)
            return located(a, 1, a->mark_cols[i],
                           "%s: layer %ld, but the file has %ld layers",
                           a->mark_kind[i] ? "checkpoint_initiates"
                           : "checkpoints",
                           a->marks[i], a->n_layers);
        if (a->mark_kind[i])
            a->layers[a->marks[i]].initiates = 1;
        else
            a->layers[a->marks[i]].checkpoint = 1;
    }
    /* Recomputation starts at the nearest checkpoint at or below the
     * initiating layer (ASTRA-sim walks down to it). */
    for (int i = 0; i < a->n_marks; i++) {
        if (!a->mark_kind[i] || a->policy != P_TRANSFORMER_FIB)
            continue;
        long c = a->marks[i];
        while (c >= 0 && !a->layers[c].checkpoint)
            c--;
        if (c < 0)
            return located(a, 1, a->mark_cols[i],
                           "layer %ld initiates recomputation but no "
                           "checkpoint is at or below it",
                           a->marks[i]);
    }
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
        return import_report(a->d, a->file, &c->err);
    return located_st(a, c->err.status, line, 0, "%s (generated %s)",
                      c->err.text, c->err.path);
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

/* Group dimensions a phase talks over (ASTRA-sim's involved dimensions):
 * none, the inner dimension (stride 1), the outer one (stride: the inner
 * size), or every NPU. */
enum dims { D_NONE = -1, D_INNER, D_OUTER, D_ALL };

/* Which dimensions a phase of a layer under `policy` uses
 * (decode_involved_dimensions in Workload.cc). */
static int policy_dims(int policy, int phase)
{
    switch (policy) {
    case P_DATA:
    case P_DLRM:
    case P_DLRM_ENHANCED:
    case P_MICRO:
        return phase == WG ? D_ALL : D_NONE;
    case P_MODEL:
    case P_INFERENCE:
        return phase == WG ? D_NONE : D_ALL;
    case P_HYBRID_DATA_MODEL:
    case P_TRANSFORMER:
    case P_TRANSFORMER_FIB:
        return phase == WG ? D_OUTER : D_INNER; /* model innermost */
    case P_HYBRID_MODEL_DATA:
        return phase == WG ? D_INNER : D_OUTER; /* data innermost */
    default:
        return D_NONE; /* HYBRID_CUSTOMIZED: each layer says */
    }
}

typedef struct emitter {
    bctx c;
    const astra *a;
    int policy;
    const char *gname[3]; /* inner, outer, all */
    long granks[3];
    long skipped; /* collectives the loop never issues */
    char (*weights)[512], (*wgrads)[512], (*inputs)[512], (*bwd_in)[512];
    char *wg_pending, *ig_pending;
} emitter;

/* The group a layer's phase talks over, or -1 when ASTRA-sim's loop for
 * this policy issues no collective there. */
static int issued(const emitter *e, long i, int phase)
{
    const layer *l = &e->a->layers[i];
    if (l->comm[phase] == C_NONE)
        return -1;
    int p = e->policy, d;
    if (p == P_CUSTOMIZED)
        d = policy_dims(l->policy, phase);
    else if ((p == P_DLRM || p == P_DLRM_ENHANCED) && i == 0)
        d = D_ALL; /* the embedding layer spans every NPU */
    else
        d = policy_dims(p, phase);
    if (d == D_NONE)
        return -1;
    switch (p) {
    case P_MICRO:
        return i == 0 && phase == WG ? d : -1;
    case P_INFERENCE:
        return phase == FWD ? d : -1;
    case P_DATA:
        return phase == WG ? d : -1;
    case P_DLRM:
    case P_DLRM_ENHANCED:
        if (phase == FWD)
            return l->comm[FWD] == C_ALLTOALL ? d : -1;
        if (phase == IG) /* issued by the first top layer */
            return i == 0 && e->a->last_bottom + 1 < e->a->n_layers ? d : -1;
        return d;
    case P_TRANSFORMER:
    case P_TRANSFORMER_FIB:
        return d;
    default: /* MODEL, HYBRID_DATA_MODEL/MODEL_DATA, HYBRID_CUSTOMIZED */
        return phase == IG && i == 0 ? -1 : d;
    }
}

static long group_ranks(const emitter *e, int g)
{
    return e->granks[g];
}

/* A layer's comm bytes are what each NPU puts in, as ASTRA-sim reads
 * them: Layer.cc hands them to generate_all_gather / _reduce_scatter /
 * _all_reduce, whose phases (Ring.cc, HalvingDoubling.cc) end with bytes x
 * k for an all-gather, bytes / k for a reduce-scatter and bytes for the
 * others. So a collective reads `bytes` (the tensor its producer writes:
 * phase_compute) and writes coll_output (k: its group's size; check_sizes
 * has made sure it fits). */
static int64_t coll_output(int comm, int64_t bytes, long ranks)
{
    return comm == C_ALLGATHER       ? bytes * ranks
           : comm == C_REDUCESCATTER ? bytes / ranks
                                     : bytes;
}

/* Issues layer i's phase collective (named `name`) reading `in`. */
static void issue(emitter *e, long i, int phase, const char *name,
                  const char *in)
{
    /* ALLREDUCEALLTOALL is an all-reduce that ASTRA-sim runs with the
     * direct all-to-all algorithm: the result, and the bytes, of an
     * all-reduce. */
    static const commsched_coll_op ops[N_COMM] = {
        COMMSCHED_COLL_BARRIER,        COMMSCHED_COLL_ALL_REDUCE,
        COMMSCHED_COLL_ALL_GATHER,     COMMSCHED_COLL_REDUCE_SCATTER,
        COMMSCHED_COLL_ALL_TO_ALL,     COMMSCHED_COLL_ALL_REDUCE};
    const layer *l = &e->a->layers[i];
    int g = issued(e, i, phase), comm = l->comm[phase];
    char out[512 + sizeof ".out"]; /* callers' names fit in 512 bytes */
    snprintf(out, sizeof out, "%s.out", name);
    const char *inputs[1] = {in};
    commsched_output_spec o = {
        out, coll_output(comm, l->bytes[phase], group_ranks(e, g)), NULL};
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = commsched_coll_op_str(ops[comm]);
    s.group = e->gname[g];
    if (comm == C_ALLREDUCE || comm == C_REDUCESCATTER ||
        comm == C_ALLREDUCEALLTOALL)
        s.reduce_op = COMMSCHED_REDUCE_SUM;
    s.inputs = inputs;
    s.n_inputs = 1;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    add_node(&e->c, &s);
}

/* The wait on collective `name`; its alias of the result is `alias`. */
static void wait_on(emitter *e, const char *name, const char *alias)
{
    char out[512], wait[512];
    snprintf(out, sizeof out, "%s.out", name);
    snprintf(wait, sizeof wait, "%s.wait", name);
    const char *win[1] = {out};
    commsched_output_spec wo = {alias, 0, out};
    commsched_node_spec w = import_wait_spec(wait, win, 1, &wo, 1);
    add_node(&e->c, &w);
}

/* "L<i>.<layer name>.<suffix>" */
static void lname(char *buf, const emitter *e, long i, const char *suffix)
{
    snprintf(buf, 512, "L%ld.%s.%s", i, e->a->layers[i].name, suffix);
}

/* A compute phase of layer i reading `in` (n_in names) into `out`, sized
 * for the collective of `coll_phase` of layer `coll_layer` when one reads
 * it (-1: none). */
static void phase_compute(emitter *e, long i, int phase, const char *op,
                          const char *out, const char *const *in,
                          size_t n_in, long coll_layer, int coll_phase)
{
    int64_t sz = 0;
    if (coll_layer >= 0) {
        const layer *cl = &e->a->layers[coll_layer];
        int g = issued(e, coll_layer, coll_phase);
        if (g >= 0)
            sz = cl->bytes[coll_phase];
    }
    e->c.line = e->a->layers[i].line;
    compute(&e->c, out, op, in, n_in, out, sz,
            (double)e->a->layers[i].compute[phase]);
}

/* Forward of layers `from`..`to`-1 starting from activation `act` (updated
 * in place); `suffix` names a recomputation apart. Forward collectives
 * block (every loop but DLRM's waits for them before the next layer). */
static void forward(emitter *e, long from, long to, char *act,
                    const char *suffix, int recompute)
{
    const astra *a = e->a;
    int dlrm = e->policy == P_DLRM || e->policy == P_DLRM_ENHANCED;
    /* buf: "fwd_comm" (the longest word) and the recompute suffix
     * (backward's suffix[32]). */
    char name[512], buf[sizeof "fwd_comm" + 32], coll[512], alias[512];
    char emb[512] = "";
    for (long i = from; i < to; i++) {
        if (!recompute)
            memcpy(e->inputs[i], act, 512);
        snprintf(buf, sizeof buf, "fwd%s", suffix);
        lname(name, e, i, buf);
        const char *in[3] = {act, e->weights[i], emb};
        size_t n_in = dlrm && emb[0] ? 3 : 2;
        phase_compute(e, i, FWD, "forward", name, in, n_in, i, FWD);
        if (dlrm && emb[0])
            emb[0] = '\0'; /* the first top layer read the embeddings */
        memcpy(act, name, 512);
        if (issued(e, i, FWD) >= 0) {
            snprintf(buf, sizeof buf, "fwd_comm%s", suffix);
            lname(coll, e, i, buf);
            issue(e, i, FWD, coll, name);
            snprintf(buf, sizeof buf, "act%s", suffix);
            lname(alias, e, i, buf);
            if (!dlrm) {
                wait_on(e, coll, alias);
                memcpy(act, alias, 512);
            }
        }
        /* DLRM: the embeddings' all-to-all (layer 0) is waited after the
         * last bottom-MLP layer; the first top layer reads it. */
        if (dlrm && i == a->last_bottom && a->last_bottom > 0 &&
            issued(e, 0, FWD) >= 0) {
            lname(coll, e, 0, "fwd_comm");
            lname(emb, e, 0, "act");
            wait_on(e, coll, emb);
        }
        if (recompute)
            memcpy(e->bwd_in[i + 1], act, 512);
    }
    if (dlrm && issued(e, 0, FWD) >= 0 &&
        !(a->last_bottom > 0 && a->last_bottom < to)) {
        /* never waited in the forward loop: waited at its end */
        lname(coll, e, 0, "fwd_comm");
        lname(emb, e, 0, "act");
        wait_on(e, coll, emb);
    }
}

/* Weight gradient of layer i from gradient `grad`; its collective is
 * issued and waited before the layer's update. */
static void weight_gradient(emitter *e, long i, const char *grad)
{
    char name[512], coll[512];
    lname(name, e, i, "wg");
    const char *in[2] = {grad, e->bwd_in[i]};
    phase_compute(e, i, WG, "weight_gradient", name, in, 2, i, WG);
    memcpy(e->wgrads[i], name, 512);
    if (issued(e, i, WG) >= 0) {
        lname(coll, e, i, "wg_comm");
        issue(e, i, WG, coll, name);
        lname(e->wgrads[i], e, i, "wgrad");
        e->wg_pending[i] = 1;
    }
}

/* DATA and HYBRID_DLRM*: from the last layer, weight gradient then input
 * gradient (none for layer 0); input gradients are not communicated,
 * except DLRM's layer 0 all-to-all, issued after the first top layer's. */
static void backward_data(emitter *e, char *grad)
{
    const astra *a = e->a;
    char name[512], coll[512], alias[512];
    for (long i = a->n_layers - 1; i >= 0; i--) {
        weight_gradient(e, i, grad);
        if (i == 0) {
            if (e->policy == P_DLRM && e->ig_pending[0]) {
                lname(coll, e, 0, "ig_comm");
                lname(alias, e, 0, "igrad");
                wait_on(e, coll, alias);
                e->ig_pending[0] = 0;
            }
            break;
        }
        lname(name, e, i, "ig");
        const char *in[2] = {grad, e->weights[i]};
        int emb = e->policy != P_DATA && i == a->last_bottom + 1 &&
                  issued(e, 0, IG) >= 0;
        phase_compute(e, i, IG, "input_gradient", name, in, 2,
                      emb ? 0 : -1, IG);
        if (emb) {
            lname(coll, e, 0, "ig_comm");
            issue(e, 0, IG, coll, name);
            e->ig_pending[0] = 1;
        }
        memcpy(grad, name, 512);
    }
}

/* MODEL, HYBRID_*: from the last layer, input gradient (layer 0's too)
 * and its collective, weight gradient and its collective, then the wait
 * for the input gradient's collective (at once under HYBRID_TRANSFORMER);
 * HYBRID_TRANSFORMER_FWD_IN_BCKWD first recomputes the forward from the
 * nearest checkpoint when a layer initiates it. */
static void backward_hybrid(emitter *e, char *grad)
{
    const astra *a = e->a;
    int blocking = e->policy == P_TRANSFORMER ||
                   e->policy == P_TRANSFORMER_FIB;
    char name[512], coll[512], alias[512], suffix[32], act[512];
    for (long i = a->n_layers - 1; i >= 0; i--) {
        if (e->policy == P_TRANSFORMER_FIB && a->layers[i].initiates) {
            long c = i;
            while (!a->layers[c].checkpoint)
                c--; /* parse() checked that one exists */
            snprintf(suffix, sizeof suffix, ".re%ld", i);
            memcpy(act, e->inputs[c], 512);
            forward(e, c, i, act, suffix, 1);
        }
        lname(name, e, i, "ig");
        const char *in[2] = {grad, e->weights[i]};
        phase_compute(e, i, IG, "input_gradient", name, in, 2, i, IG);
        char ig_out[512];
        memcpy(ig_out, name, 512);
        int ig = issued(e, i, IG) >= 0;
        if (ig) {
            lname(coll, e, i, "ig_comm");
            lname(alias, e, i, "igrad");
            issue(e, i, IG, coll, name);
            if (blocking)
                wait_on(e, coll, alias);
            memcpy(ig_out, alias, 512);
        }
        weight_gradient(e, i, grad);
        if (ig && !blocking)
            wait_on(e, coll, alias);
        memcpy(grad, ig_out, 512);
    }
}

/* One update per layer, in layer order (the next forward needs them in
 * that order): in place on the weight, after its gradient is reduced. */
static void updates(emitter *e)
{
    const astra *a = e->a;
    char name[512], out_name[512], coll[512], extra[512] = "";
    for (long i = 0; i < a->n_layers; i++) {
        const layer *l = &a->layers[i];
        e->c.line = l->line;
        if (e->wg_pending[i]) {
            lname(coll, e, i, "wg_comm");
            wait_on(e, coll, e->wgrads[i]);
        }
        size_t n_in = 2;
        if (i == 0 && e->policy == P_DLRM && issued(e, 0, IG) >= 0) {
            /* the embeddings' gradient, waited in the backward pass */
            lname(extra, e, 0, "igrad");
            n_in = 3;
        }
        lname(name, e, i, "update");
        lname(out_name, e, i, "weight.new");
        const char *in[3] = {e->wgrads[i], e->weights[i], extra};
        commsched_output_spec os = {out_name, 0, e->weights[i]};
        commsched_node_spec s = {0};
        s.name = name;
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.op = "update";
        s.inputs = in;
        s.n_inputs = n_in;
        s.outputs = &os;
        s.n_outputs = 1;
        s.runtime_ns = (double)l->update * e->c.ns_per_cycle;
        s.flops = s.bytes = -1;
        add_node(&e->c, &s);
        (void)commsched_builder_add_output(e->c.b, out_name, &e->c.err);
    }
    if (e->ig_pending[0]) {
        /* HYBRID_DLRM_ENHANCED never blocks on the embeddings' gradient
         * all-to-all: it only has to end with the step */
        lname(coll, e, 0, "ig_comm");
        lname(extra, e, 0, "igrad");
        wait_on(e, coll, extra);
        (void)commsched_builder_add_output(e->c.b, extra, &e->c.err);
    }
}

/* MICRO: ASTRA-sim issues layer 0's weight-gradient collective and
 * nothing else; its input is the step's input. */
static void micro(emitter *e)
{
    char grad[512], coll[512], alias[512];
    const layer *l = &e->a->layers[0];
    e->c.line = l->line;
    lname(grad, e, 0, "wg");
    (void)commsched_builder_add_input(e->c.b, grad, l->bytes[WG], 1,
                                      &e->c.err);
    lname(coll, e, 0, "wg_comm");
    lname(alias, e, 0, "wgrad");
    issue(e, 0, WG, coll, grad);
    wait_on(e, coll, alias);
    (void)commsched_builder_add_output(e->c.b, alias, &e->c.err);
}

/* The NPU count and the inner dimension's size. */
static int layout(const astra *a, const commsched_import_options *o, emitter *e,
                  long *npus_out)
{
    int p = a->policy;
    int split = p != P_DATA && p != P_MODEL && p != P_DLRM &&
                p != P_DLRM_ENHANCED && p != P_MICRO && p != P_INFERENCE;
    /* mp: the model-parallel size; HYBRID_CUSTOMIZED: the inner
     * dimension's (its layers say which role each dimension plays) */
    long mp = o->mp > 0 ? o->mp : a->mp > 0 ? a->mp : 2;
    long npus = o->npus > 0 ? o->npus : a->all_gpus;
    if (npus <= 0) {
        /* what the file implies: 8 NPUs, or the smallest multiple of the
         * model-parallel group that holds it */
        npus = 8;
        if (split && npus % mp != 0)
            npus = (npus + mp - 1) / mp * mp;
    }
    if (npus > COMMSCHED_MAX_GROUP_SIZE) {
        return import_fail(a->d, COMMSCHED_EINVAL,
                           "%s: %ld NPUs is beyond the %u ranks a group may "
                           "have",
                           a->file, npus, COMMSCHED_MAX_GROUP_SIZE);
    }
    if (split && (mp > npus || npus % mp != 0)) {
        return import_fail(a->d, COMMSCHED_EINVAL,
                           "%s: %ld NPUs do not split into model-parallel "
                           "groups of %ld (use --npus / --mp)",
                           a->file, npus, mp);
    }
    long inner = p == P_HYBRID_MODEL_DATA ? npus / mp : mp;
    e->granks[D_INNER] = split ? inner : 1;
    e->granks[D_OUTER] = split ? npus / inner : 1;
    e->granks[D_ALL] = npus;
    static const char *const names[][3] = {
        {"mp", "dp", "world"}, {"dp", "mp", "world"}, {"dim0", "dim1", "world"},
        {"", "", "dp"},        {"", "", "mp"}};
    int row = p == P_HYBRID_MODEL_DATA ? 1
              : p == P_CUSTOMIZED      ? 2
              : p == P_MODEL || p == P_INFERENCE ? 4
              : !split                            ? 3
                                                  : 0;
    for (int g = 0; g < 3; g++)
        e->gname[g] = names[row][g];
    *npus_out = npus;
    return 0;
}

/* An all-gather's k x bytes within the format's limit, a reduce-scatter's
 * bytes a multiple of k (what each rank keeps is bytes / k): checked at
 * the field once the group sizes are known. */
static int check_sizes(const emitter *e, long i, int ph, int g)
{
    static const char *const what[3] = {"forward", "input-gradient",
                                        "weight-gradient"};
    const layer *l = &e->a->layers[i];
    long k = e->granks[g];
    if (l->comm[ph] == C_ALLGATHER && l->bytes[ph] > COMMSCHED_MAX_SIZE / k)
        return located(e->a, l->line, l->bytes_col[ph],
                       "%s comm bytes: %lld bytes gathered from each of the "
                       "%ld NPUs of group %s is beyond the format's limit of "
                       "2^53",
                       what[ph], (long long)l->bytes[ph], k, e->gname[g]);
    if (l->comm[ph] == C_REDUCESCATTER && l->bytes[ph] % k != 0)
        return located(e->a, l->line, l->bytes_col[ph],
                       "%s comm bytes: %lld bytes do not scatter evenly over "
                       "the %ld NPUs of group %s (each reduces them and keeps "
                       "1/%ld)",
                       what[ph], (long long)l->bytes[ph], k, e->gname[g], k);
    return 0;
}

static int build(astra *a, const commsched_import_options *o, commsched_graph **out)
{
    emitter e;
    memset(&e, 0, sizeof e);
    e.a = a;
    e.policy = a->policy;
    e.c.ns_per_cycle = 1.0 / o->clock_ghz;
    long npus = 0; /* set by layout on success */
    int rc = layout(a, o, &e, &npus);
    if (rc != 0)
        return rc;
    /* MICRO's loop issues layer 0's weight-gradient collective and nothing
     * else; with none (NONE) the workload is empty. Said here: before,
     * the emitter looked up the group of a collective that is not issued
     * (out of bounds: a crash). */
    if (a->policy == P_MICRO && issued(&e, 0, WG) < 0)
        return located(a, a->layers[0].line, 0,
                       "MICRO issues only layer 0's weight-gradient "
                       "collective, and this layer has none (NONE): nothing "
                       "to import");
    char gname[256];
    snprintf(gname, sizeof gname, "astra-%s", a->policy_name);
    if (commsched_builder_create(gname, &e.c.b, &e.c.err) != COMMSCHED_OK)
        return import_report(a->d, a->file, &e.c.err);
    size_t n = (size_t)a->n_layers;
    e.weights = calloc(n, sizeof *e.weights);
    e.wgrads = calloc(n, sizeof *e.wgrads);
    e.inputs = calloc(n, sizeof *e.inputs);
    e.bwd_in = calloc(n + 1, sizeof *e.bwd_in);
    e.wg_pending = calloc(n, 1);
    e.ig_pending = calloc(n, 1);
    if (!e.weights || !e.wgrads || !e.inputs || !e.bwd_in || !e.wg_pending ||
        !e.ig_pending) {
        rc = import_fail(a->d, COMMSCHED_ENOMEM, "out of memory");
        goto cleanup;
    }
    /* The groups the step uses, 8 NPUs per host, the inner dimension
     * innermost; and the collectives the loop never issues. */
    int used[3] = {0, 0, 0};
    for (long i = 0; i < a->n_layers && rc == 0; i++)
        for (int ph = 0; ph < 3 && rc == 0; ph++) {
            int g = issued(&e, i, ph);
            if (g >= 0) {
                used[g] = 1;
                rc = check_sizes(&e, i, ph, g);
            } else if (a->layers[i].comm[ph] != C_NONE) {
                e.skipped++;
            }
        }
    if (rc != 0)
        goto cleanup;
    for (int g = 0; g < 3; g++) {
        if (!used[g])
            continue;
        long stride = g == D_OUTER ? e.granks[D_INNER] : 1;
        long hosts = (e.granks[g] * stride + 7) / 8;
        if (hosts > e.granks[g])
            hosts = e.granks[g];
        (void)commsched_builder_add_group(e.c.b, e.gname[g], e.granks[g],
                                          hosts, &e.c.err);
    }
    if (e.policy == P_MICRO) {
        micro(&e);
    } else {
        (void)commsched_builder_add_input(e.c.b, "batch", 0, 1, &e.c.err);
        e.c.zero_sized++;
        for (long i = 0; i < a->n_layers; i++) {
            /* Weights are outside the step: a non-freeable input sized
             * like the weight gradient the file gives. */
            lname(e.weights[i], &e, i, "weight");
            (void)commsched_builder_add_input(
                e.c.b, e.weights[i], a->layers[i].bytes[WG], 0, &e.c.err);
        }
        char act[512] = "batch";
        forward(&e, 0, a->n_layers, act, "", 0);
        for (long i = 0; i < a->n_layers; i++)
            memcpy(e.bwd_in[i], e.inputs[i], 512);
        if (e.policy == P_INFERENCE) {
            (void)commsched_builder_add_output(e.c.b, act, &e.c.err);
        } else {
            /* the gradient arriving at the last layer is the loss's (the
             * last activation stands for it) */
            if (e.policy == P_DATA || e.policy == P_DLRM ||
                e.policy == P_DLRM_ENHANCED)
                backward_data(&e, act);
            else
                backward_hybrid(&e, act);
            updates(&e);
        }
    }
    if (commsched_builder_finish(e.c.b, 0, out, &e.c.err) != COMMSCHED_OK) {
        e.c.b = NULL;
        rc = report_build_error(a, &e.c);
        goto cleanup;
    }
    e.c.b = NULL;
    char groups[256] = "";
    size_t gl = 0;
    for (int g = 0; g < 3; g++)
        if (used[g])
            gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%s %ld",
                                   gl ? ", " : "", e.gname[g], e.granks[g]);
    import_sayf(a->d, COMMSCHED_IMPORT_NOTE, a->file,
                "%s, %ld layer%s, %ld NPUs (%s), "
                "%.3g GHz; the format gives no tensor sizes: %ld buffer%s "
                "that no collective moves %s 0 bytes",
                a->policy_name, a->n_layers, a->n_layers == 1 ? "" : "s",
            npus, gl ? groups : "no collectives", o->clock_ghz, e.c.zero_sized,
                e.c.zero_sized == 1 ? "" : "s",
                e.c.zero_sized == 1 ? "is" : "are");
    if (e.skipped)
        import_sayf(a->d, COMMSCHED_IMPORT_NOTE, a->file,
                    "%ld collective%s the file names that %s's loop never "
                    "issues (no involved dimension, or a phase it does not "
                    "run) skipped",
                    e.skipped, e.skipped == 1 ? "" : "s",
                    a->policy_name);
cleanup:
    commsched_builder_destroy(e.c.b);
    free(e.c.node_line);
    free(e.weights);
    free(e.wgrads);
    free(e.inputs);
    free(e.bwd_in);
    free(e.wg_pending);
    free(e.ig_pending);
    return rc;
}

int import_astra(import_diag *d, const char *path,
                 const commsched_import_options *o, commsched_graph **out)
{
    astra a;
    memset(&a, 0, sizeof a);
    a.file = import_file_name(path);
    a.d = d;
    size_t len = 0;
    char *text = import_read_file(d, path, &len);
    if (!text)
        return IMPORT_INPUT;
    int rc = parse(&a, text, len);
    if (rc == 0)
        rc = build(&a, o, out);
    for (long i = 0; i < a.n_layers && a.layers; i++)
        free(a.layers[i].name);
    free(a.layers);
    free(a.marks);
    free(a.mark_cols);
    free(a.mark_kind);
    free(text);
    return rc;
}
