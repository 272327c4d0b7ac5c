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
 * last ones do the same arithmetic per row, so a row's result never depends
 * on how the caller split [r0, r1). */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/scalar/q4_unpack.h"

/* ---- Q8_0 weights ------------------------------------------------------- */

static int32_t dot_block_q8(const int8_t *a, const int8_t *b) {
    int32_t s = 0;
    for (int j = 0; j < ML_QK; j++) s += (int32_t)a[j] * (int32_t)b[j];
    return s;
}

/* ---- Q4_0 weights ------------------------------------------------------- */

/* Unpack the block's nibbles to int8 (q4_unpack.h), then the Q8 dot. */
static int32_t dot_block_q4(const uint8_t *p, const int8_t *xq) {
    int8_t w[ML_QK];
    ml_q4_unpack_scalar(w, p);
    return dot_block_q8(w, xq);
}

/* ---- the body of every type ---------------------------------------------- */

/* Block blk (row * blocks per row + block) of W against the activation
 * block xq: the exact int32 sumi. */
ML_INLINE int32_t dot_block(const ml_qtensor *W, size_t blk, const int8_t *xq, ml_type t) {
    if (t == ML_TYPE_Q4_0) return dot_block_q4((const uint8_t *)W->q + blk * ML_Q4_BLOCK_BYTES, xq);
    return dot_block_q8(W->q + blk * ML_QK, xq);
}

/* nr (<= 4) rows from r, each activation block read once for all of them. */
ML_INLINE void matvec_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r, int nr, ml_type t, ml_type st) {
    const int nb = W->cols / ML_QK;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int b = 0; b < nb; b++) {
        const int8_t *xq = x->q + (size_t)b * ML_QK;
        const float dx = x->d[b];
        for (int i = 0; i < nr; i++) {
            const size_t blk = (size_t)(r + i) * (size_t)nb + (size_t)b;
            sum[i] += (float)dot_block(W, blk, xq, t) * (ml_scale_at(W->d, blk, st) * dx);
        }
    }
    for (int i = 0; i < nr; i++) y[r + i] = sum[i];
}

/* t (ML_TYPE_Q8_0 or ML_TYPE_Q4_0) picks the block dot and st (ML_TYPE_F32
 * or ML_TYPE_F16) how W's block scale is read (ml_scale_at: exactly
 * converted), so an fp16 matrix gives the bits of the fp32 matrix holding
 * the converted scales. Rows 4 at a time (a constant count), then the rest. */
ML_INLINE void matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type t, ml_type st) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) matvec_rows(y, W, x, r, 4, t, st);
    if (r < r1) matvec_rows(y, W, x, r, r1 - r, t, st);
}

void ml_k_matvec_q8_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}

void ml_k_matvec_q4_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
