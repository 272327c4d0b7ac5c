#!/usr/bin/env bash
# The ISA guard, for real (DESIGN §1 criterion 3, §6): a binary started on a
# CPU that lacks its ISA exits 3 naming every missing feature and the build to
# use -- never SIGILL. Builds what it needs (make ISA=<x> into the normal build
# folders) and runs those binaries natively, under qemu-user CPU models
# (../shared/TOOLCHAINS.md) and under valgrind. Missing tools SKIP, loudly.
# The builds and their cross prefixes and qemu come from the ISA registry
# (config/isas.txt); the CPUs and what each build must do there from
# config/guard.txt. --cpu-info --json is checked against the report each time
# a build runs or answers a refused CPU.
# Each line starts with the build label ("avx2:", "neon-armv7:"), which names
# its row of the results file, so tests/matrix.sh shows the result per build.
# tests/matrix.sh runs this once (ML_SKIP_TESTS keeps it out of each row).
# env: ML_JOBS
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/sh_lib.sh

# The compilers are part of what is tested: gcc natively, the CROSS gcc for ARM.
unset CC M32  # each build below names its compiler and word size
# A parent make's command line (make test ISA=neon CROSS=...) must not leak
# into the builds made here.
unset MAKEFLAGS MFLAGS MAKELEVEL
JOBS=${ML_JOBS:-2}
scratch
have() { command -v "$1" >/dev/null 2>&1; }
host_x86=0
case $(uname -m) in x86_64 | amd64) host_x86=1 ;; esac

# ---- building -----------------------------------------------------------
# build LABEL ISA [make args]: sets DIR (the build folder) and BIN (a test
# binary of that build: test_kernels runs the build's kernels, else
# test_isa_check) and RBIN (ml_run if built, the binary users start, else BIN).
# make -k, so a half-finished part of the tree elsewhere does not hide the
# guard; after a failed make, a binary counts only if make -q says it is up
# to date (not a stale leftover).
build() {
    local label=$1 isa=$2; shift 2
    DIR=$(make -s ISA="$isa" "$@" print-build 2>/dev/null) || DIR=build/$isa
    make -k -j"$JOBS" ISA="$isa" "$@" >"$tmp/$label.make" 2>&1
    local rc=$? b
    BIN="" RBIN=""
    for b in test_kernels test_isa_check ml_run; do
        [ -x "$DIR/$b" ] || continue
        if [ "$rc" -eq 0 ] || make -q ISA="$isa" "$@" "$DIR/$b" 2>/dev/null; then
            [ -z "$BIN" ] && BIN=$DIR/$b
            [ "$b" = ml_run ] && RBIN=$DIR/$b
        fi
    done
    [ -z "$RBIN" ] && RBIN=$BIN
    if [ -z "$BIN" ]; then
        bad "$label: build failed (make ISA=$isa $*); last lines: $(grep -E 'error|Error' "$tmp/$label.make" | head -n 3 | tr '\n' ' ')"
        return 1
    fi
    [ "$rc" -ne 0 ] && echo "# $label: make ISA=$isa $* partly failed; testing with $BIN"
    return 0
}

# run OUT cmd...: stdout/stderr into $tmp/OUT.{out,err}, exit code into RC.
run() {
    local out=$1; shift
    timeout 900 "$@" >"$tmp/$out.out" 2>"$tmp/$out.err"
    RC=$?
}
# Died of a signal (qemu and bash report 128+N; SIGILL is 132) or timed out?
died() {
    if [ "$RC" -eq 124 ]; then echo "timed out"; return 0; fi
    if [ "$RC" -ge 128 ] || grep -q 'Illegal instruction\|uncaught target signal' "$tmp/$1.err"; then
        echo "died of signal $((RC - 128)) ($(grep -o 'signal [0-9]* ([^)]*)' "$tmp/$1.err" | head -n 1))"
        return 0
    fi
    return 1
}

