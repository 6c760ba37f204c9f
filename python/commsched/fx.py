"""torch.compile's FX level: commsched as torch 2.13's FX-level hook
(``post_grad_pass()`` for ``config.post_grad_custom_post_pass``: the
second half of this file says exactly what it reads and keeps; with
``bucket=`` commsched's bucket plan merged by torch's bucketing helpers
first, ``bucket_fx``), and
torch 2.13's FX overlap scheduler (``torch._inductor.fx_passes.
overlap_scheduling``) run as an anchor on the same program commsched
orders, its order mapped onto Inductor's scheduler nodes.

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
import os
import heapq
from unittest import mock

from . import Error, optimize
from . import inductor as _inductor

__all__ = ["post_grad_pass", "reorder_fx", "bucket_fx", "BUCKET_PASSES",
           "BUCKET_GRAPHS", "is_backward_graph",
           "from_fx", "fx_dependencies",
           "capture_overlap_input", "origins", "fx_runtimes_ms",
           "collective_ms", "torch_bucketing",
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


# ---------------------------------------------------------------------------
# commsched at the FX level: config.post_grad_custom_post_pass
#
# torch 2.13's post_grad_passes (torch/_inductor/fx_passes/post_grad.py)
# hands every entry of config.post_grad_custom_post_pass the post-grad ATen
# graph (an fx.Graph, one node per ATen op, functionalized but for the
# copy_ back into mutated inputs and in-place collectives), after its
# pattern passes and before stable_topological_sort, the FX bucketing
# passes and the FX overlap scheduler. ``post_grad_pass()`` is that entry:
# it builds a commsched graph from the FX nodes (``from_fx``), runs the
# pipeline and re-links the nodes in the order returned (``reorder_fx``).
# Nothing is added, removed or rewritten: only the position of the
# call_function nodes changes (get_attr nodes move up to the placeholders).
#
# The graph, node by node (an FX node is one commsched node, named as it):
# - a wait is ``_c10d_functional.wait_tensor``; a collective any other
#   ``_c10d_functional`` op (``_dtensor.shard_dim_alltoall``: synchronous),
#   its op from the ATen op's name, its group the op's group_name argument
#   sized through c10d, reduce op and dtype from the arguments;
#   everything else is compute;
# - outputs: the tensors of ``meta["val"]`` (FakeTensors). A tensor whose
#   storage is that of a tensor the node reads (a view, an in-place op,
#   getitem) is an alias of that input, else one the schema returns as
#   an argument's alias (an ``out=`` variant: torch's bucketed
#   ``all_gather_into_tensor_out``, whose traced value has a storage of
#   its own) an alias of that argument, a wait's result an alias of the
#   collective's output it completes (the same tensor at run time), and
#   any other tensor a new buffer of its storage's bytes (the rule
#   torch's own FX memory estimate, fx_passes/memory_estimator.py, uses);
#   ``name`` for the first, ``name.k`` for the k-th;
# - a view of an async collective's output taken before its wait (the
#   getitem of a coalesced collective's list, ``*_coalesced`` ops) names
#   the collective's own buffer: its readers (the wait) read that buffer
#   and follow the view, which reads nothing, costs 0 and follows the
#   collective (only a wait may read an async collective's output);
# - inputs: every output of every FX input node (a node with no tensor
#   output, e.g. a sym_size, becomes an ``after`` edge);
# - placeholders and get_attr nodes: graph inputs of their storage's
#   bytes, freeable unless primals_/arg/tangents/rng state (as Inductor's
#   is_nonfreeable_buffers); the output node's tensors: graph outputs;
# - dependencies beyond the data: a node that writes an argument (its
#   schema marks it ``Tensor(a!)``: copy_, all_reduce_, ...) stays after
#   every earlier node that touches the written storage and before every
#   later one (``after`` edges); other side-effecting nodes
#   (``node.is_impure()`` but collectives and waits) keep their relative
#   order;
# - runtimes from commsched's cost model, as the scheduler-node level and
#   commsched.fx's anchor use: compute priced from its flops
#   (``torch._inductor.fx_utils.count_flops_fx``) and bytes,
#   ``gemm_like`` where torch's FX scheduler counts the node as compute
#   (``is_compute_node``); a node that allocates nothing and has no flops
#   (a view, getitem) costs 0; collectives priced from their bytes; waits
#   0.
# The ATen ops are not yet fused: commsched prices each pointwise op's own
# memory traffic, which Inductor's fusion later removes; docs/API.md
# ("Which level") measures what that costs.

def _leaves(val):
    """The tensors in ``val`` (a meta value: tensor, tuple, list, ...), in
    pytree order."""
    import torch
    from torch.utils._pytree import tree_leaves
    return [t for t in tree_leaves(val) if isinstance(t, torch.Tensor)]


def _storage(t):
    return (t.untyped_storage()._cdata, str(t.device))


def _nbytes(t):
    from torch.fx.experimental.symbolic_shapes import optimization_hint
    try:
        return max(0, int(optimization_hint(t.untyped_storage().nbytes())))
    except Exception:  # unbacked or not a real storage: unknown, 0
        return 0


def _fx_kind(node):
    """"collective", "wait" or "compute" for a call_function node."""
    target = node.target
    ns = getattr(target, "namespace", None)
    if ns == "_c10d_functional":
        name = target._overloadpacket.__name__
        return "wait" if name == "wait_tensor" else "collective"
    if ns == "_dtensor" and \
            target._overloadpacket.__name__ == "shard_dim_alltoall":
        return "collective"
    return "compute"


def _fx_collective(node, group_sizes):
    """(op, group name, group size, reduce op, dtype, sync) of a collective
    FX node, from its ATen op and arguments."""
    packet = node.target._overloadpacket.__name__
    op = _inductor._FUNCTIONAL_OPS.get(packet)
    if op is None:
        op = _inductor._collective_op([packet])
    args = list(node.args) + list(node.kwargs.values())
    strs = [a for a in args if isinstance(a, str)]
    group = strs[-1] if strs else "default"
    reduce_op = strs[0] if len(strs) > 1 and strs[0] in \
        _inductor._REDUCE_OPS else None
    size = group_sizes.get(group)
    if size is None:
        try:
            from torch.distributed import distributed_c10d as c10d
            size = int(c10d._resolve_process_group(group).size())
        except Exception:  # not a registered group: the ints it carries
            ints = [a for a in args if isinstance(a, int) and
                    not isinstance(a, bool)]
            size = ints[-1] if ints else 2
    dtype = None
    for a in node.all_input_nodes:
        ts = _leaves(a.meta.get("val"))
        if ts:
            name = str(ts[0].dtype).replace("torch.", "")
            dtype = name if name in _inductor._DTYPES else None
            break
    return op, group, int(size), reduce_op, dtype, packet == \
        "shard_dim_alltoall"


def _arg_value(node, i, arg):
    """The value ``node`` passes for its schema's argument ``arg`` (the
    i-th), positional or keyword."""
    return node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)


def _returned_args(node):
    """For each return of ``node``'s schema, the FX node argument it
    aliases (the same alias set: ``out=`` variants return ``Tensor(a!)``,
    views ``Tensor(a)``), else None; [] without a schema. The schema says
    it where ``meta["val"]`` may not: a traced ``_out`` collective's fake
    result (torch's bucketing: ``all_gather_into_tensor_out(slice,
    out=flat)``) has a storage of its own."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return []
    by_set = {}
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is not None:
            val = _arg_value(node, i, arg)
            if hasattr(val, "meta") and hasattr(val, "op"):
                by_set[frozenset(arg.alias_info.before_set)] = val
    return [by_set.get(frozenset(r.alias_info.before_set))
            if r.alias_info is not None else None for r in schema.returns]


