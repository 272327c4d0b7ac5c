#!/usr/bin/env bash
# The library (make lib, make install): libml.so exports exactly the
# functions include/legacy_ml.h declares (nm -D), its soname carries the
# version; an installed copy (make install PREFIX=) builds examples/stream.c
# out of tree through pkg-config, and its output equals ml_run's for the same
# model, prompt and seed (the shipped models/stories260K).
# env: BUILD, ISA (the library is built into $BUILD/lib for ISA), CC
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
scratch
need_exe "$BUILD/ml_run"
make_args=(ISA="$ISA" BUILD="$BUILD")
if ! make -s "${make_args[@]}" lib >"$tmp/make.log" 2>&1; then
    bad "lib: make lib ISA=$ISA failed: $(tail -n 5 "$tmp/make.log" | tr '\n' ' ')"
    finish
fi
so=$BUILD/lib/libml.so
ok "lib: make lib built $BUILD/lib/libml.a and libml.so"

# ---- the exports: the header's LML_API functions, no more, no fewer ---------
header=$(sed -n 's/^LML_API[^(]*[ *]\(lml_[a-z_0-9]*\)(.*/\1/p' include/legacy_ml.h | sort)
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TtWwDdBbRrVv]$/ { print $3 }' | sort)
if [ "$(wc -l <<<"$header")" -ge 10 ] && [ "$header" = "$exported" ]; then
    ok "symbols: libml.so exports exactly the $(wc -l <<<"$header") functions of include/legacy_ml.h"
else
    bad "symbols: exported but not in the header: $(comm -13 <(echo "$header") <(echo "$exported") | tr '\n' ' ');" \
        "in the header, not exported: $(comm -23 <(echo "$header") <(echo "$exported") | tr '\n' ' ')"
fi
ver=$(sed -n 's/^#define ML_VERSION "\(.*\)"/\1/p' core/version.h)
soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
case $ver in 0.*) want=libml.so.${ver%.*} ;; *) want=libml.so.${ver%%.*} ;; esac
if [ "$soname" = "$want" ]; then ok "symbols: soname $soname (version $ver)"; else bad "symbols: soname '$soname', expected $want"; fi

# ---- installed, and an out-of-tree program through pkg-config ----------------
prefix=$tmp/prefix
if ! make -s "${make_args[@]}" install PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
    bad "install: make install PREFIX=$prefix failed: $(tail -n 5 "$tmp/install.log" | tr '\n' ' ')"
    finish
fi
missing=""
for f in include/legacy_ml.h lib/libml.a lib/libml.so lib/libml.so.$ver lib/pkgconfig/legacy-ml.pc; do
    [ -e "$prefix/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "install: header, both libraries and legacy-ml.pc under PREFIX"; else bad "install: missing$missing"; fi
if ! command -v pkg-config >/dev/null; then
    skip "example: no pkg-config (apt-get install pkg-config)"
    finish
fi
mkdir -p "$tmp/app" && cp examples/stream.c "$tmp/app/"
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs legacy-ml)
if (cd "$tmp/app" && ${CC:-cc} -std=c11 -Wall -Wextra -Werror stream.c $flags -o stream) 2>"$tmp/cc.log"; then
    ok "example: examples/stream.c builds out of tree with pkg-config --cflags --libs legacy-ml"
else
    bad "example: the build failed: $(head -n 5 "$tmp/cc.log" | tr '\n' ' ')"
    finish
