/* commsched import chakra FILE — Chakra execution traces in their simple
 * JSON form (the "workload_graph" that Chakra's json_node feeder reads):
 *   {"workload_graph": [{"Id", "Name", "NodeType", "data_deps", "runtime",
 *     "is_cpu_op", optional "ctrlDeps", "tensor_size", "comm_type",
 *     "comm_size", "comm_priority", "comm_src", "comm_dst", "comm_tag"}],
 *    optional "workload_name", "ngpus", "soc"}
 *
 * Mapping (docs/WORKLOADS.md):
 * - NodeType 4 (COMP), 2/3 (MEM_LOAD/STORE): compute nodes; 7 (COMM_COLL):
 *   collectives, their kind from comm_type when given, else from the name
 *   (ncclKernel_AllReduce_..., c10d::broadcast_); 5/6 (COMM_SEND/RECV):
 *   send/recv; 1 (METADATA): dropped, dependencies bridged across it.
 * - data_deps are the dependencies (Chakra's feeder resolves only those);
 *   ctrlDeps are the host trace's caller links, often to nodes outside the
 *   file, and are checked for type but not used.
 * - Order: the feeder's, a topological order that issues the smallest ready
 *   Id first.
 * - runtime is in microseconds; it becomes runtime_ns.
 * - A GPU collective (is_cpu_op false) is asynchronous: its wait goes right
 *   before its first consumer (at the end when nothing reads it). A CPU-side
 *   collective (c10d::broadcast_ with is_cpu_op true) blocks the host: a
 *   sync collective. --gpu-only drops every CPU op.
 * - Every node writes one buffer that its data dependents read, sized
 *   tensor_size (compute) or comm_size (collectives). The simple form often
 *   has neither: such buffers are 0 bytes and the importer reports how many.
 * - Collectives use one group, "world", of --ranks ranks (default: the
 *   trace's ngpus, else 8). NCCL kernel names also give dtype and reduce op.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

enum { NT_METADATA = 1, NT_MEM_LOAD = 2, NT_MEM_STORE = 3, NT_COMP = 4,
       NT_SEND = 5, NT_RECV = 6, NT_COLL = 7 };

typedef struct cnode {
    int64_t id;
    const char *name;   /* borrowed from the JSON document */
    int type;
    int cpu;
    double runtime_us;  /* < 0: absent */
    int64_t size;       /* < 0: absent */
    int coll;           /* commsched_coll_op or -1 */
    commsched_dtype dtype;
    commsched_reduce_op rop;
    uint32_t *deps;     /* indices into the node array */
    size_t n_deps;
    int keep;
    /* emission */
    char node_name[112]; /* "<Id>:" (<= 20 bytes) and <= 80 of the name */
    int waited;         /* GPU collective: wait emitted */
    int has_user;
} cnode;

typedef struct chakra {
    const char *file;
    cnode *n;
    size_t count;
    commsched_error err;
} chakra;

static int fail_at(chakra *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail_at(chakra *c, const char *path, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    commsched_error_set(&c->err, COMMSCHED_ESCHEMA, path, "%s", text);
    return cli_report(c->file, &c->err);
}

/* The collective kind from Chakra's CollectiveCommType. */
static int coll_from_type(json_int_t t)
{
    switch (t) {
    case 0: return COMMSCHED_COLL_ALL_REDUCE;
    case 1: return COMMSCHED_COLL_REDUCE;
    case 2: return COMMSCHED_COLL_ALL_GATHER;
    case 5: return COMMSCHED_COLL_BROADCAST;
    case 6: return COMMSCHED_COLL_ALL_TO_ALL;
    case 7:
    case 8: return COMMSCHED_COLL_REDUCE_SCATTER;
    case 9: return COMMSCHED_COLL_BARRIER;
    default: return -1; /* GATHER, SCATTER: no counterpart */
    }
}

/* Case-insensitive search ignoring '_' in the haystack, so
 * "ncclKernel_AllReduce", "all_reduce" and "allreduce" all match
 * "allreduce". */
static int name_has(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++) {
        const char *p = h;
        size_t k = 0;
        while (*p && k < nl) {
            if (*p == '_' && k > 0) {
                p++;
                continue;
            }
            if ((*p | 0x20) != (needle[k] | 0x20))
                break;
            p++;
            k++;
        }
        if (k == nl)
            return 1;
    }
    return 0;
}

