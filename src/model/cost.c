/* commsched — the cost model (docs/COST.md).
 *
 * Collectives follow Inductor's comm_analysis.py, which adapts NCCL's
 * tuning.cc: a ring of `steps` synchronised steps, each paying a per-step
 * hardware latency (NVLink/PCI inside a host, the network between hosts),
 * on top of a per-algorithm base latency; and a bus bandwidth capped per
 * protocol, turned into algorithm bandwidth by ranks / steps.
 *
 * Two modes, deliberately kept separate so each reads like its source:
 * - inductor(): Inductor's estimate_nccl_collective_runtime_impl, line for
 *   line: Ring + LL, two channels of intra_node_bw / inter_node_bw, the
 *   1/3 or 1/4 refinement, time = GiB / (GB/s) (Inductor's own unit mix,
 *   kept so the worked values come out to the digit).
 * - nccl_one(): one (algorithm, protocol) pair as tuning.cc prices it, and
 *   nccl() keeps the fastest pair, as NCCL's tuner picks one.
 *
 * Steps per op (shared): all_reduce and all_to_all 2(n-1), all_gather and
 * reduce_scatter n-1 (Inductor); broadcast and reduce n with algorithm
 * bandwidth equal to bus bandwidth (tuning.cc's "n otherwise"); send/recv one
 * step; barrier is priced as an all_reduce of its bytes (normally 0). */
#include "commsched/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commsched/memory.h"
#include "graph_layout.h"

const char *commsched_comm_model_str(commsched_comm_model m)
{
    switch (m) {
    case COMMSCHED_COMM_MODEL_NCCL: return "nccl";
    case COMMSCHED_COMM_MODEL_INDUCTOR: return "inductor";
    }
    return NULL;
}

int commsched_comm_model_parse(const char *s, commsched_comm_model *out)
{
    if (s && strcmp(s, "nccl") == 0)
        *out = COMMSCHED_COMM_MODEL_NCCL;
    else if (s && strcmp(s, "inductor") == 0)
        *out = COMMSCHED_COMM_MODEL_INDUCTOR;
    else
        return -1;
    return 0;
}

const char *commsched_nccl_algo_str(commsched_nccl_algo a)
{
    switch (a) {
    case COMMSCHED_ALGO_TREE: return "tree";
    case COMMSCHED_ALGO_RING: return "ring";
    case COMMSCHED_ALGO_COUNT: break;
    }
    return NULL;
}

const char *commsched_nccl_proto_str(commsched_nccl_proto p)
{
    switch (p) {
    case COMMSCHED_PROTO_LL: return "LL";
    case COMMSCHED_PROTO_LL128: return "LL128";
    case COMMSCHED_PROTO_SIMPLE: return "Simple";
    case COMMSCHED_PROTO_COUNT: break;
    }
    return NULL;
}

const char *commsched_cost_source_str(commsched_cost_source s)
{
    switch (s) {
    case COMMSCHED_SOURCE_NONE: return "none";
    case COMMSCHED_SOURCE_FILE: return "file";
    case COMMSCHED_SOURCE_MODEL: return "model";
    case COMMSCHED_SOURCE_MEASURED: return "measured";
    case COMMSCHED_SOURCE_FITTED: return "fitted";
    case COMMSCHED_SOURCE_COUNT: break;
    }
    return NULL;
}

const char *commsched_cost_sources_text(
    const uint32_t counts[COMMSCHED_SOURCE_COUNT], char *buf, size_t size)
{
    char tables[64] = "";
    if (counts[COMMSCHED_SOURCE_MEASURED] || counts[COMMSCHED_SOURCE_FITTED])
        snprintf(tables, sizeof tables, "%u measured, %u fitted, ",
                 counts[COMMSCHED_SOURCE_MEASURED],
                 counts[COMMSCHED_SOURCE_FITTED]);
    snprintf(buf, size,
             "%u from the file, %u from the model, %s%u with nothing to go "
             "on",
             counts[COMMSCHED_SOURCE_FILE], counts[COMMSCHED_SOURCE_MODEL],
             tables, counts[COMMSCHED_SOURCE_NONE]);
    return buf;
}

void commsched_cost_options_init(commsched_cost_options *o)
{
    o->device = commsched_device_builtin("h100");
    o->comm_model = COMMSCHED_COMM_MODEL_NCCL;
    o->measured = NULL;
    o->measured_first = 0;
    o->ignore_runtime = 0;
}

/* ---- collectives ------------------------------------------------------- */

