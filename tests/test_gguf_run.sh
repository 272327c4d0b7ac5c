#!/usr/bin/env bash
# ml_run -m X.gguf (model/gguf_mlb.c, README "Running a GGUF file"): the
# first run converts the GGUF into the cache folder and says so, the cached
# .mlb has the bytes tools/convert.py writes for it (SHA-256 below, of the
# fuzz seeds fuzz/corpus/gguf/: dim 32; Llama Q8_0 and Q4_0 with the FFN padded
# from 48 (ffn_down F16, quantized; the rest copied); Qwen2 Q4_0 with biases and
# a byte-level BPE vocabulary; all fp16 block scales, convert.py's --scales auto),
# later runs map it silently with the same output, a changed GGUF is converted
# again (its mtime, or in place: its bytes), an output onto the GGUF is
# refused, ML_CACHE_DIR / XDG_CACHE_HOME / HOME pick the folder, ml_tokenize and
# ml_perplexity take the GGUF too, and a damaged GGUF or an unwritable cache
# is a clear error (exit 1), the GGUF untouched. Cheap: no Python, tiny files.
# env: BUILD RUNNER
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh
need_exe "$BUILD/ml_run"
scratch
RUN() { $RUNNER "$BUILD/ml_run" "$@"; }
declare -A WANT=(
    [q8_0]=fd7572a77d2ef24cc4e63a2ad1b8bc5c333fe3b25447c4a7b9401227b49fcd66
    [q4_0]=4d7544bbfd69cd16914d7f663e01241df2ade9f62500320250381431757a69d1
    [qwen2_bpe_q4_0]=cb19f43d20cafb5a2a8a34894e0182ad1bd2e6915a41996a29bfaea629254b45
)
for q in q8_0 q4_0 qwen2_bpe_q4_0; do
    src=fuzz/corpus/gguf/llama_$q.gguf
    [ -f "$src" ] || src=fuzz/corpus/gguf/$q.gguf
    g=$tmp/llama_$q.gguf
    cp "$src" "$g"
    before=$(sha256sum <"$g")
    out1=$(ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 8 --temp 0 -i "a" 2>"$tmp/err1") rc1=$?
    out2=$(ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 8 --temp 0 -i "a" 2>"$tmp/err2") rc2=$?
    mlb=$(ls "$tmp"/cache/llama_"$q"-*.mlb 2>/dev/null)
    if [ $rc1 -eq 0 ] && grep -q "converting $g into the cache $tmp/cache/llama_$q-.*\.mlb (once" "$tmp/err1"; then
        ok "first run: $q GGUF converted into the cache, saying so"
    else
        bad "first run: $q GGUF: exit $rc1, $(tail -c 300 "$tmp/err1")"
    fi
    got=$(sha256sum <"$mlb" 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "${WANT[$q]}" ] && ok "the cached .mlb: $q: the bytes of tools/convert.py" ||
        bad "the cached .mlb: $q: sha256 $got, convert.py writes ${WANT[$q]}"
    [ $rc2 -eq 0 ] && ! grep -q converting "$tmp/err2" && [ "$out1" = "$out2" ] && [ -n "$out1" ] &&
        ok "second run: $q: the cache reused, the same text" || bad "second run: $q: exit $rc2, $(tail -c 300 "$tmp/err2")"
    [ "$(sha256sum <"$g")" = "$before" ] && ok "the GGUF: $q: untouched" || bad "the GGUF: $q: changed"
done

g=$tmp/llama_q8_0.gguf
touch -d '2001-01-01' "$g"
ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 2 2>"$tmp/err" >/dev/null
[ $? -eq 0 ] && grep -q converting "$tmp/err" && [ "$(ls "$tmp"/cache/llama_q8_0-*.mlb | wc -l)" = 2 ] &&
    ok "a changed GGUF (its mtime): converted again, under a new name" || bad "a changed GGUF: $(tail -c 300 "$tmp/err")"
# Rewritten in place with other bytes of the old size and mtime (cp -p, or
# two writes within a second): the content the key samples changed, so it
# converts again. A chmod changes no byte: the cache stays.
touch -r "$g" "$tmp/stamp"
cp "$g" "$tmp/orig.gguf"
size=$(wc -c <"$g")
{ head -c $((size - 1)) "$tmp/orig.gguf"; tail -c 1 "$tmp/orig.gguf" | tr '\000-\377' '\001-\377\000'; } >"$g"
touch -r "$tmp/stamp" "$g"
ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 2 >/dev/null 2>"$tmp/err"
rc=$?
[ "$(wc -c <"$g")" = "$size" ] && ! cmp -s "$g" "$tmp/orig.gguf" && grep -q converting "$tmp/err" &&
    ok "a GGUF rewritten in place (other bytes, same size and mtime): converted again" ||
    bad "a GGUF rewritten in place: the cache reused (stale), exit $rc: $(tail -c 300 "$tmp/err")"
