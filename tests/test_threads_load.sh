#!/usr/bin/env bash
# Threads on a busy machine (issue 14): the THREADS=pthread build of this
# ISA, run with more threads than cores and a CPU hog beside it, must give
# logits bit-identical to -t 1, whatever the schedule; and the default -t
# is the number of CPUs the process may run on. Bounded: every run has a
# timeout, the hog is killed by PID (and dies by itself within 60 s).
# env: ISA PYTHON RUNNER, THREADS_BUILD (this build with THREADS=pthread,
#   made by make check and tests/matrix.sh)
set -u
cd "$(dirname "$0")/.."
: "${THREADS_BUILD:=}"
. tests/sh_lib.sh

tmp=$(mktemp -d)
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$tmp"' EXIT

if ! have_numpy; then
    skip "threads under load: no python3 with numpy to make the test model"
    finish
fi
if [ -n "$RUNNER" ]; then
    skip "threads under load: an emulated build ($RUNNER) is too slow to share a core with a hog"
    finish
fi
if [ -z "$THREADS_BUILD" ] || [ ! -x "$THREADS_BUILD/ml_run" ]; then
    skip "threads under load: no THREADS=pthread build ('$THREADS_BUILD'): run through make check or tests/matrix.sh"
    finish
fi
RUN=$THREADS_BUILD/ml_run

# Enough regions to meet many schedules: 4 layers x 5 regions + 1, for 256 positions.
m=$tmp/model.mlb t=$tmp/tok.bin
if ! "$PYTHON" tools/gen_random.py "$m" --dim 128 --n-layers 4 --n-heads 8 --n-kv-heads 2 --hidden-dim 384 \
    --vocab 512 --max-seq 256 --wtype q4_0 --seed 14 --unshared --tokenizer "$t" >/dev/null; then
    bad "threads under load: tools/gen_random.py failed"
    finish
fi

# logits NAME PREFIX ARGS...: greedy run over the whole context under the
# command PREFIX (may be empty), logits to $tmp/NAME.f32.
logits() {
    local name=$1 prefix=$2; shift 2
    # shellcheck disable=SC2086
    timeout 60 $prefix "$RUN" -m "$m" -z "$t" -i "hello" -n 0 --temp 0 --logits "$tmp/$name.f32" "$@" \
        >/dev/null 2>"$tmp/$name.err"
}
same() { [ -s "$tmp/t1.f32" ] && cmp -s "$tmp/t1.f32" "$tmp/$1.f32"; }

logits t1 "" -t 1
cpus=$(nproc)
over=$((2 * cpus + 1))

nice -n 0 timeout 60 sh -c 'while :; do :; done' &
hog=$!
logits over "" -t "$over"
if same over; then ok "threads under load: -t $over on $cpus CPUs beside a hog at nice 0, logits bit-identical to -t 1"
else bad "threads under load: -t $over on $cpus CPUs beside a hog, logits differ from -t 1 ($(head -c 200 "$tmp/over.err"))"; fi
# One CPU for all: four threads, and the hog, time-share a single core.
logits one_cpu "taskset -c 0" -t 4
if same one_cpu; then ok "threads under load: -t 4 on one CPU beside a hog, logits bit-identical to -t 1"
else bad "threads under load: -t 4 on one CPU beside a hog, logits differ from -t 1 ($(head -c 200 "$tmp/one_cpu.err"))"; fi
kill "$hog" 2>/dev/null
wait "$hog" 2>/dev/null
hog=

# The default -t: every CPU this process may run on (ml_run names the count).
logits dflt ""
logits dflt1 "taskset -c 0"
max=$(sed -n 's/^#define ML_THREADS_DEFAULT_MAX //p' core/threads.h)
want=$((cpus < max ? cpus : max))
if same dflt && grep -q " build, -t $want;" "$tmp/dflt.err" && same dflt1 && grep -q " build, -t 1;" "$tmp/dflt1.err"; then
    ok "default -t: $want threads on $cpus CPUs, 1 under taskset -c 0, logits bit-identical to -t 1"
else
    bad "default -t: expected $want (1 under taskset -c 0): $(grep -h " build" "$tmp/dflt.err" "$tmp/dflt1.err")"
fi
finish
