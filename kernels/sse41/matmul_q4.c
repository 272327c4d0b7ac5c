/* Y = W X for a batch of tokens, Q4_0 weights, SSE4.1: 8 rows in the lanes
 * of two vectors (kernels/x86/matmul_t16.h) with the weights as nibble
 * columns (MT16_NIB): per (token, block) and 4 rows, 8 pmaddubsw of a
 * column's 4 nibbles by the token's 4 bytes, their int16 sums widened once;
 * short batches take the pmaddubsw 4-row body (sse41_dot.h,
 * kernels/x86/matmul_body.h). */
#include "kernels/sse41/sse41_dot.h"

#define MT16_NIB 1
#include "kernels/x86/matmul_t16.h"

void ml_k_matmul_q4_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matmul_q4_f16_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
