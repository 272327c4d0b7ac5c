#!/usr/bin/env bash
# ml_run --chat on the shipped stories260K (no chat model, but Zephyr's
# template works on its SentencePiece vocabulary): a pipe of questions is
# answered turn by turn and the program exits 0 at the end of input; each
# turn after the first prefills only its new tokens (stderr); greedy replies
# are reproducible; a full context is said and ends the chat (exit 1); an
# unknown template, a template whose control tokens the vocabulary lacks
# and a missing value are refused; Ctrl-C at the prompt ends the chat.
# env: BUILD RUNNER (set by tests/run_tests.sh)
set -u
cd "$(dirname "$0")/.."
: "${BUILD:=build/scalar}" "${RUNNER:=}"
. tests/sh_lib.sh
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
need_exe "$BUILD/ml_run"
scratch
SM=models/stories260K
M=(-m "$SM/stories260K_q8_0.mlb" -z "$SM/tok512.bin")
# shellcheck disable=SC2086
chat() { $RUNNER "$BUILD/ml_run" --chat "${M[@]}" "$@"; }
Q=$'Hello there\nTell me a story\n'

# ---- turns ---------------------------------------------------------------------
printf '%s' "$Q" | chat --chat-template zephyr --temp 0 -n 40 --system "You are kind." >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
check "turns: a pipe of two questions, exit 0 at its end" "[ $rc -eq 0 ]"
check "turns: two replies after the prompt marker" "[ \$(grep -c '^> ' '$tmp/a.out') -ge 2 ]"
n1=$(sed -n 's/^\[prefill: \([0-9]*\) new tokens.*, \([0-9]*\) in the cache\]$/\1 \2/p' "$tmp/a.err")
read -r new1 cache1 new2 cache2 <<<"$(echo $n1)"
check "turns: each turn prefills only its new tokens (${new1:-?}, then ${new2:-?} of ${cache2:-?})" \
    "[ -n '${cache2:-}' ] && [ ${new1:-0} -eq ${cache1:-1} ] && [ ${new2:-0} -lt ${cache2:-0} ] && [ ${cache2:-0} -gt $((cache1 + new2)) ]"
printf '%s' "$Q" | chat --chat-template zephyr --temp 0 -n 40 --system "You are kind." >"$tmp/b.out" 2>/dev/null
check "turns: greedy replies are reproducible" "cmp -s '$tmp/a.out' '$tmp/b.out'"
printf '%s' "$Q" | chat --chat-template llama2 --temp 0 -n 20 >"$tmp/l.out" 2>"$tmp/l.err"
check "turns: llama2's [INST] template on SentencePiece" "[ $? -eq 0 ] && [ \$(grep -c '^\[prefill' '$tmp/l.err') -eq 2 ]"
: | chat --chat-template zephyr >/dev/null 2>&1
check "turns: empty input, exit 0" "[ $? -eq 0 ]"

# ---- limits and refusals -----------------------------------------------------------
printf '%s' "$Q" | chat --chat-template zephyr --temp 0 -n 40 -c 100 >/dev/null 2>"$tmp/full.err"
rc=$?
check "refusals: a full context is said, exit 1" "[ $rc -eq 1 ] && grep -q 'context full' '$tmp/full.err'"
chat --chat-template vicuna </dev/null >/dev/null 2>"$tmp/u.err"
rc=$?
check "refusals: an unknown template lists the names (exit 2)" \
    "[ $rc -eq 2 ] && grep -q 'chatml, llama3, zephyr, llama2, deepseek-r1' '$tmp/u.err'"
chat --chat-template chatml </dev/null >/dev/null 2>"$tmp/c.err"
rc=$?
check "refusals: chatml on a vocabulary without <|im_start|> (exit 1)" "[ $rc -eq 1 ] && grep -q 'im_start' '$tmp/c.err'"
chat </dev/null >/dev/null 2>"$tmp/n.err"
rc=$?
check "refusals: no template (the model has none): exit 2, names listed" "[ $rc -eq 2 ] && grep -q 'zephyr' '$tmp/n.err'"
chat --chat-template zephyr --system </dev/null >/dev/null 2>&1
check "refusals: --system without a value (exit 2)" "[ $? -eq 2 ]"
chat --chat-template zephyr -i "Once" </dev/null >/dev/null 2>"$tmp/i.err"
check "refusals: -i with --chat (exit 2)" "[ $? -eq 2 ] && grep -q stdin '$tmp/i.err'"
for a in "--lookup 4" "--draft-model $SM/stories260K_q8_0.mlb"; do
    # shellcheck disable=SC2086
    chat --chat-template zephyr $a </dev/null >/dev/null 2>"$tmp/s.err"
    check "refusals: '${a%% *}' with --chat (exit 2), not ignored" "[ $? -eq 2 ] && grep -q 'do not apply' '$tmp/s.err'"
done
printf 'abc\0def\nHello there\n' | chat --chat-template zephyr --temp 0 -n 20 >"$tmp/nul.out" 2>"$tmp/nul.err"
rc=$?
printf 'Hello there\n' | chat --chat-template zephyr --temp 0 -n 20 >"$tmp/one.out" 2>/dev/null
check "input: a line with a NUL byte is skipped, said, and the next answered as alone" \
    "[ $rc -eq 0 ] && grep -q 'NUL byte' '$tmp/nul.err' && [ \"\$(tail -c +3 '$tmp/nul.out')\" = \"\$(cat '$tmp/one.out')\" ]"

# ---- Ctrl-C at the prompt ends the chat ---------------------------------------------
if [ -n "$RUNNER" ]; then
    skip "sigint: under $RUNNER"
else
    mkfifo "$tmp/in"
    "$BUILD/ml_run" --chat "${M[@]}" --chat-template zephyr -n 5 <"$tmp/in" >"$tmp/s.out" 2>"$tmp/s.err" &
    pid=$!
    exec 3>"$tmp/in"
    printf 'Hi\n' >&3
    for _ in $(seq 50); do grep -q '^\[prefill' "$tmp/s.err" && break; sleep 0.1; done
    sleep 0.3
    kill -INT "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill "$pid"; rc=99; else wait "$pid"; rc=$?; fi
    exec 3>&-
    check "sigint: Ctrl-C at the prompt ends the chat, exit 0 (got $rc)" "[ $rc -eq 0 ]"
fi
finish
