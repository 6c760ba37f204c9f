"""Makes graphs/xla/: what XLA compiles from real JAX programs, as HLO text
dumps, and (with --cli) the graphs `commsched import hlo` makes of them.

    build/jax-venv/bin/python graphs/xla/make_xla_graphs.py graphs/xla \\
        --cli build/release/tools/commsched

JAX 0.10.2 (pinned: tools/make-jax-venv.sh installs it). On the CPU
(--platform cpu, the default) the programs are compiled for 8 fake
devices (JAX_NUM_CPU_DEVICES=8): XLA's SPMD partitioner turns each into
one per-device HLO module with real collectives, and the module after
XLA's CPU pipeline (`*.cpu_after_optimizations.txt`, the order of its
entry computation being the CPU scheduler's) is kept as
<name>.cpu.hlo.txt. Nothing is run: compiling is all it takes, so the
sizes are those of a real step.

--platform gpu compiles the same programs for 8 GPUs with XLA's latency
hiding scheduler on (--xla_gpu_enable_latency_hiding_scheduler=true) and
keeps `*.gpu_after_optimizations.txt` as <name>.gpu.hlo.txt, with XLA's
own predicted timeline (--xla_dump_latency_hiding_schedule=true) beside
it. It needs a jax with CUDA and 8 GPUs (or the mock topology a CUDA
jaxlib offers: --mock-gpus); nothing here fakes it on a CPU.

provenance.json records, per platform, the jax and jaxlib versions, the
environment and XLA flags, and each program's shapes. Deterministic: a
rerun with the same versions gives the same files.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEVICES = 8
JAX_VERSION = "0.10.2"

# Shapes: a step of real size per device group; nothing is executed.
HIDDEN = 2048        # FSDP MLP width
TOKENS = 8192        # global tokens of a step
LAYERS = 4
D_MODEL = 1024       # transformer blocks
HEADS = 16
SEQ = 1024
BATCH = 8
FFN = 4096


def programs(jax, jnp, P, NamedSharding, Mesh, shard_map):
    """(name, what, step function, jax.jit's keyword arguments, example
    arguments) of each program. Arguments are ShapeDtypeStructs with shardings: compiling
    needs no data."""
    devs = jax.devices()[:DEVICES]
    mesh = Mesh(devs, ("dp",))
    f32 = jnp.float32

    def arg(shape, mesh_, spec):
        return jax.ShapeDtypeStruct(shape, f32,
                                    sharding=NamedSharding(mesh_, spec))

    def sgd(params, grads):
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params,
                                      grads)

    out = []

    # 1. FSDP MLP through jax.sharding: each weight sharded over dp (rows),
    # gathered whole where a layer uses it; the batch sharded over dp.
    def fsdp_loss(ws, x):
        for w in ws:
            w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P()))
            x = jax.nn.gelu(x @ w)
        return jnp.mean(x * x)

    def fsdp_step(ws, x):
        loss, g = jax.value_and_grad(fsdp_loss)(ws, x)
        return loss, sgd(ws, g)

    ws = [arg((HIDDEN, HIDDEN), mesh, P("dp", None)) for _ in range(LAYERS)]
    x = arg((TOKENS, HIDDEN), mesh, P("dp", None))
    shard = NamedSharding(mesh, P("dp", None))
    out.append(("fsdp-mlp", "FSDP MLP, %d layers of %dx%d, %d tokens: weights "
                "sharded over 8 devices (jax.sharding), gathered per layer; "
                "forward, backward and SGD in one step" % (LAYERS, HIDDEN,
                                                           HIDDEN, TOKENS),
                fsdp_step, {"out_shardings": (NamedSharding(mesh, P()),
                                              [shard] * LAYERS)},
                (ws, x)))

    # 2. Transformer blocks, tensor parallel through shard_map (Megatron:
    # heads and FFN columns split over tp, the row-parallel outputs summed
    # with psum); the batch replicated, forward and backward.
    tmesh = Mesh(devs, ("tp",))
    hd = D_MODEL // HEADS

    def block(p, h):
        wqkv, wo, w1, w2 = p
        b, s, _ = h.shape
        qkv = h @ wqkv                               # [b, s, 3*d/tp]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        nh = q.shape[-1] // hd
        q = q.reshape(b, s, nh, hd)
        k = k.reshape(b, s, nh, hd)
        v = v.reshape(b, s, nh, hd)
        a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / hd ** 0.5,
                           axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, s, nh * hd)
        h = h + jax.lax.psum(o @ wo, "tp")
        f = jax.nn.gelu(h @ w1)
        return h + jax.lax.psum(f @ w2, "tp")

    def tp_loss(params, h):
        for p in params:
            h = block(p, h)
        return jnp.mean(h * h)

    def tp_inner(params, h):
        loss, g = jax.value_and_grad(tp_loss)(params, h)
        return loss, sgd(params, g)

    col, row = P(None, "tp"), P("tp", None)
    pspec = [(col, row, col, row)] * LAYERS
    tp_fn = shard_map(tp_inner, mesh=tmesh, in_specs=(pspec, P()),
                      out_specs=(P(), pspec))
    targs = ([(arg((D_MODEL, 3 * D_MODEL), tmesh, col),
               arg((D_MODEL, D_MODEL), tmesh, row),
               arg((D_MODEL, FFN), tmesh, col),
               arg((FFN, D_MODEL), tmesh, row)) for _ in range(LAYERS)],
             arg((BATCH, SEQ, D_MODEL), tmesh, P()))
    out.append(("tp-transformer", "%d transformer blocks (d_model %d, %d "
                "heads, FFN %d, batch %d x seq %d), tensor parallel over 8 "
                "devices through shard_map (psum after attention and FFN); "
                "forward, backward and SGD" % (LAYERS, D_MODEL, HEADS, FFN,
                                               BATCH, SEQ),
                tp_fn, {}, targs))

    # 3. A 2D mesh (dp 4 x tp 2) through jax.sharding: weights sharded over
    # both axes, the batch over dp, activations' hidden dimension over tp.
    mesh2 = Mesh([[devs[i * 2 + j] for j in range(2)] for i in range(4)],
                 ("dp", "tp"))

    def twod_loss(ws, x):
        for i, w in enumerate(ws):
            w = jax.lax.with_sharding_constraint(
                w, NamedSharding(mesh2, P(None, "tp") if i % 2 == 0
                                 else P("tp", None)))
            x = jax.nn.gelu(x @ w)
            x = jax.lax.with_sharding_constraint(
                x, NamedSharding(mesh2, P("dp", "tp") if i % 2 == 0
                                 else P("dp", None)))
        return jnp.mean(x * x)

    def twod_step(ws, x):
        loss, g = jax.value_and_grad(twod_loss)(ws, x)
        return loss, sgd(ws, g)

    wspec = [P("dp", "tp") if i % 2 == 0 else P("tp", "dp")
             for i in range(LAYERS)]
    w2 = [arg((HIDDEN, HIDDEN), mesh2, s) for s in wspec]
    x2 = arg((TOKENS, HIDDEN), mesh2, P("dp", None))
    out.append(("2d-mlp", "MLP, %d layers of %dx%d, %d tokens, on a 2D mesh "
                "(dp 4 x tp 2, jax.sharding): weights sharded over both "
                "axes, gathered over dp, column/row parallel over tp; "
                "forward, backward and SGD" % (LAYERS, HIDDEN, HIDDEN,
                                               TOKENS),
                twod_step, {"out_shardings": (
                    NamedSharding(mesh2, P()),
                    [NamedSharding(mesh2, s) for s in wspec])},
                (w2, x2)))

    # 4. The FSDP MLP as a scan over stacked layers: XLA keeps one while
    # loop per pass, its trip count known.
    def scan_loss(w, x):
        def layer(h, wl):
            wl = jax.lax.with_sharding_constraint(
                wl, NamedSharding(mesh, P()))
            return jax.nn.gelu(h @ wl), None
        h, _ = jax.lax.scan(layer, x, w)
        return jnp.mean(h * h)

    def scan_step(w, x):
        loss, g = jax.value_and_grad(scan_loss)(w, x)
        return loss, w - 1e-3 * g

    wst = arg((LAYERS, HIDDEN, HIDDEN), mesh, P(None, "dp", None))
    out.append(("fsdp-mlp-scan", "the FSDP MLP as jax.lax.scan over %d "
                "stacked layers (a while loop in HLO, its trip count "
                "known)" % LAYERS,
                scan_step, {"out_shardings": (
                    NamedSharding(mesh, P()),
                    NamedSharding(mesh, P(None, "dp", None)))},
                (wst, x)))

    # 5. Expert parallel MoE layers through shard_map: tokens dispatched
    # and combined with all_to_all, a ring exchange (ppermute) beside them.
    emesh = Mesh(devs, ("ep",))
    cap = TOKENS // DEVICES

    def moe_inner(w_in, w_out, x):
        for wi, wo in zip(w_in, w_out):
            d = jax.lax.all_to_all(x.reshape(DEVICES, cap // DEVICES, -1),
                                   "ep", 0, 0, tiled=False)
            y = jax.nn.gelu(d @ wi[0]) @ wo[0]
            y = jax.lax.all_to_all(y, "ep", 0, 0, tiled=False)
            x = x + y.reshape(x.shape)
            x = x + jax.lax.ppermute(
                x, "ep", [(i, (i + 1) % DEVICES) for i in range(DEVICES)])
        return jax.lax.psum(jnp.sum(x * x), "ep")

    espec = P("ep", None, None)
    moe_fn = shard_map(moe_inner, mesh=emesh,
                       in_specs=([espec] * 2, [espec] * 2, P("ep", None)),
                       out_specs=P())
    margs = ([arg((DEVICES, HIDDEN, FFN), emesh, espec) for _ in range(2)],
             [arg((DEVICES, FFN, HIDDEN), emesh, espec) for _ in range(2)],
             arg((TOKENS, HIDDEN), emesh, P("ep", None)))
    out.append(("moe-a2a", "2 expert-parallel MoE layers (8 experts of "
                "%dx%d, one per device; %d tokens) through shard_map: "
                "all_to_all dispatch and combine, a ring ppermute, the loss "
                "psum'd; forward only" % (HIDDEN, FFN, TOKENS),
                moe_fn, {}, margs))
    return out


def named(name, fn):
    """fn as step_<name>: XLA's module is named jit_<function>, which picks
    its dump (xla_dump_hlo_module_re)."""
    def step(*xs):
        return fn(*xs)
    step.__name__ = "step_" + name.replace("-", "_")
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="directory for the dumps (graphs/xla)")
    ap.add_argument("--platform", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--cli", help="commsched: import each dump into "
                    "<name>.<platform>.json")
    ap.add_argument("--mock-gpus", action="store_true",
                    help="gpu: compile for jax's mock GPU topology of 8 "
                    "devices instead of 8 real ones")
    ap.add_argument("--only", help="comma-separated program names")
    a = ap.parse_args()

    dump = tempfile.mkdtemp(prefix="xla-dump-")
    flags = ["--xla_dump_to=" + dump, "--xla_dump_hlo_as_text",
             "--xla_dump_hlo_module_re=^jit_step_"]
    env = {}
    if a.platform == "cpu":
        env["JAX_NUM_CPU_DEVICES"] = str(DEVICES)
        env["JAX_PLATFORMS"] = "cpu"
    else:
        env["JAX_PLATFORMS"] = "cuda"
        flags += ["--xla_gpu_enable_latency_hiding_scheduler=true",
                  "--xla_dump_latency_hiding_schedule=true"]
    os.environ.update(env)
    os.environ["XLA_FLAGS"] = " ".join(flags)

    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    try:
        from jax import shard_map
    except ImportError:
        from jax.experimental.shard_map import shard_map
    # Each op's location is its innermost frame, inside programs() (whose
    # file name the recompile below makes relative), not the whole stack
    # down to this script's absolute path.
    jax.config.update("jax_include_full_tracebacks_in_locations", False)
    if jax.__version__ != JAX_VERSION:
        sys.exit("make_xla_graphs.py: jax %s, expected %s (pinned: "
                 "tools/make-jax-venv.sh)" % (jax.__version__, JAX_VERSION))
    if a.platform == "gpu" and a.mock_gpus:
        jax.config.update("jax_mock_gpu_topology", "1x1x%d" % DEVICES)
    if len(jax.devices()) < DEVICES:
        sys.exit("make_xla_graphs.py: %d %s devices, %d needed"
                 % (len(jax.devices()), a.platform, DEVICES))

    os.makedirs(a.out, exist_ok=True)
    only = set(a.only.split(",")) if a.only else None
    import jaxlib
    prov = {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "platform": a.platform, "devices": DEVICES,
            "environment": env,
            "XLA_FLAGS": " ".join(f for f in flags
                                  if not f.startswith("--xla_dump_to=")),
            "programs": {}}
    # The programs, compiled again under the file's name relative to the
    # repository: XLA's dumps record each source file's path (FileNames),
    # and this keeps that path -- and so the dumps -- the same in any
    # checkout.
    ns = {"__name__": "make_xla_graphs"}
    with open(os.path.abspath(__file__)) as fh:
        exec(compile(fh.read(), "graphs/xla/make_xla_graphs.py", "exec"), ns)
    for name, what, fn, kw, args in ns["programs"](jax, jnp, P, NamedSharding,
                                                   Mesh, shard_map):
        if only and name not in only:
            continue

        jax.jit(ns["named"](name, fn), **kw).lower(*args).compile()
        suffix = "%s_after_optimizations.txt" % a.platform
        found = sorted(glob.glob(os.path.join(
            dump, "*.jit_step_%s.%s" % (name.replace("-", "_"), suffix))))
        if len(found) != 1:
            sys.exit("make_xla_graphs.py: %s: expected one dump, found %s"
                     % (name, found))
        hlo = os.path.join(a.out, "%s.%s.hlo.txt" % (name, a.platform))
        shutil.copyfile(found[0], hlo)
        entry = {"what": what, "hlo": os.path.basename(hlo)}
        sched = glob.glob(os.path.join(dump, "*.jit_step_%s*schedule*" %
                                       name.replace("-", "_")))
        for s in sorted(sched):
            dst = os.path.join(a.out, "%s.%s.%s" % (
                name, a.platform, os.path.basename(s).split(".", 2)[-1]))
            shutil.copyfile(s, dst)
            entry.setdefault("schedule", []).append(os.path.basename(dst))
        if a.cli:
            graph = os.path.join(a.out, "%s.%s.json" % (name, a.platform))
            p = subprocess.run([a.cli, "import", "hlo", hlo, "-o", graph],
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                sys.exit("make_xla_graphs.py: import %s: %s"
                         % (hlo, p.stderr))
            entry["graph"] = os.path.basename(graph)
            entry["import_note"] = re.sub(r"^commsched import: note: [^:]*: ",
                                          "", p.stderr.strip())
        prov["programs"][name] = entry
        print("%s: %s" % (name, hlo))
    shutil.rmtree(dump)
    path = os.path.join(a.out, "provenance.json")
    old = {}
    if os.path.exists(path):
        with open(path) as fh:
            old = json.load(fh)
    if only and a.platform in old:
        old[a.platform]["programs"].update(prov["programs"])
        prov["programs"] = old[a.platform]["programs"]
    old[a.platform] = prov
    with open(path, "w") as fh:
        json.dump(old, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
