/* y = W x, Q8_0 weights, SSE4.1 build: pabsb/psignb + pmaddubsw block dot
 * in the 4-row body kernels/x86/matvec_tmpl.h.
 * |x| * (w * sign(x)) = x * w; |x| is shared by the 4 rows, psignb(w, x) is
 * per row. Pair sums <= 2 * 127 * 127 < 2^15 (the [-127, 127] clamp,
 * DESIGN §4), so pmaddubsw never saturates. */
#include "kernels/sse41/sse41_dot.h"
#include "kernels/x86/matvec128.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

typedef struct {
    __m128i x0, x1; /* x[0..15], x[16..31] */
    __m128i a0, a1; /* |x| */
} mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    xs->x0 = _mm_loadu_si128((const __m128i *)xq);
    xs->x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    xs->a0 = _mm_abs_epi8(xs->x0);
    xs->a1 = _mm_abs_epi8(xs->x1);
}

/* a row's block: w[0..15], w[16..31] (the signs depend on x: nothing more
 * to prepare) */
typedef struct {
    __m128i w0, w1;
} mv_w;

ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) {
    wp->w0 = _mm_loadu_si128((const __m128i *)w);
    wp->w1 = _mm_loadu_si128((const __m128i *)(w + 16));
}

ML_INLINE __m128i mv_wdot(const mv_w *wp, const mv_x *xs) {
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i p0 = _mm_maddubs_epi16(xs->a0, _mm_sign_epi8(wp->w0, xs->x0));
    const __m128i p1 = _mm_maddubs_epi16(xs->a1, _mm_sign_epi8(wp->w1, xs->x1));
    /* p0 + p1 could exceed int16: widen each before adding */
    return _mm_add_epi32(_mm_madd_epi16(p0, ones), _mm_madd_epi16(p1, ones));
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q8_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q8_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
