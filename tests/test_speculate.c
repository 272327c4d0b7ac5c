/* Speculative decoding (model/speculate.h) on random-weight models: the
 * prompt lookup's proposals on hand-made contexts (longest suffix wins, the
 * latest on a tie, a cycle repeated past the end, too short a repeat
 * proposes nothing); ml_generate_spec against ml_generate, the same emitted
 * tokens, every position's logits, positions run and sampler state after,
 * bit for bit: greedy, seeded sampling with the filters and a repetition
 * penalty, prompts shorter and longer than the batch, a context that fills
 * up mid-draft, prompt lookup and draft models (the model itself: every
 * draft accepted; another: most refused), every thread count of the build;
 * and ml_spec_init's refusals (draft length, a model opened without
 * all_logits, a draft model of another vocab or a shorter context). */
#include <string.h>

#include "core/mem.h"
#include "core/threads.h"
#include "model/generate.h"
#include "model/mlb_random.h"
#include "model/model.h"
#include "model/speculate.h"
#include "tests/testlib.h"

enum { SEQ = 48, VOCAB = 301, MAXV = 512 };

/* ---- prompt lookup ------------------------------------------------------------ */

static int propose(const int *ctx, int n, int min_ngram, int max_ngram, int max_out, int *out) {
    for (int i = 0; i < 16; i++) out[i] = -1;
    return ml_lookup_propose(ctx, n, min_ngram, max_ngram, out, max_out);
}

static int same(const int *a, const int *b, int n) { return !memcmp(a, b, (size_t)n * sizeof *a); }

static void test_lookup(void) {
    int f0 = tl_failed, out[16];
    const int none[] = {1, 2, 3, 4, 5, 6};
    CHECK(propose(none, 6, 1, 8, 4, out) == 0, "no token repeats: nothing proposed");
    CHECK(propose(none, 1, 1, 8, 4, out) == 0 && propose(none, 0, 1, 8, 4, out) == 0, "n < 2: nothing proposed");
    const int cyc[] = {5, 6, 7, 8, 5, 6};
    const int want_cyc[] = {7, 8, 5, 6, 7, 8};
    CHECK(propose(cyc, 6, 2, 8, 6, out) == 6 && same(out, want_cyc, 6),
          "a cycle: what followed the repeat, then the cycle again past the end (got %d %d %d %d %d %d)", out[0],
          out[1], out[2], out[3], out[4], out[5]);
    CHECK(propose(cyc, 6, 2, 8, 3, out) == 3 && same(out, want_cyc, 3) && out[3] == -1, "max_out caps the proposal");
    CHECK(propose(cyc, 6, 3, 8, 4, out) == 0, "a repeat shorter than min_ngram: nothing proposed");
    const int one[] = {9, 7, 1, 2, 9};
    CHECK(propose(one, 5, 2, 8, 4, out) == 0 && propose(one, 5, 1, 8, 2, out) == 2 && out[0] == 7 && out[1] == 1,
          "a single-token repeat counts with min_ngram 1 only");
    /* [1 2 3] repeats at 0..2 (length 3); [2 3] also at 5..6 (later, shorter). */
    const int longest[] = {1, 2, 3, 9, 7, 2, 3, 4, 1, 2, 3};
    CHECK(propose(longest, 11, 2, 8, 1, out) == 1 && out[0] == 9, "the longest repeat wins over a later one (got %d)",
          out[0]);
    CHECK(propose(longest, 11, 1, 2, 1, out) == 1 && out[0] == 4,
          "max_ngram 2: the two repeats tie and the latest wins (got %d)", out[0]);
    const int tie[] = {2, 3, 4, 2, 3, 5, 2, 3};
    const int want_tie[] = {5, 2, 3, 5};
    CHECK(propose(tie, 8, 2, 8, 4, out) == 4 && same(out, want_tie, 4),
          "equally long repeats: the latest wins (got %d %d %d %d)", out[0], out[1], out[2], out[3]);
    const int run[] = {4, 4, 4, 4};
    CHECK(propose(run, 4, 2, 8, 5, out) == 5 && out[0] == 4 && out[4] == 4, "a run of one token continues");
    GROUP_DONE("lookup: proposals", f0);
}

/* ---- a generation, recorded --------------------------------------------------- */

