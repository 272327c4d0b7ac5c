/* g = g / (1 + exp(-g)) * u, SSE2, with the canonical exp (sse2_exp.h) and
 * the scalar twin's operation order: bit-identical to it. Very negative g:
 * exp(-g) is +inf and g / inf = -0. A tail of n % 4 values runs through the
 * same code in a padded vector. */
#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_exp.h"

static inline __m128 silu_mul4(__m128 g, __m128 u) {
    const __m128 e = ml_x86_exp(_mm_xor_ps(g, _mm_set1_ps(-0.0f)));
    return _mm_mul_ps(_mm_div_ps(g, _mm_add_ps(_mm_set1_ps(1.0f), e)), u);
}

void ml_k_silu_mul_sse2(float *g, const float *u, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(g + i, silu_mul4(_mm_loadu_ps(g + i), _mm_loadu_ps(u + i)));
    if (i < n) {
        float tg[4] = {0}, tu[4] = {0};
        for (int j = 0; j < n - i; j++) tg[j] = g[i + j], tu[j] = u[i + j];
        _mm_storeu_ps(tg, silu_mul4(_mm_loadu_ps(tg), _mm_loadu_ps(tu)));
        for (int j = 0; j < n - i; j++) g[i + j] = tg[j];
    }
}
