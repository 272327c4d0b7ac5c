/* include/legacy_ml.h over model/: open, tokens, eval, generate. Runs only
 * after api/open.c has checked the CPU. Allocates when a model opens (the
 * handle, the model's arena, the tokenizer) and never after. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/file.h"
#include "core/quant.h"
#include "core/threads.h"
#include "model/generate.h"
#include "model/gguf_mlb.h"
#include "model/mlb.h" /* ML_MLB_ROPE_LLAMA3 */
#include "model/sampler.h"

#define API_DEFAULT_BATCH 128 /* ml_run's -b default (app/cli.h ML_RUN_DEFAULT_BATCH) */
#define API_MAX_THREADS 256   /* ml_run's -t range */

_Static_assert((int)LML_E_IO == (int)ML_E_IO && (int)LML_E_FORMAT == (int)ML_E_FORMAT &&
                   (int)LML_E_SHAPE == (int)ML_E_SHAPE && (int)LML_E_NOMEM == (int)ML_E_NOMEM &&
                   (int)LML_E_ISA == (int)ML_E_ISA && (int)LML_E_ARG == (int)ML_E_ARG,
               "lml_status mirrors ml_status");
_Static_assert(sizeof(((lml_error *)0)->message) == sizeof(((ml_err *)0)->msg), "one message size");

/* ---- errors ------------------------------------------------------------- */

lml_status ml_api_error(lml_error *out, const ml_err *e, ml_status s) {
    if (out) {
        if (s && e) memcpy(out->message, e->msg, sizeof out->message);
        else out->message[0] = 0;
        out->message[sizeof out->message - 1] = 0;
    }
    return (lml_status)s;
}

lml_status ml_api_fail(lml_error *out, ml_status s, const char *what) {
    ml_err e;
    ml_errf(&e, s, "%s", what);
    return ml_api_error(out, &e, s);
}

const char *lml_status_name(lml_status s) {
    static const char *const names[] = {"LML_OK",    "LML_E_IO",  "LML_E_FORMAT", "LML_E_SHAPE",
                                        "LML_E_NOMEM", "LML_E_ISA", "LML_E_ARG"};
    _Static_assert(sizeof names / sizeof *names == ML_STATUS_COUNT, "a name per status");
    return (int)s >= 0 && (int)s < ML_STATUS_COUNT ? names[s] : "LML_E_?";
}

/* ---- open and close ------------------------------------------------------ */

lml_status ml_api_open(lml_model **out, const char *path, const void *data, size_t size,
                       const lml_model_options *opts, lml_error *err) {
    static const lml_model_options none;
    const lml_model_options *o = opts ? opts : &none;
    if (!out) return ml_api_fail(err, ML_E_ARG, "out: expected a place for the model handle, got NULL");
    *out = NULL;
    if (!path && !data) return ml_api_fail(err, ML_E_ARG, "model: expected a path or a buffer, got NULL");
    if (o->threads < 0 || o->threads > API_MAX_THREADS)
        return ml_api_fail(err, ML_E_ARG, "threads: expected 0 (default) .. 256");
    if (o->context < LML_CONTEXT_MODEL)
        return ml_api_fail(err, ML_E_ARG, "context: expected 0 (default), LML_CONTEXT_MODEL (-1) or a positive length");
    if (o->batch < 0) return ml_api_fail(err, ML_E_ARG, "batch: expected 0 (default) or a positive token count");
    if (o->load < LML_LOAD_AUTO || o->load > LML_LOAD_TAKE)
        return ml_api_fail(err, ML_E_ARG, "load: expected LML_LOAD_AUTO, _MMAP, _READ or _TAKE (0 .. 3)");
    if (o->load == LML_LOAD_TAKE && path)
        return ml_api_fail(err, ML_E_ARG, "load: LML_LOAD_TAKE is for lml_model_open_memory, not a file");
    /* A GGUF file: its .mlb in the cache, converted the first time (the
     * programs say so on stderr first, app/cli.c ml_cli_model_path). */
    char cached[4096];
    if (path && ml_gguf_is_file(path)) {
        ml_err ge = {{0}};
        ml_status gs = ml_gguf_cached(path, cached, sizeof cached, NULL, NULL, &ge);
        if (gs) return ml_api_error(err, &ge, gs);
        path = cached;
    }
    lml_model *h = calloc(1, sizeof *h);
    if (!h) return ml_api_fail(err, ML_E_NOMEM, "out of memory for the model handle");
    ml_open_opts oo = {.use_mmap = o->load == LML_LOAD_MMAP ? 1 : o->load == LML_LOAD_READ ? 0
                                 : o->load == LML_LOAD_TAKE ? ML_FILE_TAKE : ML_FILE_AUTO,
                       .max_seq = o->context == LML_CONTEXT_MODEL ? 0 : o->context ? o->context : LML_DEFAULT_CONTEXT,
                       .n_threads = o->threads ? o->threads : ml_threads_default(),
                       .batch = o->batch ? o->batch : API_DEFAULT_BATCH, .all_logits = o->all_logits != 0};
    ml_err e = {{0}};
    ml_status s = path ? ml_model_open(&h->m, path, &oo, &e)
                       : ml_model_open_buffer(&h->m, data, size, "<memory>", &oo, &e);
    if (s) {
        free(h);
        return ml_api_error(err, &e, s);
    }
    if (!o->no_tokenizer && (o->tokenizer || h->m.tokenizer.len)) { /* none given: the one the file embeds, if any */
        lml_status ts = lml_model_load_tokenizer(h, o->tokenizer, err);
        if (ts) {
            lml_model_close(h);
            return ts;
        }
    }
    *out = h;
    return ml_api_error(err, NULL, ML_OK);
}

