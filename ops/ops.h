/* Thin dispatch over the ml_k_* kernels, and the only way to one from
 * above (model/ calls no kernel: tests/test_layers.sh): picks the kernel
 * for a tensor's type and shares work out over the thread pool (DESIGN §6):
 * matvec and matmul rows in items of 16 (a multiple of 4), attention by
 * head, a prompt batch's norms and quantization by token, each item taken
 * by whichever thread is free. Every schedule gives bit-identical results,
 * because each row, head and token is computed the same way whoever runs it. */
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

/* One matrix against every token of a prompt batch: Y[t*ldy + r] = W[r,:] . X[t]
 * for t < X->n_tok, every row r; each element the matvec's, bit for bit. */
typedef struct {
    float *Y;              /* (X->n_tok, ldy), ldy >= W->rows */
    int ldy;
    const ml_qtensor *W;
} ml_matmul_job;

/* Every job against the same batch, in one parallel region (rows split in
 * the matvecs' items, so each item reads its weights once for all tokens).
 * A batch of one token (a decode step) runs the matvec kernels, as
 * ml_op_matvecs does: same bits, without the matmul's tiling. */
void ml_op_matmuls(ml_ops *o, const ml_matmul_job *jobs, int n_jobs, const ml_qbatch *X);

/* The SwiGLU up-projection in one region: g = silu(W1 x) * (W3 x); u is
 * scratch (W3->rows). Each thread applies silu_mul to the rows it made. */
void ml_op_gate_up(ml_ops *o, float *g, float *u, const ml_qtensor *W1, const ml_qtensor *W3,
                   const ml_qact *x);

/* The same for every token of a batch: G and U are (X->n_tok, W1->rows);
 * one token runs the matvec kernels, as ml_op_gate_up does. */
void ml_op_gate_up_batch(ml_ops *o, float *G, float *U, const ml_qtensor *W1, const ml_qtensor *W3,
                         const ml_qbatch *X);

/* out = Q8_0(x), k a multiple of 32. */
void ml_op_quantize(ml_qact *out, const float *x, int k);

/* Per token of a batch: out[t] = Q8_0(x[t*k .. t*k+k)), or with norm_w set
 * Q8_0(RMSNorm(x[t]) * norm_w) through `normed` ((n_tok, k) scratch, which
 * keeps the normed rows). out->n = k, out->n_tok = n_tok. Tokens are shared
 * out over the pool; each is the single-token op's result, bit for bit. */
void ml_op_quantize_batch(ml_ops *o, ml_qbatch *out, const float *x, int k, int n_tok, const float *norm_w,
                          float eps, float *normed);

/* The residual add and the next norm in one region: per token, x[t] +=
 * add[t] (ml_op_add's kernel), then ml_op_quantize_batch of x[t]. */
void ml_op_add_quantize_batch(ml_ops *o, ml_qbatch *out, float *x, const float *add, int k, int n_tok,
                              const float *norm_w, float eps, float *normed);

/* out = row `row` of W, dequantized to float (the embedding lookup).
 * out: (W->cols); W in ML_LAYOUT_ROWS. */
void ml_op_dequant_row(float *out, const ml_qtensor *W, int row);

/* The layout (core/tensor.h) the loader gives W (in ML_LAYOUT_ROWS) when it
 * owns the bytes: the one this build's matvec and matmul read fastest for
 * W's weight and scale types (ml_k_weight_layout); ML_LAYOUT_R16 only with
 * a full group of 16 rows. */
int ml_op_weight_layout(const ml_qtensor *W);

/* ---- element-wise and per-token float ops (single-threaded: each is a
 * pass over a few rows, cheaper than waking the pool; the residual add and
 * RoPE, which run over every token of a batch, are regions split by token) ---- */

/* The residual add of a batch: Y[t] += X[t] for t < n_tok, split by token.
 * Y, X: (n_tok, n). */
void ml_op_add(ml_ops *o, float *Y, const float *X, int n, int n_tok);

/* A bias added to every token of a batch: Y[t] += b for t < n_tok, in
 * element order (the add kernel: one rounding per element, the same on
 * every build). Y: (n_tok, n), b: (n). */
void ml_op_add_bias(float *Y, const float *b, int n, int n_tok);

/* RMSNorm of each head of every token, in place (Qwen3's q_norm, k_norm):
 * X: (n_tok, n_heads, head_dim), w: (head_dim); the rmsnorm kernel per head. */
void ml_op_head_norm(float *X, const float *w, int head_dim, int n_heads, int n_tok, float eps);

/* RoPE of n_tok tokens at positions pos0 .. pos0+n_tok-1, in place, split by token:
 * Q: (n_tok, n_heads * head_dim), K: (n_tok, n_kv_heads * head_dim),
 * cos_t, sin_t: (max_seq, head_dim/2) tables, row p for position p. */
typedef struct {
    const float *cos_t, *sin_t;
    int head_dim, n_heads, n_kv_heads;
} ml_rope_args;
void ml_op_rope(ml_ops *o, float *Q, float *K, int pos0, int n_tok, const ml_rope_args *r);

/* x = softmax(x) in place. x: (n). */
void ml_op_softmax(float *x, int n);

/* Causal multi-head attention of n_tok tokens at positions pos .. pos+n_tok-1
 * (0 is taken as 1: one token): token t attends to positions 0..pos+t of one
 * layer's KV cache, which holds every token of the batch already. Items are
 * heads (and chunks of tokens, with several threads and a scratch); each
 * (token, head) is computed exactly as for that token alone. */
typedef struct {
    const float *q;   /* (n_tok, n_heads, head_dim) */
    const float *kc;  /* (max_seq, kv_dim) keys of this layer */
    const float *vc;  /* (max_seq, kv_dim) values of this layer */
    float *att;       /* (n_heads, max_seq) scores scratch */
    float *out;       /* (n_tok, n_heads, head_dim) */
    int pos, n_heads, n_kv_heads, head_dim, max_seq;
    int n_tok;
    /* Optional (NULL: none): scratch of scratch_n floats for a batch's
     * scores, queries and outputs, by token tile (ops.c); it may not
     * overlap q, the caches or out. */
    float *scratch;
    size_t scratch_n;
} ml_attn_args;
void ml_op_attention(ml_ops *o, const ml_attn_args *a);

#endif
