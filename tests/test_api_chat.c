/* The public chat API (include/legacy_ml.h: lml_chat_*, lml_model_set_stop_tokens,
 * lml_token_text, lml_tokenize_special) on a random model with stories260K's
 * SentencePiece tokenizer (vocab 512): templates chosen by name or refused
 * with the names listed, a template whose control tokens the vocabulary
 * lacks refused, the ids those of model/chat.c with control tokens by id and
 * a message that spells one encoded as text, bad arguments refused, and
 * generation that stops at the tokens set. And LML_LOAD_TAKE: an image
 * handed over runs (in the build's weight layout) with the logits of the
 * file mapped; a file is refused. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h" /* ml_api_open: lml_model_open after its CPU check (api/open.c) */
#include "core/mem.h"
#include "model/chat.h"
#include "model/mlb_random.h"
#include "tests/testlib.h"

#define CAP 4096

static int count(const int *ids, int n, int id) {
    int k = 0;
    for (int i = 0; i < n; i++) k += ids[i] == id;
    return k;
}

/* ---- choosing a template ---------------------------------------------------- */

static void test_open(lml_model *m, lml_model *bare) {
    int f0 = tl_failed;
    lml_error err = {{0}};
    lml_chat *c = (lml_chat *)&err; /* set to NULL on failure */
    CHECK(!strcmp(lml_chat_template_names(), "chatml, llama3, zephyr, llama2, deepseek-r1"), "names: %s", lml_chat_template_names());
    CHECK(lml_chat_open(&c, m, "vicuna", 0, &err) == LML_E_ARG && !c && strstr(err.message, "vicuna") &&
              strstr(err.message, "chatml, llama3, zephyr, llama2, deepseek-r1"),
          "an unknown name is refused with the names: %s", err.message);
    CHECK(lml_chat_open(&c, m, NULL, 0, &err) == LML_E_ARG && !c && strstr(err.message, "zephyr"),
          "no name and no template in the model: the names: %s", err.message);
    CHECK(lml_chat_open(&c, m, "chatml", 0, &err) == LML_E_FORMAT && !c && strstr(err.message, "<|im_start|>"),
          "chatml's control tokens are not in a SentencePiece vocabulary: %s", err.message);
    CHECK(lml_chat_open(&c, bare, "zephyr", 0, &err) == LML_E_ARG && !c, "a model without tokenizer: %s",
          err.message);
    CHECK(lml_chat_open(NULL, m, "zephyr", 0, &err) == LML_E_ARG, "a NULL handle place");
    /* a text buffer of SIZE_MAX bytes would wrap its malloc to 0 bytes */
    CHECK(lml_chat_open(&c, m, "zephyr", SIZE_MAX, &err) == LML_E_ARG && !c && strstr(err.message, "text buffer"),
          "max_text SIZE_MAX: %s", err.message);
    CHECK(lml_chat_open(&c, m, "zephyr", ((size_t)1 << 30) + 1, &err) == LML_E_ARG && !c, "max_text 2^30 + 1: %s",
          err.message);
    const char *chosen = "x";
    CHECK(lml_chat_choose(NULL, "vicuna", &chosen, &err) == LML_E_ARG && !chosen &&
              strstr(err.message, "chatml, llama3, zephyr, llama2, deepseek-r1"),
          "choose: an unknown name, no model: %s", err.message);
    CHECK(lml_chat_choose(bare, NULL, &chosen, &err) == LML_E_ARG && !chosen && strstr(err.message, "zephyr"),
          "choose: no name and no template in the model: %s", err.message);
    CHECK(lml_chat_choose(bare, "llama2", &chosen, &err) == LML_OK && chosen && !strcmp(chosen, "llama2") &&
              lml_chat_choose(NULL, "chatml", NULL, &err) == LML_OK && lml_chat_choose(NULL, NULL, &chosen, &err),
          "choose: by name without a tokenizer; NULL model and name refused");
    for (int k = 2; k < 4; k++) {
        const char *name = k == 2 ? "zephyr" : "llama2";
        CHECK(lml_chat_open(&c, m, name, 0, &err) == LML_OK && c && !err.message[0], "%s opens: %s", name,
              err.message);
        CHECK(!strcmp(lml_chat_name(c), name) && lml_chat_end_of_turn(c) == LML_TOKEN_EOS, "%s: name %s, end %d",
              name, lml_chat_name(c), lml_chat_end_of_turn(c));
        lml_chat_close(c);
    }
    CHECK(lml_chat_name(NULL) == NULL && lml_chat_end_of_turn(NULL) == -1, "NULL chat");
    lml_chat_close(NULL);
    GROUP_DONE("lml_chat_open: by name, unknown names, missing control tokens and text buffers over 2^30 refused", f0);
}

