/* sum a[i] * b[i], AVX2, in the canonical order (kernels/canon.h rule 2):
 * one 8-lane accumulator (lane j: the elements i = j mod 8), folded, then the
 * n % 8 tail one by one, with separate multiplies and adds (no FMA):
 * bit-identical to the scalar twin. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

float ml_k_dot_f32_avx2(const float *a, const float *b, int n) {
    const int n8 = n & ~7;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n8; i += 8) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    float s = ml_avx2_hsum(acc);
    for (int i = n8; i < n; i++) s += a[i] * b[i];
    return s;
}
