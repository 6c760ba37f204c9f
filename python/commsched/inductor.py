"""PyTorch Inductor plugin: run commsched's passes on Inductor's scheduler
nodes.

Use it as one entry of ``torch._inductor.config.
reorder_for_compute_comm_overlap_passes`` (a callable taking and returning
the list of scheduler nodes)::

    import commsched.inductor
    torch._inductor.config.reorder_for_compute_comm_overlap = True
    torch._inductor.config.reorder_for_compute_comm_overlap_passes = [
        commsched.inductor.reorder,                     # default pipeline
    ]
    # or with a chosen pipeline and knobs:
    #   commsched.inductor.make_pass(
    #       passes=["sink_waits_iterative"],
    #       sink_iterative_peak_memory_budget=0.1)

``reorder(snodes)`` reads each node through the same attributes Inductor's
``comms.py`` reads (the list below), builds a commsched graph, runs the
pipeline in C (``commsched_optimize``) and returns the *same node objects*
in the new order. It never changes the nodes.

What is read, exactly (nothing else is touched):

- ``snode.get_name()`` -- the node's name (unique among the nodes).
- ``snode.get_outputs()`` -- its buffers; of each buffer ``buf.get_name()``
  and, for its size, ``buf.mpi_buffer.size_alloc`` (the memory-planning
  info Inductor's ``memory.py`` assigns; 0 for a mutation's new name),
  else numel x itemsize of ``buf.node``'s layout. A ``buffer_size=``
  callable replaces that size rule.
- ``buf.get_mutations()`` -- the buffers an output of size 0 (a
  mutation's new name) mutates: it becomes an alias of the one the node
  reads, or of the node's own output it names (below).
- the class names of ``snode.node`` (``MultiOutput``: an extraction node)
  and of ``buf.node.layout`` (``MultiOutputLayout``: a multi-output
  kernel's buffer), for the multi-output rule below.
- ``snode.get_buffer_names()`` -- buffer names not among ``get_outputs()``
  are added as outputs of size 0.
- ``snode.get_operation_names()`` -- so that a dependency naming an
  operation rather than a buffer still finds its node.
- ``snode.unmet_dependencies`` -- of each dependency ``dep.name`` and,
  with ``getattr(dep, "is_fake", None)``, whether it is a ``WeakDep``
  (only ``WeakDep`` has ``is_fake``) and a fake one. ``MemoryDep`` /
  ``StarDep`` become data reads (``inputs``); a non-fake ``WeakDep`` on an
  earlier node's buffer a read too (Inductor keeps a buffer alive until
  its last successor of either kind), on an operation a control
  dependency (``after``); a fake one (``is_fake=True``, as
  ``decide_global_ordering_of_comms`` adds) an ordering-only edge
  (``after_fake``, which the iterative passes ignore exactly as
  ``_is_fake_dep`` makes the seed ignore them). A fake dependency on a
  later node (an earlier pass in Inductor's list broke it) is dropped.
- ``snode.read_writes.reads`` -- the graph inputs a node reads
  (``unmet_dependencies`` holds only the scheduler's own buffers).
- for a ``FusedSchedulerNode`` (not a ``GroupedSchedulerNode``), of each
  member in ``snode.snodes``: ``get_buffer_names()``,
  ``unmet_dependencies`` and ``read_writes.reads`` (``dep.name``) -- each
  output's ``"from"``: the node's inputs its member depends on, directly
  or through the other members it depends on, every kind of dependency
  followed, as Inductor's ``compute_ancestors`` relates the members before
  fusion (left out where that is all the inputs). raise_comms ranks a
  node by the collectives that reach it through them, as torch's
  ``_schedule_for_comm`` reads the collectives' ``snode.ancestors``.
- the runtime: ``torch._inductor.comms.estimate_op_runtime(snode)``
  (``snode.get_estimated_runtime()`` without torch), in milliseconds as
  Inductor estimates, converted to nanoseconds; where it is 0 (Inductor's
  "no estimate", e.g. every node on CPU) commsched's cost model prices the
  node as Inductor's GPU estimate does: compute from its flops and the
  bytes it reads and writes (the larger of the two times: a pointwise
  kernel costs its memory traffic), collectives from their bytes. Waits
  take 0, as in Inductor. The flops are ``snode.estimate_flops()``'s
  figure, taken from torch's flop formula for the IR node's FX origin
  (``node.get_origin_node()``: its op and its arguments' fake values'
  shapes; for an extern kernel without one, the sum over
  ``node.origins``); the bytes are ``snode.get_read_write_buffers_sizes()``'s
  figure, worked out as torch does from ``read_writes.reads/writes``, the
  node's ranges, the buffers' layouts in ``V.graph`` and, for a fused
  node, its buffers' users in ``snode.scheduler``, but without the bytes
  no kernel moves (a WeakDep counted as a read; a slice counted as its
  whole buffer: :class:`_BufferBytes`). Both are computed by the adapter
  rather than asked of torch, because torch's own calls cost about 1 ms
  a node (a FlopCounterMode dispatch, sympy sizes redone for every
  reader); tests/python/test_torch_scale.py checks them against torch's
  figures on every node of the real programs.
  ``runtimes="inductor"`` gives every node (waits included) exactly
  Inductor's estimate, zeros kept: what torch's passes of the same names
  see, so their orders can be asked of commsched's.
- ``contains_collective(snode)`` and ``contains_wait(snode)`` from
  ``torch._inductor.utils`` (imported when ``reorder`` is called), or the
  callables passed as ``contains_collective=`` / ``contains_wait=``: a
  collective node, a wait node, or else compute.
- ``snode.node.python_kernel_name`` (``getattr``, may be absent), and for
  a grouped node each ``snode.snodes[i].node.python_kernel_name``: it
  marks gemm-like nodes (``"extern_kernels"`` in it, or SDPA flash
  attention) as ``contains_gemm_like`` does, synchronous collectives
  (``torch.ops._dtensor.shard_dim_alltoall.default``) as
  ``is_async_collective`` does, and names the collective's op from the
  functional collective (``torch.ops._c10d_functional.<op>.default``:
  all_gather_into_tensor, reduce_scatter_tensor, all_reduce(_),
  all_to_all_single, broadcast and their coalesced forms), else by
  substring.
- a collective's IR node ``snode.node.constant_args`` (``(group_size,
  group_name)`` or ``(reduce_op, group_size, group_name)``): its process
  group by name, sized through c10d (``_resolve_process_group(name)
  .size()``), its reduce op, and the dtype of ``snode.node.inputs[0]``;
  where one of ``snode.node.inputs`` is a ``ReinterpretView`` smaller than
  the buffer it views (``.data``: a slice), the inputs' numel x itemsize
  become the collective's ``bytes``, what it reads of the buffers it
  names.

Inside a compile (``V.graph`` set) the graph's inputs and outputs come
from Inductor as its memory estimate takes them: the graph inputs a node
reads, freeable unless ``is_nonfreeable_buffers`` says otherwise
(``primals_``, ``arg``, rng states, ``tangents``), freeable ones sized by
``V.graph.get_dep_size_hint`` and the others by their layout (the memory
model does not count them, as Inductor does not); outputs from
``V.graph.get_output_names()``. ``graph_inputs={name: bytes}``,
``graph_outputs=[names]``, ``group_of=`` (node -> group name) and
``group_sizes=`` override what is read. Not read: ``snode.ancestors``
(commsched computes reachability itself, from the edges and the members'
``"from"``).

Mapping onto the graph format (docs/FORMAT.md): a mutation's new name
(size 0; ``buf.get_mutations()`` names a buffer the node reads) is an
alias of that buffer, as memory.py forwards a mutation's users to the real
buffer (``mutation_real_name``): a bucketed collective that writes into a
buffer an earlier copy filled (torch's FX bucketing,
``all_gather_into_tensor_out``) moves that buffer's bytes. A wait's outputs are
aliases of the collective outputs it reads (Inductor's wait is a
mutation of the collective's buffer; every mutation name it writes is one);
a collective output of size 0 (a mutation, i.e. an in-place collective
such as ``all_reduce_``) is an alias of the buffer it writes in place: the
one its mutation names name (a GroupedSchedulerNode's own output when the
group holds the kernel that fills it), else the collective's single data
input, as memory.py folds mutations into the real buffer. With these
rules, commsched's peak for Inductor's order equals
``torch._inductor.memory.estimate_peak_memory`` on the same nodes: tested
on FSDP-like, TP-like, 2D and MoE programs compiled by torch 2.13
(tests/python/test_torch_compile.py). A multi-output kernel (its buffer
of ``MultiOutputLayout``: a coalesced collective, torch.linalg.qr's
kernel, torch's FX bucketing's ``_pre_bucket_*`` custom ops) is read as
memory.py counts it: each part its ``MultiOutput`` extraction node
(``buf2 = buf1[0]``) names is the kernel's own output, of the part's
``size_free``, allocated with the kernel and freed after its own last
reader (the kernel's buffer keeps what is left of its ``size_alloc``: 0);
the extraction node only follows the kernel (it reads the kernel's buffer
and its part, as memory.py frees an unread part at the extraction; from
an async collective, whose outputs only waits read, it just follows it)
and every reader of the part follows the extraction. So a coalesced
collective's parts are its outputs, completed by their waits.

How it is built: :func:`document` reads every node, buffer and
dependency once into the graph format's document (docs/FORMAT.md), and
the library loads it in one call (``Graph.from_document``), which
validates it exactly as the builder API would, with the same located
errors; the pipeline's new order comes back as node indices, mapped onto
the node objects by position. ``reorder(..., timings={})`` reports the
split (reading, loading, the pipeline, mapping back).

``COMMSCHED_DUMP_DIR=DIR`` writes every graph ``reorder`` is handed to
``DIR/inductor-<pid>-<k>.json`` (Inductor's order), and ``export(snodes,
path)`` writes one: files the command-line tool reads (``commsched
optimize``, ``report --html``).

Tested on stand-in objects exposing exactly the attributes above
(Inductor's own scenarios, tests/python/test_inductor.py) and inside real
``torch.compile`` runs (tests/python/test_torch_compile.py).
"""

