#include "model/tokenizer.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

_Static_assert(INT_MAX >= 2147483647, "encode packs symbols into 31-bit ints");
_Static_assert(ML_TOK_MAX_PIECE <= 1024, "symbol length field is 10 bits");
_Static_assert(ML_TOK_MAX_VOCAB <= 0xFFFFF, "merge field is 20 bits (1 + id)");

/* ---- reading tokenizer.bin ---------------------------------------------- */

static uint32_t rd_u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4); /* little-endian targets only (DESIGN §1) */
    return v;
}

static float rd_f32(const unsigned char *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

/* First pass: check every entry against the file's bounds and count them,
 * so nothing is allocated for a file that is malformed or of another model. */
static ml_status scan_entries(const char *path, const unsigned char *d, size_t size,
                              uint32_t max_len, size_t *count, size_t *bytes, ml_err *err) {
    size_t pos = 4, n = 0, total = 0;
    while (pos < size) {
        if (size - pos < 8)
            return ml_errf(err, ML_E_FORMAT,
                           "tokenizer %s: token %zu: the 8-byte entry header at byte %zu is cut "
                           "off, only %zu bytes left (truncated file?)",
                           path, n, pos, size - pos);
        float score = rd_f32(d + pos);
        uint32_t len = rd_u32(d + pos + 4);
        if (!isfinite(score))
            return ml_errf(err, ML_E_FORMAT,
                           "tokenizer %s: token %zu: score is %g, expected a finite number", path,
                           n, (double)score);
        if (len == 0 || len > max_len)
            return ml_errf(err, ML_E_FORMAT,
                           "tokenizer %s: token %zu: len is %u, expected 1..%u (max_token_length)",
                           path, n, (unsigned)len, (unsigned)max_len);
        pos += 8;
        if (size - pos < len)
            return ml_errf(err, ML_E_FORMAT,
                           "tokenizer %s: token %zu: its %u bytes at byte %zu run past the end of "
                           "the file (%zu bytes; truncated file?)",
                           path, n, (unsigned)len, pos, size);
        pos += len;
        total += len;
        n++;
    }
    *count = n;
    *bytes = total;
    return ML_OK;
}

/* Byte order, then id: equal pieces keep their ids ascending, so a lookup
 * that takes the first match returns the lowest id. */
static int piece_order(const void *a, const void *b) {
    const ml_tok_piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->bytes, y->bytes, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* ---- lookup -------------------------------------------------------------- */

/* Compare a piece with the key "lead byte (if lead >= 0), then k[0..kn)".
 * The optional lead byte lets encode look up " " + text without a copy. */
static int key_cmp(const ml_tok_piece *p, int lead, const unsigned char *k, size_t kn) {
    const unsigned char *b = p->bytes;
    size_t bn = p->len;
    if (lead >= 0) {
        if (b[0] != (unsigned char)lead) return b[0] < (unsigned char)lead ? -1 : 1;
        b++;
        bn--;
    }
    size_t n = bn < kn ? bn : kn;
    int c = n ? memcmp(b, k, n) : 0;
    if (c) return c;
    return (bn > kn) - (bn < kn);
}

/* Id of the piece equal to the key (the lowest id if several are), or -1. */
static int find_piece(const ml_tokenizer *t, int lead, const unsigned char *k, size_t kn) {
    size_t lo = 0, hi = (size_t)t->vocab;
    while (lo < hi) { /* first entry >= key */
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&t->sorted[mid], lead, k, kn) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < (size_t)t->vocab && key_cmp(&t->sorted[lo], lead, k, kn) == 0) return t->sorted[lo].id;
    return -1;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The byte NN if the piece is "<0xNN>", else -1. */
static int byte_piece(const unsigned char *p, size_t n) {
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    int hi = hex_digit(p[3]), lo = hex_digit(p[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* ---- load / free ---------------------------------------------------------- */

void ml_tokenizer_free(ml_tokenizer *t) {
    if (!t) return;
    free(t->scores);
    free(t->pieces);
    free(t->sorted);
    free(t->text);
    free(t->pairs);
    memset(t, 0, sizeof *t);
}

static ml_status build(ml_tokenizer *t, const char *path, const unsigned char *d, size_t size,
                       int vocab, ml_err *err) {
    if (size < 4)
        return ml_errf(err, ML_E_FORMAT,
                       "tokenizer %s: %zu bytes, too short for the 4-byte max_token_length header",
                       path, size);
    uint32_t max_len = rd_u32(d);
    if (max_len == 0 || max_len > ML_TOK_MAX_PIECE)
        return ml_errf(err, ML_E_FORMAT, "tokenizer %s: max_token_length is %u, expected 1..%d",
                       path, (unsigned)max_len, ML_TOK_MAX_PIECE);
    size_t count = 0, bytes = 0;
    ml_status s = scan_entries(path, d, size, max_len, &count, &bytes, err);
    if (s) return s;
    if (count != (size_t)vocab)
        return ml_errf(err, ML_E_FORMAT, "tokenizer %s has %zu tokens, model vocab is %d", path,
                       count, vocab);

    t->vocab = vocab;
    t->max_len = (int)max_len;
    t->scores = malloc((size_t)vocab * sizeof *t->scores);
    t->pieces = malloc((size_t)vocab * sizeof *t->pieces);
    t->sorted = malloc((size_t)vocab * sizeof *t->sorted);
    t->text = malloc(bytes + (size_t)vocab);
    t->pairs = calloc(256 * 256 / 8, 1);
    if (!t->scores || !t->pieces || !t->sorted || !t->text || !t->pairs)
        return ml_errf(err, ML_E_NOMEM, "tokenizer %s: cannot allocate %zu pieces", path, count);

    size_t pos = 4, at = 0;
    for (int i = 0; i < vocab; i++) { /* bounds already checked by scan_entries */
        uint32_t len = rd_u32(d + pos + 4);
        t->scores[i] = rd_f32(d + pos);
        memcpy(t->text + at, d + pos + 8, len);
        t->text[at + len] = 0;
        t->pieces[i] = (ml_tok_piece){t->text + at, len, i};
        for (uint32_t k = 1; k < len; k++) {
            unsigned xy = (unsigned)t->text[at + k - 1] << 8 | t->text[at + k];
            t->pairs[xy >> 3] |= (unsigned char)(1u << (xy & 7));
        }
        pos += 8 + (size_t)len;
        at += (size_t)len + 1;
    }
    memcpy(t->sorted, t->pieces, (size_t)vocab * sizeof *t->sorted);
    qsort(t->sorted, (size_t)vocab, sizeof *t->sorted, piece_order);

    /* Byte fallback by name, not by the usual id b + 3: vocabularies differ. */
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        unsigned char name[6] = {'<', '0', 'x', (unsigned char)hex[b >> 4],
                                 (unsigned char)hex[b & 15], '>'};
        int id = find_piece(t, -1, name, sizeof name);
        t->byte_id[b] = id >= 0 ? id : ML_TOK_UNK;
        t->byte_str[b][0] = (unsigned char)b;
        t->byte_str[b][1] = 0;
    }
    return ML_OK;
}

ml_status ml_tokenizer_load(ml_tokenizer *t, const char *path, int vocab_size, ml_err *err) {
    if (!t || !path) return ml_errf(err, ML_E_ARG, "tokenizer: NULL tokenizer or path");
    memset(t, 0, sizeof *t);
    if (vocab_size <= 0 || vocab_size > ML_TOK_MAX_VOCAB)
        return ml_errf(err, ML_E_ARG, "tokenizer %s: model vocab is %d, expected 1..%d", path,
                       vocab_size, ML_TOK_MAX_VOCAB);
    ml_file f;
    ml_status s = ml_file_open(&f, path, 1, err);
    if (s) {
        /* ml_file_open says "path: ..."; say which file it was meant to be. */
        if (err) {
            char why[sizeof err->msg];
            memcpy(why, err->msg, sizeof why);
            ml_errf(err, s, "tokenizer %s", why);
        }
        return s;
    }
    s = build(t, path, f.data, f.size, vocab_size, err);
    ml_file_close(&f);
    if (s) ml_tokenizer_free(t);
    return s;
}

ml_status ml_tokenizer_load_buffer(ml_tokenizer *t, const char *name, const void *data, size_t size,
                                   int vocab_size, ml_err *err) {
    if (!t || !data) return ml_errf(err, ML_E_ARG, "tokenizer: NULL tokenizer or data");
    memset(t, 0, sizeof *t);
    if (!name) name = "(memory)";
    if (vocab_size <= 0 || vocab_size > ML_TOK_MAX_VOCAB)
        return ml_errf(err, ML_E_ARG, "tokenizer %s: model vocab is %d, expected 1..%d", name,
                       vocab_size, ML_TOK_MAX_VOCAB);
    ml_status s = build(t, name, data, size, vocab_size, err);
    if (s) ml_tokenizer_free(t);
    return s;
}

int ml_tokenizer_vocab(const ml_tokenizer *t) { return t ? t->vocab : 0; }

/* ---- encode ---------------------------------------------------------------
 * Encode works on the string V = " " + text (the dummy prefix), whose byte s
 * is "slot" s. A symbol (a run of V that is currently one token) is described
 * by one int at the slot of its first byte:
 *   bits 21..30  length in bytes - 1      (pieces are at most 1024 bytes)
 *   bit  20      byte-fallback byte       (becomes "<0xNN>", never merges)
 *   bits  0..19  1 + id of the piece "this symbol + the next one", 0 if none
 * The last slot of a symbol also holds its length, so the symbol before s
 * starts at s - length(slot[s - 1]); other inner slots are dead. Walking
 * s += length visits the symbols in order. The caller's tokens buffer (one int per byte of V, after BOS) is the
 * whole workspace. Caching each pair's merge makes a merge step one pass of
 * integer compares plus two lookups. Merges only join runs of V whose bytes
 * are a vocab piece, which for non-fallback symbols is exactly llama2.c's
 * "concatenate the two pieces and look the result up".
 *
 * V is cut into stretches wherever no piece can span the cut (byte x then
 * byte y occur together in no piece, or a fallback byte is next to it). No
 * merge crosses a cut, so greedy merging of each stretch on its own gives the
 * same result as greedy merging of the whole, and stretches are short. */

#define SYM_FALLBACK (1u << 20)
#define SYM_MERGE(w) ((unsigned)(w)&0xFFFFFu)
#define SYM_LEN(w) ((size_t)((unsigned)(w) >> 21) + 1)
#define SYM_IS_FB(w) (((unsigned)(w)&SYM_FALLBACK) != 0)

static int sym(size_t len, int fallback, unsigned merge) {
    return (int)(((unsigned)(len - 1) << 21) | (fallback ? SYM_FALLBACK : 0u) | merge);
}

typedef struct {
    const ml_tokenizer *t;
    const unsigned char *text; /* V without its leading space */
    int *slot;                 /* (end) one int per byte of V */
    size_t end;                /* bytes in V = strlen(text) + 1 */
} enc_state;

static unsigned char v_byte(const enc_state *e, size_t s) { return s ? e->text[s - 1] : ' '; }

/* Id of the piece equal to V[s .. s+len), or -1. */
static int find_run(const enc_state *e, size_t s, size_t len) {
    if (s == 0) return find_piece(e->t, ' ', e->text, len - 1);
    return find_piece(e->t, -1, e->text + s - 1, len);
}

/* Bytes of the UTF-8 character starting at slot s, or 0 when the bytes
 * there are not a complete lead + continuation sequence. */
static size_t utf8_len(const enc_state *e, size_t s) {
    unsigned char c = v_byte(e, s);
    size_t n = c < 0x80 ? 1 : c >= 0xF8 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (n == 0 || n > e->end - s) return 0;
    for (size_t i = 1; i < n; i++)
        if ((v_byte(e, s + i) & 0xC0) != 0x80) return 0;
    return n;
}

/* The merge field for the symbol at a (len la, fallback fa) and the one at
 * b, when b is before the stretch end lim. */
static unsigned pair_merge(const enc_state *e, size_t a, size_t la, int fa, size_t b, size_t lim) {
    if (fa || b >= lim) return 0;
    int wb = e->slot[b];
    size_t n = la + SYM_LEN(wb);
    if (SYM_IS_FB(wb) || n > (size_t)e->t->max_len) return 0;
    int id = find_run(e, a, n);
    return id < 0 ? 0 : (unsigned)id + 1;
}

/* The symbol before the one at s (s > the stretch start). */
static size_t prev_sym(const int *slot, size_t s) { return s - SYM_LEN(slot[s - 1]); }

/* Greedy BPE on the symbols in slots [a, b): merge the best-scoring pair
 * (leftmost on ties) until no adjacent pair is a piece.
 * Finding the best pair would be a pass over the stretch per merge. After a
 * merge at score S, though, no pair scores above S except the two it changed,
 * and none left of the changed ones scores S (it was the leftmost). So the
 * next search starts at the changed pairs and stops at the first pair
 * scoring S after them; only when none is left does a full pass find the
 * next, lower score. Runs like "aaaa..." or of spaces stay linear. */
static void merge_stretch(const enc_state *e, size_t a, size_t b) {
    const float *score = e->t->scores;
    int *slot = e->slot;
    for (size_t s = a; s < b;) {
        size_t l = SYM_LEN(slot[s]);
        slot[s] |= (int)pair_merge(e, s, l, SYM_IS_FB(slot[s]), s + l, b);
        s += l;
    }
    size_t from = a, changed = a; /* search start; the merged symbol */
    int capped = 0;               /* 1: no pair past `changed` scores above cap */
    float cap = 0.0f;
    for (;;) {
        size_t best = b;
        float best_score = 0.0f;
        for (size_t s = from; s < b; s += SYM_LEN(slot[s])) {
            unsigned m = SYM_MERGE(slot[s]);
            if (m && (best == b || score[m - 1] > best_score)) {
                best = s;
                best_score = score[m - 1];
            }
            if (capped && s >= changed && best != b && best_score >= cap) break;
        }
        if (capped && (best == b || best_score < cap)) { /* the best may be left of from */
            capped = 0;
            from = a;
            continue;
        }
        if (best == b) return;
        size_t prev = best > a ? prev_sym(slot, best) : b;
        size_t l = SYM_LEN(slot[best]) + SYM_LEN(slot[best + SYM_LEN(slot[best])]);
        slot[best] = sym(l, 0, pair_merge(e, best, l, 0, best + l, b));
        slot[best + l - 1] = sym(l, 0, 0); /* last slot holds the length: prev_sym */
        if (prev != b) {
            int w = slot[prev];
            size_t lp = SYM_LEN(w);
            slot[prev] = sym(lp, SYM_IS_FB(w), pair_merge(e, prev, lp, SYM_IS_FB(w), best, b));
        }
        capped = 1;
        cap = best_score;
        from = prev != b ? prev : best;
        changed = best;
    }
}

size_t ml_tokenizer_max_tokens(const char *text) { return (text ? strlen(text) : 0) + 3; }

ml_status ml_tokenizer_encode(const ml_tokenizer *t, const char *text, int bos, int eos,
                              int *tokens, int *n_tokens, ml_err *err) {
    if (!t || !t->pieces || !text || !tokens || !n_tokens)
        return ml_errf(err, ML_E_ARG, "tokenizer encode: NULL argument or tokenizer not loaded");
    if ((bos || eos) && t->vocab <= ML_TOK_EOS)
        return ml_errf(err, ML_E_ARG, "tokenizer encode: vocab has %d pieces, no BOS/EOS ids",
                       t->vocab);
    size_t n = strlen(text);
    if (n > (size_t)INT_MAX - 3)
        return ml_errf(err, ML_E_ARG, "tokenizer encode: text of %zu bytes, at most %d", n,
                       INT_MAX - 3);
    size_t w = 0;
    if (bos) tokens[w++] = ML_TOK_BOS;
    if (n > 0) {
        enc_state e = {t, (const unsigned char *)text, tokens + w, n + 1};
        int *slot = e.slot;
        /* One symbol per UTF-8 character that is a piece, else per byte. */
        for (size_t s = 0; s < e.end;) {
            size_t cl = utf8_len(&e, s);
            if (cl && find_run(&e, s, cl) >= 0) {
                slot[s + cl - 1] = sym(cl, 0, 0); /* the last slot too: prev_sym */
                slot[s] = sym(cl, 0, 0);
                s += cl;
                continue;
            }
            if (cl == 0) cl = 1; /* invalid UTF-8: this byte alone */
            for (size_t i = 0; i < cl; i++) slot[s + i] = sym(1, 1, 0);
            s += cl;
        }
        /* Merge stretch by stretch (see above). */
        size_t a = 0;
        int prev_fb = 0;
        for (size_t s = 0; s < e.end;) {
            int wd = slot[s];
            unsigned xy = (unsigned)v_byte(&e, s ? s - 1 : 0) << 8 | v_byte(&e, s);
            if (s > a && (prev_fb || SYM_IS_FB(wd) || !(t->pairs[xy >> 3] & (1u << (xy & 7))))) {
                merge_stretch(&e, a, s);
                a = s;
            }
            prev_fb = SYM_IS_FB(wd);
            s += SYM_LEN(wd);
        }
        merge_stretch(&e, a, e.end);
        /* Symbols to ids, written from the front: entry k <= slot s. */
        size_t k = 0;
        for (size_t s = 0; s < e.end;) {
            int wd = slot[s];
            size_t l = SYM_LEN(wd);
            int id = SYM_IS_FB(wd) ? t->byte_id[v_byte(&e, s)] : find_run(&e, s, l);
            slot[k++] = id >= 0 ? id : ML_TOK_UNK;
            s += l;
        }
        w += k;
    }
    if (eos) tokens[w++] = ML_TOK_EOS;
    *n_tokens = (int)w;
    return ML_OK;
}

/* ---- decode ---------------------------------------------------------------- */

const char *ml_tokenizer_decode(const ml_tokenizer *t, int prev, int token, size_t *len) {
    size_t unused;
    if (!len) len = &unused;
    *len = 0;
    if (!t || !t->pieces || token < 0 || token >= t->vocab) return NULL;
    const ml_tok_piece *p = &t->pieces[token];
    int b = byte_piece(p->bytes, p->len);
    if (b >= 0) {
        *len = 1;
        return (const char *)t->byte_str[b];
    }
    const unsigned char *s = p->bytes;
    size_t n = p->len;
    if (prev == ML_TOK_BOS && s[0] == ' ') { /* SentencePiece drops the dummy prefix */
        s++;
        n--;
    }
    *len = n;
    return (const char *)s;
}
