#!/usr/bin/env bash
# End to end (DESIGN §7.3): a random tiny model and the real models of
# ../shared/models, run through ml_run. Checks determinism, mmap vs read
# builds, threads, the stories260K golden output, and logits and greedy
# tokens bit for bit against the reference: the native scalar build.
# env: BUILD ISA PYTHON MODELS RUNNER ML_PLAN (set by tests/run_tests.sh), and the
#   sibling builds that make check and tests/matrix.sh make first:
#   REF_BUILD      the native scalar build (runs without RUNNER: on an ARM row
#                  it is the x86 build, the one the golden hashes come from)
#   NOMMAP_BUILD   this build with ML_NO_MMAP=1 ("-": not on this row, by tests/matrix.sh's plan)
#   THREADS_BUILD  this build with THREADS=pthread (the default: often BUILD itself)
#   SINGLE_BUILD   this build with THREADS=1 (no thread pool; "-" as for NOMMAP_BUILD)
set -u
cd "$(dirname "$0")/.."
: "${REF_BUILD:=}" "${NOMMAP_BUILD:=}" "${THREADS_BUILD:=}" "${SINGLE_BUILD:=}"
# The further qemu CPUs (tests/plan.txt's qemu column) and the valgrind suites
# run this test after a full row of the same code has run it whole: there it
# compares fewer batch sizes and thread counts (7 and the default, 2 threads),
# and the greedy ids over a context capped at 128 tokens, not the whole one; every
# check still runs, each on less. Their time is most of CI's tail.
quick=0
case "${ML_PLAN:-}" in qemu | vg) quick=1 ;; esac
. tests/sh_lib.sh
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

scratch
mdir=${ML_E2E_MODELS:-build/models}  # converted models, kept between runs (one per parallel matrix slot)
mkdir -p "$mdir"
# shellcheck disable=SC2086
run() { $RUNNER "$BUILD/ml_run" "$@"; }

if ! have_numpy; then
    skip "e2e: no python3 with numpy to make test models (pip install numpy)"
    finish
fi

# sibling NAME DIR: DIR holds an ml_run, or the checks that need it are skipped, loudly.
sibling() {
    [ "$2" = - ] && return 1 # the matrix builds this sibling on the portable rows only (tests/matrix.sh)
    [ -n "$2" ] && [ -x "$2/ml_run" ] && return 0
    skip "e2e: no $1 build ('$2'): run through make check or tests/matrix.sh; its checks are not run"
    return 1
}
have_ref=0 have_nommap=0 have_threads=0 have_single=0
sibling "reference (REF_BUILD)" "$REF_BUILD" && have_ref=1
sibling "ML_NO_MMAP=1 (NOMMAP_BUILD)" "$NOMMAP_BUILD" && have_nommap=1
sibling "THREADS=pthread (THREADS_BUILD)" "$THREADS_BUILD" && have_threads=1
sibling "THREADS=1 (SINGLE_BUILD)" "$SINGLE_BUILD" && have_single=1

# Compare this build with the reference on model $1 / tokenizer $2: the
# logits of 16 teacher-forced+generated steps bit for bit, and the greedy ids.
compare_with_scalar() {
    local name=$1 model=$2 tok=$3 prompt=$4
    if [ "$have_ref" = 0 ] || [ "$(cd "$BUILD" && pwd)" = "$(cd "$REF_BUILD" && pwd)" ]; then return; fi
    "$REF_BUILD/ml_run" -m "$model" -z "$tok" -i "$prompt" -n 16 --temp 0 --logits "$tmp/ref.f32" >/dev/null 2>&1
    run -m "$model" -z "$tok" -i "$prompt" -n 16 --temp 0 --logits "$tmp/isa.f32" >/dev/null 2>&1
    check "$name: logits of 16 steps bit-identical to the scalar reference (kernels/canon.h)" \
        "[ -s '$tmp/ref.f32' ] && cmp -s '$tmp/isa.f32' '$tmp/ref.f32'"
    local cap=() span="the whole context"
    [ "$quick" = 1 ] && cap=(-c 128) span="the context capped at 128"
    "$REF_BUILD/ml_run" -m "$model" -z "$tok" -i "$prompt" -n 0 "${cap[@]}" --temp 0 --ids "$tmp/ref.ids" >/dev/null 2>&1
    run -m "$model" -z "$tok" -i "$prompt" -n 0 "${cap[@]}" --temp 0 --ids "$tmp/isa.ids" >/dev/null 2>&1
    check "$name: greedy tokens identical to scalar over $span ($(wc -l <"$tmp/ref.ids") tokens)" \
        "[ -s '$tmp/ref.ids' ] && cmp -s '$tmp/ref.ids' '$tmp/isa.ids'"
}