lml_status lml_model_load_tokenizer(lml_model *m, const char *path, lml_error *err) {
    if (!m) return ml_api_fail(err, ML_E_ARG, "tokenizer: expected a model, got NULL");
    if (m->has_tok) ml_tok_free(&m->tok);
    m->has_tok = 0;
    ml_err e = {{0}};
    ml_status s = ml_tok_load_or_embedded(&m->tok, path, m->m.tokenizer.data, m->m.tokenizer.len, m->m.cfg.vocab, &e);
    if (s) return ml_api_error(err, &e, s);
    m->has_tok = 1;
    m->tok_from_file = path != NULL;
    return ml_api_error(err, NULL, ML_OK);
}

void lml_model_close(lml_model *m) {
    if (!m) return;
    if (m->has_spec) ml_spec_free(&m->sp);
    if (m->has_tok) ml_tok_free(&m->tok);
    ml_model_close(&m->m);
    free(m);
}

void lml_model_get_info(const lml_model *m, lml_model_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!m) return;
    const ml_config *c = &m->m.cfg;
    *info = (lml_model_info){
        .vocab = c->vocab, .context = c->max_seq, .train_context = c->file_max_seq, .dim = c->dim,
        .n_layers = c->n_layers, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
        .hidden_dim = c->hidden_dim, .threads = ml_pool_size(m->m.ops.pool),
        .batch = m->m.b.cap > 1 ? m->m.b.cap : 1, .weights = c->wtype == ML_TYPE_Q8_0 ? "Q8_0" : "Q4_0",
        .f16_scales = c->stype == ML_TYPE_F16,
        .storage = ml_file_kind_name(m->m.file.kind), .weight_bytes = m->m.weight_bytes,
        .arena_bytes = m->m.arena.cap, .kv_bytes = m->m.kv_bytes};
    info->file_version = c->version;
    info->head_dim = c->head_dim;
    info->qkv_bias = c->qkv_bias;
    info->qk_norm = c->qk_norm;
    info->rope_scaling = (unsigned)c->rope_scaling == ML_MLB_ROPE_LLAMA3 ? "llama3" : "none";
    info->embeds_tokenizer = m->m.tokenizer.len > 0;
    info->chat_template_bytes = m->m.chat_template.len;
    if (m->has_tok) {
        info->tokenizer = ml_tok_kind_name(&m->tok);
        info->bos = ml_tok_bos(&m->tok);
        info->eos = ml_tok_eos(&m->tok);
        info->eot = ml_tok_eot(&m->tok);
        info->add_bos = ml_tok_add_bos(&m->tok);
        info->byte_level = m->tok.kind == ML_TOK_KIND_BPE;
    }
    /* A separate classifier's embedding table is read a row a step, not whole. */
    info->decode_bytes = m->m.weight_bytes;
    if (!c->shared_classifier)
        info->decode_bytes -= (size_t)ml_quant_bytes(c->wtype, (uint64_t)c->vocab * c->dim) +
                              (size_t)((uint64_t)c->vocab * c->dim / ML_QK * ml_scale_bytes((ml_type)c->stype));
}

