/* commsched — the MPI runtime adaptor: every rank walks the same schedule
 * (docs/RUNTIME.md). With ring_allreduce.c and boot_mpi.c
 * (joining the job; agreement, preflight and gathering through coord.c),
 * the only files of the library that include mpi.h.
 *
 * Execution model, per node in the order:
 * - compute: its outputs are allocated (and their pages touched), then it
 *   runs for its runtime x time_scale: sleeping, spinning or streaming over
 *   its bytes; in every mode it tests the in-flight requests every poll
 *   quantum, because MPI (like a NIC without its own progress engine) only
 *   moves a non-blocking collective forward inside MPI calls;
 * - async collective: its output is allocated and the non-blocking call is
 *   posted on the group's communicator (MPI_Iallreduce, MPI_Iallgather,
 *   MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Ibcast, MPI_Ireduce,
 *   MPI_Ibarrier; send and recv as an MPI_Isend/MPI_Irecv ring shift;
 *   all_reduce optionally as seed 001's ring); its end is the first time a
 *   test sees it complete;
 * - sync collective: posted and completed where it stands;
 * - wait: completes the collectives it reads (MPI_Wait, or a test loop
 *   against the watchdog's deadline); the time spent is the measured
 *   exposed communication.
 * Buffers are freed at the plan's points (plan.c: a collective's buffers
 * live until its wait).
 *
 * Communicators: a group of size k in a world of N ranks is N/k disjoint
 * communicators of consecutive ranks (MPI_Comm_split with color rank / k).
 *
 * Safety: before anything runs, the ranks compare the graph hash and the
 * (op, group, bytes) sequence of their collectives, so a rank-divergent
 * order fails with a message instead of deadlocking (Inductor #189454,
 * torchrec #4149). Every blocking point (waits, sync collectives, the
 * barriers between iterations) polls against --timeout and turns a stuck
 * rank into MPI_Abort naming the node. A rank that dies is mpirun's
 * business: Open MPI and MPICH both tear the job down.
 *
 * No globals: the state of a run lives in `exec`, the adaptor's in
 * `struct commsched_runtime`. */
#define _POSIX_C_SOURCE 200809L
/* mmap's MAP_ANONYMOUS and MAP_NORESERVE (the buffers' arena) */
#define _DEFAULT_SOURCE

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "check.h"
#include "check_ref.h"
#include "commsched/runtime.h"
#include "driver.h"
#include "commsched/report.h"
#include "graph_layout.h"
#include "layout.h"
#include "plan.h"
#include "ring_allreduce.h"
#include "watchdog.h"
#include "runtime_internal.h"

struct commsched_runtime {
    cs_runtime_base base; /* the job (MPI_Init / MPI_Finalize, agreement,
                             gathering), this rank, the rank count */
    int tag_ub;
    int one_node;       /* every rank shares this node's monotonic clock */
    double wake_ns;     /* how late a sleep wakes up: sleeps end this early
                           and spin the rest, so compute nodes last their
                           runtime and not runtime + wake-up latency */
};

/* ---- time ------------------------------------------------------------------ */

static double now_ns(void) { return cs_driver_now_ns(); }

static void sleep_until(double t_ns)
{
    struct timespec ts;
    double s = floor(t_ns / 1e9);
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)(t_ns - s * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* ---- element types and reductions -------------------------------------------- */

/* MPI has no 16-bit or 8-bit floats: those travel as unsigned integers of
 * their width, which moves the same bytes (a sum then wraps instead of
 * rounding, which --check accounts for). */
static void dtype_to_mpi(commsched_dtype d, MPI_Datatype *dt, cs_ekind *k)
{
    switch (d) {
    case COMMSCHED_DTYPE_FLOAT64: *dt = MPI_DOUBLE; *k = CS_EK_F64; return;
    case COMMSCHED_DTYPE_FLOAT16:
    case COMMSCHED_DTYPE_BFLOAT16: *dt = MPI_UINT16_T; *k = CS_EK_U16; return;
    case COMMSCHED_DTYPE_FLOAT8_E4M3FN:
    case COMMSCHED_DTYPE_FLOAT8_E5M2:
    case COMMSCHED_DTYPE_UINT8:
    case COMMSCHED_DTYPE_BOOL: *dt = MPI_UINT8_T; *k = CS_EK_U8; return;
    case COMMSCHED_DTYPE_INT64: *dt = MPI_INT64_T; *k = CS_EK_I64; return;
    case COMMSCHED_DTYPE_INT32: *dt = MPI_INT32_T; *k = CS_EK_I32; return;
    case COMMSCHED_DTYPE_INT16: *dt = MPI_INT16_T; *k = CS_EK_I16; return;
    case COMMSCHED_DTYPE_INT8: *dt = MPI_INT8_T; *k = CS_EK_I8; return;
    default: *dt = MPI_FLOAT; *k = CS_EK_F32; return;
    }
}

/* avg and premul_sum have no MPI operation: they sum (same traffic), as
 * cs_check_rkind expects. */
static MPI_Op reduce_to_mpi(cs_rkind k)
{
    switch (k) {
    case CS_RK_PROD: return MPI_PROD;
    case CS_RK_MIN: return MPI_MIN;
    case CS_RK_MAX: return MPI_MAX;
    default: return MPI_SUM;
    }
}

/* ---- the state of one run -------------------------------------------------------- */

typedef struct xcoll {
    uint32_t node;
    uint32_t group;
    commsched_coll_op op;
    MPI_Datatype dt;
    MPI_Op mop;
    cs_ekind ek;        /* how --check reads its elements */
    size_t es;          /* element size */
    int count;          /* elements, in the op's own convention */
    int in_place;
    int tag;
    int use_ring;       /* all_reduce through cs_ring */
    cs_ring ring;
    char *scratch;      /* send/recv shift partner, in-place all-to-all */
    size_t scratch_bytes;
    MPI_Request req[2];
    int n_req;
    int state;          /* IDLE, QUEUED, IN_FLIGHT, DONE */
    int verified;
    uint32_t stream;    /* NONE: posted at once (concurrent) */
    uint32_t qnext;     /* next queued on the stream */
} xcoll;

enum { IDLE = 0, IN_FLIGHT = 1, DONE = 2, QUEUED = 3 };

typedef struct span {
    uintptr_t lo, hi;
} span;

typedef struct exec {
    commsched_runtime *rt;
    const commsched_graph *g;
    const commsched_run_options *o;
    cs_plan plan;
    MPI_Comm *comm;     /* per group */
    int *grank, *gsize; /* per group */
    xcoll *colls;
    uint32_t n_colls;
    uint32_t *coll_of;  /* node -> index in colls, NONE otherwise */
    void **mem;         /* per buffer (roots) */
    cs_layout layout;   /* where an iteration's buffers live in arena */
    char *arena;        /* layout.size bytes, or NULL: mapped one by one */
    struct span *spans; /* address ranges whose pages were touched, sorted,
                           disjoint (see touch_new) */
    size_t n_spans, cap_spans;
    int64_t live, peak;
    uint32_t *active;   /* colls in flight */
    uint32_t n_active;
    double *t0, *t1;    /* per node, this iteration, absolute ns */
    double *tp;         /* per node: when a collective was posted */
    uint32_t n_streams;
    uint32_t *s_busy;   /* per stream: the collective in flight, or NONE */
    uint32_t *s_head, *s_tail; /* per stream: queued collectives */
    double *compute_ns; /* per node: what compute plays */
    int64_t *touch;     /* per node: bytes touch mode streams */
    double poll_ns, timeout_ns;
    uint32_t iter;      /* for messages */
    const char *phase;  /* "calibration pass", "warm-up iteration",
                           "iteration" */
    cs_pass_kind pass;  /* the same, for the watchdog's window */
    cs_watch *watch;    /* the node's ranks' signs of life, or NULL */
    cs_check_tally tally;
    cs_check_ref *ref;  /* --check: what every collective must produce */
    double paused_ns;   /* --check's own time so far, left out of every
                           recorded time (stamp) */
    char dummy[64];     /* stands in for absent buffers */
    char *touch_scratch;
    size_t touch_scratch_bytes;
    volatile unsigned long sink; /* keeps touch mode's reads alive */
} exec;

/* A failure in the middle of a step cannot be agreed on without risking a
 * deadlock, so it ends the job with a message naming where. */
static void die(exec *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
static void die(exec *x, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "commsched run: rank %d: ", x->rt->base.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    abort(); /* MPI_Abort does not return */
}

static void check_mpi(exec *x, int rc, const char *call, uint32_t node)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    die(x, "%s failed at node \"%s\": %s", call,
        node == COMMSCHED_NONE ? "(none)" : x->g->nodes[node].name, msg);
}

static const char *node_name(const exec *x, uint32_t v)
{
    return v == COMMSCHED_NONE ? "(end of step)" : x->g->nodes[v].name;
}

/* ---- --check's time ---------------------------------------------------------- */

/* Recorded times leave --check's work out: the fill of a buffer and the
 * verification of a result happen between nodes, and their duration is
 * subtracted from everything recorded after them. */
static double stamp(const exec *x) { return now_ns() - x->paused_ns; }

static double pause_begin(void) { return now_ns(); }
static void pause_end(exec *x, double t) { x->paused_ns += now_ns() - t; }

/* ---- buffers ---------------------------------------------------------------------- */

static void progress(exec *x);

/* Writes one byte in every page of [lo, hi), testing in-flight requests
 * every MiB so a long touch does not stall communication. */
static void touch_range(exec *x, uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = lo; a < hi; a = (a / 4096u + 1u) * 4096u) {
        *(volatile char *)a = 0;
        if ((a & ((1u << 20) - 1)) < 4096u && x->n_active)
            progress(x);
    }
}

