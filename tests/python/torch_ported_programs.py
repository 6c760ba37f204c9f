"""The programs of PyTorch's own tests of its comm/compute reorder passes,
ported to CPU and torch 2.13 for tests/python/test_torch_ported.py (which
runs them; this module only describes them).

Read with the project's search tool in pytorch/pytorch (BSD-3-Clause):

- test/distributed/test_compute_comm_reordering.py at commit
  009296c99879ced326f209acc6c3cb57c45954da (Inductor's scheduler-node
  passes: sink_waits, raise_comms, reorder_compute_for_overlap and its
  custom-estimate variant, the GroupedSchedulerNode test, the default
  ordering of comms);
- test/distributed/test_inductor_collectives.py: test_reorder_peak_memory,
  test_reorder_peak_memory_bucketed, test_reorder_respects_wait_dep and
  their sibling test_inductor_all_gather_coalesced. The index holds several
  versions of this file and names no commit for the one these tests are in
  (its file id 116218799, 102,418 characters, importing
  _reorder_communication_preserving_peak_memory_internal, ReorderInfo and
  sink_waits_iterative from torch._inductor.comms); the versions it does
  name (000f488bac901f592cae91dbaa39d78238cf5a05,
  d70310445766dc395df465d8538308449efde925) predate these tests;
- test/distributed/test_aten_comm_compute_reordering.py at commit
  0473dd5cf7e7a1ef406442a1008362daf8b83796 (torch's FX-level overlap
  scheduler, schedule_overlap_bucketing, with and without its bucketing).

The programs (the functions compiled) are those tests' programs, written
out again here with the test each comes from; the checks they make are
kept as `filecheck` steps. What changed to run them on CPU with torch
2.13.0, and why:

- FileCheck names: CPU kernels are ``cpp_fused_<ops>_<k>(...)`` where the
  GPU's are ``triton_poi_fused_<ops>_<k>.run(...)``, so
  ``triton_poi_fused_X.`` became ``cpp_fused_X(`` and a ``.run(args, 16``
  (a launch with its element count) became ``(args)``; ``empty_strided``
  still prefixes CPU's ``empty_strided_cpu``.
- Two ranks of gloo instead of NCCL (the tests' world size is 2 too), and
  the inputs are the tests' (``torch.ones(...) + rank`` where they add the
  rank).
- torch 2.13 calls ``aten_distributed_optimizations.
  custom_runtime_estimation`` as ``f(node, override_size)``; the test's
  estimator ``f(node, compute_multiplier=1.0)`` would take the size as its
  multiplier, so it is wrapped (``aten_estimate``). The FX scheduler asks
  triton for a roofline time of every node the estimator leaves alone
  (None); CPU has no triton, so those nodes take 0 ms (the test's
  estimator times only the collectives and matmuls anyway).
- test_reorder_peak_memory_bucketed: torch 2.13 sizes an all-gather bucket
  by the larger of its input and output (fx_passes/bucketing.py,
  greedy_bucket_collective_by_mb), so under the test's 2 MB cap each of its
  all-gathers (1 MiB in, 2 MiB out on 2 ranks) is alone and nothing is
  bucketed; a 4 MB all-gather cap gives the two buckets of two its
  FileCheck counts (``all_gather_into_tensor_out`` twice). The
  reduce-scatters keep the test's 2 MB. Its bucket modes ``all`` and
  ``all_custom_ops`` are torch 2.13's ``bucket_*_bucket_mode`` ``default``
  and ``custom_ops``. Left out, as GPU-only: ``runtime_estimations_mms_
  benchmark`` (benchmarks matmuls on the device) and
  ``runtime_estimations_align_across_all_distributed_ranks``.
- test_grouped_scheduler_node runs no reorder pass in PyTorch (it checks
  fusion across a GroupedSchedulerNode); here torch's ``sink_waits``,
  ``reorder_compute_for_overlap`` and ``sink_waits_iterative`` also run on
  it, in turn, so that commsched's passes of those names meet the grouped
  node. The aten file's copy of that test is skipped upstream ("Logic not
  yet implemented") and is not ported.
- torch 2.13's schedule_overlap_bucketing pre-buckets FSDP-like
  collectives before it schedules (``pre_bucketing_fsdp_collectives``, on
  by default); the aten file's tests check the scheduler's own bucketing
  decisions (test_no_bucketing_with_dependent_hiding_nodes: "ag1 and ag2
  can't be bucketed"), which the pre-bucketing overrides, so it is off.
- What torch 2.13 does not do yet (each asserted, beside the test's
  FileCheck failing on it, so a torch upgrade shows): it buckets no
  all-gathers of different dtypes (test_multidtype_bucketing: 3 waits, not
  1), and in test_bucket_exposed_with_hidden_single_overlap it leaves the
  hidden all-gather alone and buckets the two exposed ones (2 waits, not
  1).
- test_reorder_compute_for_overlap (Inductor's own estimates) expects two
  matmuls under the first all-reduce, which GPU estimates give; on CPU
  Inductor estimates 0 for every node and torch's pass places one, so its
  code misses the test's FileCheck. Checked instead: commsched's pass of
  the same name with its cost model, which meets it.
- Kept although the aten file's test_overlap_scheduling_via_config checks
  the same program as its test_sink_waits: it goes through the config
  switch (``aten_via_config``). Not ported: test_nccl_heuristics (tables,
  not a program).

Beside PyTorch's programs, one of ours (``ours_all_reduce_coalesced``):
the third coalesced op, all_reduce_coalesced, which none of those tests
compiles.
"""
import dataclasses
import functools
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

