/* What the two Chakra readers share (import_chakra.c: the simple JSON
 * form; import_chakra_et.c: the binary protobuf form). A reader fills one
 * cnode per record, with the Ids of its dependencies as written; then
 * chakra_finish resolves the Ids, folds each collective's CPU-side ops
 * into its GPU kernel, orders the nodes as Chakra's feeder does and builds
 * the graph. Errors name the record: "workload_graph[3].data_deps[1]" in
 * JSON, "record 3 (byte 120).data_deps[1]" in the binary form (record 0 is the
 * GlobalMetadata: table index i is record i + 1). */
#ifndef COMMSCHED_CHAKRA_COMMON_H
#define COMMSCHED_CHAKRA_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "import_internal.h"

enum { NT_METADATA = 1, NT_MEM_LOAD = 2, NT_MEM_STORE = 3, NT_COMP = 4,
       NT_SEND = 5, NT_RECV = 6, NT_COLL = 7 };

typedef struct cnode {
    int64_t id;
    char *name;        /* owned */
    char *pg;          /* owned process-group name; NULL: "world" */
    int type;
    int cpu;           /* is_cpu_op */
    double runtime_us; /* < 0: absent */
    int64_t size;      /* buffer bytes; < 0: absent */
    int coll;          /* commsched_coll_op, or -1 (not a collective) */
    commsched_dtype dtype;
    commsched_reduce_op rop;
    int64_t offset;    /* binary form: the record's byte offset */
    /* As written (freed once resolved). */
    int64_t *raw_data, *raw_ctrl;
    size_t n_raw_data, n_raw_ctrl;
    /* Resolved to node indices, deduplicated; ctrl keeps only Ids found in
     * the file (the host trace's caller links often point outside it). */
    uint32_t *deps, *cdeps;
    size_t n_deps, n_cdeps;
    /* Derived */
    int keep;
    int launcher; /* a CPU op that launched a GPU collective kernel */
    int waited, has_user;
} cnode;

typedef struct chakra {
    const char *file; /* for messages */
    import_diag *d;   /* where failures and notes go */
    int binary;       /* record locations as "record N (byte B)" */
    cnode *n;
    size_t count, cap;
    /* Binary form, once the table is freed before the graph is built: each
     * record's byte offset, so later errors still name the record. */
    int64_t *offsets;
    size_t n_offsets;
    size_t ctrl_outside; /* ctrl deps naming no node in the file */
    size_t ctrl_self;    /* ctrl deps of a node on itself (ignored) */
    commsched_error err;
} chakra;

/* Records "FILE: <where>: msg" (where: the record `rec`, then
 * `field` when not NULL) and returns its code. rec == SIZE_MAX: no
 * record. */
int chakra_fail(chakra *c, size_t rec, const char *field, const char *fmt,
                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* A new zeroed record (fields "absent"), or NULL after recording out of
 * memory. */
cnode *chakra_push(chakra *c);


/* Chakra's CollectiveCommType -> commsched_coll_op, -1 when none. */
int chakra_coll_from_type(int64_t t);
/* The collective kind from a name (ncclKernel_AllReduce_..., c10d::
 * broadcast_, nccl:all_gather), -1 when none. */
int chakra_coll_from_name(const char *name);
/* ncclKernel_<Coll>_<Algo>_<Proto>_<RedOp>_<type>: dtype and reduce op. */
void chakra_nccl_details(const char *name, commsched_dtype *dt,
                         commsched_reduce_op *rop);

/* Resolves, folds, orders and builds; says a note on success. ranks: the
 * groups' size (the trace's ngpus when --ranks is absent, else 8). */
int chakra_finish(chakra *c, const commsched_import_options *o, long ngpus,
                  const char *graph_name, commsched_graph **out);

void chakra_free(chakra *c);
/* Frees the records (the table) and leaves c empty of them; the offsets
 * stay until chakra_free. */
void chakra_free_records(chakra *c);

/* The two readers, on an open stream positioned at the start; `file`
 * names it in messages. import_chakra (import_chakra.c) picks one. */
#include <stdio.h>
int import_chakra_json(import_diag *d, const char *file, FILE *in,
                       const commsched_import_options *o,
                       commsched_graph **out);
int import_chakra_et(import_diag *d, const char *file, FILE *in,
                     const commsched_import_options *o, commsched_graph **out);
/* 1 when the stream starts with a length-delimited record that decodes as
 * Chakra's GlobalMetadata (what every .et starts with), else 0. */
int chakra_et_starts_with_metadata(FILE *in);

#endif /* COMMSCHED_CHAKRA_COMMON_H */
