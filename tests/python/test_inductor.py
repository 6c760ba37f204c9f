"""commsched.inductor.reorder on stand-in scheduler nodes built from
Inductor's own test scenarios (reference/inductor-overlap-passes.md §6,
S1-S6), with the orders those tests expect. PyTorch cannot be installed
here: fake_inductor.py provides objects exposing exactly the attributes
the adapter documents, and a stand-in torch._inductor.utils."""

import gc
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import commsched  # noqa: E402
import commsched.inductor as ci  # noqa: E402
import fake_inductor as fi  # noqa: E402
from fake_inductor import Step  # noqa: E402

RCPPM = "reorder_communication_preserving_peak_memory"
SINK = "sink_waits_iterative"
PRED = dict(contains_collective=fi.contains_collective,
            contains_wait=fi.contains_wait)


def reorder(step, passes=None, **kw):
    """Runs the adapter with invariant checks on; returns node names."""
    kw = dict(PRED, **kw)
    out = ci.reorder(step.snodes, passes=passes, verify=True, **kw)
    # the same objects come back, each once
    assert sorted(map(id, out)) == sorted(map(id, step.snodes))
    return step.names(out)


def s1():
    """test_sink_waits: ar=AR(a); w=W(ar); b=mm(a,a); out=mm(w,b)."""
    st = Step()
    st.collective("ar", "a")
    st.wait("w", "ar")
    st.mm("b", "a", "a")
    st.mm("out", "w", "b")
    return st


def s2(in_place):
    """test_raise_comms: b=mm(a,a); c=relu(b); d=mm(c,c); e=AR(b); we=W(e);
    out=mm(d,we). In place (Inductor's all_reduce_), e overwrites b, so the
    scheduler orders it after b's reader c with a WeakDep."""
    st = Step()
    st.mm("b", "a", "a")
    st.pointwise("c", "b")
    st.mm("d", "c", "c")
    if in_place:
        st.collective("e", "b", kernel=fi.ALL_REDUCE_, in_place=True,
                      weak=["c"])
    else:
        st.collective("e", "b")
    st.wait("we", "e")
    st.mm("out", "d", "we")
    return st


def s3():
    """aten test_sink_waits_raise_comms; c10d ops (the wait too) and mm cost
    1.0, relu 0.1."""
    st = Step()
    st.mm("mm", "a", "a", runtime=1)
    st.pointwise("relu", "mm", runtime=0.1)
    st.mm("mm_1", "relu", "relu", runtime=1)
    st.collective("ar", "mm", runtime=1)
    st.pointwise("relu_1", "mm_1", runtime=0.1)
    st.mm("mm_2", "relu_1", "relu_1", runtime=1)
    st.wait("w", "ar", runtime=1)
    st.mm("mm_3", "w", "mm_2", runtime=1)
    return st


def s4():
    """test_reorder_compute_for_overlap: collective 100, wait 0, extern
    kernel 5, other 1."""
    st = Step()
    st.collective("ar", "a")
    st.mm("mm_g", "a", "a")
    st.pointwise("relu", "a")
    st.mm("mm_d", "relu", "relu")
    st.wait("w_ar", "ar")
    st.pointwise("mul", "mm_d", "relu", "w_ar")
    st.collective("fr", "mul")
    st.wait("w_fr", "fr")
    st.pointwise("add", "mm_d", "w_ar", "w_fr")
    st.mm("mm_e", "add", "mm_g")
    return st


def s5():
    """test_inductor_default_comms_ordering: AR0..AR2 on three groups,
    waits in reverse, no compute."""
    st = Step()
    for i in range(3):
        st.collective("AR%d" % i, "x", runtime=10)
    for i in (2, 1, 0):
        st.wait("W%d" % i, "AR%d" % i)
    return st


def s6():
    """test_reorder_respects_wait_dep: ag0=AG(inp); w0=W(ag0); ag1=AG(w0);
    w1=W(ag1). ag1 gathers ag0's 128 bytes over the default group's 2
    ranks (docs/FORMAT.md, "Collective sizes")."""
    st = Step()
    st.collective("ag0", "inp", kernel=fi.ALL_GATHER, runtime=10, size=128)
    st.wait("w0", "ag0")
    st.collective("ag1", "w0", kernel=fi.ALL_GATHER, runtime=10, size=256)
    st.wait("w1", "ag1")
    return st


