/* commsched generate — the model: gradient clipping, the AdamW update, the
 * transformer layers and the whole step (map: generate.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate_internal.h"

/* ---------------------------------------------------------------------- */
/* Gradient clipping (torch.nn.utils.clip_grad_norm_, torchtitan's default) */
/* ---------------------------------------------------------------------- */

/* Norm of every local gradient, their total, an all-reduce over every
 * group the gradients are sharded over (the local norms are partial sums),
 * and the clip coefficient every update then reads: the optimizer cannot
 * start before the last gradient is reduced. Coarse: one norm per unit
 * and the scaling fused into the update; fine: per parameter a norm and an
 * in-place mul_. */
static void clip_grads(cs_gen *g)
{
    char name[CS_GEN_NAME], prev[CS_GEN_NAME];
    int sharded_dp = 0, sharded_ep = 0;
    for (size_t ui = 0; ui < g->nu && g->st == COMMSCHED_OK; ui++) {
        cs_gen_unit *u = &g->u[ui];
        if (u->np == 0)
            continue;
        int64_t numel = 0;
        cs_gen_fmt_name(g, name, u->name, "grad_norm");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name,
                          g->fine ? "linalg_vector_norm" : "_foreach_norm");
        if (u->n_fsdp && u->grad[0])
            cs_gen_node_in(g, u->grad);
        for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
            cs_gen_param *p = &g->p[i];
            sharded_dp |= p->fsdp;
            sharded_ep |= !p->fsdp && g->use_ep && strstr(p->name, "experts");
            numel += p->fsdp ? cs_gen_shard_numel(g, p->numel) : p->numel;
            if (!p->fsdp && p->grad[0])
                cs_gen_node_in(g, p->grad);
        }
        cs_gen_node_out(g, name, 4, NULL);
        cs_gen_node_end(g, 2.0 * (double)numel, (double)numel * (double)g->re,
                        0);
    }
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, "clip.total_norm",
                      "stack_norm");
    for (size_t ui = 0; ui < g->nu; ui++)
        if (g->u[ui].np > 0) {
            cs_gen_fmt_name(g, name, g->u[ui].name, "grad_norm");
            cs_gen_node_in(g, name);
        }
    cs_gen_node_out(g, "clip.total_norm", 4, NULL);
    cs_gen_node_end(g, (double)g->nu, 8.0 * (double)g->nu, 0);
    memcpy(prev, "clip.total_norm", sizeof "clip.total_norm");
    int groups[3] = {sharded_dp ? CS_GEN_DP : -1, g->use_tp ? CS_GEN_TP : -1,
                     sharded_ep ? CS_GEN_EP : -1};
    for (int k = 0; k < 3; k++) {
        if (groups[k] < 0)
            continue;
        const char *in[1] = {prev};
        char src[CS_GEN_NAME];
        memcpy(src, prev, CS_GEN_NAME);
        in[0] = src;
        snprintf(name, sizeof name, "clip.ar_%s", cs_gen_group_name(groups[k]));
        cs_gen_emit_collective(g, name, COMMSCHED_COLL_ALL_REDUCE, groups[k],
                               in, 1, 4, COMMSCHED_DTYPE_FLOAT32,
                               COMMSCHED_REDUCE_SUM);
        cs_gen_fmt_name(g, prev, name, "wait");
    }
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, "clip.coef", "clamp");
    cs_gen_node_in(g, prev);
    cs_gen_node_out(g, "clip.coef", 4, NULL);
    cs_gen_node_end(g, 4, 8, 0);
    if (!g->fine)
        return; /* the fused update reads clip.coef */
    for (size_t i = 0; i < g->np && g->st == COMMSCHED_OK; i++) {
        cs_gen_param *p = &g->p[i];
        if (!p->grad[0])
            continue;
        int64_t n = p->fsdp ? cs_gen_shard_numel(g, p->numel) : p->numel;
        cs_gen_fmt_name(g, name, p->name, "clip");
        cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "mul_");
        cs_gen_node_in(g, p->grad);
        cs_gen_node_in(g, "clip.coef");
        cs_gen_node_out(g, name, 0, p->grad);
        cs_gen_node_end(g, (double)n, 2.0 * (double)n * (double)g->re, 0);
        memcpy(p->grad, name, CS_GEN_NAME);
    }
}

/* ---------------------------------------------------------------------- */
/* Optimizer: AdamW on the fp32 master weights                              */
/* ---------------------------------------------------------------------- */

/* Coarse: one fused multi-tensor AdamW kernel per unit, in place. Fine: the
 * foreach decomposition per parameter (weight decay, two moment updates,
 * the denominator, the step): eight elementwise ops, one temporary. */
