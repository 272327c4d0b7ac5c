/* y = W x, Q4_0 weights, SSE4.1 build: unsigned nibbles through pmaddubsw
 * (sse41_dot.h) in the shared 4-row body (kernels/x86/matvec128.h ->
 * matvec_tmpl.h). */
#include "kernels/sse41/sse41_dot.h"

#define MV_NAME ml_k_matvec_q4_sse41
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_X1 ml_sse41_x
#define MV_XPREP1 ml_sse41_xprep_q4
#define MV_DOT1 ml_sse41_dot_q4
#include "kernels/x86/matvec128.h"
