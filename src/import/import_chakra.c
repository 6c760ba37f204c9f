/* commsched import chakra FILE — Chakra execution traces in their simple
 * JSON form (the "workload_graph" that Chakra's json_node feeder reads):
 *   {"workload_graph": [{"Id", "Name", "NodeType", "data_deps", "runtime",
 *     "is_cpu_op", optional "ctrlDeps", "tensor_size", "comm_type",
 *     "comm_size", "comm_priority", "comm_src", "comm_dst", "comm_tag"}],
 *    optional "workload_name", "ngpus", "soc"}
 * Content that does not start with '{' is the binary form
 * (import_chakra_et.c). The mapping to a graph is chakra_common.c's. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chakra_common.h"
#include "trace_json.h"

static int fail_at(chakra *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail_at(chakra *c, const char *path, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    commsched_error_set(&c->err, COMMSCHED_ESCHEMA, path, "%s", text);
    return import_report(c->d, c->file, &c->err);
}

static int get_int(chakra *c, json_t *v, const char *path, int64_t min,
                   int64_t *out)
{
    *out = 0;
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return fail_at(c, path, "expected an integer >= %lld",
                       (long long)min);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* The Ids in a dependency array, checked (path: its JSON path). */
static int get_ids(chakra *c, json_t *val, const char *path, int64_t **out,
                   size_t *n)
{
    if (!json_is_array(val))
        return fail_at(c, path, "expected an array of node Ids");
    size_t m = json_array_size(val);
    free(*out);
    *out = malloc((m ? m : 1) * sizeof **out);
    *n = 0;
    if (!*out)
        return import_oom(c->d);
    for (size_t k = 0; k < m; k++) {
        char p2[COMMSCHED_ERROR_PATH_LENGTH + 24];
        snprintf(p2, sizeof p2, "%s[%zu]", path, k);
        int rc = get_int(c, json_array_get(val, k), p2, 0, &(*out)[k]);
        if (rc)
            return rc;
        *n = k + 1;
    }
    return 0;
}

/* Sizes within the format's limit, reported at the record's field. */
static int check_size(chakra *c, const char *path, int64_t v)
{
    if (v > COMMSCHED_MAX_SIZE)
        return fail_at(c, path,
                       "%lld bytes is beyond the format's limit of 2^53",
                       (long long)v);
    return 0;
}

