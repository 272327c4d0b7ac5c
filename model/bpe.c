#include "model/bpe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "model/nfc.h"
#include "model/unicode_tables.h"

_Static_assert(INT_MAX >= 2147483647, "the workspace holds ids and offsets in ints");
_Static_assert(ML_BPE_MAX_VOCAB <= INT_MAX / 2, "ids fit an int");

/* ---- reading the file ------------------------------------------------- */

static uint32_t rd_u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4); /* little-endian targets only (DESIGN §1) */
    return v;
}

static int32_t rd_i32(const unsigned char *p) { return (int32_t)rd_u32(p); }

const char *ml_bpe_pre_name(int pre) {
    static const char *const names[ML_BPE_PRE_COUNT] = {"gpt-2", "llama-bpe", "qwen2", "smollm"};
    return pre >= 0 && pre < ML_BPE_PRE_COUNT ? names[pre] : "?";
}

int ml_bpe_sniff(const void *data, size_t size) {
    return data && size >= 4 && !memcmp(data, ML_BPE_MAGIC, 4);
}

void ml_bpe_free(ml_bpe *t) {
    if (!t) return;
    void *owned[] = {t->off, t->type, t->text, t->merges, t->whole, t->special};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
    memset(t, 0, sizeof *t);
}

static ml_status check_header(ml_bpe *t, const char *name, const unsigned char *d, size_t size,
                              ml_err *err) {
    if (size < ML_BPE_HEADER)
        return ml_errf(err, ML_E_FORMAT,
                       "BPE tokenizer %s: %zu bytes, shorter than its %d-byte header (truncated file?)",
                       name, size, ML_BPE_HEADER);
    if (memcmp(d, ML_BPE_MAGIC, 4))
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: magic: expected \"%s\", got %02x %02x %02x %02x",
                       name, ML_BPE_MAGIC, d[0], d[1], d[2], d[3]);
    uint32_t version = rd_u32(d + 4), pre = rd_u32(d + 8), flags = rd_u32(d + 12);
    uint32_t n_tokens = rd_u32(d + 16), n_merges = rd_u32(d + 20), add_bos = rd_u32(d + 36);
    if (version != ML_BPE_VERSION)
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: version: expected %d, got %u", name,
                       ML_BPE_VERSION, (unsigned)version);
    if (pre >= ML_BPE_PRE_COUNT)
        return ml_errf(err, ML_E_FORMAT,
                       "BPE tokenizer %s: pre: expected 0 (gpt-2), 1 (llama-bpe), 2 (qwen2) or 3 (smollm), got %u",
                       name, (unsigned)pre);
    if (flags & ~(uint32_t)(ML_BPE_IGNORE_MERGES | ML_BPE_RANK_BY_RESULT | ML_BPE_NFC))
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: flags: unknown bits 0x%x (known: 0x7)",
                       name, (unsigned)flags);
    if (n_tokens < 256 || n_tokens > ML_BPE_MAX_VOCAB)
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: n_tokens: expected 256..%d, got %u", name,
                       ML_BPE_MAX_VOCAB, (unsigned)n_tokens);
    if (n_merges > ML_BPE_MAX_MERGES)
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: n_merges: expected 0..%d, got %u", name,
                       ML_BPE_MAX_MERGES, (unsigned)n_merges);
    static const char *const id_names[3] = {"bos", "eos", "eot"};
    int32_t ids[3] = {rd_i32(d + 24), rd_i32(d + 28), rd_i32(d + 32)};
    for (int i = 0; i < 3; i++)
        if (ids[i] < -1 || ids[i] >= (int32_t)n_tokens)
            return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: %s: expected -1 or 0..%u, got %d", name,
                           id_names[i], (unsigned)n_tokens - 1, (int)ids[i]);
    if (add_bos > 1 || (add_bos && ids[0] < 0))
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: add_bos: expected 0 or 1 (1 needs a bos), got %u%s",
                       name, (unsigned)add_bos, add_bos == 1 ? " with bos -1" : "");
    if (rd_u32(d + 40) || rd_u32(d + 44))
        return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: the reserved bytes 40..47 are not zero", name);
    t->pre = (int)pre;
    t->flags = flags;
    t->n_tokens = (int)n_tokens;
    t->n_merges = (int)n_merges;
    t->bos = ids[0];
    t->eos = ids[1];
    t->eot = ids[2];
    t->add_bos = (int)add_bos;
    return ML_OK;
}

