/* commsched — the bucketing passes: bucket_all_gather, bucket_reduce_scatter
 * and bucket_all_reduce merge collectives into fewer, larger ones
 * (Inductor's fx_passes/bucketing.py, XLA's collective combiners;
 * docs/PASSES.md "Bucketing").
 *
 * Which collectives form a bucket (Inductor's greedy_bucket_collective_by_mb):
 * the candidates are the async collectives of the pass's op, in the order
 * their waits appear in the current schedule. Runs of candidates with one
 * key (group, dtype, and the reduce op for reduce-scatter and all-reduce)
 * are cut greedily: a candidate that depends on the open bucket is skipped
 * (merging it would make a cycle), one that would pass bucket_cap_mb (or
 * bucket_max_ops) closes the bucket and opens the next. Beyond Inductor,
 * every merge is also priced on the whole rewritten graph: it is refused
 * when peak memory would pass (1 + bucket_peak_memory_budget) x the peak
 * before the pass, and in bucket_mode=cost when the simulated step is not
 * shorter than without it. Only buckets of two or more are kept.
 *
 * The rewrite models what a bucket really costs. For bucket "bucket_rs_0":
 *   bucket_rs_0_copy_in  compute, reads every member's input, allocates the
 *                        flat input "bucket_rs_0_in"; bytes = 2 x the bytes
 *                        it copies (read + write), flops absent, so the cost
 *                        model prices it as a memory-bound copy;
 *   bucket_rs_0          the collective, reads the flat input and outputs
 *                        the flat "bucket_rs_0_out";
 *   bucket_rs_0_wait     reads the flat output and outputs every member
 *                        wait's former outputs under their old names, as
 *                        aliases of the flat output (views of its slices).
 * An all-gather gathers in place, as Inductor's _pre_bucket_all_gather
 * does: its copy-in allocates the whole flat output and writes this rank's
 * slice, and "bucket_ag_0_out" is an alias of "bucket_ag_0_in"; so is an
 * all-reduce's when every member was in place. Consumers keep their buffer
 * names; the flat buffer lives until the last consumer of any member, as
 * a bucket does. The graph is rebuilt through the builder (graphs are
 * immutable), so the result is validated.
 *
 * Placement: the new order is the current one with each bucket's three
 * nodes in place of its members: copy-in and collective where the first
 * member was issued, or right after the last producer of any member's
 * input when that comes later; the wait where the first member's wait was.
 * A stable topological sort keyed by those positions then moves whatever
 * must follow the wait (a first member's consumer that came before the
 * last input was ready) right after it.
 *
 * Pricing: a merge is priced on the whole graph with the closed buckets
 * and the open one merged. The placement is computed over flat arrays and
 * priced with the memory model's and the simulator's arithmetic
 * (virtual_price), since building a graph through the builder for every
 * candidate cost ten times more; verify mode builds each one anyway and
 * requires the same figures. O(V + E) per priced merge (the sort's ready
 * set is kept by position, bucketing_price.c; a heap only for the nodes
 * that become ready after the sort passed their position), so that is
 * the reference and the fallback: the peak is priced incrementally, over
 * the open bucket's window of the schedule (bucketing_incr.c), which
 * gives the same figure, and in cost mode the step from that window to
 * within a rounding bound (bucketing_time.c), the full figures taken only
 * where the bound cannot decide a comparison.
 *
 * Dependency test: a candidate depends on the open bucket when its
 * collective or its wait is reachable from a member's wait. Descendants are
 * marked lazily in order of position, only up to the position of the wait
 * being tested, so each node is expanded at most once per bucket and the
 * buckets of a pass cover disjoint stretches of the schedule. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/simulate.h"
#include "bucketing_internal.h"


/* ---- candidates ------------------------------------------------------------ */

static int64_t root_size(const commsched_graph *g, uint32_t b)
{
    return g->buffers[g->buffers[b].root].size;
}

/* Whether collective c (of the pass's op) with wait w can be merged at
 * all. The rules keep the rewrite local: one input, one output that only
 * its wait reads (a graph output may name it: the bucket's wait then
 * outputs a view of its slice under its name), no node other than the
 * wait depending on the collective (an `after` edge on it could close a
 * cycle through another bucket), and a wait that completes nothing else.
 * The wait may also read the collective's input, as Inductor's does so
 * that the input lives until the collective is done: the bucket's wait
 * then reads the flat input (flat.wait_reads_in), which keeps the copy
 * the collective reads alive as long. */