/* Reads and checks every record. */
static int read_records(chakra *c, json_t *root, long *ngpus)
{
    char path[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_object(root))
        return fail_at(c, "", "expected a JSON object with \"workload_graph\"");
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "workload_graph") == 0)
            continue;
        if (strcmp(key, "workload_name") == 0 || strcmp(key, "soc") == 0) {
            if (!json_is_string(val))
                return fail_at(c, key, "expected a string");
        } else if (strcmp(key, "ngpus") == 0) {
            int64_t v = 0;
            int rc = get_int(c, val, key, 1, &v);
            if (rc)
                return rc;
            if (v > COMMSCHED_MAX_GROUP_SIZE)
                return fail_at(c, key,
                               "%lld is beyond the %u ranks a group may have",
                               (long long)v, COMMSCHED_MAX_GROUP_SIZE);
            *ngpus = (long)v;
        } else {
            return fail_at(c, key,
                           "unknown field (workload_graph, workload_name, "
                           "ngpus, soc)");
        }
    }
    json_t *arr = json_object_get(root, "workload_graph");
    if (!arr)
        return fail_at(c, "", "missing \"workload_graph\"");
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail_at(c, "workload_graph", "expected a non-empty array");
    size_t count = json_array_size(arr);
    for (size_t i = 0; i < count; i++) {
        json_t *r = json_array_get(arr, i);
        cnode *n = chakra_push(c);
        if (!n)
            return IMPORT_RUNTIME;
        int have_id = 0, have_name = 0, have_type = 0, rc;
        int64_t comm_size = -1, tensor_size = -1;
        snprintf(path, sizeof path, "workload_graph[%zu]", i);
        if (!json_is_object(r))
            return fail_at(c, path, "expected an object (a node)");
        json_object_foreach(r, key, val) {
            snprintf(path, sizeof path, "workload_graph[%zu].%s", i, key);
            int64_t v = 0;
            if (strcmp(key, "Id") == 0) {
                if ((rc = get_int(c, val, path, 0, &n->id)) != 0)
                    return rc;
                have_id = 1;
            } else if (strcmp(key, "Name") == 0) {
                if (!json_is_string(val))
                    return fail_at(c, path, "expected a string");
                free(n->name);
                n->name = strdup(json_string_value(val));
                if (!n->name)
                    return import_oom(c->d);
                have_name = 1;
            } else if (strcmp(key, "NodeType") == 0) {
                if ((rc = get_int(c, val, path, 0, &v)) != 0)
                    return rc;
                if (v < NT_METADATA || v > NT_COLL)
                    return fail_at(c, path,
                                   "unknown node type %lld (1 METADATA, 2 "
                                   "MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 "
                                   "COMM_SEND, 6 COMM_RECV, 7 COMM_COLL)",
                                   (long long)v);
                n->type = (int)v;
                have_type = 1;
            } else if (strcmp(key, "runtime") == 0) {
                if (!json_is_number(val) || json_number_value(val) < 0)
                    return fail_at(c, path,
                                   "expected a non-negative number "
                                   "(microseconds)");
                if (json_number_value(val) > COMMSCHED_MAX_RUNTIME_NS / 1e3)
                    return fail_at(c, path,
                                   "%g microseconds is beyond the format's "
                                   "limit of %g",
                                   json_number_value(val),
                                   COMMSCHED_MAX_RUNTIME_NS / 1e3);
                n->runtime_us = json_number_value(val);
            } else if (strcmp(key, "is_cpu_op") == 0) {
                if (!json_is_boolean(val))
                    return fail_at(c, path, "expected true or false");
                n->cpu = json_is_true(val);
            } else if (strcmp(key, "data_deps") == 0) {
                if ((rc = get_ids(c, val, path, &n->raw_data,
                                  &n->n_raw_data)) != 0)
                    return rc;
            } else if (strcmp(key, "ctrlDeps") == 0) {
                if ((rc = get_ids(c, val, path, &n->raw_ctrl,
                                  &n->n_raw_ctrl)) != 0)
                    return rc;
            } else if (strcmp(key, "tensor_size") == 0) {
                if ((rc = get_int(c, val, path, 0, &tensor_size)) != 0 ||
                    (rc = check_size(c, path, tensor_size)) != 0)
                    return rc;
            } else if (strcmp(key, "comm_size") == 0) {
                if ((rc = get_int(c, val, path, 0, &comm_size)) != 0 ||
                    (rc = check_size(c, path, comm_size)) != 0)
                    return rc;
            } else if (strcmp(key, "comm_type") == 0) {
                if ((rc = get_int(c, val, path, 0, &v)) != 0)
                    return rc;
                n->coll = chakra_coll_from_type(v);
                if (n->coll < 0)
                    return fail_at(c, path,
                                   "collective type %lld has no commsched "
                                   "counterpart (GATHER and SCATTER are not "
                                   "supported)",
                                   (long long)v);
            } else if (strcmp(key, "comm_priority") == 0 ||
                       strcmp(key, "comm_src") == 0 ||
                       strcmp(key, "comm_dst") == 0 ||
                       strcmp(key, "comm_tag") == 0) {
                if (!json_is_integer(val))
                    return fail_at(c, path, "expected an integer");
            } else {
                return fail_at(c, path, "unknown field");
            }
        }
        snprintf(path, sizeof path, "workload_graph[%zu]", i);
        if (!have_id)
            return fail_at(c, path, "missing \"Id\"");
        if (!have_name)
            return fail_at(c, path, "missing \"Name\"");
        if (!have_type)
            return fail_at(c, path, "missing \"NodeType\"");
        if (n->type == NT_COLL || n->type == NT_SEND || n->type == NT_RECV) {
            n->size = comm_size >= 0 ? comm_size : tensor_size;
            if (n->type == NT_SEND)
                n->coll = COMMSCHED_COLL_SEND;
            else if (n->type == NT_RECV)
                n->coll = COMMSCHED_COLL_RECV;
            else if (n->coll < 0)
                n->coll = chakra_coll_from_name(n->name);
            if (n->coll < 0)
                return fail_at(c, path,
                               "cannot tell the collective kind from the name "
                               "\"%.*s\" (no comm_type)",
                               (int)commsched_utf8_cut(n->name, 60), n->name);
            chakra_nccl_details(n->name, &n->dtype, &n->rop);
        } else {
            n->size = tensor_size;
            n->coll = -1; /* a comm_type on a compute node says nothing */
        }
    }
    return 0;
}

