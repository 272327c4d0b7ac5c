/* Batched prefill (ml_forward_batch) against ml_forward token by token, on
 * random-weight models. Both run the one layer sequence (model/transformer.c;
 * decode is a batch of one), so this checks that a token's results do not
 * depend on the batch it is in: every token's logits, the last token's
 * logits, the KV cache rows and the decode step after the prompt, bit for
 * bit; Q8_0 and Q4_0, GQA and not, batches smaller than, equal to and larger
 * than the prompt (odd sizes included), a second batch at pos0 > 0, and every
 * thread count the build has. Bad arguments return ML_E_ARG before anything runs.
 * A model whose image is handed over (ML_FILE_TAKE) gets its matrices in the
 * build's layout (core/pack.h): the same logits, batched or not. */
#include <string.h>

#include "core/mem.h"
#include "core/threads.h"
#include "model/mlb_random.h"
#include "model/model.h"
#include "ops/ops.h"
#include "tests/testlib.h"

enum { PROMPT = 21, SEQ = 40, MAXV = 512 };

typedef struct {
    const char *name;
    uint32_t dim, n_layers, n_heads, n_kv_heads, hidden, vocab, wtype, shared;
} shape;

static const shape shapes[] = {
    {"Q8_0 GQA 4/2 heads, vocab 301", 64, 2, 4, 2, 96, 301, ML_TYPE_Q8_0, 0},
    {"Q4_0 GQA 4/2 heads, vocab 301", 64, 2, 4, 2, 96, 301, ML_TYPE_Q4_0, 0},
    {"Q8_0 8 heads, hidden 160, shared classifier", 96, 3, 8, 8, 160, 260, ML_TYPE_Q8_0, 1},
    {"Q4_0 MQA 4/1 heads", 64, 1, 4, 1, 128, 200, ML_TYPE_Q4_0, 1},
};

typedef struct {
    unsigned char *img;
    size_t size;
} image;

static image make_image(const shape *s) {
    ml_mlb_header h = ml_mlb_make_header(s->dim, s->n_layers, s->n_heads, s->n_kv_heads, s->hidden, s->vocab, SEQ,
                                         s->wtype, s->shared);
    image im = {NULL, (size_t)ml_mlb_random_bytes(&h)};
    im.img = ml_aligned_alloc(64, ml_arena_round(im.size));
    if (im.img) ml_mlb_random_fill(im.img, &h, 11);
    return im;
}

static int open_model(ml_model *m, const image *im, int batch, int all_logits, int threads) {
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = 1, .n_threads = threads, .batch = batch, .all_logits = all_logits};
    ml_status s = ml_model_open_buffer(m, im->img, im->size, "random", &oo, &err);
    CHECK(s == ML_OK, "open (batch %d, all_logits %d, -t %d): %s", batch, all_logits, threads, err.msg);
    return s == ML_OK;
}

/* The reference: ml_forward token by token, every position's logits. */
static float ref_logits[SEQ][MAXV];
static float got_logits[SEQ][MAXV];
static int prompt[SEQ];

/* vocab: the logits a callback gets (fewer than a row of got_logits). */
typedef struct { int calls, bad_order, next, vocab; } collector;

static ml_status collect(void *ud, int pos, const float *logits, ml_err *err) {
    collector *c = ud;
    (void)err;
    c->bad_order += pos != c->next;
    c->next = pos + 1;
    c->calls++;
    if (pos >= 0 && pos < SEQ) memcpy(got_logits[pos], logits, (size_t)c->vocab * sizeof *logits);
    return ML_OK;
}

static int same_kv(const ml_model *a, const ml_model *b, int n) {
    const ml_config *c = &a->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        size_t off = (size_t)l * c->max_seq * c->kv_dim, len = (size_t)n * c->kv_dim * sizeof(float);
        if (memcmp(a->s.key_cache + off, b->s.key_cache + off, len) ||
            memcmp(a->s.val_cache + off, b->s.val_cache + off, len))
            return 0;
    }
    return 1;
}

static size_t vocab_bytes(const ml_model *m) { return (size_t)m->cfg.vocab * sizeof(float); }

/* One batched model against the reference: the prompt in two calls
 * (split at `split`, 0 = one call), every token's logits, then a decode step. */
