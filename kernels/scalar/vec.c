/* Plain FP32 vector helpers: residual add and the two attention loops. */
#include "config/ml_kernels.h"

void ml_k_add_scalar(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}

float ml_k_dot_f32_scalar(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void ml_k_axpy_f32_scalar(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}
