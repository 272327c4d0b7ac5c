/* The ARM pieces that differ between ARMv7 NEON and AArch64, each behind one
 * fixed name, so no kernel body carries an `#if __aarch64__` (STYLE rule 15).
 * Shared by kernels/neon/ and kernels/neon_dotprod/ (and free for
 * kernels/sve/). kernels/canon.h's ARM section says why each one is written
 * the way it is. */
#ifndef ML_ARM_VEC_H
#define ML_ARM_VEC_H

#include <arm_neon.h>
#include <stddef.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* ---- integers (bit-exact on both: NEON integer math is plain) ----------- */

/* One block of int8 activations: elements 0..15 and 16..31. */
typedef struct {
    int8x16_t x0, x1;
} ml_arm_x;

/* 32 bytes as two int8x16 (not vld1q_s8_x2: gcc 12 copies its register
 * pair around, +20% instructions in matvec). */
ML_INLINE ml_arm_x ml_arm_ld32(const int8_t *p) { return (ml_arm_x){vld1q_s8(p), vld1q_s8(p + 16)}; }

/* [a0+a1, a2+a3, b0+b1, b2+b3] */
ML_INLINE int32x4_t ml_arm_padd_s32(int32x4_t a, int32x4_t b) {
#ifdef __aarch64__
    return vpaddq_s32(a, b);
#else
    return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

/* [sum v[0], sum v[1], sum v[2], sum v[3]] */
ML_INLINE int32x4_t ml_arm_reduce4(const int32x4_t *v) {
    return ml_arm_padd_s32(ml_arm_padd_s32(v[0], v[1]), ml_arm_padd_s32(v[2], v[3]));
}

/* ---- float max and clamp, NaN as the scalar twin treats it --------------- */

/* a > m ? a : m for an m that is never NaN (a NaN a is skipped, like the
 * scalar `if (a > amax) amax = a`). AArch64: FMAXNM; ARMv7 has none. */
ML_INLINE float32x4_t ml_arm_max_num(float32x4_t a, float32x4_t m) {
#ifdef __aarch64__
    return vmaxnmq_f32(a, m);
#else
    return vbslq_f32(vcgtq_f32(a, m), a, m);
#endif
}

/* The largest lane (no NaN lanes: ml_arm_max_num's results). */
ML_INLINE float ml_arm_hmax(float32x4_t v) {
#ifdef __aarch64__
    return vmaxvq_f32(v);
#else
    float32x2_t m = vpmax_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(vpmax_f32(m, m), 0);
#endif
}

/* v >= 127 ? 127 : v > -127 ? v : -127, so NaN -> -127 as in the scalar
 * quantize; then the truncating conversion is exact. */
ML_INLINE int32x4_t ml_arm_clamp_cvt_q8(float32x4_t v) {
    const float32x4_t lo = vdupq_n_f32(-(float)ML_Q8_MAX), hi = vdupq_n_f32((float)ML_Q8_MAX);
    return vcvtq_s32_f32(vminq_f32(ml_arm_max_num(v, lo), hi));
}

/* The canonical 8-lane sum (kernels/canon.h rule 2) with lanes 0..3 in lo
 * and 4..7 in hi: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), folded
 * explicitly (vaddvq_f32 would add neighbours first). */
ML_INLINE float ml_arm_fold8(float32x4_t lo, float32x4_t hi) {
    const float32x4_t t = vaddq_f32(lo, hi);
    const float32x4_t u = vaddq_f32(t, vextq_f32(t, t, 2));
    return vgetq_lane_f32(u, 0) + vgetq_lane_f32(u, 1);
}

/* ---- matvec's float part: acc += (float)sumi * (dw * dx), lanes = rows ---
 * AArch64 NEON is IEEE: four rows per vector. ARMv7 NEON flushes denormals,
 * and dw * dx can be one (canon.h ARM rule 5): there the four rows are plain
 * floats, which gcc and clang keep in VFP on ARMv7. */
#ifdef __aarch64__
typedef float32x4_t ml_arm_f4;

ML_INLINE ml_arm_f4 ml_arm_f4_zero(void) { return vdupq_n_f32(0.0f); }

/* [*d[0], *d[1], *d[2], *d[3]] * dx: one block's scales for 4 rows */
ML_INLINE ml_arm_f4 ml_arm_scales(const float *const *d, float dx) {
    float32x4_t v = vld1q_dup_f32(d[0]);
    v = vld1q_lane_f32(d[1], v, 1);
    v = vld1q_lane_f32(d[2], v, 2);
    v = vld1q_lane_f32(d[3], v, 3);
    return vmulq_n_f32(v, dx);
}

/* s[j] = [d[0][j], .., d[3][j]] * xd[j], 4 blocks: the 4 rows' scale
 * vectors transposed (trn of lanes, then zip of lane pairs). */
ML_INLINE void ml_arm_scales4(ml_arm_f4 *s, const float *const *d, const float *xd) {
    const float32x4_t r0 = vld1q_f32(d[0]), r1 = vld1q_f32(d[1]), r2 = vld1q_f32(d[2]), r3 = vld1q_f32(d[3]);
    const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)), t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)), t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    const float32x4_t x = vld1q_f32(xd);
    s[0] = vmulq_laneq_f32(vreinterpretq_f32_f64(vzip1q_f64(t0, t2)), x, 0);
    s[1] = vmulq_laneq_f32(vreinterpretq_f32_f64(vzip1q_f64(t1, t3)), x, 1);
    s[2] = vmulq_laneq_f32(vreinterpretq_f32_f64(vzip2q_f64(t0, t2)), x, 2);
    s[3] = vmulq_laneq_f32(vreinterpretq_f32_f64(vzip2q_f64(t1, t3)), x, 3);
}

