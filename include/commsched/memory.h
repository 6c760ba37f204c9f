/* commsched — the memory model (Inductor's memory.py, with its incremental
 * tracking made exact; docs/FORMAT.md, "Memory model (in brief)").
 *
 * Per node, in schedule order:
 *     cur += size_alloc; post_alloc = cur; peak = max(peak, cur);
 *     cur -= size_free;  post_free = cur;
 * with cur starting at the baseline (freeable graph inputs that are read).
 * A real output allocates its size at its producer; an alias allocates
 * nothing and its readers count as readers of the chain's root. A buffer is
 * freed at its last reader, or by its producer when nobody reads it; graph
 * outputs (and their alias chains) are never freed; non-freeable inputs are
 * not counted.
 *
 * A commsched_memory keeps this state for one schedule and updates it in
 * O(group + buffers of the moved node) when the iterative passes move one
 * node across a contiguous group (the seed's
 * _update_memory_tracking_after_swap_reorder / _sink_waits), or a run of
 * nodes one after another across the same group in O(group + run); with
 * the levels in an order tree (commsched_memory_use_tree), a run of any
 * length in O(log n + group). The state always equals a full recompute;
 * commsched_memory_verify proves it. */
#ifndef COMMSCHED_MEMORY_H
#define COMMSCHED_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct commsched_memory commsched_memory;

typedef struct commsched_node_memory {
    int64_t size_alloc; /* bytes the node allocates */
    int64_t size_free;  /* bytes freed after it runs */
    int64_t post_alloc; /* live bytes after its allocations */
    int64_t post_free;  /* live bytes after its frees */
} commsched_node_memory;

/* Full estimate for the schedule's current order. Borrows the schedule's
 * graph (it must outlive the tracker). Caller destroys. O(V + B + reads).
 * EGRAPH when the sizes add up beyond int64_t (no graph the builder
 * accepts does: docs/FORMAT.md "Limits"). */
COMMSCHED_EXPORT commsched_status commsched_memory_create(
    const commsched_schedule *s, commsched_memory **out, commsched_error *err);

COMMSCHED_EXPORT void commsched_memory_destroy(commsched_memory *m);

/* Recomputes everything from scratch for the schedule's order.
 * O(V + B + reads), plus rebuilding the order tree (O(n)) and its times
 * (O(16 n)) when the tracker has them. */
COMMSCHED_EXPORT commsched_status commsched_memory_recompute(
    commsched_memory *m, const commsched_schedule *s, commsched_error *err);

/* Live bytes before the first node (freeable inputs that are read). */
COMMSCHED_EXPORT int64_t commsched_memory_baseline(const commsched_memory *m);

/* The peak over the current levels and the first node (in schedule order)
 * where it is reached. O(n): it walks the schedule (O(n log n) with
 * commsched_memory_use_tree: each level is read from the tree). */
COMMSCHED_EXPORT int64_t commsched_memory_peak(const commsched_memory *m,
                                               const commsched_schedule *s,
                                               uint32_t *at_node);

/* Node `node`'s figures. O(1); O(log n) with commsched_memory_use_tree. */
COMMSCHED_EXPORT commsched_node_memory
commsched_memory_node(const commsched_memory *m, uint32_t node);

/* The node after which `buffer` (a root buffer) is freed, or
 * COMMSCHED_NONE when it is never freed or not counted. For a buffer with
 * no reader this is its producer. */
COMMSCHED_EXPORT uint32_t commsched_memory_last_use(const commsched_memory *m,
                                                    uint32_t buffer);

typedef enum commsched_move {
    /* candidate sits right before the group and moves right after it
     * (RCPPM moving a collective's preceding node past it) */
    COMMSCHED_MOVE_AFTER_GROUP = 0,
    /* candidate sits right after the group and moves right before it
     * (sink_waits_iterative) */
    COMMSCHED_MOVE_BEFORE_GROUP = 1
} commsched_move;

/* Prices moving `candidate` across the contiguous group head..tail without
 * changing anything: *potential_peak is the highest post_alloc among the
 * group and the candidate after the move (the seed's
 * _calculate_potential_peak_memory_*, with the group's levels read fresh).
 * The plan is kept in m until the next plan or commit. The move must be
 * legal: no group node depends on the candidate (AFTER) / the candidate
 * depends on no group node (BEFORE); checked by assert in debug builds.
 * O(group + buffers the candidate reads). Fails only with ENOMEM (growing
 * its scratch), leaving no plan. */
COMMSCHED_EXPORT commsched_status commsched_memory_plan_move(
    commsched_memory *m, const commsched_schedule *s, commsched_move dir,
    uint32_t candidate, uint32_t head, uint32_t tail, int64_t *potential_peak,
    commsched_error *err);

/* Performs the last planned move: relinks the schedule and updates levels,
 * frees and last uses. Must follow commsched_memory_plan_move with no other
 * change to the schedule in between. O(group + buffers whose last use
 * moves); with commsched_memory_use_tree O(log n) per group node whose
 * frees change, plus O(log n). */
COMMSCHED_EXPORT void commsched_memory_commit_move(commsched_memory *m,
                                                   commsched_schedule *s);

/* Prices a run of AFTER_GROUP moves in one go: candidates[0] sits right
 * before head, candidates[i + 1] right before candidates[i], and each in
 * turn moves right after the group head..tail (so the run keeps its order
 * there), as commsched_memory_plan_move and commit_move would do one at a
 * time. potential_peaks[i] (room for n) receives the i-th move's potential
 * peak given the moves before it. The plan stops before the first
 * candidate that reads a buffer last used in the group (its move takes
 * that free: plan it with commsched_memory_plan_move): *n_planned <= n.
 * The same legality as plan_move (asserted in debug builds). Borrows
 * `candidates` until the commit. O(group + n + buffers the candidates
 * read), against O(group) per move one at a time. Fails only with ENOMEM,
 * leaving no plan and *n_planned 0. */
