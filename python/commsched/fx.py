"""torch.compile's FX level beside Inductor's scheduler nodes: torch
2.13's FX overlap scheduler (``torch._inductor.fx_passes.
overlap_scheduling``) run as an anchor on the same program commsched
orders, and its order mapped onto Inductor's scheduler nodes.

torch 2.13 offers two levels for comm/compute reordering:

- the FX level: with ``config.aten_distributed_optimizations.
  enable_overlap_scheduling``, ``post_grad_passes`` hands the post-grad
  ATen graph (one node per ATen op) to
  ``schedule_overlap_bucketing_from_inductor_configs``, which reorders it
  (``OverlapScheduler``) and may bucket collectives
  (``OverlapPreservingBucketer``);
- the scheduler-node level: ``config.reorder_for_compute_comm_overlap_
  passes`` gets Inductor's scheduler nodes (fused kernels), where
  ``commsched.inductor.reorder`` runs.

What this module does, exactly:

``capture_overlap_input(sink)`` (a context manager) turns
``enable_overlap_scheduling`` on and replaces torch's entry
``schedule_overlap_bucketing_from_inductor_configs`` with one that appends
a deep copy of the graph module torch would schedule to ``sink`` and
returns the graph unchanged: the compile goes on exactly as without the
FX scheduler, and the copy is the FX scheduler's real input.

``torch_overlap_order(gm, snodes)`` runs torch's FX scheduler
(``schedule_overlap_bucketing``, torch's defaults but the four settings
below) on a copy of ``gm`` and returns ``snodes`` in the order it implies:

- runtimes: commsched's cost model prices the scheduler nodes (the
  runtimes its simulator uses, ``optimize(graph, "none").runtime_ns``),
  and each FX node gets the runtime of the scheduler nodes it belongs to
  (``fx_runtimes_ms``): a scheduler node's runtime goes to its origin
  that torch counts as compute (``is_compute_node``: a matmul), split
  evenly among several, else to its origin latest in the FX graph; an
  FX node in several scheduler nodes gets the sum. Both schedulers then
  see the same times, and the simulator judges both orders with them.
  torch's own estimators cannot run here (the roofline asks triton for
  the GPU's bandwidth), so ``custom_runtime_estimation`` gives these
  times and ``estimate_roofline_runtime_ms`` is replaced by them for the
  call (it is only consulted for compute nodes, whose custom estimate
  wins anyway, and for its log);
- ``collective_estimator="analytical"``, ``compute_estimator=
  "analytical"``: no benchmarking (nothing to benchmark on a fake PG);
- ``enable_fusion_regions=False``: its cost correction also asks triton;
- ``collective_bucketing=False``, ``pre_bucketing_fsdp_collectives=
  False``, ``insert_overlap_deps=False``: bucketing creates collectives
  the scheduler nodes do not have, so the order could not be mapped onto
  the same graph; commsched's bench has its own bucketing anchors.

The mapping from FX nodes to scheduler nodes is not one-to-one (a fused
kernel has many FX origins, a kernel split in two shares them, views and
placeholders have no scheduler node, and an extern kernel's origins may
include the pointwise ops inlined into its input). ``map_fx_order(order,
snodes)`` therefore places each scheduler node at the position, in
torch's FX order, of its *latest* origin (a fused kernel runs once all its
ops could: a collective or wait torch put before any of its ops stays
before it); a node with no origin in the graph takes the latest position
of its dependencies. The nodes are then emitted by Kahn's algorithm over
the scheduler's own dependencies, smallest (position, input index) first:
a permutation that respects every data and control dependency Inductor
knows, and in which the collectives and waits (one FX node each) keep
torch's relative order. Fake dependencies (``WeakDep(is_fake=True)``) are
not followed: Inductor's scheduler derives them
(``decide_global_ordering_of_comms``: each collective after the previous
one's buffer, as renamed by the mutations lowered before it) from the
order the nodes were lowered in, which under the FX scheduler is torch's
order, so they would follow it; those of the input order can contradict
it. Applied to the graph file, the order therefore drops the
``after_fake`` edges it breaks, as ``commsched optimize`` does
(``dropped_fake_edges``, docs/FORMAT.md).
tests/python/test_torch_fx.py checks these properties on the real
programs, tests/python/test_fx_mapping.py the rule on stand-ins.
"""

import contextlib
import copy
import heapq
from unittest import mock

from . import Error, optimize
from . import inductor as _inductor

__all__ = ["capture_overlap_input", "origins", "fx_runtimes_ms",
           "map_fx_order", "run_overlap_scheduler", "torch_overlap_order"]


@contextlib.contextmanager
def capture_overlap_input(sink):
    """Within the block, every graph torch.compile would hand its FX
    overlap scheduler is deep-copied onto the list ``sink`` (in compile
    order) and compiled unchanged. Yields ``sink``."""
    from torch._inductor import config
    from torch._inductor.fx_passes import overlap_scheduling as osch
    real = osch.schedule_overlap_bucketing_from_inductor_configs

    def keep(gm):
        sink.append(copy.deepcopy(gm))
        return gm
    osch.schedule_overlap_bucketing_from_inductor_configs = keep
    try:
        with config.patch({"aten_distributed_optimizations."
                           "enable_overlap_scheduling": True}):
            yield sink
    finally:
        osch.schedule_overlap_bucketing_from_inductor_configs = real


