#!/usr/bin/env bash
# ml_perplexity on the shipped stories260K and tests/data/ppl_story.txt: the
# PPL figure (golden, and the same for any -b), the layout it reports, the KL
# of a model against its own saved logits (exactly 0, top-1 100%), Q4_0
# against Q8_0 (KL > 0), and malformed input refused cleanly (exit 1 for a
# failed run, 2 for a bad command line, as in app/exit_codes.h). The PPL
# against the numpy reference is tests/test_perplexity.py.
# env: BUILD PYTHON MODELS RUNNER (set by tests/run_tests.sh / make test)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
BIN=$BUILD/ml_perplexity
need_exe "$BIN"
M=models/stories260K/stories260K_q8_0.mlb T=models/stories260K/tok512.bin TEXT=tests/data/ppl_story.txt
OK=(-m "$M" -z "$T" -f "$TEXT" -c 128)
# shellcheck disable=SC2086
run() { timeout 300 $RUNNER "$BIN" "$@" >"$tmp/out" 2>"$tmp/err"; }
ppl_line() { grep '^PPL = ' "$tmp/out"; }

# ---- the figure ----------------------------------------------------------------
# Every build gives the scalar build's logits bit for bit (kernels/canon.h),
# so the figure is one golden string.
GOLDEN_PPL="PPL = 4.3769 +/- 0.2853 (756 scored tokens, 12 chunks of 128)"
run "${OK[@]}"
rc=$?
if [ $rc -eq 0 ] && [ "$(ppl_line)" = "$GOLDEN_PPL" ]; then ok "stories260K Q8_0 on $TEXT: $GOLDEN_PPL"
else bad "stories260K Q8_0 on $TEXT: exit $rc, '$(ppl_line)', expected '$GOLDEN_PPL' $(head -c 300 "$tmp/err")"; fi
if grep -q '^scored: the second half of each chunk, tokens 65..127 (0-based; 63 per chunk, 756 in all)' "$tmp/out" &&
    grep -q '^text: .*: 1640 tokens (BOS first); 12 chunks of 128 (104 tokens after the last chunk unused)' "$tmp/out"; then
    ok "the output says which tokens are scored"
else bad "the output does not say which tokens are scored: $(head -c 400 "$tmp/out")"; fi
n=$(grep -c '^\[[0-9]*/12\] PPL ' "$tmp/out")
last=$(grep '^\[12/12\] PPL ' "$tmp/out" | cut -d' ' -f3)
if [ "$n" -eq 12 ] && [[ "$GOLDEN_PPL" == "PPL = $last "* ]]; then ok "a running value per chunk, the last one the final PPL"
else bad "running values: $n lines, last '$last'"; fi
# One chunk: "1 chunk", not "1 chunks" (the text's first 1000 bytes at -c 256: one chunk and a rest).
head -c 1000 "$TEXT" >"$tmp/short.txt"
run -m "$M" -z "$T" -f "$tmp/short.txt" -c 256
if [ $? -eq 0 ] && grep -q '; 1 chunk of 256 (' "$tmp/out" && grep -q '^PPL = .*, 1 chunk of 256)$' "$tmp/out"; then
    ok "one chunk: '1 chunk of 256' (singular)"
else bad "one chunk: not '1 chunk': $(grep -E '^(text|PPL)' "$tmp/out" | head -c 300) $(head -c 200 "$tmp/err")"; fi
# Batched prefill: every -b gives the logits of -b 1 (token by token) bit
# for bit, compared through the KL base file (every scored position's logits).
for b in 1 7 32 1000; do
    run "${OK[@]}" -b $b --kl-base "$tmp/b$b.kl"
    if [ "$(ppl_line)" = "$GOLDEN_PPL" ]; then ok "-b $b: the same figure"; else bad "-b $b: '$(ppl_line)'"; fi
done
run "${OK[@]}" --kl-base "$tmp/bdefault.kl"
if [ -s "$tmp/b1.kl" ] && cmp -s "$tmp/b1.kl" "$tmp/b7.kl" && cmp -s "$tmp/b1.kl" "$tmp/b32.kl" &&
    cmp -s "$tmp/b1.kl" "$tmp/b1000.kl" && cmp -s "$tmp/b1.kl" "$tmp/bdefault.kl"; then
    ok "-b 7/32/1000/default: every scored position's logits bit-identical to -b 1"
