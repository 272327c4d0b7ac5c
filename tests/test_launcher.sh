#!/usr/bin/env bash
# The launcher (tools/ml.sh, dist/ml) on a dist folder of stub builds: it
# finds its builds through symlinks to it, and a CPU report that is missing or
# not a report is named as the fault (not the CPU). The stubs print which
# build ran; the floor stub answers --cpu-info --json with a fixed report.
# tests/dist_check.sh runs the real launcher on real builds (make dist).
# env: none (needs dash or sh; the x86-64 folder layout, so x86-64 hosts only)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh

case $(uname -m) in
x86_64 | amd64) ;;
*) skip "launcher: stub dist is laid out for x86-64, host is $(uname -m)"; finish ;;
esac
SH=$(command -v dash || command -v sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D=$tmp/dist
report='{"arch":"x86_64","runs":["scalar","sse2","sse41","avx2"],"best":"avx2"}'
for isa in scalar sse2 avx2 avx512vnni; do
    mkdir -p "$D/x86_64/$isa"
    printf '#!/bin/sh\nif [ "$1 $2" = "--cpu-info --json" ]; then echo '"'"'%s'"'"'; exit 0; fi\necho "ran %s $*"\n' \
        "$report" "$isa" >"$D/x86_64/$isa/ml_run"
    chmod +x "$D/x86_64/$isa/ml_run"
done
cp tools/ml.sh "$D/ml"; chmod +x "$D/ml"

# expect LABEL RC MESSAGE CMD...: exit code RC and MESSAGE on its output.
expect() {
    local label=$1 rc=$2 msg=$3; shift 3
    "$@" >"$tmp/out" 2>&1
    local got=$?
    if [ "$got" = "$rc" ] && grep -qF -- "$msg" "$tmp/out"; then ok "$label"
    else bad "$label: exit $got (expected $rc), output '$(head -c 300 "$tmp/out")', expected '$msg'"; fi
}

expect "launcher: picks the best build it has of the report's runs" 0 "ran avx2 -n 3" "$SH" "$D/ml" -n 3
expect "launcher: --help is its own usage" 0 "usage: ml [-v] [run | bench | perplexity]" "$SH" "$D/ml" --help
if grep -q "^ran " "$tmp/out"; then bad "launcher: --help ran a build: $(head -c 200 "$tmp/out")"
else ok "launcher: --help runs no build"; fi
expect "launcher: run --help is ml_run's" 0 "ran avx2 --help" "$SH" "$D/ml" run --help
mkdir -p "$tmp/bin" "$tmp/bin2"
ln -s "$D/ml" "$tmp/bin/ml"
expect "launcher: through an absolute symlink" 0 "ran avx2" "$SH" "$tmp/bin/ml"
ln -s ../bin/ml "$tmp/bin2/ml"
expect "launcher: through a chain of relative symlinks" 0 "ran avx2" "$SH" "$tmp/bin2/ml"
expect "launcher: --which through a symlink names the real folder" 0 "$D/x86_64/avx2/ml_run" \
    "$SH" "$tmp/bin/ml" --which

echo '{"arch":"x86_64","runs":["scalar","sse2"],"best":"sse2"}' >"$tmp/sse2.json"
expect "launcher: ML_CPU_REPORT, a saved report" 0 "ran sse2" env ML_CPU_REPORT="$tmp/sse2.json" "$SH" "$D/ml"
expect "launcher: ML_CPU_REPORT missing is named" 1 "ML_CPU_REPORT=$tmp/none.json: no such readable file" \
    env ML_CPU_REPORT="$tmp/none.json" "$SH" "$D/ml"
expect "launcher: ML_CPU_REPORT a folder is named" 1 "ML_CPU_REPORT=$tmp: no such readable file" \
    env ML_CPU_REPORT="$tmp" "$SH" "$D/ml"
head -c 200 /dev/urandom | tr -d '\0' >"$tmp/garbage"
expect "launcher: ML_CPU_REPORT garbage is named, not the CPU" 1 "the report ML_CPU_REPORT=$tmp/garbage is not a CPU report" \
    env ML_CPU_REPORT="$tmp/garbage" "$SH" "$D/ml"
echo '{"arch":"x86_64","runs":["neon"],"best":"neon"}' >"$tmp/arm.json"
expect "launcher: a report whose builds are not here" 1 "none of the builds in $D/x86_64 runs on this CPU (it runs: neon)" \
    env ML_CPU_REPORT="$tmp/arm.json" "$SH" "$D/ml"

printf '#!/bin/sh\necho "segfault or so"\nexit 1\n' >"$D/x86_64/scalar/ml_run"
expect "launcher: a floor build that gives no report is named" 1 "x86_64/scalar/ml_run --cpu-info --json is not a CPU report" \
    "$SH" "$D/ml"
rm -r "$D/x86_64/scalar"
expect "launcher: a folder without the floor build says which file" 1 "no x86_64/scalar/ml_run" "$SH" "$D/ml"
finish