static int eligible(const commsched_graph *g, uint32_t c, uint32_t w,
                    cand *out)
{
    const cs_node *n = &g->nodes[c];
    if (n->is_sync || CS_ROW_LEN(g->reads, c) != 1 || n->n_out != 1)
        return 0;
    uint32_t in = CS_ROW_BEGIN(g->reads, c)[0], o = n->out_first;
    if (CS_ROW_LEN(g->users, c) != 1 || CS_ROW_BEGIN(g->users, c)[0] != w)
        return 0;
    out->wait_reads_in = 0;
    for (uint32_t e = g->reads.off[w]; e < g->reads.off[w + 1]; e++) {
        if (g->reads.idx[e] == in && in != o)
            out->wait_reads_in = 1;
        else if (g->reads.idx[e] != o)
            return 0;
    }
    /* The bucket's wait makes the wait's views of the collective's output
     * views of the flat output's slices, keeps views of its own outputs,
     * and reads no member's own input: a view of anything else (the input
     * the wait reads) would name a buffer it no longer reads. */
    const cs_node *wn = &g->nodes[w];
    for (uint32_t k = 0; k < wn->n_out; k++) {
        uint32_t a = g->buffers[wn->out_first + k].alias_of;
        if (a != COMMSCHED_NONE && a != o &&
            (a < wn->out_first || a >= wn->out_first + wn->n_out))
            return 0;
    }
    out->in = in;
    out->out = o;
    /* a collective that says what it reads (its input a view of a
     * larger buffer) copies that much into the bucket */
    out->in_bytes = n->bytes >= 0 ? (int64_t)n->bytes : root_size(g, in);
    out->out_bytes = root_size(g, o);
    /* An input that is an alias may be a slice of its root (an earlier
     * bucket's member reads a view of the flat buffer): the root's size
     * would copy, and move, the whole flat buffer. A real output says what
     * the op reads (docs/FORMAT.md, "Collective sizes"). */
    if (g->buffers[in].alias_of != COMMSCHED_NONE &&
        g->buffers[o].alias_of == COMMSCHED_NONE && out->out_bytes > 0) {
        int64_t k = (int64_t)g->groups[n->group].size;
        if (n->coll_op == COMMSCHED_COLL_REDUCE_SCATTER &&
            out->out_bytes <= out->in_bytes / k)
            out->in_bytes = out->out_bytes * k;
        else if (n->coll_op == COMMSCHED_COLL_ALL_GATHER &&
                 out->out_bytes % k == 0 && out->out_bytes / k <= out->in_bytes)
            out->in_bytes = out->out_bytes / k;
        else if (n->coll_op == COMMSCHED_COLL_ALL_REDUCE &&
                 out->out_bytes <= out->in_bytes)
            out->in_bytes = out->out_bytes;
    }
    out->in_place = g->buffers[o].alias_of != COMMSCHED_NONE;
    /* A side of 0 bytes says nothing (the dependency tokens trace
     * importers emit; the builder checks no size rule then): the op's rule
     * gives it from the other side, as the cost model prices it, so the
     * bucket's flat buffers keep the rule (a bucket of a member of 0 and
     * one of 748 bytes would read 748 and write 1,496). A member whose
     * rule gives no whole size stays out. */
    if (!out->in_place && (out->in_bytes == 0) != (out->out_bytes == 0)) {
        int64_t k = (int64_t)g->groups[n->group].size;
        int64_t *miss = out->in_bytes == 0 ? &out->in_bytes : &out->out_bytes;
        int64_t have = out->in_bytes == 0 ? out->out_bytes : out->in_bytes;
        int grows = (n->coll_op == COMMSCHED_COLL_REDUCE_SCATTER) ==
                    (miss == &out->in_bytes); /* the missing side is k x */
        if (n->coll_op == COMMSCHED_COLL_ALL_REDUCE)
            *miss = have;
        else if (grows && have <= INT64_MAX / k)
            *miss = have * k;
        else if (!grows && have % k == 0)
            *miss = have / k;
        else
            return 0;
    }
    out->bytes = out->in_bytes > out->out_bytes ? out->in_bytes
                                                : out->out_bytes;
    return 1;
}

/* The candidates in wait order: every wait that reads an output of a
 * collective of the op. A wait of two such collectives, or of one that
 * cannot be merged, is kept as an ineligible entry: it ends a run. */
static commsched_status collect(bk_pass *p)
{
    const commsched_graph *g = p->g;
    p->cands = cs_malloc_array(p->n, sizeof *p->cands);
    if (!p->cands)
        return bk_oom(p->ctx->err);
    for (uint32_t k = 0; k < p->n; k++) {
        uint32_t w = p->order[k], coll = COMMSCHED_NONE;
        if (!cs_is_wait(g, w))
            continue;
        int count = 0;
        for (uint32_t e = g->reads.off[w]; e < g->reads.off[w + 1]; e++) {
            uint32_t pr = g->buffers[g->reads.idx[e]].producer;
            if (pr == COMMSCHED_NONE || pr == coll || !cs_is_collective(g, pr) ||
                g->nodes[pr].coll_op != (uint8_t)p->op)
                continue;
            coll = pr;
            count++;
        }
        if (count == 0)
            continue;
        cand *c = &p->cands[p->n_cands++];
        memset(c, 0, sizeof *c);
        c->coll = coll;
        c->wait = w;
        c->eligible = count == 1 && eligible(g, coll, w, c);
    }
    return COMMSCHED_OK;
}

/* via and cand_bucket: which candidate's output each buffer's alias chain
 * passes (a member's result names become views of the bucket's buffer,
 * and so does everything aliasing them). alias_of always names an earlier
 * buffer, so one ascending sweep resolves every chain. */
static commsched_status chains(bk_pass *p)
{
    const commsched_graph *g = p->g;
    p->via = cs_malloc_array(g->n_buffers, sizeof *p->via);
    p->cand_bucket = cs_malloc_array(p->n_cands + 1, sizeof *p->cand_bucket);
    if (!p->via || !p->cand_bucket)
        return bk_oom(p->ctx->err);
    for (uint32_t b = 0; b < g->n_buffers; b++)
        p->via[b] = COMMSCHED_NONE;
    for (size_t ci = 0; ci < p->n_cands; ci++) {
        p->cand_bucket[ci] = COMMSCHED_NONE;
        if (p->cands[ci].eligible)
            p->via[p->cands[ci].out] = (uint32_t)ci;
    }
    for (uint32_t b = 0; b < g->n_buffers; b++)
        if (p->via[b] == COMMSCHED_NONE &&
            g->buffers[b].alias_of != COMMSCHED_NONE)
            p->via[b] = p->via[g->buffers[b].alias_of];
    return COMMSCHED_OK;
}

/* 1 when two node names are in one block: the same text before the first
 * '.' (commsched generate names every node of layer i "L<i>.<...>"). A
 * block's forward and backward are two runs of it, split by other blocks'
 * nodes, so they bucket apart. */
static int same_block(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] != '.' && a[i] == b[i])
        i++;
    return (a[i] == '\0' || a[i] == '.') && (b[i] == '\0' || b[i] == '.');
}

/* Inductor's keys: all-gather (group, dtype), or (group) in multidtype
 * mode; reduce-scatter and all-reduce (group, reduce op, dtype). The
 * transformer-block plan adds the block. */
static int same_key(const bk_pass *p, const cand *a, const cand *b)
{
    const cs_node *x = &p->g->nodes[a->coll], *y = &p->g->nodes[b->coll];
    if (x->group != y->group)
        return 0;
    if (p->by_block && p->block_run[a->coll] != p->block_run[b->coll])
        return 0;
    if (p->op == COMMSCHED_COLL_ALL_GATHER)
        return p->ctx->k->bucket_multidtype || x->dtype == y->dtype;
    return x->dtype == y->dtype && x->reduce_op == y->reduce_op;
}

/* ---- the rewritten graph ------------------------------------------------- */


