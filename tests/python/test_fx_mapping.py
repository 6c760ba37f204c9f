"""commsched.fx.map_fx_order: torch's FX order mapped onto Inductor's
scheduler nodes (the rule in commsched/fx.py's documentation), on
stand-in scheduler nodes exposing what it reads (get_name, get_nodes()
and their node.origins, get_buffer_names, get_operation_names,
unmet_dependencies); and the torch-fx-overlap orders stored beside the
corpus's real torch MLP graphs (graphs/torch/anchors) are each a topological
order of every node of their graph, as make bench applies them.

Usage: test_fx_mapping.py GRAPHS_TORCH_DIR (no torch needed).
"""
import glob
import json
import os
import sys
import tempfile
import unittest

import commsched
from commsched import fx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import overlap_bench  # noqa: E402  (the bench's own apply_order)

GRAPHS = sys.argv.pop(1) if len(sys.argv) > 1 else None


class Origin:
    def __init__(self, name):
        self.name = name


class IR:
    def __init__(self, origins):
        self.origins = {Origin(o) for o in origins}


class Dep:
    def __init__(self, name, is_fake=None):
        self.name = name
        if is_fake is not None:     # only WeakDep has is_fake
            self.is_fake = is_fake


class SNode:
    """A scheduler node: its name is its one buffer's name too."""

    def __init__(self, name, origins, deps=(), fake=(), parts=None):
        self._name = name
        self._parts = parts or [IR(origins)]
        self.unmet_dependencies = {Dep(d) for d in deps} | \
            {Dep(d, is_fake=True) for d in fake}

    def get_name(self):
        return self._name

    def get_nodes(self):
        return [type("Leaf", (), {"node": p})() for p in self._parts]

    def get_buffer_names(self):
        return {"buf_" + self._name}

    def get_operation_names(self):
        return {self._name}


def names(order):
    return [sn.get_name() for sn in order]


class MapFxOrder(unittest.TestCase):
    def test_one_to_one_follows_torch(self):
        # ag -> wait -> mm; torch starts the all-gather before mm0
        sn = [SNode("mm0", ["mm"]),
              SNode("ag", ["all_gather"]),
              SNode("wait", ["wait_tensor"], deps=["buf_ag"]),
              SNode("mm1", ["mm_1"], deps=["buf_wait"])]
        fx_order = ["x", "all_gather", "mm", "wait_tensor", "mm_1"]
        self.assertEqual(names(fx.map_fx_order(fx_order, sn)),
                         ["ag", "mm0", "wait", "mm1"])

    def test_fused_node_goes_to_its_latest_origin(self):
        # a kernel fused from mul (before the wait in torch's order) and
        # add (after it) runs after the wait, though it does not read it
        sn = [SNode("ag", ["all_gather"]),
              SNode("fused", ["mul", "add"]),
              SNode("wait", ["wait_tensor"], deps=["buf_ag"])]
        fx_order = ["all_gather", "mul", "wait_tensor", "add"]
        self.assertEqual(names(fx.map_fx_order(fx_order, sn)),
                         ["ag", "wait", "fused"])
        # with all of its ops before the wait, it stays before it
        self.assertEqual(names(fx.map_fx_order(
            ["all_gather", "mul", "add", "wait_tensor"], sn)),
            ["ag", "fused", "wait"])

    def test_split_kernel_sharing_origins_keeps_input_order(self):
        sn = [SNode("red0", ["mul", "mean"]),
              SNode("red1", ["mul", "mean"], deps=["buf_red0"]),
              SNode("ag", ["all_gather"])]
        self.assertEqual(names(fx.map_fx_order(
            ["all_gather", "mul", "mean"], sn)), ["ag", "red0", "red1"])

    def test_node_without_origin_follows_its_dependency(self):
        sn = [SNode("a", ["a"]), SNode("b", ["b"]),
              SNode("copy", [], deps=["buf_a"])]
        # torch puts b before a: the copy of a comes right after a
        self.assertEqual(names(fx.map_fx_order(["b", "a"], sn)),
                         ["b", "a", "copy"])
        self.assertEqual(names(fx.map_fx_order(["a", "b"], sn)),
                         ["a", "copy", "b"])

    def test_dependencies_win_over_positions(self):
        # an origin list that would put the user first: the dependency
        # (from Inductor) decides, the result stays a valid order
        sn = [SNode("p", ["late"]), SNode("u", ["early"], deps=["buf_p"])]
        self.assertEqual(names(fx.map_fx_order(["early", "late"], sn)),
                         ["p", "u"])

    def test_fake_dependencies_do_not_bind(self):
        # decide_global_ordering_of_comms chained rs1 after wait0 in the
        # input order; torch issues rs1 before wait0
        sn = [SNode("rs0", ["rs0"]),
              SNode("wait0", ["w0"], deps=["buf_rs0"]),
              SNode("rs1", ["rs1"], fake=["buf_wait0"]),
              SNode("wait1", ["w1"], deps=["buf_rs1"])]
        self.assertEqual(names(fx.map_fx_order(["rs0", "rs1", "w0", "w1"],
                                               sn)),
                         ["rs0", "rs1", "wait0", "wait1"])

    def test_same_objects_each_once(self):
        sn = [SNode("a", ["a"]), SNode("b", ["b"])]
        out = fx.map_fx_order(["b", "a"], sn)
        self.assertEqual(sorted(map(id, out)), sorted(map(id, sn)))

    def test_cycle_is_refused(self):
        sn = [SNode("a", ["a"], deps=["buf_b"]),
              SNode("b", ["b"], deps=["buf_a"])]
        with self.assertRaises(commsched.Error):
            fx.map_fx_order(["a", "b"], sn)


