/* Kineto (PyTorch profiler) traces: loading, the graph the GPU ran, and
 * Holistic Trace Analysis's comm/comp overlap (import_kineto.c). */
#ifndef COMMSCHED_KINETO_H
#define COMMSCHED_KINETO_H

#include "import_internal.h"

typedef struct kineto kineto;

/* Reads TRACE.json[.gz] ("-": standard input) and keeps the GPU events of
 * one device (o->rank, or the only one). Records located errors in d;
 * returns 0 with *out (kineto_destroy it) or the code. */
int kineto_load(import_diag *d, const char *path,
                const commsched_import_options *o, kineto **out);
void kineto_destroy(kineto *k);

/* The kineto behind a public commsched_kineto (import_api.c). */
const kineto *kineto_of_handle(const commsched_kineto *t);

/* The device kept, and the rank distributedInfo names (-1: none). */
long kineto_device(const kineto *k);
long kineto_rank(const kineto *k);

/* The group size a collective gets (--ranks, else distributedInfo's
 * world_size, else 8). */
long kineto_ranks(const kineto *k, const commsched_import_options *o);

/* The kept GPU events in launch order, as calibration reads them. */
typedef struct kineto_event {
    const char *name; /* borrowed from k */
    double ts_us, dur_us;
    int coll;         /* NCCL kernels: commsched_coll_op; else -1 */
    int64_t bytes;    /* collectives: 0 when the trace gives no size */
    long group_size;  /* the NCCL kernel's own "Group size", 0: none */
    long step;        /* profiler step ordinal, -1: outside every step */
    double flops;     /* a matmul kernel's, from its op's shapes; else 0 */
    double mem_bytes; /* a device-to-device copy's traffic; else 0 */
} kineto_event;

size_t kineto_event_count(const kineto *k);
kineto_event kineto_event_at(const kineto *k, size_t i);
/* Distinct ProfilerStep names, by first start; a name by ordinal (NULL
 * out of range). */
size_t kineto_step_count(const kineto *k);
const char *kineto_step_name(const kineto *k, long ordinal);

/* HTA's get_comm_comp_overlap (HolisticTraceAnalysis 0.5.0, its rules in
 * import_kineto.c) for the kept device: the time during which both a
 * communication kernel (^nccl.*Kernel) and a computation kernel (any
 * other GPU event but memcpy, memset and sync) run, over the time a
 * communication kernel runs, on HTA's rounded microseconds (each kind's
 * intervals merged first). *comm_us: that denominator. Returns the ratio
 * (tests/python/test_hta.py checks it against HTA itself); NAN without
 * communication kernels. */
double kineto_overlap(const kineto *k, double *comm_us);

/* The graph (docs/WORKLOADS.md); says a note. k reports through d for
 * the call (so one kineto serves one call at a time). */
int kineto_build(kineto *k, import_diag *d, const commsched_import_options *o,
                 commsched_graph **out);

#endif /* COMMSCHED_KINETO_H */
