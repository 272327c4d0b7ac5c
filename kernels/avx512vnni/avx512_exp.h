/* expf for 16 lanes, AVX-512F: the canonical exp of kernels/x86/exp_body.h
 * over this width's primitives. The final 2^n is one vscalefps: p * 2^n
 * rounded once, which is what the canonical two normal factors give
 * (p * 2^(n>>1) is exact, the second product rounds once, into the
 * denormals or to inf alike), so the result is bit-identical. */
#ifndef ML_AVX512_EXP_H
#define ML_AVX512_EXP_H

#include <immintrin.h>

#include "kernels/kernel_util.h"

typedef __m512 ml_x86_f;

ML_INLINE __m512 ml_x86_f_set1(float c) { return _mm512_set1_ps(c); }
ML_INLINE __m512 ml_x86_f_add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
ML_INLINE __m512 ml_x86_f_sub(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
ML_INLINE __m512 ml_x86_f_mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
ML_INLINE __m512 ml_x86_f_min(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
ML_INLINE __m512 ml_x86_f_max(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
ML_INLINE __m512 ml_x86_f_pow2(__m512 p, __m512 nf) { return _mm512_scalef_ps(p, nf); }

ML_INLINE __m512 ml_x86_f_keep_ge(__m512 e, __m512 d, __m512 c) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, c, _CMP_GE_OQ), e);
}

#include "kernels/x86/exp_body.h"

#endif