static int coll_from_name(const char *name)
{
    static const struct {
        const char *key;
        int op;
    } keys[] = {
        {"allreduce", COMMSCHED_COLL_ALL_REDUCE},
        {"reducescatter", COMMSCHED_COLL_REDUCE_SCATTER},
        {"allgather", COMMSCHED_COLL_ALL_GATHER},
        {"alltoall", COMMSCHED_COLL_ALL_TO_ALL},
        {"sendrecv", COMMSCHED_COLL_ALL_TO_ALL}, /* NCCL's all-to-all kernel */
        {"broadcast", COMMSCHED_COLL_BROADCAST},
        {"barrier", COMMSCHED_COLL_BARRIER},
        {"reduce", COMMSCHED_COLL_REDUCE},
        {"send", COMMSCHED_COLL_SEND},
        {"recv", COMMSCHED_COLL_RECV},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (name_has(name, keys[i].key))
            return keys[i].op;
    return -1;
}

/* ncclKernel_<Coll>_<Algo>_<Proto>_<RedOp>_<type>(...): the last two
 * fields give the reduce op and the element type. */
static void nccl_details(const char *name, commsched_dtype *dt,
                         commsched_reduce_op *rop)
{
    static const struct {
        const char *t;
        commsched_dtype d;
    } types[] = {{"float", COMMSCHED_DTYPE_FLOAT32},
                 {"half", COMMSCHED_DTYPE_FLOAT16},
                 {"double", COMMSCHED_DTYPE_FLOAT64},
                 {"__nv_bfloat16", COMMSCHED_DTYPE_BFLOAT16},
                 {"bfloat16", COMMSCHED_DTYPE_BFLOAT16},
                 {"int8_t", COMMSCHED_DTYPE_INT8},
                 {"uint8_t", COMMSCHED_DTYPE_UINT8},
                 {"int32_t", COMMSCHED_DTYPE_INT32},
                 {"int64_t", COMMSCHED_DTYPE_INT64}};
    static const struct {
        const char *r;
        commsched_reduce_op op;
    } ops[] = {{"Sum", COMMSCHED_REDUCE_SUM},
               {"Prod", COMMSCHED_REDUCE_PRODUCT},
               {"Max", COMMSCHED_REDUCE_MAX},
               {"Min", COMMSCHED_REDUCE_MIN},
               {"Avg", COMMSCHED_REDUCE_AVG},
               {"PreMulSum", COMMSCHED_REDUCE_PREMUL_SUM}};
    if (strncmp(name, "ncclKernel_", 11) != 0 &&
        strncmp(name, "ncclDevKernel_", 14) != 0)
        return;
    char buf[128];
    size_t len = strcspn(name, "(");
    if (len >= sizeof buf)
        return;
    memcpy(buf, name, len);
    buf[len] = '\0';
    char *last = strrchr(buf, '_');
    if (!last)
        return;
    /* the type may itself hold underscores (int8_t, __nv_bfloat16) */
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t tl = strlen(types[i].t);
        if (len > tl + 1 && strcmp(buf + len - tl, types[i].t) == 0 &&
            buf[len - tl - 1] == '_') {
            *dt = types[i].d;
            buf[len - tl - 1] = '\0';
            last = strrchr(buf, '_');
            if (!last)
                return;
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
                if (strcmp(last + 1, ops[k].r) == 0)
                    *rop = ops[k].op;
            return;
        }
    }
}