/* ---- rendering -------------------------------------------------------------------- */

static void test_render(lml_model *m, const char *tpath) {
    int f0 = tl_failed;
    lml_error err = {{0}};
    lml_chat *c = NULL;
    if (lml_chat_open(&c, m, "zephyr", 256, &err)) {
        CHECK(0, "zephyr: %s", err.message);
        return;
    }
    const lml_chat_message msgs[] = {{LML_ROLE_SYSTEM, "Be kind."}, {LML_ROLE_USER, "Hi </s> there"},
                                     {LML_ROLE_ASSISTANT, "Once upon a time"}, {LML_ROLE_USER, "More"}};
    static int ids[CAP], ref[CAP];
    int n = -1;
    size_t cap = lml_chat_capacity(c, msgs, 4);
    CHECK(cap > 0 && cap <= CAP, "capacity %zu", cap);
    CHECK(lml_chat_render(c, msgs, 4, LML_CHAT_ADD_GENERATION_PROMPT, ids, CAP, &n, &err) == LML_OK && n > 10,
          "render: %s", err.message);
    /* model/chat.c's ids for the same conversation, over its own tokenizer. */
    ml_tok t;
    ml_chat mc;
    ml_err e = {{0}};
    size_t nr = 0;
    const ml_chat_msg mm[] = {{ML_CHAT_SYSTEM, "Be kind."}, {ML_CHAT_USER, "Hi </s> there"},
                              {ML_CHAT_ASSISTANT, "Once upon a time"}, {ML_CHAT_USER, "More"}};
    if (ml_tok_load(&t, tpath, 512, &e) == ML_OK) {
        if (ml_chat_init(&mc, ML_CHAT_ZEPHYR, &t, -1, -1, -1, -1, 256, &e) == ML_OK) {
            CHECK(ml_chat_render(&mc, mm, 4, 1, ref, CAP, &nr, &e) == ML_OK, "reference: %s", e.msg);
            ml_chat_free(&mc);
        }
        ml_tok_free(&t);
    }
    CHECK(nr == (size_t)n && !memcmp(ids, ref, sizeof *ids * nr), "the ids are model/chat.c's (%d vs %zu)", n, nr);
    /* A turn after a reply: the reply's end and the user's turn, each rendered apart (model/chat.c's parts). */
    size_t nt = 0, ne = 0;
    if (ml_tok_load(&t, tpath, 512, &e) == ML_OK) {
        if (ml_chat_init(&mc, ML_CHAT_ZEPHYR, &t, -1, -1, -1, -1, 256, &e) == ML_OK) {
            CHECK(ml_chat_render_reply_end(&mc, ref, CAP, &ne, &e) == ML_OK &&
                      ml_chat_render_turn(&mc, 0, NULL, "More", ref + ne, CAP - ne, &nt, &e) == ML_OK,
                  "reference turn: %s", e.msg);
            ml_chat_free(&mc);
        }
        ml_tok_free(&t);
    }
    static int turn[CAP];
    int na = -1;
    CHECK(lml_chat_render(c, msgs + 3, 1, LML_CHAT_ADD_GENERATION_PROMPT | LML_CHAT_AFTER_REPLY, turn, CAP, &na,
                          &err) == LML_OK &&
              (size_t)na == ne + nt && ne > 0 && turn[0] == LML_TOKEN_EOS && !memcmp(turn, ref, sizeof *ids * (ne + nt)),
          "LML_CHAT_AFTER_REPLY: the reply's end (EOS first), then the turn: %d ids vs %zu", na, ne + nt);
    CHECK(lml_chat_render(c, msgs, 2, LML_CHAT_ADD_GENERATION_PROMPT | LML_CHAT_AFTER_REPLY, turn, CAP, &na, &err) ==
                  LML_E_ARG && na == 0 &&
              lml_chat_render(c, msgs + 3, 1, LML_CHAT_AFTER_REPLY, turn, CAP, &na, &err) == LML_E_ARG &&
              lml_chat_render(c, msgs + 2, 1, LML_CHAT_ADD_GENERATION_PROMPT | LML_CHAT_AFTER_REPLY, turn, CAP, &na,
                              &err) == LML_E_ARG,
          "LML_CHAT_AFTER_REPLY: two messages, no generation prompt or an assistant's message refused: %s", err.message);
    /* BOS first; one EOS by id after each of the four messages, none from the text "</s>". */
    CHECK(ids[0] == LML_TOKEN_BOS && count(ids, n, LML_TOKEN_EOS) == 4, "BOS first, %d EOS by id (expected 4)",
          count(ids, n, LML_TOKEN_EOS));
    int n2 = 0;
    CHECK(lml_chat_render(c, msgs, 2, 0, ids, CAP, &n2, &err) == LML_OK && n2 < n, "no generation prompt: %s",
          err.message);

    /* Refusals: each LML_E_ARG, *n_tokens 0. */
    lml_chat_message bad_role[] = {{(lml_role)7, "x"}}, no_text[] = {{LML_ROLE_USER, NULL}};
    char *big = calloc(1, 400);
    if (big) memset(big, 'a', 399);
    lml_chat_message long_msg[] = {{LML_ROLE_USER, big ? big : ""}};
    struct { const char *what; const lml_chat_message *msgs; int n, flags; size_t cap; } bad[] = {
        {"a bad role", bad_role, 1, 0, CAP},       {"a NULL content", no_text, 1, 0, CAP},
        {"unknown flags", msgs, 2, 8, CAP},        {"too little room", msgs, 4, 1, 8},
        {"n < 0", msgs, -1, 0, CAP},               {"a message beyond max_text", long_msg, 1, 0, CAP},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = -1;
        CHECK(lml_chat_render(c, bad[i].msgs, bad[i].n, bad[i].flags, ids, bad[i].cap, &n, &err) == LML_E_ARG &&
                  n == 0 && err.message[0],
              "%s is refused: %s", bad[i].what, err.message);
    }
    free(big);
    CHECK(lml_chat_capacity(c, bad_role, 1) == 0 && lml_chat_capacity(NULL, msgs, 1) == 0, "capacity of bad input: 0");
    lml_chat_close(c);
    GROUP_DONE("lml_chat_render: model/chat.c's ids, control tokens by id, bad input refused", f0);
}

