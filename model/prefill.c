/* Batched prompt prefill (DESIGN §6 over many tokens): the forward pass of
 * ml_forward for a batch of prompt tokens at once, so each weight matrix is
 * read once per batch (ml_op_matmuls) instead of once per token. Every
 * per-token step (norm, quantization, RoPE, attention, residual adds) is
 * ml_forward's own, and every matmul element is the matvec's, so each
 * token's keys, values and logits are bit for bit those of token by token. */
#include <stddef.h>
#include <string.h>

#include "config/ml_config.h"
#include "model/forward_check.h"
#include "model/model.h"

/* ---- one batch: tokens[0..n) at pos0.., n <= m->b.cap ------------------- */

/* The transformer layers over the batch, leaving the residual streams in b->x. */
static void batch_layers(ml_model *m, const int *tokens, int n, int pos0) {
    const ml_config *c = &m->cfg;
    ml_state *s = &m->s;
    ml_batch_state *b = &m->b;
    ml_ops *o = &m->ops;
    size_t dim = (size_t)c->dim, kv_dim = (size_t)c->kv_dim;
    size_t half = (size_t)c->head_dim / 2;
    for (int t = 0; t < n; t++) ml_op_dequant_row(b->x + t * dim, &m->w.tok_emb, tokens[t]);

    for (int l = 0; l < c->n_layers; l++) {
        const ml_layer *L = &m->w.layers[l];
        size_t layer_off = (size_t)l * (size_t)c->max_seq * kv_dim;
        float *kc = s->key_cache + layer_off, *vc = s->val_cache + layer_off;
        /* The batch's cache rows are contiguous: k and v go straight there. */
        float *k = kc + (size_t)pos0 * kv_dim, *v = vc + (size_t)pos0 * kv_dim;

        /* ---- attention ---- */
        ml_op_quantize_batch(o, &b->x_q8, b->x, c->dim, n, L->attn_norm, c->norm_eps, b->x_norm);
        ml_matmul_job qkv[3] = {{b->q, c->dim, &L->wq}, {k, c->kv_dim, &L->wk}, {v, c->kv_dim, &L->wv}};
        ml_op_matmuls(o, qkv, 3, &b->x_q8);
        for (int t = 0; t < n; t++) {
            size_t p = (size_t)(pos0 + t) * half;
            ml_k_rope(b->q + t * dim, k + t * kv_dim, s->rope_cos + p, s->rope_sin + p, c->head_dim,
                      c->n_heads, c->n_kv_heads);
        }
        ml_attn_args at = {
            .q = b->q, .kc = kc, .vc = vc, .att = s->att_scores, .out = b->attn_out, .pos = pos0,
            .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
            .max_seq = c->max_seq, .n_tok = n,
        };
        ml_op_attention(o, &at);
        ml_op_quantize_batch(o, &b->x_q8, b->attn_out, c->dim, n, NULL, 0.0f, NULL);
        ml_matmul_job wo = {b->branch_out, c->dim, &L->wo};
        ml_op_matmuls(o, &wo, 1, &b->x_q8);
        for (int t = 0; t < n; t++) ml_k_add(b->x + t * dim, b->branch_out + t * dim, c->dim);

        /* ---- feed-forward ---- */
        ml_op_quantize_batch(o, &b->x_q8, b->x, c->dim, n, L->ffn_norm, c->norm_eps, b->x_norm);
        ml_op_gate_up_batch(o, b->ffn_gate, b->ffn_up, &L->w1, &L->w3, &b->x_q8);
        ml_op_quantize_batch(o, &b->x_q8, b->ffn_gate, c->hidden_dim, n, NULL, 0.0f, NULL);
        ml_matmul_job w2 = {b->branch_out, c->dim, &L->w2};
        ml_op_matmuls(o, &w2, 1, &b->x_q8);
        for (int t = 0; t < n; t++) ml_k_add(b->x + t * dim, b->branch_out + t * dim, c->dim);
    }
}

