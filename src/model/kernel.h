/* commsched — the one model of memory and time that the memory tracker,
 * the simulator and every pass that prices an order on its own (overlap's
 * list scheduler, bucketing's virtual merge) step through, so a rule
 * changed here changes everywhere at once. docs/ARCHITECTURE.md "The
 * model"; the memory model is docs/PASSES.md's (Inductor's memory.py made
 * exact), the timeline of the simulator (docs/REPORTS.md). Not installed.
 *
 * Memory, per node in order: its allocations land, the level is read
 * there (post_alloc: where the peak is measured), then its frees.
 *
 * Time: one compute stream (a clock `now`) and one comm stream per group
 * (the time each is free). A compute node runs at now; a collective is
 * issued at now and starts when its stream is free; a sync collective
 * also holds the compute stream until it ends; a wait starts when the
 * compute stream and every collective it waits for are done. */
#ifndef COMMSCHED_KERNEL_H
#define COMMSCHED_KERNEL_H

#include <stdint.h>

#include "util.h"

/* One memory step: returns post_alloc; *cur becomes post_free. *overflow
 * is set (never cleared) when the level passes 2^63 bytes; the level then
 * stays at INT64_MAX, so no later step wraps (callers report the error and
 * never use the figures). */
static inline int64_t cs_mem_step(int64_t *cur, int64_t alloc, int64_t freed,
                                  int *overflow)
{
    if (*overflow || cs_add_i64(cur, alloc)) {
        *overflow = 1;
        *cur = INT64_MAX;
        return INT64_MAX;
    }
    int64_t post_alloc = *cur; /* >= freed: what is freed was allocated */
    *cur -= freed;
    return post_alloc;
}

/* The streams' clocks. stream_free has one entry per comm stream. */
typedef struct cs_clock {
    double now;
    double *stream_free;
} cs_clock;

/* A compute node of runtime r: returns its start; now is its end. */
static inline double cs_clock_compute(cs_clock *c, double r)
{
    double start = c->now;
    c->now = start + r;
    return start;
}

/* A collective of runtime r on `stream`, issued now: returns its start;
 * its end is start + r. A sync one holds the compute stream until then. */
static inline double cs_clock_collective(cs_clock *c, uint32_t stream,
                                         double r, int sync)
{
    double free_at = c->stream_free[stream];
    double start = c->now > free_at ? c->now : free_at;
    c->stream_free[stream] = start + r;
    if (sync)
        c->now = start + r;
    return start;
}

/* A wait of runtime r whose collectives end by `done` (the latest of
 * their ends; pass now when there is none): returns its start. */
static inline double cs_clock_wait(cs_clock *c, double done, double r)
{
    double start = done > c->now ? done : c->now;
    c->now = start + r;
    return start;
}

/* The step's end: the compute stream's clock or the last comm stream to
 * go idle, whichever is later. */
static inline double cs_clock_makespan(const cs_clock *c, uint32_t n_streams)
{
    double end = c->now;
    for (uint32_t s = 0; s < n_streams; s++)
        if (c->stream_free[s] > end)
            end = c->stream_free[s];
    return end;
}

#endif /* COMMSCHED_KERNEL_H */
