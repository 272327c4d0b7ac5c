/* g = g / (1 + exp(-g)) * u, AVX-512, with the canonical exp (avx512_exp.h)
 * and the scalar twin's operation order: bit-identical to it. Very negative
 * g: exp(-g) is +inf and g / inf = -0. */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_exp.h"
#include "kernels/avx512vnni/avx512_vec.h"

static inline __m512 silu_mul16(__m512 g, __m512 u) {
    const __m512 e = ml_x86_exp(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g), _mm512_set1_epi32((int)0x80000000u))));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

void ml_k_silu_mul_avx512vnni(float *g, const float *u, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(g + i, silu_mul16(_mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i)));
    if (i < n) {
        const __mmask16 m = ml_avx512_tail(n - i);
        _mm512_mask_storeu_ps(g + i, m, silu_mul16(_mm512_maskz_loadu_ps(m, g + i), _mm512_maskz_loadu_ps(m, u + i)));
    }
}
