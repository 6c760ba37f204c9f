/* commsched — the one driver loop of a run (driver.h): the order of a run
 * and its records, the same for every adaptor. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "coord.h"

double cs_driver_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

commsched_status cs_driver_join(int *argc, char ***argv, size_t size,
                                void **out, commsched_error *err)
{
    *out = NULL;
    cs_runtime_base *b = calloc(1, size);
    if (!b)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    commsched_status st = cs_boot_init(argc, argv, &b->boot, err);
    if (st != COMMSCHED_OK) {
        free(b);
        return st;
    }
    b->rank = cs_boot_rank(b->boot);
    b->size = cs_boot_size(b->boot);
    *out = b;
    return COMMSCHED_OK;
}

static const cs_runtime_base *base_of(const commsched_runtime *rt)
{
    return (const cs_runtime_base *)(const void *)rt;
}

int cs_driver_rank(const commsched_runtime *rt) { return base_of(rt)->rank; }
int cs_driver_size(const commsched_runtime *rt) { return base_of(rt)->size; }

int cs_driver_first_failed(commsched_runtime *rt, int failed)
{
    return cs_boot_first_failed(base_of(rt)->boot, failed);
}

void cs_driver_fini(commsched_runtime *rt)
{
    if (!rt)
        return;
    cs_boot_fini(base_of(rt)->boot);
    free(rt);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double cs_driver_median(double *v, uint32_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The library prints nothing: the caller's callback shows the passes. */
static void report_progress(const cs_driver *d, uint32_t done, uint32_t total)
{
    if (d->o->progress && cs_boot_rank(d->boot) == 0)
        d->o->progress(d->o->progress_arg, done, total);
}

/* Every array the run records; [pass][local][node] for the measured
 * passes, [local][node] scratch for the unmeasured ones. */
typedef struct records {
    double *t0, *t1, *tp, *step;
    double *c0, *c1, *cp, *cs;
    double *samples, *solo, *waits;
    int64_t *peak, *pool_peak;
} records;

static void records_fini(records *r)
{
    free(r->t0);
    free(r->t1);
    free(r->tp);
    free(r->step);
    free(r->c0);
    free(r->c1);
    free(r->cp);
    free(r->cs);
    free(r->samples);
    free(r->solo);
    free(r->waits);
    free(r->peak);
    free(r->pool_peak);
}

static commsched_status records_init(records *r, const cs_driver *d,
                                     commsched_error *err)
{
    const commsched_run_options *o = d->o;
    size_t n = d->plan->n, L = d->local;
    size_t per = (size_t)o->iters * L * n + 1, ln = L * n + 1;
    r->t0 = malloc(per * sizeof *r->t0);
    r->t1 = malloc(per * sizeof *r->t1);
    r->tp = malloc(per * sizeof *r->tp);
    r->step = malloc(((size_t)o->iters * L + 1) * sizeof *r->step);
    r->c0 = malloc(ln * sizeof *r->c0);
    r->c1 = malloc(ln * sizeof *r->c1);
    r->cp = malloc(ln * sizeof *r->cp);
    r->cs = malloc((L + 1) * sizeof *r->cs);
    r->peak = calloc(L + 1, sizeof *r->peak);
    r->pool_peak = calloc(L + 1, sizeof *r->pool_peak);
    if (o->calibrate) {
        r->solo = calloc(n + 1, sizeof *r->solo);
        r->samples = malloc(((size_t)o->calibrate * L * n + 1) *
                            sizeof *r->samples);
        r->waits = malloc(((size_t)o->calibrate * L * n + 1) *
                          sizeof *r->waits);
    }
    if (!r->t0 || !r->t1 || !r->tp || !r->step || !r->c0 || !r->c1 ||
        !r->cp || !r->cs || !r->peak || !r->pool_peak ||
        (o->calibrate && (!r->solo || !r->samples || !r->waits)))
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    return COMMSCHED_OK;
}

commsched_status cs_driver_check_options(const commsched_run_options *o,
                                         commsched_error *err)
{
    if (o->iters < 1 || !(o->size_scale > 0) || !(o->time_scale >= 0))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "bad run options (iters >= 1, size scale "
                                   "> 0, time scale >= 0)");
    return COMMSCHED_OK;
}

