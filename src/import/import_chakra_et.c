/* Chakra execution traces in their binary form (what ASTRA-sim reads): a
 * stream of length-delimited protobuf messages, a varint length then the
 * message, first a GlobalMetadata, then one Node each (chakra_et.proto,
 * decoded by protobuf-c). Records are read one at a time: memory holds the
 * compact node table, never the decoded messages of the whole file.
 *
 * Node fields: id, name, type, data_deps, ctrl_deps, duration_micros (a
 * collective with 0 has no measured time: the cost model prices it from
 * comm_size). Attributes read: comm_type, comm_size, is_cpu_op, pg_name,
 * tensor_size, involved_dim (checked: a list of booleans); any integer
 * encoding is accepted for the integer ones. Other attributes (rf_id,
 * op_schema, comm_src, ...) carry nothing commsched models and are skipped.
 *
 * Files written by `commsched export chakra` also carry the exact graph in
 * extension attributes ("commsched.graph" in the metadata, "commsched.node"
 * on each record): when present the graph is rebuilt from them, so import
 * after export loses nothing (--chakra-fields-only ignores them). */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_common.h"
#include "chakra_et.pb-c.h"

/* A record longer than this is not a trace node: refuse it rather than
 * allocate what a corrupt length says. */
#define MAX_RECORD (64u << 20)

typedef struct reader {
    FILE *in;
    int64_t offset; /* of the next byte */
    uint8_t *buf;
    size_t cap;
} reader;

/* What reading a record's length found. */
enum { VARINT_OK, VARINT_END, VARINT_TRUNCATED, VARINT_OVERFLOW,
       VARINT_IOERR };

/* A protobuf varint from in into *v; *offset counts the bytes read.
 * VARINT_END: end of file before its first byte. */
static int read_varint(FILE *in, uint64_t *v, int64_t *offset)
{
    *v = 0;
    for (int shift = 0;; shift += 7) {
        int ch = getc(in);
        if (ch == EOF)
            return ferror(in) ? VARINT_IOERR
                   : shift == 0 ? VARINT_END
                                : VARINT_TRUNCATED;
        ++*offset;
        /* A varint holds 64 bits in at most ten bytes: the tenth may add
         * only the top bit, and an eleventh (even of zero payload, which
         * would shift past the width) is malformed. */
        if (shift > 63 || (shift == 63 && (ch & 0x7f) > 1))
            return VARINT_OVERFLOW;
        *v |= (uint64_t)(ch & 0x7f) << shift;
        if (!(ch & 0x80))
            return VARINT_OK;
    }
}

/* 1: a record in r->buf (*len bytes); 0: clean end of file; < 0: error
 * printed. */
static int next_record(chakra *c, reader *r, size_t rec, size_t *len)
{
    uint64_t v;
    int64_t start = r->offset;
    switch (read_varint(r->in, &v, &r->offset)) {
    case VARINT_OK: break;
    case VARINT_END: return 0;
    case VARINT_OVERFLOW:
        return -chakra_fail(c, SIZE_MAX, NULL,
                            "record %zu (byte %lld): length varint "
                            "overflows 64 bits",
                            rec, (long long)start);
    default:
        return -chakra_fail(c, SIZE_MAX, NULL, "record %zu (byte %lld): %s",
                            rec, (long long)start,
                            ferror(r->in) ? strerror(errno)
                                          : "file ends inside a length");
    }
    if (v > MAX_RECORD)
        return -chakra_fail(c, SIZE_MAX, NULL,
                            "record %zu (byte %lld): length %llu exceeds "
                            "%u bytes (not a Chakra trace?)",
                            rec, (long long)start, (unsigned long long)v,
                            MAX_RECORD);
    if (v > r->cap) {
        uint8_t *t = realloc(r->buf, (size_t)v);
        if (!t)
            return -import_oom(c->d);
        r->buf = t;
        r->cap = (size_t)v;
    }
    size_t got = v ? fread(r->buf, 1, (size_t)v, r->in) : 0;
    r->offset += (int64_t)got;
    if (got != v)
        return -chakra_fail(c, SIZE_MAX, NULL,
                            "record %zu (byte %lld): truncated: %llu bytes "
                            "announced, %zu present",
                            rec, (long long)start, (unsigned long long)v,
                            got);
    *len = (size_t)v;
    return 1;
}

