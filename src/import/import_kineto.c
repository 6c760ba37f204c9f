/* commsched import kineto TRACE.json[.gz] [--et ET] — a PyTorch profiler
 * (Kineto) trace becomes the graph the GPU actually ran (docs/WORKLOADS.md):
 *
 * - Every GPU event of the chosen device (--rank N: device N; a file that
 *   holds one device needs none) is a node: compute kernels, memcpy and
 *   memset as compute nodes, NCCL kernels (ncclKernel_*, ncclDevKernel_*)
 *   as collectives, each with its measured duration (runtime_ns).
 * - Order: the CPU launch order (the cuda_runtime call that shares the
 *   event's correlation id), then GPU start time.
 * - A collective's kind and bytes come from the CPU ops that launched it
 *   (the innermost enclosing nccl:* / c10d::* op on the launching thread:
 *   NCCL runs every collective through its SendRecv kernel, so the kernel
 *   name alone would call an all-reduce an all-to-all); bytes = the largest
 *   tensor in their "Input Dims" x the element size of "Input type".
 * - Dependencies: kernels on one stream run in order, so each compute node
 *   reads the previous one on its stream; a collective reads the compute
 *   node launched last before it. Its wait is placed before the first
 *   compute kernel that started on the GPU after the collective ended:
 *   the latest point the run can have waited (the trace records no event
 *   links), so the imported order overlaps exactly as much as the run did.
 * - Group: one, "world", of --ranks ranks (default distributedInfo's
 *   world_size, else 8 with a warning).
 * - --et: with the run's PyTorch execution trace, host dependencies and
 *   output sizes from the operator that launched each event, linked by
 *   record-function id (et_link below).
 * - Scope, as Holistic Trace Analysis reads a trace: with ProfilerStep#N
 *   annotations, the GPU events launched inside them, the last step left
 *   out when there are several (the profiler often stops it midway).
 *
 * kineto_overlap computes Holistic Trace Analysis's comm/comp overlap for
 * the same events (`commsched info --measured`). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chakra_common.h"
#include "commsched/cost.h"
#include "kineto.h"
#include "pytorch_et.h"
#include "trace_json.h"

typedef struct kev {
    double ts, dur, launch; /* µs */
    int64_t stream, device, corr;
    const char *name; /* borrowed */
    int is_kernel, nccl, coll;
    int64_t bytes;
    commsched_dtype dtype;
    size_t rec;
    long group_size; /* NCCL kernels: the kernel's "Group size", 0: none */
    long step;       /* its profiler step's ordinal, -1: none */
    int waited;
    size_t wait_before; /* position of the node that reads its wait */
} kev;

typedef struct kcpu {
    double ts, end;
    int64_t tid;
    const char *name;
    json_t *args;
    size_t rec; /* its index in traceEvents (for messages) */
} kcpu;

typedef struct kstep {
    double ts, end;
    const char *name;
    long ordinal; /* distinct names numbered by first start */
} kstep;

typedef struct krt {
    int64_t corr, tid;
    double ts;
} krt;

typedef struct kineto {
    const char *file;
    import_diag *d; /* the running call's, while one runs */
    kev *gpu;
    size_t n_gpu;
    kcpu *cpu;
    size_t n_cpu;
    krt *rt;
    size_t n_rt;
    kstep *steps;
    size_t n_steps;
    size_t n_step_names; /* distinct ProfilerStep names, as HTA counts */
    const char **step_names; /* by ordinal, borrowed from doc */
    long world, rank_in_file;
    int64_t device;
    json_t *doc; /* the names are borrowed from it */
} kineto;

/* qsort over n elements, none when n < 2: a list the trace left empty is
 * still NULL, and qsort's base must be a valid pointer even for zero
 * elements (gcc's UBSan, nonnull-attribute). */