else bad "-b 7/32/1000/default: logits differ from -b 1"; fi
run --cpu-info
if [ $? -eq 0 ] && grep -q '^  this binary : ' "$tmp/out"; then ok "--cpu-info: the ISA guard's report (app/main_guard.c)"
else bad "--cpu-info: no guard report"; fi
# The guard itself: an x86 SIMD build on an emulated SSE2-only CPU refuses.
case ${ISA:-} in
sse41 | avx2 | avxvnni | avx512vnni)
    # (not for ASan builds: their shadow memory does not map under qemu-user, which kills them)
    if [[ $BUILD == *-san* ]]; then
        skip "the ISA guard under qemu64: an ASan build does not run under qemu-user"
    elif [ -z "$RUNNER" ] && command -v qemu-x86_64 >/dev/null; then
        qemu-x86_64 -cpu qemu64 "$BIN" "${OK[@]}" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc -eq 3 ] && grep -q "built for $ISA but" "$tmp/err" && [ ! -s "$tmp/out" ]; then
            ok "the ISA guard refuses the $ISA build on an SSE2-only CPU (qemu64): exit 3"
        else bad "under qemu-x86_64 -cpu qemu64: exit $rc, $(head -c 200 "$tmp/err")"; fi
    fi ;;
esac
run --help
if [ $? -eq 0 ] && grep -q '^usage: ml_perplexity' "$tmp/out" && grep -q 'only its second half is scored' "$tmp/out"; then
    ok "--help: usage on stdout, says which tokens are scored, exit 0"
else bad "--help"; fi

# ---- KL against saved logits ----------------------------------------------------
K=$tmp/base.kl
run "${OK[@]}" --kl-base "$K"
if [ $? -eq 0 ] && grep -q "^KL base: saving this model's logits to '$K' (it did not exist)" "$tmp/out" &&
    [ "$(stat -c %s "$K")" -eq $((64 + 756 * 512 * 4)) ] && [ ! -e "$K.tmp" ]; then
    ok "--kl-base on a new file saves 756 x 512 logits after a 64-byte header"
else bad "--kl-base save: $(head -c 300 "$tmp/err") $(tail -n 2 "$tmp/out")"; fi
run "${OK[@]}" --kl-base "$K"
if [ $? -eq 0 ] && grep -q '^mean KL divergence (base || this) = 0.000000 +/- 0.000000$' "$tmp/out" &&
    grep -q '^top-1 agreement = 100.00% (756 of 756 positions)$' "$tmp/out" &&
    grep -q '^PPL ratio (this / base) = 1.0000 (ln 0.000000)$' "$tmp/out" &&
    grep -q "^KL base: comparing with '$K'" "$tmp/out"; then
    ok "a model against its own logits: KL 0, top-1 100%, PPL ratio 1"
else bad "self KL: $(grep -E '^(KL|mean|top|PPL ratio)' "$tmp/out" | tr '\n' ' ') $(head -c 200 "$tmp/err")"; fi
before=$(sha256sum <"$K")
run "${OK[@]}" --kl-base "$K" --kl-save
if [ $? -eq 0 ] && grep -q "(--kl-save: replacing it)" "$tmp/out" && [ "$(sha256sum <"$K")" = "$before" ]; then
    ok "--kl-save rewrites the base (the same bytes again)"
else bad "--kl-save"; fi
# An existing base over 2 GiB (sparse: the base's header, then a hole) is
# read, and refused by its size; never taken for a missing file and replaced
# by this model's logits (a 32-bit build's plain stat() fails with EOVERFLOW).
head -c 64 "$K" >"$tmp/big.kl" && truncate -s $(((3 << 30) + 64)) "$tmp/big.kl" 2>/dev/null
if [ ! -s "$tmp/big.kl" ] || [ "$(du -k "$tmp/big.kl" | cut -f1)" -gt 65536 ]; then
    skip "a KL base over 2 GiB: no sparse files in $tmp"
