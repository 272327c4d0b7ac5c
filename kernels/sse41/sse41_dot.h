/* SSSE3 int8 block dots (the sse41 build's gain over sse2): pmaddubsw
 * multiplies unsigned by signed bytes and adds pairs into int16, so one
 * instruction does the work of sse2's shifts and two pmaddwd.
 *   Q8_0: |x| * (w * sign(x)) = x * w; |x| is shared by the 4 rows, psignb
 *         (w, x) is per row. Pair sums <= 2 * 127 * 127 < 2^15 (the
 *         [-127, 127] clamp, DESIGN §4), so pmaddubsw never saturates.
 *   Q4_0: the nibbles (0..15) are already unsigned: pmaddubsw(nibbles, x),
 *         minus 8 * sum(x) per block, precomputed once for the 4 rows. */
#ifndef ML_SSE41_DOT_H
#define ML_SSE41_DOT_H

#include <stdint.h>
#include <tmmintrin.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

typedef struct {
    __m128i x0, x1; /* x[0..15], x[16..31] */
    __m128i a0, a1; /* Q8: |x|;  Q4: a0 = int32 lanes summing to -8 * sum(x) */
} ml_sse41_x;

ML_INLINE void ml_sse41_xprep_q8(ml_sse41_x *xs, const int8_t *xq) {
    xs->x0 = _mm_loadu_si128((const __m128i *)xq);
    xs->x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    xs->a0 = _mm_abs_epi8(xs->x0);
    xs->a1 = _mm_abs_epi8(xs->x1);
}

ML_INLINE __m128i ml_sse41_dot_q8(const int8_t *w, const ml_sse41_x *xs) {
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i w0 = _mm_loadu_si128((const __m128i *)w);
    const __m128i w1 = _mm_loadu_si128((const __m128i *)(w + 16));
    const __m128i p0 = _mm_maddubs_epi16(xs->a0, _mm_sign_epi8(w0, xs->x0));
    const __m128i p1 = _mm_maddubs_epi16(xs->a1, _mm_sign_epi8(w1, xs->x1));
    /* p0 + p1 could exceed int16: widen each before adding */
    return _mm_add_epi32(_mm_madd_epi16(p0, ones), _mm_madd_epi16(p1, ones));
}

ML_INLINE void ml_sse41_xprep_q4(ml_sse41_x *xs, const int8_t *xq) {
    const __m128i ones8 = _mm_set1_epi8(1);
    xs->x0 = _mm_loadu_si128((const __m128i *)xq);
    xs->x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    const __m128i pairs = _mm_add_epi16(_mm_maddubs_epi16(ones8, xs->x0), _mm_maddubs_epi16(ones8, xs->x1));
    xs->a0 = _mm_madd_epi16(pairs, _mm_set1_epi16(-ML_Q4_OFFSET));
}

/* Byte j: element j (low nibble), element 16 + j (high nibble). */
ML_INLINE __m128i ml_sse41_dot_q4(const int8_t *w, const ml_sse41_x *xs) {
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    const __m128i lo = _mm_and_si128(v, m), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
    /* each int16 <= 2 * 2 * 15 * 127: the two halves add without overflow */
    const __m128i p = _mm_add_epi16(_mm_maddubs_epi16(lo, xs->x0), _mm_maddubs_epi16(hi, xs->x1));
    return _mm_add_epi32(_mm_madd_epi16(p, _mm_set1_epi16(1)), xs->a0);
}

#endif