static void optimizer(cs_gen *g)
{
    char name[CS_GEN_NAME], a[CS_GEN_NAME], b[CS_GEN_NAME], c[CS_GEN_NAME],
        d[CS_GEN_NAME];
    for (size_t ui = 0; ui < g->nu && g->st == COMMSCHED_OK; ui++) {
        cs_gen_unit *u = &g->u[ui];
        if (u->np == 0) /* fine mode: the per-layer units stay empty */
            continue;
        if (!g->fine) {
            int64_t numel = 0;
            cs_gen_fmt_name(g, name, u->name, "adamw");
            cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, "_fused_adamw_");
            if (g->clip)
                cs_gen_node_in(g, "clip.coef");
            if (u->n_fsdp)
                cs_gen_node_in(g, u->grad);
            for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
                cs_gen_param *p = &g->p[i];
                if (!p->grad[0])
                    continue;
                if (!p->fsdp)
                    cs_gen_node_in(g, p->grad);
                numel += p->fsdp ? cs_gen_shard_numel(g, p->numel) : p->numel;
                cs_gen_fmt_name(g, a, p->name, p->fsdp ? "shard" : "master");
                cs_gen_node_in(g, a);
                cs_gen_fmt_name(g, b, p->name, "exp_avg");
                cs_gen_node_in(g, b);
                cs_gen_fmt_name(g, c, p->name, "exp_avg_sq");
                cs_gen_node_in(g, c);
            }
            for (int32_t i = u->p0; i < u->p0 + u->np; i++) {
                cs_gen_param *p = &g->p[i];
                if (!p->grad[0])
                    continue;
                cs_gen_fmt_name(g, a, p->name, p->fsdp ? "shard" : "master");
                cs_gen_fmt_name(g, d, a, "new");
                cs_gen_node_out(g, d, 0, a);
                cs_gen_fmt_name(g, b, p->name, "exp_avg");
                cs_gen_fmt_name(g, d, b, "new");
                cs_gen_node_out(g, d, 0, b);
                cs_gen_fmt_name(g, c, p->name, "exp_avg_sq");
                cs_gen_fmt_name(g, d, c, "new");
                cs_gen_node_out(g, d, 0, c);
            }
            if (g->cur.n_out == 0)
                continue;
            /* reads p, g, m, v and writes p, m, v: 7 fp32 streams */
            cs_gen_node_end(g, 12.0 * (double)numel, 28.0 * (double)numel, 0);
            for (size_t k = 0; k < g->cur.n_out; k++)
                (void)commsched_builder_add_output(g->b, g->cur.out[k],
                                                   &g->err);
            continue;
        }
        /* fine: one parameter per cs_gen_unit */
        cs_gen_param *p = &g->p[u->p0];
        if (!p->grad[0])
            continue;
        int64_t n = p->fsdp ? cs_gen_shard_numel(g, p->numel) : p->numel;
        double s4 = 4.0 * (double)n;
        char pw[CS_GEN_NAME], m[CS_GEN_NAME], v[CS_GEN_NAME], den[CS_GEN_NAME];
        cs_gen_fmt_name(g, pw, p->name, p->fsdp ? "shard" : "master");
        cs_gen_fmt_name(g, m, p->name, "exp_avg");
        cs_gen_fmt_name(g, v, p->name, "exp_avg_sq");
        struct step {
            const char *tag, *op;
            char *dst;   /* the buffer this step updates in place */
            int reads;   /* 1: +grad, 2: +grad twice, 3: +m +den */
        } steps[] = {
            {"opt.decay", "mul_", pw, 0},
            {"opt.lerp", "lerp_", m, 1},
            {"opt.mul", "mul_", v, 0},
            {"opt.addcmul", "addcmul_", v, 2},
            {"opt.sqrt", "sqrt", NULL, 0},
            {"opt.div", "div_", den, 0},
            {"opt.add_eps", "add_", den, 0},
            {"opt.addcdiv", "addcdiv_", pw, 3},
        };
        for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
            cs_gen_fmt_name(g, name, p->name, steps[k].tag);
            cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name, steps[k].op);
            double bytes = 2.0 * s4;
            if (!steps[k].dst) { /* sqrt(v) into a new denominator */
                cs_gen_node_in(g, v);
                cs_gen_node_out(g, name, 4 * n, NULL);
                cs_gen_node_end(g, (double)n, bytes, 0);
                memcpy(den, name, CS_GEN_NAME);
                continue;
            }
            cs_gen_node_in(g, steps[k].dst);
            if (steps[k].reads == 1 || steps[k].reads == 2) {
                cs_gen_node_in(g, p->grad);
                bytes += s4;
            }
            if (steps[k].reads == 3) {
                cs_gen_node_in(g, m);
                cs_gen_node_in(g, den);
                bytes += 2.0 * s4;
            }
            cs_gen_node_out(g, name, 0, steps[k].dst);
            cs_gen_node_end(g, 2.0 * (double)n, bytes, 0);
            memcpy(steps[k].dst, name, CS_GEN_NAME);
        }
        (void)commsched_builder_add_output(g->b, pw, &g->err);
        (void)commsched_builder_add_output(g->b, m, &g->err);
        (void)commsched_builder_add_output(g->b, v, &g->err);
    }
}

