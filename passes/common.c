/* commsched — helpers shared by the pass families: text, statistics rows,
 * dependency tests, runtimes with Inductor's multipliers, and the seed's two
 * exposed-time walks. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_g.h"
#include "passes_internal.h"

int cs_text_appendf(cs_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 ||
        cs_grow((void **)&t->s, &t->cap, t->len + (size_t)need + 1, 1) != 0) {
        t->failed = 1;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)need;
    return 0;
}

void cs_text_clear(cs_text *t)
{
    t->len = 0;
    t->failed = 0;
    if (t->s)
        t->s[0] = '\0';
}

void cs_text_free(cs_text *t)
{
    free(t->s);
    memset(t, 0, sizeof *t);
}

char *cs_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (d)
        memcpy(d, s, len);
    return d;
}

char *cs_text_take(cs_text *t)
{
    char *s = t->failed ? NULL : t->s ? t->s : cs_strdup("");
    if (t->failed)
        free(t->s);
    memset(t, 0, sizeof *t);
    return s;
}

commsched_node_stats *cs_record_row(cs_pass_record *r, uint32_t node)
{
    if (cs_grow((void **)&r->rows, &r->cap_rows, (size_t)r->pub.n_nodes + 1,
                sizeof *r->rows) != 0)
        return NULL;
    commsched_node_stats *row = &r->rows[r->pub.n_nodes++];
    memset(row, 0, sizeof *row);
    row->node = node;
    row->comm_time = row->comp_time = -1.0;
    row->initial_exposed = row->final_exposed = -1.0;
    r->pub.nodes = r->rows;
    return row;
}

void cs_row_set(const char **field, char *s)
{
    free((char *)*field);
    *field = s;
}

int cs_depends_on(const commsched_graph *g, uint32_t a, uint32_t b)
{
    uint32_t lo = g->deps.off[a], hi = g->deps.off[a + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->deps.idx[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->deps.off[a + 1] && g->deps.idx[lo] == b;
}

void cs_relink(commsched_schedule *s, const uint32_t *order, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        commsched_schedule_move_run_before(s, order[k], order[k],
                                           COMMSCHED_NONE);
}

double *cs_iterative_runtimes(const cs_pass_ctx *ctx)
{
    const commsched_graph *g = ctx->g;
    double *rt = cs_malloc_array(g->n_nodes, sizeof *rt);
    if (!rt)
        return NULL;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        rt[v] = ctx->runtime_ns[v] *
                (cs_is_collective(g, v)
                     ? ctx->k->reorder_sink_runtime_estimations_comm_mult
                     : ctx->k->reorder_sink_runtime_estimations_non_comm_mult);
    return rt;
}

const char *cs_pyfloat(char buf[static 32], double x)
{
    if (x != x)
        return strcpy(buf, "nan");
    if (x == HUGE_VAL || x == -HUGE_VAL)
        return strcpy(buf, x > 0 ? "inf" : "-inf");
    /* The shortest %.*e that reads back as x: its digits and exponent.
     * Reading back is monotone in the digits (the nearest (p+1)-digit
     * number is at least as close as the nearest p-digit one, which is
     * one of them), and 17 always reads back, so a search that halves
     * [lo, hi] finds the same p as trying 1, 2, ... (this text is most of
     * what the iterative passes spend). */
    char e[CS_FMT_G_SIZE], best[CS_FMT_G_SIZE] = "";
    int lo = 1, hi = 17; /* the answer is in [lo, hi] */
    /* The first probes are 16 and then 15 digits, not the middle: most of
     * what the passes print is a sum of runtimes that needs 16 or 17, so
     * one or two probes settle it, against four or five from the middle
     * (a zero, the other common value, is formatted once, not read back). */
    int mid = x == 0 ? 1 : 16;
    while (lo < hi) {
        /* "%.*g" with mid digits is the same rounded number as "%.*e"
         * with mid - 1, and cs_fmt_g writes it by integer arithmetic
         * (glibc's printf was most of this function's cost). */
        cs_fmt_g(e, x, mid);
        if (x == 0 || strtod(e, NULL) == x) {
            hi = mid;
            memcpy(best, e, sizeof e);
        } else {
            lo = mid + 1;
        }
        mid = hi == 16 && lo == 1 ? 15 : lo + (hi - lo) / 2;
    }
    /* Its digits and decimal point from the same "%.*g" text: plain
     * ("-0.00123", "58688.96") or with an exponent ("1.5e+20"). */
    if (best[0] == '\0') /* only 17 digits read back: not probed */
        cs_fmt_g(best, x, lo);
    char digits[24];
    int nd = 0, neg = best[0] == '-', before_point = 0, seen_point = 0;
    const char *c = best + neg;
    for (; *c && *c != 'e'; c++) {
        if (*c == '.') {
            seen_point = 1;
        } else {
            digits[nd++] = *c;
            before_point += !seen_point;
        }
    }
    int decpt = before_point + (*c == 'e' ? atoi(c + 1) : 0);
    int lead = 0; /* "0.00123": the zeros before the first digit */
    while (lead < nd - 1 && digits[lead] == '0')
        lead++;
    nd -= lead;
    decpt -= lead;
    memmove(digits, digits + lead, (size_t)nd);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0'; /* digits are 0.DDD x 10^decpt */
    /* At most 24 characters: "-0.000" and 17 digits, or
     * "-d." 16 digits "e+308". */
    char *o = buf;
    if (neg)
        *o++ = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -decpt; i++)
                *o++ = '0';
            memcpy(o, digits, (size_t)nd);
            o += nd;
        } else if (decpt >= nd) {
            memcpy(o, digits, (size_t)nd);
            o += nd;
            for (int i = nd; i < decpt; i++)
                *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            memcpy(o, digits, (size_t)decpt);
            o += decpt;
            *o++ = '.';
            memcpy(o, digits + decpt, (size_t)(nd - decpt));
            o += nd - decpt;
        }
    } else {
        int ex = decpt - 1;
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        *o++ = 'e';
        *o++ = ex < 0 ? '-' : '+';
        ex = abs(ex);
        if (ex >= 100)
            *o++ = (char)('0' + ex / 100);
        *o++ = (char)('0' + ex / 10 % 10);
        *o++ = (char)('0' + ex % 10);
    }
    *o = '\0';
    return buf;
}

