/* commsched — measured costs: the tables a profiler trace gives the cost
 * model (commsched/cost.h, docs/COST.md "Measured costs").
 *
 * Samples go in (commsched_costs_add_*), commsched_costs_fit turns them
 * into two sorted tables, and the lookups binary-search those:
 *
 * - kernels, by (key, position): the k-th kernel of a profiler step is
 *   the same operator on the same shapes in every step of a training
 *   loop, so a row per (key, position in the step) holds the median of
 *   its steps' durations (a median: one call delayed by a page fault or a
 *   preempted launch should not move the estimate), and one row per key
 *   (position -1) the mean of all its samples, for a node whose position
 *   is not known or not measured. A mean there, not a median: one key
 *   names many calls on many shapes (an elementwise kernel on every
 *   tensor), and only the mean keeps their sum, which is what a step's
 *   time is made of (on three real traces the per-key median priced a
 *   held-out step 20-50% short, the mean within 1%).
 * - collectives, by (op, ranks): one point per distinct size (the median
 *   of its samples) and, with two sizes or more, the least-squares line
 *   time = latency + bytes / bandwidth through the points. Between points
 *   the estimate interpolates (what PyTorch's profile-guided estimator
 *   does with its sizes); beyond the largest size the line holds up to
 *   twice it, and past that the model takes over: a bandwidth measured on
 *   small messages says little about large ones (protocols change).
 *
 * A loaded profile fills the tables directly (no samples). */
#include "commsched/cost.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "json_writer.h"
#include "utf8.h"
#include "util.h"

#define KEY_MAX 80 /* bytes of a key, as the Kineto importer names nodes */
/* How far (in positions) a node's row may be from its own position: a
 * step that launched a few kernels more or less than the measured ones
 * shifts the rest. */
#define POS_WINDOW 8

typedef struct ksample {
    const char *key; /* arena */
    double pos, ns;  /* pos -1: unknown */
} ksample;

typedef struct csample {
    commsched_coll_op op;
    uint32_t ranks;
    double bytes, ns;
} csample;

typedef struct krow {
    const char *key; /* arena */
    double pos;      /* -1: the key's row */
    double ns, spread;
    uint32_t samples;
} krow;

typedef struct cpoint {
    double bytes, ns, spread;
    uint32_t samples;
} cpoint;

typedef struct crow {
    commsched_coll_op op;
    uint32_t ranks;
    size_t first, n; /* its points in points[] */
    uint32_t samples;
    int has_line;
    /* the line: bytes_per_ns 0 when the time does not grow with size
     * (kept as a bandwidth, as the file holds it, so a profile read back
     * prices to the bit what the fit did) */
    double latency_ns, bytes_per_ns, spread, fit_error;
} crow;

struct commsched_costs {
    cs_arena names;
    ksample *ks;
    size_t n_ks, cap_ks;
    csample *cs;
    size_t n_cs, cap_cs;
    krow *kern;
    size_t n_kern;
    crow *coll;
    size_t n_coll;
    cpoint *points;
    size_t n_points;
    commsched_costs_roofline roof; /* rates 0: not fitted */
    const commsched_costs *fallback; /* borrowed */
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

commsched_status commsched_costs_create(commsched_costs **out,
                                        commsched_error *err)
{
    *out = cs_calloc(1, sizeof **out);
    if (!*out)
        return oom(err);
    cs_arena_init(&(*out)->names);
    return COMMSCHED_OK;
}

void commsched_costs_destroy(commsched_costs *c)
{
    if (!c)
        return;
    cs_arena_fini(&c->names);
    free(c->ks);
    free(c->cs);
    free(c->kern);
    free(c->coll);
    free(c->points);
    free(c);
}

const char *commsched_costs_key(const char *name, char *buf, size_t size)
{
    const char *n = name;
    size_t d = 0;
    while (n[d] >= '0' && n[d] <= '9')
        d++;
    if (d > 0 && n[d] == ':')
        n += d + 1;
    if (strncmp(n, "void ", 5) == 0)
        n += 5;
    size_t len = strcspn(n, "(");
    if (len > KEY_MAX)
        len = KEY_MAX;
    if (len >= size)
        len = size - 1;
    /* cut on the whole name, where a character cut short still shows */
    len = cs_utf8_cut(n, len);
    memcpy(buf, n, len);
    buf[len] = '\0';
    return buf;
}

static int bad_ns(double ns)
{
    return !(ns >= 0 && ns <= COMMSCHED_MAX_RUNTIME_NS);
}

long commsched_costs_position(const char *name)
{
    long v = 0;
    size_t d = 0;
    while (name[d] >= '0' && name[d] <= '9' && d < 9)
        v = v * 10 + (name[d++] - '0');
    return d > 0 && name[d] == ':' ? v : -1;
}

commsched_status commsched_costs_add_kernel(commsched_costs *c,
                                            const char *name, long position,
                                            double ns, commsched_error *err)
{
    char key[KEY_MAX + 8];
    if (!name || bad_ns(ns))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a kernel sample needs a name and a "
                                   "duration in 0..1e30 ns");
    if (cs_grow((void **)&c->ks, &c->cap_ks, c->n_ks + 1, sizeof *c->ks))
        return oom(err);
    const char *k =
        cs_arena_strdup(&c->names, commsched_costs_key(name, key, sizeof key));
    if (!k)
        return oom(err);
    c->ks[c->n_ks++] = (ksample){k, position < 0 ? -1 : (double)position, ns};
    return COMMSCHED_OK;
}

