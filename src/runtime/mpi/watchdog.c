/* commsched — the MPI watchdog's view of its node (watchdog.h). */
#define _POSIX_C_SOURCE 200809L

#include "watchdog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "commsched/graph.h"

/* One rank's slot in the node's window. Lock-free atomics, so a reader in
 * another process sees whole values. */
typedef struct slot {
    _Atomic uint64_t beat_ns; /* last sign of life, CLOCK_MONOTONIC */
    _Atomic uint32_t node;    /* last collective entered */
    _Atomic uint32_t iter;
    _Atomic int32_t phase;
} slot;

struct cs_watch {
    MPI_Comm node_comm;
    MPI_Win win;
    int n;                /* ranks on this node */
    int me;               /* this rank's index among them */
    int *world_rank;      /* per node-local index */
    slot **slots;         /* per node-local index */
    double beat_ns;
    pthread_t thread;
    int running;
    atomic_int stop;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *beat(void *arg)
{
    cs_watch *w = arg;
    struct timespec ts = {(time_t)(w->beat_ns / 1e9),
                          (long)((uint64_t)w->beat_ns % 1000000000u)};
    slot *s = w->slots[w->me];
    while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        atomic_store_explicit(&s->beat_ns, mono_ns(), memory_order_relaxed);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

commsched_status cs_watch_start(cs_watch **out, MPI_Comm world,
                                double beat_ns, commsched_error *err)
{
    *out = NULL;
    cs_watch *w = calloc(1, sizeof *w);
    if (!w)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    w->node_comm = MPI_COMM_NULL;
    w->win = MPI_WIN_NULL;
    w->beat_ns = beat_ns;
    int ok = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0,
                                 MPI_INFO_NULL, &w->node_comm) == MPI_SUCCESS;
    slot *mine = NULL;
    if (ok) {
        MPI_Comm_size(w->node_comm, &w->n);
        MPI_Comm_rank(w->node_comm, &w->me);
        ok = MPI_Win_allocate_shared((MPI_Aint)sizeof(slot), 1, MPI_INFO_NULL,
                                     w->node_comm, &mine, &w->win) ==
             MPI_SUCCESS;
    }
    /* Every rank of the node must have its window, or none uses it. */
    int all = ok;
    if (w->node_comm != MPI_COMM_NULL)
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, w->node_comm);
    if (all) {
        w->world_rank = calloc((size_t)w->n, sizeof *w->world_rank);
        w->slots = calloc((size_t)w->n, sizeof *w->slots);
        ok = w->world_rank && w->slots;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, w->node_comm);
        all = ok;
    }
    if (!all) {
        cs_watch_stop(w);
        return COMMSCHED_OK; /* no names, but the watchdog still works */
    }
    atomic_store(&mine->beat_ns, mono_ns());
    atomic_store(&mine->node, COMMSCHED_NONE);
    atomic_store(&mine->iter, 0);
    atomic_store(&mine->phase, -1);
    int wr = 0;
    MPI_Comm_rank(world, &wr);
    MPI_Allgather(&wr, 1, MPI_INT, w->world_rank, 1, MPI_INT, w->node_comm);
    for (int i = 0; i < w->n; i++) {
        MPI_Aint size = 0;
        int disp = 0;
        void *base = NULL;
        MPI_Win_shared_query(w->win, i, &size, &disp, &base);
        w->slots[i] = base;
    }
    /* Every slot is initialised before anyone reads it. */
    MPI_Barrier(w->node_comm);
    atomic_init(&w->stop, 0);
    w->running = pthread_create(&w->thread, NULL, beat, w) == 0;
    *out = w;
    return COMMSCHED_OK;
}

void cs_watch_stop(cs_watch *w)
{
    if (!w)
        return;
    if (w->running) {
        atomic_store(&w->stop, 1);
        pthread_join(w->thread, NULL);
    }
    if (w->win != MPI_WIN_NULL)
        MPI_Win_free(&w->win);
    if (w->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->node_comm);
    free(w->world_rank);
    free(w->slots);
    free(w);
}

void cs_watch_enter(cs_watch *w, uint32_t node, uint32_t iter, int phase)
{
    if (!w)
        return;
    slot *s = w->slots[w->me];
    atomic_store_explicit(&s->iter, iter, memory_order_relaxed);
    atomic_store_explicit(&s->phase, phase, memory_order_relaxed);
    atomic_store_explicit(&s->node, node, memory_order_relaxed);
}

int cs_watch_silent(const cs_watch *w, double silent_ns, cs_watch_seen *out)
{
    if (!w)
        return 0;
    uint64_t now = mono_ns();
    int found = 0;
    for (int i = 0; i < w->n; i++) {
        if (i == w->me)
            continue;
        const slot *s = w->slots[i];
        uint64_t b = atomic_load_explicit(&s->beat_ns, memory_order_relaxed);
        double age = now > b ? (double)(now - b) : 0;
        if (age <= silent_ns || (found && age <= out->age_ns))
            continue;
        found = 1;
        out->rank = w->world_rank[i];
        out->age_ns = age;
        out->node = atomic_load_explicit(&s->node, memory_order_relaxed);
        out->iter = atomic_load_explicit(&s->iter, memory_order_relaxed);
        out->phase = atomic_load_explicit(&s->phase, memory_order_relaxed);
    }
    return found;
}
