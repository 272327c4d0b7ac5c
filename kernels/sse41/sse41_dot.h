/* The sse41 build's int8 block dot, the primitives of the x86 4-row bodies
 * (kernels/x86/matvec_body.h lists them; t is the weight type, Q8_0 or
 * Q4_0). SSSE3's pmaddubsw (the sse41 build's gain over sse2) multiplies
 * unsigned by signed bytes and adds pairs into int16, so one instruction
 * does the work of sse2's shifts and two pmaddwd. Its dots are the plain
 * int32 sums (unlike sse2's, scaled by 256).
 *   Q8_0: |x| * (w * sign(x)) = x * w; |x| is shared by the 4 rows,
 *         psignb(w, x) is per row. Pair sums <= 2 * 127 * 127 < 2^15 (the
 *         [-127, 127] clamp, DESIGN §4), so pmaddubsw never saturates.
 *   Q4_0: the nibbles (0..15) are already unsigned: pmaddubsw(nibbles, x),
 *         minus 8 * sum(x) per block (corr), precomputed once for the 4
 *         rows. */
#ifndef ML_SSE41_DOT_H
#define ML_SSE41_DOT_H

#include <stdint.h>
#include <tmmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

/* A block's activations: x[0..15], x[16..31]; Q8_0: |x|; Q4_0: int32
 * lanes summing to -8 * sum(x). */
typedef struct {
    __m128i x0, x1, a0, a1, corr;
} ml_x86_x;

ML_INLINE void ml_x86_xprep(ml_x86_x *xs, const int8_t *xq, ml_type t) {
    xs->x0 = _mm_loadu_si128((const __m128i *)xq);
    xs->x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    if (t == ML_TYPE_Q8_0) {
        xs->a0 = _mm_abs_epi8(xs->x0);
        xs->a1 = _mm_abs_epi8(xs->x1);
        return;
    }
    const __m128i ones8 = _mm_set1_epi8(1);
    const __m128i pairs = _mm_add_epi16(_mm_maddubs_epi16(ones8, xs->x0), _mm_maddubs_epi16(ones8, xs->x1));
    xs->corr = _mm_madd_epi16(pairs, _mm_set1_epi16(-ML_Q4_OFFSET));
}

/* A row's block: Q8_0 w[0..15], w[16..31] (the signs depend on x: nothing
 * more to prepare); Q4_0 its nibbles for elements 0..15 and 16..31. */
typedef struct {
    __m128i w0, w1;
} ml_x86_w;

ML_INLINE void ml_x86_wprep(ml_x86_w *wp, const int8_t *w, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        wp->w0 = _mm_loadu_si128((const __m128i *)w);
        wp->w1 = _mm_loadu_si128((const __m128i *)(w + 16));
        return;
    }
    /* byte j: element j (low nibble), element 16 + j (high nibble) */
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    wp->w0 = _mm_and_si128(v, m);
    wp->w1 = _mm_and_si128(_mm_srli_epi16(v, 4), m);
}

ML_INLINE __m128i ml_x86_wdot(const ml_x86_w *wp, const ml_x86_x *xs, ml_type t) {
    const __m128i ones = _mm_set1_epi16(1);
    if (t == ML_TYPE_Q8_0) {
        const __m128i p0 = _mm_maddubs_epi16(xs->a0, _mm_sign_epi8(wp->w0, xs->x0));
        const __m128i p1 = _mm_maddubs_epi16(xs->a1, _mm_sign_epi8(wp->w1, xs->x1));
        /* p0 + p1 could exceed int16: widen each before adding */
        return _mm_add_epi32(_mm_madd_epi16(p0, ones), _mm_madd_epi16(p1, ones));
    }
    /* each int16 <= 2 * 2 * 15 * 127: the two halves add without overflow */
    const __m128i p = _mm_add_epi16(_mm_maddubs_epi16(wp->w0, xs->x0), _mm_maddubs_epi16(wp->w1, xs->x1));
    return _mm_add_epi32(_mm_madd_epi16(p, ones), xs->corr);
}

/* The 4 rows' reduced dots are the sumi already. */
ML_INLINE __m128i ml_x86_sumi(__m128i s) { return s; }

#include "kernels/x86/x86_128.h"

#endif
