#!/usr/bin/env bash
# make test: the build matrix. Its rows come from the ISA registry
# (config/isas.txt): each line this machine can build (natively or with the
# cross compiler of its architecture's line) is built with gcc and run on each
# CPU of its "run on" column, natively or under that line's qemu-user. Which
# tests a row runs is the test plan's (tests/plan.txt): the first CPU of a
# line runs the "full" column, the others the "qemu" one (bit-identity and the
# golden hashes). Further rows: sse2 ASM=1; i686 (M32=1: "i686" in the "run
# on" column); CMake with gcc
# and with mingw-w64 under wine (tests/cmake_row.sh); THREADS=1 (no thread
# pool; the other rows have it) for aarch64's highest line; clang builds of every ARM line and of
# $ML_CLANG_ISAS on x86, the last ARM one run under qemu; avx512vnni with the
# archive's oldest and newest compilers. Then tests/test_guard.sh once (the
# guard refusals), whose results fill the guard column, and
# tests/dist_check.sh once (make dist), each in the rows' pool (the longest jobs start first).
# The builds are made one at a time with make -j$ML_JOBS: each row's,
# with what test_e2e.sh compares with (the native scalar gcc build, the
# reference, and the row's build with ML_NO_MMAP=1, THREADS=pthread and THREADS=1,
# one of the last two the row's own build);
# a build is made once, whatever rows share it. Beside them the rows' tests run,
# $ML_PAR rows at a time (most run one test process at a time, on one core):
# an emulated row as soon as its builds are made, a native row and the
# once-only scripts after every build; each row's output kept apart and
# printed in the rows' order.
# Results (tests/results.sh): a row per matrix row in $ML_RESULTS (default
# build/matrix.tsv): label, passed, failed, skipped, seconds, isa, compiler,
# e2e, guard, how verified, CPU seconds (the row's builds and tests); the
# total last. Python tests run once (the scalar row). A failed build, or one
# with compiler warnings, is one failure.
# env: PYTHON, MODELS (from make), ML_JOBS (default 2), ML_PAR (rows run at once, default ML_JOBS),
#      ML_CLANG_ISAS (x86 builds also made with clang; default "scalar avx2"),
#      ML_ROWS (only the rows whose labels match these patterns, e.g. "sve-* scalar",
#      and test_guard.sh not run: for working on a few rows)
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/results.sh
. tests/plan.sh
# Each row names its compiler and options: a parent make's command line
# (make test ISA=neon CROSS=...) must not leak into the builds made here.
unset CC MAKEFLAGS MFLAGS MAKELEVEL ISA THREADS ASM DEBUG SAN CROSS M32 ML_NO_MMAP EXTRA_CFLAGS BUILD RUNNER
: "${PYTHON:=}" "${MODELS:=../shared/models}"
export PYTHON MODELS
JOBS=${ML_JOBS:-2}
PAR=${ML_PAR:-$JOBS}
CLANG_ISAS=${ML_CLANG_ISAS:-scalar avx2}
out=${ML_RESULTS:-build/matrix.tsv}
unset ML_RESULTS
mkdir -p "$(dirname "$out")"
: >"$out"
tmp=$(mktemp -d)
# The wine rows' wineserver lingers a few seconds: stop it so its prefix goes
# too, and remove the socket folder it leaves in /tmp (wine-XXXXXX/server-
# <device>-<inode of the prefix>, in hex), which outlives it.
wine_cleanup() {
    [ -d "$tmp/wine" ] || return 0
    local sock
    sock="server-$(stat -c %D "$tmp/wine")-$(printf %x "$(stat -c %i "$tmp/wine")")"
    WINEPREFIX="$tmp/wine" wineserver -k 2>/dev/null
    for d in /tmp/wine-*/"$sock" "/tmp/.wine-$(id -u)/$sock"; do
        [ -d "$d" ] && rm -rf "$d" && rmdir "${d%/*}" 2>/dev/null
    done
    return 0
}
trap 'wine_cleanup; rm -rf "$tmp"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
t_start=$SECONDS
# One wine prefix for every wine row (its creation takes ~10 s).
export WINEPREFIX="$tmp/wine" WINEDEBUG=-all

