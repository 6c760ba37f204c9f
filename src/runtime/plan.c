/* commsched — the execution plan of a runtime adaptor (plan.h).
 *
 * Buffers follow the memory model (docs/FORMAT.md "Memory model (in brief)") with one correction that
 * real hardware forces: a buffer an async collective reads or writes cannot
 * be freed before the collective completes, because the library is still
 * reading or writing it. The model frees a collective's input at the
 * collective (its last reader in the order); a runtime must hold it until
 * the wait, as PyTorch does with record_stream. So a buffer's free point is
 * the later of its last reader and the completing wait of every async
 * collective that touches it; a collective no wait completes holds its
 * buffers to the end of the iteration. The measured peak can therefore
 * exceed the per-step model's; the simulator's peak over time (which frees
 * at the end of the last reader in time) is the closer comparison.
 *
 * Everything here is rank-independent, so every rank builds the same plan
 * from the same graph, and the preflight can compare fingerprints. */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/cost.h"
#include "graph_internal.h"

#define END_POS UINT32_MAX

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

void cs_plan_fini(cs_plan *p)
{
    if (!p)
        return;
    free(p->order);
    free(p->pos);
    free(p->bytes);
    free(p->coll);
    cs_csr_free(&p->alloc_at);
    cs_csr_free(&p->free_after);
    cs_csr_free(&p->wait_colls);
    free(p->baseline);
    free(p->other);
    free(p->at_end);
    free(p->seq);
    memset(p, 0, sizeof *p);
}

/* ---- fingerprint ---------------------------------------------------------- */

typedef struct fnv {
    uint64_t h;
} fnv;

static void fnv_bytes(fnv *f, const void *data, size_t len)
{
    const unsigned char *s = data;
    for (size_t i = 0; i < len; i++) {
        f->h ^= s[i];
        f->h *= 1099511628211ull;
    }
}
static void fnv_str(fnv *f, const char *s)
{
    if (s)
        fnv_bytes(f, s, strlen(s) + 1); /* the NUL separates fields */
    else
        fnv_bytes(f, "\xff", 1);
}
static void fnv_u64(fnv *f, uint64_t v) { fnv_bytes(f, &v, sizeof v); }
static void fnv_dbl(fnv *f, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    fnv_u64(f, v);
}

/* Every field the execution depends on; names of buffers and nodes by
 * index, so two ranks with the same structure hash the same. Node fields
 * are taken in the executed order: a rank running another order differs. */
static uint64_t graph_hash(const commsched_graph *g, const uint32_t *order)
{
    fnv f = {1469598103934665603ull};
    fnv_u64(&f, g->n_groups);
    for (uint32_t i = 0; i < g->n_groups; i++) {
        fnv_str(&f, g->groups[i].name);
        fnv_u64(&f, g->groups[i].size);
        fnv_u64(&f, g->groups[i].hosts);
    }
    fnv_u64(&f, g->n_buffers);
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        const cs_buffer *x = &g->buffers[b];
        fnv_str(&f, x->name);
        fnv_u64(&f, (uint64_t)x->size);
        fnv_u64(&f, x->alias_of);
        fnv_u64(&f, (uint64_t)(x->is_input | x->freeable << 1 |
                               x->is_output << 2));
    }
    fnv_u64(&f, g->n_nodes);
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t v = order[k];
        const cs_node *n = &g->nodes[v];
        fnv_u64(&f, v);
        fnv_str(&f, n->name);
        fnv_str(&f, n->op);
        fnv_u64(&f, (uint64_t)n->kind | (uint64_t)n->coll_op << 8 |
                        (uint64_t)n->is_sync << 16 | (uint64_t)n->dtype << 24 |
                        (uint64_t)n->reduce_op << 32);
        fnv_u64(&f, n->group);
        fnv_dbl(&f, n->runtime_ns);
        fnv_dbl(&f, n->flops);
        fnv_dbl(&f, n->bytes);
        for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++)
            fnv_u64(&f, g->reads.idx[e]);
        fnv_u64(&f, (uint64_t)n->out_first << 32 | n->n_out);
        for (uint32_t e = g->after.off[v]; e < g->after.off[v + 1]; e++)
            fnv_u64(&f, g->after.idx[e]);
    }
    return f.h;
}

