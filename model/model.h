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
    int head_dim;   /* dim / n_heads */
    int kv_dim;     /* n_kv_heads * head_dim */
    int hidden_dim; /* FFN width */
    int vocab;
    int max_seq;    /* context used by this run (header value, or less with -c) */
    int file_max_seq; /* context the model was trained for (header) */
    float rope_theta;
    float norm_eps;
    int wtype;      /* ml_type of every matrix */
    int shared_classifier;
} ml_config;

typedef struct {
    const float *attn_norm; /* (dim) */
    ml_qtensor wq;          /* (dim, dim) */
    ml_qtensor wk;          /* (kv_dim, dim) */
    ml_qtensor wv;          /* (kv_dim, dim) */
    ml_qtensor wo;          /* (dim, dim) */
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

typedef struct {
    float *x;          /* (dim) residual stream */
    float *x_norm;     /* (dim) RMSNorm(x): input of the q/k/v and w1/w3 projections */
    float *attn_out;   /* (n_heads, head_dim) attention output: input of wo */
    float *branch_out; /* (dim) output of wo or w2, added to x */
    float *ffn_gate;   /* (hidden_dim) silu(w1 x) * (w3 x): input of w2 */
    float *ffn_up;     /* (hidden_dim) w3 x */
    float *q;          /* (n_heads, head_dim) query */
    float *att_scores; /* (n_heads, max_seq) attention weights after softmax */
    float *logits;     /* (vocab) */
    float *key_cache;  /* (n_layers, max_seq, kv_dim) */
    float *val_cache;  /* (n_layers, max_seq, kv_dim) */
    float *rope_cos;   /* (max_seq, head_dim/2) */
    float *rope_sin;   /* (max_seq, head_dim/2) */
    ml_qact x_q8;      /* (max(dim, hidden_dim)) Q8_0 of the next matvec's input */
    void *sampler_scratch; /* (vocab) sampler workspace, see sampler.h */
} ml_state;

typedef struct {
    int use_mmap;   /* 1: map the file (default); 0: read it into memory */
    int max_seq;    /* 0: the model's context; else cap the context (and KV cache) */
    int n_threads;  /* worker threads (THREADS=pthread builds), 1 otherwise */
} ml_open_opts;

typedef struct {
    ml_config cfg;
    ml_weights w;
    ml_state s;
    ml_file file;
    ml_arena arena;
    ml_ops ops;
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

/* One decoding step: token at position pos -> m->s.logits. Logits that are
 * not finite (a damaged model whose weights overflow float32) are ML_E_FORMAT. */
ml_status ml_forward(ml_model *m, int token, int pos, ml_err *err);

#endif
