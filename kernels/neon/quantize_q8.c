/* FP32 -> Q8_0, neon (ARMv7 and AArch64), bit-identical to the scalar twin:
 * the same float operations per element (x * id, + copysign(0.5, x)), the
 * same clamp before the truncating conversion (NaN -> -127), and a max that
 * skips NaN like the scalar's `a > amax` (arm_vec.h). d and id are the
 * scalar's two IEEE divisions. One block of 32 in 8 registers.
 * ARMv7 NEON flushes denormals, yet this is exact there too (kernels/canon.h
 * ARM rule 5): a denormal |x| never decides amax (a block whose amax is below
 * ML_Q8_AMAX_MIN is all zero; otherwise amax is normal and a flushed lane
 * only loses to it), and where x or x * id is denormal, |x * id| < 2^-126
 * and x * id + copysign(0.5, x) is +-0.5 either way: q = 0. */
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/arm/arm_vec.h"

void ml_k_quantize_q8_neon(ml_qact *out, const float *x, int k) {
    const uint32x4_t sign = vdupq_n_u32(0x80000000u);
    const float32x4_t half = vdupq_n_f32(0.5f);
    for (int b = 0; b < k / ML_QK; b++) {
        const float *xb = x + (size_t)b * ML_QK;
        int8_t *qb = out->q + (size_t)b * ML_QK;
        float32x4_t v[8], m = vdupq_n_f32(0.0f);
        ML_UNROLL for (int j = 0; j < 8; j++) {
            v[j] = vld1q_f32(xb + 4 * j);
            m = ml_arm_max_num(vabsq_f32(v[j]), m);
        }
        const float amax = ml_arm_hmax(m);
        if (!(amax >= ML_Q8_AMAX_MIN)) {
            out->d[b] = 0.0f;
            vst1q_s8(qb, vdupq_n_s8(0));
            vst1q_s8(qb + 16, vdupq_n_s8(0));
            continue;
        }
        const float32x4_t id = vdupq_n_f32(127.0f / amax);
        out->d[b] = amax / 127.0f;
        int16x8_t h[4];
        ML_UNROLL for (int j = 0; j < 4; j++) {
            int32x4_t q[2];
            ML_UNROLL for (int l = 0; l < 2; l++) {
                const float32x4_t e = v[2 * j + l];
                q[l] = ml_arm_clamp_cvt_q8(vaddq_f32(vmulq_f32(e, id), vbslq_f32(sign, e, half)));
            }
            h[j] = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
        }
        vst1q_s8(qb, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
        vst1q_s8(qb + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
    }
}
