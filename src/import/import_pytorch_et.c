/* commsched import pytorch-et ET.json[.gz] — a PyTorch execution trace
 * (schema 1.0.x, Chakra's "-chakra" variants included) alone, without its
 * Kineto trace (docs/WORKLOADS.md):
 *
 * - Nodes: the top-level operators, in id order (ids are taken as the ops
 *   start). An operator has an op_schema or tensor arguments, or names a
 *   collective; top-level means no ancestor (parent / ctrl_deps) is one:
 *   aten::empty inside aten::rand is part of aten::rand. Record-function
 *   annotations ("[param|...]", "## forward ##") are not operators.
 * - Tensors are [tensor_id, storage_id, offset, numel, itemsize, device]
 *   (values typed "Tensor(...)", or lists of them in "GenericList[...]").
 *   Data dependencies follow storages: an operator reads what the last
 *   writer of each input storage wrote. Its buffer is sized by the
 *   storages it creates (outputs not among its inputs).
 * - Collectives once: a top-level operator is a collective when it or an
 *   operator inside it names one (c10d::allreduce_, nccl:all_reduce,
 *   record_param_comms with the collective's name among its arguments);
 *   record_param_comms, c10d:: and nccl: inside it are that one collective.
 *   Arguments that are outputs (split_outputs) are written, not read; one
 *   that writes only in place aliases the buffer it reads. On CUDA tensors
 *   it is async, and its wait goes before the first operator that reads a
 *   storage it wrote.
 * - Runtimes come from the cost model: bytes = the tensor bytes read and
 *   written, flops for mm / addmm / bmm / matmul / linear from the shapes.
 * - Groups: the trace's "## process_group:init ##" record (read_groups,
 *   pg_of, group_for); a size neither it nor the options give is assumed
 *   with a warning. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_common.h"
#include "pytorch_et.h"
#include "trace_json.h"

typedef struct etnode {
    int64_t id, parent; /* parent -1: none */
    json_t *node;       /* borrowed from the document */
    json_t *in_vals, *in_types, *in_shapes, *out_vals, *out_types;
    int is_op, comm;    /* comm: the collective it names, or -1 */
    int top;            /* a top-level operator */
    uint32_t top_of;    /* the top-level op it belongs to, or UINT32_MAX */
    int coll;           /* top-level: its collective, or -1 */
    int64_t coll_bytes;
    int cuda;
    char name[112];
    int waited;
    size_t src; /* its index in the file's "nodes" (for messages) */
} etnode;

/* A process group from the trace's "## process_group:init ##" record. */
typedef struct pgroup {
    const char *name; /* pg_name, borrowed from pg_docs */
    int64_t backend;  /* backend_id, or -1 */
    long size;        /* group_size, else its ranks' count; 0: unknown */
} pgroup;

struct et {
    const char *file;
    import_diag *d; /* the running call's */
    etnode *n;
    size_t count;
    pgroup *pg;
    size_t n_pg;
    json_t *pg_docs; /* the parsed configs, owning the names */
    int64_t (*rf)[2]; /* (rf_id, node index), sorted; import kineto --et */
    size_t n_rf;
    json_t *root;
};
typedef struct et et;

static int oom(const et *e) { return import_oom(e->d); }

/* The value of an "attrs" entry (schema 1.0.2+) or of a top-level key. */
static json_t *field(json_t *node, const char *key)
{
    json_t *v = json_object_get(node, key);
    if (v)
        return v;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(node, "attrs"), i, a) {
        const char *n = json_string_value(json_object_get(a, "name"));
        if (n && strcmp(n, key) == 0)
            return json_object_get(a, "value");
    }
    return NULL;
}

/* inputs/outputs in either layout: 1.0.1's parallel arrays
 * ("inputs", "input_types", "input_shapes") or 1.0.2's object
 * {"values", "types", "shapes"}. */
static int io_of(et *e, size_t i, const char *which, json_t **vals,
                 json_t **types, json_t **shapes)
{
    json_t *node = e->n[i].node;
    json_t *v = json_object_get(node, which);
    char path[96];
    *vals = *types = *shapes = NULL;
    if (!v)
        return 0;
    if (json_is_object(v)) {
        *vals = json_object_get(v, "values");
        *types = json_object_get(v, "types");
        *shapes = json_object_get(v, "shapes");
    } else {
        char k[32];
        *vals = v;
        snprintf(k, sizeof k, "%s_types",
                 strcmp(which, "inputs") == 0 ? "input" : "output");
        *types = json_object_get(node, k);
        snprintf(k, sizeof k, "%s_shapes",
                 strcmp(which, "inputs") == 0 ? "input" : "output");
        *shapes = json_object_get(node, k);
    }
    if (!json_is_array(*vals) ||
        (*types && !json_is_array(*types))) {
        snprintf(path, sizeof path, "nodes[%zu].%s", i, which);
        return trace_fail(e->d, e->file, path,
                          "expected values (an array) with their types");
    }
    return 0;
}

/* Calls fn on every tensor among vals (typed by types), checking each
 * is [tensor_id, storage_id, offset, numel, itemsize, device]. */
typedef et_tensor tensor;

