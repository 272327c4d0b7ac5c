/* model/bpe (byte-level BPE) and model/tok (the front door) on hand-made
 * vocabularies: merges by rank (position or result id), the leftmost pair on
 * a tie, whole pieces (ignore_merges), each pre-tokenizer's split of tricky
 * strings (expected pieces from Hugging Face tokenizers' Split with the
 * published patterns), control and user-defined tokens with and without
 * ML_BPE_SPECIAL, text normalized to NFC under ML_BPE_NFC, the streaming
 * UTF-8 decode, malformed files (every field, every truncation, random
 * corruption). In memory only: no files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/bpe.h"
#include "model/tok.h"
#include "model/unicode_tables.h"
#include "tests/testlib.h"

/* ---- a BPE file image ------------------------------------------------------ */

typedef struct {
    unsigned char b[1 << 15];
    size_t n;
} image;

static void put(image *im, const void *p, size_t n) {
    memcpy(im->b + im->n, p, n);
    im->n += n;
}
static void put_u32(image *im, uint32_t v) { put(im, &v, 4); }

/* Byte tokens 0..255, then these (text, type), then the merges (a, b, c). */
typedef struct {
    const char *text;
    int type;
} extra_tok;

enum { T_HE = 256, T_LL, T_HELL, T_HELLO, T_AB, T_BC, T_ABC, T_AA, T_END, T_TOOL, T_SP_H, N_TOK };
static const extra_tok extras[] = {
    {"he", ML_BPE_NORMAL},  {"ll", ML_BPE_NORMAL},   {"hell", ML_BPE_NORMAL},
    {"hello", ML_BPE_NORMAL}, {"ab", ML_BPE_NORMAL}, {"bc", ML_BPE_NORMAL},
    {"abc", ML_BPE_NORMAL}, {"aa", ML_BPE_NORMAL},   {"<|end|>", ML_BPE_CONTROL},
    {"<tool>", ML_BPE_USER}, {" h", ML_BPE_NORMAL},
};

static void build_image(image *im, int pre, uint32_t flags, const uint32_t (*merges)[3], int n_merges) {
    im->n = 0;
    put(im, "MLBP", 4);
    uint32_t head[] = {1, (uint32_t)pre, flags, N_TOK, (uint32_t)n_merges, (uint32_t)-1, T_END, T_END, 0, 0, 0};
    put(im, head, sizeof head);
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)i;
        put_u32(im, 1);
        put_u32(im, ML_BPE_NORMAL);
        put(im, &c, 1);
    }
    for (size_t i = 0; i < sizeof extras / sizeof *extras; i++) {
        put_u32(im, (uint32_t)strlen(extras[i].text));
        put_u32(im, (uint32_t)extras[i].type);
        put(im, extras[i].text, strlen(extras[i].text));
    }
    for (int i = 0; i < n_merges; i++)
        for (int k = 0; k < 3; k++) put_u32(im, merges[i][k]);
}

/* bc before ab: "abc" -> bc first, then a+bc (rank 2). */
static const uint32_t merges_bc_first[][3] = {
    {'b', 'c', T_BC}, {'a', 'b', T_AB}, {'a', T_BC, T_ABC}, {'h', 'e', T_HE}, {'l', 'l', T_LL},
    {T_HE, T_LL, T_HELL}, {T_HELL, 'o', T_HELLO}, {'a', 'a', T_AA}, {' ', 'h', T_SP_H}};
/* ab before bc: "abc" -> ab + c, which no merge joins. */
static const uint32_t merges_ab_first[][3] = {
    {'a', 'b', T_AB}, {'b', 'c', T_BC}, {'a', T_BC, T_ABC}, {'h', 'e', T_HE}, {'l', 'l', T_LL},
    {T_HE, T_LL, T_HELL}, {T_HELL, 'o', T_HELLO}, {'a', 'a', T_AA}, {' ', 'h', T_SP_H}};
#define N_MERGES ((int)(sizeof merges_bc_first / sizeof *merges_bc_first))

