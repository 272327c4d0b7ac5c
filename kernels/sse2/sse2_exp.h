/* expf for 4 lanes, SSE2: ml_canon_expf (kernels/canon.h) lane by lane, the
 * same IEEE operations in the same order, so bit-identical to the scalar
 * twin (the avx2 and avx512vnni versions are too). */
#ifndef ML_SSE2_EXP_H
#define ML_SSE2_EXP_H

#include <emmintrin.h>

#include "kernels/canon.h"
#include "kernels/x86/x86_common.h"

ML_INLINE __m128 ml_sse2_exp(__m128 x) {
    x = _mm_min_ps(_mm_max_ps(x, _mm_set1_ps(ML_EXP_X_MIN)), _mm_set1_ps(ML_EXP_X_MAX));
    const __m128 round = _mm_set1_ps(ML_EXP_ROUND);
    const __m128 nf = _mm_sub_ps(_mm_add_ps(_mm_mul_ps(x, _mm_set1_ps(ML_EXP_LOG2E)), round), round);
    const __m128i n = _mm_cvttps_epi32(nf); /* exact: nf is an integer */
    __m128 r = _mm_sub_ps(x, _mm_mul_ps(nf, _mm_set1_ps(ML_EXP_LN2_HI)));
    r = _mm_sub_ps(r, _mm_mul_ps(nf, _mm_set1_ps(ML_EXP_LN2_LO)));
    __m128 p = _mm_set1_ps(ML_EXP_P5);
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(ML_EXP_P4));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(ML_EXP_P3));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(ML_EXP_P2));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(ML_EXP_P1));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(ML_EXP_P0));
    p = _mm_add_ps(_mm_add_ps(_mm_mul_ps(p, _mm_mul_ps(r, r)), r), _mm_set1_ps(1.0f));
    /* 2^n as two normal factors, n1 = n >> 1 (arithmetic), n2 = n - n1 */
    const __m128i n1 = _mm_srai_epi32(n, 1), n2 = _mm_sub_epi32(n, n1);
    const __m128i bias = _mm_set1_epi32(127);
    const __m128 s1 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n1, bias), 23));
    const __m128 s2 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n2, bias), 23));
    return _mm_mul_ps(_mm_mul_ps(p, s1), s2);
}

#endif
