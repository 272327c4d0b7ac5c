/* y = W x, Q8_0 weights, SSE2: the pmaddwd block dot (sse2_dot.h) in the
 * 4-row body kernels/x86/matvec_tmpl.h. */
#include "kernels/sse2/sse2_dot.h"
#include "kernels/x86/matvec128.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

/* Activations x[0..15] and x[16..31] split into even and odd elements,
 * sign-extended to int16 lanes (lane k: element 2k or 2k+1 of that half). */
typedef struct {
    __m128i e0, o0, e1, o1;
} mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    xs->e0 = _mm_srai_epi16(_mm_slli_epi16(x0, 8), 8);
    xs->o0 = _mm_srai_epi16(x0, 8);
    xs->e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 8);
    xs->o1 = _mm_srai_epi16(x1, 8);
}

/* A row's block as int16 lanes: 256 * its even and odd elements of each
 * half. The weights are not sign-extended: w << 8 leaves each even byte in
 * the high half of its int16 lane and masking with 0xFF00 keeps the odd byte
 * there, both read as exactly 256 * w. That saves two shifts per 16 bytes. */
typedef struct {
    __m128i e0, o0, e1, o1;
} mv_w;

ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) {
    const __m128i hi = _mm_set1_epi16((short)0xFF00);
    const __m128i w0 = _mm_loadu_si128((const __m128i *)w);
    const __m128i w1 = _mm_loadu_si128((const __m128i *)(w + 16));
    wp->e0 = _mm_slli_epi16(w0, 8), wp->o0 = _mm_and_si128(w0, hi);
    wp->e1 = _mm_slli_epi16(w1, 8), wp->o1 = _mm_and_si128(w1, hi);
}

/* Lanes sum to 256 * sumi. No overflow: a lane sums 8 products of at most
 * 127 * 32512 (< 2^25), a block 256 * |sumi| < 2^28. */
ML_INLINE __m128i mv_wdot(const mv_w *wp, const mv_x *xs) {
    const __m128i p0 = _mm_add_epi32(_mm_madd_epi16(xs->e0, wp->e0), _mm_madd_epi16(xs->o0, wp->o0));
    const __m128i p1 = _mm_add_epi32(_mm_madd_epi16(xs->e1, wp->e1), _mm_madd_epi16(xs->o1, wp->o1));
    return _mm_add_epi32(p0, p1);
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q8_sse2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q8_sse2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