/* Makes [p, p + sz) resident. With glibc the allocator keeps freed memory
 * mapped (mpi_init: no mmap for buffers, no trimming), so a page touched
 * once stays resident for the whole run, whichever buffer it serves next:
 * only pages outside every range touched so far are touched again, which
 * is what a device's caching allocator costs (the first iterations pay
 * the faults, about 0.5 ms per MiB on a VM; re-touching 3 MiB that is
 * already resident would still cost 0.1 ms of TLB misses). Elsewhere every
 * allocation is touched in full. */
static void touch_new(exec *x, char *p, size_t sz)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + sz;
#ifndef __GLIBC__
    touch_range(x, lo, hi);
    return;
#endif
    /* Touch the gaps between the spans that overlap [lo, hi). */
    size_t i = 0;
    while (i < x->n_spans && x->spans[i].hi < lo)
        i++;
    uintptr_t cur = lo;
    for (size_t j = i; j < x->n_spans && x->spans[j].lo < hi; j++) {
        if (x->spans[j].lo > cur)
            touch_range(x, cur, x->spans[j].lo);
        if (x->spans[j].hi > cur)
            cur = x->spans[j].hi;
    }
    if (cur < hi)
        touch_range(x, cur, hi);
    /* Merge [lo, hi) with the spans it overlaps or touches. */
    size_t k = i;
    uintptr_t nlo = lo, nhi = hi;
    while (k < x->n_spans && x->spans[k].lo <= hi) {
        if (x->spans[k].lo < nlo)
            nlo = x->spans[k].lo;
        if (x->spans[k].hi > nhi)
            nhi = x->spans[k].hi;
        k++;
    }
    if (k == i) { /* nothing overlapped: insert at i */
        if (cs_grow((void **)&x->spans, &x->cap_spans, x->n_spans + 1,
                    sizeof *x->spans) != 0)
            return; /* only the bookkeeping is lost: pages get re-touched */
        memmove(x->spans + i + 1, x->spans + i,
                (x->n_spans - i) * sizeof *x->spans);
        x->n_spans++;
    } else { /* spans i .. k-1 become one */
        memmove(x->spans + i + 1, x->spans + k,
                (x->n_spans - k) * sizeof *x->spans);
        x->n_spans -= k - i - 1;
    }
    x->spans[i].lo = nlo;
    x->spans[i].hi = nhi;
}

/* Allocates buffer b, resident (touch_new), and counts it as live. An
 * iteration's buffers sit at their planned place in the arena (layout.h);
 * without an arena each is mapped and unmapped at its points (so a rank
 * never holds more than what is live, at a page fault per page); the
 * inputs that live for the whole run are allocated once. */
static void buf_alloc(exec *x, uint32_t b, uint32_t node, int counted)
{
    int64_t n = x->plan.bytes[b];
    if (n <= 0 || x->mem[b])
        return;
    void *p = NULL;
    size_t sz = ((size_t)n + 63u) / 64u * 64u;
    uint64_t at = x->layout.off ? x->layout.off[b] : CS_LAYOUT_NONE;
    if (at != CS_LAYOUT_NONE && x->arena) {
        p = x->arena + at;
        touch_new(x, p, sz);
    } else if (at != CS_LAYOUT_NONE) {
        p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            p = NULL;
        if (p)
            touch_range(x, (uintptr_t)p, (uintptr_t)p + sz);
    } else if (posix_memalign(&p, 64, sz) != 0) {
        p = NULL;
    } else {
        touch_new(x, p, sz);
    }
    if (!p)
        die(x, "cannot allocate %lld bytes for buffer \"%s\" at node \"%s\" "
            "(try a smaller --size-scale)",
            (long long)n, x->g->buffers[b].name, node_name(x, node));
    x->mem[b] = p;
    if (x->ref && cs_check_ref_touched(x->ref, b)) {
        double t = pause_begin();
        cs_check_ref_fill(x->ref, b, p, (size_t)n);
        pause_end(x, t);
    }
    if (counted) {
        x->live += n;
        if (x->live > x->peak)
            x->peak = x->live;
    }
}

