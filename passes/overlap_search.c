/* commsched — overlap's candidate search (map: overlap.c): the variants
 * and one variant's forward list scheduler. */
#include "overlap_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- one variant: the forward list scheduler ----------------------------- */

/* The fast set first; `full` adds the rest. */
const ov_variant cs_ov_variants[] = {
    {FR_REF, 0, 1, 1, "input-order/jit"},
    {FR_DYN_POS, 0, 1, 1, "fill/jit"},
    {FR_DYN_UNLOCK, 0, 1, 1, "unlock/jit"},
    {FR_REF, 0, 0, 1, "input-order/asap"},
    {FR_DYN_POS, 0, 0, 1, "fill/asap"},
    {FR_DYN_POS, 1, 1, 1, "fill/jit/pinned"},
    {FR_DYN_UNLOCK, 1, 1, 1, "unlock/jit/pinned"},
    {FR_DYN_CRIT, 0, 1, 1, "critical/jit"},
    {FR_DYN_UNLOCK, 0, 0, 1, "unlock/asap"},
    {FR_REF, 0, 1, 0, "input-order/jit-lazy-free"},
    {FR_DYN_POS, 0, 1, 0, "fill/jit-lazy-free"},
    {FR_DYN_UNLOCK, 0, 1, 0, "unlock/jit-lazy-free"},
    {FR_REF, 1, 1, 1, "input-order/jit/pinned"},
    {FR_DYN_POS, 1, 0, 1, "fill/asap/pinned"},
};
const size_t cs_ov_n_variants =
    sizeof cs_ov_variants / sizeof cs_ov_variants[0];

void cs_ov_run_free(ov_run *S)
{
    free(S->unmet);
    free(S->blockers);
    free(S->sched);
    free(S->in_fh);
    free(S->in_sh);
    free(S->order);
    free(S->rem);
    free(S->cend);
    free(S->sf);
    free(S->infl);
    cs_rankset_free(&S->fh);
    cs_heap_fini(&S->wh);
    cs_heap_fini(&S->ah);
    cs_rankset_free(&S->sh);
    cs_rankset_free(&S->shf);
    cs_segtree_free(&S->seg);
    free(S->ready_t);
    free(S->flags);
    free(S->stk);
    free(S->list);
    free(S->undo);
    free(S->wit);
    free(S->refused);
    free(S->hold);
    cs_heap_fini(&S->held);
    cs_heap_fini(&S->lands);
    free(S->tstart);
    free(S->tfree);
    free(S->thead);
    free(S->tlast);
    cs_heap_fini(&S->ev);
}

int cs_ov_replay_alloc(ov_run *S, const ov_base *b)
{
    size_t nn = b->n ? b->n : 1, nt = b->n_tracked ? b->n_tracked : 1;
    size_t nr = b->reads.off[b->n];
    memset(S, 0, sizeof *S);
    S->b = b;
    S->rem = cs_malloc_array(nt, sizeof *S->rem);
    S->cend = cs_malloc_array(nn, sizeof *S->cend);
    S->sf = cs_malloc_array(b->n_streams ? b->n_streams : 1, sizeof *S->sf);
    /* The time peak's: stk holds positions and unmet links each stream's
     * nodes. */
    S->unmet = cs_malloc_array(nn, sizeof *S->unmet);
    S->stk = cs_malloc_array(nn, sizeof *S->stk);
    S->undo = cs_malloc_array(nr ? nr : 1, sizeof *S->undo);
    int ok = S->rem && S->cend && S->sf && S->unmet && S->stk && S->undo;
    if (ok && b->time_peak) {
        S->tstart = cs_malloc_array(nn, sizeof *S->tstart);
        S->tfree = cs_malloc_array(nn, sizeof *S->tfree);
        S->thead = cs_malloc_array((size_t)b->n_streams + 1, sizeof *S->thead);
        S->tlast = cs_malloc_array(nt, sizeof *S->tlast);
        ok = S->tstart && S->tfree && S->thead && S->tlast &&
             cs_heap_reserve(&S->ev, (size_t)b->n_streams + 1) == 0;
    }
    return ok ? 0 : -1;
}

int cs_ov_run_alloc(ov_run *S, const ov_base *b)
{
    uint32_t n = b->n;
    size_t nn = n ? n : 1;
    if (cs_ov_replay_alloc(S, b) != 0)
        return -1;
    S->blockers = cs_malloc_array(nn, sizeof *S->blockers);
    S->sched = cs_malloc_array(nn, sizeof *S->sched);
    S->in_fh = cs_malloc_array(nn, sizeof *S->in_fh);
    S->in_sh = cs_malloc_array(nn, sizeof *S->in_sh);
    S->order = cs_malloc_array(nn, sizeof *S->order);
    S->infl = cs_malloc_array(b->n_streams, sizeof *S->infl);
    S->refused = cs_malloc_array(2 * (size_t)b->n_streams + 1,
                                 sizeof *S->refused);
    S->ready_t = cs_malloc_array(b->n_cs ? b->n_cs : 1, sizeof *S->ready_t);
    S->flags = cs_malloc_array(nn, sizeof *S->flags);
    /* n + 1: cs_ov_sink_waits_late's heads (below) */
    S->list = cs_malloc_array(nn + 1, sizeof *S->list);
    size_t nw = 1;
    while (nw < OV_WIT_SLOTS && nw < (size_t)b->n_frame + b->n_cs)
        nw <<= 1;
    S->wit_mask = (uint32_t)(nw - 1);
    S->wit = cs_malloc_array(nw, sizeof *S->wit);
    if (b->time_peak &&
        !(S->hold = cs_malloc_array(b->n_tracked ? b->n_tracked : 1,
                                    sizeof *S->hold)))
        return -1;
    /* positions 0 .. n: a jump's range may end past the last node */
    int failed = cs_segtree_init(&S->seg, n + 1) |
               cs_rankset_init(&S->fh, b->n_frame) |
               cs_rankset_init(&S->sh, b->n_coll) |
               cs_rankset_init(&S->shf, b->n_coll);
    return failed == 0 && S->unmet && S->blockers && S->sched && S->in_fh &&
                   S->in_sh && S->order && S->rem && S->cend &&
                   S->sf && S->infl && S->ready_t && S->flags &&
                   S->stk && S->list && S->undo &&
                   S->wit && S->refused
               ? 0
               : -1;
}