static int check_tensor(et *e, size_t i, const char *which, size_t k,
                        json_t *t, tensor *out)
{
    char path[96];
    snprintf(path, sizeof path, "nodes[%zu].%s[%zu]", e->n[i].src, which, k);
    if (!json_is_array(t) || json_array_size(t) < 5 ||
        json_array_size(t) > 6)
        return trace_fail(e->d, e->file, path,
                          "a tensor is [tensor_id, storage_id, offset, "
                          "numel, itemsize, device]");
    for (size_t j = 0; j < 5; j++)
        if (!json_is_integer(json_array_get(t, j)) ||
            json_integer_value(json_array_get(t, j)) < 0)
            return trace_fail(e->d, e->file, path,
                              "tensor field %zu is not an integer >= 0", j);
    double numel = (double)json_integer_value(json_array_get(t, 3));
    double item = (double)json_integer_value(json_array_get(t, 4));
    if (numel * item > (double)COMMSCHED_MAX_SIZE)
        return trace_fail(e->d, e->file, path,
                          "numel x itemsize is beyond the format's limit of "
                          "2^53 bytes");
    out->id = (int64_t)json_integer_value(json_array_get(t, 0));
    out->storage = (int64_t)json_integer_value(json_array_get(t, 1));
    out->offset = (int64_t)json_integer_value(json_array_get(t, 2));
    out->bytes = (int64_t)(numel * item);
    out->out = 0;
    const char *dev = json_string_value(json_array_get(t, 5));
    out->cuda = dev && strncmp(dev, "cuda", 4) == 0;
    return 0;
}

static int push_tensor(et *e, size_t i, const char *which, size_t k,
                       json_t *x, tensor **ts, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        tensor *tt = realloc(*ts, nc * sizeof *tt);
        if (!tt)
            return oom(e);
        *ts = tt;
        *cap = nc;
    }
    int rc = check_tensor(e, i, which, k, x, &(*ts)[*n]);
    if (rc == 0)
        (*n)++;
    return rc;
}

/* A tensor value, or (GenericList) nested lists of them; None and other
 * scalars inside optional lists are skipped. Depth-bounded: a hostile
 * file cannot exhaust the stack. */
static int walk(et *e, size_t i, const char *which, size_t k, json_t *v,
                int depth, tensor **ts, size_t *n, size_t *cap)
{
    if (!json_is_array(v))
        return 0;
    if (json_is_integer(json_array_get(v, 0)) || depth == 0 ||
        json_array_size(v) == 0)
        return json_array_size(v) == 0
                   ? 0
                   : push_tensor(e, i, which, k, v, ts, n, cap);
    if (depth > 8) {
        char path[96];
        snprintf(path, sizeof path, "nodes[%zu].%s[%zu]", e->n[i].src, which,
                 k);
        return trace_fail(e->d, e->file, path, "tensor lists nested deeper than 8");
    }
    size_t j;
    json_t *x;
    json_array_foreach(v, j, x) {
        int rc = walk(e, i, which, k, x, depth + 1, ts, n, cap);
        if (rc)
            return rc;
    }
    return 0;
}

/* Whether argument k of an op_schema ("c10d::allgather_(Tensor[][]
 * output_tensors, Tensor[] input_tensors, ...) -> ...") is named as an
 * output (output, output_tensors, out): c10d's collectives take the
 * tensors they write as arguments, and an ET lists every argument among
 * the inputs. The keyword-only marker "*" is not an argument. */
static int schema_output_arg(const char *schema, size_t k)
{
    const char *p = schema ? strchr(schema, '(') : NULL;
    if (!p)
        return 0;
    size_t arg = 0;
    int depth = 0;
    const char *start = ++p;
    for (; *p; p++) {
        if (*p == '(' || *p == '[' || *p == '<')
            depth++;
        else if ((*p == ')' || *p == ']' || *p == '>') && depth > 0)
            depth--;
        else if ((*p == ',' || *p == ')') && depth == 0) {
            /* the argument's text: "Type name" or "Type name=default" */
            const char *end = start;
            while (end < p && *end != '=')
                end++;
            while (end > start && end[-1] == ' ')
                end--;
            const char *name = end;
            while (name > start && name[-1] != ' ')
                name--;
            int star = end - start == 1 && *start == '*';
            while (*start == ' ')
                start++;
            star |= end - start == 1 && *start == '*';
            if (!star) {
                if (arg == k)
                    return end - name >= 3 && strncmp(name, "out", 3) == 0;
                arg++;
            }
            if (*p == ')')
                return 0;
            start = p + 1;
        }
    }
    return 0;
}

/* Every tensor of one side, into *ts (grown; *n entries); on the inputs
 * side, those of arguments the op's schema names as outputs are marked
 * `out`. */
static int tensors(et *e, size_t i, const char *which, json_t *vals,
                   json_t *types, tensor **ts, size_t *n, size_t *cap)
{
    *n = 0;
    size_t k;
    json_t *v;
    const char *schema = strcmp(which, "inputs") == 0
                             ? json_string_value(field(e->n[i].node,
                                                       "op_schema"))
                             : NULL;
    json_array_foreach(vals, k, v) {
        const char *t = json_string_value(json_array_get(types, k));
        if (!t || !strstr(t, "Tensor("))
            continue;
        /* "Tensor(float)": the value is the tensor itself (depth 0);
         * "GenericList[...]": lists of them */
        size_t from = *n;
        int rc = walk(e, i, which, k, v, strncmp(t, "Tensor(", 7) == 0 ? 0 : 1,
                      ts, n, cap);
        if (rc)
            return rc;
        if (schema_output_arg(schema, k))
            for (size_t j = from; j < *n; j++)
                (*ts)[j].out = 1;
    }
    return 0;
}

/* The collective a node names: by its name (c10d::allreduce_,
 * nccl:all_gather), or for record_param_comms by a string argument. */