typedef struct {
    int tokens[SEQ + 1], n_tokens;  /* (prev, token) pairs reduced to the tokens */
    float logits[SEQ][MAXV];
    int logit_pos[SEQ], n_logits, vocab;
    int prompt_done, stop_after;    /* stop_after > 0: should_stop after that many sampled tokens */
    int sampled;
} record;

static void on_logits(void *ud, int pos, const float *logits, int vocab) {
    record *r = ud;
    if (r->n_logits < SEQ) {
        r->logit_pos[r->n_logits] = pos;
        memcpy(r->logits[r->n_logits++], logits, (size_t)vocab * sizeof *logits);
    }
}
static void on_token(void *ud, int prev, int token) {
    record *r = ud;
    (void)prev;
    if (r->n_tokens <= SEQ) r->tokens[r->n_tokens++] = token;
    r->sampled += r->prompt_done;
}
static void on_prompt_done(void *ud, int n) {
    (void)n;
    ((record *)ud)->prompt_done = 1;
}
static int should_stop(void *ud) {
    record *r = ud;
    return r->stop_after > 0 && r->sampled >= r->stop_after;
}

typedef struct {
    float temp, topp, min_p, penalty;
    int top_k;
    const char *name;
} sampling;

/* scratch: the sampler's own (two samplers are compared after their runs). */
static void sampler_for(ml_sampler *smp, const ml_model *m, const sampling *sa, void *scratch) {
    ml_err err;
    ml_sampler_init(smp, m->cfg.vocab, sa->temp, sa->topp, 77, scratch);
    ml_sampler_set_filters(smp, sa->top_k, sa->min_p, sa->penalty, 16, m->cfg.max_seq, &err);
}

typedef struct {
    unsigned char *img;
    size_t size;
} image;

static image make_image(uint32_t dim, uint32_t layers, uint32_t vocab, uint32_t seq, uint32_t wtype, uint64_t seed) {
    ml_mlb_header h = ml_mlb_make_header(dim, layers, 4, 2, 96, vocab, seq, wtype, 0);
    image im = {NULL, (size_t)ml_mlb_random_bytes(&h)};
    im.img = ml_aligned_alloc(64, ml_arena_round(im.size));
    if (im.img) ml_mlb_random_fill(im.img, &h, seed);
    return im;
}

static int open_image(ml_model *m, const image *im, int batch, int all_logits, int threads, int max_seq) {
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = 1, .n_threads = threads, .batch = batch, .all_logits = all_logits,
                       .max_seq = max_seq};
    ml_status s = ml_model_open_buffer(m, im->img, im->size, "random", &oo, &err);
    CHECK(s == ML_OK, "open (batch %d, -t %d): %s", batch, threads, err.msg);
    return s == ML_OK;
}

static record plain_rec, spec_rec;

static int same_record(const record *a, const record *b) {
    if (a->n_tokens != b->n_tokens || a->n_logits != b->n_logits) return 0;
    if (!same(a->tokens, b->tokens, a->n_tokens) || !same(a->logit_pos, b->logit_pos, a->n_logits)) return 0;
    for (int i = 0; i < a->n_logits; i++)
        if (memcmp(a->logits[i], b->logits[i], (size_t)a->vocab * sizeof(float))) return 0;
    return 1;
}