static void push(ov_run *S, cs_heap *h, cs_heap_item x)
{
    if (cs_heap_push(h, x) != 0)
        S->oom = 1;
}

/* A collective's urgency: its domination index (n_frame at most, for one
 * no compute waits for: cs_ov_base_order). */
static cs_heap_item coll_key(const ov_base *b, uint32_t c)
{
    return ov_key(0, b->tpos[c], (double)ov_dom(b, c), c);
}

/* Stream s's candidates, or what one of them would pull along, changed:
 * its next walk is made (try_issue). */
static void walk_again(ov_run *S, uint32_t s)
{
    S->refused[2 * s].stands = 0;
    S->refused[2 * s + 1].stands = 0;
}

/* Puts u in the heaps it now qualifies for. */
static void touch(ov_run *S, uint32_t u)
{
    const ov_base *b = S->b;
    if (S->sched[u])
        return;
    uint8_t c = b->cls[u];
    if (is_frame(c) && !S->in_fh[u] && S->unmet[u] == 0) {
        S->in_fh[u] = 1;
        if (S->use_fh)
            cs_rankset_add(&S->fh, S->frk[u]);
    }
    if (c == C_COLL && !S->in_sh[u] && S->blockers[u] == 0) {
        S->in_sh[u] = 1;
        cs_rankset_add(ov_dref(b, u) <= 0 ? &S->shf : &S->sh, b->crank[u]);
        walk_again(S, ov_stream(b, u));
    }
}

static void became_ready(ov_run *S, uint32_t u)
{
    const ov_base *b = S->b;
    if (b->cls[u] == C_WAIT) {
        double e = 0;
        for (uint32_t x = b->wcoll.off[u]; x < b->wcoll.off[u + 1]; x++)
            if (S->cend[b->wcoll.idx[x]] > e)
                e = S->cend[b->wcoll.idx[x]];
        S->cend[u] = e; /* a wait: when its collectives end */
        push(S, &S->wh, ov_key(0, b->tpos[u], e, u));
    } else if (b->cls[u] == C_COLL) {
        S->ready_t[b->cix[u]] = S->now;
    } else if (b->cls[u] == C_COMPUTE) {
        for (uint32_t x = b->users.off[u]; x < b->users.off[u + 1]; x++) {
            uint32_t w = b->users.idx[x];
            if (b->cls[w] == C_COLL) {
                assert(S->blockers[w] > 0);
                S->blockers[w]--;
                touch(S, w);
            }
        }
    }
    touch(S, u);
}

/* The edge v -> u is met: v was just scheduled. */
static void release(ov_run *S, uint32_t v, uint32_t u)
{
    const ov_base *b = S->b;
    assert(S->unmet[u] > 0 && !S->sched[u]);
    S->unmet[u]--;
    if (S->in_sh[u]) /* v was one of its feeders */
        walk_again(S, ov_stream(b, u));
    if (b->cls[u] == C_COLL && b->cls[v] != C_COMPUTE) {
        assert(S->blockers[u] > 0);
        S->blockers[u]--;
    }
    if (S->unmet[u] == 0)
        became_ready(S, u);
    else
        touch(S, u);
}

static void advance_frontier(ov_run *S)
{
    const ov_base *b = S->b;
    while (S->fi < b->n &&
           (S->sched[b->topo[S->fi]] || !is_frame(b->cls[b->topo[S->fi]])))
        S->fi++;
    S->lo = S->fi < b->n ? b->gap_start[b->frank[b->topo[S->fi]]] : b->n;
}

/* The live bytes over time (cur_t) once v is placed (its memory step
 * done: rem counts its reads): its allocation; the buffers it read last
 * freed at its end, or, while an async collective in flight reads one,
 * when the last such ends; then every free due by the compute stream's
 * time now. */
static void time_step(ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    int async = b->cls[v] == C_COLL;
    double end = async ? S->cend[v] : S->now;
    int64_t fr = 0;
    if (async && S->cend[v] - b->rt[v] > S->now) {
        push(S, &S->lands, ov_key(0, v, S->cend[v] - b->rt[v], v));
        S->pend_alloc += b->alloc[v];
    } else {
        S->cur_t += b->alloc[v];
    }
    if (b->unread_free[v]) {
        if (end > S->now)
            push(S, &S->held, ov_key(0, v, end, NONE));
        else
            fr += b->unread_free[v];
    }
    for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
        uint32_t x = b->reads.idx[e];
        if (async && S->cend[v] > S->hold[x])
            S->hold[x] = S->cend[v];
        if (S->rem[x] != 0)
            continue;
        double t = end > S->hold[x] ? end : S->hold[x];
        if (t > S->now)
            push(S, &S->held, ov_key(0, x, t, x));
        else
            fr += b->bsize[x];
    }
    S->cur_t -= fr;
    while (S->lands.n > 0 && S->lands.a[0].k2 <= S->now) {
        uint32_t c = cs_heap_pop(&S->lands).v;
        S->cur_t += b->alloc[c];
        S->pend_alloc -= b->alloc[c];
    }
    while (S->held.n > 0 && S->held.a[0].k2 <= S->now) {
        cs_heap_item h = cs_heap_pop(&S->held);
        S->cur_t -= h.v == NONE ? b->unread_free[h.k3] : b->bsize[h.v];
    }
}

/* The live bytes over time while a node of runtime r runs from now: the
 * level now and the allocations of the collectives that start before it
 * ends. */
static int64_t level_during(const ov_run *S, double r)
{
    int64_t l = S->cur_t;
    for (size_t i = 0; i < S->lands.n; i++)
        if (S->lands.a[i].k2 < S->now + r)
            l += S->b->alloc[S->lands.a[i].v];
    return l;
}