commsched_status cs_driver_run(const cs_driver *d, commsched_status setup,
                               double wall0, commsched_measurement **out,
                               commsched_error *err)
{
    const commsched_run_options *o = d->o;
    records r = {0};
    commsched_status st = setup;
    *out = NULL;
    if (st == COMMSCHED_OK)
        st = records_init(&r, d, err);
    if ((st = cs_coord_agree(d->boot, st, err)) != COMMSCHED_OK)
        goto done;
    if (o->preflight &&
        (st = cs_coord_preflight(d->boot, d->plan, d->unit, err)) !=
            COMMSCHED_OK)
        goto done;
    st = d->ops->connect(d->ctx, err);
    if ((st = cs_coord_agree(d->boot, st, err)) != COMMSCHED_OK)
        goto done;
    if (d->ops->ready)
        d->ops->ready(d->ctx);

    uint32_t n = d->plan->n, L = d->local, C = o->calibrate;
    size_t ln = (size_t)L * n;
    uint32_t total = C + o->warmup + o->iters, passes = 0;
    /* Warm-up comes first: the first pass pays what is paid once (NCCL's
     * connections and kernel loading, cuBLAS's first GEMM of each shape,
     * MPI's shared-memory set-up, first-touch page faults), which would
     * otherwise land in the calibrated solo times (on an H200 a single
     * calibration pass predicted 6.55 ms for a 1.82 ms step). */
    for (uint32_t w = 0; w < o->warmup; w++) {
        d->ops->pass(d->ctx, CS_PASS_WARMUP, "warm-up iteration", w, r.c0,
                     r.c1, r.cp, r.cs);
        report_progress(d, ++passes, total);
    }
    for (uint32_t c = 0; c < C; c++) {
        d->ops->pass(d->ctx, CS_PASS_CALIBRATE, "calibration pass", c, r.c0,
                     r.c1, r.cp, r.cs);
        /* A calibrated collective starts (t0) when its rank reaches it
         * and posts (tp) once the whole group has: its solo time runs from
         * the post, the wait before it is the skew and wake-up that the
         * gather works out across ranks. Other nodes post at t0. */
        for (size_t i = 0; i < ln; i++) {
            r.samples[i * C + c] = r.c1[i] - r.cp[i];
            r.waits[i * C + c] = fmax(0, r.cp[i] - r.c0[i]);
        }
        report_progress(d, ++passes, total);
    }
    /* Per node: the median of its passes on each local rank, summed over
     * them (the gather divides by the rank count). */
    for (uint32_t v = 0; C && v < n; v++)
        for (uint32_t l = 0; l < L; l++)
            r.solo[v] += cs_driver_median(r.samples + ((size_t)l * n + v) * C, C);
    /* The measured peaks are the measured iterations' own. */
    d->ops->measure_begin(d->ctx);
    for (uint32_t it = 0; it < o->iters; it++) {
        d->ops->pass(d->ctx, CS_PASS_MEASURE, "iteration", it,
                     r.t0 + it * ln, r.t1 + it * ln, r.tp + it * ln,
                     r.step + (size_t)it * L);
        report_progress(d, ++passes, total);
    }
    d->ops->measure_end(d->ctx, r.peak,
                        d->has_pool_peak ? r.pool_peak : NULL);
    cs_coord_records rec = {L,
                            r.t0,
                            r.t1,
                            r.tp,
                            r.step,
                            C ? r.solo : NULL,
                            C ? r.waits : NULL,
                            C,
                            r.peak,
                            d->has_pool_peak ? r.pool_peak : NULL,
                            d->tally->checked,
                            d->tally->mismatches,
                            d->tally->first_mismatch};
    st = cs_coord_gather(d->boot, d->plan, o, &rec, d->runtime, d->library,
                         out, err);
    if (*out)
        (*out)->wall_s = (cs_driver_now_ns() - wall0) / 1e9;
done:
    records_fini(&r);
    return st;
}
