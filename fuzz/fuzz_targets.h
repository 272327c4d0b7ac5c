/* The bodies of the fuzz targets, shared by the libFuzzer entry points
 * (fuzz/fuzz_<target>.c, built by `make fuzz`) and by the regression replay
 * in the normal test build (tests/test_fuzz_regress.c, which runs every file
 * of fuzz/regress/<target>/ and fuzz/corpus/<target>/ through them).
 *
 *   mlb         .mlb bytes -> ml_model_open (file path API on a memfd), then
 *               ml_generate over the whole (capped) context on what loads
 *   tok_load    u32 vocab, then tokenizer.bin bytes -> ml_tokenizer_load,
 *               then encode/decode with the tokenizer that loaded
 *   tok_encode  arbitrary bytes (up to the first NUL) -> encode with a
 *               built-in vocab and, if present, stories260K's tok512.bin;
 *               decode must give the text back
 *   cli         NUL-separated arguments -> ml_run_parse_args
 *   gguf        a GGUF file -> ml_gguf_parse (every string and tensor touched),
 *               then ml_gguf_convert (path API on a memfd) into a temporary
 *               .mlb, which must then load with its embedded tokenizer
 *   json        any bytes -> ml_json_parse (app/json.c, ml_server's bodies):
 *               every string that parses is valid UTF-8 of its stated length,
 *               and ml_json_put_string writes it back
 *   http        any bytes -> ml_http_parse (app/http.c, ml_server's request
 *               heads): a head never runs past the input, a refusal has a
 *               4xx/5xx status and a reason
 *   bpe         a BPE tokenizer file (it starts with "MLBP") -> ml_bpe_load_buffer,
 *               then encode fixed texts with what loaded; any other bytes are
 *               text, encoded with a built-in BPE vocab under each
 *               pre-tokenizer and under qwen2's NFC: the ids' bytes must
 *               give the text back (under NFC, a text of the same NFC)
 *   chat        a chat_template (up to the first NUL), an options byte, then
 *               NUL-separated messages (first byte 's' system, 'a' assistant,
 *               else user) -> ml_chat_kind_detect / _choose, ml_chat_init over
 *               a built-in vocab, ml_chat_use_template_defaults, ml_chat_render
 *               within ml_chat_max_tokens (a smaller buffer is refused), and
 *               turn by turn, which must give the whole render's ids
 *
 * A broken invariant calls FUZZ_FAIL(msg): abort() under libFuzzer, a
 * counted failure in the replay. Nothing here prints on success. */
#ifndef ML_FUZZ_TARGETS_H
#define ML_FUZZ_TARGETS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/http.h"
#include "app/json.h"
#include "app/exit_codes.h"
#include "model/generate.h"
#include "model/gguf.h"
#include "model/gguf_mlb.h"
#include "model/mlb.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/bpe.h"
#include "model/chat.h"
#include "model/nfc.h"
#include "model/tokenizer.h"
#include "model/tok.h"

