#!/usr/bin/env bash
# ml_run's sampler and text options on the shipped stories260K
# (models/stories260K): --top-k, --min-p, --repeat-penalty / --repeat-last-n
# change the text, are reproducible from a seed and bit-identical to the
# scalar reference build; their defaults leave the text as it was; bad values
# are refused (exit 2) with a message naming the option. -f FILE and -f -
# give -i's run; --stop ends the text before the stop string.
# env: BUILD ISA RUNNER (set by tests/run_tests.sh), REF_BUILD (the native
#   scalar build; make check and tests/matrix.sh make it)
set -u
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${RUNNER:=}" "${REF_BUILD:=}"
. tests/sh_lib.sh
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SM=models/stories260K
M=(-m "$SM/stories260K_q8_0.mlb" -z "$SM/tok512.bin")
# shellcheck disable=SC2086
run() { $RUNNER "$BUILD/ml_run" "${M[@]}" "$@"; }

# ---- sampler options ----------------------------------------------------------
PR=(-i "Once upon a time" -n 80 -s 11)
run "${PR[@]}" --ids "$tmp/plain.ids" >/dev/null 2>&1
run "${PR[@]}" --top-k 0 --min-p 0 --repeat-penalty 1 --repeat-last-n 64 --ids "$tmp/off.ids" >/dev/null 2>&1
check "sampler: --top-k 0 --min-p 0 --repeat-penalty 1 (the defaults) = no option" \
    "[ -s '$tmp/plain.ids' ] && cmp -s '$tmp/plain.ids' '$tmp/off.ids'"
FL=(--top-k 20 --min-p 0.05 --repeat-penalty 1.3 --repeat-last-n 32)
run "${PR[@]}" "${FL[@]}" --ids "$tmp/f1.ids" >/dev/null 2>&1
run "${PR[@]}" "${FL[@]}" --ids "$tmp/f2.ids" >/dev/null 2>&1
check "sampler: top-k, min-p and a repetition penalty change the text" \
    "[ -s '$tmp/f1.ids' ] && ! cmp -s '$tmp/f1.ids' '$tmp/plain.ids'"
check "sampler: the same seed gives the same text with the filters on" "cmp -s '$tmp/f1.ids' '$tmp/f2.ids'"
run -i "Once upon a time" -n 80 --temp 0 --repeat-penalty 1.5 --ids "$tmp/g1.ids" >/dev/null 2>&1
run -i "Once upon a time" -n 80 --temp 0 --ids "$tmp/g0.ids" >/dev/null 2>&1
check "sampler: a repetition penalty changes greedy text too" \
    "[ -s '$tmp/g1.ids' ] && ! cmp -s '$tmp/g1.ids' '$tmp/g0.ids'"
if [ -n "$REF_BUILD" ] && [ -x "$REF_BUILD/ml_run" ]; then
    "$REF_BUILD/ml_run" "${M[@]}" "${PR[@]}" "${FL[@]}" --ids "$tmp/ref.ids" >/dev/null 2>&1
    "$REF_BUILD/ml_run" "${M[@]}" -i "Once upon a time" -n 80 --temp 0 --repeat-penalty 1.5 --ids "$tmp/gref.ids" >/dev/null 2>&1
    check "sampler: filtered and penalized tokens identical to the scalar reference build" \
        "[ -s '$tmp/ref.ids' ] && cmp -s '$tmp/ref.ids' '$tmp/f1.ids' && cmp -s '$tmp/gref.ids' '$tmp/g1.ids'"
else
    skip "sampler: no reference build (REF_BUILD '$REF_BUILD'): run through make check; identity to scalar not checked"
fi
for a in "--top-k -1" "--top-k x" "--min-p 1.5" "--min-p -0.1" "--repeat-penalty 0" "--repeat-penalty -1" \
         "--repeat-penalty 1e-46" "--repeat-last-n -2"; do
    # shellcheck disable=SC2086
    run $a >"$tmp/bad.out" 2>"$tmp/bad.err"; rc=$?
    check "sampler: '$a' refused (exit 2) with a message naming ${a%% *}" \
        "[ $rc = 2 ] && grep -q -- '^ml_run: ${a%% *}: expected' '$tmp/bad.err'"
done

# A temperature so small that the largest logit over it overflows: greedy, not garbage.
run -i "Once upon a time" -n 40 --temp 0 --ids "$tmp/t0.ids" >/dev/null 2>&1
run -i "Once upon a time" -n 40 --temp 1e-40 -s 3 --ids "$tmp/tiny.ids" >/dev/null 2>&1
check "sampler: --temp 1e-40 gives the greedy tokens" "[ -s '$tmp/t0.ids' ] && cmp -s '$tmp/t0.ids' '$tmp/tiny.ids'"

# ---- llama.cpp's long names: the same run as the short ones ---------------------
printf 'Once upon' >"$tmp/p.txt"
run -i "Once upon" -n 40 -s 7 -t 1 -c 100 -b 4 --ids "$tmp/short.ids" >/dev/null 2>"$tmp/short.err"
$RUNNER "$BUILD/ml_run" --model "$SM/stories260K_q8_0.mlb" -z "$SM/tok512.bin" --prompt "Once upon" -n 40 --seed 7 \
    --threads 1 --ctx-size 100 --batch-size 4 --ids "$tmp/long.ids" >/dev/null 2>"$tmp/long.err"
