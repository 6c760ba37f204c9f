/* commsched — the CUDA/NCCL runtime adaptor: the schedule on GPUs as a
 * compiler emits it (docs/RUNTIME.md "The CUDA/NCCL runtime"). The only file
 * of the library that includes CUDA or NCCL headers (the spin kernel is in
 * cuda_kernels.cu).
 *
 * Every GPU is a rank. A job is P processes (one per GPU under mpirun, the
 * usual deployment) or one process driving every GPU of the box (NCCL's
 * "multiple devices per thread": each call wrapped in ncclGroupStart/End);
 * both at once also works: P processes of G GPUs each are P * G ranks,
 * process p's GPU d being rank p * G + d. The processes meet through
 * boot.h (MPI), which carries NCCL's unique id, failure agreement, the
 * preflight and the gathered measurement.
 *
 * Per rank: one NCCL communicator for the world and one per process group
 * (ncclCommSplit: consecutive ranks, as in the MPI adaptor); one compute
 * stream and one stream per group (or one for every collective). The step
 * is lowered once into a stream program (stream_program.c: operations and
 * events, checked for stream-ordering safety in debug builds) which this
 * file interprets:
 * - compute node: a kernel spinning the node's runtime on the SM clock
 *   (calibrated against CUDA events at start-up), or with --compute gemm a
 *   cuBLAS bf16 GEMM of the node's FLOPs (cuBLAS is dlopen'ed then);
 * - async collective: an event recorded on the compute stream at its place
 *   in the order; its group's stream waits for it and runs the NCCL call
 *   (all-to-all as grouped ncclSend/ncclRecv, send/recv as a ring shift);
 *   sync collectives run on the compute stream;
 * - wait: the compute stream waits for the collective's completion event;
 * - buffers: cudaMallocAsync / cudaFreeAsync on the compute stream at the
 *   plan's points, from the device's default pool kept warm between
 *   iterations (a caching allocator); its high-water mark is reported.
 * Times are CUDA events (start, post, end per node) relative to an event
 * recorded after a device-side barrier that starts every iteration.
 *
 * Failures during setup are agreed on by every process and returned;
 * failures in the middle of a step (a CUDA or NCCL error, the watchdog)
 * abort NCCL's communicators and the job, naming the node. */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commsched/runtime.h"
#include "boot.h"
#include "check.h"
#include "check_ref.h"
#include "driver.h"
#include "cuda_kernels.h"
#include "graph_layout.h"
#include "plan.h"
#include "runtime_internal.h"
#include "stream_program.h"

#if COMMSCHED_HAVE_CUBLAS
#include <cublas_v2.h>
#include <dlfcn.h>
#endif

struct commsched_runtime {
    cs_runtime_base base; /* the job; this process, the process count */
    int n_visible;       /* CUDA devices this process sees */
    char library[96];
};

/* ---- cuBLAS, loaded on demand ------------------------------------------------ */

#if COMMSCHED_HAVE_CUBLAS
/* cuBLAS is opened only for --compute gemm: linking it would cost every
 * start of the CLI ~90 ms of loading (libcublasLt is hundreds of MB), for
 * a library most runs never call. */
typedef struct blas_api {
    void *lib;
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t,
                              cublasOperation_t, int, int, int, const void *,
                              const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *,
                              cudaDataType, int, cublasComputeType_t,
                              cublasGemmAlgo_t);
} blas_api;

static commsched_status blas_open(blas_api *b, commsched_error *err)
{
    b->lib = dlopen(COMMSCHED_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!b->lib)
        return commsched_error_set(err, COMMSCHED_EUNSUPPORTED, NULL,
                                   "--compute gemm: cannot load %s: %s",
                                   COMMSCHED_CUBLAS_SONAME, dlerror());
    /* POSIX guarantees that a function's address survives the trip
     * through void *. */
    *(void **)&b->create = dlsym(b->lib, "cublasCreate_v2");
    *(void **)&b->destroy = dlsym(b->lib, "cublasDestroy_v2");
    *(void **)&b->set_stream = dlsym(b->lib, "cublasSetStream_v2");
    *(void **)&b->gemm_ex = dlsym(b->lib, "cublasGemmEx");
    if (!b->create || !b->destroy || !b->set_stream || !b->gemm_ex)
        return commsched_error_set(err, COMMSCHED_EUNSUPPORTED, NULL,
                                   "--compute gemm: %s lacks the cuBLAS calls "
                                   "it needs",
                                   COMMSCHED_CUBLAS_SONAME);
    return COMMSCHED_OK;
}
#endif

/* ---- time ------------------------------------------------------------------ */

static double now_ns(void) { return cs_driver_now_ns(); }