/* Appends `s` with tabs and newlines replaced, so fields stay fields. */
static int seq_put(char **buf, size_t *len, size_t *cap, const char *s,
                   char end)
{
    size_t l = s ? strlen(s) : 1;
    if (cs_grow((void **)buf, cap, *len + l + 2, 1) != 0)
        return -1;
    for (size_t i = 0; i < l; i++) {
        char c = s ? s[i] : '-';
        (*buf)[(*len)++] = (c == '\t' || c == '\n') ? ' ' : c;
    }
    (*buf)[(*len)++] = end;
    (*buf)[*len] = '\0';
    return 0;
}

static int build_seq(cs_plan *p)
{
    const commsched_graph *g = p->g;
    size_t cap = 0;
    char num[32];
    for (uint32_t k = 0; k < p->n; k++) {
        uint32_t v = p->order[k];
        const cs_node *n = &g->nodes[v];
        if (n->kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        snprintf(num, sizeof num, "%.0f",
                 commsched_cost_collective_bytes(g, v));
        if (seq_put(&p->seq, &p->seq_len, &cap, n->op, '\t') != 0 ||
            seq_put(&p->seq, &p->seq_len, &cap, g->groups[n->group].name,
                    '\t') != 0 ||
            seq_put(&p->seq, &p->seq_len, &cap, num, '\t') != 0 ||
            seq_put(&p->seq, &p->seq_len, &cap, n->name, '\n') != 0)
            return -1;
        p->n_coll++;
    }
    if (!p->seq) {
        p->seq = calloc(1, 1);
        if (!p->seq)
            return -1;
    }
    return 0;
}

/* Line `i` of a sequence text: start and length (without '\n'), or -1. */
static int seq_line(const char *s, size_t len, size_t *at, const char **line,
                    size_t *line_len)
{
    if (*at >= len)
        return -1;
    const char *nl = memchr(s + *at, '\n', len - *at);
    size_t end = nl ? (size_t)(nl - s) : len;
    *line = s + *at;
    *line_len = end - *at;
    *at = end + 1;
    return 0;
}

/* Length of the (op, group, bytes) key: up to the third tab. */
static size_t seq_key_len(const char *line, size_t len)
{
    int tabs = 0;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\t' && ++tabs == 3)
            return i;
    return len;
}

static void seq_describe(const char *line, size_t len, char *out, size_t size)
{
    if (!line) {
        snprintf(out, size, "nothing (the sequence has ended)");
        return;
    }
    /* op \t group \t bytes \t name */
    const char *f[4] = {"", "", "", ""};
    size_t fl[4] = {0, 0, 0, 0};
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len && k < 4; i++)
        if (i == len || line[i] == '\t') {
            f[k] = line + start;
            fl[k++] = i - start;
            start = i + 1;
        }
    snprintf(out, size, "\"%.*s\": %.*s on group \"%.*s\", %.*s bytes",
             (int)fl[3], f[3], (int)fl[0], f[0], (int)fl[1], f[1], (int)fl[2],
             f[2]);
}

long cs_plan_seq_diff(const char *mine, size_t mine_len, const char *theirs,
                      size_t theirs_len, char *mine_out, char *theirs_out,
                      size_t out_size)
{
    size_t a = 0, b = 0;
    for (long i = 0;; i++) {
        const char *la = NULL, *lb = NULL;
        size_t na = 0, nb = 0;
        int ea = seq_line(mine, mine_len, &a, &la, &na);
        int eb = seq_line(theirs, theirs_len, &b, &lb, &nb);
        if (ea != 0 && eb != 0)
            return -1;
        if (ea == 0 && eb == 0) {
            size_t ka = seq_key_len(la, na), kb = seq_key_len(lb, nb);
            if (ka == kb && memcmp(la, lb, ka) == 0)
                continue;
        }
        seq_describe(ea == 0 ? la : NULL, na, mine_out, out_size);
        seq_describe(eb == 0 ? lb : NULL, nb, theirs_out, out_size);
        return i;
    }
}

