/* y += x, AVX2 (8 lanes; masked tail). Bit-identical to the scalar twin. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_add_avx2(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(y + i + 8, _mm256_add_ps(_mm256_loadu_ps(y + i + 8), _mm256_loadu_ps(x + i + 8)));
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i m = ml_avx2_tail(n - i);
        _mm256_maskstore_ps(y + i, m, _mm256_add_ps(_mm256_maskload_ps(y + i, m), _mm256_maskload_ps(x + i, m)));
    }
}