const char *cs_pymax0(char buf[static 32], double x)
{
    return x > 0 ? cs_pyfloat(buf, x) : strcpy(buf, "0");
}

/* The seed's overlap_info entry: "+name[t]" where t is the walk's
 * comp_time after minus before the node, printed by Python. */
static void append_time(cs_text *info, const char *name, double t)
{
    char b[32];
    /* "+%s[%s]", built by hand: a term per node the walk passes, and two
     * vsnprintf calls each were a fifth of RCPPM on a long chain */
    const char *x = cs_pyfloat(b, t);
    size_t nn = strlen(name), nt = strlen(x);
    if (cs_grow((void **)&info->s, &info->cap, info->len + nn + nt + 4, 1) !=
        0) {
        info->failed = 1; /* as cs_text_appendf */
        return;
    }
    char *o = info->s + info->len;
    *o++ = '+';
    memcpy(o, name, nn);
    o += nn;
    *o++ = '[';
    memcpy(o, x, nt);
    o += nt;
    *o++ = ']';
    *o = '\0';
    info->len = (size_t)(o - info->s);
}

void cs_walk_info(const cs_walk_record *r, const commsched_graph *g,
                  char end_kind, cs_text *info)
{
    cs_text_clear(info);
    size_t kept = r->terms < CS_OVERLAP_INFO_TERMS ? r->terms
                                                   : CS_OVERLAP_INFO_TERMS;
    for (size_t i = 0; i < kept; i++)
        append_time(info, g->nodes[r->node[i]].name, r->time[i]);
    /* how many terms the cap left out, so a reader knows the text is cut;
     * placed where the cut is, before the closing "->W[..]"/"->C[..]" */
    if (r->terms > CS_OVERLAP_INFO_TERMS)
        cs_text_appendf(info, "+...(%zu more)",
                        r->terms - CS_OVERLAP_INFO_TERMS);
    if (r->end != COMMSCHED_NONE)
        cs_text_appendf(info, "->%c[%s]", end_kind, g->nodes[r->end].name);
}

