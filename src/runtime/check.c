/* commsched — --check's element kinds and reductions (check.h), shared
 * by the host reference (check_ref.c) and both runtime adaptors. No
 * communication library here. */
#include "check.h"

#include <math.h>

cs_rkind cs_check_rkind(commsched_reduce_op r)
{
    switch (r) {
    case COMMSCHED_REDUCE_PRODUCT: return CS_RK_PROD;
    case COMMSCHED_REDUCE_MIN: return CS_RK_MIN;
    case COMMSCHED_REDUCE_MAX: return CS_RK_MAX;
    default: return CS_RK_SUM;
    }
}

/* ---- 16-bit floats ------------------------------------------------------- */

/* Half (10 fraction bits, 5 exponent bits) and bfloat16 (7 and 8) share
 * one layout: sign, exponent, fraction in 16 bits. The conversion works on
 * the integer itself rather than through a double, which would round twice
 * for bfloat16 beyond 2^53. Integers are never subnormal, so only rounding
 * and overflow need care. */
static uint16_t f16_from_int(int64_t v, unsigned frac)
{
    unsigned ebits = 15u - frac, bias = (1u << (ebits - 1u)) - 1u;
    unsigned sign = v < 0 ? 0x8000u : 0u;
    uint64_t m = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    if (m == 0)
        return (uint16_t)sign;
    unsigned e = 63; /* the position of the leading bit: the exponent */
    while (!(m >> e))
        e--;
    if (e > frac) {
        /* Round the bits below the fraction to nearest, ties to even. */
        unsigned drop = e - frac;
        uint64_t rest = m & ((UINT64_C(1) << drop) - 1u);
        uint64_t half = UINT64_C(1) << (drop - 1u);
        m >>= drop;
        if (rest > half || (rest == half && (m & 1u)))
            m++;
        if (m >> (frac + 1u)) { /* rounded up to the next power of two */
            m >>= 1;
            e++;
        }
    } else {
        m <<= frac - e; /* exact: align the leading bit */
    }
    if (e > bias) /* beyond the largest finite value: infinity */
        return (uint16_t)(sign | (((1u << ebits) - 1u) << frac));
    return (uint16_t)(sign | ((e + bias) << frac) |
                      ((unsigned)m & ((1u << frac) - 1u)));
}

/* Exact: every such value has at most 11 significant bits and an
 * exponent well inside a double's. */
static double f16_to_double(uint16_t h, unsigned frac)
{
    unsigned ebits = 15u - frac, emax = (1u << ebits) - 1u;
    int bias = (1 << (ebits - 1u)) - 1;
    unsigned e = ((unsigned)h >> frac) & emax, f = h & ((1u << frac) - 1u);
    double mag;
    if (e == emax)
        mag = f ? NAN : INFINITY;
    else if (e == 0) /* subnormal */
        mag = ldexp((double)f, 1 - bias - (int)frac);
    else
        mag = ldexp((double)(f | (1u << frac)), (int)e - bias - (int)frac);
    return h & 0x8000u ? -mag : mag;
}

enum { HALF_FRAC = 10, BF16_FRAC = 7 };

/* ---- elements ------------------------------------------------------------ */

void cs_elem_put(void *base, size_t i, cs_ekind k, int64_t v)
{
    switch (k) {
    case CS_EK_F64: ((double *)base)[i] = (double)v; break;
    case CS_EK_F32: ((float *)base)[i] = (float)v; break;
    case CS_EK_F16: ((uint16_t *)base)[i] = f16_from_int(v, HALF_FRAC); break;
    case CS_EK_BF16: ((uint16_t *)base)[i] = f16_from_int(v, BF16_FRAC); break;
    case CS_EK_U16: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case CS_EK_U8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case CS_EK_I64: ((int64_t *)base)[i] = v; break;
    case CS_EK_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case CS_EK_I16: ((int16_t *)base)[i] = (int16_t)v; break;
    case CS_EK_I8: ((int8_t *)base)[i] = (int8_t)v; break;
    }
}

double cs_elem_get(const void *base, size_t i, cs_ekind k)
{
    switch (k) {
    case CS_EK_F64: return ((const double *)base)[i];
    case CS_EK_F32: return (double)((const float *)base)[i];
    case CS_EK_F16: return f16_to_double(((const uint16_t *)base)[i], HALF_FRAC);
    case CS_EK_BF16: return f16_to_double(((const uint16_t *)base)[i], BF16_FRAC);
    case CS_EK_U16: return (double)((const uint16_t *)base)[i];
    case CS_EK_U8: return (double)((const uint8_t *)base)[i];
    case CS_EK_I64: return (double)((const int64_t *)base)[i];
    case CS_EK_I32: return (double)((const int32_t *)base)[i];
    case CS_EK_I16: return (double)((const int16_t *)base)[i];
    case CS_EK_I8: return (double)((const int8_t *)base)[i];
    }
    return 0;
}

double cs_elem_as(int64_t v, cs_ekind k)
{
    union {
        double f64; float f32; uint16_t u16; uint8_t u8;
        int64_t i64; int32_t i32; int16_t i16; int8_t i8;
    } u;
    cs_elem_put(&u, 0, k, v);
    return cs_elem_get(&u, 0, k);
}
