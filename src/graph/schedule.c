/* commsched — the schedule list. Index n is the sentinel: next[n] is the
 * first node and prev[n] the last, so no operation has a NULL case. An
 * unlinked node has prev = next = COMMSCHED_NONE. */
#include "commsched/schedule.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

struct commsched_schedule {
    const commsched_graph *g;
    uint32_t n;
    uint32_t *prev; /* n + 1 entries */
    uint32_t *next;
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

static commsched_schedule *alloc_schedule(const commsched_graph *g)
{
    commsched_schedule *s = cs_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->g = g;
    s->n = g->n_nodes;
    s->prev = cs_malloc_array((size_t)s->n + 1, sizeof *s->prev);
    s->next = cs_malloc_array((size_t)s->n + 1, sizeof *s->next);
    if (!s->prev || !s->next) {
        commsched_schedule_destroy(s);
        return NULL;
    }
    return s;
}

commsched_status commsched_schedule_create(const commsched_graph *g,
                                           const uint32_t *order,
                                           commsched_schedule **out,
                                           commsched_error *err)
{
    *out = NULL;
    commsched_schedule *s = alloc_schedule(g);
    if (!s)
        return oom(err);
    uint32_t n = s->n;
    if (order) {
        /* Validate the permutation with next[] as a seen-marker. */
        for (uint32_t i = 0; i <= n; i++)
            s->next[i] = COMMSCHED_NONE;
        for (uint32_t k = 0; k < n; k++) {
            if (order[k] >= n || s->next[order[k]] != COMMSCHED_NONE) {
                commsched_schedule_destroy(s);
                return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                           "order[%u] = %u: not a permutation "
                                           "of the %u nodes",
                                           k, order[k], n);
            }
            s->next[order[k]] = 0;
        }
    }
    uint32_t p = n;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order ? order[k] : k;
        s->next[p] = v;
        s->prev[v] = p;
        p = v;
    }
    s->next[p] = n;
    s->prev[n] = p;
    *out = s;
    return COMMSCHED_OK;
}

commsched_status commsched_schedule_clone(const commsched_schedule *s,
                                          commsched_schedule **out,
                                          commsched_error *err)
{
    commsched_schedule *c = alloc_schedule(s->g);
    *out = NULL;
    if (!c)
        return oom(err);
    memcpy(c->prev, s->prev, ((size_t)s->n + 1) * sizeof *c->prev);
    memcpy(c->next, s->next, ((size_t)s->n + 1) * sizeof *c->next);
    *out = c;
    return COMMSCHED_OK;
}

void commsched_schedule_destroy(commsched_schedule *s)
{
    if (!s)
        return;
    free(s->prev);
    free(s->next);
    free(s);
}

const commsched_graph *commsched_schedule_graph(const commsched_schedule *s)
{
    return s->g;
}

static uint32_t ext(const commsched_schedule *s, uint32_t v)
{
    return v == s->n ? COMMSCHED_NONE : v;
}

uint32_t commsched_schedule_first(const commsched_schedule *s)
{
    return ext(s, s->next[s->n]);
}
uint32_t commsched_schedule_last(const commsched_schedule *s)
{
    return ext(s, s->prev[s->n]);
}
uint32_t commsched_schedule_next(const commsched_schedule *s, uint32_t node)
{
    assert(node < s->n && s->next[node] != COMMSCHED_NONE);
    return ext(s, s->next[node]);
}
uint32_t commsched_schedule_prev(const commsched_schedule *s, uint32_t node)
{
    assert(node < s->n && s->prev[node] != COMMSCHED_NONE);
    return ext(s, s->prev[node]);
}
cs_links cs_schedule_links(const commsched_schedule *s)
{
    cs_links l = {s->prev, s->next, s->n};
    return l;
}

int commsched_schedule_contains(const commsched_schedule *s, uint32_t node)
{
    return node < s->n && s->next[node] != COMMSCHED_NONE;
}

void commsched_schedule_unlink(commsched_schedule *s, uint32_t node)
{
    assert(commsched_schedule_contains(s, node));
    uint32_t p = s->prev[node], q = s->next[node];
    s->next[p] = q;
    s->prev[q] = p;
    s->prev[node] = s->next[node] = COMMSCHED_NONE;
}