static void sched_node(ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    /* each node once, after everything it depends on */
    assert(!S->sched[v] && S->unmet[v] == 0 && S->k < b->n);
    S->sched[v] = 1;
    S->order[S->k++] = v;
    if (S->in_fh[v]) {
        if (S->use_fh)
            cs_rankset_remove(&S->fh, S->frk[v]);
        S->in_fh[v] = 0;
    }
    if (S->in_sh[v]) {
        cs_rankset_remove(ov_dref(b, v) <= 0 ? &S->shf : &S->sh,
                          b->crank[v]);
        S->in_sh[v] = 0;
        walk_again(S, ov_stream(b, v));
    }
    /* memory and time through the model's kernel (kernel.h), so the
     * order is priced exactly as the memory model and the simulator will */
    int64_t fr = b->unread_free[v];
    for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
        uint32_t x = b->reads.idx[e];
        assert(S->rem[x] > 0);
        if (--S->rem[x] == 0)
            fr += b->bsize[x];
    }
    int overflow = 0; /* the builder's limits keep sums far from 2^63 */
    int64_t level = cs_mem_step(&S->cur, b->alloc[v], fr, &overflow);
    if (level > S->peak)
        S->peak = level;
    double r = b->rt[v];
    cs_clock clk = {S->now, S->sf};
    switch (b->cls[v]) {
    case C_COMPUTE:
        cs_clock_compute(&clk, r);
        break;
    case C_COLL: {
        uint32_t s = ov_stream(b, v);
        S->cend[v] = cs_clock_collective(&clk, s, r, 0) + r;
        S->infl[s] += ov_bytes(b, v);
        S->flags[v] |= F_INFLIGHT;
        break;
    }
    case C_SYNC:
        S->cend[v] = cs_clock_collective(&clk, ov_stream(b, v), r, 1) + r;
        break;
    default: { /* wait */
        double e = clk.now;
        for (uint32_t x = b->wcoll.off[v]; x < b->wcoll.off[v + 1]; x++) {
            uint32_t c = b->wcoll.idx[x];
            if (S->cend[c] > e)
                e = S->cend[c];
            if (S->flags[c] & F_INFLIGHT) {
                assert(S->infl[ov_stream(b, c)] >= ov_bytes(b, c));
                S->flags[c] &= (uint8_t)~F_INFLIGHT;
                S->infl[ov_stream(b, c)] -= ov_bytes(b, c);
            }
        }
        cs_clock_wait(&clk, e, r);
        break;
    }
    }
    S->now = clk.now;
    if (S->hold)
        time_step(S, v);
    /* Placed before its reference position: its memory delta now holds
     * over the positions it jumped. */
    if (S->use_seg && b->tpos[v] > S->lo) {
        int64_t d = ov_dref(b, v);
        cs_segtree_add(&S->seg, S->lo, b->tpos[v], d);
        if (d < 0)
            S->neg_ep++;
    }
    for (uint32_t e = b->users.off[v]; e < b->users.off[v + 1]; e++)
        release(S, v, b->users.idx[e]);
    uint32_t on = ov_next(b, v);
    if (on != NONE && !ov_dup(b, on))
        release(S, v, on);
    if (is_frame(b->cls[v]))
        advance_frontier(S);
}

/* The time the compute stream would wait before frame node f could run
 * (its waits' collectives; unissued ones estimated as issued now). */
static double stall_of(const ov_run *S, uint32_t f)
{
    const ov_base *b = S->b;
    double t = S->now;
    for (uint32_t e = b->deps.off[f]; e < b->deps.off[f + 1]; e++) {
        uint32_t w = b->deps.idx[e];
        if (S->sched[w] || b->cls[w] != C_WAIT)
            continue;
        for (uint32_t x = b->wcoll.off[w]; x < b->wcoll.off[w + 1]; x++) {
            uint32_t c = b->wcoll.idx[x];
            double end;
            if (S->sched[c]) {
                end = S->cend[c];
            } else {
                double sf = S->sf[ov_stream(b, c)];
                end = (S->now > sf ? S->now : sf) + b->rt[c];
            }
            if (end > t)
                t = end;
        }
    }
    return t - S->now;
}

/* The unscheduled dependencies of collective c (all ready compute nodes
 * once c is in its stream's heap), into S->list in T order. */
static uint32_t feeders(ov_run *S, uint32_t c)
{
    const ov_base *b = S->b;
    uint32_t nf = 0;
    for (uint32_t e = b->deps.off[c]; e < b->deps.off[c + 1]; e++) {
        uint32_t d = b->deps.idx[e];
        if (!S->sched[d])
            S->list[nf++] = d;
    }
    uint32_t op = ov_prev(b, c);
    if (op != NONE && !ov_dup(b, c) && !S->sched[op])
        S->list[nf++] = op;
    for (uint32_t i = 1; i < nf; i++) { /* insertion sort: a few entries */
        uint32_t x = S->list[i], j = i;
        while (j > 0 && b->tpos[S->list[j - 1]] > b->tpos[x]) {
            S->list[j] = S->list[j - 1];
            j--;
        }
        S->list[j] = x;
    }
    return nf;
}

/* v's key among the witnesses (frame nodes and collectives are the only
 * ones tested) into *key, and the cache slot it maps to. */
static struct ov_wit *wit_slot(ov_run *S, uint32_t v, uint32_t *key)
{
    const ov_base *b = S->b;
    assert(is_frame(b->cls[v]) || b->cls[v] == C_COLL);
    *key = is_frame(b->cls[v]) ? b->frank[v] : b->n_frame + b->cix[v];
    return &S->wit[*key & S->wit_mask];
}

/* Does v's witness still show that placing it now (lo) with delta more
 * bytes live up to its reference position would push a level of the tree
 * past the budget? Most tests re-ask what an earlier step refused (the
 * prefetch re-tests its candidates after every issue), so a refusal keeps
 * its witness, the position found too high: while that stays in range and
 * too high, the refusal stands without a range maximum. The level read
 * there is refreshed only after a negative add (positive ones only raise
 * it). Never refuses what the tree would accept. The witnesses are a
 * cache (OV_WIT_SLOTS, 1.5 MB a thread, not 16 B a frame node and
 * collective): one another node's refusal took costs a range maximum,
 * never a different answer. */
