/* y = W x, Q8_0 and Q4_0 weights, neon_dotprod: 8 rows per step over
 * vdotq_s32 (sdot), Q4_0 as raw nibbles with the offset term once per
 * activation block (dotprod_mv.h). The Q4_0 entry points turn gcc's
 * scheduling before register allocation off (ML_NO_PRESCHED): it
 * interleaved the 8 rows' unpacking until values spilled (5.97 M against
 * 5.38 M instructions per stories15M token); Q8_0 gains from it (4.60 M
 * against 4.76 M). */
#include "kernels/neon_dotprod/dotprod_mv.h"

void ml_k_matvec_q8_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_dp_matvec(y, W, x, r0, r1, ML_ARM_Q8, ML_TYPE_F32);
}

void ml_k_matvec_q8_f16_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_dp_matvec(y, W, x, r0, r1, ML_ARM_Q8, ML_TYPE_F16);
}

ML_NO_PRESCHED void ml_k_matvec_q4_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_dp_matvec(y, W, x, r0, r1, ML_ARM_Q4, ML_TYPE_F32);
}

ML_NO_PRESCHED void ml_k_matvec_q4_f16_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    ml_dp_matvec(y, W, x, r0, r1, ML_ARM_Q4, ML_TYPE_F16);
}
