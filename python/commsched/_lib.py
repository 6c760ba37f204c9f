"""Loading libcommsched and the ctypes declarations of its C API.

Only the standard library is used. The shared library is looked for, in
order:

1. the file named by the ``COMMSCHED_LIBRARY`` environment variable;
2. ``libcommsched.so*`` next to this package (a copy placed there);
3. the build directories of a source checkout this package sits in
   (``build/release``, ``build/debug``, any other ``build/*``);
4. ``ctypes.util.find_library("commsched")`` (an installed library on the
   loader's path, e.g. after ``make install`` and ``ldconfig``).

The importers (``commsched.load``, ``commsched.import_trace``) live in
``libcommsched_import.so``, looked for beside the libcommsched loaded (or
at ``COMMSCHED_IMPORT_LIBRARY``), then by ``find_library``.

Struct layouts here mirror the C headers field by field; the test suite
compares their sizes and offsets with the compiler's (tests/python).
"""

import ctypes
import ctypes.util
import glob
import os
import threading

# The major version this binding was written for (the soname's number).
ABI_MAJOR = 0

c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_uint32 = ctypes.c_uint32
c_int64 = ctypes.c_int64
c_double = ctypes.c_double
c_size_t = ctypes.c_size_t
c_void_p = ctypes.c_void_p
POINTER = ctypes.POINTER

ERROR_PATH_LENGTH = 160
ERROR_TEXT_LENGTH = 512


class ErrorStruct(ctypes.Structure):
    """commsched_error (commsched/status.h)."""

    _fields_ = [
        ("status", c_int),
        ("line", c_int),
        ("column", c_int),
        ("path", ctypes.c_char * ERROR_PATH_LENGTH),
        ("text", ctypes.c_char * ERROR_TEXT_LENGTH),
    ]


class OutputSpec(ctypes.Structure):
    """commsched_output_spec (commsched/graph.h)."""

    _fields_ = [("name", c_char_p), ("size", c_int64), ("alias_of", c_char_p)]


class NodeSpec(ctypes.Structure):
    """commsched_node_spec (commsched/graph.h)."""

    _fields_ = [
        ("name", c_char_p),
        ("kind", c_int),
        ("op", c_char_p),
        ("group", c_char_p),
        ("is_sync", c_int),
        ("dtype", c_int),
        ("reduce_op", c_int),
        ("inputs", POINTER(c_char_p)),
        ("n_inputs", c_size_t),
        ("outputs", POINTER(OutputSpec)),
        ("n_outputs", c_size_t),
        ("after", POINTER(c_char_p)),
        ("n_after", c_size_t),
        ("after_fake", POINTER(c_char_p)),
        ("n_after_fake", c_size_t),
        ("runtime_ns", c_double),
        ("flops", c_double),
        ("bytes", c_double),
        ("gemm_like", c_int),
    ]


class NodeStatsStruct(ctypes.Structure):
    """commsched_node_stats (commsched/passes.h)."""

    _fields_ = [
        ("node", c_uint32),
        ("comm_time", c_double),
        ("comp_time", c_double),
        ("initial_exposed", c_double),
        ("final_exposed", c_double),
        ("moves", c_uint32),
        ("grouped", c_uint32),
        ("limiting_factor", c_char_p),
        ("grouped_info", c_char_p),
        ("moves_info", c_char_p),
        ("overlap_info", c_char_p),
    ]


class BucketStatsStruct(ctypes.Structure):
    """commsched_bucket_stats (commsched/passes.h)."""

    _fields_ = [
        ("node", c_uint32),
        ("copy_in", c_uint32),
        ("wait", c_uint32),
        ("n_members", c_uint32),
        ("members", POINTER(c_char_p)),
        ("bytes", c_int64),
        ("time_before_ns", c_double),
        ("time_after_ns", c_double),
        ("closed_by", c_char_p),
    ]


class OverlapStatsStruct(ctypes.Structure):
    """commsched_overlap_stats (commsched/passes.h)."""

    _fields_ = [
        ("node", c_uint32),
        ("wait", c_uint32),
        ("issue_before", c_uint32),
        ("issue_after", c_uint32),
        ("wait_before", c_uint32),
        ("wait_after", c_uint32),
        ("comm_ns", c_double),
        ("exposed_before_ns", c_double),
        ("exposed_after_ns", c_double),
        ("hidden_before", c_double),
        ("hidden_after", c_double),
        ("limit", c_char_p),
    ]


