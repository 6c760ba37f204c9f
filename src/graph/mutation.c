/* commsched — ordering edges derived from in-place writes (docs/FORMAT.md,
 * "In-place writes").
 *
 * An in-place collective (an output whose alias chain ends at a buffer the
 * collective did not create) writes that root buffer. The file order
 * defines the buffer's versions: every node that reads the root before the
 * write (in the order the graph was built in) reads the old version and
 * must be done with it before the write is issued (write-after-read), and
 * every node that reads it after the write reads the new version and must
 * wait for the write to complete (read-after-write). Nothing in the data
 * edges says either when a node reads the root by its own name (or through
 * a view taken earlier) instead of through the collective's wait, so the
 * passes could move such a reader across the write. These edges join the
 * graph's non-fake dependencies (g->deps), which every pass, the schedule
 * check and the simulator already respect — Inductor's mutation
 * dependencies play the same role there.
 *
 * "Done with it" and "complete" mean: for an async collective, its first
 * wait in file order; for every other node, the node itself. */
#include "graph_internal.h"
#include "graph_rules.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct mut_pairs {
    uint32_t *rows, *vals;
    size_t n, cap;
} mut_pairs;

static int push_pair(mut_pairs *p, uint32_t node, uint32_t dep)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        uint32_t *r = realloc(p->rows, cap * sizeof *r);
        if (!r)
            return -1;
        p->rows = r;
        uint32_t *v = realloc(p->vals, cap * sizeof *v);
        if (!v)
            return -1;
        p->vals = v;
        p->cap = cap;
    }
    p->rows[p->n] = node;
    p->vals[p->n++] = dep;
    return 0;
}

/* 1 when buffer b's alias chain passes through an output of node w: the
 * read goes through w's result (only a wait of w, or a node depending on
 * one, can name such a buffer), so the data edges already order it. */
static int chain_through(const commsched_graph *g, uint32_t b, uint32_t w)
{
    for (uint32_t c = b; c != COMMSCHED_NONE; c = g->buffers[c].alias_of)
        if (g->buffers[c].producer == w)
            return 1;
    return 0;
}

/* The input index (into node r's reads) of r's first read of root `root`
 * that does not go through node w's outputs, or UINT32_MAX. root_reads:
 * each written root's reads, as indices into g->reads.idx in file order,
 * so r's are found by a binary search, not a scan of r's reads (a node
 * may read thousands of roots). */
static uint32_t own_name_read(const commsched_graph *g,
                              const cs_csr *root_reads, uint32_t r,
                              uint32_t root, uint32_t w)
{
    const uint32_t *e = CS_ROW_BEGIN(*root_reads, root);
    uint32_t lo = 0, hi = CS_ROW_LEN(*root_reads, root);
    uint32_t first = g->reads.off[r], end = g->reads.off[r + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo; i < CS_ROW_LEN(*root_reads, root) && e[i] < end;
         i++)
        if (!chain_through(g, g->reads.idx[e[i]], w))
            return e[i] - first;
    return UINT32_MAX;
}

/* complete[v]: the node whose position ends v's use of its buffers in file
 * order (see above); COMMSCHED_NONE for an async collective no wait reads. */
static uint32_t *completions(const commsched_graph *g)
{
    uint32_t *c = cs_malloc_array(g->n_nodes, sizeof *c);
    if (!c)
        return NULL;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        c[v] = cs_is_async_collective(&g->nodes[v]) ? COMMSCHED_NONE : v;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (g->nodes[v].kind != COMMSCHED_NODE_WAIT)
            continue;
        const uint32_t *in = CS_ROW_BEGIN(g->reads, v);
        for (uint32_t k = 0; k < CS_ROW_LEN(g->reads, v); k++) {
            uint32_t p = g->buffers[in[k]].producer;
            if (p != COMMSCHED_NONE && cs_is_async_collective(&g->nodes[p]) &&
                c[p] == COMMSCHED_NONE)
                c[p] = v;
        }
    }
    return c;
}

/* Read-after-write: reader r (after writer w in file order) reads the root
 * by its own name, so it must come after w's completion. */
static commsched_status raw_edge(const commsched_graph *g, const uint32_t *c,
                                 const cs_csr *root_reads, uint32_t root,
                                 uint32_t w, uint32_t r, mut_pairs *out,
                                 commsched_error *err)
{
    uint32_t k = own_name_read(g, root_reads, r, root, w);
    if (k == UINT32_MAX)
        return COMMSCHED_OK;
    if (c[w] != COMMSCHED_NONE && c[w] < r)
        return push_pair(out, r, c[w]) == 0
                   ? COMMSCHED_OK
                   : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory");
    char path[64];
    snprintf(path, sizeof path, "nodes[%u].inputs[%u]", r, k);
    uint32_t b = CS_ROW_BEGIN(g->reads, r)[k];
    if (c[w] == COMMSCHED_NONE)
        return commsched_error_set(
            err, COMMSCHED_EGRAPH, path,
            "\"%s\" reads \"%s\" after the in-place collective \"%s\" "
            "(nodes[%u]) writes it, but \"%s\" has no wait: nothing says "
            "when the new value is there",
            g->nodes[r].name, g->buffers[b].name, g->nodes[w].name, w,
            g->nodes[w].name);
    return commsched_error_set(
        err, COMMSCHED_EGRAPH, path,
        "\"%s\" reads \"%s\" while the in-place collective \"%s\" "
        "(nodes[%u]) is writing it: move it after the wait \"%s\" "
        "(nodes[%u]) or read the wait's alias",
        g->nodes[r].name, g->buffers[b].name, g->nodes[w].name, w,
        g->nodes[c[w]].name, c[w]);
}

