#!/usr/bin/env bash
# Speculative verification's kernel-level bound: a build's matmul of TOKENS tokens against
# its matvec (a decode step's kernel), hot (one matrix, in cache) and cold
# (COPIES matrices, streamed from memory), Q8_0 and Q4_0 with fp16 scales,
# 1 thread, in ns per 16 rows x 1 block (driver: tools/time_matmul.c). The
# matmul's hot figure over the matvec's cold one is the least a verification
# of TOKENS tokens can cost in decode steps, however well it prefetches.
# usage: tools/time_matmul.sh [ISA]   (default: the best build for this CPU)
# env: HOT="ROWS COLS" (default "256 2048": 288-544 KiB, in L2), COLD="ROWS
#      COLS COPIES" (default "5632 2048 50": 288-577 MB), TOKENS (default 8),
#      REPS (default 20 hot, 3 cold), PREFETCH=l1|l2|hw (the avx512vnni matvec's
#      streaming, core/tune.h; default: the CPU's choice, as ml_run makes it)
set -eu
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then
    isa=$1
else # the scalar build's probe names the best build (as make run does)
    make -s -j2 ISA=scalar build/scalar/ml_run >&2
    isa=$(bash tools/pick_isa.sh build/scalar/ml_run)
fi
: "${HOT:=256 2048}" "${COLD:=5632 2048 50}" "${TOKENS:=8}"
build=$(make -s ISA="$isa" print-build)
make -s -j2 ISA="$isa" "$build/ml_run" "$build/ml_bench" >&2
bin=$build/time_matmul
gen=$(make -s ISA="$isa" print-gen)
cc -std=c11 -O2 -Wall -Wextra -D_POSIX_C_SOURCE=200809L -I. -I"$build/gen" -I"$gen" -DML_ISA="$isa" \
    tools/time_matmul.c $(find "$build/obj/kernels" -name '*.o') "$build/obj/core/tune.o" "$build/obj/core/pack.o" -o "$bin" -lm
if [ -z "${PREFETCH:-}" ]; then # ml_bench's banner says which the guard chose
    PREFETCH=$("$build/ml_bench" --kernels-only --reps 1 --wtype q8_0 | head -n 1 | grep -o -- '--prefetch [a-z0-9]*' || true)
    PREFETCH=${PREFETCH#--prefetch }
    : "${PREFETCH:=l2}"
fi
read -r hr hc <<<"$HOT"
read -r cr cc_ copies <<<"$COLD"
echo "$isa build, $TOKENS tokens, 1 thread, prefetch into $PREFETCH"
for t in q8 q4; do
    "$bin" $t "$hr" "$hc" "$TOKENS" 1 "${REPS:-20}" "$PREFETCH" | sed 's/^/hot:  /'
    "$bin" $t "$cr" "$cc_" "$TOKENS" "$copies" "${REPS:-3}" "$PREFETCH" | sed 's/^/cold: /'
done
