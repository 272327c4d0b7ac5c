/* The avx2 and avxvnni builds' int8 block dots, the primitives of the x86
 * 4-row bodies (kernels/x86/matvec_body.h lists them; t is the weight type,
 * Q8_0 or Q4_0). The two builds share the layouts and differ in the
 * multiply only: vpmaddubsw + vpmaddwd, or vpdpbusd. That difference is
 * the last section of this file, selected by ML_AVX2_VNNI (1 in
 * kernels/avxvnni/'s files, which define it before including this one).
 *   Q8_0: one 32-element block per 256-bit register; |x| * (w * sign(x))
 *         = x * w, |x| shared by the 4 rows. Pair sums <= 2 * 127 * 127 <
 *         2^15: vpmaddubsw never saturates. The matmul's step (two blocks)
 *         goes in Q4_0's pair order below: the weights' shuffle is shared
 *         by its tokens and a dot needs no lane-crossing add; avxvnni's
 *         matmul gives the weights the unsigned side instead, u = w + 128
 *         (w ^ 0x80, once per row and step, shared by the tile's tokens),
 *         and starts the sum at -128 * sum(x).
 *   Q4_0: two blocks per dot: their 32 nibble bytes (contiguous) load as
 *         [A | B]; masking gives the low nibbles [A 0..15 | B 0..15], a shift
 *         the high ones [A 16..31 | B 16..31]. The activations of the pair
 *         are rearranged the same way once for the 4 rows. The nibbles are
 *         unsigned (value + 8): the sum starts at -8 * sum(x) (corr, once
 *         per step for the 4 rows). The 32-bit lanes of a dot: 0..3 block A,
 *         4..7 block B. A single block (row tail) is loaded into both halves
 *         (vbroadcasti128), the upper half shifted by 4: [elements 0..15 |
 *         16..31]. */
#ifndef ML_AVX2_DOT_H
#define ML_AVX2_DOT_H

#include <immintrin.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

#ifndef ML_AVX2_VNNI
#define ML_AVX2_VNNI 0
#endif

typedef __m256i ml_x86_vi;

#define ML_X86_STEP 2

/* One block's activations: x, and Q8_0: |x|;  Q4_0: int32 lanes summing
 * to -8 * sum(x). */
typedef struct {
    __m256i x, a;
} ml_x86_x1;

/* A step's activations. The matvec's: Q8_0 the two blocks (b), Q4_0 the
 * pair order (lo: [A 0..15 | B 0..15], hi: [A 16..31 | B 16..31]) and
 * corr (int32 lanes summing to a correction per block, lanes 0..3 A, 4..7
 * B). The matmul's: pair order, and avx2 Q8_0: |lo|, |hi|; avxvnni Q8_0
 * and Q4_0: corr. */
typedef struct {
    ml_x86_x1 b[2];
    __m256i lo, hi, alo, ahi, corr;
} ml_x86_x;

typedef ml_x86_x ml_x86_mx;

/* A row's pair of blocks in pair order, prepared once for its dots: Q8_0
 * bytes (avxvnni: + 128), or Q4_0 nibbles. */
typedef struct {
    __m256i lo, hi;
} ml_x86_w;

/* ---- layouts (the same on both builds) ----------------------------------- */

/* Two consecutive 32-byte blocks at p -> pair order */
ML_INLINE void ml_avx2_pair(const int8_t *p, __m256i *lo, __m256i *hi) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)p);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(p + ML_QK));
    *lo = _mm256_permute2x128_si256(a, b, 0x20);
    *hi = _mm256_permute2x128_si256(a, b, 0x31);
}

/* Two Q4_0 blocks (32 bytes) -> low and high nibbles, unsigned, pair order. */
ML_INLINE void ml_avx2_nibbles2(ml_x86_w *wp, const int8_t *w) {
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

/* Within each 128-bit half: [sum v0, sum v1, sum v2, sum v3] of that half. */
ML_INLINE __m256i ml_avx2_quads(const __m256i *v) {
    const __m256i t01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
    const __m256i t23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(t01, t23), _mm256_unpackhi_epi64(t01, t23));
}

/* Two one-block dots (any 8 lanes each) -> a step's dot: [d0 lo + d0 hi |
 * d1 lo + d1 hi]. One lane-crossing shuffle; the blend is cheap. */
ML_INLINE __m256i ml_avx2_join(__m256i d0, __m256i d1) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(d0, d1, 0x21), _mm256_blend_epi32(d0, d1, 0xF0));
}

