/* y = W x, Q4_0 weights, SVE: rows in lanes, gathered weight words split
 * into nibbles and the indexed sdot (kernels/sve/sve_matvec.h). */
#include "kernels/sve/sve_matvec.h"

void ml_k_matvec_q4_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_sve_matvec(y, W, x, r0, r1, 1, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_sve_matvec(y, W, x, r0, r1, 1, ML_TYPE_F16);
}