#ifndef FUZZ_FAIL
#define FUZZ_FAIL(msg)                                              \
    do {                                                            \
        fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", msg, \
                __FILE__, __LINE__);                                \
        abort();                                                    \
    } while (0)
#endif
#define FUZZ_ASSERT(cond, msg) \
    do {                       \
        if (!(cond)) FUZZ_FAIL(msg); \
    } while (0)

/* ---- the input as a file: a memfd, named by /proc/self/fd/N, so the
 * library's own path API (stat, fopen, mmap) reads it; no disk I/O. ---- */
static inline int fuzz_memfd(const uint8_t *d, size_t n, char *path, size_t cap) {
    int fd = memfd_create("ml_fuzz", 0);
    if (fd < 0) return -1;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, d + done, n - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

/* ---- mlb ---------------------------------------------------------------- */
static inline void fuzz_mlb(const uint8_t *d, size_t n) {
    char path[64];
    int fd = fuzz_memfd(d, n, path, sizeof path);
    if (fd < 0) return;
    ml_model m;
    ml_err err = {{0}};
    /* -c 16 keeps a huge max_seq from asking for gigabytes: the cap is what
     * ml_run -c does; the header's own range checks still run. Odd sizes
     * take the read fallback instead of mmap. */
    ml_open_opts oo = {.use_mmap = (int)(~n & 1), .max_seq = 16, .n_threads = 1};
    ml_status s = ml_model_open(&m, path, &oo, &err);
    FUZZ_ASSERT(s < ML_STATUS_COUNT, "unknown status");
    FUZZ_ASSERT(memchr(err.msg, 0, sizeof err.msg), "error message not terminated");
    if (s != ML_OK) {
        FUZZ_ASSERT(err.msg[0], "failure without a message");
    } else {
        const ml_config *c = &m.cfg;
        /* the weights end the file, or the last section (version 2) does */
        size_t end = m.weight_bytes + ML_MLB_HEADER_BYTES;
        if (m.tokenizer.len) end = (size_t)(m.tokenizer.data - m.file.data) + m.tokenizer.len;
        if (m.chat_template.len) end = (size_t)(m.chat_template.data - m.file.data) + m.chat_template.len;
        FUZZ_ASSERT(end == n, "weights (or the last section) do not end the file");
        FUZZ_ASSERT(!memchr(m.chat_template.data ? (const void *)m.chat_template.data : "", 0, m.chat_template.len),
                    "a chat template with a NUL loaded");
        if (m.tokenizer.len) { /* the embedded tokenizer, as ml_run reads it */
            ml_tok t;
            ml_err terr = {{0}};
            if (ml_tok_load_or_embedded(&t, NULL, m.tokenizer.data, m.tokenizer.len, c->vocab, &terr) == ML_OK)
                ml_tok_free(&t);
            else
                FUZZ_ASSERT(terr.msg[0], "embedded tokenizer refused without a message");
        }
        FUZZ_ASSERT(c->max_seq >= 1 && c->max_seq <= 16, "context cap ignored");
        /* Whatever loaded must run (or refuse overflowing weights cleanly):
         * a forced token, then sampled ones, to the end of the context. */
        ml_sampler smp;
        ml_sampler_init(&smp, c->vocab, 0.8f, 0.9f, n + 1, m.s.sampler_scratch);
        int prompt[2] = {0, c->vocab - 1}, n_pos = 0;
        s = ml_generate(&m, &smp, prompt, 2 <= c->max_seq ? 2 : 1, c->max_seq, NULL, &n_pos, &err);
        FUZZ_ASSERT(s == ML_OK || (s == ML_E_FORMAT && strstr(err.msg, "not finite")),
                    "generate failed on a model that loaded");
        FUZZ_ASSERT(n_pos >= (s == ML_OK) && n_pos <= c->max_seq, "positions run");
        ml_model_close(&m);
    }
    close(fd);
}

/* ---- tokenizers ------------------------------------------------------------ */

/* Encode text with t and check the ids; with roundtrip, decoding them must
 * give the text back (true when every byte has a "<0xNN>" piece and " " is
 * a piece, as in both tokenizers of fuzz_tok_encode). */
static inline void fuzz_encode_check(const ml_tokenizer *t, const char *text, int roundtrip) {
    size_t cap = ml_tokenizer_max_tokens(text), len = strlen(text);
    int *ids = malloc(cap * sizeof *ids);
    if (!ids) return;
    for (int mode = 0; mode < 2; mode++) { /* bos+eos, then neither */
        int bos = mode == 0, eos = mode == 0, n = -1;
        ml_err err = {{0}};
        ml_status s = ml_tokenizer_encode(t, text, bos, eos, ids, &n, &err);
        if (t->vocab <= ML_TOK_EOS && bos) {
            FUZZ_ASSERT(s == ML_E_ARG, "BOS/EOS accepted without their ids");
            continue;
        }
        FUZZ_ASSERT(s == ML_OK, "encode failed");
        FUZZ_ASSERT(n >= 0 && (size_t)n <= cap, "token count out of range");
        for (int i = 0; i < n; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < t->vocab, "id out of range");
        if (bos) FUZZ_ASSERT(n >= 2 && ids[0] == ML_TOK_BOS && ids[n - 1] == ML_TOK_EOS, "BOS/EOS");
        if (!roundtrip || !bos) continue;
        size_t at = 0;
        int ok = 1;
        for (int i = 1; i < n - 1 && ok; i++) {
            size_t pl = 0;
            const char *p = ml_tokenizer_decode(t, ids[i - 1], ids[i], &pl);
            if (!p || at + pl > len || memcmp(text + at, p, pl)) ok = 0;
            else at += pl;
        }
        FUZZ_ASSERT(ok && at == len, "decode(encode(text)) != text");
    }
    free(ids);
}

/* tok_load: u32 vocab (little-endian), then the tokenizer.bin bytes. */
static inline void fuzz_tok_load(const uint8_t *d, size_t n) {
    if (n < 4) return;
    uint32_t v32;
    memcpy(&v32, d, 4);
    int vocab = (int)(v32 & 0x1FFFFFu); /* up to 2^21: also past ML_TOK_MAX_VOCAB */
    char path[64];
    int fd = fuzz_memfd(d + 4, n - 4, path, sizeof path);
    if (fd < 0) return;
    ml_tokenizer t;
    ml_err err = {{0}};
    ml_status s = ml_tokenizer_load(&t, path, vocab, &err);
    FUZZ_ASSERT(memchr(err.msg, 0, sizeof err.msg), "error message not terminated");
    if (s != ML_OK) {
        FUZZ_ASSERT(err.msg[0], "failure without a message");
        FUZZ_ASSERT(t.pieces == NULL && t.scores == NULL, "failed load left memory");
    } else {
        FUZZ_ASSERT(t.vocab == vocab, "vocab");
        for (int i = -1; i <= vocab; i++) {
            size_t pl = 7;
            const char *p = ml_tokenizer_decode(&t, i > 0 ? i - 1 : ML_TOK_BOS, i, &pl);
            FUZZ_ASSERT((p != NULL) == (i >= 0 && i < vocab), "decode range");
            FUZZ_ASSERT(p || pl == 0, "decode length of an invalid id");
        }
        static const char *const texts[] = {"", " ", "a", "Once upon a time", "\xff\xfe\x80",
                                            "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80", "aaaaaaaaaaaaaaaa"};
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) fuzz_encode_check(&t, texts[i], 0);
        /* The file's own bytes as text: they contain the pieces. */
        char text[257];
        size_t tl = n - 4 < 256 ? n - 4 : 256;
        memcpy(text, d + 4, tl);
        text[tl] = 0;
        fuzz_encode_check(&t, text, 0);
        ml_tokenizer_free(&t);
    }
    close(fd);
}

/* A small vocab with every byte piece, ASCII, UTF-8 pieces, merges of
 * equal scores (ties) and pieces reachable only through a chain of merges. */
static inline size_t fuzz_builtin_tokenizer(uint8_t *buf, size_t cap, int *vocab) {
    static const char *const words[] = {
        "  ", "   ", " t", " th", " the", "he", "the", "an", " an", " and", "in", "ing", " in",
        "aa", "aaa", "aaaa", "ab", "ba", "abab", "\xc3\xa9", "\xe4\xb8\xad", "\xe4\xb8\xad\xe6\x96\x87",
        "\xe6\x96\x87", " \xe4\xb8\xad", "\xf0\x9f\x98\x80", "<0x41>x", "\n\n", " \n", "e ", "xyz"};
    size_t at = 4;
    int n = 0, maxlen = 0;
#define FUZZ_PUT(str, len, score)                                  \
    do {                                                           \
        float sc_ = (score);                                       \
        uint32_t l_ = (uint32_t)(len);                             \
        if (at + 8 + l_ > cap) return 0;                           \
        memcpy(buf + at, &sc_, 4);                                 \
        memcpy(buf + at + 4, &l_, 4);                              \
        memcpy(buf + at + 8, (str), l_);                           \
        at += 8 + l_;                                              \
        n++;                                                       \
        if ((int)l_ > maxlen) maxlen = (int)l_;                    \
    } while (0)
    FUZZ_PUT("<unk>", 5, 0.0f);
    FUZZ_PUT("\n<s>\n", 5, 0.0f);
    FUZZ_PUT("\n</s>\n", 6, 0.0f);
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        FUZZ_PUT(name, 6, 0.0f);
    }
    for (int ch = 0x20; ch < 0x7f; ch++) {
        char one = (char)ch;
        FUZZ_PUT(&one, 1, -1000.0f - (float)ch);
    }
    FUZZ_PUT("\n", 1, -2000.0f);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        FUZZ_PUT(words[i], strlen(words[i]), (float)(-(int)(i % 7))); /* ties on purpose */
#undef FUZZ_PUT
    uint32_t ml = (uint32_t)maxlen;
    memcpy(buf, &ml, 4);
    *vocab = n;
    return at;
}

