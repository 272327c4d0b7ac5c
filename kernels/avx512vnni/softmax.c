/* In-place softmax, AVX-512, in the canonical order (kernels/canon.h): the
 * canonical exp 16 wide (avx512_exp.h, masked for the last group; 0 below
 * rule 3's cut), the sum over 8 lanes (each 16 exps add their low then high
 * half, which is lane j's element order), then the n % 8 tail one by one,
 * an IEEE division per element: bit-identical to the scalar twin. */
#include <immintrin.h>
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"
#include "kernels/avx512vnni/avx512_exp.h"
#include "kernels/avx512vnni/avx512_vec.h"

void ml_k_softmax_avx512vnni(float *x, int n) {
    const int n8 = n & ~7, n16 = n & ~15;
    const __mmask16 mt = ml_avx512_tail(n - n16); /* everything after n16 */
    const __m512 rest = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), mt, x + n16);
    /* the scalar twin's max: start at x[0], skip NaN (maxps returns its
     * second operand when either is NaN) */
    __m512 mv = _mm512_max_ps(rest, _mm512_set1_ps(x[0]));
    for (int i = 0; i < n16; i += 16) mv = _mm512_max_ps(_mm512_loadu_ps(x + i), mv);
    const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(mv));

    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n16; i += 16) {
        const __m512 e = ml_x86_softmax_exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
        _mm512_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
        acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    }
    if (n16 < n) {
        const __m512 e = ml_x86_softmax_exp(_mm512_sub_ps(rest, mx));
        _mm512_mask_storeu_ps(x + n16, mt, e);
        if (n8 > n16) acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e)); /* a whole 8 before the tail */
    }
    float sum = ml_avx2_hsum(acc);
    for (int i = n8; i < n; i++) sum += x[i];

    const __m512 s = _mm512_set1_ps(sum);
    for (int i = 0; i < n16; i += 16) _mm512_storeu_ps(x + i, _mm512_div_ps(_mm512_loadu_ps(x + i), s));
    if (n16 < n) _mm512_mask_storeu_ps(x + n16, mt, _mm512_div_ps(_mm512_maskz_loadu_ps(mt, x + n16), s));
}
