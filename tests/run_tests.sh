#!/usr/bin/env bash
# Runs every test of one build (the C tests of $BUILD, tests/test_*.py and
# tests/test_*.sh). Each test writes its counts to a results file
# (tests/results.sh); this script writes a row per test and the total to
# $ML_RESULTS (default $BUILD/results.tsv) and ends with "N passed, N failed,
# N skipped". A test without a results file, or with a non-zero exit and no
# failure counted, is one failure.
# env: BUILD (build folder), ISA, PYTHON, MODELS, RUNNER (e.g. "qemu-aarch64 -cpu max"),
#      REF_BUILD NOMMAP_BUILD THREADS_BUILD SINGLE_BUILD (test_e2e.sh's sibling builds: make check
#      and tests/matrix.sh build them), ML_TESTS (only these tests, e.g. "test_e2e.sh
#      test_kernels"; default all), ML_SKIP_TESTS (patterns of tests not to run, e.g.
#      "test_guard.sh *.py"), ML_PLAN and ML_ROW (only the tests that tests/plan.txt
#      runs in column ML_PLAN on the row or suite labelled ML_ROW; default: every test)
set -u
cd "$(dirname "$0")/.."
. tests/results.sh
. tests/plan.sh
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${PYTHON:=python3}" "${MODELS:=../shared/models}" "${RUNNER:=}"
export BUILD ISA PYTHON MODELS RUNNER
out=${ML_RESULTS:-$BUILD/results.tsv}
unset ML_RESULTS
mkdir -p "$(dirname "$out")"
: >"$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

wanted() {
    local p
    if [ -n "${ML_TESTS:-}" ] && [[ " $ML_TESTS " != *" $1 "* ]]; then return 1; fi
    if [ -n "${ML_PLAN:-}" ] && ! plan_runs "$1" "$ML_PLAN" "${ML_ROW:-}"; then return 1; fi
    for p in ${ML_SKIP_TESTS:-}; do
        # shellcheck disable=SC2053
        [[ $1 == $p ]] && return 1
    done
    return 0
}

passed=0 failed=0 skipped=0
run_one() {  # name, command...
    local name=$1; shift
    wanted "$name" || return 0
    local log=$tmp/$name.log res=$tmp/$name.tsv t0=$SECONDS p f s rc
    ML_RESULTS=$res "$@" >"$log" 2>&1
    rc=$?
    grep -E '^(FAIL|SKIP) - ' "$log"
    if ! read -r p f s < <(results_total "$res"); then
        echo "FAIL - $name: exited $rc without a results file; last lines:"; tail -n 15 "$log" | sed 's/^/    /'
        p=0 f=1 s=0
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL - $name: exit code $rc"; f=1
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    results_row "$out" "$name" "$p" "$f" "$s" $((SECONDS - t0))
    printf '%-28s %5d passed %3d failed %3d skipped  (%d s)\n' "$name [$ISA]" "$p" "$f" "$s" $((SECONDS - t0))
}

t_start=$SECONDS
if [ -n "${ML_PLAN:-}" ] && ! plan_cell - "$ML_PLAN" >/dev/null; then
    echo "FAIL - ML_PLAN=$ML_PLAN: not a column of tests/plan.txt"; failed=$((failed + 1))
fi
for t in "$BUILD"/test_*; do
    [ -x "$t" ] || continue
    # shellcheck disable=SC2086
    run_one "$(basename "$t")" $RUNNER "$t"
done
for t in tests/test_*.py; do
    wanted "$(basename "$t")" || continue
    if [ -z "$PYTHON" ]; then
        echo "FAIL - $t: no python3 with numpy found"; failed=$((failed + 1))
        results_row "$out" "$(basename "$t")" 0 1 0 0; continue
    fi
    run_one "$(basename "$t")" "$PYTHON" "$t"
done
for t in tests/test_*.sh; do
    run_one "$(basename "$t")" bash "$t"
done

results_row "$out" total "$passed" "$failed" "$skipped" $((SECONDS - t_start))
results_line "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
