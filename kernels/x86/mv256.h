/* 256-bit pieces of the matvec template (kernels/x86/matvec_tmpl.h) for the
 * avx2, avxvnni and avx512vnni builds (AVX2 instructions only). */
#ifndef ML_MV256_H
#define ML_MV256_H

#include <stddef.h>

#include <immintrin.h>

#include "kernels/kernel_util.h"

/* Within each 128-bit half: [sum v0, sum v1, sum v2, sum v3] of that half. */
ML_INLINE __m256i ml_mv256_quads(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i t01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v0, v1), _mm256_unpackhi_epi32(v0, v1));
    const __m256i t23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v2, v3), _mm256_unpackhi_epi32(v2, v3));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(t01, t23), _mm256_unpackhi_epi64(t01, t23));
}

/* [sum v[0], ..., sum v[3]] */
ML_INLINE __m128i ml_mv256_reduce4(const __m256i *v) {
    const __m256i u = ml_mv256_quads(v[0], v[1], v[2], v[3]);
    return _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}

#define ML_MV256_CHUNK(f, j) ((j) == 0 ? _mm256_castps256_ps128(f) : _mm256_extractf128_ps(f, 1))

#endif