/* Links the run first..last (already internally linked) between p and q. */
static void link_run(commsched_schedule *s, uint32_t first, uint32_t last,
                     uint32_t p, uint32_t q)
{
    s->next[p] = first;
    s->prev[first] = p;
    s->next[last] = q;
    s->prev[q] = last;
}

void commsched_schedule_insert_before(commsched_schedule *s, uint32_t node,
                                      uint32_t pos)
{
    assert(node < s->n && !commsched_schedule_contains(s, node));
    uint32_t q = pos == COMMSCHED_NONE ? s->n : pos;
    link_run(s, node, node, s->prev[q], q);
}

void commsched_schedule_insert_after(commsched_schedule *s, uint32_t node,
                                     uint32_t pos)
{
    assert(node < s->n && !commsched_schedule_contains(s, node));
    uint32_t p = pos == COMMSCHED_NONE ? s->n : pos;
    link_run(s, node, node, p, s->next[p]);
}

static void detach_run(commsched_schedule *s, uint32_t first, uint32_t last)
{
    uint32_t p = s->prev[first], q = s->next[last];
    s->next[p] = q;
    s->prev[q] = p;
}

void commsched_schedule_move_run_after(commsched_schedule *s, uint32_t first,
                                       uint32_t last, uint32_t pos)
{
    assert(commsched_schedule_contains(s, first) &&
           commsched_schedule_contains(s, last));
    detach_run(s, first, last);
    uint32_t p = pos == COMMSCHED_NONE ? s->n : pos;
    link_run(s, first, last, p, s->next[p]);
}

void commsched_schedule_move_run_before(commsched_schedule *s, uint32_t first,
                                        uint32_t last, uint32_t pos)
{
    assert(commsched_schedule_contains(s, first) &&
           commsched_schedule_contains(s, last));
    detach_run(s, first, last);
    uint32_t q = pos == COMMSCHED_NONE ? s->n : pos;
    link_run(s, first, last, s->prev[q], q);
}

commsched_status commsched_schedule_to_array(const commsched_schedule *s,
                                             uint32_t *order,
                                             commsched_error *err)
{
    uint32_t k = 0;
    for (uint32_t v = s->next[s->n]; v != s->n; v = s->next[v]) {
        if (k >= s->n || v >= s->n)
            return commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                       "the list is longer than the graph");
        order[k++] = v;
    }
    if (k != s->n)
        return commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                   "the list holds %u of %u nodes", k, s->n);
    return COMMSCHED_OK;
}

commsched_status commsched_schedule_check(const commsched_schedule *s,
                                          int with_fake, commsched_error *err)
{
    const commsched_graph *g = s->g;
    uint32_t *pos = cs_malloc_array(s->n, sizeof *pos);
    commsched_status st = COMMSCHED_OK;
    if (!pos)
        return oom(err);
    for (uint32_t i = 0; i < s->n; i++)
        pos[i] = COMMSCHED_NONE;
    uint32_t k = 0;
    for (uint32_t v = s->next[s->n]; v != s->n; v = s->next[v]) {
        if (v >= s->n || k >= s->n || pos[v] != COMMSCHED_NONE ||
            s->prev[s->next[v]] != v) {
            st = commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                     "the list is broken at position %u", k);
            goto cleanup;
        }
        pos[v] = k++;
    }
    if (k != s->n) {
        st = commsched_error_set(err, COMMSCHED_EINTERNAL, "schedule",
                                 "the list holds %u of %u nodes", k, s->n);
        goto cleanup;
    }
    for (uint32_t v = 0; v < s->n; v++) {
        const cs_csr *rows[2] = {&g->deps, with_fake ? &g->after_fake : NULL};
        for (int r = 0; r < 2; r++) {
            if (!rows[r])
                continue;
            for (uint32_t e = rows[r]->off[v]; e < rows[r]->off[v + 1]; e++) {
                uint32_t d = rows[r]->idx[e];
                if (pos[d] > pos[v]) {
                    st = commsched_error_set(
                        err, COMMSCHED_EORDER, "schedule",
                        "\"%s\" (position %u) runs before its %sdependency "
                        "\"%s\" (position %u)",
                        g->nodes[v].name, pos[v], r ? "fake " : "",
                        g->nodes[d].name, pos[d]);
                    goto cleanup;
                }
            }
        }
    }
cleanup:
    free(pos);
    return st;
}
