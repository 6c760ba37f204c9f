/* commsched — the dataflow graph of one training step (one rank's view).
 *
 * A graph holds process groups, buffers (graph inputs and node outputs, some
 * of them aliases of others), and nodes of three kinds: compute, collective
 * and wait. The node array order is the initial schedule and is always a
 * valid topological order of the data and control dependencies.
 *
 * Graphs are immutable once built. They come from JSON
 * (commsched_graph_load_file) or from a compiler through the builder below;
 * both paths run the same validation and report errors by JSON path, e.g.
 * "nodes[12].inputs[1]: unknown buffer \"w9\"" (the builder uses the same
 * paths, counting nodes and fields in the order they were added).
 *
 * Thread safety: a finished graph may be read from many threads at once.
 * A builder belongs to one thread at a time.
 *
 * Costs in this and the other headers: V nodes, B buffers, R reads (every
 * node's inputs, summed), E dependency edges (data, `after`, `after_fake`
 * and the in-place ones derived), C collectives, d a node's dependencies.
 */
#ifndef COMMSCHED_GRAPH_H
#define COMMSCHED_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "commsched/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct commsched_graph commsched_graph;
typedef struct commsched_builder commsched_builder;

/* "No index": an absent group, producer, alias base or node. */
#define COMMSCHED_NONE UINT32_MAX

/* The format's limits (docs/FORMAT.md "Limits"). The builder, and so the
 * loader and the importers, reject anything beyond them with a located
 * error. They are chosen so that no input can make a derived figure wrong:
 * every sum of buffer sizes fits an int64_t and is exact in a double, ring
 * step counts fit a uint32_t, and every time the model derives is finite. */
#define COMMSCHED_MAX_SIZE (INT64_C(1) << 53)     /* bytes: one buffer, and \
                                                     all of a graph's real   \
                                                     buffers together */
#define COMMSCHED_MAX_GROUP_SIZE (UINT32_C(1) << 24) /* ranks in a group */
#define COMMSCHED_MAX_RUNTIME_NS 1e30 /* a node's runtime, given or estimated */
#define COMMSCHED_MAX_WORK 1e30       /* a node's flops and bytes */

typedef enum commsched_node_kind {
    COMMSCHED_NODE_COMPUTE = 0,
    COMMSCHED_NODE_COLLECTIVE = 1,
    COMMSCHED_NODE_WAIT = 2
} commsched_node_kind;

#define COMMSCHED_COLL_OP_MAP(XX)                                              \
    XX(ALL_REDUCE, "all_reduce")                                               \
    XX(ALL_GATHER, "all_gather")                                               \
    XX(REDUCE_SCATTER, "reduce_scatter")                                       \
    XX(ALL_TO_ALL, "all_to_all")                                               \
    XX(BROADCAST, "broadcast")                                                 \
    XX(REDUCE, "reduce")                                                       \
    XX(SEND, "send")                                                           \
    XX(RECV, "recv")                                                           \
    XX(BARRIER, "barrier")

typedef enum commsched_coll_op {
#define COMMSCHED_COLL_ENUM_(code, text) COMMSCHED_COLL_##code,
    COMMSCHED_COLL_OP_MAP(COMMSCHED_COLL_ENUM_)
#undef COMMSCHED_COLL_ENUM_
    COMMSCHED_COLL_OP_COUNT
} commsched_coll_op;

/* Element types, for bucketing keys and the runtimes' buffers.
 * COMMSCHED_DTYPE_NONE means "not given". */
#define COMMSCHED_DTYPE_MAP(XX)                                                \
    XX(FLOAT64, "float64", 8)                                                  \
    XX(FLOAT32, "float32", 4)                                                  \
    XX(FLOAT16, "float16", 2)                                                  \
    XX(BFLOAT16, "bfloat16", 2)                                                \
    XX(FLOAT8_E4M3FN, "float8_e4m3fn", 1)                                      \
    XX(FLOAT8_E5M2, "float8_e5m2", 1)                                          \
    XX(INT64, "int64", 8)                                                      \
    XX(INT32, "int32", 4)                                                      \
    XX(INT16, "int16", 2)                                                      \
    XX(INT8, "int8", 1)                                                        \
    XX(UINT8, "uint8", 1)                                                      \
    XX(BOOL, "bool", 1)

