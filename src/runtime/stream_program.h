/* commsched — one iteration of a schedule lowered to what a compiler emits
 * for a GPU: operations on streams joined by events (docs/RUNTIME.md,
 * docs/RUNTIME.md "CUDA"). Internal; no CUDA here, so the lowering and its
 * checker are tested on any machine, and the CUDA adaptor only interprets
 * the program.
 *
 * Stream 0 is the compute stream; streams 1 .. n_streams-1 carry
 * collectives (one per process group, or one for all). An async collective
 * is issued exactly as the simulator models it: an event recorded on the
 * compute stream at its place in the order, which its comm stream waits
 * for; a wait node makes the compute stream wait for the collective's
 * completion event. Sync collectives run on the compute stream. Buffers are
 * allocated and freed on the compute stream at the plan's points (plan.c:
 * a collective's buffers live until its wait, so every free is ordered
 * after the last use on any stream).
 *
 * Events (ids): per node 3 (start, end, post: cs_sprog_event), then the
 * iteration's start and end, then one tail per comm stream. A node's start
 * and end are read back as its measured interval; a collective's post is
 * when its stream reached it (later than its issue when it queued behind
 * its group's previous collective). */
#ifndef COMMSCHED_RUNTIME_STREAM_PROGRAM_H
#define COMMSCHED_RUNTIME_STREAM_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/runtime.h"
#include "plan.h"

typedef enum cs_sop_kind {
    CS_SOP_ALLOC,   /* arg: root buffer; allocated (stream-ordered) */
    CS_SOP_FREE,    /* arg: root buffer */
    CS_SOP_RECORD,  /* arg: event, recorded on the stream */
    CS_SOP_WAIT,    /* arg: event the stream waits for */
    CS_SOP_COMPUTE, /* arg: node; its kernel (also a wait node's runtime) */
    CS_SOP_COLL,    /* arg: node; the collective */
    CS_SOP_BARRIER, /* arg: group, or CS_SPROG_WORLD: a device-side barrier
                       (a one-element all-reduce) */
    CS_SOP_FILL,    /* arg: root buffer; --check writes its values
                       (check_ref.h: per buffer, once per step) right after
                       its allocation, or at the step's start for a buffer
                       that lives for the whole run */
    CS_SOP_FETCH    /* arg: node; --check copies its result to the host */
} cs_sop_kind;

#define CS_SPROG_WORLD UINT32_MAX

typedef struct cs_sop {
    uint8_t kind;     /* cs_sop_kind */
    uint32_t stream;
    uint32_t arg;
} cs_sop;

typedef enum cs_sprog_ev { CS_EV_START = 0, CS_EV_END = 1, CS_EV_POST = 2 } cs_sprog_ev;

typedef struct cs_sprog {
    cs_sop *ops;
    size_t n_ops;
    uint32_t n_streams;    /* compute stream included */
    uint32_t *stream_of;   /* per node: the stream its work runs on (an
                              async collective's comm stream; 0 for every
                              other node) */
    uint32_t n_events;
    uint32_t ev_iter_start, ev_iter_end;
    uint32_t n_nodes;
} cs_sprog;

/* The event id of a node's start, end or post. */
static inline uint32_t cs_sprog_event(uint32_t node, cs_sprog_ev which)
{
    return node * 3u + (uint32_t)which;
}

/* Lowers one iteration of plan p: streams as commsched_run_streams says
 * (per-group or single; concurrent is EINVAL: NCCL gives no order between
 * streams of one communicator, so ranks could deadlock); check adds FILL
 * (every buffer, after its allocation; the run-long inputs at the step's
 * start: the adaptor skips those no collective touches) and FETCH; calibrating runs every node alone (a device barrier on the
 * group before each collective, whose completion the compute stream then
 * waits for) to time it for the prediction. wait_runtime (may be NULL):
 * per node, nonzero when a wait node also plays a runtime. The plan is
 * borrowed for the call. On failure the program is left empty (fini is
 * still safe). */
commsched_status cs_sprog_build(cs_sprog *sp, const cs_plan *p,
                                commsched_run_streams streams, int check,
                                int calibrating, const uint8_t *wait_runtime,
                                commsched_error *err);
void cs_sprog_fini(cs_sprog *sp);

/* Proves the program safe under CUDA's stream semantics with vector
 * clocks: every buffer is allocated once before any use that is ordered
 * after the allocation, used only before its free (ordered by events),
 * freed once, and nothing the plan allocates is left at the end; every
 * event is recorded before a stream waits for it; every node's start and
 * end (and a collective's post) is recorded exactly once; every compute
 * node and collective runs exactly once (a wait's runtime at most once),
 * on its stream, between its opening event (start; a collective's post)
 * and its end; --check fills a buffer after its allocation and before
 * any collective that uses it (never after one has), and fetches a result
 * only once it is ordered after its collective; collectives appear
 * in the plan's order; every operand names something that exists.
 * EINTERNAL naming the first violation. */
commsched_status cs_sprog_verify(const cs_sprog *sp, const cs_plan *p,
                                 commsched_error *err);

/* "alloc", "free", ... for messages and tests. */
const char *cs_sop_kind_str(cs_sop_kind k);

#endif /* COMMSCHED_RUNTIME_STREAM_PROGRAM_H */
