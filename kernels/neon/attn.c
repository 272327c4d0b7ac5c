/* Attention over a block of keys for a group of query heads, neon: the
 * shared body (kernels/attn_body.h) over 4-lane vectors, bit-identical to
 * the scalar twin (kernels/canon.h rules 2, 6 and A1-A2). A score tile is 4
 * keys, each key's 8 lanes in two registers, folded through a 4x4
 * transpose (not vaddvq, which adds neighbours first). AArch64 only
 * (kernels_neon.h: ARMv7 NEON flushes denormals). */
#include "kernels/neon/kernels_neon.h"

#if ML_NEON_IEEE
#include <arm_neon.h>

#include "kernels/kernel_util.h"

typedef float32x4_t ml_vf;

ML_INLINE float32x4_t ml_vf_load(const float *p) { return vld1q_f32(p); }
ML_INLINE void ml_vf_store(float *p, float32x4_t v) { vst1q_f32(p, v); }
ML_INLINE float32x4_t ml_vf_set1(float c) { return vdupq_n_f32(c); }

/* a[2j], a[2j+1]: key j's lanes 0..3 and 4..7. x = l0+l4, l1+l5, l2+l6,
 * l3+l7 per key; transposed (trn of lanes, then the halves combined), each
 * key's (x0 + x2) + (x1 + x3) lands in its lane. */
ML_INLINE float32x4_t ml_vf_fold_keys(const float32x4_t *a) {
    const float32x4_t x0 = vaddq_f32(a[0], a[1]), x1 = vaddq_f32(a[2], a[3]);
    const float32x4_t x2 = vaddq_f32(a[4], a[5]), x3 = vaddq_f32(a[6], a[7]);
    const float32x4_t t0 = vtrn1q_f32(x0, x1), t1 = vtrn2q_f32(x0, x1);
    const float32x4_t t2 = vtrn1q_f32(x2, x3), t3 = vtrn2q_f32(x2, x3);
    const float32x4_t e0 = vcombine_f32(vget_low_f32(t0), vget_low_f32(t2));
    const float32x4_t e1 = vcombine_f32(vget_low_f32(t1), vget_low_f32(t3));
    const float32x4_t e2 = vcombine_f32(vget_high_f32(t0), vget_high_f32(t2));
    const float32x4_t e3 = vcombine_f32(vget_high_f32(t1), vget_high_f32(t3));
    return vaddq_f32(vaddq_f32(e0, e2), vaddq_f32(e1, e3));
}

/* vmulq then vaddq, never vfmaq (rule A1) */
ML_INLINE float32x4_t ml_vf_madd(float32x4_t acc, float32x4_t a, float32x4_t b) { return vaddq_f32(acc, vmulq_f32(a, b)); }
ML_INLINE float32x4_t ml_vf_div(float32x4_t a, float32x4_t b) { return vdivq_f32(a, b); }

#include "kernels/attn_body.h"

void ml_k_attn_scores_neon(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    ml_attn_scores(s, lds, q, ldq, G, k, ldk, n, hd, scale);
}

void ml_k_attn_values_neon(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    ml_attn_values(o, ldo, p, ldp, G, v, ldv, n, hd);
}
#endif