/* ---- the plan -------------------------------------------------------------- */

static int64_t scaled(int64_t size, double scale)
{
    if (size <= 0)
        return 0;
    if (scale == 1.0)
        return size;
    double s = ceil((double)size * scale);
    if (s < 8)
        s = 8;
    /* Whole 8-byte words, so every dtype's elements stay whole. */
    int64_t v = (int64_t)s;
    return (v + 7) / 8 * 8;
}

/* Pairs (row, value) for a CSR under construction. */
typedef struct pairs {
    uint32_t *rows, *vals;
    size_t n, cap_r, cap_v;
} pairs;

static int pairs_add(pairs *q, uint32_t row, uint32_t val)
{
    if (cs_grow((void **)&q->rows, &q->cap_r, q->n + 1, sizeof *q->rows) != 0 ||
        cs_grow((void **)&q->vals, &q->cap_v, q->n + 1, sizeof *q->vals) != 0)
        return -1;
    q->rows[q->n] = row;
    q->vals[q->n++] = val;
    return 0;
}

static void pairs_free(pairs *q)
{
    free(q->rows);
    free(q->vals);
}

/* The position by which everything an async collective touches may go:
 * its completing wait, or the end of the iteration. */
static uint32_t hold_until(const cs_plan *p, uint32_t coll)
{
    uint32_t w = p->coll[coll].wait;
    return w == COMMSCHED_NONE ? END_POS : p->pos[w];
}

