/* The forward pass of DESIGN §6, written once: the layer sequence over a
 * batch of tokens at consecutive positions. A decode step (ml_forward) is a
 * batch of one, a prompt (ml_forward_batch, model/prefill.c) is split into
 * batches of at most m->b.cap. Every weight matrix meets the whole batch in
 * one ml_op_matmuls (read once per batch, not once per token); a batch of
 * one runs the matvec kernels there. Each per-token step (norm,
 * quantization, RoPE, attention, residual add) is computed for a token as
 * if it were alone, and a matmul element is the matvec's, so a token's
 * keys, values and logits are the same bits whatever batch it is in. */
#include <stddef.h>
#include <string.h>

#include "model/forward_check.h"
#include "model/model.h"

/* ---- the layers: tokens[0..n) at pos0.., residual streams left in b->x ---- */

static void layers(ml_model *m, const int *tokens, int n, int pos0) {
    const ml_config *c = &m->cfg;
    ml_state *s = &m->s;
    ml_batch_state *b = &m->b;
    ml_ops *o = &m->ops;
    size_t dim = (size_t)c->dim, kv_dim = (size_t)c->kv_dim;
    ml_rope_args rope = {s->rope_cos, s->rope_sin, c->head_dim, c->n_heads, c->n_kv_heads};
    for (int t = 0; t < n; t++) ml_op_dequant_row(b->x + t * dim, &m->w.tok_emb, tokens[t]);

    for (int l = 0; l < c->n_layers; l++) {
        const ml_layer *L = &m->w.layers[l];
        size_t layer_off = (size_t)l * (size_t)c->max_seq * kv_dim;
        float *kc = s->key_cache + layer_off, *vc = s->val_cache + layer_off;
        /* The batch's cache rows are contiguous: k and v go straight there. */
        float *k = kc + (size_t)pos0 * kv_dim, *v = vc + (size_t)pos0 * kv_dim;

        /* ---- attention: q, k, v projections, RoPE, attention, wo ---- */
        if (l == 0) ml_op_quantize_batch(o, &b->x_q8, b->x, c->dim, n, L->attn_norm, c->norm_eps, b->x_norm);
        else /* the last layer's feed-forward added first */
            ml_op_add_quantize_batch(o, &b->x_q8, b->x, b->branch_out, c->dim, n, L->attn_norm, c->norm_eps, b->x_norm);
        ml_matmul_job qkv[3] = {{b->q, c->q_dim, &L->wq}, {k, c->kv_dim, &L->wk}, {v, c->kv_dim, &L->wv}};
        ml_op_matmuls(o, qkv, 3, &b->x_q8);
        if (c->qkv_bias) { /* Qwen2: q, k, v biases, in that order */
            ml_op_add_bias(b->q, L->bq, c->q_dim, n);
            ml_op_add_bias(k, L->bk, c->kv_dim, n);
            ml_op_add_bias(v, L->bv, c->kv_dim, n);
        }
        if (c->qk_norm) { /* Qwen3: RMSNorm of each query and key head before RoPE */
            ml_op_head_norm(b->q, L->q_norm, c->head_dim, c->n_heads, n, c->norm_eps);
            ml_op_head_norm(k, L->k_norm, c->head_dim, c->n_kv_heads, n, c->norm_eps);
        }
        ml_op_rope(o, b->q, k, pos0, n, &rope);
        ml_attn_args at = {
            .q = b->q, .kc = kc, .vc = vc, .att = s->att_scores, .out = b->attn_out, .pos = pos0,
            .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
            .max_seq = c->max_seq, .n_tok = n,
            /* free until the feed-forward: the scores of a batch split by token */
            .scratch = b->ffn_up, .scratch_n = (size_t)b->cap * (size_t)c->hidden_dim,
        };
        ml_op_attention(o, &at);
        ml_op_quantize_batch(o, &b->x_q8, b->attn_out, c->q_dim, n, NULL, 0.0f, NULL);
        ml_matmul_job wo = {b->branch_out, c->dim, &L->wo};
        ml_op_matmuls(o, &wo, 1, &b->x_q8);

        /* ---- feed-forward: w2(silu(w1 x) * w3 x), wo's output added first ---- */
        ml_op_add_quantize_batch(o, &b->x_q8, b->x, b->branch_out, c->dim, n, L->ffn_norm, c->norm_eps, b->x_norm);
        ml_op_gate_up_batch(o, b->ffn_gate, b->ffn_up, &L->w1, &L->w3, &b->x_q8);
        ml_op_quantize_batch(o, &b->x_q8, b->ffn_gate, c->hidden_dim, n, NULL, 0.0f, NULL);
        ml_matmul_job w2 = {b->branch_out, c->dim, &L->w2};
        ml_op_matmuls(o, &w2, 1, &b->x_q8);
    }
    /* the last layer's feed-forward (the others' went with the next norm) */
    if (c->n_layers > 0) ml_op_add(o, b->x, b->branch_out, c->dim, n);
}

/* ---- the logits ---------------------------------------------------------- */

/* The logits of the batch's last `rows` tokens (1: what generation needs;
 * n: every token's, for each()), then each() in order. One row goes
 * straight to m->s.logits; more go to b->logits and the last is copied. */
static ml_status logits(ml_model *m, int n, int rows, int pos0, ml_logits_fn each, void *ud, ml_err *err) {
    const ml_config *c = &m->cfg;
    ml_batch_state *b = &m->b;
    size_t vocab = (size_t)c->vocab;
    int first = n - rows;
    float *x = b->x + (size_t)first * (size_t)c->dim, *out = rows == 1 ? m->s.logits : b->logits;
    /* The final norm in place: the residual streams are not needed after. */
    ml_op_quantize_batch(&m->ops, &b->x_q8, x, c->dim, rows, m->w.final_norm, c->norm_eps, x);
    ml_matmul_job cls = {out, c->vocab, &m->w.wcls};
    ml_op_matmuls(&m->ops, &cls, 1, &b->x_q8);
    for (int t = 0; t < rows; t++) {
        int pos = pos0 + first + t;
        ml_status st = ml_check_logits(out + t * vocab, c->vocab, pos, err);
        if (!st && each) st = each(ud, pos, out + t * vocab, err);
        if (st) return st;
    }
    if (rows > 1) memcpy(m->s.logits, out + (size_t)(rows - 1) * vocab, vocab * sizeof *m->s.logits);
    return ML_OK;
}

/* ---- one batch ----------------------------------------------------------- */

ml_status ml_forward_step(ml_model *m, const int *tokens, int n, int pos0, int want_logits, ml_logits_fn each,
                          void *ud, ml_err *err) {
    layers(m, tokens, n, pos0);
    for (int t = 0; t < n; t++) {
        ml_status st = ml_check_residual(m->b.x + (size_t)t * (size_t)m->cfg.dim, m->cfg.dim, pos0 + t, err);
        if (st) return st;
    }
    if (each) return logits(m, n, n, pos0, each, ud, err);
    return want_logits ? logits(m, n, 1, pos0, NULL, NULL, err) : ML_OK;
}

ml_status ml_forward(ml_model *m, int token, int pos, ml_err *err) {
    const ml_config *c = &m->cfg;
    if (token < 0 || token >= c->vocab)
        return ml_errf(err, ML_E_ARG, "token: expected 0..%d, got %d", c->vocab - 1, token);
    if (pos < 0 || pos >= c->max_seq)
        return ml_errf(err, ML_E_ARG, "position: expected 0..%d (context), got %d", c->max_seq - 1, pos);
    return ml_forward_step(m, &token, 1, pos, 1, NULL, NULL, err);
}
