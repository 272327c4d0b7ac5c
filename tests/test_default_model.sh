#!/usr/bin/env bash
# The model `make run` ships (models/stories260K): its .mlb is exactly what
# tools/convert.py makes of the original (so it cannot go stale), it writes
# the golden story on this build, tools/pick_isa.sh picks a build this CPU
# runs (checked against /proc/cpuinfo), and, once for the plain scalar build,
# `make run` itself picks that build and writes the golden story.
# env: BUILD ISA PYTHON MODELS RUNNER (set by tests/run_tests.sh)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
dir=models/stories260K
M=$dir/stories260K_q8_0.mlb T=$dir/tok512.bin GOLDEN=tests/golden/stories260K_q8_0.ids
for f in "$M" "$T" "$dir/LICENSE" "$dir/PROVENANCE.md"; do
    if [ -s "$f" ]; then ok "shipped: $f present"; else bad "shipped: $f missing"; fi
done

# ---- the shipped files are the original's conversion ------------------------
src=$MODELS/stories260K
if [ ! -f "$src/stories260K.bin" ]; then
    skip "shipped model NOT re-checked against tools/convert.py: $src/stories260K.bin not found"
elif [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
    skip "shipped model NOT re-checked against tools/convert.py: no python3 with numpy"
else
    if "$PYTHON" tools/convert.py "$src/stories260K.bin" "$tmp/fresh.mlb" --wtype q8_0 >/dev/null 2>"$tmp/err" &&
        cmp -s "$tmp/fresh.mlb" "$M"; then
        ok "tools/convert.py $src/stories260K.bin --wtype q8_0 gives $M byte for byte"
    else
        bad "tools/convert.py output differs from $M (re-convert it and update PROVENANCE.md): $(head -c 300 "$tmp/err")"
    fi
    if cmp -s "$src/tok512.bin" "$T"; then ok "$T is the original tok512.bin"; else bad "$T differs from $src/tok512.bin"; fi
fi

# ---- this build writes the golden story with it ------------------------------
golden_ok() {  # ids file, text file
    cmp -s "$1" "$GOLDEN" &&
        grep -q '^Once upon a time, there was a little girl named Lily. She loved to play outside' "$2"
}
# shellcheck disable=SC2086
$RUNNER "$BUILD/ml_run" -m "$M" -z "$T" -i "Once upon a time" -n 128 --temp 0 --ids "$tmp/ids" >"$tmp/out" 2>"$tmp/err"
if golden_ok "$tmp/ids" "$tmp/out"; then ok "$ISA: the shipped model's greedy story is $GOLDEN"
else bad "$ISA: the shipped model's greedy story is not $GOLDEN: $(head -c 300 "$tmp/err")"; fi

# ---- ISA=auto: the choice ----------------------------------------------------
# shellcheck disable=SC2086
best=$(bash tools/pick_isa.sh $RUNNER "$BUILD/ml_run" 2>"$tmp/err")
# shellcheck disable=SC2086
runs=$($RUNNER "$BUILD/ml_run" --cpu-info | sed -n 's/^  runs here   : //p')
if [[ " $runs " == *" $best "* ]]; then ok "pick_isa: $best, one of the builds --cpu-info says run here ($runs)"
else bad "pick_isa: '$best' is not among the builds that run here ($runs) $(cat "$tmp/err")"; fi
# An independent witness on x86 Linux: the kernel's CPU flags (not under
# qemu, where /proc/cpuinfo is the host's).
if [ -z "$RUNNER" ] && [ -r /proc/cpuinfo ] && grep -q '^flags.* sse2' /proc/cpuinfo; then
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
    case $best in
    avx512vnni) has avx512f avx512bw avx512vl avx512_vnni avx2 fma; r=$? ;;
    avxvnni) has avx_vnni avx2 fma; r=$? ;;
    avx2) has avx2 fma; r=$? ;;
    sse41) has sse4_1; r=$? ;;
    sse2) has sse2; r=$? ;;
    *) r=1 ;;
    esac
    if [ $r -eq 0 ]; then ok "pick_isa: /proc/cpuinfo has every flag the $best build needs"
    else bad "pick_isa: /proc/cpuinfo lacks a flag the $best build needs"; fi
    # The fastest: with every AVX-512 VNNI and AVX-VNNI flag, nothing less will do;
    # with AVX2 and FMA, nothing below avx2.
    want=
    if has avx512f avx512bw avx512vl avx512_vnni avx_vnni avx2 fma; then want="avx512vnni"
    elif has avx2 fma; then want="avx2 avxvnni avx512vnni"; fi
    if [ -z "$want" ] || [[ " $want " == *" $best "* ]]; then ok "pick_isa: $best is the fastest this CPU's flags allow"
    else bad "pick_isa: $best, but /proc/cpuinfo allows one of: $want"; fi