import contextvars
import functools
import gc
import math
import os
import threading
import time

from . import (Error, Graph, _lib, _optimized_order, _s, default_pipeline,
               optimize)

__all__ = ["reorder", "make_pass", "to_graph", "document", "export"]

_NON_FREEABLE_PREFIXES = ("primals_", "arg", "fwd_rng_state", "bwd_rng_state",
                          "tangents")

# Substrings of python_kernel_name -> commsched collective op, most
# specific first.
_COLLECTIVE_OPS = (
    ("reduce_scatter", "reduce_scatter"),
    ("all_gather", "all_gather"),
    ("all_to_all", "all_to_all"),
    ("alltoall", "all_to_all"),
    ("all_reduce", "all_reduce"),
    ("allreduce", "all_reduce"),
    ("broadcast", "broadcast"),
    ("reduce", "reduce"),
    ("send", "send"),
    ("recv", "recv"),
    ("barrier", "barrier"),
)
_SYNC_COLLECTIVE = "torch.ops._dtensor.shard_dim_alltoall.default"

# The functional collectives' ATen ops (torch.ops._c10d_functional.*, the
# IR node's python_kernel_name) -> commsched op; the substrings above are
# the fallback for kernels this table does not know.
_FUNCTIONAL_OPS = {
    "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_out": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "all_reduce": "all_reduce",
    "all_reduce_": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "all_reduce_coalesced_": "all_reduce",
    "all_to_all_single": "all_to_all",
    "broadcast": "broadcast",
    "broadcast_": "broadcast",
}
_REDUCE_OPS = frozenset({"sum", "avg", "product", "min", "max",
                         "premul_sum"})


def _kind_of(contains_collective, contains_wait):
    """A function snode -> "collective", "wait" or "compute", by
    ``contains_collective`` and ``contains_wait`` (torch._inductor.utils'
    unless given). With torch's own, a node that is not a
    GroupedSchedulerNode is asked through its IR node directly
    (``is_collective(snode.node)``, ``is_wait(snode.node)``), which is
    what those two functions do for it."""
    if contains_collective is not None and contains_wait is not None:
        is_coll, is_wait = contains_collective, contains_wait
    else:
        try:
            from torch._inductor import utils as _utils
        except ImportError as e:
            raise Error("commsched.inductor: torch._inductor.utils is not "
                        "importable; pass contains_collective= and "
                        "contains_wait=") from e
        is_coll = contains_collective or _utils.contains_collective
        is_wait = contains_wait or _utils.contains_wait
    grouped = None
    if contains_collective is None and contains_wait is None:
        try:
            from torch._inductor.ir import FallbackKernel
            from torch._inductor.scheduler import GroupedSchedulerNode
            grouped = GroupedSchedulerNode
            ir_coll, ir_wait = _utils.is_collective, _utils.is_wait
        except (ImportError, AttributeError):  # stand-ins without them
            grouped = None
    # torch's is_collective/is_wait decide by the IR node's type alone
    # (isinstance checks), except for a FallbackKernel, which may be one of
    # torchrec's collectives (an op check): one answer per type, asked once
    # (the call imports ir and, for fallbacks, probes torch.ops.torchrec)
    by_type = {}

    def kind(sn):
        if grouped is not None and not isinstance(sn, grouped):
            node = sn.node
            t = type(node)
            got = by_type.get(t)
            if got is None:
                got = "collective" if ir_coll(node) else \
                    "wait" if ir_wait(node) else "compute"
                if t is not FallbackKernel:
                    by_type[t] = got
            return got
        if is_coll(sn):
            return "collective"
        return "wait" if is_wait(sn) else "compute"
    return kind


def _is_async(nd):
    """1 for a node record of to_graph that is an async collective."""
    return nd["kind"] == "collective" and not any(
        _SYNC_COLLECTIVE in k for k in nd["kernels"])


def _kernel_names(snode):
    leaves = getattr(snode, "snodes", None) or [snode]
    names = []
    for leaf in leaves:
        name = getattr(getattr(leaf, "node", None), "python_kernel_name", None)
        if name:
            names.append(str(name))
    return names


def _is_gemm_like(kernel_names):
    return any("extern_kernels" in k or
               "_scaled_dot_product_flash_attention" in k
               for k in kernel_names)