commsched_status cs_plan_build(cs_plan *p, const commsched_graph *g,
                               const uint32_t *order, double size_scale,
                               commsched_error *err)
{
    memset(p, 0, sizeof *p);
    uint32_t n = g->n_nodes;
    p->g = g;
    p->n = n;
    p->size_scale = size_scale;
    commsched_status st = COMMSCHED_OK;
    pairs alloc = {0}, frees = {0}, waits = {0};
    size_t cap_end = 0;
    p->order = cs_malloc_array(n, sizeof *p->order);
    p->pos = cs_malloc_array(n, sizeof *p->pos);
    p->bytes = cs_calloc(g->n_buffers, sizeof *p->bytes);
    p->coll = cs_calloc(n, sizeof *p->coll);
    p->baseline = cs_malloc_array(g->n_inputs, sizeof *p->baseline);
    p->other = cs_malloc_array(g->n_inputs, sizeof *p->other);
    if (!p->order || !p->pos || !p->bytes || !p->coll || !p->baseline ||
        !p->other) {
        st = oom(err);
        goto fail;
    }
    for (uint32_t v = 0; v < n; v++)
        p->pos[v] = COMMSCHED_NONE;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order ? order[k] : k;
        if (v >= n || p->pos[v] != COMMSCHED_NONE) {
            st = commsched_error_set(err, COMMSCHED_EINVAL, "schedule",
                                     "the order is not a permutation of the "
                                     "%u nodes",
                                     n);
            goto fail;
        }
        p->order[k] = v;
        p->pos[v] = k;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = p->order[k];
        for (uint32_t e = g->deps.off[v]; e < g->deps.off[v + 1]; e++)
            if (p->pos[g->deps.idx[e]] > k) {
                st = commsched_error_set(
                    err, COMMSCHED_EORDER, "schedule",
                    "\"%s\" runs before its dependency \"%s\"",
                    g->nodes[v].name, g->nodes[g->deps.idx[e]].name);
                goto fail;
            }
    }
    for (uint32_t b = 0; b < g->n_buffers; b++)
        if (g->buffers[b].alias_of == COMMSCHED_NONE)
            p->bytes[b] = scaled(g->buffers[b].size, size_scale);

    /* Collectives: buffers, element size, completing wait. */
    for (uint32_t v = 0; v < n; v++) {
        const cs_node *nd = &g->nodes[v];
        cs_plan_coll *c = &p->coll[v];
        c->send = c->recv = c->in = c->out = c->wait = COMMSCHED_NONE;
        if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        unsigned es = commsched_dtype_size((commsched_dtype)nd->dtype);
        c->elem = es ? es : 4;
        for (uint32_t e = g->reads.off[v]; e < g->reads.off[v + 1]; e++) {
            uint32_t r = g->buffers[g->reads.idx[e]].root;
            if (c->send == COMMSCHED_NONE ||
                g->buffers[r].size > g->buffers[c->send].size)
                c->send = r;
        }
        for (uint32_t i = 0; i < nd->n_out; i++) {
            uint32_t r = g->buffers[nd->out_first + i].root;
            if (c->recv == COMMSCHED_NONE ||
                g->buffers[r].size > g->buffers[c->recv].size)
                c->recv = r;
        }
        /* Nothing written: work in place on the input; nothing read: on
         * the output. */
        c->in = c->send != COMMSCHED_NONE ? c->send : c->recv;
        c->out = c->recv != COMMSCHED_NONE ? c->recv : c->send;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t w = p->order[k];
        if (g->nodes[w].kind != COMMSCHED_NODE_WAIT)
            continue;
        size_t first = waits.n;
        for (uint32_t e = g->reads.off[w]; e < g->reads.off[w + 1]; e++) {
            uint32_t c = g->buffers[g->reads.idx[e]].producer;
            if (c == COMMSCHED_NONE ||
                g->nodes[c].kind != COMMSCHED_NODE_COLLECTIVE)
                continue;
            int seen = 0;
            for (size_t i = first; i < waits.n; i++)
                seen |= waits.vals[i] == c;
            if (seen)
                continue;
            if (pairs_add(&waits, w, c) != 0) {
                st = oom(err);
                goto fail;
            }
            if (!g->nodes[c].is_sync && p->coll[c].wait == COMMSCHED_NONE)
                p->coll[c].wait = w;
        }
    }

    /* Buffers: where they are allocated and freed. */
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        const cs_buffer *x = &g->buffers[b];
        if (x->alias_of != COMMSCHED_NONE)
            continue;
        uint32_t nr = CS_ROW_LEN(g->readers, b);
        if (x->is_input) {
            if (!x->freeable || nr == 0) {
                p->other[p->n_other++] = b;
                continue;
            }
            p->baseline[p->n_baseline++] = b;
        } else if (p->bytes[b] > 0 &&
                   pairs_add(&alloc, x->producer, b) != 0) {
            st = oom(err);
            goto fail;
        }
        uint32_t at;
        if (x->keep) {
            at = END_POS;
        } else {
            at = x->producer != COMMSCHED_NONE ? p->pos[x->producer] : 0;
            for (uint32_t i = 0; i < nr; i++) {
                uint32_t r = g->readers.idx[g->readers.off[b] + i];
                if (i == 0 || p->pos[r] > at)
                    at = p->pos[r];
            }
            for (uint32_t i = 0; i < nr && at != END_POS; i++) {
                uint32_t r = g->readers.idx[g->readers.off[b] + i];
                if (cs_is_async_collective(&g->nodes[r])) {
                    uint32_t h = hold_until(p, r);
                    if (h > at)
                        at = h;
                }
            }
            if (x->producer != COMMSCHED_NONE && at != END_POS &&
                cs_is_async_collective(&g->nodes[x->producer])) {
                uint32_t h = hold_until(p, x->producer);
                if (h > at)
                    at = h;
            }
        }
        if (p->bytes[b] == 0)
            continue;
        if (at == END_POS) {
            if (cs_grow((void **)&p->at_end, &cap_end, p->n_at_end + 1,
                        sizeof *p->at_end) != 0) {
                st = oom(err);
                goto fail;
            }
            p->at_end[p->n_at_end++] = b;
        } else if (pairs_add(&frees, p->order[at], b) != 0) {
            st = oom(err);
            goto fail;
        }
    }
    if (cs_csr_from_pairs(&p->alloc_at, n, alloc.rows, alloc.vals, alloc.n) ||
        cs_csr_from_pairs(&p->free_after, n, frees.rows, frees.vals,
                          frees.n) ||
        cs_csr_from_pairs(&p->wait_colls, n, waits.rows, waits.vals,
                          waits.n) ||
        build_seq(p) != 0) {
        st = oom(err);
        goto fail;
    }
    p->graph_hash = graph_hash(g, p->order);
    pairs_free(&alloc);
    pairs_free(&frees);
    pairs_free(&waits);
    return COMMSCHED_OK;
