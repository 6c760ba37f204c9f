/* commsched — memory estimate and its incremental tracking.
 *
 * "Tracked" buffers are the ones whose free point depends on the order: root
 * buffers that have a reader, are not kept alive by a graph output, and are
 * either node outputs or freeable inputs. Every other counted buffer is
 * freed at a fixed node (its producer, when nobody reads it) or never.
 *
 * For the moves, `cand_bufs` is the seed's candidate-buffer inverted index
 * (node -> tracked buffers it reads), so finding the buffers whose last use
 * changes costs O(buffers the candidate reads), not O(all buffers).
 * Group membership is a stamp array (mark[v] == epoch), so planning a move
 * is O(group) with no allocation once the scratch has grown.
 *
 * The two corrections to the seed (docs/FORMAT.md "Memory model (in brief)"): the freeable-input
 * baseline is `baseline`, charged to no node, and the move before a group
 * (sink) updates last_use for the buffers it hands to a group node. */
#include "commsched/memory.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "kernel.h"
#include "ordtree.h"

typedef struct moved_buf {
    uint32_t buf;
    uint32_t gidx; /* index of the group node in plan.group */
} moved_buf;

enum { PLAN_NONE, PLAN_MOVE, PLAN_RUN };

typedef struct plan {
    int valid; /* PLAN_NONE, or what the last plan was */
    commsched_move dir;
    uint32_t cand, head, tail;
    uint32_t *group;       /* group nodes in order */
    int64_t *group_post;   /* post_alloc of each group node: now (mark_group),
                              then after the move (plan_move) */
    int64_t *group_dfree;  /* change of each group node's size_free */
    size_t n_group, cap_group;
    moved_buf *moved;
    size_t n_moved, cap_moved;
    int64_t cand_post;     /* candidate's post_alloc after the move */
    int64_t cand_dfree;    /* change of the candidate's size_free */
    const uint32_t *run;   /* a run's candidates (the caller's array) */
    size_t n_run;          /* how many of them were planned */
    int64_t run_pf;        /* post_free of the tail before the run */
} plan;

struct commsched_memory {
    const commsched_graph *g;
    uint32_t n;
    int64_t baseline;
    int64_t *alloc, *free_, *post_alloc, *post_free; /* per node */
    uint32_t *last_use;  /* per buffer; NONE when untracked/never freed */
    uint8_t *tracked;    /* per buffer */
    cs_csr cand_bufs;    /* node -> tracked buffers it reads */
    uint32_t *mark, *gpos, epoch;
    uint32_t *pos;       /* scratch for recompute: schedule positions */
    plan p;
    /* commsched_memory_use_tree: the levels live in the order tree and
     * post_alloc / post_free are not kept (NULL otherwise) */
    cs_ordtree *tree;
};

/* The live bytes before node v runs, after its allocations, and after its
 * frees: from the arrays, or from the order tree (O(log n)). */
static int64_t pre_level(const commsched_memory *m, uint32_t v)
{
    if (m->tree)
        return m->baseline + cs_ordtree_before(m->tree, v);
    return m->post_alloc[v] - m->alloc[v];
}

static int64_t post_alloc_of(const commsched_memory *m, uint32_t v)
{
    return m->tree ? pre_level(m, v) + m->alloc[v] : m->post_alloc[v];
}

static int64_t post_free_of(const commsched_memory *m, uint32_t v)
{
    return m->tree ? post_alloc_of(m, v) - m->free_[v] : m->post_free[v];
}

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

static int is_tracked(const commsched_graph *g, uint32_t b)
{
    const cs_buffer *x = &g->buffers[b];
    if (x->alias_of != COMMSCHED_NONE || x->keep || CS_ROW_LEN(g->readers, b) == 0)
        return 0;
    return !x->is_input || x->freeable;
}

