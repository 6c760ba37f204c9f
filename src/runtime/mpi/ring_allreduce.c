/* commsched — seed 001's ring and naive all-reduce over MPI point to point
 * (ring_allreduce.h). Each step posts at most one send and one receive per
 * neighbour (ring) or all of them at once (naive); cs_ring_test moves on
 * when the step's requests complete, so the all-reduce overlaps whatever
 * the caller does between tests, like a collective on its own stream.
 * Reductions are typed loops for the datatypes the runtime uses, not
 * MPI_Reduce_local: Open MPI 4.1.4's op/avx component saturates unsigned
 * 8- and 16-bit sums there (255 + 1 = 255 at vector-aligned positions)
 * while MPI_Allreduce wraps, so the library's own local reduction would
 * break "equal to MPI_Allreduce bit for bit". Other datatypes fall back to
 * MPI_Reduce_local. */
#include "ring_allreduce.h"

#include <stdlib.h>
#include <string.h>

/* inout[i] = in[i] op inout[i]. Integer arithmetic runs in an unsigned
 * type at least as wide as int (no promotion to signed int, so no
 * undefined overflow) and wraps, as MPI's reductions do. */
#define CS_REDUCE_INT(T, U)                                                    \
    do {                                                                       \
        const T *a = in;                                                       \
        T *b = inout;                                                          \
        if (op == MPI_SUM)                                                     \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = (T)((U)a[i] + (U)b[i]);                                 \
        else if (op == MPI_PROD)                                               \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = (T)((U)a[i] * (U)b[i]);                                 \
        else if (op == MPI_MIN)                                                \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] < b[i] ? a[i] : b[i];                              \
        else if (op == MPI_MAX)                                                \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] > b[i] ? a[i] : b[i];                              \
        else                                                                   \
            break;                                                             \
        return MPI_SUCCESS;                                                    \
    } while (0)

#define CS_REDUCE_FLOAT(T)                                                     \
    do {                                                                       \
        const T *a = in;                                                       \
        T *b = inout;                                                          \
        if (op == MPI_SUM)                                                     \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] + b[i];                                            \
        else if (op == MPI_PROD)                                               \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] * b[i];                                            \
        else if (op == MPI_MIN)                                                \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] < b[i] ? a[i] : b[i];                              \
        else if (op == MPI_MAX)                                                \
            for (size_t i = 0; i < n; i++)                                     \
                b[i] = a[i] > b[i] ? a[i] : b[i];                              \
        else                                                                   \
            break;                                                             \
        return MPI_SUCCESS;                                                    \
    } while (0)

static int reduce_local(const void *in, void *inout, size_t n,
                        MPI_Datatype dt, MPI_Op op)
{
    if (dt == MPI_INT8_T)
        CS_REDUCE_INT(int8_t, unsigned);
    else if (dt == MPI_UINT8_T)
        CS_REDUCE_INT(uint8_t, unsigned);
    else if (dt == MPI_INT16_T)
        CS_REDUCE_INT(int16_t, unsigned);
    else if (dt == MPI_UINT16_T)
        CS_REDUCE_INT(uint16_t, unsigned);
    else if (dt == MPI_INT32_T)
        CS_REDUCE_INT(int32_t, uint32_t);
    else if (dt == MPI_UINT32_T)
        CS_REDUCE_INT(uint32_t, uint32_t);
    else if (dt == MPI_INT64_T)
        CS_REDUCE_INT(int64_t, uint64_t);
    else if (dt == MPI_UINT64_T)
        CS_REDUCE_INT(uint64_t, uint64_t);
    else if (dt == MPI_FLOAT)
        CS_REDUCE_FLOAT(float);
    else if (dt == MPI_DOUBLE)
        CS_REDUCE_FLOAT(double);
    return MPI_Reduce_local(in, inout, (int)n, dt, op);
}

int cs_ring_use_ring(int ranks, size_t count, uint64_t threshold, int always)
{
    if (ranks < 2)
        return 0;
    return always || (ranks > 2 && (uint64_t)count > threshold);
}

void cs_ring_fini(cs_ring *r)
{
    if (!r)
        return;
    free(r->chunk_off);
    free(r->chunk_len);
    free(r->tmp);
    free(r->req);
    memset(r, 0, sizeof *r);
}

int cs_ring_init(cs_ring *r, MPI_Comm comm, int tag, MPI_Datatype dt,
                 size_t elem, MPI_Op op, size_t count, int use_ring)
{
    memset(r, 0, sizeof *r);
    r->comm = comm;
    r->tag = tag;
    r->dt = dt;
    r->elem = elem;
    r->op = op;
    r->count = count;
    r->phase = 2;
    r->recv_chunk = -1;
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->size);
    size_t n = (size_t)r->size;
    r->use_ring = use_ring && n > 1;
    if (r->use_ring) {
        /* tinygrad: factor = next(f for f in [32,16,8,4,2,1] if numel % f
         * == 0); base, left = (numel // factor) // n, (...) % n;
         * sizes [(base+1)*factor]*left + [base*factor]*(n-left), empty
         * chunks dropped. */
        static const size_t factors[] = {32, 16, 8, 4, 2, 1};
        size_t factor = 1;
        for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
            if (count % factors[i] == 0) {
                factor = factors[i];
                break;
            }
        size_t base = (count / factor) / n, left = (count / factor) % n;
        r->chunk_off = calloc(n, sizeof *r->chunk_off);
        r->chunk_len = calloc(n, sizeof *r->chunk_len);
        if (!r->chunk_off || !r->chunk_len)
            goto nomem;
        size_t acc = 0, max_len = 0;
        for (size_t i = 0; i < n; i++) {
            size_t len = (i < left ? base + 1 : base) * factor;
            if (len == 0)
                continue;
            r->chunk_off[r->n_chunks] = acc;
            r->chunk_len[r->n_chunks++] = len;
            acc += len;
            if (len > max_len)
                max_len = len;
        }
        r->tmp = malloc(max_len * elem + 1);
        r->req = calloc(2, sizeof *r->req);
    } else {
        r->tmp = malloc(n * count * elem + 1);
        r->req = calloc(2 * n, sizeof *r->req);
    }
    if (!r->tmp || !r->req)
        goto nomem;
    return MPI_SUCCESS;
