/* The 128-bit builds' batch matmul (Q8_0 and Q4_0) with 8 rows in the
 * lanes of two vectors and the weights as int16 pairs, SSE2 instructions
 * only, over the 4-row body (kernels/x86/matmul_body.h, included first
 * with the build's dot header) for what it leaves: Y[t*ldy + r] = W[r,:] .
 * X[t] for the batch's tokens and rows [r0, r1). No (row, token) dot is
 * ever summed horizontally.
 *
 * A block of 8 rows is widened and transposed once per call into 16 pairs
 * of vectors: pair j, vector h, int32 lane i = row 4h + i's elements 2j
 * and 2j + 1 as two int16 (Q8_0 sign-extended, Q4_0 the nibble minus 8:
 * signed, so no offset to remove). A token's block is widened once per
 * row tile into 16 vectors, vector j = its elements 2j, 2j + 1 in every
 * lane (mt16_xprep). A (token, block) then costs 16 pmaddwd and 16 paddd
 * per 4 rows, int32 lanes (|sumi| <= 32 * 127 * 127), with no shuffle.
 *
 * Loop order: a row tile (MT16_G groups of 8 rows) and a chunk of MT16_KB
 * blocks are transposed once into wt (stack, 17 KiB); MT16_T tokens at a
 * time are widened (xb, 4 KiB) and pass over every group. A batch under
 * MT16_MIN tokens and the rows past the last full group run the 4-row body.
 *
 * Float order (kernels/canon.h rule 5): each lane, for its (row, token),
 * adds (float)sumi * (dw * dx) block after block, separate mul and add,
 * from 0.0f; between chunks of blocks the running sum waits in Y itself. */
#ifndef ML_X86_MATMUL_T16_H
#define ML_X86_MATMUL_T16_H

#include <emmintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/x86/matmul_body.h"

#define MT16_KB 8  /* blocks per chunk */
#define MT16_G 4   /* 8-row groups per row tile */
#define MT16_T 2   /* tokens per register tile */
#define MT16_MIN 8 /* smaller batches: the 4-row body */

/* One 8-row group's chunk of weights, widened and transposed. */
typedef struct {
    __m128i w[MT16_KB][16][2]; /* (block, pair j, rows 4h..4h+3) */
    __m128 d[MT16_KB][2];      /* the rows' block scales, rows 4h..4h+3 */
} mt16_wtile;

ML_INLINE int mt16_min(int a, int b) { return a < b ? a : b; }

/* bytes 0..7 and 8..15 of v sign-extended to int16 */
ML_INLINE void mt16_widen(__m128i v, __m128i *e) {
    e[0] = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);
    e[1] = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
}

/* A row's block as 4 int16 vectors in element order (8 elements each). */
ML_INLINE void mt16_row(__m128i *e, const int8_t *w, ml_type type) {
    __m128i lo, hi;
    if (type == ML_TYPE_Q4_0) { /* byte j: elements j (low nibble), 16 + j */
        const __m128i v = _mm_loadu_si128((const __m128i *)w), m = _mm_set1_epi8(0x0F), o = _mm_set1_epi8(ML_Q4_OFFSET);
        lo = _mm_sub_epi8(_mm_and_si128(v, m), o);
        hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m), o);
    } else {
        lo = _mm_loadu_si128((const __m128i *)w);
        hi = _mm_loadu_si128((const __m128i *)(w + 16));
    }
    mt16_widen(lo, e);
    mt16_widen(hi, e + 2);
}

/* Blocks b0 .. b0 + nb - 1 of W's 8 rows from row r, and their scales
 * (of type st: converted exactly). */
ML_INLINE void mt16_wprep(mt16_wtile *wt, const ml_qtensor *W, int r, int b0, int nb, ml_type type, ml_type st) {
    const size_t nbt = (size_t)(W->cols / ML_QK), bpb = ml_x86_wbytes(type), wstride = nbt * bpb;
    const int8_t *q = W->q + (size_t)r * wstride + (size_t)b0 * bpb;
    const void *d = ml_x86_sptr(W->d, (size_t)r * nbt + (size_t)b0, st);
    for (int b = 0; b < nb; b++)
        ML_UNROLL for (int h = 0; h < 2; h++) {
            __m128i e[4][4]; /* row 4h + i: e[i] */
            ML_UNROLL for (int i = 0; i < 4; i++) mt16_row(e[i], q + (size_t)(4 * h + i) * wstride + (size_t)b * bpb, type);
            ML_UNROLL for (int k = 0; k < 4; k++) { /* pairs 4k .. 4k + 3: one 4x4 dword transpose */
                __m128 r0 = _mm_castsi128_ps(e[0][k]), r1 = _mm_castsi128_ps(e[1][k]);
                __m128 r2 = _mm_castsi128_ps(e[2][k]), r3 = _mm_castsi128_ps(e[3][k]);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                wt->w[b][4 * k][h] = _mm_castps_si128(r0);
                wt->w[b][4 * k + 1][h] = _mm_castps_si128(r1);
                wt->w[b][4 * k + 2][h] = _mm_castps_si128(r2);
                wt->w[b][4 * k + 3][h] = _mm_castps_si128(r3);
            }
            wt->d[b][h] = _mm_setr_ps(ml_scale_at(d, (size_t)(4 * h) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 1) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 2) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 3) * nbt + (size_t)b, st));
        }
}

