#include "model/forward_check.h"

#include <math.h>

ml_status ml_check_residual(const float *x, int dim, int pos, ml_err *err) {
    for (int i = 0; i < dim; i++)
        if (!isfinite(x[i]))
            return ml_errf(err, ML_E_FORMAT, "position %d: residual element %d is %g, not finite: "
                           "the model's weights overflow float32", pos, i, (double)x[i]);
    return ML_OK;
}

ml_status ml_check_logits(const float *logits, int vocab, int pos, ml_err *err) {
    for (int i = 0; i < vocab; i++)
        if (!isfinite(logits[i]))
            return ml_errf(err, ML_E_FORMAT,
                           "position %d: logit %d is %g, not finite: the model's weights overflow float32",
                           pos, i, (double)logits[i]);
    return ML_OK;
}
