/* Y = W X for a batch of tokens, Q8_0 weights, SSE2: the pmaddwd block dot
 * on int16 pairs, 8 rows in the lanes of two vectors (kernels/x86/matmul_t16.h). */
#include "kernels/sse2/sse2_dot.h"

#include "kernels/x86/matmul_t16.h"

void ml_k_matmul_q8_sse2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matmul_q8_f16_sse2(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt16_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
