/* In-place softmax, SSE2, in the canonical order (kernels/canon.h): the
 * canonical exp (sse2_exp.h; 0 below rule 3's cut), the sum over 8 lanes
 * (two registers) then the n % 8 tail one by one, an IEEE division per
 * element: bit-identical to the scalar twin. The tail's exps go through the
 * same vector code in a padded temporary. */
#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_exp.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_softmax_sse2(float *x, int n) {
    const int n8 = n & ~7;
    /* the scalar twin's max: start at x[0], skip NaN (maxps returns its
     * second operand when either is NaN) */
    float max = x[0];
    {
        int i = 0;
        __m128 mv = _mm_set1_ps(x[0]);
        for (; i + 4 <= n; i += 4) mv = _mm_max_ps(_mm_loadu_ps(x + i), mv);
        max = ml_sse2_hmax(mv);
        for (; i < n; i++)
            if (x[i] > max) max = x[i];
    }
    const __m128 m = _mm_set1_ps(max);
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (int i = 0; i < n8; i += 8) {
        const __m128 e0 = ml_x86_softmax_exp(_mm_sub_ps(_mm_loadu_ps(x + i), m));
        const __m128 e1 = ml_x86_softmax_exp(_mm_sub_ps(_mm_loadu_ps(x + i + 4), m));
        _mm_storeu_ps(x + i, e0);
        _mm_storeu_ps(x + i + 4, e1);
        lo = _mm_add_ps(lo, e0);
        hi = _mm_add_ps(hi, e1);
    }
    float sum = ml_sse2_fold8(lo, hi);
    if (n8 < n) {
        float t[8] = {0};
        for (int j = 0; j < n - n8; j++) t[j] = x[n8 + j];
        _mm_storeu_ps(t, ml_x86_softmax_exp(_mm_sub_ps(_mm_loadu_ps(t), m)));
        _mm_storeu_ps(t + 4, ml_x86_softmax_exp(_mm_sub_ps(_mm_loadu_ps(t + 4), m)));
        for (int j = 0; j < n - n8; j++) {
            x[n8 + j] = t[j];
            sum += t[j];
        }
    }
    const __m128 s = _mm_set1_ps(sum);
    int i = 0;
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_div_ps(_mm_loadu_ps(x + i), s));
    for (; i < n; i++) x[i] /= sum;
}
