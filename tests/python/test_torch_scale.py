"""The plugin on real transformer programs (graphs/torch/transformer_steps.py:
FSDP as SimpleFSDP does it, TP + SP, 2D, MoE; forward and backward),
compiled by a real torch.compile (torch==2.13.0, CPU, fake process group
of 8 ranks, compile only) at 2 layers:

- the flops and bytes the adapter computes for every compute node equal
  torch's own ``snode.estimate_flops()`` and
  ``snode.get_read_write_buffers_sizes()`` (the adapter works them out
  itself, docs/API.md says why);
- the document the adapter builds loads, and the plugin's default
  pipeline returns a permutation of the same node objects that respects
  every dependency Inductor knows;
- ``reorder(..., timings=)`` reports its four phases.

Run by the python tier with build/venv; skipped (77) without torch.
"""
import os
import sys
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not importable: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "graphs", "torch"))
import transformer_steps as ts  # noqa: E402

import commsched.inductor as ci  # noqa: E402
from torch._inductor import utils as iutils  # noqa: E402

LAYERS = 2
SEEN = {}   # kind -> [per graph: dict of findings]


def check(kind):
    def hook(snodes):
        rec = {"nodes": len(snodes), "flops": [], "bytes": [],
               "computed": 0}
        timings = {}
        out = ci.reorder(snodes, timings=timings)
        rec["timings"] = timings
        rec["same_objects"] = sorted(map(id, out)) == sorted(map(id, snodes))
        pos = {sn.get_name(): i for i, sn in enumerate(out)}
        owner = {}
        for sn in snodes:
            for b in sn.get_buffer_names():
                owner[b] = sn.get_name()
            for o in sn.get_operation_names():
                owner[o] = sn.get_name()
        rec["broken"] = [(sn.get_name(), d.name) for sn in out
                         for d in sn.unmet_dependencies
                         if not getattr(d, "is_fake", False) and
                         d.name in owner and owner[d.name] != sn.get_name()
                         and pos[owner[d.name]] > pos[sn.get_name()]]
        rw = ci._read_write_bytes()
        memo = {}
        for sn in snodes:
            if iutils.contains_collective(sn) or iutils.contains_wait(sn):
                continue
            rec["computed"] += 1
            theirs = sn.estimate_flops()
            mine = ci._flops(sn, memo)
            if (float(theirs) if theirs else None) != mine:
                rec["flops"].append((sn.get_name(), theirs, mine))
            theirs = sn.get_read_write_buffers_sizes()
            mine = rw(sn)
            if (float(theirs) if theirs else None) != mine:
                rec["bytes"].append((sn.get_name(), theirs, mine))
        SEEN.setdefault(kind, []).append(rec)
        return out
    ts.compile_step(kind, LAYERS, hook)


class TransformerPrograms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ts.init_fake_world()
        for kind in ts.KINDS:
            check(kind)

    def test_both_graphs_of_every_program_were_seen(self):
        for kind in ts.KINDS:
            self.assertEqual(len(SEEN[kind]), 2, kind)
            for rec in SEEN[kind]:
                self.assertGreater(rec["nodes"], 50, kind)
                self.assertGreater(rec["computed"], 20, kind)

    def test_flops_equal_torchs_estimate_flops(self):
        for kind in ts.KINDS:
            for rec in SEEN[kind]:
                self.assertEqual(rec["flops"], [], kind)

    def test_bytes_equal_torchs_read_write_buffer_sizes(self):
        for kind in ts.KINDS:
            for rec in SEEN[kind]:
                self.assertEqual(rec["bytes"], [], kind)

    def test_default_pipeline_returns_a_valid_order_of_the_same_nodes(self):
        for kind in ts.KINDS:
            for rec in SEEN[kind]:
                self.assertTrue(rec["same_objects"], kind)
                self.assertEqual(rec["broken"], [], kind)

    def test_timings_name_the_four_phases(self):
        for kind in ts.KINDS:
            for rec in SEEN[kind]:
                self.assertEqual(sorted(rec["timings"]),
                                 ["load", "map", "pipeline", "read"])
                self.assertTrue(all(v >= 0 for v in
                                    rec["timings"].values()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