else
    run "${OK[@]}" --kl-base "$tmp/big.kl"; rc=$?
    if [ $rc -eq 1 ] && grep -q "big.kl: $(((3 << 30) + 64)) bytes, expected" "$tmp/err" &&
        [ "$(stat -c %s "$tmp/big.kl")" -eq $(((3 << 30) + 64)) ]; then
        ok "a KL base over 2 GiB: compared with (its size refused, exit 1), not replaced"
    else
        bad "a KL base over 2 GiB: exit $rc, now $(stat -c %s "$tmp/big.kl") bytes: $(grep '^KL base' "$tmp/out") $(head -c 200 "$tmp/err")"
    fi
    rm -f "$tmp/big.kl"
fi
# A 32-bit build and a text over 4 GiB (sparse; its first 2000 bytes are text):
# refused by its size, not read modulo 2^32 (the first 2000 bytes, scored).
if [ "$(od -An -tx1 -j4 -N1 "$BIN" 2>/dev/null | tr -d ' ')" = 01 ]; then
    head -c 2000 "$TEXT" >"$tmp/t4g.txt" && truncate -s $(((4 << 30) + 2000)) "$tmp/t4g.txt" 2>/dev/null
    run -m "$M" -z "$T" -f "$tmp/t4g.txt" -c 64; rc=$?
    if [ $rc -eq 1 ] && grep -q "is $(((4 << 30) + 2000)) bytes, more than this build can hold" "$tmp/err"; then
        ok "32-bit build, a text over 4 GiB: refused by its size (exit 1)"
    else
        bad "32-bit build, a text over 4 GiB: exit $rc: $(tail -n 1 "$tmp/out") $(head -c 200 "$tmp/err")"
    fi
    rm -f "$tmp/t4g.txt"
fi
# A base whose logits are all 1e20 is uniform: its PPL is the vocab (log p
# kept apart from the huge maximum; summed, every p came out 1).
if [ -n "$PYTHON" ] && "$PYTHON" -c 'import numpy' 2>/dev/null; then
    "$PYTHON" -c 'import sys, numpy as np