typedef enum commsched_dtype {
    COMMSCHED_DTYPE_NONE = 0,
#define COMMSCHED_DTYPE_ENUM_(code, text, size) COMMSCHED_DTYPE_##code,
    COMMSCHED_DTYPE_MAP(COMMSCHED_DTYPE_ENUM_)
#undef COMMSCHED_DTYPE_ENUM_
    COMMSCHED_DTYPE_COUNT
} commsched_dtype;

#define COMMSCHED_REDUCE_OP_MAP(XX)                                            \
    XX(SUM, "sum")                                                             \
    XX(AVG, "avg")                                                             \
    XX(PRODUCT, "product")                                                     \
    XX(MIN, "min")                                                             \
    XX(MAX, "max")                                                             \
    XX(PREMUL_SUM, "premul_sum")

typedef enum commsched_reduce_op {
    COMMSCHED_REDUCE_NONE = 0,
#define COMMSCHED_REDUCE_ENUM_(code, text) COMMSCHED_REDUCE_##code,
    COMMSCHED_REDUCE_OP_MAP(COMMSCHED_REDUCE_ENUM_)
#undef COMMSCHED_REDUCE_ENUM_
    COMMSCHED_REDUCE_OP_COUNT
} commsched_reduce_op;

/* Name tables: "compute", "all_gather", "bfloat16", "sum". NULL when out of
 * range (and for the NONE values). */
COMMSCHED_EXPORT const char *commsched_node_kind_str(commsched_node_kind kind);
COMMSCHED_EXPORT const char *commsched_coll_op_str(commsched_coll_op op);
COMMSCHED_EXPORT const char *commsched_dtype_str(commsched_dtype dtype);
COMMSCHED_EXPORT unsigned commsched_dtype_size(commsched_dtype dtype);
COMMSCHED_EXPORT const char *commsched_reduce_op_str(commsched_reduce_op op);

/* ---------------------------------------------------------------------- */
/* Builder: the API a compiler calls instead of writing JSON.              */
/* ---------------------------------------------------------------------- */

/* One output of a node: either a real buffer of `size` bytes (alias_of NULL)
 * or an alias of a buffer the node reads or of an earlier output of the same
 * node (size ignored). */
typedef struct commsched_output_spec {
    const char *name;
    int64_t size;
    const char *alias_of;
} commsched_output_spec;

/* Everything a node may carry. Strings and arrays are borrowed for the
 * duration of the call only (the builder copies them). Optional numbers use
 * negative values for "absent". Zero-initialise and set what you need. */
typedef struct commsched_node_spec {
    const char *name;
    commsched_node_kind kind;
    const char *op;            /* compute/wait: free text (may be NULL);
                                  collective: one of commsched_coll_op_str() */
    const char *group;         /* collectives only */
    int is_sync;               /* collectives: 1 = blocks the compute stream */
    commsched_dtype dtype;
    commsched_reduce_op reduce_op;
    const char *const *inputs; size_t n_inputs;
    const commsched_output_spec *outputs; size_t n_outputs;
    const char *const *after; size_t n_after;           /* control deps */
    const char *const *after_fake; size_t n_after_fake; /* ordering only */
    double runtime_ns;         /* < 0: estimate with the cost model */
    double flops;              /* < 0: absent */
    double bytes;              /* < 0: absent */
    int gemm_like;
} commsched_node_spec;

/* Creates an empty builder; *out is owned by the caller (destroy with
 * commsched_builder_destroy). name may be NULL. Fails only with ENOMEM. */
COMMSCHED_EXPORT commsched_status commsched_builder_create(
    const char *name, commsched_builder **out, commsched_error *err);

/* Adds a process group. hosts = 0 derives it from the device profile's GPUs
 * per host. Name checks are deferred to commsched_builder_finish, except
 * the immediate ones documented there. */
COMMSCHED_EXPORT commsched_status commsched_builder_add_group(
    commsched_builder *b, const char *name, int64_t size, int64_t hosts,
    commsched_error *err);

/* Adds a graph input of `size` bytes. freeable: freed after its last reader
 * (Inductor's freeable input buffers); otherwise never counted. */
COMMSCHED_EXPORT commsched_status commsched_builder_add_input(
    commsched_builder *b, const char *name, int64_t size, int freeable,
    commsched_error *err);

/* Marks a buffer (an input or any node output) as a graph output. */
COMMSCHED_EXPORT commsched_status commsched_builder_add_output(
    commsched_builder *b, const char *buffer, commsched_error *err);

/* Appends a node; nodes run in the order they are added. References to
 * buffers, groups and nodes are resolved by commsched_builder_finish.
 * O(the spec's inputs + outputs + after + after_fake) amortised. */
