"""Stand-ins for Inductor's scheduler objects, exposing exactly the
attributes commsched.inductor documents that it reads (PyTorch 2.x cannot
be installed here):

  BaseSchedulerNode: get_name(), get_outputs(), get_buffer_names(),
                     get_operation_names(), unmet_dependencies,
                     get_estimated_runtime(), node (.python_kernel_name),
                     snodes (grouped nodes only)
  SchedulerBuffer:   get_name(), mpi_buffer (.size_alloc, .size_free),
                     get_mutations(), node (.layout)
  MemoryDep/StarDep: name
  WeakDep:           name, mutating_buf, is_fake

Every attribute read on a node or buffer is recorded in ACCESSED so the
tests can prove nothing else is touched. `ancestors` exists (the seed's
_schedule_for_comm reads it) but commsched must not need it.

`install_fake_torch()` provides torch._inductor.utils.contains_collective
and contains_wait, implemented as Inductor's are (isinstance checks on
snode.node, recursing into grouped nodes), so the adapter's default import
path runs.
"""

import sys
import types

ACCESSED = set()


class _Recorded:
    """Records every public attribute read (name, by class)."""

    def __getattribute__(self, name):
        if not name.startswith("_"):
            ACCESSED.add("%s.%s" % (type(self).__name__, name))
        return object.__getattribute__(self, name)


class MemoryPlanningInfoForBuffer:
    def __init__(self, size_alloc, size_free):
        self.size_alloc = size_alloc
        self.size_free = size_free


class SchedulerBuffer(_Recorded):
    def __init__(self, name, size, mutations=(), size_free=None, node=None):
        self._name = name
        self.mpi_buffer = MemoryPlanningInfoForBuffer(
            size, size if size_free is None else size_free)
        self._mutations = list(mutations)
        self.node = node   # its IR node (.layout), where a test needs it

    def get_name(self):
        return self._name

    def get_mutations(self):
        return list(self._mutations)


class MemoryDep:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class StarDep:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class WeakDep:
    __slots__ = ("name", "mutating_buf", "is_fake")

    def __init__(self, name, mutating_buf, is_fake=False):
        self.name = name
        self.mutating_buf = mutating_buf
        self.is_fake = is_fake


# IR node classes, named as Inductor's are (utils.is_collective / is_wait
# test the class).
class _IRNode:
    def __init__(self, python_kernel_name=None):
        if python_kernel_name is not None:
            self.python_kernel_name = python_kernel_name


class ComputedBuffer(_IRNode):
    pass


class ExternKernelOut(_IRNode):
    pass


class FallbackKernel(_IRNode):
    pass


class _CollectiveKernel(_IRNode):
    pass


class MultiOutput(_IRNode):
    """An extraction (buf2 = buf1[0]) from a multi-output kernel."""


class MultiOutputLayout:
    """The layout of a multi-output kernel's buffer."""


class MultiOutputKernelBuffer:
    """A multi-output kernel buffer's IR node: only its layout is read."""

    def __init__(self):
        self.layout = MultiOutputLayout()


class _WaitKernel(_IRNode):
    pass


class SchedulerNode(_Recorded):
    def __init__(self, name, node, outputs, deps, runtime):
        self._name = name
        self.node = node
        self._outputs = outputs
        self.unmet_dependencies = set(deps)
        self._runtime = runtime
        self.ancestors = set()  # present, as in Inductor; must not be read

    def get_name(self):
        return self._name

    def get_outputs(self):
        return list(self._outputs)

    def get_buffer_names(self):
        return {b.get_name() for b in self._outputs}

    def get_operation_names(self):
        return {self._name}

    def get_estimated_runtime(self):
        return self._runtime

    def __repr__(self):
        return self._name