/* ---- tokens and stop tokens ----------------------------------------------------------- */

typedef struct { int generating, n, first, ids[64]; } gen_count; /* the sampled tokens (the first 64) */
static int on_token(void *ud, int token, const char *piece, size_t len) {
    gen_count *g = ud;
    (void)piece, (void)len;
    if (g->generating && g->n < 64) g->ids[g->n] = token;
    if (g->generating && !g->n++) g->first = token;
    return 0;
}
static void on_prompt_done(void *ud, int n_prompt) {
    (void)n_prompt;
    ((gen_count *)ud)->generating = 1;
}

static void test_tokens(lml_model *m) {
    int f0 = tl_failed;
    lml_error err = {{0}};
    size_t len = 9;
    const char *p = lml_token_text(m, LML_TOKEN_EOS, &len);
    CHECK(p && len && memchr(p, '/', len), "the EOS token's text: '%.*s'", (int)len, p ? p : "");
    CHECK(!lml_token_text(m, 512, &len) && !len && !lml_token_text(m, -1, &len), "outside the vocab: NULL");
    int a[64], b[64], na = 0, nb = 0;
    CHECK(lml_tokenize(m, "Once upon a time", 1, a, 64, &na, &err) == LML_OK &&
              lml_tokenize_special(m, "Once upon a time", 1, b, 64, &nb, &err) == LML_OK && na == nb &&
              !memcmp(a, b, sizeof *a * (size_t)na),
          "tokenize_special: SentencePiece has no specials, the same ids");

    /* Greedy: the first sampled token; set as a stop token, nothing is sampled. */
    lml_sampler_options so = lml_sampler_defaults();
    so.temperature = 0.0f;
    gen_count g = {0};
    lml_callbacks cb = {.on_token = on_token, .on_prompt_done = on_prompt_done, .ud = &g};
    CHECK(lml_generate(m, a, na, na + 8, &so, &cb, NULL, &err) == LML_OK && g.n > 0, "greedy: %s", err.message);
    int stop[2] = {g.first, LML_TOKEN_EOS};
    CHECK(lml_model_set_stop_tokens(m, stop, 2, &err) == LML_OK, "set: %s", err.message);
    g = (gen_count){0};
    CHECK(lml_generate(m, a, na, na + 8, &so, &cb, NULL, &err) == LML_OK && g.n == 0,
          "a sampled stop token ends the generation (%d tokens after it)", g.n);
    CHECK(lml_model_set_stop_tokens(m, NULL, 0, &err) == LML_OK, "the default again: %s", err.message);
    g = (gen_count){0};
    CHECK(lml_generate(m, a, na, na + 8, &so, &cb, NULL, &err) == LML_OK && g.n > 0 && g.first == stop[0],
          "the default: the same first token again");
    int big[5] = {1, 2, 3, 4, 5}, out_of_vocab = 512;
    CHECK(lml_model_set_stop_tokens(m, big, 5, &err) == LML_E_ARG, "five stop tokens: %s", err.message);
    CHECK(lml_model_set_stop_tokens(m, &out_of_vocab, 1, &err) == LML_E_ARG && strstr(err.message, "512"),
          "an id outside the vocab: %s", err.message);
    CHECK(lml_model_set_stop_tokens(m, NULL, 1, &err) == LML_E_ARG && lml_model_set_stop_tokens(NULL, NULL, 0, &err),
          "NULL ids or model");
    GROUP_DONE("lml_token_text, lml_tokenize_special, lml_model_set_stop_tokens", f0);
}

