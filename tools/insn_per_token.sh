#!/usr/bin/env bash
# Guest instructions per decoded token of the ARM builds, under qemu-user with
# the insncount plugin (../shared/tools/insncount/): exact and repeatable,
# so ARM kernels can be compared without ARM hardware (docs/ARM.md).
#   per token = (count at -n 48 - count at -n 16) / 32
# on a stories15M-shape random model (tools/gen_random.py, Q8_0 and Q4_0),
# the Llama-2 tokenizer, prompt "one two three four", --temp 0, THREADS=1.
# Prints one markdown table row per build.
# usage: tools/insn_per_token.sh [LABEL ...]   (default: every row below)
# env: MODELS (../shared/models), PYTHON (a python3 with numpy), INSNCOUNT
#      (the plugin's source folder), CC_OVERRIDE (e.g. clang: adds CC=clang)
set -eu
cd "$(dirname "$0")/.."
: "${MODELS:=../shared/models}" "${INSNCOUNT:=../shared/tools/insncount}"
: "${PYTHON:=$(for p in python3 /usr/bin/python3; do $p -c 'import numpy' 2>/dev/null && echo $p && break; done)}"
. tools/arm_rows.sh

out=build/insn_per_token
mkdir -p "$out"
plugin=$out/insncount.so
[ "$plugin" -nt "$INSNCOUNT/insncount.c" ] || cc -O2 -shared -fPIC "$INSNCOUNT/insncount.c" -o "$plugin"
tok=$MODELS/llama2-tokenizer/tokenizer.bin
for t in q8_0 q4_0; do
    [ -s "$out/s15m_$t.mlb" ] || "$PYTHON" tools/gen_random.py --dim 288 --n-layers 6 --n-heads 6 --n-kv-heads 6 \
        --hidden-dim 768 --vocab 32000 --max-seq 256 --wtype $t "$out/s15m_$t.mlb" >/dev/null
done

# count BUILD RUNNER MODEL N: the instruction count of one run; the run must
# decode all N positions (an early end of text would shorten it).
count() {
    local err; err=$($4 -plugin "$plugin" "$1/ml_run" -m "$3" -z "$tok" -i "one two three four" -n "$2" --temp 0 \
        2>&1 >/dev/null)
    grep -q "ml_run: $2 tokens in" <<<"$err" || { echo "insn_per_token: $1 -n $2 did not run $2 tokens:" >&2; \
        echo "$err" >&2; exit 1; }
    sed -nE 's/^insncount: ([0-9]+) instructions$/\1/p' <<<"$err"
}

echo "| build | Q8_0 instr/token | Q4_0 instr/token |"
echo "| --- | --- | --- |"
for row in "${ROWS[@]}"; do
    IFS='|' read -r label isa cross runner <<<"$row"
    if [ $# -gt 0 ] && [[ " $* " != *" $label "* ]]; then continue; fi
    args=(ISA="$isa" CROSS="$cross" THREADS=1 ${CC_OVERRIDE:+CC=$CC_OVERRIDE})
    make -s -j2 "${args[@]}" "$(make -s "${args[@]}" print-build)/ml_run" >&2
    build=$(make -s "${args[@]}" print-build)
    cells=()
    for t in q8_0 q4_0; do
        n48=$(count "$build" 48 "$out/s15m_$t.mlb" "$runner")
        n16=$(count "$build" 16 "$out/s15m_$t.mlb" "$runner")
        cells+=("$(awk -v a="$n48" -v b="$n16" 'BEGIN { printf "%.2f M", (a - b) / 32 / 1e6 }')")
    done
    echo "| $label (\`${runner#* -L * }\`) | ${cells[0]} | ${cells[1]} |"
done
