/* y = W x, Q8_0 weights, AVX-VNNI: vpdpbusd multiplies unsigned by signed
 * bytes and adds groups of 4 into int32 lanes, without saturation.
 * The matvec: avx2's kernel (kernels/avx2/matvec_q8.c) with vpdpbusd(0,
 * |x|, w * sign(x)) as the block dot.
 * The matmul (MM_OWN_X): the weights take the unsigned side with an
 * offset, u = w + 128 (w ^ 0x80, once per row and step, shared by the
 * tile's tokens), and x the signed side as it is: sum(u * x) = sum(w * x)
 * + 128 * sum(x), and the accumulator starts at -128 * sum(x) (once per
 * step for the 4 rows). A step's dot is two chained vpdpbusd in avx2_dot.h's
 * pair order. */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

#define MM_OWN_X
typedef ml_avx2_xq8 mv_x; /* a matvec step: two blocks' x and |x| */
typedef ml_avx2_x2 mm_x;  /* a matmul step: x in pair order, -128 * sum(x) */
typedef ml_avx2_w2 mv_w;  /* a row's step: w + 128 in pair order */
typedef ml_avx2_x mv_x1;
#define mv_xprep ml_avx2_xprep2_q8
#define mv_xprep1 ml_avx2_xprep_q8

ML_INLINE void mm_xprep(mm_x *xs, const int8_t *xq) {
    const __m256i z = _mm256_setzero_si256(), off = _mm256_set1_epi8((char)0x80);
    ml_avx2_xpair(xs, xq);
    xs->corr = _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, off, xs->lo), off, xs->hi));
}

ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) {
    const __m256i off = _mm256_set1_epi8((char)0x80);
    ml_avx2_pair(w, &wp->lo, &wp->hi);
    wp->lo = _mm256_xor_si256(wp->lo, off);
    wp->hi = _mm256_xor_si256(wp->hi, off);
}

ML_INLINE __m256i mv_wdot(const mv_w *wp, const mm_x *xs) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(xs->corr, wp->lo, xs->lo), wp->hi, xs->hi);
}

/* |x| * (w * sign(x)) in groups of 4, straight into int32 */
ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), xs->a, ml_avx2_wsign(w, xs));
}

ML_INLINE __m256i mv_dot(const int8_t *w, const mv_x *xs) {
    return mv256_pair(mv_dot1(w, &xs->b[0]), mv_dot1(w + MV_WBYTES, &xs->b[1]));
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q8_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q8_avxvnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
