"""commsched: order a training step's compute, collective and wait nodes so
communication hides behind compute without raising peak memory.

A thin ctypes binding of libcommsched (standard library only)::

    import commsched
    g = commsched.Graph("step")
    g.add_group("dp", size=8)
    g.add_input("x", 4 << 20)
    g.compute("mm", inputs=["x"], outputs=[("y", 4 << 20)], runtime_ns=5e4)
    ...
    result = commsched.optimize(g)            # the default pipeline
    result.order                              # node names, new order
    result.before.makespan_ns, result.after.makespan_ns

Errors raise :class:`commsched.Error`, whose text names the place
(``nodes[3].inputs[1]: unknown buffer "w9"``). Functions release the GIL
while C runs (ctypes does), so different graphs can be optimized in
parallel threads. ``commsched.inductor.reorder`` plugs the library into
PyTorch Inductor's ``reorder_for_compute_comm_overlap_passes``.
"""

import collections
import contextlib
import ctypes as _ctypes
import dataclasses
import math
import threading
import weakref

from . import _import, _lib
from ._import import ImportMessage, TraceWarning

__all__ = [
    "Error", "Graph", "Output", "alias", "optimize", "simulate", "Result",
    "check_order",
    "load", "import_trace", "ImportMessage", "TraceWarning",
    "SimTotals", "PassStats", "NodeStats", "BucketStats", "OverlapStats",
    "passes", "knobs", "default_pipeline", "version",
]

_KINDS = {"compute": 0, "collective": 1, "wait": 2}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_STATS_KINDS = {0: None, 1: "reorder", 2: "sink", 3: "bucket", 4: "overlap"}
_NONE = 0xFFFFFFFF  # COMMSCHED_NONE: no node, no position


def _b(s):
    return None if s is None else str(s).encode()


def _s(b):
    return None if b is None else b.decode()


