/* The avx512vnni build's int8 primitives, for its own 16-row bodies
 * (matvec_body.h, matmul_body.h: 16 rows in the 16 lanes of a vector, so no
 * row's dot is ever summed horizontally alone). Weights always go in as
 * vpdpbusd's unsigned operand (value + off: Q8_0 w ^ 0x80, Q4_0 the stored
 * nibbles), and every sum starts at -off * sum(x), which depends on x only.
 * Exact for any int8 x and weights (vpdpbusd wraps, never saturates, and
 * the true sums fit).
 * The matvec's step is 4 blocks of a row, in the Q4_0 nibble layout for
 * both formats: register lo holds elements 0..15 of blocks A B C D (one
 * 128-bit chunk each), hi elements 16..31; the activations are arranged the
 * same way once per step for the 16 rows, and vpdpbusd(vpdpbusd(corr, w lo,
 * x lo), w hi, x hi) leaves each block's partial sums in its chunk (4 int32
 * lanes). */
#ifndef ML_AVX512_DOT_H
#define ML_AVX512_DOT_H

#include <immintrin.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "core/tune.h"
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

/* ---- the 16-row bodies' primitives (matvec_body.h, matmul_body.h), for
 * weights of type t (ML_TYPE_Q8_0 or ML_TYPE_Q4_0, a constant after
 * inlining) ---------------------------------------------------------------- */

/* Row i of a group of nr: missing rows repeat the last one (computed,
 * never stored), so every lane does the same arithmetic whatever the split. */
ML_INLINE size_t ml_avx512_row(int i, int nr) { return (size_t)(i < nr ? i : nr - 1); }

/* Bytes of one weight block. */
ML_INLINE size_t ml_avx512_wbytes(ml_type t) { return t == ML_TYPE_Q4_0 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES; }

/* What vpdpbusd's unsigned operand adds to each weight: Q8_0 goes in as
 * w ^ 0x80 = w + 128, Q4_0 as its stored nibbles, value + 8. */
ML_INLINE int ml_avx512_off(ml_type t) { return t == ML_TYPE_Q4_0 ? ML_Q4_OFFSET : 128; }

/* How many rows ahead the matvec prefetches, into L2 (ML_STREAM_L2) or L1
 * (ML_STREAM_L1, the Zen 5 streaming; core/tune.h). Into L2 (the Intel Xeon host, where it
 * streamed 7-16% (Q4_0) and 6-11% (Q8_0) more than the same prefetches into
 * L1): Q8_0 half a group (a whole one, 32 KiB of quants at dim 2048,
 * crowded that CPU's 48 KiB L1 when the prefetches went there; into L2, 16
 * and 32 rows are within the noise of 8); Q4_0 the next group (16 KiB at
 * dim 2048; half a group ahead was 2-10% slower). Into L1 on Zen 5 (48 KiB
 * too): the next group for both, the best of 4 to 32 rows in the access
 * pattern alone (docs/PERF.md "AMD Zen 5, row runs"). */
ML_INLINE size_t ml_avx512_pf_rows(ml_type t, int mode) { return t == ML_TYPE_Q4_0 || mode == ML_STREAM_L1 ? 16 : 8; }

/* Prefetch weight line p as streaming mode says (core/tune.h, a constant
 * after inlining): into L1, into L2, or not at all. */
ML_INLINE void ml_avx512_pf(uintptr_t p, int mode) {
    if (mode == ML_STREAM_L1)
        _mm_prefetch((const char *)p, _MM_HINT_T0);
    else if (mode == ML_STREAM_L2)
        _mm_prefetch((const char *)p, _MM_HINT_T1);
}

/* Prefetch scale line p into L1 (a tenth as many lines as the weights';
 * into L2 they were no faster), unless mode leaves streaming to the
 * hardware. */
ML_INLINE void ml_avx512_pf_scales(uintptr_t p, int mode) {
    if (mode != ML_STREAM_HW) _mm_prefetch((const char *)p, _MM_HINT_T0);
}

/* A step's activations: n (1..4) blocks at xq (missing blocks are zeros). */
ML_INLINE void ml_avx512_xprep(ml_avx512_x4 *xs, const int8_t *xq, int n, ml_type t) {
    ml_avx512_xprep4(xs, xq, n, (char)ml_avx512_off(t));
}

