/* In-place softmax, SSE2, with the polynomial exp of sse2_exp.h. A tail of
 * n % 4 values goes through the same exp in a padded vector (padding -inf,
 * whose exp is 0, so it adds nothing to the sum). */
#include <emmintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_exp.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_softmax_sse2(float *x, int n) {
    int i = 0;
    __m128 mv = _mm_set1_ps(x[0]);
    for (; i + 4 <= n; i += 4) mv = _mm_max_ps(mv, _mm_loadu_ps(x + i));
    float max = ml_sse2_hmax(mv);
    for (; i < n; i++)
        if (x[i] > max) max = x[i];

    const __m128 m = _mm_set1_ps(max);
    __m128 sv = _mm_setzero_ps();
    for (i = 0; i + 4 <= n; i += 4) {
        const __m128 e = ml_sse2_exp(_mm_sub_ps(_mm_loadu_ps(x + i), m));
        _mm_storeu_ps(x + i, e);
        sv = _mm_add_ps(sv, e);
    }
    if (i < n) {
        float t[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (int j = 0; j < n - i; j++) t[j] = x[i + j];
        const __m128 e = ml_sse2_exp(_mm_sub_ps(_mm_loadu_ps(t), m));
        _mm_storeu_ps(t, e);
        for (int j = 0; j < n - i; j++) x[i + j] = t[j];
        sv = _mm_add_ps(sv, e);
    }

    const __m128 s = _mm_set1_ps(ml_sse2_hsum(sv));
    for (i = 0; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_div_ps(_mm_loadu_ps(x + i), s));
    for (; i < n; i++) x[i] /= _mm_cvtss_f32(s);
}
