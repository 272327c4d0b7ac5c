/* The neon build's primitives on one weight block of 4 rows for the shared
 * matmul body (kernels/arm/matmul_body.h), ARMv7 and AArch64: the rows'
 * weights stay as loaded (Q4_0: unpacked once for the whole tile of tokens)
 * and each token's block sums come from vmull_s8 / vmlal_s8 and pairwise
 * adds.
 * Q8_0: two products per int16 lane (|q| <= 127: < 2^15) widen into int32
 * by row (vpaddlq + vpadalq), then the 4 rows reduce to [sumi rows 0..3].
 * Q4_0: the nibbles unpacked to their values v in [-8, 7] (not 16 * v as in
 * the matvec), so |v * x| <= 8 * 127 and an int16 lane holds 32 products:
 * each row's 32 go into one int16x8 (4 a lane), the rows are added pairwise
 * in int16 (16 a lane at most: 16256 < 2^15) and widened once. */
#ifndef ML_NEON_MM_H
#define ML_NEON_MM_H

#include "kernels/neon/neon_dot.h"

/* row i: v[2i] its elements 0..15, v[2i + 1] 16..31 (Q4_0: their values) */
typedef struct {
    int8x16_t v[8];
} ml_arm_w4;

ML_INLINE void ml_arm_w4_prep(ml_arm_w4 *wb, const int8_t *const *w, int kind) {
    ML_UNROLL for (int i = 0; i < 4; i++) {
        if (kind == ML_ARM_Q4) {
            const uint8x16_t u = ml_arm_q4_x88(vld1q_u8((const uint8_t *)w[i]));
            wb->v[2 * i] = vshrq_n_s8(ml_arm_q4_lo16(u), 4);
            wb->v[2 * i + 1] = vshrq_n_s8(vreinterpretq_s8_u8(u), 4);
        } else {
            const ml_arm_x v = ml_arm_ld32(w[i]);
            wb->v[2 * i] = v.x0;
            wb->v[2 * i + 1] = v.x1;
        }
    }
}

/* Q4_0: row i's 32 products, 4 to an int16 lane */
ML_INLINE int16x8_t ml_neon_q4_products(const ml_arm_w4 *wb, int i, const ml_arm_x *xs) {
    int16x8_t p = vmull_s8(vget_low_s8(wb->v[2 * i]), vget_low_s8(xs->x0));
    p = ml_arm_mlal_hi_s8(p, wb->v[2 * i], xs->x0);
    p = vmlal_s8(p, vget_low_s8(wb->v[2 * i + 1]), vget_low_s8(xs->x1));
    return ml_arm_mlal_hi_s8(p, wb->v[2 * i + 1], xs->x1);
}

ML_INLINE float32x4_t ml_arm_w4_dot(const ml_arm_w4 *wb, const ml_arm_x *xs, int kind) {
    if (kind == ML_ARM_Q4) {
        const int16x8_t p01 = ml_arm_padd_s16(ml_neon_q4_products(wb, 0, xs), ml_neon_q4_products(wb, 1, xs));
        const int16x8_t p23 = ml_arm_padd_s16(ml_neon_q4_products(wb, 2, xs), ml_neon_q4_products(wb, 3, xs));
        return vcvtq_f32_s32(vpaddlq_s16(ml_arm_padd_s16(p01, p23)));
    }
    int32x4_t a[4];
    ML_UNROLL for (int i = 0; i < 4; i++) {
        const ml_neon_prod p = ml_neon_products(wb->v[2 * i], wb->v[2 * i + 1], xs);
        a[i] = vpadalq_s16(vpaddlq_s16(p.p0), p.p1);
    }
    return vcvtq_f32_s32(ml_arm_reduce4(a));
}

#endif