# ---- the checks ---------------------------------------------------------
# refuses LABEL ISA BINARY WANT BEST RUNNER...
#   WANT: the exact list the message names after "lacks: " ("AVX, FMA, AVX2"),
#   or "~A, B": at least A and B, any others only from the AVX-512/AVX-VNNI
#   family (what avx512vnni needs depends on its fallback chain); "~" alone:
#   any list (a native refusal on a host older than this one).
refuses() {
    local label=$1 isa=$2 bin=$3 want=$4 best=$5; shift 5
    local what="$label: refused under '$*' (want exit 3 naming ${want#\~})"
    run r "$@" "$bin"
    local why msg lacks
    if why=$(died r); then bad "$what: $why"; return; fi
    msg=$(grep -m 1 'legacy-ml: this binary was built for' "$tmp/r.err")
    if [ "$RC" -ne 3 ]; then bad "$what: exit $RC; stderr: $(head -c 300 "$tmp/r.err")"; return; fi
    if [ -z "$msg" ]; then bad "$what: no refusal message on stderr"; return; fi
    # the list ends at "; " or ". " (not at the dot of "SSE4.1")
    lacks=$(sed -n 's/.*this CPU lacks: //p' <<<"$msg" | sed -E 's/(; |\. ).*//')
    if [[ $want == \~* ]]; then
        local f extra
        for f in ${want#\~}; do
            f=${f%,}
            [[ ", $lacks," == *", $f,"* ]] || { bad "$what: $f not named: $msg"; return; }
        done
        extra=$(tr ',' '\n' <<<"$lacks" | sed 's/^ //' | grep -v -E '^(AVX-VNNI|AVX-512(F|BW|VL|VNNI))$')
        [ "$want" = "~" ] && extra=""
        [ -z "$extra" ] || { bad "$what: unexpected features named ($extra): $msg"; return; }
    elif [ "$lacks" != "$want" ]; then
        bad "$what: names '$lacks': $msg"; return
    fi
    case $msg in *"built for $isa but"*) ;; *) bad "$what: build $isa not named: $msg"; return ;; esac
    local advice="Use the $best build (make ISA=$best)."
    [ "$best" = none ] && advice="No legacy-ml build runs on this CPU"
    case $msg in *"$advice"*) ;; *) bad "$what: does not advise $best: $msg"; return ;; esac
    ok "$label: $(basename "$bin") under '$*' exits 3: lacks: $lacks; advises $best"
}