/* Node -> tracked buffers it reads: a filtered transpose of readers. */
static int build_cand_bufs(commsched_memory *m)
{
    const commsched_graph *g = m->g;
    size_t pairs = 0;
    for (uint32_t b = 0; b < g->n_buffers; b++)
        if (m->tracked[b])
            pairs += CS_ROW_LEN(g->readers, b);
    uint32_t *rows = cs_malloc_array(pairs, sizeof *rows);
    uint32_t *vals = cs_malloc_array(pairs, sizeof *vals);
    int rc = -1;
    if (rows && vals) {
        size_t k = 0;
        for (uint32_t b = 0; b < g->n_buffers; b++)
            if (m->tracked[b])
                for (uint32_t r = g->readers.off[b]; r < g->readers.off[b + 1];
                     r++) {
                    rows[k] = g->readers.idx[r];
                    vals[k++] = b;
                }
        rc = cs_csr_from_pairs(&m->cand_bufs, g->n_nodes, rows, vals, pairs);
    }
    free(rows);
    free(vals);
    return rc;
}

/* The full estimate into the given arrays (used by create, recompute and
 * verify, so the three can never disagree). pos is scratch of n entries. */
static int compute(const commsched_graph *g, const commsched_schedule *s,
                   uint32_t *pos, int64_t *baseline, int64_t *alloc,
                   int64_t *fr, int64_t *post_alloc, int64_t *post_free,
                   uint32_t *last_use)
{
    uint32_t n = g->n_nodes, k = 0;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v))
        pos[v] = k++;
    if (k != n)
        return -1;
    memset(alloc, 0, (size_t)n * sizeof *alloc);
    memset(fr, 0, (size_t)n * sizeof *fr);
    int64_t base = 0;
    int overflow = 0;
    for (uint32_t b = 0; b < g->n_buffers; b++) {
        const cs_buffer *x = &g->buffers[b];
        last_use[b] = COMMSCHED_NONE;
        if (x->alias_of != COMMSCHED_NONE)
            continue;
        uint32_t nr = CS_ROW_LEN(g->readers, b);
        if (x->is_input) {
            if (!x->freeable || nr == 0)
                continue; /* not counted at all */
            overflow |= cs_add_i64(&base, x->size);
        } else {
            overflow |= cs_add_i64(&alloc[x->producer], x->size);
        }
        if (x->keep)
            continue; /* never freed */
        uint32_t last = x->producer; /* unread node output: its producer */
        if (nr > 0) {
            const uint32_t *r = CS_ROW_BEGIN(g->readers, b);
            last = r[0];
            for (uint32_t i = 1; i < nr; i++)
                if (pos[r[i]] > pos[last])
                    last = r[i];
        }
        overflow |= cs_add_i64(&fr[last], x->size);
        last_use[b] = last;
    }
    if (overflow)
        return -2;
    int64_t cur = base;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v)) {
        post_alloc[v] = cs_mem_step(&cur, alloc[v], fr[v], &overflow);
        post_free[v] = cur;
    }
    if (overflow)
        return -2;
    *baseline = base;
    return 0;
}

static commsched_status compute_failed(int rc, commsched_error *err)
{
    if (rc == -2)
        return commsched_error_set(err, COMMSCHED_EGRAPH, NULL,
                                   "buffer sizes add up beyond 2^63 bytes");
    return commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                               "the schedule does not hold every node");
}

void commsched_memory_destroy(commsched_memory *m)
{
    if (!m)
        return;
    free(m->alloc);
    free(m->free_);
    free(m->post_alloc);
    free(m->post_free);
    free(m->last_use);
    free(m->tracked);
    cs_csr_free(&m->cand_bufs);
    if (m->tree)
        cs_ordtree_free(m->tree);
    free(m->tree);
    free(m->mark);
    free(m->gpos);
    free(m->pos);
    free(m->p.group);
    free(m->p.group_post);
    free(m->p.group_dfree);
    free(m->p.moved);
    free(m);
}

