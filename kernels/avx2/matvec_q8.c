/* y = W x, Q8_0 weights, AVX2: a block's dot through vpmaddubsw as
 * |x| * (w * sign(x)) (avx2_dot.h), two blocks a step, in the 4-row body
 * kernels/x86/matvec_tmpl.h. Pair sums <= 2 * 127 * 127 < 2^15: vpmaddubsw
 * never saturates. */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

/* The matmul's steps go in pair order (MM_OWN_X); the matvec's as blocks. */
#define MM_OWN_X
typedef ml_avx2_xq8 mv_x;   /* a matvec step: two blocks' x and |x| */
typedef ml_avx2_xq8p mm_x;  /* a matmul step: the same in pair order */
typedef ml_avx2_w2 mv_w;    /* a row's two blocks, pair order */
typedef ml_avx2_x mv_x1;
#define mv_xprep ml_avx2_xprep2_q8
#define mm_xprep ml_avx2_xprep2_q8p
#define mv_xprep1 ml_avx2_xprep_q8

/* pairs of |x| * (w * sign(x)) in int16, then groups of 4 in int32 */
ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(xs->a, ml_avx2_wsign(w, xs)), _mm256_set1_epi16(1));
}

ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) { ml_avx2_pair(w, &wp->lo, &wp->hi); }

/* the step's two halves (elements 0..15 and 16..31 of both blocks), each
 * widened to int32 before they add */
ML_INLINE __m256i mv_wdot(const mv_w *wp, const mm_x *xs) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i p0 = _mm256_maddubs_epi16(xs->alo, _mm256_sign_epi8(wp->lo, xs->lo));
    const __m256i p1 = _mm256_maddubs_epi16(xs->ahi, _mm256_sign_epi8(wp->hi, xs->hi));
    return _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
}

ML_INLINE __m256i mv_dot(const int8_t *w, const mv_x *xs) {
    return mv256_pair(mv_dot1(w, &xs->b[0]), mv_dot1(w + MV_WBYTES, &xs->b[1]));
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q8_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q8_avx2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