/* ---------------------------------------------------------------------- */
/* The model                                                               */
/* ---------------------------------------------------------------------- */

/* A linear layer x[M,K] @ W[K,N]. Fine mode adds the views the FX graph
 * has around aten.mm (flatten the batch, transpose the weight, unflatten). */
static int32_t linear(cs_gen *g, const char *tag, int32_t x, int32_t pi,
                      double M, double K, double N)
{
    char t[CS_GEN_NAME];
    int32_t w = cs_gen_param_get(g, pi);
    if (!g->fine)
        return cs_gen_f_mm(g, tag, x, w, M, K, N);
    snprintf(t, sizeof t, "%s.view_in", tag);
    int32_t x2 = cs_gen_f_view(g, t, "view", x);
    snprintf(t, sizeof t, "%s.t", tag);
    int32_t wt = cs_gen_f_view(g, t, "permute", w);
    snprintf(t, sizeof t, "%s.mm", tag);
    int32_t y = cs_gen_f_mm(g, t, x2, wt, M, K, N);
    snprintf(t, sizeof t, "%s.view_out", tag);
    return cs_gen_f_view(g, t, "view", y);
}

/* RMSNorm / LayerNorm over the last dimension of x[M, H]. Fine mode is
 * torchtitan's RMSNorm as traced: x.float(), pow, mean, +eps, rsqrt, mul,
 * type_as, * weight (LayerNorm: var_mean, sub, ..., * weight + bias). */
static int32_t norm(cs_gen *g, const char *tag, int32_t x, int32_t pw,
                    int32_t pb, int64_t M)
{
    int64_t H = g->s.hidden, e = g->e;
    double n = (double)(M * H);
    char t[CS_GEN_NAME];
    int32_t w = cs_gen_param_get(g, pw);
    int32_t bias = pb >= 0 ? cs_gen_param_get(g, pb) : -1;
    if (!g->fine) {
        int32_t in[3] = {x, w, bias};
        return cs_gen_f_ew(g, tag, g->s.rmsnorm ? "rms_norm" : "layer_norm",
                    bias >= 0 ? 3 : 2, in, 7, 7, 0, M * H * e, 5.0 * n);
    }
#define T(s) (snprintf(t, sizeof t, "%s.%s", tag, s), t)
    int32_t xf = cs_gen_f_ew1(g, T("to_fp32"), "_to_copy", x, M * H * 4, n, 0);
    int32_t r;
    int32_t xc = xf;
    if (g->s.rmsnorm) {
        int32_t p2 = cs_gen_f_ew1(g, T("pow"), "pow", xf, M * H * 4, n, 1);
        int32_t m = cs_gen_f_ew1(g, T("mean"), "mean", p2, M * 4, n, 0);
        int32_t a = cs_gen_f_ew(g, T("add_eps"), "add", 1, &m, 0, 0, 1, M * 4,
                                (double)M);
        r = cs_gen_f_ew1(g, T("rsqrt"), "rsqrt", a, M * 4, (double)M, 1);
    } else {
        int32_t vm = cs_gen_f_ew1(g, T("var_mean"), "var_mean", xf, M * 8,
                                  2.0 * n, 1);
        int32_t a = cs_gen_f_ew(g, T("add_eps"), "add", 1, &vm, 0, 0, 1, M * 8,
                                (double)M);
        r = cs_gen_f_ew1(g, T("rsqrt"), "rsqrt", a, M * 8, (double)M, 1);
        int32_t in[2] = {xf, r};
        xc = cs_gen_f_ew(g, T("sub"), "sub", 2, in, 3, 0, 0, M * H * 4, n);
    }
    int32_t in[2] = {xc, r};
    int32_t y = cs_gen_f_ew(g, T("mul"), "mul", 2, in, 3, 3, 0, M * H * 4, n);
    y = cs_gen_f_ew1(g, T("to_bf16"), "_to_copy", y, M * H * e, n, 0);
    in[0] = y;
    in[1] = w;
    y = cs_gen_f_ew(g, T("mul_w"), "mul", 2, in, 3, 3, 0, M * H * e, n);
    if (bias >= 0) {
        in[0] = y;
        in[1] = bias;
        y = cs_gen_f_ew(g, T("add_b"), "add", 2, in, 3, 0, 0, M * H * e, n);
    }
    return y;
#undef T
}