run --file "$tmp/p.txt" -n 40 -s 7 -t 1 --ids "$tmp/file.ids" >/dev/null 2>&1
check "llama.cpp's --model --prompt --seed --threads --ctx-size --batch-size: -m -i -s -t -c -b's run" \
    "[ -s '$tmp/short.ids' ] && cmp -s '$tmp/short.ids' '$tmp/long.ids' && cmp -s '$tmp/short.ids' '$tmp/file.ids' &&
     grep -q 'context 100 ' '$tmp/long.err' && grep -q -- '-t 1; prompt batch 4;' '$tmp/long.err'"
for a in --n-predict --predict; do
    run $a 5 >"$tmp/bad.out" 2>"$tmp/bad.err"; rc=$?
    check "$a refused (exit 2), saying -n counts the prompt" \
        "[ $rc = 2 ] && grep -q \"unknown option '$a' (-n N: tokens to run, the prompt's included)\" '$tmp/bad.err'"
done

# ---- -f FILE / -f - -------------------------------------------------------------
G=(-n 60 --temp 0)
run -i "Once upon a time" "${G[@]}" --ids "$tmp/i.ids" >"$tmp/i.txt" 2>/dev/null
printf 'Once upon a time\n' >"$tmp/prompt.txt"
run -f "$tmp/prompt.txt" "${G[@]}" --ids "$tmp/f.ids" >"$tmp/f.txt" 2>/dev/null
check "prompt file: -f FILE (one trailing newline removed) = -i TEXT: same ids and text" \
    "[ -s '$tmp/i.ids' ] && cmp -s '$tmp/i.ids' '$tmp/f.ids' && cmp -s '$tmp/i.txt' '$tmp/f.txt'"
run -f - "${G[@]}" --ids "$tmp/s.ids" <"$tmp/prompt.txt" >/dev/null 2>&1
check "prompt file: -f - reads stdin" "cmp -s '$tmp/i.ids' '$tmp/s.ids'"
printf 'Once upon a time\nthere was\n' >"$tmp/two.txt"
run -f "$tmp/two.txt" -n 20 --temp 0 >"$tmp/two.out" 2>/dev/null
check "prompt file: a line break inside the prompt is kept" "head -n 2 '$tmp/two.out' | tail -n 1 | grep -q '^there was'"
run -i x -f "$tmp/prompt.txt" >/dev/null 2>"$tmp/err"; rc=$?
check "prompt file: -i and -f together refused (exit 2)" "[ $rc = 2 ] && grep -q -- '-i and -f' '$tmp/err'"
run -f "$tmp/missing.txt" >/dev/null 2>"$tmp/err"; rc=$?
check "prompt file: a missing file fails (exit 1) naming it" "[ $rc = 1 ] && grep -q 'missing.txt' '$tmp/err'"
printf 'a\0b' >"$tmp/nul.txt"
run -f "$tmp/nul.txt" >/dev/null 2>"$tmp/err"; rc=$?
check "prompt file: a NUL byte is refused (exit 1): not a text file" "[ $rc = 1 ] && grep -q 'NUL byte' '$tmp/err'"

# ---- --stop ------------------------------------------------------------------------
full=$(cat "$tmp/i.txt")
stop_case() {  # what, expected text, options...
    local what=$1 want=$2; shift 2
    run -i "Once upon a time" "${G[@]}" "$@" --ids "$tmp/stop.ids" >"$tmp/stop.txt" 2>/dev/null
    local got; got=$(cat "$tmp/stop.txt")
    check "stop: $what" "[ \"\$got\" = \"\$want\" ]"
}
case $full in *" park."*" One day"*) ;; *) bad "stop: the greedy text changed; these checks need ' park.' and ' One day' in it" ;; esac
stop_case "--stop park: the text up to it, without it" "${full%%park*}" --stop park
check "stop: generation ends at the stop string (fewer tokens run)" \
    "[ \$(wc -l <'$tmp/stop.ids') -lt \$(wc -l <'$tmp/i.ids') ]"
stop_case "a stop string across tokens (' park. One')" "${full%%" park. One"*}" --stop " park. One"
stop_case "several: the first one met wins" "${full%%" One day"*}" --stop zzz --stop " One day" --stop "red ball"
stop_case "never met: the whole text" "$full" --stop zzz
stop_case "in the prompt only: not matched (only the generated text is)" "$full" --stop "upon a"
run --stop "" >/dev/null 2>"$tmp/err"; rc=$?
check "stop: an empty string refused (exit 2)" "[ $rc = 2 ] && grep -q -- '^ml_run: --stop: expected' '$tmp/err'"
nine=(); for k in 1 2 3 4 5 6 7 8 9; do nine+=(--stop "s$k"); done
run "${nine[@]}" >/dev/null 2>"$tmp/err"; rc=$?
check "stop: more than 8 refused (exit 2)" "[ $rc = 2 ] && grep -q -- '--stop: at most 8' '$tmp/err'"

finish
