/* Kineto (PyTorch profiler) traces: loading, the graph the GPU ran, and
 * Holistic Trace Analysis's comm/comp overlap (import_kineto.c). */
#ifndef COMMSCHED_KINETO_H
#define COMMSCHED_KINETO_H

#include "cli.h"

typedef struct kineto kineto;

/* Reads TRACE.json[.gz] ("-": standard input) and keeps the GPU events of
 * one device (o->rank, or the only one). Prints located errors; returns 0
 * with *out (kineto_destroy it) or the exit code. */
int kineto_load(const char *path, const import_options *o, kineto **out);
void kineto_destroy(kineto *k);

/* The device kept, and the rank distributedInfo names (-1: none). */
long kineto_device(const kineto *k);
long kineto_rank(const kineto *k);

/* HTA's get_comm_comp_overlap for the kept device: the time during which
 * both a communication kernel (name contains "nccl") and a computation
 * kernel (any other GPU event but memcpy/memset) run, over the time a
 * communication kernel runs (each kind's intervals merged first).
 * *comm_us: that denominator. Returns the ratio in [0, 1]; NAN without
 * communication kernels. */
double kineto_overlap(const kineto *k, double *comm_us);

/* The graph (docs/WORKLOADS.md); prints a note. */
int kineto_build(const kineto *k, const import_options *o,
                 commsched_graph **out);

#endif /* COMMSCHED_KINETO_H */
