/* commsched — the jansson boundary for graphs: format v1 load and save.
 *
 * Loading checks JSON types and field names here (unknown fields are errors,
 * so a misspelt "runtime" never silently falls back to the cost model), then
 * hands every value to the builder, which owns the semantic checks. Errors
 * carry jansson's line:column for syntax and a JSON path for the rest.
 *
 * Saving streams: one line per top-level field and one compact line per
 * node, so a million-node graph never exists twice in memory and the files
 * diff well. */
#include "graph_internal.h"

#include <jansson.h>

#include "fmt_g.h"
#include "json_util.h"
#include "json_writer.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "commsched-graph"
#define FORMAT_VERSION 1

static commsched_status type_error(commsched_error *err, const char *path,
                                   const char *expected, const json_t *v)
{
    return commsched_error_set(err, COMMSCHED_ESCHEMA, path,
                               "expected %s, got %s", expected,
                               cs_json_type_name(v));
}

/* An object's fields by the index of their key in a NULL-terminated
 * table of the keys the format allows. One pass over the object's keys
 * both rejects unknown ones and files the values, so the getters below
 * find a field without hashing its name again. */
#define MAX_KEYS 16

typedef struct fields {
    const char *const *keys;
    json_t *v[MAX_KEYS];
} fields;

static size_t key_index(const char *const *keys, const char *key)
{
    size_t i = 0;
    while (keys[i] && (keys[i][0] != key[0] || strcmp(keys[i], key) != 0))
        i++;
    return i;
}

static commsched_status collect(const json_t *obj, const char *path,
                                const char *const *allowed, fields *f,
                                commsched_error *err)
{
    const char *key;
    json_t *val;
    f->keys = allowed;
    for (size_t i = 0; allowed[i]; i++)
        f->v[i] = NULL;
    json_object_foreach((json_t *)obj, key, val) {
        size_t i = key_index(allowed, key);
        if (!allowed[i]) {
            char p[COMMSCHED_ERROR_PATH_LENGTH];
            if (path[0])
                snprintf(p, sizeof p, "%s.%s", path, key);
            else
                snprintf(p, sizeof p, "%s", key);
            return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                                       "unknown field \"%s\"", key);
        }
        f->v[i] = val;
    }
    return COMMSCHED_OK;
}

/* The value of a field, NULL when absent. The callers name keys with the
 * same literals as the tables, which the compiler stores once, so the
 * pointer comparison almost always decides. */
static json_t *lookup(const fields *f, const char *key)
{
    for (size_t i = 0; f->keys[i]; i++)
        if (f->keys[i] == key)
            return f->v[i];
    size_t i = key_index(f->keys, key);
    return f->keys[i] ? f->v[i] : NULL;
}

/* "<a><b>[<i>]", e.g. "nodes[12]" or "nodes[12].outputs[0]": formatted for
 * every node, so without printf. Truncates to size. */
static const char *index_path(char *buf, size_t size, const char *a,
                              const char *b, size_t i)
{
    char digits[CS_FMT_G_SIZE];
    size_t len = 0;
    cs_fmt_u64(digits, i);
    for (const char *s = a; *s && len + 1 < size; s++)
        buf[len++] = *s;
    for (const char *s = b; *s && len + 1 < size; s++)
        buf[len++] = *s;
    if (len + 1 < size)
        buf[len++] = '[';
    for (const char *s = digits; *s && len + 1 < size; s++)
        buf[len++] = *s;
    if (len + 1 < size)
        buf[len++] = ']';
    buf[len] = '\0';
    return buf;
}

/* "<path>.<key>" (or "<key>" at the top level). Only called on the error
 * path: formatting every field's path eagerly dominated loading time. */
static const char *join(char *buf, size_t size, const char *path,
                        const char *key)
{
    snprintf(buf, size, "%s%s%s", path, path[0] ? "." : "", key);
    return buf;
}

/* A field of an object: *v is NULL when it is absent, which is an error
 * only when required. */
static commsched_status field(const fields *obj, const char *path,
                              const char *key, int required, json_t **v,
                              commsched_error *err)
{
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    *v = lookup(obj, key);
    if (!*v && required)
        return commsched_error_set(err, COMMSCHED_ESCHEMA,
                                   join(p, sizeof p, path, key),
                                   "missing required field");
    return COMMSCHED_OK;
}

