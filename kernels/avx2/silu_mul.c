/* g = g / (1 + exp(-g)) * u, AVX2, with the canonical exp (avx2_exp.h) and
 * the scalar twin's operation order: bit-identical to it. Very negative g:
 * exp(-g) is +inf and g / inf = -0. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_exp.h"
#include "kernels/avx2/avx2_vec.h"

static inline __m256 silu_mul8(__m256 g, __m256 u) {
    const __m256 e = ml_x86_exp(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

void ml_k_silu_mul_avx2(float *g, const float *u, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(g + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        const __m256i m = ml_avx2_tail(n - i);
        _mm256_maskstore_ps(g + i, m, silu_mul8(_mm256_maskload_ps(g + i, m), _mm256_maskload_ps(u + i, m)));
    }
}