commsched_status commsched_memory_create(const commsched_schedule *s,
                                         commsched_memory **out,
                                         commsched_error *err)
{
    const commsched_graph *g = commsched_schedule_graph(s);
    *out = NULL;
    commsched_memory *m = cs_calloc(1, sizeof *m);
    if (!m)
        return oom(err);
    m->g = g;
    m->n = g->n_nodes;
    m->alloc = cs_malloc_array(m->n, sizeof *m->alloc);
    m->free_ = cs_malloc_array(m->n, sizeof *m->free_);
    m->post_alloc = cs_malloc_array(m->n, sizeof *m->post_alloc);
    m->post_free = cs_malloc_array(m->n, sizeof *m->post_free);
    m->last_use = cs_malloc_array(g->n_buffers, sizeof *m->last_use);
    m->tracked = cs_calloc(g->n_buffers, sizeof *m->tracked);
    m->mark = cs_calloc(m->n, sizeof *m->mark);
    m->gpos = cs_malloc_array(m->n, sizeof *m->gpos);
    m->pos = cs_malloc_array(m->n, sizeof *m->pos);
    if (!m->alloc || !m->free_ || !m->post_alloc || !m->post_free ||
        !m->last_use || !m->tracked || !m->mark || !m->gpos || !m->pos) {
        commsched_memory_destroy(m);
        return oom(err);
    }
    for (uint32_t b = 0; b < g->n_buffers; b++)
        m->tracked[b] = (uint8_t)is_tracked(g, b);
    if (build_cand_bufs(m) != 0) {
        commsched_memory_destroy(m);
        return oom(err);
    }
    commsched_status st = commsched_memory_recompute(m, s, err);
    if (st != COMMSCHED_OK) {
        commsched_memory_destroy(m);
        return st;
    }
    *out = m;
    return COMMSCHED_OK;
}

commsched_status commsched_memory_recompute(commsched_memory *m,
                                            const commsched_schedule *s,
                                            commsched_error *err)
{
    m->p.valid = PLAN_NONE;
    int rc = compute(m->g, s, m->pos, &m->baseline, m->alloc, m->free_,
                     m->post_alloc, m->post_free, m->last_use);
    if (rc != 0)
        return compute_failed(rc, err);
    if (!m->tree)
        return COMMSCHED_OK;
    /* the arrays are exact again: without a new tree they serve; the
     * new one gets the old one's times */
    double *times = m->tree->x;
    m->tree->x = NULL;
    cs_ordtree_free(m->tree);
    free(m->tree);
    m->tree = NULL;
    commsched_status st = commsched_memory_use_tree(m, s, err);
    if (st == COMMSCHED_OK && times)
        st = commsched_memory_use_times(m, times, err);
    free(times);
    return st;
}

commsched_status commsched_memory_use_tree(commsched_memory *m,
                                           const commsched_schedule *s,
                                           commsched_error *err)
{
    if (m->tree)
        return COMMSCHED_OK;
    m->p.valid = PLAN_NONE;
    cs_ordtree *t = cs_malloc_array(1, sizeof *t);
    uint32_t *order = cs_malloc_array(m->n, sizeof *order);
    int64_t *net = cs_malloc_array(m->n, sizeof *net);
    uint8_t *coll = cs_malloc_array(m->n, sizeof *coll);
    uint8_t *sync = cs_malloc_array(m->n, sizeof *sync);
    int rc = -1;
    if (t && order && net && coll && sync) {
        uint32_t k = 0;
        for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
             v = commsched_schedule_next(s, v)) {
            order[k++] = v;
            net[v] = m->alloc[v] - m->free_[v];
            coll[v] = m->g->nodes[v].kind == COMMSCHED_NODE_COLLECTIVE;
            sync[v] = coll[v] && m->g->nodes[v].is_sync;
        }
        assert(k == m->n);
        rc = cs_ordtree_init(t, m->n, order, net, m->alloc, coll, sync);
    }
    free(order);
    free(net);
    free(coll);
    free(sync);
    if (rc != 0) {
        free(t);
        return oom(err);
    }
    m->tree = t;
    return COMMSCHED_OK;
}

int64_t commsched_memory_baseline(const commsched_memory *m)
{
    return m->baseline;
}

int64_t commsched_memory_peak(const commsched_memory *m,
                              const commsched_schedule *s, uint32_t *at_node)
{
    int64_t peak = m->baseline;
    uint32_t at = COMMSCHED_NONE;
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v)) {
        int64_t pa = post_alloc_of(m, v);
        if (pa > peak || (at == COMMSCHED_NONE && pa >= peak)) {
            peak = pa;
            at = v;
        }
    }
    if (at_node)
        *at_node = at;
    return peak;
}

commsched_node_memory commsched_memory_node(const commsched_memory *m,
                                            uint32_t node)
{
    commsched_node_memory r = {m->alloc[node], m->free_[node],
                               post_alloc_of(m, node), post_free_of(m, node)};
    return r;
}

uint32_t commsched_memory_last_use(const commsched_memory *m, uint32_t buffer)
{
    return m->last_use[buffer];
}