static int name_taken(const commsched_graph *g, const bnames *nm)
{
    return cs_strmap_get(&g->node_by_name, nm->coll) != UINT32_MAX ||
           cs_strmap_get(&g->node_by_name, nm->copy_in) != UINT32_MAX ||
           cs_strmap_get(&g->node_by_name, nm->wait) != UINT32_MAX ||
           cs_strmap_get(&g->buffer_by_name, nm->in) != UINT32_MAX ||
           cs_strmap_get(&g->buffer_by_name, nm->out) != UINT32_MAX;
}

static void fill_names(const bk_pass *p, uint32_t k, bnames *nm)
{
    snprintf(nm->coll, sizeof nm->coll, "bucket_%s_%u", p->tag, k);
    snprintf(nm->copy_in, sizeof nm->copy_in, "%s_copy_in", nm->coll);
    snprintf(nm->wait, sizeof nm->wait, "%s_wait", nm->coll);
    snprintf(nm->in, sizeof nm->in, "%s_in", nm->coll);
    snprintf(nm->out, sizeof nm->out, "%s_out", nm->coll);
}

/* The first free name number at or after `from`: names never collide with
 * a node or buffer of the graph (a second bucketing pass over a bucketed
 * graph continues the numbering). */
static uint32_t free_name(const bk_pass *p, uint32_t from)
{
    bnames nm;
    for (;; from++) {
        fill_names(p, from, &nm);
        if (!name_taken(p->g, &nm))
            return from;
    }
}

/* Names in virtual ids: old nodes, then three per bucket. */
static const char *vname(const bk_pass *p, uint32_t vid)
{
    if (vid < p->n)
        return p->g->nodes[vid].name;
    const bnames *nm = &p->names[(vid - p->n) / 3];
    switch ((vid - p->n) % 3) {
    case 0: return nm->copy_in;
    case 1: return nm->coll;
    default: return nm->wait;
    }
}

static int grow_names(const char ***arr, size_t *cap, size_t need)
{
    return cs_grow((void **)arr, cap, need ? need : 1, sizeof **arr);
}

/* Appends the names of `row` (old node ids) mapped through vmap to *list,
 * without repeats and without `self_a`/`self_b`; fake lists keep only
 * edges the new order respects (counted in *dropped otherwise).
 * Returns the new length, or (size_t)-1 on OOM. */
static size_t add_refs(bk_pass *p, const char ***list, size_t *cap, size_t len,
                       const uint32_t *row, uint32_t row_len, uint32_t self_a,
                       uint32_t self_b, const uint32_t *newidx, int fake,
                       uint32_t *dropped)
{
    if (cs_grow((void **)list, cap, len + row_len + 1, sizeof **list) != 0)
        return (size_t)-1;
    for (uint32_t i = 0; i < row_len; i++) {
        uint32_t d = p->vmap[row[i]];
        if (d == self_a || d == self_b || p->seen[d] == p->seen_stamp)
            continue;
        if (fake && newidx[d] > newidx[self_a]) {
            (*dropped)++;
            continue;
        }
        p->seen[d] = p->seen_stamp;
        (*list)[len++] = vname(p, d);
    }
    return len;
}

static void next_stamp(bk_pass *p)
{
    if (++p->seen_stamp == 0) {
        memset(p->seen, 0, p->cap_seen * sizeof *p->seen);
        p->seen_stamp = 1;
    }
}

static commsched_status add_old_node(bk_pass *p, commsched_builder *b,
                                     uint32_t v, const uint32_t *newidx,
                                     uint32_t *dropped)
{
    const commsched_graph *g = p->g;
    const cs_node *nd = &g->nodes[v];
    commsched_error *err = p->ctx->err;
    commsched_node_spec sp;
    memset(&sp, 0, sizeof sp);
    uint32_t n_in = CS_ROW_LEN(g->reads, v);
    if (grow_names(&p->s_in, &p->cap_in, n_in) != 0 ||
        cs_grow((void **)&p->s_out, &p->cap_out, nd->n_out ? nd->n_out : 1,
                sizeof *p->s_out) != 0)
        return bk_oom(err);
    for (uint32_t i = 0; i < n_in; i++)
        p->s_in[i] = g->buffers[CS_ROW_BEGIN(g->reads, v)[i]].name;
    for (uint32_t i = 0; i < nd->n_out; i++) {
        const cs_buffer *o = &g->buffers[nd->out_first + i];
        p->s_out[i].name = o->name;
        p->s_out[i].size = o->size;
        p->s_out[i].alias_of =
            o->alias_of == COMMSCHED_NONE ? NULL : g->buffers[o->alias_of].name;
    }
    next_stamp(p);
    size_t n_after = add_refs(p, &p->s_after, &p->cap_after, 0,
                              CS_ROW_BEGIN(g->after, v), CS_ROW_LEN(g->after, v),
                              v, v, newidx, 0, dropped);
    next_stamp(p);
    size_t n_fake = add_refs(p, &p->s_fake, &p->cap_fake, 0,
                             CS_ROW_BEGIN(g->after_fake, v),
                             CS_ROW_LEN(g->after_fake, v), v, v, newidx, 1,
                             dropped);
    if (n_after == (size_t)-1 || n_fake == (size_t)-1)
        return bk_oom(err);
    sp.name = nd->name;
    sp.kind = (commsched_node_kind)nd->kind;
    sp.op = nd->op;
    sp.group = nd->group == COMMSCHED_NONE ? NULL : g->groups[nd->group].name;
    sp.is_sync = nd->is_sync;
    sp.dtype = (commsched_dtype)nd->dtype;
    sp.reduce_op = (commsched_reduce_op)nd->reduce_op;
    sp.inputs = p->s_in;
    sp.n_inputs = n_in;
    sp.outputs = p->s_out;
    sp.n_outputs = nd->n_out;
    sp.after = p->s_after;
    sp.n_after = n_after;
    sp.after_fake = p->s_fake;
    sp.n_after_fake = n_fake;
    sp.runtime_ns = nd->runtime_ns;
    sp.flops = nd->flops;
    sp.bytes = nd->bytes;
    sp.gemm_like = nd->gemm_like;
    commsched_status st = commsched_builder_add_node(b, &sp, err);
    /* Its outputs' from: the node keeps its input names, so they stay
     * its inputs (the builder copied s_in, free for them now). */
    for (uint32_t i = 0; i < nd->n_out && st == COMMSCHED_OK; i++) {
        uint32_t o = nd->out_first + i;
        if (!g->buffers[o].has_from)
            continue;
        uint32_t len = CS_ROW_LEN(g->from, o);
        if (grow_names(&p->s_in, &p->cap_in, len) != 0)
            return bk_oom(err);
        for (uint32_t k = 0; k < len; k++)
            p->s_in[k] = g->buffers[CS_ROW_BEGIN(g->from, o)[k]].name;
        st = commsched_builder_set_output_from(b, i, p->s_in, len, err);
    }
    return st;
}