def mlp_graphs():
    """The graphs make_torch_graphs.py makes, with their FX-level anchors
    (the transformer-* steps of make_transformer_graphs.py carry the
    scheduler-node passes' orders instead: passes/torch-orders)."""
    return sorted(g for g in glob.glob(os.path.join(GRAPHS, "*.json"))
                  if not os.path.basename(g).startswith("transformer-"))


@unittest.skipUnless(GRAPHS, "no graphs/torch directory given")
class StoredAnchors(unittest.TestCase):
    def test_each_graph_has_a_valid_torch_fx_order(self):
        graphs = mlp_graphs()
        self.assertTrue(graphs)
        with tempfile.TemporaryDirectory() as tmp:
            for g in graphs:
                base = os.path.basename(g)[:-5]
                path = os.path.join(GRAPHS, "anchors",
                                    base + ".torch-fx-overlap.order")
                with open(path) as fh:
                    order = [x.strip() for x in fh
                             if x.strip() and not x.startswith("#")]
                with open(g) as fh:
                    doc = json.load(fh)
                self.assertEqual(sorted(order),
                                 sorted(n["name"] for n in doc["nodes"]))
                # as make bench applies it; load checks the order is
                # topological for data and control edges (docs/FORMAT.md)
                out = os.path.join(tmp, base + ".json")
                overlap_bench.apply_order(g, path, out)
                self.assertEqual(commsched.Graph.load(out).nodes, order)

    def test_each_graph_has_its_anchor_graphs(self):
        """anchors/<graph>.commsched-fx.json (the same program compiled
        with commsched at the FX level) and .torch-fx-bucketed.json (with
        torch's FX overlap scheduler and bucketing) load and are the same
        program: the same graph inputs, and the same collectives (op,
        group size, bytes written) for commsched-fx, the same kinds of
        collective (op, group size), fewer or as many, for the bucketed
        one."""
        def collectives(doc, sized=True):
            sizes = {g["name"]: g["size"] for g in doc.get("groups", ())}
            return sorted((n["op"], sizes[n["group"]]) +
                          ((sum(o.get("size", 0) for o in n["outputs"]),)
                           if sized else ())
                          for n in doc["nodes"] if n["kind"] == "collective")
        for g in mlp_graphs():
            base = os.path.basename(g)[:-5]
            found = dict(overlap_bench.anchor_graphs(g))
            self.assertEqual(sorted(found), ["commsched-fx",
                                             "torch-fx-bucketed"])
            with open(g) as fh:
                doc = json.load(fh)
            for name, path in found.items():
                commsched.Graph.load(path)
                with open(path) as fh:
                    other = json.load(fh)
                self.assertEqual(sorted(i["size"] for i in other["inputs"]),
                                 sorted(i["size"] for i in doc["inputs"]),
                                 path)
                if name == "commsched-fx":
                    self.assertEqual(collectives(other), collectives(doc))
                else:
                    mine = collectives(other, sized=False)
                    theirs = collectives(doc, sized=False)
                    self.assertEqual(set(mine), set(theirs), path)
                    self.assertLessEqual(len(mine), len(theirs), path)

if __name__ == "__main__":
    unittest.main()
