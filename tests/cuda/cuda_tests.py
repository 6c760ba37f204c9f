#!/usr/bin/env python3
"""CUDA/NCCL runtime tests: `commsched run --runtime cuda` (docs/RUNTIME.md).

usage: cuda_tests.py CLI SCRATCH CASE

Cases:
  no-device  without a GPU: the run fails with exit 1 and one clear
             message ("no CUDA device", or "this build has no cuda runtime"
             where the adaptor was not built), alone and under mpirun;
             skipped (77) where a GPU is present.
  one-gpu    one GPU: every collective kind with --check, the stream
             modes, --compute gemm, and overlap measured: the schedule with
             its wait sunk must beat the one with the wait exposed; where
             compute-sanitizer is installed, the --check step under its
             initcheck and memcheck.
  multi-gpu  two GPUs or more: the kinds with --check from one process
             driving two GPUs (--gpus 2) and from two processes under
             mpirun, and the overlap pair on two ranks.
The GPU cases exit 77 (skipped) where the build has no CUDA adaptor or the
machine has no GPU. Graphs come from tests/mpi/mpi_tests.py, so both
runtimes run the same steps. Standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mpi"))
import mpi_tests as mt  # noqa: E402  (the shared graphs and checks)

SKIP = 77
fail = mt.fail


def gpu_count():
    """GPUs the driver reports, independently of commsched: nvidia-smi, or
    the device nodes when it is absent."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            p = subprocess.run([smi, "-L"], capture_output=True, text=True,
                               timeout=60)
            if p.returncode == 0:
                return sum(1 for ln in p.stdout.splitlines()
                           if ln.startswith("GPU "))
        except (OSError, subprocess.TimeoutExpired):
            pass
        return 0
    return sum(1 for n in os.listdir("/dev")
               if n.startswith("nvidia") and n[6:].isdigit())


def built_with(cli, runtime):
    """Whether `run --help` lists runtime among those this build has."""
    h = subprocess.run([cli, "run", "--help"], capture_output=True,
                       text=True, timeout=30)
    line = h.stdout.replace("\n", " ")
    if "has:" not in line:
        return False
    has = line.split("has:", 1)[1].split(")", 1)[0]
    return runtime in has.replace(",", " ").split()


def built_with_cuda(cli):
    return built_with(cli, "cuda")


def run(cli, args, timeout=240):
    cmd = [cli, "run", "--runtime", "cuda"] + args
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("hung: %s" % " ".join(cmd))
    print("$ %s  (%.1f s, exit %d)" % (" ".join(cmd[1:]),
                                        time.monotonic() - t0, p.returncode))
    return p


