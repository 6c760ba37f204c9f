#!/usr/bin/env python3
"""A direct transliteration of the seed's scheduling passes
(../shared/seeds/003_inductor_comms.py.txt, PyTorch Inductor comms.py) onto
commsched's JSON graph format, used as the reference in differential tests.

Standard library only. It follows the seed function by function and keeps
the seed's names, statement order and float arithmetic, adapted as
docs/PASSES.md maps graphs onto scheduler nodes:

  * node B is a dependency of node A when A reads a buffer (or an alias) that
    B outputs, or A lists B in `after` (the seed's unmet_dependencies without
    fake deps), or in `after_fake` (a fake dep: seen by _schedule_for_comm and
    by ancestors, ignored by the iterative passes' dependency tests);
  * a node whose outputs carry a "from" (a fused kernel) stands for its
    members before fusion: one per such output, depending on the producers
    of the buffers its "from" names, and one for the other outputs,
    depending on every input; each also depends on every member of the
    nodes in its `after` and `after_fake` and of its in-place write edges.
    Inductor's ancestors are taken over the members (compute_ancestors
    runs before fusion), a fused node's the union of its members';
  * a node's "output names" are {its own name} and its "dependency names" the
    names of the nodes it depends on, so every seed test of the form
    `unmet_deps & outputs(B)` reads "has a non-fake dependency on B";
  * contains_collective = kind collective, contains_async_collective = a
    collective with async != false, contains_wait = kind wait,
    contains_gemm_like = gemm_like;
  * estimate_op_runtime = the node's runtime_ns (a wait without one costs 0);
    the iterative passes multiply by reorder_sink_runtime_estimations_*_mult,
    _schedule_for_comm does not.

Corrections applied exactly as docs/PASSES.md states (and only those):
  * memory is exact (section 3): the freeable-input baseline belongs to no
    node, last uses follow the order, and the potential peak of a swap is the
    highest post_alloc among the group and the candidate after the swap,
    computed here by a full recompute of the hypothetical order;
  * sink_waits_iterative uses PR #184558's exposed_delta.

Literal details kept: RCPPM never processes the last node and the sink pass
never the first; resume points; unsafe collective reorder defaults to true;
waits may pass sync collectives; _coll_exposed_communication_time's
never-firing "wait for a collective found on the way" branch (it tests the
wait against the walked-from collective, which the first test already
caught).

decide_global_ordering_of_comms: the seed only adds the chain of fake edges
(comm[i-1] -> comm[i]) in the current order. Like the C port, fake edges the
current order already violates (only possible after an iterative pass) are
dropped first, and an edge already present is not added twice; the count of
added edges is reported.

Usage:
  seed_reference.py GRAPH.json [--passes a,b,c] [--set key=value ...]
prints {"order": [...], "passes": [{"pass", "fake_edges_added", "nodes":
[{"node", "moves", "grouped", "limiting_factor", "comm_time_ns", ...}]}]}.
"""
import heapq
import json
import sys
from collections import defaultdict

DEFAULT_PIPELINE = ("decide_global_ordering_of_comms,"
                    "reorder_communication_preserving_peak_memory,"
                    "sink_waits_iterative,"
                    "reorder_communication_preserving_peak_memory")


# ---- config_comms --------------------------------------------------------

class Config:
    def __init__(self):
        self.reorder_iterative_peak_memory_budget = 0.2
        self.reorder_iterative_use_runtime_estimations = False
        self.reorder_iterative_extra_comm_comp_overlap = 0.5
        self.reorder_iterative_unsafe_collectives_reorder = True
        self.reorder_iterative_group_with_collectives = False
        self.reorder_iterative_debug_limit_to_reorder = None
        self.sink_iterative_peak_memory_budget = 0.2
        self.sink_iterative_use_runtime_estimations = False
        self.sink_iterative_extra_comm_comp_overlap = 0.5
        self.sink_waits_iterative_unsafe_collectives_reorder = True
        self.sink_waits_iterative_swap_with_collectives = False
        self.sink_waits_iterative_debug_limit_to_sink = None
        self.reorder_sink_runtime_estimations_comm_mult = 2.0
        self.reorder_sink_runtime_estimations_non_comm_mult = 1.0
        self.reorder_iterative_debug_memory_recompute = False

    def set(self, key, value):
        if not hasattr(self, key):
            raise KeyError(f"unknown knob {key!r}")
        cur = getattr(self, key)
        if key.endswith("_debug_limit_to_reorder") or key.endswith(
                "_debug_limit_to_sink"):
            v = None if value in ("none", "None") else int(value)
        elif isinstance(cur, bool):
            if value in ("true", "True", "1"):
                v = True
            elif value in ("false", "False", "0"):
                v = False
            else:
                raise ValueError(f"{key}: bad boolean {value!r}")
        else:
            v = float(value)
        setattr(self, key, v)


# ---- the graph, as scheduler nodes ----------------------------------------