static int witness_refuses(ov_run *S, struct ov_wit *w, uint32_t key,
                           uint32_t v, int64_t delta)
{
    if (!S->use_seg || w->key != key || w->pos < S->lo ||
        w->pos >= S->b->tpos[v])
        return 0;
    if (w->ep != S->neg_ep) {
        w->val = cs_segtree_at(&S->seg, w->pos);
        w->ep = S->neg_ep;
    }
    return w->val + delta > S->B;
}

/* Would v, placed now with delta more bytes live until its reference
 * position, push a level of the tree past the budget? Exact. */
static int seg_refuses(ov_run *S, uint32_t v, int64_t delta)
{
    uint32_t r = S->b->tpos[v];
    if (r <= S->lo)
        return 0;
    uint32_t key;
    struct ov_wit *w = wit_slot(S, v, &key);
    if (witness_refuses(S, w, key, v, delta))
        return 1;
    uint32_t p;
    int64_t m = cs_segtree_max(&S->seg, S->lo, r, &p);
    if (m + delta <= S->B)
        return 0;
    w->key = key;
    w->pos = p;
    w->val = m;
    w->ep = S->neg_ep;
    return 1;
}

/* Would placing list[0 .. nf) and then c right now keep memory within the
 * budget: now (exactly) and over the positions they jump (the tree, where
 * they add bytes: what they free now is less than what they allocate)? */
static int mem_ok(ov_run *S, uint32_t nf, uint32_t c)
{
    const ov_base *b = S->b;
    if (S->B == NO_LIMIT && S->Bt == NO_LIMIT)
        return 1;
    int64_t level = S->cur, level_t = S->cur_t + S->pend_alloc, delta = 0;
    int64_t delta_t = 0;
    uint32_t nu = 0;
    int ok = 1;
    for (uint32_t i = 0; i <= nf && ok; i++) {
        uint32_t x = i < nf ? S->list[i] : c;
        if (level + b->alloc[x] > S->B ||
            (S->hold && level_t + b->alloc[x] > S->Bt)) {
            ok = 0;
            break;
        }
        /* Over time, what a feeder frees goes at its end unless a
         * collective in flight still reads it; what the collective frees,
         * at its end: not now. */
        int64_t fr = b->unread_free[x], fr_t = x == c ? 0 : fr;
        for (uint32_t e = b->reads.off[x]; e < b->reads.off[x + 1]; e++) {
            uint32_t y = b->reads.idx[e];
            if (S->rem[y] == 1) {
                fr += b->bsize[y];
                if (x != c && S->hold && !(S->hold[y] > S->now))
                    fr_t += b->bsize[y];
            }
            S->rem[y]--;
            S->undo[nu++] = y;
        }
        level_t += b->alloc[x] - fr_t;
        level += b->alloc[x] - fr;
        /* The frees that also happen at its reference position are the
         * ones the jump moves; count the smaller, to stay on the safe
         * side. */
        delta += b->alloc[x] - (fr < b->free_ref[x] ? fr : b->free_ref[x]);
        delta_t +=
            b->alloc[x] - (fr_t < b->free_ref[x] ? fr_t : b->free_ref[x]);
    }
    while (nu > 0)
        S->rem[S->undo[--nu]]++;
    if (ok && S->use_seg && delta > 0 && seg_refuses(S, c, delta))
        ok = 0;
    /* Over time the frees a collective in flight holds are not moved
     * ahead: the levels it jumps carry its allocations and its feeders'
     * without them (the reference order waits at once, so its levels are
     * its time levels too). */
    if (ok && S->hold && S->use_seg && delta_t > delta &&
        b->tpos[c] > S->lo) {
        uint32_t p;
        if (cs_segtree_max(&S->seg, S->lo, b->tpos[c], &p) + delta_t > S->Bt)
            ok = 0;
    }
    return ok;
}

/* Issues c with the compute nodes it still needs. Returns their runtime. */
double cs_ov_issue(ov_run *S, uint32_t c)
{
    uint32_t nf = feeders(S, c);
    double t = 0;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t x = S->list[i];
        t += S->b->rt[x];
        sched_node(S, x);
    }
    sched_node(S, c);
    return t;
}

/* The next member of s in [*from, end) while *left (members it may still
 * show) allows, or NONE; *from moves past it. (The sets hold unplaced
 * nodes only: sched_node removes a node from its set.) */
static uint32_t walk(const cs_rankset *s, uint32_t *from, uint32_t end,
                     uint32_t *left)
{
    uint32_t r = NONE;
    if (*left > 0) {
        r = cs_rankset_next(s, *from);
        if (r >= end)
            r = NONE;
    }
    if (r == NONE) {
        *left = 0;
    } else {
        (*left)--;
        *from = r + 1;
    }
    return r;
}

/* Notes flag f (why it was refused) on collective c. */
static void note(ov_run *S, uint32_t c, uint8_t f)
{
#ifndef NDEBUG
    S->new_notes += (S->flags[c] & f) != f;
#endif
    S->flags[c] |= f;
}

/* Would collective c go now (in-flight and budget tests)? Notes why not
 * on c. */
