#!/usr/bin/env python3
"""What a first-time user trips over (issue 24), through the built CLI
(python3 stdlib only).

usage: newcomer_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR

- a misspelt subcommand, option or pass exits 2 with "did you mean" and
  the closest name, blaming the argument (never the graph file); a name
  nothing resembles gets no guess;
- an explicit table option (--summary, --rows) wins over the terminal
  check: piped, `simulate --summary` still prints the summary;
- a missing file or a directory reads "FILE: cannot open: <strerror>" in
  every subcommand and importer;
- a count of one is singular ("1 node", "1 collective");
- --help says what exists: --version, generate's kinds and presets (with
  their shapes), import's formats and ASTRA-sim policies (each imports).

Each check prints what it ran when it fails; exit 1 on the first failure."""

import json
import os
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
GRAPH = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, code=0):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code, p.stdout[-2000:],
              p.stderr[-2000:]))
    return p


def refused(args, *want, absent=()):
    """args exits 2 with one line on stderr holding every `want` and no
    `absent`, and nothing on stdout."""
    p = run(*args, code=2)
    err = p.stderr
    for w in want:
        if w not in err:
            fail("commsched %s: stderr lacks %r:\n%s" % (" ".join(args), w,
                                                         err))
    for a in absent:
        if a in err:
            fail("commsched %s: stderr has %r:\n%s" % (" ".join(args), a,
                                                       err))
    if err.count("\n") != 1:
        fail("commsched %s: want one line on stderr:\n%s" %
             (" ".join(args), err))
    if p.stdout:
        fail("commsched %s: wrote to stdout:\n%s" % (" ".join(args),
                                                     p.stdout))
    return err


def did_you_mean():
    # Subcommands: a typo, a swap, a prefix; no guess for nonsense.
    refused(["optimse", GRAPH], 'unknown command "optimse"',
            'did you mean "optimize"?')
    refused(["simluate", GRAPH], 'did you mean "simulate"?')
    refused(["gen"], 'did you mean "generate"?')
    refused(["xyzzy", GRAPH], 'unknown command "xyzzy"', "commsched --help",
            absent=["did you mean"])
    refused(["--verison"], 'unknown option "--verison"',
            'did you mean "--version"?')
    # Options, in several subcommands (one helper behind all of them).
    refused(["optimize", GRAPH, "--reprot"], "commsched optimize:",
            'unknown option "--reprot"', 'did you mean "--report"?',
            absent=[GRAPH])
    refused(["simulate", GRAPH, "--sumary"], 'did you mean "--summary"?')
    refused(["simulate", GRAPH, "-summary"], 'unknown option "-summary"',
            'did you mean "--summary"?')
    refused(["generate", "chain", "--layrs", "3"],
            'did you mean "--layers"?')
    refused(["generate", "fsdp", "--prest", "llama2-70b"],
            'did you mean "--preset"?')
    refused(["report", GRAPH, "--beofre", GRAPH], 'did you mean "--before"?')
    refused(["info", GRAPH, "--zzzzzz"], 'unknown option "--zzzzzz"',
            "commsched info --help", absent=["did you mean"])
    # What getopt used to word itself: the option is named, not "bad".
    refused(["simulate", GRAPH, "--rows"], "option --rows needs a value")
    refused(["simulate", GRAPH, "--summary=3"],
            "option --summary takes no value")
    refused(["simulate", GRAPH, "-o"], "option -o needs a value")
    refused(["optimize", GRAPH, "--s"], 'option "--s" is ambiguous',
            "--set", "--stats")
    # Passes: the argument is blamed, before the graph is even read (a
    # missing graph file would otherwise be the first complaint).
    missing = os.path.join(SCRATCH, "no-such-graph.json")
    refused(["optimize", missing, "--passes", "overlapp"],
            "commsched optimize: --passes:", 'unknown pass "overlapp"',
            'did you mean "overlap"?', absent=[missing])
    refused(["optimize", GRAPH, "--passes", "sink_waits,raise_coms"],
            'unknown pass "raise_coms"', 'did you mean "raise_comms"?',
            absent=[GRAPH])
    refused(["optimize", GRAPH, "--passes", "nope"], 'unknown pass "nope"',
            "known: ", "overlap", absent=["did you mean", GRAPH])
    refused(["optimize", GRAPH, "--set", "overlap_peak_budgt=1"],
            'unknown knob "overlap_peak_budgt"',
            'did you mean "overlap_peak_budget"?')


def explicit_output_wins():
    # stdout is a pipe here, not a terminal: before, --summary was dropped
    # for JSON.
    s = run("simulate", GRAPH, "--summary").stdout
    if s.lstrip().startswith("{") or "makespan" not in s:
        fail("simulate --summary, piped: want the table's totals:\n" + s)
    s = run("simulate", GRAPH, "--rows", "1").stdout
    if s.lstrip().startswith("{"):
        fail("simulate --rows 1, piped: want the table:\n" + s)
    # No table option: a pipe still gets data.
    json.loads(run("simulate", GRAPH).stdout)
    refused(["simulate", GRAPH, "--summary", "--format", "json"],
            "--summary and --rows shape the table")


