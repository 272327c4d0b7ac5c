/* y = W x, Q4_0 weights, SSE4.1 build: the nibbles (0..15) are already
 * unsigned: pmaddubsw(nibbles, x), minus 8 * sum(x) per block, precomputed
 * once for the 4 rows; in the 4-row body kernels/x86/matvec_tmpl.h. */
#include "kernels/sse41/sse41_dot.h"
#include "kernels/x86/matvec128.h"

#define MV_WBYTES ML_Q4_BLOCK_BYTES

typedef struct {
    __m128i x0, x1; /* x[0..15], x[16..31] */
    __m128i corr;   /* int32 lanes summing to -8 * sum(x) */
} mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq) {
    const __m128i ones8 = _mm_set1_epi8(1);
    xs->x0 = _mm_loadu_si128((const __m128i *)xq);
    xs->x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    const __m128i pairs = _mm_add_epi16(_mm_maddubs_epi16(ones8, xs->x0), _mm_maddubs_epi16(ones8, xs->x1));
    xs->corr = _mm_madd_epi16(pairs, _mm_set1_epi16(-ML_Q4_OFFSET));
}

/* a row's block unpacked: its nibbles for elements 0..15 and 16..31 */
typedef struct {
    __m128i lo, hi;
} mv_w;

/* Byte j: element j (low nibble), element 16 + j (high nibble). */
ML_INLINE void mv_wprep(mv_w *wp, const int8_t *w) {
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    wp->lo = _mm_and_si128(v, m);
    wp->hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
}

ML_INLINE __m128i mv_wdot(const mv_w *wp, const mv_x *xs) {
    /* each int16 <= 2 * 2 * 15 * 127: the two halves add without overflow */
    const __m128i p = _mm_add_epi16(_mm_maddubs_epi16(wp->lo, xs->x0), _mm_maddubs_epi16(wp->hi, xs->x1));
    return _mm_add_epi32(_mm_madd_epi16(p, _mm_set1_epi16(1)), xs->corr);
}

#include "kernels/x86/matvec_tmpl.h"
#include "kernels/x86/matmul_tmpl.h"

void ml_k_matvec_q4_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}

void ml_k_matmul_q4_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1);
}