/* A type or range error at "<path>.<key>". */
static commsched_status bad(commsched_error *err, const char *path,
                            const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static commsched_status bad(commsched_error *err, const char *path,
                            const char *key, const char *fmt, ...)
{
    char p[COMMSCHED_ERROR_PATH_LENGTH], text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return commsched_error_set(err, COMMSCHED_ESCHEMA,
                               join(p, sizeof p, path, key), "%s", text);
}

/* Field getters: absent fields leave the default and succeed unless
 * required. Each reports "<path>.<key>: expected ..." on a wrong type. */
static commsched_status get_string(const fields *obj, const char *path,
                                   const char *key, int required,
                                   const char **out, commsched_error *err)
{
    json_t *v;
    commsched_status st = field(obj, path, key, required, &v, err);
    if (st != COMMSCHED_OK || !v)
        return st;
    if (!json_is_string(v))
        return bad(err, path, key, "expected a string, got %s",
                   cs_json_type_name(v));
    if (json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v))
        return bad(err, path, key, "expected a non-empty string without NUL");
    *out = json_string_value(v);
    return COMMSCHED_OK;
}

static commsched_status get_size(const fields *obj, const char *path,
                                 const char *key, int required, int64_t *out,
                                 commsched_error *err)
{
    json_t *v;
    commsched_status st = field(obj, path, key, required, &v, err);
    if (st != COMMSCHED_OK || !v)
        return st;
    if (json_is_real(v))
        return bad(err, path, key, "expected a non-negative integer, got %g",
                   json_real_value(v));
    if (!json_is_integer(v))
        return bad(err, path, key,
                   "expected a non-negative integer, got %s",
                   cs_json_type_name(v));
    if (json_integer_value(v) < 0)
        return bad(err, path, key, "expected a non-negative integer, got %lld",
                   (long long)json_integer_value(v));
    *out = (int64_t)json_integer_value(v);
    return COMMSCHED_OK;
}

static commsched_status get_number(const fields *obj, const char *path,
                                   const char *key, double *out,
                                   commsched_error *err)
{
    json_t *v;
    commsched_status st = field(obj, path, key, 0, &v, err);
    if (st != COMMSCHED_OK || !v)
        return st;
    if (!json_is_number(v))
        return bad(err, path, key, "expected a non-negative number, got %s",
                   cs_json_type_name(v));
    double d = json_number_value(v);
    if (!(d >= 0) || isinf(d))
        return bad(err, path, key, "expected a non-negative number, got %g",
                   d);
    *out = d;
    return COMMSCHED_OK;
}

static commsched_status get_bool(const fields *obj, const char *path,
                                 const char *key, int *out,
                                 commsched_error *err)
{
    json_t *v;
    commsched_status st = field(obj, path, key, 0, &v, err);
    if (st != COMMSCHED_OK || !v)
        return st;
    if (!json_is_boolean(v))
        return bad(err, path, key, "expected a boolean, got %s",
                   cs_json_type_name(v));
    *out = json_is_true(v) ? 1 : 0;
    return COMMSCHED_OK;
}

static commsched_status get_array(const fields *obj, const char *path,
                                  const char *key, int required,
                                  const json_t **out, commsched_error *err)
{
    json_t *v;
    commsched_status st = field(obj, path, key, required, &v, err);
    *out = NULL;
    if (st != COMMSCHED_OK || !v)
        return st;
    if (!json_is_array(v))
        return bad(err, path, key, "expected an array, got %s",
                   cs_json_type_name(v));
    *out = v;
    return COMMSCHED_OK;
}

/* Scratch vectors reused across nodes so loading allocates O(1) per node. */
typedef struct scratch {
    const char **names;
    size_t cap_names;
    commsched_output_spec *outs;
    size_t cap_outs;
    const json_t **from; /* per output of the node: its "from", or NULL */
    size_t cap_from;
} scratch;

/* An array of names -> names[base .. base + n). */
static commsched_status get_names(const fields *node, const char *path,
                                  const char *key, scratch *s, size_t base,
                                  size_t *n, commsched_error *err)
{
    const json_t *arr;
    commsched_status st = get_array(node, path, key, 0, &arr, err);
    *n = 0;
    if (st != COMMSCHED_OK || !arr)
        return st;
    size_t len = json_array_size(arr);
    if (cs_grow((void **)&s->names, &s->cap_names, base + len,
                sizeof *s->names) != 0)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (size_t k = 0; k < len; k++) {
        json_t *v = json_array_get(arr, k);
        if (!json_is_string(v)) {
            char p[COMMSCHED_ERROR_PATH_LENGTH];
            snprintf(p, sizeof p, "%s.%s[%zu]", path, key, k);
            return type_error(err, p, "a buffer or node name", v);
        }
        s->names[base + k] = json_string_value(v);
    }
    *n = len;
    return COMMSCHED_OK;
}

