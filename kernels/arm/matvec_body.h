/* The matvec body of the neon build (ARMv7 and AArch64; Q8_0 and Q4_0),
 * over a fixed-name primitive: the including .c first includes its block
 * dot, which defines
 *     ml_arm_dot_i8(acc, w0, w1, xs)
 * = acc plus int32 lanes summing to w0 . xs->x0 + w1 . xs->x1 (int8x16 each;
 * kernels/neon/neon_dot.h: vmull_s8 + vpadalq_s16), then calls
 * ml_arm_matvec with ML_ARM_Q8 or ML_ARM_Q4. neon_dotprod has its own
 * 8-row version of this shape (kernels/neon_dotprod/dotprod_mv.h).
 *
 * Float order (kernels/canon.h rule 5, bit-identical to the scalar twin):
 * rows in the float lanes, each row accumulating sequentially over its
 * blocks, sum += (float)sumi * (dw * dx), separate multiply and add.
 *
 * Each row keeps ONE int32x4 accumulator for the whole row: the block dots
 * are added on, never reset, and the 4 rows' accumulators reduce to their
 * running totals S_b; a block's sums are S_b - S_(b-1). That saves zeroing
 * four registers per block (vdotq_s32 only accumulates), and is exact even
 * if the totals wrap: int32 lanes add modulo 2^32 and each block's sumi is
 * below 2^20 in magnitude.
 *
 * Q4_0: the weights unpacked to 16 * value (ml_arm_q4_lo16 / hi16,
 * arm_vec.h). The Q8 path then gives 16 * sumi, and the fixed-point
 * conversion (4 fraction bits) divides by 16 exactly.
 * |16 * value| <= 128, so the neon shim's int16 pair sums stay <= 2 * 128 *
 * 127 < 2^15.
 *
 * The row tail (< 4 rows) runs the same code with row 0 standing in for the
 * missing rows, whose lanes are ignored. */
#ifndef ML_ARM_MATVEC_BODY_H
#define ML_ARM_MATVEC_BODY_H

#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/arm/arm_vec.h"

/* ---- one block of one row: the weights as two int8x16 halves ------------ */

ML_INLINE int32x4_t ml_arm_dot_q8(int32x4_t acc, const int8_t *w, const ml_arm_x *xs) {
    const ml_arm_x v = ml_arm_ld32(w);
    return ml_arm_dot_i8(acc, v.x0, v.x1, xs);
}

ML_INLINE int32x4_t ml_arm_dot_q4(int32x4_t acc, const int8_t *w, const ml_arm_x *xs) {
    const uint8x16_t t = ml_arm_q4_x88(vld1q_u8((const uint8_t *)w));
    return ml_arm_dot_i8(acc, ml_arm_q4_lo16(t), ml_arm_q4_hi16(t), xs);
}

/* ---- one block of 4 rows -------------------------------------------------- */

/* acc[i] += block dot of row i (its weights at w[i]); returns this block's
 * [sumi rows 0..3] as floats, *prev the running totals. Advances w and *xq
 * past the block (post-incremented loads, no address arithmetic). */
ML_INLINE float32x4_t ml_arm_block4(int32x4_t *acc, int32x4_t *prev, const int8_t **w, const int8_t **xq, int kind) {
    const ml_arm_x xs = ml_arm_ld32(*xq);
    *xq += ML_QK;
    ML_UNROLL for (int i = 0; i < 4; i++) {
        acc[i] = kind == ML_ARM_Q4 ? ml_arm_dot_q4(acc[i], w[i], &xs) : ml_arm_dot_q8(acc[i], w[i], &xs);
        w[i] += ml_arm_wbytes(kind);
    }
    const int32x4_t total = ml_arm_reduce4(acc), sumi = vsubq_s32(total, *prev);
    *prev = total;
    return kind == ML_ARM_Q4 ? vcvtq_n_f32_s32(sumi, 4) : vcvtq_f32_s32(sumi);
}

/* nr (4 or 1, a constant after inlining) consecutive rows starting at y.
 * Blocks go in groups of 4, whose scales for the 4 rows come from one 4x4
 * transpose; the last nb % 4 blocks one at a time. */
ML_INLINE void ml_arm_rows(float *y, const int8_t *wq, size_t wstride, const void *wd, int nb, const int8_t *xq,
                           const float *xd, int nr, int kind, ml_type st) {
    const int8_t *w[4];
    const char *d[4];
    ml_arm_rows4(w, d, wq, wstride, wd, nb, nr, st);
    int32x4_t acc[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    int32x4_t prev = vdupq_n_s32(0);
    ml_arm_f4 sum = ml_arm_f4_zero();
    int b = 0;
    for (; b + 4 <= nb; b += 4) { /* groups of 4 blocks share one scale load */
        ml_arm_f4 s[4];
        ml_arm_scales4(s, d, xd + b, st);
        ml_arm_scales_skip(d, 4, st);
        ML_UNROLL for (int k = 0; k < 4; k++) sum = ml_arm_f4_madd(sum, ml_arm_block4(acc, &prev, w, &xq, kind), s[k]);
    }
    for (; b < nb; b++) {
        const ml_arm_f4 s = ml_arm_scales(d, xd[b], st);
        ml_arm_scales_skip(d, 1, st);
        sum = ml_arm_f4_madd(sum, ml_arm_block4(acc, &prev, w, &xq, kind), s);
    }
    ml_arm_f4_store(y, sum, nr);
}

/* y[r0..r1) = W x, weights of kind (ML_ARM_Q8, ML_ARM_Q4) with scales of type st */
ML_INLINE void ml_arm_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, int kind, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * ml_arm_wbytes(kind), dstride = (size_t)nb * (size_t)ml_scale_bytes(st);
    const char *wd = (const char *)W->d;
    int r = r0;
    for (; r + 4 <= r1; r += 4)
        ml_arm_rows(y + r, W->q + (size_t)r * wstride, wstride, wd + (size_t)r * dstride, nb, x->q, x->d, 4, kind, st);
    for (; r < r1; r++)
        ml_arm_rows(y + r, W->q + (size_t)r * wstride, wstride, wd + (size_t)r * dstride, nb, x->q, x->d, 1, kind, st);
}

#endif
