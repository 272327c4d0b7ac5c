/* y = W x, Q8_0 weights, SSE4.1 build: pabsb/psignb + pmaddubsw block dot
 * (sse41_dot.h) in the shared 4-row body (kernels/x86/matvec128.h ->
 * matvec_tmpl.h). */
#include "kernels/sse41/sse41_dot.h"

#define MV_NAME ml_k_matvec_q8_sse41
#define MV_WBYTES ML_Q8_BLOCK_BYTES
#define MV_X1 ml_sse41_x
#define MV_XPREP1 ml_sse41_xprep_q8
#define MV_DOT1 ml_sse41_dot_q8
#include "kernels/x86/matvec128.h"
