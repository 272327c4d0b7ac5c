/* y = W x, Q8_0 weights, AVX-VNNI: vpdpbusd block dot (avxvnni_dot.h) in the
 * shared 4-row body (kernels/x86/matvec256.h -> matvec_tmpl.h). */
#include "kernels/avxvnni/avxvnni_dot.h"

#define MV_NAME ml_k_matvec_q8_avxvnni
#define MV_WBYTES ML_Q8_BLOCK_BYTES
#define MV_BPD 1
#define MV_X1 ml_avx2_x
#define MV_XPREP1 ml_avxvnni_xprep_q8
#define MV_DOT1 ml_avxvnni_dot_q8
#include "kernels/x86/matvec256.h"
