/* A loaded model: config from the .mlb header, weights pointing into the
 * file mapping (zero-copy), and run state carved from one arena. */
#ifndef ML_MODEL_H
#define ML_MODEL_H

#include <stddef.h>

#include "core/arena.h"
#include "core/file.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/ops.h"

typedef struct {
    int dim;        /* model width */
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;   /* the header's head_dim, or dim / n_heads */
    int q_dim;      /* n_heads * head_dim (== dim unless head_dim is set) */
    int kv_dim;     /* n_kv_heads * head_dim */
    int hidden_dim; /* FFN width */
    int vocab;
    int max_seq;    /* context used by this run (header value, or less with -c) */
    int file_max_seq; /* context the model was trained for (header) */
    float rope_theta;
    float norm_eps;
    int wtype;      /* ml_type of every matrix */
    int stype;      /* ml_type of their block scales: ML_TYPE_F32 or ML_TYPE_F16 (.mlb v2) */
    int shared_classifier;
    /* version 2 (.mlb header; version 1: the defaults noted) */
    int version;        /* the file's: 1 or 2 */
    int qkv_bias;       /* 1: bq, bk, bv added after wq, wk, wv (v1: 0) */
    int qk_norm;        /* 1: q_norm, k_norm on each head before RoPE (v1: 0) */
    int rope_scaling;   /* ML_MLB_ROPE_* (model/mlb.h); v1: none */
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_orig_max_seq;
    int bos, eos, eot;  /* special ids, -1 none (v1: 1, 2, -1: llama2.c's) */
    int add_bos;        /* 1: a prompt starts with bos (v1: 1) */
} ml_config;

/* A byte range of the model file (zero-copy): the embedded tokenizer, the
 * chat template. len 0: absent. */
typedef struct {
    const unsigned char *data;
    size_t len;
} ml_bytes;

typedef struct {
    const float *attn_norm; /* (dim) */
    ml_qtensor wq;          /* (q_dim, dim) */
    ml_qtensor wk;          /* (kv_dim, dim) */
    ml_qtensor wv;          /* (kv_dim, dim) */
    const float *bq;        /* (q_dim) or NULL (no qkv_bias) */
    const float *bk;        /* (kv_dim) or NULL */
    const float *bv;        /* (kv_dim) or NULL */
    const float *q_norm;    /* (head_dim) or NULL (no qk_norm) */
    const float *k_norm;    /* (head_dim) or NULL */
    ml_qtensor wo;          /* (dim, q_dim) */
    const float *ffn_norm;  /* (dim) */
    ml_qtensor w1;          /* (hidden_dim, dim) gate */
    ml_qtensor w2;          /* (dim, hidden_dim) down */
    ml_qtensor w3;          /* (hidden_dim, dim) up */
} ml_layer;

typedef struct {
    ml_qtensor tok_emb;     /* (vocab, dim) */
    ml_layer *layers;       /* (n_layers), in the arena */
    const float *final_norm;/* (dim) */
    ml_qtensor wcls;        /* (vocab, dim); a copy of tok_emb's view if shared */
} ml_weights;

/* The run state that outlives a step: caches, tables, the logits. */
typedef struct {
    float *att_scores; /* (n_heads, max_seq) attention weights after softmax */
    float *logits;     /* (vocab) the last token's logits */
    float *key_cache;  /* (n_layers, max_seq, kv_dim) */
    float *val_cache;  /* (n_layers, max_seq, kv_dim) */
    float *rope_cos;   /* (max_seq, head_dim/2), llama3 scaling applied */
    float *rope_sin;   /* (max_seq, head_dim/2) */
    void *sampler_scratch; /* (vocab) sampler workspace, see sampler.h */
} ml_state;

/* The activations of one step of the forward pass, one row per token: a
 * decode step is a batch of one (row 0), a prompt fills up to cap rows. */