def _written_args(node):
    """The FX nodes whose tensors ``node`` writes (schema ``(a!)``)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return []
    out = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        stack = [_arg_value(node, i, arg)]
        while stack:   # a Tensor(a!)[] argument is a list of nodes
            v = stack.pop()
            if isinstance(v, (list, tuple)):
                stack.extend(v)
            elif hasattr(v, "meta") and hasattr(v, "op"):
                out.append(v)
    return out


def _fx_calls(graph):
    return [n for n in graph.nodes if n.op == "call_function"]


def fx_dependencies(graph):
    """{FX node: set of FX nodes it must follow} for every call_function
    node of ``graph``: its data inputs, plus the mutation and side-effect
    order the module documentation lists. Every order commsched gives
    keeps them (the tests check it with this function's rule)."""
    nodes = list(graph.nodes)
    index = {n: k for k, n in enumerate(nodes)}
    outs = {n: {_storage(t) for t in _leaves(n.meta.get("val"))}
            for n in nodes}
    touches = {}   # storage -> nodes that read or write it, in graph order
    for n in nodes:
        if n.op != "call_function":
            continue
        seen = set()
        for a in n.all_input_nodes:
            seen |= outs[a]
        for s in seen | outs[n]:
            touches.setdefault(s, []).append(n)
    deps = {n: {a for a in n.all_input_nodes if a.op == "call_function"}
            for n in nodes if n.op == "call_function"}
    for n in deps:
        for w in _written_args(n):
            for s in outs[w]:
                for u in touches.get(s, ()):
                    if u is n:
                        continue
                    if index[u] < index[n]:
                        deps[n].add(u)
                    else:
                        deps[u].add(n)
    prev = None
    for n in deps:
        if n.is_impure() and _fx_kind(n) == "compute" and \
                not _written_args(n):
            if prev is not None:
                deps[n].add(prev)
            prev = n
    return deps


@_inductor._on_fresh_stack
def from_fx(graph, *, group_sizes=None, name="fx"):
    """Builds the commsched :class:`~commsched.Graph` of an FX graph (a
    ``torch.fx.Graph`` or ``GraphModule`` whose nodes carry
    ``meta["val"]``, as post_grad_passes hands them over), nodes in the
    graph's order, by the rules in the module documentation: the graph
    format's document (reading every FX node once) loaded by the library
    in one call. ``group_sizes={group name: ranks}`` overrides c10d."""
    from torch._inductor.fx_passes.overlap_scheduling import is_compute_node
    from . import Graph
    graph = getattr(graph, "graph", graph)
    group_sizes = dict(group_sizes or {})
    bufs = {}   # FX node -> [(buffer name, storage)] it outputs
    inflight = set()   # async collectives' outputs (only waits read them)
    views = set()      # nodes that only name an in-flight output
    deps = fx_dependencies(graph)
    groups, inputs, nodes, outs = {}, [], [], []
    flop_memo = {}
    for n in graph.nodes:
        tensors = _leaves(n.meta.get("val"))
        names = [n.name if k == 0 else "%s.%d" % (n.name, k)
                 for k in range(len(tensors))]
        if n.op in ("placeholder", "get_attr"):
            bufs[n] = []
            own = {}
            for bname, t in zip(names, tensors):
                s = _storage(t)
                if s in own:
                    continue   # a second view of the same input: one buffer
                own[s] = bname
                inputs.append({"name": bname, "size": _nbytes(t),
                               "freeable": n.op == "placeholder" and
                               not n.name.startswith(
                                   _inductor._NON_FREEABLE_PREFIXES)})
                bufs[n].append((bname, s))
            continue
        if n.op == "output":
            for t_node in n.all_input_nodes:
                outs.extend(b for b, _ in bufs.get(t_node, ()))
            continue
        if n.op != "call_function":
            raise Error("commsched.fx: FX node %s is a %s; post-grad graphs "
                        "hold only placeholders, get_attr, call_function and "
                        "output" % (n.name, n.op))
        kind = _fx_kind(n)
        reads, read_by_storage = [], {}
        for a in n.all_input_nodes:
            for bname, s in bufs[a]:
                reads.append(bname)
                read_by_storage.setdefault(s, bname)
        if kind == "compute" and tensors and reads and \
                all(b in inflight for b in reads) and \
                all(_storage(t) in read_by_storage for t in tensors):
            # a view of an async collective's output before its wait (the
            # getitem of a coalesced collective's list): it names the
            # collective's buffers, which its readers (the wait) read
            # instead, and only follows the collective
            bufs[n] = [(read_by_storage[_storage(t)], _storage(t))
                       for t in tensors]
            views.add(n)
            nodes.append({"name": n.name, "kind": "compute",
                          "op": str(n.target), "runtime_ns": 0.0,
                          "after": list(dict.fromkeys(
                              a.name for a in deps[n]))})
            continue
        after = [a.name for a in deps[n]
                 if not bufs[a] or a not in n.all_input_nodes or a in views]
        outputs, out_bufs, fresh = [], [], False
        returned = _returned_args(n)
        for k, (bname, t) in enumerate(zip(names, tensors)):
            s = _storage(t)
            base = returned[k] if len(returned) == len(tensors) else None
            if kind == "wait" and k < len(reads):
                outputs.append({"name": bname, "alias_of": reads[k]})
            elif s in read_by_storage:
                outputs.append({"name": bname,
                                "alias_of": read_by_storage[s]})
            elif base is not None and bufs.get(base):
                outputs.append({"name": bname, "alias_of": bufs[base][0][0]})
            else:
                fresh = True
                outputs.append({"name": bname, "size": _nbytes(t)})
                read_by_storage[s] = bname
            out_bufs.append((bname, s))
        bufs[n] = out_bufs
        node = {"name": n.name, "kind": kind}
        if kind == "collective":
            op, grp, size, reduce_op, dtype, sync = \
                _fx_collective(n, group_sizes)
            groups.setdefault(grp, size)
            if not sync:
                inflight.update(b for b, _ in out_bufs)
            node.update(op=op, group=grp)
            if sync:
                node["async"] = False
            if reduce_op:
                node["reduce_op"] = reduce_op
            if dtype:
                node["dtype"] = dtype
        elif kind == "wait":
            node["runtime_ns"] = 0.0
        else:
            # torch's count_flops_fx figure, from the op's formula
            flops = _inductor._resolve(_inductor._fx_flops(n, flop_memo))
            node["op"] = str(n.target)
            if is_compute_node(n):
                node["gemm_like"] = True
            if flops:
                node["flops"] = float(flops)
            elif not fresh:
                node["runtime_ns"] = 0.0   # a view: no kernel
        if reads:
            node["inputs"] = list(dict.fromkeys(reads))
        if after:
            node["after"] = list(dict.fromkeys(after))
        if outputs:
            node["outputs"] = outputs
        nodes.append(node)
    doc = {"format": "commsched-graph", "version": 1, "name": str(name),
           "groups": [{"name": grp, "size": size}
                      for grp, size in groups.items()],
           "inputs": inputs, "outputs": list(dict.fromkeys(outs)),
           "nodes": nodes}
    return Graph.from_document(doc)


def reorder_fx(graph, *, passes=None, group_sizes=None, **knobs):
    """Runs commsched's pipeline (``passes`` None: the default; knobs and
    options as :func:`commsched.optimize` takes them) on the FX graph
    ``graph`` (``from_fx``) and moves its call_function nodes into the
    order returned, in place. Returns the :class:`commsched.Result`. Only
    reordering passes can run (:func:`bucket_fx` buckets)."""
    rewriting = _inductor._rewriting_passes(passes)
    if rewriting:
        raise Error("commsched.fx: %s rewrite the graph (new nodes); only "
                    "reordering passes can run on an FX graph"
                    % ", ".join(rewriting), path="passes")
    graph = getattr(graph, "graph", graph)
    result = optimize(from_fx(graph, group_sizes=group_sizes), passes,
                      **knobs)
    calls = {n.name: n for n in _fx_calls(graph)}
    if sorted(result.order) != sorted(calls):
        raise Error("commsched.fx: the pipeline %r created or removed nodes"
                    % result.passes)
    _relink(graph, [calls[nname] for nname in result.order])
    graph.lint()
    return result


def _relink(graph, order):
    """Moves the get_attr nodes after the placeholders, then the
    call_function nodes ``order`` lists in that order after them."""
    head = [n for n in graph.nodes if n.op == "placeholder"]
    cursor = head[-1] if head else None
    for n in [n for n in graph.nodes if n.op == "get_attr"] + list(order):
        if cursor is None:
            next(iter(graph.nodes)).prepend(n)
        else:
            cursor.append(n)
        cursor = n


BUCKET_PASSES = ("bucket_all_gather", "bucket_reduce_scatter",
                 "bucket_all_reduce")


def bucket_fx(graph, *, passes=BUCKET_PASSES, group_sizes=None, **knobs):
    """Buckets the collectives of the FX graph ``graph`` in place, as
    commsched's bucketing passes choose (``passes``: bucketing passes
    only, by default all-gathers, reduce-scatters and all-reduces; knobs
    as :func:`commsched.optimize` takes them: ``bucket_cap_mb``,
    ``bucket_mode``, ``bucket_peak_memory_budget``, ...), the merges made
    by torch's own helpers (``torch._inductor.fx_passes.bucketing``'s
    ``merge_*_bucket``, in the "custom_ops" mode its overlap bucketer
    uses). Returns the :class:`commsched.Result` of the bucketing
    pipeline (``.stats[k].buckets``: each bucket's members).

    First the call_function nodes take the bucketed schedule's order, a
    bucket's members at its merged collective and their waits at its
    wait: every member's input is then before the members (the bucket's
    copy-in reads them all), and every reader of a member's wait after
    the waits (it reads the merged wait's view). torch's helper then
    replaces the adjacent members by its copy-in, merged collective and
    wait before the node after the last member, and moves the wait and
    the copies out before the node after the last member's wait. Raises
    :class:`commsched.Error`, before the graph is touched, for a pass that
    does not bucket or a member torch's helpers cannot merge (a
    collective another node than its wait reads, an op they do not
    merge). Cost: the bucketing passes' own, plus a relink of every node
    and torch's trace of each bucket.
    """
    import torch._inductor.fx_passes.bucketing as tb
    names = passes.split(",") if isinstance(passes, str) else list(passes)
    rewriting = set(_inductor._rewriting_passes(names))
    other = [n for n in names if n not in rewriting]
    if other:
        raise Error("commsched.fx: bucket_fx runs bucketing passes only, "
                    "not %s (reorder_fx reorders)" % ", ".join(other),
                    path="passes")
    graph = getattr(graph, "graph", graph)
    result = optimize(from_fx(graph, group_sizes=group_sizes), names,
                      **knobs)
    buckets = [b for ps in result.stats for b in (ps.buckets or ())]
    if not buckets:
        return result
    calls = {n.name: n for n in _fx_calls(graph)}
    pos = {name: k for k, name in enumerate(result.order)}
    key = {calls[name]: (k, 0) for name, k in pos.items() if name in calls}
    merges = []
    for b in buckets:
        members = [calls.get(m) for m in b.members]
        if None in members or b.node not in pos or b.wait not in pos:
            raise Error("commsched.fx: bucket %s merges a bucket or was "
                        "merged again; run each bucketing pass once"
                        % b.node, path="passes")
        waits = []
        for k, c in enumerate(members):
            if len(c.users) != 1 or _fx_kind(next(iter(c.users))) != "wait":
                raise Error("commsched.fx: bucket %s: %s is read by %s, "
                            "not by its wait alone; torch's bucketing "
                            "cannot merge it" % (b.node, c.name, ", ".join(
                                u.name for u in c.users)))
            waits.append(next(iter(c.users)))
            key[c] = (pos[b.node], k + 1)
            key[waits[-1]] = (pos[b.wait], k + 1)
        if tb.is_all_gather_into_tensor(members[0]):
            merge = tb.merge_all_gather_bucket
        elif tb.is_reduce_scatter_tensor(members[0]):
            merge = tb.merge_reduce_scatter_bucket
        elif tb.is_all_reduce_tensor(members[0]):
            merge = tb.merge_all_reduce_bucket
        else:
            raise Error("commsched.fx: bucket %s: torch's bucketing merges "
                        "all_gather_into_tensor, reduce_scatter_tensor and "
                        "all_reduce, not %s" % (b.node, members[0].target))
        merges.append((merge, members, waits))
    missing = [n.name for n in calls.values() if n not in key]
    if missing:
        raise Error("commsched.fx: the bucketed order lacks %s"
                    % ", ".join(missing[:5]))
    _relink(graph, sorted(calls.values(), key=key.__getitem__))
    for merge, members, waits in merges:
        merge(graph, members, mode="custom_ops",
              insert_before=members[-1].next,
              wait_insertion_point=waits[-1].next)
    graph.lint()
    return result


BUCKET_GRAPHS = ("all", "backward", "forward")


def is_backward_graph(graph):
    """True for a backward graph as AOTAutograd hands it to the post-grad
    passes: one that takes a ``tangents_*`` placeholder (the gradients of
    the forward's outputs; the forward and inference graphs take
    ``primals_*``/``arg*`` ones only)."""
    graph = getattr(graph, "graph", graph)
    return any(n.op == "placeholder" and n.name.startswith("tangents_")
               for n in graph.nodes)


def post_grad_pass(*, bucket=None, bucket_graphs="all", **kwargs):
    """An entry for ``torch._inductor.config.post_grad_custom_post_pass``
    (a ``CustomGraphPass``): every post-grad FX graph goes through
    :func:`reorder_fx` with ``kwargs``; with ``bucket`` (a dict of
    :func:`bucket_fx`'s keywords, ``{}`` for its defaults) through
    :func:`bucket_fx` first, on the graphs ``bucket_graphs`` names:
    ``"all"``, ``"backward"`` (:func:`is_backward_graph`) or
    ``"forward"`` (the others, inference graphs included). Raises
    :class:`commsched.Error` for another ``bucket_graphs``. Its
    ``uuid()`` covers commsched's version, this package's source and the
    arguments, so Inductor's FX graph cache keys on them. ``.last`` is the
    :class:`commsched.Result` of the latest graph's reordering,
    ``.last_bucketing`` that of its bucketing (None where it was not
    bucketed)."""
    import hashlib
    from torch._inductor.custom_graph_pass import (CustomGraphPass,
                                                   get_hash_for_files)
    from . import version
    if bucket_graphs not in BUCKET_GRAPHS:
        raise Error("commsched.fx: bucket_graphs must be one of %s, got %r"
                    % (", ".join(BUCKET_GRAPHS), bucket_graphs),
                    path="bucket_graphs")
    here = os.path.dirname(os.path.abspath(__file__))
    files = tuple(sorted(os.path.join(here, f) for f in os.listdir(here)
                         if f.endswith(".py")))

    if bucket is not None:
        bucket = dict(bucket)

    class CommschedPostGradPass(CustomGraphPass):
        last = None
        last_bucketing = None

        def __call__(self, graph):
            self.last_bucketing = None
            if bucket is not None and (
                    bucket_graphs == "all" or
                    is_backward_graph(graph) == (bucket_graphs ==
                                                 "backward")):
                self.last_bucketing = bucket_fx(graph, **bucket)
            self.last = reorder_fx(graph, **kwargs)

        def uuid(self):
            h = hashlib.sha256(get_hash_for_files(files))
            h.update(("%s %r %r %r" % (version(), sorted(kwargs.items()),
                                       None if bucket is None else
                                       sorted(bucket.items()),
                                       bucket_graphs)).encode())
            return h.hexdigest()
    return CommschedPostGradPass()


# ---------------------------------------------------------------------------
# torch 2.13's FX bucketing as an anchor, inside a compile


def collective_ms(node, override_size=None):
    """commsched's cost model's time (ms) for the FX collective ``node``
    (its op, group size and output bytes from ``meta["val"]``), as torch's
    ``custom_runtime_estimation`` hook is asked it: ``override_size``
    (torch's size of a bucket: input plus output bytes, 0 for the latency
    alone) scales the node's bytes to that total."""
    from . import Graph, alias
    op, group, size, reduce_op, dtype, sync = _fx_collective(node, {})
    out = sum(_nbytes(t) for t in _leaves(node.meta.get("val")))
    inb = sum(_nbytes(t) for a in node.all_input_nodes
              for t in _leaves(a.meta.get("val")))
    if override_size is not None:
        total = out + inb
        scale = float(override_size) / total if total else 0.0
        out, inb = int(out * scale), int(inb * scale)
    # The input side follows from the output and the op (docs/FORMAT.md,
    # "Collective sizes"): summing the input nodes counts an out= variant's
    # preallocated output (a bucket's all_gather_into_tensor_out) as read,
    # and scaling rounds the two sides apart.
    k = max(int(size), 1)
    if op == "all_gather":
        out -= out % k
        inb = out // k
    elif op == "reduce_scatter":
        inb = out * k
    elif op in ("all_reduce", "broadcast", "reduce"):
        inb = out
    g = Graph("collective")
    g.add_group(group, size)
    g.add_input("in", inb)
    g.collective("c", op, group, sync=sync, reduce_op=reduce_op,
                 dtype=dtype, inputs=["in"], outputs=[("out", out)])
    g.wait("w", inputs=["out"], outputs=[alias("done", "out")])
    g.add_output("done")
    return optimize(g.finish(), "none").runtime_ns["c"] / 1e6


@contextlib.contextmanager
def torch_bucketing(current, runtimes_ms):
    """Within the block, torch.compile runs torch 2.13's FX overlap
    scheduler with its collective bucketing
    (``aten_distributed_optimizations``: ``enable_overlap_scheduling``,
    ``collective_bucketing``; torch's defaults otherwise, its FSDP
    pre-bucketing and overlap deps included) on every post-grad graph,
    and the compile goes on with the graph it returns. Runtimes are
    commsched's, as ``torch_overlap_order`` gives them:
    ``runtimes_ms[current()]`` ({FX node name: ms}, ``fx_runtimes_ms`` of
    the same program's unbucketed compile; ``current()`` names the graph
    being compiled) for compute, 0 for a node it does not name (the
    bucketing's copies), and :func:`collective_ms` for every collective,
    a bucket's included. The estimators and fusion regions stay off for
    the reasons the module documentation gives."""
    from torch._inductor import config
    from torch._inductor.fx_passes import overlap_scheduling as osch

    def estimate(node, override_size=None):
        if _fx_kind(node) == "collective":
            return collective_ms(node, override_size)
        if override_size is not None:
            return None
        return float(runtimes_ms.get(current(), {}).get(node.name, 0.0))
    opts = "aten_distributed_optimizations."
    with config.patch({opts + "enable_overlap_scheduling": True,
                       opts + "collective_bucketing": True,
                       opts + "custom_runtime_estimation": estimate,
                       opts + "collective_estimator": "analytical",
                       opts + "compute_estimator": "analytical",
                       opts + "enable_fusion_regions": False}), \
            mock.patch.object(osch, "estimate_roofline_runtime_ms",
                              lambda n: estimate(n)):
        yield