/* ---- the multiply: avx2 or avxvnni --------------------------------------- */
/* ml_avx2_dp(acc, u, s):  acc + in each int32 lane the 4 products of its
 *                         unsigned bytes u by signed bytes s (where pairs of
 *                         them fit int16: avx2 adds pairs in int16 first)
 * ml_avx2_dp2(acc, u0, s0, u1, s1): the same for two operand pairs whose
 *                         four products also fit int16 (Q4_0: 4 * 15 * 127)
 * ml_avx2_q4corr(x), ml_avx2_q4corr2(lo, hi): int32 lanes summing to
 *                         -8 * sum(x) over each block
 * and the Q8_0 matmul's ml_avx2_mxprep_q8, ml_avx2_wprep_q8, ml_avx2_wdot_q8. */
#if ML_AVX2_VNNI

ML_INLINE __m256i ml_avx2_dp(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }

ML_INLINE __m256i ml_avx2_dp2(__m256i acc, __m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u0, s0), u1, s1);
}

/* -off * sum(x) over each block of the pair (lo, hi) */
ML_INLINE __m256i ml_avx2_negsum2(__m256i lo, __m256i hi, char off) {
    const __m256i z = _mm256_setzero_si256(), o = _mm256_set1_epi8(off);
    return _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, o, lo), o, hi));
}

ML_INLINE __m256i ml_avx2_q4corr2(__m256i lo, __m256i hi) { return ml_avx2_negsum2(lo, hi, ML_Q4_OFFSET); }

ML_INLINE __m256i ml_avx2_q4corr(__m256i x) {
    const __m256i z = _mm256_setzero_si256();
    return _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(z, _mm256_set1_epi8(ML_Q4_OFFSET), x));
}

/* Q8_0 matmul: x signed as it is, the sum starting at -128 * sum(x) */
ML_INLINE void ml_avx2_mxprep_q8(ml_x86_mx *xs, const int8_t *xq) {
    ml_avx2_pair(xq, &xs->lo, &xs->hi);
    xs->corr = ml_avx2_negsum2(xs->lo, xs->hi, (char)0x80);
}

/* Q8_0 matmul: u = w + 128 = w ^ 0x80 */
ML_INLINE void ml_avx2_wprep_q8(ml_x86_w *wp, const int8_t *w) {
    const __m256i off = _mm256_set1_epi8((char)0x80);
    ml_avx2_pair(w, &wp->lo, &wp->hi);
    wp->lo = _mm256_xor_si256(wp->lo, off);
    wp->hi = _mm256_xor_si256(wp->hi, off);
}

ML_INLINE __m256i ml_avx2_wdot_q8(const ml_x86_w *wp, const ml_x86_mx *xs) {
    return ml_avx2_dp2(xs->corr, wp->lo, xs->lo, wp->hi, xs->hi);
}

#else

ML_INLINE __m256i ml_avx2_dp(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

ML_INLINE __m256i ml_avx2_dp2(__m256i acc, __m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), acc);
}

ML_INLINE __m256i ml_avx2_q4corr2(__m256i lo, __m256i hi) {
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(ones, lo), _mm256_maddubs_epi16(ones, hi));
    return _mm256_madd_epi16(s, _mm256_set1_epi16(-ML_Q4_OFFSET));
}

ML_INLINE __m256i ml_avx2_q4corr(__m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), x), _mm256_set1_epi16(-ML_Q4_OFFSET));
}

/* Q8_0 matmul: x and |x| in pair order */
ML_INLINE void ml_avx2_mxprep_q8(ml_x86_mx *xs, const int8_t *xq) {
    ml_avx2_pair(xq, &xs->lo, &xs->hi);
    xs->alo = _mm256_abs_epi8(xs->lo);
    xs->ahi = _mm256_abs_epi8(xs->hi);
}

ML_INLINE void ml_avx2_wprep_q8(ml_x86_w *wp, const int8_t *w) { ml_avx2_pair(w, &wp->lo, &wp->hi); }

/* the step's two halves (elements 0..15 and 16..31 of both blocks), each
 * widened to int32 before they add */
ML_INLINE __m256i ml_avx2_wdot_q8(const ml_x86_w *wp, const ml_x86_mx *xs) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i p0 = _mm256_maddubs_epi16(xs->alo, _mm256_sign_epi8(wp->lo, xs->lo));
    const __m256i p1 = _mm256_maddubs_epi16(xs->ahi, _mm256_sign_epi8(wp->hi, xs->hi));
    return _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
}