class SNode:
    """Stands in for BaseSchedulerNode."""

    def __init__(self, name, kind, is_async, gemm_like, runtime, outs):
        self.name = name
        self.kind = kind
        self.is_async = is_async
        self.gemm_like = gemm_like
        self.runtime = runtime
        self.out_buffer_names = outs  # real buffer names, for messages
        self.deps = set()       # non-fake dependencies (node names)
        self.ctl_deps = set()   # after and in-place write edges (node names)
        self.fake_deps = set()  # after_fake (node names)

    def get_name(self):
        return self.name

    def __repr__(self):
        return self.name


class Graph:
    def __init__(self, doc):
        self.doc = doc
        self.buffers = {}  # name -> dict(size, alias_of, producer, input,
        #                        freeable, from_)
        for i in doc.get("inputs", []):
            self.buffers[i["name"]] = dict(size=i["size"], alias_of=None,
                                           producer=None, input=True,
                                           from_=None,
                                           freeable=bool(i.get("freeable",
                                                                False)))
        self.nodes = []
        self.by_name = {}
        for n in doc["nodes"]:
            kind = n["kind"]
            rt = n.get("runtime_ns")
            if rt is None:
                if kind != "wait":
                    raise ValueError(f"node {n['name']}: needs runtime_ns")
                rt = 0.0
            outs = []
            for o in n.get("outputs", []):
                self.buffers[o["name"]] = dict(size=o.get("size", 0),
                                               alias_of=o.get("alias_of"),
                                               producer=n["name"],
                                               input=False, freeable=False,
                                               from_=o.get("from"))
                outs.append(o["name"])
            s = SNode(n["name"], kind,
                      kind == "collective" and n.get("async", True),
                      bool(n.get("gemm_like", False)), float(rt), outs)
            self.nodes.append(s)
            self.by_name[s.name] = s
        self.reads = {}
        for n in doc["nodes"]:
            s = self.by_name[n["name"]]
            self.reads[s.name] = list(n.get("inputs", []))
            for b in n.get("inputs", []):
                p = self.buffers[b]["producer"]
                if p is not None:
                    s.deps.add(p)
            for a in n.get("after", []):
                s.deps.add(a)
                s.ctl_deps.add(a)
            for a in n.get("after_fake", []):
                s.fake_deps.add(a)
        # Memory model inputs (docs/FORMAT.md "Memory model (in brief)").
        self.readers = defaultdict(set)  # root buffer -> node names
        for name, bufs in self.reads.items():
            for b in bufs:
                self.readers[self.root(b)].add(name)
        self.derive_mutation_deps()
        self.keep = set()
        for o in doc.get("outputs", []):
            b = o
            while b is not None:  # every buffer on the chain: roots matter
                self.keep.add(b)
                b = self.buffers[b]["alias_of"]

    def root(self, b):
        while self.buffers[b]["alias_of"] is not None:
            b = self.buffers[b]["alias_of"]
        return b

    def derive_mutation_deps(self):
        """In-place writes (docs/FORMAT.md): the file order defines a
        buffer's versions. Inductor orders mutations with extra
        dependencies; commsched derives them at load as non-fake edges, so
        they belong in deps: readers of the old version complete (an async
        collective at its first wait) before the in-place collective, and
        readers by the buffer's own name after it follow its completion.
        Written independently of src/graph/mutation.c from the format's
        text; graphs whose file order races are not generated."""
        pos = {s.name: i for i, s in enumerate(self.nodes)}
        done = {}
        for s in self.nodes:
            done[s.name] = None if (s.kind == "collective" and s.is_async) \
                else s.name
        for s in self.nodes:
            if s.kind != "wait":
                continue
            for b in self.reads[s.name]:
                p = self.buffers[b]["producer"]
                if p is not None and done[p] is None:
                    done[p] = s.name

        def writes(node, root):
            return self.by_name[node].kind == "collective" and any(
                self.buffers[o]["alias_of"] is not None and
                self.root(o) == root and self.buffers[root]["producer"] != node
                for o in self.by_name[node].out_buffer_names)

        def through(b, w):
            while b is not None:
                if self.buffers[b]["producer"] == w:
                    return True
                b = self.buffers[b]["alias_of"]
            return False

        for root, readers in self.readers.items():
            order = sorted(readers, key=pos.get)
            if not any(writes(r, root) for r in order):
                continue
            writer, version = None, []
            for r in order:
                if writer is not None and any(
                        self.root(b) == root and not through(b, writer)
                        for b in self.reads[r]):
                    c = done[writer]
                    if c is None or pos[c] > pos[r]:
                        raise ValueError(f"{r} races {writer}")
                    self.by_name[r].deps.add(c)
                    self.by_name[r].ctl_deps.add(c)
                if not writes(r, root):
                    version.append(r)
                    continue
                for q in version:
                    c = done[q]
                    if c is None or pos[c] > pos[r]:
                        raise ValueError(f"{r} races {q}")
                    if c != r:
                        self.by_name[r].deps.add(c)
                        self.by_name[r].ctl_deps.add(c)
                writer, version = r, []


