/* y = W x, Q4_0 weights, SSE2: nibbles isolated in int16 lanes in place and
 * multiplied by pmaddwd (sse2_dot.h), in the 4-row body
 * kernels/x86/matvec_tmpl.h. */
#include "kernels/sse2/sse2_dot.h"
#include "kernels/x86/matvec128.h"

#define MV_WBYTES ML_Q4_BLOCK_BYTES

/* Byte j of a block holds element j (low nibble) and 16 + j (high nibble);
 * read as int16 lanes, lane k's low byte is element 2k, its high byte 2k+1.
 * Each nibble is isolated by one mask in place, at a weight of 1, 16 or 256:
 *   v & 0x000F = n(2k)          times e0 * 256
 *   v & 0x0F00 = 256 n(2k+1)    times o0
 *   v & 0x00F0 = 16 n(16+2k)    times e1 * 16
 *   (v >> 4) & 0x0F00 = 256 n(16+2k+1)   times o1
 * so the activations carry the missing factor (once per block, shared by the
 * 4 rows) and every product is 256 * n * x, the same scale as Q8. Nibbles
 * are unsigned (0..15); the "- 8" is the precomputed corr lanes. No
 * overflow: |lane| < 2^23. */
typedef struct {
    __m128i e0, o0, e1, o1; /* int16 lanes: 256 * x[2k], x[2k+1], 16 * x[16+2k], x[16+2k+1] */
    __m128i corr;           /* int32 lanes summing to 256 * -8 * sum(x) */
} mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    const __m128i o0 = _mm_srai_epi16(x0, 8), o1 = _mm_srai_epi16(x1, 8);
    const __m128i e0 = _mm_slli_epi16(x0, 8);                    /* 256 * even */
    const __m128i e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 4); /* 16 * even */
    xs->e0 = e0, xs->o0 = o0, xs->e1 = e1, xs->o1 = o1;
    /* 256 * -8 * sum(x): sum the plain values, then one pmaddwd */
    const __m128i s = _mm_add_epi16(_mm_add_epi16(_mm_srai_epi16(e0, 8), o0), _mm_add_epi16(_mm_srai_epi16(e1, 4), o1));
    xs->corr = _mm_madd_epi16(s, _mm_set1_epi16(-ML_Q4_OFFSET * 256));
}

/* A row's block: its 4 masked nibble sets in int16 lanes (see above). */
typedef struct {
    __m128i n0, n1, n2, n3;
} mv_w;

ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) {
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    const __m128i m0 = _mm_set1_epi16(0x000F), m1 = _mm_set1_epi16(0x0F00), m2 = _mm_set1_epi16(0x00F0);
    wp->n0 = _mm_and_si128(v, m0), wp->n1 = _mm_and_si128(v, m1);
    wp->n2 = _mm_and_si128(v, m2), wp->n3 = _mm_and_si128(_mm_srli_epi16(v, 4), m1);
}

/* Lanes sum to 256 * sumi. */
ML_INLINE __m128i mv_wdot(const mv_w *wp, const mv_x *xs) {
    const __m128i lo = _mm_add_epi32(_mm_madd_epi16(wp->n0, xs->e0), _mm_madd_epi16(wp->n1, xs->o0));
    const __m128i hi = _mm_add_epi32(_mm_madd_epi16(wp->n2, xs->e1), _mm_madd_epi16(wp->n3, xs->o1));
    return _mm_add_epi32(_mm_add_epi32(lo, hi), xs->corr);
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q4_sse2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q4_sse2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
