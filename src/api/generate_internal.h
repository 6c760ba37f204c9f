/* commsched_generate_transformer — what the generator's files share: the
 * groups, the generator's state, the tape and the node emitter
 * (generate_tape.c), the model and the optimizer (generate_model.c) and
 * the entry points of commsched/generate.h (generate.c). The map of how
 * it works is at the top of generate.c. Nothing here is exported. */
#ifndef COMMSCHED_GENERATE_INTERNAL_H
#define COMMSCHED_GENERATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"
#include "commsched/generate.h"

#define CS_GEN_NAME 64
#define CS_GEN_MAX_IO 48

/* ---------------------------------------------------------------------- */
/* Groups                                                                  */
/* ---------------------------------------------------------------------- */

/* Process groups, in the order they are added to the graph. */
enum { CS_GEN_DP = 0, CS_GEN_TP = 1, CS_GEN_EP = 2, CS_GEN_COUNT };

/* GPUs per host assumed when placing groups on hosts (TP innermost). */
#define CS_GEN_GPUS_PER_HOST 8

/* "dp", "tp", "ep" by CS_GEN_DP, CS_GEN_TP, CS_GEN_EP. */
const char *cs_gen_group_name(int group);

/* The largest shape or group size the options may hold (the CLI's limit
 * on its integers). */
#define CS_GEN_MAX_SIZE (INT64_C(1) << 31)

/* ---------------------------------------------------------------------- */
/* Generator state                                                         */
/* ---------------------------------------------------------------------- */

/* A value of the step: a buffer name (or the alias compute reads) plus
 * what the gradient engine needs. */
typedef struct cs_gen_tensor {
    char name[CS_GEN_NAME];
    int64_t bytes;
    int32_t grad;  /* tensor holding the accumulated gradient, -1: none */
    int32_t param; /* >= 0: this is (a view of) parameter `param` */
    uint8_t rg;    /* requires grad */
    uint16_t nacc; /* gradient accumulations so far (for unique names) */
} cs_gen_tensor;

enum op_type {
    CS_GEN_MM,    /* c = a @ b */
    CS_GEN_EW,    /* elementwise / reduction / fused kernel */
    CS_GEN_ADD,   /* c = a + b, same shape: gradients pass through */
    CS_GEN_VIEW,  /* an alias (fine mode only) */
    CS_GEN_SDPA,  /* flash attention: q, k, v -> o (+ logsumexp) */
    CS_GEN_COLL,  /* activation collective + wait */
    CS_GEN_F,     /* Megatron's f: identity forward, all-reduce backward */
    CS_GEN_PARAM  /* a parameter materialised for compute */
};

typedef struct cs_gen_op {
    uint8_t type;
    uint8_t n_in;
    uint8_t gmask;    /* CS_GEN_EW: inputs that get a gradient node */
    uint8_t pass;     /* CS_GEN_EW: input 0's gradient is the output's */
    uint8_t rmask;    /* CS_GEN_EW: inputs the gradient nodes read (saved) */
    uint8_t coll;     /* CS_GEN_COLL: commsched_coll_op */
    uint8_t group;    /* CS_GEN_COLL: CS_GEN_DP, _TP or _EP */
    int32_t in[4];
    int32_t out;
    int32_t aux;      /* CS_GEN_SDPA: logsumexp tensor; CS_GEN_PARAM: param
                         index */
    double flops;     /* forward flops */
    const char *op;   /* CS_GEN_EW: aten-style op name */
    char name[CS_GEN_NAME];
} cs_gen_op;

/* A checkpointed layer: tape ops [start, end) map x to y. */
typedef struct cs_gen_segment {
    size_t start, end;
    int32_t x, y;
    long layer;
} cs_gen_segment;

typedef struct cs_gen_param {
    char name[CS_GEN_NAME];
    int64_t numel;   /* local elements (after TP / EP slicing) */
    int32_t unit;
    uint8_t fsdp;    /* sharded over dp (otherwise held whole locally) */
    uint8_t marked;  /* used again by a recompute: a CS_GEN_PARAM marker
                        exists */
    int32_t weight;  /* forward tensor; -1 before first use */
    int32_t wgrad;   /* accumulated compute-dtype gradient (tensor) */
    char grad[CS_GEN_NAME]; /* final gradient buffer the optimizer reads */
} cs_gen_param;

/* The FSDP gather granularity and the optimizer's: a layer (coarse mode,
 * FSDP2's per-module groups) or a single parameter (fine mode,
 * SimpleFSDP's per-parameter collectives). */
typedef struct cs_gen_unit {
    char name[CS_GEN_NAME];
    int32_t p0, np;
    int64_t fsdp_numel;   /* elements of the FSDP-sharded members */
    int32_t n_fsdp;
    int32_t fsdp_done;    /* members whose gradient is final */
    char fwd[CS_GEN_NAME];   /* gathered buffer in forward ("" none) */
    char bwd[CS_GEN_NAME];   /* gathered buffer in backward */
    char grad[CS_GEN_NAME];  /* coarse FSDP: the unit's reduced grad shard */
} cs_gen_unit;

typedef struct cs_gen_layer_params {
    int32_t norm1, norm1_b, wq, wk, wv, wo, norm2, norm2_b, w1, w2, w3,
        router;
} cs_gen_layer_params;

/* A node under construction: names are copied in, because tensor names
 * live in an array that may move when it grows. */
