#!/bin/sh
# Prints the path of a headless-capable Chromium, installing Debian's
# `chromium` package with apt-get when none is present and we may (root,
# apt-get available). Exit 0 with the path on stdout; exit 77 (ctest's
# "skipped") when no browser can be had. A lock (flock, when present) keeps
# parallel tests from running apt-get at the same time.
set -u
find_one() {
    for b in "${COMMSCHED_BROWSER:-}" /usr/bin/chromium /usr/bin/chromium-browser \
             /usr/bin/google-chrome /usr/bin/google-chrome-stable; do
        if [ -n "$b" ] && [ -x "$b" ]; then
            echo "$b"
            return 0
        fi
    done
    return 1
}
find_one && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "no chromium, and apt-get cannot install it here (not root or not Debian)" >&2
    exit 77
fi
install() {
    # Another test may have installed it while we waited for the lock.
    find_one >/dev/null && return 0
    echo "installing Debian's chromium (apt-get) for the browser tests..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null 2>&1 || true
    apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1
}
if command -v flock >/dev/null 2>&1; then
    lock=${TMPDIR:-/tmp}/commsched-chromium-install.lock
    ( flock 9; install ) 9>"$lock"
else
    install
fi
find_one && exit 0
echo "chromium could not be installed (apt-get failed: offline?)" >&2
exit 77