def _collective_op(kernel_names):
    for k in kernel_names:
        parts = k.split(".")
        # torch.ops._c10d_functional.<op>.default
        if len(parts) >= 2 and "_c10d_functional" in parts:
            op = _FUNCTIONAL_OPS.get(parts[-2])
            if op:
                return op
    for k in kernel_names:
        for needle, op in _COLLECTIVE_OPS:
            if needle in k:
                return op
    return "all_reduce"


def _collective_ir(snode, sizes=None):
    """(group name, group size, reduce op, dtype) of a collective read from
    its IR node (ir._CollectiveKernel: the op's constant arguments are
    (group_size, group_name) or (reduce_op, group_size, group_name)); None
    for what cannot be read. ``sizes`` ({group name: size or None}) keeps
    what c10d said of each group across calls."""
    node = getattr(snode, "node", None)
    args = list(getattr(node, "constant_args", None) or ())
    group = size = reduce_op = dtype = None
    strs = [a for a in args if isinstance(a, str)]
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if strs:
        group = strs[-1]  # group_name is the last argument of every op
        if len(strs) > 1 and strs[0] in _REDUCE_OPS:
            reduce_op = strs[0]
    if group is not None:
        if sizes is not None and group in sizes:
            size = sizes[group]
        else:
            try:
                from torch.distributed import distributed_c10d as c10d
                size = int(c10d._resolve_process_group(group).size())
            except Exception:  # not a registered group: the IR's size
                size = None
            if sizes is not None:
                sizes[group] = size
    if size is None and ints:
        size = int(ints[-1])
    try:
        dt = node.inputs[0].get_dtype()
        name = str(dt).replace("torch.", "")
        dtype = name if name in _DTYPES else None
    except Exception:
        dtype = None
    return group, size, reduce_op, dtype


def _view_read_bytes(snode, written):
    """What a collective reads when one of its IR inputs is a view
    (``ReinterpretView``) smaller than the buffer it names (a slice of a
    graph input: ``all_gather_tensor(x[:4])``): the sum of its inputs'
    numel x itemsize, its ``bytes`` in the graph (the format names whole
    buffers, docs/FORMAT.md "Collective sizes"); None otherwise. Inputs
    naming a buffer in ``written`` (what the node mutates: an ``_out``
    variant's preallocated output) are not read."""
    ins = list(getattr(getattr(snode, "node", None), "inputs", None) or ())
    total, sliced = 0, False
    for x in ins:
        try:
            if str(x.get_name()) in written:
                continue
        except Exception:   # not a named buffer: counted
            pass
        b = _tensor_bytes(x)
        if type(x).__name__ == "ReinterpretView" and \
                b < _tensor_bytes(getattr(x, "data", None)):
            sliced = True
        total += b
    return float(total) if sliced else None


# torch dtype names are the format's (docs/FORMAT.md), "torch." aside.
_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16",
                     "float8_e4m3fn", "float8_e5m2", "int64", "int32",
                     "int16", "int8", "uint8", "bool"})


def _default_size(buf):
    """The bytes Inductor's memory estimate allocates for ``buf``: its
    memory-planning size (memory.py's size_alloc: 0 for a mutation's new
    name, as commsched's aliases), else numel x itemsize of its layout."""
    info = getattr(buf, "mpi_buffer", None)
    if info is not None:
        try:
            return max(0, int(getattr(info, "size_alloc", 0)))
        except (TypeError, ValueError):
            return 0
    return _tensor_bytes(getattr(buf, "node", None))


@functools.lru_cache(maxsize=None)
def _size_api():
    """torch's dtype sizes and a size hint for symbolic dimensions
    (Inductor's, of the graph being compiled when it is called), imported
    once rather than once a call."""
    from torch._inductor.utils import get_dtype_size
    from torch._inductor.virtualized import V
    return get_dtype_size, lambda e: V.graph.sizevars.optimization_hint(
        e, fallback=0)


def _tensor_bytes(node):
    """numel x itemsize of an IR node (a graph input's TensorBox, a
    buffer, a view), read from its layout's fields: what ``get_size()``
    and ``get_dtype()`` return through two to four calls each."""
    try:
        layout = node.layout
        dtype_size, hint = _size_api()
        return max(0, int(_numel(layout.size, hint)) *
                   dtype_size(layout.dtype))
    except Exception:  # symbolic, not a tensor or no torch: unknown, 0
        return 0


def _is_multi_output_layout(buf):
    """1 when ``buf`` (a SchedulerBuffer) is a multi-output kernel's
    buffer (``buf.node.layout`` a ``MultiOutputLayout``)."""
    layout = getattr(getattr(buf, "node", None), "layout", None)
    return type(layout).__name__ == "MultiOutputLayout"


def _part_size(buf, buffer_size):
    """A multi-output kernel's part's bytes: what memory.py frees when the
    part dies (its ``mpi_buffer.size_free``; the part allocates nothing,
    its kernel allocates it), else numel x itemsize; ``buffer_size`` when
    given."""
    if buffer_size is not None:
        return buffer_size(buf)
    info = getattr(buf, "mpi_buffer", None)
    if info is not None:
        try:
            return max(0, int(getattr(info, "size_free", 0)))
        except (TypeError, ValueError):
            return 0
    return _tensor_bytes(getattr(buf, "node", None))


def _mutations(buf):
    """The buffer names ``buf`` (a SchedulerBuffer) mutates
    (``get_mutations()``), [] where it cannot say."""
    try:
        return [str(m) for m in buf.get_mutations()]
    except Exception:  # a stand-in or an IR node without the method
        return []


def _runtime_estimator():
    """A function snode -> Inductor's estimate in milliseconds, as
    ``torch._inductor.comms.estimate_op_runtime`` gives it:
    ``config.estimate_op_runtime`` when a hook is set, else
    ``snode.get_estimated_runtime()`` (also without torch). The config is
    read once for all the nodes of a call rather than once a node: its
    module's ``__getattr__`` was most of the 2.5-2.8 µs a node the
    estimate took on the TP 29-layer graphs."""
    try:
        from torch._inductor import config
        hook = config.estimate_op_runtime
    except ImportError:
        hook = "default"
    if hook == "default":
        return lambda snode: snode.get_estimated_runtime()
    return hook


def _runtime_ns(snode, estimate, exact=False):
    """Inductor's estimate (``estimate``: :func:`_runtime_estimator`'s,
    milliseconds) in nanoseconds; None where it says 0 (its "no
    estimate", e.g. every node on CPU), so that commsched's cost model
    prices the node, unless ``exact`` (``runtimes="inductor"``): then 0
    stays 0."""
    ms = float(estimate(snode))
    return ms * 1e6 if ms > 0 or exact else None


@functools.lru_cache(maxsize=None)
def _flop_api():
    """torch's flop-counting pieces, imported once: countable_fx,
    count_flops_fx, the formula registry, and the code object every
    shape-wrapped formula shares (shape_wrapper's ``nf``), by which a
    formula registered on shapes is told from a raw one."""
    from torch._inductor.fx_utils import countable_fx, count_flops_fx
    from torch.utils.flop_counter import flop_registry, shape_wrapper
    return (countable_fx, count_flops_fx, flop_registry,
            shape_wrapper(lambda: None).__code__)


