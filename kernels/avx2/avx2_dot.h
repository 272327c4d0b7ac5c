/* AVX2 int8 block dots: one 32-element block per 256-bit register.
 *   Q8_0: |x| * (w * sign(x)) through vpmaddubsw (as sse41, twice as wide);
 *         |x| is shared by the 4 rows. Pair sums <= 2 * 127 * 127 < 2^15.
 *   Q4_0: the 16 nibble bytes are loaded into both halves (vbroadcasti128, a
 *         pure load), the upper half shifted by 4 (vpsrlvd), masked to 0..15:
 *         [elements 0..15 | 16..31], the activations' own order. Unsigned
 *         nibbles times x via vpmaddubsw, minus 8 * sum(x) per block
 *         (precomputed for the 4 rows).
 * The avxvnni build reuses the layout helpers here (it has AVX2 too). */
#ifndef ML_AVX2_DOT_H
#define ML_AVX2_DOT_H

#include <immintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/x86/x86_common.h"

typedef struct {
    __m256i x; /* the block's 32 activations */
    __m256i a; /* Q8: |x|;  Q4: int32 lanes summing to -8 * sum(x) */
} ml_avx2_x;

/* Q4_0 block (16 bytes) -> its 32 unsigned nibbles in element order. */
ML_INLINE __m256i ml_avx2_nibbles(const int8_t *w) {
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)w));
    return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

ML_INLINE void ml_avx2_xprep_q8(ml_avx2_x *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = _mm256_abs_epi8(xs->x);
}

ML_INLINE __m256i ml_avx2_dot_q8(const int8_t *w, const ml_avx2_x *xs) {
    const __m256i s = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)w), xs->x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(xs->a, s), _mm256_set1_epi16(1));
}

ML_INLINE void ml_avx2_xprep_q4(ml_avx2_x *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xs->x), _mm256_set1_epi16(-ML_Q4_OFFSET));
}

ML_INLINE __m256i ml_avx2_dot_q4(const int8_t *w, const ml_avx2_x *xs) {
    const __m256i p = _mm256_maddubs_epi16(ml_avx2_nibbles(w), xs->x); /* pairs <= 2 * 15 * 127 */
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), xs->a);
}

#endif