nomem:
    cs_ring_fini(r);
    return MPI_ERR_NO_MEM;
}

static int prev_rank(const cs_ring *r) { return (r->rank + r->size - 1) % r->size; }
static int next_rank(const cs_ring *r) { return (r->rank + 1) % r->size; }

/* Posts step r->step of r->phase. */
static int post_step(cs_ring *r)
{
    int n = r->size, s = r->step, rc;
    /* Reduce-scatter step s: send (r-s), receive (r-s-1) into tmp.
     * All-gather step s: send (r-s+1), receive (r-s) in place. */
    int send_i = r->phase == 0 ? ((r->rank - s) % n + n) % n
                               : ((r->rank - s + 1) % n + n) % n;
    int recv_i = r->phase == 0 ? ((r->rank - s - 1) % n + 2 * n) % n
                               : ((r->rank - s) % n + n) % n;
    r->n_req = 0;
    r->recv_chunk = -1;
    if ((size_t)recv_i < r->n_chunks) {
        void *dst = r->phase == 0
                        ? (void *)r->tmp
                        : (void *)(r->buf + r->chunk_off[recv_i] * r->elem);
        rc = MPI_Irecv(dst, (int)r->chunk_len[recv_i], r->dt, prev_rank(r),
                       r->tag, r->comm, &r->req[r->n_req++]);
        if (rc != MPI_SUCCESS)
            return rc;
        r->recv_chunk = recv_i;
    }
    if ((size_t)send_i < r->n_chunks) {
        rc = MPI_Isend(r->buf + r->chunk_off[send_i] * r->elem,
                       (int)r->chunk_len[send_i], r->dt, next_rank(r), r->tag,
                       r->comm, &r->req[r->n_req++]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int cs_ring_start(cs_ring *r, const void *sendbuf, void *recvbuf)
{
    r->buf = recvbuf;
    if (sendbuf && sendbuf != recvbuf && r->count > 0)
        memcpy(recvbuf, sendbuf, r->count * r->elem);
    r->phase = 0;
    r->step = 0;
    r->n_req = 0;
    if (r->size < 2 || r->count == 0) {
        r->phase = 2;
        return MPI_SUCCESS;
    }
    if (r->use_ring)
        return post_step(r);
    /* Naive: slot j of tmp holds rank j's buffer. */
    int n = r->size, rc;
    size_t bytes = r->count * r->elem;
    memcpy(r->tmp + (size_t)r->rank * bytes, recvbuf, bytes);
    for (int j = 0; j < n; j++) {
        if (j == r->rank)
            continue;
        rc = MPI_Irecv(r->tmp + (size_t)j * bytes, (int)r->count, r->dt, j,
                       r->tag, r->comm, &r->req[r->n_req++]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    for (int j = 0; j < n; j++) {
        if (j == r->rank)
            continue;
        rc = MPI_Isend(r->tmp + (size_t)r->rank * bytes, (int)r->count, r->dt,
                       j, r->tag, r->comm, &r->req[r->n_req++]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int cs_ring_test(cs_ring *r, int *done)
{
    *done = r->phase == 2;
    while (r->phase != 2) {
        int flag = 1, rc;
        if (r->n_req > 0) {
            rc = MPI_Testall(r->n_req, r->req, &flag, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        if (!flag)
            return MPI_SUCCESS;
        if (!r->use_ring) {
            /* ((b0 op b1) op b2) ...: reduce_local(in, inout) computes
             * inout = in op inout, the same bits for the commutative
             * predefined operations. */
            size_t bytes = r->count * r->elem;
            memcpy(r->buf, r->tmp, bytes);
            for (int j = 1; j < r->size; j++) {
                rc = reduce_local(r->tmp + (size_t)j * bytes, r->buf,
                                  r->count, r->dt, r->op);
                if (rc != MPI_SUCCESS)
                    return rc;
            }
            r->phase = 2;
            break;
        }
        if (r->phase == 0 && r->recv_chunk >= 0) {
            /* tinygrad: chunked[dest][i] = chunked[dest][i].alu(bop, src) */
            size_t c = (size_t)r->recv_chunk;
            rc = reduce_local(r->tmp, r->buf + r->chunk_off[c] * r->elem,
                              r->chunk_len[c], r->dt, r->op);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        if (++r->step == r->size - 1) {
            r->step = 0;
            if (++r->phase == 2)
                break;
        }
        rc = post_step(r);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    *done = r->phase == 2;
    return MPI_SUCCESS;
}