# Batched prompt (ml_run -b, model/prefill.c): batches of 3, 7, 16, the
# default, and larger than the prompt give the logits of every position and
# the greedy ids of token by token (-b 1), bit for bit, with --logits (every
# position's logits) and without (only the last one computed); and so does
# every thread count of the THREADS=pthread build. $5: the prompt's length,
# for the messages; $6: -n (positions run; a few beyond the prompt, to keep
# qemu rows short).
compare_batches() {
    local name=$1 model=$2 tok=$3 prompt=$4 n_prompt=$5 steps=$6 b t diff="" sizes="3 7 16 default 1000" counts="1 2 3"
    [ "$quick" = 1 ] && sizes="7 default" counts=2
    run -m "$model" -z "$tok" -i "$prompt" -n "$steps" --temp 0 -b 1 --logits "$tmp/b1.f32" --ids "$tmp/b1.ids" >/dev/null 2>&1
    # shellcheck disable=SC2086
    for b in $sizes; do
        local bo=(-b "$b"); [ "$b" = default ] && bo=()
        run -m "$model" -z "$tok" -i "$prompt" -n "$steps" --temp 0 "${bo[@]}" --logits "$tmp/bn.f32" --ids "$tmp/bn.ids" >/dev/null 2>&1
        { cmp -s "$tmp/b1.f32" "$tmp/bn.f32" && cmp -s "$tmp/b1.ids" "$tmp/bn.ids"; } || diff="$diff -b $b"
        run -m "$model" -z "$tok" -i "$prompt" -n "$steps" --temp 0 "${bo[@]}" --ids "$tmp/bn.ids" >/dev/null 2>&1
        cmp -s "$tmp/b1.ids" "$tmp/bn.ids" || diff="$diff -b $b (last logits only)"
    done
    check "$name: a $n_prompt-token prompt at -b ${sizes// //}: logits and greedy ids of -b 1, bit for bit${diff:+; differ:$diff}" \
        "[ -s '$tmp/b1.f32' ] && [ -z '$diff' ]"
    [ "$have_threads" = 1 ] || return 0
    # shellcheck disable=SC2086
    for t in $counts; do
        for b in 7 default; do
            local bo=(-b "$b"); [ "$b" = default ] && bo=()
            # shellcheck disable=SC2086
            $RUNNER "$THREADS_BUILD/ml_run" -m "$model" -z "$tok" -i "$prompt" -n "$steps" --temp 0 -t $t "${bo[@]}" \
                --logits "$tmp/bt.f32" --ids "$tmp/bt.ids" >/dev/null 2>&1
            { cmp -s "$tmp/b1.f32" "$tmp/bt.f32" && cmp -s "$tmp/b1.ids" "$tmp/bt.ids"; } || diff="$diff -t $t -b $b"
        done
    done
    check "$name: THREADS=pthread build, -t ${counts// //} at -b 7 and the default: logits and ids of -b 1${diff:+; differ:$diff}" \
        "[ -z '$diff' ]"
}