/* xb[t][b][j] = token t's elements 2j, 2j + 1 of block b (int16) in every
 * lane, for nt tokens from x (n bytes apart) and nb blocks */
ML_INLINE void mt16_xprep(__m128i (*xb)[MT16_KB][16], const int8_t *x, size_t n, int nt, int nb) {
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < nb; b++) {
            const int8_t *p = x + (size_t)t * n + (size_t)b * ML_QK;
            __m128i e[4];
            mt16_widen(_mm_loadu_si128((const __m128i *)p), e);
            mt16_widen(_mm_loadu_si128((const __m128i *)(p + 16)), e + 2);
            ML_UNROLL for (int k = 0; k < 4; k++) {
                xb[t][b][4 * k] = _mm_shuffle_epi32(e[k], 0x00);
                xb[t][b][4 * k + 1] = _mm_shuffle_epi32(e[k], 0x55);
                xb[t][b][4 * k + 2] = _mm_shuffle_epi32(e[k], 0xAA);
                xb[t][b][4 * k + 3] = _mm_shuffle_epi32(e[k], 0xFF);
            }
        }
}

/* nt (<= MT16_T) tokens of one group over nb blocks: acc from Y (or 0.0f on
 * the first chunk), back to Y. y: token 0's 8 rows; xd: token 0's scales
 * at the chunk's block 0 (nbt per token). */
ML_INLINE void mt16_tile(float *y, size_t ldy, int first, const mt16_wtile *wt, int nb,
                         const __m128i (*xb)[MT16_KB][16], const float *xd, size_t nbt, int nt) {
    __m128 acc[MT16_T][2];
    ML_UNROLL for (int t = 0; t < MT16_T; t++)
        ML_UNROLL for (int h = 0; h < 2; h++)
            if (t < nt) acc[t][h] = first ? _mm_setzero_ps() : _mm_loadu_ps(y + (size_t)t * ldy + 4 * (size_t)h);
    for (int b = 0; b < nb; b++) {
        __m128i s[MT16_T][2];
        ML_UNROLL for (int t = 0; t < MT16_T; t++) s[t][0] = s[t][1] = _mm_setzero_si128();
        ML_UNROLL for (int j = 0; j < 16; j++)
            ML_UNROLL for (int t = 0; t < MT16_T; t++)
                ML_UNROLL for (int h = 0; h < 2; h++)
                    if (t < nt) s[t][h] = _mm_add_epi32(s[t][h], _mm_madd_epi16(wt->w[b][j][h], xb[t][b][j]));
        ML_UNROLL for (int t = 0; t < MT16_T; t++) {
            if (t >= nt) continue;
            const __m128 dx = _mm_set1_ps(xd[(size_t)t * nbt + (size_t)b]);
            ML_UNROLL for (int h = 0; h < 2; h++)
                acc[t][h] = _mm_add_ps(acc[t][h], _mm_mul_ps(_mm_cvtepi32_ps(s[t][h]), _mm_mul_ps(wt->d[b][h], dx)));
        }
    }
    ML_UNROLL for (int t = 0; t < MT16_T; t++)
        ML_UNROLL for (int h = 0; h < 2; h++)
            if (t < nt) _mm_storeu_ps(y + (size_t)t * ldy + 4 * (size_t)h, acc[t][h]);
}

/* Y = W X for weights of type type with scales of type st, rows [r0, r1) */
_Static_assert(MT16_T == 2, "mt16_matmul has a tile for 1 token and one for MT16_T");
ML_INLINE void mt16_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, ml_type type,
                           ml_type st) {
    const int r8 = ml_x86_mm_rest8(Y, ldy, W, X, r0, r1, MT16_MIN, type, st);
    const int nbt = W->cols / ML_QK;
    const size_t n = (size_t)X->n;
    mt16_wtile wt[MT16_G];
    __m128i xb[MT16_T][MT16_KB][16];
    for (int r = r0; r < r8; r += 8 * MT16_G) {
        const int ng = mt16_min((r8 - r) / 8, MT16_G);
        for (int b0 = 0; b0 < nbt; b0 += MT16_KB) {
            const int nb = mt16_min(nbt - b0, MT16_KB);
            for (int g = 0; g < ng; g++) mt16_wprep(&wt[g], W, r + 8 * g, b0, nb, type, st);
            for (int t = 0; t < X->n_tok; t += MT16_T) {
                const int nt = mt16_min(X->n_tok - t, MT16_T);
                mt16_xprep(xb, X->q + (size_t)t * n + (size_t)b0 * ML_QK, n, nt, nb);
                for (int g = 0; g < ng; g++) {
                    float *y = Y + (size_t)t * (size_t)ldy + (size_t)(r + 8 * g);
                    const float *xd = X->d + (size_t)t * (size_t)nbt + (size_t)b0;
                    if (nt == MT16_T)
                        mt16_tile(y, (size_t)ldy, b0 == 0, &wt[g], nb, (const __m128i(*)[MT16_KB][16])xb, xd,
                                  (size_t)nbt, MT16_T);
                    else
                        mt16_tile(y, (size_t)ldy, b0 == 0, &wt[g], nb, (const __m128i(*)[MT16_KB][16])xb, xd,
                                  (size_t)nbt, 1);
                }
            }
        }
    }
}

#endif
