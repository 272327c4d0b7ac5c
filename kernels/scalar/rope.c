/* Rotary position embedding on interleaved pairs (2i, 2i+1) (llama2.c
 * convention, DESIGN §5). cos_t/sin_t: row `pos` of the precomputed tables,
 * (head_dim/2). q: (n_heads, head_dim); k: (n_kv_heads, head_dim) or NULL. */
#include <stddef.h>

#include "config/ml_kernels.h"

static void rope_heads(float *v, const float *cos_t, const float *sin_t, int head_dim, int heads) {
    for (int h = 0; h < heads; h++) {
        float *x = v + (size_t)h * (size_t)head_dim;
        for (int i = 0; i < head_dim / 2; i++) {
            const float c = cos_t[i], s = sin_t[i];
            const float v0 = x[2 * i], v1 = x[2 * i + 1];
            x[2 * i] = v0 * c - v1 * s;
            x[2 * i + 1] = v0 * s + v1 * c;
        }
    }
}

void ml_k_rope_scalar(float *q, float *k, const float *cos_t, const float *sin_t,
                      int head_dim, int n_heads, int n_kv_heads) {
    rope_heads(q, cos_t, sin_t, head_dim, n_heads);
    if (k) rope_heads(k, cos_t, sin_t, head_dim, n_kv_heads);
}