# ---- the rows -----------------------------------------------------------------
# label|isa|compiler|make args|runner|how|tests (a column of tests/plan.txt, or build)|guard label
rows=()
notes=()
host_x86=0
case $(uname -m) in x86_64 | amd64) host_x86=1 ;; esac
# An architecture's cross prefix, qemu-user and row label: its arch line in the registry.
arch_of() { awk -f tools/isas.awk -v want=arch -v arch="$1" config/isas.txt; }
last_arm=""
i686_isas=""
# The floor rows: each architecture's first row (its lowest ISA, gcc, the first
# CPU); with the native rows, they are tests/plan.txt's @floor and @native tags.
declare -A FLOOR
# The highest ISA line of aarch64 (the registry lists each architecture's lowest first).
top_aarch64=$(awk -f tools/isas.awk -v want=rows config/isas.txt | awk -F'|' '$2 == "aarch64" { i = $1 } END { print i }')
while IFS='|' read -r isa arch run_on; do
    case $arch in
    x86 | any)
        if [ "$host_x86" = 0 ]; then notes+=("$isa: host is $(uname -m), not x86-64"); continue; fi
        # "native" and "i686" (a 32-bit row, added below with the other native rows)
        [[ ";$run_on;" == *";native;"* ]] && rows+=("$isa|$isa|gcc||||full|$isa")
        [ -n "${FLOOR[x86]:-}" ] || FLOOR[x86]=$isa
        [[ ";$run_on;" == *";i686;"* ]] && i686_isas+=" $isa"
        continue ;;
    esac
    IFS='|' read -r cross qemu tag < <(arch_of "$arch")
    if ! have "${cross}gcc"; then notes+=("$isa ($tag): ${cross}gcc not installed"); continue; fi
    first=1
    IFS=';' read -ra cpus <<<"$run_on"
    for cpu in "${cpus[@]}"; do
        run="" how="compile-only: no $qemu" tests=full
        if have "$qemu"; then run="$qemu -L /usr/${cross%-} -cpu $cpu" how="$qemu -cpu $cpu"; fi
        if [ "$first" = 1 ]; then first_run=$run first_how=$how; else tests=qemu; fi
        rows+=("$isa-$tag-${cpu//,sve-default-vector-length=/-vl}|$isa|${cross}gcc|CROSS=$cross|$run|$how|$tests|$([ "$first" = 1 ] && echo "$isa-$tag")")
        [ -n "${FLOOR[$arch]:-}" ] || FLOOR[$arch]=${rows[-1]%%|*}
        # The THREADS=1 build (no pool) of aarch64's highest line, its own row:
        # test_threads's refusal, test_e2e.sh (the default rows have the pool).
        # THREADS=1 changes the thread pool, no kernel: one such row is enough
        # (the portable rows also compare their THREADS=1 sibling in test_e2e.sh).
        if [ "$first" = 1 ] && [ "$arch" = aarch64 ] && [ "$isa" != neon ] && [ "$isa" = "$top_aarch64" ]; then
            rows+=("$isa-$tag-nothreads|$isa|${cross}gcc THREADS=1|CROSS=$cross THREADS=1|$run|$how|threads|")
        fi
        first=0
    done
    if have clang; then
        rows+=("$isa-$tag-clang|$isa|clang --target=${cross%-}|CROSS=$cross CC=clang|||build|")
        last_arm="$isa-$tag-clang|$isa|clang --target=${cross%-}|CROSS=$cross CC=clang|$first_run|$first_how|compilers|"
    fi
done < <(awk -f tools/isas.awk -v want=rows config/isas.txt)
if [ "$host_x86" = 1 ]; then
    # ASM=1 swaps kernel files only: the compilers column (kernels, golden logits).
    rows+=("sse2-asm|sse2|gcc ASM=1|ASM=1|||compilers|")
    # The oldest and newest compilers of the archive: the avx512vnni build
    # compiles every x86 kernel folder (its chain), warning-free, and must
    # write the golden logits. $ML_COMPILERS overrides the list.
    for cc in ${ML_COMPILERS:-gcc-11 clang-13 clang-22}; do
        if have "$cc"; then rows+=("avx512vnni-$cc|avx512vnni|$cc|CC=$cc|||compilers|")
        else notes+=("avx512vnni with $cc: $cc not installed"); fi
    done
    if have clang; then
        # The compilers column (what a compiler can change: kernels, golden
        # logits); the ASan+UBSan suites run the whole plan with clang.
        for isa in $CLANG_ISAS; do rows+=("$isa-clang|$isa|clang|CC=clang|||compilers|"); done
    else
        notes+=("x86 clang rows: clang not installed")
    fi
