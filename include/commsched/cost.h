/* commsched — runtime estimates: device profiles and the cost model
 * (docs/COST.md).
 *
 * Precedence for every node: the node's own runtime_ns ("file"); otherwise
 * the model ("model"); a node the model has nothing to go on for (a compute
 * node without flops or bytes, any wait) costs 0 ("none").
 *
 * - compute: roofline, max(flops / peak_flops, bytes / mem_bw);
 * - collective: NCCL's model as Inductor's comm_analysis.py uses it. Two
 *   modes: COMMSCHED_COMM_MODEL_NCCL (default) prices Ring and Tree with the
 *   LL, LL128 and Simple protocols and keeps the fastest, as NCCL's tuner
 *   does; COMMSCHED_COMM_MODEL_INDUCTOR is Inductor's canonical single-protocol
 *   estimate (Ring, LL, two channels), which reproduces Inductor's own
 *   figures to the digit (docs/COST.md, "Mode `inductor`: the canonical
 *   single-protocol estimate").
 *
 * Every estimate is also available as the cost tuple of tensorcraft (seed
 * 000): latency, bandwidth term, computation, memory delta, with
 * runtime = latency + max(bandwidth, computation).
 *
 * Thread safety: profiles and graphs are read-only here; every function may
 * run concurrently on distinct outputs.
 */
#ifndef COMMSCHED_COST_H
#define COMMSCHED_COST_H

#include <stdint.h>

#include "commsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

struct commsched_memory; /* commsched/memory.h */

/* NCCL's algorithm and protocol indices, in NCCL's own order. */
typedef enum commsched_nccl_algo {
    COMMSCHED_ALGO_TREE = 0,
    COMMSCHED_ALGO_RING = 1,
    COMMSCHED_ALGO_COUNT
} commsched_nccl_algo;

typedef enum commsched_nccl_proto {
    COMMSCHED_PROTO_LL = 0,
    COMMSCHED_PROTO_LL128 = 1,
    COMMSCHED_PROTO_SIMPLE = 2,
    COMMSCHED_PROTO_COUNT
} commsched_nccl_proto;

/* The links NCCL distinguishes for per-step hardware latency. */
typedef enum commsched_link {
    COMMSCHED_LINK_NVLINK = 0,
    COMMSCHED_LINK_PCI = 1,
    COMMSCHED_LINK_NET = 2,
    COMMSCHED_LINK_COUNT
} commsched_link;

#define COMMSCHED_DEVICE_NAME_LENGTH 64

/* A device profile: everything the model reads. All fields are public and
 * documented field by field in docs/COST.md. Units: FLOP/s and bytes/s for
 * the roofline, GB/s (1e9 bytes/s) for NCCL bandwidths, µs for NCCL
 * latencies (NCCL's own units, so the tables read like tuning.cc). */
typedef struct commsched_device {
    char name[COMMSCHED_DEVICE_NAME_LENGTH];
    double peak_flops;        /* FLOP/s, dense, the compute roofline's roof */
    double mem_bw;            /* bytes/s, the roofline's memory slope */
    uint32_t gpus_per_host;   /* hosts = ceil(ranks / this) when a group
                                 does not say */
    commsched_link intra_link; /* NVLINK or PCI: the intra-host link */
    double ll_max_bw[3];      /* GB/s, NCCL llMaxBws by host count: [1 host,
                                 2 hosts, 4+ hosts]; [0] is the GPU's row,
                                 [1], [2] the host CPU's row */
    /* Inductor's canonical model (config.intra_node_bw / inter_node_bw). */
    double inductor_intra_bw; /* GB/s, 300 in Inductor */
    double inductor_inter_bw; /* GB/s, 25 in Inductor */
    /* NCCL model. */
    uint32_t channels;        /* NCCL channels */
    double bus_bw_intra;      /* GB/s, channels x per-channel NVLink/PCI bw */
    double bus_bw_inter;      /* GB/s, per-GPU network bandwidth */
    double ll128_max_bw_per_channel; /* GB/s, perChMaxRingLL128Bw */
    double tree_max_bw_per_channel;  /* GB/s, perChMaxTreeBw */
    double net_overhead;      /* µs per step when the group spans hosts
                                 (x3 for Simple) */
    double base_lat[COMMSCHED_ALGO_COUNT][COMMSCHED_PROTO_COUNT]; /* µs */
    double hw_lat[COMMSCHED_LINK_COUNT][COMMSCHED_ALGO_COUNT]
                 [COMMSCHED_PROTO_COUNT];                         /* µs */
} commsched_device;

