/* commsched — synthetic workloads: one training step (forward, backward,
 * AdamW update) of a decoder-only transformer, as one rank of an FSDP,
 * DDP, tensor-parallel, expert-parallel or 2-D job sees it
 * (docs/WORKLOADS.md is the reference for every modelling choice). The
 * CLI's `commsched generate fsdp|ddp|tp|moe|2d` is these calls and its own
 * command line; the library prints nothing.
 *
 *     commsched_generate_options o;
 *     commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP,
 *                                     commsched_generate_preset_find(
 *                                         "llama3-8b"));
 *     o.shape.layers = 2;
 *     commsched_graph *g = NULL;
 *     commsched_error err = {0};
 *     if (commsched_generate_transformer(&o, &g, &err) != COMMSCHED_OK)
 *         fprintf(stderr, "%s\n", err.text);
 *
 * The step is built through the public builder API (commsched/graph.h),
 * so what it makes loads, saves and optimizes like any other graph.
 * Deterministic: the same options give the same graph, byte for byte when
 * saved. Error texts name the settings by the CLI's options ("--sp
 * applies to tp and 2d only"), the one place a user meets them. */
#ifndef COMMSCHED_GENERATE_H
#define COMMSCHED_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/export.h"
#include "commsched/graph.h"
#include "commsched/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A decoder-only transformer's shape and its training recipe. */
typedef struct commsched_generate_shape {
    const char *name; /* the step's name starts with it; borrowed */
    int64_t hidden, heads, kv_heads, ffn, layers, seq, batch, vocab;
    int64_t experts, topk; /* 0, 0: a dense model */
    int swiglu;  /* 1: SwiGLU MLP (w1, w3, w2); 0: GELU MLP (w1, w2) */
    int rope;    /* 1: rotary positions; 0: a learned position table */
    int rmsnorm; /* 1: RMSNorm (weight); 0: LayerNorm (weight, bias) */
    int ac;      /* the training recipe checkpoints every layer */
} commsched_generate_shape;

/* The parallelism families (commsched_generate_family_name names them). */
typedef enum commsched_generate_family {
    COMMSCHED_GENERATE_FSDP, /* all-gather per layer, reduce-scatter (dp) */
    COMMSCHED_GENERATE_DDP,  /* gradient all-reduce per parameter (dp) */
    COMMSCHED_GENERATE_TP,   /* Megatron tensor parallelism (tp) */
    COMMSCHED_GENERATE_MOE,  /* FSDP (dp) and expert parallelism (ep) */
    COMMSCHED_GENERATE_2D,   /* FSDP (dp) x tensor parallelism (tp) */
    COMMSCHED_GENERATE_FAMILY_COUNT
} commsched_generate_family;

/* Preset i of the library's published shapes, i = 0, 1, ... (the table
 * docs/WORKLOADS.md cites a source for; seq is the training sequence
 * length used by default); NULL past the last. Borrowed for the life of
 * the program. Never fails. */
COMMSCHED_EXPORT const commsched_generate_shape *
commsched_generate_preset(size_t i);

/* The preset named `name` ("llama3-8b", "llama2-70b", "mixtral-8x7b",
 * "gpt3-175b"), or NULL when none is (or name is NULL). Borrowed as
 * commsched_generate_preset's. O(presets). */
COMMSCHED_EXPORT const commsched_generate_shape *
commsched_generate_preset_find(const char *name);

/* The preset a family gets when none is named: mixtral-8x7b for moe,
 * llama3-8b for the others; NULL for a value outside the enum. Borrowed
 * as commsched_generate_preset's. */
COMMSCHED_EXPORT const commsched_generate_shape *
commsched_generate_preset_default(commsched_generate_family family);

/* "fsdp", "ddp", "tp", "moe", "2d" by family; NULL for a value outside
 * the enum (so a loop from 0 to NULL lists them). Static; never fails. */
COMMSCHED_EXPORT const char *
commsched_generate_family_name(commsched_generate_family family);

/* What commsched_generate_transformer builds. Initialise with
 * commsched_generate_options_init, then change what you need. */
typedef struct commsched_generate_options {
    commsched_generate_family family;
    commsched_generate_shape shape; /* a preset, with the caller's changes */
    int asked_experts; /* experts or topk were set (only moe takes them) */
    int fine;          /* one node per aten op of the post-grad graph */
    int sp;            /* sequence parallelism (tp, 2d) */
    int ac;            /* checkpoint every layer */
    int clip;          /* clip the gradient norm before the update */
    int64_t dp, tp, ep; /* group sizes, each used where the family has it */
    commsched_dtype dtype, reduce_dtype; /* compute, gradient reduction */
    /* Called with the nodes built of the step's total; NULL: nothing. */
    commsched_progress_fn progress;
    void *progress_arg;
} commsched_generate_options;

/* The defaults for a family and a preset (NULL: the family's,
 * commsched_generate_preset_default): the preset's shape and recipe
 * (its ac), groups of 8, bfloat16 compute, float32 reduction, clipping
 * on, no progress. The shape's name stays the preset's (borrowed). Never
 * fails; a family outside the enum is refused by the calls below. */
COMMSCHED_EXPORT void commsched_generate_options_init(
    commsched_generate_options *o, commsched_generate_family family,
    const commsched_generate_shape *preset);

/* The number of nodes the step of o will have, in *nodes, before anything
 * the size of the step is allocated (a caller refuses a step too large
 * here: a step's nodes grow linearly with its layers, so builds of one
 * and two layers give it). *nodes is -1 when one of those builds fails:
 * commsched_generate_transformer then says why. Checks the options
 * first: EINVAL, with what is wrong in words, for options that do not
 * make a step (a family outside the enum, a size outside 1 to 2^31, a
 * NULL shape name, shapes that do not divide by the groups, experts
 * outside moe); ENOMEM. *nodes is unset on failure.
 * Cost: O(nodes of two layers). */
COMMSCHED_EXPORT commsched_status commsched_generate_size(
    const commsched_generate_options *o, double *nodes,
    commsched_error *err);

/* The step of o, named "<shape.name>-<family>[-sp][-fine][-ac]-<N>L"
 * (cut to 127 bytes), in *out (the caller destroys it with
 * commsched_graph_destroy). o's progress callback, when set, is called
 * once per node built, from the caller's thread (the total is
 * commsched_generate_size's count). Fails as commsched_generate_size
 * does, with EINVAL "generated name too long" (a node name past 63
 * bytes; no preset's step has one), ENOMEM, or with the builder's error
 * (a size past the format's limits, docs/FORMAT.md "Limits"); *out is
 * NULL then and nothing is left to free. Cost: O(nodes) time and
 * memory, plus commsched_generate_size's when progress is set. */
COMMSCHED_EXPORT commsched_status commsched_generate_transformer(
    const commsched_generate_options *o, commsched_graph **out,
    commsched_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_GENERATE_H */