commsched_status commsched_costs_add_collective(commsched_costs *c,
                                                commsched_coll_op op,
                                                uint32_t ranks, double bytes,
                                                double ns,
                                                commsched_error *err)
{
    if ((unsigned)op >= COMMSCHED_COLL_OP_COUNT || ranks == 0 || bad_ns(ns) ||
        !(bytes >= 0 && bytes <= (double)COMMSCHED_MAX_SIZE))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a collective sample needs an op, ranks "
                                   ">= 1, bytes in 0..2^53 and a duration "
                                   "in 0..1e30 ns");
    if (cs_grow((void **)&c->cs, &c->cap_cs, c->n_cs + 1, sizeof *c->cs))
        return oom(err);
    c->cs[c->n_cs++] = (csample){op, ranks, bytes, ns};
    return COMMSCHED_OK;
}

commsched_status commsched_costs_set_roofline(commsched_costs *c,
                                              const commsched_costs_roofline *r,
                                              commsched_error *err)
{
    if (!(r->flops_per_s >= 0 && r->flops_per_s < INFINITY) ||
        !(r->bytes_per_s >= 0 && r->bytes_per_s < INFINITY))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "roofline rates must be finite and >= 0");
    c->roof = *r;
    return COMMSCHED_OK;
}

int commsched_costs_get_roofline(const commsched_costs *c,
                                 commsched_costs_roofline *out)
{
    memset(out, 0, sizeof *out);
    for (int depth = 0; c && depth < 16; c = c->fallback, depth++)
        if (c->roof.flops_per_s > 0 || c->roof.bytes_per_s > 0) {
            *out = c->roof;
            return 1;
        }
    return 0;
}

/* ---- fitting ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_ksample(const void *a, const void *b)
{
    const ksample *x = a, *y = b;
    int s = strcmp(x->key, y->key);
    if (s)
        return s;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

static int cmp_csample(const void *a, const void *b)
{
    const csample *x = a, *y = b;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    if (x->ranks != y->ranks)
        return x->ranks < y->ranks ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* Median of sorted v[0..n). */
static double median_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median relative deviation of v[0..n) (sorted) from med, using tmp
 * (n entries). 0 for one sample or a median of 0. */