/* A built-in profile by name ("h100", "a100", "b200"), or NULL. The result
 * is a static constant table: never freed, safe from any thread. */
COMMSCHED_EXPORT const commsched_device *
commsched_device_builtin(const char *name);

/* The i-th built-in profile (0 ..), NULL past the end. For listings. */
COMMSCHED_EXPORT const commsched_device *commsched_device_builtin_at(unsigned i);

/* Reads a JSON profile file (docs/COST.md) into *out (caller-allocated).
 * Syntax errors carry line:column, field errors a JSON path such as
 * "nccl.hw_latency.nvlink.ring[2]" (EPARSE / ESCHEMA, both bad input).
 * *out is unchanged on failure. */
COMMSCHED_EXPORT commsched_status commsched_device_load_file(
    const char *path, commsched_device *out, commsched_error *err);

/* The same from a NUL-terminated JSON text. */
COMMSCHED_EXPORT commsched_status commsched_device_load_string(
    const char *text, commsched_device *out, commsched_error *err);

/* A built-in name, or else a profile file path: what --device takes.
 * EINVAL (bad input) names the built-ins when neither fits. */
COMMSCHED_EXPORT commsched_status commsched_device_lookup(
    const char *name_or_path, commsched_device *out, commsched_error *err);

/* Checks the numbers a profile must satisfy (positive roofline and
 * bandwidths, non-negative latencies). The loaders call it; call it on a
 * profile built by hand. EINVAL with the field as the path. */
COMMSCHED_EXPORT commsched_status commsched_device_check(
    const commsched_device *d, commsched_error *err);

typedef enum commsched_comm_model {
    COMMSCHED_COMM_MODEL_NCCL = 0,     /* Ring/Tree x LL/LL128/Simple, min */
    COMMSCHED_COMM_MODEL_INDUCTOR = 1  /* Inductor's canonical Ring + LL */
} commsched_comm_model;

/* "nccl" / "inductor"; NULL when out of range. */
COMMSCHED_EXPORT const char *commsched_comm_model_str(commsched_comm_model m);
/* Parses "nccl" / "inductor"; returns 0, or -1 when unknown. */
COMMSCHED_EXPORT int commsched_comm_model_parse(const char *s,
                                                commsched_comm_model *out);
COMMSCHED_EXPORT const char *commsched_nccl_algo_str(commsched_nccl_algo a);
COMMSCHED_EXPORT const char *commsched_nccl_proto_str(commsched_nccl_proto p);

/* Where a runtime came from. */
typedef enum commsched_cost_source {
    COMMSCHED_SOURCE_NONE = 0,  /* nothing to estimate from: costs 0 */
    COMMSCHED_SOURCE_FILE = 1,  /* the node's runtime_ns */
    COMMSCHED_SOURCE_MODEL = 2, /* the cost model */
    COMMSCHED_SOURCE_MEASURED = 3, /* a measured table: this kernel, or a
                                      collective of this size */
    COMMSCHED_SOURCE_FITTED = 4,   /* a fit to measurements: a collective
                                      between or near measured sizes, a
                                      kernel on the fitted roofline */
    COMMSCHED_SOURCE_COUNT
} commsched_cost_source;

/* "none" / "file" / "model" / "measured" / "fitted". */
COMMSCHED_EXPORT const char *commsched_cost_source_str(commsched_cost_source s);

/* "F from the file, M from the model, N with nothing to go on", with
 * "K measured, J fitted, " before the last when either is nonzero: how
 * the reports count where a graph's runtimes came from. counts[s]: the
 * nodes of source s. Into buf (truncated to size); returns buf. */
COMMSCHED_EXPORT const char *commsched_cost_sources_text(
    const uint32_t counts[COMMSCHED_SOURCE_COUNT], char *buf, size_t size);

