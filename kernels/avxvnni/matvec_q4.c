/* y = W x, Q4_0 weights, AVX-VNNI: avx2's pair layout (kernels/avx2/
 * avx2_dot.h) with chained vpdpbusd: vpdpbusd(vpdpbusd(-8 * sum(x) lanes,
 * low nibbles, x lo), high nibbles, x hi). The accumulator starts at the
 * "- 8" correction, so it costs nothing per row, and the two halves chain
 * without a separate add. In the 4-row body kernels/x86/matvec_tmpl.h. */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q4_BLOCK_BYTES

typedef ml_avx2_x2 mv_x; /* a step: a pair of blocks */
typedef ml_avx2_x mv_x1;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    const __m256i z = _mm256_setzero_si256(), eight = _mm256_set1_epi8(ML_Q4_OFFSET);
    ml_avx2_xpair(xs, xq);
    xs->corr = _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, eight, xs->lo), eight, xs->hi));
}

typedef ml_avx2_w2 mv_w; /* a row's pair of blocks: its nibbles */
#define mv_wprep ml_avx2_nibbles2

ML_INLINE __m256i mv_wdot(const mv_w *wp, const mv_x *xs) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(xs->corr, wp->lo, xs->lo), wp->hi, xs->hi);
}

ML_INLINE void mv_xprep1(mv_x1 *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    const __m256i s8 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(ML_Q4_OFFSET), xs->x);
    xs->a = _mm256_sub_epi32(_mm256_setzero_si256(), s8);
}

ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    return _mm256_dpbusd_avx_epi32(xs->a, ml_avx2_nibbles(w), xs->x);
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q4_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q4_avxvnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
