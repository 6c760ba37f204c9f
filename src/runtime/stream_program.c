/* commsched — lowering a plan to streams and events, and proving the
 * result safe (stream_program.h). */
#include "stream_program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sop_names[] = {"alloc",   "free",    "record",
                                        "wait",    "compute", "collective",
                                        "barrier", "fill",    "fetch"};

const char *cs_sop_kind_str(cs_sop_kind k)
{
    return (unsigned)k < sizeof sop_names / sizeof sop_names[0]
               ? sop_names[k] : "?";
}

void cs_sprog_fini(cs_sprog *sp)
{
    if (!sp)
        return;
    free(sp->ops);
    free(sp->stream_of);
    memset(sp, 0, sizeof *sp);
}

/* ---- building ------------------------------------------------------------ */

typedef struct builder {
    cs_sprog *sp;
    size_t cap;
    int failed;
} builder;

static void emit(builder *b, cs_sop_kind kind, uint32_t stream, uint32_t arg)
{
    if (b->failed)
        return;
    if (cs_grow((void **)&b->sp->ops, &b->cap, b->sp->n_ops + 1,
                sizeof *b->sp->ops) != 0) {
        b->failed = 1;
        return;
    }
    b->sp->ops[b->sp->n_ops++] = (cs_sop){(uint8_t)kind, stream, arg};
}

static void emit_row(builder *b, const cs_csr *row, uint32_t v,
                     cs_sop_kind kind)
{
    for (uint32_t e = row->off[v]; e < row->off[v + 1]; e++)
        emit(b, kind, 0, row->idx[e]);
}

/* A collective's stream work: what runs once its stream may start it. */
static void emit_collective(builder *b, const cs_plan *p, uint32_t v,
                            uint32_t s, int calibrating)
{
    if (calibrating)
        emit(b, CS_SOP_BARRIER, s, p->g->nodes[v].group);
    emit(b, CS_SOP_RECORD, s, cs_sprog_event(v, CS_EV_POST));
    emit(b, CS_SOP_COLL, s, v);
    emit(b, CS_SOP_RECORD, s, cs_sprog_event(v, CS_EV_END));
}