def _fx_flops(fx_node, memo=None):
    """torch's flop count of one FX node (``count_flops_fx``: the
    FlopCounterMode formula registered for its op), read straight from the
    formula with the shapes of the node's fake values instead of running
    the op under FlopCounterMode: the same number, without a dispatch and
    a pytree walk per call. None where torch counts nothing (an op with no
    formula, an argument without a fake value); torch's own count for a
    formula that takes raw values (higher-order ops). ``memo``, a dict,
    keeps each (op, shapes)'s count across calls."""
    countable_fx, count_flops_fx, registry, shaped = _flop_api()
    if not countable_fx(fx_node) or isinstance(fx_node.target, str):
        return None
    packet = getattr(fx_node.target, "overloadpacket", None)
    formula = registry.get(packet) if packet is not None else None
    raw = getattr(formula, "__wrapped__", None)
    if raw is None or getattr(formula, "__code__", None) is not shaped:
        return count_flops_fx(fx_node)

    def shape(a):
        """An argument as the formula's shape_wrapper hands it on: a
        tensor (an FX node's fake value) by its shape."""
        if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
            return type(a)(shape(x) for x in a)
        meta = getattr(a, "meta", None)
        if meta is not None and hasattr(a, "op"):   # an FX node
            a = meta.get("val", meta.get("example_value"))
            if a is None:
                raise LookupError
        return getattr(a, "shape", a) if hasattr(a, "dim") else a
    try:
        args = shape(fx_node.args)
        kwargs = {k: shape(v) for k, v in fx_node.kwargs.items()}
        out = shape(fx_node.meta.get("val"))
    except LookupError:
        return None
    if memo is None:
        return raw(*args, out_shape=out, **kwargs)
    # a layer's ops repeat the same shapes: one formula call per shape set
    # (some formulas call others through their shape wrapper, a pytree walk
    # of ~100 us)
    try:
        key = (packet, args, tuple(sorted(kwargs.items())), out)
        return memo[key]
    except TypeError:  # an unhashable argument
        return raw(*args, out_shape=out, **kwargs)
    except KeyError:
        got = memo[key] = raw(*args, out_shape=out, **kwargs)
        return got


def _numel(dims, hint):
    """The product of ``dims`` (a shape or a node's ranges) as an int:
    plain integers multiplied directly, anything symbolic through
    ``hint`` (Inductor's size hints) as torch's sympy_product would be."""
    n = 1
    for d in dims:
        try:
            n *= int(d)
        except TypeError:  # a symbol: resolve the whole product
            from torch._inductor.utils import sympy_product
            return hint(sympy_product(dims))
    return n


def _resolve(value):
    """An int from a flop formula's result (a SymInt or sympy expression
    resolved by Inductor's size hints, as estimate_flops does)."""
    if value is None or isinstance(value, int):
        return value
    import torch
    from torch._inductor.virtualized import V
    if isinstance(value, torch.SymInt):
        value = value.node.expr
    return int(V.graph.sizevars.optimization_hint(value, fallback=0))


def _flops(snode, memo=None):
    """``snode.estimate_flops()``'s figure (the count of the IR node's FX
    origin node) by :func:`_fx_flops`; for an extern or template kernel
    whose IR node lost its origin node (FX passes that rebuild the graph,
    such as torch 2.13's collective bucketing, leave it unset), the sum
    over the node's origins, which still name the ATen ops. None where
    neither counts anything. ``memo``: as :func:`_fx_flops`'s."""
    try:
        node = getattr(snode, "node", None)
        if node is None:
            return None
        fx = node.get_origin_node()
        f = _resolve(_fx_flops(fx, memo)) if fx is not None else None
        if f:
            return float(f)
        if not (snode.is_extern() or snode.is_template()):
            return None
        total = sum(_resolve(_fx_flops(o, memo)) or 0
                    for o in getattr(node, "origins", ()))
        return float(total) if total else None
    except Exception:
        return None