/* ---- tokens ------------------------------------------------------------- */

/* Either kind's need: the BPE bound of any tokenizer (10 entries a byte, more
 * for text NFC may grow) covers SentencePiece's (strlen + 3). */
size_t lml_tokenize_capacity(const char *text) {
    if (!text) text = "";
    return ml_bpe_max_tokens(NULL, text, strlen(text));
}
static lml_status tokenize(const lml_model *m, const char *text, int add_bos, int special, int *tokens,
                           size_t capacity, int *n_tokens, lml_error *err) {
    if (n_tokens) *n_tokens = 0;
    if (!m || !text || !tokens || !n_tokens)
        return ml_api_fail(err, ML_E_ARG, "tokenize: expected a model, a text and buffers, got NULL");
    if (!m->has_tok) return ml_api_fail(err, ML_E_ARG, "tokenize: the model has no tokenizer (lml_model_options.tokenizer; Python: tokenizer=)");
    size_t need = ml_tok_max_tokens(&m->tok, text);
    if (capacity < need) {
        ml_err e;
        ml_errf(&e, ML_E_ARG, "tokenize: expected room for %zu tokens (lml_tokenize_capacity), got %zu", need,
                capacity);
        return ml_api_error(err, &e, ML_E_ARG);
    }
    ml_err e = {{0}};
    return ml_api_error(err, &e, ml_tok_encode(&m->tok, text, add_bos != 0, 0, special, tokens, n_tokens, &e));
}

lml_status lml_tokenize(const lml_model *m, const char *text, int add_bos, int *tokens, size_t capacity,
                        int *n_tokens, lml_error *err) {
    return tokenize(m, text, add_bos, 0, tokens, capacity, n_tokens, err);
}

lml_status lml_tokenize_special(const lml_model *m, const char *text, int add_bos, int *tokens, size_t capacity,
                                int *n_tokens, lml_error *err) {
    return tokenize(m, text, add_bos, 1, tokens, capacity, n_tokens, err);
}

_Static_assert(LML_PIECE_MAX == ML_BPE_MAX_TOKEN_LEN, "the longest byte-level piece");

const char *lml_token_text(const lml_model *m, int token, size_t *len) {
    if (len) *len = 0;
    if (!m || !m->has_tok || token < 0 || token >= ml_tok_vocab(&m->tok)) return NULL;
    size_t n = 0;
    const char *p = ml_tok_text(&m->tok, token, &n);
    if (len) *len = p ? n : 0;
    return p;
}

const char *lml_token_piece(const lml_model *m, int prev, int token, size_t *len) {
    if (len) *len = 0;
    if (!m || !m->has_tok) return NULL;
    return ml_tok_decode(&m->tok, prev, token, len);
}

_Static_assert(sizeof(lml_utf8_state) == sizeof(ml_utf8_stream), "one UTF-8 stream state");

static ml_utf8_stream *utf8_state(lml_utf8_state *st) {
    return (ml_utf8_stream *)(void *)st;
}

size_t lml_utf8_feed(lml_utf8_state *st, const char *piece, size_t len, char *out) {
    return st && out && (piece || !len) ? ml_utf8_stream_feed(utf8_state(st), piece, len, out) : 0;
}

size_t lml_utf8_flush(lml_utf8_state *st, char *out) {
    return st && out ? ml_utf8_stream_flush(utf8_state(st), out) : 0;
}

/* ---- running ------------------------------------------------------------ */