# ---- a random tiny model (no ../shared needed) --------------------------
for wt in q8_0 q4_0; do
    m="$mdir/e2e_random_$wt.mlb" t="$mdir/e2e_random_tok.bin"
    [ -f "$m" ] || "$PYTHON" tools/gen_random.py "$m" --dim 64 --n-layers 2 --n-heads 4 --n-kv-heads 2 \
        --hidden-dim 96 --vocab 320 --max-seq 64 --wtype "$wt" --seed 5 --unshared --tokenizer "$t" >/dev/null \
        || bad "gen_random $wt"
    a=$(run -m "$m" -z "$t" -i "hello" -n 40 --temp 0 2>/dev/null); rc=$?
    b=$(run -m "$m" -z "$t" -i "hello" -n 40 --temp 0 2>/dev/null)
    check "random $wt: greedy run succeeds and repeats exactly" "[ $rc -eq 0 ] && [ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"
    a=$(run -m "$m" -z "$t" -n 40 --temp 0.9 --top-p 0.8 -s 7 2>/dev/null)
    b=$(run -m "$m" -z "$t" -n 40 --temp 0.9 --top-p 0.8 -s 7 2>/dev/null)
    c=$(run -m "$m" -z "$t" -n 40 --temp 0.9 --top-p 0.8 -s 8 2>/dev/null)
    check "random $wt: seeded sampling repeats; another seed differs" "[ \"\$a\" = \"\$b\" ] && [ \"\$a\" != \"\$c\" ]"
    run -m "$m" -z "$t" -i "hello" -n 40 --temp 0 --mmap --logits "$tmp/mmap.f32" >/dev/null 2>&1
    run -m "$m" -z "$t" -i "hello" -n 40 --temp 0 --no-mmap --logits "$tmp/read.f32" >/dev/null 2>&1
    check "random $wt: mmap and --no-mmap give bit-identical logits" \
        "[ -s '$tmp/mmap.f32' ] && cmp -s '$tmp/mmap.f32' '$tmp/read.f32'"
    if [ "$have_nommap" = 1 ]; then
        # shellcheck disable=SC2086
        $RUNNER "$NOMMAP_BUILD/ml_run" -m "$m" -z "$t" -i "hello" -n 40 --temp 0 --logits "$tmp/nommap.f32" >/dev/null 2>&1
        check "random $wt: the ML_NO_MMAP=1 build gives bit-identical logits" \
            "[ -s '$tmp/mmap.f32' ] && cmp -s '$tmp/mmap.f32' '$tmp/nommap.f32'"
    fi
    n=$(run -m "$m" -z "$t" -n 0 --temp 0 --ids "$tmp/full.ids" 2>&1 >/dev/null | grep -c "tok/s")
    check "random $wt: -n 0 runs to the end of the context and stops cleanly" "[ $n -eq 1 ] && [ \$(wc -l <'$tmp/full.ids') -le 65 ]"
    compare_with_scalar "random $wt" "$m" "$t" "hello"
    compare_batches "random $wt" "$m" "$t" "hello there, a prompt of some tokens" 38 0
    # Threads split rows and heads; every split must give the same bits.
    if [ "$have_threads" = 1 ]; then
        for n in 1 2 3 8; do
            # shellcheck disable=SC2086
            $RUNNER "$THREADS_BUILD/ml_run" -m "$m" -z "$t" -i "hello" -n 40 --temp 0 -t $n --logits "$tmp/t$n.f32" >/dev/null 2>&1
        done
        check "random $wt: THREADS=pthread build, -t 1/2/3/8 bit-identical to each other and to this build's default" \
            "[ -s '$tmp/t1.f32' ] && cmp -s '$tmp/t1.f32' '$tmp/t2.f32' && cmp -s '$tmp/t1.f32' '$tmp/t3.f32' && cmp -s '$tmp/t1.f32' '$tmp/t8.f32' && cmp -s '$tmp/t1.f32' '$tmp/mmap.f32'"
    fi
    if [ "$have_single" = 1 ]; then
        # shellcheck disable=SC2086
        $RUNNER "$SINGLE_BUILD/ml_run" -m "$m" -z "$t" -i "hello" -n 40 --temp 0 --logits "$tmp/single.f32" >/dev/null 2>&1
        check "random $wt: the THREADS=1 build (no thread pool) gives bit-identical logits" \
            "[ -s '$tmp/mmap.f32' ] && cmp -s '$tmp/mmap.f32' '$tmp/single.f32'"
        # shellcheck disable=SC2086
        msg=$($RUNNER "$SINGLE_BUILD/ml_run" -m "$m" -z "$t" -n 4 -t 2 2>&1 >/dev/null); rc=$? msg=${msg%%$'\n'*}
        check "random $wt: the THREADS=1 build refuses -t 2 naming the build, not the model (exit $rc: $msg)" \
            "[ $rc -ne 0 ] && [[ \"\$msg\" == *THREADS=1* ]] && [[ \"\$msg\" != *model* ]]"
    fi
done

# ---- real models ----------------------------------------------------------
if [ ! -d "$MODELS" ]; then
    skip "real models: $MODELS not found (they live in ../shared/models in the dev setup)"
    finish