class _BufferBytes:
    """The bytes a node reads and writes as Inductor's GPU estimate
    counts them (``get_read_write_buffers_sizes``: per buffer the smaller
    of the node's iteration space times its accesses and the buffer's
    size; a fused node's buffers used only inside it left out), each
    buffer's size worked out once for all its readers rather than once per
    reader, except where torch's figure counts bytes no kernel moves:

    - a WeakDep reads nothing: it only orders the node after a buffer's
      writer (or keeps the buffer alive). torch counts it as an access, and
      for an extern kernel (accesses bounded by nothing: 1e9 elements) as
      a read of the whole buffer;
    - a buffer's accesses are also bounded by the elements their indices
      cover (a MemoryDep's ``get_numel()``, :meth:`_dep_numel`; for an
      extern kernel, which has only StarDeps, the views it reads the
      buffer through, :meth:`_view_extents`). torch bounds them by the
      node's iteration space, and a fused node's (not a SchedulerNode)
      by nothing, so that a fused RMSNorm reading its 4 KiB weight out of
      a bucket of all-gathered parameters is counted for the bucket.

    torch's FX bucketing makes both: on the FSDP 1K-node forward every
    matmul has a WeakDep on its bucket's output (385 MB counted for a
    4096 x 1024 matmul of 17 MB) and every norm reads its weight out of
    one; by torch's figure the bucketed program's compute stream took
    21.0 ms against 10.0 ms unbucketed, by the bytes moved 10.9 ms
    (docs/PERFORMANCE.md, "The Inductor plugin at real size").
    tests/python/test_torch_scale.py checks it against torch's figure,
    WeakDeps taken out, on every node of real compiled programs (where
    the unbucketed programs read no slices, so the bound changes
    nothing); tests/python/test_torch_compile.py a slice read.

    A buffer's parts are (elements, itemsize) pairs: one for a plain
    layout, the MultiOutput users' outputs for a MultiOutputLayout (None,
    counted 0, when a user is not a MultiOutput), the mutated buffers for
    a NoneLayout, (None, bytes) for a TorchBind object."""

    def __init__(self):
        import torch
        from torch._inductor import ir, scheduler as sch
        from torch._inductor.dependencies import MemoryDep, WeakDep
        from torch._inductor.utils import get_dtype_size
        from torch._inductor.virtualized import V
        self._ir, self._sch, self._graph = ir, sch, V.graph
        self._weak, self._memdep = WeakDep, MemoryDep
        self._numels = {}
        self._dtype_size = get_dtype_size
        self._rng = torch._prims.rng_prims.graphsafe_run_with_rng_state
        self._parts = {}
        self._scheduler = None

    def _hint(self, expr):
        if isinstance(expr, int):
            return expr
        return self._graph.sizevars.optimization_hint(expr, fallback=0)

    def _buf_parts(self, buf):
        ir = self._ir
        if buf is None:
            return ()
        if isinstance(buf, ir.TorchBindObject):
            return ((None, buf.get_buf_bytes()),)
        layout = buf.layout
        if isinstance(layout, ir.MultiOutputLayout):
            parts = []
            for user in self._scheduler.name_to_buf[buf.get_name()].users:
                if isinstance(user.node, self._sch.OutputNode):
                    continue
                if not isinstance(user.node.node, ir.MultiOutput):
                    return ()
                for sched_buf in user.node.get_outputs():
                    parts.extend(self._buf_parts(sched_buf.node))
            return tuple(parts)
        if isinstance(layout, ir.NoneLayout):
            parts = []
            for mut in buf.get_mutation_names():
                parts.extend(self._buf_parts(self._graph.get_buffer(mut)))
            return tuple(parts)
        # the layout's own fields: what get_size()/get_dtype() return
        # through two or three calls each (Buffer.get_layout's checks)
        return ((_numel(layout.size, self._hint),
                 self._dtype_size(layout.dtype)),)

    def _parts_of(self, name):
        got = self._parts.get(name)
        if got is None:
            buf = self._graph.name_to_buffer.get(name)
            if buf is None:
                buf = self._graph.graph_inputs.get(name)
            got = self._parts[name] = self._buf_parts(buf)
        return got

    def _view_extents(self, node):
        """{buffer name: elements} for the buffers an extern kernel's IR
        node reads only through views (``ReinterpretView`` inputs): the
        views' elements, summed. Inductor bounds a Triton kernel's access
        to a buffer by its iteration space, but an extern kernel's by
        nothing (1e9 elements), so that it counts a matmul reading one
        weight out of a flat buffer (a flat parameter, a fused q/k/v
        weight sliced in three) for the whole buffer."""
        extents, whole = {}, set()
        for x in getattr(node, "inputs", None) or ():
            for leaf in x if isinstance(x, (list, tuple)) else (x,):
                try:
                    name = leaf.get_name()
                except Exception:   # a shape constant: names no buffer
                    continue
                if isinstance(leaf, self._ir.ReinterpretView):
                    extents[name] = extents.get(name, 0) + _numel(
                        leaf.layout.size, self._hint)
                else:
                    whole.add(name)
        return {n: e for n, e in extents.items() if n not in whole}

    def of(self, snode):
        """The node's read + written bytes (0 for a no-op kernel, a
        MultiOutput and the rng wrapper, as torch counts them)."""
        sch, ir = self._sch, self._ir
        if isinstance(snode, sch.NopKernelSchedulerNode):
            return 0
        if isinstance(snode, sch.ExternKernelSchedulerNode) and (
                isinstance(snode.node, ir.MultiOutput) or (
                    isinstance(snode.node, ir.FallbackKernel) and
                    snode.node.op_overload is self._rng)):
            return 0
        self._scheduler = snode.scheduler
        views = None
        if isinstance(snode, sch.SchedulerNode):
            r = snode.get_ranges()
            numel = _numel(r[0], self._hint) * _numel(r[1], self._hint)
        else:
            numel = int(1e9)
            if isinstance(snode, sch.ExternKernelSchedulerNode):
                views = self._view_extents(snode.node)
        rw = snode.read_writes
        # per buffer: its accesses, and the elements their indices cover
        # (-1: not bounded, a StarDep or an indirect index)
        count, cover = {}, {}
        weak, memdep = self._weak, self._memdep
        written = []
        for deps, writes in ((rw.reads, False), (rw.writes, True)):
            for dep in deps:
                t = type(dep)
                if t is weak:
                    continue
                name = dep.name
                count[name] = count.get(name, 0) + 1
                if writes:
                    written.append(name)
                c = cover.get(name, 0)
                if c >= 0:
                    d = self._dep_numel(dep) if t is memdep else -1
                    cover[name] = c + d if d >= 0 else -1
        if views:
            for name, elems in views.items():
                if name in count and name not in written:
                    cover[name] = elems
        if isinstance(snode, sch.FusedSchedulerNode):
            inside = set(snode.snodes)
            for name in dict.fromkeys(written):
                users = snode.scheduler.name_to_buf[name].users
                if all(u.node in inside for u in users):
                    del count[name]
        total = 0
        known = self._parts
        for name, k in count.items():
            accessed = numel * k
            c = cover[name]
            if 0 <= c < accessed:
                accessed = c
            parts = known.get(name)
            if parts is None:
                parts = self._parts_of(name)
            for elems, itemsize in parts:
                total += itemsize if elems is None else \
                    itemsize * min(accessed, elems)
        return total

    def _dep_numel(self, dep):
        """The elements a MemoryDep's index covers (``get_numel()``: its
        ranges over the variables the index uses), -1 for an indirect
        index; once per (index, ranges) for all the nodes that share them
        (a layer's kernels repeat its predecessor's)."""
        key = (dep.index, dep.var_names, dep.size)
        got = self._numels.get(key)
        if got is None:
            got = self._numels[key] = -1 if dep.is_indirect() else \
                int(self._hint(dep.get_numel()))
        return got


def _read_write_bytes():
    """A function snode -> the bytes it reads and writes as Inductor
    counts them (None where torch cannot say): :class:`_BufferBytes`
    inside a compile, else the node's own ``get_read_write_buffers_sizes``
    (stand-ins, or a node the counter does not know)."""
    try:
        counter = _BufferBytes()
    except Exception:  # no torch
        counter = None

    def of(snode):
        try:
            try:
                b = counter.of(snode)
            except Exception:
                b = snode.get_read_write_buffers_sizes()
            return float(b) if b else None
        except Exception:
            return None
    return of


@functools.lru_cache(maxsize=None)
def _fused_node_class():
    """torch's FusedSchedulerNode (imported once), or None without torch."""
    try:
        from torch._inductor.scheduler import FusedSchedulerNode
    except ImportError:
        return None
    return FusedSchedulerNode


def _outputs_from(snode, reads):
    """For a fused kernel (a FusedSchedulerNode; a GroupedSchedulerNode is
    not one), the inputs each of its buffers is computed from: those its
    producing member depends on, directly or through the other members it
    depends on, as Inductor's compute_ancestors relates the members before
    fusion (it follows every dependency in ``unmet_dependencies``, fake
    WeakDeps included; ``read_writes.reads`` adds the graph inputs, which
    the scheduler prunes from them). ``{buffer name: [names of reads, in
    their order]}`` for the buffers made from fewer than all of ``reads``
    (the format's "from"); ``{}`` for any other node. O(members x reads)."""
    fused = _fused_node_class()
    members = getattr(snode, "snodes", None)
    if fused is None or not isinstance(snode, fused) or not members:
        return {}
    owner = {}
    for m in members:
        for bname in m.get_buffer_names():
            owner[str(bname)] = m
    wanted = frozenset(reads)
    closed = {}

    def close(m):
        """The inputs among ``reads`` that member m depends on."""
        got = closed.get(m)
        if got is None:
            closed[m] = got = set()
            for dep in (*m.unmet_dependencies, *m.read_writes.reads):
                name = str(dep.name)
                other = owner.get(name)
                if other is None:
                    if name in wanted:
                        got.add(name)
                elif other is not m:
                    got |= close(other)
        return got
    out = {}
    for bname, m in owner.items():
        got = close(m)
        if len(got) < len(wanted):
            out[bname] = [r for r in reads if r in got]
    return out


