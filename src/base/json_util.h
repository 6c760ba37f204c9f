/* commsched — jansson helpers every reader of JSON shares (the graph
 * loader, device profiles). Not installed. */
#ifndef COMMSCHED_JSON_UTIL_H
#define COMMSCHED_JSON_UTIL_H

#include <jansson.h>

#include "commsched/status.h"

/* "an object", "a string", ... for "expected X, got <type>" messages, so
 * every loader words type errors the same way. */
const char *cs_json_type_name(const json_t *v);

/* jansson's failure to parse a text as the error every loader reports:
 * EPARSE at line:column (columns are 1-based: jansson's 0 at the start of
 * a line, an empty text included, becomes 1); a text that starts with a
 * UTF-8 byte order mark is told so in words, not quoted as the invisible
 * character; jansson's allocation failures (its out-of-memory code, or no
 * message at all) are ENOMEM "out of memory"; a file it could not open is
 * EIO. Returns the status. */
commsched_status cs_json_syntax_error(const json_error_t *je,
                                      commsched_error *err);

/* "path.key" into buf (just "key" at the top, path ""); returns buf. */
/* Parses the JSON file at path ("-": standard input) into *root (the
 * caller's to json_decref), duplicate keys refused. EIO "cannot open:
 * ..." or a read error without a line; the syntax error located as
 * cs_json_syntax_error locates it. O(file size). */
commsched_status cs_json_load_file(const char *path, json_t **root,
                                   commsched_error *err);

const char *cs_json_join(char *buf, size_t size, const char *path,
                         const char *key);

/* ESCHEMA at "path.key" ("unknown field \"key\"") for the first key of
 * obj not in `allowed` (NULL-terminated): the strict readers' rule that a
 * misspelt field never silently keeps a default. O(keys x allowed). */
commsched_status cs_json_check_keys(const json_t *obj, const char *path,
                                    const char *const *allowed,
                                    commsched_error *err);

/* A number at `path` into *out; ESCHEMA "expected a number, got ..."
 * otherwise. Ranges are the caller's. */
commsched_status cs_json_get_number(const json_t *v, const char *path,
                                    double *out, commsched_error *err);

/* The message cs_json_syntax_error gives a text that starts with a byte
 * order mark (the trace readers word it alike). */
#define CS_JSON_BOM_TEXT                                                       \
    "the text starts with a UTF-8 byte order mark (bytes EF BB BF), which "   \
    "JSON does not allow: save the file without it"

#endif /* COMMSCHED_JSON_UTIL_H */
