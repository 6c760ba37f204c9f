/* commsched CLI — the one progress reporter of every long command (`run`,
 * `tune`, `generate`, `import`, the graph writers).
 *
 * A line on standard error, redrawn in place with '\r', only when standard
 * error is a terminal (so nothing reaches a pipe, a file or a log), at most
 * ten times a second, and blanked when the work ends so the command's own
 * output starts on a clean line. The library never prints: it reports
 * through a commsched_progress_fn (commsched/status.h), which
 * cli_progress_fn adapts to this. */
#ifndef COMMSCHED_CLI_PROGRESS_H
#define COMMSCHED_CLI_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "commsched/graph.h"

typedef struct cli_progress {
    int on;            /* drawing: standard error is a terminal (or the
                          caller set it after cli_progress_begin) */
    char label[64];    /* "commsched generate: building" */
    const char *unit;  /* "nodes", "passes" (static); NULL: bytes, in MiB */
    uint64_t total;    /* 0: unknown (no bar, no percentage) */
    uint64_t done;
    double next;       /* cli_now() before which nothing is redrawn */
    size_t shown;      /* characters of the line now on the terminal */
    size_t width;      /* the terminal's columns: a line never wraps */
} cli_progress;

/* Starts a stage (after cli_progress_end of any earlier one), on when
 * standard error is a terminal. The label is formatted (and cut to fit);
 * unit must be a static string or NULL. Draws the first frame at once, so
 * even a stage that only waits on one library call says what it does. */
void cli_progress_begin(cli_progress *p, const char *unit, uint64_t total,
                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* `done` units finished; redrawn when 100 ms have passed since the last
 * frame, so a caller may report as often as it likes. */
void cli_progress_set(cli_progress *p, uint64_t done);
/* Blanks the line when one was drawn; the reporter may begin again. */
void cli_progress_end(cli_progress *p);

/* A commsched_progress_fn (commsched/status.h): arg is a begun
 * cli_progress; total replaces the stage's total. */
void cli_progress_fn(void *arg, uint64_t done, uint64_t total);

/* A stream passing every byte on to `to`, counting them into p
 * (progress.c's counting stream). */
typedef struct counted {
    FILE *to;
    cli_progress *p;
    uint64_t n;
} counted;

/* Writes g as cli_out_open + commsched_graph_save_stream + commit (abort on
 * any failure, so no partial or temporary file is left), drawing
 * "commsched SUB: writing FILE  N MiB" while the bytes go out. order and
 * schedule_json as for commsched_graph_save_stream. Returns 0, or the exit
 * code after printing why (errors name out_path). */
int cli_write_graph(const commsched_graph *g, const uint32_t *order,
                    const char *schedule_json, const char *out_path,
                    const char *sub);

#endif /* COMMSCHED_CLI_PROGRESS_H */