class Error(Exception):
    """A failure reported by libcommsched.

    ``status`` is the status name (``"EINVAL"``, ``"EGRAPH"``, ...),
    ``code`` its number, ``path`` the JSON path or option key it concerns
    (``""`` when none), ``line``/``column`` the place of a JSON syntax
    error (0 when none), ``text`` the bare message. ``str(error)`` is the
    located message the CLI would print.
    """

    def __init__(self, message, status="EINVAL", code=None, path="", line=0,
                 column=0, text=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.path = path
        self.line = line
        self.column = column
        self.text = message if text is None else text

    @classmethod
    def _from(cls, lib, err, status, file=None):
        buf = _ctypes.create_string_buffer(2048)
        lib.commsched_error_format(_ctypes.byref(err), _b(file), buf,
                                   len(buf))
        code = err.status if err.status else status
        return cls(buf.value.decode(errors="replace"),
                   status=_s(lib.commsched_status_name(code)), code=code,
                   path=err.path.decode(errors="replace"), line=err.line,
                   column=err.column, text=err.text.decode(errors="replace"))


def _call(lib, fn, *args, file=None):
    """Calls fn(*args, &err) and raises Error on a non-zero status."""
    err = _lib.ErrorStruct()
    try:
        st = fn(*args, _ctypes.byref(err))
    except _ctypes.ArgumentError as e:  # e.g. a size beyond int64
        raise Error("bad argument: %s" % e) from None
    if st != 0:
        raise Error._from(lib, err, st, file)


def _int64(v, what):
    """v as an int64 for C; ctypes would silently wrap larger values."""
    v = int(v)
    if not -(1 << 63) <= v < (1 << 63):
        raise Error("%s %d does not fit in 64 bits" % (what, v))
    return v


def _strings(items):
    items = [_b(x) for x in items]
    arr = (_ctypes.c_char_p * max(1, len(items)))(*items)
    return arr, len(items)


Output = collections.namedtuple("Output", "name size alias_of from_",
                                defaults=(0, None, None))
Output.__doc__ = """One node output: a real buffer of ``size`` bytes, or
(``alias_of`` set) an alias of a buffer the node reads or of its own earlier
output, which allocates nothing (a wait's result, a view, an in-place
collective). ``from_``, a list of names of the node's inputs, says which of
them the output is computed from (the format's ``"from"``: a fused kernel's
outputs); None, the default, is all of them."""


def alias(name, of):
    """An alias output: ``alias("w", of="ag_out")``."""
    return Output(name, 0, of)


def _output(o):
    if isinstance(o, Output):
        return o
    if isinstance(o, str):
        return Output(o)
    if isinstance(o, dict):
        return Output(o["name"], o.get("size", 0) or 0, o.get("alias_of"),
                      o.get("from"))
    return Output(*o)


def _enum_index(table_fn, value, what):
    if value is None:
        return 0
    i = 1
    while True:
        name = table_fn(i)
        if name is None:
            raise Error("unknown %s \"%s\"" % (what, value))
        if name.decode() == value:
            return i
        i += 1


class Graph:
    """A training step's dataflow graph, built node by node (the C builder)
    or loaded from JSON (:meth:`load`, :meth:`loads`).

    ``add_*`` calls go straight to the C builder, which checks what it can
    at once and resolves names in :meth:`finish`. The first
    :func:`optimize`/:func:`simulate` call (or an explicit ``finish()``)
    validates the graph; after that it is immutable and may be optimized
    from several threads at once.
    """

    # What the importer said (commsched.import_trace, commsched.load): a
    # tuple of ImportMessage; empty for a graph built or loaded as JSON.
    import_notes = ()

    def __init__(self, name=None):
        self._lib = lib = _lib.load()
        self._lock = threading.Lock()
        self._graph = None
        self._graph_fin = None
        self._failed = None
        handle = _ctypes.c_void_p()
        _call(lib, lib.commsched_builder_create, _b(name),
              _ctypes.byref(handle))
        self._builder = handle
        self._builder_fin = weakref.finalize(
            self, lib.commsched_builder_destroy, handle)

    # -- loading ---------------------------------------------------------
    @classmethod
    def _adopt(cls, lib, handle):
        g = cls.__new__(cls)
        g._lib = lib
        g._lock = threading.Lock()
        g._builder = None
        g._builder_fin = None
        g._failed = None
        g._graph = handle
        g._graph_fin = weakref.finalize(g, lib.commsched_graph_destroy, handle)
        return g

    @classmethod
    def load(cls, path, toposort=False):
        """Loads a graph file (format v1, docs/FORMAT.md); ``"-"`` reads
        standard input. ``toposort`` repairs a non-topological order."""
        lib = _lib.load()
        handle = _ctypes.c_void_p()
        _call(lib, lib.commsched_graph_load_file, _b(path),
              1 if toposort else 0, _ctypes.byref(handle), file=str(path))
        return cls._adopt(lib, handle)

    @classmethod
    def from_document(cls, doc, toposort=False):
        """Loads a graph from a format-v1 document given as Python data
        (dicts and lists, docs/FORMAT.md): one call into the library for
        the whole graph, where the builder methods make one per node.
        Errors are located as the builder's are (``nodes[3].inputs[0]:
        ...``), without a file name."""
        import json
        try:
            text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise Error("the document is not JSON data: %s" % e) from None
        lib = _lib.load()
        handle = _ctypes.c_void_p()
        _call(lib, lib.commsched_graph_load_string, _b(text),
              1 if toposort else 0, _ctypes.byref(handle))
        return cls._adopt(lib, handle)

    @classmethod
    def loads(cls, text, toposort=False):
        """Loads a graph from JSON text."""
        lib = _lib.load()
        handle = _ctypes.c_void_p()
        _call(lib, lib.commsched_graph_load_string, _b(text),
              1 if toposort else 0, _ctypes.byref(handle), file="<string>")
        return cls._adopt(lib, handle)

    def save(self, path):
        """Writes the graph as format v1 JSON (docs/FORMAT.md) to ``path``,
        by the rule every commsched writer follows (docs/FORMAT.md "Writing
        files", the library's ``commsched_output_target``): a regular file
        (or a new path) is written through a temporary file renamed over
        it, so a failure leaves no half-written file, and keeps its mode; a
        symlink is followed to the file it names, which is replaced (a
        dangling link's file created) and the link kept; a link loop, and a
        file you may not write, are refused as a shell's ``>`` refuses
        them; anything else (a device such as ``/dev/null``, a FIFO,
        ``/dev/stdout``, ``/dev/fd/N``) is written in place, as
        ``commsched -o`` does. Raises :class:`Error` naming what could not
        be written."""
        import os
        import tempfile
        path = os.fspath(path)
        target = _ctypes.create_string_buffer(4096)
        in_place, exists = _ctypes.c_int(), _ctypes.c_int()
        mode = _ctypes.c_uint()
        _call(self._lib, self._lib.commsched_output_target, _b(path), target,
              len(target), _ctypes.byref(in_place), _ctypes.byref(exists),
              _ctypes.byref(mode), file=path)
        if in_place.value:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            except OSError as e:
                raise Error("%s: cannot write: %s" % (path, e.strerror))
            self._save_fd(fd, path)
            return self
        target = os.fsdecode(target.value)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".",
                                   prefix=".commsched-", suffix=".json")
        try:
            os.fchmod(fd, mode.value)  # mkstemp made it 0600
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        try:
            self._save_fd(fd, path)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return self

    def _save_fd(self, fd, path):
        """Streams the graph into the open descriptor fd and closes it."""
        import os
        libc = _ctypes.CDLL(None)
        libc.fdopen.restype = _ctypes.c_void_p
        libc.fdopen.argtypes = [_ctypes.c_int, _ctypes.c_char_p]
        libc.fclose.argtypes = [_ctypes.c_void_p]
        stream = libc.fdopen(fd, b"w")
        if not stream:
            os.close(fd)
            raise Error("%s: cannot open for writing" % path)
        try:
            _call(self._lib, self._lib.commsched_graph_save_stream,
                  self._handle(), None, None, stream, file=path)
        finally:
            closed = libc.fclose(stream)
        if closed != 0:
            raise Error("%s: could not write the graph" % path)

    # -- building --------------------------------------------------------
    def _builder_handle(self):
        if self._failed is not None:
            raise self._failed
        if self._builder is None:
            raise Error("the graph is finished; it can no longer change")
        return self._builder

    def add_group(self, name, size, hosts=0):
        """A process group of ``size`` ranks over ``hosts`` hosts (0: derive
        from the device profile's GPUs per host)."""
        lib = self._lib
        _call(lib, lib.commsched_builder_add_group, self._builder_handle(),
              _b(name), _int64(size, "size"), _int64(hosts, "hosts"))
        return self

    def add_input(self, name, size, freeable=False):
        """A graph input of ``size`` bytes; ``freeable`` frees it after its
        last reader (Inductor's freeable input buffers)."""
        lib = self._lib
        _call(lib, lib.commsched_builder_add_input, self._builder_handle(),
              _b(name), _int64(size, "size"), 1 if freeable else 0)
        return self

    def add_output(self, buffer):
        """Marks a buffer as a graph output (never freed)."""
        lib = self._lib
        _call(lib, lib.commsched_builder_add_output, self._builder_handle(),
              _b(buffer))
        return self

    def add_node(self, name, kind, *, op=None, group=None, sync=False,
                 dtype=None, reduce_op=None, inputs=(), outputs=(), after=(),
                 after_fake=(), runtime_ns=None, flops=None, bytes=None,
                 gemm_like=False):
        """Appends a node (nodes run in the order they are added).

        ``kind`` is ``"compute"``, ``"collective"`` or ``"wait"``;
        ``outputs`` items are :class:`Output`, ``(name, size)``,
        ``(name, size, alias_of)``, ``(name, size, alias_of, from_)``, a
        dict (the format's keys, ``"from"`` included) or a bare name
        (size 0).
        ``runtime_ns``/``flops``/``bytes`` left as None are absent (the cost
        model estimates the runtime). Field meanings: docs/FORMAT.md.
        """
        lib = self._lib
        b = self._builder_handle()
        if kind not in _KINDS:
            raise Error("unknown kind \"%s\" (expected compute, collective "
                        "or wait)" % kind)
        outs = [_output(o) for o in outputs]
        for k, o in enumerate(outs):
            if isinstance(o.from_, (str, type(b""))):  # `bytes` is shadowed
                raise Error("outputs[%d].from_: expected a list of input "
                            "names, got a string" % k)
        out_arr = (_lib.OutputSpec * max(1, len(outs)))(
            *[_lib.OutputSpec(_b(o.name), _int64(o.size or 0, "size"),
                              _b(o.alias_of))
              for o in outs])
        in_arr, n_in = _strings(inputs)
        af_arr, n_af = _strings(after)
        fk_arr, n_fk = _strings(after_fake)
        spec = _lib.NodeSpec()
        spec.name = _b(name)
        spec.kind = _KINDS[kind]
        spec.op = _b(op)
        spec.group = _b(group)
        spec.is_sync = 1 if sync else 0
        spec.dtype = _enum_index(lib.commsched_dtype_str, dtype, "dtype")
        spec.reduce_op = _enum_index(lib.commsched_reduce_op_str, reduce_op,
                                     "reduce_op")
        spec.inputs, spec.n_inputs = in_arr, n_in
        spec.outputs, spec.n_outputs = out_arr, len(outs)
        spec.after, spec.n_after = af_arr, n_af
        spec.after_fake, spec.n_after_fake = fk_arr, n_fk
        spec.runtime_ns = -1.0 if runtime_ns is None else float(runtime_ns)
        spec.flops = -1.0 if flops is None else float(flops)
        spec.bytes = -1.0 if bytes is None else float(bytes)
        spec.gemm_like = 1 if gemm_like else 0
        _call(lib, lib.commsched_builder_add_node, b, _ctypes.byref(spec))
        for k, o in enumerate(outs):
            if o.from_ is not None:
                arr, n = _strings(o.from_)
                _call(lib, lib.commsched_builder_set_output_from, b, k, arr, n)
        return self

    def compute(self, name, **kw):
        """``add_node(name, "compute", ...)``."""
        return self.add_node(name, "compute", **kw)

    def collective(self, name, op, group, **kw):
        """``add_node(name, "collective", op=op, group=group, ...)``."""
        return self.add_node(name, "collective", op=op, group=group, **kw)

    def wait(self, name, **kw):
        """``add_node(name, "wait", ...)``."""
        return self.add_node(name, "wait", **kw)

    def finish(self, toposort=False):
        """Validates the graph (idempotent). Raises Error naming the first
        problem by JSON path, nodes counted in the order they were added."""
        with self._lock:
            if self._graph is not None:
                return self
            if self._failed is not None:
                # finish consumed the builder: the same error again
                raise self._failed
            lib = self._lib
            b = self._builder
            self._builder = None
            self._builder_fin.detach()  # finish consumes the builder
            handle = _ctypes.c_void_p()
            try:
                _call(lib, lib.commsched_builder_finish, b,
                      1 if toposort else 0, _ctypes.byref(handle))
            except Error as e:
                self._failed = e
                raise
            self._graph = handle
            self._graph_fin = weakref.finalize(
                self, lib.commsched_graph_destroy, handle)
            return self

    def _handle(self):
        if self._graph is None:
            self.finish()
        return self._graph

    # -- reading ---------------------------------------------------------
    @property
    def name(self):
        return _s(self._lib.commsched_graph_name(self._handle()))

    def __len__(self):
        return self._lib.commsched_graph_node_count(self._handle())

    @property
    def nodes(self):
        """Node names in the graph's own order."""
        lib, h = self._lib, self._handle()
        return [_s(lib.commsched_graph_node_name(h, i))
                for i in range(lib.commsched_graph_node_count(h))]

    def kind(self, node):
        """``"compute"``, ``"collective"`` or ``"wait"`` for a node name."""
        lib, h = self._lib, self._handle()
        i = lib.commsched_graph_find_node(h, _b(node))
        if i == 0xFFFFFFFF:
            raise Error("unknown node \"%s\"" % node)
        return _KIND_NAMES[lib.commsched_graph_node_kind(h, i)]


