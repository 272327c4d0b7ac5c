/* In-place softmax, neon, in the canonical order (kernels/canon.h): the
 * canonical exp (arm_exp.h, 0 below rule 3's cut; the n % 4 tail by its
 * scalar form, the same bits), the sum over 8 lanes then the n % 8 tail one
 * by one, an IEEE division per element: bit-identical to the scalar twin.
 * AArch64 only (kernels_neon.h). */
#include "config/ml_kernels.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_exp.h"

void ml_k_softmax_neon(float *x, int n) {
    /* the scalar twin's max: start at x[0], `x > max` per lane, so a NaN
     * after x[0] is skipped (lanes are never NaN unless x[0] is) */
    int i = 0;
    float32x4_t mv = vdupq_n_f32(x[0]);
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        mv = vbslq_f32(vcgtq_f32(v, mv), v, mv);
    }
    float max = ml_arm_hmax(mv);
    for (; i < n; i++)
        if (x[i] > max) max = x[i];

    const int n8 = n & ~7;
    const float32x4_t m = vdupq_n_f32(max);
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (i = 0; i < n8; i += 8) {
        const float32x4_t e0 = ml_arm_softmax_exp(vsubq_f32(vld1q_f32(x + i), m));
        const float32x4_t e1 = ml_arm_softmax_exp(vsubq_f32(vld1q_f32(x + i + 4), m));
        vst1q_f32(x + i, e0);
        vst1q_f32(x + i + 4, e1);
        lo = vaddq_f32(lo, e0);
        hi = vaddq_f32(hi, e1);
    }
    float sum = ml_arm_fold8(lo, hi);
    for (; i < n; i++) {
        x[i] = ml_canon_softmax_exp(x[i] - max);
        sum += x[i];
    }
    const float32x4_t s = vdupq_n_f32(sum);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vdivq_f32(vld1q_f32(x + i), s));
    for (; i < n; i++) x[i] /= sum;
}
#endif
