/* One matmul body for the sse2, sse41, avx2 and avxvnni builds, over the
 * same primitives as their matvec (kernels/x86/matvec_tmpl.h, included
 * first): Y[t*ldy + r] = W[r,:] . X[t] for the batch's tokens and rows
 * [r0, r1).
 *
 * A register tile is 4 rows x MM_TOK tokens. Per step of MV_STEP blocks,
 * each row's weights are prepared once (mv_wprep: loads, Q4 nibble unpack,
 * the avxvnni offset) and serve the tile's tokens; each token's activations
 * are prepared once (mv_xprep) and serve the 4 rows; the 4 rows' scales are
 * transposed once per 4 blocks and serve the tokens. The 4 rows stay in L1
 * while every token of the batch passes over them, so the weights stream
 * from memory once per batch.
 *
 * Float order: each (row, token) is a lane of its token's 4-row accumulator
 * and gets exactly the matvec's sequence, sum += (float)sumi * (dw * dx) over
 * the blocks in order (kernels/canon.h rule 5), so a batch equals its tokens
 * run one by one through the matvec, bit for bit. */
#include <stddef.h>
#include <stdint.h>

#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

#ifndef MM_OWN_X
typedef mv_x mm_x;
#define mm_xprep mv_xprep
#endif

/* Tokens per register tile: each prepared row serves 8 tokens. Measured
 * (matmul over 64 tokens, avx2/sse41/avxvnni, 768x768 and 2048x2048): 8
 * beat 4 by 5-20% and 2 by more; the spills it costs on x86 go to L1. */
#define MM_TOK 8

/* Rows [r, r + nr) x tokens [t, t + nt) of the batch; nr (4 or 1) and nt
 * (MM_TOK or 1) are constants after inlining. Rows past nr repeat row 0,
 * as in the matvec; their lanes are ignored. */
ML_INLINE void mm_tile(float *Y, size_t ldy, const int8_t *wq, size_t wstride, const float *wd, const ml_qbatch *X,
                       int t, int nb, int nr, int nt) {
    const size_t ws = nr == 4 ? wstride : 0, ds = nr == 4 ? (size_t)nb : 0;
    const size_t xn = (size_t)X->n, xnb = (size_t)nb;
    const int8_t *xq = X->q + (size_t)t * xn;
    const float *xd = X->d + (size_t)t * xnb;
    __m128 acc[MM_TOK];
    ML_UNROLL for (int j = 0; j < nt; j++) acc[j] = _mm_setzero_ps();
    int b = 0;
    for (; b + 4 <= nb; b += 4) { /* groups of 4 blocks */
        __m128 dw[4];
        mv_wscales4(dw, wd + b, ds);
        ML_UNROLL for (int k = 0; k < 4 / MV_STEP; k++) { /* steps of MV_STEP blocks */
            const int bk = b + k * MV_STEP;
            mv_w wp[4];
            ML_UNROLL for (int i = 0; i < 4; i++) mv_wprep(&wp[i], wq + (size_t)i * ws + (size_t)bk * MV_WBYTES);
            ML_UNROLL for (int j = 0; j < nt; j++) {
                mm_x xs;
                mm_xprep(&xs, xq + (size_t)j * xn + (size_t)bk * ML_QK);
                __m128 s[MV_STEP];
                mv_xscales(s, dw + k * MV_STEP, xd + (size_t)j * xnb + bk, MV_STEP);
                mv_vi v[4];
                ML_UNROLL for (int i = 0; i < 4; i++) v[i] = mv_wdot(&wp[i], &xs);
                acc[j] = mv_madd(acc[j], mv_block_sums(v), s);
            }
        }
    }
    for (; b < nb; b++) /* the last nb % 4 blocks, one at a time */
        ML_UNROLL for (int j = 0; j < nt; j++)
            acc[j] = mv_block1(acc[j], wq + (size_t)b * MV_WBYTES, ws, wd + b, ds,
                               xq + (size_t)j * xn + (size_t)b * ML_QK, xd + (size_t)j * xnb + b);
    ML_UNROLL for (int j = 0; j < nt; j++) {
        if (nr == 4)
            _mm_storeu_ps(Y + (size_t)j * ldy, acc[j]);
        else
            Y[(size_t)j * ldy] = _mm_cvtss_f32(acc[j]);
    }
}

/* nr rows starting at row r, for every token of the batch */
ML_INLINE void mm_rows(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r, int nr) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * MV_WBYTES;
    const int8_t *wq = W->q + (size_t)r * wstride;
    const float *wd = W->d + (size_t)r * (size_t)nb;
    int t = 0;
    for (; t + MM_TOK <= X->n_tok; t += MM_TOK)
        mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr, MM_TOK);
    for (; t < X->n_tok; t++)
        mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr, 1);
}

ML_INLINE void mm_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) mm_rows(Y, ldy, W, X, r, 4);
    for (; r < r1; r++) mm_rows(Y, ldy, W, X, r, 1);
}
