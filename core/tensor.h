/* Tensor views. A weight matrix is stored SoA: all quant bytes, then all
 * block scales, each array 64-byte aligned (DESIGN §4), so every ISA can use
 * aligned vector loads. Row r, block b (ML_LAYOUT_ROWS, below): quants at
 * q + (r*cols + b*32)*bpe, scale at d[r*(cols/32) + b]. */
#ifndef ML_TENSOR_H
#define ML_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/quant.h"

typedef struct {
    int8_t *q;    /* (rows, cols) int8 for Q8_0; (rows, cols/2) packed nibbles for Q4_0 */
    union {
        float *d;     /* (rows, cols/32) block scales, stype ML_TYPE_F32 */
        uint16_t *dh; /* (rows, cols/32) block scales, stype ML_TYPE_F16 (binary16 bits) */
    };
    int rows, cols;
    uint8_t type;  /* ml_type: ML_TYPE_Q8_0 or ML_TYPE_Q4_0 */
    uint8_t stype; /* ml_type of the scales: ML_TYPE_F32 (0, the default) or ML_TYPE_F16 */
    uint8_t layout; /* ML_LAYOUT_ROWS (0, the file's) or ML_LAYOUT_R16 (core/pack.h) */
} ml_qtensor;

/* How a matrix's quants and scales lie in memory. ML_LAYOUT_ROWS: row after
 * row, as above and in the file. ML_LAYOUT_R16 (core/pack.h): each full
 * group of 16 rows interleaved block by block, the rows past the last full
 * group as in ML_LAYOUT_ROWS; only the kernels of a build whose
 * ml_k_weight_layout asks for it ever see it. */
enum { ML_LAYOUT_ROWS = 0, ML_LAYOUT_R16 = 1 };

typedef struct {
    int8_t *q;    /* (n) int8 activations, in [-127, 127] */
    float *d;     /* (n/32) block scales */
    int n;
} ml_qact;        /* Q8_0 activations */

/* The Q8_0 activations of n_tok tokens (a prompt batch), one after the
 * other: token t's quants at q + t*n, its scales at d + t*(n/32). */
typedef struct {
    int8_t *q;    /* (n_tok, n) */
    float *d;     /* (n_tok, n/32) */
    int n, n_tok;
} ml_qbatch;

/* Token t of a batch as one activation vector (a view, no copy). */
static inline ml_qact ml_qbatch_token(const ml_qbatch *X, int t) {
    ml_qact x = {X->q + (size_t)t * (size_t)X->n, X->d + (size_t)t * (size_t)(X->n / ML_QK), X->n};
    return x;
}

#endif