/* Write-after-read: reader q of the previous version must be done before
 * writer w is issued. */
static commsched_status war_edge(const commsched_graph *g, const uint32_t *c,
                                 uint32_t root, uint32_t q, uint32_t w,
                                 mut_pairs *out, commsched_error *err)
{
    if (c[q] != COMMSCHED_NONE && c[q] < w)
        return push_pair(out, w, c[q]) == 0
                   ? COMMSCHED_OK
                   : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory");
    char path[64];
    snprintf(path, sizeof path, "nodes[%u]", w);
    if (c[q] == COMMSCHED_NONE)
        return commsched_error_set(
            err, COMMSCHED_EGRAPH, path,
            "in-place collective \"%s\" writes \"%s\", which the async "
            "collective \"%s\" (nodes[%u]) reads and never waits for",
            g->nodes[w].name, g->buffers[root].name, g->nodes[q].name, q);
    return commsched_error_set(
        err, COMMSCHED_EGRAPH, path,
        "in-place collective \"%s\" writes \"%s\" while the async collective "
        "\"%s\" (nodes[%u]) still reads it: put its wait \"%s\" (nodes[%u]) "
        "before \"%s\"",
        g->nodes[w].name, g->buffers[root].name, g->nodes[q].name, q,
        g->nodes[c[q]].name, c[q], g->nodes[w].name);
}

/* Walks one root buffer's readers in file order (writers read it too: their
 * output aliases something they read). */
static commsched_status derive_root(const commsched_graph *g,
                                    const uint32_t *c, uint32_t root,
                                    const cs_csr *writers,
                                    const cs_csr *root_reads, uint32_t *stamp,
                                    uint32_t *version, mut_pairs *out,
                                    commsched_error *err)
{
    const uint32_t *rd = CS_ROW_BEGIN(g->readers, root);
    uint32_t n = CS_ROW_LEN(g->readers, root), n_version = 0;
    uint32_t writer = COMMSCHED_NONE;
    commsched_status st;
    /* the collectives that write root in place, stamped */
    for (uint32_t k = writers->off[root]; k < writers->off[root + 1]; k++)
        stamp[writers->idx[k]] = root + 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = rd[i];
        if (writer != COMMSCHED_NONE &&
            (st = raw_edge(g, c, root_reads, root, writer, r, out, err)) !=
                COMMSCHED_OK)
            return st;
        if (stamp[r] != root + 1) {
            version[n_version++] = r;
            continue;
        }
        for (uint32_t j = 0; j < n_version; j++)
            if ((st = war_edge(g, c, root, version[j], r, out, err)) !=
                COMMSCHED_OK)
                return st;
        writer = r;
        n_version = 0;
    }
    return COMMSCHED_OK;
}

/* Merges the derived pairs into deps (keeping rows distinct and ascending),
 * records those not already there in g->derived, and rebuilds users. */
static int merge(commsched_graph *g, mut_pairs *p)
{
    uint32_t n = g->n_nodes;
    cs_csr extra = {0}, deps = {0}, derived = {0};
    if (cs_csr_from_pairs(&extra, n, p->rows, p->vals, p->n) != 0)
        return -1;
    size_t cap = (size_t)g->deps.off[n] + p->n;
    deps.off = cs_calloc((size_t)n + 1, sizeof *deps.off);
    deps.idx = cs_malloc_array(cap ? cap : 1, sizeof *deps.idx);
    derived.off = cs_calloc((size_t)n + 1, sizeof *derived.off);
    derived.idx = cs_malloc_array(p->n ? p->n : 1, sizeof *derived.idx);
    int rc = -1;
    if (!deps.off || !deps.idx || !derived.off || !derived.idx)
        goto done;
    uint32_t len = 0, dlen = 0;
    for (uint32_t v = 0; v < n; v++) {
        /* Both rows are short; the extra row is unsorted with repeats. */
        for (uint32_t k = g->deps.off[v]; k < g->deps.off[v + 1]; k++)
            deps.idx[len++] = g->deps.idx[k];
        uint32_t base_end = len;
        for (uint32_t k = extra.off[v]; k < extra.off[v + 1]; k++) {
            uint32_t d = extra.idx[k], j = deps.off[v];
            while (j < len && deps.idx[j] != d)
                j++;
            if (j < len)
                continue;
            deps.idx[len++] = d;
            derived.idx[dlen++] = d;
        }
        /* Insertion sort of the appended part into the sorted prefix. */
        for (uint32_t i = base_end; i < len; i++) {
            uint32_t x = deps.idx[i], j = i;
            while (j > deps.off[v] && deps.idx[j - 1] > x) {
                deps.idx[j] = deps.idx[j - 1];
                j--;
            }
            deps.idx[j] = x;
        }
        for (uint32_t i = derived.off[v] + 1; i < dlen; i++) {
            uint32_t x = derived.idx[i], j = i;
            while (j > derived.off[v] && derived.idx[j - 1] > x) {
                derived.idx[j] = derived.idx[j - 1];
                j--;
            }
            derived.idx[j] = x;
        }
        deps.off[v + 1] = len;
        derived.off[v + 1] = dlen;
    }
    cs_csr users = {0};
    if (cs_csr_transpose(&users, &deps, n, n) != 0)
        goto done;
    cs_csr_free(&g->deps);
    cs_csr_free(&g->users);
    cs_csr_free(&g->derived);
    g->deps = deps;
    g->users = users;
    g->derived = derived;
    deps = (cs_csr){0};
    derived = (cs_csr){0};
    rc = 0;
done:
    cs_csr_free(&extra);
    cs_csr_free(&deps);
    cs_csr_free(&derived);
    return rc;
}

