#!/bin/sh
# The bytes each collective of an imported real trace reads and writes,
# against what the source says (docs/WORKLOADS.md): one line per kind of
# collective, "COUNT OP GROUP RANKS READ WRITTEN", READ the bytes of the
# buffers it reads (through aliases), WRITTEN those of its own outputs.
# A warning (a group size assumed) fails the test unless expected.
#
#   collective_sizes.sh CLI PYTHON FORMAT FILE EXPECTED SCRATCH [OPTION...]
set -u

if [ $# -lt 6 ]; then
    echo "usage: $0 CLI PYTHON FORMAT FILE EXPECTED SCRATCH [OPTION...]" >&2
    exit 2
fi
cli=$1
py=$2
fmt=$3
file=$4
expected=$5
scratch=$6
shift 6
if [ ! -f "$file" ]; then
    echo "SKIP: $file not found" >&2
    exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$cli" import "$fmt" "$@" "$file" -o "$scratch/g.json" 2> "$scratch/notes" ||
    fail "import $fmt $*: $(cat "$scratch/notes")"
! grep -q warning "$scratch/notes" || fail "$(cat "$scratch/notes")"
"$py" - "$scratch/g.json" > "$scratch/got" <<'PY' || fail "cannot read the graph"
import collections
import json
import sys

g = json.load(open(sys.argv[1]))
size = {x["name"]: x["size"] for x in g["groups"]}
buf = {x["name"]: x for x in g.get("inputs", [])}
for n in g["nodes"]:
    for o in n["outputs"]:
        buf[o["name"]] = o


def root(name):
    while "alias_of" in buf[name]:
        name = buf[name]["alias_of"]
    return buf[name].get("size", 0)


rows = collections.Counter()
for n in g["nodes"]:
    if n["kind"] == "collective":
        read = sum(root(i) for i in n.get("inputs", []))
        wrote = sum(o.get("size", 0) for o in n["outputs"]
                    if "alias_of" not in o)
        rows[(n["op"], n["group"], size[n["group"]], read, wrote)] += 1
for key in sorted(rows):
    print(rows[key], *key)
PY
cmp -s "$expected" "$scratch/got" ||
    fail "collective sizes differ from $expected:
$(diff "$expected" "$scratch/got")"
"$cli" validate "$scratch/g.json" || fail "the import does not validate"
exit 0