/* The merged collective's dtype: the members' own when they agree, else
 * the one with the smallest element (Inductor packs a multidtype bucket
 * into the smallest itemsize). */
static commsched_dtype bucket_dtype(const bk_pass *p, const bucket *bk)
{
    uint8_t best = p->g->nodes[bk_member(p, bk, 0)->coll].dtype;
    for (uint32_t i = 1; i < bk->n; i++) {
        uint8_t d = p->g->nodes[bk_member(p, bk, i)->coll].dtype;
        if (commsched_dtype_size((commsched_dtype)d) <
            commsched_dtype_size((commsched_dtype)best))
            best = d;
    }
    return (commsched_dtype)best;
}

/* The three nodes of bucket `bi` (kind 0 copy-in, 1 collective, 2 wait). */
static commsched_status add_bucket_node(bk_pass *p, commsched_builder *b,
                                        const bucket *bk, uint32_t bi,
                                        int kind, const uint32_t *newidx,
                                        uint32_t *dropped)
{
    const commsched_graph *g = p->g;
    commsched_error *err = p->ctx->err;
    const bnames *nm = &p->names[bi];
    uint32_t self_coll = p->n + 3 * bi + 1, self_wait = p->n + 3 * bi + 2;
    commsched_node_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.runtime_ns = sp.flops = sp.bytes = -1.0;
    flat f = cs_bk_flat_of(p, bk);
    commsched_output_spec one;
    size_t n_after = 0, n_fake = 0;
    if (kind == 0) {
        if (grow_names(&p->s_in, &p->cap_in, bk->n) != 0)
            return bk_oom(err);
        for (uint32_t i = 0; i < bk->n; i++)
            p->s_in[i] = g->buffers[bk_member(p, bk, i)->in].name;
        one.name = nm->in;
        one.size = f.copy_size;
        one.alias_of = NULL;
        sp.name = nm->copy_in;
        sp.kind = COMMSCHED_NODE_COMPUTE;
        sp.op = "bucket_copy_in";
        sp.n_inputs = bk->n;
        sp.bytes = 2.0 * f.copied; /* read + write: memory-bound */
    } else {
        if (grow_names(&p->s_in, &p->cap_in, 2) != 0)
            return bk_oom(err);
        p->s_in[0] = kind == 1 ? nm->in : nm->out;
        sp.n_inputs = 1;
        if (kind == 2 && f.wait_reads_in)
            p->s_in[sp.n_inputs++] = nm->in;
        next_stamp(p);
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            uint32_t v = kind == 1 ? c->coll : c->wait;
            n_after = add_refs(p, &p->s_after, &p->cap_after, n_after,
                               CS_ROW_BEGIN(g->after, v),
                               CS_ROW_LEN(g->after, v),
                               kind == 1 ? self_coll : self_wait,
                               kind == 1 ? self_wait : self_coll, newidx, 0,
                               dropped);
            if (n_after == (size_t)-1)
                return bk_oom(err);
        }
        next_stamp(p);
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            uint32_t v = kind == 1 ? c->coll : c->wait;
            n_fake = add_refs(p, &p->s_fake, &p->cap_fake, n_fake,
                              CS_ROW_BEGIN(g->after_fake, v),
                              CS_ROW_LEN(g->after_fake, v),
                              kind == 1 ? self_coll : self_wait,
                              kind == 1 ? self_wait : self_coll, newidx, 1,
                              dropped);
            if (n_fake == (size_t)-1)
                return bk_oom(err);
        }
        sp.after = p->s_after;
        sp.n_after = n_after;
        sp.after_fake = p->s_fake;
        sp.n_after_fake = n_fake;
    }
    if (kind == 1) {
        const cs_node *first = &g->nodes[bk_member(p, bk, 0)->coll];
        one.name = nm->out;
        one.size = f.out_size;
        one.alias_of = f.out_alias ? nm->in : NULL;
        sp.name = nm->coll;
        sp.kind = COMMSCHED_NODE_COLLECTIVE;
        sp.op = commsched_coll_op_str(p->op);
        sp.group = g->groups[first->group].name;
        sp.dtype = bucket_dtype(p, bk);
        sp.reduce_op = (commsched_reduce_op)first->reduce_op;
    }
    if (kind == 2) {
        size_t n_out = 0;
        for (uint32_t i = 0; i < bk->n; i++)
            n_out += g->nodes[bk_member(p, bk, i)->wait].n_out +
                     g->buffers[bk_member(p, bk, i)->out].is_output;
        if (cs_grow((void **)&p->s_out, &p->cap_out, n_out ? n_out : 1,
                    sizeof *p->s_out) != 0)
            return bk_oom(err);
        n_out = 0;
        for (uint32_t i = 0; i < bk->n; i++) {
            const cand *c = bk_member(p, bk, i);
            const cs_node *w = &g->nodes[c->wait];
            if (g->buffers[c->out].is_output) {
                /* the graph returns the member's result (Inductor's
                 * forward saves a gathered weight for the backward): it
                 * stays, as the view of its slice */
                commsched_output_spec *os = &p->s_out[n_out++];
                os->name = g->buffers[c->out].name;
                os->size = g->buffers[c->out].size;
                os->alias_of = nm->out;
            }
            for (uint32_t k = 0; k < w->n_out; k++) {
                const cs_buffer *o = &g->buffers[w->out_first + k];
                commsched_output_spec *os = &p->s_out[n_out++];
                os->name = o->name;
                os->size = o->size;
                os->alias_of = o->alias_of == COMMSCHED_NONE ? NULL
                               : o->alias_of == c->out
                                   ? nm->out /* a view of its slice */
                                   : g->buffers[o->alias_of].name;
            }
        }
        sp.name = nm->wait;
        sp.kind = COMMSCHED_NODE_WAIT;
        sp.op = g->nodes[bk_member(p, bk, 0)->wait].op;
        sp.outputs = p->s_out;
        sp.n_outputs = n_out;
    } else {
        sp.outputs = &one;
        sp.n_outputs = 1;
    }
    sp.inputs = p->s_in;
    return commsched_builder_add_node(b, &sp, err);
}

