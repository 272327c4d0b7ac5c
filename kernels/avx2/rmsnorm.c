/* o = w * (x / sqrt(mean(x^2) + eps)), AVX2. The sum of squares is in the
 * canonical 8-lane order (kernels/canon.h, no FMA) and the rest is the scalar
 * twin's per-element formula, so the result is bit-identical; o may alias x. */
#include <immintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_rmsnorm_avx2(float *o, const float *x, const float *w, int n, float eps) {
    const int n8 = n & ~7;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n8; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(a, a));
    }
    float ss = ml_avx2_hsum(acc);
    for (int i = n8; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    const __m256 sv = _mm256_set1_ps(ss);
    for (int i = 0; i < n8; i += 8)
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(sv, _mm256_loadu_ps(x + i))));
    if (n8 < n) {
        const __m256i m = ml_avx2_tail(n - n8);
        _mm256_maskstore_ps(o + n8, m,
                            _mm256_mul_ps(_mm256_maskload_ps(w + n8, m), _mm256_mul_ps(sv, _mm256_maskload_ps(x + n8, m))));
    }
}
