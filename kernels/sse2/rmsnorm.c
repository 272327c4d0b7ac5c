/* o = w * (x / sqrt(mean(x^2) + eps)), SSE2. Only the sum of squares is
 * reordered (8 partial sums); the per-element formula is the scalar twin's,
 * so o may alias x. */
#include <emmintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_rmsnorm_sse2(float *o, const float *x, const float *w, int n, float eps) {
    __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
        s0 = _mm_add_ps(s0, _mm_mul_ps(a, a));
        s1 = _mm_add_ps(s1, _mm_mul_ps(b, b));
    }
    if (i + 4 <= n) {
        const __m128 a = _mm_loadu_ps(x + i);
        s0 = _mm_add_ps(s0, _mm_mul_ps(a, a));
        i += 4;
    }
    float ss = ml_sse2_hsum(_mm_add_ps(s0, s1));
    for (; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    const __m128 sv = _mm_set1_ps(ss);
    for (i = 0; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, _mm_mul_ps(_mm_loadu_ps(w + i), _mm_mul_ps(sv, _mm_loadu_ps(x + i))));
    for (; i < n; i++) o[i] = w[i] * (ss * x[i]);
}