/* A row's step (w: its first block) as the unsigned lo/hi operands of
 * ml_avx512_dot4; ml_avx512_dot: its dot, block c's partial sums in
 * chunk c. Q8_0: 128 bytes per row, two loads, their halves regrouped (two
 * shuffles) into the lo/hi layout, flipped to unsigned. Q4_0: 64 bytes per
 * row: masking gives the low nibbles, a shift the high ones, already in the
 * lo/hi layout. */
ML_INLINE void ml_avx512_wload(__m512i *lo, __m512i *hi, const int8_t *w, int n, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        const __m512i f = _mm512_set1_epi8((char)0x80);
        ml_avx512_split4(lo, hi, _mm512_xor_si512(ml_avx512_load_n(w, n * ML_QK), f),
                         _mm512_xor_si512(ml_avx512_load_n(w + 2 * ML_QK, n * ML_QK - 2 * ML_QK), f));
        return;
    }
    /* byte j of a block: low nibble element j, high nibble 16 + j */
    const __m512i m = _mm512_set1_epi8(0x0F), v = ml_avx512_load_n(w, n * ML_Q4_BLOCK_BYTES);
    *lo = _mm512_and_si512(v, m);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
}

ML_INLINE __m512i ml_avx512_dot(const int8_t *w, int n, const ml_avx512_x4 *xs, ml_type t) {
    __m512i lo, hi;
    ml_avx512_wload(&lo, &hi, w, n, t);
    return ml_avx512_dot4(lo, hi, xs);
}

/* One block of 16 rows (g[i]: row i's block): two rows per register, row k
 * in the low half and k + 8 in the high one, against [x | x]; returns
 * [sumi of rows 0..15]. */
ML_INLINE __m512i ml_avx512_dot16_q8(const int8_t *const *g, const int8_t *xq) {
    const __m512i z = _mm512_setzero_si512(), f = _mm512_set1_epi8((char)0x80);
    const __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xq));
    const __m512i corr = _mm512_sub_epi32(z, _mm512_dpbusd_epi32(z, f, x));
    __m512i v[8];
    ML_UNROLL for (int k = 0; k < 8; k++) {
        const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)g[k])),
                                             _mm256_loadu_si256((const __m256i *)g[k + 8]), 1);
        v[k] = _mm512_dpbusd_epi32(corr, _mm512_xor_si512(w, f), x);
    }
    /* chunk c of t0: rows 0..3 (c = 0, 1: the two halves of the block) and
     * 8..11 (c = 2, 3); t1: rows 4..7 and 12..15 */
    const __m512i t0 = ml_avx512_quads(v), t1 = ml_avx512_quads(v + 4);
    const __m512i u = _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_shuffle_i32x4(u, u, _MM_SHUFFLE(3, 1, 2, 0)); /* [0..3 8..11 4..7 12..15] -> rows */
}

/* One block of 16 rows (g[i]: row i's 16 bytes): register j holds rows j,
 * 4 + j, 8 + j, 12 + j in its chunks, against the block's x broadcast to
 * every chunk; returns [sumi of rows 0..15]. */
ML_INLINE __m512i ml_avx512_dot16_q4(const int8_t *const *g, const int8_t *xq) {
    const __m512i z = _mm512_setzero_si512(), m = _mm512_set1_epi8(0x0F), o = _mm512_set1_epi8(ML_Q4_OFFSET);
    const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)xq));
    const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xq + ML_Q4_BLOCK_BYTES)));
    const __m512i corr = _mm512_sub_epi32(z, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, o, xlo), o, xhi));
    __m512i v[4];
    ML_UNROLL for (int j = 0; j < 4; j++) {
        __m512i w = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)g[j]));
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)g[4 + j]), 1);
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)g[8 + j]), 2);
        w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)g[12 + j]), 3);
        const __m512i lo = _mm512_and_si512(w, m), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m);
        v[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(corr, lo, xlo), hi, xhi);
    }
    return ml_avx512_quads(v); /* chunk c: rows 4c .. 4c + 3 */
}