static void nap_ns(double ns)
{
    struct timespec ts = {(time_t)(ns / 1e9), (long)fmod(ns, 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- the state of one run -------------------------------------------------- */

/* A collective, the same on every rank. */
typedef struct xcoll {
    uint32_t node, group;
    commsched_coll_op op;
    ncclDataType_t dt;
    ncclRedOp_t rop;
    cs_ekind ek;
    cs_rkind rk;
    size_t es;
    cs_coll_shape shape;
} xcoll;

/* A collective on one rank: its private buffers. */
typedef struct dcoll {
    void *scratch;       /* send/recv partner, in-place all-to-all copy */
    void *host_in;       /* --check: pinned image of the private buffer
                            (what a send's ring shift receives into, what
                            a recv's sends), written before every pass */
    void *host_out;      /* --check: pinned copy of the result region */
    int fetched;         /* --check: copied back this pass */
} dcoll;

/* One GPU: one rank. */
typedef struct dev {
    int ordinal, rank;
    cudaStream_t *streams;   /* [n_streams]: 0 computes */
    cudaEvent_t *events;     /* [n_events] */
    cudaMemPool_t pool;
    void **mem;              /* per root buffer */
    ncclComm_t world;
    ncclComm_t *comm;        /* per group */
    int *grank, *gsize;      /* per group */
    void *barrier_buf;       /* one float, the device barrier's operand */
    dcoll *colls;
    cs_check_ref *ref;       /* --check: what this rank must see */
    void **image;            /* --check: per root buffer a collective
                                touches, its pinned values; else NULL */
    double cycles_per_ns;    /* the spin kernel's calibration */
    int64_t live, peak;
#if COMMSCHED_HAVE_CUBLAS
    cublasHandle_t blas;
    void *gemm_a, *gemm_b, *gemm_c;
#endif
} dev;

typedef struct exec {
    commsched_runtime *rt;
    const commsched_graph *g;
    const commsched_run_options *o;
    cs_plan plan;
    cs_sprog prog, calib;
    xcoll *colls;
    uint32_t n_colls;
    uint32_t *coll_of;        /* node -> index in colls, NONE otherwise */
    double *compute_ns;       /* per node: what compute and waits play */
    uint8_t *wait_runtime;    /* per node: a wait that plays a runtime */
    uint32_t *gemm_n;         /* per node: GEMM edge (0: spin instead) */
    uint32_t *gemm_reps;
    uint32_t gemm_max;
#if COMMSCHED_HAVE_CUBLAS
    blas_api blas;
#endif
    dev *devs;
    int ndev, ranks;
    char dummy[64];           /* stands in for absent buffers */
    const char *phase;
    uint32_t iter;
    cs_check_tally tally;
} exec;

/* ---- failures ---------------------------------------------------------------- */

/* A failure in the middle of a step cannot be agreed on (the other ranks
 * may be blocked in NCCL), so it aborts the communicators and the job. */
static void die(exec *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
static void die(exec *x, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "commsched run: process %d: ", x->rt->base.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    for (int d = 0; d < x->ndev; d++) {
        for (uint32_t i = 0; x->devs[d].comm && i < x->g->n_groups; i++)
            if (x->devs[d].comm[i] && x->devs[d].comm[i] != x->devs[d].world)
                ncclCommAbort(x->devs[d].comm[i]);
        if (x->devs[d].world)
            ncclCommAbort(x->devs[d].world);
    }
    cs_boot_abort(x->rt->base.boot, 1);
}

static const char *node_name(const exec *x, uint32_t v)
{
    return v == COMMSCHED_NONE ? "(none)" : x->g->nodes[v].name;
}

static void check_cuda(exec *x, cudaError_t rc, const char *call, uint32_t v,
                       const dev *dv)
{
    if (rc != cudaSuccess)
        die(x, "%s failed at node \"%s\" on rank %d (GPU %d): %s", call,
            node_name(x, v), dv->rank, dv->ordinal, cudaGetErrorString(rc));
}

static void check_nccl(exec *x, ncclResult_t rc, const char *call, uint32_t v)
{
    if (rc != ncclSuccess && rc != ncclInProgress)
        die(x, "%s failed at node \"%s\": %s (%s)", call, node_name(x, v),
            ncclGetErrorString(rc), ncclGetLastError(NULL));
}

/* Setup failures are returned, to be agreed on. */
static commsched_status cuda_fail(commsched_error *err, cudaError_t rc,
                                  const char *call, const dev *dv)
{
    return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                               "%s failed on GPU %d: %s", call, dv->ordinal,
                               cudaGetErrorString(rc));
}

static commsched_status nccl_fail(commsched_error *err, ncclResult_t rc,
                                  const char *call)
{
    return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL, "%s failed: %s (%s)",
                               call, ncclGetErrorString(rc),
                               ncclGetLastError(NULL));
}

/* ---- element types ---------------------------------------------------------- */

/* NCCL has real half and bfloat16; fp8 reductions are not exact, and it
 * has no 16-bit integers, so those move as bytes or halves of their
 * width (same traffic; --check's expectations follow the kind). */
static void dtype_to_nccl(commsched_dtype d, ncclDataType_t *dt, cs_ekind *k)
{
    switch (d) {
    case COMMSCHED_DTYPE_FLOAT64: *dt = ncclFloat64; *k = CS_EK_F64; return;
    case COMMSCHED_DTYPE_FLOAT16:
    case COMMSCHED_DTYPE_INT16: *dt = ncclFloat16; *k = CS_EK_F16; return;
    case COMMSCHED_DTYPE_BFLOAT16: *dt = ncclBfloat16; *k = CS_EK_BF16; return;
    case COMMSCHED_DTYPE_FLOAT8_E4M3FN:
    case COMMSCHED_DTYPE_FLOAT8_E5M2:
    case COMMSCHED_DTYPE_UINT8:
    case COMMSCHED_DTYPE_BOOL: *dt = ncclUint8; *k = CS_EK_U8; return;
    case COMMSCHED_DTYPE_INT64: *dt = ncclInt64; *k = CS_EK_I64; return;
    case COMMSCHED_DTYPE_INT32: *dt = ncclInt32; *k = CS_EK_I32; return;
    case COMMSCHED_DTYPE_INT8: *dt = ncclInt8; *k = CS_EK_I8; return;
    default: *dt = ncclFloat32; *k = CS_EK_F32; return;
    }
}

static ncclRedOp_t rkind_to_nccl(cs_rkind k)
{
    switch (k) {
    case CS_RK_PROD: return ncclProd;
    case CS_RK_MIN: return ncclMin;
    case CS_RK_MAX: return ncclMax;
    default: return ncclSum;
    }
}

/* ---- buffers --------------------------------------------------------------------- */

static char *bufp(exec *x, dev *dv, uint32_t b)
{
    if (b == COMMSCHED_NONE || x->plan.bytes[b] == 0)
        return x->dummy;
    if (!dv->mem[b])
        die(x, "internal: buffer \"%s\" is used while not allocated",
            x->g->buffers[b].name);
    return dv->mem[b];
}

/* A collective's send and receive buffers on one rank. */
static void coll_bufs(exec *x, dev *dv, const xcoll *c, char **sb, char **rb)
{
    *sb = bufp(x, dv, x->plan.coll[c->node].in);
    *rb = bufp(x, dv, x->plan.coll[c->node].out);
}

/* ---- operations -------------------------------------------------------------------- */

static void nccl_collective(exec *x, dev *dv, const xcoll *c, cudaStream_t st)
{
    ncclComm_t comm = dv->comm[c->group];
    int k = dv->gsize[c->group], r = dv->grank[c->group];
    size_t n = c->shape.count, chunk = n * c->es;
    char *sb, *rb;
    coll_bufs(x, dv, c, &sb, &rb);
    dcoll *dc = &dv->colls[x->coll_of[c->node]];
    int ip = c->shape.in_place;
    ncclResult_t rc = ncclSuccess;
    const char *call = "";
    switch (c->op) {
    case COMMSCHED_COLL_ALL_REDUCE:
        call = "ncclAllReduce";
        rc = ncclAllReduce(ip ? rb : sb, rb, n, c->dt, c->rop, comm, st);
        break;
    case COMMSCHED_COLL_ALL_GATHER:
        call = "ncclAllGather";
        rc = ncclAllGather(ip ? rb + chunk * (size_t)r : sb, rb, n, c->dt,
                           comm, st);
        break;
    case COMMSCHED_COLL_REDUCE_SCATTER:
        call = "ncclReduceScatter";
        rc = ip ? ncclReduceScatter(rb, rb + chunk * (size_t)r, n, c->dt,
                                    c->rop, comm, st)
                : ncclReduceScatter(sb, rb, n, c->dt, c->rop, comm, st);
        break;
    case COMMSCHED_COLL_ALL_TO_ALL: {
        call = "ncclSend/ncclRecv (all-to-all)";
        const char *src = sb;
        if (ip) { /* NCCL has no in-place all-to-all: send from a copy */
            check_cuda(x,
                       cudaMemcpyAsync(dc->scratch, rb, chunk * (size_t)k,
                                       cudaMemcpyDeviceToDevice, st),
                       "cudaMemcpyAsync", c->node, dv);
            src = dc->scratch;
        }
        rc = ncclGroupStart();
        for (int j = 0; j < k && rc == ncclSuccess; j++) {
            rc = ncclSend(src + chunk * (size_t)j, n, c->dt, j, comm, st);
            if (rc == ncclSuccess)
                rc = ncclRecv(rb + chunk * (size_t)j, n, c->dt, j, comm, st);
        }
        ncclResult_t end = ncclGroupEnd();
        if (rc == ncclSuccess)
            rc = end;
        break;
    }
    case COMMSCHED_COLL_BROADCAST:
        call = "ncclBroadcast";
        rc = ncclBroadcast(sb, rb, n, c->dt, 0, comm, st);
        break;
    case COMMSCHED_COLL_REDUCE:
        call = "ncclReduce";
        rc = ncclReduce(sb, rb, n, c->dt, c->rop, 0, comm, st);
        break;
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV: {
        /* A ring shift, as in the MPI adaptor: every rank sends to the next
         * rank of its group and receives from the previous one. */
        call = c->op == COMMSCHED_COLL_SEND ? "ncclSend" : "ncclRecv";
        void *out = c->op == COMMSCHED_COLL_SEND ? (void *)sb : dc->scratch;
        void *in = c->op == COMMSCHED_COLL_SEND ? dc->scratch : (void *)rb;
        rc = ncclGroupStart();
        if (rc == ncclSuccess)
            rc = ncclSend(out, n, c->dt, (r + 1) % k, comm, st);
        if (rc == ncclSuccess)
            rc = ncclRecv(in, n, c->dt, (r + k - 1) % k, comm, st);
        ncclResult_t end = ncclGroupEnd();
        if (rc == ncclSuccess)
            rc = end;
        break;
    }
    case COMMSCHED_COLL_BARRIER:
        call = "ncclAllReduce (barrier)";
        rc = ncclAllReduce(dv->barrier_buf, dv->barrier_buf, 1, ncclFloat32,
                           ncclSum, comm, st);
        break;
    default:
        die(x, "node \"%s\": unknown collective", node_name(x, c->node));
    }
    check_nccl(x, rc, call, c->node);
}

static void run_compute(exec *x, dev *dv, uint32_t v, cudaStream_t st)
{
#if COMMSCHED_HAVE_CUBLAS
    if (x->o->compute == COMMSCHED_COMPUTE_GEMM && x->gemm_n[v]) {
        int e = (int)x->gemm_n[v];
        float one = 1.0f, zero = 0.0f;
        if (x->blas.set_stream(dv->blas, st) != CUBLAS_STATUS_SUCCESS)
            die(x, "cublasSetStream failed at node \"%s\"", node_name(x, v));
        for (uint32_t i = 0; i < x->gemm_reps[v]; i++) {
            cublasStatus_t s = x->blas.gemm_ex(
                dv->blas, CUBLAS_OP_N, CUBLAS_OP_N, e, e, e, &one, dv->gemm_a,
                CUDA_R_16BF, e, dv->gemm_b, CUDA_R_16BF, e, &zero, dv->gemm_c,
                CUDA_R_16BF, e, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            if (s != CUBLAS_STATUS_SUCCESS)
                die(x, "cublasGemmEx failed at node \"%s\" (status %d)",
                    node_name(x, v), (int)s);
        }
        return;
    }
#endif
    double cycles = x->compute_ns[v] * dv->cycles_per_ns;
    if (cycles >= 1)
        check_cuda(x, cs_cuda_spin((long long)cycles, st), "the spin kernel",
                   v, dv);
}

/* --check writes root buffer b's values (check_ref.h: per buffer, once
 * per step), right after its allocation or, for a run-long input, at the
 * step's start. Buffers no collective touches keep what they hold. */
static void fill(exec *x, dev *dv, uint32_t b, cudaStream_t st)
{
    if (!dv->image[b])
        return;
    check_cuda(x,
               cudaMemcpyAsync(bufp(x, dv, b), dv->image[b],
                               (size_t)x->plan.bytes[b],
                               cudaMemcpyHostToDevice, st),
               "cudaMemcpyAsync (--check)", COMMSCHED_NONE, dv);
}

/* Copies collective v's result region (cs_check_ref_region) to the host
 * once the program has ordered it after the collective. */
static void fetch(exec *x, dev *dv, uint32_t v, cudaStream_t st)
{
    dcoll *dc = &dv->colls[x->coll_of[v]];
    uint32_t b;
    size_t off, len;
    cs_check_ref_region(dv->ref, v, &b, &off, &len);
    if (len) {
        const char *src = b == COMMSCHED_NONE ? (const char *)dc->scratch
                                              : bufp(x, dv, b) + off;
        check_cuda(x,
                   cudaMemcpyAsync(dc->host_out, src, len,
                                   cudaMemcpyDeviceToHost, st),
                   "cudaMemcpyAsync (--check)", v, dv);
    }
    dc->fetched = 1;
}

/* After the pass: every fetched result against the host reference. */
static void verify(exec *x, dev *dv)
{
    for (uint32_t i = 0; i < x->n_colls; i++) {
        dcoll *dc = &dv->colls[i];
        if (!dc->fetched)
            continue;
        dc->fetched = 0;
        uint32_t v = x->colls[i].node, b;
        size_t off, len;
        cs_check_ref_region(dv->ref, v, &b, &off, &len);
        double want = 0, got = 0;
        long at = len ? cs_check_ref_verify(dv->ref, v, dc->host_out, &want,
                                            &got)
                      : -1;
        x->tally.checked++;
        if (at < 0)
            continue;
        if (x->tally.mismatches++ == 0)
            snprintf(x->tally.first_mismatch, sizeof x->tally.first_mismatch,
                     "\"%s\" (%s) on rank %d, %s %u, element %ld: expected "
                     "%.17g, got %.17g",
                     node_name(x, v), commsched_coll_op_str(x->colls[i].op),
                     dv->rank, x->phase, x->iter, at, want, got);
    }
}

/* One operation of the program on every local GPU. Collectives of several
 * GPUs driven by one thread go in one NCCL group, or the first would wait
 * for its peers forever. */
static void run_op(exec *x, const cs_sop *op)
{
    int grouped = op->kind == CS_SOP_COLL || op->kind == CS_SOP_BARRIER;
    if (grouped && x->ndev > 1)
        check_nccl(x, ncclGroupStart(), "ncclGroupStart", COMMSCHED_NONE);
    for (int d = 0; d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        cudaStream_t st = dv->streams[op->stream];
        uint32_t a = op->arg;
        if (x->ndev > 1)
            check_cuda(x, cudaSetDevice(dv->ordinal), "cudaSetDevice",
                       COMMSCHED_NONE, dv);
        switch ((cs_sop_kind)op->kind) {
        case CS_SOP_ALLOC: {
            int64_t n = x->plan.bytes[a];
            cudaError_t rc = cudaMallocAsync(&dv->mem[a], (size_t)n, st);
            if (rc != cudaSuccess)
                die(x, "cannot allocate %lld bytes for buffer \"%s\" on rank "
                    "%d (GPU %d): %s (try a smaller --size-scale)",
                    (long long)n, x->g->buffers[a].name, dv->rank, dv->ordinal,
                    cudaGetErrorString(rc));
            dv->live += n;
            if (dv->live > dv->peak)
                dv->peak = dv->live;
            break;
        }
        case CS_SOP_FREE:
            check_cuda(x, cudaFreeAsync(dv->mem[a], st), "cudaFreeAsync",
                       COMMSCHED_NONE, dv);
            dv->mem[a] = NULL;
            dv->live -= x->plan.bytes[a];
            break;
        case CS_SOP_RECORD:
            check_cuda(x, cudaEventRecord(dv->events[a], st), "cudaEventRecord",
                       a < 3 * x->plan.n ? a / 3 : COMMSCHED_NONE, dv);
            break;
        case CS_SOP_WAIT:
            check_cuda(x, cudaStreamWaitEvent(st, dv->events[a], 0),
                       "cudaStreamWaitEvent",
                       a < 3 * x->plan.n ? a / 3 : COMMSCHED_NONE, dv);
            break;
        case CS_SOP_COMPUTE: run_compute(x, dv, a, st); break;
        case CS_SOP_COLL: nccl_collective(x, dv, &x->colls[x->coll_of[a]], st); break;
        case CS_SOP_BARRIER:
            check_nccl(x,
                       ncclAllReduce(dv->barrier_buf, dv->barrier_buf, 1,
                                     ncclFloat32, ncclSum,
                                     a == CS_SPROG_WORLD ? dv->world
                                                         : dv->comm[a],
                                     st),
                       "ncclAllReduce (barrier)", COMMSCHED_NONE);
            break;
        case CS_SOP_FILL: fill(x, dv, a, st); break;
        case CS_SOP_FETCH: fetch(x, dv, a, st); break;
        }
    }
    if (grouped && x->ndev > 1)
        check_nccl(x, ncclGroupEnd(), "ncclGroupEnd", COMMSCHED_NONE);
}

/* The first node of the order whose end event has not happened on dv. */
static uint32_t stuck_node(exec *x, dev *dv)
{
    for (uint32_t k = 0; k < x->plan.n; k++) {
        uint32_t v = x->plan.order[k];
        if (cudaEventQuery(dv->events[cs_sprog_event(v, CS_EV_END)]) ==
            cudaErrorNotReady)
            return v;
    }
    return COMMSCHED_NONE;
}

/* Waits for every local GPU to finish the pass, under the watchdog, and
 * surfaces NCCL's asynchronous errors (a peer gone, a network failure). */
static void finish_pass(exec *x, const cs_sprog *sp)
{
    double poll = x->o->poll_us > 0 ? x->o->poll_us * 1e3 : 20e3;
    double deadline = x->o->timeout_s > 0 ? now_ns() + x->o->timeout_s * 1e9
                                          : INFINITY;
    for (int d = 0; d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        for (;;) {
            cudaError_t rc = cudaEventQuery(dv->events[sp->ev_iter_end]);
            if (rc == cudaSuccess)
                break;
            if (rc != cudaErrorNotReady)
                die(x, "rank %d (GPU %d) failed in %s %u: %s", dv->rank,
                    dv->ordinal, x->phase, x->iter, cudaGetErrorString(rc));
            ncclResult_t async = ncclSuccess;
            ncclCommGetAsyncError(dv->world, &async);
            for (uint32_t i = 0; async == ncclSuccess && i < x->g->n_groups; i++)
                ncclCommGetAsyncError(dv->comm[i], &async);
            if (async != ncclSuccess && async != ncclInProgress)
                die(x, "NCCL failed on rank %d (GPU %d) in %s %u: %s (%s)",
                    dv->rank, dv->ordinal, x->phase, x->iter,
                    ncclGetErrorString(async), ncclGetLastError(NULL));
            if (now_ns() > deadline) {
                uint32_t v = stuck_node(x, dv);
                die(x,
                    "watchdog: rank %d (GPU %d) has not finished node \"%s\" "
                    "after %.3g s in %s %u; a rank is stuck or the ranks issue "
                    "collectives in different orders; aborting the job",
                    dv->rank, dv->ordinal, node_name(x, v), x->o->timeout_s,
                    x->phase, x->iter);
            }
            nap_ns(poll);
        }
    }
}

static double elapsed_ns(exec *x, dev *dv, cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    check_cuda(x, cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime",
               COMMSCHED_NONE, dv);
    return (double)ms * 1e6;
}

/* One pass of program sp on every local GPU; per-node times (ns from the
 * iteration's start) into t0/t1/tp[d * n + v], the step into step[d]. */
static void run_pass(exec *x, const cs_sprog *sp, double *t0, double *t1,
                     double *tp, double *step)
{
    if (x->rt->base.size > 1)
        cs_boot_barrier(x->rt->base.boot); /* hosts start enqueuing together */
    /* --check: the private buffers' pre-state, on the compute stream
     * before the program (so before every collective, which its events
     * order after the compute stream's start). */
    for (int d = 0; x->o->check && d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        if (x->ndev > 1)
            check_cuda(x, cudaSetDevice(dv->ordinal), "cudaSetDevice",
                       COMMSCHED_NONE, dv);
        for (uint32_t i = 0; i < x->n_colls; i++)
            if (dv->colls[i].host_in)
                check_cuda(x,
                           cudaMemcpyAsync(dv->colls[i].scratch,
                                           dv->colls[i].host_in,
                                           x->colls[i].shape.scratch_bytes,
                                           cudaMemcpyHostToDevice,
                                           dv->streams[0]),
                           "cudaMemcpyAsync (--check)", x->colls[i].node, dv);
    }
    for (size_t i = 0; i < sp->n_ops; i++)
        run_op(x, &sp->ops[i]);
    finish_pass(x, sp);
    uint32_t n = x->plan.n;
    for (int d = 0; d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        cudaEvent_t s0 = dv->events[sp->ev_iter_start];
        for (uint32_t v = 0; v < n; v++) {
            size_t at = (size_t)d * n + v;
            t0[at] = elapsed_ns(x, dv, s0, dv->events[cs_sprog_event(v, CS_EV_START)]);
            t1[at] = elapsed_ns(x, dv, s0, dv->events[cs_sprog_event(v, CS_EV_END)]);
            tp[at] = x->coll_of[v] != COMMSCHED_NONE
                         ? elapsed_ns(x, dv, s0, dv->events[cs_sprog_event(v, CS_EV_POST)])
                         : t0[at];
        }
        step[d] = elapsed_ns(x, dv, s0, dv->events[sp->ev_iter_end]);
        if (x->o->check)
            verify(x, dv);
    }
}

/* ---- setup ------------------------------------------------------------------------ */

/* Cycles of the SM clock per ns: the slope between two spin lengths timed
 * with events, so the launch's fixed cost cancels. */
static commsched_status calibrate_spin(dev *dv, commsched_error *err)
{
    cudaEvent_t a, b;
    cudaStream_t st = dv->streams[0];
    cudaError_t rc = cudaEventCreate(&a);
    if (rc == cudaSuccess && (rc = cudaEventCreate(&b)) != cudaSuccess)
        cudaEventDestroy(a);
    if (rc != cudaSuccess)
        return cuda_fail(err, rc, "cudaEventCreate", dv);
    const long long lens[2] = {1000000, 5000000};
    double samples[5];
    float ms[2] = {0, 0};
    cs_cuda_spin(lens[0], st); /* the first launch loads the module */
    for (int i = 0; i < 5 && rc == cudaSuccess; i++) {
        for (int j = 0; j < 2 && rc == cudaSuccess; j++) {
            cudaEventRecord(a, st);
            rc = cs_cuda_spin(lens[j], st);
            cudaEventRecord(b, st);
            if (rc == cudaSuccess)
                rc = cudaEventSynchronize(b);
            if (rc == cudaSuccess)
                rc = cudaEventElapsedTime(&ms[j], a, b);
        }
        double dt = ((double)ms[1] - (double)ms[0]) * 1e6;
        samples[i] = dt > 0 ? (double)(lens[1] - lens[0]) / dt : 0;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (rc != cudaSuccess)
        return cuda_fail(err, rc, "the spin kernel's calibration", dv);
    dv->cycles_per_ns = cs_driver_median(samples, 5);
    if (!(dv->cycles_per_ns > 0))
        return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                   "GPU %d: the spin kernel's calibration "
                                   "measured no clock",
                                   dv->ordinal);
    return COMMSCHED_OK;
}

/* Per node: the collective table, what compute plays, GEMM sizes. */
static commsched_status setup_nodes(exec *x, commsched_error *err)
{
    const commsched_graph *g = x->g;
    const commsched_run_options *o = x->o;
    uint32_t n = g->n_nodes;
    x->coll_of = malloc((n ? n : 1) * sizeof *x->coll_of);
    x->colls = calloc(x->plan.n_coll ? x->plan.n_coll : 1, sizeof *x->colls);
    x->compute_ns = calloc(n ? n : 1, sizeof *x->compute_ns);
    x->wait_runtime = calloc(n ? n : 1, 1);
    x->gemm_n = calloc(n ? n : 1, sizeof *x->gemm_n);
    x->gemm_reps = calloc(n ? n : 1, sizeof *x->gemm_reps);
    if (!x->coll_of || !x->colls || !x->compute_ns || !x->wait_runtime ||
        !x->gemm_n || !x->gemm_reps)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = x->plan.order[k];
        const cs_node *nd = &g->nodes[v];
        x->coll_of[v] = COMMSCHED_NONE;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            xcoll *c = &x->colls[x->n_colls];
            x->coll_of[v] = x->n_colls++;
            c->node = v;
            c->group = nd->group;
            c->op = (commsched_coll_op)nd->coll_op;
            dtype_to_nccl((commsched_dtype)nd->dtype, &c->dt, &c->ek);
            c->rk = cs_check_rkind((commsched_reduce_op)nd->reduce_op);
            c->rop = rkind_to_nccl(c->rk);
            c->es = x->plan.coll[v].elem;
            cs_plan_coll_shape(&x->plan, v, g->groups[nd->group].size,
                               &c->shape);
            continue;
        }
        double rt = o->runtime_ns ? o->runtime_ns[v] : 0;
        x->compute_ns[v] = rt > 0 ? rt * o->time_scale : 0;
        x->wait_runtime[v] = nd->kind == COMMSCHED_NODE_WAIT &&
                             x->compute_ns[v] > 0;
        if (o->compute == COMMSCHED_COMPUTE_GEMM &&
            nd->kind == COMMSCHED_NODE_COMPUTE && nd->flops > 0) {
            /* A square GEMM of the node's FLOPs (2 e^3), its edge a multiple
             * of 64 and at most 8192 (three bf16 matrices of 128 MiB),
             * repeated when the FLOPs ask for more. */
            double flops = nd->flops * o->time_scale;
            double e = round(cbrt(flops / 2) / 64) * 64;
            e = fmin(fmax(e, 64), 8192);
            x->gemm_n[v] = (uint32_t)e;
            x->gemm_reps[v] = (uint32_t)fmax(1, round(flops / (2 * e * e * e)));
            if (x->gemm_n[v] > x->gemm_max)
                x->gemm_max = x->gemm_n[v];
        }
    }
    return COMMSCHED_OK;
}

/* Which GPUs this process drives, and how many ranks the job has. */
static commsched_status choose_devices(exec *x, commsched_error *err)
{
    commsched_runtime *rt = x->rt;
    int want = x->o->gpus ? (int)x->o->gpus
               : rt->base.size == 1 ? rt->n_visible : 1;
    int first = cs_boot_local_rank(rt->base.boot) * want;
    if (first + want > rt->n_visible)
        return commsched_error_set(
            err, COMMSCHED_EINVAL, NULL,
            "process %d would drive GPUs %d..%d but this host has %d (%d "
            "process(es) here x %d GPU(s) each; see --gpus)",
            rt->base.rank, first, first + want - 1, rt->n_visible,
            cs_boot_local_size(rt->base.boot), want);
    x->ndev = want;
    x->ranks = want * rt->base.size;
    x->devs = calloc((size_t)want, sizeof *x->devs);
    if (!x->devs)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (int d = 0; d < want; d++) {
        x->devs[d].ordinal = first + d;
        x->devs[d].rank = rt->base.rank * want + d;
    }
    for (uint32_t i = 0; i < x->g->n_groups; i++) {
        const cs_group *gr = &x->g->groups[i];
        if (gr->size > (uint32_t)x->ranks || (uint32_t)x->ranks % gr->size)
            return commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "group \"%s\" of %u ranks does not divide the job's %d GPU "
                "ranks (%d process(es) x %d GPU(s)); groups are formed from "
                "consecutive ranks (docs/RUNTIME.md)",
                gr->name, gr->size, x->ranks, rt->base.size, want);
    }
    return COMMSCHED_OK;
}