OPS = torch.ops
WORLD = 2
TRS = {"tag": "", "ranks": list(range(WORLD)), "group_size": WORLD}
RANKS = list(range(WORLD))

SRC_CCR = "test_compute_comm_reordering.py"
SRC_IC = "test_inductor_collectives.py"
SRC_ATEN = "test_aten_comm_compute_reordering.py"


@dataclasses.dataclass
class Program:
    key: str
    source: str               # "<file>::<test>"
    fn: Callable
    inputs: Callable          # rank -> tuple of tensors
    level: str                # "inductor": scheduler-node passes; "aten": FX
    kwargs: dict = dataclasses.field(default_factory=dict)
    # "inductor": torch's passes, in the order of the test's config list
    # (names in torch._inductor.comms); "aten": ignored
    passes: tuple = ()
    config: dict = dataclasses.field(default_factory=dict)
    # FileCheck steps on torch's generated code ("inductor") or on the FX
    # graph torch's overlap scheduler leaves ("aten"), as the test checks
    filecheck: tuple = ()
    # "aten" only: FileCheck steps that state the test's intent in a form
    # any valid order of the same (unbucketed) ops can be held to, applied
    # to the FX graph commsched's FX pass leaves
    fx_filecheck: tuple = ()
    # the test's expected post-grad graph text (assertExpectedInline)
    expected_graph: str = ""
    # the test's node_stats checks: {"count": n, "moves": m, ...}
    stats: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)


def ones_plus_rank(*shapes):
    return lambda rank: tuple(torch.ones(*s) + rank for s in shapes)


def scaled(*specs):
    """specs: (shape, scale, dtype); the tests' torch.ones(...) * k."""
    return lambda rank: tuple(torch.ones(*s, dtype=dt) * k
                              for s, k, dt in specs)


# ---------------------------------------------------------------------------
# test_compute_comm_reordering.py (and the aten file, which reuses them)

def sink_waits_fn(a):
    ar = funcol.all_reduce(a, "sum", "0")
    b = torch.matmul(a, a)
    return torch.matmul(ar, b)


def raise_comms_fn(a):
    b = torch.matmul(a, a)
    c = torch.relu(b)
    d = torch.matmul(c, c)
    e = funcol.all_reduce(b, "sum", "0")
    return torch.matmul(d, e)


def sink_waits_raise_comms_fn(a, *, tag, ranks, group_size):
    b = torch.matmul(a, a)
    c = torch.relu(b)
    d = torch.matmul(c, c)
    e = funcol.all_reduce(b, "sum", "0")
    f = torch.relu(d)
    g = torch.matmul(f, f)
    return torch.mm(e, g)


def reorder_compute_fn(a, *, tag, ranks, group_size):
    ar = funcol.all_reduce(a, "sum", ranks, tag)
    g = torch.matmul(a, a)
    c = torch.relu(a)
    d = torch.matmul(c, c)
    f = d * c * ar
    fr = funcol.all_reduce(f, "sum", ranks, tag)
    e = torch.matmul(d + ar + fr, g)
    return (e,)


def grouped_fn(a, *, tag, ranks, group_size):
    add = a + a
    div = add / a
    ar = funcol.all_reduce(div, "sum", ranks, tag)
    mul = a * a
    return (torch.matmul(mul, ar),)


def default_ordering_fn(g1, g2, g3, *, tag, ranks, group_size):
    # three all-reduces waited in the reverse order
    h1 = OPS.c10d_functional.all_reduce(g1, "avg", tag, ranks, group_size)
    h2 = OPS.c10d_functional.all_reduce(g2, "avg", tag, ranks, group_size)
    h3 = OPS.c10d_functional.all_reduce(g3, "avg", tag, ranks, group_size)
    r3 = OPS._c10d_functional.wait_tensor.default(h3)
    r2 = OPS._c10d_functional.wait_tensor.default(h2)
    r1 = OPS._c10d_functional.wait_tensor.default(h1)
    return r3, r2, r1


def reorder_compute_estimate(snode):
    """test_reorder_compute_for_overlap_custom_runtime_estimation's cost
    model (estimate_op_runtime): collectives 100, waits 0, extern kernels
    5, everything else 1."""
    from torch._inductor import ir
    if isinstance(snode.node, ir._CollectiveKernel):
        return 100
    if isinstance(snode.node, ir._WaitKernel):
        return 0
    if isinstance(snode.node, ir.ExternKernel):
        return 5
    return 1


def group_all_reduce_with_its_input(snodes):
    """test_grouped_scheduler_node's _pre_fusion_custom_pass: the one
    in-place all_reduce_ and the node producing its input become one
    GroupedSchedulerNode, first in the list."""
    from torch._inductor import ir, scheduler
    by_name = {sn.node.name: sn for sn in snodes}
    ars = [sn for sn in snodes if isinstance(sn.node, ir._CollectiveKernel)
           and sn.node.op_overload ==
           torch.ops._c10d_functional.all_reduce_.default]
    assert len(ars) == 1, ars
    feeds = [by_name[x.name] for x in ars[0].node.inputs]
    assert len(feeds) == 1, feeds
    group = scheduler.GroupedSchedulerNode.create([feeds[0], ars[0]])
    return [group] + [sn for sn in snodes if sn not in group.snodes]