/* tensorcraft's Cost(latency, bandwidth, computation, max_memory_delta).
 * Times in ns. runtime = latency_ns + max(bandwidth_ns, computation_ns):
 * a collective has no computation, a compute node no latency. */
typedef struct commsched_cost_tuple {
    double latency_ns;      /* fixed per-call cost (NCCL base + per step) */
    double bandwidth_ns;    /* bytes over the achievable bandwidth */
    double computation_ns;  /* flops over the peak */
    int64_t memory_delta;   /* bytes allocated minus bytes freed after it,
                               in the order the memory model was given
                               (0 when none was) */
} commsched_cost_tuple;

/* One collective's price, with the terms that make it up. */
typedef struct commsched_coll_cost {
    double time_ns;         /* latency_ns + bandwidth_ns */
    double latency_ns;
    double bandwidth_ns;
    double bus_bw;          /* GB/s after the protocol's cap */
    double alg_bw;          /* GB/s: bus_bw x ranks / steps (ring) */
    uint32_t ranks, hosts;
    uint32_t steps;         /* ring steps (or 2 x tree depth) */
    uint32_t inter_steps;   /* steps that cross hosts */
    commsched_nccl_algo algo;
    commsched_nccl_proto proto;
} commsched_coll_cost;

/* Prices one collective of `bytes` over `ranks` ranks on `hosts` hosts
 * (0: ceil(ranks / gpus_per_host)). A group of one rank costs 0. EINVAL on
 * bytes < 0, ranks outside 1..COMMSCHED_MAX_GROUP_SIZE, hosts > ranks, or an
 * unusable profile. O(1). */
COMMSCHED_EXPORT commsched_status commsched_cost_collective(
    const commsched_device *d, commsched_comm_model model,
    commsched_coll_op op, double bytes, uint32_t ranks, uint32_t hosts,
    commsched_coll_cost *out, commsched_error *err);

/* The NCCL model's price for one (algorithm, protocol) pair, where
 * commsched_cost_collective keeps the fastest: for reports that show the
 * alternatives and for checking against tuning.cc's tables. EINVAL for Tree
 * on anything but an all-reduce (or barrier). */
COMMSCHED_EXPORT commsched_status commsched_cost_collective_with(
    const commsched_device *d, commsched_nccl_algo algo,
    commsched_nccl_proto proto, commsched_coll_op op, double bytes,
    uint32_t ranks, uint32_t hosts, commsched_coll_cost *out,
    commsched_error *err);

/* Roofline time in ns; flops or bytes < 0 count as absent (0). When t is
 * not NULL it receives the tuple (memory_delta 0). */
COMMSCHED_EXPORT double commsched_cost_compute(const commsched_device *d,
                                               double flops, double bytes,
                                               commsched_cost_tuple *t);

/* ---------------------------------------------------------------------- */
/* Measured costs: what a profiler trace says a kernel or a collective     */
/* takes (docs/COST.md, "Measured costs"). Fitted by commsched_calibrate   */
/* (commsched/import.h) from Kineto traces, saved in a device profile's    */
/* "measured" member, read back by commsched_costs_load_file.              */
/* ---------------------------------------------------------------------- */

typedef struct commsched_costs commsched_costs;

/* An empty table (ENOMEM only). Destroy with commsched_costs_destroy. */
COMMSCHED_EXPORT commsched_status commsched_costs_create(
    commsched_costs **out, commsched_error *err);
/* NULL is allowed. */
COMMSCHED_EXPORT void commsched_costs_destroy(commsched_costs *c);

/* One measured kernel: its name (the key commsched_costs_key makes of it;
 * copied), its position in its profiler step (the k-th GPU event
 * launched in it; < 0: unknown) and its duration. One measured
 * collective of `op` over `ranks` ranks moving `bytes`. EINVAL on a
 * duration outside 0..COMMSCHED_MAX_RUNTIME_NS, bytes outside 0..2^53,
 * ranks 0; ENOMEM. A sample added after commsched_costs_fit needs another
 * fit before it counts. O(1) amortised. */