typedef struct {
    ml_tokenizer tok[2];
    int n;
} fuzz_tokenizers;

/* The built-in vocab, and $MODELS/stories260K/tok512.bin when it exists. */
static inline void fuzz_tokenizers_load(fuzz_tokenizers *ft) {
    static uint8_t buf[8192];
    int vocab = 0;
    size_t n = fuzz_builtin_tokenizer(buf, sizeof buf, &vocab);
    char path[64];
    int fd = fuzz_memfd(buf, n, path, sizeof path);
    ft->n = 0;
    if (fd >= 0) {
        if (ml_tokenizer_load(&ft->tok[ft->n], path, vocab, NULL) == ML_OK) ft->n++;
        close(fd);
    }
    const char *models = getenv("MODELS");
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/stories260K/tok512.bin", models ? models : "../shared/models");
    if (access(tpath, R_OK) == 0 && ml_tokenizer_load(&ft->tok[ft->n], tpath, 512, NULL) == ML_OK) ft->n++;
}

static inline void fuzz_tokenizers_free(fuzz_tokenizers *ft) {
    for (int i = 0; i < ft->n; i++) ml_tokenizer_free(&ft->tok[i]);
    ft->n = 0;
}

static inline void fuzz_tok_encode(const fuzz_tokenizers *ft, const uint8_t *d, size_t n) {
    char *text = malloc(n + 1);
    if (!text) return;
    memcpy(text, d, n);
    text[n] = 0; /* a C string: the text ends at the first NUL */
    for (int i = 0; i < ft->n; i++) fuzz_encode_check(&ft->tok[i], text, 1);
    free(text);
}

/* ---- bpe -------------------------------------------------------------------- */

/* Do a and b have the same NFC? */
static inline int fuzz_nfc_equal(const char *a, size_t na, const char *b, size_t nb) {
    const unsigned char *ua = (const unsigned char *)a, *ub = (const unsigned char *)b;
    size_t da = ml_nfc_bound(ua, na), db = ml_nfc_bound(ub, nb), w = da > db ? da : db;
    int *work = malloc((2 * w + 1) * sizeof *work);
    unsigned char *oa = malloc(da + 1), *ob = malloc(db + 1);
    int eq = 1;
    if (work && oa && ob) {
        size_t la = ml_nfc(ua, na, work, oa), lb = ml_nfc(ub, nb, work, ob);
        eq = la == lb && !memcmp(oa, ob, la);
    }
    free(work), free(oa), free(ob);
    return eq;
}

/* Encode text (specials on or off) and check that the ids spell it: under
 * NFC, a text of the same NFC (the stretches between specials normalized). */
static inline void fuzz_bpe_check(const ml_bpe *t, const char *text, size_t len, int opts) {
    size_t cap = ml_bpe_max_tokens(t, text, len), n = 0, at = 0;
    int *ids = malloc(cap * sizeof *ids);
    char *spelled = malloc(cap);
    if (!ids || !spelled) {
        free(ids), free(spelled);
        return;
    }
    ml_status s = ml_bpe_encode(t, text, len, opts, ids, cap, &n, NULL);
    /* at most an id a byte of the text as encoded, and bos and eos */
    size_t most = (t->flags & ML_BPE_NFC ? ml_nfc_bound((const unsigned char *)text, len) : len) + 2;
    int ok = s == ML_OK && n <= most;
    for (size_t i = 0; ok && i < n; i++) {
        size_t k = 0;
        const char *p = ml_bpe_token(t, ids[i], &k);
        if ((opts & ML_BPE_EOS) && i + 1 == n && ids[i] == t->eos) break;
        ok = p && k <= cap - at;
        if (ok) memcpy(spelled + at, p, k);
        at += k;
    }
    if (ok) ok = t->flags & ML_BPE_NFC ? fuzz_nfc_equal(spelled, at, text, len) : at == len && !memcmp(spelled, text, len);
    free(ids), free(spelled);
    FUZZ_ASSERT(ok, "BPE ids do not spell the text");
}

