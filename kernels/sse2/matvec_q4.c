/* y = W x, Q4_0 weights, SSE2: nibbles isolated in int16 lanes in place,
 * pmaddwd block dot (sse2_dot.h) in the shared 4-row body
 * (kernels/x86/matvec128.h -> matvec_tmpl.h). */
#include "kernels/sse2/sse2_dot.h"

#define MV_NAME ml_k_matvec_q4_sse2
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_X1 ml_sse2_x
#define MV_XPREP1 ml_sse2_xprep_q4
#define MV_DOT1 ml_sse2_dot_q4
#define MV_SHIFT 8 /* the dot returns 256 * sumi */
#include "kernels/x86/matvec128.h"
