/* y += a * x, SSE2. Multiply then add (no FMA), as the scalar twin rounds,
 * so the result is bit-identical to it. */
#include <emmintrin.h>

#include "config/ml_kernels.h"

void ml_k_axpy_f32_sse2(float *y, float a, const float *x, int n) {
    const __m128 av = _mm_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_mul_ps(av, _mm_loadu_ps(x + i))));
        _mm_storeu_ps(y + i + 4, _mm_add_ps(_mm_loadu_ps(y + i + 4), _mm_mul_ps(av, _mm_loadu_ps(x + i + 4))));
    }
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_mul_ps(av, _mm_loadu_ps(x + i))));
    for (; i < n; i++) y[i] += a * x[i];
}
