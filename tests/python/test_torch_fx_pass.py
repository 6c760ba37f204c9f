"""commsched at torch 2.13's FX level: commsched.fx.post_grad_pass() as
config.post_grad_custom_post_pass inside a real torch.compile (CPU), under
a fake process group of 8 ranks in one process (as test_torch_compile.py
runs the scheduler-node plugin).

On every post-grad FX graph Inductor hands the pass (FSDP-like forward
and backward, TP-like, 2D with two groups, MoE, a program with
mutations: two inputs updated in place, a coalesced collective, and one
torch's own FX all-gather bucketing rewrote first):
- the compiled program runs (outputs shaped as eager's);
- the graph's node order after the hook is commsched's order, and stays
  so through what post_grad_passes does next (stable_topological_sort);
- the order is a permutation of the graph's nodes in which every FX data
  dependency holds (graph.lint and positions), every node that writes an
  argument keeps its place relative to each node touching the written
  storage, and the side-effecting nodes keep their relative order: checked
  here from the schemas and meta values, not with commsched.fx's own
  dependency function;
- what from_fx reads: collective ops, group sizes (c10d), reduce ops,
  dtypes; buffer sizes from meta["val"];
- by commsched's simulator the order is never slower than the input, and
  across the suite at least one graph is reordered.

Skipped (77) where torch is not importable.
"""
import json
import operator
import os
import sys
import tempfile
import threading
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
from torch._inductor.pattern_matcher import stable_topological_sort

import commsched
import commsched.fx as cfx

WORLD = 8
SEEN = []   # one record per FX graph the hook was handed


def storages(node):
    val = node.meta.get("val")
    leaves = torch.utils._pytree.tree_leaves(val)
    return {t.untyped_storage()._cdata for t in leaves
            if isinstance(t, torch.Tensor)}


def written(node):
    schema = getattr(node.target, "_schema", None)
    out = set()
    for i, arg in enumerate(schema.arguments if schema else ()):
        if arg.alias_info is not None and arg.alias_info.is_write:
            v = node.args[i] if i < len(node.args) else \
                node.kwargs.get(arg.name)
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(x, torch.fx.Node):
                    out |= storages(x)
    return out


def record_graph(graph):
    """What the hook must keep, from the graph as handed over."""
    nodes = [n for n in graph.nodes if n.op == "call_function"]
    touch = {n.name: set().union(storages(n), *(storages(a) for a in
                                                n.all_input_nodes))
             for n in nodes}
    return {"order": [n.name for n in nodes], "touch": touch,
            "writes": {n.name: written(n) for n in nodes if written(n)},
            "impure": [n.name for n in nodes if n.is_impure() and
                       cfx._fx_kind(n) == "compute" and not written(n)]}


class Recording(type(cfx.post_grad_pass())):
    """commsched.fx.post_grad_pass(), recording each graph before and
    after it, and the order after stable_topological_sort."""

    def __call__(self, graph):
        before = record_graph(graph)
        # the threads from_fx reads the FX nodes in (a thread of its own,
        # as the scheduler-node adapter's: commsched.inductor's
        # _on_fresh_stack)
        readers, kind_of = set(), cfx._fx_kind

        def recorded_kind(node):
            readers.add(threading.current_thread())
            return kind_of(node)
        cfx._fx_kind = recorded_kind
        try:
            g_in = cfx.from_fx(graph)
        finally:
            cfx._fx_kind = kind_of
        super().__call__(graph)
        after = [n.name for n in graph.nodes if n.op == "call_function"]
        stable_topological_sort(graph)
        sorted_after = [n.name for n in graph.nodes
                        if n.op == "call_function"]
        colls = []
        for n in graph.nodes:
            if n.op == "call_function" and \
                    cfx._fx_kind(n) == "collective":
                colls.append(cfx._fx_collective(n, {}))
        SEEN.append({"before": before, "after": after,
                     "sorted_after": sorted_after, "result": self.last,
                     "graph": graph, "colls": colls,
                     "readers": readers,
                     "caller": threading.current_thread(),
                     "input_ns": commsched.simulate(g_in).makespan_ns,
                     "nbytes": {n.name: [t.untyped_storage().nbytes()
                                         for t in cfx._leaves(
                                             n.meta.get("val"))]
                                for n in graph.nodes}})


