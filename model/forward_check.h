/* The finiteness checks of a forward pass (ml_forward, ml_forward_batch):
 * finite weights can still overflow float32 (a damaged file), and the
 * quantizer would turn an Inf/NaN into plausible-looking logits, so no
 * caller samples from, or benchmarks, values that are not finite. */
#ifndef ML_FORWARD_CHECK_H
#define ML_FORWARD_CHECK_H

#include "core/status.h"

/* ML_FORMAT naming the position and element when x[0..dim) is not all finite. */
ml_status ml_check_residual(const float *x, int dim, int pos, ml_err *err);
ml_status ml_check_logits(const float *logits, int vocab, int pos, ml_err *err);

#endif
