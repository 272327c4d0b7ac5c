/* y = W x, Q8_0 weights, AVX-512 VNNI: 4 blocks per row per step, 128 bytes
 * per row: two loads, their halves regrouped (two shuffles) into avx512_dot.h's
 * lo/hi layout. The weights go unsigned as w ^ 0x80 = w + 128, so no sign
 * handling: corr = -128 * x per lane makes the sum exact. In the 16-row body
 * matvec16.h. */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES
/* Prefetch half a group ahead: a whole one (32 KiB of quants at dim 2048)
 * crowds the 48 KiB L1; TinyLlama decode was 6-17% slower with it. */
#define MV_PF_ROWS 8

typedef ml_avx512_x4 mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq, int n) {
    ml_avx512_xprep4(xs, xq, n, (char)0x80);
}

ML_INLINE __m512i mv_dot(const int8_t *w, int n, const mv_x *xs) {
    const __m512i f = _mm512_set1_epi8((char)0x80);
    __m512i lo, hi;
    ml_avx512_split4(&lo, &hi, _mm512_xor_si512(ml_avx512_load_n(w, n * ML_QK), f),
                     _mm512_xor_si512(ml_avx512_load_n(w + 2 * ML_QK, n * ML_QK - 2 * ML_QK), f));
    return ml_avx512_dot4(lo, hi, xs);
}

/* One block of 16 rows (g[i]: row i's block): two rows per register, row k
 * in the low half and k + 8 in the high one, against [x | x]; returns
 * [sumi of rows 0..15]. */
ML_INLINE __m512i mv_dot16(const int8_t *const *g, const int8_t *xq) {
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

#include "kernels/avx512vnni/matvec16.h"

void ml_k_matvec_q8_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv16_matvec(y, W, x, r0, r1);
}