static int comm_of(const etnode *x, const char *name)
{
    if (strncmp(name, "c10d::", 6) == 0 || strncmp(name, "nccl:", 5) == 0 ||
        strncmp(name, "c10d_functional::", 17) == 0 ||
        strncmp(name, "_c10d_functional::", 18) == 0) {
        if (strstr(name, "wait"))
            return -1; /* wait_tensor: the consumer side, not a collective */
        return chakra_coll_from_name(name);
    }
    if (strcmp(name, "record_param_comms") == 0) {
        size_t k;
        json_t *v;
        json_array_foreach(x->in_vals, k, v) {
            const char *s = json_string_value(v);
            int c = s ? chakra_coll_from_name(s) : -1;
            if (c >= 0)
                return c;
        }
    }
    return -1;
}

static int cmp_id(const void *a, const void *b)
{
    const etnode *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static size_t find(const et *e, int64_t id)
{
    size_t lo = 0, hi = e->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->n[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->count && e->n[lo].id == id ? lo : SIZE_MAX;
}

static int read_nodes(et *e, json_t *root)
{
    char path[96];
    if (!json_is_object(root))
        return trace_fail(e->d, e->file, "", "expected a JSON object (a PyTorch "
                                       "execution trace)");
    const char *schema = json_string_value(json_object_get(root, "schema"));
    if (!schema)
        return trace_fail(e->d, e->file, "schema", "missing (not a PyTorch "
                                             "execution trace?)");
    if (strncmp(schema, "1.", 2) != 0)
        return trace_fail(e->d, e->file, "schema",
                          "\"%.40s\": this importer reads schema 1.x", schema);
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return trace_fail(e->d, e->file, "nodes", "expected a non-empty array");
    e->count = json_array_size(nodes);
    e->n = calloc(e->count, sizeof *e->n);
    if (!e->n)
        return oom(e);
    for (size_t i = 0; i < e->count; i++) {
        json_t *node = json_array_get(nodes, i);
        etnode *x = &e->n[i];
        snprintf(path, sizeof path, "nodes[%zu]", i);
        if (!json_is_object(node))
            return trace_fail(e->d, e->file, path, "expected an object (a node)");
        x->node = node;
        x->src = i;
        json_t *id = json_object_get(node, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0)
            return trace_fail(e->d, e->file, path, "needs an integer \"id\" >= 0");
        x->id = (int64_t)json_integer_value(id);
        if (!json_is_string(json_object_get(node, "name")))
            return trace_fail(e->d, e->file, path, "needs a string \"name\"");
        json_t *p = json_object_get(node, "parent");
        if (!p)
            p = json_object_get(node, "ctrl_deps");
        x->parent = json_is_integer(p) ? (int64_t)json_integer_value(p) : -1;
        json_t *shapes;
        int rc = io_of(e, i, "inputs", &x->in_vals, &x->in_types,
                       &x->in_shapes);
        if (rc == 0)
            rc = io_of(e, i, "outputs", &x->out_vals, &x->out_types, &shapes);
        if (rc)
            return rc;
    }
    if (e->count > 1) /* an empty list is NULL: qsort's base must not be */
        qsort(e->n, e->count, sizeof *e->n, cmp_id);
    for (size_t i = 1; i < e->count; i++)
        if (e->n[i].id == e->n[i - 1].id)
            return trace_fail(e->d, e->file, "nodes", "duplicate id %lld",
                              (long long)e->n[i].id);
    return 0;
}

/* A parent cycle: the walk path[0..depth) came back to `back`, one of
 * its nodes. Located at the node where the cycle closes, listing its ids
 * (at most 8, then how many more). */
static int parent_cycle(const et *e, const size_t *path, size_t depth,
                        size_t back)
{
    size_t from = 0;
    while (from < depth && path[from] != back)
        from++;
    char ids[256], where[64];
    size_t used = 0, shown = 0, len = depth - from;
    for (size_t k = from; k < depth && shown < 8; k++, shown++)
        used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%lld",
                                 shown ? " -> " : "",
                                 (long long)e->n[path[k]].id);
    if (shown < len)
        snprintf(ids + used, sizeof ids - used, " -> ... (%zu more)",
                 len - shown);
    const etnode *x = &e->n[path[depth - 1]];
    snprintf(where, sizeof where, "nodes[%zu].%s", x->src,
             json_object_get(x->node, "parent") ? "parent" : "ctrl_deps");
    return trace_fail(e->d, e->file, where,
                      "parents form a cycle (each id's parent is the next): "
                      "%s -> %lld (%zu node%s)",
                      ids, (long long)e->n[back].id, len, len == 1 ? "" : "s");
}

/* Which nodes are operators, which are top-level, and the collectives.
 * 0, or the exit code of a parent cycle's error. */
static int classify(et *e)
{
    for (size_t i = 0; i < e->count; i++) {
        etnode *x = &e->n[i];
        const char *name = json_string_value(json_object_get(x->node, "name"));
        const char *schema = json_string_value(field(x->node, "op_schema"));
        int tensor_args = 0;
        size_t k;
        json_t *t;
        json_array_foreach(x->in_types, k, t) {
            const char *s = json_string_value(t);
            tensor_args |= s && strstr(s, "Tensor(") != NULL;
        }
        json_array_foreach(x->out_types, k, t) {
            const char *s = json_string_value(t);
            tensor_args |= s && strstr(s, "Tensor(") != NULL;
        }
        x->comm = comm_of(x, name);
        x->is_op = name[0] != '[' && strncmp(name, "##", 2) != 0 &&
                   ((schema && schema[0]) || tensor_args || x->comm >= 0);
        x->coll = -1;
        x->top_of = UINT32_MAX;
    }
    /* The top-level op of each node, its outermost operator ancestor (or
     * itself): top_of(i) = top_of(parent) when the parent has one, else i
     * when i is an operator. Each node is settled once: a walk up stops at
     * the first settled ancestor and settles the nodes it passed on its
     * way back, so a 40,000-deep chain costs its length, not its square.
     * A walk that meets a node of its own path is a parent cycle. */
    size_t *path = malloc((e->count ? e->count : 1) * sizeof *path);
    /* per node: 1 on the walk, 2 settled */
    uint8_t *state = calloc(e->count ? e->count : 1, 1);
    if (!path || !state) {
        free(path);
        free(state);
        return oom(e);
    }
    int rc = 0;
    for (size_t i = 0; i < e->count && rc == 0; i++) {
        size_t depth = 0, cur = i;
        while (cur != SIZE_MAX && state[cur] == 0) {
            state[cur] = 1;
            path[depth++] = cur;
            int64_t p = e->n[cur].parent;
            cur = p >= 0 && p != e->n[cur].id ? find(e, p) : SIZE_MAX;
        }
        if (cur != SIZE_MAX && state[cur] == 1) {
            rc = parent_cycle(e, path, depth, cur);
            break;
        }
        uint32_t top = cur == SIZE_MAX ? UINT32_MAX : e->n[cur].top_of;
        while (depth > 0) {
            size_t v = path[--depth];
            if (top == UINT32_MAX && e->n[v].is_op)
                top = (uint32_t)v;
            e->n[v].top_of = top;
            e->n[v].top = top == (uint32_t)v;
            state[v] = 2;
        }
    }
    free(path);
    free(state);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < e->count; i++) {
        etnode *x = &e->n[i];
        if (x->comm < 0 || x->top_of == UINT32_MAX)
            continue;
        etnode *t = &e->n[x->top_of];
        if (t->coll < 0 || (uint32_t)i == x->top_of)
            t->coll = x->comm;
    }
    return 0;
}