static void built_free(built *bt)
{
    commsched_graph_destroy(bt->g);
    free(bt->runtime);
    free(bt->bucket_node);
    memset(bt, 0, sizeof *bt);
}

/* Points the members of bucket bi at it: vmap (member nodes -> the
 * bucket's collective or wait) and cand_bucket; on = 0 undoes it. A closed
 * bucket stays mapped from the moment it closes (close_open); only the
 * open one (`extra`) is mapped for the time of one pricing, so a pricing
 * costs its own members, not every member so far. */
static void map_bucket(bk_pass *p, const bucket *bk, size_t bi, int on)
{
    for (uint32_t i = 0; i < bk->n; i++) {
        uint32_t ci = p->mem[bk->first + i];
        const cand *c = &p->cands[ci];
        p->vmap[c->coll] = on ? (uint32_t)(p->n + 3 * bi + 1) : c->coll;
        p->vmap[c->wait] = on ? (uint32_t)(p->n + 3 * bi + 2) : c->wait;
        p->cand_bucket[ci] = on ? (uint32_t)bi : COMMSCHED_NONE;
    }
}

static void map_extra(bk_pass *p, const bucket *extra, int on)
{
    if (extra)
        map_bucket(p, extra, p->n_bk, on);
}

/* Builds the graph with the closed buckets and `extra` (may be NULL)
 * merged, nodes in placement order, and the runtimes of its nodes. */
static commsched_status materialize(bk_pass *p, const bucket *extra,
                                    built *out)
{
    const commsched_graph *g = p->g;
    commsched_error *err = p->ctx->err;
    uint32_t n = p->n;
    size_t nb = p->n_bk + (extra ? 1 : 0);
    placement pl = {0};
    commsched_builder *b = NULL;
    commsched_status st;
    memset(out, 0, sizeof *out);
    if (cs_grow((void **)&p->names, &p->cap_names, nb ? nb : 1,
                sizeof *p->names) != 0 ||
        cs_grow((void **)&p->seen, &p->cap_seen, (size_t)n + 3 * nb,
                sizeof *p->seen) != 0)
        return bk_oom(err);
    /* cs_grow leaves new entries uninitialised: every stamp starts below
     * the first one handed out. */
    memset(p->seen, 0, p->cap_seen * sizeof *p->seen);
    p->seen_stamp = 0;
    for (size_t bi = 0; bi < nb; bi++)
        fill_names(p, bk_bucket_at(p, extra, bi)->name_k, &p->names[bi]);
    map_extra(p, extra, 1);
    if ((st = cs_bk_place(p, extra, &pl)) != COMMSCHED_OK)
        goto cleanup;
    out->bucket_node = cs_malloc_array(3 * nb + 1, sizeof *out->bucket_node);
    if (!out->bucket_node)
        goto oom;

    if ((st = commsched_builder_create(g->name, &b, err)) != COMMSCHED_OK)
        goto cleanup;
    for (uint32_t i = 0; i < g->n_groups && st == COMMSCHED_OK; i++)
        st = commsched_builder_add_group(b, g->groups[i].name,
                                         g->groups[i].size,
                                         g->groups[i].hosts, err);
    for (uint32_t i = 0; i < g->n_inputs && st == COMMSCHED_OK; i++)
        st = commsched_builder_add_input(b, g->buffers[i].name,
                                         g->buffers[i].size,
                                         g->buffers[i].freeable, err);
    for (uint32_t i = 0; i < pl.placed && st == COMMSCHED_OK; i++) {
        uint32_t v = pl.vorder[i];
        if (v < n)
            st = add_old_node(p, b, v, pl.newidx, &out->fake_dropped);
        else
            st = add_bucket_node(p, b, bk_bucket_at(p, extra, (v - n) / 3),
                                 (v - n) / 3, (int)((v - n) % 3), pl.newidx,
                                 &out->fake_dropped);
    }
    for (uint32_t i = 0; i < g->n_outputs && st == COMMSCHED_OK; i++)
        st = commsched_builder_add_output(b, g->buffers[g->outputs[i]].name,
                                          err);
    if (st != COMMSCHED_OK)
        goto cleanup;
    st = commsched_builder_finish(b, 0, &out->g, err);
    b = NULL; /* consumed */
    if (st != COMMSCHED_OK)
        goto cleanup;

    /* Runtimes: the caller's for the nodes that stay, the cost model's for
     * the new ones. */
    out->runtime = cs_malloc_array(pl.placed, sizeof *out->runtime);
    if (!out->runtime)
        goto oom;
    for (uint32_t i = 0; i < pl.placed; i++) {
        uint32_t v = pl.vorder[i];
        if (v < n) {
            out->runtime[i] = p->ctx->runtime_ns[v];
            continue;
        }
        commsched_node_cost nc;
        if ((st = commsched_cost_node(out->g, i, p->ctx->cost, NULL, &nc,
                                      err)) != COMMSCHED_OK)
            goto cleanup;
        out->runtime[i] = nc.runtime_ns;
    }
    for (size_t i = 0; i < 3 * nb; i++)
        out->bucket_node[i] = pl.newidx[n + i];
    goto cleanup;
oom:
    st = bk_oom(err);
cleanup:
    map_extra(p, extra, 0);
    commsched_builder_destroy(b);
    cs_bk_placement_free(&pl);
    if (st != COMMSCHED_OK)
        built_free(out);
    return st;
}

/* The full way: the merged graph placed and priced whole. */
static commsched_status price_full(bk_pass *p, const bucket *extra,
                                   int64_t *peak, double *makespan)
{
    placement pl;
    commsched_status st = cs_bk_place(p, extra, &pl);
    if (st == COMMSCHED_OK)
        st = cs_bk_virtual_price(p, extra, &pl, peak, makespan);
    cs_bk_placement_free(&pl);
    return st;
}

/* Peak memory and (step not NULL) the simulated step with the closed
 * buckets and `extra` merged: incrementally where the window of the merge
 * allows it (the step then within step->eps of step->est), else the full
 * way (eps 0). In verify mode the full way always runs and must agree,
 * and the graph is also built and priced by the real memory model and
 * simulator, which must agree with the full way. */