/* The ring shape of one op over n ranks on h hosts. */
typedef struct ring_shape {
    uint32_t steps, inter_steps;
    double ratio;       /* algorithm bandwidth / bus bandwidth */
    int allreduce_like; /* Inductor's 1/4 refinement; Tree applies */
} ring_shape;

static ring_shape shape_of(commsched_coll_op op, uint32_t n, uint32_t h)
{
    ring_shape s = {0, 0, 1.0, 0};
    switch (op) {
    case COMMSCHED_COLL_ALL_REDUCE:
    case COMMSCHED_COLL_BARRIER:
        s.steps = 2 * (n - 1);
        s.inter_steps = h > 1 ? 2 * h : 0;
        s.allreduce_like = 1;
        break;
    case COMMSCHED_COLL_ALL_TO_ALL:
        s.steps = 2 * (n - 1);
        s.inter_steps = h - 1;
        break;
    case COMMSCHED_COLL_ALL_GATHER:
    case COMMSCHED_COLL_REDUCE_SCATTER:
        s.steps = n - 1;
        s.inter_steps = h - 1;
        break;
    case COMMSCHED_COLL_BROADCAST:
    case COMMSCHED_COLL_REDUCE:
        s.steps = n;
        s.inter_steps = h - 1;
        break;
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV:
    case COMMSCHED_COLL_OP_COUNT:
        s.steps = 1;
        s.inter_steps = h > 1 ? 1 : 0;
        break;
    }
    /* Inductor's 2 * nNodes inter steps can exceed the ring's steps when a
     * host holds one rank; no step is both. */
    if (s.inter_steps > s.steps)
        s.inter_steps = s.steps;
    if (op != COMMSCHED_COLL_SEND && op != COMMSCHED_COLL_RECV &&
        op != COMMSCHED_COLL_BROADCAST && op != COMMSCHED_COLL_REDUCE)
        s.ratio = (double)n / (double)s.steps;
    return s;
}

static size_t ll_column(uint32_t hosts)
{
    return hosts >= 3 ? 2 : hosts - 1;
}

/* Inductor's estimate_nccl_collective_runtime_impl. */
static void inductor(const commsched_device *d, commsched_coll_op op,
                     double bytes, uint32_t n, uint32_t h,
                     commsched_coll_cost *c)
{
    ring_shape s = shape_of(op, n, h);
    double ll_max = d->ll_max_bw[ll_column(h)];
    double bw = h == 1 ? d->inductor_intra_bw : d->inductor_inter_bw;
    double bus = 2.0 * bw; /* nChannels = 2 */
    bus *= (h > 1 || s.allreduce_like) ? 1.0 / 4.0 : 1.0 / 3.0;
    if (ll_max < bus)
        bus = ll_max;
    double alg = bus * s.ratio;
    const double *base = d->base_lat[COMMSCHED_ALGO_RING];
    double intra = d->hw_lat[d->intra_link][COMMSCHED_ALGO_RING][0];
    double inter = d->hw_lat[COMMSCHED_LINK_NET][COMMSCHED_ALGO_RING][0];
    double overhead = h > 1 ? d->net_overhead : 0.0;
    if (intra < overhead)
        intra = overhead;
    double lat_us = base[COMMSCHED_PROTO_LL] +
                    (double)(s.steps - s.inter_steps) * intra +
                    (double)s.inter_steps * inter;
    double gib = bytes / 1024.0 / 1024.0 / 1024.0;
    c->latency_ns = lat_us * 1e3;
    c->bandwidth_ns = gib / (alg / 1e9);
    c->bus_bw = bus;
    c->alg_bw = alg;
    c->steps = s.steps;
    c->inter_steps = s.inter_steps;
    c->algo = COMMSCHED_ALGO_RING;
    c->proto = COMMSCHED_PROTO_LL;
}

/* One (algorithm, protocol) pair as tuning.cc prices it. Returns 0 when
 * the pair does not apply (Tree serves all-reduces only). */
