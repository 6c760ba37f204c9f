/* The importers' shared plumbing: how a failure, a note and the reading
 * progress leave an importer (through the caller's commsched_error and
 * the options' callbacks: the library prints nothing), and the file
 * readers every importer uses.
 *
 * Inside the layer a step returns an int: 0, or IMPORT_INPUT (the file or
 * an option is wrong) / IMPORT_RUNTIME (out of memory, a limit, a system
 * failure) once the error is recorded; the public entry points turn it
 * into the recorded status. */
#ifndef COMMSCHED_IMPORT_INTERNAL_H
#define COMMSCHED_IMPORT_INTERNAL_H

#include <stdio.h>

#include "commsched/import.h"

enum { IMPORT_OK = 0, IMPORT_RUNTIME = 1, IMPORT_INPUT = 2 };

/* Where one import reports. err always points somewhere (the entry
 * points give a local one when the caller gave none). */
typedef struct import_diag {
    commsched_error *err;
    const commsched_import_options *o;
} import_diag;

/* The code a status stands for: bad input (EIO, EPARSE, ESCHEMA, EGRAPH,
 * ECYCLE, EORDER, EINVAL) IMPORT_INPUT, anything else IMPORT_RUNTIME. */
int import_code(commsched_status st);

/* Records the whole message (file and location included, formatted by
 * the caller) under status st; returns import_code(st). First error
 * wins, as everywhere. */
int import_fail(import_diag *d, commsched_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "out of memory" (ENOMEM); returns IMPORT_RUNTIME. */
int import_oom(import_diag *d);
/* Records a library error located within `file`, as
 * commsched_error_format(inner, file) words it; returns its code. */
int import_report(import_diag *d, const char *file,
                  const commsched_error *inner);

/* A note or warning in the making: fprintf into m, then import_say_end
 * hands the text to the options' callback (nothing when there is none,
 * or when memory ran out: a note is never worth failing for). */
typedef struct import_say {
    FILE *m;
    char *text;
    size_t len;
} import_say;
/* NULL when no callback listens (the caller then skips the fprintfs:
 * fprintf(NULL) is not allowed, so use import_sayf's guard). */
FILE *import_say_begin(import_say *s, const import_diag *d);
void import_say_end(import_say *s, const import_diag *d,
                    commsched_import_level level, const char *file);
/* One-shot: the whole text from a format. */
void import_sayf(const import_diag *d, commsched_import_level level,
                 const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The name a path has in messages: "<stdin>" for "-". */
const char *import_file_name(const char *path);

/* Opens an input file for reading ("-": stdin), refusing a directory;
 * on failure records "FILE: cannot open: <strerror>" (EIO) and returns
 * NULL. */
FILE *import_open_input(import_diag *d, const char *path);
/* Reads a whole input file ("-": stdin) into a NUL-terminated malloc'ed
 * buffer (*len: its length without the NUL; len may be NULL). On failure
 * records why (cannot open, cannot read, out of memory) and returns
 * NULL. O(file size). */
char *import_read_file(import_diag *d, const char *path, size_t *len);

/* The size of the regular file open on fd; 0 for a pipe, a terminal or
 * an error (the reading progress's total). */
uint64_t import_file_size(int fd);
/* Reports `done` bytes of `total` to the options' progress callback. */
void import_progress(const import_diag *d, uint64_t done, uint64_t total);

/* "1.50 GiB", "512 B" into buf (a limit's message). */
const char *import_bytes(double bytes, char *buf, size_t size);

/* The defaults when an entry point is given no options. */
const commsched_import_options *import_opts(const commsched_import_options *o,
                                            commsched_import_options *def);

/* A wait node's spec (kind, op "wait", no runtime, flops or bytes given:
 * the cost model's) reading `inputs` and writing `outputs`: the one shape
 * of every wait an importer makes. Borrows everything. */
commsched_node_spec import_wait_spec(const char *name,
                                     const char *const *inputs,
                                     size_t n_inputs,
                                     const commsched_output_spec *outputs,
                                     size_t n_outputs);
/* Adds "<coll>.wait", the wait that completes collective `coll` (node and
 * output named alike): its output is an alias of the collective's. How
 * the trace importers (Chakra, Kineto, PyTorch ET) place their waits.
 * Errors go to err (the builder reports them at finish). */
void import_add_wait(commsched_builder *b, const char *coll,
                     commsched_error *err);

/* The importers behind the public entry points (import_api.c): each
 * reads path ("-": standard input) and returns 0 with *out, or the code
 * after recording why in d. o is never NULL. */
int import_astra(import_diag *d, const char *path,
                 const commsched_import_options *o, commsched_graph **out);
int import_chakra(import_diag *d, const char *path,
                  const commsched_import_options *o, commsched_graph **out);
int import_kineto(import_diag *d, const char *path,
                  const commsched_import_options *o, commsched_graph **out);
int import_pytorch_et(import_diag *d, const char *path,
                      const commsched_import_options *o,
                      commsched_graph **out);
int import_hlo(import_diag *d, const char *path,
               const commsched_import_options *o, commsched_graph **out);

#endif /* COMMSCHED_IMPORT_INTERNAL_H */
