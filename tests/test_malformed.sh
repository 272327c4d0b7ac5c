#!/usr/bin/env bash
# Malformed input through the ml_run command line: every case is refused
# cleanly (exit 1 for a failed run, 2 for a bad command line, as in
# app/exit_codes.h) with a message naming the option, field or file, and no
# crash, hang or partial output; or, where the input is merely unusual (empty
# or invalid-UTF-8 prompt, -n equal to the context, -c above it), it works.
# Also: ml_run within `ulimit -v` 1 GiB thanks to -c.
# env: BUILD (default build/scalar), PYTHON, RUNNER (e.g. valgrind or qemu)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
BIN=$BUILD/ml_run
need_exe "$BIN"
if ! have_numpy; then
    skip "malformed CLI input: no python3 with numpy to make test models"
    finish
fi

# shellcheck disable=SC2086
run() { timeout 120 $RUNNER "$BIN" "$@" >"$tmp/out" 2>"$tmp/err"; }

# expect WHAT RC TEXT ARGS...: exit code RC, stderr containing TEXT (fixed
# string), and for a refusal (RC != 0) nothing on stdout, unless STREAMED=1
# (the text is printed as it is generated; a later failure cannot unsay it).
expect() {
    local what=$1 want=$2 text=$3; shift 3
    run "$@"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$what: exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    elif [ -n "$text" ] && ! grep -qF -- "$text" "$tmp/err"; then
        bad "$what: stderr lacks '$text': $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    elif [ "$want" -ne 0 ] && [ "${STREAMED:-0}" != 1 ] && [ -s "$tmp/out" ]; then
        bad "$what: refused but wrote to stdout: $(head -c 100 "$tmp/out")"
    else
        ok "$what (exit $rc)"
    fi
}

# ---- models: a random one with its tokenizer, and another vocab -----------
M=$tmp/m.mlb T=$tmp/t.bin
"$PYTHON" tools/gen_random.py "$M" --dim 64 --n-layers 2 --n-heads 4 --n-kv-heads 2 --hidden-dim 96 \
    --vocab 320 --max-seq 64 --seed 11 --tokenizer "$T" >/dev/null || { bad "gen_random"; finish; }
"$PYTHON" tools/gen_random.py "$tmp/other.mlb" --vocab 300 --tokenizer "$tmp/t300.bin" >/dev/null || bad "gen_random 300"
OK=(-m "$M" -z "$T")

# ---- command line: usage errors (exit 2) ------------------------------------
expect "no arguments" 2 "missing -m model.mlb"
expect "no tokenizer" 2 "missing -z tokenizer.bin" -m "$M"
expect "unknown option" 2 "unknown option '--bogus'" "${OK[@]}" --bogus
expect "unknown option with a value after it" 2 "unknown option '-x'" "${OK[@]}" -x 5
expect "unknown last option is unknown, not 'needs a value'" 2 "unknown option '--frobnicate'" "${OK[@]}" --frobnicate
expect "stray argument" 2 "unexpected argument 'extra' (options only: the model is -m FILE" "${OK[@]}" extra
expect "llama.cpp's -p PROMPT" 2 "-p: expected a number in [0, 1], got 'Once upon' (-p is top-p, as in llama2.c; the prompt is -i TEXT)" "${OK[@]}" -p "Once upon"
expect "-T (--temp) by its name" 2 "-T: expected a number >= 0, got 'hot'" "${OK[@]}" -T hot
for o in -m -z -i -n --temp --top-p -s -t -c -b --logits --ids; do
    expect "option $o without a value" 2 "option $o needs a value" "${OK[@]}" "$o"
done
for v in -1 abc "" 1.5 0x10 " -3" 1048577 99999999999999999999; do
    expect "-n '$v'" 2 "-n: expected a token count in 0..1048576, got '$v'" "${OK[@]}" -n "$v"
done
for v in 0 10000 -1 257 two ""; do
    expect "-t '$v'" 2 "-t: expected a thread count in 1..256, got '$v'" "${OK[@]}" -t "$v"
done
for v in -1 -0.5 abc nan inf 1e400 ""; do
    expect "--temp '$v'" 2 "--temp: expected a number >= 0, got '$v'" "${OK[@]}" --temp "$v"
