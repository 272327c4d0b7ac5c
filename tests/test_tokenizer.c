/* model/tokenizer: known ids on real vocabularies, merge rules on hand-made
 * ones, decode round trips, invalid UTF-8, long inputs, malformed files.
 * Real vocabularies come from $MODELS (default ../shared/models); without
 * it those groups are skipped, loudly, and the hand-made ones still run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/tokenizer.h"
#include "tests/testlib.h"

/* ---- helpers --------------------------------------------------------------- */

static const char *models_dir(void) {
    const char *m = getenv("MODELS");
    return m && *m ? m : "../shared/models";
}

static int exists(const char *path) { return access(path, R_OK) == 0; }

/* Write n bytes to a fresh temp file; its path goes to path (>= 32 bytes). */
static int write_temp(char *path, const void *data, size_t n) {
    strcpy(path, "/tmp/ml_tok_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    int ok = write(fd, data, n) == (ssize_t)n;
    close(fd);
    return ok;
}

/* A tokenizer.bin image in memory. */
typedef struct { unsigned char b[1 << 16]; size_t n; } image;

static void put(image *im, const void *p, size_t n) {
    memcpy(im->b + im->n, p, n);
    im->n += n;
}
static void put_u32(image *im, unsigned v) { put(im, &v, 4); }
static void put_entry(image *im, float score, const char *piece) {
    put(im, &score, 4);
    put_u32(im, (unsigned)strlen(piece));
    put(im, piece, strlen(piece));
}

/* Build a tokenizer.bin from NULL-terminated pieces (score[i], or -i when
 * scores is NULL) and load it. */
static ml_status load_pieces(ml_tokenizer *t, const char *const *pieces, const float *scores,
                             ml_err *err) {
    static image im;
    im.n = 0;
    unsigned max_len = 0, n = 0;
    for (; pieces[n]; n++)
        if (strlen(pieces[n]) > max_len) max_len = (unsigned)strlen(pieces[n]);
    put_u32(&im, max_len);
    for (unsigned i = 0; i < n; i++) put_entry(&im, scores ? scores[i] : -(float)i, pieces[i]);
    char path[32];
    if (!write_temp(path, im.b, im.n)) return ml_errf(err, ML_E_IO, "cannot write a temp file");
    ml_status s = ml_tokenizer_load(t, path, (int)n, err);
    unlink(path);
    return s;
}

/* Encode into a buffer of exactly ml_tokenizer_max_tokens(text) ints, so the
 * sanitizers catch a write past it. Caller frees. */
static int *encode(const ml_tokenizer *t, const char *text, int bos, int eos, int *n,
                   ml_status *st) {
    int *ids = malloc(ml_tokenizer_max_tokens(text) * sizeof *ids);
    ml_err err = {{0}};
    *n = -1;
    *st = ml_tokenizer_encode(t, text, bos, eos, ids, n, &err);
    return ids;
}

/* Concatenated decode of ids[from..n), prev starting at ids[from-1] (or 0). */
static size_t decode_all(const ml_tokenizer *t, const int *ids, int from, int n, char *out,
                         size_t cap) {
    size_t at = 0;
    for (int i = from; i < n; i++) {
        size_t len;
        const char *p = ml_tokenizer_decode(t, i > 0 ? ids[i - 1] : 0, ids[i], &len);
        if (!p || at + len > cap) return (size_t)-1;
        memcpy(out + at, p, len);
        at += len;
    }
    return at;
}

static int same_ids(const int *a, int na, const int *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

/* ---- a slow, obviously-llama2.c oracle: ids list, concatenate two pieces,
 * look the result up, merge the best, start over ---------------------------- */

static const ml_tokenizer *oracle_t;
static int oracle_hash[1 << 17]; /* 1 + id, open addressing; the oracle's own lookup */

static unsigned oracle_fnv(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h & ((1u << 17) - 1);
}

static void oracle_init(const ml_tokenizer *t) {
    oracle_t = t;
    memset(oracle_hash, 0, sizeof oracle_hash);
    for (int i = 0; i < t->vocab; i++) {
        unsigned h = oracle_fnv((const char *)t->pieces[i].bytes, t->pieces[i].len);
        while (oracle_hash[h]) h = (h + 1) & ((1u << 17) - 1);
        oracle_hash[h] = i + 1;
    }
}

static int oracle_find(const char *s, size_t n) { /* the lowest id, as pieces went in by id */
    for (unsigned h = oracle_fnv(s, n); oracle_hash[h]; h = (h + 1) & ((1u << 17) - 1)) {
        const ml_tok_piece *p = &oracle_t->pieces[oracle_hash[h] - 1];
        if (p->len == n && memcmp(p->bytes, s, n) == 0) return oracle_hash[h] - 1;
    }
    return -1;
}

static int oracle_byte(unsigned char b) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    int id = oracle_find(name, 6);
    return id < 0 ? 0 : id;
}

static int oracle_encode(const ml_tokenizer *t, const char *text, int *ids) {
    if (oracle_t != t) oracle_init(t);
    int n = 0;
    size_t len = strlen(text);
    if (!len) return 0;
    int sp = oracle_find(" ", 1);
    ids[n++] = sp >= 0 ? sp : oracle_byte(' ');
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        size_t cl = c < 0x80 ? 1 : c >= 0xF8 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
        if (cl > len - i) cl = 0;
        for (size_t k = 1; k < cl; k++)
            if (((unsigned char)text[i + k] & 0xC0) != 0x80) cl = 0;
        int id = cl ? oracle_find(text + i, cl) : -1;
        if (id >= 0) {
            ids[n++] = id;
            i += cl;
            continue;
        }
        if (!cl) cl = 1;
        for (size_t k = 0; k < cl; k++) ids[n++] = oracle_byte((unsigned char)text[i + k]);
        i += cl;
    }
    char buf[2 * ML_TOK_MAX_PIECE];
    for (;;) {
        int best = -1, best_id = -1;
        float best_score = 0;
        for (int i = 0; i + 1 < n; i++) {
            const ml_tok_piece *a = &t->pieces[ids[i]], *b = &t->pieces[ids[i + 1]];
            memcpy(buf, a->bytes, a->len);
            memcpy(buf + a->len, b->bytes, b->len);
            int id = oracle_find(buf, a->len + b->len);
            if (id >= 0 && (best < 0 || t->scores[id] > best_score)) {
                best = i;
                best_id = id;
                best_score = t->scores[id];
            }
        }
        if (best < 0) return n;
        ids[best] = best_id;
        memmove(ids + best + 1, ids + best + 2, (size_t)(n - best - 2) * sizeof *ids);
        n--;
    }
}

