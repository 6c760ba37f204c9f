/* XLA HLO text modules (what XLA dumps with --xla_dump_hlo_as_text) read
 * into a commsched graph: the parser (hlo_parse.c) and the graph it makes
 * (hlo_build.c). Self-contained: public headers and jansson only, errors
 * through commsched_error with the line and column of the HLO text, no
 * printing, so the CLI (import_hlo.c), the fuzz harness and later the
 * library's import layer call the same code. docs/WORKLOADS.md says what
 * becomes what. */
#ifndef COMMSCHED_HLO_H
#define COMMSCHED_HLO_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"

/* ---------------------------------------------------------------------- */
/* The parsed module (hlo_parse.c). Every string is a span of the text,  */
/* which must outlive the module.                                         */

typedef struct hlo_span {
    const char *p;
    uint32_t len;
    int line, col; /* 1-based; col counts bytes */
} hlo_span;

enum { HLO_ARRAY, HLO_TUPLE, HLO_TOKEN };

/* A shape: an array (element type, dims), a tuple of shapes, or a token.
 * Tuples are flattened to their leaves wherever data is counted. */
typedef struct hlo_shape {
    uint8_t kind;
    uint8_t etype;     /* index into the element type table (hlo_parse.c) */
    uint16_t rank;
    uint32_t dims;     /* offset of the rank dims in hlo_module.dims */
    uint32_t children; /* tuple: offset of its n children in .children */
    uint32_t n;        /* tuple: children */
    uint32_t leaves;   /* arrays and tokens: 1 */
    int64_t bytes;     /* all leaves together */
} hlo_shape;

typedef struct hlo_attr {
    hlo_span key, val;
} hlo_attr;

typedef struct hlo_instr {
    hlo_span name, opcode;
    hlo_span args;      /* parameter's number, constant's literal */
    uint32_t comp;      /* the computation it belongs to */
    uint32_t shape;
    uint32_t ops, n_ops;     /* operands: .operands[ops .. ops+n_ops) */
    uint32_t attrs, n_attrs; /* .attrs[attrs .. attrs+n_attrs) */
} hlo_instr;

typedef struct hlo_operand {
    hlo_span name;
    uint32_t instr; /* resolved: index into .instrs (same computation) */
} hlo_operand;

typedef struct hlo_comp {
    hlo_span name;
    uint32_t first, n; /* its instructions, in the text's order */
    uint32_t root;     /* index into .instrs */
    int entry;
} hlo_comp;

typedef struct hlo_module {
    const char *text;
    size_t len;
    hlo_span name;
    int scheduled;          /* is_scheduled=true */
    int64_t partitions;     /* num_partitions (1 when absent) */
    int64_t replicas;       /* replica_count (1 when absent) */
    uint32_t entry;         /* index into .comps */
    hlo_shape *shapes;
    size_t n_shapes, cap_shapes;
    int64_t *dims;
    size_t n_dims, cap_dims;
    uint32_t *children;
    size_t n_children, cap_children;
    hlo_instr *instrs;
    size_t n_instrs, cap_instrs;
    hlo_operand *operands;
    size_t n_operands, cap_operands;
    hlo_attr *attrs;
    size_t n_attrs, cap_attrs;
    hlo_comp *comps;
    size_t n_comps, cap_comps;
    /* name lookups: open addressing, capacity a power of two */
    uint32_t *comp_index, *instr_index;
    size_t comp_index_cap, instr_index_cap;
} hlo_module;

/* Element types: the name XLA prints, its bits, the commsched dtype
 * (NONE: the format has none). */
typedef struct hlo_etype {
    const char *name;
    unsigned bits;
    commsched_dtype dtype;
} hlo_etype;
const hlo_etype *hlo_etype_at(unsigned i);

/* Parses text[0..len) (it need not be NUL-terminated; a NUL byte in it
 * is an error). On failure returns EPARSE (ENOMEM when memory runs out)
 * with err's line and column at the problem, and leaves *m empty to free.
 * Resolves every operand to its instruction in the same computation and
 * every computation's root. O(n) in the text's length (hash lookups). */
