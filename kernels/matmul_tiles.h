/* matmul from a matvec: Y[t*ldy + r] = W[r,:] . X[t] for every token t of
 * the batch and rows r in [r0, r1). Rows go in tiles of MATMUL_TILE_ROWS,
 * and each tile meets every token of the batch while its weights sit in
 * L1/L2: the weights stream from memory once per batch instead of once per
 * token, which is what decode is bound by. Each output is the matvec's,
 * bit for bit (kernels/canon.h rule 5; a matvec row never depends on how
 * [r0, r1) is split), so a batch equals its tokens run one by one.
 *
 * kernels/scalar/matmul.c instantiates it over the scalar matvec: the
 * scalar twin, the reference every ISA's matmul matches. tools/insn_matmul.c
 * instantiates it over an ISA's own matvec, the baseline its own matmul is
 * counted against. */
#ifndef ML_MATMUL_TILES_H
#define ML_MATMUL_TILES_H

#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

/* A multiple of 4 and of 16 (the matvecs' row groups), and small enough
 * that a tile's weights (16 x 5632 bytes of Q8_0 at TinyLlama's widest)
 * stay in L2 while the batch passes over them. */
#define MATMUL_TILE_ROWS 16

typedef void (*ml_matvec_kernel)(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1);

ML_INLINE void ml_matmul_by_tiles(ml_matvec_kernel matvec, float *Y, int ldy, const ml_qtensor *W,
                                  const ml_qbatch *X, int r0, int r1) {
    for (int r = r0; r < r1; r += MATMUL_TILE_ROWS) {
        const int re = r1 - r < MATMUL_TILE_ROWS ? r1 : r + MATMUL_TILE_ROWS;
        for (int t = 0; t < X->n_tok; t++) {
            const ml_qact x = ml_qbatch_token(X, t);
            matvec(Y + (size_t)t * (size_t)ldy, W, &x, r, re);
        }
    }
}

/* ml_k_matmul_q8_<isa> and ml_k_matmul_q4_<isa> over that ISA's matvecs. */
#define ML_MATMUL_BY_TILES(isa)                                                                       \
    void ml_k_matmul_q8_##isa(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) { \
        ml_matmul_by_tiles(ml_k_matvec_q8_##isa, Y, ldy, W, X, r0, r1);                             \
    }                                                                                                 \
    void ml_k_matmul_q4_##isa(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) { \
        ml_matmul_by_tiles(ml_k_matvec_q4_##isa, Y, ldy, W, X, r0, r1);                             \
    }

/* ml_k_matmul_q8_f16_<isa> and ml_k_matmul_q4_f16_<isa>, the same over the fp16-scale matvecs. */
#define ML_MATMUL_F16_BY_TILES(isa)                                                                   \
    void ml_k_matmul_q8_f16_##isa(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) { \
        ml_matmul_by_tiles(ml_k_matvec_q8_f16_##isa, Y, ldy, W, X, r0, r1);                         \
    }                                                                                                 \
    void ml_k_matmul_q4_f16_##isa(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) { \
        ml_matmul_by_tiles(ml_k_matvec_q4_f16_##isa, Y, ldy, W, X, r0, r1);                         \
    }

#endif
