/* Seed 001's all-reduce (src/runtime/ring_allreduce.c) against
 * MPI_Allreduce: on integers the results must be equal bit for bit, for
 * the ring and for the naive algorithm, in place and not, for element
 * counts around tinygrad's chunking (factors of 32, uneven remainders,
 * fewer elements than ranks, none) and for every reduction. Run under
 * mpirun with 2, 3 and 4 ranks (tests/mpi/mpi_tests.py ring-vs-mpi).
 *
 * A third result keeps both honest: every rank gathers all inputs and
 * folds them in rank order with wrap-around arithmetic written here. Ours
 * must always equal it, and equal MPI_Allreduce wherever MPI_Allreduce
 * equals it. Open MPI 4.1.4's op/avx component saturates unsigned 16-bit
 * sums (65535 instead of the wrapped value) inside MPI_Allreduce; those
 * cases are counted and printed, not failed: the library is wrong there,
 * not the ring. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_allreduce.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

typedef struct type {
    MPI_Datatype dt;
    size_t es;
    int is_signed;
    const char *name;
} type;

static uint64_t load(const unsigned char *p, size_t es)
{
    uint64_t v = 0;
    memcpy(&v, p, es); /* little-endian hosts: the low bytes */
    return v;
}

static int64_t as_signed(uint64_t v, size_t es)
{
    if (es == 8)
        return (int64_t)v;
    uint64_t sign = 1ull << (es * 8 - 1);
    return (int64_t)((v ^ sign) - sign);
}

/* a op b in the type, wrapping. */
static uint64_t fold(const type *t, MPI_Op op, uint64_t a, uint64_t b)
{
    uint64_t mask = t->es == 8 ? ~0ull : (1ull << (t->es * 8)) - 1;
    if (op == MPI_SUM)
        return (a + b) & mask;
    if (op == MPI_PROD)
        return (a * b) & mask;
    int a_less = t->is_signed ? as_signed(a, t->es) < as_signed(b, t->es)
                              : a < b;
    if (op == MPI_MIN)
        return a_less ? a : b;
    return a_less ? b : a;
}

static void reference(const type *t, MPI_Op op, const unsigned char *in,
                      size_t count, int size, unsigned char *ref)
{
    size_t bytes = count * t->es;
    unsigned char *all = malloc(bytes * (size_t)size + 1);
    MPI_Allgather(in, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (size_t i = 0; i < count; i++) {
        uint64_t acc = load(all + i * t->es, t->es);
        for (int r = 1; r < size; r++)
            acc = fold(t, op, acc, load(all + (size_t)r * bytes + i * t->es, t->es));
        memcpy(ref + i * t->es, &acc, t->es);
    }
    free(all);
}

static int mpi_wrong; /* cases where MPI_Allreduce disagrees with us and
                         the reference (counted on every rank alike) */

static int run_one(const type *t, MPI_Op op, size_t count, int algo,
                   int in_place, int rank, int size)
{
    size_t es = t->es, bytes = count * es + 8;
    unsigned char *in = malloc(bytes), *out = malloc(bytes),
                  *mpi = malloc(bytes), *ref = malloc(bytes);
    for (size_t i = 0; i < count * es; i++)
        in[i] = (unsigned char)mix((uint64_t)rank * 1000003u + i);
    if (op == MPI_PROD) /* odd values: products do not collapse to 0 */
        for (size_t i = 0; i < count * es; i += es)
            in[i] |= 1;
    memset(out, 0xAB, bytes);
    MPI_Allreduce(in, mpi, (int)count, t->dt, op, MPI_COMM_WORLD);
    reference(t, op, in, count, size, ref);
    cs_ring r;
    int use = algo == 0   ? 0
              : algo == 1 ? cs_ring_use_ring(size, count, 256000, 0)
                          : 1;
    if (cs_ring_init(&r, MPI_COMM_WORLD, 7, t->dt, es, op, count, use) !=
        MPI_SUCCESS) {
        fprintf(stderr, "cs_ring_init failed\n");
        return 1;
    }
    if (in_place)
        memcpy(out, in, count * es);
    cs_ring_start(&r, in_place ? NULL : in, out);
    int done = 0;
    while (!done)
        cs_ring_test(&r, &done);
    cs_ring_fini(&r);
    int bad_ref = memcmp(out, ref, count * es) != 0;
    int mpi_ok = memcmp(mpi, ref, count * es) == 0;
    int bad_mpi = mpi_ok && memcmp(out, mpi, count * es) != 0;
    int flags[3] = {bad_ref, bad_mpi, !mpi_ok}, any[3];
    MPI_Allreduce(flags, any, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if ((any[0] || any[1]) && rank == 0)
        fprintf(stderr, "MISMATCH: %s, op %d, count %zu, algo %d, in place %d, "
                        "ranks %d (vs reference %d, vs MPI %d)\n",
                t->name, (int)(op == MPI_SUM ? 0 : op == MPI_PROD ? 1 : op == MPI_MIN ? 2 : 3),
                count, algo, in_place, size, any[0], any[1]);
    mpi_wrong += any[2];
    free(in);
    free(out);
    free(mpi);
    free(ref);
    return any[0] || any[1];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, fails = 0, runs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const size_t counts[] = {0, 1, 2, 3, 5, 31, 32, 33, 96, 1000,
                                    4097, 256000, 256001, 300007};
    const type types[] = {{MPI_INT32_T, 4, 1, "int32"},
                          {MPI_INT64_T, 8, 1, "int64"},
                          {MPI_UINT8_T, 1, 0, "uint8"},
                          {MPI_UINT16_T, 2, 0, "uint16"},
                          {MPI_INT8_T, 1, 1, "int8"}};
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (int algo = 0; algo < 3; algo++) {
                    /* the big counts (tinygrad's threshold): sums of
                     * int32 and uint8, ring paths only */
                    if (counts[c] > 5000 &&
                        (o != 0 || algo == 0 || (t != 0 && t != 2)))
                        continue;
                    fails += run_one(&types[t], ops[o], counts[c], algo,
                                     (int)(c & 1), rank, size);
                    runs++;
                }
    if (rank == 0) {
        printf("ring/naive all-reduce vs MPI_Allreduce on %d ranks: %d "
               "cases, %d mismatches\n",
               size, runs, fails);
        if (mpi_wrong)
            printf("(MPI_Allreduce itself disagreed with the wrap-around "
                   "reference in %d cases: Open MPI's op/avx saturating "
                   "unsigned sums)\n",
                   mpi_wrong);
    }
    MPI_Finalize();
    return fails != 0;
}
