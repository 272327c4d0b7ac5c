/* o = w * (x / sqrt(mean(x^2) + eps)), AVX2 + FMA. Only the sum of squares
 * is reordered (16 partial sums); the per-element formula is the scalar
 * twin's, so o may alias x. */
#include <immintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_rmsnorm_avx2(float *o, const float *x, const float *w, int n, float eps) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_fmadd_ps(a, a, s0);
        s1 = _mm256_fmadd_ps(b, b, s1);
    }
    if (i + 8 <= n) {
        const __m256 a = _mm256_loadu_ps(x + i);
        s0 = _mm256_fmadd_ps(a, a, s0);
        i += 8;
    }
    const __m256i m = ml_avx2_tail(n - i);
    if (i < n) {
        const __m256 a = _mm256_maskload_ps(x + i, m);
        s1 = _mm256_fmadd_ps(a, a, s1);
    }
    float ss = ml_avx2_hsum(_mm256_add_ps(s0, s1));
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    const __m256 sv = _mm256_set1_ps(ss);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(sv, _mm256_loadu_ps(x + i))));
    if (i < n)
        _mm256_maskstore_ps(o + i, m,
                            _mm256_mul_ps(_mm256_maskload_ps(w + i, m), _mm256_mul_ps(sv, _mm256_maskload_ps(x + i, m))));
}
