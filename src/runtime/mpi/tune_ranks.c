/* commsched — tune over MPI ranks (commsched/tune_ranks.h).
 *
 * Every rank has one MPI thread (the main one: MPI_THREAD_FUNNELED) and a
 * team of worker threads (OpenMP, one per --threads) that never call MPI.
 * They meet in a rank-local `box`: pairs given to this rank wait in its
 * inbox until a worker takes one, and what a worker judged waits in the
 * outbox until the MPI thread sends it. On rank 0 the MPI thread is the
 * dispatcher: it keeps the queue of pairs not yet given out, each rank's
 * idle threads (its credit), what is out where and since when, and it
 * feeds its own workers through its own box as it feeds the others over
 * MPI. Both ends poll (MPI_Iprobe, then a short sleep when nothing came):
 * a pair takes milliseconds to minutes, and a blocking receive in Open MPI
 * spins a core the workers need.
 *
 * Rank 0 keeps every graph it prepared (it writes their output); its
 * workers judge on plans of their own, so a pair judged twice (handed on
 * after a timeout, then answered late) never has two writers. */
/* strdup, nanosleep */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commsched/config.h"
#include "commsched/tune_ranks.h"
#include "util.h"

#if COMMSCHED_HAVE_OPENMP
#include <omp.h>
#endif

enum { TAG_HELLO = 1, TAG_ASSIGN, TAG_STOP, TAG_RESULT, TAG_CANT };
#define POLL_NS 200000L /* 0.2 ms: the hand-out's latency bound */

typedef struct pair {
    uint32_t graph, cand;
} pair;

/* A judged pair on the wire: the candidate's figures, then its error text
 * (the rest of the message, no NUL). Doubles travel as their bytes, so the
 * figures rank 0 records are the worker's bit for bit. */
typedef struct wire_result {
    uint32_t graph, cand;
    int32_t status, fits;
    uint32_t over, pad;
    int64_t peak_memory, peak_memory_time;
    double makespan_ns, lower_bound_ns, efficiency, exposed_ns, wall_ms;
} wire_result;

typedef struct done_item {
    pair p;
    int judged;     /* 0: could not run it (msg says why) */
    wire_result w;
    char *msg;      /* error text or refusal (owned) */
} done_item;

/* A graph as one rank holds it. */
typedef struct entry {
    commsched_graph *g;
    commsched_tune_result *plan; /* this rank's own, judged into */
    int users, loading, broken;
    uint64_t used; /* last use, for eviction */
    char why[COMMSCHED_ERROR_TEXT_LENGTH];
} entry;

struct commsched_tune_ranks {
    const commsched_tune_ranks_options *o;
    int rank, size, threads, we_init, failed_count, hung_count;
    size_t n;             /* graphs */
    entry *cache;
    size_t loaded, keep;  /* graphs loaded now; the most kept idle */
    uint64_t clock;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pair *in;             /* inbox: a FIFO */
    size_t in_head, in_n, in_cap;
    done_item *out;       /* outbox */
    size_t out_n, out_cap;
    int stop;
    /* rank 0 */
    commsched_tune_result **plans;
    commsched_graph **graphs;
    size_t *pairs_of;     /* per rank */
    int **judge;          /* per graph, per candidate: the rank, or -1 */
    int *failed;          /* per rank */
    int mutex_ok, workers_started;
    pthread_t workers;
};

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(void)
{
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
}

void commsched_tune_ranks_options_init(commsched_tune_ranks_options *o)
{
    memset(o, 0, sizeof *o);
    o->debug_fail_rank = -1;
    o->debug_hang_rank = -1;
    o->debug_kill_rank = -1;
}

/* ---- the rank-local box (callers hold mu) --------------------------- */

static int push_in(commsched_tune_ranks *j, pair p)
{
    if (j->in_head > 0 && j->in_head == j->in_n) {
        j->in_head = j->in_n = 0;
    }
    if (cs_grow((void **)&j->in, &j->in_cap, j->in_n + 1, sizeof *j->in))
        return -1;
    j->in[j->in_n++] = p;
    pthread_cond_broadcast(&j->cv);
    return 0;
}

static int push_out(commsched_tune_ranks *j, const done_item *d)
{
    if (cs_grow((void **)&j->out, &j->out_cap, j->out_n + 1,
                sizeof *j->out) != 0)
        return -1;
    j->out[j->out_n++] = *d;
    return 0;
}

/* ---- workers ----------------------------------------------------------- */

