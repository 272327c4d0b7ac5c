/* AVX2 int8 block dots: one 32-element block per 256-bit register.
 *   Q8_0: |x| * (w * sign(x)) through vpmaddubsw (as sse41, twice as wide);
 *         |x| is shared by the 4 rows. Pair sums <= 2 * 127 * 127 < 2^15.
 *   Q4_0: two blocks per dot: their 32 nibble bytes (contiguous) load as
 *         [A | B]; masking gives the low nibbles [A 0..15 | B 0..15], a shift
 *         the high ones [A 16..31 | B 16..31]. The activations of the pair
 *         are rearranged the same way once for the 4 rows. Unsigned nibbles
 *         times x via vpmaddubsw, minus 8 * sum(x) per block (precomputed).
 *         The 32-bit lanes of a dot: 0..3 block A, 4..7 block B. A single
 *         block (row tail) is loaded into both halves (vbroadcasti128), the
 *         upper half shifted by 4: [elements 0..15 | 16..31].
 * The avxvnni and avx512vnni builds reuse the layout helpers here. */
#ifndef ML_AVX2_DOT_H
#define ML_AVX2_DOT_H

#include <immintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

typedef struct {
    __m256i x; /* the block's 32 activations */
    __m256i a; /* Q8: |x|;  Q4: int32 lanes summing to -8 * sum(x) */
} ml_avx2_x;

/* Q4_0 pair state: activations [A 0..15 | B 0..15], [A 16..31 | B 16..31]
 * and int32 lanes summing to -8 * sum(x) per block (lanes 0..3 A, 4..7 B). */
typedef struct {
    __m256i lo, hi, corr;
} ml_avx2_x2;

ML_INLINE void ml_avx2_xpair(ml_avx2_x2 *xs, const int8_t *xq) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)xq);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(xq + ML_QK));
    xs->lo = _mm256_permute2x128_si256(a, b, 0x20);
    xs->hi = _mm256_permute2x128_si256(a, b, 0x31);
}

/* Two Q4_0 blocks (32 bytes) -> low and high nibbles, unsigned, pair order. */
ML_INLINE void ml_avx2_nibbles2(const int8_t *w, __m256i *lo, __m256i *hi) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i v = _mm256_loadu_si256((const __m256i *)w);
    *lo = _mm256_and_si256(v, m);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
}

/* One Q4_0 block (16 bytes) -> its 32 unsigned nibbles in element order. */
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

ML_INLINE void ml_avx2_xprep2_q4(ml_avx2_x2 *xs, const int8_t *xq) {
    const __m256i ones = _mm256_set1_epi8(1);
    ml_avx2_xpair(xs, xq);
    const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(ones, xs->lo), _mm256_maddubs_epi16(ones, xs->hi));
    xs->corr = _mm256_madd_epi16(s, _mm256_set1_epi16(-ML_Q4_OFFSET));
}

ML_INLINE __m256i ml_avx2_dot2_q4(const int8_t *w, const ml_avx2_x2 *xs) {
    __m256i lo, hi;
    ml_avx2_nibbles2(w, &lo, &hi);
    /* each int16 <= 2 * 2 * 15 * 127: the two halves add without overflow */
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xs->lo), _mm256_maddubs_epi16(hi, xs->hi));
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), xs->corr);
}

#endif
