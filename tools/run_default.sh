#!/usr/bin/env bash
# `make run`: generate a story with the model shipped in models/stories260K,
# on the best build this CPU runs (RUN_ISA=auto) or on the build asked for,
# until the story ends (-n 0: at most the whole context).
# Needs only a C compiler and make.
# With RUN_ISA=auto it makes every program of the best build (ml_run,
# ml_bench, ml_perplexity) and links build/best to its folder, the one path the
# README's commands use; BEST_ONLY=1 (`make` alone) stops there.
# env: BUILD (folder with ml_run: the build asked for, or auto's scalar probe),
#      ISA (the build of BUILD), RUN_ISA (auto or the ISA), MAKE, V (1: every
#      compiler command); ARGS for extra ml_run options; BEST_ONLY
set -eu
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${RUN_ISA:=auto}" "${MAKE:=make}" "${ARGS:=}" "${V:=0}"
dir=models/stories260K
model=$dir/stories260K_q8_0.mlb tok=$dir/tok512.bin

# make_ml_run ISA DIR: DIR/ml_run, one line on stderr if it needs making (not
# one per file; V=1 shows the commands). Warnings and errors still show. The
# caller's other options (THREADS, CC, ...) reach this make through MAKEFLAGS.
# make_ml_run ISA DIR [PROGS]: the same for DIR's programs PROGS (default ml_run).
make_ml_run() {
    local isa=$1 dir=$2 progs=${3:-ml_run} t=()
    for p in $progs; do t+=("$dir/$p"); done
    $MAKE -q --no-print-directory ISA="$isa" "${t[@]}" 2>/dev/null && return 0
    echo "  MAKE $dir/$(echo "$progs" | sed 's/ /, /g')" >&2
    if [ "$V" = 1 ]; then $MAKE --no-print-directory ISA="$isa" "${t[@]}" >&2
    else $MAKE -s --no-print-directory ISA="$isa" "${t[@]}"; fi
}
make_ml_run "$ISA" "$BUILD"
if [ "$RUN_ISA" = auto ]; then
    isa=$(bash tools/pick_isa.sh "$BUILD/ml_run")
    what=make; [ "${BEST_ONLY:-0}" = 1 ] || what="make run"
    echo "$what: best build for this CPU: $isa (from $BUILD/ml_run --cpu-info; ISA=x $what forces one)" >&2
    BUILD=$($MAKE -s --no-print-directory ISA="$isa" print-build)
    progs=$($MAKE -s --no-print-directory ISA="$isa" print-progs)
    make_ml_run "$isa" "$BUILD" "$(for p in $progs; do echo "${p##*/}"; done | paste -sd' ')"
    ln -sfn "${BUILD#build/}" build/best
    echo "$what: build/best -> $BUILD (ml_run and the other programs)" >&2
    [ "${BEST_ONLY:-0}" = 1 ] && exit 0
fi
echo "make run: $model: stories260K, a 260K-parameter TinyStories model (Karpathy, llama2.c, MIT)." >&2
echo "          Its stories are short and simple; convert a bigger model with tools/convert.py (README)." >&2
set -x
# shellcheck disable=SC2086
"$BUILD/ml_run" -m "$model" -z "$tok" -i "Once upon a time" -n 0 --temp 0.8 -s 42 $ARGS
