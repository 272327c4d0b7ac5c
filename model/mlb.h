/* The .mlb model file (DESIGN §6), little-endian.
 *
 *   offset 0    ml_mlb_header (256 bytes, zero padded)
 *   then arrays, each starting at the next multiple of 64 from file start
 *   (gaps are zero bytes); the file ends exactly at the end of the last array.
 *
 *   The arrays are those of the tensor table ml_mlb_tensors (model/mlb_layout.c),
 *   the one description that the loader, the random writer and the
 *   malformed-file tests walk (tools/mlb.py is checked against it by
 *   tests/test_mlb_layout.py). For version 1 it reads
 *   ("X.q, X.d" for a quantized matrix, one array for an F32 norm):
 *     tok_emb.q, tok_emb.d                     (vocab, dim)      wtype
 *     per layer l = 0 .. n_layers-1:
 *       attn_norm                              (dim)             F32
 *       wq.q, wq.d                             (dim, dim)        wtype
 *       wk.q, wk.d                             (kv_dim, dim)     wtype
 *       wv.q, wv.d                             (kv_dim, dim)     wtype
 *       wo.q, wo.d                             (dim, dim)        wtype
 *       ffn_norm                               (dim)             F32
 *       w1.q, w1.d                             (hidden_dim, dim) wtype
 *       w2.q, w2.d                             (dim, hidden_dim) wtype
 *       w3.q, w3.d                             (hidden_dim, dim) wtype
 *     final_norm                               (dim)             F32
 *     wcls.q, wcls.d   (only if shared_classifier == 0)  (vocab, dim) wtype
 *
 *   Version 2 (the header below from byte 52) adds to each layer, after wv:
 *       bq, bk, bv                             (q_dim), (kv_dim), (kv_dim) F32  if flags bit 0
 *       q_norm, k_norm                         (head_dim) each   F32  if flags bit 1
 *   and after the last array the sections (tokenizer, then chat template),
 *   each at the next multiple of 64; the file ends at the end of the last.
 *
 *   head_dim = the header's head_dim, or dim / n_heads when it is 0 (always
 *   in version 1); q_dim = n_heads * head_dim (wq rows, wo cols);
 *   kv_dim = n_kv_heads * head_dim.
 *   Matrix (rows, cols) = (out, in); y = W x. Quantized along cols in blocks
 *   of 32: Q8_0 q is rows*cols int8 row-major; Q4_0 q is rows*cols/2 bytes,
 *   block (r, b) at byte (r*cols/32 + b)*16, its byte j holding element
 *   b*32+j in the low nibble and b*32+16+j in the high nibble, each stored as
 *   value + 8. d is rows*cols/32 float32, d[r*(cols/32) + b].
 *   wq and wk rotate interleaved pairs (2i, 2i+1) (llama2.c convention). */
#ifndef ML_MLB_H
#define ML_MLB_H

#include <stddef.h>
#include <stdint.h>

#define ML_MLB_MAGIC "MLB1"
#define ML_MLB_VERSION 1u   /* the first version; files of it load unchanged */
#define ML_MLB_VERSION_2 2u /* the version this build writes when a field below is needed */
#define ML_MLB_HEADER_BYTES 256

typedef struct {
    char magic[4];              /* "MLB1" */
    uint32_t version;           /* 1 or 2 */
    uint32_t dim;               /* model width, multiple of 32 */
    uint32_t n_layers;
    uint32_t n_heads;
    uint32_t n_kv_heads;        /* divides n_heads (GQA) */
    uint32_t hidden_dim;        /* FFN width, multiple of 32 */
    uint32_t vocab;
    uint32_t max_seq;           /* context length the model was trained for */
    float rope_theta;           /* 10000 for llama2.c models */
    float norm_eps;             /* RMSNorm epsilon */
    uint32_t wtype;             /* ml_type: ML_TYPE_Q8_0 or ML_TYPE_Q4_0 */
    uint32_t shared_classifier; /* 1: logits use tok_emb; 0: wcls follows */
    /* version 2 only (zero in version 1, where the loader ignores them);
     * every unused byte is zero and the loader checks that */
    uint32_t stype;             /* scale type: 0 F32; 1 F16 (IEEE half) */
    uint32_t head_dim;          /* 0: dim / n_heads; else the head size */
    uint32_t flags;             /* ML_MLB_FLAG_* */
    uint32_t rope_scaling;      /* ML_MLB_ROPE_*: 0 none, 1 llama3 (the next four apply) */
    float rope_factor;
    float rope_low_freq_factor;
    float rope_high_freq_factor;
    uint32_t rope_orig_max_seq;
    int32_t bos, eos, eot;      /* special ids; -1: none */
    uint32_t add_bos;           /* 0/1: a prompt starts with bos */
    uint32_t reserved0;         /* zero */
    uint64_t tok_off, tok_bytes;   /* the embedded tokenizer file, verbatim; 0/0: none */
    uint64_t tmpl_off, tmpl_bytes; /* the chat template, UTF-8, no NUL; 0/0: none */
    uint8_t pad[ML_MLB_HEADER_BYTES - 136];
} ml_mlb_header;

#define ML_MLB_FLAG_QKV_BIAS 1u  /* bq, bk, bv after wv of each layer */
#define ML_MLB_FLAG_QK_NORM 2u   /* q_norm, k_norm after bv/wv of each layer */
#define ML_MLB_FLAGS_KNOWN 3u
#define ML_MLB_ROPE_NONE 0u
#define ML_MLB_ROPE_LLAMA3 1u
#define ML_MLB_STYPE_F32 0u
#define ML_MLB_STYPE_F16 1u