static void compare(const shape *sh, const image *im, const ml_model *ref, int batch, int split, int threads,
                    const float *ref_next) {
    ml_model m;
    ml_err err = {{0}};
    if (!open_model(&m, im, batch, 1, threads)) return;
    collector col = {0, 0, 0, m.cfg.vocab};
    ml_status s = ML_OK;
    if (split) s = ml_forward_batch(&m, prompt, split, 0, collect, &col, &err);
    if (!s) s = ml_forward_batch(&m, prompt + split, PROMPT - split, split, collect, &col, &err);
    CHECK(s == ML_OK, "%s -b %d split %d -t %d: %s", sh->name, batch, split, threads, err.msg);
    CHECK(col.calls == PROMPT && !col.bad_order, "%s -b %d: %d logits callbacks (expected %d), %d out of order",
          sh->name, batch, col.calls, PROMPT, col.bad_order);
    int bad = 0;
    for (int p = 0; p < PROMPT; p++) bad += memcmp(got_logits[p], ref_logits[p], vocab_bytes(&m)) != 0;
    CHECK(bad == 0, "%s -b %d split %d -t %d: %d of %d positions' logits differ from token by token", sh->name,
          batch, split, threads, bad, PROMPT);
    CHECK(!memcmp(m.s.logits, ref_logits[PROMPT - 1], vocab_bytes(&m)),
          "%s -b %d: the last logits in m->s.logits differ", sh->name, batch);
    CHECK(same_kv(&m, ref, PROMPT), "%s -b %d split %d -t %d: KV cache differs", sh->name, batch, split, threads);
    s = ml_forward(&m, 7, PROMPT, &err);
    CHECK(s == ML_OK && !memcmp(m.s.logits, ref_next, vocab_bytes(&m)),
          "%s -b %d: the decode step after the prompt differs (%s)", sh->name, batch, err.msg);
    ml_model_close(&m);

    /* Without all_logits: only the last token's logits. */
    if (!open_model(&m, im, batch, 0, threads)) return;
    s = ml_forward_batch(&m, prompt, PROMPT, 0, NULL, NULL, &err);
    CHECK(s == ML_OK && !memcmp(m.s.logits, ref_logits[PROMPT - 1], vocab_bytes(&m)),
          "%s -b %d -t %d, last logits only: differ from token by token (%s)", sh->name, batch, threads, err.msg);
    CHECK(same_kv(&m, ref, PROMPT), "%s -b %d, last logits only: KV cache differs", sh->name, batch);
    ml_model_close(&m);
}

/* A copy of the image handed over (ML_FILE_TAKE): the loader lays out each
 * matrix as the build's kernels ask (ml_op_weight_layout; the embedding
 * table, and a classifier that shares it, stay row-major), and the prompt
 * in batches of `batch` and a decode step give the reference's bits. */
static void compare_taken(const shape *sh, const image *im, int batch, int threads, const float *ref_next) {
    unsigned char *copy = ml_aligned_alloc(64, ml_arena_round(im->size));
    CHECK(copy != NULL, "%s: a copy of the image", sh->name);
    if (!copy) return;
    memcpy(copy, im->img, im->size);
    ml_model m;
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = ML_FILE_TAKE, .n_threads = threads, .batch = batch, .all_logits = 1};
    ml_status s = ml_model_open_buffer(&m, copy, im->size, "random", &oo, &err);
    CHECK(s == ML_OK, "%s: open, handed over: %s", sh->name, err.msg);
    if (s == ML_OK) {
        const ml_layer *L = &m.w.layers[m.cfg.n_layers - 1];
        const int want = ml_op_weight_layout(&L->w2);
        CHECK(L->wq.layout == want && L->w2.layout == want && m.w.tok_emb.layout == ML_LAYOUT_ROWS &&
                  (sh->shared || m.w.wcls.layout == want),
              "%s: layouts wq %d w2 %d tok_emb %d wcls %d, expected %d (tok_emb rows)", sh->name, L->wq.layout,
              L->w2.layout, m.w.tok_emb.layout, m.w.wcls.layout, want);
        collector col = {0, 0, 0, m.cfg.vocab};
        s = ml_forward_batch(&m, prompt, PROMPT, 0, collect, &col, &err);
        int bad = 0;
        for (int p = 0; p < PROMPT; p++) bad += memcmp(got_logits[p], ref_logits[p], vocab_bytes(&m)) != 0;
        CHECK(s == ML_OK && col.calls == PROMPT && bad == 0,
              "%s, layout %d, -b %d -t %d: %d of %d positions' logits differ from the row layout's (%s)", sh->name,
              want, batch, threads, bad, PROMPT, err.msg);
        s = ml_forward(&m, 7, PROMPT, &err);
        CHECK(s == ML_OK && !memcmp(m.s.logits, ref_next, vocab_bytes(&m)),
              "%s, layout %d: the decode step after the prompt differs (%s)", sh->name, want, err.msg);
        ml_model_close(&m);
    }
    ml_aligned_free(copy);
}