/* Streams, events, the pool, the inputs that live for the whole run, and
 * each collective's private buffers, on one GPU. */
static commsched_status setup_device(exec *x, dev *dv, commsched_error *err)
{
    const cs_plan *p = &x->plan;
    const commsched_graph *g = x->g;
    cudaError_t rc = cudaSetDevice(dv->ordinal);
    if (rc != cudaSuccess)
        return cuda_fail(err, rc, "cudaSetDevice", dv);
    dv->streams = calloc(x->prog.n_streams, sizeof *dv->streams);
    dv->events = calloc(x->prog.n_events, sizeof *dv->events);
    dv->mem = calloc(g->n_buffers ? g->n_buffers : 1, sizeof *dv->mem);
    dv->comm = calloc(g->n_groups ? g->n_groups : 1, sizeof *dv->comm);
    dv->grank = calloc(g->n_groups ? g->n_groups : 1, sizeof *dv->grank);
    dv->gsize = calloc(g->n_groups ? g->n_groups : 1, sizeof *dv->gsize);
    dv->colls = calloc(x->n_colls ? x->n_colls : 1, sizeof *dv->colls);
    if (!dv->streams || !dv->events || !dv->mem || !dv->comm || !dv->grank ||
        !dv->gsize || !dv->colls)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t s = 0; s < x->prog.n_streams; s++)
        if ((rc = cudaStreamCreateWithFlags(&dv->streams[s],
                                            cudaStreamNonBlocking)) != cudaSuccess)
            return cuda_fail(err, rc, "cudaStreamCreate", dv);
    for (uint32_t e = 0; e < x->prog.n_events; e++)
        if ((rc = cudaEventCreate(&dv->events[e])) != cudaSuccess)
            return cuda_fail(err, rc, "cudaEventCreate", dv);
    /* A caching allocator: freed blocks stay reserved in the pool, so the
     * next iteration allocates without going to the driver. */
    uint64_t keep = UINT64_MAX;
    if ((rc = cudaDeviceGetDefaultMemPool(&dv->pool, dv->ordinal)) != cudaSuccess ||
        (rc = cudaMemPoolSetAttribute(dv->pool, cudaMemPoolAttrReleaseThreshold,
                                      &keep)) != cudaSuccess)
        return cuda_fail(err, rc, "the memory pool's setup", dv);
    for (uint32_t i = 0; i < p->n_other; i++) {
        uint32_t b = p->other[i];
        if (p->bytes[b] > 0 &&
            (rc = cudaMalloc(&dv->mem[b], (size_t)p->bytes[b])) != cudaSuccess)
            return cuda_fail(err, rc, "cudaMalloc (an input)", dv);
    }
    if ((rc = cudaMalloc(&dv->barrier_buf, sizeof(float))) != cudaSuccess ||
        (rc = cudaMemset(dv->barrier_buf, 0, sizeof(float))) != cudaSuccess)
        return cuda_fail(err, rc, "cudaMalloc", dv);
    return calibrate_spin(dv, err);
}