commsched_status cs_sprog_build(cs_sprog *sp, const cs_plan *p,
                                commsched_run_streams streams, int check,
                                int calibrating, const uint8_t *wait_runtime,
                                commsched_error *err)
{
    memset(sp, 0, sizeof *sp);
    const commsched_graph *g = p->g;
    if (streams == COMMSCHED_RUN_STREAMS_CONCURRENT)
        return commsched_error_set(
            err, COMMSCHED_EINVAL, NULL,
            "--comm-streams concurrent has no GPU equivalent: NCCL orders "
            "nothing between streams of one communicator, so ranks could "
            "deadlock; use per-group or single");
    sp->n_nodes = p->n;
    sp->n_streams = 1u + (streams == COMMSCHED_RUN_STREAMS_SINGLE
                              ? 1u
                              : (g->n_groups ? g->n_groups : 1u));
    sp->ev_iter_start = 3u * p->n;
    sp->ev_iter_end = sp->ev_iter_start + 1u;
    sp->n_events = sp->ev_iter_end + sp->n_streams; /* + tails */
    sp->stream_of = calloc(p->n ? p->n : 1, sizeof *sp->stream_of);
    uint8_t *fetched = calloc(p->n ? p->n : 1, 1);
    builder b = {sp, 0, sp->stream_of == NULL || fetched == NULL};
    for (uint32_t v = 0; v < p->n && !b.failed; v++)
        sp->stream_of[v] = !cs_is_async_collective(&g->nodes[v]) ? 0u
                           : streams == COMMSCHED_RUN_STREAMS_SINGLE
                               ? 1u : 1u + g->nodes[v].group;

    /* Freeable inputs exist before the step; every device starts it
     * together. --check's values go in once per step: the run-long inputs
     * again (an in-place collective may have changed them), every other
     * buffer when it is allocated. */
    for (uint32_t i = 0; check && i < p->n_other; i++)
        if (p->bytes[p->other[i]] > 0)
            emit(&b, CS_SOP_FILL, 0, p->other[i]);
    for (uint32_t i = 0; i < p->n_baseline; i++)
        if (p->bytes[p->baseline[i]] > 0) { /* empty ones are never freed */
            emit(&b, CS_SOP_ALLOC, 0, p->baseline[i]);
            if (check)
                emit(&b, CS_SOP_FILL, 0, p->baseline[i]);
        }
    emit(&b, CS_SOP_BARRIER, 0, CS_SPROG_WORLD);
    emit(&b, CS_SOP_RECORD, 0, sp->ev_iter_start);

    for (uint32_t k = 0; k < p->n && !b.failed; k++) {
        uint32_t v = p->order[k];
        const cs_node *nd = &g->nodes[v];
        for (uint32_t e = p->alloc_at.off[v]; e < p->alloc_at.off[v + 1];
             e++) {
            emit(&b, CS_SOP_ALLOC, 0, p->alloc_at.idx[e]);
            if (check)
                emit(&b, CS_SOP_FILL, 0, p->alloc_at.idx[e]);
        }
        int coll = nd->kind == COMMSCHED_NODE_COLLECTIVE;
        int has_result = coll && nd->coll_op != COMMSCHED_COLL_BARRIER;
        emit(&b, CS_SOP_RECORD, 0, cs_sprog_event(v, CS_EV_START));
        switch (nd->kind) {
        case COMMSCHED_NODE_COMPUTE:
            emit(&b, CS_SOP_COMPUTE, 0, v);
            emit(&b, CS_SOP_RECORD, 0, cs_sprog_event(v, CS_EV_END));
            break;
        case COMMSCHED_NODE_COLLECTIVE:
            if (nd->is_sync) {
                emit_collective(&b, p, v, 0, calibrating);
            } else {
                uint32_t s = sp->stream_of[v];
                emit(&b, CS_SOP_WAIT, s, cs_sprog_event(v, CS_EV_START));
                emit_collective(&b, p, v, s, calibrating);
                if (calibrating) /* alone: nothing overlaps it */
                    emit(&b, CS_SOP_WAIT, 0, cs_sprog_event(v, CS_EV_END));
            }
            if (check && has_result && (nd->is_sync || calibrating)) {
                emit(&b, CS_SOP_FETCH, 0, v);
                fetched[v] = 1;
            }
            break;
        default: /* wait */
            for (uint32_t e = p->wait_colls.off[v];
                 e < p->wait_colls.off[v + 1]; e++)
                emit(&b, CS_SOP_WAIT, 0,
                     cs_sprog_event(p->wait_colls.idx[e], CS_EV_END));
            if (wait_runtime && wait_runtime[v])
                emit(&b, CS_SOP_COMPUTE, 0, v);
            emit(&b, CS_SOP_RECORD, 0, cs_sprog_event(v, CS_EV_END));
            /* After the end event: --check's copy is not exposed comm. */
            for (uint32_t e = p->wait_colls.off[v];
                 check && e < p->wait_colls.off[v + 1]; e++) {
                uint32_t c = p->wait_colls.idx[e];
                if (!fetched[c] &&
                    g->nodes[c].coll_op != COMMSCHED_COLL_BARRIER) {
                    emit(&b, CS_SOP_FETCH, 0, c);
                    fetched[c] = 1;
                }
            }
            break;
        }
        emit_row(&b, &p->free_after, v, CS_SOP_FREE);
    }

    /* The step ends when every stream has drained: collectives nobody
     * waits for complete here, then what lives to the end is freed. */
    for (uint32_t s = 1; s < sp->n_streams; s++) {
        emit(&b, CS_SOP_RECORD, s, sp->ev_iter_end + s);
        emit(&b, CS_SOP_WAIT, 0, sp->ev_iter_end + s);
    }
    for (uint32_t k = 0; check && k < p->n; k++) {
        uint32_t v = p->order[k];
        if (g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE && !fetched[v] &&
            g->nodes[v].coll_op != COMMSCHED_COLL_BARRIER)
            emit(&b, CS_SOP_FETCH, 0, v);
    }
    for (uint32_t i = 0; i < p->n_at_end; i++)
        emit(&b, CS_SOP_FREE, 0, p->at_end[i]);
    emit(&b, CS_SOP_RECORD, 0, sp->ev_iter_end);
    free(fetched);
    if (b.failed) {
        cs_sprog_fini(sp);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    return COMMSCHED_OK;
}

/* ---- verifying ------------------------------------------------------------- */

/* Vector clocks: vc[s * S + t] is how many operations of stream t are
 * ordered before the current point of stream s (t == s: how many s has
 * run). An operation of stream t with index i happens before the current
 * point of s exactly when vc[s * S + t] > i. */
typedef struct vstate {
    uint32_t S;
    uint32_t *vc;        /* S x S */
    uint32_t *ev;        /* per event: S entries, the clock it captured */
    uint8_t *ev_seen;    /* per event: times recorded */
    uint32_t *alloc_at;  /* per buffer: S entries + 1 (stream, index + 1) */
    uint32_t *last_use;  /* per buffer: S entries, index + 1 of last use */
    uint8_t *state;      /* per buffer: 0 never, 1 live, 2 freed */
    uint8_t *phase;      /* per node: P_* below */
    uint32_t *work_on;   /* per node: the stream its work must run on */
    uint8_t *work;       /* per node: COMPUTE / COLL operations seen */
    uint32_t *coll_at;   /* per node: (stream, index + 1) of its COLL */
    uint32_t *fill_at;   /* per buffer: (stream, index + 1) of its FILL */
    uint8_t *coll_used;  /* per buffer: a collective ran on it */
} vstate;

/* A node's work is bracketed by its events: a compute or wait node's by
 * start and end on the compute stream, a collective's by post and end on
 * its stream (its start, the issue, is on the compute stream before). */
enum { P_NONE = 0, P_OPEN = 1, P_WORKED = 2, P_ENDED = 3 };

enum { B_NEVER = 0, B_LIVE = 1, B_FREED = 2 };

static commsched_status violation(commsched_error *err, size_t at,
                                  const cs_sop *op, const char *what,
                                  const char *name)
{
    return commsched_error_set(
        err, COMMSCHED_EINTERNAL, NULL,
        "stream program: operation %zu (%s on stream %u): %s \"%s\"", at,
        cs_sop_kind_str((cs_sop_kind)op->kind), op->stream, what, name);
}

/* Whether the operation recorded at (stream, index + 1) in at[0..1] is
 * ordered before the current point of stream s. */
static int ordered_before(const vstate *st, const uint32_t *at, uint32_t s)
{
    return at[1] != 0 && st->vc[s * st->S + at[0]] >= at[1];
}

/* Event bookkeeping of node v's start, end and post records. */
static commsched_status bracket(vstate *st, const cs_sprog *sp,
                                const cs_plan *p, uint32_t e, uint32_t s,
                                size_t at, const cs_sop *op,
                                commsched_error *err)
{
    if (e >= 3 * p->n)
        return COMMSCHED_OK; /* the iteration's own events */
    uint32_t v = e / 3, which = e % 3;
    const cs_node *nd = &p->g->nodes[v];
    int coll = nd->kind == COMMSCHED_NODE_COLLECTIVE;
    if (which == CS_EV_POST && !coll)
        return violation(err, at, op, "records a post event of a node that is "
                                      "not a collective:", nd->name);
    if ((which == CS_EV_START && !coll) || which == CS_EV_POST) {
        if (s != sp->stream_of[v])
            return violation(err, at, op,
                             "opens a node's work on the wrong stream:",
                             nd->name);
        st->phase[v] = P_OPEN;
        st->work_on[v] = s;
    } else if (which == CS_EV_END) {
        int may_skip = nd->kind == COMMSCHED_NODE_WAIT; /* work optional */
        if (s != st->work_on[v] ||
            !(st->phase[v] == P_WORKED || (may_skip && st->phase[v] == P_OPEN)))
            return violation(err, at, op,
                             "records a node's end before its work, or on "
                             "another stream:",
                             nd->name);
        st->phase[v] = P_ENDED;
    }
    return COMMSCHED_OK;
}

/* A node's work (COMPUTE or COLL) between its opening and its end. */
static commsched_status work(vstate *st, const cs_plan *p, uint32_t v,
                             uint32_t s, size_t at, const cs_sop *op,
                             commsched_error *err)
{
    const cs_node *nd = &p->g->nodes[v];
    int coll = nd->kind == COMMSCHED_NODE_COLLECTIVE;
    if ((op->kind == CS_SOP_COLL) != coll ||
        (op->kind == CS_SOP_COMPUTE && nd->kind != COMMSCHED_NODE_COMPUTE &&
         nd->kind != COMMSCHED_NODE_WAIT))
        return violation(err, at, op, "is the wrong kind of work for",
                         nd->name);
    if (st->phase[v] != P_OPEN || st->work_on[v] != s)
        return violation(err, at, op,
                         "runs outside its node's events (or twice):",
                         nd->name);
    for (int side = 0; coll && side < 2; side++) {
        uint32_t b = side ? p->coll[v].recv : p->coll[v].send;
        if (b == COMMSCHED_NONE)
            continue;
        if (st->fill_at[b * 2 + 1] && !ordered_before(st, st->fill_at + b * 2, s))
            return violation(err, at, op,
                             "may run before --check has filled its "
                             "buffers:",
                             nd->name);
        st->coll_used[b] = 1;
    }
    st->phase[v] = P_WORKED;
    st->work[v]++;
    if (coll) {
        st->coll_at[v * 2] = s;
        st->coll_at[v * 2 + 1] = st->vc[s * st->S + s] + 1;
    }
    return COMMSCHED_OK;
}

/* A use of root buffer b on stream s at the current point. */
static commsched_status use(vstate *st, const cs_plan *p, uint32_t b,
                            uint32_t s, size_t at, const cs_sop *op,
                            commsched_error *err)
{
    if (b == COMMSCHED_NONE || p->bytes[b] == 0)
        return COMMSCHED_OK;
    const char *name = p->g->buffers[b].name;
    if (st->state[b] == B_NEVER) {
        for (uint32_t i = 0; i < p->n_other; i++)
            if (p->other[i] == b)
                return COMMSCHED_OK; /* allocated once, for the run */
        return violation(err, at, op, "uses a buffer never allocated:", name);
    }
    if (st->state[b] == B_FREED)
        return violation(err, at, op, "uses a freed buffer:", name);
    uint32_t as = st->alloc_at[b * 2], ai = st->alloc_at[b * 2 + 1];
    if (st->vc[s * st->S + as] < ai)
        return violation(err, at, op,
                         "uses a buffer before its allocation is ordered "
                         "before it:",
                         name);
    uint32_t *lu = st->last_use + (size_t)b * st->S;
    uint32_t idx = st->vc[s * st->S + s] + 1;
    if (lu[s] < idx)
        lu[s] = idx;
    return COMMSCHED_OK;
}

/* The root buffers a node's operation touches: a collective's send and
 * receive buffers; a compute node's inputs and outputs. */
static commsched_status use_node(vstate *st, const cs_plan *p, uint32_t v,
                                 uint32_t s, size_t at, const cs_sop *op,
                                 commsched_error *err)
{
    const commsched_graph *g = p->g;
    const cs_node *nd = &g->nodes[v];
    commsched_status rc;
    if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
        if ((rc = use(st, p, p->coll[v].send, s, at, op, err)) != COMMSCHED_OK)
            return rc;
        return use(st, p, p->coll[v].recv, s, at, op, err);
    }
    if (nd->kind == COMMSCHED_NODE_WAIT)
        return COMMSCHED_OK; /* a wait's runtime touches nothing */
    for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++)
        if ((rc = use(st, p, g->buffers[g->reads.idx[e]].root, s, at, op,
                      err)) != COMMSCHED_OK)
            return rc;
    for (uint32_t i = 0; i < nd->n_out; i++)
        if ((rc = use(st, p, g->buffers[nd->out_first + i].root, s, at, op,
                      err)) != COMMSCHED_OK)
            return rc;
    return COMMSCHED_OK;
}

