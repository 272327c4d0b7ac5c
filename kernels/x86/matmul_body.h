/* One 4-row matmul body for the sse2, sse41, avx2 and avxvnni builds (Q8_0
 * and Q4_0), over the fixed-name primitives of the matvec body
 * (kernels/x86/matvec_body.h, which lists them): Y[t*ldy + r] = W[r,:] .
 * X[t] for the batch's tokens and rows [r0, r1).
 *
 * A register tile is 4 rows x ML_X86_MM_TOK tokens. Per step of
 * ML_X86_STEP blocks, each row's weights are prepared once (ml_x86_wprep:
 * loads, Q4 nibble unpack, the avxvnni offset) and serve the tile's tokens;
 * each token's activations are prepared once (ml_x86_mxprep) and serve the
 * 4 rows; the 4 rows' scales are transposed once per 4 blocks and serve the
 * tokens. The 4 rows stay in L1 while every token of the batch passes over
 * them, so the weights stream from memory once per batch, and the first
 * tile over them prefetches the rows ahead as the matvec does. A batch's
 * last tokens (all of a speculative verification's, 2-9 tokens) go in
 * tiles of 4, 2 and 1: with one token a tile, every row was prepared again
 * for each token (2 and 4 tokens from memory took 2-4x a matvec; now
 * 1.1-3.8x, Intel Xeon, 5632x2048).
 *
 * Float order: each (row, token) is a lane of its token's 4-row accumulator
 * and gets exactly the matvec's sequence, sum += (float)sumi * (dw * dx) over
 * the blocks in order (kernels/canon.h rule 5), so a batch equals its tokens
 * run one by one through the matvec, bit for bit. */
#ifndef ML_X86_MATMUL_BODY_H
#define ML_X86_MATMUL_BODY_H

#include "kernels/x86/matvec_body.h"

/* Tokens per register tile: each prepared row serves 8 tokens. Measured
 * (matmul over 64 tokens, avx2/sse41/avxvnni, 768x768 and 2048x2048): 8
 * beat 4 by 5-20% and 2 by more; the spills it costs on x86 go to L1. */
#define ML_X86_MM_TOK 8

/* Rows [r, r + nr) x tokens [t, t + nt) of the batch; nr (4 or 1) and nt
 * (ML_X86_MM_TOK or 1) are constants after inlining. Rows past nr repeat
 * row 0, as in the matvec; their lanes are ignored. */