done
for v in -0.1 1.5 abc nan ""; do
    expect "--top-p '$v'" 2 "--top-p: expected a number in [0, 1], got '$v'" "${OK[@]}" --top-p "$v"
done
for v in -1 " -1" abc 1.5 "" 18446744073709551616; do
    expect "-s '$v'" 2 "-s: expected an integer >= 0, got '$v'" "${OK[@]}" -s "$v"
done
for v in -1 -5 abc "" 1048577; do
    expect "-c '$v'" 2 "-c: expected a context length in 1..1048576 or 0 (the model's), got '$v'" "${OK[@]}" -c "$v"
done
for v in 0 -1 abc 1.5 "" 1048577 99999999999999999999; do
    expect "-b '$v'" 2 "-b: expected a prompt batch size in 1..1048576, got '$v'" "${OK[@]}" -b "$v"
done
expect "-b above the context is capped at it" 0 "prompt batch 64;" "${OK[@]}" -b 1048576 -n 8
expect "-n beyond the context" 2 "-n 65 exceeds the context of 64 tokens" "${OK[@]}" -n 65
expect "-n beyond a -c context" 2 "-n 32 exceeds the context of 16 tokens" "${OK[@]}" -c 16 -n 32
long=$(printf 'the %.0s' $(seq 1 200))
expect "prompt longer than the context" 2 "more than the context of 64" "${OK[@]}" -i "$long"
expect "prompt longer than -n" 2 "more than -n of 4" "${OK[@]}" -i "the the" -n 4
expect "prompt longer than a -c context" 2 "more than the context of 8" "${OK[@]}" -i "the the the" -c 8
run --help
if [ $? -eq 0 ] && grep -q '^usage: ml_run' "$tmp/out"; then ok "--help: usage on stdout, exit 0"; else bad "--help"; fi

# ---- files: runtime failures (exit 1) naming the file ------------------------
expect "missing model" 1 "$tmp/nope.mlb: cannot open" -m "$tmp/nope.mlb" -z "$T"
expect "missing tokenizer" 1 "tokenizer $tmp/nope.bin: cannot open" -m "$M" -z "$tmp/nope.bin"
expect "directory as the model" 1 "$tmp: a folder, not a file (a Hugging Face model folder converts with tools/convert.py" -m "$tmp" -z "$T"
expect "directory as the tokenizer" 1 "tokenizer $tmp: a folder, not a file" -m "$M" -z "$tmp"
expect "tokenizer as the model" 1 "magic: expected \"MLB1\"" -m "$T" -z "$T"
expect "model as the tokenizer" 1 "loading the tokenizer failed (ML_E_FORMAT)" -m "$M" -z "$M"
: >"$tmp/empty"
expect "empty model file" 1 "$tmp/empty: file is empty" -m "$tmp/empty" -z "$T"
expect "empty tokenizer file" 1 "loading the tokenizer failed (ML_E_FORMAT)" -m "$M" -z "$tmp/empty"
head -c 5000 "$M" >"$tmp/trunc.mlb"
expect "truncated model" 1 "truncated: tensor" -m "$tmp/trunc.mlb" -z "$T"
head -c 1000 "$T" >"$tmp/trunc.bin"
expect "truncated tokenizer" 1 "truncated file?" -m "$M" -z "$tmp/trunc.bin"
expect "tokenizer of another model" 1 "tokenizer $tmp/t300.bin has 300 tokens, model vocab is 320" -m "$M" -z "$tmp/t300.bin"
# BPE tokenizer files (model/bpe.h, tools/tokfile.py): 256 byte tokens, a few merges,
# then unused tokens up to the vocab; and damaged copies.
PYTHONPATH=tools "$PYTHON" - "$tmp" <<'PY' || bad "writing BPE tokenizer files"
import struct, sys
import tokfile
out = sys.argv[1]
toks = [bytes([b]) for b in range(256)] + [b"th", b"the", b"<|im_end|>"]
merges = [(ord("t"), ord("h"), 256), (256, ord("e"), 257)]
for n, name in ((320, "bpe.bin"), (300, "bpe300.bin")):
    tf = tokfile.TokFile("qwen2", toks, [1] * 258 + [3], merges, eos=258, eot=258)
    tf.pad_to(n)
    data = tf.to_bytes()
    open(f"{out}/{name}", "wb").write(data)
