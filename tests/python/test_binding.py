"""The commsched Python binding: the Graph builder, optimize, simulate,
located errors, use from several threads, and the ctypes struct mirrors
against the C compiler's layout.

Run by ctest with COMMSCHED_LIBRARY (the just-built library),
PYTHONPATH=python/, COMMSCHED_ABI_LAYOUT (tests/python/abi_layout) and
COMMSCHED_CLI (the commsched tool, whose --stats=json the binding's
statistics are compared with)."""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import commsched
from commsched import _lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MiB = 1 << 20
RCPPM = "reorder_communication_preserving_peak_memory"


def six_node_step(name="step", scale=1.0):
    """mm1 -> relu -> mm2 -> upd, and an all-reduce whose wait feeds upd,
    issued late and waited for at once (the consumer test's graph)."""
    g = commsched.Graph(name)
    g.add_group("dp", 8, 1)
    g.add_input("x", 4 * MiB)
    g.add_input("grad", 8 * MiB)
    g.compute("mm1", op="mm", gemm_like=True, inputs=["x"],
              outputs=[("h1", 4 * MiB)], runtime_ns=50000 * scale)
    g.compute("relu", inputs=["h1"], outputs=[("h2", 4 * MiB)],
              runtime_ns=10000 * scale)
    g.collective("ar", "all_reduce", "dp", inputs=["grad"],
                 outputs=[("grad_sum", 8 * MiB)], runtime_ns=80000)
    g.wait("ar_wait", inputs=["grad_sum"],
           outputs=[commsched.alias("grad_ready", "grad_sum")])
    g.compute("mm2", op="mm", gemm_like=True, inputs=["h2"],
              outputs=[("h3", 4 * MiB)], runtime_ns=50000 * scale)
    g.compute("upd", inputs=["grad_ready", "h3"], outputs=[("out", 4 * MiB)],
              runtime_ns=5000 * scale)
    g.add_output("out")
    return g


def fsdp_like(layers, seed):
    """A forward pass of `layers` layers: all-gather each weight (its 8
    shards on dp's 8 ranks), wait, matmul; sizes and runtimes vary with
    seed."""
    g = commsched.Graph("fsdp%d_%d" % (layers, seed))
    g.add_group("dp", 8)
    g.add_input("act0", MiB)
    prev = "act0"
    for i in range(layers):
        shard = MiB * (1 + (seed + i) % 3)
        g.add_input("w%d_shard" % i, shard)
        g.collective("ag%d" % i, "all_gather", "dp",
                     inputs=["w%d_shard" % i],
                     outputs=[("ag%d_out" % i, 8 * shard)])  # cost model
        g.wait("ag%d_wait" % i, inputs=["ag%d_out" % i],
               outputs=[commsched.alias("w%d" % i, "ag%d_out" % i)])
        g.compute("mm%d" % i, op="mm", gemm_like=True,
                  inputs=[prev, "w%d" % i],
                  outputs=[("act%d" % (i + 1), MiB)],
                  flops=2e11 * (1 + (seed * 7 + i) % 5))
        prev = "act%d" % (i + 1)
    g.add_output(prev)
    return g