fi
# 32-bit x86 (M32=1, gcc-12-multilib) natively, and CMake rows: gcc natively
# and mingw-w64 under wine (tests/cmake_row.sh: ctest's C tests and
# e2e_golden, plus --cpu-info and the story text against the Linux build).
# Their tests: the plan's i686 and cmake columns.
if [ "$host_x86" = 1 ]; then
    if echo 'int main(void) { return 0; }' | gcc -m32 -x c - -o "$tmp/m32" 2>/dev/null; then
        for isa in $i686_isas; do
            rows+=("$isa-i686|$isa|gcc -m32|M32=1|||i686|$isa-i686")
        done
    else
        notes+=("i686 rows: gcc -m32 cannot link (apt-get install gcc-12-multilib)")
    fi
    if have cmake; then
        rows+=("cmake-gcc-avx2-threads|avx2|cmake + gcc|cmake -DML_ISA=avx2 -DML_THREADS=ON||native (ctest)|cmake|")
    else
        notes+=("CMake rows: cmake not installed")
    fi
    if have cmake && have x86_64-w64-mingw32-gcc && { have wine64 || have wine; }; then
        # Each ISA once and each thread mode once (Win32 threads hold no ISA
        # code): scalar without the pool, avx2 with it.
        for pair in scalar:OFF avx2:ON; do
            isa=${pair%:*} th=${pair#*:}
            rows+=("mingw-$isa$([ $th = ON ] && echo -threads)|$isa|x86_64-w64-mingw32-gcc (CMake)|cmake -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DML_ISA=$isa -DML_THREADS=$th|wine|wine (ctest)|cmake|")
        done
    else
        notes+=("mingw rows: needs cmake, gcc-mingw-w64-x86-64 and wine")
    fi
fi
# The last clang ARM build also runs the compiler rows' tests (kernels and the
# golden logits: what a compiler can change) under qemu, on its line's first
# CPU (replacing its build-only row).
if [ -n "$last_arm" ] && [ -n "$(cut -d'|' -f5 <<<"$last_arm")" ]; then
    for i in "${!rows[@]}"; do
        [ "${rows[$i]%%|*}" = "${last_arm%%|*}" ] && rows[i]=$last_arm
    done
fi

# row_tags LABEL RUNNER: the row's tags for tests/plan.txt's @ cells.
row_tags() {
    local t="" a
    [ -z "$2" ] && t="@native"
    for a in "${FLOOR[@]}"; do [ "$a" = "$1" ] && t+=" @floor"; done
    echo "${t# }"
}

if [ -n "${ML_ROWS:-}" ]; then
    kept=()
    for row in "${rows[@]}"; do
        for pat in $ML_ROWS; do
            # shellcheck disable=SC2053
            if [[ ${row%%|*} == $pat ]]; then kept+=("$row"); break; fi
        done
    done
    rows=("${kept[@]}")
fi

# ---- building -------------------------------------------------------------------
# build ARGS...: make once per argument list; sets DIR to the build folder,
# fails if the build failed. Warnings make WARNED=1 (one failure of the row).
declare -A BUILT
BUILD_CPU_MS=0
build() {
    local key="$*" ms
    if [ -z "${BUILT[$key]+x}" ]; then
        BUILT[$key]=""
        # The make's CPU time (ms; times in the subshell sees only the make), into BUILD_CPU_MS.
        # shellcheck disable=SC2068
        if DIR=$(make -s $@ print-build 2>"$tmp/make.log") &&
            ms=$(nice make -j"$JOBS" $@ >"$tmp/make.log" 2>&1 || exit 1
                times >"$tmp/times.build"  # (not times | awk: a pipeline's times sees no children)
                awk 'END { split($1 " " $2, t, /[ms ]+/); printf "%d\n", (t[1] * 60 + t[2] + t[3] * 60 + t[4]) * 1000 }' "$tmp/times.build"); then
            BUILD_CPU_MS=$((BUILD_CPU_MS + ms))
            BUILT[$key]=$DIR
            if grep -q 'warning:' "$tmp/make.log"; then
                echo "FAIL - make $key: compiler warnings:"; grep 'warning:' "$tmp/make.log" | sort -u | head -n 10 | sed 's/^/    /'
                WARNED=1
            fi
        else
            echo "FAIL - make $key: build failed; last lines:"; grep -E 'error|Error' "$tmp/make.log" | head -n 8 | sed 's/^/    /'
        fi
    fi
    DIR=${BUILT[$key]}
    [ -n "$DIR" ]
}

# ---- build every row, one build at a time -------------------------------------------
# cpu_now: sets CPU_MS to the CPU time (user + system, ms) of this shell's
# finished children so far: what a row costs whatever else runs on the machine.
# (Not cpu=$(...): times in a fresh subshell would see no children.)
cpu_now() {
    local f=$tmp/times.$BASHPID
    times >"$f"
    CPU_MS=$(awk 'END { split($1 " " $2, t, /[ms ]+/); printf "%d\n", (t[1] * 60 + t[2] + t[3] * 60 + t[4]) * 1000 }' "$f")
}
# prepare_row I: the builds of row I, its output in $tmp/I.log. Sets R_MODE[I]
# (tests: run_tests.sh, cmake: tests/cmake_row.sh, done: nothing to run) and
# what the run needs; a row without tests to run gets its counts here.
TP=0 TF=0 TS=0
declare -A R_P R_F R_S R_E2E R_HOW R_SEC
declare -a R_MODE R_DIR R_REF R_NOMMAP R_THREADS R_SINGLE R_COL R_BSEC R_CPU
prepare_row() {
    local i=$1 label isa compiler margs runner how tests gkey t0=$SECONDS c0 p=0 f=0
    IFS='|' read -r label isa compiler margs runner how tests gkey <<<"${rows[$i]}"
    c0=$BUILD_CPU_MS
    WARNED=0
    case $tests in "" | all) tests=full ;; esac
    R_MODE[i]=done R_COL[i]=$tests
    echo "== $label: make ISA=$isa $margs${runner:+, run under $runner}"
    build ISA=scalar; R_REF[i]=$DIR
    if [[ $margs == cmake* ]]; then
        R_MODE[i]=cmake
        # The wine rows share one prefix: made here, before rows run side by
        # side, as two first runs in a fresh prefix race to create it.
        if [ "$runner" = wine ] && [ ! -e "$WINEPREFIX/system.reg" ]; then
            "$(command -v wine64 || command -v wine)" wineboot --init >/dev/null 2>&1
        fi
    # shellcheck disable=SC2086
    elif ! build ISA="$isa" $margs; then
        f=1 how="build FAILED"
    elif [ "$tests" = build ] || { [ -z "$runner" ] && [ -n "$how" ]; }; then
        p=1 how=${how:-"compile-only (the gcc rows run the tests)"}
    elif [ -z "$runner" ] && ! "$DIR/ml_run" --cpu-info 2>/dev/null | grep -q '^  this build  : supported'; then
        # A native build this CPU cannot run: test_guard.sh checks that the guard refuses it.
        p=1 how="compile + guard refusal (CPU lacks $isa)"
    else
        R_MODE[i]=tests R_DIR[i]=$DIR how=${how:-native}
        if [ "$tests" != full ]; then
            local list n
            list=$(ML_ROW_TAGS=$(row_tags "$label" "$runner") plan_tests "$tests" "$label") n=$(wc -w <<<"$list")
            if [ "$n" -le 3 ]; then how+=" ($list)"; else how+=" (the plan's $tests column: $n tests)"; fi
        fi
        # shellcheck disable=SC2086
        build ISA="$isa" $margs THREADS=pthread; R_THREADS[i]=$DIR
        # The ML_NO_MMAP=1 and THREADS=1 siblings change only core/file.c and
        # the thread pool, which hold no ISA code: built and compared on the
        # portable rows (scalar, neon); "-" tells test_e2e.sh the others skip
        # them by plan.
        R_NOMMAP[i]=- R_SINGLE[i]=-
        if [ "$isa" = scalar ] || [ "$isa" = neon ]; then
            # shellcheck disable=SC2086
            build ISA="$isa" $margs ML_NO_MMAP=1; R_NOMMAP[i]=$DIR
            # shellcheck disable=SC2086
            build ISA="$isa" $margs THREADS=1; R_SINGLE[i]=$DIR
        fi
    fi
    R_P[$label]=$p R_F[$label]=$((f + WARNED)) R_S[$label]=0 R_E2E[$label]="-" R_HOW[$label]=$how
    R_BSEC[i]=$((SECONDS - t0)) R_CPU[i]=$((BUILD_CPU_MS - c0))
}

