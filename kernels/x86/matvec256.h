/* 256-bit front end of kernels/x86/matvec_tmpl.h (the avx2 and avxvnni
 * builds): two blocks per step, int32x8 dots.
 * The including .c defines MV_NAME, MV_WBYTES, the one-block dot MV_X1,
 * MV_XPREP1, MV_DOT1, and MV_BPD:
 *   MV_BPD 1: a step is two one-block dots per row; the 8 dots of the 4 rows
 *             reduce to [block 0: rows 0..3 | block 1: rows 0..3].
 *   MV_BPD 2: the .c also defines MV_XT, MV_XPREP and MV_DOT2(w, xs), one dot
 *             over two blocks with block 0 in the low 128-bit half (int32x4)
 *             and block 1 in the high half, so the 4 rows' dots reduce
 *             within halves straight to that layout.
 * then includes this file once. */
#include <immintrin.h>

#include "kernels/x86/mv256.h"

#if MV_BPD == 1
typedef struct {
    MV_X1 b[2];
} mv_x2;
ML_INLINE void mv_xprep2(mv_x2 *xs, const int8_t *xq) {
    MV_XPREP1(&xs->b[0], xq);
    MV_XPREP1(&xs->b[1], xq + ML_QK);
}
/* v[2 * row + block] -> [block 0: rows 0..3 | block 1: rows 0..3] */
ML_INLINE __m256i mv_sums(const __m256i *v) {
    const __m256i u0 = ml_mv256_quads(v[0], v[2], v[4], v[6]), u1 = ml_mv256_quads(v[1], v[3], v[5], v[7]);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}
#define MV_NDOT 2
#define MV_XT mv_x2
#define MV_XPREP mv_xprep2
#define MV_DOT(w, xs, j) MV_DOT1((w) + (j) * MV_WBYTES, &(xs)->b[j])
#elif MV_BPD == 2
ML_INLINE __m256i mv_sums(const __m256i *v) { return ml_mv256_quads(v[0], v[1], v[2], v[3]); }
#define MV_NDOT 1
#define MV_DOT(w, xs, j) MV_DOT2(w, xs)
#else
#error "MV_BPD must be 1 or 2"
#endif

#define MV_STEP 2
#define MV_VI __m256i
#define MV_VI1 __m256i
#define MV_VS __m256i
#define MV_SUMS mv_sums
#define MV_REDUCE4 ml_mv256_reduce4
#define MV_VSF __m256
#define MV_CVT _mm256_cvtepi32_ps
#define MV_CHUNK ML_MV256_CHUNK
#include "kernels/x86/matvec_tmpl.h"