/* An open-addressing map storage id -> last writer (index into e->n). */
typedef struct smap {
    int64_t *key;
    uint32_t *val;
    size_t cap, used;
} smap;

static int smap_put(smap *m, int64_t k, uint32_t v);

static int smap_grow(smap *m)
{
    smap n = {NULL, NULL, m->cap ? 2 * m->cap : 1024, 0};
    n.key = malloc(n.cap * sizeof *n.key);
    n.val = malloc(n.cap * sizeof *n.val);
    if (!n.key || !n.val) {
        free(n.key);
        free(n.val);
        return -1;
    }
    for (size_t i = 0; i < n.cap; i++)
        n.key[i] = -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i] >= 0)
            (void)smap_put(&n, m->key[i], m->val[i]);
    free(m->key);
    free(m->val);
    *m = n;
    return 0;
}

static size_t smap_slot(const smap *m, int64_t k)
{
    size_t h = (size_t)((uint64_t)k * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->key[h] >= 0 && m->key[h] != k)
        h = (h + 1) & (m->cap - 1);
    return h;
}

static int smap_put(smap *m, int64_t k, uint32_t v)
{
    if ((m->used + 1) * 2 > m->cap && smap_grow(m) != 0)
        return -1;
    size_t h = smap_slot(m, k);
    if (m->key[h] < 0) {
        m->key[h] = k;
        m->used++;
    }
    m->val[h] = v;
    return 0;
}

static uint32_t smap_get(const smap *m, int64_t k)
{
    if (!m->cap)
        return UINT32_MAX;
    size_t h = smap_slot(m, k);
    return m->key[h] == k ? m->val[h] : UINT32_MAX;
}

/* 2 x the multiply-adds of a matrix product, from the input shapes, in
 * *flops (-1: not a matrix product, or shapes it cannot read). A negative
 * dimension is an error located at the record (a product of two negative
 * dimensions would read as positive flops): returns its exit code. */
static int gemm_flops(const et *e, size_t i, const char *name, json_t *shapes,
                      double *flops)
{
    *flops = -1;
    const char *op = strncmp(name, "aten::", 6) == 0 ? name + 6 : name;
    size_t a = 0;
    if (strcmp(op, "addmm") == 0 || strcmp(op, "baddbmm") == 0)
        a = 1; /* the bias comes first */
    else if (strcmp(op, "mm") != 0 && strcmp(op, "bmm") != 0 &&
             strcmp(op, "matmul") != 0 && strcmp(op, "linear") != 0)
        return 0;
    json_t *x = json_array_get(shapes, a), *w = json_array_get(shapes, a + 1);
    size_t nx = json_array_size(x), nw = json_array_size(w);
    if (nx < 2 || nw < 1)
        return 0;
    for (size_t t = 0; t < 2; t++) {
        json_t *sh = t ? w : x;
        for (size_t d = 0; d < json_array_size(sh); d++) {
            json_t *v = json_array_get(sh, d);
            if (json_is_number(v) && json_number_value(v) < 0) {
                char path[96];
                snprintf(path, sizeof path, "nodes[%zu].inputs.shapes[%zu][%zu]",
                         e->n[i].src, a + t, d);
                return trace_fail(e->d, e->file, path,
                                  "%s: negative dimension %g",
                                  name, json_number_value(v));
            }
        }
    }
    double rows = 1;
    for (size_t k = 0; k + 1 < nx; k++)
        rows *= trace_number(json_array_get(x, k));
    double k = trace_number(json_array_get(x, nx - 1));
    double n = strcmp(op, "linear") == 0
                   ? trace_number(json_array_get(w, 0))
                   : trace_number(json_array_get(w, nw - 1));
    double f = 2 * rows * k * n;
    *flops = f > 0 && f < COMMSCHED_MAX_WORK ? f : -1;
    return 0;
}

