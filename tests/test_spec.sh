#!/usr/bin/env bash
# Speculative decoding in ml_run (--lookup N, --draft-model FILE [--draft N]):
# the ids, the text and the --logits file are byte for byte those of plain
# decoding, greedy and seeded (filters, repetition penalty), at -t 1/2/3,
# with prompts shorter and longer than the batch and a context that fills up
# mid-draft; drafts are accepted (the report line says how many); bad values
# and pairs that do not fit are refused with a message naming them: --lookup
# 0/-1/65, --draft without --draft-model, both drafters, a draft model of
# another vocab, with a shorter context, or with another tokenizer.
# env: BUILD ISA RUNNER PYTHON MODELS (set by tests/run_tests.sh), THREADS_BUILD
#   (this build with THREADS=pthread; make check makes it)
set -u
cd "$(dirname "$0")/.."
: "${THREADS_BUILD:=}"
. tests/sh_lib.sh
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
scratch
need_exe "$BUILD/ml_run"
SM=models/stories260K
M=(-m "$SM/stories260K_q8_0.mlb" -z "$SM/tok512.bin")
EXE=$BUILD/ml_run
# shellcheck disable=SC2086
run() { $RUNNER "$EXE" "${M[@]}" "$@"; }

# same WHAT "SPEC OPTIONS" RUN OPTIONS...: plain decoding, then with the
# speculation options; ids, text and logits compared; $tmp/b.err keeps the
# speculative run's report.
same() {
    local what=$1 spec=$2; shift 2
    rm -f "$tmp"/a.* "$tmp"/b.*
    run "$@" --ids "$tmp/a.ids" --logits "$tmp/a.f32" >"$tmp/a.txt" 2>/dev/null
    # shellcheck disable=SC2086
    run "$@" $spec --ids "$tmp/b.ids" --logits "$tmp/b.f32" >"$tmp/b.txt" 2>"$tmp/b.err"
    check "$what: ids, text and --logits identical to plain decoding" \
        "[ -s '$tmp/a.ids' ] && [ -s '$tmp/a.f32' ] && cmp -s '$tmp/a.ids' '$tmp/b.ids' && cmp -s '$tmp/a.f32' '$tmp/b.f32' && cmp -s '$tmp/a.txt' '$tmp/b.txt'"
}
accepted() { sed -n 's/.*accepted \([0-9]*\) .*/\1/p' "$tmp/b.err"; }

# ---- prompt lookup ---------------------------------------------------------------
PR=(-i "Once upon a time" -n 200)
same "lookup greedy" "--lookup 8" "${PR[@]}" --temp 0
check "lookup greedy: drafts accepted, reported next to tok/s" \
    "grep -q -- '--lookup: drafted [0-9]*, accepted [0-9]* (' '$tmp/b.err' && [ \"\$(accepted)\" -gt 20 ]"
same "lookup seeded" "--lookup 4" "${PR[@]}" -s 5
same "lookup seeded, filters and penalty" "--lookup 3" "${PR[@]}" -s 9 --temp 0.8 --top-k 40 --min-p 0.02 --repeat-penalty 1.2
same "lookup 1, greedy with a penalty" "--lookup 1" "${PR[@]}" --temp 0 --repeat-penalty 1.1
long="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big red ball"
same "lookup, a prompt longer than the batch (-b 5)" "--lookup 4" -i "$long" -n 160 --temp 0 -b 5
same "lookup, a one-token prompt" "--lookup 6" -n 120 -s 3
same "lookup, the context fills up mid-draft (-c 61 -n 0)" "--lookup 16" -i "Once upon a time" -c 61 -n 0 --temp 0
# -t 1/2/3 on the THREADS=pthread sibling (a THREADS=1 build refuses -t 2).
if [ -n "$THREADS_BUILD" ] && [ -x "$THREADS_BUILD/ml_run" ]; then
    EXE=$THREADS_BUILD/ml_run
    for t in 1 2 3; do same "lookup, -t $t" "--lookup 8" "${PR[@]}" -s 17 -t $t; done
    same "the model as its own draft, seeded, -t 2" "--draft-model $SM/stories260K_q8_0.mlb" "${PR[@]}" -s 4 -t 2
    EXE=$BUILD/ml_run
else
    skip "threads: no THREADS_BUILD (make check makes it): -t 2/3 not checked"
fi

# ---- draft models ----------------------------------------------------------------
same "the model as its own draft, greedy" "--draft-model $SM/stories260K_q8_0.mlb --draft 5" "${PR[@]}" --temp 0
check "the model as its own draft: every draft accepted" "grep -q -- '--draft-model: drafted [1-9][0-9]*, accepted [0-9]* (100.0%)' '$tmp/b.err'"
same "the model as its own draft, seeded" "--draft-model $SM/stories260K_q8_0.mlb" "${PR[@]}" -s 4

