#!/usr/bin/env bash
# ml_run's sampler options on the shipped stories260K (models/stories260K):
# --top-k, --min-p, --repeat-penalty / --repeat-last-n change the text, are
# reproducible from a seed and bit-identical to the scalar reference build;
# their defaults leave the text as it was; bad values are refused (exit 2)
# with a message naming the option.
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
         "--repeat-last-n -2"; do
    # shellcheck disable=SC2086
    run $a >"$tmp/bad.out" 2>"$tmp/bad.err"; rc=$?
    check "sampler: '$a' refused (exit 2) with a message naming ${a%% *}" \
        "[ $rc = 2 ] && grep -q -- '^ml_run: ${a%% *}: expected' '$tmp/bad.err'"
done

finish
