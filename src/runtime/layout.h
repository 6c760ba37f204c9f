/* commsched — where a rank's buffers live (docs/RUNTIME.md "Memory"): one
 * arena for every buffer an iteration allocates, each at an offset planned
 * before the run by replaying the iteration's allocations and frees in
 * order, first fit. Every iteration then puts every buffer where it was
 * before, so a rank holds the arena and nothing more, and its pages are
 * touched once (a GPU caching allocator's behaviour without its growth:
 * glibc's heap, kept mapped for the same reason, grew to 3.4x the peak on
 * the bundled example). Internal. */
#ifndef COMMSCHED_RUNTIME_LAYOUT_H
#define COMMSCHED_RUNTIME_LAYOUT_H

#include <stdint.h>

#include "plan.h"

#define CS_LAYOUT_NONE UINT64_MAX

typedef struct cs_layout {
    uint64_t *off;  /* per buffer: its offset in the arena, CS_LAYOUT_NONE
                       for buffers the iteration does not allocate (the
                       inputs that live for the whole run, aliases) */
    uint64_t size;  /* the arena's bytes: the high-water mark */
    uint64_t peak;  /* the most bytes live at once (rounded sizes) */
} cs_layout;

/* Plans plan p's iteration: the baseline inputs first, then at each node
 * of the order the buffers it allocates and, after it, those it frees;
 * what is left is freed at the end (as the adaptors do). Sizes are
 * rounded up to `align` (a power of two). On success *out holds the
 * offsets (cs_layout_free); ENOMEM otherwise. O(allocations x free
 * blocks), the free blocks being few (coalesced). */
commsched_status cs_layout_plan(const cs_plan *p, uint64_t align,
                                cs_layout *out, commsched_error *err);
void cs_layout_free(cs_layout *l);

#endif /* COMMSCHED_RUNTIME_LAYOUT_H */
