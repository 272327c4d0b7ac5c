#!/usr/bin/env bash
# Speculative decoding's speed against plain decoding of the same build,
# model and prompt (issue 26's goals): ROUNDS interleaved rounds (which runs
# first alternates), each run's generation tok/s from ml_run's stderr ("then
# N in S s (T tok/s)": the sampled tokens, not the prompt), and the median
# ratio. The output of both is the same by construction (tests/test_spec.sh);
# this measures only the speed.
# usage: tools/bench_spec.sh ML_RUN SPEC_ARGS -- ML_RUN_ARGS...
#   tools/bench_spec.sh build/best/ml_run "--lookup 8" -- -m m.mlb -z t.bin -i "..." -n 256 --temp 0 -t 1
# env: ROUNDS (default 7)
set -eu
[ $# -ge 3 ] && [ "$3" = "--" ] || { echo "usage: $0 ML_RUN SPEC_ARGS -- ML_RUN_ARGS..." >&2; exit 2; }
run=$1 spec=$2
shift 3
rounds=${ROUNDS:-7}

# tok/s of the sampled tokens of one run; the lookup line too when there is one
measure() {
    local err
    err=$("$run" "$@" 2>&1 >/dev/null) || { echo "bench_spec: $run $* failed:" >&2; echo "$err" >&2; exit 1; }
    sed -nE 's/.*then [0-9]+ in [0-9.]+ s \(([0-9.]+) tok\/s\).*/\1/p' <<<"$err" | tail -1
    grep -E "^ml_run: --(lookup|draft)" <<<"$err" | tail -1 >&2 || true
}

plain=() fast=()
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
        plain+=("$(measure "$@")")
        fast+=("$(measure "$@" $spec 2>/tmp/bench_spec.$$)")
    else
        fast+=("$(measure "$@" $spec 2>/tmp/bench_spec.$$)")
        plain+=("$(measure "$@")")
    fi
done
accept=$(cat /tmp/bench_spec.$$)
rm -f /tmp/bench_spec.$$
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratios=()
for i in "${!plain[@]}"; do ratios+=("$(awk -v a="${fast[$i]}" -v b="${plain[$i]}" 'BEGIN { printf "%.3f", a / b }')"); done
echo "plain: median $(median "${plain[@]}") tok/s (${plain[*]})"
echo "$spec: median $(median "${fast[@]}") tok/s (${fast[*]}); ${accept#ml_run: }"
echo "ratio $spec / plain, per round: median $(median "${ratios[@]}") (${ratios[*]}), $rounds rounds"
