/* y = W x, Q4_0 weights, AVX-512 VNNI: 4 blocks per row per step, 64 bytes
 * per row: masking gives the low nibbles, a shift the high ones, already in
 * avx512_dot.h's lo/hi layout; unsigned (value + 8): corr = -8 * x per lane.
 * Chained vpdpbusd in the 16-row body matvec16.h. */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV_WBYTES ML_Q4_BLOCK_BYTES
/* Prefetch the next group (16 KiB of quants at dim 2048); half a group
 * ahead was 2-10% slower on TinyLlama decode. */
#define MV_PF_ROWS 16

typedef ml_avx512_x4 mv_x;

ML_INLINE void mv_xprep(mv_x *xs, const int8_t *xq, int n) {
    ml_avx512_xprep4(xs, xq, n, ML_Q4_OFFSET);
}

/* Byte j of a block: low nibble element j, high nibble 16 + j. */
ML_INLINE __m512i mv_dot(const int8_t *w, int n, const mv_x *xs) {
    const __m512i m = _mm512_set1_epi8(0x0F), v = ml_avx512_load_n(w, n * ML_Q4_BLOCK_BYTES);
    return ml_avx512_dot4(_mm512_and_si512(v, m), _mm512_and_si512(_mm512_srli_epi16(v, 4), m), xs);
}

/* One block of 16 rows (g[i]: row i's 16 bytes): register j holds rows j,
 * 4 + j, 8 + j, 12 + j in its chunks, against the block's x broadcast to
 * every chunk; returns [sumi of rows 0..15]. */
ML_INLINE __m512i mv_dot16(const int8_t *const *g, const int8_t *xq) {
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

#include "kernels/avx512vnni/matvec16.h"

void ml_k_matvec_q4_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv16_matvec(y, W, x, r0, r1);
}
