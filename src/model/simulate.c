/* commsched — the simulator (docs/REPORTS.md "What the figures mean"; the API is in simulate.h).
 *
 * One forward sweep in schedule order does everything that depends only on
 * the past: stream times, stalls, and the critical-path DP of the lower
 * bound. The DP is correct in schedule order because every simulated order
 * is topological for data and `after` edges (checked on the way, EORDER
 * otherwise) and a fake edge only counts when the order respects it, so
 * every counted predecessor is already final when a node is reached.
 *
 * Edges the bound counts are exactly the ones the sweep enforces:
 * - from a compute node, wait or sync collective: every out-edge (each
 *   advances the compute stream, and every later node is issued after);
 * - from an async collective: only toward the wait that reads its outputs
 *   (the jump) and toward a later collective on the same comm stream (the
 *   stream is in order). A control edge to a compute node, or a collective
 *   on another stream, is satisfied at issue time, not at the end.
 * Floating-point sums are formed in the same order as the stream times, and
 * rounding is monotone, so makespan >= bound holds exactly, not just up to
 * an epsilon.
 *
 * Exposed time: a wait's stall is split over the collectives it reads by
 * their end times (the first to end owns the stall up to its end, the next
 * the increment beyond, ...), so exposures add up to the stalls. A sync
 * collective's exposure is its end minus the compute-stream time at issue.
 * A collective that queued behind others on its stream can therefore show
 * more exposure than its own runtime; the total never exceeds the comm
 * streams' busy time.
 *
 * Memory over simulated time uses the memory model's rules (which buffers
 * count, the freeable-input baseline, never-freed outputs) but frees a
 * buffer at the END, in simulated time, of its last reader — the reader that
 * ends last, which with async collectives need not be the last in order.
 * Events are merged from per-stream sequences (each already sorted by
 * (time, position, alloc-before-free)), so a serial schedule's curve peaks
 * exactly at the §3 per-step peak. */
#include "commsched/simulate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "graph_layout.h"
#include "heap.h"
#include "kernel.h"

