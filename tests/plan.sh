# Reads the test plan, tests/plan.txt (which test runs on which rows); sourced
# by tests/run_tests.sh and tests/matrix.sh. The first line that is not a
# comment names the columns; each further line is a test-name pattern and its
# cells, and a test's line is the first whose pattern matches its name.
PLAN_FILE=${PLAN_FILE:-tests/plan.txt}

# plan_cell TEST COLUMN: prints TEST's cell in COLUMN ("-" if no line matches);
# fails, with a message on stderr, if the plan has no such column.
plan_cell() {
    local test=$1 col=$2 f k=-1 i
    while read -ra f; do
        [ ${#f[@]} -gt 0 ] && [[ ${f[0]} != \#* ]] || continue
        if [ "$k" -lt 0 ]; then
            for i in "${!f[@]}"; do [ "${f[$i]}" = "$col" ] && [ "$i" -gt 0 ] && k=$i; done
            if [ "$k" -lt 0 ]; then echo "$PLAN_FILE: no column '$col' (columns: ${f[*]:1})" >&2; return 2; fi
            continue
        fi
        # shellcheck disable=SC2053
        if [[ $test == ${f[0]} ]]; then echo "${f[$k]:--}"; return 0; fi
    done <"$PLAN_FILE"
    echo -
}

# plan_runs TEST COLUMN ROW: whether TEST runs on the row (or suite) labelled
# ROW of COLUMN: its cell is x, or one of the cell's patterns matches ROW, or
# one of its @tags is one of the row's tags ($ML_ROW_TAGS, which tests/matrix.sh
# sets: @native, @floor; see tests/plan.txt).
plan_runs() {
    local cell pat
    cell=$(plan_cell "$1" "$2") || return 2
    case $cell in x) return 0 ;; -) return 1 ;; esac
    for pat in ${cell//,/ }; do
        if [[ $pat == @* ]]; then
            [[ " ${ML_ROW_TAGS:-} " == *" $pat "* ]] && return 0
            continue
        fi
        # shellcheck disable=SC2053
        [[ $3 == $pat ]] && return 0
    done
    return 1
}

# plan_tests COLUMN ROW: the tests of tests/ that run on that row, one line, in
# tests/run_tests.sh's order (C programs, Python, shell).
plan_tests() {
    local t n list=()
    plan_cell - "$1" >/dev/null || return 2
    for t in tests/test_*.c tests/test_*.py tests/test_*.sh; do
        [ -e "$t" ] || continue
        n=${t#tests/}; [[ $n == *.c ]] && n=${n%.c}
        plan_runs "$n" "$1" "$2" && list+=("$n")
    done
    echo "${list[*]}"
}