static int issuable(ov_run *S, uint32_t s, uint32_t c, int only_freeing)
{
    const ov_base *b = S->b;
    uint32_t nf = feeders(S, c);
    int64_t d = ov_dref(b, c);
    double pull = 0;
    for (uint32_t j = 0; j < nf; j++) {
        d += ov_dref(b, S->list[j]);
        pull += b->rt[S->list[j]];
    }
    /* The refusals that stand while c's feeders stay unplaced (d, pull)
     * and, for the witness's, while the tree only grows and the frontier
     * stays at or before the witness; the others (the level now, the
     * in-flight bytes) can change with any node placed. */
    if (only_freeing && d > 0)
        return 0;
    /* Pull compute along only when it is cheap beside the collective (the
     * copy-in or cast of an all-gather); real work waits for its turn in
     * the frame order. */
    if (pull > FEEDER_FRACTION * b->rt[c])
        return 0;
    if (S->cap > 0 && d > 0 && S->infl[s] + ov_bytes(b, c) > S->cap) {
        note(S, c, F_INFL);
        S->walk_stable = 0;
        return 0;
    }
    /* A collective that frees at least what it allocates at its place in
     * the input order only gets dearer later (its input stays live), so
     * it goes as soon as memory allows, priced as any other: its feeders
     * allocate now, ahead of nodes that would have freed memory first (a
     * weight gradient's matmul pulled ahead of the input gradient's, which
     * frees the gathered weight), and ahead of that place it may free
     * nothing (another reader of its input comes later). Left unchecked,
     * those overshot the budget by the same bytes in every sweep, and the
     * rebuilds, which only tighten the tree's test, could not remove them
     * (an FSDP x TP step kept its input order at 1.0). The sum of the
     * drefs, d, is at most the delta mem_ok prices, so a witness refusing
     * d refuses without that walk. */
    if (d > 0) {
        uint32_t key;
        struct ov_wit *w = wit_slot(S, c, &key);
        if (witness_refuses(S, w, key, c, d)) {
            note(S, c, F_MEM);
            if (w->pos < S->walk_minpos)
                S->walk_minpos = w->pos;
            return 0;
        }
        if (!mem_ok(S, nf, c)) {
            note(S, c, F_MEM);
            S->walk_stable = 0;
            return 0;
        }
    } else if (!mem_ok(S, nf, c)) {
        note(S, c, F_MEM);
        S->walk_stable = 0;
        return 0;
    }
    return 1;
}

/* The first collective of stream s that passes the in-flight and budget
 * tests among the K_STREAM most urgent entries of sh (unless
 * only_freeing) and those of shf, tried in key order, or NONE. The
 * candidates are read in place (a walk), so the ones refused stay where
 * they are. */
static uint32_t first_issuable(ov_run *S, uint32_t s, int only_freeing)
{
    const ov_base *b = S->b;
    const cs_rankset *hs[2] = {&S->sh, &S->shf};
    uint32_t at[2], from[2], left[2], end = b->soff[s + 1];
    for (int j = 0; j < 2; j++) {
        from[j] = b->soff[s];
        left[j] = j == 0 && only_freeing ? 0 : K_STREAM;
        at[j] = walk(hs[j], &from[j], end, &left[j]);
    }
    while (at[0] != NONE || at[1] != NONE) {
        /* ranks of one stream, distinct: the smaller is the more urgent */
        int j = at[1] < at[0] ? 1 : 0;
        uint32_t c = b->cat[at[j]];
        if (issuable(S, s, c, only_freeing))
            return c;
        at[j] = walk(hs[j], &from[j], end, &left[j]);
    }
    return NONE;
}

#ifndef NDEBUG
/* What try_issue relies on when it skips a walk: made again, it refuses
 * every candidate and notes nothing new on them. */
static int refusals_stand(ov_run *S, uint32_t s, int only_freeing)
{
    uint32_t notes = S->new_notes;
    return first_issuable(S, s, only_freeing) == NONE &&
           S->new_notes == notes;
}
#endif

/* Issues first_issuable's collective (issuing removes it from its set).
 * Returns it or NONE, and adds the compute it pulled along to *t_next.
 * Most walks refuse what the walk before refused (the prefetch re-tests
 * after every frame node): a walk whose refusals all stand is not made
 * again until what they rest on moves (ov_refusal). */
static uint32_t try_issue(ov_run *S, uint32_t s, int only_freeing,
                          double *t_next)
{
    struct ov_refusal *rf = &S->refused[2 * s + (only_freeing != 0)];
    if (rf->stands && rf->neg_ep == S->neg_ep && S->lo <= rf->minpos) {
        assert(refusals_stand(S, s, only_freeing));
        return NONE;
    }
    S->walk_stable = S->cap <= 0; /* the in-flight bytes move */
    S->walk_minpos = NONE;
    uint32_t c = first_issuable(S, s, only_freeing);
    if (c != NONE) {
        *t_next += cs_ov_issue(S, c);
        return c;
    }
    rf->stands = S->walk_stable;
    rf->neg_ep = S->neg_ep;
    rf->minpos = S->walk_minpos;
    return NONE;
}

/* Feeds the comm streams before the next frame node (which would end at
 * t_next if nothing else ran first). Collectives that free memory (a
 * reduce-scatter frees its full-size input) wait in their own heap, so a
 * queue of urgent all-gathers never hides them. */
static void prefetch(ov_run *S, double t_next)
{
    const ov_base *b = S->b;
    const ov_variant *var = S->var;
    for (uint32_t s = 0; s < b->n_streams && !S->oom; s++) {
        if (var->eager_free)
            while (!S->oom && try_issue(S, s, 1, &t_next) != NONE)
                ;
        for (;;) {
            if (var->jit && S->sf[s] >= t_next)
                break;
            /* the most urgent of both sets, in key order */
            if (S->oom || try_issue(S, s, 0, &t_next) == NONE)
                break;
        }
    }
}

/* Order among the ancestors force() places: collectives first (most
 * urgent first), then anything else, waits last (soonest done first). */
static cs_heap_item force_key(const ov_run *S, uint32_t v)
{
    const ov_base *b = S->b;
    switch (b->cls[v]) {
    case C_COLL:
        return coll_key(b, v);
    case C_WAIT:
        return ov_key(2, b->tpos[v], S->cend[v], v);
    default:
        return ov_key(1, b->tpos[v], 0.0, v);
    }
}

/* Schedules every unscheduled ancestor of f (collectives and waits: all
 * compute ancestors are placed already), collectives first, each wait as
 * late as it can go. */
