/* Thin dispatch over the ml_k_* kernels: picks the kernel for a tensor's
 * type and splits work across threads (THREADS=pthread builds). */
#ifndef ML_OPS_H
#define ML_OPS_H

#include "core/status.h"
#include "core/tensor.h"

typedef struct {
    int n_threads; /* 1 in THREADS=1 builds */
} ml_ops;

ml_status ml_ops_init(ml_ops *o, int n_threads, ml_err *err);
void ml_ops_free(ml_ops *o);

/* y[0 .. W->rows) = W x. */
void ml_op_matvec(ml_ops *o, float *y, const ml_qtensor *W, const ml_qact *x);

/* o = Q8_0(x), k a multiple of 32. */
void ml_op_quantize(ml_ops *o, ml_qact *out, const float *x, int k);

/* out = row `row` of W, dequantized to float (the embedding lookup). */
void ml_op_dequant_row(float *out, const ml_qtensor *W, int row);

/* Multi-head attention over positions 0..pos of one layer's KV cache.
 *   q (n_heads, head_dim), kc/vc (max_seq, kv_dim), att (n_heads, max_seq),
 *   out (n_heads, head_dim). */
typedef struct {
    const float *q, *kc, *vc;
    float *att, *out;
    int pos, n_heads, n_kv_heads, head_dim, max_seq;
} ml_attn_args;
void ml_op_attention(ml_ops *o, const ml_attn_args *a);

#endif