/* --check's host reference for this GPU's rank (NCCL's in-place
 * reduce-scatter leaves the block at rank * count) and its pinned images:
 * every touched buffer's values, every private buffer's pre-state, room
 * for every result region. */
static commsched_status setup_check(exec *x, dev *dv, commsched_error *err)
{
    const cs_plan *p = &x->plan;
    uint8_t *ek = calloc(p->n ? p->n : 1, 1);
    dv->image = calloc(x->g->n_buffers ? x->g->n_buffers : 1,
                       sizeof *dv->image);
    if (!ek || !dv->image) {
        free(ek);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    for (uint32_t i = 0; i < x->n_colls; i++)
        ek[x->colls[i].node] = (uint8_t)x->colls[i].ek;
    commsched_status st = cs_check_ref_build(&dv->ref, p, x->ranks, dv->rank,
                                             ek, CS_REF_RS_AT_RANK, err);
    free(ek);
    if (st != COMMSCHED_OK)
        return st;
    cudaError_t rc = cudaSuccess;
    for (uint32_t b = 0; b < x->g->n_buffers; b++) {
        if (p->bytes[b] <= 0 || !cs_check_ref_touched(dv->ref, b))
            continue;
        if ((rc = cudaMallocHost(&dv->image[b], (size_t)p->bytes[b])) !=
            cudaSuccess)
            return cuda_fail(err, rc, "cudaMallocHost (--check)", dv);
        cs_check_ref_fill(dv->ref, b, dv->image[b], (size_t)p->bytes[b]);
    }
    for (uint32_t i = 0; i < x->n_colls; i++) {
        const xcoll *c = &x->colls[i];
        dcoll *dc = &dv->colls[i];
        uint32_t b;
        size_t off, len;
        cs_check_ref_region(dv->ref, c->node, &b, &off, &len);
        if (len && (rc = cudaMallocHost(&dc->host_out, len)) != cudaSuccess)
            return cuda_fail(err, rc, "cudaMallocHost (--check)", dv);
        if (c->shape.scratch_bytes && (c->op == COMMSCHED_COLL_SEND ||
                                       c->op == COMMSCHED_COLL_RECV)) {
            if ((rc = cudaMallocHost(&dc->host_in, c->shape.scratch_bytes)) !=
                cudaSuccess)
                return cuda_fail(err, rc, "cudaMallocHost (--check)", dv);
            cs_check_ref_fill_scratch(dv->ref, c->node, dc->host_in,
                                      c->shape.scratch_bytes);
        }
    }
    return COMMSCHED_OK;
}

/* What needs group ranks: scratch and --check's reference and images. */
static commsched_status setup_colls(exec *x, dev *dv, commsched_error *err)
{
    cudaError_t rc = cudaSetDevice(dv->ordinal);
    if (rc != cudaSuccess)
        return cuda_fail(err, rc, "cudaSetDevice", dv);
    for (uint32_t i = 0; i < x->n_colls; i++) {
        const xcoll *c = &x->colls[i];
        dcoll *dc = &dv->colls[i];
        if (c->shape.scratch_bytes &&
            (rc = cudaMalloc(&dc->scratch, c->shape.scratch_bytes)) != cudaSuccess)
            return cuda_fail(err, rc, "cudaMalloc (collective scratch)", dv);
    }
    if (x->o->check) {
        commsched_status st = setup_check(x, dv, err);
        if (st != COMMSCHED_OK)
            return st;
    }
#if COMMSCHED_HAVE_CUBLAS
    if (x->gemm_max) {
        size_t bytes = (size_t)x->gemm_max * x->gemm_max * 2; /* bf16 */
        commsched_status st =
            x->blas.lib ? COMMSCHED_OK : blas_open(&x->blas, err);
        if (st != COMMSCHED_OK)
            return st;
        if (x->blas.create(&dv->blas) != CUBLAS_STATUS_SUCCESS)
            return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                       "cublasCreate failed on GPU %d",
                                       dv->ordinal);
        if ((rc = cudaMalloc(&dv->gemm_a, bytes)) != cudaSuccess ||
            (rc = cudaMalloc(&dv->gemm_b, bytes)) != cudaSuccess ||
            (rc = cudaMalloc(&dv->gemm_c, bytes)) != cudaSuccess ||
            (rc = cudaMemset(dv->gemm_a, 0, bytes)) != cudaSuccess ||
            (rc = cudaMemset(dv->gemm_b, 0, bytes)) != cudaSuccess)
            return cuda_fail(err, rc, "cudaMalloc (GEMM operands)", dv);
    }
#endif
    return COMMSCHED_OK;
}

