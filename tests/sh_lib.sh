# The test protocol for the shell tests, sourced by each (from the repository
# root): count and print each check ("ok - <group>: what"), and finish with the
# results file (tests/results.sh): a row per group (the text before the first
# ": ") and the total row, plus the human "N passed, N failed, N skipped" line.
# Also the preamble they share: the environment's defaults, a scratch folder,
# the usual reasons to stop early.
. tests/results.sh
# What tests/run_tests.sh passes (make check and tests/matrix.sh set it); the
# defaults serve a test run by hand.
: "${BUILD:=build/scalar}" "${ISA:=scalar}" "${PYTHON:=python3}" "${MODELS:=../shared/models}" "${RUNNER:=}"
P=0 F=0 S=0
declare -A G_P G_F G_S
G_ORDER=()
RESULTS_FILE=${ML_RESULTS:-}
unset ML_RESULTS   # the programs a test runs are not layers of this one
count_() {  # counter, message
    local g=${2%%: *}
    case $1 in
    P) P=$((P + 1)) G_P[$g]=$((${G_P[$g]:-0} + 1)) ;;
    F) F=$((F + 1)) G_F[$g]=$((${G_F[$g]:-0} + 1)) ;;
    S) S=$((S + 1)) G_S[$g]=$((${G_S[$g]:-0} + 1)) ;;
    esac
    G_ORDER+=("$g")
}
ok()   { count_ P "$1"; echo "ok - $1"; }
bad()  { count_ F "$1"; echo "FAIL - $1"; }
skip() { count_ S "$1"; echo "SKIP - $1"; }
# scratch: a fresh folder in $tmp, removed when the test exits.
scratch() { tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; }
# have_numpy: whether $PYTHON can make test models.
have_numpy() { [ -n "$PYTHON" ] && "$PYTHON" -c 'import numpy' 2>/dev/null; }
# need_exe FILE: the test stops here, one failure, unless FILE is a built program.
need_exe() { [ -x "$1" ] || { bad "$1 not built"; finish; }; }
finish() {
    if [ -n "$RESULTS_FILE" ]; then
        : >"$RESULTS_FILE"
        local g
        [ "${#G_ORDER[@]}" -eq 0 ] || printf '%s\n' "${G_ORDER[@]}" | awk '!seen[$0]++' | while IFS= read -r g; do
            results_row "$RESULTS_FILE" "$g" "${G_P[$g]:-0}" "${G_F[$g]:-0}" "${G_S[$g]:-0}" -
        done
        results_row "$RESULTS_FILE" total "$P" "$F" "$S" -
    fi
    results_line "$P" "$F" "$S"
    [ "$F" -eq 0 ]
    exit
}
