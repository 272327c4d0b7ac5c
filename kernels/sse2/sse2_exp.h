/* expf for 4 lanes, SSE2: the canonical exp of kernels/x86/exp_body.h over
 * this width's primitives, bit-identical to the scalar twin. */
#ifndef ML_SSE2_EXP_H
#define ML_SSE2_EXP_H

#include <emmintrin.h>

#include "kernels/kernel_util.h"

typedef __m128 ml_x86_f;

ML_INLINE __m128 ml_x86_f_set1(float c) { return _mm_set1_ps(c); }
ML_INLINE __m128 ml_x86_f_add(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
ML_INLINE __m128 ml_x86_f_sub(__m128 a, __m128 b) { return _mm_sub_ps(a, b); }
ML_INLINE __m128 ml_x86_f_mul(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
ML_INLINE __m128 ml_x86_f_min(__m128 a, __m128 b) { return _mm_min_ps(a, b); }
ML_INLINE __m128 ml_x86_f_max(__m128 a, __m128 b) { return _mm_max_ps(a, b); }

/* p * 2^(n >> 1) * 2^(n - (n >> 1)), each factor a normal float built from
 * its exponent bits (nf is an integer: the conversion is exact). */
ML_INLINE __m128 ml_x86_f_pow2(__m128 p, __m128 nf) {
    const __m128i n = _mm_cvttps_epi32(nf), n1 = _mm_srai_epi32(n, 1), n2 = _mm_sub_epi32(n, n1);
    const __m128i bias = _mm_set1_epi32(127);
    const __m128 s1 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n1, bias), 23));
    const __m128 s2 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n2, bias), 23));
    return _mm_mul_ps(_mm_mul_ps(p, s1), s2);
}

ML_INLINE __m128 ml_x86_f_keep_ge(__m128 e, __m128 d, __m128 c) { return _mm_and_ps(_mm_cmpge_ps(d, c), e); }

#include "kernels/x86/exp_body.h"

#endif
