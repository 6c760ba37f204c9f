#!/bin/sh
# import kineto --et: the matched pair from HTA's tests (a PyTorch ET and
# the Kineto trace of the same run). Each of the 4 GPU kernels links to
# the operator that launched it by record-function id (two uniform_, two
# add); each add reads what both uniform_ kernels wrote (storages 7 and
# 12 in the ET), and every kernel's output has its ET size (256 x 256
# floats). A file that is not an ET is a located error, exit 2.
#
#   kineto_et.sh CLI PYTHON3 TRACE ET SCRATCH_DIR
set -u
cli=$1
py=$2
trace=$3
et=$4
s=$5
for f in "$trace" "$et"; do
    [ -f "$f" ] || { echo "SKIP: $f not found" >&2; exit 77; }
done
rm -rf "$s" && mkdir -p "$s" || exit 1
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
"$cli" import kineto "$trace" --et "$et" -o "$s/g.json" 2> "$s/notes" ||
    fail "import: $(cat "$s/notes")"
grep -q "4 of 4 GPU events linked" "$s/notes" || fail "linking: $(cat "$s/notes")"
"$cli" validate "$s/g.json" > /dev/null || fail "does not validate"
got=$("$py" -c "
import json
g = json.load(open('$s/g.json'))
n = g['nodes']
ok = all(n[i]['outputs'][0]['size'] == 262144 for i in range(4))
ok = ok and {n[0]['name'], n[1]['name']} <= set(n[2]['inputs'])
ok = ok and {n[0]['name'], n[1]['name']} <= set(n[3]['inputs'])
print(ok)")
[ "$got" = True ] || fail "dependencies or sizes: $(cat "$s/g.json")"
# without the ET: the stream order alone, sizes 0
"$cli" import kineto "$trace" -o "$s/plain.json" 2> /dev/null || fail "plain import"
[ "$("$py" -c "
import json
n = json.load(open('$s/plain.json'))['nodes']
print(len(n[3].get('inputs')), n[0]['outputs'][0]['size'])")" = "1 0" ] ||
    fail "plain import changed"
"$cli" import kineto "$trace" --et "$trace" -o "$s/bad.json" 2> "$s/bad"
rc=$?
[ $rc = 2 ] || fail "a Kineto trace given as the ET: exit $rc"
grep -q "^commsched: $trace: schema: missing" "$s/bad" || fail "error: $(cat "$s/bad")"
[ ! -e "$s/bad.json" ] || fail "output written on error"
exit 0