/* The arena's place stays, a mapped buffer is unmapped, a whole-run
 * input freed. */
static void buf_release(exec *x, uint32_t b)
{
    uint64_t at = x->layout.off ? x->layout.off[b] : CS_LAYOUT_NONE;
    if (at == CS_LAYOUT_NONE)
        free(x->mem[b]);
    else if (!x->arena)
        munmap(x->mem[b], ((size_t)x->plan.bytes[b] + 63u) / 64u * 64u);
}

static void buf_free(exec *x, uint32_t b)
{
    if (!x->mem[b])
        return;
    buf_release(x, b);
    x->mem[b] = NULL;
    x->live -= x->plan.bytes[b];
}

/* A buffer's memory; absent and empty buffers get a small stand-in that
 * only ever takes zero elements. */
static char *bufp(exec *x, uint32_t b)
{
    if (b == COMMSCHED_NONE || x->plan.bytes[b] == 0)
        return x->dummy;
    if (!x->mem[b])
        die(x, "internal: buffer \"%s\" is used while not allocated",
            x->g->buffers[b].name);
    return x->mem[b];
}

/* ---- progress ------------------------------------------------------------------------ */

static int coll_test(exec *x, xcoll *c)
{
    int done = 0;
    if (c->use_ring)
        check_mpi(x, cs_ring_test(&c->ring, &done), "ring all-reduce", c->node);
    else
        check_mpi(x, MPI_Testall(c->n_req, c->req, &done, MPI_STATUSES_IGNORE),
                  "MPI_Testall", c->node);
    return done;
}

static void post(exec *x, uint32_t ci);

/* Records a completion and starts the next collective of its stream. */
static void mark_done(exec *x, uint32_t i_active)
{
    xcoll *c = &x->colls[x->active[i_active]];
    c->state = DONE;
    x->t1[c->node] = stamp(x);
    x->active[i_active] = x->active[--x->n_active];
    uint32_t s = c->stream;
    if (s == COMMSCHED_NONE)
        return;
    x->s_busy[s] = COMMSCHED_NONE;
    uint32_t next = x->s_head[s];
    if (next != COMMSCHED_NONE) {
        x->s_head[s] = x->colls[next].qnext;
        post(x, next);
    }
}

/* Tests every in-flight collective once; records completions. */
static void progress(exec *x)
{
    for (uint32_t i = 0; i < x->n_active;) {
        if (coll_test(x, &x->colls[x->active[i]]))
            mark_done(x, i);
        else
            i++;
    }
}

/* ---- the watchdog ------------------------------------------------------------------ */

/* A loop that blocks under the watchdog notices when its own process was
 * stopped (SIGSTOP, a debugger, a paused VM): time jumped between two of
 * its turns. Then the deadline starts again: a resumed rank does not blame
 * the others (nor itself) for the time it was away. */
static double stopped_gap_ns(const exec *x)
{
    return fmin(0.5e9, x->timeout_ns / 2);
}

static const char *pass_name(int kind)
{
    switch (kind) {
    case CS_PASS_CALIBRATE: return "calibration pass";
    case CS_PASS_WARMUP: return "warm-up iteration";
    case CS_PASS_MEASURE: return "iteration";
    default: return "setup";
    }
}

/* The watchdog's verdict: the rank of this node silent the longest (no
 * heartbeat: stopped or hung, not merely computing) and the collective it
 * last entered; otherwise what else may be wrong. */
static void blame(const exec *x, char *buf, size_t n)
{
    cs_watch_seen s;
    if (!x->watch) {
        snprintf(buf, n, "a rank is stuck or the ranks issue collectives in "
                         "different orders");
        return;
    }
    if (!cs_watch_silent(x->watch, stopped_gap_ns(x), &s)) {
        snprintf(buf, n, "every other rank on this node is alive: the ranks "
                         "issue collectives in different orders, one is "
                         "still computing, or a rank on another node is "
                         "stuck");
        return;
    }
    if (s.node >= x->g->n_nodes) {
        snprintf(buf, n, "rank %d is silent (no sign of life for %.3g s) "
                 "and has entered no collective yet", s.rank, s.age_ns / 1e9);
        return;
    }
    const cs_node *nd = &x->g->nodes[s.node];
    snprintf(buf, n, "rank %d is silent (no sign of life for %.3g s); the "
             "collective it last entered is \"%s\" (%s on group \"%s\") in "
             "%s %u", s.rank, s.age_ns / 1e9, nd->name,
             commsched_coll_op_str((commsched_coll_op)nd->coll_op),
             nd->group < x->g->n_groups ? x->g->groups[nd->group].name : "?",
             pass_name(s.phase), s.iter);
}

/* One turn of a loop blocked under the watchdog: now, with the deadline
 * started again when this process was stopped since the last turn. */
static double watch_turn(const exec *x, double *last, double *deadline)
{
    double t = now_ns();
    if (t - *last > stopped_gap_ns(x))
        *deadline = t + x->timeout_ns;
    *last = t;
    return t;
}

/* Blocks until collective ci completes; `at` names the node that waits. */
static void complete(exec *x, uint32_t ci, uint32_t at)
{
    xcoll *c = &x->colls[ci];
    /* Queued: what runs ahead of it on its stream completes first. */
    while (c->state == QUEUED)
        complete(x, x->s_busy[c->stream], at);
    if (c->state != IN_FLIGHT)
        return;
    uint32_t slot = 0;
    while (x->active[slot] != ci)
        slot++;
    if (x->timeout_ns <= 0 && !c->use_ring) {
        /* No watchdog: MPI_Wait itself. */
        check_mpi(x, MPI_Waitall(c->n_req, c->req, MPI_STATUSES_IGNORE),
                  "MPI_Waitall", c->node);
        mark_done(x, slot);
        return;
    }
    double deadline = x->timeout_ns > 0 ? now_ns() + x->timeout_ns : INFINITY;
    double last = now_ns();
    for (;;) {
        progress(x);
        if (c->state == DONE)
            return;
        double t = watch_turn(x, &last, &deadline);
        if (t > deadline) {
            char why[512];
            blame(x, why, sizeof why);
            die(x,
                "watchdog: node \"%s\" has waited %.3g s for \"%s\" (%s on "
                "group \"%s\") in %s %u; %s; aborting the job",
                node_name(x, at), x->timeout_ns / 1e9, x->g->nodes[c->node].name,
                commsched_coll_op_str(c->op), x->g->groups[c->group].name,
                x->phase, x->iter, why);
        }
        if (x->poll_ns > 0)
            sleep_until(fmin(t + x->poll_ns, deadline));
    }
}