struct commsched_sim {
    const commsched_graph *g;
    uint32_t n;
    commsched_sim_options opts;
    commsched_sim_totals totals;
    commsched_sim_node *nodes; /* by node index */
    uint32_t *order;
    double *fin;               /* critical-path finish per node */
    uint32_t *seq_next;        /* next node on the same event sequence */
    /* Compute-node intervals in time order, for overlapped compute. */
    double *comp_start, *comp_end, *comp_before;
    size_t n_comp;
    /* Streams: 0 compute, then comm streams. */
    uint32_t n_streams, max_streams;
    double *stream_free, *stream_busy;
    uint32_t *seq_head, *seq_tail;
    /* Collectives a wait reads (scratch, grown on demand). */
    uint32_t *wcoll;
    size_t cap_wcoll;
    struct wait_key *wkey; /* sort_by_end's keys */
    size_t cap_wkey;
    /* Memory. */
    int64_t *alloc, *free_step, *free_sim;
    cs_heap events;     /* sequence cursors by their next event */
    uint32_t *cur_node;
    uint8_t *cur_phase;
    commsched_sim_memory_point *curve;
    size_t n_curve, cap_curve;
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

void commsched_sim_options_init(commsched_sim_options *o)
{
    o->comm_streams = COMMSCHED_STREAMS_PER_GROUP;
    o->flags = COMMSCHED_SIM_MEMORY;
}

void commsched_sim_destroy(commsched_sim *sim)
{
    if (!sim)
        return;
    free(sim->nodes);
    free(sim->order);
    free(sim->fin);
    free(sim->seq_next);
    free(sim->comp_start);
    free(sim->comp_end);
    free(sim->comp_before);
    free(sim->stream_free);
    free(sim->stream_busy);
    free(sim->seq_head);
    free(sim->seq_tail);
    free(sim->wcoll);
    free(sim->wkey);
    free(sim->alloc);
    free(sim->free_step);
    free(sim->free_sim);
    cs_heap_fini(&sim->events);
    free(sim->cur_node);
    free(sim->cur_phase);
    free(sim->curve);
    free(sim);
}

commsched_status commsched_sim_create(const commsched_graph *g,
                                      commsched_sim **out,
                                      commsched_error *err)
{
    *out = NULL;
    commsched_sim *sim = cs_calloc(1, sizeof *sim);
    if (!sim)
        return oom(err);
    uint32_t n = g->n_nodes;
    sim->g = g;
    sim->n = n;
    commsched_sim_options_init(&sim->opts);
    sim->max_streams = 1 + (g->n_groups > 1 ? g->n_groups : 1);
    size_t S = sim->max_streams;
    sim->nodes = cs_calloc(n, sizeof *sim->nodes);
    sim->order = cs_malloc_array(n, sizeof *sim->order);
    sim->fin = cs_malloc_array(n, sizeof *sim->fin);
    sim->seq_next = cs_malloc_array(n, sizeof *sim->seq_next);
    sim->comp_start = cs_malloc_array(n, sizeof *sim->comp_start);
    sim->comp_end = cs_malloc_array(n, sizeof *sim->comp_end);
    sim->comp_before = cs_malloc_array(n, sizeof *sim->comp_before);
    sim->stream_free = cs_calloc(S, sizeof *sim->stream_free);
    sim->stream_busy = cs_calloc(S, sizeof *sim->stream_busy);
    sim->seq_head = cs_malloc_array(S, sizeof *sim->seq_head);
    sim->seq_tail = cs_malloc_array(S, sizeof *sim->seq_tail);
    int events_failed = cs_heap_reserve(&sim->events, S) != 0;
    sim->cur_node = cs_malloc_array(S, sizeof *sim->cur_node);
    sim->cur_phase = cs_malloc_array(S, sizeof *sim->cur_phase);
    if (!sim->nodes || !sim->order || !sim->fin || !sim->seq_next ||
        !sim->comp_start || !sim->comp_end || !sim->comp_before ||
        !sim->stream_free || !sim->stream_busy || !sim->seq_head ||
        !sim->seq_tail || events_failed || !sim->cur_node || !sim->cur_phase) {
        commsched_sim_destroy(sim);
        return oom(err);
    }
    *out = sim;
    return COMMSCHED_OK;
}

const commsched_graph *commsched_sim_graph(const commsched_sim *sim)
{
    return sim->g;
}
const commsched_sim_totals *commsched_sim_get_totals(const commsched_sim *sim)
{
    return &sim->totals;
}
const commsched_sim_node *commsched_sim_get_nodes(const commsched_sim *sim)
{
    return sim->nodes;
}
const uint32_t *commsched_sim_get_order(const commsched_sim *sim)
{
    return sim->order;
}
commsched_sim_options commsched_sim_get_options(const commsched_sim *sim)
{
    return sim->opts;
}
uint32_t commsched_sim_stream_count(const commsched_sim *sim)
{
    return sim->n_streams;
}
const char *commsched_sim_stream_name(const commsched_sim *sim,
                                      uint32_t stream)
{
    if (stream == COMMSCHED_STREAM_COMPUTE)
        return "compute";
    if (stream >= sim->n_streams)
        return NULL;
    if (sim->opts.comm_streams == COMMSCHED_STREAMS_SINGLE)
        return "comm";
    return sim->g->groups[stream - 1].name;
}
double commsched_sim_stream_busy(const commsched_sim *sim, uint32_t stream)
{
    return stream < sim->n_streams ? sim->stream_busy[stream] : 0.0;
}
const commsched_sim_memory_point *
commsched_sim_get_memory_curve(const commsched_sim *sim, size_t *count)
{
    *count = sim->n_curve;
    return sim->n_curve ? sim->curve : NULL;
}

/* ---- the sweep ---------------------------------------------------------- */

static inline uint32_t stream_of(const commsched_sim *sim, const cs_node *nd)
{
    return sim->opts.comm_streams == COMMSCHED_STREAMS_SINGLE ? 1u
                                                              : 1u + nd->group;
}

static inline void seq_append(commsched_sim *sim, uint32_t seq, uint32_t v)
{
    sim->seq_next[v] = COMMSCHED_NONE;
    if (sim->seq_head[seq] == COMMSCHED_NONE)
        sim->seq_head[seq] = v;
    else
        sim->seq_next[sim->seq_tail[seq]] = v;
    sim->seq_tail[seq] = v;
}

/* Whether an edge d -> v is one the sweep enforces (see the file comment);
 * waits' edges from their own collectives are added separately. */
static inline int edge_counts(const commsched_sim *sim, uint32_t d,
                              const cs_node *v, uint32_t v_stream)
{
    const cs_node *nd = &sim->g->nodes[d];
    if (!cs_is_async_collective(nd))
        return 1;
    return v->kind == COMMSCHED_NODE_COLLECTIVE &&
           stream_of(sim, nd) == v_stream;
}

struct wait_key {
    double end;
    uint32_t seq, node;
};

static int cmp_wait_key(const void *a, const void *b)
{
    const struct wait_key *x = a, *y = b;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* sim->wcoll[0..k) by end time, ties in their present order (what the
 * insertion below gives), in O(k log k). Returns k, or -1 on OOM. */
static long sort_by_end(commsched_sim *sim, size_t k)
{
    if (cs_grow((void **)&sim->wkey, &sim->cap_wkey, k, sizeof *sim->wkey))
        return -1;
    for (size_t i = 0; i < k; i++)
        sim->wkey[i] = (struct wait_key){sim->nodes[sim->wcoll[i]].end_ns,
                                         (uint32_t)i, sim->wcoll[i]};
    qsort(sim->wkey, k, sizeof *sim->wkey, cmp_wait_key);
    for (size_t i = 0; i < k; i++)
        sim->wcoll[i] = sim->wkey[i].node;
    return (long)k;
}

/* The collectives whose outputs wait v reads (its direct producers), in
 * sim->wcoll sorted by end time. Returns the count, or -1 on OOM. */
static long wait_collectives(commsched_sim *sim, uint32_t v)
{
    const commsched_graph *g = sim->g;
    uint32_t len = CS_ROW_LEN(g->reads, v);
    if (cs_grow((void **)&sim->wcoll, &sim->cap_wcoll, len ? len : 1,
                sizeof *sim->wcoll) != 0)
        return -1;
    size_t k = 0;
    for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++) {
        uint32_t p = g->buffers[g->reads.idx[e]].producer;
        if (p == COMMSCHED_NONE ||
            g->nodes[p].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        sim->wcoll[k++] = p;
    }
    /* By end time, ties in read order. A wait reads one collective, or a
     * few: insertion; one that reads thousands (a hostile graph) is
     * sorted by key instead of in O(k^2). */
    if (k > 32)
        return sort_by_end(sim, k);
    for (size_t j = 1; j < k; j++) {
        uint32_t p = sim->wcoll[j];
        double end = sim->nodes[p].end_ns;
        size_t i = j;
        while (i > 0 && sim->nodes[sim->wcoll[i - 1]].end_ns > end) {
            sim->wcoll[i] = sim->wcoll[i - 1];
            i--;
        }
        sim->wcoll[i] = p;
    }
    return (long)k;
}

/* Compute-node time on the compute stream in [0, t]. */
static double busy_upto(const commsched_sim *sim, double t)
{
    size_t lo = 0, hi = sim->n_comp; /* first interval starting after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sim->comp_start[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0.0;
    size_t i = lo - 1;
    double within = (t < sim->comp_end[i] ? t : sim->comp_end[i]) -
                    sim->comp_start[i];
    return sim->comp_before[i] + within;
}

static commsched_status sweep(commsched_sim *sim, const double *rt,
                              commsched_error *err)
{
    const commsched_graph *g = sim->g;
    commsched_sim_totals *T = &sim->totals;
    double load_compute = 0, path = 0, comp_total = 0;
    cs_clock clk = {0.0, sim->stream_free};
    for (uint32_t k = 0; k < sim->n; k++) {
        uint32_t v = sim->order[k];
        const cs_node *nd = &g->nodes[v];
        commsched_sim_node *res = &sim->nodes[v];
        double r = rt[v];
        if (!(r >= 0) || isinf(r))
            return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                       "runtime of node \"%s\" must be a "
                                       "finite number >= 0, got %g",
                                       nd->name, r);
        int is_coll = nd->kind == COMMSCHED_NODE_COLLECTIVE;
        uint32_t vs = is_coll ? stream_of(sim, nd) : COMMSCHED_STREAM_COMPUTE;
        double best = 0;
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++) {
            uint32_t d = g->deps.idx[e];
            if (sim->nodes[d].position > k)
                return commsched_error_set(
                    err, COMMSCHED_EORDER, "schedule",
                    "\"%s\" (position %u) runs before its dependency \"%s\" "
                    "(position %u)",
                    nd->name, k, g->nodes[d].name, sim->nodes[d].position);
            if (sim->fin[d] > best && edge_counts(sim, d, nd, vs))
                best = sim->fin[d];
        }
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++) {
            uint32_t d = g->after_fake.idx[e];
            if (sim->nodes[d].position < k && sim->fin[d] > best &&
                edge_counts(sim, d, nd, vs))
                best = sim->fin[d];
        }
        res->issue_ns = clk.now;
        res->exposed_ns = 0;
        res->overlapped_ns = 0;
        res->wait = COMMSCHED_NONE;
        res->stream = vs;
        if (nd->kind == COMMSCHED_NODE_COMPUTE) {
            res->start_ns = cs_clock_compute(&clk, r);
            res->end_ns = clk.now;
            sim->comp_start[sim->n_comp] = res->start_ns;
            sim->comp_end[sim->n_comp] = res->end_ns;
            sim->comp_before[sim->n_comp] = comp_total;
            sim->n_comp++;
            comp_total += r;
            load_compute += r;
            T->compute_ns += r;
            seq_append(sim, COMMSCHED_STREAM_COMPUTE, v);
        } else if (is_coll) {
            res->start_ns = cs_clock_collective(&clk, vs, r, nd->is_sync);
            res->end_ns = res->start_ns + r;
            sim->stream_busy[vs] += r;
            T->comm_ns += r;
            T->n_collectives++;
            if (nd->is_sync) {
                res->exposed_ns = res->end_ns - res->issue_ns;
                T->exposed_ns += res->exposed_ns;
                load_compute += r;
                seq_append(sim, COMMSCHED_STREAM_COMPUTE, v);
            } else {
                seq_append(sim, vs, v);
            }
        } else { /* wait */
            long nc = wait_collectives(sim, v);
            if (nc < 0)
                return oom(err);
            double cur = clk.now;
            for (long i = 0; i < nc; i++) {
                uint32_t c = sim->wcoll[i];
                commsched_sim_node *cr = &sim->nodes[c];
                if (cr->wait == COMMSCHED_NONE)
                    cr->wait = v;
                if (sim->fin[c] > best)
                    best = sim->fin[c];
                if (cr->end_ns > cur) {
                    cr->exposed_ns += cr->end_ns - cur;
                    cur = cr->end_ns;
                }
            }
            res->exposed_ns = cur - clk.now;
            T->exposed_ns += res->exposed_ns;
            res->start_ns = cs_clock_wait(&clk, cur, r);
            res->end_ns = clk.now;
            load_compute += r;
            T->n_waits++;
            seq_append(sim, COMMSCHED_STREAM_COMPUTE, v);
        }
        sim->fin[v] = best + r;
        if (sim->fin[v] > path)
            path = sim->fin[v];
    }

