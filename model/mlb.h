/* The .mlb model file (DESIGN §6), little-endian.
 *
 *   offset 0    ml_mlb_header (256 bytes, zero padded)
 *   then arrays, each starting at the next multiple of 64 from file start
 *   (gaps are zero bytes); the file ends exactly at the end of the last array.
 *
 *   Array order ("X.q, X.d" for a quantized matrix, one array for an F32 norm):
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
 *   head_dim = dim / n_heads, kv_dim = n_kv_heads * head_dim.
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
#define ML_MLB_VERSION 1u
#define ML_MLB_HEADER_BYTES 256

typedef struct {
    char magic[4];              /* "MLB1" */
    uint32_t version;           /* 1 */
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
    uint8_t pad[ML_MLB_HEADER_BYTES - 52];
} ml_mlb_header;

_Static_assert(sizeof(ml_mlb_header) == ML_MLB_HEADER_BYTES, ".mlb header is 256 bytes");
_Static_assert(offsetof(ml_mlb_header, version) == 4, "version at 4");
_Static_assert(offsetof(ml_mlb_header, dim) == 8, "dim at 8");
_Static_assert(offsetof(ml_mlb_header, max_seq) == 32, "max_seq at 32");
_Static_assert(offsetof(ml_mlb_header, rope_theta) == 36, "rope_theta at 36");
_Static_assert(offsetof(ml_mlb_header, norm_eps) == 40, "norm_eps at 40");
_Static_assert(offsetof(ml_mlb_header, wtype) == 44, "wtype at 44");
_Static_assert(offsetof(ml_mlb_header, shared_classifier) == 48, "shared_classifier at 48");
_Static_assert(offsetof(ml_mlb_header, pad) == 52, "padding from 52");

#endif