class PassStatsStruct(ctypes.Structure):
    """commsched_pass_stats (commsched/passes.h)."""

    _fields_ = [
        ("pass_", c_char_p),
        ("wall_ms", c_double),
        ("peak_before", c_int64),
        ("peak_after", c_int64),
        ("kind", c_int),
        ("n_nodes", c_uint32),
        ("nodes", POINTER(NodeStatsStruct)),
        ("fake_edges_added", c_uint32),
        ("graph", c_void_p),
        ("n_buckets", c_uint32),
        ("buckets", POINTER(BucketStatsStruct)),
        ("fake_edges_dropped", c_uint32),
        ("n_overlap", c_uint32),
        ("overlap", POINTER(OverlapStatsStruct)),
        ("overlap_variant", c_char_p),
        ("overlap_budget_bytes", c_int64),
        ("overlap_candidates", c_uint32),
        ("merges_priced", c_uint32),
        ("full_pricings", c_uint32),
        ("overlap_time_budget_bytes", c_int64),
        ("overlap_peak_time_before", c_int64),
        ("overlap_peak_time_after", c_int64),
        ("overlap_over_budget", c_uint32),
        ("overlap_binds", c_char_p),
    ]


class SimTotalsStruct(ctypes.Structure):
    """commsched_sim_totals (commsched/simulate.h)."""

    _fields_ = [
        ("makespan_ns", c_double),
        ("compute_ns", c_double),
        ("comm_ns", c_double),
        ("exposed_ns", c_double),
        ("overlap", c_double),
        ("lower_bound_ns", c_double),
        ("bound_compute_ns", c_double),
        ("bound_comm_ns", c_double),
        ("bound_comm_stream", c_uint32),
        ("bound_path_ns", c_double),
        ("efficiency", c_double),
        ("n_collectives", c_uint32),
        ("n_waits", c_uint32),
        ("memory_baseline", c_int64),
        ("peak_memory", c_int64),
        ("peak_memory_at_ns", c_double),
        ("peak_memory_step", c_int64),
        ("bound_stream_ns", c_double),
        ("bound_stream", c_uint32),
    ]


class ImportGroupSize(ctypes.Structure):
    """commsched_import_group_size (commsched/import.h)."""

    _fields_ = [("name", c_char_p), ("size", ctypes.c_long)]


# commsched_import_message_fn, commsched_progress_fn
MESSAGE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_char_p)
PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, ctypes.c_uint64,
                               ctypes.c_uint64)


class ImportOptionsStruct(ctypes.Structure):
    """commsched_import_options (commsched/import.h)."""

    _fields_ = [
        ("clock_ghz", c_double),
        ("npus", ctypes.c_long),
        ("mp", ctypes.c_long),
        ("gpu_only", c_int),
        ("ranks", ctypes.c_long),
        ("chakra_fields_only", c_int),
        ("rank", ctypes.c_long),
        ("et", c_char_p),
        ("group_sizes", POINTER(ImportGroupSize)),
        ("n_group_sizes", c_size_t),
        ("comm_groups", c_char_p),
        ("max_memory", ctypes.c_uint64),
        ("message", MESSAGE_FN),
        ("message_arg", c_void_p),
        ("progress", PROGRESS_FN),
        ("progress_arg", c_void_p),
        ("step", ctypes.c_long),
    ]


# Every struct the binding mirrors, by its C name (for the layout test).
STRUCTS = {
    "commsched_error": ErrorStruct,
    "commsched_output_spec": OutputSpec,
    "commsched_node_spec": NodeSpec,
    "commsched_node_stats": NodeStatsStruct,
    "commsched_bucket_stats": BucketStatsStruct,
    "commsched_overlap_stats": OverlapStatsStruct,
    "commsched_pass_stats": PassStatsStruct,
    "commsched_sim_totals": SimTotalsStruct,
    "commsched_import_group_size": ImportGroupSize,
    "commsched_import_options": ImportOptionsStruct,
}