/* ---- moves ---------------------------------------------------------------- */

static int plan_reserve(plan *p, size_t need)
{
    if (need <= p->cap_group)
        return 0;
    size_t cap = p->cap_group ? p->cap_group : 16;
    while (cap < need)
        cap *= 2;
    uint32_t *gr = cs_realloc_array(p->group, cap, sizeof *gr);
    if (!gr)
        return -1;
    p->group = gr;
    int64_t *post = cs_realloc_array(p->group_post, cap, sizeof *post);
    if (!post)
        return -1;
    p->group_post = post;
    int64_t *dfree = cs_realloc_array(p->group_dfree, cap, sizeof *dfree);
    if (!dfree)
        return -1;
    p->group_dfree = dfree;
    p->cap_group = cap;
    return 0;
}

#ifndef NDEBUG
/* 1 when node a has a non-fake dependency on node b. */
static int depends_on(const commsched_graph *g, uint32_t a, uint32_t b)
{
    for (uint32_t k = g->deps.off[a]; k < g->deps.off[a + 1]; k++)
        if (g->deps.idx[k] == b)
            return 1;
    return 0;
}
#endif

/* Collects head..tail into p->group and stamps membership; with the tree
 * and `levels`, each node's post_alloc now goes to p->group_post (read it
 * through group_level), from the head's level: O(group + log n), not a
 * tree read a node. */
static int mark_group(commsched_memory *m, const commsched_schedule *s,
                      uint32_t head, uint32_t tail, int levels)
{
    plan *p = &m->p;
    p->n_group = 0;
    if (++m->epoch == 0) { /* wrapped: clear stale stamps */
        memset(m->mark, 0, (size_t)m->n * sizeof *m->mark);
        m->epoch = 1;
    }
    for (uint32_t v = head;; v = commsched_schedule_next(s, v)) {
        assert(v != COMMSCHED_NONE);
        if (plan_reserve(p, p->n_group + 1) != 0)
            return -1;
        m->mark[v] = m->epoch;
        m->gpos[v] = (uint32_t)p->n_group;
        p->group[p->n_group] = v;
        p->group_dfree[p->n_group] = 0;
        p->n_group++;
        if (v == tail)
            break;
    }
    if (m->tree && levels) {
        int64_t cur = pre_level(m, head);
        for (size_t k = 0; k < p->n_group; k++) {
            uint32_t v = p->group[k];
            p->group_post[k] = cur + m->alloc[v];
            cur += m->alloc[v] - m->free_[v];
        }
    }
    return 0;
}

uint32_t commsched_memory_position(const commsched_memory *m, uint32_t node)
{
    return m->tree ? cs_ordtree_rank(m->tree, node) : COMMSCHED_NONE;
}

uint32_t commsched_memory_collectives(const commsched_memory *m, uint32_t lo,
                                      uint32_t hi)
{
    assert(m->tree);
    return cs_ordtree_tags(m->tree, lo, hi);
}

uint32_t commsched_memory_next_not_async(const commsched_memory *m,
                                         uint32_t p)
{
    assert(m->tree);
    uint32_t a = cs_ordtree_next(m->tree, p, 0), b = cs_ordtree_next(m->tree, p, 1);
    return a < b ? a : b;
}

uint32_t commsched_memory_node_at(const commsched_memory *m, uint32_t p)
{
    assert(m->tree && p < m->n);
    return cs_ordtree_at(m->tree, p);
}

uint32_t commsched_memory_next_sync(const commsched_memory *m, uint32_t p)
{
    assert(m->tree);
    return cs_ordtree_next(m->tree, p, 1);
}

commsched_status commsched_memory_use_times(commsched_memory *m,
                                            const double *time,
                                            commsched_error *err)
{
    assert(m->tree);
    if (cs_ordtree_time_on(m->tree, time) != 0)
        return oom(err);
    return COMMSCHED_OK;
}

double commsched_memory_time_sum(const commsched_memory *m, uint32_t lo,
                                 uint32_t hi, double sum)
{
    assert(m->tree && m->tree->x && lo <= hi);
    return cs_ordtree_fsum(m->tree, lo, hi, sum);
}

/* Tree mode: v now frees f bytes. */
static void set_free(commsched_memory *m, uint32_t v, int64_t f)
{
    m->free_[v] = f;
    cs_ordtree_set(m->tree, v, m->alloc[v] - f, m->alloc[v]);
}

