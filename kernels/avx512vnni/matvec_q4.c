/* y = W x, Q4_0 weights, AVX-512 VNNI: chained vpdpbusd on unsigned
 * weights (avx512_dot.h) in the 16-row matvec body (matvec_body.h). */
#include "kernels/avx512vnni/avx512_dot.h"

#include "kernels/avx512vnni/matvec_body.h"

void ml_k_matvec_q4_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_avx512_matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F32);
}

void ml_k_matvec_q4_f16_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_avx512_matvec(y, W, x, r0, r1, ML_TYPE_Q4_0, ML_TYPE_F16);
}
