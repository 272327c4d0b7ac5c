/* sum a[i] * b[i], SSE2, in the canonical order (kernels/canon.h rule 2):
 * 8 lane sums in two registers, folded, then the n % 8 tail one by one, with
 * separate multiplies and adds: bit-identical to the scalar twin. */
#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_vec.h"

float ml_k_dot_f32_sse2(const float *a, const float *b, int n) {
    const int n8 = n & ~7;
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (int i = 0; i < n8; i += 8) {
        lo = _mm_add_ps(lo, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
        hi = _mm_add_ps(hi, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
    }
    float s = ml_sse2_fold8(lo, hi);
    for (int i = n8; i < n; i++) s += a[i] * b[i];
    return s;
}
