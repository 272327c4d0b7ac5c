#!/usr/bin/env bash
# `make run`: generate a story with the model shipped in models/stories260K,
# on the best build this CPU runs (RUN_ISA=auto) or on the build asked for,
# until the story ends (-n 0: at most the whole context).
# Needs only a C compiler and make.
# env: BUILD (folder with ml_run: the build asked for, or auto's scalar probe),
#      RUN_ISA (auto or the ISA), MAKE; ARGS for extra ml_run options
set -eu
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${RUN_ISA:=auto}" "${MAKE:=make}" "${ARGS:=}"
dir=models/stories260K
model=$dir/stories260K_q8_0.mlb tok=$dir/tok512.bin

if [ "$RUN_ISA" = auto ]; then
    isa=$(bash tools/pick_isa.sh "$BUILD/ml_run")
    echo "make run: best build for this CPU: $isa (from $BUILD/ml_run --cpu-info; ISA=x make run forces one); building it if needed" >&2
    # The caller's other options (THREADS, CC, ...) reach this make through MAKEFLAGS.
    BUILD=$($MAKE -s --no-print-directory ISA="$isa" print-build)
    $MAKE -s --no-print-directory ISA="$isa" "$BUILD/ml_run"
fi
echo "make run: $model: stories260K, a 260K-parameter TinyStories model (Karpathy, llama2.c, MIT)." >&2
echo "          Its stories are short and simple; convert a bigger model with tools/convert.py (README)." >&2
set -x
# shellcheck disable=SC2086
"$BUILD/ml_run" -m "$model" -z "$tok" -i "Once upon a time" -n 0 --temp 0.8 -s 42 $ARGS