open(f"{out}/bpe_v2.bin", "wb").write(data[:4] + struct.pack("<I", 2) + data[8:])
open(f"{out}/bpe_cut.bin", "wb").write(data[:1000])
PY
expect "a BPE tokenizer file works" 0 "tok/s" -m "$M" -z "$tmp/bpe.bin" -i "the theme" -n 8 --temp 0
expect "BPE tokenizer of another vocab" 1 "300 tokens, but the model's vocab is 320" -m "$M" -z "$tmp/bpe300.bin"
expect "BPE tokenizer of version 2" 1 "version: expected 1, got 2" -m "$M" -z "$tmp/bpe_v2.bin" -i hi
expect "truncated BPE tokenizer" 1 "truncated file?" -m "$M" -z "$tmp/bpe_cut.bin" -i hi
expect "empty prompt, BPE without BOS" 2 "the prompt is empty" -m "$M" -z "$tmp/bpe.bin"
# ml_tokenize: its command line and files
TOKZ=$BUILD/ml_tokenize
if [ -x "$TOKZ" ]; then
    BIN=$TOKZ expect "ml_tokenize: no -m" 2 "missing -m model.mlb" -i hi
    BIN=$TOKZ expect "ml_tokenize: -i and -f" 2 "exactly one of -i TEXT and -f FILE" -m "$M" -z "$T" -i a -f "$T"
    BIN=$TOKZ expect "ml_tokenize: no text" 2 "exactly one of -i TEXT and -f FILE" -m "$M" -z "$T"
    BIN=$TOKZ expect "ml_tokenize: unknown option" 2 "unknown option --bogus" -m "$M" -z "$T" -i a --bogus
    BIN=$TOKZ expect "ml_tokenize: -z without a value" 2 "needs a value: -z" -m "$M" -i a -z
    BIN=$TOKZ expect "ml_tokenize: a directory as the text" 1 "cannot read the text" -m "$M" -z "$T" -f "$tmp"
    BIN=$TOKZ expect "ml_tokenize: no tokenizer" 2 "embeds no tokenizer: give a tokenizer file (-z FILE" -m "$M" -i a
    BIN=$TOKZ expect "ml_tokenize: BPE of another vocab" 1 "300 tokens, but the model's vocab is 320" -m "$M" -z "$tmp/bpe300.bin" -i a
    BIN=$TOKZ expect "ml_tokenize: a GGUF file as -z" 1 "is a GGUF file: as the model (-m) it brings its own tokenizer" \
        -m "$M" -z fuzz/corpus/gguf/llama_q8_0.gguf -i a
    BIN=$TOKZ run -m "$M" -z "$tmp/bpe.bin" -i "the <|im_end|>" --ids --special
    if [ "$(cat "$tmp/out")" = "257 32 258" ]; then ok "ml_tokenize --ids --special: 257 32 258"; else bad "ml_tokenize --ids --special: '$(cat "$tmp/out")'"; fi
    BIN=$TOKZ run -m "$M" -z "$tmp/bpe.bin" -i "the"
    if grep -qx "   257 -> 'the'" "$tmp/out"; then ok "ml_tokenize: '   257 -> 'the''"; else bad "ml_tokenize listing: '$(cat "$tmp/out")'"; fi
else
    bad "$TOKZ is missing"
