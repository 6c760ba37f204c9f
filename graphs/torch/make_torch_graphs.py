"""Makes graphs/torch/*.json: the graphs a real torch.compile (torch
2.13.0, CPU, Inductor) hands commsched's plugin, under PyTorch's fake
process group of 8 ranks. Run with the virtual environment `make test`
makes:

    COMMSCHED_LIBRARY=build/release/libcommsched.so \\
        build/venv/bin/python graphs/torch/make_torch_graphs.py graphs/torch

Each program is compiled forward and backward (AOTAutograd gives Inductor
two graphs); every graph the plugin is handed is exported in Inductor's
order (commsched.inductor.export). Inductor estimates no runtime on CPU,
so the files carry none: commsched's cost model prices them (h100).
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.testing._internal.distributed.fake_pg import FakeStore
import torch._inductor.config as icfg

import commsched.inductor as ci

WORLD = 8
HIDDEN = 1024
TOKENS = 2048
LAYERS = 4


def fsdp_step(x, *shards):
    """LAYERS MLP layers, each weight all-gathered from its shard; autograd
    reduce-scatters the gradients (all_gather_tensor_autograd)."""
    pg = dist.group.WORLD
    h = x
    for w in shards:
        full = funcol.all_gather_tensor_autograd(w, 0, pg).view(HIDDEN,
                                                                HIDDEN)
        h = torch.nn.functional.gelu(h @ full)
    return h.square().mean()


def tp_step(x, *weights):
    """Megatron-style MLP blocks: column-parallel then row-parallel matmul,
    the partial sums all-reduced (forward only: inference)."""
    pg = dist.group.WORLD
    h = x
    for i in range(0, len(weights), 2):
        a = torch.relu(h @ weights[i])
        part = a @ weights[i + 1]
        h = h + funcol.all_reduce(part, "sum", pg)
    return h


def main(outdir):
    dist.init_process_group("fake", store=FakeStore(), rank=0,
                            world_size=WORLD)
    made = []

    def plugin(snodes):
        snodes = list(snodes)
        path = os.path.join(outdir, "%s-%d.json" % (plugin.name,
                                                     plugin.count))
        plugin.count += 1
        ci.export(snodes, path, name=os.path.basename(path)[:-5])
        made.append(path)
        return ci.reorder(snodes)
    icfg.force_disable_caches = True
    icfg.compile_threads = 1
    icfg.reorder_for_compute_comm_overlap = True
    icfg.reorder_for_compute_comm_overlap_passes = [plugin]

    plugin.name, plugin.count = "fsdp-mlp-4L", 0
    x = torch.randn(TOKENS, HIDDEN)
    shards = [torch.randn(HIDDEN // WORLD, HIDDEN, requires_grad=True)
              for _ in range(LAYERS)]
    loss = torch.compile(fsdp_step)(x, *shards)
    loss.backward()

    plugin.name, plugin.count = "tp-mlp-4L", 0
    torch._dynamo.reset()
    ws = []
    for _ in range(LAYERS):
        ws += [torch.randn(HIDDEN, 4 * HIDDEN // WORLD),
               torch.randn(4 * HIDDEN // WORLD, HIDDEN)]
    torch.compile(tp_step)(x, *ws)
    for p in made:
        print(p)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
