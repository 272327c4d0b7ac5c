/* In-place softmax over n >= 1 values. */
#include <math.h>

#include "config/ml_kernels.h"

void ml_k_softmax_scalar(float *x, int n) {
    /* Subtracting the max keeps every expf argument <= 0: no overflow, and
     * the largest term is exactly 1 so the sum is >= 1. */
    float max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}
