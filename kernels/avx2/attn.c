/* Attention over a block of keys for a group of query heads, AVX2: the
 * shared body (kernels/attn_body.h) over 8-lane vectors, bit-identical to
 * the scalar twin. A score tile is 8 keys, one register of 8 lane sums
 * each, folded together by one transposing fold. */
#include <immintrin.h>

#include "kernels/kernel_util.h"

typedef __m256 ml_vf;

ML_INLINE __m256 ml_vf_load(const float *p) { return _mm256_loadu_ps(p); }
ML_INLINE void ml_vf_store(float *p, __m256 v) { _mm256_storeu_ps(p, v); }
ML_INLINE __m256 ml_vf_set1(float c) { return _mm256_set1_ps(c); }

/* Rule 2's fold of 8 keys at once: lane j = fold8(a[j]). */
ML_INLINE __m256 ml_vf_fold_keys(const __m256 *a) {
    __m256 b[4], c[2];
    for (int j = 0; j < 4; j++) /* lanes l + l+4: a[2j] low half, a[2j+1] high */
        b[j] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x20),
                             _mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x31));
    for (int j = 0; j < 2; j++) /* (l0+l4)+(l2+l6), (l1+l5)+(l3+l7) */
        c[j] = _mm256_add_ps(_mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 d = _mm256_add_ps(_mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); /* keys 0 2 4 6 1 3 5 7 */
}

ML_INLINE __m256 ml_vf_madd(__m256 acc, __m256 a, __m256 b) { return _mm256_add_ps(acc, _mm256_mul_ps(a, b)); }
ML_INLINE __m256 ml_vf_div(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }

#include "kernels/attn_body.h"

void ml_k_attn_scores_avx2(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    ml_attn_scores(s, lds, q, ldq, G, k, ldk, n, hd, scale);
}

void ml_k_attn_values_avx2(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    ml_attn_values(o, ldo, p, ldp, G, v, ldv, n, hd);
}