/* The process groups PyTorch records at the start of an execution trace:
 * a "## process_group:init ##" node whose first input is a JSON string,
 * [{"pg_name": "0", "backend_id": 82149104, "ranks": [], "group_size": 2,
 * ...}, ...] (what ASTRA-sim's issue_pytorch_pg_metadata reads too).
 * "ranks": [] is every rank: group_size says how many. */
static int read_groups(et *e)
{
    e->pg_docs = json_array();
    if (!e->pg_docs)
        return oom(e);
    for (size_t i = 0; i < e->count; i++) {
        const char *name =
            json_string_value(json_object_get(e->n[i].node, "name"));
        if (!strstr(name, "process_group:init"))
            continue;
        char path[96];
        snprintf(path, sizeof path, "nodes[%zu].inputs[0]", e->n[i].src);
        const char *text = json_string_value(json_array_get(e->n[i].in_vals, 0));
        json_error_t jerr;
        json_t *doc = text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr)
                           : NULL;
        if (!json_is_array(doc)) {
            json_decref(doc);
            return trace_fail(e->d, e->file, path,
                              "expected the process groups as a JSON string "
                              "[{\"pg_name\": ..., \"group_size\": ...}]");
        }
        json_array_append_new(e->pg_docs, doc);
        pgroup *t = realloc(e->pg, (e->n_pg + json_array_size(doc) + 1) *
                                       sizeof *t);
        if (!t)
            return oom(e);
        e->pg = t;
        size_t k;
        json_t *g;
        json_array_foreach(doc, k, g) {
            const char *pn = json_string_value(json_object_get(g, "pg_name"));
            json_t *gs = json_object_get(g, "group_size");
            json_t *rk = json_object_get(g, "ranks");
            json_t *be = json_object_get(g, "backend_id");
            json_int_t size = json_is_integer(gs) ? json_integer_value(gs)
                              : json_is_array(rk)
                                  ? (json_int_t)json_array_size(rk)
                                  : 0;
            if (!pn || size < 0 || size > COMMSCHED_MAX_GROUP_SIZE ||
                (gs && !json_is_integer(gs)) || (rk && !json_is_array(rk)))
                return trace_fail(e->d, e->file, path,
                                  "process group %zu: expected a string "
                                  "pg_name, a group_size in 1..%u and a list "
                                  "of ranks",
                                  k, (unsigned)COMMSCHED_MAX_GROUP_SIZE);
            e->pg[e->n_pg].name = pn;
            e->pg[e->n_pg].backend =
                json_is_integer(be) ? (int64_t)json_integer_value(be) : -1;
            e->pg[e->n_pg].size = (long)size;
            e->n_pg++;
        }
    }
    return 0;
}

static size_t pg_by_name(const et *e, const char *name)
{
    for (size_t g = 0; name && g < e->n_pg; g++)
        if (strcmp(e->pg[g].name, name) == 0)
            return g;
    return SIZE_MAX;
}

/* The process group collective `top` runs on: a "pg_name" its records
 * carry, else the backend id or pg_name among record_param_comms'
 * arguments, else the only group of the trace; SIZE_MAX when none says. */
static size_t pg_of(const et *e, size_t top)
{
    for (size_t c = top; c < e->count; c++) {
        const etnode *x = &e->n[c];
        if (x->top_of != (uint32_t)top)
            continue;
        size_t g = pg_by_name(e, json_string_value(field(x->node, "pg_name")));
        if (g != SIZE_MAX)
            return g;
        const char *name = json_string_value(json_object_get(x->node, "name"));
        if (strcmp(name, "record_param_comms") != 0)
            continue;
        size_t k;
        json_t *v;
        json_array_foreach(x->in_vals, k, v) {
            json_t *inner = json_is_array(v) ? json_array_get(v, 0) : v;
            if ((g = pg_by_name(e, json_string_value(inner))) != SIZE_MAX)
                return g;
            for (g = 0; json_is_integer(v) && g < e->n_pg; g++)
                if (e->pg[g].backend >= 0 &&
                    e->pg[g].backend == (int64_t)json_integer_value(v))
                    return g;
        }
    }
    return e->n_pg == 1 ? 0 : SIZE_MAX;
}

/* The groups the collectives use, sized in this order: --group-size,
 * --ranks, the trace's process-group record (its default group's size
 * for "every rank"); otherwise 8 is assumed and a warning says so. */
typedef struct et_groups {
    const char **name; /* room for e->n_pg + 1: one per process group, */
    long *size;        /* and "world" for collectives no group claims */
    size_t n;
} et_groups;

