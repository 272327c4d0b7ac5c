#!/usr/bin/env bash
# CI driver: the main test command, then the checking-tool suites, and one
# last line "N passed, N failed, N skipped" over all of them.
#   main        the command given (default: make test, the ISA matrix)
#   san-scalar  make check ISA=scalar SAN=1 CC=clang  (ASan + UBSan: the tests
#   san-avx2    make check ISA=avx2 SAN=1 CC=clang    of tests/plan.txt's san column)
#   vg-scalar   the vg column's tests (test_e2e.sh) of ISA=scalar under valgrind memcheck
#   vg-avx2     the same of ISA=avx2
# Each suite writes its results file (tests/results.sh; run_tests.sh or
# matrix.sh: the main command must be one of those layers, e.g. make test or
# make check), whose total row is added up. Sanitizer and valgrind reports go to log files,
# so a report from a run whose exit code a test does not look at still
# counts: each suite with a report is one more failure, and its first
# lines are shown. A suite without a results file is one failure.
# main runs first, alone (the matrix runs its own rows side by side), its
# output streamed. Then the other suites' builds are made, one at a time with
# make -j$ML_JOBS, and the suites run $ML_PAR at a time (each runs one test
# process at a time), their output kept apart and printed in order.
# Results: a row per suite and the total in $ML_RESULTS (default build/suites.tsv),
# and at the end each suite's counts and seconds with its slowest parts (the
# matrix's rows, a suite's tests), then the last line "N passed, N failed, N skipped".
# usage: bash tests/run_suites.sh [MAIN COMMAND...]
# env: ML_SUITES (default "main vg-avx2 vg-scalar san-scalar san-avx2": the longest start first), ML_JOBS (default 2),
#      ML_PAR (suites at once, default ML_JOBS)
set -u
cd "$(dirname "$0")/.."
. tests/results.sh
out=${ML_RESULTS:-build/suites.tsv}
unset ML_RESULTS
mkdir -p "$(dirname "$out")"
: >"$out"
t_start=$SECONDS
SUITES=${ML_SUITES:-main vg-avx2 vg-scalar san-scalar san-avx2}
JOBS=${ML_JOBS:-2}
PAR=${ML_PAR:-$JOBS}
[ $# -gt 0 ] || set -- make test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TP=0 TF=0 TS=0
summary=()
# clang, because gcc 12's UBSan ignores log_path and reports only to stderr,
# which tests may discard (gcc is the fallback: then only exit codes catch UBSan).
SAN_CC=gcc
command -v clang >/dev/null && SAN_CC=clang

# run_suite NAME REPORT_DIR COMMAND...: runs a suite, its output on stdout;
# writes "passed failed skipped seconds command" to $tmp/NAME.res.
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
        # LeakSanitizer's stop-the-world can miss a thread that is just
        # exiting ("Unable to get registers from thread N", and nothing else
        # in the file): a race of the checker under load, not a finding.
        # Such a file is named and set aside; any other line still counts.
        local r
        for r in $(find "$reports" -type f -size +0 2>/dev/null | sort); do
            if ! grep -qv 'Unable to get registers from thread' "$r"; then
                echo "note - suite $name: LeakSanitizer could not stop an exiting thread ($(basename "$r")): not a report"
                mv "$r" "$r.lsan-race"; : >"$r"
            fi
        done
        found=$(find "$reports" -type f -size +0 ! -name '*.lsan-race' 2>/dev/null | sort)
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
    echo "$p $f $s $((SECONDS - t0)) $*" >"$tmp/$name.res"
}

# finish_suite NAME: adds up a suite's counts (after it ran) for the summary.
finish_suite() {
    local name=$1 p f s sec cmd
    if ! read -r p f s sec cmd <"$tmp/$name.res"; then
        echo "FAIL - suite $name: did not finish"; p=0 f=1 s=0 sec=0 cmd=-
    fi
    TP=$((TP + p)) TF=$((TF + f)) TS=$((TS + s))
    summary+=("$(printf '%-11s %5d passed %3d failed %3d skipped %6d s' "$name" "$p" "$f" "$s" "$sec")")
    summary+=("$(slowest "$tmp/$name.tsv")")
    results_row "$out" "$name" "$p" "$f" "$s" "$sec" "$cmd"
}

# slowest FILE: "  slowest: NAME N s, ..." of a results file's five slowest rows.
slowest() {
    [ -f "$1" ] && awk -F'\t' '$1 != "total" && $5 ~ /^[0-9]+$/ { print $5 "\t" $1 }' "$1" | sort -rn | head -n 5 |
        awk -F'\t' '{ s = s (NR > 1 ? ", " : "") $2 " " $1 " s" } END { if (NR) print "              slowest: " s }'
}