COMMSCHED_EXPORT commsched_status commsched_costs_add_kernel(
    commsched_costs *c, const char *name, long position, double ns,
    commsched_error *err);
COMMSCHED_EXPORT commsched_status commsched_costs_add_collective(
    commsched_costs *c, commsched_coll_op op, uint32_t ranks, double bytes,
    double ns, commsched_error *err);
/* The achieved roofline fitted from kernels whose flops or bytes are
 * known: it prices compute nodes no table has (source FITTED). Rates in
 * FLOP/s and bytes/s (0: not fitted, the device's is used); counts: the
 * kernels each came from. */
typedef struct commsched_costs_roofline {
    double flops_per_s, bytes_per_s;
    uint32_t flop_kernels, byte_kernels;
} commsched_costs_roofline;

/* Sets it (copied). EINVAL on a negative or non-finite rate. */
COMMSCHED_EXPORT commsched_status commsched_costs_set_roofline(
    commsched_costs *c, const commsched_costs_roofline *r,
    commsched_error *err);
/* 1 with *out when a rate is set, else 0 (*out zeroed). */
COMMSCHED_EXPORT int commsched_costs_get_roofline(
    const commsched_costs *c, commsched_costs_roofline *out);

/* Turns the samples into the tables the lookups read: per kernel key the
 * mean duration and, per position in the step, the median; per (op,
 * ranks) the median at each size and, with two sizes or more, the
 * least-squares line time = latency + bytes / bandwidth through those
 * medians. ENOMEM. O(samples log samples). */
COMMSCHED_EXPORT commsched_status commsched_costs_fit(commsched_costs *c,
                                                      commsched_error *err);

/* The table key of a kernel or node name: a leading "<digits>:" (an
 * imported node's position) and "void " dropped, cut at the argument
 * list's "(", at most 80 bytes (a whole UTF-8 character). Into buf
 * (size > 80); returns buf. */
COMMSCHED_EXPORT const char *commsched_costs_key(const char *name, char *buf,
                                                 size_t size);
/* The position a node name's leading "<digits>:" gives (what the Kineto
 * importer names its nodes with), -1 without one. */
COMMSCHED_EXPORT long commsched_costs_position(const char *name);

/* Lookups (after a fit or a load). A collective: MEASURED with the
 * median of a measured size within 1%; FITTED between two measured sizes
 * (linear between them) or, with a line, below the smallest or up to
 * twice the largest; NONE (the model's turn) otherwise, or without data
 * for (op, ranks). A kernel by key: MEASURED with the row of the nearest
 * measured position within 8 of `position` (>= 0), else the key's mean;
 * NONE without a row. *ns is set only when the result is not NONE.
 * O(log table). */
COMMSCHED_EXPORT commsched_cost_source commsched_costs_price_collective(
    const commsched_costs *c, commsched_coll_op op, uint32_t ranks,
    double bytes, double *ns);
COMMSCHED_EXPORT commsched_cost_source commsched_costs_price_kernel(
    const commsched_costs *c, const char *key, long position, double *ns);

/* Tables to consult where c's own have nothing (NULL: none; borrowed,
 * it must outlive c): a trace's measurements layered over a calibrated
 * profile's (`--costs TRACE --device profile.json`). */
COMMSCHED_EXPORT void commsched_costs_set_fallback(commsched_costs *c,
                                                   const commsched_costs *next);

/* One (op, ranks) row, for reports: sizes measured, samples, the fitted
 * line (has_line 0 with one size) and the spread (the median relative
 * deviation of the samples from their size's median). */
typedef struct commsched_costs_collective_row {
    commsched_coll_op op;
    uint32_t ranks;
    uint32_t sizes, samples;
    double min_bytes, max_bytes;
    int has_line;
    double latency_ns, bytes_per_ns; /* the line (GB/s = bytes per ns; 0:
                                        the time does not grow with size) */
    double spread;
    double fit_error; /* median |line - median| / median over the sizes */
} commsched_costs_collective_row;

COMMSCHED_EXPORT size_t commsched_costs_collective_count(
    const commsched_costs *c);