/* ---- load errors (hand-made files) ------------------------------------------ */

static void expect_load(ml_status want, const char *what, const image *im, int vocab,
                        const char *msg_part) {
    char path[32];
    ml_tokenizer t;
    ml_err err = {{0}};
    CHECK(write_temp(path, im->b, im->n), "%s: write temp file", what);
    ml_status s = ml_tokenizer_load(&t, path, vocab, &err);
    unlink(path);
    CHECK(s == want, "%s: got %s (%s), expected %s", what, ml_status_name(s), err.msg,
          ml_status_name(want));
    CHECK(!msg_part || strstr(err.msg, msg_part), "%s: message '%s' lacks '%s'", what, err.msg,
          msg_part);
    CHECK(s != ML_OK || ml_tokenizer_vocab(&t) == vocab, "%s: vocab", what);
    if (s != ML_OK) CHECK(ml_tokenizer_vocab(&t) == 0 && !t.pieces, "%s: failed load left state", what);
    ml_tokenizer_free(&t); /* harmless after a failed load */
}

static void test_load_errors(void) {
    int f0 = tl_failed;
    static image im;
    ml_tokenizer t;
    ml_err err = {{0}};

    CHECK(ml_tokenizer_load(&t, "/nonexistent/tok.bin", 4, &err) == ML_E_IO, "missing file: %s",
          err.msg);
    CHECK(strstr(err.msg, "/nonexistent/tok.bin") != NULL, "missing file message: %s", err.msg);
    CHECK(ml_tokenizer_load(&t, "/tmp", 4, &err) == ML_E_IO, "directory: %s", err.msg);

    im.n = 0;
    put_u32(&im, 5);
    put_entry(&im, 0, "<unk>");
    put_entry(&im, 0, "<s>");
    put_entry(&im, 0, "</s>");
    put_entry(&im, -1, "a");
    expect_load(ML_OK, "valid 4-token file", &im, 4, NULL);
    expect_load(ML_E_FORMAT, "4 tokens, vocab 5", &im, 5, "has 4 tokens, model vocab is 5");
    expect_load(ML_E_FORMAT, "4 tokens, vocab 3", &im, 3, "has 4 tokens, model vocab is 3");
    CHECK(ml_tokenizer_load(&t, "/tmp/x", 0, &err) == ML_E_ARG, "vocab 0: %s", err.msg);
    CHECK(ml_tokenizer_load(&t, "/tmp/x", -5, &err) == ML_E_ARG, "vocab -5: %s", err.msg);

    static image cut, bad; /* 64 KB each: not on the stack */
    cut = im;
    cut.n = im.n - 1;
    expect_load(ML_E_FORMAT, "last piece cut short", &cut, 4, "run past the end");
    cut.n = im.n - 2 - 4; /* inside the last entry header */
    expect_load(ML_E_FORMAT, "entry header cut short", &cut, 4, "cut off");
    cut.n = 2;
    expect_load(ML_E_FORMAT, "2-byte file", &cut, 4, "too short");
    cut.n = 0;
    expect_load(ML_E_FORMAT, "empty file", &cut, 4, NULL);

    bad = im;
    unsigned v = 0;
    memcpy(bad.b, &v, 4);
    expect_load(ML_E_FORMAT, "max_token_length 0", &bad, 4, "max_token_length is 0");
    v = 100000;
    memcpy(bad.b, &v, 4);
    expect_load(ML_E_FORMAT, "max_token_length 100000", &bad, 4, "max_token_length is 100000");
    v = 4; /* "<unk>" is 5 bytes */
    memcpy(bad.b, &v, 4);
    expect_load(ML_E_FORMAT, "piece longer than max_token_length", &bad, 4, "token 0: len is 5");

    bad = im;
    v = 0;
    memcpy(bad.b + 4 + 4, &v, 4); /* token 0's len */
    expect_load(ML_E_FORMAT, "len 0", &bad, 4, "token 0: len is 0");
    v = 0xFFFFFFF0u;
    memcpy(bad.b + 4 + 4, &v, 4);
    expect_load(ML_E_FORMAT, "len 0xFFFFFFF0", &bad, 4, "token 0: len is");

    /* A last entry whose len points far past the end of the file. */
    bad = im;
    v = 5; /* max_token_length stays 5, len 5 > the 1 byte left */
    memcpy(bad.b + bad.n - 1 - 4, &v, 4);
    expect_load(ML_E_FORMAT, "len past the end", &bad, 4, "token 3: its 5 bytes");

    bad = im;
    float nan = strtof("nan", NULL), inf = strtof("inf", NULL);
    memcpy(bad.b + 4 + 8 + 5, &nan, 4); /* token 1's score */
    expect_load(ML_E_FORMAT, "NaN score", &bad, 4, "token 1: score is");
    memcpy(bad.b + 4 + 8 + 5, &inf, 4);
    expect_load(ML_E_FORMAT, "inf score", &bad, 4, "token 1: score is");

    GROUP_DONE("load: malformed files, wrong vocab, missing path, directory", f0);
}

