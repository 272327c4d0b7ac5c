#include "ops/ops.h"

#include <math.h>
#include <string.h>

#include "config/ml_config.h"

ml_status ml_ops_init(ml_ops *o, int n_threads, ml_err *err) {
    if (n_threads != 1)
        return ml_errf(err, ML_E_ARG, "threads: this build has no thread pool (THREADS=1), got -t %d",
                       n_threads);
    o->n_threads = 1;
    return ML_OK;
}

void ml_ops_free(ml_ops *o) { (void)o; }

void ml_op_matvec(ml_ops *o, float *y, const ml_qtensor *W, const ml_qact *x) {
    (void)o;
    if (W->type == ML_TYPE_Q8_0)
        ml_k_matvec_q8(y, W, x, 0, W->rows);
    else
        ml_k_matvec_q4(y, W, x, 0, W->rows);
}

void ml_op_quantize(ml_ops *o, ml_qact *out, const float *x, int k) {
    (void)o;
    out->n = k;
    ml_k_quantize_q8(out, x, k);
}

void ml_op_dequant_row(float *out, const ml_qtensor *W, int row) {
    int nb = W->cols / ML_QK;
    const float *d = W->d + (size_t)row * nb;
    if (W->type == ML_TYPE_Q8_0) {
        const int8_t *q = W->q + (size_t)row * W->cols;
        for (int b = 0; b < nb; b++)
            for (int j = 0; j < ML_QK; j++) out[b * ML_QK + j] = d[b] * (float)q[b * ML_QK + j];
        return;
    }
    const uint8_t *q = (const uint8_t *)W->q + (size_t)row * W->cols / 2;
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = q + b * ML_Q4_BLOCK_BYTES;
        for (int j = 0; j < ML_Q4_BLOCK_BYTES; j++) {
            out[b * ML_QK + j] = d[b] * (float)((blk[j] & 0x0F) - ML_Q4_OFFSET);
            out[b * ML_QK + j + 16] = d[b] * (float)((blk[j] >> 4) - ML_Q4_OFFSET);
        }
    }
}

/* Heads [h0, h1): scores, softmax, weighted sum of values. */
static void attention_heads(const ml_attn_args *a, int h0, int h1) {
    int hd = a->head_dim, kv_dim = a->n_kv_heads * hd;
    int group = a->n_heads / a->n_kv_heads; /* query heads per KV head (GQA) */
    float scale = sqrtf((float)hd);
    for (int h = h0; h < h1; h++) {
        const float *qh = a->q + h * hd;
        float *att = a->att + (size_t)h * a->max_seq;
        int kvo = (h / group) * hd;
        for (int t = 0; t <= a->pos; t++)
            att[t] = ml_k_dot_f32(qh, a->kc + (size_t)t * kv_dim + kvo, hd) / scale;
        ml_k_softmax(att, a->pos + 1);
        float *oh = a->out + h * hd;
        memset(oh, 0, (size_t)hd * sizeof *oh);
        for (int t = 0; t <= a->pos; t++) ml_k_axpy_f32(oh, att[t], a->vc + (size_t)t * kv_dim + kvo, hd);
    }
}

void ml_op_attention(ml_ops *o, const ml_attn_args *a) {
    (void)o;
    attention_heads(a, 0, a->n_heads);
}
