/* Attention over a block of keys for a group of query heads, neon, in the
 * canonical order (kernels/canon.h rules 2, 6 and A1-A2): bit-identical to
 * the scalar twin. Scores take 4 keys at a time, each key's 8 lanes in two
 * registers, the 4 sums folded together through a 4x4 transpose (not
 * vaddvq, which adds neighbours first); values keep a chunk of an output in
 * registers over a block of keys. AArch64 only (kernels_neon.h). */
#include "config/ml_kernels.h"
#include "kernels/canon.h"
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include "kernels/arm/arm_vec.h"

void ml_k_attn_scores_neon(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    const int h8 = hd & ~7;
    const float32x4_t sc = vdupq_n_f32(scale);
    int t = 0;
    for (; t + 4 <= n; t += 4) {
        const float *kt = k + (size_t)t * (size_t)ldk;
        for (int g = 0; g < G; g++) {
            const float *qg = q + (size_t)g * (size_t)ldq;
            float32x4_t lo[4], hi[4];
            for (int j = 0; j < 4; j++) lo[j] = hi[j] = vdupq_n_f32(0.0f);
            for (int i = 0; i < h8; i += 8) {
                const float32x4_t q0 = vld1q_f32(qg + i), q1 = vld1q_f32(qg + i + 4);
                for (int j = 0; j < 4; j++) {
                    const float *kj = kt + (size_t)j * (size_t)ldk + i;
                    lo[j] = vaddq_f32(lo[j], vmulq_f32(q0, vld1q_f32(kj)));
                    hi[j] = vaddq_f32(hi[j], vmulq_f32(q1, vld1q_f32(kj + 4)));
                }
            }
            /* x = l0+l4, l1+l5, l2+l6, l3+l7 per key; transposed, each key's
             * (x0 + x2) + (x1 + x3) lands in its lane */
            const float32x4_t x0 = vaddq_f32(lo[0], hi[0]), x1 = vaddq_f32(lo[1], hi[1]);
            const float32x4_t x2 = vaddq_f32(lo[2], hi[2]), x3 = vaddq_f32(lo[3], hi[3]);
            const float32x4_t a = vtrn1q_f32(x0, x1), b = vtrn2q_f32(x0, x1);
            const float32x4_t c = vtrn1q_f32(x2, x3), d = vtrn2q_f32(x2, x3);
            const float32x4_t e0 = vcombine_f32(vget_low_f32(a), vget_low_f32(c));
            const float32x4_t e1 = vcombine_f32(vget_low_f32(b), vget_low_f32(d));
            const float32x4_t e2 = vcombine_f32(vget_high_f32(a), vget_high_f32(c));
            const float32x4_t e3 = vcombine_f32(vget_high_f32(b), vget_high_f32(d));
            float32x4_t sum = vaddq_f32(vaddq_f32(e0, e2), vaddq_f32(e1, e3));
            float *sg = s + (size_t)g * (size_t)lds + (size_t)t;
            if (h8 < hd) { /* the tail, element by element after the fold */
                float f[4];
                vst1q_f32(f, sum);
                ml_canon_dot_tails(f, 4, qg, kt, (size_t)ldk, h8, hd);
                sum = vld1q_f32(f);
            }
            vst1q_f32(sg, vdivq_f32(sum, sc));
        }
    }
    for (; t < n; t++) /* the last n % 4 keys one by one */
        for (int g = 0; g < G; g++)
            s[(size_t)g * (size_t)lds + (size_t)t] =
                ml_k_dot_f32_neon(q + (size_t)g * (size_t)ldq, k + (size_t)t * (size_t)ldk, hd) / scale;
}

/* Keys per block of the value sums: 16 rows of a head of 128 are 8 KiB. */
#define VBLOCK 16

void ml_k_attn_values_neon(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    const int h4 = hd & ~3;
    for (int t0 = 0; t0 < n; t0 += VBLOCK) {
        const int nb = n - t0 < VBLOCK ? n - t0 : VBLOCK;
        const float *vb = v + (size_t)t0 * (size_t)ldv;
        for (int g = 0; g < G; g++) {
            float *og = o + (size_t)g * (size_t)ldo;
            const float *pg = p + (size_t)g * (size_t)ldp + (size_t)t0;
            int i = 0;
            for (; i + 8 <= h4; i += 8) {
                float32x4_t a0 = vld1q_f32(og + i), a1 = vld1q_f32(og + i + 4);
                for (int j = 0; j < nb; j++) {
                    const float *vj = vb + (size_t)j * (size_t)ldv + i;
                    a0 = vaddq_f32(a0, vmulq_n_f32(vld1q_f32(vj), pg[j]));
                    a1 = vaddq_f32(a1, vmulq_n_f32(vld1q_f32(vj + 4), pg[j]));
                }
                vst1q_f32(og + i, a0);
                vst1q_f32(og + i + 4, a1);
            }
            for (; i < h4; i += 4) {
                float32x4_t a0 = vld1q_f32(og + i);
                for (int j = 0; j < nb; j++) a0 = vaddq_f32(a0, vmulq_n_f32(vld1q_f32(vb + (size_t)j * (size_t)ldv + i), pg[j]));
                vst1q_f32(og + i, a0);
            }
            ml_canon_values_tail(og, pg, vb, (size_t)ldv, nb, i, hd);
        }
    }
}
#endif
