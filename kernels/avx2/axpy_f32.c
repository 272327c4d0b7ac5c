/* y += a * x, AVX2. Multiply then add (no FMA), as the scalar twin rounds,
 * so the result is bit-identical to it. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_axpy_f32_avx2(float *y, float a, const float *x, int n) {
    const __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(av, _mm256_loadu_ps(x + i))));
        _mm256_storeu_ps(y + i + 8,
                         _mm256_add_ps(_mm256_loadu_ps(y + i + 8), _mm256_mul_ps(av, _mm256_loadu_ps(x + i + 8))));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(av, _mm256_loadu_ps(x + i))));
    if (i < n) {
        const __m256i m = ml_avx2_tail(n - i);
        _mm256_maskstore_ps(y + i, m,
                            _mm256_add_ps(_mm256_maskload_ps(y + i, m), _mm256_mul_ps(av, _mm256_maskload_ps(x + i, m))));
    }
}