/* Completes a blocking point that is not a node (barriers), under the same
 * watchdog. */
static void complete_req(exec *x, MPI_Request *req, const char *what)
{
    double deadline = x->timeout_ns > 0 ? now_ns() + x->timeout_ns : INFINITY;
    double last = now_ns();
    for (;;) {
        int done = 0;
        check_mpi(x, MPI_Test(req, &done, MPI_STATUS_IGNORE), "MPI_Test",
                  COMMSCHED_NONE);
        if (done)
            return;
        double t = watch_turn(x, &last, &deadline);
        if (t > deadline) {
            char why[512];
            blame(x, why, sizeof why);
            die(x, "watchdog: %s did not complete within %.3g s (%s %u); %s; "
                "aborting the job",
                what, x->timeout_ns / 1e9, x->phase, x->iter, why);
        }
        sleep_until(fmin(t + (x->poll_ns > 0 ? x->poll_ns : 1000.0), deadline));
    }
}

static void barrier(exec *x, MPI_Comm comm, const char *what)
{
    MPI_Request req;
    check_mpi(x, MPI_Ibarrier(comm, &req), "MPI_Ibarrier", COMMSCHED_NONE);
    complete_req(x, &req, what);
}

/* ---- compute ---------------------------------------------------------------------------- */

static void stream_over(exec *x, char *p, size_t len, int write)
{
    if (write) {
        memset(p, (int)(x->iter & 0x7f), len);
        return;
    }
    unsigned long acc = 0;
    const unsigned long *w = (const unsigned long *)(const void *)p;
    for (size_t i = 0; i < len / sizeof *w; i++)
        acc += w[i];
    x->sink += acc;
}

/* Touch mode: stream the node's bytes over its inputs (read) and outputs
 * (written), in 64 KiB pieces with a progress test between pieces, going
 * round its buffers until the node's byte count is done. */
static void run_touch(exec *x, uint32_t v)
{
    const commsched_graph *g = x->g;
    const cs_node *nd = &g->nodes[v];
    uint32_t n_in = CS_ROW_LEN(g->reads, v), n_all = n_in + nd->n_out;
    int64_t left = x->touch[v];
    enum { PIECE = 65536 };
    while (left > 0) {
        int any = 0;
        for (uint32_t j = 0; j < n_all && left > 0; j++) {
            /* --check: data is the collectives' (check_ref.h); compute
             * streams over its outputs without changing them. */
            int write = j >= n_in && !x->ref;
            uint32_t b = write
                             ? g->buffers[nd->out_first + (j - n_in)].root
                             : g->buffers[g->reads.idx[g->reads.off[v] + j]].root;
            char *p = x->mem[b];
            if (!p)
                continue;
            any = 1;
            size_t len = (size_t)x->plan.bytes[b];
            for (size_t off = 0; off < len && left > 0; off += PIECE) {
                size_t piece = len - off < PIECE ? len - off : PIECE;
                if ((int64_t)piece > left)
                    piece = (size_t)left;
                stream_over(x, p + off, piece, write);
                left -= (int64_t)piece;
                if (x->n_active)
                    progress(x);
            }
        }
        if (!any) { /* nothing allocated to stream over: a private block */
            size_t piece = x->touch_scratch_bytes;
            if ((int64_t)piece > left)
                piece = (size_t)left;
            stream_over(x, x->touch_scratch, piece, 1);
            left -= (int64_t)piece;
            if (x->n_active)
                progress(x);
        }
    }
}

static void run_compute(exec *x, uint32_t v)
{
    if (x->o->compute == COMMSCHED_COMPUTE_TOUCH) {
        run_touch(x, v);
        return;
    }
    double t = now_ns(), end = t + x->compute_ns[v];
    if (x->o->compute == COMMSCHED_COMPUTE_SPIN) {
        while (now_ns() < end)
            if (x->n_active)
                progress(x);
        return;
    }
    /* Sleep, testing requests every poll quantum; stop sleeping wake_ns
     * before the end and spin the rest, so the node lasts its runtime.
     * A test may do a transfer itself (Open MPI's single-copy path copies
     * a whole rendezvous message inside MPI_Test, hundreds of µs for
     * 1 MiB), so a node can end late by the copy its rank performed: the
     * host drives this network, as the issue's model says. Not testing
     * near the end was tried: the collectives then stall, which costs more
     * than the overrun. */
    double wake_at = end - x->rt->wake_ns;
    for (;;) {
        if (x->n_active)
            progress(x);
        t = now_ns();
        if (t >= end)
            return;
        if (t >= wake_at)
            continue;
        double until = wake_at;
        if (x->n_active) {
            if (x->poll_ns <= 0)
                continue;
            until = fmin(until, t + x->poll_ns);
        }
        sleep_until(until);
    }
}

/* ---- collectives ----------------------------------------------------------------------- */

static void mismatch(exec *x, xcoll *c, size_t i, double want, double got)
{
    x->tally.mismatches++;
    if (x->tally.first_mismatch[0])
        return;
    snprintf(x->tally.first_mismatch, sizeof x->tally.first_mismatch,
             "\"%s\" (%s) on rank %d, %s %u, element %zu: expected %.17g, "
             "got %.17g",
             x->g->nodes[c->node].name, commsched_coll_op_str(c->op),
             x->rt->base.rank, x->phase, x->iter, i, want, got);
}

/* The send and receive buffers of a collective. */
static void coll_bufs(exec *x, const xcoll *c, char **sb, char **rb)
{
    *sb = bufp(x, x->plan.coll[c->node].in);
    *rb = bufp(x, x->plan.coll[c->node].out);
}

static int is_reduction(commsched_coll_op op)
{
    return op == COMMSCHED_COLL_ALL_REDUCE || op == COMMSCHED_COLL_REDUCE ||
           op == COMMSCHED_COLL_REDUCE_SCATTER;
}

/* Compares a completed collective's result with the host reference
 * (check_ref.h), once per pass, outside the recorded times. */
static void verify(exec *x, xcoll *c)
{
    if (c->verified || c->op == COMMSCHED_COLL_BARRIER)
        return;
    c->verified = 1;
    double t = pause_begin();
    uint32_t buf;
    size_t off, len;
    cs_check_ref_region(x->ref, c->node, &buf, &off, &len);
    char *region = buf == COMMSCHED_NONE ? c->scratch : bufp(x, buf) + off;
    if (len && x->o->debug_corrupt_rank == x->rt->base.rank &&
        is_reduction(c->op))
        region[0] = (char)(region[0] + 1); /* tests: a broken reduction */
    double want = 0, got = 0;
    long i = len ? cs_check_ref_verify(x->ref, c->node, region, &want, &got)
                 : -1;
    if (i >= 0)
        mismatch(x, c, (size_t)i, want, got);
    x->tally.checked++;
    pause_end(x, t);
}