/* Walk the token entries once to check their bounds and sizes; *text_bytes
 * and *end (where the merges start) come out. */
static ml_status scan_tokens(const ml_bpe *t, const char *name, const unsigned char *d, size_t size,
                             size_t *text_bytes, size_t *end, ml_err *err) {
    size_t pos = ML_BPE_HEADER, total = 0;
    for (int i = 0; i < t->n_tokens; i++) {
        if (size - pos < 8)
            return ml_errf(err, ML_E_FORMAT,
                           "BPE tokenizer %s: token %d: its 8-byte entry header at byte %zu is cut off "
                           "(%zu bytes left; truncated file?)",
                           name, i, pos, size - pos);
        uint32_t len = rd_u32(d + pos), type = rd_u32(d + pos + 4);
        if (len == 0 || len > ML_BPE_MAX_TOKEN_LEN)
            return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: token %d: len: expected 1..%d, got %u", name,
                           i, ML_BPE_MAX_TOKEN_LEN, (unsigned)len);
        if (type < ML_BPE_NORMAL || type > ML_BPE_BYTE)
            return ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: token %d: type: expected 1..6, got %u", name,
                           i, (unsigned)type);
        if (size - pos - 8 < len)
            return ml_errf(err, ML_E_FORMAT,
                           "BPE tokenizer %s: token %d: its %u bytes at byte %zu run past the end "
                           "(%zu bytes; truncated file?)",
                           name, i, (unsigned)len, pos + 8, size);
        pos += 8 + len;
        total += len;
    }
    size_t want = (size_t)t->n_merges * 12;
    if (size - pos != want)
        return ml_errf(err, ML_E_FORMAT,
                       "BPE tokenizer %s: merges: %u merges of 12 bytes need %zu bytes after the tokens "
                       "(byte %zu), the file has %zu",
                       name, (unsigned)t->n_merges, want, pos, size - pos);
    *text_bytes = total;
    *end = pos;
    return ML_OK;
}

static uint32_t table_size(size_t n) { /* a power of two >= 2n, >= 16 */
    uint32_t s = 16;
    while (s < 2 * n) s *= 2;
    return s;
}

static uint32_t hash_pair(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static uint32_t hash_bytes(const unsigned char *p, size_t n, uint32_t mask) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ (h >> 32)) & mask;
}

static size_t tok_len(const ml_bpe *t, int id) { return t->off[id + 1] - t->off[id]; }

static int32_t find_whole(const ml_bpe *t, const unsigned char *p, size_t n) {
    for (uint32_t h = hash_bytes(p, n, t->whole_mask);; h = (h + 1) & t->whole_mask) {
        int32_t id = t->whole[h];
        if (id < 0) return -1;
        if (tok_len(t, id) == n && !memcmp(t->text + t->off[id], p, n)) return id;
    }
}

static const ml_bpe_merge *find_merge(const ml_bpe *t, int a, int b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint32_t h = hash_pair(key, t->merge_mask);; h = (h + 1) & t->merge_mask) {
        const ml_bpe_merge *m = &t->merges[h];
        if (m->key == key) return m;
        if (m->key == UINT64_MAX) return NULL;
    }
}

/* The specials by first byte, longest first (encode tries the longest
 * match), as sortable keys: first byte, 0xFFFF - length, id. */