cp "$tmp/orig.gguf" "$g"
ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 2 >/dev/null 2>&1
chmod 600 "$g"
ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 2 >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && ! grep -q converting "$tmp/err" && ok "a chmod of the GGUF: the cache reused" ||
    bad "a chmod of the GGUF: converted again: $(tail -c 300 "$tmp/err")"
# An output onto the GGUF itself (before conversion, and not only its cache).
before=$(sha256sum <"$g")
ML_CACHE_DIR=$tmp/cache RUN -m "$g" -n 4 --temp 0 -i a --logits "$g" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "is the same file as the model -m" "$tmp/err" && [ "$(sha256sum <"$g")" = "$before" ] &&
    ok "--logits onto the GGUF -m: refused, exit 2, the GGUF untouched" || bad "--logits onto the GGUF: $(tail -c 300 "$tmp/err")"

mkdir -p "$tmp/xdg" "$tmp/home"
env -u ML_CACHE_DIR XDG_CACHE_HOME=$tmp/xdg $RUNNER "$BUILD/ml_run" -m "$g" -n 2 >/dev/null 2>&1
env -u ML_CACHE_DIR -u XDG_CACHE_HOME HOME=$tmp/home $RUNNER "$BUILD/ml_run" -m "$g" -n 2 >/dev/null 2>&1
ls "$tmp"/xdg/legacy-ml/llama_q8_0-*.mlb >/dev/null 2>&1 && ls "$tmp"/home/.cache/legacy-ml/llama_q8_0-*.mlb >/dev/null 2>&1 &&
    ok "the cache folder: \$XDG_CACHE_HOME/legacy-ml, else ~/.cache/legacy-ml" || bad "the cache folder: $(ls -R "$tmp/xdg" "$tmp/home")"

for p in ml_tokenize ml_perplexity; do
    [ -x "$BUILD/$p" ] || continue
    ML_CACHE_DIR=$tmp/cache $RUNNER "$BUILD/$p" -m "$g" -h >/dev/null 2>&1
    if [ "$p" = ml_tokenize ]; then
        o=$(ML_CACHE_DIR=$tmp/cache $RUNNER "$BUILD/$p" -m "$g" -i "a b" 2>"$tmp/err")
    else
        head -c 3000 /dev/zero | tr '\0' 'a' >"$tmp/text"
        o=$(ML_CACHE_DIR=$tmp/cache $RUNNER "$BUILD/$p" -m "$g" -f "$tmp/text" -c 16 2>"$tmp/err")
    fi
    [ $? -eq 0 ] && [ -n "$o" ] && ok "$p -m X.gguf: runs on the cached model" || bad "$p -m X.gguf: $(tail -c 300 "$tmp/err")"
done

head -c 2000 "$g" >"$tmp/cut.gguf"
ML_CACHE_DIR=$tmp/cache RUN -m "$tmp/cut.gguf" -n 2 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "running the GGUF file $tmp/cut.gguf failed (ML_E_FORMAT)" "$tmp/err" &&
    ! ls "$tmp"/cache/cut-* >/dev/null 2>&1 && ok "a truncated GGUF: ML_E_FORMAT, exit 1, nothing cached" ||
    bad "a truncated GGUF: $(tail -c 300 "$tmp/err")"
if [ "$(id -u)" != 0 ]; then
    mkdir -p "$tmp/ro" && chmod 500 "$tmp/ro"
    ML_CACHE_DIR=$tmp/ro/c RUN -m "$g" -n 2 >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && grep -q "cache folder" "$tmp/err" && ok "an unwritable cache: a clear error, exit 1" ||
        bad "an unwritable cache: $(tail -c 300 "$tmp/err")"
else
    ML_CACHE_DIR=$g/c RUN -m "$g" -n 2 >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && grep -q "cache folder" "$tmp/err" && ok "an unusable cache folder (under a file): a clear error, exit 1" ||
        bad "an unusable cache folder: $(tail -c 300 "$tmp/err")"
fi
# A cache folder that exists but cannot be written (another user's, a
# read-only file system): refused up front, pointing to ML_CACHE_DIR.
mkdir -p "$tmp/ro2"
if [ "$(id -u)" != 0 ]; then
    chmod 500 "$tmp/ro2"
elif ! mount -t tmpfs -o ro,size=64k tmpfs "$tmp/ro2" 2>/dev/null; then
    skip "a read-only cache folder: root, and no mount of a read-only tmpfs here"
    finish
fi
ML_CACHE_DIR=$tmp/ro2 RUN -m "$g" -n 2 >/dev/null 2>"$tmp/err"
rc=$?
[ "$(id -u)" = 0 ] && umount "$tmp/ro2"
[ $rc -eq 1 ] && grep -q "cache folder $tmp/ro2: .*(set ML_CACHE_DIR to a writable folder)" "$tmp/err" &&
    ok "a cache folder that cannot be written: a clear error naming ML_CACHE_DIR, exit 1" ||
    bad "a read-only cache folder: exit $rc, $(tail -c 300 "$tmp/err")"
finish
