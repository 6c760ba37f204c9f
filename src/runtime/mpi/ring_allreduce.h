/* commsched — tinygrad's all-reduce (seed 001, multi.py all_reduce) over MPI
 * point-to-point messages, as a non-blocking state machine the runtime
 * drives from its progress loop. Internal; only src/runtime/ and
 * tests/mpi/ include it (it needs mpi.h).
 *
 * - ring: the buffer is cut into one chunk per rank (sizes a multiple of
 *   the largest of 32, 16, 8, 4, 2, 1 dividing the element count, the first
 *   `left` chunks one unit larger, empty chunks dropped); n-1 reduce-scatter
 *   steps (rank r sends chunk (r-s) mod n to r+1 and reduces chunk
 *   (r-s-1) mod n from r-1 into its own) and n-1 all-gather steps (sends
 *   chunk (r-s+1) mod n, receives chunk (r-s) mod n in place);
 * - naive: every rank sends its whole buffer to every other rank and
 *   reduces the n buffers in rank order, ((b0 op b1) op b2) ...
 * tinygrad uses the ring only with more than two ranks and more than
 * RING_ALLREDUCE_THRESHOLD (256000) elements, or always with RING=2.
 *
 * Both give every rank the same bits, and with integers the same bits as
 * MPI_Allreduce (integer reduction is associative). */
#ifndef COMMSCHED_RING_ALLREDUCE_H
#define COMMSCHED_RING_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_ring {
    MPI_Comm comm;
    int rank, size, tag;
    MPI_Datatype dt;
    MPI_Op op;
    size_t elem, count;  /* element size, element count */
    int use_ring;        /* 1 ring, 0 naive */
    size_t n_chunks;
    size_t *chunk_off, *chunk_len; /* elements */
    char *tmp;           /* ring: one chunk; naive: size x count */
    char *buf;           /* the result buffer of the current run */
    int phase;           /* 0 reduce-scatter, 1 all-gather, 2 done */
    int step;
    int recv_chunk;      /* chunk the pending receive fills, -1 none */
    MPI_Request *req;
    int n_req;
} cs_ring;

/* Should tinygrad's rule take the ring? always = RING=2. */
int cs_ring_use_ring(int ranks, size_t count, uint64_t threshold,
                     int always);

/* Prepares an all-reduce of `count` elements of `dt` (element size `elem`)
 * with `op` over comm, using tag for its messages. Allocates the chunk
 * table and scratch; returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
int cs_ring_init(cs_ring *r, MPI_Comm comm, int tag, MPI_Datatype dt,
                 size_t elem, MPI_Op op, size_t count, int use_ring);
void cs_ring_fini(cs_ring *r);

/* Starts one all-reduce: sendbuf (NULL or == recvbuf: in place) is copied
 * into recvbuf, which receives the result. Posts the first messages. */
int cs_ring_start(cs_ring *r, const void *sendbuf, void *recvbuf);

/* Advances as far as the arrived messages allow; *done becomes 1 when the
 * result is complete. Never blocks. */
int cs_ring_test(cs_ring *r, int *done);

#endif /* COMMSCHED_RING_ALLREDUCE_H */