/* ---- merge rules (hand-made vocabularies) ----------------------------------- */

static void check_encode(const ml_tokenizer *t, const char *text, int bos, int eos,
                         const int *want, int n_want, const char *what) {
    int n;
    ml_status s;
    int *ids = encode(t, text, bos, eos, &n, &s);
    CHECK(s == ML_OK && same_ids(ids, n, want, n_want), "%s: encode(\"%s\") gave %d ids", what,
          text, n);
    free(ids);
}

static void test_merge_rules(void) {
    int f0 = tl_failed;
    ml_tokenizer t;
    ml_err err = {{0}};
    /*                           0        1      2       3    4    5    6     7     8     9 */
    const char *pieces[] = {"<unk>", "<s>", "</s>", " ", "a", "b", "ab", "ba", " a", "aba", NULL};
    float sc[] = {0, 0, 0, -10, -10, -10, 1, 2, -5, -100};
    CHECK(load_pieces(&t, pieces, sc, &err) == ML_OK, "load: %s", err.msg);
    /* " aba": pairs " a"(-5) ab(1) ba(2) -> ba first, then " a"; "aba" never forms. */
    check_encode(&t, "aba", 1, 0, (int[]){1, 8, 7}, 3, "highest score first");
    check_encode(&t, "aba", 0, 1, (int[]){8, 7, 2}, 3, "eos only");
    check_encode(&t, "", 1, 1, (int[]){1, 2}, 2, "empty text");
    check_encode(&t, "", 0, 0, NULL, 0, "empty text, no bos/eos");
    check_encode(&t, "b", 0, 0, (int[]){3, 5}, 2, "dummy prefix");
    ml_tokenizer_free(&t);

    /* Tie: ab and ba both score 1 -> the leftmost pair wins. "abab" -> ab ab. */
    float tie[] = {0, 0, 0, -10, -10, -10, 1, 1, -50, -100};
    CHECK(load_pieces(&t, pieces, tie, &err) == ML_OK, "load: %s", err.msg);
    check_encode(&t, "abab", 0, 0, (int[]){3, 6, 6}, 3, "tie -> leftmost");
    check_encode(&t, "bab", 0, 0, (int[]){3, 7, 5}, 3, "tie -> leftmost (ba)");
    /* the merged piece joins again: "aba" only when ab+a is in the vocab and best */
    ml_tokenizer_free(&t);

    float chain[] = {0, 0, 0, -10, -10, -10, 1, -20, -50, 5};
    CHECK(load_pieces(&t, pieces, chain, &err) == ML_OK, "load: %s", err.msg);
    check_encode(&t, "aba", 0, 0, (int[]){3, 9}, 2, "merged piece merges again (ab+a)");
    ml_tokenizer_free(&t);

    /* Byte fallback by name (ids are not b + 3), missing byte pieces -> <unk>,
     * fallback bytes never merge, a piece-less space falls back too. */
    const char *bp[] = {"<unk>", "<s>", "</s>", "x", "<0xA9>", "<0xC3>", "\xc3\xa9", "<0x20>", NULL};
    CHECK(load_pieces(&t, bp, NULL, &err) == ML_OK, "load: %s", err.msg);
    check_encode(&t, "x\xc3\xa9", 0, 0, (int[]){7, 3, 6}, 3, "known 2-byte char, no ' ' piece");
    check_encode(&t, "\xc3\xbc", 0, 0, (int[]){7, 5, 0}, 3, "u-umlaut: <0xC3> then missing -> unk");
    size_t len;
    const char *p = ml_tokenizer_decode(&t, 0, 5, &len);
    CHECK(p && len == 1 && (unsigned char)p[0] == 0xC3, "decode <0xC3> -> raw byte");
    p = ml_tokenizer_decode(&t, 1, 7, &len);
    CHECK(p && len == 1 && p[0] == ' ', "decode <0x20> after BOS stays a space byte");
    ml_tokenizer_free(&t);

    const char *nob[] = {"<unk>", "<s>", "</s>", " ", "q", NULL};
    CHECK(load_pieces(&t, nob, NULL, &err) == ML_OK, "load: %s", err.msg);
    check_encode(&t, "q\xe4\xb8\xad", 0, 0, (int[]){3, 4, 0, 0, 0}, 5, "no byte pieces -> unk");
    p = ml_tokenizer_decode(&t, 1, 3, &len);
    CHECK(p && len == 0, "decode ' ' after BOS -> empty");
    p = ml_tokenizer_decode(&t, 4, 3, &len);
    CHECK(p && len == 1 && p[0] == ' ', "decode ' ' elsewhere -> ' '");
    CHECK(!ml_tokenizer_decode(&t, 0, -1, &len) && len == 0, "decode -1 -> NULL");
    CHECK(!ml_tokenizer_decode(&t, 0, 5, &len), "decode vocab -> NULL");
    CHECK(!ml_tokenizer_decode(&t, 0, 1 << 30, &len), "decode 2^30 -> NULL");
    ml_tokenizer_free(&t);

    const char *tiny[] = {"<unk>", "a", NULL};
    CHECK(load_pieces(&t, tiny, NULL, &err) == ML_OK, "load: %s", err.msg);
    int ids[8], n;
    CHECK(ml_tokenizer_encode(&t, "a", 1, 0, ids, &n, &err) == ML_E_ARG, "bos with vocab 2: %s",
          ml_status_name(ml_tokenizer_encode(&t, "a", 1, 0, ids, &n, &err)));
    ml_tokenizer_free(&t);
    CHECK(ml_tokenizer_encode(&t, "a", 0, 0, ids, &n, &err) == ML_E_ARG, "encode after free");
    CHECK(ml_tokenizer_max_tokens("") == 3 && ml_tokenizer_max_tokens("abc") == 6, "max_tokens");
    GROUP_DONE("encode/decode rules on hand-made vocabularies", f0);
}