/* One summed node of a walk: the record keeps the first terms. */
static void record_term(cs_walk_record *r, uint32_t v, double after,
                        double before)
{
    if (r->terms < CS_OVERLAP_INFO_TERMS) {
        r->node[r->terms] = v;
        r->time[r->terms] = after - before;
    }
    r->terms++;
}

int cs_walk_init(cs_walk *w, const commsched_graph *g)
{
    memset(w, 0, sizeof *w);
    w->mark = cs_calloc(g->n_nodes, sizeof *w->mark);
    w->cls = cs_malloc_array(g->n_nodes, sizeof *w->cls);
    if (!w->mark || !w->cls) {
        cs_walk_free(w);
        return -1;
    }
    w->n = g->n_nodes;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        w->cls[v] = (uint8_t)(cs_is_wait(g, v)         ? CS_WALK_WAIT
                              : !cs_is_collective(g, v) ? CS_WALK_COMPUTE
                              : cs_is_async(g, v)       ? CS_WALK_ASYNC
                                                        : CS_WALK_SYNC);
    return 0;
}

void cs_walk_free(cs_walk *w)
{
    free(w->mark);
    free(w->cls);
    free(w->seg);
    memset(w, 0, sizeof *w);
}

void cs_walk_positions_on(cs_walk *w, const commsched_memory *m)
{
    /* positions need the tracker's order tree */
    assert(w->n == 0 || commsched_memory_position(m, 0) != COMMSCHED_NONE);
    w->m = m;
}

void cs_walk_sums_on(cs_walk *w, const commsched_memory *m)
{
    cs_walk_positions_on(w, m);
    w->sums = 1;
}

/* A new stamp for w->mark, and an empty record. */
static void walk_begin(cs_walk *w)
{
    if (++w->epoch == 0) {
        memset(w->mark, 0, (size_t)w->n * sizeof *w->mark);
        w->epoch = 1;
    }
    w->rec.terms = 0;
    w->rec.end = COMMSCHED_NONE;
}

/* The first of coll's users in the order (they all follow it). */
static uint32_t first_user_position(const commsched_graph *g, uint32_t coll,
                                    const cs_walk *w)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t k = g->users.off[coll]; k < g->users.off[coll + 1]; k++) {
        uint32_t p = commsched_memory_position(w->m, g->users.idx[k]);
        if (p < best)
            best = p;
    }
    return best;
}

/* Runs of async collectives shorter than this are walked node by node. */
#define CS_WALK_SKIP_MIN 32u

/* The rest of coll's walk from v on, given times (cs_walk_sums_on): it
 * ends at coll's first user or the first sync collective, and passes the
 * async collectives between; comp_time grows by the others' runtimes in
 * order, which the tracker adds bit for bit without passing them. */
static double coll_tail(const commsched_graph *g, uint32_t coll, uint32_t v,
                        double comp_time, cs_walk *w)
{
    const commsched_memory *m = w->m;
    uint32_t p = commsched_memory_position(m, v);
    uint32_t user = first_user_position(g, coll, w);
    uint32_t sync = commsched_memory_next_sync(m, p);
    uint32_t q = user < sync ? user : sync;
    assert(user >= p); /* the walk stops at users: none lies behind it */
    w->rec.terms += (q - p) - commsched_memory_collectives(m, p, q);
    if (q == user)
        w->rec.end = commsched_memory_node_at(m, q);
    return commsched_memory_time_sum(m, p, q, comp_time);
}