/* The k-th group node's post_alloc before the move (after mark_group). */
static int64_t group_level(const commsched_memory *m, size_t k)
{
    return m->tree ? m->p.group_post[k] : m->post_alloc[m->p.group[k]];
}

static int add_moved(plan *p, uint32_t buf, uint32_t gidx)
{
    if (cs_grow((void **)&p->moved, &p->cap_moved, p->n_moved + 1,
                sizeof *p->moved) != 0)
        return -1;
    p->moved[p->n_moved].buf = buf;
    p->moved[p->n_moved].gidx = gidx;
    p->n_moved++;
    return 0;
}

commsched_status commsched_memory_plan_move(commsched_memory *m,
                                            const commsched_schedule *s,
                                            commsched_move dir, uint32_t cand,
                                            uint32_t head, uint32_t tail,
                                            int64_t *potential_peak,
                                            commsched_error *err)
{
    const commsched_graph *g = m->g;
    plan *p = &m->p;
    p->dir = dir;
    p->cand = cand;
    p->head = head;
    p->tail = tail;
    p->n_moved = 0;
    p->valid = PLAN_NONE;
    if (mark_group(m, s, head, tail, 1) != 0)
        return oom(err);
    int64_t cand_delta = m->alloc[cand] - m->free_[cand];
    const uint32_t *cb = CS_ROW_BEGIN(m->cand_bufs, cand);
    uint32_t n_cb = CS_ROW_LEN(m->cand_bufs, cand);
    int64_t peak;

    if (dir == COMMSCHED_MOVE_AFTER_GROUP) {
        assert(commsched_schedule_next(s, cand) == head);
#ifndef NDEBUG
        for (size_t k = 0; k < p->n_group; k++)
            assert(!depends_on(g, p->group[k], cand));
#endif
        /* Buffers last used in the group become last used by the
         * candidate, which now runs after the whole group. */
        for (uint32_t k = 0; k < n_cb; k++) {
            uint32_t lu = m->last_use[cb[k]];
            if (lu != COMMSCHED_NONE && m->mark[lu] == m->epoch) {
                if (add_moved(p, cb[k], m->gpos[lu]) != 0)
                    return oom(err);
                p->group_dfree[m->gpos[lu]] -= g->buffers[cb[k]].size;
            }
        }
        int64_t delta = -cand_delta, moved_total = 0;
        int64_t pf_tail = group_level(m, p->n_group - 1) - m->free_[tail];
        peak = 0;
        for (size_t k = 0; k < p->n_group; k++) {
            int64_t pa = group_level(m, k) + delta;
            p->group_post[k] = pa;
            if (pa > peak)
                peak = pa;
            delta -= p->group_dfree[k]; /* frees that moved to cand */
            moved_total -= p->group_dfree[k];
        }
        p->cand_post = pf_tail + delta + m->alloc[cand];
        p->cand_dfree = moved_total;
        if (p->cand_post > peak)
            peak = p->cand_post;
    } else {
        assert(commsched_schedule_next(s, tail) == cand);
#ifndef NDEBUG
        for (size_t k = 0; k < p->n_group; k++)
            assert(!depends_on(g, cand, p->group[k]));
#endif
        int64_t pre = group_level(m, 0) - m->alloc[head];
        /* Buffers whose last use is the candidate pass to the latest group
         * node that reads them. */
        int64_t moved_total = 0;
        for (uint32_t k = 0; k < n_cb; k++) {
            uint32_t b = cb[k];
            if (m->last_use[b] != cand)
                continue;
            uint32_t best = COMMSCHED_NONE;
            for (uint32_t r = g->readers.off[b]; r < g->readers.off[b + 1];
                 r++) {
                uint32_t v = g->readers.idx[r];
                if (m->mark[v] == m->epoch &&
                    (best == COMMSCHED_NONE || m->gpos[v] > best))
                    best = m->gpos[v];
            }
            if (best == COMMSCHED_NONE)
                continue;
            if (add_moved(p, b, best) != 0)
                return oom(err);
            p->group_dfree[best] += g->buffers[b].size;
            moved_total += g->buffers[b].size;
        }
        p->cand_post = pre + m->alloc[cand];
        p->cand_dfree = -moved_total;
        peak = p->cand_post;
        int64_t delta = cand_delta + moved_total;
        for (size_t k = 0; k < p->n_group; k++) {
            int64_t pa = group_level(m, k) + delta;
            p->group_post[k] = pa;
            if (pa > peak)
                peak = pa;
            delta -= p->group_dfree[k];
        }
    }
    p->valid = PLAN_MOVE;
    *potential_peak = peak;
    return COMMSCHED_OK;
}