commsched_status cs_graph_derive_mutation_edges(commsched_graph *g,
                                                commsched_error *err)
{
    uint32_t n = g->n_nodes;
    commsched_status st = COMMSCHED_OK;
    mut_pairs pairs = {0};
    uint32_t *c = completions(g);
    uint32_t *version = cs_malloc_array(n, sizeof *version);
    uint8_t *walked = cs_calloc(g->n_buffers, sizeof *walked);
    uint32_t *stamp = cs_calloc(n ? n : 1, sizeof *stamp);
    /* Each root's in-place writers (a collective whose output aliases a
     * root it did not make), gathered once: asking each reader whether it
     * writes the root would scan its outputs for every root it reads, and
     * an in-place collective over many buffers would make that quadratic. */
    cs_csr writers = {0};
    mut_pairs wp = {0};
    for (uint32_t v = 0; v < n && c && version && walked && stamp; v++) {
        const cs_node *nd = &g->nodes[v];
        for (uint32_t k = 0; nd->kind == COMMSCHED_NODE_COLLECTIVE &&
                             k < nd->n_out;
             k++) {
            const cs_buffer *b = &g->buffers[nd->out_first + k];
            if (b->alias_of != COMMSCHED_NONE &&
                g->buffers[b->root].producer != v &&
                push_pair(&wp, b->root, v) != 0) {
                free(stamp);
                stamp = NULL;
            }
        }
    }
    /* ... and the reads of those roots (the others have no versions) */
    cs_csr root_reads = {0};
    mut_pairs rp = {0};
    int ok = c && version && walked && stamp &&
             cs_csr_from_pairs(&writers, g->n_buffers, wp.rows, wp.vals,
                               wp.n) == 0;
    for (uint32_t e = 0; ok && e < g->reads.off[n]; e++) {
        uint32_t root = g->buffers[g->reads.idx[e]].root;
        if (CS_ROW_LEN(writers, root) > 0 && push_pair(&rp, root, e) != 0)
            ok = 0;
    }
    if (!ok || cs_csr_from_pairs(&root_reads, g->n_buffers, rp.rows, rp.vals,
                                 rp.n) != 0) {
        st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
        goto done;
    }
    /* Only roots some collective writes in place have versions; each is
     * walked once. */
    for (uint32_t v = 0; v < n && st == COMMSCHED_OK; v++) {
        const cs_node *nd = &g->nodes[v];
        if (nd->kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        for (uint32_t k = 0; k < nd->n_out && st == COMMSCHED_OK; k++) {
            const cs_buffer *b = &g->buffers[nd->out_first + k];
            uint32_t root = b->root;
            if (b->alias_of == COMMSCHED_NONE ||
                g->buffers[root].producer == v || walked[root])
                continue;
            walked[root] = 1;
            st = derive_root(g, c, root, &writers, &root_reads, stamp,
                             version, &pairs, err);
        }
    }
    if (st == COMMSCHED_OK && pairs.n > 0 && merge(g, &pairs) != 0)
        st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
    if (st == COMMSCHED_OK && pairs.n == 0 && !g->derived.off) {
        g->derived.off = cs_calloc((size_t)n + 1, sizeof *g->derived.off);
        g->derived.idx = cs_malloc_array(1, sizeof *g->derived.idx);
        if (!g->derived.off || !g->derived.idx)
            st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                     "out of memory");
    }
done:
    free(c);
    free(version);
    free(walked);
    free(stamp);
    cs_csr_free(&writers);
    cs_csr_free(&root_reads);
    free(wp.rows);
    free(wp.vals);
    free(rp.rows);
    free(rp.vals);
    free(pairs.rows);
    free(pairs.vals);
    return st;
}