/* "216:aten::flatten_dense_tensors": the Id and the name up to its
 * argument list (a parenthesised group followed by "::" is a namespace and
 * kept), at most 80 bytes, never cut inside a UTF-8 character. */
static void short_name(const cnode *n, char *dst, size_t size)
{
    char buf[81];
    size_t k = 0, max = cli_utf8_prefix(n->name, sizeof buf - 1);
    for (const char *p = n->name; *p && k < max; p++) {
        if (*p == '(') {
            const char *close = strchr(p, ')');
            if (!close || strncmp(close + 1, "::", 2) != 0)
                break;
        }
        buf[k++] = *p;
    }
    while (k > 0 && buf[k - 1] == ' ')
        k--;
    buf[k] = '\0';
    snprintf(dst, size, "%lld:%s", (long long)n->id, buf);
}

static int get_int(chakra *c, json_t *v, const char *path, int64_t min,
                   int64_t *out)
{
    *out = 0;
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return fail_at(c, path, "expected an integer >= %lld",
                       (long long)min);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* Sizes within the format's limit, reported at the record's field. */
static int check_size(chakra *c, const char *path, int64_t v)
{
    if (v > COMMSCHED_MAX_SIZE)
        return fail_at(c, path,
                       "%lld bytes is beyond the format's limit of 2^53",
                       (long long)v);
    return 0;
}

/* Reads and checks every record. */
static int read_records(chakra *c, json_t *root, long *ngpus)
{
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_object(root))
        return fail_at(c, "", "expected a JSON object with \"workload_graph\"");
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "workload_graph") == 0)
            continue;
        if (strcmp(key, "workload_name") == 0 || strcmp(key, "soc") == 0) {
            if (!json_is_string(val))
                return fail_at(c, key, "expected a string");
        } else if (strcmp(key, "ngpus") == 0) {
            int64_t v = 0;
            int rc = get_int(c, val, key, 1, &v);
            if (rc)
                return rc;
            if (v > COMMSCHED_MAX_GROUP_SIZE)
                return fail_at(c, key,
                               "%lld is beyond the %u ranks a group may have",
                               (long long)v, COMMSCHED_MAX_GROUP_SIZE);
            *ngpus = (long)v;
        } else {
            return fail_at(c, key,
                           "unknown field (workload_graph, workload_name, "
                           "ngpus, soc)");
        }
    }
    json_t *arr = json_object_get(root, "workload_graph");
    if (!arr)
        return fail_at(c, "", "missing \"workload_graph\"");
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail_at(c, "workload_graph", "expected a non-empty array");
    c->count = json_array_size(arr);
    c->n = calloc(c->count, sizeof *c->n);
    if (!c->n) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < c->count; i++) {
        json_t *r = json_array_get(arr, i);
        cnode *n = &c->n[i];
        n->runtime_us = -1;
        n->size = -1;
        n->coll = -1;
        int have_id = 0, have_name = 0, have_type = 0, rc;
        int64_t comm_size = -1, tensor_size = -1;
        snprintf(path, sizeof path, "workload_graph[%zu]", i);
        if (!json_is_object(r))
            return fail_at(c, path, "expected an object (a node)");
        json_object_foreach(r, key, val) {
            snprintf(path, sizeof path, "workload_graph[%zu].%s", i, key);
            int64_t v = 0;
            if (strcmp(key, "Id") == 0) {
                if ((rc = get_int(c, val, path, 0, &n->id)) != 0)
                    return rc;
                have_id = 1;
            } else if (strcmp(key, "Name") == 0) {
                if (!json_is_string(val))
                    return fail_at(c, path, "expected a string");
                n->name = json_string_value(val);
                have_name = 1;
            } else if (strcmp(key, "NodeType") == 0) {
                if ((rc = get_int(c, val, path, 0, &v)) != 0)
                    return rc;
                if (v < NT_METADATA || v > NT_COLL)
                    return fail_at(c, path,
                                   "unknown node type %lld (1 METADATA, 2 "
                                   "MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 "
                                   "COMM_SEND, 6 COMM_RECV, 7 COMM_COLL)",
                                   (long long)v);
                n->type = (int)v;
                have_type = 1;
            } else if (strcmp(key, "runtime") == 0) {
                if (!json_is_number(val) || json_number_value(val) < 0)
                    return fail_at(c, path,
                                   "expected a non-negative number "
                                   "(microseconds)");
                if (json_number_value(val) > COMMSCHED_MAX_RUNTIME_NS / 1e3)
                    return fail_at(c, path,
                                   "%g microseconds is beyond the format's "
                                   "limit of %g",
                                   json_number_value(val),
                                   COMMSCHED_MAX_RUNTIME_NS / 1e3);
                n->runtime_us = json_number_value(val);
            } else if (strcmp(key, "is_cpu_op") == 0) {
                if (!json_is_boolean(val))
                    return fail_at(c, path, "expected true or false");
                n->cpu = json_is_true(val);
            } else if (strcmp(key, "data_deps") == 0 ||
                       strcmp(key, "ctrlDeps") == 0) {
                if (!json_is_array(val))
                    return fail_at(c, path, "expected an array of node Ids");
                for (size_t k = 0; k < json_array_size(val); k++) {
                    char p2[COMMSCHED_ERROR_PATH_LENGTH + 24];
                    snprintf(p2, sizeof p2, "%s[%zu]", path, k);
                    if ((rc = get_int(c, json_array_get(val, k), p2, 0, &v)) !=
                        0)
                        return rc;
                }
            } else if (strcmp(key, "tensor_size") == 0) {
                if ((rc = get_int(c, val, path, 0, &tensor_size)) != 0 ||
                    (rc = check_size(c, path, tensor_size)) != 0)
                    return rc;
            } else if (strcmp(key, "comm_size") == 0) {
                if ((rc = get_int(c, val, path, 0, &comm_size)) != 0 ||
                    (rc = check_size(c, path, comm_size)) != 0)
                    return rc;
            } else if (strcmp(key, "comm_type") == 0) {
                if ((rc = get_int(c, val, path, 0, &v)) != 0)
                    return rc;
                n->coll = coll_from_type(v);
                if (n->coll < 0)
                    return fail_at(c, path,
                                   "collective type %lld has no commsched "
                                   "counterpart (GATHER and SCATTER are not "
                                   "supported)",
                                   (long long)v);
            } else if (strcmp(key, "comm_priority") == 0 ||
                       strcmp(key, "comm_src") == 0 ||
                       strcmp(key, "comm_dst") == 0 ||
                       strcmp(key, "comm_tag") == 0) {
                if (!json_is_integer(val))
                    return fail_at(c, path, "expected an integer");
            } else {
                return fail_at(c, path, "unknown field");
            }
        }
        snprintf(path, sizeof path, "workload_graph[%zu]", i);
        if (!have_id)
            return fail_at(c, path, "missing \"Id\"");
        if (!have_name)
            return fail_at(c, path, "missing \"Name\"");
        if (!have_type)
            return fail_at(c, path, "missing \"NodeType\"");
        if (n->type == NT_COLL || n->type == NT_SEND || n->type == NT_RECV) {
            n->size = comm_size >= 0 ? comm_size : tensor_size;
            if (n->type == NT_SEND)
                n->coll = COMMSCHED_COLL_SEND;
            else if (n->type == NT_RECV)
                n->coll = COMMSCHED_COLL_RECV;
            else if (n->coll < 0)
                n->coll = coll_from_name(n->name);
            if (n->coll < 0)
                return fail_at(c, path,
                               "cannot tell the collective kind from the name "
                               "\"%.*s\" (no comm_type)",
                               (int)cli_utf8_prefix(n->name, 60), n->name);
            nccl_details(n->name, &n->dtype, &n->rop);
        } else {
            n->size = tensor_size;
        }
        for (size_t k = 0; k < i; k++)
            if (c->n[k].id == n->id) {
                snprintf(path, sizeof path, "workload_graph[%zu].Id", i);
                return fail_at(c, path,
                               "duplicate node %lld (first at "
                               "workload_graph[%zu])",
                               (long long)n->id, k);
            }
    }
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Resolves data_deps to node indices. Ids are looked up in a sorted
 * (id, index) table, so a large trace costs O(E log V). */