fi
convert() {  # source, name, wtype -> path of the .mlb
    local out="$mdir/$2_$3.mlb"
    if [ ! -f "$out" ] || [ "$out" -ot tools/convert.py ]; then
        "$PYTHON" tools/convert.py "$1" "$out" --wtype "$3" >/dev/null 2>"$tmp/convert.err" || { cat "$tmp/convert.err"; return 1; }
    fi
    echo "$out"
}
S260="$MODELS/stories260K"
declare -a REAL=(
    "stories260K|$S260/stories260K.bin|$S260/tok512.bin|Once upon a time"
    "stories260K-hf|$MODELS/stories260K-hf|$S260/tok512.bin|Once upon a time"
    "stories260K-xs|$MODELS/stories260K-xs-retrain/stories260K_xs_retrain.bin|$MODELS/stories260K-xs-retrain/tok512.bin|Lily went"
    "aidreams260K|$MODELS/aidreams260K/aidreams260K.bin|$MODELS/aidreams260K/tok512.bin|Echoes"
    "zh-poem-750K|$MODELS/zh-poem-750K/poem_model.bin|$MODELS/zh-poem-750K/poem_tok.bin|主题：明月 体裁：五绝"
)
for row in "${REAL[@]}"; do
    IFS='|' read -r name src tok prompt <<<"$row"
    if [ ! -e "$src" ]; then skip "$name: $src not found"; continue; fi
    for wt in q8_0 q4_0; do
        m=$(convert "$src" "$name" "$wt") || { bad "$name $wt: convert"; continue; }
        out=$(run -m "$m" -z "$tok" -i "$prompt" -n 64 --temp 0 2>"$tmp/err"); rc=$?
        check "$name $wt: greedy generation runs (exit $rc, $(wc -c <<<"$out") bytes)" "[ $rc -eq 0 ] && [ \${#out} -gt ${#prompt} ]"
        compare_with_scalar "$name $wt" "$m" "$tok" "$prompt"
    done
done

# ---- golden: stories260K Q8_0, greedy, fixed prompt, exact tokens ----------
if [ -f "$S260/stories260K.bin" ]; then
    m=$(convert "$S260/stories260K.bin" stories260K q8_0)
    run -m "$m" -z "$S260/tok512.bin" -i "Once upon a time" -n 128 --temp 0 --ids "$tmp/golden.ids" >"$tmp/golden.txt" 2>/dev/null
    check "golden: stories260K Q8_0 greedy ids match tests/golden/stories260K_q8_0.ids" \
        "cmp -s '$tmp/golden.ids' tests/golden/stories260K_q8_0.ids"
    check "golden: the story opens like llama2.c's fp32 run" \
        "grep -q '^Once upon a time, there was a little girl named Lily. She loved to play outside in the park.' '$tmp/golden.txt'"
    # The logits themselves, bit for bit, on every ISA, compiler and architecture.
    run -m "$m" -z "$S260/tok512.bin" -i "Once upon a time" -n 64 --temp 0 --logits "$tmp/golden.f32" >/dev/null 2>&1
    check "golden: stories260K Q8_0 logits of 64 positions hash to tests/golden/stories260K_q8_0.logits64.sha256" \
        "[ \"\$(sha256sum '$tmp/golden.f32' | cut -d' ' -f1)\" = \"\$(cat tests/golden/stories260K_q8_0.logits64.sha256)\" ]"
    long="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball under a tree and she ran to get it, but a small dog took the ball and ran away. Lily"
    compare_batches "golden: stories260K Q8_0" "$m" "$S260/tok512.bin" "$long" 84 100
    run -m "$m" -z "$S260/tok512.bin" -i "$long" -n 100 --temp 0 2>"$tmp/timing.err" >/dev/null
    check "golden: ml_run times the prompt apart: '$(tail -n 1 "$tmp/timing.err")'" \
        "grep -qE '^ml_run: 100 tokens in .*; prompt 84 in [0-9.]+ s \\([0-9.]+ tok/s, -b 128\\), then 16 in ' '$tmp/timing.err'"
    compare_batches "golden: stories260K Q4_0" "$(convert "$S260/stories260K.bin" stories260K q4_0)" "$S260/tok512.bin" "$long" 84 100
    hf=$(convert "$MODELS/stories260K-hf" stories260K-hf q8_0)
    run -m "$hf" -z "$S260/tok512.bin" -i "Once upon a time" -n 128 --temp 0 --ids "$tmp/hf.ids" >/dev/null 2>&1
    check "golden: the HF copy of stories260K generates the same ids" "cmp -s '$tmp/golden.ids' '$tmp/hf.ids'"
fi
finish