static int u64_order(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static ml_status sort_specials(ml_bpe *t, const char *name, ml_err *err) {
    if (!t->n_special) return ML_OK;
    uint64_t *keys = malloc((size_t)t->n_special * sizeof *keys);
    if (!keys) return ml_errf(err, ML_E_NOMEM, "BPE tokenizer %s: out of memory for the special tokens", name);
    for (int k = 0; k < t->n_special; k++) {
        int id = t->special[k];
        keys[k] = (uint64_t)t->text[t->off[id]] << 48 | (uint64_t)(0xFFFF - tok_len(t, id)) << 32 | (uint32_t)id;
    }
    qsort(keys, (size_t)t->n_special, sizeof *keys, u64_order);
    for (int k = 0; k < t->n_special; k++) t->special[k] = (int32_t)(uint32_t)keys[k];
    free(keys);
    return ML_OK;
}

static ml_status build(ml_bpe *t, const char *name, const unsigned char *d, size_t size, ml_err *err) {
    ml_status s = check_header(t, name, d, size, err);
    size_t text_bytes = 0, pos = 0;
    if (s || (s = scan_tokens(t, name, d, size, &text_bytes, &pos, err))) return s;
    int n = t->n_tokens;
    t->off = malloc(((size_t)n + 1) * sizeof *t->off);
    t->type = malloc((size_t)n);
    t->text = malloc(text_bytes);
    t->whole_mask = table_size((size_t)n) - 1;
    t->whole = malloc(((size_t)t->whole_mask + 1) * sizeof *t->whole);
    t->merge_mask = table_size((size_t)t->n_merges) - 1;
    t->merges = malloc(((size_t)t->merge_mask + 1) * sizeof *t->merges);
    t->special = malloc((size_t)n * sizeof *t->special);
    if (!t->off || !t->type || !t->text || !t->whole || !t->merges || !t->special)
        return ml_errf(err, ML_E_NOMEM, "BPE tokenizer %s: out of memory for %d tokens", name, n);

    /* ---- tokens ---- */
    size_t p = ML_BPE_HEADER, o = 0;
    memset(t->whole, 0xff, ((size_t)t->whole_mask + 1) * sizeof *t->whole);
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    for (int i = 0; i < n; i++) {
        uint32_t len = rd_u32(d + p);
        t->type[i] = (unsigned char)rd_u32(d + p + 4);
        t->off[i] = (uint32_t)o;
        memcpy(t->text + o, d + p + 8, len);
        p += 8 + len;
        o += len;
        if (t->type[i] == ML_BPE_CONTROL || t->type[i] == ML_BPE_USER) t->special[t->n_special++] = i;
        if (t->type[i] != ML_BPE_NORMAL) continue;
        const unsigned char *b = t->text + t->off[i];
        if (len == 1 && t->byte_id[b[0]] < 0) t->byte_id[b[0]] = i;
        /* the first of equal tokens keeps the bytes */
        uint32_t h = hash_bytes(b, len, t->whole_mask);
        for (;; h = (h + 1) & t->whole_mask) {
            int32_t id = t->whole[h];
            if (id < 0) {
                t->whole[h] = i;
                break;
            }
            if (tok_len(t, id) == len && !memcmp(t->text + t->off[id], b, len)) break;
        }
    }
    t->off[n] = (uint32_t)o;
    for (int b = 0; b < 256; b++)
        if (t->byte_id[b] < 0)
            return ml_errf(err, ML_E_FORMAT,
                           "BPE tokenizer %s: no one-byte normal token for byte 0x%02x (byte-level BPE "
                           "needs all 256)",
                           name, b);
    if ((s = sort_specials(t, name, err))) return s;
    for (int b = 0, k = 0; b <= 256; b++) {
        while (k < t->n_special && t->text[t->off[t->special[k]]] < b) k++;
        t->special_at[b] = k;
    }

    /* ---- merges ---- */
    for (uint32_t h = 0; h <= t->merge_mask; h++) t->merges[h].key = UINT64_MAX;
    for (int r = 0; r < t->n_merges; r++, p += 12) {
        uint32_t a = rd_u32(d + p), b = rd_u32(d + p + 4), c = rd_u32(d + p + 8);
        if (a >= (uint32_t)n || b >= (uint32_t)n || c >= (uint32_t)n)
            return ml_errf(err, ML_E_FORMAT,
                           "BPE tokenizer %s: merge %d: ids %u %u -> %u, expected each below n_tokens %d",
                           name, r, (unsigned)a, (unsigned)b, (unsigned)c, n);
        size_t la = tok_len(t, (int)a), lb = tok_len(t, (int)b);
        if (tok_len(t, (int)c) != la + lb || memcmp(t->text + t->off[c], t->text + t->off[a], la) ||
            memcmp(t->text + t->off[c] + la, t->text + t->off[b], lb))
            return ml_errf(err, ML_E_FORMAT,
                           "BPE tokenizer %s: merge %d: token %u is not token %u followed by token %u", name,
                           r, (unsigned)c, (unsigned)a, (unsigned)b);
        uint64_t key = (uint64_t)a << 32 | b;
        uint32_t h = hash_pair(key, t->merge_mask);
        while (t->merges[h].key != UINT64_MAX && t->merges[h].key != key) h = (h + 1) & t->merge_mask;
        if (t->merges[h].key == key) continue; /* a repeated pair keeps its first rank */
        t->merges[h].key = key;
        t->merges[h].rank = t->flags & ML_BPE_RANK_BY_RESULT ? c : (uint32_t)r;
        t->merges[h].result = (int32_t)c;
    }
    return ML_OK;
}

ml_status ml_bpe_load_buffer(ml_bpe *t, const char *name, const void *data, size_t size, ml_err *err) {
    if (!t || !data) return ml_errf(err, ML_E_ARG, "BPE tokenizer: NULL tokenizer or data");
    memset(t, 0, sizeof *t);
    ml_status s = build(t, name ? name : "(memory)", data, size, err);
    if (s) ml_bpe_free(t);
    return s;
}

ml_status ml_bpe_load(ml_bpe *t, const char *path, ml_err *err) {
    if (!t || !path) return ml_errf(err, ML_E_ARG, "BPE tokenizer: NULL tokenizer or path");
    memset(t, 0, sizeof *t);
    ml_file f;
    ml_status s = ml_file_open(&f, path, 1, err); /* its message names the path */
    if (s) return s;
    s = ml_bpe_load_buffer(t, path, f.data, f.size, err);
    ml_file_close(&f);
    return s;
}

const char *ml_bpe_token(const ml_bpe *t, int id, size_t *len) {
    if (!t || id < 0 || id >= t->n_tokens) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = tok_len(t, id);
    return (const char *)t->text + t->off[id];
}

int ml_bpe_type(const ml_bpe *t, int id) { return t && id >= 0 && id < t->n_tokens ? t->type[id] : 0; }

/* ---- pre-tokenizers -------------------------------------------------------
 * Each returns the end of the piece that starts at byte i of s[0 .. n), by
 * the rules of the family's split pattern, tried in order (the first
 * alternative that matches wins; quantifiers are greedy):
 *   gpt-2:     's|'t|'re|'ve|'m|'ll|'d | ?L+ | ?N+ | ?[^\s L N]+ | \s+(?!\S) | \s+
 *   llama-bpe: (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n L N]?L+ | N{1,3}
 *              | ?[^\s L N]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 *   qwen2:     the same with N instead of N{1,3}.
 *   smollm:    each N a piece of its own, gpt-2's rule on the text between.
 * L: a letter, N: a number, \s: White_Space (model/unicode_tables.h). */

static const unsigned char ascii_class[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 0, 0, /* \t \n \v \f \r */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* space */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, /* 0-9 */
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* A-Z */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* a-z */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
};

/* The class of the character at s[i] (i < n), *len its bytes. A byte that
 * does not start a valid UTF-8 sequence (truncated, overlong, surrogate,
 * beyond U+10FFFF) is one character of class other. */
static int char_class(const unsigned char *s, size_t n, size_t i, size_t *len) {
    if (s[i] < 0x80) {
        *len = 1;
        return ascii_class[s[i]];
    }
    int32_t cp = ml_utf8_decode(s, n, i, len);
    return cp < 0 ? ML_UNI_OTHER : ml_uni_class((uint32_t)cp);
}

/* The end of the run of characters of class cls from i. */
static size_t run_of(const unsigned char *s, size_t n, size_t i, int cls) {
    size_t l;
    while (i < n && char_class(s, n, i, &l) == cls) i += l;
    return i;
}

/* The contraction at s[i] == '\'' (end, or i if none): 's 't 'm 'd 're 've
 * 'll; ci: case-insensitive, as Unicode folds case (U+017F long s is an s). */
static size_t contraction(const unsigned char *s, size_t n, size_t i, int ci) {
    size_t j = i + 1;
    if (j >= n) return i;
    unsigned c = s[j];
    if (ci && c == 0xC5 && j + 1 < n && s[j + 1] == 0xBF) return j + 2; /* U+017F */
    if (ci && c >= 'A' && c <= 'Z') c += 32;
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return j + 1;
    if (j + 1 >= n) return i;
    unsigned c2 = s[j + 1];
    if (ci && c2 >= 'A' && c2 <= 'Z') c2 += 32;
    if ((c == 'r' && c2 == 'e') || (c == 'v' && c2 == 'e') || (c == 'l' && c2 == 'l')) return j + 2;
    return i;
}

/* The white-space alternatives shared by all three: \s+(?!\S) | \s+ from i,
 * with llama-bpe's and qwen2's \s*[\r\n]+ first when crlf. */
static size_t space_piece(const unsigned char *s, size_t n, size_t i, int crlf) {
    size_t j = i, last = i, l, nl = 0;
    while (j < n && char_class(s, n, j, &l) == ML_UNI_SPACE) {
        if (s[j] == '\r' || s[j] == '\n') nl = j + 1;
        last = j;
        j += l;
    }
    if (crlf && nl) return nl;
    if (j == n || last == i) return j; /* at the end, or one space before a non-space */
    return last;                       /* leave the last space to the next piece */
}

static size_t piece_gpt2(const unsigned char *s, size_t n, size_t i) {
    if (s[i] == '\'') {
        size_t e = contraction(s, n, i, 0);
        if (e > i) return e;
    }
    size_t l;
    int k = char_class(s, n, i, &l), j = 0;
    if (s[i] == ' ' && i + 1 < n) {
        size_t l1;
        int k1 = char_class(s, n, i + 1, &l1);
        if (k1 != ML_UNI_SPACE) k = k1, j = 1;
    }
    if (k != ML_UNI_SPACE) return run_of(s, n, i + (size_t)j, k);
    return space_piece(s, n, i, 0);
}

static size_t piece_llama(const unsigned char *s, size_t n, size_t i, int max_digits) {
    if (s[i] == '\'') {
        size_t e = contraction(s, n, i, 1);
        if (e > i) return e;
    }
    size_t l, l1;
    int k = char_class(s, n, i, &l);
    if (k == ML_UNI_LETTER) return run_of(s, n, i, ML_UNI_LETTER);
    if (k == ML_UNI_NUMBER) {
        size_t e = i + l;
        for (int d = 1; d < max_digits && e < n && char_class(s, n, e, &l1) == ML_UNI_NUMBER; d++) e += l1;
        return e;
    }
    /* k is other or space: [^\r\n L N]?L+ */
    if (s[i] != '\r' && s[i] != '\n' && i + l < n && char_class(s, n, i + l, &l1) == ML_UNI_LETTER)
        return run_of(s, n, i + l, ML_UNI_LETTER);
    /*  ?[^\s L N]+[\r\n]* */
    size_t j = i;
    if (s[i] == ' ' && i + 1 < n && char_class(s, n, i + 1, &l1) == ML_UNI_OTHER) j = i + 1;
    if (j > i || k == ML_UNI_OTHER) {
        j = run_of(s, n, j, ML_UNI_OTHER);
        while (j < n && (s[j] == '\r' || s[j] == '\n')) j++;
        return j;
    }
    return space_piece(s, n, i, 1);
}

/* smollm: the end of the stretch without numbers from i. */
static size_t number_free(const unsigned char *s, size_t n, size_t i) {
    size_t l;
    while (i < n && char_class(s, n, i, &l) != ML_UNI_NUMBER) i += l;
    return i;
}

static size_t next_piece(int pre, const unsigned char *s, size_t n, size_t i) {
    size_t l;
    if (pre == ML_BPE_PRE_GPT2) return piece_gpt2(s, n, i);
    if (pre != ML_BPE_PRE_SMOLLM) return piece_llama(s, n, i, pre == ML_BPE_PRE_LLAMA3 ? 3 : 1);
    if (char_class(s, n, i, &l) == ML_UNI_NUMBER) return i + l;
    return piece_gpt2(s, number_free(s, n, i), i); /* each call scans to the next number: tests only */
}

size_t ml_bpe_piece_end(int pre, const char *s, size_t n, size_t i) {
    return i < n ? next_piece(pre, (const unsigned char *)s, n, i) : n;
}

/* ---- BPE inside one piece -------------------------------------------------
 * The piece's bytes start as one symbol each; the adjacent pair of lowest
 * rank merges (the leftmost on a tie), again and again. A symbol lives at the
 * index of its first byte: id[], prev[], next[] (-1 at the ends; id -1: merged
 * away). Candidate pairs wait in a binary min-heap of (rank, left index);
 * entries go stale when a neighbour merges and are checked when popped, so
 * each merge costs O(log n). Workspace: 9 ints per byte (the heap holds at
 * most n - 1 + 2 (n - 1) entries of two ints). */

typedef struct {
    int *id, *prev, *next, *hrank, *hpos;
    int nh;
} bpe_work;

static int heap_less(const bpe_work *w, int a, int b) {
    return w->hrank[a] < w->hrank[b] || (w->hrank[a] == w->hrank[b] && w->hpos[a] < w->hpos[b]);
}

static void heap_swap(bpe_work *w, int a, int b) {
    int r = w->hrank[a], p = w->hpos[a];
    w->hrank[a] = w->hrank[b], w->hpos[a] = w->hpos[b];
    w->hrank[b] = r, w->hpos[b] = p;
}

static void heap_push(bpe_work *w, int rank, int pos) {
    int i = w->nh++;
    w->hrank[i] = rank, w->hpos[i] = pos;
    while (i > 0 && heap_less(w, i, (i - 1) / 2)) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_pop(bpe_work *w) {
    w->nh--;
    w->hrank[0] = w->hrank[w->nh], w->hpos[0] = w->hpos[w->nh];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->nh && heap_less(w, l, m)) m = l;
        if (r < w->nh && heap_less(w, r, m)) m = r;
        if (m == i) break;
        heap_swap(w, i, m);
        i = m;
    }
}

