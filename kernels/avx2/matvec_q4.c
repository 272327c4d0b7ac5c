/* y = W x, Q4_0 weights, AVX2: two blocks of nibbles per register
 * (avx2_dot.h), unsigned nibbles times x through vpmaddubsw, minus 8 * sum(x)
 * per block (precomputed once for the 4 rows), in the 4-row body
 * kernels/x86/matvec_tmpl.h. */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q4_BLOCK_BYTES

typedef ml_avx2_x2 mv_x; /* a step: a pair of blocks */
typedef ml_avx2_x mv_x1;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    const __m256i ones = _mm256_set1_epi8(1);
    ml_avx2_xpair(xs, xq);
    const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(ones, xs->lo), _mm256_maddubs_epi16(ones, xs->hi));
    xs->corr = _mm256_madd_epi16(s, _mm256_set1_epi16(-ML_Q4_OFFSET));
}

typedef ml_avx2_w2 mv_w; /* a row's pair of blocks: its nibbles */
#define mv_wprep ml_avx2_nibbles2

ML_INLINE __m256i mv_wdot(const mv_w *wp, const mv_x *xs) {
    /* each int16 <= 2 * 2 * 15 * 127: the two halves add without overflow */
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(wp->lo, xs->lo), _mm256_maddubs_epi16(wp->hi, xs->hi));
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), xs->corr);
}

ML_INLINE void mv_xprep1(mv_x1 *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xs->x), _mm256_set1_epi16(-ML_Q4_OFFSET));
}

ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    const __m256i p = _mm256_maddubs_epi16(ml_avx2_nibbles(w), xs->x); /* pairs <= 2 * 15 * 127 */
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), xs->a);
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q4_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q4_avx2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
