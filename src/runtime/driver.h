/* commsched — the one driver loop of a run, shared by the runtime adaptors
 * (libuv-style: one loop, one small table of what a platform does
 * differently). The driver owns the order of a run and its records:
 * agree on setup, preflight, connect, agree again, calibrate (per node the
 * median of its solo passes), warm up, measure, gather on process 0. An
 * adaptor only says how to connect, run one pass and report its peaks.
 * Internal; no communication library here. */
#ifndef COMMSCHED_RUNTIME_DRIVER_H
#define COMMSCHED_RUNTIME_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "boot.h"
#include "commsched/runtime.h"
#include "plan.h"

typedef enum cs_pass_kind {
    CS_PASS_CALIBRATE, /* every node alone, timed for the prediction; a
                          collective starts (t0) where its rank reaches it
                          and posts (tp) once its group is there too */
    CS_PASS_WARMUP,    /* unmeasured */
    CS_PASS_MEASURE    /* recorded */
} cs_pass_kind;

/* The --check tally of a run, kept by the adaptor. */
typedef struct cs_check_tally {
    uint64_t checked, mismatches;
    char first_mismatch[256]; /* "" when none */
} cs_check_tally;

typedef struct cs_driver_ops {
    /* Setup that needs every process past the preflight (communicators,
     * the collectives' private buffers). Its failure is agreed on. */
    commsched_status (*connect)(void *ctx, commsched_error *err);
    /* After the agreement that follows connect, before the first pass
     * (may be NULL). */
    void (*ready)(void *ctx);
    /* One pass over the schedule on every local rank: per-node times in ns
     * from the pass's start into t0/t1/tp[local * n + node], the step into
     * step[local]. `phase` ("calibration pass", "warm-up iteration",
     * "iteration") and `iter` name it in messages. A failure in the middle
     * of a pass ends the job (it cannot be agreed on). */
    void (*pass)(void *ctx, cs_pass_kind kind, const char *phase,
                 uint32_t iter, double *t0, double *t1, double *tp,
                 double *step);
    /* Before the first measured pass: the peaks restart. */
    void (*measure_begin)(void *ctx);
    /* After the last: per local rank the peak of live bytes and, when the
     * adaptor has a pool, its high-water mark (pool_peak is NULL when the
     * driver was told there is none). */
    void (*measure_end)(void *ctx, int64_t *peak, int64_t *pool_peak);
} cs_driver_ops;

typedef struct cs_driver {
    const cs_driver_ops *ops;
    void *ctx;
    cs_boot *boot;
    const cs_plan *plan;           /* built by the adaptor's setup */
    const commsched_run_options *o;
    uint32_t local;                /* ranks this process drives (>= 1 once
                                      setup succeeded) */
    int has_pool_peak;
    const char *unit;              /* "rank" or "process", in messages */
    const char *runtime, *library; /* for the measurement */
    const cs_check_tally *tally;   /* the adaptor's, read at the end */
} cs_driver;

/* The run options every adaptor needs (iters >= 1, size scale > 0, time
 * scale >= 0); EINVAL otherwise. Adaptors call it before their setup and
 * add the checks of their own. */
commsched_status cs_driver_check_options(const commsched_run_options *o,
                                         commsched_error *err);

/* Runs the whole run: `setup` is the adaptor's local setup status (its
 * message in err), agreed on first, so a process that failed setup does
 * not leave the others blocked. On success *out is the measurement on
 * process 0 (caller destroys; NULL elsewhere); wall0 (ns, CLOCK_MONOTONIC)
 * is when the run began. Failures: an agreed status with the lowest
 * failing process's message; ENOMEM when the records do not fit. */
commsched_status cs_driver_run(const cs_driver *d, commsched_status setup,
                               double wall0, commsched_measurement **out,
                               commsched_error *err);

/* What every adaptor's struct commsched_runtime begins with, so joining
 * and leaving the job and the rank queries of commsched_runtime_ops are
 * written once (a struct's address is its first member's). */
typedef struct cs_runtime_base {
    cs_boot *boot;
    int rank, size; /* this process and the process count */
} cs_runtime_base;

/* Allocates an adaptor's runtime of `size` bytes (zeroed; size >= sizeof
 * (cs_runtime_base)) and joins the job. On success *out is it (free with
 * cs_driver_fini); on failure *out is NULL and err says why. */
commsched_status cs_driver_join(int *argc, char ***argv, size_t size,
                                void **out, commsched_error *err);
/* commsched_runtime_ops' rank, size, first_failed and fini for every
 * adaptor whose runtime begins with a cs_runtime_base. */
int cs_driver_rank(const commsched_runtime *rt);
int cs_driver_size(const commsched_runtime *rt);
int cs_driver_first_failed(commsched_runtime *rt, int failed);
void cs_driver_fini(commsched_runtime *rt);

/* The median of v[0..n) (n >= 1), sorting v in place. */
double cs_driver_median(double *v, uint32_t n);

/* CLOCK_MONOTONIC in ns. */
double cs_driver_now_ns(void);

#endif /* COMMSCHED_RUNTIME_DRIVER_H */
