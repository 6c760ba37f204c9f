/* JSON trace files as profilers write them: plain or gzip-compressed
 * (told apart by content, through zlib), read whole and parsed by
 * jansson. Shared by the Kineto and PyTorch ET importers. */
#ifndef COMMSCHED_TRACE_JSON_H
#define COMMSCHED_TRACE_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "import_internal.h"

/* What parsing a trace may take when the options give no --max-memory:
 * jansson's tree of a Kineto trace is about ten times its text. */
#define TRACE_DEFAULT_MAX_MEMORY ((uint64_t)2 << 30)

/* Loads FILE ("-": standard input). The text is read twice (a pipe once,
 * kept in memory): first counting what jansson's tree of it will take,
 * then parsed, so a trace whose tree would pass max_memory bytes (0: the
 * default) is refused before it is built, naming the limit (exit 1).
 * A .gz is checked whole (a cut trailer is an error). On failure records a
 * located error ("FILE:LINE:COL: ...", the line of the decompressed text
 * for a .gz) in d and returns its code; on success 0
 * and *out (caller decrefs). */
int trace_json_load(import_diag *d, const char *path, uint64_t max_memory,
                    json_t **out);
/* The same from an open file descriptor (taken over: closed when done),
 * read from where it stands; `file` names it in messages. */
int trace_json_load_fd(import_diag *d, int fd, const char *file,
                       uint64_t max_memory, json_t **out);

/* Records jansson's failure to parse FILE as every JSON reader words it
 * (src/base/json_util.c, cs_json_syntax_error, for the library's readers):
 * FILE:LINE:COL with 1-based columns and `where` appended, a byte order
 * mark said in words; returns IMPORT_INPUT, or IMPORT_RUNTIME after "out of
 * memory" when jansson's allocation failed. */
int trace_json_syntax_error(import_diag *d, const char *file,
                            const json_error_t *je, const char *where);

/* Records "FILE: <path>: msg" (ESCHEMA) and returns IMPORT_INPUT. */
int trace_fail(import_diag *d, const char *file, const char *path,
               const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Bytes per element of a profiler's scalar type name ("float", "c10::Half",
 * "long int", "unsigned char", ...); 0 when unknown. dtype: the matching
 * commsched dtype (NONE when none). */
#include "commsched/graph.h"
unsigned trace_type_size(const char *name, commsched_dtype *dtype);

/* A JSON number as a double (integers too); -1 when not a number. */
double trace_number(const json_t *v);

#endif /* COMMSCHED_TRACE_JSON_H */
