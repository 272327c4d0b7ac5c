#!/usr/bin/env bash
# ml_bench (DESIGN §7) as a user runs it: kernel and model figures in the
# documented format, every option value checked (exit 2 and the option's
# name for a bad one), the prompt figure (-p, -b), a .mlb given with -m, --bw's share of the read
# bandwidth, and -t N refused by a THREADS=1 build. Speed is never asserted:
# only that each figure is a positive number.
# env: BUILD (default build/scalar), PYTHON, RUNNER (e.g. valgrind or qemu)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
BIN=$BUILD/ml_bench
need_exe "$BIN"

# shellcheck disable=SC2086
run() { timeout 600 $RUNNER "$BIN" --rows "$@" >"$tmp/out" 2>"$tmp/err"; }

# expect WHAT RC TEXT ARGS...: exit code RC and stderr containing TEXT.
expect() {
    local what=$1 want=$2 text=$3; shift 3
    run "$@"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$what: exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    elif ! grep -qF -- "$text" "$tmp/err"; then
        bad "$what: stderr lacks '$text': $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    else
        ok "$what"
    fi
}

# ---- bad command lines: exit 2, naming the option ---------------------------
expect "unknown option" 2 "unknown option" --frobnicate
expect "option without its value" 2 "option needs a value" --shape
expect "--shape unknown" 2 "--shape: expected" --shape stories42M
expect "--wtype unknown" 2 "--wtype: expected" --wtype q3_k
expect "-t 0" 2 "-t: expected" -t 0
expect "-t not a list" 2 "-t: expected" -t 1,,x
expect "-t nine counts" 2 "-t: expected" -t 1,1,1,1,1,1,1,1,1
expect "--tokens 0" 2 "--tokens: expected" --tokens 0
expect "--reps 65" 2 "--reps: expected" --reps 65
expect "--reps not a number" 2 "--reps: expected" --reps 3x
expect "-p -1" 2 "-p: expected" -p -1
expect "-b 0" 2 "-b: expected" -b 0
expect "-b not a number" 2 "-b: expected" -b 8x
expect "-d -1" 2 "-d: expected" -d -1
expect "-d at the context" 1 "-d 256: expected a context below" --model-only --shape stories15M --tokens 2 --reps 1 -d 256
expect "-m missing file" 1 "no_such.mlb" --model-only -m "$tmp/no_such.mlb"
expect "--prefetch unknown" 2 "--prefetch: expected l1, l2, hw or auto" --prefetch l3
expect "--kernels-only with --model-only" 2 "leave nothing to measure" --kernels-only --model-only
expect "--kernels-only with -m" 2 "-m FILE measures a model" --kernels-only -m models/stories260K/stories260K_q8_0.mlb
# --tokens beyond the context after -d: the count decoded is said, not the one asked
run --model-only -m models/stories260K/stories260K_q8_0.mlb --tokens 16 -d 500 -p 0 --reps 1
if [ $? -eq 0 ] && grep -q '12 tokens decoded, not 16: the context ends at 512' "$tmp/out"; then
    ok "--tokens capped by the context: said (12 decoded, not 16)"
else bad "--tokens capped by the context: $(head -c 300 "$tmp/out")"; fi

# --prefetch by hand: every mode decodes; the avx512vnni build's first line
# names l1 and hw (l2 is the plain default), other builds' name none (auto:
# the CPU's choice, not checked)
for m in l1 l2 hw auto; do
    run --model-only --shape stories15M --wtype q8_0 --tokens 2 --reps 1 -p 0 --prefetch "$m"
    rc=$?
    first=$(head -n 1 "$tmp/out")
    case $m,$first in
    auto,*) want= ;;
    l1,*avx512vnni*) want="(--prefetch l1)" ;;
    hw,*avx512vnni*) want="(--prefetch hw)" ;;
    *) want=none ;;
    esac
    named=
    case $want in
    none) grep -q -- "(--prefetch" <<<"$first" || named=ok ;;
    '') named=ok ;;
    *) grep -qF -- "$want" <<<"$first" && named=ok ;;
    esac
    if [ $rc -eq 0 ] && [ "$named" = ok ] && grep -q '^  stories15M   q8_0  1T ' "$tmp/out"; then
        ok "--prefetch $m: decodes; the first line names ${want:-whatever this CPU gets}"
    else bad "--prefetch $m: exit $rc, first line: $first (wanted ${want:-any})"; fi
done

run --help
if [ $? -eq 0 ] && grep -q -- "--bw" "$tmp/out" && grep -q -- "--rows" "$tmp/out" && grep -q "^build: " "$tmp/out"; then ok "--help lists the options and the build"
else bad "--help: $(head -c 200 "$tmp/out")"; fi

# ---- the human table: no #row lines without --rows; no progress when stderr is no terminal ----
# shellcheck disable=SC2086
# The model's figures: the kernels' take seconds (each is timed for at least
# 50 ms), so only --kernels-only below times them.
timeout 600 $RUNNER "$BIN" --model-only --shape stories15M --wtype q8_0 --tokens 2 --reps 1 -p 4 >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && grep -q '^  stories15M   q8_0  1T ' "$tmp/out" && grep -q 'pp4' "$tmp/out" &&
    ! grep -q '#row' "$tmp/out" && ! grep -q 'measuring' "$tmp/err"; then
    ok "without --rows: the table only (decode and prompt lines, no #row line); no progress line into a file"
