/* Plain FP32 vector helpers, neon: residual add and the two attention loops,
 * in the canonical order (kernels/canon.h: 8-lane dot folded explicitly,
 * multiply then add): bit-identical to the scalar twins. AArch64 only
 * (kernels_neon.h: ARMv7 NEON flushes denormals). */
#include "config/ml_kernels.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_vec.h"

void ml_k_add_neon(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
    for (; i < n; i++) y[i] += x[i];
}

float ml_k_dot_f32_neon(const float *a, const float *b, int n) {
    const int n8 = n & ~7;
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (int i = 0; i < n8; i += 8) {
        lo = vaddq_f32(lo, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
        hi = vaddq_f32(hi, vmulq_f32(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4)));
    }
    float s = ml_arm_fold8(lo, hi);
    for (int i = n8; i < n; i++) s += a[i] * b[i];
    return s;
}

void ml_k_axpy_f32_neon(float *y, float a, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_n_f32(vld1q_f32(x + i), a)));
    for (; i < n; i++) y[i] += a * x[i];
}
#endif
