/* Y = W X for a batch of tokens, Q4_0 weights, SSE4.1: 8 rows in the lanes
 * of two vectors (kernels/x86/matmul_t16.h) with the weights as nibble
 * columns (MT16_NIB): per (token, block) and 4 rows, 8 pmaddubsw of a
 * column's 4 nibbles by the token's 4 bytes, their int16 sums widened once;
 * short batches take the pmaddubsw 4-row body (sse41_dot.h,
 * kernels/x86/matmul_body.h). */
#include "kernels/sse41/sse41_dot.h"

#define MT16_NIB 1
/* Tokens a tile, as registers allow: a column's weights serve them all.
 * Zen 4, 768x768, 64 tokens, ns per 16 rows x block: x86-64 (16 vector
 * registers) 4 tokens 638, 3 639, 2 675; i686 (8) 1 token 813-829, 2 840. */
#if defined(__x86_64__) || defined(_M_X64)
#define MT16_T 4
#else
#define MT16_T 1
#endif
#include "kernels/x86/matmul_t16.h"

void ml_k_matmul_q4_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matmul_q4_f16_sse41(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
