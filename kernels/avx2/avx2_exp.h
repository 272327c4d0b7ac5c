/* expf for 8 lanes, AVX2 + FMA. Same method and constants as the sse2 and
 * avx512vnni versions: see kernels/x86/exp_coeffs.h. */
#ifndef ML_AVX2_EXP_H
#define ML_AVX2_EXP_H

#include <immintrin.h>

#include "kernels/x86/exp_coeffs.h"
#include "kernels/x86/x86_common.h"

ML_INLINE __m256 ml_avx2_exp(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(ML_EXP_X_MIN)), _mm256_set1_ps(ML_EXP_X_MAX));
    const __m256 nf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(ML_EXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(ML_EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(ML_EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(ML_EXP_P5);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ML_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ML_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ML_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ML_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ML_EXP_P0));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    /* 2^n as two normal factors (see exp_coeffs.h) */
    const __m256i n = _mm256_cvtps_epi32(nf);
    const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif
