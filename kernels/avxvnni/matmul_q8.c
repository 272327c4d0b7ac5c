/* Y = W X for a batch of tokens, Q8_0 weights, AVX-VNNI: avx2_dot.h with
 * vpdpbusd in the 8-rows-in-lanes matmul (kernels/avx2/matmul_t8.h). */
#define ML_AVX2_VNNI 1 /* avx2_dot.h's vpdpbusd section */
#include "kernels/avx2/avx2_dot.h"

#include "kernels/avx2/matmul_t8.h"

void ml_k_matmul_q8_avxvnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt8_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matmul_q8_f16_avxvnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mt8_matmul(Y, ldy, W, X, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