GROUP = {"AR0": "g1", "AR1": "g2", "AR2": "g3"}


class Scenarios(unittest.TestCase):
    def test_s1_sink_waits(self):
        self.assertEqual(reorder(s1(), ["sink_waits"]),
                         ["ar", "b", "w", "out"])
        self.assertEqual(reorder(s1(), [SINK]), ["ar", "b", "w", "out"])

    def test_s2_raise_comms(self):
        self.assertEqual(reorder(s2(False), ["raise_comms"]),
                         ["b", "e", "c", "d", "we", "out"])

    def test_s2_in_place_all_reduce_keeps_war_order(self):
        # Inductor's FileCheck: mm, relu, all_reduce_, mm, wait, mm
        self.assertEqual(reorder(s2(True), ["raise_comms"]),
                         ["b", "c", "e", "d", "we", "out"])

    def test_s3_sink_and_raise(self):
        self.assertEqual(reorder(s3(), ["sink_waits", "raise_comms"]),
                         ["mm", "ar", "relu", "mm_1", "relu_1", "mm_2", "w",
                          "mm_3"])
        # the aten scheduler's exact order, from the iterative pair with
        # runtime estimations
        self.assertEqual(
            reorder(s3(), [SINK, RCPPM],
                    sink_iterative_use_runtime_estimations=True,
                    reorder_iterative_use_runtime_estimations=True,
                    reorder_iterative_extra_comm_comp_overlap=0),
            ["mm", "relu", "ar", "mm_1", "relu_1", "mm_2", "w", "mm_3"])

    def test_s4_reorder_compute_for_overlap(self):
        self.assertEqual(reorder(s4(), ["reorder_compute_for_overlap"]),
                         ["ar", "relu", "mm_d", "mm_g", "w_ar", "mul", "fr",
                          "w_fr", "add", "mm_e"])

    def test_s5_collective_order(self):
        def group(sn):
            return GROUP[sn.get_name()]
        # Inductor's safe setting keeps the collective order
        self.assertEqual(
            reorder(s5(), [RCPPM], group_of=group,
                    reorder_iterative_unsafe_collectives_reorder=False),
            ["AR0", "AR1", "AR2", "W2", "W1", "W0"])
        # its default (unsafe reorder on) reverses them, as the seed does
        self.assertEqual(reorder(s5(), [RCPPM], group_of=group),
                         ["AR2", "AR1", "AR0", "W2", "W1", "W0"])

    def test_s6_wait_dependency_blocks_motion(self):
        g = ci.to_graph(s6().snodes, **PRED)
        r = commsched.optimize(g, ["sink_waits", RCPPM])
        self.assertEqual(r.order, ["ag0", "w0", "ag1", "w1"])
        rows = r.stats[1].nodes
        self.assertEqual([(x.node, x.moves) for x in rows],
                         [("ag0", 0), ("ag1", 0)])
        self.assertTrue(rows[1].limiting_factor.startswith(
            "data dependency detected"))

    def test_default_pipeline(self):
        # Inductor's recommended list: the wait of S1 sinks past b
        self.assertEqual(reorder(s1()), ["ar", "b", "w", "out"])


