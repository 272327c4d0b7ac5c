#!/usr/bin/env bash
# First contact: the project has a license and one version (core/version.h),
# the changelog has a section for it, and every program of the build answers
# --version with "<program> <version> (<isa> build)" and exit 0, without
# reading anything else of its command line.
# env: BUILD ISA RUNNER (set by tests/run_tests.sh)
set -u
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${RUNNER:=}"
. tests/sh_lib.sh

version=$(sed -n 's/^#define ML_VERSION "\(.*\)"$/\1/p' core/version.h)
if [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then ok "version: core/version.h holds a semantic version ($version)"
else bad "version: core/version.h holds no semantic ML_VERSION (got '$version')"; fi
if grep -q "^## $version\b" CHANGELOG.md 2>/dev/null; then ok "version: CHANGELOG.md has a section for $version"
else bad "version: CHANGELOG.md has no '## $version' section"; fi
if grep -q '^MIT License' LICENSE 2>/dev/null && grep -q 'the legacy-ml authors' LICENSE; then
    ok "version: LICENSE is MIT, the legacy-ml authors"
else bad "version: LICENSE missing, or not MIT by the legacy-ml authors"; fi

for prog in ml_run ml_bench ml_perplexity; do
    if [ ! -x "$BUILD/$prog" ]; then bad "$prog: not built in $BUILD"; continue; fi
    want="$prog $version ($ISA build)"
    # shellcheck disable=SC2086
    out=$($RUNNER "$BUILD/$prog" --version 2>&1); rc=$?
    if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then ok "$prog: --version prints '$want', exit 0"
    else bad "$prog: --version: exit $rc, printed '$out', not '$want'"; fi
    # Answered first: an option that would otherwise be refused does not matter.
    # shellcheck disable=SC2086
    out=$($RUNNER "$BUILD/$prog" --no-such-option --version 2>&1); rc=$?
    if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then ok "$prog: --version answers before the options are parsed"
    else bad "$prog: --version after a bad option: exit $rc, printed '$out'"; fi
    # shellcheck disable=SC2086
    if $RUNNER "$BUILD/$prog" --help 2>&1 | grep -q -- '--version'; then ok "$prog: --help lists --version"
    else bad "$prog: --help does not list --version"; fi
done

# Before the ISA guard: on a CPU the build refuses (exit 3), --version still
# answers. qemu-x86_64's plainest CPU (qemu64: SSE2 only) refuses every x86
# build above sse2; other builds and hosts skip, loudly (ASan builds too: their
# shadow memory does not map under qemu-user, which kills them after a while).
if [[ $BUILD == *-san* ]]; then
    skip "guard: an ASan build does not run under qemu-user: --version before the guard not checked"
elif [ -z "$RUNNER" ] && [ "$(uname -m)" = x86_64 ] && command -v qemu-x86_64 >/dev/null && [ -x "$BUILD/ml_run" ]; then
    qemu-x86_64 -cpu qemu64 "$BUILD/ml_run" >/dev/null 2>&1; rc=$?
    if [ "$rc" = 3 ]; then
        out=$(qemu-x86_64 -cpu qemu64 "$BUILD/ml_run" --version 2>&1); rc=$?
        if [ "$rc" = 0 ] && [ "$out" = "ml_run $version ($ISA build)" ]; then
            ok "guard: --version answers on a CPU the $ISA build refuses (qemu64)"
        else bad "guard: --version on a CPU the $ISA build refuses: exit $rc, printed '$out'"; fi
    else
        skip "guard: the $ISA build is not refused on qemu64 (exit $rc): nothing to answer before"
    fi
else
    skip "guard: no native x86-64 build with qemu-x86_64 here: --version before the guard not checked"
fi
finish