G = None      # the graph being scheduled
config = None  # the knobs


def contains_collective(snode):
    return snode.kind == "collective"


def contains_async_collective(snode):
    return snode.kind == "collective" and snode.is_async


def contains_wait(snode):
    return snode.kind == "wait"


is_wait = contains_wait


def contains_gemm_like(snode):
    return snode.gemm_like


def estimate_op_runtime(snode):
    return snode.runtime


def _op_runtime_estimate_mult(snode):
    if contains_collective(snode):
        return config.reorder_sink_runtime_estimations_comm_mult
    return config.reorder_sink_runtime_estimations_non_comm_mult


# ---- memory.py: estimate_peak_memory_allocfree, exact (docs/FORMAT.md "Memory model (in brief)") ------

def estimate_peak_memory_allocfree(snodes):
    """Returns (peak, {snode: (post_alloc, post_free)}, {snode: [alloc, free]},
    {root buffer: last-use snode})."""
    pos = {s: i for i, s in enumerate(snodes)}
    allocfree = {s: [0, 0] for s in snodes}
    baseline = 0
    last_use = {}
    for name, b in G.buffers.items():
        if b["alias_of"] is not None:
            continue
        readers = [G.by_name[r] for r in G.readers.get(name, ())]
        if b["input"]:
            if not b["freeable"] or not readers:
                continue
            baseline += b["size"]
        else:
            allocfree[G.by_name[b["producer"]]][0] += b["size"]
        if name in G.keep:
            continue
        last = max(readers, key=lambda r: pos[r]) if readers else \
            G.by_name[b["producer"]]
        allocfree[last][1] += b["size"]
        last_use[name] = last
    cur = baseline
    peak = baseline
    curr_memory = {}
    for s in snodes:
        cur += allocfree[s][0]
        post_alloc = cur
        peak = max(peak, cur)
        cur -= allocfree[s][1]
        curr_memory[s] = (post_alloc, cur)
    return peak, curr_memory, allocfree, last_use


# ---- the seed's helpers ----------------------------------------------------

def _initialize_double_linked_list(snodes):
    _prev = {}
    _next = {}
    for i, snode in enumerate(snodes):
        _prev[snode] = snodes[i - 1] if i > 0 else None
        _next[snode] = snodes[i + 1] if i < len(snodes) - 1 else None
    _head = snodes[0]
    return _prev, _next, _head


def _group_nodes_from_linked_list(head, tail, next_dict):
    ret = []
    n = head
    while True:
        if n is not None:
            ret.append(n)
        if n == tail:
            break
        n = next_dict[n]
    return ret


def _is_corresponding_collective_wait(collective_snode, wait_snode,
                                      node_output_sets, node_dep_sets):
    collective_outs = node_output_sets[collective_snode]
    unmet_deps = node_dep_sets[wait_snode]
    return bool(unmet_deps & collective_outs)


def _temp_group_visit_leaves(snode, fn):
    fn(snode)


def _coll_exposed_communication_time(collective_snode, next_dict, runtimes,
                                     node_output_sets, node_dep_sets):
    comm_time = runtimes[collective_snode]
    comp_time = 0.0
    collective_outs = node_output_sets[collective_snode]
    overlap_info = ""
    collectives_found = []
    snode = next_dict[collective_snode]
    while snode is not None:
        unmet_deps = node_dep_sets[snode]
        if unmet_deps & collective_outs:
            overlap_info += f"->W[{snode.get_name()}]"
            break
        if contains_collective(snode):
            if not contains_async_collective(snode):
                break
            else:
                collectives_found.append(snode)
                snode = next_dict[snode]
                continue
        if contains_wait(snode):
            has_wait_for_collectives_found = False
            for _coll in collectives_found:
                # (sic) the seed tests collective_snode, not _coll
                if _is_corresponding_collective_wait(
                        collective_snode, snode, node_output_sets,
                        node_dep_sets):
                    has_wait_for_collectives_found = True
                    break
            if has_wait_for_collectives_found:
                break
        comp_time_before = comp_time

        def accumulate_time(_snode):
            nonlocal comp_time
            comp_time += runtimes[_snode]

        _temp_group_visit_leaves(snode, accumulate_time)
        comp_time_after = comp_time
        overlap_info += f"+{snode.get_name()}[{comp_time_after - comp_time_before}]"
        snode = next_dict[snode]
    return comm_time, comp_time, overlap_info


