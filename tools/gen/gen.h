/* commsched generate fsdp|ddp|tp|moe|2d as a plain function: options in,
 * a graph out, failures as a commsched_error. The command line that fills
 * the options, the help text and the exit codes are the CLI's
 * (tools/cli/cmd_generate.c); the generator prints nothing, so it needs
 * nothing but the public headers and this folder. */
#ifndef COMMSCHED_GEN_H
#define COMMSCHED_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"
#include "commsched/status.h"

/* A decoder-only transformer's shape and its training recipe. */
typedef struct gen_shape {
    const char *name;
    int64_t hidden, heads, kv_heads, ffn, layers, seq, batch, vocab;
    int64_t experts, topk;
    int swiglu;      /* 1: SwiGLU MLP (w1, w3, w2); 0: GELU MLP (w1, w2) */
    int rope;        /* 1: rotary positions; 0: a learned position table */
    int rmsnorm;     /* 1: RMSNorm (weight); 0: LayerNorm (weight, bias) */
    int ac;          /* the training recipe checkpoints every layer */
} gen_shape;

/* The parallelism families, named by gen_family_names. */
enum gen_family { FAM_FSDP, FAM_DDP, FAM_TP, FAM_MOE, FAM_2D, FAM_COUNT };

/* The published shapes (gen_transformer.c); docs/WORKLOADS.md cites each
 * source. seq is the training sequence length used by default. */
extern const gen_shape gen_presets[];
extern const size_t gen_preset_count;
/* "fsdp", "ddp", ... by enum gen_family (FAM_COUNT of them). */
extern const char *const gen_family_names[];
/* The preset a family gets when none is named. */
#define GEN_DEFAULT_PRESET "llama3-8b"
#define GEN_DEFAULT_MOE_PRESET "mixtral-8x7b"

typedef struct gen_options {
    int family;       /* enum gen_family */
    gen_shape shape;  /* a preset, with the caller's overrides */
    int asked_experts; /* experts or topk were set (only moe takes them) */
    int fine;         /* one node per aten op of the post-grad graph */
    int sp;           /* sequence parallelism (tp, 2d) */
    int ac;           /* checkpoint every layer */
    int clip;         /* clip the gradient norm before the update */
    int64_t dp, tp, ep; /* group sizes, each used where the family has it */
    commsched_dtype dtype, reduce_dtype; /* compute, gradient reduction */
    /* Reports the nodes built of the step's total; NULL: nothing. */
    commsched_progress_fn progress;
    void *progress_arg;
} gen_options;

/* The defaults for a family and a preset: the preset's shape and recipe,
 * groups of 8, bfloat16 compute, float32 reduction, clipping on. */
void gen_options_init(gen_options *o, int family, const gen_shape *preset);

/* Checks the options and, before anything the size of the step is
 * allocated, the node count the step will have (a step's nodes grow
 * linearly with its layers, so two builds of one and two layers give it;
 * -1 when one of those fails: gen_transformer then reports why). EINVAL
 * with what is wrong, in words, for options that do not make a step.
 * O(nodes of two layers). */
commsched_status gen_transformer_size(const gen_options *o, double *nodes,
                                      commsched_error *err);

/* The step (named "<preset>-<family>[-sp][-fine][-ac]-<N>L") in *out, the
 * caller's to destroy; deterministic: the same options give the same
 * graph. Fails as gen_transformer_size does, or ENOMEM, or with the
 * builder's error. O(nodes). */
commsched_status gen_transformer(const gen_options *o, commsched_graph **out,
                                 commsched_error *err);

#endif /* COMMSCHED_GEN_H */
