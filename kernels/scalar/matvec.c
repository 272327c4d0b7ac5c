/* y[r] = W[r,:] . x for rows [r0, r1), Q8_0 or Q4_0 weights times Q8_0
 * activations (DESIGN §4, §5). The scalar twin: every ISA's matvec follows
 * the per-block formula below, so this file is the reference.
 *
 * Per block b of row r (32 elements):
 *   sumi = sum_j qw[j] * qx[j]                      exact int32
 *   sum += (float)sumi * (W.d[r,b] * x.d[b])        FP32, in block order
 * i.e. the two scales are multiplied first (SIMD kernels form dw*dx for 4
 * rows with one vector multiply), then the converted integer sum, then one
 * add. y[r] = sum, starting from sum = 0.0f. Every SIMD kernel performs
 * these float operations in this order and matches this file bit for bit
 * (kernels/canon.h rule 5); only the exact int32 sumi may be formed in any
 * order.
 *
 * With fp16 scales (the _f16 kernels) dw is the scale converted exactly to
 * fp32 (ml_f16_to_f32), and the formula is unchanged.
 *
 * Rows go 4 at a time so each activation block is read once for 4 rows; the
 * tail does the same arithmetic one row at a time, so a row's result never
 * depends on how the caller split [r0, r1). */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/scalar/q4_unpack.h"

/* ---- Q8_0 weights ------------------------------------------------------- */

static int32_t dot_block_q8(const int8_t *a, const int8_t *b) {
    int32_t s = 0;
    for (int j = 0; j < ML_QK; j++) s += (int32_t)a[j] * (int32_t)b[j];
    return s;
}

/* The body of both scale types: st (ML_TYPE_F32 or ML_TYPE_F16) only decides
 * how W's block scale is read (ml_scale_at: exactly converted), so an fp16
 * matrix gives the bits of the fp32 matrix holding the converted scales. */
ML_INLINE void matvec_q8(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t cols = (size_t)W->cols;
    const void *wd = W->d;
    int r = r0;
    for (; r + 4 <= r1; r += 4) {
        float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int b = 0; b < nb; b++) {
            const int8_t *xq = x->q + (size_t)b * ML_QK;
            const float dx = x->d[b];
            for (int i = 0; i < 4; i++) {
                const size_t row = (size_t)(r + i);
                int32_t sumi = dot_block_q8(W->q + row * cols + (size_t)b * ML_QK, xq);
                sum[i] += (float)sumi * (ml_scale_at(wd, row * (size_t)nb + (size_t)b, st) * dx);
            }
        }
        for (int i = 0; i < 4; i++) y[r + i] = sum[i];
    }
    for (; r < r1; r++) {
        float sum = 0.0f;
        for (int b = 0; b < nb; b++) {
            int32_t sumi = dot_block_q8(W->q + (size_t)r * cols + (size_t)b * ML_QK,
                                        x->q + (size_t)b * ML_QK);
            sum += (float)sumi * (ml_scale_at(wd, (size_t)r * (size_t)nb + (size_t)b, st) * x->d[b]);
        }
        y[r] = sum;
    }
}

void ml_k_matvec_q8_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec_q8(y, W, x, r0, r1, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec_q8(y, W, x, r0, r1, ML_TYPE_F16);
}

/* ---- Q4_0 weights ------------------------------------------------------- */

/* Unpack the block's nibbles to int8 (q4_unpack.h), then the Q8 dot. */
static int32_t dot_block_q4(const uint8_t *p, const int8_t *xq) {
    int8_t w[ML_QK];
    ml_q4_unpack_scalar(w, p);
    return dot_block_q8(w, xq);
}

ML_INLINE void matvec_q4(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type st) {
    const int nb = W->cols / ML_QK;
    const uint8_t *wq = (const uint8_t *)W->q;
    const void *wd = W->d;
    int r = r0;
    for (; r + 4 <= r1; r += 4) {
        float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int b = 0; b < nb; b++) {
            const int8_t *xq = x->q + (size_t)b * ML_QK;
            const float dx = x->d[b];
            for (int i = 0; i < 4; i++) {
                const size_t blk = (size_t)(r + i) * (size_t)nb + (size_t)b;
                int32_t sumi = dot_block_q4(wq + blk * ML_Q4_BLOCK_BYTES, xq);
                sum[i] += (float)sumi * (ml_scale_at(wd, blk, st) * dx);
            }
        }
        for (int i = 0; i < 4; i++) y[r + i] = sum[i];
    }
    for (; r < r1; r++) {
        float sum = 0.0f;
        for (int b = 0; b < nb; b++) {
            const size_t blk = (size_t)r * (size_t)nb + (size_t)b;
            int32_t sumi = dot_block_q4(wq + blk * ML_Q4_BLOCK_BYTES, x->q + (size_t)b * ML_QK);
            sum += (float)sumi * (ml_scale_at(wd, blk, st) * x->d[b]);
        }
        y[r] = sum;
    }
}

void ml_k_matvec_q4_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec_q4(y, W, x, r0, r1, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec_q4(y, W, x, r0, r1, ML_TYPE_F16);
}
