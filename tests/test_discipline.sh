#!/usr/bin/env bash
# Library discipline (STYLE.md 11, DESIGN §6): below app/ the code returns an
# ml_status and never prints or ends the process, and it allocates only in
# the known load-time places (tests/test_noalloc.c proves that generation
# itself allocates nothing).
#   1. source: no call of exit/abort/assert/printf/puts/perror/... and no use
#      of stdout/stderr in core/ model/ ops/ kernels/ config/ api/ (snprintf and
#      vsnprintf into a buffer are fine); comments and strings are ignored.
#   2. source: malloc/calloc/realloc/aligned_alloc/posix_memalign/strdup only
#      in the functions of ALLOC_ALLOWED below (file:function).
#   3. objects of $BUILD (when built): no such symbol imported by a library
#      object, catching what a macro or the compiler introduces (gcc turns
#      printf into puts; _FORTIFY_SOURCE into __printf_chk).
# env: BUILD (default build/scalar)
set -u
cd "$(dirname "$0")/.."
. tests/sh_lib.sh

# The load-time allocations: arena, read fallback, thread pool, tokenizers,
# the speculation context (sized once at set-up), the weight layout's one-group
# scratch (model/loader.c:pack_weights, freed before the load returns), the library's handles
# (api/: a model's, a chat's and a sampler's, at open); the GGUF reader and
# converter (model/gguf*.c: before a load, converting ml_run -m X.gguf);
# core/mem.c holds the aligned allocators the first two call (their own
# callers are checked like any allocation: ml_aligned_alloc and
# ml_large_alloc are in ALLOC_RE; "-" is file scope, i.e. their declarations
# and definitions).
ALLOC_ALLOWED="
core/mem.h:-
core/mem.c:-
core/mem.c:ml_aligned_alloc
core/mem.c:ml_large_alloc
core/arena.c:ml_arena_init
core/file.c:read_whole
core/threads.c:ml_pool_create
model/tokenizer.c:build
model/bpe.c:build
model/bpe.c:sort_specials
model/speculate.c:ml_spec_init
model/loader.c:pack_weights
model/gguf.c:parse
model/gguf.c:check_keys_unique
model/gguf_mlb.c:check_tensors
model/gguf_mlb.c:read_tokenizer
model/gguf_mlb.c:read_bpe
model/gguf_mlb.c:write_body
model/chat.c:ml_chat_init
model/chat.c:ml_chat_use_template_defaults
model/chat.c:jinja_unescape
api/api.c:ml_api_open
api/chat.c:lml_chat_open
api/sampler.c:lml_sampler_open
"
LIB_DIRS="core model ops kernels config api"
PRINT_RE='exit|_Exit|_exit|quick_exit|abort|assert|printf|fprintf|vprintf|vfprintf|dprintf|puts|fputs|putchar|perror'
STREAM_RE='stdout|stderr'
ALLOC_RE='malloc|calloc|realloc|aligned_alloc|ml_aligned_alloc|ml_large_alloc|_aligned_malloc|posix_memalign|memalign|valloc|strdup|strndup'

