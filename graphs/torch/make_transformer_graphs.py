"""Makes graphs/torch/transformer-*.json: the ~1K-node scheduler-node
lists a real torch.compile (torch 2.13.0, CPU, Inductor, compile only)
hands commsched's plugin for the transformer training steps of
transformer_steps.py (FSDP as SimpleFSDP does it, TP + SP, 2D, MoE), under
PyTorch's fake process group of 8 ranks:

    COMMSCHED_LIBRARY=build/release/libcommsched.so PYTHONPATH=python \\
        build/venv/bin/python graphs/torch/make_transformer_graphs.py \\
        [--graphs-only] [--kinds fsdp,tp,2d,moe] graphs/torch

Each program gives two graphs, its forward (-0) and its backward (-1),
exported in Inductor's order (commsched.inductor.export). Inductor
estimates no runtime on CPU, so the files carry flops and bytes (torch's
figures, docs/API.md) and commsched's cost model prices them.

Beside each graph, anchors/<graph>.torch-<pass>.order is the order torch
2.13's own pass of that name (torch._inductor.comms: raise_comms,
sink_waits, reorder_compute_for_overlap, sink_waits_iterative,
reorder_communication_preserving_peak_memory) gives the same scheduler
nodes, fed commsched's runtimes for them through
config.estimate_op_runtime, so that commsched's pass of the same name,
run on the graph file, sees the same times (tests/passes/torch_orders.py
compares). A pass that does not finish within CAP seconds is not
recorded (anchors/README.orders lists every graph and pass without an
order). ``--graphs-only`` writes the graphs and leaves the recorded orders
as they are (torch's RCPPM takes minutes a graph at this size; the orders
depend only on the nodes and their runtimes, which the graph files' flops
and bytes fix); ``--kinds`` makes only the programs named.

Deterministic: the same torch gives the same files (node names and order
depend only on the program).
"""
import os
import signal
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PASSES = ("raise_comms", "sink_waits", "reorder_compute_for_overlap",
          "sink_waits_iterative",
          "reorder_communication_preserving_peak_memory")
SIZE = "1k"
CAP = 1800


class Cap(Exception):
    pass


def main(outdir, orders=True, kinds=None):
    warnings.filterwarnings("ignore")
    import torch
    import torch._inductor.config as icfg
    from torch._inductor import comms
    import commsched
    import commsched.inductor as ci
    import transformer_steps as ts
    ts.init_fake_world()
    version = torch.__version__.split("+")[0]
    os.makedirs(os.path.join(outdir, "anchors"), exist_ok=True)

    def ring(_sig, _frame):
        raise Cap()
    for kind in kinds or ts.KINDS:
        layers = ts.LAYERS[kind][SIZE]
        count = [0]

        def hook(snodes):
            base = "transformer-%s-%dL-%d" % (kind, layers, count[0])
            count[0] += 1
            ci.export(snodes, os.path.join(outdir, base + ".json"), name=base)
            print(os.path.join(outdir, base + ".json"), len(snodes),
                  flush=True)
            if not orders:
                return snodes
            rt = commsched.optimize(ci.to_graph(snodes), "none").runtime_ns
            est = {n: rt[n] * 1e-6 for n in rt}
            with icfg.patch(estimate_op_runtime=lambda sn:
                            est[sn.get_name()]):
                for p in PASSES:
                    path = os.path.join(outdir, "anchors",
                                        "%s.torch-%s.order" % (base, p))
                    old = signal.signal(signal.SIGALRM, ring)
                    signal.alarm(CAP)
                    t0 = time.perf_counter()
                    try:
                        order = getattr(comms, p)(list(snodes))
                    except Cap:
                        order = None
                    finally:
                        signal.alarm(0)
                        signal.signal(signal.SIGALRM, old)
                    secs = time.perf_counter() - t0
                    if order is None:
                        if os.path.exists(path):
                            os.unlink(path)
                        continue
                    with open(path, "w") as fh:
                        fh.write("# torch %s's %s on the scheduler nodes of "
                                 "%s.json (commsched's runtimes through "
                                 "config.estimate_op_runtime).\n# Made by "
                                 "make_transformer_graphs.py.\n"
                                 % (version, p, base))
                        for sn in order:
                            fh.write(sn.get_name() + "\n")
                    print("  %s: %.1f s" % (p, secs), flush=True)
            return snodes
        ts.compile_step(kind, layers, hook)
    if orders:
        write_readme(outdir, version)


def write_readme(outdir, version):
    """anchors/README.orders from what the directory holds, so that runs of
    some kinds at a time leave it true for all of them."""
    missing = []
    for name in sorted(os.listdir(outdir)):
        if name.startswith("transformer-") and name.endswith(".json"):
            base = name[:-len(".json")]
            missing += ["%s: torch's %s did not finish within %d s; no "
                        "order recorded" % (base, p, CAP) for p in PASSES
                        if not os.path.exists(os.path.join(
                            outdir, "anchors",
                            "%s.torch-%s.order" % (base, p)))]
    with open(os.path.join(outdir, "anchors", "README.orders"), "w") as fh:
        fh.write("Orders of torch %s's comms passes on the transformer "
                 "graphs (make_transformer_graphs.py).\n" % version)
        for line in missing or ["Every pass finished within %d s." % CAP]:
            fh.write(line + "\n")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?",
                    default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--graphs-only", action="store_true",
                    help="write the graphs, keep the recorded orders")
    ap.add_argument("--kinds", help="comma-separated: fsdp,tp,2d,moe")
    a = ap.parse_args()
    main(a.outdir, orders=not a.graphs_only,
         kinds=a.kinds.split(",") if a.kinds else None)
