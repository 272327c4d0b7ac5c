/* AVX-512 VNNI int8 dots and their reductions for the matvec template
 * (kernels/x86/matvec_tmpl.h), steps of 4 blocks.
 *   Q8_0: two blocks per vpdpbusd(0, |x|, w * sign(x)). AVX-512 has no
 *         vpsignb: the sign is a mask of x's negative bytes (shared by the 4
 *         rows) and one masked 0 - w per row. Lanes 0..7: first block, 8..15:
 *         second. A step is 4 blocks (2 dots per row): the 8 dots of the 4
 *         rows reduce to [block c: rows 0..3] in 128-bit chunk c.
 *   Q4_0: four blocks per dot: their 64 nibble bytes load as [A|B|C|D]
 *         (16 bytes each); masking gives the low nibbles (elements 0..15 of
 *         each), a shift the high ones (16..31). The activations of the 4
 *         blocks are rearranged the same way once for the 4 rows, and
 *         vpdpbusd(vpdpbusd(-8 * sum(x) lanes, lo, x lo), hi, x hi) leaves
 *         block c in 128-bit chunk c, so the 4 rows' dots reduce within chunks
 *         straight to [block c: rows 0..3] in chunk c.
 *   Tail (one block): the 256-bit avxvnni dots again, with the EVEX vpdpbusd
 *         (AVX512VL) in place of the VEX one this build may not have.
 * Layouts and float order: kernels/x86/matvec_tmpl.h. */
#ifndef ML_AVX512_DOT_H
#define ML_AVX512_DOT_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/mv256.h"
#include "kernels/x86/x86_common.h"

/* ---- Q8_0 --------------------------------------------------------------- */

typedef struct {
    __m512i a;     /* |x| of 2 blocks */
    __mmask64 neg; /* x < 0 */
} ml_avx512_xq8;

ML_INLINE void ml_avx512_xprep_q8(ml_avx512_xq8 *xs, const int8_t *xq) {
    const __m512i x = _mm512_loadu_si512(xq);
    xs->a = _mm512_abs_epi8(x);
    xs->neg = _mm512_movepi8_mask(x);
}

ML_INLINE __m512i ml_avx512_dot_q8(const int8_t *w, const ml_avx512_xq8 *xs) {
    const __m512i z = _mm512_setzero_si512(), v = _mm512_loadu_si512(w);
    return _mm512_dpbusd_epi32(z, xs->a, _mm512_mask_sub_epi8(v, xs->neg, z, v));
}

/* Per 128-bit chunk c: [sum v0.c, sum v1.c, sum v2.c, sum v3.c]. */
ML_INLINE __m512i ml_avx512_quads(const __m512i *v) {
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
}

/* A step of 4 blocks: 2 dots per row, each with its own activation state. */
typedef struct {
    ml_avx512_xq8 d[2];
} ml_avx512_xq8x2;

ML_INLINE void ml_avx512_xprep4_q8(ml_avx512_xq8x2 *xs, const int8_t *xq) {
    ml_avx512_xprep_q8(&xs->d[0], xq);
    ml_avx512_xprep_q8(&xs->d[1], xq + 2 * ML_QK);
}
/* v[2 * row + dot] -> [block 0: rows 0..3 | block 1 | block 2 | block 3]:
 * per dot, the transpose-and-add over rows leaves chunk c = [rows 0..3] of
 * the dot's chunk c; chunks 0, 1 hold its first block, 2, 3 the second. */
ML_INLINE __m512i ml_avx512_sums4_q8(const __m512i *v) {
    const __m512i a[4] = {v[0], v[2], v[4], v[6]}, c[4] = {v[1], v[3], v[5], v[7]};
    const __m512i u0 = ml_avx512_quads(a), u1 = ml_avx512_quads(c);
    return _mm512_add_epi32(_mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
}

ML_INLINE __m256i ml_avx512_dot1_q8(const int8_t *w, const ml_avx2_x *xs) {
    const __m256i s = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)w), xs->x);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), xs->a, s);
}

/* ---- Q4_0 --------------------------------------------------------------- */

typedef struct {
    __m512i lo, hi; /* x elements 0..15 / 16..31 of blocks A B C D, by chunk */
    __m512i corr;   /* int32 lanes summing to -8 * sum(x), chunk c: block c */
} ml_avx512_xq4;

ML_INLINE void ml_avx512_xprep_q4(ml_avx512_xq4 *xs, const int8_t *xq) {
    const __m512i x0 = _mm512_loadu_si512(xq), x1 = _mm512_loadu_si512(xq + 2 * ML_QK);
    const __m512i z = _mm512_setzero_si512(), eight = _mm512_set1_epi8(ML_Q4_OFFSET);
    xs->lo = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));
    xs->hi = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
    xs->corr = _mm512_sub_epi32(z, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, eight, xs->lo), eight, xs->hi));
}

ML_INLINE __m512i ml_avx512_dot_q4(const int8_t *w, const ml_avx512_xq4 *xs) {
    const __m512i m = _mm512_set1_epi8(0x0F), v = _mm512_loadu_si512(w);
    const __m512i lo = _mm512_and_si512(v, m), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(xs->corr, lo, xs->lo), hi, xs->hi);
}

/* 4 rows' dots -> chunk c: [block c: rows 0..3] */
#define ml_avx512_sums_q4 ml_avx512_quads

/* Chunk j (a constant) of a __m512: the extract needs an immediate. */
#define ML_AVX512_CHUNK(f, j)                                                                      \
    ((j) == 0 ? _mm512_castps512_ps128(f) : (j) == 1 ? _mm512_extractf32x4_ps(f, 1)                \
                                          : (j) == 2 ? _mm512_extractf32x4_ps(f, 2) : _mm512_extractf32x4_ps(f, 3))

ML_INLINE void ml_avx512_xprep1_q4(ml_avx2_x *xs, const int8_t *xq) {
    const __m256i z = _mm256_setzero_si256();
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = _mm256_sub_epi32(z, _mm256_dpbusd_epi32(z, _mm256_set1_epi8(ML_Q4_OFFSET), xs->x));
}

ML_INLINE __m256i ml_avx512_dot1_q4(const int8_t *w, const ml_avx2_x *xs) {
    return _mm256_dpbusd_epi32(xs->a, ml_avx2_nibbles(w), xs->x);
}

#endif