class Builder(unittest.TestCase):
    def test_version(self):
        v = commsched.version()
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        self.assertEqual(int(v.split(".")[0]), _lib.ABI_MAJOR)

    def test_graph_mirrors_the_builder(self):
        g = six_node_step()
        self.assertEqual(g.name, "step")
        self.assertEqual(len(g), 6)
        self.assertEqual(g.nodes, ["mm1", "relu", "ar", "ar_wait", "mm2",
                                   "upd"])
        self.assertEqual(g.kind("ar"), "collective")
        self.assertEqual(g.kind("ar_wait"), "wait")
        with self.assertRaises(commsched.Error):
            g.kind("nope")
        # finished: it no longer changes
        with self.assertRaises(commsched.Error) as cm:
            g.add_input("late", 1)
        self.assertIn("finished", str(cm.exception))

    def test_output_forms(self):
        g = commsched.Graph()
        g.add_input("a", 8)
        g.compute("c", inputs=["a"],
                  outputs=["z", ("y", 8), commsched.Output("v", alias_of="y"),
                           {"name": "u", "size": 4}],
                  dtype="bfloat16")
        g.add_output("v")
        self.assertEqual(g.nodes, ["c"])

    def test_output_from(self):
        # a fused kernel: f_a made from a, f_b from p's output; the
        # all-reduce reads f_a, so p feeds no collective and raise_comms
        # leaves q (first in the file) first; without "from" p goes first
        def step(from_a, from_b, as_dict):
            g = commsched.Graph("fused")
            g.add_group("dp", 8)
            g.add_input("a", 16)
            g.compute("q", inputs=["a"], outputs=[("q_o", 16)], runtime_ns=1)
            g.compute("p", inputs=["a"], outputs=[("p_o", 16)], runtime_ns=1)
            if as_dict:
                outs = [{"name": "f_a", "size": 16, "from": from_a},
                        {"name": "f_b", "size": 16, "from": from_b}]
            else:
                outs = [commsched.Output("f_a", 16, from_=from_a),
                        commsched.Output("f_b", 16, None, from_b)]
            g.compute("f", inputs=["a", "p_o"], outputs=outs, runtime_ns=1)
            g.collective("c", "all_reduce", "dp", inputs=["f_a"],
                         outputs=[("c_o", 16)], runtime_ns=100)
            g.wait("w", inputs=["c_o"], outputs=[commsched.alias("w_o", "c_o")])
            g.compute("u", inputs=["q_o", "f_b", "w_o"], outputs=[("u_o", 16)],
                      runtime_ns=1)
            g.add_output("u_o")
            return g
        for as_dict in (False, True):
            g = step(["a"], ["p_o"], as_dict)
            self.assertEqual(commsched.optimize(g, "raise_comms").order,
                             ["q", "p", "f", "c", "w", "u"])
        g = step(None, None, False)
        self.assertEqual(commsched.optimize(g, "raise_comms").order,
                         ["p", "f", "c", "q", "w", "u"])
        # saved, and loaded back from the document, the same
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.json")
            step(["a"], [], False).save(path)
            with open(path) as f:
                text = f.read()
            self.assertIn('{"name": "f_a", "size": 16, "from": ["a"]}', text)
            self.assertIn('{"name": "f_b", "size": 16, "from": []}', text)
            import json
            with open(path) as f:
                doc = json.load(f)
            again = os.path.join(d, "again.json")
            commsched.Graph.from_document(doc).save(again)
            with open(again) as f:
                self.assertEqual(f.read(), text)
        # a name that is not one of the node's inputs, located
        g = step(["a", "q_o"], ["p_o"], False)
        with self.assertRaises(commsched.Error) as cm:
            g.finish()
        self.assertEqual(cm.exception.status, "EGRAPH")
        self.assertEqual(str(cm.exception),
                         'nodes[2].outputs[0].from[1]: "q_o" is not an input '
                         'of node "f"')
        self.assertEqual(cm.exception.path, "nodes[2].outputs[0].from[1]")
        g = commsched.Graph()
        g.add_input("a", 4)
        with self.assertRaises(commsched.Error) as cm:
            g.compute("f", inputs=["a"],
                      outputs=[commsched.Output("b", 4, from_="a")])
        self.assertIn("outputs[0].from_", str(cm.exception))

    def test_save_writes_each_kind_of_file_as_commsched_o_does(self):
        # Before, save() renamed its temporary file over any path: run as
        # root, save("/dev/null") replaced the null device with a regular
        # file, a symlink became a file and a FIFO's reader got nothing.
        import stat
        g = six_node_step()
        with tempfile.TemporaryDirectory() as d:
            ref = os.path.join(d, "ref.json")
            g.save(ref)
            with open(ref, "rb") as f:
                expected = f.read()
            self.assertEqual(commsched.Graph.load(ref).nodes, g.nodes)
            # a regular file: replaced, its mode kept
            plain = os.path.join(d, "plain.json")
            with open(plain, "w") as f:
                f.write("old")
            os.chmod(plain, 0o640)
            g.save(plain)
            with open(plain, "rb") as f:
                self.assertEqual(f.read(), expected)
            self.assertEqual(stat.S_IMODE(os.stat(plain).st_mode), 0o640)
            # a symlink: the link stays, its target is replaced (mode kept)
            target = os.path.join(d, "target.json")
            with open(target, "w") as f:
                f.write("old")
            os.chmod(target, 0o600)
            link = os.path.join(d, "link.json")
            os.symlink("target.json", link)
            g.save(link)
            self.assertTrue(os.path.islink(link))
            with open(target, "rb") as f:
                self.assertEqual(f.read(), expected)
            self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o600)
            # a dangling symlink: the file it names is made, the link
            # stays (as commsched -o and the shell's > do)
            dangling = os.path.join(d, "dangling.json")
            os.symlink("made.json", dangling)
            g.save(dangling)
            self.assertTrue(os.path.islink(dangling))
            with open(os.path.join(d, "made.json"), "rb") as f:
                self.assertEqual(f.read(), expected)
            # a link loop: refused, the links left alone
            os.symlink("loop-b", os.path.join(d, "loop-a"))
            os.symlink("loop-a", os.path.join(d, "loop-b"))
            with self.assertRaises(commsched.Error) as cm:
                g.save(os.path.join(d, "loop-a"))
            self.assertIn("cannot write: Too many levels of symbolic links",
                          str(cm.exception))
            self.assertTrue(os.path.islink(os.path.join(d, "loop-a")))
            # a FIFO: its reader gets the whole graph
            fifo = os.path.join(d, "fifo")
            os.mkfifo(fifo)
            got = []
            reader = threading.Thread(
                target=lambda: got.append(open(fifo, "rb").read()),
                daemon=True)
            reader.start()
            g.save(fifo)
            reader.join(30)
            self.assertEqual(got, [expected])
            self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
            # a character device (a null device of our own; mknod needs
            # root): written, not replaced
            if os.geteuid() == 0:
                null = os.path.join(d, "null")
                os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                g.save(null)
                self.assertTrue(stat.S_ISCHR(os.stat(null).st_mode))
            # no temporary file left behind
            self.assertEqual([n for n in os.listdir(d)
                              if n.startswith(".commsched-")], [])

    def test_load_and_optimize_a_file(self):
        path = os.path.join(ROOT, "graphs", "examples", "fsdp_2layer.json")
        g = commsched.Graph.load(path)
        r = commsched.optimize(g, verify=True)
        self.assertEqual(sorted(r.order), sorted(g.nodes))
        self.assertLessEqual(r.after.makespan_ns, r.before.makespan_ns)
        self.assertLessEqual(r.after.peak_memory_step,
                             r.before.peak_memory_step * 1.2)