typedef struct cs_gen_pending {
    commsched_node_spec s;
    char name[CS_GEN_NAME];
    char op[CS_GEN_NAME];
    char (*in)[CS_GEN_NAME]; /* grows: a gradient-norm total reads them all */
    const char **inp;
    size_t cap_in;
    char out[CS_GEN_MAX_IO][CS_GEN_NAME];
    char alias[CS_GEN_MAX_IO][CS_GEN_NAME];
    commsched_output_spec outs[CS_GEN_MAX_IO];
    size_t n_in, n_out;
} cs_gen_pending;

typedef struct cs_gen {
    commsched_builder *b;
    commsched_error err;
    commsched_status st; /* first failure of our own (OOM, overflow) */
    commsched_progress_fn progress; /* commsched_generate_options' */
    void *progress_arg;
    uint64_t emitted, total; /* nodes so far, of the step's (progress) */

    int family, fine, sp, bwd;
    int ac;        /* full activation checkpointing of every layer */
    int clip;      /* clip the gradient norm before the update */
    int recompute; /* emitting a checkpointed layer's forward again */
    double bytes_override; /* >= 0: the next f_ew's bytes (gathers) */
    commsched_generate_shape s;
    int64_t dp, tp, ep;
    commsched_dtype dtype, reduce_dtype;
    int64_t e, re;            /* bytes per element: compute, reduce */
    /* derived */
    int64_t T;                /* tokens per rank per step */
    int64_t Ts;               /* tokens in sequence-parallel regions */
    int64_t hd, nh_l, nkv_l, ffn_l, vocab_l, experts_l;
    int use_tp, use_ep;

    cs_gen_tensor *t;
    size_t nt, cap_t;
    cs_gen_op *ops;
    size_t nops, cap_ops;
    cs_gen_param *p;
    size_t np, cap_p;
    cs_gen_unit *u;
    size_t nu, cap_u;

    cs_gen_segment *seg;  /* checkpointed layers, in tape order */
    size_t nseg, cap_seg;
    cs_gen_layer_params *lps;
    int32_t (*experts)[3];

    char prefix[24]; /* "L3", "embed", "head": names start with it */
    int32_t tokens, labels, freqs, loss;
    cs_gen_pending cur;
    char scratch[4][CS_GEN_NAME];
} cs_gen;

static inline int64_t cs_gen_ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}
/* Bytes of tensor t. */
static inline double cs_gen_tb(const cs_gen *g, int32_t t)
{
    return (double)g->t[t].bytes;
}

/* generate_tape.c: state, node emission, parameters, forward ops (each
 * emits its node and records the tape) and the backward pass derived from
 * the tape. */
void cs_gen_backward(cs_gen *g);
void cs_gen_emit_collective(cs_gen *g, const char *name, commsched_coll_op op,
                            int group, const char *const *in, size_t n_in,
                            int64_t out_bytes, commsched_dtype dtype,
                            commsched_reduce_op rop);
int32_t cs_gen_f_add(cs_gen *g, const char *tag, int32_t a, int32_t b);
int32_t cs_gen_f_coll(cs_gen *g, const char *tag, commsched_coll_op op, int grp,
                      int32_t x, int64_t out, commsched_reduce_op rop);
int32_t cs_gen_f_ew(cs_gen *g, const char *tag, const char *op, int n,
                    const int32_t *in, int gmask, int rmask, int pass,
                    int64_t out, double flops);
int32_t cs_gen_f_ew1(cs_gen *g, const char *tag, const char *op, int32_t x,
                     int64_t out, double flops, int saves);
int32_t cs_gen_f_identity_ar(cs_gen *g, const char *tag, int32_t x);
int32_t cs_gen_f_mm(cs_gen *g, const char *tag, int32_t a, int32_t b, double M,
                    double K, double N);
int32_t cs_gen_f_view(cs_gen *g, const char *tag, const char *op, int32_t x);
void cs_gen_fmt_name(cs_gen *g, char *dst, const char *a, const char *b);
int cs_gen_grow(cs_gen *g, void **arr, size_t *cap, size_t need, size_t elem);
void cs_gen_node_begin(cs_gen *g, commsched_node_kind kind, const char *name,
                       const char *op);
void cs_gen_node_end(cs_gen *g, double flops, double bytes, int gemm);
void cs_gen_node_in(cs_gen *g, const char *buf);
void cs_gen_node_out(cs_gen *g, const char *name, int64_t size,
                     const char *alias);
int32_t cs_gen_param_get(cs_gen *g, int32_t pi);
int32_t cs_gen_param_new(cs_gen *g, int32_t unit_idx, const char *tag,
                         int64_t numel, int fsdp);
void cs_gen_set_prefix(cs_gen *g, const char *fmt, long i);
int64_t cs_gen_shard_numel(const cs_gen *g, int64_t numel);
cs_gen_op *cs_gen_tape_push(cs_gen *g, int type, const char *name);
int32_t cs_gen_tensor_new(cs_gen *g, const char *name, int64_t bytes, int rg);
int32_t cs_gen_unit_new(cs_gen *g, const char *name);

/* generate_model.c: the transformer layers, gradient clipping, the optimizer,
 * and the whole step. */
void cs_gen_build(cs_gen *g);
int32_t cs_gen_layer(cs_gen *g, int32_t x, long l);

#endif /* COMMSCHED_GENERATE_INTERNAL_H */
