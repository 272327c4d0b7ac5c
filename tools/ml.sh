#!/bin/sh
# legacy-ml launcher (installed as dist/ml by `make dist`): runs the fastest
# build in this folder that this CPU can run. Each binary is still built for
# one ISA and checks it at start-up; this script only chooses the file, by
# asking the floor build of this architecture (`--cpu-info --json`, one line
# in a fixed layout: no JSON parser needed) which builds the CPU runs.
#
# usage: ./ml [-v] [run | bench | perplexity] [ARGS...]   (./ml --help: this usage)
#          run (the default): ml_run ARGS;  bench: ml_bench;  perplexity: ml_perplexity
#          -v: say on stderr which binary was picked
#        ./ml --which [run | bench | perplexity]: print that binary's path and exit
# env:   ML_ISA=<isa>        use this build instead (it still refuses a CPU that lacks it)
#        ML_CPU_REPORT=FILE  choose from a saved `--cpu-info --json` report instead of
#                            asking this CPU (to see what another machine would run)
# The folder of the launcher itself, through any symlinks to it (a link in
# ~/bin or /usr/local/bin must still find the builds beside the real file).
self=$0
while [ -L "$self" ]; do
    link=$(readlink -- "$self") || break
    case $link in /*) self=$link ;; *) self=$(dirname -- "$self")/$link ;; esac
done
here=$(CDPATH='' cd -- "$(dirname -- "$self")" && pwd) || exit 1

case ${1:-} in
-h | --help)
    cat <<'EOF_HELP'
usage: ml [-v] [run | bench | perplexity] [ARGS...]
       ml [-v] tokenize | server [ARGS...]   (ml_tokenize, ml_server)
       ml --which [run | bench | perplexity | tokenize | server]
Runs the fastest build in this folder that this CPU can run: ml_run (run, the
default), ml_bench (bench) or ml_perplexity (perplexity), with ARGS.
  -v        say on stderr which build was picked, and why
  --which   print the path of that program and exit
  ml run --help, ml bench --help, ml perplexity --help: the program's own options
env: ML_ISA=<isa>        use this build instead (it still refuses a CPU that lacks it)
     ML_CPU_REPORT=FILE  choose from a saved `ml_run --cpu-info --json` report
                         instead of asking this CPU
example: ./ml -m model.mlb -z model.tokenizer.bin -i "Once upon a time"
EOF_HELP
    exit 0 ;;
esac
verbose=0 which=0 prog=ml_run
[ "${1:-}" = -v ] && { verbose=1; shift; }
[ "${1:-}" = --which ] && { which=1; shift; }
case ${1:-} in
run) shift ;;
bench) prog=ml_bench; shift ;;
perplexity) prog=ml_perplexity; shift ;;
tokenize) prog=ml_tokenize; shift ;;
server) prog=ml_server; shift ;;
esac

case $(uname -m) in
x86_64 | amd64) arch=x86_64 floor=scalar ;;
aarch64 | arm64) arch=aarch64 floor=neon ;;
armv7* | armv8l) arch=armv7 floor=scalar ;;
i?86) arch=i686 floor=scalar ;;
*) arch=$(uname -m) floor= ;;
esac
if [ -z "$floor" ] || [ ! -x "$here/$arch/$floor/ml_run" ]; then
    echo "ml: $here has no build for $(uname -m) (no $arch/${floor:-<floor>}/ml_run); build from source: make ISA=scalar" >&2
    exit 1
fi

if [ -n "${ML_ISA:-}" ]; then
    isa=$ML_ISA why="set by ML_ISA"
else
    if [ -n "${ML_CPU_REPORT:-}" ]; then
        from="the report ML_CPU_REPORT=$ML_CPU_REPORT"
        if [ ! -f "$ML_CPU_REPORT" ] || [ ! -r "$ML_CPU_REPORT" ]; then
            echo "ml: ML_CPU_REPORT=$ML_CPU_REPORT: no such readable file (save one with: ml_run --cpu-info --json >FILE)" >&2
            exit 1
        fi
        report=$(cat -- "$ML_CPU_REPORT")
    else
        from="$arch/$floor/ml_run --cpu-info --json"
        report=$("$here/$arch/$floor/ml_run" --cpu-info --json 2>&1)
    fi
    case $report in
    *'"runs":['*) ;;
    *)
        echo "ml: $from is not a CPU report (no \"runs\" list in: $(printf '%s' "$report" | head -c 80))" >&2
        exit 1 ;;
    esac
    # ..."runs":["scalar","sse2","sse41"],...: lowest first, so the last one we have wins
    runs=$(printf '%s\n' "$report" | sed -n 's/.*"runs":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
    isa=
    for i in $runs; do
        [ -x "$here/$arch/$i/$prog" ] && isa=$i
    done
    if [ -z "$isa" ]; then
        echo "ml: none of the builds in $here/$arch runs on this CPU (it runs: ${runs:-nothing});" \
            "build from source: make ISA=scalar" >&2
        exit 1
    fi
    why="the best build here for this CPU, which runs: $runs"
fi
bin=$here/$arch/$isa/$prog
if [ ! -x "$bin" ]; then
    echo "ml: $bin: no such build" >&2
    exit 1
fi
if [ "$which" = 1 ]; then
    echo "$bin"
    exit 0
fi
[ "$verbose" = 1 ] && echo "ml: $arch/$isa/$prog ($why)" >&2
exec "$bin" "$@"