commsched_status hlo_parse(const char *text, size_t len, hlo_module *m,
                           commsched_error *err);
void hlo_module_free(hlo_module *m);

/* The attribute `key` of instruction i, or NULL. */
const hlo_attr *hlo_attr_find(const hlo_module *m, const hlo_instr *in,
                              const char *key);
/* The computation named by a span (a leading '%' ignored), or UINT32_MAX. */
uint32_t hlo_comp_find(const hlo_module *m, const char *p, size_t len);
/* 1 when span s equals the NUL-terminated string t. */
int hlo_span_eq(hlo_span s, const char *t);
/* Records an error located at s (first error wins): returns status. */
commsched_status hlo_fail(commsched_error *err, commsched_status status,
                          hlo_span s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---------------------------------------------------------------------- */
/* Attribute values (hlo_groups.c).                                       */

/* A cursor over an attribute's text. */
typedef struct hlo_rd {
    const char *p, *end;
} hlo_rd;
void hlo_rd_blank(hlo_rd *r);
/* 1 (and past it) when ch comes next, blanks skipped. */
int hlo_rd_char(hlo_rd *r, char ch);
/* A non-negative integer below 2^53, blanks skipped; -1 when none. */
int64_t hlo_rd_int(hlo_rd *r);

/* The devices collective `in` talks to, from its replica_groups (or, for
 * a collective-permute -- permute -- its source_target_pairs) read in the
 * mode channel_id and use_global_device_ids give (has_global_ids: the op
 * has that attribute, as all-reduce, all-gather and reduce-scatter do):
 * the group's size (the ranks one device talks to) and a name the same
 * for the same set of devices whichever notation wrote it, into buf (at
 * least HLO_GROUP_NAME_CAP bytes): "{{0,1,2,3},{4,5,6,7}}",
 * "pairs{{0,1},{1,0}}", a long set "N groups of S devices #HASH". Errors
 * are located at the attribute. O(devices log devices) up to 65536
 * devices; beyond, the name is the attribute's text. */
#define HLO_GROUP_NAME_CAP 256
commsched_status hlo_group(const hlo_module *m, const hlo_instr *in,
                           int permute, int has_global_ids, int64_t *size,
                           char *buf, size_t cap, commsched_error *err);

/* ---------------------------------------------------------------------- */
/* The graph (hlo_build.c).                                               */

/* What the import found, for the note the CLI prints. */
typedef struct hlo_stats {
    size_t entry_instrs;      /* instructions of the entry computation */
    size_t compute, collectives, waits, aliases, inputs;
    size_t per_op[COMMSCHED_COLL_OP_COUNT];
    size_t async_pairs;       /* start/done pairs (async-start too) */
    size_t loops, loop_iters; /* while loops unrolled, iterations made */
    size_t calls;             /* call instructions inlined */
    size_t groups;
} hlo_stats;

/* The graph of module m: every instruction of the entry computation a
 * node in its order (while loops unrolled by their known trip count,
 * calls inlined), parameters and constants graph inputs, the root's
 * leaves graph outputs. On failure *out is NULL and err is located at
 * the instruction in the HLO text (builder errors included). Resource
 * limit: at most HLO_MAX_NODES nodes (ENOMEM naming it). Cost: linear
 * in the nodes made, plus the replica groups' devices. */
#define HLO_MAX_NODES (UINT32_C(1) << 24)
commsched_status hlo_build(const hlo_module *m, const char *graph_name,
                           commsched_graph **out, hlo_stats *stats,
                           commsched_error *err);

/* Both steps on one text. */
commsched_status hlo_import_text(const char *text, size_t len,
                                 commsched_graph **out, hlo_stats *stats,
                                 commsched_error *err);

#endif /* COMMSCHED_HLO_H */
