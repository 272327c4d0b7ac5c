/* o = w * (x / sqrt(mean(x^2) + eps)), neon: the sum of squares in the
 * canonical 8-lane order (kernels/canon.h), then the scalar twin's
 * per-element formula: bit-identical; o may alias x. AArch64 only
 * (kernels_neon.h). */
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_vec.h"

void ml_k_rmsnorm_neon(float *o, const float *x, const float *w, int n, float eps) {
    const int n8 = n & ~7;
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (int i = 0; i < n8; i += 8) {
        const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
        lo = vaddq_f32(lo, vmulq_f32(a, a));
        hi = vaddq_f32(hi, vmulq_f32(b, b));
    }
    float ss = ml_arm_fold8(lo, hi);
    for (int i = n8; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(o + i, vmulq_f32(vld1q_f32(w + i), vmulq_n_f32(vld1q_f32(x + i), ss)));
    for (; i < n; i++) o[i] = w[i] * (ss * x[i]);
}
#endif