static void test_shape(const shape *sh, const int *threads, int n_threads) {
    int f0 = tl_failed;
    image im = make_image(sh);
    CHECK(im.img != NULL, "%s: image", sh->name);
    ml_model ref;
    ml_err err = {{0}};
    if (!im.img || !open_model(&ref, &im, 0, 0, 1)) return;
    for (int p = 0; p < PROMPT; p++) {
        CHECK(ml_forward(&ref, prompt[p], p, &err) == ML_OK, "%s: reference forward: %s", sh->name, err.msg);
        memcpy(ref_logits[p], ref.s.logits, vocab_bytes(&ref));
    }
    static float ref_next[MAXV];
    ml_forward(&ref, 7, PROMPT, &err);
    memcpy(ref_next, ref.s.logits, vocab_bytes(&ref));

    /* Batches of 2, odd sizes, the prompt's length, larger than it, and the
     * context (a batch above it is capped); splits at a batch boundary and
     * inside one. */
    static const int batches[] = {2, 3, 7, 16, PROMPT, 64, SEQ};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (int k = 0; k < n_threads; k++) compare(sh, &im, &ref, batches[b], 0, threads[k], ref_next);
    compare(sh, &im, &ref, 7, 7, threads[n_threads - 1], ref_next);
    compare(sh, &im, &ref, 8, 5, 1, ref_next);
    compare(sh, &im, &ref, 1, 9, 1, ref_next); /* -b 1: token by token through ml_forward_batch */
    for (int k = 0; k < n_threads; k++) {
        compare_taken(sh, &im, 1, threads[k], ref_next);
        compare_taken(sh, &im, 7, threads[k], ref_next);
        compare_taken(sh, &im, PROMPT, threads[k], ref_next);
    }

    /* A batch of one needs no all_logits for every token's logits. */
    ml_model one;
    if (open_model(&one, &im, 0, 0, 1)) {
        collector col = {0, 0, 0, one.cfg.vocab};
        ml_status st = ml_forward_batch(&one, prompt, PROMPT, 0, collect, &col, &err);
        int bad = 0;
        for (int p = 0; p < PROMPT; p++) bad += memcmp(got_logits[p], ref_logits[p], vocab_bytes(&one)) != 0;
        CHECK(st == ML_OK && col.calls == PROMPT && !bad,
              "%s -b 0 without all_logits: every token's logits: %s, %d calls, %d differ", sh->name, err.msg,
              col.calls, bad);
        ml_model_close(&one);
    }
    ml_model_close(&ref);
    ml_aligned_free(im.img);
    char what[160];
    snprintf(what, sizeof what,
             "%s: ml_forward_batch bit-identical to ml_forward (logits, KV cache, next step), in the build's layout too",
             sh->name);
    GROUP_DONE(what, f0);
}

/* Bad arguments: ML_E_ARG, and nothing written to the KV cache. */
static void test_bad_args(void) {
    int f0 = tl_failed;
    image im = make_image(&shapes[0]);
    ml_model m;
    ml_err err = {{0}};
    ml_open_opts neg = {.use_mmap = 1, .n_threads = 1, .batch = -1};
    CHECK(ml_model_open_buffer(&m, im.img, im.size, "random", &neg, &err) == ML_E_ARG,
          "batch -1 at open: expected ML_E_ARG");
    if (!open_model(&m, &im, 1000, 0, 1)) return;
    CHECK(m.b.cap == SEQ, "a batch of 1000 is capped at the context %d, got %d", SEQ, m.b.cap);
    memset(m.s.key_cache, 0, (size_t)m.cfg.max_seq * m.cfg.kv_dim * sizeof(float));
    collector col = {0, 0, 0, m.cfg.vocab};
    int bad_tok[3] = {1, 301, 2}, neg_tok[2] = {1, -1};
    struct { const int *tok; int n, pos0; ml_logits_fn each; const char *what; } cases[] = {
        {prompt, 0, 0, NULL, "n = 0"},
        {prompt, -3, 0, NULL, "n < 0"},
        {prompt, 5, -1, NULL, "pos0 < 0"},
        {prompt, SEQ + 1, 0, NULL, "n beyond the context"},
        {prompt, 10, SEQ - 9, NULL, "pos0 + n = context + 1"},
        {prompt, 2, SEQ, NULL, "pos0 = context"},
        {prompt, 1, 2147483647, NULL, "pos0 INT_MAX"},
        {prompt, 2147483647, 1, NULL, "n INT_MAX"},
        {bad_tok, 3, 0, NULL, "token = vocab"},
        {neg_tok, 2, 0, NULL, "token < 0"},
        {prompt, 3, 0, collect, "every token's logits without all_logits"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ml_status s = ml_forward_batch(&m, cases[i].tok, cases[i].n, cases[i].pos0, cases[i].each, &col, &err);
        CHECK(s == ML_E_ARG && err.msg[0], "%s: expected ML_E_ARG with a message, got %d", cases[i].what, s);
    }
    int dirty = 0;
    for (size_t i = 0; i < (size_t)m.cfg.max_seq * m.cfg.kv_dim; i++) dirty += m.s.key_cache[i] != 0.0f;
    CHECK(dirty == 0 && col.calls == 0, "refused batches wrote %d key cache values, %d callbacks", dirty, col.calls);
    CHECK(ml_forward_batch(&m, prompt, SEQ, 0, NULL, NULL, &err) == ML_OK, "the whole context in one batch: %s",
          err.msg);
    ml_model_close(&m);
    ml_aligned_free(im.img);
    GROUP_DONE("bad arguments: ML_E_ARG before anything runs; batch capped at the context", f0);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
#if ML_HAS_THREADS
    static const int threads[] = {1, 2, 3};
#else
    static const int threads[] = {1};
#endif
    int n_threads = (int)(sizeof threads / sizeof *threads);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    prompt[0] = 1;
    for (int i = 1; i < SEQ; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        prompt[i] = (int)(r % 200);
    }
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) test_shape(&shapes[s], threads, n_threads);
    test_bad_args();
    return tl_summary();
}
