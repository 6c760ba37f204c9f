"""The plugin on real transformer programs (graphs/torch/transformer_steps.py:
FSDP as SimpleFSDP does it, TP + SP, 2D, MoE; forward and backward),
compiled by a real torch.compile (torch==2.13.0, CPU, fake process group
of 8 ranks, compile only) at 2 layers:

- the flops and bytes the adapter computes for every compute node equal
  torch's own ``snode.estimate_flops()`` and
  ``snode.get_read_write_buffers_sizes()`` (the adapter works them out
  itself, docs/API.md says why), with WeakDeps not counted as reads
  (``torch_bytes``);
- the document the adapter builds loads, and the plugin's default
  pipeline returns a permutation of the same node objects that respects
  every dependency Inductor knows;
- ``reorder(..., timings=)`` reports its four phases;
- commsched's heap-scheduler passes (raise_comms, sink_waits,
  reorder_compute_for_overlap) order the nodes as torch 2.13's functions
  of the same names (torch._inductor.comms) do, both fed the same
  runtimes through Inductor's estimate_op_runtime hook (commsched's cost
  model's figure for each node, so that they are not all 0 as Inductor's
  own are on CPU);
- for every collective, the nodes it reaches back to through the fused
  nodes' outputs' "from" (docs/FORMAT.md) are exactly the fused nodes of
  torch's ``snode.ancestors``, which Inductor computes before fusion over
  the kernels a fused node is made of and raise_comms ranks nodes by.
  Without "from" raise_comms and reorder_compute_for_overlap differed on
  the FSDP and MoE backward graphs.

One compile per program; each of Inductor's two hook calls checks it all.

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

import commsched  # noqa: E402
import commsched.inductor as ci  # noqa: E402
import torch._inductor.config as icfg  # noqa: E402
from torch._inductor import comms  # noqa: E402
from torch._inductor import utils as iutils  # noqa: E402

LAYERS = 2
PASSES = ("raise_comms", "sink_waits", "reorder_compute_for_overlap")
SEEN = {}   # kind -> [per graph: dict of findings]


def reached(doc):
    """{collective name: the names of the nodes its score0 reaches back to}
    from the graph document, as the format's "from" defines it (a node's
    outputs with a "from" stand for the members that make them, each
    depending on the producers of its "from"; its other outputs for one
    member depending on every input; `after` and `after_fake` on every
    member). A walk per collective: quadratic, for small graphs only."""
    nodes = doc["nodes"]
    producer, index = {}, {}
    for i, n in enumerate(nodes):
        index[n["name"]] = i
        for o in n.get("outputs", ()):
            producer[o["name"]] = (i, o)

    def key(i, o):
        if "from" in o and nodes[i]["kind"] != "collective":
            return o["name"]
        return None

    def members(i):
        return [(i, key(i, o)) for o in nodes[i].get("outputs", ())] + \
            [(i, None)]

    def deps(member):
        i, k = member
        n = nodes[i]
        if k is None:
            bufs = n.get("inputs", ())
        else:
            bufs = next(o["from"] for o in n["outputs"] if o["name"] == k)
        out = [(p, key(p, o)) for p, o in (producer[b] for b in bufs
                                            if b in producer)]
        for a in (*n.get("after", ()), *n.get("after_fake", ())):
            out.extend(members(index[a]))
        return out
    result = {}
    for i, n in enumerate(nodes):
        if n["kind"] != "collective":
            continue
        seen, stack = set(), [(i, None)]
        while stack:
            for d in deps(stack.pop()):
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        result[n["name"]] = {nodes[j]["name"] for j, _ in seen}
    return result


def ancestor_differences(snodes, doc):
    """[(collective, commsched-only, torch-only)] where the nodes a
    collective reaches back to through "from" are not the fused nodes of
    torch's ancestors."""
    fused = {}
    for sn in snodes:
        for op in sn.get_operation_names():
            fused[op] = sn.get_name()
        fused[sn.get_name()] = sn.get_name()
    ours = reached(doc)
    kinds = {n["name"]: n["kind"] for n in doc["nodes"]}
    out = []
    for sn in snodes:
        name = sn.get_name()
        if kinds[name] != "collective":
            continue
        theirs = {fused[a] for a in sn.ancestors} - {name}
        mine = ours[name] - {name}
        if mine != theirs:
            out.append((name, sorted(mine - theirs), sorted(theirs - mine)))
    return out


def order_differences(snodes, doc):
    """{pass: None where commsched's order is torch's, else the first
    difference (position, torch's next nodes, commsched's)}."""
    rt = commsched.optimize(commsched.Graph.from_document(doc),
                            "none").runtime_ns
    ms = {sn.get_name(): rt[sn.get_name()] * 1e-6 for sn in snodes}
    out = {}
    with icfg.patch(estimate_op_runtime=lambda sn: ms[sn.get_name()]):
        for p in PASSES:
            theirs = [sn.get_name() for sn in getattr(comms, p)(list(snodes))]
            mine = [sn.get_name() for sn in ci.reorder(snodes, passes=[p])]
            at = next((k for k, (a, b) in enumerate(zip(theirs, mine))
                       if a != b), None)
            if at is None and len(mine) != len(theirs):
                at = min(len(mine), len(theirs))
            out[p] = None if at is None else (at, theirs[at:at + 6],
                                              mine[at:at + 6])
    return out


def torch_bytes(snode):
    """torch's ``get_read_write_buffers_sizes`` from its per-buffer
    figures (``get_read_write_buffer_accesses``), the node's WeakDeps
    taken out of its reads: they read nothing (docs/API.md, "Exactly what
    it reads"). The adapter's other bound, the elements a dependency's
    index or an extern kernel's views cover, changes nothing on these
    unbucketed programs, which read no slices (test_torch_compile.py's
    slice test checks it)."""
    from torch._inductor import dependencies
    from torch.utils._ordered_set import OrderedSet
    rw = snode.read_writes
    snode.read_writes = rw.remove_reads(OrderedSet(
        d for d in rw.reads if isinstance(d, dependencies.WeakDep)))
    try:
        return sum(snode.get_read_write_buffer_accesses(
            include_reads=True, include_writes=True).values())
    finally:
        snode.read_writes = rw


def check(kind):
    def hook(snodes):
        rec = {"nodes": len(snodes), "flops": [], "bytes": [],
               "computed": 0}
        doc = ci.document(snodes)
        rec["ancestors"] = ancestor_differences(snodes, doc)
        rec["orders"] = order_differences(snodes, doc)
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
            theirs = torch_bytes(sn)
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

    def test_every_collective_reaches_back_to_torchs_ancestors(self):
        for kind in ts.KINDS:
            for i, rec in enumerate(SEEN[kind]):
                self.assertEqual(rec["ancestors"], [], (kind, i))

    def test_heap_passes_order_as_torchs_passes_do(self):
        for kind in ts.KINDS:
            for i, rec in enumerate(SEEN[kind]):
                self.assertEqual(sorted(rec["orders"]), sorted(PASSES))
                for p, diff in rec["orders"].items():
                    self.assertIsNone(diff, (kind, i, p))

    def test_timings_name_the_four_phases(self):
        for kind in ts.KINDS:
            for rec in SEEN[kind]:
                self.assertEqual(sorted(rec["timings"]),
                                 ["load", "map", "pipeline", "read"])
                self.assertTrue(all(v >= 0 for v in
                                    rec["timings"].values()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
