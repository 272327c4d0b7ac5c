/* AVX-512 VNNI int8 layouts and reductions shared by the Q8_0 and Q4_0
 * kernels (kernels/avx512vnni/matvec_q*.c) of the 16-row matvec body
 * (matvec16.h). A step is 4 blocks of a row, in the Q4_0 nibble layout for
 * both formats: register lo holds elements 0..15 of blocks A B C D (one
 * 128-bit chunk each), hi elements 16..31; the activations are arranged the
 * same way once per step, and vpdpbusd(vpdpbusd(corr, w lo, x lo), w hi,
 * x hi) leaves each block's partial sums in its chunk (4 int32 lanes). The
 * weights go in unsigned (value + off); corr = -off * x per lane depends on
 * x only: once per step for the 16 rows. Exact for any int8 x and weights
 * (vpdpbusd wraps, never saturates, and the true sums fit). */
#ifndef ML_AVX512_DOT_H
#define ML_AVX512_DOT_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* Per 128-bit chunk c: [sum v0.c, sum v1.c, sum v2.c, sum v3.c]. */
ML_INLINE __m512i ml_avx512_quads(const __m512i *v) {
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
}

/* 4x4 transpose of 128-bit chunks: o[c] = [a.c, b.c, c.c, d.c]. */
ML_INLINE void ml_avx512_chunks4x4(__m512i *o, __m512i a, __m512i b, __m512i c, __m512i d) {
    const __m512i p = _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)); /* a0 a1 b0 b1 */
    const __m512i q = _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)); /* a2 a3 b2 b3 */
    const __m512i r = _mm512_shuffle_i32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)); /* c0 c1 d0 d1 */
    const __m512i s = _mm512_shuffle_i32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)); /* c2 c3 d2 d3 */
    o[0] = _mm512_shuffle_i32x4(p, r, _MM_SHUFFLE(2, 0, 2, 0));
    o[1] = _mm512_shuffle_i32x4(p, r, _MM_SHUFFLE(3, 1, 3, 1));
    o[2] = _mm512_shuffle_i32x4(q, s, _MM_SHUFFLE(2, 0, 2, 0));
    o[3] = _mm512_shuffle_i32x4(q, s, _MM_SHUFFLE(3, 1, 3, 1));
}

/* 16 rows' dots (chunk c: block c) -> s[c] = [block c: sumi of rows 0..15] */
ML_INLINE void ml_avx512_sums16(const __m512i *v, __m512i *s) {
    const __m512i t0 = ml_avx512_quads(v), t1 = ml_avx512_quads(v + 4);
    const __m512i t2 = ml_avx512_quads(v + 8), t3 = ml_avx512_quads(v + 12);
    ml_avx512_chunks4x4(s, t0, t1, t2, t3);
}

/* The first n bytes of a 64-byte load, the rest zeros (n <= 0: nothing is
 * read; masked-off bytes never fault). */
ML_INLINE __m512i ml_avx512_load_n(const int8_t *p, int n) {
    if (n >= 64) return _mm512_loadu_si512(p);
    if (n <= 0) return _mm512_setzero_si512();
    return _mm512_maskz_loadu_epi8(((__mmask64)1 << n) - 1, p);
}

/* [A|B] [C|D] (32 bytes per block) -> lo: elements 0..15 of A B C D, hi:
 * 16..31, by chunk. */
ML_INLINE void ml_avx512_split4(__m512i *lo, __m512i *hi, __m512i ab, __m512i cd) {
    *lo = _mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(2, 0, 2, 0));
    *hi = _mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(3, 1, 3, 1));
}

/* A step's activations: 4 blocks in the lo/hi layout and the int32 lanes
 * -off * (their x), off the unsigned weights' offset (128 or 8). */
typedef struct {
    __m512i lo, hi, corr;
} ml_avx512_x4;

/* n (1..4) blocks at xq; missing blocks are zeros */
ML_INLINE void ml_avx512_xprep4(ml_avx512_x4 *xs, const int8_t *xq, int n, char off) {
    const __m512i z = _mm512_setzero_si512(), o = _mm512_set1_epi8(off);
    ml_avx512_split4(&xs->lo, &xs->hi, ml_avx512_load_n(xq, n * ML_QK), ml_avx512_load_n(xq + 2 * ML_QK, n * ML_QK - 2 * ML_QK));
    xs->corr = _mm512_sub_epi32(z, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, o, xs->lo), o, xs->hi));
}

/* One row's 4 blocks: vpdpbusd(vpdpbusd(corr, w lo, x lo), w hi, x hi),
 * w lo / hi unsigned; block c in chunk c, exactly sum w x per chunk. */
ML_INLINE __m512i ml_avx512_dot4(__m512i lo, __m512i hi, const ml_avx512_x4 *xs) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(xs->corr, lo, xs->lo), hi, xs->hi);
}

#endif