# run_row I: runs row I's tests (its output on stdout), then writes
# "passed failed skipped seconds|e2e|how" to $tmp/I.res.
run_row() {
    local i=$1 label isa compiler margs runner how tests gkey t0=$SECONDS p=0 f=0 s=0 e2e="-" dir
    IFS='|' read -r label isa compiler margs runner how tests gkey <<<"${rows[$i]}"
    how=${R_HOW[$label]} dir=${R_DIR[i]:-}
    if [ "${R_MODE[i]}" = cmake ]; then
        # shellcheck disable=SC2086
        REF_BUILD=${R_REF[i]:-} ML_RESULTS="$tmp/$label.tsv" nice bash tests/cmake_row.sh "build/$label" ${margs#cmake } >"$tmp/$i.run.log" 2>&1
        grep -E '^(FAIL|SKIP) - ' "$tmp/$i.run.log" | head -n 20 | sed "s/^/   [$label] /"
        if read -r p f s < <(results_total "$tmp/$label.tsv"); then
            e2e=$(awk -F'\t' '$1 == "e2e_golden" { print ($3 > 0 ? "FAIL" : "ok golden") }' "$tmp/$label.tsv")
        else
            echo "FAIL - $label: tests/cmake_row.sh wrote no results"; tail -n 5 "$tmp/$i.run.log" | sed 's/^/    /'
            p=0 f=1 s=0
        fi
    else
        BUILD=$dir ISA=$isa RUNNER="$runner" REF_BUILD=${R_REF[i]:-} NOMMAP_BUILD=${R_NOMMAP[i]:-} THREADS_BUILD=${R_THREADS[i]:-} SINGLE_BUILD=${R_SINGLE[i]:-} \
            ML_PLAN="${R_COL[i]}" ML_ROW="$label" ML_ROW_TAGS="$(row_tags "$label" "$runner")" ML_RESULTS="$tmp/$label.tsv" \
            nice bash tests/run_tests.sh >"$tmp/$i.run.log" 2>&1
        grep -E '^(FAIL|SKIP) - ' "$tmp/$i.run.log" | head -n 20 | sed "s/^/   [$label] /"
        if read -r p f s < <(results_total "$tmp/$label.tsv"); then
            e2e=$(awk -F'\t' '$1 == "test_e2e.sh" { print ($3 > 0 ? "FAIL " $3 "/" $2 + $3 : "ok " $2) ($4 > 0 ? " (" $4 " skip)" : "") }' "$tmp/$label.tsv")
            [ -n "$e2e" ] || e2e="-"
        else
            echo "FAIL - $label: tests/run_tests.sh wrote no results"; tail -n 5 "$tmp/$i.run.log" | sed 's/^/    /'
            p=0 f=1 s=0
        fi
        # The ASM=1 row also proves which file the kernel came from.
        if [ "$label" = sse2-asm ]; then
            if readelf -s "$dir/test_kernels" 2>/dev/null | grep -q 'FILE .* add\.S$' &&
                nm "$dir/test_kernels" | grep -q ' T ml_k_add_sse2$' && [ ! -e "$dir/obj/kernels/sse2/add.d" ]; then
                echo "ok - sse2-asm: ml_k_add_sse2 in $dir/test_kernels comes from kernels/sse2/add.S"; p=$((p + 1))
            else
                echo "FAIL - sse2-asm: ml_k_add_sse2 in $dir/test_kernels does not come from kernels/sse2/add.S"; f=$((f + 1))
            fi
        fi
    fi
    cpu_now
    echo "$p $f $s $((SECONDS - t0)) $CPU_MS|$e2e|$how" >"$tmp/$i.res"
}

# finish_row I: prints row I's output and adds its counts (after its run, if any).
finish_row() {
    local i=$1 label p f s sec cpu e2e how
    label=${rows[$i]%%|*}
    cat "$tmp/$i.log"
    if [ "${R_MODE[i]}" != done ]; then
        cat "$tmp/$i.out"
        if IFS='|' read -r counts e2e how <"$tmp/$i.res"; then
            read -r p f s sec cpu <<<"$counts"
            R_CPU[i]=$((R_CPU[i] + cpu)) CPU_RUN=$((CPU_RUN + cpu))
            R_P[$label]=$((${R_P[$label]} + p)) R_F[$label]=$((${R_F[$label]} + f)) R_S[$label]=$s
            R_E2E[$label]=$e2e R_HOW[$label]=$how R_BSEC[i]=$((R_BSEC[i] + sec))
        else
            echo "FAIL - $label: its run left no results"; R_F[$label]=$((${R_F[$label]} + 1))
        fi
    fi
    R_SEC[$label]=${R_BSEC[i]}
    TP=$((TP + ${R_P[$label]})) TF=$((TF + ${R_F[$label]})) TS=$((TS + ${R_S[$label]}))
    echo "   $label: ${R_P[$label]} passed, ${R_F[$label]} failed, ${R_S[$label]} skipped, e2e ${R_E2E[$label]} (${R_SEC[$label]} s)"
}

t_build=0 CPU_RUN=0
# left DONE TOTAL SECONDS: "about N min left", from the mean time of the DONE so far.
left() {
    local m=$(($3 * ($2 - $1) / ($1 > 0 ? $1 : 1) / 60))
    if [ "$1" -ge "$2" ]; then echo "done"; elif [ "$m" -lt 1 ]; then echo "under a minute left"; else echo "about $m min left"; fi
}
if [ -n "${ML_ROWS:-}" ]; then echo "== make test: ${#rows[@]} rows (ML_ROWS=$ML_ROWS): each row's tests start when its builds are made"
else echo "== make test: ${#rows[@]} rows (+ the guard and make dist): each row's tests start when its builds are made," \
    "~23 min on 2 cores; ML_ROWS=\"scalar avx2\" make test runs a few rows"; fi

# ---- run once: the guard (reuses the builds above) and make dist ---------------------
# run_once TAG SCRIPT: runs tests/SCRIPT (its results in $tmp/TAG.tsv), its output
# on stdout; writes "passed failed skipped seconds" to $tmp/TAG.res. Skipped when
# ML_ROWS is set, and a test the plan's "once" column does not name.
run_once() {
    local tag=$1 script=$2 t=$SECONDS p f s
    if [ -n "${ML_ROWS:-}" ]; then
        printf 'total\t0\t0\t1\t0\n' >"$tmp/$tag.tsv"; echo "SKIP - $script: ML_ROWS is set"
    elif [[ $script == test_* ]] && ! plan_runs "$script" once matrix; then
        printf 'total\t0\t0\t1\t0\n' >"$tmp/$tag.tsv"; echo "SKIP - $script: not in tests/plan.txt's once column"
    else
        ML_RESULTS="$tmp/$tag.tsv" nice bash "tests/$script" >"$tmp/$tag.log" 2>&1
        grep -E '^(FAIL|SKIP) - ' "$tmp/$tag.log" | sed "s/^/   [$tag] /"
    fi
    if ! read -r p f s < <(results_total "$tmp/$tag.tsv"); then
        p=0 f=1 s=0; echo "FAIL - $script wrote no results"; tail -n 5 "$tmp/$tag.log" | sed 's/^/    /'
    fi
    echo "$p $f $s $((SECONDS - t))" >"$tmp/$tag.res"
}
ONCE=("guard|test_guard.sh|every guard refusal" "dist|dist_check.sh|make dist: static, golden, launcher")
# finish_once K: prints the K-th once-only script's output, adds its counts; sets O_P O_F O_S O_SEC.
finish_once() {
    local tag script name
    IFS='|' read -r tag script name <<<"${ONCE[$1]}"
    echo "== tests/$script ($name)"
    cat "$tmp/$tag.out"
    read -r O_P O_F O_S O_SEC <"$tmp/$tag.res" || { O_P=0 O_F=1 O_S=0 O_SEC=0; echo "FAIL - $script did not finish"; }
    TP=$((TP + O_P)) TF=$((TF + O_F)) TS=$((TS + O_S))
    echo "   $script: $O_P passed, $O_F failed, $O_S skipped ($O_SEC s)"
}

# ---- build the rows one at a time, and run their tests and the once-only
# scripts $PAR at a time beside the builds; print in the rows' order -------------
echo "== building the rows one at a time; running the rows' tests, the guard and make dist $PAR at a time, the longest first"
t_run=$SECONDS t_run0=$SECONDS
# Each of the $PAR slots runs one job at a time, with its own folder of
# test_e2e.sh's converted models (build/models, build/models-1, ...): two rows
# never write one cache at once. Jobs 0..N-1 are the rows, N.. the ONCE scripts.
# A job's .done file is written however its subshell ends (a missing .res is
# one failure of the job), so a job that dies cannot stop the matrix.
nrows=${#rows[@]} njobs=$((${#rows[@]} + ${#ONCE[@]}))
# The order the rows are built and the jobs start in: the longest first, so
# that the last ones to run are short and both slots stay busy to the end
# (the output still comes in the rows' order): the emulated rows of the full
# column (minutes each under qemu), the once-only scripts, the other emulated
# rows, the native ones. While the builds go on (make -j$JOBS, one build at a
# time) the slots run the emulated rows already built; the native rows and
# the once-only scripts wait for every build, since their tests make builds
# themselves (make run, make dist, the guard's builds) into the same folders.
declare -a EMU COL
for i in "${!rows[@]}"; do IFS='|' read -r _ _ _ _ EMU[i] _ COL[i] _ <<<"${rows[$i]}"; done
emulated() { [ -n "${EMU[$1]}" ]; }
order=()
for i in "${!rows[@]}"; do emulated "$i" && [ "${COL[i]}" = full ] && order+=("$i"); done
for ((j = nrows; j < njobs; j++)); do order+=("$j"); done
for i in "${!rows[@]}"; do emulated "$i" && [ "${COL[i]}" != full ] && order+=("$i"); done
for i in "${!rows[@]}"; do emulated "$i" || order+=("$i"); done
border=()
for j in "${order[@]}"; do [ "$j" -ge "$nrows" ] || border+=("$j"); done
declare -a SLOT
declare -A BUILT_ROW STARTED
nbuilt=0 shown=0
# startable JOB: whether the job can start now.
startable() {
    [ -z "${STARTED[$1]:-}" ] || return 1
    if [ "$1" -lt "$nrows" ]; then
        [ -n "${BUILT_ROW[$1]:-}" ] && [ "${R_MODE[$1]}" != done ] || return 1
        emulated "$1" || [ "$nbuilt" -ge "$nrows" ]
    else
        [ "$nbuilt" -ge "$nrows" ]
    fi
}
while [ "$shown" -lt "$njobs" ]; do
    for ((s = 0; s < PAR; s++)); do
        [ -z "${SLOT[s]:-}" ] || [ -e "$tmp/${SLOT[s]}.done" ] || continue
        job=""
        for j in "${order[@]}"; do startable "$j" && { job=$j; break; }; done
        [ -n "$job" ] || break
        cache=build/models; [ "$s" = 0 ] || cache+=-$s
        if [ "$job" -lt "$nrows" ]; then
            ( (export ML_E2E_MODELS=$cache; run_row "$job" >"$tmp/$job.out" 2>&1); : >"$tmp/$job.done") &
        else
            IFS='|' read -r tag script _ <<<"${ONCE[job - nrows]}"
            ( (run_once "$tag" "$script" >"$tmp/$tag.out" 2>&1); : >"$tmp/$job.done") &
        fi
        SLOT[s]=$job STARTED[$job]=1
    done
    while [ "$shown" -lt "$njobs" ] && { [ -e "$tmp/$shown.done" ] ||
        { [ "$shown" -lt "$nrows" ] && [ -n "${BUILT_ROW[$shown]:-}" ] && [ "${R_MODE[shown]}" = done ]; }; }; do
        echo "-- row $((shown + 1))/$njobs ($(left $((shown + 1)) "$njobs" $((SECONDS - t_run0))) of the rows and scripts)"
        if [ "$shown" -lt "$nrows" ]; then
            finish_row "$shown"
            [ "$shown" -lt "$((nrows - 1))" ] || t_run=$((SECONDS - t_run))
        else
            finish_once $((shown - nrows))
            case ${ONCE[shown - nrows]%%|*} in
            guard) gp=$O_P gf=$O_F gs=$O_S gsec=$O_SEC ;;
            dist) dp=$O_P df=$O_F ds=$O_S dsec=$O_SEC ;;
            esac
        fi
        shown=$((shown + 1))
    done
    # the next build, while the slots run tests (its output printed with its row)
    if [ "$nbuilt" -lt "$nrows" ]; then
        i=${border[nbuilt]} t0=$SECONDS
        prepare_row "$i" >"$tmp/$i.log"
        BUILT_ROW[$i]=1 nbuilt=$((nbuilt + 1)) t_build=$((t_build + SECONDS - t0))
        echo "   built row $nbuilt/$nrows: ${rows[$i]%%|*} (${R_BSEC[i]} s; builds: $(left "$nbuilt" "$nrows" "$t_build"))"
        continue
    fi
    [ "$shown" -lt "$njobs" ] && sleep 1
