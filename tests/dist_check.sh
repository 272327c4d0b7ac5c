#!/usr/bin/env bash
# make dist's folder, checked (issue: binaries that run on old systems):
#  - SHA256SUMS matches; every executable is static (no dynamic section, so
#    nothing is loaded from the system: ARM ones run under qemu WITHOUT -L);
#  - every ml_run writes the golden stories260K logits (tests/golden/), run
#    natively or under qemu on a CPU model that has its ISA; an x86 build
#    this CPU lacks must be refused by its guard instead;
#  - the launcher picks the best build for this CPU and, from the CPU report
#    of qemu's Nehalem and Core 2 Duo, sse41 and sse2; it is POSIX sh (dash).
# env: DIST (a folder made by `make dist`; default: made here into build/dist)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }

if [ -z "${DIST:-}" ]; then
    DIST=build/dist
    make -s dist DIST=$DIST >"$tmp/dist.log" 2>&1 || { bad "make dist failed: $(tail -n 3 "$tmp/dist.log")"; finish; }
fi
if (cd "$DIST" && sha256sum --quiet -c SHA256SUMS) >"$tmp/sum" 2>&1; then ok "SHA256SUMS: $(wc -l <"$DIST/SHA256SUMS") files match"
else bad "SHA256SUMS: $(head -n 3 "$tmp/sum")"; fi

# ---- static ---------------------------------------------------------------------
for b in "$DIST"/*/*/ml_*; do
    rel=${b#"$DIST"/}
    if readelf -d "$b" 2>&1 | grep -q 'There is no dynamic section' && file -b "$b" | grep -q 'statically linked'; then
        ok "$rel: static, no dynamic section"
    else
        bad "$rel: not static: $(readelf -d "$b" 2>&1 | grep -m 3 NEEDED)"
    fi
done

# ---- golden logits, per build ------------------------------------------------------
# the shipped model (tests/test_default_model.sh checks it is convert.py's output)
model=models/stories260K/stories260K_q8_0.mlb tok=models/stories260K/tok512.bin
golden=$(cat tests/golden/stories260K_q8_0.logits64.sha256)
# qemu for an ARM build: the qemu-user of the registry's arch line labelled as
# the dist folder (config/isas.txt), on the first CPU of the build's line's
# "run on" column; scalar runs on the first CPU of its architecture's lines.
qemu_for() {  # dist arch, isa
    local a q="" label=""
    for a in arm32 aarch64; do
        IFS='|' read -r _ q label < <(awk -f tools/isas.awk -v want=arch -v arch=$a config/isas.txt)
        [ "$label" = "$1" ] && break
    done
    [ "$label" = "$1" ] || return 1
    local cpu
    cpu=$(awk -f tools/isas.awk -v want=rows config/isas.txt |
        awk -F'|' -v a="$a" -v i="$2" '$2 == a && (i == "scalar" || $1 == i) { split($3, c, ";"); print c[1]; exit }')
    [ -n "$cpu" ] && echo "$q -cpu $cpu"
}
for b in "$DIST"/*/*/ml_run; do
    rel=${b#"$DIST"/} key=${rel%/ml_run} runner=
    case $key in
    i686/*)
        # natively where the kernel runs 32-bit programs, else under qemu-i386
        if ! "$b" --cpu-info >/dev/null 2>&1; then
            have qemu-i386 || { skip "$rel: this kernel runs no 32-bit programs and there is no qemu-i386"; continue; }
            runner="qemu-i386 -cpu max"
        fi ;;&
    x86_64/* | i686/*)
        # shellcheck disable=SC2086
        if ! $runner "$b" --cpu-info 2>/dev/null | grep -q '^  this build  : supported'; then
            # shellcheck disable=SC2086
            $runner "$b" -m "$model" >/dev/null 2>"$tmp/err"
            if [ $? -eq 3 ] && grep -q 'built for' "$tmp/err"; then ok "$rel: refused by its guard (CPU lacks ${key#*/})"
            else bad "$rel: this CPU lacks ${key#*/} and the guard did not refuse"; fi
            continue
        fi ;;
    *)
        runner=$(qemu_for "${key%/*}" "${key#*/}")
        if [ -z "$runner" ] || ! have "${runner%% *}"; then skip "$rel: no ${runner:-qemu} to run it"; continue; fi ;;
    esac
    # shellcheck disable=SC2086
    $runner "$b" -m "$model" -z "$tok" -i "Once upon a time" -n 64 --temp 0 \
        --logits "$tmp/l.f32" >/dev/null 2>"$tmp/err"
    sum=$(sha256sum <"$tmp/l.f32" | cut -d' ' -f1)
    if [ "$sum" = "$golden" ]; then ok "$rel: golden stories260K logits${runner:+ (${runner})}"
    else bad "$rel: logits hash $sum, golden $golden: $(head -n 2 "$tmp/err")"; fi
