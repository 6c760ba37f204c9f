/* commsched — the host reference of --check (docs/RUNTIME.md "--check"):
 * what every collective of a step must produce on this rank, computed by
 * replaying the schedule's data flow over every rank's buffers. Internal;
 * no communication library here.
 *
 * Values are per buffer, not per collective: a root buffer that a
 * collective reads or writes gets its values once, when it is allocated
 * (an input of the step: when the pass starts), from (buffer, rank,
 * element), in the element type of the first collective that touches it.
 * Compute nodes leave data alone. The replay walks the order as every rank
 * runs it: an allocation fills, a collective reads what its group's ranks
 * hold when it is issued and its result lands when it completes (its wait;
 * at once when sync; the end of the step when nothing waits for it). So two
 * collectives that share an input read the same values, and a collective
 * that reads another's output sees that output.
 *
 * Exactness: an integer sum or product (the 16/8-bit floats MPI moves as
 * unsigned integers included) is exact when it fits its type (beyond, Open
 * MPI's AVX operations saturate unsigned sums where the plain ones wrap);
 * a floating-point sum or product is exact when its operands are integers
 * whose absolute sum (product) fits the significand; min/max always are. An element whose value the reference cannot know exactly (a float
 * beyond that, an operand that was unknown, or two collectives in flight
 * at once where one writes what the other reads or writes: a race in the
 * schedule, not a fault of the library) is not compared and is counted. */
#ifndef COMMSCHED_RUNTIME_CHECK_REF_H
#define COMMSCHED_RUNTIME_CHECK_REF_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "plan.h"

typedef struct cs_check_ref cs_check_ref;

/* Where an in-place reduce-scatter leaves this rank's block: MPI at the
 * start of the buffer, NCCL at rank * count. */
typedef enum cs_ref_rs {
    CS_REF_RS_AT_START,
    CS_REF_RS_AT_RANK
} cs_ref_rs;

/* Replays plan p for a world of `world` ranks (groups of k are the
 * world/k runs of consecutive ranks) and keeps what rank `rank` must see.
 * ek: per node, the element kind the adaptor moves a collective's data as.
 * On success *out is the reference (cs_check_ref_free); ENOMEM otherwise.
 * Holds segments, not bytes (check_ref.c): memory grows with ranks x
 * buffers x the pieces collectives cut them into, never with their size;
 * time with the same, plus one pass over this rank's result bytes. */
commsched_status cs_check_ref_build(cs_check_ref **out, const cs_plan *p,
                                    int world, int rank, const uint8_t *ek,
                                    cs_ref_rs rs, commsched_error *err);
void cs_check_ref_free(cs_check_ref *r);

/* Whether the adaptor must fill root buffer b (a collective touches it). */
int cs_check_ref_touched(const cs_check_ref *r, uint32_t b);
/* This rank's values of root buffer b (bytes long). */
void cs_check_ref_fill(const cs_check_ref *r, uint32_t b, void *dst,
                       size_t bytes);
/* This rank's values of collective v's private buffer (the data a recv's
 * ring shift sends, the pre-state of what a send receives). */
void cs_check_ref_fill_scratch(const cs_check_ref *r, uint32_t v, void *dst,
                               size_t bytes);

/* Where collective v's result lies on this rank: in root buffer *buf
 * (COMMSCHED_NONE: the collective's private buffer), bytes [*off, *off +
 * *len). *len is 0 when there is nothing to verify (barrier, reduce off
 * its root). */
void cs_check_ref_region(const cs_check_ref *r, uint32_t v, uint32_t *buf,
                         size_t *off, size_t *len);

/* Compares collective v's result (`region`: the bytes cs_check_ref_region
 * names) with the reference. Returns -1 when every known element matches,
 * otherwise the index of the first wrong element with the expected and
 * received values in *want and *got (either may be NULL). */
long cs_check_ref_verify(const cs_check_ref *r, uint32_t v,
                         const void *region, double *want, double *got);

/* Elements of this rank's results the reference could not know exactly
 * (not compared), over all collectives of one step. */
uint64_t cs_check_ref_unknown(const cs_check_ref *r);

#endif /* COMMSCHED_RUNTIME_CHECK_REF_H */