COMMSCHED_EXPORT commsched_status commsched_memory_plan_run(
    commsched_memory *m, const commsched_schedule *s, uint32_t head,
    uint32_t tail, const uint32_t *candidates, size_t n,
    int64_t *potential_peaks, size_t *n_planned, commsched_error *err);

/* Performs the first k (<= *n_planned) moves of the last planned run: one
 * splice of the schedule and the levels of the group and the k moved
 * nodes. Must follow commsched_memory_plan_run with no other change to the
 * schedule in between. O(group + k). */
COMMSCHED_EXPORT void commsched_memory_commit_run(commsched_memory *m,
                                                  commsched_schedule *s,
                                                  size_t k);

/* Keeps the levels in an order tree from now on (until the tracker is
 * destroyed; commsched_memory_recompute builds a new one): reading a
 * level costs O(log n) instead of O(1), moves and runs cost O(log n) more
 * each, and commsched_memory_far_run becomes available. For a pass whose
 * runs are long (RCPPM hoisting a collective across most of a step). Fails
 * only with ENOMEM, leaving the tracker as it was. O(n). */
COMMSCHED_EXPORT commsched_status commsched_memory_use_tree(
    commsched_memory *m, const commsched_schedule *s, commsched_error *err);

/* The node's position in the schedule (0 for the first), in O(log n):
 * only with commsched_memory_use_tree (without it, COMMSCHED_NONE). */
COMMSCHED_EXPORT uint32_t commsched_memory_position(const commsched_memory *m,
                                                   uint32_t node);

/* How many collectives stand at positions [lo, hi) of the schedule, in
 * O(log n): only with commsched_memory_use_tree. */
COMMSCHED_EXPORT uint32_t commsched_memory_collectives(
    const commsched_memory *m, uint32_t lo, uint32_t hi);

/* The first position >= p whose node is not an async collective (a
 * compute node, a wait or a sync collective), or the node count when
 * none; and the node at position p (< node count). O(log n), only with
 * commsched_memory_use_tree. */
COMMSCHED_EXPORT uint32_t commsched_memory_next_not_async(
    const commsched_memory *m, uint32_t p);
COMMSCHED_EXPORT uint32_t commsched_memory_node_at(const commsched_memory *m,
                                                   uint32_t p);

/* The first position >= p holding a sync collective, or the node count
 * when none. O(log n), only with commsched_memory_use_tree. */
COMMSCHED_EXPORT uint32_t commsched_memory_next_sync(
    const commsched_memory *m, uint32_t p);

/* Gives the nodes times (time[v] for node v, copied; collectives' are not
 * read) for commsched_memory_time_sum: the exposed-time walks of the
 * iterative passes add runtimes over long stretches of the order. Needs
 * commsched_memory_use_tree; kept through commsched_memory_recompute.
 * Times that are negative or not finite are added one by one. Fails only
 * with ENOMEM (the tracker then has no times). O(16 n) and ~140 bytes a
 * node; each sum first brings up to date the tree nodes that moves have
 * touched since the last one (16 counts each). */
COMMSCHED_EXPORT commsched_status commsched_memory_use_times(
    commsched_memory *m, const double *time, commsched_error *err);

/* What adding the times of the nodes at positions [lo, hi) that are not
 * collectives to `sum`, one after another in the order as doubles,
 * leaves in it, bit for bit. O(log n) per binade between sum and the
 * result (and per node whose time falls halfway between two steps of a
 * binade the sum passes), not per node. Needs commsched_memory_use_times.
 * m is const to its caller: the tree's cached sums are brought up to date
 * inside (not safe to call on one tracker from two threads at once). */
COMMSCHED_EXPORT double commsched_memory_time_sum(const commsched_memory *m,
                                                  uint32_t lo, uint32_t hi,
                                                  double sum);

typedef struct commsched_far_run {
    size_t moved;      /* nodes moved across the group */
    uint32_t next;     /* the node right before the group now (the first
                          not moved), or COMMSCHED_NONE */
    int over;          /* 1: next was not moved for its potential peak */
    int64_t potential; /* next's potential peak, when over */
} commsched_far_run;

/* A run of AFTER_GROUP moves without a list of candidates: the nodes
 * from the one right before head back to the one right after `stop`
 * (COMMSCHED_NONE: to the schedule's first) move one after another right
 * after the group head..tail, exactly as commsched_memory_plan_run and
 * commit_run would move them, stopping before the first that would take a
 * free from the group (out->next, over 0) or whose potential peak passes
 * `limit` (out->next, over 1, with that peak). The caller guarantees that
 * no group node depends on a node between stop and head. Needs
 * commsched_memory_use_tree. O(log n x (1 + readers of the buffers last
 * used in the group) + group), however many nodes move. Fails only with
 * ENOMEM, moving nothing. */
COMMSCHED_EXPORT commsched_status commsched_memory_far_run(
    commsched_memory *m, commsched_schedule *s, uint32_t head, uint32_t tail,
    uint32_t stop, int64_t limit, commsched_far_run *out,
    commsched_error *err);

/* Recomputes from scratch and compares node by node and buffer by buffer.
 * Returns EINTERNAL naming the first difference, or OK. O(V + B + reads)
 * (O(n log n) more with commsched_memory_use_tree). */
COMMSCHED_EXPORT commsched_status commsched_memory_verify(
    const commsched_memory *m, const commsched_schedule *s,
    commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_MEMORY_H */