@dataclasses.dataclass(frozen=True)
class SimTotals:
    """The simulator's totals for one order (commsched_sim_totals; times in
    ns, memory in bytes). ``peak_memory_step`` is the per-step peak of the
    memory model (docs/FORMAT.md, "Memory model (in brief)"),
    ``peak_memory`` the peak over simulated time; ``bound_stream_ns`` the
    stream bound, valid for every order (docs/REPORTS.md, "Lower
    bound")."""

    makespan_ns: float
    compute_ns: float
    comm_ns: float
    exposed_ns: float
    overlap: float
    lower_bound_ns: float
    bound_compute_ns: float
    bound_comm_ns: float
    bound_path_ns: float
    efficiency: float
    n_collectives: int
    n_waits: int
    memory_baseline: int
    peak_memory: int
    peak_memory_at_ns: float
    peak_memory_step: int
    bound_stream_ns: float

    @classmethod
    def _from(cls, t):
        return cls(**{f.name: getattr(t, f.name)
                      for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class NodeStats:
    """One row of a pass's table: Inductor's ReorderInfo (per collective) or
    SinkWaitInfo (per wait). Times in ns, multiplied by the
    reorder_sink_runtime_estimations_* factors as the seed does."""

    node: str
    comm_time: float
    comp_time: float
    initial_exposed: float
    final_exposed: float
    moves: int
    grouped: int
    limiting_factor: str
    grouped_info: str
    moves_info: str
    overlap_info: str

    @property
    def improvement(self):
        return self.initial_exposed - self.final_exposed


@dataclasses.dataclass(frozen=True)
class BucketStats:
    """One bucket a bucketing pass formed: its members (the former
    collectives' names, in wait order) became one copy-in node, one merged
    collective and one wait."""

    node: str
    copy_in: str
    wait: str
    members: list
    bytes: int
    time_before_ns: float
    time_after_ns: float
    closed_by: str


@dataclasses.dataclass(frozen=True)
class OverlapStats:
    """One collective as the overlap pass left it (commsched_overlap_stats;
    the keys of a ``"collectives"`` row of ``--stats=json``). Times in ns;
    ``hidden_*`` is 1 - exposed / comm, in [0, 1]; ``limit`` is what kept
    it from hiding fully (``"none"`` when nothing did). ``wait`` is the
    name of its first wait in the output order; positions are indices in
    the pass's input order (``*_before``) and output order (``*_after``).
    ``wait`` and the ``wait_*`` positions are None for a collective
    without a wait."""

    node: str
    comm_ns: float
    exposed_before_ns: float
    exposed_after_ns: float
    hidden_before: float
    hidden_after: float
    limit: str
    wait: object
    issue_before: object
    issue_after: object
    wait_before: object
    wait_after: object


@dataclasses.dataclass(frozen=True)
class PassStats:
    """What one pass of the pipeline did. ``kind`` is ``"reorder"``,
    ``"sink"``, ``"bucket"``, ``"overlap"`` or None (no per-node table).
    Node names are those of the graph the pass left (a bucketing pass
    builds a new one).

    Bucketing passes: ``buckets``, ``fake_edges_dropped``,
    ``merges_priced`` (merges priced) and ``full_pricings`` (how many of
    them were priced on the whole merged graph rather than from their
    window of the schedule). The overlap pass: ``overlap`` (one
    :class:`OverlapStats` per collective, in output order),
    ``overlap_variant`` (the candidate order that won, ``"input"`` when
    none beat the input order), ``overlap_budget_bytes`` (the per-step
    peak it kept within, None for no limit), ``overlap_time_budget_bytes``
    (the peak over simulated time it kept within, None for none),
    ``overlap_peak_time_before`` and ``overlap_peak_time_after`` (those
    time peaks, None when not budgeted), ``overlap_candidates`` (orders
    built and simulated), ``overlap_over_budget`` (how many a budget
    refused) and ``overlap_binds`` (which budget refused the fastest order
    faster than the answer: ``"none"``, ``"step"``, ``"time"`` or ``"step
    and time"``). These are the figures ``--stats=json`` writes; for
    other passes the counts are 0, ``overlap`` is empty and the other
    overlap fields are None."""

    name: str
    wall_ms: float
    peak_before: int
    peak_after: int
    kind: object
    nodes: list
    fake_edges_added: int
    buckets: list = dataclasses.field(default_factory=list)
    fake_edges_dropped: int = 0
    merges_priced: int = 0
    full_pricings: int = 0
    overlap: tuple = ()
    overlap_variant: object = None
    overlap_budget_bytes: object = None
    overlap_candidates: int = 0
    overlap_time_budget_bytes: object = None
    overlap_peak_time_before: object = None
    overlap_peak_time_after: object = None
    overlap_over_budget: int = 0
    overlap_binds: object = None


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`optimize` returns: plain Python values only."""

    order: list        # node names, first to run first
    indices: list      # the same as node indices of the graph
    passes: str        # the pipeline that ran (the default resolved)
    stats: list        # PassStats per pass, in order
    before: SimTotals  # the graph's own order
    after: SimTotals   # the new order
    runtime_ns: dict   # node name -> runtime the passes and simulator used


def _option(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


def _pos(v):
    """A node index or position; None for COMMSCHED_NONE."""
    return None if v == _NONE else v


def _read_stats(lib, graph, run):
    out = []
    for i in range(lib.commsched_run_pass_count(run)):
        p = lib.commsched_run_pass(run, i).contents
        pg = p.graph or graph  # the graph this pass's indices refer to

        def name(node):
            return _s(lib.commsched_graph_node_name(pg, node))
        rows = []
        for k in range(p.n_nodes):
            r = p.nodes[k]
            rows.append(NodeStats(
                name(r.node), r.comm_time, r.comp_time, r.initial_exposed,
                r.final_exposed, r.moves, r.grouped, _s(r.limiting_factor),
                _s(r.grouped_info), _s(r.moves_info), _s(r.overlap_info)))
        buckets = []
        for k in range(p.n_buckets):
            b = p.buckets[k]
            buckets.append(BucketStats(
                name(b.node), name(b.copy_in), name(b.wait),
                [_s(b.members[m]) for m in range(b.n_members)], b.bytes,
                b.time_before_ns, b.time_after_ns, _s(b.closed_by)))
        overlap = ()
        variant = budget = tbudget = tbefore = tafter = binds = None

        def nonneg(v):
            return None if v < 0 else v
        if p.kind == 4:  # COMMSCHED_STATS_OVERLAP, as --stats=json reads it
            overlap = tuple(
                OverlapStats(
                    name(o.node), o.comm_ns, o.exposed_before_ns,
                    o.exposed_after_ns, o.hidden_before, o.hidden_after,
                    _s(o.limit), None if o.wait == _NONE else name(o.wait),
                    _pos(o.issue_before), _pos(o.issue_after),
                    _pos(o.wait_before), _pos(o.wait_after))
                for o in (p.overlap[k] for k in range(p.n_overlap)))
            variant = ("input" if p.overlap_variant is None
                       else _s(p.overlap_variant))
            budget = nonneg(p.overlap_budget_bytes)
            tbudget = nonneg(p.overlap_time_budget_bytes)
            tbefore = nonneg(p.overlap_peak_time_before)
            tafter = nonneg(p.overlap_peak_time_after)
            binds = _s(p.overlap_binds)
        out.append(PassStats(_s(p.pass_), p.wall_ms, p.peak_before,
                             p.peak_after, _STATS_KINDS.get(p.kind), rows,
                             p.fake_edges_added, buckets,
                             p.fake_edges_dropped, p.merges_priced,
                             p.full_pricings, overlap, variant, budget,
                             p.overlap_candidates, tbudget, tbefore, tafter,
                             p.overlap_over_budget, binds))
    return out


def optimize(graph, passes=None, *, device=None, cost_model=None,
             comm_streams=None, verify=None, **knobs):
    """Optimizes ``graph``'s node order in C (commsched_optimize) and
    returns a :class:`Result`.

    ``passes``: a list of pass names or a comma-separated string; None runs
    the library's default pipeline (the overlap pass; Inductor's
    recommended list is one ``passes`` away; ``Result.passes`` says what
    ran). ``device``: ``"h100"``, ``"a100"``,
    ``"b200"`` or a JSON profile path; ``cost_model``: ``"nccl"`` or
    ``"inductor"``; ``comm_streams``: ``"per_group"`` or ``"single"``;
    ``verify``: check every pass and memory move (slow). Other keyword
    arguments are knobs by their Inductor config names
    (``reorder_iterative_peak_memory_budget=0.1``); :func:`knobs` lists
    them. A bad name or value raises Error naming it.
    """
    with _optimized(graph, passes, device, cost_model, comm_streams, verify,
                    knobs) as (lib, res):
        rg = lib.commsched_result_graph(res)
        n = lib.commsched_result_node_count(res)
        indices = lib.commsched_result_order(res)[:n]
        names = [_s(lib.commsched_result_node_name(res, i)) for i in range(n)]
        rt = lib.commsched_result_runtimes(res)
        runtime = {_s(lib.commsched_graph_node_name(rg, i)): rt[i]
                   for i in range(lib.commsched_graph_node_count(rg))}
        return Result(
            order=names, indices=indices,
            passes=_s(lib.commsched_result_passes(res)),
            stats=_read_stats(lib, rg, lib.commsched_result_run(res)),
            before=SimTotals._from(lib.commsched_result_before(res).contents),
            after=SimTotals._from(lib.commsched_result_after(res).contents),
            runtime_ns=runtime)


def _optimized_order(graph, passes=None, *, device=None, cost_model=None,
                     comm_streams=None, verify=None, **knobs):
    """:func:`optimize`'s new order alone and the pipeline that ran: what
    a compiler's plugin needs, without reading the statistics and names
    back node by node. The order is node indices of the result's graph,
    which are ``graph``'s unless a pass rewrote it (the caller rules
    rewriting passes out: commsched_pass_rewrites)."""
    with _optimized(graph, passes, device, cost_model, comm_streams, verify,
                    knobs) as (lib, res):
        n = lib.commsched_result_node_count(res)
        return (lib.commsched_result_order(res)[:n],
                _s(lib.commsched_result_passes(res)))


@contextlib.contextmanager
def _optimized(graph, passes, device, cost_model, comm_streams, verify,
               knobs):
    """Runs commsched_optimize on ``graph`` with these options and yields
    (library, result handle); the result and options are released when
    the block ends."""
    if not isinstance(graph, Graph):
        raise TypeError("optimize() takes a commsched.Graph")
    lib = graph._lib
    g = graph._handle()
    opts = _ctypes.c_void_p()
    _call(lib, lib.commsched_optimize_options_create, _ctypes.byref(opts))
    res = _ctypes.c_void_p()
    try:
        settings = []
        if passes is not None:
            if not isinstance(passes, str):
                passes = ",".join(passes) or "none"
            settings.append(("passes", passes))
        for key, v in (("device", device), ("cost_model", cost_model),
                       ("comm_streams", comm_streams), ("verify", verify)):
            if v is not None:
                settings.append((key, v))
        settings += list(knobs.items())
        for key, v in settings:
            _call(lib, lib.commsched_optimize_options_set, opts, _b(key),
                  _b(_option(v)))
        _call(lib, lib.commsched_optimize, g, opts, _ctypes.byref(res))
        yield lib, res
    finally:
        lib.commsched_result_destroy(res)
        lib.commsched_optimize_options_destroy(opts)


def check_order(graph, order=None, *, races=True):
    """Checks an order of ``graph``'s nodes as ``commsched validate
    --races`` checks a file's: a permutation of all nodes in which every
    data and ``after`` edge runs forward (commsched_schedule_check;
    ``after_fake`` edges are not required) and, with ``races``, no two
    nodes in flight at once touch a buffer one of them writes
    (commsched_schedule_check_races, docs/FORMAT.md "In-place writes").

    ``order``: node indices or names (a :class:`Result`'s ``indices`` or
    ``order``), or None for the graph's own order. Returns None when the
    order passes; raises :class:`Error` when it does not: ``EORDER`` with
    a message naming the two nodes (and, for a race, the buffer; path
    ``nodes[i]`` of the later node), ``EINVAL`` (path ``order``) for a list
    that is not a permutation of the graph's nodes.
    O(nodes + edges + buffers)."""
    if not isinstance(graph, Graph):
        raise TypeError("check_order() takes a commsched.Graph")
    lib = graph._lib
    g = graph._handle()
    arr = None
    if order is not None:
        order = list(order)
        n = lib.commsched_graph_node_count(g)
        if order and isinstance(order[0], str):
            index = {name: i for i, name in enumerate(graph.nodes)}
            try:
                order = [index[name] for name in order]
            except KeyError as e:
                raise Error("order: %s is not a node of the graph" % e,
                            "EINVAL", path="order") from None
        if len(order) != n or sorted(order) != list(range(n)):
            raise Error("order: not a permutation of the graph's %d nodes"
                        % n, "EINVAL", path="order")
        arr = (_ctypes.c_uint32 * n)(*order)
    s = _ctypes.c_void_p()
    _call(lib, lib.commsched_schedule_create, g, arr, _ctypes.byref(s))
    try:
        _call(lib, lib.commsched_schedule_check, s, 0)
        if races:
            _call(lib, lib.commsched_schedule_check_races, s)
    finally:
        lib.commsched_schedule_destroy(s)


def simulate(graph, *, device=None, cost_model=None, comm_streams=None):
    """The simulator's :class:`SimTotals` for ``graph``'s own order (runtimes
    from the nodes, else the cost model)."""
    return optimize(graph, "none", device=device, cost_model=cost_model,
                    comm_streams=comm_streams).before


def passes():
    """``[(name, description)]`` of every pass, in table order."""
    lib = _lib.load()
    return [(_s(lib.commsched_pass_name(i)),
             _s(lib.commsched_pass_description(i)))
            for i in range(lib.commsched_pass_count())]


def knobs():
    """``[(name, default, description)]`` of every knob."""
    lib = _lib.load()
    return [(_s(lib.commsched_knob_name(i)), _s(lib.commsched_knob_default(i)),
             _s(lib.commsched_knob_description(i)))
            for i in range(lib.commsched_knob_count())]


def default_pipeline():
    """The pass list the library runs when none is given."""
    return _s(_lib.load().commsched_default_pipeline()).split(",")


def version():
    """The loaded library's version, ``"MAJOR.MINOR.PATCH"``."""
    return _s(_lib.load().commsched_version())


