/* The neon build's int8 block dot (DESIGN §5): vmull_s8 + vpadalq_s16, the
 * shim that stands in for two vdotq_s32 (sdot) in the matvec body
 * (kernels/arm/matvec_body.h). Each int16 lane adds
 * two products (vmull, then vmlal): at most 2 * 128 * 127 < 2^15, so no
 * saturation for Q8 (|q| <= 127) nor for matvec_body.h's Q4 values (16 * v,
 * v in [-8, 7]). ARMv7 and AArch64 alike. */
#ifndef ML_NEON_DOT_H
#define ML_NEON_DOT_H

#include "kernels/arm/arm_vec.h"

/* The 32 products of one row's block, two to an int16 lane. */
typedef struct {
    int16x8_t p0, p1;
} ml_neon_prod;

ML_INLINE ml_neon_prod ml_neon_products(int8x16_t w0, int8x16_t w1, const ml_arm_x *xs) {
    int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(xs->x0));
    int16x8_t p1 = vmull_s8(vget_low_s8(w1), vget_low_s8(xs->x1));
    p0 = ml_arm_mlal_hi_s8(p0, w0, xs->x0);
    p1 = ml_arm_mlal_hi_s8(p1, w1, xs->x1);
    return (ml_neon_prod){p0, p1};
}

ML_INLINE int32x4_t ml_arm_dot_i8(int32x4_t acc, int8x16_t w0, int8x16_t w1, const ml_arm_x *xs) {
    const ml_neon_prod p = ml_neon_products(w0, w1, xs);
    return vpadalq_s16(vpadalq_s16(acc, p.p0), p.p1);
}

#endif