# siblings ISA: make check's CHECK_SIBLINGS for a suite of that ISA. The
# ML_NO_MMAP=1 and THREADS=1 builds hold no ISA code: the scalar suites build
# and check them (as the matrix does on its portable rows), the others do not.
siblings() { [ "$1" = scalar ] && echo 1 || echo 0; }

# build_suite NAME: makes what the suite's make check runs (make check-builds).
build_suite() {
    local args
    case $1 in
    san-*) args=(ISA="${1#san-}" SAN=1 CC=$SAN_CC CHECK_SIBLINGS="$(siblings "${1#san-}")") ;;
    vg-*) command -v valgrind >/dev/null || return 0; args=(ISA="${1#vg-}" CHECK_SIBLINGS="$(siblings "${1#vg-}")") ;;
    *) return 0 ;;
    esac
    make -s -j"$JOBS" "${args[@]}" check-builds >/dev/null 2>"$tmp/build.err" || cat "$tmp/build.err"
}

# A suite under ASan+UBSan: make check, reports to log files.
san_suite() {
    local isa=$1 dir="$tmp/reports-san-$1"
    mkdir -p "$dir"
    ASAN_OPTIONS="log_path=$dir/asan:detect_leaks=1:abort_on_error=0" \
    UBSAN_OPTIONS="log_path=$dir/ubsan:print_stacktrace=1:halt_on_error=1" \
    ML_PLAN=san ML_ROW="san-$isa" \
        run_suite "san-$isa" "$dir" make -s check ISA="$isa" SAN=1 CC=$SAN_CC CHECK_SIBLINGS="$(siblings "$isa")"
}

# The e2e test (random tiny models and the real ones of $MODELS) with every
# ml_run under valgrind; leaks count as errors.
vg_suite() {
    local isa=$1 dir="$tmp/reports-vg-$1"
    mkdir -p "$dir"
    if ! command -v valgrind >/dev/null; then
        echo "SKIP - suite vg-$isa: valgrind not installed"
        echo "0 0 1 0 valgrind not installed" >"$tmp/vg-$isa.res"; return
    fi
    ML_PLAN=vg ML_ROW="vg-$isa" EXPECT_LOGS=1 \
        run_suite "vg-$isa" "$dir" make -s check ISA="$isa" CHECK_SIBLINGS="$(siblings "$isa")" \
        RUNNER="valgrind -q --error-exitcode=1 --leak-check=full --log-file=$dir/vg.%p"
}

# one_suite NAME: runs suite NAME (its output on stdout).
one_suite() {
    case $1 in
    main) run_suite main "" "${MAIN[@]}" ;;
    san-*) san_suite "${1#san-}" ;;
    vg-*) vg_suite "${1#vg-}" ;;
    *) echo "FAIL - unknown suite '$1'"; echo "0 1 0 0 unknown suite" >"$tmp/$1.res" ;;
    esac
}

MAIN=("$@")
later=()
for s in $SUITES; do
    if [ "$s" = main ]; then one_suite main; finish_suite main; else later+=("$s"); fi
done
t_build=$SECONDS
for s in "${later[@]}"; do build_suite "$s"; done
t_build=$((SECONDS - t_build))
# Each of the $PAR slots runs one suite at a time, with its own folder of
# test_e2e.sh's converted models (as in tests/matrix.sh).
declare -a SLOT
next=0 shown=0
while [ "$shown" -lt "${#later[@]}" ]; do
    for ((k = 0; k < PAR; k++)); do
        [ -z "${SLOT[k]:-}" ] || [ -e "$tmp/${SLOT[k]}.done" ] || continue
        [ "$next" -lt "${#later[@]}" ] || break
        cache=build/models; [ "$k" = 0 ] || cache+=-$k
        ( (export ML_E2E_MODELS=$cache; one_suite "${later[next]}" >"$tmp/${later[next]}.out" 2>&1); : >"$tmp/$next.done") &
        SLOT[k]=$next next=$((next + 1))
    done
    while [ "$shown" -lt "${#later[@]}" ] && [ -e "$tmp/$shown.done" ]; do
        cat "$tmp/${later[shown]}.out"
        finish_suite "${later[shown]}"
        shown=$((shown + 1))
    done
    [ "$shown" -lt "${#later[@]}" ] && sleep 1
done
wait
echo "== suites (the checking tools' builds took $t_build s; those suites ran $PAR at a time)"
for l in "${summary[@]}"; do [ -z "$l" ] || echo "$l"; done
echo "total       $((SECONDS - t_start)) s"
# CI shows only the end of a long output: the failures once more, last.
fails=$(cat "$tmp"/*.log 2>/dev/null | grep -E '(^|\] )FAIL - ' | head -n 40)
[ -z "$fails" ] || { echo "== the failures again (at most 40 lines)"; echo "$fails"; }
results_row "$out" total "$TP" "$TF" "$TS" $((SECONDS - t_start))
results_line "$TP" "$TF" "$TS"
[ "$TF" -eq 0 ]
