/* commsched — agreement, preflight and gathering over boot.h (coord.h). */
#include "coord.h"

#include "driver.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

commsched_status cs_coord_agree(cs_boot *b, commsched_status st,
                                commsched_error *err)
{
    int lowest = cs_boot_first_failed(b, st != COMMSCHED_OK);
    if (lowest < 0)
        return COMMSCHED_OK;
    long long code = (long long)st;
    cs_boot_bcast(b, &code, sizeof code, lowest);
    if (lowest != cs_boot_rank(b) && err) {
        commsched_error_clear(err);
        err->status = (commsched_status)code;
    }
    return (commsched_status)code;
}

commsched_status cs_coord_preflight(cs_boot *b, const cs_plan *p,
                                    const char *unit, commsched_error *err)
{
    int me = cs_boot_rank(b), procs = cs_boot_size(b);
    unsigned long long mine[2] = {p->graph_hash, p->n_coll};
    unsigned long long len0 = p->seq_len;
    cs_boot_bcast(b, &len0, sizeof len0, 0);
    /* Too long for one broadcast: the hash comparison below still catches
     * any difference, only less precisely. */
    int too_long = len0 > (unsigned long long)INT_MAX;
    if (too_long)
        len0 = 0;
    unsigned long long *all = malloc((size_t)procs * sizeof mine);
    char *theirs = malloc((size_t)len0 + 1);
    commsched_status st =
        all && theirs ? COMMSCHED_OK
                      : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                            "out of memory");
    if ((st = cs_coord_agree(b, st, err)) != COMMSCHED_OK)
        goto done;
    cs_boot_allgather(b, mine, sizeof mine, all);
    if (me == 0 && len0 > 0)
        memcpy(theirs, p->seq, (size_t)len0);
    cs_boot_bcast(b, theirs, (size_t)len0, 0);
    theirs[len0] = '\0';
    char a[200], c[200];
    long diff = too_long ? -1
                         : cs_plan_seq_diff(p->seq, p->seq_len, theirs,
                                            (size_t)len0, a, c, sizeof a);
    /* The lowest process whose sequence differs reports it; the agreement
     * below hands its status to the others. */
    long long first = cs_boot_min(b, diff >= 0 ? me : procs);
    if (first == me)
        st = commsched_error_set(
            err, COMMSCHED_EINVAL, NULL,
            "the %ss would issue collectives in different orders: "
            "collective #%ld is %s on %s %d but %s on %s 0; running would "
            "deadlock (the rank-divergent order of Inductor #189454 and "
            "torchrec #4149)",
            unit, diff + 1, a, unit, me, c, unit);
    for (int r = 1; first == procs && st == COMMSCHED_OK && r < procs; r++)
        if (me == 0 && (all[2 * r] != all[0] || all[2 * r + 1] != all[1]))
            st = commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "the graph on %s %d differs from %s 0's (hash %016llx vs "
                "%016llx, %llu vs %llu collectives); the collective "
                "sequences agree, but the %ss would not run the same step "
                "(--no-preflight runs anyway)",
                unit, r, unit, all[2 * r], all[0], all[2 * r + 1], all[1],
                unit);
    st = cs_coord_agree(b, st, err); /* the reporter keeps its message */
done:
    free(all);
    free(theirs);
    return st;
}

void cs_coord_skew(const double *waits, uint32_t R, uint32_t n, uint32_t C,
                   double *skew, double *wake, double *scratch)
{
    double *least = scratch, *late = scratch + C;
    for (uint32_t v = 0; v < n; v++) {
        for (uint32_t c = 0; c < C; c++) {
            double lo = INFINITY, sum = 0;
            for (uint32_t r = 0; r < R; r++) {
                double w = waits[((size_t)r * n + v) * C + c];
                sum += w;
                lo = fmin(lo, w);
            }
            least[c] = lo;
            late[c] = sum / R - lo;
        }
        wake[v] = cs_driver_median(least, C);
        skew[v] = cs_driver_median(late, C);
    }
}

/* Per process, one block of doubles: t0, t1, tp, steps, peaks, pool
 * peaks, --check counts, solo times, calibration waits; the first mismatch
 * travels apart. */
