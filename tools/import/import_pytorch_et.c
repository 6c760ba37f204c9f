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
 *   Bytes: the largest tensor among them. On CUDA tensors it is async, and
 *   its wait goes before the first operator that reads a storage it wrote.
 * - Runtimes come from the cost model: bytes = the tensor bytes read and
 *   written, flops for mm / addmm / bmm / matmul / linear from the shapes.
 * - Group: "world" of --ranks ranks (default 8). */
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

struct et {
    const char *file;
    etnode *n;
    size_t count;
    int64_t (*rf)[2]; /* (rf_id, node index), sorted; import kineto --et */
    size_t n_rf;
    json_t *root;
};
typedef struct et et;

static int oom(void)
{
    fprintf(stderr, "commsched: out of memory\n");
    return EXIT_RUNTIME;
}

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
        return trace_fail(e->file, path,
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
        return trace_fail(e->file, path,
                          "a tensor is [tensor_id, storage_id, offset, "
                          "numel, itemsize, device]");
    for (size_t j = 0; j < 5; j++)
        if (!json_is_integer(json_array_get(t, j)) ||
            json_integer_value(json_array_get(t, j)) < 0)
            return trace_fail(e->file, path,
                              "tensor field %zu is not an integer >= 0", j);
    double numel = (double)json_integer_value(json_array_get(t, 3));
    double item = (double)json_integer_value(json_array_get(t, 4));
    if (numel * item > (double)COMMSCHED_MAX_SIZE)
        return trace_fail(e->file, path,
                          "numel x itemsize is beyond the format's limit of "
                          "2^53 bytes");
    out->storage = (int64_t)json_integer_value(json_array_get(t, 1));
    out->bytes = (int64_t)(numel * item);
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
            return oom();
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
        return trace_fail(e->file, path, "tensor lists nested deeper than 8");
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

/* Every tensor of one side, into *ts (grown; *n entries). */
static int tensors(et *e, size_t i, const char *which, json_t *vals,
                   json_t *types, tensor **ts, size_t *n, size_t *cap)
{
    *n = 0;
    size_t k;
    json_t *v;
    json_array_foreach(vals, k, v) {
        const char *t = json_string_value(json_array_get(types, k));
        if (!t || !strstr(t, "Tensor("))
            continue;
        /* "Tensor(float)": the value is the tensor itself (depth 0);
         * "GenericList[...]": lists of them */
        int rc = walk(e, i, which, k, v, strncmp(t, "Tensor(", 7) == 0 ? 0 : 1,
                      ts, n, cap);
        if (rc)
            return rc;
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
        return trace_fail(e->file, "", "expected a JSON object (a PyTorch "
                                       "execution trace)");
    const char *schema = json_string_value(json_object_get(root, "schema"));
    if (!schema)
        return trace_fail(e->file, "schema", "missing (not a PyTorch "
                                             "execution trace?)");
    if (strncmp(schema, "1.", 2) != 0)
        return trace_fail(e->file, "schema",
                          "\"%.40s\": this importer reads schema 1.x", schema);
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return trace_fail(e->file, "nodes", "expected a non-empty array");
    e->count = json_array_size(nodes);
    e->n = calloc(e->count, sizeof *e->n);
    if (!e->n)
        return oom();
    for (size_t i = 0; i < e->count; i++) {
        json_t *node = json_array_get(nodes, i);
        etnode *x = &e->n[i];
        snprintf(path, sizeof path, "nodes[%zu]", i);
        if (!json_is_object(node))
            return trace_fail(e->file, path, "expected an object (a node)");
        x->node = node;
        x->src = i;
        json_t *id = json_object_get(node, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0)
            return trace_fail(e->file, path, "needs an integer \"id\" >= 0");
        x->id = (int64_t)json_integer_value(id);
        if (!json_is_string(json_object_get(node, "name")))
            return trace_fail(e->file, path, "needs a string \"name\"");
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
            return trace_fail(e->file, "nodes", "duplicate id %lld",
                              (long long)e->n[i].id);
    return 0;
}

/* Which nodes are operators, which are top-level, and the collectives. */
static void classify(et *e)
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
    /* The top-level op of each node: walk up the parents (bounded by the
     * node count, so a parent cycle in a hostile file ends). */
    for (size_t i = 0; i < e->count; i++) {
        uint32_t top = UINT32_MAX;
        size_t cur = i;
        for (size_t steps = 0; steps <= e->count && cur != SIZE_MAX; steps++) {
            if (e->n[cur].is_op)
                top = (uint32_t)cur;
            int64_t p = e->n[cur].parent;
            size_t next = p >= 0 && p != e->n[cur].id ? find(e, p) : SIZE_MAX;
            cur = next;
        }
        e->n[i].top_of = top;
        e->n[i].top = top == (uint32_t)i;
    }
    for (size_t i = 0; i < e->count; i++) {
        etnode *x = &e->n[i];
        if (x->comm < 0 || x->top_of == UINT32_MAX)
            continue;
        etnode *t = &e->n[x->top_of];
        if (t->coll < 0 || (uint32_t)i == x->top_of)
            t->coll = x->comm;
    }
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

/* 2 x the multiply-adds of a matrix product, from the input shapes. */
static double gemm_flops(const char *name, json_t *shapes)
{
    const char *op = strncmp(name, "aten::", 6) == 0 ? name + 6 : name;
    size_t a = 0;
    if (strcmp(op, "addmm") == 0 || strcmp(op, "baddbmm") == 0)
        a = 1; /* the bias comes first */
    else if (strcmp(op, "mm") != 0 && strcmp(op, "bmm") != 0 &&
             strcmp(op, "matmul") != 0 && strcmp(op, "linear") != 0)
        return -1;
    json_t *x = json_array_get(shapes, a), *w = json_array_get(shapes, a + 1);
    size_t nx = json_array_size(x), nw = json_array_size(w);
    if (nx < 2 || nw < 1)
        return -1;
    double rows = 1;
    for (size_t i = 0; i + 1 < nx; i++)
        rows *= trace_number(json_array_get(x, i));
    double k = trace_number(json_array_get(x, nx - 1));
    double n = strcmp(op, "linear") == 0
                   ? trace_number(json_array_get(w, 0))
                   : trace_number(json_array_get(w, nw - 1));
    double f = 2 * rows * k * n;
    return f > 0 && f < COMMSCHED_MAX_WORK ? f : -1;
}

static int build(et *e, const import_options *o, commsched_graph **out)
{
    smap writer = {NULL, NULL, 0, 0};
    tensor *ins = NULL, *outs = NULL;
    size_t cap_in = 0, cap_out = 0, n_in = 0, n_out = 0;
    char(*reads)[128] = NULL;
    const char **inp = NULL;
    size_t cap_r = 0;
    commsched_builder *b = NULL;
    commsched_error err = {0};
    long ops = 0, colls = 0, ranks = o->ranks > 0 ? o->ranks : 8;
    int rc = 0;
    if (commsched_builder_create("pytorch-et", &b, &err) != COMMSCHED_OK)
        return cli_report(e->file, &err);
    for (size_t i = 0; i < e->count; i++)
        if (e->n[i].top && e->n[i].coll >= 0) {
            (void)commsched_builder_add_group(b, "world", ranks, 0, &err);
            break;
        }
    for (size_t i = 0; i < e->count && rc == 0; i++) {
        etnode *x = &e->n[i];
        if (!x->top)
            continue;
        const char *name = json_string_value(json_object_get(x->node, "name"));
        snprintf(x->name, sizeof x->name, "%lld:%.*s", (long long)x->id,
                 (int)cli_utf8_prefix(name, 80), name);
        if ((rc = tensors(e, i, "inputs", x->in_vals, x->in_types, &ins,
                          &n_in, &cap_in)) != 0 ||
            (rc = tensors(e, i, "outputs", x->out_vals, x->out_types, &outs,
                          &n_out, &cap_out)) != 0)
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
                rc = oom();
                break;
            }
            cap_r = nc;
        }
        /* reads: the last writers of its input storages */
        size_t nr = 0;
        double bytes = 0;
        int64_t created = 0, biggest = 0;
        for (size_t k = 0; k < n_in; k++) {
            bytes += (double)ins[k].bytes;
            if (ins[k].bytes > biggest)
                biggest = ins[k].bytes;
            x->cuda |= ins[k].cuda;
            uint32_t w = smap_get(&writer, ins[k].storage);
            if (w == UINT32_MAX || w == (uint32_t)i)
                continue;
            etnode *d = &e->n[w];
            char want[128];
            if (d->coll >= 0 && d->cuda) {
                if (!d->waited) {
                    import_add_wait(b, d->name, &err);
                    d->waited = 1;
                }
                snprintf(want, sizeof want, "%s.wait", d->name);
            } else {
                snprintf(want, sizeof want, "%s", d->name);
            }
            int dup = 0;
            for (size_t j = 0; j < nr && !dup; j++)
                dup = strcmp(reads[j], want) == 0;
            if (!dup) {
                memcpy(reads[nr], want, sizeof want);
                inp[nr] = reads[nr];
                nr++;
            }
        }
        for (size_t k = 0; k < n_out; k++) {
            bytes += (double)outs[k].bytes;
            if (outs[k].bytes > biggest)
                biggest = outs[k].bytes;
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
            /* its record_param_comms / nccl: children may hold the
             * tensors when the top op lists them as a TensorList */
            for (size_t c = i + 1; c < e->count; c++) {
                if (e->n[c].top_of != (uint32_t)i || e->n[c].comm < 0)
                    continue;
                size_t nn = 0;
                if ((rc = tensors(e, c, "inputs", e->n[c].in_vals,
                                  e->n[c].in_types, &outs, &nn, &cap_out)) !=
                    0)
                    break;
                for (size_t k = 0; k < nn; k++)
                    if (outs[k].bytes > biggest)
                        biggest = outs[k].bytes;
            }
            if (rc)
                break;
            os.size = biggest;
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = commsched_coll_op_str((commsched_coll_op)x->coll);
            s.group = "world";
            s.is_sync = !x->cuda;
            s.bytes = -1;
            colls++;
        } else {
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = name;
            s.flops = gemm_flops(name, x->in_shapes);
            s.gemm_like = s.flops > 0;
        }
        (void)commsched_builder_add_node(b, &s, &err);
        ops++;
        /* it now wrote its outputs, and a collective its inputs too */
        for (size_t k = 0; k < n_out && rc == 0; k++)
            if (smap_put(&writer, outs[k].storage, (uint32_t)i) != 0)
                rc = oom();
        for (size_t k = 0; x->coll >= 0 && k < n_in && rc == 0; k++)
            if (smap_put(&writer, ins[k].storage, (uint32_t)i) != 0)
                rc = oom();
    }
    for (size_t i = 0; i < e->count && rc == 0; i++)
        if (e->n[i].top && e->n[i].coll >= 0 && e->n[i].cuda &&
            !e->n[i].waited) {
            import_add_wait(b, e->n[i].name, &err);
            e->n[i].waited = 1;
        }
    if (rc == 0 && ops == 0) {
        fprintf(stderr, "commsched: %s: no operator in the trace\n", e->file);
        rc = EXIT_INPUT;
    }
    if (rc == 0) {
        rc = commsched_builder_finish(b, 0, out, &err) == COMMSCHED_OK
                 ? 0
                 : cli_report(e->file, &err);
        b = NULL;
    }
    if (rc == 0)
        fprintf(stderr,
                "commsched import: note: %s: %zu nodes, %ld top-level "
                "operators imported (%ld collectives on %ld ranks); runtimes "
                "from the cost model (an execution trace has no durations: "
                "import its Kineto trace for measured ones)\n",
                e->file, e->count, ops, colls, ranks);
    commsched_builder_destroy(b);
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

int pytorch_et_load(const char *path, pytorch_et **out)
{
    *out = NULL;
    et *e = calloc(1, sizeof *e);
    if (!e)
        return oom();
    e->file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    int rc = trace_json_load(path, &e->root);
    if (rc == 0)
        rc = read_nodes(e, e->root);
    if (rc == 0 && !(e->rf = malloc(e->count * sizeof *e->rf)))
        rc = oom();
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

int import_pytorch_et(const char *path, const import_options *o,
                      commsched_graph **out)
{
    et e = {strcmp(path, "-") == 0 ? "<stdin>" : path, NULL, 0, NULL, 0,
            NULL};
    json_t *root = NULL;
    int rc = trace_json_load(path, &root);
    if (rc == 0)
        rc = read_nodes(&e, root);
    if (rc == 0) {
        classify(&e);
        rc = build(&e, o, out);
    }
    free(e.n);
    json_decref(root);
    return rc;
}
