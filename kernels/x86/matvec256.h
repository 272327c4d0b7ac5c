/* The 256-bit primitives of the 4-row matvec body (kernels/x86/matvec_tmpl.h)
 * for the avx2 and avxvnni builds: a step is two blocks, and a row's dot of
 * a step is one int32x8 with block 0's partial sums in the low 128-bit half
 * and block 1's in the high half. AVX2 instructions only. */
#include <immintrin.h>

#include "kernels/kernel_util.h"

typedef __m256i mv_vi;

#define MV_STEP 2

/* Within each 128-bit half: [sum v0, sum v1, sum v2, sum v3] of that half. */
ML_INLINE __m256i mv256_quads(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i t01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v0, v1), _mm256_unpackhi_epi32(v0, v1));
    const __m256i t23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v2, v3), _mm256_unpackhi_epi32(v2, v3));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(t01, t23), _mm256_unpackhi_epi64(t01, t23));
}

/* Two one-block dots (any 8 lanes each) -> a step's dot: [d0 lo + d0 hi |
 * d1 lo + d1 hi]. One lane-crossing shuffle; the blend is cheap. */
ML_INLINE __m256i mv256_pair(__m256i d0, __m256i d1) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(d0, d1, 0x21), _mm256_blend_epi32(d0, d1, 0xF0));
}

/* The 4 rows' step dots -> [block 0: sumi rows 0..3 | block 1: rows 0..3] */
ML_INLINE __m256i mv_block_sums(const __m256i *v) { return mv256_quads(v[0], v[1], v[2], v[3]); }

/* The 4 rows' one-block dots -> [sumi row 0, .., row 3] */
ML_INLINE __m128i mv_reduce4(const __m256i *v) {
    const __m256i u = mv256_quads(v[0], v[1], v[2], v[3]);
    return _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}

/* acc + (float)sumi(block j) * s[j] for the step's blocks in order: the
 * canonical multiply, then add, one block at a time (lanes = rows). */
ML_INLINE __m128 mv_madd(__m128 acc, __m256i sumi, const __m128 *s) {
    const __m256 f = _mm256_cvtepi32_ps(sumi);
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm256_castps256_ps128(f), s[0]));
    return _mm_add_ps(acc, _mm_mul_ps(_mm256_extractf128_ps(f, 1), s[1]));
}