/* Where protobuf-c puts one decoded record: a bump arena emptied before
 * the next, so decoding a record costs no malloc per field and freeing it
 * nothing (malloc and protobuf-c's free_unpacked walk were a sixth of
 * importing a large trace). What does not fit the block goes to malloc,
 * on a list freed at the reset, which also grows the block to hold the
 * largest record seen, so overflow happens only while records grow. */
typedef struct spill {
    struct spill *next;
    max_align_t data[]; /* the allocation */
} spill;

typedef struct record_arena {
    ProtobufCAllocator pb; /* its allocator_data is the arena */
    unsigned char *block;
    size_t cap, used, spilled;
    spill *spills;
} record_arena;

static void *arena_alloc(void *data, size_t size)
{
    record_arena *a = data;
    const size_t align = sizeof(max_align_t);
    size_t need = (size + align - 1) / align * align;
    if (need >= size && need <= a->cap - a->used) {
        void *p = a->block + a->used;
        a->used += need;
        return p;
    }
    if (size > SIZE_MAX - sizeof(spill))
        return NULL;
    spill *sp = malloc(sizeof(spill) + size);
    if (!sp)
        return NULL;
    sp->next = a->spills;
    a->spills = sp;
    a->spilled += size + sizeof(spill);
    return sp->data;
}

static void arena_free(void *data, void *ptr)
{
    (void)data; /* everything goes at the reset */
    (void)ptr;
}

static void arena_init(record_arena *a)
{
    memset(a, 0, sizeof *a);
    a->pb.alloc = arena_alloc;
    a->pb.free = arena_free;
    a->pb.allocator_data = a;
}

static void arena_drop_spills(record_arena *a)
{
    while (a->spills) {
        spill *next = a->spills->next;
        free(a->spills);
        a->spills = next;
    }
}

/* Empties the arena for the next record; -1 when growing its block failed
 * (the arena stays usable: what does not fit keeps spilling). */
static int arena_reset(record_arena *a)
{
    size_t want = a->used + a->spilled;
    arena_drop_spills(a);
    a->used = a->spilled = 0;
    if (want <= a->cap)
        return 0;
    want = want < 4096 ? 4096 : 2 * want;
    unsigned char *b = malloc(want);
    if (!b)
        return -1;
    free(a->block);
    a->block = b;
    a->cap = want;
    return 0;
}

static void arena_release(record_arena *a)
{
    arena_drop_spills(a);
    free(a->block);
    memset(a, 0, sizeof *a);
}

/* An integer attribute in any of protobuf's integer encodings. */
static int attr_int(const CommschedChakra__Attribute *a, int64_t *out)
{
    switch (a->value_case) {
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_INT32_VAL: *out = a->int32_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_INT64_VAL: *out = a->int64_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_UINT32_VAL: *out = a->uint32_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_SINT32_VAL: *out = a->sint32_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_SINT64_VAL: *out = a->sint64_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_FIXED32_VAL: *out = a->fixed32_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_SFIXED32_VAL: *out = a->sfixed32_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_SFIXED64_VAL: *out = a->sfixed64_val; return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_UINT64_VAL:
        if (a->uint64_val > INT64_MAX)
            return -1;
        *out = (int64_t)a->uint64_val;
        return 0;
    case COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_FIXED64_VAL:
        if (a->fixed64_val > INT64_MAX)
            return -1;
        *out = (int64_t)a->fixed64_val;
        return 0;
    default: return -1;
    }
}

