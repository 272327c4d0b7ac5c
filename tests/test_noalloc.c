/* "After load, no allocation": counts every malloc/calloc/realloc/
 * aligned_alloc our own objects make (the link wraps those symbols) while a
 * model generates with the sampler and tokenizer in the loop, and while the
 * library serves what ml_server asks of it per request (a chat rendered, its
 * stop tokens set, a reply generated; a prompt tokenized and completed). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h" /* ml_api_open: lml_model_open after its CPU check (api/open.c) */
#include "model/bpe.h"
#include "model/generate.h"
#include "model/mlb_random.h"
#include "model/tokenizer.h"
#include "tests/testlib.h"

static long n_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n) { n_allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { n_allocs++; return __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { n_allocs++; return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { n_allocs++; return __real_aligned_alloc(a, n); }

typedef struct { const ml_tokenizer *tok; size_t bytes; } sink;
static void on_logits(void *ud, int pos, const float *logits, int vocab) {
    sink *s = ud;
    s->bytes += (size_t)(pos >= 0 && vocab > 0 && logits[0] == logits[0]);
}

static void on_token(void *ud, int prev, int token) {
    sink *s = ud;
    size_t len = 0;
    if (s->tok && ml_tokenizer_decode(s->tok, prev, token, &len)) s->bytes += len;
}

/* A BPE tokenizer (model/bpe.h) of the 256 bytes, "ab" (a merge) and a
 * control token: encode (specials on) and the UTF-8 stream allocate nothing. */
static void bpe_encode_noalloc(void) {
    static unsigned char f[8192];
    size_t n = 0;
    uint32_t head[12] = {0, 1, ML_BPE_PRE_QWEN2, 0, 258, 1, (uint32_t)-1, 257, 257, 0, 0, 0};
    memcpy(head, "MLBP", 4);
    memcpy(f, head, sizeof head);
    n = sizeof head;
    for (int i = 0; i < 258; i++) {
        const char *t = i == 256 ? "ab" : "<|end|>";
        uint32_t len = i < 256 ? 1 : (uint32_t)strlen(t), type = i == 257 ? ML_BPE_CONTROL : ML_BPE_NORMAL;
        memcpy(f + n, &len, 4);
        memcpy(f + n + 4, &type, 4);
        if (i < 256) f[n + 8] = (unsigned char)i;
        else memcpy(f + n + 8, t, len);
        n += 8 + len;
    }
    uint32_t merge[3] = {'a', 'b', 256};
    memcpy(f + n, merge, sizeof merge);
    n += sizeof merge;
    ml_bpe t;
    ml_err err = {{0}};
    if (ml_bpe_load_buffer(&t, "noalloc", f, n, &err)) {
        CHECK(0, "the BPE tokenizer loads: %s", err.msg);
        return;
    }
    static const char text[] = "ab abab, \xe4\xbd\xa0\xe5\xa5\xbd 123 <|end|>  \n";
    int ids[10 * sizeof text + 16];
    size_t n_ids = 0;
    char out[64];
    ml_utf8_stream st = {{0}, 0, 0};
    long before = n_allocs;
    CHECK(ml_bpe_encode(&t, text, sizeof text - 1, ML_BPE_SPECIAL | ML_BPE_EOS, ids, sizeof ids / sizeof *ids, &n_ids,
                        &err) == ML_OK && n_ids > 4 && ids[0] == 256 && ids[n_ids - 1] == 257,
          "BPE encode: %s", err.msg);
    for (size_t i = 0; i < n_ids; i++) {
        size_t len = 0;
        const char *p = ml_bpe_token(&t, ids[i], &len);
        ml_utf8_stream_feed(&st, p, len, out);
    }
    CHECK(n_allocs == before, "%ld allocations in BPE encode and the UTF-8 stream", n_allocs - before);
    ml_bpe_free(&t);
    GROUP_DONE("no allocation in BPE encode and decode", 0);
}

/* ml_server's request path through include/legacy_ml.h, on the random model
 * with stories260K's tokenizer (vocab 512) and Zephyr's template (the
 * server's test template): nothing allocates after the model and the chat
 * are open. */
typedef struct { const lml_model *m; size_t bytes; lml_utf8_state st; } api_sink;
static int api_on_token(void *ud, int token, const char *piece, size_t len) {
    api_sink *s = ud;
    char out[LML_PIECE_MAX + 8];
    s->bytes += lml_utf8_feed(&s->st, piece, len, out) + (token >= 0);
    return 0;
}

static void api_request_noalloc(const char *mpath, const char *models) {
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/stories260K/tok512.bin", models);
    if (access(tpath, R_OK)) {
        SKIP("the server's request path: %s not found", tpath);
        return;
    }
    lml_model_options o = {.tokenizer = tpath, .threads = 1};
    lml_model *m = NULL;
    lml_chat *chat = NULL;
    lml_error err = {{0}};
    long at_open = n_allocs;
    CHECK(ml_api_open(&m, mpath, NULL, 0, &o, &err) == LML_OK, "open: %s", err.message);
    if (m) CHECK(lml_chat_open(&chat, m, "zephyr", 4096, &err) == LML_OK, "chat: %s", err.message);
    CHECK(n_allocs > at_open, "the wrap counts the library's own allocations (the opens')");
    if (!chat) {
        lml_model_close(m);
        return;
    }
    static int ids[8192];
    const lml_chat_message msgs[] = {{LML_ROLE_SYSTEM, "You are kind."}, {LML_ROLE_USER, "Tell me a story."},
                                     {LML_ROLE_ASSISTANT, "Once upon a time"}, {LML_ROLE_USER, "More <|im_end|>"}};
    lml_sampler_options so = {.temperature = 0.8f, .top_p = 0.9f, .repeat_penalty = 1.0f, .seed = 7};
    api_sink sk = {m, 0, {{0}, 0, 0}};
    lml_callbacks cb = {.on_token = api_on_token, .ud = &sk};
    int n = 0, n_pos = 0, stop = lml_chat_end_of_turn(chat);
    long before = n_allocs;
    size_t need = lml_chat_capacity(chat, msgs, 4);
    CHECK(need > 0 && need <= sizeof ids / sizeof *ids, "chat capacity %zu", need);
    CHECK(lml_chat_render(chat, msgs, 4, LML_CHAT_ADD_GENERATION_PROMPT, ids, sizeof ids / sizeof *ids, &n, &err) ==
              LML_OK && n > 8, "chat render: %s", err.message);
    CHECK(lml_model_set_stop_tokens(m, &stop, 1, &err) == LML_OK, "stop tokens: %s", err.message);
    int steps = n + 16 < 128 ? n + 16 : 128; /* the random model's context */
    CHECK(lml_generate(m, ids, n, steps, &so, &cb, &n_pos, &err) == LML_OK && n_pos > n, "chat reply: %s",
          err.message);
    CHECK(lml_tokenize_capacity("Once upon a time") <= sizeof ids / sizeof *ids &&
              lml_tokenize(m, "Once upon a time", 1, ids, sizeof ids / sizeof *ids, &n, &err) == LML_OK,
          "tokenize: %s", err.message);
    CHECK(lml_model_set_stop_tokens(m, NULL, 0, &err) == LML_OK, "default stop tokens: %s", err.message);
    so.temperature = 0.0f;
    CHECK(lml_generate(m, ids, n, 64, &so, &cb, &n_pos, &err) == LML_OK, "completion: %s", err.message);
    CHECK(n_allocs == before, "%ld allocations in a chat request and a completion through the library",
          n_allocs - before);
    CHECK(sk.bytes > 0, "the replies have text");
    lml_chat_close(chat);
    lml_model_close(m);
    GROUP_DONE("no allocation in ml_server's request path (chat, stop tokens, generate, tokenize)", 0);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    const char *models = getenv("MODELS") ? getenv("MODELS") : "../shared/models";
    char path[] = "/tmp/ml_noalloc_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    if (fd < 0) return tl_summary();
    close(fd);

    /* Token by token, and with a batched prompt (every position's logits). */
    for (int run = 0; run < 4; run++) {
        int wt = run % 2, batch = run < 2 ? 0 : 2;
        int wtype = wt ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
        ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 512, 128, (uint32_t)wtype, 1);
        ml_model m;
        ml_err err = {{0}};
        CHECK(ml_mlb_random_write(path, &h, 7, &err) == ML_OK, "write model: %s", err.msg);
        ml_open_opts oo = {.use_mmap = 1, .n_threads = 1, .batch = batch, .all_logits = 1};
        ml_status s = ml_model_open(&m, path, &oo, &err);
        CHECK(s == ML_OK, "open: %s", err.msg);
        if (s) continue;

        /* The stories260K tokenizer has vocab 512 too: decode in the loop if present. */
        char tpath[1024];
        snprintf(tpath, sizeof tpath, "%s/stories260K/tok512.bin", models);
        ml_tokenizer tok;
        int have_tok = access(tpath, R_OK) == 0 && ml_tokenizer_load(&tok, tpath, 512, &err) == ML_OK;
        if (!have_tok) SKIP("tokenizer in the loop: %s not found", tpath);

        ml_sampler smp;
        ml_sampler_init(&smp, 512, 0.9f, 0.9f, 42, m.s.sampler_scratch);
        int prompt[3] = {1, 200, 300};
        sink sk = {have_tok ? &tok : NULL, 0};
        ml_gen_callbacks cb = {.on_logits = on_logits, .on_token = on_token, .ud = &sk};
        int n_pos = 0;
        long before = n_allocs;
        s = ml_generate(&m, &smp, prompt, 3, 128, &cb, &n_pos, &err);
        long during = n_allocs - before;
        CHECK(s == ML_OK, "generate: %s", err.msg);
        CHECK(n_pos > 3, "generated %d positions", n_pos);
        CHECK(during == 0, "%s -b %d: %ld allocations during generation, expected 0",
              wt ? "Q4_0" : "Q8_0", batch, during);
        /* Plain multinomial and greedy paths too. */
        before = n_allocs;
        ml_sampler_init(&smp, 512, 1.0f, 1.0f, 3, m.s.sampler_scratch);
        ml_generate(&m, &smp, prompt, 1, 64, &cb, &n_pos, &err);
        ml_sampler_init(&smp, 512, 0.0f, 0.0f, 3, m.s.sampler_scratch);
        ml_generate(&m, &smp, prompt, 1, 64, &cb, &n_pos, &err);
        CHECK(n_allocs == before, "%ld allocations in greedy/multinomial generation", n_allocs - before);
        /* And the filters: top-k, min-p, top-p and the repetition penalty's window. */
        before = n_allocs;
        ml_sampler_init(&smp, 512, 0.8f, 0.9f, 5, m.s.sampler_scratch);
        CHECK(ml_sampler_set_filters(&smp, 40, 0.05f, 1.3f, -1, m.cfg.max_seq, &err) == ML_OK, "filters: %s", err.msg);
        ml_generate(&m, &smp, prompt, 3, 64, &cb, &n_pos, &err);
        CHECK(n_allocs == before, "%ld allocations in generation with top-k, min-p and a repetition penalty",
              n_allocs - before);
        if (have_tok) {
            int ids[64], n = 0;
            before = n_allocs;
            CHECK(ml_tokenizer_encode(&tok, "Once upon a time", 1, 0, ids, &n, &err) == ML_OK, "encode");
            CHECK(n_allocs == before, "%ld allocations in encode", n_allocs - before);
            ml_tokenizer_free(&tok);
        }
        ml_model_close(&m);
        char what[64];
        snprintf(what, sizeof what, "no allocation after load (%s%s)", wt ? "Q4_0" : "Q8_0",
                 batch ? ", batched prompt" : "");
        GROUP_DONE(what, 0);
    }
    api_request_noalloc(path, models);
    unlink(path);
    bpe_encode_noalloc();
    return tl_summary();
}