/* Hands collective ci to MPI. */
static void post(exec *x, uint32_t ci)
{
    xcoll *c = &x->colls[ci];
    uint32_t v = c->node;
    MPI_Comm comm = x->comm[c->group];
    int k = x->gsize[c->group], r = x->grank[c->group];
    char *sb, *rb;
    coll_bufs(x, c, &sb, &rb);
    c->n_req = 1;
    int rc = MPI_SUCCESS;
    const char *call = "";
    void *in = c->in_place ? MPI_IN_PLACE : sb;
    switch (c->op) {
    case COMMSCHED_COLL_ALL_REDUCE:
        if (c->use_ring) {
            call = "ring all-reduce";
            c->n_req = 0;
            rc = cs_ring_start(&c->ring, c->in_place ? NULL : sb, rb);
        } else {
            call = "MPI_Iallreduce";
            rc = MPI_Iallreduce(in, rb, c->count, c->dt, c->mop, comm,
                                &c->req[0]);
        }
        break;
    case COMMSCHED_COLL_ALL_GATHER:
        call = "MPI_Iallgather";
        rc = MPI_Iallgather(in, c->count, c->dt, rb, c->count, c->dt, comm,
                            &c->req[0]);
        break;
    case COMMSCHED_COLL_REDUCE_SCATTER:
        call = "MPI_Ireduce_scatter_block";
        rc = MPI_Ireduce_scatter_block(in, rb, c->count, c->dt, c->mop, comm,
                                       &c->req[0]);
        break;
    case COMMSCHED_COLL_ALL_TO_ALL:
        call = "MPI_Ialltoall";
        if (c->in_place) { /* send from a copy: portable in-place */
            memcpy(c->scratch, rb, c->scratch_bytes);
            sb = c->scratch;
        }
        rc = MPI_Ialltoall(sb, c->count, c->dt, rb, c->count, c->dt, comm,
                           &c->req[0]);
        break;
    case COMMSCHED_COLL_BROADCAST:
        call = "MPI_Ibcast";
        if (r == 0 && sb != rb)
            memcpy(rb, sb, (size_t)c->count * c->es);
        rc = MPI_Ibcast(rb, c->count, c->dt, 0, comm, &c->req[0]);
        break;
    case COMMSCHED_COLL_REDUCE:
        call = "MPI_Ireduce";
        rc = MPI_Ireduce(c->in_place && r == 0 ? MPI_IN_PLACE : sb, rb,
                         c->count, c->dt, c->mop, 0, comm, &c->req[0]);
        break;
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV: {
        /* A ring shift: every rank sends to the next rank of its group and
         * receives from the previous one, so the pair matches on every
         * rank whatever else the graph does. */
        call = c->op == COMMSCHED_COLL_SEND ? "MPI_Isend" : "MPI_Irecv";
        char *to_send = c->op == COMMSCHED_COLL_SEND ? sb : c->scratch;
        char *to_recv = c->op == COMMSCHED_COLL_SEND ? c->scratch : rb;
        c->n_req = 2;
        rc = MPI_Irecv(to_recv, c->count, c->dt, (r + k - 1) % k, c->tag, comm,
                       &c->req[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(to_send, c->count, c->dt, (r + 1) % k, c->tag, comm,
                           &c->req[1]);
        break;
    }
    case COMMSCHED_COLL_BARRIER:
        call = "MPI_Ibarrier";
        rc = MPI_Ibarrier(comm, &c->req[0]);
        break;
    default:
        die(x, "node \"%s\": unknown collective", x->g->nodes[v].name);
    }
    check_mpi(x, rc, call, v);
    c->state = IN_FLIGHT;
    x->tp[v] = stamp(x);
    x->active[x->n_active++] = ci;
    if (c->stream != COMMSCHED_NONE)
        x->s_busy[c->stream] = ci;
}

/* The host reaches collective v: its inputs are ready, and it is posted
 * at once or queued behind its stream. */
static void issue(exec *x, uint32_t v)
{
    uint32_t ci = x->coll_of[v];
    xcoll *c = &x->colls[ci];
    cs_watch_enter(x->watch, v, x->iter, (int)x->pass);
    if (x->ref && c->scratch &&
        (c->op == COMMSCHED_COLL_SEND || c->op == COMMSCHED_COLL_RECV)) {
        /* The private side of a ring shift: what a recv sends, what a
         * send receives into (its old value must not pass). */
        double t = pause_begin();
        cs_check_ref_fill_scratch(x->ref, v, c->scratch, c->scratch_bytes);
        pause_end(x, t);
    }
    c->verified = 0;
    uint32_t s = c->stream;
    if (s == COMMSCHED_NONE || x->s_busy[s] == COMMSCHED_NONE) {
        post(x, ci);
        return;
    }
    c->state = QUEUED;
    c->qnext = COMMSCHED_NONE;
    if (x->s_head[s] == COMMSCHED_NONE)
        x->s_head[s] = ci;
    else
        x->colls[x->s_tail[s]].qnext = ci;
    x->s_tail[s] = ci;
}

/* ---- one pass over the schedule ---------------------------------------------------------- */

static void run_node(exec *x, uint32_t v, int calibrating)
{
    const cs_plan *p = &x->plan;
    const cs_node *nd = &x->g->nodes[v];
    for (uint32_t e = p->alloc_at.off[v]; e < p->alloc_at.off[v + 1]; e++)
        buf_alloc(x, p->alloc_at.idx[e], v, 1);
    x->t0[v] = stamp(x);
    if (calibrating && nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        /* Alone: every rank of the group starts it together. The time
         * from t0 to the post is this rank's wait for the others to arrive
         * and to wake up (the driver's skew and wake-up latency). */
        barrier(x, x->comm[x->colls[x->coll_of[v]].group],
                "the barrier before a calibrated collective");
    }
    switch (nd->kind) {
    case COMMSCHED_NODE_COMPUTE:
        run_compute(x, v);
        x->t1[v] = stamp(x);
        break;
    case COMMSCHED_NODE_COLLECTIVE:
        issue(x, v);
        if (nd->is_sync || calibrating) {
            complete(x, x->coll_of[v], v);
            if (x->ref)
                verify(x, &x->colls[x->coll_of[v]]);
        }
        break;
    default: /* wait */
        for (uint32_t e = p->wait_colls.off[v]; e < p->wait_colls.off[v + 1];
             e++)
            complete(x, x->coll_of[p->wait_colls.idx[e]], v);
        if (x->compute_ns[v] > 0)
            run_compute(x, v);
        x->t1[v] = stamp(x);
        /* Verified after the wait's end: --check's own time is not
         * counted as exposed communication (it still lengthens the step). */
        for (uint32_t e = p->wait_colls.off[v];
             x->ref && e < p->wait_colls.off[v + 1]; e++)
            verify(x, &x->colls[x->coll_of[p->wait_colls.idx[e]]]);
        break;
    }
    for (uint32_t e = p->free_after.off[v]; e < p->free_after.off[v + 1]; e++)
        buf_free(x, p->free_after.idx[e]);
}

/* Sleeps until t, spinning the last wake_ns so it ends on time. */
static void sleep_until_precise(exec *x, double t)
{
    if (t - now_ns() > x->rt->wake_ns)
        sleep_until(t - x->rt->wake_ns);
    while (now_ns() < t)
        ;
}

/* Every rank starts the iteration together. After the barrier, ranks
 * polling in quanta on shared cores leave it up to a few hundred µs apart,
 * and the simulator starts every rank at 0; so when all ranks share one
 * node (one CLOCK_MONOTONIC), rank 0 names a start time 2 ms ahead and
 * every rank sleeps until it. Across nodes the barrier is all there is. */
static double start_together(exec *x)
{
    barrier(x, MPI_COMM_WORLD, "the barrier before an iteration");
    if (!x->rt->one_node)
        return now_ns();
    double t = now_ns() + 2e6;
    MPI_Request req;
    check_mpi(x, MPI_Ibcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req),
              "MPI_Ibcast", COMMSCHED_NONE);
    complete_req(x, &req, "the start time's broadcast");
    sleep_until_precise(x, t);
    return t;
}

/* One iteration; returns the step time (ns) and leaves per-node times in
 * t0/t1 relative to the step's start. */
static double run_iteration(exec *x, int calibrating)
{
    const cs_plan *p = &x->plan;
    for (uint32_t i = 0; i < x->n_colls; i++)
        x->colls[i].state = IDLE;
    for (uint32_t s = 0; s < x->n_streams; s++)
        x->s_busy[s] = x->s_head[s] = x->s_tail[s] = COMMSCHED_NONE;
    /* Freeable inputs exist before the step's first node (buf_alloc fills
     * them for --check); the inputs that live for the whole run get their
     * values again, since an in-place collective may have changed them. */
    for (uint32_t i = 0; i < p->n_baseline; i++)
        buf_alloc(x, p->baseline[i], COMMSCHED_NONE, 1);
    for (uint32_t i = 0; x->ref && i < p->n_other; i++) {
        uint32_t b = p->other[i];
        if (x->mem[b] && cs_check_ref_touched(x->ref, b)) {
            double t = pause_begin();
            cs_check_ref_fill(x->ref, b, x->mem[b], (size_t)p->bytes[b]);
            pause_end(x, t);
        }
    }
    /* In stamp's terms: the fills above are --check's, not the step's. */
    double start = start_together(x) - x->paused_ns;
    for (uint32_t k = 0; k < p->n; k++)
        run_node(x, p->order[k], calibrating);
    while (x->n_active > 0) { /* collectives nobody waits for */
        uint32_t ci = x->active[0];
        complete(x, ci, COMMSCHED_NONE); /* posts what queued behind it */
        if (x->ref)
            verify(x, &x->colls[ci]);
    }
    double end = stamp(x);
    for (uint32_t b = 0; b < x->g->n_buffers; b++)
        if (x->g->buffers[b].alias_of == COMMSCHED_NONE &&
            !(x->g->buffers[b].is_input &&
              (!x->g->buffers[b].freeable ||
               CS_ROW_LEN(x->g->readers, b) == 0)))
            buf_free(x, b);
    for (uint32_t v = 0; v < p->n; v++) {
        x->t0[v] -= start;
        x->t1[v] -= start;
        x->tp[v] = x->coll_of[v] != COMMSCHED_NONE ? x->tp[v] - start : x->t0[v];
    }
    return end - start;
}

/* ---- setup ------------------------------------------------------------------------------- */

static int fits_int(size_t v) { return v <= (size_t)INT_MAX; }

/* Element counts and scratch for every collective; needs group sizes. */
static commsched_status setup_colls(exec *x, commsched_error *err)
{
    const commsched_graph *g = x->g;
    const cs_plan *p = &x->plan;
    for (uint32_t i = 0; i < x->n_colls; i++) {
        xcoll *c = &x->colls[i];
        const cs_node *nd = &g->nodes[c->node];
        const cs_plan_coll *pc = &p->coll[c->node];
        size_t k = (size_t)x->gsize[c->group];
        c->op = (commsched_coll_op)nd->coll_op;
        c->es = pc->elem;
        cs_coll_shape shape;
        cs_plan_coll_shape(p, c->node, k, &shape);
        size_t count = shape.count;
        c->in_place = shape.in_place;
        c->scratch_bytes = shape.scratch_bytes;
        dtype_to_mpi((commsched_dtype)nd->dtype, &c->dt, &c->ek);
        c->mop = reduce_to_mpi(
            cs_check_rkind((commsched_reduce_op)nd->reduce_op));
        if (!fits_int(count) || !fits_int(count * k))
            return commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "collective \"%s\" moves %zu elements, more than one MPI call "
                "takes; use --size-scale",
                nd->name, count * k);
        c->count = (int)count;
        c->tag = (int)(c->node % ((uint32_t)x->rt->tag_ub + 1u));
        if (c->scratch_bytes > 0) {
            c->scratch = malloc(c->scratch_bytes);
            if (!c->scratch)
                return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                           "out of memory");
        }
        if (c->op == COMMSCHED_COLL_ALL_REDUCE &&
            x->o->allreduce != COMMSCHED_ALLREDUCE_MPI) {
            int ring = cs_ring_use_ring(
                (int)k, count, x->o->ring_threshold,
                x->o->allreduce == COMMSCHED_ALLREDUCE_RING_ALWAYS);
            if (cs_ring_init(&c->ring, x->comm[c->group], c->tag, c->dt, c->es,
                             c->mop, count, ring) != MPI_SUCCESS)
                return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                           "out of memory");
            c->use_ring = 1;
        }
    }
    return COMMSCHED_OK;
}