/* The world communicator (NCCL's unique id from process 0 over boot.h)
 * and one per group, split off it. One thread driving several GPUs
 * creates their communicators inside one NCCL group. */
static commsched_status setup_nccl(exec *x, commsched_error *err)
{
    commsched_runtime *rt = x->rt;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t rc = ncclSuccess;
    long long ok = 1;
    if (rt->base.rank == 0)
        ok = ncclGetUniqueId(&id) == ncclSuccess;
    cs_boot_bcast(rt->base.boot, &ok, sizeof ok, 0);
    if (!ok)
        return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                   "ncclGetUniqueId failed: %s",
                                   ncclGetLastError(NULL));
    cs_boot_bcast(rt->base.boot, &id, sizeof id, 0);
    rc = ncclGroupStart();
    for (int d = 0; d < x->ndev && rc == ncclSuccess; d++) {
        if (cudaSetDevice(x->devs[d].ordinal) != cudaSuccess)
            break;
        rc = ncclCommInitRank(&x->devs[d].world, x->ranks, id, x->devs[d].rank);
    }
    ncclResult_t end = ncclGroupEnd();
    if (rc == ncclSuccess)
        rc = end;
    if (rc != ncclSuccess)
        return nccl_fail(err, rc, "ncclCommInitRank");
    for (uint32_t i = 0; i < x->g->n_groups; i++) {
        int k = (int)x->g->groups[i].size;
        rc = ncclGroupStart();
        for (int d = 0; d < x->ndev && rc == ncclSuccess; d++) {
            dev *dv = &x->devs[d];
            if (k == x->ranks) /* the world itself */
                dv->comm[i] = dv->world;
            else
                rc = ncclCommSplit(dv->world, dv->rank / k, dv->rank,
                                   &dv->comm[i], NULL);
        }
        end = ncclGroupEnd();
        if (rc == ncclSuccess)
            rc = end;
        if (rc != ncclSuccess)
            return nccl_fail(err, rc, "ncclCommSplit");
        for (int d = 0; d < x->ndev; d++) {
            dev *dv = &x->devs[d];
            if ((rc = ncclCommUserRank(dv->comm[i], &dv->grank[i])) !=
                    ncclSuccess ||
                (rc = ncclCommCount(dv->comm[i], &dv->gsize[i])) != ncclSuccess)
                return nccl_fail(err, rc, "ncclCommUserRank/ncclCommCount");
        }
    }
    return COMMSCHED_OK;
}