def _wait_exposed_communication_time(wait_snode, head, prev_dict, runtimes,
                                     node_output_sets, node_dep_sets):
    comm_time = 0.0
    comp_time = 0.0
    overlap_info = ""
    waits_found = []
    snode = prev_dict[wait_snode]
    while snode is not None:
        if contains_wait(snode):
            waits_found.append(snode)
        if contains_collective(snode):
            if _is_corresponding_collective_wait(snode, wait_snode,
                                                 node_output_sets,
                                                 node_dep_sets):
                comm_time = runtimes[snode]
                overlap_info += f"->C[{snode.get_name()}]"
                break
            if not contains_async_collective(snode):
                comp_time = 0.0
                snode = prev_dict[snode]
                continue
            else:
                for w in waits_found:
                    if _is_corresponding_collective_wait(snode, w,
                                                         node_output_sets,
                                                         node_dep_sets):
                        comp_time = 0.0
                        break  # inner loop break
                snode = prev_dict[snode]
                continue
        comp_time_before = comp_time

        def accumulate_time(_snode):
            nonlocal comp_time
            comp_time += runtimes[_snode]

        _temp_group_visit_leaves(snode, accumulate_time)
        comp_time_after = comp_time
        overlap_info += f"+{snode.get_name()}[{comp_time_after - comp_time_before}]"
        snode = prev_dict[snode]
    return comm_time, comp_time, overlap_info


def _perform_double_linked_list_swap(candidate, group_head, group_tail,
                                     prev_dict, next_dict, head):
    candidate_prev = prev_dict[candidate]
    if candidate_prev:
        next_dict[candidate_prev] = group_head
    prev_dict[group_head] = candidate_prev
    group_tail_next = next_dict[group_tail]
    if group_tail_next:
        prev_dict[group_tail_next] = candidate
    next_dict[candidate] = group_tail_next
    prev_dict[candidate] = group_tail
    next_dict[group_tail] = candidate
    if head == candidate:
        return group_head
    return head


def _perform_double_linked_list_swap_sink_waits(candidate, group_head,
                                                group_tail, prev_dict,
                                                next_dict, head):
    group_head_prev = prev_dict[group_head]
    if group_head_prev:
        next_dict[group_head_prev] = candidate
    prev_dict[candidate] = group_head_prev
    candidate_next = next_dict[candidate]
    if candidate_next:
        prev_dict[candidate_next] = group_tail
    next_dict[group_tail] = candidate_next
    prev_dict[group_head] = candidate
    next_dict[candidate] = group_head
    if group_head == head:
        return candidate
    return head


def _potential_peak_exact(head, next_dict, candidate, gns, after_group):
    """The seed's _calculate_potential_peak_memory_{reorder,sink_waits} with
    exact tracking: the highest post_alloc among the group and the candidate
    once the candidate has moved after (reorder) / before (sink) the group.
    Nodes outside [candidate, group] keep their levels, as in the seed."""
    order = _group_nodes_from_linked_list(head, None, next_dict)
    order.remove(candidate)
    if after_group:
        order.insert(order.index(gns[-1]) + 1, candidate)
    else:
        order.insert(order.index(gns[0]), candidate)
    _, curr_memory, _, _ = estimate_peak_memory_allocfree(order)
    return max(curr_memory[n][0] for n in [*gns, candidate])


class ReorderInfo:
    def __init__(self):
        self.limiting_factor = "None"
        self.moves = 0
        self.grouped = 0
        self.grouped_info = ""
        self.comm_time = -1.0
        self.comp_time = -1.0
        self.initial_exposed = -1.0
        self.final_exposed = -1.0
        self.overlap_info = "None"


class SinkWaitInfo(ReorderInfo):
    def __init__(self):
        super().__init__()
        self.moves_info = ""


def _is_node_groupable_for_reorder(candidate):
    if not config.reorder_iterative_group_with_collectives:
        if contains_async_collective(candidate):
            return (False,
                    f"candidate contains_collective {candidate.get_name()}")
    if not config.reorder_iterative_use_runtime_estimations:
        if contains_gemm_like(candidate):
            return False, "contains_gemm_like"
    return True, None


def _precompute_sets(snodes):
    node_output_sets = {s: frozenset([s.get_name()]) for s in snodes}
    node_dep_sets = {s: frozenset(s.deps) for s in snodes}
    return node_output_sets, node_dep_sets


# ---- _reorder_communication_preserving_peak_memory_internal ----------------