static commsched_status step(vstate *st, const cs_sprog *sp, const cs_plan *p,
                             size_t at, uint32_t *last_coll_pos,
                             commsched_error *err)
{
    const cs_sop *op = &sp->ops[at];
    uint32_t S = st->S, s = op->stream;
    uint32_t *mine = st->vc + (size_t)s * S;
    const commsched_graph *g = p->g;
    char num[32];
    if (s >= S)
        return violation(err, at, op, "names a stream that does not exist:",
                         "");
    uint32_t limit = op->kind == CS_SOP_ALLOC || op->kind == CS_SOP_FREE ||
                             op->kind == CS_SOP_FILL
                         ? g->n_buffers
                     : op->kind == CS_SOP_RECORD || op->kind == CS_SOP_WAIT
                         ? sp->n_events
                     : op->kind == CS_SOP_BARRIER ? g->n_groups
                                                  : p->n;
    if (op->arg >= limit &&
        !(op->kind == CS_SOP_BARRIER && op->arg == CS_SPROG_WORLD)) {
        snprintf(num, sizeof num, "%u", op->arg);
        return violation(err, at, op, "names something that does not exist:",
                         num);
    }
    switch ((cs_sop_kind)op->kind) {
    case CS_SOP_RECORD: {
        commsched_status rc = bracket(st, sp, p, op->arg, s, at, op, err);
        if (rc != COMMSCHED_OK)
            return rc;
        memcpy(st->ev + (size_t)op->arg * S, mine, S * sizeof *mine);
        if (st->ev_seen[op->arg] < 255)
            st->ev_seen[op->arg]++;
        return COMMSCHED_OK; /* marks a point, runs nothing */
    }
    case CS_SOP_WAIT:
        if (!st->ev_seen[op->arg]) {
            snprintf(num, sizeof num, "%u", op->arg);
            return violation(err, at, op,
                             "waits for an event not recorded yet (CUDA "
                             "would not wait at all):",
                             num);
        }
        for (uint32_t t = 0; t < S; t++) {
            uint32_t e = st->ev[(size_t)op->arg * S + t];
            if (e > mine[t])
                mine[t] = e;
        }
        return COMMSCHED_OK;
    case CS_SOP_ALLOC:
        if (st->state[op->arg] == B_LIVE)
            return violation(err, at, op, "allocates a live buffer:",
                             g->buffers[op->arg].name);
        st->state[op->arg] = B_LIVE;
        st->alloc_at[op->arg * 2] = s;
        st->alloc_at[op->arg * 2 + 1] = mine[s] + 1;
        memset(st->last_use + (size_t)op->arg * S, 0, S * sizeof *mine);
        break;
    case CS_SOP_FREE: {
        uint32_t b = op->arg;
        if (st->state[b] != B_LIVE)
            return violation(err, at, op, "frees a buffer that is not live:",
                             g->buffers[b].name);
        const uint32_t *lu = st->last_use + (size_t)b * S;
        for (uint32_t t = 0; t < S; t++)
            if (lu[t] > mine[t])
                return violation(err, at, op,
                                 "frees a buffer another stream may still "
                                 "use:",
                                 g->buffers[b].name);
        st->state[b] = B_FREED;
        break;
    }
    case CS_SOP_FILL: {
        uint32_t b = op->arg;
        if (st->coll_used[b])
            return violation(err, at, op,
                             "fills a buffer after a collective used it:",
                             g->buffers[b].name);
        commsched_status rc = use(st, p, b, s, at, op, err);
        if (rc != COMMSCHED_OK)
            return rc;
        st->fill_at[b * 2] = s;
        st->fill_at[b * 2 + 1] = mine[s] + 1;
        break;
    }
    case CS_SOP_FETCH: {
        uint32_t v = op->arg;
        if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
            return violation(err, at, op, "fetches a node that is not a "
                                          "collective:",
                             g->nodes[v].name);
        if (!ordered_before(st, st->coll_at + v * 2, s)) {
            return violation(err, at, op,
                             "may copy a result before the collective has "
                             "finished:",
                             g->nodes[v].name);
        }
        commsched_status rc = use_node(st, p, v, s, at, op, err);
        if (rc != COMMSCHED_OK)
            return rc;
        break;
    }
    case CS_SOP_COMPUTE:
    case CS_SOP_COLL: {
        if (op->kind == CS_SOP_COLL) {
            uint32_t pos = p->pos[op->arg];
            if (*last_coll_pos != COMMSCHED_NONE && pos < *last_coll_pos)
                return violation(err, at, op,
                                 "issues a collective out of the plan's "
                                 "order:",
                                 g->nodes[op->arg].name);
            *last_coll_pos = pos;
        }
        commsched_status rc = work(st, p, op->arg, s, at, op, err);
        if (rc == COMMSCHED_OK)
            rc = use_node(st, p, op->arg, s, at, op, err);
        if (rc != COMMSCHED_OK)
            return rc;
        break;
    }
    case CS_SOP_BARRIER:
        break;
    default:
        return violation(err, at, op, "is of no known kind", "");
    }
    mine[s]++;
    return COMMSCHED_OK;
}

