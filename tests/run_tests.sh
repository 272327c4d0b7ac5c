#!/usr/bin/env bash
# Runs every test of one build and prints one "N passed, N failed" line.
# Each test prints "#summary passed=N failed=N skipped=N" as its last line;
# a test that dies without one counts as one failure.
# env: BUILD (build folder), ISA, PYTHON, MODELS, RUNNER (e.g. "qemu-aarch64 -cpu max"),
#      ML_TESTS (only these tests, e.g. "test_e2e.sh test_loader"; default all)
set -u
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${PYTHON:=python3}" "${MODELS:=../shared/models}" "${RUNNER:=}"
export BUILD ISA PYTHON MODELS RUNNER

passed=0 failed=0 skipped=0
run_one() {  # name, command...
    local name=$1; shift
    if [ -n "${ML_TESTS:-}" ] && [[ " $ML_TESTS " != *" $name "* ]]; then return; fi
    local log; log=$(mktemp)
    "$@" >"$log" 2>&1
    local rc=$?
    local sum; sum=$(grep '^#summary' "$log" | tail -n 1)
    grep -E '^(FAIL|SKIP) - ' "$log"
    if [ -z "$sum" ]; then
        echo "FAIL - $name: exited $rc without a summary; last lines:"; tail -n 15 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
    else
        local p f s
        p=$(sed -E 's/.*passed=([0-9]+).*/\1/' <<<"$sum")
        f=$(sed -E 's/.*failed=([0-9]+).*/\1/' <<<"$sum")
        s=$(sed -E 's/.*skipped=([0-9]+).*/\1/' <<<"$sum")
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL - $name: exit code $rc"; fi
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        printf '%-28s %5d passed %3d failed %3d skipped\n' "$name [$ISA]" "$p" "$f" "$s"
    fi
    rm -f "$log"
}

for t in "$BUILD"/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" $RUNNER "$t"
done
if [ "${ML_SKIP_PY:-0}" != 1 ]; then
    for t in tests/test_*.py; do
        [ -f "$t" ] || continue
        if [ -z "$PYTHON" ]; then echo "FAIL - $t: no python3 with numpy found"; failed=$((failed + 1)); continue; fi
        run_one "$(basename "$t")" "$PYTHON" "$t"
    done
fi
for t in tests/test_*.sh; do
    [ -f "$t" ] || continue
    [ "$t" = tests/test_all.sh ] && continue  # the matrix runs this script, not the reverse
    run_one "$(basename "$t")" bash "$t"
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