static const char *group_for(const et *e, const commsched_import_options *o,
                             size_t pg, et_groups *gs)
{
    /* the default group keeps the name every other importer gives it */
    const char *name = pg == SIZE_MAX || strcmp(e->pg[pg].name, "0") == 0
                           ? "world"
                           : e->pg[pg].name;
    for (size_t i = 0; i < gs->n; i++)
        if (strcmp(gs->name[i], name) == 0)
            return name;
    long k = 0;
    for (size_t j = o->n_group_sizes; j-- > 0 && k == 0;)
        if (strcmp(o->group_sizes[j].name, name) == 0)
            k = o->group_sizes[j].size;
    if (k == 0 && o->ranks > 0)
        k = o->ranks;
    if (k == 0 && pg != SIZE_MAX) {
        k = e->pg[pg].size;
        size_t d = pg_by_name(e, "0");
        if (k == 0 && d != SIZE_MAX)
            k = e->pg[d].size;
    }
    if (k == 0) {
        k = 8;
        import_sayf(e->d, COMMSCHED_IMPORT_WARNING, e->file,
                    "the trace does not give the size of group \"%s\": %ld "
                    "ranks assumed; give it with --group-size %s=K or "
                    "--ranks N",
                    name, k, name);
    }
    gs->name[gs->n] = name;
    gs->size[gs->n++] = k;
    return name;
}

/* A collective's tensors when its top op lists none it can read (a
 * TensorList typed otherwise): those of its record_param_comms (inputs:
 * what it sends, outputs: what it receives) or nccl: record. */
static int child_tensors(et *e, size_t i, tensor **ins, size_t *n_in,
                         size_t *cap_in, tensor **outs, size_t *n_out,
                         size_t *cap_out)
{
    for (size_t c = i + 1; c < e->count && *n_in + *n_out == 0; c++) {
        etnode *y = &e->n[c];
        if (y->top_of != (uint32_t)i || y->comm < 0)
            continue;
        int rc = tensors(e, c, "inputs", y->in_vals, y->in_types, ins, n_in,
                         cap_in);
        if (rc == 0)
            rc = tensors(e, c, "outputs", y->out_vals, y->out_types, outs,
                         n_out, cap_out);
        if (rc)
            return rc;
    }
    return 0;
}

/* A collective's input tensors that are really outputs move to *outs: the
 * arguments its schema names as outputs (c10d::allgather_'s
 * output_tensors), and, for the ops whose output is a tensor apart from
 * their input (all-gather, reduce-scatter, all-to-all), an input whose
 * storage is among the op's outputs (a trace without op_schema). Outputs
 * listed twice (as argument and as result) count once. */
static int split_outputs(const et *e, int coll, tensor *ins, size_t *n_in,
                         tensor **outs, size_t *n_out, size_t *cap_out)
{
    int apart = coll == COMMSCHED_COLL_ALL_GATHER ||
                coll == COMMSCHED_COLL_REDUCE_SCATTER ||
                coll == COMMSCHED_COLL_ALL_TO_ALL;
    size_t kept = 0, n_res = *n_out;
    for (size_t k = 0; k < *n_in; k++) {
        int out = ins[k].out;
        for (size_t j = 0; apart && !out && j < n_res; j++)
            out = (*outs)[j].storage == ins[k].storage;
        if (!out) {
            ins[kept++] = ins[k];
            continue;
        }
        int dup = 0;
        for (size_t j = 0; j < *n_out && !dup; j++)
            dup = (*outs)[j].id == ins[k].id &&
                  (*outs)[j].storage == ins[k].storage &&
                  (*outs)[j].offset == ins[k].offset;
        if (dup)
            continue;
        if (*n_out == *cap_out) {
            size_t nc = *cap_out ? 2 * *cap_out : 16;
            tensor *t = realloc(*outs, nc * sizeof *t);
            if (!t)
                return oom(e);
            *outs = t;
            *cap_out = nc;
        }
        (*outs)[(*n_out)++] = ins[k];
    }
    *n_in = kept;
    return 0;
}

/* A builder error, located at the trace's node it comes from:
 * "nodes[30]: ... (generated nodes[7].outputs)". */
static int report_build_error(import_diag *d, const char *file,
                              commsched_error *err, const size_t *src,
                              size_t n_src)
{
    size_t k;
    if (sscanf(err->path, "nodes[%zu]", &k) != 1 || k >= n_src)
        return import_report(d, file, err);
    commsched_error e = *err;
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    snprintf(path, sizeof path, "nodes[%zu]", src[k]);
    commsched_error_clear(err);
    commsched_error_set(err, e.status, path, "%s (generated %s)", e.text,
                        e.path);
    return import_report(d, file, err);
}