/* One block of 16 rows (g[i]: row i's block) -> [sumi of rows 0..15] */
ML_INLINE __m512i ml_avx512_dot16(const int8_t *const *g, const int8_t *xq, ml_type t) {
    return t == ML_TYPE_Q8_0 ? ml_avx512_dot16_q8(g, xq) : ml_avx512_dot16_q4(g, xq);
}

/* The matmul's weights: a row's block as 32 unsigned bytes w + off: Q8_0 flipped, Q4_0 unpacked
 * (low nibbles are elements 0..15, high 16..31). Two rows per call, a | b. */
ML_INLINE __m512i ml_avx512_ublock2(const int8_t *a, const int8_t *b, ml_type t) {
    if (t == ML_TYPE_Q8_0)
        return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                                                    _mm256_loadu_si256((const __m256i *)b), 1),
                                _mm512_set1_epi8((char)0x80));
    /* [a a b b] by chunk, then chunks 1 and 3 shifted to their high nibbles */
    const __m512i v = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b)), 1);
    const __m512i sh = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi64(v, sh), _mm512_set1_epi8(0x0F));
}

/* The 4 activation bytes at p in every int32 lane (vpdpbusd's signed operand). */
ML_INLINE __m512i ml_avx512_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* Lane b: -off * (sum of block b's 32 activations), for the 16 blocks
 * whose quants q[0..7] hold (zeros past the last): one tree of adds. */
ML_INLINE __m512i ml_avx512_xsums16(const __m512i *q, ml_type t) {
    const __m512i z = _mm512_setzero_si512(), o = _mm512_set1_epi8((char)ml_avx512_off(t));
    /* block b's sum sits at lane (b & 8) + 4 (b & 1) + (b & 7) / 2 */
    const __m512i perm = _mm512_set_epi32(15, 11, 14, 10, 13, 9, 12, 8, 7, 3, 6, 2, 5, 1, 4, 0);
    __m512i v[8]; /* lanes 0..7: block 2k's partial sums, 8..15: 2k + 1's */
    ML_UNROLL for (int k = 0; k < 8; k++) v[k] = _mm512_dpbusd_epi32(z, o, q[k]);
    const __m512i q0 = ml_avx512_quads(v), q1 = ml_avx512_quads(v + 4);
    const __m512i e = _mm512_add_epi32(_mm512_shuffle_i32x4(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_sub_epi32(z, _mm512_permutexvar_epi32(perm, e));
}

/* ---- the interleaved layout (core/pack.h, ML_LAYOUT_R16) ---------------- */

/* Block b of a packed group, at p (16 * bpb bytes), as 8 vectors: w[j],
 * lane i = row i's unsigned weights of elements 4j .. 4j + 3 (Q8_0 flipped
 * to w + 128; Q4_0's low nibbles are elements 4j.. of vector j < 4, its high
 * ones 16 + 4j.. of vector 4 + j): the operands of vpdpbusd against the
 * block's activation bytes 4j .. 4j + 3 broadcast (ml_avx512_bcast4). */
ML_INLINE void ml_avx512_r16_block(__m512i *w, const int8_t *p, ml_type t) {
    if (t == ML_TYPE_Q8_0) {
        const __m512i f = _mm512_set1_epi8((char)0x80);
        ML_UNROLL for (int j = 0; j < 8; j++) w[j] = _mm512_xor_si512(_mm512_loadu_si512(p + 64 * j), f);
        return;
    }
    const __m512i m = _mm512_set1_epi8(0x0F);
    ML_UNROLL for (int j = 0; j < 4; j++) {
        const __m512i v = _mm512_loadu_si512(p + 64 * j);
        w[j] = _mm512_and_si512(v, m);
        w[4 + j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
    }
}

/* Scales i .. i + 15 of d (lanes of m; the others 0.0f, not read), of
 * type st: fp32, or fp16 converted exactly by vcvtph2ps. */
ML_INLINE __m512 ml_avx512_ld16s(const void *d, size_t i, __mmask16 m, ml_type st) {
    if (st == ML_TYPE_F32) return _mm512_maskz_loadu_ps(m, (const float *)d + i);
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)d + i));
}

#endif