/* A callback of every position's logits needs the batch's logits rows; a
 * model opened without them runs such a call token by token (the same
 * bits, ml_forward_batch's contract) through a batch capacity of one. */
static int narrow_batch(ml_model *m, int each) {
    int cap = m->b.cap;
    if (each && !m->b.logits) m->b.cap = 1;
    return cap;
}

typedef struct {
    lml_logits_fn each;
    void *ud;
    int vocab;
} eval_ctx;

static ml_status eval_each(void *ud, int pos, const float *logits, ml_err *err) {
    const eval_ctx *c = ud;
    int r = c->each(c->ud, pos, logits, c->vocab);
    if (r) ml_errf(err, ML_E_ARG, "stopped by the logits callback at position %d", pos);
    return (ml_status)r;
}

lml_status lml_eval(lml_model *m, const int *tokens, int n, int pos0, lml_logits_fn each, void *ud,
                    lml_error *err) {
    if (!m || !tokens) return ml_api_fail(err, ML_E_ARG, "eval: expected a model and tokens, got NULL");
    eval_ctx c = {each, ud, m->m.cfg.vocab};
    int cap = narrow_batch(&m->m, each != NULL);
    ml_err e = {{0}};
    ml_status s = ml_forward_batch(&m->m, tokens, n, pos0, each ? eval_each : NULL, &c, &e);
    m->m.b.cap = cap;
    return ml_api_error(err, &e, s);
}

const float *lml_logits(const lml_model *m) { return m ? m->m.s.logits : NULL; }

lml_sampler_options lml_sampler_defaults(void) {
    return (lml_sampler_options){.temperature = 1.0f, .top_p = 0.9f, .top_k = 0, .min_p = 0.0f,
                                 .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 0};
}

lml_status ml_api_sampler_init(ml_sampler *smp, const ml_model *m, const lml_sampler_options *opts, void *scratch,
                               lml_error *err) {
    lml_sampler_options so = opts ? *opts : lml_sampler_defaults();
    if (!(so.temperature >= 0.0f) || isinf(so.temperature))
        return ml_api_fail(err, ML_E_ARG, "temperature: expected a finite number >= 0");
    if (!(so.top_p >= 0.0f && so.top_p <= 1.0f)) return ml_api_fail(err, ML_E_ARG, "top_p: expected a number in [0, 1]");
    ml_err e = {{0}};
    ml_sampler_init(smp, m->cfg.vocab, so.temperature, so.top_p, so.seed, scratch);
    return ml_api_error(err, &e,
                        ml_sampler_set_filters(smp, so.top_k, so.min_p, so.repeat_penalty, so.repeat_last_n,
                                               m->cfg.max_seq, &e));
}

typedef struct {
    const lml_model *h;
    const lml_callbacks *cb;
    int stop; /* on_token asked to stop */
} gen_ctx;

static void gen_token(void *ud, int prev, int token) {
    gen_ctx *g = ud;
    size_t len = 0;
    const char *piece = lml_token_piece(g->h, prev, token, &len);
    if (g->cb->on_token(g->cb->ud, token, piece, len)) g->stop = 1;
}

static void gen_prompt_done(void *ud, int n_prompt) {
    gen_ctx *g = ud;
    g->cb->on_prompt_done(g->cb->ud, n_prompt);
}

static void gen_logits(void *ud, int pos, const float *logits, int vocab) {
    gen_ctx *g = ud;
    if (g->cb->on_logits(g->cb->ud, pos, logits, vocab)) g->stop = 1;
}

static int gen_should_stop(void *ud) { return ((gen_ctx *)ud)->stop; }