def _reorder_communication_preserving_peak_memory_internal(snodes):
    has_collectives = False
    for snode in snodes:
        if contains_collective(snode):
            has_collectives = True
            break
    if not has_collectives:
        return snodes, {}
    peak_memory, _curr_memory, _, _ = estimate_peak_memory_allocfree(snodes)
    runtimes = {
        snode: estimate_op_runtime(snode) * _op_runtime_estimate_mult(snode)
        for snode in snodes
    }
    node_output_sets, node_dep_sets = _precompute_sets(snodes)
    stats = {}
    total_moves = 0
    _prev, _next, _head = _initialize_double_linked_list(snodes)
    debug_num_collectives_to_reorder = \
        config.reorder_iterative_debug_limit_to_reorder
    num_processed_collectives = 0
    curr = _head
    while curr is not None and _next[curr] is not None:
        _next_curr = _next[curr]
        if not contains_async_collective(curr):
            curr = _next_curr
            continue
        if debug_num_collectives_to_reorder is not None and (
                num_processed_collectives >= debug_num_collectives_to_reorder):
            break
        num_processed_collectives += 1
        info = stats[curr] = ReorderInfo()
        comm_time, comp_time, overlap_info = _coll_exposed_communication_time(
            curr, _next, runtimes, node_output_sets, node_dep_sets)
        info.comm_time = comm_time
        info.comp_time = comp_time
        info.initial_exposed = info.final_exposed = comm_time - comp_time
        info.overlap_info = overlap_info
        candidate = _prev[curr]
        group_head = curr
        group_tail = curr
        group_waits = {}
        group_runtime = 0.0
        group_unmet_deps_names = set(node_dep_sets[curr])
        group_output_names = set(node_output_sets[curr])
        while candidate is not None:
            if config.reorder_iterative_use_runtime_estimations and (
                    info.final_exposed
                    < -config.reorder_iterative_extra_comm_comp_overlap
                    * info.comm_time):
                info.limiting_factor = "unexposed by runtime estimations"
                break
            if (not config.reorder_iterative_unsafe_collectives_reorder
                    and contains_collective(candidate)):
                info.limiting_factor = "collective ordering"
                break
            data_deps_names = group_unmet_deps_names - group_output_names
            if not data_deps_names:
                data_dep = False
            else:
                candidate_out_names = node_output_sets[candidate]
                data_dep = bool(candidate_out_names & data_deps_names)
            if data_dep:
                is_groupable_result, grouping_reason = \
                    _is_node_groupable_for_reorder(candidate)
                if is_groupable_result:
                    group_head = candidate
                    group_unmet_deps_names.update(node_dep_sets[candidate])
                    group_output_names.update(node_output_sets[candidate])
                    if config.reorder_iterative_use_runtime_estimations:
                        if contains_wait(candidate):
                            comm_time, comp_time, _ = \
                                _wait_exposed_communication_time(
                                    candidate, _head, _prev, runtimes,
                                    node_output_sets, node_dep_sets)
                            group_waits[candidate] = comm_time, comp_time
                        if not contains_async_collective(candidate):
                            group_runtime += runtimes[candidate]
                    info.grouped += 1
                    candidate = _prev[candidate]
                    continue
                else:
                    msg = (
                        f"data dependency detected"
                        f"\n candidate:{candidate.get_name()}(outs:{candidate.out_buffer_names})"
                        f"\n non_group_reason:{grouping_reason}")
                    info.limiting_factor = msg
                    break
            if config.reorder_iterative_use_runtime_estimations:
                if not contains_async_collective(candidate):
                    c_runtime = runtimes[candidate]
                    if c_runtime > 0 and len(group_waits) > 0:
                        exposed_before = max(0, info.comm_time - info.comp_time)
                        exposed_after = max(
                            0, info.comm_time - info.comp_time - c_runtime)
                        exposed_delta = exposed_after - exposed_before
                        for gw_comm_time, gw_comp_time in group_waits.values():
                            gw_exposed_before = max(0, gw_comm_time - gw_comp_time)
                            gw_exposed_after = max(
                                0, gw_comm_time - gw_comp_time + c_runtime)
                            exposed_delta += gw_exposed_after - gw_exposed_before
                        if exposed_delta > 0:
                            info.limiting_factor = (
                                f"candidate has compute {c_runtime},"
                                f" group contains waits, total_exposed_delta {exposed_delta}")
                            break
                        else:
                            for gw, (gw_comm_time, gw_comp_time) in \
                                    group_waits.items():
                                group_waits[gw] = (gw_comm_time,
                                                   gw_comp_time - c_runtime)
                else:
                    if group_runtime > 0:
                        comm_time, comp_time, _ = \
                            _coll_exposed_communication_time(
                                candidate, _next, runtimes, node_output_sets,
                                node_dep_sets)
                        exposed_before = max(0, comm_time - comp_time)
                        exposed_after = max(0, comm_time - comp_time
                                            + group_runtime)
                        exposed_delta = exposed_after - exposed_before
                        if exposed_delta > 0:
                            info.limiting_factor = (
                                f"candidate {candidate.get_name()} is collective,"
                                f" group_runtime:{group_runtime},"
                                f" exposed_delta:{exposed_delta} c_comm_time:{comm_time} c_comp_time:{comp_time}")
                            break
            gns = _group_nodes_from_linked_list(group_head, group_tail, _next)
            potential_peak = _potential_peak_exact(_head, _next, candidate,
                                                   gns, after_group=True)
            if (potential_peak - peak_memory
                    > peak_memory * config.reorder_iterative_peak_memory_budget):
                info.limiting_factor = (
                    f"peak memory new:{potential_peak} vs base:{peak_memory}")
                break
            info.moves += 1
            total_moves += 1
            _head = _perform_double_linked_list_swap(
                candidate, group_head, group_tail, _prev, _next, _head)
            comm_time, comp_time, overlap_info = \
                _coll_exposed_communication_time(
                    curr, _next, runtimes, node_output_sets, node_dep_sets)
            info.comm_time = comm_time
            info.comp_time = comp_time
            info.overlap_info = overlap_info
            info.final_exposed = comm_time - comp_time
            candidate = _prev[group_head]
        curr = _next_curr
    new_snodes = _group_nodes_from_linked_list(_head, None, _next)
    return new_snodes, stats