/* Checks that need nothing but the local graph and the world size. */
static commsched_status check_groups(exec *x, commsched_error *err)
{
    int n = x->rt->base.size;
    for (uint32_t i = 0; i < x->g->n_groups; i++) {
        const cs_group *gr = &x->g->groups[i];
        if (gr->size > (uint32_t)n)
            return commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "group \"%s\" has %u ranks but the job has %d; start it with "
                "mpirun -np %u (or a multiple)",
                gr->name, gr->size, n, gr->size);
        if ((uint32_t)n % gr->size != 0)
            return commsched_error_set(
                err, COMMSCHED_EINVAL, NULL,
                "group \"%s\" of %u ranks does not divide the job's %d ranks "
                "(groups are formed from consecutive ranks, docs/RUNTIME.md)",
                gr->name, gr->size, n);
    }
    return COMMSCHED_OK;
}

/* The buffers' arena (layout.h): planned once, mapped once when it is
 * within twice the peak of live bytes. First fit replaying one iteration
 * lands there on every workload we have (the bundled example: the peak
 * exactly); past it, buffers are mapped one by one, which bounds memory
 * by what is live at the price of page faults in every iteration. */
static commsched_status setup_arena(exec *x, commsched_error *err)
{
    commsched_status st = cs_layout_plan(&x->plan, 64, &x->layout, err);
    if (st != COMMSCHED_OK || x->layout.size == 0 ||
        x->layout.size > 2 * x->layout.peak)
        return st;
    void *a = mmap(NULL, (size_t)x->layout.size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) {
        char b[32];
        return commsched_error_set(
            err, COMMSCHED_ENOMEM, NULL,
            "cannot map %s for the step's buffers: %s (try a smaller "
            "--size-scale)",
            commsched_format_bytes((double)x->layout.size, b, sizeof b),
            strerror(errno));
    }
    x->arena = a;
    return COMMSCHED_OK;
}

