/* commsched CLI — temporary output files removed when the process is
 * interrupted (cli.h, cli_tmp_register).
 *
 * cli_out writes every output to a temporary file renamed into place at
 * the end. Failures remove it on the main path (cli_out_abort); this file
 * covers the one path that never returns there: SIGINT (Ctrl-C), SIGTERM
 * or SIGHUP while a temporary file exists. The handler removes every
 * registered file, restores the default action and raises the signal
 * again, so the process still ends "killed by SIGINT" (a shell reports
 * status 130, and a script running commsched stops as it would for any
 * interrupted command).
 *
 * Why state at file scope, against the house rule of no globals: a signal
 * handler receives nothing but the signal number, so what it must remove
 * can only be found in static storage. It is confined to this file and
 * made of lock-free atomics only, the one kind of static object C11
 * (7.14.1.1) lets a handler read; each path is copied in character by
 * character so the handler never reads a half-written or freed string,
 * whichever thread (OpenMP, MPI) the signal lands on. */
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#if ATOMIC_INT_LOCK_FREE != 2 || ATOMIC_CHAR_LOCK_FREE != 2
#error "the interrupt cleanup needs lock-free atomic int and char"
#endif

/* More outputs than any command writes at once (simulate writes two). */
#define SLOTS 8

/* FREE -> FILLING (cli_tmp_register copies the path) -> ARMED; ARMED ->
 * FREE when the main path is done with the file, or ARMED -> TAKEN by the
 * handler, whichever comes first: a compare-and-swap decides, so a file is
 * never removed after it was renamed into place and its slot reused. */
enum { FREE, FILLING, ARMED, TAKEN };

static atomic_int slot_state[SLOTS];
static _Atomic char slot_path[SLOTS][PATH_MAX];

static void on_signal(int sig)
{
    for (int i = 0; i < SLOTS; i++) {
        int armed = ARMED;
        if (!atomic_compare_exchange_strong(&slot_state[i], &armed, TAKEN))
            continue;
        char path[PATH_MAX]; /* the handler's own copy: automatic storage */
        for (size_t k = 0; k < PATH_MAX; k++)
            path[k] = atomic_load_explicit(&slot_path[i][k],
                                           memory_order_relaxed);
        path[PATH_MAX - 1] = '\0';
        unlink(path); /* async-signal-safe, as are the calls below */
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* Blocked while this handler runs: delivered, with the default action
     * (termination), as it returns. */
    raise(sig);
}

/* Installs on_signal for sig unless the signal is ignored (nohup, a
 * background job) or someone else handles it (an MPI library): neither is
 * ours to override. */
static void install(int sig)
{
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* The other two wait while one handler removes the files. */
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    sigaction(sig, &sa, NULL);
}

int cli_tmp_register(const char *path)
{
    size_t len = strlen(path);
    if (len >= PATH_MAX)
        return -1;
    for (int i = 0; i < SLOTS; i++) {
        int free_ = FREE;
        if (!atomic_compare_exchange_strong(&slot_state[i], &free_, FILLING))
            continue;
        for (size_t k = 0; k <= len; k++)
            atomic_store_explicit(&slot_path[i][k], path[k],
                                  memory_order_relaxed);
        /* Sequentially consistent: the handler sees the whole path once it
         * sees ARMED. */
        atomic_store(&slot_state[i], ARMED);
        install(SIGINT);
        install(SIGTERM);
        install(SIGHUP);
        /* A write past `ulimit -f` then fails with EFBIG, reported and
         * cleaned up like any failed write, instead of SIGXFSZ killing the
         * process with the file half-written. */
        struct sigaction xfsz;
        if (sigaction(SIGXFSZ, NULL, &xfsz) == 0 &&
            xfsz.sa_handler == SIG_DFL && !(xfsz.sa_flags & SA_SIGINFO))
            signal(SIGXFSZ, SIG_IGN);
        return i;
    }
    return -1;
}

void cli_tmp_release(int slot)
{
    if (slot < 0 || slot >= SLOTS)
        return;
    int armed = ARMED;
    /* Fails only when the handler took the slot: the process is ending. */
    atomic_compare_exchange_strong(&slot_state[slot], &armed, FREE);
}