# ---------------------------------------------------------------------------
# test_inductor_collectives.py

def coalesced_fn(op):
    def fn(inp, *, tag, ranks, group_size):
        x = inp + 1
        if op == "reduce_scatter":
            parts = OPS.c10d_functional.reduce_scatter_tensor_coalesced(
                [x, inp], "sum", tag, ranks, group_size)
        else:
            parts = OPS.c10d_functional.all_gather_into_tensor_coalesced(
                [x, inp], tag, ranks, group_size)
        y = x + 2
        ar0 = OPS.c10d_functional.wait_tensor(parts[0])
        ar1 = OPS.c10d_functional.wait_tensor(parts[1])
        other = torch.ones_like(inp) + 22
        return ar0, y, other, ar1
    fn.__name__ = "%s_coalesced_fn" % op
    return fn


def wait_dep_fn(inp, *, tag, ranks, group_size):
    # one all-gather's waited output feeds the next (TP + FSDP)
    group = dist.distributed_c10d._get_default_group().group_name
    a0 = OPS._c10d_functional.all_gather_into_tensor(inp, group_size, group)
    w0 = OPS.c10d_functional.wait_tensor(a0)
    a1 = OPS._c10d_functional.all_gather_into_tensor(w0, group_size, group)
    return OPS.c10d_functional.wait_tensor(a1)


def bucketed_fn(x, w, ag_0, ag_1, ag_2, ag_3, *, tag, ranks, group_size):
    fn = OPS._c10d_functional
    wait = OPS.c10d_functional.wait_tensor
    group = dist.distributed_c10d._get_default_group().group_name
    y = torch.mm(x, w)
    c0, c1 = ag_0.to(torch.bfloat16), ag_1.to(torch.bfloat16)
    g0 = fn.all_gather_into_tensor(c0, group_size, group)
    g1 = fn.all_gather_into_tensor(c1, group_size, group)
    g0, g1 = wait(g0), wait(g1)
    r0 = fn.reduce_scatter_tensor(c0, "sum", group_size, group)
    r1 = fn.reduce_scatter_tensor(c1, "sum", group_size, group)
    r0, r1 = wait(r0), wait(r1)
    y += torch.mm(2 * x, 2 * w)
    c2, c3 = ag_2.to(torch.bfloat16), ag_3.to(torch.bfloat16)
    g2 = fn.all_gather_into_tensor(c2, group_size, group)
    g3 = fn.all_gather_into_tensor(c3, group_size, group)
    g2, g3 = wait(g2), wait(g3)
    r2 = fn.reduce_scatter_tensor(c2, "sum", group_size, group)
    r3 = fn.reduce_scatter_tensor(c3, "sum", group_size, group)
    r2, r3 = wait(r2), wait(r3)
    return y, g0, g1, g2, g3, r0, r1, r2, r3


def bucketed_inputs(rank):
    return (torch.ones(4, 384), torch.ones(384, 512), torch.ones(1024, 512),
            torch.ones(512, 1024), torch.ones(1024, 512),
            torch.ones(512, 1024))


def bucketed_config(mode):
    return {"bucket_all_gathers_fx": "all",
            "bucket_all_gathers_fx_bucket_size_determinator": lambda _: 4,
            "bucket_reduce_scatters_fx": "all",
            "bucket_reduce_scatters_fx_bucket_size_determinator":
                lambda _: 2,
            "bucket_all_gathers_bucket_mode": mode,
            "bucket_reduce_scatters_bucket_mode": mode,
            "allow_buffer_reuse": False,
            "test_configs.track_memory_lifecycle": "error"}


# ours: the third coalesced op
def all_reduce_coalesced_fn(a, b, *, tag, ranks, group_size):
    x, y = a * 2, b + 1
    parts = OPS.c10d_functional.all_reduce_coalesced(
        [x, y], "sum", tag, ranks, group_size)
    z = torch.matmul(a, b)               # beside the collective
    r0 = OPS.c10d_functional.wait_tensor(parts[0])
    r1 = OPS.c10d_functional.wait_tensor(parts[1])
    return r0 + z, r1


# ---------------------------------------------------------------------------
# test_aten_comm_compute_reordering.py

def aten_raise_comms_fn(a):
    b = torch.matmul(a, a)
    c = torch.relu(b)
    d = torch.matmul(c, c)
    e = funcol.all_reduce((b + 1), "sum", "0")
    return torch.matmul(d, e)


def aten_estimate(multiplier):
    """The aten file's estimate_aten_runtime as torch 2.13 calls it
    (node, override_size): a collective 1 ms, a matmul `multiplier` ms
    ("assume a matmul can hide a single collective"), else None."""
    def estimate(node, override_size=None):
        if "c10" in str(node.target):
            return 1.0
        if node.target == torch.ops.aten.mm.default:
            return multiplier
        return None
    return estimate


def ag_bucket_fn(a, b, c, *, ranks):
    ag1 = funcol.all_gather_tensor(a, 0, ranks) + 3
    ag2 = funcol.all_gather_tensor(b, 0, ranks) + 4
    ag3 = funcol.all_gather_tensor(c, 0, ranks) + 5
    return ag1 + ag2 + ag3


