"""Transformer training steps compiled by a real torch.compile (torch
2.13.0, CPU, Inductor) under PyTorch's fake process group of 8 ranks: the
programs of graphs/torch/transformer-*.json and of `make bench`'s
plugin-at-scale table (bench/torch_scale.py).

Each program is a stack of LAYERS transformer blocks (RMSNorm, attention
with q/k/v/o projections, rotary embedding and causal SDPA, a SwiGLU MLP,
residuals), forward and backward (AOTAutograd gives Inductor two graphs),
parallelised four ways:

- ``fsdp``: as SimpleFSDP does it (torchtitan's experiments/simple_fsdp):
  every parameter is a 1/8 shard all-gathered inside the compiled graph
  by a functional collective whose autograd is a reduce-scatter of the
  gradient, and the all-gathers are recomputed in the backward instead of
  saved (selective activation checkpointing, CheckpointPolicy.
  MUST_RECOMPUTE on the all-gather and its wait, as SimpleFSDP's
  ``fsdp_policy``): ZeRO-3.
- ``tp``: Megatron tensor parallel with sequence parallel over the 8
  ranks: the sequence-sharded activations all-gathered before the
  column-parallel projections (q/k/v, w1/w3), the row-parallel outputs
  (o, w2) reduce-scattered back to sequence shards; their autograd puts
  the mirrored collectives in the backward.
- ``2d``: FSDP x TP on two process groups (dp = ranks 0,2,4,6; tp = ranks
  0,1): each TP-local weight is itself a dp shard all-gathered as in
  ``fsdp``, the blocks TP+SP over tp as in ``tp``.
- ``moe``: mixture of experts, expert parallel over the 8 ranks: attention
  parameters FSDP-sharded as in ``fsdp``; a top-2 router, tokens sorted
  by expert and dispatched with ``all_to_all_single``, one local expert
  (SwiGLU), combined back with ``all_to_all_single`` and weighted by the
  gates, and a shared expert beside it (compute that can hide the
  exchange).

``compile_step(kind, layers, hook)`` compiles one step with ``hook`` as
Inductor's only ``reorder_for_compute_comm_overlap_passes`` entry and
returns the scheduler-node lists' lengths. With ``run=False`` (the sizes
`make bench` measures) nothing is executed and no code is generated: the
backward is lowered together with the forward
(``force_non_lazy_backward_lowering``); the hook's graph is stopped right
after the hook returns (the forward is then left to AOTAutograd as its FX
graph, never run, so that the backward is lowered next), and parameters
are allocated by ``torch.empty`` and never touched. Everything Inductor
does up to and including the comm reordering hook is exactly what a real
compile does; only code generation after it is cut.

Deterministic: torch.manual_seed(SEED) before every program; Inductor's
node names and order depend only on the program and torch's version.
"""
import functools
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F

WORLD = 8
SEED = 0
HIDDEN = 1024
HEADS = 16
FFN = 2816          # SwiGLU's 8/3 x hidden, rounded up to a multiple of 256
TOKENS = 2048       # per rank (FSDP, MoE); the whole sequence (TP, 2D)
TP = 2              # tp group of the 2D program
KINDS = ("fsdp", "tp", "2d", "moe")

# Layer counts whose longer scheduler-node list (the backward's) reaches
# about 1K, 10K and 36K nodes (the forward's is 0.65-0.95 of it), from
# the lists' growth per layer with torch 2.13.0; graphs/README.md and
# docs/PERFORMANCE.md give the exact counts.
LAYERS = {
    "fsdp": {"1k": 16, "10k": 159, "36k": 572},
    "tp": {"1k": 29, "10k": 286, "36k": 1029},
    "2d": {"1k": 14, "10k": 141, "36k": 507},
    "moe": {"1k": 15, "10k": 145, "36k": 522},
}


