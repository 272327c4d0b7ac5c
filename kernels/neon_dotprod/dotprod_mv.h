/* The neon_dotprod build's matvec (Q8_0 and Q4_0, fp32 or fp16 block
 * scales): the shape of the shared ARM body (kernels/arm/matvec_body.h,
 * which the neon build keeps) with three changes that cut the instructions
 * per 4-row block (docs/ARM.md, "Instructions per token"):
 *  - 8 rows per step (two 4-row quads) share each activation load, the
 *    activations' scales and the loop and set-up work;
 *  - Q4_0 as its raw nibbles n in [0, 15]: `and 0x0F` and `ushr 4`, one
 *    instruction a half and no xor; the value is n - 8, so a block's dot
 *    is sum(n * x) - 8 * sum(x), and the offset term 8 * sum(x) of each
 *    activation block is computed once per call for all rows (a stack
 *    array of ML_DP_CHUNK blocks; longer rows go chunk by chunk, their
 *    float sums carried in y: stores and loads are exact and the order of
 *    kernels/canon.h rule 5 is unchanged);
 *  - the row pointers advance block by block (post-incremented loads).
 * Float order as the shared body (rule 5): rows in the float lanes, each
 * row accumulating sequentially over its blocks, sum += (float)sumi *
 * (dw * dx), separate multiply and add; each row keeps one int32x4
 * accumulator and a block's sums are the difference of two running totals
 * (int32 lanes add modulo 2^32: exact). |sum(n * x)| <= 32 * 15 * 127 and
 * |8 * sum(x)| <= 8 * 32 * 127: int32, exact as floats.
 * The loops over rows and quads run to the constants 8 and 2 with the
 * count q tested inside: with the bound 4 * q (a constant only after
 * inlining) clang 14 kept the accumulator arrays in memory (6.79 M against
 * 4.65 M instructions per stories15M token for Q8_0). */
#ifndef ML_DOTPROD_MV_H
#define ML_DOTPROD_MV_H

#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/arm/arm_vec.h"

/* Activation blocks per chunk: ML_DP_CHUNK int32x4 offsets (2 KiB of stack) */
#define ML_DP_CHUNK 128

/* Keep p in a register as computed, so the 8 rows' loads address wq + wo[i]
 * (register offsets) with one pointer stepped: gcc otherwise splits them
 * into 8 pointers, each stepped every 4 blocks and set up again for every
 * group of rows (kernels/avx512vnni does the same). Q4_0 only: Q4_0 5.38 ->
 * 5.21 M instructions per stories15M token, but Q8_0 4.60 -> 5.06 M. */
#if defined(__GNUC__) || defined(__clang__)
#define ML_DP_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define ML_DP_OPAQUE(p) ((void)0)
#endif

/* off[b] = 8 * (sum of activation block b's 32 int8s) in every lane, b < n */
ML_INLINE void ml_dp_offsets(int32x4_t *off, const int8_t *xq, int n) {
    for (int b = 0; b < n; b++, xq += ML_QK) {
        const int16x8_t s = vpadalq_s8(vpaddlq_s8(vld1q_s8(xq)), vld1q_s8(xq + 16));
        off[b] = vdupq_n_s32(8 * vaddlvq_s16(s));
    }
}

/* acc += the block dot of the row whose block is at w: Q8_0 two int8x16,
 * Q4_0 one uint8x16 of nibble pairs (without the offset term) */
ML_INLINE int32x4_t ml_dp_dot(int32x4_t acc, const int8_t *w, int8x16_t x0, int8x16_t x1, int kind) {
    if (kind == ML_ARM_Q4) {
        const uint8x16_t t = vld1q_u8((const uint8_t *)w);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(t, vdupq_n_u8(0x0F)));
        return vdotq_s32(vdotq_s32(acc, lo, x0), vreinterpretq_s8_u8(vshrq_n_u8(t, 4)), x1);
    }
    return vdotq_s32(vdotq_s32(acc, vld1q_s8(w), x0), vld1q_s8(w + 16), x1);
}

/* One block of 4q rows (q quads, 1 or 2): acc[i] += the block dot of row
 * i, whose block is at w + wo[i]; sumi[g] = quad g's [sumi rows 0..3]
 * (Q4_0: the offset term off subtracted), prev[g] its running totals. */
ML_INLINE void ml_dp_block(int32x4_t *sumi, int32x4_t *acc, int32x4_t *prev, const int8_t *w, const size_t *wo,
                           const int8_t *xq, const int32x4_t *off, int q, int kind) {
    const int8x16_t x0 = vld1q_s8(xq), x1 = vld1q_s8(xq + 16);
    ML_UNROLL for (int i = 0; i < 8; i++) if (i < 4 * q) acc[i] = ml_dp_dot(acc[i], w + wo[i], x0, x1, kind);
    ML_UNROLL for (int g = 0; g < 2; g++) if (g < q) {
        const int32x4_t total = ml_arm_reduce4(acc + 4 * g);
        sumi[g] = vsubq_s32(total, prev[g]);
        prev[g] = total;
        if (kind == ML_ARM_Q4) sumi[g] = vsubq_s32(sumi[g], *off);
    }
}

/* s[k] = [d[0][k], .., d[3][k]] * xs[k], k = 0..3: 4 blocks' scales of 4
 * rows (row i's at d + o[i]), transposed (one 4x4 transpose) */
