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
#include "core/tensor.h"
#include "kernels/kernel_util.h"

/* ---- integers (bit-exact on both: NEON integer math is plain) ----------- */

/* Tokens per tile of the matmul body (kernels/arm/matmul_body.h), whose
 * 4-row sums stay in registers over a row's blocks. AArch64 (32 q
 * registers): 12 sums, a block's 8 weight vectors and the token in flight
 * fit (12 measured 4% below 8, 16 no better). ARMv7 (16 q registers; the
 * sums are VFP floats in s0..s31, which alias q0..q7): 4 (2 measured +2%). */
#ifdef __aarch64__
#define ML_ARM_MM_TOKENS 12
#else
#define ML_ARM_MM_TOKENS 4
#endif

/* The weight type a matvec / matmul body is instantiated for. */
enum { ML_ARM_Q8, ML_ARM_Q4 };

/* Bytes of one weight block of that type. */
ML_INLINE size_t ml_arm_wbytes(int kind) { return kind == ML_ARM_Q4 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES; }

/* 4 consecutive rows from the one whose quants are at wq and scales at wd
 * (rows wstride bytes and nb blocks apart; scales of type st, so d[i] are
 * byte pointers): each row's quants and scales. With nr = 1 the three rows
 * past it repeat it (a row tail: their lanes are computed and ignored, and
 * nothing past the row is read). */
ML_INLINE void ml_arm_rows4(const int8_t **w, const char **d, const int8_t *wq, size_t wstride, const void *wd,
                            int nb, int nr, ml_type st) {
    const size_t ws = nr == 4 ? wstride : 0, ds = nr == 4 ? (size_t)nb * (size_t)ml_scale_bytes(st) : 0;
    w[0] = wq, w[1] = wq + ws, w[2] = wq + 2 * ws, w[3] = wq + 3 * ws;
    d[0] = (const char *)wd, d[1] = d[0] + ds, d[2] = d[0] + 2 * ds, d[3] = d[0] + 3 * ds;
}

/* The scale pointers d[i] moved on by n blocks of scales of type st. */
ML_INLINE void ml_arm_scales_skip(const char **d, int n, ml_type st) {
    ML_UNROLL for (int i = 0; i < 4; i++) d[i] += (size_t)n * (size_t)ml_scale_bytes(st);
}

/* Q4_0 (byte j: element j in the low nibble, 16 + j in the high one, each
 * stored as value + 8): t = byte ^ 0x88 turns each nibble into its value's
 * 4-bit two's complement, so t << 4 and t & 0xF0 are the int8s 16 * value
 * of elements j and 16 + j (ml_arm_q4_lo16, ml_arm_q4_hi16): the nibbles
 * unpacked, offset removed, in one instruction per half plus the shared
 * xor; an arithmetic shift right by 4 then gives the values themselves. */
ML_INLINE uint8x16_t ml_arm_q4_x88(uint8x16_t bytes) { return veorq_u8(bytes, vdupq_n_u8(0x88)); }
ML_INLINE int8x16_t ml_arm_q4_lo16(uint8x16_t t) { return vreinterpretq_s8_u8(vshlq_n_u8(t, 4)); }
ML_INLINE int8x16_t ml_arm_q4_hi16(uint8x16_t t) { return vreinterpretq_s8_u8(vandq_u8(t, vdupq_n_u8(0xF0))); }

/* One block of int8 activations: elements 0..15 and 16..31. */
typedef struct {
    int8x16_t x0, x1;
} ml_arm_x;

/* 32 bytes as two int8x16 (not vld1q_s8_x2: gcc 12 copies its register
 * pair around, +20% instructions in matvec). */
ML_INLINE ml_arm_x ml_arm_ld32(const int8_t *p) { return (ml_arm_x){vld1q_s8(p), vld1q_s8(p + 16)}; }

/* ml_arm_padd_s32 / _s16(a, b) = [a0+a1, a2+a3, .., b0+b1, b2+b3, ..]:
 * pairwise add of two q vectors (ARMv7 has it on d halves only). */
#ifdef __aarch64__
#define ML_ARM_PADD(s, qt) \
    ML_INLINE qt ml_arm_padd_##s(qt a, qt b) { return vpaddq_##s(a, b); }
#else
#define ML_ARM_PADD(s, qt)                                                                                 \
    ML_INLINE qt ml_arm_padd_##s(qt a, qt b) {                                                             \
        return vcombine_##s(vpadd_##s(vget_low_##s(a), vget_high_##s(a)), vpadd_##s(vget_low_##s(b), vget_high_##s(b))); \
    }
#endif
ML_ARM_PADD(s32, int32x4_t)
ML_ARM_PADD(s16, int16x8_t)

/* p + (high 8 lanes of a) * (high 8 lanes of b), widened: one SMLAL2 on
 * AArch64 (gcc otherwise moves each high half out with a DUP first) */
