/* Register tiles of the avx512vnni matmul (matmul.c): 16 rows in the 16
 * int32 / float lanes, a few tokens per pass, so that no (row, token) dot is
 * ever summed horizontally.
 *
 * A weight block of 16 rows is transposed once per call into 8 vectors:
 * vector j, lane i = row i's bytes 4j .. 4j+3 (signed; Q4_0 unpacked to
 * value - 8). A token's block then costs 8 vpdpbusd of those vectors by its
 * 4 activation bytes 4j .. 4j+3 broadcast to every lane: lane i ends with
 * row i's block dot, for 16 rows at once, with no shuffle. vpdpbusd wants
 * one operand unsigned: the activations go as x ^ 0x80 = x + 128 (once per
 * token and block, mm_xprep), and the row's -128 * sum(w) (corr, computed
 * with the transpose) starts the sum, so it is exactly sum w x (int32,
 * wraps but never saturates).
 *
 * Float order (kernels/canon.h rule 5): each lane, for its (row, token),
 * adds (float)sumi * (dw * dx) block after block, separate mul and add,
 * from 0.0f; between chunks of blocks the running sum waits in Y itself. */
#ifndef ML_AVX512_MATMUL_TILE_H
#define ML_AVX512_MATMUL_TILE_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/quant.h"
#include "core/tensor.h"
#include "kernels/kernel_util.h"

#define MM_KB 16 /* blocks per chunk */
#define MM_T 8   /* tokens per register tile */

/* One 16-row group's chunk of weights, transposed. */
typedef struct {
    __m512i w[MM_KB][8]; /* (block, 4-byte column): lane i = row i */
    __m512i corr[MM_KB]; /* -128 * sum of the row's block */
    __m512 d[MM_KB];     /* the rows' block scales */
} mm_wtile;

/* Row i of a group of nr: missing rows repeat the last one (computed, never
 * stored), so every lane does the same arithmetic whatever the split. */
ML_INLINE size_t mm_row(int i, int nr) { return (size_t)(i < nr ? i : nr - 1); }

/* Row r's block as 32 signed bytes: Q8_0 as stored, Q4_0 unpacked (low
 * nibbles are elements 0..15, high 16..31). Two rows per call, a | b. */
ML_INLINE __m512i mm_rows2(const int8_t *a, const int8_t *b, int q4) {
    if (!q4)
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                                  _mm256_loadu_si256((const __m256i *)b), 1);
    /* [a a b b] by chunk, then chunks 1 and 3 shifted to their high nibbles */
    const __m512i v = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)a))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b)), 1);
    const __m512i sh = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(v, sh), _mm512_set1_epi8(0x0F));
    return _mm512_sub_epi8(nib, _mm512_set1_epi8(ML_Q4_OFFSET));
}

/* Block b (of the chunk) of a group: g[i] is lane i's row at that block. */
ML_INLINE void mm_wprep_block(mm_wtile *wt, int b, const int8_t *const *g, int q4) {
    /* z[p] = rows (p, p + 4) for p < 4, (p + 4, p + 8) after: the 8x8
     * dword transposes of both 256-bit halves then come out in row order */
    __m512i z[8], t[8], u[8];
    ML_UNROLL for (int p = 0; p < 8; p++) {
        const int ra = p < 4 ? p : p + 4;
        z[p] = mm_rows2(g[ra], g[ra + 4], q4);
    }
    ML_UNROLL for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm512_unpacklo_epi32(z[2 * k], z[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(z[2 * k], z[2 * k + 1]);
    }
    ML_UNROLL for (int m = 0; m < 2; m++) {
        u[4 * m + 0] = _mm512_unpacklo_epi64(t[4 * m], t[4 * m + 2]);
        u[4 * m + 1] = _mm512_unpackhi_epi64(t[4 * m], t[4 * m + 2]);
        u[4 * m + 2] = _mm512_unpacklo_epi64(t[4 * m + 1], t[4 * m + 3]);
        u[4 * m + 3] = _mm512_unpackhi_epi64(t[4 * m + 1], t[4 * m + 3]);
    }
    const __m512i z0 = _mm512_setzero_si512(), f = _mm512_set1_epi8((char)0x80);
    __m512i s = z0;
    ML_UNROLL for (int j = 0; j < 4; j++) {
        const __m512i lo = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i hi = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
        wt->w[b][j] = lo;
        wt->w[b][4 + j] = hi;
        s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s, f, lo), f, hi);
    }
    wt->corr[b] = _mm512_sub_epi32(z0, s);
}

