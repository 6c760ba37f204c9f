#!/usr/bin/env python3
"""make bench, Chakra .et import (docs/PERFORMANCE.md, "Chakra .et import").

Writes a generated graph of --nodes nodes (`generate chain`) as one Chakra
binary execution trace (`export chakra --ranks 1`), then times
`import chakra` on it two ways:

  exact        the default: the commsched.* attributes `export chakra`
               writes rebuild the exact graph
  chakra-only  --chakra-fields-only: the plain Chakra fields alone (what
               a trace from PyTorch or the converter carries), through the
               streaming record reader (one record decoded at a time)

Each import writes its graph (-o), as a user's would. CPU seconds (user +
system) and wall seconds, peak RSS from GNU time (-f %M), the .et's size;
fastest of --repeat runs. Usage: et_bench.py --build build/release
[--nodes 1000000] [--repeat 1] [--work DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time


def run(cmd):
    """(CPU seconds, wall seconds, peak RSS MiB) of one run."""
    full = ["/usr/bin/time", "-f", "et-bench %M %U %S"] + cmd
    t0 = time.monotonic()
    p = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("et_bench: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, err))
    line = [x for x in err.splitlines() if x.startswith("et-bench ")][-1]
    rss_kib, user, sys_s = line.split()[1:]
    return float(user) + float(sys_s), wall, int(rss_kib) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    cli = os.path.join(a.build, "tools", "commsched")
    work = a.work or tempfile.mkdtemp(prefix="et-bench-")
    graph = os.path.join(work, "chain.json")
    prefix = os.path.join(work, "chain")
    out = os.path.join(work, "imported.json")
    subprocess.run([cli, "generate", "chain", "--nodes", str(a.nodes), "-o", graph], check=True)
    subprocess.run([cli, "export", "chakra", "--ranks", "1", graph, "-o", prefix],
                   check=True, stderr=subprocess.DEVNULL)
    et = prefix + ".0.et"
    size = os.path.getsize(et) / 1e6
    print("| import | nodes | .et size | CPU | wall | peak RSS |")
    print("|---|---|---|---|---|---|")
    for label, extra in (("exact", []), ("chakra-only", ["--chakra-fields-only"])):
        best = min((run([cli, "import", "chakra"] + extra + [et, "-o", out])
                    for _ in range(a.repeat)), key=lambda r: r[0])
        print("| %s | %d | %.1f MB | %.2f s | %.2f s | %.0f MiB |"
              % (label, a.nodes, size, best[0], best[1], best[2]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
