/* Y = W X for a batch of tokens, Q8_0 weights, SSE4.1: the sse2 build's
 * int16-pair matmul with 8 rows in the lanes of two vectors
 * (kernels/x86/matmul_t16.h); short batches take the pmaddubsw 4-row body
 * (sse41_dot.h, kernels/x86/matmul_body.h). Per (row, token, block) the
 * pairs take 4 pmaddwd and 4 paddd where the 4-row body's pmaddubsw dot
 * also signs, widens and reduces (Zen 5, 2048x2048 from memory: 1.3x
 * slower at 32-128 tokens, 1.35x at 8). Q4_0 takes the same tiles with
 * pmaddubsw on nibbles (matmul_q4.c): unsigned already, no sign fix. */
#include "kernels/sse41/sse41_dot.h"

#include "kernels/x86/matmul_t16.h"

void ml_k_matmul_q8_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matmul_q8_f16_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