done
wait
[ "$nrows" -gt 0 ] || t_run=0

# guard_of LABEL: test_guard.sh's row for that build, or n/a.
guard_of() {
    [ -n "$1" ] || { echo "-"; return; }
    awk -F'\t' -v k="$1" '$1 == k { print ($3 > 0 ? "FAIL " $3 "/" $2 + $3 : "ok " $2) ($4 > 0 ? " (" $4 " skip)" : ""); found = 1 }
        END { if (!found) print "n/a" }' "$tmp/guard.tsv" 2>/dev/null || echo "n/a"
}

# ---- the matrix -------------------------------------------------------------------
fmt='%-32s %-36s %-22s %-16s %-14s %6s  %s\n'
echo
# shellcheck disable=SC2059
printf "$fmt" "row" "compiler" "tests" "e2e" "guard refusal" "time" "how verified"
# shellcheck disable=SC2059
printf "$fmt" "---" "--------" "-----" "---" "-------------" "----" "------------"
for i in "${!rows[@]}"; do
    IFS='|' read -r label isa compiler margs runner how tests gkey <<<"${rows[$i]}"
    t="ok ${R_P[$label]}"
    [ "${R_F[$label]}" -gt 0 ] && t="FAIL ${R_F[$label]}, ok ${R_P[$label]}"
    [ "${R_S[$label]}" -gt 0 ] && t+=" (${R_S[$label]} skip)"
    g=$(guard_of "$gkey")
    # shellcheck disable=SC2059
    printf "$fmt" "$label" "$compiler" "$t" "${R_E2E[$label]}" "$g" "${R_SEC[$label]} s" "${R_HOW[$label]}"
    results_row "$out" "$label" "${R_P[$label]}" "${R_F[$label]}" "${R_S[$label]}" "${R_SEC[$label]}" \
        "$isa" "$compiler" "${R_E2E[$label]}" "$g" "${R_HOW[$label]}" "$((R_CPU[i] / 1000))"
