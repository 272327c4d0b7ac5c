#!/usr/bin/env bash
# The Python package (python/legacy_ml, pip install .): its pytest suite
# python/tests/ against this build's ml_run, in the virtual environment
# ML_PY_VENV where `pip install . pytest` installed it (.ci/run makes one:
# python3 -m venv V && V/bin/pip install . pytest). Each pytest test is a
# check here. Skipped, loudly, without ML_PY_VENV.
# env: BUILD (its ml_run is the reference), RUNNER, ML_PY_VENV
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
need_exe "$BUILD/ml_run"
# .ci/run installs the package in the background: wait for it (its exit code
# in ML_PY_VENV_DONE), at most 30 minutes.
if [ -n "${ML_PY_VENV_DONE:-}" ]; then
    for _ in $(seq 1800); do [ -s "$ML_PY_VENV_DONE" ] && break; sleep 1; done
    if [ "$(cat "$ML_PY_VENV_DONE" 2>/dev/null)" != 0 ]; then
        bad "python: pip install . pytest into $ML_PY_VENV failed or did not finish (exit '$(cat "$ML_PY_VENV_DONE" 2>/dev/null)'): $(tail -n 5 "$ML_PY_VENV.log" 2>/dev/null | tr '\n' ' ')"
        finish
    fi
fi
py=${ML_PY_VENV:+$ML_PY_VENV/bin/python}
if [ -z "$py" ] || ! "$py" -c 'import legacy_ml, pytest' 2>"$tmp/import.err"; then
    skip "python: no ML_PY_VENV with legacy_ml and pytest (python3 -m venv V && V/bin/pip install . pytest; ML_PY_VENV=V)$(head -c 300 "$tmp/import.err" 2>/dev/null | tr '\n' ' ')"
    finish
fi
if [ -n "$RUNNER" ]; then
    skip "python: the package runs natively only (RUNNER='$RUNNER')"
    finish
fi
# From a folder outside the tree, so the installed package is imported, not python/legacy_ml.
(cd "$tmp" && ML_RUN=$OLDPWD/$BUILD/ml_run "$py" -m pytest -q -rA -p no:cacheprovider "$OLDPWD/python/tests") \
    >"$tmp/pytest.log" 2>&1
rc=$?
isa=$("$py" -c 'import legacy_ml; print(legacy_ml.build_info()["isa"])' 2>/dev/null)
n=0
while read -r verdict rest; do
    name=${rest##*::}
    case $verdict in
    PASSED) ok "python: $name ($isa library)"; n=$((n + 1)) ;;
    SKIPPED) skip "python: $rest" ;;
    FAILED | ERROR) bad "python: $name"; n=$((n + 1)) ;;
    esac
done < <(sed -n '/short test summary info/,$p' "$tmp/pytest.log")
if [ "$rc" -ne 0 ] || [ "$n" -eq 0 ]; then
    bad "python: pytest exited $rc after $n tests; its log:"
    tail -n 40 "$tmp/pytest.log" | sed 's/^/    /'
fi
finish