commsched_status commsched_memory_plan_run(commsched_memory *m,
                                           const commsched_schedule *s,
                                           uint32_t head, uint32_t tail,
                                           const uint32_t *candidates,
                                           size_t n, int64_t *potential_peaks,
                                           size_t *n_planned,
                                           commsched_error *err)
{
    plan *p = &m->p;
    p->valid = PLAN_NONE;
    *n_planned = 0;
    if (mark_group(m, s, head, tail, 1) != 0)
        return oom(err);
    /* No move of the run changes a free or a last use (the run ends before
     * a candidate that would take one from the group), so each one lowers
     * every group level by the candidate's net allocation and leaves the
     * nodes after the group as they were: the i-th move's potential is
     * max(0, group max - shift - net_i, tail's post_free - shift + free_i)
     * with shift the net allocations of the moves before it, which is
     * what commsched_memory_plan_move computes one move at a time. */
    int64_t gmax = group_level(m, 0);
    for (size_t k = 1; k < p->n_group; k++)
        if (group_level(m, k) > gmax)
            gmax = group_level(m, k);
    int64_t pf_tail = group_level(m, p->n_group - 1) - m->free_[tail];
    int64_t shift = 0;
    size_t i = 0;
    for (; i < n; i++) {
        uint32_t c = candidates[i];
        assert(commsched_schedule_next(s, c) ==
               (i == 0 ? head : candidates[i - 1]));
#ifndef NDEBUG
        for (size_t k = 0; k < p->n_group; k++)
            assert(!depends_on(m->g, p->group[k], c));
#endif
        const uint32_t *cb = CS_ROW_BEGIN(m->cand_bufs, c);
        uint32_t n_cb = CS_ROW_LEN(m->cand_bufs, c), k = 0;
        while (k < n_cb && (m->last_use[cb[k]] == COMMSCHED_NONE ||
                            m->mark[m->last_use[cb[k]]] != m->epoch))
            k++;
        if (k < n_cb)
            break; /* it would take a group node's free */
        int64_t net = m->alloc[c] - m->free_[c];
        int64_t peak = 0, gp = gmax - shift - net,
                cp = pf_tail - shift + m->free_[c];
        if (gp > peak)
            peak = gp;
        if (cp > peak)
            peak = cp;
        potential_peaks[i] = peak;
        shift += net;
    }
    p->head = head;
    p->tail = tail;
    p->run = candidates;
    p->n_run = i;
    p->run_pf = pf_tail;
    p->valid = PLAN_RUN;
    *n_planned = i;
    return COMMSCHED_OK;
}

void commsched_memory_commit_run(commsched_memory *m, commsched_schedule *s,
                                 size_t k)
{
    plan *p = &m->p;
    assert(p->valid == PLAN_RUN && k <= p->n_run);
    p->valid = PLAN_NONE;
    if (k == 0)
        return;
    commsched_schedule_move_run_after(s, p->run[k - 1], p->run[0], p->tail);
    if (m->tree) { /* the levels follow the order */
        cs_ordtree_move_after(m->tree, p->run[k - 1], p->run[0], p->tail);
        return;
    }
    int64_t shift = 0;
    for (size_t i = 0; i < k; i++) {
        uint32_t c = p->run[i];
        m->post_free[c] = p->run_pf - shift;
        m->post_alloc[c] = m->post_free[c] + m->free_[c];
        shift += m->alloc[c] - m->free_[c];
    }
    for (size_t i = 0; i < p->n_group; i++) {
        uint32_t v = p->group[i];
        m->post_alloc[v] -= shift;
        m->post_free[v] -= shift;
    }
}

/* a - b, or the int64_t bound it passes */
static int64_t sub_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b > 0 ? INT64_MIN : INT64_MAX;
    return r;
}

