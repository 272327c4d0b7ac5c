#!/usr/bin/env bash
# make test-all: every ISA build this machine can make, each built and tested
# (tests/run_tests.sh) natively or under qemu-user, then the ISA guard tests
# (tests/test_guard.sh, once), and one matrix:
#   ISA | compiler | tests | e2e | guard refusal | how verified
# The last line is "N passed, N failed" over all rows; a build that fails
# counts as one failure. Python tests run once (the scalar gcc row).
# env: PYTHON, MODELS (from make), ML_JOBS (default 2),
#      ML_CLANG_ISAS (x86 builds also made with clang; default "scalar avx2")
set -u
cd "$(dirname "$0")/.." || exit 1

# tests/run_tests.sh runs every tests/test_*.sh, this one included: inside a
# single build's run (it exports BUILD, ISA and RUNNER) there is nothing to do.
if [ -n "${ML_IN_TEST_ALL:-}" ] || { [ -n "${BUILD+x}" ] && [ -n "${ISA+x}" ] && [ -n "${RUNNER+x}" ]; }; then
    echo "# test_all.sh is the build matrix (make test-all), not a test of one build"
    echo "#summary passed=0 failed=0 skipped=0"
    exit 0
fi
export ML_IN_TEST_ALL=1
unset CC   # each row names its compiler
# A parent make's command line (make test ISA=neon CROSS=...) must not leak
# into the builds made here.
unset MAKEFLAGS MFLAGS MAKELEVEL
: "${PYTHON:=}" "${MODELS:=../shared/models}"
export PYTHON MODELS
JOBS=${ML_JOBS:-2}
CLANG_ISAS=${ML_CLANG_ISAS:-scalar avx2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
t_start=$SECONDS

# ---- the rows -------------------------------------------------------------
# label|isa|compiler|make args|runner|how (native, qemu ..., or compile-only: why)
rows=()
notes=()
case $(uname -m) in
x86_64 | amd64)
    for isa in scalar sse2 sse41 avx2 avxvnni avx512vnni; do
        rows+=("$isa|$isa|gcc||THREADS=1||native")
    done
    rows+=("sse2-asm|sse2|gcc ASM=1|ASM=1|ASM=1 THREADS=1||native")
    if have clang; then
        for isa in $CLANG_ISAS; do rows+=("$isa-clang|$isa|clang|CC=clang|CC=clang THREADS=1||native"); done
    else
        notes+=("clang rows: clang not installed")
    fi
    ;;
*) notes+=("x86 rows: host is $(uname -m), not x86-64") ;;
esac
A32=arm-linux-gnueabihf- A64=aarch64-linux-gnu-
if have ${A32}gcc; then
    if have qemu-arm; then how="qemu-arm -cpu cortex-a15" run="qemu-arm -L /usr/arm-linux-gnueabihf -cpu cortex-a15"
    else how="compile-only: no qemu-arm" run=""; fi
    rows+=("neon-armv7|neon|${A32}gcc|CROSS=$A32|CROSS=$A32 THREADS=1|$run|$how")
else
    notes+=("ARMv7 row: ${A32}gcc not installed (apt-get install gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)")
fi
if have ${A64}gcc; then
    if have qemu-aarch64; then how="qemu-aarch64 -cpu max" run="qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max"
    else how="compile-only: no qemu-aarch64" run=""; fi
    for isa in neon neon_dotprod sve; do
        rows+=("$isa-aarch64|$isa|${A64}gcc|CROSS=$A64|CROSS=$A64 THREADS=1|$run|$how")
    done
else
    notes+=("AArch64 rows: ${A64}gcc not installed (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)")
fi

# ---- build and test each row ----------------------------------------------
TOTAL_P=0 TOTAL_F=0
declare -A R_TESTS R_E2E R_HOW R_BUILD
# "P/F/S" of a run_tests.sh line "test_x [isa]   P passed   F failed   S skipped"
pfs() { sed -E 's/.* ([0-9]+) passed +([0-9]+) failed +([0-9]+) skipped.*/\1 \2 \3/' <<<"$1"; }

