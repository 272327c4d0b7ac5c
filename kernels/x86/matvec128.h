/* The 128-bit primitives of the 4-row matvec body (kernels/x86/matvec_tmpl.h)
 * for the sse2 and sse41 builds: a step is one block, a row's dot is one
 * int32x4 per block. The including .c includes its ISA's dot header first,
 * which defines mv_sumi (the reduced dots -> sumi). SSE2 instructions only. */
#include <emmintrin.h>

#include "kernels/kernel_util.h"

typedef __m128i mv_vi;

#define MV_STEP 1

/* A step is one block: the tail's one-block primitives are the step's. */
#define mv_x1 mv_x
#define mv_xprep1 mv_xprep
#define mv_dot1 mv_dot

/* [sumi row 0, .., row 3] from the rows' dots v[0..3]: transpose-and-add */
ML_INLINE __m128i mv_block_sums(const __m128i *v) {
    const __m128i t01 = _mm_add_epi32(_mm_unpacklo_epi32(v[0], v[1]), _mm_unpackhi_epi32(v[0], v[1]));
    const __m128i t23 = _mm_add_epi32(_mm_unpacklo_epi32(v[2], v[3]), _mm_unpackhi_epi32(v[2], v[3]));
    return mv_sumi(_mm_add_epi32(_mm_unpacklo_epi64(t01, t23), _mm_unpackhi_epi64(t01, t23)));
}

#define mv_reduce4 mv_block_sums

/* acc + (float)sumi * s[0], lanes = rows: the canonical multiply, then add */
ML_INLINE __m128 mv_madd(__m128 acc, __m128i sumi, const __m128 *s) {
    return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(sumi), s[0]));
}
