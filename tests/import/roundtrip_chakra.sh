#!/bin/sh
# import ∘ export is the identity: a corpus graph exported as Chakra .et
# files (one per rank) imports back equal to itself, field for field; and
# read by its Chakra fields alone (what ASTRA-sim sees) it still has the
# same collectives (op and group), in the same order, moving the same bytes.
# A .et names a collective's group (pg_name) but not its size: the
# fields-only import is told each group's size with --group-size, as a
# user would, and must then give every all-gather and reduce-scatter its
# sizes back (comm_size is what each rank puts in, as ASTRA-sim reads it).
#
#   roundtrip_chakra.sh CLI GRAPH SCRATCH_DIR
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 CLI GRAPH SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
graph=$2
scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$cli" export chakra --ranks 2 "$graph" -o "$scratch/t" 2> "$scratch/notes" ||
    fail "export: $(cat "$scratch/notes")"
[ -f "$scratch/t.0.et" ] && [ -f "$scratch/t.1.et" ] ||
    fail "expected t.0.et and t.1.et: $(ls "$scratch")"
cmp -s "$scratch/t.0.et" "$scratch/t.1.et" ||
    fail "the ranks' files differ (the step is SPMD)"
"$cli" import chakra "$scratch/t.0.et" -o "$scratch/back.json" \
    2> "$scratch/notes" || fail "import: $(cat "$scratch/notes")"
sizes=$(python3 - "$graph" <<'PY'
import json
import sys
for g in json.load(open(sys.argv[1])).get("groups", []):
    print("--group-size=%s=%d" % (g["name"], g["size"]))
PY
) || fail "cannot read the groups of $graph"
# shellcheck disable=SC2086 # one option a line; group names hold no blank
"$cli" import chakra --chakra-fields-only $sizes "$scratch/t.0.et" \
    -o "$scratch/plain.json" 2> "$scratch/notes" ||
    fail "import --chakra-fields-only: $(cat "$scratch/notes")"
! grep -q "warning" "$scratch/notes" ||
    fail "a group size was assumed: $(cat "$scratch/notes")"
python3 - "$graph" "$scratch/back.json" "$scratch/plain.json" <<'PY' || exit 1
import json
import sys

orig, back, plain = (json.load(open(p)) for p in sys.argv[1:4])
orig.pop("schedule", None)
back.pop("schedule", None)
if orig != back:
    for key in orig:
        if orig.get(key) != back.get(key):
            if key == "nodes":
                for i, (a, b) in enumerate(zip(orig["nodes"], back["nodes"])):
                    if a != b:
                        sys.exit("FAIL: node %d differs:\n %s\n %s" % (i, a, b))
            sys.exit("FAIL: %s differs after export + import" % key)
    sys.exit("FAIL: graphs differ after export + import")


def collectives(g):
    return [(n["op"], n.get("group")) for n in g["nodes"]
            if n["kind"] == "collective"]


want, got = collectives(orig), collectives(plain)
if want != got:
    sys.exit("FAIL: the Chakra fields give other collectives:\n %s\n %s"
             % (want[:5], got[:5]))
sized = [n for n in orig["nodes"] if n["kind"] == "collective"
         and any(o.get("size", 0) > 0 for o in n.get("outputs", []))]
plain_bytes = sum(n["outputs"][0]["size"] for n in plain["nodes"]
                  if n["kind"] == "collective")
if sized and plain_bytes <= 0:
    sys.exit("FAIL: collectives lost their comm_size")
PY
# The bytes every collective moves, as `info` sums them, survive the plain
# Chakra fields (comm_size).
a=$("$cli" info "$graph" | grep '^bytes moved:')
b=$("$cli" info "$scratch/plain.json" | grep '^bytes moved:')
[ "$a" = "$b" ] || fail "bytes moved: \"$a\" before, \"$b\" from the Chakra fields"
# export --chakra-fields-only writes those fields alone (no commsched.*
# attribute), and they import as the exact export's fields do: the same
# graph but for its name, which comes from the file's.
"$cli" export chakra --chakra-fields-only --ranks 1 "$graph" -o "$scratch/f" \
    2> "$scratch/notes" || fail "export --chakra-fields-only: $(cat "$scratch/notes")"
! grep -q "commsched\." "$scratch/f.0.et" ||
    fail "export --chakra-fields-only left commsched.* attributes in"
[ "$(wc -c < "$scratch/f.0.et")" -lt "$(wc -c < "$scratch/t.0.et")" ] ||
    fail "the fields-only trace is not smaller than the exact one"
# shellcheck disable=SC2086
"$cli" import chakra $sizes "$scratch/f.0.et" -o "$scratch/fields.json" \
    2> "$scratch/notes" || fail "import of the fields-only trace: $(cat "$scratch/notes")"
sed 's/"name": "chakra-f\.0\.et"/"name": "chakra-t.0.et"/' "$scratch/fields.json" |
    cmp -s - "$scratch/plain.json" ||
    fail "the fields-only export imports otherwise than the exact export's fields"
exit 0