static void push_pair(const ml_bpe *t, bpe_work *w, int i) {
    if (i < 0 || w->next[i] < 0) return;
    const ml_bpe_merge *m = find_merge(t, w->id[i], w->id[w->next[i]]);
    if (m) heap_push(w, (int)m->rank, i);
}

/* Merge the piece s[0 .. n) (n >= 2) and append its ids to out; returns the count. */
static size_t bpe_piece(const ml_bpe *t, const unsigned char *s, int n, int *work, int *out) {
    bpe_work w = {work, work + n, work + 2 * n, work + 3 * n, work + 6 * n, 0};
    for (int i = 0; i < n; i++) {
        w.id[i] = t->byte_id[s[i]];
        w.prev[i] = i - 1;
        w.next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; i++) push_pair(t, &w, i);
    while (w.nh > 0) {
        int rank = w.hrank[0], i = w.hpos[0];
        heap_pop(&w);
        int j = w.id[i] >= 0 ? w.next[i] : -1;
        if (j < 0) continue;
        const ml_bpe_merge *m = find_merge(t, w.id[i], w.id[j]);
        if (!m || (int)m->rank != rank) continue; /* stale */
        w.id[i] = m->result;
        w.id[j] = -1;
        w.next[i] = w.next[j];
        if (w.next[j] >= 0) w.prev[w.next[j]] = i;
        push_pair(t, &w, w.prev[i]);
        push_pair(t, &w, i);
    }
    size_t k = 0;
    for (int i = 0; i >= 0; i = w.next[i]) out[k++] = w.id[i];
    return k;
}