fi

# ---- make run itself, once: the plain scalar build's row ---------------------
if [ "$BUILD" != build/scalar ]; then
    echo "# make run end to end: checked in the build/scalar row (this is $BUILD)"
    finish
fi
# A fresh make: neither the caller's make (make check ISA=scalar) nor
# tests/run_tests.sh's exported ISA may reach it; MKENV=ISA=x sets one.
# shellcheck disable=SC2086
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u ISA ${MKENV:-} make --no-print-directory -s "$@"; }
mk run ARGS="--temp 0 -n 128 --ids $tmp/run.ids" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "best build for this CPU: $best " "$tmp/run.err" &&
    grep -q "^ml_run: $best build[,;]" "$tmp/run.err"; then
    ok "make run: says it picked $best and runs that build"
else
    bad "make run: exit $rc; did not pick and run $best: $(head -c 400 "$tmp/run.err")"
fi
# build/best: the README's one path, every program of the picked build, made by make run and by make alone.
best_link_ok() { [ -L build/best ] && [ "$(readlink build/best)" = "$best" ] &&
    [ -x build/best/ml_run ] && [ -x build/best/ml_bench ] && [ -x build/best/ml_perplexity ] &&
        [ -x build/best/ml_tokenize ] && { [ -x build/best/ml_server ] || [ "$(uname -o 2>/dev/null)" = Msys ]; }; }
if best_link_ok; then ok "make run: build/best -> $best, with every program (config/programs.txt)"
else bad "make run: build/best is not a link to $best with the three programs: $(ls -l build/best 2>&1)"; fi
rm -f build/best
if mk >/dev/null 2>"$tmp/make.err" && best_link_ok && grep -q "^make: best build for this CPU: $best " "$tmp/make.err"; then
    ok "make (no target): says it picked $best and links build/best to it"
else bad "make (no target): no build/best -> $best: $(head -c 300 "$tmp/make.err")"; fi
if grep -q "260K-parameter" "$tmp/run.err"; then ok "make run: tells the user the model has 260K parameters"
else bad "make run: no word of the model's size"; fi
if golden_ok "$tmp/run.ids" "$tmp/run.out"; then ok "make run (--temp 0): the golden story"
else bad "make run (--temp 0): not the golden story"; fi
for how in "ISA=sse2 env" "make run ISA=sse2"; do
    if [ "$how" = "ISA=sse2 env" ]; then MKENV=ISA=sse2 mk run ARGS="--temp 0 -n 16" >/dev/null 2>"$tmp/err"
    else mk run ISA=sse2 ARGS="--temp 0 -n 16" >/dev/null 2>"$tmp/err"; fi
    if grep -q '^ml_run: sse2 build[,;]' "$tmp/err" && ! grep -q 'best build' "$tmp/err"; then
        ok "make run: $how forces the sse2 build"
    else bad "make run: $how did not run the sse2 build: $(head -c 300 "$tmp/err")"; fi
done
if mk check ISA=auto >/dev/null 2>"$tmp/err"; then bad "make check ISA=auto: accepted"
elif grep -q 'ISA=auto is for' "$tmp/err"; then ok "make check ISA=auto: refused (auto is for make and make run)"
else bad "make check ISA=auto: refused without saying why: $(head -c 200 "$tmp/err")"; fi
finish
