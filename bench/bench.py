#!/usr/bin/env python3
"""commsched benchmark: time and peak RSS of the CLI on generated graphs.

For each size it generates an FSDP-like chain (`commsched generate chain
--nodes N`), then measures, each as the median of --repeat runs:
  load      `commsched validate`            (parse + validate)
  info      `commsched info`                (memory model, critical path)
  pipeline  `commsched optimize` with the default pipeline (load, cost
            model, passes, save), plus each pass's own wall time from
            --stats=json
Peak RSS comes from getrusage of the child. Prints a table and writes
bench/results.json. Standard library only.
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    """Runs cmd; returns (seconds, peak RSS in MiB of this child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n"
                 f"{p.stderr.decode()}")
    # ru_maxrss of RUSAGE_CHILDREN is the max over all children so far;
    # measure() runs the largest command last per size, so report per-size
    # maxima only (see the table's note).
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(before, after) / 1024.0, p.stdout


def rss_of(cmd):
    """Peak RSS (MiB) of one command through GNU time if present."""
    if os.path.exists("/usr/bin/time"):
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           check=True)
        return int(p.stderr.decode().strip().splitlines()[-1]) / 1024.0
    return float("nan")


def median_time(cmd, repeat):
    times = []
    out = b""
    for _ in range(repeat):
        dt, _, out = run(cmd)
        times.append(dt)
    return statistics.median(times), out


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                  "results.json"))
    a = ap.parse_args()
    cli = a.cli
    results = {"machine": machine(), "cli": cli, "speed": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in a.sizes.split(",")]:
            g = os.path.join(tmp, f"chain{n}.json")
            run([cli, "generate", "chain", "--nodes", str(n), "-o", g])
            nodes = json.loads(subprocess.run(
                [cli, "optimize", g, "--passes", "none"], check=True,
                stdout=subprocess.PIPE).stdout)["nodes"]
            repeat = a.repeat if n <= 100000 else 1
            load, _ = median_time([cli, "validate", g], repeat)
            info, _ = median_time([cli, "info", g], repeat)
            out = os.path.join(tmp, "opt.json")
            pipe, _ = median_time([cli, "optimize", g, "-o", out,
                                   "--stats=json"], repeat)
            stats = json.loads(subprocess.run(
                [cli, "optimize", g, "-o", out, "--stats=json"], check=True,
                stdout=subprocess.PIPE).stdout)
            passes = [{"pass": p["pass"], "wall_ms": p["wall_ms"]}
                      for p in stats]
            row = {
                "nodes": len(nodes),
                "load_s": load,
                "info_s": info,
                "optimize_s": pipe,
                "passes_ms": sum(p["wall_ms"] for p in passes),
                "per_pass": passes,
                "load_rss_mib": rss_of([cli, "validate", g]),
                "optimize_rss_mib": rss_of([cli, "optimize", g, "-o", out]),
            }
            results["speed"].append(row)
            print(f"{row['nodes']:>9} nodes: load {load:7.2f} s  info "
                  f"{info:7.2f} s  optimize {pipe:7.2f} s (passes "
                  f"{row['passes_ms']:9.1f} ms)  RSS load "
                  f"{row['load_rss_mib']:7.0f} MiB, optimize "
                  f"{row['optimize_rss_mib']:7.0f} MiB", flush=True)
    rows = results["speed"]
    print("\nmachine:", results["machine"])
    print(f"{'nodes':>9} {'load s':>8} {'info s':>8} {'optimize s':>11} "
          f"{'passes ms':>10} {'RSS MiB':>8}")
    for r in rows:
        print(f"{r['nodes']:>9} {r['load_s']:>8.2f} {r['info_s']:>8.2f} "
              f"{r['optimize_s']:>11.2f} {r['passes_ms']:>10.1f} "
              f"{r['optimize_rss_mib']:>8.0f}")
    for a_, b_ in zip(rows, rows[1:]):
        if a_["passes_ms"] > 0:
            print(f"scaling {a_['nodes']} -> {b_['nodes']} nodes: passes x"
                  f"{b_['passes_ms'] / a_['passes_ms']:.1f}, optimize x"
                  f"{b_['optimize_s'] / a_['optimize_s']:.1f}")
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print("results written to", a.out)


if __name__ == "__main__":
    main()
