/* Y = W X for a batch of tokens, Q8_0 weights, AVX2: the sse2 build's
 * int16-pair matmul (kernels/x86/matmul_t16.h) with a group's 8 rows in
 * one 256-bit vector, 4 tokens a tile; batches under 12 tokens take the
 * vpmaddubsw 4-row body (avx2_dot.h, kernels/x86/matmul_body.h).
 * vpmaddubsw cannot multiply two signed bytes, so its Q8_0 dot needs a
 * sign fix and a widening per block and row that the pairs do not.
 * Measured (Zen 5, 1 thread, 2048x2048 from memory, ns per 16 rows x
 * block, 4-row body / pairs): 8 tokens 68 / 78, 12 tokens 108 / 104, 32
 * tokens 280 / 232, 128 tokens 1080 / 820; 4 tokens a tile 15% faster
 * than 2 at 128 tokens. Two groups a tile (16 rows x 4 tokens: 8 sums, 2
 * weight vectors, one broadcast token pair), the running sums waiting in Y
 * between blocks (MT16_ACC_Y: 8 more registers would spill): each token
 * pair broadcast serves 16 rows, not 8 (Zen 4, 768x768 in cache, 128
 * tokens: 1055-1100 -> 934-981 ns per 16 rows x block). */
#include "kernels/avx2/avx2_dot.h"

#define MT16_YMM 1
#define MT16_T 4
#define MT16_ACC_Y 1
#define MT16_MIN 12
#include "kernels/x86/matmul_t16.h"

void ml_k_matmul_q8_avx2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matmul_q8_f16_avx2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
