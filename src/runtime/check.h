/* commsched — --check's element kinds and reductions, shared by the host
 * reference (check_ref.h: the values every buffer gets and what every
 * collective must produce) and the runtime adaptors (MPI, CUDA). Internal;
 * no communication library here. */
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

#endif /* COMMSCHED_RUNTIME_CHECK_H */