ML_INLINE int16x8_t ml_arm_mlal_hi_s8(int16x8_t p, int8x16_t a, int8x16_t b) {
#ifdef __aarch64__
    return vmlal_high_s8(p, a, b);
#else
    return vmlal_s8(p, vget_high_s8(a), vget_high_s8(b));
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

/* t[k] = [word k of a[0], .., word k of a[3]]: a 4x4 transpose of 32-bit
 * lanes (trn of lanes, then zip of lane pairs). */
ML_INLINE void ml_arm_tr4(uint32x4_t *t, const uint32x4_t *a) {
    const uint64x2_t t0 = vreinterpretq_u64_u32(vtrn1q_u32(a[0], a[1])), t1 = vreinterpretq_u64_u32(vtrn2q_u32(a[0], a[1]));
    const uint64x2_t t2 = vreinterpretq_u64_u32(vtrn1q_u32(a[2], a[3])), t3 = vreinterpretq_u64_u32(vtrn2q_u32(a[2], a[3]));
    t[0] = vreinterpretq_u32_u64(vzip1q_u64(t0, t2));
    t[1] = vreinterpretq_u32_u64(vzip1q_u64(t1, t3));
    t[2] = vreinterpretq_u32_u64(vzip2q_u64(t0, t2));
    t[3] = vreinterpretq_u32_u64(vzip2q_u64(t1, t3));
}

/* [*d[0], *d[1], *d[2], *d[3]]: one block's scales of 4 rows; fp16 (st)
 * converted exactly by fcvtl (vcvt_f32_f16: AArch64 is IEEE, FPCR.FZ = 0) */
ML_INLINE ml_arm_f4 ml_arm_dw(const char *const *d, ml_type st) {
    if (st == ML_TYPE_F16) {
        uint16x4_t h = vld1_dup_u16((const uint16_t *)(const void *)d[0]);
        h = vld1_lane_u16((const uint16_t *)(const void *)d[1], h, 1);
        h = vld1_lane_u16((const uint16_t *)(const void *)d[2], h, 2);
        h = vld1_lane_u16((const uint16_t *)(const void *)d[3], h, 3);
        return vcvt_f32_f16(vreinterpret_f16_u16(h));
    }
    float32x4_t v = vld1q_dup_f32((const float *)(const void *)d[0]);
    v = vld1q_lane_f32((const float *)(const void *)d[1], v, 1);
    v = vld1q_lane_f32((const float *)(const void *)d[2], v, 2);
    return vld1q_lane_f32((const float *)(const void *)d[3], v, 3);
}

/* 4 consecutive scales of type st at p, as floats (fcvtl for fp16) */
ML_INLINE uint32x4_t ml_arm_ld4s(const char *p, ml_type st) {
    if (st == ML_TYPE_F16) return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p))));
    return vreinterpretq_u32_f32(vld1q_f32((const float *)(const void *)p));
}

/* dw * dx: the 4 rows' block scales times the activations' */
ML_INLINE ml_arm_f4 ml_arm_f4_scale(ml_arm_f4 dw, float dx) { return vmulq_n_f32(dw, dx); }

/* s[j] = [d[0][j], .., d[3][j]] * xd[j], 4 blocks: the 4 rows' scale
 * vectors transposed. */
ML_INLINE void ml_arm_scales4(ml_arm_f4 *s, const char *const *d, const float *xd, ml_type st) {
    uint32x4_t t[4];
    const uint32x4_t r[4] = {ml_arm_ld4s(d[0], st), ml_arm_ld4s(d[1], st), ml_arm_ld4s(d[2], st), ml_arm_ld4s(d[3], st)};
    ml_arm_tr4(t, r);
    const float32x4_t x = vld1q_f32(xd);
    s[0] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[0]), x, 0);
    s[1] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[1]), x, 1);
    s[2] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[2]), x, 2);
    s[3] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[3]), x, 3);
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

/* fp16 scales by the integer conversion (ml_scale_at): ARMv7 NEON has no
 * IEEE fp16 conversion (and would flush), and the scale math here is VFP */
ML_INLINE ml_arm_f4 ml_arm_dw(const char *const *d, ml_type st) {
    return (ml_arm_f4){{ml_scale_at(d[0], 0, st), ml_scale_at(d[1], 0, st), ml_scale_at(d[2], 0, st), ml_scale_at(d[3], 0, st)}};
}

ML_INLINE ml_arm_f4 ml_arm_f4_scale(ml_arm_f4 dw, float dx) {
    return (ml_arm_f4){{dw.v[0] * dx, dw.v[1] * dx, dw.v[2] * dx, dw.v[3] * dx}};
}

ML_INLINE void ml_arm_scales4(ml_arm_f4 *s, const char *const *d, const float *xd, ml_type st) {
    ML_UNROLL for (int j = 0; j < 4; j++)
        s[j] = (ml_arm_f4){{ml_scale_at(d[0], (size_t)j, st) * xd[j], ml_scale_at(d[1], (size_t)j, st) * xd[j],
                            ml_scale_at(d[2], (size_t)j, st) * xd[j], ml_scale_at(d[3], (size_t)j, st) * xd[j]}};
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

/* dw * dx for one block of 4 rows */
ML_INLINE ml_arm_f4 ml_arm_scales(const char *const *d, float dx, ml_type st) {
    return ml_arm_f4_scale(ml_arm_dw(d, st), dx);
}

#endif