done

# ---- the launcher ---------------------------------------------------------------------
if [ -x "$DIST/x86_64/scalar/ml_run" ] && [ "$(uname -m)" = x86_64 ]; then
    # The guard's own answer (the prose "best build"), not the launcher's walk of "runs".
    best=$("$DIST/x86_64/scalar/ml_run" --cpu-info | sed -n 's/^  best build  : \([a-z0-9_]*\).*/\1/p')
    got=$(dash "$DIST/ml" --which)
    if [ ! -x "$DIST/x86_64/$best/ml_run" ]; then skip "launcher: this CPU's best build, $best, is not in $DIST (a partial dist)"
    elif [ "$got" = "$(cd "$DIST" && pwd)/x86_64/$best/ml_run" ]; then ok "launcher (dash) picks $best, the guard's best build for this CPU"
    else bad "launcher picks '$got', the guard's best build for this CPU is $best"; fi
    if [ -x "$DIST/x86_64/$best/ml_run" ]; then
        dash "$DIST/ml" -v --cpu-info >"$tmp/out" 2>"$tmp/err"
        grep -q "^ml: x86_64/$best/ml_run (" "$tmp/err" && grep -q "this binary : $best build" "$tmp/out" &&
            ok "launcher -v says x86_64/$best/ml_run and execs it with the arguments" ||
            bad "launcher -v: $(cat "$tmp/err") / $(grep 'this binary' "$tmp/out")"
    fi
    got=$(ML_ISA=scalar dash "$DIST/ml" --which bench)
    [ "${got##*/x86_64/}" = scalar/ml_bench ] && ok "launcher: ML_ISA=scalar bench -> scalar/ml_bench" || bad "launcher: ML_ISA=scalar bench -> $got"
    if have qemu-x86_64; then
        for cpu in Nehalem:sse41 core2duo:sse2; do
            [ -x "$DIST/x86_64/${cpu#*:}/ml_run" ] || { skip "launcher on ${cpu%%:*}: no ${cpu#*:} build in $DIST"; continue; }
            qemu-x86_64 -cpu "${cpu%%:*}" "$DIST/x86_64/scalar/ml_run" --cpu-info --json >"$tmp/report" 2>/dev/null
            got=$(ML_CPU_REPORT=$tmp/report dash "$DIST/ml" --which)
            [ "${got##*/x86_64/}" = "${cpu#*:}/ml_run" ] && ok "launcher: with a ${cpu%%:*} CPU report (qemu) it picks ${cpu#*:}" ||
                bad "launcher: with a ${cpu%%:*} CPU report it picks $got, expected ${cpu#*:}"
        done
    else
        skip "launcher on other CPUs: no qemu-x86_64"
    fi
    if ML_ISA=nosuch dash "$DIST/ml" --cpu-info >/dev/null 2>"$tmp/err"; then bad "launcher: ML_ISA=nosuch ran something"
    else grep -q 'no such build' "$tmp/err" && ok "launcher: ML_ISA=nosuch is refused with a message" ||
        bad "launcher: ML_ISA=nosuch: '$(cat "$tmp/err")'"; fi
else
    skip "launcher: not an x86-64 host with an x86_64 dist"
fi
finish
