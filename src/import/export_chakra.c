/* commsched_export_chakra — the graph as a Chakra binary execution trace
 * (what `commsched export chakra GRAPH -o PREFIX` writes once per rank,
 * PREFIX.<rank>.et as ASTRA-sim expects), so ASTRA-sim can simulate the
 * order commsched chose.
 *
 * Each node becomes one Node record whose id is its position in the
 * graph's order: ASTRA-sim's feeder issues the smallest ready id first, so
 * it replays that order (an optimized schedule included).
 * - compute: COMP_NODE (MEM_LOAD / MEM_STORE for ops mem_load /
 *   mem_store), duration_micros from the file's runtime or the cost model,
 *   tensor_size the bytes of its (non-alias) outputs;
 * - collective: COMM_COLL_NODE with comm_type and comm_size as ASTRA-sim
 *   reads it, the bytes each rank puts in (comm_size_of), pg_name = its
 *   group; send / recv: COMM_SEND_NODE
 *   / COMM_RECV_NODE. duration_micros only when the graph says how long
 *   (ASTRA-sim simulates collectives itself);
 * - wait: a COMP_NODE of duration 0 that depends on its collective (in
 *   Chakra, depending on a collective is waiting for it);
 * - data_deps: the producers of the buffers a node reads; ctrl_deps: its
 *   "after" and "after_fake" edges. is_cpu_op is false throughout.
 * Every record also carries its node as commsched JSON ("commsched.node";
 * the metadata holds the rest of the graph as "commsched.graph"), so
 * `commsched import chakra` of an exported file gives back the very graph;
 * other readers skip attributes they do not know. Without them
 * (--chakra-fields-only) the file holds what a PyTorch trace converted
 * by Chakra holds, and imports as one.
 * All ranks run the same step (SPMD), so the files are identical. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_common.h"
#include "chakra_et.pb-c.h"
#include "commsched/cost.h"

/* Chakra's CollectiveCommType for a commsched op (send/recv: -1, they
 * are node types of their own). */
static int comm_type_of(commsched_coll_op op)
{
    switch (op) {
    case COMMSCHED_COLL_ALL_REDUCE: return 0;
    case COMMSCHED_COLL_REDUCE: return 1;
    case COMMSCHED_COLL_ALL_GATHER: return 2;
    case COMMSCHED_COLL_BROADCAST: return 5;
    case COMMSCHED_COLL_ALL_TO_ALL: return 6;
    case COMMSCHED_COLL_REDUCE_SCATTER: return 7;
    case COMMSCHED_COLL_BARRIER: return 9;
    default: return -1;
    }
}

/* Writes one length-delimited message. */
static int put_message(FILE *f, const ProtobufCMessage *m, uint8_t **buf,
                       size_t *cap)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    if (len > *cap) {
        uint8_t *t = realloc(*buf, len);
        if (!t)
            return -1;
        *buf = t;
        *cap = len;
    }
    protobuf_c_message_pack(m, *buf);
    uint8_t head[10];
    size_t h = 0;
    uint64_t v = len;
    do {
        head[h] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            head[h] |= 0x80;
        h++;
    } while (v);
    if (fwrite(head, 1, h, f) != h || (len && fwrite(*buf, 1, len, f) != len))
        return -1;
    return 0;
}

static void attr_init(CommschedChakra__Attribute *a, const char *name)
{
    commsched_chakra__attribute__init(a);
    a->name = (char *)name;
}

/* Name -> node index, for the buffers (outputs, aliases included) and the
 * nodes: a jansson object used as a hash table of integers. */
static int index_names(json_t *nodes, json_t *producer, json_t *by_name)
{
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        json_t *name = json_object_get(node, "name");
        if (json_object_set_new(by_name, json_string_value(name),
                                json_integer((json_int_t)i)) != 0)
            return -1;
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(node, "outputs"), k, o) {
            if (json_object_set_new(producer,
                                    json_string_value(json_object_get(o, "name")),
                                    json_integer((json_int_t)i)) != 0)
                return -1;
        }
    }
    return 0;
}

/* The ids (node indices) that `names` resolve to through `table`,
 * deduplicated, appended to ids[*n]. */
