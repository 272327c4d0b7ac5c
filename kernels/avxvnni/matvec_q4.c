/* y = W x, Q4_0 weights, AVX-VNNI: avx2_dot.h with vpdpbusd in the x86 4-row
 * matvec body (kernels/x86/matvec_body.h). */
#define ML_AVX2_VNNI 1 /* avx2_dot.h's vpdpbusd section */
#include "kernels/avx2/avx2_dot.h"

#include "kernels/x86/matvec_body.h"

void ml_k_matvec_q4_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_x86_matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
