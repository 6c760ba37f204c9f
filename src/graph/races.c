/* commsched — the race checker (commsched_schedule_check_races).
 *
 * Independent of the edges derived from in-place writes (mutation.c): it
 * looks only at an order and at which root buffers each node reads and
 * writes, so it can catch a derivation or a pass that lets two accesses
 * overlap. Intervals, as the runtime executes them:
 *   - an async collective is in flight from its position up to, not
 *     including, the first wait (in this order) that reads one of its
 *     outputs — to the end of the step when no wait does;
 *   - every other node (compute, wait, sync collective) occupies its own
 *     position only.
 * Accesses: a node reads the roots of its inputs; it writes the roots of its
 * real outputs and, for a collective, of its alias outputs (in place). A
 * compute node's or a wait's alias output (a view, a wait's result) writes
 * nothing. Two intervals that overlap race when they touch the same root
 * and at least one writes it.
 *
 * One sweep over the order with per-root counts of the in-flight readers
 * and writers: O(nodes + reads + outputs); the partner of a race is looked
 * up only to word the error. */
#include "commsched/schedule.h"

#include <stdio.h>
#include <stdlib.h>

#include "graph_internal.h"

typedef struct race_state {
    const commsched_graph *g;
    uint32_t *pos;      /* node -> position */
    uint32_t *done;     /* node -> first position it no longer occupies */
    uint32_t *n_read;   /* root -> in-flight nodes reading it */
    uint32_t *n_write;  /* root -> in-flight nodes writing it */
    uint32_t *end_head; /* position -> first node retiring there */
    uint32_t *end_next; /* node -> next node retiring at the same position */
} race_state;

/* 1 when output k of node v writes its root (see above). */
static int output_writes(const commsched_graph *g, uint32_t v, uint32_t k)
{
    const cs_buffer *b = &g->buffers[g->nodes[v].out_first + k];
    return b->alias_of == COMMSCHED_NONE ||
           g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
}

/* Adds d (+1 or -1 as uint32 wrap) to the counts of v's accesses. */
static void account(race_state *r, uint32_t v, uint32_t d)
{
    const commsched_graph *g = r->g;
    for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++)
        r->n_read[g->buffers[g->reads.idx[k]].root] += d;
    for (uint32_t k = 0; k < g->nodes[v].n_out; k++)
        if (output_writes(g, v, k))
            r->n_write[g->buffers[g->nodes[v].out_first + k].root] += d;
}

static int node_reads(const commsched_graph *g, uint32_t v, uint32_t root)
{
    for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++)
        if (g->buffers[g->reads.idx[k]].root == root)
            return 1;
    return 0;
}

static int node_writes(const commsched_graph *g, uint32_t v, uint32_t root)
{
    for (uint32_t k = 0; k < g->nodes[v].n_out; k++)
        if (output_writes(g, v, k) &&
            g->buffers[g->nodes[v].out_first + k].root == root)
            return 1;
    return 0;
}

/* Words the race between v (at position p) and an in-flight node touching
 * root: v writes it (v_writes) or reads it while someone writes it. */
static commsched_status report(const race_state *r, const uint32_t *order,
                               uint32_t p, uint32_t root, int v_writes,
                               commsched_error *err)
{
    const commsched_graph *g = r->g;
    uint32_t v = order[p], u = COMMSCHED_NONE;
    for (uint32_t q = 0; q < p && u == COMMSCHED_NONE; q++) {
        uint32_t c = order[q];
        if (r->done[c] > p && node_writes(g, c, root))
            u = c;
    }
    for (uint32_t q = 0; q < p && u == COMMSCHED_NONE && v_writes; q++) {
        uint32_t c = order[q];
        if (r->done[c] > p && node_reads(g, c, root))
            u = c;
    }
    char path[32];
    snprintf(path, sizeof path, "nodes[%u]", v);
    if (u == COMMSCHED_NONE) /* counts and lists disagree: a bug here */
        return commsched_error_set(err, COMMSCHED_EINTERNAL, path,
                                   "race check lost track of \"%s\"",
                                   g->buffers[root].name);
    int u_writes = node_writes(g, u, root);
    return commsched_error_set(
        err, COMMSCHED_EORDER, path,
        "race on buffer \"%s\": \"%s\" (position %u) %s it while \"%s\" "
        "(position %u, in flight until %s) %s it",
        g->buffers[root].name, g->nodes[v].name, p,
        v_writes ? "writes" : "reads", g->nodes[u].name, r->pos[u],
        r->done[u] >= g->n_nodes ? "the end of the step" : "its wait",
        u_writes ? "writes" : "reads");
}