static void force(ov_run *S, uint32_t f)
{
    const ov_base *b = S->b;
    /* F_FORCE_IN marks f and the ancestors found (list[0 .. na)), cleared
     * before returning; F_FORCE_QUEUED those that went into ah too. */
    uint32_t ns = 0, na = 0;
    S->stk[ns++] = f;
    S->flags[f] |= F_FORCE_IN;
    while (ns > 0) {
        uint32_t x = S->stk[--ns];
        uint32_t op = ov_prev(b, x);
        for (uint32_t e = b->deps.off[x]; e <= b->deps.off[x + 1]; e++) {
            uint32_t d = e < b->deps.off[x + 1] ? b->deps.idx[e] : op;
            if (d == NONE || S->sched[d] || (S->flags[d] & F_FORCE_IN))
                continue;
            S->flags[d] |= F_FORCE_IN;
            S->list[na++] = d;
            S->stk[ns++] = d;
        }
    }
    S->ah.n = 0;
    for (uint32_t i = 0; i < na; i++) {
        uint32_t a = S->list[i];
        if (S->unmet[a] == 0) {
            S->flags[a] |= F_FORCE_QUEUED;
            push(S, &S->ah, force_key(S, a));
        }
    }
    while (S->ah.n > 0 && !S->oom) {
        uint32_t a = cs_heap_pop(&S->ah).v;
        if (S->sched[a])
            continue;
        sched_node(S, a);
        uint32_t on = ov_next(b, a);
        for (uint32_t e = b->users.off[a]; e <= b->users.off[a + 1]; e++) {
            uint32_t u = e < b->users.off[a + 1] ? b->users.idx[e] : on;
            if (u == NONE || u == f ||
                (S->flags[u] & (F_FORCE_IN | F_FORCE_QUEUED)) != F_FORCE_IN ||
                S->sched[u] || S->unmet[u] != 0)
                continue;
            S->flags[u] |= F_FORCE_QUEUED;
            push(S, &S->ah, force_key(S, u));
        }
    }
    /* sched_node leaves list alone: it holds what this call marked. */
    uint8_t keep = (uint8_t)~(F_FORCE_IN | F_FORCE_QUEUED);
    S->flags[f] &= keep;
    for (uint32_t i = 0; i < na; i++)
        S->flags[S->list[i]] &= keep;
}

/* Would running frame node x now, ahead of the input order, keep memory
 * within the budget? */
static int frame_mem_ok(ov_run *S, uint32_t x)
{
    const ov_base *b = S->b;
    if (S->B == NO_LIMIT && S->Bt == NO_LIMIT)
        return 1;
    if (S->cur + b->alloc[x] > S->B ||
        (S->hold && level_during(S, b->rt[x]) + b->alloc[x] > S->Bt))
        return 0;
    int64_t d = ov_dref(b, x);
    return !S->use_seg || d <= 0 || !seg_refuses(S, x, d);
}

/* The next frame node: the input order's next one (the frontier), or in
 * the dynamic variants the best ready one that does not stall. */
static uint32_t pick_frame(ov_run *S, uint32_t *stalled_alone)
{
    const ov_base *b = S->b;
    *stalled_alone = 0;
    if (S->fi >= b->n)
        return NONE;
    uint32_t fs = b->topo[S->fi];
    if (S->var->frame == FR_REF || S->window == 0)
        return fs;
    /* Near the budget, the input order's next node goes first when it is
     * ready and frees at least what it allocates: running other work
     * ahead of it would hold its inputs live longer. A tighter budget
     * (the rebuild after an excess) makes this rule bite earlier. */
    if (S->B != NO_LIMIT && S->unmet[fs] == 0 && ov_dref(b, fs) <= 0 &&
        (S->cur + b->max_alloc > S->B ||
         (S->hold && S->cur_t + b->max_alloc > S->Bt)))
        return fs;
    /* The K_FRAME first entries of fh in key order, read in place. */
    uint32_t chosen = NONE, left = K_FRAME, from = 0;
    while (chosen == NONE) {
        uint32_t at = walk(&S->fh, &from, b->n_frame, &left);
        if (at == NONE)
            break;
        uint32_t x = S->fat[at];
        if (x != fs && S->window > 0 &&
            b->frank[x] > b->frank[fs] + (uint32_t)S->window)
            continue;
        if (stall_of(S, x) > 0)
            continue;
        if (x != fs && !frame_mem_ok(S, x))
            continue;
        chosen = x;
    }
    if (chosen == NONE) {
        *stalled_alone = 1;
        return fs;
    }
    return chosen;
}

/* The ready wait (in wh) that completes soonest, or with freeing only
 * the soonest of those that free memory (the last reader of a buffer, as
 * a wait whose collective's output nothing else reads); NONE for none. */
static uint32_t room_wait(ov_run *S, int freeing)
{
    const ov_base *b = S->b;
    uint32_t best = NONE;
    const cs_heap_item *bk = NULL;
    for (size_t i = 0; i < S->wh.n; i++) {
        const cs_heap_item *it = &S->wh.a[i];
        uint32_t w = it->v;
        if (S->sched[w] || (bk && !cs_heap_less(it, bk)))
            continue;
        int frees = !freeing || b->unread_free[w] > 0;
        for (uint32_t e = b->reads.off[w]; e < b->reads.off[w + 1] && !frees;
             e++)
            frees = S->rem[b->reads.idx[e]] == 1;
        if (frees) {
            best = w;
            bk = it;
        }
    }
    return best;
}

/* Frame node f would allocate past a budget. Per step: place the ready
 * waits that free memory first (a wait that is the last reader of what
 * its collective wrote; the sweep would place it once the collective is
 * done, after f). Over time, while buffers that collectives in flight read
 * are still live (a reduce-scatter's full-size input until it ends: the
 * per-step model frees it at the issue): the waits that complete soonest,
 * each stalling the compute stream until its collectives end and their
 * frees land. Until f fits or no such wait is ready. Exposing part of a
 * collective beats an order over the budget, which no rebuild with less
 * room for prefetches repairs: f runs in any case. */
static void make_room(ov_run *S, uint32_t f)
{
    const ov_base *b = S->b;
    while (!S->oom) {
        int step = S->B != NO_LIMIT && S->cur + b->alloc[f] > S->B;
        int time = S->hold && S->held.n > 0 &&
                   level_during(S, b->rt[f]) + b->alloc[f] > S->Bt;
        uint32_t w = step || time ? room_wait(S, !time) : NONE;
        if (w == NONE)
            return;
        S->flags[w] |= F_ROOM;
        sched_node(S, w);
    }
}