static void add_ids(json_t *names, json_t *table, uint64_t *ids, size_t *n)
{
    size_t k;
    json_t *v;
    json_array_foreach(names, k, v) {
        json_t *hit = json_object_get(table, json_string_value(v));
        if (!hit)
            continue; /* a graph input: no producer */
        uint64_t id = (uint64_t)json_integer_value(hit);
        int dup = 0;
        for (size_t j = 0; j < *n && !dup; j++)
            dup = ids[j] == id;
        if (!dup)
            ids[(*n)++] = id;
    }
}

/* comm_size as ASTRA-sim reads it: what each NPU puts in. Its collective
 * phases end with comm_size x k bytes for an all-gather and comm_size / k
 * for a reduce-scatter (Ring, HalvingDoubling), the others with comm_size.
 * From the bytes the cost model charges (the larger side): an all-gather
 * puts in 1/k of what it writes, every other collective what it charges.
 * `import chakra` inverts it. */
static int64_t comm_size_of(const commsched_graph *g, uint32_t node,
                            commsched_coll_op op, json_int_t k)
{
    double bytes = commsched_cost_collective_bytes(g, node);
    if (op == COMMSCHED_COLL_ALL_GATHER && k > 1)
        bytes = floor(bytes / (double)k);
    return (int64_t)bytes;
}

/* Writes the whole trace to f. */
static int write_trace(FILE *f, const commsched_graph *g, json_t *doc,
                       const double *runtime, int exact)
{
    json_t *nodes = json_incref(json_object_get(doc, "nodes"));
    json_t *grps = json_object_get(doc, "groups"); /* in index order */
    json_t *producer = json_object(), *by_name = json_object();
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t *data = NULL, *ctrl = NULL;
    char *header = NULL;
    int rc = -1;
    if (!producer || !by_name || index_names(nodes, producer, by_name) != 0)
        goto done;
    /* The metadata: the graph without its nodes. */
    json_object_set_new(doc, "nodes", json_array());
    header = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!header)
        goto done;
    {
        CommschedChakra__GlobalMetadata meta;
        commsched_chakra__global_metadata__init(&meta);
        meta.version = (char *)"0.0.4";
        CommschedChakra__Attribute schema, graph;
        attr_init(&schema, "schema");
        schema.value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL;
        schema.string_val = (char *)"1.0.2-chakra.0.0.4";
        attr_init(&graph, "commsched.graph");
        graph.value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL;
        graph.string_val = header;
        CommschedChakra__Attribute *attrs[2] = {&schema, &graph};
        meta.attr = attrs;
        meta.n_attr = exact ? 2 : 1;
        if (put_message(f, &meta.base, &buf, &cap) != 0)
            goto done;
    }
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        json_t *inputs = json_object_get(node, "inputs");
        json_t *after = json_object_get(node, "after");
        json_t *fake = json_object_get(node, "after_fake");
        size_t nin = json_array_size(inputs);
        size_t nct = json_array_size(after) + json_array_size(fake);
        uint64_t *d = realloc(data, (nin ? nin : 1) * sizeof *d);
        if (d)
            data = d;
        uint64_t *c = realloc(ctrl, (nct ? nct : 1) * sizeof *c);
        if (c)
            ctrl = c;
        if (!d || !c)
            goto done;
        size_t nd = 0, nc = 0;
        add_ids(inputs, producer, data, &nd);
        add_ids(after, by_name, ctrl, &nc);
        add_ids(fake, by_name, ctrl, &nc);

        CommschedChakra__Node m;
        commsched_chakra__node__init(&m);
        m.id = (uint64_t)i;
        m.name = (char *)commsched_graph_node_name(g, (uint32_t)i);
        m.data_deps = data;
        m.n_data_deps = nd;
        m.ctrl_deps = ctrl;
        m.n_ctrl_deps = nc;
        CommschedChakra__Attribute a[5];
        CommschedChakra__Attribute *ap[5];
        size_t na = 0;
        attr_init(&a[na], "is_cpu_op");
        a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_BOOL_VAL;
        a[na].bool_val = 0;
        na++;
        commsched_coll_op op;
        uint32_t group;
        double us = runtime[i] / 1000.0;
        if (commsched_graph_node_collective(g, (uint32_t)i, &op, &group)) {
            int t = comm_type_of(op);
            m.type = op == COMMSCHED_COLL_SEND   ? COMMSCHED_CHAKRA__NODE_TYPE__COMM_SEND_NODE
                     : op == COMMSCHED_COLL_RECV ? COMMSCHED_CHAKRA__NODE_TYPE__COMM_RECV_NODE
                                                 : COMMSCHED_CHAKRA__NODE_TYPE__COMM_COLL_NODE;
            if (t >= 0) {
                attr_init(&a[na], "comm_type");
                a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_INT64_VAL;
                a[na].int64_val = t;
                na++;
            }
            attr_init(&a[na], "comm_size");
            a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_INT64_VAL;
            a[na].int64_val = comm_size_of(
                g, (uint32_t)i, op,
                json_integer_value(json_object_get(
                    json_array_get(grps, group), "size")));
            na++;
            attr_init(&a[na], "pg_name");
            a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL;
            a[na].string_val = (char *)commsched_graph_group_name(g, group);
            na++;
            if (json_object_get(node, "runtime_ns"))
                m.duration_micros = (uint64_t)llround(us);
        } else {
            const char *o = json_string_value(json_object_get(node, "op"));
            m.type = o && strcmp(o, "mem_load") == 0
                         ? COMMSCHED_CHAKRA__NODE_TYPE__MEM_LOAD_NODE
                     : o && strcmp(o, "mem_store") == 0
                         ? COMMSCHED_CHAKRA__NODE_TYPE__MEM_STORE_NODE
                         : COMMSCHED_CHAKRA__NODE_TYPE__COMP_NODE;
            m.duration_micros =
                commsched_graph_node_kind(g, (uint32_t)i) ==
                        COMMSCHED_NODE_WAIT
                    ? 0
                    : (uint64_t)llround(us);
            /* what it allocates: its outputs that are not aliases */
            json_int_t bytes = 0;
            size_t k;
            json_t *o2;
            json_array_foreach(json_object_get(node, "outputs"), k, o2)
                bytes += json_integer_value(json_object_get(o2, "size"));
            if (bytes > 0) {
                attr_init(&a[na], "tensor_size");
                a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_INT64_VAL;
                a[na].int64_val = (int64_t)bytes;
                na++;
            }
        }
        char *own = NULL;
        if (exact) {
            own = json_dumps(node, JSON_COMPACT | JSON_PRESERVE_ORDER);
            if (!own)
                goto done;
            attr_init(&a[na], "commsched.node");
            a[na].value_case = COMMSCHED_CHAKRA__ATTRIBUTE__VALUE_STRING_VAL;
            a[na].string_val = own;
            na++;
        }
        for (size_t k = 0; k < na; k++)
            ap[k] = &a[k];
        m.attr = ap;
        m.n_attr = na;
        int bad = put_message(f, &m.base, &buf, &cap);
        free(own);
        if (bad)
            goto done;
    }
    rc = 0;
