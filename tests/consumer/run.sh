#!/bin/sh
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR LIBDIR CC CMAKE PKG_CONFIG
#
# 1. DESTDIR=WORK/stage cmake --install BUILD_DIR --prefix /usr/local
#    (the package must be usable where it lands: it is relocatable), and
#    the shared library has a versioned soname and exports only commsched_*;
# 2. tests/consumer/project via find_package(commsched): shared and static;
# 3. the same consumer.c via `pkg-config --cflags --libs commsched`, and
#    linked statically via `pkg-config --static --libs commsched`;
# 4. docs/API.md's C example via pkg-config, output compared with the page.
set -eu
build=$1 src=$2 work=$3 libdir=$4 cc=$5 cmake=$6 pkgconfig=$7

rm -rf "$work"
mkdir -p "$work"
stage="$work/stage"
prefix=/usr/local
root="$stage$prefix"

step() { printf '== %s\n' "$*"; }

step "install into DESTDIR=$stage, prefix $prefix"
DESTDIR="$stage" "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
(cd "$stage" && find . \( -type f -o -type l \) | sort)

step "shared library: soname and exported symbols"
so="$root/$libdir/libcommsched.so"
if command -v readelf >/dev/null 2>&1; then
    readelf -d "$so" | grep -q 'SONAME.*\[libcommsched\.so\.[0-9]*\]' ||
        { echo "$so: no versioned SONAME"; readelf -d "$so" | grep SONAME; exit 1; }
fi
if command -v nm >/dev/null 2>&1; then
    others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^commsched_' || true)
    [ -z "$others" ] || { echo "$so exports non-API symbols:"; echo "$others"; exit 1; }
    nm -D --defined-only "$so" | grep -q ' T commsched_optimize$' ||
        { echo "$so: commsched_optimize not exported"; exit 1; }
    echo "$(nm -D --defined-only "$so" | wc -l) symbols, all commsched_*"
fi

step "find_package(commsched): shared and static targets"
"$cmake" -S "$src/tests/consumer/project" -B "$work/cmake-build" \
    -DCMAKE_PREFIX_PATH="$root" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/cmake-build" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; exit 1; }
"$work/cmake-build/consumer_shared"
"$work/cmake-build/consumer_static"
# the shared one really uses the staged library
if command -v ldd >/dev/null 2>&1; then
    ldd "$work/cmake-build/consumer_shared" | grep -q "$root/$libdir/libcommsched.so.0" ||
        { echo "consumer_shared does not load $root/$libdir/libcommsched.so.0"; exit 1; }
    if ldd "$work/cmake-build/consumer_static" | grep -q libcommsched; then
        echo "consumer_static still needs libcommsched.so"; exit 1
    fi
fi

step "pkg-config --cflags --libs commsched"
PKG_CONFIG_PATH="$root/$libdir/pkgconfig"
PKG_CONFIG_LIBDIR="$root/$libdir/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig:/usr/lib/$(uname -m)-linux-gnu/pkgconfig"
export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
flags=$("$pkgconfig" --cflags --libs commsched)
echo "pkg-config: $flags"
"$pkgconfig" --modversion commsched
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$src/tests/consumer/project/consumer.c" \
    $flags -o "$work/consumer_pc"
LD_LIBRARY_PATH="$root/$libdir" "$work/consumer_pc"

step "pkg-config --static --libs commsched (archive)"
static_libs=""
for f in $("$pkgconfig" --static --libs commsched); do
    [ "$f" = "-lcommsched" ] || static_libs="$static_libs $f"
done
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $("$pkgconfig" --cflags commsched) \
    "$src/tests/consumer/project/consumer.c" "$root/$libdir/libcommsched.a" \
    $static_libs -o "$work/consumer_pc_static"
env -u LD_LIBRARY_PATH "$work/consumer_pc_static"

step "docs/API.md C example"
awk '$0 == "<!-- example: api_example.c -->" {g = 1; next}
     g == 1 && /^```/ {g = 2; next}
     g == 2 && /^```/ {exit}
     g == 2 {print}' "$src/docs/API.md" >"$work/api_example.c"
awk '$0 == "<!-- output: api_example.c -->" {g = 1; next}
     g == 1 && /^```/ {g = 2; next}
     g == 2 && /^```/ {exit}
     g == 2 {print}' "$src/docs/API.md" >"$work/api_example.expected"
[ -s "$work/api_example.c" ] || { echo "docs/API.md: no C example"; exit 1; }
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Wshadow -Wconversion -pedantic -Werror \
    "$work/api_example.c" $flags -o "$work/api_example"
LD_LIBRARY_PATH="$root/$libdir" "$work/api_example" >"$work/api_example.out"
if ! cmp -s "$work/api_example.out" "$work/api_example.expected"; then
    echo "docs/API.md C example: output differs from the page"
    diff "$work/api_example.expected" "$work/api_example.out" || true
    exit 1
fi
echo "docs/API.md C example: output as documented"
echo "consumer: all ok"
