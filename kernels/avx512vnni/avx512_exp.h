/* expf for 16 lanes, AVX-512F: ml_canon_expf (kernels/canon.h) lane by lane,
 * the same IEEE operations in the same order (no FMA). The final 2^n is one
 * vscalefps: p * 2^n rounded once, which is what the canonical two normal
 * factors give (p * 2^(n>>1) is exact, the second product rounds once, into
 * the denormals or to inf alike), so the result is bit-identical. */
#ifndef ML_AVX512_EXP_H
#define ML_AVX512_EXP_H

#include <immintrin.h>

#include "kernels/canon.h"
#include "kernels/kernel_util.h"

ML_INLINE __m512 ml_avx512_exp(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(ML_EXP_X_MIN)), _mm512_set1_ps(ML_EXP_X_MAX));
    const __m512 round = _mm512_set1_ps(ML_EXP_ROUND);
    const __m512 nf = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(ML_EXP_LOG2E)), round), round);
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(nf, _mm512_set1_ps(ML_EXP_LN2_HI)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(nf, _mm512_set1_ps(ML_EXP_LN2_LO)));
    __m512 p = _mm512_set1_ps(ML_EXP_P5);
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(ML_EXP_P4));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(ML_EXP_P3));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(ML_EXP_P2));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(ML_EXP_P1));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(ML_EXP_P0));
    p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, nf);
}

#endif
