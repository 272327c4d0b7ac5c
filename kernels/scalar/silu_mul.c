/* g = silu(g) * u = g / (1 + exp(-g)) * u (the SwiGLU gate), exp by
 * ml_canon_expf. For very negative g, exp(-g) overflows to inf and g/inf
 * gives the right limit, -0. */
#include "config/ml_kernels.h"
#include "kernels/canon.h"

void ml_k_silu_mul_scalar(float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) g[i] = g[i] / (1.0f + ml_canon_expf(-g[i])) * u[i];
}