else
    bad "without --rows: $(grep -c '#row' "$tmp/out") #row lines, stderr: $(head -c 200 "$tmp/err")"
fi
if command -v script >/dev/null 2>&1 && [ -z "$RUNNER" ]; then
    # stderr a terminal (script's pty): the progress line is written and cleared
    script -qec "$BIN --model-only --shape stories15M --wtype q4_0 --tokens 2 --reps 1 -p 0" /dev/null >"$tmp/tty" 2>&1
    if grep -q 'measuring stories15M q4_0 1T: 2 tokens decoded' "$tmp/tty" && grep -q '^  stories15M   q4_0  1T ' <(tr '\r' '\n' <"$tmp/tty" | sed 's/\x1b\[K//g'); then
        ok "on a terminal: 'ml_bench: measuring ...' while a figure is timed, then the figure"
    else
        bad "on a terminal: no progress line: $(head -c 300 "$tmp/tty" | tr '\r\033' '  ')"
    fi
fi

# ---- kernels: one line per matrix shape, positive GB/s ---------------------
run --kernels-only --shape stories15M --wtype q4_0 --reps 1
# (the time is the positive figure: GB/s may print as 0.0 under qemu)
n=$(grep -cE '^  matvec_q4_0 stories15M +[a-z0-9/]+ +[0-9]+x[0-9]+ +[0-9.]*[1-9][0-9.]* us +[0-9.]+ GB/s' "$tmp/out")
rows=$(grep -cE '^#row kernel [a-z0-9_]+ mat(vec|mul)_q4_0_[0-9]+x[0-9]+ [0-9]+\.[0-9]+$' "$tmp/out")
if [ "$n" -eq 4 ] && [ "$rows" -eq 8 ] && grep -q '^  softmax ' "$tmp/out" && ! grep -q 'model decode' "$tmp/out"; then
    ok "--kernels-only: the 4 stories15M matvec shapes (and matmul), each with its #row line, and the float kernels"
else
    bad "--kernels-only: $n matvec lines, $rows #row lines; $(head -c 400 "$tmp/out")"
fi

# model_line FILE LABEL TYPE THREADS: the decode line of that run has a
# positive ms/token and the #row line for tools/bench_all.sh matches it.
model_line() {
    local f=$1 label=$2 t=$3 n=$4
    grep -qE "^  $label +$t +${n}T +[0-9.]+ tok/s +[0-9.]*[1-9][0-9.]* ms/token +[0-9.]+ GB/s +RSS" "$f" &&
        grep -qE "^#row model [a-z0-9_]+ ${label}_${t}_${n}T [0-9.]+$" "$f"
}
# prompt_line FILE LABEL TYPE THREADS P B: the prompt figure (pP at -b B) and its #row line.
prompt_line() {
    local f=$1 label=$2 t=$3 n=$4 p=$5 b=$6
    grep -qE "^  $label +$t +${n}T +[0-9.]*[1-9][0-9.]* tok/s +pp$p, -b $b +\(" "$f" &&
        grep -qE "^#row pp$p [a-z0-9_]+ ${label}_${t}_${n}T [0-9.]*[1-9][0-9.]*$" "$f"
}

# ---- model decode and prompt at a named shape ---------------------------------
run --model-only --shape stories15M --wtype q8_0 --tokens 2 --reps 1 -p 8 -b 3
if [ $? -eq 0 ] && model_line "$tmp/out" stories15M q8_0 1 && prompt_line "$tmp/out" stories15M q8_0 1 8 3 &&
    ! grep -q '^  matvec' "$tmp/out"; then
    ok "--model-only --shape stories15M -p 8 -b 3: decode and prompt figures, each with a #row line"
else
    bad "--model-only: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"
fi
run --model-only --shape stories15M --wtype q8_0 --tokens 2 --reps 1 -p 0
if [ $? -eq 0 ] && model_line "$tmp/out" stories15M q8_0 1 && ! grep -q "pp\|#row pp" "$tmp/out"; then
    ok "-p 0: no prompt figure"
else
    bad "-p 0: $(head -c 400 "$tmp/out")"
fi

# ---- decode at depth: -d fills a context first, its own #row line ----------
run --model-only --shape stories15M --wtype q4_0 --tokens 4 --reps 1 -p 0 -d 250 --rows
if [ $? -eq 0 ] && grep -q "^model decode, 4 tokens from position 250:" "$tmp/out" &&
    grep -qE "^  stories15M +q4_0 +1T +[0-9.]+ tok/s +[0-9.]*[1-9][0-9.]* ms/token" "$tmp/out" &&
    grep -qE "^#row tg4@d250 [a-z0-9_]+ stories15M_q4_0_1T [0-9.]*[1-9][0-9.]*$" "$tmp/out" &&
    ! grep -q "^#row model" "$tmp/out"; then
    ok "-d 250: decode after a 250-token context, with its #row tg4@d250 line"