/* ---- the sampler: lml_generate's draws, token by token over lml_eval ------------------ */

static void test_sampler(lml_model *m) {
    int f0 = tl_failed;
    lml_error err = {{0}};
    int a[64], na = 0;
    CHECK(lml_tokenize(m, "Once upon a time", 1, a, 64, &na, &err) == LML_OK, "tokenize: %s", err.message);
    int stop = 511; /* a token of the vocab that ends nothing here: run to steps */
    CHECK(lml_model_set_stop_tokens(m, &stop, 1, &err) == LML_OK, "stop: %s", err.message);
    for (int k = 0; k < 3; k++) {
        lml_sampler_options so = lml_sampler_defaults();
        so.seed = 42 + (unsigned)k;
        so.temperature = k == 0 ? 0.0f : 1.2f;
        so.repeat_penalty = k == 2 ? 1.3f : 1.0f;
        so.top_k = k == 2 ? 40 : 0;
        gen_count g = {0};
        lml_callbacks cb = {.on_token = on_token, .on_prompt_done = on_prompt_done, .ud = &g};
        int steps = na + 24;
        CHECK(lml_generate(m, a, na, steps, &so, &cb, NULL, &err) == LML_OK && g.n > 0, "generate %d: %s", k,
              err.message);
        lml_sampler *s = NULL;
        CHECK(lml_sampler_open(&s, m, &so, &err) == LML_OK && s, "open %d: %s", k, err.message);
        if (!s) continue;
        int ids[64], n = 0, pos = na, same = lml_eval(m, a, na, 0, NULL, NULL, &err) == LML_OK;
        for (int i = 0; i < na; i++) lml_sampler_accept(s, a[i]);
        while (same && n < 64) { /* the token after the last position is sampled too, not run */
            int t = lml_sample(s, lml_logits(m));
            if (t == stop) break;
            ids[n++] = t;
            if (pos >= steps) break;
            lml_sampler_accept(s, t);
            same = lml_eval(m, &t, 1, pos++, NULL, NULL, &err) == LML_OK;
        }
        CHECK(same && n == g.n && !memcmp(ids, g.ids, sizeof *ids * (size_t)n),
              "setting %d: lml_sample's %d tokens are lml_generate's %d", k, n, g.n);
        lml_sampler_close(s);
    }
    CHECK(lml_model_set_stop_tokens(m, NULL, 0, &err) == LML_OK, "the default stop tokens: %s", err.message);
    lml_sampler *s = (lml_sampler *)&err;
    lml_sampler_options bad = lml_sampler_defaults();
    bad.top_p = 1.5f;
    CHECK(lml_sampler_open(&s, m, &bad, &err) == LML_E_ARG && !s && strstr(err.message, "top_p"),
          "a bad top_p is refused: %s", err.message);
    bad = lml_sampler_defaults();
    bad.repeat_penalty = 0.0f;
    CHECK(lml_sampler_open(&s, m, &bad, &err) == LML_E_ARG && !s, "a zero penalty is refused: %s", err.message);
    CHECK(lml_sampler_open(&s, NULL, NULL, &err) == LML_E_ARG && !s && lml_sampler_open(NULL, m, NULL, &err),
          "NULL model or handle place");
    CHECK(lml_sampler_open(&s, m, NULL, &err) == LML_OK && s && lml_sample(s, NULL) == -1 && lml_sample(NULL, lml_logits(m)) == -1,
          "the defaults open; NULL logits or sampler: -1");
    lml_sampler_accept(NULL, 1);
    lml_sampler_close(s);
    lml_sampler_close(NULL);
    GROUP_DONE("lml_sampler: lml_generate's draws (greedy, seeded, penalty) token by token; bad options refused", f0);
}