ML_INLINE ml_arm_f4 ml_arm_f4_madd(ml_arm_f4 acc, float32x4_t f, ml_arm_f4 s) {
    return vaddq_f32(acc, vmulq_f32(f, s));
}

/* y[0 .. nr-1] = the first nr lanes (nr 4 or 1) */
ML_INLINE void ml_arm_f4_store(float *y, ml_arm_f4 acc, int nr) {
    if (nr == 4)
        vst1q_f32(y, acc);
    else
        y[0] = vgetq_lane_f32(acc, 0);
}
#else
typedef struct {
    float v[4];
} ml_arm_f4;

ML_INLINE ml_arm_f4 ml_arm_f4_zero(void) { return (ml_arm_f4){{0.0f, 0.0f, 0.0f, 0.0f}}; }

ML_INLINE ml_arm_f4 ml_arm_scales(const float *const *d, float dx) {
    return (ml_arm_f4){{d[0][0] * dx, d[1][0] * dx, d[2][0] * dx, d[3][0] * dx}};
}

ML_INLINE void ml_arm_scales4(ml_arm_f4 *s, const float *const *d, const float *xd) {
    ML_UNROLL for (int j = 0; j < 4; j++) s[j] = (ml_arm_f4){{d[0][j] * xd[j], d[1][j] * xd[j], d[2][j] * xd[j], d[3][j] * xd[j]}};
}

/* f holds integers below 2^24 (exact in NEON too); the rest is VFP. */
ML_INLINE ml_arm_f4 ml_arm_f4_madd(ml_arm_f4 acc, float32x4_t f, ml_arm_f4 s) {
    acc.v[0] += vgetq_lane_f32(f, 0) * s.v[0];
    acc.v[1] += vgetq_lane_f32(f, 1) * s.v[1];
    acc.v[2] += vgetq_lane_f32(f, 2) * s.v[2];
    acc.v[3] += vgetq_lane_f32(f, 3) * s.v[3];
    return acc;
}

ML_INLINE void ml_arm_f4_store(float *y, ml_arm_f4 acc, int nr) {
    for (int i = 0; i < nr; i++) y[i] = acc.v[i];
}
#endif

#endif