static int nccl_one(const commsched_device *d, commsched_coll_op op,
                    double bytes, uint32_t n, uint32_t h,
                    commsched_nccl_algo a, commsched_nccl_proto p,
                    commsched_coll_cost *c)
{
    ring_shape s = shape_of(op, n, h);
    double ll_max = d->ll_max_bw[ll_column(h)];
    double bus0 = h == 1 ? d->bus_bw_intra : d->bus_bw_inter;
    double ch = (double)d->channels;
    double bus, alg, lat_us;
    uint32_t steps, inter_steps;
    if (a == COMMSCHED_ALGO_RING) {
        if (p == COMMSCHED_PROTO_LL)
            bus = fmin(ll_max, 0.5 * bus0);
        else if (p == COMMSCHED_PROTO_LL128)
            bus = fmin(0.92 * bus0, ch * d->ll128_max_bw_per_channel);
        else
            bus = bus0;
        alg = bus * s.ratio;
        double overhead = h > 1 ? d->net_overhead : 0.0;
        if (p == COMMSCHED_PROTO_SIMPLE)
            overhead *= 3.0;
        double intra = fmax(d->hw_lat[d->intra_link][a][p], overhead);
        lat_us = d->base_lat[a][p] +
                 (double)(s.steps - s.inter_steps) * intra +
                 (double)s.inter_steps * d->hw_lat[COMMSCHED_LINK_NET][a][p];
        steps = s.steps;
        inter_steps = s.inter_steps;
    } else {
        if (!s.allreduce_like)
            return 0;
        double b = fmin(0.92 * bus0, ch * d->tree_max_bw_per_channel);
        if (p == COMMSCHED_PROTO_LL)
            bus = fmin(b / 3.8, ll_max);
        else if (p == COMMSCHED_PROTO_LL128)
            bus = b * (h == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
        else
            bus = b;
        if (h > 1)
            bus *= 0.85; /* a real tree pattern across hosts */
        alg = bus * 0.5;
        uint32_t ppn = (n + h - 1) / h;
        double depth = log2((double)h);
        lat_us = d->base_lat[a][p] +
                 2.0 * ((double)(ppn - 1) * d->hw_lat[d->intra_link][a][p] +
                        depth * d->hw_lat[COMMSCHED_LINK_NET][a][p]);
        inter_steps = 2 * (uint32_t)ceil(depth);
        steps = 2 * (ppn - 1) + inter_steps;
    }
    c->latency_ns = lat_us * 1e3;
    c->bandwidth_ns = bytes / alg; /* GB/s is bytes per ns */
    c->bus_bw = bus;
    c->alg_bw = alg;
    c->steps = steps;
    c->inter_steps = inter_steps;
    c->algo = a;
    c->proto = p;
    return 1;
}

static commsched_status collective_args(const commsched_device *d,
                                        double bytes, uint32_t ranks,
                                        uint32_t *hosts, commsched_error *err)
{
    if (!d)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no device profile");
    if (!(bytes >= 0) || isinf(bytes))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "collective bytes must be a finite "
                                   "number >= 0, got %g",
                                   bytes);
    /* The limit keeps 2 * ranks (the ring's steps) within a uint32_t. */
    if (ranks < 1 || ranks > COMMSCHED_MAX_GROUP_SIZE)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a group has 1 to %u ranks, got %u",
                                   COMMSCHED_MAX_GROUP_SIZE, ranks);
    if (d->gpus_per_host < 1 || d->channels < 1)
        return commsched_device_check(d, err);
    if (*hosts == 0) /* in 64 bits: ranks + gpus_per_host - 1 may wrap */
        *hosts = (uint32_t)(((uint64_t)ranks + d->gpus_per_host - 1) /
                            d->gpus_per_host);
    if (*hosts > ranks)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "%u hosts for %u ranks", *hosts, ranks);
    return COMMSCHED_OK;
}

commsched_status commsched_cost_collective(const commsched_device *d,
                                           commsched_comm_model model,
                                           commsched_coll_op op, double bytes,
                                           uint32_t ranks, uint32_t hosts,
                                           commsched_coll_cost *out,
                                           commsched_error *err)
{
    memset(out, 0, sizeof *out);
    commsched_status st = collective_args(d, bytes, ranks, &hosts, err);
    if (st != COMMSCHED_OK)
        return st;
    out->ranks = ranks;
    out->hosts = hosts;
    out->algo = COMMSCHED_ALGO_RING;
    out->proto = COMMSCHED_PROTO_LL;
    if (ranks <= 1)
        return COMMSCHED_OK; /* Inductor: nothing to communicate */
    if (model == COMMSCHED_COMM_MODEL_INDUCTOR) {
        inductor(d, op, bytes, ranks, hosts, out);
    } else {
        int found = 0;
        for (int a = COMMSCHED_ALGO_COUNT - 1; a >= 0; a--) /* ring first */
            for (int p = 0; p < COMMSCHED_PROTO_COUNT; p++) {
                commsched_coll_cost c = *out;
                if (!nccl_one(d, op, bytes, ranks, hosts,
                              (commsched_nccl_algo)a, (commsched_nccl_proto)p,
                              &c))
                    continue;
                c.time_ns = c.latency_ns + c.bandwidth_ns;
                if (!found || c.time_ns < out->time_ns)
                    *out = c;
                found = 1;
            }
    }
    out->time_ns = out->latency_ns + out->bandwidth_ns;
    return COMMSCHED_OK;
}