_Static_assert(sizeof(ml_mlb_header) == ML_MLB_HEADER_BYTES, ".mlb header is 256 bytes");
_Static_assert(offsetof(ml_mlb_header, version) == 4, "version at 4");
_Static_assert(offsetof(ml_mlb_header, dim) == 8, "dim at 8");
_Static_assert(offsetof(ml_mlb_header, max_seq) == 32, "max_seq at 32");
_Static_assert(offsetof(ml_mlb_header, rope_theta) == 36, "rope_theta at 36");
_Static_assert(offsetof(ml_mlb_header, norm_eps) == 40, "norm_eps at 40");
_Static_assert(offsetof(ml_mlb_header, wtype) == 44, "wtype at 44");
_Static_assert(offsetof(ml_mlb_header, shared_classifier) == 48, "shared_classifier at 48");
_Static_assert(offsetof(ml_mlb_header, stype) == 52, "v2 fields from 52");
_Static_assert(offsetof(ml_mlb_header, rope_scaling) == 64, "rope_scaling at 64");
_Static_assert(offsetof(ml_mlb_header, rope_orig_max_seq) == 80, "rope_orig_max_seq at 80");
_Static_assert(offsetof(ml_mlb_header, bos) == 84, "bos at 84");
_Static_assert(offsetof(ml_mlb_header, reserved0) == 100, "reserved at 100");
_Static_assert(offsetof(ml_mlb_header, tok_off) == 104, "tok_off at 104");
_Static_assert(offsetof(ml_mlb_header, tmpl_bytes) == 128, "tmpl_bytes at 128");
_Static_assert(offsetof(ml_mlb_header, pad) == 136, "padding from 136");

/* ---- the tensor table -------------------------------------------------------
 * One row per tensor, in file order. The per-layer rows are consecutive: the
 * file holds them once per layer (l = 0 .. n_layers-1) where the first of
 * them stands. A new optional tensor is one row with a present() rule; a new
 * shape is one ml_mlb_dim. */

/* A dimension of a tensor, in terms of the header (checked by the loader). */
typedef enum {
    ML_MLB_ONE,    /* 1: the second dimension of a vector */
    ML_MLB_DIM,    /* dim */
    ML_MLB_KV_DIM, /* n_kv_heads * head_dim */
    ML_MLB_HIDDEN, /* hidden_dim */
    ML_MLB_VOCAB,  /* vocab */
    ML_MLB_Q_DIM,  /* n_heads * head_dim */
    ML_MLB_HEAD,   /* head_dim */
} ml_mlb_dim;

/* How a tensor is stored (its type rule). */
typedef enum {
    ML_MLB_F32,   /* one array: rows*cols float32 */
    ML_MLB_WTYPE, /* the header's wtype: the quants array, then the scales
                     array (rows*cols/32 float32) */
} ml_mlb_store;

typedef struct ml_mlb_tensor {
    const char *name;   /* as messages name it: "wq" */
    uint8_t per_layer;  /* 1: once per layer */
    uint8_t store;      /* ml_mlb_store */
    uint8_t rows, cols; /* ml_mlb_dim: (out, in) of a matrix, (n, ML_MLB_ONE) of a vector */
    int (*present)(const ml_mlb_header *h); /* NULL: always in the file */
    size_t field;       /* where the loader puts its view: the offset of an
                           ml_qtensor (WTYPE) or a const float * (F32) in
                           ml_layer (per layer) or ml_weights (model/model.h) */
} ml_mlb_tensor;

extern const ml_mlb_tensor ml_mlb_tensors[];
extern const int ml_mlb_n_tensors;

/* ---- the arrays of one header, in file order ----------------------------- */

typedef enum {
    ML_MLB_QUANTS, /* X.q of a WTYPE tensor: ml_quant_bytes(wtype, rows*cols) */
    ML_MLB_SCALES, /* X.d of a WTYPE tensor: rows*cols/32 float32 */
    ML_MLB_FLOATS, /* the one array of an F32 tensor */
} ml_mlb_part;

typedef struct {
    const ml_mlb_tensor *t;
    int layer;           /* -1 for a tensor outside the layers */
    int part;            /* ml_mlb_part */
    uint32_t rows, cols; /* of the tensor */
    uint64_t off, bytes; /* in the file: off is a multiple of 64 */
} ml_mlb_array;

/* A walk over the arrays of a header the loader accepts (parse_header's
 * checks; the random writer's headers): ml_mlb_walk_init, then
 * ml_mlb_walk_next until it returns 0. */
typedef struct {
    const ml_mlb_header *h;
    int i;           /* table row */
    int first;       /* first per-layer row */
    int layer;       /* -1 outside the layers */
    int part;        /* next part of row i */
    uint64_t end;    /* end of the last array */
} ml_mlb_walk;

void ml_mlb_walk_init(ml_mlb_walk *w, const ml_mlb_header *h);
int ml_mlb_walk_next(ml_mlb_walk *w, ml_mlb_array *a);

/* The end of the last array of header h (where the sections may start). */
uint64_t ml_mlb_arrays_end(const ml_mlb_header *h);

/* Bytes of the whole file of header h: the end of its last array, or of its
 * last section (version 2). */
uint64_t ml_mlb_file_bytes(const ml_mlb_header *h);

/* head_dim of a header: its field, or dim / n_heads when 0 (version 1). */
uint32_t ml_mlb_head_dim(const ml_mlb_header *h);

#endif