# ---- refusals ------------------------------------------------------------------------
refused() {  # what, exit code, message pattern, options...
    local what=$1 want=$2 pat=$3; shift 3
    run -n 20 "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    check "refused: $what (exit $want, '$pat')" "[ $rc = $want ] && grep -q -- '$pat' '$tmp/err'"
}
refused "--lookup 0" 2 "^ml_run: --lookup: expected a draft length in 1..64" --lookup 0
refused "--lookup -1" 2 "^ml_run: --lookup: expected a draft length" --lookup -1
refused "--lookup 65" 2 "^ml_run: --lookup: expected a draft length" --lookup 65
refused "--lookup x" 2 "^ml_run: --lookup: expected a draft length" --lookup x
refused "--draft 0" 2 "^ml_run: --draft: expected a draft length" --draft-model "$SM/stories260K_q8_0.mlb" --draft 0
refused "--draft without --draft-model" 2 "^ml_run: --draft: needs --draft-model" --draft 4
refused "--lookup and --draft-model" 2 "choose one drafter" --lookup 4 --draft-model "$SM/stories260K_q8_0.mlb"
refused "a missing draft model" 1 "loading the draft model failed" --draft-model "$tmp/none.mlb"

if [ ! -d "$MODELS" ] || ! have_numpy; then
    skip "draft models: $MODELS or python3 with numpy not found: other pairs not checked"
    finish
fi
# Converted models are kept where tests/test_e2e.sh keeps them (same names), so
# a row converts each once: conv SOURCE NAME WTYPE sets $mlb.
mdir=${ML_E2E_MODELS:-build/models}
mkdir -p "$mdir"
conv() {
    mlb=$mdir/$2_$3.mlb
    [ -f "$mlb" ] && [ "$mlb" -nt tools/convert.py ] && return
    "$PYTHON" tools/convert.py "$1" "$mlb.$$" --wtype "$3" >/dev/null 2>"$tmp/conv.err" && mv "$mlb.$$" "$mlb" ||
        cat "$tmp/conv.err"
}
conv "$MODELS/stories260K/stories260K.bin" stories260K q4_0
S4=$mlb
same "a Q4_0 draft of the model, greedy" "--draft-model $S4 --draft 6" "${PR[@]}" --temp 0
check "a Q4_0 draft: most drafts accepted" "[ \"\$(accepted)\" -gt 50 ]"
same "a Q4_0 draft, seeded with filters" "--draft-model $S4 --draft 3" "${PR[@]}" -s 8 --top-p 0.8 --repeat-penalty 1.1
same "a Q4_0 draft, the context fills up mid-draft" "--draft-model $S4 --draft 12" -c 57 -n 0 --temp 0
XS=$MODELS/stories260K-xs-retrain
conv "$XS/stories260K_xs_retrain.bin" stories260K-xs q8_0
XSM=$mlb
refused "a draft model with a shorter context (256 < 512)" 2 "context of 256 tokens is shorter than the model.s 512" \
    --draft-model "$XSM"
same "another model (same tokenizer) as the draft, -c 256" "--draft-model $XSM --draft-tokenizer $XS/tok512.bin" \
    "${PR[@]}" -s 2 -c 256
AI=$MODELS/aidreams260K
conv "$AI/aidreams260K.bin" aidreams260K q8_0
AIM=$mlb
refused "a draft model with another tokenizer of the same size" 2 "draft tokenizer: piece [0-9]* differs" \
    --draft-model "$AIM" --draft-tokenizer "$AI/tok512.bin" -c 128
# BPE pieces lie end to end, not NUL-terminated: the message shows the one
# piece that differs (the last, '<|im_end|>', its first byte changed), not
# the bytes after it (read past the buffer's end before).
if "$PYTHON" tools/gguf_random.py qwen2 "$tmp/q.gguf" >/dev/null 2>&1 &&
    "$PYTHON" tools/tokfile.py --gguf "$tmp/q.gguf" -o "$tmp/q.tok" >/dev/null 2>&1 &&
    "$PYTHON" -c 'import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
n, = struct.unpack_from("<I", d, 16)
p = 48
for i in range(n):
    l, _ = struct.unpack_from("<II", d, p)
    last, p = p, p + 8 + l
assert d[last + 8:last + 8 + l] == b"<|im_end|>", d[last + 8:last + 8 + l]
d[last + 8] ^= 1
open(sys.argv[2], "wb").write(d)' "$tmp/q.tok" "$tmp/q_last.tok" 2>"$tmp/py.err"; then
    ML_CACHE_DIR=$tmp/cache $RUNNER "$EXE" -m "$tmp/q.gguf" -i Hello -n 6 --draft-model "$tmp/q.gguf" \
        --draft-tokenizer "$tmp/q_last.tok" >/dev/null 2>"$tmp/err"
    rc=$?
    check "refused: a BPE draft tokenizer whose last piece differs: exit 2, that piece alone shown" \
        "[ $rc = 2 ] && grep -qF \"differs from the model's ('=|im_end|>' vs '<|im_end|>')\" '$tmp/err'"
else
    bad "a BPE draft tokenizer: making the files failed: $(head -c 300 "$tmp/py.err")"
fi
"$PYTHON" tools/gen_random.py "$tmp/v300.mlb" --vocab 300 --max-seq 512 >/dev/null 2>&1
refused "a draft model of another vocab" 2 "draft model: vocab 300, the model.s is 512" --draft-model "$tmp/v300.mlb"
finish
