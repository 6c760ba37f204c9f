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

/* The device kept, and the rank distributedInfo names (-1: none). */
long kineto_device(const kineto *k);
long kineto_rank(const kineto *k);

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