static double spread_of(const double *v, size_t n, double med, double *tmp)
{
    if (n < 2 || med <= 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        tmp[i] = fabs(v[i] - med) / med;
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return median_sorted(tmp, n);
}

/* The least-squares line through a row's points; a negative intercept is
 * clamped to 0 (and the slope refitted through the origin), a negative
 * slope to 0 (the mean): neither is a physical latency or bandwidth. */
static void fit_line(crow *r, const cpoint *p, double *tmp)
{
    r->has_line = r->n >= 2;
    if (!r->has_line)
        return;
    double sx = 0, st = 0, sxx = 0, sxt = 0, n = (double)r->n;
    for (size_t i = 0; i < r->n; i++) {
        sx += p[i].bytes;
        st += p[i].ns;
        sxx += p[i].bytes * p[i].bytes;
        sxt += p[i].bytes * p[i].ns;
    }
    double var = sxx - sx * sx / n;
    double b = var > 0 ? (sxt - sx * st / n) / var : 0;
    double a = (st - b * sx) / n;
    if (a < 0) {
        a = 0;
        b = sxx > 0 ? sxt / sxx : 0;
    }
    if (b < 0) {
        b = 0;
        a = st / n;
    }
    r->latency_ns = a;
    r->bytes_per_ns = b > 0 ? 1 / b : 0;
    for (size_t i = 0; i < r->n; i++) {
        double line = a + b * p[i].bytes;
        tmp[i] = p[i].ns > 0 ? fabs(line - p[i].ns) / p[i].ns : 0;
    }
    qsort(tmp, r->n, sizeof *tmp, cmp_double);
    r->fit_error = median_sorted(tmp, r->n);
}

static commsched_status fit_kernels(commsched_costs *c, commsched_error *err)
{
    size_t n = c->n_ks;
    double *v = cs_malloc_array(n ? n : 1, sizeof *v);
    double *tmp = cs_malloc_array(n ? n : 1, sizeof *tmp);
    krow *rows = cs_malloc_array(2 * n + 1, sizeof *rows);
    if (!v || !tmp || !rows) {
        free(v);
        free(tmp);
        free(rows);
        return oom(err);
    }
    if (n > 1)
        qsort(c->ks, n, sizeof *c->ks, cmp_ksample);
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        /* the key's row: the mean, and the spread about the median */
        size_t end = i;
        double sum = 0;
        while (end < n && strcmp(c->ks[end].key, c->ks[i].key) == 0) {
            v[end - i] = c->ks[end].ns;
            sum += c->ks[end].ns;
            end++;
        }
        size_t cnt = end - i;
        qsort(v, cnt, sizeof *v, cmp_double);
        rows[m++] = (krow){c->ks[i].key, -1, sum / (double)cnt,
                           spread_of(v, cnt, median_sorted(v, cnt), tmp),
                           (uint32_t)cnt};
        /* a row per known position: the median of its steps */
        for (size_t j = i; j < end;) {
            size_t k = j;
            while (k < end && c->ks[k].pos == c->ks[j].pos) {
                v[k - j] = c->ks[k].ns;
                k++;
            }
            if (c->ks[j].pos >= 0) {
                double med = median_sorted(v, k - j);
                rows[m++] = (krow){c->ks[j].key, c->ks[j].pos, med,
                                   spread_of(v, k - j, med, tmp),
                                   (uint32_t)(k - j)};
            }
            j = k;
        }
        i = end;
    }
    free(v);
    free(tmp);
    free(c->kern);
    c->kern = rows;
    c->n_kern = m;
    return COMMSCHED_OK;
}

static commsched_status fit_collectives(commsched_costs *c,
                                        commsched_error *err)
{
    size_t n = c->n_cs;
    double *v = cs_malloc_array(n ? n : 1, sizeof *v);
    double *tmp = cs_malloc_array(n ? n : 1, sizeof *tmp);
    cpoint *pts = cs_malloc_array(n ? n : 1, sizeof *pts);
    crow *rows = cs_malloc_array(n ? n : 1, sizeof *rows);
    if (!v || !tmp || !pts || !rows) {
        free(v);
        free(tmp);
        free(pts);
        free(rows);
        return oom(err);
    }
    if (n > 1)
        qsort(c->cs, n, sizeof *c->cs, cmp_csample);
    size_t np = 0, nr = 0;
    for (size_t i = 0; i < n;) {
        crow *r = &rows[nr++];
        memset(r, 0, sizeof *r);
        r->op = c->cs[i].op;
        r->ranks = c->cs[i].ranks;
        r->first = np;
        double dev_sum = 0;
        size_t j = i;
        while (j < n && c->cs[j].op == r->op && c->cs[j].ranks == r->ranks) {
            size_t k = j;
            while (k < n && c->cs[k].op == r->op &&
                   c->cs[k].ranks == r->ranks &&
                   c->cs[k].bytes == c->cs[j].bytes) {
                v[k - j] = c->cs[k].ns;
                k++;
            }
            double med = median_sorted(v, k - j);
            double sp = spread_of(v, k - j, med, tmp);
            pts[np++] = (cpoint){c->cs[j].bytes, med, sp, (uint32_t)(k - j)};
            dev_sum += sp * (double)(k - j);
            r->samples += (uint32_t)(k - j);
            j = k;
        }
        r->n = np - r->first;
        r->spread = r->samples ? dev_sum / r->samples : 0;
        fit_line(r, &pts[r->first], tmp);
        i = j;
    }
    free(v);
    free(tmp);
    free(c->points);
    free(c->coll);
    c->points = pts;
    c->n_points = np;
    c->coll = rows;
    c->n_coll = nr;
    return COMMSCHED_OK;
}

commsched_status commsched_costs_fit(commsched_costs *c, commsched_error *err)
{
    commsched_status st = fit_kernels(c, err);
    return st != COMMSCHED_OK ? st : fit_collectives(c, err);
}

/* ---- lookups ------------------------------------------------------------ */

static const crow *find_coll(const commsched_costs *c, commsched_coll_op op,
                             uint32_t ranks)
{
    size_t lo = 0, hi = c->n_coll;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const crow *r = &c->coll[mid];
        if (r->op < op || (r->op == op && r->ranks < ranks))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n_coll && c->coll[lo].op == op &&
                   c->coll[lo].ranks == ranks
               ? &c->coll[lo]
               : NULL;
}