/* Random small vocabularies over "ab c" with scores drawn from 0..3 (ties
 * everywhere, merged pieces that beat their parts, spaces inside pieces),
 * against the oracle on random strings. */
static void test_random_vocabs(void) {
    int f0 = tl_failed;
    unsigned rng = 777u;
#define RND(n) ((rng = rng * 1103515245u + 12345u), (rng >> 16) % (unsigned)(n))
    static const char alpha[] = "ab c";
    int bad = 0, total = 0;
    for (int v = 0; v < 100; v++) {
        static char store[200][8];
        const char *pieces[201];
        float scores[200];
        int n = 0;
        /* c is never a piece (byte fallback); " " is one only in even vocabs. */
        const char *fixed[] = {"<unk>", "<s>", "</s>", "a", "b", v % 2 ? "<0x20>" : " ", "<0x63>"};
        for (int i = 0; i < 7; i++) pieces[n] = fixed[i], scores[n++] = -100;
        while (n < 7 + 40) {
            int len = 2 + (int)RND(4);
            for (int i = 0; i < len; i++) store[n][i] = alpha[RND(4)];
            store[n][len] = 0;
            int dup = 0;
            for (int i = 0; i < n; i++) dup |= !strcmp(pieces[i], store[n]);
            if (dup) continue;
            pieces[n] = store[n];
            scores[n++] = (float)RND(4);
        }
        pieces[n] = NULL;
        ml_tokenizer t;
        ml_err err = {{0}};
        if (load_pieces(&t, pieces, scores, &err) != ML_OK) {
            CHECK(0, "random vocab %d: %s", v, err.msg);
            continue;
        }
        for (int k = 0; k < 200; k++) {
            char text[128];
            int len = (int)RND(100);
            for (int i = 0; i < len; i++) text[i] = alpha[RND(4)];
            text[len] = 0;
            int got[140], want[140], ng;
            int nw = oracle_encode(&t, text, want);
            total++;
            if (ml_tokenizer_encode(&t, text, 0, 0, got, &ng, &err) != ML_OK || !same_ids(got, ng, want, nw)) {
                if (!bad) printf("    first difference: vocab %d, text \"%s\"\n", v, text);
                bad++;
            }
        }
        ml_tokenizer_free(&t);
        oracle_t = NULL;
    }
#undef RND
    CHECK(bad == 0, "%d of %d strings differ from the oracle", bad, total);
    GROUP_DONE("100 random tie-heavy vocabularies: encode == slow llama2.c-style oracle", f0);
}

