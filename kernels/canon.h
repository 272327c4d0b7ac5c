/* The canonical float operation order. Every ISA's kernels perform exactly
 * these IEEE operations in exactly this order, so every build of legacy-ml
 * produces bit-identical logits and therefore identical tokens (the scalar
 * kernels are the executable form of this contract; tests compare bits).
 * The rules, each cheap on every ISA from SSE2 and ARMv7 NEON up:
 *
 *  1. No fused multiply-add anywhere in float math (-ffp-contract=off, and
 *     SIMD code uses mul then add): FMA rounds once, mul+add twice.
 *  2. Sums over a vector (dot_f32, rmsnorm's sum of squares, softmax's sum)
 *     use 8 lanes: lane j accumulates, in order, the elements i = j (mod 8)
 *     with i < n8 = n & ~7; the lanes are combined as
 *        ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
 *     (what 256-bit halves, or two 128-bit registers, folded twice give);
 *     then the tail elements n8 .. n-1 are added one by one.
 *  3. exp is ml_canon_expf below (not libm's expf, which differs between C
 *     libraries): clamp, round n = x*log2e to nearest-even with the 1.5*2^23
 *     trick (exact on every ISA, including ARMv7 NEON, which has no
 *     round-to-nearest conversion), Cody-Waite reduction, degree-5 polynomial
 *     evaluated by Horner with separate mul and add, scale by 2^n as two
 *     normal factors.
 *     Softmax takes the exp of d = x - max only where d >= -ML_SOFTMAX_CUT
 *     (ml_canon_softmax_exp); below, and for a NaN d, the term is exactly 0.
 *     Such a term is under e^-64 (2^-92) of the largest, which is 1: it
 *     moves neither the sum nor an attention output, whose magnitudes are
 *     near 1, but computing it makes denormals (exp, then p = e / sum, then
 *     p * v), and on Intel x86 each denormal result costs a microcode
 *     assist of hundreds of cycles: at depth, 1% of a real model's scores
 *     lie there, which made softmax 4.4x slower (docs/PERF.md). From e^-64
 *     down to the floats' smallest normal there is room for a sum up to
 *     2^33, so no kept p is denormal.
 *  4. Divisions and square roots are IEEE (no reciprocal estimates).
 *  5. matvec accumulates each row sequentially over its blocks:
 *        sum += (float)sumi * (dw * dx),  sumi the exact int32 block dot
 *     (SIMD kernels put rows, not elements, in the vector lanes).
 *  6. Attention (attn_scores, attn_values), per query head: the score of a
 *     key is rule 2's dot of query and key, then one IEEE division by
 *     sqrt(head_dim); each output element starts at 0 and adds, key by
 *     key in position order, o += p_t * v_t (multiply, then add). Which
 *     query heads or keys a call takes together, and how SIMD kernels lay
 *     them in lanes, never changes a result (the axpy order per element).
 *
 * ARM (kernels/arm/, kernels/neon/, kernels/neon_dotprod/):
 *  A1. No vfmaq/vmlaq_f32/svmla in float math: vmulq then vaddq (rule 1;
 *      -ffp-contract=off keeps gcc from fusing the pair).
 *  A2. The 8-lane fold of rule 2 is written out (ml_arm_fold8): vaddvq_f32
 *      and FADDV/FADDP add neighbours first ((l0 + l1) + ...), which is not
 *      the canonical order.
 *  A3. max and min treat NaN as the scalar twin does (`a > m ? a : m`):
 *      FMAXNM (vmaxnmq_f32) where m is never NaN, compare-and-select
 *      otherwise; never plain vmaxq_f32, which returns NaN.
 *  A4. IEEE vdivq_f32 and scalar sqrtf only; never the vrecpeq/vrsqrteq
 *      estimates or their Newton steps (rule 4).
 *  A5. ARMv7 NEON flushes denormal inputs and results to zero and returns
 *      the default NaN, whatever FPSCR says; the VFP unit the scalar build
 *      uses does neither. So the ARMv7 neon build may use NEON only where
 *      that cannot change a bit:
 *        - integer work (the int8 block dots, reductions, packing);
 *        - int32 -> float conversion of block sums (|sumi| < 2^24: exact,
 *          never denormal);
 *        - quantize_q8's float part: a denormal |x| never decides amax (a
 *          block below ML_Q8_AMAX_MIN is stored as zero, otherwise amax is
 *          normal); where x or x * id is denormal, |x * id| < 2^-126, so
 *          x * id + copysign(0.5, x) is +-0.5 either way and q = 0.
 *      Everything else stays VFP: matvec's sum += f * (dw * dx) (dw * dx of
 *      tiny scales can be denormal) is scalar C per row lane, which gcc
 *      and clang do not vectorize on ARMv7 without -ffast-math, and the
 *      float kernels (rmsnorm, softmax, rope, silu_mul, add, dot_f32,
 *      axpy_f32) bind to their scalar twins (kernels/neon/kernels_neon.h).
 *      AArch64 NEON is IEEE (FPCR.FZ = 0, no default-NaN mode): there every
 *      kernel is vectorized. tests/test_kernels.c feeds denormal scales
 *      and activations to check this on qemu-arm, which emulates the
 *      flush.                                                             */