/* The built-in vocab: the 256 bytes, then merges of a few pieces, and two
 * specials (control "<|end|>", user-defined "<t>"); *n its size. */
static inline void fuzz_bpe_builtin(uint8_t *f, size_t *n, int pre, uint32_t flags) {
    static const char *const extra[][3] = {/* token, left, right (ids as text) */
        {"th", "t", "h"}, {"the", "th", "e"}, {" t", " ", "t"}, {"he", "h", "e"}, {" the", " t", "he"},
        {"\xe4\xbd", "\xe4", "\xbd"}, {"12", "1", "2"}, {"  ", " ", " "}, {"<|end|>", 0, 0}, {"<t>", 0, 0}};
    const int n_extra = (int)(sizeof extra / sizeof *extra), n_tok = 256 + n_extra;
    uint32_t head[12] = {0, 1, (uint32_t)pre, flags, (uint32_t)n_tok, 0, (uint32_t)-1, (uint32_t)n_tok - 2,
                         (uint32_t)n_tok - 2, 0, 0, 0};
    memcpy(head, "MLBP", 4);
    size_t at = sizeof head;
    for (int i = 0; i < n_tok; i++) {
        char byte = (char)i;
        const char *t = i < 256 ? &byte : extra[i - 256][0];
        uint32_t len = i < 256 ? 1 : (uint32_t)strlen(t);
        uint32_t type = i < 256 || extra[i - 256][1] ? ML_BPE_NORMAL : i == n_tok - 2 ? ML_BPE_CONTROL : ML_BPE_USER;
        memcpy(f + at, &len, 4), memcpy(f + at + 4, &type, 4), memcpy(f + at + 8, t, len);
        at += 8 + len;
    }
    for (int i = 0; i < n_extra && extra[i][1]; i++, head[5]++) {
        uint32_t m[3] = {0, 0, 256 + (uint32_t)i};
        for (int side = 0; side < 2; side++) { /* a one-byte piece is its byte, else an earlier extra */
            const char *p = extra[i][1 + side];
            m[side] = (unsigned char)p[0];
            for (int k = 0; k < i && p[1]; k++)
                if (!strcmp(extra[k][0], p)) m[side] = 256 + (uint32_t)k;
        }
        memcpy(f + at, m, sizeof m);
        at += sizeof m;
    }
    memcpy(f, head, sizeof head);
    *n = at;
}

static inline void fuzz_bpe(const uint8_t *d, size_t n) {
    ml_bpe t;
    if (ml_bpe_sniff(d, n)) {
        if (ml_bpe_load_buffer(&t, "fuzz", d, n, NULL) != ML_OK) return;
        static const char *const texts[] = {"", "Hello world's  end\n\n 12345 ", "\xe4\xbd\xa0\xff <|im_end|>x"};
        for (int i = 0; i < 3; i++)
            for (int opts = 0; opts < 8; opts++) fuzz_bpe_check(&t, texts[i], strlen(texts[i]), opts);
        ml_bpe_free(&t);
        return;
    }
    static uint8_t f[8192];
    size_t size;
    /* each pre-tokenizer, and qwen2 again with its NFC normalizer */
    for (int pre = 0; pre <= ML_BPE_PRE_COUNT; pre++) {
        fuzz_bpe_builtin(f, &size, pre < ML_BPE_PRE_COUNT ? pre : ML_BPE_PRE_QWEN2, pre < ML_BPE_PRE_COUNT ? 0 : ML_BPE_NFC);
        FUZZ_ASSERT(ml_bpe_load_buffer(&t, "builtin", f, size, NULL) == ML_OK, "the built-in BPE vocab does not load");
        fuzz_bpe_check(&t, (const char *)d, n, 0);
        fuzz_bpe_check(&t, (const char *)d, n, ML_BPE_SPECIAL | ML_BPE_EOS);
        ml_bpe_free(&t);
    }
}

/* ---- gguf ----------------------------------------------------------------- */
static inline void fuzz_gguf(const uint8_t *d, size_t n) {
    ml_gguf g;
    ml_err err = {{0}};
    ml_status s = ml_gguf_parse(&g, d, n, &err);
    FUZZ_ASSERT(s < ML_STATUS_COUNT && memchr(err.msg, 0, sizeof err.msg), "status or message");
    if (s != ML_OK) {
        FUZZ_ASSERT(err.msg[0], "failure without a message");
        return;
    }
    unsigned sum = 0; /* every string and tensor byte the reader points at is in the buffer */
    for (uint64_t i = 0; i < g.n_kv; i++) {
        const ml_gguf_kv *kv = &g.kv[i];
        FUZZ_ASSERT(kv->val >= d && kv->val_bytes <= n - (size_t)(kv->val - d), "value out of the file");
        const unsigned char *at = kv->val;
        if (kv->type == ML_GGUF_ARRAY && kv->arr_type == ML_GGUF_STRING)
            for (uint64_t k = 0; k < kv->arr_n; k++) {
                ml_gguf_str str = ml_gguf_arr_next_str(&at);
                if (str.len) sum += (unsigned char)str.s[str.len - 1];
            }
    }
    for (uint64_t i = 0; i < g.n_tensors; i++)
        if (g.t[i].data) {
            FUZZ_ASSERT(g.t[i].bytes <= n - (size_t)(g.t[i].data - d), "tensor out of the file");
            sum += g.t[i].data[g.t[i].bytes - 1];
        }
    (void)sum;
    ml_gguf_close(&g);
    char path[64], out[96];
    int fd = fuzz_memfd(d, n, path, sizeof path);
    if (fd < 0) return;
    snprintf(out, sizeof out, "/tmp/ml_fuzz_gguf_%d.mlb", (int)getpid());
    s = ml_gguf_convert(path, out, &err);
    FUZZ_ASSERT(s == ML_OK || err.msg[0], "conversion failed without a message");
    if (s == ML_OK) { /* what converts loads, with its tokenizer */
        ml_model m;
        ml_open_opts oo = {.use_mmap = 1, .max_seq = 16, .n_threads = 1};
        s = ml_model_open(&m, out, &oo, &err);
        FUZZ_ASSERT(s == ML_OK || s == ML_E_NOMEM, "a converted GGUF does not load");
        if (s == ML_OK) {
            ml_tok t;
            s = ml_tok_load_or_embedded(&t, NULL, m.tokenizer.data, m.tokenizer.len, m.cfg.vocab, &err);
            FUZZ_ASSERT(s == ML_OK, "a converted GGUF's tokenizer does not load");
            ml_tok_free(&t);
            ml_model_close(&m);
        }
        unlink(out);
    }
    close(fd);
}

