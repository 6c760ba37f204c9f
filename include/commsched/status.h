/* commsched — status codes and the caller-provided error struct.
 *
 * Every fallible public function returns a commsched_status and writes its
 * results through out-parameters. When it fails it also fills the optional
 * commsched_error the caller passed (NULL is allowed). The first error wins:
 * once err->status is not COMMSCHED_OK, later failures leave it unchanged, so
 * the message always names the root cause (jansson's json_error_t rule).
 */
#ifndef COMMSCHED_STATUS_H
#define COMMSCHED_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "commsched/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro list: the enum, commsched_status_str() and commsched_status_name()
 * are generated from it, so they can never disagree. */
#define COMMSCHED_STATUS_MAP(XX)                                               \
    XX(OK, "success")                                                          \
    XX(ENOMEM, "out of memory")                                                \
    XX(EIO, "input/output error")                                              \
    XX(EPARSE, "malformed JSON")                                               \
    XX(ESCHEMA, "graph does not follow the format")                            \
    XX(EGRAPH, "invalid graph")                                                \
    XX(ECYCLE, "dependency cycle")                                             \
    XX(EORDER, "node order is not topological")                                \
    XX(EINVAL, "invalid argument")                                             \
    XX(EANALYSIS, "graph analysis failed")                                     \
    XX(EINTERNAL, "internal invariant violated")                               \
    XX(EUNSUPPORTED, "not supported by this build")                            \
    XX(ENODEV, "no usable device")                                             \
    XX(ELIBRARY, "a runtime library call failed")

typedef enum commsched_status {
#define COMMSCHED_STATUS_ENUM_(code, text) COMMSCHED_##code,
    COMMSCHED_STATUS_MAP(COMMSCHED_STATUS_ENUM_)
#undef COMMSCHED_STATUS_ENUM_
} commsched_status;

#define COMMSCHED_ERROR_PATH_LENGTH 160
#define COMMSCHED_ERROR_TEXT_LENGTH 512

/* Where and why something failed. Caller-allocated (usually on the stack);
 * initialise with commsched_error_clear() or `= {0}`.
 * - syntax errors set line and column (1-based, from jansson) and leave path
 *   empty;
 * - semantic errors set path to a JSON path such as "nodes[12].inputs[1]"
 *   and leave line and column 0. */
typedef struct commsched_error {
    commsched_status status;                  /* COMMSCHED_OK while no error */
    int line;                                 /* 0 when unknown */
    int column;                               /* 0 when unknown */
    char path[COMMSCHED_ERROR_PATH_LENGTH];   /* "" when not a JSON location */
    char text[COMMSCHED_ERROR_TEXT_LENGTH];   /* human-readable message */
} commsched_error;

/* A static English description of a status ("out of memory"). Never NULL;
 * unknown values give "unknown status". */
COMMSCHED_EXPORT const char *commsched_status_str(commsched_status status);

/* The enum's name without prefix ("ENOMEM"). Never NULL. */
COMMSCHED_EXPORT const char *commsched_status_name(commsched_status status);

/* Reset an error struct to "no error". NULL is allowed. */
COMMSCHED_EXPORT void commsched_error_clear(commsched_error *err);

/* Record an error unless one is already recorded (first error wins). path may
 * be NULL. Returns status so callers can `return commsched_error_set(...)`.
 * NULL err is allowed: the status is still returned. */
