/* y += x, AVX-512 (16 lanes; masked tail). Bit-identical to the scalar twin. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_vec.h"

void ml_k_add_avx512vnni(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = ml_avx512_tail(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
    }
}
