/* out = row `row` of W as floats (the embedding lookup, DESIGN §4): element
 * e of block b is W.d[row, b] * q[e], one IEEE multiply, the value the
 * format defines; every ISA would have to give these bits. The scalar twin,
 * and so far the only one: a row per token is not worth a SIMD kernel. */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/scalar/q4_unpack.h"

ML_INLINE void dequant_row_q8(float *out, const ml_qtensor *W, int row, ml_type st) {
    const int nb = W->cols / ML_QK;
    const int8_t *q = W->q + (size_t)row * (size_t)W->cols;
    for (int b = 0; b < nb; b++) {
        const float d = ml_scale_at(W->d, (size_t)row * (size_t)nb + (size_t)b, st);
        for (int j = 0; j < ML_QK; j++) out[b * ML_QK + j] = d * (float)q[b * ML_QK + j];
    }
}

ML_INLINE void dequant_row_q4(float *out, const ml_qtensor *W, int row, ml_type st) {
    const int nb = W->cols / ML_QK;
    const uint8_t *q = (const uint8_t *)W->q + (size_t)row * (size_t)nb * ML_Q4_BLOCK_BYTES;
    int8_t w[ML_QK];
    for (int b = 0; b < nb; b++) {
        const float d = ml_scale_at(W->d, (size_t)row * (size_t)nb + (size_t)b, st);
        ml_q4_unpack_scalar(w, q + (size_t)b * ML_Q4_BLOCK_BYTES);
        for (int j = 0; j < ML_QK; j++) out[b * ML_QK + j] = d * (float)w[j];
    }
}

void ml_k_dequant_row_q8_scalar(float *out, const ml_qtensor *W, int row) { dequant_row_q8(out, W, row, ML_TYPE_F32); }
void ml_k_dequant_row_q4_scalar(float *out, const ml_qtensor *W, int row) { dequant_row_q4(out, W, row, ML_TYPE_F32); }

/* fp16 scales: the scale converted exactly (ml_f16_to_f32), then the same multiply. */
void ml_k_dequant_row_q8_f16_scalar(float *out, const ml_qtensor *W, int row) {
    dequant_row_q8(out, W, row, ML_TYPE_F16);
}
void ml_k_dequant_row_q4_f16_scalar(float *out, const ml_qtensor *W, int row) {
    dequant_row_q4(out, W, row, ML_TYPE_F16);
}
