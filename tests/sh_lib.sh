# The test protocol of tests/run_tests.sh for the shell tests, sourced by
# each: count and print each check, end with the "#summary" line.
P=0 F=0 S=0
ok()   { P=$((P + 1)); echo "ok - $1"; }
bad()  { F=$((F + 1)); echo "FAIL - $1"; }
skip() { S=$((S + 1)); echo "SKIP - $1"; }
finish() { echo "#summary passed=$P failed=$F skipped=$S"; [ "$F" -eq 0 ]; exit; }