# runs LABEL BINARY RUNNER...: the build works on that CPU: --cpu-info says
# supported, and the binary (a real test of the build) exits 0.
runs() {
    local label=$1 bin=$2; shift 2
    local what
    what="$label: $(basename "$bin") runs under '${*:-native}'"
    run i "$@" "$bin" --cpu-info
    local why
    if why=$(died i); then bad "$what: --cpu-info $why"; return; fi
    if [ "$RC" -ne 0 ] || ! grep -q '^  this build  : supported' "$tmp/i.out"; then
        bad "$what: --cpu-info exit $RC, not 'supported': $(grep 'this build' "$tmp/i.out")"; return
    fi
    # Under an emulator, test_kernels' quick mode: every kernel on every
    # path still runs (what a CPU lacking an instruction would trip on), on
    # fewer shapes; its full sweep is each row's own (tests/matrix.sh).
    if [ $# -gt 0 ]; then ML_TEST_QUICK=1 run t "$@" "$bin"; else run t "$@" "$bin"; fi
    if why=$(died t); then bad "$what: $why"; return; fi
    if [ "$RC" -ne 0 ]; then
        bad "$what: exit $RC; $(grep -E '^FAIL|legacy-ml:' "$tmp/t.out" "$tmp/t.err" | head -n 3 | tr '\n' ' ')"
        return
    fi
    ok "$what: --cpu-info 'supported', exit 0 ($(grep -hE '^[0-9]+ passed, ' "$tmp/t.out" | tail -n 1))"
    json "$label" "$bin" "$@"
}

# json LABEL BINARY RUNNER...: --cpu-info --json on that CPU is one line of
# valid JSON (python3's json, where there is one) whose runs and best are the
# report's "runs here" and "best build" (tools/ml.sh and tools/pick_isa.sh
# read the JSON with sed).
json() {
    local label=$1 bin=$2; shift 2
    local what="$label: $(basename "$bin") --cpu-info --json under '${*:-native}'" why
    run i "$@" "$bin" --cpu-info
    run j "$@" "$bin" --cpu-info --json
    if why=$(died j); then bad "$what: $why"; return; fi
    if [ "$RC" -ne 0 ] || [ "$(wc -l <"$tmp/j.out")" -ne 1 ]; then bad "$what: exit $RC, $(wc -l <"$tmp/j.out") lines"; return; fi
    if have python3 && ! python3 -c 'import json, sys; json.load(sys.stdin)' <"$tmp/j.out" 2>"$tmp/j.py"; then
        bad "$what: not JSON ($(tail -n 1 "$tmp/j.py")): $(head -c 300 "$tmp/j.out")"; return
    fi
    local runs best pruns pbest
    runs=$(sed -n 's/.*"runs":\[\([^]]*\)\].*/\1/p' "$tmp/j.out" | tr -d '"' | tr ',' ' ')
    best=$(sed -n 's/.*"best":"\([a-z0-9_]*\)".*/\1/p' "$tmp/j.out")
    pruns=$(sed -n 's/^  runs here   : //p' "$tmp/i.out")
    pbest=$(sed -n 's/^  best build  : \([a-z0-9_]*\).*/\1/p' "$tmp/i.out")
    [ "$pbest" = none ] && pbest=""
    if [ "$runs" = "$pruns" ] && [ "$best" = "$pbest" ] && grep -q '"arch":"[a-z0-9]*","detected":true,' "$tmp/j.out" &&
        grep -q '"features":\[' "$tmp/j.out"; then
        ok "$what: valid, runs '$runs', best ${best:-null}, as the report says"
    else
        bad "$what: runs '$runs' best '$best', the report: runs '$pruns' best '$pbest': $(head -c 300 "$tmp/j.out")"
    fi
}

# --cpu-info answers even where the build is refused (it runs before the check).
info_refused() {
    local label=$1 bin=$2 best=$3; shift 3
    run i "$@" "$bin" --cpu-info
    local why
    if why=$(died i); then bad "$label: --cpu-info under '$*' $why"; return; fi
    if [ "$RC" -eq 0 ] && grep -q '^  this build  : NOT supported' "$tmp/i.out" &&
        grep -q "^  best build  : $best " "$tmp/i.out"; then
        ok "$label: --cpu-info under '$*' exits 0, says NOT supported, best build $best"
    else
        bad "$label: --cpu-info under '$*': exit $RC, output: $(head -c 400 "$tmp/i.out")"
    fi
    json "$label" "$bin" "$@"
}

# baseline LABEL DIR OBJDUMP REGEX: the guard's objects (everything that runs
# before the check) hold no instruction of the build's ISA. Catches ISA flags
# or LTO reaching core/isa_check.c / app/main_guard.c, before any CPU does.
baseline() {
    local label=$1 dir=$2 od=$3 re=$4 objs hits
    objs="$dir/obj/core/isa_check.o $dir/obj/app/main_guard.o"
    if ! have "$od"; then skip "$label: $od missing; guard objects not disassembled"; return; fi
    # shellcheck disable=SC2086
    if ! hits=$("$od" -d $objs 2>&1); then bad "$label: $od -d $objs failed: ${hits:0:200}"; return; fi
    hits=$(grep -E "$re" <<<"$hits" | head -n 3)
    if [ -z "$hits" ]; then ok "$label: guard objects hold baseline code only ($od -d)"
    else bad "$label: guard objects contain ISA instructions: $(tr -s ' \t' ' ' <<<"$hits" | tr '\n' ';')"; fi
}

# ---- the builds: from the registry (config/isas.txt) --------------------
reg() { awk -f tools/isas.awk "$@" config/isas.txt; }
X86_ISAS=$(reg -v want=rows | awk -F'|' '$2 == "x86" { printf "%s ", $1 }')
I686_ISAS=$(reg -v want=rows | awk -F'|' '$2 ~ /^(x86|any)$/ && (";" $3 ";") ~ /;i686;/ { printf "%s ", $1 }')
# What the guard's objects must not contain, per architecture (objdump -d text).
X86_RE='[[:space:]]v[a-z0-9]+ |%[yz]mm|%k[0-7]'
I686_RE='%xmm|%[yz]mm|%k[0-7]'
ARM32_RE='[[:space:]]q[0-9]+|\.i(8|16|32|64)[[:space:]]'
A64_RE='[[:space:]]z[0-9]+\.|[[:space:]]p[0-9]+[/.]|[[:space:]][su]dot[[:space:]]'
m32_ok=0
if [ "$host_x86" = 1 ] && have gcc && echo 'int main(void) { return 0; }' | gcc -m32 -x c - -o "$tmp/m32" 2>/dev/null; then
    m32_ok=1
fi

# label_build LABEL: builds the build a results label names (<isa>, <isa>-i686,
# <isa>-<arch label>) once, with its baseline check; sets B_BIN, B_RBIN (empty
# if it cannot be built here), B_RUN (its qemu-user) and B_WHY (why not).
declare -A L_BIN L_RBIN L_RUN L_WHY
label_build() {
    local label=$1 isa args=() od=objdump re run="" why="" a
    if [ -z "${L_WHY[$label]+x}" ]; then
        isa=${label%-*}
        if [ "$label" = "$isa" ] || [[ " $X86_ISAS " == *" $label "* ]]; then
            isa=$label re=$X86_RE run=qemu-x86_64
            [ "$host_x86" = 1 ] && have gcc || why="not an x86-64 host with gcc"
        elif [ "${label##*-}" = i686 ]; then
            args=(M32=1) re=$I686_RE run=qemu-i386
            [ "$m32_ok" = 1 ] || why="gcc -m32 cannot link (apt-get install gcc-12-multilib)"
        else
            local cross qemu tag
            for a in arm32 aarch64; do
                IFS='|' read -r cross qemu tag < <(reg -v want=arch -v arch=$a)
                [ "$tag" = "${label##*-}" ] && break
            done
            [ "$tag" = "${label##*-}" ] || { L_WHY[$label]="no architecture line labelled ${label##*-} in config/isas.txt"; L_BIN[$label]=""; return 1; }
            args=("CROSS=$cross") od=${cross}objdump run="$qemu -L /usr/${cross%-}"
            [ "$a" = arm32 ] && re=$ARM32_RE || re=$A64_RE
            have "${cross}gcc" || why="${cross}gcc missing (apt-get install gcc-${cross%-} and its libc6-dev cross package, ../shared/TOOLCHAINS.md)"
        fi
        L_BIN[$label]="" L_RBIN[$label]="" L_RUN[$label]=$run L_WHY[$label]=$why
        if [ -z "$why" ]; then
            if build "$label" "$isa" "${args[@]}"; then
                L_BIN[$label]=$BIN L_RBIN[$label]=$RBIN
                baseline "$label" "$DIR" "$od" "$re"
            else
                L_WHY[$label]="build failed"
            fi
        fi
    fi
    B_BIN=${L_BIN[$label]} B_RBIN=${L_RBIN[$label]} B_RUN=${L_RUN[$label]} B_WHY=${L_WHY[$label]}
    [ -n "$B_BIN" ]
}

# ---- x86, natively: each build either runs (this host has its ISA) or
# refuses cleanly; which one is decided by the report, so the test holds on
# any x86-64 host. ----------------------------------------------------------
if [ "$host_x86" = 1 ] && have gcc; then
    for isa in $X86_ISAS; do label_build "$isa"; done
    for isa in $X86_ISAS; do
        label_build "$isa" || continue
        run n "$B_BIN" --cpu-info
        if [ "$RC" -ne 0 ]; then bad "$isa: native --cpu-info exit $RC"; continue; fi
        if grep -q '^  this build  : supported' "$tmp/n.out"; then
            runs "$isa" "$B_BIN"
        else
            best=$(sed -n 's/^  best build  : \([a-z0-9_]*\) .*/\1/p' "$tmp/n.out")
            refuses "$isa" "$isa" "$B_RBIN" "~" "$best"
        fi
    done
else
    skip "x86: not an x86-64 host with gcc; native x86 guard checks not run"
fi
# every i686 build of the registry, for its baseline check
for isa in $I686_ISAS; do
    label_build "$isa-i686" || { skip "$isa-i686: ${B_WHY}; 32-bit guard checks not run"; break; }
done

# ---- other CPUs: config/guard.txt --------------------------------------
declare -A SKIPPED
while read -r label runner cpu expect named best <&3; do
    case $label in '' | '#'*) continue ;; esac
    if ! label_build "$label"; then
        [ -n "${SKIPPED[$label]+x}" ] || skip "$label: $B_WHY; its config/guard.txt lines not run"
        SKIPPED[$label]=1
        continue
    fi
    if [ "$runner" = valgrind ]; then
        cmd=(valgrind -q)
    else
        read -ra cmd <<<"$B_RUN"
        cmd+=(-cpu "$cpu")
    fi
    if ! have "${cmd[0]}"; then
        pkg=qemu-user; [ "${cmd[0]}" = valgrind ] && pkg=valgrind
        [ -n "${SKIPPED[${cmd[0]}]+x}" ] || skip "${cmd[0]} not installed (apt-get install $pkg): its config/guard.txt lines not run"
        SKIPPED[${cmd[0]}]=1
        continue
    fi
    named=${named//,/, }
    case $expect in
    runs)
        bin=$B_BIN
        # valgrind runs the guard's own test: test_kernels would take minutes there
        [ "$runner" = valgrind ] && bin=$(dirname "$B_BIN")/test_isa_check
        runs "$label" "$bin" "${cmd[@]}" ;;
    refuses) refuses "$label" "${label%-*}" "$B_RBIN" "$named" "$best" "${cmd[@]}" ;;
    info) info_refused "$label" "$B_RBIN" "$best" "${cmd[@]}" ;;
    *) bad "config/guard.txt: $label $runner $cpu: unknown expectation '$expect'" ;;
    esac
done 3<config/guard.txt

finish
