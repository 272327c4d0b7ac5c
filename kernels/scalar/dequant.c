/* out = row `row` of W as floats (the embedding lookup, DESIGN §4): element
 * e of block b is W.d[row, b] * q[e], one IEEE multiply, the value the
 * format defines; every ISA would have to give these bits. The scalar twin,
 * and so far the only one: a row per token is not worth a SIMD kernel. */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/scalar/q4_unpack.h"

void ml_k_dequant_row_q8_scalar(float *out, const ml_qtensor *W, int row) {
    const int nb = W->cols / ML_QK;
    const float *d = W->d + (size_t)row * (size_t)nb;
    const int8_t *q = W->q + (size_t)row * (size_t)W->cols;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < ML_QK; j++) out[b * ML_QK + j] = d[b] * (float)q[b * ML_QK + j];
}

void ml_k_dequant_row_q4_scalar(float *out, const ml_qtensor *W, int row) {
    const int nb = W->cols / ML_QK;
    const float *d = W->d + (size_t)row * (size_t)nb;
    const uint8_t *q = (const uint8_t *)W->q + (size_t)row * (size_t)nb * ML_Q4_BLOCK_BYTES;
    int8_t w[ML_QK];
    for (int b = 0; b < nb; b++) {
        ml_q4_unpack_scalar(w, q + (size_t)b * ML_Q4_BLOCK_BYTES);
        for (int j = 0; j < ML_QK; j++) out[b * ML_QK + j] = d[b] * (float)w[j];
    }
}