    double makespan = cs_clock_makespan(&clk, sim->n_streams);
    T->bound_comm_ns = 0;
    T->bound_comm_stream = COMMSCHED_NONE;
    for (uint32_t s = 1; s < sim->n_streams; s++) {
        if (sim->stream_busy[s] > T->bound_comm_ns ||
            (T->bound_comm_stream == COMMSCHED_NONE && sim->stream_busy[s] > 0)) {
            T->bound_comm_ns = sim->stream_busy[s];
            T->bound_comm_stream = s;
        }
    }
    sim->stream_busy[COMMSCHED_STREAM_COMPUTE] = load_compute;
    sim->stream_free[COMMSCHED_STREAM_COMPUTE] = clk.now;
    T->makespan_ns = makespan;
    T->bound_compute_ns = load_compute;
    T->bound_path_ns = path;
    double lb = load_compute;
    if (T->bound_comm_ns > lb)
        lb = T->bound_comm_ns;
    if (path > lb)
        lb = path;
    T->bound_stream = COMMSCHED_NONE;
    if (sim->opts.flags & COMMSCHED_SIM_BOUND) {
        if (cs_stream_bound(g, sim->order, rt,
                            sim->opts.comm_streams == COMMSCHED_STREAMS_SINGLE,
                            &T->bound_stream_ns, &T->bound_stream) != 0)
            return oom(err);
        /* Jackson's schedule sums in another order than the timeline: an
         * excess within rounding is not a faster order. */
        if (T->bound_stream_ns > makespan &&
            T->bound_stream_ns <= makespan * (1 + 1e-12))
            T->bound_stream_ns = makespan;
        if (T->bound_stream_ns > lb)
            lb = T->bound_stream_ns;
    }
    T->lower_bound_ns = lb;
    T->efficiency = makespan > 0 ? lb / makespan : 1.0;
    T->overlap = T->comm_ns > 0 ? 1.0 - T->exposed_ns / T->comm_ns : 1.0;
    if (T->overlap < 0) /* exposed <= comm holds; sums round differently */
        T->overlap = 0;

