/* y += a * x, AVX-512. Multiply then add (no FMA), as the scalar twin rounds,
 * so the result is bit-identical to it. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_vec.h"

void ml_k_axpy_f32_avx512vnni(float *y, float a, const float *x, int n) {
    const __m512 av = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_mul_ps(av, _mm512_loadu_ps(x + i))));
    if (i < n) {
        const __mmask16 m = ml_avx512_tail(n - i);
        _mm512_mask_storeu_ps(y + i, m,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, x + i))));
    }
}