/* ---- real vocabularies ------------------------------------------------------ */

typedef struct { const char *text; int ids[64]; } known_case; /* ids end at 0 */

/* Expected ids: produced once by `python3 tests/tokenizer_ref.py`, an
 * independent HF-style BPE over stories260K-hf/tokenizer.json and
 * llama2-tokenizer/tokenizer.json (vocab + merges ranks, byte fallback),
 * which its --check mode confirms against a llama2.c-style encoder. */
static const known_case TOK512[] = {
    {"Once upon a time", {1, 403, 407, 261, 378}},
    {"Hello, world! It's 2024: 3.14 + 42 = 45.14?", {1, 346, 306, 414, 432, 263, 304, 341, 443, 359, 413, 439, 419, 410, 479, 477, 479, 484, 467, 410, 472, 426, 475, 484, 410, 496, 410, 484, 479, 410, 64, 410, 484, 480, 426, 475, 484, 450}},
    {"caf\303\251 \344\270\255\346\226\207 \360\237\230\200", {1, 280, 412, 431, 485, 410, 231, 187, 176, 233, 153, 138, 410, 243, 162, 155, 131}},
    {"two  spaces and   three", {1, 259, 424, 414, 410, 262, 427, 412, 331, 419, 269, 410, 410, 308, 276, 411}},
    {" leading space", {1, 410, 278, 411, 380, 299, 262, 427, 412, 331}},
    {"Lily said, \"Let's play!\"\nThe end.", {1, 317, 336, 432, 313, 438, 316, 439, 419, 337, 443, 436, 13, 434, 260, 344, 264, 426}},
    {"    if x:\n        return   y\011# five     spaces", {1, 410, 410, 410, 410, 410, 417, 431, 410, 444, 467, 13, 410, 410, 410, 410, 410, 410, 410, 410, 276, 413, 425, 420, 416, 410, 410, 348, 12, 38, 272, 417, 360, 410, 410, 410, 410, 262, 427, 412, 331, 419}},
};
static const known_case LLAMA2[] = {
    {"Once upon a time", {1, 9038, 2501, 263, 931}},
    {"Hello, world! It's 2024: 3.14 + 42 = 45.14?", {1, 15043, 29892, 3186, 29991, 739, 29915, 29879, 29871, 29906, 29900, 29906, 29946, 29901, 29871, 29941, 29889, 29896, 29946, 718, 29871, 29946, 29906, 353, 29871, 29946, 29945, 29889, 29896, 29946, 29973}},
    {"caf\303\251 \344\270\255\346\226\207 \360\237\230\200", {1, 274, 28059, 29871, 30275, 30333, 29871, 243, 162, 155, 131}},
    {"two  spaces and   three", {1, 1023, 29871, 8162, 322, 259, 2211}},
    {" leading space", {1, 29871, 8236, 2913}},
    {"Lily said, \"Let's play!\"\nThe end.", {1, 365, 2354, 1497, 29892, 376, 12024, 29915, 29879, 1708, 3850, 13, 1576, 1095, 29889}},
    {"    if x:\n        return   y\011# five     spaces", {1, 268, 565, 921, 29901, 13, 4706, 736, 259, 343, 12, 29937, 5320, 268, 8162}},
};