    /* Compute that ran while each async collective was in flight. */
    for (uint32_t v = 0; v < sim->n; v++) {
        const cs_node *nd = &g->nodes[v];
        if (!cs_is_async_collective(nd))
            continue;
        commsched_sim_node *res = &sim->nodes[v];
        res->overlapped_ns =
            busy_upto(sim, res->end_ns) - busy_upto(sim, res->start_ns);
    }
    return COMMSCHED_OK;
}

/* ---- memory over simulated time ---------------------------------------- */

/* Sequence s's cursor in the event heap (heap.h), keyed by its next event
 * (time, position, phase); phase 0 is the node's allocation at its start,
 * 1 its frees at its end. Distinct: a position has one node. */
static inline cs_heap_item event_of(const commsched_sim *sim, uint32_t s)
{
    const commsched_sim_node *n = &sim->nodes[sim->cur_node[s]];
    cs_heap_item x = {0, sim->cur_phase[s] ? n->end_ns : n->start_ns,
                      (uint64_t)n->position << 1 | sim->cur_phase[s], s};
    return x;
}

static int curve_push(commsched_sim *sim, double t, int64_t bytes)
{
    if (cs_grow((void **)&sim->curve, &sim->cap_curve, sim->n_curve + 1,
                sizeof *sim->curve) != 0)
        return -1;
    sim->curve[sim->n_curve].time_ns = t;
    sim->curve[sim->n_curve].bytes = bytes;
    sim->n_curve++;
    return 0;
}

