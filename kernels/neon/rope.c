/* RoPE on interleaved pairs, neon: vld2q splits 4 pairs into their first
 * and second elements, then exactly the scalar twin's v0*c - v1*s and
 * v0*s + v1*c: bit-identical. The cos/sin vectors depend only on the pair
 * index, so the loop runs over pair chunks outside and heads inside; the
 * pairs past the last chunk go one by one (ml_canon_rope_pair).
 * AArch64 only (kernels_neon.h). */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_vec.h"
#include "kernels/canon.h"

static void rope_heads(float *v, const float *cos_t, const float *sin_t, int head_dim, int heads) {
    const int half = head_dim / 2;
    const size_t hd = (size_t)head_dim;
    int i = 0;
    for (; i + 4 <= half; i += 4) {
        const float32x4_t c = vld1q_f32(cos_t + i), s = vld1q_f32(sin_t + i);
        for (int h = 0; h < heads; h++) {
            float *p = v + (size_t)h * hd + 2 * (size_t)i;
            const float32x4x2_t x = vld2q_f32(p);
            float32x4x2_t o;
            o.val[0] = vsubq_f32(vmulq_f32(x.val[0], c), vmulq_f32(x.val[1], s));
            o.val[1] = vaddq_f32(vmulq_f32(x.val[0], s), vmulq_f32(x.val[1], c));
            vst2q_f32(p, o);
        }
    }
    for (; i < half; i++)
        for (int h = 0; h < heads; h++) ml_canon_rope_pair(v + (size_t)h * hd + 2 * (size_t)i, cos_t[i], sin_t[i]);
}

void ml_k_rope_neon(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                    int n_kv_heads) {
    rope_heads(q, cos_t, sin_t, head_dim, n_heads);
    if (k) rope_heads(k, cos_t, sin_t, head_dim, n_kv_heads);
}
#endif