done:
    json_decref(nodes);
    json_decref(producer);
    json_decref(by_name);
    free(header);
    free(buf);
    free(data);
    free(ctrl);
    return rc;
}

long commsched_export_chakra_ranks(const commsched_graph *g)
{
    long ranks = 1;
    for (uint32_t k = 0; k < commsched_graph_group_count(g); k++)
        if ((long)commsched_graph_group_size(g, k) > ranks)
            ranks = (long)commsched_graph_group_size(g, k);
    return ranks;
}

commsched_status commsched_export_chakra(const commsched_graph *g,
                                         const double *runtime, int exact,
                                         FILE *out, commsched_error *err)
{
    /* The graph as format-v1 JSON, parsed back: the accessors do not give
     * every field, and the exact node text goes into the trace. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    commsched_status st = commsched_graph_save_stream(g, NULL, NULL, mem, err);
    if (fclose(mem) != 0 && st == COMMSCHED_OK)
        st = commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
    if (st != COMMSCHED_OK) {
        free(text);
        return st;
    }
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    free(text);
    if (!doc)
        return commsched_error_set(err, COMMSCHED_EINTERNAL, NULL,
                                   "the graph's own JSON does not parse: %s",
                                   jerr.text);
    errno = 0;
    int bad = write_trace(out, g, doc, runtime, exact);
    json_decref(doc);
    if (bad)
        return errno ? commsched_error_set(err, COMMSCHED_EIO, NULL,
                                           "cannot write: %s", strerror(errno))
                     : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                           "out of memory");
    return COMMSCHED_OK;
}
