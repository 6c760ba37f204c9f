"""torch 2.13's FX overlap scheduler as an anchor (commsched.fx), inside
a real torch.compile (torch==2.13.0, CPU) under a fake process group of 8
ranks: the FX graph torch would hand its overlap scheduler is captured in
the compile, torch's scheduler reorders a copy with commsched's runtimes,
and the order is mapped onto the scheduler nodes Inductor hands the
plugin. Checks, on an FSDP-like program (forward and backward):

- the capture leaves the compile alone: one FX graph per compiled graph,
  and the scheduler nodes are those of a compile without it;
- the runtimes torch's scheduler gets add up to commsched's (every
  scheduler node's time lands on one of its FX origins; a matmul kernel's
  on the matmul);
- torch's scheduler moved something (the FSDP all-gathers start earlier),
  so the anchor is not the input order in disguise;
- the mapped order is a permutation of the same node objects that
  respects every data and control dependency Inductor knows (not the
  fake ones, see commsched/fx.py), and its collectives and waits (one FX
  node each) come in exactly torch's FX order; matmuls too;
- commsched's simulator times it no slower than the input order, and
  faster on one graph (torch hides an all-gather or reduce-scatter).

Run by the `python` tier with build/venv; skipped (77) without torch.
"""
import os
import sys
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
from torch._inductor import utils as iutils

import commsched
import commsched.fx as cfx
import commsched.inductor as ci

WORLD = 8
CAPTURED = []
CALLS = []


def recording_pass(snodes):
    snodes = list(snodes)
    gm = CAPTURED[-1]
    g = ci.to_graph(snodes)
    runtime = commsched.optimize(g, "none").runtime_ns
    order, fx_order = cfx.torch_overlap_order(gm, snodes)
    CALLS.append({"snodes": snodes, "order": order, "fx_order": fx_order,
                  "gm": gm, "runtime": runtime,
                  "fx_ms": cfx.fx_runtimes_ms(gm, snodes, runtime),
                  "n_captured": len(CAPTURED),
                  "input": commsched.simulate(g),
                  "torch": commsched.simulate(ci.to_graph(order))})
    return snodes


def fsdp_step(x, w0, w1, w2):
    pg = dist.group.WORLD
    h = x
    for w in (w0, w1, w2):
        full = funcol.all_gather_tensor_autograd(w, 0, pg).view(64, 64)
        h = torch.relu(h @ full)
    return h.square().mean()


def compile_fsdp():
    torch._dynamo.reset()
    x = torch.randn(128, 64)
    ws = [torch.randn(8, 64, requires_grad=True) for _ in range(3)]
    torch.compile(fsdp_step, fullgraph=True)(x, *ws).backward()


class TorchFx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dist.init_process_group("fake", store=FakeStore(), rank=0,
                                world_size=WORLD)
        icfg.force_disable_caches = True
        icfg.compile_threads = 1
        icfg.reorder_for_compute_comm_overlap = True
        # without the capture first: the scheduler nodes of a plain compile
        plain = []
        icfg.reorder_for_compute_comm_overlap_passes = [
            lambda sn: plain.append([s.get_name() for s in sn]) or sn]
        compile_fsdp()
        cls.plain = plain
        icfg.reorder_for_compute_comm_overlap_passes = [recording_pass]
        with cfx.capture_overlap_input(CAPTURED):
            compile_fsdp()

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()

    def test_capture_leaves_the_compile_alone(self):
        self.assertEqual(len(CALLS), 2, "forward and backward")
        self.assertEqual([c["n_captured"] for c in CALLS], [1, 2])
        self.assertEqual([[s.get_name() for s in c["snodes"]]
                          for c in CALLS], self.plain)
        # the capture put torch's entry back
        from torch._inductor.fx_passes import overlap_scheduling as osch
        self.assertEqual(
            osch.schedule_overlap_bucketing_from_inductor_configs.__module__,
            osch.__name__)
        self.assertFalse(
            icfg.aten_distributed_optimizations.enable_overlap_scheduling)

    def test_runtimes_are_commscheds(self):
        for c in CALLS:
            calls = {n.name: n for n in c["gm"].graph.nodes
                     if n.op == "call_function"}
            total = sum(ns for name, ns in c["runtime"].items()
                        if any(o in calls for o in cfx.origins(
                            next(s for s in c["snodes"]
                                 if s.get_name() == name))))
            self.assertGreater(total, 0)
            self.assertAlmostEqual(sum(c["fx_ms"].values()) * 1e6, total,
                                   delta=total * 1e-9)
            for sn in c["snodes"]:
                mms = [o for o in cfx.origins(sn)
                       if o in calls and calls[o].target ==
                       torch.ops.aten.mm.default]
                if len(mms) == 1 and c["runtime"][sn.get_name()] > 0:
                    self.assertGreaterEqual(
                        c["fx_ms"][mms[0]] * 1e6,
                        c["runtime"][sn.get_name()] * (1 - 1e-9))

    def test_order_is_valid_and_follows_torch(self):
        moved = 0
        for c in CALLS:
            order, fx_order = c["order"], c["fx_order"]
            self.assertEqual(sorted(map(id, order)),
                             sorted(map(id, c["snodes"])))
            moved += order != c["snodes"]
            pos = {}
            for i, sn in enumerate(order):
                for b in sn.get_buffer_names():
                    pos[b] = i
                for o in sn.get_operation_names():
                    pos[o] = i
            fake = 0
            for i, sn in enumerate(order):
                for dep in sn.unmet_dependencies:
                    if getattr(dep, "is_fake", False):
                        fake += 1   # not binding (commsched/fx.py)
                    elif dep.name in pos:
                        self.assertLessEqual(pos[dep.name], i, dep.name)
            # decide_global_ordering_of_comms chains the collectives
            self.assertGreater(fake, 0)
            # one-to-one nodes: collectives, waits, matmuls keep torch's
            # relative order
            fx_pos = {n: k for k, n in enumerate(fx_order)}
            calls = {n.name: n for n in c["gm"].graph.nodes}
            keep = (torch.ops.aten.mm.default,
                    torch.ops._c10d_functional.wait_tensor.default,
                    torch.ops._c10d_functional.all_gather_into_tensor.default,
                    torch.ops._c10d_functional.reduce_scatter_tensor.default)
            seen = []
            for sn in order:
                own = [o for o in cfx.origins(sn)
                       if o in calls and calls[o].target in keep]
                if len(own) == 1 and (iutils.contains_collective(sn) or
                                      iutils.contains_wait(sn) or
                                      calls[own[0]].target ==
                                      torch.ops.aten.mm.default):
                    seen.append(fx_pos[own[0]])
            self.assertGreater(len(seen), 4)
            self.assertEqual(seen, sorted(seen))
        self.assertGreater(moved, 0, "torch's scheduler moved nothing")

    def test_simulated_against_the_input_order(self):
        for c in CALLS:
            inp, t = c["input"], c["torch"]
            print("torch-fx-overlap: input %.1f us, torch %.1f us" %
                  (inp.makespan_ns / 1e3, t.makespan_ns / 1e3))
            self.assertLessEqual(t.makespan_ns, inp.makespan_ns * (1 + 1e-9))
        self.assertTrue(any(c["torch"].makespan_ns < c["input"].makespan_ns
                            for c in CALLS))


if __name__ == "__main__":
    unittest.main()
