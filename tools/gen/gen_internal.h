/* commsched generate fsdp|ddp|tp|moe|2d — what the generator's files
 * share: the groups, the generator's state, the tape and the node emitter
 * (gen_tape.c), the model and the optimizer (gen_model.c) and the entry
 * points of gen.h (gen_transformer.c). The map of how it works is at the
 * top of gen_transformer.c. */
#ifndef COMMSCHED_GEN_INTERNAL_H
#define COMMSCHED_GEN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"
#include "gen.h"

#define NAME_LEN 64
#define MAX_IO 48

/* ---------------------------------------------------------------------- */
/* Groups                                                                  */
/* ---------------------------------------------------------------------- */

/* Process groups, in the order they are added to the graph. */
enum { GRP_DP = 0, GRP_TP = 1, GRP_EP = 2, GRP_COUNT };

/* GPUs per host assumed when placing groups on hosts (TP innermost). */
#define GPUS_PER_HOST 8

/* "dp", "tp", "ep" by GRP_*. */
extern const char *const gen_group_names[];

/* ---------------------------------------------------------------------- */
/* Generator state                                                         */
/* ---------------------------------------------------------------------- */

/* A value of the step: a buffer name (or the alias compute reads) plus
 * what the gradient engine needs. */
typedef struct tensor {
    char name[NAME_LEN];
    int64_t bytes;
    int32_t grad;  /* tensor holding the accumulated gradient, -1: none */
    int32_t param; /* >= 0: this is (a view of) parameter `param` */
    uint8_t rg;    /* requires grad */
    uint16_t nacc; /* gradient accumulations so far (for unique names) */
} tensor;

enum op_type {
    T_MM,    /* c = a @ b */
    T_EW,    /* elementwise / reduction / fused kernel */
    T_ADD,   /* c = a + b, same shape: gradients pass through */
    T_VIEW,  /* an alias (fine mode only) */
    T_SDPA,  /* flash attention: q, k, v -> o (+ logsumexp) */
    T_COLL,  /* activation collective + wait */
    T_F,     /* Megatron's f: identity forward, all-reduce backward */
    T_PARAM  /* a parameter materialised for compute */
};

typedef struct tape_op {
    uint8_t type;
    uint8_t n_in;
    uint8_t gmask;    /* T_EW: inputs that get a gradient node */
    uint8_t pass;     /* T_EW: input 0's gradient is the output's */
    uint8_t rmask;    /* T_EW: inputs the gradient nodes read (saved) */
    uint8_t coll;     /* T_COLL: commsched_coll_op */
    uint8_t group;    /* T_COLL: GRP_* */
    int32_t in[4];
    int32_t out;
    int32_t aux;      /* T_SDPA: logsumexp tensor; T_PARAM: param index */
    double flops;     /* forward flops */
    const char *op;   /* T_EW: aten-style op name */
    char name[NAME_LEN];
} tape_op;

/* A checkpointed layer: tape ops [start, end) map x to y. */
typedef struct segment {
    size_t start, end;
    int32_t x, y;
    long layer;
} segment;

typedef struct param {
    char name[NAME_LEN];
    int64_t numel;   /* local elements (after TP / EP slicing) */
    int32_t unit;
    uint8_t fsdp;    /* sharded over dp (otherwise held whole locally) */
    uint8_t marked;  /* used again by a recompute: a T_PARAM marker exists */
    int32_t weight;  /* forward tensor; -1 before first use */
    int32_t wgrad;   /* accumulated compute-dtype gradient (tensor) */
    char grad[NAME_LEN]; /* final gradient buffer the optimizer reads */
} param;

/* The FSDP gather granularity and the optimizer's: a layer (coarse mode,
 * FSDP2's per-module groups) or a single parameter (fine mode,
 * SimpleFSDP's per-parameter collectives). */
typedef struct unit {
    char name[NAME_LEN];
    int32_t p0, np;
    int64_t fsdp_numel;   /* elements of the FSDP-sharded members */
    int32_t n_fsdp;
    int32_t fsdp_done;    /* members whose gradient is final */
    char fwd[NAME_LEN];   /* gathered buffer in forward ("" none) */
    char bwd[NAME_LEN];   /* gathered buffer in backward */
    char grad[NAME_LEN];  /* coarse FSDP: the unit's reduced grad shard */
} unit;

typedef struct layer_params {
    int32_t norm1, norm1_b, wq, wk, wv, wo, norm2, norm2_b, w1, w2, w3,
        router;
} layer_params;

/* A node under construction: names are copied in, because tensor names
 * live in an array that may move when it grows. */