def _graph_io():
    """Inductor's graph inputs {name: (bytes, freeable)} as its memory
    estimate sees them (memory.get_freeable_input_buf: a dependency's size
    hint; primals_/arg/tangents/rng states are not freeable) and its output
    names, from V.graph; None outside a compile."""
    try:
        from torch._inductor.virtualized import V
        graph = V.graph
        inputs = graph.graph_inputs
        outputs = graph.get_output_names()
    except Exception:
        return None
    return graph, inputs, list(outputs)


def _finite(value, path):
    """value as a float for the document, or an Error at ``path`` (JSON
    has no NaN or infinity, so the loader could not say it)."""
    v = float(value)
    if not math.isfinite(v):
        raise Error("%s: %r is not a finite number" % (path, value),
                    path=path)
    return v


def _without_gc(fn):
    """``fn`` with Python's cyclic garbage collector paused for the call
    (and restored after it, if it was on). The adapter allocates a few
    hundred small containers a node, all freed by reference counting; but
    inside a compile the collector tracks millions of objects (1.7 M when
    Inductor hands over a 2,753-node TP graph), so the allocations trigger
    full collections that cost more than the adapter: ``document`` took
    520 µs of CPU a node in a call where one ran against 77-96 µs in the
    others, and at 9,153 nodes the plugin's first call read the nodes in
    17.8 s where the later ones took 1.0-3.5 s (docs/PERFORMANCE.md, "The
    Inductor plugin at real size")."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return call


def _inductor_thread_state():
    """A function that gives the calling thread the values Inductor's
    virtualized globals (``V.graph``, ``V.fake_mode``, ...) hold in this
    one: they live in a ``threading.local``. Nothing to copy without
    torch."""
    try:
        from torch._inductor import virtualized
        local = virtualized.threadlocal
        values = dict(vars(local))
    except (ImportError, AttributeError, TypeError):
        return lambda: None

    def adopt():
        for key, value in values.items():
            setattr(local, key, value)
    return adopt


def _on_fresh_stack(fn):
    """``fn`` run in a new thread (this one waits for it; its result or
    exception comes back), with Inductor's thread-local globals carried
    over, the caller's context variables (torch's config patches) run in,
    and the collector paused (:func:`_without_gc`). Why: CPython 3.11
    keeps frames in 16 KiB chunks it maps and unmaps as the stack crosses
    them, and Inductor hands its nodes over some 60 frames deep, at a depth
    that varies with the program; where the adapter's loop sits just below
    a chunk's end, each call it makes maps a chunk and unmaps it on return,
    a page fault each (3-10 µs on the measuring machine). ``document`` on
    the TP 29-layer backward (1,014 nodes) made 13,400 faults and took
    204 µs of CPU a node called directly, 2 faults and 89 µs in a thread
    (docs/PERFORMANCE.md, "The plugin's cost"). A new thread's stack starts
    empty, so the adapter's few frames stay in one chunk."""
    paused = _without_gc(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        adopt = _inductor_thread_state()
        box = {}

        def run():
            adopt()
            try:
                box["result"] = paused(*args, **kwargs)
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e
        # the caller's context variables too: torch's config patches
        # (config.patch(estimate_op_runtime=...), as PyTorch's own tests
        # set their cost models) are per thread through a ContextVar
        context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(run,),
                                  name="commsched-adapter")
        worker.start()
        worker.join()
        if "error" in box:
            raise box["error"]
        return box["result"]
    return call