/* Encode a stretch without specials: piece by piece. */
static size_t encode_split(const ml_bpe *t, int pre, const unsigned char *s, size_t n, int *out, int *work) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t e = next_piece(pre, s, n, i);
        const unsigned char *p = s + i;
        int m = (int)(e - i), id;
        if (m == 1) out[k++] = t->byte_id[p[0]];
        else if ((t->flags & ML_BPE_IGNORE_MERGES) && (id = find_whole(t, p, (size_t)m)) >= 0) out[k++] = id;
        else k += bpe_piece(t, p, m, work, out + k);
        i = e;
    }
    return k;
}

/* smollm: the stretches between numbers by gpt-2's rule, each number alone. */
static size_t encode_plain(const ml_bpe *t, const unsigned char *s, size_t n, int *out, int *work) {
    if (t->pre != ML_BPE_PRE_SMOLLM) return encode_split(t, t->pre, s, n, out, work);
    size_t k = 0, l;
    for (size_t i = 0; i < n;) {
        size_t j = number_free(s, n, i);
        k += encode_split(t, ML_BPE_PRE_GPT2, s + i, j - i, out + k, work);
        if (j < n) {
            char_class(s, n, j, &l);
            k += encode_split(t, ML_BPE_PRE_GPT2, s + j, l, out + k, work);
            j += l;
        }
        i = j;
    }
    return k;
}