/* No frame node is left: collectives first (most urgent), then waits. */
static void tail_step(ov_run *S)
{
    const ov_base *b = S->b;
    uint32_t best = NONE;
    cs_heap_item bk = {0, 0, 0, 0};
    for (uint32_t s = 0; s < 2 * b->n_streams; s++) {
        const cs_rankset *h = s < b->n_streams ? &S->sh : &S->shf;
        uint32_t s1 = s < b->n_streams ? s : s - b->n_streams;
        uint32_t r = cs_rankset_next(h, b->soff[s1]);
        if (r >= b->soff[s1 + 1])
            continue;
        cs_heap_item k = coll_key(b, b->cat[r]);
        if (best == NONE || cs_heap_less(&k, &bk)) {
            best = b->cat[r];
            bk = k;
        }
    }
    /* A wait first when the collective would pass the budget now: the
     * wait frees what its collectives' outputs held once nothing else
     * reads them, and placing it raises nothing. */
    while (best != NONE && S->wh.n > 0 && S->sched[S->wh.a[0].v])
        cs_heap_pop(&S->wh);
    if (best != NONE &&
        (S->wh.n == 0 || mem_ok(S, feeders(S, best), best))) {
        cs_ov_issue(S, best); /* placing it removes it */
        return;
    }
    while (S->wh.n > 0) {
        uint32_t w = cs_heap_pop(&S->wh).v;
        if (!S->sched[w]) {
            sched_node(S, w);
            return;
        }
    }
    for (uint32_t i = 0; i < b->n; i++) { /* cannot happen on a DAG */
        uint32_t v = b->topo[i];
        if (!S->sched[v] && S->unmet[v] == 0) {
            sched_node(S, v);
            return;
        }
    }
}

/* Builds one order. Returns 0, -1 on OOM, 1 when stuck (a bug). */
int cs_ov_sweep(ov_run *S, const ov_variant *var, int64_t budget,
                int64_t budget_t, int room, int64_t cap, long window)
{
    const ov_base *b = S->b;
    uint32_t n = b->n;
    S->var = var;
    S->B = budget;
    S->Bt = S->hold ? budget_t : NO_LIMIT;
    S->room = room;
    S->cur_t = b->baseline;
    S->pend_alloc = 0;
    S->held.n = S->lands.n = 0;
    if (S->hold)
        for (uint32_t x = 0; x < b->n_tracked; x++)
            S->hold[x] = 0;
    S->cap = cap;
    S->window = window;
    S->k = 0;
    S->now = 0;
    S->cur = S->peak = b->baseline;
    S->fi = 0;
    S->oom = 0;
    S->wh.n = S->ah.n = 0;
    /* The input-order rule never reads fh. */
    S->use_fh = var->frame != FR_REF && window != 0;
    S->frk = var->frame == FR_DYN_UNLOCK ? b->urank
             : var->frame == FR_DYN_CRIT ? b->brank
                                         : b->frank;
    S->fat = var->frame == FR_DYN_UNLOCK ? b->uat
             : var->frame == FR_DYN_CRIT ? b->bat
                                         : b->fat;
    cs_rankset_clear(&S->fh);
    cs_rankset_clear(&S->sh);
    cs_rankset_clear(&S->shf);
    for (uint32_t s = 0; s < b->n_streams; s++) {
        S->sf[s] = 0;
        S->infl[s] = 0;
        walk_again(S, s);
    }
    memcpy(S->rem, b->nreaders, (size_t)b->n_tracked * sizeof *S->rem);
    S->use_seg = budget != NO_LIMIT;
    S->neg_ep = 0;
    if (S->use_seg) {
        /* The reference order's levels, written straight into the tree's
         * leaves (what mem_walk computes: the level after each step's
         * allocation, then its frees), not kept in the base. */
        int64_t *lv = cs_segtree_leaves(&S->seg), cur = b->baseline;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = b->topo[k];
            cur += b->alloc[v];
            lv[k] = cur;
            cur -= b->free_ref[v];
        }
        cs_segtree_build(&S->seg, NULL, n);
    }
    for (uint32_t v = 0; v < n; v++) {
        S->sched[v] = S->in_fh[v] = S->in_sh[v] = 0;
        S->flags[v] = 0;
        S->cend[v] = 0;
        uint32_t u = CS_ROW_LEN(b->deps, v);
        if (ov_prev(b, v) != NONE && !ov_dup(b, v))
            u++;
        S->unmet[v] = u;
    }
    for (uint32_t i = 0; i < b->n_cs; i++)
        S->ready_t[i] = INFINITY;
    for (uint32_t i = 0; i <= S->wit_mask; i++)
        S->wit[i].key = NONE;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t bl = 0;
        uint32_t op = ov_prev(b, v);
        for (uint32_t e = b->deps.off[v]; e <= b->deps.off[v + 1]; e++) {
            uint32_t d = e < b->deps.off[v + 1] ? b->deps.idx[e]
                         : (op != NONE && !ov_dup(b, v) ? op : NONE);
            if (d != NONE && !(b->cls[d] == C_COMPUTE && S->unmet[d] == 0))
                bl++;
        }
        S->blockers[v] = bl;
    }
    for (uint32_t v = 0; v < n; v++) {
        if (S->unmet[v] == 0 && b->cls[v] == C_WAIT)
            became_ready(S, v); /* a wait with no dependency: ill-formed
                                   but harmless */
        else
            touch(S, v);
    }
    advance_frontier(S);
    while (S->k < n) {
        uint32_t k0 = S->k;
        if (S->oom)
            return -1;
        /* 1. waits already complete */
        while (S->wh.n > 0) {
            const cs_heap_item *t = &S->wh.a[0];
            if (S->sched[t->v]) {
                cs_heap_pop(&S->wh);
                continue;
            }
            if (t->k2 > S->now)
                break;
            sched_node(S, cs_heap_pop(&S->wh).v);
        }
        /* 2. the next frame node */
        uint32_t stalled = 0;
        uint32_t f = pick_frame(S, &stalled);
        if (f == NONE) {
            if (S->k < n)
                tail_step(S);
            if (S->k == k0)
                return 1;
            continue;
        }
        double stall = stall_of(S, f);
        if (stalled && stall > 0) {
            /* Everything ready would stall: wait for whichever collective
             * ends first rather than for f's (it may unlock other compute),
             * when that is sooner. */
            while (S->wh.n > 0 && S->sched[S->wh.a[0].v])
                cs_heap_pop(&S->wh);
            if (S->wh.n > 0 && S->wh.a[0].k2 <= S->now + stall) {
                prefetch(S, S->wh.a[0].k2);
                uint32_t w = cs_heap_pop(&S->wh).v;
                if (!S->sched[w])
                    sched_node(S, w);
                continue;
            }
        }
        /* 3. feed the comm streams */
        double t_next = S->now + stall + b->rt[f];
        prefetch(S, t_next);
        /* 4. its waits, then the frame node */
        if (!S->sched[f]) {
            if (stalled) {
                /* nothing independent was ready: note it on the
                 * collectives this node waits for */
                for (uint32_t e = b->deps.off[f]; e < b->deps.off[f + 1]; e++) {
                    uint32_t w = b->deps.idx[e];
                    if (S->sched[w] || b->cls[w] != C_WAIT)
                        continue;
                    for (uint32_t x = b->wcoll.off[w]; x < b->wcoll.off[w + 1];
                         x++)
                        S->flags[b->wcoll.idx[x]] |= F_NOCOMP;
                }
            }
            uint32_t k_forced = S->k;
            force(S, f);
            if (S->oom) /* a heap could not grow: the state is short of
                           what force pushed; stop here */
                return -1;
            /* The waits just placed may have unlocked collectives (an
             * Inductor fake edge from the previous all-gather's wait to
             * the next all-gather): feed the streams again, or they stay
             * idle while f runs. */
            if (S->k != k_forced)
                prefetch(S, S->now + b->rt[f]);
            if (S->room && !S->sched[f])
                make_room(S, f);
            if (!S->sched[f]) /* a prefetch may pull f along */
                sched_node(S, f);
        }
        if (S->k == k0)
            return 1;
    }
    return S->oom ? -1 : 0;
}