@_on_fresh_stack
def document(snodes, *, graph_inputs=None, graph_outputs=None,
             buffer_size=None, group_of=None, group_sizes=None,
             contains_collective=None, contains_wait=None, name="inductor",
             runtimes="auto"):
    """The commsched graph of ``snodes`` as a format-v1 document (a dict,
    docs/FORMAT.md; the mapping described in the module documentation),
    nodes in the order given. Inside a compile, graph inputs, outputs,
    process groups and runtimes come from Inductor (V.graph, the IR nodes,
    estimate_op_runtime); the keywords override them.
    ``runtimes="inductor"`` gives every node exactly Inductor's estimate,
    zeros included (the passes then see what torch's passes of the same
    names see); ``"auto"`` (the default) prices with commsched's cost model
    what Inductor leaves at 0. Reads every node, buffer and dependency
    once: O(nodes + buffers + dependencies).
    """
    if runtimes not in ("auto", "inductor"):
        raise Error("commsched.inductor: runtimes must be \"auto\" or "
                    "\"inductor\", got %r" % (runtimes,), path="runtimes")
    exact = runtimes == "inductor"
    kind_of = _kind_of(contains_collective, contains_wait)
    size_of = buffer_size or _default_size
    group_sizes = dict(group_sizes or {})
    io = _graph_io() if graph_inputs is None or graph_outputs is None \
        else None
    if graph_outputs is None:
        graph_outputs = io[2] if io else ()
    # name -> (bytes, freeable): given, or what Inductor's estimate uses
    # (sized in pass 2, at a graph input's first read)
    inputs_known = {}
    graph_in = None
    if graph_inputs is not None:
        for iname, size in dict(graph_inputs).items():
            inputs_known[str(iname)] = (int(size or 0), not str(iname)
                                        .startswith(_NON_FREEABLE_PREFIXES))
    elif io:
        from torch._inductor.utils import is_nonfreeable_buffers
        graph_in = io[1]

        def size_input(dep):
            """A freeable input's bytes as Inductor's estimate takes them;
            the others (parameters, saved activations), which it leaves
            out, at their real size."""
            freeable = not is_nonfreeable_buffers(dep)
            size = io[0].get_dep_size_hint(dep) if freeable else \
                _tensor_bytes(graph_in[dep.name])
            inputs_known[dep.name] = (int(size), freeable)

    # Pass 1: names, outputs and producers.
    estimate = _runtime_estimator()
    nodes = []
    producer = {}   # buffer name -> node index
    op_owner = {}   # operation name -> node index
    extractions = []       # (index, its buffer): MultiOutput nodes
    for i, sn in enumerate(snodes):
        nname = str(sn.get_name())
        outs, muts = [], {}
        for buf in sn.get_outputs():
            bname = str(buf.get_name())
            outs.append([bname, size_of(buf), None])
            muts[bname] = _mutations(buf)
        if type(getattr(sn, "node", None)).__name__ == "MultiOutput" and \
                len(outs) == 1:
            extractions.append((i, sn.get_outputs()[0]))
        for bname in sn.get_buffer_names():
            bname = str(bname)
            if bname not in muts:
                outs.append([bname, 0, None])
                muts[bname] = []
        for o in outs:
            producer.setdefault(o[0], i)
        for op_name in sn.get_operation_names():
            op_owner.setdefault(str(op_name), i)
        op_owner.setdefault(nname, i)
        kind = kind_of(sn)
        nodes.append({"sn": sn, "name": nname, "kind": kind, "outs": outs,
                      "muts": muts,
                      "kernels": _kernel_names(sn),
                      "runtime": _runtime_ns(sn, estimate, True) if exact
                      else 0.0 if kind == "wait" else
                      _runtime_ns(sn, estimate)})

    # Pass 1b: multi-output kernels. The part a MultiOutput extraction node
    # names (buf2 = buf1[0]) is its kernel's own output, of the part's
    # bytes, as memory.py counts it: allocated with the kernel (whose
    # MultiOutputLayout buffer, of their total, keeps what is left: 0) and
    # freed after its own last use. The extraction, which launches no
    # kernel, only names the part: it follows the kernel, and every reader
    # of the part follows it (pass 2). One level: an extraction from an
    # extraction is left as it is.
    parts = {}        # part name -> extraction index
    extraction = {}   # extraction index -> (kernel index, part name)
    fixed = set()     # kernel buffers: real, never an alias
    extracting = {e for e, _ in extractions}
    for e, pbuf in extractions:
        kbs = {str(d.name) for d in snodes[e].unmet_dependencies
               if getattr(d, "is_fake", None) is None and
               producer.get(str(d.name), e) not in extracting}
        kernel = [buf for name in kbs
                  for buf in snodes[producer[name]].get_outputs()
                  if str(buf.get_name()) == name and
                  _is_multi_output_layout(buf)]
        if len(kernel) != 1:
            continue
        kb = str(kernel[0].get_name())
        k = producer[kb]
        pname, size = nodes[e]["outs"][0][0], _part_size(pbuf, buffer_size)
        del nodes[e]["outs"][0], nodes[e]["muts"][pname]
        for o in nodes[k]["outs"]:
            if o[0] == kb:
                o[1] = max(0, o[1] - size)
        nodes[k]["outs"].append([pname, size, None])
        nodes[k]["muts"][pname] = []
        producer[pname] = k
        parts[pname] = e
        extraction[e] = (k, pname)
        fixed.add(kb)
        if not exact:
            nodes[e]["runtime"] = 0.0

    # Pass 2: dependencies. MemoryDep/StarDep (no is_fake) read data; so
    # does a non-fake WeakDep on a buffer, for memory: Inductor keeps a
    # buffer alive until its last successor of either kind
    # (assign_memory_planning_info_for_scheduler_buffers). A WeakDep on an
    # operation orders only. A fake WeakDep on a later node (an earlier
    # pass in Inductor's list broke it, as the iterative passes may) is
    # dropped; the iterative passes ignore fake edges anyway. Graph inputs
    # are read through read_writes (unmet_dependencies holds only the
    # scheduler's own buffers).
    # A reader of a multi-output kernel's part also follows the part's
    # extraction node. The extraction reads its kernel's buffer and keeps
    # its part alive at least to itself (memory.py frees an unread part
    # there), except from an async collective (a coalesced one), whose
    # outputs only its waits read: it just follows it.
    used_inputs = {}    # graph input name -> None, in first-use order
    for i, nd in enumerate(nodes):
        data, keep, after, after_fake = [], [], [], []
        own = nd["muts"]
        ext = extraction.get(i)
        from_async = ext is not None and _is_async(nodes[ext[0]])
        if ext is not None and not from_async:
            keep.append(ext[1])
        for dep in nd["sn"].unmet_dependencies:
            dname = str(dep.name)
            if dname in own:
                continue
            is_fake = getattr(dep, "is_fake", None)
            src = producer.get(dname)
            if dname in parts and parts[dname] != i:
                e = parts[dname]
                if not (is_fake and e > i):
                    (after_fake if is_fake else after).append(
                        nodes[e]["name"])
            if from_async and src == ext[0]:
                after.append(nodes[src]["name"])
                continue
            if is_fake is None:
                if src is None:
                    used_inputs.setdefault(dname)  # a buffer from outside
                data.append(dname)
                continue
            if not is_fake and src is not None and src < i:
                keep.append(dname)
                continue
            if src is None:
                src = op_owner.get(dname)
            if src is None or src == i or (is_fake and src > i):
                continue
            (after_fake if is_fake else after).append(nodes[src]["name"])
        for dep in getattr(getattr(nd["sn"], "read_writes", None), "reads",
                           ()):
            dname = str(dep.name)
            if graph_in is not None and dname not in inputs_known and \
                    dname in graph_in:
                size_input(dep)
            if dname in inputs_known and dname not in producer:
                is_fake = getattr(dep, "is_fake", None)
                if is_fake:
                    continue
                used_inputs.setdefault(dname)
                (data if is_fake is None else keep).append(dname)
        nd["data"] = list(dict.fromkeys(data))
        nd["reads"] = list(dict.fromkeys(data + keep))
        nd["from"] = _outputs_from(nd["sn"], nd["reads"])
        nd["after"] = list(dict.fromkeys(after))
        nd["after_fake"] = [n for n in dict.fromkeys(after_fake)
                            if n not in nd["after"]]

    # Pass 3: aliases (mutations, waits and in-place collectives), from
    # the reads alone. A mutation's new name (size 0: memory.py's
    # mutation_real_name) is an alias of the buffer it mutates, as
    # memory.py forwards its users to the real buffer: a bucketed
    # collective writing into a buffer a copy filled keeps that buffer's
    # bytes. The mutated buffer may be one of the node's own outputs: a
    # GroupedSchedulerNode holding an in-place all_reduce_ and the kernel
    # that fills its input.
    for nd in nodes:
        own = {o[0] for o in nd["outs"]}
        for o in nd["outs"]:
            if o[1] == 0 and o[2] is None and o[0] not in fixed:
                for m in nd["muts"].get(o[0], ()):
                    if m in nd["reads"] or (m in own and m != o[0]):
                        o[2] = m
                        break
    coll_bufs = set()
    for nd in nodes:
        if nd["kind"] == "collective":
            # its other outputs of size 0 (an in-place collective's
            # NoneLayout buffer) alias the buffer it writes in place: the
            # one its mutation names name, else its single data input
            target = next((o[2] for o in nd["outs"] if o[2] is not None),
                          nd["data"][0] if len(nd["data"]) == 1 else None)
            if target is not None:
                for o in nd["outs"]:
                    if o[1] == 0 and o[2] is None and o[0] != target and \
                            o[0] not in fixed:
                        o[2] = target
            coll_bufs.update(o[0] for o in nd["outs"])
    for nd in nodes:
        if nd["kind"] == "wait":
            # Inductor's wait_tensor writes mutation names (size 0) of the
            # buffer it completes, one for each name it mutates: every one
            # is a view of a completed buffer (the last, past their count)
            completed = [r for r in nd["data"] if r in coll_bufs]
            for k, o in enumerate(nd["outs"]):
                if completed and (k < len(completed) or o[1] == 0):
                    o[2] = completed[min(k, len(completed) - 1)]

    groups = {}
    ir_of_group = {}    # process group name -> size c10d gives
    for nd in nodes:
        if nd["kind"] == "collective":
            ir_group, ir_size, reduce_op, dtype = _collective_ir(
                nd["sn"], ir_of_group)
            gname = str(group_of(nd["sn"])) if group_of else \
                (ir_group or "default")
            nd["group"], nd["reduce_op"], nd["dtype"] = gname, reduce_op, dtype
            size = group_sizes.get(gname, ir_size or 2)
            groups.setdefault(gname, int(size))
    rw_bytes = None
    flop_memo = {}
    out_nodes = []
    for i, nd in enumerate(nodes):
        kernels = nd["kernels"]
        node = {"name": nd["name"], "kind": nd["kind"]}
        if nd["kind"] == "collective":
            node["op"] = _collective_op(kernels)
            node["group"] = nd["group"]
            if any(_SYNC_COLLECTIVE in k for k in kernels):
                node["async"] = False
            if nd["dtype"]:
                node["dtype"] = nd["dtype"]
            if nd["reduce_op"]:
                node["reduce_op"] = nd["reduce_op"]
            read = _view_read_bytes(
                nd["sn"], {m for ms in nd["muts"].values() for m in ms})
            if read is not None:
                node["bytes"] = read
        elif nd["kind"] == "compute":
            if kernels:
                node["op"] = kernels[0]
            if _is_gemm_like(kernels):
                node["gemm_like"] = True
        if nd["reads"]:
            node["inputs"] = nd["reads"]
        if nd["outs"]:
            node["outputs"] = [{"name": o[0], "alias_of": o[2]} if o[2] else
                               {"name": o[0], "size": o[1]}
                               for o in nd["outs"]]
            if nd["from"]:
                for out in node["outputs"]:
                    if out["name"] in nd["from"]:
                        out["from"] = nd["from"][out["name"]]
        if nd["after"]:
            node["after"] = nd["after"]
        if nd["after_fake"]:
            node["after_fake"] = nd["after_fake"]
        if nd["runtime"] is not None:
            node["runtime_ns"] = _finite(nd["runtime"],
                                         "nodes[%d].runtime_ns" % i)
        elif nd["kind"] == "compute":
            flops = _flops(nd["sn"], flop_memo)
            if flops is not None:
                node["flops"] = _finite(flops, "nodes[%d].flops" % i)
            if rw_bytes is None:
                rw_bytes = _read_write_bytes()
            b = rw_bytes(nd["sn"])
            if b:
                node["bytes"] = _finite(b, "nodes[%d].bytes" % i)
        out_nodes.append(node)
    doc = {"format": "commsched-graph", "version": 1}
    if name is not None:
        doc["name"] = str(name)
    doc["groups"] = [{"name": g, "size": s} for g, s in groups.items()]
    doc["inputs"] = []
    for iname in used_inputs:
        size, freeable = inputs_known.get(iname, (0, False))
        doc["inputs"].append({"name": iname, "size": size,
                              "freeable": bool(freeable)})
    doc["outputs"] = [out for out in dict.fromkeys(str(o) for o in
                                                   graph_outputs)
                      if out in producer or out in used_inputs]
    doc["nodes"] = out_nodes
    return doc