static void test_known_ids(const ml_tokenizer *t, const char *name, const known_case *cases,
                           int n_cases) {
    int f0 = tl_failed;
    for (int c = 0; c < n_cases; c++) {
        int nw = 0;
        while (nw < 64 && cases[c].ids[nw]) nw++;
        int n;
        ml_status s;
        int *ids = encode(t, cases[c].text, 1, 0, &n, &s);
        int same = s == ML_OK && same_ids(ids, n, cases[c].ids, nw);
        CHECK(same, "%s: \"%s\": %d ids, expected %d", name, cases[c].text, n, nw);
        if (!same && s == ML_OK) {
            printf("    got     ");
            for (int i = 0; i < n; i++) printf(" %d", ids[i]);
            printf("\n    expected");
            for (int i = 0; i < nw; i++) printf(" %d", cases[c].ids[i]);
            printf("\n");
        }
        free(ids);
    }
    char what[96];
    snprintf(what, sizeof what, "%s: known ids from the HF tokenizer.json reference", name);
    GROUP_DONE(what, f0);
}

static const char *ROUNDTRIP[] = {
    "Once upon a time",
    "Hello, world! It's 2024: 3.14 + 42 = 45.14?",
    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xe2\x80\x8a!",
    "two  spaces and   three ",
    " leading space",
    "\n\nnew lines\tand tabs\n",
    "<s> </s> <0x41> <unk>",
    "\xff\xfe bad \x80 bytes \xc3( \xe4\xb8 \xf0\x9f\x98 end \xe4\xb8", /* invalid UTF-8 */
    "\xc0\xaf \xed\xa0\x80 \xf8\x88\x80\x80\x80",                          /* overlong, surrogate, 5-byte */
    "x",
    " ",
};

/* For a vocabulary without byte pieces (poem_tok): text it fully covers. */
static const char *ROUNDTRIP_POEM[] = {
    /* "theme: bright moon  form: five-character quatrain\n" (the model's prompt format) */
    ("\xe4\xb8\xbb\xe9\xa2\x98\xef\xbc\x9a\xe6\x98\x8e\xe6\x9c\x88 "
     "\xe4\xbd\x93\xe8\xa3\x81\xef\xbc\x9a\xe4\xba\x94\xe7\xbb\x9d\n"),
    "\xe6\x98\xa5\xe7\x9c\xa0\xe4\xb8\x8d\xe8\xa7\x89\xe6\x99\x93", /* spring sleep ... */
    "2024 12",
};