commsched_status cs_coord_gather(cs_boot *b, const cs_plan *p,
                                 const commsched_run_options *o,
                                 const cs_coord_records *rec,
                                 const char *runtime, const char *library,
                                 commsched_measurement **out,
                                 commsched_error *err)
{
    *out = NULL;
    int me = cs_boot_rank(b);
    uint32_t n = p->n, I = o->iters, G = rec->local,
             P = (uint32_t)cs_boot_size(b), R = G * P;
    size_t per = (size_t)I * G * n, tail = (size_t)I * G + 2u * G + 2u;
    uint32_t C = rec->arrive_wait ? rec->passes : 0;
    size_t waits = (size_t)G * n * C;
    size_t block = 3 * per + tail + (rec->solo ? n : 0) + waits;
    enum { MIS = sizeof ((commsched_measurement *)0)->first_mismatch };
    commsched_measurement *m = NULL;
    double *mine = malloc(block * sizeof *mine), *all = NULL, *wr = NULL;
    char *mis = NULL;
    int ok = mine != NULL;
    if (me == 0) {
        m = calloc(1, sizeof *m);
        all = malloc(block * P * sizeof *all);
        mis = calloc(P, MIS);
        ok = ok && m && all && mis;
        if (ok) {
            m->order = malloc((n ? n : 1) * sizeof *m->order);
            m->start_ns = malloc((per ? per : 1) * P * sizeof *m->start_ns);
            m->end_ns = malloc((per ? per : 1) * P * sizeof *m->end_ns);
            m->post_ns = malloc((per ? per : 1) * P * sizeof *m->post_ns);
            m->step_ns = malloc((size_t)I * R * sizeof *m->step_ns);
            m->peak_live = calloc(R, sizeof *m->peak_live);
            m->pool_peak = rec->pool_peak ? calloc(R, sizeof *m->pool_peak)
                                          : NULL;
            m->solo_ns = rec->solo ? calloc(n ? n : 1, sizeof *m->solo_ns)
                                   : NULL;
            if (C) {
                m->skew_ns = calloc(n ? n : 1, sizeof *m->skew_ns);
                m->wake_ns = calloc(n ? n : 1, sizeof *m->wake_ns);
                wr = malloc((waits * P + 2u * C) * sizeof *wr);
            }
            ok = m->order && m->start_ns && m->end_ns && m->post_ns &&
                 m->step_ns && m->peak_live &&
                 (!rec->pool_peak || m->pool_peak) &&
                 (!rec->solo || m->solo_ns) &&
                 (!C || (m->skew_ns && m->wake_ns && wr));
        }
    }
    ok = ok && block * sizeof *mine <= (size_t)INT_MAX;
    commsched_status st =
        ok ? COMMSCHED_OK
           : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                 "out of memory gathering the measurement "
                                 "(use fewer --iters)");
    if ((st = cs_coord_agree(b, st, err)) != COMMSCHED_OK) {
        commsched_measurement_destroy(m);
        goto done;
    }
    memcpy(mine, rec->t0, per * sizeof *mine);
    memcpy(mine + per, rec->t1, per * sizeof *mine);
    memcpy(mine + 2 * per, rec->tp, per * sizeof *mine);
    double *t = mine + 3 * per;
    memcpy(t, rec->step, (size_t)I * G * sizeof *mine);
    t += (size_t)I * G;
    for (uint32_t d = 0; d < G; d++) {
        t[d] = (double)rec->peak[d];
        t[G + d] = rec->pool_peak ? (double)rec->pool_peak[d] : 0;
    }
    t[2 * G] = (double)rec->checked;
    t[2 * G + 1] = (double)rec->mismatches;
    if (rec->solo)
        memcpy(mine + 3 * per + tail, rec->solo, (size_t)n * sizeof *mine);
    if (C)
        memcpy(mine + block - waits, rec->arrive_wait, waits * sizeof *mine);
    char first[MIS];
    snprintf(first, sizeof first, "%s",
             rec->first_mismatch ? rec->first_mismatch : "");
    cs_boot_gather(b, mine, block * sizeof *mine, all);
    cs_boot_gather(b, first, MIS, mis);
    if (me != 0)
        goto done;
    m->ranks = R;
    m->nodes = n;
    m->iters = I;
    memcpy(m->order, p->order, (size_t)n * sizeof *m->order);
    for (uint32_t q = 0; q < P; q++) {
        const double *blk = all + block * q;
        for (uint32_t it = 0; it < I; it++)
            for (uint32_t d = 0; d < G; d++) {
                size_t src = ((size_t)it * G + d) * n,
                       dst = ((size_t)it * R + q * G + d) * n;
                memcpy(m->start_ns + dst, blk + src, (size_t)n * sizeof *all);
                memcpy(m->end_ns + dst, blk + per + src,
                       (size_t)n * sizeof *all);
                memcpy(m->post_ns + dst, blk + 2 * per + src,
                       (size_t)n * sizeof *all);
                m->step_ns[(size_t)it * R + q * G + d] =
                    blk[3 * per + (size_t)it * G + d];
            }
        const double *tq = blk + 3 * per + (size_t)I * G;
        for (uint32_t d = 0; d < G; d++) {
            m->peak_live[q * G + d] = (int64_t)tq[d];
            if (m->pool_peak)
                m->pool_peak[q * G + d] = (int64_t)tq[G + d];
        }
        m->checked += (uint64_t)tq[2 * G];
        m->mismatches += (uint64_t)tq[2 * G + 1];
        if (!m->first_mismatch[0] && mis[(size_t)q * MIS])
            snprintf(m->first_mismatch, MIS, "%s", mis + (size_t)q * MIS);
        for (uint32_t v = 0; m->solo_ns && v < n; v++)
            m->solo_ns[v] += blk[3 * per + tail + v] / R;
        if (C) /* [process][local][node][pass] = [rank][node][pass] */
            memcpy(wr + waits * q, blk + block - waits, waits * sizeof *wr);
    }
    if (C)
        cs_coord_skew(wr, R, n, C, m->skew_ns, m->wake_ns, wr + waits * P);
    m->graph = p->g;
    int64_t other = 0;
    for (uint32_t i = 0; i < p->n_other; i++)
        other += p->bytes[p->other[i]];
    m->other_bytes = other;
    m->options = *o;
    m->options.runtime_ns = NULL;
    snprintf(m->runtime, sizeof m->runtime, "%s", runtime);
    snprintf(m->library, sizeof m->library, "%s", library);
    *out = m;
done:
    free(mine);
    free(all);
    free(wr);
    free(mis);
    return st;
}