#endif

/* ---- the bodies' primitives ---------------------------------------------- */

ML_INLINE void ml_x86_xprep1(ml_x86_x1 *xs, const int8_t *xq, ml_type t) {
    xs->x = _mm256_loadu_si256((const __m256i *)xq);
    xs->a = t == ML_TYPE_Q8_0 ? _mm256_abs_epi8(xs->x) : ml_avx2_q4corr(xs->x);
}

/* One block: Q8_0 |x| * (w * sign(x)) (w = 0 where x = 0), Q4_0 nibbles
 * times x from -8 * sum(x). */
ML_INLINE __m256i ml_x86_dot1(const int8_t *w, const ml_x86_x1 *xs, ml_type t) {
    if (t == ML_TYPE_Q8_0)
        return ml_avx2_dp(_mm256_setzero_si256(), xs->a, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)w), xs->x));
    return ml_avx2_dp(xs->a, ml_avx2_nibbles(w), xs->x);
}

ML_INLINE void ml_x86_xprep(ml_x86_x *xs, const int8_t *xq, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        ml_x86_xprep1(&xs->b[0], xq, t);
        ml_x86_xprep1(&xs->b[1], xq + ML_QK, t);
        return;
    }
    ml_avx2_pair(xq, &xs->lo, &xs->hi);
    xs->corr = ml_avx2_q4corr2(xs->lo, xs->hi);
}

ML_INLINE void ml_x86_mxprep(ml_x86_mx *xs, const int8_t *xq, ml_type t) {
    if (t == ML_TYPE_Q8_0)
        ml_avx2_mxprep_q8(xs, xq);
    else
        ml_x86_xprep(xs, xq, t);
}

ML_INLINE void ml_x86_wprep(ml_x86_w *wp, const int8_t *w, ml_type t) {
    if (t == ML_TYPE_Q8_0)
        ml_avx2_wprep_q8(wp, w);
    else
        ml_avx2_nibbles2(wp, w);
}

ML_INLINE __m256i ml_x86_wdot(const ml_x86_w *wp, const ml_x86_mx *xs, ml_type t) {
    if (t == ML_TYPE_Q8_0) return ml_avx2_wdot_q8(wp, xs);
    return ml_avx2_dp2(xs->corr, wp->lo, xs->lo, wp->hi, xs->hi);
}

/* The matvec's step dot: Q8_0 block by block (no shuffle of the weights,
 * which serve one token only), Q4_0 as the matmul's. */
ML_INLINE __m256i ml_x86_dot(const int8_t *w, const ml_x86_x *xs, ml_type t) {
    if (t == ML_TYPE_Q8_0) return ml_avx2_join(ml_x86_dot1(w, &xs->b[0], t), ml_x86_dot1(w + ML_QK, &xs->b[1], t));
    ml_x86_w wp;
    ml_x86_wprep(&wp, w, t);
    return ml_x86_wdot(&wp, xs, t);
}

/* The 4 rows' step dots -> [block 0: sumi rows 0..3 | block 1: rows 0..3] */
ML_INLINE __m256i ml_x86_block_sums(const __m256i *v) { return ml_avx2_quads(v); }

/* The 4 rows' one-block dots -> [sumi row 0, .., row 3] */
ML_INLINE __m128i ml_x86_reduce4(const __m256i *v) {
    const __m256i u = ml_avx2_quads(v);
    return _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}

/* acc + (float)sumi(block j) * s[j] for the step's blocks in order: the
 * canonical multiply, then add, one block at a time (lanes = rows). */
ML_INLINE __m128 ml_x86_madd(__m128 acc, __m256i sumi, const __m128 *s) {
    const __m256 f = _mm256_cvtepi32_ps(sumi);
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm256_castps256_ps128(f), s[0]));
    return _mm_add_ps(acc, _mm_mul_ps(_mm256_extractf128_ps(f, 1), s[1]));
}

/* 4 consecutive block scales as floats: fp16 by F16C's vcvtph2ps (exact,
 * the bits of ml_f16_to_f32). */
ML_INLINE __m128 ml_x86_ld4s(const void *d, ml_type st) {
    if (st == ML_TYPE_F32) return _mm_loadu_ps((const float *)d);
    return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)d));
}

#endif