commsched_status commsched_memory_far_run(commsched_memory *m,
                                          commsched_schedule *s, uint32_t head,
                                          uint32_t tail, uint32_t stop,
                                          int64_t limit, commsched_far_run *out,
                                          commsched_error *err)
{
    const commsched_graph *g = m->g;
    cs_ordtree *t = m->tree;
    plan *p = &m->p;
    assert(t);
    p->valid = PLAN_NONE;
    out->moved = 0;
    out->next = commsched_schedule_prev(s, head);
    out->over = 0;
    out->potential = 0;
    if (mark_group(m, s, head, tail, 0) != 0) /* the range query below */
        return oom(err);
    uint32_t rh = cs_ordtree_rank(t, head);
    /* The run starts after `stop` and after the last node ahead of the
     * group that reads a buffer last used in the group (moving it takes
     * that free: plan_run stops before it too). Those readers are all
     * ahead of the group: the last reader is in it, and it is contiguous. */
    uint32_t end = stop, lo = stop == COMMSCHED_NONE ? 0
                                                     : cs_ordtree_rank(t, stop) + 1;
    for (size_t k = 0; k < p->n_group; k++) {
        uint32_t u = p->group[k];
        const uint32_t *cb = CS_ROW_BEGIN(m->cand_bufs, u);
        for (uint32_t i = 0; i < CS_ROW_LEN(m->cand_bufs, u); i++) {
            uint32_t b = cb[i];
            if (m->last_use[b] != u)
                continue;
            for (uint32_t q = g->readers.off[b]; q < g->readers.off[b + 1];
                 q++) {
                uint32_t v = g->readers.idx[q];
                if (m->mark[v] == m->epoch)
                    continue;
                uint32_t rv = cs_ordtree_rank(t, v);
                assert(rv < rh);
                if (rv + 1 > lo) {
                    lo = rv + 1;
                    end = v;
                }
            }
        }
    }
    if (lo >= rh)
        return COMMSCHED_OK;
    /* The i-th move's potential (plan_run's closed form, with the levels
     * before the run): max(0, A + level before c_i, G + level after c_i's
     * allocations), A the group's highest level over the level before
     * it, G the group's net allocation. The first candidate, from head
     * back, that passes the limit stops the run. */
    int64_t a;
    int64_t gnet = cs_ordtree_range(t, head, tail, &a);
    uint32_t over = COMMSCHED_NONE;
    if (limit < 0) {
        over = commsched_schedule_prev(s, head); /* every potential is >= 0 */
    } else if (limit < INT64_MAX) {
        int64_t room = sub_sat(limit, m->baseline);
        over = cs_ordtree_last_over(t, lo, rh, sub_sat(room, a),
                                    sub_sat(room, gnet));
    }
    uint32_t last = commsched_schedule_prev(s, head);
    if (over != COMMSCHED_NONE) {
        int64_t pre = pre_level(m, over), gp = a + pre,
                cp = gnet + pre + m->alloc[over];
        out->over = 1;
        out->potential = gp > cp ? gp : cp;
        if (out->potential < 0)
            out->potential = 0;
        end = over;
        lo = cs_ordtree_rank(t, over) + 1;
    }
    out->next = end;
    if (lo >= rh)
        return COMMSCHED_OK;
    uint32_t first = end == COMMSCHED_NONE ? commsched_schedule_first(s)
                                           : commsched_schedule_next(s, end);
    commsched_schedule_move_run_after(s, first, last, tail);
    cs_ordtree_move_after(t, first, last, tail);
    out->moved = rh - lo;
    return COMMSCHED_OK;
}

