/* The canonical exp (kernels/canon.h, ml_canon_expf) for one x86 vector
 * width, written once. The same IEEE operations in the same order as the
 * scalar twin, no FMA, so every width is bit-identical to it. (avx512 uses
 * vscalefps for the final 2^n instead, see kernels/avx512vnni/avx512_exp.h.)
 * The including header defines, then includes this file once per width:
 * EXP_NAME (the function), VF, VI (float and int vector types), F_SET1,
 * F_ADD, F_SUB, F_MUL, F_MIN, F_MAX, F_CVTT (float -> int, truncating),
 * F_FROM_I (bit cast), I_SET1, I_ADD, I_SUB, I_SRAI, I_SLLI. All of them
 * are undefined again at the end. */
#include "kernels/canon.h"
#include "kernels/kernel_util.h"

ML_INLINE VF EXP_NAME(VF x) {
    x = F_MIN(F_MAX(x, F_SET1(ML_EXP_X_MIN)), F_SET1(ML_EXP_X_MAX));
    const VF round = F_SET1(ML_EXP_ROUND);
    const VF nf = F_SUB(F_ADD(F_MUL(x, F_SET1(ML_EXP_LOG2E)), round), round);
    const VI n = F_CVTT(nf); /* exact: nf is an integer */
    VF r = F_SUB(x, F_MUL(nf, F_SET1(ML_EXP_LN2_HI)));
    r = F_SUB(r, F_MUL(nf, F_SET1(ML_EXP_LN2_LO)));
    VF p = F_SET1(ML_EXP_P5);
    p = F_ADD(F_MUL(p, r), F_SET1(ML_EXP_P4));
    p = F_ADD(F_MUL(p, r), F_SET1(ML_EXP_P3));
    p = F_ADD(F_MUL(p, r), F_SET1(ML_EXP_P2));
    p = F_ADD(F_MUL(p, r), F_SET1(ML_EXP_P1));
    p = F_ADD(F_MUL(p, r), F_SET1(ML_EXP_P0));
    p = F_ADD(F_ADD(F_MUL(p, F_MUL(r, r)), r), F_SET1(1.0f));
    /* 2^n as two normal factors, n1 = n >> 1 (arithmetic), n2 = n - n1 */
    const VI n1 = I_SRAI(n, 1), n2 = I_SUB(n, n1);
    const VF s1 = F_FROM_I(I_SLLI(I_ADD(n1, I_SET1(127)), 23));
    const VF s2 = F_FROM_I(I_SLLI(I_ADD(n2, I_SET1(127)), 23));
    return F_MUL(F_MUL(p, s1), s2);
}

#undef EXP_NAME
#undef VF
#undef VI
#undef F_SET1
#undef F_ADD
#undef F_SUB
#undef F_MUL
#undef F_MIN
#undef F_MAX
#undef F_CVTT
#undef F_FROM_I
#undef I_SET1
#undef I_ADD
#undef I_SUB
#undef I_SRAI
#undef I_SLLI