static int resolve(chakra *c, json_t *arr)
{
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    int64_t(*tab)[2] = malloc(c->count * sizeof *tab);
    if (!tab) {
        fprintf(stderr, "commsched: out of memory\n");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < c->count; i++) {
        tab[i][0] = c->n[i].id;
        tab[i][1] = (int64_t)i;
    }
    qsort(tab, c->count, sizeof *tab, cmp_id);
    int rc = 0;
    for (size_t i = 0; i < c->count && rc == 0; i++) {
        json_t *deps = json_object_get(json_array_get(arr, i), "data_deps");
        size_t nd = deps ? json_array_size(deps) : 0;
        c->n[i].deps = calloc(nd ? nd : 1, sizeof *c->n[i].deps);
        if (!c->n[i].deps) {
            fprintf(stderr, "commsched: out of memory\n");
            rc = EXIT_RUNTIME;
            break;
        }
        for (size_t k = 0; k < nd; k++) {
            int64_t key[2] = {json_integer_value(json_array_get(deps, k)), 0};
            int64_t(*hit)[2] = bsearch(key, tab, c->count, sizeof *tab, cmp_id);
            snprintf(path, sizeof path, "workload_graph[%zu].data_deps[%zu]", i,
                     k);
            if (!hit) {
                rc = fail_at(c, path, "unknown node %lld", (long long)key[0]);
                break;
            }
            if ((size_t)(*hit)[1] == i) {
                rc = fail_at(c, path, "node %lld depends on itself",
                             (long long)key[0]);
                break;
            }
            uint32_t d = (uint32_t)(*hit)[1];
            int dup = 0;
            for (size_t j = 0; j < c->n[i].n_deps; j++)
                dup |= c->n[i].deps[j] == d;
            if (!dup)
                c->n[i].deps[c->n[i].n_deps++] = d;
        }
    }
    free(tab);
    return rc;
}

