#!/usr/bin/env bash
# `make dist`: fully static executables of every ISA and architecture this
# machine can build, laid out as DIST/<arch>/<isa>/<program>, the launcher
# DIST/ml (tools/ml.sh) and DIST/SHA256SUMS. <arch>: x86_64, i686, armv7, aarch64.
# Static, so a binary built here starts on any Linux of its architecture,
# whatever its C library (glibc 2.17 of CentOS 7, Raspbian Buster's 2.28).
# env: DIST (default dist), ML_JOBS (default 2), ML_DIST_ROWS (only these
#      "arch/isa" rows, e.g. "x86_64/avx2 aarch64/sve"; default all)
set -eu
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
JOBS=${ML_JOBS:-2}
unset MAKEFLAGS MFLAGS MAKELEVEL CC

# arch|isa|make arguments. The floor of each architecture is its first row:
# the launcher asks it which builds the CPU runs.
# The ISAs come from the registry (config/isas.txt), lowest first.
isas_for() { awk -f tools/isas.awk -v want=rows config/isas.txt | awk -F'|' -v a="$1" '$2 == a || $2 == "any" { print $1 }'; }
rows=()
case $(uname -m) in
x86_64 | amd64)
    for isa in $(isas_for x86); do rows+=("x86_64|$isa|"); done
    # 32-bit x86 (M32=1) where the compiler has a 32-bit libc, for 32-bit
    # systems (Pentium 4, Atom N270, ...; every 32-bit build requires SSE2).
    if echo 'int main(void){return 0;}' | gcc -m32 -static -x c - -o /dev/null 2>/dev/null; then
        for isa in $(isas_for x86); do rows+=("i686|$isa|M32=1"); done
    fi ;;
esac
# ARM: the cross prefix and folder name (armv7, aarch64) of the registry's arch lines.
for a in arm32 aarch64; do
    IFS='|' read -r cross _ label < <(awk -f tools/isas.awk -v want=arch -v arch=$a config/isas.txt)
    command -v "${cross}gcc" >/dev/null || continue
    # AArch64 always has NEON: its floor is neon, not scalar.
    for isa in $(isas_for $a); do
        [ "$a" = aarch64 ] && [ "$isa" = scalar ] && continue
        rows+=("$label|$isa|CROSS=$cross")
    done
done

rm -rf "$DIST"
mkdir -p "$DIST"
if [ -n "${ML_DIST_ROWS:-}" ]; then
    kept=()
    for row in "${rows[@]}"; do
        IFS='|' read -r arch isa _ <<<"$row"
        [[ " $ML_DIST_ROWS " == *" $arch/$isa "* ]] && kept+=("$row")
    done
    rows=("${kept[@]}")
fi
k=0 t0=$SECONDS
for row in "${rows[@]}"; do
    IFS='|' read -r arch isa margs <<<"$row"
    args=(ISA="$isa" THREADS=pthread STATIC=1)
    # shellcheck disable=SC2206
    [ -n "$margs" ] && args+=($margs)
    # progress: the build k of N, and the time left from the mean build so far
    left=""; [ "$k" -gt 0 ] && left="; about $(((SECONDS - t0) * (${#rows[@]} - k) / k / 60 + 1)) min left"
    k=$((k + 1))
    echo "dist: $k/${#rows[@]} $arch/$isa (make ${args[*]} progs$left)"
    make -s -j"$JOBS" "${args[@]}" progs
    mkdir -p "$DIST/$arch/$isa"
    # Stripped of symbols (about 10% smaller); the unstripped ones stay in build/.
    for p in $(make -s "${args[@]}" print-progs); do
        cp "$p" "$DIST/$arch/$isa/"
        "$(sed -n 's/^CROSS=//p' <<<"$margs")strip" "$DIST/$arch/$isa/${p##*/}"
    done
done
cp tools/ml.sh "$DIST/ml"
chmod +x "$DIST/ml"
(cd "$DIST" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | sort | xargs sha256sum >SHA256SUMS)
echo "dist: $(find "$DIST" -type f -perm -u+x | wc -l) executables in $DIST/ (launcher: $DIST/ml, checksums: $DIST/SHA256SUMS)"