static void sort_some(void *base, size_t n, size_t size,
                      int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

static void kineto_free(kineto *k)
{
    json_decref(k->doc);
    free(k->gpu);
    free(k->cpu);
    free(k->rt);
    free(k->steps);
    free(k->step_names);
    memset(k, 0, sizeof *k);
}

static int oom(const kineto *k) { return import_oom(k->d); }

static int grow(void **p, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : 256;
    void *t = realloc(*p, nc * size);
    if (!t)
        return -1;
    *p = t;
    *cap = nc;
    return 0;
}

static int get_i64(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    return -1;
}

static int cmp_rt(const void *a, const void *b)
{
    const krt *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_cpu(const void *a, const void *b)
{
    const kcpu *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_launch(const void *a, const void *b)
{
    const kev *x = a, *y = b;
    if (x->launch != y->launch)
        return x->launch < y->launch ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* Reads traceEvents: GPU events of every device, runtime calls, CPU ops,
 * profiler steps. */
static int read_events(kineto *k, json_t *root)
{
    char path[96];
    if (!json_is_object(root))
        return trace_fail(k->d, k->file, "", "expected a JSON object with "
                                       "\"traceEvents\" (a Kineto trace)");
    json_t *evs = json_object_get(root, "traceEvents");
    if (!json_is_array(evs))
        return trace_fail(k->d, k->file, "traceEvents",
                          "missing or not an array (not a Kineto trace?)");
    json_t *di = json_object_get(root, "distributedInfo");
    k->world = 0;
    k->rank_in_file = -1;
    if (di) {
        int64_t v;
        if (!json_is_object(di))
            return trace_fail(k->d, k->file, "distributedInfo",
                              "expected an object");
        json_t *ws = json_object_get(di, "world_size");
        if (ws) {
            if (get_i64(ws, &v) != 0 || v < 1 ||
                v > COMMSCHED_MAX_GROUP_SIZE)
                return trace_fail(k->d, k->file, "distributedInfo.world_size",
                                  "expected an integer in 1..%u",
                                  COMMSCHED_MAX_GROUP_SIZE);
            k->world = (long)v;
        }
        json_t *rk = json_object_get(di, "rank");
        if (rk && get_i64(rk, &v) == 0)
            k->rank_in_file = (long)v;
    }
    size_t cap_gpu = 0, cap_cpu = 0, cap_rt = 0, cap_steps = 0;
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        snprintf(path, sizeof path, "traceEvents[%zu]", i);
        if (!json_is_object(e))
            return trace_fail(k->d, k->file, path, "expected an object (an event)");
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph || strcmp(ph, "X") != 0)
            continue; /* metadata, instants, flows */
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        double ts = trace_number(json_object_get(e, "ts"));
        double dur = trace_number(json_object_get(e, "dur"));
        if (!name)
            return trace_fail(k->d, k->file, path, "a complete event (ph X) "
                                             "needs a string \"name\"");
        if (!cat)
            continue;
        if (!(ts >= 0) || !(dur >= 0) || ts > 1e18 || dur > 1e15) {
            snprintf(path, sizeof path, "traceEvents[%zu].%s", i,
                     !(ts >= 0) || ts > 1e18 ? "ts" : "dur");
            return trace_fail(k->d, k->file, path,
                              "expected a number of microseconds in "
                              "0..1e15");
        }
        json_t *args = json_object_get(e, "args");
        int gpu = strcasecmp(cat, "kernel") == 0 ||
                  strcasecmp(cat, "gpu_memcpy") == 0 ||
                  strcasecmp(cat, "gpu_memset") == 0;
        if (gpu) {
            int64_t dev, stream, corr = -1;
            if (!json_is_object(args) ||
                get_i64(json_object_get(args, "device"), &dev) != 0 ||
                get_i64(json_object_get(args, "stream"), &stream) != 0) {
                snprintf(path, sizeof path, "traceEvents[%zu].args", i);
                return trace_fail(k->d, k->file, path,
                                  "a GPU event needs integer \"device\" "
                                  "and \"stream\"");
            }
            (void)get_i64(json_object_get(args, "correlation"), &corr);
            if (grow((void **)&k->gpu, k->n_gpu, &cap_gpu, sizeof *k->gpu))
                return oom(k);
            kev *g = &k->gpu[k->n_gpu++];
            memset(g, 0, sizeof *g);
            g->ts = ts;
            g->dur = dur;
            g->launch = ts;
            g->device = dev;
            g->stream = stream;
            g->corr = corr;
            g->name = name;
            g->rec = i;
            g->is_kernel = strcasecmp(cat, "kernel") == 0;
            g->nccl = g->is_kernel && strncmp(name, "nccl", 4) == 0;
            g->coll = -1;
        } else if (strcmp(cat, "cuda_runtime") == 0 ||
                   strcmp(cat, "cuda_driver") == 0) {
            int64_t corr, tid;
            if (!json_is_object(args) ||
                get_i64(json_object_get(args, "correlation"), &corr) != 0 ||
                get_i64(json_object_get(e, "tid"), &tid) != 0)
                continue;
            if (grow((void **)&k->rt, k->n_rt, &cap_rt, sizeof *k->rt))
                return oom(k);
            k->rt[k->n_rt++] = (krt){corr, tid, ts};
        } else if (strcmp(cat, "cpu_op") == 0 ||
                   strcmp(cat, "user_annotation") == 0) {
            int64_t tid;
            if (strncmp(name, "ProfilerStep#", 13) == 0) {
                if (grow((void **)&k->steps, k->n_steps, &cap_steps,
                         sizeof *k->steps))
                    return oom(k);
                k->steps[k->n_steps++] = (kstep){ts, ts + dur, name, -1};
            }
            if (get_i64(json_object_get(e, "tid"), &tid) != 0)
                continue;
            if (grow((void **)&k->cpu, k->n_cpu, &cap_cpu, sizeof *k->cpu))
                return oom(k);
            k->cpu[k->n_cpu++] = (kcpu){ts, ts + dur, tid, name, args, i};
        }
    }
    sort_some(k->rt, k->n_rt, sizeof *k->rt, cmp_rt);
    sort_some(k->cpu, k->n_cpu, sizeof *k->cpu, cmp_cpu);
    return 0;
}

/* The earliest runtime call with that correlation id (a launch can be
 * recorded by both the runtime and the driver), or NULL. */
static const krt *find_rt(const kineto *k, int64_t corr)
{
    if (corr < 0 || k->n_rt == 0)
        return NULL;
    size_t lo = 0, hi = k->n_rt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->rt[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->n_rt && k->rt[lo].corr == corr ? &k->rt[lo] : NULL;
}

/* The largest tensor among an op's "Input Dims" (bytes, in *best), and
 * its dtype. A dimension that is not a count (negative, fractional, 1e300)
 * or a tensor beyond the format's limit is an error at the record: it
 * would size a collective, silently (an 8 PiB all-reduce). */
static int op_bytes(const kineto *k, const kcpu *c, int64_t *best,
                    commsched_dtype *dt)
{
    json_t *dims = json_object_get(c->args, "Input Dims");
    json_t *types = json_object_get(c->args, "Input type");
    char path[128];
    size_t i;
    json_t *d;
    *best = 0;
    json_array_foreach(dims, i, d) {
        commsched_dtype t;
        unsigned es = trace_type_size(
            json_string_value(json_array_get(types, i)), &t);
        if (!json_is_array(d))
            continue;
        double numel = 1;
        size_t j;
        json_t *x;
        json_array_foreach(d, j, x) {
            double v = trace_number(x);
            if (!json_is_number(x) || v < 0 || v != floor(v) ||
                v > (double)COMMSCHED_MAX_SIZE) {
                snprintf(path, sizeof path,
                         "traceEvents[%zu].args.Input Dims[%zu][%zu]",
                         c->rec, i, j);
                return trace_fail(k->d, k->file, path,
                                  "%s: expected a dimension (an integer in "
                                  "0..2^53)",
                                  c->name);
            }
            numel *= v;
        }
        if (!es || json_array_size(d) == 0)
            continue;
        double bytes = numel * es;
        if (bytes > (double)COMMSCHED_MAX_SIZE) {
            snprintf(path, sizeof path, "traceEvents[%zu].args.Input Dims[%zu]",
                     c->rec, i);
            return trace_fail(k->d, k->file, path,
                              "%s: a tensor of %.3g bytes is beyond the "
                              "format's limit of 2^53",
                              c->name, bytes);
        }
        if ((int64_t)bytes > *best) {
            *best = (int64_t)bytes;
            *dt = t;
        }
    }
    return 0;
}

/* Kind and bytes of a NCCL kernel from the CPU ops around its launch. The
 * ops of a thread are sorted by start: look at those that started before
 * the launch, nearest first, a bounded number (hostile traces must not
 * make this quadratic). */
/* What newer profilers (PyTorch 2.1+) record on the NCCL kernel itself:
 * "In msg nelems" / "Out msg nelems" with "dtype" (a ScalarType name),
 * and "Group size". The size is used only where no CPU op gives one: the
 * CPU op's is the tensor the collective was asked for. */
static void kernel_args(const kineto *k, kev *g)
{
    json_t *args = json_object_get(
        json_array_get(json_object_get(k->doc, "traceEvents"), g->rec),
        "args");
    json_t *gs = json_object_get(args, "Group size");
    if (json_is_integer(gs) && json_integer_value(gs) >= 1 &&
        json_integer_value(gs) <= COMMSCHED_MAX_GROUP_SIZE)
        g->group_size = (long)json_integer_value(gs);
    if (g->bytes > 0)
        return;
    commsched_dtype dt;
    unsigned es = trace_type_size(
        json_string_value(json_object_get(args, "dtype")), &dt);
    const char *keys[] = {"In msg nelems", "Out msg nelems"};
    for (int i = 0; i < 2 && es; i++) {
        json_t *v = json_object_get(args, keys[i]);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            (double)json_integer_value(v) * es > (double)COMMSCHED_MAX_SIZE)
            continue;
        int64_t b = (int64_t)json_integer_value(v) * es;
        if (b > g->bytes) {
            g->bytes = b;
            g->dtype = dt;
        }
    }
}

static int describe_from_ops(const kineto *k, kev *g, const krt *r)
{
    size_t lo = 0, hi = k->n_cpu;
    kcpu key = {r->ts, 0, r->tid, NULL, NULL, 0};
    while (lo < hi) { /* first op after (tid, ts) */
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_cpu(&k->cpu[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int named = 0;
    for (size_t n = 0; lo > 0 && n < 256; n++) {
        const kcpu *c = &k->cpu[--lo];
        if (c->tid != r->tid)
            break;
        if (c->end < r->ts)
            continue;
        int is_comm = strncmp(c->name, "nccl:", 5) == 0 ||
                      strncmp(c->name, "c10d::", 6) == 0;
        if (!is_comm)
            continue;
        int kind = chakra_coll_from_name(c->name);
        if (kind >= 0 && !named) { /* innermost names it */
            g->coll = kind;
            named = 1;
        }
        commsched_dtype dt = COMMSCHED_DTYPE_NONE;
        int64_t b;
        int rc = op_bytes(k, c, &b, &dt);
        if (rc)
            return rc;
        if (b > g->bytes) {
            g->bytes = b;
            g->dtype = dt;
        }
    }
    return 0;
}

static int describe_collective(const kineto *k, kev *g)
{
    const krt *r = find_rt(k, g->corr);
    g->coll = chakra_coll_from_name(g->name);
    int rc = r ? describe_from_ops(k, g, r) : 0;
    if (rc == 0)
        kernel_args(k, g);
    return rc;
}

static int pick_device(kineto *k, const commsched_import_options *o, int64_t *dev)
{
    if (k->n_gpu == 0)
        return trace_fail(k->d, k->file, "traceEvents",
                          "no GPU events (kernel, gpu_memcpy, gpu_memset): "
                          "was the profiler run with CUDA activities?");
    int64_t first = k->gpu[0].device, other = first;
    for (size_t i = 0; i < k->n_gpu; i++)
        if (k->gpu[i].device != first)
            other = k->gpu[i].device;
    if (o->rank >= 0) {
        for (size_t i = 0; i < k->n_gpu; i++)
            if (k->gpu[i].device == o->rank) {
                *dev = o->rank;
                return 0;
            }
        return import_fail(k->d, COMMSCHED_ESCHEMA,
                           "%s: no GPU events on device %ld (--rank)",
                           k->file, o->rank);
    }
    if (other != first) {
        return import_fail(k->d, COMMSCHED_ESCHEMA,
                           "%s: GPU events of devices %lld and %lld: choose "
                           "one with --rank",
                           k->file, (long long)first, (long long)other);
    }
    *dev = first;
    return 0;
}

static int cmp_stream_ts(const void *a, const void *b)
{
    const kev *x = *(const kev *const *)a, *y = *(const kev *const *)b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* One stream runs one kernel at a time: events of a stream that overlap
 * (on HTA's rounded microseconds, which absorb the profiler's known
 * sub-microsecond overlaps) mean durations that cannot all be true. A
 * warning names the first pair; the import goes on. */
static int warn_overlaps(const kineto *k)
{
    const kev **by = malloc((k->n_gpu ? k->n_gpu : 1) * sizeof *by);
    if (!by)
        return oom(k);
    for (size_t i = 0; i < k->n_gpu; i++)
        by[i] = &k->gpu[i];
    sort_some(by, k->n_gpu, sizeof *by, cmp_stream_ts);
    size_t count = 0;
    const kev *a = NULL, *b = NULL;
    for (size_t i = 1; i < k->n_gpu; i++) {
        const kev *p = by[i - 1], *q = by[i];
        if (p->stream == q->stream && ceil(q->ts) < floor(p->ts + p->dur)) {
            if (!count++) {
                a = p;
                b = q;
            }
        }
    }
    if (count)
        import_sayf(k->d, COMMSCHED_IMPORT_WARNING, k->file,
                    "%zu GPU event%s start%s "
                    "before the previous one on %s stream ends, first "
                    "traceEvents[%zu] (stream %lld, %.3f us before "
                    "traceEvents[%zu] ends): a stream runs one kernel at a "
                    "time, so these durations are doubtful",
                    count, count == 1 ? "" : "s", count == 1 ? "s" : "",
                    count == 1 ? "its" : "their", b->rec, (long long)b->stream,
                    a->ts + a->dur - b->ts, a->rec);
    free(by);
    return 0;
}

static int cmp_step_name(const void *a, const void *b)
{
    const kstep *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_step_ts(const void *a, const void *b)
{
    const kstep *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return strcmp(x->name, y->name);
}

typedef struct step_first {
    double ts;
    const char *name;
    size_t id; /* the name's index in name order */
} step_first;

static int cmp_first(const void *a, const void *b)
{
    const step_first *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Numbers the distinct step names by their first start (each row's
 * ordinal) and leaves the rows sorted by start: sorted by name, a name's
 * first row is its earliest; those sorted by start give the ordinals.
 * O(steps log steps). */
static int number_steps(kineto *k)
{
    sort_some(k->steps, k->n_steps, sizeof *k->steps, cmp_step_name);
    size_t n = 0;
    for (size_t i = 0; i < k->n_steps; i++)
        n += i == 0 || strcmp(k->steps[i].name, k->steps[i - 1].name);
    k->n_step_names = n;
    step_first *first = malloc((n ? n : 1) * sizeof *first);
    size_t *ordinal = malloc((n ? n : 1) * sizeof *ordinal);
    k->step_names = malloc((n ? n : 1) * sizeof *k->step_names);
    if (!first || !ordinal || !k->step_names) {
        free(first);
        free(ordinal);
        return oom(k);
    }
    size_t m = 0;
    for (size_t i = 0; i < k->n_steps; i++) {
        if (i == 0 || strcmp(k->steps[i].name, k->steps[i - 1].name)) {
            first[m] = (step_first){k->steps[i].ts, k->steps[i].name, m};
            m++;
        }
        k->steps[i].ordinal = (long)(m - 1); /* the name id, for now */
    }
    sort_some(first, m, sizeof *first, cmp_first);
    for (size_t i = 0; i < m; i++) {
        ordinal[first[i].id] = i;
        k->step_names[i] = first[i].name;
    }
    for (size_t i = 0; i < k->n_steps; i++)
        k->steps[i].ordinal = (long)ordinal[k->steps[i].ordinal];
    free(first);
    free(ordinal);
    sort_some(k->steps, k->n_steps, sizeof *k->steps, cmp_step_ts);
    return 0;
}

/* The ordinal of the step whose span holds time t (the latest to start at
 * or before it), -1 when none does. */
static long step_at(const kineto *k, double t)
{
    size_t lo = 0, hi = k->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->steps[mid].ts <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t <= k->steps[lo - 1].end ? k->steps[lo - 1].ordinal
                                               : -1;
}

/* The events kept. o->step >= 0: those launched inside that step (by
 * ordinal). Otherwise HTA's scope (Trace._filter_irrelevant_gpu_kernels):
 * with two or more distinct ProfilerStep names, the GPU events whose
 * launch (the CPU call with their correlation id) starts before the last
 * step does, on HTA's rounded microseconds; the last step is left out, as
 * the profiler often stops it midway. With one step name or none, every
 * GPU event. */
static int select_events(kineto *k, const commsched_import_options *o)
{
    int64_t dev = 0;
    int rc = pick_device(k, o, &dev);
    if (rc || (rc = number_steps(k)) != 0)
        return rc;
    k->device = dev;
    if (o->step >= 0 && (size_t)o->step >= k->n_step_names)
        return import_fail(k->d, COMMSCHED_EINVAL,
                           "%s: no profiler step %ld (--step): the trace "
                           "has %zu (0..%zu, ProfilerStep# annotations in "
                           "time order)",
                           k->file, o->step, k->n_step_names,
                           k->n_step_names ? k->n_step_names - 1 : 0);
    double last_start = -INFINITY;
    for (size_t i = 0; i < k->n_steps; i++)
        if (ceil(k->steps[i].ts) > last_start)
            last_start = ceil(k->steps[i].ts);
    int scoped = k->n_step_names >= 2;
    size_t m = 0;
    for (size_t i = 0; i < k->n_gpu; i++) {
        if (k->gpu[i].device != dev)
            continue;
        const krt *r = find_rt(k, k->gpu[i].corr);
        double launch = r ? r->ts : k->gpu[i].ts;
        long step = step_at(k, launch);
        if (o->step >= 0 ? step != o->step
                         : scoped && (!r || !(ceil(r->ts) < last_start)))
            continue;
        kev *g = &k->gpu[m];
        *g = k->gpu[i];
        g->launch = launch;
        g->step = step;
        if (g->nccl && (rc = describe_collective(k, g)) != 0)
            return rc;
        m++;
    }
    k->n_gpu = m;
    if (m == 0 && o->step >= 0)
        return trace_fail(k->d, k->file, "traceEvents",
                          "no GPU event of device %lld was launched in "
                          "profiler step %ld (%s)",
                          (long long)dev, o->step, k->step_names[o->step]);
    if (m == 0)
        return trace_fail(k->d, k->file, "traceEvents",
                          "no GPU event of device %lld was launched before "
                          "the last profiler step began (the last step is "
                          "left out, as HTA does)",
                          (long long)dev);
    sort_some(k->gpu, k->n_gpu, sizeof *k->gpu, cmp_launch);
    return warn_overlaps(k);
}

int kineto_load(import_diag *d, const char *path,
                const commsched_import_options *o, kineto **out)
{
    kineto *k = calloc(1, sizeof *k);
    if (!k)
        return import_oom(d);
    k->file = import_file_name(path);
    k->d = d;
    int rc = trace_json_load(d, path, o->max_memory, &k->doc);
    if (rc == 0)
        rc = read_events(k, k->doc);
    if (rc == 0)
        rc = select_events(k, o);
    if (rc != 0) {
        kineto_destroy(k);
        return rc;
    }
    k->d = NULL;
    *out = k;
    return 0;
}

void kineto_destroy(kineto *k)
{
    if (!k)
        return;
    kineto_free(k);
    free(k);
}

long kineto_device(const kineto *k) { return (long)k->device; }
long kineto_rank(const kineto *k) { return k->rank_in_file; }

long kineto_ranks(const kineto *k, const commsched_import_options *o)
{
    return o->ranks > 0 ? o->ranks : k->world > 0 ? k->world : 8;
}

size_t kineto_event_count(const kineto *k) { return k->n_gpu; }

static double matmul_flops(const kineto *k, const kev *g);

kineto_event kineto_event_at(const kineto *k, size_t i)
{
    const kev *g = &k->gpu[i];
    kineto_event e = {g->name, g->ts,         g->dur,  g->nccl ? g->coll : -1,
                      g->bytes, g->group_size, g->step, 0, 0};
    if (!g->nccl && g->is_kernel) {
        e.flops = matmul_flops(k, g);
    } else if (!g->nccl && strncmp(g->name, "Memcpy DtoD", 11) == 0) {
        /* a device-to-device copy reads and writes its bytes: the memory
         * traffic a compute node's bytes count */
        json_t *b = json_object_get(
            json_object_get(json_array_get(json_object_get(k->doc,
                                                            "traceEvents"),
                                           g->rec),
                            "args"),
            "bytes");
        if (json_is_integer(b) && json_integer_value(b) > 0 &&
            json_integer_value(b) < (1LL << 52))
            e.mem_bytes = 2.0 * (double)json_integer_value(b);
    }
    return e;
}

size_t kineto_step_count(const kineto *k) { return k->n_step_names; }

const char *kineto_step_name(const kineto *k, long ordinal)
{
    return ordinal >= 0 && (size_t)ordinal < k->n_step_names
               ? k->step_names[ordinal]
               : NULL;
}

/* ------------------------------------------------------------------ */
/* HTA's comm/comp overlap                                             */
/* ------------------------------------------------------------------ */

/* Holistic Trace Analysis 0.5.0 (analyzers/communication_analysis.py,
 * utils/utils.py, common/trace_parser.py), rule for rule:
 *
 * - times as HTA's parser rounds them (round_down_time_stamps, for a
 *   trace with fractional microseconds): start = ceil(ts), end =
 *   floor(ts + dur), so a sub-microsecond event can end before it starts;
 * - kinds by name, case-sensitive: communication matches ^nccl.*Kernel;
 *   computation is every other event but those matching ^nccl.*Kernel,
 *   .*Memcpy, ^Memset or .*Sync (memcpy, memset and sync events count as
 *   neither);
 * - each kind's intervals merged as merge_kernel_intervals does: sorted by
 *   start, a new group where a start passes every earlier end, a group
 *   spanning its least start and greatest end;
 * - a sweep over the groups' ends (+1/-1 communication, +2/-2
 *   computation): the time spent at 3, over the sum of the communication
 *   groups' lengths.
 *
 * The rounding is the rule commsched missed: on a 2-rank NCCL trace HTA
 * reads 14.31%, the unrounded intervals 14.76%. */
typedef struct hta_iv {
    double ts, end;
    size_t order; /* for a stable sort: HTA's sort leaves ties unordered */
} hta_iv;

static int cmp_hta_iv(const void *a, const void *b)
{
    const hta_iv *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* merge_kernel_intervals in place; returns the group count. */
static size_t hta_merge(hta_iv *iv, size_t n)
{
    sort_some(iv, n, sizeof *iv, cmp_hta_iv);
    size_t m = 0;
    double top = -INFINITY; /* the greatest end of every earlier row */
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || iv[i].ts > top) {
            iv[m++] = iv[i];
        } else if (iv[i].end > iv[m - 1].end) {
            iv[m - 1].end = iv[i].end;
        }
        if (iv[i].end > top)
            top = iv[i].end;
    }
    return m;
}

/* ^nccl.*Kernel */
static int hta_comm(const char *name)
{
    return strncmp(name, "nccl", 4) == 0 && strstr(name + 4, "Kernel");
}

/* not (^nccl.*Kernel | .*Memcpy | ^Memset | .*Sync) */
static int hta_comp(const char *name)
{
    return !hta_comm(name) && !strstr(name, "Memcpy") &&
           strncmp(name, "Memset", 6) != 0 && !strstr(name, "Sync");
}

typedef struct hta_edge {
    double t;
    int delta;
} hta_edge;

static int cmp_edge(const void *a, const void *b)
{
    const hta_edge *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

double kineto_overlap(const kineto *k, double *comm_us)
{
    size_t n = k->n_gpu ? k->n_gpu : 1;
    hta_iv *comm = malloc(n * sizeof *comm), *comp = malloc(n * sizeof *comp);
    hta_edge *ev = malloc(2 * n * sizeof *ev);
    size_t nc = 0, np = 0, ne = 0;
    double result = NAN;
    *comm_us = 0;
    if (!comm || !comp || !ev)
        goto done;
    for (size_t i = 0; i < k->n_gpu; i++) {
        const kev *g = &k->gpu[i];
        int is_comm = hta_comm(g->name);
        if (!is_comm && !hta_comp(g->name))
            continue;
        hta_iv *dst = is_comm ? &comm[nc++] : &comp[np++];
        dst->ts = ceil(g->ts);
        dst->end = floor(g->ts + g->dur);
        dst->order = i;
    }
    nc = hta_merge(comm, nc);
    np = hta_merge(comp, np);
    double total = 0, both = 0;
    for (size_t i = 0; i < nc; i++) {
        total += comm[i].end - comm[i].ts;
        ev[ne++] = (hta_edge){comm[i].ts, 1};
        ev[ne++] = (hta_edge){comm[i].end, -1};
    }
    for (size_t i = 0; i < np; i++) {
        ev[ne++] = (hta_edge){comp[i].ts, 2};
        ev[ne++] = (hta_edge){comp[i].end, -2};
    }
    /* The level after the last edge at a time is the same in any order
     * of the edges at that time, and only it spans time. */
    sort_some(ev, ne, sizeof *ev, cmp_edge);
    int level = 0;
    for (size_t i = 0; i < ne; i++) {
        level += ev[i].delta;
        if (level == 3 && i + 1 < ne)
            both += ev[i + 1].t - ev[i].t;
    }
    *comm_us = total;
    if (nc > 0 && total != 0)
        result = both / total;
done:
    free(comm);
    free(comp);
    free(ev);
    return result;
}

/* ------------------------------------------------------------------ */
/* The graph                                                           */
/* ------------------------------------------------------------------ */

/* "12:at::native::vectorized_elementwise_kernel<4, ...": position, then
 * the kernel's key in measured tables (commsched_costs_key: no leading
 * "void ", cut at its argument list, at most 80 bytes), so a node finds
 * its kernel's measured row by name. */
static void kernel_name(const kev *g, size_t pos, char *dst, size_t size)
{
    char buf[96];
    snprintf(dst, size, "%zu:%s", pos,
             commsched_costs_key(g->name, buf, sizeof buf));
}

/* First position >= from whose compute kernel started at or after t: a
 * max segment tree over the compute kernels' start times (collectives
 * hold -inf), so placing every wait costs O(n log n). */
typedef struct segtree {
    double *v;
    size_t n; /* leaves, a power of two */
} segtree;

static int seg_init(segtree *s, const kev *gpu, size_t n)
{
    s->n = 1;
    while (s->n < n)
        s->n *= 2;
    s->v = malloc(2 * s->n * sizeof *s->v);
    if (!s->v)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        s->v[s->n + i] = i < n && !gpu[i].nccl ? gpu[i].ts : -INFINITY;
    for (size_t i = s->n; i-- > 1;)
        s->v[i] = fmax(s->v[2 * i], s->v[2 * i + 1]);
    return 0;
}

static size_t seg_first(const segtree *s, size_t node, size_t lo, size_t hi,
                        size_t from, double t)
{
    if (hi <= from || s->v[node] < t)
        return SIZE_MAX;
    if (hi - lo == 1)
        return lo;
    size_t mid = lo + (hi - lo) / 2;
    size_t r = seg_first(s, 2 * node, lo, mid, from, t);
    return r != SIZE_MAX ? r : seg_first(s, 2 * node + 1, mid, hi, from, t);
}

/* ---- import kineto --et: host dependencies and sizes from the ET ---- */

/* The innermost CPU op around a GPU event's launch, as Chakra's trace
 * linker finds a kernel's parent: the latest-starting op of the launching
 * thread that still runs at the launch (bounded walk, as above). */
static const kcpu *launching_op(const kineto *k, const kev *g)
{
    const krt *r = find_rt(k, g->corr);
    if (!r)
        return NULL;
    size_t lo = 0, hi = k->n_cpu;
    kcpu key = {r->ts, 0, r->tid, NULL, NULL, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_cpu(&k->cpu[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t n = 0; lo > 0 && n < 4096; n++) {
        const kcpu *c = &k->cpu[--lo];
        if (c->tid != r->tid)
            break;
        if (c->end >= r->ts && c->args)
            return c;
    }
    return NULL;
}

/* One "Input Dims" entry as a list of n dimensions (each a count), into
 * d; 0 when it is not one. */
static int dims_of(json_t *dims, size_t i, size_t n, double *d)
{
    json_t *a = json_array_get(dims, i);
    if (!json_is_array(a) || json_array_size(a) != n)
        return 0;
    for (size_t j = 0; j < n; j++) {
        double v = trace_number(json_array_get(a, j));
        if (!(v >= 0) || v > 1e9 || v != floor(v))
            return 0;
        d[j] = v;
    }
    return 1;
}

/* The flops of a matmul kernel, from the op that launched it (recorded
 * with record_shapes): aten::mm [M,K]x[K,N] and aten::addmm (bias first)
 * 2MKN, aten::bmm [B,M,K]x[B,K,N] and aten::baddbmm 2BMKN; 0 for any other
 * kernel, or shapes that do not multiply. What calibration fits its
 * achieved flop/s to. */
static double matmul_flops(const kineto *k, const kev *g)
{
    const kcpu *c = launching_op(k, g);
    if (!c)
        return 0;
    json_t *dims = json_object_get(c->args, "Input Dims");
    double a[3], b[3];
    size_t first = strcmp(c->name, "aten::addmm") == 0 ||
                   strcmp(c->name, "aten::baddbmm") == 0;
    if (strcmp(c->name, "aten::mm") == 0 ||
        strcmp(c->name, "aten::addmm") == 0) {
        if (dims_of(dims, first, 2, a) && dims_of(dims, first + 1, 2, b) &&
            a[1] == b[0])
            return 2 * a[0] * a[1] * b[1];
    } else if (strcmp(c->name, "aten::bmm") == 0 ||
               strcmp(c->name, "aten::baddbmm") == 0) {
        if (dims_of(dims, first, 3, a) && dims_of(dims, first + 1, 3, b) &&
            a[0] == b[0] && a[2] == b[1])
            return 2 * a[0] * a[1] * a[2] * b[2];
    }
    return 0;
}

/* The op's record-function id: "Record function id" (what Chakra's linker
 * reads), else "External id" (older profilers, whose CPU ops share it
 * with the ET's rf_id); -1 when neither. */
static int64_t rf_id_of(const kcpu *c)
{
    int64_t v;
    if (get_i64(json_object_get(c->args, "Record function id"), &v) == 0 ||
        get_i64(json_object_get(c->args, "External id"), &v) == 0)
        return v;
    return -1;
}

/* storage id -> the last GPU event (position) that wrote it: open
 * addressing, grown at half load. */
typedef struct writers {
    int64_t *key;
    size_t *pos, cap, n;
} writers;

static size_t w_slot(const writers *w, int64_t k)
{
    size_t i = (size_t)((uint64_t)k * 0x9E3779B97F4A7C15u) & (w->cap - 1);
    while (w->pos[i] != SIZE_MAX && w->key[i] != k)
        i = (i + 1) & (w->cap - 1);
    return i;
}

static int w_put(writers *w, int64_t k, size_t p)
{
    if (2 * (w->n + 1) > w->cap) {
        writers nw = {NULL, NULL, w->cap ? 2 * w->cap : 64, 0};
        nw.key = malloc(nw.cap * sizeof *nw.key);
        nw.pos = malloc(nw.cap * sizeof *nw.pos);
        if (!nw.key || !nw.pos) {
            free(nw.key);
            free(nw.pos);
            return -1;
        }
        for (size_t i = 0; i < nw.cap; i++)
            nw.pos[i] = SIZE_MAX;
        for (size_t i = 0; i < w->cap; i++)
            if (w->pos[i] != SIZE_MAX) {
                size_t j = w_slot(&nw, w->key[i]);
                nw.key[j] = w->key[i];
                nw.pos[j] = w->pos[i];
                nw.n++;
            }
        free(w->key);
        free(w->pos);
        *w = nw;
    }
    size_t i = w_slot(w, k);
    w->n += w->pos[i] == SIZE_MAX;
    w->key[i] = k;
    w->pos[i] = p;
    return 0;
}

static size_t w_get(const writers *w, int64_t k)
{
    return w->cap ? w->pos[w_slot(w, k)] : SIZE_MAX;
}

/* Per GPU event: the ET op that launched it (its inputs' storages give
 * its host dependencies: the last event that wrote each; its outputs'
 * bytes its output's size). dep[p] lists positions (deps_off). */
typedef struct etlink {
    size_t *dep_off, *dep; /* CSR: deps of p in dep[dep_off[p]..[p+1]) */
    int64_t *bytes;        /* -1: no ET op */
    size_t linked, edges;
} etlink;

static int et_link(const kineto *k, pytorch_et *e, etlink *L)
{
    size_t n = k->n_gpu, cap_dep = 0, nd = 0;
    et_tensor *ts = NULL;
    size_t nt = 0, tcap = 0;
    writers w = {NULL, NULL, 0, 0};
    int rc = 0;
    L->dep_off = malloc((n + 1) * sizeof *L->dep_off);
    L->bytes = malloc((n ? n : 1) * sizeof *L->bytes);
    L->dep = NULL;
    if (!L->dep_off || !L->bytes)
        return oom(k);
    L->dep_off[0] = 0;
    for (size_t p = 0; p < n; p++) {
        L->bytes[p] = -1;
        const kcpu *c = launching_op(k, &k->gpu[p]);
        int64_t rf = c ? rf_id_of(c) : -1;
        size_t node = rf >= 0 ? pytorch_et_find_rf(e, rf) : SIZE_MAX;
        if (node != SIZE_MAX) {
            L->linked++;
            if ((rc = pytorch_et_tensors(e, node, 0, &ts, &nt, &tcap)) != 0)
                break;
            for (size_t t = 0; t < nt; t++) {
                size_t q = w_get(&w, ts[t].storage);
                if (q == SIZE_MAX)
                    continue;
                size_t d = L->dep_off[p];
                while (d < nd && L->dep[d] != q)
                    d++;
                if (d < nd)
                    continue; /* already listed */
                if (nd == cap_dep &&
                    grow((void **)&L->dep, nd + 1, &cap_dep,
                         sizeof *L->dep) != 0) {
                    rc = oom(k);
                    break;
                }
                L->dep[nd++] = q;
                L->edges++;
            }
            if (rc != 0 ||
                (rc = pytorch_et_tensors(e, node, 1, &ts, &nt, &tcap)) != 0)
                break;
            int64_t b = 0;
            for (size_t t = 0; t < nt; t++) {
                if (b <= COMMSCHED_MAX_SIZE - ts[t].bytes)
                    b += ts[t].bytes;
                if (w_put(&w, ts[t].storage, p) != 0) {
                    rc = oom(k);
                    break;
                }
            }
            L->bytes[p] = b;
            if (rc != 0)
                break;
        }
        L->dep_off[p + 1] = nd;
    }
    free(ts);
    free(w.key);
    free(w.pos);
    return rc;
}

int kineto_build(kineto *k, import_diag *d,
                 const commsched_import_options *o, commsched_graph **out)
{
    k->d = d;
    size_t n = k->n_gpu;
    pytorch_et *et = NULL;
    etlink L = {NULL, NULL, NULL, 0, 0};
    if (o->et) {
        int lrc = pytorch_et_load(d, o->et, o->max_memory, &et);
        if (lrc == 0)
            lrc = et_link(k, et, &L);
        pytorch_et_destroy(et);
        if (lrc != 0) {
            free(L.dep_off);
            free(L.dep);
            free(L.bytes);
            return lrc;
        }
    }
    char(*names)[112] = malloc((n ? n : 1) * sizeof *names);
    size_t *head = malloc((n + 1) * sizeof *head); /* waits before pos */
    size_t *next = malloc((n ? n : 1) * sizeof *next);
    const char **in = malloc((n + 2 + L.edges) * sizeof *in);
    char(*waits)[160] = malloc((n ? n : 1) * sizeof *waits);
    /* last compute node per stream: a small table, searched linearly
     * (traces use a handful of streams; bounded by the event count) */
    int64_t *st_id = malloc((n ? n : 1) * sizeof *st_id);
    size_t *st_last = malloc((n ? n : 1) * sizeof *st_last);
    size_t n_st = 0;
    segtree seg = {NULL, 0};
    commsched_builder *b = NULL;
    commsched_error err = {0};
    int rc = 0;
    long colls = 0, unsized = 0;
    if (!names || !head || !next || !in || !waits || !st_id || !st_last ||
        seg_init(&seg, k->gpu, n) != 0) {
        rc = oom(k);
        goto done;
    }
    for (size_t i = 0; i <= n; i++)
        head[i] = SIZE_MAX;
    for (size_t p = n; p-- > 0;) { /* reverse: lists keep launch order */
        kernel_name(&k->gpu[p], p, names[p], sizeof names[p]);
        if (!k->gpu[p].nccl)
            continue;
        size_t q = seg_first(&seg, 1, 0, seg.n, p + 1,
                             k->gpu[p].ts + k->gpu[p].dur);
        if (q == SIZE_MAX || q >= n)
            q = n;
        next[p] = head[q];
        head[q] = p;
    }
    long ranks = kineto_ranks(k, o);
    if (commsched_builder_create("kineto", &b, &err) != COMMSCHED_OK) {
        rc = import_report(d, k->file, &err);
        goto done;
    }
    for (size_t p = 0; p < n; p++)
        if (k->gpu[p].nccl) {
            /* the size scales every all-gather and reduce-scatter: never
             * assumed silently */
            if (o->ranks <= 0 && k->world <= 0)
                import_sayf(d, COMMSCHED_IMPORT_WARNING, k->file,
                            "the trace does not give the size of group "
                            "\"world\" (no distributedInfo.world_size): %ld "
                            "ranks assumed; give it with --ranks N",
                            ranks);
            (void)commsched_builder_add_group(b, "world", ranks, 0, &err);
            break;
        }
    size_t last_compute = SIZE_MAX;
    for (size_t p = 0; p <= n; p++) {
        size_t ni = 0;
        for (size_t c = head[p]; c != SIZE_MAX; c = next[c]) {
            import_add_wait(b, names[c], &err);
            snprintf(waits[c], sizeof waits[c], "%s.wait", names[c]);
            in[ni++] = waits[c];
        }
        if (p == n)
            break;
        const kev *g = &k->gpu[p];
        commsched_output_spec os = {names[p], 0, NULL};
        commsched_node_spec s = {0};
        s.name = names[p];
        s.runtime_ns = g->dur * 1000.0;
        s.flops = s.bytes = -1;
        s.outputs = &os;
        s.n_outputs = 1;
        if (g->nccl) {
            ni = 0; /* its own waits come later */
            if (last_compute != SIZE_MAX)
                in[ni++] = names[last_compute];
            s.kind = COMMSCHED_NODE_COLLECTIVE;
            s.op = commsched_coll_op_str((commsched_coll_op)(
                g->coll >= 0 ? g->coll : COMMSCHED_COLL_ALL_REDUCE));
            s.group = "world";
            s.dtype = g->dtype;
            os.size = g->bytes;
            colls++;
            unsized += g->bytes == 0;
        } else {
            size_t t = 0;
            while (t < n_st && st_id[t] != g->stream)
                t++;
            if (t == n_st) {
                st_id[n_st] = g->stream;
                st_last[n_st++] = SIZE_MAX;
            }
            if (st_last[t] != SIZE_MAX)
                in[ni++] = names[st_last[t]];
            st_last[t] = p;
            last_compute = p;
            s.kind = COMMSCHED_NODE_COMPUTE;
            s.op = g->is_kernel ? "kernel"
                   : strcasestr(g->name, "memset") ? "memset" : "memcpy";
            if (L.bytes && L.bytes[p] >= 0)
                os.size = L.bytes[p];
        }
        /* --et: the ET op's inputs, written by earlier kernels; a
         * collective's result is read through its wait, placed above */
        for (size_t t = L.dep_off ? L.dep_off[p] : 0;
             L.dep_off && t < L.dep_off[p + 1]; t++) {
            size_t q = L.dep[t];
            if (k->gpu[q].nccl)
                continue;
            size_t j = 0;
            while (j < ni && in[j] != names[q])
                j++;
            if (j == ni)
                in[ni++] = names[q];
        }
        s.inputs = in;
        s.n_inputs = ni;
        (void)commsched_builder_add_node(b, &s, &err);
    }
    rc = commsched_builder_finish(b, 0, out, &err) == COMMSCHED_OK
             ? 0
             : import_report(d, k->file, &err);
    b = NULL;
    if (rc == 0) {
        double comm_us;
        double ov = kineto_overlap(k, &comm_us);
        size_t steps = o->step >= 0             ? 1
                       : k->n_step_names > 1 ? k->n_step_names - 1
                                             : k->n_step_names;
        char overlap[64];
        if (isnan(ov))
            snprintf(overlap, sizeof overlap, "n/a (no NCCL kernel)");
        else
            snprintf(overlap, sizeof overlap,
                     "%.2f%% of %.1f us of NCCL kernel time", 100 * ov,
                     comm_us);
        import_sayf(d, COMMSCHED_IMPORT_NOTE, k->file,
                    "device %lld, %zu profiler step%s: %zu GPU events "
                    "imported (%ld NCCL kernels as collectives on %ld ranks, "
                    "%ld without a size); measured comm/comp overlap (HTA) "
                    "%s",
                    (long long)k->device, steps, steps == 1 ? "" : "s", n,
                    colls, ranks, unsized, overlap);
        if (unsized)
            import_sayf(d, COMMSCHED_IMPORT_WARNING, k->file,
                        "%ld of %ld collective%s without a size: no nccl:* "
                        "or c10d::* op around the launch gives \"Input "
                        "Dims\" with a known \"Input type\"; imported as 0 "
                        "bytes, so they cost their latency alone in the cost "
                        "model",
                        unsized, colls, colls == 1 ? "" : "s");
        if (o->et)
            import_sayf(d, COMMSCHED_IMPORT_NOTE, o->et,
                        "%zu of %zu GPU events linked to their operator by "
                        "record-function id; %zu host dependencies and their "
                        "sizes from the ET",
                        L.linked, n, L.edges);
    }
done:
    commsched_builder_destroy(b);
    free(seg.v);
    free(names);
    free(head);
    free(next);
    free(in);
    free(waits);
    free(st_id);
    free(st_last);
    free(L.dep_off);
    free(L.dep);
    free(L.bytes);
    k->d = NULL;
    return rc;
}

int import_kineto(import_diag *d, const char *path,
                  const commsched_import_options *o, commsched_graph **out)
{
    kineto *k = NULL;
    int rc = kineto_load(d, path, o, &k);
    if (rc == 0)
        rc = kineto_build(k, d, o, out);
    kineto_destroy(k);
    return rc;
}