fi
model=models/stories260K/stories260K_q8_0.mlb tok=models/stories260K/tok512.bin
for args in "Once upon a time|64|42" "Lily|0|7"; do
    IFS='|' read -r prompt steps seed <<<"$args"
    want=$($RUNNER "$BUILD/ml_run" -m "$model" -z "$tok" -i "$prompt" -n "$steps" -s "$seed" 2>/dev/null)
    got=$(LD_LIBRARY_PATH=$prefix/lib $RUNNER "$tmp/app/stream" "$model" "$tok" "$prompt" "$steps" "$seed" 2>"$tmp/err")
    if [ -n "$want" ] && [ "$got" = "$want" ]; then
        ok "example: stream '$prompt' -n $steps -s $seed prints ml_run's text ($(wc -c <<<"$got") bytes)"
    else
        bad "example: stream '$prompt' -n $steps -s $seed differs from ml_run: '$got' vs '$want' $(cat "$tmp/err")"
    fi
done
# A GGUF path: lml_model_open converts it once into the cache (ML_CACHE_DIR)
# and runs it with its own tokenizer, as ml_run -m does (the K-quant mix the
# GGUF fuzzer starts from: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16 and Q4_K tensors).
gguf=fuzz/corpus/gguf/llama_kquant_mix.gguf
want=$(ML_CACHE_DIR=$tmp/cache_run $RUNNER "$BUILD/ml_run" -m "$gguf" -i "a" -n 12 -s 3 2>/dev/null)
got=$(ML_CACHE_DIR=$tmp/cache_lib LD_LIBRARY_PATH=$prefix/lib $RUNNER "$tmp/app/stream" "$gguf" - "a" 12 3 2>"$tmp/err")
if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$(ls "$tmp/cache_lib")" = "$(ls "$tmp/cache_run")" ] &&
    cmp -s "$tmp/cache_lib"/*.mlb "$tmp/cache_run"/*.mlb; then
    ok "example: stream $gguf (a GGUF, its own tokenizer) prints ml_run's text; the library cached the same .mlb"
else
    bad "example: stream $gguf: '$got' vs '$want' $(cat "$tmp/err"); caches: $(ls "$tmp/cache_lib" "$tmp/cache_run" 2>&1 | tr '\n' ' ')"
fi

# ---- the library's own guard: an sse41 libml.so under a CPU without SSE4.1 --
# (qemu-x86_64 -cpu qemu64) refuses the model with the missing features named.
if [ "$(uname -m)" != x86_64 ] || ! command -v qemu-x86_64 >/dev/null || [ -n "$RUNNER" ]; then
    skip "guard: needs an x86-64 host with qemu-x86_64 (apt-get install qemu-user)"
    finish
fi
if ! make -s ISA=sse41 BUILD="$tmp/sse41" lib >"$tmp/make41.log" 2>&1; then
    bad "guard: make lib ISA=sse41 failed: $(tail -n 5 "$tmp/make41.log" | tr '\n' ' ')"
    finish
fi
out=$(LD_LIBRARY_PATH=$tmp/sse41/lib qemu-x86_64 -cpu qemu64 "$tmp/app/stream" "$model" "$tok" "Lily" 8 1 2>"$tmp/err")
rc=$?
if [ "$rc" -eq 1 ] && [ -z "$out" ] && grep -q "built for sse41 but this CPU lacks: .*SSE4.1" "$tmp/err"; then
    ok "guard: an sse41 library on a CPU without SSE4.1 refuses to open the model: $(head -n 1 "$tmp/err")"
else
    bad "guard: sse41 library under qemu64: exit $rc, stdout '$out', stderr '$(cat "$tmp/err")'"
fi
out=$(LD_LIBRARY_PATH=$tmp/sse41/lib qemu-x86_64 -cpu Nehalem "$tmp/app/stream" "$model" "$tok" "Lily" 8 1 2>"$tmp/err")
want=$($RUNNER "$BUILD/ml_run" -m "$model" -z "$tok" -i "Lily" -n 8 -s 1 2>/dev/null)
if [ -n "$want" ] && [ "$out" = "$want" ]; then
    ok "guard: the same library runs on a CPU with SSE4.1 (qemu -cpu Nehalem) and prints ml_run's text"
else
    bad "guard: sse41 library under Nehalem: '$out' vs '$want' $(cat "$tmp/err")"
fi
finish