static commsched_status evaluate(bk_pass *p, const bucket *extra,
                                 int64_t *peak, bk_step *step)
{
    commsched_status st = COMMSCHED_OK;
    double full_step = 0;
    map_extra(p, extra, 1);
    int fast = extra && cs_bk_incr_peak(p, extra, peak);
    int fast_step = fast && step && cs_bk_time_price(p, extra, step);
    p->n_priced++;
    p->n_full += !fast || (step && !fast_step);
    if (!fast || (step && !fast_step) || p->ctx->verify) {
        int64_t full = 0;
        st = price_full(p, extra, &full, step ? &full_step : NULL);
        if (st == COMMSCHED_OK && fast && full != *peak)
            st = commsched_error_set(
                p->ctx->err, COMMSCHED_EINTERNAL, NULL,
                "bucketing: priced a merge incrementally at peak %lld; the "
                "full placement has %lld",
                (long long)*peak, (long long)full);
        if (st == COMMSCHED_OK && fast_step &&
            !(fabs(full_step - step->est) <= step->eps))
            st = commsched_error_set(
                p->ctx->err, COMMSCHED_EINTERNAL, NULL,
                "bucketing: priced a merge's step incrementally at %.17g "
                "(within %.3g); the full placement has %.17g",
                step->est, step->eps, full_step);
        *peak = full;
        if (step && !fast_step) {
            step->est = full_step;
            step->eps = 0.0;
        }
    }
    map_extra(p, extra, 0);
    if (st != COMMSCHED_OK || !p->ctx->verify)
        return st;
    built bt;
    int64_t real_peak = 0;
    double real_step = 0;
    if ((st = materialize(p, extra, &bt)) == COMMSCHED_OK)
        st = cs_bk_price(bt.g, NULL, bt.runtime, &real_peak,
                         step ? &real_step : NULL, p->ctx->err);
    built_free(&bt);
    if (st == COMMSCHED_OK &&
        (real_peak != *peak || (step && real_step != full_step)))
        st = commsched_error_set(
            p->ctx->err, COMMSCHED_EINTERNAL, NULL,
            "bucketing: priced a merge at peak %lld, step %.17g; the built "
            "graph has %lld, %.17g",
            (long long)*peak, full_step, (long long)real_peak, real_step);
    return st;
}

/* The exact step with the closed buckets and `extra` merged. */
static commsched_status exact_step(bk_pass *p, const bucket *extra,
                                   bk_step *step)
{
    int64_t peak;
    p->n_full++;
    map_extra(p, extra, 1);
    commsched_status st = price_full(p, extra, &peak, &step->est);
    map_extra(p, extra, 0);
    step->eps = 0.0;
    return st;
}

/* Whether the step with `tentative` merged (*tried) is shorter than with
 * the open bucket as accepted so far (*now: `open` merged when it has two
 * members or more). Either may be an estimate; only where their intervals
 * meet are both priced the full way, so the answer is the exact figures'. */
static commsched_status shorter_step(bk_pass *p, const bucket *open,
                                     const bucket *tentative, bk_step *tried,
                                     bk_step *now, int *shorter)
{
    commsched_status st = COMMSCHED_OK;
    if (tried->est + tried->eps < now->est - now->eps) {
        *shorter = 1;
        return st;
    }
    if (tried->est - tried->eps > now->est + now->eps) {
        *shorter = 0;
        return st;
    }
    if (now->eps != 0.0 &&
        (st = exact_step(p, open->n >= 2 ? open : NULL, now)) != COMMSCHED_OK)
        return st;
    if (tried->eps != 0.0 &&
        (st = exact_step(p, tentative, tried)) != COMMSCHED_OK)
        return st;
    *shorter = tried->est < now->est;
    return st;
}

/* ---- the greedy walk ------------------------------------------------------- */

/* The open bucket: members mem[first ..], the reason the last candidate
 * after its last member was passed over. */
typedef struct open_bucket {
    bucket b;
    const char *skipped; /* "dependency" or NULL */
} open_bucket;

static void desc_reset(bk_pass *p)
{
    p->desc.n = 0;
    if (++p->epoch == 0) {
        memset(p->mark, 0, (size_t)p->n * sizeof *p->mark);
        p->epoch = 1;
    }
}

static void desc_add(bk_pass *p, uint32_t v)
{
    if (p->mark[v] != p->epoch) {
        p->mark[v] = p->epoch;
        bk_push_node(&p->desc, p->pos[v], v);
    }
}

/* Marks the open bucket's descendants up to position `limit`: a path to a
 * node passes only through earlier positions, so this is exact there. */
static void desc_expand(bk_pass *p, uint32_t limit)
{
    const commsched_graph *g = p->g;
    while (p->desc.n > 0 && p->pos[p->desc.a[0].v] <= limit) {
        uint32_t v = cs_heap_pop(&p->desc).v;
        for (uint32_t e = g->users.off[v]; e < g->users.off[v + 1]; e++)
            desc_add(p, g->users.idx[e]);
    }
}

static void open_with(bk_pass *p, open_bucket *ob, size_t ci)
{
    assert(ob->b.n == 0 && p->cands[ci].eligible);
    uint32_t prev = p->n_bk ? p->bk[p->n_bk - 1].name_k + 1 : 0;
    ob->b.first = (uint32_t)p->n_mem;
    ob->b.n = 1;
    ob->b.bytes = p->cands[ci].bytes;
    ob->b.name_k = free_name(p, prev);
    ob->b.closed_by = NULL;
    ob->skipped = NULL;
    p->mem[p->n_mem++] = (uint32_t)ci;
    desc_reset(p);
    desc_add(p, p->cands[ci].wait);
    cs_bk_incr_opened(p);
    cs_bk_time_opened(p);
}

static commsched_status close_open(bk_pass *p, open_bucket *ob,
                                   const char *why)
{
    if (ob->b.n >= 2) {
        if (cs_grow((void **)&p->bk, &p->cap_bk, p->n_bk + 1,
                    sizeof *p->bk) != 0)
            return bk_oom(p->ctx->err);
        ob->b.closed_by = why;
        map_bucket(p, &ob->b, p->n_bk, 1); /* mapped from now on */
        cs_bk_incr_closed(p, &ob->b);
        cs_bk_time_closed(p);
        p->bk[p->n_bk++] = ob->b;
    } else {
        p->n_mem = ob->b.first; /* a bucket of one is no bucket */
    }
    ob->b.n = 0;
    return COMMSCHED_OK;
}

