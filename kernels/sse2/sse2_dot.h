/* SSE2 int8 block dots. SSE2 has no byte multiply, so products go through
 * pmaddwd on int16 lanes (the XNNPACK approach, without unpacking): each
 * 16-byte half splits into its even and odd bytes, sign-extended in place
 * with shifts (srai(slli(v, 8), 8) and srai(v, 8)). Activations are split
 * once per block and shared by the 4 rows of kernels/x86/matvec_tmpl.h. */
#ifndef ML_SSE2_DOT_H
#define ML_SSE2_DOT_H

#include <emmintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/x86/x86_common.h"

/* Activations x[0..15] and x[16..31] as int16: e = even, o = odd elements. */
typedef struct {
    __m128i e0, o0, e1, o1;
    __m128i corr; /* Q4 only: int32 lanes summing to -8 * sum(x) */
} ml_sse2_x;

ML_INLINE void ml_sse2_xprep(ml_sse2_x *xs, const int8_t *xq) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)xq);
    const __m128i x1 = _mm_loadu_si128((const __m128i *)(xq + 16));
    xs->e0 = _mm_srai_epi16(_mm_slli_epi16(x0, 8), 8);
    xs->o0 = _mm_srai_epi16(x0, 8);
    xs->e1 = _mm_srai_epi16(_mm_slli_epi16(x1, 8), 8);
    xs->o1 = _mm_srai_epi16(x1, 8);
}

ML_INLINE void ml_sse2_xprep_q4(ml_sse2_x *xs, const int8_t *xq) {
    ml_sse2_xprep(xs, xq);
    const __m128i s = _mm_add_epi16(_mm_add_epi16(xs->e0, xs->o0), _mm_add_epi16(xs->e1, xs->o1));
    xs->corr = _mm_madd_epi16(s, _mm_set1_epi16(-ML_Q4_OFFSET));
}

/* Q8_0: lanes sum to 256 * sumi. The weights are not sign-extended: w << 8
 * leaves each even byte in the high half of its int16 lane and masking with
 * 0xFF00 keeps the odd byte there, both read as exactly 256 * w. That saves
 * two shifts per 16 bytes; the 256 is undone once per row (MV_POSTSCALE) and,
 * being a power of two, changes no float rounding. No overflow: a lane sums
 * 8 products of at most 127 * 32512 (< 2^25). */
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

/* Q4_0: byte j holds element j (low nibble) and 16 + j (high nibble). Read as
 * int16 lanes, lane k's low byte is element 2k: its nibbles line up with
 * e0/e1, the high byte's with o0/o1. Nibbles are used unsigned (0..15); the
 * "- 8" is the precomputed corr lanes (-8 * sum x). */
ML_INLINE __m128i ml_sse2_dot_q4(const int8_t *w, const ml_sse2_x *xs) {
    const __m128i m = _mm_set1_epi16(0x000F);
    const __m128i v = _mm_loadu_si128((const __m128i *)w);
    const __m128i lo = _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(v, m), xs->e0),
                                     _mm_madd_epi16(_mm_and_si128(_mm_srli_epi16(v, 8), m), xs->o0));
    const __m128i hi = _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), m), xs->e1),
                                     _mm_madd_epi16(_mm_srli_epi16(v, 12), xs->o1));
    return _mm_add_epi32(_mm_add_epi32(lo, hi), xs->corr);
}

#endif
