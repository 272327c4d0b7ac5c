/* y += x, SSE2. Alone in its file: ASM=1 replaces it with add.S (asm.mk). */
#include <emmintrin.h>

#include "config/ml_kernels.h"

void ml_k_add_sse2(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_loadu_ps(x + i)));
        _mm_storeu_ps(y + i + 4, _mm_add_ps(_mm_loadu_ps(y + i + 4), _mm_loadu_ps(x + i + 4)));
    }
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_loadu_ps(x + i)));
    for (; i < n; i++) y[i] += x[i];
}