/* A binary min-heap of node indices keyed by Id. */
typedef struct heap {
    uint32_t *a;
    size_t n;
    const cnode *nodes;
} heap;

static int hless(const heap *h, size_t i, size_t j)
{
    return h->nodes[h->a[i]].id < h->nodes[h->a[j]].id;
}

static void hpush(heap *h, uint32_t v)
{
    size_t i = h->n++;
    h->a[i] = v;
    while (i > 0 && hless(h, i, (i - 1) / 2)) {
        uint32_t t = h->a[i];
        h->a[i] = h->a[(i - 1) / 2];
        h->a[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static uint32_t hpop(heap *h)
{
    uint32_t top = h->a[0];
    h->a[0] = h->a[--h->n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && hless(h, l, m))
            m = l;
        if (r < h->n && hless(h, r, m))
            m = r;
        if (m == i)
            break;
        uint32_t t = h->a[i];
        h->a[i] = h->a[m];
        h->a[m] = t;
        i = m;
    }
    return top;
}

/* The feeder's order: Kahn's algorithm, smallest ready Id first. Fails on
 * a cycle, naming a node on it. */
static int order_nodes(chakra *c, uint32_t *order)
{
    size_t n = c->count, done = 0;
    uint32_t *indeg = calloc(n, sizeof *indeg);
    size_t *uoff = calloc(n + 1, sizeof *uoff);
    uint32_t *users = NULL;
    heap h = {calloc(n, sizeof *h.a), 0, c->n};
    int rc = 0;
    if (!indeg || !uoff || !h.a)
        goto oom;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < c->n[i].n_deps; k++)
            uoff[c->n[i].deps[k] + 1]++;
    for (size_t i = 0; i < n; i++)
        uoff[i + 1] += uoff[i];
    users = malloc((uoff[n] ? uoff[n] : 1) * sizeof *users);
    if (!users)
        goto oom;
    {
        size_t *fill = calloc(n, sizeof *fill);
        if (!fill)
            goto oom;
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < c->n[i].n_deps; k++) {
                uint32_t d = c->n[i].deps[k];
                users[uoff[d] + fill[d]++] = (uint32_t)i;
            }
        free(fill);
    }
    for (size_t i = 0; i < n; i++) {
        indeg[i] = (uint32_t)c->n[i].n_deps;
        if (indeg[i] == 0)
            hpush(&h, (uint32_t)i);
    }
    while (h.n > 0) {
        uint32_t v = hpop(&h);
        order[done++] = v;
        for (size_t k = uoff[v]; k < uoff[v + 1]; k++)
            if (--indeg[users[k]] == 0)
                hpush(&h, users[k]);
    }
    if (done < n) {
        size_t i = 0;
        while (i < n && indeg[i] == 0)
            i++;
        char path[COMMSCHED_ERROR_PATH_LENGTH];
        snprintf(path, sizeof path, "workload_graph[%zu].data_deps", i);
        rc = fail_at(c, path, "dependency cycle through node %lld",
                     (long long)c->n[i].id);
    }
    goto cleanup;
oom:
    fprintf(stderr, "commsched: out of memory\n");
    rc = EXIT_RUNTIME;
cleanup:
    free(indeg);
    free(uoff);
    free(users);
    free(h.a);
    return rc;
}