/* Moves each wait that frees nothing to just before its first dependent
 * (the end when it has none), and never past the last reader of a buffer
 * it reads, so it never becomes the one that frees it. The sweep places
 * a completed wait as soon as it notices (it may unlock a collective);
 * where it unlocks nothing, later is as fast — a wait only holds the
 * compute stream back, and a later point is never earlier in time — and
 * costs no memory, and it is where XLA's and Inductor's schedulers put
 * it. A wait placed to make room (make_room) stays: its stall
 * is what keeps the next allocation after the frees its collectives
 * hold. Skipped under overlap_max_in_flight_bytes: the limit counts a
 * collective as in flight until its wait. O(V + E). */
void cs_ov_sink_waits_late(ov_run *S)
{
    const ov_base *b = S->b;
    uint32_t n = b->n, nt = b->n_tracked;
    /* Its scratch is the sweep's, which is done with it: unmet, blockers,
     * stk, list and rem are all set again before the next sweep (or the
     * replay: rem) reads them. Arrays of their own were 16 bytes a node
     * and 4 a tracked buffer in every worker. */
    uint32_t *pos = S->unmet, *next = S->blockers, *tmp_order = S->stk;
    uint32_t *head = S->list, *lastpos = S->rem; /* head: n + 1 */
    for (uint32_t k = 0; k < n; k++)
        pos[S->order[k]] = k;
    for (uint32_t x = 0; x < nt; x++)
        lastpos[x] = 0;
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t e = b->reads.off[v]; e < b->reads.off[v + 1]; e++) {
            uint32_t x = b->reads.idx[e];
            if (pos[v] > lastpos[x])
                lastpos[x] = pos[v];
        }
    for (uint32_t k = 0; k <= n; k++)
        head[k] = NONE;
    /* Waits to insert before position p, in their order: walk backward
     * and push at the front. */
    uint32_t moved = 0;
    for (uint32_t k = n; k-- > 0;) {
        uint32_t w = S->order[k];
        next[w] = NONE;
        if (b->cls[w] != C_WAIT)
            continue;
        uint32_t bound = n;
        int frees = 0;
        for (uint32_t e = b->users.off[w]; e < b->users.off[w + 1]; e++)
            if (pos[b->users.idx[e]] < bound)
                bound = pos[b->users.idx[e]];
        for (uint32_t e = b->reads.off[w]; e < b->reads.off[w + 1]; e++) {
            uint32_t lp = lastpos[b->reads.idx[e]];
            if (lp == k)
                frees = 1;
            else if (lp < bound)
                bound = lp;
        }
        if (frees || b->unread_free[w] != 0 || bound <= k + 1 ||
            (S->flags[w] & F_ROOM))
            continue;
        /* Its new slot, so that an earlier wait it depends on (an after
         * edge between waits) stops at or before it: at the same slot the
         * earlier one is pushed in front. */
        next[w] = head[bound];
        head[bound] = w;
        pos[w] = bound;
        S->flags[w] |= F_MOVED; /* skipped at its old place */
        moved++;
    }
    if (moved == 0)
        return;
    uint32_t m = 0;
    for (uint32_t k = 0; k <= n; k++) {
        for (uint32_t w = head[k]; w != NONE; w = next[w])
            tmp_order[m++] = w;
        if (k < n && !(S->flags[S->order[k]] & F_MOVED))
            tmp_order[m++] = S->order[k];
        else if (k < n)
            S->flags[S->order[k]] &= (uint8_t)~F_MOVED;
    }
    assert(m == n); /* every node once, at its old place or its slot */
    memcpy(S->order, tmp_order, (size_t)n * sizeof *S->order);
}
