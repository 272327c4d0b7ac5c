/* expf for 8 lanes, AVX2: the canonical exp of kernels/x86/exp_body.h over
 * this width's primitives, bit-identical to the scalar twin. */
#ifndef ML_AVX2_EXP_H
#define ML_AVX2_EXP_H

#include <immintrin.h>

#include "kernels/kernel_util.h"

typedef __m256 ml_x86_f;

ML_INLINE __m256 ml_x86_f_set1(float c) { return _mm256_set1_ps(c); }
ML_INLINE __m256 ml_x86_f_add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
ML_INLINE __m256 ml_x86_f_sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
ML_INLINE __m256 ml_x86_f_mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
ML_INLINE __m256 ml_x86_f_min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
ML_INLINE __m256 ml_x86_f_max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }

/* p * 2^(n >> 1) * 2^(n - (n >> 1)), each factor a normal float built from
 * its exponent bits (nf is an integer: the conversion is exact). */
ML_INLINE __m256 ml_x86_f_pow2(__m256 p, __m256 nf) {
    const __m256i n = _mm256_cvttps_epi32(nf), n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

ML_INLINE __m256 ml_x86_f_keep_ge(__m256 e, __m256 d, __m256 c) {
    return _mm256_and_ps(_mm256_cmp_ps(d, c, _CMP_GE_OQ), e);
}

#include "kernels/x86/exp_body.h"

#endif