/* The kept nodes a node depends on: its data_deps, looking through dropped
 * nodes (METADATA, and CPU ops under --gpu-only) to what they depend on.
 * Fills *out (deduplicated); `seen` marks nodes visited by this call with
 * `stamp`; `stack` has room for every node. Iterative: a long chain of
 * dropped CPU ops must not exhaust the C stack. */
static int kept_deps(const chakra *c, uint32_t v, uint32_t **out, size_t *n,
                     size_t *cap, uint32_t *seen, uint32_t stamp,
                     uint32_t *stack)
{
    size_t top = 0;
    stack[top++] = v;
    while (top > 0) {
        uint32_t u = stack[--top];
        for (size_t k = 0; k < c->n[u].n_deps; k++) {
            uint32_t d = c->n[u].deps[k];
            if (seen[d] == stamp)
                continue;
            seen[d] = stamp;
            if (!c->n[d].keep) {
                stack[top++] = d;
                continue;
            }
            if (*n == *cap) {
                size_t nc = *cap ? 2 * *cap : 16;
                uint32_t *t = realloc(*out, nc * sizeof *t);
                if (!t)
                    return -1;
                *out = t;
                *cap = nc;
            }
            (*out)[(*n)++] = d;
        }
    }
    return 0;
}

static void emit_wait(commsched_builder *b, cnode *n, commsched_error *err)
{
    char wait[128];
    snprintf(wait, sizeof wait, "%s.wait", n->node_name);
    const char *in[1] = {n->node_name};
    commsched_output_spec o = {wait, 0, n->node_name};
    commsched_node_spec s = {0};
    s.name = wait;
    s.kind = COMMSCHED_NODE_WAIT;
    s.op = "wait";
    s.inputs = in;
    s.n_inputs = 1;
    s.outputs = &o;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    (void)commsched_builder_add_node(b, &s, err);
    n->waited = 1;
}

/* A builder error, located at the record (or field) it comes from:
 * "workload_graph[3]: size ... (generated nodes[5].outputs[0].size)". */
