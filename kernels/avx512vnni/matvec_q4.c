/* y = W x, Q4_0 weights, AVX-512 VNNI: nibbles of 4 blocks per register,
 * chained vpdpbusd (avx512_dot.h) in the 16-row body (matvec16.h). */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV16_NAME ml_k_matvec_q4_avx512vnni
#define MV16_WBYTES ML_Q4_BLOCK_BYTES
#define MV16_XPREP ml_avx512_xprep_q4
#define MV16_DOT ml_avx512_dot_q4
#define MV16_DOT1 ml_avx512_dot1x16_q4
/* Prefetch the next group (16 KiB of quants at dim 2048); half a group
 * ahead was 2-10% slower on TinyLlama decode. */
#define MV16_PF_ROWS 16
#include "kernels/avx512vnni/matvec16.h"
