"""Two gloo ranks on CPU (two processes): the SimpleFSDP-style transformer
training step of graphs/torch/transformer_steps.py (every parameter
all-gathered in the forward and again in the backward, gradients
reduce-scattered) at one layer and small sizes, compiled with
commsched's plugin as Inductor's comm reordering pass, computes the loss
and every gradient eager computes, on real collectives. The pass must have
run on both graphs (forward and backward) of each rank and moved
something. Skipped (77) where torch is not importable."""
import os
import sys
import tempfile

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:
    print("torch is not importable: skipped")
    sys.exit(77)

import gloo_ranks  # noqa: E402 (beside this file)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "graphs", "torch"))
WORLD = 2


def small(ts):
    """The programs' sizes cut so that the C++ kernels compile quickly;
    the structure (one block: norms, attention, SwiGLU, residuals) is the
    same."""
    ts.WORLD, ts.HIDDEN, ts.HEADS, ts.FFN, ts.TOKENS = WORLD, 32, 4, 64, 16


def rank_main(rank, port, outdir):
    gloo_ranks.init(rank, port, WORLD)
    import torch._inductor.config as icfg
    import commsched.inductor as ci
    import transformer_steps as ts
    small(ts)
    moved = []

    def plugin(snodes):
        snodes = list(snodes)
        out = ci.reorder(snodes, overlap_peak_budget=float("inf"))
        moved.append([sn.get_name() for sn in snodes] !=
                      [sn.get_name() for sn in out])
        return out
    fn, args = ts.make_args("fsdp", 1, lazy=False)
    # each rank's own shards and batch (the rotary tables stay as made)
    with torch.no_grad():
        for i, a in enumerate(args):
            if i in (1, 2):
                continue
            a.copy_(torch.randn_like(a, generator=torch.Generator()
                                     .manual_seed(100 * rank + i)))
    eager_loss = fn(*args)
    eager_loss.backward()
    want = [eager_loss.detach()] + [a.grad.clone() for a in args[3:]]
    for a in args[3:]:
        a.grad = None
    icfg.force_disable_caches = True
    icfg.compile_threads = 1
    torch._dynamo.reset()
    with icfg.patch(reorder_for_compute_comm_overlap=True,
                    reorder_for_compute_comm_overlap_passes=[plugin]):
        loss = torch.compile(fn, fullgraph=True)(*args)
        loss.backward()
    got = [loss.detach()] + [a.grad for a in args[3:]]
    # relative to each tensor's largest element: a gradient is a sum over
    # ranks and tokens whose order the compiled kernels choose (fp32)
    err = max(float((g - w).abs().max() / w.abs().max().clamp_min(1e-30))
              for g, w in zip(got, want))
    ok = len(moved) == 2 and err < 1e-4
    with open(os.path.join(outdir, "rank%d" % rank), "w") as fh:
        fh.write("%d %d %d %.3g\n" % (ok, len(moved), int(any(moved)), err))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(rank_main, args=(gloo_ranks.free_port(), d), nprocs=WORLD)
        rows = [open(os.path.join(d, "rank%d" % r)).read().split()
                for r in range(WORLD)]
    print("rank: ok, pass calls, reordered, max relative |compiled - eager|:",
          rows)
    failed = not all(r[0] == "1" for r in rows)
    if not any(r[2] == "1" for r in rows):
        print("the pass left every order as it was: nothing was tested")
        failed = True
    sys.exit(1 if failed else 0)