done
results_row "$out" test_guard.sh "$gp" "$gf" "$gs" "$gsec" - - - - "once, every guard refusal"
results_row "$out" dist_check.sh "$dp" "$df" "$ds" "$dsec" - - - - "once, make dist: static, golden, launcher"
for n in "${notes[@]}"; do echo "note: not built: $n"; done
echo "(tests = the row's column of tests/plan.txt, test_e2e.sh included; guard = tests/test_guard.sh, run once:" \
    "$gp passed, $gf failed, $gs skipped; make dist's check: $dp passed, $df failed, $ds skipped; results in $out)"
echo "time: $((SECONDS - t_start)) s: builds $t_build s (CPU $((BUILD_CPU_MS / 1000)) s), the rows' tests beside and after them:" \
    "the last row done at $t_run s (CPU $((CPU_RUN / 1000)) s; $PAR rows at a time;" \
    "a row's time is its builds and its tests), guard $gsec s, dist $dsec s; the slowest rows:" \
    "$(for r in "${rows[@]}"; do echo "${R_SEC[${r%%|*}]} ${r%%|*}"; done | sort -rn | head -n 5 | awk '{ printf "%s%s %d s", (NR > 1 ? ", " : ""), $2, $1 }')"
results_row "$out" total "$TP" "$TF" "$TS" $((SECONDS - t_start))
results_line "$TP" "$TF" "$TS"
[ "$TF" -eq 0 ]
