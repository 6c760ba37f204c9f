#!/usr/bin/env python3
"""make bench, load and save (docs/PERFORMANCE.md, "Load and save").

For generated graphs of 10K, 100K and 1M nodes (`generate chain`) and the
~33K-node llama2-70b FSDP step (`generate fsdp --preset llama2-70b --fine`):

  jansson    bench/jansson_parse: json_loadb alone (then json_decref), the
             yardstick of our loader: MB/s of JSON, peak RSS
  load       `commsched validate`: read, parse, convert, check, index;
             MB/s, peak RSS, and the ratio to jansson's parse alone
  save       bench/io_bench: commsched_graph_save_stream of the loaded
             graph into a byte-counting stream, fastest of 3; MB/s
  optimize   (FSDP step only) `commsched optimize -o OUT` end to end,
             as a multiple of `validate`

Times are CPU seconds (user + system; the C tools read their own CPU
clock), which a shared machine disturbs far less than wall time. Medians
of --repeat runs; peak RSS from GNU time (-f %M). Growth per 10x
compares the 10K/100K/1M rows. Prints a markdown table and writes JSON
(--out). Usage: io_bench.py --build build/release [--repeat 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd):
    """(CPU seconds, peak RSS MiB, stdout) of one run."""
    full = ["/usr/bin/time", "-f", "io-bench-rss %M %U %S"] + cmd
    p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("io_bench: %s failed (%d):\n%s" %
                 (" ".join(cmd), p.returncode, err))
    m = re.search(r"io-bench-rss (\d+) ([0-9.]+) ([0-9.]+)", err)
    return (float(m.group(2)) + float(m.group(3)), int(m.group(1)) / 1024.0,
            p.stdout)


def median_of(cmd, repeat):
    runs = [timed(cmd) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), max(r[1] for r in runs),
            runs[-1][2])


def build_tools(build):
    out = os.path.join(build, "bench")
    os.makedirs(out, exist_ok=True)
    jp, io = os.path.join(out, "jansson_parse"), os.path.join(out, "io_bench")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "jansson"],
                           check=True, stdout=subprocess.PIPE).stdout.split()
    subprocess.run(["cc", "-O2", "-o", jp, os.path.join(HERE, "jansson_parse.c")]
                   + [f.decode() for f in flags], check=True)
    lib = os.path.abspath(build)
    subprocess.run(["cc", "-O2", "-I", os.path.join(ROOT, "include"),
                    "-I", os.path.join(lib, "include"), "-o", io,
                    os.path.join(HERE, "io_bench.c"), "-L", lib, "-lcommsched",
                    "-Wl,-rpath," + lib], check=True)
    return jp, io


def graphs(cli, build, sizes, fsdp):
    d = os.path.join(build, "bench-io")
    os.makedirs(d, exist_ok=True)
    out = []
    for n in sizes:
        path = os.path.join(d, "chain%d.json" % n)
        if not os.path.exists(path):
            subprocess.run([cli, "generate", "chain", "--nodes", str(n), "-o",
                            path], check=True)
        out.append(("chain %s" % f"{n:,}", n, path, False))
    if fsdp:
        path = os.path.join(d, "llama2-70b-fsdp.json")
        if not os.path.exists(path):
            subprocess.run([cli, "generate", "fsdp", "--preset", "llama2-70b",
                            "--fine", "-o", path], check=True)
        out.append(("llama2-70b FSDP", 0, path, True))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--no-fsdp", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "io_results.json"))
    a = ap.parse_args()
    cli = os.path.join(a.build, "tools", "commsched")
    jp, io = build_tools(a.build)
    rows = []
    for label, n, path, is_fsdp in graphs(cli, a.build,
                                          [int(s) for s in a.sizes.split(",")],
                                          not a.no_fsdp):
        mb = os.path.getsize(path) / 1e6
        runs = [timed([jp, path]) for _ in range(a.repeat)]
        parse = [json.loads(r[2]) for r in runs]
        j_s = statistics.median(p["parse_s"] for p in parse)
        j_free = statistics.median(p["free_s"] for p in parse)
        j_wall = statistics.median(r[0] for r in runs)
        j_rss = max(r[1] for r in runs)
        v_s, v_rss, _ = median_of([cli, "validate", path], a.repeat)
        save = json.loads(timed([io, path, "3"])[2])
        row = {"graph": label, "nodes": save["nodes"], "mb": mb,
               "jansson_parse_s": j_s, "jansson_free_s": j_free,
               "jansson_rss_mib": j_rss, "jansson_wall_s": j_wall, "validate_s": v_s,
               "validate_rss_mib": v_rss, "save_s": save["save_s"],
               "save_mb_s": save["save_mb_s"], "chain": n}
        if is_fsdp:
            o_s, o_rss, _ = median_of([cli, "optimize", path, "-o",
                                       os.devnull], a.repeat)
            row["optimize_s"], row["optimize_rss_mib"] = o_s, o_rss
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    print("| graph | nodes | MB | jansson: parse alone | jansson: read + "
          "parse + free | load (`validate`) | load / jansson | RSS jansson | "
          "RSS load | RSS ratio | save |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.1f | %.2f s, %.0f MB/s | %.2f s | %.2f s, %.0f "
              "MB/s | %.2f | %.0f MiB | %.0f MiB | %.3f | %.3f s, %.0f MB/s |" %
              (r["graph"], f"{r['nodes']:,}", r["mb"], r["jansson_parse_s"],
               r["mb"] / r["jansson_parse_s"], r["jansson_wall_s"],
               r["validate_s"], r["mb"] / r["validate_s"],
               r["validate_s"] / r["jansson_wall_s"], r["jansson_rss_mib"],
               r["validate_rss_mib"],
               r["validate_rss_mib"] / r["jansson_rss_mib"], r["save_s"],
               r["save_mb_s"]))
    chain = sorted((r for r in rows if r["chain"]), key=lambda r: r["chain"])
    for a_, b_ in zip(chain, chain[1:]):
        print("\ngrowth %s -> %s: load %.1fx, save %.1fx, RSS %.1fx" %
              (f"{a_['chain']:,}", f"{b_['chain']:,}",
               b_["validate_s"] / a_["validate_s"], b_["save_s"] / a_["save_s"],
               b_["validate_rss_mib"] / a_["validate_rss_mib"]), end="")
    print()
    for r in rows:
        if "optimize_s" in r:
            print("optimize end to end on %s: %.2f s = %.2f x load (%.2f s)" %
                  (r["graph"], r["optimize_s"], r["optimize_s"] / r["validate_s"],
                   r["validate_s"]))
    with open(a.out, "w") as f:
        json.dump({"machine": os.uname().nodename, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