COMMSCHED_EXPORT commsched_status commsched_builder_add_node(
    commsched_builder *b, const commsched_node_spec *spec,
    commsched_error *err);

/* Says which of its node's inputs output `output` of the node added last
 * (its index in that node's spec.outputs) is computed from: the format's
 * "from" (docs/FORMAT.md). Without this call an output is computed from
 * all of its node's inputs. For a node that fuses several kernels, whose
 * outputs each come from some of its inputs only: raise_comms ranks the
 * kernels that feed a collective by it, as Inductor's ancestors do.
 * n_from may be 0 (computed from none of the inputs). Names are copied
 * and resolved by commsched_builder_finish, which fails when one is not
 * among that node's inputs ("nodes[i].outputs[k].from[m]: ..."). Fails
 * with ESCHEMA when no node was added, `output` is not one of its outputs,
 * its "from" was already given, or a name is empty or not UTF-8; a failed
 * call marks the builder failed as a failed add does. O(n_from). */
COMMSCHED_EXPORT commsched_status commsched_builder_set_output_from(
    commsched_builder *b, size_t output, const char *const *from,
    size_t n_from, commsched_error *err);

/* Flags for commsched_builder_finish. */
#define COMMSCHED_FINISH_TOPOSORT 1u /* repair a non-topological node order */

/* Resolves every name, validates the graph (the list in docs/FORMAT.md) and
 * returns it in *out (caller destroys with commsched_graph_destroy). The
 * builder is consumed: it is destroyed whether or not finish succeeds.
 * On failure *out is NULL and err names the first problem by JSON path.
 * If any earlier add_* call failed, finish fails with that call's status:
 * a failed add leaves nothing half-added but marks the builder, so an
 * ignored error can never yield a graph that silently lacks a node.
 * Cost: O(V + B + R + E) expected (names are hashed), plus O(d^2) for a
 * node with d dependencies (its row is insertion-sorted) and O(a x r) for
 * one with a alias outputs and r inputs (each alias base is searched among
 * its inputs). A cycle to report, or COMMSCHED_FINISH_TOPOSORT repairing
 * the order, adds an O(V + E) igraph pass; a repair builds twice. */
COMMSCHED_EXPORT commsched_status commsched_builder_finish(
    commsched_builder *b, unsigned flags, commsched_graph **out,
    commsched_error *err);

/* Frees a builder that was never finished. NULL is allowed. */
COMMSCHED_EXPORT void commsched_builder_destroy(commsched_builder *b);

/* ---------------------------------------------------------------------- */
/* JSON (format v1, docs/FORMAT.md)                                        */
/* ---------------------------------------------------------------------- */

/* Loads and validates a graph file; path "-" reads standard input.
 * flags as for commsched_builder_finish. On failure *out is NULL and err
 * holds line:column (syntax) or a JSON path (semantics). Caller destroys.
 * Cost: O(file size) to parse (twice on a syntax error, to tell it from
 * running out of memory), then commsched_builder_finish's. */
COMMSCHED_EXPORT commsched_status commsched_graph_load_file(
    const char *path, unsigned flags, commsched_graph **out,
    commsched_error *err);

/* The same from a NUL-terminated string, at the same cost. */
COMMSCHED_EXPORT commsched_status commsched_graph_load_string(
    const char *text, unsigned flags, commsched_graph **out,
    commsched_error *err);

/* Writes the graph as format v1 JSON, nodes in the given order (order may be
 * NULL: the graph's own order; otherwise a permutation of node indices).
 * `schedule_json`, when not NULL, is a JSON object text placed under
 * "schedule" (it must parse). Writes to an already open stream; the CLI
 * wraps this in an atomic temporary-file-and-rename. From 10,000 nodes on
 * the node lines are made on OpenMP's threads (outside a parallel region;
 * OMP_NUM_THREADS=1 keeps the call on the caller's thread) and written in
 * order from whichever thread holds the turn: the bytes are the same, but
 * a stream with callbacks (fopencookie) may be called from another thread
 * than the caller's, one call at a time. O(V + B + R + E) plus parsing
 * schedule_json. */
COMMSCHED_EXPORT commsched_status commsched_graph_save_stream(
    const commsched_graph *g, const uint32_t *order, const char *schedule_json,
    FILE *out, commsched_error *err);