ML_INLINE void ml_x86_mm_tile(float *Y, size_t ldy, const int8_t *wq, size_t wstride, const void *wd,
                              const ml_qbatch *X, int t, int nb, int nr, int nt, ml_type wt, ml_type st) {
    const size_t ws = nr == 4 ? wstride : 0, ds = nr == 4 ? (size_t)nb : 0, wb = ml_x86_wbytes(wt);
    /* only the first tile over these rows reads them from memory */
    const size_t pf = t ? 0 : ML_X86_PF_ROWS * wstride, pfd = ML_X86_PF_ROWS * (size_t)nb * (size_t)ml_scale_bytes(st);
    const size_t xn = (size_t)X->n, xnb = (size_t)nb;
    const int8_t *xq = X->q + (size_t)t * xn;
    const float *xd = X->d + (size_t)t * xnb;
    __m128 acc[ML_X86_MM_TOK];
    ML_UNROLL for (int j = 0; j < nt; j++) acc[j] = _mm_setzero_ps();
    int b = 0;
    for (; b + 4 <= nb; b += 4) { /* groups of 4 blocks */
        __m128 dw[4];
        ml_x86_wscales4(dw, ml_x86_sptr(wd, (size_t)b, st), ds, st);
        if (pf) ml_x86_prefetch_rows(wq, ws, wd, ds, b, pf, pfd, wt, st);
        ML_UNROLL for (int k = 0; k < 4 / ML_X86_STEP; k++) { /* steps of ML_X86_STEP blocks */
            const int bk = b + k * ML_X86_STEP;
            ml_x86_w wp[4];
            ML_UNROLL for (int i = 0; i < 4; i++) ml_x86_wprep(&wp[i], wq + (size_t)i * ws + (size_t)bk * wb, wt);
            ML_UNROLL for (int j = 0; j < nt; j++) {
                ml_x86_mx xs;
                ml_x86_mxprep(&xs, xq + (size_t)j * xn + (size_t)bk * ML_QK, wt);
                __m128 s[ML_X86_STEP];
                ml_x86_xscales(s, dw + k * ML_X86_STEP, xd + (size_t)j * xnb + bk, ML_X86_STEP);
                ml_x86_vi v[4];
                ML_UNROLL for (int i = 0; i < 4; i++) v[i] = ml_x86_wdot(&wp[i], &xs, wt);
                acc[j] = ml_x86_madd(acc[j], ml_x86_block_sums(v), s);
            }
        }
    }
    for (; b < nb; b++) /* the last nb % 4 blocks, one at a time */
        ML_UNROLL for (int j = 0; j < nt; j++)
            acc[j] = ml_x86_block1(acc[j], wq + (size_t)b * wb, ws, ml_x86_sptr(wd, (size_t)b, st), ds,
                                   xq + (size_t)j * xn + (size_t)b * ML_QK, xd + (size_t)j * xnb + b, wt, st);
    ML_UNROLL for (int j = 0; j < nt; j++) {
        if (nr == 4)
            _mm_storeu_ps(Y + (size_t)j * ldy, acc[j]);
        else
            Y[(size_t)j * ldy] = _mm_cvtss_f32(acc[j]);
    }
}

/* nr rows starting at row r, for every token of the batch */
ML_INLINE void ml_x86_mm_rows(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r, int nr, ml_type wt,
                              ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * ml_x86_wbytes(wt);
    const int8_t *wq = W->q + (size_t)r * wstride;
    const void *wd = ml_x86_sptr(W->d, (size_t)r * (size_t)nb, st);
    int t = 0;
    for (; t + ML_X86_MM_TOK <= X->n_tok; t += ML_X86_MM_TOK)
        ml_x86_mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr,
                       ML_X86_MM_TOK, wt, st);
    /* the row tail (nr = 1: a few rows of some matrices) keeps one token a
     * tile: two more tile sizes there cost compile time for nothing */
    if (nr == 4 && t + 4 <= X->n_tok)
        ml_x86_mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr, 4, wt, st),
            t += 4;
    if (nr == 4 && t + 2 <= X->n_tok)
        ml_x86_mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr, 2, wt, st),
            t += 2;
    for (; t < X->n_tok; t++)
        ml_x86_mm_tile(Y + (size_t)t * (size_t)ldy + (size_t)r, (size_t)ldy, wq, wstride, wd, X, t, nb, nr, 1, wt, st);
}

/* Y = W X for weights of type wt with scales of type st, rows [r0, r1) */
ML_INLINE void ml_x86_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, ml_type wt,
                             ml_type st) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) ml_x86_mm_rows(Y, ldy, W, X, r, 4, wt, st);
    for (; r < r1; r++) ml_x86_mm_rows(Y, ldy, W, X, r, 1, wt, st);
}

/* For the 8-row bodies (kernels/avx2/matmul_t8.h, kernels/x86/matmul_t16.h):
 * the rows past the last full group of 8 run here, and every row of a
 * batch under min_tok tokens; returns where the 8-row groups end (r0: none
 * left for them). */
ML_INLINE int ml_x86_mm_rest8(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, int min_tok,
                              ml_type wt, ml_type st) {
    const int r8 = X->n_tok < min_tok ? r0 : r0 + (r1 - r0) / 8 * 8;
    if (r8 < r1) ml_x86_matmul(Y, ldy, W, X, r8, r1, wt, st);
    return r8;
}

#endif
