"""commsched.inductor inside a real torch.compile (torch==2.13.0, CPU),
under a fake process group of 8 ranks in one process, as PyTorch's own
comms tests run: Inductor hands the plugin its real scheduler nodes.

For every program (FSDP-like, TP-like, 2D with two groups, MoE) it checks
that Inductor called the pass on real nodes, that the returned order is a
permutation of them that respects every dependency and, by commsched's
simulator, is never slower than the input order or than torch's own
passes on the same nodes; that commsched's raise_comms, sink_waits,
reorder_compute_for_overlap, sink_waits_iterative and
reorder_communication_preserving_peak_memory order the real nodes exactly
as torch 2.13's functions of those names do (both fed the same runtimes
through Inductor's estimate_op_runtime hook); that what commsched
reads from Inductor's objects is right (groups and sizes from c10d, ops,
buffer sizes), and that commsched's peak for the input order is exactly
torch._inductor.memory.estimate_peak_memory on the same nodes (both leave
the non-freeable graph inputs, parameters and saved activations, out).
Also: a multi-output kernel (MultiOutputLayout) counted as Inductor counts
it; the bytes of kernels reading a slice of a flat buffer and of one with
a WeakDep, counted for what they move where torch's count is larger;
and a transformer block under FSDP2's fully_shard, whose collectives
torch 2.13 keeps out of the compiled graph.

Run by the `python` tier with the virtual environment `make test` makes
(build/venv, torch==2.13.0); skipped (77) where torch is not importable.
"""
import json
import os
import sys
import tempfile
import unittest

try:
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    from torch.testing._internal.distributed.fake_pg import FakeStore
except ImportError:
    print("torch is not importable: skipped")
    sys.exit(77)

import torch._inductor.config as icfg
from torch._inductor import memory as imem
from torch._inductor import utils as iutils
from torch._inductor.virtualized import V

import commsched
import commsched.inductor as ci

WORLD = 8
SAME_NAMED = ("raise_comms", "sink_waits", "reorder_compute_for_overlap",
              "sink_waits_iterative",
              "reorder_communication_preserving_peak_memory")


def runtime_ms(snode):
    """Inductor's estimate_op_runtime hook, so that torch's passes and the
    adapter see the same non-zero runtimes on CPU (Inductor's own estimate
    is 0 there): collectives 1 us per KiB moved, compute 0.5 us per KiB
    written, waits 0."""
    if iutils.contains_wait(snode):
        return 0.0
    size = 0
    for buf in snode.get_outputs():
        size += ci._default_size(buf)
    if iutils.contains_collective(snode):
        return 1e-3 * max(size, 1024) / 1024
    return 0.5e-3 * max(size, 1024) / 1024
CALLS = []   # one record per time Inductor called the pass


def recording_pass(snodes):
    """commsched.inductor.reorder, recording what it saw (inside the
    compile, where V.graph is Inductor's graph)."""
    snodes = list(snodes)
    graph = V.graph
    g = ci.to_graph(snodes)
    before = commsched.optimize(g, "none").before
    inputs = imem.get_freeable_input_buf(snodes, graph.graph_inputs.keys())
    torch_peak, _ = imem.estimate_peak_memory(
        snodes, inputs, set(graph.get_output_names()))
    # Where Inductor estimates nothing (its own estimate on CPU), the
    # adapter prices a kernel by its flops and the bytes it reads and
    # writes, as Inductor's GPU estimate does: what it wrote for each
    # compute node, beside what Inductor counts.
    with icfg.patch(estimate_op_runtime=lambda sn: 0.0), \
            tempfile.TemporaryDirectory() as d:
        ci.to_graph(snodes).save(os.path.join(d, "g.json"))
        with open(os.path.join(d, "g.json")) as fh:
            unpriced = {n["name"]: n for n in json.load(fh)["nodes"]}
    rw = {sn.get_name(): sn.get_read_write_buffers_sizes() for sn in snodes
          if not iutils.contains_collective(sn) and
          not iutils.contains_wait(sn)}
    out = ci.reorder(snodes)
    # torch's own reordering passes on the same nodes: commsched's pass of
    # the same name gives the same order; every order is judged by
    # commsched's simulator on the graph the adapter builds
    from torch._inductor import comms
    theirs, same = {}, {}
    for pname in SAME_NAMED:
        order = getattr(comms, pname)(list(snodes))
        theirs[pname] = commsched.simulate(ci.to_graph(order)).makespan_ns
        mine = ci.reorder(snodes, passes=[pname])
        same[pname] = ([sn.get_name() for sn in mine],
                       [sn.get_name() for sn in order])
    ours = commsched.simulate(ci.to_graph(out)).makespan_ns
    CALLS.append({"snodes": snodes, "order": out, "graph": g,
                  "peak": before.peak_memory_step, "torch_peak": torch_peak,
                  "input_ns": before.makespan_ns, "ours_ns": ours,
                  "theirs_ns": theirs, "same": same,
                  "unpriced": unpriced, "rw": rw})
    return out