/* The graph of pair p, loaded and prepared (once per rank while kept);
 * NULL with why[] set when this rank cannot. Called without mu. */
static entry *acquire(commsched_tune_ranks *j, uint32_t gi, char *why,
                      size_t why_size)
{
    entry *e = &j->cache[gi];
    pthread_mutex_lock(&j->mu);
    while (e->loading)
        pthread_cond_wait(&j->cv, &j->mu);
    if (e->broken) {
        snprintf(why, why_size, "%s", e->why);
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    e->users++;
    e->used = ++j->clock;
    if (e->plan) {
        pthread_mutex_unlock(&j->mu);
        return e;
    }
    e->loading = 1;
    commsched_graph *g = e->g; /* rank 0 holds every graph already */
    pthread_mutex_unlock(&j->mu);

    commsched_error err = {0};
    commsched_status st = COMMSCHED_OK;
    int loaded_here = 0;
    if (!g) {
        st = j->o->load(j->o->load_arg, gi, &g, &err);
        loaded_here = st == COMMSCHED_OK;
    }
    commsched_tune_result *plan = NULL;
    if (st == COMMSCHED_OK) {
        commsched_tune_options to = *j->o->tune;
        to.progress = NULL; /* rank 0's dispatcher reports progress */
        to.threads = 1;     /* each pair on one worker thread */
        st = commsched_tune_prepare(g, &to, &plan, &err);
    }
    pthread_mutex_lock(&j->mu);
    e->loading = 0;
    if (st != COMMSCHED_OK) {
        if (loaded_here)
            commsched_graph_destroy(g);
        e->broken = 1;
        e->users--;
        snprintf(e->why, sizeof e->why, "%s", err.text);
        snprintf(why, why_size, "%s", err.text);
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    e->g = g;
    e->plan = plan;
    if (loaded_here)
        j->loaded++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return e;
}

/* Drops a use; other ranks than 0 then keep at most `keep` graphs loaded,
 * evicting the least recently used idle ones. Called with mu. */
static void release(commsched_tune_ranks *j, entry *e)
{
    e->users--;
    if (j->rank == 0)
        return;
    while (j->loaded > j->keep) {
        entry *victim = NULL;
        for (size_t i = 0; i < j->n; i++) {
            entry *c = &j->cache[i];
            if (c->g && !c->users && !c->loading &&
                (!victim || c->used < victim->used))
                victim = c;
        }
        if (!victim)
            break;
        commsched_tune_result_destroy(victim->plan);
        commsched_graph_destroy(victim->g);
        victim->plan = NULL;
        victim->g = NULL;
        j->loaded--;
    }
}

static void worker_loop(commsched_tune_ranks *j)
{
    for (;;) {
        pthread_mutex_lock(&j->mu);
        while (!j->stop && j->in_head == j->in_n)
            pthread_cond_wait(&j->cv, &j->mu);
        /* stopped: every pair is recorded, what is left here is a twin */
        if (j->stop) {
            pthread_mutex_unlock(&j->mu);
            return;
        }
        pair p = j->in[j->in_head++];
        pthread_mutex_unlock(&j->mu);

        if (j->rank == j->o->debug_kill_rank)
            raise(SIGKILL); /* tests: a rank that dies of a signal */
        if (j->rank == j->o->debug_hang_rank) {
            /* tests: a rank that stops answering; it sleeps until the
             * job ends (rank 0 aborts it) */
            for (;;)
                sleep(1);
        }
        done_item d;
        memset(&d, 0, sizeof d);
        d.p = p;
        char why[COMMSCHED_ERROR_TEXT_LENGTH] = "";
        entry *e = NULL;
        if (j->rank == j->o->debug_fail_rank)
            snprintf(why, sizeof why, "refused (--debug-fail-rank)");
        else
            e = acquire(j, p.graph, why, sizeof why);
        if (e && p.cand >= commsched_tune_count(e->plan)) {
            snprintf(why, sizeof why,
                     "graph %u has %zu candidates here, not %u (the "
                     "ranks see different files)",
                     p.graph, commsched_tune_count(e->plan), p.cand + 1);
            pthread_mutex_lock(&j->mu);
            release(j, e);
            pthread_mutex_unlock(&j->mu);
            e = NULL;
        }
        if (e) {
            size_t ci = p.cand;
            commsched_error err = {0};
            if (commsched_tune_evaluate(e->plan, e->g, &ci, 1, &err) !=
                COMMSCHED_OK)
                snprintf(why, sizeof why, "%s", err.text);
            else {
                const commsched_tune_candidate *c =
                    commsched_tune_candidate_at(e->plan, ci);
                d.judged = 1;
                d.w.status = (int32_t)c->status;
                d.w.fits = c->fits;
                d.w.over = c->over;
                d.w.peak_memory = c->peak_memory;
                d.w.peak_memory_time = c->peak_memory_time;
                d.w.makespan_ns = c->makespan_ns;
                d.w.lower_bound_ns = c->lower_bound_ns;
                d.w.efficiency = c->efficiency;
                d.w.exposed_ns = c->exposed_ns;
                d.w.wall_ms = c->wall_ms;
                if (c->status != COMMSCHED_OK)
                    d.msg = strdup(c->error);
            }
        }
        d.w.graph = p.graph;
        d.w.cand = p.cand;
        if (!d.judged)
            d.msg = strdup(why[0] ? why : "out of memory");
        pthread_mutex_lock(&j->mu);
        if (e)
            release(j, e);
        if (push_out(j, &d) != 0) {
            /* no room to say it: the dispatcher's timeout will see the
             * pair missing */
            free(d.msg);
        }
        pthread_mutex_unlock(&j->mu);
    }
}

static void *workers_main(void *arg)
{
    commsched_tune_ranks *j = arg;
#if COMMSCHED_HAVE_OPENMP
#pragma omp parallel num_threads(j->threads)
    worker_loop(j);
#else
    worker_loop(j);
#endif
    return NULL;
}

/* ---- messages ------------------------------------------------------- */

static int send_done(const done_item *d)
{
    size_t ml = d->msg ? strlen(d->msg) : 0;
    size_t head = d->judged ? sizeof d->w : 2 * sizeof(uint32_t);
    size_t len = head + ml;
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf || len > INT32_MAX) {
        free(buf);
        return -1;
    }
    if (d->judged)
        memcpy(buf, &d->w, sizeof d->w);
    else {
        memcpy(buf, &d->p.graph, sizeof(uint32_t));
        memcpy(buf + sizeof(uint32_t), &d->p.cand, sizeof(uint32_t));
    }
    if (ml)
        memcpy(buf + head, d->msg, ml);
    int rc = MPI_Send(buf, (int)len, MPI_BYTE, 0,
                      d->judged ? TAG_RESULT : TAG_CANT, MPI_COMM_WORLD);
    free(buf);
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* Receives the probed message into a malloc'ed buffer (+1 for a NUL). */
static unsigned char *recv_probed(const MPI_Status *ps, int *len)
{
    MPI_Get_count(ps, MPI_BYTE, len);
    unsigned char *buf = malloc((size_t)*len + 1);
    if (!buf)
        return NULL;
    MPI_Recv(buf, *len, MPI_BYTE, ps->MPI_SOURCE, ps->MPI_TAG,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf[*len] = '\0';
    return buf;
}

/* ---- the other ranks' MPI thread ----------------------------------- */

static commsched_status serve(commsched_tune_ranks *j, commsched_error *err)
{
    int32_t t = j->threads;
    if (MPI_Send(&t, 1, MPI_INT32_T, 0, TAG_HELLO, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                   "rank %d: MPI_Send failed", j->rank);
    for (;;) {
        int busy = 0;
        pthread_mutex_lock(&j->mu);
        size_t n = j->out_n;
        done_item *items = NULL;
        if (n) {
            items = malloc(n * sizeof *items);
            if (items) {
                memcpy(items, j->out, n * sizeof *items);
                j->out_n = 0;
            } else
                n = 0;
        }
        pthread_mutex_unlock(&j->mu);
        for (size_t i = 0; i < n; i++) {
            send_done(&items[i]);
            free(items[i].msg);
            busy = 1;
        }
        free(items);
        int flag = 0;
        MPI_Status ps;
        MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &ps);
        if (flag) {
            busy = 1;
            if (ps.MPI_TAG == TAG_ASSIGN) {
                pair p;
                MPI_Recv(&p, (int)sizeof p, MPI_BYTE, 0, TAG_ASSIGN,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                pthread_mutex_lock(&j->mu);
                int bad = push_in(j, p);
                pthread_mutex_unlock(&j->mu);
                if (bad) {
                    done_item d = {p, 0, {0}, strdup("out of memory")};
                    send_done(&d);
                    free(d.msg);
                }
            } else {
                int32_t code;
                MPI_Recv(&code, 1, MPI_INT32_T, 0, ps.MPI_TAG,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                return COMMSCHED_OK; /* TAG_STOP */
            }
        }
        if (!busy)
            nap();
    }
}

/* ---- rank 0: the dispatcher ----------------------------------------- */

typedef struct out_pair {
    pair p;
    int rank;
    double since;
} out_pair;

typedef struct dispatch {
    pair *queue; /* not given out yet; front first */
    size_t q_head, q_n, q_cap;
    out_pair *out;
    size_t out_n, out_cap;
    int *credit;      /* idle threads per rank (-1: not said hello) */
    unsigned char **recorded; /* per graph, per candidate */
    unsigned char *has; /* [rank * graphs + graph]: it got a pair of it */
    size_t left;      /* pairs not recorded */
} dispatch;

/* How far down the queue a rank's next pair may come from (below). */
#define AFFINITY_LOOKAHEAD 64

static FILE *log_of(const commsched_tune_ranks *j)
{
    return j->o->log ? j->o->log : stderr;
}

/* The pair was not done by the rank it was given to: back to the front
 * of the queue. */
static int requeue(dispatch *d, pair p)
{
    if (d->q_head > 0) {
        d->queue[--d->q_head] = p;
        return 0;
    }
    if (cs_grow((void **)&d->queue, &d->q_cap, d->q_n + 1,
                sizeof *d->queue) != 0)
        return -1;
    memmove(d->queue + 1, d->queue, d->q_n * sizeof *d->queue);
    d->queue[0] = p;
    d->q_n++;
    return 0;
}

static void forget_out(dispatch *d, pair p, int rank)
{
    for (size_t i = 0; i < d->out_n; i++)
        if (d->out[i].p.graph == p.graph && d->out[i].p.cand == p.cand &&
            d->out[i].rank == rank) {
            d->out[i] = d->out[--d->out_n];
            return;
        }
}

/* Names rank r as failed (once) and hands every pair it holds back. */
static int fail_rank(commsched_tune_ranks *j, dispatch *d, int r,
                     const char *why, int hung)
{
    if (!j->failed[r]) {
        j->failed[r] = 1;
        j->failed_count++;
        j->hung_count += hung;
        fprintf(log_of(j),
                "commsched tune: rank %d failed (%s); its pairs go to the "
                "other ranks\n",
                r, why);
        fflush(log_of(j));
    }
    for (size_t i = 0; i < d->out_n;)
        if (d->out[i].rank == r) {
            if (requeue(d, d->out[i].p) != 0)
                return -1;
            d->out[i] = d->out[--d->out_n];
        } else
            i++;
    d->credit[r] = 0;
    return 0;
}

static commsched_status record(commsched_tune_ranks *j, dispatch *d,
                               const wire_result *w, const char *msg,
                               int from, commsched_error *err)
{
    pair p = {w->graph, w->cand};
    forget_out(d, p, from);
    if (!j->failed[from])
        d->credit[from]++;
    if (p.graph >= j->n || !j->plans[p.graph] ||
        p.cand >= commsched_tune_count(j->plans[p.graph]) ||
        d->recorded[p.graph][p.cand])
        return COMMSCHED_OK; /* late twin of a pair redone elsewhere */
    commsched_tune_candidate c;
    memset(&c, 0, sizeof c);
    c.status = (commsched_status)w->status;
    c.error = msg;
    c.makespan_ns = w->makespan_ns;
    c.lower_bound_ns = w->lower_bound_ns;
    c.efficiency = w->efficiency;
    c.exposed_ns = w->exposed_ns;
    c.peak_memory = w->peak_memory;
    c.peak_memory_time = w->peak_memory_time;
    c.fits = w->fits;
    c.over = w->over;
    c.wall_ms = w->wall_ms;
    commsched_status st =
        commsched_tune_record(j->plans[p.graph], p.cand, &c, err);
    if (st != COMMSCHED_OK)
        return st;
    d->recorded[p.graph][p.cand] = 1;
    d->left--;
    j->pairs_of[from]++;
    j->judge[p.graph][p.cand] = from;
    if (j->o->tune->progress) {
        size_t total = 0;
        for (size_t g = 0; g < j->n; g++)
            total += j->plans[g] ? commsched_tune_count(j->plans[g]) : 0;
        j->o->tune->progress(j->o->tune->progress_arg,
                             (uint64_t)(total - d->left), (uint64_t)total);
    }
    return COMMSCHED_OK;
}

static commsched_status cant(commsched_tune_ranks *j, dispatch *d, pair p,
                             const char *msg, int from, commsched_error *err)
{
    char why[COMMSCHED_ERROR_TEXT_LENGTH + 64];
    forget_out(d, p, from);
    snprintf(why, sizeof why, "graph %u: %s", p.graph, msg);
    if (requeue(d, p) != 0 || fail_rank(j, d, from, why, 0) != 0)
        return oom(err);
    return COMMSCHED_OK;
}

/* Pairs in hand-out order: heaviest candidates first, then larger graphs,
 * then by graph and candidate. */
typedef struct keyed {
    int w;
    uint32_t nodes;
    pair p;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->nodes != y->nodes)
        return x->nodes > y->nodes ? -1 : 1;
    if (x->p.graph != y->p.graph)
        return x->p.graph < y->p.graph ? -1 : 1;
    return x->p.cand < y->p.cand ? -1 : x->p.cand > y->p.cand ? 1 : 0;
}

static commsched_status make_queue(commsched_tune_ranks *j, dispatch *d,
                                   commsched_error *err)
{
    size_t total = 0;
    for (size_t g = 0; g < j->n; g++)
        total += j->plans[g] ? commsched_tune_count(j->plans[g]) : 0;
    keyed *k = malloc((total ? total : 1) * sizeof *k);
    d->queue = malloc((total ? total : 1) * sizeof *d->queue);
    d->recorded = calloc(j->n ? j->n : 1, sizeof *d->recorded);
    if (!k || !d->queue || !d->recorded) {
        free(k);
        return oom(err);
    }
    d->q_cap = total ? total : 1;
    size_t m = 0;
    for (size_t g = 0; g < j->n; g++) {
        if (!j->plans[g])
            continue;
        size_t n = commsched_tune_count(j->plans[g]);
        if (!(d->recorded[g] = calloc(n, 1)) ||
            !(j->judge[g] = malloc(n * sizeof *j->judge[g]))) {
            free(k);
            return oom(err);
        }
        for (size_t c = 0; c < n; c++)
            j->judge[g][c] = -1;
        for (size_t c = 0; c < n; c++)
            k[m++] = (keyed){commsched_tune_weight(j->plans[g], c),
                             commsched_graph_node_count(j->graphs[g]),
                             {(uint32_t)g, (uint32_t)c}};
    }
    qsort(k, m, sizeof *k, keyed_cmp);
    for (size_t i = 0; i < m; i++)
        d->queue[i] = k[i].p;
    d->q_n = m;
    d->left = m;
    free(k);
    return COMMSCHED_OK;
}

/* The next pair for rank r, taken off the queue: the first of the head's
 * weight, within AFFINITY_LOOKAHEAD, of a graph r already holds, else the
 * head. Each graph's first pair on a rank costs a load and a preparation,
 * and heaviest first across a folder of graphs gave every rank a pair of
 * almost every graph; preferring a held graph among pairs of the same
 * weight keeps the heavy ones first. 0 when the queue is empty. */
static int pick(commsched_tune_ranks *j, dispatch *d, int r, pair *out)
{
    while (d->q_head < d->q_n &&
           d->recorded[d->queue[d->q_head].graph][d->queue[d->q_head].cand])
        d->q_head++;
    if (d->q_head == d->q_n)
        return 0;
    pair head = d->queue[d->q_head];
    int w = commsched_tune_weight(j->plans[head.graph], head.cand);
    size_t at = d->q_head;
    size_t end = d->q_n - d->q_head > AFFINITY_LOOKAHEAD
                     ? d->q_head + AFFINITY_LOOKAHEAD
                     : d->q_n;
    for (size_t i = d->q_head; i < end; i++) {
        pair p = d->queue[i];
        if (commsched_tune_weight(j->plans[p.graph], p.cand) != w)
            break;
        if (!d->recorded[p.graph][p.cand] &&
            d->has[(size_t)r * j->n + p.graph]) {
            at = i;
            break;
        }
    }
    *out = d->queue[at];
    memmove(d->queue + d->q_head + 1, d->queue + d->q_head,
            (at - d->q_head) * sizeof *d->queue);
    d->q_head++;
    return 1;
}

static int give(commsched_tune_ranks *j, dispatch *d, int r, pair p)
{
    if (cs_grow((void **)&d->out, &d->out_cap, d->out_n + 1,
                sizeof *d->out) != 0)
        return -1;
    d->out[d->out_n++] = (out_pair){p, r, now_s()};
    d->credit[r]--;
    d->has[(size_t)r * j->n + p.graph] = 1;
    if (r == 0) {
        pthread_mutex_lock(&j->mu);
        int rc = push_in(j, p);
        pthread_mutex_unlock(&j->mu);
        return rc;
    }
    return MPI_Send(&p, (int)sizeof p, MPI_BYTE, r, TAG_ASSIGN,
                    MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

/* Records every pair no live rank can take as failed, with why. */
static commsched_status give_up(commsched_tune_ranks *j, dispatch *d,
                                commsched_error *err)
{
    while (d->q_head < d->q_n) {
        pair p = d->queue[d->q_head++];
        if (d->recorded[p.graph][p.cand])
            continue;
        wire_result w;
        memset(&w, 0, sizeof w);
        w.graph = p.graph;
        w.cand = p.cand;
        w.status = COMMSCHED_EINTERNAL;
        w.makespan_ns = INFINITY;
        commsched_status st =
            record(j, d, &w, "not run: every rank that could failed", 0, err);
        if (st != COMMSCHED_OK)
            return st;
        j->pairs_of[0]--; /* rank 0 did not judge it */
        j->judge[p.graph][p.cand] = -1;
    }
    return COMMSCHED_OK;
}

static commsched_status dispatch_all(commsched_tune_ranks *j,
                                     commsched_error *err)
{
    dispatch d;
    memset(&d, 0, sizeof d);
    commsched_status st = COMMSCHED_OK;
    d.credit = malloc((size_t)j->size * sizeof *d.credit);
    d.has = calloc((size_t)j->size * (j->n ? j->n : 1), 1);
    if (!d.credit || !d.has) {
        st = oom(err);
        goto done;
    }
    for (int r = 0; r < j->size; r++)
        d.credit[r] = -1;
    d.credit[0] = j->threads;
    if ((st = make_queue(j, &d, err)) != COMMSCHED_OK)
        goto done;
    while (d.left > 0) {
        int busy = 0;
        /* rank 0's own workers */
        pthread_mutex_lock(&j->mu);
        size_t n = j->out_n;
        done_item *items = NULL;
        if (n && (items = malloc(n * sizeof *items))) {
            memcpy(items, j->out, n * sizeof *items);
            j->out_n = 0;
        } else
            n = 0;
        pthread_mutex_unlock(&j->mu);
        for (size_t i = 0; i < n && st == COMMSCHED_OK; i++) {
            busy = 1;
            if (items[i].judged)
                st = record(j, &d, &items[i].w, items[i].msg, 0, err);
            else
                st = cant(j, &d, items[i].p, items[i].msg, 0, err);
        }
        for (size_t i = 0; i < n; i++)
            free(items[i].msg);
        free(items);
        if (st != COMMSCHED_OK)
            goto done;
        /* the others */
        for (;;) {
            int flag = 0;
            MPI_Status ps;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                       &ps);
            if (!flag)
                break;
            busy = 1;
            int len = 0, from = ps.MPI_SOURCE;
            unsigned char *buf = recv_probed(&ps, &len);
            if (!buf) {
                st = oom(err);
                goto done;
            }
            if (ps.MPI_TAG == TAG_HELLO && len == (int)sizeof(int32_t)) {
                int32_t t;
                memcpy(&t, buf, sizeof t);
                if (!j->failed[from])
                    d.credit[from] = t > 0 ? t : 1;
            } else if (ps.MPI_TAG == TAG_RESULT &&
                       len >= (int)sizeof(wire_result)) {
                wire_result w;
                memcpy(&w, buf, sizeof w);
                st = record(j, &d, &w, (char *)buf + sizeof w, from, err);
            } else if (ps.MPI_TAG == TAG_CANT &&
                       len >= (int)(2 * sizeof(uint32_t))) {
                pair p;
                memcpy(&p.graph, buf, sizeof(uint32_t));
                memcpy(&p.cand, buf + sizeof(uint32_t), sizeof(uint32_t));
                st = cant(j, &d, p, (char *)buf + 2 * sizeof(uint32_t),
                          from, err);
            }
            free(buf);
            if (st != COMMSCHED_OK)
                goto done;
        }
        /* hung ranks */
        if (j->o->timeout_s > 0) {
            double t = now_s();
            for (size_t i = 0; i < d.out_n; i++)
                if (t - d.out[i].since > j->o->timeout_s) {
                    char why[160];
                    snprintf(why, sizeof why,
                             "no answer for graph %u candidate %u in %g s",
                             d.out[i].p.graph, d.out[i].p.cand,
                             j->o->timeout_s);
                    if (fail_rank(j, &d, d.out[i].rank, why, 1) != 0) {
                        st = oom(err);
                        goto done;
                    }
                    busy = 1;
                    break;
                }
        }
        /* hand out: each idle thread of a live rank gets the next pair */
        for (int r = 0; r < j->size && d.q_head < d.q_n; r++)
            while (!j->failed[r] && d.credit[r] > 0) {
                pair p;
                if (!pick(j, &d, r, &p))
                    break;
                if (give(j, &d, r, p) != 0) {
                    st = commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                             "rank 0: cannot hand a pair "
                                             "to rank %d",
                                             r);
                    goto done;
                }
                busy = 1;
            }
        /* nobody left to run what is queued */
        int live = 0;
        for (int r = 0; r < j->size; r++)
            live += !j->failed[r];
        if (!live && d.out_n == 0 && (st = give_up(j, &d, err)) !=
                                         COMMSCHED_OK)
            goto done;
        if (!busy)
            nap();
    }
done:
    /* Every rank but a hung one leaves its loop now. */
    for (int r = 1; r < j->size; r++) {
        int32_t code = 0;
        MPI_Send(&code, 1, MPI_INT32_T, r, TAG_STOP, MPI_COMM_WORLD);
    }
    free(d.credit);
    free(d.has);
    free(d.queue);
    free(d.out);
    if (d.recorded)
        for (size_t g = 0; g < j->n; g++)
            free(d.recorded[g]);
    free(d.recorded);
    return st;
}

/* ---- the job ----------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Every rank passed the same job: EINVAL on every rank otherwise. */
static commsched_status agree(commsched_tune_ranks *j, commsched_error *err)
{
    unsigned long long mine[2] = {fnv1a(j->o->fingerprint),
                                  (unsigned long long)j->n},
                       lo[2], hi[2];
    if (MPI_Allreduce(mine, lo, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                      MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(mine, hi, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
        return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                   "MPI_Allreduce failed");
    if (lo[0] != hi[0] || lo[1] != hi[1])
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the ranks were given different jobs "
                                   "(command lines or graph lists differ)");
    return COMMSCHED_OK;
}

/* Rank 0: loads and prepares every graph, keeping them. */
static void prepare_all(commsched_tune_ranks *j, commsched_error *errors)
{
    for (size_t i = 0; i < j->n; i++) {
        commsched_error e = {0};
        commsched_graph *g = NULL;
        commsched_status st = j->o->load(j->o->load_arg, i, &g, &e);
        if (st == COMMSCHED_OK) {
            commsched_tune_options to = *j->o->tune;
            to.progress = NULL;
            st = commsched_tune_prepare(g, &to, &j->plans[i], &e);
        }
        if (st != COMMSCHED_OK) {
            commsched_graph_destroy(g);
            j->plans[i] = NULL;
            if (errors)
                errors[i] = e;
            /* the workers are told nothing of it: no pair of it exists */
            j->cache[i].broken = 1;
            snprintf(j->cache[i].why, sizeof j->cache[i].why, "%s", e.text);
            continue;
        }
        j->graphs[i] = g;
        j->cache[i].g = g;
    }
}

commsched_status commsched_tune_ranks_run(
    const commsched_tune_ranks_options *o, commsched_tune_result **results,
    const commsched_graph **graphs, commsched_error *errors,
    commsched_tune_ranks **out, commsched_error *err)
{
    if (!out || !o || !o->load || !o->tune || (!results && o->n_graphs))
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "options, loader, tune options, results "
                                   "and out must not be NULL");
    *out = NULL;
    commsched_tune_ranks *j = calloc(1, sizeof *j);
    if (!j)
        return oom(err);
    j->o = o;
    j->n = o->n_graphs;
    j->rank = 0;
    j->size = 1;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
            MPI_SUCCESS) {
            free(j);
            return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                       "MPI_Init_thread failed");
        }
        j->we_init = 1;
    }
    *out = j;
    MPI_Comm_rank(MPI_COMM_WORLD, &j->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j->size);
    /* A rank that cannot be reached is an error to report, not an abort
     * from inside MPI. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int threads = o->tune->threads;
#if COMMSCHED_HAVE_OPENMP
    if (threads <= 0)
        threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    j->threads = threads;
    j->keep = (size_t)threads + 1;
    commsched_status st = agree(j, err);
    if (st != COMMSCHED_OK)
        return st;
    j->cache = calloc(j->n ? j->n : 1, sizeof *j->cache);
    int ok = j->cache != NULL;
    if (j->rank == 0) {
        j->plans = calloc(j->n ? j->n : 1, sizeof *j->plans);
        j->graphs = calloc(j->n ? j->n : 1, sizeof *j->graphs);
        j->pairs_of = calloc((size_t)j->size, sizeof *j->pairs_of);
        j->failed = calloc((size_t)j->size, sizeof *j->failed);
        j->judge = calloc(j->n ? j->n : 1, sizeof *j->judge);
        ok = ok && j->plans && j->graphs && j->pairs_of && j->failed &&
             j->judge;
    }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok)
        return oom(err);
    if (pthread_mutex_init(&j->mu, NULL) != 0)
        return oom(err);
    if (pthread_cond_init(&j->cv, NULL) != 0) {
        pthread_mutex_destroy(&j->mu);
        return oom(err);
    }
    j->mutex_ok = 1;
    if (j->rank == 0)
        prepare_all(j, errors);
    if (pthread_create(&j->workers, NULL, workers_main, j) != 0) {
        /* the others wait for a stop that still comes */
        if (j->rank == 0)
            for (int r = 1; r < j->size; r++) {
                int32_t code = 0;
                MPI_Send(&code, 1, MPI_INT32_T, r, TAG_STOP, MPI_COMM_WORLD);
            }
        return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                   "rank %d: cannot start its worker "
                                   "threads",
                                   j->rank);
    }
    j->workers_started = 1;
    st = j->rank == 0 ? dispatch_all(j, err) : serve(j, err);
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    /* A hung worker thread never returns: leave it to the abort in
     * commsched_tune_ranks_end. */
    if ((j->rank == 0 && !(j->failed[0] && j->hung_count)) ||
        (j->rank != 0 && j->rank != o->debug_hang_rank)) {
        pthread_join(j->workers, NULL);
        j->workers_started = 0;
    }
    if (st != COMMSCHED_OK || j->rank != 0)
        return st;
    for (size_t i = 0; i < j->n; i++) {
        results[i] = j->plans[i];
        if (graphs)
            graphs[i] = j->graphs[i];
        if (j->plans[i] &&
            (st = commsched_tune_finish(j->plans[i], err)) != COMMSCHED_OK)
            return st;
    }
    return COMMSCHED_OK;
}

