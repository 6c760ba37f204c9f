/* commsched — jansson helpers shared by every JSON reader (json_util.h). */
#include "json_util.h"

#include <string.h>

const char *cs_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

commsched_status cs_json_syntax_error(const json_error_t *je,
                                      commsched_error *err)
{
    enum json_error_code code = json_error_code(je);
    if (code == json_error_cannot_open_file)
        return commsched_error_set(err, COMMSCHED_EIO, NULL, "%s", je->text);
    /* jansson returns NULL without a message only when its lexer cannot
     * allocate its buffer (lex_init). */
    if (code == json_error_out_of_memory || je->text[0] == '\0')
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    int bom = je->line == 1 && je->position <= 3 &&
              strstr(je->text, "near '\xEF\xBB\xBF") != NULL;
    commsched_status st =
        bom ? commsched_error_set(err, COMMSCHED_EPARSE, NULL, "%s",
                                  CS_JSON_BOM_TEXT)
            : commsched_error_set(err, COMMSCHED_EPARSE, NULL, "%s",
                                  je->text);
    if (err && err->status == COMMSCHED_EPARSE && err->line == 0 &&
        je->line > 0) {
        err->line = je->line;
        err->column = bom || je->column < 1 ? 1 : je->column;
    }
    return st;
}