static commsched_cost_source own_collective(const commsched_costs *c,
                                            commsched_coll_op op,
                                            uint32_t ranks, double bytes,
                                            double *ns)
{
    const crow *r = c ? find_coll(c, op, ranks) : NULL;
    if (!r || !(bytes >= 0))
        return COMMSCHED_SOURCE_NONE;
    const cpoint *p = &c->points[r->first];
    size_t lo = 0, hi = r->n; /* first point with bytes >= the asked */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].bytes < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo ? lo - 1 : 0; k < r->n && k <= lo; k++)
        if (fabs(p[k].bytes - bytes) <= 0.01 * p[k].bytes ||
            p[k].bytes == bytes) {
            *ns = p[k].ns;
            return COMMSCHED_SOURCE_MEASURED;
        }
    if (lo > 0 && lo < r->n) {
        const cpoint *a = &p[lo - 1], *b = &p[lo];
        double f = (bytes - a->bytes) / (b->bytes - a->bytes);
        *ns = a->ns + f * (b->ns - a->ns);
        return COMMSCHED_SOURCE_FITTED;
    }
    if (r->has_line && bytes <= 2 * p[r->n - 1].bytes) {
        double t = r->latency_ns +
                   (r->bytes_per_ns > 0 ? bytes / r->bytes_per_ns : 0);
        *ns = t > 0 ? t : 0;
        return COMMSCHED_SOURCE_FITTED;
    }
    return COMMSCHED_SOURCE_NONE;
}

static commsched_cost_source own_kernel(const commsched_costs *c,
                                        const char *key, long position,
                                        double *ns)
{
    if (!c || !key)
        return COMMSCHED_SOURCE_NONE;
    size_t lo = 0, hi = c->n_kern;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c->kern[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < c->n_kern && strcmp(c->kern[end].key, key) == 0)
        end++;
    if (lo == end)
        return COMMSCHED_SOURCE_NONE;
    const krow *best = c->kern[lo].pos < 0 ? &c->kern[lo] : NULL;
    if (position >= 0) {
        /* the nearest position: rows lo.. are sorted by it */
        size_t a = lo, b = end;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (c->kern[mid].pos < (double)position)
                a = mid + 1;
            else
                b = mid;
        }
        double d_best = POS_WINDOW + 1;
        for (size_t k = a > lo ? a - 1 : a; k < end && k <= a; k++) {
            double d = fabs(c->kern[k].pos - (double)position);
            if (c->kern[k].pos >= 0 && d < d_best) {
                d_best = d;
                best = &c->kern[k];
            }
        }
    }
    if (!best)
        best = &c->kern[lo];
    *ns = best->ns;
    return COMMSCHED_SOURCE_MEASURED;
}

void commsched_costs_set_fallback(commsched_costs *c,
                                  const commsched_costs *next)
{
    c->fallback = next;
}

/* Each table in the chain in turn; a chain is short (a trace over a
 * profile), and one that loops back is cut at 16. */
commsched_cost_source commsched_costs_price_collective(
    const commsched_costs *c, commsched_coll_op op, uint32_t ranks,
    double bytes, double *ns)
{
    for (int depth = 0; c && depth < 16; c = c->fallback, depth++) {
        commsched_cost_source s = own_collective(c, op, ranks, bytes, ns);
        if (s != COMMSCHED_SOURCE_NONE)
            return s;
    }
    return COMMSCHED_SOURCE_NONE;
}

commsched_cost_source commsched_costs_price_kernel(const commsched_costs *c,
                                                   const char *key,
                                                   long position, double *ns)
{
    for (int depth = 0; c && depth < 16; c = c->fallback, depth++) {
        commsched_cost_source s = own_kernel(c, key, position, ns);
        if (s != COMMSCHED_SOURCE_NONE)
            return s;
    }
    return COMMSCHED_SOURCE_NONE;
}

size_t commsched_costs_collective_count(const commsched_costs *c)
{
    return c ? c->n_coll : 0;
}

commsched_status commsched_costs_collective_at(
    const commsched_costs *c, size_t i, commsched_costs_collective_row *out,
    commsched_error *err)
{
    if (!c || i >= c->n_coll)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "collective row %zu past the end", i);
    const crow *r = &c->coll[i];
    const cpoint *p = &c->points[r->first];
    *out = (commsched_costs_collective_row){
        r->op,          r->ranks,          (uint32_t)r->n,
        r->samples,     p[0].bytes,        p[r->n - 1].bytes,
        r->has_line,    r->latency_ns,
        r->bytes_per_ns,
        r->spread,      r->fit_error};
    return COMMSCHED_OK;
}

size_t commsched_costs_kernel_count(const commsched_costs *c)
{
    return c ? c->n_kern : 0;
}

