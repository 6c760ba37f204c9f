"""commsched's heap-scheduler passes order real transformer programs as
torch 2.13's functions of the same names do (torch._inductor.comms
raise_comms, sink_waits, reorder_compute_for_overlap).

The programs are graphs/torch/transformer_steps.py's four (SimpleFSDP-style
FSDP, TP with sequence parallel, 2D, MoE) at 2 layers, forward and
backward, compiled (compile only) by a real torch.compile under PyTorch's
fake process group of 8 ranks. In each of Inductor's calls of the reorder
hook, torch's pass and commsched's (commsched.inductor.reorder with that
one pass) run on the same scheduler nodes, fed the same runtimes through
Inductor's estimate_op_runtime hook (commsched's cost model's figure for
each node, so that they are not all 0 as Inductor's own are on CPU), and
must give the same order.

raise_comms ranks a node by the first collective it feeds, which torch
reads from the collectives' ``ancestors``: computed by Inductor before
fusion, over the kernels a fused node is made of. The plugin hands those
relations over as the fused nodes' outputs' "from" (docs/FORMAT.md); the
test also checks, for every collective, that the nodes it reaches back to
through them are exactly the fused nodes of torch's ancestors. Without
"from" (before the plugin gave them) raise_comms and
reorder_compute_for_overlap differed on the FSDP and MoE backward graphs.

Usage: test_torch_transformer_orders.py GRAPHS_TORCH_DIR (the folder of
transformer_steps.py). Skipped (77) where torch is not importable.
"""
import os
import sys
import unittest
import warnings

try:
    import torch  # noqa: F401
    import torch._inductor.config as icfg
    from torch._inductor import comms
except ImportError:
    print("torch is not importable: skipped")
    sys.exit(77)

import commsched
import commsched.inductor as ci

PASSES = ("raise_comms", "sink_waits", "reorder_compute_for_overlap")
LAYERS = 2


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


class TransformerOrders(unittest.TestCase):
    """One compile per program; each hook call checks every pass."""

    @classmethod
    def setUpClass(cls):
        ts.init_fake_world()

    def check_program(self, kind):
        calls = []

        def hook(snodes):
            doc = ci.document(snodes)
            g = commsched.Graph.from_document(doc)
            rt = commsched.optimize(g, "none").runtime_ns
            ms = {sn.get_name(): rt[sn.get_name()] * 1e-6 for sn in snodes}
            kinds = {n["name"]: n["kind"] for n in doc["nodes"]}
            where = "%s graph %d (%d nodes)" % (kind, len(calls), len(snodes))
            calls.append(where)
            with self.subTest(where, check="ancestors"):
                fused = {}
                for sn in snodes:
                    for op in sn.get_operation_names():
                        fused[op] = sn.get_name()
                    fused[sn.get_name()] = sn.get_name()
                ours = reached(doc)
                for sn in snodes:
                    name = sn.get_name()
                    if kinds[name] != "collective":
                        continue
                    theirs = {fused[a] for a in sn.ancestors} - {name}
                    mine = ours[name] - {name}
                    self.assertEqual(
                        mine, theirs,
                        "%s: collective %s reaches back to %s beyond "
                        "torch's ancestors and misses %s"
                        % (where, name, sorted(mine - theirs),
                           sorted(theirs - mine)))
            with icfg.patch(estimate_op_runtime=lambda sn: ms[sn.get_name()]):
                for p in PASSES:
                    theirs = [sn.get_name()
                              for sn in getattr(comms, p)(list(snodes))]
                    mine = [sn.get_name()
                            for sn in ci.reorder(snodes, passes=[p])]
                    with self.subTest(where, check=p):
                        self.assertEqual(sorted(mine), sorted(theirs))
                        first = next((k for k, (a, b) in
                                      enumerate(zip(theirs, mine))
                                      if a != b), None)
                        self.assertIsNone(
                            first, "%s %s: first difference at %s: torch "
                            "%s, commsched %s" % (
                                where, p, first,
                                theirs[first:first + 6] if first is not None
                                else "", mine[first:first + 6]
                                if first is not None else ""))
            return snodes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts.compile_step(kind, LAYERS, hook)
        # Inductor lowered both graphs, the backward with fused kernels
        self.assertEqual(len(calls), 2, calls)

    def test_fsdp(self):
        self.check_program("fsdp")

    def test_tp(self):
        self.check_program("tp")

    def test_2d(self):
        self.check_program("2d")

    def test_moe(self):
        self.check_program("moe")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_torch_transformer_orders.py GRAPHS_TORCH_DIR")
    sys.path.insert(0, os.path.abspath(sys.argv.pop(1)))
    import transformer_steps as ts
    unittest.main()