commsched_status commsched_cost_collective_with(
    const commsched_device *d, commsched_nccl_algo algo,
    commsched_nccl_proto proto, commsched_coll_op op, double bytes,
    uint32_t ranks, uint32_t hosts, commsched_coll_cost *out,
    commsched_error *err)
{
    memset(out, 0, sizeof *out);
    commsched_status st = collective_args(d, bytes, ranks, &hosts, err);
    if (st != COMMSCHED_OK)
        return st;
    if ((unsigned)algo >= COMMSCHED_ALGO_COUNT ||
        (unsigned)proto >= COMMSCHED_PROTO_COUNT)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "unknown NCCL algorithm or protocol");
    out->ranks = ranks;
    out->hosts = hosts;
    out->algo = algo;
    out->proto = proto;
    if (ranks <= 1)
        return COMMSCHED_OK;
    if (!nccl_one(d, op, bytes, ranks, hosts, algo, proto, out))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "NCCL's tree algorithm serves all-reduces "
                                   "only");
    out->ranks = ranks;
    out->hosts = hosts;
    out->time_ns = out->latency_ns + out->bandwidth_ns;
    return COMMSCHED_OK;
}

/* ---- compute and nodes ------------------------------------------------- */

double commsched_cost_compute(const commsched_device *d, double flops,
                              double bytes, commsched_cost_tuple *t)
{
    double comp = flops > 0 ? flops / d->peak_flops * 1e9 : 0.0;
    double mem = bytes > 0 ? bytes / d->mem_bw * 1e9 : 0.0;
    if (t) {
        t->latency_ns = 0;
        t->bandwidth_ns = mem;
        t->computation_ns = comp;
        t->memory_delta = 0;
    }
    return comp > mem ? comp : mem;
}

double commsched_cost_collective_bytes(const commsched_graph *g,
                                       uint32_t node)
{
    double in = 0, out = 0;
    const cs_node *n = &g->nodes[node];
    /* The bytes it reads, given when its inputs are views of larger
     * buffers (docs/FORMAT.md, "Collective sizes"); else its roots. */
    if (n->bytes >= 0)
        in = n->bytes;
    else
        for (uint32_t k = g->reads.off[node]; k < g->reads.off[node + 1];
             k++)
            in += (double)g->buffers[g->buffers[g->reads.idx[k]].root].size;
    /* Each root written once: Inductor's in-place all_reduce lists two
     * aliases of the one buffer it reduces (the kernel and its
     * MultiOutput), and moves that buffer once. A real output is its own
     * root; an alias of one of the node's outputs adds nothing; an in-place
     * alias counts unless an earlier one has the same root (root_again,
     * which the builder marks). */
    uint32_t first = n->out_first, end = n->out_first + n->n_out;
    for (uint32_t b = first; b < end; b++) {
        uint32_t r = g->buffers[b].root;
        if (g->buffers[b].alias_of == COMMSCHED_NONE)
            out += (double)g->buffers[b].size;
        else if (!(r >= first && r < end) && !g->buffers[b].root_again)
            out += (double)g->buffers[r].size;
    }
    return in > out ? in : out;
}

/* A compute node from the measured tables: its kernel by the key of its
 * name and the position it gives (an imported trace's kernels), then by
 * the key of its op; else, with flops or bytes, the fitted roofline (a
 * rate the fit lacks is the device's). NONE when neither applies. */
static commsched_cost_source measured_compute(const commsched_costs *c,
                                              const commsched_device *d,
                                              const cs_node *n, double *ns)
{
    char key[128];
    if (commsched_costs_price_kernel(
            c, commsched_costs_key(n->name, key, sizeof key),
            commsched_costs_position(n->name), ns) != COMMSCHED_SOURCE_NONE)
        return COMMSCHED_SOURCE_MEASURED;
    if (n->op &&
        commsched_costs_price_kernel(c, commsched_costs_key(n->op, key,
                                                            sizeof key),
                                     -1, ns) != COMMSCHED_SOURCE_NONE)
        return COMMSCHED_SOURCE_MEASURED;
    commsched_costs_roofline roof;
    if (!(n->flops > 0 || n->bytes > 0) ||
        !commsched_costs_get_roofline(c, &roof))
        return COMMSCHED_SOURCE_NONE;
    commsched_device fitted = *d;
    if (roof.flops_per_s > 0)
        fitted.peak_flops = roof.flops_per_s;
    if (roof.bytes_per_s > 0)
        fitted.mem_bw = roof.bytes_per_s;
    *ns = commsched_cost_compute(&fitted, n->flops, n->bytes, NULL);
    return COMMSCHED_SOURCE_FITTED;
}