int commsched_tune_ranks_rank(const commsched_tune_ranks *j)
{
    return j ? j->rank : 0;
}

int commsched_tune_ranks_size(const commsched_tune_ranks *j)
{
    return j ? j->size : 1;
}

int commsched_tune_ranks_failed(const commsched_tune_ranks *j)
{
    return j ? j->failed_count : 0;
}

size_t commsched_tune_ranks_pairs_of(const commsched_tune_ranks *j, int r)
{
    return j && j->pairs_of && r >= 0 && r < j->size ? j->pairs_of[r] : 0;
}

int commsched_tune_ranks_judge_of(const commsched_tune_ranks *j,
                                  size_t graph, size_t cand)
{
    if (!j || !j->judge || graph >= j->n || !j->judge[graph] ||
        !j->plans[graph] || cand >= commsched_tune_count(j->plans[graph]))
        return -1;
    return j->judge[graph][cand];
}

void commsched_tune_ranks_end(commsched_tune_ranks *j, int code)
{
    if (!j)
        return;
    /* a hung rank would never reach the barrier below */
    if (j->rank == 0 && j->hung_count > 0) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
    }
    /* every rank leaves together, so none exits before rank 0 wrote */
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < j->n && j->cache; i++) {
        entry *e = &j->cache[i];
        /* rank 0's plans and graphs are the results it returned */
        if (e->plan)
            commsched_tune_result_destroy(e->plan);
        if (j->rank != 0 && e->g)
            commsched_graph_destroy(e->g);
    }
    if (j->plans)
        for (size_t i = 0; i < j->n; i++) {
            commsched_tune_result_destroy(j->plans[i]);
            commsched_graph_destroy(j->graphs[i]);
        }
    free(j->cache);
    free(j->plans);
    free(j->graphs);
    free(j->pairs_of);
    free(j->failed);
    for (size_t i = 0; j->judge && i < j->n; i++)
        free(j->judge[i]);
    free(j->judge);
    free(j->in);
    for (size_t i = 0; i < j->out_n; i++)
        free(j->out[i].msg);
    free(j->out);
    if (j->mutex_ok && !j->workers_started) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
    }
    if (j->we_init && !fin)
        MPI_Finalize();
    free(j);
}