/* The last logits of 8 tokens through m (into out, 512 floats). */
static int eval8(lml_model *m, float *out) {
    static const int toks[8] = {1, 5, 9, 13, 17, 21, 25, 29};
    lml_error err = {{0}};
    if (lml_eval(m, toks, 8, 0, NULL, NULL, &err) != LML_OK) return 0;
    memcpy(out, lml_logits(m), 512 * sizeof *out);
    return 1;
}

/* LML_LOAD_TAKE hands over a buffer: the file's bytes in memory, handed
 * over, give the logits of the file mapped (row layout); a file is refused. */
static void test_load_take(const char *path) {
    int f0 = tl_failed;
    lml_error err = {{0}};
    lml_model *m = NULL, *mapped = NULL;
    lml_model_options o = {.no_tokenizer = 1, .load = LML_LOAD_TAKE};
    CHECK(ml_api_open(&m, path, NULL, 0, &o, &err) == LML_E_ARG && !m && strstr(err.message, "LML_LOAD_TAKE"),
          "lml_model_open with LML_LOAD_TAKE: expected LML_E_ARG naming it, got '%s'", err.message);
    static const int bad_load[] = {-3, 4, 99};
    for (size_t i = 0; i < sizeof bad_load / sizeof *bad_load; i++) {
        lml_model_options ob = {.no_tokenizer = 1, .load = bad_load[i]};
        CHECK(ml_api_open(&m, path, NULL, 0, &ob, &err) == LML_E_ARG && !m && strstr(err.message, "load"),
              "load %d: expected LML_E_ARG, got '%s'", bad_load[i], err.message);
    }
    FILE *f = fopen(path, "rb");
    long size = f && !fseek(f, 0, SEEK_END) ? ftell(f) : -1;
    unsigned char *img = size > 0 ? ml_aligned_alloc(64, (size_t)size) : NULL;
    int read_ok = img && !fseek(f, 0, SEEK_SET) && fread(img, 1, (size_t)size, f) == (size_t)size;
    if (f) fclose(f);
    CHECK(read_ok, "read %s into memory", path);
    lml_model_options om = {.no_tokenizer = 1, .load = LML_LOAD_MMAP};
    static float a[512], b[512];
    if (read_ok && ml_api_open(&mapped, path, NULL, 0, &om, &err) == LML_OK &&
        ml_api_open(&m, NULL, img, (size_t)size, &o, &err) == LML_OK)
        CHECK(eval8(mapped, a) && eval8(m, b) && !memcmp(a, b, sizeof a),
              "an image handed over (LML_LOAD_TAKE): logits differ from the file mapped");
    else
        CHECK(0, "open mapped and handed over: %s", err.message);
    lml_model_close(m);
    lml_model_close(mapped);
    ml_aligned_free(img);
    GROUP_DONE("load: an image handed over (LML_LOAD_TAKE) has the mapped file's logits; refused for a file, a load outside 0 .. 3 refused", f0);
}