def rs_bucket_fn(a, b, c):
    rs1 = funcol.reduce_scatter_tensor(a, "sum", 0, "0")
    rs2 = funcol.reduce_scatter_tensor(b, "sum", 0, "0")
    rs3 = funcol.reduce_scatter_tensor(c, "sum", 0, "0")
    return torch.cat([rs1, rs2, rs3])


def dependent_hiding_fn(a, b, *, ranks):
    ag1 = funcol.all_gather_tensor(a, 0, ranks)
    mm1 = torch.matmul(a, a)
    mm2 = torch.matmul(ag1[:4], b)      # can hide ag2, but needs ag1
    ag2 = funcol.all_gather_tensor(b, 0, ranks)
    return ag1.sum() * ag2.sum() * mm1 * mm2


def depends_on_hiding_fn(a, *, ranks):
    ag1 = funcol.all_gather_tensor(a, 0, ranks)
    mm1 = torch.matmul(a, a)            # hides ag1
    b = mm1 * 2
    ag2 = funcol.all_gather_tensor(b, 0, ranks)
    return ag1.sum() * ag2.sum() * mm1


def _four_gathers(a, b, c, d, ranks):
    return (funcol.all_gather_tensor(a, 0, ranks),
            funcol.all_gather_tensor(b, 0, ranks),
            funcol.all_gather_tensor(c[:4], 0, ranks),
            funcol.all_gather_tensor(d[:4], 0, ranks))


def _weighted(ag1, ag2, ag3, ag4, mm1, mm2):
    return (ag1.sum() * 1.1 + ag2.sum() * 1.2 + ag3.sum() * 1.3 +
            ag4.sum() * 1.4 + mm1.sum() + mm2.sum())


def wait_sink_fn(a, b, c, d, *, ranks):
    ag1, ag2, ag3, ag4 = _four_gathers(a, b, c, d, ranks)
    e = a * 5
    mm1 = torch.matmul(e, e.T)
    f = b * 6
    mm2 = torch.matmul(f, f.T)
    return _weighted(ag1, ag2, ag3, ag4, mm1, mm2)


def split_blocking_fn(a, b, c, d, *, ranks):
    ag1, ag2, ag3, ag4 = _four_gathers(a, b, c, d, ranks)
    e = a * 5
    mm1 = torch.matmul(e, e.T)
    intermediate = ag1[:8, :8] + ag2[:8, :8]
    mm2 = torch.matmul(mm1 + intermediate, c[:8])
    return _weighted(ag1, ag2, ag3, ag4, mm1, mm2)


def split_fn(a, b, c, d, *, ranks):
    ag1, ag2, ag3, ag4 = _four_gathers(a, b, c, d, ranks)
    e = a * 5
    mm1 = torch.matmul(e, e.T)
    intermediate = ag1[:2, :2] + ag2[:2, :2]
    f = b * 6
    padded = torch.nn.functional.pad(intermediate, (0, 6, 0, 6))
    mm2 = torch.matmul(mm1 + padded, f.T)
    return _weighted(ag1, ag2, ag3, ag4, mm1, mm2)


def exposed_hidden_fn(a, b, c, *, ranks):
    ag1 = funcol.all_gather_tensor(a, 0, ranks)
    ag2 = funcol.all_gather_tensor(b, 0, ranks)
    ag3 = funcol.all_gather_tensor(c, 0, ranks)
    mm1 = torch.matmul(a[:2], a[:2].T)   # hides only ag1
    return ag1.sum() + ag2.sum() + ag3.sum() + mm1.sum()


def three_gathers_fn(a, b, c, *, ranks):
    ag1 = funcol.all_gather_tensor(a, 0, ranks)
    ag2 = funcol.all_gather_tensor(b, 0, ranks)
    ag3 = funcol.all_gather_tensor(c, 0, ranks)
    return ag1.sum() + ag2.sum() + ag3.sum()


def ar_bucket_fn(a, b, c):
    ar1 = funcol.all_reduce(a, "sum", "0")
    ar2 = funcol.all_reduce(b, "sum", "0")
    ar3 = funcol.all_reduce(c, "sum", "0")
    return ar1.sum() + ar2.sum() + ar3.sum()


def aten_config(bucketing=False, multiplier=1.0):
    """The aten file's get_patches() / get_bucket_patches(), as torch 2.13
    names them (triton.native_matmul has no CPU meaning and is left out;
    force_disable_caches is the harness's concern)."""
    opts = "aten_distributed_optimizations."
    # compute_estimator "analytical", not 2.13's default "benchmark": a
    # benchmarked estimate makes the scheduler agree on the runtimes across
    # ranks with an all_gather_object inside the compile, a collective the
    # harness's two ranks then have to reach in step (a rank that left a
    # program early hung the other there once); measured CPU times would
    # also make the orders vary from run to run
    cfg = {opts + "compute_estimator": "analytical",
           opts + "custom_runtime_estimation": aten_estimate(multiplier),
           opts + "insert_overlap_deps": False,
           opts + "pre_bucketing_fsdp_collectives": False,
           "reorder_for_locality": False,
           "test_configs.assume_bucketing_reduces_latency": False}
    if bucketing:
        cfg[opts + "collective_bucketing"] = True
    return cfg


