/* commsched — jansson helpers every reader of JSON shares (the graph
 * loader, device profiles). Not installed. */
#ifndef COMMSCHED_JSON_UTIL_H
#define COMMSCHED_JSON_UTIL_H

#include <jansson.h>

/* "an object", "a string", ... for "expected X, got <type>" messages, so
 * every loader words type errors the same way. */
const char *cs_json_type_name(const json_t *v);

#endif /* COMMSCHED_JSON_UTIL_H */
