/* printf's "%.*g" by 128-bit integer arithmetic where exact (fmt_g.h). */
#include "fmt_g.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef unsigned __int128 u128;

static size_t fallback(char buf[CS_FMT_G_SIZE], double d, int precision)
{
    int n = snprintf(buf, CS_FMT_G_SIZE, "%.*g", precision, d);
    assert(n > 0 && n < CS_FMT_G_SIZE);
    return (size_t)n;
}

/* floor(m * 2^e * 10^k), and in *up whether rounding it half to even
 * adds one; k in [0, 20], m below 2^53 and e in [-127, 4], so the
 * product stays below 2^128. */
static uint64_t scaled(uint64_t m, int e, int k, int *up)
{
    static const uint64_t pow10[20] = {
        1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u,
        100000000u, 1000000000u, 10000000000u, 100000000000u,
        1000000000000u, 10000000000000u, 100000000000000u,
        1000000000000000u, 10000000000000000u, 100000000000000000u,
        1000000000000000000u, 10000000000000000000u};
    u128 n = (u128)m * pow10[k < 20 ? k : 19];
    if (k == 20)
        n *= 10;
    *up = 0;
    if (e >= 0)
        return (uint64_t)(n << e);
    unsigned s = (unsigned)-e;
    u128 q = n >> s, r = n - (q << s), half = (u128)1 << (s - 1);
    *up = r > half || (r == half && (q & 1));
    return (uint64_t)q;
}

size_t cs_fmt_g(char buf[CS_FMT_G_SIZE], double d, int precision)
{
    assert(precision >= 1 && precision <= 17);
    double a = fabs(d);
    if (a == 0) { /* "0", "-0" */
        size_t len = 0;
        if (signbit(d))
            buf[len++] = '-';
        buf[len++] = '0';
        buf[len] = '\0';
        return len;
    }
    /* Below 1e-4 the exponent is below -4 (exponential notation), and at
     * 1e17 or above k would be negative. */
    if (!(a >= 1e-4 && a < 1e17))
        return fallback(buf, d, precision);
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    int e = (int)((bits >> 52) & 0x7ff) - 1075; /* d = +-m * 2^e */
    uint64_t lo = 1, hi;
    for (int i = 1; i < precision; i++)
        lo *= 10;
    hi = lo * 10;
    /* X, d's decimal exponent: log10's guess, corrected (at most twice) by
     * the count of the truncated digits -- the rounded ones may carry into
     * range from the wrong exponent -- then rounded, which may carry into
     * one more digit. */
    int x = (int)floor(log10(a)), k = 0, up = 0;
    uint64_t digits = 0;
    for (int tries = 0;; tries++) {
        k = precision - 1 - x;
        if (tries == 3 || k < 0 || k > 20)
            return fallback(buf, d, precision);
        digits = scaled(m, e, k, &up);
        if (digits >= hi)
            x++;
        else if (digits < lo)
            x--;
        else
            break;
    }
    digits += (uint64_t)up;
    if (digits == hi) {
        digits = lo;
        x++;
    }
    if (x < -4) /* exponential notation */
        return fallback(buf, d, precision);
    if (x >= precision) /* exponential notation */
        return fallback(buf, d, precision);
    char dig[CS_FMT_G_SIZE]; /* exactly `precision` digits: lo <= digits */
    cs_fmt_u64(dig, digits);
    int nd = precision; /* significant digits, trailing zeros dropped */
    while (nd > x + 1 && nd > 0 && dig[nd - 1] == '0')
        nd--;
    size_t len = 0;
    if (d < 0)
        buf[len++] = '-';
    if (x >= 0) {
        memcpy(buf + len, dig, (size_t)x + 1);
        len += (size_t)x + 1;
        if (nd > x + 1) {
            buf[len++] = '.';
            memcpy(buf + len, dig + x + 1, (size_t)(nd - x - 1));
            len += (size_t)(nd - x - 1);
        }
    } else {
        buf[len++] = '0';
        buf[len++] = '.';
        for (int i = 0; i < -x - 1; i++)
            buf[len++] = '0';
        memcpy(buf + len, dig, (size_t)nd);
        len += (size_t)nd;
    }
    buf[len] = '\0';
    return len;
}

size_t cs_fmt_u64(char buf[CS_FMT_G_SIZE], uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

size_t cs_fmt_f0(char buf[CS_FMT_G_SIZE], double d)
{
    if (!isfinite(d)) {
        int n = snprintf(buf, CS_FMT_G_SIZE, "%.0f", d);
        assert(n > 0 && n < CS_FMT_G_SIZE);
        return (size_t)n;
    }
    double a = fabs(d);
    assert(a < 1e19);
    /* Below 2^64 the integer part is exact and so is a - q (both have
     * a's exponent or less and no bits below a's last one). */
    uint64_t q = (uint64_t)a;
    double r = a - (double)q;
    if (r > 0.5 || (r == 0.5 && (q & 1)))
        q++;
    size_t len = 0;
    if (signbit(d)) /* "-0" too, as printf writes -0.3 */
        buf[len++] = '-';
    return len + cs_fmt_u64(buf + len, q);
}
