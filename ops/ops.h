/* Thin dispatch over the ml_k_* kernels: picks the kernel for a tensor's
 * type and shares work out over the thread pool (DESIGN §6): matvec rows
 * in items of 16 (a multiple of 4), attention by head, each item taken by
 * whichever thread is free. Every schedule gives bit-identical results,
 * because each row and each head is computed the same way whoever runs it. */
#ifndef ML_OPS_H
#define ML_OPS_H

#include "core/status.h"
#include "core/tensor.h"
#include "core/threads.h"

typedef struct {
    ml_pool *pool;
    int n_threads;
} ml_ops;

ml_status ml_ops_init(ml_ops *o, int n_threads, ml_err *err);
void ml_ops_free(ml_ops *o);

/* 1 if the ops have kernels for weight type `type` (an ml_type): Q8_0, Q4_0.
 * Contract: every matrix passed to an ml_op_* has such a type (the loader
 * refuses files of other types). A matrix of any other type makes the op's
 * outputs NaN instead of running another type's kernel over its bytes. */
int ml_op_type_supported(int type);

/* One matrix-vector product of a batch: y = W x. */
typedef struct {
    float *y;              /* (W->rows) */
    const ml_qtensor *W;
} ml_matvec_job;

/* Every job of the batch against the same activations, in one parallel region. */
void ml_op_matvecs(ml_ops *o, const ml_matvec_job *jobs, int n_jobs, const ml_qact *x);
void ml_op_matvec(ml_ops *o, float *y, const ml_qtensor *W, const ml_qact *x);

/* The SwiGLU up-projection in one region: g = silu(W1 x) * (W3 x); u is
 * scratch (W3->rows). Each thread applies silu_mul to the rows it made. */
void ml_op_gate_up(ml_ops *o, float *g, float *u, const ml_qtensor *W1, const ml_qtensor *W3,
                   const ml_qact *x);

/* out = Q8_0(x), k a multiple of 32. */
void ml_op_quantize(ml_qact *out, const float *x, int k);

/* out = row `row` of W, dequantized to float (the embedding lookup). */
void ml_op_dequant_row(float *out, const ml_qtensor *W, int row);

/* Multi-head attention over positions 0..pos of one layer's KV cache. */
typedef struct {
    const float *q;   /* (n_heads, head_dim) */
    const float *kc;  /* (max_seq, kv_dim) keys of this layer */
    const float *vc;  /* (max_seq, kv_dim) values of this layer */
    float *att;       /* (n_heads, max_seq) scores scratch */
    float *out;       /* (n_heads, head_dim) */
    int pos, n_heads, n_kv_heads, head_dim, max_seq;
} ml_attn_args;
void ml_op_attention(ml_ops *o, const ml_attn_args *a);

#endif