_E = POINTER(ErrorStruct)
_H = c_void_p  # every opaque handle

# name: (restype, argtypes)
_PROTOTYPES = {
    "commsched_version": (c_char_p, []),
    "commsched_version_number": (c_uint, []),
    "commsched_status_name": (c_char_p, [c_int]),
    "commsched_status_str": (c_char_p, [c_int]),
    "commsched_dtype_str": (c_char_p, [c_int]),
    "commsched_reduce_op_str": (c_char_p, [c_int]),
    "commsched_error_format": (
        c_char_p, [_E, c_char_p, c_char_p, ctypes.c_ulong]),
    "commsched_output_target": (
        c_int, [c_char_p, c_char_p, ctypes.c_ulong, POINTER(c_int),
                POINTER(c_int), POINTER(c_uint), _E]),
    # builder and graph
    "commsched_builder_create": (c_int, [c_char_p, POINTER(_H), _E]),
    "commsched_builder_add_group": (c_int, [_H, c_char_p, c_int64, c_int64, _E]),
    "commsched_builder_add_input": (c_int, [_H, c_char_p, c_int64, c_int, _E]),
    "commsched_builder_add_output": (c_int, [_H, c_char_p, _E]),
    "commsched_builder_add_node": (c_int, [_H, POINTER(NodeSpec), _E]),
    "commsched_builder_set_output_from": (
        c_int, [_H, c_size_t, POINTER(c_char_p), c_size_t, _E]),
    "commsched_builder_finish": (c_int, [_H, c_uint, POINTER(_H), _E]),
    "commsched_builder_destroy": (None, [_H]),
    "commsched_graph_load_file": (c_int, [c_char_p, c_uint, POINTER(_H), _E]),
    "commsched_graph_load_string": (c_int, [c_char_p, c_uint, POINTER(_H), _E]),
    "commsched_graph_destroy": (None, [_H]),
    "commsched_graph_save_stream": (
        c_int, [_H, ctypes.c_void_p, c_char_p, ctypes.c_void_p, _E]),
    "commsched_graph_name": (c_char_p, [_H]),
    "commsched_graph_node_count": (c_uint32, [_H]),
    "commsched_graph_node_name": (c_char_p, [_H, c_uint32]),
    "commsched_graph_node_kind": (c_int, [_H, c_uint32]),
    "commsched_graph_find_node": (c_uint32, [_H, c_char_p]),
    # passes and knobs
    "commsched_pass_count": (c_size_t, []),
    "commsched_pass_name": (c_char_p, [c_size_t]),
    "commsched_pass_description": (c_char_p, [c_size_t]),
    "commsched_knob_count": (c_size_t, []),
    "commsched_knob_name": (c_char_p, [c_size_t]),
    "commsched_knob_default": (c_char_p, [c_size_t]),
    "commsched_knob_description": (c_char_p, [c_size_t]),
    "commsched_default_pipeline": (c_char_p, []),
    "commsched_pass_rewrites": (c_int, [c_size_t]),
    "commsched_run_pass_count": (c_size_t, [_H]),
    "commsched_run_pass": (POINTER(PassStatsStruct), [_H, c_size_t]),
    # the one call
    "commsched_optimize_options_create": (c_int, [POINTER(_H), _E]),
    "commsched_optimize_options_destroy": (None, [_H]),
    "commsched_optimize_options_set": (c_int, [_H, c_char_p, c_char_p, _E]),
    "commsched_optimize": (c_int, [_H, _H, POINTER(_H), _E]),
    "commsched_result_destroy": (None, [_H]),
    "commsched_result_graph": (_H, [_H]),
    "commsched_result_node_count": (c_uint32, [_H]),
    "commsched_result_order": (POINTER(c_uint32), [_H]),
    # schedules (order checks)
    "commsched_schedule_create": (
        c_int, [_H, POINTER(c_uint32), POINTER(_H), _E]),
    "commsched_schedule_destroy": (None, [_H]),
    "commsched_schedule_check": (c_int, [_H, c_int, _E]),
    "commsched_schedule_check_races": (c_int, [_H, _E]),
    "commsched_result_node_name": (c_char_p, [_H, c_uint32]),
    "commsched_result_passes": (c_char_p, [_H]),
    "commsched_result_run": (_H, [_H]),
    "commsched_result_before": (POINTER(SimTotalsStruct), [_H]),
    "commsched_result_after": (POINTER(SimTotalsStruct), [_H]),
    "commsched_result_runtimes": (POINTER(c_double), [_H]),
}