static const char *const node_keys[] = {
    "name",  "kind",      "op",         "group",      "async",
    "dtype", "reduce_op", "inputs",     "outputs",    "after",
    "after_fake", "runtime_ns", "flops", "bytes",     "gemm_like", NULL};
static const char *const output_keys[] = {"name", "size", "alias_of", "from",
                                          NULL};

/* An output's "from": an array of buffer names, or absent (NULL). */
static commsched_status get_from(const fields *fo, const char *path,
                                 const json_t **out, commsched_error *err)
{
    commsched_status st = get_array(fo, path, "from", 0, out, err);
    for (size_t m = 0; st == COMMSCHED_OK && *out && m < json_array_size(*out);
         m++) {
        json_t *v = json_array_get(*out, m);
        if (!json_is_string(v)) {
            char p[COMMSCHED_ERROR_PATH_LENGTH];
            return type_error(err, index_path(p, sizeof p, path, ".from", m),
                              "a buffer name", v);
        }
    }
    return st;
}

static commsched_status parse_outputs(const fields *node, const char *path,
                                      scratch *s, size_t *n,
                                      commsched_error *err)
{
    const json_t *arr;
    commsched_status st = get_array(node, path, "outputs", 0, &arr, err);
    *n = 0;
    if (st != COMMSCHED_OK || !arr)
        return st;
    size_t len = json_array_size(arr);
    if (cs_grow((void **)&s->outs, &s->cap_outs, len, sizeof *s->outs) != 0 ||
        cs_grow((void **)&s->from, &s->cap_from, len, sizeof *s->from) != 0)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    for (size_t k = 0; k < len; k++) {
        char p[COMMSCHED_ERROR_PATH_LENGTH];
        index_path(p, sizeof p, path, ".outputs", k);
        json_t *o = json_array_get(arr, k);
        fields fo;
        if (!json_is_object(o))
            return type_error(err, p, "an object", o);
        commsched_output_spec *spec = &s->outs[k];
        memset(spec, 0, sizeof *spec);
        spec->size = -1;
        if ((st = collect(o, p, output_keys, &fo, err)) != COMMSCHED_OK ||
            (st = get_string(&fo, p, "name", 1, &spec->name, err)) !=
                COMMSCHED_OK ||
            (st = get_string(&fo, p, "alias_of", 0, &spec->alias_of, err)) !=
                COMMSCHED_OK ||
            (st = get_size(&fo, p, "size", 0, &spec->size, err)) !=
                COMMSCHED_OK ||
            (st = get_from(&fo, p, &s->from[k], err)) != COMMSCHED_OK)
            return st;
        if (spec->alias_of && lookup(&fo, "size"))
            return commsched_error_set(
                err, COMMSCHED_ESCHEMA, p,
                "an alias has no size of its own (drop \"size\" or "
                "\"alias_of\")");
        if (!spec->alias_of && spec->size < 0)
            return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                                       "an output needs a size or alias_of");
    }
    *n = len;
    return COMMSCHED_OK;
}

static commsched_status parse_kind(const char *s, const char *path,
                                   commsched_node_kind *out,
                                   commsched_error *err)
{
    for (int k = COMMSCHED_NODE_COMPUTE; k <= COMMSCHED_NODE_WAIT; k++)
        if (strcmp(s, commsched_node_kind_str((commsched_node_kind)k)) == 0) {
            *out = (commsched_node_kind)k;
            return COMMSCHED_OK;
        }
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    snprintf(p, sizeof p, "%s.kind", path);
    return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                               "unknown kind \"%s\" (expected compute, "
                               "collective or wait)",
                               s);
}

static commsched_status parse_dtype(const char *s, const char *path,
                                    commsched_dtype *out,
                                    commsched_error *err)
{
    for (int d = 1; d < COMMSCHED_DTYPE_COUNT; d++)
        if (strcmp(s, commsched_dtype_str((commsched_dtype)d)) == 0) {
            *out = (commsched_dtype)d;
            return COMMSCHED_OK;
        }
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    snprintf(p, sizeof p, "%s.dtype", path);
    return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                               "unknown dtype \"%s\"", s);
}