void cs_coll_exposed(const commsched_graph *g, const commsched_schedule *s,
                     const double *rt, uint32_t coll, double *comm,
                     double *comp, cs_walk *w)
{
    double comp_time = 0.0;
    /* "depends on coll" is a stamp on coll's users, not a search of each
     * passed node's dependencies */
    walk_begin(w);
    for (uint32_t k = g->users.off[coll]; k < g->users.off[coll + 1]; k++)
        w->mark[g->users.idx[k]] = w->epoch;
    cs_links l = cs_schedule_links(s);
    uint32_t v = l.next[coll];
    /* A long run of async collectives (RCPPM piles the raised ones up
     * before the first compute node, and each walk starts in it) adds
     * nothing to the sums: with positions it is passed in O(log n) up to
     * the first node that is not one, or the first user of coll. Only the
     * run the walk starts in is worth a look (the tree's answer costs ~100
     * times a node walked). */
    if (w->m && v != l.end && w->cls[v] == CS_WALK_ASYNC &&
        w->mark[v] != w->epoch) {
        uint32_t p = commsched_memory_position(w->m, v);
        uint32_t q = commsched_memory_next_not_async(w->m, p);
        if (q - p >= CS_WALK_SKIP_MIN) {
            uint32_t user = first_user_position(g, coll, w);
            if (user < q) { /* an async collective uses coll */
                w->rec.end = commsched_memory_node_at(w->m, user);
                v = l.end;
            } else {
                v = q == w->n ? l.end : commsched_memory_node_at(w->m, q);
            }
        }
    }
    for (; v != l.end; v = l.next[v]) {
        /* past the record's terms, only the sum and the count are left */
        if (w->sums && w->rec.terms >= CS_OVERLAP_INFO_TERMS) {
            comp_time = coll_tail(g, coll, v, comp_time, w);
            break;
        }
        if (w->mark[v] == w->epoch) {
            w->rec.end = v;
            break;
        }
        if (w->cls[v] == CS_WALK_SYNC)
            break;
        /* async collectives run on their own stream: passed, not summed.
         * The seed also stops at a wait for one of the async collectives
         * passed on the way, but tests it against `coll` itself, which the
         * first check above already caught: that branch never fires. */
        if (w->cls[v] != CS_WALK_ASYNC) {
            double before = comp_time;
            comp_time += rt[v];
            record_term(&w->rec, v, comp_time, before);
        }
    }
    *comm = rt[coll];
    *comp = comp_time;
}

/* The rest of a wait's walk, from v (not yet passed) back, given
 * positions: the walk ends at the last collective before the wait that the
 * wait depends on (E), and its comp_time is what it summed since its last
 * reset — at the first collective after E (in the order) that is sync or
 * that a wait between it and `wait` completes, all of them passed by then
 * — so only the stretch between E and that collective is summed, in the
 * walk's order; the terms are counted. 1 when done (*comp, *comm and the
 * record set), 0 when no reset lies ahead (the walk must go on). */
static int wait_tail(const commsched_graph *g, cs_links l, const double *rt,
                     uint32_t wait, uint32_t v, double *comm, double *comp,
                     cs_walk *w)
{
    const commsched_memory *m = w->m;
    uint32_t at = commsched_memory_position(m, wait);
    uint32_t end = COMMSCHED_NONE, lo = 0;
    for (uint32_t k = g->deps.off[wait]; k < g->deps.off[wait + 1]; k++) {
        uint32_t d = g->deps.idx[k];
        if (w->cls[d] < CS_WALK_ASYNC)
            continue;
        uint32_t p = commsched_memory_position(m, d);
        if (end == COMMSCHED_NONE || p + 1 > lo) {
            end = d;
            lo = p + 1;
        }
    }
    uint32_t hi = commsched_memory_position(m, v) + 1; /* [lo, hi) is left */
    if (lo >= hi)
        return 0; /* v is the collective: the walk ends there */
    size_t n = 0;
    uint32_t reset = COMMSCHED_NONE;
    for (uint32_t x = end == COMMSCHED_NONE ? l.next[l.end] : l.next[end];
         reset == COMMSCHED_NONE; x = l.next[x]) {
        if (w->cls[x] >= CS_WALK_ASYNC) {
            int completed = w->cls[x] == CS_WALK_SYNC;
            for (uint32_t k = g->users.off[x];
                 k < g->users.off[x + 1] && !completed; k++) {
                uint32_t u = g->users.idx[k];
                completed = w->cls[u] == CS_WALK_WAIT &&
                            commsched_memory_position(m, u) < at;
            }
            if (completed)
                reset = x;
        } else {
            if (cs_grow((void **)&w->seg, &w->cap_seg, n + 1,
                        sizeof *w->seg) != 0)
                return 0;
            w->seg[n++] = x;
        }
        if (x == v)
            break;
    }
    if (reset == COMMSCHED_NONE)
        return 0;
    double sum = 0.0;
    while (n > 0)
        sum += rt[w->seg[--n]];
    *comp = sum;
    *comm = end == COMMSCHED_NONE ? 0.0 : rt[end];
    w->rec.end = end;
    w->rec.terms += (hi - lo) - commsched_memory_collectives(m, lo, hi);
    return 1;
}