# Prints "file:line:function:name" for every call of a function matching
# $2 (an identifier followed by "(") and every use of an identifier matching
# $3, in the code of file $1: comments, strings, character literals and
# preprocessor lines are ignored; function = the definition the use is in
# ("-" at file scope), i.e. the identifier before the last top-level "(...)"
# ahead of the body.
uses() {
    awk -v file="$1" -v call_re="^($2)\$" -v use_re="^($3)\$" '
    BEGIN { incom = 0; depth = 0; paren = 0; fn = "-"; cand = ""; last = ""; pending = "" }
    {
        line = $0; out = ""; i = 1; n = length(line)
        while (i <= n) {   # strip comments and literals, keep code
            c = substr(line, i, 1); c2 = substr(line, i, 2)
            if (incom) { if (c2 == "*/") { incom = 0; i += 2 } else i++; continue }
            if (c2 == "/*") { incom = 1; i += 2; continue }
            if (c2 == "//") break
            if (c == "\"" || c == "\047") {
                q = c; i++
                while (i <= n && substr(line, i, 1) != q) { if (substr(line, i, 1) == "\\") i++; i++ }
                i++; out = out " "; continue
            }
            out = out c; i++
        }
        if (out ~ /^[ \t]*#/) next
        rest = out
        while (match(rest, /[A-Za-z_][A-Za-z_0-9]*|[{}();,=]/)) {
            tok = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
            if (pending != "" && tok == "(") print file ":" FNR ":" (depth ? fn : "-") ":" pending
            pending = ""
            if (tok == "{") { if (depth == 0) fn = (cand != "" ? cand : "-"); depth++; last = ""; continue }
            if (tok == "}") { if (depth > 0) depth--; if (depth == 0) { fn = "-"; cand = "" } continue }
            if (tok == ";") { if (depth == 0) { cand = ""; paren = 0 } last = ""; continue }
            if (tok == "(") { if (depth == 0 && paren++ == 0 && last != "") cand = last; last = ""; continue }
            if (tok == ")") { if (depth == 0 && paren > 0) paren--; last = ""; continue }
            if (tok == "," || tok == "=") { last = ""; continue }
            if (tok ~ call_re) pending = tok
            if (tok ~ use_re) print file ":" FNR ":" (depth ? fn : "-") ":" tok
            last = tok
        }
    }' "$1"
}

files=$(find $LIB_DIRS -name '*.[ch]' 2>/dev/null | sort)
nfiles=$(wc -w <<<"$files")

# ---- 1. no printing, no exiting -------------------------------------------------
found=""
for f in $files; do found+=$(uses "$f" "$PRINT_RE" "$STREAM_RE")$'\n'; done
found=$(sed '/^$/d' <<<"$found")
if [ -z "$found" ]; then
    ok "no exit/abort/assert/printf/puts/perror/stdout/stderr in $nfiles files of $LIB_DIRS"
else
    while read -r u; do bad "library code prints or exits: $u"; done <<<"$found"
fi

# ---- 2. allocation only where allowed --------------------------------------------
found="" allowed_seen=""
for f in $files; do found+=$(uses "$f" "$ALLOC_RE" "-")$'\n'; done
nalloc=0
while IFS=: read -r file line fn name; do
    [ -n "$file" ] || continue
    nalloc=$((nalloc + 1))
    if grep -qx "$file:$fn" <<<"$ALLOC_ALLOWED"; then
        allowed_seen+="$file:$fn"$'\n'
    else
        bad "allocation outside the allow-list: $name in $file:$line, function $fn (load-time only: add it to ALLOC_ALLOWED in tests/test_discipline.sh if it is)"
    fi
done <<<"$found"
[ "$F" -eq 0 ] && ok "$nalloc allocation calls, all in the allowed load-time functions"
for a in $ALLOC_ALLOWED; do
    grep -qx "$a" <<<"$allowed_seen" || skip "allow-list entry $a no longer allocates (remove it?)"
done

# ---- 3. the objects: imported symbols ---------------------------------------------
objs=$(find $(for d in $LIB_DIRS; do echo "$BUILD/obj/$d"; done) -name '*.o' 2>/dev/null | sort)
if [ -z "$objs" ] || ! command -v nm >/dev/null; then
    skip "object symbols: no objects in $BUILD/obj (or no nm)"
else
    sym_print='^(exit|_exit|_Exit|quick_exit|abort|__assert_fail|printf|fprintf|vprintf|vfprintf|dprintf|puts|fputs|putchar|perror|__printf_chk|__fprintf_chk|__vfprintf_chk|__vprintf_chk|stdout|stderr)$'
    sym_alloc="^($ALLOC_RE)\$"
    nbad=0
    for o in $objs; do
        src=${o#"$BUILD/obj/"}; src=${src%.o}.c
        for s in $(nm -u "$o" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//'); do
            if [[ $s =~ $sym_print ]]; then
                bad "$o imports $s"; nbad=$((nbad + 1))
            elif [[ $s =~ $sym_alloc ]] && ! grep -q "^$src:" <<<"$ALLOC_ALLOWED"; then
                bad "$o imports $s, but $src is not in the allocation allow-list"; nbad=$((nbad + 1))
            fi
        done
    done
    [ "$nbad" -eq 0 ] && ok "$(wc -w <<<"$objs") library objects in $BUILD/obj import no printing, exiting or unlisted allocation"
fi

# ---- the checker itself catches what it should ---------------------------------
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
cat >"$tmpd/probe.c" <<'C'
/* printf("in a comment"); exit(1); */
static const char *s = "abort(); malloc(3)";
static int table[] = {1, 2};
__attribute__((format(printf, 1, 2))) static int quiet(const char *f, ...);
__attribute__((unused)) static int loud(int x)
{
    if (x) { fprintf(stderr, "%d", x); }
    return x;
}
void *grab(int n) { return n ? malloc((size_t)n) : 0; }
C
got=$( { uses "$tmpd/probe.c" "$PRINT_RE" "$STREAM_RE"; uses "$tmpd/probe.c" "$ALLOC_RE" "-"; } | cut -d: -f2- | tr '\n' ' ')
want="7:loud:fprintf 7:loud:stderr 10:grab:malloc "
if [ "$got" = "$want" ]; then ok "the scanner skips comments, strings and attributes and names the function"; else bad "scanner self-test: got '$got', want '$want'"; fi

finish
