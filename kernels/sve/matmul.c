/* Y = W X for a batch of tokens, Q8_0 and Q4_0 weights, SVE: a row tile's
 * gathered weight block meets a tile of tokens through the indexed sdot
 * (kernels/sve/sve_matmul.h), at any vector length. */
#include "kernels/sve/sve_matmul.h"

ML_NO_PRESCHED void ml_k_matmul_q8_sve(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    ml_sve_matmul(Y, ldy, W, X, r0, r1, 0, ML_TYPE_F32);
}

ML_NO_PRESCHED void ml_k_matmul_q4_sve(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    ml_sve_matmul(Y, ldy, W, X, r0, r1, 1, ML_TYPE_F32);
}

ML_NO_PRESCHED void ml_k_matmul_q8_f16_sve(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0,
                                           int r1) {
    ml_sve_matmul(Y, ldy, W, X, r0, r1, 0, ML_TYPE_F16);
}

ML_NO_PRESCHED void ml_k_matmul_q4_f16_sve(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0,
                                           int r1) {
    ml_sve_matmul(Y, ldy, W, X, r0, r1, 1, ML_TYPE_F16);
}