static commsched_status memory(commsched_sim *sim, commsched_error *err)
{
    const commsched_graph *g = sim->g;
    commsched_sim_totals *T = &sim->totals;
    int want_curve = (sim->opts.flags & COMMSCHED_SIM_MEMORY_CURVE) != 0;
    uint32_t n = sim->n;
    if (!sim->alloc) {
        sim->alloc = cs_malloc_array(n, sizeof *sim->alloc);
        sim->free_step = cs_malloc_array(n, sizeof *sim->free_step);
        sim->free_sim = cs_malloc_array(n, sizeof *sim->free_sim);
        if (!sim->alloc || !sim->free_step || !sim->free_sim)
            return oom(err);
    }
    memset(sim->alloc, 0, (size_t)n * sizeof *sim->alloc);
    memset(sim->free_step, 0, (size_t)n * sizeof *sim->free_step);
    memset(sim->free_sim, 0, (size_t)n * sizeof *sim->free_sim);
    int64_t base = 0;
    int overflow = 0;
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        const cs_buffer *x = &g->buffers[b];
        if (x->alias_of != COMMSCHED_NONE)
            continue;
        uint32_t nr = CS_ROW_LEN(g->readers, b);
        if (x->is_input) {
            if (!x->freeable || nr == 0)
                continue;
            overflow |= cs_add_i64(&base, x->size);
        } else {
            overflow |= cs_add_i64(&sim->alloc[x->producer], x->size);
        }
        if (x->keep)
            continue;
        if (nr == 0) {
            overflow |= cs_add_i64(&sim->free_step[x->producer], x->size);
            overflow |= cs_add_i64(&sim->free_sim[x->producer], x->size);
            continue;
        }
        const uint32_t *r = CS_ROW_BEGIN(g->readers, b);
        uint32_t by_pos = r[0], by_end = r[0];
        for (uint32_t i = 1; i < nr; i++) {
            const commsched_sim_node *c = &sim->nodes[r[i]];
            if (c->position > sim->nodes[by_pos].position)
                by_pos = r[i];
            const commsched_sim_node *e = &sim->nodes[by_end];
            if (c->end_ns > e->end_ns ||
                (c->end_ns == e->end_ns && c->position > e->position))
                by_end = r[i];
        }
        overflow |= cs_add_i64(&sim->free_step[by_pos], x->size);
        overflow |= cs_add_i64(&sim->free_sim[by_end], x->size);
    }
    T->memory_baseline = base;

    /* §3: per step, in order. */
    int64_t cur = base, peak = base;
    for (uint32_t k = 0; k < n && !overflow; k++) {
        uint32_t v = sim->order[k];
        int64_t post_alloc = cs_mem_step(&cur, sim->alloc[v],
                                         sim->free_step[v], &overflow);
        if (post_alloc > peak)
            peak = post_alloc;
    }
    if (overflow)
        return commsched_error_set(err, COMMSCHED_EGRAPH, NULL,
                                   "buffer sizes add up beyond 2^63 bytes");
    T->peak_memory_step = peak;

    /* Over simulated time: merge the sequences' events. */
    sim->n_curve = 0;
    cur = base;
    peak = base;
    double peak_at = 0;
    if (want_curve && curve_push(sim, 0, base) != 0)
        return oom(err);
    cs_heap *h = &sim->events;
    h->n = 0;
    for (uint32_t s = 0; s < sim->n_streams; s++)
        if (sim->seq_head[s] != COMMSCHED_NONE) {
            sim->cur_node[s] = sim->seq_head[s];
            sim->cur_phase[s] = 0;
            h->a[h->n++] = event_of(sim, s);
        }
    cs_heap_make(h);
    while (h->n > 0) {
        uint32_t s = h->a[0].v;
        uint32_t v = sim->cur_node[s];
        const commsched_sim_node *res = &sim->nodes[v];
        int64_t delta;
        double t;
        if (sim->cur_phase[s] == 0) {
            delta = sim->alloc[v];
            t = res->start_ns;
            sim->cur_phase[s] = 1;
            cs_heap_replace_top(h, event_of(sim, s));
        } else {
            delta = -sim->free_sim[v];
            t = res->end_ns;
            uint32_t next = sim->seq_next[v];
            if (next == COMMSCHED_NONE) {
                cs_heap_pop(h);
            } else {
                sim->cur_node[s] = next;
                sim->cur_phase[s] = 0;
                cs_heap_replace_top(h, event_of(sim, s));
            }
        }
        if (delta == 0)
            continue;
        if (cs_add_i64(&cur, delta))
            return commsched_error_set(err, COMMSCHED_EGRAPH, NULL,
                                       "buffer sizes add up beyond 2^63 "
                                       "bytes");
        if (cur > peak) {
            peak = cur;
            peak_at = t;
        }
        if (want_curve && curve_push(sim, t, cur) != 0)
            return oom(err);
    }
    T->peak_memory = peak;
    T->peak_memory_at_ns = peak_at;
    return COMMSCHED_OK;
}