static void exec_fini(exec *x)
{
    if (x->colls) {
        for (uint32_t i = 0; i < x->n_colls; i++) {
            cs_ring_fini(&x->colls[i].ring);
            free(x->colls[i].scratch);
        }
    }
    if (x->mem) {
        for (uint32_t b = 0; b < x->g->n_buffers; b++)
            if (x->mem[b])
                buf_release(x, b);
    }
    if (x->arena)
        munmap(x->arena, (size_t)x->layout.size);
    cs_layout_free(&x->layout);
    if (x->comm) {
        for (uint32_t i = 0; i < x->g->n_groups; i++)
            if (x->comm[i] != MPI_COMM_NULL)
                MPI_Comm_free(&x->comm[i]);
    }
    free(x->comm);
    free(x->grank);
    free(x->gsize);
    free(x->colls);
    free(x->coll_of);
    free(x->mem);
    free(x->spans);
    free(x->active);
    free(x->t0);
    free(x->t1);
    free(x->tp);
    free(x->s_busy);
    free(x->s_head);
    free(x->s_tail);
    free(x->compute_ns);
    free(x->touch);
    free(x->touch_scratch);
    cs_check_ref_free(x->ref);
    cs_watch_stop(x->watch);
    cs_plan_fini(&x->plan);
}

static commsched_status setup_local(exec *x, const uint32_t *order,
                                    commsched_error *err)
{
    const commsched_graph *g = x->g;
    const commsched_run_options *o = x->o;
    uint32_t n = g->n_nodes;
    commsched_status st = cs_plan_build(&x->plan, g, order, o->size_scale, err);
    if (st != COMMSCHED_OK)
        return st;
    if ((st = check_groups(x, err)) != COMMSCHED_OK)
        return st;
    x->comm = malloc((g->n_groups ? g->n_groups : 1) * sizeof *x->comm);
    x->grank = calloc(g->n_groups ? g->n_groups : 1, sizeof *x->grank);
    x->gsize = calloc(g->n_groups ? g->n_groups : 1, sizeof *x->gsize);
    x->coll_of = malloc((size_t)n * sizeof *x->coll_of);
    x->colls = calloc(x->plan.n_coll ? x->plan.n_coll : 1, sizeof *x->colls);
    x->active = malloc((x->plan.n_coll ? x->plan.n_coll : 1) * sizeof *x->active);
    x->mem = calloc(g->n_buffers ? g->n_buffers : 1, sizeof *x->mem);
    x->t0 = calloc(n, sizeof *x->t0);
    x->t1 = calloc(n, sizeof *x->t1);
    x->tp = calloc(n, sizeof *x->tp);
    x->n_streams = o->streams == COMMSCHED_RUN_STREAMS_PER_GROUP ? g->n_groups
                   : o->streams == COMMSCHED_RUN_STREAMS_SINGLE ? 1u : 0u;
    x->s_busy = malloc((x->n_streams ? x->n_streams : 1) * sizeof *x->s_busy);
    x->s_head = malloc((x->n_streams ? x->n_streams : 1) * sizeof *x->s_head);
    x->s_tail = malloc((x->n_streams ? x->n_streams : 1) * sizeof *x->s_tail);
    x->compute_ns = calloc(n, sizeof *x->compute_ns);
    x->touch = calloc(n, sizeof *x->touch);
    x->touch_scratch_bytes = 1u << 20;
    x->touch_scratch = malloc(x->touch_scratch_bytes);
    if (!x->comm || !x->grank || !x->gsize || !x->coll_of || !x->colls ||
        !x->active || !x->mem || !x->t0 || !x->t1 || !x->tp || !x->s_busy ||
        !x->s_head || !x->s_tail || !x->compute_ns ||
        !x->touch || !x->touch_scratch)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t i = 0; i < g->n_groups; i++)
        x->comm[i] = MPI_COMM_NULL;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = x->plan.order[k];
        const cs_node *nd = &g->nodes[v];
        x->coll_of[v] = COMMSCHED_NONE;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            x->coll_of[v] = x->n_colls;
            x->colls[x->n_colls].node = v;
            x->colls[x->n_colls].stream =
                o->streams == COMMSCHED_RUN_STREAMS_PER_GROUP ? nd->group
                : o->streams == COMMSCHED_RUN_STREAMS_SINGLE ? 0u
                                                              : COMMSCHED_NONE;
            x->colls[x->n_colls++].group = nd->group;
            continue;
        }
        double rt = o->runtime_ns ? o->runtime_ns[v] : 0;
        x->compute_ns[v] = rt > 0 ? rt * o->time_scale : 0;
        if (nd->kind == COMMSCHED_NODE_COMPUTE) {
            double bytes = 0;
            if (nd->bytes >= 0) {
                bytes = ceil(nd->bytes * o->size_scale);
            } else {
                for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++)
                    bytes += (double)x->plan.bytes[g->buffers[g->reads.idx[e]].root];
                for (uint32_t i = 0; i < nd->n_out; i++)
                    bytes += (double)x->plan.bytes[g->buffers[nd->out_first + i].root];
            }
            x->touch[v] = bytes < 9e18 ? (int64_t)bytes : INT64_MAX;
        }
    }
    memset(x->touch_scratch, 1, x->touch_scratch_bytes);
    x->poll_ns = o->poll_us * 1e3;
    x->timeout_ns = o->timeout_s * 1e9;
    return COMMSCHED_OK;
}