class Stop(Exception):
    """Raised by the compile-only driver once the last graph was seen."""


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _rotary(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def _attention(h, wq, wk, wv, wo, cos, sin, heads):
    s = h.shape[0]
    hd = HIDDEN // HEADS
    q = (h @ wq).view(s, heads, hd).transpose(0, 1)
    k = (h @ wk).view(s, heads, hd).transpose(0, 1)
    v = (h @ wv).view(s, heads, hd).transpose(0, 1)
    q, k = _rotary(q, cos, sin), _rotary(k, cos, sin)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(0, 1).reshape(s, heads * hd) @ wo


def _swiglu(h, w1, w2, w3):
    return (F.silu(h @ w1) * (h @ w3)) @ w2


def _sac_policy(ctx, op, *args, **kwargs):
    """SimpleFSDP's policy: recompute every all-gather (and its wait) in
    the backward rather than keep the gathered weight alive."""
    from torch.utils.checkpoint import CheckpointPolicy
    if op in (torch.ops._c10d_functional.all_gather_into_tensor.default,
              torch.ops._c10d_functional.wait_tensor.default):
        return CheckpointPolicy.MUST_RECOMPUTE
    return CheckpointPolicy.PREFER_SAVE


def _gather(shard, group):
    """One parameter as SimpleFSDP all-gathers it: a functional
    all-gather whose backward is a reduce-scatter, recomputed in the
    backward (selective activation checkpointing)."""
    from torch.utils.checkpoint import (checkpoint,
                                        create_selective_checkpoint_contexts)
    return checkpoint(
        funcol.all_gather_tensor_autograd, shard, 0, group,
        use_reentrant=False,
        context_fn=functools.partial(create_selective_checkpoint_contexts,
                                     _sac_policy))


def _sp_gather(x, group):
    return funcol.all_gather_tensor_autograd(x, 0, group)


def _sp_scatter(x, group):
    return funcol.reduce_scatter_tensor_autograd(x, "sum", 0, group)


PER_LAYER = 9  # attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3


def fsdp_step(x, cos, sin, *shards):
    pg = dist.group.WORLD
    for i in range(0, len(shards), PER_LAYER):
        an, wq, wk, wv, wo, fn, w1, w2, w3 = (
            _gather(s, pg) for s in shards[i:i + PER_LAYER])
        x = x + _attention(_rms(x, an), wq, wk, wv, wo, cos, sin, HEADS)
        x = x + _swiglu(_rms(x, fn), w1, w2, w3)
    return x.square().mean()


def _tp_block(x, p, cos, sin, tp, tp_size):
    """One block, TP + SP over ``tp``: x is this rank's sequence shard."""
    an, wq, wk, wv, wo, fn, w1, w2, w3 = p
    h = _sp_gather(_rms(x, an), tp)
    x = x + _sp_scatter(_attention(h, wq, wk, wv, wo, cos, sin,
                                   HEADS // tp_size), tp)
    h = _sp_gather(_rms(x, fn), tp)
    return x + _sp_scatter(_swiglu(h, w1, w2, w3), tp)


def tp_step(x, cos, sin, *params):
    pg = dist.group.WORLD
    for i in range(0, len(params), PER_LAYER):
        x = _tp_block(x, params[i:i + PER_LAYER], cos, sin, pg, WORLD)
    return x.square().mean()


def twod_step(groups, x, cos, sin, *shards):
    dp, tp = groups
    for i in range(0, len(shards), PER_LAYER):
        p = [_gather(s, dp) for s in shards[i:i + PER_LAYER]]
        x = _tp_block(x, p, cos, sin, tp, TP)
    return x.square().mean()


MOE_PER_LAYER = 12  # attention's 6 (FSDP shards), router, expert's 3, shared 2


def moe_step(x, cos, sin, *params):
    pg = dist.group.WORLD
    for i in range(0, len(params), MOE_PER_LAYER):
        an, wq, wk, wv, wo, fn = (_gather(s, pg) for s in params[i:i + 6])
        wr, e1, e2, e3, s1, s2 = params[i + 6:i + MOE_PER_LAYER]
        x = x + _attention(_rms(x, an), wq, wk, wv, wo, cos, sin, HEADS)
        h = _rms(x, fn)
        # top-2 routing; tokens sorted by expert, WORLD equal chunks (one
        # per expert rank: a capacity of exactly 2 x TOKENS / WORLD)
        gates, experts = torch.topk(torch.softmax(h @ wr, dim=-1), 2, dim=-1)
        order = torch.argsort(experts.reshape(-1), stable=True)
        routed = h.repeat_interleave(2, dim=0)[order]
        got = funcol.all_to_all_single_autograd(routed, None, None, pg)
        y = _swiglu(got, e1, e2, e3)
        back = funcol.all_to_all_single_autograd(y, None, None, pg)
        combined = torch.empty_like(back).index_copy(0, order, back)
        combined = (combined.view(-1, 2, HIDDEN) *
                    gates.unsqueeze(-1)).sum(1)
        x = x + combined + (F.silu(h @ s1) @ s2)
    return x.square().mean()


def make_args(kind, layers, *, lazy):
    """The step's function and arguments. ``lazy``: parameters by
    torch.empty, never written (a compile-only run at 1,000 layers would
    otherwise touch gigabytes)."""
    torch.manual_seed(SEED)

    def t(*shape):
        if lazy:
            return torch.empty(*shape, requires_grad=True)
        return (torch.randn(*shape) * shape[-1] ** -0.5).requires_grad_()
    hd = HIDDEN // HEADS
    pos = torch.arange(TOKENS, dtype=torch.float32)[:, None] * \
        torch.exp(torch.arange(hd, dtype=torch.float32) * (-4.0 / hd))
    cos, sin = torch.cos(pos), torch.sin(pos)

    def dense(div_in, div_out, shard):
        """A block's 9 parameters, column-parallel ones split on their
        output dim by div_out, row-parallel on their input by div_in;
        every one cut again on dim 0 by ``shard`` (FSDP)."""
        d = HIDDEN
        shapes = [(d,), (d, d // div_out), (d, d // div_out),
                  (d, d // div_out), (d // div_in, d), (d,),
                  (d, FFN // div_out), (FFN // div_in, d),
                  (d, FFN // div_out)]
        return [t(s[0] // shard, *s[1:]) for s in shapes]
    if kind == "fsdp":
        x = torch.randn(TOKENS, HIDDEN)
        ps = [p for _ in range(layers) for p in dense(1, 1, WORLD)]
        return fsdp_step, [x, cos, sin] + ps
    if kind == "tp":
        x = torch.randn(TOKENS // WORLD, HIDDEN)
        ps = [p for _ in range(layers) for p in dense(WORLD, WORLD, 1)]
        return tp_step, [x, cos, sin] + ps
    if kind == "2d":
        dp_ranks = list(range(0, WORLD, TP))
        groups = (dist.new_group(dp_ranks), dist.new_group(list(range(TP))))
        x = torch.randn(TOKENS // TP, HIDDEN)
        ps = [p for _ in range(layers)
              for p in dense(TP, TP, WORLD // TP)]
        return functools.partial(twod_step, groups), [x, cos, sin] + ps
    if kind == "moe":
        x = torch.randn(TOKENS, HIDDEN)
        d = HIDDEN
        ps = []
        for _ in range(layers):
            ps += [t(d // WORLD), t(d // WORLD, d), t(d // WORLD, d),
                   t(d // WORLD, d), t(d // WORLD, d), t(d // WORLD),
                   t(d, WORLD), t(d, FFN), t(FFN, d), t(d, FFN),
                   t(d, FFN // 2), t(FFN // 2, d)]
        return moe_step, [x, cos, sin] + ps
    raise ValueError("unknown program kind %r (one of %s)"
                     % (kind, ", ".join(KINDS)))


def compile_step(kind, layers, hook, *, run=False, config=None):
    """Compiles one training step (forward and backward) of ``kind`` with
    ``layers`` blocks, Inductor calling ``hook(snodes) -> snodes`` on each
    graph's scheduler nodes (forward first). ``config``: more Inductor
    settings ({name: value}) for the compile. ``run``: also run the step
    (fake process group: the collectives move nothing) and its backward;
    else compile only (the module documentation). The process group must
    be initialised. Returns the lengths of the lists ``hook`` saw."""
    import torch._functorch.config as fcfg
    import torch._inductor.config as icfg
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    seen = []
    fn, args = make_args(kind, layers, lazy=not run)

    def counted(snodes):
        snodes = list(snodes)
        seen.append(len(snodes))
        out = hook(snodes)
        if not run:
            raise Stop()  # no code generation after the hook
        return out

    def inner(gm, example_inputs, **kwargs):
        """Inductor's own inner compile; in a compile-only run the
        forward, stopped after its hook, is left as the FX graph (never
        run) so that AOTAutograd goes on to lower the backward."""
        try:
            return compile_fx_inner(gm, example_inputs, **kwargs)
        except Exception as e:
            if run or kwargs.get("is_backward") or not _is_stop(e):
                raise
            return make_boxed_func(gm)
    settings = {"force_disable_caches": True, "compile_threads": 1,
                "reorder_for_compute_comm_overlap": True,
                "reorder_for_compute_comm_overlap_passes": [counted]}
    settings.update(config or {})
    torch._dynamo.reset()
    backend = "inductor" if run else functools.partial(
        compile_fx, inner_compile=inner)
    # Inductor's reorder_for_peak_memory (on by default) first tries
    # topological_sort_dfs, which recurses once a node along the longest
    # dependency chain, and compile_fx raises Python's limit to 2,000 only:
    # the FSDP step at 10K nodes (159 layers) fails there with a
    # RecursionError (measured, torch 2.13.0), as TP at 36K would. The
    # recursion is Python calling Python (no C stack in 3.11), so a higher
    # limit for the compile lets torch finish as it is.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 100000))
    with icfg.patch(settings), \
            fcfg.patch(force_non_lazy_backward_lowering=not run):
        try:
            loss = torch.compile(fn, fullgraph=True, backend=backend)(*args)
            if run:
                loss.backward()
        except Exception as e:  # Stop, wrapped by dynamo as a backend error
            if not _is_stop(e):
                raise
        finally:
            sys.setrecursionlimit(limit)
    return seen


def _is_stop(e):
    while e is not None:
        if isinstance(e, Stop):
            return True
        e = e.__cause__ or e.__context__
    return False


def init_fake_world():
    """PyTorch's fake process group of WORLD ranks in this process (rank
    0), as PyTorch's own comms tests compile."""
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0,
                                world_size=WORLD)