class GroupedSchedulerNode(SchedulerNode):
    def __init__(self, name, snodes):
        outs = [b for s in snodes for b in s.get_outputs()]
        own = {b.get_name() for b in outs}
        deps = {d for s in snodes for d in s.unmet_dependencies
                if d.name not in own}
        super().__init__(name, None, outs, deps,
                         sum(s.get_estimated_runtime() for s in snodes))
        self.snodes = list(snodes)

    def get_operation_names(self):
        return {n for s in self.snodes for n in s.get_operation_names()}


def is_collective(node):
    return isinstance(node, _CollectiveKernel)


def is_wait(node):
    return isinstance(node, _WaitKernel)


def contains_collective(snode, filter_fn=None):
    if isinstance(snode, GroupedSchedulerNode):
        return any(contains_collective(x, filter_fn) for x in snode.snodes)
    return is_collective(snode.node) and (filter_fn is None or
                                          filter_fn(snode))


def contains_wait(snode):
    if isinstance(snode, GroupedSchedulerNode):
        return any(contains_wait(x) for x in snode.snodes)
    return is_wait(snode.node)


def install_fake_torch():
    """Puts torch, torch._inductor and torch._inductor.utils (with the two
    predicates) into sys.modules; returns a function that removes them."""
    saved = {k: sys.modules.get(k)
             for k in ("torch", "torch._inductor", "torch._inductor.utils")}
    torch = types.ModuleType("torch")
    inductor = types.ModuleType("torch._inductor")
    utils = types.ModuleType("torch._inductor.utils")
    utils.contains_collective = contains_collective
    utils.contains_wait = contains_wait
    utils.is_collective = is_collective
    utils.is_wait = is_wait
    torch._inductor = inductor
    inductor.utils = utils
    sys.modules.update({"torch": torch, "torch._inductor": inductor,
                        "torch._inductor.utils": utils})

    def remove():
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return remove


MM = "extern_kernels.mm"
ALL_REDUCE_ = "torch.ops._c10d_functional.all_reduce_.default"
ALL_REDUCE = "torch.ops._c10d_functional.all_reduce.default"
ALL_GATHER = "torch.ops._c10d_functional.all_gather_into_tensor.default"
WAIT = "torch.ops._c10d_functional.wait_tensor.default"
SHARD_DIM_ALLTOALL = "torch.ops._dtensor.shard_dim_alltoall.default"


class Step:
    """Builds a list of stand-in scheduler nodes the way Inductor's
    scheduler would hand them to a reorder pass: each node's buffers are
    named buf<i>, dependencies are MemoryDeps on producers' buffers, a
    wait's output is a mutation of the collective's buffer (size 0), and an
    in-place collective's output is a mutation of its input (size 0)."""

    def __init__(self, size=16):
        self.size = size
        self.snodes = []
        self.buf = {}  # node name -> its (first) buffer name

    def _add(self, name, node, reads, size, runtime, weak=(), fake=()):
        bname = "buf%d" % len(self.snodes)
        deps = [MemoryDep(self.buf.get(r, r)) for r in reads]
        deps += [WeakDep(self.buf[w], bname) for w in weak]
        deps += [WeakDep(self.buf[f], bname, is_fake=True) for f in fake]
        sn = SchedulerNode(name, node, [SchedulerBuffer(bname, size)], deps,
                           runtime)
        self.buf[name] = bname
        self.snodes.append(sn)
        return sn

    def mm(self, name, *reads, runtime=5):
        return self._add(name, ExternKernelOut(MM), reads, self.size, runtime)

    def pointwise(self, name, *reads, runtime=1):
        return self._add(name, ComputedBuffer(), reads, self.size, runtime)

    def collective(self, name, *reads, kernel=ALL_REDUCE, runtime=100,
                   in_place=False, weak=(), fake=(), size=None):
        return self._add(name, _CollectiveKernel(kernel), reads,
                         0 if in_place else (size or self.size), runtime,
                         weak=weak, fake=fake)

    def wait(self, name, coll, runtime=0):
        return self._add(name, _WaitKernel(WAIT), [coll], 0, runtime)

    def names(self, snodes):
        return [s.get_name() for s in snodes]