def origins(snode):
    """The names of the FX nodes ``snode`` was lowered from (the origins
    of its IR nodes; of every member of a fused node)."""
    leaves = snode.get_nodes() if hasattr(snode, "get_nodes") else [snode]
    out = set()
    for leaf in leaves:
        for o in getattr(getattr(leaf, "node", None), "origins", None) or ():
            out.add(str(o.name))
    return out


def _dependencies(snodes):
    """For each scheduler node, the indices of the nodes it must follow:
    every unmet dependency but the fake ones (the module documentation
    says why)."""
    owner = {}
    for i, sn in enumerate(snodes):
        for b in sn.get_buffer_names():
            owner.setdefault(str(b), i)
        for o in sn.get_operation_names():
            owner.setdefault(str(o), i)
        owner.setdefault(str(sn.get_name()), i)
    deps = []
    for i, sn in enumerate(snodes):
        d = {owner[str(x.name)] for x in sn.unmet_dependencies
             if str(x.name) in owner and not getattr(x, "is_fake", False)}
        d.discard(i)
        deps.append(d)
    return deps


def map_fx_order(fx_order, snodes):
    """``snodes`` (the same objects) in the order that the FX node names
    ``fx_order`` imply (the rule in the module documentation)."""
    snodes = list(snodes)
    pos = {str(n): k for k, n in enumerate(fx_order)}
    deps = _dependencies(snodes)
    key = []
    for i, sn in enumerate(snodes):
        ks = [pos[o] for o in origins(sn) if o in pos]
        if ks:
            key.append(max(ks))
        else:   # input order is topological: the dependencies have keys
            key.append(max((key[d] for d in deps[i] if d < i), default=-1))
    users = [[] for _ in snodes]
    missing = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [(key[i], i) for i in range(len(snodes)) if not missing[i]]
    heapq.heapify(ready)
    out = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(snodes[i])
        for u in users[i]:
            missing[u] -= 1
            if not missing[u]:
                heapq.heappush(ready, (key[u], u))
    if len(out) != len(snodes):
        raise Error("commsched.fx: the scheduler nodes' dependencies have a "
                    "cycle")
    return out


def fx_runtimes_ms(gm, snodes, runtime_ns):
    """{FX node name: milliseconds} from ``runtime_ns`` ({scheduler node
    name: ns}), attributed as the module documentation says."""
    from torch._inductor.fx_passes.overlap_scheduling import is_compute_node
    nodes = [n for n in gm.graph.nodes]
    index = {n.name: k for k, n in enumerate(nodes)}
    calls = {n.name: n for n in nodes if n.op == "call_function"}
    out = {}
    for sn in snodes:
        ns = float(runtime_ns.get(str(sn.get_name()), 0.0))
        cand = sorted((o for o in origins(sn) if o in calls), key=index.get)
        if not cand or ns <= 0:
            continue
        targets = [o for o in cand if is_compute_node(calls[o])] or \
            [cand[-1]]
        for t in targets:
            out[t] = out.get(t, 0.0) + ns / len(targets) / 1e6
    return out


def run_overlap_scheduler(gm, runtimes_ms, **overrides):
    """torch 2.13's ``schedule_overlap_bucketing`` on a deep copy of
    ``gm`` with the runtimes ``runtimes_ms`` ({FX node name: ms}, 0 for
    the others) and the settings in the module documentation
    (``overrides`` replace them); returns the FX node names in the order
    it leaves."""
    from torch._inductor.fx_passes import overlap_scheduling as osch
    gm = copy.deepcopy(gm)

    def estimate(node, override_size=None):
        if override_size is not None:
            return None
        return float(runtimes_ms.get(node.name, 0.0))
    kw = dict(collective_bucketing=False, pre_bucketing_fsdp_collectives=False,
              insert_overlap_deps=False, custom_runtime_estimation=estimate,
              collective_estimator="analytical",
              compute_estimator="analytical", enable_fusion_regions=False)
    kw.update(overrides)
    with mock.patch.object(osch, "estimate_roofline_runtime_ms",
                           lambda n: estimate(n)):
        out = osch.schedule_overlap_bucketing(gm, **kw)
    return [n.name for n in out.graph.nodes]


def torch_overlap_order(gm, snodes, **overrides):
    """``snodes`` in the order torch 2.13's FX overlap scheduler gives the
    graph module ``gm`` they were lowered from (captured with
    :func:`capture_overlap_input` in the same compile), timed by
    commsched's cost model. Returns ``(ordered snodes, fx order)``."""
    snodes = list(snodes)
    runtime = optimize(_inductor.to_graph(snodes), "none").runtime_ns
    fx_order = run_overlap_scheduler(
        gm, fx_runtimes_ms(gm, snodes, runtime), **overrides)
    return map_fx_order(fx_order, snodes), fx_order