class Mapping(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def test_reads_only_the_documented_attributes(self):
        fi.ACCESSED.clear()
        st = s2(True)
        grouped = fi.GroupedSchedulerNode("grp", [st.snodes[2]])
        snodes = st.snodes[:2] + [grouped] + st.snodes[3:]
        ci.reorder(snodes, **PRED)
        attrs = {a.split(".", 1)[1] for a in fi.ACCESSED}
        allowed = {"get_name", "get_outputs", "get_buffer_names",
                   "get_operation_names", "unmet_dependencies",
                   "get_estimated_runtime", "node", "snodes", "mpi_buffer",
                   "read_writes", "estimate_flops", "get_mutations"}
        self.assertTrue(attrs <= allowed, attrs - allowed)
        self.assertNotIn("ancestors", attrs)

    def test_default_predicates_come_from_torch_inductor_utils(self):
        remove = fi.install_fake_torch()
        try:
            out = ci.reorder(s1().snodes, passes=["sink_waits"])
            self.assertEqual([s.get_name() for s in out],
                             ["ar", "b", "w", "out"])
        finally:
            remove()

    def test_without_torch_the_predicates_are_required(self):
        if "torch" in sys.modules:
            self.skipTest("a torch module is loaded")
        with self.assertRaises(commsched.Error) as cm:
            ci.reorder(s1().snodes)
        self.assertIn("contains_collective", str(cm.exception))

    def test_graph_mapping(self):
        st = s2(True)
        g = ci.to_graph(st.snodes, graph_inputs={"a": 64, "primals_1": 8},
                        graph_outputs=["buf5"], **PRED)
        self.assertEqual(g.nodes, ["b", "c", "d", "e", "we", "out"])
        self.assertEqual([g.kind(n) for n in g.nodes],
                         ["compute", "compute", "compute", "collective",
                          "wait", "compute"])
        r = commsched.optimize(g, "none")
        # Inductor estimates in milliseconds
        self.assertEqual(r.runtime_ns["e"], 100.0e6)
        self.assertEqual(r.runtime_ns["b"], 5.0e6)
        # freeable input a (64 bytes) is the baseline
        self.assertEqual(r.before.memory_baseline, 64)

    def test_collector_paused_while_reading_the_nodes(self):
        # buffer_size is called for every output, inside document()
        seen = []

        def size(buf):
            seen.append(gc.isenabled())
            return 8
        st = s2(True)
        kw = dict(graph_inputs={"a": 64, "primals_1": 8},
                  graph_outputs=["buf5"], **PRED)
        self.assertTrue(gc.isenabled())
        ci.document(st.snodes, buffer_size=size, **kw)
        self.assertTrue(seen and not any(seen))
        self.assertTrue(gc.isenabled())       # restored

        def fails(buf):
            raise RuntimeError("no size")
        with self.assertRaises(RuntimeError):
            ci.document(st.snodes, buffer_size=fails, **kw)
        self.assertTrue(gc.isenabled())       # restored on an error too
        gc.disable()
        try:
            ci.document(st.snodes, **kw)
            self.assertFalse(gc.isenabled())  # a caller's choice is kept
        finally:
            gc.enable()

    def test_nodes_read_in_a_thread_of_their_own(self):
        # document() reads the nodes in a new thread (a fresh stack: see
        # _on_fresh_stack) in the caller's contextvars context; what it
        # raises reaches the caller as itself
        import contextvars
        import threading
        patch = contextvars.ContextVar("patch", default="unset")
        seen = []

        def size(buf):
            seen.append((threading.current_thread(), patch.get()))
            return 8
        st = s2(True)
        kw = dict(graph_inputs={"a": 64, "primals_1": 8},
                  graph_outputs=["buf5"], **PRED)
        token = patch.set("caller's")
        try:
            ci.document(st.snodes, buffer_size=size, **kw)
        finally:
            patch.reset(token)
        self.assertTrue(seen)
        self.assertEqual({v for _, v in seen}, {"caller's"})
        workers = {t for t, _ in seen}
        self.assertEqual(len(workers), 1)
        self.assertIsNot(workers.pop(), threading.current_thread())

        class Odd(Exception):
            pass

        def fails(buf):
            raise Odd("from the reader")
        with self.assertRaises(Odd) as raised:
            ci.document(st.snodes, buffer_size=fails, **kw)
        self.assertEqual(str(raised.exception), "from the reader")

    def test_runtimes_inductor_keeps_zero_estimates(self):
        # every node estimated 0 (Inductor on CPU): by default commsched's
        # cost model prices them (a collective from its bytes; the
        # stand-ins carry no flops); runtimes="inductor" keeps the 0s
        st = s4()
        for sn in st.snodes:
            sn._runtime = 0.0
        priced = commsched.optimize(ci.to_graph(st.snodes, **PRED), "none")
        self.assertGreater(priced.runtime_ns["ar"], 0)
        exact = commsched.optimize(
            ci.to_graph(st.snodes, runtimes="inductor", **PRED), "none")
        self.assertEqual(set(exact.runtime_ns.values()), {0.0})
        # non-zero estimates are Inductor's either way (ms -> ns)
        st = s4()
        exact = commsched.optimize(
            ci.to_graph(st.snodes, runtimes="inductor", **PRED), "none")
        self.assertEqual(exact.runtime_ns["ar"], 100.0e6)
        self.assertEqual(exact.runtime_ns["relu"], 1.0e6)
        # reorder and make_pass take it; a bad value is located
        self.assertEqual(reorder(st, ["reorder_compute_for_overlap"],
                                 runtimes="inductor"),
                         reorder(st, ["reorder_compute_for_overlap"]))
        with self.assertRaises(commsched.Error) as cm:
            ci.make_pass(runtimes="model")(st.snodes)
        self.assertEqual(cm.exception.path, "runtimes")

    def test_in_place_collective_keeps_its_input_alive(self):
        # e = all_reduce_(b) mutates b; we = wait(e). b's 16 bytes must
        # stay live until out reads the wait's result (memory.py folds the
        # mutations into b): 16 + 100 + 1 at out, not 100 + 1.
        st = Step()
        st.mm("b", "a", "a")
        st.collective("e", "b", kernel=fi.ALL_REDUCE_, in_place=True)
        st.wait("we", "e")
        st.size = 100
        st.pointwise("big", "x")
        st.size = 1
        st.pointwise("out", "we", "big")
        r = commsched.optimize(ci.to_graph(st.snodes, **PRED), "none")
        self.assertEqual(r.before.peak_memory_step, 117)

    def test_grouped_in_place_collective_writes_its_own_buffer(self):
        # test_grouped_scheduler_node: [p = f(a); all_reduce_(p)] grouped,
        # so the buffer reduced in place (p) is the group's own output and
        # its only data input is the graph input a. The collective's
        # outputs alias p (not a): mul may read a while it is in flight,
        # and p stays live until mm reads the wait's result.
        S, B = fi.SchedulerNode, fi.SchedulerBuffer
        p = S("p", fi.ComputedBuffer(), [B("buf0", 16)],
              [fi.MemoryDep("a")], 1)
        ar = S("ar", fi._CollectiveKernel(fi.ALL_REDUCE_),
               [B("buf1", 0), B("buf2", 0, ["buf0"])],
               [fi.StarDep("buf0")], 100)
        grp = fi.GroupedSchedulerNode("p_ar", [p, ar])
        w = S("w", fi._WaitKernel(fi.WAIT),
              [B("buf3", 0), B("buf4", 0, ["buf0"])], [fi.StarDep("buf2")], 0)
        mul = S("mul", fi.ComputedBuffer(), [B("buf5", 16)],
                [fi.MemoryDep("a")], 1)
        mm = S("mm", fi.ExternKernelOut(fi.MM), [B("buf6", 16)],
               [fi.MemoryDep("buf5"), fi.MemoryDep("buf4")], 5)
        kw = dict(PRED, graph_inputs={"a": 16}, graph_outputs=["buf6"])
        g = ci.to_graph([grp, mul, w, mm], **kw)   # mul beside the reduce
        r = commsched.optimize(g, "none")
        # a (16, freeable) until mul reads it, p until mm: 48 at mul and
        # at mm (read as a's alias, p was freed unread: 32)
        self.assertEqual(r.before.peak_memory_step, 3 * 16)
        out = ci.reorder([grp, w, mul, mm], passes=["sink_waits"], **kw)
        self.assertEqual([s.get_name() for s in out],
                         ["p_ar", "mul", "w", "mm"])

    def multi_output(self, kernel, parts, size=16):
        """A multi-output kernel `k` (its buffer buf_k: MultiOutputLayout,
        memory.py's alloc = the parts' total, free 0) reading `a`, and one
        MultiOutput extraction per part (alloc 0, free = its size)."""
        S, B = fi.SchedulerNode, fi.SchedulerBuffer
        total = size * len(parts)
        k = S("k", kernel, [B("buf_k", total, size_free=0,
                               node=fi.MultiOutputKernelBuffer())],
              [fi.StarDep("a")], 100)
        ext = [S("e%d" % i, fi.MultiOutput(), [B(p, 0, size_free=size)],
                 [fi.StarDep("buf_k")], 0) for i, p in enumerate(parts)]
        return k, ext

    def test_coalesced_collective_extractions_are_waited_views(self):
        # test_reorder_peak_memory: buf1 = reduce_scatter_tensor_coalesced
        # ([...]); buf2 = buf1[0]; buf3 = buf1[1] (MultiOutputs, before
        # the waits); wait(buf2); ...; wait(buf3). The parts are the
        # collective's outputs, the extractions only follow it, and each
        # wait completes the collective and follows its extraction.
        S, B = fi.SchedulerNode, fi.SchedulerBuffer
        k, (e0, e1) = self.multi_output(fi._CollectiveKernel(
            "torch.ops._c10d_functional.reduce_scatter_tensor_coalesced."
            "default"), ["p0", "p1"])
        w0 = S("w0", fi._WaitKernel(fi.WAIT), [B("w0o", 0, ["p0"])],
               [fi.StarDep("p0")], 0)
        mid = S("mid", fi.ComputedBuffer(), [B("mid_o", 64)],
                [fi.MemoryDep("a")], 1)
        w1 = S("w1", fi._WaitKernel(fi.WAIT), [B("w1o", 0, ["p1"])],
               [fi.StarDep("p1")], 0)
        use = S("use", fi.ComputedBuffer(), [B("out", 16)],
                [fi.MemoryDep("w0o"), fi.MemoryDep("w1o")], 1)
        snodes = [k, e0, e1, w0, mid, w1, use]
        kw = dict(PRED, graph_inputs={"a": 64}, graph_outputs=["out"])
        path = os.path.join(self.tmp, "coalesced.json")
        ci.export(snodes, path, **kw)
        with open(path) as fh:
            nodes = {n["name"]: n for n in json.load(fh)["nodes"]}
        self.assertEqual([o["name"] for o in nodes["k"]["outputs"]],
                         ["buf_k", "p0", "p1"])
        self.assertEqual([o.get("size") for o in nodes["k"]["outputs"]],
                         [0, 16, 16])
        self.assertEqual(nodes["e0"].get("inputs", []), [])
        self.assertEqual(nodes["e0"]["after"], ["k"])
        self.assertEqual(nodes["w0"]["inputs"], ["p0"])
        self.assertEqual(nodes["w0"]["after"], ["e0"])
        # memory.py's count: a (64) until mid, the parts (32) from k, mid
        r = commsched.optimize(ci.to_graph(snodes, **kw), "none")
        self.assertEqual(r.before.peak_memory_step, 64 + 32 + 64)
        # the waits sink past mid; the extractions stay between k and them
        out = ci.reorder(snodes, passes=["sink_waits"], verify=True, **kw)
        self.assertEqual([sn.get_name() for sn in out],
                         ["k", "e0", "e1", "mid", "w0", "w1", "use"])

    def test_multi_output_kernel_parts_freed_one_by_one(self):
        # torch.linalg.qr's FallbackKernel: q, r = k(a)[0], k(a)[1]. As
        # memory.py counts it: the kernel allocates both parts, each is
        # freed after its own last reader (r right away, q after use).
        S, B = fi.SchedulerNode, fi.SchedulerBuffer
        k, (eq, er) = self.multi_output(fi.FallbackKernel("qr"),
                                        ["q", "r"])
        big = S("big", fi.ComputedBuffer(), [B("big_o", 100)],
                [fi.MemoryDep("q")], 1)
        snodes = [k, eq, er, big]   # eq, er: e0, e1
        kw = dict(PRED, graph_inputs={"a": 0}, graph_outputs=["big_o"])
        g = ci.to_graph(snodes, **kw)
        r = commsched.optimize(g, "none")
        # r (16) dies at its extraction: q (16) + big (100) at big
        self.assertEqual(r.before.peak_memory_step, 116)
        path = os.path.join(self.tmp, "qr.json")
        g.save(path)
        with open(path) as fh:
            nodes = {n["name"]: n for n in json.load(fh)["nodes"]}
        self.assertEqual(nodes["big"]["inputs"], ["q"])
        self.assertEqual(nodes["big"]["after"], ["e0"])
        self.assertEqual(nodes["e1"]["inputs"], ["buf_k", "r"])

    def test_sync_collective_and_gemm_flags(self):
        st = Step()
        st.collective("a2a", "x", kernel=fi.SHARD_DIM_ALLTOALL)
        st.pointwise("use", "a2a")   # sync: read without a wait
        g = ci.to_graph(st.snodes, **PRED)
        self.assertEqual(g.nodes, ["a2a", "use"])
        # an async collective read without a wait is a located error
        st = Step()
        st.collective("ar", "x")
        st.pointwise("use", "ar")
        with self.assertRaises(commsched.Error) as cm:
            ci.reorder(st.snodes, **PRED)
        self.assertEqual(cm.exception.status, "EGRAPH")
        self.assertEqual(cm.exception.path, "nodes[1].inputs[0]")
        self.assertIn("only its wait may read it", str(cm.exception))

    def test_fake_deps_from_global_ordering(self):
        # decide_global_ordering_of_comms chains collectives with fake
        # WeakDeps; RCPPM ignores them (the seed's _is_fake_dep) and still
        # reverses S5; a fake dep on a later node is dropped.
        st = s5()
        ar1, ar2 = st.snodes[1], st.snodes[2]
        ar1.unmet_dependencies.add(fi.WeakDep("buf0", "buf1", is_fake=True))
        ar2.unmet_dependencies.add(fi.WeakDep("buf1", "buf2", is_fake=True))
        st.snodes[0].unmet_dependencies.add(
            fi.WeakDep("buf5", "buf0", is_fake=True))
        out = ci.reorder(st.snodes, passes=[RCPPM],
                         group_of=lambda s: GROUP[s.get_name()], **PRED)
        self.assertEqual([s.get_name() for s in out],
                         ["AR2", "AR1", "AR0", "W2", "W1", "W0"])
        # the heap scheduler respects them
        out = ci.reorder(st.snodes, passes=["raise_comms"],
                         group_of=lambda s: GROUP[s.get_name()], **PRED)
        names = [s.get_name() for s in out]
        self.assertLess(names.index("AR0"), names.index("AR1"))
        self.assertLess(names.index("AR1"), names.index("AR2"))

    def test_as_an_inductor_pass_list(self):
        # what reorder_compute_and_comm_for_overlap does with the config list
        passes = [ci.make_pass(passes=["sink_waits"], **PRED),
                  ci.make_pass(passes=[RCPPM], **PRED)]
        order = s4().snodes
        for p in passes:
            self.assertTrue(callable(p))
            order = p(order)
        self.assertEqual(len(order), 10)
        self.assertEqual(ci.reorder([], **PRED), [])

    def test_rewriting_passes_are_refused(self):
        # bucketing builds new nodes, which Inductor's list cannot hold
        with self.assertRaises(commsched.Error) as cm:
            ci.reorder(s5().snodes, passes=["bucket_all_reduce", RCPPM],
                       **PRED)
        self.assertEqual(cm.exception.path, "passes")
        self.assertIn("bucket_all_reduce", str(cm.exception))

    def test_bad_knob_is_located(self):
        with self.assertRaises(commsched.Error) as cm:
            ci.reorder(s1().snodes, no_such_knob=1, **PRED)
        self.assertEqual(cm.exception.path, "no_such_knob")


def layered(layers):
    """An FSDP-like step of ``layers`` layers on stand-ins: each layer's
    weight shard (a graph input of its own) all-gathered, waited, used by a
    matmul with a bias (another input), followed by a pointwise kernel
    reading a third: a graph input per node, as a large program's
    parameters and saved activations make them."""
    st = Step()
    prev = "x"
    for i in range(layers):
        st.collective("ag%d" % i, "w%d" % i, kernel=fi.ALL_GATHER)
        st.wait("wt%d" % i, "ag%d" % i)
        st.mm("mm%d" % i, prev, "wt%d" % i, "b%d" % i)
        st.pointwise("pw%d" % i, "mm%d" % i, "s%d" % i)
        prev = "pw%d" % i
    return st


class Growth(unittest.TestCase):
    def test_adapter_grows_linearly(self):
        """Reading 16x the nodes costs well under 16 x 2 = 32x the time
        (the best of three runs each): a return to O(n^2) anywhere in the
        adapter (a list scanned per dependency or per graph input, a
        lookup redone per reader) makes it 100x or more. A bound on
        growth, not on speed."""
        import time

        def best(step):
            t = float("inf")
            for _ in range(3):
                t0 = time.process_time()
                doc = ci.document(step.snodes, graph_inputs={}, **PRED)
                t = min(t, time.process_time() - t0)
            self.assertEqual(len(doc["nodes"]), len(step.snodes))
            return t
        small, big = layered(250), layered(4000)  # 1,000 and 16,000 nodes
        ratio = best(big) / max(best(small), 1e-9)
        self.assertLess(ratio, 32.0, "16x the nodes took %.1fx the time"
                        % ratio)


if __name__ == "__main__":
    unittest.main()
