/* The shared back half of the Chakra importers (chakra_common.h): Id
 * resolution, folding a collective's CPU-side ops into its GPU kernel,
 * the feeder's order, and the graph build.
 *
 * Mapping (docs/WORKLOADS.md):
 * - NodeType 4 (COMP), 2/3 (MEM_LOAD/STORE): compute nodes; 7 (COMM_COLL):
 *   collectives, their kind from comm_type when given, else from the name;
 *   5/6 (COMM_SEND/RECV): send/recv; 1 (METADATA): dropped, dependencies
 *   bridged across it.
 * - One collective is one node. PyTorch-derived traces hold the CPU ops
 *   that launched a collective (c10d::allreduce_, nccl:all_reduce, marked
 *   is_cpu_op) as COMM_COLL nodes too, and the GPU kernel depends on them:
 *   such a CPU op is a launcher, imported as a compute node (its host time
 *   stays in the step), and only the kernel is a collective.
 * - data_deps are the dependencies (buffers flow along them), as in
 *   ASTRA-sim's feeder. ctrl_deps are read and resolved but do not order:
 *   Chakra's PyTorch converter writes ones that contradict data_deps (a
 *   GPU kernel's CPU op listing the kernel, which depends on the op) and
 *   ones naming the node itself or callers outside the file; they serve
 *   to recognise a collective's CPU launchers, and the note counts them.
 * - Order: the feeder's, a topological order that issues the smallest
 *   ready Id first.
 * - runtime/duration is in microseconds; it becomes runtime_ns.
 * - A GPU collective is asynchronous: its wait goes right before its first
 *   consumer (at the end when nothing reads it). A CPU-side collective
 *   with no kernel blocks the host: a sync collective. --gpu-only drops
 *   every CPU op.
 * - Every node writes one buffer that its data dependents read, sized
 *   tensor_size (compute) or from comm_size (collectives: coll_output);
 *   absent sizes are 0 bytes and the note says how many.
 * - Collectives use their process group (pg_name), else "world", sized by
 *   size_groups (--group-size, --comm-group, --ranks, ngpus); a size none
 *   of them gives is assumed with a warning.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_common.h"
#include "trace_json.h"

static void where(const chakra *c, size_t rec, const char *field, char *dst,
                  size_t size)
{
    if (rec == SIZE_MAX)
        snprintf(dst, size, "%s", field ? field : "");
    else if (c->binary)
        snprintf(dst, size, "record %zu (byte %lld)%s%s", rec + 1,
                 (long long)(rec < c->count       ? c->n[rec].offset
                             : rec < c->n_offsets ? c->offsets[rec]
                                                  : 0),
                 field ? "." : "", field ? field : "");
    else
        snprintf(dst, size, "workload_graph[%zu]%s%s", rec, field ? "." : "",
                 field ? field : "");
}

int chakra_fail(chakra *c, size_t rec, const char *field, const char *fmt,
                ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    where(c, rec, field, path, sizeof path);
    commsched_error_set(&c->err, COMMSCHED_ESCHEMA, path, "%s", text);
    return import_report(c->d, c->file, &c->err);
}

static int oom(chakra *c) { return import_oom(c->d); }

cnode *chakra_push(chakra *c)
{
    if (c->count == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 64;
        cnode *t = realloc(c->n, nc * sizeof *t);
        if (!t) {
            oom(c);
            return NULL;
        }
        c->n = t;
        c->cap = nc;
    }
    cnode *n = &c->n[c->count++];
    memset(n, 0, sizeof *n);
    n->runtime_us = -1;
    n->size = -1;
    n->coll = -1;
    return n;
}

void chakra_free(chakra *c)
{
    chakra_free_records(c);
    free(c->offsets);
    c->offsets = NULL;
    c->n_offsets = 0;
}

void chakra_free_records(chakra *c)
{
    for (size_t i = 0; i < c->count; i++) {
        cnode *n = &c->n[i];
        free(n->name);
        free(n->pg);
        free(n->raw_data);
        free(n->raw_ctrl);
        free(n->deps);
        free(n->cdeps);
    }
    free(c->n);
    c->n = NULL;
    c->count = c->cap = 0;
}

/* The collective kind from Chakra's CollectiveCommType. */
int chakra_coll_from_type(int64_t t)
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

