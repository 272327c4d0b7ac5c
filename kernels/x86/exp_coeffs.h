/* Constants of the SIMD expf shared by the sse2 (__m128), avx2 (__m256) and
 * avx512vnni (__m512) exp helpers, so all three compute the same function.
 *
 *   exp(x) = 2^n * exp(r),  n = round(x * log2(e)),  r = x - n*ln2
 * with ln2 split Cody-Waite style into LN2_HI (9 significant bits, so n*LN2_HI
 * is exact for |n| <= 2^15) plus LN2_LO, which keeps r accurate to a few ulp
 * on |r| <= ln2/2. exp(r) = 1 + r + r^2 * P(r), P of degree 5 with the
 * minimax coefficients of Cephes expf: relative error about 2e-7 over
 * [-88, 88] in float arithmetic (DESIGN §5 asks for <= 1e-6).
 *
 * Inputs are clamped to [X_MIN, X_MAX] first: below X_MIN the true result is
 * under half the smallest denormal, so 0 (as expf); above X_MAX (> ln(FLT_MAX))
 * it is +inf (as expf). The clamp keeps n within [-150, 129], so 2^n can be
 * applied as two normal factors 2^(n>>1) * 2^(n - (n>>1)) and the denormal
 * range [-103.9, -87.3] rounds once, like expf. */
#ifndef ML_EXP_COEFFS_H
#define ML_EXP_COEFFS_H

#define ML_EXP_X_MIN (-104.0f)
#define ML_EXP_X_MAX 89.0f
#define ML_EXP_LOG2E 1.44269504088896341f
#define ML_EXP_LN2_HI 0.693359375f
#define ML_EXP_LN2_LO (-2.12194440e-4f)
#define ML_EXP_P0 5.0000001201e-1f
#define ML_EXP_P1 1.6666665459e-1f
#define ML_EXP_P2 4.1665795894e-2f
#define ML_EXP_P3 8.3334519073e-3f
#define ML_EXP_P4 1.3981999507e-3f
#define ML_EXP_P5 1.9875691500e-4f

#endif
