/* FP32 -> Q8_0 activations, k a multiple of 32 (DESIGN §4, §5). Every ISA's
 * version must produce the same bytes and scales bit for bit, so the float
 * operations below are the contract (built with -ffp-contract=off):
 *   amax = max_j |x[j]|
 *   amax < ML_Q8_AMAX_MIN (this includes all-zero blocks):  d = 0, q = 0
 *   otherwise:  d = amax / 127.0f;  id = 127.0f / amax;
 *               q[j] = (int)(x[j]*id + copysignf(0.5f, x[j]))  (truncation),
 *               clamped to [-127, 127]
 * i.e. round half away from zero. Inputs must be finite. */
#include <math.h>
#include <stddef.h>

#include "config/ml_kernels.h"


void ml_k_quantize_q8_scalar(ml_qact *out, const float *x, int k) {
    for (int b = 0; b < k / ML_QK; b++) {
        const float *xb = x + (size_t)b * ML_QK;
        int8_t *qb = out->q + (size_t)b * ML_QK;
        float amax = 0.0f;
        for (int j = 0; j < ML_QK; j++) {
            float a = fabsf(xb[j]);
            if (a > amax) amax = a;
        }
        if (!(amax >= ML_Q8_AMAX_MIN)) {
            out->d[b] = 0.0f;
            for (int j = 0; j < ML_QK; j++) qb[j] = 0;
            continue;
        }
        const float id = 127.0f / amax;
        out->d[b] = amax / 127.0f;
        for (int j = 0; j < ML_QK; j++) {
            /* Clamped before the conversion: the same bytes for finite x, and
             * no undefined (int) of an Inf or NaN when a model's weights
             * overflow float (ml_forward and ml_generate then refuse the run). */
            float v = xb[j] * id + copysignf(0.5f, xb[j]);
            int q = v >= (float)ML_Q8_MAX ? ML_Q8_MAX : v > -(float)ML_Q8_MAX ? (int)v : -ML_Q8_MAX;
            qb[j] = (int8_t)q;
        }
    }
}