typedef struct pending {
    commsched_node_spec s;
    char name[NAME_LEN];
    char op[NAME_LEN];
    char (*in)[NAME_LEN]; /* grows: a gradient-norm total reads them all */
    const char **inp;
    size_t cap_in;
    char out[MAX_IO][NAME_LEN];
    char alias[MAX_IO][NAME_LEN];
    commsched_output_spec outs[MAX_IO];
    size_t n_in, n_out;
} pending;

typedef struct gen {
    commsched_builder *b;
    commsched_error err;
    commsched_status st; /* first failure of our own (OOM, overflow) */
    commsched_progress_fn progress; /* gen_options' */
    void *progress_arg;
    uint64_t emitted, total; /* nodes so far, of the step's (progress) */

    int family, fine, sp, bwd;
    int ac;        /* full activation checkpointing of every layer */
    int clip;      /* clip the gradient norm before the update */
    int recompute; /* emitting a checkpointed layer's forward again */
    double bytes_override; /* >= 0: the next f_ew's bytes (gathers) */
    gen_shape s;
    int64_t dp, tp, ep;
    commsched_dtype dtype, reduce_dtype;
    int64_t e, re;            /* bytes per element: compute, reduce */
    /* derived */
    int64_t T;                /* tokens per rank per step */
    int64_t Ts;               /* tokens in sequence-parallel regions */
    int64_t hd, nh_l, nkv_l, ffn_l, vocab_l, experts_l;
    int use_tp, use_ep;

    tensor *t;
    size_t nt, cap_t;
    tape_op *ops;
    size_t nops, cap_ops;
    param *p;
    size_t np, cap_p;
    unit *u;
    size_t nu, cap_u;

    struct segment *seg; /* checkpointed layers, in tape order */
    size_t nseg, cap_seg;
    layer_params *lps;
    int32_t (*experts)[3];

    char prefix[24]; /* "L3", "embed", "head": names start with it */
    int32_t tokens, labels, freqs, loss;
    pending cur;
    char scratch[4][NAME_LEN];
} gen;

static inline int64_t gen_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* Bytes of tensor t. */
static inline double gen_tb(const gen *g, int32_t t) { return (double)g->t[t].bytes; }

/* gen_tape.c: state, node emission, parameters, forward ops (each emits its
 * node and records the tape) and the backward pass derived from the tape. */
void gen_backward(gen *g);
void gen_emit_collective(gen *g, const char *name, commsched_coll_op op,
                            int group, const char *const *in, size_t n_in,
                            int64_t out_bytes, commsched_dtype dtype,
                            commsched_reduce_op rop);
int32_t gen_f_add(gen *g, const char *tag, int32_t a, int32_t b);
int32_t gen_f_coll(gen *g, const char *tag, commsched_coll_op op, int grp,
                      int32_t x, int64_t out, commsched_reduce_op rop);
int32_t gen_f_ew(gen *g, const char *tag, const char *op, int n,
                    const int32_t *in, int gmask, int rmask, int pass,
                    int64_t out, double flops);
int32_t gen_f_ew1(gen *g, const char *tag, const char *op, int32_t x,
                     int64_t out, double flops, int saves);
int32_t gen_f_identity_ar(gen *g, const char *tag, int32_t x);
int32_t gen_f_mm(gen *g, const char *tag, int32_t a, int32_t b, double M,
                    double K, double N);
int32_t gen_f_view(gen *g, const char *tag, const char *op, int32_t x);
void gen_fmt_name(gen *g, char *dst, const char *a, const char *b);
int gen_grow(gen *g, void **arr, size_t *cap, size_t need, size_t elem);
void gen_node_begin(gen *g, commsched_node_kind kind, const char *name,
                       const char *op);
void gen_node_end(gen *g, double flops, double bytes, int gemm);
void gen_node_in(gen *g, const char *buf);
void gen_node_out(gen *g, const char *name, int64_t size, const char *alias);
int32_t gen_param_get(gen *g, int32_t pi);
int32_t gen_param_new(gen *g, int32_t unit_idx, const char *tag,
                         int64_t numel, int fsdp);
void gen_set_prefix(gen *g, const char *fmt, long i);
int64_t gen_shard_numel(const gen *g, int64_t numel);
tape_op *gen_tape_push(gen *g, int type, const char *name);
int32_t gen_tensor_new(gen *g, const char *name, int64_t bytes, int rg);
int32_t gen_unit_new(gen *g, const char *name);

/* gen_model.c: the transformer layers, gradient clipping, the optimizer,
 * and the whole step. */
void gen_build(gen *g);
int32_t gen_layer(gen *g, int32_t x, long l);

#endif /* COMMSCHED_GEN_INTERNAL_H */
