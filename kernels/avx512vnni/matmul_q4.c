/* Y = W X for a batch of tokens, Q4_0 weights, AVX-512 VNNI: 16-row
 * register tiles of transposed unsigned weights (avx512_dot.h) in the
 * avx512vnni matmul body (matmul_body.h). */
#include "kernels/avx512vnni/matmul_body.h"

void ml_k_matmul_q4_avx512vnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm512_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matmul_q4_f16_avx512vnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm512_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