lml_status lml_generate(lml_model *m, const int *prompt, int n_prompt, int steps,
                        const lml_sampler_options *sampler, const lml_callbacks *cb, int *n_pos, lml_error *err) {
    int unused;
    if (!n_pos) n_pos = &unused;
    *n_pos = 0;
    if (!m || !prompt) return ml_api_fail(err, ML_E_ARG, "generate: expected a model and a prompt, got NULL");
    ml_model *mm = &m->m;
    ml_err e = {{0}};
    ml_sampler smp;
    lml_status ss = ml_api_sampler_init(&smp, mm, sampler, mm->s.sampler_scratch, err);
    if (ss) return ss;
    ml_status s;
    lml_callbacks none = {0};
    if (!cb) cb = &none;
    gen_ctx g = {m, cb, 0};
    ml_gen_callbacks gc = {.on_logits = cb && cb->on_logits ? gen_logits : NULL,
                           .on_token = cb && cb->on_token ? gen_token : NULL,
                           .on_prompt_done = cb && cb->on_prompt_done ? gen_prompt_done : NULL,
                           .should_stop = gen_should_stop, .ud = &g};
    if (m->n_stop) { /* lml_model_set_stop_tokens */
        memcpy(gc.stop, m->stop, sizeof m->stop);
        gc.n_stop = m->n_stop;
    } else if (m->has_tok && m->tok.kind == ML_TOK_KIND_BPE) { /* its end of text and end of turn, not ids 1 and 2 */
        for (int id, k = 0; k < 2; k++)
            if ((id = k ? ml_tok_eot(&m->tok) : ml_tok_eos(&m->tok)) >= 0) gc.stop[gc.n_stop++] = id;
        if (!gc.n_stop) gc.stop[gc.n_stop++] = -1; /* none: run to steps */
    }
    int cap = narrow_batch(mm, gc.on_logits != NULL && !m->has_spec);
    s = m->has_spec ? ml_generate_spec(mm, &smp, &m->sp, prompt, n_prompt, steps, &gc, n_pos, &e)
                    : ml_generate(mm, &smp, prompt, n_prompt, steps, &gc, n_pos, &e);
    mm->b.cap = cap;
    return ml_api_error(err, &e, s);
}

_Static_assert(LML_MAX_STOP_TOKENS == sizeof(((ml_gen_callbacks *)0)->stop) / sizeof(int), "ml_generate's stop list");

lml_status lml_model_set_stop_tokens(lml_model *m, const int *ids, int n, lml_error *err) {
    if (!m || (n && !ids)) return ml_api_fail(err, ML_E_ARG, "stop tokens: expected a model and ids, got NULL");
    if (n < 0 || n > LML_MAX_STOP_TOKENS)
        return ml_api_fail(err, ML_E_ARG, "stop tokens: expected 0 (the default) .. 4 ids");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->m.cfg.vocab) {
            ml_err e;
            ml_errf(&e, ML_E_ARG, "stop tokens: id %d is outside the vocab (%d tokens)", ids[i], m->m.cfg.vocab);
            return ml_api_error(err, &e, ML_E_ARG);
        }
    for (int i = 0; i < n; i++) m->stop[i] = ids[i];
    m->n_stop = n;
    return ml_api_error(err, NULL, ML_OK);
}

/* ---- speculation ---------------------------------------------------------- */

lml_status lml_model_speculate(lml_model *m, int n_draft, lml_model *draft, lml_error *err) {
    if (!m) return ml_api_fail(err, ML_E_ARG, "speculate: expected a model, got NULL");
    if (m->has_spec) ml_spec_free(&m->sp);
    m->has_spec = 0;
    if (!n_draft) return ml_api_error(err, NULL, ML_OK);
    ml_err e = {{0}};
    ml_status s = ML_OK;
    if (draft && draft->tok_from_file && m->has_tok) s = ml_spec_check_tokenizers(&m->tok, &draft->tok, &e);
    ml_spec_opts so = {.max_draft = n_draft, .draft = draft ? &draft->m : NULL};
    if (!s) s = ml_spec_init(&m->sp, &m->m, &so, &e);
    if (s) return ml_api_error(err, &e, s);
    m->has_spec = 1;
    return ml_api_error(err, NULL, ML_OK);
}

void lml_speculation_stats(const lml_model *m, long *drafted, long *accepted, long *steps) {
    int on = m && m->has_spec;
    if (drafted) *drafted = on ? m->sp.drafted : 0;
    if (accepted) *accepted = on ? m->sp.accepted : 0;
    if (steps) *steps = on ? m->sp.batches : 0;
}
