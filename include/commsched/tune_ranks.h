/* commsched — tune over MPI ranks: the (graph, candidate) pairs of a
 * search over one or many graphs spread over the processes of an mpirun
 * job (docs/PASSES.md, "tune over MPI ranks").
 *
 * Rank 0 prepares every graph (commsched_tune_prepare: the candidate set,
 * the input's figures), orders the pairs heaviest first (the candidate's
 * commsched_tune_weight, then the graph's node count, then graph and
 * candidate index) and hands them out one at a time to whichever rank has
 * an idle thread (among the next pairs of the same weight, one of a graph
 * that rank already holds first); it works on pairs too. Every other rank loads only the
 * graphs of the pairs it is given (keeping at most threads + 1 loaded),
 * prepares them itself (the same candidate set: it depends only on the
 * graph and the options) and judges its pairs on its threads (OpenMP).
 * The figures come back to rank 0, which records them
 * (commsched_tune_record) and ranks each graph (commsched_tune_finish):
 * the answer is commsched_tune's, whatever the rank count and whichever
 * rank judged which pair.
 *
 * Failures: a rank that cannot run a pair (it cannot load the graph) says
 * so; a rank with a pair out longer than timeout_s is taken as hung. Either
 * way rank 0 names it on `log`, gives it nothing more, and hands its pairs
 * to the others; a pair no live rank is left to run is recorded as failed
 * (COMMSCHED_EINTERNAL, "not run: ..."), never dropped. A rank that dies
 * (a signal, exit) ends the whole job under Open MPI, which names it.
 *
 * Lives in libcommsched_runtime.a, only in builds with MPI
 * (COMMSCHED_HAVE_MPI in commsched/config.h). Call it from the main thread
 * of every process of the job, with the same arguments; it initializes MPI
 * (MPI_THREAD_FUNNELED) unless MPI already is. */
#ifndef COMMSCHED_TUNE_RANKS_H
#define COMMSCHED_TUNE_RANKS_H

#include <stdio.h>

#include "commsched/commsched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads graph `index` of the job into *out (the caller of
 * commsched_tune_ranks destroys nothing: the job owns what it returns and
 * destroys it with commsched_graph_destroy). On failure sets err and
 * returns its status; it may also print a located message. Called from
 * any one thread at a time. */
typedef commsched_status (*commsched_graph_source)(void *arg, size_t index,
                                                   commsched_graph **out,
                                                   commsched_error *err);

typedef struct commsched_tune_ranks_options {
    size_t n_graphs;
    commsched_graph_source load;
    void *load_arg;
    const commsched_tune_options *tune; /* as commsched_tune; threads are
                                           per rank; progress: rank 0, one
                                           call per pair judged anywhere */
    const char *fingerprint; /* the job as the caller sees it (its command
                                line): every rank must pass the same, else
                                EINVAL on every rank before any work */
    double timeout_s;        /* a pair out this long marks its rank hung;
                                0: never */
    FILE *log;               /* rank 0's messages about failed ranks;
                                NULL: stderr */
    int debug_fail_rank;     /* tests: this rank refuses every pair as if
                                it could not load its graph; -1: none */
    int debug_hang_rank;     /* tests: this rank's threads stop answering
                                at its first pair (they sleep until the job
                                ends); -1: none */
    int debug_kill_rank;     /* tests: this rank kills itself (SIGKILL) at
                                its first pair; -1: none */
} commsched_tune_ranks_options;

/* n_graphs 0, no loader, no tune options, timeout 0, log stderr, no
 * debug ranks (-1). */
COMMSCHED_EXPORT void
commsched_tune_ranks_options_init(commsched_tune_ranks_options *o);

typedef struct commsched_tune_ranks commsched_tune_ranks;

/* Runs the job. On rank 0, once it returns OK, results[i] (the caller's
 * array of n_graphs) is graph i's finished result and graphs[i] the graph
 * (both owned by the job), or results[i] is NULL and errors[i] says why
 * graph i could not be loaded or prepared (also caller's arrays; graphs
 * and errors may be NULL). On the other ranks they are left as they were.
 * *out: the job (every rank; commsched_tune_ranks_end ends it), also on
 * failure when MPI was joined. Fails on every rank alike (EINVAL: the
 * ranks disagree on the job; ELIBRARY: MPI) or with ENOMEM. Cost: the
 * candidates' commsched_optimize calls over the ranks' threads, plus per
 * rank one load and one commsched_tune_prepare per graph it works on. For
 * P (graph, candidate) pairs over G graphs, rank 0 orders them in
 * O(P log P) and, with a progress callback, recounts every graph's
 * candidates for each pair it records (O(P x G)); a rank evicting a graph
 * scans the G graphs for the least recently used. */
COMMSCHED_EXPORT commsched_status commsched_tune_ranks_run(
    const commsched_tune_ranks_options *o, commsched_tune_result **results,
    const commsched_graph **graphs, commsched_error *errors,
    commsched_tune_ranks **out, commsched_error *err);

/* This process's rank and the job's rank count (1 and 0 before MPI). */
COMMSCHED_EXPORT int commsched_tune_ranks_rank(const commsched_tune_ranks *j);
COMMSCHED_EXPORT int commsched_tune_ranks_size(const commsched_tune_ranks *j);
/* Rank 0: how many ranks failed (were named on the log), and how many
 * pairs rank r judged (r out of range: 0). */
COMMSCHED_EXPORT int
commsched_tune_ranks_failed(const commsched_tune_ranks *j);
COMMSCHED_EXPORT size_t
commsched_tune_ranks_pairs_of(const commsched_tune_ranks *j, int r);
/* Rank 0: the rank whose figures were recorded for candidate `cand` of
 * graph `graph`; -1 when none ran it (or out of range). */
COMMSCHED_EXPORT int commsched_tune_ranks_judge_of(
    const commsched_tune_ranks *j, size_t graph, size_t cand);

/* Ends the job: frees everything and leaves MPI (every rank meets first,
 * so no process exits before rank 0 has written its output). Where a rank
 * was taken as hung (it would never come to that meeting) rank 0 aborts
 * the job with `code` instead (MPI_Abort: mpirun ends every process).
 * NULL is allowed. */
COMMSCHED_EXPORT void commsched_tune_ranks_end(commsched_tune_ranks *j,
                                               int code);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_TUNE_RANKS_H */
