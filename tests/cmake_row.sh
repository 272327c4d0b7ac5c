#!/usr/bin/env bash
# One CMake row of the matrix (tests/matrix.sh): configure, build (warnings
# fail), ctest (the C tests and tests/e2e_golden.cmake), each ctest test a
# results row. A cross build run under an emulator (mingw-w64 under wine)
# also writes exactly what the Linux scalar build writes: --cpu-info, and
# the text of a greedy story on the shipped model.
#   tests/cmake_row.sh DIR [cmake -D... arguments]
# env: ML_RESULTS (TSV, tests/results.sh), REF_BUILD (the native scalar make
#      build, for the comparisons), ML_JOBS; WINEPREFIX/WINEDEBUG pass to wine.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/sh_lib.sh
dir=$1; shift
scratch
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

if ! cmake -S . -B "$dir" "$@" >"$tmp/configure.log" 2>&1; then
    bad "cmake $*: configure failed: $(grep -m 3 -i error "$tmp/configure.log" | tr '\n' ' ')"; finish
fi
if ! cmake --build "$dir" -j"${ML_JOBS:-2}" >"$tmp/build.log" 2>&1; then
    bad "cmake --build $dir failed: $(grep -m 5 -E 'error' "$tmp/build.log" | tr '\n' ' ')"; finish
fi
if grep -q 'warning:' "$tmp/build.log"; then
    bad "cmake --build $dir: compiler warnings: $(grep 'warning:' "$tmp/build.log" | sort -u | head -n 5 | tr '\n' ' ')"
else
    ok "build: cmake $* configured and built warning-free"
fi

# The emulator (wine), if any. A fresh wine prefix is created by the first
# program run in it; ctest -j2 would start two at once and race to create it
# (one test then fails now and then), so it is made here first, unless it
# exists: the matrix's wine rows share a prefix, and one row's tests may be
# running in it.
emu=$(sed -n 's/^CMAKE_CROSSCOMPILING_EMULATOR:[A-Z]*=//p' "$dir/CMakeCache.txt")
emu=${emu:-$(sed -n 's/^ML_WINE:[A-Z]*=//p' "$dir/CMakeCache.txt")}
case ${emu##*/} in
    wine*) [ -e "${WINEPREFIX:-$HOME/.wine}/system.reg" ] || "$emu" wineboot --init >/dev/null 2>&1 ;;
esac

# ctest: "N/M Test #k: name ....   Passed   0.12 sec" per test.
(cd "$dir" && ctest -j"${ML_JOBS:-2}" --output-on-failure) >"$tmp/ctest.log" 2>&1
n=0
while read -r name verdict; do
    n=$((n + 1))
    if [ "$verdict" = Passed ]; then ok "$name: ctest passed"; else bad "$name: ctest $verdict"; fi
done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([A-Za-z0-9_]+) \.+ *\**([A-Za-z]+).*/\1 \2/p' "$tmp/ctest.log")
[ "$n" -gt 0 ] || bad "ctest ran no test: $(tail -n 5 "$tmp/ctest.log" | tr '\n' ' ')"
# The failing checks inside a ctest test, as this row's own lines (the
# matrix repeats its rows' "FAIL - " lines in its summary).
grep -E '^[0-9]+: (FAIL|SKIP) - ' "$tmp/ctest.log" | head -n 10 | sed -E 's/^[0-9]+: (FAIL|SKIP) - /\1 - ctest: /'

# An emulated build writes what the Linux build writes, byte for byte.
exe=$(ls "$dir"/ml_run.exe "$dir"/ml_run 2>/dev/null | head -n 1)
if [ -n "$emu" ] && [ -n "${REF_BUILD:-}" ] && [ -x "$REF_BUILD/ml_run" ] && [ -n "$exe" ]; then
    # The two lines about the binary's own build differ by ISA; the CPU's do not.
    "$REF_BUILD/ml_run" --cpu-info | grep -v -e '^  this binary' -e '^  this build' >"$tmp/ref.info"
    $emu "$exe" --cpu-info 2>/dev/null | grep -v -e '^  this binary' -e '^  this build' >"$tmp/exe.info"
    check "cpu-info: under $emu, the CPU part is identical to the Linux build's" cmp -s "$tmp/ref.info" "$tmp/exe.info"
    m=models/stories260K/stories260K_q8_0.mlb t=models/stories260K/tok512.bin
    "$REF_BUILD/ml_run" -m $m -z $t -i "Once upon a time" -n 128 --temp 0 >"$tmp/ref.txt" 2>/dev/null
    $emu "$exe" -m $m -z $t -i "Once upon a time" -n 128 --temp 0 >"$tmp/exe.txt" 2>/dev/null
    check "story: under $emu, the text is byte for byte the Linux scalar build's ($(wc -c <"$tmp/ref.txt") bytes)" \
        eval '[ -s "$tmp/ref.txt" ] && cmp -s "$tmp/ref.txt" "$tmp/exe.txt"'
fi
finish