#ifndef ML_CANON_H
#define ML_CANON_H

#include <stdint.h>
#include <string.h>

#define ML_CANON_LANES 8

/* exp(x) = 2^n * exp(r), n = round(x*log2(e)), r = x - n*ln2, with ln2 split
 * Cody-Waite style (LN2_HI has 9 significant bits, so n*LN2_HI is exact), and
 * exp(r) = 1 + r + r^2 * P(r) with Cephes' expf minimax coefficients:
 * relative error about 2e-7 over [-88, 88] (DESIGN §5 asks for 1e-6).
 * Inputs are clamped to [X_MIN, X_MAX]: below, the result underflows to 0;
 * above, it overflows to +inf, as expf does. */
#define ML_EXP_X_MIN (-104.0f)
#define ML_EXP_X_MAX 89.0f
#define ML_EXP_LOG2E 1.44269504088896341f
#define ML_EXP_ROUND 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer */
#define ML_EXP_LN2_HI 0.693359375f
#define ML_EXP_LN2_LO (-2.12194440e-4f)
#define ML_EXP_P0 5.0000001201e-1f
#define ML_EXP_P1 1.6666665459e-1f
#define ML_EXP_P2 4.1665795894e-2f
#define ML_EXP_P3 8.3334519073e-3f
#define ML_EXP_P4 1.3981999507e-3f
#define ML_EXP_P5 1.9875691500e-4f
#define ML_SOFTMAX_CUT 64.0f /* rule 3: softmax's terms with x - max < -64 are 0 */

static inline float ml_canon_pow2i(int32_t e) { /* 2^e for e in [-126, 127] */
    uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float ml_canon_expf(float x) {
    /* A NaN x fails the first comparison and so becomes ML_EXP_X_MIN (the
     * int conversion below must never see a NaN: undefined). */
    x = x > ML_EXP_X_MIN ? x : ML_EXP_X_MIN;
    x = x < ML_EXP_X_MAX ? x : ML_EXP_X_MAX;
    float t = x * ML_EXP_LOG2E;
    float nf = (t + ML_EXP_ROUND) - ML_EXP_ROUND; /* round half to even */
    int32_t n = (int32_t)nf;
    float r = x - nf * ML_EXP_LN2_HI;
    r = r - nf * ML_EXP_LN2_LO;
    float p = ML_EXP_P5;
    p = p * r + ML_EXP_P4;
    p = p * r + ML_EXP_P3;
    p = p * r + ML_EXP_P2;
    p = p * r + ML_EXP_P1;
    p = p * r + ML_EXP_P0;
    p = (p * (r * r) + r) + 1.0f;
    /* Two normal factors: n in [-150, 129] then over- and underflows (through
     * the denormals) with a single final rounding. */
    int32_t n1 = n >> 1, n2 = n - n1;
    return (p * ml_canon_pow2i(n1)) * ml_canon_pow2i(n2);
}

/* Rule 3's softmax term: exp(d), d = x - max <= 0, or 0 below the cut (a
 * NaN d fails the comparison: 0 as well). */
static inline float ml_canon_softmax_exp(float d) { return d >= -ML_SOFTMAX_CUT ? ml_canon_expf(d) : 0.0f; }

/* RoPE of one interleaved pair (p[0], p[1]) by (c, s), in the scalar
 * twin's order; vector kernels use it for the pairs past their last chunk. */
static inline void ml_canon_rope_pair(float *p, float c, float s) {
    const float v0 = p[0], v1 = p[1];
    p[0] = v0 * c - v1 * s;
    p[1] = v0 * s + v1 * c;
}

/* Rule 2's lane combination. */
static inline float ml_canon_fold8(const float l[ML_CANON_LANES]) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

#endif
