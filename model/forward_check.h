/* Inside the forward pass (model/transformer.c, model/prefill.c), not for
 * callers: the step both entries share, and its finiteness checks. Finite
 * weights can still overflow float32 (a damaged file), and the quantizer
 * would turn an Inf/NaN into plausible-looking logits, so no caller samples
 * from, or benchmarks, values that are not finite. */
#ifndef ML_FORWARD_CHECK_H
#define ML_FORWARD_CHECK_H

#include "core/status.h"
#include "model/model.h"

/* One batch through the layer sequence: tokens[0..n) at pos0.., n <= m->b.cap,
 * tokens and positions already checked. want_logits: the last token's logits
 * into m->s.logits; each (non-NULL): every token's, to each() in order (n > 1
 * needs m->b.logits), the last one also into m->s.logits. */
ml_status ml_forward_step(ml_model *m, const int *tokens, int n, int pos0, int want_logits, ml_logits_fn each,
                          void *ud, ml_err *err);

/* ML_FORMAT naming the position and element when x[0..dim) is not all finite. */
ml_status ml_check_residual(const float *x, int dim, int pos, ml_err *err);
ml_status ml_check_logits(const float *logits, int vocab, int pos, ml_err *err);

#endif
