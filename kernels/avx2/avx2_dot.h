/* AVX2 int8 block layouts shared by the avx2 and avxvnni matvec kernels
 * (kernels/avx2/matvec_q*.c, kernels/avxvnni/matvec_q*.c), which differ in
 * the multiply only (vpmaddubsw + vpmaddwd, or vpdpbusd):
 *   Q8_0: one 32-element block per 256-bit register; |x| * (w * sign(x))
 *         = x * w, |x| shared by the 4 rows. The matmul's step (two
 *         blocks) goes in Q4_0's pair order below: the weights' shuffle is
 *         shared by its tokens and a dot needs no lane-crossing add.
 *   Q4_0: two blocks per dot: their 32 nibble bytes (contiguous) load as
 *         [A | B]; masking gives the low nibbles [A 0..15 | B 0..15], a shift
 *         the high ones [A 16..31 | B 16..31]. The activations of the pair
 *         are rearranged the same way once for the 4 rows. The 32-bit lanes
 *         of a dot: 0..3 block A, 4..7 block B. A single block (row tail) is
 *         loaded into both halves (vbroadcasti128), the upper half shifted
 *         by 4: [elements 0..15 | 16..31]. */
#ifndef ML_AVX2_DOT_H
#define ML_AVX2_DOT_H

#include <immintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* One block's activations: x, and Q8: |x|;  Q4: int32 lanes summing to
 * -8 * sum(x). */
typedef struct {
    __m256i x, a;
} ml_avx2_x;

/* A pair of blocks' activations: [A 0..15 | B 0..15], [A 16..31 |
 * B 16..31] and int32 lanes summing to a correction per block (lanes 0..3 A,
 * 4..7 B): Q4_0 -8 * sum(x), avxvnni Q8_0 -128 * sum(x). */
typedef struct {
    __m256i lo, hi, corr;
} ml_avx2_x2;

/* A Q8_0 step's activations: two blocks' x and |x|. */
typedef struct {
    ml_avx2_x b[2];
} ml_avx2_xq8;

/* The same in pair order (as ml_avx2_x2): x and |x|. */
typedef struct {
    __m256i lo, hi, alo, ahi;
} ml_avx2_xq8p;

/* A row's pair of blocks in pair order, prepared once for its dots: Q8_0
 * bytes [A 0..15 | B 0..15], [A 16..31 | B 16..31], or Q4_0 nibbles. */
typedef struct {
    __m256i lo, hi;
} ml_avx2_w2;

/* Two consecutive 32-byte blocks at p -> pair order */
ML_INLINE void ml_avx2_pair(const int8_t *p, __m256i *lo, __m256i *hi) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)p);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(p + ML_QK));
    *lo = _mm256_permute2x128_si256(a, b, 0x20);
    *hi = _mm256_permute2x128_si256(a, b, 0x31);
}

ML_INLINE void ml_avx2_xprep_q8(ml_avx2_x *xs, const int8_t *xq) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = _mm256_abs_epi8(xs->x);
}

/* Q8_0: w * sign(x), a row's signed operand against |x| (x * w = |x| *
 * (w * sign(x)), w = 0 where x = 0). */
ML_INLINE __m256i ml_avx2_wsign(const int8_t *w, const ml_avx2_x *xs) {
    return _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)w), xs->x);
}

ML_INLINE void ml_avx2_xprep2_q8(ml_avx2_xq8 *xs, const int8_t *xq) {
    ml_avx2_xprep_q8(&xs->b[0], xq);
    ml_avx2_xprep_q8(&xs->b[1], xq + ML_QK);
}

ML_INLINE void ml_avx2_xprep2_q8p(ml_avx2_xq8p *xs, const int8_t *xq) {
    ml_avx2_pair(xq, &xs->lo, &xs->hi);
    xs->alo = _mm256_abs_epi8(xs->lo);
    xs->ahi = _mm256_abs_epi8(xs->hi);
}

/* The lo and hi fields of a pair (corr is left to the caller). */
ML_INLINE void ml_avx2_xpair(ml_avx2_x2 *xs, const int8_t *xq) { ml_avx2_pair(xq, &xs->lo, &xs->hi); }

/* Two Q4_0 blocks (32 bytes) -> low and high nibbles, unsigned, pair order. */
ML_INLINE void ml_avx2_nibbles2(ml_avx2_w2 *wp, const int8_t *w) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i v = _mm256_loadu_si256((const __m256i *)w);
    wp->lo = _mm256_and_si256(v, m);
    wp->hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
}

/* One Q4_0 block (16 bytes) -> its 32 unsigned nibbles in element order. */
ML_INLINE __m256i ml_avx2_nibbles(const int8_t *w) {
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)w));
    return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

#endif
