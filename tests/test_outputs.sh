#!/usr/bin/env bash
# Nothing lost (README, "Reliability"): every program that writes a file
# (ml_run --logits/--ids, ml_perplexity --kl-base/--kl-save, tools/convert.py's
# output and --tokenizer)
#   - refuses an output that is one of its inputs (by path, symlink or hard
#     link), before any work, naming both, and leaves the input as it was;
#   - on failure (a refused run, a write error) leaves an existing target as it
#     was and no temporary behind; on success replaces it and says so;
#   - leaves a user's OUT.tmp alone; writes through to /dev/null and a FIFO,
#     which stay what they are; refuses a directory and a write-protected file;
#   - killed (kill -9) at random points, leaves the target either the old file
#     or the complete new one; ended by a signal it can catch (Ctrl-C, Ctrl-\,
#     its text piped into a reader that is gone), the old file and no
#     temporary.
# env: BUILD (default build/scalar), PYTHON, MODELS, RUNNER
set -u
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${PYTHON:=python3}" "${MODELS:=../shared/models}" "${RUNNER:=}"
. tests/sh_lib.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RUN=$BUILD/ml_run PPL=$BUILD/ml_perplexity
for b in "$RUN" "$PPL"; do [ -x "$b" ] || { bad "$b not built"; finish; }; done
if [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
    skip "outputs: no python3 with numpy to make test models"
    finish
fi

# expect WHAT RC TEXT CMD...: exit code RC and TEXT (fixed string) in stderr.
expect() {
    local what=$1 want=$2 text=$3; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$what: exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    elif [ -n "$text" ] && ! grep -qF -- "$text" "$tmp/err" "$tmp/out"; then
        bad "$what: output lacks '$text': $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    else
        ok "$what (exit $rc)"
    fi
}
# same WHAT FILE COPY: FILE still holds COPY's bytes.
same() { if cmp -s "$2" "$3"; then ok "$1"; else bad "$1: $2 changed"; fi; }
# clean WHAT DIR: no temporary left in DIR (only the files the test made).
clean() {
    local left
    left=$(find "$2" -maxdepth 1 \( -name '*.part*' -o -name '.*.part' \) | head -3)
    if [ -z "$left" ]; then ok "$1: no temporary left"; else bad "$1: left behind $left"; fi
}
# limited CMD...: CMD with files capped at 4 KiB, so a longer write fails (EFBIG).
limited() { (ulimit -f 4; trap '' XFSZ; exec "$@"); }
# shellcheck disable=SC2206
R=($RUNNER)

# ---- a tiny model, its tokenizer, a text ---------------------------------
D=$tmp/d
mkdir -p "$D"
M=$D/m.mlb T=$D/t.bin X=$D/x.txt
"$PYTHON" tools/gen_random.py "$M" --dim 64 --n-layers 2 --n-heads 4 --n-kv-heads 2 --hidden-dim 96 \
    --vocab 320 --max-seq 64 --seed 11 --tokenizer "$T" >/dev/null || { bad "gen_random"; finish; }
for i in $(seq 40); do echo "once upon a time there was a little cat who liked the sun"; done >"$X"
cp "$M" "$tmp/m.copy"; cp "$T" "$tmp/t.copy"; cp "$X" "$tmp/x.copy"
ln -s m.mlb "$D/m.link"; ln "$M" "$D/m.hard"; ln -s t.bin "$D/t.link"; ln -s x.txt "$D/x.link"
RUNARGS=(-m "$M" -z "$T" -i "once upon a time there was a little cat who liked the sun" -n 0 --temp 0 -s 1)
PPLARGS=(-m "$M" -z "$T" -f "$X" -c 16)

# ---- ml_run: outputs that are inputs ---------------------------------------
for o in --logits --ids; do
    for p in "$M" "$D/m.link" "$D/m.hard"; do
        expect "ml_run inputs: $o onto the model ($(basename "$p"))" 2 "$o '$p' is the same file as the model -m" \
            "${R[@]}" "$RUN" "${RUNARGS[@]}" "$o" "$p"
    done
    expect "ml_run inputs: $o onto the tokenizer (link)" 2 "is the same file as the tokenizer -z '$T'" \
        "${R[@]}" "$RUN" "${RUNARGS[@]}" "$o" "$D/t.link"
done
expect "ml_run inputs: --no-mmap --logits onto the model" 2 "the same file as the model" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --no-mmap --logits "$M"
expect "ml_run inputs: --logits and --ids one file" 2 "are one file" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$tmp/both" --ids "$tmp/both"
expect "ml_run inputs: --logits and --ids one file, spelled two ways" 2 "are one file" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$tmp/both" --ids "$tmp/./both"
ln -s both "$tmp/both.link"
expect "ml_run inputs: --logits and --ids one file, through a link to a new file" 2 "are one file" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$tmp/both" --ids "$tmp/both.link"
rm -f "$tmp/both.link"
expect "ml_run inputs: an empty --ids name" 2 "--ids: the file name is empty" "${R[@]}" "$RUN" "${RUNARGS[@]}" --ids ""
cp "$M" "$D/draft.mlb"; cp "$T" "$D/draft.tok"; cp "$M" "$tmp/draft.copy"; cp "$T" "$tmp/dtok.copy"
expect "ml_run inputs: --logits onto the draft model" 2 "is the same file as the draft model --draft-model" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --draft-model "$D/draft.mlb" --logits "$D/draft.mlb"
expect "ml_run inputs: --ids onto the draft tokenizer" 2 "is the same file as the draft tokenizer --draft-tokenizer" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --draft-model "$D/draft.mlb" --draft-tokenizer "$D/draft.tok" --ids "$D/draft.tok"
same "ml_run inputs: the draft model is intact" "$D/draft.mlb" "$tmp/draft.copy"
same "ml_run inputs: the draft tokenizer is intact" "$D/draft.tok" "$tmp/dtok.copy"
RUNF=(-m "$M" -z "$T" -f "$X" -n 0 --temp 0 -s 1)
expect "ml_run inputs: --logits onto the prompt file -f (link)" 2 "is the same file as the prompt file -f '$X'" \
    "${R[@]}" "$RUN" "${RUNF[@]}" --logits "$D/x.link"
same "ml_run inputs: the model is intact" "$M" "$tmp/m.copy"
same "ml_run inputs: the tokenizer is intact" "$T" "$tmp/t.copy"
same "ml_run inputs: the prompt file is intact" "$X" "$tmp/x.copy"

# ---- ml_run: replacing, failing, devices -----------------------------------
O=$tmp/o
mkdir -p "$O"
"${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$tmp/l.ref" --ids "$tmp/i.ref" >/dev/null 2>&1 || bad "ml_run outputs: reference run"
for o in logits ids; do
    echo "old $o" >"$O/$o"; cp "$O/$o" "$tmp/$o.old"; echo "mine" >"$O/$o.tmp"
    expect "ml_run outputs: --$o over a file, -n beyond the context" 2 "-n 999 exceeds the context" \
        "${R[@]}" "$RUN" "${RUNARGS[@]}" -n 999 "--$o" "$O/$o"
    same "ml_run outputs: --$o kept after the refused run" "$O/$o" "$tmp/$o.old"
    expect "ml_run outputs: --$o with a tokenizer of another vocab" 1 "loading the tokenizer" \
        "${R[@]}" "$RUN" -m "$M" -z "$tmp/x.copy" "--$o" "$O/$o"
    same "ml_run outputs: --$o kept after the failed run" "$O/$o" "$tmp/$o.old"
    expect "ml_run outputs: --$o with stdout failing" 1 "writing the text to stdout failed" \
        bash -c 'exec "$@" >/dev/full' _ "${R[@]}" "$RUN" "${RUNARGS[@]}" "--$o" "$O/$o"
    same "ml_run outputs: --$o kept after stdout failed" "$O/$o" "$tmp/$o.old"
    expect "ml_run outputs: --$o replaced" 0 "--$o: replaced '$O/$o'" "${R[@]}" "$RUN" "${RUNARGS[@]}" "--$o" "$O/$o"
    same "ml_run outputs: --$o is the new file" "$O/$o" "$tmp/${o:0:1}.ref"
    same "ml_run outputs: the user's $o.tmp is untouched" "$O/$o.tmp" <(echo mine)
done
expect "ml_run outputs: --logits with a write error" 1 "--logits: writing '$O/logits' failed" \
    limited "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$O/logits"
same "ml_run outputs: --logits kept after the write error" "$O/logits" "$tmp/l.ref"
clean "ml_run outputs" "$O"
echo old >"$O/target"; ln -s target "$O/via"
expect "ml_run outputs: --logits through a symlink" 0 "" "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$O/via"
if [ -L "$O/via" ] && cmp -s "$O/target" "$tmp/l.ref"; then ok "ml_run outputs: the link stays, its file is new"
else bad "ml_run outputs: symlink replaced or its file not written"; fi
echo protected >"$O/ro"; chmod 444 "$O/ro"
expect "ml_run outputs: --ids a write-protected file" 1 "is write-protected (mode 0444); not replacing it" \
    "${R[@]}" "$RUN" "${RUNARGS[@]}" --ids "$O/ro"
same "ml_run outputs: the write-protected file is kept" "$O/ro" <(echo protected)
rm -f "$O/ro"
ln -s new-target "$O/dangling"
expect "ml_run outputs: --ids through a link to no file yet" 0 "" "${R[@]}" "$RUN" "${RUNARGS[@]}" --ids "$O/dangling"
if [ -L "$O/dangling" ] && cmp -s "$O/new-target" "$tmp/i.ref"; then ok "ml_run outputs: the dangling link stays, its file is made"
else bad "ml_run outputs: a dangling link replaced, or its file not written"; fi
# A regular file under /dev (a tmpfs like /dev/shm) is a file: replaced, not appended to.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    shm=$(mktemp /dev/shm/legacy-ml-test.XXXXXX)
    echo old >"$shm"
    expect "ml_run outputs: --ids a file under /dev/shm" 0 "replaced" "${R[@]}" "$RUN" "${RUNARGS[@]}" --ids "$shm"
    same "ml_run outputs: the /dev/shm file holds the ids alone" "$shm" "$tmp/i.ref"
    rm -f "$shm"
else
    skip "ml_run outputs: no writable /dev/shm"
fi
expect "ml_run devices: --logits /dev/null" 0 "" "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits /dev/null --ids /dev/null
if [ -c /dev/null ]; then ok "ml_run devices: /dev/null is still a device"; else bad "ml_run devices: /dev/null replaced"; fi
expect "ml_run devices: --logits and --ids both /dev/stdout, into a file" 0 "" \
    bash -c 'exec "$@" >"$0"' "$tmp/both.out" "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits /dev/stdout --ids /dev/stdout
expect "ml_run devices: --ids /dev/stdout" 0 "" "${R[@]}" "$RUN" "${RUNARGS[@]}" --ids /dev/stdout
if grep -qx 1 "$tmp/out"; then ok "ml_run devices: ids on stdout"; else bad "ml_run devices: no ids on stdout"; fi
mkfifo "$O/fifo"
cat "$O/fifo" >"$tmp/fifo.got" &
expect "ml_run devices: --logits into a FIFO" 0 "" "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$O/fifo"
wait
if [ -p "$O/fifo" ] && cmp -s "$tmp/fifo.got" "$tmp/l.ref"; then ok "ml_run devices: the FIFO got the logits and stays a FIFO"
else bad "ml_run devices: FIFO replaced or short"; fi
expect "ml_run devices: --logits a directory" 1 "it is a directory" "${R[@]}" "$RUN" "${RUNARGS[@]}" --logits "$O"
if [ -d "$O" ]; then ok "ml_run devices: the directory stays"; else bad "ml_run devices: directory replaced"; fi

# ---- ml_perplexity: --kl-base ---------------------------------------------
for p in "$M" "$D/m.link" "$D/m.hard"; do
    expect "ml_perplexity inputs: --kl-save onto the model ($(basename "$p"))" 2 \
        "--kl-base '$p' is the same file as the model -m" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$p" --kl-save
done
expect "ml_perplexity inputs: --kl-save onto the text (link)" 2 "is the same file as the text -f '$X'" \
    "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$D/x.link" --kl-save
expect "ml_perplexity inputs: --kl-save onto the tokenizer" 2 "is the same file as the tokenizer -z" \
    "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$T" --kl-save
same "ml_perplexity inputs: the model is intact" "$M" "$tmp/m.copy"
same "ml_perplexity inputs: the text is intact" "$X" "$tmp/x.copy"
same "ml_perplexity inputs: the tokenizer is intact" "$T" "$tmp/t.copy"
K=$O/kl
echo "old kl" >"$K"; cp "$K" "$tmp/kl.old"; echo mine >"$K.tmp"
expect "ml_perplexity outputs: --kl-save with a write error" 1 "write failed" limited "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$K" --kl-save
same "ml_perplexity outputs: the KL base kept after the write error" "$K" "$tmp/kl.old"
expect "ml_perplexity outputs: --kl-save replaces" 0 "(--kl-save: replacing it)" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$K" --kl-save
expect "ml_perplexity outputs: the new KL base compares" 0 "top-1 agreement = 100.00%" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$K"
same "ml_perplexity outputs: the user's kl.tmp is untouched" "$K.tmp" <(echo mine)
clean "ml_perplexity outputs" "$O"
expect "ml_perplexity outputs: an empty --kl-base name" 2 "--kl-base: the file name is empty" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base ""
expect "ml_perplexity devices: --kl-save /dev/null" 0 "saved" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base /dev/null --kl-save
if [ -c /dev/null ]; then ok "ml_perplexity devices: /dev/null is still a device"; else bad "ml_perplexity devices: /dev/null replaced"; fi
expect "ml_perplexity devices: --kl-base /dev/null to compare" 1 "is not a regular file" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base /dev/null
expect "ml_perplexity devices: --kl-save a directory" 1 "it is a directory" "${R[@]}" "$PPL" "${PPLARGS[@]}" --kl-base "$O" --kl-save

# ---- convert.py: output and --tokenizer -----------------------------------
CONV=("$PYTHON" tools/convert.py)
S260=$MODELS/stories260K/stories260K.bin
if [ ! -f "$S260" ]; then
    skip "convert: no $S260"
else
    C=$tmp/c
    mkdir -p "$C"
    cp "$S260" "$C/in.bin"; ln -s in.bin "$C/in.link"; ln "$C/in.bin" "$C/in.hard"
    for p in "$C/in.bin" "$C/in.link" "$C/in.hard"; do
        expect "convert inputs: the output is the input ($(basename "$p"))" 1 "the output $p is the same file as the input" \
            "${CONV[@]}" "$C/in.bin" "$p"
    done
    same "convert inputs: the input is intact" "$C/in.bin" "$S260"
    HF=$MODELS/stories260K-hf
    if [ -f "$HF/config.json" ]; then
        cp -r "$HF" "$C/hf"
        expect "convert inputs: the output is a file of the input folder" 1 "is the same file as the input $C/hf (a file in that folder)" \
            "${CONV[@]}" "$C/hf" "$C/hf/config.json"
        same "convert inputs: the folder's config.json is intact" "$C/hf/config.json" "$HF/config.json"
        rm -rf "$C/hf"
    fi
    "${CONV[@]}" "$C/in.bin" "$tmp/ref.mlb" >/dev/null 2>&1 || bad "convert outputs: reference conversion"
    echo old >"$C/out.mlb"; cp "$C/out.mlb" "$tmp/out.old"; echo mine >"$C/out.mlb.tmp"
    expect "convert outputs: a write error" 1 "convert: error:" limited "${CONV[@]}" "$C/in.bin" "$C/out.mlb"
    same "convert outputs: the output kept after the write error" "$C/out.mlb" "$tmp/out.old"
    head -c 5000 "$S260" >"$C/trunc.bin"
    expect "convert outputs: a truncated input" 1 "truncated" "${CONV[@]}" "$C/trunc.bin" "$C/out.mlb"
    same "convert outputs: the output kept after the refusal" "$C/out.mlb" "$tmp/out.old"
    expect "convert outputs: replaced" 0 "replaced the existing output $C/out.mlb" "${CONV[@]}" "$C/in.bin" "$C/out.mlb"
    same "convert outputs: the output is the new model" "$C/out.mlb" "$tmp/ref.mlb"
    same "convert outputs: the user's out.mlb.tmp is untouched" "$C/out.mlb.tmp" <(echo mine)
    echo protected >"$C/ro.mlb"; chmod 444 "$C/ro.mlb"
    expect "convert outputs: a write-protected output" 1 "is write-protected (mode 0444); not replacing it" \
        "${CONV[@]}" "$C/in.bin" "$C/ro.mlb"
    same "convert outputs: the write-protected file is kept" "$C/ro.mlb" <(echo protected)
    rm -f "$C/ro.mlb"
    expect "convert devices: output /dev/null" 0 "" "${CONV[@]}" "$C/in.bin" /dev/null
    if [ -c /dev/null ]; then ok "convert devices: /dev/null is still a device"; else bad "convert devices: /dev/null replaced"; fi
    expect "convert devices: output a directory" 1 "it is a directory" "${CONV[@]}" "$C/in.bin" "$C"
    clean "convert outputs" "$C"

    # GGUF: the tokenizer too (the gguf package makes the input).
    G=$C/s.gguf
    if "$PYTHON" -c "import sys; sys.path.insert(0, 'tests'); import numpy as np, test_gguf as t
c, m, w = t.small_model(np.random.RandomState(1)); t.write_gguf(sys.argv[1], m, w)" "$G" 2>/dev/null; then
        cp "$G" "$tmp/g.copy"
        expect "convert inputs: --tokenizer is the input" 1 "--tokenizer $G is the same file as the input" \
            "${CONV[@]}" "$G" "$C/s.mlb" --tokenizer "$G"
        ln -s s.gguf "$C/g.link"
        expect "convert inputs: --tokenizer is the input (link)" 1 "is the same file as the input" \
            "${CONV[@]}" "$G" "$C/s.mlb" --tokenizer "$C/g.link"
        expect "convert inputs: the default tokenizer path is the input" 1 "the tokenizer $C/g.tokenizer.bin is the same file as the input" \
            bash -c 'ln -sf s.gguf "$1/g.tokenizer.bin" && shift && exec "$@"' _ "$C" "${CONV[@]}" "$G" "$C/g.mlb"
        same "convert inputs: the GGUF is intact" "$G" "$tmp/g.copy"
        echo "old model" >"$C/s.mlb"; echo "old tok" >"$C/s.tokenizer.bin"
        cp "$C/s.mlb" "$tmp/sm.old"; cp "$C/s.tokenizer.bin" "$tmp/st.old"
        expect "convert outputs: the tokenizer cannot be written" 1 "convert: error:" \
            "${CONV[@]}" "$G" "$C/s.mlb" --tokenizer "$C/no/such/dir/t.bin"
        same "convert outputs: the model kept when the tokenizer fails" "$C/s.mlb" "$tmp/sm.old"
        expect "convert outputs: GGUF with a write error" 1 "convert: error:" limited "${CONV[@]}" "$G" "$C/s.mlb"
        same "convert outputs: the model kept after the write error" "$C/s.mlb" "$tmp/sm.old"
        same "convert outputs: the tokenizer kept after the write error" "$C/s.tokenizer.bin" "$tmp/st.old"
        expect "convert outputs: the default tokenizer replaced, and said" 0 \
            "replaced the existing tokenizer (written beside the model" "${CONV[@]}" "$G" "$C/s.mlb"
        expect "convert outputs: the converted GGUF runs" 0 "" "${R[@]}" "$RUN" -m "$C/s.mlb" -z "$C/s.tokenizer.bin" -n 4 --temp 0
        clean "convert outputs (GGUF)" "$C"
    else
        skip "convert: GGUF cases: no gguf package"
    fi
fi

# ---- kill -9 at random points: the old file or the complete new one --------
# kills N WHAT TARGET NEWREF SECONDS CMD...: N runs of CMD, each killed after
# a random part of SECONDS (a full run's time, 0.3..1.2 of it).
kills() {
    local n=$1 what=$2 target=$3 ref=$4 secs=$5 i old=0 new=0 broken=0 d pid; shift 5
    for ((i = 0; i < n; i++)); do
        echo "old content $i" >"$target"; cp "$target" "$tmp/kill.old"
        "$@" >/dev/null 2>&1 &
        pid=$!
        d=$(awk -v s="$secs" -v r="$RANDOM" 'BEGIN { printf "%.3f", s * (0.3 + 0.9 * r / 32767) }')
        sleep "$d"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        if cmp -s "$target" "$tmp/kill.old"; then old=$((old + 1))
        elif cmp -s "$target" "$ref"; then new=$((new + 1))
        else broken=$((broken + 1)); fi
        find "$(dirname "$target")" -maxdepth 1 -name '.*.part' -delete 2>/dev/null
        find "$(dirname "$target")" -maxdepth 1 -name '*.part-*' -delete 2>/dev/null
    done
    if [ "$broken" -eq 0 ]; then ok "kill -9: $what: $n kills, target old $old, new $new times"
    else bad "kill -9: $what: $broken of $n kills left a partial target (old $old, new $new)"; fi
}
# seconds CMD...: wall time of one run.
seconds() {
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
K9=$tmp/k
mkdir -p "$K9"
BIG=$tmp/big.mlb
if [ -f "$S260" ] && [ -s "$tmp/ref.mlb" ]; then
    cp "$tmp/ref.mlb" "$BIG"
    s=$(seconds "${CONV[@]}" "$S260" "$K9/conv.ref")
    kills 16 "convert.py" "$K9/conv.mlb" "$K9/conv.ref" "$s" "${CONV[@]}" "$S260" "$K9/conv.mlb"
    LRUN=(-m "$BIG" -z "$MODELS/stories260K/tok512.bin" -n 256 --temp 0 -s 1)
else
    cp "$M" "$BIG"
    LRUN=(-m "$BIG" -z "$T" -n 64 --temp 0 -s 1)
fi
s=$(seconds "${R[@]}" "$RUN" "${LRUN[@]}" --logits "$K9/logits.ref")
kills 16 "ml_run --logits" "$K9/logits" "$K9/logits.ref" "$s" "${R[@]}" "$RUN" "${LRUN[@]}" --logits "$K9/logits"

# ---- SIGINT (Ctrl-C), SIGQUIT (Ctrl-\\) at random points: the old file, no
# temporary beside it. Started from Python with the signal at its default (a
# background job of this script would ignore SIGINT), no core file.
# sigs N SIG TARGET SECONDS CMD...
sigs() {
    local n=$1 sig=$2 target=$3 secs=$4 i left bad_rc=0 old=0; shift 4
    for ((i = 0; i < n; i++)); do
        echo "old content $i" >"$target"; cp "$target" "$tmp/int.old"
        "$PYTHON" -c 'import random, resource, signal, subprocess, sys, time
sig = getattr(signal, sys.argv[1])
def child():
    signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
p = subprocess.Popen(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child)
time.sleep(float(sys.argv[2]) * random.uniform(0.2, 0.8))
p.send_signal(sig)
sys.exit(0 if p.wait() in (0, -sig) else 1)' "$sig" "$secs" "$@" --logits "$target" || bad_rc=$((bad_rc + 1))
        cmp -s "$target" "$tmp/int.old" && old=$((old + 1))
    done
    left=$(find "$(dirname "$target")" -maxdepth 1 -name '*.part-*' | head -3)
    if [ "$bad_rc" -eq 0 ] && [ -z "$left" ]; then ok "$sig: ml_run --logits: $n interrupts, no temporary left (the old file $old times)"
    else bad "$sig: ml_run --logits: $bad_rc runs not ended by the signal, left behind: $left"; fi
}
sigs 8 SIGINT "$K9/int-logits" "$s" "${R[@]}" "$RUN" "${LRUN[@]}"
sigs 4 SIGQUIT "$K9/quit-logits" "$s" "${R[@]}" "$RUN" "${LRUN[@]}"

# ---- the text piped into a reader that is gone (`| head`): SIGPIPE at the
# first token, the old file, no temporary beside it
echo "old content" >"$K9/pipe-logits"; cp "$K9/pipe-logits" "$tmp/pipe.old"
"${R[@]}" "$RUN" "${LRUN[@]}" --logits "$K9/pipe-logits" 2>/dev/null | true
rc=${PIPESTATUS[0]}
left=$(find "$K9" -maxdepth 1 -name 'pipe-logits.part-*' | head -3)
if [ "$rc" -eq 141 ] && [ -z "$left" ] && cmp -s "$K9/pipe-logits" "$tmp/pipe.old"; then
    ok "SIGPIPE: ml_run --logits piped into a reader that is gone: ended by the signal, the old file, no temporary"
else
    bad "SIGPIPE: ml_run --logits | true: exit $rc (141: SIGPIPE), left behind: $left"
fi
finish