static commsched_status setup_comms(exec *x, commsched_error *err)
{
    int rank = x->rt->base.rank;
    for (uint32_t i = 0; i < x->g->n_groups; i++) {
        int k = (int)x->g->groups[i].size;
        int rc = MPI_Comm_split(MPI_COMM_WORLD, rank / k, rank, &x->comm[i]);
        if (rc != MPI_SUCCESS)
            return commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                       "MPI_Comm_split failed for group "
                                       "\"%s\"",
                                       x->g->groups[i].name);
        MPI_Comm_rank(x->comm[i], &x->grank[i]);
        MPI_Comm_size(x->comm[i], &x->gsize[i]);
    }
    return COMMSCHED_OK;
}

/* ---- the adaptor ---------------------------------------------------------------------------- */

static commsched_status mpi_init(int *argc, char ***argv,
                                 commsched_runtime **out, commsched_error *err)
{
    commsched_runtime *rt = NULL;
    commsched_status st = cs_driver_join(argc, argv, sizeof *rt, (void **)&rt, err);
    *out = NULL;
    if (st != COMMSCHED_OK)
        return st;
    /* Errors come back as codes, so a failing call can name its node. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rt->one_node =
        cs_boot_min(rt->base.boot, cs_boot_local_size(rt->base.boot) == rt->base.size) != 0;
    void *ub = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    rt->tag_ub = flag && ub ? *(int *)ub : 32767;
#ifdef __linux__
    /* Sleeps end within a microsecond or so of the timer instead of the
     * default 50 µs slack: compute nodes are timed by sleeping. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
#ifdef __GLIBC__
    /* A caching allocator, as a GPU framework has: freed buffers stay
     * mapped (no mmap for big blocks, no trimming), so a buffer allocated
     * again in the next iteration is touched without page faults. Buffers
     * are still malloc'ed and freed at the model's points; only the
     * first-touch faults (0.5 ms per MiB on a VM) move to the warm-up. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
    /* What is left is the wake-up latency (15-20 µs on a VM): the median
     * of a few short sleeps, capped, with a little margin. */
    double late[15];
    for (int i = 0; i < 15; i++) {
        double t = now_ns() + 50e3;
        sleep_until(t);
        late[i] = now_ns() - t;
    }
    rt->wake_ns = fmin(cs_driver_median(late, 15) * 1.5 + 2e3, 500e3);
    *out = rt;
    return COMMSCHED_OK;
}

/* --check's host reference, from the element kinds MPI moves. */
static commsched_status build_reference(exec *x, commsched_error *err)
{
    uint8_t *ek = calloc(x->g->n_nodes + 1u, 1);
    if (!ek)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (uint32_t i = 0; i < x->n_colls; i++)
        ek[x->colls[i].node] = (uint8_t)x->colls[i].ek;
    commsched_status st =
        cs_check_ref_build(&x->ref, &x->plan, x->rt->base.size,
                           x->rt->base.rank, ek, CS_REF_RS_AT_START, err);
    free(ek);
    return st;
}

/* ---- the driver's operations (driver.h) -------------------------------------------------- */

static commsched_status mpi_connect(void *ctx, commsched_error *err)
{
    exec *x = ctx;
    /* First, so every rank reaches this collective call. The heartbeat
     * beats every 10 ms: far below the half second after which a rank
     * counts as silent. */
    commsched_status st = x->timeout_ns > 0
                              ? cs_watch_start(&x->watch, MPI_COMM_WORLD,
                                               10e6, err)
                              : COMMSCHED_OK;
    if (st == COMMSCHED_OK)
        st = setup_comms(x, err);
    if (st == COMMSCHED_OK)
        st = setup_colls(x, err);
    if (st == COMMSCHED_OK)
        st = setup_arena(x, err);
    if (st == COMMSCHED_OK && x->o->check)
        st = build_reference(x, err);
    return st;
}

static void mpi_ready(void *ctx)
{
    exec *x = ctx;
    /* Inputs the model does not count exist for the whole run. */
    for (uint32_t i = 0; i < x->plan.n_other; i++)
        buf_alloc(x, x->plan.other[i], COMMSCHED_NONE, 0);
    if (x->o->debug_kill_rank == x->rt->base.rank) {
        fprintf(stderr, "commsched run: rank %d: killing itself "
                        "(--debug-kill-rank)\n", x->rt->base.rank);
        fflush(stderr);
        raise(SIGKILL);
    }
}

static void mpi_pass(void *ctx, cs_pass_kind kind, const char *phase,
                     uint32_t iter, double *t0, double *t1, double *tp,
                     double *step)
{
    exec *x = ctx;
    size_t n = x->plan.n;
    x->phase = phase;
    x->pass = kind;
    x->iter = iter;
    step[0] = run_iteration(x, kind == CS_PASS_CALIBRATE);
    memcpy(t0, x->t0, n * sizeof *t0);
    memcpy(t1, x->t1, n * sizeof *t1);
    memcpy(tp, x->tp, n * sizeof *tp);
}

static void mpi_measure_begin(void *ctx) { ((exec *)ctx)->peak = 0; }

static void mpi_measure_end(void *ctx, int64_t *peak, int64_t *pool_peak)
{
    (void)pool_peak; /* host memory has no pool */
    peak[0] = ((exec *)ctx)->peak;
}

static const cs_driver_ops mpi_driver_ops = {
    .connect = mpi_connect,
    .ready = mpi_ready,
    .pass = mpi_pass,
    .measure_begin = mpi_measure_begin,
    .measure_end = mpi_measure_end,
};

static commsched_status mpi_execute(commsched_runtime *rt,
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
    commsched_status st = cs_driver_check_options(o, err);
    if (st == COMMSCHED_OK && o->compute == COMMSCHED_COMPUTE_GEMM)
        st = commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                 "--compute gemm runs cuBLAS on GPUs: it "
                                 "needs --runtime cuda");
    if (st == COMMSCHED_OK)
        st = setup_local(&x, order, err);
    cs_driver d = {.ops = &mpi_driver_ops,
                   .ctx = &x,
                   .boot = rt->base.boot,
                   .plan = &x.plan,
                   .o = o,
                   .local = 1,
                   .unit = "rank",
                   .runtime = "mpi",
                   .library = cs_boot_library(rt->base.boot),
                   .tally = &x.tally};
    st = cs_driver_run(&d, st, wall0, out, err);
    exec_fini(&x);
    return st;
}

const commsched_runtime_ops cs_runtime_mpi_ops = {
    .version = COMMSCHED_RUNTIME_VERSION,
    .name = "mpi",
    .description = "MPI ranks: non-blocking collectives on per-group "
                   "communicators, timed compute kernels",
    .init = mpi_init,
    .rank = cs_driver_rank,
    .size = cs_driver_size,
    .first_failed = cs_driver_first_failed,
    .execute = mpi_execute,
    .fini = cs_driver_fini,
};