# ---- _schedule_for_comm ----------------------------------------------------

def _member_key(node, b):
    """The member of `node` (a node name) that makes its output b: b itself
    when b carries a "from" (a collective's ignore it), else None, the
    member of its other outputs."""
    if G.buffers[b]["from_"] is None or G.by_name[node].kind == "collective":
        return None
    return b


def _members(node):
    return [(node, _member_key(node, b))
            for b in G.by_name[node].out_buffer_names] + [(node, None)]


def _member_deps(member):
    node, key = member
    s = G.by_name[node]
    out = []
    for b in (G.reads[node] if key is None else G.buffers[key]["from_"]):
        p = G.buffers[b]["producer"]
        if p is not None:
            out.append((p, _member_key(p, b)))
    for d in s.ctl_deps | s.fake_deps:
        out.extend(_members(d))
    return out


def _ancestors(snode):
    """Inductor's snode.ancestors: every node (fused node) one of whose
    members is reachable from snode's over unmet dependencies, fake ones
    included, the members before fusion (see the module documentation)."""
    seen = set()
    stack = [(snode.name, None)]
    while stack:
        for d in _member_deps(stack.pop()):
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return {node for node, _ in seen}


def _schedule_for_comm(snodes, raise_comms, sink_waits, reorder_for_overlap):
    name_to_fused_node = {}
    scores_0, scores_1, scores_2 = {}, {}, {}
    for idx, snode in enumerate(snodes):
        name_to_fused_node[snode.get_name()] = snode
        node_name = snode.get_name()
        scores_0[node_name] = sys.maxsize
        scores_1[node_name] = 0
        scores_2[node_name] = idx
    comm_idx = 0
    for snode in snodes:
        if raise_comms and contains_collective(snode):
            scores_0[snode.get_name()] = comm_idx
            for ancestor in _ancestors(snode):
                anc_fused_name = name_to_fused_node[ancestor].get_name()
                scores_0[anc_fused_name] = min(scores_0[anc_fused_name],
                                               comm_idx)
            comm_idx += 1
        elif sink_waits and contains_wait(snode):
            scores_1[snode.get_name()] = 1

    class Runnable:
        def __init__(self, snode):
            self.snode = snode
            fused_name = snode.get_name()
            self.score = (scores_0[fused_name], scores_1[fused_name],
                          scores_2[fused_name])

        def __lt__(self, other):
            return self.score < other.score

    unmet_deps = {snode: set(snode.deps | snode.fake_deps) for snode in snodes}
    ready = []
    buffer_users = defaultdict(list)
    snode_to_cost = {snode: estimate_op_runtime(snode) for snode in snodes}
    for snode, deps in unmet_deps.items():
        if len(deps) == 0:
            heapq.heappush(ready, Runnable(snode))
        for dep in sorted(deps):
            buffer_users[dep].append(snode)
    scheduled = []

    def schedule(snode):
        scheduled.append(snode)
        for user in buffer_users[snode.get_name()]:
            unmet_deps[user].remove(snode.get_name())
            if len(unmet_deps[user]) == 0:
                heapq.heappush(ready, Runnable(user))

    def get_overlapping_candidate():
        candidates = [x for x in ready
                      if not contains_collective(x.snode)
                      and not contains_wait(x.snode)]
        if len(candidates) == 0:
            return None
        return min(candidates, key=lambda x: x.score)

    def schedule_collective_for_overlap(snode):
        assert contains_collective(snode)
        schedule(snode)
        collective_cost = snode_to_cost[snode]
        while (collective_cost > 0
               and (candidate := get_overlapping_candidate()) is not None):
            ready.remove(candidate)
            schedule(candidate.snode)
            collective_cost -= snode_to_cost[candidate.snode]
        heapq.heapify(ready)

    while ready:
        snode = heapq.heappop(ready).snode
        if reorder_for_overlap and contains_collective(snode):
            schedule_collective_for_overlap(snode)
        else:
            schedule(snode)
    for deps in unmet_deps.values():
        assert len(deps) == 0, f"Detected unscheduled nodes: {unmet_deps}"
    return scheduled


# ---- decide_global_ordering_of_comms ---------------------------------------

def decide_global_ordering_of_comms(nodes):
    pos = {n: i for i, n in enumerate(nodes)}
    for n in nodes:  # (C port) drop fake edges the order violates
        n.fake_deps = {d for d in n.fake_deps if pos[G.by_name[d]] < pos[n]}
    comm_nodes = [n for n in nodes if contains_collective(n)]
    added = 0
    for i in range(1, len(comm_nodes)):
        prev = comm_nodes[i - 1].get_name()
        if prev not in comm_nodes[i].fake_deps:
            comm_nodes[i].fake_deps.add(prev)
            added += 1
    return nodes, added