/* One node of a wait's walk: 1 when it is the collective the walk ends
 * at. `keep`: the record still takes terms (else they are only counted). */
static inline int wait_step(const commsched_graph *g, const double *rt,
                            uint32_t wait, uint32_t v, double *comm_time,
                            double *comp_time, cs_walk *w, int keep)
{
    uint8_t c = w->cls[v];
    if (c == CS_WALK_WAIT)
        for (uint32_t k = g->deps.off[v]; k < g->deps.off[v + 1]; k++)
            w->mark[g->deps.idx[k]] = w->epoch;
    if (c >= CS_WALK_ASYNC) {
        if (cs_depends_on(g, wait, v)) {
            *comm_time = rt[v];
            w->rec.end = v;
            return 1;
        }
        if (c == CS_WALK_SYNC || w->mark[v] == w->epoch)
            *comp_time = 0.0;
        return 0;
    }
    double before = *comp_time;
    *comp_time += rt[v];
    if (keep)
        record_term(&w->rec, v, *comp_time, before);
    else
        w->rec.terms++;
    return 0;
}

void cs_wait_exposed(const commsched_graph *g, const commsched_schedule *s,
                     const double *rt, uint32_t wait, double *comm,
                     double *comp, cs_walk *w)
{
    double comm_time = 0.0, comp_time = 0.0;
    /* The seed keeps the waits seen on the way back and resets the compute
     * count at an async collective one of them completes (that wait stalls
     * the stream there), scanning the list at every collective. Stamping
     * each seen wait's dependencies answers the same question in O(1). */
    walk_begin(w);
    cs_links l = cs_schedule_links(s);
    uint32_t v = l.prev[wait];
    int ended = 0;
    for (; v != l.end && w->rec.terms < CS_OVERLAP_INFO_TERMS; v = l.prev[v])
        if ((ended = wait_step(g, rt, wait, v, &comm_time, &comp_time, w, 1)))
            break;
    /* the record is full: with positions, the rest need not be walked */
    if (!ended && v != l.end && w->m &&
        wait_tail(g, l, rt, wait, v, comm, comp, w))
        return;
    if (!ended)
        for (; v != l.end; v = l.prev[v])
            if (wait_step(g, rt, wait, v, &comm_time, &comp_time, w, 0))
                break;
    *comm = comm_time;
    *comp = comp_time;
}

int cs_graph_set_fake_edges(commsched_graph *g, cs_csr *after_fake)
{
    cs_csr users = {0};
    if (cs_csr_transpose(&users, after_fake, g->n_nodes, g->n_nodes) != 0)
        return -1;
    if (!g->fake_borrowed) {
        cs_csr_free(&g->after_fake);
        cs_csr_free(&g->fake_users);
    }
    g->fake_borrowed = 0;
    g->after_fake = *after_fake;
    g->fake_users = users;
    after_fake->off = after_fake->idx = NULL;
    return 0;
}