class TorchFxPass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dist.init_process_group("fake", store=FakeStore(), rank=0,
                                world_size=WORLD)
        icfg.force_disable_caches = True
        icfg.compile_threads = 1
        icfg.post_grad_custom_post_pass = Recording()
        cls.world = dist.group.WORLD
        cls.half = dist.new_group(list(range(WORLD // 2)))
        cls.reordered = 0

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        icfg.post_grad_custom_post_pass = None
        if not cls.reordered:
            raise AssertionError("no graph of the suite was reordered: "
                                 "nothing was tested")

    def compile_and_run(self, fn, *args, backward=False):
        SEEN.clear()
        torch._dynamo.reset()
        want = fn(*args)
        got = torch.compile(fn, fullgraph=True)(*args)
        if backward:
            (got[0] if isinstance(got, tuple) else got).sum().backward()
        flat_w = torch.utils._pytree.tree_leaves(want)
        flat_g = torch.utils._pytree.tree_leaves(got)
        self.assertEqual([t.shape for t in flat_g],
                         [t.shape for t in flat_w])
        self.assertEqual(len(SEEN), 2 if backward else 1)
        for rec in SEEN:
            self.check_graph(rec)
        return SEEN

    def check_graph(self, rec):
        b, after = rec["before"], rec["after"]
        # commsched's order is the graph's order, and stays so
        self.assertEqual(after, rec["result"].order)
        self.assertEqual(rec["sorted_after"], after)
        self.assertEqual(sorted(after), sorted(b["order"]))
        rec["graph"].lint()
        self.assertEqual(len(rec["readers"]), 1)
        self.assertNotIn(rec["caller"], rec["readers"])
        pos = {n: k for k, n in enumerate(after)}
        old = {n: k for k, n in enumerate(b["order"])}
        for n in rec["graph"].nodes:
            if n.op == "call_function":
                for a in n.all_input_nodes:
                    if a.op == "call_function":
                        self.assertLess(pos[a.name], pos[n.name])
        # a write keeps its place against every node touching its storage
        for w, stor in b["writes"].items():
            for u, touched in b["touch"].items():
                if u != w and touched & stor:
                    self.assertEqual(old[u] < old[w], pos[u] < pos[w],
                                     "%s writes what %s touches" % (w, u))
        imp = b["impure"]
        self.assertEqual(sorted(imp, key=pos.get), imp)
        # never slower than the order handed over
        self.assertLessEqual(rec["result"].after.makespan_ns,
                             rec["input_ns"] * (1 + 1e-9))
        if after != b["order"]:
            type(self).reordered += 1

    def check_collectives(self, want):
        got = sorted((op, size, red, dt) for rec in SEEN
                     for op, _, size, red, dt, _ in rec["colls"])
        self.assertEqual(got, sorted(want))

    def test_fsdp_like_forward_backward(self):
        pg = self.world

        def step(x, w0, w1):
            h = x
            for w in (w0, w1):
                full = funcol.all_gather_tensor_autograd(w, 0, pg)
                h = torch.nn.functional.gelu(h @ full.view(64, 64))
            return h.square().mean()
        ws = [torch.randn(8, 64, requires_grad=True) for _ in range(2)]
        self.compile_and_run(step, torch.randn(64, 64), *ws, backward=True)
        # forward: two gathers; backward: two reduce-scatters (and the
        # gathers recomputed or saved: at least the reduce-scatters)
        ops = [c[0] for rec in SEEN for c in rec["colls"]]
        self.assertEqual(ops.count("reduce_scatter"), 2)
        self.assertGreaterEqual(ops.count("all_gather"), 2)
        self.assertTrue(all(c[2] == WORLD for rec in SEEN
                            for c in rec["colls"]))

    def test_tp_like(self):
        pg = self.world

        def step(x, a, b, c):
            red = funcol.all_reduce(x @ a, "sum", pg)
            return red + torch.tanh(x @ b) @ c
        self.compile_and_run(step, *(torch.randn(64, 64) for _ in range(4)))
        self.check_collectives([("all_reduce", WORLD, "sum", "float32")])

    def test_2d_two_groups(self):
        dp, tp = self.world, self.half

        def step(x, w, a):
            g = funcol.all_gather_tensor(w, 0, dp).view(64, 64)
            red = funcol.all_reduce((x @ g) @ a, "sum", tp)
            return torch.relu(red)
        self.compile_and_run(step, torch.randn(64, 64), torch.randn(8, 64),
                             torch.randn(64, 64))
        self.check_collectives([("all_gather", WORLD, None, "float32"),
                                ("all_reduce", WORLD // 2, "sum",
                                 "float32")])

    def test_moe_all_to_all(self):
        pg = self.world

        def step(x, w, s):
            routed = funcol.all_to_all_single(x, None, None, pg)
            back = funcol.all_to_all_single(torch.relu(routed @ w), None,
                                            None, pg)
            return back + torch.relu(x @ s)     # a shared expert beside
        self.compile_and_run(step, *(torch.randn(64, 64) for _ in range(3)))
        self.check_collectives([("all_to_all", WORLD, None, "float32")] * 2)
        # buffer sizes: the graph's new buffers are their storages' bytes
        g = cfx.from_fx(SEEN[0]["graph"])
        self.assertEqual(len(g), len(SEEN[0]["after"]))
        self.assertTrue(all(b == 64 * 64 * 4 for n, bs in
                            SEEN[0]["nbytes"].items() for b in bs
                            if n.startswith("mm")))

    def test_mutations(self):
        """Inputs updated in place (post-grad: copy_ into each placeholder,
        read before and after): the writes keep their place against every
        node touching the storage."""
        pg = self.world

        def step(x, w, buf, acc):
            before = buf.sum()
            buf.add_(1)
            acc.mul_(x.mean())
            y = funcol.all_reduce(x @ w, "sum", pg)
            z = torch.relu(x @ w.t())           # independent compute
            return y + z + buf.sum() + before + acc
        self.compile_and_run(step, torch.randn(64, 64), torch.randn(64, 64),
                             torch.zeros(64), torch.ones(64))
        self.assertEqual(len(SEEN[0]["before"]["writes"]), 2,
                         "the graph holds two writing nodes")
        self.check_collectives([("all_reduce", WORLD, "sum", "float32")])
    def test_after_torchs_bucketing(self):
        """torch's own FX all-gather bucketing (fx_passes/bucketing.py's
        bucket_all_gather, in the "custom_ops" mode its overlap bucketer
        uses) run on the graph before commsched's pass, as a user's pass
        chained ahead of it would: the bucket's
        all_gather_into_tensor_out(flat[slice], out=flat) returns its
        ``out=`` argument (the schema's Tensor(a!)), whose traced fake
        value has a storage of its own, so the collective writes no new
        buffer: it aliases the bucket's flat buffer, which it fills, and
        the graph obeys the all-gather's size rule (without the schema's
        alias the flat buffer was written twice, 8x what it reads)."""
        from torch._inductor.fx_passes.bucketing import bucket_all_gather
        pg = self.world
        recording = icfg.post_grad_custom_post_pass
        test = self

        class BucketFirst(Recording):
            def __call__(self, graph):
                bucket_all_gather(graph.owning_module, lambda _: 2000.0,
                                  "custom_ops")
                test.bucketed = [n for n in graph.nodes
                                 if n.op == "call_function" and
                                 "all_gather_into_tensor_out" in
                                 str(n.target)]
                super().__call__(graph)

        def step(x, w0, w1, w2):
            fulls = [funcol.all_gather_tensor(w, 0, pg).view(64, 64)
                     for w in (w0, w1, w2)]
            h = x
            for full in fulls:
                h = torch.relu(h @ full)
            return h
        icfg.post_grad_custom_post_pass = BucketFirst()
        try:
            self.compile_and_run(step, torch.randn(64, 64),
                                 *(torch.randn(8, 64) for _ in range(3)))
        finally:
            icfg.post_grad_custom_post_pass = recording
        self.assertEqual(len(self.bucketed), 1, "torch made one bucket")
        self.check_collectives([("all_gather", WORLD, None, "float32")])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.json")
            cfx.from_fx(SEEN[0]["graph"]).save(path)
            with open(path) as fh:
                doc = json.load(fh)
        nodes = {n["name"]: n for n in doc["nodes"]}
        out = self.bucketed[0].kwargs["out"]
        coll = nodes[self.bucketed[0].name]
        self.assertEqual(coll["outputs"],
                         [{"name": coll["name"], "alias_of": out.name}])
        self.assertIn(out.name, coll["inputs"])
        # the flat buffer holds the three gathered weights
        flat = [o for o in nodes[out.name]["outputs"]
                if o["name"] == out.name]
        self.assertEqual(flat[0]["size"], 3 * 64 * 64 * 4)

    def compile_three_gathers(self, fx_pass):
        """Compiles (and runs forward and backward) a step of three
        all-gathered 8x64 weight shards under ``fx_pass`` as the post-grad
        pass: three gathers in the forward graph, their reduce-scatters in
        the backward, each run bucketable."""
        pg = self.world

        def step(x, w0, w1, w2):
            h = x
            for w in (w0, w1, w2):
                full = funcol.all_gather_tensor_autograd(w, 0, pg)
                h = torch.tanh(h @ full.view(64, 64))
            return h.square().mean()
        recording = icfg.post_grad_custom_post_pass
        icfg.post_grad_custom_post_pass = fx_pass
        try:
            torch._dynamo.reset()
            ws = [torch.randn(8, 64, requires_grad=True) for _ in range(3)]
            torch.compile(step, fullgraph=True)(torch.randn(64, 64),
                                                *ws).backward()
        finally:
            icfg.post_grad_custom_post_pass = recording

    def test_commscheds_bucketing(self):
        """post_grad_pass(bucket=...): commsched's bucket plan merged by
        torch's helpers, then reordered. Every bucket of the plan is one
        all_gather_into_tensor_out (reduce-scatters: one
        reduce_scatter_tensor of the flat buffer) whose members are gone;
        the graph's order is the reordering's; a reordering pass is
        refused before the graph is touched."""
        graphs = []

        class Bucketed(type(cfx.post_grad_pass())):
            def __call__(self, graph):
                before = [n.name for n in graph.nodes]
                with self.test.assertRaises(commsched.Error):
                    cfx.bucket_fx(graph, passes="bucket_all_gather,overlap")
                self.test.assertEqual([n.name for n in graph.nodes], before)
                res = cfx.bucket_fx(graph, bucket_cap_mb=25,
                                    bucket_peak_memory_budget=float("inf"))
                after_bucketing = {n.name for n in graph.nodes}
                self.last = cfx.reorder_fx(graph)
                graphs.append((graph, res, after_bucketing, self.last.order,
                               [n.name for n in graph.nodes
                                if n.op == "call_function"]))
        Bucketed.test = self
        self.compile_three_gathers(Bucketed())
        self.assertEqual(len(graphs), 2)
        merged_ops = 0
        for graph, res, names, order, linked in graphs:
            buckets = [b for ps in res.stats for b in (ps.buckets or ())]
            self.assertTrue(buckets, "a bucket formed in each graph")
            for b in buckets:
                self.assertGreaterEqual(len(b.members), 2)
                self.assertTrue(names.isdisjoint(b.members))
            colls = [n for n in graph.nodes if n.op == "call_function" and
                     cfx._fx_kind(n) == "collective"]
            merged_ops += sum("all_gather_into_tensor_out" in str(n.target)
                              for n in colls)
            # members gone: one collective a bucket, none left over here
            self.assertEqual(len(colls), len(buckets))
            graph.lint()
            # the reordering read the bucketed graph: its order is the
            # graph's, merged collectives included
            self.assertEqual(linked, order)
            self.assertTrue({n.name for n in colls} <= set(order))
        self.assertGreaterEqual(merged_ops, 1)
        # Inductor's FX graph cache keys on the bucketing too
        uuids = {cfx.post_grad_pass(**kw).uuid() for kw in (
            {}, {"bucket": {}}, {"bucket": {"bucket_cap_mb": 25}})}
        self.assertEqual(len(uuids), 3)

    def test_bucket_graphs(self):
        """post_grad_pass(bucket=..., bucket_graphs="backward") buckets
        the backward graph (it takes tangents_*) and leaves the forward's
        collectives as they were, reordered only; "forward" the other way
        round; another value is refused; the uuid covers it."""
        seen = []

        def compile_with(which):
            base = type(cfx.post_grad_pass(bucket={}, bucket_graphs=which))

            class Seen(base):
                def __call__(self, graph):
                    colls = sum(1 for n in graph.nodes
                                if n.op == "call_function" and
                                cfx._fx_kind(n) == "collective")
                    super().__call__(graph)
                    seen.append((which, cfx.is_backward_graph(graph),
                                 colls, self.last_bucketing))
            self.compile_three_gathers(Seen())
        compile_with("backward")
        compile_with("forward")
        self.assertEqual([(w, bw) for w, bw, _, _ in seen],
                         [("backward", False), ("backward", True),
                          ("forward", False), ("forward", True)])
        for which, backward, colls, bucketing in seen:
            if backward == (which == "backward"):
                self.assertIsNotNone(bucketing)
                self.assertTrue(any(ps.buckets for ps in bucketing.stats))
            else:
                self.assertIsNone(bucketing, (which, backward))
            self.assertEqual(colls, 3)   # three gathers / reduce-scatters
        with self.assertRaises(commsched.Error):
            cfx.post_grad_pass(bucket={}, bucket_graphs="bw")
        uuids = {cfx.post_grad_pass(bucket={}, bucket_graphs=w).uuid()
                 for w in cfx.BUCKET_GRAPHS}
        self.assertEqual(len(uuids), 3)

    def test_coalesced_collective(self):
        """all_gather_into_tensor_coalesced returns a list; its getitems
        run before the waits. Each getitem names the collective's output
        (only a wait may read it): it follows the collective and reads
        nothing, and the wait that reads through it follows it."""
        pg = self.world

        def step(x, y):
            parts = torch.ops._c10d_functional.\
                all_gather_into_tensor_coalesced([x * 2, y], WORLD,
                                                 pg.group_name)
            z = torch.relu(x @ y)               # beside the collective
            a = torch.ops._c10d_functional.wait_tensor(parts[0])
            b = torch.ops._c10d_functional.wait_tensor(parts[1])
            return a.sum() + b.sum() + z
        self.compile_and_run(step, torch.randn(8, 8), torch.randn(8, 8))
        self.check_collectives([("all_gather", WORLD, None, "float32")])
        graph = SEEN[0]["graph"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.json")
            cfx.from_fx(graph).save(path)
            with open(path) as fh:
                nodes = {n["name"]: n for n in json.load(fh)["nodes"]}
        coll = [n for n in nodes.values() if n["kind"] == "collective"]
        self.assertEqual(len(coll), 1)
        outs = [o["name"] for o in coll[0]["outputs"]]
        gets = [n for n in graph.nodes if n.op == "call_function" and
                n.target is operator.getitem and
                n.args[0].name == coll[0]["name"]]
        self.assertEqual(len(gets), 2)
        for g in gets:
            rec = nodes[g.name]
            self.assertEqual((rec.get("inputs", []), rec.get("outputs", [])),
                             ([], []))
            self.assertEqual(rec["after"], [coll[0]["name"]])
            (wait,) = g.users
            self.assertEqual(nodes[wait.name]["inputs"],
                             [outs[g.args[1]]])
            self.assertIn(g.name, nodes[wait.name]["after"])


if __name__ == "__main__":
    unittest.main()
