/* The canonical exp (kernels/canon.h, ml_canon_expf) on 4 NEON lanes: the
 * same IEEE operations in the same order as the scalar twin, no FMA, so it
 * is bit-identical to it where NEON is IEEE (AArch64; canon.h ARM rule 5). */
#ifndef ML_ARM_EXP_H
#define ML_ARM_EXP_H

#include "kernels/arm/arm_vec.h"
#include "kernels/canon.h"

ML_INLINE float32x4_t ml_arm_exp(float32x4_t x) {
    /* NaN -> X_MIN, as the scalar's comparisons give */
    x = vminq_f32(ml_arm_max_num(x, vdupq_n_f32(ML_EXP_X_MIN)), vdupq_n_f32(ML_EXP_X_MAX));
    const float32x4_t round = vdupq_n_f32(ML_EXP_ROUND);
    const float32x4_t nf = vsubq_f32(vaddq_f32(vmulq_n_f32(x, ML_EXP_LOG2E), round), round);
    const int32x4_t n = vcvtq_s32_f32(nf); /* exact: nf is an integer */
    float32x4_t r = vsubq_f32(x, vmulq_n_f32(nf, ML_EXP_LN2_HI));
    r = vsubq_f32(r, vmulq_n_f32(nf, ML_EXP_LN2_LO));
    float32x4_t p = vdupq_n_f32(ML_EXP_P5);
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(ML_EXP_P4));
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(ML_EXP_P3));
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(ML_EXP_P2));
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(ML_EXP_P1));
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(ML_EXP_P0));
    p = vaddq_f32(vaddq_f32(vmulq_f32(p, vmulq_f32(r, r)), r), vdupq_n_f32(1.0f));
    /* 2^n as two normal factors, n1 = n >> 1 (arithmetic), n2 = n - n1 */
    const int32x4_t n1 = vshrq_n_s32(n, 1), n2 = vsubq_s32(n, n1), bias = vdupq_n_s32(127);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

/* ml_canon_softmax_exp: the exp where d >= the cut, else 0 (NaN d too).
 * The exp of the lanes below is computed and dropped (AArch64 handles
 * denormals at full speed). */
ML_INLINE float32x4_t ml_arm_softmax_exp(float32x4_t d) {
    const uint32x4_t keep = vcgeq_f32(d, vdupq_n_f32(-ML_SOFTMAX_CUT));
    return vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(ml_arm_exp(d))));
}

#endif
