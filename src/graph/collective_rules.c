/* commsched — the rules of waits and collectives (docs/FORMAT.md, "Waits
 * and async collectives", "Collective sizes"), checked by
 * commsched_builder_finish once names and aliases are resolved. Apart from
 * builder.c because they read only the resolved graph. */
#include "graph_internal.h"
#include "graph_rules.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Only a wait may read an async collective's output; a wait must read at
 * least one collective output. */
commsched_status cs_graph_check_wait_rules(const commsched_graph *g,
                                           commsched_error *err)
{
    char path[96];
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const cs_node *n = &g->nodes[i];
        const uint32_t *in = CS_ROW_BEGIN(g->reads, i);
        uint32_t n_in = CS_ROW_LEN(g->reads, i);
        int reads_collective = 0;
        for (uint32_t k = 0; k < n_in; k++) {
            uint32_t p = g->buffers[in[k]].producer;
            if (p == COMMSCHED_NONE)
                continue;
            const cs_node *pn = &g->nodes[p];
            if (pn->kind == COMMSCHED_NODE_COLLECTIVE)
                reads_collective = 1;
            if (n->kind != COMMSCHED_NODE_WAIT && cs_is_async_collective(pn)) {
                snprintf(path, sizeof path, "nodes[%u].inputs[%u]", i, k);
                return commsched_error_set(err, COMMSCHED_EGRAPH, path,
                             "\"%s\" is the output of async collective "
                             "\"%s\": only its wait may read it (read the "
                             "wait's alias instead)",
                             g->buffers[in[k]].name, pn->name);
            }
        }
        if (n->kind == COMMSCHED_NODE_WAIT && !reads_collective) {
            snprintf(path, sizeof path, "nodes[%u].inputs", i);
            return commsched_error_set(err, COMMSCHED_EGRAPH, path,
                         "wait \"%s\" reads no collective output", n->name);
        }
    }
    return COMMSCHED_OK;
}

/* What a collective can read, [lo, hi] bytes, each listing counted (as
 * the cost model counts them). A real buffer reads its own size. An alias
 * carries no size of its own: it may be the whole root (a wait's result)
 * or a slice of it (a bucketing pass hands each member's consumers a view
 * of the flat bucket buffer), so it reads 0 to its root's size. Sums
 * saturate: a repeated input can take them past what one graph holds, and
 * a saturated bound only widens the range. */
typedef struct read_range {
    uint64_t lo, hi;
} read_range;

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static read_range read_bytes(const commsched_graph *g, uint32_t node)
{
    read_range r = {0, 0};
    for (uint32_t k = g->reads.off[node]; k < g->reads.off[node + 1]; k++) {
        const cs_buffer *x = &g->buffers[g->reads.idx[k]];
        uint64_t s = (uint64_t)g->buffers[x->root].size;
        if (x->alias_of == COMMSCHED_NONE)
            r.lo = add_sat(r.lo, s);
        r.hi = add_sat(r.hi, s);
    }
    return r;
}

/* Whether `out` bytes written fit a read of r on k ranks under op's rule
 * (divisions, not products: out x k could overflow). */
static int sizes_fit(commsched_coll_op op, read_range r, uint64_t out,
                     uint64_t k)
{
    if (op == COMMSCHED_COLL_ALL_GATHER) /* out = read x k */
        return out % k == 0 && out / k >= r.lo && out / k <= r.hi;
    if (op == COMMSCHED_COLL_REDUCE_SCATTER) /* read = out x k */
        return out <= r.hi / k && out >= r.lo / k + (r.lo % k != 0);
    return out >= r.lo && out <= r.hi; /* read = out */
}

/* A collective's `bytes`, when given, is what it reads: its inputs may be
 * views of larger buffers, which the format names whole (a slice of a
 * graph input, as Inductor hands a collective a ReinterpretView). It must
 * be a whole number no larger than its inputs hold; the size rule below
 * and the cost model then take it for the inputs' sizes. */
