/* The forward pass of DESIGN §6: one token at one position -> logits. */
#include <stddef.h>

#include "config/ml_config.h"
#include "model/forward_check.h"
#include "model/model.h"

ml_status ml_forward(ml_model *m, int token, int pos, ml_err *err) {
    const ml_config *c = &m->cfg;
    ml_state *s = &m->s;
    ml_ops *o = &m->ops;
    if (token < 0 || token >= c->vocab)
        return ml_errf(err, ML_E_ARG, "token: expected 0..%d, got %d", c->vocab - 1, token);
    if (pos < 0 || pos >= c->max_seq)
        return ml_errf(err, ML_E_ARG, "position: expected 0..%d (context), got %d", c->max_seq - 1, pos);

    int dim = c->dim, kv_dim = c->kv_dim, half = c->head_dim / 2;
    ml_op_dequant_row(s->x, &m->w.tok_emb, token);

    for (int l = 0; l < c->n_layers; l++) {
        const ml_layer *L = &m->w.layers[l];
        size_t layer_off = (size_t)l * c->max_seq * kv_dim;
        float *kc = s->key_cache + layer_off, *vc = s->val_cache + layer_off;
        float *k = kc + (size_t)pos * kv_dim, *v = vc + (size_t)pos * kv_dim;

        /* ---- attention: q, k, v projections straight into the KV cache ---- */
        ml_k_rmsnorm(s->x_norm, s->x, L->attn_norm, dim, c->norm_eps);
        ml_op_quantize(&s->x_q8, s->x_norm, dim);
        ml_matvec_job qkv[3] = {{s->q, &L->wq}, {k, &L->wk}, {v, &L->wv}};
        ml_op_matvecs(o, qkv, 3, &s->x_q8);
        ml_k_rope(s->q, k, s->rope_cos + (size_t)pos * half, s->rope_sin + (size_t)pos * half,
                  c->head_dim, c->n_heads, c->n_kv_heads);
        ml_attn_args at = {
            .q = s->q, .kc = kc, .vc = vc, .att = s->att_scores, .out = s->attn_out, .pos = pos,
            .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
            .max_seq = c->max_seq, .n_tok = 1,
        };
        ml_op_attention(o, &at);
        ml_op_quantize(&s->x_q8, s->attn_out, dim);
        ml_op_matvec(o, s->branch_out, &L->wo, &s->x_q8);
        ml_k_add(s->x, s->branch_out, dim);

        /* ---- feed-forward: w2(silu(w1 x) * w3 x) ---- */
        ml_k_rmsnorm(s->x_norm, s->x, L->ffn_norm, dim, c->norm_eps);
        ml_op_quantize(&s->x_q8, s->x_norm, dim);
        ml_op_gate_up(o, s->ffn_gate, s->ffn_up, &L->w1, &L->w3, &s->x_q8);
        ml_op_quantize(&s->x_q8, s->ffn_gate, c->hidden_dim);
        ml_op_matvec(o, s->branch_out, &L->w2, &s->x_q8);
        ml_k_add(s->x, s->branch_out, dim);
    }

    ml_status st = ml_check_residual(s->x, dim, pos, err);
    if (st) return st;
    ml_k_rmsnorm(s->x, s->x, m->w.final_norm, dim, c->norm_eps);
    ml_op_quantize(&s->x_q8, s->x, dim);
    ml_op_matvec(o, s->logits, &m->w.wcls, &s->x_q8);
    return ml_check_logits(s->logits, c->vocab, pos, err);
}
