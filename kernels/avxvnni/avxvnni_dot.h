/* AVX-VNNI int8 block dots: vpdpbusd (VEX) multiplies unsigned by signed
 * bytes and adds groups of 4 into int32 lanes in one instruction, replacing
 * avx2's vpmaddubsw + vpmaddwd pair (and its int16 intermediate).
 *   Q8_0: vpdpbusd(0, |x|, w * sign(x)); |x| shared by the 4 rows.
 *   Q4_0: two blocks per dot in avx2's pair layout: vpdpbusd(vpdpbusd(
 *         -8 * sum(x) lanes, low nibbles, x lo), high nibbles, x hi): the
 *         accumulator starts at the "- 8" correction, so it costs nothing
 *         per row, and the two halves chain without a separate add.
 * Nibble unpacking and the activation state are avx2's (avx2_dot.h). */
#ifndef ML_AVXVNNI_DOT_H
#define ML_AVXVNNI_DOT_H

#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx2/avx2_dot.h"

/* Q8: the same state as avx2 (x and |x|). */
#define ml_avxvnni_xprep_q8 ml_avx2_xprep_q8

ML_INLINE __m256i ml_avxvnni_dot_q8(const int8_t *w, const ml_avx2_x *xs) {
    const __m256i s = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)w), xs->x);
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), xs->a, s);
}

ML_INLINE void ml_avxvnni_xprep_q4(ml_avx2_x *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    const __m256i s8 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(ML_Q4_OFFSET), xs->x);
    xs->a = _mm256_sub_epi32(_mm256_setzero_si256(), s8);
}

ML_INLINE __m256i ml_avxvnni_dot_q4(const int8_t *w, const ml_avx2_x *xs) {
    return _mm256_dpbusd_avx_epi32(xs->a, ml_avx2_nibbles(w), xs->x);
}

ML_INLINE void ml_avxvnni_xprep2_q4(ml_avx2_x2 *xs, const int8_t *xq) {
    const __m256i z = _mm256_setzero_si256(), eight = _mm256_set1_epi8(ML_Q4_OFFSET);
    ml_avx2_xpair(xs, xq);
    xs->corr = _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, eight, xs->lo), eight, xs->hi));
}

ML_INLINE __m256i ml_avxvnni_dot2_q4(const int8_t *w, const ml_avx2_x2 *xs) {
    __m256i lo, hi;
    ml_avx2_nibbles2(w, &lo, &hi);
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(xs->corr, lo, xs->lo), hi, xs->hi);
}

#endif