static commsched_status check_collective_bytes(const commsched_graph *g,
                                               uint32_t i, read_range *in,
                                               commsched_error *err)
{
    const cs_node *n = &g->nodes[i];
    if (n->bytes < 0 || CS_ROW_LEN(g->reads, i) == 0)
        return COMMSCHED_OK;
    char path[64];
    snprintf(path, sizeof path, "nodes[%u].bytes", i);
    if (n->bytes != floor(n->bytes))
        return commsched_error_set(err, COMMSCHED_EGRAPH, path,
                     "a collective reads a whole number of bytes, got %g",
                     n->bytes);
    /* compared before the cast: a double past 2^64 has no uint64_t */
    if (n->bytes >= 0x1p64 || (uint64_t)n->bytes > in->hi)
        return commsched_error_set(err, COMMSCHED_EGRAPH, path,
                     "collective \"%s\" reads %.0f bytes, more than its "
                     "inputs hold (%" PRIu64 ")",
                     n->name, n->bytes, in->hi);
    in->lo = in->hi = (uint64_t)n->bytes;
    return COMMSCHED_OK;
}

/* docs/FORMAT.md, "Collective sizes": a collective whose two sides both
 * carry bytes moves what its op moves over its group's k ranks, as NCCL
 * and torch.distributed require of the tensors they are given: an
 * all_gather writes k times what it reads (all_gather_into_tensor checks
 * output = k x input), a reduce_scatter reads k times what it writes,
 * all_reduce, broadcast and reduce write what they read. Not checked:
 * all_to_all (all_to_all_single's input and output splits need not sum
 * alike: an MoE dispatch sends and receives different token counts),
 * send, recv and barrier (one side by nature); a side of 0 bytes (no
 * buffers, or the 0-byte dependency tokens trace importers emit: unknown,
 * not wrong; the cost model prices the other side); an in-place collective
 * (an output whose alias chain ends at a buffer it did not create: the
 * bucketed all-gather that gathers into its own flat input shares one
 * buffer between both sides). Otherwise the cost model would price a
 * payload the graph contradicts. */
commsched_status cs_graph_check_collective_sizes(const commsched_graph *g,
                                                 commsched_error *err)
{
    char path[64];
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const cs_node *n = &g->nodes[i];
        if (n->kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        commsched_coll_op op = (commsched_coll_op)n->coll_op;
        read_range in = read_bytes(g, i);
        commsched_status st = check_collective_bytes(g, i, &in, err);
        if (st != COMMSCHED_OK)
            return st;
        if (op == COMMSCHED_COLL_SEND || op == COMMSCHED_COLL_RECV ||
            op == COMMSCHED_COLL_BARRIER || op == COMMSCHED_COLL_ALL_TO_ALL)
            continue;
        int in_place = 0;
        uint64_t out = 0; /* real outputs: the graph's total is bounded */
        for (uint32_t k = 0; k < n->n_out; k++) {
            const cs_buffer *ob = &g->buffers[n->out_first + k];
            uint32_t r = ob->root;
            in_place |= r < n->out_first || r >= n->out_first + n->n_out;
            if (ob->alias_of == COMMSCHED_NONE)
                out += (uint64_t)ob->size;
        }
        if (in_place || in.hi == 0 || out == 0)
            continue;
        uint64_t k = g->groups[n->group].size;
        if (sizes_fit(op, in, out, k))
            continue;
        const char *rule =
            op == COMMSCHED_COLL_ALL_GATHER
                ? "an all_gather writes its group's size times the bytes it "
                  "reads"
            : op == COMMSCHED_COLL_REDUCE_SCATTER
                ? "a reduce_scatter reads its group's size times the bytes "
                  "it writes"
                : "it writes as many bytes as it reads";
        char reads[64];
        if (in.lo == in.hi)
            snprintf(reads, sizeof reads, "%" PRIu64, in.hi);
        else /* through an alias: a view's size is not in the format */
            snprintf(reads, sizeof reads, "%" PRIu64 " to %" PRIu64, in.lo,
                     in.hi);
        snprintf(path, sizeof path, "nodes[%u].outputs", i);
        return commsched_error_set(err, COMMSCHED_EGRAPH, path,
                     "%s \"%s\" on group \"%s\" (%" PRIu64
                     " ranks) reads %s bytes and writes %" PRIu64 ": %s",
                     commsched_coll_op_str(op), n->name,
                     g->groups[n->group].name, k, reads, out, rule);
    }
    return COMMSCHED_OK;
}
