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

Beside each graph, anchors/<graph>.commsched-fx.json is the same
program compiled with commsched at the FX level instead
(commsched.fx.post_grad_pass() as config.post_grad_custom_post_pass):
the scheduler nodes Inductor then hands over, in its order. Its node
names are not the graph's (Inductor names buffers in lowering order), so
it is a graph of its own; `make bench` simulates it as it stands, the
commsched-fx anchor. anchors/<graph>.torch-fx-bucketed.json is the same
program compiled with torch 2.13's FX overlap scheduler and its
collective bucketing on (commsched.fx.torch_bucketing: commsched's
runtimes), the merged collectives real nodes: the torch-fx-bucketed
anchor.

Beside each graph, anchors/<graph>.torch-fx-overlap.order is the order
torch 2.13's own FX overlap scheduler (torch._inductor.fx_passes.
overlap_scheduling, as config.aten_distributed_optimizations.
enable_overlap_scheduling runs it) gives the same compile's post-grad FX
graph, timed by the same cost model and mapped onto the graph's nodes
(commsched.fx: torch_overlap_order, the mapping rule in its
documentation). `make bench` simulates it as the torch-fx-overlap anchor.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.testing._internal.distributed.fake_pg import FakeStore
import torch._inductor.config as icfg

import commsched
import commsched.fx as cfx
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


def twod_step(x, tp_group, *params):
    """2D parallelism: each layer's weight shard all-gathered over the
    data-parallel group (all 8 ranks), its output all-reduced over a
    tensor-parallel group of 4 ranks: two process groups in one graph."""
    h = x
    for i in range(0, len(params), 2):
        full = funcol.all_gather_tensor(params[i], 0, dist.group.WORLD)
        full = full.view(HIDDEN, HIDDEN // 4)
        part = torch.relu(h @ full) @ params[i + 1]
        h = h + funcol.all_reduce(part, "sum", tp_group)
    return h


def moe_step(x, *params):
    """Mixture-of-experts layers: tokens dispatched to their experts and
    combined back with all_to_all_single; a shared expert beside them
    is compute that can hide the exchange."""
    pg = dist.group.WORLD
    h = x
    for i in range(0, len(params), 2):
        routed = funcol.all_to_all_single(h, None, None, pg)
        y = torch.nn.functional.gelu(routed @ params[i])
        back = funcol.all_to_all_single(y, None, None, pg)
        h = h + back + torch.relu(h @ params[i + 1])
    return h


def write_order(path, graph, snodes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("# torch-fx-overlap order of %s.json: torch %s's FX overlap "
                 "scheduler\n# (schedule_overlap_bucketing, no bucketing) on "
                 "the same compile's FX graph,\n# commsched's runtimes, "
                 "mapped onto the scheduler nodes by commsched.fx.\n"
                 "# Made by make_torch_graphs.py.\n"
                 % (graph, torch.__version__.split("+")[0]))
        for sn in snodes:
            fh.write(sn.get_name() + "\n")


def main(outdir):
    dist.init_process_group("fake", store=FakeStore(), rank=0,
                            world_size=WORLD)
    made = []
    captured = []   # the FX graphs torch would hand its overlap scheduler
    runtimes = {}   # graph -> {FX node: ms}, commsched's (fx_runtimes_ms)

    def plugin(snodes):
        snodes = list(snodes)
        base = "%s-%d" % (plugin.name, plugin.count)
        plugin.count += 1
        path = os.path.join(outdir, base + ".json")
        ci.export(snodes, path, name=base)
        made.append(path)
        # this compile's FX graph: captured in its post-grad passes, the
        # only one since the previous graph's scheduler nodes
        assert len(captured) == len(made), "one FX graph per graph"
        order, _ = cfx.torch_overlap_order(captured[-1], snodes)
        runtimes[base] = cfx.fx_runtimes_ms(
            captured[-1], snodes,
            commsched.optimize(ci.to_graph(snodes), "none").runtime_ns)
        write_order(os.path.join(outdir, "anchors",
                                 base + ".torch-fx-overlap.order"),
                    base, order)
        return ci.reorder(snodes)
    icfg.force_disable_caches = True
    icfg.compile_threads = 1
    icfg.reorder_for_compute_comm_overlap = True
    icfg.reorder_for_compute_comm_overlap_passes = [plugin]
    with cfx.capture_overlap_input(captured):
        compile_all(plugin)

    # commsched at the FX level: the same programs compiled with
    # commsched.fx.post_grad_pass() as config.post_grad_custom_post_pass;
    # what Inductor then hands the scheduler-node level (after its fusion
    # and reorder_for_peak_memory), left in Inductor's order, is
    # anchors/<graph>.commsched-fx.json
    def fx_level(snodes):
        snodes = list(snodes)
        base = "%s-%d" % (fx_level.name, fx_level.count)
        fx_level.count += 1
        path = os.path.join(outdir, "anchors", base + ".commsched-fx.json")
        ci.export(snodes, path, name=base + ".commsched-fx")
        made.append(path)
        return snodes
    icfg.reorder_for_compute_comm_overlap_passes = [fx_level]
    with icfg.patch(post_grad_custom_post_pass=cfx.post_grad_pass()):
        compile_all(fx_level)

    # torch 2.13's FX overlap scheduler WITH its bucketing, as
    # enable_overlap_scheduling runs it in a compile: the merged
    # collectives are real scheduler nodes of
    # anchors/<graph>.torch-fx-bucketed.json (Inductor's order)
    def bucketed(snodes):
        snodes = list(snodes)
        base = "%s-%d" % (bucketed.name, bucketed.count)
        bucketed.count += 1
        path = os.path.join(outdir, "anchors",
                            base + ".torch-fx-bucketed.json")
        ci.export(snodes, path, name=base + ".torch-fx-bucketed")
        made.append(path)
        return snodes
    icfg.reorder_for_compute_comm_overlap_passes = [bucketed]
    with cfx.torch_bucketing(lambda: "%s-%d" % (bucketed.name,
                                                bucketed.count),
                             runtimes):
        compile_all(bucketed)
    for p in made:
        print(p)
    dist.destroy_process_group()


def compile_all(plugin):
    """Compiles each program; plugin.name names its graphs."""
    plugin.name, plugin.count = "fsdp-mlp-4L", 0
    torch._dynamo.reset()
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

    plugin.name, plugin.count = "2d-mlp-4L", 0
    torch._dynamo.reset()
    tp_group = dist.new_group(list(range(WORLD // 2)))
    ps = []
    for _ in range(LAYERS):
        ps += [torch.randn(HIDDEN // WORLD, HIDDEN // 4),
               torch.randn(HIDDEN // 4, HIDDEN)]
    torch.compile(lambda x, *p: twod_step(x, tp_group, *p))(x, *ps)

    plugin.name, plugin.count = "moe-4L", 0
    torch._dynamo.reset()
    ps = []
    for _ in range(LAYERS):
        ps += [torch.randn(HIDDEN, HIDDEN), torch.randn(HIDDEN, HIDDEN)]
    torch.compile(moe_step)(x, *ps)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
