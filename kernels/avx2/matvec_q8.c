/* y = W x, Q8_0 weights, AVX2: the vpmaddubsw block dot (avx2_dot.h) in the
 * x86 4-row matvec body (kernels/x86/matvec_body.h). */
#include "kernels/avx2/avx2_dot.h"

#include "kernels/x86/matvec_body.h"

void ml_k_matvec_q8_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q8_0, ML_TYPE_F16);
}