/* Every token's logits into b->logits, then to each(). */
static ml_status all_logits(ml_model *m, int n, int pos0, ml_logits_fn each, void *ud, ml_err *err) {
    const ml_config *c = &m->cfg;
    ml_batch_state *b = &m->b;
    size_t vocab = (size_t)c->vocab;
    /* In place, as ml_forward normalizes its residual stream. */
    ml_op_quantize_batch(&m->ops, &b->x_q8, b->x, c->dim, n, m->w.final_norm, c->norm_eps, b->x);
    ml_matmul_job cls = {b->logits, c->vocab, &m->w.wcls};
    ml_op_matmuls(&m->ops, &cls, 1, &b->x_q8);
    for (int t = 0; t < n; t++) {
        ml_status st = ml_check_logits(b->logits + t * vocab, c->vocab, pos0 + t, err);
        if (!st) st = each(ud, pos0 + t, b->logits + t * vocab, err);
        if (st) return st;
    }
    memcpy(m->s.logits, b->logits + (size_t)(n - 1) * vocab, vocab * sizeof *m->s.logits);
    return ML_OK;
}

/* The last token's logits only (what generation needs), into m->s.logits. */
static ml_status last_logits(ml_model *m, int n, int pos0, ml_err *err) {
    const ml_config *c = &m->cfg;
    ml_state *s = &m->s;
    float *x = m->b.x + (size_t)(n - 1) * (size_t)c->dim;
    ml_k_rmsnorm(x, x, m->w.final_norm, c->dim, c->norm_eps);
    ml_op_quantize(&s->x_q8, x, c->dim);
    ml_op_matvec(&m->ops, s->logits, &m->w.wcls, &s->x_q8);
    return ml_check_logits(s->logits, c->vocab, pos0 + n - 1, err);
}

/* want_logits: this batch ends the prompt (or each() wants every token). */
static ml_status forward_one_batch(ml_model *m, const int *tokens, int n, int pos0, int want_logits,
                                   ml_logits_fn each, void *ud, ml_err *err) {
    batch_layers(m, tokens, n, pos0);
    for (int t = 0; t < n; t++) {
        ml_status st = ml_check_residual(m->b.x + (size_t)t * (size_t)m->cfg.dim, m->cfg.dim, pos0 + t, err);
        if (st) return st;
    }
    if (each) return all_logits(m, n, pos0, each, ud, err);
    return want_logits ? last_logits(m, n, pos0, err) : ML_OK;
}

/* ---- the prompt ---------------------------------------------------------- */

/* Without batch buffers: ml_forward token by token (the -b 1 path). */
static ml_status forward_tokens(ml_model *m, const int *tokens, int n, int pos0, ml_logits_fn each, void *ud,
                                ml_err *err) {
    for (int t = 0; t < n; t++) {
        ml_status st = ml_forward(m, tokens[t], pos0 + t, err);
        if (!st && each) st = each(ud, pos0 + t, m->s.logits, err);
        if (st) return st;
    }
    return ML_OK;
}

ml_status ml_forward_batch(ml_model *m, const int *tokens, int n, int pos0, ml_logits_fn each, void *ud,
                           ml_err *err) {
    const ml_config *c = &m->cfg;
    if (n < 1) return ml_errf(err, ML_E_ARG, "batch: expected at least 1 token, got %d", n);
    if (pos0 < 0 || pos0 >= c->max_seq || n > c->max_seq - pos0)
        return ml_errf(err, ML_E_ARG, "batch: positions %d..%lld: expected within 0..%d (context)", pos0,
                       (long long)pos0 + n - 1, c->max_seq - 1);
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->vocab)
            return ml_errf(err, ML_E_ARG, "batch: token %d: expected 0..%d, got %d", t, c->vocab - 1, tokens[t]);
    if (!m->b.cap) return forward_tokens(m, tokens, n, pos0, each, ud, err);
    if (each && !m->b.logits)
        return ml_errf(err, ML_E_ARG, "batch: every token's logits asked for, but the model was opened "
                       "without all_logits");
    for (int i = 0; i < n; i += m->b.cap) {
        int len = n - i < m->b.cap ? n - i : m->b.cap;
        ml_status st = forward_one_batch(m, tokens + i, len, pos0 + i, i + len == n, each, ud, err);
        if (st) return st;
    }
    return ML_OK;
}