static int copy_ids(const uint64_t *ids, size_t n, int64_t **out,
                    size_t *count)
{
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (ids[k] > INT64_MAX)
            return (int)k + 1;
        (*out)[k] = (int64_t)ids[k];
    }
    *count = n;
    return 0;
}

/* "attr[K] (NAME)" into buf: an attribute's place in an error message,
 * formatted only for one (formatting it for every attribute was a sixth
 * of importing a large trace). */
#define ATTR_AT_SIZE 96
static const char *attr_at(char buf[ATTR_AT_SIZE], size_t k, const char *key)
{
    snprintf(buf, ATTR_AT_SIZE, "attr[%zu] (%.40s)", k, key);
    return buf;
}

/* One Node message into the table. `ext`: where to put its
 * "commsched.node" text (NULL: not wanted). */
static int take_node(chakra *c, const CommschedChakra__Node *m,
                     int64_t offset, char **ext)
{
    cnode *n = chakra_push(c);
    if (!n)
        return IMPORT_RUNTIME;
    size_t i = c->count - 1; /* the table index chakra_fail locates */
    n->offset = offset;
    if (m->id > INT64_MAX)
        return chakra_fail(c, i, "id", "%llu exceeds 2^63 - 1",
                           (unsigned long long)m->id);
    n->id = (int64_t)m->id;
    n->name = strdup(m->name ? m->name : "");
    if (!n->name) {
        return import_fail(c->d, COMMSCHED_ENOMEM, "out of memory");
    }
    int t = (int)m->type;
    if (t < NT_METADATA || t > NT_COLL)
        return chakra_fail(c, i, "type",
                           "node type %d has no commsched counterpart (1 "
                           "METADATA, 2 MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 "
                           "COMM_SEND, 6 COMM_RECV, 7 COMM_COLL)",
                           t);
    n->type = t;
    int bad = copy_ids(m->data_deps, m->n_data_deps, &n->raw_data,
                       &n->n_raw_data);
    if (bad == 0)
        bad = copy_ids(m->ctrl_deps, m->n_ctrl_deps, &n->raw_ctrl,
                       &n->n_raw_ctrl);
    if (bad < 0) {
        return import_fail(c->d, COMMSCHED_ENOMEM, "out of memory");
    }
    if (bad > 0)
        return chakra_fail(c, i, "data_deps", "an Id exceeds 2^63 - 1");
    int64_t comm_size = -1, tensor_size = -1;
    int have_type = 0;
    for (size_t k = 0; k < m->n_attr; k++) {
        const CommschedChakra__Attribute *a = m->attr[k];
        const char *key = a->name ? a->name : "";
        char field[ATTR_AT_SIZE];
        int64_t v = 0;
        if (strcmp(key, "comm_type") == 0) {
            if (attr_int(a, &v) != 0)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected an integer");
            n->coll = chakra_coll_from_type(v);
            if (n->coll < 0)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "collective type %lld has no commsched "
                                   "counterpart (GATHER and SCATTER are not "
                                   "supported)",
                                   (long long)v);
            have_type = 1;
        } else if (strcmp(key, "comm_size") == 0 ||
                   strcmp(key, "tensor_size") == 0) {
            if (attr_int(a, &v) != 0 || v < 0)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected an integer >= 0 (bytes)");
            if (v > COMMSCHED_MAX_SIZE)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "%lld bytes is beyond the format's limit "
                                   "of 2^53",
                                   (long long)v);
            *(key[0] == 'c' ? &comm_size : &tensor_size) = v;
        } else if (strcmp(key, "is_cpu_op") == 0) {
            if (a->value_case != COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_BOOL_VAL)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected a bool_val");
            n->cpu = a->bool_val != 0;
        } else if (strcmp(key, "pg_name") == 0) {
            if (a->value_case !=
                    COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL ||
                !a->string_val || !a->string_val[0])
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected a non-empty string_val");
            free(n->pg);
            n->pg = strdup(a->string_val);
            if (!n->pg) {
                return import_fail(c->d, COMMSCHED_ENOMEM, "out of memory");
            }
        } else if (strcmp(key, "involved_dim") == 0) {
            if (a->value_case != COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_BOOL_LIST)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected a bool_list");
        } else if (ext && strcmp(key, "commsched.node") == 0) {
            if (a->value_case !=
                    COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL ||
                !a->string_val)
                return chakra_fail(c, i, attr_at(field, k, key),
                                   "expected a string_val");
            free(*ext);
            *ext = strdup(a->string_val);
            if (!*ext) {
                return import_fail(c->d, COMMSCHED_ENOMEM, "out of memory");
            }
        }
    }
    if (t == NT_COLL || t == NT_SEND || t == NT_RECV) {
        n->size = comm_size >= 0 ? comm_size : tensor_size;
        if (t == NT_SEND)
            n->coll = COMMSCHED_COLL_SEND;
        else if (t == NT_RECV)
            n->coll = COMMSCHED_COLL_RECV;
        else if (!have_type)
            n->coll = chakra_coll_from_name(n->name);
        if (n->coll < 0)
            return chakra_fail(c, i, NULL,
                               "cannot tell the collective kind from the "
                               "name \"%.*s\" (no comm_type)",
                               (int)commsched_utf8_cut(n->name, 60), n->name);
        chakra_nccl_details(n->name, &n->dtype, &n->rop);
        /* ASTRA-sim simulates collectives: a 0 duration is "not
         * measured", and the cost model prices it from its bytes. */
        n->runtime_us = m->duration_micros ? (double)m->duration_micros : -1;
    } else {
        n->size = tensor_size;
        n->coll = -1;
        n->runtime_us = (double)m->duration_micros;
    }
    return 0;
}