static commsched_status parse_reduce_op(const char *s, const char *path,
                                        commsched_reduce_op *out,
                                        commsched_error *err)
{
    for (int r = 1; r < COMMSCHED_REDUCE_OP_COUNT; r++)
        if (strcmp(s, commsched_reduce_op_str((commsched_reduce_op)r)) == 0) {
            *out = (commsched_reduce_op)r;
            return COMMSCHED_OK;
        }
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    snprintf(p, sizeof p, "%s.reduce_op", path);
    return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                               "unknown reduce op \"%s\" (expected sum, avg, "
                               "product, min, max or premul_sum)",
                               s);
}

static commsched_status parse_node(commsched_builder *b, const json_t *node,
                                   size_t i, scratch *s, commsched_error *err)
{
    char path[64];
    index_path(path, sizeof path, "", "nodes", i);
    if (!json_is_object(node))
        return type_error(err, path, "an object", node);
    commsched_node_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.runtime_ns = spec.flops = spec.bytes = -1.0;
    const char *kind = NULL, *dtype = NULL, *reduce_op = NULL;
    int is_async = 1;
    size_t n_in, n_after, n_fake;
    commsched_status st;
    fields fs, *f = &fs;
    if ((st = collect(node, path, node_keys, f, err)) != COMMSCHED_OK ||
        (st = get_string(f, path, "name", 1, &spec.name, err)) !=
            COMMSCHED_OK ||
        (st = get_string(f, path, "kind", 1, &kind, err)) != COMMSCHED_OK ||
        (st = parse_kind(kind, path, &spec.kind, err)) != COMMSCHED_OK ||
        (st = get_string(f, path, "op", 0, &spec.op, err)) !=
            COMMSCHED_OK ||
        (st = get_string(f, path, "group", 0, &spec.group, err)) !=
            COMMSCHED_OK ||
        (st = get_bool(f, path, "async", &is_async, err)) !=
            COMMSCHED_OK ||
        (st = get_string(f, path, "dtype", 0, &dtype, err)) !=
            COMMSCHED_OK ||
        (st = get_string(f, path, "reduce_op", 0, &reduce_op, err)) !=
            COMMSCHED_OK ||
        (st = get_names(f, path, "inputs", s, 0, &n_in, err)) !=
            COMMSCHED_OK ||
        (st = get_names(f, path, "after", s, n_in, &n_after, err)) !=
            COMMSCHED_OK ||
        (st = get_names(f, path, "after_fake", s, n_in + n_after, &n_fake,
                        err)) != COMMSCHED_OK ||
        (st = parse_outputs(f, path, s, &spec.n_outputs, err)) !=
            COMMSCHED_OK ||
        (st = get_number(f, path, "runtime_ns", &spec.runtime_ns, err)) !=
            COMMSCHED_OK ||
        (st = get_number(f, path, "flops", &spec.flops, err)) !=
            COMMSCHED_OK ||
        (st = get_number(f, path, "bytes", &spec.bytes, err)) !=
            COMMSCHED_OK ||
        (st = get_bool(f, path, "gemm_like", &spec.gemm_like, err)) !=
            COMMSCHED_OK)
        return st;
    if (lookup(f, "async") &&
        spec.kind != COMMSCHED_NODE_COLLECTIVE) {
        char p[80];
        snprintf(p, sizeof p, "%s.async", path);
        return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                                   "only a collective is async or not");
    }
    if (dtype && (st = parse_dtype(dtype, path, &spec.dtype, err)) !=
                     COMMSCHED_OK)
        return st;
    if (reduce_op && (st = parse_reduce_op(reduce_op, path, &spec.reduce_op,
                                           err)) != COMMSCHED_OK)
        return st;
    spec.is_sync = !is_async;
    /* names is NULL until a node has a reference: NULL + 0 is undefined. */
    spec.inputs = s->names;
    spec.n_inputs = n_in;
    spec.after = s->names ? s->names + n_in : NULL;
    spec.n_after = n_after;
    spec.after_fake = s->names ? s->names + n_in + n_after : NULL;
    spec.n_after_fake = n_fake;
    spec.outputs = s->outs;
    if ((st = commsched_builder_add_node(b, &spec, err)) != COMMSCHED_OK)
        return st;
    /* The builder copied the node: its names' room holds each from. */
    for (size_t k = 0; k < spec.n_outputs && st == COMMSCHED_OK; k++) {
        const json_t *arr = s->from[k];
        if (!arr)
            continue;
        size_t len = json_array_size(arr);
        if (cs_grow((void **)&s->names, &s->cap_names, len ? len : 1,
                    sizeof *s->names) != 0)
            return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                       "out of memory");
        for (size_t m = 0; m < len; m++)
            s->names[m] = json_string_value(json_array_get(arr, m));
        st = commsched_builder_set_output_from(b, k, s->names, len, err);
    }
    return st;
}

