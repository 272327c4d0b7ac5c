#include "model/forward_check.h"

#include "core/unroll.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The index of the first value of x[0..n) that is not finite, or -1. A
 * value is not finite exactly when its exponent bits are all ones, that is
 * when adding 1 to them carries into the sign bit. OR-ing those sums per
 * lane of 8, unrolled and without an early exit, compiles to vector
 * instructions (one isfinite() per logit was 5% of a stories15M
 * speculative run, which checks every position's 32000) and, where the
 * code is scalar (the ARMv7 builds outside their kernels), to 4
 * instructions a value: as a loop over arrays on the stack it took about
 * 10 there, 0.22 M instructions of a stories15M token. Only a bad row is
 * searched again element by element. */
static int first_nonfinite(const float *x, int n) {
    const uint32_t e = 0x7F800000u, one = 0x00800000u;
    uint32_t any[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        ML_UNROLL for (int j = 0; j < 8; j++) {
            uint32_t u;
            memcpy(&u, x + i + j, sizeof u);
            any[j] |= (u & e) + one;
        }
    for (int j = 1; j < 8; j++) any[0] |= any[j];
    for (; i < n; i++) any[0] |= (uint32_t)!isfinite(x[i]) << 31;
    if (!(any[0] & 0x80000000u)) return -1;
    for (i = 0; isfinite(x[i]); i++) {}
    return i;
}

ml_status ml_check_residual(const float *x, int dim, int pos, ml_err *err) {
    int i = first_nonfinite(x, dim);
    if (i < 0) return ML_OK;
    return ml_errf(err, ML_E_FORMAT, "position %d: residual element %d is %g, not finite: "
                   "the model's weights overflow float32", pos, i, (double)x[i]);
}

ml_status ml_check_logits(const float *logits, int vocab, int pos, ml_err *err) {
    int i = first_nonfinite(logits, vocab);
    if (i < 0) return ML_OK;
    return ml_errf(err, ML_E_FORMAT, "position %d: logit %d is %g, not finite: the model's weights overflow float32",
                   pos, i, (double)logits[i]);
}