typedef struct {
    int cap;           /* max tokens per batch: ml_open_opts.batch, 1 .. max_seq */
    float *x;          /* (cap, dim) residual streams */
    float *x_norm;     /* (cap, dim) RMSNorm(x): input of the q/k/v and w1/w3 projections */
    float *q;          /* (cap, n_heads, head_dim) queries (q_dim per token) */
    float *attn_out;   /* (cap, n_heads, head_dim) attention output: input of wo */
    float *branch_out; /* (cap, dim) output of wo or w2, added to x */
    float *ffn_gate;   /* (cap, hidden_dim) silu(w1 x) * (w3 x): input of w2 */
    float *ffn_up;     /* (cap, hidden_dim) w3 x */
    ml_qbatch x_q8;    /* (cap, max(dim, hidden_dim)) Q8_0 of the next matmul's input */
    float *logits;     /* (cap, vocab) every token's logits; NULL unless opened with all_logits */
} ml_batch_state;

typedef struct {
    int use_mmap;   /* 1: map the file; 0: read it into memory; ML_FILE_AUTO (core/file.h, the
                     * tools' default): read it if it fits comfortably in memory, else map;
                     * ml_model_open_buffer: ML_FILE_TAKE hands the image over (core/file.h) */
    int max_seq;    /* 0: the model's context; else cap the context (and KV cache) */
    int n_threads;  /* worker threads (THREADS=pthread builds), 1 otherwise */
    int batch;      /* max tokens per ml_forward_batch step (capped at the context);
                       0 or 1: one token per step, as decode */
    int all_logits; /* room for every token's logits of a batch (needed with batch > 1) */
} ml_open_opts;

typedef struct {
    ml_config cfg;
    ml_weights w;
    ml_state s;
    ml_batch_state b;
    ml_file file;
    ml_arena arena;
    ml_ops ops;
    ml_bytes tokenizer;  /* the embedded tokenizer file (version 2), a view into the file */
    ml_bytes chat_template; /* the chat template (version 2), UTF-8 without NUL */
    size_t weight_bytes; /* bytes of the file the weights occupy */
    size_t kv_bytes;     /* KV cache part of the arena */
} ml_model;

/* Validate and map a .mlb file, then carve every run buffer from one arena. */
ml_status ml_model_open(ml_model *m, const char *path, const ml_open_opts *opts, ml_err *err);

/* The same from a .mlb image in memory (64-byte aligned, owned by the caller,
 * which keeps it alive until ml_model_close). name labels messages. */
ml_status ml_model_open_buffer(ml_model *m, const void *data, size_t size, const char *name,
                               const ml_open_opts *opts, ml_err *err);
void ml_model_close(ml_model *m);

/* One decoding step: token at position pos -> m->s.logits, a batch of one
 * through the layer sequence ml_forward_batch runs. Logits that are not
 * finite (a damaged model whose weights overflow float32) are ML_E_FORMAT. */
ml_status ml_forward(ml_model *m, int token, int pos, ml_err *err);

/* Receives one token's logits from ml_forward_batch (vocab floats, valid
 * during the call); a non-zero status stops the batch and is returned. */
typedef ml_status (*ml_logits_fn)(void *ud, int pos, const float *logits, ml_err *err);

/* A prompt: tokens[0..n) at positions pos0 .. pos0+n-1, their keys and values
 * into the KV cache, in steps of m->b.cap tokens (the batch is split here;
 * any n that fits the context is fine). The last token's logits go to
 * m->s.logits, bit for bit those of ml_forward token by token; with `each`,
 * every token's logits are passed to each() in order (needs a model opened
 * with all_logits, or with a batch of 1). A model opened with a batch of 1
 * runs token by token. n < 1 or a prompt beyond the context is ML_E_ARG,
 * checked, like the tokens, before anything runs; non-finite values are
 * ML_E_FORMAT as in ml_forward. */
ml_status ml_forward_batch(ml_model *m, const int *tokens, int n, int pos0, ml_logits_fn each, void *ud,
                           ml_err *err);

#endif