fi
# Damaged copies of $M, by tools/mlb.py's layout: a NaN scale; finite scales
# and norm weights that overflow float32 in the forward pass (what the mlb
# fuzz target found: fuzz/regress/mlb/overflow_nan_quantize.mlb).
PYTHONPATH=tools "$PYTHON" - "$M" "$tmp" <<'PY'
import struct, sys
import mlb
src, out = sys.argv[1], sys.argv[2]
h, _ = mlb.read_mlb(src)
arrays = {name: (off, n) for name, off, n in mlb.layout(h)[0]}
data = open(src, "rb").read()
def damaged(name, array, values):
    d = bytearray(data)
    off, n = arrays[array]
    for i, v in values(n // 4):
        struct.pack_into("<f", d, off + 4 * i, v)
    open(f"{out}/{name}.mlb", "wb").write(d)
damaged("nan", "tok_emb.d", lambda n: [(7, float("nan"))])
damaged("overflow_residual", "tok_emb.d", lambda n: [(i, 3e38) for i in range(n)])
damaged("overflow_logits", "final_norm", lambda n: [(i, 3e38) for i in range(n)])
PY
# A model beyond a 32-bit address space (a sparse 5 GiB file, no disk used): a
# 32-bit build says so, with the way out; a 64-bit one maps it and finds no magic.
truncate -s 5G "$tmp/huge.mlb" 2>/dev/null || : >"$tmp/huge.mlb"
if [ ! -s "$tmp/huge.mlb" ]; then
    skip "5 GiB sparse model: truncate failed"
elif [ "$(od -An -tu1 -j4 -N1 "$BIN" | tr -d ' ')" = 1 ]; then  # ELF class 1: 32-bit
    expect "5 GiB model, 32-bit build" 1 "5368709120 bytes do not fit in this address space (a 32-bit process cannot hold it; use a 64-bit build)" -m "$tmp/huge.mlb" -z "$T"
    expect "5 GiB model, 32-bit build, --no-mmap" 1 "use a 64-bit build" -m "$tmp/huge.mlb" -z "$T" --no-mmap
else
    expect "5 GiB model, 64-bit build: mapped, refused for its content" 1 "magic: expected \"MLB1\"" -m "$tmp/huge.mlb" -z "$T" --mmap
fi
rm -f "$tmp/huge.mlb"
expect "NaN scale in the model" 1 "tensor tok_emb (layer -1) element 7 is nan" -m "$tmp/nan.mlb" -z "$T"
expect "embedding overflowing float32" 1 "residual element 0 is inf, not finite: the model's weights overflow float32" \
    -m "$tmp/overflow_residual.mlb" -z "$T" -n 8
expect "final norm overflowing float32" 1 "nan, not finite: the model's weights overflow float32" \
    -m "$tmp/overflow_logits.mlb" -z "$T" -n 8

# ---- unusual but valid input: it works ---------------------------------------
expect "empty prompt starts from BOS" 0 "tok/s" "${OK[@]}" -i "" -n 8 --temp 0 --ids "$tmp/ids"
if [ "$(head -n 1 "$tmp/ids" 2>/dev/null)" = 1 ]; then ok "empty prompt: first id is BOS"; else bad "empty prompt: ids $(head -c 40 "$tmp/ids")"; fi
expect "invalid UTF-8 prompt" 0 "tok/s" "${OK[@]}" -i $'\xff\xfe\x80 ab\xc3' -n 20 --temp 0
# BOS, the dummy-prefix space and 62 letters: 64 tokens (this vocab has no merges).
p62=$(printf 'a%.0s' $(seq 1 62))
expect "prompt filling the context, -n equal to it" 0 "ml_run: 64 tokens in" "${OK[@]}" -i "$p62" -n 64 --temp 0 --ids "$tmp/ids"
n=$(wc -l <"$tmp/ids")
if [ "$n" -eq 65 ]; then ok "-n 64: 64 positions and the token after the last"; else bad "-n 64: $n ids, expected 65"; fi
expect "prompt of context+1 tokens" 2 "the prompt is 65 tokens, more than the context of 64" "${OK[@]}" -i "a$p62" -n 64
expect "-n 0 is the whole context" 0 "tok/s" "${OK[@]}" -n 0 --temp 0
# -c above the model's context: accepted, no effect (the banner says context 64).
expect "-c above the context is accepted" 0 "context 64," "${OK[@]}" -c 100000 -n 0 --temp 0
expect "-c below the context caps it, said with the model's" 0 "context 16 (the model's 64: -c N raises it)," "${OK[@]}" -c 16 -n 0 --temp 0

# ---- output files: complete or absent -----------------------------------------
# --logits/--ids: a run that fails after creating one deletes it; nothing
# is generated when an output cannot be opened.
expect "--logits into a missing folder" 1 "cannot write '$tmp/no/dir/l.f32'" "${OK[@]}" -n 8 --logits "$tmp/no/dir/l.f32"
expect "--logits to a folder" 1 "cannot write '$tmp'" "${OK[@]}" -n 8 --logits "$tmp"
rm -f "$tmp/ids"
expect "--ids unwritable: --logits not left behind" 1 "cannot write '$tmp/no/ids'" "${OK[@]}" -n 8 --logits "$tmp/l.f32" --ids "$tmp/no/ids"
if [ ! -e "$tmp/l.f32" ]; then ok "--logits file removed after the --ids failure"; else bad "--logits file left behind"; fi
if [ -w /dev/full ]; then
    STREAMED=1 expect "--logits to a full disk (/dev/full)" 1 "writing '/dev/full' failed" "${OK[@]}" -n 64 --temp 0 --logits /dev/full --ids "$tmp/ids"
    if [ ! -e "$tmp/ids" ]; then ok "--ids file removed after the --logits write failure"; else bad "--ids left behind"; fi
    if [ -c /dev/full ]; then ok "/dev/full itself not removed"; else bad "/dev/full was removed"; fi
    # shellcheck disable=SC2086
    timeout 120 $RUNNER "$BIN" "${OK[@]}" -n 64 --temp 0 >/dev/full 2>"$tmp/err"; rc=$?
    if [ $rc -eq 1 ] && grep -q 'stdout failed' "$tmp/err"; then ok "stdout to a full disk: exit 1"; else bad "stdout to /dev/full: exit $rc $(head -c 200 "$tmp/err")"; fi
else
    skip "write errors: no writable /dev/full"
fi
expect "--ids to /dev/stdout works" 0 "tok/s" "${OK[@]}" -n 8 --temp 0 --ids /dev/stdout

# ---- resource limits: ulimit -v 1 GiB; the model's whole context does not fit ----
# A model with a 2^20-token context needs a ~2.3 GiB arena for all of it
# (-c 0; KV cache 2 GiB; more than a 32-bit build can address, which the
# loader says up front); by default the context is capped at 4096 tokens, and
# -c 256 caps it to a few MiB. Address-space limits do not apply under ASan
# (it reserves terabytes of shadow), valgrind or qemu.
"$PYTHON" tools/gen_random.py "$tmp/long.mlb" --dim 64 --n-layers 4 --n-heads 4 --n-kv-heads 4 \
    --hidden-dim 96 --vocab 320 --max-seq 1048576 --seed 3 >/dev/null || bad "gen_random long"
expect "a 2^20-token model: the default context is 4096, said with how to raise it" 0 \
    "context 4096 (the model's 1048576: -c N raises it)" -m "$tmp/long.mlb" -z "$T" -n 16 --temp 0
"$PYTHON" tools/gen_random.py "$tmp/long8k.mlb" --vocab 320 --max-seq 8192 --seed 3 >/dev/null || bad "gen_random long8k"
expect "-c 0 is the model's whole context (8192, not the default 4096)" 0 "context 8192, " \
    -m "$tmp/long8k.mlb" -z "$T" -c 0 -n 8 --temp 0
if [ -n "$RUNNER" ] || nm "$BIN" 2>/dev/null | grep -q __asan_init; then
    skip "ulimit -v: not meaningful under ${RUNNER:-ASan}"
else
    (ulimit -v 1048576; "$BIN" -m "$tmp/long.mlb" -z "$T" -c 0 -n 16 --temp 0 >"$tmp/out" 2>"$tmp/err"); rc=$?
    if [ $rc -eq 1 ] && grep -Eq 'arena: (cannot allocate|[0-9]+ bytes exceed this address space).*cap the context with -c' "$tmp/err"; then
        ok "ulimit -v 1 GiB, -c 0 of a 2^20 context: exit 1, the message suggests -c"
    else
        bad "ulimit -v 1 GiB, -c 0 of a 2^20 context: exit $rc: $(head -c 300 "$tmp/err")"
    fi
    (ulimit -v 1048576; "$BIN" -m "$tmp/long.mlb" -z "$T" -n 16 --temp 0 >"$tmp/out" 2>"$tmp/err"); rc=$?
    if [ $rc -eq 0 ] && grep -q 'context 4096 ' "$tmp/err"; then
        ok "ulimit -v 1 GiB, the default context: runs ($(grep -o 'arena [0-9.]* MiB' "$tmp/err"))"
    else
        bad "ulimit -v 1 GiB, the default context: exit $rc: $(head -c 300 "$tmp/err")"
    fi
    (ulimit -v 1048576; "$BIN" -m "$tmp/long.mlb" -z "$T" -c 256 -n 16 --temp 0 >"$tmp/out" 2>"$tmp/err"); rc=$?
    if [ $rc -eq 0 ] && grep -q 'context 256 ' "$tmp/err"; then
        ok "ulimit -v 1 GiB with -c 256: runs ($(grep -o 'arena [0-9.]* MiB' "$tmp/err"))"
    else
        bad "ulimit -v 1 GiB with -c 256: exit $rc: $(head -c 300 "$tmp/err")"
    fi
    # The arena before the values: a context that cannot be allocated is said
    # before the weights are read (a huge file's every byte), so a NaN in the
    # last norm is found only with a context that fits.
    "$PYTHON" - "$tmp/long.mlb" <<'PY' || bad "a NaN into long.mlb"
import struct, sys
sys.path.insert(0, "tools")
import mlb
path = sys.argv[1]
with open(path, "r+b") as f:
    h = mlb.unpack_header(f.read(mlb.HEADER_BYTES))
    name, off, n = [a for a in mlb.layout(h)[0] if a[0] == "final_norm"][0]
    f.seek(off)
    f.write(struct.pack("<f", float("nan")))
PY
    (ulimit -v 1048576; "$BIN" -m "$tmp/long.mlb" -z "$T" -c 0 -n 16 --temp 0 >"$tmp/out" 2>"$tmp/err"); rc=$?
    (ulimit -v 1048576; "$BIN" -m "$tmp/long.mlb" -z "$T" -c 256 -n 16 --temp 0 >"$tmp/out2" 2>"$tmp/err2"); rc2=$?
    if [ $rc -eq 1 ] && grep -q 'arena: ' "$tmp/err" && [ $rc2 -eq 1 ] && grep -q "final_norm" "$tmp/err2"; then
        ok "a NaN and a context that cannot be allocated: the arena is said first; with -c 256, the NaN"
    else
        bad "the arena before the values: exit $rc: $(head -c 200 "$tmp/err"); with -c 256: exit $rc2: $(head -c 200 "$tmp/err2")"
    fi
fi

# ---- files over 2 GiB (sparse): opened and judged by their header ----------
# A 32-bit build (i686, ARMv7) must open them with the large-file calls: a
# plain fopen() or stat() fails with EOVERFLOW ("Value too large for defined
# data type") before the loader could map the file or say why it is refused.
big=$tmp/big.mlb
head -c 256 "$M" >"$big" && truncate -s $(((2 << 30) + 4096)) "$big" 2>/dev/null
if [ "$(du -k "$big" 2>/dev/null | cut -f1)" -gt 65536 ] 2>/dev/null || [ ! -s "$big" ]; then
    skip "files over 2 GiB: no sparse files in $tmp"
else
    run -m "$big" -z "$T" -n 2 --mmap; rc=$?
    if [ $rc -eq 1 ] && ! grep -q 'Value too large' "$tmp/err" &&
        grep -Eq 'file size: expected [0-9]+ bytes for this header|mmap of [0-9]+ bytes failed' "$tmp/err"; then
        ok "a .mlb over 2 GiB: opened, its size refused by its header (exit 1)"
    else
        bad "a .mlb over 2 GiB: exit $rc: $(head -c 300 "$tmp/err")"
    fi
    printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/big.gguf" &&
        truncate -s $(((2 << 30) + 4096)) "$tmp/big.gguf"
    ML_CACHE_DIR=$tmp/cache run -m "$tmp/big.gguf" -n 2; rc=$?
    if [ $rc -eq 1 ] && ! grep -q 'Value too large' "$tmp/err" &&
        grep -Eq 'running the GGUF file .*GGUF|mmap of [0-9]+ bytes failed' "$tmp/err"; then
        ok "a GGUF over 2 GiB: read as a GGUF (exit 1, its metadata refused)"
    else
        bad "a GGUF over 2 GiB: exit $rc: $(head -c 300 "$tmp/err")"
    fi
    rm -f "$big" "$tmp/big.gguf"
fi
finish