static const char *const top_keys[] = {"format", "version", "name",
                                       "groups", "inputs",  "outputs",
                                       "nodes",  "schedule", "metadata",
                                       NULL};
static const char *const group_keys[] = {"name", "size", "hosts", NULL};
static const char *const input_keys[] = {"name", "size", "freeable", NULL};

/* The top level: fills *f with its fields. */
static commsched_status parse_header(const json_t *root, fields *f,
                                     const char **name, commsched_error *err)
{
    commsched_status st;
    const char *format = NULL;
    if (!json_is_object(root))
        return type_error(err, "", "a graph object", root);
    if ((st = collect(root, "", top_keys, f, err)) != COMMSCHED_OK ||
        (st = get_string(f, "", "format", 1, &format, err)) !=
            COMMSCHED_OK)
        return st;
    if (strcmp(format, FORMAT_NAME) != 0)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, "format",
                                   "expected \"%s\", got \"%s\"", FORMAT_NAME,
                                   format);
    json_t *v = lookup(f, "version");
    if (!v)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, "version",
                                   "missing required field");
    if (!json_is_integer(v))
        return type_error(err, "version", "an integer", v);
    if (json_integer_value(v) != FORMAT_VERSION)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, "version",
                                   "unsupported version %lld (this build "
                                   "reads version %d)",
                                   (long long)json_integer_value(v),
                                   FORMAT_VERSION);
    if ((st = get_string(f, "", "name", 0, name, err)) != COMMSCHED_OK)
        return st;
    const char *objs[] = {"schedule", "metadata"};
    for (int k = 0; k < 2; k++) {
        json_t *o = lookup(f, objs[k]);
        if (o && !json_is_object(o))
            return type_error(err, objs[k], "an object", o);
    }
    return COMMSCHED_OK;
}

static commsched_status parse_groups_inputs(commsched_builder *b,
                                            const fields *top,
                                            commsched_error *err)
{
    const json_t *arr;
    commsched_status st = get_array(top, "", "groups", 0, &arr, err);
    char p[64];
    for (size_t i = 0; st == COMMSCHED_OK && arr && i < json_array_size(arr);
         i++) {
        json_t *g = json_array_get(arr, i);
        const char *name = NULL;
        int64_t size = 0, hosts = 0;
        char p2[80];
        fields f;
        index_path(p, sizeof p, "", "groups", i);
        if (!json_is_object(g))
            return type_error(err, p, "an object", g);
        if ((st = collect(g, p, group_keys, &f, err)) != COMMSCHED_OK ||
            (st = get_string(&f, p, "name", 1, &name, err)) != COMMSCHED_OK ||
            (st = get_size(&f, p, "size", 1, &size, err)) != COMMSCHED_OK ||
            (st = get_size(&f, p, "hosts", 0, &hosts, err)) != COMMSCHED_OK)
            return st;
        if (lookup(&f, "hosts") && hosts == 0)
            return commsched_error_set(err, COMMSCHED_ESCHEMA,
                                       join(p2, sizeof p2, p, "hosts"),
                                       "hosts must be at least 1");
        st = commsched_builder_add_group(b, name, size, hosts, err);
    }
    if (st == COMMSCHED_OK)
        st = get_array(top, "", "inputs", 0, &arr, err);
    for (size_t i = 0; st == COMMSCHED_OK && arr && i < json_array_size(arr);
         i++) {
        json_t *in = json_array_get(arr, i);
        const char *name = NULL;
        int64_t size = 0;
        int freeable = 0;
        fields f;
        index_path(p, sizeof p, "", "inputs", i);
        if (!json_is_object(in))
            return type_error(err, p, "an object", in);
        if ((st = collect(in, p, input_keys, &f, err)) != COMMSCHED_OK ||
            (st = get_string(&f, p, "name", 1, &name, err)) != COMMSCHED_OK ||
            (st = get_size(&f, p, "size", 1, &size, err)) != COMMSCHED_OK ||
            (st = get_bool(&f, p, "freeable", &freeable, err)) !=
                COMMSCHED_OK)
            return st;
        st = commsched_builder_add_input(b, name, size, freeable, err);
    }
    return st;
}