/* The exported graph: the metadata's header with every record's node
 * appended, loaded like a graph file. */
static int rebuild(chakra *c, const char *header, char **nodes,
                   size_t count, commsched_graph **out)
{
    json_error_t jerr;
    json_t *doc = json_loads(header, JSON_REJECT_DUPLICATES, &jerr);
    json_t *arr = doc ? json_object_get(doc, "nodes") : NULL;
    if (!json_is_array(arr)) {
        json_decref(doc);
        return chakra_fail(c, SIZE_MAX, "record 0 (byte 0).attr "
                                          "(commsched.graph)",
                           "not a graph header with a \"nodes\" array");
    }
    for (size_t i = 0; i < count; i++) {
        json_t *node = nodes[i]
                           ? json_loads(nodes[i], JSON_REJECT_DUPLICATES,
                                        &jerr)
                           : NULL;
        if (!json_is_object(node)) {
            json_decref(node);
            json_decref(doc);
            return chakra_fail(c, i, "attr (commsched.node)",
                               nodes[i] ? "not a JSON object"
                                        : "missing (the metadata says the "
                                          "file was written by commsched)");
        }
        json_array_append_new(arr, node);
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return import_oom(c->d);
    commsched_error err = {0};
    commsched_status st = commsched_graph_load_string(text, 0, out, &err);
    free(text);
    if (st != COMMSCHED_OK) {
        /* nodes[i] is record i + 1: say so beside the graph's own path */
        char why[COMMSCHED_ERROR_TEXT_LENGTH];
        commsched_error_format(&err, NULL, why, sizeof why);
        return import_fail(c->d, err.status,
                           "%s: commsched.graph/commsched.node attributes "
                           "(node i = record i + 1): %s",
                           c->file, why);
    }
    return 0;
}

int chakra_et_starts_with_metadata(FILE *in)
{
    uint64_t len;
    int64_t offset = 0;
    if (read_varint(in, &len, &offset) != VARINT_OK || len > MAX_RECORD)
        return 0;
    uint8_t *buf = malloc(len ? (size_t)len : 1);
    if (!buf)
        return 0;
    int ok = 0;
    if (fread(buf, 1, (size_t)len, in) == len) {
        CommschedChakra__GlobalMetadata *meta =
            commsched_chakra__global_metadata__unpack(NULL, (size_t)len, buf);
        ok = meta != NULL;
        commsched_chakra__global_metadata__free_unpacked(meta, NULL);
    }
    free(buf);
    return ok;
}

int import_chakra_et(import_diag *d, const char *file, FILE *in,
                     const commsched_import_options *o, commsched_graph **out)
{
    chakra c;
    memset(&c, 0, sizeof c);
    c.file = file;
    c.d = d;
    c.binary = 1;
    reader r = {in, 0, NULL, 0};
    record_arena arena;
    arena_init(&arena);
    size_t len = 0, rec = 0;
    char *header = NULL, **ext = NULL;
    size_t ext_cap = 0;
    int rc = 0;
    int got = next_record(&c, &r, 0, &len);
    if (got <= 0) {
        rc = got < 0 ? -got
                     : chakra_fail(&c, SIZE_MAX, NULL,
                                   "empty file (no GlobalMetadata record)");
        goto done;
    }
    {
        CommschedChakra__GlobalMetadata *meta =
            commsched_chakra__global_metadata__unpack(NULL, len, r.buf);
        if (!meta) {
            rc = chakra_fail(&c, SIZE_MAX, NULL,
                             "record 0 (byte 0): not a Chakra GlobalMetadata "
                             "message (is this a Chakra .et file?)");
            goto done;
        }
        for (size_t k = 0; k < meta->n_attr && !o->chakra_fields_only; k++) {
            const CommschedChakra__Attribute *a = meta->attr[k];
            if (a->name && strcmp(a->name, "commsched.graph") == 0 &&
                a->value_case ==
                    COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL &&
                a->string_val && !header)
                header = strdup(a->string_val);
        }
        commsched_chakra__global_metadata__free_unpacked(meta, NULL);
    }
    for (rec = 1;; rec++) {
        int64_t offset = r.offset;
        got = next_record(&c, &r, rec, &len);
        if (got <= 0) {
            rc = -got;
            break;
        }
        if (arena_reset(&arena) != 0) {
            rc = import_oom(d);
            break;
        }
        CommschedChakra__Node *m =
            commsched_chakra__node__unpack(&arena.pb, len, r.buf);
        if (!m) {
            /* chakra_fail needs the record in the table for its offset */
            rc = chakra_fail(&c, SIZE_MAX, NULL,
                             "record %zu (byte %lld): not a valid Chakra "
                             "Node message",
                             rec, (long long)offset);
            break;
        }
        char **slot = NULL;
        if (header) {
            if (rec - 1 == ext_cap) {
                size_t nc = ext_cap ? 2 * ext_cap : 64;
                char **t = realloc(ext, nc * sizeof *t);
                if (!t) {
                    rc = import_oom(d);
                    break;
                }
                memset(t + ext_cap, 0, (nc - ext_cap) * sizeof *t);
                ext = t;
                ext_cap = nc;
            }
            slot = &ext[rec - 1];
        }
        /* Records are numbered from the metadata (record 0); the table
         * from the first node. */
        rc = take_node(&c, m, offset, slot); /* m lives in the arena */
        if (rc)
            break;
    }
    if (rc == 0 && header)
        rc = rebuild(&c, header, ext, c.count, out);
    else if (rc == 0) {
        const char *base = strrchr(file, '/');
        const char *src = base ? base + 1 : file;
        char name[256];
        snprintf(name, sizeof name, "chakra-%.*s",
                 (int)commsched_utf8_cut(src, sizeof name - 8), src);
        rc = chakra_finish(&c, o, 0, name, out);
    }
done:
    for (size_t i = 0; i < ext_cap; i++)
        free(ext[i]);
    free(ext);
    free(header);
    free(r.buf);
    arena_release(&arena);
    chakra_free(&c);
    return rc;
}
