/* commsched tests — the byte-for-byte --check reference, the oracle of
 * test_check_ref.c (check_ref_bytes.c); the calls mirror check_ref.h's. */
#ifndef COMMSCHED_TEST_CHECK_REF_BYTES_H
#define COMMSCHED_TEST_CHECK_REF_BYTES_H

#include <stdint.h>

#include "check_ref.h"

typedef struct ob_ref ob_ref;

commsched_status ob_ref_build(ob_ref **out, const cs_plan *p, int world,
                              int rank, const uint8_t *ek, cs_ref_rs rs,
                              commsched_error *err);
void ob_ref_free(ob_ref *r);
void ob_ref_region(const ob_ref *r, uint32_t v, uint32_t *buf, size_t *off,
                   size_t *len);
uint64_t ob_ref_unknown(const ob_ref *r);
/* Collective v's expected bytes on this rank and their known mask (the
 * region's length), NULL when it has none. */
const uint8_t *ob_ref_expect(const ob_ref *r, uint32_t v,
                             const uint8_t **known);

#endif
