#!/usr/bin/env bash
# Decode speed beside CPU hogs (issue 14; docs/THREADS.md): for each load
# (idle; one hog at nice 19; two hogs at nice 19; one hog at nice 0) start
# the hogs, run ml_bench at every thread count (and llama-bench, when one is
# given), stop the hogs. Loads are interleaved over rounds, so a noisy
# neighbour hurts every cell alike; each cell is the median over the rounds,
# with the range. A tool, not a test: it prints figures, asserts nothing.
#
# usage: tools/bench_under_load.sh [options]
#   -b ML_BENCH   default build/avx512vnni/ml_bench (built if missing)
#   -s SHAPE      ml_bench --shape (default stories15M)
#   -w WTYPE      q8_0 | q4_0 (default q8_0)
#   -t LIST       thread counts, e.g. 1,2,4 (default 1,2)
#   -r ROUNDS     default 3
#   -n REPS       ml_bench --reps and llama-bench -r (default 3)
#   -k TOKENS     tokens decoded per run, ml_bench --tokens and llama-bench -n (default 128)
#   -l LLAMA      a llama-bench binary (or env LLAMA_BENCH); adds its columns
#   -g GGUF       the model for llama-bench at the same shape (or env LLAMA_MODEL)
# A hog is `sh -c 'while :; do :; done'`, kept by PID, killed when its load
# is done and by the EXIT trap; `timeout` bounds it even if this script is
# killed outright.
set -u
cd "$(dirname "$0")/.."
BENCH=build/avx512vnni/ml_bench SHAPE=stories15M WTYPE=q8_0 THREADS=1,2 ROUNDS=3 REPS=3 TOKENS=128
LLAMA=${LLAMA_BENCH:-} GGUF=${LLAMA_MODEL:-}
HOG_MAX_S=600 # no load's runs take this long; a hog left behind dies by then
while getopts "b:s:w:t:r:n:k:l:g:h" opt; do
    case $opt in
        b) BENCH=$OPTARG ;; s) SHAPE=$OPTARG ;; w) WTYPE=$OPTARG ;; t) THREADS=$OPTARG ;;
        r) ROUNDS=$OPTARG ;; n) REPS=$OPTARG ;; k) TOKENS=$OPTARG ;; l) LLAMA=$OPTARG ;; g) GGUF=$OPTARG ;;
        *) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
if [ ! -x "$BENCH" ] && [ "$BENCH" = build/avx512vnni/ml_bench ]; then
    make -s ISA=avx512vnni THREADS=pthread "$BENCH" >/dev/null || exit 1
fi
[ -x "$BENCH" ] || { echo "bench_under_load: no ml_bench at $BENCH" >&2; exit 2; }
if [ -n "$LLAMA" ] && { [ ! -x "$LLAMA" ] || [ ! -f "$GGUF" ]; }; then
    echo "bench_under_load: llama-bench needs an executable (-l) and a .gguf of the same shape (-g)" >&2
    exit 2
fi

out=$(mktemp -d)
hogs=()
stop_hogs() {
    if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; fi
    hogs=()
}
trap 'stop_hogs; rm -rf "$out"' EXIT
trap 'exit 130' INT TERM

# start_hogs NICE...: one hog per argument, at that nice level.
start_hogs() {
    for n in "$@"; do
        nice -n "$n" timeout "$HOG_MAX_S" sh -c 'while :; do :; done' &
        hogs+=($!)
    done
    sleep 0.5 # let the scheduler place them
}

LOADS=("idle" "one hog at nice 19" "two hogs at nice 19" "one hog at nice 0")
NICES=("" "19" "19 19" "0")
IFS=, read -r -a TS <<<"$THREADS"

# Each run appends "load_index engine threads tok/s" lines to $out/rows.
for r in $(seq "$ROUNDS"); do
    for li in "${!LOADS[@]}"; do
        # shellcheck disable=SC2086
        start_hogs ${NICES[$li]}
        "$BENCH" --model-only --shape "$SHAPE" --wtype "$WTYPE" -t "$THREADS" --reps "$REPS" --tokens "$TOKENS" \
            >"$out/log" 2>&1 ||
            { echo "bench_under_load: ml_bench failed:" >&2; cat "$out/log" >&2; exit 1; }
        awk -v li="$li" '$1 == "#row" { n = split($4, a, "_"); sub("T$", "", a[n]); print li, "ours", a[n], $5 }' \
            "$out/log" >>"$out/rows"
        if [ -n "$LLAMA" ]; then
            for t in "${TS[@]}"; do
                "$LLAMA" -m "$GGUF" -p 0 -n "$TOKENS" -t "$t" -r "$REPS" -mmp 0 -o csv >"$out/llog" 2>/dev/null ||
                    { echo "bench_under_load: llama-bench failed" >&2; exit 1; }
                # The avg_ts column of its CSV, found by the header's name.
                awk -F, -v li="$li" -v t="$t" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /avg_ts/) c = i; next }
                    c { gsub(/"/, "", $c); print li, "llama.cpp", t, $c }' "$out/llog" >>"$out/rows"
            done
        fi
        stop_hogs
    done
    echo "round $r of $ROUNDS done" >&2
done

# cell LOAD ENGINE THREADS: "median (min-max)" over the rounds, or "-".
cell() {
    awk -v li="$1" -v e="$2" -v t="$3" '$1 == li && $2 == e && $3 == t { print $4 }' "$out/rows" | sort -g |
        awk '{ a[NR] = $1 } END { if (!NR) { print "-"; exit }
             m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
             f = m < 100 ? "%.1f (%.1f-%.1f)\n" : "%.0f (%.0f-%.0f)\n"; printf f, m, a[1], a[NR] }'
}
engines=(ours)
[ -n "$LLAMA" ] && engines+=(llama.cpp)
echo
echo "$BENCH --model-only --shape $SHAPE --wtype $WTYPE -t $THREADS --reps $REPS --tokens $TOKENS" \
    "${LLAMA:+; $LLAMA -m $GGUF -p 0 -n $TOKENS -t N -r $REPS -mmp 0}"
echo "tok/s, median (min-max) of $ROUNDS interleaved rounds; $(nproc) CPUs; $(date -u '+%F %H:%M UTC')"
echo
printf '| load beside the benchmark |'
for e in "${engines[@]}"; do for t in "${TS[@]}"; do printf ' %s %sT |' "$e" "$t"; done; done
printf '\n| --- |'
for e in "${engines[@]}"; do for t in "${TS[@]}"; do printf ' --- |'; done; done
printf '\n'
for li in "${!LOADS[@]}"; do
    printf '| %s |' "${LOADS[$li]}"
    for e in "${engines[@]}"; do for t in "${TS[@]}"; do printf ' %s |' "$(cell "$li" "$e" "$t")"; done; done
    printf '\n'
done
