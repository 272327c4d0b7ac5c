/* 128-bit front end of kernels/x86/matvec_tmpl.h (the sse2 and sse41
 * builds): one block per step, one block per dot (int32x4 lanes).
 * The including .c defines MV_NAME, MV_WBYTES and the one-block dot MV_X1,
 * MV_XPREP1, MV_DOT1 (and MV_SHIFT if its dot returns sumi << MV_SHIFT),
 * then includes this file once. SSE2 only. */
#include <emmintrin.h>

#include "kernels/kernel_util.h"

/* [sum v[0], sum v[1], sum v[2], sum v[3]]: transpose-and-add */
ML_INLINE __m128i ml_mv128_reduce4(const __m128i *v) {
    const __m128i t01 = _mm_add_epi32(_mm_unpacklo_epi32(v[0], v[1]), _mm_unpackhi_epi32(v[0], v[1]));
    const __m128i t23 = _mm_add_epi32(_mm_unpacklo_epi32(v[2], v[3]), _mm_unpackhi_epi32(v[2], v[3]));
    __m128i s = _mm_add_epi32(_mm_unpacklo_epi64(t01, t23), _mm_unpackhi_epi64(t01, t23));
#ifdef MV_SHIFT
    s = _mm_srai_epi32(s, MV_SHIFT); /* exact: the sums are multiples of 2^MV_SHIFT */
#endif
    return s;
}

#define MV_STEP 1
#define MV_NDOT 1
#define MV_XT MV_X1
#define MV_XPREP MV_XPREP1
#define MV_VI __m128i
#define MV_VI1 __m128i
#define MV_DOT(w, xs, j) MV_DOT1(w, xs)
#define MV_VS __m128i
#define MV_SUMS ml_mv128_reduce4
#define MV_REDUCE4 ml_mv128_reduce4
#define MV_VSF __m128
#define MV_CVT _mm_cvtepi32_ps
#define MV_CHUNK(f, j) (f)
#include "kernels/x86/matvec_tmpl.h"