size_t commsched_costs_kernel_samples(const commsched_costs *c)
{
    size_t n = 0;
    for (size_t i = 0; c && i < c->n_kern; i++)
        if (c->kern[i].pos < 0) /* a key's row counts all its samples */
            n += c->kern[i].samples;
    return n;
}

/* ---- the profile file's "measured" member ------------------------------- */

static commsched_status schema(commsched_error *err, const char *path,
                               const char *what)
{
    return commsched_error_set(err, COMMSCHED_ESCHEMA, path, "%s", what);
}

/* obj[key] as a number >= 0 (and <= max), into *out; absent is an error
 * unless dflt is not NAN. */
static commsched_status member(const json_t *obj, const char *path,
                               const char *key, double max, double dflt,
                               double *out, commsched_error *err)
{
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    cs_json_join(p, sizeof p, path, key);
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (isnan(dflt))
            return schema(err, p, "missing required field");
        *out = dflt;
        return COMMSCHED_OK;
    }
    commsched_status st = cs_json_get_number(v, p, out, err);
    if (st == COMMSCHED_OK && !(*out >= 0 && *out <= max)) {
        char what[64];
        snprintf(what, sizeof what, "expected a number in 0..%g", max);
        return schema(err, p, what);
    }
    return st;
}

/* arr[i], a row of a table at `base` (path[size] gets "base[i]"): an
 * object with only the given keys. */
static commsched_status row(const json_t *arr, const char *base, size_t i,
                            const char *const *keys, json_t **e, char *path,
                            size_t size, commsched_error *err)
{
    *e = json_array_get(arr, i);
    snprintf(path, size, "%s[%zu]", base, i);
    if (!json_is_object(*e))
        return schema(err, path, "expected an object");
    return cs_json_check_keys(*e, path, keys, err);
}

static commsched_status load_kernels(commsched_costs *c, const json_t *arr,
                                     commsched_error *err)
{
    static const char *const keys[] = {"name", "position", "ns", "samples",
                                       "spread", NULL};
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_array(arr))
        return schema(err, "measured.kernels", "expected an array");
    size_t n = json_array_size(arr);
    c->kern = cs_malloc_array(n ? n : 1, sizeof *c->kern);
    if (!c->kern)
        return oom(err);
    for (size_t i = 0; i < n; i++) {
        json_t *e;
        commsched_status st = row(arr, "measured.kernels", i, keys, &e, path,
                                  sizeof path, err);
        if (st != COMMSCHED_OK)
            return st;
        json_t *nm = json_object_get(e, "name");
        char key[KEY_MAX + 8], p[COMMSCHED_ERROR_PATH_LENGTH];
        if (!json_is_string(nm) ||
            strcmp(commsched_costs_key(json_string_value(nm), key,
                                       sizeof key),
                   json_string_value(nm)) != 0)
            return schema(err, cs_json_join(p, sizeof p, path, "name"),
                          "expected a kernel key (a string as "
                          "commsched_costs_key makes one: at most 80 "
                          "bytes, no argument list)");
        krow *r = &c->kern[i];
        double samples = 1;
        if ((st = member(e, path, "position", 1e9, -1, &r->pos, err)) ||
            (st = member(e, path, "ns", COMMSCHED_MAX_RUNTIME_NS, NAN, &r->ns,
                         err)) ||
            (st = member(e, path, "samples", 4294967295.0, 1, &samples,
                         err)) ||
            (st = member(e, path, "spread", 1e9, 0, &r->spread, err)))
            return st;
        r->samples = (uint32_t)samples;
        if (!(r->key = cs_arena_strdup(&c->names, key)))
            return oom(err);
        c->n_kern = i + 1;
        if (r->pos != floor(r->pos))
            return schema(err, cs_json_join(p, sizeof p, path, "position"),
                          "expected an integer");
        if (i > 0 && (strcmp(c->kern[i - 1].key, key) > 0 ||
                      (strcmp(c->kern[i - 1].key, key) == 0 &&
                       !(c->kern[i - 1].pos < r->pos))))
            return schema(err, path,
                          "rows must be sorted by name, then position, "
                          "each (name, position) once (as calibrate writes "
                          "them)");
    }
    return COMMSCHED_OK;
}