static int load(ml_bpe *t, const image *im) {
    ml_err err = {{0}};
    ml_status s = ml_bpe_load_buffer(t, "test", im->b, im->n, &err);
    if (s) printf("  load: %s: %s\n", ml_status_name(s), err.msg);
    return s == ML_OK;
}

/* Encode text; the ids go to out (up to 64), the count is returned (-1 on error). */
static int enc(const ml_bpe *t, const char *text, int opts, int *out) {
    static int buf[4096];
    size_t n = 0, len = strlen(text);
    if (ml_bpe_max_tokens(t, text, len) > sizeof buf / sizeof *buf) return -1;
    if (ml_bpe_encode(t, text, len, opts, buf, sizeof buf / sizeof *buf, &n, NULL)) return -1;
    if (n > 64) return -1;
    memcpy(out, buf, n * sizeof *out);
    return (int)n;
}

static int same(const int *got, int n, const int *want, int m) {
    if (n != m) return 0;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

#define EXPECT(t, text, opts, ...)                                                              \
    do {                                                                                        \
        int want_[] = {__VA_ARGS__}, got_[64];                                                  \
        int n_ = enc(t, text, opts, got_);                                                      \
        CHECK(same(got_, n_, want_, (int)(sizeof want_ / sizeof *want_)), "encode '%s' (opts %d): " \
              "%d ids, first %d; expected %d ids, first %d", text, opts, n_, n_ > 0 ? got_[0] : -1, \
              (int)(sizeof want_ / sizeof *want_), want_[0]);                                   \
    } while (0)

/* ---- merges ------------------------------------------------------------------ */

static void test_merges(void) {
    int f0 = tl_failed;
    image im;
    ml_bpe t;
    build_image(&im, ML_BPE_PRE_GPT2, 0, merges_bc_first, N_MERGES);
    if (!load(&t, &im)) {
        CHECK(0, "the hand-made vocabulary loads");
        return;
    }
    EXPECT(&t, "abc", 0, T_ABC);
    EXPECT(&t, "hello", 0, T_HELLO);
    EXPECT(&t, "aaa", 0, T_AA, 'a'); /* the leftmost pair first */
    EXPECT(&t, "aaaa", 0, T_AA, T_AA);
    EXPECT(&t, "x", 0, 'x');
    EXPECT(&t, " hello", 0, ' ', T_HELLO); /* "he" (rank 3) before " h" (rank 8) */
    EXPECT(&t, " h", 0, T_SP_H);
    ml_bpe_free(&t);
    build_image(&im, ML_BPE_PRE_GPT2, 0, merges_ab_first, N_MERGES);
    if (load(&t, &im)) {
        EXPECT(&t, "abc", 0, T_AB, 'c');
        ml_bpe_free(&t);
    }
    /* ignore_merges: a piece that is a token stays whole, whatever the merges say */
    build_image(&im, ML_BPE_PRE_GPT2, ML_BPE_IGNORE_MERGES, merges_ab_first, N_MERGES);
    if (load(&t, &im)) {
        EXPECT(&t, "abc", 0, T_ABC);
        EXPECT(&t, "abcabc", 0, T_AB, 'c', T_AB, 'c'); /* not a token: merged */
        ml_bpe_free(&t);
    }
    /* ranked by result id: ab (id 260) before bc (261), whatever the list's order */
    build_image(&im, ML_BPE_PRE_GPT2, ML_BPE_RANK_BY_RESULT, merges_bc_first, N_MERGES);
    if (load(&t, &im)) {
        EXPECT(&t, "abc", 0, T_AB, 'c');
        ml_bpe_free(&t);
    }
    GROUP_DONE("merges by rank (position or result id), leftmost on a tie, ignore_merges", f0);
}

/* ---- pre-tokenizers ------------------------------------------------------------ */

typedef struct {
    int pre;
    const char *text;
    const char *pieces[24];
} split_case;

/* Generated with Hugging Face tokenizers' Split(pattern, "isolated") on the
 * published patterns (tools/tokfile.py PATTERNS); smollm's with Digits
 * (individual_digits) first, as SmolLM2's tokenizer.json does. */
static const split_case splits[] = {
    /* gpt-2 */
    {0, "Hello world's  end\012\012  x",
     {"Hello", " world", "'s", " ", " end", "\012\012 ", " x", NULL}},
    {0, "I'LL don't 'S a\305\277'\305\277 a'\305\277x we'Re",
     {"I", "'", "LL", " don", "'t", " '", "S", " a\305\277", "'", "\305\277", " a", "'", "\305\277x", " we", "'", "Re", NULL}},
    {0, "12345 abc 7",
     {"12345", " abc", " 7", NULL}},
    {0, "  \015\012\011 x \015\012\015\012",
     {"  \015\012\011", " x", " \015\012\015\012", NULL}},
    {0, "\302\277Qu\303\251? \344\275\240\345\245\275 \360\237\216\211!!\012",
     {"\302\277", "Qu\303\251", "?", " \344\275\240\345\245\275", " \360\237\216\211!!", "\012", NULL}},
    {0, "a\302\240b\343\200\200 c",
     {"a", "\302\240", "b", "\343\200\200", " c", NULL}},
    {0, "((hello )) \011\012",
     {"((", "hello", " ))", " \011\012", NULL}},
    {0, "x\314\201y 1\302\262\302\275",
     {"x", "\314\201", "y", " 1\302\262\302\275", NULL}},
    {0, "  ",
     {"  ", NULL}},
    /* llama-bpe */
    {1, "Hello world's  end\012\012  x",
     {"Hello", " world", "'s", " ", " end", "\012\012", " ", " x", NULL}},
    {1, "I'LL don't 'S a\305\277'\305\277 a'\305\277x we'Re",
     {"I", "'LL", " don", "'t", " '", "S", " a\305\277", "'\305\277", " a", "'\305\277", "x", " we", "'Re", NULL}},
    {1, "12345 abc 7",
     {"123", "45", " abc", " ", "7", NULL}},
    {1, "  \015\012\011 x \015\012\015\012",
     {"  \015\012", "\011", " x", " \015\012\015\012", NULL}},
    {1, "\302\277Qu\303\251? \344\275\240\345\245\275 \360\237\216\211!!\012",
     {"\302\277Qu\303\251", "?", " \344\275\240\345\245\275", " \360\237\216\211!!\012", NULL}},
    {1, "a\302\240b\343\200\200 c",
     {"a", "\302\240b", "\343\200\200", " c", NULL}},
    {1, "((hello )) \011\012",
     {"((", "hello", " ))", " \011\012", NULL}},
    {1, "x\314\201y 1\302\262\302\275",
     {"x", "\314\201y", " ", "1\302\262\302\275", NULL}},
    {1, "  ",
     {"  ", NULL}},
    /* qwen2 */
    {2, "Hello world's  end\012\012  x",
     {"Hello", " world", "'s", " ", " end", "\012\012", " ", " x", NULL}},
    {2, "I'LL don't 'S a\305\277'\305\277 a'\305\277x we'Re",
     {"I", "'LL", " don", "'t", " '", "S", " a\305\277", "'\305\277", " a", "'\305\277", "x", " we", "'Re", NULL}},
    {2, "12345 abc 7",
     {"1", "2", "3", "4", "5", " abc", " ", "7", NULL}},
    {2, "  \015\012\011 x \015\012\015\012",
     {"  \015\012", "\011", " x", " \015\012\015\012", NULL}},
    {2, "\302\277Qu\303\251? \344\275\240\345\245\275 \360\237\216\211!!\012",
     {"\302\277Qu\303\251", "?", " \344\275\240\345\245\275", " \360\237\216\211!!\012", NULL}},
    {2, "a\302\240b\343\200\200 c",
     {"a", "\302\240b", "\343\200\200", " c", NULL}},
    {2, "((hello )) \011\012",
     {"((", "hello", " ))", " \011\012", NULL}},
    {2, "x\314\201y 1\302\262\302\275",
     {"x", "\314\201y", " ", "1", "\302\262", "\302\275", NULL}},
    {2, "  ",
     {"  ", NULL}},
    /* smollm: Sequence(Digits(individual), Split(gpt-2)) */
    {3, "abc 12345 x1y",
     {"abc", " ", "1", "2", "3", "4", "5", " x", "1", "y", NULL}},
    {3, "  42\012\012  7 ",
     {"  ", "4", "2", "\012\012  ", "7", " ", NULL}},
    {3, "v2.0 \302\275\302\262 \331\2434",
     {"v", "2", ".", "0", " ", "\302\275", "\302\262", " ", "\331\243", "4", NULL}},
};

static void test_splits(void) {
    int f0 = tl_failed;
    for (size_t c = 0; c < sizeof splits / sizeof *splits; c++) {
        const split_case *sc = &splits[c];
        size_t n = strlen(sc->text), i = 0;
        int k = 0, ok = 1;
        while (i < n && ok) {
            size_t e = ml_bpe_piece_end(sc->pre, sc->text, n, i);
            const char *w = sc->pieces[k];
            ok = w && e > i && e - i == strlen(w) && !memcmp(sc->text + i, w, e - i);
            if (!ok)
                printf("  %s: case %zu, piece %d at byte %zu: got %zu bytes, expected '%s'\n", ml_bpe_pre_name(sc->pre),
                       c, k, i, e - i, w ? w : "(end)");
            i = e;
            k++;
        }
        CHECK(ok && !sc->pieces[k], "%s splits case %zu as expected", ml_bpe_pre_name(sc->pre), c);
    }
    /* invalid UTF-8: each bad byte a character of its own, never past the end */
    for (int pre = 0; pre < ML_BPE_PRE_COUNT; pre++) {
        const char bad[] = "a\xff\xfe b\xe4\xbd \xf0\x9f";
        size_t n = sizeof bad - 1, i = 0, steps = 0;
        while (i < n && steps++ < n) {
            size_t e = ml_bpe_piece_end(pre, bad, n, i);
            CHECK(e > i && e <= n, "%s: invalid UTF-8 at byte %zu: piece end %zu", ml_bpe_pre_name(pre), i, e);
            if (e <= i) break;
            i = e;
        }
        CHECK(i == n, "%s: invalid UTF-8 split to the end", ml_bpe_pre_name(pre));
    }
    CHECK(ml_uni_class('a') == ML_UNI_LETTER && ml_uni_class(0x4F60) == ML_UNI_LETTER &&
              ml_uni_class(0x0663) == ML_UNI_NUMBER && ml_uni_class(0x3000) == ML_UNI_SPACE &&
              ml_uni_class(0x0301) == ML_UNI_OTHER && ml_uni_class(0x1C) == ML_UNI_OTHER &&
              ml_uni_class(0x110000) == ML_UNI_OTHER,
          "Unicode classes of a, U+4F60, U+0663, U+3000, U+0301, U+001C, U+110000");
    GROUP_DONE("pre-tokenizers: gpt-2, llama-bpe, qwen2, smollm on tricky strings", f0);
}

/* ---- specials ------------------------------------------------------------------ */

static void test_specials(void) {
    int f0 = tl_failed;
    image im;
    ml_bpe t;
    build_image(&im, ML_BPE_PRE_QWEN2, 0, merges_bc_first, N_MERGES);
    if (!load(&t, &im)) {
        CHECK(0, "the hand-made vocabulary loads");
        return;
    }
    /* without ML_BPE_SPECIAL "<|end|>" is text; "<tool>" (user-defined) is a token either way */
    int ids[64];
    int n = enc(&t, "abc<|end|>abc", 0, ids);
    CHECK(n > 3 && ids[0] == T_ABC && ids[n - 1] == T_ABC, "plain text around <|end|>");
    int found = 0;
    for (int i = 0; i < n; i++) found |= ids[i] == T_END;
    CHECK(!found, "<|end|> is not a token without ML_BPE_SPECIAL");
    EXPECT(&t, "abc<|end|>abc", ML_BPE_SPECIAL, T_ABC, T_END, T_ABC);
    EXPECT(&t, "<tool>abc", 0, T_TOOL, T_ABC);
    EXPECT(&t, "<|end|><|end|>", ML_BPE_SPECIAL | ML_BPE_EOS, T_END, T_END, T_END);
    EXPECT(&t, "", ML_BPE_EOS, T_END);
    CHECK(enc(&t, "", 0, ids) == 0, "empty text: no ids");
    ml_tok tok;
    ml_err err = {{0}};
    CHECK(ml_tok_load_buffer(&tok, "test", im.b, im.n, N_TOK, &err) == ML_OK && tok.kind == ML_TOK_KIND_BPE,
          "ml_tok sniffs a BPE file: %s", err.msg);
    if (tok.kind == ML_TOK_KIND_BPE && tok.bpe.n_tokens == N_TOK) {
        int buf[256], nt = 0;
        CHECK(ml_tok_max_tokens(&tok, "abc<|end|>") <= 256 &&
                  ml_tok_encode(&tok, "abc<|end|>", 1, 0, 1, buf, &nt, &err) == ML_OK && nt == 2 &&
                  buf[0] == T_ABC && buf[1] == T_END,
              "ml_tok_encode with special: abc <|end|> (no bos in this vocabulary)");
        size_t len = 9;
        ml_tok_decode(&tok, T_ABC, T_END, &len);
        CHECK(len == 0, "a control token decodes to nothing");
        CHECK(ml_tok_eos(&tok) == T_END && ml_tok_eot(&tok) == T_END && ml_tok_bos(&tok) == -1 &&
                  !ml_tok_add_bos(&tok),
              "ml_tok's special ids");
        ml_tok_free(&tok);
    }
    CHECK(ml_tok_load_buffer(&tok, "test", im.b, im.n, N_TOK + 1, &err) == ML_E_FORMAT && strstr(err.msg, "vocab"),
          "ml_tok: a vocab other than the model's is refused: %s", err.msg);
    ml_bpe_free(&t);
    GROUP_DONE("special tokens: control only on request, user-defined always", f0);
}

/* ---- NFC ------------------------------------------------------------------------ */

/* Under ML_BPE_NFC a text is encoded as its NFC (Qwen2's normalizer), each
 * stretch between special tokens on its own; without, as its bytes. */
static void test_nfc(void) {
    int f0 = tl_failed;
    image im;
    ml_bpe plain, nfc;
    build_image(&im, ML_BPE_PRE_QWEN2, 0, merges_bc_first, N_MERGES);
    int ok = load(&plain, &im);
    build_image(&im, ML_BPE_PRE_QWEN2, ML_BPE_NFC, merges_bc_first, N_MERGES);
    if (!load(&nfc, &im) || !ok) {
        CHECK(0, "the hand-made vocabularies load");
        return;
    }
    /* e + COMBINING ACUTE ACCENT (U+0301) is U+00E9 in NFC: its two bytes */
    EXPECT(&nfc, "abce\xcc\x81", 0, T_ABC, 0xC3, 0xA9);
    EXPECT(&plain, "abce\xcc\x81", 0, T_ABC, 'e', 0xCC, 0x81);
    EXPECT(&nfc, "\xc3\xa9" "abc", 0, 0xC3, 0xA9, T_ABC);
    /* ANGSTROM SIGN (U+212B) is U+00C5; a Hangul L V T is one syllable (U+CE7B) */
    EXPECT(&nfc, "\xe2\x84\xab", 0, 0xC3, 0x85);
    EXPECT(&nfc, "\xe1\x84\x8f\xe1\x85\xa1\xe1\x86\xae", 0, 0xEC, 0xB9, 0xBB);
    /* a special token splits the text: the accent after it has no base */
    EXPECT(&nfc, "e<|end|>\xcc\x81", ML_BPE_SPECIAL, 'e', T_END, 0xCC, 0x81);
    EXPECT(&nfc, "e\xcc\x81<|end|>", ML_BPE_SPECIAL | ML_BPE_EOS, 0xC3, 0xA9, T_END, T_END);
    /* ASCII and invalid bytes go through as they are */
    EXPECT(&nfc, "abc\xff\xcc", 0, T_ABC, 0xFF, 0xCC);
    /* GREEK DIALYTIKA TONOS (U+0344, 2 bytes) is U+0308 U+0301 (4 bytes): the
     * bound grows with the text's decomposition */
    const char *grows = "\xcd\x84\xcd\x84\xcd\x84";
    CHECK(ml_bpe_max_tokens(&nfc, grows, 6) > ml_bpe_max_tokens(&plain, grows, 6) &&
              ml_bpe_max_tokens(NULL, grows, 6) >= ml_bpe_max_tokens(&nfc, grows, 6) &&
              ml_bpe_max_tokens(&nfc, "abc", 3) == ml_bpe_max_tokens(&plain, "abc", 3),
          "ml_bpe_max_tokens: more room for text NFC grows, as much as before for ASCII");
    EXPECT(&nfc, grows, 0, 0xCC, 0x88, 0xCC, 0x81, 0xCC, 0x88, 0xCC, 0x81, 0xCC, 0x88, 0xCC, 0x81);
    int ids[64];
    size_t n = 0;
    size_t need = ml_bpe_max_tokens(&nfc, grows, 6);
    CHECK(ml_bpe_encode(&nfc, grows, 6, 0, ids, need - 1, &n, NULL) == ML_E_ARG, "one entry less than the bound: ML_E_ARG");
    /* 100 MB of text: 1 G entries, whose bytes a 32-bit size_t cannot hold; the
     * bound saturates there so a caller's cap * sizeof(int) never wraps, and
     * encode refuses (before reading the text) */
    size_t big = 100000000, r = ml_bpe_max_tokens(&plain, "x", big);
    CHECK(r <= SIZE_MAX / sizeof(int) && (sizeof(size_t) > 4 ? r == 10 * big + 16 : r == ML_BPE_MAX_IDS) &&
              ml_bpe_max_tokens(&plain, "x", SIZE_MAX / 2) == ML_BPE_MAX_IDS,
          "the bound of 100 MB is 10 * len + 16, or saturated with a 32-bit size_t (%zu)", r);
    CHECK(ml_bpe_encode(&plain, "x", SIZE_MAX / 2, 0, ids, ML_BPE_MAX_IDS, &n, NULL) == ML_E_ARG,
          "text longer than one encode takes: ML_E_ARG, whatever the capacity");
    ml_bpe_free(&plain);
    ml_bpe_free(&nfc);
    GROUP_DONE("NFC before the pre-tokenizer (ML_BPE_NFC), per stretch between specials", f0);
}

/* A user-defined token that is no UTF-8 on its own (here the last byte of
 * KELVIN SIGN, E2 84 AA, whose NFC is the one byte K) cuts code points the
 * bound counted whole: each stretch keeps E2 84 as two bytes. The ids and the
 * workspace must still fit the bound's buffer, allocated to the entry, and the
 * bound for any tokenizer must cover one that does not normalize. */
static void test_nfc_cut(void) {
    int f0 = tl_failed;
    image im = {.n = 0};
    put(&im, "MLBP", 4);
    uint32_t head[] = {1, ML_BPE_PRE_QWEN2, ML_BPE_NFC, 258, 1, (uint32_t)-1, (uint32_t)-1, (uint32_t)-1, 0, 0, 0};
    put(&im, head, sizeof head);
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)i;
        put_u32(&im, 1);
        put_u32(&im, ML_BPE_NORMAL);
        put(&im, &c, 1);
    }
    put_u32(&im, 1), put_u32(&im, ML_BPE_USER), put(&im, "\xaa", 1);         /* 256 */
    put_u32(&im, 2), put_u32(&im, ML_BPE_NORMAL), put(&im, "\xe2\x84", 2);   /* 257 */
    put_u32(&im, 0xE2), put_u32(&im, 0x84), put_u32(&im, 257);
    ml_bpe t;
    if (!load(&t, &im)) {
        CHECK(0, "the vocabulary with a token 0xAA loads");
        return;
    }
    /* a mark (so the text is not its own NFC), r Kelvin signs, p letters */
    static const int cases[][2] = {{1, 0}, {10, 0}, {12, 3}, {16, 3}, {40, 10}, {200, 50}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int r = cases[c][0], p = cases[c][1];
        size_t len = 2 + 3 * (size_t)r + (size_t)p, n = 0;
        char *text = malloc(len);
        memcpy(text, "\xcc\x81", 2);
        for (int i = 0; i < r; i++) memcpy(text + 2 + 3 * i, "\xe2\x84\xaa", 3);
        memset(text + 2 + 3 * r, 'a', (size_t)p);
        size_t cap = ml_bpe_max_tokens(&t, text, len);
        int *ids = malloc(cap * sizeof *ids);
        ml_status st = ml_bpe_encode(&t, text, len, 0, ids, cap, &n, NULL);
        int ok = !st && n == 2 + 2 * (size_t)r + (size_t)p && ids[0] == 0xCC && ids[1] == 0x81;
        for (size_t i = 2; ok && i < n; i++) ok = ids[i] == (i >= 2 + 2 * (size_t)r ? 'a' : i % 2 ? 256 : 257);
        CHECK(ok, "%d Kelvin signs cut by the token, %d letters: %s, %zu ids (expected %d), in %zu entries", r, p,
              ml_status_name(st), n, 2 + 2 * r + p, cap);
        CHECK(ml_bpe_max_tokens(NULL, text, len) >= 10 * len + 16,
              "%d Kelvin signs: the bound for any tokenizer covers one that keeps the bytes", r);
        free(ids);
        free(text);
    }
    ml_bpe_free(&t);
    GROUP_DONE("NFC: a special token that cuts a code point; the bound of text NFC shortens", f0);
}

