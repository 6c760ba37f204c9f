/* commsched — what the MPI watchdog knows about the other ranks of its
 * node: each rank's last sign of life and the collective it last entered,
 * in a shared-memory window (MPI_Win_allocate_shared), kept fresh by a
 * heartbeat thread that stops only when the whole process stops (SIGSTOP,
 * a debugger). So when a wait times out, the rank can name the silent rank
 * instead of guessing; a rank that computes for a long time is not silent.
 * Internal; part of the MPI adaptor. */
#ifndef COMMSCHED_RUNTIME_MPI_WATCHDOG_H
#define COMMSCHED_RUNTIME_MPI_WATCHDOG_H

#include <mpi.h>
#include <stdint.h>

#include "commsched/status.h"

typedef struct cs_watch cs_watch;

/* Collective over `world`: the window of this node's ranks and this
 * rank's heartbeat (every beat_ns). On failure *out is NULL and the run
 * goes on without names (the message says so); only ENOMEM is returned. */
commsched_status cs_watch_start(cs_watch **out, MPI_Comm world,
                                double beat_ns, commsched_error *err);
/* Collective: stops the heartbeat and frees the window. NULL is allowed. */
void cs_watch_stop(cs_watch *w);

/* This rank enters collective `node` in pass `iter` of phase `phase` (an
 * index the caller defines). Lock-free; safe to call often. */
void cs_watch_enter(cs_watch *w, uint32_t node, uint32_t iter, int phase);

typedef struct cs_watch_seen {
    int rank;          /* world rank */
    double age_ns;     /* since its last sign of life */
    uint32_t node;     /* the collective it last entered, or NONE */
    uint32_t iter;
    int phase;
} cs_watch_seen;

/* The rank of this node, other than this one, silent the longest, when it
 * has been silent more than silent_ns: 1 and *out; otherwise 0 (also
 * without a window). */
int cs_watch_silent(const cs_watch *w, double silent_ns, cs_watch_seen *out);

#endif /* COMMSCHED_RUNTIME_MPI_WATCHDOG_H */
