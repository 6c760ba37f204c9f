/* commsched — a schedule: the order in which one rank issues the graph's
 * nodes, as a circular doubly-linked list over node indices with a sentinel
 * (libuv's queue.h shape, with indices instead of pointers so it costs two
 * uint32 per node and copies with memcpy).
 *
 * Every operation is O(1) except create, clone, to_array and check (O(n),
 * or O(n + edges) for check) and check_races (below). Mutations during a
 * walk: a node returned by first/next/prev may be unlinked or moved, but
 * the walk must then continue from a node whose neighbours the caller
 * knows (redis listNext's rule). */
#ifndef COMMSCHED_SCHEDULE_H
#define COMMSCHED_SCHEDULE_H

#include <stdint.h>

#include "commsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct commsched_schedule commsched_schedule;

/* A schedule in the graph's node order (order NULL) or in the given order, a
 * permutation of 0..n-1 (EINVAL otherwise). The graph is borrowed and must
 * outlive the schedule. Caller destroys. O(n). */
COMMSCHED_EXPORT commsched_status commsched_schedule_create(
    const commsched_graph *g, const uint32_t *order, commsched_schedule **out,
    commsched_error *err);

/* An independent copy. Caller destroys. O(n). */
COMMSCHED_EXPORT commsched_status commsched_schedule_clone(
    const commsched_schedule *s, commsched_schedule **out,
    commsched_error *err);

COMMSCHED_EXPORT void commsched_schedule_destroy(commsched_schedule *s);

COMMSCHED_EXPORT const commsched_graph *
commsched_schedule_graph(const commsched_schedule *s);

/* Walks. Each returns COMMSCHED_NONE past the end (or when empty). */
COMMSCHED_EXPORT uint32_t commsched_schedule_first(const commsched_schedule *s);
COMMSCHED_EXPORT uint32_t commsched_schedule_last(const commsched_schedule *s);
COMMSCHED_EXPORT uint32_t commsched_schedule_next(const commsched_schedule *s,
                                                  uint32_t node);
COMMSCHED_EXPORT uint32_t commsched_schedule_prev(const commsched_schedule *s,
                                                  uint32_t node);
/* 1 when node is currently in the list. */
COMMSCHED_EXPORT int commsched_schedule_contains(const commsched_schedule *s,
                                                 uint32_t node);

/* Removes node from the list (it must be linked). */
COMMSCHED_EXPORT void commsched_schedule_unlink(commsched_schedule *s,
                                                uint32_t node);
/* Links an unlinked node before `pos` (COMMSCHED_NONE: at the end). */
COMMSCHED_EXPORT void commsched_schedule_insert_before(commsched_schedule *s,
                                                       uint32_t node,
                                                       uint32_t pos);
/* Links an unlinked node after `pos` (COMMSCHED_NONE: at the front). */
COMMSCHED_EXPORT void commsched_schedule_insert_after(commsched_schedule *s,
                                                      uint32_t node,
                                                      uint32_t pos);
/* Moves the run first..last (first at or before last, all linked) so that
 * it follows `pos` (COMMSCHED_NONE: to the front). pos must not lie in the
 * run. */
COMMSCHED_EXPORT void commsched_schedule_move_run_after(commsched_schedule *s,
                                                        uint32_t first,
                                                        uint32_t last,
                                                        uint32_t pos);
/* Moves the run first..last so that it precedes `pos` (NONE: to the end). */
COMMSCHED_EXPORT void commsched_schedule_move_run_before(commsched_schedule *s,
                                                         uint32_t first,
                                                         uint32_t last,
                                                         uint32_t pos);

/* Writes the order into order[0 .. node count). EINTERNAL if the list does
 * not hold every node exactly once. O(n). */
COMMSCHED_EXPORT commsched_status commsched_schedule_to_array(
    const commsched_schedule *s, uint32_t *order, commsched_error *err);

/* Invariant check (for asserts, tests and between passes): the list is a
 * permutation of all nodes and every data and `after` edge — and, when
 * with_fake is set, every `after_fake` edge — runs forward. On failure
 * returns EORDER (or EINTERNAL for a broken list) with a message naming the
 * nodes. O(n + edges checked). */
COMMSCHED_EXPORT commsched_status commsched_schedule_check(
    const commsched_schedule *s, int with_fake, commsched_error *err);

/* Race check (docs/FORMAT.md, "In-place writes"): in this order, no two
 * nodes in flight at the same time touch the same root buffer where at
 * least one of them writes it. An async collective is in flight from its
 * position to the first wait (in this order) that reads one of its outputs
 * (to the end when none does); every other node at its own position only.
 * A node writes its real outputs and, for a collective, the roots its alias
 * outputs lead to (in-place). O(nodes + edges + buffers). Returns OK;
 * EORDER with the path "nodes[i]" of the later node and a message naming
 * both nodes and the buffer; EINTERNAL when the list is not a permutation;
 * ENOMEM. The order must already pass commsched_schedule_check. */
COMMSCHED_EXPORT commsched_status commsched_schedule_check_races(
    const commsched_schedule *s, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_SCHEDULE_H */