d = bytearray(open(sys.argv[1], "rb").read())
d[64:] = np.full((len(d) - 64) // 4, 1e20, np.float32).tobytes()
open(sys.argv[2], "wb").write(d)' "$K" "$tmp/huge.kl"
    run "${OK[@]}" --kl-base "$tmp/huge.kl"
    if [ $? -eq 0 ] && grep -q '^KL base PPL = 512.0000' "$tmp/out"; then ok "a KL base of logits 1e20: uniform, PPL 512"
    else bad "a KL base of logits 1e20: $(grep -E '^KL base PPL' "$tmp/out") $(head -c 200 "$tmp/err")"; fi
else
    skip "a KL base of logits 1e20: no python3 with numpy"
fi

# Q4_0 against Q8_0: the real model if its original is here, else a random pair.
if [ -n "$PYTHON" ] && "$PYTHON" -c 'import numpy' 2>/dev/null; then
    if [ -f "$MODELS/stories260K/stories260K.bin" ]; then
        "$PYTHON" tools/convert.py "$MODELS/stories260K/stories260K.bin" "$tmp/q4.mlb" --wtype q4_0 >/dev/null 2>&1
        q8=$M q4=$tmp/q4.mlb qt=$T what="stories260K"
    else
        for wt in q8_0 q4_0; do
            "$PYTHON" tools/gen_random.py "$tmp/r_$wt.mlb" --dim 64 --n-layers 2 --n-heads 4 --n-kv-heads 2 \
                --hidden-dim 96 --vocab 512 --max-seq 128 --seed 3 --wtype $wt --tokenizer "$tmp/rt.bin" >/dev/null
        done
        q8=$tmp/r_q8_0.mlb q4=$tmp/r_q4_0.mlb qt=$tmp/rt.bin what="a random model (no $MODELS/stories260K)"
    fi
    run -m "$q8" -z "$qt" -f "$TEXT" -c 128 --kl-base "$tmp/q8.kl" && run -m "$q4" -z "$qt" -f "$TEXT" -c 128 --kl-base "$tmp/q8.kl"
    kl=$(sed -n 's/^mean KL divergence (base || this) = \([0-9.]*\) .*/\1/p' "$tmp/out")
    top1=$(sed -n 's/^top-1 agreement = \([0-9.]*\)%.*/\1/p' "$tmp/out")
    if [ -n "$kl" ] && awk -v k="$kl" -v t="$top1" 'BEGIN { exit !(k > 0 && t < 100 && t > 0) }'; then
        ok "$what Q4_0 against Q8_0: mean KL $kl > 0, top-1 $top1%"
    else bad "$what Q4_0 against Q8_0: KL '$kl', top-1 '$top1' $(head -c 300 "$tmp/err")"; fi
else
    skip "Q4_0 against Q8_0: no python3 with numpy to make a Q4_0 model"
fi

# ---- no allocation while scoring: the heap use is the same for 2x the text -------
# (valgrind counts every allocation, libc's included; plain x86 scalar build only:
# valgrind knows no AVX-512, and under qemu it cannot run.)
if [ "$BUILD" = build/scalar ] && [ -z "$RUNNER" ] && command -v valgrind >/dev/null; then
    head -c 300 "$TEXT" >"$tmp/t1.txt"
    head -c 600 "$TEXT" >"$tmp/t2.txt"
    for t in t1 t2; do
        run -m "$M" -z "$T" -f "$tmp/$t.txt" -c 16 --kl-base "$tmp/$t.kl"
        valgrind --error-exitcode=9 "$BIN" -m "$M" -z "$T" -f "$tmp/$t.txt" -c 16 --kl-base "$tmp/$t.kl" \
            >"$tmp/$t.out" 2>"$tmp/$t.vg"
        echo "rc=$?" >>"$tmp/$t.vg"
    done
    a=$(grep -o 'total heap usage: [0-9,]* allocs' "$tmp/t1.vg") b=$(grep -o 'total heap usage: [0-9,]* allocs' "$tmp/t2.vg")
    chunks=$(grep -c '^\[' "$tmp/t1.out")/$(grep -c '^\[' "$tmp/t2.out")
    if grep -q '^rc=0$' "$tmp/t1.vg" && grep -q '^rc=0$' "$tmp/t2.vg" && [ -n "$a" ] && [ "$a" = "$b" ]; then
        ok "valgrind: clean, and the same allocations ($a) for $chunks chunks (KL base streamed)"
    else bad "valgrind: '$a' vs '$b' for $chunks chunks, or errors: $(grep -m3 'ERROR SUMMARY\|Invalid' "$tmp/t1.vg" "$tmp/t2.vg")"; fi
elif [ "$BUILD" = build/scalar ] && [ -z "$RUNNER" ]; then
    skip "allocation count under valgrind: valgrind not installed"
else
    echo "# allocation count under valgrind: checked in the build/scalar row (this is $BUILD)"
fi

# ---- malformed input ------------------------------------------------------------
# expect WHAT RC TEXT ARGS...: exit RC and stderr containing TEXT.
expect() {
    local what=$1 want=$2 text=$3; shift 3
    run "$@"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then bad "$what: exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    elif ! grep -qF -- "$text" "$tmp/err"; then bad "$what: stderr lacks '$text': $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    else ok "$what (exit $rc)"; fi
}
expect "no arguments" 2 "missing -m model.mlb"
expect "no text" 2 "missing -f text.txt" -m "$M" -z "$T"
expect "unknown option" 2 "unknown option '--bogus'" "${OK[@]}" --bogus
expect "stray argument" 2 "unexpected argument 'x'" "${OK[@]}" x
for o in -m -z -f -c -b -t --kl-base; do expect "option $o without a value" 2 "option $o needs a value" "${OK[@]}" "$o"; done
for v in 3 0 -1 abc "" 1048577; do expect "-c '$v'" 2 "-c: expected a chunk size in 4..1048576, got '$v'" "${OK[@]}" -c "$v"; done
for v in 0 abc 1048577; do expect "-b '$v'" 2 "-b: expected a batch size in 1..1048576, got '$v'" "${OK[@]}" -b "$v"; done
expect "--kl-save alone" 2 "--kl-save needs --kl-base FILE" "${OK[@]}" --kl-save
expect "-c beyond the context" 2 "-c 1024 exceeds the model's context of 512 tokens" "${OK[@]}" -c 1024
expect "missing text" 1 "cannot read the text '$tmp/nope.txt'" -m "$M" -z "$T" -f "$tmp/nope.txt"
expect "directory as the text" 1 "not a regular file" -m "$M" -z "$T" -f "$tmp"
: >"$tmp/empty.txt"
expect "empty text" 1 "the text '$tmp/empty.txt' is empty" -m "$M" -z "$T" -f "$tmp/empty.txt"
printf 'Once upon\0 a time' >"$tmp/nul.txt"
expect "text with a NUL byte" 1 "is not text: it holds a NUL byte" -m "$M" -z "$T" -f "$tmp/nul.txt"
head -c 300 "$TEXT" >"$tmp/short.txt"
expect "text shorter than a chunk" 1 "fewer than one chunk of 512 (use a smaller -c)" -m "$M" -z "$T" -f "$tmp/short.txt"
expect "missing model" 1 "loading the model failed" -m "$tmp/nope.mlb" -z "$T" -f "$TEXT"
expect "model as the tokenizer" 1 "loading the tokenizer failed" -m "$M" -z "$M" -f "$TEXT"
# Damaged or mismatched KL bases; none may be replaced by the failed run.
head -c 10 "$K" >"$tmp/short.kl"
expect "KL base shorter than its header" 1 "10 bytes, shorter than the 64-byte header" "${OK[@]}" --kl-base "$tmp/short.kl"
head -c 1000 "$TEXT" >"$tmp/notkl.kl"
expect "KL base of another format" 1 "not a KL base file" "${OK[@]}" --kl-base "$tmp/notkl.kl"
head -c -4 "$K" >"$tmp/trunc.kl"
expect "truncated KL base" 1 "expected $((64 + 756 * 512 * 4)) (12 chunks x 63 positions x 512 logits)" "${OK[@]}" --kl-base "$tmp/trunc.kl"
expect "KL base made with another -c" 1 "made with -c 128; this run has -c 64" -m "$M" -z "$T" -f "$TEXT" -c 64 --kl-base "$K"
sed 's/Mia/Zoe/g' "$TEXT" >"$tmp/other.txt"
expect "KL base of another text" 1 "made from another text" -m "$M" -z "$T" -f "$tmp/other.txt" -c 128 --kl-base "$K"
cp "$K" "$tmp/nan.kl"
printf '\x00\x00\xc0\x7f' | dd of="$tmp/nan.kl" bs=1 seek=$((64 + 700 * 512 * 4 + 40)) conv=notrunc status=none
expect "KL base with a NaN logit" 1 "record 700, logit 10 is not finite" "${OK[@]}" --kl-base "$tmp/nan.kl"
expect "KL base is a directory" 1 "--kl-base '$tmp' is not a regular file" "${OK[@]}" --kl-base "$tmp"
expect "KL base in a missing folder" 1 "cannot write '$tmp/no/dir.kl'" "${OK[@]}" --kl-base "$tmp/no/dir.kl"
if cmp -s "$tmp/short.kl" <(head -c 10 "$K") && [ ! -e "$tmp/no" ] && [ -z "$(find "$tmp" -name '*.tmp')" ]; then
    ok "failed runs leave the KL files as they were and no .tmp behind"
else bad "a failed run changed a KL file or left a .tmp"; fi
if [ -n "$PYTHON" ] && "$PYTHON" -c 'import numpy' 2>/dev/null; then
    "$PYTHON" tools/gen_random.py "$tmp/v320.mlb" --vocab 320 --max-seq 128 --tokenizer "$tmp/t320.bin" >/dev/null
    expect "KL base of a model with another vocab" 1 "made with a model of vocab 512; this model's vocab is 320" \
        -m "$tmp/v320.mlb" -z "$tmp/t320.bin" -f "$TEXT" -c 128 --kl-base "$K"
fi
finish
