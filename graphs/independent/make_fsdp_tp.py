#!/usr/bin/env python3
"""Makes graphs/independent/fsdp-tp-8L.json: one training step of an
8-layer transformer under FSDP (ZeRO-3 over a data-parallel group that
spans hosts) x Megatron tensor parallelism (a group inside one host), as
one rank sees it, written without commsched's generators or its cost
model.

    python3 graphs/independent/make_fsdp_tp.py graphs/independent/fsdp-tp-8L.json

Standard library only. Every node carries its own runtime_ns from the
small model below (a roofline for compute, NCCL's ring algorithm with a
fixed launch cost for the collectives), so nothing of commsched's device
profiles or collective model goes into it; the shapes are a 13B-class
model (hidden 5120, FFN 13824 gated, 40 heads) with one sequence of 4096
tokens per data-parallel rank (--sequences for more), bf16 weights and
activations, fp32 gradient reduce-scatters. At one sequence the step is
bound by the data-parallel stream: the backward's gathers and
reduce-scatters take longer than its compute, so how far they prefetch
within the memory budget decides the step.

The order is what an eager FSDP + Megatron step issues with no
prefetching: each module's weights all-gathered right before their first
use (again in the backward), every collective waited on at once, each
weight's gradient reduce-scattered as soon as it exists, the optimizer
(in-place Adam on the shards) at the end. Per layer:

  forward  ag attn (dp) -> ln1, qkv, attention, out-proj -> all-reduce (tp)
           -> residual -> ag mlp (dp) -> ln2, up (gate+up), act, down
           -> all-reduce (tp) -> residual
  backward in reverse, with the input gradients of the column-parallel
           matmuls all-reduced over tp and each weight gradient
           reduce-scattered over dp.

The activations a layer saves for its backward (ln1, qkv, attention
context, the residual inputs, ln2, up, act) stay live until that backward
runs, so the step's peak sits at the start of the backward and prefetching
a gathered weight there costs memory the budget must allow.
"""
import argparse
import json

LAYERS = 8
HIDDEN = 5120
FFN = 13824
TOKENS = 4096              # per data-parallel rank: one sequence
DP, DP_HOSTS = 8, 8        # FSDP group: one GPU per host
TP = 4                     # tensor-parallel group inside one host
BF16, FP32 = 2, 4

# The machine: an H100-class GPU (dense bf16 989 TFLOP/s, 3.35 TB/s HBM)
# reaching these shares of peak, a 400 Gb/s NIC per GPU and NVLink.
PEAK_FLOPS, MM_EFF, ATTN_EFF = 989e12, 0.62, 0.45
HBM, HBM_EFF = 3.35e12, 0.8
NIC_BUS_BW = 42e9          # bytes/s per GPU across hosts (ring bus bw)
NVLINK_BUS_BW = 320e9      # bytes/s per GPU inside a host
LAUNCH_NS = {"dp": 25e3, "tp": 8e3}


def mm_ns(m, k, n):
    return 2.0 * m * k * n / (PEAK_FLOPS * MM_EFF) * 1e9


def mem_ns(nbytes):
    return nbytes / (HBM * HBM_EFF) * 1e9


def ring_ns(group, op, full_bytes):
    """NCCL's ring: all-gather / reduce-scatter move (k-1)/k of the full
    buffer, all-reduce twice that."""
    k, bw = (DP, NIC_BUS_BW) if group == "dp" else (TP, NVLINK_BUS_BW)
    f = (k - 1) / k * (2 if op == "all_reduce" else 1)
    return LAUNCH_NS[group] + f * full_bytes / bw * 1e9


class Step:
    def __init__(self):
        self.nodes, self.inputs, self.outputs = [], [], []

    def inp(self, name, size, freeable=False):
        i = {"name": name, "size": int(size)}
        if freeable:  # fields at their default left out, as commsched saves
            i["freeable"] = True
        self.inputs.append(i)

    def compute(self, name, op, reads, out_size, ns, gemm=False):
        n = {"name": name, "kind": "compute", "op": op, "inputs": reads,
             "outputs": [{"name": name + ".out", "size": int(out_size)}],
             "runtime_ns": round(ns, 3)}
        if gemm:
            n["gemm_like"] = True
        self.nodes.append(n)
        return name + ".out"

    def coll(self, name, op, group, src, out_size, full_bytes, dtype,
             in_place=False):
        """The collective and its wait (right after it: nothing overlaps);
        returns the name consumers read (the wait's alias)."""
        out = ({"name": name + ".out", "alias_of": src} if in_place else
               {"name": name + ".out", "size": int(out_size)})
        n = {"name": name, "kind": "collective", "op": op, "group": group,
             "dtype": dtype, "inputs": [src], "outputs": [out],
             "runtime_ns": round(ring_ns(group, op, full_bytes), 3)}
        if op != "all_gather":
            n["reduce_op"] = "avg" if group == "dp" else "sum"
        self.nodes.append(n)
        self.nodes.append({"name": name + ".wait", "kind": "wait",
                           "op": "wait_tensor", "inputs": [name + ".out"],
                           "outputs": [{"name": name + ".r",
                                        "alias_of": name + ".out"}]})
        return name + ".r"


