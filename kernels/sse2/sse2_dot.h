/* The sse2 build's int8 block dot, the primitives of the x86 4-row bodies
 * (kernels/x86/matvec_body.h lists them; t is the weight type, Q8_0 or
 * Q4_0). SSE2 has no byte multiply, so products go through pmaddwd on int16
 * lanes (the XNNPACK approach, without unpacking): each 16-byte half splits
 * into its even and odd bytes in place, with shifts and masks. The
 * activations are split once per block and shared by the 4 rows; the
 * weights get the cheapest split that keeps every product at the same
 * power-of-two scale (256), taken off the reduced block sums by one exact
 * arithmetic shift (ml_x86_sumi).
 *
 * Both formats pair four int16 weight vectors with four activation vectors
 * (e0, o0, e1, o1: the even and odd elements of each half):
 *   Q8_0: activations sign-extended; weights 256 * w, not sign-extended:
 *         w << 8 leaves each even byte in the high half of its int16 lane
 *         and masking with 0xFF00 keeps the odd byte there (two shifts
 *         fewer per 16 bytes). A lane sums 8 products of at most 127 *
 *         32512 (< 2^25), a block 256 * |sumi| < 2^28.
 *   Q4_0: byte j holds element j (low nibble) and 16 + j (high nibble);
 *         read as int16 lanes, lane k's low byte is element 2k, its high
 *         byte 2k+1. Each nibble is isolated by one mask in place, at a
 *         weight of 1, 16 or 256:
 *           v & 0x000F = n(2k)                 times e0 = 256 * x[2k]
 *           v & 0x0F00 = 256 n(2k+1)           times o0 = x[2k+1]
 *           v & 0x00F0 = 16 n(16+2k)           times e1 = 16 * x[16+2k]
 *           (v >> 4) & 0x0F00 = 256 n(16+2k+1) times o1 = x[16+2k+1]
 *         so the activations carry the missing factor (once per block,
 *         shared by the 4 rows) and every product is 256 * n * x. Nibbles
 *         are unsigned (0..15); the "- 8" is corr, int32 lanes summing to
 *         256 * -8 * sum(x). |lane| < 2^23. */
#ifndef ML_SSE2_DOT_H
#define ML_SSE2_DOT_H

#include <emmintrin.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

/* A block's activations in int16 lanes (see above); corr for Q4_0 only. */
typedef struct {
    __m128i e0, o0, e1, o1, corr;
} ml_x86_x;

ML_INLINE void ml_x86_xprep(ml_x86_x *xs, const int8_t *xq, ml_type t) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    if (t == ML_TYPE_Q8_0) {
        xs->e0 = _mm_srai_epi16(_mm_slli_epi16(x0, 8), 8);
        xs->o0 = _mm_srai_epi16(x0, 8);
        xs->e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 8);
        xs->o1 = _mm_srai_epi16(x1, 8);
        return;
    }
    const __m128i o0 = _mm_srai_epi16(x0, 8), o1 = _mm_srai_epi16(x1, 8);
    const __m128i e0 = _mm_slli_epi16(x0, 8);                    /* 256 * even */
    const __m128i e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 4); /* 16 * even */
    xs->e0 = e0, xs->o0 = o0, xs->e1 = e1, xs->o1 = o1;
    /* 256 * -8 * sum(x): sum the plain values, then one pmaddwd */
    const __m128i s = _mm_add_epi16(_mm_add_epi16(_mm_srai_epi16(e0, 8), o0), _mm_add_epi16(_mm_srai_epi16(e1, 4), o1));
    xs->corr = _mm_madd_epi16(s, _mm_set1_epi16(-ML_Q4_OFFSET * 256));
}

/* A row's block as the four int16 vectors that meet e0, o0, e1, o1. */
typedef struct {
    __m128i e0, o0, e1, o1;
} ml_x86_w;

ML_INLINE void ml_x86_wprep(ml_x86_w *wp, const int8_t *w, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        const __m128i hi = _mm_set1_epi16((short)0xFF00);
        const __m128i w0 = _mm_loadu_si128((const __m128i *)w);
        const __m128i w1 = _mm_loadu_si128((const __m128i *)(w + 16));
        wp->e0 = _mm_slli_epi16(w0, 8), wp->o0 = _mm_and_si128(w0, hi);
        wp->e1 = _mm_slli_epi16(w1, 8), wp->o1 = _mm_and_si128(w1, hi);
        return;
    }
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    const __m128i m0 = _mm_set1_epi16(0x000F), m1 = _mm_set1_epi16(0x0F00), m2 = _mm_set1_epi16(0x00F0);
    wp->e0 = _mm_and_si128(v, m0), wp->o0 = _mm_and_si128(v, m1);
    wp->e1 = _mm_and_si128(v, m2), wp->o1 = _mm_and_si128(_mm_srli_epi16(v, 4), m1);
}

/* Lanes sum to 256 * sumi. */
ML_INLINE __m128i ml_x86_wdot(const ml_x86_w *wp, const ml_x86_x *xs, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        const __m128i p0 = _mm_add_epi32(_mm_madd_epi16(xs->e0, wp->e0), _mm_madd_epi16(xs->o0, wp->o0));
        const __m128i p1 = _mm_add_epi32(_mm_madd_epi16(xs->e1, wp->e1), _mm_madd_epi16(xs->o1, wp->o1));
        return _mm_add_epi32(p0, p1);
    }
    const __m128i lo = _mm_add_epi32(_mm_madd_epi16(wp->e0, xs->e0), _mm_madd_epi16(wp->o0, xs->o0));
    const __m128i hi = _mm_add_epi32(_mm_madd_epi16(wp->e1, xs->e1), _mm_madd_epi16(wp->o1, xs->o1));
    return _mm_add_epi32(_mm_add_epi32(lo, hi), xs->corr);
}

/* The 4 rows' reduced dots are 256 * sumi: exact, as every product is a
 * multiple of 256. */
ML_INLINE __m128i ml_x86_sumi(__m128i s) { return _mm_srai_epi32(s, 8); }

#include "kernels/x86/x86_128.h"

#endif