static int exceeds_cap(int64_t have, int64_t add, int64_t cap)
{
    return have > cap || add > cap - have;
}

static int64_t cap_bytes(double mb)
{
    /* Inductor: int(bucket_cap_mb * 1024 * 1024). */
    double b = mb * 1048576.0;
    if (!(b > -9.2e18))
        return -1;
    if (b >= 9.2e18)
        return INT64_MAX;
    return (int64_t)b;
}

static commsched_status walk(bk_pass *p)
{
    const commsched_knobs *k = p->ctx->k;
    commsched_error *err = p->ctx->err;
    int cost_mode = k->bucket_mode == CS_BUCKET_COST;
    int64_t cap = cap_bytes(k->bucket_cap_mb), peak0 = 0, peak = 0;
    bk_step makespan = {0.0, 0.0}, tried = {0.0, 0.0};
    commsched_status st;
    if ((st = cs_bk_price(p->g, p->order, p->ctx->runtime_ns, &peak0,
                    cost_mode ? &makespan.est : NULL, err)) != COMMSCHED_OK)
        return st;
    double limit = (double)peak0 * (1.0 + k->bucket_peak_memory_budget);
    open_bucket ob;
    memset(&ob, 0, sizeof ob);
    /* eligible candidates seen before this one: bit `ne - 1` of
     * bucket_cuts ends the bucket after the previous one */
    unsigned long ne = 0;
    for (size_t ci = 0; ci < p->n_cands; ci++) {
        const cand *c = &p->cands[ci];
        int cut = c->eligible && ne > 0 && ne <= 63 && k->bucket_cuts > 0 &&
                  ((unsigned long)k->bucket_cuts >> (ne - 1) & 1u);
        ne += c->eligible != 0;
        if (ob.b.n && (!c->eligible ||
                       !same_key(p, bk_member(p, &ob.b, 0), c))) {
            if ((st = close_open(p, &ob, ob.skipped ? ob.skipped : "key")) !=
                COMMSCHED_OK)
                return st;
        }
        if (!c->eligible)
            continue;
        if (!ob.b.n) {
            open_with(p, &ob, ci);
            continue;
        }
        desc_expand(p, p->pos[c->wait]);
        if (p->mark[c->coll] == p->epoch || p->mark[c->wait] == p->epoch) {
            ob.skipped = "dependency"; /* Inductor skips it for good */
            continue;
        }
        const char *refused = NULL;
        if (cut)
            refused = "cut";
        else if (k->bucket_max_ops > 0 && (long)ob.b.n >= k->bucket_max_ops)
            refused = "max_ops";
        else if (exceeds_cap(ob.b.bytes, c->bytes, cap))
            refused = "cap";
        else {
            bucket tentative = ob.b;
            p->mem[p->n_mem++] = (uint32_t)ci;
            tentative.n++;
            st = evaluate(p, &tentative, &peak, cost_mode ? &tried : NULL);
            int shorter = 1;
            if (st == COMMSCHED_OK && (double)peak > limit)
                refused = "memory";
            else if (st == COMMSCHED_OK && cost_mode &&
                     (st = shorter_step(p, &ob.b, &tentative, &tried,
                                        &makespan, &shorter)) ==
                         COMMSCHED_OK &&
                     !shorter)
                refused = "cost";
            p->n_mem--;
            if (st != COMMSCHED_OK)
                return st;
        }
        if (refused) {
            if ((st = close_open(p, &ob, refused)) != COMMSCHED_OK)
                return st;
            open_with(p, &ob, ci);
            continue;
        }
        p->mem[p->n_mem++] = (uint32_t)ci;
        ob.b.n++;
        ob.b.bytes += c->bytes;
        ob.skipped = NULL;
        if (cost_mode)
            makespan = tried;
        cs_bk_incr_accept(p);
        cs_bk_time_accept(p);
        desc_add(p, c->wait);
    }
    if (ob.b.n)
        return close_open(p, &ob, ob.skipped ? ob.skipped : "end");
    return COMMSCHED_OK;
}

/* ---- the pass -------------------------------------------------------------- */

/* Copies the members' names into one block the record owns. */
static const char *const *member_names(const bk_pass *p, const bucket *bk)
{
    size_t bytes = bk->n * sizeof(char *);
    for (uint32_t i = 0; i < bk->n; i++)
        bytes += strlen(p->g->nodes[bk_member(p, bk, i)->coll].name) + 1;
    char **names = malloc(bytes);
    if (!names)
        return NULL;
    char *text = (char *)(names + bk->n);
    for (uint32_t i = 0; i < bk->n; i++) {
        const char *s = p->g->nodes[bk_member(p, bk, i)->coll].name;
        size_t len = strlen(s) + 1;
        memcpy(text, s, len);
        names[i] = text;
        text += len;
    }
    return (const char *const *)names;
}

static commsched_status record(bk_pass *p, const built *bt)
{
    cs_pass_record *rec = p->ctx->rec;
    rec->pub.fake_edges_dropped = bt->fake_dropped;
    for (size_t bi = 0; bi < p->n_bk; bi++) {
        const bucket *bk = &p->bk[bi];
        commsched_bucket_stats *row = cs_record_bucket(rec);
        if (!row)
            return bk_oom(p->ctx->err);
        row->copy_in = bt->bucket_node[3 * bi];
        row->node = bt->bucket_node[3 * bi + 1];
        row->wait = bt->bucket_node[3 * bi + 2];
        row->n_members = bk->n;
        if (!(row->members = member_names(p, bk)))
            return bk_oom(p->ctx->err);
        row->bytes = (int64_t)commsched_cost_collective_bytes(bt->g, row->node);
        for (uint32_t i = 0; i < bk->n; i++)
            row->time_before_ns += p->ctx->runtime_ns[bk_member(p, bk, i)->coll];
        row->time_after_ns =
            bt->runtime[row->copy_in] + bt->runtime[row->node];
        row->closed_by = bk->closed_by;
    }
    return COMMSCHED_OK;
}