void commsched_memory_commit_move(commsched_memory *m, commsched_schedule *s)
{
    plan *p = &m->p;
    assert(p->valid == PLAN_MOVE);
    if (p->dir == COMMSCHED_MOVE_AFTER_GROUP) {
        assert(commsched_schedule_next(s, p->cand) == p->head);
        commsched_schedule_unlink(s, p->cand);
        commsched_schedule_insert_after(s, p->cand, p->tail);
        for (size_t k = 0; k < p->n_moved; k++)
            m->last_use[p->moved[k].buf] = p->cand;
    } else {
        assert(commsched_schedule_next(s, p->tail) == p->cand);
        commsched_schedule_unlink(s, p->cand);
        commsched_schedule_insert_before(s, p->cand, p->head);
        for (size_t k = 0; k < p->n_moved; k++)
            m->last_use[p->moved[k].buf] = p->group[p->moved[k].gidx];
    }
    p->valid = PLAN_NONE;
    if (m->tree) {
        /* the levels follow the order and the frees that moved */
        if (p->dir == COMMSCHED_MOVE_AFTER_GROUP)
            cs_ordtree_move_after(m->tree, p->cand, p->cand, p->tail);
        else
            cs_ordtree_move_after(m->tree, p->cand, p->cand,
                                  commsched_schedule_prev(s, p->cand));
        for (size_t k = 0; k < p->n_group; k++)
            if (p->group_dfree[k] != 0)
                set_free(m, p->group[k], m->free_[p->group[k]] +
                                             p->group_dfree[k]);
        if (p->cand_dfree != 0)
            set_free(m, p->cand, m->free_[p->cand] + p->cand_dfree);
        return;
    }
    for (size_t k = 0; k < p->n_group; k++) {
        uint32_t v = p->group[k];
        m->free_[v] += p->group_dfree[k];
        m->post_alloc[v] = p->group_post[k];
        m->post_free[v] = p->group_post[k] - m->free_[v];
    }
    m->free_[p->cand] += p->cand_dfree;
    m->post_alloc[p->cand] = p->cand_post;
    m->post_free[p->cand] = p->cand_post - m->free_[p->cand];
}

commsched_status commsched_memory_verify(const commsched_memory *m,
                                         const commsched_schedule *s,
                                         commsched_error *err)
{
    const commsched_graph *g = m->g;
    uint32_t n = m->n;
    int64_t base = 0;
    int64_t *a = cs_malloc_array(n, sizeof *a);
    int64_t *f = cs_malloc_array(n, sizeof *f);
    int64_t *pa = cs_malloc_array(n, sizeof *pa);
    int64_t *pf = cs_malloc_array(n, sizeof *pf);
    uint32_t *lu = cs_malloc_array(g->n_buffers, sizeof *lu);
    uint32_t *pos = cs_malloc_array(n, sizeof *pos);
    commsched_status st = COMMSCHED_OK;
    if (!a || !f || !pa || !pf || !lu || !pos) {
        st = oom(err);
        goto cleanup;
    }
    int rc = compute(g, s, pos, &base, a, f, pa, pf, lu);
    if (rc != 0) {
        st = compute_failed(rc, err);
        goto cleanup;
    }
    if (base != m->baseline) {
        st = commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                 "memory baseline %" PRId64
                                 " differs from recompute %" PRId64,
                                 m->baseline, base);
        goto cleanup;
    }
    for (uint32_t v = commsched_schedule_first(s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(s, v)) {
        const struct {
            const char *what;
            int64_t tracked, truth;
        } f4[] = {{"size_alloc", m->alloc[v], a[v]},
                  {"size_free", m->free_[v], f[v]},
                  {"post_alloc", post_alloc_of(m, v), pa[v]},
                  {"post_free", post_free_of(m, v), pf[v]}};
        for (int k = 0; k < 4; k++)
            if (f4[k].tracked != f4[k].truth) {
                st = commsched_error_set(
                    err, COMMSCHED_EINTERNAL, NULL,
                    "memory tracking differs from a full recompute at node "
                    "\"%s\" (position %u): %s %" PRId64 ", recompute %" PRId64,
                    g->nodes[v].name, pos[v], f4[k].what, f4[k].tracked,
                    f4[k].truth);
                goto cleanup;
            }
    }
    for (uint32_t b = 0; b < g->n_buffers; b++)
        if (m->last_use[b] != lu[b]) {
            st = commsched_error_set(
                err, COMMSCHED_EINTERNAL, NULL,
                "memory tracking differs from a full recompute: buffer \"%s\" "
                "last used by \"%s\", recompute says \"%s\"",
                g->buffers[b].name,
                m->last_use[b] == COMMSCHED_NONE ? "(none)"
                                                 : g->nodes[m->last_use[b]].name,
                lu[b] == COMMSCHED_NONE ? "(none)" : g->nodes[lu[b]].name);
            goto cleanup;
        }
cleanup:
    free(a);
    free(f);
    free(pa);
    free(pf);
    free(lu);
    free(pos);
    return st;
}