F = functools.partial
SWRC_GRAPH = """\
graph():
    %arg0_1 : [num_users=1] = placeholder[target=arg0_1]
    %mm : [num_users=2] = call_function[target=torch.ops.aten.mm.default](args = (%arg0_1, %arg0_1), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%mm,), kwargs = {})
    %all_reduce : [num_users=1] = call_function[target=torch.ops._c10d_functional.all_reduce.default](args = (%mm, sum, 0), kwargs = {})
    %mm_1 : [num_users=1] = call_function[target=torch.ops.aten.mm.default](args = (%relu, %relu), kwargs = {})
    %relu_1 : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%mm_1,), kwargs = {})
    %mm_2 : [num_users=1] = call_function[target=torch.ops.aten.mm.default](args = (%relu_1, %relu_1), kwargs = {})
    %wait_tensor : [num_users=1] = call_function[target=torch.ops._c10d_functional.wait_tensor.default](args = (%all_reduce,), kwargs = {})
    %mm_3 : [num_users=1] = call_function[target=torch.ops.aten.mm.default](args = (%wait_tensor, %mm_2), kwargs = {})
    return (mm_3,)"""  # noqa: E501
DEFAULT_ORDERING_GRAPH = """\
graph():
    %arg0_1 : [num_users=1] = placeholder[target=arg0_1]
    %arg1_1 : [num_users=1] = placeholder[target=arg1_1]
    %arg2_1 : [num_users=1] = placeholder[target=arg2_1]
    %all_reduce : [num_users=1] = call_function[target=torch.ops._c10d_functional.all_reduce.default](args = (%arg0_1, avg, 0), kwargs = {})
    %all_reduce_1 : [num_users=1] = call_function[target=torch.ops._c10d_functional.all_reduce.default](args = (%arg1_1, avg, 0), kwargs = {})
    %all_reduce_2 : [num_users=1] = call_function[target=torch.ops._c10d_functional.all_reduce.default](args = (%arg2_1, avg, 0), kwargs = {})
    %wait_tensor : [num_users=1] = call_function[target=torch.ops._c10d_functional.wait_tensor.default](args = (%all_reduce_2,), kwargs = {})
    %wait_tensor_1 : [num_users=1] = call_function[target=torch.ops._c10d_functional.wait_tensor.default](args = (%all_reduce_1,), kwargs = {})
    %wait_tensor_2 : [num_users=1] = call_function[target=torch.ops._c10d_functional.wait_tensor.default](args = (%all_reduce,), kwargs = {})
    return (wait_tensor, wait_tensor_1, wait_tensor_2)"""  # noqa: E501

AR_ = "torch.ops._c10d_functional.all_reduce_.default"
# the aten file's test_inductor_default_comms_ordering: the all-reduces of
# g1, g2, g3 keep their order
ORDERED_ALL_REDUCES = (("check", "all_reduce"), ("check_same", "arg0_1"),
                       ("check", "all_reduce"), ("check_same", "arg1_1"),
                       ("check", "all_reduce"), ("check_same", "arg2_1"))
WAIT = "torch.ops._c10d_functional.wait_tensor.default"
MM = "extern_kernels.mm"
RCPPM = "reorder_communication_preserving_peak_memory"


def coalesced_check(op, reuse):
    """test_reorder_peak_memory's and test_inductor_*_coalesced's
    FileCheck (non-combo-kernel branch); `reuse`: the latter's checks of
    the extraction lines and of buf0's reuse between the two waits."""
    steps = [("check", "buf0 = empty_strided"),
             ("check", "buf6 = empty_strided"),
             ("check", "(arg0_1, buf0, buf6)"),
             ("check", "buf1 = torch.ops._c10d_functional.%s_coalesced."
                       "default([buf0, arg0_1]" % op)]
    if reuse:
        steps += [("check", "buf2 = buf1[0]"), ("check", "buf3 = buf1[1]")]
    steps.append(("check", WAIT + "(buf2"))
    if reuse:
        steps += [("check", "buf7 = buf0; del buf0  # reuse"),
                  ("check", "(buf7)")]
    steps += [("check", WAIT + "(buf3"),
              ("check", "return (buf2, buf6, buf7, buf3")]
    return tuple(steps)


