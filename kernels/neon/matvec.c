/* y = W x, Q8_0 and Q4_0 weights, neon (ARMv7 and AArch64): the vmull_s8
 * block dot (neon_dot.h) in the shared ARM body (kernels/arm/matvec_body.h). */
#include "kernels/neon/neon_dot.h"

#include "kernels/arm/matvec_body.h"

void ml_k_matvec_q8_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_arm_matvec(y, W, x, r0, r1, ML_ARM_Q8, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_arm_matvec(y, W, x, r0, r1, ML_ARM_Q8, ML_TYPE_F16);
}

void ml_k_matvec_q4_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_arm_matvec(y, W, x, r0, r1, ML_ARM_Q4, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_arm_matvec(y, W, x, r0, r1, ML_ARM_Q4, ML_TYPE_F16);
}