def to_graph(snodes, **kwargs):
    """The commsched :class:`~commsched.Graph` of ``snodes``, finished:
    :func:`document` (same keywords) loaded by the library in one call.
    Raises :class:`commsched.Error` with a located message (``nodes[3].
    inputs[0]: ...``, nodes counted in the order given) when the nodes do
    not form a valid graph."""
    return Graph.from_document(document(list(snodes), **kwargs))


def export(snodes, path, **kwargs):
    """Writes the graph of ``snodes`` (:func:`to_graph` with ``kwargs``) to
    ``path`` as a commsched graph file, nodes in the order given: what
    ``commsched optimize``, ``simulate`` and ``report`` read. Returns the
    path."""
    to_graph(list(snodes), **kwargs).save(path)
    return path


def _dump(graph):
    """With COMMSCHED_DUMP_DIR set, every graph reorder() is handed is
    written there as inductor-<pid>-<k>.json (the first free k)."""
    d = os.environ.get("COMMSCHED_DUMP_DIR")
    if not d:
        return
    os.makedirs(d, exist_ok=True)
    k = 0
    while True:
        path = os.path.join(d, "inductor-%d-%d.json" % (os.getpid(), k))
        if not os.path.exists(path):
            graph.save(path)
            return
        k += 1


def _rewriting_passes(passes):
    """The passes in the list (None: the default pipeline) that rewrite the
    graph (commsched_pass_rewrites: the bucketing passes)."""
    lib = _lib.load()
    if passes is None:
        names = default_pipeline()
    elif isinstance(passes, str):
        names = passes.split(",")
    else:
        names = list(passes)
    rewrites = {_s(lib.commsched_pass_name(i))
                for i in range(lib.commsched_pass_count())
                if lib.commsched_pass_rewrites(i)}
    return [n for n in dict.fromkeys(names) if n in rewrites]


def reorder(snodes, *, passes=None, graph_inputs=None, graph_outputs=None,
            buffer_size=None, group_of=None, group_sizes=None,
            contains_collective=None, contains_wait=None, runtimes="auto",
            timings=None, **knobs):
    """Returns ``snodes`` (the same objects) in the order commsched's
    pipeline chooses. ``passes`` None runs the library's default pipeline;
    otherwise a list of pass names or a comma-separated string. Other
    keyword arguments are knobs by their Inductor config names
    (``reorder_iterative_peak_memory_budget=0.1``) or the options of
    :func:`commsched.optimize` (``device``, ``cost_model``,
    ``comm_streams``, ``verify``); ``runtimes`` as :func:`document` takes
    it. Raises :class:`commsched.Error` with a located message when the
    nodes do not form a valid graph.

    ``timings``, a dict, receives the call's wall-clock split in seconds:
    ``read`` (reading Inductor's objects into the graph document),
    ``load`` (the library validating and indexing it), ``pipeline`` (the
    passes and the before/after simulations, in C) and ``map`` (the order
    back onto the node objects). Cost: linear in the nodes, buffers and
    dependencies, plus the pipeline's own.
    """
    clock = time.perf_counter
    t0 = clock()
    snodes = list(snodes)
    if not snodes:
        return snodes
    rewriting = _rewriting_passes(passes)
    if rewriting:
        raise Error("commsched.inductor: %s rewrite the graph (new nodes); "
                    "only reordering passes can run on Inductor's scheduler "
                    "nodes" % ", ".join(rewriting), path="passes")
    doc = document(snodes, graph_inputs=graph_inputs,
                   graph_outputs=graph_outputs, buffer_size=buffer_size,
                   group_of=group_of, group_sizes=group_sizes,
                   contains_collective=contains_collective,
                   contains_wait=contains_wait, runtimes=runtimes)
    t1 = clock()
    g = Graph.from_document(doc)
    t2 = clock()
    _dump(g)
    order, ran = _optimized_order(g, passes, **knobs)
    t3 = clock()
    if len(order) != len(snodes):
        raise Error("commsched.inductor: the pipeline %r created or removed "
                    "nodes; only reordering passes can be used on scheduler "
                    "nodes" % ran)
    # the document keeps the nodes' order: graph node i is snodes[i]
    out = [snodes[i] for i in order]
    if timings is not None:
        timings.update(read=t1 - t0, load=t2 - t1, pipeline=t3 - t2,
                       map=clock() - t3)
    return out


def make_pass(**kwargs):
    """A ``list[snode] -> list[snode]`` callable with fixed arguments for
    ``config.reorder_for_compute_comm_overlap_passes``:
    ``make_pass(passes=["sink_waits_iterative"], graph_outputs=...)``."""
    fn = functools.partial(reorder, **kwargs)
    functools.update_wrapper(fn, reorder)
    fn.__name__ = "commsched_reorder"
    return fn
