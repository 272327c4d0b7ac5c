/* Y = W X for a batch of tokens, Q8_0 and Q4_0 weights, neon (ARMv7 and
 * AArch64): vmull_s8 block dots on 4-row blocks loaded once per tile of
 * tokens (neon_mm.h) in the shared ARM matmul body
 * (kernels/arm/matmul_body.h). */
#include "kernels/neon/neon_mm.h"

#include "kernels/arm/matmul_body.h"

ML_ARM_MATMUL(neon)
