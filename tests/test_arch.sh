#!/usr/bin/env bash
# Today's families (issue 20): Llama 3 (rope scaling), Qwen2 (q/k/v biases,
# NeoX rotation), Qwen3 (q/k norms, head_dim != dim/n_heads). Each family's
# tiny random-weight GGUF is written at test time (tools/gguf_random.py,
# seed fixed, Q8_0 blocks), converted to a one-file .mlb version 2 (its
# tokenizer embedded) and run without -z; the logits of 32 positions, Q8_0
# and Q4_0, must hash to tests/golden/arch_<family>_<wtype>.sha256 on every
# build (kernels/canon.h), and a batched prompt gives the token-by-token bits.
#   tests/test_arch.sh --write-golden   records the hashes (scalar build)
# env: BUILD PYTHON RUNNER (tests/run_tests.sh)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
write=0
[ "${1:-}" = --write-golden ] && write=1
# shellcheck disable=SC2086
run() { $RUNNER "$BUILD/ml_run" "$@"; }
need_exe "$BUILD/ml_run"
if ! have_numpy || ! "$PYTHON" -c 'import gguf' 2>/dev/null; then
    skip "arch: no python3 with numpy and gguf to write the test models (pip install numpy gguf)"
    finish
fi
prompt="Once upon a time, the sea"
# The converted models are kept between runs (one folder per parallel matrix
# slot, as test_e2e.sh's), named by a hash of the tools that make them.
key=$(cat tools/gguf_random.py tools/gguf_out.py tools/gguf_in.py tools/convert.py tools/mlb.py | sha256sum | cut -c1-16)
mdir=${ML_E2E_MODELS:-build/models}/arch-$key
mkdir -p "$mdir"
for fam in llama3 qwen2 qwen3; do
    for wt in q8_0 q4_0; do
        m="$mdir/${fam}_$wt.mlb"
        [ -s "$tmp/$fam.gguf" ] || [ -s "$m" ] || "$PYTHON" tools/gguf_random.py --qtype q8_0 --seed 7 "$fam" "$tmp/$fam.gguf" >/dev/null
        if [ ! -s "$m" ] && ! "$PYTHON" tools/convert.py "$tmp/$fam.gguf" "$m" --wtype "$wt" --tokenizer "$tmp/tok.bin" \
            >"$tmp/conv.txt" 2>&1; then
            bad "arch: $fam $wt: convert failed: $(tail -n 2 "$tmp/conv.txt")"
            continue
        fi
        run -m "$m" -i "$prompt" -n 32 --temp 0 --logits "$tmp/l.f32" --ids "$tmp/ids" >/dev/null 2>"$tmp/err"
        h=$(sha256sum "$tmp/l.f32" | cut -d' ' -f1)
        gold=tests/golden/arch_${fam}_$wt.sha256
        if [ "$write" = 1 ]; then echo "$h" >"$gold"; fi
        if [ -s "$tmp/l.f32" ] && [ "$h" = "$(cat "$gold" 2>/dev/null)" ]; then
            ok "arch: $fam $wt: one-file model (no -z), logits of 32 positions hash to $gold"
        else
            bad "arch: $fam $wt: logits hash $h, expected $(cat "$gold" 2>/dev/null) ($gold): $(tail -n 1 "$tmp/err")"
        fi
        run -m "$m" -i "$prompt" -n 32 --temp 0 -b 1 --logits "$tmp/b1.f32" >/dev/null 2>&1
        run -m "$m" -i "$prompt" -n 32 --temp 0 -b 5 --logits "$tmp/b5.f32" >/dev/null 2>&1
        if cmp -s "$tmp/l.f32" "$tmp/b1.f32" && cmp -s "$tmp/l.f32" "$tmp/b5.f32"; then
            ok "arch: $fam $wt: -b 1 and -b 5 give the same logits"
        else
            bad "arch: $fam $wt: -b 1 / -b 5 logits differ from the default batch"
        fi
    done
done
finish
