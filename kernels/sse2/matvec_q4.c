/* y = W x, Q4_0 weights, SSE2: nibbles widened to int16 in place, pmaddwd
 * block dot (sse2_dot.h) in the shared 4-row body (kernels/x86/matvec_tmpl.h). */
#include "kernels/sse2/sse2_dot.h"

#define MV_NAME ml_k_matvec_q4_sse2
#define MV_WIDTH 128
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_XT ml_sse2_x
#define MV_XPREP ml_sse2_xprep_q4
#define MV_DOT ml_sse2_dot_q4
#include "kernels/x86/matvec_tmpl.h"
