/* Attention over a block of keys for a group of query heads, SSE2: the
 * shared body (kernels/attn_body.h) over 4-lane vectors, bit-identical to
 * the scalar twin. A score tile is 4 keys, each key's 8 lanes in two
 * registers. */
#include <emmintrin.h>

#include "kernels/kernel_util.h"

typedef __m128 ml_vf;

ML_INLINE __m128 ml_vf_load(const float *p) { return _mm_loadu_ps(p); }
ML_INLINE void ml_vf_store(float *p, __m128 v) { _mm_storeu_ps(p, v); }
ML_INLINE __m128 ml_vf_set1(float c) { return _mm_set1_ps(c); }

/* a[2j], a[2j+1]: key j's lanes 0..3 and 4..7. x = l0+l4, l1+l5, l2+l6,
 * l3+l7 per key; transposed, each key's (x0 + x2) + (x1 + x3) lands in its
 * lane. */
ML_INLINE __m128 ml_vf_fold_keys(const __m128 *a) {
    __m128 x0 = _mm_add_ps(a[0], a[1]), x1 = _mm_add_ps(a[2], a[3]);
    __m128 x2 = _mm_add_ps(a[4], a[5]), x3 = _mm_add_ps(a[6], a[7]);
    _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
    return _mm_add_ps(_mm_add_ps(x0, x2), _mm_add_ps(x1, x3));
}

ML_INLINE __m128 ml_vf_madd(__m128 acc, __m128 a, __m128 b) { return _mm_add_ps(acc, _mm_mul_ps(a, b)); }
ML_INLINE __m128 ml_vf_div(__m128 a, __m128 b) { return _mm_div_ps(a, b); }

#include "kernels/attn_body.h"

void ml_k_attn_scores_sse2(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    ml_attn_scores(s, lds, q, ldq, G, k, ldk, n, hd, scale);
}

void ml_k_attn_values_sse2(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    ml_attn_values(o, ldo, p, ldp, G, v, ldv, n, hd);
}