/* The context: LML_DEFAULT_CONTEXT by default for a model trained for more
 * (its KV cache with it), the model's whole one with LML_CONTEXT_MODEL, N
 * with N; below LML_CONTEXT_MODEL refused. */
static void test_context(void) {
    int f0 = tl_failed;
    char path[] = "/tmp/ml_api_ctx_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    if (fd < 0) return;
    close(fd);
    ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 512, 8192, ML_TYPE_Q8_0, 1);
    ml_err e = {{0}};
    CHECK(ml_mlb_random_write(path, &h, 5, &e) == ML_OK, "write the model: %s", e.msg);
    static const struct { int asked, context; } cases[] = {
        {0, LML_DEFAULT_CONTEXT}, {LML_CONTEXT_MODEL, 8192}, {100, 100}, {8192, 8192}, {1 << 20, 8192}};
    size_t kv_default = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lml_model *m = NULL;
        lml_error err = {{0}};
        lml_model_options o = {.no_tokenizer = 1, .threads = 1, .context = cases[i].asked};
        lml_model_info info = {0};
        if (ml_api_open(&m, path, NULL, 0, &o, &err) == LML_OK) lml_model_get_info(m, &info);
        CHECK(m && info.context == cases[i].context && info.train_context == 8192,
              "context %d: expected %d (of 8192), got %d: %s", cases[i].asked, cases[i].context, info.context,
              err.message);
        if (!cases[i].asked) kv_default = info.kv_bytes;
        if (cases[i].asked == LML_CONTEXT_MODEL)
            CHECK(info.kv_bytes == 2 * kv_default, "the whole context's KV cache: %zu bytes, the default's %zu",
                  info.kv_bytes, kv_default);
        lml_model_close(m);
    }
    lml_model *m = NULL;
    lml_error err = {{0}};
    lml_model_options o = {.no_tokenizer = 1, .context = -2};
    CHECK(ml_api_open(&m, path, NULL, 0, &o, &err) == LML_E_ARG && !m && strstr(err.message, "LML_CONTEXT_MODEL"),
          "context -2: expected LML_E_ARG, got '%s'", err.message);
    unlink(path);
    GROUP_DONE("context: 4096 by default for a model of 8192, all of it with LML_CONTEXT_MODEL, N with N; -2 refused",
               f0);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    const char *models = getenv("MODELS") && *getenv("MODELS") ? getenv("MODELS") : "../shared/models";
    char tpath[1024], path[] = "/tmp/ml_api_chat_XXXXXX";
    snprintf(tpath, sizeof tpath, "%s/stories260K/tok512.bin", models);
    if (access(tpath, R_OK)) {
        SKIP("the chat API: %s not found (set MODELS to the models folder)", tpath);
        return tl_summary();
    }
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    if (fd < 0) return tl_summary();
    close(fd);
    ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 512, 128, ML_TYPE_Q8_0, 1);
    ml_err e = {{0}};
    lml_error err = {{0}};
    lml_model *m = NULL, *bare = NULL;
    lml_model_options o = {.tokenizer = tpath, .threads = 1}, ob = {.threads = 1, .no_tokenizer = 1};
    CHECK(ml_mlb_random_write(path, &h, 5, &e) == ML_OK, "write the model: %s", e.msg);
    CHECK(ml_api_open(&m, path, NULL, 0, &o, &err) == LML_OK && ml_api_open(&bare, path, NULL, 0, &ob, &err) == LML_OK,
          "open: %s", err.message);
    if (m && bare) {
        test_open(m, bare);
        test_render(m, tpath);
        test_tokens(m);
        test_sampler(m);
        test_load_take(path);
        test_context();
    }
    lml_model_close(m);
    lml_model_close(bare);
    unlink(path);
    return tl_summary();
}
