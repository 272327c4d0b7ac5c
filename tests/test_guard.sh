#!/usr/bin/env bash
# The ISA guard, for real (DESIGN §1 criterion 3, §6): a binary started on a
# CPU that lacks its ISA exits 3 naming every missing feature and the build to
# use -- never SIGILL. Builds what it needs (make ISA=<x> into the normal build
# folders) and runs those binaries natively, under qemu-user CPU models
# (../shared/TOOLCHAINS.md) and under valgrind. Missing tools SKIP, loudly.
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
    run t "$@" "$bin"
    if why=$(died t); then bad "$what: $why"; return; fi
    if [ "$RC" -ne 0 ]; then
        bad "$what: exit $RC; $(grep -E '^FAIL|legacy-ml:' "$tmp/t.out" "$tmp/t.err" | head -n 3 | tr '\n' ' ')"
        return
    fi
    ok "$what: --cpu-info 'supported', exit 0 ($(grep -hE '^[0-9]+ passed, ' "$tmp/t.out" | tail -n 1))"
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
X86_RE='[[:space:]]v[a-z0-9]+ |%[yz]mm|%k[0-7]'

# ---- x86: native, qemu-x86_64, valgrind ---------------------------------
X86_ISAS="sse2 sse41 avx2 avxvnni avx512vnni"
declare -A XBIN XRBIN
if [ "$host_x86" = 1 ] && have gcc; then
    for isa in $X86_ISAS; do
        build "$isa" "$isa" && XBIN[$isa]=$BIN && XRBIN[$isa]=$RBIN &&
            baseline "$isa" "$DIR" objdump "$X86_RE"
    done
    # Native: each build either runs (this host has its ISA) or refuses
    # cleanly; which one is decided by the report, so the test holds on
    # any x86-64 host.
    for isa in $X86_ISAS; do
        [ -n "${XBIN[$isa]:-}" ] || continue
        run n "${XBIN[$isa]}" --cpu-info
        if [ "$RC" -ne 0 ]; then bad "$isa: native --cpu-info exit $RC"; continue; fi
        if grep -q '^  this build  : supported' "$tmp/n.out"; then
            runs "$isa" "${XBIN[$isa]}"
        else
            best=$(sed -n 's/^  best build  : \([a-z0-9_]*\) .*/\1/p' "$tmp/n.out")
            refuses "$isa" "$isa" "${XRBIN[$isa]}" "~" "$best"
        fi
    done
else
    skip "x86: not an x86-64 host with gcc; native x86 guard checks not run"
fi

if [ "$host_x86" = 1 ] && have qemu-x86_64; then
    Q=(qemu-x86_64 -cpu)
    [ -n "${XBIN[sse2]:-}" ] && runs sse2 "${XBIN[sse2]}" "${Q[@]}" qemu64
    if [ -n "${XBIN[sse41]:-}" ]; then
        runs sse41 "${XBIN[sse41]}" "${Q[@]}" Nehalem
        refuses sse41 sse41 "${XRBIN[sse41]}" "SSE4.1" sse2 "${Q[@]}" core2duo
        refuses sse41 sse41 "${XRBIN[sse41]}" "SSSE3, SSE4.1" sse2 "${Q[@]}" qemu64
    fi
    if [ -n "${XBIN[avx2]:-}" ]; then
        runs avx2 "${XBIN[avx2]}" "${Q[@]}" max
        refuses avx2 avx2 "${XRBIN[avx2]}" "AVX, FMA, AVX2" sse41 "${Q[@]}" Westmere
        refuses avx2 avx2 "${XRBIN[avx2]}" "FMA" sse41 "${Q[@]}" max,-fma
    fi
    [ -n "${XBIN[avxvnni]:-}" ] &&
        refuses avxvnni avxvnni "${XRBIN[avxvnni]}" "AVX-VNNI" avx2 "${Q[@]}" max
    if [ -n "${XBIN[avx512vnni]:-}" ]; then
        refuses avx512vnni avx512vnni "${XRBIN[avx512vnni]}" \
            "~AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI" avx2 "${Q[@]}" max
        info_refused avx512vnni "${XRBIN[avx512vnni]}" avx2 "${Q[@]}" max
    fi
else
    skip "x86 qemu: qemu-x86_64 not installed (apt-get install qemu-user); CPU-model refusal tests not run"
fi