static commsched_status load_points(commsched_costs *c, crow *r,
                                    const json_t *arr, const char *path,
                                    commsched_error *err)
{
    static const char *const keys[] = {"bytes", "ns", "samples", "spread",
                                       NULL};
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return schema(err, path, "expected a non-empty array of points");
    size_t n = json_array_size(arr);
    cpoint *np = cs_realloc_array(c->points, c->n_points + n, sizeof *np);
    if (!np)
        return oom(err);
    c->points = np;
    r->first = c->n_points;
    for (size_t i = 0; i < n; i++) {
        json_t *e;
        cpoint *pt = &c->points[c->n_points];
        double samples = 1;
        commsched_status st = row(arr, path, i, keys, &e, p, sizeof p, err);
        if (st || (st = member(e, p, "bytes", (double)COMMSCHED_MAX_SIZE, NAN,
                               &pt->bytes, err)) ||
            (st = member(e, p, "ns", COMMSCHED_MAX_RUNTIME_NS, NAN, &pt->ns,
                         err)) ||
            (st = member(e, p, "samples", 4294967295.0, 1, &samples, err)) ||
            (st = member(e, p, "spread", 1e9, 0, &pt->spread, err)))
            return st;
        pt->samples = (uint32_t)samples;
        if (i > 0 && !(c->points[c->n_points - 1].bytes < pt->bytes))
            return schema(err, p, "points must be sorted by bytes, each "
                                  "size once");
        c->n_points++;
        r->samples += pt->samples;
    }
    r->n = n;
    return COMMSCHED_OK;
}

static commsched_status load_collectives(commsched_costs *c,
                                         const json_t *arr,
                                         commsched_error *err)
{
    static const char *const keys[] = {"op",          "ranks", "latency_ns",
                                       "bytes_per_ns", "spread", "fit_error",
                                       "points",      NULL};
    char path[COMMSCHED_ERROR_PATH_LENGTH], p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_array(arr))
        return schema(err, "measured.collectives", "expected an array");
    size_t n = json_array_size(arr);
    c->coll = cs_calloc(n ? n : 1, sizeof *c->coll);
    if (!c->coll)
        return oom(err);
    for (size_t i = 0; i < n; i++) {
        json_t *e;
        commsched_status st = row(arr, "measured.collectives", i, keys, &e,
                                  path, sizeof path, err);
        if (st != COMMSCHED_OK)
            return st;
        crow *r = &c->coll[i];
        const char *op = json_string_value(json_object_get(e, "op"));
        int k = 0;
        while (k < COMMSCHED_COLL_OP_COUNT &&
               (!op || strcmp(commsched_coll_op_str((commsched_coll_op)k),
                              op) != 0))
            k++;
        if (k == COMMSCHED_COLL_OP_COUNT)
            return schema(err, cs_json_join(p, sizeof p, path, "op"),
                          "expected a collective op (all_reduce, "
                          "all_gather, ...)");
        r->op = (commsched_coll_op)k;
        json_t *rk = json_object_get(e, "ranks");
        if (!json_is_integer(rk) || json_integer_value(rk) < 1 ||
            json_integer_value(rk) > COMMSCHED_MAX_GROUP_SIZE)
            return schema(err, cs_json_join(p, sizeof p, path, "ranks"),
                          "expected a group size (an integer in 1..2^24)");
        r->ranks = (uint32_t)json_integer_value(rk);
        if ((st = load_points(c, r, json_object_get(e, "points"),
                              cs_json_join(p, sizeof p, path, "points"),
                              err)) ||
            (st = member(e, path, "spread", 1e9, 0, &r->spread, err)) ||
            (st = member(e, path, "fit_error", 1e9, 0, &r->fit_error, err)))
            return st;
        json_t *lat = json_object_get(e, "latency_ns");
        r->has_line = lat != NULL;
        if (r->has_line &&
            ((st = member(e, path, "latency_ns", COMMSCHED_MAX_RUNTIME_NS,
                          NAN, &r->latency_ns, err)) ||
             (st = member(e, path, "bytes_per_ns", 1e30, NAN,
                          &r->bytes_per_ns, err))))
            return st;
        c->n_coll = i + 1;
        if (i > 0 && !(c->coll[i - 1].op < r->op ||
                       (c->coll[i - 1].op == r->op &&
                        c->coll[i - 1].ranks < r->ranks)))
            return schema(err, path, "rows must be sorted by op, then "
                                     "ranks, each (op, ranks) once");
    }
    return COMMSCHED_OK;
}

static commsched_status load_roofline(commsched_costs *c, const json_t *v,
                                      commsched_error *err)
{
    static const char *const keys[] = {"peak_flops", "mem_bw", "flop_kernels",
                                       "byte_kernels", NULL};
    const char *path = "measured.roofline";
    if (!json_is_object(v))
        return schema(err, path, "expected an object");
    double fk = 0, bk = 0;
    commsched_status st = cs_json_check_keys(v, path, keys, err);
    if (st || (st = member(v, path, "peak_flops", 1e30, 0,
                           &c->roof.flops_per_s, err)) ||
        (st = member(v, path, "mem_bw", 1e30, 0, &c->roof.bytes_per_s,
                     err)) ||
        (st = member(v, path, "flop_kernels", 4294967295.0, 0, &fk, err)) ||
        (st = member(v, path, "byte_kernels", 4294967295.0, 0, &bk, err)))
        return st;
    c->roof.flop_kernels = (uint32_t)fk;
    c->roof.byte_kernels = (uint32_t)bk;
    return COMMSCHED_OK;
}

