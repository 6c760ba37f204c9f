/* commsched — how the processes of a GPU run find each other and exchange
 * the few things NCCL cannot carry: its unique id, failure agreement, the
 * preflight's fingerprints and the gathered measurement. Internal.
 *
 * Two implementations, one per build: boot_mpi.c (processes started by
 * mpirun; the only file of the CUDA path that includes mpi.h) and
 * boot_local.c (one process, where the build has no MPI). The CUDA adaptor
 * never sees which. Every function but init is collective over the
 * processes unless it says otherwise. */
#ifndef COMMSCHED_RUNTIME_BOOT_H
#define COMMSCHED_RUNTIME_BOOT_H

#include <stddef.h>

#include "commsched/status.h"

typedef struct cs_boot cs_boot;

/* Joins the job (MPI_Init unless MPI is already initialized). On success
 * *out is the context (fini frees it). */
commsched_status cs_boot_init(int *argc, char ***argv, cs_boot **out,
                              commsched_error *err);
/* Leaves the job: a barrier of every process, then MPI_Finalize, when init
 * started MPI. NULL is allowed. */
void cs_boot_fini(cs_boot *b);

/* This process's index and the process count (local, not collective). */
int cs_boot_rank(const cs_boot *b);
int cs_boot_size(const cs_boot *b);
/* Index among the processes on this host, and how many there are there
 * (local): decides which GPUs a process takes. */
int cs_boot_local_rank(const cs_boot *b);
int cs_boot_local_size(const cs_boot *b);
/* "Open MPI v4.1.4", or "single process" (local). */
const char *cs_boot_library(const cs_boot *b);

/* The lowest process that passed failed != 0, or -1 when none did. */
int cs_boot_first_failed(cs_boot *b, int failed);
/* The minimum of v over the processes. */
long long cs_boot_min(cs_boot *b, long long v);
/* Copies root's len bytes into every process's buf. 0, or -1 when len is
 * too large for one call. */
int cs_boot_bcast(cs_boot *b, void *buf, size_t len, int root);
/* Process 0 receives every process's len bytes, process-major, in all
 * (size * len bytes; ignored elsewhere). 0, or -1 when too large. */
int cs_boot_gather(cs_boot *b, const void *mine, size_t len, void *all);
/* Every process's len bytes, process-major, in all (size * len). */
int cs_boot_allgather(cs_boot *b, const void *mine, size_t len, void *all);
void cs_boot_barrier(cs_boot *b);

/* Ends the whole job with `code` after a failure that cannot be agreed on
 * (a hung collective): MPI_Abort, or exit. Does not return. */
void cs_boot_abort(cs_boot *b, int code)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

#endif /* COMMSCHED_RUNTIME_BOOT_H */