def one_wording_for_unopenable_files():
    """Every subcommand and importer says "FILE: cannot open: <strerror>"
    for a missing file and for a directory (report said "cannot read X",
    astra "X: cannot read", a device profile jansson's "unable to open",
    and a directory was "cannot read", "record 0 (byte 0)" or "gzip")."""
    missing = os.path.join(SCRATCH, "missing.json")
    directory = os.path.join(SCRATCH, "a-directory")
    os.makedirs(directory, exist_ok=True)
    uses = [
        ["validate", "{}"], ["info", "{}"], ["optimize", "{}"],
        ["simulate", "{}"], ["estimate", "{}"], ["report", "{}"],
        ["tune", "{}"], ["run", "{}"],
        ["export", "chakra", "{}", "-o", os.path.join(SCRATCH, "et")],
        ["import", "astra", "{}"], ["import", "chakra", "{}"],
        ["import", "kineto", "{}"], ["import", "pytorch-et", "{}"],
        ["report", "--measured", "{}"], ["info", "--measured", "{}"],
        ["info", GRAPH, "--device", "{}"],
        ["report", GRAPH, "--before", "{}"],
    ]
    for use in uses:
        for path, why in ((missing, "No such file or directory"),
                          (directory, "Is a directory")):
            args = [path if a == "{}" else a for a in use]
            p = run(*args, code=2)
            want = "commsched: %s: cannot open: %s\n" % (path, why)
            if use[0] == "tune" and path == directory:
                # tune takes a folder of graphs; this one has none
                want = ("commsched tune: %s: no *.json graph in the "
                        "directory (see 'commsched tune --help')\n" % path)
            if p.stderr != want:
                fail("commsched %s: want %r, got %r" %
                     (" ".join(args), want, p.stderr))


ONE_COLLECTIVE = {
    "format": "commsched-graph", "version": 1, "name": "one",
    "groups": [{"name": "dp", "size": 8}],
    "inputs": [{"name": "w", "size": 1048576}], "outputs": ["full"],
    "nodes": [
        {"name": "ag", "kind": "collective", "op": "all_gather",
         "group": "dp", "dtype": "bfloat16", "inputs": ["w"],
         "outputs": [{"name": "ag_out", "size": 8388608}]},
        {"name": "ag_wait", "kind": "wait", "op": "wait_tensor",
         "inputs": ["ag_out"],
         "outputs": [{"name": "full", "alias_of": "ag_out"}]}]}
ONE_NODE = {
    "format": "commsched-graph", "version": 1, "name": "single",
    "inputs": [{"name": "x", "size": 1024}], "outputs": ["y"],
    "nodes": [{"name": "relu", "kind": "compute", "op": "relu",
               "inputs": ["x"], "outputs": [{"name": "y", "size": 1024}],
               "bytes": 2048}]}


def grammar():
    """Counts of one read "1 node", "1 collective", ... in simulate's
    table, estimate, info and optimize --stats / --report (one rule,
    COMMSCHED_PLURAL); other counts keep their plural."""
    coll = os.path.join(SCRATCH, "one_collective.json")
    node = os.path.join(SCRATCH, "one_node.json")
    for name, doc in ((coll, ONE_COLLECTIVE), (node, ONE_NODE)):
        with open(name, "w") as f:
            json.dump(doc, f)
    checks = [
        (["simulate", coll, "--summary"], ["2 nodes, 1 collective, 1 wait;"]),
        (["simulate", node, "--summary"], ["1 node, 0 collectives, 0 waits;"]),
        (["estimate", node, "--format", "table"], ["single: 1 node;"]),
        (["info", coll], ["(1 graph input, 1 graph output)",
                          ", 1 node (\"ag\" ... \"ag\"); runtimes from the "
                          "cost model (h100, nccl)",
                          "longest chain: 2 nodes"]),
        (["info", node], [", 1 node (\"relu\" ... \"relu\")"]),
        (["optimize", coll, "--stats", "-o", os.devnull],
         ["overlap: 1 collective,"]),
        (["optimize", coll, "--stats", "-o", os.devnull, "--passes",
          "sink_waits_iterative"], ["sink_waits_iterative: 1 wait, 0 moves,"]),
        (["optimize", node, "--report", "-o", os.devnull],
         ["graph single: 1 node\n"]),
    ]
    for args, wants in checks:
        p = run(*args)
        out = p.stdout + p.stderr
        for w in wants:
            if w not in out:
                fail("commsched %s: lacks %r:\n%s" % (" ".join(args), w, out))
        for bad in ("1 nodes", "1 collectives", "1 waits", "1 graph inputs",
                    "1 graph outputs"):
            if bad in out:
                fail("commsched %s: %r:\n%s" % (" ".join(args), bad, out))