/* Writes the "schedule" value of a saved graph: called once, from inside
 * commsched_graph_save_stream_with, with `out` positioned right after
 * "schedule":. It must write exactly one JSON object (compact, or the
 * file is no longer one node per line) and nothing else; the library does
 * not check what it writes. Returns COMMSCHED_OK, or a status with err
 * set, which the save then returns (the output is incomplete). */
typedef commsched_status (*commsched_schedule_writer)(FILE *out, void *ctx,
                                                      commsched_error *err);

/* commsched_graph_save_stream with the "schedule" object written by the
 * caller's write_schedule (NULL: no schedule) instead of parsed from text:
 * for a schedule that is built at once as it is written (the passes'
 * per-collective statistics, commsched_run_stats_write_json), with no text
 * held in between and nothing parsed. ctx is handed to write_schedule;
 * neither is kept after the call. Fails as commsched_graph_save_stream
 * does, or with write_schedule's status; a failed save has written part of
 * the graph (the CLI writes through a temporary file for that reason).
 * O(V + B + R + E) plus write_schedule's own. */
COMMSCHED_EXPORT commsched_status commsched_graph_save_stream_with(
    const commsched_graph *g, const uint32_t *order,
    commsched_schedule_writer write_schedule, void *ctx, FILE *out,
    commsched_error *err);

/* Frees the graph. NULL is allowed. */
COMMSCHED_EXPORT void commsched_graph_destroy(commsched_graph *g);

/* Structural equality (names, kinds, fields, edges, order). Returns 1 when
 * equal; otherwise 0 and, when why is not NULL, a short description of the
 * first difference. O(V + B + R + E) and the names' lengths, up to the
 * first difference. */
COMMSCHED_EXPORT int commsched_graph_equal(const commsched_graph *a,
                                           const commsched_graph *b,
                                           char *why, size_t why_size);

/* ---------------------------------------------------------------------- */
/* Read-only accessors (O(1) unless stated; indices must be in range).     */
/* Returned strings and arrays are borrowed until the graph is destroyed.  */
/* ---------------------------------------------------------------------- */

COMMSCHED_EXPORT const char *commsched_graph_name(const commsched_graph *g);
COMMSCHED_EXPORT uint32_t commsched_graph_node_count(const commsched_graph *g);
COMMSCHED_EXPORT uint32_t commsched_graph_buffer_count(const commsched_graph *g);
COMMSCHED_EXPORT uint32_t commsched_graph_group_count(const commsched_graph *g);
COMMSCHED_EXPORT const char *commsched_graph_node_name(const commsched_graph *g,
                                                       uint32_t node);
COMMSCHED_EXPORT commsched_node_kind
commsched_graph_node_kind(const commsched_graph *g, uint32_t node);
/* Node index by name, or COMMSCHED_NONE. O(1) expected. */
COMMSCHED_EXPORT uint32_t commsched_graph_find_node(const commsched_graph *g,
                                                    const char *name);
COMMSCHED_EXPORT uint32_t commsched_graph_find_buffer(const commsched_graph *g,
                                                      const char *name);
COMMSCHED_EXPORT const char *commsched_graph_buffer_name(
    const commsched_graph *g, uint32_t buffer);
/* Graph inputs, graph outputs, and group `group`'s name (group <
 * commsched_graph_group_count). */
COMMSCHED_EXPORT uint32_t commsched_graph_input_count(const commsched_graph *g);
COMMSCHED_EXPORT uint32_t commsched_graph_output_count(const commsched_graph *g);
COMMSCHED_EXPORT const char *commsched_graph_group_name(
    const commsched_graph *g, uint32_t group);
/* Group `group`'s size in ranks (group < commsched_graph_group_count). */
COMMSCHED_EXPORT uint32_t commsched_graph_group_size(const commsched_graph *g,
                                                     uint32_t group);
/* For a collective node: 1, with its op and group index in *op and *group
 * (either may be NULL). For any other node: 0, outputs untouched. */
COMMSCHED_EXPORT int commsched_graph_node_collective(const commsched_graph *g,
                                                    uint32_t node,
                                                    commsched_coll_op *op,
                                                    uint32_t *group);

/* The dependencies of `node` derived from in-place writes when the graph
 * was built (docs/FORMAT.md, "In-place writes"): nodes that must complete
 * before it although no data or `after` edge says so. Returns their count
 * and points *deps at them (ascending node indices, borrowed). Every pass
 * and commsched_schedule_check respect them like data edges. */
COMMSCHED_EXPORT uint32_t commsched_graph_node_derived_deps(
    const commsched_graph *g, uint32_t node, const uint32_t **deps);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_GRAPH_H */