static void test_roundtrip(const ml_tokenizer *t, const char *name) {
    int f0 = tl_failed;
    static char out[1 << 16];
    int has_bytes = t->byte_id[0x80] != ML_TOK_UNK;
    const char *const *cases = has_bytes ? ROUNDTRIP : ROUNDTRIP_POEM;
    size_t n_cases = has_bytes ? sizeof ROUNDTRIP / sizeof *ROUNDTRIP
                               : sizeof ROUNDTRIP_POEM / sizeof *ROUNDTRIP_POEM;
    for (size_t c = 0; c < n_cases; c++) {
        const char *s = cases[c];
        size_t sl = strlen(s);
        int n;
        ml_status st;
        /* With BOS: the dummy-prefix space is dropped after it -> exactly s. */
        int *ids = encode(t, s, 1, 1, &n, &st);
        CHECK(st == ML_OK && n >= 2 && ids[0] == 1 && ids[n - 1] == 2, "%s: encode #%zu", name, c);
        if (st == ML_OK) {
            size_t m = decode_all(t, ids, 1, n - 1, out, sizeof out);
            CHECK(m == sl && memcmp(out, s, sl) == 0, "%s: decode(encode(#%zu)) != text (%zu vs %zu bytes)",
                  name, c, m, sl);
            CHECK((size_t)n <= ml_tokenizer_max_tokens(s), "%s: #%zu: %d ids > max_tokens", name, c, n);
            for (int i = 0; i < n; i++)
                CHECK(ids[i] >= 0 && ids[i] < ml_tokenizer_vocab(t), "%s: id %d out of range", name, ids[i]);
        }
        free(ids);
        /* Without BOS: " " + s. */
        ids = encode(t, s, 0, 0, &n, &st);
        if (st == ML_OK) {
            size_t m = decode_all(t, ids, 0, n, out, sizeof out);
            CHECK(m == sl + 1 && out[0] == ' ' && memcmp(out + 1, s, sl) == 0,
                  "%s: decode(encode(#%zu)) without BOS != \" \" + text", name, c);
        }
        free(ids);
    }
    char what[96];
    snprintf(what, sizeof what, "%s: decode(encode(s)) == s%s", name,
             has_bytes ? ", incl. invalid UTF-8" : " (no byte pieces: covered text only)");
    GROUP_DONE(what, f0);
}

/* Random mixes of words, spaces, multi-byte and broken UTF-8: the fast
 * encoder must give exactly the slow oracle's ids. */
static void test_vs_oracle(const ml_tokenizer *t, const char *name, int n_strings) {
    int f0 = tl_failed;
    static const char *frag[] = {
        " ", "  ", "    ", "a", "e", "the", " the", "Once", " upon", "ing", "Lily", " said",
        ",", ".", "!", "1", "42", "\n", "\t", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
        "\xff", "\x80", "\xe4\xb8", "\xc3", "q", "zz", "aaaa", "ll", "er", "'s"};
    const int nf = (int)(sizeof frag / sizeof *frag);
    unsigned rng = 12345u;
    static char text[4096];
    static int got[4200], want[4200];
    int bad = 0;
    for (int k = 0; k < n_strings; k++) {
        size_t at = 0;
        rng = rng * 1103515245u + 12345u;
        int parts = 1 + (int)((rng >> 16) % (k % 20 == 19 ? 300 : 24)); /* some ~1 KB */
        for (int i = 0; i < parts; i++) {
            rng = rng * 1103515245u + 12345u;
            const char *f = frag[(rng >> 16) % (unsigned)nf];
            memcpy(text + at, f, strlen(f));
            at += strlen(f);
        }
        text[at] = 0;
        int n, nw = oracle_encode(t, text, want);
        ml_err err = {{0}};
        if (ml_tokenizer_encode(t, text, 0, 0, got, &n, &err) != ML_OK || !same_ids(got, n, want, nw))
            bad++;
    }
    CHECK(bad == 0, "%s: %d of %d random strings differ from the llama2.c-style oracle", name, bad,
          n_strings);
    char what[96];
    snprintf(what, sizeof what, "%s: %d random strings == slow llama2.c-style oracle", name, n_strings);
    GROUP_DONE(what, f0);
}

static void test_long(const ml_tokenizer *t, const char *name) {
    int f0 = tl_failed;
    static const char *unit[] = {
        "Once upon a time, there was a little girl named Lily. She loved to play outside. ",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe7\xac\xa6\xe6\x98\x8e\xe6\x9c\x88",
        "                                                                                ",
    };
    const size_t size = 20 * 1024;
    char *text = malloc(size + 1);
    static char out[20 * 1024 + 64];
    for (size_t u = 0; u < sizeof unit / sizeof *unit; u++) {
        size_t at = 0, ul = strlen(unit[u]);
        while (at + ul <= size) {
            memcpy(text + at, unit[u], ul);
            at += ul;
        }
        text[at] = 0;
        clock_t c0 = clock();
        int n;
        ml_status s;
        int *ids = encode(t, text, 1, 0, &n, &s);
        double sec = (double)(clock() - c0) / CLOCKS_PER_SEC;
        CHECK(s == ML_OK, "%s: long text #%zu", name, u);
        /* Generous: ~0.1 s here; leaves room for sanitizers and emulators. */
        CHECK(sec < 20.0, "%s: %zu-byte text #%zu took %.2f s", name, at, u, sec);
        printf("    %s: %zu bytes (pattern %zu) -> %d tokens in %.3f s\n", name, at, u, n, sec);
        if (s == ML_OK && t->byte_id[0x80] != ML_TOK_UNK) { /* poem_tok lacks Latin letters */
            size_t m = decode_all(t, ids, 1, n, out, sizeof out);
            CHECK(m == at && memcmp(out, text, at) == 0, "%s: long text #%zu round trip", name, u);
        }
        free(ids);
    }
    free(text);
    char what[96];
    snprintf(what, sizeof what, "%s: 20 KB texts encode quickly and round-trip", name);
    GROUP_DONE(what, f0);
}