commsched_status commsched_cost_node(const commsched_graph *g, uint32_t node,
                                     const commsched_cost_options *o,
                                     const commsched_memory *mem,
                                     commsched_node_cost *out,
                                     commsched_error *err)
{
    const cs_node *n = &g->nodes[node];
    memset(out, 0, sizeof *out);
    out->source = COMMSCHED_SOURCE_NONE;
    if (!o || !o->device)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no device profile");
    if (n->kind == COMMSCHED_NODE_COLLECTIVE) {
        const cs_group *gr = &g->groups[n->group];
        out->bytes = commsched_cost_collective_bytes(g, node);
        commsched_status st = commsched_cost_collective(
            o->device, o->comm_model, (commsched_coll_op)n->coll_op,
            out->bytes, gr->size, gr->hosts, &out->coll, err);
        if (st != COMMSCHED_OK)
            return st;
        out->model_ns = out->coll.time_ns;
        out->tuple.latency_ns = out->coll.latency_ns;
        out->tuple.bandwidth_ns = out->coll.bandwidth_ns;
        out->source = COMMSCHED_SOURCE_MODEL;
    } else if (n->kind == COMMSCHED_NODE_COMPUTE &&
               (n->flops >= 0 || n->bytes >= 0)) {
        out->flops = n->flops > 0 ? n->flops : 0;
        out->bytes = n->bytes > 0 ? n->bytes : 0;
        out->model_ns = commsched_cost_compute(o->device, n->flops, n->bytes,
                                               &out->tuple);
        out->source = COMMSCHED_SOURCE_MODEL;
    }
    out->runtime_ns = out->model_ns;
    /* Measurements before the model; outside them the model, by the same
     * rule on every rank (docs/COST.md, "Measured costs"). */
    double ns = 0;
    commsched_cost_source from = COMMSCHED_SOURCE_NONE;
    if (o->measured && n->kind == COMMSCHED_NODE_COLLECTIVE) {
        from = commsched_costs_price_collective(
            o->measured, (commsched_coll_op)n->coll_op,
            g->groups[n->group].size, out->bytes, &ns);
        /* one the trace gave no size: by its place in the step */
        char key[128];
        if (from == COMMSCHED_SOURCE_NONE &&
            commsched_costs_position(n->name) >= 0)
            from = commsched_costs_price_kernel(
                o->measured, commsched_costs_key(n->name, key, sizeof key),
                commsched_costs_position(n->name), &ns);
    } else if (o->measured && n->kind == COMMSCHED_NODE_COMPUTE) {
        from = measured_compute(o->measured, o->device, n, &ns);
    }
    if (from != COMMSCHED_SOURCE_NONE) {
        out->runtime_ns = ns;
        out->source = from;
    }
    if (n->runtime_ns >= 0 && !o->ignore_runtime &&
        !(o->measured_first && from != COMMSCHED_SOURCE_NONE)) {
        out->runtime_ns = n->runtime_ns;
        out->source = COMMSCHED_SOURCE_FILE;
    }
    /* The builder bounds given runtimes; a device profile with absurdly low
     * rates could still price a node beyond them (or at infinity), which
     * no schedule sum or report could show truthfully. */
    if (!(out->runtime_ns <= COMMSCHED_MAX_RUNTIME_NS)) {
        char path[64];
        snprintf(path, sizeof path, "nodes[%u]", node);
        return commsched_error_set(err, COMMSCHED_EINVAL, path,
                                   "estimated runtime %g ns of \"%s\" is "
                                   "beyond the limit of %g ns (check the "
                                   "device profile's rates)",
                                   out->runtime_ns, n->name,
                                   COMMSCHED_MAX_RUNTIME_NS);
    }
    if (mem) {
        commsched_node_memory m = commsched_memory_node(mem, node);
        out->tuple.memory_delta = m.size_alloc - m.size_free;
    }
    return COMMSCHED_OK;
}

commsched_status commsched_cost_graph(const commsched_graph *g,
                                      const commsched_cost_options *o,
                                      double *runtime_ns,
                                      commsched_cost_source *sources,
                                      commsched_error *err)
{
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        commsched_node_cost c;
        commsched_status st = commsched_cost_node(g, i, o, NULL, &c, err);
        if (st != COMMSCHED_OK)
            return st;
        runtime_ns[i] = c.runtime_ns;
        if (sources)
            sources[i] = c.source;
    }
    return COMMSCHED_OK;
}