static commsched_status from_measured(commsched_costs *c, const json_t *m,
                                      commsched_error *err)
{
    static const char *const keys[] = {"provenance", "roofline", "kernels",
                                       "collectives", NULL};
    if (!json_is_object(m))
        return schema(err, "measured", "expected an object");
    commsched_status st = cs_json_check_keys(m, "measured", keys, err);
    json_t *v;
    if (st == COMMSCHED_OK && (v = json_object_get(m, "kernels")))
        st = load_kernels(c, v, err);
    if (st == COMMSCHED_OK && (v = json_object_get(m, "collectives")))
        st = load_collectives(c, v, err);
    if (st == COMMSCHED_OK && (v = json_object_get(m, "roofline")))
        st = load_roofline(c, v, err);
    return st;
}

commsched_status commsched_costs_load_file(const char *name_or_path,
                                           commsched_costs **out,
                                           commsched_error *err)
{
    *out = NULL;
    if (commsched_device_builtin(name_or_path))
        return COMMSCHED_OK;
    json_t *root;
    commsched_status st = cs_json_load_file(name_or_path, &root, err);
    if (st != COMMSCHED_OK)
        return st;
    json_t *m = json_is_object(root) ? json_object_get(root, "measured")
                                     : NULL;
    if (m) {
        commsched_costs *c = NULL;
        if ((st = commsched_costs_create(&c, err)) == COMMSCHED_OK &&
            (st = from_measured(c, m, err)) != COMMSCHED_OK) {
            commsched_costs_destroy(c);
            c = NULL;
        }
        *out = c;
    }
    json_decref(root);
    return st;
}

/* ---- writing ------------------------------------------------------------ */

static void write_device(cs_jw *w, const commsched_device *d)
{
    static const char *const links[] = {"nvlink", "pci", "net"};
    static const char *const algos[] = {"tree", "ring"};
    cs_jw_key_string(w, "format", "commsched-device");
    cs_jw_key_int(w, "version", 1);
    cs_jw_key_string(w, "name", d->name);
    cs_jw_key(w, "peak_flops");
    cs_jw_number(w, d->peak_flops, 0);
    cs_jw_key(w, "mem_bw");
    cs_jw_number(w, d->mem_bw, 0);
    cs_jw_key_int(w, "gpus_per_host", d->gpus_per_host);
    cs_jw_key_string(w, "intra_link", links[d->intra_link]);
    cs_jw_key(w, "ll_max_bw");
    cs_jw_array(w);
    cs_jw_layout(w, " ", ": ");
    for (int i = 0; i < 3; i++)
        cs_jw_number(w, d->ll_max_bw[i], 0);
    cs_jw_end(w);
    cs_jw_key(w, "inductor");
    cs_jw_object(w);
    cs_jw_layout(w, " ", ": ");
    cs_jw_key(w, "intra_node_bw");
    cs_jw_number(w, d->inductor_intra_bw, 0);
    cs_jw_key(w, "inter_node_bw");
    cs_jw_number(w, d->inductor_inter_bw, 0);
    cs_jw_end(w);
    cs_jw_key(w, "nccl");
    cs_jw_object(w);
    cs_jw_key_int(w, "channels", d->channels);
    cs_jw_key(w, "bus_bw_intra");
    cs_jw_number(w, d->bus_bw_intra, 0);
    cs_jw_key(w, "bus_bw_inter");
    cs_jw_number(w, d->bus_bw_inter, 0);
    cs_jw_key(w, "ll128_max_bw_per_channel");
    cs_jw_number(w, d->ll128_max_bw_per_channel, 0);
    cs_jw_key(w, "tree_max_bw_per_channel");
    cs_jw_number(w, d->tree_max_bw_per_channel, 0);
    cs_jw_key(w, "net_overhead");
    cs_jw_number(w, d->net_overhead, 0);
    cs_jw_key(w, "base_latency");
    cs_jw_object(w);
    cs_jw_layout(w, " ", ": ");
    for (int a = 0; a < COMMSCHED_ALGO_COUNT; a++) {
        cs_jw_key(w, algos[a]);
        cs_jw_array(w);
        for (int p = 0; p < COMMSCHED_PROTO_COUNT; p++)
            cs_jw_number(w, d->base_lat[a][p], 0);
        cs_jw_end(w);
    }
    cs_jw_end(w);
    cs_jw_key(w, "hw_latency");
    cs_jw_object(w);
    for (int l = 0; l < COMMSCHED_LINK_COUNT; l++) {
        cs_jw_key(w, links[l]);
        cs_jw_object(w);
        cs_jw_layout(w, " ", ": ");
        for (int a = 0; a < COMMSCHED_ALGO_COUNT; a++) {
            cs_jw_key(w, algos[a]);
            cs_jw_array(w);
            for (int p = 0; p < COMMSCHED_PROTO_COUNT; p++)
                cs_jw_number(w, d->hw_lat[l][a][p], 0);
            cs_jw_end(w);
        }
        cs_jw_end(w);
    }
    cs_jw_end(w);
    cs_jw_end(w);
}

