/* o = w * (x / sqrt(mean(x^2) + eps)), SSE2. The sum of squares is in the
 * canonical 8-lane order (kernels/canon.h) and the rest is the scalar twin's
 * per-element formula, so the result is bit-identical; o may alias x. */
#include <emmintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_rmsnorm_sse2(float *o, const float *x, const float *w, int n, float eps) {
    const int n8 = n & ~7;
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (int i = 0; i < n8; i += 8) {
        const __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
        lo = _mm_add_ps(lo, _mm_mul_ps(a, a));
        hi = _mm_add_ps(hi, _mm_mul_ps(b, b));
    }
    float ss = ml_sse2_fold8(lo, hi);
    for (int i = n8; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    const __m128 sv = _mm_set1_ps(ss);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, _mm_mul_ps(_mm_loadu_ps(w + i), _mm_mul_ps(sv, _mm_loadu_ps(x + i))));
    for (; i < n; i++) o[i] = w[i] * (ss * x[i]);
}