/* Every communicator this process made, finalized (in one NCCL group:
 * one thread may own several GPUs' communicators) and destroyed. */
static void destroy_comms(exec *x)
{
    uint32_t ng = x->g->n_groups;
    ncclGroupStart();
    for (int d = 0; x->devs && d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        for (uint32_t i = 0; dv->comm && i < ng; i++)
            if (dv->comm[i] && dv->comm[i] != dv->world)
                ncclCommFinalize(dv->comm[i]);
        if (dv->world)
            ncclCommFinalize(dv->world);
    }
    ncclGroupEnd();
    for (int d = 0; x->devs && d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        for (uint32_t i = 0; dv->comm && i < ng; i++)
            if (dv->comm[i] && dv->comm[i] != dv->world)
                ncclCommDestroy(dv->comm[i]);
        if (dv->world)
            ncclCommDestroy(dv->world);
    }
}

static void exec_fini(exec *x)
{
    destroy_comms(x);
    for (int d = 0; x->devs && d < x->ndev; d++) {
        dev *dv = &x->devs[d];
        cudaSetDevice(dv->ordinal);
        cudaDeviceSynchronize();
        for (uint32_t i = 0; dv->colls && i < x->n_colls; i++) {
            cudaFree(dv->colls[i].scratch);
            cudaFreeHost(dv->colls[i].host_in);
            cudaFreeHost(dv->colls[i].host_out);
        }
        for (uint32_t b = 0; dv->image && b < x->g->n_buffers; b++)
            cudaFreeHost(dv->image[b]);
        free(dv->image);
        cs_check_ref_free(dv->ref);
        for (uint32_t b = 0; dv->mem && b < x->g->n_buffers; b++)
            if (dv->mem[b])
                cudaFree(dv->mem[b]);
        for (uint32_t e = 0; dv->events && e < x->prog.n_events; e++)
            if (dv->events[e])
                cudaEventDestroy(dv->events[e]);
        for (uint32_t s = 0; dv->streams && s < x->prog.n_streams; s++)
            if (dv->streams[s])
                cudaStreamDestroy(dv->streams[s]);
        cudaFree(dv->barrier_buf);
#if COMMSCHED_HAVE_CUBLAS
        if (dv->blas)
            x->blas.destroy(dv->blas);
        cudaFree(dv->gemm_a);
        cudaFree(dv->gemm_b);
        cudaFree(dv->gemm_c);
#endif
        free(dv->streams);
        free(dv->events);
        free(dv->mem);
        free(dv->comm);
        free(dv->grank);
        free(dv->gsize);
        free(dv->colls);
    }
#if COMMSCHED_HAVE_CUBLAS
    if (x->blas.lib)
        dlclose(x->blas.lib);
#endif
    free(x->devs);
    free(x->colls);
    free(x->coll_of);
    free(x->compute_ns);
    free(x->wait_runtime);
    free(x->gemm_n);
    free(x->gemm_reps);
    cs_sprog_fini(&x->prog);
    cs_sprog_fini(&x->calib);
    cs_plan_fini(&x->plan);
}