/* ---- streaming decode ------------------------------------------------------------ */

static size_t feed(ml_utf8_stream *s, const char *p, char *out) { return ml_utf8_stream_feed(s, p, strlen(p), out); }

static void test_stream(void) {
    int f0 = tl_failed;
    ml_utf8_stream s = {{0}, 0, 0};
    char out[64];
    CHECK(feed(&s, "a\xe4\xbd", out) == 1 && out[0] == 'a', "a split character is held back");
    size_t n = feed(&s, "\xa0z", out);
    CHECK(n == 4 && !memcmp(out, "\xe4\xbd\xa0z", 4), "and released whole with the next token");
    CHECK(feed(&s, "\xf0\x9f", out) == 0 && feed(&s, "\x8e", out) == 0, "a 4-byte emoji over three tokens: held");
    n = feed(&s, "\x89", out);
    CHECK(n == 4 && !memcmp(out, "\xf0\x9f\x8e\x89", 4), "then released once");
    n = feed(&s, "\xe4" "A", out);
    CHECK(n == 2 && !memcmp(out, "\xe4" "A", 2), "a broken sequence is released as it is, in order");
    n = feed(&s, "\xff\x80", out);
    CHECK(n == 2 && !memcmp(out, "\xff\x80", 2), "bytes that start nothing pass through");
    CHECK(feed(&s, "\xe0\x80", out) == 2, "an overlong start (E0 80) is not held");
    feed(&s, "\xc3", out);
    n = ml_utf8_stream_flush(&s, out);
    CHECK(n == 1 && (unsigned char)out[0] == 0xc3 && ml_utf8_stream_flush(&s, out) == 0, "flush releases what is held");
    GROUP_DONE("streaming UTF-8 decode", f0);
}

