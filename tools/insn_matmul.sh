#!/usr/bin/env bash
# Guest instructions of the ARM builds' matmul kernels under qemu-user with the
# insncount plugin (../shared/tools/insncount/), per (row x token x 32-element
# block): the build's own matmul_q8 / matmul_q4 beside the generic one
# (ML_MATMUL_BY_TILES: its matvec per token over 16-row tiles), both in one
# driver binary (tools/insn_matmul.c), so the ratio is made in one run.
#   per unit = (count at REPS - count at 0) / (REPS * rows * tokens * blocks)
# usage: tools/insn_matmul.sh [LABEL ...]   (default: every row below)
# env: SHAPE="ROWS COLS TOKENS" (default "256 768 64"), REPS (default 2),
#      INSNCOUNT (the plugin's source folder), CC_OVERRIDE (e.g. clang)
set -eu
cd "$(dirname "$0")/.."
: "${INSNCOUNT:=../shared/tools/insncount}" "${SHAPE:=256 768 64}" "${REPS:=2}"
. tools/arm_rows.sh

out=build/insn_matmul
mkdir -p "$out"
plugin=$out/insncount.so
[ "$plugin" -nt "$INSNCOUNT/insncount.c" ] || cc -O2 -shared -fPIC "$INSNCOUNT/insncount.c" -o "$plugin"
read -r rows cols ntok <<<"$SHAPE"
units=$((rows * ntok * cols / 32))

# count BIN RUNNER ARGS...: the instruction count of one run
count() {
    local bin=$1 runner=$2; shift 2
    $runner -plugin "$plugin" "$bin" "$@" 2>&1 >/dev/null | sed -nE 's/^insncount: ([0-9]+) instructions$/\1/p'
}

echo "shape: $rows rows x $cols cols, $ntok tokens; instructions per (row x token x block)"
echo "| build | Q8_0 own | Q8_0 generic | own/generic | Q4_0 own | Q4_0 generic | own/generic |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for row in "${ROWS[@]}"; do
    IFS='|' read -r label isa cross runner <<<"$row"
    if [ $# -gt 0 ] && [[ " $* " != *" $label "* ]]; then continue; fi
    [ "$isa" != scalar ] || continue # its matmul is the generic one
    args=(ISA="$isa" CROSS="$cross" THREADS=1 ${CC_OVERRIDE:+CC=$CC_OVERRIDE})
    build=$(make -s "${args[@]}" print-build)
    make -s -j2 "${args[@]}" "$build/ml_run" >&2
    cc=${cross}gcc
    [ -z "${CC_OVERRIDE:-}" ] || cc="$CC_OVERRIDE --target=${cross%-} -fuse-ld=lld"
    bin=$out/$(basename "$build")
    # the kernel objects of the build's chain, with its own flags
    $cc -std=c11 -O2 -I. -I"$build/gen" -I"$(make -s "${args[@]}" print-gen)" -DML_ISA="$isa" tools/insn_matmul.c \
        $(find "$build/obj/kernels" -name '*.o') "$build/obj/core/tune.o" -o "$bin" -lm
    cells=()
    for t in q8 q4; do
        per=()
        for how in own tiles; do
            a=$(count "$bin" "$runner" $t $how $rows $cols $ntok "$REPS")
            b=$(count "$bin" "$runner" $t $how $rows $cols $ntok 0)
            per+=("$(awk -v a="$a" -v b="$b" -v n=$((REPS * units)) 'BEGIN { printf "%.2f", (a - b) / n }')")
        done
        cells+=("${per[0]}" "${per[1]}" "$(awk -v a="${per[0]}" -v b="${per[1]}" 'BEGIN { printf "%.2fx", a / b }')")
    done
    printf '| %s (`%s`) |' "$label" "${runner#* -L * }"
    printf ' %s |' "${cells[@]}"
    echo
done