# ---- _sink_waits_iterative_internal ----------------------------------------

def _is_node_groupable_for_sink_waits(candidate):
    if contains_wait(candidate):
        return False, f"candidate contains wait {candidate.get_name()}"
    if contains_async_collective(candidate):
        return (False,
                f"candidate contains_async_collective {candidate.get_name()}")
    if not config.sink_iterative_use_runtime_estimations:
        if contains_collective(candidate):
            return (False,
                    f"candidate contains collective {candidate.get_name()}")
        if contains_gemm_like(candidate):
            return (False,
                    f"candidate contains gemm_like {candidate.get_name()}")
    return True, None


def _sink_waits_iterative_internal(snodes):
    original_snodes_num = len(snodes)
    if original_snodes_num == 0:
        return snodes, {}
    peak_memory, _curr_memory, _, _ = estimate_peak_memory_allocfree(snodes)
    _prev, _next, _head = _initialize_double_linked_list(snodes)
    stats = {}
    runtimes = {
        snode: estimate_op_runtime(snode) * _op_runtime_estimate_mult(snode)
        for snode in snodes
    }
    node_output_sets, node_dep_sets = _precompute_sets(snodes)
    curr = snodes[-1]
    processed_waits = set()
    debug_num_sink_waits_to_reorder = \
        config.sink_waits_iterative_debug_limit_to_sink
    while curr is not None and _prev[curr] is not None:
        _prev_curr = _prev[curr]
        if (debug_num_sink_waits_to_reorder is not None
                and len(processed_waits) >= debug_num_sink_waits_to_reorder):
            break
        if not (contains_wait(curr) and curr not in processed_waits):
            curr = _prev_curr
            continue
        processed_waits.add(curr)
        info = stats[curr] = SinkWaitInfo()
        comm_time, comp_time, overlap_info = _wait_exposed_communication_time(
            curr, _head, _prev, runtimes, node_output_sets, node_dep_sets)
        info.initial_exposed = info.final_exposed = comm_time - comp_time
        info.comm_time = comm_time
        info.comp_time = comp_time
        info.overlap_info = overlap_info
        candidate = _next[curr]
        group_head = curr
        group_tail = curr
        group_colls = {}
        group_runtime = 0.0
        group_output_names = set(node_output_sets[curr])
        group_contains_collective = contains_collective(curr)
        while candidate is not None:
            if config.sink_iterative_use_runtime_estimations and (
                    info.final_exposed
                    < -config.sink_iterative_extra_comm_comp_overlap
                    * info.comm_time):
                info.limiting_factor = "unexposed by runtime estimations"
                break
            if not group_output_names:
                data_dep = False
            else:
                candidate_dep_names = node_dep_sets[candidate]
                data_dep = bool(candidate_dep_names & group_output_names)
            if not config.sink_waits_iterative_swap_with_collectives:
                if contains_async_collective(candidate):
                    info.limiting_factor = (
                        f"candidate contains_async_collective {candidate.get_name()}")
                    break
            both_contain_comms = group_contains_collective and \
                contains_collective(candidate)
            if data_dep or both_contain_comms:
                _is_groupable, groupable_reason = \
                    _is_node_groupable_for_sink_waits(candidate)
                if _is_groupable:
                    group_tail = candidate
                    group_output_names.update(node_output_sets[candidate])
                    group_contains_collective = (
                        group_contains_collective
                        or contains_collective(candidate))
                    if (config.sink_iterative_use_runtime_estimations
                            and contains_collective(candidate)):
                        comm_time, comp_time, _ = \
                            _coll_exposed_communication_time(
                                candidate, _next, runtimes, node_output_sets,
                                node_dep_sets)
                        group_colls[candidate] = (comm_time, comp_time)
                        # Only sync collectives add to the group runtime
                        # (torch 2.13 comms.py:1901 nests this in the branch).
                        if not contains_async_collective(candidate):
                            group_runtime += runtimes[candidate]
                    info.grouped += 1
                    candidate = _next[candidate]
                    continue
                elif not data_dep:
                    if (not config.sink_waits_iterative_unsafe_collectives_reorder
                            and both_contain_comms):
                        info.limiting_factor = (
                            f"collective ordering"
                            f"\n with candidate:{candidate.get_name()}")
                        break
                else:
                    info.limiting_factor = (
                        f"data dependency detected"
                        f"\n candidate:{candidate.get_name()}"
                        f"\n non_group_reason:{groupable_reason}")
                    break
            if config.sink_iterative_use_runtime_estimations:
                if is_wait(candidate):
                    comm_time, comp_time, _ = _wait_exposed_communication_time(
                        candidate, _head, _prev, runtimes, node_output_sets,
                        node_dep_sets)
                    exposed_before = max(0, comm_time - comp_time)
                    exposed_after = max(0, comm_time - comp_time + group_runtime)
                    if exposed_after > exposed_before:
                        info.limiting_factor = (
                            "candidate is wait,"
                            f" exposed_before:{exposed_before} vs exposed_after:{exposed_after}")
                        break
                if not contains_async_collective(candidate):
                    c_runtime = runtimes[candidate]
                    if c_runtime > 0 and len(group_colls) > 0:
                        # PyTorch PR #184558: the seed here reads
                        #   exposed_delta = max(0, comm - comp)
                        #   -max(0, comm - comp - c)       (a discarded line)
                        #   exposed_delta += max(0, gc) - max(0, gc + c)
                        exposed_delta = max(
                            0, info.comm_time - info.comp_time - c_runtime
                        ) - max(0, info.comm_time - info.comp_time)
                        for gc_comm_time, gc_comp_time in group_colls.values():
                            exposed_delta += max(
                                0, gc_comm_time - gc_comp_time + c_runtime
                            ) - max(0, gc_comm_time - gc_comp_time)
                        if exposed_delta > 0:
                            info.limiting_factor = (
                                f"candidate has compute {c_runtime}, group contains collectives,"
                                f" total_exposed_delta {exposed_delta}")
                            break
                        else:
                            for gc, (gc_comm_time, gc_comp_time) in \
                                    group_colls.items():
                                group_colls[gc] = (gc_comm_time,
                                                   gc_comp_time - c_runtime)
            gns = _group_nodes_from_linked_list(group_head, group_tail, _next)
            potential_peak = _potential_peak_exact(_head, _next, candidate,
                                                   gns, after_group=False)
            if (potential_peak - peak_memory
                    > peak_memory * config.sink_iterative_peak_memory_budget):
                info.limiting_factor = (
                    f"peak memory new:{potential_peak} vs base:{peak_memory}")
                break
            info.moves += 1
            info.moves_info += f"+{candidate.get_name()}"
            _head = _perform_double_linked_list_swap_sink_waits(
                candidate, group_head, group_tail, _prev, _next, _head)
            comm_time, comp_time, overlap_info = \
                _wait_exposed_communication_time(
                    curr, _head, _prev, runtimes, node_output_sets,
                    node_dep_sets)
            info.comm_time = comm_time
            info.comp_time = comp_time
            info.final_exposed = comm_time - comp_time
            info.overlap_info = overlap_info
            candidate = _next[group_tail]
        curr = _prev_curr
    new_snodes = _group_nodes_from_linked_list(_head, None, _next)
    return new_snodes, stats


