/* In-place softmax over n >= 1 values, in the canonical order
 * (kernels/canon.h): exp by ml_canon_expf (0 below rule 3's cut), the sum
 * over 8 lanes, then an IEEE division per element. */
#include "config/ml_kernels.h"
#include "kernels/canon.h"

void ml_k_softmax_scalar(float *x, int n) {
    /* Subtracting the max keeps every exp argument <= 0: no overflow, and
     * the largest term is exactly 1 so the sum is >= 1. */
    float max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    float lane[ML_CANON_LANES] = {0};
    int n8 = n & ~(ML_CANON_LANES - 1);
    for (int i = 0; i < n; i++) x[i] = ml_canon_softmax_exp(x[i] - max);
    for (int i = 0; i < n8; i++) lane[i % ML_CANON_LANES] += x[i];
    float sum = ml_canon_fold8(lane);
    for (int i = n8; i < n; i++) sum += x[i];
    for (int i = 0; i < n; i++) x[i] /= sum;
}
