#!/usr/bin/env bash
# `make bench-all`: build every ISA this machine runs (THREADS=pthread) and
# print their ml_bench figures side by side (rows by #row kind: model = decode
# tg, pp128 = the batched prompt, bw, kernels). Builds are benchmarked in
# interleaved rounds (a, b, c, a, b, c, ...) so a noisy neighbour hurts every
# column alike; each cell is the median over the rounds.
# env: ISAS (default: the x86 ladder of config/isas.txt), BENCH_ARGS (passed to
#      ml_bench), ROUNDS (default 3)
set -eu
cd "$(dirname "$0")/.."
: "${ISAS:=$(awk -f tools/isas.awk -v want=rows config/isas.txt | awk -F'|' '$2 == "x86" || $2 == "any" { printf "%s ", $1 }')}"
: "${ROUNDS:=3}"
: "${BENCH_ARGS:=--model-only --shape stories15M -t 1,2 --reps 3}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runnable=()
for isa in $ISAS; do
    make -s ISA="$isa" THREADS=pthread >/dev/null
    b=$(make -s ISA="$isa" THREADS=pthread print-build)
    if "$b/ml_bench" --help >/dev/null 2>&1; then runnable+=("$isa"); else echo "skip $isa: this CPU cannot run it"; fi
done
for r in $(seq "$ROUNDS"); do
    for isa in "${runnable[@]}"; do
        b=$(make -s ISA="$isa" THREADS=pthread print-build)
        # shellcheck disable=SC2086
        "$b/ml_bench" --rows $BENCH_ARGS | tee -a "$out/$isa.log" | grep -v '^#row' >/dev/null
    done
    echo "round $r of $ROUNDS done" >&2
done
echo "ml_bench $BENCH_ARGS, median over $ROUNDS interleaved rounds (tok/s for models, GB/s for kernels)"
{
    printf '%-34s' "what"
    for isa in "${runnable[@]}"; do printf '%12s' "$isa"; done
    printf '\n'
    keys=$(cat "$out"/*.log | awk '/^#row/ {print $2" "$4}' | awk '!seen[$0]++')
    while read -r kind key; do
        printf '%-34s' "$kind $key"
        for isa in "${runnable[@]}"; do
            v=$(awk -v t="$kind" -v k="$key" '$1=="#row" && $2==t && $4==k {print $5}' "$out/$isa.log" | sort -g |
                awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
            printf '%12s' "${v:--}"
        done
        printf '\n'
    done <<<"$keys"
}
