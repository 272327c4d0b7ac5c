/* o = w * (x / sqrt(mean(x^2) + eps)); o may alias x. The sum of squares
 * follows the canonical 8-lane order (kernels/canon.h); the scale is one
 * IEEE sqrt and one division. */
#include <math.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"

void ml_k_rmsnorm_scalar(float *o, const float *x, const float *w, int n, float eps) {
    float lane[ML_CANON_LANES] = {0};
    int n8 = n & ~(ML_CANON_LANES - 1);
    for (int i = 0; i < n8; i++) lane[i % ML_CANON_LANES] += x[i] * x[i];
    float ss = ml_canon_fold8(lane);
    for (int i = n8; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int i = 0; i < n; i++) o[i] = w[i] * (ss * x[i]);
}
