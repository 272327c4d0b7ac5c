#!/usr/bin/env bash
# Print the fastest ISA build this CPU runs, as reported by `PROBE... --cpu-info --json`
# (any legacy-ml program of any build, with its runner if any: --cpu-info
# answers before the ISA guard), its "best" field. Prints scalar, with a note on stderr, if the
# probe cannot say (it does not run here, e.g. a cross build).
# usage: tools/pick_isa.sh [RUNNER...] PROBE
set -u
best=$("$@" --cpu-info --json 2>/dev/null | sed -n 's/.*"best":"\([a-z0-9_]*\)".*/\1/p')
if [ -z "$best" ]; then
    echo "pick_isa: '$* --cpu-info --json' named no best build; using scalar" >&2
    best=scalar
fi
echo "$best"
