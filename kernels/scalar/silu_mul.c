/* g = silu(g) * u = g / (1 + exp(-g)) * u (the SwiGLU gate). For very
 * negative g, expf overflows to inf and g/inf gives the right limit, -0. */
#include <math.h>

#include "config/ml_kernels.h"

void ml_k_silu_mul_scalar(float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