# ---- driver -----------------------------------------------------------------

def _rows(stats):
    return [dict(node=s.get_name(), moves=i.moves, grouped=i.grouped,
                 limiting_factor=i.limiting_factor, comm_time_ns=i.comm_time,
                 comp_time_ns=i.comp_time,
                 initial_exposed_ns=i.initial_exposed,
                 final_exposed_ns=i.final_exposed,
                 overlap_info=i.overlap_info,
                 moves_info=getattr(i, "moves_info", None))
            for s, i in stats.items()]


def run(doc, passes=DEFAULT_PIPELINE, knobs=()):
    """Runs the pipeline over the graph document; returns the result dict."""
    global G, config
    G = Graph(doc)
    config = Config()
    for k, v in knobs:
        config.set(k, v)
    snodes = list(G.nodes)
    out = []
    for p in [p for p in passes.split(",") if p and p != "none"]:
        rec = dict(fake_edges_added=0, nodes=[])
        peak_before = estimate_peak_memory_allocfree(snodes)[0]
        if p == "raise_comms":
            snodes = _schedule_for_comm(snodes, True, False, False)
        elif p == "sink_waits":
            snodes = _schedule_for_comm(snodes, False, True, False)
        elif p == "reorder_compute_for_overlap":
            snodes = _schedule_for_comm(snodes, True, True, True)
        elif p == "reorder_communication_preserving_peak_memory":
            snodes, stats = \
                _reorder_communication_preserving_peak_memory_internal(snodes)
            rec["nodes"] = _rows(stats)
        elif p == "sink_waits_iterative":
            snodes, stats = _sink_waits_iterative_internal(snodes)
            rec["nodes"] = _rows(stats)
        elif p == "decide_global_ordering_of_comms":
            snodes, rec["fake_edges_added"] = \
                decide_global_ordering_of_comms(snodes)
        else:
            raise KeyError(f"unknown pass {p!r}")
        rec["pass"] = p
        rec["peak_memory_before"] = peak_before
        rec["peak_memory_after"] = estimate_peak_memory_allocfree(snodes)[0]
        out.append(rec)
    return dict(order=[s.get_name() for s in snodes], passes=out)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--passes", default=DEFAULT_PIPELINE)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args(argv)
    with open(a.graph) as f:
        doc = json.load(f)
    knobs = [tuple(kv.split("=", 1)) for kv in a.set]
    json.dump(run(doc, a.passes, knobs), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
