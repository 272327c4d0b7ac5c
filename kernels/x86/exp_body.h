/* One canonical exp (kernels/canon.h, ml_canon_expf) for every x86 vector
 * width: the same IEEE operations in the same order as the scalar twin, no
 * FMA, so every width is bit-identical to it. The including kernels/<isa>/
 * <isa>_exp.h first defines its width's fixed-name primitives:
 *     ml_x86_f                       the float vector
 *     ml_x86_f_set1(c)               c in every lane
 *     ml_x86_f_add / _sub / _mul / _min / _max (a, b)
 *     ml_x86_f_pow2(p, nf)           p * 2^n, nf = n an integer in every
 *                                    lane, rounded as canon.h's two normal
 *                                    factors (sse2, avx2: those factors;
 *                                    avx512: one vscalefps, the same bits)
 *     ml_x86_f_keep_ge(e, d, c)      e where d >= c, else 0 (NaN d: 0)
 * then includes this file, which defines ml_x86_exp(x) and softmax's
 * ml_x86_softmax_exp(d). */
#ifndef ML_X86_EXP_BODY_H
#define ML_X86_EXP_BODY_H

#include "kernels/canon.h"
#include "kernels/kernel_util.h"

/* The canonical exp of x clamped to [lo, ML_EXP_X_MAX] (a NaN x: lo, as
 * maxps returns its second operand). */
ML_INLINE ml_x86_f ml_x86_exp_clamped(ml_x86_f x, ml_x86_f lo) {
    x = ml_x86_f_min(ml_x86_f_max(x, lo), ml_x86_f_set1(ML_EXP_X_MAX));
    const ml_x86_f round = ml_x86_f_set1(ML_EXP_ROUND);
    const ml_x86_f nf = ml_x86_f_sub(ml_x86_f_add(ml_x86_f_mul(x, ml_x86_f_set1(ML_EXP_LOG2E)), round), round);
    ml_x86_f r = ml_x86_f_sub(x, ml_x86_f_mul(nf, ml_x86_f_set1(ML_EXP_LN2_HI)));
    r = ml_x86_f_sub(r, ml_x86_f_mul(nf, ml_x86_f_set1(ML_EXP_LN2_LO)));
    ml_x86_f p = ml_x86_f_set1(ML_EXP_P5);
    p = ml_x86_f_add(ml_x86_f_mul(p, r), ml_x86_f_set1(ML_EXP_P4));
    p = ml_x86_f_add(ml_x86_f_mul(p, r), ml_x86_f_set1(ML_EXP_P3));
    p = ml_x86_f_add(ml_x86_f_mul(p, r), ml_x86_f_set1(ML_EXP_P2));
    p = ml_x86_f_add(ml_x86_f_mul(p, r), ml_x86_f_set1(ML_EXP_P1));
    p = ml_x86_f_add(ml_x86_f_mul(p, r), ml_x86_f_set1(ML_EXP_P0));
    p = ml_x86_f_add(ml_x86_f_add(ml_x86_f_mul(p, ml_x86_f_mul(r, r)), r), ml_x86_f_set1(1.0f));
    return ml_x86_f_pow2(p, nf);
}

ML_INLINE ml_x86_f ml_x86_exp(ml_x86_f x) { return ml_x86_exp_clamped(x, ml_x86_f_set1(ML_EXP_X_MIN)); }

/* ml_canon_softmax_exp: below the cut the exp is taken at the cut, a normal
 * number (no denormal, no microcode assist), and then dropped. */
ML_INLINE ml_x86_f ml_x86_softmax_exp(ml_x86_f d) {
    const ml_x86_f cut = ml_x86_f_set1(-ML_SOFTMAX_CUT);
    return ml_x86_f_keep_ge(ml_x86_exp_clamped(d, cut), d, cut);
}

#endif