/* A stretch between specials, normalized first when norm is given (room for
 * its NFC; work doubles as the normalizer's workspace). */
static size_t encode_stretch(const ml_bpe *t, const unsigned char *s, size_t n, int *out, int *work,
                             unsigned char *norm) {
    if (norm && !ml_nfc_quick(s, n)) {
        n = ml_nfc(s, n, work, norm);
        s = norm;
    }
    return encode_plain(t, s, n, out, work);
}

/* The bytes the text can take normalized, 0 when it is not (no NFC, or
 * text NFC leaves as it is, such as ASCII). ml_nfc_bound counts no code point
 * at fewer bytes than its own: the stretches between specials, each
 * normalized or not on its own (also where a special that is no UTF-8 cuts a
 * code point), and the specials' ids together take no more entries. */
static size_t nfc_bytes(const ml_bpe *t, const unsigned char *s, size_t len) {
    if ((t && !(t->flags & ML_BPE_NFC)) || ml_nfc_quick(s, len)) return 0;
    return ml_nfc_bound(s, len);
}

/* The ids, then the merges' 9 ints a byte of a piece, for each byte of the
 * text as encoded; under NFC also the normalized bytes (a quarter int each). */
static size_t max_tokens(size_t len, size_t nfc) {
    size_t n = nfc ? nfc : len;
    /* saturated where the ids could not be held in memory (a caller's
     * cap * sizeof(int) would wrap on a 32-bit system): encode refuses it */
    if (n > (ML_BPE_MAX_IDS - 17) / 11) return ML_BPE_MAX_IDS;
    return nfc ? 10 * nfc + nfc / 4 + 17 : 10 * len + 16;
}