static int report_build_error(chakra *c, const uint32_t *src, size_t n_src,
                              int ngpus_in_file)
{
    commsched_error e = c->err;
    size_t k;
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    if (sscanf(e.path, "nodes[%zu]", &k) == 1 && k < n_src)
        snprintf(path, sizeof path, "workload_graph[%u]", src[k]);
    else if (strncmp(e.path, "groups", 6) == 0)
        snprintf(path, sizeof path, "%s",
                 ngpus_in_file ? "ngpus" : "(--ranks)");
    else
        return cli_report(c->file, &c->err);
    commsched_error_clear(&c->err);
    commsched_error_set(&c->err, e.status, path, "%s (generated %s)", e.text,
                        e.path);
    return cli_report(c->file, &c->err);
}

static int build(chakra *c, const import_options *o, long ngpus,
                 const char *graph_name, commsched_graph **out)
{
    size_t n = c->count;
    uint32_t *order = malloc(n * sizeof *order);
    uint32_t *seen = calloc(n, sizeof *seen);
    uint32_t *stack = malloc(n * sizeof *stack);
    /* The record each graph node comes from (a collective and its wait
     * share one), so errors the builder finds name the record. */
    uint32_t *src = malloc(2 * n * sizeof *src);
    size_t n_src = 0;
    uint32_t *deps = NULL;
    size_t cap = 0;
    commsched_builder *b = NULL;
    char (*reads)[128] = NULL;
    const char **inp = NULL;
    int rc = 0;
    long missing = 0, kept = 0, dropped_cpu = 0, colls = 0;
    if (!order || !seen || !stack || !src) {
        fprintf(stderr, "commsched: out of memory\n");
        rc = EXIT_RUNTIME;
        goto cleanup;
    }
    if ((rc = order_nodes(c, order)) != 0)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        cnode *x = &c->n[i];
        x->keep = x->type != NT_METADATA && !(o->gpu_only && x->cpu);
        dropped_cpu += o->gpu_only && x->cpu && x->type != NT_METADATA;
        short_name(x, x->node_name, sizeof x->node_name);
        if (x->keep) {
            kept++;
            if (x->size < 0)
                missing++;
            colls += x->coll >= 0;
        }
    }
    if (kept == 0) {
        fprintf(stderr, "commsched: %s: no node left to import%s\n", c->file,
                o->gpu_only ? " (every node is a CPU op; drop --gpu-only)"
                            : "");
        rc = EXIT_INPUT;
        goto cleanup;
    }
    long ranks = o->ranks > 0 ? o->ranks : ngpus > 0 ? ngpus : 8;
    if (commsched_builder_create(graph_name, &b, &c->err) != COMMSCHED_OK) {
        rc = cli_report(c->file, &c->err);
        goto cleanup;
    }
    if (colls)
        (void)commsched_builder_add_group(b, "world", ranks, 0, &c->err);
    for (size_t pos = 0; pos < n; pos++) {
        uint32_t v = order[pos];
        cnode *x = &c->n[v];
        if (!x->keep)
            continue;
        size_t nd = 0;
        if (kept_deps(c, v, &deps, &nd, &cap, seen, (uint32_t)pos + 1,
                      stack) != 0) {
            fprintf(stderr, "commsched: out of memory\n");
            rc = EXIT_RUNTIME;
            goto cleanup;
        }
        char (*r)[128] = realloc(reads, (nd ? nd : 1) * sizeof *reads);
        const char **ip = realloc(inp, (nd ? nd : 1) * sizeof *inp);
        if (r)
            reads = r;
        if (ip)
            inp = ip;
        if (!r || !ip) {
            fprintf(stderr, "commsched: out of memory\n");
            rc = EXIT_RUNTIME;
            goto cleanup;
        }
        /* A GPU collective's consumers read its wait, emitted just before
         * the first of them. */
        for (size_t k = 0; k < nd; k++) {
            cnode *d = &c->n[deps[k]];
            d->has_user = 1;
            if (d->coll >= 0 && !d->cpu) {
                if (!d->waited) {
                    src[n_src++] = deps[k];
                    emit_wait(b, d, &c->err);
                }
                snprintf(reads[k], sizeof reads[k], "%s.wait", d->node_name);
            } else {
                snprintf(reads[k], sizeof reads[k], "%s", d->node_name);
            }
            inp[k] = reads[k];
        }
        commsched_output_spec os = {x->node_name, x->size > 0 ? x->size : 0,
                                    NULL};
        commsched_node_spec s = {0};
        s.name = x->node_name;
        s.inputs = inp;
        s.n_inputs = nd;
        s.outputs = &os;
        s.n_outputs = 1;
        s.runtime_ns = x->runtime_us >= 0 ? x->runtime_us * 1000.0 : -1;
        s.flops = s.bytes = -1;
        if (x->coll >= 0) {
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = commsched_coll_op_str((commsched_coll_op)x->coll);
            s.group = "world";
            s.is_sync = x->cpu;
            s.dtype = x->dtype;
            s.reduce_op = x->rop;
        } else {
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = x->name;
            if (x->type == NT_MEM_LOAD || x->type == NT_MEM_STORE)
                s.op = x->type == NT_MEM_LOAD ? "mem_load" : "mem_store";
        }
        src[n_src++] = v;
        (void)commsched_builder_add_node(b, &s, &c->err);
    }
    /* Collectives nothing reads are completed at the end of the step. */
    for (size_t pos = 0; pos < n; pos++) {
        cnode *x = &c->n[order[pos]];
        if (x->keep && x->coll >= 0 && !x->cpu && !x->waited) {
            src[n_src++] = order[pos];
            emit_wait(b, x, &c->err);
        }
    }
    if (commsched_builder_finish(b, 0, out, &c->err) != COMMSCHED_OK) {
        b = NULL;
        rc = report_build_error(c, src, n_src, ngpus > 0);
        goto cleanup;
    }
    b = NULL;
    fprintf(stderr,
            "commsched import: note: %s: %ld nodes imported (%ld collectives "
            "on %ld ranks",
            c->file, kept, colls, ranks);
    if (o->gpu_only)
        fprintf(stderr, "; %ld CPU ops dropped", dropped_cpu);
    fprintf(stderr,
            "); %ld have no tensor_size/comm_size: their buffers are 0 bytes, "
            "so memory figures leave them out, and collectives without a "
            "size keep the trace's runtime\n",
            missing);