fail:
    pairs_free(&alloc);
    pairs_free(&frees);
    pairs_free(&waits);
    cs_plan_fini(p);
    return st;
}

/* ---- a collective's shape ------------------------------------------------- */

/* Sizes come from the largest buffer on each side. The builder makes the
 * sides fit the group's size (docs/FORMAT.md, "Collective sizes"), but
 * the buffers taken here can still disagree: a view's root is larger than
 * the slice it reads, only the largest of several buffers counts, and
 * sizes are scaled one buffer at a time. The collective then moves what
 * both can hold. */
void cs_plan_coll_shape(const cs_plan *p, uint32_t node, size_t group_size,
                        cs_coll_shape *out)
{
    const cs_plan_coll *pc = &p->coll[node];
    size_t k = group_size, es = pc->elem;
    int has_in = pc->send != COMMSCHED_NONE, has_out = pc->recv != COMMSCHED_NONE;
    size_t in_e = has_in ? (size_t)p->bytes[pc->send] / es : 0;
    size_t out_e = has_out ? (size_t)p->bytes[pc->recv] / es : 0;
    int in_place = pc->send == pc->recv || !has_in || !has_out;
    size_t one = has_in ? in_e : out_e; /* in place: the one buffer's */
    size_t both = in_e < out_e ? in_e : out_e;
    size_t count = 0, scratch = 0;
    commsched_coll_op op = (commsched_coll_op)p->g->nodes[node].coll_op;
    switch (op) {
    case COMMSCHED_COLL_ALL_REDUCE:
    case COMMSCHED_COLL_REDUCE:
    case COMMSCHED_COLL_BROADCAST:
        count = in_place ? one : both;
        break;
    case COMMSCHED_COLL_ALL_GATHER: /* the output holds k pieces */
        count = in_place ? one / k : (in_e < out_e / k ? in_e : out_e / k);
        break;
    case COMMSCHED_COLL_REDUCE_SCATTER: /* the input holds k blocks */
        count = in_place ? one / k : (out_e < in_e / k ? out_e : in_e / k);
        break;
    case COMMSCHED_COLL_ALL_TO_ALL:
        count = (in_place ? one : both) / k;
        /* Sent from a copy: in-place all-to-all is not portable. */
        if (in_place)
            scratch = count * k * es;
        break;
    case COMMSCHED_COLL_SEND:
    case COMMSCHED_COLL_RECV:
        /* A ring shift sends and receives at once: the side the node is
         * not about (what a send receives, what a recv sends) is a private
         * buffer of the size of the side it is about. */
        if (op == COMMSCHED_COLL_SEND)
            count = has_in ? in_e : out_e;
        else
            count = has_out ? out_e : in_e;
        scratch = count * es;
        in_place = 0;
        break;
    default:
        break;
    }
    out->count = count;
    out->in_place = in_place;
    out->scratch_bytes = scratch;
}