int import_chakra_json(import_diag *d, const char *path, FILE *in,
                       const commsched_import_options *o,
                       commsched_graph **out)
{
    chakra c;
    memset(&c, 0, sizeof c);
    c.file = path;
    c.d = d;
    /* Plain or gzip, its tree's memory bounded (trace_json.h): Chakra's
     * JSON traces run to megabytes (its own test data's chakra.0.json is
     * 4.9 MB), and compress tenfold. */
    /* glibc's rewind may move within its buffer alone: the descriptor's
     * offset is set to the stream's before zlib reads from it. */
    off_t at = ftello(in);
    int fd = dup(fileno(in));
    if (fd >= 0 && at >= 0 && lseek(fd, at, SEEK_SET) < 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        return import_fail(d, COMMSCHED_ELIBRARY, "%s: cannot read: %s",
                           path, strerror(errno));
    }
    json_t *root = NULL;
    int lrc = trace_json_load_fd(d, fd, path, o->max_memory, &root);
    if (lrc)
        return lrc;
    long ngpus = 0;
    int rc = read_records(&c, root, &ngpus);
    if (rc == 0) {
        json_t *wn = json_object_get(root, "workload_name");
        const char *base = strrchr(c.file, '/');
        const char *src = wn ? json_string_value(wn) : base ? base + 1 : c.file;
        char name[256];
        snprintf(name, sizeof name, "chakra-%.*s",
                 (int)commsched_utf8_cut(src, sizeof name - 8), src);
        rc = chakra_finish(&c, o, ngpus, name, out);
    }
    chakra_free(&c);
    json_decref(root);
    return rc;
}

/* JSON or binary, by content: JSON's first two non-blank bytes are '{'
 * and '"' (or '}'). A binary trace starts with a varint length that may
 * happen to be a blank or '{' (32, 123 bytes), but the GlobalMetadata
 * fields that follow start with byte 0x0a or 0x12, never '"' or '}'. */
static int looks_like_json(FILE *in)
{
    int seen = 0, ch;
    int b0 = getc(in), b1 = getc(in);
    if (b0 == 0x1f && b1 == 0x8b)
        return 1; /* gzip: JSON compressed (a .et never is) */
    rewind(in);
    while ((ch = getc(in)) != EOF) {
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
            continue;
        if (seen == 0 && ch != '{')
            return 0;
        if (seen == 1)
            return ch == '"' || ch == '}';
        seen++;
    }
    return seen > 0; /* "{" alone: let the JSON reader say what is wrong */
}

/* A Chakra binary trace, by content: not JSON by looks_like_json, and its
 * first record a whole GlobalMetadata message. A JSON text that happens to
 * start like a length ("[\n" is 91 and a protobuf tag) announces more
 * bytes than follow or does not decode, and stays JSON for the loader's
 * own error. */
int commsched_import_is_chakra_et(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return 0; /* the JSON loader says why it cannot be opened */
    /* Only a regular file can be read twice: the bytes sniffed from a pipe
     * (/dev/stdin, a shell's <(...)) would be gone for the loader. */
    struct stat st;
    int et = 0;
    if (fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode) &&
        !looks_like_json(in)) {
        rewind(in);
        et = chakra_et_starts_with_metadata(in);
    }
    fclose(in);
    return et;
}

/* A stream passing the bytes read from `in` on, reporting how many to
 * the options' progress callback (the reading stage of a binary trace). */
typedef struct counted {
    FILE *in;
    import_diag *d;
    uint64_t n, total;
} counted;

static ssize_t counted_read(void *cookie, char *buf, size_t size)
{
    counted *c = cookie;
    size_t got = fread(buf, 1, size, c->in);
    c->n += got;
    import_progress(c->d, c->n, c->total);
    return got == 0 && ferror(c->in) ? -1 : (ssize_t)got;
}

int import_chakra(import_diag *d, const char *path,
                  const commsched_import_options *o, commsched_graph **out)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *file = is_stdin ? "<stdin>" : path;
    FILE *in = NULL;
    if (!is_stdin && !(in = import_open_input(d, path)))
        return IMPORT_INPUT;
    if (is_stdin && !(in = tmpfile()))
        return import_fail(d, COMMSCHED_ELIBRARY, "%s: cannot spool: %s",
                           file, strerror(errno));
    if (is_stdin) {
        /* Standard input cannot be rewound after the sniff: spool it. */
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, stdin)) > 0)
            if (fwrite(buf, 1, got, in) != got) {
                int rc = import_fail(d, COMMSCHED_ELIBRARY,
                                     "%s: cannot spool: %s", file,
                                     strerror(errno));
                fclose(in);
                return rc;
            }
    }
    rewind(in);
    int json = looks_like_json(in);
    rewind(in);
    counted count = {in, d, 0, import_file_size(fileno(in))};
    FILE *via = NULL;
    if (o->progress) {
        cookie_io_functions_t io = {counted_read, NULL, NULL, NULL};
        via = fopencookie(&count, "r", io);
    }
    /* The JSON reader follows the file itself (and may read it twice). */
    int rc = json ? import_chakra_json(d, file, in, o, out)
                  : import_chakra_et(d, file, via ? via : in, o, out);
    if (via) {
        fclose(via);
        import_progress(d, count.total ? count.total : count.n,
                        count.total ? count.total : count.n);
    }
    fclose(in);
    return rc;
}
