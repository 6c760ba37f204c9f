"""Checks `commsched import hlo` against the HLO text itself, read here by
a reader of its own (not the importer's): per collective op, how many
collectives the step runs and the bytes they write, counting each while
loop's body its known trip count times.

    hlo_counts.py CLI FILE.hlo.txt SCRATCH_DIR

The reader is deliberately small: computations are the blocks that open
with `... {` at the start of a line and close with `}`; an instruction
is a line `[ROOT] %name = SHAPE opcode(...)`. Shapes are summed with the
element sizes XLA documents (docs/WORKLOADS.md). Standard library only.
"""
import json
import os
import re
import subprocess
import sys

ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
                 "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8,
                 "f64": 8, "c64": 8, "c128": 16}
# HLO opcode -> the format's collective op
COLLECTIVES = {"all-reduce": "all_reduce", "all-gather": "all_gather",
               "reduce-scatter": "reduce_scatter",
               "all-to-all": "all_to_all",
               "collective-permute": "send",
               "all-reduce-start": "all_reduce",
               "all-gather-start": "all_gather",
               "collective-permute-start": "send"}
INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")


def split_shape(rest):
    """(shape text, the text after it) of 'SHAPE opcode(...)...'."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            return rest[:i], rest[i + 1:]
    raise ValueError("no opcode after the shape: " + rest[:80])


def leaf_bytes(shape):
    """Bytes of every array leaf of a shape text, in order."""
    shape = re.sub(r"/\*.*?\*/", "", shape)
    out = []
    for ty, dims in re.findall(r"([a-z][a-z0-9]*)\[([^\]]*)\]", shape):
        if ty == "token":
            out.append(0)
            continue
        n = 1
        for d in filter(None, dims.replace("<=", "").split(",")):
            n *= int(d)
        out.append(n * ELEMENT_BYTES[ty])
    return out


def read(path):
    comps, entry, cur = {}, None, None
    for line in open(path):
        if cur is None:
            m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
            if m and not line.startswith("HloModule"):
                cur = []
                comps[m.group(2)] = cur
                if m.group(1):
                    entry = m.group(2)
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = INSTR.match(line)
        if not m:
            continue
        shape, call = split_shape(m.group(2))
        opcode = call.split("(", 1)[0]
        cur.append((m.group(1), shape, opcode, call))
    return comps, entry


def count(comps, name, times, acc):
    for _, shape, opcode, call in comps[name]:
        if opcode in COLLECTIVES:
            op = COLLECTIVES[opcode]
            leaves = leaf_bytes(shape)
            if opcode.endswith("-start") and opcode != "all-reduce-start":
                # (operands, result, ...): the result is the second element
                leaves = leaf_bytes(tuple_element(shape, 1))
            n, b = acc.get(op, (0, 0))
            acc[op] = (n + times, b + times * sum(leaves))
        elif opcode == "while":
            body = re.search(r"body=%?([\w.\-]+)", call).group(1)
            trips = int(re.search(r'"known_trip_count":\{"n":"(\d+)"',
                                  call).group(1))
            count(comps, body, times * trips, acc)
        elif opcode == "call":
            count(comps, re.search(r"to_apply=%?([\w.\-]+)", call).group(1),
                  times, acc)


def tuple_element(shape, k):
    depth, start, idx = 0, None, 0
    for i, ch in enumerate(shape):
        if ch in "([{":
            depth += 1
            if depth == 1 and ch == "(":
                start = i + 1
                continue
        elif ch in ")]}":
            depth -= 1
        if depth == 1 and ch == "," or depth == 0 and ch == ")":
            if idx == k:
                return shape[start:i]
            idx, start = idx + 1, i + 1
    return shape


def main():
    cli, hlo, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    comps, entry = read(hlo)
    want = {}
    count(comps, entry, 1, want)
    out = os.path.join(scratch, "g.json")
    subprocess.run([cli, "import", "hlo", hlo, "-o", out], check=True,
                   stderr=subprocess.DEVNULL)
    g = json.load(open(out))
    sizes = {}
    for n in g["nodes"]:
        for o in n.get("outputs", []):
            if "size" in o:
                sizes[o["name"]] = o["size"]
    got, waits = {}, 0
    for n in g["nodes"]:
        if n["kind"] == "wait":
            waits += 1
        if n["kind"] != "collective":
            continue
        c, b = got.get(n["op"], (0, 0))
        got[n["op"]] = (c + 1, b + sum(sizes[o["name"]]
                                       for o in n["outputs"]))
    ok = True
    if got != want:
        print("FAIL: collectives (count, bytes written) per op: the HLO has "
              "%s, the import %s" % (want, got), file=sys.stderr)
        ok = False
    total = sum(c for c, _ in want.values())
    if waits != total:
        print("FAIL: %d waits for %d collectives" % (waits, total),
              file=sys.stderr)
        ok = False
    if total == 0:
        print("FAIL: no collective in %s" % hlo, file=sys.stderr)
        ok = False
    print("%s: %s" % (os.path.basename(hlo), want))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