size_t ml_bpe_max_tokens(const ml_bpe *t, const char *text, size_t len) {
    return max_tokens(len, text ? nfc_bytes(t, (const unsigned char *)text, len) : 0);
}

size_t ml_bpe_max_tokens_bytes(size_t bytes, int nfc) { return max_tokens(bytes, nfc ? bytes : 0); }

/* The special token that starts at s[i], longest first; -1 if none. */
static int special_at(const ml_bpe *t, const unsigned char *s, size_t n, size_t i, int control) {
    for (int k = t->special_at[s[i]]; k < t->special_at[s[i] + 1]; k++) {
        int id = t->special[k];
        size_t l = tok_len(t, id);
        if (!control && t->type[id] == ML_BPE_CONTROL) continue;
        if (l <= n - i && !memcmp(s + i, t->text + t->off[id], l)) return id;
    }
    return -1;
}

ml_status ml_bpe_encode(const ml_bpe *t, const char *text, size_t len, int opts, int *ids, size_t cap,
                        size_t *n_ids, ml_err *err) {
    if (!t || (!text && len) || !ids || !n_ids)
        return ml_errf(err, ML_E_ARG, "BPE encode: NULL tokenizer, text, ids or count");
    const unsigned char *s = (const unsigned char *)text;
    size_t nfc = len <= (size_t)INT_MAX / 16 ? nfc_bytes(t, s, len) : 0, need = max_tokens(len, nfc);
    if (len > (size_t)INT_MAX / 16 || nfc > (size_t)INT_MAX / 16 || need == ML_BPE_MAX_IDS)
        return ml_errf(err, ML_E_ARG, "BPE encode: %zu bytes of text are more than one encode takes", len);
    if (cap < need)
        return ml_errf(err, ML_E_ARG, "BPE encode: %zu bytes of text need %zu entries of ids, got %zu", len, need,
                       cap);
    /* the ids first (at most a text byte each, + 2), then the workspace, then the normalized text */
    size_t text_max = nfc ? nfc : len;
    int *work = ids + text_max + 3;
    unsigned char *norm = nfc ? (unsigned char *)(ids + 10 * text_max + 3) : NULL;
    size_t k = 0, start = 0;
    if ((opts & ML_BPE_BOS) && t->bos >= 0) ids[k++] = t->bos;
    for (size_t i = 0; i < len && t->n_special;) {
        int id = t->special_at[s[i]] < t->special_at[s[i] + 1] ? special_at(t, s, len, i, opts & ML_BPE_SPECIAL)
                                                                : -1;
        if (id < 0) {
            i++;
            continue;
        }
        k += encode_stretch(t, s + start, i - start, ids + k, work, norm);
        ids[k++] = id;
        i += tok_len(t, id);
        start = i;
    }
    k += encode_stretch(t, s + start, len - start, ids + k, work, norm);
    if ((opts & ML_BPE_EOS) && t->eos >= 0) ids[k++] = t->eos;
    *n_ids = k;
    return ML_OK;
}