def discoverability():
    """--version in `commsched --help`; `generate --help` lists every kind
    and every preset with its shape; `import --help` names formats and
    ASTRA-sim policies that all import."""
    top = run("--help").stdout
    if "--version" not in top:
        fail("commsched --help does not mention --version:\n" + top)
    if not run("--version").stdout.startswith("commsched "):
        fail("commsched --version")

    gen = run("generate", "--help").stdout
    for kind in ("chain", "fsdp", "ddp", "tp", "moe", "2d"):
        if "\n  %s " % kind not in gen:
            fail("generate --help lacks the kind %s:\n%s" % (kind, gen))
    # Every preset row: name, layers, hidden; and each one generates.
    rows = {}
    for line in gen.split("\n"):
        f = line.split()
        if len(f) >= 8 and f[1].isdigit() and f[2].isdigit():
            rows[f[0]] = (int(f[1]), int(f[2]))
    for name in ("llama3-8b", "llama2-70b", "mixtral-8x7b", "gpt3-175b"):
        if name not in rows:
            fail("generate --help lacks the preset %s:\n%s" % (name, gen))
    if rows["llama2-70b"] != (80, 8192):
        fail("llama2-70b listed as %r, want 80 layers, hidden 8192" %
             (rows["llama2-70b"],))
    for name, (layers, hidden) in rows.items():
        family = "moe" if "mixtral" in name else "fsdp"
        g = json.loads(run("generate", family, "--preset", name,
                           "--layers", "1").stdout)
        if name not in g["name"]:
            fail("generate %s --preset %s wrote %r" % (family, name,
                                                       g["name"]))
    if run("generate", "fsdp", "--help").stdout.count("llama2-70b") < 1:
        fail("generate fsdp --help lacks the preset table")
    refused(["generate", "fsbp"], 'unknown kind "fsbp"',
            'did you mean "fsdp"?')
    refused(["generate", "fsdp", "--preset", "llama2-7b"],
            'unknown preset "llama2-7b"', 'did you mean "llama2-70b"?')

    # generate chain's sizes are refused naming the option, before they
    # overflow (2 x hidden^2 wrapped an int64_t) or reach the builder.
    refused(["generate", "chain", "--hidden", "4000000000"], "--hidden")
    refused(["generate", "chain", "--tokens", "9000000000000"], "--tokens")
    refused(["generate", "chain", "--world", "99999999"], "--world")
    refused(["generate", "chain", "--nodes", "99999999999999"], "--nodes")
    refused(["generate", "chain", "--layers", "99999999999999999999"],
            "--layers")

    imp = run("import", "--help").stdout
    usage = imp.split("\n")[0]
    formats = usage.split()[3].split("|")
    if formats != ["astra", "chakra", "hlo", "kineto", "pytorch-et"]:
        fail("import --help usage line: %r" % usage)
    missing = os.path.join(SCRATCH, "missing.trace")
    for fmt in formats:  # accepted (the file is what fails)
        refused(["import", fmt, missing], "cannot open")
    refused(["import", "astar", missing], 'did you mean "astra"?')
    lines = imp.split("\n")
    first = next(i for i, l in enumerate(lines) if l.startswith("  astra "))
    last = next(i for i, l in enumerate(lines) if "comm types:" in l)
    policies = [l.split()[0] for l in lines[first + 1:last]
                if l.startswith(" " * 13)]
    if len(policies) < 11 or "HYBRID_DLRM" not in policies:
        fail("import --help lists policies %r" % policies)
    # Each listed policy imports a real ASTRA-sim workload: one whose header
    # names it, else a real one of the same shape with the header replaced.
    dirs = [os.path.join(SRC, "tests", "import", "data", "astra-sim"),
            os.path.join(SRC, "..", "shared", "data", "astra-sim")]
    files = [os.path.join(d, n) for d in dirs if os.path.isdir(d)
             for n in sorted(os.listdir(d)) if n.endswith(".txt")]
    headers = {}
    for path in files:
        with open(path) as f:
            headers.setdefault(f.readline().split()[0], path)
    for policy in policies:
        src = headers.get(policy)
        if src is None:
            base = headers["HYBRID_DLRM" if "DLRM" in policy
                           else "HYBRID_MODEL_DATA"]
            with open(base) as f:
                text = f.read()
            first = text.split()[0]
            src = os.path.join(SCRATCH, policy + ".txt")
            with open(src, "w") as f:
                f.write(policy + text[len(first):])
        out = os.path.join(SCRATCH, policy + ".json")
        run("import", "astra", src, "-o", out)
        run("validate", out)


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    did_you_mean()
    explicit_output_wins()
    one_wording_for_unopenable_files()
    grammar()
    discoverability()
    print("ok")


main()
