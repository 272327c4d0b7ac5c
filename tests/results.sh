# The results files every test layer writes and the layer above reads
# (a test program -> tests/run_tests.sh -> tests/matrix.sh -> tests/run_suites.sh):
#   TSV, one row per part: name, passed, failed, skipped, seconds ("-" if not
#   measured), then free columns; the last row is named "total".
# A program writes its file to $ML_RESULTS when that is set; its caller sets
# ML_RESULTS to a fresh path and reads the total row. A file without a total
# row (the program died first) counts as one failure. Sourced by the layers.

# results_total FILE: prints "passed failed skipped" of FILE's total row; fails if none.
results_total() {
    [ -f "$1" ] && awk -F'\t' '$1 == "total" { print $2, $3, $4; found = 1 } END { exit !found }' "$1"
}

# results_row FILE NAME PASSED FAILED SKIPPED SECONDS [MORE COLUMNS...]: append a row.
results_row() {
    local file=$1; shift
    local IFS=$'\t'
    echo "$*" >>"$file"
}

# results_line P F S: the human last line of every layer.
results_line() { echo "$1 passed, $2 failed, $3 skipped"; }