commsched_status cs_sprog_verify(const cs_sprog *sp, const cs_plan *p,
                                 commsched_error *err)
{
    const commsched_graph *g = p->g;
    uint32_t S = sp->n_streams, nb = g->n_buffers ? g->n_buffers : 1;
    uint32_t nn = p->n ? p->n : 1;
    vstate st;
    memset(&st, 0, sizeof st);
    st.S = S;
    st.phase = calloc(nn, 1);
    st.work_on = calloc(nn, sizeof *st.work_on);
    st.work = calloc(nn, 1);
    st.coll_at = calloc((size_t)nn * 2, sizeof *st.coll_at);
    st.fill_at = calloc((size_t)nb * 2, sizeof *st.fill_at);
    st.coll_used = calloc(nb, 1);
    st.vc = calloc((size_t)S * S, sizeof *st.vc);
    st.ev = calloc((size_t)sp->n_events * S, sizeof *st.ev);
    st.ev_seen = calloc(sp->n_events ? sp->n_events : 1, 1);
    st.alloc_at = calloc((size_t)nb * 2, sizeof *st.alloc_at);
    st.last_use = calloc((size_t)nb * S, sizeof *st.last_use);
    st.state = calloc(nb, 1);
    commsched_status rc = COMMSCHED_OK;
    if (!st.vc || !st.ev || !st.ev_seen || !st.alloc_at || !st.last_use ||
        !st.state || !st.phase || !st.work_on || !st.work || !st.coll_at ||
        !st.fill_at || !st.coll_used) {
        rc = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto done;
    }
    uint32_t last_coll = COMMSCHED_NONE;
    for (size_t i = 0; i < sp->n_ops && rc == COMMSCHED_OK; i++)
        rc = step(&st, sp, p, i, &last_coll, err);
    if (rc != COMMSCHED_OK)
        goto done;
    for (uint32_t b = 0; b < g->n_buffers; b++)
        if (st.state[b] == B_LIVE) {
            rc = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                     "stream program: buffer \"%s\" is still "
                                     "allocated when the iteration ends",
                                     g->buffers[b].name);
            goto done;
        }
    for (uint32_t v = 0; v < p->n; v++) {
        int coll = g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
        int once = coll || g->nodes[v].kind == COMMSCHED_NODE_COMPUTE;
        if (once ? st.work[v] != 1 : st.work[v] > 1) {
            rc = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                     "stream program: \"%s\" runs %u times, "
                                     "not %s",
                                     g->nodes[v].name, (unsigned)st.work[v],
                                     once ? "once" : "at most once");
            goto done;
        }
        for (uint32_t w = 0; w < 3; w++) {
            if (w == CS_EV_POST && !coll)
                continue;
            if (st.ev_seen[cs_sprog_event(v, (cs_sprog_ev)w)] != 1) {
                rc = commsched_error_set(
                    err, COMMSCHED_EINTERNAL, NULL,
                    "stream program: the %s event of \"%s\" is recorded %u "
                    "times, not once",
                    w == CS_EV_START ? "start" : w == CS_EV_END ? "end"
                                                                : "post",
                    g->nodes[v].name,
                    (unsigned)st.ev_seen[cs_sprog_event(v, (cs_sprog_ev)w)]);
                goto done;
            }
        }
    }
    if (st.ev_seen[sp->ev_iter_start] != 1 || st.ev_seen[sp->ev_iter_end] != 1)
        rc = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                 "stream program: the iteration's start or "
                                 "end event is not recorded once");
    /* The end event must come after everything: every stream's work is
     * ordered before it. */
    for (uint32_t t = 0; rc == COMMSCHED_OK && t < S; t++)
        if (st.ev[(size_t)sp->ev_iter_end * S + t] < st.vc[(size_t)t * S + t])
            rc = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                     "stream program: stream %u still runs "
                                     "work after the iteration's end event",
                                     t);
done:
    free(st.vc);
    free(st.ev);
    free(st.ev_seen);
    free(st.alloc_at);
    free(st.last_use);
    free(st.state);
    free(st.phase);
    free(st.work_on);
    free(st.work);
    free(st.coll_at);
    free(st.fill_at);
    free(st.coll_used);
    return rc;
}