cleanup:
    commsched_builder_destroy(b);
    free(src);
    free(order);
    free(seen);
    free(stack);
    free(deps);
    free(reads);
    free(inp);
    return rc;
}

int import_chakra(const char *path, const import_options *o,
                  commsched_graph **out)
{
    chakra c;
    memset(&c, 0, sizeof c);
    c.file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    json_error_t jerr;
    json_t *root = strcmp(path, "-") == 0
                       ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
                       : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line <= 0) {
            fprintf(stderr, "commsched: %s: %s\n", c.file, jerr.text);
            return EXIT_INPUT;
        }
        fprintf(stderr, "commsched: %s:%d:%d: %s\n", c.file, jerr.line,
                jerr.column, jerr.text);
        return EXIT_INPUT;
    }
    long ngpus = 0;
    int rc = read_records(&c, root, &ngpus);
    if (rc == 0)
        rc = resolve(&c, json_object_get(root, "workload_graph"));
    if (rc == 0) {
        json_t *wn = json_object_get(root, "workload_name");
        const char *base = strrchr(c.file, '/');
        const char *src = wn ? json_string_value(wn) : base ? base + 1 : c.file;
        char name[256];
        snprintf(name, sizeof name, "chakra-%.*s",
                 (int)cli_utf8_prefix(src, sizeof name - 8), src);
        rc = build(&c, o, ngpus, name, out);
    }
    for (size_t i = 0; i < c.count && c.n; i++)
        free(c.n[i].deps);
    free(c.n);
    json_decref(root);
    return rc;
}
