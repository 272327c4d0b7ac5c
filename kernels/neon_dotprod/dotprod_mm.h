/* The neon_dotprod build's primitives on one weight block of 4 rows for the
 * shared matmul body (kernels/arm/matmul_body.h): the block transposed so
 * that each 32-bit lane holds one row, then indexed sdot. vdotq_laneq_s32
 * adds to lane i the dot of lane i's 4 bytes with one 4-byte word of the
 * activations, so with v[k] = [word k of rows 0..3] the 8 sdots of a token
 * leave [sumi of rows 0..3] in one vector: no reduction per token. The
 * transpose (ml_arm_tr4, 8 instructions per 16 bytes of 4 rows) is paid
 * once per block for the whole tile of tokens.
 * Q4_0: the raw nibble bytes are transposed, then unpacked to 16 * value
 * (arm_vec.h), and the conversion divides 16 * sumi by 16 exactly. */
#ifndef ML_DOTPROD_MM_H
#define ML_DOTPROD_MM_H

#include "kernels/arm/arm_vec.h"

/* v[k] = word k (bytes 4k..4k+3) of the 4 rows' 32 int8s, k = 0..7 */
typedef struct {
    int8x16_t v[8];
} ml_arm_w4;

/* t[k] = word k of the 16 bytes at each of p[0..3] */
ML_INLINE void ml_arm_w4_tr16(uint32x4_t *t, const int8_t *const *p) {
    uint32x4_t a[4];
    ML_UNROLL for (int i = 0; i < 4; i++) a[i] = vreinterpretq_u32_s8(vld1q_s8(p[i]));
    ml_arm_tr4(t, a);
}

ML_INLINE void ml_arm_w4_prep(ml_arm_w4 *wb, const int8_t *const *w, int kind) {
    uint32x4_t t[4];
    ml_arm_w4_tr16(t, w);
    if (kind == ML_ARM_Q4) {
        ML_UNROLL for (int k = 0; k < 4; k++) {
            const uint8x16_t u = ml_arm_q4_x88(vreinterpretq_u8_u32(t[k]));
            wb->v[k] = ml_arm_q4_lo16(u);
            wb->v[4 + k] = ml_arm_q4_hi16(u);
        }
        return;
    }
    const int8_t *const hi[4] = {w[0] + 16, w[1] + 16, w[2] + 16, w[3] + 16};
    ML_UNROLL for (int k = 0; k < 4; k++) wb->v[k] = vreinterpretq_s8_u32(t[k]);
    ml_arm_w4_tr16(t, hi);
    ML_UNROLL for (int k = 0; k < 4; k++) wb->v[4 + k] = vreinterpretq_s8_u32(t[k]);
}

ML_INLINE float32x4_t ml_arm_w4_dot(const ml_arm_w4 *wb, const ml_arm_x *xs, int kind) {
    int32x4_t acc = vdupq_n_s32(0);
    acc = vdotq_laneq_s32(acc, wb->v[0], xs->x0, 0);
    acc = vdotq_laneq_s32(acc, wb->v[1], xs->x0, 1);
    acc = vdotq_laneq_s32(acc, wb->v[2], xs->x0, 2);
    acc = vdotq_laneq_s32(acc, wb->v[3], xs->x0, 3);
    acc = vdotq_laneq_s32(acc, wb->v[4], xs->x1, 0);
    acc = vdotq_laneq_s32(acc, wb->v[5], xs->x1, 1);
    acc = vdotq_laneq_s32(acc, wb->v[6], xs->x1, 2);
    acc = vdotq_laneq_s32(acc, wb->v[7], xs->x1, 3);
    return kind == ML_ARM_Q4 ? vcvtq_n_f32_s32(acc, 4) : vcvtq_f32_s32(acc);
}

#endif
