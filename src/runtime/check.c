/* commsched — what --check puts into a collective and expects out of it
 * (check.h). Both runtime adaptors stage these images and compare against
 * these expectations, so a graph checked on MPI and on NCCL is held to the
 * same values. No communication library here.
 *
 * Every expectation is computed from integers: the reduction is done once
 * in int64 (wrapping modulo 2^64, as the element types' own arithmetic
 * wraps modulo their width) and only then converted to the element type,
 * the way the stored operands were. */
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

/* ---- values -------------------------------------------------------------- */

/* Reduction operands: small, so every sum and product is exact in every
 * type up to a few dozen ranks. */
static int64_t red_fill(cs_rkind rk, int r, size_t i)
{
    switch (rk) {
    case CS_RK_PROD: return 1 + (int64_t)(((size_t)r + i) & 1u);
    case CS_RK_MIN:
    case CS_RK_MAX: return 1 + (int64_t)(((size_t)r * 5u + i) % 11u);
    default: return 1 + (int64_t)(((size_t)r + i) % 3u);
    }
}

/* Sum and product in uint64: a long product wraps modulo 2^64 (as every
 * integer type's own arithmetic does modulo its width) instead of
 * overflowing a signed integer. */
static int64_t red_expect(cs_rkind rk, int ranks, size_t i)
{
    int64_t acc = red_fill(rk, 0, i);
    for (int r = 1; r < ranks; r++) {
        int64_t v = red_fill(rk, r, i);
        switch (rk) {
        case CS_RK_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
        case CS_RK_MIN: acc = v < acc ? v : acc; break;
        case CS_RK_MAX: acc = v > acc ? v : acc; break;
        default: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
        }
    }
    return acc;
}

/* Data movers: element i as sent by src (to dst for all-to-all). */
static int64_t mv_fill(int src, size_t i)
{
    return 1 + (int64_t)(((size_t)src * 7u + i) % 13u);
}

static int64_t a2a_fill(int src, int dst, size_t i)
{
    return 1 + (int64_t)(((size_t)src * 7u + (size_t)dst * 3u + i) % 13u);
}

/* ---- one collective ------------------------------------------------------ */

size_t cs_check_input_elems(const cs_check_coll *c)
{
    switch (c->op) {
    case COMMSCHED_COLL_ALL_REDUCE:
    case COMMSCHED_COLL_REDUCE:
    case COMMSCHED_COLL_ALL_GATHER:
    case COMMSCHED_COLL_BROADCAST:
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV:
        return c->count;
    case COMMSCHED_COLL_REDUCE_SCATTER:
    case COMMSCHED_COLL_ALL_TO_ALL:
        return c->count * (size_t)c->k;
    default:
        return 0;
    }
}

void cs_check_fill(const cs_check_coll *c, void *dst)
{
    size_t n = cs_check_input_elems(c);
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        switch (c->op) {
        case COMMSCHED_COLL_ALL_REDUCE:
        case COMMSCHED_COLL_REDUCE:
        case COMMSCHED_COLL_REDUCE_SCATTER:
            v = red_fill(c->rk, c->r, i);
            break;
        case COMMSCHED_COLL_ALL_TO_ALL: /* chunk i / count goes to that rank */
            v = a2a_fill(c->r, (int)(i / c->count), i % c->count);
            break;
        case COMMSCHED_COLL_BROADCAST:
            v = c->r == 0 ? mv_fill(0, i) : 0;
            break;
        default: /* all_gather, send, recv */
            v = mv_fill(c->r, i);
            break;
        }
        cs_elem_put(dst, i, c->ek, v);
    }
}

size_t cs_check_result_elems(const cs_check_coll *c)
{
    switch (c->op) {
    case COMMSCHED_COLL_REDUCE:
        return c->r == 0 ? c->count : 0;
    case COMMSCHED_COLL_ALL_REDUCE:
    case COMMSCHED_COLL_REDUCE_SCATTER:
    case COMMSCHED_COLL_BROADCAST:
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV:
        return c->count;
    case COMMSCHED_COLL_ALL_GATHER:
    case COMMSCHED_COLL_ALL_TO_ALL:
        return c->count * (size_t)c->k;
    default:
        return 0;
    }
}

/* Element i of the result before conversion to the element type. Only
 * called below cs_check_result_elems, so count > 0 where it divides. */
static int64_t expect(const cs_check_coll *c, size_t i)
{
    size_t n = c->count;
    switch (c->op) {
    case COMMSCHED_COLL_ALL_REDUCE:
    case COMMSCHED_COLL_REDUCE:
        return red_expect(c->rk, c->k, i);
    case COMMSCHED_COLL_REDUCE_SCATTER: /* this rank's block of the sum */
        return red_expect(c->rk, c->k, (size_t)c->r * n + i);
    case COMMSCHED_COLL_ALL_GATHER: /* block j is rank j's piece */
        return mv_fill((int)(i / n), i % n);
    case COMMSCHED_COLL_ALL_TO_ALL: /* block j is what rank j sent here */
        return a2a_fill((int)(i / n), c->r, i % n);
    case COMMSCHED_COLL_BROADCAST:
        return mv_fill(0, i);
    default: /* send, recv: a ring shift, from the previous rank */
        return mv_fill((c->r + c->k - 1) % c->k, i);
    }
}

long cs_check_verify(const cs_check_coll *c, const void *got, double *want,
                     double *gotv)
{
    size_t n = cs_check_result_elems(c);
    for (size_t i = 0; i < n; i++) {
        double w = cs_elem_as(expect(c, i), c->ek);
        double g = cs_elem_get(got, i, c->ek);
        if (w != g) { /* NaN received is wrong too */
            if (want)
                *want = w;
            if (gotv)
                *gotv = g;
            return (long)i;
        }
    }
    return -1;
}
