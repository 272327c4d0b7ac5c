/* Plain FP32 vector helpers: residual add and the two attention loops, in
 * the canonical order (kernels/canon.h: 8-lane dot, no FMA). */
#include "config/ml_kernels.h"
#include "kernels/canon.h"

void ml_k_add_scalar(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}

float ml_k_dot_f32_scalar(const float *a, const float *b, int n) {
    float lane[ML_CANON_LANES] = {0};
    int n8 = n & ~(ML_CANON_LANES - 1);
    for (int i = 0; i < n8; i++) lane[i % ML_CANON_LANES] += a[i] * b[i];
    float s = ml_canon_fold8(lane);
    for (int i = n8; i < n; i++) s += a[i] * b[i];
    return s;
}

void ml_k_axpy_f32_scalar(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}
