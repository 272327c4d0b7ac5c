/* y = W x, Q4_0 weights, AVX2: two blocks of nibbles per register, unsigned
 * vpmaddubsw dot (avx2_dot.h) in the shared 4-row body
 * (kernels/x86/matvec256.h -> matvec_tmpl.h). */
#include "kernels/avx2/avx2_dot.h"

#define MV_NAME ml_k_matvec_q4_avx2
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_BPD 2
#define MV_XT ml_avx2_x2
#define MV_XPREP ml_avx2_xprep2_q4
#define MV_DOT2 ml_avx2_dot2_q4
#define MV_X1 ml_avx2_x
#define MV_XPREP1 ml_avx2_xprep_q4
#define MV_DOT1 ml_avx2_dot_q4
#include "kernels/x86/matvec256.h"
