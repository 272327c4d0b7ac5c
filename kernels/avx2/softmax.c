/* In-place softmax, AVX2, with the polynomial exp of avx2_exp.h. The masked
 * tail pads with -inf, whose exp is 0, so it adds nothing to the sum. */
#include <immintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_exp.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_softmax_avx2(float *x, int n) {
    const int nv = n & ~7;
    const __m256i m = ml_avx2_tail(n - nv);
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 mv = _mm256_set1_ps(x[0]);
    for (int i = 0; i < nv; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
    /* maskload gives 0 in the padding: replace it by -inf */
    const __m256 tail = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + nv, m), _mm256_castsi256_ps(m));
    const __m256 mx = _mm256_set1_ps(ml_avx2_hmax(_mm256_max_ps(mv, tail)));

    __m256 sv = _mm256_setzero_ps();
    for (int i = 0; i < nv; i += 8) {
        const __m256 e = ml_avx2_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
        _mm256_storeu_ps(x + i, e);
        sv = _mm256_add_ps(sv, e);
    }
    if (nv < n) {
        const __m256 e = ml_avx2_exp(_mm256_sub_ps(tail, mx));
        _mm256_maskstore_ps(x + nv, m, e);
        sv = _mm256_add_ps(sv, e);
    }

    const __m256 s = _mm256_set1_ps(ml_avx2_hsum(sv));
    for (int i = 0; i < nv; i += 8) _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), s));
    if (nv < n) _mm256_maskstore_ps(x + nv, m, _mm256_div_ps(_mm256_maskload_ps(x + nv, m), s));
}
