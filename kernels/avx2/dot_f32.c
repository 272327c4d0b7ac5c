/* sum a[i] * b[i], AVX2 + FMA: two 8-lane accumulators, masked tail, one
 * horizontal sum; the order differs from the scalar twin (DESIGN §7.1). */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

float ml_k_dot_f32_avx2(const float *a, const float *b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    if (i + 8 <= n) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        i += 8;
    }
    if (i < n) {
        const __m256i m = ml_avx2_tail(n - i);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
    }
    return ml_avx2_hsum(_mm256_add_ps(s0, s1));
}