/* ---- malformed files ---------------------------------------------------------------- */

static void expect_bad(const image *im, const char *field, const char *what) {
    ml_bpe t;
    ml_err err = {{0}};
    ml_status s = ml_bpe_load_buffer(&t, "bad", im->b, im->n, &err);
    CHECK(s == ML_E_FORMAT && strstr(err.msg, field), "%s: ML_E_FORMAT naming '%s' (got %s: %s)", what, field,
          ml_status_name(s), err.msg);
    if (!s) ml_bpe_free(&t);
}

static void set_u32(image *im, size_t at, uint32_t v) { memcpy(im->b + at, &v, 4); }

static void test_malformed(void) {
    int f0 = tl_failed;
    image good, im;
    build_image(&good, ML_BPE_PRE_LLAMA3, 0, merges_bc_first, N_MERGES);
    size_t first_tok = 48, first_merge = good.n - 12 * (size_t)N_MERGES;
    struct {
        size_t at;
        uint32_t v;
        const char *field, *what;
    } cases[] = {
        {0, 0x50424C4E, "magic", "magic"},
        {4, 2, "version", "version 2"},
        {8, 4, "pre", "pre-tokenizer 4"},
        {12, 8, "flags", "unknown flag"},
        {16, 255, "n_tokens", "255 tokens"},
        {16, N_TOK + 1, "token 267", "one token more than the file has"},
        {16, N_TOK - 1, "merges", "one token less"},
        {20, N_MERGES + 1, "merges", "one merge more than the file has"},
        {24, N_TOK, "bos", "bos out of range"},
        {28, (uint32_t)-2, "eos", "eos -2"},
        {32, N_TOK, "eot", "eot out of range"},
        {36, 1, "add_bos", "add_bos without bos"},
        {36, 2, "add_bos", "add_bos 2"},
        {44, 1, "reserved", "reserved bytes"},
        {first_tok, 0, "len", "token 0 of length 0"},
        {first_tok, 5000, "len", "token 0 too long"},
        {first_tok + 4, 7, "type", "token type 7"},
        {first_tok + 4, ML_BPE_CONTROL, "byte 0x00", "byte 0 not a normal token"},
        {first_merge, N_TOK, "merge 0", "merge id out of range"},
        {first_merge + 8, T_AB, "merge 0", "merge result not the pair's bytes"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        im = good;
        set_u32(&im, cases[c].at, cases[c].v);
        expect_bad(&im, cases[c].field, cases[c].what);
    }
    im = good;
    im.b[im.n++] = 0;
    expect_bad(&im, "merges", "a trailing byte");
    /* every truncation: a clear error, never a crash */
    int ok = 1;
    for (size_t n = 0; n < good.n; n++) {
        ml_bpe t;
        ml_err err = {{0}};
        ml_status s = ml_bpe_load_buffer(&t, "cut", good.b, n, &err);
        if (s != ML_E_FORMAT || !err.msg[0]) {
            ok = 0;
            printf("  truncated to %zu bytes: %s\n", n, ml_status_name(s));
            if (!s) ml_bpe_free(&t);
        }
    }
    CHECK(ok, "every truncation of a %zu-byte file is ML_E_FORMAT", good.n);
    /* random corruption: loads or fails cleanly (the sanitizer rows catch the rest) */
    uint32_t rng = 12345;
    int loaded = 0;
    for (int k = 0; k < 300; k++) {
        im = good;
        for (int j = 0; j < 4; j++) {
            rng = rng * 1664525u + 1013904223u;
            size_t at = (rng >> 8) % (k % 2 ? 48 + 8 : im.n);
            rng = rng * 1664525u + 1013904223u;
            im.b[at] = (unsigned char)(rng >> 24);
        }
        ml_bpe t;
        ml_err err = {{0}};
        ml_status s = ml_bpe_load_buffer(&t, "fuzz", im.b, im.n, &err);
        if (s == ML_OK) {
            int ids[64];
            loaded++;
            enc(&t, "hello abc <|end|> \xe4\xbd\xa0", ML_BPE_SPECIAL, ids);
            ml_bpe_free(&t);
        } else if (s != ML_E_FORMAT) {
            CHECK(0, "corrupted file %d: %s", k, ml_status_name(s));
        }
    }
    CHECK(1, "300 corrupted files loaded (%d) or refused", loaded);
    ml_bpe t;
    ml_err err = {{0}};
    CHECK(ml_bpe_load(&t, "/nonexistent/tok.bpe", &err) == ML_E_IO, "a missing file is ML_E_IO: %s", err.msg);
    GROUP_DONE("malformed BPE files", f0);
}

int ml_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_merges();
    test_splits();
    test_specials();
    test_nfc();
    test_nfc_cut();
    test_stream();
    test_malformed();
    return tl_summary();
}
