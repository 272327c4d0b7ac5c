/* y = W x, Q4_0 weights, AVX2: nibbles unpacked in one 256-bit register,
 * vpmaddubsw block dot (avx2_dot.h) in the shared 4-row body
 * (kernels/x86/matvec_tmpl.h), FMA scale accumulation. */
#include "kernels/avx2/avx2_dot.h"

#define MV_NAME ml_k_matvec_q4_avx2
#define MV_WIDTH 256
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_XT ml_avx2_x
#define MV_XPREP ml_avx2_xprep_q4
#define MV_DOT ml_avx2_dot_q4
#include "kernels/x86/matvec_tmpl.h"