static int build(et *e, const commsched_import_options *o, commsched_graph **out)
{
    smap writer = {NULL, NULL, 0, 0};
    tensor *ins = NULL, *outs = NULL;
    size_t cap_in = 0, cap_out = 0, n_in = 0, n_out = 0;
    char(*reads)[128] = NULL;
    const char **inp = NULL;
    size_t cap_r = 0;
    commsched_builder *b = NULL;
    commsched_error err = {0};
    et_groups gs = {malloc((e->n_pg + 1) * sizeof *gs.name),
                    malloc((e->n_pg + 1) * sizeof *gs.size), 0};
    long ops = 0, colls = 0, unsized = 0;
    char unsized_list[400] = "";
    int rc = 0;
    /* the file's node each graph node comes from (a collective and its
     * wait share one), so errors the builder finds name the source */
    size_t *src = malloc(2 * e->count * sizeof *src), n_src = 0;
    if (!gs.name || !gs.size || !src) {
        free(gs.name);
        free(gs.size);
        free(src);
        return oom(e);
    }
    if (commsched_builder_create("pytorch-et", &b, &err) != COMMSCHED_OK) {
        rc = import_report(e->d, e->file, &err);
        goto done;
    }
    for (size_t i = 0; i < e->count && rc == 0; i++) {
        etnode *x = &e->n[i];
        if (!x->top)
            continue;
        const char *name = json_string_value(json_object_get(x->node, "name"));
        snprintf(x->name, sizeof x->name, "%lld:%.*s", (long long)x->id,
                 (int)commsched_utf8_cut(name, 80), name);
        if ((rc = tensors(e, i, "inputs", x->in_vals, x->in_types, &ins,
                          &n_in, &cap_in)) != 0 ||
            (rc = tensors(e, i, "outputs", x->out_vals, x->out_types, &outs,
                          &n_out, &cap_out)) != 0)
            break;
        if (x->coll >= 0 && n_in + n_out == 0 &&
            (rc = child_tensors(e, i, &ins, &n_in, &cap_in, &outs, &n_out,
                                &cap_out)) != 0)
            break;
        if (x->coll >= 0 &&
            (rc = split_outputs(e, x->coll, ins, &n_in, &outs, &n_out,
                                &cap_out)) != 0)
            break;
        if (n_in + 1 > cap_r) {
            size_t nc = 2 * (n_in + 1);
            char(*r)[128] = realloc(reads, nc * sizeof *reads);
            if (r)
                reads = r;
            const char **p = realloc(inp, nc * sizeof *inp);
            if (p)
                inp = p;
            if (!r || !p) {
                rc = oom(e);
                break;
            }
            cap_r = nc;
        }
        /* reads: the last writers of its input storages */
        size_t nr = 0;
        double bytes = 0;
        int64_t created = 0;
        const char *in_place = NULL; /* a read it writes over */
        for (size_t k = 0; k < n_in; k++) {
            bytes += (double)ins[k].bytes;
            x->cuda |= ins[k].cuda;
            uint32_t w = smap_get(&writer, ins[k].storage);
            if (w == (uint32_t)i)
                continue;
            char want[128];
            etnode *d = w == UINT32_MAX ? NULL : &e->n[w];
            if (!d) {
                /* No operator of the trace wrote it: DDP fills its
                 * gradient buckets in C++ without a recorded op, and a
                 * c10d::allreduce_ on such a tensor list would move
                 * nothing. A collective reads it as a graph input of the
                 * tensor's size (a compute op just has no dependency). */
                if (x->coll < 0 || ins[k].bytes <= 0)
                    continue;
                snprintf(want, sizeof want, "storage:%lld",
                         (long long)ins[k].storage);
                size_t j = 0;
                while (j < nr && strcmp(reads[j], want) != 0)
                    j++;
                if (j == nr)
                    (void)commsched_builder_add_input(b, want, ins[k].bytes,
                                                      0, &err);
            } else if (d->coll >= 0 && d->cuda) {
                if (!d->waited) {
                    src[n_src++] = d->src;
                    import_add_wait(b, d->name, &err);
                    d->waited = 1;
                }
                snprintf(want, sizeof want, "%s.wait", d->name);
            } else {
                snprintf(want, sizeof want, "%s", d->name);
            }
            size_t j = 0;
            while (j < nr && strcmp(reads[j], want) != 0)
                j++;
            if (j == nr) {
                memcpy(reads[nr], want, sizeof want);
                inp[nr] = reads[nr];
                nr++;
            }
            for (size_t m = 0; m < n_out && !in_place; m++)
                if (outs[m].storage == ins[k].storage)
                    in_place = reads[j];
        }
        for (size_t k = 0; k < n_out; k++) {
            bytes += (double)outs[k].bytes;
            x->cuda |= outs[k].cuda;
            int inplace = 0;
            for (size_t j = 0; j < n_in && !inplace; j++)
                inplace = ins[j].storage == outs[k].storage;
            if (!inplace && created <= COMMSCHED_MAX_SIZE - outs[k].bytes)
                created += outs[k].bytes;
        }
        commsched_output_spec os = {x->name, created, NULL};
        commsched_node_spec s = {0};
        s.name = x->name;
        s.inputs = inp;
        s.n_inputs = nr;
        s.outputs = &os;
        s.n_outputs = 1;
        s.runtime_ns = -1;
        s.flops = -1;
        s.bytes = bytes;
        if (x->coll >= 0) {
            /* What it writes: the output tensors it does not write in
             * place (an all-gather's output_tensors, k times its input);
             * an in-place one (all_reduce_, broadcast_) aliases the
             * buffer it reduces into, as Inductor's graphs do. */
            if (created == 0 && in_place)
                os.alias_of = in_place;
            if (created == 0 && !in_place && unsized++ < 3) {
                size_t l = strlen(unsized_list);
                snprintf(unsized_list + l, sizeof unsized_list - l, "%s%s",
                         l ? ", " : "", x->name);
            }
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = commsched_coll_op_str((commsched_coll_op)x->coll);
            s.group = group_for(e, o, pg_of(e, i), &gs);
            s.is_sync = !x->cuda;
            s.bytes = -1;
            colls++;
        } else {
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = name;
            if ((rc = gemm_flops(e, i, name, x->in_shapes, &s.flops)) != 0)
                break;
            s.gemm_like = s.flops > 0;
        }
        src[n_src++] = x->src;
        (void)commsched_builder_add_node(b, &s, &err);
        ops++;
        /* it now wrote its outputs, and a collective its inputs too */
        for (size_t k = 0; k < n_out && rc == 0; k++)
            if (smap_put(&writer, outs[k].storage, (uint32_t)i) != 0)
                rc = oom(e);
        for (size_t k = 0; x->coll >= 0 && k < n_in && rc == 0; k++)
            if (smap_put(&writer, ins[k].storage, (uint32_t)i) != 0)
                rc = oom(e);
    }
    for (size_t i = 0; i < e->count && rc == 0; i++)
        if (e->n[i].top && e->n[i].coll >= 0 && e->n[i].cuda &&
            !e->n[i].waited) {
            src[n_src++] = e->n[i].src;
            import_add_wait(b, e->n[i].name, &err);
            e->n[i].waited = 1;
        }
    for (size_t g = 0; g < gs.n && rc == 0; g++)
        (void)commsched_builder_add_group(b, gs.name[g], gs.size[g], 0, &err);
    if (rc == 0 && ops == 0) {
        rc = import_fail(e->d, COMMSCHED_ESCHEMA,
                         "%s: no operator in the trace", e->file);
    }
    if (rc == 0) {
        rc = commsched_builder_finish(b, 0, out, &err) == COMMSCHED_OK
                 ? 0
                 : report_build_error(e->d, e->file, &err, src, n_src);
        b = NULL;
    }
    if (rc == 0) {
        import_say say;
        FILE *m = import_say_begin(&say, e->d);
        if (m) {
            fprintf(m,
                    "%zu nodes, %ld top-level operator%s imported (%ld "
                    "collective%s",
                    e->count, ops, ops == 1 ? "" : "s", colls,
                    colls == 1 ? "" : "s");
            for (size_t g = 0; g < gs.n; g++)
                fprintf(m, "%s group \"%s\" of %ld ranks", g ? "," : ";",
                        gs.name[g], gs.size[g]);
            fprintf(m, "); runtimes from the cost model (an execution trace "
                       "has no durations: import its Kineto trace for "
                       "measured ones)");
            import_say_end(&say, e->d, COMMSCHED_IMPORT_NOTE, e->file);
        }
        if (unsized)
            import_sayf(e->d, COMMSCHED_IMPORT_WARNING, e->file,
                        "%ld collective%s whose "
                        "size the trace does not give (no tensor argument, "
                        "nor one of its own inner records): %s%s; imported as "
                        "0 bytes",
                        unsized, unsized == 1 ? "" : "s", unsized_list,
                        unsized > 3 ? ", ..." : "");
    }
done:
    commsched_builder_destroy(b);
    free(src);
    free(gs.name);
    free(gs.size);
    free(writer.key);
    free(writer.val);
    free(ins);
    free(outs);
    free(reads);
    free(inp);
    return rc;
}

