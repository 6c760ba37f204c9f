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
    const int64_t *peak;        /* [local] */
    const int64_t *pool_peak;   /* [local], or NULL */
    uint64_t checked, mismatches;
    const char *first_mismatch; /* "" when none */
} cs_coord_records;

/* Collective: gathers every process's records into a measurement on
 * process 0 (*out, caller destroys; NULL elsewhere), solo times averaged
 * over all ranks, --check counts summed, the first mismatch of the lowest
 * process that saw one. The plan and graph are borrowed (the graph must
 * outlive the measurement). ENOMEM, agreed, when it does not fit. */
commsched_status cs_coord_gather(cs_boot *b, const cs_plan *p,
                                 const commsched_run_options *o,
                                 const cs_coord_records *rec,
                                 const char *runtime, const char *library,
                                 commsched_measurement **out,
                                 commsched_error *err);

#endif /* COMMSCHED_RUNTIME_COORD_H */
