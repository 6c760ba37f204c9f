/* commsched — what the library's jansson files share (graph_json.c,
 * device.c). Not installed. */
#ifndef COMMSCHED_JSON_INTERNAL_H
#define COMMSCHED_JSON_INTERNAL_H

#include <jansson.h>

/* "an object", "a string", ... for "expected X, got <type>" messages, so
 * every loader words type errors the same way. */
const char *cs_json_type_name(const json_t *v);

#endif /* COMMSCHED_JSON_INTERNAL_H */
