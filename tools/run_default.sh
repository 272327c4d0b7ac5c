#!/usr/bin/env bash
# `make run`: convert the default model (stories260K from ../shared/models)
# and generate a story. Without that folder, a random model is generated
# instead and the notice says its text is random.
# env: BUILD (folder with ml_run), PYTHON (python3 with numpy), MODELS; ARGS for extra ml_run options
set -eu
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${PYTHON:=python3}" "${MODELS:=../shared/models}" "${ARGS:=}"
mkdir -p build/models
if [ -z "$PYTHON" ]; then
    echo "make run: needs python3 with numpy to convert the model: pip install numpy" >&2
    exit 1
fi
src="$MODELS/stories260K/stories260K.bin"
if [ -f "$src" ]; then
    model=build/models/stories260K_q8_0.mlb
    tok="$MODELS/stories260K/tok512.bin"
    [ "$model" -nt "$src" ] && [ "$model" -nt tools/convert.py ] || "$PYTHON" tools/convert.py "$src" "$model" --wtype q8_0 >/dev/null
    prompt="Once upon a time"
else
    echo "make run: $MODELS/stories260K not found; generating a RANDOM model (its text is random)." >&2
    echo "          Convert a real llama2.c or HF checkpoint with tools/convert.py (see README)." >&2
    model=build/models/random.mlb
    tok=build/models/random_tok.bin
    [ -f "$model" ] || "$PYTHON" tools/gen_random.py "$model" --tokenizer "$tok" --dim 64 --n-layers 2 \
        --n-heads 4 --n-kv-heads 2 --hidden-dim 128 --vocab 512 --max-seq 256 --seed 1 >/dev/null
    prompt="Once"
fi
set -x
# shellcheck disable=SC2086
"$BUILD/ml_run" -m "$model" -z "$tok" -i "$prompt" -n 200 --temp 0.8 -s 42 $ARGS