# valgrind shows the CPU without AVX-VNNI and AVX-512 (TOOLCHAINS.md).
if [ "$host_x86" = 1 ] && have valgrind; then
    V=(valgrind -q)
    [ -n "${XBIN[avx2]:-}" ] && [ -x "$(dirname "${XBIN[avx2]}")/test_isa_check" ] &&
        runs avx2 "$(dirname "${XBIN[avx2]}")/test_isa_check" "${V[@]}"
    [ -n "${XBIN[avxvnni]:-}" ] &&
        refuses avxvnni avxvnni "${XRBIN[avxvnni]}" "AVX-VNNI" avx2 "${V[@]}"
    [ -n "${XBIN[avx512vnni]:-}" ] &&
        refuses avx512vnni avx512vnni "${XRBIN[avx512vnni]}" \
            "~AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI" avx2 "${V[@]}"
else
    skip "valgrind: not installed; the valgrind refusal checks (avxvnni, avx512vnni) not run"
fi

# ---- 32-bit x86 (M32=1): every build needs SSE2 (its float math) -----------
# The guard stays at plain i686: on a Pentium II/III it must name SSE2, not
# die of SIGILL. qemu-i386 -cpu n270 is the Atom of the netbooks (SSSE3).
if [ "$host_x86" = 1 ] && have gcc && echo 'int main(void) { return 0; }' |
    gcc -m32 -x c - -o "$tmp/m32" 2>/dev/null; then
    declare -A IBIN IRBIN
    for isa in scalar sse2 sse41; do
        build "$isa-i686" "$isa" M32=1 && IBIN[$isa]=$BIN && IRBIN[$isa]=$RBIN &&
            baseline "$isa-i686" "$DIR" objdump '%xmm|%[yz]mm|%k[0-7]'
    done
    if have qemu-i386; then
        for isa in scalar sse2; do
            [ -n "${IBIN[$isa]:-}" ] || continue
            for cpu in pentium2 pentium3; do
                refuses "$isa-i686" "$isa" "${IRBIN[$isa]}" "SSE2" none qemu-i386 -cpu "$cpu"
            done
        done
        [ -n "${IBIN[scalar]:-}" ] && runs scalar-i686 "${IBIN[scalar]}" qemu-i386 -cpu n270
        [ -n "${IBIN[sse41]:-}" ] &&
            refuses sse41-i686 sse41 "${IRBIN[sse41]}" "SSE4.1" sse2 qemu-i386 -cpu n270
    else
        skip "i686: qemu-i386 not installed (apt-get install qemu-user); Pentium II/III refusals not run"
    fi
else
    skip "i686: gcc -m32 cannot link (apt-get install gcc-12-multilib); 32-bit guard checks not run"
fi

# ---- ARM: cross gcc + qemu-user -----------------------------------------
A32=arm-linux-gnueabihf- A64=aarch64-linux-gnu-
if have ${A32}gcc && have qemu-arm; then
    if build neon-armv7 neon CROSS=$A32; then
        baseline neon-armv7 "$DIR" ${A32}objdump '[[:space:]]q[0-9]+|\.i(8|16|32|64)[[:space:]]'
        Q=(qemu-arm -L /usr/arm-linux-gnueabihf -cpu)
        runs neon-armv7 "$BIN" "${Q[@]}" cortex-a15
        refuses neon-armv7 neon "$RBIN" "NEON" scalar "${Q[@]}" cortex-a15,neon=off
    fi
else
    skip "neon-armv7: ${A32}gcc or qemu-arm missing (apt-get install gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user)"
fi
if have ${A64}gcc && have qemu-aarch64; then
    Q=(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu)
    A64_RE='[[:space:]]z[0-9]+\.|[[:space:]]p[0-9]+[/.]|[[:space:]][su]dot[[:space:]]'
    if build neon_dotprod-aarch64 neon_dotprod CROSS=$A64; then
        baseline neon_dotprod-aarch64 "$DIR" ${A64}objdump "$A64_RE"
        runs neon_dotprod-aarch64 "$BIN" "${Q[@]}" cortex-a76
        refuses neon_dotprod-aarch64 neon_dotprod "$RBIN" "DOTPROD" neon "${Q[@]}" cortex-a53
    fi
    if build sve-aarch64 sve CROSS=$A64; then
        baseline sve-aarch64 "$DIR" ${A64}objdump "$A64_RE"
        runs sve-aarch64 "$BIN" "${Q[@]}" max
        refuses sve-aarch64 sve "$RBIN" "SVE" neon_dotprod "${Q[@]}" cortex-a76
        refuses sve-aarch64 sve "$RBIN" "SVE" neon_dotprod "${Q[@]}" max,sve=off
    fi
else
    skip "aarch64: ${A64}gcc or qemu-aarch64 missing (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
fi

finish
