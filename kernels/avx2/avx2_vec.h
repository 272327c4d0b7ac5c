/* AVX2 float helpers shared by this folder's kernels (and avx512vnni's
 * softmax.c: that folder's flags include AVX2). */
#ifndef ML_AVX2_VEC_H
#define ML_AVX2_VEC_H

#include <immintrin.h>

#include "kernels/sse2/sse2_vec.h"
#include "kernels/kernel_util.h"

/* Also the canonical 8-lane fold of kernels/canon.h (lane j in lane j). */
ML_INLINE float ml_avx2_hsum(__m256 v) {
    return ml_sse2_hsum(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

ML_INLINE float ml_avx2_hmax(__m256 v) {
    return ml_sse2_hmax(_mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

/* Lane mask for a tail of n < 8 floats (for vmaskmovps). */
ML_INLINE __m256i ml_avx2_tail(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#endif
