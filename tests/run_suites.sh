#!/usr/bin/env bash
# CI driver: the main test command, then the checking-tool suites, and one
# last line "N passed, N failed, N skipped" over all of them.
#   main        the command given (default: make test, the ISA matrix)
#   san-scalar  make check ISA=scalar SAN=1 CC=clang  (ASan + UBSan: every C
#   san-avx2    make check ISA=avx2 SAN=1 CC=clang    and shell test; the
#                                                     Python ones are skipped)
#   vg-scalar   tests/test_e2e.sh of ISA=scalar under valgrind memcheck
#   vg-avx2     tests/test_e2e.sh of ISA=avx2 under valgrind memcheck
# Each suite writes its results file (tests/results.sh; run_tests.sh or
# matrix.sh: the main command must be one of those layers, e.g. make test or
# make check), whose total row is added up. Sanitizer and valgrind reports go to log files,
# so a report from a run whose exit code a test does not look at still
# counts: each suite with a report is one more failure, and its first
# lines are shown. A suite without a results file is one failure.
# Results: a row per suite and the total in $ML_RESULTS (default build/suites.tsv),
# and the last line "N passed, N failed, N skipped".
# usage: bash tests/run_suites.sh [MAIN COMMAND...]
# env: ML_SUITES (default "main san-scalar san-avx2 vg-scalar vg-avx2"), ML_JOBS (default 2)
set -u
cd "$(dirname "$0")/.."
. tests/results.sh
out=${ML_RESULTS:-build/suites.tsv}
unset ML_RESULTS
mkdir -p "$(dirname "$out")"
: >"$out"
t_start=$SECONDS
SUITES=${ML_SUITES:-main san-scalar san-avx2 vg-scalar vg-avx2}
JOBS=${ML_JOBS:-2}
[ $# -gt 0 ] || set -- make test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TP=0 TF=0 TS=0
summary=()

# run_suite NAME REPORT_DIR COMMAND...: stream its output, add up its totals.
run_suite() {
    local name=$1 reports=$2; shift 2
    local t0=$SECONDS
    echo "== suite $name: $*"
    ML_RESULTS="$tmp/$name.tsv" "$@" 2>&1 | tee "$tmp/$name.log"
    local p=0 f=0 s=0
    if ! read -r p f s < <(results_total "$tmp/$name.tsv"); then
        echo "FAIL - suite $name: wrote no results file"; p=0 f=1 s=0
    fi
    if [ -n "$reports" ]; then
        local found
        found=$(find "$reports" -type f -size +0 2>/dev/null | sort)
        if [ "${EXPECT_LOGS:-0}" = 1 ] && [ -z "$(find "$reports" -type f 2>/dev/null)" ]; then
            echo "FAIL - suite $name: no log files at all: the checker did not run"; f=$((f + 1))
        elif [ -n "$found" ]; then
            echo "FAIL - suite $name: $(wc -l <<<"$found") sanitizer/valgrind report(s); the first:"
            head -n 40 "$(head -n 1 <<<"$found")" | sed 's/^/    /'
            f=$((f + 1))
        else
            echo "ok - suite $name: no sanitizer/valgrind reports"
            p=$((p + 1))
        fi
    fi
    TP=$((TP + p)) TF=$((TF + f)) TS=$((TS + s))
    summary+=("$(printf '%-11s %5d passed %3d failed %3d skipped  (%d s)' "$name" "$p" "$f" "$s" $((SECONDS - t0)))")
    results_row "$out" "$name" "$p" "$f" "$s" $((SECONDS - t0)) "$*"
}

# A suite under ASan+UBSan: build with -j, then make check. clang, because
# gcc 12's UBSan ignores log_path and reports only to stderr, which tests
# may discard (gcc is the fallback: then only exit codes catch UBSan).
san_suite() {
    local isa=$1 dir="$tmp/reports-san-$1" cc=gcc
    command -v clang >/dev/null && cc=clang
    mkdir -p "$dir"
    make -s -j"$JOBS" ISA="$isa" SAN=1 CC=$cc >/dev/null 2>"$tmp/build.err" || cat "$tmp/build.err"
    ASAN_OPTIONS="log_path=$dir/asan:detect_leaks=1:abort_on_error=0" \
    UBSAN_OPTIONS="log_path=$dir/ubsan:print_stacktrace=1:halt_on_error=1" \
    ML_SKIP_TESTS="test_guard.sh *.py" \
        run_suite "san-$isa" "$dir" make -s check ISA="$isa" SAN=1 CC=$cc
}

# The e2e test (random tiny models and the real ones of $MODELS) with every
# ml_run under valgrind; leaks count as errors.
vg_suite() {
    local isa=$1 dir="$tmp/reports-vg-$1"
    mkdir -p "$dir"
    if ! command -v valgrind >/dev/null; then
        echo "SKIP - suite vg-$isa: valgrind not installed"; TS=$((TS + 1))
        results_row "$out" "vg-$isa" 0 0 1 0 "valgrind not installed"; return
    fi
    make -s -j"$JOBS" ISA="$isa" >/dev/null 2>"$tmp/build.err" || cat "$tmp/build.err"
    ML_TESTS="test_e2e.sh" EXPECT_LOGS=1 \
        run_suite "vg-$isa" "$dir" make -s check ISA="$isa" \
        RUNNER="valgrind -q --error-exitcode=1 --leak-check=full --log-file=$dir/vg.%p"
}

for s in $SUITES; do
    case $s in
    main) run_suite main "" "$@" ;;
    san-*) san_suite "${s#san-}" ;;
    vg-*) vg_suite "${s#vg-}" ;;
    *) echo "FAIL - unknown suite '$s'"; TF=$((TF + 1)); results_row "$out" "$s" 0 1 0 0 "unknown suite" ;;
    esac
done
echo "== suites"
for l in "${summary[@]}"; do echo "$l"; done
results_row "$out" total "$TP" "$TF" "$TS" $((SECONDS - t_start))
results_line "$TP" "$TF" "$TS"
[ "$TF" -eq 0 ]