static void test_truncated_copy(const char *path, int vocab) {
    int f0 = tl_failed;
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 100, "read %s", path);
    size_t cuts[] = {n - 1, n - 7, n / 2, 5, 4};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char tmp[32];
        ml_tokenizer t;
        ml_err err = {{0}};
        CHECK(write_temp(tmp, buf, cuts[i]), "write temp");
        ml_status s = ml_tokenizer_load(&t, tmp, vocab, &err);
        unlink(tmp);
        CHECK(s == ML_E_FORMAT, "%s cut to %zu bytes: %s, expected ML_E_FORMAT", path, cuts[i],
              ml_status_name(s));
        if (i == 0) printf("    e.g. %s\n", err.msg);
    }
    GROUP_DONE("truncated copies of tok512.bin -> ML_E_FORMAT", f0);
}

int ml_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_load_errors();
    test_merge_rules();
    test_random_vocabs();

    const char *models = models_dir();
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K/tok512.bin", models);
    if (!exists(path)) {
        SKIP("real-vocabulary tests: %s not found (set MODELS to the models folder)", path);
        return tl_summary();
    }
    static const struct { const char *file; int vocab; const char *name; } tk[] = {
        {"stories260K/tok512.bin", 512, "tok512"},
        {"llama2-tokenizer/tokenizer.bin", 32000, "llama2"},
        {"zh-poem-750K/poem_tok.bin", 2048, "poem_tok"},
        {"aidreams260K/tok512.bin", 512, "aidreams tok512"},
    };
    for (size_t i = 0; i < sizeof tk / sizeof *tk; i++) {
        snprintf(path, sizeof path, "%s/%s", models, tk[i].file);
        if (!exists(path)) {
            SKIP("%s: %s not found", tk[i].name, path);
            continue;
        }
        ml_tokenizer t;
        ml_err err = {{0}};
        ml_status s = ml_tokenizer_load(&t, path, tk[i].vocab, &err);
        CHECK(s == ML_OK && ml_tokenizer_vocab(&t) == tk[i].vocab, "load %s: %s", path, err.msg);
        if (s != ML_OK) continue;
        if (i == 0) test_known_ids(&t, tk[i].name, TOK512, (int)(sizeof TOK512 / sizeof *TOK512));
        if (i == 1) test_known_ids(&t, tk[i].name, LLAMA2, (int)(sizeof LLAMA2 / sizeof *LLAMA2));
        test_roundtrip(&t, tk[i].name);
        test_vs_oracle(&t, tk[i].name, 2000);
        oracle_t = NULL;
        test_long(&t, tk[i].name);
        ml_tokenizer_free(&t);

        /* The same file against another model's vocab. */
        int f0 = tl_failed, other = tk[i].vocab == 32000 ? 512 : 32000;
        s = ml_tokenizer_load(&t, path, other, &err);
        char want[96];
        snprintf(want, sizeof want, "has %d tokens, model vocab is %d", tk[i].vocab, other);
        CHECK(s == ML_E_FORMAT && strstr(err.msg, want), "%s with vocab %d: %s (%s)", tk[i].name,
              other, ml_status_name(s), err.msg);
        snprintf(want, sizeof want, "%s: wrong model vocab -> ML_E_FORMAT", tk[i].name);
        GROUP_DONE(want, f0);
    }
    snprintf(path, sizeof path, "%s/stories260K/tok512.bin", models);
    test_truncated_copy(path, 512);
    snprintf(path, sizeof path, "%s/stories260K", models);
    int f0 = tl_failed;
    ml_tokenizer t;
    ml_err err = {{0}};
    CHECK(ml_tokenizer_load(&t, path, 512, &err) == ML_E_IO, "model folder as a file: %s", err.msg);
    CHECK(strstr(err.msg, path) != NULL, "message names the path: %s", err.msg);
    GROUP_DONE("a model folder given as the tokenizer -> ML_E_IO", f0);
    return tl_summary();
}