/* Rotary embedding of x (M tokens x `width` features). Fine mode is
 * torchtitan's complex form: float(), view_as_complex, * freqs_cis,
 * view_as_real, flatten, type_as. */
static int32_t rope(cs_gen *g, const char *tag, int32_t x, int64_t M,
                    int64_t width)
{
    double n = (double)(M * width);
    char t[CS_GEN_NAME];
    if (!g->fine) {
        int32_t in[2] = {x, g->freqs};
        return cs_gen_f_ew(g, tag, "rotary_emb", 2, in, 1, 2, 0,
                           M * width * g->e, 3.0 * n);
    }
#define T(s) (snprintf(t, sizeof t, "%s.%s", tag, s), t)
    int32_t xf = cs_gen_f_ew1(g, T("to_fp32"), "_to_copy", x, M * width * 4, n,
                              0);
    xf = cs_gen_f_view(g, T("as_complex"), "view_as_complex", xf);
    int32_t in[2] = {xf, g->freqs};
    int32_t y = cs_gen_f_ew(g, T("mul"), "mul", 2, in, 1, 2, 0, M * width * 4,
                            3.0 * n);
    y = cs_gen_f_view(g, T("as_real"), "view_as_real", y);
    y = cs_gen_f_view(g, T("flatten"), "view", y);
    return cs_gen_f_ew1(g, T("type_as"), "_to_copy", y, M * width * g->e, n, 0);
#undef T
}


/* Attention block: x (residual stream, M tokens: T, or T/tp with sequence
 * parallelism) -> x + attn(norm(x)). */
