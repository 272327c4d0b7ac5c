#!/usr/bin/env bash
# The layers of the library (DESIGN §2, STYLE.md 18), from the bottom:
#   core/     platform, status, tensors, threads: includes only core/ headers
#             and the generated ISA table ml_isas_gen.h (config/isas.txt as C
#             macros, $(BUILD)/gen/);
#   kernels/  the ml_k_<name>_<isa> functions: include only core/, kernels/
#             and the kernel list config/ml_kernels.h (their prototypes);
#   ops/      the only door to the kernels: includes only core/, ops/ and the
#             binding config/ml_config.h, and calls kernels by their generic
#             names (ml_k_matvec_q8), never an ISA's symbol (ml_k_matvec_q8_avx2);
#   model/    the forward pass, loader, sampler: includes only core/, ops/ and
#             model/ (never kernels/ nor config/) and calls no ml_k_* at all;
#   api/      the public API include/legacy_ml.h over model/: includes only core/,
#             model/, api/, include/ and config/ml_config.h (the ISA's name);
#   app/      the programs (app/ml_NAME.c) are built on that API: they include
#             no model/, ops/ or kernels/ header (app/'s own helpers, core/'s
#             platform parts and include/legacy_ml.h are theirs to use); so
#             are the parts only ml_run uses (app/chat.c: --chat, run_text.c,
#             run_spec.c).
# Each rule is one counted check over every .c/.h of its folder (quoted
# includes; identifiers outside comments and strings), and each is shown to
# fail on a tree that breaks it.
# env: none (reads the source tree only)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh

ISAS=$(awk '!/^[[:space:]]*(#|$)/ && !seen[$1]++ { printf "%s%s", sep, $1; sep = "|" }' config/isas.txt)

# includes ROOT DIR: "file:included" for every quoted #include of DIR's .c/.h files.
includes() {
    (cd "$1" && find "$2" -name '*.[ch]' 2>/dev/null | sort | while read -r f; do
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | sed "s|^|$f:|"
    done)
}

# code_ids ROOT DIR RE: "file:identifier" for every identifier matching RE in
# the code of DIR's .c/.h files: the compiler's preprocessor drops the
# comments (-fpreprocessed: nothing expanded), sed the strings and characters.
code_ids() {
    (cd "$1" && find "$2" -name '*.[ch]' 2>/dev/null | sort | while read -r f; do
        $CPP -fpreprocessed -dD -E -P "$f" 2>/dev/null |
            sed -E "s/\"([^\"\\]|\\.)*\"/ /g; s/'([^'\\]|\\.)*'/ /g" |
            grep -oE '[A-Za-z_][A-Za-z_0-9]*' | grep -E "$3" | sed "s|^|$f:|"
    done)
}
CPP="$(command -v gcc || command -v cc) -x c"

# ---- the rules: each prints its violations, one per line -----------------------
rule_core() {
    includes "$1" core | grep -Ev ':(core/[^:]*|ml_isas_gen\.h)$'
}
rule_kernels() {
    includes "$1" kernels | grep -Ev ':(core/|kernels/)[^:]*$|:config/ml_kernels\.h$'
}
rule_ops_includes() {
    includes "$1" ops | grep -Ev ':(core/|ops/)[^:]*$|:config/ml_config\.h$'
}
rule_ops_symbols() {
    code_ids "$1" ops "^ml_k_[A-Za-z0-9_]*_($ISAS)\$"
}
rule_model_includes() {
    includes "$1" model | grep -Ev ':(core/|ops/|model/)[^:]*$'
}
rule_model_kernels() {
    code_ids "$1" model '^ml_k_'
}
rule_api() {
    includes "$1" api | grep -Ev ':(core/|model/|api/|include/)[^:]*$|:config/ml_config\.h$'
}
rule_app_programs() {
    includes "$1" app | grep -E '^app/ml_[^/:]*\.c:(model|ops|kernels)/'
}
rule_app_run_parts() {
    includes "$1" app | grep -E '^app/(chat|run_text|run_spec)\.[ch]:(model|ops|kernels)/'
}

# name | what it asserts | a file and line that break it (for the self-test)
RULES="
core|core/ includes only core/ and the generated ml_isas_gen.h|core/x.c|#include \"config/ml_config.h\"
kernels|kernels/ includes only core/, kernels/ and config/ml_kernels.h|kernels/scalar/x.c|#  include \"ops/ops.h\"
ops_includes|ops/ includes only core/, ops/ and config/ml_config.h|ops/x.c|#include \"kernels/avx2/avx2_vec.h\"
ops_symbols|ops/ calls kernels by generic name only, no ml_k_*_<isa>|ops/x.c|void f(void) { ml_k_add_avx2(0, 0, 0); /* ml_k_add_sse2 */ }
model_includes|model/ includes only core/, ops/ and model/ (no kernels/, no config/)|model/x.c|#include \"config/ml_config.h\"
model_kernels|model/ calls no ml_k_* (every kernel through ops/)|model/x.c|void f(float *x) { ml_k_softmax(x, 4); }
api|api/ includes only core/, model/, api/, include/ and config/ml_config.h|api/x.c|#include \"ops/ops.h\"
app_programs|the programs app/ml_*.c include no model/, ops/ or kernels/ header (include/legacy_ml.h)|app/ml_x.c|#include \"model/tok.h\"
app_run_parts|ml_run's parts app/chat.c, run_text.c, run_spec.c include no model/, ops/ or kernels/ header|app/chat.c|#include \"model/chat.h\"
"
rule_names=$(awk -F'|' 'NF { print $1 }' <<<"$RULES")

# all_but ROOT RULE: the violations of every other rule.
all_but() {
    local o
    for o in $rule_names; do [ "$o" = "$2" ] || "rule_$o" "$1"; done
}

# The scanner sees code at all: ops/ does call kernels, by generic name.
n_calls=$(code_ids . ops '^ml_k_' | wc -l)
if [ "$n_calls" -gt 0 ]; then
    ok "scanner: sees $n_calls kernel names in the code of ops/"
else
    bad "scanner: no ml_k_ name in the code of ops/ (no C preprocessor? CPP='$CPP')"
fi

tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
while IFS='|' read -r r what f line; do
    [ -n "$r" ] || continue
    found=$("rule_$r" .)
    if [ -z "$found" ]; then
        ok "layers: $what"
    else
        bad "layers: $what; violated by: $(tr '\n' ' ' <<<"$found")"
    fi

    # The rule fails on a tree that breaks it, and only it does. The tree
    # also holds what must pass: includes and names in comments and strings.
    t=$tmpd/$r
    mkdir -p "$t/core" "$t/kernels/scalar" "$t/ops" "$t/model" "$t/api" "$t/app"
    printf '/* #include "kernels/x.h", ml_k_add */\n#include "ops/ops.h"\nconst char *s = "ml_k_add";\n' >"$t/model/ok.c"
    printf '%s\n' "$line" >"$t/$f"
    found=$("rule_$r" "$t") others=$(all_but "$t" "$r")
    if [ -n "$found" ] && [ -z "$others" ] && grep -q "^$f:" <<<"$found"; then
        ok "self-test: rule '$r' catches $f ($(head -n 1 <<<"$found" | cut -d: -f2-))"
    else
        bad "self-test: rule '$r' on a tree with $f: $line: found '$found', other rules '$others'"
    fi
done <<<"$RULES"

finish
