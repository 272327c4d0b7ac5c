/* In-place softmax, AVX2, in the canonical order (kernels/canon.h): the
 * canonical exp (avx2_exp.h; 0 below rule 3's cut), the sum over 8 lanes
 * then the n % 8 tail one by one, an IEEE division per element:
 * bit-identical to the scalar twin. */
#include <immintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_exp.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_softmax_avx2(float *x, int n) {
    const int n8 = n & ~7;
    const __m256i m = ml_avx2_tail(n - n8);
    /* the masked tail, padded with -inf (maskload gives 0 there) */
    const __m256 tail = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + n8, m), _mm256_castsi256_ps(m));
    /* the scalar twin's max: start at x[0], skip NaN (maxps returns its
     * second operand when either is NaN) */
    __m256 mv = _mm256_max_ps(tail, _mm256_set1_ps(x[0]));
    for (int i = 0; i < n8; i += 8) mv = _mm256_max_ps(_mm256_loadu_ps(x + i), mv);
    const __m256 mx = _mm256_set1_ps(ml_avx2_hmax(mv));

    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n8; i += 8) {
        const __m256 e = ml_x86_softmax_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = ml_avx2_hsum(acc);
    if (n8 < n) {
        _mm256_maskstore_ps(x + n8, m, ml_x86_softmax_exp(_mm256_sub_ps(tail, mx)));
        for (int i = n8; i < n; i++) sum += x[i];
    }

    const __m256 s = _mm256_set1_ps(sum);
    for (int i = 0; i < n8; i += 8) _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), s));
    if (n8 < n) _mm256_maskstore_ps(x + n8, m, _mm256_div_ps(_mm256_maskload_ps(x + n8, m), s));
}