int chakra_coll_from_name(const char *name)
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
void chakra_nccl_details(const char *name, commsched_dtype *dt,
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

/* A node's graph name, "216:aten::flatten_dense_tensors": the Id, a colon
 * and the name up to its argument list (a parenthesised group followed by
 * "::" is a namespace and kept), at most 80 bytes of it, never cut inside
 * a UTF-8 character. Formatted when needed rather than kept per record,
 * which was 112 of a record's 264 bytes (a million-node trace's table);
 * by hand, since snprintf was a tenth of importing a large trace. */
#define NODE_NAME_SIZE 112

static void short_name(const cnode *n, char *dst, size_t size)
{
    assert(size >= NODE_NAME_SIZE);
    (void)size;
    char digits[24];
    size_t nd = 0, at = 0;
    /* the Id's magnitude as unsigned: -2^63 has no positive int64_t */
    uint64_t v = n->id < 0 ? 0 - (uint64_t)n->id : (uint64_t)n->id;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (n->id < 0)
        dst[at++] = '-';
    while (nd)
        dst[at++] = digits[--nd];
    dst[at++] = ':';
    size_t k = 0, max = commsched_utf8_cut(n->name, 80);
    for (const char *p = n->name; *p && k < max; p++, k++) {
        if (*p == '(') {
            const char *close = strchr(p, ')');
            if (!close || strncmp(close + 1, "::", 2) != 0)
                break;
        }
        dst[at + k] = *p;
    }
    while (k > 0 && dst[at + k - 1] == ' ')
        k--;
    dst[at + k] = '\0';
}

static int cmp_id(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Ids -> indices through a table sorted by (Id, record), so a large trace
 * costs O(E log V). A dependency on a node's own Id is an error; ctrl deps
 * that match nothing are counted, not fatal. */
static int resolve_list(chakra *c, size_t i, int ctrl, int64_t (*tab)[2])
{
    cnode *n = &c->n[i];
    const int64_t *raw = ctrl ? n->raw_ctrl : n->raw_data;
    size_t nr = ctrl ? n->n_raw_ctrl : n->n_raw_data;
    uint32_t *out = calloc(nr ? nr : 1, sizeof *out);
    size_t m = 0;
    if (!out)
        return oom(c);
    const char *list =
        ctrl ? (c->binary ? "ctrl_deps" : "ctrlDeps") : "data_deps";
    char field[64];
    for (size_t k = 0; k < nr; k++) {
        int64_t key[2] = {raw[k], -1};
        /* the first record with this Id: lower bound of (Id, -1) */
        size_t lo = 0, hi = c->count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_id(tab[mid], key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == c->count || tab[lo][0] != raw[k]) {
            if (ctrl) {
                c->ctrl_outside++;
                continue;
            }
            free(out);
            snprintf(field, sizeof field, "%s[%zu]", list, k);
            return chakra_fail(c, i, field, "unknown node %lld",
                               (long long)raw[k]);
        }
        uint32_t d = (uint32_t)tab[lo][1];
        if (d == i && ctrl) {
            /* Chakra's PyTorch converter writes some (a node listed as
             * its own parent): an edge that orders nothing. */
            c->ctrl_self++;
            continue;
        }
        if (d == i) {
            free(out);
            snprintf(field, sizeof field, "%s[%zu]", list, k);
            return chakra_fail(c, i, field, "node %lld depends on itself",
                               (long long)raw[k]);
        }
        int dup = 0;
        for (size_t j = 0; j < m && !dup; j++)
            dup = out[j] == d;
        for (size_t j = 0; ctrl && j < n->n_deps && !dup; j++)
            dup = n->deps[j] == d; /* already ordered by the data edge */
        if (!dup)
            out[m++] = d;
    }
    if (ctrl) {
        n->cdeps = out;
        n->n_cdeps = m;
        free(n->raw_ctrl);
        n->raw_ctrl = NULL;
    } else {
        n->deps = out;
        n->n_deps = m;
        free(n->raw_data);
        n->raw_data = NULL;
    }
    return 0;
}

static int resolve(chakra *c)
{
    int64_t(*tab)[2] = malloc((c->count ? c->count : 1) * sizeof *tab);
    if (!tab)
        return oom(c);
    for (size_t i = 0; i < c->count; i++) {
        tab[i][0] = c->n[i].id;
        tab[i][1] = (int64_t)i;
    }
    /* Traces list their nodes by ascending Id (PyTorch's converter,
     * ASTRA-sim's generators, export chakra): then the table is sorted
     * already, and a 1M-node trace skips a third of a second of qsort. */
    size_t sorted = 1;
    while (sorted < c->count && cmp_id(tab[sorted - 1], tab[sorted]) < 0)
        sorted++;
    if (sorted < c->count)
        qsort(tab, c->count, sizeof *tab, cmp_id);
    /* The earliest record that repeats an Id seen before it. */
    size_t dup = SIZE_MAX, first = 0;
    for (size_t k = 1; k < c->count; k++)
        if (tab[k][0] == tab[k - 1][0] && (size_t)tab[k][1] < dup) {
            dup = (size_t)tab[k][1];
            size_t f = k - 1;
            while (f > 0 && tab[f - 1][0] == tab[k][0])
                f--;
            first = (size_t)tab[f][1];
        }
    int rc = 0;
    if (dup != SIZE_MAX) {
        char at[64];
        where(c, first, NULL, at, sizeof at);
        rc = chakra_fail(c, dup, c->binary ? "id" : "Id",
                         "duplicate node %lld (first at %s)",
                         (long long)c->n[dup].id, at);
    }
    for (size_t i = 0; i < c->count && rc == 0; i++) {
        rc = resolve_list(c, i, 0, tab);
        if (rc == 0)
            rc = resolve_list(c, i, 1, tab);
    }
    free(tab);
    return rc;
}

/* A binary min-heap of node indices keyed by Id. Not src/base/heap.h:
 * tools see only include/commsched/, and the builder's public
 * COMMSCHED_FINISH_TOPOSORT promises neither ASTRA-sim's feeder order
 * (smallest ready Id first) nor a cycle named by its Chakra record
 * (docs/ARCHITECTURE.md, "The heap"). */
typedef struct heap {
    uint32_t *a;
    size_t n;
    const cnode *nodes; /* NULL: the records' Ids ascend, so an index's
                           order is its Id's (no load of a record per
                           comparison: at 1M nodes those missed cache) */
} heap;

static int hless(const heap *h, size_t i, size_t j)
{
    if (!h->nodes)
        return h->a[i] < h->a[j];
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
    const cnode *by_id = NULL; /* the heap's comparison (heap.nodes) */
    for (size_t i = 1; i < n && !by_id; i++)
        if (c->n[i - 1].id >= c->n[i].id)
            by_id = c->n;
    /* Ids ascending and every record after its dependencies, as converters
     * write them: once the records before i are placed, i is the smallest
     * ready one, so the order is the records' own (no users, no heap). */
    if (!by_id) {
        size_t i = 0;
        for (; i < n; i++) {
            size_t k = 0;
            while (k < c->n[i].n_deps && c->n[i].deps[k] < i)
                k++;
            if (k < c->n[i].n_deps)
                break;
        }
        if (i == n) {
            for (i = 0; i < n; i++)
                order[i] = (uint32_t)i;
            return 0;
        }
    }
    uint32_t *indeg = calloc(n, sizeof *indeg);
    size_t *uoff = calloc(n + 1, sizeof *uoff);
    uint32_t *users = NULL;
    heap h = {calloc(n, sizeof *h.a), 0, by_id};
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
        rc = chakra_fail(c, i, "data_deps", "dependency cycle through node %lld",
                         (long long)c->n[i].id);
    }
    goto cleanup;
oom:
    rc = import_fail(c->d, COMMSCHED_ENOMEM, "out of memory");
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

/* Length of name without a trailing "(N)" part number. */
static size_t record_base(const char *name)
{
    size_t n = strlen(name), k = n;
    if (k < 3 || name[k - 1] != ')')
        return n;
    k--;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    return k > 0 && k < n - 1 && name[k - 1] == '(' ? k - 1 : n;
}

/* Two parts of one record: the same name but for their "(N)". */
static int same_record(const char *a, const char *b)
{
    size_t la = record_base(a), lb = record_base(b);
    return la == lb && la < strlen(a) && memcmp(a, b, la) == 0;
}

/* A CPU-side COMM_COLL op that a GPU collective kernel depends on (data or
 * ctrl), or that such an op depends on (record_param_comms ->
 * c10d::allreduce_ -> nccl:all_reduce -> the kernel), launched the kernel:
 * it is the same collective, so it becomes a compute node (its host time)
 * and only the kernel counts. Reverse topological order sees every
 * dependent before its dependencies. */
static long fold_launchers(chakra *c, const uint32_t *order)
{
    long folded = 0;
    for (size_t pos = c->count; pos-- > 0;) {
        const cnode *x = &c->n[order[pos]];
        if (x->type != NT_COLL || !(x->launcher || (x->coll >= 0 && !x->cpu)))
            continue;
        for (size_t k = 0; k < x->n_deps + x->n_cdeps; k++) {
            cnode *d = &c->n[k < x->n_deps ? x->deps[k]
                                           : x->cdeps[k - x->n_deps]];
            if (d->type == NT_COLL && d->cpu && !d->launcher) {
                d->launcher = 1;
                d->coll = -1;
                folded++;
            }
        }
    }
    /* Chakra's converter splits a CPU op around the launch it makes into
     * records "c10d::allreduce_(0)" and "c10d::allreduce_(1)", the second
     * depending on the first but not on the kernel: a CPU-side record that
     * depends on a launcher of the same name (its "(N)" aside) is that
     * launch too. Topological order passes the parts on along a chain. */
    for (size_t pos = 0; pos < c->count; pos++) {
        cnode *x = &c->n[order[pos]];
        if (x->type != NT_COLL || !x->cpu || x->launcher)
            continue;
        for (size_t k = 0; k < x->n_deps + x->n_cdeps && !x->launcher; k++) {
            const cnode *d = &c->n[k < x->n_deps ? x->deps[k]
                                                 : x->cdeps[k - x->n_deps]];
            if (d->launcher && same_record(x->name, d->name)) {
                x->launcher = 1;
                x->coll = -1;
                folded++;
            }
        }
    }
    return folded;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The process groups of the kept collectives (names sorted, so the graph
 * does not depend on record order) and their sizes. */
typedef struct groups {
    const char **name;
    long *size;
    size_t n;
} groups;

/* The names are the list's own copies (the records they came from are
 * freed before the import's note names the groups). */
static void groups_free(groups *g)
{
    for (size_t i = 0; g->name && i < g->n; i++)
        free((char *)g->name[i]);
    free(g->name);
    free(g->size);
}

/* ASTRA-sim's default group: no pg_name, or "0" (its extract_comm_group
 * runs both over every NPU). */
static int default_group(const char *name)
{
    return strcmp(name, "world") == 0 || strcmp(name, "0") == 0;
}

/* ASTRA-sim's comm-group file ({"<pg_name>": [NPU ids], ...}, what its
 * --comm-group-configuration reads): the size of group `name`, 0 when the
 * file does not list it, or -1 after printing why the file is bad. */
static long comm_group_size(import_diag *d, json_t *doc, const char *file,
                            const char *name)
{
    json_t *v = json_object_get(doc, name);
    if (!v)
        return 0;
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0 || n > COMMSCHED_MAX_GROUP_SIZE) {
        trace_fail(d, file, name, "expected a list of 1 to %u NPU ids",
                   (unsigned)COMMSCHED_MAX_GROUP_SIZE);
        return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_integer(x) || json_integer_value(x) < 0) {
            char path[COMMSCHED_ERROR_PATH_LENGTH];
            snprintf(path, sizeof path, "%.120s[%zu]", name, i);
            trace_fail(d, file, path, "expected an NPU id (an integer >= 0)");
            return -1;
        }
    }
    return (long)n;
}

/* Sizes each group, in this order: --group-size NAME=K; --comm-group's
 * NPU count; --ranks; the trace's ngpus for the default group. A group
 * none of these sizes takes the default group's size (ngpus, else 8), and
 * a warning names it: a wrong size would scale every all-gather and
 * reduce-scatter on it, so it is never assumed silently. */
static int size_groups(chakra *c, const commsched_import_options *o, long ngpus,
                       groups *g)
{
    json_t *doc = NULL;
    if (o->comm_groups) {
        int rc = trace_json_load(c->d, o->comm_groups, 0, &doc);
        if (rc != 0)
            return rc;
        if (!json_is_object(doc)) {
            json_decref(doc);
            return trace_fail(c->d, o->comm_groups, "",
                              "expected an object {\"<pg_name>\": [NPU ids]}");
        }
    }
    long fallback = ngpus > 0 ? ngpus : 8;
    int rc = 0;
    for (size_t i = 0; i < g->n && rc == 0; i++) {
        const char *name = g->name[i];
        long k = 0;
        const char *why = NULL;
        for (size_t j = o->n_group_sizes; j-- > 0 && k == 0;)
            if (strcmp(o->group_sizes[j].name, name) == 0)
                k = o->group_sizes[j].size;
        if (k == 0 && doc && (k = comm_group_size(c->d, doc, o->comm_groups,
                                                  name)) < 0) {
            rc = IMPORT_INPUT;
            break;
        }
        if (k == 0 && o->ranks > 0)
            k = o->ranks;
        if (k == 0 && ngpus > 0 && default_group(name))
            k = ngpus;
        if (k == 0) {
            k = fallback;
            why = ngpus > 0 ? "the trace's ngpus" : "no ngpus in the trace";
            import_sayf(c->d, COMMSCHED_IMPORT_WARNING, c->file,
                        "the trace does not give the size of group \"%s\": "
                        "%ld ranks assumed (%s); give it with --group-size "
                        "%s=K, --comm-group FILE or --ranks N",
                        name, k, why, name);
        }
        g->size[i] = k;
    }
    json_decref(doc);
    return rc;
}

static int find_group(const groups *g, const char *name)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = strcmp(g->name[mid], name);
        if (d == 0)
            return (int)mid;
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* One group per process-group name the kept collectives use. */
static int add_groups(chakra *c, const commsched_import_options *o, long ngpus,
                      commsched_builder *b, groups *g)
{
    size_t m = 0;
    g->name = malloc((c->count ? c->count : 1) * sizeof *g->name);
    g->size = malloc((c->count ? c->count : 1) * sizeof *g->size);
    if (!g->name || !g->size)
        return oom(c);
    /* A name repeating the one before is left out at once: a step's
     * collectives mostly run in one group, and sorting a million equal
     * names was 2% of a 1M-node trace's import. */
    for (size_t i = 0; i < c->count; i++)
        if (c->n[i].keep && c->n[i].coll >= 0) {
            const char *pg = c->n[i].pg ? c->n[i].pg : "world";
            if (m == 0 || strcmp(pg, g->name[m - 1]) != 0)
                g->name[m++] = pg;
        }
    if (m > 1) /* qsort's base must not be NULL */
        qsort(g->name, m, sizeof *g->name, cmp_str);
    size_t n = 0;
    g->n = 0;
    for (size_t i = 0; i < m; i++)
        if (i == 0 || strcmp(g->name[i], g->name[n - 1]) != 0)
            g->name[n++] = g->name[i];
    for (; g->n < n; g->n++) /* each kept name copied, in place */
        if (!(g->name[g->n] = strdup(g->name[g->n])))
            return oom(c);
    int rc = size_groups(c, o, ngpus, g);
    for (size_t i = 0; i < g->n && rc == 0; i++)
        (void)commsched_builder_add_group(b, g->name[i], g->size[i], 0,
                                          &c->err);
    return rc;
}

/* The bytes a collective writes from its comm_size, as ASTRA-sim reads
 * comm_size: the bytes each NPU puts in (its Ring and HalvingDoubling
 * phases end with comm_size x k for an all-gather and comm_size / k for a
 * reduce-scatter; every other collective ends with what it started with).
 * -1 after printing why the record cannot be such a collective. */
static int64_t coll_output(chakra *c, size_t rec, const cnode *x, long k)
{
    if (x->size <= 0)
        return 0;
    if (x->coll == COMMSCHED_COLL_ALL_GATHER) {
        if (x->size > COMMSCHED_MAX_SIZE / k) {
            chakra_fail(c, rec, "comm_size",
                        "%lld bytes gathered from %ld ranks is beyond the "
                        "format's limit of 2^53 bytes",
                        (long long)x->size, k);
            return -1;
        }
        return x->size * k;
    }
    if (x->coll == COMMSCHED_COLL_REDUCE_SCATTER) {
        if (x->size % k != 0) {
            chakra_fail(c, rec, "comm_size",
                        "%lld bytes do not scatter evenly over the %ld ranks "
                        "of group \"%s\" (a reduce_scatter's comm_size is "
                        "what each rank reduces: k times what it keeps)",
                        (long long)x->size, k, x->pg ? x->pg : "world");
            return -1;
        }
        return x->size / k;
    }
    return x->size;
}

/* 1 when the buffers of the records deps[0..nd) hold more than `bytes`,
 * as chakra_finish sizes them: a record's size, a collective's what it
 * writes (coll_output; it succeeded when the record was added). Sums
 * saturate. */
static int reads_more(chakra *c, const groups *grp, const uint32_t *deps,
                      size_t nd, int64_t bytes)
{
    int64_t total = 0;
    for (size_t k = 0; k < nd && total <= bytes; k++) {
        const cnode *d = &c->n[deps[k]];
        int64_t sz = d->size > 0 ? d->size : 0;
        if (d->coll >= 0) {
            int gi = find_group(grp, d->pg ? d->pg : "world");
            sz = coll_output(c, deps[k], d, gi >= 0 ? grp->size[gi] : 1);
        }
        total = sz > INT64_MAX - total ? INT64_MAX : total + sz;
    }
    return total > bytes;
}

/* Grows the name arrays to hold n entries. */
static int room(char (**names)[128], const char ***ptrs, size_t *cap,
                size_t n)
{
    if (n <= *cap)
        return 0;
    char(*r)[128] = realloc(*names, n * sizeof **names);
    if (r)
        *names = r;
    const char **p = realloc(*ptrs, n * sizeof **ptrs);
    if (p)
        *ptrs = p;
    if (!r || !p)
        return -1;
    *cap = n;
    return 0;
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
        where(c, src[k], NULL, path, sizeof path);
    else if (strncmp(e.path, "groups", 6) == 0)
        snprintf(path, sizeof path, "%s",
                 ngpus_in_file ? "ngpus" : "(--ranks)");
    else
        return import_report(c->d, c->file, &c->err);
    commsched_error_clear(&c->err);
    commsched_error_set(&c->err, e.status, path, "%s (generated %s)", e.text,
                        e.path);
    return import_report(c->d, c->file, &c->err);
}

static int build(chakra *c, const commsched_import_options *o, long ngpus,
                 const char *graph_name, commsched_graph **out)
{
    size_t n = c->count;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    uint32_t *seen = calloc(n ? n : 1, sizeof *seen);
    uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    /* The record each graph node comes from (a collective and its wait
     * share one), so errors the builder finds name the record. */
    uint32_t *src = malloc(2 * (n ? n : 1) * sizeof *src);
    size_t n_src = 0;
    uint32_t *deps = NULL;
    size_t cap = 0, rcap = 0;
    commsched_builder *b = NULL;
    /* a read is a node's name and maybe ".wait" */
    _Static_assert(NODE_NAME_SIZE + sizeof ".wait" <= 128, "reads' width");
    char (*reads)[128] = NULL;
    const char **inp = NULL;
    int rc = 0;
    long missing = 0, kept = 0, dropped_cpu = 0, colls = 0, folded;
    groups grp = {NULL, NULL, 0};
    if (!order || !seen || !stack || !src) {
        rc = oom(c);
        goto cleanup;
    }
    if ((rc = order_nodes(c, order)) != 0)
        goto cleanup;
    folded = fold_launchers(c, order);
    for (size_t i = 0; i < n; i++) {
        cnode *x = &c->n[i];
        x->keep = x->type != NT_METADATA && !(o->gpu_only && x->cpu);
        dropped_cpu += o->gpu_only && x->cpu && x->type != NT_METADATA;
        if (x->keep) {
            kept++;
            if (x->size < 0)
                missing++;
            colls += x->coll >= 0;
        }
    }
    if (kept == 0) {
        rc = import_fail(c->d, COMMSCHED_ESCHEMA,
                         "%s: no node left to import%s",
                         c->file,
                         o->gpu_only
                         ? " (every node is a CPU op; drop --gpu-only)"
                         : "");
        goto cleanup;
    }
    if (commsched_builder_create(graph_name, &b, &c->err) != COMMSCHED_OK) {
        rc = import_report(c->d, c->file, &c->err);
        goto cleanup;
    }
    if ((rc = add_groups(c, o, ngpus, b, &grp)) != 0)
        goto cleanup;
    for (size_t pos = 0; pos < n; pos++) {
        uint32_t v = order[pos];
        cnode *x = &c->n[v];
        if (!x->keep)
            continue;
        size_t nd = 0;
        if (kept_deps(c, v, &deps, &nd, &cap, seen, (uint32_t)pos + 1,
                      stack) != 0 ||
            room(&reads, &inp, &rcap, nd ? nd : 1) != 0) {
            rc = oom(c);
            goto cleanup;
        }
        /* A GPU collective's consumers read its wait, emitted just before
         * the first of them. */
        char name[NODE_NAME_SIZE];
        for (size_t k = 0; k < nd; k++) {
            cnode *d = &c->n[deps[k]];
            d->has_user = 1;
            short_name(d, name, sizeof name);
            if (d->coll >= 0 && !d->cpu) {
                if (!d->waited) {
                    src[n_src++] = deps[k];
                    import_add_wait(b, name, &c->err);
                    d->waited = 1;
                }
                size_t len = strlen(name);
                memcpy(reads[k], name, len);
                memcpy(reads[k] + len, ".wait", sizeof ".wait");
            } else {
                memcpy(reads[k], name, strlen(name) + 1);
            }
            inp[k] = reads[k];
        }
        short_name(x, name, sizeof name);
        commsched_output_spec os = {name, x->size > 0 ? x->size : 0, NULL};
        if (x->coll >= 0) {
            int gi = find_group(&grp, x->pg ? x->pg : "world");
            os.size = coll_output(c, v, x, gi >= 0 ? grp.size[gi] : 1);
            if (os.size < 0) {
                rc = IMPORT_INPUT;
                goto cleanup;
            }
        }
        commsched_node_spec s = {0};
        s.name = name;
        s.inputs = inp;
        s.n_inputs = nd;
        s.outputs = &os;
        s.n_outputs = 1;
        s.runtime_ns = x->runtime_us >= 0 ? x->runtime_us * 1000.0 : -1;
        s.flops = s.bytes = -1;
        /* comm_size is what the collective reads (coll_output): its data
         * dependencies are whole records, and a record with several
         * outputs (a fused kernel's) is one buffer of their total here,
         * larger than what the collective takes of it. */
        if (x->coll >= 0 && x->size > 0 && nd > 0 &&
            reads_more(c, &grp, deps, nd, x->size))
            s.bytes = (double)x->size;
        if (x->coll >= 0) {
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = commsched_coll_op_str((commsched_coll_op)x->coll);
            s.group = x->pg ? x->pg : "world";
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
            char name[NODE_NAME_SIZE];
            short_name(x, name, sizeof name);
            src[n_src++] = order[pos];
            import_add_wait(b, name, &c->err);
            x->waited = 1;
        }
    }
    /* The builder holds every name and edge now: the table goes before the
     * graph is built (the import's peak; a million records are 150 MB),
     * and errors from here on name a record by its place alone. */
    if (c->binary) {
        c->offsets = malloc(n * sizeof *c->offsets);
        if (!c->offsets) {
            rc = oom(c);
            goto cleanup;
        }
        for (size_t i = 0; i < n; i++)
            c->offsets[i] = c->n[i].offset;
        c->n_offsets = n;
    }
    chakra_free_records(c);
    if (commsched_builder_finish(b, 0, out, &c->err) != COMMSCHED_OK) {
        b = NULL;
        rc = report_build_error(c, src, n_src, ngpus > 0);
        goto cleanup;
    }
    b = NULL;
    import_say say;
    FILE *m = import_say_begin(&say, c->d);
    if (m) {
        fprintf(m, "%ld nodes imported (%ld collective%s", kept, colls,
                colls == 1 ? "" : "s");
        for (size_t i = 0; i < grp.n; i++)
            fprintf(m, "%s group \"%s\" of %ld ranks", i ? "," : ";",
                    grp.name[i], grp.size[i]);
        if (folded)
            fprintf(m,
                    "; %ld CPU-side collective ops folded into their GPU "
                    "kernel",
                    folded);
        if (c->ctrl_outside)
            fprintf(m, "; %zu ctrl deps name nodes outside the file",
                    c->ctrl_outside);
        if (c->ctrl_self)
            fprintf(m, "; %zu ctrl deps of a node on itself ignored",
                    c->ctrl_self);
        if (o->gpu_only)
            fprintf(m, "; %ld CPU ops dropped", dropped_cpu);
        fprintf(m,
                "); %ld have no tensor_size/comm_size: their buffers are 0 "
                "bytes, so memory figures leave them out, and collectives "
                "without a size keep the trace's runtime",
                missing);
        import_say_end(&say, c->d, COMMSCHED_IMPORT_NOTE, c->file);
    }
cleanup:
    commsched_builder_destroy(b);
    groups_free(&grp);
    free(src);
    free(order);
    free(seen);
    free(stack);
    free(deps);
    free(reads);
    free(inp);
    return rc;
}

int chakra_finish(chakra *c, const commsched_import_options *o, long ngpus,
                  const char *graph_name, commsched_graph **out)
{
    if (c->count == 0)
        return chakra_fail(c, SIZE_MAX, NULL, "no node records");
    if (c->count > UINT32_MAX / 2 - 1)
        return chakra_fail(c, SIZE_MAX, NULL, "more than 2^31 nodes");
    int rc = resolve(c);
    if (rc == 0)
        rc = build(c, o, ngpus, graph_name, out);
    return rc;
}