static int32_t attention(cs_gen *g, int32_t x, const cs_gen_layer_params *lp)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, hd = g->hd;
    int64_t M = g->sp ? g->Ts : T;
    int64_t q_w = g->nh_l * hd, kv_w = g->nkv_l * hd;
    int32_t xn = norm(g, "attn_norm", x, lp->norm1, lp->norm1_b, M);
    if (g->use_tp && g->sp)
        xn = cs_gen_f_coll(g, "sp_ag_attn", COMMSCHED_COLL_ALL_GATHER,
                           CS_GEN_TP, xn, T * H * e, COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        xn = cs_gen_f_identity_ar(g, "tp_f_attn", xn);
    double Td = (double)T, Hd = (double)H;
    int32_t q = linear(g, "wq", xn, lp->wq, Td, Hd, (double)q_w);
    int32_t k = linear(g, "wk", xn, lp->wk, Td, Hd, (double)kv_w);
    int32_t v = linear(g, "wv", xn, lp->wv, Td, Hd, (double)kv_w);
    q = cs_gen_f_view(g, "q.view_heads", "view", q);
    k = cs_gen_f_view(g, "k.view_heads", "view", k);
    v = cs_gen_f_view(g, "v.view_heads", "view", v);
    if (g->s.rope) {
        q = rope(g, "q.rope", q, T, q_w);
        k = rope(g, "k.rope", k, T, kv_w);
    }
    if (g->fine && g->nkv_l < g->nh_l) {
        /* repeat_kv for grouped-query attention: expand, copy, reshape */
        k = cs_gen_f_view(g, "k.expand", "expand", k);
        k = cs_gen_f_ew1(g, "k.repeat", "clone", k, T * q_w * e,
                         (double)(T * q_w), 0);
        k = cs_gen_f_view(g, "k.reshape", "view", k);
        v = cs_gen_f_view(g, "v.expand", "expand", v);
        v = cs_gen_f_ew1(g, "v.repeat", "clone", v, T * q_w * e,
                         (double)(T * q_w), 0);
        v = cs_gen_f_view(g, "v.reshape", "view", v);
    }
    q = cs_gen_f_view(g, "q.transpose", "transpose", q);
    k = cs_gen_f_view(g, "k.transpose", "transpose", k);
    v = cs_gen_f_view(g, "v.transpose", "transpose", v);
    /* Causal flash attention: QK^T and PV, 2 flops per MAC, half masked. */
    double S = (double)g->s.seq, B = (double)g->s.batch;
    double flops = 4.0 * B * S * S * (double)q_w * 0.5;
    char name[CS_GEN_NAME];
    cs_gen_fmt_name(g, name, g->prefix, "sdpa");
    char lse[CS_GEN_NAME];
    cs_gen_fmt_name(g, lse, name, "lse");
    int64_t lse_b = (int64_t)(B * S) * g->nh_l * 4;
    cs_gen_node_begin(g, COMMSCHED_NODE_COMPUTE, name,
                      "_scaled_dot_product_flash_attention");
    cs_gen_node_in(g, g->t[q].name);
    cs_gen_node_in(g, g->t[k].name);
    cs_gen_node_in(g, g->t[v].name);
    cs_gen_node_out(g, name, T * q_w * e, NULL);
    cs_gen_node_out(g, lse, lse_b, NULL);
    cs_gen_node_end(g, flops,
                    cs_gen_tb(g, q) + cs_gen_tb(g, k) + cs_gen_tb(g, v) +
                        (double)(T * q_w * e),
                    1);
    int32_t o = cs_gen_tensor_new(g, name, T * q_w * e, 1);
    int32_t ol = cs_gen_tensor_new(g, lse, lse_b, 0);
    cs_gen_op *op = cs_gen_tape_push(g, CS_GEN_SDPA, name);
    if (op) {
        op->in[0] = q;
        op->in[1] = k;
        op->in[2] = v;
        op->n_in = 3;
        op->out = o;
        op->aux = ol;
        op->flops = flops;
    }
    o = cs_gen_f_view(g, "o.transpose", "transpose", o);
    if (g->fine)
        o = cs_gen_f_ew1(g, "o.contiguous", "clone", o, T * q_w * e,
                         (double)(T * q_w), 0);
    o = cs_gen_f_view(g, "o.view", "view", o);
    int32_t a = linear(g, "wo", o, lp->wo, Td, (double)q_w, Hd);
    if (g->use_tp && g->sp)
        a = cs_gen_f_coll(g, "sp_rs_attn", COMMSCHED_COLL_REDUCE_SCATTER,
                          CS_GEN_TP, a, M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        a = cs_gen_f_coll(g, "tp_ar_attn", COMMSCHED_COLL_ALL_REDUCE, CS_GEN_TP,
                          a, T * H * e, COMMSCHED_REDUCE_SUM);
    return cs_gen_f_add(g, "attn_residual", x, a);
}

/* Dense MLP block (SwiGLU or GELU). */
static int32_t mlp(cs_gen *g, int32_t h, const cs_gen_layer_params *lp)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, F = g->ffn_l;
    int64_t M = g->sp ? g->Ts : T;
    double Td = (double)T, Hd = (double)H, Fd = (double)F;
    int32_t hn = norm(g, "mlp_norm", h, lp->norm2, lp->norm2_b, M);
    if (g->use_tp && g->sp)
        hn = cs_gen_f_coll(g, "sp_ag_mlp", COMMSCHED_COLL_ALL_GATHER, CS_GEN_TP,
                           hn, T * H * e, COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        hn = cs_gen_f_identity_ar(g, "tp_f_mlp", hn);
    int32_t gate = linear(g, "w1", hn, lp->w1, Td, Hd, Fd);
    int32_t act;
    if (g->s.swiglu) {
        int32_t up = linear(g, "w3", hn, lp->w3, Td, Hd, Fd);
        if (g->fine) {
            int32_t s = cs_gen_f_ew1(g, "silu", "silu", gate, T * F * e,
                                     4.0 * Td * Fd, 1);
            int32_t in[2] = {s, up};
            act = cs_gen_f_ew(g, "mul", "mul", 2, in, 3, 3, 0, T * F * e,
                              Td * Fd);
        } else {
            int32_t in[2] = {gate, up};
            act = cs_gen_f_ew(g, "silu_mul", "silu_mul", 2, in, 3, 3, 0,
                              T * F * e, 5.0 * Td * Fd);
        }
    } else {
        act = cs_gen_f_ew1(g, "gelu", "gelu", gate, T * F * e, 8.0 * Td * Fd,
                           1);
    }
    int32_t d = linear(g, "w2", act, lp->w2, Td, Fd, Hd);
    if (g->use_tp && g->sp)
        d = cs_gen_f_coll(g, "sp_rs_mlp", COMMSCHED_COLL_REDUCE_SCATTER,
                          CS_GEN_TP, d, M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        d = cs_gen_f_coll(g, "tp_ar_mlp", COMMSCHED_COLL_ALL_REDUCE, CS_GEN_TP,
                          d, T * H * e, COMMSCHED_REDUCE_SUM);
    return cs_gen_f_add(g, "mlp_residual", h, d);
}

/* Mixture-of-experts block (Mixtral): router, top-k, permute, all-to-all
 * dispatch over ep, local experts (grouped GEMMs), all-to-all combine,
 * un-permute with the routing weights. Tokens are assumed balanced: every
 * rank receives T x topk tokens. */
static int32_t moe(cs_gen *g, int32_t h, const cs_gen_layer_params *lp,
                   int32_t w1, int32_t w3, int32_t w2)
{
    int64_t T = g->T, H = g->s.hidden, e = g->e, F = g->s.ffn;
    int64_t E = g->s.experts, K = g->s.topk, TK = T * K;
    double Td = (double)T, Hd = (double)H, Fd = (double)F, TKd = (double)TK;
    int32_t hn = norm(g, "mlp_norm", h, lp->norm2, lp->norm2_b, T);
    int32_t logits = linear(g, "router", hn, lp->router, Td, Hd, (double)E);
    int32_t routing;
    if (g->fine) {
        int32_t lf = cs_gen_f_ew1(g, "router.to_fp32", "_to_copy", logits,
                                  T * E * 4, Td * (double)E, 0);
        int32_t sm = cs_gen_f_ew1(g, "router.softmax", "_softmax", lf,
                                  T * E * 4, 5.0 * Td * (double)E, 1);
        int32_t tk = cs_gen_f_ew1(g, "router.topk", "topk", sm, TK * 12,
                                  Td * (double)E, 1);
        routing = cs_gen_f_ew1(g, "router.renorm", "div", tk, TK * 12, TKd, 1);
    } else {
        routing = cs_gen_f_ew1(g, "router.topk", "softmax_topk", logits,
                               TK * 12, 6.0 * Td * (double)E, 1);
    }
    int32_t in[2] = {hn, routing};
    int32_t xp = cs_gen_f_ew(g, "moe.permute", "index_select", 2, in, 1, 2, 0,
                             TK * H * e, TKd * Hd);
    int32_t xr = cs_gen_f_coll(g, "a2a_dispatch", COMMSCHED_COLL_ALL_TO_ALL,
                               CS_GEN_EP, xp, TK * H * e,
                               COMMSCHED_REDUCE_NONE);
    int32_t a1 = cs_gen_f_mm(g, "experts.w1", xr, cs_gen_param_get(g, w1), TKd,
                             Hd, Fd);
    int32_t a3 = cs_gen_f_mm(g, "experts.w3", xr, cs_gen_param_get(g, w3), TKd,
                             Hd, Fd);
    int32_t act;
    if (g->fine) {
        int32_t s = cs_gen_f_ew1(g, "experts.silu", "silu", a1, TK * F * e,
                                 4.0 * TKd * Fd, 1);
        int32_t in2[2] = {s, a3};
        act = cs_gen_f_ew(g, "experts.mul", "mul", 2, in2, 3, 3, 0, TK * F * e,
                          TKd * Fd);
    } else {
        int32_t in2[2] = {a1, a3};
        act = cs_gen_f_ew(g, "experts.silu_mul", "silu_mul", 2, in2, 3, 3, 0,
                          TK * F * e, 5.0 * TKd * Fd);
    }
    int32_t y = cs_gen_f_mm(g, "experts.w2", act, cs_gen_param_get(g, w2), TKd,
                            Fd, Hd);
    int32_t yc = cs_gen_f_coll(g, "a2a_combine", COMMSCHED_COLL_ALL_TO_ALL,
                               CS_GEN_EP, y, TK * H * e, COMMSCHED_REDUCE_NONE);
    int32_t in3[2] = {yc, routing};
    int32_t out = cs_gen_f_ew(g, "moe.unpermute", "index_add_weighted", 2, in3,
                              3, 3, 0, T * H * e, 2.0 * TKd * Hd);
    return cs_gen_f_add(g, "mlp_residual", h, out);
}

/* One transformer layer: attention then MLP or MoE. */
int32_t cs_gen_layer(cs_gen *g, int32_t x, long l)
{
    x = attention(g, x, &g->lps[l]);
    if (g->family == COMMSCHED_GENERATE_MOE)
        return moe(g, x, &g->lps[l], g->experts[l][0], g->experts[l][1],
                   g->experts[l][2]);
    return mlp(g, x, &g->lps[l]);
}

void cs_gen_build(cs_gen *g)
{
    const commsched_generate_shape *s = &g->s;
    int64_t T = g->T, H = s->hidden, e = g->e;
    int64_t M = g->sp ? g->Ts : T;
    int fsdp = g->family == COMMSCHED_GENERATE_FSDP ||
               g->family == COMMSCHED_GENERATE_MOE ||
               g->family == COMMSCHED_GENERATE_2D;
    int32_t emb_unit, head_unit, wte, wpe = -1;
    int32_t fnorm, fnorm_b = -1, wout;
    size_t nl = (size_t)s->layers;
    cs_gen_layer_params *lps = calloc(nl ? nl : 1, sizeof *lps);
    int32_t (*experts)[3] = calloc(nl ? nl : 1, sizeof *experts);
    if (!lps || !experts) {
        free(lps);
        free(experts);
        g->st = commsched_error_set(&g->err, COMMSCHED_ENOMEM, NULL,
                                    "out of memory");
        return;
    }

    /* Groups. Ranks: TP innermost, then dp; hosts follow
     * CS_GEN_GPUS_PER_HOST. */
    if (g->family != COMMSCHED_GENERATE_TP) {
        int64_t ranks_below = g->use_tp ? g->tp : 1;
        int64_t hosts = cs_gen_ceil_div(g->dp * ranks_below,
                                        CS_GEN_GPUS_PER_HOST);
        (void)commsched_builder_add_group(g->b, cs_gen_group_name(CS_GEN_DP),
                                          g->dp, hosts < g->dp ? hosts : g->dp,
                                          &g->err);
    }
    if (g->use_tp)
        (void)commsched_builder_add_group(
            g->b, cs_gen_group_name(CS_GEN_TP), g->tp,
            cs_gen_ceil_div(g->tp, CS_GEN_GPUS_PER_HOST), &g->err);
    if (g->use_ep)
        (void)commsched_builder_add_group(
            g->b, cs_gen_group_name(CS_GEN_EP), g->ep,
            cs_gen_ceil_div(g->ep, CS_GEN_GPUS_PER_HOST), &g->err);

    /* The batch and constant buffers. */
    (void)commsched_builder_add_input(g->b, "tokens", T * 8, 1, &g->err);
    (void)commsched_builder_add_input(g->b, "labels", T * 8, 1, &g->err);
    g->tokens = cs_gen_tensor_new(g, "tokens", T * 8, 0);
    g->labels = cs_gen_tensor_new(g, "labels", T * 8, 0);
    if (s->rope) {
        /* complex64 cos/sin table of the sequence */
        int64_t fb = s->seq * (g->hd / 2) * 8;
        (void)commsched_builder_add_input(g->b, "freqs_cis", fb, 0, &g->err);
        g->freqs = cs_gen_tensor_new(g, "freqs_cis", fb, 0);
    }

    /* Parameters, declared in module order (that is also the optimizer's
     * order). TP slices: q/k/v/w1/w3 by columns, wo/w2 by rows, the
     * embedding and output by vocabulary; norms replicated. */
    int64_t q_w = g->nh_l * g->hd, kv_w = g->nkv_l * g->hd;
    cs_gen_set_prefix(g, "embed", 0);
    emb_unit = cs_gen_unit_new(g, "embed");
    wte = cs_gen_param_new(g, emb_unit, "wte", g->vocab_l * H, fsdp);
    if (!s->rope)
        wpe = cs_gen_param_new(g, emb_unit, "wpe", s->seq * H, fsdp);
    for (size_t l = 0; l < nl && g->st == COMMSCHED_OK; l++) {
        cs_gen_layer_params *lp = &lps[l];
        cs_gen_set_prefix(g, "L%ld", (long)l);
        int32_t un = cs_gen_unit_new(g, g->prefix);
        lp->norm1_b = lp->norm2_b = lp->w3 = lp->router = -1;
        lp->norm1 = cs_gen_param_new(g, un, "attn_norm.w", H, fsdp);
        if (!s->rmsnorm)
            lp->norm1_b = cs_gen_param_new(g, un, "attn_norm.b", H, fsdp);
        lp->wq = cs_gen_param_new(g, un, "wq", H * q_w, fsdp);
        lp->wk = cs_gen_param_new(g, un, "wk", H * kv_w, fsdp);
        lp->wv = cs_gen_param_new(g, un, "wv", H * kv_w, fsdp);
        lp->wo = cs_gen_param_new(g, un, "wo", q_w * H, fsdp);
        lp->norm2 = cs_gen_param_new(g, un, "mlp_norm.w", H, fsdp);
        if (!s->rmsnorm)
            lp->norm2_b = cs_gen_param_new(g, un, "mlp_norm.b", H, fsdp);
        if (g->family == COMMSCHED_GENERATE_MOE) {
            int64_t el = g->experts_l * H * s->ffn;
            lp->router = cs_gen_param_new(g, un, "router", H * s->experts,
                                          fsdp);
            experts[l][0] = cs_gen_param_new(g, un, "experts.w1", el, 0);
            experts[l][1] = cs_gen_param_new(g, un, "experts.w3", el, 0);
            experts[l][2] = cs_gen_param_new(g, un, "experts.w2", el, 0);
        } else {
            lp->w1 = cs_gen_param_new(g, un, "w1", H * g->ffn_l, fsdp);
            if (s->swiglu)
                lp->w3 = cs_gen_param_new(g, un, "w3", H * g->ffn_l, fsdp);
            lp->w2 = cs_gen_param_new(g, un, "w2", g->ffn_l * H, fsdp);
        }
    }
    cs_gen_set_prefix(g, "head", 0);
    head_unit = cs_gen_unit_new(g, "head");
    fnorm = cs_gen_param_new(g, head_unit, "norm.w", H, fsdp);
    if (!s->rmsnorm)
        fnorm_b = cs_gen_param_new(g, head_unit, "norm.b", H, fsdp);
    wout = cs_gen_param_new(g, head_unit, "output", H * g->vocab_l, fsdp);
    if (g->st != COMMSCHED_OK)
        goto done;

    /* Forward. */
    cs_gen_set_prefix(g, "embed", 0);
    int32_t in[3] = {g->tokens, cs_gen_param_get(g, wte)};
    /* a gather touches T rows of the table, not all of it */
    g->bytes_override = (double)(T * 8 + 2 * T * H * e);
    int32_t x = cs_gen_f_ew(g, "lookup", "embedding", 2, in, 2, 1, 0, T * H * e,
                            (double)(T * H));
    if (wpe >= 0) {
        in[0] = x;
        in[1] = cs_gen_param_get(g, wpe);
        x = cs_gen_f_ew(g, "add_pos", "add", 2, in, 3, 0, 0, T * H * e,
                        (double)(T * H));
    }
    if (g->use_tp && g->sp)
        x = cs_gen_f_coll(g, "sp_rs", COMMSCHED_COLL_REDUCE_SCATTER, CS_GEN_TP,
                          x, M * H * e, COMMSCHED_REDUCE_SUM);
    else if (g->use_tp)
        x = cs_gen_f_coll(g, "tp_ar", COMMSCHED_COLL_ALL_REDUCE, CS_GEN_TP, x,
                          T * H * e, COMMSCHED_REDUCE_SUM);
    g->lps = lps;
    g->experts = experts;
    for (size_t l = 0; l < nl && g->st == COMMSCHED_OK; l++) {
        cs_gen_set_prefix(g, "L%ld", (long)l);
        size_t start = g->nops;
        int32_t x0 = x;
        x = cs_gen_layer(g, x, (long)l);
        if (g->ac &&
            cs_gen_grow(g, (void **)&g->seg, &g->cap_seg, g->nseg + 1,
                        sizeof *g->seg) == 0)
            g->seg[g->nseg++] =
                (cs_gen_segment){start, g->nops, x0, x, (long)l};
    }
    cs_gen_set_prefix(g, "head", 0);
    x = norm(g, "norm", x, fnorm, fnorm_b, M);
    if (g->use_tp && g->sp)
        x = cs_gen_f_coll(g, "sp_ag", COMMSCHED_COLL_ALL_GATHER, CS_GEN_TP, x,
                          T * H * e, COMMSCHED_REDUCE_NONE);
    else if (g->use_tp)
        x = cs_gen_f_identity_ar(g, "tp_f", x);
    int32_t logits = linear(g, "output", x, wout, (double)T, (double)H,
                            (double)g->vocab_l);
    int64_t V = g->vocab_l;
    double TV = (double)(T * V);
    int32_t loss;
    if (g->use_tp) {
        /* Vocabulary-parallel cross-entropy (loss_parallel): local max and
         * sum of exponentials, one all-reduce of the statistics, then the
         * loss. The statistics need no gradient. */
        int32_t st_ = cs_gen_f_ew(g, "ce.stats", "ce_local_stats", 1, &logits,
                                  0, 0, 0, T * 12, 3.0 * TV);
        g->t[st_].rg = 0;
        st_ = cs_gen_f_coll(g, "ce.ar", COMMSCHED_COLL_ALL_REDUCE, CS_GEN_TP,
                            st_, T * 12, COMMSCHED_REDUCE_SUM);
        int32_t in2[3] = {logits, st_, g->labels};
        loss = cs_gen_f_ew(g, "loss", "vocab_parallel_cross_entropy", 3, in2, 1,
                           7, 0, 4, 3.0 * TV);
    } else if (g->fine) {
        int32_t lf = cs_gen_f_ew1(g, "ce.to_fp32", "_to_copy", logits,
                                  T * V * 4, TV, 0);
        int32_t ls = cs_gen_f_ew1(g, "ce.log_softmax", "_log_softmax", lf,
                                  T * V * 4, 4.0 * TV, 1);
        int32_t in2[2] = {ls, g->labels};
        loss = cs_gen_f_ew(g, "loss", "nll_loss_forward", 2, in2, 1, 3, 0, 4,
                           (double)T);
    } else {
        int32_t in2[2] = {logits, g->labels};
        loss = cs_gen_f_ew(g, "loss", "cross_entropy", 2, in2, 1, 3, 0, 4,
                           5.0 * TV);
    }
    (void)commsched_builder_add_output(g->b, g->t[loss].name, &g->err);
    g->loss = loss;

    /* Backward, seeded with d(loss) = 1: the loss node's gradient rule
     * reads the loss itself in place of a ones tensor. */
    g->t[loss].grad = loss;
    cs_gen_backward(g);
    if (g->clip)
        clip_grads(g);
    optimizer(g);
done:
    g->lps = NULL;
    g->experts = NULL;
    free(lps);
    free(experts);
}