/* Options this adaptor cannot honour, refused before anything starts. */
static commsched_status check_options(const commsched_run_options *o,
                                      commsched_error *err)
{
    commsched_status st = cs_driver_check_options(o, err);
    if (st != COMMSCHED_OK)
        return st;
    if (o->compute == COMMSCHED_COMPUTE_TOUCH)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "--compute touch streams host memory; on "
                                   "GPUs use spin (default) or gemm");
    if (o->compute == COMMSCHED_COMPUTE_GEMM && !COMMSCHED_HAVE_CUBLAS)
        return commsched_error_set(err, COMMSCHED_EUNSUPPORTED, NULL,
                                   "--compute gemm needs cuBLAS, whose header "
                                   "this build did not find");
    if (o->allreduce != COMMSCHED_ALLREDUCE_MPI)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "--allreduce %s is the MPI runtime's; NCCL "
                                   "runs its own all-reduce",
                                   commsched_allreduce_algo_str(o->allreduce));
    return COMMSCHED_OK;
}

static commsched_status setup(exec *x, const uint32_t *order,
                              commsched_error *err)
{
    commsched_status st = check_options(x->o, err);
    if (st == COMMSCHED_OK)
        st = cs_plan_build(&x->plan, x->g, order, x->o->size_scale, err);
    if (st == COMMSCHED_OK)
        st = setup_nodes(x, err);
    if (st == COMMSCHED_OK)
        st = cs_sprog_build(&x->prog, &x->plan, x->o->streams, x->o->check, 0,
                            x->wait_runtime, err);
    if (st == COMMSCHED_OK)
        st = cs_sprog_build(&x->calib, &x->plan, x->o->streams, x->o->check,
                            1, x->wait_runtime, err);
#ifndef NDEBUG
    /* The lowering's invariant, as passes are checked between passes. */
    if (st == COMMSCHED_OK)
        st = cs_sprog_verify(&x->prog, &x->plan, err);
    if (st == COMMSCHED_OK)
        st = cs_sprog_verify(&x->calib, &x->plan, err);
#endif
    if (st == COMMSCHED_OK)
        st = choose_devices(x, err);
    for (int d = 0; st == COMMSCHED_OK && d < x->ndev; d++)
        st = setup_device(x, &x->devs[d], err);
    return st;
}