PROGRAMS = [
    Program("sink_waits", SRC_CCR + "::test_sink_waits", sink_waits_fn,
            ones_plus_rank((4, 4)), "inductor", passes=("sink_waits",),
            config={"allow_buffer_reuse": True,
                    "reorder_for_locality": False},
            filecheck=(("check", AR_), ("check", MM), ("check", WAIT),
                       ("check", MM))),
    Program("raise_comms", SRC_CCR + "::test_raise_comms", raise_comms_fn,
            ones_plus_rank((4, 4)), "inductor", passes=("raise_comms",),
            config={"allow_buffer_reuse": True,
                    "reorder_for_locality": False},
            filecheck=(("check", MM), ("check", "cpp_fused_relu"),
                       ("check", AR_), ("check_same", "buf0"),
                       ("check", MM), ("check_not", "buf0"),
                       ("check", WAIT), ("check", MM))),
    Program("sink_waits_raise_comms", SRC_CCR +
            "::test_sink_waits_raise_comms", sink_waits_raise_comms_fn,
            ones_plus_rank((4, 4)), "inductor", kwargs=TRS,
            passes=("sink_waits", "raise_comms"),
            config={"allow_buffer_reuse": True},
            filecheck=(("check", MM), ("check", "cpp_fused_all_reduce_0"),
                       ("check", AR_), ("check", "cpp_fused_relu"),
                       ("check", MM), ("check", "cpp_fused_relu"),
                       ("check", MM), ("check", WAIT), ("check", MM))),
    Program("reorder_compute_for_overlap", SRC_CCR +
            "::test_reorder_compute_for_overlap", reorder_compute_fn,
            ones_plus_rank((4, 4)), "inductor", kwargs=TRS,
            passes=("reorder_compute_for_overlap",),
            config={"allow_buffer_reuse": True},
            filecheck=(("check", AR_), ("check", "cpp_fused_relu"),
                       ("check", MM), ("check", MM), ("check", WAIT),
                       ("check", "cpp_fused_all_reduce_mul"),
                       ("check", AR_), ("check", WAIT),
                       ("check", "cpp_fused_add"), ("check", MM)),
            extra={"cpu_zero_estimates": "Inductor estimates 0 for every "
                   "node on CPU: the pass places one matmul under the first "
                   "all-reduce, not two"}),
    Program("reorder_compute_for_overlap_custom_estimate", SRC_CCR +
            "::test_reorder_compute_for_overlap_custom_runtime_estimation",
            reorder_compute_fn, ones_plus_rank((4, 4)), "inductor",
            kwargs=TRS, passes=("reorder_compute_for_overlap",),
            config={"allow_buffer_reuse": True,
                    "estimate_op_runtime": reorder_compute_estimate},
            filecheck=(("check", AR_), ("check", "cpp_fused_relu"),
                       ("check", MM), ("check", MM), ("check", WAIT),
                       ("check", "cpp_fused_all_reduce_mul"),
                       ("check", AR_), ("check", WAIT),
                       ("check", "cpp_fused_add"), ("check", MM))),
    Program("grouped_scheduler_node", SRC_CCR +
            "::test_grouped_scheduler_node", grouped_fn,
            ones_plus_rank((4, 4)), "inductor", kwargs=TRS,
            passes=("sink_waits", "reorder_compute_for_overlap",
                    "sink_waits_iterative"),
            config={"_pre_fusion_custom_pass":
                    group_all_reduce_with_its_input},
            filecheck=(("check", "cpp_fused_add_all_reduce_div_0("),
                       ("check", "_c10d_functional.all_reduce_."),
                       ("check", "cpp_fused_mul_1("))),
    Program("default_comms_ordering", SRC_CCR +
            "::test_inductor_default_comms_ordering", default_ordering_fn,
            lambda rank: (torch.ones(10, 10), torch.ones(11, 11),
                          torch.ones(12, 12)), "inductor", kwargs=TRS,
            expected_graph=DEFAULT_ORDERING_GRAPH,
            # "all_reduces need to remain in order!"
            fx_filecheck=ORDERED_ALL_REDUCES),
    Program("reorder_peak_memory", SRC_IC + "::test_reorder_peak_memory",
            coalesced_fn("reduce_scatter"), ones_plus_rank((4, 4)),
            "inductor", kwargs=TRS, passes=("sink_waits", RCPPM),
            filecheck=coalesced_check("reduce_scatter_tensor", False),
            stats={"count": 1, "moves": 0, "limiting_factor": "None",
                   "initial_exposed": 0}),
    Program("all_gather_coalesced", SRC_IC +
            "::test_inductor_all_gather_coalesced",
            coalesced_fn("all_gather"), ones_plus_rank((4, 4)), "inductor",
            kwargs=TRS, config={"triton.descriptive_names": False},
            filecheck=coalesced_check("all_gather_into_tensor", True)),
    Program("reorder_respects_wait_dep", SRC_IC +
            "::test_reorder_respects_wait_dep", wait_dep_fn,
            ones_plus_rank((4, 4)), "inductor", kwargs=TRS,
            passes=("sink_waits", RCPPM),
            filecheck=(("check", "all_gather"), ("check", "wait"),
                       ("check", "all_gather"), ("check", "wait")),
            stats={"count": 2, "moves": 0}),
    Program("ours_all_reduce_coalesced", "ours", all_reduce_coalesced_fn,
            ones_plus_rank((4, 4), (4, 4)), "inductor", kwargs=TRS,
            passes=("sink_waits", RCPPM, "sink_waits_iterative")),
] + [
    Program("reorder_peak_memory_bucketed_" + mode, SRC_IC +
            "::test_reorder_peak_memory_bucketed[%s]" % upstream,
            bucketed_fn, bucketed_inputs, "inductor", kwargs=TRS,
            passes=(RCPPM, "sink_waits_iterative", RCPPM),
            config=bucketed_config(mode),
            filecheck=(("check", "check_memory_step"),
                       ("check", "tracked_empty_strided"),
                       ("next", ""),
                       ("check_count", "torch.ops._c10d_functional."
                        "all_gather_into_tensor_out.default(", 2),
                       ("check", "extern_kernels.mm"),
                       ("check", "extern_kernels.addmm"), ("next", ""),
                       ("check_count", "torch.ops._c10d_functional."
                        "reduce_scatter_tensor.default(", 2),
                       ("check", "extern_kernels.mm"),
                       ("check", "extern_kernels.addmm")),
            stats={"count": 4})
    for mode, upstream in (("default", "all"),
                           ("custom_ops", "all_custom_ops"))
] + [
    Program("aten_sink_waits", SRC_ATEN + "::test_sink_waits",
            sink_waits_fn, ones_plus_rank((4, 4)), "aten",
            config=aten_config(),
            filecheck=(("check", "all_reduce.default"),
                       ("check", "aten.mm.default"),
                       ("check", "wait_tensor.default"),
                       ("check", "aten.mm.default")),
            fx_filecheck=(("check", "all_reduce.default"),
                          ("check", "aten.mm.default"),
                          ("check", "wait_tensor.default"),
                          ("check", "aten.mm.default")),
            extra={"exposed": 0}),
    Program("aten_raise_comms", SRC_ATEN + "::test_raise_comms",
            aten_raise_comms_fn, ones_plus_rank((4, 4)), "aten",
            config=aten_config(),
            filecheck=(("check", "aten.mm"), ("check", "all_reduce.default"),
                       ("check", "aten.mm"), ("check", "wait_tensor.default"),
                       ("check", "aten.mm")),
            fx_filecheck=(("check", "aten.mm"),
                          ("check", "all_reduce.default"),
                          ("check", "aten.mm"),
                          ("check", "wait_tensor.default"),
                          ("check", "aten.mm")),
            extra={"exposed": 0}),
    Program("aten_sink_waits_raise_comms", SRC_ATEN +
            "::test_sink_waits_raise_comms",
            F(sink_waits_raise_comms_fn, **TRS),
            lambda rank: (torch.ones(4, 4),), "aten", config=aten_config(),
            expected_graph=SWRC_GRAPH,
            # the test's comment: the all-reduce raised above the 2nd
            # matmul, below the 1st; the wait between the 3rd and the 4th
            fx_filecheck=(("check", "aten.mm"),
                          ("check", "all_reduce.default"),
                          ("check", "aten.mm"), ("check", "aten.mm"),
                          ("check", "wait_tensor.default"),
                          ("check", "aten.mm")),
            extra={"exposed": 0}),
    Program("aten_reorder_compute_for_overlap_mul", SRC_ATEN +
            "::test_reorder_compute_for_overlap_mul",
            F(reorder_compute_fn, **TRS), ones_plus_rank((4, 4)), "aten",
            config=aten_config(),
            filecheck=(("check", "all_reduce.default"), ("check", "aten.mm"),
                       ("check", "aten.mm"), ("check", "wait_tensor.default"),
                       ("check", "aten.mul"), ("check", "all_reduce.default"),
                       ("check", "wait_tensor.default"),
                       ("check", "aten.mm")),
            fx_filecheck=(("check", "all_reduce.default"),
                          ("check", "aten.mm"), ("check", "aten.mm"),
                          ("check", "wait_tensor.default"),
                          ("check", "aten.mul"),
                          ("check", "all_reduce.default"),
                          ("check", "wait_tensor.default"),
                          ("check", "aten.mm")),
            extra={"exposed": 1}),
    Program("aten_default_comms_ordering", SRC_ATEN +
            "::test_inductor_default_comms_ordering",
            F(default_ordering_fn, **TRS),
            lambda rank: (torch.ones(10, 10), torch.ones(11, 11),
                          torch.ones(12, 12)), "aten", config=aten_config(),
            filecheck=ORDERED_ALL_REDUCES, fx_filecheck=ORDERED_ALL_REDUCES,
            extra={"exposed": 3, "bad_exposed": 0}),
    Program("aten_via_config", SRC_ATEN +
            "::test_overlap_scheduling_via_config", sink_waits_fn,
            ones_plus_rank((4, 4)), "aten",
            config=dict(aten_config(), **{
                "aten_distributed_optimizations.enable_overlap_scheduling":
                True}),
            extra={"via_config": True, "exposed": 0,
                   "code_filecheck": (("check", "all_reduce"),
                                      ("check", "mm"),
                                      ("check", "wait_tensor"),
                                      ("check", "mm"))}),
    Program("aten_all_gather_bucketing", SRC_ATEN +
            "::test_basic_all_gather_bucketing", F(ag_bucket_fn, ranks=RANKS),
            lambda rank: (torch.ones(4, 4) + rank, torch.ones(4, 4) * 2,
                          torch.ones(4, 4) * 3), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "torch.ops._c10d_functional.all_gather_into_tensor",
                        1),)),
    Program("aten_reduce_scatter_bucketing", SRC_ATEN +
            "::test_reduce_scatter_bucketing", rs_bucket_fn,
            scaled(((8, 4), 1, torch.float32), ((8, 4), 2, torch.float32),
                   ((8, 4), 3, torch.float32)), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "torch.ops._c10d_functional.reduce_scatter_tensor",
                        1),)),
    Program("aten_no_bucketing_dependent_hiding", SRC_ATEN +
            "::test_no_bucketing_with_dependent_hiding_nodes",
            F(dependent_hiding_fn, ranks=RANKS),
            lambda rank: (torch.ones(4, 4), torch.ones(4, 4)), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "torch.ops._c10d_functional.all_gather_into_tensor",
                        2),)),
    Program("aten_no_bucketing_depends_on_hiding", SRC_ATEN +
            "::test_no_bucketing_when_collective_depends_on_hiding_node",
            F(depends_on_hiding_fn, ranks=RANKS),
            lambda rank: (torch.ones(4, 4),), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "_c10d_functional.all_gather_into_tensor", 2),)),
    Program("aten_bucketing_wait_sink", SRC_ATEN +
            "::test_bucketing_wait_sink", F(wait_sink_fn, ranks=RANKS),
            scaled(*(((8, 8), k, torch.float32) for k in (1, 2, 3, 4))),
            "aten", config=aten_config(True, 2.0),
            filecheck=(("check_count",
                        "_c10d_functional.all_gather_into_tensor", 1),
                       ("check_count", "ops.aten.mm", 2),
                       ("check", "_c10d_functional.wait_tensor"))),
    Program("aten_split_blocking_no_deps", SRC_ATEN +
            "::test_bucketing_split_for_overlap_blocking_no_deps",
            F(split_blocking_fn, ranks=RANKS),
            scaled(*(((8, 8), k, torch.float32) for k in (1, 2, 3, 4))),
            "aten", config=aten_config(True, 2.0),
            filecheck=(("check_count",
                        "_c10d_functional.all_gather_into_tensor", 1),
                       ("check_count", "ops.aten.mm", 2),
                       ("check_count", "_c10d_functional.wait_tensor", 1))),
    Program("aten_split_for_overlap", SRC_ATEN +
            "::test_bucketing_split_for_overlap", F(split_fn, ranks=RANKS),
            scaled(*(((8, 8), k, torch.float32) for k in (1, 2, 3, 4))),
            "aten", config=aten_config(True, 2.0),
            filecheck=(("check_count",
                        "_c10d_functional.all_gather_into_tensor_out", 2),
                       ("next", ""),
                       ("check", "_c10d_functional.all_gather_into_tensor_"
                        "out"), ("check", "ops.aten.mm"),
                       ("check", "_c10d_functional.all_gather_into_tensor_"
                        "out"), ("check", "ops.aten.mm"))),
    Program("aten_exposed_with_hidden", SRC_ATEN +
            "::test_bucket_exposed_with_hidden_single_overlap",
            F(exposed_hidden_fn, ranks=RANKS),
            scaled(((8, 8), 1, torch.float32), ((8, 8), 2, torch.float32),
                   ((8, 8), 3, torch.float32)), "aten",
            config=aten_config(True),
            filecheck=(("check_count", "wait_tensor.default", 1),
                       ("next", ""),
                       ("check", "functional.all_gather_into_tensor"),
                       ("check", "aten.mm"), ("check", "wait_tensor")),
            extra={"why_213": "torch 2.13 leaves the hidden all-gather "
                   "alone and buckets the two exposed ones",
                   "filecheck_213": (
                       ("check_count", "wait_tensor.default", 2),
                       ("next", ""),
                       ("check_count",
                        "all_gather_into_tensor_out.default", 1),
                       ("next", ""),
                       ("check", "functional.all_gather_into_tensor"),
                       ("check", "aten.mm"), ("check", "wait_tensor"))}),
    Program("aten_split_blocking_deps_inductor", SRC_ATEN +
            "::test_bucketing_split_for_overlap_blocking_deps_inductor",
            F(split_blocking_fn, ranks=RANKS),
            scaled(*(((8, 8), k, torch.float32) for k in (1, 2, 3, 4))),
            "aten",
            config=dict(aten_config(True, 2.0), **{
                "aten_distributed_optimizations.insert_overlap_deps": True}),
            filecheck=(("check", "control_deps"), ("check_same", "all_gather"),
                       ("check_same", "subgraph_mm"),
                       ("check", "control_deps"), ("check_same", "mm"),
                       ("check_same", "subgraph_wait")) * 2,
            extra={"code_filecheck": (
                ("check_count", "all_gather_into_tensor_out.default(", 1),
                ("check_count", "extern_kernels.mm(", 1),
                ("check_count", "wait_tensor.default(", 1)) * 2}),
    Program("aten_multidtype_bucketing", SRC_ATEN +
            "::test_multidtype_bucketing", F(three_gathers_fn, ranks=RANKS),
            scaled(((4, 4), 1, torch.float32), ((4, 4), 2, torch.bfloat16),
                   ((4, 4), 3, torch.float16)), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "torch.ops._c10d_functional.wait_tensor.default", 1),
                       ),
            extra={"why_213": "torch 2.13 buckets no all-gathers of "
                   "different dtypes",
                   "filecheck_213": (
                       ("check_count",
                        "torch.ops._c10d_functional.wait_tensor.default", 3),
                   )}),
    Program("aten_all_reduce_bucketing", SRC_ATEN +
            "::test_basic_all_reduce_bucketing", ar_bucket_fn,
            lambda rank: (torch.ones(4, 4) + rank, torch.ones(4, 4) * 2,
                          torch.ones(4, 4) * 3), "aten",
            config=aten_config(True),
            filecheck=(("check_count",
                        "torch.ops._c10d_functional.wait_tensor.default", 1),
                       )),
    # Last: torch's own order crashes torch's generated code here.
    Program("raise_comms_rcppm_alone", SRC_CCR + "::test_raise_comms "
            "(its program, RCPPM alone)", raise_comms_fn,
            ones_plus_rank((4, 4)), "inductor", passes=(RCPPM,),
            config={"allow_buffer_reuse": True,
                    "reorder_for_locality": False},
            extra={"torch_crashes": "UnboundLocalError"}),
]

BY_KEY = {p.key: p for p in PROGRAMS}
assert len(BY_KEY) == len(PROGRAMS)