/* ---- streaming decode ------------------------------------------------- */

static int utf8_need(unsigned c) { /* bytes of the sequence lead byte c starts; 0: not a lead */
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* Is c a valid k-th byte (k >= 1) of the sequence that starts with lead? */
static int utf8_cont_ok(unsigned lead, int k, unsigned c) {
    if ((c & 0xC0) != 0x80) return 0;
    if (k > 1) return 1;
    if (lead == 0xE0) return c >= 0xA0;
    if (lead == 0xED) return c <= 0x9F; /* no surrogates */
    if (lead == 0xF0) return c >= 0x90;
    if (lead == 0xF4) return c <= 0x8F;
    return 1;
}

size_t ml_utf8_stream_feed(ml_utf8_stream *s, const char *p, size_t len, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned c = (unsigned char)p[i];
        if (s->n > 0 && utf8_cont_ok(s->pend[0], s->n, c)) {
            s->pend[s->n++] = (unsigned char)c;
            if (s->n == s->need) {
                memcpy(out + k, s->pend, (size_t)s->n);
                k += (size_t)s->n;
                s->n = 0;
            }
            continue;
        }
        if (s->n > 0) { /* the held sequence broke off: release it as it is */
            memcpy(out + k, s->pend, (size_t)s->n);
            k += (size_t)s->n;
            s->n = 0;
        }
        int need = utf8_need(c);
        if (need <= 1) out[k++] = (char)c;
        else {
            s->pend[0] = (unsigned char)c;
            s->n = 1;
            s->need = need;
        }
    }
    return k;
}

size_t ml_utf8_stream_flush(ml_utf8_stream *s, char *out) {
    size_t k = (size_t)s->n;
    memcpy(out, s->pend, k);
    s->n = 0;
    return k;
}
