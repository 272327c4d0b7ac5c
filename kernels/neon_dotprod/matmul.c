/* Y = W X for a batch of tokens, Q8_0 and Q4_0 weights, neon_dotprod: the
 * 4-row blocks transposed for the indexed sdot (dotprod_mm.h) in the shared
 * ARM matmul body (kernels/arm/matmul_body.h). */
#include "kernels/neon_dotprod/dotprod_mm.h"

#include "kernels/arm/matmul_body.h"

ML_ARM_MATMUL(neon_dotprod)
