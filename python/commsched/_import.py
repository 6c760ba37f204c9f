"""The importers (commsched/import.h) from Python: ``commsched.load`` for
any file commsched reads, ``commsched.import_trace`` for a named format.

Notes the importer makes (what became what) are kept on the graph as
``graph.import_notes``; its warnings (a size assumed, 0 bytes) are also
issued as :class:`TraceWarning` through the ``warnings`` module.
"""

import collections
import ctypes as _ctypes
import warnings

from . import _lib

ImportMessage = collections.namedtuple("ImportMessage", "level file text")
ImportMessage.__doc__ = """A note or warning of an import: ``level`` is
``"note"`` or ``"warning"``, ``file`` the input it is about, ``text`` one
line."""


class TraceWarning(UserWarning):
    """An importer's warning: the graph may not be what the trace meant (a
    group size assumed, collectives of unknown size imported as 0 bytes)."""


# import_trace's formats: the CLI's names (`commsched import FORMAT`).
FORMATS = {
    "astra": "commsched_import_astra",
    "chakra": "commsched_import_chakra",
    "hlo": "commsched_import_hlo",
    "kineto": "commsched_import_kineto",
    "pytorch-et": "commsched_import_pytorch_et",
}

# keyword -> (field, conversion); the CLI's options of the same names
# (docs/WORKLOADS.md says which format reads which).
_OPTIONS = {
    "clock_ghz": ("clock_ghz", float),
    "npus": ("npus", int),
    "mp": ("mp", int),
    "gpu_only": ("gpu_only", lambda v: 1 if v else 0),
    "ranks": ("ranks", int),
    "chakra_fields_only": ("chakra_fields_only", lambda v: 1 if v else 0),
    "rank": ("rank", int),
    "et": ("et", lambda v: str(v).encode()),
    "comm_groups": ("comm_groups", lambda v: str(v).encode()),
    "max_memory": ("max_memory", int),
    "step": ("step", int),
}


class _Call:
    """The options struct of one import and what its callback collects
    (kept alive, with the group names, until the call returns)."""

    def __init__(self, imp, fn_name, options):
        self.messages = []
        self.opts = _lib.ImportOptionsStruct()
        imp.commsched_import_options_init(_ctypes.byref(self.opts))
        groups = options.pop("group_sizes", None) or {}
        for key, value in options.items():
            if key not in _OPTIONS:
                raise TypeError("%s() got an unexpected keyword argument "
                                "%r (options: %s)" % (
                                    fn_name, key,
                                    ", ".join(sorted(_OPTIONS) +
                                              ["group_sizes"])))
            field, conv = _OPTIONS[key]
            if value is not None:
                setattr(self.opts, field, conv(value))
        self.groups = (_lib.ImportGroupSize * max(1, len(groups)))(
            *[_lib.ImportGroupSize(str(k).encode(), int(v))
              for k, v in groups.items()])
        self.opts.group_sizes = self.groups
        self.opts.n_group_sizes = len(groups)
        self.level_str = imp.commsched_import_level_str

        def said(_arg, level, file, text):
            self.messages.append(ImportMessage(
                self.level_str(level).decode(),
                file.decode(errors="replace"), text.decode(errors="replace")))

        self.callback = _lib.MESSAGE_FN(said)
        self.opts.message = self.callback

    def finish(self, graph, stacklevel):
        graph.import_notes = tuple(self.messages)
        for m in self.messages:
            if m.level == "warning":
                warnings.warn("%s: %s" % (m.file, m.text), TraceWarning,
                              stacklevel=stacklevel + 1)
        return graph


def import_trace(graph_cls, error_cls, fmt, path, **options):
    """See commsched.import_trace."""
    if fmt not in FORMATS:
        raise error_cls("unknown format \"%s\" (%s)" % (
            fmt, ", ".join(FORMATS)), status="EINVAL")
    lib = _lib.load()
    imp = _lib.load_import()
    call = _Call(imp, "import_trace", dict(options))
    handle = _ctypes.c_void_p()
    err = _lib.ErrorStruct()
    st = getattr(imp, FORMATS[fmt])(str(path).encode(),
                                    _ctypes.byref(call.opts),
                                    _ctypes.byref(handle), _ctypes.byref(err))
    if st != 0:
        raise error_cls._from(lib, err, st)
    return call.finish(graph_cls._adopt(lib, handle), 3)


def load_any(graph_cls, error_cls, path, toposort, **options):
    """See commsched.load."""
    lib = _lib.load()
    imp = _lib.load_import()
    call = _Call(imp, "load", dict(options))
    handle = _ctypes.c_void_p()
    fmt = _ctypes.c_int(0)
    err = _lib.ErrorStruct()
    st = imp.commsched_graph_load_any(
        str(path).encode(), 1 if toposort else 0, _ctypes.byref(call.opts),
        _ctypes.byref(handle), _ctypes.byref(fmt), _ctypes.byref(err))
    if st != 0:
        # commsched's JSON is located within the file (FORMAT_GRAPH = 0),
        # a trace's message names it already
        raise error_cls._from(lib, err, st,
                              file=str(path) if fmt.value == 0 else None)
    return call.finish(graph_cls._adopt(lib, handle), 3)
