/* SSE2 int8 block dots. SSE2 has no byte multiply, so products go through
 * pmaddwd on int16 lanes (the XNNPACK approach, without unpacking): each
 * 16-byte half splits into its even and odd bytes in place, with shifts and
 * masks. The activations are split once per block and shared by the 4 rows
 * of kernels/x86/matvec_tmpl.h; the weights get the cheapest split that
 * keeps every product at the same power-of-two scale (256), taken off the
 * reduced block sums by one exact arithmetic shift (MV_SHIFT 8). */
#ifndef ML_SSE2_DOT_H
#define ML_SSE2_DOT_H

#include <emmintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* Activations x[0..15] and x[16..31] split into even and odd elements, as
 * int16 lanes (lane k: element 2k or 2k+1 of that half). */
typedef struct {
    __m128i e0, o0, e1, o1;
    __m128i corr; /* Q4 only: int32 lanes summing to 256 * -8 * sum(x) */
} ml_sse2_x;

/* Q8_0: e0, o0, e1, o1 are the plain sign-extended values. */
ML_INLINE void ml_sse2_xprep(ml_sse2_x *xs, const int8_t *xq) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    xs->e0 = _mm_srai_epi16(_mm_slli_epi16(x0, 8), 8);
    xs->o0 = _mm_srai_epi16(x0, 8);
    xs->e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 8);
    xs->o1 = _mm_srai_epi16(x1, 8);
}

/* Q8_0: lanes sum to 256 * sumi. The weights are not sign-extended: w << 8
 * leaves each even byte in the high half of its int16 lane and masking with
 * 0xFF00 keeps the odd byte there, both read as exactly 256 * w. That saves
 * two shifts per 16 bytes. No overflow: a lane sums 8 products of at most
 * 127 * 32512 (< 2^25), a block 256 * |sumi| < 2^28. */
ML_INLINE __m128i ml_sse2_dot_q8(const int8_t *w, const ml_sse2_x *xs) {
    const __m128i hi = _mm_set1_epi16((short)0xFF00);
    const __m128i w0 = _mm_loadu_si128((const __m128i *)w);
    const __m128i w1 = _mm_loadu_si128((const __m128i *)(w + 16));
    const __m128i p0 = _mm_add_epi32(_mm_madd_epi16(xs->e0, _mm_slli_epi16(w0, 8)),
                                     _mm_madd_epi16(xs->o0, _mm_and_si128(w0, hi)));
    const __m128i p1 = _mm_add_epi32(_mm_madd_epi16(xs->e1, _mm_slli_epi16(w1, 8)),
                                     _mm_madd_epi16(xs->o1, _mm_and_si128(w1, hi)));
    return _mm_add_epi32(p0, p1);
}

/* Q4_0: lanes sum to 256 * sumi, the same scale as Q8 (MV_SHIFT 8 for both). Byte j holds element j (low nibble) and 16 + j (high nibble);
 * read as int16 lanes, lane k's low byte is element 2k, its high byte 2k+1.
 * Each nibble is isolated by one mask in place, at a weight of 1, 16 or 256:
 *   v & 0x000F = n(2k)          times e0 * 256
 *   v & 0x0F00 = 256 n(2k+1)    times o0
 *   v & 0x00F0 = 16 n(16+2k)    times e1 * 16
 *   (v >> 4) & 0x0F00 = 256 n(16+2k+1)   times o1
 * so the activations carry the missing factor (once per block, shared by the
 * 4 rows) and every product is 256 * n * x. Nibbles are unsigned (0..15); the
 * "- 8" is the precomputed corr lanes. No overflow: |lane| < 2^23. */
ML_INLINE void ml_sse2_xprep_q4(ml_sse2_x *xs, const int8_t *xq) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    const __m128i o0 = _mm_srai_epi16(x0, 8), o1 = _mm_srai_epi16(x1, 8);
    const __m128i e0 = _mm_slli_epi16(x0, 8);                     /* 256 * even */
    const __m128i e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 4);  /* 16 * even */
    xs->e0 = e0, xs->o0 = o0, xs->e1 = e1, xs->o1 = o1;
    /* 256 * -8 * sum(x): sum the plain values, then one pmaddwd */
    const __m128i s = _mm_add_epi16(_mm_add_epi16(_mm_srai_epi16(e0, 8), o0), _mm_add_epi16(_mm_srai_epi16(e1, 4), o1));
    xs->corr = _mm_madd_epi16(s, _mm_set1_epi16(-ML_Q4_OFFSET * 256));
}

ML_INLINE __m128i ml_sse2_dot_q4(const int8_t *w, const ml_sse2_x *xs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    const __m128i m0 = _mm_set1_epi16(0x000F), m1 = _mm_set1_epi16(0x0F00), m2 = _mm_set1_epi16(0x00F0);
    const __m128i lo = _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(v, m0), xs->e0),
                                     _mm_madd_epi16(_mm_and_si128(v, m1), xs->o0));
    const __m128i hi = _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(v, m2), xs->e1),
                                     _mm_madd_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), m1), xs->o1));
    return _mm_add_epi32(_mm_add_epi32(lo, hi), xs->corr);
}

#endif
