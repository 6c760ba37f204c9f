/* commsched — what --check puts into a collective and expects out of it,
 * shared by the runtime adaptors (MPI, CUDA). Internal.
 *
 * Values are small integers chosen so every sum, product, min and max is
 * exact in every element type up to a few dozen ranks (and wraps the same
 * way on both sides beyond): a wrong result is a real fault, not rounding.
 * An adaptor stages cs_check_fill's image where the collective reads its
 * input, runs the collective, and hands what it received to
 * cs_check_verify. No communication library here. */
#ifndef COMMSCHED_RUNTIME_CHECK_H
#define COMMSCHED_RUNTIME_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"

/* How the elements are stored. MPI has no 16-bit or 8-bit floats, so its
 * adaptor moves those as unsigned integers of their width (U16, U8); NCCL
 * has real half and bfloat16 (F16, BF16). */
typedef enum cs_ekind {
    CS_EK_F64, CS_EK_F32, CS_EK_F16, CS_EK_BF16, CS_EK_U16, CS_EK_U8,
    CS_EK_I64, CS_EK_I32, CS_EK_I16, CS_EK_I8
} cs_ekind;

/* The reduction --check expects. avg and premul_sum are summed: neither
 * library is asked for them (same traffic, exact expectations). */
typedef enum cs_rkind { CS_RK_SUM, CS_RK_PROD, CS_RK_MIN, CS_RK_MAX } cs_rkind;

cs_rkind cs_check_rkind(commsched_reduce_op r);

/* Element i of `base` as kind k holds it: v is converted as a cast would
 * (integers wrap, floats round to nearest even, overflow gives infinity). */
void cs_elem_put(void *base, size_t i, cs_ekind k, int64_t v);
/* Element i as a double (exact for every kind). */
double cs_elem_get(const void *base, size_t i, cs_ekind k);
/* What v becomes once stored as kind k, as a double. */
double cs_elem_as(int64_t v, cs_ekind k);

/* One collective as one rank of its group runs it. `count` follows
 * cs_plan_coll_shape: elements per rank for all_gather, reduce_scatter and
 * all_to_all (per peer), of the whole buffer otherwise. */
typedef struct cs_check_coll {
    commsched_coll_op op;
    cs_ekind ek;
    cs_rkind rk;
    size_t count;
    int k;          /* group size */
    int r;          /* this rank's index in the group */
} cs_check_coll;

/* Elements of this rank's input image: count for all_reduce, reduce,
 * all_gather, broadcast, send and recv; count * k for reduce_scatter and
 * all_to_all; 0 for barrier. */
size_t cs_check_input_elems(const cs_check_coll *c);
/* Writes the input image (cs_check_input_elems elements of kind ek) to
 * dst: all_reduce/reduce/reduce_scatter: this rank's reduction operands;
 * all_gather: its piece; all_to_all: one chunk per destination; broadcast:
 * the root's data on rank 0 and zeros elsewhere; send/recv (a ring shift:
 * every rank sends to the next and receives from the previous): what it
 * sends. */
void cs_check_fill(const cs_check_coll *c, void *dst);

/* Elements of the result to verify: count for all_reduce, reduce on rank 0,
 * reduce_scatter, broadcast, send and recv (what arrived from the previous
 * rank); count * k for all_gather and all_to_all; 0 for barrier and for
 * reduce on the other ranks. */
size_t cs_check_result_elems(const cs_check_coll *c);
/* Compares the result `got` (cs_check_result_elems elements) with what
 * the collective must produce. Returns -1 when it is right, otherwise the
 * index of the first wrong element, with the expected and received values
 * in *want and *gotv (either may be NULL). */
long cs_check_verify(const cs_check_coll *c, const void *got, double *want,
                     double *gotv);

#endif /* COMMSCHED_RUNTIME_CHECK_H */