def compile_and_run(fn, *args):
    CALLS.clear()
    for f in os.listdir(os.environ["COMMSCHED_DUMP_DIR"]):
        os.unlink(os.path.join(os.environ["COMMSCHED_DUMP_DIR"], f))
    torch._dynamo.reset()
    cf = torch.compile(fn, fullgraph=True)
    return cf(*args)


class TorchCompile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dist.init_process_group("fake", store=FakeStore(), rank=0,
                                world_size=WORLD)
        icfg.force_disable_caches = True   # a cache hit skips the pass
        icfg.compile_threads = 1
        icfg.reorder_for_compute_comm_overlap = True
        icfg.reorder_for_compute_comm_overlap_passes = [recording_pass]
        icfg.estimate_op_runtime = runtime_ms
        cls.dump = tempfile.TemporaryDirectory()
        os.environ["COMMSCHED_DUMP_DIR"] = cls.dump.name
        cls.world = dist.group.WORLD
        cls.half = dist.new_group(list(range(WORLD // 2)))

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        del os.environ["COMMSCHED_DUMP_DIR"]
        cls.dump.cleanup()

    def check_call(self, want_ops, want_groups):
        self.assertEqual(len(CALLS), 1, "Inductor called the pass once")
        c = CALLS[0]
        names = [sn.get_name() for sn in c["snodes"]]
        self.assertEqual(sorted(sn.get_name() for sn in c["order"]),
                         sorted(names))
        self.assertTrue(all(type(sn).__module__ ==
                            "torch._inductor.scheduler" for sn in c["order"]),
                        "real scheduler nodes")
        # every dependency is met in the returned order
        pos = {}
        for i, sn in enumerate(c["order"]):
            for b in sn.get_buffer_names():
                pos[b] = i
            for o in sn.get_operation_names():
                pos[o] = i
        for i, sn in enumerate(c["order"]):
            for dep in sn.unmet_dependencies:
                if dep.name in pos and not getattr(dep, "is_fake", False):
                    self.assertLess(pos[dep.name], i + 1, dep.name)
        # what the adapter reads from each collective's IR node
        colls = [sn for sn in c["snodes"] if iutils.contains_collective(sn)]
        self.assertEqual(sorted(ci._collective_op(ci._kernel_names(sn))
                                for sn in colls), sorted(want_ops))
        sizes = set()
        for sn in colls:
            group, size, reduce_op, dtype = ci._collective_ir(sn)
            self.assertEqual(size, dist.get_world_size(
                dist.distributed_c10d._resolve_process_group(group)))
            sizes.add(size)
            self.assertEqual(dtype, "float32")
            if "reduce" in ci._collective_op(ci._kernel_names(sn)):
                self.assertEqual(reduce_op, "sum")
        self.assertEqual(sizes, set(want_groups))
        # COMMSCHED_DUMP_DIR: the graph as handed over, in Inductor's order
        # (reorder ran once for the plugin and once per same-named pass)
        dumps = sorted(os.listdir(os.environ["COMMSCHED_DUMP_DIR"]))
        self.assertEqual(len(dumps), 1 + len(SAME_NAMED))
        g = commsched.Graph.load(os.path.join(
            os.environ["COMMSCHED_DUMP_DIR"], dumps[0]))
        self.assertEqual(g.nodes, names)
        # the passes that bear torch's names order the nodes as torch does
        for pname, (mine, torchs) in c["same"].items():
            self.assertEqual(mine, torchs, pname)
        # never slower than the input order or any of torch's passes
        self.assertLessEqual(c["ours_ns"], c["input_ns"] * (1 + 1e-9))
        for pname, t in c["theirs_ns"].items():
            self.assertLessEqual(c["ours_ns"], t * (1 + 1e-9), pname)
        print("%s: input %.1f us, commsched %.1f us, %s" % (
            self.id().rsplit(".", 1)[1], c["input_ns"] / 1e3,
            c["ours_ns"] / 1e3, ", ".join("%s %.1f us" % (k, v / 1e3)
                                          for k, v in c["theirs_ns"].items())))
        # no estimate: every compute kernel carries the bytes Inductor
        # counts (a pointwise kernel was free before), none is left at 0
        self.assertTrue(c["rw"])
        for name, b in c["rw"].items():
            node = c["unpriced"][name]
            self.assertEqual(node.get("bytes", 0), b or 0, name)
            self.assertTrue(node.get("bytes") or node.get("flops"), name)
        # memory truth: Inductor's own estimate on the same nodes
        self.assertGreater(c["torch_peak"], 0)
        self.assertEqual(c["peak"], c["torch_peak"])
        return c

    def test_fsdp_like(self):
        pg = self.world

        def step(x, w0, w1):
            g0 = funcol.all_gather_tensor(w0, 0, pg).view(64, 64)
            h = torch.relu(x @ g0)
            g1 = funcol.all_gather_tensor(w1, 0, pg).view(64, 64)
            y = h @ g1
            grad = funcol.reduce_scatter_tensor(y @ g1.t(), "sum", 0, pg)
            return y.sum(), grad
        compile_and_run(step, torch.randn(64, 64), torch.randn(8, 64),
                        torch.randn(8, 64))
        self.check_call(["all_gather", "all_gather", "reduce_scatter"],
                        [WORLD])

    def test_calibrated_profile(self):
        # the plugin with a profile `commsched calibrate` writes: the
        # all-gathers over 8 ranks priced by the measured line (10 us +
        # bytes at 1 GB/s), over Inductor's estimates with measured_first,
        # and the order still a valid permutation of the real nodes
        pg = self.world
        prof = {"format": "commsched-device", "version": 1, "base": "h100",
                "measured": {"collectives": [{
                    "op": "all_gather", "ranks": WORLD,
                    "latency_ns": 10000, "bytes_per_ns": 1.0,
                    "points": [{"bytes": 1, "ns": 10001},
                               {"bytes": 1 << 30, "ns": 10000 + (1 << 30)}]}]}}
        seen = []

        def calibrated_pass(snodes):
            snodes = list(snodes)
            r = commsched.optimize(ci.to_graph(snodes), "none", device=path,
                                   measured_first=True)
            plain = commsched.optimize(ci.to_graph(snodes), "none")
            out = ci.reorder(snodes, device=path, measured_first=True)
            seen.append((snodes, out, r.runtime_ns, plain.runtime_ns))
            return out

        def step(x, w0, w1):
            g0 = funcol.all_gather_tensor(w0, 0, pg).view(64, 64)
            h = torch.relu(x @ g0)
            g1 = funcol.all_gather_tensor(w1, 0, pg).view(64, 64)
            return (h @ g1).sum()
        with tempfile.NamedTemporaryFile("w", suffix=".json",
                                         delete=False) as f:
            json.dump(prof, f)
            path = f.name
        try:
            with icfg.patch(reorder_for_compute_comm_overlap_passes=[
                    calibrated_pass]):
                compile_and_run(step, torch.randn(64, 64),
                                torch.randn(8, 64), torch.randn(8, 64))
        finally:
            os.unlink(path)
        self.assertEqual(len(seen), 1)
        snodes, out, priced, plain = seen[0]
        self.assertEqual(sorted(sn.get_name() for sn in out),
                         sorted(sn.get_name() for sn in snodes))
        ags = [sn.get_name() for sn in snodes
               if iutils.contains_collective(sn)]
        self.assertEqual(len(ags), 2)
        for name in ags:
            # 8 shards of 8x64 float32 gathered: 16 KiB
            self.assertEqual(priced[name], 10000 + 64 * 64 * 4, name)
            self.assertNotEqual(plain[name], priced[name], name)

    def test_tp_like(self):
        pg = self.world

        def step(x, a, b, c):
            part = x @ a
            red = funcol.all_reduce(part, "sum", pg)
            other = torch.tanh(x @ b) @ c      # independent of the reduce
            return red + other
        compile_and_run(step, *(torch.randn(64, 64) for _ in range(4)))
        self.check_call(["all_reduce"], [WORLD])

    def test_2d_two_groups(self):
        dp, tp = self.world, self.half

        def step(x, w, a):
            g = funcol.all_gather_tensor(w, 0, dp).view(64, 64)
            part = x @ g
            red = funcol.all_reduce(part @ a, "sum", tp)
            return torch.relu(red)
        compile_and_run(step, torch.randn(64, 64), torch.randn(8, 64),
                        torch.randn(64, 64))
        self.check_call(["all_gather", "all_reduce"], [WORLD, WORLD // 2])

    def test_moe_all_to_all(self):
        pg = self.world

        def step(x, w):
            routed = funcol.all_to_all_single(x, None, None, pg)
            y = torch.relu(routed @ w)
            back = funcol.all_to_all_single(y, None, None, pg)
            return back + x
        compile_and_run(step, torch.randn(64, 64), torch.randn(64, 64))
        self.check_call(["all_to_all", "all_to_all"], [WORLD])

    def test_multi_output_layout(self):
        """A multi-output kernel (MultiOutputLayout: torch.linalg.qr's
        FallbackKernel) allocates its outputs' bytes with the kernel
        (memory.py's size_alloc) and Inductor frees each output
        (MultiOutput) after its own last use; commsched counts each part
        as the kernel's own output, freed after its last reader: its peak
        is estimate_peak_memory's, here in the order where the two parts
        outlive the kernel's extraction nodes."""
        seen = []

        def probe(snodes):
            snodes = list(snodes)
            graph = V.graph
            inputs = imem.get_freeable_input_buf(snodes,
                                                 graph.graph_inputs.keys())
            outs = set(graph.get_output_names())
            real, _ = imem.estimate_peak_memory(snodes, inputs, outs)
            kinds = [type(buf.node.layout).__name__ == "MultiOutputLayout"
                     or type(buf.node).__name__ == "MultiOutput"
                     for sn in snodes for buf in sn.get_outputs()]
            ours = commsched.optimize(ci.to_graph(snodes),
                                      "none").before.peak_memory_step
            seen.append((real, ours, sum(kinds)))
            return snodes

        def step(x, y):
            q, r = torch.linalg.qr(x)       # a FallbackKernel, 2 outputs
            c = torch.relu(y @ y)           # allocated while q, r live
            return (q @ r) + c.sum()
        with icfg.patch(reorder_for_compute_comm_overlap_passes=[probe]):
            compile_and_run(step, torch.randn(64, 64), torch.randn(64, 64))
        self.assertEqual(len(seen), 1)
        real, ours, n_multi = seen[0]
        self.assertEqual(n_multi, 3)        # the kernel's buffer, q and r
        # q and r (16 KiB each) are alive when y @ y (16 KiB) and its sum
        # (4 B) are allocated
        self.assertEqual(real, 2 * 16384 + 16384 + 4)
        self.assertEqual(ours, real)

    def test_kernels_reading_a_slice_are_priced_for_the_slice(self):
        """Kernels that read a slice of a flat buffer, as every matmul and
        norm does after torch's FX bucketing (each weight a slice of its
        bucket's all-gathered output): a matmul (an extern kernel, whose
        accesses Inductor bounds by nothing) reading its weight through a
        view, and a pointwise kernel reading a broadcast row. Inductor
        counts the whole bucket for the first and the kernel's iteration
        space for the second; commsched the elements the view or the
        index covers; every other buffer as torch counts it."""
        seen = {}

        def probe(snodes):
            snodes = list(snodes)
            doc = {n["name"]: n for n in ci.document(snodes)["nodes"]}
            for sn in snodes:
                kind = "mm" if "extern_kernels.mm" in str(getattr(
                    getattr(sn, "node", None), "python_kernel_name", "")) \
                    else "pointwise"
                seen.setdefault(kind, []).append((
                    sn.get_read_write_buffer_accesses(include_reads=True,
                                                      include_writes=True),
                    doc[sn.get_name()].get("bytes")))
            return snodes

        rows, cols, flat = 32, 64, 64 * 64 * 16

        def step(x, bucket):
            w = bucket[4096:4096 + cols * cols].view(cols, cols)
            return (torch.relu(x) * bucket[:cols]) @ w
        with icfg.patch(reorder_for_compute_comm_overlap_passes=[probe],
                        estimate_op_runtime=lambda sn: 0.0):
            compile_and_run(step, torch.randn(rows, cols),
                            torch.randn(flat))
        self.assertEqual(sorted(seen), ["mm", "pointwise"])
        self.assertEqual(len(seen["mm"]), 1)
        self.assertEqual(len(seen["pointwise"]), 1)
        act = rows * cols * 4
        # the matmul: torch counts the activation, the whole bucket and
        # the product; commsched the bucket for the 64 x 64 weight
        theirs, ours = seen["mm"][0]
        self.assertEqual(sorted(theirs.values()),
                         sorted([act, flat * 4, act]))
        self.assertEqual(ours, 2 * act + cols * cols * 4)
        # relu(x) * row: torch counts x, the bucket for the kernel's
        # rows x cols iteration space and the output; commsched the row
        theirs, ours = seen["pointwise"][0]
        self.assertEqual(sorted(theirs.values()), [act, act, act])
        self.assertEqual(ours, 2 * act + cols * 4)

    def test_a_weak_dependency_reads_nothing(self):
        """An in-place update of a graph input after a kernel read it:
        Inductor orders the mutation after the reader with a WeakDep on
        the reader's buffer, which torch's byte count takes as a read of
        that buffer; commsched counts what the kernel moves, without it."""
        from torch._inductor.dependencies import WeakDep
        seen = []

        def probe(snodes):
            snodes = list(snodes)
            doc = {n["name"]: n for n in ci.document(snodes)["nodes"]}
            for sn in snodes:
                weak = {d.name for d in sn.read_writes.reads
                        if isinstance(d, WeakDep)}
                if weak:
                    seen.append((sn.get_read_write_buffer_accesses(
                        include_reads=True, include_writes=True), weak,
                        doc[sn.get_name()].get("bytes")))
            return snodes

        def step(x, y):
            doubled = torch.relu(x @ y)     # reads x before it changes
            x.add_(y)
            return doubled
        with icfg.patch(reorder_for_compute_comm_overlap_passes=[probe],
                        estimate_op_runtime=lambda sn: 0.0):
            compile_and_run(step, torch.randn(64, 64), torch.randn(64, 64))
        self.assertEqual(len(seen), 1)
        theirs, weak, ours = seen[0]
        self.assertTrue(weak <= set(theirs), (weak, theirs))
        # x and y read, the new x written: 16 KiB each; torch counts the
        # matmul's output too, which the update only runs after
        self.assertEqual(ours, 3 * 64 * 64 * 4)
        self.assertEqual(sum(theirs.values()), 4 * 64 * 64 * 4)
        self.assertEqual(ours, sum(b for name, b in theirs.items()
                                   if name not in weak))

    def test_fsdp2_transformer_block(self):
        """A transformer block under FSDP2's fully_shard compiles on CPU
        under the fake process group, but torch 2.13 runs FSDP2's hooks
        (its all-gathers and reduce-scatters) outside the compiled graph:
        Inductor hands the plugin real nodes without a collective."""
        import torch.nn as nn
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.fsdp._fully_shard import _fsdp_common
        from torch.distributed.tensor import DTensor
        import inspect
        # the torch source line that keeps the collectives out
        self.assertIn('reason="skipping FSDP hooks"',
                      inspect.getsource(_fsdp_common._dynamo_disable))
        seen = []

        def probe(snodes):
            snodes = list(snodes)
            seen.append(snodes)
            return ci.reorder(snodes)

        class Block(nn.Module):
            def __init__(self, d=32):
                super().__init__()
                self.norm = nn.LayerNorm(d)
                self.qkv = nn.Linear(d, 3 * d)
                self.proj = nn.Linear(d, d)
                self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                         nn.Linear(2 * d, d))

            def forward(self, x):
                q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
                a = torch.nn.functional.scaled_dot_product_attention(q, k, v)
                x = x + self.proj(a)
                return x + self.mlp(x)
        block = Block()
        fully_shard(block)
        self.assertTrue(all(isinstance(p, DTensor)
                            for p in block.parameters()))
        torch._dynamo.reset()
        with icfg.patch(reorder_for_compute_comm_overlap_passes=[probe]):
            out = torch.compile(block)(torch.randn(2, 8, 32))
            out.sum().backward()
        self.assertGreaterEqual(len(seen), 2, "forward and backward")
        for snodes in seen:
            self.assertTrue(snodes)
            self.assertFalse(any(iutils.contains_collective(sn)
                                 for sn in snodes))


if __name__ == "__main__":
    unittest.main()
