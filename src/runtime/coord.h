/* commsched — what the processes of a run agree on, over boot.h, shared by
 * the runtime adaptors: failures (so no process is left blocked), the
 * preflight (same graph, same collective sequence), and the measurement
 * gathered on process 0. Internal; no communication library here. */
#ifndef COMMSCHED_RUNTIME_COORD_H
#define COMMSCHED_RUNTIME_COORD_H

#include <stdint.h>

#include "boot.h"
#include "commsched/runtime.h"
#include "plan.h"

/* Collective: every process learns whether any failed (st != OK); the
 * lowest failing process keeps its message, the others return the same
 * status with an empty one. OK when none failed. */
commsched_status cs_coord_agree(cs_boot *b, commsched_status st,
                                commsched_error *err);

/* Collective: the processes must run the same graph (hash) and issue the
 * same (op, group, bytes) collective sequence, or running would deadlock
 * (Inductor #189454, torchrec #4149). `unit` names a process in messages
 * ("rank" where a process is a rank). EINVAL, agreed, naming the first
 * collective that differs and where. */
commsched_status cs_coord_preflight(cs_boot *b, const cs_plan *p,
                                    const char *unit, commsched_error *err);

/* One process's records: `local` ranks (its GPUs; 1 for an MPI rank),
 * global rank = process * local + index, every process holding as many. */
typedef struct cs_coord_records {
    uint32_t local;
    const double *t0, *t1, *tp; /* [iter][local][node], ns from the
                                   iteration's start */
    const double *step;         /* [iter][local] */
    const double *solo;         /* [node], summed over the local ranks;
                                   NULL without calibration */
    const double *arrive_wait;  /* [local][node][pass]: in each calibration
                                   pass, how long the rank waited at a
                                   collective for the rest of its group
                                   before posting it (0 for other nodes);
                                   NULL without calibration */
    uint32_t passes;            /* calibration passes (0 without) */
    const int64_t *peak;        /* [local] */
    const int64_t *pool_peak;   /* [local], or NULL */
    uint64_t checked, mismatches;
    const char *first_mismatch; /* "" when none */
} cs_coord_records;

/* Per node, from waits[rank][node][pass] (R ranks, C >= 1 passes, 0
 * for nodes that do not wait): skew = median over passes of (mean over
 * ranks - least over ranks), wake = median over passes of the least over
 * ranks. The least wait is the last rank to arrive: what it waited is how
 * long the others took to wake up and answer; everyone else waited that
 * plus how much earlier they came. scratch holds 2 C doubles. */
void cs_coord_skew(const double *waits, uint32_t R, uint32_t n, uint32_t C,
                   double *skew, double *wake, double *scratch);

/* Collective: gathers every process's records into a measurement on
 * process 0 (*out, caller destroys; NULL elsewhere), solo times averaged
 * over all ranks, skew and wake-up per collective (cs_coord_skew), --check counts summed, the first mismatch of the lowest
 * process that saw one. The plan and graph are borrowed (the graph must
 * outlive the measurement). ENOMEM, agreed, when it does not fit. */
commsched_status cs_coord_gather(cs_boot *b, const cs_plan *p,
                                 const commsched_run_options *o,
                                 const cs_coord_records *rec,
                                 const char *runtime, const char *library,
                                 commsched_measurement **out,
                                 commsched_error *err);

#endif /* COMMSCHED_RUNTIME_COORD_H */