def run_json(env, args, graph_path, name, mpi_np=0):
    """A run with a JSON report: one process, or mpi_np under mpirun."""
    out = env.path(name + ".report.json")
    full = ["--format", "json", "-o", out, "--no-progress"] + args + \
        [graph_path]
    if mpi_np:
        p, _ = env.mpirun(mpi_np, ["--runtime", "cuda"] + full, timeout=240)
    else:
        p = run(env.cli, full)
    if p.returncode != 0:
        fail("exit %d\nstdout:\n%s\nstderr:\n%s" % (
            p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    with open(out) as f:
        rep = json.load(f)
    if rep["runtime"] != "cuda" or "NCCL" not in rep["library"]:
        fail("report names runtime %r, library %r" % (rep["runtime"],
                                                       rep["library"]))
    if not rep["memory"]["pool_peak"]:
        fail("no allocator high-water mark in the report")
    return rep


# ---- cases ------------------------------------------------------------------


def toolchain_present():
    """What this machine offers the adaptor, found without CMake: an nvcc
    (on PATH or the toolkit's usual place) and NCCL (the loader's cache, or
    the wheel in the Python tools/make-venv.sh installs it into). Returns
    a sentence naming both, or None when one is missing."""
    nvcc = shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc"
        if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
    if not nvcc:
        return None
    nccl = None
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True,
                               text=True, timeout=30).stdout
        if "libnccl.so" in cache:
            nccl = "libnccl in the loader's cache"
    except OSError:
        pass
    py = os.environ.get("COMMSCHED_NCCL_PYTHON")
    if not nccl and py and os.access(py, os.X_OK):
        r = subprocess.run([py, "-c", "import nvidia.nccl"],
                           capture_output=True, timeout=60)
        if r.returncode == 0:
            nccl = "NCCL's wheel in " + py
    return "%s and %s" % (nvcc, nccl) if nccl else None


def case_no_device(env):
    g = mt.overlap_graph(1, True).write(env.path("step.json"))
    cuda = built_with_cuda(env.cli)
    # The build must not quietly leave the adaptor out where it can be
    # compiled (a broken search in cmake/cuda.cmake would, and every other
    # case would still pass).
    have = toolchain_present()
    if have and not cuda:
        fail("this machine has %s, but `run --help` lists no cuda runtime: "
             "the build left the CUDA adaptor out" % have)
    want = "no CUDA device" if cuda else "this build has no cuda runtime"
    p = run(env.cli, [g], timeout=60)
    if p.returncode != 1 or want not in p.stderr:
        fail("exit %d, stderr %r (expected exit 1 and %r)" % (
            p.returncode, p.stderr, want))
    if p.stderr.count("\n") != 1:
        fail("expected one line of error, got:\n" + p.stderr)
    if cuda and env.mpiexec and built_with(env.cli, "mpi"):
        # Every process fails the same way; one message, no hang. (Without
        # MPI the processes are separate worlds of one, each with its own
        # message.)
        p, _ = env.mpirun(2, ["--runtime", "cuda", g], timeout=60)
        if p.returncode == 0 or p.stderr.count(want) != 1:
            fail("under mpirun: exit %d, stderr:\n%s" % (p.returncode,
                                                          p.stderr))
    # Options only the CUDA runtime takes are refused elsewhere (exit 2).
    p = subprocess.run([env.cli, "run", "--gpus", "2", g],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 2 or "--gpus needs --runtime cuda" not in p.stderr:
        fail("--gpus with mpi: exit %d %s" % (p.returncode, p.stderr))
    print("no GPU: %s" % p.stderr.strip())


def gemm_graph():
    """Compute with FLOPs (GEMMs of 2048^3 and 4096^3) around an
    all-reduce."""
    g = mt.Graph("gemm", [("world", 1)])
    g.inp("x", 1 << 20)
    g.compute("mm1", ["x"], "a", 1 << 22, 100)
    g.g["nodes"][-1]["flops"] = 2.0 * 2048 ** 3
    g.coll("ar", "all_reduce", "world", ["a"], "o", 1 << 22,
           dtype="bfloat16")
    g.compute("mm2", ["x"], "b", 1 << 20, 100)
    g.g["nodes"][-1]["flops"] = 2.0 * 4096 ** 3
    g.out("b")
    return g


def check_kinds(env, ranks, gpus_args, name, mpi_np=0):
    g = mt.kinds_graph(ranks, pair=min(2, ranks))
    path = g.write(env.path(name + ".json"))
    base = ["--check", "--iters", "3", "--warmup", "1", "--calibrate", "1"]
    for extra in ([], ["--comm-streams", "single", "--time-scale", "0.5"]):
        rep = run_json(env, gpus_args + base + extra, path, name, mpi_np)
        mt.check_report(rep, g, ranks)
        print("%s %s: %d results verified, step %.0f us" % (
            name, " ".join(extra), rep["check"]["verified"],
            rep["step"]["median_ns"] / 1e3))


# The overlap pair's all-reduce: 256 MiB, so that it lasts far longer than
# the step's jitter (a few us) on one GPU too, where NCCL's all-reduce is a
# local copy (about 6 us for 1 MiB on an H200: the pair's difference was
# within the noise), and still well inside bwd2's 3 ms on two GPUs.
OVERLAP_BYTES = 256 << 20


def check_overlap(env, ranks, gpus_args, name, mpi_np=0):
    """The same step with its wait exposed and sunk: on a GPU the sunk one
    hides the all-reduce behind bwd2, so it must be faster by at least
    half the collective's time (the exposed one pays it in full)."""
    steps, coll = {}, {}
    for exposed in (True, False):
        g = mt.overlap_graph(ranks, exposed, OVERLAP_BYTES)
        tag = "exposed" if exposed else "sunk"
        path = g.write(env.path("%s-%s.json" % (name, tag)))
        rep = run_json(env, gpus_args + ["--iters", "10", "--warmup", "2",
                                         "--calibrate", "3", "--trace",
                                         env.path(name + ".trace.json")],
                       path, "%s-%s" % (name, tag), mpi_np)
        mt.check_report(rep, g, ranks)
        steps[tag] = rep["step"]["median_ns"]
        coll[tag] = next(n["end_ns"] - n["start_ns"] for n in rep["nodes"]
                         if n["name"] == "ar1")
        err = rep["step"]["median_ns"] / rep["step"]["predicted_ns"] - 1
        print("%s %s: step %.1f us, predicted %.1f us (%+.1f%%), exposed "
              "%.1f us" % (name, tag, rep["step"]["median_ns"] / 1e3,
                           rep["step"]["predicted_ns"] / 1e3, 100 * err,
                           rep["totals"]["exposed_ns"] / 1e3))
    if not steps["exposed"] - steps["sunk"] > 0.5 * coll["exposed"]:
        fail("sinking the wait did not hide the all-reduce on the GPU: "
             "steps %r, all-reduce %r" % (steps, coll))


def check_sanitized(env, name):
    """Where compute-sanitizer is installed: the kinds step with --check
    under initcheck (its fills must cover every byte any kernel or copy,
    NCCL's included, reads: without --check an H200 run gave 13,440
    uninitialized reads) and memcheck with leak checking (NCCL's own
    initialisation probes API errors it handles: not reported)."""
    tool = shutil.which("compute-sanitizer")
    if not tool:
        print("compute-sanitizer not installed: sanitized runs skipped")
        return
    path = env.path(name + ".json")
    for args in (["--tool", "initcheck"],
                 ["--tool", "memcheck", "--leak-check", "full",
                  "--report-api-errors", "no"]):
        cmd = [tool] + args + ["--error-exitcode", "9", env.cli, "run",
                               "--runtime", "cuda", "--gpus", "1", "--check",
                               "--iters", "2", "--warmup", "1",
                               "--calibrate", "1", "--no-progress", "-o",
                               env.path(name + ".sanitized.txt"), path]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=240)
        except subprocess.TimeoutExpired:
            fail("hung: %s" % " ".join(cmd))
        out = p.stdout + p.stderr
        if p.returncode != 0 or "ERROR SUMMARY: 0 errors" not in out:
            fail("%s: exit %d\n%s" % (args[1], p.returncode, out[-3000:]))
        print("%s: 0 errors" % args[1])


def case_one_gpu(env):
    check_kinds(env, 1, ["--gpus", "1"], "kinds-1")
    check_sanitized(env, "kinds-1")
    check_overlap(env, 1, ["--gpus", "1"], "overlap-1")
    g = gemm_graph()
    path = g.write(env.path("gemm.json"))
    rep = run_json(env, ["--gpus", "1", "--compute", "gemm", "--iters", "3",
                         "--warmup", "1", "--calibrate", "1"], path, "gemm")
    dur = {n["name"]: n["end_ns"] - n["start_ns"] for n in rep["nodes"]}
    # 8x the FLOPs: a real GEMM takes several times longer, a spin of the
    # nodes' 100 ns runtimes would not.
    if not dur["mm2"] > 3 * dur["mm1"]:
        fail("GEMM durations do not follow the FLOPs: %r" % dur)
    print("gemm: 2048^3 %.1f us, 4096^3 %.1f us" % (dur["mm1"] / 1e3,
                                                    dur["mm2"] / 1e3))


def case_multi_gpu(env, n):
    check_kinds(env, 2, ["--gpus", "2"], "kinds-2")
    check_overlap(env, 2, ["--gpus", "2"], "overlap-2")
    if env.mpiexec:
        check_kinds(env, 2, [], "kinds-2-mpi", mpi_np=2)
    if n >= 4:
        check_kinds(env, 4, ["--gpus", "4"], "kinds-4")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    cli, scratch, case = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    env = mt.Env(cli, scratch, None)
    n = gpu_count()
    if case == "no-device":
        if n > 0:
            print("SKIP: this machine has %d GPU(s)" % n)
            return SKIP
        case_no_device(env)
    elif case in ("one-gpu", "multi-gpu"):
        if not built_with_cuda(cli):
            print("SKIP: this build has no CUDA runtime")
            return SKIP
        need = 1 if case == "one-gpu" else 2
        if n < need:
            print("SKIP: %d GPU(s) here, the case needs %d" % (n, need))
            return SKIP
        if case == "one-gpu":
            case_one_gpu(env)
        else:
            case_multi_gpu(env, n)
    else:
        print("unknown case " + case)
        return 2
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