/* nb blocks of nr rows (<= 16) from row pointer q (bytes per row wstride,
 * per block bpb) and scales d (nbt blocks per row). */
ML_INLINE void mm_wprep(mm_wtile *wt, const int8_t *q, size_t wstride, size_t bpb, const float *d, size_t nbt,
                        int nr, int nb, int q4) {
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_min_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(nr - 1)),
        _mm512_set1_epi32((int)nbt));
    for (int b = 0; b < nb; b++) {
        const int8_t *g[16];
        ML_UNROLL for (int i = 0; i < 16; i++) g[i] = q + mm_row(i, nr) * wstride + (size_t)b * bpb;
        mm_wprep_block(wt, b, g, q4);
        wt->d[b] = _mm512_i32gather_ps(idx, d + b, 4);
    }
}

/* xu[t][32 b + e] = x ^ 0x80 for nt tokens and nb blocks from block b0. */
ML_INLINE void mm_xprep(uint8_t (*xu)[MM_KB * ML_QK], const ml_qbatch *X, int t0, int nt, int b0, int nb) {
    const __m256i f = _mm256_set1_epi8((char)0x80);
    for (int t = 0; t < nt; t++) {
        const int8_t *x = X->q + (size_t)(t0 + t) * (size_t)X->n + (size_t)b0 * ML_QK;
        for (int b = 0; b < nb; b++)
            _mm256_storeu_si256((__m256i *)(xu[t] + b * ML_QK),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(x + b * ML_QK)), f));
    }
}

ML_INLINE __m512i mm_bcast4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* nt (<= MM_T) tokens of one group over nb blocks: acc from Y (or 0.0f on
 * the first chunk), back to Y. y: token 0's 16 rows; xu: token 0's
 * prepared bytes; xd: token 0's scale of the chunk's block 0. */
ML_INLINE void mm_tile(float *y, size_t ldy, __mmask16 m, int first, const mm_wtile *wt, int nb,
                       const uint8_t (*xu)[MM_KB * ML_QK], const float *xd, size_t ldxd, int nt) {
    __m512 acc[MM_T];
    ML_UNROLL for (int t = 0; t < MM_T; t++)
        if (t < nt) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, y + (size_t)t * ldy);
    for (int b = 0; b < nb; b++) {
        __m512i w[8];
        ML_UNROLL for (int j = 0; j < 8; j++) w[j] = wt->w[b][j];
        const __m512i corr = wt->corr[b];
        const __m512 dw = wt->d[b];
        /* tokens innermost: their MM_T dot chains interleave (one chain of
         * 8 vpdpbusd alone is latency bound) */
        __m512i s[MM_T];
        ML_UNROLL for (int t = 0; t < MM_T; t++) s[t] = corr;
        ML_UNROLL for (int j = 0; j < 8; j++)
            ML_UNROLL for (int t = 0; t < MM_T; t++)
                if (t < nt) s[t] = _mm512_dpbusd_epi32(s[t], mm_bcast4(xu[t] + b * ML_QK + 4 * j), w[j]);
        ML_UNROLL for (int t = 0; t < MM_T; t++) {
            if (t >= nt) continue;
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(xd[(size_t)t * ldxd + (size_t)b]));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(s[t]), sc));
        }
    }
    ML_UNROLL for (int t = 0; t < MM_T; t++)
        if (t < nt) _mm512_mask_storeu_ps(y + (size_t)t * ldy, m, acc[t]);
}

#endif