/* One case: plain decoding against speculation with this drafter. */
static void compare(const char *what, const image *target, const image *draft_im, int max_draft, const sampling *sa,
                    const int *prompt, int n_prompt, int steps, int threads, int stop_after, long *accepted) {
    ml_model m, d;
    ml_err err = {{0}};
    if (!open_image(&m, target, 16, 1, threads, 0)) return;
    ml_gen_callbacks cb = {on_logits, on_token, on_prompt_done, should_stop, NULL, {0}, 0};
    ml_sampler smp, smp2;
    int n_plain = -1, n_spec = -2;

    memset(&plain_rec, 0, sizeof plain_rec);
    plain_rec.vocab = m.cfg.vocab, plain_rec.stop_after = stop_after, cb.ud = &plain_rec;
    static _Alignas(16) unsigned char scratch[2][MAXV * 8 + SEQ * sizeof(int)];
    if (ml_sampler_scratch_bytes(m.cfg.vocab, m.cfg.max_seq) > sizeof scratch[0]) {
        CHECK(0, "%s: sampler scratch too small", what);
        ml_model_close(&m);
        return;
    }
    sampler_for(&smp, &m, sa, scratch[0]);
    ml_status s1 = ml_generate(&m, &smp, prompt, n_prompt, steps, &cb, &n_plain, &err);

    int have_draft = draft_im && open_image(&d, draft_im, 16, 0, threads, 0);
    ml_spec sp;
    ml_spec_opts so = {.max_draft = max_draft, .draft = have_draft ? &d : NULL};
    ml_status s0 = ml_spec_init(&sp, &m, &so, &err);
    CHECK(s0 == ML_OK, "%s: ml_spec_init: %s", what, err.msg);
    if (!s0) {
        memset(&spec_rec, 0, sizeof spec_rec);
        spec_rec.vocab = m.cfg.vocab, spec_rec.stop_after = stop_after, cb.ud = &spec_rec;
        sampler_for(&smp2, &m, sa, scratch[1]);
        ml_status s2 = ml_generate_spec(&m, &smp2, &sp, prompt, n_prompt, steps, &cb, &n_spec, &err);
        CHECK(s1 == ML_OK && s2 == ML_OK, "%s: generation failed: %s", what, err.msg);
        CHECK(same_record(&plain_rec, &spec_rec) && n_plain == n_spec,
              "%s (%s, -t %d): speculation's tokens or logits differ from plain decoding's (%d/%d tokens, "
              "%d/%d positions)", what, sa->name, threads, spec_rec.n_tokens, plain_rec.n_tokens, n_spec, n_plain);
        CHECK(smp.rng == smp2.rng && smp.n_hist == smp2.n_hist && same(smp.hist, smp2.hist, smp.last_n),
              "%s (%s): the sampler's state after differs from plain decoding's", what, sa->name);
        CHECK(sp.accepted <= sp.drafted && (sp.batches > 0 || n_prompt == steps || spec_rec.n_tokens == n_prompt - 1), "%s: counters (drafted %ld, accepted %ld, batches %ld)",
              what, sp.drafted, sp.accepted, sp.batches);
        if (accepted) *accepted += sp.accepted;
        ml_spec_free(&sp);
    }
    if (have_draft) ml_model_close(&d);
    ml_model_close(&m);
}

static void test_identity(const int *threads, int n_threads) {
    int f0 = tl_failed;
    image tq8 = make_image(64, 2, VOCAB, SEQ, ML_TYPE_Q8_0, 11);
    image tq4 = make_image(64, 2, VOCAB, SEQ, ML_TYPE_Q4_0, 12);
    image other = make_image(64, 1, VOCAB, SEQ, ML_TYPE_Q4_0, 13);
    CHECK(tq8.img && tq4.img && other.img, "images");
    if (!tq8.img || !tq4.img || !other.img) return;
    static const sampling samplings[] = {
        {0.0f, 0.9f, 0.0f, 1.0f, 0, "greedy"},
        {1.0f, 0.9f, 0.0f, 1.0f, 0, "temp 1 top-p 0.9"},
        {0.7f, 0.0f, 0.05f, 1.3f, 20, "temp 0.7 top-k 20 min-p 0.05 penalty 1.3"},
        {0.0f, 0.0f, 0.0f, 1.5f, 0, "greedy, penalty 1.5"},
        {0.3f, 1.0f, 0.0f, 1.0f, 0, "temp 0.3"},
    };
    /* Short (1, 3 tokens), longer than the batch of 16, and one that leaves
     * 2 steps: the context fills up mid-draft in every case (steps = SEQ). */
    int prompt[SEQ];
    for (int i = 0; i < SEQ; i++) prompt[i] = i ? (7 * i + 3) % VOCAB : 1;
    static const int prompts[] = {1, 3, 20, SEQ - 2};
    long acc_lookup = 0, acc_self = 0;
    for (size_t s = 0; s < sizeof samplings / sizeof *samplings; s++)
        for (size_t p = 0; p < sizeof prompts / sizeof *prompts; p++) {
            const sampling *sa = &samplings[s];
            compare("lookup 8", &tq8, NULL, 8, sa, prompt, prompts[p], SEQ, threads[s % n_threads], 0, &acc_lookup);
            compare("lookup 1, Q4_0", &tq4, NULL, 1, sa, prompt, prompts[p], SEQ, 1, 0, &acc_lookup);
            compare("lookup 15, 30 steps", &tq4, NULL, 15, sa, prompt, prompts[p] < 30 ? prompts[p] : 30, 30, 1, 0,
                    NULL);
            compare("draft model: itself", &tq8, &tq8, 6, sa, prompt, prompts[p], SEQ, threads[p % n_threads], 0,
                    &acc_self);
            compare("draft model: another", &tq8, &other, 4, sa, prompt, prompts[p], SEQ, 1, 0, NULL);
        }
    compare("lookup 8, stopped after 5 tokens", &tq8, NULL, 8, &samplings[0], prompt, 3, SEQ, 1, 5, NULL);
    compare("draft, stopped after 7 tokens", &tq8, &tq8, 8, &samplings[1], prompt, 3, SEQ, 1, 7, NULL);
    CHECK(acc_lookup > 0, "lookup: some drafts accepted (greedy random models cycle), got %ld", acc_lookup);
    CHECK(acc_self > 0, "the model as its own draft: drafts accepted, got %ld", acc_self);
    GROUP_DONE("speculation: identical to plain decoding", f0);
    ml_aligned_free(tq8.img);
    ml_aligned_free(tq4.img);
    ml_aligned_free(other.img);
}

