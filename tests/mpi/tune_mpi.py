#!/usr/bin/env python3
"""`commsched tune` over MPI ranks (docs/PASSES.md, "tune over MPI ranks").

usage: tune_mpi.py CLI SOURCE_DIR SCRATCH CASE

identity: the same graphs tuned by one process and under mpirun with 1, 2,
  3 and 4 ranks (oversubscribed; one run with 2 threads a rank) give the
  same bytes: the summary table, the summary JSON, every result file (the
  best orders and every candidate's figures), and for one graph alone its
  -o file and its JSON less the timings; and with rank 0 refusing every
  pair, so that every winner is judged on another rank (the identity is
  not that of rank 0 doing everything). It prints the counts.
failures: a rank that refuses its pairs, one that stops answering
  (--rank-timeout) and one that dies of SIGKILL are named, the first two
  with the same output as one process (their pairs redone elsewhere) and
  exit 1, the third ending the job without a half-written result; a bad
  graph among good ones is a located error and the same summary (exit 2)
  under mpirun as alone; ranks given different command lines refuse to
  start (exit 2).

Exit 77 (skipped) when the build has no MPI runtime or there is no mpirun.
Standard library only.
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import time

SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_tests  # noqa: E402  (its mpirun set-up: root, oversubscribe)


class Env(mpi_tests.Env):
    def __init__(self, cli, scratch):
        super().__init__(cli, scratch, None)

    def path(self, *names):
        return os.path.join(self.scratch, *names)

    def run(self, args, np=0, timeout=120, expect=0, raw=None):
        """np 0: one process without mpirun."""
        if raw is not None:
            _, env = self.launcher(1)
            cmd = [self.mpiexec] + raw
        elif np:
            cmd, env = self.launcher(np)
            cmd += [self.cli, "tune"] + args
        else:
            cmd, env = [self.cli, "tune"] + args, dict(os.environ)
        env["OMP_NUM_THREADS"] = "1"
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            fail("hung: %s did not end within %d s" % (" ".join(cmd),
                                                       timeout))
        print("$ %s%s  (%.1f s, exit %d)" % (
            "mpirun -np %d " % np if np else "", " ".join(cmd[-len(args):]
                                                     if raw is None else raw),
            time.monotonic() - t0, p.returncode))
        if expect is not None and p.returncode != expect:
            fail("exit %d, expected %d\nstdout:\n%s\nstderr:\n%s" % (
                p.returncode, expect, p.stdout[-3000:], p.stderr[-3000:]))
        return p


def same_folder(a, b, what):
    ca, cb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if ca != cb:
        fail("%s: files %s, one process wrote %s" % (what, cb, ca))
    for name in ca:
        if not filecmp.cmp(os.path.join(a, name), os.path.join(b, name),
                           shallow=False):
            fail("%s: %s differs from one process's" % (what, name))
    return len(ca)


def graphs(src, env):
    """Small graphs others made (torch's FX graphs, the examples) and two
    generated steps: a few dozen nodes each, 20 to 26 candidates."""
    gs = [os.path.join(src, "graphs", "examples", n)
          for n in ("fsdp_2layer.json", "fsdp_tp_1block.json")]
    gs += [os.path.join(src, "graphs", "torch", n)
           for n in ("fsdp-mlp-4L-1.json", "moe-4L-0.json",
                     "2d-mlp-4L-0.json")]
    for kind in ("fsdp", "tp"):
        out = env.path("gen-%s.json" % kind)
        subprocess.run([env.cli, "generate", kind, "--layers", "2", "-o",
                        out], check=True, timeout=60)
        gs.append(out)
    return gs


def strip_timing(doc):
    for c in doc["candidates"]:
        c.pop("wall_ms")
    if doc["best"]:
        doc["best"].pop("wall_ms")
    doc.pop("threads")
    return doc


def winners(stderr):
    """{graph: rank} from --verbose's "the best, #k, was judged on rank r"."""
    w = {}
    for line in stderr.splitlines():
        if ": the best, #" in line and "judged on rank" in line:
            w[line.split(": the best")[0][len("tune: "):]] = \
                int(line.rsplit(" ", 1)[1])
    return w


def case_identity(env, src):
    gs = graphs(src, env)
    base = env.path("one")
    shutil.rmtree(base, ignore_errors=True)
    ref = env.run(gs + ["--threads", "1", "-o", base])
    ref_json = env.run(gs + ["--threads", "1", "--format", "json"]).stdout
    n_pairs = sum(len(json.load(open(os.path.join(base, f)))["candidates"])
                  for f in os.listdir(base) if f.endswith(".tune.json"))
    if "%d graphs, %d tuned" % (len(gs), len(gs)) not in ref.stdout:
        fail("one process: summary\n" + ref.stdout)
    one = gs[1]
    single_ref = strip_timing(json.loads(env.run(
        [one, "--threads", "1", "--format", "json", "-o",
         env.path("one-best.json")]).stdout))
    off_zero, runs, files = 0, 0, 0
    for np, threads in ((1, 1), (2, 1), (3, 1), (4, 1), (2, 2)):
        out = env.path("np%d-t%d" % (np, threads))
        shutil.rmtree(out, ignore_errors=True)
        p = env.run(gs + ["--threads", str(threads), "-o", out,
                          "--verbose"], np=np)
        if p.stdout != ref.stdout:
            fail("%d ranks x %d threads: summary differs:\n%s\n--- one "
                 "process:\n%s" % (np, threads, p.stdout, ref.stdout))
        files += same_folder(base, out, "%d ranks" % np)
        w = winners(p.stderr)
        if len(w) != len(gs):
            fail("%d ranks: --verbose named %d winners:\n%s" %
                 (np, len(w), p.stderr))
        judged = [int(l.split()[4]) for l in p.stderr.splitlines()
                  if l.startswith("tune: rank ") and " judged " in l]
        if len(judged) != np or sum(judged) != n_pairs:
            fail("%d ranks judged %s pairs, %d expected" %
                 (np, judged, n_pairs))
        off_zero += sum(1 for r in w.values() if r != 0)
        runs += 1
        pj = env.run(gs + ["--threads", str(threads), "--format", "json"],
                     np=np)
        if pj.stdout != ref_json:
            fail("%d ranks: the summary JSON differs" % np)
        # one graph alone: its JSON (less timings) and its -o file
        best = env.path("np%d-best.json" % np)
        sj = strip_timing(json.loads(env.run(
            [one, "--threads", str(threads), "--format", "json", "-o", best],
            np=np).stdout))
        if sj != single_ref:
            fail("%d ranks: %s's JSON differs from one process's" %
                 (np, one))
        if not filecmp.cmp(best, env.path("one-best.json"), shallow=False):
            fail("%d ranks: %s's -o file differs" % (np, one))
    # rank 0 refusing every pair: every winner judged elsewhere, the same
    # bytes (exit 1: a rank failed)
    out = env.path("np3-no-rank0")
    shutil.rmtree(out, ignore_errors=True)
    p = env.run(gs + ["--threads", "1", "-o", out, "--verbose",
                      "--debug-fail-rank", "0"], np=3, expect=1)
    if p.stdout != ref.stdout or "rank 0 failed" not in p.stderr:
        fail("rank 0 refusing: summary differs or rank 0 not named:\n%s\n%s"
             % (p.stdout, p.stderr))
    files += same_folder(base, out, "rank 0 refusing")
    w = winners(p.stderr)
    if len(w) != len(gs) or 0 in w.values():
        fail("rank 0 refusing: winners judged on %s" % w)
    off_zero += len(w)
    runs += 1
    if off_zero == 0:
        fail("no winner was ever judged on a rank other than 0")
    print("identity: %d graphs, %d (graph, candidate) pairs, %d runs "
          "(1, 2, 3, 4 ranks x 1 thread, 2 ranks x 2 threads, 3 ranks with "
          "rank 0 refusing its pairs): summary "
          "table, summary JSON, %d result files and one graph's JSON and "
          "-o file the same bytes as one process; %d of %d winners judged "
          "on ranks other than 0" %
          (len(gs), n_pairs, runs, files, off_zero, runs * len(gs)))


def case_failures(env, src):
    gs = graphs(src, env)[:4]
    base = env.path("f-one")
    shutil.rmtree(base, ignore_errors=True)
    ref = env.run(gs + ["--threads", "1", "-o", base])
    # a rank that refuses every pair: named, its pairs redone, exit 1
    out = env.path("f-refuse")
    shutil.rmtree(out, ignore_errors=True)
    p = env.run(gs + ["--threads", "1", "-o", out, "--debug-fail-rank", "1"],
                np=3, expect=1)
    if "rank 1 failed" not in p.stderr or p.stdout != ref.stdout:
        fail("refusing rank:\n%s\n%s" % (p.stdout, p.stderr))
    same_folder(base, out, "refusing rank")
    # a rank that stops answering: named after --rank-timeout, the rest
    # redone, the job aborted by rank 0 after the output (no hang)
    out = env.path("f-hang")
    shutil.rmtree(out, ignore_errors=True)
    p = env.run(gs + ["--threads", "1", "-o", out, "--debug-hang-rank", "2",
                      "--rank-timeout", "4"], np=3, expect=None, timeout=60)
    if p.returncode == 0 or "rank 2 failed (no answer for graph" not in \
            p.stderr or p.stdout != ref.stdout:
        fail("hung rank: exit %d\n%s\n%s" % (p.returncode, p.stdout,
                                              p.stderr))
    same_folder(base, out, "hung rank")
    # a rank killed by a signal: Open MPI ends the job and names it; rank 0
    # wrote nothing (it writes once every pair is in)
    out = env.path("f-kill")
    shutil.rmtree(out, ignore_errors=True)
    p = env.run(gs + ["--threads", "1", "-o", out, "--debug-kill-rank", "1"],
                np=3, expect=None, timeout=60)
    if p.returncode == 0 or "rank 1" not in p.stderr:
        fail("killed rank: exit %d\n%s" % (p.returncode, p.stderr))
    if os.path.isdir(out) and os.listdir(out):
        fail("killed rank: files left: %s" % os.listdir(out))
    # a bad graph among good ones: located error, its row, exit 2 -- the
    # same under mpirun as alone
    bad = env.path("bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "commsched-graph", "version": 1,\n "nodes": [}\n')
    one = env.run(gs[:2] + [bad, "--threads", "1"], expect=2)
    two = env.run(gs[:2] + [bad, "--threads", "1"], np=2, expect=2)
    if one.stdout != two.stdout or "bad input" not in two.stdout or \
            bad + ":2:" not in two.stderr:
        fail("bad graph:\n%s\n%s\n--- alone:\n%s" % (two.stdout, two.stderr,
                                                       one.stdout))
    # ranks given different jobs refuse before any work
    cmd, _ = env.launcher(1)
    raw = cmd[1:] + [env.cli, "tune", gs[0], ":", "-np", "1", env.cli,
                     "tune", gs[1]]
    p = env.run([], raw=raw, expect=None, timeout=60)
    if p.returncode == 0 or "different jobs" not in p.stderr:
        fail("different jobs: exit %d\n%s" % (p.returncode, p.stderr))
    print("failures: refusing, hung and killed ranks named; the first two "
          "redone with the same bytes; bad graph and mismatched ranks "
          "refused")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    cli, src, scratch, case = sys.argv[1:5]
    os.makedirs(scratch, exist_ok=True)
    h = subprocess.run([cli, "run", "--help"], capture_output=True,
                       text=True, timeout=30)
    if "has: mpi" not in h.stdout.replace("\n", " "):
        print("SKIP: this build has no MPI runtime")
        return SKIP
    env = Env(cli, scratch)
    if not env.mpiexec:
        print("SKIP: no mpirun")
        return SKIP
    if case == "identity":
        case_identity(env, src)
    elif case == "failures":
        case_failures(env, src)
    else:
        print("unknown case " + case)
        return 2
    print("tune over MPI: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
