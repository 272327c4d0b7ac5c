/* SSE2 float helpers shared by this folder's kernels (and reused by the
 * higher x86 folders, whose flags include SSE2). */
#ifndef ML_SSE2_VEC_H
#define ML_SSE2_VEC_H

#include <emmintrin.h>

#include "kernels/kernel_util.h"

ML_INLINE float ml_sse2_hsum(__m128 v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(v);
}

ML_INLINE float ml_sse2_hmax(__m128 v) {
    v = _mm_max_ps(v, _mm_movehl_ps(v, v));
    v = _mm_max_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(v);
}

/* The canonical 8-lane sum (kernels/canon.h rule 2) with lanes 0..3 in lo
 * and 4..7 in hi: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). */
ML_INLINE float ml_sse2_fold8(__m128 lo, __m128 hi) { return ml_sse2_hsum(_mm_add_ps(lo, hi)); }

/* |v| */
ML_INLINE __m128 ml_sse2_abs(__m128 v) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), v); }

#endif