ML_INLINE void ml_dp_scales4(float32x4_t *s, const char *d, const size_t *o, float32x4_t xs, ml_type st) {
    uint32x4_t t[4];
    const uint32x4_t r[4] = {ml_arm_ld4s(d + o[0], st), ml_arm_ld4s(d + o[1], st), ml_arm_ld4s(d + o[2], st),
                             ml_arm_ld4s(d + o[3], st)};
    ml_arm_tr4(t, r);
    s[0] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[0]), xs, 0);
    s[1] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[1]), xs, 1);
    s[2] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[2]), xs, 2);
    s[3] = vmulq_laneq_f32(vreinterpretq_f32_u32(t[3]), xs, 3);
}

/* y[0 .. 4q-1] (q quads) = rows . x over blocks [0, nb) of a chunk, plus
 * y's own values unless first: row i's quants at wq + wo[i], its scales at
 * wd + dofs[i]; the chunk's activations at xq, xd, its offsets at off. A
 * row tail (rep) is one row with wo, dofs all 0 (its lanes repeated): y[0]
 * only. */
ML_INLINE void ml_dp_rows(float *y, const int8_t *wq, const size_t *wo, const char *wd, const size_t *dofs,
                          const int8_t *xq, const float *xd, const int32x4_t *off, int nb, int first, int q, int rep,
                          int kind, ml_type st) {
    int32x4_t acc[8], prev[2], sumi[2];
    float32x4_t sum[2];
    ML_UNROLL for (int i = 0; i < 8; i++) if (i < 4 * q) acc[i] = vdupq_n_s32(0);
    ML_UNROLL for (int g = 0; g < 2; g++) if (g < q) {
        prev[g] = vdupq_n_s32(0);
        sum[g] = first ? vdupq_n_f32(0.0f) : rep ? vsetq_lane_f32(y[0], vdupq_n_f32(0.0f), 0) : vld1q_f32(y + 4 * g);
    }
    const size_t sb = (size_t)ml_scale_bytes(st);
    int b = 0;
    for (; b + 4 <= nb; b += 4, xq += 4 * ML_QK, xd += 4, off += 4) {
        const float32x4_t xs = vld1q_f32(xd);
        float32x4_t s[2][4];
        ML_UNROLL for (int g = 0; g < 2; g++) if (g < q) ml_dp_scales4(s[g], wd, dofs + 4 * g, xs, st);
        wd += 4 * sb;
        ML_UNROLL for (int k = 0; k < 4; k++) {
            ml_dp_block(sumi, acc, prev, wq, wo, xq + k * ML_QK, off + k, q, kind);
            wq += ml_arm_wbytes(kind);
            if (kind == ML_ARM_Q4) ML_DP_OPAQUE(wq);
            ML_UNROLL for (int g = 0; g < 2; g++) if (g < q)
                sum[g] = vaddq_f32(sum[g], vmulq_f32(vcvtq_f32_s32(sumi[g]), s[g][k]));
        }
    }
    for (; b < nb; b++, xq += ML_QK, xd++, off++) {
        ml_dp_block(sumi, acc, prev, wq, wo, xq, off, q, kind);
        wq += ml_arm_wbytes(kind);
        ML_UNROLL for (int g = 0; g < 2; g++) if (g < q) {
            const char *d[4];
            ML_UNROLL for (int i = 0; i < 4; i++) d[i] = wd + dofs[4 * g + i];
            const float32x4_t s = vmulq_n_f32(ml_arm_dw(d, st), *xd);
            sum[g] = vaddq_f32(sum[g], vmulq_f32(vcvtq_f32_s32(sumi[g]), s));
        }
        wd += sb;
    }
    if (rep)
        y[0] = vgetq_lane_f32(sum[0], 0);
    else
        ML_UNROLL for (int g = 0; g < 2; g++) if (g < q) vst1q_f32(y + 4 * g, sum[g]);
}

/* y[r0..r1) = W x, weights of kind (ML_ARM_Q8, ML_ARM_Q4) with scales of
 * type st: rows 8 at a time, then 4, then one at a time */
ML_INLINE void ml_dp_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, int kind, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t ws = (size_t)nb * ml_arm_wbytes(kind), sb = (size_t)ml_scale_bytes(st), ds = (size_t)nb * sb;
    size_t wo[8], dofs[8];
    const size_t zero[8] = {0};
    for (int i = 0; i < 8; i++) wo[i] = (size_t)i * ws, dofs[i] = (size_t)i * ds;
    int32x4_t off[ML_DP_CHUNK];
    const int chunk = kind == ML_ARM_Q4 ? ML_DP_CHUNK : nb;
    for (int c = 0; c < nb; c += chunk) {
        const int n = nb - c < chunk ? nb - c : chunk;
        const int8_t *wq = W->q + (size_t)c * ml_arm_wbytes(kind), *xq = x->q + (size_t)c * ML_QK;
        const char *wd = (const char *)W->d + (size_t)c * sb;
        const float *xd = x->d + c;
        if (kind == ML_ARM_Q4) ml_dp_offsets(off, xq, n);
        int r = r0;
        for (; r + 8 <= r1; r += 8)
            ml_dp_rows(y + r, wq + (size_t)r * ws, wo, wd + (size_t)r * ds, dofs, xq, xd, off, n, c == 0, 2, 0, kind, st);
        for (; r + 4 <= r1; r += 4)
            ml_dp_rows(y + r, wq + (size_t)r * ws, wo, wd + (size_t)r * ds, dofs, xq, xd, off, n, c == 0, 1, 0, kind, st);
        for (; r < r1; r++)
            ml_dp_rows(y + r, wq + (size_t)r * ws, zero, wd + (size_t)r * ds, zero, xq, xd, off, n, c == 0, 1, 1, kind, st);
    }
}

#endif