/* Converts the tree node by node and consumes it (root is freed here).
 * Each node's subtree is released as soon as the builder has copied it
 * (json_array_set to the null singleton frees it), so the parse tree
 * shrinks while the graph grows and the peak stays near the tree's own
 * size (docs/PERFORMANCE.md, "Load"). */
static commsched_status from_json(json_t *root, unsigned flags,
                                  commsched_graph **out, commsched_error *err)
{
    const char *name = NULL;
    commsched_builder *b = NULL;
    scratch s = {0};
    const json_t *arr;
    fields top;
    commsched_status st = parse_header(root, &top, &name, err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_create(name, &b, err);
    if (st == COMMSCHED_OK)
        st = parse_groups_inputs(b, &top, err);
    if (st == COMMSCHED_OK)
        st = get_array(&top, "", "nodes", 1, &arr, err);
    for (size_t i = 0; st == COMMSCHED_OK && i < json_array_size(arr); i++) {
        st = parse_node(b, json_array_get(arr, i), i, &s, err);
        if (st == COMMSCHED_OK)
            json_array_set((json_t *)arr, i, json_null());
    }
    if (st == COMMSCHED_OK)
        st = get_array(&top, "", "outputs", 0, &arr, err);
    for (size_t i = 0; st == COMMSCHED_OK && arr && i < json_array_size(arr);
         i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_string(o)) {
            char p[64];
            index_path(p, sizeof p, "", "outputs", i);
            st = type_error(err, p, "a buffer name", o);
        } else {
            st = commsched_builder_add_output(b, json_string_value(o), err);
        }
    }
    free(s.names);
    free(s.outs);
    free(s.from);
    /* The builder copied everything: the rest of the tree goes before
     * finish builds the graph's indexes. */
    json_decref(root);
    if (st != COMMSCHED_OK) {
        commsched_builder_destroy(b);
        return st;
    }
    return commsched_builder_finish(b, flags, out, err);
}

/* Reads a whole stream: jansson's stream loader pulls one character at a
 * time with getc, several times slower than parsing from memory. */
/* The whole stream; NULL with *oom set when memory ran out, NULL with
 * *oom clear on a read error. */
/* jansson reports an allocation failure inside its lexer as a syntax error
 * at that spot ("string or '}' expected"). A syntax error is a property of
 * the text, so one that parsing the same text again does not reproduce was
 * memory running out: *oom says so. */
static json_t *parse(const char *text, size_t len, json_error_t *je, int *oom)
{
    *oom = 0;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, je);
    if (root || je->text[0] == '\0' ||
        json_error_code(je) == json_error_out_of_memory)
        return root; /* cs_json_syntax_error maps those two to ENOMEM */
    json_error_t again;
    json_t *second = json_loadb(text, len, JSON_REJECT_DUPLICATES, &again);
    if (second || again.position != je->position ||
        strcmp(again.text, je->text) != 0)
        *oom = 1;
    json_decref(second);
    return NULL;
}

commsched_status commsched_graph_load_file(const char *path, unsigned flags,
                                           commsched_graph **out,
                                           commsched_error *err)
{
    json_error_t je;
    *out = NULL;
    size_t len = 0;
    char *text;
    commsched_status st = commsched_read_file(path, &text, &len, err);
    if (st != COMMSCHED_OK)
        return st;
    int oom;
    json_t *root = parse(text, len, &je, &oom);
    free(text);
    if (!root)
        return oom ? commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory")
                   : cs_json_syntax_error(&je, err);
    return from_json(root, flags, out, err);
}

commsched_status commsched_graph_load_string(const char *text, unsigned flags,
                                             commsched_graph **out,
                                             commsched_error *err)
{
    json_error_t je;
    int oom;
    *out = NULL;
    json_t *root = parse(text, strlen(text), &je, &oom);
    if (!root)
        return oom ? commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                         "out of memory")
                   : cs_json_syntax_error(&je, err);
    return from_json(root, flags, out, err);
}

/* ---- save ------------------------------------------------------------- */

/* Numbers as jansson printed them when the save built a json_t per node
 * (precision 17), so saved files stay byte-identical. */
#define SAVE_PRECISION 17

