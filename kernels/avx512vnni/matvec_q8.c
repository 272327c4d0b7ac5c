/* y = W x, Q8_0 weights, AVX-512 VNNI: 2 blocks per vpdpbusd (avx512_dot.h)
 * in the shared 4-row body (kernels/x86/matvec_tmpl.h); one-block tail with
 * the 256-bit EVEX vpdpbusd. */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV_NAME ml_k_matvec_q8_avx512vnni
#define MV_WBYTES ML_Q8_BLOCK_BYTES
#define MV_STEP 4
#define MV_NDOT 2
#define MV_XT ml_avx512_xq8x2
#define MV_XPREP ml_avx512_xprep4_q8
#define MV_VI __m512i
#define MV_DOT(w, xs, j) ml_avx512_dot_q8((w) + (j) * 2 * ML_QK, &(xs)->d[j])
#define MV_VS __m512i
#define MV_SUMS ml_avx512_sums4_q8
#define MV_VSF __m512
#define MV_CVT _mm512_cvtepi32_ps
#define MV_CHUNK ML_AVX512_CHUNK
#define MV_X1 ml_avx2_x
#define MV_XPREP1 ml_avx2_xprep_q8
#define MV_VI1 __m256i
#define MV_DOT1 ml_avx512_dot1_q8
#define MV_REDUCE4 ml_mv256_reduce4
#include "kernels/x86/matvec_tmpl.h"