static int cmp_rf(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int pytorch_et_load(import_diag *d, const char *path, uint64_t max_memory,
                    pytorch_et **out)
{
    *out = NULL;
    et *e = calloc(1, sizeof *e);
    if (!e)
        return import_oom(d);
    e->file = import_file_name(path);
    e->d = d;
    int rc = trace_json_load(d, path, max_memory, &e->root);
    if (rc == 0)
        rc = read_nodes(e, e->root);
    if (rc == 0 && !(e->rf = malloc(e->count * sizeof *e->rf)))
        rc = oom(e);
    for (size_t i = 0; rc == 0 && i < e->count; i++) {
        json_t *rf = field(e->n[i].node, "rf_id");
        if (json_is_integer(rf)) {
            e->rf[e->n_rf][0] = (int64_t)json_integer_value(rf);
            e->rf[e->n_rf++][1] = (int64_t)i;
        }
    }
    if (rc != 0) {
        pytorch_et_destroy(e);
        return rc;
    }
    if (e->n_rf > 1) /* none: e->rf is NULL, which qsort must not get */
        qsort(e->rf, e->n_rf, sizeof *e->rf, cmp_rf);
    *out = e;
    return 0;
}

void pytorch_et_destroy(pytorch_et *e)
{
    if (!e)
        return;
    free(e->n);
    free(e->rf);
    free(e->pg);
    json_decref(e->pg_docs);
    json_decref(e->root);
    free(e);
}

size_t pytorch_et_find_rf(const pytorch_et *e, int64_t rf)
{
    size_t lo = 0, hi = e->n_rf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->rf[mid][0] < rf)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* several nodes may share an rf_id (a thread's root is 0): the
     * first, an operator when one is */
    size_t best = SIZE_MAX;
    for (size_t j = lo; j < e->n_rf && e->rf[j][0] == rf; j++) {
        size_t i = (size_t)e->rf[j][1];
        if (best == SIZE_MAX || (e->n[i].in_vals && !e->n[best].in_vals))
            best = i;
    }
    return best;
}

int pytorch_et_tensors(pytorch_et *e, size_t i, int outputs, et_tensor **ts,
                       size_t *n, size_t *cap)
{
    const etnode *x = &e->n[i];
    return outputs ? tensors(e, i, "outputs", x->out_vals, x->out_types, ts,
                             n, cap)
                   : tensors(e, i, "inputs", x->in_vals, x->in_types, ts, n,
                             cap);
}

int import_pytorch_et(import_diag *d, const char *path,
                      const commsched_import_options *o, commsched_graph **out)
{
    et e;
    memset(&e, 0, sizeof e);
    e.file = import_file_name(path);
    e.d = d;
    json_t *root = NULL;
    int rc = trace_json_load(d, path, o->max_memory, &root);
    if (rc == 0)
        rc = read_nodes(&e, root);
    if (rc == 0) {
        rc = classify(&e);
        if (rc == 0)
            rc = read_groups(&e);
    }
    if (rc == 0)
        rc = build(&e, o, out);
    free(e.n);
    free(e.pg);
    json_decref(e.pg_docs);
    json_decref(root);
    return rc;
}
