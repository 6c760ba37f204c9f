#!/usr/bin/env python3
"""make bench, Chakra .et (docs/PERFORMANCE.md, "Chakra .et import").

1. Import. Writes a generated graph of --nodes nodes (`generate chain`) as
   one Chakra binary execution trace (`export chakra --ranks 1`), then
   times `import chakra` on it two ways, each writing its graph (-o), as a
   user's would:

     exact        the default: the commsched.* attributes `export chakra`
                  writes rebuild the exact graph
     chakra-only  --chakra-fields-only: the plain Chakra fields alone (what
                  a trace from PyTorch or the converter carries), through
                  the streaming record reader (one record decoded at a time)

2. Straight into the passes (issue 22: a 1M-node trace through load,
   default pipeline and simulate in 5 s). A trace of Chakra's fields only
   (`export chakra --chakra-fields-only`) of a chain of 3/4 of --nodes: the
   importer gives each collective a wait of its own, so the imported graph
   has --nodes nodes (less 3). `optimize --verbose --report TRACE -o OUT`
   on one and two threads: the stage times it prints (load = the import,
   passes, the rest = cost model, memory, the two simulations of --report,
   save), the whole command's wall and CPU time, and its peak RSS.

CPU seconds (user + system) and wall seconds, peak RSS from GNU time
(-f %M); fastest of --repeat runs (by CPU). Usage:
et_bench.py --build build/release [--nodes 1000000] [--repeat 1] [--work DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def run(cmd, env=None):
    """(CPU seconds, wall seconds, peak RSS MiB, stderr) of one run."""
    full = ["/usr/bin/time", "-f", "et-bench %M %U %S"] + cmd
    t0 = time.monotonic()
    p = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=env)
    wall = time.monotonic() - t0
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("et_bench: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, err))
    line = [x for x in err.splitlines() if x.startswith("et-bench ")][-1]
    rss_kib, user, sys_s = line.split()[1:]
    return float(user) + float(sys_s), wall, int(rss_kib) / 1024.0, err


def export(cli, nodes, prefix, extra):
    graph = prefix + ".json"
    subprocess.run([cli, "generate", "chain", "--nodes", str(nodes), "-o", graph],
                   check=True)
    subprocess.run([cli, "export", "chakra", "--ranks", "1"] + extra + [graph, "-o", prefix],
                   check=True, stderr=subprocess.DEVNULL)
    return prefix + ".0.et"


STAGES = re.compile(r"commsched optimize: (\d+) nodes; load ([\d.]+) ms, passes "
                    r"([\d.]+) ms, the rest of optimizing (-?[\d.]+) ms, save "
                    r"([\d.]+) ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    cli = os.path.join(a.build, "tools", "commsched")
    work = a.work or tempfile.mkdtemp(prefix="et-bench-")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "imported.json")

    et = export(cli, a.nodes, os.path.join(work, "chain"), [])
    size = os.path.getsize(et) / 1e6
    print("| import | nodes | .et size | CPU | wall | peak RSS |")
    print("|---|---|---|---|---|---|")
    for label, extra in (("exact", []), ("chakra-only", ["--chakra-fields-only"])):
        best = min((run([cli, "import", "chakra"] + extra + [et, "-o", out])
                    for _ in range(a.repeat)), key=lambda r: r[0])
        print("| %s | %d | %.1f MB | %.2f s | %.2f s | %.0f MiB |"
              % (label, a.nodes, size, best[0], best[1], best[2]))
        sys.stdout.flush()
    os.remove(et)

    trace = export(cli, a.nodes * 3 // 4, os.path.join(work, "fields"),
                   ["--chakra-fields-only"])
    size = os.path.getsize(trace) / 1e6
    print()
    print("| threads | nodes | .et size | load | passes | the rest | load + passes + the rest | save | command wall | CPU | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for threads in (1, 2):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        best = min((run([cli, "optimize", "--verbose", "--report", trace, "-o", out],
                        env=env) for _ in range(a.repeat)), key=lambda r: r[0])
        m = STAGES.search(best[3])
        if not m:
            sys.exit("et_bench: no stage line from optimize --verbose:\n" + best[3])
        n, load, passes, rest, save = int(m.group(1)), *map(float, m.groups()[1:])
        print("| %d | %d | %.1f MB | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.0f MiB |"
              % (threads, n, size, load / 1e3, passes / 1e3, rest / 1e3,
                 (load + passes + rest) / 1e3, save / 1e3, best[1], best[0], best[2]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
