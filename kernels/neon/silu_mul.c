/* g = g / (1 + exp(-g)) * u, neon, with the canonical exp (arm_exp.h; the
 * n % 4 tail by its scalar form) and the scalar twin's operation order:
 * bit-identical to it. Very negative g: exp(-g) is +inf and g / inf = -0.
 * AArch64 only (kernels_neon.h). */
#include "config/ml_kernels.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_exp.h"

void ml_k_silu_mul_neon(float *g, const float *u, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(g + i);
        const float32x4_t e = ml_arm_exp(vnegq_f32(v));
        vst1q_f32(g + i, vmulq_f32(vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), e)), vld1q_f32(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + ml_canon_expf(-g[i])) * u[i];
}
#endif