def build(layers, tokens):
    s = Step()
    T, h, f = tokens, HIDDEN, FFN
    seqs = tokens // 4096
    act = T * h * BF16
    # per TP rank: qkv h x 3h/tp, out h/tp x h; gate+up h x 2f/tp, down f/tp x h
    w = {"qkv": h * 3 * h // TP, "o": h // TP * h,
         "up": h * 2 * f // TP, "down": f // TP * h}
    mods = {"attn": ("qkv", "o"), "mlp": ("up", "down")}
    s.inp("x0", act, freeable=True)
    for i in range(layers):
        for m, ws in mods.items():
            s.inp("L%d.%s.shard" % (i, m), sum(w[x] for x in ws) * BF16 // DP)
        for x in w:
            s.inp("L%d.%s.m" % (i, x), w[x] * FP32 * 2 // DP)  # Adam state

    def gather(i, m, tag):
        full = sum(w[x] for x in mods[m]) * BF16
        return s.coll("L%d.ag_%s%s" % (i, m, tag), "all_gather", "dp",
                      "L%d.%s.shard" % (i, m), full, full, "bfloat16")

    x = "x0"
    saved = []
    for i in range(layers):
        p = "L%d." % i
        wa = gather(i, "attn", "")
        ln1 = s.compute(p + "ln1", "layer_norm", [x], act, mem_ns(2 * act))
        qkv = s.compute(p + "qkv", "mm", [ln1, wa], T * 3 * h // TP * BF16,
                        mm_ns(T, h, 3 * h // TP), gemm=True)
        # causal attention over sequences of 4096: half the score matrix
        ctx = s.compute(p + "attn", "flash_attention", [qkv],
                        T * h // TP * BF16,
                        seqs * 4 * 4096 * 4096 * (h // TP) * 0.5 /
                        (PEAK_FLOPS * ATTN_EFF) * 1e9)
        o = s.compute(p + "o_proj", "mm", [ctx, wa], act,
                      mm_ns(T, h // TP, h), gemm=True)
        o_r = s.coll(p + "ar_o", "all_reduce", "tp", o, act, act, "bfloat16",
                     in_place=True)
        x1 = s.compute(p + "res1", "add", [x, o_r], act, mem_ns(3 * act))
        wm = gather(i, "mlp", "")
        ln2 = s.compute(p + "ln2", "layer_norm", [x1], act, mem_ns(2 * act))
        up = s.compute(p + "up", "mm", [ln2, wm], T * 2 * f // TP * BF16,
                       mm_ns(T, h, 2 * f // TP), gemm=True)
        a = s.compute(p + "act", "silu_mul", [up], T * f // TP * BF16,
                      mem_ns(3 * T * f // TP * BF16))
        d = s.compute(p + "down", "mm", [a, wm], act, mm_ns(T, f // TP, h),
                      gemm=True)
        d_r = s.coll(p + "ar_down", "all_reduce", "tp", d, act, act,
                     "bfloat16", in_place=True)
        x2 = s.compute(p + "res2", "add", [x1, d_r], act, mem_ns(3 * act))
        saved.append((x, ln1, qkv, ctx, x1, ln2, up, a))
        x = x2
    loss = s.compute("head.loss", "cross_entropy", [x], 4, mem_ns(act))
    dx = s.compute("head.loss_bwd", "cross_entropy_backward", [x, loss], act,
                   mem_ns(2 * act))
    shards = []
    for i in reversed(range(layers)):
        p = "L%d." % i
        x, ln1, qkv, ctx, x1, ln2, up, a = saved[i]

        def reduce_grad(name, g, n_params):
            shards.append((i, name, s.coll(
                p + "rs_" + name, "reduce_scatter", "dp", g,
                n_params * FP32 // DP, n_params * FP32, "float32")))

        wm = gather(i, "mlp", "_bwd")
        da = s.compute(p + "down_dx", "mm", [dx, wm], T * f // TP * BF16,
                       mm_ns(T, h, f // TP), gemm=True)
        gd = s.compute(p + "down_dw", "mm", [dx, a], w["down"] * FP32,
                       mm_ns(f // TP, T, h), gemm=True)
        reduce_grad("down", gd, w["down"])
        dup = s.compute(p + "act_bwd", "silu_mul_backward", [da, up],
                        T * 2 * f // TP * BF16,
                        mem_ns(5 * T * f // TP * BF16))
        dln2 = s.compute(p + "up_dx", "mm", [dup, wm], act,
                         mm_ns(T, 2 * f // TP, h), gemm=True)
        gu = s.compute(p + "up_dw", "mm", [dup, ln2], w["up"] * FP32,
                       mm_ns(h, T, 2 * f // TP), gemm=True)
        reduce_grad("up", gu, w["up"])
        dln2_r = s.coll(p + "ar_dln2", "all_reduce", "tp", dln2, act, act,
                        "bfloat16", in_place=True)
        dx1 = s.compute(p + "ln2_bwd", "layer_norm_backward",
                        [dln2_r, x1, dx], act, mem_ns(4 * act))
        wa = gather(i, "attn", "_bwd")
        dctx = s.compute(p + "o_dx", "mm", [dx1, wa], T * h // TP * BF16,
                         mm_ns(T, h, h // TP), gemm=True)
        go = s.compute(p + "o_dw", "mm", [dx1, ctx], w["o"] * FP32,
                       mm_ns(h // TP, T, h), gemm=True)
        reduce_grad("o", go, w["o"])
        dqkv = s.compute(p + "attn_bwd", "flash_attention_backward",
                         [dctx, qkv, ctx], T * 3 * h // TP * BF16,
                         2.5 * seqs * 4 * 4096 * 4096 * (h // TP) * 0.5 /
                         (PEAK_FLOPS * ATTN_EFF) * 1e9)
        dln1 = s.compute(p + "qkv_dx", "mm", [dqkv, wa], act,
                         mm_ns(T, 3 * h // TP, h), gemm=True)
        gq = s.compute(p + "qkv_dw", "mm", [dqkv, ln1], w["qkv"] * FP32,
                       mm_ns(h, T, 3 * h // TP), gemm=True)
        reduce_grad("qkv", gq, w["qkv"])
        dln1_r = s.coll(p + "ar_dln1", "all_reduce", "tp", dln1, act, act,
                        "bfloat16", in_place=True)
        dx = s.compute(p + "ln1_bwd", "layer_norm_backward",
                       [dln1_r, x, dx1], act, mem_ns(4 * act))
    # Adam on each weight's shard, in place (the shard and its state are
    # read and written): a module's shard is the concatenation of its
    # weights', so each weight's step reads the module's shard.
    for i, name, g in shards:
        m = "attn" if name in ("qkv", "o") else "mlp"
        n = w[name] // DP
        st = "L%d.%s.m" % (i, name)
        s.nodes.append({
            "name": "L%d.adam_%s" % (i, name), "kind": "compute",
            "op": "adam", "inputs": [g, "L%d.%s.shard" % (i, m), st],
            "outputs": [{"name": "L%d.%s.m_new" % (i, name), "alias_of": st}],
            "runtime_ns": round(mem_ns(n * (FP32 * 3 + FP32 * 2 * 2)), 3)})
        s.outputs.append("L%d.%s.m_new" % (i, name))
    s.outputs.append(loss)
    return {"format": "commsched-graph", "version": 1,
            "name": "fsdp-tp-8L-independent",
            "groups": [{"name": "dp", "size": DP, "hosts": DP_HOSTS},
                       {"name": "tp", "size": TP, "hosts": 1}],
            "inputs": s.inputs, "outputs": s.outputs, "nodes": s.nodes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="output file (default: stdout)")
    ap.add_argument("--layers", type=int, default=LAYERS)
    ap.add_argument("--sequences", type=int, default=TOKENS // 4096,
                    help="sequences of 4096 tokens per data-parallel rank")
    a = ap.parse_args()
    g = build(a.layers, a.sequences * 4096)
    # the header on one line, then one node a line
    nodes = g.pop("nodes")
    text = json.dumps(g)[:-1] + ', "nodes": [\n' + ",\n".join(
        json.dumps(n) for n in nodes) + "\n]}"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