static void name_array(cs_jw *w, const commsched_graph *g, const char *key,
                       const cs_csr *c, uint32_t row, int buffers)
{
    if (c->off[row] == c->off[row + 1])
        return;
    cs_jw_key(w, key);
    cs_jw_array(w);
    for (uint32_t k = c->off[row]; k < c->off[row + 1]; k++)
        cs_jw_string(w, buffers ? g->buffers[c->idx[k]].name
                                : g->nodes[c->idx[k]].name);
    cs_jw_end(w);
}

/* A node on one line, keys in the order of the format's documentation. */
static void node_json(cs_jw *w, const commsched_graph *g, uint32_t i)
{
    const cs_node *n = &g->nodes[i];
    cs_jw_object(w);
    cs_jw_layout(w, " ", ": ");
    cs_jw_key(w, "name");
    cs_jw_string(w, n->name);
    cs_jw_key(w, "kind");
    cs_jw_string(w, commsched_node_kind_str((commsched_node_kind)n->kind));
    if (n->op) {
        cs_jw_key(w, "op");
        cs_jw_string(w, n->op);
    }
    if (n->group != COMMSCHED_NONE) {
        cs_jw_key(w, "group");
        cs_jw_string(w, g->groups[n->group].name);
    }
    if (n->is_sync) {
        cs_jw_key(w, "async");
        cs_jw_bool(w, 0);
    }
    if (n->dtype) {
        cs_jw_key(w, "dtype");
        cs_jw_string(w, commsched_dtype_str((commsched_dtype)n->dtype));
    }
    if (n->reduce_op) {
        cs_jw_key(w, "reduce_op");
        cs_jw_string(w, commsched_reduce_op_str(
                            (commsched_reduce_op)n->reduce_op));
    }
    name_array(w, g, "inputs", &g->reads, i, 1);
    if (n->n_out) {
        cs_jw_key(w, "outputs");
        cs_jw_array(w);
        for (uint32_t k = 0; k < n->n_out; k++) {
            const cs_buffer *b = &g->buffers[n->out_first + k];
            cs_jw_object(w);
            cs_jw_key(w, "name");
            cs_jw_string(w, b->name);
            if (b->alias_of != COMMSCHED_NONE) {
                cs_jw_key(w, "alias_of");
                cs_jw_string(w, g->buffers[b->alias_of].name);
            } else {
                cs_jw_key(w, "size");
                cs_jw_int(w, b->size);
            }
            if (b->has_from) {
                cs_jw_key(w, "from");
                cs_jw_array(w);
                for (uint32_t m = g->from.off[n->out_first + k];
                     m < g->from.off[n->out_first + k + 1]; m++)
                    cs_jw_string(w, g->buffers[g->from.idx[m]].name);
                cs_jw_end(w);
            }
            cs_jw_end(w);
        }
        cs_jw_end(w);
    }
    name_array(w, g, "after", &g->after, i, 0);
    name_array(w, g, "after_fake", &g->after_fake, i, 0);
    const struct {
        const char *key;
        double v;
    } nums[] = {{"runtime_ns", n->runtime_ns},
                {"flops", n->flops},
                {"bytes", n->bytes}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
        if (nums[k].v >= 0) {
            cs_jw_key(w, nums[k].key);
            cs_jw_number(w, nums[k].v, SAVE_PRECISION);
        }
    if (n->gemm_like) {
        cs_jw_key(w, "gemm_like");
        cs_jw_bool(w, 1);
    }
    cs_jw_end(w);
}

/* Nodes a thread writes at a time when the lines are made on every core:
 * ~50 KB of text at ~200 bytes a line, so a part mostly stays in its
 * writer's own buffer. */
#define SAVE_PART_NODES 256u

typedef struct node_lines {
    const commsched_graph *g;
    const uint32_t *order; /* NULL: the input order */
} node_lines;

static void node_item(cs_jw *w, size_t k, const void *ctx)
{
    const node_lines *c = ctx;
    node_json(w, c->g, c->order ? c->order[k] : (uint32_t)k);
}

static void groups_json(cs_jw *w, const commsched_graph *g)
{
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    for (uint32_t i = 0; i < g->n_groups; i++) {
        cs_jw_object(w);
        cs_jw_key(w, "name");
        cs_jw_string(w, g->groups[i].name);
        cs_jw_key(w, "size");
        cs_jw_int(w, g->groups[i].size);
        if (g->groups[i].hosts) {
            cs_jw_key(w, "hosts");
            cs_jw_int(w, g->groups[i].hosts);
        }
        cs_jw_end(w);
    }
    cs_jw_end(w);
}

static void inputs_json(cs_jw *w, const commsched_graph *g)
{
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        cs_jw_object(w);
        cs_jw_key(w, "name");
        cs_jw_string(w, g->buffers[i].name);
        cs_jw_key(w, "size");
        cs_jw_int(w, g->buffers[i].size);
        if (g->buffers[i].freeable) {
            cs_jw_key(w, "freeable");
            cs_jw_bool(w, 1);
        }
        cs_jw_end(w);
    }
    cs_jw_end(w);
}