COMMSCHED_EXPORT commsched_status commsched_error_set(commsched_error *err,
                                                      commsched_status status,
                                                      const char *path,
                                                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Formats the error as one line for a user: "FILE:LINE:COL: text",
 * "FILE: path: text" or "FILE: text" (file may be NULL). Writes at most size
 * bytes including the terminating NUL and returns buf. */
COMMSCHED_EXPORT char *commsched_error_format(const commsched_error *err,
                                              const char *file, char *buf,
                                              unsigned long size);

/* "Did you mean": which entry of a table of names the user probably meant
 * by `word` (its first len bytes), for an error about an unknown name
 * (a pass, a knob, a subcommand, an option). The nearest name by edit
 * distance (insertions, deletions, substitutions and swaps of adjacent
 * characters, ASCII case ignored), when it is close enough to be a
 * misspelling: at most one edit per three characters of word (at least
 * one); a name that word begins (word of three characters or more) also
 * counts as one edit. Ties go to the earlier entry. Returns its index, or
 * (size_t)-1 when no name is that close (or word is empty or longer than
 * 64 bytes).
 *
 * The table is read in place: `names` points at the first entry's name and
 * entries are `stride` bytes apart, so a plain array of strings (stride
 * sizeof(char *)) or one field of an array of structs
 * (&table[0].name, sizeof table[0]) both work. NULL names are skipped.
 * Never fails; borrows everything for the call only. O(count x len x 64):
 * one edit-distance table per name. */
COMMSCHED_EXPORT size_t commsched_name_suggest(const char *word, size_t len,
                                               const char *const *names,
                                               size_t count, size_t stride);

/* The length of the longest prefix of the NUL-terminated UTF-8 text s
 * that is at most max bytes and ends between two characters (a malformed
 * byte counts as one): where to cut a name so that what is printed stays
 * valid UTF-8. strlen(s) when s fits. Never fails; O(min(strlen(s),
 * max)). The library cuts its own texts (error messages, reports, traces)
 * the same way. */
COMMSCHED_EXPORT size_t commsched_utf8_cut(const char *s, size_t max);

/* 1 when the NUL-terminated s is well-formed UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF): what a graph's names must be.
 * Never fails; O(strlen(s)). */
COMMSCHED_EXPORT int commsched_utf8_valid(const char *s);

/* Reads the whole file `path` ("-": standard input, read to its end and
 * left open) by the one rule every commsched reader follows: *text is
 * the content with a NUL after it (which the content may hold too: *len,
 * when len is not NULL, counts the bytes without the final NUL); free it
 * with commsched_free. A directory is refused (EISDIR). On failure *text
 * is NULL and err says why, worded alike for every input:
 * COMMSCHED_EIO "cannot open: <strerror>" or "cannot read: <strerror>",
 * COMMSCHED_ENOMEM "out of memory". O(file size). */
COMMSCHED_EXPORT commsched_status commsched_read_file(const char *path,
                                                      char **text,
                                                      size_t *len,
                                                      commsched_error *err);

/* Where writing the file `path` must put its bytes, by the one rule every
 * commsched writer follows (the CLI's -o, export's files, the Python
 * binding's Graph.save; docs/FORMAT.md "Writing files"): a symlink is
 * followed to its end (a dangling one: the file it names, created there;
 * a loop: ELOOP), as a shell's `>` follows it, so the link stays a link;
 * an existing file that is not a regular file (a device, a FIFO) and the
 * names of open descriptors (/dev/stdout, /dev/fd/N) are written in place
 * (*in_place = 1); a regular file the caller may not write is refused
 * (EACCES), as `>` refuses it. Otherwise the bytes go to a temporary file
 * beside *target, renamed over it when complete: *target (size bytes) is
 * that file, *exists says whether it exists and *mode is the mode to give
 * the temporary (the file's own, else 0666 less the umask). "-" (standard
 * output) is the caller's business. On failure returns COMMSCHED_EIO with
 * "cannot write: <strerror>" in err (errno set); never touches the file.
 * O(links followed). */
COMMSCHED_EXPORT commsched_status commsched_output_target(
    const char *path, char *target, unsigned long size, int *in_place,
    int *exists, unsigned *mode, commsched_error *err);

/* Progress of a long call: `done` of `total` units of its work have
 * finished (done <= total, and done never decreases within one call).
 * The calls that take one (commsched_tune, a runtime's execute: the
 * `progress` and `progress_arg` fields of their options) invoke it from
 * one of the threads doing the work, never two invocations at once, and
 * print nothing themselves: showing progress is the caller's business.
 * NULL (the options' default) reports nothing. The callback should return
 * quickly and must not call the library on the objects the call uses. */
typedef void (*commsched_progress_fn)(void *arg, uint64_t done,
                                      uint64_t total);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_STATUS_H */