/* Row i < count into *out; EINVAL past the end. */
COMMSCHED_EXPORT commsched_status commsched_costs_collective_at(
    const commsched_costs *c, size_t i, commsched_costs_collective_row *out,
    commsched_error *err);
/* Kernel rows, and the samples they came from. */
COMMSCHED_EXPORT size_t commsched_costs_kernel_count(const commsched_costs *c);
COMMSCHED_EXPORT size_t commsched_costs_kernel_samples(
    const commsched_costs *c);

/* Reads the "measured" member of a device profile file (the format
 * docs/COST.md gives): OK with *out NULL when the file has none (a plain
 * profile, or a built-in's name: nothing is read then). Errors as
 * commsched_device_load_file's, paths under "measured" ("measured.
 * kernels[3].ns"). O(file size + rows log rows). */
COMMSCHED_EXPORT commsched_status commsched_costs_load_file(
    const char *name_or_path, commsched_costs **out, commsched_error *err);

/* Writes a device profile: d's fields, and, when c is not NULL, c's
 * tables as "measured" (c must have been fitted). A profile written here
 * loads back through commsched_device_load_file and
 * commsched_costs_load_file to the same figures (to 17 digits). EIO or
 * ENOMEM; bytes may have been written then. O(rows). */
COMMSCHED_EXPORT commsched_status commsched_profile_save(
    FILE *out, const commsched_device *d, const commsched_costs *c,
    commsched_error *err);

/* Options shared by every estimating call. Initialise with
 * commsched_cost_options_init (h100, NCCL model, no measured costs).
 * `device` and `measured` are borrowed. With `measured`, a node the
 * tables know is priced from them (MEASURED / FITTED), before the model;
 * a node's own runtime_ns still wins, unless `measured_first` is set (the
 * tables win where they know the node, the runtime_ns elsewhere: `--costs
 * TRACE`) or `ignore_runtime` (every node priced as if the file gave
 * none: a trace's graph predicted from another run's measurements). */
typedef struct commsched_cost_options {
    const commsched_device *device;
    commsched_comm_model comm_model;
    const commsched_costs *measured;
    int measured_first;
    int ignore_runtime;
} commsched_cost_options;

COMMSCHED_EXPORT void commsched_cost_options_init(commsched_cost_options *o);

/* One node's estimate. */
typedef struct commsched_node_cost {
    double runtime_ns;            /* what the simulator uses */
    commsched_cost_source source;
    double model_ns;              /* the model's figure, even when the file
                                     gives runtime_ns (0 when none) */
    commsched_cost_tuple tuple;   /* the model's decomposition */
    double bytes;                 /* collectives: max(input, output) bytes of
                                     root buffers; compute: the node's bytes
                                     (0 when absent) */
    double flops;                 /* compute: the node's flops (0 if absent) */
    commsched_coll_cost coll;     /* collectives only (zeroed otherwise) */
} commsched_node_cost;

/* Bytes a collective moves: the larger of what it reads and writes, over
 * root buffers, each root written counted once (an in-place all_reduce
 * counts its buffer once, however many aliases of it it lists). */
COMMSCHED_EXPORT double commsched_cost_collective_bytes(
    const commsched_graph *g, uint32_t node);

/* Estimates node `node`. mem may be NULL; when given (a tracker for some
 * order of g) the tuple's memory_delta is size_alloc - size_free there.
 * Errors (EINVAL) come only from an unusable profile, or one whose rates
 * price the node beyond COMMSCHED_MAX_RUNTIME_NS. O(degree). */
COMMSCHED_EXPORT commsched_status commsched_cost_node(
    const commsched_graph *g, uint32_t node, const commsched_cost_options *o,
    const struct commsched_memory *mem, commsched_node_cost *out,
    commsched_error *err);

/* Runtimes of every node, for the simulator: runtime_ns[i] (caller
 * allocates node-count entries) and, when sources is not NULL, where each
 * came from. Estimate once, simulate many orders. O(V + reads). */
COMMSCHED_EXPORT commsched_status commsched_cost_graph(
    const commsched_graph *g, const commsched_cost_options *o,
    double *runtime_ns, commsched_cost_source *sources, commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_COST_H */
