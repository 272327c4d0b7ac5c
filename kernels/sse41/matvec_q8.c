/* y = W x, Q8_0 weights, SSE4.1: the pmaddubsw block dot (sse41_dot.h) in
 * the x86 4-row matvec body (kernels/x86/matvec_body.h). */
#include "kernels/sse41/sse41_dot.h"

#include "kernels/x86/matvec_body.h"

void ml_k_matvec_q8_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