def _cli():
    """The commsched tool: COMMSCHED_CLI, else tools/commsched in the build
    tree COMMSCHED_LIBRARY comes from; None when neither exists."""
    exe = os.environ.get("COMMSCHED_CLI")
    if not exe:
        lib = os.environ.get("COMMSCHED_LIBRARY")
        if not lib:
            return None
        exe = os.path.join(os.path.dirname(lib), "tools", "commsched")
    return exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None


class Optimize(unittest.TestCase):
    def test_default_pipeline(self):
        r = commsched.optimize(six_node_step(), verify=True)
        self.assertEqual(r.order, ["ar", "mm1", "relu", "mm2", "ar_wait",
                                   "upd"])
        self.assertEqual(r.indices, [2, 0, 1, 4, 3, 5])
        self.assertEqual(r.passes, ",".join(commsched.default_pipeline()))
        self.assertEqual(commsched.default_pipeline(), ["overlap"])
        self.assertEqual([p.name for p in r.stats], ["overlap"])
        ov = r.stats[0]
        self.assertEqual(ov.kind, "overlap")
        # ar is issued two places earlier and hides fully
        self.assertEqual([(n.node, n.moves, n.limiting_factor)
                          for n in ov.nodes], [("ar", 2, "None")])
        # the overlap pass's own rows: ar issued at 0 (was 2), its wait
        # kept at 4 (was 3), hidden fully
        self.assertEqual(len(ov.overlap), 1)
        row = ov.overlap[0]
        self.assertEqual((row.node, row.wait, row.limit),
                         ("ar", "ar_wait", "none"))
        self.assertEqual((row.issue_before, row.issue_after,
                          row.wait_before, row.wait_after), (2, 0, 3, 4))
        self.assertEqual((row.comm_ns, row.exposed_before_ns,
                          row.exposed_after_ns), (80000, 80000, 0))
        self.assertEqual((row.hidden_before, row.hidden_after), (0.0, 1.0))
        self.assertIsInstance(ov.overlap, tuple)
        self.assertGreaterEqual(ov.overlap_candidates, 1)
        self.assertIsInstance(ov.overlap_variant, str)
        self.assertGreater(ov.overlap_budget_bytes, 0)
        self.assertEqual((ov.merges_priced, ov.full_pricings), (0, 0))
        self.assertEqual(r.before.exposed_ns, 80000)
        self.assertEqual(r.after.exposed_ns, 0)
        self.assertEqual(r.after.makespan_ns, 115000)
        self.assertEqual(r.after.peak_memory_step, 16 * MiB)

    def test_inductor_pipeline(self):
        inductor = ["decide_global_ordering_of_comms", RCPPM,
                    "sink_waits_iterative", RCPPM]
        r = commsched.optimize(six_node_step(), inductor, verify=True)
        self.assertEqual(r.order, ["ar", "mm1", "relu", "mm2", "ar_wait",
                                   "upd"])
        self.assertEqual([p.name for p in r.stats], inductor)
        rcppm = r.stats[1]
        self.assertEqual(rcppm.kind, "reorder")
        self.assertEqual([(n.node, n.moves) for n in rcppm.nodes],
                         [("ar", 2)])
        self.assertEqual(rcppm.nodes[0].limiting_factor, "None")
        sink = r.stats[2]
        self.assertEqual(sink.kind, "sink")
        self.assertEqual([(n.node, n.moves, n.moves_info)
                          for n in sink.nodes], [("ar_wait", 1, "+mm2")])
        self.assertEqual(r.before.exposed_ns, 80000)
        self.assertEqual(r.after.exposed_ns, 0)
        self.assertEqual(r.before.makespan_ns, 195000)
        self.assertEqual(r.after.makespan_ns, 115000)
        self.assertEqual(r.after.peak_memory_step, 16 * MiB)
        self.assertEqual(r.runtime_ns["ar"], 80000)

    def test_passes_and_knobs(self):
        g = six_node_step()
        self.assertEqual(commsched.optimize(g, "none").order, g.nodes)
        self.assertEqual(commsched.optimize(g, []).order, g.nodes)
        self.assertEqual(commsched.optimize(g, ["sink_waits_iterative"]).order,
                         ["mm1", "relu", "ar", "mm2", "ar_wait", "upd"])
        # a zero budget still allows ar to rise (the peak does not change)
        r = commsched.optimize(g, [RCPPM],
                               reorder_iterative_peak_memory_budget=0.0)
        self.assertEqual(r.order[0], "ar")
        # the debug limit stops after zero collectives
        r = commsched.optimize(g, [RCPPM],
                               reorder_iterative_debug_limit_to_reorder=0)
        self.assertEqual(r.order, g.nodes)
        r = commsched.optimize(g, [RCPPM],
                               reorder_iterative_debug_limit_to_reorder=None)
        self.assertEqual(r.order[0], "ar")

    def test_optimize_does_not_change_the_graph(self):
        # decide_global_ordering_of_comms adds fake edges to the result's
        # view, never to the graph: a second run sees the same graph.
        g = six_node_step()
        first = commsched.optimize(g)
        second = commsched.optimize(g)
        self.assertEqual(first.order, second.order)
        self.assertEqual(first.before, second.before)
        self.assertEqual(first.after, second.after)
        self.assertEqual(g.nodes, ["mm1", "relu", "ar", "ar_wait", "mm2",
                                   "upd"])

    def test_bucketing_replaces_the_graph(self):
        # three all-gathers of one group and dtype, adjacent in wait order:
        # bucket_all_gather merges them; the order, runtimes and stats then
        # name the new graph's nodes, and the input graph is unchanged
        g = commsched.Graph("bucket")
        g.add_group("dp", 8)
        g.add_input("x", MiB)
        for i in range(3):
            g.add_input("s%d" % i, MiB)
            g.collective("ag%d" % i, "all_gather", "dp", inputs=["s%d" % i],
                         outputs=[("o%d" % i, 8 * MiB)], dtype="bfloat16")
        prev = "x"
        for i in range(3):
            g.wait("w%d" % i, inputs=["o%d" % i],
                   outputs=[commsched.alias("wo%d" % i, "o%d" % i)])
            g.compute("mm%d" % i, inputs=[prev, "wo%d" % i],
                      outputs=[("y%d" % i, MiB)], runtime_ns=50000,
                      gemm_like=True)
            prev = "y%d" % i
        g.add_output(prev)
        r = commsched.optimize(g, ["bucket_all_gather", RCPPM], verify=True)
        b = r.stats[0]
        self.assertEqual(b.kind, "bucket")
        self.assertGreaterEqual(len(b.buckets), 1)
        merged = {m for bk in b.buckets for m in bk.members}
        self.assertTrue(merged)
        for bk in b.buckets:
            self.assertIn(bk.node, r.order)
            self.assertIn(bk.copy_in, r.order)
            self.assertIn(bk.wait, r.order)
        for m in merged:
            self.assertNotIn(m, r.order)
        self.assertEqual(set(r.runtime_ns), set(r.order))
        self.assertEqual(len(r.indices), len(r.order))
        for row in r.stats[1].nodes:   # RCPPM rows name new-graph nodes
            self.assertIn(row.node, r.order)
        self.assertEqual(len(g), 9)    # the input graph is unchanged
        self.assertEqual(commsched.optimize(g, "none").order, g.nodes)
        # bucketing stats; the overlap fields stay at their "not this
        # pass" values
        self.assertGreaterEqual(b.merges_priced, len(merged) - len(b.buckets))
        self.assertLessEqual(b.full_pricings, b.merges_priced)
        self.assertEqual(b.overlap, ())
        self.assertIsNone(b.overlap_variant)
        self.assertIsNone(b.overlap_budget_bytes)
        self.assertEqual(b.overlap_candidates, 0)
        self.assertIsNone(b.overlap_time_budget_bytes)
        self.assertIsNone(b.overlap_binds)
        # the old positional constructor still works (defaults)
        p = commsched.PassStats("x", 0.0, 0, 0, None, [], 0)
        self.assertEqual((p.buckets, p.fake_edges_dropped, p.merges_priced,
                          p.full_pricings, p.overlap, p.overlap_variant,
                          p.overlap_budget_bytes, p.overlap_candidates),
                         ([], 0, 0, 0, (), None, None, 0))

    def test_a_collective_reading_a_slice(self):
        # a reduce-scatter reading 1 MiB of a 2 MiB input (Inductor's
        # ReinterpretView of x[:n]) says so with bytes: it is priced as one
        # reading a 1 MiB buffer, and bucketing copies 1 MiB of it
        def step(sliced):
            g = commsched.Graph("slice")
            g.add_group("dp", 8)
            for i in range(2):
                g.add_input("s%d" % i, 2 * MiB if sliced else MiB)
                g.collective("rs%d" % i, "reduce_scatter", "dp",
                             inputs=["s%d" % i],
                             bytes=float(MiB) if sliced else None,
                             outputs=[("o%d" % i, MiB // 8)])
            for i in range(2):
                g.wait("w%d" % i, inputs=["o%d" % i],
                       outputs=[commsched.alias("y%d" % i, "o%d" % i)])
                g.add_output("y%d" % i)
            return g
        whole, part = step(False), step(True)
        self.assertEqual(commsched.optimize(part, "none").runtime_ns,
                         commsched.optimize(whole, "none").runtime_ns)
        kw = dict(bucket_peak_memory_budget=float("inf"))
        r = commsched.optimize(part, ["bucket_reduce_scatter"], verify=True,
                               **kw)
        self.assertEqual(len(r.stats[0].buckets), 1)
        w = commsched.optimize(whole, ["bucket_reduce_scatter"], **kw)
        self.assertEqual((r.after.makespan_ns, r.after.peak_memory_step),
                         (w.after.makespan_ns, w.after.peak_memory_step))

    def test_simulate(self):
        g = six_node_step()
        t = commsched.simulate(g)
        self.assertEqual(t, commsched.optimize(g).before)
        self.assertEqual(t.n_collectives, 1)
        self.assertEqual(t.n_waits, 1)
        self.assertEqual(t.compute_ns, 115000)
        self.assertEqual(t.overlap, 0.0)
        # the device matters only for nodes without runtime_ns
        g2 = fsdp_like(3, 1)
        h100 = commsched.simulate(g2, device="h100")
        a100 = commsched.simulate(g2, device="a100")
        self.assertGreater(a100.compute_ns, h100.compute_ns)
        single = commsched.simulate(g2, comm_streams="single",
                                    cost_model="inductor")
        self.assertEqual(single.n_collectives, 3)

    def test_calibrated_profile(self):
        # a profile with measured tables (as `commsched calibrate` writes
        # it): all-gathers over dp's 8 ranks at 8 MiB measured at 500 us,
        # the others by the line through the points; a fitted roofline of
        # 1e14 flop/s for the matmuls, which no kernel table knows
        import tempfile
        prof = {"format": "commsched-device", "version": 1,
                "base": "h100",
                "measured": {
                    "roofline": {"peak_flops": 1e14, "mem_bw": 0,
                                 "flop_kernels": 3, "byte_kernels": 0},
                    "collectives": [{
                        "op": "all_gather", "ranks": 8,
                        "latency_ns": 100000,
                        "bytes_per_ns": 8 * MiB / 400000,
                        "points": [{"bytes": 8 * MiB, "ns": 500000},
                                   {"bytes": 16 * MiB, "ns": 900000}]}]}}
        with tempfile.NamedTemporaryFile("w", suffix=".json",
                                         delete=False) as f:
            json.dump(prof, f)
        try:
            g = fsdp_like(3, 1)  # shards of 2, 3, 1 MiB: 16, 24, 8 MiB
            r = commsched.optimize(g, "none", device=f.name)
            self.assertEqual(r.runtime_ns["ag2"], 500000)  # measured
            self.assertEqual(r.runtime_ns["ag0"], 900000)
            # 24 MiB: past the largest point, up to twice it: the line
            self.assertAlmostEqual(r.runtime_ns["ag1"],
                                   100000 + 24 * MiB / (8 * MiB / 400000))
            # mm1: 2e11 * (1 + 8 % 5) flop at 1e14 flop/s
            self.assertAlmostEqual(r.runtime_ns["mm1"], 8e11 / 1e14 * 1e9)
            # a node's own runtime_ns wins unless measured_first
            g2 = fsdp_like(3, 1)
            g2.collective("ag9", "all_gather", "dp", inputs=["act3"],
                          outputs=[("ag9_out", 8 * MiB)], runtime_ns=7)
            g2.wait("ag9_wait", inputs=["ag9_out"],
                    outputs=[commsched.alias("w9", "ag9_out")])
            g2.add_output("w9")
            r = commsched.optimize(g2, "none", device=f.name)
            self.assertEqual(r.runtime_ns["ag9"], 7)
            r = commsched.optimize(g2, "none", device=f.name,
                                   measured_first=True)
            self.assertEqual(r.runtime_ns["ag9"], 500000)
            plain = commsched.optimize(g, "none", device="h100")
            self.assertNotEqual(plain.runtime_ns["ag2"], 500000)
            prof["measured"]["collectives"][0]["ranks"] = 0
            with open(f.name, "w") as out:
                json.dump(prof, out)
            with self.assertRaises(commsched.Error) as e:
                commsched.optimize(g, "none", device=f.name)
            self.assertIn("measured.collectives[0].ranks", str(e.exception))
        finally:
            os.unlink(f.name)

    def test_check_order(self):
        # an in-place all_reduce of x after a reader of x: the loader's
        # write-after-read edge (docs/FORMAT.md, "In-place writes") puts
        # the reader first
        doc = {"format": "commsched-graph", "version": 1, "name": "race",
               "groups": [{"name": "dp", "size": 2}],
               "inputs": [{"name": "x", "size": 64}],
               "nodes": [
                   {"name": "r", "kind": "compute", "inputs": ["x"],
                    "outputs": [{"name": "y", "size": 64}]},
                   {"name": "c", "kind": "collective", "op": "all_reduce",
                    "group": "dp", "inputs": ["x"],
                    "outputs": [{"name": "xr", "alias_of": "x"}]},
                   {"name": "w", "kind": "wait", "inputs": ["xr"],
                    "outputs": [{"name": "xw", "alias_of": "xr"}]}],
               "outputs": ["y", "xw"]}
        g = commsched.Graph.from_document(doc)
        self.assertIsNone(commsched.check_order(g))
        self.assertIsNone(commsched.check_order(g, ["r", "c", "w"]))
        self.assertIsNone(commsched.check_order(g, [0, 1, 2], races=False))
        for order in ([1, 0, 2], ["r", "w", "c"]):
            with self.assertRaises(commsched.Error) as e:
                commsched.check_order(g, order)
            self.assertEqual(e.exception.status, "EORDER")
            self.assertIn("runs before its dependency", str(e.exception))
        for bad in ([0, 1], [0, 1, 1], ["r", "c", "nope"]):
            with self.assertRaises(commsched.Error) as e:
                commsched.check_order(g, bad)
            self.assertEqual((e.exception.status, e.exception.path),
                             ("EINVAL", "order"))
        res = commsched.optimize(g, "raise_comms")
        self.assertIsNone(commsched.check_order(g, res.indices))
        self.assertIsNone(commsched.check_order(g, res.order))

    def test_registry(self):
        names = [n for n, _ in commsched.passes()]
        self.assertIn("sink_waits_iterative", names)
        for p in commsched.default_pipeline():
            self.assertIn(p, names)
        knobs = {n: d for n, d, _ in commsched.knobs()}
        self.assertEqual(knobs["reorder_iterative_peak_memory_budget"], "0.2")


class StatsMatchTheCli(unittest.TestCase):
    """The binding's pass statistics on a generated chain equal what
    `commsched optimize --stats=json` prints for the same run."""

    @classmethod
    def setUpClass(cls):
        cls.cli = _cli()
        if cls.cli is None:
            raise unittest.SkipTest("COMMSCHED_CLI not set and no "
                                    "tools/commsched next to the library")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "chain.json")
        subprocess.run([cls.cli, "generate", "chain", "--nodes", "2000",
                        "-o", cls.path], check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_both(self, passes, **knobs):
        """(the binding's PassStats list, the CLI's --stats=json list)."""
        r = commsched.optimize(commsched.Graph.load(self.path), passes,
                               **knobs)
        cmd = [self.cli, "optimize", self.path, "--passes", ",".join(passes),
               "--stats=json", "-o", os.devnull]
        for k, v in knobs.items():
            cmd += ["--set", "%s=%s" % (k, v)]
        cli = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                        text=True).stdout)
        self.assertEqual([p.name for p in r.stats], [p["pass"] for p in cli])
        return r.stats, cli

    def test_bucketing_pricing_counts(self):
        (b,), (c,) = self.run_both(["bucket_all_gather"], bucket_mode="cost",
                                   bucket_cap_mb=2000)
        self.assertEqual(b.kind, "bucket")
        self.assertGreater(b.merges_priced, 0)
        self.assertLessEqual(b.full_pricings, b.merges_priced)
        self.assertEqual(b.merges_priced, c["merges_priced"])
        self.assertEqual(b.full_pricings, c["full_pricings"])
        self.assertEqual(b.fake_edges_dropped, c["fake_edges_dropped"])
        self.assertEqual([(k.node, k.members, k.closed_by)
                          for k in b.buckets],
                         [(k["node"], k["members"], k["closed_by"])
                          for k in c["buckets"]])
        self.assertNotIn("collectives", c)
        self.assertEqual(b.overlap, ())
        self.assertIsNone(b.overlap_variant)

    def check_overlap(self, **knobs):
        (o,), (c,) = self.run_both(["overlap"], **knobs)
        self.assertEqual(o.kind, "overlap")
        self.assertGreater(len(o.overlap), 0)
        # The JSON writes the same figures without the arithmetic's
        # rounding (12 significant digits, 0 within 1e-9 of the comm time;
        # shares to 1e-9) and no limit as null; the binding has the doubles.
        def tidied(row):
            row = dict(row)
            comm = row["comm_ns"]
            for k in ("comm_ns", "exposed_before_ns", "exposed_after_ns"):
                v = row[k]
                row[k] = (0.0 if abs(v) <= 1e-9 * max(abs(comm), 1.0)
                          else float("%.12g" % v))
            for k in ("hidden_before", "hidden_after"):
                row[k] = round(row[k] * 1e9) / 1e9 + 0.0
            if row["limit"] == "none":
                row["limit"] = None
            return row
        self.assertEqual([tidied(dataclasses.asdict(row))
                          for row in o.overlap], c["collectives"])
        # the dataclass's fields are the JSON row's keys, in its order
        self.assertEqual([f.name for f in
                          dataclasses.fields(commsched.OverlapStats)],
                         list(c["collectives"][0]))
        self.assertEqual(o.overlap_variant, c["variant"])
        self.assertEqual(o.overlap_budget_bytes, c["budget_bytes"])
        self.assertEqual(o.overlap_candidates, c["candidates"])
        self.assertGreater(o.overlap_candidates, 0)
        self.assertEqual(o.overlap_time_budget_bytes, c["time_budget_bytes"])
        self.assertEqual(o.overlap_peak_time_before, c["peak_time_before"])
        self.assertEqual(o.overlap_peak_time_after, c["peak_time_after"])
        self.assertEqual(o.overlap_over_budget, c["over_budget"])
        self.assertEqual(o.overlap_binds, c["binds"])
        self.assertIn(o.overlap_binds, ("none", "step", "time",
                                        "step and time"))
        self.assertNotIn("merges_priced", c)
        self.assertEqual((o.merges_priced, o.full_pricings), (0, 0))
        return o

    def test_overlap_rows_variant_budget_candidates(self):
        o = self.check_overlap()
        self.assertIsInstance(o.overlap_budget_bytes, int)
        self.assertGreater(o.overlap_budget_bytes, 0)
        # both peaks budgeted by default: the time peak's too
        self.assertIsInstance(o.overlap_time_budget_bytes, int)
        self.assertLessEqual(o.overlap_peak_time_after,
                             o.overlap_time_budget_bytes)

    def test_overlap_without_a_budget(self):
        # overlap_peak_budget=inf: -1 in C, null in the JSON, None here
        o = self.check_overlap(overlap_peak_budget="inf")
        self.assertIsNone(o.overlap_budget_bytes)
        self.assertIsNone(o.overlap_time_budget_bytes)
        self.assertEqual(o.overlap_binds, "none")

    def test_overlap_per_step_model(self):
        # overlap_peak_model=step: no time budget, no time peaks
        o = self.check_overlap(overlap_peak_model="step")
        self.assertIsNone(o.overlap_time_budget_bytes)
        self.assertIsNone(o.overlap_peak_time_after)


class Errors(unittest.TestCase):
    def check(self, fn, status, message=None, path=None):
        """fn raises Error with this status (and message, path if given)."""
        with self.assertRaises(commsched.Error) as cm:
            fn()
        e = cm.exception
        self.assertEqual(e.status, status, str(e))
        if message is not None:
            self.assertEqual(str(e), message)
        if path is not None:
            self.assertEqual(e.path, path)
        self.assertTrue(e.text and e.text in str(e))
        return e

    def test_builder_errors_name_their_place(self):
        g = commsched.Graph()
        self.check(lambda: g.collective("x", "nope", "dp"), "ESCHEMA",
                   'nodes[0].op: unknown collective op "nope" (expected '
                   'all_reduce, all_gather, reduce_scatter, all_to_all, '
                   'broadcast, reduce, send, recv or barrier)',
                   path="nodes[0].op")
        g = commsched.Graph()
        g.add_input("a", 4)
        g.compute("c", inputs=["a"], outputs=[("b", 4)])
        g.compute("d", inputs=["b", "zz"], outputs=[("e", 4)])
        self.check(g.finish, "EGRAPH",
                   'nodes[1].inputs[1]: unknown buffer "zz"',
                   path="nodes[1].inputs[1]")

    def test_a_graph_that_failed_keeps_failing(self):
        # finish consumes the C builder even when it fails: every later use
        # raises the same error (never touches the freed builder)
        g = commsched.Graph()
        g.compute("a", inputs=["zz"], outputs=[("b", 1)])
        first = self.check(g.finish, "EGRAPH")
        for use in (g.finish, lambda: commsched.optimize(g),
                    lambda: commsched.simulate(g), lambda: g.nodes,
                    lambda: g.add_input("x", 1)):
            e = self.check(use, "EGRAPH")
            self.assertEqual(str(e), str(first))

    def test_file_errors_name_file_line_and_column(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write('{"format": "commsched-graph",\n "version": 1,,}\n')
            e = self.check(lambda: commsched.Graph.load(bad), "EPARSE")
            self.assertEqual((e.line, e.column), (2, 15))
            self.assertEqual(str(e), "%s:2:15: %s" % (bad, e.text))
            sem = os.path.join(d, "sem.json")
            with open(sem, "w") as f:
                json.dump({"format": "commsched-graph", "version": 1,
                           "nodes": [{"name": "a", "kind": "compute",
                                      "inputs": ["nowhere"]}]}, f)
            self.check(lambda: commsched.Graph.load(sem), "EGRAPH",
                       '%s: nodes[0].inputs[0]: unknown buffer "nowhere"'
                       % sem, path="nodes[0].inputs[0]")
        e = self.check(lambda: commsched.Graph.loads("[1, 2"), "EPARSE")
        self.assertTrue(str(e).startswith("<string>:1:"), str(e))

    def test_option_errors_name_the_option(self):
        g = six_node_step()
        e = self.check(lambda: commsched.optimize(g, "raise_comms,nope"),
                       "EINVAL", path="passes")
        self.assertTrue(str(e).startswith(
            'passes: unknown pass "nope" (known: '), str(e))
        for name, _ in commsched.passes():
            self.assertIn(name, str(e))
        # A misspelling gets the library's "did you mean", in Python too.
        self.check(lambda: commsched.optimize(g, "sink_waits,overlapp"),
                   "EINVAL",
                   'passes: unknown pass "overlapp" (did you mean '
                   '"overlap"?)', path="passes")
        self.check(lambda: commsched.optimize(
            g, reorder_iterative_peak_memory_budget="lots"), "EINVAL",
            'reorder_iterative_peak_memory_budget: bad value "lots" '
            '(expected a number from 0, at most 1000000, or inf)')
        # Inductor's config takes any float; a negative budget would make
        # the pass refuse every move: refused when set, naming the range.
        self.check(lambda: commsched.optimize(
            g, reorder_iterative_peak_memory_budget=-1), "EINVAL",
            'reorder_iterative_peak_memory_budget: bad value "-1" '
            '(expected a number from 0, at most 1000000, or inf)')
        self.check(lambda: commsched.optimize(g, frobnicate=1), "EINVAL",
                   path="frobnicate")
        self.check(lambda: commsched.optimize(g, device="tpu9"), "EINVAL",
                   path="device")
        self.check(lambda: commsched.optimize(g, cost_model="x"), "EINVAL",
                   'cost_model: bad value "x" (expected nccl or inductor)')
        with self.assertRaises(TypeError):
            commsched.optimize("graph.json")
        with self.assertRaises(commsched.Error):
            commsched.Graph().add_node("n", "kernel")
        with self.assertRaises(commsched.Error):
            commsched.Graph().compute("n", dtype="float7")
        with self.assertRaises(commsched.Error):
            commsched.Graph().add_input("huge", 1 << 70)


class Threads(unittest.TestCase):
    def test_different_graphs_in_parallel_threads(self):
        jobs = [(3 + i % 5, i) for i in range(16)]
        serial = {}
        for layers, seed in jobs:
            r = commsched.optimize(fsdp_like(layers, seed), verify=True)
            serial[seed] = (r.order, r.after)
        got, errors = {}, []

        def work(chunk):
            try:
                for _ in range(3):
                    for layers, seed in chunk:
                        r = commsched.optimize(fsdp_like(layers, seed),
                                               verify=True)
                        got.setdefault(seed, set()).add(
                            (tuple(r.order), r.after))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=(jobs[i::8],))
                   for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for seed, (order, after) in serial.items():
            self.assertEqual(got[seed], {(tuple(order), after)})

    def test_one_graph_from_several_threads(self):
        g = fsdp_like(6, 3).finish()
        budgets = [0.0, 0.1, 0.2, 0.5]
        want = {b: commsched.optimize(
            g, reorder_iterative_peak_memory_budget=b).order for b in budgets}
        errors = []

        def work(b):
            try:
                for _ in range(10):
                    r = commsched.optimize(
                        g, reorder_iterative_peak_memory_budget=b)
                    if r.order != want[b]:
                        errors.append((b, r.order))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=(b,))
                   for b in budgets * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class Layout(unittest.TestCase):
    # Structs the binding allocates and hands to C, and the row structs it
    # indexes as arrays (p.nodes[k], p.buckets[k], p.overlap[k]), must
    # match exactly; structs it only reads through one pointer need only
    # agree on the fields it mirrors (C may append fields, e.g. bucketing
    # stats).
    EXACT = {"commsched_error", "commsched_output_spec",
                 "commsched_node_spec", "commsched_node_stats",
                 "commsched_bucket_stats", "commsched_overlap_stats",
                 "commsched_import_group_size", "commsched_import_options"}

    def test_ctypes_structs_match_the_c_layout(self):
        exe = os.environ.get("COMMSCHED_ABI_LAYOUT")
        if not exe:
            self.skipTest("COMMSCHED_ABI_LAYOUT not set")
        c = json.loads(subprocess.check_output([exe]))
        self.assertEqual(set(c), set(_lib.STRUCTS))
        for name, struct in _lib.STRUCTS.items():
            if name in self.EXACT:
                self.assertEqual(_ctypes_sizeof(struct), c[name]["size"],
                                 name)
            else:
                self.assertLessEqual(_ctypes_sizeof(struct),
                                     c[name]["size"], name)
            py = {f[0]: getattr(struct, f[0]).offset
                  for f in struct._fields_}
            self.assertEqual(py, c[name]["fields"], name)


def _ctypes_sizeof(struct):
    import ctypes
    return ctypes.sizeof(struct)


class Loading(unittest.TestCase):
    def test_missing_library_is_a_clear_error(self):
        env = dict(os.environ, COMMSCHED_LIBRARY="/nonexistent/libx.so")
        p = subprocess.run(
            [sys.executable, "-c", "import commsched; commsched.version()"],
            env=env, capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("COMMSCHED_LIBRARY", p.stderr)


if __name__ == "__main__":
    unittest.main()