/* ---- refusals --------------------------------------------------------------------- */

static void test_refusals(void) {
    int f0 = tl_failed;
    image t = make_image(64, 1, VOCAB, SEQ, ML_TYPE_Q8_0, 21);
    image v = make_image(64, 1, VOCAB - 1, SEQ, ML_TYPE_Q8_0, 22);
    image c = make_image(64, 1, VOCAB, SEQ / 2, ML_TYPE_Q8_0, 23);
    ml_model m, no_logits, small, dv, dc;
    if (!t.img || !v.img || !c.img || !open_image(&m, &t, 16, 1, 1, 0) || !open_image(&no_logits, &t, 16, 0, 1, 0) ||
        !open_image(&small, &t, 4, 1, 1, 0) || !open_image(&dv, &v, 4, 0, 1, 0) || !open_image(&dc, &c, 4, 0, 1, 0))
        return;
    ml_spec sp;
    ml_err err = {{0}};
    ml_spec_opts o0 = {0}, o65 = {.max_draft = ML_SPEC_MAX_DRAFT + 1}, o8 = {.max_draft = 8};
    ml_spec_opts ov = {.max_draft = 4, .draft = &dv}, oc = {.max_draft = 4, .draft = &dc};
    CHECK(ml_spec_init(&sp, &m, &o0, &err) == ML_E_ARG && strstr(err.msg, "draft length"), "0 drafts: %s", err.msg);
    CHECK(ml_spec_init(&sp, &m, &o65, &err) == ML_E_ARG && strstr(err.msg, "draft length"), "65 drafts: %s", err.msg);
    CHECK(ml_spec_init(&sp, &no_logits, &o8, &err) == ML_E_ARG && strstr(err.msg, "all_logits"),
          "a model without all_logits: %s", err.msg);
    CHECK(ml_spec_init(&sp, &small, &o8, &err) == ML_E_ARG && strstr(err.msg, "batch"), "a batch of 4 for 8 drafts: %s",
          err.msg);
    CHECK(ml_spec_init(&sp, &m, &ov, &err) == ML_E_ARG && strstr(err.msg, "vocab"), "a draft of another vocab: %s",
          err.msg);
    CHECK(ml_spec_init(&sp, &m, &oc, &err) == ML_E_ARG && strstr(err.msg, "context"),
          "a draft of a shorter context: %s", err.msg);
    ml_model_close(&dc);
    /* The draft's context capped to the model's at open, as ml_run does: fits. */
    ml_model m24;
    if (open_image(&m24, &t, 16, 1, 1, SEQ / 2)) {
        ml_status s = open_image(&dc, &c, 4, 0, 1, 0) ? ml_spec_init(&sp, &m24, &oc, &err) : ML_E_ARG;
        CHECK(s == ML_OK, "a model capped at the draft's context: accepted (%s)", err.msg);
        if (!s) ml_spec_free(&sp);
        ml_model_close(&dc);
        ml_model_close(&m24);
    }
    GROUP_DONE("speculation: refusals", f0);
    ml_model_close(&m);
    ml_model_close(&no_logits);
    ml_model_close(&small);
    ml_model_close(&dv);
    ml_aligned_free(t.img);
    ml_aligned_free(v.img);
    ml_aligned_free(c.img);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    static const int threads[] = {1, 2, 3}; /* -t 2 and 3 only with a thread pool */
    test_lookup();
    test_identity(threads, ML_HAS_THREADS ? 3 : 1);
    test_refusals();
    return tl_summary();
}