/* The graph, with its "schedule" value (if any) written from `sched` (a
 * parsed object) or by the caller's write_schedule. The layout is the one
 * jansson gave the file: the header fields compact (JSON_COMPACT) one per
 * line, then one node per line with jansson's default ", " and ": "
 * inside. The writer is on the heap: it holds its 64 KiB buffer. */
static commsched_status save(const commsched_graph *g, const uint32_t *order,
                             const json_t *sched,
                             commsched_schedule_writer write_schedule,
                             void *ctx, FILE *f, commsched_error *err)
{
    cs_jw *w = malloc(sizeof *w);
    if (!w)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    cs_jw_init(w, f);
    cs_jw_object(w);
    cs_jw_key(w, "format");
    cs_jw_string(w, FORMAT_NAME);
    cs_jw_key(w, "version");
    cs_jw_int(w, FORMAT_VERSION);
    cs_jw_layout(w, "\n ", ": ");
    if (g->name) {
        cs_jw_key(w, "name");
        cs_jw_string(w, g->name);
    }
    cs_jw_key(w, "groups");
    groups_json(w, g);
    cs_jw_key(w, "inputs");
    inputs_json(w, g);
    cs_jw_key(w, "outputs");
    cs_jw_array(w);
    cs_jw_layout(w, "", ":");
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cs_jw_string(w, g->buffers[g->outputs[i]].name);
    cs_jw_end(w);
    if (sched) {
        cs_jw_key(w, "schedule");
        cs_jw_json(w, sched, "", ":");
    } else if (write_schedule) {
        /* The caller's value goes straight onto the stream, after what the
         * writer has buffered so far. */
        cs_jw_key(w, "schedule");
        FILE *sf = cs_jw_value_stream(w);
        commsched_status sst =
            sf ? write_schedule(sf, ctx, err) : COMMSCHED_OK;
        if (sst != COMMSCHED_OK) {
            free(w);
            return sst;
        }
    }
    cs_jw_key(w, "nodes");
    cs_jw_array(w);
    cs_jw_layout(w, "\n  ", ": ");
    if (g->n_nodes)
        cs_jw_raw(w, "\n  ");
    /* The lines of a large graph on every core (most of the save). */
    node_lines lines = {g, order};
    cs_jw_array_items(w, g->n_nodes, SAVE_PART_NODES,
                      g->n_nodes >= CS_THREADS_MIN_NODES, node_item, &lines);
    cs_jw_raw(w, "\n ");
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    commsched_status st = cs_jw_finish(w);
    cs_jw_error why = w->error;
    free(w);
    if (st == COMMSCHED_OK)
        return COMMSCHED_OK;
    if (why == CS_JW_EUTF8)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a name is not valid UTF-8");
    if (why == CS_JW_ENOMEM)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    return commsched_error_set(err, COMMSCHED_EIO, NULL,
                               "could not write the graph");
}

commsched_status commsched_graph_save_stream(const commsched_graph *g,
                                             const uint32_t *order,
                                             const char *schedule_json,
                                             FILE *f, commsched_error *err)
{
    if (!schedule_json)
        return save(g, order, NULL, NULL, NULL, f, err);
    /* The caller's text, parsed once (it must be an object) so the file
     * gets it compact and checked. A caller with a large schedule writes
     * it itself instead (commsched_graph_save_stream_with). */
    json_error_t je;
    json_t *sched = json_loads(schedule_json, 0, &je);
    if (!sched || !json_is_object(sched)) {
        json_decref(sched);
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "schedule object does not parse: %s",
                                   je.text);
    }
    commsched_status st = save(g, order, sched, NULL, NULL, f, err);
    json_decref(sched);
    return st;
}

commsched_status commsched_graph_save_stream_with(
    const commsched_graph *g, const uint32_t *order,
    commsched_schedule_writer write_schedule, void *ctx, FILE *f,
    commsched_error *err)
{
    return save(g, order, NULL, write_schedule, ctx, f, err);
}