_IO = POINTER(ImportOptionsStruct)
# libcommsched_import.so (commsched/import.h): name: (restype, argtypes)
_IMPORT_PROTOTYPES = {
    "commsched_import_options_init": (None, [_IO]),
    "commsched_import_level_str": (c_char_p, [c_int]),
    "commsched_import_astra": (c_int, [c_char_p, _IO, POINTER(_H), _E]),
    "commsched_import_chakra": (c_int, [c_char_p, _IO, POINTER(_H), _E]),
    "commsched_import_kineto": (c_int, [c_char_p, _IO, POINTER(_H), _E]),
    "commsched_import_pytorch_et": (c_int, [c_char_p, _IO, POINTER(_H), _E]),
    "commsched_import_hlo": (c_int, [c_char_p, _IO, POINTER(_H), _E]),
    "commsched_graph_load_any": (
        c_int, [c_char_p, c_uint, _IO, POINTER(_H), POINTER(c_int), _E]),
}


def _candidates():
    env = os.environ.get("COMMSCHED_LIBRARY")
    if env:
        yield env
        return  # an explicit choice is never second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "libcommsched.so*"))):
        yield path
    # python/commsched/ inside a checkout: the checkout's build trees.
    root = os.path.dirname(os.path.dirname(here))
    builds = os.path.join(root, "build")
    seen = []
    for name in ("release", "debug"):
        seen.append(os.path.join(builds, name, "libcommsched.so"))
    seen += sorted(glob.glob(os.path.join(builds, "*", "libcommsched.so")))
    for path in dict.fromkeys(seen):
        if os.path.exists(path):
            yield path
    found = ctypes.util.find_library("commsched")
    if found:
        yield found


_lock = threading.Lock()
_lib = None


def _open(candidates, prototypes, missing):
    """The first of candidates that loads, its prototypes declared; OSError
    with `missing`, "{tried}" replaced by the paths tried, when none does."""
    tried = []
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in prototypes.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise OSError(missing.replace("{tried}", "; ".join(tried) or "nothing"))


def load():
    """The loaded library, with every prototype declared (loaded once)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        lib = _open(_candidates(), _PROTOTYPES,
                    "commsched: cannot find libcommsched; set "
                    "COMMSCHED_LIBRARY to its path (tried: {tried})")
        major = lib.commsched_version_number() // 10000
        if major != ABI_MAJOR:
            raise OSError(
                "commsched: %s is version %s; this binding needs major "
                "version %d" % (getattr(lib, "_name", "?"),
                                lib.commsched_version().decode(), ABI_MAJOR))
        _lib = lib
        return lib


_import_lib = None


def _import_candidates(lib):
    env = os.environ.get("COMMSCHED_IMPORT_LIBRARY")
    if env:
        yield env
        return
    # Beside the libcommsched this process loaded (a build tree, an
    # install's libdir, a copy in the package).
    name = getattr(lib, "_name", None) or ""
    if os.path.sep in name:
        here = os.path.dirname(os.path.realpath(name))
        for path in sorted(glob.glob(os.path.join(
                here, "libcommsched_import.so*"))):
            yield path
    found = ctypes.util.find_library("commsched_import")
    if found:
        yield found


def load_import():
    """libcommsched_import (the importers, commsched/import.h), loaded
    once, after libcommsched (load()) whose functions it calls."""
    global _import_lib
    lib = load()
    with _lock:
        if _import_lib is None:
            _import_lib = _open(
                _import_candidates(lib), _IMPORT_PROTOTYPES,
                "commsched: cannot find libcommsched_import (the importers) "
                "beside " + str(getattr(lib, "_name", "libcommsched")) +
                "; set COMMSCHED_IMPORT_LIBRARY to its path (tried: {tried})")
        return _import_lib