else
    bad "-d 250: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"
fi
# The verification figure runs over the decode's positions (250 .. 253: room
# for batches of 2 and 4, not 8, whatever -p), beside the step it divides.
run --model-only --shape stories15M --wtype q4_0 --tokens 4 --reps 1 -p 8 -d 250 --rows
if [ $? -eq 0 ] && grep -qE "^#row verify2 [a-z0-9_]+ stories15M_q4_0_1T [0-9.]*[1-9][0-9.]*$" "$tmp/out" &&
    grep -qE "^#row verify4 [a-z0-9_]+ stories15M_q4_0_1T [0-9.]*[1-9][0-9.]*$" "$tmp/out" &&
    grep -qE "verify k tokens .*k=2 [0-9.]+ ms = [0-9.]+x  k=4 [0-9.]+ ms = [0-9.]+x$" "$tmp/out" &&
    ! grep -q "verify8\|k=8" "$tmp/out" && grep -q "^#row pp8 " "$tmp/out"; then
    ok "-d 250 -p 8: verify k = 2 and 4 over the 4 decoded positions (no room for 8), and pp8"
else
    bad "-d 250 -p 8, verify: $(head -c 600 "$tmp/out") $(head -c 200 "$tmp/err")"
fi

# ---- threads: -t 2 needs the thread pool (not THREADS=1) -------------------
if [[ $BUILD != *nothreads* ]]; then
    run --model-only --shape stories15M --wtype q4_0 --tokens 2 --reps 1 -t 1,2 -p 4
    if [ $? -eq 0 ] && model_line "$tmp/out" stories15M q4_0 1 && model_line "$tmp/out" stories15M q4_0 2 &&
        prompt_line "$tmp/out" stories15M q4_0 2 4 128; then
        ok "-t 1,2: one line per thread count"
    else
        bad "-t 1,2: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"
    fi
else
    expect "-t 2 on a THREADS=1 build" 1 "THREADS=1" --model-only --tokens 2 --reps 1 -t 2 -p 4
fi

# ---- --bw: the read bandwidth after each model figure, and the share -------
# 1 GiB is read per pass: native runs only (qemu and valgrind would take
# minutes, and a 32-bit process may not get the buffer at all).
if [ -n "$RUNNER" ]; then
    skip "--bw: reads 1 GiB per pass, not run under '$RUNNER'"
else
    run --model-only --shape stories15M --wtype q4_0 --tokens 2 --reps 2 --bw -p 4
    if [ $? -eq 0 ] && model_line "$tmp/out" stories15M q4_0 1 &&
        grep -qE '^  stories15M +q4_0 +1T +[0-9.]*[1-9][0-9.]*% of the read bandwidth measured next: [0-9.]*[1-9][0-9.]* GB/s \(median [0-9.]+\)' "$tmp/out" &&
        grep -qE '^#row bw [a-z0-9_]+ stories15M_q4_0_1T [0-9.]*[1-9][0-9.]*$' "$tmp/out"; then
        ok "--bw: the read bandwidth, the model's share of it and its #row line"
    else
        bad "--bw: $(head -c 500 "$tmp/out") $(head -c 200 "$tmp/err")"
    fi
fi

# ---- -m: a .mlb from the converter's random generator ----------------------
if [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
    skip "-m FILE: no python3 with numpy to make a test model"
elif ! "$PYTHON" tools/gen_random.py --vocab 96 --max-seq 32 --wtype q4_0 "$tmp/r.mlb" >"$tmp/gen" 2>&1; then
    bad "gen_random.py failed: $(head -c 300 "$tmp/gen")"
else
    # 40 tokens asked, the context is 32: decode and the prompt stop at the context
    for mm in "mapped" "read into memory"; do
        if [ "$mm" = mapped ]; then run --model-only -m "$tmp/r.mlb" --tokens 40 --reps 1 -p 40 --mmap
        else run --model-only -m "$tmp/r.mlb" --tokens 40 --reps 1 -p 40 --no-mmap; fi
        if [ $? -eq 0 ] && model_line "$tmp/out" "$tmp/r.mlb" q4_0 1 && grep -q "; weights $mm, opened in [0-9]* ms, peak RSS [0-9.]* MiB)" "$tmp/out" &&
            prompt_line "$tmp/out" "$tmp/r.mlb" q4_0 1 32 32; then
            ok "-m FILE, weights $mm"
        else
            bad "-m FILE, weights $mm: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"
        fi
    done
    # the default: a model this small is read into memory (core/file.h ML_FILE_AUTO)
    run --model-only -m "$tmp/r.mlb" --tokens 2 --reps 1 -p 0
    if [ $? -eq 0 ] && grep -q "; weights read into memory, opened in" "$tmp/out"; then ok "-m FILE, default: a small model is read into memory"
    else bad "-m FILE, default: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"; fi
    head -c 1000 "$tmp/r.mlb" >"$tmp/cut.mlb"
    expect "-m truncated file" 1 "cut.mlb" --model-only -m "$tmp/cut.mlb"
fi

finish
