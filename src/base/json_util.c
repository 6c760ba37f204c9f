/* commsched — jansson helpers shared by every JSON reader (json_util.h). */
#include "json_util.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
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

commsched_status cs_json_load_file(const char *path, json_t **root,
                                   commsched_error *err)
{
    json_error_t je;
    /* Opened here, not by json_load_file, so an unopenable file reads
     * like every other unopenable input ("cannot open: ..."). */
    FILE *f = cs_fopen_input(path);
    *root = NULL;
    if (!f)
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot open: %s", strerror(errno));
    *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (*root)
        return COMMSCHED_OK;
    /* A read error is a line-less error. */
    if (je.line <= 0)
        return commsched_error_set(err, COMMSCHED_EIO, NULL, "%s", je.text);
    return cs_json_syntax_error(&je, err);
}

const char *cs_json_join(char *buf, size_t size, const char *path,
                         const char *key)
{
    snprintf(buf, size, "%s%s%s", path, path[0] ? "." : "", key);
    return buf;
}

commsched_status cs_json_check_keys(const json_t *obj, const char *path,
                                    const char *const *allowed,
                                    commsched_error *err)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok) {
            char p[COMMSCHED_ERROR_PATH_LENGTH];
            return commsched_error_set(err, COMMSCHED_ESCHEMA,
                                       cs_json_join(p, sizeof p, path, key),
                                       "unknown field \"%s\"", key);
        }
    }
    return COMMSCHED_OK;
}

commsched_status cs_json_get_number(const json_t *v, const char *path,
                                    double *out, commsched_error *err)
{
    if (!json_is_number(v))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, path,
                                   "expected a number, got %s",
                                   cs_json_type_name(v));
    *out = json_number_value(v);
    return COMMSCHED_OK;
}