/* ---- the adaptor ------------------------------------------------------------------ */

static commsched_status cuda_init(int *argc, char ***argv,
                                  commsched_runtime **out, commsched_error *err)
{
    commsched_runtime *rt = NULL;
    commsched_status st = cs_driver_join(argc, argv, sizeof *rt, (void **)&rt, err);
    *out = NULL;
    if (st != COMMSCHED_OK)
        return st;
    cudaError_t rc = cudaGetDeviceCount(&rt->n_visible);
    if (rc != cudaSuccess || rt->n_visible < 1)
        st = commsched_error_set(
            err, COMMSCHED_ENODEV, NULL,
            "no CUDA device on this host (cudaGetDeviceCount: %s); the cuda "
            "runtime needs an NVIDIA GPU and its driver (--runtime mpi runs "
            "on CPUs)",
            rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    /* Every process stops together: none is left waiting in NCCL's setup
     * for one that has no GPU. The context goes back with the failure: the
     * caller prints the message, then fini's barrier lets the processes
     * exit (under mpirun the first to exit non-zero gets the others
     * killed, the message unprinted: seen under load). */
    int lowest = cs_boot_first_failed(rt->base.boot, st != COMMSCHED_OK);
    if (lowest >= 0) {
        if (lowest != rt->base.rank && err) {
            commsched_error_clear(err);
            err->status = COMMSCHED_ENODEV;
        }
        *out = rt;
        return COMMSCHED_ENODEV;
    }
    int nccl = 0, cudart = 0;
    ncclGetVersion(&nccl);
    cudaRuntimeGetVersion(&cudart);
    snprintf(rt->library, sizeof rt->library, "NCCL %d.%d.%d, CUDA %d.%d, %s",
             nccl / 10000, nccl / 100 % 100, nccl % 100, cudart / 1000,
             cudart / 10 % 100, cs_boot_library(rt->base.boot));
    *out = rt;
    return COMMSCHED_OK;
}

/* ---- the driver's operations (driver.h) ------------------------------------------ */

static commsched_status cuda_connect(void *ctx, commsched_error *err)
{
    exec *x = ctx;
    commsched_status st = setup_nccl(x, err);
    for (int d = 0; st == COMMSCHED_OK && d < x->ndev; d++)
        st = setup_colls(x, &x->devs[d], err);
    return st;
}

/* A calibration pass runs the program that times every node alone. */
static void cuda_pass(void *ctx, cs_pass_kind kind, const char *phase,
                      uint32_t iter, double *t0, double *t1, double *tp,
                      double *step)
{
    exec *x = ctx;
    x->phase = phase;
    x->iter = iter;
    run_pass(x, kind == CS_PASS_CALIBRATE ? &x->calib : &x->prog, t0, t1, tp,
             step);
}

static void cuda_measure_begin(void *ctx)
{
    exec *x = ctx;
    for (int d = 0; d < x->ndev; d++) {
        uint64_t zero = 0;
        x->devs[d].peak = x->devs[d].live;
        cudaSetDevice(x->devs[d].ordinal);
        cudaMemPoolSetAttribute(x->devs[d].pool, cudaMemPoolAttrUsedMemHigh,
                                &zero);
    }
}

static void cuda_measure_end(void *ctx, int64_t *peak, int64_t *pool_peak)
{
    exec *x = ctx;
    for (int d = 0; d < x->ndev; d++) {
        uint64_t high = 0;
        cudaSetDevice(x->devs[d].ordinal);
        cudaMemPoolGetAttribute(x->devs[d].pool, cudaMemPoolAttrUsedMemHigh,
                                &high);
        peak[d] = x->devs[d].peak;
        pool_peak[d] = (int64_t)high;
    }
}

static const cs_driver_ops cuda_driver_ops = {
    .connect = cuda_connect,
    .ready = NULL,
    .pass = cuda_pass,
    .measure_begin = cuda_measure_begin,
    .measure_end = cuda_measure_end,
};

static commsched_status cuda_execute(commsched_runtime *rt,
                                     const commsched_graph *g,
                                     const uint32_t *order,
                                     const commsched_run_options *o,
                                     commsched_measurement **out,
                                     commsched_error *err)
{
    double wall0 = now_ns();
    exec x;
    memset(&x, 0, sizeof x);
    x.rt = rt;
    x.g = g;
    x.o = o;
    x.phase = "setup";
    commsched_status st = setup(&x, order, err);
    cs_driver d = {.ops = &cuda_driver_ops,
                   .ctx = &x,
                   .boot = rt->base.boot,
                   .plan = &x.plan,
                   .o = o,
                   .local = (uint32_t)x.ndev,
                   .has_pool_peak = 1,
                   .unit = "process",
                   .runtime = "cuda",
                   .library = rt->library,
                   .tally = &x.tally};
    st = cs_driver_run(&d, st, wall0, out, err);
    exec_fini(&x);
    return st;
}

const commsched_runtime_ops cs_runtime_cuda_ops = {
    .version = COMMSCHED_RUNTIME_VERSION,
    .name = "cuda",
    .description = "NVIDIA GPUs: NCCL collectives on one stream per group, "
                   "spin or GEMM kernels on the compute stream, CUDA events",
    .init = cuda_init,
    .rank = cs_driver_rank,
    .size = cs_driver_size,
    .first_failed = cs_driver_first_failed,
    .execute = cuda_execute,
    .fini = cs_driver_fini,
};