/* ---- entry points ------------------------------------------------------- */

commsched_status commsched_sim_run(commsched_sim *sim, const uint32_t *order,
                                   const double *runtime_ns,
                                   const commsched_sim_options *opts,
                                   commsched_error *err)
{
    const commsched_graph *g = sim->g;
    uint32_t n = sim->n;
    if (opts)
        sim->opts = *opts;
    else
        commsched_sim_options_init(&sim->opts);
    if (sim->opts.flags & COMMSCHED_SIM_MEMORY_CURVE)
        sim->opts.flags |= COMMSCHED_SIM_MEMORY;
    if (sim->opts.comm_streams != COMMSCHED_STREAMS_PER_GROUP &&
        sim->opts.comm_streams != COMMSCHED_STREAMS_SINGLE)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "unknown comm-stream mode %d",
                                   (int)sim->opts.comm_streams);
    memset(&sim->totals, 0, sizeof sim->totals);
    sim->n_curve = 0;
    sim->n_comp = 0;
    sim->n_streams = sim->opts.comm_streams == COMMSCHED_STREAMS_SINGLE
                         ? 2
                         : 1 + g->n_groups;
    for (uint32_t s = 0; s < sim->n_streams; s++) {
        sim->stream_free[s] = 0;
        sim->stream_busy[s] = 0;
        sim->seq_head[s] = sim->seq_tail[s] = COMMSCHED_NONE;
    }
    for (uint32_t v = 0; v < n; v++)
        sim->nodes[v].position = COMMSCHED_NONE;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order ? order[k] : k;
        if (v >= n || sim->nodes[v].position != COMMSCHED_NONE)
            return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                       "order[%u] = %u: not a permutation of "
                                       "the %u nodes",
                                       k, v, n);
        sim->nodes[v].position = k;
        sim->order[k] = v;
    }
    commsched_status st = sweep(sim, runtime_ns, err);
    if (st == COMMSCHED_OK && (sim->opts.flags & COMMSCHED_SIM_MEMORY))
        st = memory(sim, err);
    return st;
}

commsched_status commsched_sim_run_schedule(commsched_sim *sim,
                                            const commsched_schedule *s,
                                            const double *runtime_ns,
                                            const commsched_sim_options *opts,
                                            commsched_error *err)
{
    if (commsched_schedule_graph(s) != sim->g)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the schedule belongs to another graph");
    /* The order is copied straight into sim->order and validated there;
     * walking the list costs one pass and no allocation. */
    uint32_t k = 0;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v)) {
        if (k >= sim->n)
            return commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                       "the list is longer than the graph");
        sim->order[k++] = v;
    }
    if (k != sim->n)
        return commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                   "the list holds %u of %u nodes", k, sim->n);
    /* commsched_sim_run reads order[k] before writing order[k]. */
    return commsched_sim_run(sim, sim->order, runtime_ns, opts, err);
}
