#!/usr/bin/env python3
"""The example output in docs/REPORTS.md is what the tool prints (issue 43:
it had gone stale, showing a lower bound of 983.6 us, an efficiency of
59.0% and a peak +16.7% where the tool printed 1.10 ms, 65.7% and 0.0%).

usage: doc_examples.py COMMSCHED SOURCE_DIR SCRATCH_DIR

Every fenced block of the page whose first line is `$ commsched ARGS` is
run (ARGS split as a shell would, paths relative to the repository, in a
scratch directory where `graphs` is the repository's) and its standard
output must equal the rest of the block, line for line."""

import os
import shlex
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1:4]
PAGES = ["docs/REPORTS.md"]


def blocks(text):
    lines, inside, cur = text.split("\n"), False, []
    for line in lines:
        if line.startswith("```"):
            if inside and cur and cur[0].startswith("$ commsched "):
                yield cur[0][2:], cur[1:]
            inside, cur = not inside, []
        elif inside:
            cur.append(line)


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
os.symlink(os.path.join(SRC, "graphs"), os.path.join(SCRATCH, "graphs"))
checked = 0
for page in PAGES:
    with open(os.path.join(SRC, page)) as f:
        text = f.read()
    for cmd, want in blocks(text):
        argv = shlex.split(cmd)
        p = subprocess.run([CLI] + argv[1:], capture_output=True, text=True,
                           cwd=SCRATCH, timeout=120)
        got = p.stdout.rstrip("\n").split("\n")
        if p.returncode != 0 or got != want:
            print("FAIL: %s: `%s` (exit %d) prints:\n%s\n--- the page says:\n%s"
                  % (page, cmd, p.returncode, "\n".join(got), "\n".join(want)))
            sys.exit(1)
        checked += 1
if checked < 2:
    print("FAIL: found %d example blocks" % checked)
    sys.exit(1)
print("%d example blocks match" % checked)
