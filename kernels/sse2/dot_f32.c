/* sum a[i] * b[i], SSE2: two 4-lane accumulators (8 partial sums), one
 * horizontal sum; the order differs from the scalar twin (DESIGN §7.1). */
#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_vec.h"

float ml_k_dot_f32_sse2(const float *a, const float *b, int n) {
    __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
        s1 = _mm_add_ps(s1, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
    }
    if (i + 4 <= n) {
        s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
        i += 4;
    }
    float s = ml_sse2_hsum(_mm_add_ps(s0, s1));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}