/* The figures every row ends with: its median (or mean), its samples and
 * their spread; then the row is closed. */
static void end_row(cs_jw *w, double ns, uint32_t samples, double spread)
{
    cs_jw_key(w, "ns");
    cs_jw_number(w, ns, 0);
    cs_jw_key_int(w, "samples", samples);
    cs_jw_key(w, "spread");
    cs_jw_number(w, spread, 0);
    cs_jw_end(w);
}

static void write_measured(cs_jw *w, const commsched_costs *c)
{
    cs_jw_key(w, "measured");
    cs_jw_object(w);
    if (c->roof.flops_per_s > 0 || c->roof.bytes_per_s > 0) {
        cs_jw_key(w, "roofline");
        cs_jw_object(w);
        cs_jw_layout(w, " ", ": ");
        cs_jw_key(w, "peak_flops");
        cs_jw_number(w, c->roof.flops_per_s, 0);
        cs_jw_key(w, "mem_bw");
        cs_jw_number(w, c->roof.bytes_per_s, 0);
        cs_jw_key_int(w, "flop_kernels", c->roof.flop_kernels);
        cs_jw_key_int(w, "byte_kernels", c->roof.byte_kernels);
        cs_jw_end(w);
    }
    cs_jw_key(w, "collectives");
    cs_jw_array(w);
    for (size_t i = 0; i < c->n_coll; i++) {
        const crow *r = &c->coll[i];
        cs_jw_object(w);
        cs_jw_key_string(w, "op", commsched_coll_op_str(r->op));
        cs_jw_key_int(w, "ranks", r->ranks);
        if (r->has_line) {
            cs_jw_key(w, "latency_ns");
            cs_jw_number(w, r->latency_ns, 0);
            cs_jw_key(w, "bytes_per_ns");
            cs_jw_number(w, r->bytes_per_ns, 0);
            cs_jw_key(w, "fit_error");
            cs_jw_number(w, r->fit_error, 0);
        }
        cs_jw_key(w, "spread");
        cs_jw_number(w, r->spread, 0);
        cs_jw_key(w, "points");
        cs_jw_array(w);
        for (size_t k = 0; k < r->n; k++) {
            const cpoint *p = &c->points[r->first + k];
            cs_jw_object(w);
            cs_jw_layout(w, " ", ": ");
            cs_jw_key(w, "bytes");
            cs_jw_number(w, p->bytes, 0);
            end_row(w, p->ns, p->samples, p->spread);
        }
        cs_jw_end(w);
        cs_jw_end(w);
    }
    cs_jw_end(w);
    cs_jw_key(w, "kernels");
    cs_jw_array(w);
    for (size_t i = 0; i < c->n_kern; i++) {
        const krow *r = &c->kern[i];
        cs_jw_object(w);
        cs_jw_layout(w, " ", ": ");
        cs_jw_key_string(w, "name", r->key);
        if (r->pos >= 0) {
            cs_jw_key(w, "position");
            cs_jw_number(w, r->pos, 0);
        }
        end_row(w, r->ns, r->samples, r->spread);
    }
    cs_jw_end(w);
    cs_jw_end(w);
}

commsched_status commsched_profile_save(FILE *out, const commsched_device *d,
                                        const commsched_costs *c,
                                        commsched_error *err)
{
    cs_jw *w = cs_calloc(1, sizeof *w);
    if (!w)
        return oom(err);
    cs_jw_init(w, out);
    cs_jw_object(w);
    cs_jw_indent(w, 2);
    write_device(w, d);
    if (c)
        write_measured(w, c);
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    commsched_status st = cs_jw_finish(w);
    free(w);
    if (st == COMMSCHED_EIO)
        return commsched_error_set(err, st, NULL, "cannot write: %s",
                                   strerror(errno));
    return st == COMMSCHED_OK ? st
                              : commsched_error_set(err, st, NULL,
                                                    "cannot write the "
                                                    "profile");
}