/* ---- cli -------------------------------------------------------------------- */
static inline void fuzz_cli(const uint8_t *d, size_t n) {
    enum { MAX_ARGS = 64 };
    char *buf = malloc(n + 1);
    if (!buf) return;
    memcpy(buf, d, n);
    buf[n] = 0;
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "ml_run";
    for (size_t i = 0; i <= n && argc <= MAX_ARGS;) { /* NUL-separated arguments */
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    ml_run_opts o;
    char msg[128];
    memset(msg, 'x', sizeof msg);
    int rc = ml_run_parse_args(argc, argv, &o, msg, sizeof msg);
    FUZZ_ASSERT(rc == ML_CLI_RUN || rc == ML_EXIT_OK || rc == ML_EXIT_USAGE, "return code");
    FUZZ_ASSERT(memchr(msg, 0, sizeof msg), "message not terminated");
    if (rc == ML_EXIT_USAGE) FUZZ_ASSERT(msg[0], "usage error without a message");
    if (rc == ML_CLI_RUN) {
        /* no -z: the model's embedded tokenizer (NULL); no -i: "" */
        FUZZ_ASSERT(o.model && o.prompt, "paths");
        FUZZ_ASSERT(o.steps >= -1 && o.steps <= (1L << 30), "-n range");
        FUZZ_ASSERT(o.threads >= 1 && o.threads <= 256, "-t range");
        FUZZ_ASSERT(o.context >= LML_CONTEXT_MODEL && o.context <= (1L << 30), "-c range");
        FUZZ_ASSERT(o.temperature >= 0.0 && o.temperature <= 1e6, "--temp range");
        FUZZ_ASSERT(o.topp >= 0.0 && o.topp <= 1.0, "--top-p range");
        FUZZ_ASSERT(o.use_mmap == 0 || o.use_mmap == 1 || o.use_mmap == ML_FILE_AUTO, "--no-mmap / --mmap");
        FUZZ_ASSERT(o.top_k >= 0 && o.min_p >= 0.0 && o.min_p <= 1.0, "--top-k / --min-p range");
        FUZZ_ASSERT(o.repeat_penalty > 0.0 && o.repeat_last_n >= -1, "--repeat-penalty / --repeat-last-n range");
        FUZZ_ASSERT(o.n_stops >= 0 && o.n_stops <= ML_STOP_MAX, "--stop count");
        for (int k = 0; k < o.n_stops; k++)
            FUZZ_ASSERT(o.stops[k][0] && strlen(o.stops[k]) <= ML_STOP_MAX_LEN, "--stop length");
        FUZZ_ASSERT(o.lookup >= 0 && o.lookup <= ML_CLI_MAX_DRAFT && o.draft >= 0 && o.draft <= ML_CLI_MAX_DRAFT,
                    "--lookup / --draft range");
        FUZZ_ASSERT(o.draft_model || (!o.draft && !o.draft_tokenizer), "--draft without --draft-model");
        FUZZ_ASSERT(!(o.lookup && o.draft_model), "--lookup with --draft-model");
    }
    free(buf);
}

/* ---- json: ml_server's request bodies ---- */
static inline void fuzz_json(const uint8_t *d, size_t n) {
    static ml_json_node nodes[512];
    static char out[1 << 17];
    char *text = malloc(n + 1);
    if (!text) return;
    memcpy(text, d, n);
    ml_json j = {.nodes = nodes, .cap = 512, .max_depth = 32};
    if (ml_json_parse(&j, text, n) == 0) {
        FUZZ_ASSERT(j.n >= 1 && j.n <= j.cap, "node count out of range");
        for (int k = 0; k < j.n; k++) {
            if (nodes[k].type != ML_JSON_STRING) continue;
            FUZZ_ASSERT(strlen(nodes[k].str) == nodes[k].len, "a string's length is not its strlen");
            FUZZ_ASSERT(ml_utf8_valid(nodes[k].str, nodes[k].len), "a parsed string is not valid UTF-8");
            size_t o = 0;
            FUZZ_ASSERT(nodes[k].len * 6 + 2 > sizeof out || !ml_json_put_string(out, sizeof out, &o, nodes[k].str, nodes[k].len),
                        "put_string failed with room");
        }
        ml_json_get(&j, 0, "prompt");
    } else {
        FUZZ_ASSERT(j.msg[0], "a refusal without a reason");
    }
    free(text);
}

/* ---- http: ml_server's request heads ---- */
static inline void fuzz_http(const uint8_t *d, size_t n) {
    ml_http_req r;
    int status = 0;
    const char *why = NULL;
    char *buf = malloc(n ? n : 1); /* exactly n bytes: ASan sees any read past them */
    if (!buf) return;
    memcpy(buf, d, n);
    int rc = ml_http_parse(buf, n, 4096, 1 << 20, &r, &status, &why);
    if (rc == 1) {
        FUZZ_ASSERT(r.head_len >= 4 && r.head_len <= n && r.path[0] == '/', "a head past the input or a bad path");
        FUZZ_ASSERT(r.content_length <= (1 << 20), "Content-Length over the limit");
        FUZZ_ASSERT(!r.auth || (r.auth >= buf && r.auth + r.auth_len <= buf + r.head_len), "Authorization outside the head");
    } else if (rc == -1) {
        FUZZ_ASSERT(status >= 400 && status < 600 && why && *why, "a refusal without a status or reason");
    } else {
        FUZZ_ASSERT(rc == 0 && n < 4096, "more bytes wanted past the head limit");
    }
    free(buf);
}

/* ---- chat: the chat templates, over a model's untrusted chat_template ---- */

/* The options byte after the template's NUL. */
enum {
    FUZZ_CHAT_KIND = 3,    /* the kind, unless detected */
    FUZZ_CHAT_DETECT = 4,  /* the template's own kind, when it is recognized */
    FUZZ_CHAT_GEN = 8,     /* the whole render adds the generation prompt */
    FUZZ_CHAT_SP = 16,     /* the SentencePiece vocab (Zephyr and Llama 2 only) */
    FUZZ_CHAT_SMALL = 32,  /* the smallest text buffer, 64 bytes (else 4096) */
    FUZZ_CHAT_IDS = 64,    /* the model's own ids (<s>, </s>, <|eot_id|>), not the tokenizer's */
    FUZZ_CHAT_NO_BOS = 128 /* add_bos 0, else the tokenizer's rule */
};
enum { FUZZ_CHAT_MAX_MSGS = 16, FUZZ_CHAT_BOT = 261, FUZZ_CHAT_BOS, FUZZ_CHAT_EOS, FUZZ_CHAT_VOCAB = FUZZ_CHAT_EOS + 4 };

/* A byte-level BPE vocab of the 256 bytes and every template's control
 * tokens, no merges: a text run's ids are its bytes, so a turn-by-turn
 * render compares exactly with the whole one. And fuzz_tok_encode's
 * SentencePiece vocab, whose dummy prefix starts every run. */
typedef struct {
    ml_tok bpe, sp;
    int n; /* loaded: bpe, then sp */
} fuzz_chat_vocabs;

static inline void fuzz_chat_vocabs_load(fuzz_chat_vocabs *v) {
    static const char *const ctl[] = {"<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>",
                                      "<|eot_id|>", "<|begin_of_text|>", "<s>", "</s>",
                                      /* DeepSeek-R1's <｜User｜>, <｜Assistant｜>, <｜end▁of▁sentence｜> */
                                      "<\xef\xbd\x9cUser\xef\xbd\x9c>", "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>",
                                      "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"};
    static uint8_t f[8192];
    /* "MLBP", version 1, gpt-2, no flags, tokens, no merges, bos, eos, no eot, add_bos */
    uint32_t head[12] = {0, 1, ML_BPE_PRE_GPT2, 0, FUZZ_CHAT_VOCAB, 0, FUZZ_CHAT_BOT, FUZZ_CHAT_EOS, (uint32_t)-1,
                         1, 0, 0};
    memcpy(head, "MLBP", 4);
    memcpy(f, head, sizeof head);
    size_t at = sizeof head;
    for (int i = 0; i < FUZZ_CHAT_VOCAB; i++) {
        char byte = (char)i;
        const char *t = i < 256 ? &byte : ctl[i - 256];
        uint32_t len_type[2] = {i < 256 ? 1 : (uint32_t)strlen(t), i < 256 ? ML_BPE_NORMAL : ML_BPE_CONTROL};
        memcpy(f + at, len_type, 8), memcpy(f + at + 8, t, len_type[0]);
        at += 8 + len_type[0];
    }
    v->n = ml_tok_load_buffer(&v->bpe, "fuzz_chat", f, at, FUZZ_CHAT_VOCAB, NULL) == ML_OK;
    int sp_vocab = 0;
    size_t sp_size = fuzz_builtin_tokenizer(f, sizeof f, &sp_vocab);
    if (v->n && ml_tok_load_buffer(&v->sp, "builtin", f, sp_size, sp_vocab, NULL) == ML_OK) v->n++;
}

static inline void fuzz_chat_vocabs_free(fuzz_chat_vocabs *v) {
    if (v->n > 1) ml_tok_free(&v->sp);
    if (v->n > 0) ml_tok_free(&v->bpe);
    v->n = 0;
}

/* Recognition: a kind, or ML_E_FORMAT with a reason; choosing by the
 * template agrees with it, and by the kind's name gives the kind back. */
static inline void fuzz_chat_detect(const char *tmpl, size_t len, ml_chat_kind *own, int *known) {
    ml_err err = {{0}};
    ml_chat_kind by_text = ML_CHAT_COUNT, by_name = ML_CHAT_COUNT;
    ml_status s = ml_chat_kind_detect(tmpl, len, own, &err);
    FUZZ_ASSERT(s == ML_OK ? (unsigned)*own < ML_CHAT_COUNT : s == ML_E_FORMAT && err.msg[0], "detect");
    *known = s == ML_OK;
    ml_status c = ml_chat_kind_choose(NULL, tmpl, len, &by_text, &err);
    FUZZ_ASSERT(len ? c == s && (s || by_text == *own) : c == ML_E_ARG, "choose by the template != detect");
    if (*known)
        FUZZ_ASSERT(!ml_chat_kind_choose(ml_chat_name(*own), tmpl, len, &by_name, &err) && by_name == *own,
                    "choose by name");
}

/* The defaults go only to a chat of the template's own kind, each to its
 * kind, and stay short. */
static inline void fuzz_chat_defaults(ml_chat *c, const char *tmpl, size_t len, int known, ml_chat_kind own) {
    ml_err err = {{0}};
    ml_status s = ml_chat_use_template_defaults(c, tmpl, len, &err);
    FUZZ_ASSERT(s == ML_OK || (s == ML_E_NOMEM && err.msg[0]), "use_template_defaults");
    FUZZ_ASSERT(!c->default_system || (c->kind == ML_CHAT_CHATML && strlen(c->default_system) <= len),
                "a default system message of the wrong kind or longer than the template");
    FUZZ_ASSERT(!c->system_prefix || (c->kind == ML_CHAT_LLAMA3 && strlen(c->system_prefix) <= 200),
                "a system prefix of the wrong kind or too long");
    FUZZ_ASSERT(!(c->default_system || c->system_prefix) || (known && own == c->kind),
                "defaults from a template of another kind");
}

/* The whole conversation with ml_chat_max_tokens entries, then with fewer
 * than its ids (refused) and between the two (the same ids, or refused);
 * every buffer is exactly its cap, so ASan sees a write past it. */
static inline void fuzz_chat_render(ml_chat *c, const ml_chat_msg *m, int n, int gen) {
    size_t cap = ml_chat_max_tokens(c, m, n), nt = 0, k = 0;
    int *ids = malloc(cap * sizeof *ids);
    if (!ids) return;
    ml_err err = {{0}};
    ml_status s = ml_chat_render(c, m, n, gen, ids, cap, &nt, &err);
    /* with that room, only a text run past text_cap or Llama 2's misplaced
     * system message fail: never the token count */
    FUZZ_ASSERT(s == ML_OK || (s == ML_E_ARG && err.msg[0] && !strstr(err.msg, "token")), "render failed");
    FUZZ_ASSERT(nt <= cap && (s == ML_OK || nt == 0), "token count");
    for (size_t i = 0; i < nt; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < ml_tok_vocab(c->tok), "id out of range");
    const size_t caps[3] = {nt ? nt - 1 : 0, nt / 2, nt + (cap - nt) / 2};
    for (int i = 0; s == ML_OK && i < 3; i++) {
        int *small = malloc((caps[i] ? caps[i] : 1) * sizeof *small);
        if (!small) break;
        ml_status s2 = ml_chat_render(c, m, n, gen, small, caps[i], &k, &err);
        if (caps[i] < nt) FUZZ_ASSERT(s2 == ML_E_ARG && k == 0, "a buffer smaller than the render accepted");
        else
            FUZZ_ASSERT(s2 == ML_E_ARG || (k == nt && !memcmp(small, ids, nt * sizeof *ids)),
                        "a second render differs");
        free(small);
    }
    free(ids);
}

/* What the template adds is a system message (model/chat.h): a conversation
 * without one renders as with the default one first (ChatML), or with an
 * empty one (Llama 3.1's prefix). */
static inline void fuzz_chat_default_is_a_message(ml_chat *c, const ml_chat_msg *m, int n) {
    if (!n || m[0].role == ML_CHAT_SYSTEM || !(c->default_system || c->system_prefix)) return;
    ml_chat_msg with[FUZZ_CHAT_MAX_MSGS + 1] = {{ML_CHAT_SYSTEM, c->default_system ? c->default_system : ""}};
    memcpy(with + 1, m, (size_t)n * sizeof *m);
    size_t cap = ml_chat_max_tokens(c, with, n + 1), na = 0, nb = 0;
    int *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    if (a && b && !ml_chat_render(c, m, n, 1, a, cap, &na, NULL) &&
        !ml_chat_render(c, with, n + 1, 1, b, cap, &nb, NULL))
        FUZZ_ASSERT(na == nb && !memcmp(a, b, na * sizeof *a),
                    "the template's system message differs from an explicit one");
    free(a);
    free(b);
}

/* The text the whole render writes for an assistant message (model/chat.h):
 * Llama 3's trimmed, Llama 2's trimmed after a space, DeepSeek-R1's after
 * its last </think>; in a new string. */
static inline char *fuzz_chat_reply_text(const ml_chat *c, const char *content) {
    for (const char *p; c->kind == ML_CHAT_DEEPSEEK_R1 && (p = strstr(content, "</think>"));) content = p + 8;
    size_t len = strlen(content);
    const int space = c->kind == ML_CHAT_LLAMA2;
    if (c->kind == ML_CHAT_LLAMA3 || c->kind == ML_CHAT_LLAMA2) {
        while (len && strchr(" \t\n\r\f\v", content[len - 1])) len--;
        while (len && strchr(" \t\n\r\f\v", *content)) content++, len--;
    }
    char *t = malloc(space + len + 1);
    if (t) t[0] = ' ', memcpy(t + space, content, len), t[space + len] = 0;
    return t;
}

/* The messages as a terminal chat has them (a system message first or
 * none, then user, assistant, user ...), rendered turn by turn with each
 * reply's ids its text's encoding: the whole render's ids (model/chat.h). */
static inline void fuzz_chat_turns(ml_chat *c, const ml_chat_msg *m, int n) {
    ml_chat_msg conv[FUZZ_CHAT_MAX_MSGS];
    const int sys = n && m[0].role == ML_CHAT_SYSTEM;
    if (n - sys < 1) return;
    for (int i = 0; i < n; i++)
        conv[i] = (ml_chat_msg){i < sys ? ML_CHAT_SYSTEM : (i - sys) % 2 ? ML_CHAT_ASSISTANT : ML_CHAT_USER,
                                m[i].content};
    size_t cap = ml_chat_max_tokens(c, conv, n), nw = 0, nt = 0, k = 0;
    int *whole = malloc(cap * sizeof *whole), *turns = malloc(cap * sizeof *turns);
    ml_err err = {{0}};
    ml_status s = whole && turns ? ml_chat_render(c, conv, n, conv[n - 1].role == ML_CHAT_USER, whole, cap, &nw, &err)
                                 : ML_E_NOMEM;
    for (int i = sys; s == ML_OK && i < n; i++, nt += k) {
        if (conv[i].role == ML_CHAT_USER) {
            s = ml_chat_render_turn(c, i == sys, sys ? conv[0].content : NULL, conv[i].content, turns + nt, cap - nt,
                                    &k, &err);
            continue;
        }
        char *text = fuzz_chat_reply_text(c, conv[i].content);
        int *reply = text ? malloc(ml_tok_max_tokens(c->tok, text) * sizeof *reply) : NULL;
        int nr = 0;
        s = reply ? ml_tok_encode(c->tok, text, 0, 0, 0, reply, &nr, &err) : ML_E_NOMEM;
        if (s == ML_OK && (size_t)nr > cap - nt) s = ML_E_ARG;
        if (s == ML_OK) memcpy(turns + nt, reply, (size_t)nr * sizeof *reply);
        free(reply);
        free(text);
        nt += (size_t)nr;
        if (s == ML_OK) s = ml_chat_render_reply_end(c, turns + nt, cap - nt, &k, &err);
    }
    /* SentencePiece starts each run with its dummy prefix, DeepSeek-R1's
     * whole render drops the <think> its generation prompt writes: not comparable */
    if (nw && c->tok->kind == ML_TOK_KIND_BPE && !c->think) {
        FUZZ_ASSERT(s == ML_OK, "a turn failed where the whole render did not");
        FUZZ_ASSERT(nt == nw && !memcmp(turns, whole, nw * sizeof *whole), "turn by turn != the whole render");
    }
    free(whole);
    free(turns);
}

/* The template is copied without its NUL: the library reads len bytes. */
static inline void fuzz_chat(const fuzz_chat_vocabs *v, const uint8_t *d, size_t n) {
    const uint8_t *nul = memchr(d, 0, n);
    const size_t tl = nul ? (size_t)(nul - d) : n, rest = tl + 2 <= n ? n - tl - 2 : 0;
    const unsigned opts = tl + 1 < n ? d[tl + 1] : FUZZ_CHAT_DETECT;
    char *tmpl = malloc(tl ? tl : 1), *text = malloc(rest + 1);
    if (!tmpl || !text) goto out;
    memcpy(tmpl, d, tl);
    memcpy(text, d + n - rest, rest);
    text[rest] = 0;
    ml_chat_msg m[FUZZ_CHAT_MAX_MSGS];
    int n_msgs = 0;
    for (size_t at = 0; at < rest && n_msgs < FUZZ_CHAT_MAX_MSGS; at += strlen(text + at) + 1) {
        const char r = text[at];
        m[n_msgs++] = (ml_chat_msg){r == 's' ? ML_CHAT_SYSTEM : r == 'a' ? ML_CHAT_ASSISTANT : ML_CHAT_USER,
                                    text + at + !!r};
    }
    ml_chat_kind own = ML_CHAT_COUNT, kind = (ml_chat_kind)(opts & FUZZ_CHAT_KIND);
    int known = 0;
    fuzz_chat_detect(tmpl, tl, &own, &known);
    if (known && (opts & FUZZ_CHAT_DETECT)) kind = own;
    const ml_tok *tok = (opts & FUZZ_CHAT_SP) && v->n > 1 ? &v->sp : &v->bpe;
    const int ids = (opts & FUZZ_CHAT_IDS) != 0, sp = tok == &v->sp;
    ml_chat c;
    ml_err err = {{0}};
    ml_status s = ml_chat_init(&c, kind, tok, ids ? (sp ? 1 : FUZZ_CHAT_BOS) : -1, ids ? (sp ? 2 : FUZZ_CHAT_EOS) : -1,
                               ids && !sp ? FUZZ_CHAT_BOT - 1 : -1, opts & FUZZ_CHAT_NO_BOS ? 0 : -1,
                               opts & FUZZ_CHAT_SMALL ? 64 : 4096, &err);
    /* SentencePiece lacks ChatML's and Llama 3's control tokens */
    FUZZ_ASSERT(s == ML_OK || (s == ML_E_FORMAT && sp && (kind <= ML_CHAT_LLAMA3 || kind == ML_CHAT_DEEPSEEK_R1) &&
                               err.msg[0]),
                "init");
    if (s == ML_OK) {
        fuzz_chat_defaults(&c, tmpl, tl, known, own);
        fuzz_chat_render(&c, m, n_msgs, (opts & FUZZ_CHAT_GEN) != 0);
        fuzz_chat_turns(&c, m, n_msgs);
        fuzz_chat_default_is_a_message(&c, m, n_msgs);
        ml_chat_free(&c);
    }
out:
    free(tmpl);
    free(text);
}

#endif