static commsched_status sweep(race_state *r, const uint32_t *order,
                              commsched_error *err)
{
    const commsched_graph *g = r->g;
    uint32_t n = g->n_nodes;
    for (uint32_t p = 0; p <= n; p++)
        r->end_head[p] = COMMSCHED_NONE;
    for (uint32_t v = 0; v < n; v++)
        r->done[v] = cs_is_async_collective(&g->nodes[v]) ? n : r->pos[v] + 1;
    /* An async collective completes at its first wait in this order. */
    for (uint32_t p = 0; p < n; p++) {
        uint32_t w = order[p];
        if (g->nodes[w].kind != COMMSCHED_NODE_WAIT)
            continue;
        for (uint32_t k = g->reads.off[w]; k < g->reads.off[w + 1]; k++) {
            uint32_t c = g->buffers[g->reads.idx[k]].producer;
            if (c != COMMSCHED_NONE && cs_is_async_collective(&g->nodes[c]) &&
                r->pos[c] < p && r->done[c] > p)
                r->done[c] = p;
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        r->end_next[v] = r->end_head[r->done[v]];
        r->end_head[r->done[v]] = v;
    }
    for (uint32_t p = 0; p < n; p++) {
        for (uint32_t u = r->end_head[p]; u != COMMSCHED_NONE;
             u = r->end_next[u])
            account(r, u, (uint32_t)-1);
        uint32_t v = order[p];
        for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++) {
            uint32_t root = g->buffers[g->reads.idx[k]].root;
            if (r->n_write[root] > 0)
                return report(r, order, p, root, 0, err);
        }
        for (uint32_t k = 0; k < g->nodes[v].n_out; k++) {
            uint32_t root = g->buffers[g->nodes[v].out_first + k].root;
            if (output_writes(g, v, k) &&
                (r->n_write[root] > 0 || r->n_read[root] > 0))
                return report(r, order, p, root, 1, err);
        }
        account(r, v, 1);
    }
    return COMMSCHED_OK;
}

commsched_status commsched_schedule_check_races(const commsched_schedule *s,
                                                commsched_error *err)
{
    const commsched_graph *g = commsched_schedule_graph(s);
    uint32_t n = g->n_nodes;
    race_state r = {g,
                    cs_malloc_array(n, sizeof *r.pos),
                    cs_malloc_array(n, sizeof *r.done),
                    cs_calloc(g->n_buffers, sizeof *r.n_read),
                    cs_calloc(g->n_buffers, sizeof *r.n_write),
                    cs_malloc_array((size_t)n + 1, sizeof *r.end_head),
                    cs_malloc_array(n, sizeof *r.end_next)};
    uint32_t *order = cs_malloc_array(n, sizeof *order);
    commsched_status st;
    if (!r.pos || !r.done || !r.n_read || !r.n_write || !r.end_head ||
        !r.end_next || !order)
        st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
    else if ((st = commsched_schedule_to_array(s, order, err)) ==
             COMMSCHED_OK) {
        for (uint32_t p = 0; p < n; p++)
            r.pos[order[p]] = p;
        st = sweep(&r, order, err);
    }
    free(order);
    free(r.pos);
    free(r.done);
    free(r.n_read);
    free(r.n_write);
    free(r.end_head);
    free(r.end_next);
    return st;
}
