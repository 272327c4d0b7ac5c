/* expf for 8 lanes, AVX2: ml_canon_expf (kernels/canon.h) lane by lane, the
 * same IEEE operations in the same order (no FMA), so bit-identical to the
 * scalar twin and to the sse2 version. */
#ifndef ML_AVX2_EXP_H
#define ML_AVX2_EXP_H

#include <immintrin.h>

#include "kernels/canon.h"
#include "kernels/x86/x86_common.h"

ML_INLINE __m256 ml_avx2_exp(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(ML_EXP_X_MIN)), _mm256_set1_ps(ML_EXP_X_MAX));
    const __m256 round = _mm256_set1_ps(ML_EXP_ROUND);
    const __m256 nf = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(ML_EXP_LOG2E)), round), round);
    const __m256i n = _mm256_cvttps_epi32(nf); /* exact: nf is an integer */
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(nf, _mm256_set1_ps(ML_EXP_LN2_HI)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(nf, _mm256_set1_ps(ML_EXP_LN2_LO)));
    __m256 p = _mm256_set1_ps(ML_EXP_P5);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(ML_EXP_P4));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(ML_EXP_P3));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(ML_EXP_P2));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(ML_EXP_P1));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(ML_EXP_P0));
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
    /* 2^n as two normal factors, n1 = n >> 1 (arithmetic), n2 = n - n1 */
    const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif
