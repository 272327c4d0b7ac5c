/* y = W x, Q4_0 weights, AVX-512 VNNI: nibbles of 4 blocks per register,
 * chained vpdpbusd (avx512_dot.h) in the shared 4-row body
 * (kernels/x86/matvec_tmpl.h); one-block tail with the 256-bit EVEX vpdpbusd. */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV_NAME ml_k_matvec_q4_avx512vnni
#define MV_WBYTES ML_Q4_BLOCK_BYTES
#define MV_STEP 4
#define MV_NDOT 1
#define MV_XT ml_avx512_xq4
#define MV_XPREP ml_avx512_xprep_q4
#define MV_VI __m512i
#define MV_DOT(w, xs, j) ml_avx512_dot_q4(w, xs)
#define MV_VS __m512i
#define MV_SUMS ml_avx512_sums_q4
#define MV_VSF __m512
#define MV_CVT _mm512_cvtepi32_ps
#define MV_CHUNK ML_AVX512_CHUNK
#define MV_X1 ml_avx2_x
#define MV_XPREP1 ml_avx512_xprep1_q4
#define MV_VI1 __m256i
#define MV_DOT1 ml_avx512_dot1_q4
#define MV_REDUCE4 ml_mv256_reduce4
#include "kernels/x86/matvec_tmpl.h"