static void pass_free(bk_pass *p)
{
    free(p->order);
    free(p->pos);
    free(p->block_run);
    free(p->cands);
    free(p->mem);
    free(p->bk);
    free(p->mark);
    cs_heap_fini(&p->desc);
    free(p->vmap);
    free(p->via);
    free(p->cand_bucket);
    free(p->names);
    free(p->s_in);
    free(p->s_after);
    free(p->s_fake);
    free(p->s_out);
    free(p->seen);
    cs_bk_incr_destroy(p);
    cs_bk_time_destroy(p);
}

static commsched_status bucket_pass(cs_pass_ctx *ctx, commsched_coll_op op,
                                    const char *tag, int by_block)
{
    bk_pass p;
    built bt;
    commsched_schedule *s = NULL;
    commsched_status st = COMMSCHED_OK;
    memset(&p, 0, sizeof p);
    memset(&bt, 0, sizeof bt);
    p.ctx = ctx;
    p.g = ctx->g;
    p.op = op;
    p.tag = tag;
    p.by_block = by_block || ctx->k->bucket_by_block;
    p.n = p.g->n_nodes;
    p.order = cs_malloc_array(p.n, sizeof *p.order);
    p.pos = cs_malloc_array(p.n, sizeof *p.pos);
    p.mem = cs_malloc_array(p.n, sizeof *p.mem);
    p.mark = cs_calloc(p.n, sizeof *p.mark);
    int desc_failed = cs_heap_reserve(&p.desc, p.n) != 0;
    p.vmap = cs_malloc_array(p.n, sizeof *p.vmap);
    if (!p.order || !p.pos || !p.mem || !p.mark || desc_failed ||
        !p.vmap) {
        st = bk_oom(ctx->err);
        goto cleanup;
    }
    if ((st = commsched_schedule_to_array(ctx->s, p.order, ctx->err)) !=
        COMMSCHED_OK)
        goto cleanup;
    for (uint32_t i = 0; i < p.n; i++) {
        p.pos[p.order[i]] = i;
        p.vmap[i] = i;
    }
    if (p.by_block) {
        if (!(p.block_run = cs_malloc_array(p.n, sizeof *p.block_run))) {
            st = bk_oom(ctx->err);
            goto cleanup;
        }
        uint32_t run = 0;
        for (uint32_t i = 0; i < p.n; i++) {
            if (i && !same_block(p.g->nodes[p.order[i - 1]].name,
                                 p.g->nodes[p.order[i]].name))
                run++;
            p.block_run[p.order[i]] = run;
        }
    }
    if ((st = collect(&p)) != COMMSCHED_OK || (st = chains(&p)) != COMMSCHED_OK ||
        (st = cs_bk_incr_create(&p)) != COMMSCHED_OK ||
        (ctx->k->bucket_mode == CS_BUCKET_COST &&
         (st = cs_bk_time_create(&p)) != COMMSCHED_OK) ||
        (st = walk(&p)) != COMMSCHED_OK)
        goto cleanup;
    ctx->rec->pub.merges_priced += p.n_priced;
    ctx->rec->pub.full_pricings += p.n_full;
    if (p.n_bk == 0)
        goto cleanup; /* nothing merged: the graph stays as it is */
    if ((st = materialize(&p, NULL, &bt)) != COMMSCHED_OK ||
        (st = record(&p, &bt)) != COMMSCHED_OK ||
        (st = commsched_schedule_create(bt.g, NULL, &s, ctx->err)) !=
            COMMSCHED_OK)
        goto cleanup;
    /* The run owns them from here on, whatever cs_pass_replace returns. */
    st = cs_pass_replace(ctx, bt.g, s, bt.runtime);
    bt.g = NULL;
    bt.runtime = NULL;
    s = NULL;
cleanup:
    commsched_schedule_destroy(s);
    built_free(&bt);
    pass_free(&p);
    return st;
}

commsched_status cs_pass_bucket_all_gather(cs_pass_ctx *ctx)
{
    return bucket_pass(ctx, COMMSCHED_COLL_ALL_GATHER, "ag", 0);
}

commsched_status cs_pass_bucket_reduce_scatter(cs_pass_ctx *ctx)
{
    return bucket_pass(ctx, COMMSCHED_COLL_REDUCE_SCATTER, "rs", 0);
}

commsched_status cs_pass_bucket_all_reduce(cs_pass_ctx *ctx)
{
    return bucket_pass(ctx, COMMSCHED_COLL_ALL_REDUCE, "ar", 0);
}

/* The plan experts write by hand (SimpleFSDP's transformer-block
 * bucketing): one all-gather and one reduce-scatter bucket per block, with
 * no size cap and no memory check, each all-gather prefetched one block
 * ahead (it rises over the previous block's compute up to the previous
 * block's wait, whatever that costs in memory) and every wait sunk to its
 * first consumer. */
commsched_status cs_pass_bucket_transformer_blocks(cs_pass_ctx *ctx)
{
    commsched_knobs k = *ctx->k;
    k.bucket_cap_mb = INFINITY;
    k.bucket_max_ops = 0;
    k.bucket_mode = CS_BUCKET_GREEDY;
    k.bucket_peak_memory_budget = INFINITY;
    cs_pass_ctx c = *ctx;
    c.k = &k;
    commsched_status st =
        bucket_pass(&c, COMMSCHED_COLL_ALL_GATHER, "ag", 1);
    /* The all-gather rows name nodes of the graph between the two
     * rewrites; the record must name nodes of the final one. */
    const commsched_graph *mid = c.g;
    uint32_t n_ag = ctx->rec->pub.n_buckets;
    if (st == COMMSCHED_OK)
        st = bucket_pass(&c, COMMSCHED_COLL_REDUCE_SCATTER, "rs", 1);
    for (uint32_t i = 0; st == COMMSCHED_OK && c.g != mid && i < n_ag; i++) {
        commsched_bucket_stats *b = &ctx->rec->buckets[i];
        b->copy_in = commsched_graph_find_node(c.g, mid->nodes[b->copy_in].name);
        b->node = commsched_graph_find_node(c.g, mid->nodes[b->node].name);
        b->wait = commsched_graph_find_node(c.g, mid->nodes[b->wait].name);
    }
    /* A rewrite hands the pipeline a new graph through c. */
    ctx->g = c.g;
    ctx->s = c.s;
    ctx->runtime_ns = c.runtime_ns;
    if (st == COMMSCHED_OK)
        st = cs_simple_overlap(ctx, INFINITY, 1);
    return st;
}
