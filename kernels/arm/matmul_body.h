/* One matmul body for the ARM builds (neon on ARMv7 and AArch64,
 * neon_dotprod; Q8_0 and Q4_0): Y[t*ldy + r] = W[r,:] . X[t] for the tokens
 * of the batch X and rows [r0, r1). The including .c first includes its
 * build's primitives on one weight block of 4 rows:
 *     ml_arm_w4                    the block, prepared for the dots
 *     ml_arm_w4_prep(wb, w, kind)  load rows w[0..3]'s block and prepare it
 *     ml_arm_w4_dot(wb, xs, kind)  [sumi of rows 0..3] against one
 *                                  activation block, as (exact) floats
 * (kernels/neon/neon_mm.h: vmull_s8 and pairwise adds;
 * kernels/neon_dotprod/dotprod_mm.h: the block transposed, indexed sdot),
 * then calls ml_arm_matmul with ML_ARM_Q8 or ML_ARM_Q4.
 *
 * A tile is 4 rows x ML_ARM_MM_TOKENS tokens (arm_vec.h): each block of the
 * 4 rows is loaded and prepared once and meets every token of the tile,
 * whose 4-row sums stay in registers over all blocks. The weights are read
 * once per tile and stay in L1 for the next tile of tokens; the tokens past
 * the last full tile go in tiles of 4, 2 and 1. Rows past the last group of
 * 4 go one at a time, the 3 other rows standing in as in the matvec body.
 *
 * Float order (kernels/canon.h rule 5): each (row, token) sum starts at
 * 0.0f and takes sum += (float)sumi * (dw * dx) block by block, multiply
 * then add, exactly as the matvec body and the scalar twin: every output is
 * the matvec's bit for bit, whatever tile computes it. */
#ifndef ML_ARM_MATMUL_BODY_H
#define ML_ARM_MATMUL_BODY_H

#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/arm/arm_vec.h"

/* One block of the 4 rows at w[i], d[i] against nt tokens (xq, xd: the
 * first one's block; the tokens n quants and nb scales apart). */
ML_INLINE void ml_arm_mm_block(ml_arm_f4 *sum, const int8_t *const *w, const char *const *d, const int8_t *xq,
                               const float *xd, size_t n, int nb, int nt, int kind, ml_type st) {
    ml_arm_w4 wb;
    ml_arm_w4_prep(&wb, w, kind);
    const ml_arm_f4 dw = ml_arm_dw(d, st);
    ML_UNROLL for (int t = 0; t < nt; t++) {
        const ml_arm_x xs = ml_arm_ld32(xq + (size_t)t * n);
        sum[t] = ml_arm_f4_madd(sum[t], ml_arm_w4_dot(&wb, &xs, kind), ml_arm_f4_scale(dw, xd[(size_t)t * nb]));
    }
}

/* nt tokens (xq, xd: the first one's) x nr rows (4 or 1, from the one at
 * wq, wd), both constants after inlining, into Y (the first token's row). */
ML_INLINE void ml_arm_mm_tile(float *Y, size_t ldy, const int8_t *wq, size_t wstride, const void *wd, int nb,
                              const int8_t *xq, const float *xd, int nt, int nr, int kind, ml_type st) {
    const int8_t *w[4];
    const char *d[4];
    ml_arm_rows4(w, d, wq, wstride, wd, nb, nr, st);
    const size_t n = (size_t)nb * ML_QK;
    ml_arm_f4 sum[ML_ARM_MM_TOKENS];
    ML_UNROLL for (int t = 0; t < nt; t++) sum[t] = ml_arm_f4_zero();
    for (int b = 0; b < nb; b++, xq += ML_QK, xd++) {
        ml_arm_mm_block(sum, w, d, xq, xd, n, nb, nt, kind, st);
        ML_UNROLL for (int i = 0; i < 4; i++) w[i] += ml_arm_wbytes(kind);
        ml_arm_scales_skip(d, 1, st);
    }
    ML_UNROLL for (int t = 0; t < nt; t++) ml_arm_f4_store(Y + (size_t)t * ldy, sum[t], nr);
}

/* Every token of X against nr rows (4 or 1) from row r. */
ML_INLINE void ml_arm_mm_rows(float *Y, size_t ldy, const ml_qtensor *W, const ml_qbatch *X, int r, int nr,
                              int kind, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * ml_arm_wbytes(kind);
    const int8_t *wq = W->q + (size_t)r * wstride;
    const char *wd = (const char *)W->d + (size_t)r * (size_t)nb * (size_t)ml_scale_bytes(st);
    int t = 0;
#define ML_ARM_MM_TILE(nt)                                                                                    \
    ml_arm_mm_tile(Y + (size_t)t * ldy + (size_t)r, ldy, wq, wstride, wd, nb, X->q + (size_t)t * (size_t)X->n, \
                   X->d + (size_t)t * (size_t)nb, nt, nr, kind, st)
    for (; t + ML_ARM_MM_TOKENS <= X->n_tok; t += ML_ARM_MM_TOKENS) ML_ARM_MM_TILE(ML_ARM_MM_TOKENS);
    for (; ML_ARM_MM_TOKENS > 4 && t + 4 <= X->n_tok; t += 4) ML_ARM_MM_TILE(4);
    for (; ML_ARM_MM_TOKENS > 2 && t + 2 <= X->n_tok; t += 2) ML_ARM_MM_TILE(2);
    for (; t < X->n_tok; t++) ML_ARM_MM_TILE(1);
#undef ML_ARM_MM_TILE
}

ML_INLINE void ml_arm_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, int kind,
                             ml_type st) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) ml_arm_mm_rows(Y, (size_t)ldy, W, X, r, 4, kind, st);
    for (; r < r1; r++) ml_arm_mm_rows(Y, (size_t)ldy, W, X, r, 1, kind, st);
}

/* ml_k_matmul_<q8|q4>[_f16]_<isa> over this body. */
#define ML_ARM_MATMUL_ONE_(isa, name, kind, st)                                                                \
    ML_NO_PRESCHED void ml_k_##name##_##isa(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, \
                                            int r1) {                                                          \
        ml_arm_matmul(Y, ldy, W, X, r0, r1, kind, st);                                                         \
    }
#define ML_ARM_MATMUL(isa)                                          \
    ML_ARM_MATMUL_ONE_(isa, matmul_q8, ML_ARM_Q8, ML_TYPE_F32)      \
    ML_ARM_MATMUL_ONE_(isa, matmul_q4, ML_ARM_Q4, ML_TYPE_F32)      \
    ML_ARM_MATMUL_ONE_(isa, matmul_q8_f16, ML_ARM_Q8, ML_TYPE_F16)  \
    ML_ARM_MATMUL_ONE_(isa, matmul_q4_f16, ML_ARM_Q4, ML_TYPE_F16)

#endif
