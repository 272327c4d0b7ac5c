/* The neon_dotprod build's int8 block dot: two vdotq_s32 (sdot), each adding
 * 4 products into each int32 lane, for the shared matvec body
 * (kernels/arm/matvec_body.h; kernels/neon/neon_dot.h is the neon shim). */
#ifndef ML_DOTPROD_DOT_H
#define ML_DOTPROD_DOT_H

#include "kernels/arm/arm_vec.h"

ML_INLINE int32x4_t ml_arm_dot_i8(int32x4_t acc, int8x16_t w0, int8x16_t w1, const ml_arm_x *xs) {
    return vdotq_s32(vdotq_s32(acc, w0, xs->x0), w1, xs->x1);
}

#endif
