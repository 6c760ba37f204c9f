#!/bin/sh
# -o on each kind of file (issues 21, 43; docs/FORMAT.md "Writing files"):
# the atomic writer replaces only regular files (through a symlink, also a
# dangling one: the file it names, keeping its mode), refuses a link loop
# and a file its user may not write, and writes devices, FIFOs and
# /dev/stdout in place. Before, run as root,
# `-o /dev/null` replaced the null device with a regular file, a symlink was
# replaced by a file, and a FIFO's reader got nothing.
#
#   output_kinds.sh CLI SOURCE_DIR SCRATCH_DIR
# Exit 77 (skipped) when not root: mknod needs it.
set -u
cli=$1
input=$2/graphs/examples/fsdp_2layer.json
dir=$3
[ "$(id -u)" -eq 0 ] || { echo "SKIP: mknod needs root"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
run() { "$cli" optimize "$input" --passes none -o "$1" 2>"$dir/err" ||
        fail "-o $1: exit $? ($(cat "$dir/err"))"; }

"$cli" optimize "$input" --passes none -o "$dir/expected.json" || exit 1

# A regular file: replaced atomically, its mode kept.
echo old > "$dir/plain.json" && chmod 640 "$dir/plain.json"
run "$dir/plain.json"
cmp -s "$dir/plain.json" "$dir/expected.json" || fail "plain file content"
[ "$(stat -c %a "$dir/plain.json")" = 640 ] || fail "plain file mode changed"

# A symlink: the link stays, its target is replaced (mode kept).
echo old > "$dir/target.json" && chmod 600 "$dir/target.json"
ln -s target.json "$dir/link.json"
run "$dir/link.json"
[ -L "$dir/link.json" ] || fail "symlink replaced by a file"
cmp -s "$dir/target.json" "$dir/expected.json" || fail "symlink target content"
[ "$(stat -c %a "$dir/target.json")" = 600 ] || fail "symlink target mode changed"

# A dangling symlink: the file it names is created, the link kept (as the
# shell's `>` does; it used to be replaced by a regular file).
ln -s made.json "$dir/dangling.json"
run "$dir/dangling.json"
[ -L "$dir/dangling.json" ] || fail "dangling symlink replaced by a file"
cmp -s "$dir/made.json" "$dir/expected.json" || fail "dangling link's file content"

# A link loop: refused, exit 2, nothing written.
ln -s loop-b "$dir/loop-a" && ln -s loop-a "$dir/loop-b"
"$cli" optimize "$input" --passes none -o "$dir/loop-a" 2>"$dir/err"
[ $? -eq 2 ] || fail "-o onto a link loop: exit status not 2"
grep -q "loop-a: cannot write: Too many levels of symbolic links" "$dir/err" ||
    fail "-o onto a link loop: $(cat "$dir/err")"
[ -L "$dir/loop-a" ] && [ -L "$dir/loop-b" ] || fail "link loop replaced"

# A file its user may not write (another user's, read-only), in a
# directory they may write: refused as the shell's `>` refuses it, where
# the rename used to replace it.
if command -v setpriv >/dev/null 2>&1; then
    mkdir "$dir/shared" && chmod 777 "$dir/shared"
    echo keep > "$dir/shared/theirs.json" && chmod 444 "$dir/shared/theirs.json"
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$cli" optimize "$input" --passes none -o "$dir/shared/theirs.json" \
        2>"$dir/err"
    [ $? -eq 2 ] || fail "-o onto an unwritable file: exit status not 2"
    grep -q "theirs.json: cannot write: Permission denied" "$dir/err" ||
        fail "-o onto an unwritable file: $(cat "$dir/err")"
    [ "$(cat "$dir/shared/theirs.json")" = keep ] ||
        fail "an unwritable file was replaced"
    rm -rf "$dir/shared"
fi

# A character device (a null device of our own): written, not replaced.
mknod "$dir/null" c 1 3 || exit 1
run "$dir/null"
[ -c "$dir/null" ] || fail "device node replaced by a regular file"

# A FIFO: its reader gets the whole output.
mkfifo "$dir/pipe" || exit 1
cat "$dir/pipe" > "$dir/from_pipe" &
reader=$!
run "$dir/pipe"
wait $reader
[ -p "$dir/pipe" ] || fail "FIFO replaced by a regular file"
cmp -s "$dir/from_pipe" "$dir/expected.json" || fail "FIFO reader got other bytes"

# /dev/stdout redirected to a regular file: the bytes land in that file.
"$cli" optimize "$input" --passes none -o /dev/stdout > "$dir/stdout.json" ||
    fail "-o /dev/stdout: exit $?"
cmp -s "$dir/stdout.json" "$dir/expected.json" || fail "/dev/stdout content"

left=$(ls -A "$dir" | grep tmp)
[ -z "$left" ] || fail "left temporaries: $left"
exit $failed
