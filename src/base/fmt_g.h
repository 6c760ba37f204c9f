/* printf's "%.*g" of a double, by integer arithmetic where that is exact.
 *
 * Every saved graph, schedule statistic and report figure goes through
 * "%.17g" (jansson's number format, which the files must keep byte for
 * byte). glibc computes each with multi-precision arithmetic, a few
 * thousand instructions a number, which made the per-collective statistics
 * a quarter of `optimize` on a 100K-node step. Numbers written in plain
 * notation with at most 17 significant digits -- the exponent X of the
 * rounded value in [-4, precision) -- need only a 128-bit product of the
 * 53-bit significand and a power of ten, shifted by the binary exponent,
 * rounded half to even as glibc rounds in the default rounding mode; the
 * rest (exponential notation, subnormals, infinities, NaN) goes to
 * snprintf itself. tests/unit/test_json_writer.c compares the two on
 * millions of values and every halfway case. */
#ifndef COMMSCHED_FMT_G_H
#define COMMSCHED_FMT_G_H

#include <stddef.h>
#include <stdint.h>

/* Room for any "%.*g" of a double with precision <= 17. */
#define CS_FMT_G_SIZE 32

/* Writes snprintf(buf, CS_FMT_G_SIZE, "%.*g", precision, d)'s text (the
 * "C" locale's decimal point) and returns its length. precision: 1..17. */
size_t cs_fmt_g(char buf[CS_FMT_G_SIZE], double d, int precision);

/* Writes snprintf's "%.0f" of d and returns its length: the integer part
 * and the exact remainder compared with one half, ties to even (glibc's
 * rounding in the default mode); infinities and NaN go to snprintf.
 * d: below 1e19 in magnitude or not finite (the result fits). The
 * overlap pass's per-collective text writes two of these a collective,
 * where glibc's %.0f was ~7,000 instructions each. */
size_t cs_fmt_f0(char buf[CS_FMT_G_SIZE], double d);

/* Writes v in decimal (printf's "%" PRIu64) and returns its length. */
size_t cs_fmt_u64(char buf[CS_FMT_G_SIZE], uint64_t v);

#endif /* COMMSCHED_FMT_G_H */