def import_trace(fmt, path, **options):
    """Imports a trace of another tool as a :class:`Graph`: ``fmt`` is one
    of ``"astra"``, ``"chakra"``, ``"hlo"``, ``"kineto"``,
    ``"pytorch-et"`` (``commsched import FORMAT``), ``path`` the file.
    Options, as the CLI's: ``clock_ghz``, ``npus``, ``mp`` (astra);
    ``gpu_only``, ``chakra_fields_only``, ``comm_groups`` (chakra);
    ``ranks`` (chakra, kineto, pytorch-et); ``group_sizes`` (a dict
    name -> ranks; chakra, pytorch-et); ``rank``, ``et``, ``step`` (the
    profiler step to keep, 0 the first; kineto);
    ``max_memory`` (bytes; kineto, pytorch-et). The importer's notes are
    ``graph.import_notes`` (:class:`ImportMessage`); its warnings are also
    issued as :class:`TraceWarning`. Raises :class:`Error` with the
    located message (``"trace.json: traceEvents[3].dur: ..."``)."""
    return _import.import_trace(Graph, Error, fmt, path, **options)


def load(path, toposort=False, **options):
    """Loads any file commsched reads without being told its format: a
    Chakra binary trace (``.et``, by content) is imported as
    ``import_trace("chakra", path, **options)``, anything else is loaded
    as commsched's JSON (:meth:`Graph.load`, ``toposort`` applying)."""
    return _import.load_any(Graph, Error, path, toposort, **options)