for row in "${rows[@]}"; do
    IFS='|' read -r label isa compiler margs targs runner how <<<"$row"
    t0=$SECONDS
    # shellcheck disable=SC2086
    dir=$(make -s ISA="$isa" $margs print-build 2>/dev/null) || dir="build/$label"
    echo "== $label: make ISA=$isa $margs -> $dir"
    # shellcheck disable=SC2086
    if ! make -j"$JOBS" ISA="$isa" $margs >"$tmp/make.log" 2>&1; then
        echo "FAIL - $label: build failed; last lines:"; grep -E 'error|Error' "$tmp/make.log" | head -n 8 | sed 's/^/    /'
        R_BUILD[$label]="build FAILED" R_TESTS[$label]="-" R_E2E[$label]="-" R_HOW[$label]="$how"
        TOTAL_F=$((TOTAL_F + 1))
        continue
    fi
    if grep -q 'warning:' "$tmp/make.log"; then
        echo "# $label: compiler warnings:"; grep 'warning:' "$tmp/make.log" | sort -u | head -n 10 | sed 's/^/    /'
    fi
    R_BUILD[$label]=ok R_HOW[$label]="$how"
    if [ -z "$runner" ] && [ "$how" != native ]; then
        R_TESTS[$label]="not run" R_E2E[$label]="not run"
        echo "   compile-only ($how)"
        continue
    fi
    # A native build this CPU cannot run: the guard must refuse it (DESIGN §7:
    # compile + ISA-guard rejection); its tests cannot run here.
    probe=$dir/ml_run
    [ -x "$probe" ] || probe=$(find "$dir" -maxdepth 1 -name 'test_*' -type f | head -n 1)
    # shellcheck disable=SC2086
    $runner "$probe" --cpu-info >"$tmp/info" 2>&1
    if ! grep -q '^  this build  : supported' "$tmp/info"; then
        # shellcheck disable=SC2086
        $runner "$probe" >/dev/null 2>"$tmp/refuse"
        rc=$?
        if [ "$rc" -eq 3 ] && grep -q 'built for' "$tmp/refuse"; then
            R_HOW[$label]="compile + guard refusal (CPU lacks $isa)"; TOTAL_P=$((TOTAL_P + 1))
        else
            R_HOW[$label]="compile-only; guard did NOT refuse cleanly (exit $rc)"; TOTAL_F=$((TOTAL_F + 1))
        fi
        R_TESTS[$label]="not run" R_E2E[$label]="not run"
        continue
    fi
    skip_py=1
    [ "$label" = scalar ] && skip_py=0
    # shellcheck disable=SC2086
    BUILD=$dir ISA=$isa RUNNER="$runner" MAKE_ARGS="$targs" ML_SKIP_PY=$skip_py ML_SKIP_GUARD=1 \
        bash tests/run_tests.sh >"$tmp/run.log" 2>&1
    grep -E '^(FAIL|SKIP) - ' "$tmp/run.log" | grep -v 'test_guard.sh runs once' | head -n 20 | sed "s/^/   [$label] /"
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/run.log" | tail -n 1)
    if [ -z "$last" ]; then
        echo "FAIL - $label: tests/run_tests.sh printed no totals"; tail -n 5 "$tmp/run.log" | sed 's/^/    /'
        R_TESTS[$label]="no totals" R_E2E[$label]="-"; TOTAL_F=$((TOTAL_F + 1)); continue
    fi
    read -r p f s < <(sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/' <<<"$last")
    s=$((s - $(grep -c '^SKIP - guard: test_guard.sh runs once' "$tmp/run.log")))  # by design
    TOTAL_P=$((TOTAL_P + p)) TOTAL_F=$((TOTAL_F + f))
    e2e_line=$(grep -E '^test_e2e\.sh \[' "$tmp/run.log" | tail -n 1)
    if [ -n "$e2e_line" ]; then
        read -r ep ef es < <(pfs "$e2e_line")
        if [ "$ef" -gt 0 ]; then R_E2E[$label]="FAIL $ef/$((ep + ef))"; else R_E2E[$label]="ok $ep"; fi
        [ "$es" -gt 0 ] && R_E2E[$label]+=" (${es} skip)"
        p=$((p - ep)) f=$((f - ef)) s=$((s - es))
    elif grep -q '^FAIL - test_e2e.sh' "$tmp/run.log"; then
        R_E2E[$label]="FAIL (no summary)"
    else
        R_E2E[$label]="-"
    fi
    # everything else (C tests, Python in the scalar row, other shell tests)
    if [ "$f" -gt 0 ]; then R_TESTS[$label]="FAIL $f, ok $p"; else R_TESTS[$label]="ok $p"; fi
    [ "$s" -gt 0 ] && R_TESTS[$label]+=" ($s skip)"
    # The ASM=1 row also proves which file the kernel came from.
    if [ "$label" = sse2-asm ]; then
        if readelf -s "$dir/test_kernels" 2>/dev/null | grep -q 'FILE .* add\.S$' &&
            nm "$dir/test_kernels" | grep -q ' T ml_k_add_sse2$' && [ ! -e "$dir/obj/kernels/sse2/add.d" ]; then
            echo "ok - sse2-asm: ml_k_add_sse2 in $dir/test_kernels comes from kernels/sse2/add.S"
            TOTAL_P=$((TOTAL_P + 1))
        else
            echo "FAIL - sse2-asm: ml_k_add_sse2 in $dir/test_kernels does not come from kernels/sse2/add.S"
            TOTAL_F=$((TOTAL_F + 1)) R_TESTS[$label]+=" (add.S NOT linked)"
        fi
    fi
    echo "   $label: tests ${R_TESTS[$label]}, e2e ${R_E2E[$label]} ($((SECONDS - t0)) s)"
done

# ---- the guard, once (reuses the builds above) ------------------------------
echo "== tests/test_guard.sh"
t0=$SECONDS
bash tests/test_guard.sh >"$tmp/guard.log" 2>&1
grep -E '^(FAIL|SKIP) - ' "$tmp/guard.log" | sed 's/^/   [guard] /'
gsum=$(grep '^#summary' "$tmp/guard.log" | tail -n 1)
if [ -n "$gsum" ]; then
    gp=$(sed -E 's/.*passed=([0-9]+).*/\1/' <<<"$gsum") gf=$(sed -E 's/.*failed=([0-9]+).*/\1/' <<<"$gsum")
    gs=$(sed -E 's/.*skipped=([0-9]+).*/\1/' <<<"$gsum")
else
    gp=0 gf=1 gs=0; echo "FAIL - test_guard.sh: no summary"; tail -n 5 "$tmp/guard.log" | sed 's/^/    /'
fi
TOTAL_P=$((TOTAL_P + gp)) TOTAL_F=$((TOTAL_F + gf))
echo "   test_guard.sh: $gp passed, $gf failed, $gs skipped ($((SECONDS - t0)) s)"

# Guard column: test_guard.sh's results for that build (lines "ok - <label>: ...").
guard_of() {
    local key=$1 o f s
    case $key in
    scalar) echo "n/a (baseline)"; return ;;
    sse2-asm | *-clang) echo "(gcc row)"; return ;;
    neon-aarch64) echo "n/a (A64 NEON)"; return ;;
    esac
    o=$(grep -c "^ok - $key:" "$tmp/guard.log") f=$(grep -c "^FAIL - $key:" "$tmp/guard.log")
    s=$(grep -c "^SKIP - $key:" "$tmp/guard.log")
    if [ "$f" -gt 0 ]; then echo "FAIL $f/$((o + f))"
    elif [ "$o" -gt 0 ]; then echo "ok $o"
    else echo "not tested"; fi
    [ "$s" -gt 0 ] && echo " ($s skip)"
}
# ---- the matrix ---------------------------------------------------------------
echo
printf '%-22s %-24s %-28s %-18s %-16s %s\n' "ISA" "compiler" "tests" "e2e" "guard refusal" "how verified"
printf '%-22s %-24s %-28s %-18s %-16s %s\n' "---" "--------" "-----" "---" "-------------" "------------"
for row in "${rows[@]}"; do
    IFS='|' read -r label isa compiler margs targs runner how <<<"$row"
    name=$isa
    case $label in neon-armv7) name="neon (ARMv7)" ;; *-aarch64) name="$isa (AArch64)" ;; sse2-asm) name="sse2 ASM=1" ;; esac
    tests=${R_TESTS[$label]}
    [ "${R_BUILD[$label]}" != ok ] && tests=${R_BUILD[$label]}
    printf '%-22s %-24s %-28s %-18s %-16s %s\n' "$name" "$compiler" "$tests" "${R_E2E[$label]}" \
        "$(guard_of "$label" | tr -d '\n')" "${R_HOW[$label]}"
done
for n in "${notes[@]}"; do echo "note: not built: $n"; done
echo "(tests = every test of the row except test_e2e.sh; guard = tests/test_guard.sh, run once:" \
    "$gp passed, $gf failed, $gs skipped; total time $((SECONDS - t_start)) s)"
echo "$TOTAL_P passed, $TOTAL_F failed"
[ "$TOTAL_F" -eq 0 ]
