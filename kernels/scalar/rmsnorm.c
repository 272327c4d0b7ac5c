/* o = w * (x / sqrt(mean(x^2) + eps)), llama2.c order; o may alias x. */
#include <math.h>

#include "config/ml_kernels.h"

void ml_k_rmsnorm_scalar(float *o, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int i = 0; i < n; i++) o[i] = w[i] * (ss * x[i]);
}
